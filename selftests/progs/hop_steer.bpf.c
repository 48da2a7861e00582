// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler program written without SPIN_HANDLERS: it points
 * spin_ctx at another entry (word 0 of its handler memory, an entry of
 * slot 0 whose handler DMAs its payload into its window) and tail-calls
 * every slot of spin_handlers, to have another process's handler program
 * act on a context of its making (unit/handler_no_foreign_tail_call).
 * Loaded by a process of slot 1, it must find no handler program there. */
#include <spin/handler.h>

SEC("xdp") int spin_handler_entry(struct xdp_md *xdp)
{
	struct spin_ctx *c = spin_ctx_get();
	__u64 *st;
	__u32 k;

	if (!c)
		return XDP_DROP;
	k = c->me;
	st = bpf_map_lookup_elem(&spin_hpu, &k);
	if (!st)
		return XDP_DROP;
	st[1]++;			/* it ran */
	c->me = (__u32)st[0];		/* the victim entry */
	c->phases = SPIN_PH_HEADER | SPIN_PH_PAYLOAD;
	for (__u32 i = 0; i < SPIN_MAX_HANDLERS; i++)
		bpf_tail_call(xdp, &spin_handlers, i);
	st[2]++;			/* no program took it */
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual BSD/GPL";
