/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Handler memory of one reduce match entry; shared by handler and host. */
#ifndef REDUCE_H
#define REDUCE_H

#define REDUCE_MAX		508	/* elements per entry: 32 + 508 * 8 = 4096 */
#define REDUCE_PKT_ELEMS	(SPIN_MAX_SEG / 8)	/* 1376-byte packet payload / 8 = 172 */

typedef struct {
	__u64 arrived;		/* contributions of this round so far */
	__u64 expected;		/* contributions per round (P - 1) */
	__u64 nelem;		/* elements of this entry's chunk */
	__u64 round;		/* rounds completed */
	__s64 sum[REDUCE_MAX];
} reduce_state_t;

/* reduce_double.bpf.o: contributions added so far, in the entry's buffer
 * after [round][sum[REDUCE_MAX]] */
#define REDUCE_PROGRESS_OFF	(8 + REDUCE_MAX * 8)

#endif
