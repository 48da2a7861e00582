// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A header handler with several DMAs from host memory into distinct stack
 * variables, then one DMA to host of what it read.  The handler API is
 * inlined, so the compiler may give a later variable the stack slot an
 * earlier call used for its own temporaries; the verifier must accept that
 * (it once rejected it: "potential write to dynptr").
 */
#include <spin/handler.h>
#include "test_handlers.h"

__handler int d_header(const ptl_header_t h, void *state)
{
	struct dma_state *s = state;
	struct { __u64 a; __u64 b[3]; __u32 c; } __attribute__((packed)) out;
	__u64 a;
	__u64 b[3];
	__u32 c;

	__sync_fetch_and_add(&s->calls, 1);
	if (PtlHandlerDMAFromHostB(s->off[0], &a, sizeof(a), PTL_ME_HOST_MEM))
		goto err;
	if (PtlHandlerDMAFromHostB(s->off[1], b, sizeof(b), PTL_ME_HOST_MEM))
		goto err;
	if (PtlHandlerDMAFromHostB(s->off[2], &c, sizeof(c), PTL_ME_HOST_MEM))
		goto err;
	out.a = a;
	out.b[0] = b[0];
	out.b[1] = b[1];
	out.b[2] = b[2];
	out.c = c;
	if (PtlHandlerDMAToHostB(&out, s->out_off, sizeof(out), PTL_ME_HOST_MEM))
		goto err;
	return PROCEED;
err:
	__sync_fetch_and_add(&s->errors, 1);
	return PROCEED;
}

SPIN_HANDLERS(d_header, NULL, NULL);
