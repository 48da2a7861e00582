// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spin/softfloat.h against the host's FPU, bit for bit: double and float
 * add, multiply, min and max on every pair of special values (zeros of both
 * signs, infinities, quiet and signalling NaNs with payloads, the smallest
 * and largest subnormals and normals, ties) and on random operands of
 * every class (random bits, subnormals, close exponents for cancellation,
 * products near overflow and underflow).  The same functions are checked
 * compiled for the host (plain C) and in BPF through BPF_PROG_RUN
 * (selftests/progs/softfloat.bpf.c), on the same vectors.
 *
 * The reference is the host's SSE unit: addsd/mulsd (addss/mulss) with a as
 * the first operand, in the default rounding mode, no flush-to-zero; min
 * and max are the C expressions a < b ? a : b and a > b ? a : b.
 *
 *   selftests/test_softfloat [-t GLOB] [-n RANDOM_VECTORS] [-s SEED]
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spin/softfloat.h>
#include "test.h"
#include "progs/softfloat.h"

static const char *op_name[SF_OPS] = {
	"f64 add", "f64 mul", "f64 min", "f64 max", "f32 add", "f32 mul", "f32 min", "f32 max",
};

static char objdir[400];
static uint64_t seed = 0x5eed5eed1234ull;
static long n_random = 200000;
static struct sf_vec *vecs;
static long n_vecs;

/* ------------------------------------------------------- reference -- */

#ifdef __x86_64__
static uint64_t hw_f64(int op, uint64_t a, uint64_t b)
{
	double x, y;
	uint64_t r;

	memcpy(&x, &a, 8);
	memcpy(&y, &b, 8);
	switch (op) {
	case SF_D_ADD: __asm__ volatile("addsd %1, %0" : "+x"(x) : "x"(y)); break;
	case SF_D_MUL: __asm__ volatile("mulsd %1, %0" : "+x"(x) : "x"(y)); break;
	case SF_D_MIN: { volatile double p = x, q = y; x = p < q ? p : q; } break;
	default: { volatile double p = x, q = y; x = p > q ? p : q; } break;
	}
	memcpy(&r, &x, 8);
	return r;
}

static uint32_t hw_f32(int op, uint32_t a, uint32_t b)
{
	float x, y;
	uint32_t r;

	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	switch (op) {
	case SF_F_ADD: __asm__ volatile("addss %1, %0" : "+x"(x) : "x"(y)); break;
	case SF_F_MUL: __asm__ volatile("mulss %1, %0" : "+x"(x) : "x"(y)); break;
	case SF_F_MIN: { volatile float p = x, q = y; x = p < q ? p : q; } break;
	default: { volatile float p = x, q = y; x = p > q ? p : q; } break;
	}
	memcpy(&r, &x, 4);
	return r;
}

static uint64_t hw(int op, uint64_t a, uint64_t b)
{
	return op < SF_F_ADD ? hw_f64(op, a, b) : hw_f32(op, (uint32_t)a, (uint32_t)b);
}
#endif

/* The header's functions, compiled for this host. */
static uint64_t soft(int op, uint64_t a, uint64_t b)
{
	uint32_t fa = (uint32_t)a, fb = (uint32_t)b;

	switch (op) {
	case SF_D_ADD: return spin_f64_add(a, b);
	case SF_D_MUL: return spin_f64_mul(a, b);
	case SF_D_MIN: return spin_f64_min(a, b);
	case SF_D_MAX: return spin_f64_max(a, b);
	case SF_F_ADD: return spin_f32_add(fa, fb);
	case SF_F_MUL: return spin_f32_mul(fa, fb);
	case SF_F_MIN: return spin_f32_min(fa, fb);
	default: return spin_f32_max(fa, fb);
	}
}

/* --------------------------------------------------------- vectors -- */

static uint64_t rnd(void)
{
	/* xorshift64* */
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return seed * 0x2545f4914f6cdd1dull;
}

static const uint64_t d_special[] = {
	0, 1ull << 63,						/* +0, -0 */
	0x7ff0000000000000ull, 0xfff0000000000000ull,		/* +inf, -inf */
	0x7ff8000000000000ull, 0xfff8000000000000ull,		/* quiet NaNs */
	0x7ff8000000000123ull, 0xfff4000000000abcull,		/* payloads; signalling */
	0x7ff0000000000001ull, 0x7ff7ffffffffffffull,		/* signalling */
	1, 0x8000000000000001ull,				/* smallest subnormals */
	0x000fffffffffffffull, 0x800fffffffffffffull,		/* largest subnormals */
	0x0010000000000000ull, 0x8010000000000000ull,		/* smallest normals */
	0x7fefffffffffffffull, 0xffefffffffffffffull,		/* largest finite */
	0x3ff0000000000000ull, 0xbff0000000000000ull,		/* 1, -1 */
	0x3fe0000000000000ull, 0x4000000000000000ull,		/* 0.5, 2 */
	0x3ff0000000000001ull, 0xbff0000000000001ull,		/* 1 + ulp */
	0x3ca0000000000000ull, 0xbca0000000000000ull,		/* 2^-53: ties with 1 */
	0x3cb0000000000000ull, 0x3c90000000000000ull,		/* 2^-52, 2^-54 */
	0x3fffffffffffffffull, 0x7fe0000000000000ull,		/* 2 - ulp, 2^1023 */
	0x1ff0000000000000ull, 0x2000000000000000ull,		/* near sqrt(min) */
	0x3fb999999999999aull, 0x3fd3333333333333ull,		/* 0.1, 0.3 */
};

static const uint32_t f_special[] = {
	0, 0x80000000u, 0x7f800000u, 0xff800000u,
	0x7fc00000u, 0xffc00000u, 0x7fc00123u, 0xffa00abcu, 0x7f800001u, 0x7fbfffffu,
	1, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u, 0x80800000u,
	0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u, 0x3f000000u, 0x40000000u,
	0x3f800001u, 0xbf800001u, 0x33800000u, 0xb3800000u, 0x34000000u, 0x33000000u,
	0x3fffffffu, 0x7f000000u, 0x1f800000u, 0x20000000u, 0x3dcccccdu, 0x3e99999au,
};

#define N_DS (sizeof(d_special) / sizeof(d_special[0]))
#define N_FS (sizeof(f_special) / sizeof(f_special[0]))

/* A random double of some class. */
static uint64_t rnd_f64(void)
{
	uint64_t r = rnd(), s = r & (1ull << 63), m = rnd() & 0x000fffffffffffffull;

	switch (rnd() % 8) {
	case 0: return r;						/* any bits */
	case 1: return d_special[rnd() % N_DS];
	case 2: return s | m;						/* subnormal */
	case 3: return s | ((uint64_t)(1 + rnd() % 60) << 52) | m;	/* tiny normal */
	case 4: return s | ((uint64_t)(2046 - rnd() % 60) << 52) | m;	/* huge */
	case 5: return s | ((uint64_t)(1023 - 30 + rnd() % 60) << 52) | m;	/* near 1 */
	case 6: return s | ((uint64_t)(512 + rnd() % 40) << 52) | m;	/* products near underflow */
	default: return s | ((uint64_t)(1534 - rnd() % 40) << 52) | m;	/* ... near overflow */
	}
}

static uint32_t rnd_f32(void)
{
	uint32_t r = rnd(), s = r & 0x80000000u, m = rnd() & 0x7fffffu;

	switch (rnd() % 8) {
	case 0: return r;
	case 1: return f_special[rnd() % N_FS];
	case 2: return s | m;
	case 3: return s | ((uint32_t)(1 + rnd() % 20) << 23) | m;
	case 4: return s | ((uint32_t)(254 - rnd() % 20) << 23) | m;
	case 5: return s | ((uint32_t)(127 - 12 + rnd() % 24) << 23) | m;
	case 6: return s | ((uint32_t)(63 + rnd() % 10) << 23) | m;
	default: return s | ((uint32_t)(190 - rnd() % 10) << 23) | m;
	}
}

/* b from a: close to it (cancellation), its negation, or unrelated. */
static uint64_t partner(uint64_t a, int bits)
{
	uint64_t sign = bits == 64 ? 1ull << 63 : 1ull << 31;

	switch (rnd() % 4) {
	case 0: return a ^ sign ^ (rnd() & 0xff);			/* -a, nearly */
	case 1: return a + (rnd() % 5) - 2;				/* a, nearly */
	default: return bits == 64 ? rnd_f64() : rnd_f32();
	}
}

static void make_vectors(void)
{
	long n = 0, cap = 2 * N_DS * N_DS + n_random;

	vecs = calloc(cap, sizeof(*vecs));
	if (!vecs)
		exit(1);
	/* every pair of specials: the doubles' high halves with the floats
	 * in the low halves (special_pairs_f64 has the whole doubles) */
	for (size_t i = 0; i < N_DS; i++)
		for (size_t j = 0; j < N_DS; j++) {
			vecs[n].a = (d_special[i] & ~0xffffffffull) | f_special[i % N_FS];
			vecs[n].b = (d_special[j] & ~0xffffffffull) | f_special[j % N_FS];
			n++;
			vecs[n].a = d_special[i];	/* whole doubles */
			vecs[n].b = d_special[j];
			n++;
		}
	for (long k = 0; k < n_random; k++) {
		uint64_t a = rnd_f64(), b = partner(a, 64);
		uint32_t fa = rnd_f32(), fb = partner(fa, 32);

		if (k & 1) {	/* doubles exact, floats from their bits */
			vecs[n].a = a;
			vecs[n].b = b;
		} else {
			vecs[n].a = (a & ~0xffffffffull) | fa;
			vecs[n].b = (b & ~0xffffffffull) | fb;
		}
		n++;
	}
	n_vecs = n;
}

/* Every pair of specials as whole doubles (make_vectors mixed float bits
 * into their low halves). */
static void special_pairs_f64(void)
{
	long bad = 0;

	for (size_t i = 0; i < N_DS; i++)
		for (size_t j = 0; j < N_DS; j++)
			for (int op = SF_D_ADD; op <= SF_D_MAX; op++) {
#ifdef __x86_64__
				uint64_t w = hw(op, d_special[i], d_special[j]),
					 g = soft(op, d_special[i], d_special[j]);

				if (w != g && bad++ < 10)
					T_MSG("%s(%#llx, %#llx): want %#llx, got %#llx", op_name[op],
					      (unsigned long long)d_special[i],
					      (unsigned long long)d_special[j],
					      (unsigned long long)w, (unsigned long long)g);
#endif
			}
	ASSERT_EQ(bad, 0, "every special pair of doubles, host build");
}

/* ----------------------------------------------------------- tests -- */

static long compare(const struct sf_vec *v, long n, const char *who)
{
	long bad = 0;

	for (long i = 0; i < n; i++)
		for (int op = 0; op < SF_OPS; op++) {
			uint64_t w = hw(op, v[i].a, v[i].b);

			if (v[i].r[op] != w && bad++ < 10)
				T_MSG("%s %s(%#llx, %#llx): want %#llx, got %#llx", who, op_name[op],
				      (unsigned long long)(op < SF_F_ADD ? v[i].a : (uint32_t)v[i].a),
				      (unsigned long long)(op < SF_F_ADD ? v[i].b : (uint32_t)v[i].b),
				      (unsigned long long)w, (unsigned long long)v[i].r[op]);
		}
	return bad;
}

static void host_build(void)
{
#ifndef __x86_64__
	T_SKIP("the reference is x86-64 SSE");
#else
	for (long i = 0; i < n_vecs; i++)
		for (int op = 0; op < SF_OPS; op++)
			vecs[i].r[op] = soft(op, vecs[i].a, vecs[i].b);
	ASSERT_EQ(compare(vecs, n_vecs, "host"), 0, "host build equals the FPU");
	special_pairs_f64();
	T_MSG("%ld vectors x %d operations", n_vecs, SF_OPS);
#endif
}

static void bpf_build(void)
{
#ifndef __x86_64__
	T_SKIP("the reference is x86-64 SSE");
#else
	struct bpf_object *obj = NULL;
	struct bpf_program *prog;
	struct bpf_map *map;
	struct sf_vec *win = MAP_FAILED;
	size_t win_len = 0;
	uint8_t pkt[64] = { 0 };
	char path[1024];
	long bad = 0;
	int err;

	snprintf(path, sizeof(path), "%s/selftests/progs/softfloat.bpf.o", objdir);
	obj = bpf_object__open_file(path, NULL);
	if (!ASSERT_TRUE(obj != NULL, "open softfloat.bpf.o"))
		return;
	err = bpf_object__load(obj);
	if (!ASSERT_OK(err, "the verifier accepts the soft-float functions"))
		goto out;
	prog = bpf_object__find_program_by_name(obj, "sf_run");
	map = bpf_object__find_map_by_name(obj, "sf_vecs");
	if (!ASSERT_TRUE(prog && map, "program and map"))
		goto out;
	win_len = (SF_BATCH * sizeof(struct sf_vec) + 4095) & ~4095ul;
	win = mmap(NULL, win_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
	if (!ASSERT_TRUE(win != MAP_FAILED, "mmap sf_vecs"))
		goto out;
	for (long i = 0; i < n_vecs; i += SF_BATCH) {
		long n = n_vecs - i < SF_BATCH ? n_vecs - i : SF_BATCH;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
			    .repeat = 1);

		memset(win, 0, SF_BATCH * sizeof(*win));
		for (long k = 0; k < n; k++) {
			win[k].a = vecs[i + k].a;
			win[k].b = vecs[i + k].b;
		}
		err = bpf_prog_test_run_opts(bpf_program__fd(prog), &o);
		if (!ASSERT_OK(err, "BPF_PROG_RUN") || !ASSERT_EQ(o.retval, XDP_PASS, "ran to the end"))
			goto out;
		bad += compare(win, n, "bpf");
	}
	ASSERT_EQ(bad, 0, "BPF equals the FPU");
	T_MSG("%ld vectors x %d operations through BPF_PROG_RUN", n_vecs, SF_OPS);
out:
	if (win != MAP_FAILED)
		munmap(win, win_len);
	bpf_object__close(obj);
#endif
}

/* Known results, independent of the host: the rules IEEE-754 fixes and
 * the x86 choices softfloat.h documents. */
static void directed(void)
{
	const uint64_t one = 0x3ff0000000000000ull, m0 = 1ull << 63, inf = 0x7ff0000000000000ull;
	const uint64_t dnan = 0xfff8000000000000ull, maxd = 0x7fefffffffffffffull;

	ASSERT_EQ(spin_f64_add(one, 0x3ca0000000000000ull), one, "1 + 2^-53: tie to even, down");
	ASSERT_EQ(spin_f64_add(0x3ff0000000000001ull, 0x3ca0000000000000ull), 0x3ff0000000000002ull,
		  "(1 + ulp) + 2^-53: tie to even, up");
	ASSERT_EQ(spin_f64_add(m0, m0), m0, "-0 + -0 = -0");
	ASSERT_EQ(spin_f64_add(m0, 0), 0, "-0 + +0 = +0");
	ASSERT_EQ(spin_f64_add(one, one | m0), 0, "1 + -1 = +0");
	ASSERT_EQ(spin_f64_add(inf, inf | m0), dnan, "inf - inf: the default NaN");
	ASSERT_EQ(spin_f64_mul(0, inf | m0), dnan, "0 * -inf: the default NaN");
	ASSERT_EQ(spin_f64_mul(maxd, 0x4000000000000000ull), inf, "max * 2 overflows to inf");
	ASSERT_EQ(spin_f64_mul(1, 0x3fe0000000000000ull), 0, "min subnormal / 2: tie to even, 0");
	ASSERT_EQ(spin_f64_mul(3, 0x3fe0000000000000ull), 2, "3 * min subnormal / 2: tie to even, 2");
	ASSERT_EQ(spin_f64_add(0x000fffffffffffffull, 1), 0x0010000000000000ull,
		  "largest subnormal + smallest: the smallest normal");
	ASSERT_EQ(spin_f64_add(0x7ff4000000000001ull, one), 0x7ffc000000000001ull,
		  "signalling NaN operand: made quiet, payload kept");
	ASSERT_EQ(spin_f64_add(0x7ff8000000000002ull, 0xfff8000000000003ull), 0x7ff8000000000002ull,
		  "two NaNs: the first");
	ASSERT_EQ(spin_f64_min(m0, 0), 0, "min(-0, +0) = b");
	ASSERT_EQ(spin_f64_min(0x7ff8000000000000ull, one), one, "min(NaN, 1) = b");
	ASSERT_EQ(spin_f64_max(one, 0x7ff8000000000000ull), 0x7ff8000000000000ull, "max(1, NaN) = b");
	ASSERT_EQ(spin_f32_add(0x3f800000u, 0x33800000u), 0x3f800000u, "float 1 + 2^-24: tie to even");
	ASSERT_EQ(spin_f32_mul(0x7f7fffffu, 0x40000000u), 0x7f800000u, "float max * 2 = inf");
	ASSERT_EQ(spin_f32_add(0x7f800000u, 0xff800000u), 0xffc00000u, "float inf - inf: default NaN");
	ASSERT_EQ(spin_f32_mul(1, 0x3f400000u), 1, "float min subnormal * 0.75 rounds to it");
}

int main(int argc, char **argv)
{
	char exe[300], *p;
	ssize_t n;

	t_suite = "softfloat";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			t_filter = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n_random = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return 1;
	exe[n] = 0;
	p = strrchr(exe, '/');
	*p = 0;
	snprintf(objdir, sizeof(objdir), "%s/..", exe);
	fprintf(stderr, "    seed %#llx, %ld random vectors\n", (unsigned long long)seed, n_random);
	make_vectors();
	RUN_TEST(host_build);
	RUN_TEST(bpf_build);
	RUN_TEST(directed);
	return t_summary();
}
