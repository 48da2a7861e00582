// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler program of slot 1 that goes around the fan-out's finish
 * stage (unit/fanout_forged_slot, unit/putq_confined): its own entry
 * program, not SPIN_HANDLERS, which never ends in the stage.  Its handler
 * memory (struct fan_forge) says what it does (rank: the node's rank, for
 * the metadata):
 *  - FF_OWN: queue one device put of its own (8 bytes, "forged!!", to
 *    rank 2, match bits FF_MATCH) at ticket t0 in the spin_putq it holds,
 *    sealed with `seal`, and return XDP_PASS with fan-out metadata of its
 *    making naming slot `slot`, t0, one put, that seal: spin_tc sends the
 *    put as that slot's process;
 *  - FF_PENDING: the same metadata, n puts from t0 on CPU cpu, but queue
 *    nothing: it names puts another slot queued and spin_tc has not sent
 *    yet (their seal it can only guess), and its own frame as put 0 when
 *    ifindex0 is set (spin_tc sends it there, and the queued puts of put
 *    0's bytes with its bytes);
 *  - FF_REWRITE: look at the n entries of the spin_putq it holds from t0
 *    (another slot's queued puts, on this CPU, with match bits match0 ..
 *    match0 + n - 1) and rewrite every one that carries its ticket and
 *    such match bits: target rank 3, match bits 0xbad, its first byte
 *    flipped; counted in `seen`.  Then XDP_DROP. */
#include <spin/handler.h>

#define FF_OWN		0
#define FF_PENDING	1
#define FF_REWRITE	2
#define FF_MATCH	0xf0f0

struct fan_forge {
	__u64 mode, slot, n, t0, cpu, seal, ifindex0, match0, rank, seen, runs;
};

SEC("xdp") int spin_handler_entry(struct xdp_md *xdp)
{
	struct spin_ctx *c = spin_ctx_get();
	struct spin_fanout_meta *m;
	struct spin_putq_ent *e;
	struct fan_forge *s;
	__u32 cpu = bpf_get_smp_processor_id(), k;
	__u64 t;

	if (!c)
		return XDP_DROP;
	s = __spin_hpu(c);
	if (!s)
		return XDP_DROP;
	s->runs++;
	if (s->mode == FF_REWRITE) {
		for (__u32 i = 0; i < 8; i++) {
			if (i >= s->n)
				break;
			t = s->t0 + i;
			k = (__u32)t & (SPIN_PUTQ_SIZE - 1);
			e = bpf_map_lookup_elem(&spin_putq, &k);
			if (!e || e->ticket != SPIN_PUTQ_TICKET(cpu, t) ||
			    e->r.match_bits - s->match0 >= s->n)
				continue;
			s->seen++;
			e->r.target_rank = 3;
			e->r.match_bits = 0xbad;
			e->data[0] ^= 0xff;
		}
		return XDP_DROP;
	}
	if (s->mode == FF_OWN) {
		t = s->t0;
		k = (__u32)t & (SPIN_PUTQ_SIZE - 1);
		e = bpf_map_lookup_elem(&spin_putq, &k);
		if (!e)
			return XDP_DROP;
		__builtin_memset(&e->r, 0, sizeof(e->r));
		e->r.kind = SPIN_PUT_DEVICE;
		e->r.src = SPIN_SRC_SCRATCH;
		e->r.len = 8;
		e->r.target_rank = 2;
		e->r.match_bits = FF_MATCH;
		__builtin_memset(e->user_hdr, 0, sizeof(e->user_hdr));
		e->me = c->me;
		__builtin_memcpy(e->data, "forged!!", 8);
		e->seal = s->seal;
		e->ticket = SPIN_PUTQ_TICKET(cpu, t);
		s->cpu = cpu;
	}
	if (bpf_xdp_adjust_meta(xdp, -(int)sizeof(*m)))
		return XDP_DROP;
	m = (void *)(long)xdp->data_meta;
	if ((void *)(m + 1) > (void *)(long)xdp->data)
		return XDP_DROP;
	m->magic = SPIN_FANOUT_MAGIC;
	m->my_rank = s->rank;	/* (the node's: handlers need not hold spin_cfg) */
	m->ifindex0 = s->ifindex0;
	m->n = s->n;
	m->cpu = s->cpu;
	m->t0 = s->t0;
	m->id0 = 0x4242;
	m->slot = s->slot;
	m->seal = s->seal;
	return XDP_PASS;
}

char _spin_license[] SEC("license") = "Dual BSD/GPL";
