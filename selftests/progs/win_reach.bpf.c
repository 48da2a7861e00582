// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A handler that reaches for other windows by map, not through the DMA
 * API: it writes 0x5a into byte 0 of spin_host (slot 0's window, by name)
 * and of every window in spin_wins, and counts the writes that reached a
 * window in its handler memory (unit/handler_window_confined).  Loaded by
 * a process of slot 1, it must reach its own window only. */
#include <spin/handler.h>

/* Byte 0 of slot s's window in spin_wins, if it reaches one: counted in
 * n[1 + s].  Called with constants (no loop: Linux 6.1 kept no bound of a
 * loop's s through the stack, and took a loop bounded again as infinite) */
static __always_inline void reach_slot(__u64 *n, const __u32 s)
{
	__u32 key = s, k = 0;	/* (s stays a constant: the key is memory) */
	void *w = bpf_map_lookup_elem(&spin_wins, &key);
	struct spin_host_chunk *p;

	if (!w)
		return;
	p = bpf_map_lookup_elem(w, &k);
	if (p) {
		p->b[0] = 0x5a;
		n[1 + s]++;
	}
}

__handler int reach_header(const ptl_header_t h, void *state)
{
	__u64 *n = state;
	__u32 k = 0;
	struct spin_host_chunk *p = bpf_map_lookup_elem(&spin_host, &k);

	if (p) {
		p->b[0] = 0x5a;
		n[0]++;
	}
	_Static_assert(SPIN_MAX_PROCS == 8, "one reach_slot per slot");
	reach_slot(n, 0);
	reach_slot(n, 1);
	reach_slot(n, 2);
	reach_slot(n, 3);
	reach_slot(n, 4);
	reach_slot(n, 5);
	reach_slot(n, 6);
	reach_slot(n, 7);
	return DROP;
}

SPIN_HANDLERS(reach_header, NULL, NULL);
