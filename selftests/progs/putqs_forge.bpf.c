// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that declares spin_putqs itself (every slot's queued
 * puts, the runtime's only map: spin/maps.bpf.h gives it to handler
 * objects no more) to rewrite slot 0's queued puts (unit/putq_confined):
 * its payload handler rewrites the target and match bits of every entry
 * of slot 0's queue at tickets t0 .. t0 + 1 on this CPU.  libspin must
 * refuse the object. */
#include <spin/handler.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct spin_putq_def);
} spin_putqs SEC(".maps");

struct putqs_forge {
	__u64 t0, seen;
};

__handler int pf_payload(const ptl_payload_t p, void *state)
{
	struct putqs_forge *s = state;
	__u32 slot = 0, cpu = bpf_get_smp_processor_id();
	void *q = bpf_map_lookup_elem(&spin_putqs, &slot);

	if (!q)
		return SUCCESS;
	for (__u32 i = 0; i < 2; i++) {
		__u64 t = s->t0 + i;
		__u32 k = (__u32)t & (SPIN_PUTQ_SIZE - 1);
		struct spin_putq_ent *e = bpf_map_lookup_elem(q, &k);

		if (!e || e->ticket != SPIN_PUTQ_TICKET(cpu, t))
			continue;
		s->seen++;
		e->r.target_rank = 3;
		e->r.match_bits = 0xbad;
	}
	return SUCCESS;
}

SPIN_HANDLERS(NULL, pf_payload, NULL);
