/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runtime steps shared by the runtime programs (bpf/spin_rt.bpf.c) and the
 * handler entry programs (SPIN_HANDLERS in spin/handler.h): default
 * deposit, publishing the header handler's verdict and byte accounting.
 * Defined once here; both sides include it.
 */
#ifndef SPIN_RT_COMMON_BPF_H
#define SPIN_RT_COMMON_BPF_H

#include <spin/maps.bpf.h>

/* Header handler verdicts (same values as handler.h's enum). */
#define SPIN_RC_SUCCESS		0
#define SPIN_RC_PROCEED		1
#define SPIN_RC_PROCESS_DATA	2
#define SPIN_RC_DROP		3
#define SPIN_RC_PENDING		4	/* added to the above: *_PENDING */
#define SPIN_RC_FAIL		8

static __always_inline void spin_hcount(int slot)
{
	struct spin_stats *st = spin_stats_get();

	if (st && slot >= 0 && slot < SPIN_H_MAX)
		st->handler_calls[slot]++;
}

/*
 * After the header handler: turn its verdict into this packet's phases and
 * publish it to the message state (other packets of the message wait for
 * it).  The message state is published with an atomic exchange so the
 * flags are visible before the status.
 */
static __always_inline void spin_after_header(struct spin_ctx *c, struct spin_msg *m)
{
	__u32 rc = c->hdr_rc;
	__u32 status = SPIN_MSG_RUNNING;

	if (rc >= SPIN_RC_PENDING && rc < SPIN_RC_FAIL)
		rc -= SPIN_RC_PENDING;
	switch (rc) {
	case SPIN_RC_PROCEED:
		c->phases = (c->phases & ~SPIN_PH_PAYLOAD) | SPIN_PH_DEPOSIT;
		if (m)
			m->flags |= SPIN_MSGF_PROCEED;
		break;
	case SPIN_RC_SUCCESS:
	case SPIN_RC_PROCESS_DATA:
		break;
	case SPIN_RC_FAIL:
		c->fail = 1;
		/* fall through */
	default:	/* DROP or a bad return code */
		c->phases &= ~(SPIN_PH_PAYLOAD | SPIN_PH_DEPOSIT);
		c->msg_dropped = 1;
		status = SPIN_MSG_DROP;
		break;
	}
	if (m)
		__sync_lock_test_and_set(&m->status, status);
}

/*
 * Default deposit of this packet's payload into the match entry's buffer in
 * the host window, truncated at the entry's length; bytes beyond it count
 * as dropped.
 */
static __always_inline void spin_deposit(struct xdp_md *xdp, struct spin_ctx *c)
{
	struct spin_stats *st = spin_stats_get();
	__u32 len = c->pay_len, pkt_off = c->pkt_off, n = 0;
	struct bpf_dynptr pd;

	if (pkt_off < c->mlength) {
		n = c->mlength - pkt_off;
		if (n > len)
			n = len;
	}
	c->dropped += len - n;
	if (!n)
		return;
	if (bpf_dynptr_from_xdp(xdp, 0, &pd) ||
	    spin_host_xfer(c->start + pkt_off, &pd, SPIN_PAY_OFF, n, 1)) {
		spin_drop_count(st, SPIN_DROP_HOST_OOB);
		c->dropped += n;
		c->fail = 1;
		return;
	}
	if (st)
		st->deposited_bytes += n;
}

/*
 * Account this packet's bytes.  For a single-packet message the packet is
 * the message; otherwise the packet whose bytes complete the message (an
 * atomic add that reaches msg_len) is the one that runs the completion, so
 * the completion handler runs exactly once and after every payload handler
 * of the message returned.
 */
static __always_inline void spin_account(struct spin_ctx *c, struct spin_msg *m)
{
	__u32 old;

	if (!m) {
		c->done = 1;
		return;
	}
	if (c->dropped)
		__sync_fetch_and_add(&m->dropped, c->dropped);
	old = __sync_fetch_and_add(&m->bytes_seen, c->pay_len);
	if (old + c->pay_len == m->msg_len) {
		c->done = 1;
		c->dropped = __sync_fetch_and_add(&m->dropped, 0);
		if (m->status == SPIN_MSG_DROP)
			c->msg_dropped = 1;
	}
}

#endif /* SPIN_RT_COMMON_BPF_H */
