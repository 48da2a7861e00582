// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin's Portals 4 layer: network interface, portal table, memory
 * descriptors, match entries (with the unexpected list), event queues,
 * counters, triggered operations and the sPIN extension.  Data movement and
 * progress are in ptl_data.c.  docs/portals.md describes the whole layer.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <bpf/bpf.h>

#include "ptl_atomic.h"
#include "ptl_internal.h"

struct ptl_ni *ptl_g_ni;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_init;
static __thread char g_err[256];

const char *PtlSpinErrmsg(void)
{
	return g_err;
}

int ptl_seterr(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_err, sizeof(g_err), fmt, ap);
	va_end(ap);
	return rc;
}

void ptl_lock(struct ptl_ni *ni)
{
	pthread_mutex_lock(&ni->mu);
}

void ptl_unlock(struct ptl_ni *ni)
{
	/* tells busy-polling callers that something may have changed */
	__atomic_fetch_add(&ni->lock_gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ni->mu);
}

/* The NI for an API call: locked, or NULL with *rc set. */
struct ptl_ni *ptl_enter(int *rc)
{
	struct ptl_ni *ni;

	pthread_mutex_lock(&g_mu);
	ni = g_init ? ptl_g_ni : NULL;
	*rc = g_init ? PTL_ARG_INVALID : PTL_NO_INIT;
	if (ni)
		ptl_lock(ni);
	pthread_mutex_unlock(&g_mu);
	return ni;
}

/* Whether h is the handle of an open view of ni (PTL_VIEW_*). */
static bool ni_handle_ok(const struct ptl_ni *ni, ptl_handle_ni_t h)
{
	uint32_t v = ptl_hidx(h);

	return ptl_htype(h) == PTL_H_NI && ptl_hgen(h) == ni->gen && v < PTL_N_VIEW &&
	       ni->view_refs[v] > 0;
}

/* The NI for an API call on NI handle h, locked, and the view h names
 * (*view, may be NULL). */
static struct ptl_ni *ni_enter_hv(ptl_handle_ni_t h, int *rc, int *view)
{
	struct ptl_ni *ni = ptl_enter(rc);

	if (ni && !ni_handle_ok(ni, h)) {
		ptl_unlock(ni);
		return NULL;
	}
	if (view)
		*view = (int)ptl_hidx(h);
	return ni;
}

static struct ptl_ni *ni_enter_h(ptl_handle_ni_t h, int *rc)
{
	return ni_enter_hv(h, rc, NULL);
}

/* ------------------------------------------------------------- handles -- */

#define OBJ_GET(type, arr, n, H)					\
	do {								\
		uint32_t i = ptl_hidx(h);				\
		if (!ni || ptl_htype(h) != (H) || i >= (n) ||		\
		    !ni->arr[i].used || ni->arr[i].gen != ptl_hgen(h))	\
			return NULL;					\
		return &ni->arr[i];					\
	} while (0)

struct ptl_eq *ptl_eq_get(struct ptl_ni *ni, ptl_handle_eq_t h) { OBJ_GET(eq, eq, PTL_N_EQ, PTL_H_EQ); }
struct ptl_ct *ptl_ct_get(struct ptl_ni *ni, ptl_handle_ct_t h) { OBJ_GET(ct, ct, PTL_N_CT, PTL_H_CT); }
struct ptl_mdr *ptl_md_get(struct ptl_ni *ni, ptl_handle_md_t h) { OBJ_GET(md, md, PTL_N_MD, PTL_H_MD); }
struct ptl_mer *ptl_me_get(struct ptl_ni *ni, ptl_handle_me_t h)
{
	uint32_t i = ptl_hidx(h);
	struct ptl_mer *m;

	if (!ni || ptl_htype(h) != PTL_H_ME || i >= ni->me_n)
		return NULL;
	m = ptl_me_at(ni, i);
	return m->used && m->gen == ptl_hgen(h) ? m : NULL;
}
static struct ptl_handler *hd_get(struct ptl_ni *ni, ptl_handle_handler_t h) { OBJ_GET(hd, hd, PTL_N_HANDLER, PTL_H_HANDLER); }

static struct ptl_hpu *hpu_get(struct ptl_ni *ni, ptl_handle_hpu_mem_t h)
{
	uint32_t i = ptl_hidx(h);

	if (!ni || ptl_htype(h) != PTL_H_HPU || i >= PTL_N_HPU || !ni->hpu[i] ||
	    !ni->hpu[i]->used || ni->hpu[i]->gen != ptl_hgen(h))
		return NULL;
	return ni->hpu[i];
}

ptl_handle_me_t ptl_me_handle(struct ptl_ni *ni, const struct ptl_mer *m)
{
	(void)ni;
	return ptl_mkh(PTL_H_ME, m->idx, m->gen);
}

int PtlHandleIsEqual(ptl_handle_any_t a, ptl_handle_any_t b)
{
	return a == b;
}

int PtlNIHandle(ptl_handle_any_t h, ptl_handle_ni_t *nih)
{
	struct ptl_ni *ni;
	int rc, t = ptl_htype(h), view = -1;
	bool ok = false;

	if (!nih)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	switch (t) {
	case PTL_H_NI:
		if ((ok = ni_handle_ok(ni, h)))
			view = (int)ptl_hidx(h);
		break;
	case PTL_H_EQ: { struct ptl_eq *q = ptl_eq_get(ni, h); if ((ok = q)) view = q->view; break; }
	case PTL_H_CT: { struct ptl_ct *c = ptl_ct_get(ni, h); if ((ok = c)) view = c->view; break; }
	case PTL_H_MD: { struct ptl_mdr *d = ptl_md_get(ni, h); if ((ok = d)) view = d->view; break; }
	case PTL_H_ME: { struct ptl_mer *m = ptl_me_get(ni, h); if ((ok = m)) view = ptl_pt_view(m->pt); break; }
	/* handlers go on match entries */
	case PTL_H_HANDLER: ok = hd_get(ni, h); view = PTL_VIEW_MATCH; break;
	case PTL_H_HPU: ok = hpu_get(ni, h); view = PTL_VIEW_MATCH; break;
	}
	/* an object of a view closed since (its other view still open) */
	if (ok && view >= 0 && ni->view_refs[view] <= 0)
		ok = false;
	if (ok)
		*nih = ptl_mkh(PTL_H_NI, (uint32_t)view, ni->gen);
	ptl_unlock(ni);
	return ok ? PTL_OK : PTL_ARG_INVALID;
}

/* ------------------------------------------------------- init and fini -- */

int PtlInit(void)
{
	pthread_mutex_lock(&g_mu);
	g_init++;
	pthread_mutex_unlock(&g_mu);
	return PTL_OK;
}

static void ni_destroy(struct ptl_ni *ni);

void PtlFini(void)
{
	struct ptl_ni *ni = NULL;
	bool fini = false;

	pthread_mutex_lock(&g_mu);
	if (g_init > 0 && --g_init == 0) {
		fini = true;
		ni = ptl_g_ni;
		ptl_g_ni = NULL;
	}
	pthread_mutex_unlock(&g_mu);
	if (ni)
		ni_destroy(ni);
	if (fini)
		spin_pmix_fini();
}

static const char *default_iface(char *buf, size_t len)
{
	const char *e = getenv("SPIN_IFACE");
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (e && *e)
		return e;
	if (getifaddrs(&ifa))
		return NULL;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !strcmp(i->ifa_name, "lo"))
			continue;
		if (n == 0 || strcmp(buf, i->ifa_name)) {
			snprintf(buf, len, "%s", i->ifa_name);
			n++;
		}
	}
	freeifaddrs(ifa);
	return n == 1 ? buf : NULL;
}

/*
 * This process now owns the interface (it holds the AF_XDP socket of queue
 * 0): remove portal table entries, match entries and handlers that dead
 * processes left behind.
 */
static void reclaim_stale(struct ptl_ni *ni)
{
	struct spin_handler_info hi[SPIN_MAX_HANDLERS];
	int n;

	/* portal table entries of Portals processes (SPIN_PT_OWNED) whose
	 * process is gone, with their match entries; what spinctl set up has
	 * no owner and stays */
	for (uint32_t p = 0; p < SPIN_MAX_PT; p++) {
		struct spin_pt pt;

		if (spin_pt_get(ni->rt, p, &pt) || !(pt.flags & SPIN_PT_ALLOCATED) ||
		    !pt.owner_pid || spin_owner_alive(pt.owner_pid, pt.owner_start))
			continue;
		/* a dead owner's, in any slot: the one unlink across slots
		 * the library does itself */
		ni->rt->confined = false;
		for (uint32_t i = 0; i < SPIN_MAX_ME; i++)
			if (ni->rt->me[i].pt == p &&
			    __atomic_load_n(&ni->rt->me[i].state, __ATOMIC_ACQUIRE) != SPIN_ME_FREE)
				spin_me_unlink(ni->rt, i);
		ni->rt->confined = true;
		spin_pt_free(ni->rt, p);
	}
	n = spin_handler_list(ni->rt, hi, SPIN_MAX_HANDLERS);
	for (int i = 0; i < n; i++) {
		unsigned pid;

		/* the name has the pid only: a pid reused since keeps them */
		if (sscanf(hi[i].name, "ptl%u_", &pid) == 1 && !spin_owner_alive(pid, 0))
			spin_handler_unload(ni->rt, hi[i].name);
	}
}

uint32_t ptl_slot;

/*
 * Take this process's slot on the interface (docs/design.md, "Many Portals
 * processes per interface"): `want` (its index among the job's ranks at
 * its address), or with want < 0 the lowest free one.  A slot is free when
 * no live process holds it (spin_procs: OS pid and start time), so the
 * slot of a process that died, however it died, is free again.  The pid
 * must be no other live process's on the interface: PTL_PID_ANY moves on
 * to the next free one.  Puts the slot's ring in place: spin_events for
 * slot 0, a new one for the others (the dead holder's goes with it).
 */
static int slot_take(struct ptl_ni *ni, int want, bool pid_any)
{
	int pfd = ni->rt->map_fd[SPIN_M_PROCS], rfd = ni->rt->map_fd[SPIN_M_RINGS];
	struct spin_proc all[SPIN_MAX_PROCS], me;
	bool busy[SPIN_MAX_PROCS];
	int slot = -1, ring = -1, rc = PTL_OK;
	uint32_t k;

	if (spin_lock(ni->rt))
		return ptl_seterr(PTL_FAIL, "PtlNIInit: %s", spin_errmsg());
	for (k = 0; k < SPIN_MAX_PROCS; k++) {
		if (bpf_map_lookup_elem(pfd, &k, &all[k]))
			memset(&all[k], 0, sizeof(all[k]));
		busy[k] = all[k].active && spin_owner_alive(all[k].owner_pid, all[k].owner_start);
	}
	if (want >= SPIN_MAX_PROCS) {
		rc = ptl_seterr(PTL_PID_IN_USE, "PtlNIInit: rank %u is the %dth of the job at the "
				"address of %s: at most %d Portals processes per interface",
				ni->rank, want + 1, ni->ifname, SPIN_MAX_PROCS);
		goto out;
	}
	if (want >= 0 && busy[want]) {
		rc = ptl_seterr(PTL_PID_IN_USE, "PtlNIInit: slot %d of %s (rank %u's: its index among "
				"the job's ranks at this address) is held by process %u (rank %u)",
				want, ni->ifname, ni->rank, all[want].owner_pid, all[want].rank);
		goto out;
	}
	for (k = 0; want < 0 && k < SPIN_MAX_PROCS; k++)
		if (!busy[k]) {
			slot = (int)k;
			break;
		}
	if (want >= 0)
		slot = want;
	if (slot < 0) {
		rc = ptl_seterr(PTL_PID_IN_USE, "PtlNIInit: %d Portals processes on %s already, "
				"the most an interface takes", SPIN_MAX_PROCS, ni->ifname);
		goto out;
	}
	/* a pid names one process on the interface */
	for (int tries = 0;; tries++) {
		bool taken = false;

		for (k = 0; k < SPIN_MAX_PROCS; k++)
			taken |= busy[k] && k != (uint32_t)slot && all[k].pid == ni->pid;
		if (!taken)
			break;
		if (!pid_any || tries > SPIN_MAX_PROCS) {
			rc = ptl_seterr(PTL_PID_IN_USE, "PtlNIInit: pid %u is another Portals process's "
					"on %s (pass another pid, or PTL_PID_ANY)", ni->pid, ni->ifname);
			goto out;
		}
		ni->pid = (ni->pid + 1) & 0xffff;
	}
	k = (uint32_t)slot;
	if (slot > 0) {
		ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "spin_ring", 0, 0, SPIN_EVENTS_SIZE, NULL);
		if (ring < 0 || bpf_map_update_elem(rfd, &k, &ring, 0)) {
			rc = ptl_seterr(PTL_FAIL, "PtlNIInit: cannot make the event ring of slot %d: %s",
					slot, strerror(errno));
			goto out;
		}
		ni->rt->ring_fd = ring;
		ring = -1;
		/* its queued puts: made when its first handler program is
		 * loaded (lib/handler.c); an earlier holder's are not handed
		 * on */
		bpf_map_delete_elem(ni->rt->map_fd[SPIN_M_PUTQS], &k);
		/* nor its handlers' per-message state (spin_mstates) */
		bpf_map_delete_elem(ni->rt->map_fd[SPIN_M_MSTATES], &k);
		/* and its own host window, the size of slot 0's: only this
		 * process maps it; the runtime reaches it only for entries of
		 * this slot's portals (docs/security.md, "Isolation").  A dead
		 * holder's window goes with it, unread by the next holder. */
		{
			int win = spin_map_like(ni->rt->map_fd[SPIN_M_HOST], "spin_win", 0);

			if (win < 0 || bpf_map_update_elem(ni->rt->map_fd[SPIN_M_WINS], &k, &win, 0)) {
				rc = ptl_seterr(PTL_FAIL, "PtlNIInit: cannot make the host window of slot %d: %s",
						slot, strerror(errno));
				if (win >= 0)
					close(win);
				goto out;
			}
			if (ni->rt->win_fd >= 0)
				close(ni->rt->win_fd);
			ni->rt->win_fd = win;
		}
		/* a dead holder's handler memory (hpu<slot>, lib/me.c) goes too,
		 * unread by the next holder: this process's first entry with
		 * handler memory or handler load makes new, zeroed maps; the
		 * dead one's entries and handlers keep theirs until reclaimed */
		{
			char hn[16];

			snprintf(hn, sizeof(hn), "hpu%u", k);
			unlinkat(ni->rt->dir_fd, hn, 0);
			snprintf(hn, sizeof(hn), "hpubig%u", k);
			unlinkat(ni->rt->dir_fd, hn, 0);
		}
	} else if (bpf_map_update_elem(rfd, &k, &ni->rt->map_fd[SPIN_M_EVENTS], 0) ||
		   bpf_map_update_elem(ni->rt->map_fd[SPIN_M_WINS], &k,
					&ni->rt->map_fd[SPIN_M_HOST], 0)) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: cannot put spin_events in spin_rings, or spin_host in spin_wins: %s",
				strerror(errno));
		goto out;
	}
	ni->rt->slot = k;
	ni->rt->confined = true;
	me = (struct spin_proc){ .active = 1, .rank = ni->rank, .pid = ni->pid, .queue = k,
				 .owner_pid = (uint32_t)getpid(), .owner_start = spin_proc_start(0) };
	if (bpf_map_update_elem(pfd, &k, &me, 0)) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: cannot write spin_procs[%d]: %s", slot,
				strerror(errno));
		goto out;
	}
	__atomic_store_n(&ni->rt->cfg->proc_rank[k], ni->rank, __ATOMIC_RELEASE);
	__atomic_store_n(&ni->rt->cfg->proc_pid[k], ni->pid, __ATOMIC_RELEASE);
	ptl_slot = k;
	ni->slot_held = true;
out:
	if (ring >= 0)
		close(ring);
	spin_unlock(ni->rt);
	return rc;
}

/* Give the slot back (PtlNIFini, or a PtlNIInit that failed after it). */
static void slot_release(struct ptl_ni *ni)
{
	struct spin_proc none = {}, cur;
	uint32_t k = ptl_slot;

	if (!ni->slot_held || spin_lock(ni->rt))
		return;
	if (!bpf_map_lookup_elem(ni->rt->map_fd[SPIN_M_PROCS], &k, &cur) &&
	    cur.owner_pid == (uint32_t)getpid()) {
		bpf_map_update_elem(ni->rt->map_fd[SPIN_M_PROCS], &k, &none, 0);
		if (k) {
			bpf_map_delete_elem(ni->rt->map_fd[SPIN_M_RINGS], &k);
			bpf_map_delete_elem(ni->rt->map_fd[SPIN_M_WINS], &k);
			bpf_map_delete_elem(ni->rt->map_fd[SPIN_M_PUTQS], &k);
			bpf_map_delete_elem(ni->rt->map_fd[SPIN_M_MSTATES], &k);
			/* an empty slot speaks as the node (spin_attach) */
			__atomic_store_n(&ni->rt->cfg->proc_rank[k], ni->rt->cfg->my_rank, __ATOMIC_RELEASE);
			__atomic_store_n(&ni->rt->cfg->proc_pid[k], ni->rt->cfg->my_pid, __ATOMIC_RELEASE);
		}
	}
	spin_unlock(ni->rt);
	ni->slot_held = false;
}

/* A frame from this process's ring (SPIN_EV_FRAME): where its socket's go. */
static void ptl_frame_in(void *ctx, const uint8_t *f, uint32_t len)
{
	struct ptl_ni *ni = ctx;

	spin_xsk_lo_push(ni->xsk, f, len);
}

static int map_from_job(struct ptl_ni *ni, const struct spin_job *j)
{
	size_t n = j->nhosts ? j->nhosts : 1;

	ni->map = calloc(n, sizeof(*ni->map));
	if (!ni->map)
		return PTL_NO_SPACE;
	ni->map_size = n;
	for (size_t r = 0; r < j->nhosts; r++) {
		ni->map[r].phys.nid = ntohl(j->hosts[r].ip.s_addr);
		ni->map[r].phys.pid = ni->pid;	/* one process per host */
	}
	if (!j->nhosts) {
		ni->map[0].phys.nid = ni->nid;
		ni->map[0].phys.pid = ni->pid;
	}
	return PTL_OK;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *e = getenv(name);
	char *end;
	unsigned long long v;

	if (!e || !*e)
		return def;
	v = strtoull(e, &end, 0);
	return *end ? def : v;
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void default_limits(ptl_ni_limits_t *l)
{
	memset(l, 0, sizeof(*l));
	l->max_entries = PTL_N_ME;
	l->max_unexpected_headers = PTL_N_UNEX;	/* the most; the default is less */
	l->max_mds = PTL_N_MD;
	l->max_cts = PTL_N_CT;
	l->max_eqs = PTL_N_EQ;
	l->max_pt_index = PTL_PT_HALF - 1;	/* per NI: the halves of the runtime's */
	l->max_iovecs = PTL_MAX_IOVECS;
	l->max_list_size = PTL_N_ME;	/* no per-portal or per-list cap */
	l->max_triggered_ops = PTL_N_TRIG;
	l->max_msg_size = SPIN_MAX_MSG;
	l->max_atomic_size = PTL_MAX_ATOMIC;
	l->max_fetch_atomic_size = PTL_MAX_ATOMIC;
	l->max_waw_ordered_size = PTL_MAX_ATOMIC;
	l->max_war_ordered_size = 8;
	l->max_volatile_size = 0;
	l->features = PTL_TARGET_BIND_INACCESSIBLE;
}

/* a desired count: what was asked for if spin has it, else spin's most (a
 * negative value asks for no limit) */
static int lim_int(int want, int most)
{
	return want < 0 || want > most ? most : want;
}

static ptl_size_t lim_size(ptl_size_t want, ptl_size_t most)
{
	return want > most ? most : want;
}

/*
 * The limits of a view at its first PtlNIInit: spin's (ni->limits), or
 * less where desired asks for less (as the reference implementation,
 * which clamps each to its range).  A later PtlNIInit of the same view
 * gets them as they are.  The counts are enforced: PTL_NO_SPACE beyond
 * max_eqs, max_cts, max_mds, max_entries, max_triggered_ops;
 * PTL_LIST_TOO_LONG beyond max_list_size on one portal index;
 * PTL_ARG_INVALID beyond max_pt_index, max_iovecs, max_msg_size,
 * max_atomic_size, max_fetch_atomic_size; flow control (or a dropped
 * message) beyond max_unexpected_headers.  Features are spin's.
 */
static void set_limits(struct ptl_ni *ni, int view, const ptl_ni_limits_t *d)
{
	const ptl_ni_limits_t *m = &ni->limits;
	ptl_ni_limits_t *l = &ni->lim[view];

	*l = *m;
	l->max_unexpected_headers = PTL_UNEX_DEFAULT;
	if (!d)
		return;
	l->max_entries = lim_int(d->max_entries, m->max_entries);
	l->max_unexpected_headers = lim_int(d->max_unexpected_headers, m->max_unexpected_headers);
	l->max_mds = lim_int(d->max_mds, m->max_mds);
	l->max_cts = lim_int(d->max_cts, m->max_cts);
	l->max_eqs = lim_int(d->max_eqs, m->max_eqs);
	l->max_pt_index = lim_int(d->max_pt_index, m->max_pt_index);
	l->max_iovecs = lim_int(d->max_iovecs, m->max_iovecs);
	l->max_list_size = lim_int(d->max_list_size, m->max_list_size);
	l->max_triggered_ops = lim_int(d->max_triggered_ops, m->max_triggered_ops);
	l->max_msg_size = lim_size(d->max_msg_size, m->max_msg_size);
	l->max_atomic_size = lim_size(d->max_atomic_size, m->max_atomic_size);
	l->max_fetch_atomic_size = lim_size(d->max_fetch_atomic_size, m->max_fetch_atomic_size);
	l->max_waw_ordered_size = lim_size(d->max_waw_ordered_size, m->max_waw_ordered_size);
	l->max_war_ordered_size = lim_size(d->max_war_ordered_size, m->max_war_ordered_size);
	l->max_volatile_size = lim_size(d->max_volatile_size, m->max_volatile_size);
}

/* entries of a view: linked, or reserved by a triggered append */
static uint32_t view_entries(struct ptl_ni *ni, int view)
{
	uint32_t n = 0;

	for (uint32_t up = 0; up < PTL_PT_HALF; up++)
		n += ni->mx_pt_n[ptl_pt_rt(view, up)];
	for (int i = 0; ni->n_trig > 0 && i < PTL_N_TRIG; i++)
		if (ni->trig[i].used && ni->trig[i].kind == TRIG_ME_APPEND && ni->trig[i].me_view == view)
			n++;
	return n;
}

/* Open the runtime another process attached while this one tried to:
 * its pins appear one by one, and until the last one is there spin_open
 * finds them incomplete (-SPIN_ENOENT; once they are, spin_open waits
 * for its spin_cfg).  Waits while the interface's pin directory exists,
 * up to SPIN_OPEN_WAIT_MS.  Beside stress-ng one of 16 ranks of
 * ptl/mpirun_mproc opened too early and gave up. */
static int attach_lost(struct ptl_ni *ni)
{
	struct spin_pins p;
	int err, there;

	for (int t = 0;; t++) {
		err = spin_open(ni->ifname, &ni->rt);
		if (err != -SPIN_ENOENT || t >= SPIN_OPEN_WAIT_MS / 10)
			return err;
		there = !spin_pins_open(ni->ifname, SPIN_PINS_OPEN, &p);
		spin_pins_close(&p);
		if (!there)
			return err;
		usleep(10000);
	}
}

static int ni_create(ptl_interface_t iface, unsigned int options, ptl_pid_t pid,
		     struct ptl_ni **out)
{
	char ifbuf[IF_NAMESIZE] = "";
	const char *ifname;
	struct spin_job job = {};
	uint32_t key;
	struct spin_auth auth, rt_auth;
	struct spin_status st;
	struct ptl_ni *ni;
	struct spin_xsk_opts xo = { .queue = 0,
				    .frames = (uint32_t)env_u64("SPIN_PTL_FRAMES", 16384) };
	int err, rc = PTL_FAIL, use_pmix;
	pthread_condattr_t ca;

	if (iface == PTL_IFACE_DEFAULT) {
		ifname = default_iface(ifbuf, sizeof(ifbuf));
		if (!ifname)
			return ptl_seterr(PTL_ARG_INVALID,
					  "PtlNIInit: no interface: set SPIN_IFACE (no single non-loopback IPv4 interface)");
	} else {
		if (!if_indextoname(iface, ifbuf))
			return ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: no interface with index %u", iface);
		ifname = ifbuf;
	}
	ni = calloc(1, sizeof(*ni));
	if (!ni)
		return PTL_NO_SPACE;
	pthread_mutex_init(&ni->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ni->cv, &ca);
	pthread_cond_init(&ni->bg_cv, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(ni->ifname, sizeof(ni->ifname), "%s", ifname);
	ni->options = options;
	ni->gen = (uint8_t)(getpid() & 0xff) ?: 1;
	ni->timeout_ms = env_u64("SPIN_PTL_TIMEOUT_MS", 2000);
	ni->spin_us = env_u64("SPIN_PTL_SPIN_US", 1000);
	ni->wake_us = env_u64("SPIN_PTL_WAKE_US", 0);
	ni->poll_us = env_u64("SPIN_PTL_POLL_US", 2000) ?: 2000;
	if (ni->poll_us > 60000000)
		ni->poll_us = 60000000;	/* poll() takes an int of ms */
	/* reliable delivery (docs/reliable.md) */
	ni->reliable = env_u64("SPIN_PTL_RELIABLE", 1) != 0;
	ni->uid = (uint32_t)geteuid();
	ni->rto_min_us = env_u64("SPIN_PTL_RTO_MIN_US", 1000) ?: 1;
	ni->rto_max_us = env_u64("SPIN_PTL_RTO_MAX_US", 200000);
	if (ni->rto_max_us < ni->rto_min_us)
		ni->rto_max_us = ni->rto_min_us;
	ni->cc_on = env_u64("SPIN_PTL_CC", 1) != 0;
	ni->tlp_on = env_u64("SPIN_PTL_TLP", 1) != 0;
	ni->rack_on = env_u64("SPIN_PTL_RACK", 1) != 0;
	/* congestion window, packets: 8 <= init <= max <= 2^20 */
	ni->cwnd_min = 8;
	ni->cwnd_max = (uint32_t)clamp_u64(env_u64("SPIN_PTL_CWND_MAX", 4096), ni->cwnd_min, 1u << 20);
	ni->cwnd_init = (uint32_t)clamp_u64(env_u64("SPIN_PTL_CWND_INIT", 64), ni->cwnd_min, ni->cwnd_max);
	ptl_rel_init(ni);
	ni->poke_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	for (int i = 0; i < SPIN_MAX_ME; i++)
		ni->me_by_rt[i] = -1;
	for (int i = 0; i < PTL_N_EQ; i++)
		ni->eq[i].gen = 1;
	for (int i = 0; i < PTL_N_CT; i++)
		ni->ct[i].gen = 1;
	for (int i = 0; i < PTL_N_MD; i++)
		ni->md[i].gen = 1;
	for (int i = 0; i < PTL_N_HANDLER; i++)
		ni->hd[i].gen = 1;
	default_limits(&ni->limits);

	/* the job: rank, size, peers (a logical NI needs it; a physical one
	 * uses it when it is there, to know its peers' addresses); from a
	 * PMIx launcher (mpirun, srun) unless a hostfile or a rendezvous
	 * directory is given or SPIN_PMIX=0 (lib/pmix.c) */
	use_pmix = spin_pmix_wanted();
	if (use_pmix < 0) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	if (use_pmix) {
		/* a rank or size variable PMIx contradicts is the caller's */
		err = spin_pmix_init(&job);
		if (err) {
			rc = ptl_seterr(err == -SPIN_EUSAGE ? PTL_ARG_INVALID : PTL_FAIL, "PtlNIInit: %s",
					spin_errmsg());
			goto fail;
		}
	} else {
		err = spin_job_load(&job, NULL);
	}
	if (err && (options & PTL_NI_LOGICAL)) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	if (err)
		memset(&job, 0, sizeof(job));
	ni->rank = job.rank;
	ni->size = job.size ? job.size : 1;
	ni->pid = pid == PTL_PID_ANY ? (uint32_t)getpid() & 0xffff : pid;

	if (spin_job_key_env(&key) || spin_auth_key_env(&auth)) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	err = spin_open(ni->ifname, &ni->rt);
	if (err == -SPIN_ENOENT) {
		struct spin_attach_opts ao = {
			.ifname = ni->ifname, .rank = ni->rank, .pid = ni->pid,
			.generic = env_u64("SPIN_GENERIC", 0) != 0,
			.wake_direct = env_u64("SPIN_WAKE_DIRECT", 0) != 0,
			.host_pages = (uint32_t)env_u64("SPIN_PTL_HOST_PAGES", 0),
			.job_key = key,
			.auth = auth,
		};

		err = spin_attach(&ao, &ni->rt);
		if (err == -SPIN_EXDP && !ao.generic && !getenv("SPIN_GENERIC")) {
			/* the interface has no native XDP (driver, MTU): generic
			 * XDP, which the placement of shipped handlers reports */
			spin_warn("no native XDP on '%s', attaching generic XDP (%s)", ni->ifname,
				  spin_errmsg());
			ao.generic = true;
			err = spin_attach(&ao, &ni->rt);
		}
		if (err == -SPIN_EEXIST) {
			/* another process attached it first, or another XDP
			 * program is on the interface (then say that) */
			char why[256];

			snprintf(why, sizeof(why), "%s", spin_errmsg());
			if (attach_lost(ni))
				spin_seterr(SPIN_EEXIST, "%s", why);
			else
				err = 0;
		}
	}
	if (err) {
		rc = ptl_seterr(err == -SPIN_ENODEV || err == -SPIN_EUSAGE ? PTL_ARG_INVALID : PTL_FAIL,
				"PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	/* the job's key is the runtime's: a process sends with the runtime's */
	if (key && ni->rt->cfg->job_key != key) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: the runtime on %s was attached %s, not with "
				"SPIN_JOB_KEY (run 'spinctl detach %s' first, or use the same key)",
				ni->ifname, ni->rt->cfg->job_key ? "with another job key" : "without a job key",
				ni->ifname);
		goto fail;
	}
	/* ... and so is its auth key */
	spin_rt_auth(ni->rt, &rt_auth);
	if (auth.on && (!rt_auth.on || rt_auth.k0 != auth.k0 || rt_auth.k1 != auth.k1)) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: the runtime on %s was attached %s, not with "
				"SPIN_AUTH_KEY (run 'spinctl detach %s' first, or use the same key)",
				ni->ifname, rt_auth.on ? "with another auth key" : "without an auth key",
				ni->ifname);
		goto fail;
	}
	if (getenv("SPIN_WAKE_DIRECT") &&
	    (env_u64("SPIN_WAKE_DIRECT", 0) != 0) == !!(ni->rt->cfg->flags & SPIN_CFG_F_WAKE_DEFER))
		spin_warn("SPIN_WAKE_DIRECT=%s has no effect: the runtime on %s was attached before, "
			  "with %s wake-ups (run 'spinctl detach %s' first)",
			  getenv("SPIN_WAKE_DIRECT"), ni->ifname,
			  ni->rt->cfg->flags & SPIN_CFG_F_WAKE_DEFER ? "deferred" : "direct", ni->ifname);
	if (spin_get_status(ni->rt, &st)) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	ni->nid = ntohl(st.cfg.my_ip);
	if (use_pmix) {
		struct in_addr me = { .s_addr = st.cfg.my_ip };

		err = spin_pmix_exchange(&job, me, (int)env_u64("SPIN_RENDEZVOUS_MS", 30000));
		if (err) {
			rc = ptl_seterr(PTL_FAIL, "PtlNIInit: %s", spin_errmsg());
			goto fail;
		}
	} else if (!job.nhosts && job.size > 1 && getenv("SPIN_RENDEZVOUS")) {
		struct in_addr me = { .s_addr = st.cfg.my_ip };

		err = spin_job_rendezvous(&job, getenv("SPIN_RENDEZVOUS"), me,
					  (int)env_u64("SPIN_RENDEZVOUS_MS", 30000));
		if (err) {
			rc = ptl_seterr(PTL_FAIL, "PtlNIInit: %s", spin_errmsg());
			goto fail;
		}
	}
	if (!job.nhosts && job.size > 1) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: rank %u of %u but no peer addresses: give a "
				"hostfile (SPIN_HOSTFILE), a shared directory (SPIN_RENDEZVOUS) or start "
				"it with a PMIx launcher (SPIN_PMIX=1)",
				job.rank, job.size);
		goto fail;
	}
	/* this process's slot on the interface: in a job, its index among
	 * the ranks at its address (what its peers address it by) */
	rc = slot_take(ni, job.nhosts && job.rank < job.nhosts ? (int)spin_job_slot(&job, job.rank) : -1,
		       pid == PTL_PID_ANY);
	if (rc != PTL_OK)
		goto fail;
	xo.queue = ptl_slot;
	err = spin_xsk_open(ni->rt, &xo, &ni->xsk);
	if (err && ptl_slot) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: process slot %u takes queue %u of %s: %s (a veth "
				"needs numrxqueues and numtxqueues above %u; a NIC that many channels: "
				"ethtool -L)", ptl_slot, ptl_slot, ni->ifname, spin_errmsg(), ptl_slot);
		goto fail;
	}
	if (err) {
		rc = ptl_seterr(err == -SPIN_EEXIST ? PTL_PID_IN_USE : PTL_FAIL,
				"PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	spin_xsk_set_ident(ni->xsk, ni->rank, ni->pid);
	reclaim_stale(ni);
	/* slot 0 speaks for the node where the runtime has one identity
	 * (spin_cfg; spinctl shows it) */
	if (ptl_slot == 0) {
		__atomic_store_n(&ni->rt->cfg->my_rank, ni->rank, __ATOMIC_RELEASE);
		__atomic_store_n(&ni->rt->cfg->my_pid, ni->pid, __ATOMIC_RELEASE);
	}
	ni->win = spin_host_mem(ni->rt, &ni->win_len);
	if (!ni->win) {
		rc = ptl_seterr(PTL_FAIL, "PtlNIInit: %s", spin_errmsg());
		goto fail;
	}
	if (job.nhosts) {
		err = spin_job_peers(ni->rt, &job);
		if (err < 0) {
			rc = ptl_seterr(PTL_FAIL, "PtlNIInit: %s", spin_errmsg());
			goto fail;
		}
	}
	if ((rc = map_from_job(ni, &job)) != PTL_OK)
		goto fail;
	spin_job_free(&job);
	/* the event ring is opened on first use; its frames go where the
	 * socket's would */
	ni->rt->frame_fn = ptl_frame_in;
	ni->rt->frame_ctx = ni;
	spin_events_poll(ni->rt, NULL, NULL, 0);
	if (pthread_create(&ni->thr, NULL, ptl_progress_thread, ni) == 0) {
		ni->thr_on = true;
		pthread_setname_np(ni->thr, "ptl-progress");	/* for top -H, perf */
	}
	*out = ni;
	return PTL_OK;
fail:
	spin_job_free(&job);
	if (ni->xsk)
		spin_xsk_close(ni->xsk);
	if (ni->rt)
		slot_release(ni);
	if (ni->rt)
		spin_close(ni->rt);
	free(ni->map);
	free(ni);
	return rc;
}

int PtlNIInit(ptl_interface_t iface, unsigned int options, ptl_pid_t pid,
	      const ptl_ni_limits_t *desired, ptl_ni_limits_t *actual,
	      ptl_handle_ni_t *ni_handle)
{
	struct ptl_ni *ni = NULL;
	unsigned int addr = options & (PTL_NI_LOGICAL | PTL_NI_PHYSICAL);
	int rc, view;

	if (!ni_handle)
		return PTL_ARG_INVALID;
	if (!!(options & PTL_NI_MATCHING) == !!(options & PTL_NI_NO_MATCHING))
		return ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: PTL_NI_MATCHING or PTL_NI_NO_MATCHING, one of them");
	if (!!(options & PTL_NI_LOGICAL) == !!(options & PTL_NI_PHYSICAL))
		return ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: PTL_NI_LOGICAL or PTL_NI_PHYSICAL, one of them");
	if (options & ~(PTL_NI_MATCHING | PTL_NI_NO_MATCHING | PTL_NI_LOGICAL | PTL_NI_PHYSICAL))
		return ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: unknown options 0x%x", options);
	view = (options & PTL_NI_NO_MATCHING) ? PTL_VIEW_NOMATCH : PTL_VIEW_MATCH;
	if (pid != PTL_PID_ANY && pid > 0xffff)
		return ptl_seterr(PTL_ARG_INVALID, "PtlNIInit: pid %u out of range (0..65535)", pid);
	pthread_mutex_lock(&g_mu);
	if (!g_init) {
		pthread_mutex_unlock(&g_mu);
		return PTL_NO_INIT;
	}
	if (ptl_g_ni) {
		/* the other kind (matching, non-matching) is a view of the
		 * same interface: the same addressing */
		ni = ptl_g_ni;
		if (ni->options != addr) {
			pthread_mutex_unlock(&g_mu);
			return ptl_seterr(PTL_ARG_INVALID,
					  "PtlNIInit: this process has a %s NI already: its matching and non-matching NIs share the addressing",
					  ni->options & PTL_NI_LOGICAL ? "logical" : "physical");
		}
		ni->refs++;
		if (ni->view_refs[view]++ == 0)
			set_limits(ni, view, desired);
	} else {
		rc = ni_create(iface, addr, pid, &ni);
		if (rc != PTL_OK) {
			pthread_mutex_unlock(&g_mu);
			return rc;
		}
		ni->refs = 1;
		ni->view_refs[view] = 1;
		set_limits(ni, view, desired);
		ptl_g_ni = ni;
	}
	if (actual)
		*actual = ni->lim[view];
	*ni_handle = ptl_mkh(PTL_H_NI, (uint32_t)view, ni->gen);
	pthread_mutex_unlock(&g_mu);
	/* accepting shipped handlers ($SPIN_SHIP_ALLOW): the matching NI's */
	if (view == PTL_VIEW_MATCH && ni->view_refs[view] == 1) {
		rc = ptl_ship_init(ni, *ni_handle);
		if (rc != PTL_OK) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s", PtlSpinErrmsg());
			PtlNIFini(*ni_handle);
			return ptl_seterr(rc, "%s", msg);
		}
	}
	return PTL_OK;
}

static void me_free(struct ptl_ni *ni, struct ptl_mer *m);
static void trig_drop(struct ptl_ni *ni, struct ptl_trig *t);
static void post_auto_unlink(struct ptl_ni *ni, uint32_t pt, const ptl_me_t *me, void *user_ptr,
			     ptl_list_t list);

/*
 * PtlNIFini of one view while the other stays open: what was allocated on
 * it goes (its entries unlinked, portal table entries freed, triggered
 * operations on its counters or MDs cancelled, its MDs, counters and
 * queues freed).  An MD that an operation still waits on stays until the
 * answer comes; its events go nowhere.  Lock held.
 */
static void view_close(struct ptl_ni *ni, int view)
{
	ptl_progress(ni);
	for (int i = 0; i < PTL_N_TRIG; i++) {
		struct ptl_trig *t = &ni->trig[i];
		struct ptl_mdr *md = NULL;

		if (!t->used)
			continue;
		if (t->kind == TRIG_PUT || t->kind == TRIG_GET)
			md = ptl_md_get(ni, t->md);
		else if (t->kind == TRIG_AMO)
			md = ptl_md_get(ni, t->amo.put_md);
		if (ni->ct[t->ct].view == view || (md && md->view == view) ||
		    (t->kind == TRIG_ME_APPEND && t->me_view == view))
			trig_drop(ni, t);
	}
	for (uint32_t i = 0; i < ni->me_n; i++) {
		struct ptl_mer *m = ptl_me_at(ni, i);

		if (!m->used || ptl_pt_view(m->pt) != view)
			continue;
		if (m->rt >= 0)
			spin_me_unlink(ni->rt, m->rt);
		me_free(ni, m);
	}
	for (uint32_t up = 0; up < PTL_PT_HALF; up++) {
		uint32_t p = ptl_pt_rt(view, up);

		if (!ni->pt[p].used)
			continue;
		spin_pt_free(ni->rt, p);
		ptl_unex_clear(ni, p);
		ni->pt[p].used = false;
	}
	for (int i = 0; i < PTL_N_MD; i++)
		if (ni->md[i].used && ni->md[i].view == view && !ni->md[i].busy) {
			ptl_buf_put(&ni->md[i].buf);
			ni->md[i].used = false;
			ni->md[i].gen = ptl_next_gen(ni->md[i].gen);
		}
	for (int i = 0; i < PTL_N_CT; i++)
		if (ni->ct[i].used && ni->ct[i].view == view) {
			ni->ct[i].used = false;
			ni->ct[i].gen = ptl_next_gen(ni->ct[i].gen);
		}
	for (int i = 0; i < PTL_N_EQ; i++)
		if (ni->eq[i].used && ni->eq[i].view == view) {
			free(ni->eq[i].ring);
			ni->eq[i].ring = NULL;
			ni->eq[i].used = false;
			ni->eq[i].gen = ptl_next_gen(ni->eq[i].gen);
		}
	pthread_cond_broadcast(&ni->cv);
}

static void ni_destroy(struct ptl_ni *ni)
{
	ptl_lock(ni);
	ni->stop = true;
	pthread_cond_broadcast(&ni->bg_cv);
	pthread_cond_broadcast(&ni->cv);
	ptl_unlock(ni);
	if (ni->thr_on)
		pthread_join(ni->thr, NULL);
	/* unlink what this process linked; the runtime stays attached */
	for (uint32_t i = 0; i < ni->me_n; i++) {
		struct ptl_mer *m = ptl_me_at(ni, i);

		if (m->used && m->rt >= 0)
			spin_me_unlink(ni->rt, m->rt);
		ptl_buf_put(&m->buf);
	}
	ptl_me_table_fini(ni);
	ptl_unex_fini(ni);
	for (int i = 0; i < PTL_N_MD; i++)
		ptl_buf_put(&ni->md[i].buf);
	for (int i = 0; i < PTL_N_TRIG; i++)
		if (ni->trig[i].used && ni->trig[i].kind == TRIG_ME_APPEND)
			ptl_buf_put(&ni->trig[i].me_buf);
	for (uint32_t p = 0; p < SPIN_MAX_PT; p++)
		if (ni->pt[p].used)
			spin_pt_free(ni->rt, p);
	for (int i = 0; i < PTL_N_HANDLER; i++)
		if (ni->hd[i].used)
			spin_handler_unload(ni->rt, ni->hd[i].name);
	ptl_data_fini(ni);
	ptl_rel_fini(ni);
	__atomic_and_fetch(&ni->rt->cfg->flags, ~SPIN_CFG_F_RB_QUIET, __ATOMIC_SEQ_CST);
	for (int i = 0; i < PTL_N_EQ; i++)
		free(ni->eq[i].ring);
	for (int i = 0; i < PTL_N_HPU; i++)
		free(ni->hpu[i]);
	spin_xsk_close(ni->xsk);
	slot_release(ni);
	spin_close(ni->rt);
	free(ni->map);
	if (ni->poke_fd >= 0)
		close(ni->poke_fd);
	pthread_mutex_destroy(&ni->mu);
	pthread_cond_destroy(&ni->cv);
	pthread_cond_destroy(&ni->bg_cv);
	free(ni);
}

int PtlNIFini(ptl_handle_ni_t nih)
{
	struct ptl_ni *ni;

	pthread_mutex_lock(&g_mu);
	if (!g_init) {
		pthread_mutex_unlock(&g_mu);
		return PTL_NO_INIT;
	}
	ni = ptl_g_ni;
	if (!ni || !ni_handle_ok(ni, nih)) {
		pthread_mutex_unlock(&g_mu);
		return PTL_ARG_INVALID;
	}
	if (ptl_hidx(nih) == PTL_VIEW_MATCH && ni->view_refs[PTL_VIEW_MATCH] == 1 && ni->ship) {
		/* shipped handlers: removed from the peers and from here,
		 * through the API, so without g_mu */
		pthread_mutex_unlock(&g_mu);
		ptl_ship_fini(ni, nih);
		pthread_mutex_lock(&g_mu);
		if (ptl_g_ni != ni || !ni_handle_ok(ni, nih)) {
			pthread_mutex_unlock(&g_mu);
			return PTL_ARG_INVALID;
		}
	}
	if (--ni->view_refs[ptl_hidx(nih)] == 0 && ni->refs > 1) {
		ptl_lock(ni);
		view_close(ni, (int)ptl_hidx(nih));
		ptl_unlock(ni);
	}
	if (--ni->refs > 0) {
		pthread_mutex_unlock(&g_mu);
		return PTL_OK;
	}
	ptl_g_ni = NULL;
	pthread_mutex_unlock(&g_mu);
	ni_destroy(ni);
	return PTL_OK;
}

void PtlAbort(void)
{
	struct ptl_ni *ni;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return;
	if (ni->waiters > 0) {
		uint64_t one = 1;

		ni->aborted = true;
		/* the waits on cv, the one in poll() (its poke fd), and
		 * those that spin see the flag */
		pthread_cond_broadcast(&ni->cv);
		if (ni->poke_fd >= 0)
			(void)!write(ni->poke_fd, &one, sizeof(one));
	}
	ptl_unlock(ni);
}

int PtlStartBundle(ptl_handle_ni_t nih)
{
	struct ptl_ni *ni;
	int rc;

	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	ni->bundle++;
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlEndBundle(ptl_handle_ni_t nih)
{
	struct ptl_ni *ni;
	int rc;

	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	rc = PTL_OK;
	if (ni->bundle <= 0)
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlEndBundle without PtlStartBundle");
	else if (--ni->bundle == 0 && spin_xsk_flush(ni->xsk))
		rc = ptl_seterr(PTL_FAIL, "PtlEndBundle: %s", spin_errmsg());
	ptl_unlock(ni);
	return rc;
}

int PtlNIStatus(ptl_handle_ni_t nih, ptl_sr_index_t reg, ptl_sr_value_t *status)
{
	struct spin_stats s;
	struct ptl_ni *ni;
	int rc;

	if (!status || (unsigned)reg >= PTL_SR_LAST)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	*status = 0;
	if (reg == PTL_SR_DROP_COUNT && !spin_stats_read(ni->rt, &s)) {
		uint64_t d = ni->drops;

		for (int i = 0; i < SPIN_DROP_MAX; i++)
			if (i != SPIN_DROP_TRUNCATED)
				d += s.drops[i];
		*status = (ptl_sr_value_t)d;
	} else if (reg == PTL_SR_OPERATIONS_VIOLATIONS) {
		*status = 0;
	}
	ptl_unlock(ni);
	return PTL_OK;
}

/* --------------------------------------------------------- addressing -- */

int PtlSetMap(ptl_handle_ni_t nih, ptl_size_t n, const ptl_process_t *mapping)
{
	struct { bool valid; uint32_t nid; uint8_t mac[6]; } seen[16] = { 0 };
	struct ptl_ni *ni;
	ptl_process_t *m;
	uint16_t *slots;
	uint32_t *nids;
	int rc;

	if (!mapping || n == 0 || n > SPIN_MAX_PEERS)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	if (!(ni->options & PTL_NI_LOGICAL)) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	m = calloc(n, sizeof(*m));
	if (!m) {
		ptl_unlock(ni);
		return PTL_NO_SPACE;
	}
	memcpy(m, mapping, n * sizeof(*m));
	/* ranks at one nid are processes there, by slot (lower ranks first) */
	slots = calloc(n, sizeof(*slots));
	nids = calloc(n, sizeof(*nids));
	for (uint32_t r = 0; nids && r < n; r++)
		nids[r] = m[r].phys.nid;
	if (!slots || !nids || spin_slots_of(nids, (uint32_t)n, slots)) {
		free(slots);
		free(nids);
		free(m);
		ptl_unlock(ni);
		return PTL_NO_SPACE;
	}
	free(nids);
	for (uint32_t r = 0; r < n; r++) {
		struct spin_peer_spec ps = { .rank = r, .pid = m[r].phys.pid, .slot = slots[r] };

		/* beyond the processes an interface takes: no peer (a send to
		 * it is PTL_NI_UNDELIVERABLE) */
		if (slots[r] >= SPIN_MAX_PROCS) {
			spin_peer_del(ni->rt, r);
			continue;
		}
		uint32_t h = m[r].phys.nid % 16;
		struct spin_peer got;

		ps.ip.s_addr = htonl(m[r].phys.nid);
		/* a job has many ranks per host: a nid's MAC is resolved once
		 * (a neighbour lookup), not once per rank */
		if (seen[h].valid && seen[h].nid == m[r].phys.nid)
			memcpy(ps.mac, seen[h].mac, 6);
		if (spin_peer_add(ni->rt, &ps) || spin_peer_get(ni->rt, r, &got)) {
			rc = ptl_seterr(PTL_ARG_INVALID, "PtlSetMap: rank %u: %s", r, spin_errmsg());
			free(slots);
			free(m);
			ptl_unlock(ni);
			return rc;
		}
		seen[h].valid = true;
		seen[h].nid = m[r].phys.nid;
		memcpy(seen[h].mac, got.mac, 6);
	}
	free(slots);
	free(ni->map);
	ni->map = m;
	ni->map_size = n;
	ni->size = n;
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlGetMap(ptl_handle_ni_t nih, ptl_size_t n, ptl_process_t *mapping, ptl_size_t *actual)
{
	struct ptl_ni *ni;
	int rc;

	if (!actual || (n && !mapping))
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	*actual = ni->map_size;
	if (mapping)
		memcpy(mapping, ni->map, (n < ni->map_size ? n : ni->map_size) * sizeof(*mapping));
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlGetId(ptl_handle_ni_t nih, ptl_process_t *id)
{
	struct ptl_ni *ni;
	int rc;

	if (!id)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	memset(id, 0, sizeof(*id));
	if (ni->options & PTL_NI_LOGICAL) {
		id->rank = ni->rank;
	} else {
		id->phys.nid = ni->nid;
		id->phys.pid = ni->pid;
	}
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlGetPhysId(ptl_handle_ni_t nih, ptl_process_t *id)
{
	struct ptl_ni *ni;
	int rc;

	if (!id)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	id->phys.nid = ni->nid;
	id->phys.pid = ni->pid;
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlGetUid(ptl_handle_ni_t nih, ptl_uid_t *uid)
{
	struct ptl_ni *ni;
	int rc;

	if (!uid)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	*uid = ni->uid;
	ptl_unlock(ni);
	return PTL_OK;
}

ptl_process_t ptl_initiator(struct ptl_ni *ni, uint32_t rank, uint32_t pid)
{
	ptl_process_t p;

	memset(&p, 0, sizeof(p));
	if (ni->options & PTL_NI_LOGICAL) {
		p.rank = rank;
	} else {
		p.phys.nid = rank < ni->map_size ? ni->map[rank].phys.nid : 0;
		p.phys.pid = pid;
	}
	return p;
}

ptl_ni_fail_t ptl_fail_of(uint32_t f)
{
	switch (f) {
	case SPIN_FAIL_OK: return PTL_NI_OK;
	case SPIN_FAIL_PT_DISABLED: return PTL_NI_PT_DISABLED;
	case SPIN_FAIL_TIMEOUT:
	case SPIN_FAIL_NO_TARGET: return PTL_NI_UNDELIVERABLE;
	case SPIN_FAIL_OP_VIOLATION: return PTL_NI_OP_VIOLATION;
	default: return PTL_NI_DROPPED;
	}
}

/* ---------------------------------------------------------- event queues -- */

int PtlEQAlloc(ptl_handle_ni_t nih, ptl_size_t count, ptl_handle_eq_t *eqh)
{
	struct ptl_ni *ni;
	int rc;

	int view;

	if (!eqh || count == 0 || count > (1u << 24))
		return PTL_ARG_INVALID;
	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni)
		return rc;
	rc = 0;
	for (uint32_t i = 0; i < PTL_N_EQ; i++)
		rc += ni->eq[i].used && ni->eq[i].view == view;
	if (rc >= ni->lim[view].max_eqs) {
		ptl_unlock(ni);
		return ptl_seterr(PTL_NO_SPACE, "PtlEQAlloc: %d event queues (max_eqs)", rc);
	}
	rc = PTL_NO_SPACE;
	for (uint32_t i = 0; i < PTL_N_EQ; i++) {
		struct ptl_eq *q = &ni->eq[i];

		if (q->used)
			continue;
		q->ring = calloc(count, sizeof(ptl_event_t));
		if (!q->ring)
			break;
		q->cap = count;
		q->head = q->count = 0;
		q->dropped = false;
		q->used = true;
		q->view = (uint8_t)view;
		*eqh = ptl_mkh(PTL_H_EQ, i, q->gen);
		rc = PTL_OK;
		break;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlEQFree(ptl_handle_eq_t eqh)
{
	struct ptl_ni *ni;
	struct ptl_eq *q;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	q = ptl_eq_get(ni, eqh);
	if (!q) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	/* PTL_OK, PTL_NO_INIT or PTL_ARG_INVALID, as the specification lists:
	 * that nothing is attached to the queue is the caller's to ensure.
	 * A portal, MD or entry still naming it holds a stale handle: its
	 * events go nowhere (never to a queue allocated later in the slot,
	 * which has another generation) */
	free(q->ring);
	q->ring = NULL;
	q->used = false;
	q->gen = ptl_next_gen(q->gen);
	pthread_cond_broadcast(&ni->cv);
	ptl_unlock(ni);
	return PTL_OK;
}

/*
 * Flow control (PTL_PT_FLOWCTRL): a resource of portal pt ran out (its
 * event queue is down to its last slot, or the unexpected list is full).
 * The portal is disabled: the runtime refuses every later message with
 * PTL_NI_PT_DISABLED until PtlPTEnable, and PTL_EVENT_PT_DISABLED goes to
 * its queue (into the slot kept for it).  Events of messages the runtime
 * took before wait for room (on_event's back-pressure) instead of being
 * dropped.
 */
void ptl_pt_flowctl(struct ptl_ni *ni, uint32_t pt)
{
	struct ptl_ptr *p = pt < SPIN_MAX_PT ? &ni->pt[pt] : NULL;
	ptl_event_t ev = { .type = PTL_EVENT_PT_DISABLED, .ni_fail_type = PTL_NI_PT_DISABLED };

	if (!p || !p->used || !(p->options & PTL_PT_FLOWCTRL) || !p->enabled)
		return;
	p->enabled = false;	/* before posting: ptl_eq_post comes back here */
	if (spin_pt_enable(ni->rt, pt, false)) {
		p->enabled = true;	/* as it is in the runtime */
		ni->drops++;
		return;
	}
	ev.pt_index = ptl_pt_user(pt);
	ev.uid = ni->uid;
	ptl_eq_post(ni, p->eq, &ev);
}

void ptl_eq_post(struct ptl_ni *ni, ptl_handle_eq_t eqh, const ptl_event_t *ev)
{
	struct ptl_eq *q;

	if (eqh == PTL_EQ_NONE || !(q = ptl_eq_get(ni, eqh)))
		return;
	if (q->count == q->cap) {
		q->dropped = true;
		return;
	}
	q->ring[(q->head + q->count) % q->cap] = *ev;
	q->count++;
	pthread_cond_broadcast(&ni->cv);
	if (ni->ship_efd > 0 && eqh == ni->ship_eq) {
		uint64_t one = 1;	/* the ship thread (ptl_ship.c) sleeps on it */

		(void)!write(ni->ship_efd, &one, sizeof(one));
	}
	/* one slot left: the flow-controlled portals that post here stop
	 * taking messages, and it takes their PTL_EVENT_PT_DISABLED */
	if (q->count + 1 >= q->cap)
		for (uint32_t p = 0; p < SPIN_MAX_PT; p++)
			if (ni->pt[p].used && ni->pt[p].eq == eqh && ni->pt[p].enabled &&
			    (ni->pt[p].options & PTL_PT_FLOWCTRL))
				ptl_pt_flowctl(ni, p);
}

static int eq_pop(struct ptl_eq *q, ptl_event_t *ev)
{
	int rc;

	if (!q->count)
		return PTL_EQ_EMPTY;
	if (ev)
		*ev = q->ring[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	rc = q->dropped ? PTL_EQ_DROPPED : PTL_OK;
	q->dropped = false;
	return rc;
}

/* An event of queue eqh, without making progress (the ship thread:
 * others' progress posts its events). */
int ptl_eq_take(ptl_handle_eq_t eqh, ptl_event_t *ev)
{
	struct ptl_ni *ni;
	struct ptl_eq *q;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	q = ptl_eq_get(ni, eqh);
	rc = q ? eq_pop(q, ev) : PTL_ARG_INVALID;
	ptl_unlock(ni);
	return rc;
}

int PtlEQGet(ptl_handle_eq_t eqh, ptl_event_t *ev)
{
	struct ptl_ni *ni;
	struct ptl_eq *q;
	int rc;

	if (!ev)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	ptl_app_poll(ni);
	q = ptl_eq_get(ni, eqh);
	rc = q ? eq_pop(q, ev) : PTL_ARG_INVALID;
	ptl_unlock(ni);
	return rc;
}

struct eqpoll_arg {
	const ptl_handle_eq_t *h;
	unsigned int n;
	int bad;
};

static bool eqpoll_done(struct ptl_ni *ni, void *p)
{
	struct eqpoll_arg *a = p;

	for (unsigned int i = 0; i < a->n; i++) {
		struct ptl_eq *q = ptl_eq_get(ni, a->h[i]);

		if (!q) {
			a->bad = 1;
			return true;
		}
		if (q->count)
			return true;
	}
	return false;
}

int PtlEQPoll(const ptl_handle_eq_t *eqh, unsigned int size, ptl_time_t timeout,
	      ptl_event_t *ev, unsigned int *which)
{
	struct eqpoll_arg a = { eqh, size, 0 };
	struct ptl_ni *ni;
	int rc;

	if (!eqh || size == 0 || !ev)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	if (eqpoll_done(ni, &a) && a.bad) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	rc = ptl_wait(ni, eqpoll_done, NULL, &a, timeout);
	if (a.bad) {
		rc = PTL_ARG_INVALID;
	} else if (rc == PTL_OK) {
		rc = PTL_EQ_EMPTY;
		for (unsigned int i = 0; i < size; i++) {
			struct ptl_eq *q = ptl_eq_get(ni, eqh[i]);

			if (q && q->count) {
				rc = eq_pop(q, ev);
				if (which)
					*which = i;
				break;
			}
		}
	}
	ptl_unlock(ni);
	return rc;
}

int PtlEQWait(ptl_handle_eq_t eqh, ptl_event_t *ev)
{
	unsigned int which;

	return PtlEQPoll(&eqh, 1, PTL_TIME_FOREVER, ev, &which);
}

/* -------------------------------------------------------------- counters -- */

int PtlCTAlloc(ptl_handle_ni_t nih, ptl_handle_ct_t *cth)
{
	struct ptl_ni *ni;
	int rc;

	int view;

	if (!cth)
		return PTL_ARG_INVALID;
	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni)
		return rc;
	rc = 0;
	for (uint32_t i = 0; i < PTL_N_CT; i++)
		rc += ni->ct[i].used && ni->ct[i].view == view;
	if (rc >= ni->lim[view].max_cts) {
		ptl_unlock(ni);
		return ptl_seterr(PTL_NO_SPACE, "PtlCTAlloc: %d counters (max_cts)", rc);
	}
	rc = PTL_NO_SPACE;
	for (uint32_t i = 0; i < PTL_N_CT; i++) {
		if (ni->ct[i].used)
			continue;
		ni->ct[i].used = true;
		ni->ct[i].view = (uint8_t)view;
		ni->ct[i].v.success = ni->ct[i].v.failure = 0;
		ni->ct[i].sole_gen = 0;
		*cth = ptl_mkh(PTL_H_CT, i, ni->ct[i].gen);
		rc = PTL_OK;
		break;
	}
	ptl_unlock(ni);
	return rc;
}

static void trig_me_append(struct ptl_ni *ni, struct ptl_trig *t);
static void trig_me_unlink(struct ptl_ni *ni, struct ptl_trig *t);

/* A triggered operation that will not fire: what it holds goes (a
 * triggered append's reserved entry, whose handle is then stale). */
static void trig_drop(struct ptl_ni *ni, struct ptl_trig *t)
{
	if (t->kind == TRIG_ME_APPEND) {
		struct ptl_mer *m = ptl_me_get(ni, t->meh);

		if (m && m->rt < 0) {
			m->used = false;
			m->gen = ptl_next_gen(m->gen);
		}
		ptl_buf_put(&t->me_buf);
	}
	t->used = false;
	ni->n_trig--;
}

static void trig_cancel(struct ptl_ni *ni, uint32_t ct)
{
	for (int i = 0; i < PTL_N_TRIG; i++)
		if (ni->trig[i].used && ni->trig[i].ct == ct)
			trig_drop(ni, &ni->trig[i]);
}

int PtlCTFree(ptl_handle_ct_t cth)
{
	struct ptl_ni *ni;
	struct ptl_ct *c;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	c = ptl_ct_get(ni, cth);
	if (!c) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	trig_cancel(ni, (uint32_t)(c - ni->ct));
	c->used = false;
	c->gen = ptl_next_gen(c->gen);
	pthread_cond_broadcast(&ni->cv);
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlCTCancelTriggered(ptl_handle_ct_t cth)
{
	struct ptl_ni *ni;
	struct ptl_ct *c;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	c = ptl_ct_get(ni, cth);
	if (c)
		trig_cancel(ni, (uint32_t)(c - ni->ct));
	ptl_unlock(ni);
	return c ? PTL_OK : PTL_ARG_INVALID;
}

int PtlCTGet(ptl_handle_ct_t cth, ptl_ct_event_t *ev)
{
	struct ptl_ni *ni;
	struct ptl_ct *c;
	int rc;

	if (!ev)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	ptl_app_poll(ni);
	c = ptl_ct_get(ni, cth);
	if (c)
		*ev = c->v;
	ptl_unlock(ni);
	return c ? PTL_OK : PTL_ARG_INVALID;
}

struct ctpoll_arg {
	const ptl_handle_ct_t *h;
	const ptl_size_t *tests;
	unsigned int n;
	int bad;
	int hit;
};

static bool ctpoll_done(struct ptl_ni *ni, void *p)
{
	struct ctpoll_arg *a = p;

	for (unsigned int i = 0; i < a->n; i++) {
		struct ptl_ct *c = ptl_ct_get(ni, a->h[i]);

		if (!c) {
			a->bad = 1;
			return true;
		}
		if (c->v.success + c->v.failure >= a->tests[i]) {
			a->hit = (int)i;
			return true;
		}
	}
	return false;
}

/* The one entry whose runtime events count on counter ct, if its events
 * are wanted by nothing else while a caller waits on the counter: no event
 * queue gets its successes, no triggered operation waits on the counter,
 * the priority list.  Else NULL (its events wake the waiter, as all did). */
static struct ptl_mer *ct_sole_entry(struct ptl_ni *ni, ptl_handle_ct_t cth)
{
	struct ptl_ct *c = ptl_ct_get(ni, cth);
	struct ptl_mer *one = NULL;

	if (!c)
		return NULL;
	/* the entries have not changed since the last look */
	if (c->sole_gen == ni->me_gen + 1) {
		one = c->sole >= 0 ? ptl_me_at(ni, (uint32_t)c->sole) : NULL;
		goto trig;
	}
	c->sole_gen = ni->me_gen + 1;
	c->sole = -1;
	/* the linked entries counting on this counter's index (ptl_mx_link):
	 * exactly one, and it counts on this very counter.  (A reserved
	 * triggered append is not linked yet: it counts once it is.) */
	if (ni->mx_ct_n[ptl_hidx(cth)] == 1) {
		struct ptl_mer *m = ptl_me_at(ni, ni->mx_ct_x[ptl_hidx(cth)]);
		unsigned int o = m->me.options;

		if (!m->used || m->me.ct_handle != cth || !m->window || m->rt < 0 ||
		    m->list != PTL_PRIORITY_LIST ||
		    (!(o & (PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE)) &&
		     ni->pt[m->pt].eq != PTL_EQ_NONE))
			return NULL;
		one = m;
	} else if (ni->mx_ct_n[ptl_hidx(cth)] > 1) {
		return NULL;
	}
	c->sole = one ? (int)one->idx : -1;
trig:
	if (one && ni->n_trig > 0)
		for (int i = 0; i < PTL_N_TRIG; i++)
			if (ni->trig[i].used && ni->trig[i].ct == ptl_hidx(cth))
				return NULL;
	return one;
}

/* ptl_wait's arm for PtlCTPoll: each counter's sole entry wakes the
 * caller only for the event that brings the counter to its test. */
static bool ctpoll_arm(struct ptl_ni *ni, void *p)
{
	struct ctpoll_arg *a = p;
	bool sleep = true;

	for (unsigned int i = 0; i < a->n; i++) {
		struct ptl_ct *c = ptl_ct_get(ni, a->h[i]);
		struct ptl_mer *m = c ? ct_sole_entry(ni, a->h[i]) : NULL;
		uint64_t have = c ? c->v.success + c->v.failure : 0;

		if (m && have < a->tests[i] && !ptl_wake_arm(ni, m, a->tests[i] - have))
			sleep = false;
	}
	return sleep;
}

int PtlCTPoll(const ptl_handle_ct_t *cth, const ptl_size_t *tests, unsigned int size,
	      ptl_time_t timeout, ptl_ct_event_t *ev, unsigned int *which)
{
	struct ctpoll_arg a = { cth, tests, size, 0, -1 };
	struct ptl_ni *ni;
	int rc;

	if (!cth || !tests || size == 0 || !ev)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	rc = ptl_wait(ni, ctpoll_done, ctpoll_arm, &a, timeout);
	if (rc == PTL_ABORTED) {
		/* PtlAbort */
	} else if (a.bad) {
		rc = PTL_ARG_INVALID;
	} else if (a.hit >= 0) {
		*ev = ptl_ct_get(ni, cth[a.hit])->v;
		if (which)
			*which = (unsigned int)a.hit;
		rc = PTL_OK;
	} else {
		rc = PTL_CT_NONE_REACHED;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlCTWait(ptl_handle_ct_t cth, ptl_size_t test, ptl_ct_event_t *ev)
{
	unsigned int which;
	int rc = PtlCTPoll(&cth, &test, 1, PTL_TIME_FOREVER, ev, &which);

	return rc == PTL_CT_NONE_REACHED ? PTL_INTERRUPTED : rc;
}

void ptl_ct_count(struct ptl_ni *ni, ptl_handle_ct_t cth, bool ok, bool bytes, uint64_t n)
{
	struct ptl_ct *c;

	if (cth == PTL_CT_NONE || !(c = ptl_ct_get(ni, cth)))
		return;
	if (!ok)
		c->v.failure++;
	else
		c->v.success += bytes ? n : 1;
	ptl_ct_changed(ni, (uint32_t)(c - ni->ct));
}

static int ct_update(ptl_handle_ct_t cth, ptl_ct_event_t v, bool set)
{
	struct ptl_ni *ni;
	struct ptl_ct *c;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	c = ptl_ct_get(ni, cth);
	if (c) {
		if (set) {
			c->v = v;
		} else {
			c->v.success += v.success;
			c->v.failure += v.failure;
		}
		ptl_ct_changed(ni, (uint32_t)(c - ni->ct));
		ptl_poke(ni);
	}
	ptl_unlock(ni);
	return c ? PTL_OK : PTL_ARG_INVALID;
}

int PtlCTSet(ptl_handle_ct_t cth, ptl_ct_event_t v)
{
	return ct_update(cth, v, true);
}

int PtlCTInc(ptl_handle_ct_t cth, ptl_ct_event_t v)
{
	return ct_update(cth, v, false);
}

/* ------------------------------------------------------ triggered ops -- */

/* A counter changed: run the triggered operations it released, oldest
 * first (one may change the counter again). */
void ptl_ct_changed(struct ptl_ni *ni, uint32_t ct)
{
	for (int guard = 0; guard < PTL_N_TRIG && ni->n_trig > 0; guard++) {
		struct ptl_ct *c = &ni->ct[ct];
		struct ptl_trig t, *best = NULL;

		if (!c->used)
			return;
		for (int i = 0; i < PTL_N_TRIG; i++) {
			struct ptl_trig *x = &ni->trig[i];

			if (x->used && x->ct == ct && c->v.success + c->v.failure >= x->threshold &&
			    (!best || x->seq < best->seq))
				best = x;
		}
		if (!best)
			break;
		t = *best;
		best->used = false;
		ni->n_trig--;
		switch (t.kind) {
		case TRIG_PUT:
			ptl_put_locked(ni, t.md, t.loff, t.len, t.ack_req, t.target, t.pt, t.bits,
				       t.roff, t.user_ptr, t.hdr_data);
			break;
		case TRIG_GET:
			ptl_get_locked(ni, t.md, t.loff, t.len, t.target, t.pt, t.bits, t.roff,
				       t.user_ptr);
			break;
		case TRIG_AMO:
			ptl_atomic_locked(ni, &t.amo, false);
			break;
		case TRIG_ME_APPEND:
			trig_me_append(ni, &t);
			break;
		case TRIG_ME_UNLINK:
			trig_me_unlink(ni, &t);
			break;
		case TRIG_CTINC:
		case TRIG_CTSET: {
			struct ptl_ct *d = ptl_ct_get(ni, t.ct_target);

			if (!d)
				break;
			if (t.kind == TRIG_CTSET) {
				d->v = t.ctv;
			} else {
				d->v.success += t.ctv.success;
				d->v.failure += t.ctv.failure;
			}
			ptl_ct_changed(ni, (uint32_t)(d - ni->ct));
			break;
		}
		}
	}
	pthread_cond_broadcast(&ni->cv);
}

static int trig_add(struct ptl_ni *ni, const struct ptl_trig *t, ptl_handle_ct_t trig_ct)
{
	struct ptl_ct *c = ptl_ct_get(ni, trig_ct);

	int n = 0;

	if (!c)
		return PTL_ARG_INVALID;
	for (int i = 0; ni->n_trig > 0 && i < PTL_N_TRIG; i++)
		n += ni->trig[i].used && ni->ct[ni->trig[i].ct].view == c->view;
	if (n >= ni->lim[c->view].max_triggered_ops)
		return ptl_seterr(PTL_NO_SPACE, "%d triggered operations (max_triggered_ops)", n);
	for (int i = 0; i < PTL_N_TRIG; i++) {
		if (ni->trig[i].used)
			continue;
		ni->trig[i] = *t;
		ni->trig[i].used = true;
		ni->n_trig++;
		ni->trig[i].ct = (uint32_t)(c - ni->ct);
		ni->trig[i].seq = ++ni->seq;
		ptl_ct_changed(ni, ni->trig[i].ct);	/* may already be reached */
		return PTL_OK;
	}
	return PTL_NO_SPACE;
}

int PtlTriggeredPut(ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len, ptl_ack_req_t ack_req,
		    ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
		    ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr,
		    ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_trig t = { .kind = TRIG_PUT, .threshold = threshold, .md = mdh, .loff = loff,
			      .len = len, .ack_req = ack_req, .target = target, .pt = pt,
			      .bits = bits, .roff = roff, .user_ptr = user_ptr, .hdr_data = hdr };
	struct ptl_ni *ni;
	struct ptl_mdr *md;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	md = ptl_md_get(ni, mdh);
	if (!md || loff > md->buf.len || len > md->buf.len - loff || pt >= PTL_PT_HALF ||
	    ack_req > PTL_OC_ACK_REQ)
		rc = PTL_ARG_INVALID;
	else
		rc = trig_add(ni, &t, trig_ct);
	ptl_unlock(ni);
	return rc;
}

int PtlTriggeredGet(ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len, ptl_process_t target,
		    ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr,
		    ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_trig t = { .kind = TRIG_GET, .threshold = threshold, .md = mdh, .loff = loff,
			      .len = len, .target = target, .pt = pt, .bits = bits, .roff = roff,
			      .user_ptr = user_ptr };
	struct ptl_ni *ni;
	struct ptl_mdr *md;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	md = ptl_md_get(ni, mdh);
	if (!md || loff > md->buf.len || len > md->buf.len - loff || pt >= PTL_PT_HALF)
		rc = PTL_ARG_INVALID;
	else
		rc = trig_add(ni, &t, trig_ct);
	ptl_unlock(ni);
	return rc;
}

static int trig_amo(struct ptl_amo_args *a, ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_trig t = { .kind = TRIG_AMO, .threshold = threshold, .amo = *a };
	struct ptl_ni *ni;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	/* the same checks as the operation itself, now */
	rc = ptl_atomic_locked(ni, a, true);
	if (rc == PTL_OK)
		rc = trig_add(ni, &t, trig_ct);
	ptl_unlock(ni);
	return rc;
}

int PtlTriggeredAtomic(ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len,
		       ptl_ack_req_t ack_req, ptl_process_t target, ptl_pt_index_t pt,
		       ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr,
		       ptl_op_t op, ptl_datatype_t dt, ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_amo_args a = { .get_md = PTL_INVALID_HANDLE, .put_md = mdh, .put_loff = loff,
				  .len = len, .ack_req = ack_req, .target = target, .pt = pt,
				  .bits = bits, .roff = roff, .user_ptr = user_ptr, .hdr = hdr,
				  .aop = op, .adt = dt };

	return trig_amo(&a, trig_ct, threshold);
}

int PtlTriggeredFetchAtomic(ptl_handle_md_t get_mdh, ptl_size_t get_loff,
			    ptl_handle_md_t put_mdh, ptl_size_t put_loff, ptl_size_t len,
			    ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
			    ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr, ptl_op_t op,
			    ptl_datatype_t dt, ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_amo_args a = { .get_md = get_mdh, .put_md = put_mdh, .get_loff = get_loff,
				  .put_loff = put_loff, .len = len, .ack_req = PTL_NO_ACK_REQ,
				  .target = target, .pt = pt, .bits = bits, .roff = roff,
				  .user_ptr = user_ptr, .hdr = hdr, .aop = op, .adt = dt,
				  .fetch = true };

	if (op >= PTL_SWAP)	/* swaps go through PtlTriggeredSwap */
		return PTL_ARG_INVALID;
	return trig_amo(&a, trig_ct, threshold);
}

int PtlTriggeredSwap(ptl_handle_md_t get_mdh, ptl_size_t get_loff, ptl_handle_md_t put_mdh,
		     ptl_size_t put_loff, ptl_size_t len, ptl_process_t target,
		     ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr,
		     ptl_hdr_data_t hdr, const void *operand, ptl_op_t op, ptl_datatype_t dt,
		     ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_amo_args a = { .get_md = get_mdh, .put_md = put_mdh, .get_loff = get_loff,
				  .put_loff = put_loff, .len = len, .ack_req = PTL_NO_ACK_REQ,
				  .target = target, .pt = pt, .bits = bits, .roff = roff,
				  .user_ptr = user_ptr, .hdr = hdr, .aop = op, .adt = dt,
				  .fetch = true };
	size_t es = ptl_atomic_dt_size(dt);

	if (op < PTL_SWAP || op > PTL_MSWAP)
		return PTL_ARG_INVALID;
	if (operand && es && es <= sizeof(a.operand)) {
		memcpy(a.operand, operand, es);
		a.has_operand = true;
	}
	return trig_amo(&a, trig_ct, threshold);
}

static int trig_ct_op(enum ptl_trig_kind kind, ptl_handle_ct_t cth, ptl_ct_event_t v,
		      ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_trig t = { .kind = kind, .threshold = threshold, .ct_target = cth, .ctv = v };
	struct ptl_ni *ni;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	rc = ptl_ct_get(ni, cth) ? trig_add(ni, &t, trig_ct) : PTL_ARG_INVALID;
	ptl_unlock(ni);
	return rc;
}

int PtlTriggeredCTInc(ptl_handle_ct_t cth, ptl_ct_event_t inc, ptl_handle_ct_t trig_ct,
		      ptl_size_t threshold)
{
	return trig_ct_op(TRIG_CTINC, cth, inc, trig_ct, threshold);
}

int PtlTriggeredCTSet(ptl_handle_ct_t cth, ptl_ct_event_t v, ptl_handle_ct_t trig_ct,
		      ptl_size_t threshold)
{
	return trig_ct_op(TRIG_CTSET, cth, v, trig_ct, threshold);
}

/* --------------------------------------------------- portal table -- */

/* an index of a view's portal table */
static bool pt_ok(ptl_pt_index_t p)
{
	return p < PTL_PT_HALF;
}

int PtlPTAlloc(ptl_handle_ni_t nih, unsigned int options, ptl_handle_eq_t eqh,
	       ptl_pt_index_t req, ptl_pt_index_t *out)
{
	struct ptl_ni *ni;
	uint32_t p, flags;
	int rc, err, view;

	if (!out || (options & ~(PTL_PT_ONLY_USE_ONCE | PTL_PT_FLOWCTRL | PTL_PT_ONLY_TRUNCATE |
				  PTL_PT_MATCH_UNORDERED | PTL_PT_ALLOC_DISABLED)))
		return PTL_ARG_INVALID;
	if (req != PTL_PT_ANY && !pt_ok(req))
		return PTL_ARG_INVALID;
	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni)
		return rc;
	if (eqh != PTL_EQ_NONE && !ptl_eq_get(ni, eqh)) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	if ((options & PTL_PT_FLOWCTRL) && eqh == PTL_EQ_NONE) {
		ptl_unlock(ni);
		return PTL_PT_EQ_NEEDED;
	}
	if (req != PTL_PT_ANY && req > (ptl_pt_index_t)ni->lim[view].max_pt_index) {
		ptl_unlock(ni);
		return ptl_seterr(PTL_ARG_INVALID, "PtlPTAlloc: index %u above max_pt_index %d", req,
				  ni->lim[view].max_pt_index);
	}
	rc = req == PTL_PT_ANY ? PTL_PT_FULL : PTL_PT_IN_USE;
	for (uint32_t up = req == PTL_PT_ANY ? 0 : req;
	     up <= (uint32_t)ni->lim[view].max_pt_index; up++) {
		struct spin_pt sp;

		p = ptl_pt_rt(view, up);
		if (!ni->pt[p].used && !spin_pt_get(ni->rt, p, &sp) &&
		    !(sp.flags & SPIN_PT_ALLOCATED)) {
			flags = SPIN_PT_OWNED | ((options & PTL_PT_FLOWCTRL) ? SPIN_PT_FLOWCTRL : 0);
			err = spin_pt_alloc_flags(ni->rt, p, flags);
			if (!err && !(options & PTL_PT_ALLOC_DISABLED))
				err = spin_pt_enable(ni->rt, p, true);
			if (err) {
				rc = ptl_seterr(PTL_FAIL, "PtlPTAlloc: %s", spin_errmsg());
				spin_pt_free(ni->rt, p);
				break;
			}
			ni->pt[p] = (struct ptl_ptr){ .used = true, .options = options, .eq = eqh,
						      .enabled = !(options & PTL_PT_ALLOC_DISABLED) };
			*out = up;
			rc = PTL_OK;
			break;
		}
		if (req != PTL_PT_ANY)
			break;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlPTFree(ptl_handle_ni_t nih, ptl_pt_index_t p)
{
	struct ptl_ni *ni;
	int rc, view;

	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni)
		return rc;
	if (!pt_ok(p) || !ni->pt[ptl_pt_rt(view, p)].used) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	p = ptl_pt_rt(view, p);
	if (ni->mx_pt_n[p]) {	/* entries linked on it */
		ptl_unlock(ni);
		return PTL_PT_IN_USE;
	}
	spin_pt_free(ni->rt, p);
	ptl_unex_clear(ni, p);
	ni->pt[p].used = false;
	ptl_unlock(ni);
	return PTL_OK;
}

static int pt_enable(ptl_handle_ni_t nih, ptl_pt_index_t p, bool on)
{
	struct ptl_ni *ni;
	int rc, view;

	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni)
		return rc;
	if (!pt_ok(p) || !ni->pt[ptl_pt_rt(view, p)].used) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	p = ptl_pt_rt(view, p);
	if (!on)	/* events of messages that already arrived first */
		ptl_progress(ni);
	rc = spin_pt_enable(ni->rt, p, on) ? PTL_FAIL : PTL_OK;
	if (rc == PTL_OK)
		ni->pt[p].enabled = on;
	ptl_unlock(ni);
	return rc;
}

int PtlPTEnable(ptl_handle_ni_t nih, ptl_pt_index_t p)
{
	return pt_enable(nih, p, true);
}

int PtlPTDisable(ptl_handle_ni_t nih, ptl_pt_index_t p)
{
	return pt_enable(nih, p, false);
}

/* --------------------------------------------------- memory descriptors -- */

#define MD_OPTS (PTL_IOVEC | PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_ACK |	\
		 PTL_MD_UNORDERED | PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_VOLATILE |	\
		 PTL_MD_EVENT_SEND_DISABLE | PTL_MD_UNRELIABLE | PTL_MD_EVENT_CT_BYTES)

int PtlMDBind(ptl_handle_ni_t nih, const ptl_md_t *md, ptl_handle_md_t *mdh)
{
	struct ptl_ni *ni;
	int rc, view;

	struct ptl_buf b;

	if (!md || !mdh || (md->options & ~MD_OPTS))
		return PTL_ARG_INVALID;
	rc = ptl_buf_init(&b, md->start, md->length, md->options & PTL_IOVEC, "PtlMDBind");
	if (rc != PTL_OK)
		return rc;
	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni) {
		ptl_buf_put(&b);
		return rc;
	}
	if ((md->eq_handle != PTL_EQ_NONE && !ptl_eq_get(ni, md->eq_handle)) ||
	    (md->ct_handle != PTL_CT_NONE && !ptl_ct_get(ni, md->ct_handle))) {
		ptl_unlock(ni);
		ptl_buf_put(&b);
		return PTL_ARG_INVALID;
	}
	if ((md->options & PTL_IOVEC) && md->length > (ptl_size_t)ni->lim[view].max_iovecs) {
		ptl_unlock(ni);
		ptl_buf_put(&b);
		return ptl_seterr(PTL_ARG_INVALID, "PtlMDBind: %llu iovecs (max_iovecs %d)",
				  (unsigned long long)md->length, ni->lim[view].max_iovecs);
	}
	rc = 0;
	for (uint32_t i = 0; i < PTL_N_MD; i++)
		rc += ni->md[i].used && ni->md[i].view == view;
	if (rc >= ni->lim[view].max_mds) {
		ptl_unlock(ni);
		ptl_buf_put(&b);
		return ptl_seterr(PTL_NO_SPACE, "PtlMDBind: %d memory descriptors (max_mds)", rc);
	}
	rc = PTL_NO_SPACE;
	for (uint32_t i = 0; i < PTL_N_MD; i++) {
		if (ni->md[i].used)
			continue;
		ni->md[i].used = true;
		ni->md[i].view = (uint8_t)view;
		ni->md[i].busy = 0;
		ni->md[i].ctl = false;
		ni->md[i].md = *md;
		ni->md[i].buf = b;
		b.iov = NULL;
		*mdh = ptl_mkh(PTL_H_MD, i, ni->md[i].gen);
		rc = PTL_OK;
		break;
	}
	ptl_unlock(ni);
	ptl_buf_put(&b);	/* not taken: no MD free */
	return rc;
}

/* a triggered operation not fired yet uses MD mdh */
static bool md_triggered(struct ptl_ni *ni, ptl_handle_md_t mdh)
{
	for (int i = 0; ni->n_trig > 0 && i < PTL_N_TRIG; i++) {
		const struct ptl_trig *t = &ni->trig[i];

		if (!t->used)
			continue;
		if (((t->kind == TRIG_PUT || t->kind == TRIG_GET) && t->md == mdh) ||
		    (t->kind == TRIG_AMO && (t->amo.put_md == mdh ||
					     (t->amo.fetch && t->amo.get_md == mdh))))
			return true;
	}
	return false;
}

int ptl_md_set_ctl(ptl_handle_md_t mdh)
{
	struct ptl_ni *ni;
	struct ptl_mdr *m;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	m = ptl_md_get(ni, mdh);
	if (m)
		m->ctl = true;
	ptl_unlock(ni);
	return m ? PTL_OK : PTL_ARG_INVALID;
}

int PtlMDRelease(ptl_handle_md_t mdh)
{
	struct ptl_ni *ni;
	struct ptl_mdr *m;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	ptl_progress(ni);
	m = ptl_md_get(ni, mdh);
	if (!m) {
		rc = PTL_ARG_INVALID;
	} else if (m->busy || md_triggered(ni, mdh)) {
		/* an operation waits for its ack or reply, or a triggered
		 * operation will send from it */
		rc = ptl_seterr(PTL_IN_USE, "PtlMDRelease: %s", m->busy ?
				"an operation waits for its acknowledgement or reply" :
				"a triggered operation will use it (PtlCTCancelTriggered)");
	} else {
		ptl_buf_put(&m->buf);
		m->used = false;
		m->gen = ptl_next_gen(m->gen);
		rc = PTL_OK;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlSpinWaitStats(ptl_handle_ni_t nih, ptl_spin_wait_stats_t *st)
{
	int rc;
	struct ptl_ni *ni = ni_enter_h(nih, &rc);

	if (!ni)
		return rc;
	if (!st) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	*st = ni->ws;
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlSpinRelStats(ptl_handle_ni_t nih, ptl_spin_rel_stats_t *st)
{
	int rc;
	struct ptl_ni *ni = ni_enter_h(nih, &rc);

	if (ni && st) {
		*st = ni->rs;
		st->rto_us = ni->rto_us;
		st->srtt_us = ni->srtt_us;
		st->min_rtt_us = ni->min_rtt_us;
		st->cwnd_max = 0;
		for (int r = 0; r < SPIN_MAX_PEERS; r++) {
			const struct ptl_cc *c = &ni->cc[r];

			/* ranks this process has sent to */
			if ((c->cut_us || c->ep_sent || c->inflight) &&
			    c->cwnd > st->cwnd_max)
				st->cwnd_max = c->cwnd;
		}
	}
	if (ni)
		ptl_unlock(ni);
	return !ni ? rc : st ? PTL_OK : PTL_ARG_INVALID;
}

/* ------------------------------------------------------- host window -- */

static bool in_window(struct ptl_ni *ni, const void *p, uint64_t len)
{
	const uint8_t *b = p;

	return b >= ni->win && b <= ni->win + ni->win_len && len <= (uint64_t)(ni->win + ni->win_len - b);
}

int PtlSpinHostAlloc(ptl_handle_ni_t nih, ptl_size_t length, void **addr)
{
	struct ptl_ni *ni;
	uint64_t need = (length + SPIN_PAGE - 1) & ~(uint64_t)(SPIN_PAGE - 1), cand = 0, lo = 0, hi = 0;
	int rc;
	bool moved;

	if (!addr || !length)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	if (ni->n_walloc == (int)(sizeof(ni->walloc) / sizeof(ni->walloc[0]))) {
		ptl_unlock(ni);
		return PTL_NO_SPACE;
	}
	/* the whole window is this process's: each slot has its own
	 * (spin_wins; docs/design.md, "Many Portals processes per
	 * interface") */
	hi = ni->win_len;
	cand = lo;
	/* first fit among the (unsorted, few) allocations */
	do {
		moved = false;
		for (int i = 0; i < ni->n_walloc; i++)
			if (cand < ni->walloc[i].off + ni->walloc[i].len &&
			    ni->walloc[i].off < cand + need) {
				cand = ni->walloc[i].off + ni->walloc[i].len;
				moved = true;
			}
	} while (moved);
	if (need > hi || cand > hi - need) {
		rc = ptl_seterr(PTL_NO_SPACE,
				"PtlSpinHostAlloc: no room for %llu bytes in the %llu bytes of the %zu-byte "
				"host window of %s that process slot %u has",
				(unsigned long long)length, (unsigned long long)(hi - lo), ni->win_len,
				ni->ifname, ptl_slot);
	} else {
		ni->walloc[ni->n_walloc].off = cand;
		ni->walloc[ni->n_walloc].len = need;
		ni->n_walloc++;
		memset(ni->win + cand, 0, need);
		*addr = ni->win + cand;
		rc = PTL_OK;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlSpinHostFree(ptl_handle_ni_t nih, void *addr)
{
	struct ptl_ni *ni;
	int rc;

	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	rc = PTL_ARG_INVALID;
	for (int i = 0; i < ni->n_walloc; i++)
		if (addr && (uint8_t *)addr == ni->win + ni->walloc[i].off) {
			ni->walloc[i] = ni->walloc[--ni->n_walloc];
			rc = PTL_OK;
			break;
		}
	ptl_unlock(ni);
	return rc;
}

/* ---------------------------------------------------- sPIN extension -- */

int PtlSpinHandlerLoad(ptl_handle_ni_t nih, const char *path, ptl_handle_handler_t *out)
{
	struct ptl_ni *ni;
	int rc, err;

	if (!path || !out)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	rc = PTL_NO_SPACE;
	for (uint32_t i = 0; i < PTL_N_HANDLER; i++) {
		struct ptl_handler *h = &ni->hd[i];

		if (h->used)
			continue;
		snprintf(h->name, sizeof(h->name), "ptl%u_%u_%u", (unsigned)getpid(), i, h->gen);
		err = spin_handler_load(ni->rt, path, h->name);
		if (err < 0) {	/* else the slot */
			rc = ptl_seterr(err == -SPIN_EVERIFIER || err == -SPIN_EUSAGE ||
					err == -SPIN_ENOENT ? PTL_ARG_INVALID : PTL_FAIL,
					"PtlSpinHandlerLoad %s: %s%s%s", path, spin_errmsg(),
					err == -SPIN_EVERIFIER ? "\n" : "",
					err == -SPIN_EVERIFIER ? spin_verifier_log() : "");
			break;
		}
		h->used = true;
		*out = ptl_mkh(PTL_H_HANDLER, i, h->gen);
		rc = PTL_OK;
		break;
	}
	ptl_unlock(ni);
	return rc;
}

/* A handler object from memory (a shipped one, ptl_ship.c): as
 * PtlSpinHandlerLoad, with the maps of subst instead of the runtime's;
 * *insns: the instructions the kernel holds, *prog_id its program id. */
int ptl_handler_load_mem(ptl_handle_ni_t nih, const void *buf, size_t len,
			 const struct spin_map_subst *subst, int n_subst,
			 ptl_handle_handler_t *out, uint32_t *insns, uint32_t *prog_id)
{
	struct spin_handler_info hi[SPIN_MAX_HANDLERS * 2];
	struct ptl_ni *ni;
	int rc, err, n;

	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	rc = ptl_seterr(PTL_NO_SPACE, "all %d handler slots of this process are in use", PTL_N_HANDLER);
	for (uint32_t i = 0; i < PTL_N_HANDLER; i++) {
		struct ptl_handler *h = &ni->hd[i];

		if (h->used)
			continue;
		snprintf(h->name, sizeof(h->name), "ptl%u_%u_%u", (unsigned)getpid(), i, h->gen);
		err = spin_handler_load_mem_subst(ni->rt, buf, len, h->name, subst, n_subst);
		if (err < 0) {	/* else the slot */
			rc = ptl_seterr(err == -SPIN_EVERIFIER || err == -SPIN_EUSAGE ||
					err == -SPIN_ENOENT ? PTL_ARG_INVALID :
					PTL_FAIL, "%s%s%s", spin_errmsg(),
					err == -SPIN_EVERIFIER ? "\n" : "",
					err == -SPIN_EVERIFIER ? spin_verifier_log() : "");
			break;
		}
		h->used = true;
		*out = ptl_mkh(PTL_H_HANDLER, i, h->gen);
		*insns = 0;
		*prog_id = 0;
		n = spin_handler_list(ni->rt, hi, SPIN_MAX_HANDLERS * 2);
		for (int k = 0; k < n; k++)
			if (!strcmp(hi[k].name, h->name)) {
				*insns = hi[k].insns;
				*prog_id = hi[k].prog_id;
			}
		rc = PTL_OK;
		break;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlSpinHandlerUnload(ptl_handle_handler_t hh)
{
	struct ptl_handler *h;
	struct ptl_ni *ni;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	h = hd_get(ni, hh);
	if (!h) {
		rc = PTL_ARG_INVALID;
	} else {
		rc = PTL_OK;
		for (uint32_t i = 0; i < ni->me_n; i++)
			if (ptl_me_at(ni, i)->used && ptl_me_at(ni, i)->me.handlers == hh)
				rc = PTL_IN_USE;
		if (rc == PTL_OK) {
			spin_handler_unload(ni->rt, h->name);
			h->used = false;
			h->gen = ptl_next_gen(h->gen);
		}
	}
	ptl_unlock(ni);
	return rc;
}

int PtlHPUAllocMem(ptl_size_t length, ptl_handle_ni_t nih, ptl_handle_hpu_mem_t *mem)
{
	struct ptl_ni *ni;
	int rc;

	if (!mem || length == 0 || length > SPIN_HPU_SIZE)
		return PTL_ARG_INVALID;
	ni = ni_enter_h(nih, &rc);
	if (!ni)
		return rc;
	rc = PTL_NO_SPACE;
	for (uint32_t i = 0; i < PTL_N_HPU; i++) {
		struct ptl_hpu *h = ni->hpu[i];

		if (h && h->used)
			continue;
		if (!h) {
			h = ni->hpu[i] = calloc(1, sizeof(*h));
			if (!h)
				break;
			h->gen = 1;
		}
		memset(h->img, 0, sizeof(h->img));
		h->len = (uint32_t)length;
		h->used = true;
		*mem = ptl_mkh(PTL_H_HPU, i, h->gen);
		rc = PTL_OK;
		break;
	}
	ptl_unlock(ni);
	return rc;
}

int PtlHPUFreeMem(ptl_handle_hpu_mem_t mem)
{
	struct ptl_ni *ni;
	struct ptl_hpu *h;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	h = hpu_get(ni, mem);
	if (h) {
		h->used = false;
		h->gen = ptl_next_gen(h->gen);
	}
	ptl_unlock(ni);
	return h ? PTL_OK : PTL_ARG_INVALID;
}

int PtlHPUWriteMem(ptl_handle_hpu_mem_t mem, ptl_size_t off, const void *buf, ptl_size_t len)
{
	struct ptl_ni *ni;
	struct ptl_hpu *h;
	int rc;

	if (!buf && len)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	h = hpu_get(ni, mem);
	if (!h || off > h->len || len > h->len - off) {
		rc = PTL_ARG_INVALID;
	} else {
		memcpy(h->img + off, buf, len);
		rc = PTL_OK;
	}
	ptl_unlock(ni);
	return rc;
}

static int me_hpu_io(ptl_handle_me_t meh, ptl_size_t off, void *buf, ptl_size_t len, bool wr)
{
	struct ptl_ni *ni;
	struct ptl_mer *m;
	uint8_t tmp[SPIN_HPU_SIZE];
	int rc;

	if (!buf && len)
		return PTL_ARG_INVALID;
	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	m = ptl_me_get(ni, meh);
	if (!m || m->rt < 0 || off > SPIN_HPU_SIZE || len > SPIN_HPU_SIZE - off) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	rc = spin_hpu_read(ni->rt, m->rt, tmp, SPIN_HPU_SIZE) ? PTL_FAIL : PTL_OK;
	if (rc == PTL_OK && wr) {
		memcpy(tmp + off, buf, len);
		rc = spin_hpu_write(ni->rt, m->rt, tmp, SPIN_HPU_SIZE) ? PTL_FAIL : PTL_OK;
	} else if (rc == PTL_OK) {
		memcpy(buf, tmp + off, len);
	}
	ptl_unlock(ni);
	return rc;
}

int PtlMEReadHPU(ptl_handle_me_t meh, ptl_size_t off, void *buf, ptl_size_t len)
{
	return me_hpu_io(meh, off, buf, len, false);
}

int PtlMEWriteHPU(ptl_handle_me_t meh, ptl_size_t off, const void *buf, ptl_size_t len)
{
	return me_hpu_io(meh, off, (void *)buf, len, true);
}

/* ------------------------------------------------------ match entries -- */

#define ME_OPTS (PTL_IOVEC | PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_USE_ONCE | PTL_ME_ACK_DISABLE |	\
		 PTL_ME_UNEXPECTED_HDR_DISABLE | PTL_ME_NO_TRUNCATE | PTL_ME_MANAGE_LOCAL |	\
		 PTL_ME_MAY_ALIGN | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_FLOWCTRL_DISABLE |	\
		 PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_OVER_DISABLE |			\
		 PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_CT_COMM |	\
		 PTL_ME_EVENT_CT_OVERFLOW | PTL_ME_EVENT_CT_BYTES | PTL_ME_IS_ACCESSIBLE |	\
		 PTL_ME_AUTH_USE_JID | PTL_ME_LOCAL_INC_UH_RLENGTH)

#define LE_OPTS (PTL_IOVEC | PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_USE_ONCE | PTL_LE_ACK_DISABLE |	\
		 PTL_LE_UNEXPECTED_HDR_DISABLE | PTL_LE_IS_ACCESSIBLE |				\
		 PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_FLOWCTRL_DISABLE |			\
		 PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_OVER_DISABLE |			\
		 PTL_LE_EVENT_UNLINK_DISABLE | PTL_LE_EVENT_LINK_DISABLE |			\
		 PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_CT_OVERFLOW | PTL_LE_EVENT_CT_BYTES |	\
		 PTL_LE_AUTH_USE_JID)

/* The match_id of an entry as a rank (SPIN_RANK_ANY), or -1 if unknown. */
static int64_t me_rank(struct ptl_ni *ni, ptl_process_t id)
{
	if (ni->options & PTL_NI_LOGICAL)
		return id.rank == PTL_RANK_ANY ? SPIN_RANK_ANY : (int64_t)id.rank;
	if (id.phys.nid == PTL_NID_ANY)
		return SPIN_RANK_ANY;
	for (size_t r = 0; r < ni->map_size; r++)
		if (ni->map[r].phys.nid == id.phys.nid)
			return (int64_t)r;
	return -1;
}

/* Deliver an unexpected header to a priority entry as *_OVERFLOW. */
static void unex_deliver(struct ptl_ni *ni, uint32_t pt, const ptl_me_t *me, void *user_ptr,
			 struct ptl_unex *u)
{
	ptl_event_t ev = u->ev;

	/* off the list first: a counter below may fire a triggered append,
	 * which searches the list */
	ev.type = u->kind + 1;	/* PUT -> PUT_OVERFLOW, ATOMIC -> ATOMIC_OVERFLOW, ... */
	ptl_unex_del(ni, u);
	ev.user_ptr = user_ptr;
	ev.ptl_list = PTL_PRIORITY_LIST;
	if (!(me->options & (PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_OVER_DISABLE)))
		ptl_eq_post(ni, ni->pt[pt].eq, &ev);
	if (me->options & PTL_ME_EVENT_CT_OVERFLOW)
		ptl_ct_count(ni, me->ct_handle, ev.ni_fail_type == PTL_NI_OK,
			     me->options & PTL_ME_EVENT_CT_BYTES, ev.mlength);
}

static const char *const view_name[PTL_N_VIEW] = { "matching", "non-matching" };

/* PtlMEAppend (want PTL_VIEW_MATCH) and PtlLEAppend (PTL_VIEW_NOMATCH, me
 * made from the list entry: any source, any match bits) */
/* The checks of an append (lock held; pt: the runtime's index); the
 * handler, handler memory and rank the entry gets. */
static int me_validate(struct ptl_ni *ni, uint32_t pt, const ptl_me_t *me, const struct ptl_buf *bp,
		       struct ptl_handler **hdp, struct ptl_hpu **hpup, int64_t *rankp)
{
	struct ptl_handler *hd = NULL;
	struct ptl_hpu *hpu = NULL;
	int64_t rank;
	int rc;

	rc = PTL_ARG_INVALID;
	if (!ni->pt[pt].used)
		return rc;
	if (me->ct_handle != PTL_CT_NONE && !ptl_ct_get(ni, me->ct_handle))
		return rc;
	rank = me_rank(ni, me->match_id);
	if (rank < 0)
		return rc;
	if (me->handlers != PTL_HANDLER_NONE && me->handlers != PTL_INVALID_HANDLE &&
	    !(hd = hd_get(ni, me->handlers)))
		return rc;
	if (me->hpu_memory != PTL_HPU_MEM_NONE && me->hpu_memory != PTL_INVALID_HANDLE &&
	    !(hpu = hpu_get(ni, me->hpu_memory)))
		return rc;
	if (me->handler_host_mem_length &&
	    !in_window(ni, me->handler_host_mem, me->handler_host_mem_length)) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlMEAppend: handler host memory must be in the host window (PtlSpinHostAlloc)");
		return rc;
	}
	if (hd && !ptl_buf_flat(bp)) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlMEAppend: an entry with handlers needs its buffer in the host window, not an iovec list or the whole address space");
		return rc;
	}
	if (hd && me->length && !in_window(ni, me->start, me->length)) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlMEAppend: an entry with handlers needs its buffer in the host window (PtlSpinHostAlloc)");
		return rc;
	}
	if (hd && (me->options & PTL_ME_MANAGE_LOCAL)) {
		rc = ptl_seterr(PTL_ARG_INVALID, "PtlMEAppend: PTL_ME_MANAGE_LOCAL is not supported with handlers");
		return rc;
	}
	*hdp = hd;
	*hpup = hpu;
	*rankp = rank;
	return PTL_OK;
}

/* The view's limits on a new entry of portal pt (the runtime's index). */
static int me_limits(struct ptl_ni *ni, int view, uint32_t pt, const ptl_me_t *me)
{
	const ptl_ni_limits_t *l = &ni->lim[view];
	uint32_t n;

	if ((me->options & PTL_IOVEC) && me->length > (ptl_size_t)l->max_iovecs)
		return ptl_seterr(PTL_ARG_INVALID, "PtlMEAppend: %llu iovecs (max_iovecs %d)",
				  (unsigned long long)me->length, l->max_iovecs);
	if (ni->mx_pt_n[pt] >= (uint32_t)l->max_list_size)
		return ptl_seterr(PTL_LIST_TOO_LONG, "PtlMEAppend: %u entries on portal %u (max_list_size)",
				  ni->mx_pt_n[pt], ptl_pt_user(pt));
	if (l->max_entries < ni->limits.max_entries &&
	    (n = view_entries(ni, view)) >= (uint32_t)l->max_entries)
		return ptl_seterr(PTL_NO_SPACE, "PtlMEAppend: %u entries (max_entries)", n);
	return PTL_OK;
}

/* Link entry me (validated: hd, hpu, rank) on pt (the runtime's index;
 * upt the view's) into slot `slot` (reserved by PtlTriggeredMEAppend) or a
 * free one; takes *bp.  Lock held. */
static int me_link(struct ptl_ni *ni, uint32_t pt, ptl_pt_index_t upt, const ptl_me_t *me,
		   struct ptl_buf *bp, ptl_list_t list, void *user_ptr, ptl_handle_me_t *meh,
		   int slot, struct ptl_handler *hd, struct ptl_hpu *hpu, int64_t rank)
{
	struct spin_me_spec s = {};
	struct ptl_mer *m;
	uint32_t i;
	int rc, idx;

	/* events that are already in the rings first: they may free slots
	 * and belong to the unexpected list (not from inside progress: a
	 * triggered append fires there) */
	if (!ni->in_progress)
		ptl_progress(ni);
	if (slot >= 0) {
		i = (uint32_t)slot;
		m = ptl_me_at(ni, i);
	} else {
		m = ptl_me_alloc(ni);
		if (!m)
			return ptl_seterr(PTL_NO_SPACE, "PtlMEAppend: the entry table is full (%d entries, max_entries) or out of memory",
					  PTL_N_ME);
		i = m->idx;
	}
	memset((char *)m + offsetof(struct ptl_mer, window), 0,
	       sizeof(*m) - offsetof(struct ptl_mer, window));
	if (slot >= 0)
		m->used = false;	/* reserved until now (PtlTriggeredMEAppend) */
	m->me = *me;
	m->pt = pt;
	m->list = list;
	m->user_ptr = user_ptr;
	m->rt = -1;
	m->seq = ++ni->seq;
	m->match_rank = (uint32_t)rank;
	m->rx_busy = 0;
	/* an NI that asked for a smaller max_msg_size takes at most that of
	 * a message (mlength), as the reference implementation does; the
	 * runtime, which deposits window entries, does not know the NI's
	 * limit, so such an entry (without handlers) is served by the
	 * library, where the cap is applied (me_place) */
	m->max_len = ni->lim[ptl_pt_view(pt)].max_msg_size < SPIN_MAX_MSG ?
		     ni->lim[ptl_pt_view(pt)].max_msg_size : 0;
	m->window = ptl_buf_flat(bp) && (!me->length || in_window(ni, me->start, me->length)) &&
		    !(me->options & PTL_ME_MANAGE_LOCAL) && me->length <= ni->win_len &&
		    (!m->max_len || hd);
	m->buf = *bp;
	bp->iov = NULL;	/* the entry's now */
	m->used = true;
	*meh = ptl_me_handle(ni, m);

	/* the unexpected list first (priority list appends only) */
	if (list == PTL_PRIORITY_LIST && !(me->options & PTL_ME_UNEXPECTED_HDR_DISABLE)) {
		struct ptl_unex *u;

		while ((u = ptl_unex_find(ni, pt, me, m->match_rank, NULL))) {
			uint64_t rlen = u->ev.rlength;

			unex_deliver(ni, pt, me, user_ptr, u);
			/* a locally managed entry with LOCAL_INC_UH_RLENGTH
			 * moves past what each header asked for, and is used
			 * up (never linked) once less than min_free is left */
			if ((me->options & (PTL_ME_MANAGE_LOCAL | PTL_ME_LOCAL_INC_UH_RLENGTH)) ==
			    (PTL_ME_MANAGE_LOCAL | PTL_ME_LOCAL_INC_UH_RLENGTH)) {
				m->local_off = rlen < m->buf.len - m->local_off ?
					       m->local_off + rlen : m->buf.len;
				if (m->buf.len - m->local_off < me->min_free) {
					post_auto_unlink(ni, pt, me, user_ptr, list);
					ptl_buf_put(&m->buf);
					ptl_me_release(ni, m);
					return PTL_OK;
				}
			}
			if (me->options & PTL_ME_USE_ONCE) {
				/* consumed: never linked, but used up */
				post_auto_unlink(ni, pt, me, user_ptr, list);
				ptl_buf_put(&m->buf);
				ptl_me_release(ni, m);
				return PTL_OK;
			}
		}
	}

	s.pt_index = pt;
	s.list = list == PTL_PRIORITY_LIST ? SPIN_LIST_PRIORITY : SPIN_LIST_OVERFLOW;
	s.match_bits = me->match_bits;
	s.ignore_bits = me->ignore_bits;
	s.match_rank = m->match_rank;
	s.match_pid = (ni->options & PTL_NI_LOGICAL) ? SPIN_PID_ANY : me->match_id.phys.pid;
	if (s.match_pid == PTL_PID_ANY)
		s.match_pid = SPIN_PID_ANY;
	s.options = me->options & (PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_USE_ONCE |
				   PTL_ME_NO_TRUNCATE);
	/* wake thresholds (ctpoll_arm) in the counter's units; entries that
	 * count nothing never have one, and skip the runtime's atomic add */
	if (me->options & PTL_ME_EVENT_CT_COMM)
		s.options |= SPIN_ME_WAKE_COUNT |
			     (me->options & PTL_ME_EVENT_CT_BYTES ? SPIN_ME_WAKE_BYTES : 0);
	if (!(s.options & (SPIN_ME_OP_PUT | SPIN_ME_OP_GET)))
		s.options |= SPIN_ME_OP_PUT;
	/* the runtime need not post successful completions the library would
	 * only discard: no event wanted, nothing counted, no unexpected list */
	if ((me->options & (PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE)) &&
	    !(me->options & PTL_ME_EVENT_CT_COMM) && list == PTL_PRIORITY_LIST)
		s.options |= me->options & (PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE);
	s.handler = hd ? hd->name : NULL;
	s.host_len = m->buf.len;
	if (m->window) {
		s.host_off = me->length ? (uint64_t)((uint8_t *)me->start - ni->win) : 0;
	} else {
		s.options |= SPIN_ME_XSK;
		s.host_off = 0;
	}
	s.hhost_len = me->handler_host_mem_length;
	s.hhost_off = me->handler_host_mem_length ?
		      (uint64_t)((uint8_t *)me->handler_host_mem - ni->win) : 0;
	if (hpu) {
		s.hpu_init = hpu->img;
		s.hpu_init_len = hpu->len;
	}
	s.user_ptr = *meh;
	idx = spin_me_append(ni->rt, &s);
	if (idx < 0) {
		rc = ptl_seterr(idx == -SPIN_ENOSPC ? PTL_LIST_TOO_LONG : PTL_FAIL, "PtlMEAppend: %s",
				spin_errmsg());
		ptl_buf_put(&m->buf);
		ptl_me_release(ni, m);
		return rc;
	}
	m->rt = idx;
	ni->me_by_rt[idx] = (int)i;
	if (ptl_mx_link(ni, m) < 0) {
		spin_me_unlink(ni->rt, idx);
		me_free(ni, m);
		return ptl_seterr(PTL_NO_SPACE, "PtlMEAppend: out of memory for the match index");
	}
	if (!(me->options & PTL_ME_EVENT_LINK_DISABLE)) {
		ptl_event_t ev = { .type = PTL_EVENT_LINK, .user_ptr = user_ptr, .pt_index = upt,
				   .ni_fail_type = PTL_NI_OK, .ptl_list = list };

		ptl_eq_post(ni, ni->pt[pt].eq, &ev);
	}
	return PTL_OK;
}

static int me_append(ptl_handle_ni_t nih, int want, ptl_pt_index_t upt, const ptl_me_t *me,
		     ptl_list_t list, void *user_ptr, ptl_handle_me_t *meh,
		     ptl_handle_ct_t trig_ct, ptl_size_t threshold, bool triggered)
{
	struct ptl_handler *hd = NULL;
	struct ptl_hpu *hpu = NULL;
	struct ptl_ni *ni;
	struct ptl_buf b;
	int64_t rank;
	uint32_t pt;
	int rc, view;

	if (!me || !meh || !pt_ok(upt) || (list != PTL_PRIORITY_LIST && list != PTL_OVERFLOW_LIST) ||
	    (me->options & ~ME_OPTS))
		return PTL_ARG_INVALID;
	rc = ptl_buf_init(&b, me->start, me->length, me->options & PTL_IOVEC,
			  want == PTL_VIEW_MATCH ? "PtlMEAppend" : "PtlLEAppend");
	if (rc != PTL_OK)
		return rc;
	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni) {
		ptl_buf_put(&b);
		return rc;
	}
	if (view != want) {
		rc = ptl_seterr(PTL_ARG_INVALID, "%s on a %s NI: use %s", want == PTL_VIEW_MATCH ?
				"PtlMEAppend" : "PtlLEAppend", view_name[view],
				want == PTL_VIEW_MATCH ? "PtlLEAppend" : "PtlMEAppend");
		goto out;
	}
	pt = ptl_pt_rt(view, upt);
	rc = me_validate(ni, pt, me, &b, &hd, &hpu, &rank);
	if (rc != PTL_OK)
		goto out;
	rc = me_limits(ni, view, pt, me);
	if (rc != PTL_OK)
		goto out;
	if (triggered) {
		/* a slot and a handle now, the append when the counter
		 * reaches the threshold */
		struct ptl_trig t = { .kind = TRIG_ME_APPEND, .threshold = threshold, .me = *me,
				      .me_buf = b, .me_list = list, .user_ptr = user_ptr,
				      .pt = upt, .me_view = (uint8_t)view };
		struct ptl_mer *m = ptl_me_alloc(ni);

		if (!m) {
			rc = PTL_NO_SPACE;
			goto out;
		}
		m->used = true;	/* reserved: rt -1, never matched */
		m->rt = -1;
		m->pt = pt;
		m->buf = (struct ptl_buf){ 0 };
		t.meh = ptl_me_handle(ni, m);
		rc = trig_add(ni, &t, trig_ct);
		if (rc != PTL_OK) {
			ptl_me_release(ni, m);
			goto out;
		}
		b.iov = NULL;	/* the trigger's now */
		*meh = t.meh;
		goto out;
	}
	rc = me_link(ni, pt, upt, me, &b, list, user_ptr, meh, -1, hd, hpu, rank);
out:
	ni->me_gen++;
	ptl_unlock(ni);
	ptl_buf_put(&b);	/* if the entry did not take it */
	return rc;
}

/* A triggered append fires (lock held): checked again, linked into its
 * reserved slot (gone if the application unlinked it meanwhile). */
static void trig_me_append(struct ptl_ni *ni, struct ptl_trig *t)
{
	struct ptl_mer *m = ptl_me_get(ni, t->meh);
	struct ptl_handler *hd;
	struct ptl_hpu *hpu;
	ptl_handle_me_t meh;
	int64_t rank;
	uint32_t pt = ptl_pt_rt(t->me_view, t->pt);

	if (!m || m->rt >= 0 || me_validate(ni, pt, &t->me, &t->me_buf, &hd, &hpu, &rank) != PTL_OK ||
	    me_link(ni, pt, t->pt, &t->me, &t->me_buf, t->me_list, t->user_ptr, &meh,
		    (int)m->idx, hd, hpu, rank) != PTL_OK) {
		ni->drops++;
		if (m && m->rt < 0 && m->used && !m->buf.len && !m->buf.iov)
			ptl_me_release(ni, m);
	}
	ni->me_gen++;
	ptl_buf_put(&t->me_buf);
}

int PtlMEAppend(ptl_handle_ni_t nih, ptl_pt_index_t pt, const ptl_me_t *me, ptl_list_t list,
		void *user_ptr, ptl_handle_me_t *meh)
{
	return me_append(nih, PTL_VIEW_MATCH, pt, me, list, user_ptr, meh, PTL_CT_NONE, 0, false);
}

int PtlTriggeredMEAppend(ptl_handle_ni_t nih, ptl_pt_index_t pt, const ptl_me_t *me,
			 ptl_list_t list, void *user_ptr, ptl_handle_me_t *meh,
			 ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	return me_append(nih, PTL_VIEW_MATCH, pt, me, list, user_ptr, meh, trig_ct, threshold, true);
}

/* A list entry as the match entry it is to the runtime: every source,
 * every match bit. */
static int le_to_me(const ptl_le_t *le, ptl_me_t *me)
{
	if (!le || (le->options & ~LE_OPTS))
		return PTL_ARG_INVALID;
	memset(me, 0, sizeof(*me));
	me->start = le->start;
	me->length = le->length;
	me->ct_handle = le->ct_handle;
	me->uid = le->uid;
	me->options = le->options;
	me->match_id.phys.nid = PTL_NID_ANY;
	me->match_id.phys.pid = PTL_PID_ANY;
	me->match_bits = 0;
	me->ignore_bits = ~(ptl_match_bits_t)0;
	return PTL_OK;
}

int PtlLEAppend(ptl_handle_ni_t nih, ptl_pt_index_t pt, const ptl_le_t *le, ptl_list_t list,
		void *user_ptr, ptl_handle_le_t *leh)
{
	ptl_me_t me;
	int rc = le_to_me(le, &me);

	return rc != PTL_OK ? rc : me_append(nih, PTL_VIEW_NOMATCH, pt, &me, list, user_ptr, leh,
					     PTL_CT_NONE, 0, false);
}

int PtlTriggeredLEAppend(ptl_handle_ni_t nih, ptl_pt_index_t pt, const ptl_le_t *le,
			 ptl_list_t list, void *user_ptr, ptl_handle_le_t *leh,
			 ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	ptl_me_t me;
	int rc = le_to_me(le, &me);

	return rc != PTL_OK ? rc : me_append(nih, PTL_VIEW_NOMATCH, pt, &me, list, user_ptr, leh,
					     trig_ct, threshold, true);
}

/* ptl_target_done: a linked priority entry takes unexpected header arg */
static bool late_ok(struct ptl_ni *ni, struct ptl_mer *p, void *arg)
{
	return p->used && p->rt >= 0 && !(p->me.options & PTL_ME_UNEXPECTED_HDR_DISABLE) &&
	       ptl_unex_matches(ni, arg, &p->me, p->match_rank);
}

static void me_free(struct ptl_ni *ni, struct ptl_mer *m)
{
	ni->me_gen++;
	ptl_buf_put(&m->buf);
	if (m->rt >= 0 && ni->me_by_rt[m->rt] == (int)m->idx)
		ni->me_by_rt[m->rt] = -1;
	ptl_me_release(ni, m);
	m->rt = -1;
}

int PtlLEUnlink(ptl_handle_le_t leh)
{
	return PtlMEUnlink(leh);
}

/* A triggered unlink fires (lock held). */
static void trig_me_unlink(struct ptl_ni *ni, struct ptl_trig *t)
{
	struct ptl_mer *m = ptl_me_get(ni, t->meh);

	if (!m)
		return;		/* unlinked already */
	if (m->rt >= 0)
		spin_me_unlink(ni->rt, m->rt);
	/* completions already posted for it are still delivered */
	if (!ni->in_progress)
		ptl_progress(ni);
	if ((m = ptl_me_get(ni, t->meh)))
		me_free(ni, m);
}

int PtlTriggeredMEUnlink(ptl_handle_me_t meh, ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	struct ptl_trig t = { .kind = TRIG_ME_UNLINK, .threshold = threshold, .meh = meh };
	struct ptl_ni *ni;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	rc = ptl_me_get(ni, meh) ? trig_add(ni, &t, trig_ct) : PTL_ARG_INVALID;
	ptl_unlock(ni);
	return rc;
}

int PtlTriggeredLEUnlink(ptl_handle_le_t leh, ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
	return PtlTriggeredMEUnlink(leh, trig_ct, threshold);
}

/* A message is arriving into entry m: the library is reassembling one, or
 * the runtime has matched one of more than one packet to it and not
 * finished it (spin_me.busy).  (Read after a progress pass: what has
 * arrived whole by then is finished.) */
static bool me_in_use(struct ptl_ni *ni, const struct ptl_mer *m)
{
	return m->rx_busy ||
	       (m->rt >= 0 && (int32_t)__atomic_load_n(&ni->rt->me[m->rt].busy, __ATOMIC_ACQUIRE) > 0);
}

/* PtlMEUnlink; with force, also an entry in use (the library's own
 * entries, ptl_ship.c: their handler goes with them) */
static int me_unlink(ptl_handle_me_t meh, bool force)
{
	struct ptl_ni *ni;
	struct ptl_mer *m;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	m = ptl_me_get(ni, meh);
	if (!m) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	/* what has arrived first: a message whose last packet is here is
	 * finished, and the entry may have been used up meanwhile */
	ptl_progress(ni);
	if (!(m = ptl_me_get(ni, meh))) {
		ptl_unlock(ni);
		return PTL_OK;
	}
	/* Portals 4.1: "PTL_IN_USE: the match list entry has pending
	 * operations and cannot be unlinked" */
	if (!force && me_in_use(ni, m)) {
		ptl_unlock(ni);
		return ptl_seterr(PTL_IN_USE,
				  "PtlMEUnlink: a message is still arriving into the entry (its event has not come yet): try again after it");
	}
	if (m->rt >= 0)
		spin_me_unlink(ni->rt, m->rt);
	/* completions already posted for it are still delivered */
	ptl_progress(ni);
	m = ptl_me_get(ni, meh);
	if (m)
		me_free(ni, m);
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlMEUnlink(ptl_handle_me_t meh)
{
	return me_unlink(meh, false);
}

int ptl_me_unlink_force(ptl_handle_me_t meh)
{
	return me_unlink(meh, true);
}

/* An entry used up (use-once, min_free, or consumed by the unexpected list
 * at append): PTL_EVENT_AUTO_UNLINK, then PTL_EVENT_AUTO_FREE, which says
 * that nothing will touch its memory any more.  Here the two come
 * together: an entry is unlinked automatically only when the operation
 * that used it up has completed (its deposit and its event are done). */
static void post_auto_unlink(struct ptl_ni *ni, uint32_t pt, const ptl_me_t *me, void *user_ptr,
			     ptl_list_t list)
{
	ptl_event_t ev = { .type = PTL_EVENT_AUTO_UNLINK, .user_ptr = user_ptr,
			   .pt_index = ptl_pt_user(pt), .ptl_list = list };

	if (me->options & PTL_ME_EVENT_UNLINK_DISABLE)
		return;
	ptl_eq_post(ni, ni->pt[pt].eq, &ev);
	ev.type = PTL_EVENT_AUTO_FREE;
	ptl_eq_post(ni, ni->pt[pt].eq, &ev);
}

void ptl_me_auto_unlink(struct ptl_ni *ni, struct ptl_mer *m, bool rt_too)
{
	if (rt_too && m->rt >= 0)
		spin_me_unlink(ni->rt, m->rt);
	post_auto_unlink(ni, m->pt, &m->me, m->user_ptr, m->list);
	me_free(ni, m);
}

static int me_search(ptl_handle_ni_t nih, int want, ptl_pt_index_t upt, const ptl_me_t *me,
		     ptl_search_op_t op, void *user_ptr)
{
	struct ptl_ni *ni;
	struct ptl_unex *u;
	int64_t rank;
	uint32_t pt;
	int rc, view;
	bool counting;

	if (!me || !pt_ok(upt) || (op != PTL_SEARCH_ONLY && op != PTL_SEARCH_DELETE))
		return PTL_ARG_INVALID;
	ni = ni_enter_hv(nih, &rc, &view);
	if (!ni)
		return rc;
	if (view != want) {
		ptl_unlock(ni);
		return ptl_seterr(PTL_ARG_INVALID, "%s on a %s NI: use %s", want == PTL_VIEW_MATCH ?
				  "PtlMESearch" : "PtlLESearch", view_name[view],
				  want == PTL_VIEW_MATCH ? "PtlLESearch" : "PtlMESearch");
	}
	pt = ptl_pt_rt(view, upt);
	rank = me_rank(ni, me->match_id);
	if (!ni->pt[pt].used || rank < 0) {
		ptl_unlock(ni);
		return PTL_ARG_INVALID;
	}
	ptl_progress(ni);
	counting = me->ct_handle != PTL_CT_NONE && (me->options & PTL_ME_EVENT_CT_OVERFLOW) &&
		   ptl_ct_get(ni, me->ct_handle);
	u = ptl_unex_find(ni, pt, me, (uint32_t)rank, NULL);
	if (op == PTL_SEARCH_ONLY) {
		/* one PTL_EVENT_SEARCH per matching header, in arrival order
		 * (the first only for a use-once search), as the reference
		 * implementation has it; a counting search (a counter and
		 * PTL_ME_EVENT_CT_OVERFLOW, Portals 4.3 as the reference
		 * implementation has it) adds one success per header (its
		 * mlength with CT_BYTES) and then one failure, which says the
		 * search is over (for a use-once search only if nothing matched) */
		bool events = !(me->options & PTL_ME_EVENT_COMM_DISABLE);
		uint64_t found = 0, bytes = 0;

		for (; u; u = ptl_unex_find(ni, pt, me, (uint32_t)rank, u)) {
			ptl_event_t ev = u->ev;

			ev.type = PTL_EVENT_SEARCH;
			ev.user_ptr = user_ptr;
			ev.ni_fail_type = PTL_NI_OK;
			if (events)
				ptl_eq_post(ni, ni->pt[pt].eq, &ev);
			found++;
			bytes += u->ev.mlength;
			if (me->options & PTL_ME_USE_ONCE)
				break;
		}
		if (!found && events) {
			ptl_event_t ev = { .type = PTL_EVENT_SEARCH, .pt_index = upt, .user_ptr = user_ptr,
					   .ni_fail_type = PTL_NI_NO_MATCH };

			ptl_eq_post(ni, ni->pt[pt].eq, &ev);
		}
		if (counting) {
			struct ptl_ct *c = ptl_ct_get(ni, me->ct_handle);

			c->v.success += (me->options & PTL_ME_EVENT_CT_BYTES) ? bytes : found;
			if (!found || !(me->options & PTL_ME_USE_ONCE))
				c->v.failure++;
			ptl_ct_changed(ni, (uint32_t)(c - ni->ct));
		}
	} else if (!u) {
		ptl_event_t ev = { .type = PTL_EVENT_SEARCH, .pt_index = upt, .user_ptr = user_ptr,
				   .ni_fail_type = PTL_NI_NO_MATCH };

		ptl_eq_post(ni, ni->pt[pt].eq, &ev);
		if (counting)	/* 4.3: nothing found */
			ptl_ct_count(ni, me->ct_handle, false, false, 0);
	} else {
		/* each header counts on the entry's counter as it is delivered
		 * (PTL_ME_EVENT_CT_OVERFLOW); a counting search ends with one
		 * failure unless it was a use-once one */
		do {
			unex_deliver(ni, pt, me, user_ptr, u);
			if (me->options & PTL_ME_USE_ONCE)
				break;
		} while ((u = ptl_unex_find(ni, pt, me, (uint32_t)rank, NULL)));
		if (counting && !(me->options & PTL_ME_USE_ONCE))
			ptl_ct_count(ni, me->ct_handle, false, false, 0);
	}
	ptl_unlock(ni);
	return PTL_OK;
}

int PtlMESearch(ptl_handle_ni_t nih, ptl_pt_index_t pt, const ptl_me_t *me, ptl_search_op_t op,
		void *user_ptr)
{
	return me_search(nih, PTL_VIEW_MATCH, pt, me, op, user_ptr);
}

int PtlLESearch(ptl_handle_ni_t nih, ptl_pt_index_t pt, const ptl_le_t *le, ptl_search_op_t op,
		void *user_ptr)
{
	ptl_me_t me;
	int rc = le_to_me(le, &me);

	return rc != PTL_OK ? rc : me_search(nih, PTL_VIEW_NOMATCH, pt, &me, op, user_ptr);
}

/*
 * A target-side operation completed on entry m: the event on the portal
 * table entry's queue, the entry's counter, and for an overflow-list entry
 * the unexpected list (or a priority entry appended while the message was
 * arriving, which would have matched it).
 */
void ptl_target_done(struct ptl_ni *ni, struct ptl_mer *m, ptl_event_t *ev, uint32_t rank,
		     uint32_t pid)
{
	unsigned int o = m->me.options;
	bool ok = ev->ni_fail_type == PTL_NI_OK;

	ev->ptl_list = m->list;
	ev->pt_index = ptl_pt_user(m->pt);
	ev->user_ptr = m->user_ptr;
	ev->initiator = ptl_initiator(ni, rank, pid);
	ev->uid = ni->uid;
	if (!(o & PTL_ME_EVENT_COMM_DISABLE) && (!ok || !(o & PTL_ME_EVENT_SUCCESS_DISABLE)))
		ptl_eq_post(ni, ni->pt[m->pt].eq, ev);
	if (o & PTL_ME_EVENT_CT_COMM)
		ptl_ct_count(ni, m->me.ct_handle, ok, o & PTL_ME_EVENT_CT_BYTES, ev->mlength);
	if (m->list == PTL_OVERFLOW_LIST && ok && ev->type != PTL_EVENT_GET &&
	    ev->type != PTL_EVENT_FETCH_ATOMIC) {
		struct ptl_mer *late = NULL;
		struct ptl_unex u = { .pt = m->pt, .seq = ++ni->seq, .kind = ev->type, .ev = *ev,
				      .rank = rank, .pid = pid };
		int view = ptl_pt_view(m->pt);

		/* a priority entry that matches it now was appended after the
		 * message matched the overflow entry */
		late = ptl_mx_find(ni, m->pt, PTL_PRIORITY_LIST, ev->match_bits, rank, pid, late_ok,
				   &u);
		if (late) {
			unex_deliver(ni, m->pt, &late->me, late->user_ptr, &u);
			if (late->me.options & PTL_ME_USE_ONCE)
				ptl_me_auto_unlink(ni, late, true);
			return;
		}
		if (ni->ux_count[view] < (uint32_t)ni->lim[view].max_unexpected_headers &&
		    ptl_unex_add(ni, &u)) {
			/* the last free header (max_unexpected_headers): a
			 * flow-controlled portal stops taking messages */
			if (ni->ux_count[view] >= (uint32_t)ni->lim[view].max_unexpected_headers)
				ptl_pt_flowctl(ni, m->pt);
			return;
		}
		ni->drops++;	/* unexpected list full */
		ptl_pt_flowctl(ni, m->pt);
	}
}
