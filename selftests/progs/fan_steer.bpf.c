// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler of slot 1 that steers the fan-out's queued puts at slot
 * 0 (unit/fanout_confined): it makes a device put (put 0), a put from host
 * longer than a packet and a get to host (both queued in spin_putq), then,
 * with mode 1, points spin_ctx's portal at slot 0's (the fan-out then
 * speaks for slot 0) and rewrites both queued entries: their window
 * address into slot 0's window and their entry to slot 0's (victim_me).
 * Without a check the runtime cannot be steered by, slot 0's process is
 * asked to send from its window, and the get's reply is deposited there. */
#include <spin/handler.h>

struct fan_steer {
	__u64 mode;
	__u64 victim_me;
	__u64 calls;
	__s64 rc[3];
	__u8 buf[16];
};

__handler int fs_payload(const ptl_payload_t p, void *state)
{
	struct fan_steer *s = state;
	struct spin_putq_ent *e;
	struct spin_ctx *c;
	__u32 k;

	s->calls++;
	s->rc[0] = PtlHandlerPutFromDevice(s->buf, 16, 0, PTL_NO_ACK_REQ, 2, 0x51, 0, NULL, 0);
	s->rc[1] = PtlHandlerPutFromHost(0, 3000, 0, PTL_NO_ACK_REQ, 3, 0x52, 0, NULL, 0);
	s->rc[2] = PtlHandlerGetToHost(0, 64, 0, PTL_NO_ACK_REQ, 3, 0x53, 0, NULL, 0);
	c = spin_ctx_get();
	if (!c || s->mode != 1)
		return SUCCESS;
	c->pt = SPIN_PT_OF(0, 0);
	k = (__u32)c->putq_t0 & (SPIN_PUTQ_SIZE - 1);
	e = bpf_map_lookup_elem(&spin_putq, &k);
	if (e) {
		e->r.src_off = SPIN_WIN_ADDR(0, 0);
		e->me = s->victim_me;
	}
	k = (__u32)(c->putq_t0 + 1) & (SPIN_PUTQ_SIZE - 1);
	e = bpf_map_lookup_elem(&spin_putq, &k);
	if (e) {
		e->r.src_off = SPIN_WIN_ADDR(0, 0);
		e->me = s->victim_me;
	}
	return SUCCESS;
}

SPIN_HANDLERS(NULL, fs_payload, NULL);
