// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A handler with a map of its own: shipped code may use only the target
 * runtime's maps (and its own .data/.bss), so the target refuses it. */
#include <spin/handler.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ship_own SEC(".maps");

__handler int own_header(const ptl_header_t h, void *state)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&ship_own, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return PROCESS_DATA;
}

SPIN_HANDLERS(own_header, NULL, NULL);
