// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler of slot 1 that writes another slot's entries' handler
 * memory (unit/handler_hpu_per_slot): its own handler memory names two
 * entries of slot 0 (victim, with handler memory, and victim_big, with big
 * handler memory); it writes HPU_REACH_BYTE over the first 64 bytes of
 * spin_hpu[victim] and spin_hpu_big[victim_big].  It is bound to its own
 * slot's handler memory (lib/handler.c): the keys are there, the victims'
 * memory is not. */
#include <spin/handler.h>

#define HPU_REACH_BYTE	0x5a

struct hpu_reach {
	__u64 victim, victim_big;
	__u64 calls, wrote, wrote_big;
};

__handler int hr_header(const ptl_header_t h, void *state)
{
	struct hpu_reach *s = state;
	__u32 k = s->victim, kb = s->victim_big;
	__u8 *v = bpf_map_lookup_elem(&spin_hpu, &k);
	__u8 *vb = bpf_map_lookup_elem(&spin_hpu_big, &kb);

	s->calls++;
	if (v) {
		__builtin_memset(v, HPU_REACH_BYTE, 64);
		s->wrote++;
	}
	if (vb) {
		__builtin_memset(vb, HPU_REACH_BYTE, 64);
		s->wrote_big++;
	}
	return PROCESS_DATA;
}

SPIN_HANDLERS(hr_header, NULL, NULL);
