/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internals of libspin's Portals 4 layer (lib/ptl.c: objects, events,
 * counters; lib/ptl_data.c: data movement and progress).  Not installed.
 *
 * One network interface (NI) per process.  Every object lives in a table of
 * the NI and is named by a handle: type << 28 | generation << 20 | index,
 * so a freed or forged handle is recognised (PTL_ARG_INVALID), never
 * dereferenced.  One mutex (ni->mu) protects all of it; whoever holds it
 * may make progress (ptl_progress).
 */
#ifndef SPIN_PTL_INTERNAL_H
#define SPIN_PTL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <spin/portals4.h>
#include <spin/spin.h>
#include <spin/xsk.h>

#include "libspin_internal.h"

enum ptl_htype {
	PTL_H_NI = 1,
	PTL_H_EQ,
	PTL_H_CT,
	PTL_H_MD,
	PTL_H_ME,
	PTL_H_HANDLER,
	PTL_H_HPU,
};

#define PTL_N_EQ	64
#define PTL_N_CT	1024
#define PTL_N_MD	1024
/* The library's own entry table (lib/ptl_me.c): as many entries as the
 * runtime holds, in chunks allocated as they are needed, found by index
 * (handles, the runtime's index) and by match key (ptl_mx_find), never by
 * a scan of the table on the per-message path. */
#define PTL_N_ME	SPIN_MAX_ME
#define PTL_ME_CHUNK	1024	/* entries per chunk */
#define PTL_MX_BUCKETS	(1u << 16)	/* hash buckets of exact entries */
_Static_assert(PTL_N_ME <= SPIN_MAX_ME, "the runtime holds every library entry");
_Static_assert(PTL_N_ME % PTL_ME_CHUNK == 0 && PTL_N_ME <= (1 << 20), "handles hold 20 bits of index");
#define PTL_N_WALLOC	1024	/* host window allocations (PtlSpinHostAlloc) */
#define PTL_N_HANDLER	SPIN_MAX_HANDLERS
#define PTL_N_HPU	256
#define PTL_N_TRIG	1024
/* unexpected headers (ptl_unex.c): max_unexpected_headers is
 * PTL_UNEX_DEFAULT unless PtlNIInit's desired limits ask for up to
 * PTL_N_UNEX; headers live in chunks allocated as they are needed */
#define PTL_N_UNEX	(1u << 17)
#define PTL_UNEX_DEFAULT 4096
#define PTL_UNEX_CHUNK	1024
#define PTL_UNEX_BUCKETS_MIN 1024	/* per hashed chain kind, at first ... */
#define PTL_UNEX_BUCKETS PTL_N_UNEX	/* ... doubled up to this (ptl_unex.c) */
#define PTL_UX_CHAINS	4	/* exact key, bits key, portal, source key */
_Static_assert(PTL_N_UNEX % PTL_UNEX_CHUNK == 0, "whole chunks");
#define PTL_N_PENDING	8192	/* initiator ops waiting for an ack or reply */
#define PTL_PEND_INLINE	64	/* a put this short keeps its copy in its
				 * pending entry (no malloc per message) */
#define PTL_N_RX	1024	/* target messages being received over AF_XDP */
#define PTL_N_ARMED	16	/* entries with a wake threshold, per wait */
#define PTL_MAX_IOVECS	4096	/* iovecs of one MD or entry (max_iovecs) */
#define PTL_MAX_CONTIG	(SPIN_MAX_MSG * 64ull)	/* a contiguous MD or entry: 64 GiB */
#define PTL_MAX_ATOMIC	(SPIN_MAX_SEG & ~15)	/* 1376: whole elements of any type */

/*
 * A process may hold a matching and a non-matching NI on the same interface
 * (views of one struct ptl_ni: the AF_XDP socket, the runtime, the objects
 * and the progress engine are shared).  Their portal tables are the two
 * halves of the runtime's: portal index p of the matching NI is the
 * runtime's p, of the non-matching NI the runtime's PTL_PT_HALF + p, on
 * both ends of the wire (the initiator's NI kind picks the target's, as
 * Portals has it).  The NI handle's index is the view.
 */
#define PTL_VIEW_MATCH	0
#define PTL_VIEW_NOMATCH 1
#define PTL_N_VIEW	2
#define PTL_PT_HALF	(SPIN_PT_PER_PROC / 2)
/* This process's slot on its interface (docs/design.md, "Many Portals
 * processes per interface"): its portals are the runtime's
 * SPIN_PT_OF(slot, 0) and on.  Set once by PtlNIInit. */
extern uint32_t ptl_slot;
/* the runtime's portal index of a view's index p (p < PTL_PT_HALF) */
static inline uint32_t ptl_pt_rt(int view, uint32_t p)
{
	return SPIN_PT_OF(ptl_slot, (uint32_t)view * PTL_PT_HALF + p);
}
/* ... and back: the index the application knows, and its view */
static inline uint32_t ptl_pt_user(uint32_t rt_pt) { return rt_pt % PTL_PT_HALF; }
static inline int ptl_pt_view(uint32_t rt_pt) { return (int)((rt_pt & 0xff) / PTL_PT_HALF); }

/* The memory of an MD or entry (lib/ptl_buf.c): contiguous, an iovec list
 * (PTL_IOVEC, a reference-counted copy), or the whole address space
 * (start NULL, length PTL_SIZE_MAX: an offset is an address, copies are
 * checked).  len: its bytes. */
struct ptl_iovs;
struct ptl_buf {
	uint8_t *start;
	ptl_size_t len;
	struct ptl_iovs *iov;
	bool any;
};
/* contiguous: start + off is the byte (no copy through the helpers) */
static inline bool ptl_buf_flat(const struct ptl_buf *b) { return !b->iov && !b->any; }
int ptl_buf_init(struct ptl_buf *b, void *start, ptl_size_t length, bool iovec, const char *who);
void ptl_buf_get(struct ptl_buf *b);
void ptl_buf_put(struct ptl_buf *b);
/* 0, or -1 if [off, off + n) is outside it or (whole address space) faults */
int ptl_buf_write(const struct ptl_buf *b, ptl_size_t off, const void *src, ptl_size_t n);
int ptl_buf_read(const struct ptl_buf *b, ptl_size_t off, void *dst, ptl_size_t n);
/* the address of byte off (events' start) */
void *ptl_buf_addr(const struct ptl_buf *b, ptl_size_t off);

struct ptl_eq {
	bool used;
	uint8_t gen;
	uint8_t view;		/* the NI (view) it was allocated on */
	bool dropped;
	ptl_event_t *ring;
	size_t cap, head, count;
};

struct ptl_ct {
	bool used;
	uint8_t gen;
	uint8_t view;
	ptl_ct_event_t v;
	int sole;		/* the one entry counting on it (wake thresholds) ... */
	uint64_t sole_gen;	/* ... as of ptl_ni.me_gen + 1; 0: not known */
};

struct ptl_mdr {
	bool used;
	uint8_t gen;
	uint8_t view;		/* its operations go to this view's portals */
	uint32_t busy;		/* operations waiting for an ack or reply */
	bool ctl;		/* the library's own keep-alive traffic: its puts
				 * do not wait for the congestion window
				 * (ptl_md_set_ctl) */
	ptl_md_t md;
	struct ptl_buf buf;	/* its memory (buf.len bounds the offsets) */
};

struct ptl_mer {
	bool used;
	uint8_t gen;
	/* kept across uses of the slot (ptl_me.c) */
	uint32_t idx;		/* its index in the table (handles) */
	uint32_t free1;		/* free: the next free slot + 1, 0: none */
	bool mx_on, mx_wild;	/* in the match index: a wildcard list, or hashed */
	uint32_t mx_pid;	/* the pid it matches (SPIN_PID_ANY) */
	uint32_t mx_next1, mx_prev1;	/* its bucket or wildcard list + 1, in seq order */
	bool window;		/* deposited by the XDP runtime */
	ptl_list_t list;
	uint32_t pt;		/* the runtime's portal index (ptl_pt_rt) */
	int rt;			/* index in the runtime's spin_me, -1: not linked */
	uint64_t seq;		/* library append order */
	uint64_t local_off;	/* PTL_ME_MANAGE_LOCAL */
	uint32_t match_rank;	/* SPIN_RANK_ANY or a rank */
	uint64_t wake_seen;	/* units of the runtime's put/get events read
				 * (spin_me.wake_count as far as consumed) */
	void *user_ptr;
	ptl_me_t me;
	struct ptl_buf buf;	/* its memory (buf.len: its length in bytes) */
	uint32_t rx_busy;	/* messages the library is reassembling into it
				 * (ptl_rx; PtlMEUnlink: PTL_IN_USE) */
	uint64_t max_len;	/* its NI's max_msg_size: a message's mlength
				 * is at most that (0: no cap, spin's) */
};

struct ptl_ptr {
	bool used;
	bool enabled;
	unsigned int options;
	ptl_handle_eq_t eq;
};

/* An unexpected header: a message delivered to an overflow-list entry. */
struct ptl_unex {
	bool used;
	uint32_t pt;
	uint64_t seq;		/* arrival order */
	ptl_event_kind_t kind;	/* PTL_EVENT_PUT / PTL_EVENT_ATOMIC / ... */
	ptl_event_t ev;		/* the event as the overflow entry saw it */
	uint32_t rank, pid;
	/* ptl_unex.c: its slot, the free list, its chains (index + 1) */
	uint32_t idx, free1;
	uint32_t next1[PTL_UX_CHAINS], prev1[PTL_UX_CHAINS];
};
struct ptl_ux_list { uint32_t head1, tail1; };

struct ptl_handler {
	bool used;
	uint8_t gen;
	char name[64];
};

struct ptl_hpu {
	bool used;
	uint8_t gen;
	uint32_t len;
	uint8_t img[SPIN_HPU_SIZE];
};

enum ptl_trig_kind { TRIG_PUT = 1, TRIG_GET, TRIG_CTINC, TRIG_CTSET, TRIG_AMO, TRIG_ME_APPEND,
		     TRIG_ME_UNLINK };

/* The arguments of PtlAtomic, PtlFetchAtomic and PtlSwap (fetch: the
 * latter two), kept by a triggered one until it fires. */
struct ptl_amo_args {
	ptl_handle_md_t get_md, put_md;
	ptl_size_t get_loff, put_loff, len;
	ptl_ack_req_t ack_req;
	ptl_process_t target;
	ptl_pt_index_t pt;
	ptl_match_bits_t bits;
	ptl_size_t roff;
	void *user_ptr;
	ptl_hdr_data_t hdr;
	bool has_operand;	/* PtlSwap's operand, copied */
	uint8_t operand[16];
	ptl_op_t aop;
	ptl_datatype_t adt;
	bool fetch;
};

struct ptl_trig {
	bool used;
	enum ptl_trig_kind kind;
	uint32_t ct;		/* index of the triggering counter */
	uint64_t seq;		/* order of registration */
	ptl_size_t threshold;
	/* TRIG_PUT / TRIG_GET */
	ptl_handle_md_t md;
	ptl_size_t loff, len;
	ptl_ack_req_t ack_req;
	ptl_process_t target;
	ptl_pt_index_t pt;
	ptl_match_bits_t bits;
	ptl_size_t roff;
	void *user_ptr;
	ptl_hdr_data_t hdr_data;
	/* TRIG_CTINC / TRIG_CTSET */
	ptl_handle_ct_t ct_target;
	ptl_ct_event_t ctv;
	/* TRIG_AMO */
	struct ptl_amo_args amo;
	/* TRIG_ME_APPEND (a slot and handle reserved at registration, the
	 * entry linked when it fires; pt is the view's index), TRIG_ME_UNLINK */
	ptl_handle_me_t meh;
	ptl_me_t me;
	struct ptl_buf me_buf;	/* owned until it fires or is cancelled */
	ptl_list_t me_list;
	uint8_t me_view;
};

enum ptl_pend_kind { PEND_ACK = 1, PEND_GET, PEND_FETCH };

struct ptl_pending {
	uint32_t msg_id;	/* 0: free slot */
	bool tomb;		/* deleted (keeps probe chains intact) */
	enum ptl_pend_kind kind;
	ptl_ack_req_t ack_req;
	uint32_t md;		/* index of the MD that gets the event */
	uint32_t rank;		/* target rank */
	ptl_process_t target;
	ptl_size_t loff, len;
	ptl_pt_index_t pt;
	ptl_match_bits_t bits;
	ptl_size_t roff;
	ptl_hdr_data_t hdr_data;
	void *user_ptr;
	uint64_t deadline_ms;
	/* replies; a reliable put's packets (npkts) */
	uint32_t got, npkts;
	uint64_t *bitmap;
	uint32_t rseg;		/* the reply's packet size (its bitmap's unit) */
	uint32_t rlen;		/* the reply's length (its first packet's msg_len) */
	ptl_op_t aop;
	ptl_datatype_t adt;
	/* reliable delivery (ptl_rel.c) */
	bool rel;		/* kept and sent again until the target answers */
	bool want_ack;		/* the application asked for the ack event */
	bool karn;		/* sent again: no round-trip sample from it */
	bool unsent;		/* it never reached the target (local failure, or
				 * no answer in time): its send event fails too */
	bool quiet;		/* one packet, no ack event wanted: acknowledged in
				 * bulk by a probe's range ack (wire.h) */
	bool send_posted;	/* its send event is out already */
	uint8_t *copy;		/* its bytes, copied (quiet messages): inl, or
				 * allocated (freed with it) */
	struct spin_msg_args args;	/* as sent: msg_id, SPIN_F_REL */
	const uint8_t *buf;	/* its bytes: the MD's, until the answer
				 * (npkts above: its packets) */
	uint8_t wire_op;	/* SPIN_OP_* */
	uint32_t reply_cr;	/* a reliable get's reply packets not yet
				 * come, counted in ni->reply_out */
	uint32_t smd;		/* the MD whose bytes are sent (send event) */
	ptl_size_t sloff;
	uint32_t tries;		/* retransmission timer expiries */
	uint64_t sent_us;	/* sent first */
	uint64_t rto_at_us;	/* retransmission timer */
	uint64_t alive_us;	/* the target last answered (ack, sack, not now) */
	uint64_t retx_us;	/* last retransmission */
	uint64_t tail_us;	/* its last packet (or repair) went out (tail probe) */
	bool tail_probed;	/* a tail probe went out since */
	int32_t rel_prev, rel_next;	/* the NI's reliable messages, oldest first */
	/* congestion window (ptl_rel.c): a put's packets go out as its
	 * rank's window allows */
	uint32_t sent_upto;	/* packets [0, sent_upto) were sent at least once */
	uint32_t cc_out;	/* of them, counted in flight for its rank */
	/* reordering (ptl_rel.c, "Reordering"): its latest transmission and
	 * the one before (new packets, a repair or a probe); whether the
	 * latest sent packets again; the loss event its last loss counted in */
	uint64_t xmit_us, prev_xmit_us;
	uint8_t xmit_kind;	/* REL_X_NEW, REL_X_REPAIR, REL_X_PROBE */
	uint32_t cut_gen;
	/* a SACK's holes waiting out the reordering window (NULL: none):
	 * its words from word sack_w0 on, the holes below sack_hi, due at
	 * reo_at_us */
	uint64_t *sack;
	uint32_t sack_w0, sack_nw, sack_hi;
	uint64_t reo_at_us;
	/* its last repair: packets [rep_lo, rep_hi), rep_n of them */
	uint32_t rep_lo, rep_hi, rep_n;
	/* last: pend_add does not clear it */
	uint8_t inl[PTL_PEND_INLINE];	/* a small one-packet put's copy */
};

/* Congestion window of one target rank (ptl_rel.c, docs/reliable.md):
 * packets in flight (sent, not known to have arrived) at most cwnd;
 * AIMD. */
struct ptl_cc {
	uint32_t cwnd, ssthresh;	/* packets */
	uint32_t inflight;
	uint32_t acc;		/* packets acknowledged towards cwnd + 1 */
	uint32_t partial;	/* its messages not all sent yet */
	uint64_t cut_us;	/* the window was last cut */
	uint64_t ep_sent, ep_lost;	/* packets sent (also again) and found
					 * lost since then */
	/* undo of a cut whose losses were all spurious (ptl_rel.c): the
	 * window before it, its loss event's number and the losses counted
	 * in that event not yet found spurious */
	uint32_t prior_cwnd, prior_ssthresh, gen, undo_left;
	/* RACK-style loss detection (ptl_rel.c, "Reordering"): the latest
	 * transmission to the rank known to have arrived, its round trip;
	 * the reordering window's multiple of min_rtt / 4, how many loss
	 * events it persists, and whether the rank reordered at all */
	uint64_t rack_xmit_us, rack_rtt_us;
	/* the last timer expiry that sent a probe, and how long the rank's
	 * other timers wait for its answer while the rank is silent */
	uint64_t tmo_us, tmo_wait_us;
	uint64_t tlp_us;	/* the last tail probe sent to it */
	uint16_t reo_mult, reo_persist;
	bool reo_seen;
};

/* Target side of reliable delivery for AF_XDP entries: the outcome of the
 * recent messages of one source rank (as the runtime's spin_dedup). */
struct ptl_ldd_slot {
	uint32_t id;
	uint32_t mlength;
	uint8_t fail, list, op;	/* op: SPIN_OP_* answered (ACK or REPLY) */
	uint8_t *reply;		/* FETCH: the old bytes it returned (owned) */
	ptl_handle_me_t meh;	/* GET: the entry and offset its bytes came from */
	uint64_t off;
	uint64_t sent_ns;	/* GET: its whole reply was last sent (CLOCK_MONOTONIC) */
};
struct ptl_ldd {
	struct ptl_ldd_slot s[SPIN_DEDUP_SLOTS];
};

/* A message for an AF_XDP entry, being received by the library. */
struct ptl_rx {
	bool used;
	bool tomb;		/* freed: a lookup goes on past it (rx_find) */
	uint32_t rank, msg_id;
	uint32_t msg_len, got_bytes;
	uint64_t off, mlength;
	uint64_t last_ms;
	ptl_handle_me_t meh;	/* the entry it matched */
	struct ptl_mer me;	/* snapshot at match time */
	uint64_t *bitmap;
	uint32_t npkts, seg;
	struct spin_hdr h;	/* first packet's header */
};

struct ptl_ship;

struct ptl_ni {
	struct ptl_ship *ship;	/* shipped handlers (ptl_ship.c), NULL: none */
	int ship_efd;		/* > 0: an eventfd written when ship_eq gets an event */
	ptl_handle_eq_t ship_eq;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* progress was made */
	pthread_cond_t bg_cv;	/* the progress thread may poll again */
	pthread_t thr;
	bool thr_on, stop;
	int spinners;		/* callers busy-polling: the thread sleeps */
	bool poller;		/* a caller sleeps in poll() on the fds: so does
				 * not the thread */
	bool bg_in_poll;	/* the progress thread sleeps in poll() */
	uint64_t lock_gen;	/* bumped at every ptl_unlock (atomic) */
	pthread_t poller_thr;	/* the caller sleeping in poll(), if poller */
	int poke_fd;		/* eventfd in the poller's poll set: another
				 * thread made progress it may be waiting for */
	uint64_t last_spin_us;	/* when the last busy-polling caller returned */
	int waiters;		/* callers in ptl_wait */
	bool aborted;		/* PtlAbort: the waits return PTL_ABORTED until
				 * waiters is back to 0 */
	int bundle;		/* PtlStartBundle depth: puts are only queued */
	uint64_t me_gen;	/* bumped when match entries are appended or freed */
	int n_armed;		/* runtime entries with a wake threshold armed by
				 * the poller (ptl_wait's arm) */
	uint32_t armed[PTL_N_ARMED];
	int refs;
	int view_refs[PTL_N_VIEW];	/* PtlNIInit minus PtlNIFini per view */
	uint8_t gen;
	unsigned int options;	/* the addressing (PTL_NI_LOGICAL or _PHYSICAL),
				 * the same for both views */
	char ifname[IF_NAMESIZE];
	struct spin_rt *rt;
	struct spin_xsk *xsk;
	uint8_t *win;
	size_t win_len;
	/* whole multi-packet replies of window entries sent lately (a
	 * repeated get that crossed one is not answered again) */
	struct ptl_sent_reply {
		uint32_t rank, id;
		uint64_t sent_ns;
	} sent_reply[256];
	/* re-gets answered (ptl_rel_reget): when the packets one re-get's
	 * bitmap words (from w0) named were last sent again */
	struct ptl_sent_repair {
		uint32_t rank, id;
		uint64_t w0, sent_ns;
	} sent_repair[1024];
	uint32_t rank, pid, nid, size;
	ptl_process_t *map;	/* rank -> nid/pid */
	size_t map_size;
	ptl_ni_limits_t limits;	/* what spin supports (the most a view may get) */
	ptl_ni_limits_t lim[PTL_N_VIEW];	/* each view's, from PtlNIInit's desired */
	uint32_t uid;		/* geteuid() at PtlNIInit: events' uid (no system call per event) */
	uint64_t timeout_ms;
	uint64_t spin_us;
	uint64_t wake_us;	/* $SPIN_PTL_WAKE_US: 0, the runtime wakes a
				 * sleeping waiter per event (an interrupt);
				 * else it never does, and sleepers look every
				 * wake_us (interrupt moderation) */
	uint64_t poll_us;	/* $SPIN_PTL_POLL_US: a sleeping waiter looks
				 * again after this long without a wake-up */
	ptl_spin_wait_stats_t ws;	/* PtlSpinWaitStats */
	int poke_look;		/* why the thread that last made progress was
				 * looking (ptl_data.c: enum sleep_end) */
	uint64_t seq;
	uint64_t next_tick_ms;
	int64_t drops;		/* dropped locally (bad packets, lost events) */

	struct ptl_eq eq[PTL_N_EQ];
	struct ptl_ct ct[PTL_N_CT];
	struct ptl_mdr md[PTL_N_MD];
	/* entries (ptl_me.c): chunks of PTL_ME_CHUNK, me_n slots made */
	struct ptl_mer *me_chunk[PTL_N_ME / PTL_ME_CHUNK];
	uint32_t me_n;
	uint32_t me_free1;	/* free slots, lowest first + 1, 0: none */
	/* the match index of linked entries (ptl_mx_*): exact entries hashed
	 * on their key, wildcard ones (ignore bits) in a list per portal and
	 * list, each in append order; heads and tails are index + 1 */
	struct ptl_mx_list { uint32_t head1, tail1; } *mx_bucket;	/* PTL_MX_BUCKETS, or NULL */
	struct ptl_mx_list mx_wild[SPIN_MAX_PT][2];
	uint32_t mx_pt_n[SPIN_MAX_PT];	/* entries linked per portal */
	/* per counter index: linked entries counting on it (CT_COMM), and
	 * the xor of their indexes (the one, when there is one) */
	uint32_t mx_ct_n[PTL_N_CT], mx_ct_x[PTL_N_CT];
	int me_by_rt[SPIN_MAX_ME];	/* runtime index -> library index, -1 */
	struct ptl_ptr pt[SPIN_MAX_PT];
	/* the unexpected list (ptl_unex.c) */
	struct ptl_unex *ux_chunk[PTL_N_UNEX / PTL_UNEX_CHUNK];
	uint32_t ux_n, ux_free1;
	struct ptl_ux_list *ux_exact, *ux_bits, *ux_src;	/* ux_nb buckets each, or NULL */
	uint32_t ux_nb;
	struct ptl_ux_list ux_pt[SPIN_MAX_PT];
	uint32_t ux_count[PTL_N_VIEW];	/* headers held per view */
	struct ptl_handler hd[PTL_N_HANDLER];
	struct ptl_hpu *hpu[PTL_N_HPU];
	struct ptl_trig trig[PTL_N_TRIG];
	int n_trig;		/* armed triggered operations */
	struct ptl_pending pend[PTL_N_PENDING];
	struct ptl_rx rx[PTL_N_RX];
	int n_rx;		/* of them in use */
	/* host window allocations: page ranges [off, off + len) */
	struct { uint64_t off, len; } walloc[PTL_N_WALLOC];
	int n_walloc;
	/* reliable delivery (ptl_rel.c) */
	bool reliable;		/* $SPIN_PTL_RELIABLE, default 1 */
	uint64_t rto_us, srtt_us, rttvar_us, rto_min_us, rto_max_us;
	int32_t rel_head, rel_tail;	/* reliable pending messages, oldest first */
	int n_timed;		/* pending operations with a deadline_ms (not reliable) */
	uint64_t rel_next_us;	/* earliest retransmission timer (UINT64_MAX: none) */
	ptl_spin_rel_stats_t rs;
	struct ptl_ldd *ldd[SPIN_MAX_PEERS];
	bool in_progress;	/* inside ptl_progress (which may start operations) */
	struct spin_event held;	/* a target event whose queue is full ... */
	bool has_held;		/* ... waits here, the ring behind it unread */
	bool slot_held;		/* this process holds its slot (ptl_slot) in spin_procs */
	uint32_t *retx_list;	/* scratch: packets to send again */
	/* per target rank: quiet messages since the last probe, the newest */
	uint16_t quiet_n[SPIN_MAX_PEERS];
	uint32_t quiet_last[SPIN_MAX_PEERS];
	/* the last probe per rank not answered yet (its id, when; 0: none):
	 * its answer is a round-trip sample, the one a stream of quiet
	 * messages gives */
	uint32_t probe_id[SPIN_MAX_PEERS];
	uint64_t probe_us[SPIN_MAX_PEERS];
	struct ptl_probed {	/* scratch for ptl_rel_tick: probe id per rank */
		uint32_t gen, id;	/* id valid in walk `gen` */
	} *probed;
	uint32_t probed_gen;
	uint64_t alive_rank[SPIN_MAX_PEERS];	/* a rank last answered anything */
	uint64_t reply_out;	/* reply packets of reliable gets in flight
				 * (ptl_rel_reply_wait) */
	uint64_t *reply_rank;	/* ... last sent a reply packet (SPIN_MAX_PEERS,
				 * on the first; ptl_rel.c replies_coming) */
	bool cc_on;		/* $SPIN_PTL_CC, default 1 */
	bool tlp_on;		/* $SPIN_PTL_TLP, default 1: tail probes */
	bool rack_on;		/* $SPIN_PTL_RACK, default 1: reordering tolerance */
	uint64_t min_rtt_us, min_rtt_at;	/* smallest round trip of the
						 * last REL_MIN_RTT_WIN_US, since */
	uint32_t cwnd_init, cwnd_min, cwnd_max;	/* packets */
	uint32_t cc_partial;	/* messages not all sent yet (all ranks) */
	uint32_t *send_list, send_cap;	/* scratch: new packets to send */
	struct ptl_cc cc[SPIN_MAX_PEERS];
	int32_t rel_win[SPIN_DEDUP_SLOTS];	/* the reliable message whose
						 * id % SPIN_DEDUP_SLOTS is this,
						 * -1: none (the send window) */
};

extern struct ptl_ni *ptl_g_ni;

/* ptl_ship.c: shipped handlers (docs/shipping.md).  init: at the matching
 * NI's PtlNIInit, with $SPIN_SHIP_ALLOW the target side (no lock held);
 * fini: before its PtlNIFini, the sender's unship of everything it
 * shipped and the target's removal of everything it holds. */
int ptl_ship_init(struct ptl_ni *ni, ptl_handle_ni_t nih);
void ptl_ship_fini(struct ptl_ni *ni, ptl_handle_ni_t nih);
int ptl_eq_take(ptl_handle_eq_t eqh, ptl_event_t *ev);
int ptl_handler_load_mem(ptl_handle_ni_t nih, const void *buf, size_t len,
			 const struct spin_map_subst *subst, int n_subst,
			 ptl_handle_handler_t *out, uint32_t *insns, uint32_t *prog_id);

/* handles */
static inline ptl_handle_any_t ptl_mkh(int type, uint32_t idx, uint8_t gen)
{
	return (uint32_t)type << 28 | (uint32_t)gen << 20 | idx;
}
static inline int ptl_htype(ptl_handle_any_t h) { return h >> 28; }
static inline uint32_t ptl_hidx(ptl_handle_any_t h) { return h & 0xfffff; }
static inline uint8_t ptl_hgen(ptl_handle_any_t h) { return (h >> 20) & 0xff; }
static inline uint8_t ptl_next_gen(uint8_t g) { return g == 255 ? 1 : g + 1; }

/* ptl.c */
/* The NI, locked, for an API call; NULL and *rc (PTL_NO_INIT, PTL_ARG_INVALID) if none. */
struct ptl_ni *ptl_enter(int *rc);
void ptl_lock(struct ptl_ni *ni);
void ptl_unlock(struct ptl_ni *ni);
int ptl_seterr(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct ptl_eq *ptl_eq_get(struct ptl_ni *ni, ptl_handle_eq_t h);
struct ptl_ct *ptl_ct_get(struct ptl_ni *ni, ptl_handle_ct_t h);
struct ptl_mdr *ptl_md_get(struct ptl_ni *ni, ptl_handle_md_t h);
/* MD mdh carries the library's own small control messages (a shipper's
 * lease puts): they go out past a full congestion window, counted in it,
 * so that a thread keeping the window full cannot hold them back. */
int ptl_md_set_ctl(ptl_handle_md_t mdh);
struct ptl_mer *ptl_me_get(struct ptl_ni *ni, ptl_handle_me_t h);
ptl_handle_me_t ptl_me_handle(struct ptl_ni *ni, const struct ptl_mer *m);
/* PtlMEUnlink, also of an entry a message is arriving into (its events
 * are dropped): for the library's own entries (lock not held) */
int ptl_me_unlink_force(ptl_handle_me_t meh);

/* ptl_me.c: the entry table and its match index (lock held) */
static inline struct ptl_mer *ptl_me_at(struct ptl_ni *ni, uint32_t i)
{
	return &ni->me_chunk[i / PTL_ME_CHUNK][i % PTL_ME_CHUNK];
}
/* A free slot (used false, gen kept), or NULL when the table is full or
 * out of memory. */
struct ptl_mer *ptl_me_alloc(struct ptl_ni *ni);
/* The slot is free again (used false, a new generation). */
void ptl_me_release(struct ptl_ni *ni, struct ptl_mer *m);
void ptl_me_table_fini(struct ptl_ni *ni);
/* Entry m (linked to the runtime: rt >= 0) enters / leaves the index. */
int ptl_mx_link(struct ptl_ni *ni, struct ptl_mer *m);
void ptl_mx_unlink(struct ptl_ni *ni, struct ptl_mer *m);
/* The oldest linked entry of portal pt (the runtime's index) and list that
 * matches bits from (rank, pid) (pid ignored on a logical NI) and that
 * ok(ni, m, arg) takes, or NULL.  Exact entries cost a hash lookup per
 * source kind; wildcard entries a step each while older than the best. */
struct ptl_mer *ptl_mx_find(struct ptl_ni *ni, uint32_t pt, ptl_list_t list, uint64_t bits,
			    uint32_t rank, uint32_t pid,
			    bool (*ok)(struct ptl_ni *, struct ptl_mer *, void *), void *arg);
/* ptl_unex.c: the unexpected list (lock held) */
bool ptl_unex_matches(struct ptl_ni *ni, const struct ptl_unex *u, const ptl_me_t *me,
		      uint32_t rank);
/* a copy of *u on the list (at its tail), or NULL: no memory, or PTL_N_UNEX
 * held (the caller enforces max_unexpected_headers) */
struct ptl_unex *ptl_unex_add(struct ptl_ni *ni, const struct ptl_unex *u);
void ptl_unex_del(struct ptl_ni *ni, struct ptl_unex *u);
/* The oldest header of portal pt that entry me (its source as a rank, or
 * SPIN_RANK_ANY) matches, after `after` if not NULL (which must be a header
 * this call returned for the same me, still on the list), or NULL.  An
 * entry without ignore bits costs a hash lookup, not a walk of the list. */
struct ptl_unex *ptl_unex_find(struct ptl_ni *ni, uint32_t pt, const ptl_me_t *me, uint32_t rank,
			       const struct ptl_unex *after);
void ptl_unex_clear(struct ptl_ni *ni, uint32_t pt);
void ptl_unex_fini(struct ptl_ni *ni);
void ptl_eq_post(struct ptl_ni *ni, ptl_handle_eq_t eqh, const ptl_event_t *ev);
/* Flow control: disable flow-controlled portal pt, PTL_EVENT_PT_DISABLED. */
void ptl_pt_flowctl(struct ptl_ni *ni, uint32_t pt);
/* Count on a counter: bytes when byte counting, else one operation. */
void ptl_ct_count(struct ptl_ni *ni, ptl_handle_ct_t cth, bool ok, bool bytes, uint64_t n);
void ptl_ct_changed(struct ptl_ni *ni, uint32_t ct);
/* Target-side completion on an entry: event, counter, unexpected list. */
void ptl_target_done(struct ptl_ni *ni, struct ptl_mer *m, ptl_event_t *ev, uint32_t rank,
		     uint32_t pid);
/* Unlink an entry after use (use-once, min_free): AUTO_UNLINK, free. */
void ptl_me_auto_unlink(struct ptl_ni *ni, struct ptl_mer *m, bool rt_too);
ptl_process_t ptl_initiator(struct ptl_ni *ni, uint32_t rank, uint32_t pid);
ptl_ni_fail_t ptl_fail_of(uint32_t spin_fail);

/* ptl_data.c */
struct ptl_pending *ptl_pend_find(struct ptl_ni *ni, uint32_t id);
/* An ack or reply arrived (or never will): the initiator's events. */
void ptl_pend_complete(struct ptl_ni *ni, struct ptl_pending *p, ptl_ni_fail_t fail,
		       uint64_t mlength, ptl_list_t list);
void ptl_send_ack(struct ptl_ni *ni, const struct spin_hdr *h, uint64_t mlength, uint32_t fail,
		  uint32_t list);
/* ... with a range ack (user_hdr[3], wire.h) */
void ptl_send_ack_range(struct ptl_ni *ni, const struct spin_hdr *h, uint64_t mlength,
			uint32_t fail, uint32_t list, uint64_t range);
/* Answer the GET or FETCH h with len bytes of buf (a REPLY). */
void ptl_reply_to(struct ptl_ni *ni, const struct spin_hdr *h, const void *buf, uint64_t len,
		  uint32_t fail, uint32_t list);
/* ... with len bytes of entry m at off (gathered from iovecs) */
void ptl_reply_me(struct ptl_ni *ni, const struct spin_hdr *h, const struct ptl_mer *m,
		  uint64_t off, uint64_t len, uint32_t list);
uint64_t ptl_now_us(void);

/* Word w of a complete packet bitmap of npkts packets. */
static inline uint64_t ptl_word_full(uint32_t npkts, uint32_t w)
{
	uint32_t left = npkts - w * 64;

	return left >= 64 ? ~0ull : (1ull << left) - 1;
}

/* ptl_rel.c: reliable delivery (docs/reliable.md) */
void ptl_rel_init(struct ptl_ni *ni);
void ptl_rel_fini(struct ptl_ni *ni);
/* Before a reliable message gets id `id`: wait until the message
 * SPIN_DEDUP_SLOTS ids older is answered (the target's window). */
int ptl_rel_window(struct ptl_ni *ni, uint32_t id);
/* Wait until rank's congestion window takes a new message. */
int ptl_rel_cc_wait(struct ptl_ni *ni, uint32_t rank);
/* The reliable message with this id waiting for its answer, or NULL. */
struct ptl_pending *ptl_rel_find(struct ptl_ni *ni, uint32_t id);
/* Send reliable message p (args, buf, len, npkts, rank set) the first time. */
int ptl_rel_send(struct ptl_ni *ni, struct ptl_pending *p, bool post_only);
void ptl_rel_unlink(struct ptl_ni *ni, struct ptl_pending *p);
/* The target answered p (SPIN_EV_ACK). */
void ptl_rel_on_ack(struct ptl_ni *ni, struct ptl_pending *p, uint32_t fail, uint64_t mlength,
		    uint32_t list);
/* An ACK of msg_id from rank carried a range ack: the quiet messages it
 * names completed. */
void ptl_rel_on_range(struct ptl_ni *ni, uint32_t rank, uint32_t msg_id, uint64_t range);
void ptl_rel_no_range(struct ptl_ni *ni, uint32_t rank, uint32_t msg_id);
/* A reliable get of len bytes waits until the replies in flight leave room
 * for its reply in this process's AF_XDP ring (always goes when none are):
 * PTL_OK, or PTL_INTERRUPTED. */
int ptl_rel_reply_wait(struct ptl_ni *ni, uint64_t len);
/* ... it goes out, with its reply's packets counted; reply_got: one came;
 * reply_done: the rest will not (pend_del). */
void ptl_rel_reply_take(struct ptl_ni *ni, struct ptl_pending *p, uint64_t len);
void ptl_rel_reply_done(struct ptl_ni *ni, struct ptl_pending *p);
/* The target answered something about p (a reply packet): restart its timer. */
void ptl_rel_alive(struct ptl_ni *ni, struct ptl_pending *p);
/* p's reply is complete (a get or fetch): a round-trip sample, counted. */
void ptl_rel_replied(struct ptl_ni *ni, struct ptl_pending *p);
/* A SACK arrived on the socket. */
void ptl_rel_on_sack(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay,
		     uint32_t len);
/* Retransmission timers; cheap when none is due. */
void ptl_rel_tick(struct ptl_ni *ni);
/* Target side, AF_XDP entries: a reliable message (rank, id) completed
 * (or failed for good) here: remember its outcome (the slot, NULL if no
 * memory; a GET's or FETCH's caller fills in what the reply needs). */
struct ptl_ldd_slot *ptl_rel_note(struct ptl_ni *ni, const struct spin_hdr *h, uint32_t fail,
				  uint64_t mlength, uint32_t list);
/* ... a PUT or ATOMIC: remember it and acknowledge it. */
void ptl_rel_done(struct ptl_ni *ni, const struct spin_hdr *h, uint32_t fail, uint64_t mlength,
		  uint32_t list);
/* ... a packet of a message completed before: answer again if it asks
 * (answer: a single-packet message, or SPIN_F_SACK_REQ); true if it was one. */
bool ptl_rel_dup(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay, uint32_t len,
		 bool answer);
/* A get asked for again without a bitmap (wire.h, "re-get"), which the
 * target took at took_ns: the whole reply sent at sent_ns answers it
 * (false: send it again). */
bool ptl_rel_reply_crossed(uint64_t took_ns, uint64_t sent_ns);
/* ... a re-get (wire.h): the packets of the reply [buf, +len) its bitmap
 * (pay, plen bytes) names missing; without one, the whole reply.  Nothing
 * if it crossed the whole reply (last sent at whole_sent_ns, 0: unknown)
 * or the last repair of the same bitmap words. */
void ptl_rel_reget(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay, uint32_t plen,
		   const void *buf, uint64_t len, uint32_t list, uint64_t whole_sent_ns);
/* ... a message still missing packets was asked for a SACK. */
void ptl_rel_send_sack(struct ptl_ni *ni, const struct spin_hdr *h, const uint64_t *bitmap,
		       uint32_t npkts);

int ptl_progress(struct ptl_ni *ni);
/* Wake the caller sleeping in poll() (if it is another thread): state it
 * may wait for changed.  Lock held. */
void ptl_poke(struct ptl_ni *ni);
/* Progress for a non-blocking call (PtlEQGet, PtlCTGet): the caller polls. */
void ptl_app_poll(struct ptl_ni *ni);
void *ptl_progress_thread(void *arg);
/* Wait (lock held) until done(arg) or timeout_ms (PTL_TIME_FOREVER).
 * arm (may be NULL) is called before the caller sleeps in poll(), when it
 * is the only waiter: it may arm wake thresholds on runtime entries
 * (ptl_wake_arm) so that the runtime wakes it only for the event that can
 * make done() true; it returns false if such an event may already be in
 * the ring (do not sleep).  Thresholds are disarmed when the wait ends or
 * another caller starts waiting. */
int ptl_wait(struct ptl_ni *ni, bool (*done)(struct ptl_ni *, void *),
	     bool (*arm)(struct ptl_ni *, void *), void *arg, ptl_time_t timeout_ms);
/* Arm entry m to wake the poller once `need` more units (messages, or
 * bytes for PTL_ME_EVENT_CT_BYTES) than read so far have been posted;
 * false if that many may be posted already. */
bool ptl_wake_arm(struct ptl_ni *ni, struct ptl_mer *m, uint64_t need);
void ptl_wake_disarm(struct ptl_ni *ni);
int ptl_put_locked(struct ptl_ni *ni, ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len,
		   ptl_ack_req_t ack_req, ptl_process_t target, ptl_pt_index_t pt,
		   ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr);
int ptl_get_locked(struct ptl_ni *ni, ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len,
		   ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
		   ptl_size_t roff, void *user_ptr);
/* An atomic, fetch-atomic or swap; check_only: validate, start nothing. */
int ptl_atomic_locked(struct ptl_ni *ni, const struct ptl_amo_args *a, bool check_only);
void ptl_data_fini(struct ptl_ni *ni);

#endif /* SPIN_PTL_INTERNAL_H */
