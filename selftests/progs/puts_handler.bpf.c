// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many puts from one invocation: the payload handler makes the puts that
 * handler memory lists (struct puts_state, test_handlers.h), device and
 * host mixed, each with its own bytes, length, target, match bits, remote
 * offset, header data, user header words and counter, and records what
 * every call returned; selftests/test_unit.c (many_puts) checks every put
 * on the wire.
 */
#include <spin/handler.h>
#include "test_handlers.h"

struct puts_ctx {
	struct puts_state *s;
	__u64 pkt;		/* the payload's address and length */
	__u32 pkt_len;
	__u32 id;
};

/* bpf_loop callback: put i (checked once by the verifier, whatever the
 * number of puts and kinds) */
static long puts_one(__u64 i, void *ctx)
{
	struct puts_ctx *x = ctx;
	struct puts_state *s = x->s;
	ptl_user_header_t uh;
	struct puts_op *o;
	ptl_req_ct_t ct;
	int rc = -100;

	if (i >= s->n || i >= PUTS_MAX)
		return 1;
	o = &s->op[i];
	ct = o->ct ? PTL_LOCAL_ME_CT : 0;
	uh.arg[0] = i;
	uh.arg[1] = 0x1111ull * i;
	uh.arg[2] = ~(__u64)i;
	uh.arg[3] = x->id;
	spin_put_user_hdr(&uh);
	switch (o->kind) {
	case PUTS_DEV:
		rc = PtlHandlerPutFromDevice(&s->buf[o->off & (PUTS_BUF / 2 - 1)],
					     o->len & (PUTS_BUF / 2 - 1), ct, PTL_NO_ACK_REQ,
					     o->rank, PUTS_MB + i, 16 * i, NULL, PUTS_HDR + i);
		break;
	case PUTS_HOST:
		rc = PtlHandlerPutFromHost(o->off, o->len, ct, PTL_NO_ACK_REQ, o->rank,
					   PUTS_MB + i, 16 * i, NULL, PUTS_HDR + i);
		break;
	case PUTS_NULL:
		rc = PtlHandlerPutFromDevice(NULL, o->len, ct, PTL_NO_ACK_REQ, o->rank,
					     PUTS_MB + i, 16 * i, NULL, PUTS_HDR + i);
		break;
	case PUTS_GET:
		rc = PtlHandlerGetToHost(o->off, o->len, ct, PTL_NO_ACK_REQ, o->rank,
					 PUTS_MB + i, 16 * i, NULL, PUTS_HDR + i);
		break;
	case PUTS_PKT:
		/* the packet's own bytes, by address (a callback cannot hold
		 * the packet pointer; the put reads any address) */
		rc = PtlHandlerPutFromDevice((void *)x->pkt, x->pkt_len, ct, PTL_NO_ACK_REQ,
					     o->rank, PUTS_MB + i, 16 * i, NULL, PUTS_HDR + i);
		break;
	}
	s->rc[i] = rc;
	return 0;
}

__handler int puts_payload(const ptl_payload_t p, void *state)
{
	struct puts_ctx x = { .s = state, .pkt = (__u64)p.base, .pkt_len = p.length,
			      .id = spin_msg_id() };

	__sync_fetch_and_add(&x.s->calls, 1);
	bpf_loop(PUTS_MAX, puts_one, &x, 0);
	return SUCCESS;
}

SPIN_HANDLERS(NULL, puts_payload, NULL);
