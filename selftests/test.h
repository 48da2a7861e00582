/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small test_progs-style harness: one PASS/FAIL/SKIP line per test and a
 * closing "N passed, N failed, N skipped" line.
 */
#ifndef SPIN_SELFTEST_H
#define SPIN_SELFTEST_H

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <fnmatch.h>

static int t_failed_now, t_skipped_now;
static int t_pass, t_fail, t_skip;
static const char *t_suite = "unit";
static const char *t_filter;

#define T_MSG(fmt, ...) fprintf(stderr, "    %s:%d: " fmt "\n", __FILE__, __LINE__, ##__VA_ARGS__)

#define ASSERT_TRUE(cond, what) ({					\
	int ___ok = !!(cond);						\
	if (!___ok) { T_MSG("%s: not true: %s", what, #cond); t_failed_now = 1; } \
	___ok; })

#define ASSERT_EQ(actual, expected, what) ({				\
	long long ___a = (long long)(actual), ___e = (long long)(expected); \
	if (___a != ___e) {						\
		T_MSG("%s: expected %lld (0x%llx), got %lld (0x%llx)", what, \
		      ___e, (unsigned long long)___e, ___a, (unsigned long long)___a); \
		t_failed_now = 1;					\
	}								\
	___a == ___e; })

#define ASSERT_OK(rc, what) ({						\
	long long ___r = (long long)(rc);				\
	if (___r < 0) { T_MSG("%s: failed with %lld", what, ___r); t_failed_now = 1; } \
	___r >= 0; })

#define ASSERT_MEM(a, b, n, what) ({					\
	int ___ok = memcmp((a), (b), (n)) == 0;				\
	if (!___ok) { T_MSG("%s: %zu bytes differ", what, (size_t)(n)); t_failed_now = 1; } \
	___ok; })

#define T_SKIP(why) do { T_MSG("skip: %s", why); t_skipped_now = 1; return; } while (0)

/* A suite's options: -t GLOB (run only the tests it matches); suite names
 * its PASS/FAIL/SKIP lines.  Anything else: usage, exit 2. */
static inline void t_args(int argc, char **argv, const char *suite)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			t_filter = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [-t GLOB]\n", argv[0]);
			exit(2);
		}
	}
	t_suite = suite;
}

static inline void t_run(const char *name, void (*fn)(void))
{
	if (t_filter && fnmatch(t_filter, name, 0))
		return;
	t_failed_now = t_skipped_now = 0;
	fn();
	if (t_failed_now) {
		printf("FAIL %s/%s\n", t_suite, name);
		t_fail++;
	} else if (t_skipped_now) {
		printf("SKIP %s/%s\n", t_suite, name);
		t_skip++;
	} else {
		printf("PASS %s/%s\n", t_suite, name);
		t_pass++;
	}
	fflush(stdout);
}
#define RUN_TEST(fn) t_run(#fn, fn)

static inline int t_summary(void)
{
	printf("%d passed, %d failed, %d skipped\n", t_pass, t_fail, t_skip);
	return t_fail ? 1 : 0;
}

#endif
