// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Portals 4 atomic operations on host memory.
 *
 * Each element is loaded with memcpy, combined, and stored back with
 * memcpy, so the buffers need no alignment.  Integer SUM and PROD are done
 * in unsigned arithmetic, so they wrap modulo 2^bits (two's complement for
 * the signed types) instead of overflowing; MIN, MAX and the conditional
 * swaps compare with the signedness of the datatype; float and double use
 * floating-point arithmetic.  Logical operations yield 0 or 1.
 *
 * Direction of the conditional swaps.  Portals 4.1 describes them as "the
 * value of the operand is compared to the target", i.e. the operand is the
 * left-hand side: PTL_CSWAP_GT replaces the target iff operand > target,
 * PTL_CSWAP_LE iff operand <= target, and so on.  The Sandia reference
 * implementation (sandialabs/portals4, src/ib/ptl_tgt.c) agrees: its
 * CSWAP_LE stores the initiator's value iff operand <= the target's value.
 * So with in == operand, CSWAP_GT lowers the target to the operand when
 * that is smaller (an atomic minimum).
 */
#include <complex.h>
#include <stdint.h>
#include <string.h>

#include "ptl_atomic.h"

size_t ptl_atomic_dt_size(ptl_datatype_t dt)
{
	switch (dt) {
	case PTL_INT8_T:
	case PTL_UINT8_T:
		return 1;
	case PTL_INT16_T:
	case PTL_UINT16_T:
		return 2;
	case PTL_INT32_T:
	case PTL_UINT32_T:
	case PTL_FLOAT:
		return 4;
	case PTL_INT64_T:
	case PTL_UINT64_T:
	case PTL_DOUBLE:
		return 8;
	case PTL_FLOAT_COMPLEX:
		return sizeof(float complex);
	case PTL_DOUBLE_COMPLEX:
		return sizeof(double complex);
	case PTL_LONG_DOUBLE:
		return sizeof(long double);
	case PTL_LONG_DOUBLE_COMPLEX:
		return sizeof(long double complex);
	default:
		return 0;
	}
}

static int is_float(ptl_datatype_t dt)
{
	return dt == PTL_FLOAT || dt == PTL_DOUBLE || dt == PTL_LONG_DOUBLE;
}

static int is_complex(ptl_datatype_t dt)
{
	return dt == PTL_FLOAT_COMPLEX || dt == PTL_DOUBLE_COMPLEX || dt == PTL_LONG_DOUBLE_COMPLEX;
}

/* CSWAP* and MSWAP: one element, with an operand. */
static int is_cond_swap(ptl_op_t op)
{
	return op >= PTL_CSWAP && op <= PTL_MSWAP;
}

int ptl_atomic_valid(ptl_op_t op, ptl_datatype_t dt, int fetch)
{
	if (op > PTL_MSWAP || !ptl_atomic_dt_size(dt))
		return 0;
	if (!fetch && op >= PTL_SWAP)
		return 0;
	if (is_complex(dt))	/* no order: sums, products, (in)equality */
		return op == PTL_SUM || op == PTL_PROD || op == PTL_SWAP || op == PTL_CSWAP ||
		       op == PTL_CSWAP_NE;
	if (!is_float(dt))
		return 1;
	switch (op) {
	case PTL_MIN:
	case PTL_MAX:
	case PTL_SUM:
	case PTL_PROD:
	case PTL_SWAP:
	case PTL_CSWAP:
	case PTL_CSWAP_NE:
	case PTL_CSWAP_LE:
	case PTL_CSWAP_LT:
	case PTL_CSWAP_GE:
	case PTL_CSWAP_GT:
		return 1;
	default:	/* logical, bitwise, MSWAP */
		return 0;
	}
}

/*
 * Cases for every datatype.  a: target element, b: initiator's element,
 * c: operand (CSWAP* comparison value), r: result (preset to a).
 */
#define COMMON_CASES(T)							\
	case PTL_MIN:	  r = b < a ? b : a; break;			\
	case PTL_MAX:	  r = b > a ? b : a; break;			\
	case PTL_SWAP:	  r = b; break;					\
	case PTL_CSWAP:	  if (c == a) r = b; break;			\
	case PTL_CSWAP_NE: if (c != a) r = b; break;			\
	case PTL_CSWAP_LE: if (c <= a) r = b; break;			\
	case PTL_CSWAP_LT: if (c < a) r = b; break;			\
	case PTL_CSWAP_GE: if (c >= a) r = b; break;			\
	case PTL_CSWAP_GT: if (c > a) r = b; break;

/* Integers: wrapping SUM/PROD (via uintmax_t), logical, bitwise, MSWAP. */
#define INT_CASES(T)							\
	COMMON_CASES(T)							\
	case PTL_SUM:	r = (T)((uintmax_t)a + (uintmax_t)b); break;	\
	case PTL_PROD:	r = (T)((uintmax_t)a * (uintmax_t)b); break;	\
	case PTL_LOR:	r = a || b; break;				\
	case PTL_LAND:	r = a && b; break;				\
	case PTL_LXOR:	r = !a != !b; break;				\
	case PTL_BOR:	r = a | b; break;				\
	case PTL_BAND:	r = a & b; break;				\
	case PTL_BXOR:	r = a ^ b; break;				\
	case PTL_MSWAP:	r = (T)((a & ~c) | (b & c)); break;

#define FLOAT_CASES(T)							\
	COMMON_CASES(T)							\
	case PTL_SUM:	r = a + b; break;				\
	case PTL_PROD:	r = a * b; break;

#define COMPLEX_CASES(T)						\
	case PTL_SWAP:	  r = b; break;					\
	case PTL_CSWAP:	  if (c == a) r = b; break;			\
	case PTL_CSWAP_NE: if (c != a) r = b; break;			\
	case PTL_SUM:	  r = a + b; break;				\
	case PTL_PROD:	  r = a * b; break;

#define DEFINE_APPLY(name, T, CASES)					\
static void name(ptl_op_t op, unsigned char *t, const unsigned char *in, \
		 size_t n, const void *operand)				\
{									\
	T a, b, c = 0, r;						\
									\
	if (operand)							\
		memcpy(&c, operand, sizeof(T));				\
	for (size_t i = 0; i < n; i++, t += sizeof(T), in += sizeof(T)) { \
		memcpy(&a, t, sizeof(T));				\
		memcpy(&b, in, sizeof(T));				\
		r = a;							\
		switch (op) {						\
		CASES(T)						\
		default: break;						\
		}							\
		memcpy(t, &r, sizeof(T));				\
	}								\
}

DEFINE_APPLY(apply_s8, int8_t, INT_CASES)
DEFINE_APPLY(apply_u8, uint8_t, INT_CASES)
DEFINE_APPLY(apply_s16, int16_t, INT_CASES)
DEFINE_APPLY(apply_u16, uint16_t, INT_CASES)
DEFINE_APPLY(apply_s32, int32_t, INT_CASES)
DEFINE_APPLY(apply_u32, uint32_t, INT_CASES)
DEFINE_APPLY(apply_s64, int64_t, INT_CASES)
DEFINE_APPLY(apply_u64, uint64_t, INT_CASES)
DEFINE_APPLY(apply_f, float, FLOAT_CASES)
DEFINE_APPLY(apply_d, double, FLOAT_CASES)
DEFINE_APPLY(apply_ld, long double, FLOAT_CASES)
DEFINE_APPLY(apply_fc, float complex, COMPLEX_CASES)
DEFINE_APPLY(apply_dc, double complex, COMPLEX_CASES)
DEFINE_APPLY(apply_ldc, long double complex, COMPLEX_CASES)

int ptl_atomic_apply(ptl_op_t op, ptl_datatype_t dt, void *target, const void *in,
		     size_t len, const void *operand, void *old)
{
	size_t sz = ptl_atomic_dt_size(dt);

	if (!ptl_atomic_valid(op, dt, 1) || len % sz)
		return -1;
	if (is_cond_swap(op) && (len != sz || !operand))
		return -1;
	if (len && (!target || !in))
		return -1;
	if (old && len)
		memcpy(old, target, len);

	switch (dt) {
	case PTL_INT8_T:   apply_s8(op, target, in, len / sz, operand); break;
	case PTL_UINT8_T:  apply_u8(op, target, in, len / sz, operand); break;
	case PTL_INT16_T:  apply_s16(op, target, in, len / sz, operand); break;
	case PTL_UINT16_T: apply_u16(op, target, in, len / sz, operand); break;
	case PTL_INT32_T:  apply_s32(op, target, in, len / sz, operand); break;
	case PTL_UINT32_T: apply_u32(op, target, in, len / sz, operand); break;
	case PTL_INT64_T:  apply_s64(op, target, in, len / sz, operand); break;
	case PTL_UINT64_T: apply_u64(op, target, in, len / sz, operand); break;
	case PTL_FLOAT:    apply_f(op, target, in, len / sz, operand); break;
	case PTL_DOUBLE:   apply_d(op, target, in, len / sz, operand); break;
	case PTL_LONG_DOUBLE:	apply_ld(op, target, in, len / sz, operand); break;
	case PTL_FLOAT_COMPLEX:	apply_fc(op, target, in, len / sz, operand); break;
	case PTL_DOUBLE_COMPLEX: apply_dc(op, target, in, len / sz, operand); break;
	case PTL_LONG_DOUBLE_COMPLEX: apply_ldc(op, target, in, len / sz, operand); break;
	}
	return 0;
}
