// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A handler that reaches for other windows by map, not through the DMA
 * API: it writes 0x5a into byte 0 of spin_host (slot 0's window, by name)
 * and of every window in spin_wins, and counts the writes that reached a
 * window in its handler memory (unit/handler_window_confined).  Loaded by
 * a process of slot 1, it must reach its own window only. */
#include <spin/handler.h>

__handler int reach_header(const ptl_header_t h, void *state)
{
	__u64 *n = state;
	__u32 k = 0;
	struct spin_host_chunk *p = bpf_map_lookup_elem(&spin_host, &k);

	if (p) {
		p->b[0] = 0x5a;
		n[0]++;
	}
	for (__u32 s = 0; s < SPIN_MAX_PROCS; s++) {
		void *w = bpf_map_lookup_elem(&spin_wins, &s);

		if (!w)
			continue;
		p = bpf_map_lookup_elem(w, &k);
		if (p) {
			__u64 i = 1 + s;

			/* bounded again on the register used: Linux 6.1 kept
			 * no bound of s through the stack ("R2 unbounded
			 * memory access") */
			SPIN_BOUND(i, SPIN_MAX_PROCS);
			p->b[0] = 0x5a;
			n[i]++;
		}
	}
	return DROP;
}

SPIN_HANDLERS(reach_header, NULL, NULL);
