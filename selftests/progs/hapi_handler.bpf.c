// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The paper-era handler calls on host memory: DMA compare-and-swap and
 * fetch-and-add (every atomic datatype), the NB forms with their handles,
 * PtlHandlerDMATest and PtlHandlerDMAWait by value.  The header handler
 * carries out the operations handler memory lists (struct hapi_state,
 * test_handlers.h), one bpf_loop callback each, and records every result there;
 * selftests/test_unit.c (hapi_*) checks them and host memory.
 */
#include <spin/handler.h>
#include "test_handlers.h"

/* bpf_loop callback: operation i */
static long hapi_op(__u64 i, void *ctx)
{
	struct hapi_state *s = *(struct hapi_state **)ctx;
	struct hapi_op *o;
	ptl_dma_h hd = 0;
	__u64 v = 0;

	if (i >= s->n || i >= HAPI_MAX_OPS)
		return 1;
	o = &s->ops[i];
	switch (o->kind) {
	case HAPI_CAS_B:
		v = o->a;
		o->rc = PtlHandlerDMACASB(o->off, &v, o->b, o->opts);
		o->res = v;
		break;
	case HAPI_CAS_NB:
		v = o->a;
		o->rc = PtlHandlerDMACASNB(o->off, &v, o->b, o->opts, &hd);
		o->res = v;
		break;
	case HAPI_FADD_B:
		o->rc = PtlHandlerDMAFetchAddB(o->off, o->a, &v, o->type, o->opts);
		o->res = v;
		break;
	case HAPI_FADD_NB:
		o->rc = PtlHandlerDMAFetchAddNB(o->off, o->a, &v, o->type, o->opts, &hd);
		o->res = v;
		break;
	case HAPI_TO_NB:
		v = o->a;
		o->rc = PtlHandlerDMAToHostNB(&v, o->off, sizeof(v), o->opts, &hd);
		break;
	case HAPI_FROM_NB:
		o->rc = PtlHandlerDMAFromHostNB(o->off, &v, sizeof(v), o->opts, &hd);
		o->res = v;
		break;
	case HAPI_WAIT:
		hd = o->a;
		break;
	case HAPI_RMW:
		o->rc = PtlHandlerDMAFromHostB(o->off, &v, sizeof(v), o->opts);
		v += o->a;
		o->rc |= PtlHandlerDMAToHostB(&v, o->off, sizeof(v), o->opts);
		break;
	}
	o->h = hd;
	o->test = PtlHandlerDMATest(hd);
	o->wait = PtlHandlerDMAWait(hd);
	return 0;
}

__handler int hapi_header(const ptl_header_t h, void *state)
{
	struct hapi_state *s = state;

	__sync_fetch_and_add(&s->calls, 1);
	bpf_loop(HAPI_MAX_OPS, hapi_op, &s, 0);	/* the context must be on the stack */
	return PROCEED;
}

SPIN_HANDLERS(hapi_header, NULL, NULL);
