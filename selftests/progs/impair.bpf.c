// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An impairing link for tests and benchmarks (selftests/impair.c loads it).
 * Attached at TC ingress of both ends of a relay namespace: every frame
 * that arrives at one end leaves through the other (bpf_redirect), so the
 * two outer namespaces share one link.  IPv4 frames are, with the
 * probabilities set for the end they arrive at (parts per million, drawn
 * independently): dropped; corrupted (one bit of one byte after the
 * Ethernet header flipped); duplicated (sent twice).  Other frames (ARP)
 * pass untouched, so neighbours resolve whatever the loss.  Reordering and
 * delay need a relay that holds frames; this one does not.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "impair.h"

#define TC_ACT_OK	0
#define TC_ACT_SHOT	2
#define ETH_P_IP	0x0800
#define PPM		1000000u


struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct impair_port);
} impair_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct impair_count);
} impair_counts SEC(".maps");

static __always_inline bool chance(__u32 ppm)
{
	return ppm && bpf_get_prandom_u32() % PPM < ppm;
}

SEC("tc")
int impair(struct __sk_buff *skb)
{
	__u32 k = skb->ifindex;
	struct impair_port *p = bpf_map_lookup_elem(&impair_ports, &k);
	struct impair_count *n = bpf_map_lookup_elem(&impair_counts, &k);

	if (!p || !n || !p->out_ifindex)
		return TC_ACT_OK;
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return bpf_redirect(p->out_ifindex, 0);
	__sync_fetch_and_add(&n->frames, 1);
	if (chance(p->drop_ppm)) {
		__sync_fetch_and_add(&n->dropped, 1);
		return TC_ACT_SHOT;
	}
	if (chance(p->corrupt_ppm) && skb->len > 14) {
		__u32 r = bpf_get_prandom_u32(), off = 14 + r % (skb->len - 14);
		__u8 b;

		if (!bpf_skb_load_bytes(skb, off, &b, 1)) {
			b ^= 1 << (r >> 29);
			if (!bpf_skb_store_bytes(skb, off, &b, 1, 0))
				__sync_fetch_and_add(&n->corrupted, 1);
		}
	}
	if (chance(p->dup_ppm) && !bpf_clone_redirect(skb, p->out_ifindex, 0))
		__sync_fetch_and_add(&n->duplicated, 1);
	return bpf_redirect(p->out_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
