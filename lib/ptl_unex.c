// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unexpected list (docs/design.md, "The unexpected list"): the headers
 * of messages that landed on an overflow-list entry, searched by a
 * priority-list PtlMEAppend and by PtlMESearch, oldest first.
 *
 * A header is fully specified (its match bits, rank and pid); what may be
 * a wildcard is the entry that searches.  So every header is on three
 * chains, each in arrival order (seq grows, a header goes on at the tail):
 *
 *  - its exact key (portal, match bits, rank, pid; pid 0 on a logical NI),
 *    hashed: an entry without ignore bits and with a specific source
 *    (MPI's receive from a rank with a tag) looks there only;
 *  - its bits key (portal, match bits), hashed: an entry without ignore
 *    bits and a wildcard source (MPI_ANY_SOURCE) looks there, stepping
 *    over other sources' headers only when the pid is what decides;
 *  - its source key (portal, rank, pid), hashed: an entry with ignore bits
 *    and a source (MPI_ANY_TAG from a rank) walks that source's headers;
 *  - its portal's list: an entry with ignore bits and a wildcard source
 *    walks it.
 *
 * The chain an entry looks at holds every header it can match, in arrival
 * order, so its first header that matches is the oldest: no merging across
 * chains is needed.  A bucket may hold other keys too (collisions); those
 * are stepped over, and the buckets double as the headers grow (a bucket
 * holds about one key).  Headers live in chunks that never move (a pointer
 * stays valid while the lock is held); free slots are a list.
 */
#include <stdlib.h>
#include <string.h>

#include "ptl_internal.h"

static inline struct ptl_unex *ux_at(struct ptl_ni *ni, uint32_t i)
{
	return &ni->ux_chunk[i / PTL_UNEX_CHUNK][i % PTL_UNEX_CHUNK];
}

static uint32_t ux_mix(uint64_t h)
{
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 32;
	return (uint32_t)h;
}

/* pid as the key has it: none on a logical NI */
static uint32_t ux_pid(const struct ptl_ni *ni, uint32_t pid)
{
	return (ni->options & PTL_NI_LOGICAL) ? 0 : pid;
}

static uint32_t ux_hash_exact(uint32_t pt, uint64_t bits, uint32_t rank, uint32_t pid)
{
	return ux_mix(bits * 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank << 32 | pid) ^
		      (uint64_t)pt * 0xc2b2ae3d27d4eb4full);
}

static uint32_t ux_hash_bits(uint32_t pt, uint64_t bits)
{
	return ux_mix(bits * 0x9e3779b97f4a7c15ull ^ ((uint64_t)pt + 1) * 0xd6e8feb86659fd93ull);
}

static uint32_t ux_hash_src(uint32_t pt, uint32_t rank, uint32_t pid)
{
	return ux_mix(((uint64_t)rank << 32 | pid) * 0xc2b2ae3d27d4eb4full ^ ((uint64_t)pt + 7) * 0x9e3779b97f4a7c15ull);
}

/* the chains: 0 exact key, 1 bits key, 2 portal, 3 source key */
static struct ptl_ux_list *ux_list(struct ptl_ni *ni, int c, const struct ptl_unex *u)
{
	uint32_t mask = ni->ux_nb - 1;

	switch (c) {
	case 0: return &ni->ux_exact[ux_hash_exact(u->pt, u->ev.match_bits, u->rank, ux_pid(ni, u->pid)) & mask];
	case 1: return &ni->ux_bits[ux_hash_bits(u->pt, u->ev.match_bits) & mask];
	case 3: return &ni->ux_src[ux_hash_src(u->pt, u->rank, ux_pid(ni, u->pid)) & mask];
	default: return &ni->ux_pt[u->pt];
	}
}

bool ptl_unex_matches(struct ptl_ni *ni, const struct ptl_unex *u, const ptl_me_t *me,
		      uint32_t rank)
{
	if ((u->ev.match_bits ^ me->match_bits) & ~me->ignore_bits)
		return false;
	if (rank != SPIN_RANK_ANY && u->rank != rank)
		return false;
	if (!(ni->options & PTL_NI_LOGICAL) && me->match_id.phys.pid != PTL_PID_ANY &&
	    me->match_id.phys.pid != u->pid)
		return false;
	if (u->kind == PTL_EVENT_GET)
		return me->options & PTL_ME_OP_GET;
	return (me->options & PTL_ME_OP_PUT) || !(me->options & (PTL_ME_OP_PUT | PTL_ME_OP_GET));
}

/* at the tail of chain c */
static void ux_append(struct ptl_ni *ni, int c, struct ptl_unex *u)
{
	struct ptl_ux_list *l = ux_list(ni, c, u);

	u->next1[c] = 0;
	u->prev1[c] = l->tail1;
	if (l->tail1)
		ux_at(ni, l->tail1 - 1)->next1[c] = u->idx + 1;
	else
		l->head1 = u->idx + 1;
	l->tail1 = u->idx + 1;
}

/*
 * The hashed chains with nb buckets each (a power of two): made at the
 * first header, doubled whenever there are more headers than buckets (up
 * to PTL_UNEX_BUCKETS), so a bucket holds about one key whatever the
 * count, and an NI that keeps few headers keeps small tables.  A rehash
 * walks each portal's list, which is in arrival order, so each new chain
 * is in arrival order too.  O(headers), amortised O(1) per header.
 */
static int ux_rehash(struct ptl_ni *ni, uint32_t nb)
{
	struct ptl_ux_list *e = calloc(nb, sizeof(*e)), *b = calloc(nb, sizeof(*b)),
			   *r = calloc(nb, sizeof(*r));

	if (!e || !b || !r) {
		free(e);
		free(b);
		free(r);
		return -1;
	}
	free(ni->ux_exact);
	free(ni->ux_bits);
	free(ni->ux_src);
	ni->ux_exact = e;
	ni->ux_bits = b;
	ni->ux_src = r;
	ni->ux_nb = nb;
	for (uint32_t p = 0; p < SPIN_MAX_PT; p++)
		for (uint32_t i1 = ni->ux_pt[p].head1; i1; i1 = ux_at(ni, i1 - 1)->next1[2]) {
			ux_append(ni, 0, ux_at(ni, i1 - 1));
			ux_append(ni, 1, ux_at(ni, i1 - 1));
			ux_append(ni, 3, ux_at(ni, i1 - 1));
		}
	return 0;
}

struct ptl_unex *ptl_unex_add(struct ptl_ni *ni, const struct ptl_unex *src)
{
	struct ptl_unex *u;
	uint32_t i, held = ni->ux_count[0] + ni->ux_count[1];

	if (src->pt >= SPIN_MAX_PT)
		return NULL;
	if (!ni->ux_exact && ux_rehash(ni, PTL_UNEX_BUCKETS_MIN))
		return NULL;
	/* grown only when that works: else the chains stay longer */
	if (held >= ni->ux_nb && ni->ux_nb < PTL_UNEX_BUCKETS)
		(void)ux_rehash(ni, ni->ux_nb * 2);
	if (!ni->ux_free1) {
		uint32_t c = ni->ux_n / PTL_UNEX_CHUNK;

		if (ni->ux_n >= PTL_N_UNEX)
			return NULL;
		ni->ux_chunk[c] = calloc(PTL_UNEX_CHUNK, sizeof(struct ptl_unex));
		if (!ni->ux_chunk[c])
			return NULL;
		for (uint32_t k = PTL_UNEX_CHUNK; k-- > 0;) {
			u = &ni->ux_chunk[c][k];
			u->idx = ni->ux_n + k;
			u->free1 = ni->ux_free1;
			ni->ux_free1 = u->idx + 1;
		}
		ni->ux_n += PTL_UNEX_CHUNK;
	}
	i = ni->ux_free1 - 1;
	u = ux_at(ni, i);
	ni->ux_free1 = u->free1;
	*u = *src;
	u->idx = i;
	u->free1 = 0;
	u->used = true;
	for (int c = 0; c < PTL_UX_CHAINS; c++)
		ux_append(ni, c, u);
	ni->ux_count[ptl_pt_view(u->pt)]++;
	return u;
}

void ptl_unex_del(struct ptl_ni *ni, struct ptl_unex *u)
{
	if (!u->used)
		return;
	for (int c = 0; c < PTL_UX_CHAINS; c++) {
		struct ptl_ux_list *l = ux_list(ni, c, u);

		if (u->prev1[c])
			ux_at(ni, u->prev1[c] - 1)->next1[c] = u->next1[c];
		else
			l->head1 = u->next1[c];
		if (u->next1[c])
			ux_at(ni, u->next1[c] - 1)->prev1[c] = u->prev1[c];
		else
			l->tail1 = u->prev1[c];
		u->next1[c] = u->prev1[c] = 0;
	}
	u->used = false;
	ni->ux_count[ptl_pt_view(u->pt)]--;
	u->free1 = ni->ux_free1;
	ni->ux_free1 = u->idx + 1;
}

/* which chain entry me (rank: its source as a rank or SPIN_RANK_ANY)
 * searches */
static int ux_chain_of(struct ptl_ni *ni, const ptl_me_t *me, uint32_t rank)
{
	bool src = rank != SPIN_RANK_ANY &&
		   ((ni->options & PTL_NI_LOGICAL) || me->match_id.phys.pid != PTL_PID_ANY);

	if (me->ignore_bits)
		return src ? 3 : 2;
	return src ? 0 : 1;
}

struct ptl_unex *ptl_unex_find(struct ptl_ni *ni, uint32_t pt, const ptl_me_t *me, uint32_t rank,
			       const struct ptl_unex *after)
{
	int c = ux_chain_of(ni, me, rank);
	uint32_t i1;

	if (pt >= SPIN_MAX_PT || !ni->ux_exact)
		return NULL;
	if (after) {
		i1 = after->next1[c];
	} else {
		struct ptl_unex key = { .pt = pt, .rank = rank,
					.pid = ux_pid(ni, me->match_id.phys.pid) };

		key.ev.match_bits = me->match_bits;
		i1 = ux_list(ni, c, &key)->head1;
	}
	for (; i1; i1 = ux_at(ni, i1 - 1)->next1[c]) {
		struct ptl_unex *u = ux_at(ni, i1 - 1);

		/* another key in the bucket, or not this entry's */
		if (u->pt == pt && ptl_unex_matches(ni, u, me, rank))
			return u;
	}
	return NULL;
}

void ptl_unex_clear(struct ptl_ni *ni, uint32_t pt)
{
	if (pt >= SPIN_MAX_PT)
		return;
	while (ni->ux_pt[pt].head1)
		ptl_unex_del(ni, ux_at(ni, ni->ux_pt[pt].head1 - 1));
}

void ptl_unex_fini(struct ptl_ni *ni)
{
	for (uint32_t c = 0; c < ni->ux_n / PTL_UNEX_CHUNK; c++) {
		free(ni->ux_chunk[c]);
		ni->ux_chunk[c] = NULL;
	}
	ni->ux_n = 0;
	ni->ux_free1 = 0;
	free(ni->ux_exact);
	free(ni->ux_bits);
	free(ni->ux_src);
	ni->ux_exact = ni->ux_bits = ni->ux_src = NULL;
	ni->ux_nb = 0;
	memset(ni->ux_pt, 0, sizeof(ni->ux_pt));
	memset(ni->ux_count, 0, sizeof(ni->ux_count));
}
