/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * spin/softfloat.h - IEEE-754 binary32 and binary64 arithmetic on the bit
 * patterns, for handlers (BPF has no floating point unit) and for host code
 * that wants the very same results.
 *
 *     __u64 spin_f64_add(__u64 a, __u64 b);   a + b
 *     __u64 spin_f64_mul(__u64 a, __u64 b);   a * b
 *     __u64 spin_f64_min(__u64 a, __u64 b);   a < b ? a : b  (MPI_MIN)
 *     __u64 spin_f64_max(__u64 a, __u64 b);   a > b ? a : b  (MPI_MAX)
 *     __u32 spin_f32_add/mul/min/max(__u32 a, __u32 b);   the same on floats
 *     int   spin_f64_lt(__u64 a, __u64 b), spin_f32_lt(...);   IEEE a < b
 *
 * Arguments and results are the IEEE bit patterns (a double read from a
 * packet as a __u64, as memcpy would).  Results are exact IEEE-754 results
 * rounded to nearest, ties to even, with subnormals (no flush to zero),
 * signed zeros (x + -x is +0) and infinities.  Where IEEE leaves the bits
 * open, spin gives what x86-64 SSE gives, so the results equal the host's
 * bit for bit (selftests/test_softfloat checks that):
 *   - a NaN operand: the result is the first NaN operand (a if a is NaN,
 *     else b), made quiet;
 *   - an invalid operation (inf - inf, 0 * inf): the default NaN
 *     0xfff8000000000000 (double) / 0xffc00000 (float);
 *   - min/max are the C expressions a < b ? a : b and a > b ? a : b, which
 *     is what MPI_MIN/MPI_MAX are in MPI libraries: with a NaN operand, or
 *     two zeros, the result is b.  (Not IEEE 754-2019 minimum/maximum.)
 * Exception flags are not kept.
 *
 * Integer code without loops, so the verifier accepts it anywhere; a
 * double add is about 200 BPF instructions.  Usable on its own (any C
 * compiler; in BPF after vmlinux.h), and included by spin/handler.h.
 */
#ifndef SPIN_SOFTFLOAT_H
#define SPIN_SOFTFLOAT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Count of leading zero bits of x != 0 (no loop, no builtin: the BPF
 * target has no such instruction). */
static inline __attribute__((always_inline)) int __spin_sf_clz64(__u64 x)
{
	int n = 0;

	if (!(x >> 32)) { n += 32; x <<= 32; }
	if (!(x >> 48)) { n += 16; x <<= 16; }
	if (!(x >> 56)) { n += 8; x <<= 8; }
	if (!(x >> 60)) { n += 4; x <<= 4; }
	if (!(x >> 62)) { n += 2; x <<= 2; }
	if (!(x >> 63)) n += 1;
	return n;
}

/* x >> s with every bit shifted out ORed into bit 0 (sticky), 0 <= s. */
static inline __attribute__((always_inline)) __u64 __spin_sf_shr_sticky(__u64 x, __u64 s)
{
	if (s == 0)
		return x;
	if (s >= 64)
		return x != 0;
	return (x >> s) | ((x << (64 - s)) != 0);
}

/*
 * The formats, as parameters of one implementation: fb fraction bits (52,
 * 23), eb exponent bits (11, 8).  Bit patterns are in the low 1+eb+fb bits
 * of a __u64.
 */
#define __SPIN_SF_EMAX(eb)	((1ull << (eb)) - 1)
#define __SPIN_SF_FRAC(fb)	((1ull << (fb)) - 1)
#define __SPIN_SF_SIGN(fb, eb)	(1ull << ((fb) + (eb)))
#define __SPIN_SF_QUIET(fb)	(1ull << ((fb) - 1))
/* x86's default NaN: sign set, exponent all ones, quiet bit */
#define __SPIN_SF_DNAN(fb, eb)	(__SPIN_SF_SIGN(fb, eb) | (__SPIN_SF_EMAX(eb) << (fb)) | __SPIN_SF_QUIET(fb))

static inline __attribute__((always_inline)) int __spin_sf_isnan(__u64 a, int fb, int eb)
{
	return ((a >> fb) & __SPIN_SF_EMAX(eb)) == __SPIN_SF_EMAX(eb) && (a & __SPIN_SF_FRAC(fb));
}

/*
 * Round and pack.  m holds the significand with 3 extra low bits (guard,
 * round, sticky): a normal result has its leading bit at fb + 3; e is the
 * biased exponent (>= 1; e == 1 with the leading bit below fb + 3 is a
 * subnormal).
 */
static inline __attribute__((always_inline)) __u64 __spin_sf_round(__u64 sign, __s64 e, __u64 m,
								     int fb, int eb)
{
	__u64 low = m & 7;

	m >>= 3;
	if (low > 4 || (low == 4 && (m & 1)))
		m++;
	if (m >> (fb + 1)) {		/* rounding carried out: 10.000 */
		m >>= 1;
		e++;
	}
	if (e >= (__s64)__SPIN_SF_EMAX(eb))
		return sign | (__SPIN_SF_EMAX(eb) << fb);	/* overflow: infinity */
	if (!(m >> fb))
		return sign | m;				/* subnormal (or zero) */
	return sign | ((__u64)e << fb) | (m & __SPIN_SF_FRAC(fb));
}

static inline __attribute__((always_inline)) __u64 __spin_sf_add(__u64 a, __u64 b, int fb, int eb)
{
	const __u64 S = __SPIN_SF_SIGN(fb, eb), EM = __SPIN_SF_EMAX(eb), F = __SPIN_SF_FRAC(fb);
	__u64 ea = (a >> fb) & EM, eb_ = (b >> fb) & EM;
	__u64 ma = a & F, mb = b & F, t, m, sign;
	__s64 e;
	int sh;

	if (ea == EM || eb_ == EM) {
		if (ea == EM && ma)
			return a | __SPIN_SF_QUIET(fb);
		if (eb_ == EM && mb)
			return b | __SPIN_SF_QUIET(fb);
		if (ea == EM && eb_ == EM)
			return ((a ^ b) & S) ? __SPIN_SF_DNAN(fb, eb) : a;	/* inf - inf */
		return ea == EM ? a : b;
	}
	if (!ea && !ma)
		return (!eb_ && !mb) ? (a & b) : b;	/* -0 + -0 = -0, else +0 */
	if (!eb_ && !mb)
		return a;
	/* significands with the implicit bit, exponent 1 for subnormals */
	if (ea)
		ma |= 1ull << fb;
	else
		ea = 1;
	if (eb_)
		mb |= 1ull << fb;
	else
		eb_ = 1;
	/* a is the operand of larger magnitude */
	if (ea < eb_ || (ea == eb_ && ma < mb)) {
		t = ma; ma = mb; mb = t;
		t = ea; ea = eb_; eb_ = t;
		t = a; a = b; b = t;
	}
	sign = a & S;
	ma <<= 3;
	mb = __spin_sf_shr_sticky(mb << 3, ea - eb_);
	e = ea;
	if (!((a ^ b) & S)) {
		m = ma + mb;
		if (m >> (fb + 4)) {
			m = (m >> 1) | (m & 1);
			e++;
		}
	} else {
		m = ma - mb;
		if (!m)
			return 0;		/* exact zero difference: +0 */
		sh = __spin_sf_clz64(m) - (63 - (fb + 3));
		if (sh > e - 1)
			sh = e - 1;		/* stays subnormal */
		if (sh > 0) {
			m <<= sh;
			e -= sh;
		}
	}
	return __spin_sf_round(sign, e, m, fb, eb);
}

/* 64 x 64 -> 128 bits from 32-bit halves (the BPF target has no wide
 * multiply). */
static inline __attribute__((always_inline)) void __spin_sf_mul128(__u64 a, __u64 b, __u64 *hi,
								     __u64 *lo)
{
	__u64 al = a & 0xffffffffull, ah = a >> 32, bl = b & 0xffffffffull, bh = b >> 32;
	__u64 p0 = al * bl, p1 = al * bh, p2 = ah * bl, p3 = ah * bh;
	__u64 mid = (p0 >> 32) + (p1 & 0xffffffffull) + (p2 & 0xffffffffull);

	*lo = (p0 & 0xffffffffull) | (mid << 32);
	*hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

static inline __attribute__((always_inline)) __u64 __spin_sf_mul(__u64 a, __u64 b, int fb, int eb)
{
	const __u64 S = __SPIN_SF_SIGN(fb, eb), EM = __SPIN_SF_EMAX(eb), F = __SPIN_SF_FRAC(fb);
	const __s64 bias = (1ll << (eb - 1)) - 1;
	__u64 ea = (a >> fb) & EM, eb_ = (b >> fb) & EM;
	__u64 ma = a & F, mb = b & F, sign = (a ^ b) & S, hi, lo, m;
	__s64 xa, xb, e;
	int sh;

	if (ea == EM && ma)
		return a | __SPIN_SF_QUIET(fb);
	if (eb_ == EM && mb)
		return b | __SPIN_SF_QUIET(fb);
	if (ea == EM || eb_ == EM) {
		if ((!ea && !ma) || (!eb_ && !mb))
			return __SPIN_SF_DNAN(fb, eb);		/* 0 * inf */
		return sign | (EM << fb);
	}
	if ((!ea && !ma) || (!eb_ && !mb))
		return sign;
	/* normalize: leading bit at fb, exponents unbounded below */
	if (ea) {
		ma |= 1ull << fb;
		xa = ea;
	} else {
		sh = __spin_sf_clz64(ma) - (63 - fb);
		ma <<= sh;
		xa = 1 - sh;
	}
	if (eb_) {
		mb |= 1ull << fb;
		xb = eb_;
	} else {
		sh = __spin_sf_clz64(mb) - (63 - fb);
		mb <<= sh;
		xb = 1 - sh;
	}
	e = xa + xb - bias;
	/* the product has its leading bit at 2fb or 2fb+1; keep fb+4 bits
	 * (leading bit at fb+3) and fold the rest into the sticky bit */
	__spin_sf_mul128(ma, mb, &hi, &lo);
	sh = fb - 3;
	if (2 * fb + 1 >= 64 ? (hi >> ((2 * fb + 1 - 64) & 63)) & 1 : (lo >> ((2 * fb + 1) & 63)) & 1) {
		sh++;
		e++;
	}
	/* (hi:lo) >> sh, sticky; sh < 64 */
	m = (lo >> sh) | (hi << (64 - sh)) | ((lo << (64 - sh)) != 0);
	if (e < 1) {
		m = __spin_sf_shr_sticky(m, 1 - e);	/* subnormal result */
		e = 1;
	}
	return __spin_sf_round(sign, e, m, fb, eb);
}

/* IEEE a < b: false with a NaN operand, -0 == +0. */
static inline __attribute__((always_inline)) int __spin_sf_lt(__u64 a, __u64 b, int fb, int eb)
{
	const __u64 S = __SPIN_SF_SIGN(fb, eb), MAG = S - 1;

	if (__spin_sf_isnan(a, fb, eb) || __spin_sf_isnan(b, fb, eb))
		return 0;
	if (!((a | b) & MAG))
		return 0;			/* two zeros */
	if ((a ^ b) & S)
		return (a & S) != 0;		/* different signs */
	if (a & S)
		return (a & MAG) > (b & MAG);	/* both negative */
	return (a & MAG) < (b & MAG);
}

/*
 * In BPF, add and mul are global functions (BPF subprograms): the verifier
 * checks each once, for any arguments, instead of every path through them
 * at every call site; a loop that calls them verifies as fast as one with
 * an integer add.  A program that does not call one does not contain it.
 * Everywhere else they are inline.
 */
#ifdef __bpf__
#define __SPIN_SF_CALL	__attribute__((noinline))
#else
#define __SPIN_SF_CALL	static inline __attribute__((always_inline))
#endif

#define __SPIN_SF_API(name, T, fb, eb)							\
__SPIN_SF_CALL T spin_##name##_add(T a, T b)						\
{ return (T)__spin_sf_add(a, b, fb, eb); }						\
__SPIN_SF_CALL T spin_##name##_mul(T a, T b)						\
{ return (T)__spin_sf_mul(a, b, fb, eb); }						\
static inline __attribute__((always_inline)) int spin_##name##_lt(T a, T b)		\
{ return __spin_sf_lt(a, b, fb, eb); }							\
static inline __attribute__((always_inline)) T spin_##name##_min(T a, T b)		\
{ return __spin_sf_lt(a, b, fb, eb) ? a : b; }						\
static inline __attribute__((always_inline)) T spin_##name##_max(T a, T b)		\
{ return __spin_sf_lt(b, a, fb, eb) ? a : b; }

__SPIN_SF_API(f64, __u64, 52, 11)
__SPIN_SF_API(f32, __u32, 23, 8)

#endif /* SPIN_SOFTFLOAT_H */
