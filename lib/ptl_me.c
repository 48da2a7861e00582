// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Portals library's entry table and its match index (docs/design.md,
 * "Matching", the library's side).
 *
 * Entries live in chunks of PTL_ME_CHUNK, allocated as the table grows (up
 * to PTL_N_ME, the runtime's SPIN_MAX_ME); a slot never moves, so pointers
 * to entries stay valid while the lock is held.  Free slots are a list,
 * lowest index first when the table was grown.
 *
 * The match index holds the entries linked to the runtime, so that the
 * library finds the entry a message matches in Portals order without a
 * scan (me_rematch, a late priority entry for an unexpected header): the
 * runtime's structure again (bpf/spin_rt.bpf.c, spin_search).  An entry
 * without ignore bits is hashed on (portal, list, match bits, rank, pid),
 * wildcard rank and pid being values of the key; the others go on their
 * portal's and list's wildcard list.  Both keep append order (seq), so the
 * first entry of a key in its bucket is the oldest of that key, and a
 * wildcard list is walked only while its entries are older than the best
 * exact candidate.
 */
#include <stdlib.h>
#include <string.h>

#include "ptl_internal.h"

struct ptl_mer *ptl_me_alloc(struct ptl_ni *ni)
{
	struct ptl_mer *m;

	if (!ni->me_free1) {
		uint32_t c = ni->me_n / PTL_ME_CHUNK;

		if (ni->me_n >= PTL_N_ME)
			return NULL;
		ni->me_chunk[c] = calloc(PTL_ME_CHUNK, sizeof(struct ptl_mer));
		if (!ni->me_chunk[c])
			return NULL;
		for (uint32_t k = PTL_ME_CHUNK; k-- > 0;) {
			m = &ni->me_chunk[c][k];
			m->gen = 1;
			m->idx = ni->me_n + k;
			m->rt = -1;
			m->free1 = ni->me_free1;
			ni->me_free1 = m->idx + 1;
		}
		ni->me_n += PTL_ME_CHUNK;
	}
	m = ptl_me_at(ni, ni->me_free1 - 1);
	ni->me_free1 = m->free1;
	m->free1 = 0;
	return m;
}

void ptl_me_release(struct ptl_ni *ni, struct ptl_mer *m)
{
	if (m->mx_on)
		ptl_mx_unlink(ni, m);
	m->used = false;
	m->gen = ptl_next_gen(m->gen);
	m->free1 = ni->me_free1;
	ni->me_free1 = m->idx + 1;
}

void ptl_me_table_fini(struct ptl_ni *ni)
{
	for (uint32_t c = 0; c < ni->me_n / PTL_ME_CHUNK; c++) {
		free(ni->me_chunk[c]);
		ni->me_chunk[c] = NULL;
	}
	ni->me_n = 0;
	ni->me_free1 = 0;
	free(ni->mx_bucket);
	ni->mx_bucket = NULL;
}

static uint32_t mx_hash(uint32_t pt, ptl_list_t list, uint64_t bits, uint32_t rank, uint32_t pid)
{
	uint64_t h = bits ^ ((uint64_t)rank << 32 | pid) * 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)pt << 1 | (uint64_t)list) * 0xc2b2ae3d27d4eb4full;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint32_t)h & (PTL_MX_BUCKETS - 1);
}

static uint32_t mx_pid_of(struct ptl_ni *ni, const struct ptl_mer *m)
{
	if ((ni->options & PTL_NI_LOGICAL) || m->me.match_id.phys.pid == PTL_PID_ANY)
		return SPIN_PID_ANY;
	return m->me.match_id.phys.pid;
}

/* the list entry m goes on */
static struct ptl_mx_list *mx_list_of(struct ptl_ni *ni, const struct ptl_mer *m)
{
	if (m->mx_wild)
		return &ni->mx_wild[m->pt][m->list == PTL_PRIORITY_LIST ? 0 : 1];
	return &ni->mx_bucket[mx_hash(m->pt, m->list, m->me.match_bits, m->match_rank, m->mx_pid)];
}

int ptl_mx_link(struct ptl_ni *ni, struct ptl_mer *m)
{
	struct ptl_mx_list *l;

	if (m->mx_on || m->pt >= SPIN_MAX_PT)
		return 0;
	m->mx_wild = m->me.ignore_bits != 0;
	m->mx_pid = mx_pid_of(ni, m);
	if (!m->mx_wild && !ni->mx_bucket) {
		ni->mx_bucket = calloc(PTL_MX_BUCKETS, sizeof(*ni->mx_bucket));
		if (!ni->mx_bucket)
			return -1;
	}
	l = mx_list_of(ni, m);
	/* the newest entry: at the tail (seq grows) */
	m->mx_next1 = 0;
	m->mx_prev1 = l->tail1;
	if (l->tail1)
		ptl_me_at(ni, l->tail1 - 1)->mx_next1 = m->idx + 1;
	else
		l->head1 = m->idx + 1;
	l->tail1 = m->idx + 1;
	m->mx_on = true;
	ni->mx_pt_n[m->pt]++;
	if ((m->me.options & PTL_ME_EVENT_CT_COMM) && m->me.ct_handle != PTL_CT_NONE &&
	    ptl_hidx(m->me.ct_handle) < PTL_N_CT) {
		ni->mx_ct_n[ptl_hidx(m->me.ct_handle)]++;
		ni->mx_ct_x[ptl_hidx(m->me.ct_handle)] ^= m->idx;
	}
	return 0;
}

void ptl_mx_unlink(struct ptl_ni *ni, struct ptl_mer *m)
{
	struct ptl_mx_list *l;

	if (!m->mx_on)
		return;
	l = mx_list_of(ni, m);
	if (m->mx_prev1)
		ptl_me_at(ni, m->mx_prev1 - 1)->mx_next1 = m->mx_next1;
	else
		l->head1 = m->mx_next1;
	if (m->mx_next1)
		ptl_me_at(ni, m->mx_next1 - 1)->mx_prev1 = m->mx_prev1;
	else
		l->tail1 = m->mx_prev1;
	m->mx_next1 = m->mx_prev1 = 0;
	m->mx_on = false;
	ni->mx_pt_n[m->pt]--;
	if ((m->me.options & PTL_ME_EVENT_CT_COMM) && m->me.ct_handle != PTL_CT_NONE &&
	    ptl_hidx(m->me.ct_handle) < PTL_N_CT) {
		ni->mx_ct_n[ptl_hidx(m->me.ct_handle)]--;
		ni->mx_ct_x[ptl_hidx(m->me.ct_handle)] ^= m->idx;
	}
}

static bool mx_matches(struct ptl_ni *ni, const struct ptl_mer *m, uint64_t bits, uint32_t rank,
		       uint32_t pid)
{
	if ((m->me.match_bits ^ bits) & ~m->me.ignore_bits)
		return false;
	if (m->match_rank != SPIN_RANK_ANY && m->match_rank != rank)
		return false;
	return (ni->options & PTL_NI_LOGICAL) || m->mx_pid == SPIN_PID_ANY || m->mx_pid == pid;
}

struct ptl_mer *ptl_mx_find(struct ptl_ni *ni, uint32_t pt, ptl_list_t list, uint64_t bits,
			    uint32_t rank, uint32_t pid,
			    bool (*ok)(struct ptl_ni *, struct ptl_mer *, void *), void *arg)
{
	struct ptl_mer *best = NULL;
	uint32_t ranks[2] = { rank, SPIN_RANK_ANY }, pids[2] = { pid, SPIN_PID_ANY };
	int npid = (ni->options & PTL_NI_LOGICAL) || pid == SPIN_PID_ANY ? 1 : 2;
	int nrank = rank == SPIN_RANK_ANY ? 1 : 2;
	struct ptl_mx_list *w;
	uint32_t i1;

	if (pt >= SPIN_MAX_PT || !ni->mx_pt_n[pt])
		return NULL;
	if (npid == 1)
		pids[0] = SPIN_PID_ANY;
	/* exact entries: the first of each key (rank or any, pid or any)
	 * that takes it is the oldest of that key */
	for (int r = 0; ni->mx_bucket && r < nrank; r++)
		for (int p = 0; p < npid; p++) {
			struct ptl_mx_list *l = &ni->mx_bucket[mx_hash(pt, list, bits, ranks[r], pids[p])];

			for (i1 = l->head1; i1; i1 = ptl_me_at(ni, i1 - 1)->mx_next1) {
				struct ptl_mer *m = ptl_me_at(ni, i1 - 1);

				if (best && m->seq > best->seq)
					break;
				if (m->pt != pt || m->list != list || m->me.match_bits != bits ||
				    m->match_rank != ranks[r] || m->mx_pid != pids[p])
					continue;	/* another key in the bucket */
				if (ok && !ok(ni, m, arg))
					continue;
				best = m;
				break;
			}
		}
	/* wildcard entries older than the best so far */
	w = &ni->mx_wild[pt][list == PTL_PRIORITY_LIST ? 0 : 1];
	for (i1 = w->head1; i1; i1 = ptl_me_at(ni, i1 - 1)->mx_next1) {
		struct ptl_mer *m = ptl_me_at(ni, i1 - 1);

		if (best && m->seq > best->seq)
			break;
		if (mx_matches(ni, m, bits, rank, pid) && (!ok || ok(ni, m, arg)))
			return m;
	}
	return best;
}
