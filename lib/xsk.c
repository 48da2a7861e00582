// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin: the AF_XDP packet path (include/spin/xsk.h, docs/xsk.md).
 *
 * The socket is set up with the plain AF_XDP socket options and mmap(), not
 * libxdp: no new dependency, no XDP program of libxdp's to keep out of the
 * way (the spin runtime is the interface's XDP program and owns the XSKMAP),
 * and full control over need_wakeup, the copy/zero-copy fallback and the
 * kernel's TX budget.
 *
 * UMEM layout: frames [0, nrx) receive (fill ring -> RX ring -> fill ring),
 * frames [nrx, frames) transmit (free stack -> TX ring -> completion ring ->
 * free stack).  Every ring has nrx = frames/2 entries, so the fill ring can
 * always take back every RX frame and the completion ring every TX frame.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_xdp.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <spin/xsk.h>

#include "libspin_internal.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif
/* Linux 6.17+: frames one sendto() may transmit in copy mode (default 32) */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

#define XSK_FRAME	SPIN_XSK_FRAME_SIZE
#define XSK_TX_BATCH	64		/* descriptors posted per kick */
#define XSK_WAIT_MS	1000		/* give up a send without progress */
#define XSK_MAX_QUEUE	64		/* spin_xsks max_entries */
#define XSK_BUSY_MS	1000		/* retry a bind that finds the queue busy */

struct xring {
	uint32_t *prod, *cons, *flags;
	void *ring;			/* struct xdp_desc[] or __u64[] */
	uint32_t size, mask;
	uint32_t cached_prod, cached_cons;
	void *map;
	size_t map_len;
};

/* Loopback (sends to this process's own address): a frame the runtime
 * handed to the socket, queued here instead of the RX ring. */
struct lo_frame {
	struct lo_frame *next;
	uint32_t len;
	uint8_t data[];
};
#define XSK_LO_MAX	65536		/* frames queued at most */
#define XSK_LO_HOPS	4		/* runtime passes per frame sent (an
					 * answer to self is run again) */
#define XSK_LO_BUF	4096		/* a runtime pass's output: a frame,
					 * grown by a reply, and metadata */

struct peer_cache {
	uint64_t gen;			/* spin_cfg.gen when read; 0: empty */
	struct spin_peer p;
};

struct spin_xsk {
	struct spin_rt *rt;
	int fd;
	int ifindex;
	uint32_t queue;
	bool has_ident;			/* rank/pid set (spin_xsk_set_ident) */
	uint32_t my_rank, my_pid;
	bool zc;
	bool registered;
	bool credits;		/* it set the runtime's receive credits (credits_start) */
	uint8_t *umem;
	size_t umem_len;
	uint32_t frames, nrx;
	struct xring fill, comp, rx, tx;
	uint64_t *tx_free;		/* stack of free TX frame addresses */
	uint32_t n_free;
	struct spin_xsk_stats st;
	struct peer_cache peers[SPIN_MAX_PEERS];
	/* spin_xsk_recv_msg */
	struct spin_reasm ra;		/* messages being reassembled */
	struct spin_reasm_dst rm_dst;	/* the caller's buffer during a call */
	int rm_ret;			/* SPIN_REASM_MORE until there is a result */
	/* loopback: frames for this socket from runs of the runtime over
	 * frames this process sent itself (lo_inject) */
	pthread_mutex_t lo_mu;
	struct lo_frame *lo_head, *lo_tail;
	uint32_t lo_n;			/* queued (atomic reads without lo_mu) */
	int lo_efd;			/* eventfd: readable while frames are queued */
	bool lo_signaled;		/* ... it is (under lo_mu, with the queue) */
	uint8_t lo_out[XSK_LO_BUF];	/* scratch for lo_inject (sender side) */
	uint8_t lo_frame[XSK_FRAME];	/* ... and a frame it runs again */
};

/* --------------------------------------------------------------- rings -- */

/* Producer side (fill, TX): free slots. */
static uint32_t prod_free(struct xring *r)
{
	uint32_t f = r->size - (r->cached_prod - r->cached_cons);

	if (f)
		return f;
	r->cached_cons = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE);
	return r->size - (r->cached_prod - r->cached_cons);
}

static void prod_submit(struct xring *r)
{
	__atomic_store_n(r->prod, r->cached_prod, __ATOMIC_RELEASE);
}

/* Consumer side (RX, completion): entries ready. */
static uint32_t cons_avail(struct xring *r)
{
	uint32_t n = r->cached_prod - r->cached_cons;

	if (n)
		return n;
	r->cached_prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
	return r->cached_prod - r->cached_cons;
}

static void cons_release(struct xring *r)
{
	__atomic_store_n(r->cons, r->cached_cons, __ATOMIC_RELEASE);
}

static bool needs_wakeup(struct xring *r)
{
	return __atomic_load_n(r->flags, __ATOMIC_RELAXED) & XDP_RING_NEED_WAKEUP;
}

static int ring_map(int fd, struct xring *r, const struct xdp_ring_offset *off,
		    uint32_t size, size_t elem, uint64_t pgoff)
{
	r->map_len = off->desc + (size_t)size * elem;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		      fd, (off_t)pgoff);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	r->prod = (uint32_t *)((uint8_t *)r->map + off->producer);
	r->cons = (uint32_t *)((uint8_t *)r->map + off->consumer);
	r->flags = (uint32_t *)((uint8_t *)r->map + off->flags);
	r->ring = (uint8_t *)r->map + off->desc;
	r->size = size;
	r->mask = size - 1;
	r->cached_prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
	r->cached_cons = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE);
	return 0;
}

static void ring_unmap(struct xring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	memset(r, 0, sizeof(*r));
}

/* ---------------------------------------------------------- open/close -- */

static void xsk_teardown(struct spin_xsk *x)
{
	ring_unmap(&x->fill);
	ring_unmap(&x->comp);
	ring_unmap(&x->rx);
	ring_unmap(&x->tx);
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}

/* Create, configure and bind the socket with bind flags `flags`; returns 0
 * or -errno (stage in *what). */
static int xsk_setup(struct spin_xsk *x, uint16_t flags, const char **what)
{
	struct xdp_umem_reg mr = {
		.addr = (uintptr_t)x->umem, .len = x->umem_len,
		.chunk_size = XSK_FRAME, .headroom = 0,
	};
	struct sockaddr_xdp sa = {
		.sxdp_family = AF_XDP, .sxdp_ifindex = x->ifindex,
		.sxdp_queue_id = x->queue, .sxdp_flags = flags,
	};
	struct xdp_mmap_offsets off;
	socklen_t ol = sizeof(off);
	uint32_t n = x->nrx, i;
	int err;

	x->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		*what = "socket(AF_XDP)";
		return -errno;
	}
	*what = "setsockopt";
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_FILL_RING, &n, sizeof(n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n, sizeof(n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_RX_RING, &n, sizeof(n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_TX_RING, &n, sizeof(n)))
		return -errno;
	*what = "getsockopt(XDP_MMAP_OFFSETS)";
	if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &ol))
		return -errno;
	*what = "mmap of the rings";
	if ((err = ring_map(x->fd, &x->fill, &off.fr, n, sizeof(__u64), XDP_UMEM_PGOFF_FILL_RING)) ||
	    (err = ring_map(x->fd, &x->comp, &off.cr, n, sizeof(__u64),
			    XDP_UMEM_PGOFF_COMPLETION_RING)) ||
	    (err = ring_map(x->fd, &x->rx, &off.rx, n, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING)) ||
	    (err = ring_map(x->fd, &x->tx, &off.tx, n, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING)))
		return err;
	/* every RX frame goes to the fill ring */
	for (i = 0; i < n; i++)
		((__u64 *)x->fill.ring)[(x->fill.cached_prod + i) & x->fill.mask] =
			(uint64_t)i * XSK_FRAME;
	x->fill.cached_prod += n;
	prod_submit(&x->fill);
	*what = "bind";
	if (bind(x->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	return 0;
}

/*
 * Receive credits (spin_cfg.xsk_room, wire.h): the runtime hands this
 * socket at most xsk_room frames beyond the xsk_taken it took back from its
 * receive ring, so the ring (and the fill ring behind it, which has a slot
 * for every frame) never overflows.  The margin covers frames the runtime
 * counted that are still on their way into the ring, which a resync (the
 * ring found empty: everything sent was taken) counts as taken.
 */
#define XSK_CREDIT_MARGIN	64

/* the credits of this socket's queue (wire.h), or NULL */
static struct spin_xsk_cr *credits_of(struct spin_xsk *x)
{
	struct spin_cfg *cfg = x->rt->cfg;

	return cfg && x->queue < SPIN_MAX_PROCS ? &cfg->xsk_cr[x->queue] : NULL;
}

static void credits_start(struct spin_xsk *x)
{
	struct spin_xsk_cr *cr = credits_of(x);

	/* each queue of a process's slot has its own (queues past the
	 * slots have none: their frames beyond the ring are lost and sent
	 * again) */
	if (!cr || x->nrx <= 2 * XSK_CREDIT_MARGIN)
		return;
	__atomic_store_n(&cr->room, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&cr->taken, __atomic_load_n(&cr->sent, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&cr->room, x->nrx - XSK_CREDIT_MARGIN, __ATOMIC_RELEASE);
	x->credits = true;
}

static void credits_stop(struct spin_xsk *x)
{
	struct spin_xsk_cr *cr = credits_of(x);

	if (x->credits && cr)
		__atomic_store_n(&cr->room, 0, __ATOMIC_RELEASE);
	x->credits = false;
}

/* n more frames taken from the receive ring and back in the fill ring;
 * `empty`: the ring has nothing more. */
static void credits_taken(struct spin_xsk *x, uint32_t n, bool empty)
{
	struct spin_xsk_cr *cr = credits_of(x);
	uint64_t sent, old, t;

	if (!x->credits || !cr)
		return;
	sent = __atomic_load_n(&cr->sent, __ATOMIC_ACQUIRE);
	old = __atomic_load_n(&cr->taken, __ATOMIC_RELAXED);
	t = empty ? sent : old + n;
	if (t > sent)	/* never ahead of the runtime: its difference is unsigned */
		t = sent;
	if (t == old)	/* (an empty poll stores nothing: the line stays shared) */
		return;
	if (empty && t - old > n)	/* counted by the runtime, never in the ring */
		x->st.credits_lost += t - old - n;
	__atomic_store_n(&cr->taken, t, __ATOMIC_RELEASE);
}

static int xdp_prog_is_runtime(struct spin_xsk *x, uint32_t *attached)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	uint32_t mine = spin_prog_id(x->rt->prog_rx_fd);

	*attached = 0;
	if (bpf_xdp_query(x->ifindex, 0, &q))
		return 0;
	*attached = q.prog_id ? q.prog_id : q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
	return mine && (q.prog_id == mine || q.drv_prog_id == mine || q.skb_prog_id == mine);
}

int spin_xsk_open(struct spin_rt *rt, const struct spin_xsk_opts *o, struct spin_xsk **out)
{
	struct spin_xsk_opts def = {};
	struct spin_xsk *x;
	const char *what = "";
	uint32_t attached, i;
	int err, fd;

	if (out)
		*out = NULL;
	if (!rt || !out)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_open: no runtime or output pointer");
	if (!o)
		o = &def;
	if (o->queue >= XSK_MAX_QUEUE)
		return spin_seterr(SPIN_EUSAGE, "AF_XDP queue %u out of range (0..%d)", o->queue,
				   XSK_MAX_QUEUE - 1);
	if (o->frames && (o->frames < 64 || o->frames > 65536 || (o->frames & (o->frames - 1))))
		return spin_seterr(SPIN_EUSAGE,
				   "AF_XDP UMEM frames %u: want a power of 2 from 64 to 65536",
				   o->frames);
	x = calloc(1, sizeof(*x));
	if (!x)
		return spin_seterr(SPIN_EFAIL, "spin_xsk_open: out of memory");
	x->rt = rt;
	x->fd = -1;
	pthread_mutex_init(&x->lo_mu, NULL);
	x->lo_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (x->lo_efd < 0) {
		free(x);
		return spin_seterr(SPIN_EFAIL, "spin_xsk_open: eventfd: %s", strerror(errno));
	}
	x->queue = o->queue;
	x->frames = o->frames ? o->frames : SPIN_XSK_DEF_FRAMES;
	x->nrx = x->frames / 2;
	/* no ring of delivered messages (remember_done): the runtime drops
	 * duplicates of the messages it remembers (docs/xsk.md) */
	x->ra.who = "spin_xsk_recv_msg";
	x->ifindex = if_nametoindex(rt->ifname);
	if (!x->ifindex) {
		err = spin_seterr(SPIN_ENODEV, "interface '%s' not found", rt->ifname);
		goto fail;
	}
	if (!xdp_prog_is_runtime(x, &attached)) {
		if (attached)
			err = spin_seterr(SPIN_ENOENT,
					  "AF_XDP socket on %s: XDP program %u on %s is not the spin runtime: is the runtime attached? (spinctl attach %s)",
					  rt->ifname, attached, rt->ifname, rt->ifname);
		else
			err = spin_seterr(SPIN_ENOENT,
					  "AF_XDP socket on %s: no XDP program on %s: is the runtime attached? (spinctl attach %s)",
					  rt->ifname, rt->ifname, rt->ifname);
		goto fail;
	}
	x->umem_len = (size_t)x->frames * XSK_FRAME;
	x->umem = mmap(NULL, x->umem_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	x->tx_free = calloc(x->frames - x->nrx, sizeof(*x->tx_free));
	if (x->umem == MAP_FAILED || !x->tx_free) {
		if (x->umem == MAP_FAILED)
			x->umem = NULL;
		err = spin_seterr(SPIN_EFAIL, "AF_XDP socket on %s: cannot allocate %zu bytes of UMEM",
				  rt->ifname, x->umem_len);
		goto fail;
	}
	for (i = x->nrx; i < x->frames; i++)
		x->tx_free[x->n_free++] = (uint64_t)i * XSK_FRAME;

	err = 0;
	if (o->zero_copy) {
		err = xsk_setup(x, XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP, &what);
		if (!err)
			x->zc = true;
		else
			xsk_teardown(x);
	}
	if (!o->zero_copy || err) {
		uint64_t until = spin_now_ms() + XSK_BUSY_MS;

		/* a socket closed just before releases its queue in deferred
		 * work: bind says EBUSY for a moment */
		while ((err = xsk_setup(x, XDP_COPY | XDP_USE_NEED_WAKEUP, &what)) == -EBUSY &&
		       spin_now_ms() < until) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			xsk_teardown(x);
			nanosleep(&ts, NULL);
		}
		if (err) {
			int e = -err;

			xsk_teardown(x);
			if (e == EINVAL && !strcmp(what, "bind"))
				err = spin_seterr(SPIN_EUSAGE,
						  "AF_XDP socket on %s queue %u: bind: %s: does %s have that queue?",
						  rt->ifname, x->queue, strerror(e), rt->ifname);
			else if (e == EBUSY)
				err = spin_seterr(SPIN_EEXIST,
						  "AF_XDP socket on %s queue %u: %s: %s: another AF_XDP socket is bound to it (for %d ms)",
						  rt->ifname, x->queue, what, strerror(e), XSK_BUSY_MS);
			else
				err = spin_seterr(e == EPERM || e == EACCES ? SPIN_EPERM :
						  e == EAFNOSUPPORT ? SPIN_EXDP : SPIN_EIO,
						  "AF_XDP socket on %s queue %u: %s: %s%s", rt->ifname,
						  x->queue, what, strerror(e),
						  e == EPERM || e == EACCES ? " (need root: CAP_NET_RAW)" :
						  e == EAFNOSUPPORT ? " (kernel without AF_XDP)" : "");
			goto fail;
		}
	}
	/* best effort (Linux 6.17+): let one sendto() transmit a whole batch */
	{
		uint32_t budget = XSK_TX_BATCH;

		(void)setsockopt(x->fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof(budget));
	}
	fd = x->fd;
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_XSKS], &x->queue, &fd, BPF_NOEXIST)) {
		int e = errno;

		err = spin_seterr(e == EEXIST ? SPIN_EEXIST : spin_errno_code(e),
				  "AF_XDP socket on %s queue %u: cannot register it in spin_xsks: %s%s",
				  rt->ifname, x->queue, strerror(e),
				  e == EEXIST ? " (another process owns this queue)" : "");
		goto fail;
	}
	x->registered = true;
	credits_start(x);
	x->st.zero_copy = x->zc;
	x->st.queue = x->queue;
	*out = x;
	return 0;
fail:
	spin_xsk_close(x);
	return err;
}

void spin_xsk_close(struct spin_xsk *x)
{
	if (!x)
		return;
	if (x->registered) {
		credits_stop(x);
		/* ours: another socket cannot take the key while we hold it */
		(void)bpf_map_delete_elem(x->rt->map_fd[SPIN_M_XSKS], &x->queue);
	}
	xsk_teardown(x);
	spin_reasm_free(&x->ra);
	while (x->lo_head) {
		struct lo_frame *f = x->lo_head;

		x->lo_head = f->next;
		free(f);
	}
	if (x->lo_efd >= 0)
		close(x->lo_efd);
	pthread_mutex_destroy(&x->lo_mu);
	if (x->umem)
		munmap(x->umem, x->umem_len);
	free(x->tx_free);
	free(x);
}

int spin_xsk_fd(struct spin_xsk *x)
{
	return x ? x->fd : -1;
}

int spin_xsk_lo_fd(struct spin_xsk *x)
{
	return x ? x->lo_efd : -1;
}

int spin_xsk_stats(struct spin_xsk *x, struct spin_xsk_stats *st)
{
	struct xdp_statistics ks = {};
	socklen_t l = sizeof(ks);

	if (!x || !st)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_stats: NULL argument");
	if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &ks, &l))
		return spin_seterr(SPIN_EIO, "AF_XDP socket on %s: XDP_STATISTICS: %s",
				   x->rt->ifname, strerror(errno));
	x->st.k_rx_dropped = ks.rx_dropped;
	x->st.k_rx_invalid_descs = ks.rx_invalid_descs;
	x->st.k_tx_invalid_descs = ks.tx_invalid_descs;
	x->st.k_rx_ring_full = ks.rx_ring_full;
	x->st.k_rx_fill_ring_empty = ks.rx_fill_ring_empty_descs;
	x->st.k_tx_ring_empty = ks.tx_ring_empty_descs;
	x->st.rx_stale = x->ra.stale;
	*st = x->st;
	return 0;
}

/* ---------------------------------------------------------------- send -- */

/* Completed TX frames back to the free stack. */
static void tx_reclaim(struct spin_xsk *x)
{
	uint32_t n = cons_avail(&x->comp), i;

	for (i = 0; i < n; i++)
		x->tx_free[x->n_free++] =
			((__u64 *)x->comp.ring)[(x->comp.cached_cons + i) & x->comp.mask];
	x->comp.cached_cons += n;
	if (n)
		cons_release(&x->comp);
}

/* Wake the kernel's TX path if it asks for it.  Returns 0, or -errno for
 * errors other than "busy, try again". */
static int tx_kick(struct spin_xsk *x)
{
	/* copy mode always needs the call; zero-copy only when the driver
	 * sleeps */
	if (x->zc && !needs_wakeup(&x->tx))
		return 0;
	x->st.tx_kicks++;
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
		return 0;
	switch (errno) {
	case EAGAIN:	/* copy mode: more descriptors than one call's budget */
	case EBUSY:	/* another thread/NAPI is transmitting, or the device was busy */
	case ENOBUFS:
	case EINTR:
		return 0;
	default:
		return -errno;
	}
}

/* Wait a little for the kernel to make TX progress. */
static void tx_wait(struct spin_xsk *x)
{
	struct pollfd p = { .fd = x->fd, .events = POLLOUT };

	x->st.tx_waits++;
	if (x->zc) {
		(void)poll(&p, 1, 1);
	} else {
		/* copy mode completes frames synchronously in sendto(); a
		 * busy device (veth ring full) needs a moment */
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
}

static int tx_error(struct spin_xsk *x, int e)
{
	return spin_seterr(e == ENETDOWN || e == ENXIO ? SPIN_ENODEV : SPIN_EIO,
			   "AF_XDP send on %s queue %u: sendto: %s%s", x->rt->ifname, x->queue,
			   strerror(e), e == ENETDOWN ? " (interface down?)" : "");
}

/* Post the descriptors written so far and kick. */
static int tx_flush(struct spin_xsk *x)
{
	int e;

	prod_submit(&x->tx);
	e = tx_kick(x);
	return e ? tx_error(x, -e) : 0;
}

/* Until the kernel consumed every TX descriptor. */
static int tx_drain(struct spin_xsk *x)
{
	uint64_t deadline = 0;
	uint32_t last = __atomic_load_n(x->tx.cons, __ATOMIC_ACQUIRE);
	int err;

	for (;;) {
		uint32_t c = __atomic_load_n(x->tx.cons, __ATOMIC_ACQUIRE);

		tx_reclaim(x);
		if (c == x->tx.cached_prod)
			return 0;
		if (c != last || !deadline) {
			last = c;
			deadline = spin_now_ms() + XSK_WAIT_MS;
		} else if (spin_now_ms() > deadline) {
			return spin_seterr(SPIN_EIO,
					   "AF_XDP send on %s queue %u: the kernel took no frame for %d ms",
					   x->rt->ifname, x->queue, XSK_WAIT_MS);
		}
		if ((err = tx_flush(x)))
			return err;
		if (__atomic_load_n(x->tx.cons, __ATOMIC_ACQUIRE) == c)
			tx_wait(x);
	}
}

static int peer_lookup(struct spin_xsk *x, uint32_t rank, struct spin_peer *out)
{
	struct peer_cache *c = &x->peers[rank];
	uint64_t gen = __atomic_load_n(&x->rt->cfg->gen, __ATOMIC_ACQUIRE) + 1;
	int err;

	if (c->gen != gen) {
		err = spin_peer_get(x->rt, rank, &c->p);
		if (err)
			return err;
		c->gen = gen;
	}
	*out = c->p;
	return 0;
}

/* ------------------------------------------------------------ loopback -- */

/*
 * A message to this process's own address never reaches the wire: a veth
 * or NIC does not hand a frame back to the interface that sent it.  Each
 * of its frames is run through the runtime's XDP program instead
 * (BPF_PROG_RUN on the program this socket serves, as if it had arrived on
 * the socket's queue), so matching, use-once claims, duplicate windows,
 * host-window deposits, events and handlers are exactly those of any other
 * sender.  What the program does with the frame decides where it goes:
 * XDP_REDIRECT (to this socket: an AF_XDP entry's packet, an ack or reply
 * for the library) queues the output frame for spin_xsk_recv(); XDP_TX (an
 * ack, a reply or a handler's put, built in place) is run again when it is
 * addressed to this process, else transmitted on the TX ring; anything else
 * is the runtime dropping it (counted in its stats).  docs/design.md,
 * "Sends to self".
 */

/* A frame the runtime produced: addressed to this socket's address? */
static bool lo_for_self(const struct spin_xsk *x, const uint8_t *f, uint32_t len)
{
	const struct iphdr *ip = (const void *)(f + sizeof(struct ethhdr));
	const struct udphdr *udp = (const void *)(ip + 1);

	if (len < sizeof(struct ethhdr) + sizeof(*ip) + sizeof(*udp) ||
	    ((const struct ethhdr *)f)->h_proto != htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP)
		return false;
	return ip->daddr == x->rt->cfg->my_ip && udp->dest == x->rt->cfg->port;
}

static int lo_push(struct spin_xsk *x, const uint8_t *f, uint32_t len)
{
	struct lo_frame *lf;

	if (__atomic_load_n(&x->lo_n, __ATOMIC_RELAXED) >= XSK_LO_MAX) {
		x->st.lo_dropped++;
		return 0;	/* as a full RX ring: a reliable sender sends again */
	}
	lf = malloc(sizeof(*lf) + len);
	if (!lf) {
		x->st.lo_dropped++;
		return 0;
	}
	lf->next = NULL;
	lf->len = len;
	memcpy(lf->data, f, len);
	pthread_mutex_lock(&x->lo_mu);
	if (x->lo_tail)
		x->lo_tail->next = lf;
	else
		x->lo_head = lf;
	x->lo_tail = lf;
	__atomic_add_fetch(&x->lo_n, 1, __ATOMIC_RELEASE);
	/* readable exactly while the queue holds frames: set and cleared
	 * with it, under the lock (a sleeper is never woken for nothing,
	 * again and again) */
	if (!x->lo_signaled) {
		if (write(x->lo_efd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0) {
			/* EAGAIN: the counter is full, it is readable anyway */
		}
		x->lo_signaled = true;
	}
	pthread_mutex_unlock(&x->lo_mu);
	return 0;
}

static struct lo_frame *lo_pop(struct spin_xsk *x)
{
	struct lo_frame *lf;

	pthread_mutex_lock(&x->lo_mu);
	lf = x->lo_head;
	if (lf) {
		x->lo_head = lf->next;
		if (!x->lo_head) {
			uint64_t v;

			x->lo_tail = NULL;
			if (x->lo_signaled && read(x->lo_efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: nothing to clear */
			}
			x->lo_signaled = false;
		}
		__atomic_sub_fetch(&x->lo_n, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&x->lo_mu);
	return lf;
}

int spin_xsk_lo_push(struct spin_xsk *x, const uint8_t *f, uint32_t len)
{
	return x ? lo_push(x, f, len) : 0;
}

void spin_xsk_set_ident(struct spin_xsk *x, uint32_t rank, uint32_t pid)
{
	if (!x)
		return;
	x->my_rank = rank;
	x->my_pid = pid;
	x->has_ident = true;
}

/* Transmit a whole frame (the runtime's output for another host). */
static int tx_raw(struct spin_xsk *x, const uint8_t *f, uint32_t len)
{
	uint64_t deadline = spin_now_ms() + XSK_WAIT_MS;
	struct xdp_desc *d;
	uint64_t addr;
	int err;

	if (len > XSK_FRAME)
		return spin_seterr(SPIN_EUSAGE, "loopback: a %u-byte frame to transmit", len);
	for (;;) {
		if (!x->n_free)
			tx_reclaim(x);
		if (x->n_free && prod_free(&x->tx))
			break;
		if ((err = tx_flush(x)))
			return err;
		if (spin_now_ms() > deadline)
			return spin_seterr(SPIN_EIO,
					   "AF_XDP send on %s queue %u: no TX frame came back for %d ms",
					   x->rt->ifname, x->queue, XSK_WAIT_MS);
		tx_wait(x);
	}
	addr = x->tx_free[--x->n_free];
	memcpy(x->umem + addr, f, len);
	d = &((struct xdp_desc *)x->tx.ring)[x->tx.cached_prod & x->tx.mask];
	d->addr = addr;
	d->len = len;
	d->options = 0;
	x->tx.cached_prod++;
	x->st.tx_packets++;
	x->st.tx_bytes += len;
	return tx_flush(x);
}

/* Run frame f (len bytes, addressed to this process) through the runtime. */
static int lo_inject(struct spin_xsk *x, const uint8_t *f, uint32_t len)
{
	for (int hop = 0; hop < XSK_LO_HOPS; hop++) {
		struct xdp_md ctx_in = { .data = 0, .data_end = len,
					 .ingress_ifindex = (uint32_t)x->ifindex,
					 .rx_queue_index = x->queue }, ctx_out = {};
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f, .data_size_in = len,
			    .data_out = x->lo_out, .data_size_out = sizeof(x->lo_out),
			    .ctx_in = &ctx_in, .ctx_size_in = sizeof(ctx_in),
			    .ctx_out = &ctx_out, .ctx_size_out = sizeof(ctx_out), .repeat = 1);
		const uint8_t *out;
		uint32_t olen;

		if (bpf_prog_test_run_opts(x->rt->prog_rx_fd, &o))
			return spin_seterr(spin_errno_code(errno),
					   "send to self on %s: running the runtime (BPF_PROG_RUN): %s",
					   x->rt->ifname, strerror(errno));
		x->st.lo_runs++;
		if (ctx_out.data > ctx_out.data_end || ctx_out.data_end > o.data_size_out ||
		    ctx_out.data_end > sizeof(x->lo_out))
			return spin_seterr(SPIN_EIO, "send to self on %s: the runtime's output frame "
					   "(%u..%u of %u bytes) is not a frame", x->rt->ifname,
					   ctx_out.data, ctx_out.data_end, o.data_size_out);
		out = x->lo_out + ctx_out.data;	/* past any metadata */
		olen = ctx_out.data_end - ctx_out.data;
		switch (o.retval) {
		case XDP_REDIRECT:
			/* to the socket of its queue, ours, when it is addressed
			 * to us; else a handler's put redirected to another
			 * interface, which a pass here cannot complete.  It
			 * never enters the ring: its receive credit is back */
			credits_taken(x, 1, false);
			if (!lo_for_self(x, out, olen))
				goto drop;
			return lo_push(x, out, olen);
		case XDP_TX:
			if (!lo_for_self(x, out, olen))
				return tx_raw(x, out, olen);
			/* an answer to ourselves: run it again (from a copy:
			 * the output buffer is the next pass's) */
			if (olen > XSK_FRAME)
				goto drop;
			memcpy(x->lo_frame, out, olen);
			f = x->lo_frame;
			len = olen;
			continue;
		default:
			/* dropped by the runtime (its stats say why), or a
			 * fan-out for spin_tc, which a loopback pass cannot
			 * reach */
			goto drop;
		}
	}
drop:
	x->st.lo_dropped++;
	return 0;
}

/* Packet idx (cut at seg) of a message into frame f (cap bytes): the one
 * way a frame is built, for the wire and for a loopback pass alike.
 * Returns its length, or <= 0. */
static int pkt_build(uint8_t *f, size_t cap, const struct spin_frame_addr *fa,
		     const struct spin_msg_args *args, const void *buf, uint32_t len,
		     uint32_t msg_len, uint32_t seg, uint32_t idx, uint16_t add_flags)
{
	uint32_t off = idx * seg, pay = len ? (len - off < seg ? len - off : seg) : 0;
	struct spin_hdr h;
	int flen;

	spin_hdr_build(&h, args, msg_len, off);
	if (add_flags) {
		h.flags |= htons(add_flags);
		spin_auth_sign(&args->auth, &h);	/* the tag covers flags */
	}
	flen = spin_frame_build(f, cap, fa, &h, pay ? (const uint8_t *)buf + off : NULL, pay);
	/* the runtime checks it: a frame damaged on the way is dropped (and
	 * sent again, for reliable messages) */
	if (flen > 0)
		spin_frame_csum(f, (size_t)flen);
	return flen;
}

/* len payload bytes from buf, in a message of msg_len bytes (msg_len != len
 * only for a header-only GET, whose msg_len is the requested length).
 * order: a permutation of the packets (npick 0), or with npick the indexes
 * of the npick packets to send (a retransmission); the last packet sent
 * gets last_flags added to its header's flags. */
static int xsk_send(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		    const void *buf, uint32_t len, uint32_t msg_len, const uint32_t *order,
		    uint32_t npick, uint16_t last_flags, uint32_t *msg_id, bool post_only)
{
	static const uint8_t zero[6];
	struct spin_cfg *cfg;
	struct spin_frame_addr fa = {};
	struct spin_msg_args args;
	struct spin_peer peer;
	uint32_t seg, npkts, i, batch = 0;
	uint64_t deadline = 0;
	bool self;
	int err;

	if (!x || !a || (len && !buf))
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_send: NULL argument");
	if (dst_rank >= SPIN_MAX_PEERS)
		return spin_seterr(SPIN_EUSAGE, "peer rank %u out of range (0..%u)", dst_rank,
				   SPIN_MAX_PEERS - 1);
	if (len > SPIN_MAX_MSG)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_send: %u bytes is more than the %u a message may have",
				   len, SPIN_MAX_MSG);
	cfg = x->rt->cfg;
	args = *a;
	seg = args.seg_size ? args.seg_size : SPIN_MAX_SEG;
	if (seg > SPIN_MAX_SEG)
		return spin_seterr(SPIN_EUSAGE,
				   "spin_xsk_send: seg_size %u larger than one frame holds (%d)",
				   seg, SPIN_MAX_SEG);
	npkts = spin_npkts(len, seg);
	if (npkts > SPIN_MSG_MAX_PKTS)
		return spin_seterr(SPIN_EUSAGE,
				   "spin_xsk_send: %u bytes in %u-byte packets: a message has at most %u packets",
				   len, seg, SPIN_MSG_MAX_PKTS);
	if (npick) {
		if (!order)
			return spin_seterr(SPIN_EUSAGE, "spin_xsk_send: packets to pick, but no list");
		for (i = 0; i < npick; i++)
			if (order[i] >= npkts)
				return spin_seterr(SPIN_EUSAGE,
						   "spin_xsk_send: packet %u of a %u-packet message",
						   order[i], npkts);
	} else if ((err = spin_check_order("spin_xsk_send", order, npkts))) {
		return err;
	} else {
		npick = npkts;
	}
	if ((err = peer_lookup(x, dst_rank, &peer)))
		return err;
	if (!peer.valid)
		return spin_seterr(SPIN_ENOENT, "no peer with rank %u on %s (spinctl peer add %s %u IP)",
				   dst_rank, x->rt->ifname, x->rt->ifname, dst_rank);
	if (peer.ifindex && peer.ifindex != (uint32_t)x->ifindex)
		return spin_seterr(SPIN_EUSAGE,
				   "peer rank %u is behind interface %u, not %s where this AF_XDP socket is",
				   dst_rank, peer.ifindex, x->rt->ifname);
	memcpy(fa.src_mac, memcmp(peer.src_mac, zero, 6) ? peer.src_mac : cfg->my_mac, 6);
	memcpy(fa.dst_mac, peer.mac, 6);
	fa.src_ip = peer.src_ip ? peer.src_ip : cfg->my_ip;
	fa.dst_ip = peer.ip;
	fa.sport = ntohs(cfg->port);
	fa.dport = ntohs(peer.port ? peer.port : cfg->port);
	/* to this process itself, or another on this interface: through the
	 * runtime, not the wire (docs/design.md, "Sends to self") */
	self = fa.dst_ip == fa.src_ip && fa.dport == fa.sport;

	args.seg_size = seg;
	args.op = args.op ? args.op : SPIN_OP_PUT;
	args.src_rank = x->has_ident ? x->my_rank : cfg->my_rank;
	args.src_pid = x->has_ident ? x->my_pid : cfg->my_pid;
	/* the destination process rides in pt_index (wire.h, SPIN_MAX_PT) */
	args.pt_index = (uint16_t)SPIN_PT_OF((uint32_t)peer.slot, args.pt_index & 0xffu);
	args.dst_rank = dst_rank;
	args.job_key = __atomic_load_n(&cfg->job_key, __ATOMIC_RELAXED);
	args.auth = x->rt->auth;
	if (!args.msg_id)
		args.msg_id = spin_rt_msg_id(x->rt);
	if (msg_id)
		*msg_id = args.msg_id;

	if (self) {
		for (i = 0; i < npick; i++) {
			uint8_t f[XSK_FRAME];
			int flen = pkt_build(f, sizeof(f), &fa, &args, buf, len, msg_len, seg,
					     order ? order[i] : i, i + 1 == npick ? last_flags : 0);

			if (flen <= 0)
				return spin_seterr(SPIN_EUSAGE, "spin_xsk_send: cannot build a frame");
			x->st.lo_packets++;
			if ((err = lo_inject(x, f, (uint32_t)flen)))
				return err;
		}
		x->st.tx_msgs++;
		return 0;
	}
	for (i = 0; i < npick; ) {
		struct xdp_desc *d;
		uint64_t addr;
		int flen;

		if (!x->n_free)
			tx_reclaim(x);
		if (!x->n_free || !prod_free(&x->tx)) {
			/* post what we have, let the kernel catch up */
			if ((err = tx_flush(x)))
				return err;
			batch = 0;
			tx_reclaim(x);
			if (!x->n_free || !prod_free(&x->tx)) {
				if (!deadline)
					deadline = spin_now_ms() + XSK_WAIT_MS;
				else if (spin_now_ms() > deadline)
					return spin_seterr(SPIN_EIO,
							   "AF_XDP send on %s queue %u: no TX frame came back for %d ms",
							   x->rt->ifname, x->queue, XSK_WAIT_MS);
				tx_wait(x);
				continue;
			}
		}
		deadline = 0;
		addr = x->tx_free[--x->n_free];
		flen = pkt_build(x->umem + addr, XSK_FRAME, &fa, &args, buf, len, msg_len, seg,
				 order ? order[i] : i, i + 1 == npick ? last_flags : 0);
		d = &((struct xdp_desc *)x->tx.ring)[x->tx.cached_prod & x->tx.mask];
		d->addr = addr;
		d->len = (uint32_t)flen;
		d->options = 0;
		x->tx.cached_prod++;
		x->st.tx_packets++;
		x->st.tx_bytes += (uint32_t)flen;
		i++;
		if (++batch == XSK_TX_BATCH) {
			if ((err = tx_flush(x)))
				return err;
			batch = 0;
		}
	}
	x->st.tx_msgs++;
	/* posted: the frames hold copies, buf may be reused already */
	return post_only ? 0 : tx_drain(x);
}

int spin_xsk_send(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		  const void *buf, uint32_t len, const uint32_t *order, uint32_t *msg_id)
{
	return xsk_send(x, dst_rank, a, buf, len, len, order, 0, 0, msg_id, false);
}

int spin_xsk_send_pkts(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		       const void *buf, uint32_t len, const uint32_t *pkts, uint32_t n,
		       uint16_t last_flags, bool post_only)
{
	return xsk_send(x, dst_rank, a, buf, len, len, pkts, pkts ? n : 0, last_flags, NULL,
			post_only);
}

int spin_xsk_post(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		  const void *buf, uint32_t len, uint32_t *msg_id)
{
	return xsk_send(x, dst_rank, a, buf, len, len, NULL, 0, 0, msg_id, true);
}

uint32_t spin_xsk_rx_frames(const struct spin_xsk *x)
{
	return x ? x->nrx : 0;
}

bool spin_xsk_rx_pending(const struct spin_xsk *x)
{
	return x && (__atomic_load_n(x->rx.prod, __ATOMIC_ACQUIRE) !=
		     __atomic_load_n(x->rx.cons, __ATOMIC_RELAXED) ||
		     __atomic_load_n(&x->lo_n, __ATOMIC_ACQUIRE));
}

int spin_xsk_flush(struct spin_xsk *x)
{
	if (!x)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_flush: NULL socket");
	return tx_drain(x);
}

/* A GET of length bytes (a's msg_id, or a new one), with nbytes of a
 * re-get's bitmap (wire.h) as its payload or none. */
static int get_send(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		    uint32_t length, const uint64_t *words, uint32_t nbytes, uint32_t *msg_id,
		    const char *who)
{
	struct spin_msg_args g;

	if (length > SPIN_MAX_MSG)
		return spin_seterr(SPIN_EUSAGE, "%s: %u bytes is more than the %u a message may have",
				   who, length, SPIN_MAX_MSG);
	g = *a;
	g.op = SPIN_OP_GET;
	g.seg_size = 0;
	return xsk_send(x, dst_rank, &g, words, nbytes, length, NULL, 0, 0, msg_id, false);
}

int spin_xsk_send_get(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		      uint32_t length, uint32_t *msg_id)
{
	if (!a)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_send_get: NULL argument");
	return get_send(x, dst_rank, a, length, NULL, 0, msg_id, "spin_xsk_send_get");
}

int spin_xsk_send_reget(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
			uint32_t length, const uint64_t *words, uint32_t nbytes)
{
	if (!a || !words)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_send_reget: NULL argument");
	if (!(a->flags & SPIN_F_REL) || !nbytes || nbytes % 8 || nbytes > SPIN_MAX_SEG)
		return spin_seterr(SPIN_EUSAGE,
				   "spin_xsk_send_reget: a reliable get with 8 to %u bytes of bitmap in whole words, not %u",
				   SPIN_MAX_SEG, nbytes);
	return get_send(x, dst_rank, a, length, words, nbytes, NULL, "spin_xsk_send_reget");
}

/* ------------------------------------------------------------- receive -- */

/* The sPIN packet in a received frame: header copied to *h, payload
 * pointer and length; -1 if it is not one. */
static int frame_parse(struct spin_xsk *x, const uint8_t *f, uint32_t flen,
		       struct spin_hdr *h, const uint8_t **pay)
{
	const struct ethhdr *eth = (const void *)f;
	const struct iphdr *ip = (const void *)(eth + 1);
	const struct udphdr *udp = (const void *)(ip + 1);
	uint32_t ulen;
	int n;

	if (flen < SPIN_PAY_OFF || eth->h_proto != htons(ETH_P_IP))
		return -1;
	if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return -1;
	if (udp->dest != x->rt->cfg->port)
		return -1;
	ulen = ntohs(udp->len);
	if (ulen < sizeof(*udp) + sizeof(struct spin_hdr) || 14 + 20 + ulen > flen ||
	    ntohs(ip->tot_len) < 20 + ulen)
		return -1;
	n = spin_hdr_parse(f + SPIN_HDR_OFF, ulen - sizeof(*udp), h);
	if (n < 0)
		return -1;
	/* answers to this process (the runtime checked them, and left them
	 * as they came): their tag again, so that nothing but the job's
	 * runtimes can complete an operation of ours.  Requests handed over
	 * by the runtime carry the matched entry in job_key instead of the
	 * value signed (wire.h): the runtime's check is theirs. */
	if ((h->op == SPIN_OP_REPLY || h->op == SPIN_OP_SACK || h->op == SPIN_OP_ACK) &&
	    !spin_auth_ok(&x->rt->auth, h))
		return -2;
	*pay = f + SPIN_PAY_OFF;
	return n;
}

int spin_xsk_recv(struct spin_xsk *x, spin_xsk_pkt_fn fn, void *ctx, int timeout_ms)
{
	uint32_t n, i, fi;
	int delivered = 0, stop = 0;

	if (!x || !fn)
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_recv: NULL argument");
	/* frames sent to ourselves first (the ones queued now: what their
	 * handling sends to ourselves waits for the next call) */
	for (uint32_t k = __atomic_load_n(&x->lo_n, __ATOMIC_ACQUIRE); k && !stop; k--) {
		struct lo_frame *lf = lo_pop(x);
		const uint8_t *pay = NULL;
		struct spin_hdr h;
		int plen;

		if (!lf)
			break;
		plen = frame_parse(x, lf->data, lf->len, &h, &pay);
		if (plen < 0) {
			x->st.rx_invalid++;
		} else {
			x->st.rx_packets++;
			x->st.rx_bytes += (uint32_t)plen;
			delivered++;
			stop = fn(ctx, &h, pay, (uint32_t)plen);
		}
		free(lf);
	}
	if (delivered || stop)
		timeout_ms = 0;
	n = cons_avail(&x->rx);
	if (!n && timeout_ms != 0) {
		struct pollfd p = { .fd = x->fd, .events = POLLIN };
		int r;

		do
			r = poll(&p, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return spin_seterr(SPIN_EIO, "AF_XDP receive on %s queue %u: poll: %s",
					   x->rt->ifname, x->queue, strerror(errno));
		n = cons_avail(&x->rx);
	}
	if (!n) {
		/* nothing in the ring: everything the runtime counted is
		 * taken (or was dropped on the way, which would otherwise
		 * hold its credit for good: a runtime that then refuses every
		 * frame never lets this socket find one to resync on) */
		credits_taken(x, 0, true);
		return 0;
	}
	/* the fill ring has a slot for every RX frame, so it has room for
	 * each frame taken from the RX ring */
	for (i = 0; i < n && !stop; i++) {
		const struct xdp_desc *d =
			&((struct xdp_desc *)x->rx.ring)[x->rx.cached_cons & x->rx.mask];
		uint64_t addr = d->addr;
		const uint8_t *pay = NULL;
		struct spin_hdr h;
		int plen;

		plen = frame_parse(x, x->umem + addr, d->len, &h, &pay);
		if (plen == -2) {
			x->st.rx_bad_auth++;
		} else if (plen < 0) {
			x->st.rx_invalid++;
		} else {
			x->st.rx_packets++;
			x->st.rx_bytes += (uint32_t)plen;
			delivered++;
			stop = fn(ctx, &h, pay, (uint32_t)plen);
		}
		x->rx.cached_cons++;
		fi = x->fill.cached_prod++ & x->fill.mask;
		((__u64 *)x->fill.ring)[fi] = addr & ~(uint64_t)(XSK_FRAME - 1);
	}
	if (i) {
		cons_release(&x->rx);
		prod_submit(&x->fill);
		if (needs_wakeup(&x->fill))
			(void)recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		credits_taken(x, i, !cons_avail(&x->rx));
	}
	return delivered;
}

/* ------------------------------------------------- message reassembly -- */

static int msg_pkt(void *ctx, const struct spin_hdr *h, const void *payload, uint32_t len)
{
	struct spin_xsk *x = ctx;

	x->rm_ret = spin_reasm_pkt(&x->ra, &x->rm_dst, h, payload, len, NULL);
	return x->rm_ret != SPIN_REASM_MORE;
}

int spin_xsk_recv_msg(struct spin_xsk *x, struct spin_hdr *h, void *buf, size_t cap,
		      int timeout_ms)
{
	uint64_t deadline = timeout_ms > 0 ? spin_now_ms() + (uint64_t)timeout_ms : 0;
	int r;

	if (!x || (cap && !buf))
		return spin_seterr(SPIN_EUSAGE, "spin_xsk_recv_msg: NULL argument");
	/* the first message that fits is assembled in buf itself */
	x->rm_dst = (struct spin_reasm_dst){ .h = h, .buf = buf, .cap = cap, .direct = true };
	x->rm_ret = SPIN_REASM_MORE;
	for (;;) {
		int w = -1;

		if (timeout_ms == 0)
			w = 0;
		else if (timeout_ms > 0) {
			uint64_t t = spin_now_ms();

			w = t >= deadline ? 0 : (int)(deadline - t);
		}
		r = spin_xsk_recv(x, msg_pkt, x, w);
		if (r < 0 || x->rm_ret != SPIN_REASM_MORE || (r == 0 && w == 0))
			break;
	}
	/* a partial message may be in buf */
	spin_reasm_release(&x->ra);
	x->rm_dst = (struct spin_reasm_dst){};
	if (r < 0)
		return r;
	if (x->rm_ret >= 0)
		x->st.rx_msgs++;
	if (x->rm_ret != SPIN_REASM_MORE)
		return x->rm_ret;
	return spin_seterr(SPIN_ETIMEDOUT,
			   "spin_xsk_recv_msg: no complete message within %d ms on %s queue %u",
			   timeout_ms, x->rt->ifname, x->queue);
}
