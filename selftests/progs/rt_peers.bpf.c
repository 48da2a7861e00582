// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that rewrites the runtime's rank table
 * (unit/handler_rt_maps): peer RT_REACH_PEER's address becomes
 * RT_REACH_IP, so what the runtime sends to that rank goes elsewhere and
 * what comes from there passes as that rank.  spin_peers is the runtime's
 * only (lib/handler.c refuses a handler object that declares it); this
 * object declares it itself. */
#include <spin/handler.h>
#include "rt_reach.h"

#ifdef SPIN_CFG_RT_ONLY	/* maps.bpf.h no longer gives it to handlers */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PEERS);
	__type(key, __u32);
	__type(value, struct spin_peer);
} spin_peers SEC(".maps");
#endif

__handler int rp_header(const ptl_header_t h, void *state)
{
	struct rt_reach *s = state;
	__u32 k = RT_REACH_PEER;
	struct spin_peer *p = bpf_map_lookup_elem(&spin_peers, &k);

	s->calls++;
	if (p)
		p->ip = RT_REACH_IP;
	return PROCESS_DATA;
}

SPIN_HANDLERS(rp_header, NULL, NULL);
