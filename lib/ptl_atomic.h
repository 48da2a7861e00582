/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Portals 4 atomic operations on host memory (not installed).
 *
 * These are the pure arithmetic of PtlAtomic, PtlFetchAtomic and PtlSwap:
 * they do not serialize concurrent callers, which is the caller's job.
 */
#ifndef SPIN_PTL_ATOMIC_H
#define SPIN_PTL_ATOMIC_H

#include <stddef.h>
#include <spin/portals4.h>

/* Size of one element of datatype dt, or 0 if unsupported. */
size_t ptl_atomic_dt_size(ptl_datatype_t dt);

/*
 * Whether (op, dt) is valid for PtlAtomic (fetch = 0: no swap operations
 * PTL_SWAP..PTL_MSWAP) or for PtlFetchAtomic/PtlSwap (fetch = 1: all
 * operations).  Logical (LOR, LAND, LXOR), bitwise (BOR, BAND, BXOR) and
 * MSWAP need an integer type; MIN, MAX, SUM, PROD, SWAP and all CSWAP
 * variants take integer and floating-point types (float, double, long
 * double); the complex types take SUM, PROD, SWAP, CSWAP and CSWAP_NE.
 */
int ptl_atomic_valid(ptl_op_t op, ptl_datatype_t dt, int fetch);

/*
 * Apply op elementwise to the len bytes at target with the initiator's
 * operand vector in (len bytes, len a multiple of the element size).  If old
 * is not NULL, the previous target bytes are copied there first.
 *
 * PTL_SWAP:  target = in
 * PTL_CSWAP*: (exactly one element) target = in iff "operand OP target"
 *            holds: CSWAP ==, CSWAP_NE !=, CSWAP_LE operand <= target,
 *            CSWAP_LT operand < target, CSWAP_GE operand >= target,
 *            CSWAP_GT operand > target.
 * PTL_MSWAP: (exactly one element) target = (target & ~operand) | (in & operand)
 *
 * Buffers need no alignment.  Returns 0, or -1 for an invalid
 * op/datatype/length combination or a missing operand (nothing changed).
 */
int ptl_atomic_apply(ptl_op_t op, ptl_datatype_t dt, void *target, const void *in,
		     size_t len, const void *operand, void *old);

#endif
