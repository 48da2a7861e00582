/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The impairing link's map values (impair.bpf.c, selftests/impair.c). */
#ifndef IMPAIR_H
#define IMPAIR_H

/* One end of the relay, keyed by its ifindex: what it does (impair_ports,
 * written by impair.c) and what it did (impair_counts, by the program). */
struct impair_port {
	__u32 out_ifindex;	/* the other end: where frames leave */
	__u32 drop_ppm, dup_ppm, corrupt_ppm;	/* parts per million */
	__u32 hold_ifindex;	/* the tap to the holder (impair.c) */
	__u32 slot;		/* this end's entry in impair_held */
	__u32 delay_us;		/* every IPv4 frame waits this long */
	__u32 jitter_us;	/* and 0 to this much more (uniform) */
	__u32 reorder_ppm;	/* a frame chosen with this probability */
	__u32 reorder_us;	/* waits this much more still */
};
struct impair_count {
	__u64 frames, dropped, duplicated, corrupted;	/* IPv4 frames */
	__u64 delayed;		/* sent to the holder */
	__u64 reordered;	/* of them, held back reorder_us more */
};

/* What the holder process counts per end (impair_held, an mmap-able
 * array indexed by impair_port.slot; the program does not touch it). */
struct impair_held {
	__u64 lost;		/* frames it could not keep or send */
	__u64 tap_drops_base;	/* the tap's tx drops at the last reset */
};

/* In front of every frame the program sends to the holder's tap. */
#define IMPAIR_HOLD_MAGIC	0x4d1du
struct impair_hold_hdr {
	__u64 depart_ns;	/* CLOCK_MONOTONIC: not before this */
	__u32 out_ifindex;	/* leaves through this end */
	__u16 slot;		/* arrived at the end with this slot */
	__u16 magic;		/* IMPAIR_HOLD_MAGIC */
};

#define IMPAIR_MAX_US		10000000u	/* 10 s: delay, jitter, hold */
#define IMPAIR_REORDER_US	1000u		/* default hold of a reordered frame */

#endif
