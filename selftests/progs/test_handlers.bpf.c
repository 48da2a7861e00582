// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Handlers for the selftests.  Their behaviour is chosen by `mode` in the
 * match entry's handler memory, and they record what they saw there, so a
 * test can check order, counts, dropped bytes and atomics.
 */
#include <spin/handler.h>
#include "test_handlers.h"

__handler int t_header(const ptl_header_t h, void *state)
{
	struct test_state *s = state;
	__u64 before;

	PtlHandlerFAdd(&s->hdr_calls, &before, 1);
	if (s->pay_calls && !(s->mode & T_TRACK))	/* a payload handler ran first */
		__sync_fetch_and_add(&s->order_violations, 1);
	if (s->mode & T_TRACK) {
		__u32 i = h.msg_id & 255;

		if (s->hdr_seen[i] || s->pay_count[i])
			__sync_fetch_and_add(&s->order_violations, 1);
		s->hdr_seen[i] = 1;
	}
	s->last_len = h.length;
	s->last_bits = h.match_bits;
	s->last_src = h.source_id.rank;
	s->last_hdr_data = h.hdr_data;
	s->last_user0 = h.user_hdr.arg[0];
	s->last_tgt = h.target_id.rank;
	if (s->mode & T_HDR_DROP)
		return DROP;
	if (s->mode & T_HDR_PROCEED)
		return PROCEED;
	if (s->mode & T_HDR_FAIL)
		return FAIL;
	return PROCESS_DATA;
}

#ifdef SPIN_NO_KFUNCS
struct fan_q {
	struct test_state *s;
	void *base;
	__u32 len;
};

/* bpf_loop: put i of the fan-out (T_PUT_FAN), while i < fan_n */
static int fan_one(__u32 i, struct fan_q *q)
{
	struct test_state *s = q->s;

	if (i >= s->fan_n || i >= TEST_FAN_MAX - 1)
		return 1;
	s->fan_rc[i] = PtlHandlerPutFromDevice(q->base, q->len, 0, PTL_NO_ACK_REQ, s->fan_rank[i],
					       0x100 + i, 8 * i, NULL, 1000 + i);
	return 0;
}
#endif

__handler int t_payload(const ptl_payload_t p, void *state)
{
	struct test_state *s = state;
	__u8 *b;

	__sync_fetch_and_add(&s->pay_calls, 1);
	__sync_fetch_and_add(&s->pay_bytes, p.length);
	if (s->mode & T_TRACK) {
		__u32 i = spin_msg_id() & 255;

		if (!s->hdr_seen[i]) {	/* payload before its header handler */
			__sync_fetch_and_add(&s->order_violations, 1);
		}
		__sync_fetch_and_add(&s->pay_count[i], 1);
	} else {
		if (!s->hdr_calls)
			__sync_fetch_and_add(&s->order_violations, 1);
		if (s->cmpl_calls)
			__sync_fetch_and_add(&s->order_violations, 1);
	}
	b = SPIN_PTR(p, 0, 1);
	if (b)
		__sync_fetch_and_add(&s->first_byte_sum, *b);
	if (s->mode & T_CAS) {
		/* a lock-free counter built on CAS */
		for (int i = 0; i < 16; i++) {
			__u64 v = s->cas_counter;
			if (PtlHandlerCAS(&s->cas_counter, v, v + 1))
				break;
		}
	}
	if (s->mode & T_DMA) {
		/* copy the payload to host memory at the same message offset */
		if (PtlHandlerDMAToHostB(p.base, p.offset, p.length, PTL_ME_HOST_MEM))
			__sync_fetch_and_add(&s->dma_errors, 1);
	}
	if (s->mode & T_DMA_HHOST) {
		/* record the packet offset in handler host memory */
		__u64 off = p.offset;
		PtlHandlerDMAToHostB(&off, (p.offset / SPIN_MAX_SEG) * 8, 8, PTL_HANDLER_HOST_MEM);
	}
	if (s->mode & T_DMA_OOB) {
		if (PtlHandlerDMAToHostB(p.base, (1ull << 40), p.length, PTL_ME_HOST_MEM))
			__sync_fetch_and_add(&s->dma_errors, 1);
	}
	if (s->mode & T_DMA_FROM) {
		__u64 v = 0;
		if (PtlHandlerDMAFromHostB(0, &v, sizeof(v), PTL_ME_HOST_MEM) == 0)
			s->dma_from_value = v;
	}
	/* the put modes exclude each other (the first set wins): a chain of
	 * independent ifs, each with its puts, is 2^5 paths for the verifier,
	 * and Linux 6.1's walks them past its 10^6 instructions */
	if (s->mode & T_PUT_STATE) {
		/* put 16 bytes of handler memory (not the packet) to rank 0 */
		PtlHandlerPutFromDevice(&s->put_src, 16, 0, PTL_NO_ACK_REQ, 0, 0x77, 0, NULL, 5);
	} else if (s->mode & T_PUT_BIG) {
		PtlHandlerPutFromDevice(s, 2000, 0, PTL_NO_ACK_REQ, 0, 1, 0, NULL, 0);
	} else if (s->mode & T_PUT_UNKNOWN) {
		PtlHandlerPutFromDevice(p.base, p.length, 0, PTL_NO_ACK_REQ, 200, 1, 0, NULL, 0);
	} else if (s->mode & T_PUT_TWICE) {
		PtlHandlerPutFromDevice(p.base, p.length, 0, PTL_NO_ACK_REQ, 0, 1, 0, NULL, 0);
		PtlHandlerPutFromDevice(p.base, p.length, 0, PTL_NO_ACK_REQ, 0, 2, 0, NULL, 0);
	} else if (s->mode & T_PUT_FAN) {
		/* fan-out: the packet to fan_n targets (a broadcast's step) */
#ifdef SPIN_NO_KFUNCS
		/* kernels before 6.4 walk spin_for's bounded loop once per
		 * iteration, each with a put's code: 65 of them went past
		 * Linux 6.1's 10^6 instructions; a bpf_loop body is checked
		 * once there */
		struct fan_q q = { .s = s, .base = p.base, .len = p.length };

		bpf_loop(TEST_FAN_MAX - 1, fan_one, &q, 0);
#else
		int i;

		spin_for(i, 0, (int)s->fan_n) {
			if (i >= TEST_FAN_MAX - 1)
				break;
			s->fan_rc[i] = PtlHandlerPutFromDevice(p.base, p.length, 0, PTL_NO_ACK_REQ,
							       s->fan_rank[i], 0x100 + i, 8 * i,
							       NULL, 1000 + i);
		}
#endif
		if (s->mode & T_PUT_FAN_OTHER)
			s->fan_rc[TEST_FAN_MAX - 1] =
				PtlHandlerPutFromDevice(&s->put_src, 16, 0, PTL_NO_ACK_REQ,
							0, 1, 0, NULL, 0);
	}
	if ((s->mode & T_PAY_DROP_ODD) && ((p.offset / SPIN_MAX_SEG) & 1))
		return DROP;
	return SUCCESS;
}

__handler int t_completion(int dropped_bytes, bool flow_control_triggered, void *state)
{
	struct test_state *s = state;

	__sync_fetch_and_add(&s->cmpl_calls, 1);
	s->cmpl_dropped = dropped_bytes;
	if (s->mode & T_TRACK) {
		__u32 i = spin_msg_id() & 255;

		/* every payload handler of the message has returned */
		if (s->pay_count[i] != s->last_len / SPIN_MAX_SEG + !!(s->last_len % SPIN_MAX_SEG)) {
			__sync_fetch_and_add(&s->order_violations, 1);
		}
		s->hdr_seen[i] = 0;
		s->pay_count[i] = 0;
	}
	if (s->hdr_calls == 0)
		__sync_fetch_and_add(&s->order_violations, 1);
	return SUCCESS;
}

SPIN_HANDLERS(t_header, t_payload, t_completion);
