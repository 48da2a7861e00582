/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The runtime's BPF maps, declared once for the runtime and for handler
 * objects.  A handler object is loaded with its maps replaced by the
 * runtime's pinned ones (libspin reuses them by name), so both sides see the
 * same handler memory, host window, context and statistics.
 */
#ifndef SPIN_MAPS_BPF_H
#define SPIN_MAPS_BPF_H

#include <spin/wire.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_cfg);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_stats);
} spin_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_ctx);
} spin_ctx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PT);
	__type(key, __u32);
	__type(value, struct spin_pt);
} spin_pt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_ME);
	__type(key, __u32);
	__type(value, struct spin_me);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_me SEC(".maps");

/* Handler (HPU) memory: one SPIN_HPU_SIZE block per match entry. */
struct spin_hpu_mem { __u8 b[SPIN_HPU_SIZE]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_ME);
	__type(key, __u32);
	__type(value, struct spin_hpu_mem);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_hpu SEC(".maps");

/* Host memory window, mmap-ed by the owning processes; page granules. */
struct spin_page { __u8 b[SPIN_PAGE]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_DEF_HOST_PAGES);
	__type(key, __u32);
	__type(value, struct spin_page);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_host SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PEERS);
	__type(key, __u32);
	__type(value, struct spin_peer);
} spin_peers SEC(".maps");

/* Recently seen message ids per source rank (duplicate detection). */
struct spin_dedup { __u32 id[SPIN_DEDUP_SLOTS]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PEERS);
	__type(key, __u32);
	__type(value, struct spin_dedup);
} spin_dedup SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_MAX_MSGS);
	__type(key, struct spin_msg_key);
	__type(value, struct spin_msg);
} spin_msgs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} spin_events SEC(".maps");

/* Handler entry programs, index = spin_me.handler - 1. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, SPIN_MAX_HANDLERS);
	__type(key, __u32);
	__type(value, __u32);
} spin_handlers SEC(".maps");

/* Runtime stages reached by tail call (enum spin_stage). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, SPIN_STAGE_MAX);
	__type(key, __u32);
	__type(value, __u32);
} spin_stages SEC(".maps");

#define SPIN_COUNT(st, field) do { if (st) (st)->field++; } while (0)

static __always_inline struct spin_stats *spin_stats_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_stats, &k);
}

static __always_inline struct spin_ctx *spin_ctx_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_ctx, &k);
}

static __always_inline struct spin_cfg *spin_cfg_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_cfg, &k);
}

static __always_inline void spin_drop_count(struct spin_stats *st, int reason)
{
	if (st && reason >= 0 && reason < SPIN_DROP_MAX)
		st->drops[reason]++;
}

/* kfuncs of the target kernel (6.4+ / 6.16+) */
extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym;
extern int bpf_dynptr_copy(struct bpf_dynptr *dst_ptr, __u32 dst_off,
			   struct bpf_dynptr *src_ptr, __u32 src_off, __u32 size) __ksym;

/*
 * Copy len bytes between the host window at byte offset `off` and the
 * dynptr `o` at `ooff` (to_host: o -> window).  len <= SPIN_MAX_DMA, so a
 * copy touches at most two pages.  Bounds are checked at run time by the
 * dynptrs; returns 0, or -1 when anything is out of range.
 */
static __always_inline int spin_host_xfer(__u64 off, struct bpf_dynptr *o, __u32 ooff,
					  __u32 len, int to_host)
{
	__u32 done = 0;

	if (len > SPIN_MAX_DMA)
		return -1;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct bpf_dynptr hd;
		struct spin_page *p;
		__u32 pg, in, n;
		long err;

		if (done >= len)
			break;
		pg = (off + done) / SPIN_PAGE;
		in = (off + done) % SPIN_PAGE;
		p = bpf_map_lookup_elem(&spin_host, &pg);
		if (!p || bpf_dynptr_from_mem(p, SPIN_PAGE, 0, &hd))
			return -1;
		n = SPIN_PAGE - in;
		if (n > len - done)
			n = len - done;
		if (to_host)
			err = bpf_dynptr_copy(&hd, in, o, ooff + done, n);
		else
			err = bpf_dynptr_copy(o, ooff + done, &hd, in, n);
		if (err)
			return -1;
		done += n;
	}
	return done == len ? 0 : -1;
}

#endif /* SPIN_MAPS_BPF_H */
