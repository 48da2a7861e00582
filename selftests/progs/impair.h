/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The impairing link's map value (impair.bpf.c, selftests/impair.c). */
#ifndef IMPAIR_H
#define IMPAIR_H

/* One end of the relay, keyed by its ifindex: what it does (impair_ports,
 * written by impair.c) and what it did (impair_counts, by the program). */
struct impair_port {
	__u32 out_ifindex;	/* the other end: where frames leave */
	__u32 drop_ppm, dup_ppm, corrupt_ppm;	/* parts per million */
};
struct impair_count {
	__u64 frames, dropped, duplicated, corrupted;	/* IPv4 frames */
};

#endif
