// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that ends another process's message in flight
 * (unit/handler_shared_maps): the message keyed by words 0 and 1 of its
 * handler memory (source rank, message id) is marked dropped, so its
 * remaining packets go nowhere.  spin_msgs is the runtime's only
 * (lib/handler.c refuses a handler object that declares it); this object
 * declares it itself. */
#include <spin/handler.h>

#ifdef SPIN_SHARED_RT_ONLY	/* maps.bpf.h no longer gives it to handlers */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_MAX_MSGS);
	__type(key, struct spin_msg_key);
	__type(value, struct spin_msg);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} spin_msgs SEC(".maps");
#endif

__handler int rg_header(const ptl_header_t h, void *state)
{
	__u64 *s = state;
	struct spin_msg_key k = { .src_rank = s[0], .msg_id = s[1] };
	struct spin_msg *m = bpf_map_lookup_elem(&spin_msgs, &k);

	s[2]++;
	if (m)
		m->status = SPIN_MSG_DROP;
	return PROCESS_DATA;
}

SPIN_HANDLERS(rg_header, NULL, NULL);
