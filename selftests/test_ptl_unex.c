// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of the Portals library's unexpected list (lib/ptl_unex.c)
 * against a reference model in plain C: headers with random match bits
 * (many sharing a key), sources and kinds on several portals, searched by
 * entries of every shape (exact, wildcard rank or pid, ignore bits, get
 * only), taken (as a priority append or PtlMESearch's DELETE takes them)
 * or walked (SEARCH_ONLY, every matching header in arrival order), portals
 * cleared, slots reused; every answer is the model's (the oldest matching
 * header, scanning the whole list in arrival order).  At 3,000 and
 * 100,000 headers, logical and physical.
 *
 *   selftests/test_ptl_unex [-t GLOB]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "../lib/ptl_internal.h"

/* the model: headers in arrival order */
struct mhdr {
	uint32_t pt, rank, pid;
	uint64_t bits;
	ptl_event_kind_t kind;
	bool alive;
	struct ptl_unex *u;	/* on the list */
};

static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static const uint64_t masks[] = { 0xf, 0xf0, 0xff, 0xf00f, 0x3c, 0xffff0000ull, 0x1, ~0ull };

/* what a search entry is: me plus its source as a rank */
struct srch {
	ptl_me_t me;
	uint32_t rank;	/* SPIN_RANK_ANY: any */
};

static bool model_takes(bool phys, const struct mhdr *h, uint32_t pt, const struct srch *s)
{
	const ptl_me_t *me = &s->me;

	if (!h->alive || h->pt != pt || ((h->bits ^ me->match_bits) & ~me->ignore_bits))
		return false;
	if (s->rank != SPIN_RANK_ANY && s->rank != h->rank)
		return false;
	if (phys && me->match_id.phys.pid != PTL_PID_ANY && me->match_id.phys.pid != h->pid)
		return false;
	if (h->kind == PTL_EVENT_GET)
		return me->options & PTL_ME_OP_GET;
	return (me->options & PTL_ME_OP_PUT) || !(me->options & (PTL_ME_OP_PUT | PTL_ME_OP_GET));
}

/* the oldest match after index `from` (-1: from the start) */
static long model_find(bool phys, struct mhdr *v, size_t n, uint32_t pt, const struct srch *s,
		       long from)
{
	for (size_t i = (size_t)(from + 1); i < n; i++)
		if (model_takes(phys, &v[i], pt, s))
			return (long)i;
	return -1;
}

static void add(struct ptl_ni *ni, struct mhdr *h, bool phys, uint64_t nkeys)
{
	struct ptl_unex u = { 0 };

	h->pt = (uint32_t)(rnd() % 3);
	h->bits = rnd() % nkeys;
	h->rank = (uint32_t)(rnd() % 8);
	h->pid = phys ? (uint32_t)(rnd() % 3) : 0;
	h->kind = rnd() % 10 == 0 ? PTL_EVENT_GET : rnd() % 4 == 0 ? PTL_EVENT_ATOMIC : PTL_EVENT_PUT;
	h->alive = true;
	u.pt = h->pt;
	u.seq = ++ni->seq;
	u.kind = h->kind;
	u.ev.type = h->kind;
	u.ev.match_bits = h->bits;
	u.ev.mlength = rnd() % 4096;
	u.rank = h->rank;
	u.pid = h->pid;
	h->u = ptl_unex_add(ni, &u);
	ASSERT_TRUE(h->u != NULL, "added");
	ASSERT_TRUE(h->u->seq == u.seq && h->u->ev.match_bits == h->bits, "a copy");
}

/* a search entry shaped like one an MPI or SHMEM library posts */
static void make_srch(struct srch *s, const struct mhdr *pick, bool phys, uint64_t nkeys)
{
	int shape = (int)(rnd() % 6);

	memset(s, 0, sizeof(*s));
	s->me.match_bits = rnd() % 8 == 0 ? rnd() % nkeys : pick->bits;
	s->me.ignore_bits = 0;
	s->rank = rnd() % 8 ? pick->rank : (uint32_t)(rnd() % 8);
	s->me.match_id.phys.pid = phys ? (rnd() % 4 ? pick->pid : (uint32_t)(rnd() % 3)) : 0;
	switch (shape) {
	case 0:	/* exact (a receive from a rank with a tag) */
	case 1:
		break;
	case 2:	/* any source */
		s->rank = SPIN_RANK_ANY;
		break;
	case 3:	/* any pid, a rank (physical) */
		s->me.match_id.phys.pid = PTL_PID_ANY;
		break;
	case 4:	/* ignore bits (any tag) */
		s->me.ignore_bits = masks[rnd() % (sizeof(masks) / sizeof(masks[0]))];
		s->me.match_bits ^= rnd() & s->me.ignore_bits;
		if (rnd() % 2)
			s->rank = SPIN_RANK_ANY;
		break;
	default: /* any source and pid */
		s->rank = SPIN_RANK_ANY;
		s->me.match_id.phys.pid = PTL_PID_ANY;
		break;
	}
	if (!phys)
		s->me.match_id.rank = s->rank == SPIN_RANK_ANY ? PTL_RANK_ANY : s->rank;
	s->me.options = rnd() % 10 == 0 ? PTL_ME_OP_GET : rnd() % 5 == 0 ? PTL_ME_OP_PUT | PTL_ME_OP_GET :
									   PTL_ME_OP_PUT;
}

static int check(struct ptl_ni *ni, struct mhdr *v, size_t n, bool phys, uint64_t nkeys,
		 size_t *taken)
{
	const struct mhdr *pick = &v[rnd() % n];
	uint32_t pt = rnd() % 8 ? pick->pt : (uint32_t)(rnd() % 4);
	struct srch s;
	long want = -1;
	struct ptl_unex *got;
	int op = (int)(rnd() % 3);

	make_srch(&s, pick, phys, nkeys);
	want = model_find(phys, v, n, pt, &s, -1);
	got = ptl_unex_find(ni, pt, &s.me, s.rank, NULL);
	if ((want >= 0 ? v[want].u : NULL) != got) {
		T_MSG("pt %u bits 0x%llx ign 0x%llx rank %u pid %u ops %u: model header %ld, index %u",
		      pt, (unsigned long long)s.me.match_bits, (unsigned long long)s.me.ignore_bits,
		      s.rank, s.me.match_id.phys.pid, s.me.options, want, got ? got->idx : ~0u);
		return -1;
	}
	if (want < 0)
		return 0;
	if (op == 0) {	/* taken, as an append or a DELETE search takes it */
		v[want].alive = false;
		ptl_unex_del(ni, got);
		(*taken)++;
	} else if (op == 1) {	/* walked, as SEARCH_ONLY walks: every match */
		while (got) {
			want = model_find(phys, v, n, pt, &s, want);
			got = ptl_unex_find(ni, pt, &s.me, s.rank, got);
			if ((want >= 0 ? v[want].u : NULL) != got) {
				T_MSG("walk: model header %ld, index %u", want, got ? got->idx : ~0u);
				return -1;
			}
		}
	}
	return 1;
}

static void run(size_t n, size_t nsearch, bool phys)
{
	struct ptl_ni *ni = calloc(1, sizeof(*ni));
	/* twice the headers: some taken, more added, slots reused */
	struct mhdr *v = calloc(2 * n, sizeof(*v));
	uint64_t nkeys = n / 16 + 1;
	size_t nv = 0, found = 0, taken = 0, alive;

	ASSERT_TRUE(ni && v, "memory");
	ni->options = phys ? PTL_NI_PHYSICAL : PTL_NI_LOGICAL;
	for (; nv < n; nv++)
		add(ni, &v[nv], phys, nkeys);
	ASSERT_EQ(ni->ux_count[PTL_VIEW_MATCH], n, "counted");
	for (int round = 0; round < 4; round++) {
		for (size_t k = 0; k < nsearch / 4; k++) {
			int r = check(ni, v, nv, phys, nkeys, &taken);

			ASSERT_TRUE(r >= 0, "the index finds what the model finds");
			found += (size_t)r;
		}
		/* take a random eighth, add as many (into freed slots) */
		for (size_t k = 0; k < n / 8; k++) {
			struct mhdr *h = &v[rnd() % nv];

			if (h->alive) {
				h->alive = false;
				ptl_unex_del(ni, h->u);
			}
		}
		for (size_t k = 0; k < n / 8 && nv < 2 * n; k++, nv++)
			add(ni, &v[nv], phys, nkeys);
		ASSERT_TRUE(ni->ux_n <= ((n + n / 4) / PTL_UNEX_CHUNK + 2) * PTL_UNEX_CHUNK,
			    "freed slots are reused");
	}
	ASSERT_TRUE(found > nsearch / 2 && taken > 0, "most searches found something");
	alive = 0;
	for (size_t i = 0; i < nv; i++)
		alive += v[i].alive;
	ASSERT_EQ(ni->ux_count[PTL_VIEW_MATCH], alive, "counted");
	/* a portal cleared: nothing of it is found, the others' are */
	ptl_unex_clear(ni, 1);
	for (size_t i = 0; i < nv; i++)
		if (v[i].pt == 1)
			v[i].alive = false;
	for (int k = 0; k < 200; k++) {
		int r = check(ni, v, nv, phys, nkeys, &taken);

		ASSERT_TRUE(r >= 0, "after a portal was cleared");
	}
	ptl_unex_clear(ni, 0);
	ptl_unex_clear(ni, 2);
	ASSERT_EQ(ni->ux_count[PTL_VIEW_MATCH], 0, "every header gone");
	for (int k = 0; k < 100; k++) {
		struct srch s;

		make_srch(&s, &v[rnd() % nv], phys, nkeys);
		ASSERT_TRUE(!ptl_unex_find(ni, (uint32_t)(rnd() % 3), &s.me, s.rank, NULL), "empty");
	}
	ptl_unex_fini(ni);
	free(v);
	free(ni);
}

static void test_model_small(void) { run(3000, 12000, false); }
static void test_model_small_phys(void) { run(3000, 12000, true); }
static void test_model_100k(void) { run(100000, 2000, false); }
static void test_model_100k_phys(void) { run(100000, 2000, true); }

/* PTL_N_UNEX headers, then no more; one taken, one more fits */
static void test_full(void)
{
	struct ptl_ni *ni = calloc(1, sizeof(*ni));
	struct ptl_unex u = { .pt = 0 }, *first = NULL, *x;
	uint32_t n = 0;

	ASSERT_TRUE(ni != NULL, "memory");
	ni->options = PTL_NI_LOGICAL;
	while ((x = ptl_unex_add(ni, &u))) {
		if (!first)
			first = x;
		n++;
		u.seq++;
	}
	ASSERT_EQ(n, PTL_N_UNEX, "PTL_N_UNEX headers");
	ptl_unex_del(ni, first);
	ASSERT_TRUE(ptl_unex_add(ni, &u) == first, "the freed slot");
	ASSERT_TRUE(!ptl_unex_add(ni, &u), "full again");
	ptl_unex_fini(ni);
	free(ni);
}

int main(int argc, char **argv)
{
	t_args(argc, argv, "ptl_unex");
	RUN_TEST(test_full);
	RUN_TEST(test_model_small);
	RUN_TEST(test_model_small_phys);
	RUN_TEST(test_model_100k);
	RUN_TEST(test_model_100k_phys);
	return t_summary();
}
