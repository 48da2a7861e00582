// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that reads the job's auth key (unit/handler_rt_maps):
 * it copies spin_auth's key into its handler memory, where its process (or
 * a put of its own) could take it and tag frames claiming any rank.
 * spin_auth is the runtime's only (lib/handler.c refuses a handler object
 * that declares it); this object declares it itself. */
#include <spin/handler.h>
#include "rt_reach.h"

#ifdef SPIN_CFG_RT_ONLY	/* maps.bpf.h no longer gives it to handlers */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_auth);
} spin_auth SEC(".maps");
#endif

__handler int ra_header(const ptl_header_t h, void *state)
{
	struct rt_reach *s = state;
	__u32 k = 0;
	struct spin_auth *a = bpf_map_lookup_elem(&spin_auth, &k);

	s->calls++;
	if (a) {
		s->on = a->on;
		s->k0 = a->k0;
		s->k1 = a->k1;
	}
	return PROCESS_DATA;
}

SPIN_HANDLERS(ra_header, NULL, NULL);
