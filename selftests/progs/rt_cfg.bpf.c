// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that rewrites the runtime's configuration
 * (unit/handler_rt_maps): spin_cfg's my_rank and every slot's proc_rank
 * become RT_REACH_RANK, so what the runtime sends claims another rank.
 * spin_cfg is the runtime's only (lib/handler.c refuses a handler object
 * that declares it); this object declares it itself. */
#include <spin/handler.h>
#include "rt_reach.h"

#ifdef SPIN_CFG_RT_ONLY	/* maps.bpf.h no longer gives it to handlers */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_cfg);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_cfg SEC(".maps");
#endif

__handler int rc_header(const ptl_header_t h, void *state)
{
	struct rt_reach *s = state;
	__u32 k = 0;
	struct spin_cfg *cfg = bpf_map_lookup_elem(&spin_cfg, &k);

	s->calls++;
	if (cfg) {
		cfg->my_rank = RT_REACH_RANK;
		for (int i = 0; i < SPIN_MAX_PROCS; i++)
			cfg->proc_rank[i] = RT_REACH_RANK;
	}
	return PROCESS_DATA;
}

SPIN_HANDLERS(rc_header, NULL, NULL);
