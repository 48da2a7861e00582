// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of the Portals library's entry table and match index
 * (lib/ptl_me.c) against a reference model in plain C: entries with
 * random match bits (many sharing a key), overlapping ignore bits,
 * wildcard and specific ranks and pids, both lists and several portals,
 * appended, matched (use-once ones consumed) and unlinked in random order,
 * slots reused; every match is the model's.  At 100,000 entries (and at
 * 3,000, every entry matched).  The same order through the whole stack
 * (PtlMEAppend, puts, the runtime's matching): selftests/test_ptl.sh -t
 * 'matchorder*'.
 *
 *   selftests/test_ptl_match [-t GLOB]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "../lib/ptl_internal.h"

/* the model: entries in append order */
struct ment {
	uint32_t pt;
	ptl_list_t list;
	uint64_t bits, ign;
	uint32_t rank, pid;	/* SPIN_RANK_ANY / SPIN_PID_ANY: any */
	unsigned int ops;	/* PTL_ME_OP_PUT | PTL_ME_OP_GET */
	bool once, alive;
	struct ptl_mer *m;	/* in the table */
};

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static const uint64_t masks[] = { 0xf, 0xf0, 0xff, 0xf00f, 0x3c, 0xffff0000ull, 0x1 };

/* what the message needs: ok() of ptl_mx_find */
static bool ops_ok(struct ptl_ni *ni, struct ptl_mer *m, void *arg)
{
	unsigned int need = *(unsigned int *)arg;

	return (m->me.options & need) == need;
}

static bool model_takes(const struct ment *e, bool phys, uint32_t pt, uint64_t bits, uint32_t rank,
			uint32_t pid, unsigned int need)
{
	return e->alive && e->pt == pt && !((e->bits ^ bits) & ~e->ign) &&
	       (e->rank == SPIN_RANK_ANY || e->rank == rank) &&
	       (!phys || e->pid == SPIN_PID_ANY || e->pid == pid) && (e->ops & need) == need;
}

static struct ment *model_find(struct ment *v, size_t n, bool phys, uint32_t pt, uint64_t bits,
			       uint32_t rank, uint32_t pid, unsigned int need)
{
	for (int l = 0; l < 2; l++) {
		ptl_list_t list = l ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST;

		for (size_t i = 0; i < n; i++)
			if (v[i].list == list && model_takes(&v[i], phys, pt, bits, rank, pid, need))
				return &v[i];
	}
	return NULL;
}

static void add(struct ptl_ni *ni, struct ment *e, bool phys, uint64_t nkeys)
{
	struct ptl_mer *m = ptl_me_alloc(ni);

	if (!m) {
		T_MSG("table full");
		exit(1);
	}
	e->pt = (uint32_t)(rnd() % 3);
	e->list = rnd() % 5 ? PTL_PRIORITY_LIST : PTL_OVERFLOW_LIST;
	e->bits = rnd() % nkeys;
	e->ign = rnd() % 50 ? 0 : masks[rnd() % (sizeof(masks) / sizeof(masks[0]))];
	e->rank = rnd() % 2 ? SPIN_RANK_ANY : (uint32_t)(rnd() % 4);
	e->pid = phys && rnd() % 3 == 0 ? (uint32_t)(rnd() % 3) : SPIN_PID_ANY;
	e->ops = rnd() % 4 == 0 ? PTL_ME_OP_GET : rnd() % 3 == 0 ? PTL_ME_OP_PUT | PTL_ME_OP_GET :
								     PTL_ME_OP_PUT;
	e->once = rnd() % 3 == 0;
	e->alive = true;
	e->m = m;
	memset((char *)m + offsetof(struct ptl_mer, window), 0,
	       sizeof(*m) - offsetof(struct ptl_mer, window));
	m->used = true;
	m->pt = e->pt;
	m->list = e->list;
	m->rt = 0;
	m->seq = ++ni->seq;
	m->match_rank = e->rank;
	m->me.match_bits = e->bits;
	m->me.ignore_bits = e->ign;
	m->me.match_id.phys.pid = e->pid == SPIN_PID_ANY ? PTL_PID_ANY : e->pid;
	m->me.options = e->ops;
	m->me.ct_handle = PTL_CT_NONE;
	ASSERT_EQ(ptl_mx_link(ni, m), 0, "linked");
}

static void unlink_(struct ptl_ni *ni, struct ment *e)
{
	e->alive = false;
	ptl_me_release(ni, e->m);
}

/* one message, checked against the model; use-once entries consumed */
static int one_msg(struct ptl_ni *ni, struct ment *v, size_t n, bool phys)
{
	struct ment *pick = &v[rnd() % n], *want;
	uint64_t bits = rnd() % 8 == 0 ? rnd() : pick->bits ^ (rnd() & pick->ign);
	uint32_t pt = rnd() % 8 ? pick->pt : (uint32_t)(rnd() % 4), rank = (uint32_t)(rnd() % 4);
	uint32_t pid = (uint32_t)(rnd() % 3);
	unsigned int need = rnd() % 3 == 0 ? PTL_ME_OP_GET : PTL_ME_OP_PUT;
	struct ptl_mer *got = NULL;

	want = model_find(v, n, phys, pt, bits, rank, pid, need);
	for (int l = 0; l < 2 && !got; l++)
		got = ptl_mx_find(ni, pt, l ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST, bits, rank, pid,
				  ops_ok, &need);
	if ((want ? want->m : NULL) != got) {
		T_MSG("pt %u bits 0x%llx rank %u pid %u need %u: model entry %zd, index entry %d", pt,
		      (unsigned long long)bits, rank, pid, need, want ? want - v : -1,
		      got ? (int)got->idx : -1);
		return -1;
	}
	if (want && want->once)
		unlink_(ni, want);
	return want ? 1 : 0;
}

static void run(size_t n, size_t nmsg, bool phys)
{
	struct ptl_ni *ni = calloc(1, sizeof(*ni));
	/* twice the entries: some unlinked, more appended, slots reused */
	struct ment *v = calloc(2 * n, sizeof(*v));
	size_t nv = 0, matched = 0;

	ASSERT_TRUE(ni && v, "memory");
	ni->options = phys ? PTL_NI_PHYSICAL : PTL_NI_LOGICAL;
	for (; nv < n; nv++)
		add(ni, &v[nv], phys, n / 8);
	for (int round = 0; round < 4; round++) {
		for (size_t k = 0; k < nmsg / 4; k++) {
			int r = one_msg(ni, v, nv, phys);

			ASSERT_TRUE(r >= 0, "the index matches what the model matches");
			matched += (size_t)r;
		}
		/* unlink a random eighth, append as many (into freed slots) */
		for (size_t k = 0; k < n / 8; k++) {
			struct ment *e = &v[rnd() % nv];

			if (e->alive)
				unlink_(ni, e);
		}
		for (size_t k = 0; k < n / 8 && nv < 2 * n; k++, nv++)
			add(ni, &v[nv], phys, n / 8);
		ASSERT_TRUE(ni->me_n <= ((n + n / 2) / PTL_ME_CHUNK + 1) * PTL_ME_CHUNK,
			    "freed slots are reused");
	}
	ASSERT_TRUE(matched > nmsg / 4, "most messages matched something");
	/* every entry off, in random order: nothing matches any more */
	for (size_t k = nv; k > 1; k--) {
		size_t j = rnd() % k;
		struct ment t = v[j];

		v[j] = v[k - 1];
		v[k - 1] = t;
	}
	for (size_t i = 0; i < nv; i++)
		if (v[i].alive)
			unlink_(ni, &v[i]);
	for (uint32_t p = 0; p < SPIN_MAX_PT; p++)
		ASSERT_EQ(ni->mx_pt_n[p], 0, "portal empty");
	for (int k = 0; k < 100; k++) {
		unsigned int need = PTL_ME_OP_PUT;

		ASSERT_TRUE(!ptl_mx_find(ni, (uint32_t)(rnd() % 3), PTL_PRIORITY_LIST, rnd() % (n / 8),
					 (uint32_t)(rnd() % 4), 0, ops_ok, &need),
			    "empty index");
	}
	ptl_me_table_fini(ni);
	free(v);
	free(ni);
}

/* every entry taken by some message: 3,000 entries, 12,000 messages */
static void test_order_small(void) { run(3000, 12000, false); }
static void test_order_small_phys(void) { run(3000, 12000, true); }
/* 100,000 entries (then 150,000 appended in all), 4,000 messages */
static void test_order_100k(void) { run(100000, 4000, false); }
static void test_order_100k_phys(void) { run(100000, 4000, true); }

/* the table: handles by index, generations, full at PTL_N_ME */
static void test_table(void)
{
	struct ptl_ni *ni = calloc(1, sizeof(*ni));
	struct ptl_mer *m, *first;
	ptl_handle_me_t h;
	uint32_t n = 0;

	ASSERT_TRUE(ni != NULL, "memory");
	first = ptl_me_alloc(ni);
	first->used = true;
	h = ptl_me_handle(ni, first);
	ASSERT_TRUE(ptl_me_get(ni, h) == first, "handle");
	while ((m = ptl_me_alloc(ni))) {
		m->used = true;
		n++;
	}
	ASSERT_EQ(n + 1, PTL_N_ME, "PTL_N_ME entries");
	ASSERT_TRUE(ptl_me_get(ni, ptl_mkh(PTL_H_ME, PTL_N_ME - 1, 1)) != NULL, "the last one");
	ASSERT_TRUE(ptl_me_get(ni, ptl_mkh(PTL_H_ME, PTL_N_ME, 1)) == NULL, "past the end");
	ptl_me_release(ni, first);
	ASSERT_TRUE(ptl_me_get(ni, h) == NULL, "stale handle");
	m = ptl_me_alloc(ni);
	ASSERT_TRUE(m == first && m->gen != ptl_hgen(h), "the freed slot, a new generation");
	ptl_me_table_fini(ni);
	free(ni);
}

int main(int argc, char **argv)
{
	t_args(argc, argv, "ptl_match");
	RUN_TEST(test_table);
	RUN_TEST(test_order_small);
	RUN_TEST(test_order_small_phys);
	RUN_TEST(test_order_100k);
	RUN_TEST(test_order_100k_phys);
	return t_summary();
}
