// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Room to compute: spin_scratch() (16 KiB per invocation) and
 * spin_msg_state() (per-message state from header to completion handler).
 * What each mode does is in test_handlers.h (struct room_state);
 * selftests/test_unit.c (room_scratch, room_msg_state) checks it.
 */
#include <spin/handler.h>
#include "test_handlers.h"

__handler int room_header(const ptl_header_t h, void *state)
{
	struct room_state *s = state;
	struct room_rec *r;

	__sync_fetch_and_add(&s->calls, 1);
	if (!(s->mode & ROOM_MSG))
		return PROCESS_DATA;
	r = spin_msg_state();
	if (!r) {
		__sync_fetch_and_add(&s->errors, 1);
		return FAIL;
	}
	r->len = h.length;
	r->id = h.msg_id;
	r->tag = h.user_hdr.arg[0] & 7;
	/* the same fields in handler memory: the next message's header
	 * handler overwrites them */
	s->len = h.length;
	s->id = h.msg_id;
	s->tag = h.user_hdr.arg[0] & 7;
	return PROCESS_DATA;
}

__handler int room_payload(const ptl_payload_t p, void *state)
{
	struct room_state *s = state;
	int i;

	if (s->mode & ROOM_SCRATCH) {
		__u8 *b = spin_scratch();

		if (!b)
			return FAIL;
		spin_for(i, 0, SPIN_SCRATCH_SIZE / 8)
			*(__u64 *)(b + i * 8) = room_word(i, s->seed);
		spin_for(i, 0, SPIN_SCRATCH_SIZE / SPIN_MAX_DMA)
			if (PtlHandlerDMAToHostB(b + i * SPIN_MAX_DMA, i * SPIN_MAX_DMA, SPIN_MAX_DMA,
						 PTL_ME_HOST_MEM))
				__sync_fetch_and_add(&s->errors, 1);
	}
	if (s->mode & ROOM_MSG) {
		struct room_rec *r = spin_msg_state();

		if (!r)
			return FAIL;
		__sync_fetch_and_add(&r->bytes, p.length);
		__sync_fetch_and_add(&r->pkts, 1);
	}
	return SUCCESS;
}

__handler int room_completion(int dropped_bytes, bool flow_control_triggered, void *state)
{
	struct room_state *s = state;
	struct room_rec *r, ctl = {};

	if (!(s->mode & ROOM_MSG))
		return SUCCESS;
	r = spin_msg_state();
	if (!r)
		return FAIL;
	PtlHandlerDMAToHostB(r, ROOM_REC_OFF + (r->tag & 7) * 64, sizeof(*r), PTL_ME_HOST_MEM);
	ctl.len = s->len;
	ctl.id = s->id;
	ctl.tag = s->tag;
	PtlHandlerDMAToHostB(&ctl, ROOM_CTL_OFF + (r->tag & 7) * 64, sizeof(ctl), PTL_ME_HOST_MEM);
	return SUCCESS;
}

SPIN_HANDLERS(room_header, room_payload, room_completion);
