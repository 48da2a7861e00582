// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An impairing link for tests and benchmarks (selftests/impair.c loads it).
 * Attached at TC ingress of both ends of a relay namespace: every frame
 * that arrives at one end leaves through the other (bpf_redirect), so the
 * two outer namespaces share one link.  IPv4 frames are, with the
 * probabilities set for the end they arrive at (parts per million, drawn
 * independently): dropped; corrupted (one bit of one byte after the
 * Ethernet header flipped); duplicated (sent twice); delayed (every frame
 * by delay_us plus 0 to jitter_us, uniform) and reordered (a chosen frame
 * held reorder_us more, so that later frames overtake it).  Other frames
 * (ARP) pass untouched, so neighbours resolve whatever the loss.
 *
 * This kernel has no qdisc that holds a frame until a time (no netem, fq or
 * etf), and a program cannot keep an skb.  A frame that must wait therefore
 * goes to a tap device whose reader, the holder process (impair.c), keeps
 * it until its departure time and sends it out of the other end (AF_PACKET).
 * The time and the end travel in a struct impair_hold_hdr pushed in front
 * of the Ethernet header.  A frame with nothing to wait for takes the
 * direct way, so one held back is overtaken by those that follow.
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

/* the holder's counters (impair.c maps them); created with the others */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct impair_held);
} impair_held SEC(".maps");

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
	bool reordered = false;
	__u32 out;
	__u64 wait;

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
	out = p->out_ifindex;
	wait = (__u64)p->delay_us * 1000;
	if (p->jitter_us)
		wait += (__u64)(bpf_get_prandom_u32() % (p->jitter_us + 1)) * 1000;
	if (chance(p->reorder_ppm)) {
		wait += (__u64)p->reorder_us * 1000;
		reordered = true;
	}
	if (wait && p->hold_ifindex) {
		struct impair_hold_hdr h = {
			.depart_ns = bpf_ktime_get_ns() + wait,
			.out_ifindex = out,
			.slot = (__u16)p->slot,
			.magic = IMPAIR_HOLD_MAGIC,
		};

		/* the frame and its duplicate both go to the holder, with
		 * the same departure time; without room in front (no
		 * memory) the frame goes on at once */
		if (!bpf_skb_change_head(skb, sizeof(h), 0)) {
			if (bpf_skb_store_bytes(skb, 0, &h, sizeof(h), 0))
				return TC_ACT_SHOT;	/* was made writable */
			out = p->hold_ifindex;
			__sync_fetch_and_add(&n->delayed, 1);
			if (reordered)
				__sync_fetch_and_add(&n->reordered, 1);
		}
	}
	if (chance(p->dup_ppm) && !bpf_clone_redirect(skb, out, 0))
		__sync_fetch_and_add(&n->duplicated, 1);
	return bpf_redirect(out, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
