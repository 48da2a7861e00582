// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of lib/ptl_atomic.c, the Portals 4 atomic arithmetic.  No
 * privileges or network needed.
 *
 *   selftests/test_ptl_atomic [-t GLOB]
 */
#include <complex.h>
#include <float.h>
#include <stdint.h>
#include "test.h"
#include "../lib/ptl_atomic.h"

/*
 * Apply op to one element (or a vector) held at odd offsets in byte buffers,
 * so nothing is aligned, and check both the old-value capture and the
 * result.
 */
static void check(int line, ptl_op_t op, ptl_datatype_t dt, size_t len, const void *tgt,
		  const void *in, const void *opnd, const void *expect)
{
	unsigned char tb[1 + 64], ib[3 + 64], ob[5 + 32], old[7 + 64];
	int rc, same;

	memcpy(tb + 1, tgt, len);
	memcpy(ib + 3, in, len);
	memcpy(ob + 5, opnd, ptl_atomic_dt_size(dt));
	memset(old, 0xee, sizeof(old));
	rc = ptl_atomic_apply(op, dt, tb + 1, ib + 3, len, ob + 5, old + 7);
	if (dt == PTL_LONG_DOUBLE || dt == PTL_LONG_DOUBLE_COMPLEX) {
		/* by value: an x87 long double has padding bytes */
		same = 1;
		for (size_t i = 0; i < len; i += sizeof(long double)) {
			long double x, y;

			memcpy(&x, tb + 1 + i, sizeof(x));
			memcpy(&y, (const unsigned char *)expect + i, sizeof(y));
			same &= x == y;
		}
	} else {
		same = !memcmp(tb + 1, expect, len);
	}
	if (rc != 0 || memcmp(old + 7, tgt, len) || !same) {
		T_MSG("line %d: op %d dt %d len %zu: rc %d, old %s, result %s", line, op, dt,
		      len, rc, memcmp(old + 7, tgt, len) ? "wrong" : "ok", same ? "ok" : "wrong");
		t_failed_now = 1;
	}
}

/* One element of type elem_t / datatype dt (both set by the suite). */
#define CHK(op, tgt, in, opnd, expect) do {				\
	elem_t _v[4] = { (tgt), (in), (opnd), (expect) };		\
	check(__LINE__, op, dt, sizeof(elem_t), &_v[0], &_v[1], &_v[2], &_v[3]); \
} while (0)

/*
 * Every operation on an integer type.  lo/hi are its extremes; m1 (all ones)
 * is -1 when signed and the maximum when unsigned, which tells signed and
 * unsigned comparisons apart.
 */
#define INT_SUITE(fn, T, DT, LO, HI, SIGNED)				\
static void fn(void)							\
{									\
	typedef T elem_t;						\
	const ptl_datatype_t dt = DT;					\
	const elem_t lo = LO, hi = HI, m1 = (elem_t)-1, neg2 = (elem_t)-2; \
									\
	CHK(PTL_MIN, hi, lo, 0, lo);					\
	CHK(PTL_MIN, lo, hi, 0, lo);					\
	CHK(PTL_MAX, lo, hi, 0, hi);					\
	CHK(PTL_MAX, hi, lo, 0, hi);					\
	CHK(PTL_MIN, m1, 1, 0, SIGNED ? m1 : 1);			\
	CHK(PTL_MAX, m1, 1, 0, SIGNED ? 1 : m1);			\
	CHK(PTL_MIN, neg2, m1, 0, neg2);				\
	CHK(PTL_SUM, hi, 1, 0, lo);		/* wraps */		\
	CHK(PTL_SUM, 40, neg2, 0, 38);					\
	CHK(PTL_SUM, m1, m1, 0, neg2);					\
	CHK(PTL_PROD, 7, 6, 0, 42);					\
	CHK(PTL_PROD, neg2, 3, 0, (elem_t)-6);				\
	CHK(PTL_PROD, hi, hi, 0, 1);		/* wraps */		\
	CHK(PTL_PROD, lo, m1, 0, lo);					\
	CHK(PTL_LOR, 0, 0, 0, 0);					\
	CHK(PTL_LOR, 0, neg2, 0, 1);					\
	CHK(PTL_LAND, neg2, 2, 0, 1);					\
	CHK(PTL_LAND, m1, 0, 0, 0);					\
	CHK(PTL_LXOR, m1, 2, 0, 0);					\
	CHK(PTL_LXOR, 0, neg2, 0, 1);					\
	CHK(PTL_LXOR, 0, 0, 0, 0);					\
	CHK(PTL_BOR, 0x0f, 0x30, 0, 0x3f);				\
	CHK(PTL_BOR, lo, hi, 0, m1);					\
	CHK(PTL_BAND, m1, 0x5a, 0, 0x5a);				\
	CHK(PTL_BAND, lo, m1, 0, lo);					\
	CHK(PTL_BXOR, m1, 0x0f, 0, (elem_t)-16);			\
	CHK(PTL_BXOR, 0x3c, 0x3c, 0, 0);				\
	CHK(PTL_SWAP, 5, neg2, 0, neg2);				\
	CHK(PTL_SWAP, lo, hi, 0, hi);					\
	CHK(PTL_CSWAP, 5, 9, 5, 9);					\
	CHK(PTL_CSWAP, 5, 9, 6, 5);					\
	CHK(PTL_CSWAP, m1, lo, m1, lo);					\
	CHK(PTL_CSWAP_NE, 5, 9, 5, 5);					\
	CHK(PTL_CSWAP_NE, 5, 9, 6, 9);					\
	/* operand OP target, target 5 */				\
	CHK(PTL_CSWAP_LE, 5, 9, 3, 9);					\
	CHK(PTL_CSWAP_LE, 5, 9, 5, 9);					\
	CHK(PTL_CSWAP_LE, 5, 9, 6, 5);					\
	CHK(PTL_CSWAP_LT, 5, 9, 3, 9);					\
	CHK(PTL_CSWAP_LT, 5, 9, 5, 5);					\
	CHK(PTL_CSWAP_LT, 5, 9, 6, 5);					\
	CHK(PTL_CSWAP_GE, 5, 9, 3, 5);					\
	CHK(PTL_CSWAP_GE, 5, 9, 5, 9);					\
	CHK(PTL_CSWAP_GE, 5, 9, 7, 9);					\
	CHK(PTL_CSWAP_GT, 5, 9, 3, 5);					\
	CHK(PTL_CSWAP_GT, 5, 9, 5, 5);					\
	CHK(PTL_CSWAP_GT, 5, 9, 7, 9);					\
	/* signed: 3 > -2; unsigned: 3 < max - 1 */			\
	CHK(PTL_CSWAP_GT, neg2, 9, 3, SIGNED ? 9 : neg2);		\
	CHK(PTL_CSWAP_LT, neg2, 9, 3, SIGNED ? neg2 : 9);		\
	CHK(PTL_CSWAP_LE, hi, 1, lo, 1);				\
	CHK(PTL_CSWAP_GE, hi, 1, lo, hi);				\
	CHK(PTL_CSWAP_GT, lo, 1, hi, 1);				\
	CHK(PTL_MSWAP, 0x33, 0x55, 0x0f, 0x35);				\
	CHK(PTL_MSWAP, 0x33, neg2, m1, neg2);				\
	CHK(PTL_MSWAP, neg2, 0x33, 0, neg2);				\
	CHK(PTL_MSWAP, lo, hi, hi, m1);					\
}

INT_SUITE(test_int8, int8_t, PTL_INT8_T, INT8_MIN, INT8_MAX, 1)
INT_SUITE(test_uint8, uint8_t, PTL_UINT8_T, 0, UINT8_MAX, 0)
INT_SUITE(test_int16, int16_t, PTL_INT16_T, INT16_MIN, INT16_MAX, 1)
INT_SUITE(test_uint16, uint16_t, PTL_UINT16_T, 0, UINT16_MAX, 0)
INT_SUITE(test_int32, int32_t, PTL_INT32_T, INT32_MIN, INT32_MAX, 1)
INT_SUITE(test_uint32, uint32_t, PTL_UINT32_T, 0, UINT32_MAX, 0)
INT_SUITE(test_int64, int64_t, PTL_INT64_T, INT64_MIN, INT64_MAX, 1)
INT_SUITE(test_uint64, uint64_t, PTL_UINT64_T, 0, UINT64_MAX, 0)

/*
 * Every operation valid on a floating-point type.  Negative values and
 * -0.0 == 0.0 check that comparisons are floating-point, not bitwise.
 */
#define FLOAT_SUITE(fn, T, DT, MAXV)					\
static void fn(void)							\
{									\
	typedef T elem_t;						\
	const ptl_datatype_t dt = DT;					\
									\
	CHK(PTL_MIN, -1.5, 2.25, 0, -1.5);				\
	CHK(PTL_MIN, -1, -2, 0, -2);					\
	CHK(PTL_MIN, MAXV, -MAXV, 0, -MAXV);				\
	CHK(PTL_MAX, -1, -2, 0, -1);					\
	CHK(PTL_MAX, -MAXV, MAXV, 0, MAXV);				\
	CHK(PTL_SUM, 0.5, 0.25, 0, 0.75);				\
	CHK(PTL_SUM, 1.5, -2.75, 0, -1.25);				\
	CHK(PTL_PROD, -1.5, 2, 0, -3);					\
	CHK(PTL_PROD, 0.5, 0.5, 0, 0.25);				\
	CHK(PTL_SWAP, 1, -0.125, 0, -0.125);				\
	CHK(PTL_CSWAP, -0.0, 4, 0.0, 4);				\
	CHK(PTL_CSWAP, 1.5, 4, 1.25, 1.5);				\
	CHK(PTL_CSWAP_NE, 1.5, 4, 1.25, 4);				\
	CHK(PTL_CSWAP_NE, 1.5, 4, 1.5, 1.5);				\
	CHK(PTL_CSWAP_LE, -1, 4, -2, 4);				\
	CHK(PTL_CSWAP_LE, -1, 4, -1, 4);				\
	CHK(PTL_CSWAP_LE, -1, 4, -0.5, -1);				\
	CHK(PTL_CSWAP_LT, -1, 4, -2, 4);				\
	CHK(PTL_CSWAP_LT, -1, 4, -1, -1);				\
	CHK(PTL_CSWAP_GE, -1, 4, -1, 4);				\
	CHK(PTL_CSWAP_GE, -1, 4, -2, -1);				\
	CHK(PTL_CSWAP_GT, -1, 4, -0.5, 4);				\
	CHK(PTL_CSWAP_GT, -1, 4, -1, -1);				\
	CHK(PTL_CSWAP_GT, -1, 4, -2, -1);				\
}

FLOAT_SUITE(test_float, float, PTL_FLOAT, FLT_MAX)
FLOAT_SUITE(test_double, double, PTL_DOUBLE, DBL_MAX)
FLOAT_SUITE(test_long_double, long double, PTL_LONG_DOUBLE, LDBL_MAX)

/* Complex numbers: sums, products, swaps on (in)equality only. */
#define COMPLEX_SUITE(fn, T, DT)					\
static void fn(void)							\
{									\
	typedef T elem_t;						\
	const ptl_datatype_t dt = DT;					\
									\
	CHK(PTL_SUM, 1 + 2 * I, 3 - 4 * I, 0, 4 - 2 * I);		\
	CHK(PTL_PROD, 1 + 2 * I, 3 + 4 * I, 0, -5 + 10 * I);		\
	CHK(PTL_SWAP, 1 + 2 * I, -0.5 * I, 0, -0.5 * I);		\
	CHK(PTL_CSWAP, 1 + 2 * I, 7, 1 + 2 * I, 7);			\
	CHK(PTL_CSWAP, 1 + 2 * I, 7, 1 - 2 * I, 1 + 2 * I);		\
	CHK(PTL_CSWAP_NE, 1 + 2 * I, 7, 1 - 2 * I, 7);			\
	CHK(PTL_CSWAP_NE, 1 + 2 * I, 7, 1 + 2 * I, 1 + 2 * I);		\
	ASSERT_EQ(ptl_atomic_valid(PTL_MIN, dt, 1), 0, "MIN on complex");	\
	ASSERT_EQ(ptl_atomic_valid(PTL_CSWAP_LT, dt, 1), 0, "CSWAP_LT on complex"); \
}

COMPLEX_SUITE(test_float_complex, float complex, PTL_FLOAT_COMPLEX)
COMPLEX_SUITE(test_double_complex, double complex, PTL_DOUBLE_COMPLEX)
COMPLEX_SUITE(test_long_double_complex, long double complex, PTL_LONG_DOUBLE_COMPLEX)

static void test_dt_size(void)
{
	static const size_t want[PTL_DATATYPE_LAST] = {
		[PTL_INT8_T] = 1, [PTL_UINT8_T] = 1, [PTL_INT16_T] = 2, [PTL_UINT16_T] = 2,
		[PTL_INT32_T] = 4, [PTL_UINT32_T] = 4, [PTL_FLOAT] = 4,
		[PTL_INT64_T] = 8, [PTL_UINT64_T] = 8, [PTL_DOUBLE] = 8,
		[PTL_FLOAT_COMPLEX] = 8, [PTL_DOUBLE_COMPLEX] = 16,
		[PTL_LONG_DOUBLE] = sizeof(long double),
		[PTL_LONG_DOUBLE_COMPLEX] = 2 * sizeof(long double),
	};

	for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++)
		ASSERT_EQ(ptl_atomic_dt_size(dt), want[dt], "element size");
	ASSERT_EQ(ptl_atomic_dt_size(PTL_DATATYPE_LAST), 0, "past the last datatype");
	ASSERT_EQ(ptl_atomic_dt_size(255), 0, "datatype 255");
}

/* The validity table, and that apply agrees with it for fetch = 1. */
static void test_valid(void)
{
	for (int op = 0; op <= PTL_OP_LAST + 1; op++) {
		for (int dt = 0; dt <= PTL_DATATYPE_LAST + 1; dt++) {
			int flt = dt == PTL_FLOAT || dt == PTL_DOUBLE || dt == PTL_LONG_DOUBLE;
			int cplx = dt == PTL_FLOAT_COMPLEX || dt == PTL_DOUBLE_COMPLEX ||
				   dt == PTL_LONG_DOUBLE_COMPLEX;
			int int_only = (op >= PTL_LOR && op <= PTL_BXOR) || op == PTL_MSWAP;
			int cplx_ok = op == PTL_SUM || op == PTL_PROD || op == PTL_SWAP ||
				      op == PTL_CSWAP || op == PTL_CSWAP_NE;
			int ok = op < PTL_OP_LAST && dt < PTL_DATATYPE_LAST && !(flt && int_only) &&
				 !(cplx && !cplx_ok);
			unsigned char t[32] = { 0 }, in[32] = { 1 }, opnd[32] = { 0 };
			size_t sz = ptl_atomic_dt_size(dt) ? ptl_atomic_dt_size(dt) : 4;

			ASSERT_EQ(ptl_atomic_valid(op, dt, 1), ok, "fetch-atomic/swap validity");
			ASSERT_EQ(ptl_atomic_valid(op, dt, 0), ok && op < PTL_SWAP,
				  "atomic validity");
			ASSERT_EQ(ptl_atomic_apply(op, dt, t, in, sz, opnd, NULL), ok ? 0 : -1,
				  "apply agrees with validity");
			if (t_failed_now) {
				T_MSG("op %d dt %d", op, dt);
				return;
			}
		}
	}
	ASSERT_EQ(ptl_atomic_valid(PTL_SWAP, PTL_INT32_T, 0), 0, "SWAP is no PtlAtomic op");
	ASSERT_EQ(ptl_atomic_valid(PTL_CSWAP_GT, PTL_FLOAT, 1), 1, "CSWAP_GT on float");
	ASSERT_EQ(ptl_atomic_valid(PTL_MSWAP, PTL_DOUBLE, 1), 0, "MSWAP on double");
	ASSERT_EQ(ptl_atomic_valid(PTL_LXOR, PTL_FLOAT, 0), 0, "LXOR on float");
	ASSERT_EQ(ptl_atomic_valid(PTL_PROD, PTL_DOUBLE, 0), 1, "PROD on double");
}

/* Multi-element vectors, unaligned, with and without old-value capture. */
static void test_vectors(void)
{
	{
		int32_t t[5] = { 1, -1, INT32_MAX, INT32_MIN, 0 };
		int32_t in[5] = { 2, -2, 1, -1, 7 };
		int32_t want[5] = { 3, -3, INT32_MIN, INT32_MAX, 7 };
		check(__LINE__, PTL_SUM, PTL_INT32_T, sizeof(t), t, in, in, want);
	}
	{
		uint16_t t[4] = { 0x8000, 1, 0xffff, 7 };
		uint16_t in[4] = { 0x7fff, 2, 0, 7 };
		uint16_t want[4] = { 0x7fff, 1, 0, 7 };
		check(__LINE__, PTL_MIN, PTL_UINT16_T, sizeof(t), t, in, in, want);
	}
	{
		int8_t t[7] = { -128, 127, -1, 0, 5, -5, 3 };
		int8_t in[7] = { 127, -128, 0, -1, -5, 5, 3 };
		int8_t want[7] = { 127, 127, 0, 0, 5, 5, 3 };
		check(__LINE__, PTL_MAX, PTL_INT8_T, sizeof(t), t, in, in, want);
	}
	{
		double t[3] = { 1.5, -2, 1e300 };
		double in[3] = { 2, 0.25, -2 };
		double want[3] = { 3, -0.5, -2e300 };
		check(__LINE__, PTL_PROD, PTL_DOUBLE, sizeof(t), t, in, in, want);
	}
	{
		int64_t t[3] = { 1, INT64_MIN, -7 };
		int64_t in[3] = { -1, 2, INT64_MAX };
		check(__LINE__, PTL_SWAP, PTL_INT64_T, sizeof(t), t, in, in, in);
	}
	{
		uint64_t t[2] = { 0xff00ff00ff00ff00ull, 1 };
		uint64_t in[2] = { 0x0ff00ff00ff00ff0ull, 3 };
		uint64_t want[2] = { 0xf0f0f0f0f0f0f0f0ull, 2 };
		check(__LINE__, PTL_BXOR, PTL_UINT64_T, sizeof(t), t, in, in, want);
	}
	{
		/* no old buffer; a zero length changes nothing */
		unsigned char buf[1 + 3 * 4], in[12];
		uint32_t v[3] = { 10, 20, UINT32_MAX }, add[3] = { 1, 2, 1 }, want[3] = { 11, 22, 0 };

		memcpy(buf + 1, v, sizeof(v));
		memcpy(in, add, sizeof(add));
		ASSERT_EQ(ptl_atomic_apply(PTL_SUM, PTL_UINT32_T, buf + 1, in, 12, NULL, NULL), 0,
			  "sum without old");
		ASSERT_MEM(buf + 1, want, sizeof(want), "sum without old");
		ASSERT_EQ(ptl_atomic_apply(PTL_SUM, PTL_UINT32_T, buf + 1, in, 0, NULL, NULL), 0,
			  "zero length");
		ASSERT_MEM(buf + 1, want, sizeof(want), "zero length changes nothing");
	}
}

static void expect_invalid(int line, ptl_op_t op, ptl_datatype_t dt, size_t len, int with_operand)
{
	unsigned char t[17], in[16], opnd[8], old[16], t0[17], old0[16];

	memset(t, 0xa5, sizeof(t));
	memset(in, 0x11, sizeof(in));
	memset(opnd, 0x22, sizeof(opnd));
	memset(old, 0x5a, sizeof(old));
	memcpy(t0, t, sizeof(t));
	memcpy(old0, old, sizeof(old));
	if (ptl_atomic_apply(op, dt, t + 1, in, len, with_operand ? opnd : NULL, old) != -1 ||
	    memcmp(t, t0, sizeof(t)) || memcmp(old, old0, sizeof(old))) {
		T_MSG("line %d: op %d dt %d len %zu not rejected cleanly", line, op, dt, len);
		t_failed_now = 1;
	}
}
#define INVALID(op, dt, len, with_operand) expect_invalid(__LINE__, op, dt, len, with_operand)

/* Invalid combinations return -1 and touch neither target nor old. */
static void test_invalid(void)
{
	INVALID(PTL_BOR, PTL_FLOAT, 4, 1);
	INVALID(PTL_BAND, PTL_DOUBLE, 8, 1);
	INVALID(PTL_BXOR, PTL_FLOAT, 8, 1);
	INVALID(PTL_LOR, PTL_DOUBLE, 8, 1);
	INVALID(PTL_LAND, PTL_FLOAT, 4, 1);
	INVALID(PTL_LXOR, PTL_DOUBLE, 16, 1);
	INVALID(PTL_MSWAP, PTL_FLOAT, 4, 1);
	INVALID(PTL_MSWAP, PTL_DOUBLE, 8, 1);
	INVALID(PTL_OP_LAST, PTL_INT32_T, 4, 1);
	INVALID(255, PTL_UINT8_T, 1, 1);
	INVALID(PTL_SUM, PTL_DATATYPE_LAST, 4, 1);
	INVALID(PTL_SWAP, 255, 4, 1);
	INVALID(PTL_SUM, PTL_INT32_T, 6, 1);		/* not a multiple */
	INVALID(PTL_MIN, PTL_INT64_T, 12, 1);
	INVALID(PTL_SUM, PTL_UINT16_T, 1, 1);
	INVALID(PTL_CSWAP, PTL_INT32_T, 8, 1);		/* swaps: one element */
	INVALID(PTL_CSWAP_GT, PTL_DOUBLE, 16, 1);
	INVALID(PTL_MSWAP, PTL_UINT8_T, 2, 1);
	INVALID(PTL_CSWAP_NE, PTL_INT16_T, 0, 1);
	INVALID(PTL_CSWAP, PTL_INT32_T, 4, 0);		/* no operand */
	INVALID(PTL_MSWAP, PTL_UINT64_T, 8, 0);
	INVALID(PTL_CSWAP_LE, PTL_FLOAT, 4, 0);
}

int main(int argc, char **argv)
{
	t_args(argc, argv, "ptl_atomic");

	RUN_TEST(test_dt_size);
	RUN_TEST(test_valid);
	RUN_TEST(test_int8);
	RUN_TEST(test_uint8);
	RUN_TEST(test_int16);
	RUN_TEST(test_uint16);
	RUN_TEST(test_int32);
	RUN_TEST(test_uint32);
	RUN_TEST(test_int64);
	RUN_TEST(test_uint64);
	RUN_TEST(test_float);
	RUN_TEST(test_double);
	RUN_TEST(test_long_double);
	RUN_TEST(test_float_complex);
	RUN_TEST(test_double_complex);
	RUN_TEST(test_long_double_complex);
	RUN_TEST(test_vectors);
	RUN_TEST(test_invalid);
	return t_summary();
}
