/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-packet authenticator (wire.h, "Authenticator"): SipHash-2-4
 * (Aumasson and Bernstein, 2012) with the job's 128-bit key over the first
 * SPIN_AUTH_LEN bytes of the sPIN header, as they are on the wire.  The
 * same code runs in the XDP runtime, in handler programs (their puts), at
 * TC (fan-out copies) and in libspin, so the one definition here is the
 * one the two ends agree on.
 *
 * The message is read as little-endian 64-bit words (SipHash's byte
 * order); its length is a multiple of 8, so the last block is the length
 * byte alone.  The tag is the 64-bit result, stored little-endian in
 * auth_tag.  Written from the paper's description, straight-line (the
 * verifier sees no loop), no table, no data-dependent branch.
 */
#ifndef SPIN_AUTH_H
#define SPIN_AUTH_H

#include <spin/wire.h>

#ifndef SPIN_SIP_C
#define SPIN_SIP_C	2	/* compression rounds per 8-byte block */
#endif
#ifndef SPIN_SIP_D
#define SPIN_SIP_D	4	/* finalization rounds */
#endif

#ifdef __bpf__
#define SPIN_AUTH_INLINE	static __always_inline
/* packet memory, bounds checked by the caller; BPF is little-endian here */
#define SPIN_AUTH_WORD(p, i)	(((const __u64 *)(p))[i])
#define SPIN_AUTH_LE(x)		(x)
#else
#include <string.h>
#include <endian.h>
#define SPIN_AUTH_INLINE	static inline __attribute__((always_inline))
static inline __u64 spin_auth_word_(const void *p, int i)
{
	__u64 w;

	memcpy(&w, (const char *)p + 8 * i, 8);
	return le64toh(w);
}
#define SPIN_AUTH_WORD(p, i)	spin_auth_word_(p, i)
#define SPIN_AUTH_LE(x)		htole64(x)
#endif

#define SPIN_SIP_ROTL(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))
#define SPIN_SIP_ROUND(v0, v1, v2, v3) do {					\
	v0 += v1; v1 = SPIN_SIP_ROTL(v1, 13); v1 ^= v0; v0 = SPIN_SIP_ROTL(v0, 32); \
	v2 += v3; v3 = SPIN_SIP_ROTL(v3, 16); v3 ^= v2;				\
	v0 += v3; v3 = SPIN_SIP_ROTL(v3, 21); v3 ^= v0;				\
	v2 += v1; v1 = SPIN_SIP_ROTL(v1, 17); v1 ^= v2; v2 = SPIN_SIP_ROTL(v2, 32); \
} while (0)

/* One block m: c rounds. */
#define SPIN_SIP_BLOCK(m) do {							\
	__u64 m_ = (m);								\
	v3 ^= m_;								\
	for (int r_ = 0; r_ < SPIN_SIP_C; r_++)					\
		SPIN_SIP_ROUND(v0, v1, v2, v3);					\
	v0 ^= m_;								\
} while (0)

/* SipHash-c-d of the n (a constant) 64-bit words at p, key k0 || k1. */
SPIN_AUTH_INLINE __u64 spin_auth_hash_words(__u64 k0, __u64 k1, const void *p, const int n)
{
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL;
	__u64 v1 = k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL;
	__u64 v3 = k1 ^ 0x7465646279746573ULL;

#ifdef __bpf__
#pragma unroll
#endif
	for (int i = 0; i < n; i++)
		SPIN_SIP_BLOCK(SPIN_AUTH_WORD(p, i));
	SPIN_SIP_BLOCK((__u64)(n * 8) << 56);	/* length byte, no tail */
	v2 ^= 0xff;
	for (int r = 0; r < SPIN_SIP_D; r++)
		SPIN_SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The tag of a header (SPIN_AUTH_LEN bytes at hdr), as the 64-bit value
 * whose little-endian bytes go into auth_tag. */
SPIN_AUTH_INLINE __u64 spin_auth_hash(__u64 k0, __u64 k1, const void *hdr)
{
	return spin_auth_hash_words(k0, k1, hdr, SPIN_AUTH_LEN / 8);
}

#ifdef __bpf__
/*
 * The same function in BPF assembly, for the runtime and handlers: v0..v3
 * in r0, r2, r3, r4, r5 the scratch register, the words read from the
 * header where they are (twice: no register to keep one).  In C the
 * rounds need more registers than BPF has, and the compiler spills the
 * caller's to its stack; the runtime's call chain has no stack to spare
 * (512 bytes).  Checked against the C version above by unit/auth_tag.
 */
#define SPIN_SIP_ROT(v, b, nb) "r5 = " v "; " v " <<= " #b "; r5 >>= " #nb "; " v " |= r5;\n"
#define SPIN_SIP_AROUND							\
	"r0 += r2;\n" SPIN_SIP_ROT("r2", 13, 51) "r2 ^= r0;\n" SPIN_SIP_ROT("r0", 32, 32) \
	"r3 += r4;\n" SPIN_SIP_ROT("r4", 16, 48) "r4 ^= r3;\n"		\
	"r0 += r4;\n" SPIN_SIP_ROT("r4", 21, 43) "r4 ^= r0;\n"		\
	"r3 += r2;\n" SPIN_SIP_ROT("r2", 17, 47) "r2 ^= r3;\n" SPIN_SIP_ROT("r3", 32, 32)
#if SPIN_SIP_C == 1
#define SPIN_SIP_CROUNDS	SPIN_SIP_AROUND
#elif SPIN_SIP_C == 2
#define SPIN_SIP_CROUNDS	SPIN_SIP_AROUND SPIN_SIP_AROUND
#else
#error "SPIN_SIP_C: 1 or 2"
#endif
#if SPIN_SIP_D == 3
#define SPIN_SIP_DROUNDS	SPIN_SIP_AROUND SPIN_SIP_AROUND SPIN_SIP_AROUND
#elif SPIN_SIP_D == 4
#define SPIN_SIP_DROUNDS	SPIN_SIP_AROUND SPIN_SIP_AROUND SPIN_SIP_AROUND SPIN_SIP_AROUND
#else
#error "SPIN_SIP_D: 3 or 4"
#endif
#define SPIN_SIP_AWORD(off)						\
	"r5 = *(u64 *)(%[h] + " #off ");\n r4 ^= r5;\n" SPIN_SIP_CROUNDS	\
	"r5 = *(u64 *)(%[h] + " #off ");\n r0 ^= r5;\n"
_Static_assert(SPIN_AUTH_LEN == 88, "the assembly reads 11 words: update it with the header");
_Static_assert(__builtin_offsetof(struct spin_auth, k0) == 8 &&
	       __builtin_offsetof(struct spin_auth, k1) == 16, "key words at 8 and 16");

SPIN_AUTH_INLINE __u64 spin_auth_tag(const struct spin_auth *a, const struct spin_hdr *h)
{
	__u64 out;

	asm volatile(
		"r0 = *(u64 *)(%[k] + 8);\n r3 = r0;\n"
		"r2 = *(u64 *)(%[k] + 16);\n r4 = r2;\n"
		"r5 = 0x736f6d6570736575 ll;\n r0 ^= r5;\n"
		"r5 = 0x646f72616e646f6d ll;\n r2 ^= r5;\n"
		"r5 = 0x6c7967656e657261 ll;\n r3 ^= r5;\n"
		"r5 = 0x7465646279746573 ll;\n r4 ^= r5;\n"
		SPIN_SIP_AWORD(0) SPIN_SIP_AWORD(8) SPIN_SIP_AWORD(16) SPIN_SIP_AWORD(24)
		SPIN_SIP_AWORD(32) SPIN_SIP_AWORD(40) SPIN_SIP_AWORD(48) SPIN_SIP_AWORD(56)
		SPIN_SIP_AWORD(64) SPIN_SIP_AWORD(72) SPIN_SIP_AWORD(80)
		"r5 = 0x5800000000000000 ll;\n r4 ^= r5;\n" SPIN_SIP_CROUNDS	/* length 88 */
		"r5 = 0x5800000000000000 ll;\n r0 ^= r5;\n"
		"r3 ^= 0xff;\n" SPIN_SIP_DROUNDS
		"r0 ^= r2;\n r0 ^= r3;\n r0 ^= r4;\n"
		"%[out] = r0;\n"
		: [out] "=r"(out)
		: [k] "r"(a), [h] "r"(h)
		: "r0", "r1", "r2", "r3", "r4", "r5", "memory");
	return out;
}
#else
/* The auth_tag field's value (wire byte order) for header h. */
SPIN_AUTH_INLINE __u64 spin_auth_tag(const struct spin_auth *a, const struct spin_hdr *h)
{
	return SPIN_AUTH_LE(spin_auth_hash(a->k0, a->k1, h));
}
#endif

/* Set h->auth_tag: the tag with key a, or 0 without one. */
SPIN_AUTH_INLINE void spin_auth_sign(const struct spin_auth *a, struct spin_hdr *h)
{
	h->auth_tag = a && a->on ? spin_auth_tag(a, h) : 0;
}

/* 1 if h carries the right tag for key a (or a has no key), else 0. */
SPIN_AUTH_INLINE int spin_auth_ok(const struct spin_auth *a, const struct spin_hdr *h)
{
	return !a || !a->on || h->auth_tag == spin_auth_tag(a, h);
}

#endif /* SPIN_AUTH_H */
