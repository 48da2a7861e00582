// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin portal table and match entries.
 *
 * spin_me and spin_hpu are mmap-ed (BPF_F_MMAPABLE).  An entry is written
 * in this order: state SETUP, then its fields and handler memory, then its
 * links into the matching structure (the spin_mx FIFO of its exact key, or
 * its portal's wildcard list; docs/design.md, "Matching") and the portal
 * table entry's counts, and last the release store of state ACTIVE, so the
 * runtime never matches a half-written entry.  All table changes are
 * serialized between processes by flock() on the pin directory
 * (spin_lock) and bump spin_cfg.gen.
 *
 * spin_pt is mmap-able too: the runtime clears SPIN_PT_ENABLED with
 * compare-and-swap (flow control), so the host changes a portal table
 * entry's fields in place (atomics on flags) instead of rewriting the whole
 * element, which could undo a concurrent disable.
 *
 * Entries with SPIN_ME_XSK have no buffer in the host window: their memory
 * is the owning process's own; host_len is the logical length (truncation,
 * NO_TRUNCATE) and host_off is 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libspin_internal.h"

static int me_counters_reset(struct spin_rt *rt, uint32_t idx);

_Static_assert(sizeof(struct spin_me) % 8 == 0, "spin_me elements are not padded");

static int pt_check(uint32_t pt)
{
	if (pt >= SPIN_MAX_PT)
		return spin_seterr(SPIN_EUSAGE, "portal table index %u out of range (0..%u)", pt,
				   SPIN_MAX_PT - 1);
	return 0;
}

static int me_check(uint32_t me)
{
	if (me >= SPIN_MAX_ME)
		return spin_seterr(SPIN_EUSAGE, "match entry index %u out of range (0..%u)", me,
				   SPIN_MAX_ME - 1);
	return 0;
}

/*
 * Handler memory per process slot (docs/security.md, "Handlers"): slot 0's
 * is the runtime's spin_hpu (spin_hpu_big); another slot's is a map of the
 * same shape (keyed by the entry's index in spin_me, as spin_hpu), pinned
 * as hpu<slot> (hpubig<slot>) in the pin directory, made on the slot's
 * first use and kept while the runtime is attached (an append zeroes an
 * entry's memory).  A handler program gets its loading process's slot's
 * (lib/handler.c), so it reaches no other slot's entries' memory.  The
 * pins are not spin_*: no handler object can be bound to one by name.
 */
int spin_hpu_fd(struct spin_rt *rt, uint32_t slot, bool big, int *fd)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	char name[16];
	int m, e = 0;

	*fd = -1;
	if (slot >= SPIN_MAX_PROCS)
		return spin_seterr(SPIN_EUSAGE, "process slot %u out of range (0..%d)", slot,
				   SPIN_MAX_PROCS - 1);
	if (!slot) {
		*fd = dup(rt->map_fd[big ? SPIN_M_HPU_BIG : SPIN_M_HPU]);
		return *fd < 0 ? spin_seterr(SPIN_EFAIL, "dup: %s", strerror(errno)) : 0;
	}
	snprintf(name, sizeof(name), "%s%u", big ? "hpubig" : "hpu", slot);
	for (int tries = 0; tries < 2; tries++) {
		*fd = spin_obj_get_at(rt->dir_fd, name);
		if (*fd >= 0)
			return 0;
		e = errno;
		if (e != ENOENT)
			break;
		m = bpf_map_create(BPF_MAP_TYPE_ARRAY, big ? "spin_hpu_big" : "spin_hpu", 4,
				   big ? SPIN_HPU_BIG_SIZE : SPIN_HPU_SIZE,
				   big ? SPIN_MAX_HPU_BIG : SPIN_MAX_HPU, &o);
		if (m < 0) {
			e = errno;
			break;
		}
		if (!spin_obj_pin_at(m, rt->dir_fd, name)) {
			*fd = m;
			return 0;
		}
		e = errno;	/* EEXIST: another process made it first */
		close(m);
		if (e != EEXIST)
			break;
	}
	return spin_seterr(spin_errno_code(e), "cannot open or make the handler memory %s of '%s': %s",
			   name, rt->ifname, strerror(e));
}

/* The handler memory of slot (spin_hpu_fd), mapped; NULL with the error set. */
static uint8_t *hpu_base(struct spin_rt *rt, uint32_t slot, bool big)
{
	size_t len = big ? (size_t)SPIN_MAX_HPU_BIG * SPIN_HPU_BIG_SIZE :
			   (size_t)SPIN_MAX_HPU * SPIN_HPU_SIZE;
	uint8_t **p;
	void *m;
	int fd;

	slot &= SPIN_MAX_PROCS - 1;
	if (!slot)
		return big ? rt->hpu_big : rt->hpu;
	p = big ? &rt->hpu_big_s[slot] : &rt->hpu_s[slot];
	if (*p)
		return *p;
	if (spin_hpu_fd(rt, slot, big, &fd))
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		spin_seterr(SPIN_EFAIL, "cannot map the handler memory of slot %u of '%s': %s", slot,
			    rt->ifname, strerror(errno));
		return NULL;
	}
	return *p = m;
}

/* Entries with handler memory are the first SPIN_MAX_HPU. */
static int hpu_check(uint32_t me)
{
	if (me >= SPIN_MAX_HPU)
		return spin_seterr(SPIN_EUSAGE, "match entry %u has no handler memory (only entries with handlers, 0..%u, have it)",
				   me, SPIN_MAX_HPU - 1);
	return 0;
}

/* A handle confined to its process slot (a Portals process's) touches only
 * the portals and entries of that slot. */
static int slot_mine(struct spin_rt *rt, uint32_t pt, const char *what, uint32_t idx)
{
	if (!rt->confined || SPIN_PT_SLOT(pt) == rt->slot)
		return 0;
	return spin_seterr(SPIN_EPERM, "%s %u of '%s' belongs to process slot %u, not to this process (slot %u)",
			   what, idx, rt->ifname, SPIN_PT_SLOT(pt), rt->slot);
}

static int pt_read(struct spin_rt *rt, uint32_t pt, struct spin_pt *v)
{
	if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_PT], &pt, v))
		return spin_seterr(spin_errno_code(errno), "cannot read spin_pt[%u]: %s", pt,
				   strerror(errno));
	return 0;
}

static int pt_write(struct spin_rt *rt, uint32_t pt, const struct spin_pt *v)
{
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_PT], &pt, v, 0))
		return spin_seterr(spin_errno_code(errno), "cannot write spin_pt[%u]: %s", pt,
				   strerror(errno));
	return 0;
}

/* The portal table, mapped for in-place updates; NULL if the pinned map is
 * not mmap-able (a runtime loaded by an older libspin). */
static struct spin_pt *pt_map(struct spin_rt *rt, size_t *len)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	*len = ((sizeof(struct spin_pt) * SPIN_MAX_PT + pg - 1) / pg) * pg;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, rt->map_fd[SPIN_M_PT], 0);
	return p == MAP_FAILED ? NULL : p;
}

static uint32_t me_state(struct spin_rt *rt, uint32_t i)
{
	return __atomic_load_n(&rt->me[i].state, __ATOMIC_ACQUIRE);
}

static void me_reap(struct spin_rt *rt, uint32_t idx);

/* First match entry of a portal table entry that is not FREE, or -1;
 * entries the runtime freed (consumed use-once ones) come off its lists. */
static int pt_busy(struct spin_rt *rt, uint32_t pt)
{
	int busy = -1;

	for (uint32_t i = 0; i < SPIN_MAX_ME; i++) {
		if (!rt->me[i].link || rt->me[i].pt != pt)
			continue;
		if (me_state(rt, i) != SPIN_ME_FREE) {
			if (busy < 0)
				busy = i;
		} else {
			me_reap(rt, i);
		}
	}
	return busy;
}

int spin_pt_alloc(struct spin_rt *rt, uint32_t pt_index)
{
	return spin_pt_alloc_flags(rt, pt_index, 0);
}

int spin_pt_alloc_flags(struct spin_rt *rt, uint32_t pt_index, uint32_t flags)
{
	struct spin_pt pt;
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_pt_alloc: no runtime");
	if (flags & ~(SPIN_PT_FLOWCTRL | SPIN_PT_OWNED))
		return spin_seterr(SPIN_EUSAGE, "portal table entry flags 0x%x: only SPIN_PT_FLOWCTRL (0x%x) and SPIN_PT_OWNED may be given",
				   flags, SPIN_PT_FLOWCTRL);
	if ((err = pt_check(pt_index)) || (err = spin_lock(rt)))
		return err;
	err = pt_read(rt, pt_index, &pt);
	if (err)
		goto out;
	if (pt.flags & SPIN_PT_ALLOCATED) {
		err = spin_seterr(SPIN_EEXIST, "portal table entry %u of '%s' is already allocated",
				  pt_index, rt->ifname);
		goto out;
	}
	if (pt.n_me) {
		err = spin_seterr(SPIN_EFAIL, "portal table entry %u of '%s' still has %u match entries linked",
				  pt_index, rt->ifname, pt.n_me);
		goto out;
	}
	pt.flags = SPIN_PT_ALLOCATED | SPIN_PT_ENABLED | (flags & SPIN_PT_FLOWCTRL);
	pt.owner_pid = (flags & SPIN_PT_OWNED) ? (uint32_t)getpid() : 0;
	/* the owner's identity beyond its pid (spin_owner_alive) */
	pt.owner_start = (flags & SPIN_PT_OWNED) ? spin_proc_start(0) : 0;
	err = pt_write(rt, pt_index, &pt);
	if (!err)
		spin_gen_bump(rt);
out:
	spin_unlock(rt);
	return err;
}

int spin_pt_free(struct spin_rt *rt, uint32_t pt_index)
{
	struct spin_pt pt;
	int err, busy;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_pt_free: no runtime");
	if ((err = pt_check(pt_index)) || (err = spin_lock(rt)))
		return err;
	err = pt_read(rt, pt_index, &pt);
	if (err)
		goto out;
	if (!(pt.flags & SPIN_PT_ALLOCATED)) {
		err = spin_seterr(SPIN_ENOENT, "portal table entry %u of '%s' is not allocated",
				  pt_index, rt->ifname);
		goto out;
	}
	busy = pt_busy(rt, pt_index);
	if (busy >= 0) {
		err = spin_seterr(SPIN_EEXIST,
				  "portal table entry %u has match entries (e.g. %d): unlink them first",
				  pt_index, busy);
		goto out;
	}
	err = pt_read(rt, pt_index, &pt);	/* pt_busy may have changed its counts */
	if (err)
		goto out;
	pt.flags = 0;
	pt.owner_pid = 0;
	pt.owner_start = 0;
	err = pt_write(rt, pt_index, &pt);
	if (!err)
		spin_gen_bump(rt);
out:
	spin_unlock(rt);
	return err;
}

int spin_pt_enable(struct spin_rt *rt, uint32_t pt_index, bool enable)
{
	struct spin_pt pt;
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_pt_enable: no runtime");
	if ((err = pt_check(pt_index)) || (err = spin_lock(rt)))
		return err;
	err = pt_read(rt, pt_index, &pt);
	if (err)
		goto out;
	if (!(pt.flags & SPIN_PT_ALLOCATED)) {
		err = spin_seterr(SPIN_ENOENT,
				  "portal table entry %u of '%s' is not allocated (run 'spinctl pt alloc %s %u')",
				  pt_index, rt->ifname, rt->ifname, pt_index);
		goto out;
	}
	{
		/* in place: the runtime may clear SPIN_PT_ENABLED concurrently */
		size_t len;
		struct spin_pt *m = pt_map(rt, &len);

		if (m) {
			if (enable)
				__atomic_fetch_or(&m[pt_index].flags, SPIN_PT_ENABLED, __ATOMIC_SEQ_CST);
			else
				__atomic_fetch_and(&m[pt_index].flags, ~SPIN_PT_ENABLED, __ATOMIC_SEQ_CST);
			munmap(m, len);
		} else {
			if (enable)
				pt.flags |= SPIN_PT_ENABLED;
			else
				pt.flags &= ~SPIN_PT_ENABLED;
			err = pt_write(rt, pt_index, &pt);
		}
	}
	if (!err)
		spin_gen_bump(rt);
out:
	spin_unlock(rt);
	return err;
}

int spin_pt_get(struct spin_rt *rt, uint32_t pt_index, struct spin_pt *out)
{
	int err;

	if (!rt || !out)
		return spin_seterr(SPIN_EUSAGE, "spin_pt_get: no runtime or output");
	if ((err = pt_check(pt_index)))
		return err;
	return pt_read(rt, pt_index, out);
}

/* ------------------------------------------------------ host window -- */

struct range {
	uint64_t off, end;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* v rounded up to a page; saturates at the last page instead of wrapping
 * to 0 (a length near 2^64 must never look small). */
static uint64_t page_up(uint64_t v)
{
	if (v > UINT64_MAX - (SPIN_PAGE - 1))
		return UINT64_MAX & ~(uint64_t)(SPIN_PAGE - 1);
	return (v + SPIN_PAGE - 1) & ~(uint64_t)(SPIN_PAGE - 1);
}

/* a + b, saturating */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* First fit of len bytes (page aligned) among the used ranges; len and
 * size are at most SPIN_MAX_HOST_BYTES (checked by the caller), so
 * nothing below can wrap. */
static int window_alloc(struct range *used, int n, uint64_t size, uint64_t len, uint64_t *off)
{
	uint64_t need, cand = 0;

	if (!len || len > size)
		return -1;
	need = page_up(len);
	qsort(used, n, sizeof(*used), cmp_range);
	for (int i = 0; i < n; i++) {
		if (cand + need <= used[i].off)
			break;
		if (page_up(used[i].end) > cand)
			cand = page_up(used[i].end);
		if (cand > size)
			return -1;
	}
	if (need > size || cand > size - need)
		return -1;
	*off = cand;
	return 0;
}

/* The ranges entries of process slot `slot` use in that slot's window (2
 * per entry at most; every slot has its own window, spin_wins), allocated;
 * NULL if out of memory.  O(SPIN_MAX_ME): only a first-fit placement
 * needs it. */
static struct range *used_ranges(struct spin_rt *rt, uint32_t slot, int *n)
{
	struct range *r = malloc(sizeof(*r) * (2 * SPIN_MAX_ME + 2));

	*n = 0;
	if (!r)
		return NULL;
	for (uint32_t i = 0; i < SPIN_MAX_ME; i++) {
		const struct spin_me *m = &rt->me[i];

		if (me_state(rt, i) == SPIN_ME_FREE || SPIN_PT_SLOT(m->pt) != slot)
			continue;
		if (m->host_len && !(m->options & SPIN_ME_XSK))
			r[(*n)++] = (struct range){ m->host_off, add_sat(m->host_off, m->host_len) };
		if (m->hhost_len)
			r[(*n)++] = (struct range){ m->hhost_off, add_sat(m->hhost_off, m->hhost_len) };
	}
	return r;
}

/*
 * Where a buffer of len bytes goes in the host window of size bytes: at
 * off_in, or first fit when off_in is UINT64_MAX.  Lengths and offsets are
 * the caller's (CLI, Portals, C API): checked without arithmetic that can
 * wrap, so [*off, *off + len) always lies inside the window.
 */
static int place(struct spin_rt *rt, uint32_t slot, const char *what, uint64_t off_in,
		 uint64_t len, uint64_t size, struct range **usedp, int *n, uint64_t *off)
{
	struct range *used;

	if (len > SPIN_MAX_HOST_BYTES)
		return spin_seterr(SPIN_EUSAGE, "%s of %llu bytes: length out of range (0..%llu)",
				   what, (unsigned long long)len,
				   (unsigned long long)SPIN_MAX_HOST_BYTES);
	if (off_in == UINT64_MAX) {
		if (!len) {
			*off = 0;
			return 0;
		}
		if (!*usedp && !(*usedp = used_ranges(rt, slot, n)))
			return spin_seterr(SPIN_EFAIL, "out of memory");
		if (window_alloc(*usedp, *n, size, len, off))
			return spin_seterr(SPIN_ENOSPC,
					   "no room for %llu bytes of %s in the host window of '%s' "
					   "(%llu bytes): unlink entries or attach with more pages",
					   (unsigned long long)len, what, rt->ifname,
					   (unsigned long long)size);
	} else {
		if (off_in > size || len > size - off_in)
			return spin_seterr(SPIN_EUSAGE,
					   "%s [%llu, +%llu) is outside the host window of '%s' (%llu bytes)",
					   what, (unsigned long long)off_in, (unsigned long long)len,
					   rt->ifname, (unsigned long long)size);
		*off = off_in;
	}
	used = *usedp;
	if (len && used)
		used[(*n)++] = (struct range){ *off, *off + len };
	return 0;
}

/* -------------------------------------------------------- match entries -- */

/* The kind of an entry's key (enum spin_mx_kind). */
static uint32_t mx_kind(uint64_t ignore_bits, uint32_t rank, uint32_t pid)
{
	if (ignore_bits)
		return SPIN_MX_WILD;
	return (rank == SPIN_RANK_ANY ? 2 : 0) | (pid == SPIN_PID_ANY ? 1 : 0);
}

static struct spin_mx_key mx_key(const struct spin_me *m)
{
	struct spin_mx_key k = {
		.pt_list = m->pt << 1 | m->list,
		.rank = m->match_rank,
		.pid = m->match_pid,
		.bits = m->match_bits,
	};
	return k;
}

/* The portal table, mapped once for in-place updates (NULL: not
 * mmap-able, see pt_map). */
static struct spin_pt *pt_shared(struct spin_rt *rt)
{
	if (!rt->ptm)
		rt->ptm = pt_map(rt, &rt->ptm_len);
	return rt->ptm;
}

/* Take entry idx (any state) off its list, under the lock: its key's FIFO
 * in spin_mx or its portal's wildcard list, and its portal's counts.  Its
 * own links stay as they are (a runtime walking the list may stand on it
 * and go on from there). */
static int me_delist(struct spin_rt *rt, uint32_t idx)
{
	struct spin_me *m = &rt->me[idx];
	uint32_t prev = m->prev, next = m->next, l = m->list & 1, kind;
	struct spin_pt *P = pt_shared(rt);
	int err = 0;

	if (!m->link)
		return 0;
	kind = m->link - 1;
	if (!P || m->pt >= SPIN_MAX_PT || kind > SPIN_MX_WILD)
		return spin_seterr(SPIN_EFAIL, "match entry %u: cannot reach its portal table entry", idx);
	P += m->pt;
	if (prev < SPIN_MAX_ME)
		__atomic_store_n(&rt->me[prev].next, next, __ATOMIC_RELEASE);
	if (next < SPIN_MAX_ME)
		rt->me[next].prev = prev;
	if (kind == SPIN_MX_WILD) {
		if (prev >= SPIN_MAX_ME)
			__atomic_store_n(&P->wild_head[l], next, __ATOMIC_RELEASE);
		if (next >= SPIN_MAX_ME)
			P->wild_tail[l] = prev;
		__atomic_fetch_sub(&P->n_wild[l], 1, __ATOMIC_RELEASE);
	} else {
		struct spin_mx_key k = mx_key(m);
		struct spin_mx v;
		int fd = rt->map_fd[SPIN_M_MX];

		if (prev >= SPIN_MAX_ME && next >= SPIN_MAX_ME) {
			if (bpf_map_delete_elem(fd, &k) && errno != ENOENT)
				err = -errno;
		} else if (prev >= SPIN_MAX_ME || next >= SPIN_MAX_ME) {
			if (bpf_map_lookup_elem(fd, &k, &v)) {
				err = -errno;
			} else {
				if (prev >= SPIN_MAX_ME)
					v.head = next;
				if (next >= SPIN_MAX_ME)
					v.tail = prev;
				if (bpf_map_update_elem(fd, &k, &v, BPF_EXIST))
					err = -errno;
			}
		}
		__atomic_fetch_sub(&P->n_exact[l][kind], 1, __ATOMIC_RELEASE);
	}
	__atomic_fetch_sub(&P->n_me, 1, __ATOMIC_RELEASE);
	m->link = 0;
	/* the next search starts at the lowest slot this process freed: the
	 * slots below the hint stay in use as far as it knows */
	{
		int r = idx < SPIN_MAX_HPU_BIG ? 2 : idx < SPIN_MAX_HPU;

		if (idx < rt->me_hint[r])
			rt->me_hint[r] = idx;
	}
	if (idx >= SPIN_MAX_HPU)
		rt->me_full0 = false;
	if (err)
		return spin_seterr(SPIN_EFAIL, "match entry %u: cannot update spin_mx: %s", idx,
				   strerror(-err));
	return 0;
}

/* An entry the runtime freed (consumed use-once) comes off its list. */
static void me_reap(struct spin_rt *rt, uint32_t idx)
{
	if (rt->me[idx].link && me_state(rt, idx) == SPIN_ME_FREE)
		me_delist(rt, idx);
}

/* Put entry idx (state SETUP, fields written) at the end of its list. */
static int me_enlist(struct spin_rt *rt, uint32_t idx)
{
	struct spin_me *m = &rt->me[idx];
	uint32_t l = m->list & 1, kind = mx_kind(m->ignore_bits, m->match_rank, m->match_pid);
	struct spin_pt *P = pt_shared(rt);

	if (!P)
		return spin_seterr(SPIN_EFAIL, "cannot map the portal table of '%s'", rt->ifname);
	P += m->pt;
	m->next = SPIN_ME_NIL;
	if (kind == SPIN_MX_WILD) {
		uint32_t t;

		/* entries the runtime consumed first: the walk skips fewer */
		while ((t = P->wild_head[l]) < SPIN_MAX_ME && rt->me[t].link &&
		       me_state(rt, t) == SPIN_ME_FREE)
			me_delist(rt, t);
		t = P->n_wild[l] ? P->wild_tail[l] : SPIN_ME_NIL;
		m->prev = t;
		if (t < SPIN_MAX_ME)
			__atomic_store_n(&rt->me[t].next, idx, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&P->wild_head[l], idx, __ATOMIC_RELEASE);
		P->wild_tail[l] = idx;
		__atomic_fetch_add(&P->n_wild[l], 1, __ATOMIC_RELEASE);
	} else {
		struct spin_mx_key k = mx_key(m);
		struct spin_mx v;
		int fd = rt->map_fd[SPIN_M_MX];

		while (!bpf_map_lookup_elem(fd, &k, &v) && v.head < SPIN_MAX_ME &&
		       rt->me[v.head].link && me_state(rt, v.head) == SPIN_ME_FREE)
			if (me_delist(rt, v.head))
				break;
		if (bpf_map_lookup_elem(fd, &k, &v)) {
			m->prev = SPIN_ME_NIL;
			v.head = v.tail = idx;
			if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST))
				return spin_seterr(SPIN_ENOSPC, "cannot add a key to spin_mx: %s",
						   strerror(errno));
		} else {
			m->prev = v.tail;
			v.tail = idx;
			if (bpf_map_update_elem(fd, &k, &v, BPF_EXIST))
				return spin_seterr(SPIN_EFAIL, "cannot update spin_mx: %s",
						   strerror(errno));
			if (m->prev < SPIN_MAX_ME)
				__atomic_store_n(&rt->me[m->prev].next, idx, __ATOMIC_RELEASE);
		}
		__atomic_fetch_add(&P->n_exact[l][kind], 1, __ATOMIC_RELEASE);
	}
	__atomic_fetch_add(&P->n_me, 1, __ATOMIC_RELEASE);
	m->link = kind + 1;
	return 0;
}

/*
 * A free slot: entries with handlers (or handler memory) below
 * SPIN_MAX_HPU, where spin_hpu has their memory; the others above it
 * first.  A slot the runtime freed but that is still linked is taken off
 * its list first.  The search starts at this process's hint: after the
 * last slot it took, or the lowest one it freed since (so a slot is
 * reused soon), and filling the table costs O(1) per entry.
 */
static int me_slot(struct spin_rt *rt, bool hpu, bool big)
{
	/* entries with 4 KiB of handler memory look above the slots of big
	 * handler memory first, so those stay free for the entries that need
	 * them; an entry without handlers looks above SPIN_MAX_HPU, then in
	 * the 4 KiB range, then in the big one.  When the range above was full at its last search
	 * (and this process freed nothing there since), it looks there last:
	 * else each of the last SPIN_MAX_HPU appends of a full table would walk
	 * the whole range above (24 s for the last 4096) */
	uint32_t ranges[3][2] = { { SPIN_MAX_HPU, SPIN_MAX_ME }, { SPIN_MAX_HPU_BIG, SPIN_MAX_HPU },
				  { 0, SPIN_MAX_HPU_BIG } };
	int order[3], n;

	if (big) {
		order[0] = 2;
		n = 1;
	} else if (hpu) {
		order[0] = 1;
		order[1] = 2;
		n = 2;
	} else {	/* the slots of big handler memory last of all */
		order[0] = rt->me_full0 ? 1 : 0;
		order[1] = rt->me_full0 ? 0 : 1;
		order[2] = 2;
		n = 3;
	}
	for (int k = 0; k < n; k++) {
		int r = order[k];
		uint32_t lo = ranges[r][0], hi = ranges[r][1], len = hi - lo;
		uint32_t *hint = &rt->me_hint[r];

		if (*hint < lo || *hint >= hi)
			*hint = lo;
		for (uint32_t j = 0, h = *hint; j < len; j++) {
			uint32_t i = lo + (h - lo + j) % len;

			if (me_state(rt, i) != SPIN_ME_FREE)
				continue;
			if (rt->me[i].link && me_delist(rt, i))
				continue;
			*hint = i + 1 < hi ? i + 1 : lo;
			if (r == 0)
				rt->me_full0 = false;
			return i;
		}
		if (r == 0)
			rt->me_full0 = true;
	}
	return -1;
}

int spin_me_append(struct spin_rt *rt, const struct spin_me_spec *s)
{
	struct range *used = NULL;
	uint64_t size, host_off = 0, hhost_off = 0;
	struct spin_pt pt;
	struct spin_me *m;
	uint32_t handler = 0, opts;
	int err, idx = -1, n = 0;
	uint8_t *hb = NULL, *hbb = NULL;
	bool big;

	if (!rt || !s)
		return spin_seterr(SPIN_EUSAGE, "spin_me_append: no runtime or spec");
	big = s->hpu_size > SPIN_HPU_SIZE;
	if ((err = pt_check(s->pt_index)) || (err = slot_mine(rt, s->pt_index, "portal", s->pt_index)))
		return err;
	if (s->list != SPIN_LIST_PRIORITY && s->list != SPIN_LIST_OVERFLOW)
		return spin_seterr(SPIN_EUSAGE, "bad list %d (priority or overflow)", s->list);
	if (s->hpu_size > SPIN_HPU_BIG_SIZE)
		return spin_seterr(SPIN_EUSAGE, "handler memory of %zu bytes is larger than %d",
				   s->hpu_size, SPIN_HPU_BIG_SIZE);
	if (s->hpu_init_len > (s->hpu_size > SPIN_HPU_SIZE ? s->hpu_size : SPIN_HPU_SIZE))
		return spin_seterr(SPIN_EUSAGE, "handler memory initializer of %zu bytes is larger than the entry's %zu bytes of handler memory: set hpu_size (spinctl: hpu-size N)",
				   s->hpu_init_len, s->hpu_size > SPIN_HPU_SIZE ? s->hpu_size : SPIN_HPU_SIZE);
	if (s->hpu_init_len && !s->hpu_init)
		return spin_seterr(SPIN_EUSAGE, "handler memory initializer missing");
	if ((s->options & SPIN_ME_XSK) && s->handler)
		return spin_seterr(SPIN_EUSAGE, "an entry delivered to an AF_XDP socket cannot have handlers");
	opts = s->options;
	if (!(opts & (SPIN_ME_OP_PUT | SPIN_ME_OP_GET)))
		opts |= SPIN_ME_OP_PUT;
	err = spin_lock(rt);
	if (err)
		return err;
	if (s->handler) {
		int slot = spin_handler_slot(rt, s->handler);

		if (slot < 0) {
			err = slot;
			goto out;
		}
		handler = slot + 1;
	}
	err = pt_read(rt, s->pt_index, &pt);
	if (err)
		goto out;
	/* the handler memory of the portal's slot (spin_hpu_fd) */
	if ((handler || s->hpu_init_len || s->hpu_size) &&
	    (!(hb = hpu_base(rt, SPIN_PT_SLOT(s->pt_index), false)) ||
	     (big && !(hbb = hpu_base(rt, SPIN_PT_SLOT(s->pt_index), true))))) {
		err = -SPIN_EFAIL;	/* (set by hpu_base) */
		goto out;
	}
	if (!(pt.flags & SPIN_PT_ALLOCATED)) {
		err = spin_seterr(SPIN_ENOENT,
				  "portal table entry %u of '%s' is not allocated (run 'spinctl pt alloc %s %u')",
				  s->pt_index, rt->ifname, rt->ifname, s->pt_index);
		goto out;
	}
	idx = me_slot(rt, handler || s->hpu_init_len || s->hpu_size, big);
	if (idx < 0 && big) {
		err = spin_seterr(SPIN_ENOSPC,
				  "'%s' has all %d match entries with big handler memory in use: unlink one",
				  rt->ifname, SPIN_MAX_HPU_BIG);
		goto out;
	}
	if (idx < 0) {
		err = spin_seterr(SPIN_ENOSPC,
				  handler || s->hpu_init_len ?
				  "'%s' has all %d match entries with handler memory in use: unlink one" :
				  "'%s' has all %d match entries in use: unlink one",
				  rt->ifname, handler || s->hpu_init_len ? SPIN_MAX_HPU : SPIN_MAX_ME);
		goto out;
	}

	size = (uint64_t)rt->cfg->host_pages * SPIN_PAGE;
	if (opts & SPIN_ME_XSK)
		host_off = 0;	/* process memory: nothing in the window */
	else
		err = place(rt, SPIN_PT_SLOT(s->pt_index), "the match entry buffer", s->host_off, s->host_len, size, &used,
			    &n, &host_off);
	if (!err)
		err = place(rt, SPIN_PT_SLOT(s->pt_index), "handler host memory", s->hhost_off, s->hhost_len, size, &used, &n,
			    &hhost_off);
	free(used);
	if (err)
		goto out;

	m = &rt->me[idx];
	__atomic_store_n(&m->state, SPIN_ME_SETUP, __ATOMIC_RELEASE);
	m->list = s->list;
	m->seq = rt->cfg->me_seq++;	/* all portals: a reused slot never repeats a seq */
	m->match_bits = s->match_bits;
	m->ignore_bits = s->ignore_bits;
	m->match_rank = s->match_rank;
	m->match_pid = s->match_pid;
	m->options = opts;
	m->handler = handler;
	m->host_off = host_off;
	m->host_len = s->host_len;
	m->hhost_off = hhost_off;
	m->hhost_len = s->hhost_len;
	m->user_ptr = s->user_ptr;
	m->owner_pid = getpid();
	m->hpu_len = s->hpu_init_len;
	m->hpu_size = big ? s->hpu_size : SPIN_HPU_SIZE;
	m->wake_count = 0;
	m->wake_at = 0;
	m->busy = 0;
	m->pt = s->pt_index;
	me_counters_reset(rt, idx);
	if (big && hbb) {
		memset(hbb + (size_t)idx * SPIN_HPU_BIG_SIZE, 0, SPIN_HPU_BIG_SIZE);
		if (s->hpu_init_len)
			memcpy(hbb + (size_t)idx * SPIN_HPU_BIG_SIZE, s->hpu_init, s->hpu_init_len);
	} else if (idx < SPIN_MAX_HPU && hb) {
		memset(hb + (size_t)idx * SPIN_HPU_SIZE, 0, SPIN_HPU_SIZE);
		if (s->hpu_init_len)
			memcpy(hb + (size_t)idx * SPIN_HPU_SIZE, s->hpu_init, s->hpu_init_len);
	}

	err = me_enlist(rt, idx);
	if (err) {
		__atomic_store_n(&m->state, SPIN_ME_FREE, __ATOMIC_RELEASE);
		goto out;
	}
	pt.seq = m->seq + 1;
	if (pt_shared(rt))
		__atomic_store_n(&rt->ptm[s->pt_index].seq, pt.seq, __ATOMIC_RELEASE);
	/* publish: the last write of the entry */
	__atomic_store_n(&m->state, SPIN_ME_ACTIVE, __ATOMIC_RELEASE);
	spin_gen_bump(rt);
	err = idx;
out:
	spin_unlock(rt);
	return err;
}

int spin_me_unlink(struct spin_rt *rt, uint32_t me_index)
{
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_me_unlink: no runtime");
	if ((err = me_check(me_index)) ||
	    (err = slot_mine(rt, rt->me[me_index].pt, "match entry", me_index)) ||
	    (err = spin_lock(rt)))
		return err;
	if (me_state(rt, me_index) == SPIN_ME_FREE) {
		me_reap(rt, me_index);
		err = spin_seterr(SPIN_ENOENT, "match entry %u of '%s' is not in use", me_index,
				  rt->ifname);
		goto out;
	}
	/* any state but FREE: also CLAIMED (a consumed use-once entry, e.g.
	 * an XSK entry the library completed); counters stay readable until
	 * the slot is reused.  FREE first: the runtime stops taking it. */
	__atomic_store_n(&rt->me[me_index].state, SPIN_ME_FREE, __ATOMIC_RELEASE);
	err = me_delist(rt, me_index);
	spin_gen_bump(rt);
out:
	spin_unlock(rt);
	return err;
}

/* Sum the entry's per-CPU counters (spin_me_ct) into out. */
static int me_counters(struct spin_rt *rt, uint32_t idx, struct spin_me *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct spin_me_ct *v;

	out->ct_success = out->ct_failure = out->bytes = out->ct_puts = out->ct_gets = 0;
	if (ncpu <= 0)
		return spin_seterr(SPIN_EFAIL, "cannot count CPUs");
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_ME_CT], &idx, v)) {
		free(v);
		return spin_seterr(SPIN_EFAIL, "cannot read counters of match entry %u: %s", idx,
				   strerror(errno));
	}
	for (int i = 0; i < ncpu; i++) {
		out->ct_success += v[i].success;
		out->ct_failure += v[i].failure;
		out->bytes += v[i].bytes;
		out->ct_puts += v[i].puts;
		out->ct_gets += v[i].gets;
	}
	free(v);
	return 0;
}

/* Zero the entry's per-CPU counters before it is reused. */
static int me_counters_reset(struct spin_rt *rt, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct spin_me_ct *v;

	if (ncpu <= 0)
		return -1;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -1;
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_ME_CT], &idx, v, BPF_ANY))
		err = -1;
	free(v);
	return err;
}

int spin_me_wake_arm(struct spin_rt *rt, uint32_t me_index, uint64_t at)
{
	struct spin_me *m;
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_me_wake_arm: no runtime");
	if ((err = me_check(me_index)))
		return err;
	m = &rt->me[me_index];
	/* store wake_at, then read wake_count; the runtime adds to wake_count,
	 * then reads wake_at: one of the two sees the other */
	__atomic_store_n(&m->wake_at, at, __ATOMIC_SEQ_CST);
	return at && __atomic_load_n(&m->wake_count, __ATOMIC_SEQ_CST) >= at;
}

int spin_me_get(struct spin_rt *rt, uint32_t me_index, struct spin_me *out)
{
	int err;

	if (!rt || !out)
		return spin_seterr(SPIN_EUSAGE, "spin_me_get: no runtime");
	if ((err = me_check(me_index)))
		return err;
	memcpy(out, &rt->me[me_index], sizeof(*out));
	out->state = me_state(rt, me_index);
	if (out->state == SPIN_ME_FREE && !out->owner_pid) {
		/* a slot never used: no counters to read (listing every slot
		 * of a large table stays cheap) */
		out->ct_success = out->ct_failure = out->bytes = out->ct_puts = out->ct_gets = 0;
		return 0;
	}
	return me_counters(rt, me_index, out);
}

int spin_hpu_read(struct spin_rt *rt, uint32_t me_index, void *buf, size_t len)
{
	int err;

	if (!rt || (!buf && len))
		return spin_seterr(SPIN_EUSAGE, "spin_hpu_read: no runtime or buffer");
	uint8_t *b;

	if ((err = me_check(me_index)) || (err = hpu_check(me_index)) ||
	    (err = slot_mine(rt, rt->me[me_index].pt, "match entry", me_index)))
		return err;
	if (me_index < SPIN_MAX_HPU_BIG && rt->me[me_index].hpu_size > SPIN_HPU_SIZE) {
		if (len > rt->me[me_index].hpu_size)
			return spin_seterr(SPIN_EUSAGE, "handler memory is %u bytes, not %zu",
					   rt->me[me_index].hpu_size, len);
		if (!(b = hpu_base(rt, SPIN_PT_SLOT(rt->me[me_index].pt), true)))
			return -SPIN_EFAIL;
		memcpy(buf, b + (size_t)me_index * SPIN_HPU_BIG_SIZE, len);
		return 0;
	}
	if (len > SPIN_HPU_SIZE)
		return spin_seterr(SPIN_EUSAGE, "handler memory is %d bytes, asked for %zu",
				   SPIN_HPU_SIZE, len);
	if (!(b = hpu_base(rt, SPIN_PT_SLOT(rt->me[me_index].pt), false)))
		return -SPIN_EFAIL;
	memcpy(buf, b + (size_t)me_index * SPIN_HPU_SIZE, len);
	return 0;
}

int spin_hpu_write(struct spin_rt *rt, uint32_t me_index, const void *buf, size_t len)
{
	int err;

	if (!rt || (!buf && len))
		return spin_seterr(SPIN_EUSAGE, "spin_hpu_write: no runtime or buffer");
	uint8_t *b;

	if ((err = me_check(me_index)) || (err = hpu_check(me_index)) ||
	    (err = slot_mine(rt, rt->me[me_index].pt, "match entry", me_index)))
		return err;
	if (me_index < SPIN_MAX_HPU_BIG && rt->me[me_index].hpu_size > SPIN_HPU_SIZE) {
		if (len > rt->me[me_index].hpu_size)
			return spin_seterr(SPIN_EUSAGE, "handler memory is %u bytes, not %zu",
					   rt->me[me_index].hpu_size, len);
		if (!(b = hpu_base(rt, SPIN_PT_SLOT(rt->me[me_index].pt), true)))
			return -SPIN_EFAIL;
		memcpy(b + (size_t)me_index * SPIN_HPU_BIG_SIZE, buf, len);
		return 0;
	}
	if (len > SPIN_HPU_SIZE)
		return spin_seterr(SPIN_EUSAGE, "handler memory is %d bytes, asked for %zu",
				   SPIN_HPU_SIZE, len);
	if (me_state(rt, me_index) == SPIN_ME_FREE)
		return spin_seterr(SPIN_ENOENT, "match entry %u of '%s' is not in use", me_index,
				   rt->ifname);
	if (!(b = hpu_base(rt, SPIN_PT_SLOT(rt->me[me_index].pt), false)))
		return -SPIN_EFAIL;
	memcpy(b + (size_t)me_index * SPIN_HPU_SIZE, buf, len);
	return 0;
}
