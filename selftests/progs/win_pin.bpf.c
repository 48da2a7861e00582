// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A handler that names a granted window's pin (win1, spinctl window
 * grant) as a map of its own, to be bound to it at load and write it
 * (unit/handler_window_pin).  It must not load: a handler's maps are the
 * runtime's (spin_*), never another pin of the interface's directory. */
#include <spin/handler.h>

struct spin_win_def win1 SEC(".maps");

__handler int pin_header(const ptl_header_t h, void *state)
{
	__u32 k = 0;
	struct spin_host_chunk *p = bpf_map_lookup_elem(&win1, &k);

	if (p)
		p->b[0] = 0x5b;
	return DROP;
}

SPIN_HANDLERS(pin_header, NULL, NULL);
