// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/demuxcost.bpf.o - what the per-process frame channel of the
 * many-processes design (docs/design.md, "Many Portals processes per
 * interface") costs per packet, for progrun's --fresh mode:
 *
 *   xdp_parse  bounds-check the sPIN header, take the destination process
 *              slot from pt_index (its high byte, SPIN_PT_SLOT: wire.h), look the
 *              slot up in an array, drop: the frame of the demux without
 *              the copy
 *   xdp_ring   the same, then copy the whole frame into that slot's BPF
 *              ring buffer (an ARRAY_OF_MAPS of ring buffers keyed by
 *              slot: reserve, bpf_xdp_load_bytes, submit without wake-up)
 *              and drop it: what a process that does not own the frame's
 *              receive queue would be handed instead of an AF_XDP frame
 *
 *   bench/progrun --obj bench/demuxcost.bpf.o --prog xdp_ring --pt 256 \
 *                 --size 1376 --fresh 20000 --runs 5
 *
 * Nothing reads the rings, so a run of N calls needs N frames of room
 * (128 MiB: 20,000 calls of 1376-byte payloads per run, 4 runs); a
 * reservation that fails counts in `full` and the program returns XDP_PASS
 * instead of XDP_DROP, which progrun reports as the action.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <spin/wire.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define DEMUX_SLOTS	4
#define DEMUX_FRAME	1536	/* a record's frame room: an MTU frame */

struct demux_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 128 << 20);
} demux_rb0 SEC(".maps"), demux_rb1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, DEMUX_SLOTS);
	__type(key, __u32);
	__array(values, struct demux_ring);
} demux_rings SEC(".maps") = {
	.values = { [0] = &demux_rb0, [1] = &demux_rb1 },
};

/* per slot: the process's identity, as the runtime would keep it */
struct demux_proc {
	__u32 rank, pid, queue, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DEMUX_SLOTS);
	__type(key, __u32);
	__type(value, struct demux_proc);
} demux_procs SEC(".maps");

struct demux_rec {
	__u32 len;
	__u32 pad;
	__u8 frame[DEMUX_FRAME];
};

__u64 full;

static __always_inline struct demux_proc *demux_slot(struct xdp_md *xdp, __u32 *slot)
{
	void *data = (void *)(long)xdp->data, *end = (void *)(long)xdp->data_end;
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;

	if ((void *)(sh + 1) > end)
		return NULL;
	*slot = SPIN_PT_SLOT(bpf_ntohs(sh->pt_index));
	return bpf_map_lookup_elem(&demux_procs, slot);
}

SEC("xdp")
int xdp_parse(struct xdp_md *xdp)
{
	__u32 slot;

	return demux_slot(xdp, &slot) ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int xdp_ring(struct xdp_md *xdp)
{
	__u32 slot, len = xdp->data_end - xdp->data;
	struct demux_rec *r;
	void *rb;

	if (!demux_slot(xdp, &slot))
		return XDP_PASS;
	rb = bpf_map_lookup_elem(&demux_rings, &slot);
	if (!rb || len > DEMUX_FRAME || len < 1)
		return XDP_PASS;
	r = bpf_ringbuf_reserve(rb, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&full, 1);
		return XDP_PASS;
	}
	r->len = len;
	if (bpf_xdp_load_bytes(xdp, 0, r->frame, len)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return XDP_PASS;
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return XDP_DROP;
}
