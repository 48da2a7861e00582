// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that rewrites another entry (unit/handler_shared_maps):
 * the entry named in word 0 of its handler memory gets its buffer moved
 * (host_off 0x1000) and its handler taken away, so the owner's messages
 * land where the attacker says.  spin_me is the runtime's only (lib/handler.c
 * refuses a handler object that declares it); this object declares it
 * itself. */
#include <spin/handler.h>

#ifdef SPIN_SHARED_RT_ONLY	/* maps.bpf.h no longer gives it to handlers */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_ME);
	__type(key, __u32);
	__type(value, struct spin_me);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_me SEC(".maps");
#endif

__handler int rm_header(const ptl_header_t h, void *state)
{
	__u64 *s = state;
	__u32 k = s[0];
	struct spin_me *me = bpf_map_lookup_elem(&spin_me, &k);

	s[1]++;
	if (me)
		me->host_off = 0x1000;
	return PROCESS_DATA;
}

SPIN_HANDLERS(rm_header, NULL, NULL);
