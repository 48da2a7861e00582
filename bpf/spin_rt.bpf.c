// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spin runtime: the XDP side of sPIN.
 *
 *   spin_rx      entry, attached to the interface: parse, validate, find or
 *                create the message state, match (Portals order), then
 *                tail-call the match entry's handler program (or deposit
 *                directly when the entry has no handlers).  Handler
 *                programs end with the finish step of rt_common.bpf.h:
 *                carry out the put, post the completion event, count.
 *   spin_rx_get  a GET: match an entry that allows gets and answer with a
 *                REPLY built from the host window (XDP_TX), or hand a long
 *                reply to the owning process; spin_rx_ack / spin_rx_reply
 *                take ACKs and REPLYs arriving at the initiator.
 *
 * Concurrency (packets of one message on several CPUs):
 *   - the CPU whose insert of the message state succeeds matches the message
 *     and runs the header handler; the other CPUs wait (bounded spin) until
 *     it has published its verdict, so no payload handler runs before the
 *     header handler returned;
 *   - each packet is claimed in a bitmap with an atomic OR (duplicates are
 *     dropped), and its bytes are added atomically after its payload handler
 *     returned; the packet whose add reaches the message length runs the
 *     completion handler, exactly once;
 *   - use-once entries are claimed with compare-and-swap.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#define SPIN_RT_PROG	/* the runtime program: SACKs, checksums (rt_common.bpf.h) */
#include <spin/rt_common.bpf.h>

#define CLOCK_MONOTONIC	1

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A zeroed message state to insert from (struct spin_msg is too large for
 * the stack).  Only the leading scalar fields are ever written. */
struct spin_msg_bytes { __u8 b[sizeof(struct spin_msg)]; };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_msg_bytes);
} spin_tmpl SEC(".maps");

/* ... and a zeroed bitmap chunk (only gen is ever written). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_msg_chunk);
} spin_tmpl_chunk SEC(".maps");

/* The bitmap word of packet idx of message m (key): in its inline bitmap
 * (packets 0..4095) or in its chunk; NULL if the chunk is not there (the
 * message state is being freed) or is another message's. */
static __always_inline __u64 *spin_msg_word(struct spin_msg *m, const struct spin_msg_key *key,
					    __u32 idx)
{
	struct spin_msg_chunk_key ck;
	struct spin_msg_chunk *ch;
	__u64 w = idx / 64;

	if (idx < SPIN_CHUNK_PKTS) {
		/* (the compiler drops a mask here: idx < 4096; the empty
		 * asm makes it keep one, which the verifier needs where the
		 * bound of idx was lost through a spill) */
		SPIN_BOUND(w, SPIN_BITMAP_WORDS - 1);
		asm volatile("" : "+r"(w));
		return &m->bitmap[w & (SPIN_BITMAP_WORDS - 1)];
	}
	ck.src_rank = key->src_rank;
	ck.msg_id = key->msg_id;
	ck.chunk = idx / SPIN_CHUNK_PKTS;
	ch = bpf_map_lookup_elem(&spin_msg_bits, &ck);
	if (!ch || ch->gen != m->gen)
		return NULL;
	return &ch->bitmap[(idx / 64) & (SPIN_BITMAP_WORDS - 1)];
}

struct spin_chunks_q {
	struct spin_msg_chunk_key ck;
	struct spin_msg_chunk *t;
	struct spin_src *src;
	__u32 n;
	__u32 err;
};

/* bpf_loop: insert chunk i + 1 (zeroed, the message's gen) */
static int spin_chunk_new_cb(__u32 i, struct spin_chunks_q *q)
{
	if (i >= q->n)
		return 1;
	q->ck.chunk = i + 1;
	if (!bpf_map_update_elem(&spin_msg_bits, &q->ck, q->t, BPF_NOEXIST)) {
		__sync_fetch_and_add(&q->src->chunks, 1);
		return 0;
	}
	/* a stale chunk of an earlier message with this key (which the
	 * sweeper would remove): replace it; else the map is full */
	if (bpf_map_lookup_elem(&spin_msg_bits, &q->ck) &&
	    !bpf_map_update_elem(&spin_msg_bits, &q->ck, q->t, BPF_EXIST))
		return 0;
	q->err = 1;
	return 1;
}

/*
 * The packet bitmap of a new message m with more than 4096 packets: all of
 * its chunks (m->nchunks), inserted now, before any other packet of it can
 * look for one (they wait while the message is SPIN_MSG_NEW).  0, or the
 * drop reason: the source's share of the chunks (src_quota) or the map
 * (msg_table_full) is used up.  On failure the caller frees the message
 * (spin_msg_free deletes the chunks inserted so far).
 */
static __noinline int spin_chunks_new(const struct spin_msg_key *key, struct spin_msg *m,
				      struct spin_src *src)
{
	struct spin_chunks_q q = { .ck = { .src_rank = key->src_rank, .msg_id = key->msg_id } };
	__u32 zero = 0, n = m->nchunks;

	if (!src || *(volatile __u32 *)&src->chunks + n > SPIN_SRC_CHUNK_QUOTA)
		return SPIN_DROP_SRC_QUOTA;
	q.t = bpf_map_lookup_elem(&spin_tmpl_chunk, &zero);
	if (!q.t)
		return SPIN_DROP_MSG_TABLE_FULL;
	q.t->gen = m->gen;
	q.src = src;
	q.n = n;
	bpf_loop(SPIN_MSG_MAX_CHUNKS - 1, spin_chunk_new_cb, &q, 0);
	return q.err ? SPIN_DROP_MSG_TABLE_FULL : 0;
}

/* Remember id in its source's window d (spin_check_target); true if it
 * was seen among the recent ids, or if it is a reliable message's copy
 * older than them (stale: SPIN_DEDUP_STALE). */
static __always_inline bool spin_dedup_seen(const struct spin_cfg *cfg, struct spin_dedup *d,
					    __u32 id, __u16 flags_be)
{
	if (cfg->flags & SPIN_CFG_F_NO_DEDUP)
		return false;
	__u32 k = id & (SPIN_DEDUP_SLOTS - 1), old;

	if (!d)
		return false;
	/* (a newer id written between this read and the exchange below is
	 * overwritten, as before: two packets of one slot at once) */
	old = *(volatile __u32 *)&d->id[k];
	if ((flags_be & bpf_htons(SPIN_F_REL)) && old && old != id &&
	    ((old - id) & 0xffffff) <= SPIN_DEDUP_STALE)
		return true;	/* keep the newer id's slot and outcome */
	if (__sync_lock_test_and_set(&d->id[k], id) == id) {
		/* a retry after "not now" is new, once (spin_dd_forget) */
		__u32 forgot = SPIN_DD_OUT(id, SPIN_DD_FORGOT, 0, 0);

		return __sync_val_compare_and_swap(&d->out[k], forgot,
						   SPIN_DD_OUT(id, SPIN_DD_SEEN, 0, 0)) != forgot;
	}
	/* the slot is this message's now: nothing recorded yet */
	d->out[k] = SPIN_DD_OUT(id, SPIN_DD_SEEN, 0, 0);
	return false;
}

/* A reliable message refused with SPIN_FAIL_QUEUE_FULL ("not now"): forget
 * it, so that the sender's next try is a new message, not a duplicate.  Its
 * id stays in the slot: clearing the slot made it forget the older id it
 * replaced too, whose copy held back by the network was then taken as new
 * and delivered a second time (rel/reorder5_window, an 8-byte put after
 * "not now"s of the id 1024 newer). */
static __always_inline void spin_dd_forget(__u32 rank, __u32 id)
{
	struct spin_dedup *d = bpf_map_lookup_elem(&spin_dedup, &rank);
	__u32 k = id & (SPIN_DEDUP_SLOTS - 1);

	if (d && d->id[k] == id)
		__sync_val_compare_and_swap(&d->out[k], SPIN_DD_OUT(id, SPIN_DD_SEEN, 0, 0),
					    SPIN_DD_OUT(id, SPIN_DD_FORGOT, 0, 0));
}

/* the credits of the socket on queue q, or NULL if it has none */
static __always_inline struct spin_xsk_cr *spin_xsk_cr(struct spin_cfg *cfg, __u32 q)
{
	if (!cfg || q >= SPIN_MAX_PROCS)
		return NULL;
	q &= SPIN_MAX_PROCS - 1;
	return cfg->xsk_cr[q].room ? &cfg->xsk_cr[q] : NULL;
}

/*
 * AF_XDP receive credits (spin_cfg.xsk_cr, docs/reliable.md "Flow
 * control"): take one for a frame about to be handed to the socket of
 * queue q; 0 if its process has not taken back enough frames from its
 * receive ring for another to fit.  A frame whose redirect then fails
 * gives it back (spin_xsk_give).
 */
static __always_inline int spin_xsk_take(struct spin_cfg *cfg, __u32 q)
{
	struct spin_xsk_cr *cr = spin_xsk_cr(cfg, q);
	__u64 sent, taken;

	if (!cr)
		return 1;
	sent = __sync_fetch_and_add(&cr->sent, 1);
	taken = *(volatile __u64 *)&cr->taken;
	if (sent == taken) {
		/* the first frame in an empty ring: its wait starts now
		 * (spin_xsk_stalled) */
		cr->seen = taken;
		cr->since_ns = bpf_ktime_get_ns();
	}
	if (sent - taken < cr->room)
		return 1;
	__sync_fetch_and_add(&cr->sent, -1);
	return 0;
}

/*
 * Is the process on socket q stalled: frames wait in its receive ring and
 * it has taken none for SPIN_XSK_STALL_NS (stopped, or computing without
 * calling the library)?  Only with credits on (the runtime then knows what
 * the ring holds) and a socket bound (a process that died has none: its
 * senders must time out, not wait).  The runtime notices taken moving
 * here and when a frame finds the ring empty (spin_xsk_take).
 */
static __always_inline bool spin_xsk_stalled(struct spin_cfg *cfg, __u32 q)
{
	struct spin_xsk_cr *cr = spin_xsk_cr(cfg, q);
	__u64 taken, now;

	if (!cr)
		return false;
	taken = *(volatile __u64 *)&cr->taken;
	if (*(volatile __u64 *)&cr->sent == taken)
		return false;		/* nothing waits */
	now = bpf_ktime_get_ns();
	if (cr->seen != taken) {	/* it took some since we looked */
		cr->seen = taken;
		cr->since_ns = now;
		return false;
	}
	if (now - *(volatile __u64 *)&cr->since_ns < SPIN_XSK_STALL_NS)
		return false;
	return bpf_map_lookup_elem(&spin_xsks, &q) != NULL;
}

static __always_inline void spin_xsk_give(struct spin_cfg *cfg, __u32 q)
{
	struct spin_xsk_cr *cr = spin_xsk_cr(cfg, q);

	if (cr)
		__sync_fetch_and_add(&cr->sent, -1);
}

/* spin_xsk_redirect: the frame went into its process's ring, not to a
 * socket (the program then drops it): not an XDP action */
#define SPIN_XSK_RING	0x100

/* Copy the frame into the ring of the process its pt_index names
 * (SPIN_EV_FRAME): SPIN_XSK_RING, or -1 if the ring has no room or the
 * slot no ring (docs/design.md, "Many Portals processes per interface").
 * Out of line: the paths that call it use all of the stack there is. */
static __noinline long spin_xsk_ring(struct xdp_md *xdp)
{
	struct spin_hdr *sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
	__u32 len = xdp->data_end - xdp->data;
	struct spin_frame_rec *r;
	void *rb;

	if ((void *)(sh + 1) > spin_xdp_end(xdp))
		return -1;
	rb = spin_ring_of(bpf_ntohs(sh->pt_index));
	if (!rb || len > SPIN_FRAME_REC_MAX ||
	    bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > SPIN_EVENTS_SIZE - SPIN_EVENTS_RESERVE)
		return -1;
	/* apart: clang merges the two bounds into one unsigned compare of
	 * len - 1, from which 6.1's verifier learns no lower bound */
	asm volatile("" : "+r"(len));
	if ((__s32)len < 1)	/* signed: 6.1 learns nothing from len == 0 */
		return -1;
	r = bpf_ringbuf_reserve(rb, sizeof(*r), 0);
	if (!r)
		return -1;
	r->kind = SPIN_EV_FRAME;
	r->len = len;
	if (bpf_xdp_load_bytes(xdp, 0, r->frame, len)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return -1;
	}
	bpf_ringbuf_submit(r, 0);
	return SPIN_XSK_RING;
}

/* Hand the frame to the socket of its process (the slot in its pt_index)
 * if that socket is bound to the frame's receive queue, within the
 * credits, else to the process's ring (spin_xsk_ring): XDP_REDIRECT or
 * SPIN_XSK_RING, or -1 if there is no room (nothing taken), or the failed
 * redirect's action (its credit given back). */
static __always_inline long spin_xsk_redirect(struct xdp_md *xdp, struct spin_cfg *cfg, __u64 flags)
{
	struct spin_hdr *sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
	__u32 q = xdp->rx_queue_index;
	long act;

	if ((void *)(sh + 1) > spin_xdp_end(xdp))
		return XDP_DROP;
	if (SPIN_PT_SLOT(bpf_ntohs(sh->pt_index)) != q)
		return spin_xsk_ring(xdp);
	if (!spin_xsk_take(cfg, q))
		return -1;
	act = bpf_redirect_map(&spin_xsks, q, flags);
	if (act != XDP_REDIRECT)
		spin_xsk_give(cfg, q);
	return act;
}

/* Hand this packet of a reliable sender's retransmission (a message the
 * runtime handed over before: both callers) to the owning process again;
 * job_key carries the matched entry (wire.h).  If the first copy still
 * waits in the ring of a socket whose process takes nothing
 * (spin_xsk_stalled), nothing is queued behind it: "not now" instead, so
 * the sender waits rather than giving up. */
static __always_inline int spin_to_xsk(struct xdp_md *xdp, struct spin_stats *st, __u32 mi)
{
	struct spin_hdr *sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
	struct spin_cfg *cfg = spin_cfg_get();
	__u32 q = xdp->rx_queue_index, why = SPIN_DROP_XSK_FULL;
	long act;

	if ((void *)(sh + 1) > spin_xdp_end(xdp))
		return spin_drop(st, SPIN_DROP_MALFORMED);
	sh->job_key = bpf_htonl(mi);
	((struct udphdr *)sh - 1)->check = 0;	/* checked at ingress; job_key changed */
	if (SPIN_PT_SLOT(bpf_ntohs(sh->pt_index)) == q && spin_xsk_stalled(cfg, q)) {
		act = -1;
		why = SPIN_DROP_XSK_STALLED;
	} else {
		act = spin_xsk_redirect(xdp, cfg, 0);
	}
	if (act == SPIN_XSK_RING) {	/* its process's ring has it */
		if (st)
			st->to_xsk++;
		return XDP_DROP;
	}
	if (act < 0) {
		/* its ring is full: "not now" to a reliable sender that asks
		 * (the runtime's state stays: the next try comes here) */
		__u16 fl = bpf_ntohs(sh->flags);
		struct spin_ctx *c;

		spin_drop_count(st, why);
		if (!(fl & SPIN_F_REL) || (sh->pkt_off && !(fl & SPIN_F_SACK_REQ)) ||
		    !(c = spin_ctx_get()))
			return XDP_DROP;
		return spin_answer(xdp, c, cfg, st,
				   sh->op == SPIN_OP_GET || sh->op == SPIN_OP_FETCH ?
				   SPIN_PUT_REPLY : SPIN_PUT_ACK, 0, bpf_ntohl(sh->src_rank),
				   bpf_ntohl(sh->msg_id), SPIN_FAIL_QUEUE_FULL, 0, 0);
	}
	if (act != XDP_REDIRECT)
		return spin_drop(st, SPIN_DROP_NO_XSK);
	if (st)
		st->to_xsk++;
	return act;
}

/* How long an incomplete message lives without a new packet: the attach
 * timeout, and for a reliable one at least SPIN_REL_MSG_TIMEOUT_NS. */
static __always_inline __u64 spin_msg_life(const struct spin_cfg *cfg, __be16 flags)
{
	__u64 t = cfg->msg_timeout_ns ?: SPIN_MSG_TIMEOUT_NS;

	if ((flags & bpf_htons(SPIN_F_REL)) && t < SPIN_REL_MSG_TIMEOUT_NS)
		t = SPIN_REL_MSG_TIMEOUT_NS;
	return t;
}

/*
 * A duplicate of message (rank, id), whose id is in the window: a reliable
 * sender (SPIN_F_REL) sent it again because the answer was lost or late.
 * A message the runtime finished is answered again from the window (its
 * ACK or nack; for a multi-packet message only on the packet that asks,
 * SPIN_F_SACK_REQ, `single` says the message is this one packet); a packet
 * of a message handed to an AF_XDP socket goes there again (the owning
 * process keeps its own window and answers).  Everything else is dropped.
 */
static __noinline int spin_dup(struct xdp_md *xdp, __u32 rank, __u32 id, __u32 single)
{
	struct spin_hdr *sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
	struct spin_stats *st = spin_stats_get();
	struct spin_cfg *cfg = spin_cfg_get();
	__u32 k = id & (SPIN_DEDUP_SLOTS - 1), out, fl, op;
	struct spin_dedup *d;
	struct spin_ctx *c;

	if (!st || !cfg || (void *)(sh + 1) > spin_xdp_end(xdp))
		return spin_drop(st, SPIN_DROP_DUPLICATE);
	fl = bpf_ntohs(sh->flags);
	op = sh->op;
	d = bpf_map_lookup_elem(&spin_dedup, &rank);
	if (!(fl & SPIN_F_REL) || !d || d->id[k] != id)
		return spin_drop(st, SPIN_DROP_DUPLICATE);
	out = d->out[k];
	if (SPIN_DD_OUT_ID(out) != (id & 0xffff))
		return spin_drop(st, SPIN_DROP_DUPLICATE);
	if (SPIN_DD_OUT_STATE(out) == SPIN_DD_XSK) {
		if (op == SPIN_OP_GET)	/* when it came (wire.h, "re-get") */
			sh->auth_tag = bpf_cpu_to_be64(bpf_ktime_get_ns());
		return spin_to_xsk(xdp, st, d->len[k]);
	}
	if (SPIN_DD_OUT_STATE(out) != SPIN_DD_DONE || !(single || (fl & SPIN_F_SACK_REQ)))
		return spin_drop(st, SPIN_DROP_DUPLICATE);
	c = spin_ctx_get();
	if (!c)
		return XDP_DROP;
	spin_drop_count(st, SPIN_DROP_DUP_ANSWERED);
	if (op == SPIN_OP_GET)
		/* refused before, or its entry went since (spin_get_again
		 * found it gone): a header-only REPLY with the failure */
		return spin_answer(xdp, c, cfg, st, SPIN_PUT_REPLY, 0, rank, id,
				   SPIN_DD_OUT_FAIL(out) ?: SPIN_FAIL_DROPPED,
				   bpf_ntohl(sh->msg_len), SPIN_DD_OUT_LIST(out));
	if (op != SPIN_OP_PUT && op != SPIN_OP_ATOMIC)
		return spin_drop(st, SPIN_DROP_DUPLICATE);
	if (single && (fl & SPIN_F_SACK_REQ)) {
		/* a probe: the range ack of the ids before it */
		return spin_answer_range(xdp, c, cfg, st, SPIN_PUT_ACK, 0, rank, id,
					 SPIN_DD_OUT_FAIL(out), d->len[k], SPIN_DD_OUT_LIST(out),
					 spin_range_of(d, id));
	}
	return spin_answer(xdp, c, cfg, st, SPIN_PUT_ACK, 0, rank, id, SPIN_DD_OUT_FAIL(out),
			   d->len[k], SPIN_DD_OUT_LIST(out));
}

/* spin_rx_other: "a duplicate, answer it with spin_dup" (not an XDP action) */
#define SPIN_RX_DUP	(-2)

struct spin_match_q {
	__u32 pt;
	__u32 rank;
	__u32 pid;
	__u32 msg_len;
	__u64 bits;
	__u64 roff;
	__u8 admit;	/* check the event ring's room (spin_admit) */
	__u8 op;	/* SPIN_OP_PUT (puts, atomics), SPIN_OP_GET or SPIN_OP_FETCH */
	__u8 list;	/* the list being walked */
	__u8 pad;
	__u32 cur;	/* entry to look at next, SPIN_ME_NIL: end */
	/* result */
	__u32 refused;	/* 1 + the drop reason of a refusal by spin_admit, 0 */
	__u32 best;
	__u64 best_seq;
};

/* Does active entry me take the message?  `op` picks the entries that take
 * the operation: SPIN_OP_PUT (puts and atomics) entries with
 * SPIN_ME_OP_PUT, SPIN_OP_GET entries with SPIN_ME_OP_GET, SPIN_OP_FETCH
 * entries with both; an entry with neither flag takes puts only.  Every
 * field is checked here, whatever list or bucket led to the entry. */
static __always_inline int spin_me_takes(const struct spin_me *me, const struct spin_match_q *q)
{
	__u32 ops;

	if (me->state != SPIN_ME_ACTIVE)
		return 0;
	ops = me->options & (SPIN_ME_OP_PUT | SPIN_ME_OP_GET);
	if (q->op == SPIN_OP_FETCH ? ops != (SPIN_ME_OP_PUT | SPIN_ME_OP_GET) :
	    q->op == SPIN_OP_GET ? !(ops & SPIN_ME_OP_GET) : ops && !(ops & SPIN_ME_OP_PUT))
		return 0;
	if ((me->match_bits ^ q->bits) & ~me->ignore_bits)
		return 0;
	if (me->match_rank != SPIN_RANK_ANY && me->match_rank != q->rank)
		return 0;
	if (me->match_pid != SPIN_PID_ANY && me->match_pid != q->pid)
		return 0;
	if ((me->options & SPIN_ME_NO_TRUNCATE) &&
	    (q->roff > me->host_len || q->msg_len > me->host_len - q->roff))
		return 0;
	return 1;
}

/*
 * One step along a list (an exact key's FIFO or a wildcard list, both in
 * append order): the entry q->cur.  The walk ends at the first entry that
 * takes the message (the list's first in Portals order: it becomes the
 * best if it is older than the best so far), at an entry not older than
 * the best so far (nothing after it can win), and at the end of the list.
 * The host changes lists while the runtime walks them: an entry unlinked
 * since keeps its links; one reused since may lead elsewhere, so an entry
 * of another portal or list ends the walk too, and every entry is checked
 * in full (spin_me_takes).  Returns 1 when the walk is over.
 */
static __always_inline int spin_walk_one(struct spin_match_q *q)
{
	__u32 idx = q->cur;
	struct spin_me *me;

	if (idx >= SPIN_MAX_ME)
		return 1;
	me = bpf_map_lookup_elem(&spin_me, &idx);
	if (!me || me->pt != q->pt || me->list != q->list || me->seq >= q->best_seq)
		return 1;
	if (spin_me_takes(me, q)) {
		q->best = idx;
		q->best_seq = me->seq;
		return 1;
	}
	q->cur = me->next;
	return 0;
}

/* Walk from entry `head`: its first entry (the common case: it takes the
 * message), then the rest with an open-coded iterator (no callback frame;
 * at most every slot once). */
#ifdef SPIN_NO_KFUNCS
/* without bpf_iter_num (maps.bpf.h, SPIN_NO_KFUNCS): bpf_loop, whose
 * context must be on the stack: a pointer to q there (8 bytes of a stack
 * that is nearly full) */
static int spin_walk_cb(__u32 i, struct spin_match_q **q)
{
	return spin_walk_one(*q);
}

static __always_inline void spin_walk(struct spin_match_q *q, __u32 head)
{
	q->cur = head;
	if (spin_walk_one(q))
		return;
	bpf_loop(SPIN_MAX_ME, spin_walk_cb, &q, 0);
}
#else
static __always_inline void spin_walk(struct spin_match_q *q, __u32 head)
{
	struct bpf_iter_num it;
	int *i;

	q->cur = head;
	if (spin_walk_one(q))
		return;
	bpf_iter_num_new(&it, 0, SPIN_MAX_ME);
	while ((i = bpf_iter_num_next(&it)))
		if (spin_walk_one(q))
			break;
	bpf_iter_num_destroy(&it);
}
#endif

/*
 * The first entry of portal q->pt that takes the message, in Portals
 * order (docs/design.md, "Matching"): the priority list before the
 * overflow list; within a list, the oldest (lowest seq) of the first
 * taker of each exact key the message can have (rank and pid, rank and
 * any pid, any rank and pid, any source: one hash lookup each, for the
 * kinds the portal has) and the first taker of the wildcard list, which
 * is walked only up to the best exact candidate.  Sets q->best, or leaves
 * it ~0u.
 */
__noinline int spin_search(struct spin_match_q *q)
{
	struct spin_mx_key key = {};
	struct spin_mx *mx;
	struct spin_pt *pt;
	__u32 pti;

	/* a global function: the verifier checks it once, not at each of
	 * the places that match (load time) */
	if (!q)
		return 0;
	key.bits = q->bits;
	pti = q->pt;
	q->best = ~0u;
	q->best_seq = ~0ull;
	pt = bpf_map_lookup_elem(&spin_pt, &pti);
	if (!pt)
		return 0;
	for (__u32 l = 0; l < 2; l++) {
		q->list = l;
		key.pt_list = pti << 1 | l;
		for (__u32 k = 0; k < 4; k++) {
			if (!*(volatile __u32 *)&pt->n_exact[l][k])
				continue;
			key.rank = (k & 2) ? SPIN_RANK_ANY : q->rank;
			key.pid = (k & 1) ? SPIN_PID_ANY : q->pid;
			mx = bpf_map_lookup_elem(&spin_mx, &key);
			if (mx)
				spin_walk(q, *(volatile __u32 *)&mx->head);
		}
		if (*(volatile __u32 *)&pt->n_wild[l])
			spin_walk(q, *(volatile __u32 *)&pt->wild_head[l]);
		if (q->best != ~0u)
			return 0;
	}
	return 0;
}

/* spin_cfg.get_max, or SPIN_MAX_MSG if it is 0 or more */
static __always_inline __u32 spin_get_max(void)
{
	struct spin_cfg *cfg = spin_cfg_get();
	__u32 m = cfg ? cfg->get_max : 0;

	return m && m < SPIN_MAX_MSG ? m : SPIN_MAX_MSG;
}

/*
 * Admission of a message that matched entry `me` (mlength bytes of it):
 * if the runtime will post an event for it (spin_do_finish, spin_rx_get),
 * the event ring must have room, and its source rank must not have its
 * share of the ring unread nor the ring what the sources with unread
 * events may hold (spin_src_ev_admit; except for an AF_XDP entry, whose
 * messages post nothing to the ring: the ring's room only).  Returns 0,
 * or 1 + the drop reason.  A message for an entry that posts nothing is
 * taken whatever the ring holds: the runtime keeps serving those entries
 * when nobody reads the events.
 */
static __always_inline __u32 spin_admit(const struct spin_me *me, __u32 rank, const int op,
					__u64 mlength)
{
	__u32 o = me->options, r;

	/* what one get makes the runtime send (its process answers XSK ones) */
	if (op == SPIN_OP_GET && !(o & SPIN_ME_XSK) && mlength > spin_get_max())
		return 1 + SPIN_DROP_GET_CAP;

	if (!(o & (SPIN_ME_XSK | SPIN_ME_USE_ONCE)) &&	/* no unlink event */
	    (o & (SPIN_ME_EVENT_COMM_DISABLE | SPIN_ME_EVENT_SUCCESS_DISABLE)) &&
	    !(op == SPIN_OP_GET && mlength > SPIN_MAX_SEG))	/* no reply from host */
		return 0;
	if (spin_events_full(me->pt))
		return 1 + SPIN_DROP_HOST_QUEUE_FULL;
	if (!(o & SPIN_ME_XSK) && (r = spin_src_ev_admit(rank, me->pt)))
		return 1 + r;
	return 0;
}

/*
 * spin_search's answer for the common case, inline (without the call and
 * the loops): a priority list of wildcard entries only (no exact entry of
 * any source kind on it, counted as spin_search counts them) whose first
 * entry takes the message.  That entry is the match: nothing on the
 * priority list is older, and a match there ends the search.  0 (q->best
 * ~0u) when the case is not this one; spin_search decides then.
 */
static __always_inline int spin_search_first(const struct spin_pt *pt, struct spin_match_q *q)
{
	q->best = ~0u;
	if (*(volatile __u32 *)&pt->n_exact[SPIN_LIST_PRIORITY][0] |
	    *(volatile __u32 *)&pt->n_exact[SPIN_LIST_PRIORITY][1] |
	    *(volatile __u32 *)&pt->n_exact[SPIN_LIST_PRIORITY][2] |
	    *(volatile __u32 *)&pt->n_exact[SPIN_LIST_PRIORITY][3])
		return 0;
	if (!*(volatile __u32 *)&pt->n_wild[SPIN_LIST_PRIORITY])
		return 0;
	q->list = SPIN_LIST_PRIORITY;
	q->best_seq = ~0ull;
	q->cur = *(volatile __u32 *)&pt->wild_head[SPIN_LIST_PRIORITY];
	spin_walk_one(q);
	return q->best != ~0u;
}

/*
 * Portals matching on one portal table entry.  A use-once entry is claimed
 * with compare-and-swap; if another CPU claimed it first, search again.
 * A message refused by admission (q->admit, spin_admit) claims nothing:
 * -1 with q->refused set.
 */
static __always_inline int spin_match(const struct spin_pt *pt, struct spin_match_q *q,
				      struct spin_ctx *c, const int op)
{
	q->op = op;
	for (int attempt = 0; attempt < 3; attempt++) {
		struct spin_me *me;
		__u64 mlength;
		__u32 best;

		if (!spin_search_first(pt, q))
			spin_search(q);
		best = q->best;
		if (best == ~0u)
			return -1;
		me = bpf_map_lookup_elem(&spin_me, &best);
		if (!me)
			return -1;
		if (q->roff >= me->host_len)
			mlength = 0;
		else if (q->msg_len > me->host_len - q->roff)
			mlength = me->host_len - q->roff;
		else
			mlength = q->msg_len;
		if (q->admit && (q->refused = spin_admit(me, q->rank, op, mlength)))
			return -1;
		if ((me->options & SPIN_ME_USE_ONCE) &&
		    __sync_val_compare_and_swap(&me->state, SPIN_ME_ACTIVE, SPIN_ME_CLAIMED) != SPIN_ME_ACTIVE)
			continue;
		c->start = me->host_off + q->roff;
		c->mlength = mlength;
		return best;
	}
	return -1;
}

/*
 * The message-table sweeper.  One timer for the whole table (per-message
 * timers need an allocation per message, which fails under bursts): every
 * period it expires incomplete messages past their deadline, counting them
 * and posting a MSG_TIMEOUT event, and removes tombstones of completed ones;
 * it also frees idle duplicate windows and the sources' event counts that
 * are back at 0 (spin_gc_src_ev).
 */
struct spin_gc_ctx {
	__u64 now;
	struct spin_stats *st;
};

static long spin_gc_msg(struct bpf_map *map, struct spin_msg_key *key, struct spin_msg *m,
			struct spin_gc_ctx *g)
{
	__u32 status = m->status, k = m->me, r;
	struct spin_me_ct *ct;
	struct spin_event *e;
	void *rb;
	struct spin_me *me;

	if (g->now < m->deadline)
		return 0;
	if (status == SPIN_MSG_NEW || status == SPIN_MSG_RUNNING) {
		spin_drop_count(g->st, SPIN_DROP_MSG_TIMEOUT);
		/* a reliable sender still trying learns that it failed */
		spin_dd_note(key->src_rank, key->msg_id, SPIN_DD_DONE, SPIN_FAIL_TIMEOUT, 0, 0);
		/* only the entry the message matched, if it is still there:
		 * not one appended in its slot since, nor entry 0 for a
		 * message that never matched */
		me = (m->flags & SPIN_MSGF_MATCHED) ? bpf_map_lookup_elem(&spin_me, &k) : NULL;
		if (!me || !spin_me_same(me, m))
			goto out;
		ct = bpf_map_lookup_elem(&spin_me_ct, &k);
		if (ct)
			ct->failure++;
		/* a use-once XSK entry stays claimed: its process unlinks it */
		if ((me->options & (SPIN_ME_USE_ONCE | SPIN_ME_XSK)) == SPIN_ME_USE_ONCE)
			__sync_val_compare_and_swap(&me->state, SPIN_ME_CLAIMED, SPIN_ME_FREE);
		/* events only for entries that want them, and within the
		 * source's share of the ring */
		if (me->options & SPIN_ME_EVENT_COMM_DISABLE)
			goto out;
		if ((r = spin_src_ev_admit(key->src_rank, me->pt))) {
			spin_drop_count(g->st, r);
			goto out;
		}
		rb = spin_ring_of(me->pt);
		e = rb ? bpf_ringbuf_reserve(rb, sizeof(*e), 0) : NULL;
		if (e) {
			__builtin_memset(e, 0, sizeof(*e));
			e->kind = SPIN_EV_MSG_TIMEOUT;
			e->fail = SPIN_FAIL_TIMEOUT;
			e->me = k;
			e->pt_index = me->pt;
			e->rlength = m->msg_len;
			e->mlength = m->bytes_seen;
			e->start = m->start;
			e->src_rank = key->src_rank;
			e->msg_id = key->msg_id;
			e->dropped_bytes = m->msg_len - m->bytes_seen;
			e->timestamp_ns = g->now;
			e->match_bits = me->match_bits;
			e->user_ptr = me->user_ptr;
			e->owner_pid = me->owner_pid;
			spin_rb_submit(e, spin_rb_flags());
			if (g->st)
				g->st->events++;
		} else {
			spin_drop_count(g->st, SPIN_DROP_EV_LOST);
		}
	}
out:
	spin_msg_free(key);
	return 0;
}

static __u64 spin_gc_period(void)
{
	struct spin_cfg *cfg = spin_cfg_get();
	__u64 p = cfg && cfg->msg_timeout_ns ? cfg->msg_timeout_ns / 4 : SPIN_MSG_TIMEOUT_NS / 4;

	if (p < SPIN_GC_MIN_NS)
		p = SPIN_GC_MIN_NS;
	if (p > SPIN_GC_MAX_NS)
		p = SPIN_GC_MAX_NS;
	return p;
}

/* A bitmap chunk whose message state is gone: nothing should leave one
 * (spin_msg_free deletes a message's chunks before its state), so this is
 * a backstop against a leak that would keep the chunk for good. */
static long spin_gc_chunk(struct bpf_map *map, struct spin_msg_chunk_key *key,
			  struct spin_msg_chunk *ch, struct spin_gc_ctx *g)
{
	struct spin_msg_key mk = { .src_rank = key->src_rank, .msg_id = key->msg_id };
	struct spin_src *s;

	if (bpf_map_lookup_elem(&spin_msgs, &mk) || bpf_map_delete_elem(&spin_msg_bits, key))
		return 0;
	s = bpf_map_lookup_elem(&spin_src, &mk.src_rank);
	if (s)
		__sync_fetch_and_add(&s->chunks, -1);
	return 0;
}

/* A source's duplicate window: packets set `used`; a window found unused
 * since idle_since for SPIN_DEDUP_IDLE_NS is freed (its source sent
 * nothing, not even a retransmission, for that long). */
static long spin_gc_dd(struct bpf_map *map, __u32 *key, struct spin_dedup *d,
		       struct spin_gc_ctx *g)
{
	if (*(volatile __u32 *)&d->used) {
		d->used = 0;
		d->idle_since = g->now;
	} else if (g->now - d->idle_since >= SPIN_DEDUP_IDLE_NS) {
		bpf_map_delete_elem(&spin_dedup, key);
	}
	return 0;
}

/*
 * A source's counts in a ring (spin_src_ev): a new generation if the reader
 * passed the mark; back at 0 (every event of the source read, or the ring
 * replaced by a new process's), the pair is freed and no longer counts in
 * its slot's n (spin_src_ev_admit).  Only the delete that succeeds gives
 * the pair back (its insert counted it once).  An event posted for the
 * source on another CPU between the roll and the delete is not counted
 * (its increment lands in the freed pair, or in the pair of another source
 * that the element was reused for: one too many there): at most one per
 * CPU, and the next event makes the pair again (spin_src_ev_get).
 */
static long spin_gc_src_ev(struct bpf_map *map, __u32 *key, struct spin_src_ev *s,
			   struct spin_gc_ctx *g)
{
	__u32 slot = *key & (SPIN_MAX_PROCS - 1), *n;
	void *rb = bpf_map_lookup_elem(&spin_rings, spin_slot_key(slot));
	__u64 cons = 0, prod = 0;

	if (rb) {
		cons = bpf_ringbuf_query(rb, BPF_RB_CONS_POS);
		prod = bpf_ringbuf_query(rb, BPF_RB_PROD_POS);
	}
	/* no ring (its process is gone): nothing of it is unread */
	if ((rb && spin_src_ev_roll(s, cons, prod)) || bpf_map_delete_elem(&spin_src_ev, key))
		return 0;
	n = bpf_map_lookup_elem(&spin_src_ev_n, spin_slot_key(slot));
	if (n)
		__sync_fetch_and_add(n, -1);
	return 0;
}

static int spin_gc_run(void *map, __u32 *key, struct spin_gc *gc)
{
	struct spin_gc_ctx g = { .now = bpf_ktime_get_ns(), .st = spin_stats_get() };

	bpf_for_each_map_elem(&spin_msgs, spin_gc_msg, &g, 0);
	bpf_for_each_map_elem(&spin_msg_bits, spin_gc_chunk, &g, 0);
	bpf_for_each_map_elem(&spin_dedup, spin_gc_dd, &g, 0);
	bpf_for_each_map_elem(&spin_src_ev, spin_gc_src_ev, &g, 0);
	gc->runs++;
	bpf_timer_start(&gc->timer, spin_gc_period(), 0);
	return 0;
}

/* Start the sweeper once; a failed start is retried by a later message. */
static __always_inline void spin_gc_arm(void)
{
	__u32 zero = 0;
	struct spin_gc *gc = bpf_map_lookup_elem(&spin_gc, &zero);

	if (!gc || gc->armed || __sync_val_compare_and_swap(&gc->armed, 0, 1))
		return;
	bpf_timer_init(&gc->timer, &spin_gc, CLOCK_MONOTONIC);
	if (bpf_timer_set_callback(&gc->timer, spin_gc_run) ||
	    bpf_timer_start(&gc->timer, spin_gc_period(), 0))
		gc->armed = 0;
}

#ifdef SPIN_NO_KFUNCS
/* no bpf_wq (Linux 6.10+): the waker is never ready (armed stays 0) and
 * spin_rb_submit wakes the reader directly */
static __always_inline void spin_waker_arm(void)
{
}
#else
/* A waker's work item: wake the reader of its slot's ring (its key). */
static int spin_waker_run(void *map, int *key, void *value)
{
	spin_rb_doorbell(bpf_map_lookup_elem(&spin_rings, key));
	return 0;
}

/* Set up every slot's waker, once: slot 0's claims the setup (armed 1)
 * and is ready last, so a packet that finds it ready finds them all. */
static __always_inline void spin_waker_arm(void)
{
	struct spin_waker *w = bpf_map_lookup_elem(&spin_waker, (const void *)&spin_slot_keys[0]);

	if (!w || w->armed || __sync_val_compare_and_swap(&w->armed, 0, 1))
		return;
	for (__u32 k = SPIN_MAX_PROCS - 1; k > 0; k--) {
		struct spin_waker *o = bpf_map_lookup_elem(&spin_waker,
							   (const void *)&spin_slot_keys[k]);

		if (o && !o->armed && !bpf_wq_init(&o->wq, &spin_waker, 0) &&
		    !bpf_wq_set_callback_impl(&o->wq, spin_waker_run, 0, NULL))
			o->armed = 2;
	}
	if (bpf_wq_init(&w->wq, &spin_waker, 0) ||
	    bpf_wq_set_callback_impl(&w->wq, spin_waker_run, 0, NULL)) {
		w->armed = 0;
		return;
	}
	w->armed = 2;
}
#endif

struct spin_wait {
	struct spin_msg_key key;
	__u32 status;
};

static int spin_wait_cb(__u32 i, struct spin_wait *w)
{
	struct spin_msg *m = bpf_map_lookup_elem(&spin_msgs, &w->key);

	if (!m) {
		w->status = SPIN_MSG_DONE;
		return 1;
	}
	w->status = *(volatile __u32 *)&m->status;
	return w->status != SPIN_MSG_NEW;
}

/* The duplicate window of source rank `rank`, made by its first packet
 * (and the sweeper started, which frees it once idle); NULL when all
 * SPIN_DEDUP_SOURCES windows are in use. */
static const struct spin_dedup spin_dd_zero;

static __noinline struct spin_dedup *spin_dd_new(__u32 rank)
{
	struct spin_dedup *d;

	bpf_map_update_elem(&spin_dedup, &rank, &spin_dd_zero, BPF_NOEXIST);
	d = bpf_map_lookup_elem(&spin_dedup, &rank);
	if (d)
		spin_gc_arm();
	return d;
}

/* (the lookup inline: a call and its return cost more than the rest on
 * the per-packet path; only a source's first packet goes out of line) */
static __always_inline struct spin_dedup *spin_dd_window(__u32 rank)
{
	struct spin_dedup *d = bpf_map_lookup_elem(&spin_dedup, &rank);

	if (!d) {
		d = spin_dd_new(rank);
		if (!d)
			return NULL;
	}
	if (!*(volatile __u32 *)&d->used)
		d->used = 1;
	return d;
}

/* The portal table entry a message targets and its source's duplicate
 * window (*dd), or NULL and the drop reason. */
static __always_inline struct spin_pt *spin_check_target(struct spin_stats *st, __u32 pti,
							__u32 rank, int *reason,
							struct spin_dedup **dd)
{
	struct spin_pt *pt;

	*reason = SPIN_DROP_BAD_PT;
	if (pti >= SPIN_MAX_PT)
		return NULL;
	pt = bpf_map_lookup_elem(&spin_pt, &pti);
	if (!pt || !(pt->flags & SPIN_PT_ALLOCATED))
		return NULL;
	*reason = SPIN_DROP_PT_DISABLED;
	if (!(pt->flags & SPIN_PT_ENABLED))
		return NULL;
	*reason = SPIN_DROP_BAD_SOURCE;
	if (rank >= SPIN_MAX_PEERS)
		return NULL;
	*reason = SPIN_DROP_SRC_TABLE_FULL;
	*dd = spin_dd_window(rank);
	if (!*dd)
		return NULL;
	return pt;
}

/* A fresh invocation context and matching query for this packet. */
static __always_inline void spin_begin(struct spin_ctx *c, struct spin_match_q *q,
				       const struct spin_hdr *sh, __u32 pti, __u32 rank,
				       __u32 msg_id, __u32 msg_len, __u32 pkt_off, __u32 pay_len)
{
	c->pt = pti;
	c->pay_off = SPIN_PAY_OFF;
	c->pay_len = pay_len;
	c->pkt_off = pkt_off;
	c->msg_len = msg_len;
	c->key.src_rank = rank;
	c->key.msg_id = msg_id;
	c->hdr_rc = 0;
	c->pay_rc = 0;
	c->dropped = 0;
	c->n_puts = 0;
	c->uh_set = 0;
	c->ms_ready = 0;
	c->ran = 0;
	c->fail = 0;
	c->drop_reason = 0;
	c->msg_dropped = 0;
	c->put[0].kind = SPIN_PUT_NONE;

	q->pt = pti;
	q->admit = 1;
	q->refused = 0;
	q->rank = rank;
	q->pid = bpf_ntohl(sh->src_pid);
	q->msg_len = msg_len;
	q->bits = bpf_be64_to_cpu(sh->match_bits);
	q->roff = bpf_be64_to_cpu(sh->remote_off);
}

/*
 * Flow control (SPIN_PT_FLOWCTRL): a message matched no entry of `pt`.
 * Clear SPIN_PT_ENABLED with compare-and-swap; the CPU whose swap cleared it
 * posts the one SPIN_EV_PT_DISABLED event and counts pt_disabled.
 */
static __always_inline void spin_flowctrl(struct spin_stats *st, struct spin_pt *pt,
					  const struct spin_hdr *sh)
{
	struct spin_event *e;
	void *rb;
	__u32 old = pt->flags, prev;
	int won = 0;

	/* another CPU (or the host) may have disabled it first */
	for (int i = 0; i < 4 && (old & SPIN_PT_ENABLED); i++) {
		prev = __sync_val_compare_and_swap(&pt->flags, old, old & ~SPIN_PT_ENABLED);
		if (prev == old) {
			won = 1;
			break;
		}
		old = prev;
	}
	if (!won)
		return;
	if (st)
		st->pt_disabled++;
	rb = spin_ring_of(bpf_ntohs(sh->pt_index));
	e = rb ? bpf_ringbuf_reserve(rb, sizeof(*e), 0) : NULL;
	if (!e) {
		spin_drop_count(st, SPIN_DROP_EV_LOST);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = SPIN_EV_PT_DISABLED;
	e->fail = SPIN_FAIL_PT_DISABLED;
	e->pt_index = bpf_ntohs(sh->pt_index);
	e->me = ~0u;
	e->match_bits = bpf_be64_to_cpu(sh->match_bits);
	e->rlength = bpf_ntohl(sh->msg_len);
	e->remote_off = bpf_be64_to_cpu(sh->remote_off);
	e->hdr_data = bpf_be64_to_cpu(sh->hdr_data);
	e->src_rank = bpf_ntohl(sh->src_rank);
	e->src_pid = bpf_ntohl(sh->src_pid);
	e->msg_id = bpf_ntohl(sh->msg_id);
	e->owner_pid = pt->owner_pid;
	e->flow_control = 1;
	e->timestamp_ns = bpf_ktime_get_ns();
	/* submitted here, not by spin_rb_submit (one call level less: the
	 * paths that reject are at the stack's limit); a rare event, woken
	 * from the packet path */
	bpf_ringbuf_submit(e, spin_rb_flags());
	if (st)
		st->events++;
}

/*
 * A packet the target cannot deliver: count `reason`; on NO_MATCH with a
 * flow-controlled portal table entry `fc` (NULL: no flow control here),
 * disable it; then, if the packet is at pkt_off 0 of a PUT/ATOMIC with
 * SPIN_F_ACK_REQ or of a GET/FETCH, and the initiator is a known peer,
 * turn the frame into a negative ACK (PUT/ATOMIC) or a header-only REPLY
 * (GET/FETCH): user_hdr[0] 0, user_hdr[1] the failure, user_hdr[2] 0;
 * msg_id, match_bits, remote_off and hdr_data echoed (wire.h).
 * Out of line: never on the put fast path.
 */
static __noinline int spin_reject(struct xdp_md *xdp, struct spin_stats *st,
				  struct spin_cfg *cfg, struct spin_pt *fc, int reason)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;
	struct spin_peer *peer;
	struct spin_ctx *c;
	__u32 fail, rank, op, rel;

	spin_drop_count(st, reason);
	if (reason == SPIN_DROP_NO_XSK)
		fail = SPIN_FAIL_NO_TARGET;
	else if (reason == SPIN_DROP_PT_DISABLED)
		fail = SPIN_FAIL_PT_DISABLED;
	else if (reason == SPIN_DROP_BAD_PT || reason == SPIN_DROP_NO_MATCH)
		fail = SPIN_FAIL_NO_MATCH;
	else if (reason == SPIN_DROP_GET_CAP)
		fail = SPIN_FAIL_OP_VIOLATION;
	else if (reason == SPIN_DROP_HOST_QUEUE_FULL || reason == SPIN_DROP_MSG_TABLE_FULL ||
		 reason == SPIN_DROP_SRC_QUOTA || reason == SPIN_DROP_EV_QUOTA ||
		 reason == SPIN_DROP_XSK_FULL || reason == SPIN_DROP_SRC_TABLE_FULL)
		fail = SPIN_FAIL_QUEUE_FULL;
	else
		return XDP_DROP;
	if ((void *)(sh + 1) > end)
		return XDP_DROP;
	if (fc && (reason == SPIN_DROP_NO_MATCH || reason == SPIN_DROP_HOST_QUEUE_FULL) &&
	    (fc->flags & SPIN_PT_FLOWCTRL)) {
		spin_flowctrl(st, fc, sh);
		fail = SPIN_FAIL_PT_DISABLED;
	}
	rank = bpf_ntohl(sh->src_rank);
	rel = sh->flags & bpf_htons(SPIN_F_REL);
	/* reliable: "not now" forgets the message (the sender tries again
	 * later), any other refusal is its outcome, answered again to a
	 * retransmission */
	if (reason == SPIN_DROP_XSK_FULL)
		;	/* the runtime's part is done and kept (the window says
			 * "to the socket"): a retransmission goes there again */
	else if (rel && fail == SPIN_FAIL_QUEUE_FULL)
		spin_dd_forget(rank, bpf_ntohl(sh->msg_id));
	else if (rel)
		spin_dd_note(rank, bpf_ntohl(sh->msg_id), SPIN_DD_DONE, fail, 0, 0);
	/* the packet at offset 0 answers, or (reliable) one that asks */
	if (sh->pkt_off && !(rel && (sh->flags & bpf_htons(SPIN_F_SACK_REQ))))
		return XDP_DROP;
	op = sh->op;
	if (op == SPIN_OP_PUT || op == SPIN_OP_ATOMIC) {
		if (!(sh->flags & bpf_htons(SPIN_F_ACK_REQ)) && !rel)
			return XDP_DROP;
	} else if (op != SPIN_OP_GET && op != SPIN_OP_FETCH) {
		return XDP_DROP;
	}
	peer = bpf_map_lookup_elem(&spin_peers, &rank);
	c = spin_ctx_get();
	if (!peer || !peer->valid || !c || !cfg)
		return XDP_DROP;
	return spin_answer(xdp, c, cfg, st,
			   (op == SPIN_OP_PUT || op == SPIN_OP_ATOMIC) ? SPIN_PUT_ACK : SPIN_PUT_REPLY,
			   0, rank, bpf_ntohl(sh->msg_id), fail, 0, 0);
}

/* Default work for an entry without handlers (or whose handler program is
 * missing): deposit, account, finish.  A global function, so the verifier
 * checks it once.  note: as spin_do_finish's (0: the caller writes a
 * reliable message's outcome to the duplicate window). */
__noinline int spin_default(struct xdp_md *xdp, __u32 note)
{
	struct spin_ctx *c = spin_ctx_get();
	struct spin_stats *st = spin_stats_get();
	struct spin_cfg *cfg = spin_cfg_get();
	struct spin_msg *m = NULL;

	if (!c || !cfg)
		return XDP_ABORTED;
	if (c->multi) {
		m = bpf_map_lookup_elem(&spin_msgs, &c->key);
		if (!m) {
			spin_drop_count(st, SPIN_DROP_MSG_TIMEOUT);
			return XDP_DROP;
		}
	}
	if (c->phases & SPIN_PH_XSK) {
		/* the owning process takes the packet: the runtime only keeps
		 * the message state (duplicates, expiry); job_key tells it
		 * the matched entry */
		struct spin_hdr *sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
		long act;

		spin_account(c, m);
		if (c->done && m)	/* every packet is in: ids catch late duplicates */
			spin_msg_free(&c->key);
		/* the process answers a retransmission; it goes there again */
		spin_dd_note(c->key.src_rank, c->key.msg_id, SPIN_DD_XSK, 0, 0, c->me);
		if ((void *)(sh + 1) > spin_xdp_end(xdp))
			return spin_drop(st, SPIN_DROP_MALFORMED);
		sh->job_key = bpf_htonl(c->me);
		((struct udphdr *)sh - 1)->check = 0;	/* checked at ingress; job_key changed */
		act = spin_xsk_redirect(xdp, cfg, 0);
		if (act == SPIN_XSK_RING) {	/* its process's ring has it */
			if (st)
				st->to_xsk++;
			return XDP_DROP;
		}
		if (act < 0)
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_XSK_FULL);
		if (act != XDP_REDIRECT)
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_NO_XSK);
		if (st)
			st->to_xsk++;
		return act;
	}
	if (c->phases & (SPIN_PH_DEPOSIT | SPIN_PH_PAYLOAD))
		spin_deposit(xdp, c);
	spin_account(c, m);
	return spin_do_finish(xdp, c, st, cfg, 1, note);
}

/*
 * Tail call into handler slot `slot`.  Every slot has its own call site with
 * a constant key, so the JIT patches each into a direct jump instead of an
 * indirect one (with retpolines, an indirect jump costs tens of ns).
 */
static __always_inline void spin_tail_call_const(struct xdp_md *xdp, void *map, const __u32 slot)
{
	/* inline asm keeps the compiler from merging the call sites into one
	 * with a variable key */
	asm volatile("r1 = %[ctx]\n\t"
		     "r2 = %[map]\n\t"
		     "r3 = %[slot]\n\t"
		     "call 12\n\t"
		     :: [ctx]"r"(xdp), [map]"r"(map), [slot]"i"(slot)
		     : "r0", "r1", "r2", "r3", "r4", "r5");
}
#define SPIN_TC1(n) case n: spin_tail_call_const(xdp, &spin_handlers, n); return;
#define SPIN_TC4(n) SPIN_TC1(n) SPIN_TC1(n + 1) SPIN_TC1(n + 2) SPIN_TC1(n + 3)
#define SPIN_TC16(n) SPIN_TC4(n) SPIN_TC4(n + 4) SPIN_TC4(n + 8) SPIN_TC4(n + 12)
static __always_inline void spin_tail_call_handler(struct xdp_md *xdp, __u32 slot)
{
	_Static_assert(SPIN_MAX_HANDLERS == 64, "one call site per handler slot");
	switch (slot) {
	SPIN_TC16(0) SPIN_TC16(16) SPIN_TC16(32) SPIN_TC16(48)
	}
}

/* The packet's identity as the dispatch gave it (spin_tctx) back into
 * spin_ctx, over whatever the handler program left there. */
static __always_inline void spin_tctx_restore(struct spin_ctx *c, const struct spin_tctx *t)
{
	__builtin_memcpy(c, t->id, SPIN_CTX_ID_LEN);
	c->seq = t->seq;
}

/* The handler program's counters (spin_ctx.h_*) into spin_stats, each
 * drop bounded by what one invocation can do, and zeroed (the common
 * case, nothing to count, is two tests). */
static __always_inline void spin_hcounters(struct spin_ctx *c, struct spin_stats *st)
{
	if (c->h_oob | c->h_put_failed | c->h_put_over) {
		if (st) {
			st->drops[SPIN_DROP_HOST_OOB] += c->h_oob < 64 ? c->h_oob : 64;
			st->drops[SPIN_DROP_PUT_FAILED] += c->h_put_failed < 64 ? c->h_put_failed : 64;
			st->drops[SPIN_DROP_PUT_OVERFLOW] += c->h_put_over < 64 ? c->h_put_over : 64;
		}
		c->h_oob = c->h_put_failed = c->h_put_over = 0;
	}
	if (c->h_dma_to | c->h_dma_from) {
		if (st) {
			st->dma_to_host_bytes += c->h_dma_to;
			st->dma_from_host_bytes += c->h_dma_from;
		}
		c->h_dma_to = c->h_dma_from = 0;
	}
}

/*
 * The finish stage (spin_stages[SPIN_STAGE_FINISH]): every handler program
 * ends with a tail call here, so the runtime's finish code (counters,
 * events, the put and answer frames with their auth tag, fan-out), the
 * default deposit, publishing the header verdict and accounting the
 * packet's bytes are in the runtime object once instead of in each
 * handler program, which holds none of the maps they need.  libspin loads
 * this program again for every handler program, with that program's maps
 * (its process's window, queued puts and message states only) and
 * spin_fin_slot set to its process slot, and puts it in the handler
 * program's own spin_stages: whatever the handler leaves in spin_ctx or
 * writes into the maps it holds, its finish stage reaches no other
 * process's window or event ring (lib/handler.c, docs/security.md).
 *
 * spin_ctx is the handler's to write: the stage takes the packet's
 * identity (entry, message key, lengths, offsets, multi) from spin_tctx,
 * which the dispatch wrote and no handler program holds, and from
 * spin_ctx only the handler's outputs (return codes, the puts, fail, the
 * phases it asks for, its counters), each checked where it is used.  The
 * first pass publishes the header verdict, deposits (SPIN_PH_DSTAGE: the
 * header handler said PROCEED, or there is no payload handler) and
 * accounts the packet; if it completed the message and the program has a
 * completion handler it has not run (SPIN_PH_HAS_CH), the stage enters the
 * program again for it (SPIN_PH_RESUME, through spin_stages[SPIN_STAGE_SELF]),
 * which comes back here to finish.  One finish per dispatch (armed).
 */
SEC("xdp")
int spin_finish(struct xdp_md *xdp)
{
	struct spin_ctx *c = spin_ctx_get();
	struct spin_tctx *t = spin_tctx_get();
	struct spin_stats *st = spin_stats_get();
	struct spin_cfg *cfg = spin_cfg_get();
	__u32 ran, asked;

	if (!c || !t || !cfg)
		return XDP_ABORTED;
	if (!t->armed) {
		/* no dispatch waits for a finish (one finish each) */
		spin_drop_count(st, SPIN_DROP_HANDLER_ERROR);
		return XDP_DROP;
	}
	ran = c->ran;
	c->ran = 0;
	if (ran && st) {
		/* the handlers the program called (handler_calls) */
		if (ran & (1 << SPIN_H_HEADER))
			st->handler_calls[SPIN_H_HEADER]++;
		if (ran & (1 << SPIN_H_PAYLOAD))
			st->handler_calls[SPIN_H_PAYLOAD]++;
		if (ran & (1 << SPIN_H_COMPLETION))
			st->handler_calls[SPIN_H_COMPLETION]++;
	}
	spin_hcounters(c, st);
	asked = c->phases;
	spin_tctx_restore(c, t);
	if (t->acct) {
		/* back from its completion handler: the accounting's
		 * outcome */
		c->msg_dropped = t->msg_dropped;
		c->done = t->done;
		c->dropped = t->dropped;
		c->fail = c->fail || t->fail;
		goto finish;
	}
	/* (a message whose header handler dropped it is not dispatched) */
	c->msg_dropped = 0;
	c->fail = c->fail != 0;
	if (c->drop_reason) {
		c->done = 0;
		goto finish;
	}
	t->acct = 1;
	{
		struct spin_msg *m = NULL;

		if (c->multi) {
			m = bpf_map_lookup_elem(&spin_msgs, &c->key);
			if (!m) {
				t->armed = 0;
				spin_drop_count(st, SPIN_DROP_MSG_TIMEOUT);
				return XDP_DROP;
			}
		}
		/* the verdict of the header handler, if this packet ran it */
		if (c->phases & SPIN_PH_HEADER)
			spin_after_header(c, m);
		/* the payload handler's drop: this packet's bytes */
		c->dropped = ((ran & (1 << SPIN_H_PAYLOAD)) &&
			      (c->pay_rc == SPIN_RC_DROP || c->pay_rc == SPIN_RC_DROP + SPIN_RC_PENDING)) ?
			     c->pay_len : 0;
		if ((asked & SPIN_PH_DSTAGE) && (c->phases & (SPIN_PH_DEPOSIT | SPIN_PH_PAYLOAD)) &&
		    !c->msg_dropped)
			spin_deposit(xdp, c);
		c->done = 0;
		spin_account(c, m);
		t->done = c->done;
		t->dropped = c->dropped;
		t->msg_dropped = c->msg_dropped;
		t->fail = c->fail;
	}
	if (c->done && !c->msg_dropped && (asked & SPIN_PH_HAS_CH) &&
	    !(ran & (1 << SPIN_H_COMPLETION))) {
		struct spin_me *me = bpf_map_lookup_elem(&spin_me, &c->me);

		c->phases |= SPIN_PH_RESUME;
		/* the handler program this stage was loaded for, never
		 * another (its own spin_stages) */
		if (me && me->handler)
			bpf_tail_call_static(xdp, &spin_stages, SPIN_STAGE_SELF);
		/* the program went away meanwhile: the message fails */
		c->phases &= ~SPIN_PH_RESUME;
		c->fail = 1;
		spin_drop_count(st, SPIN_DROP_HANDLER_ERROR);
	}
finish:
	t->armed = 0;
	return spin_do_finish(xdp, c, st, cfg, 0, 1);
}

/* Go to the entry's handler program, or do the default work (note: as
 * spin_default's; a handler program's finish stage always notes). */
static __always_inline int spin_dispatch(struct xdp_md *xdp, struct spin_ctx *c,
					 struct spin_me *me, struct spin_stats *st, __u32 note)
{
	__u32 h = me->handler;

	if (me->options & SPIN_ME_XSK) {
		c->phases = SPIN_PH_XSK;
		return spin_default(xdp, 1);
	}
	if (h && !c->msg_dropped) {
		/* the header handler's target_id: a handler program holds no
		 * spin_cfg (docs/security.md, "Handlers") */
		struct spin_cfg *cfg = spin_cfg_get();
		__u32 slot = SPIN_PT_SLOT(c->pt) & (SPIN_MAX_PROCS - 1);

		struct spin_tctx *t = spin_tctx_get();

		c->tgt_rank = !cfg ? 0 : slot ? cfg->proc_rank[slot] : cfg->my_rank;
		/* what the handler needs of the entry (it holds no spin_me) */
		c->host_off = me->host_off;
		c->host_len = me->host_len;
		c->hhost_off = me->hhost_off;
		c->hhost_len = me->hhost_len;
		c->hpu_size = me->hpu_size;
		/* (the handler's counters, spin_ctx.h_*, are 0: the last stage on
		 * this CPU zeroed them) */
		/* and the finish stage's copy of the packet's identity */
		if (t) {
			__builtin_memcpy(t->id, c, SPIN_CTX_ID_LEN);
			/* (msg_dropped, done, dropped and fail are the stage's,
			 * written by its first pass before any use) */
			t->seq = c->seq;
			t->acct = 0;
			t->armed = 1;
			spin_tail_call_handler(xdp, h - 1);
			t->armed = 0;
		}
		/* no program in the slot: the message fails */
		c->fail = 1;
		c->phases &= ~SPIN_PH_PAYLOAD;
		spin_drop_count(st, SPIN_DROP_HANDLER_ERROR);
	}
	return spin_default(xdp, note);
}

/*
 * A single-packet message to entry me, whose source's duplicate window d
 * spin_rx holds: dispatched as spin_dispatch does; when the default work
 * ran here (no handler program, or a missing one: a handler program
 * returns through the finish stage, which notes it itself), a reliable
 * message's outcome goes into d directly, where spin_do_finish would
 * have looked the window up again (exactly when it would have noted: it
 * completed, the finish step was reached, and it did not go to an AF_XDP
 * socket, which notes its own).
 */
static __always_inline int spin_dispatch_single(struct xdp_md *xdp, struct spin_ctx *c,
						struct spin_me *me, struct spin_stats *st,
						struct spin_dedup *d, __u32 id, __be16 flags)
{
	__u32 list = me->list, note = !(flags & bpf_htons(SPIN_F_REL)) || !d, fail;
	int act;

	act = spin_dispatch(xdp, c, me, st, note);
	if (!note && c->done && !c->drop_reason && !(c->phases & SPIN_PH_XSK)) {
		fail = c->msg_dropped ? SPIN_FAIL_DROPPED : c->fail ? SPIN_FAIL_HANDLER : SPIN_FAIL_OK;
		spin_dd_set(d, id, SPIN_DD_DONE, fail, list, c->mlength);
	}
	return act;
}

/* An acknowledgement for a message this node sent: an event for the host,
 * within its source's share of the ring and the room the sources' events
 * may take (spin_src_ev_admit; the runtime cannot tell an ack of
 * an operation still outstanding from any other: the reader sorts them
 * out; a reliable sender's lost ack is asked for again). */
static __noinline int spin_rx_ack(struct xdp_md *xdp, const struct spin_hdr *sh,
				  struct spin_stats *st)
{
	struct spin_event *e;
	void *rb;
	__u32 r;

	if (!st)
		return XDP_DROP;
	if ((r = spin_src_ev_admit(bpf_ntohl(sh->src_rank), bpf_ntohs(sh->pt_index))))
		return spin_drop(st, r);
	/* the ring of the process that sent the message (pt_index: wire.h) */
	rb = spin_ring_of(bpf_ntohs(sh->pt_index));
	e = rb ? bpf_ringbuf_reserve(rb, sizeof(*e), 0) : NULL;
	if (!e)
		return spin_drop(st, SPIN_DROP_EV_LOST);
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = SPIN_EV_ACK;
	e->fail = (__u32)bpf_be64_to_cpu(sh->user_hdr[1]);
	e->pt_index = bpf_ntohs(sh->pt_index);
	e->match_bits = bpf_be64_to_cpu(sh->match_bits);
	e->mlength = bpf_be64_to_cpu(sh->user_hdr[0]);
	e->list = (__u32)bpf_be64_to_cpu(sh->user_hdr[2]);
	e->remote_off = bpf_be64_to_cpu(sh->remote_off);
	e->hdr_data = bpf_be64_to_cpu(sh->hdr_data);
	e->src_rank = bpf_ntohl(sh->src_rank);
	e->src_pid = bpf_ntohl(sh->src_pid);
	e->msg_id = bpf_ntohl(sh->msg_id);
	e->user_ptr = bpf_be64_to_cpu(sh->user_hdr[3]);	/* range ack */
	e->timestamp_ns = bpf_ktime_get_ns();
	spin_rb_submit(e, spin_rb_flags());
	st->acks_received++;
	st->events++;
	return XDP_DROP;
}

/*
 * A reliable GET whose id is in the window: if the runtime answered it and
 * its entry is still the one (same slot incarnation, not freed), put the
 * entry and what the reply read into c and return the entry: the reply is
 * read again (as an RDMA read retry is), without counters or events.
 */
static __always_inline struct spin_me *spin_get_again(__u32 rank, __u32 id,
						      const struct spin_hdr *sh,
						      struct spin_ctx *c)
{
	struct spin_dedup *d = bpf_map_lookup_elem(&spin_dedup, &rank);
	__u32 k = id & (SPIN_DEDUP_SLOTS - 1), out, ref, mi, state;
	struct spin_me *me;

	if (!(sh->flags & bpf_htons(SPIN_F_REL)) || !d || d->id[k] != id)
		return NULL;
	out = d->out[k];
	if (SPIN_DD_OUT_ID(out) != (id & 0xffff) || SPIN_DD_OUT_STATE(out) != SPIN_DD_DONE ||
	    SPIN_DD_OUT_FAIL(out))
		return NULL;
	ref = d->ref[k];
	mi = SPIN_DD_REF_ME(ref);
	me = bpf_map_lookup_elem(&spin_me, &mi);
	if (!me || (me->seq & 0x7fff) != SPIN_DD_REF_SEQ(ref))
		return NULL;
	state = *(volatile __u32 *)&me->state;
	if (state != SPIN_ME_ACTIVE && state != SPIN_ME_CLAIMED)
		return NULL;
	c->me = mi;
	c->start = d->aux[k];
	c->mlength = d->len[k];
	return me;
}

/*
 * A get (SPIN_OP_GET, wire.h): validated like a put, matched against entries
 * with SPIN_ME_OP_GET (Portals order, use-once claimed, truncation), then
 * answered without handlers.  An XSK entry's get goes to the owning process's
 * AF_XDP socket, which answers.  Otherwise the get completes here (counters,
 * SPIN_EV_GET, use-once unlink) and the frame becomes the REPLY, built from
 * the entry's window and sent to the initiator's rank; a reply longer than
 * one packet is handed to the owning process (SPIN_EV_GET_FROM_HOST).
 */
static __always_inline int spin_rx_get(struct xdp_md *xdp, struct spin_stats *st,
				  struct spin_cfg *cfg)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(ip + 1);
	struct spin_hdr *sh = (void *)(udp + 1);
	struct spin_me_ct *ct;
	struct spin_put_req *r;
	struct spin_match_q q;
	struct spin_ctx *c;
	struct spin_dedup *dd = NULL;
	struct spin_pt *pt;
	struct spin_me *me;
	__u32 ulen, msg_len, msg_id, pti, rank, pay;
	__u64 hdr_data;
	int mi, reason;

	if (!st || !cfg || (void *)(sh + 1) > end)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	/* header only, but for a reliable re-get's bitmap (wire.h): whole
	 * 64-bit words, at most one packet's worth */
	ulen = bpf_ntohs(udp->len);
	SPIN_U16(ulen);
	if (ulen < 8 + sizeof(*sh) || (void *)udp + ulen > end ||
	    bpf_ntohs(ip->tot_len) != ulen + 20)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	pay = ulen - 8 - sizeof(*sh);
	if (pay && (!(sh->flags & bpf_htons(SPIN_F_REL)) || pay > SPIN_MAX_SEG || (pay & 7)))
		return spin_drop(st, SPIN_DROP_MALFORMED);
	msg_len = bpf_ntohl(sh->msg_len);
	msg_id = bpf_ntohl(sh->msg_id);
	if (!msg_id || msg_len > SPIN_MAX_MSG)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	if (sh->pkt_off)
		return spin_drop(st, SPIN_DROP_BAD_OFFSET);
	pti = bpf_ntohs(sh->pt_index);
	rank = bpf_ntohl(sh->src_rank);
	pt = spin_check_target(st, pti, rank, &reason, &dd);
	if (!pt)
		return spin_reject(xdp, st, cfg, NULL, reason);

	c = spin_ctx_get();
	if (!c)
		return XDP_ABORTED;
	spin_begin(c, &q, sh, pti, rank, msg_id, msg_len, 0, 0);
	c->phases = 0;
	c->multi = 0;
	c->done = 1;
	hdr_data = bpf_be64_to_cpu(sh->hdr_data);

	if (spin_dedup_seen(cfg, dd, msg_id, sh->flags)) {
		me = spin_get_again(rank, msg_id, sh, c);
		if (!me)
			return SPIN_RX_DUP;	/* spin_rx answers it (stack depth) */
		spin_drop_count(st, SPIN_DROP_DUP_ANSWERED);
		if (pay && c->mlength > SPIN_MAX_SEG) {
			/* a re-get: the owning process sends the packets its
			 * bitmap misses, from the window range read here */
			long act;

			sh->job_key = bpf_htonl(c->me);
			sh->user_hdr[0] = bpf_cpu_to_be64(c->start);
			sh->user_hdr[1] = bpf_cpu_to_be64((__u64)c->mlength |
							  (__u64)(me->list & 0xff) << 32);
			sh->auth_tag = bpf_cpu_to_be64(bpf_ktime_get_ns());
			udp->check = 0;
			act = spin_xsk_redirect(xdp, cfg, 0);
			if (act == SPIN_XSK_RING) {	/* its process's ring has it */
				if (st)
					st->to_xsk++;
				return XDP_DROP;
			}
			if (act == XDP_REDIRECT) {
				st->to_xsk++;
				return act;
			}
			if (act < 0)	/* asked again at the next timeout */
				return spin_drop(st, SPIN_DROP_XSK_FULL);
			/* no process on this queue: the whole reply again */
		}
		goto reply;
	}
	mi = spin_match(pt, &q, c, SPIN_OP_GET);
	if (mi < 0)
		return spin_reject(xdp, st, cfg, pt, q.refused ? q.refused - 1 : SPIN_DROP_NO_MATCH);
	c->me = mi;
	me = bpf_map_lookup_elem(&spin_me, &c->me);
	if (!me)
		return spin_drop(st, SPIN_DROP_NO_MATCH);
	st->msgs++;
	if (me->options & SPIN_ME_XSK) {
		/* the owning process answers; job_key tells it the entry */
		long act;

		spin_dd_note(rank, msg_id, SPIN_DD_XSK, 0, 0, mi);
		sh->job_key = bpf_htonl(mi);
		((struct udphdr *)sh - 1)->check = 0;	/* checked at ingress; job_key changed */
		act = spin_xsk_redirect(xdp, cfg, 0);
		if (act == SPIN_XSK_RING) {	/* its process's ring has it */
			if (st)
				st->to_xsk++;
			return XDP_DROP;
		}
		if (act < 0)
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_XSK_FULL);
		if (act != XDP_REDIRECT)
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_NO_XSK);
		st->to_xsk++;
		return act;
	}

	/* the get completes here: counters, event, use-once unlink */
	ct = bpf_map_lookup_elem(&spin_me_ct, &c->me);
	if (ct) {
		ct->success++;
		ct->bytes += c->mlength;
	}
	st->msgs_completed++;
	if (!(me->options & (SPIN_ME_EVENT_COMM_DISABLE | SPIN_ME_EVENT_SUCCESS_DISABLE)))
		spin_post(xdp, st, SPIN_EV_GET, SPIN_FAIL_OK, c, me, NULL);
	if ((me->options & SPIN_ME_USE_ONCE) &&
	    __sync_val_compare_and_swap(&me->state, SPIN_ME_CLAIMED, SPIN_ME_FREE) == SPIN_ME_CLAIMED)
		spin_post(xdp, st, SPIN_EV_AUTO_UNLINK, 0, c, me, NULL);
	if (sh->flags & bpf_htons(SPIN_F_REL)) {
		/* a retransmission is answered from the window (spin_get_again) */
		struct spin_dedup *d = bpf_map_lookup_elem(&spin_dedup, &rank);
		__u32 k = msg_id & (SPIN_DEDUP_SLOTS - 1);

		if (d && d->id[k] == msg_id) {
			d->aux[k] = (__u32)c->start;
			d->ref[k] = SPIN_DD_REF(c->me, me->seq);
		}
		spin_dd_note(rank, msg_id, SPIN_DD_DONE, SPIN_FAIL_OK, me->list, c->mlength);
	}

reply:
	/* the reply: mlength bytes of the window at host_off + remote_off */
	r = &c->put[0];
	r->kind = SPIN_PUT_REPLY;
	r->len = c->mlength;
	r->src = SPIN_SRC_HOST;
	r->target_rank = rank;
	r->src_off = spin_win_addr(SPIN_PT_SLOT(me->pt), c->start);	/* its slot's window */
	r->match_bits = q.bits;
	r->remote_off = q.roff;
	r->hdr_data = hdr_data;
	r->user_ptr = me->user_ptr;
	r->ack_req = 0;
	r->ct = 0;
	r->ack_msg_id = msg_id;
	r->ack_fail = SPIN_FAIL_OK;
	r->ack_mlength = msg_len;
	r->ack_list = me->list;
	r->pad = 0;
	if (c->mlength <= SPIN_MAX_SEG) {
		/* make room for the payload first (spin_frame_fit); a frame
		 * with room at neither end takes the host path below instead
		 * of failing */
		if (!spin_frame_fit(xdp, c, c->mlength))
			return spin_do_put(xdp, c, cfg, st, r);
	}
	spin_post(xdp, st, SPIN_EV_GET_FROM_HOST, SPIN_FAIL_OK, c, me, r);
	st->tx_host_queued++;
	return XDP_DROP;
}

/*
 * A reply to a get this node sent: the library that sent the get owns the
 * destination memory, so the packet goes to the AF_XDP socket of the
 * receiving queue, or, without one, to the kernel (a UDP socket).
 */
/*
 * A REPLY to a handler's get (PtlHandlerGetToHost, spin_hgets): deposit its
 * bytes into the asking entry's host memory (if that entry is still the
 * one that asked), once per reply packet; the packet that completes the
 * reply deletes the record and counts it on the entry (ct
 * PTL_LOCAL_ME_CT).  A negative reply, one longer than asked or a gone
 * entry ends the get without counting.  -1: not a reply to a handler get.
 */
static __noinline int spin_rx_hget(struct xdp_md *xdp, struct spin_stats *st)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	struct udphdr *udp = data + sizeof(struct ethhdr) + sizeof(struct iphdr);
	struct spin_hdr *sh = (void *)(udp + 1);
	struct spin_hget_key k;
	struct spin_hget *g;
	struct spin_ctx *c;
	struct spin_me *me;
	__u32 ulen, pay, msg_len, pkt_off, seg, idx;
	__u64 bit;

	if ((void *)(sh + 1) > end)
		return -1;
	k.rank = bpf_ntohl(sh->src_rank);
	k.msg_id = bpf_ntohl(sh->msg_id);
	g = bpf_map_lookup_elem(&spin_hgets, &k);
	if (!g)
		return -1;
	ulen = bpf_ntohs(udp->len);
	SPIN_U16(ulen);
	msg_len = bpf_ntohl(sh->msg_len);
	pkt_off = bpf_ntohl(sh->pkt_off);
	seg = bpf_ntohs(sh->seg_size);
	me = bpf_map_lookup_elem(&spin_me, &g->me);
	c = spin_ctx_get();
	if (ulen < 8 + sizeof(*sh) || (void *)udp + ulen > end || !seg || !c)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	pay = ulen - 8 - sizeof(*sh);
	if (st)
		st->replies_received++;
	if (sh->user_hdr[1] || msg_len > g->len || pkt_off > msg_len || pay > msg_len - pkt_off ||
	    pkt_off / seg >= 64 || !me || me->seq != g->me_seq) {
		/* refused, or not for this entry any more: the get ends */
		bpf_map_delete_elem(&spin_hgets, &k);
		return spin_drop(st, SPIN_DROP_HGET_FAILED);
	}
	idx = pkt_off / seg;
	bit = 1ull << (idx & 63);
	if (__sync_fetch_and_or(&g->seen, bit) & bit)
		return XDP_DROP;	/* a duplicate */
	/* the record is the runtime's (no handler program holds spin_hgets):
	 * its finish stage wrote it, stamped with the stage's slot, for an
	 * address in that slot's window; re-checked, and the entry still
	 * that slot's */
	if (pay && (SPIN_WIN_SLOT(g->host_off) != g->slot || SPIN_PT_SLOT(me->pt) != g->slot ||
		    spin_frame_to_host(xdp, SPIN_PAY_OFF, spin_win_add(g->host_off, pkt_off), pay,
				       c->bounce))) {
		bpf_map_delete_elem(&spin_hgets, &k);
		return spin_drop(st, SPIN_DROP_HOST_OOB);
	}
	if (st)
		st->deposited_bytes += pay;
	if (__sync_fetch_and_add(&g->bytes, pay) + pay == msg_len) {
		if (g->ct == SPIN_CT_LOCAL_ME) {
			struct spin_me_ct *ct = bpf_map_lookup_elem(&spin_me_ct, &g->me);

			if (ct)
				ct->gets++;
		}
		bpf_map_delete_elem(&spin_hgets, &k);
		if (st)
			st->hgets_done++;
	}
	return XDP_DROP;
}

static __always_inline int spin_rx_reply(struct xdp_md *xdp, struct spin_stats *st)
{
	long act = spin_xsk_redirect(xdp, spin_cfg_get(), XDP_PASS);

	if (act == SPIN_XSK_RING) {	/* its process's ring has it */
		if (st)
			st->to_xsk++;
		return XDP_DROP;
	}
	if (act < 0)	/* the requester asks again */
		return spin_drop(st, SPIN_DROP_XSK_FULL);
	if (st) {
		st->replies_received++;
		if (act == XDP_REDIRECT)
			st->to_xsk++;
	}
	return act;
}

/*
 * An atomic (SPIN_OP_ATOMIC) or fetch-atomic/swap (SPIN_OP_FETCH), wire.h:
 * one packet, validated like a put (duplicates too), matched (ATOMIC: the
 * entries that take puts; FETCH: entries with SPIN_ME_OP_PUT and
 * SPIN_ME_OP_GET; use-once entries claimed), then always handed to the
 * owning process's AF_XDP socket with job_key = the matched entry: the
 * library applies the operation and answers.  No socket: nacked with
 * SPIN_FAIL_NO_TARGET.
 */
static __always_inline int spin_rx_amo(struct xdp_md *xdp, __u32 op, struct spin_stats *st,
				       struct spin_cfg *cfg)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(ip + 1);
	struct spin_hdr *sh = (void *)(udp + 1);
	struct spin_match_q q;
	struct spin_ctx *c;
	struct spin_dedup *dd = NULL;
	struct spin_pt *pt;
	__u32 ulen, pay_len, msg_len, msg_id, pti, rank;
	long act;
	int mi, reason;

	if (!st || !cfg || (void *)(sh + 1) > end)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	ulen = bpf_ntohs(udp->len);
	SPIN_U16(ulen);
	if (ulen < 8 + sizeof(*sh) || (void *)udp + ulen > end ||
	    bpf_ntohs(ip->tot_len) != ulen + 20)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	pay_len = ulen - 8 - sizeof(*sh);
	st->rx_bytes += pay_len;
	msg_len = bpf_ntohl(sh->msg_len);
	msg_id = bpf_ntohl(sh->msg_id);
	if (!msg_id || !msg_len || msg_len > SPIN_MAX_SEG)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	if (sh->pkt_off || pay_len != msg_len)
		return spin_drop(st, SPIN_DROP_BAD_OFFSET);
	pti = bpf_ntohs(sh->pt_index);
	rank = bpf_ntohl(sh->src_rank);
	pt = spin_check_target(st, pti, rank, &reason, &dd);
	if (!pt)
		return spin_reject(xdp, st, cfg, NULL, reason);

	c = spin_ctx_get();
	if (!c)
		return XDP_ABORTED;
	spin_begin(c, &q, sh, pti, rank, msg_id, msg_len, 0, pay_len);
	c->phases = SPIN_PH_XSK;
	c->multi = 0;
	c->done = 1;
	q.admit = 0;	/* posts no event: its process answers */
	if (spin_dedup_seen(cfg, dd, msg_id, sh->flags))
		return SPIN_RX_DUP;	/* spin_rx answers it (stack depth) */
	if (op == SPIN_OP_FETCH)
		mi = spin_match(pt, &q, c, SPIN_OP_FETCH);
	else
		mi = spin_match(pt, &q, c, SPIN_OP_PUT);
	if (mi < 0)
		return spin_reject(xdp, st, cfg, pt, SPIN_DROP_NO_MATCH);
	c->me = mi;
	st->msgs++;
	data = spin_xdp_data(xdp);
	sh = data + SPIN_HDR_OFF;
	if ((void *)(sh + 1) > spin_xdp_end(xdp))
		return spin_drop(st, SPIN_DROP_MALFORMED);
	sh->job_key = bpf_htonl(mi);
	((struct udphdr *)sh - 1)->check = 0;	/* checked at ingress; job_key changed */
	spin_dd_note(rank, msg_id, SPIN_DD_XSK, 0, 0, mi);
	act = spin_xsk_redirect(xdp, cfg, 0);
	if (act == SPIN_XSK_RING) {	/* its process's ring has it */
		if (st)
			st->to_xsk++;
		return XDP_DROP;
	}
	if (act < 0)	/* the entry stays claimed for its retransmission */
		return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_XSK_FULL);
	if (act != XDP_REDIRECT) {
		/* nobody applies it: a use-once entry this claimed stays
		 * usable for the next operation */
		struct spin_me *me = bpf_map_lookup_elem(&spin_me, &c->me);

		if (me && (me->options & SPIN_ME_USE_ONCE))
			__sync_val_compare_and_swap(&me->state, SPIN_ME_CLAIMED, SPIN_ME_ACTIVE);
		return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_NO_XSK);
	}
	st->to_xsk++;
	return act;
}

/* Operations other than PUT and ACK (kept out of spin_rx: the put path
 * stays as short as it was). */
static __noinline int spin_rx_other(struct xdp_md *xdp, __u32 op, struct spin_stats *st,
				    struct spin_cfg *cfg)
{
	if (op == SPIN_OP_GET)
		return spin_rx_get(xdp, st, cfg);
	if (op == SPIN_OP_ATOMIC || op == SPIN_OP_FETCH)
		return spin_rx_amo(xdp, op, st, cfg);
	if (op == SPIN_OP_REPLY)
		return spin_rx_reply(xdp, st);
	if (op == SPIN_OP_SACK) {
		/* for the library that sent the message: its AF_XDP socket */
		if (st)
			st->sacks_received++;
		return spin_rx_reply(xdp, NULL);
	}
	return spin_drop(st, SPIN_DROP_BAD_OP);
}

SEC("xdp")
int spin_rx(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data, *end = (void *)(long)xdp->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	struct spin_hdr *sh;
	struct spin_stats *st;
	struct spin_cfg *cfg;
	struct spin_ctx *c;
	struct spin_dedup *dd = NULL;
	struct spin_pt *pt;
	struct spin_me *me;
	struct spin_msg *m = NULL;
	struct spin_match_q q;
	__u32 ulen, pay_len, msg_len, pkt_off, msg_id, pti, rank, seg, idx, npkts, zero = 0;
	__u64 bit, old, *w;
	int mi, reason;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	/* IPv4 options and fragments are left to the kernel */
	if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return XDP_PASS;
	cfg = spin_cfg_get();
	st = spin_stats_get();
	if (!cfg || !st)
		return XDP_PASS;
	if (udp->dest != cfg->port) {
		st->passed++;
		return XDP_PASS;
	}

	st->rx_packets++;
	if (cfg->flags & SPIN_CFG_F_WAKE_DEFER)
		spin_waker_arm();
	sh = (void *)(udp + 1);
	if ((void *)(sh + 1) > end)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	if (sh->version != SPIN_VERSION)
		return spin_drop(st, SPIN_DROP_BAD_VERSION);
	/* a frame damaged on the way (a reliable sender sends it again) */
	if (udp->check && spin_udp_sum(xdp) != 0xffff)
		return spin_drop(st, SPIN_DROP_BAD_CSUM);
	if (!(cfg->flags & SPIN_CFG_F_OPEN)) {
		/* only configured peers, from their own address: a packet
		 * cannot claim another rank (nor its acks, replies, entries).
		 * A peer on this link also sends from the MAC the runtime
		 * sends to (its own, or its router's for a routed peer). */
		__u32 r = bpf_ntohl(sh->src_rank);
		struct spin_peer *peer = bpf_map_lookup_elem(&spin_peers, &r);

		if (!peer || !peer->valid || peer->ip != ip->saddr)
			return spin_drop(st, SPIN_DROP_BAD_PEER);
		if (!peer->ifindex &&
		    (*(__u32 *)eth->h_source != *(__u32 *)peer->mac ||
		     *(__u16 *)(eth->h_source + 4) != *(__u16 *)(peer->mac + 4)))
			return spin_drop(st, SPIN_DROP_BAD_PEER);
	}
	/* a keyed runtime: only packets of its job */
	if (cfg->job_key && sh->job_key != bpf_htonl(cfg->job_key))
		return spin_drop(st, SPIN_DROP_BAD_KEY);
	/* an authenticated runtime: only packets signed with the job's key
	 * (wire.h, "Authenticator"), before anything reads the header */
	{
		struct spin_auth *au = spin_auth_get();

		if (au && au->on && sh->auth_tag != spin_auth_tag(au, sh))
			return spin_drop(st, SPIN_DROP_BAD_AUTH);
	}
	if (sh->op == SPIN_OP_ACK)
		return spin_rx_ack(xdp, sh, st);
	if (sh->op == SPIN_OP_REPLY) {
		/* a reply to a handler's get is the runtime's (here: one call
		 * level less than spin_rx_other) */
		int act = spin_rx_hget(xdp, st);

		if (act >= 0)
			return act;
		sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
		if ((void *)(sh + 1) > spin_xdp_end(xdp))
			return spin_drop(st, SPIN_DROP_MALFORMED);
	}
	if (sh->op != SPIN_OP_PUT) {
		int act = spin_rx_other(xdp, sh->op, st, cfg);

		if (act != SPIN_RX_DUP)
			return act;
		/* a duplicate get or atomic, answered from this frame (one
		 * call level up: the answer's tag and checksum need stack) */
		sh = spin_xdp_data(xdp) + SPIN_HDR_OFF;
		if ((void *)(sh + 1) > spin_xdp_end(xdp))
			return spin_drop(st, SPIN_DROP_MALFORMED);
		return spin_dup(xdp, bpf_ntohl(sh->src_rank), bpf_ntohl(sh->msg_id), 1);
	}
	ulen = bpf_ntohs(udp->len);
	SPIN_U16(ulen);
	if (ulen < 8 + sizeof(*sh) || (void *)udp + ulen > end ||
	    bpf_ntohs(ip->tot_len) != ulen + 20)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	pay_len = ulen - 8 - sizeof(*sh);
	st->rx_bytes += pay_len;
	msg_len = bpf_ntohl(sh->msg_len);
	pkt_off = bpf_ntohl(sh->pkt_off);
	msg_id = bpf_ntohl(sh->msg_id);
	if (!msg_id || msg_len > SPIN_MAX_MSG)
		return spin_drop(st, SPIN_DROP_MALFORMED);
	if (!pay_len && msg_len)
		return spin_drop(st, SPIN_DROP_ZERO_LEN);
	if (pkt_off > msg_len || pay_len > msg_len - pkt_off)
		return spin_drop(st, SPIN_DROP_BAD_OFFSET);
	pti = bpf_ntohs(sh->pt_index);
	rank = bpf_ntohl(sh->src_rank);
	pt = spin_check_target(st, pti, rank, &reason, &dd);
	if (!pt)
		return spin_reject(xdp, st, cfg, NULL, reason);

	c = spin_ctx_get();
	if (!c)
		return XDP_ABORTED;
	spin_begin(c, &q, sh, pti, rank, msg_id, msg_len, pkt_off, pay_len);
	c->phases = SPIN_PH_HEADER | SPIN_PH_PAYLOAD;
	c->done = 0;

	if (pkt_off == 0 && pay_len == msg_len) {
		/* the whole message in one packet: no message state */
		if (spin_dedup_seen(cfg, dd, msg_id, sh->flags))
			return spin_dup(xdp, rank, msg_id, 1);
		mi = spin_match(pt, &q, c, SPIN_OP_PUT);
		if (mi < 0)
			return spin_reject(xdp, st, cfg, pt,
					   q.refused ? q.refused - 1 : SPIN_DROP_NO_MATCH);
		c->me = mi;
		c->multi = 0;
		me = bpf_map_lookup_elem(&spin_me, &c->me);
		if (!me)
			return spin_drop(st, SPIN_DROP_NO_MATCH);
		st->msgs++;
		return spin_dispatch_single(xdp, c, me, st, dd, msg_id, sh->flags);
	}

	/* multi-packet message: 0 < msg_len <= SPIN_MAX_MSG, pkt_off + pay_len
	 * <= msg_len (checked above, without overflow), so idx < npkts */
	seg = bpf_ntohs(sh->seg_size);
	if (!seg || pay_len > seg || pkt_off % seg ||
	    (pay_len != seg && pkt_off + pay_len != msg_len))
		return spin_drop(st, SPIN_DROP_BAD_SEG);
	npkts = (msg_len + seg - 1) / seg;
	if (npkts > SPIN_MSG_MAX_PKTS)
		return spin_drop(st, SPIN_DROP_BAD_SEG);
	idx = pkt_off / seg;
	bit = 1ull << (idx & 63);
	c->multi = 1;

	m = bpf_map_lookup_elem(&spin_msgs, &c->key);
	if (!m) {
		struct spin_msg *t = bpf_map_lookup_elem(&spin_tmpl, &zero);
		struct spin_src *src = bpf_map_lookup_elem(&spin_src, &rank);
		long err;

		if (!t)
			return XDP_ABORTED;
		if (!src)
			return spin_drop(st, SPIN_DROP_BAD_SOURCE);
		/* a slot of the source's share, taken before the insert */
		if (spin_src_take(src) >= spin_src_quota()) {
			spin_src_give(src);
			m = bpf_map_lookup_elem(&spin_msgs, &c->key);
			if (m)
				goto existing;	/* another CPU admitted it meanwhile */
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_SRC_QUOTA);
		}
		t->status = SPIN_MSG_NEW;
		t->flags = 0;
		t->me = 0;
		t->msg_len = msg_len;
		t->mlength = 0;
		t->bytes_seen = 0;
		t->dropped = 0;
		t->start = 0;
		t->me_seq = 0;
		t->deadline = ~0ull;	/* set below, once the insert won */
		t->seg = seg;
		t->nchunks = (npkts - 1) / SPIN_CHUNK_PKTS;
		t->gen = bpf_ktime_get_ns();
		err = bpf_map_update_elem(&spin_msgs, &c->key, t, BPF_NOEXIST);
		if (err)	/* no entry of ours: the slot goes back */
			spin_src_give(src);
		m = bpf_map_lookup_elem(&spin_msgs, &c->key);
		if (!m)
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_MSG_TABLE_FULL);
		if (err)
			goto existing;	/* another CPU created it first */

		/* first packet of the message on this node */
		spin_gc_arm();
		if (spin_dedup_seen(cfg, dd, msg_id, sh->flags)) {
			/* the message completed and its state expired: keep a
			 * tombstone for the rest of its packets */
			m->deadline = bpf_ktime_get_ns() + SPIN_TOMBSTONE_NS;
			m->nchunks = 0;		/* (a tombstone has no bitmap) */
			__sync_lock_test_and_set(&m->status, SPIN_MSG_DONE);
			return spin_dup(xdp, rank, msg_id, 0);
		}
		/* packets 4096 and on: their bitmap chunks, now or never */
		if (m->nchunks && (reason = spin_chunks_new(&c->key, m, src))) {
			spin_msg_free(&c->key);
			return spin_reject(xdp, st, cfg, NULL, reason);
		}
		m->deadline = bpf_ktime_get_ns() + spin_msg_life(cfg, sh->flags);
		w = spin_msg_word(m, &c->key, idx);
		if (!w) {
			spin_msg_free(&c->key);
			return spin_drop(st, SPIN_DROP_MSG_TIMEOUT);
		}
		__sync_fetch_and_or(w, bit);
		mi = spin_match(pt, &q, c, SPIN_OP_PUT);
		if (mi < 0 && q.refused) {
			/* refused (admission); a reliable sender tries it again
			 * later, as a new message */
			if (sh->flags & bpf_htons(SPIN_F_REL)) {
				spin_msg_free(&c->key);
				return spin_reject(xdp, st, cfg, pt, q.refused - 1);
			}
			/* else the rest of its packets are dropped too */
			m->flags |= SPIN_MSGF_NOMATCH;
			__sync_lock_test_and_set(&m->status, SPIN_MSG_DROP);
			return spin_reject(xdp, st, cfg, pt, q.refused - 1);
		}
		if (mi < 0) {
			m->flags |= SPIN_MSGF_NOMATCH;
			__sync_lock_test_and_set(&m->status, SPIN_MSG_DROP);
			return spin_reject(xdp, st, cfg, pt, SPIN_DROP_NO_MATCH);
		}
		c->me = mi;
		m->me = mi;
		m->mlength = c->mlength;
		m->start = c->start;
		me = bpf_map_lookup_elem(&spin_me, &c->me);
		if (!me)
			return spin_drop(st, SPIN_DROP_NO_MATCH);
		m->me_seq = me->seq;
		/* in flight into the entry until spin_msg_free (PtlMEUnlink:
		 * PTL_IN_USE); counted before the flag that says so */
		__sync_fetch_and_add(&me->busy, 1);
		m->flags |= SPIN_MSGF_MATCHED | SPIN_MSGF_SLOT(SPIN_PT_SLOT(me->pt));
		st->msgs++;
		if (!me->handler) {
			m->flags |= SPIN_MSGF_PROCEED;
			__sync_lock_test_and_set(&m->status, SPIN_MSG_RUNNING);
			c->phases = SPIN_PH_DEPOSIT;
		}
		return spin_dispatch(xdp, c, me, st, 1);
	}

existing:
	if (*(volatile __u32 *)&m->status == SPIN_MSG_NEW) {
		struct spin_wait w = { .key = c->key, .status = SPIN_MSG_NEW };

		bpf_loop(SPIN_HDR_WAIT_LOOPS, spin_wait_cb, &w, 0);
		if (w.status == SPIN_MSG_NEW)
			return spin_drop(st, SPIN_DROP_HDR_WAIT);
		m = bpf_map_lookup_elem(&spin_msgs, &c->key);
		if (!m)
			return spin_drop(st, SPIN_DROP_MSG_TIMEOUT);
	}
	/* every packet of a message agrees with its first on the length and
	 * the cut (which bounds idx by the message's bitmap) */
	if (msg_len != m->msg_len || seg != m->seg)
		return spin_drop(st, SPIN_DROP_BAD_SEG);
	if (m->status == SPIN_MSG_DONE)
		return spin_dup(xdp, rank, msg_id, 0);
	w = spin_msg_word(m, &c->key, idx);
	if (!w)		/* its state is going: a late packet */
		return spin_drop(st, SPIN_DROP_MSG_TIMEOUT);
	old = __sync_fetch_and_or(w, bit);
	c->me = m->me;
	c->mlength = m->mlength;
	c->start = m->start;
	me = bpf_map_lookup_elem(&spin_me, &c->me);
	if (!me)
		return spin_drop(st, SPIN_DROP_NO_MATCH);
	if (sh->flags & bpf_htons(SPIN_F_REL)) {
		/* a reliable message lives while its packets come (sent
		 * again too: an AF_XDP message's process may still miss them) */
		m->deadline = bpf_ktime_get_ns() + spin_msg_life(cfg, sh->flags);
		if (!(old & bit))
			;
		else if ((me->options & SPIN_ME_XSK) && m->status != SPIN_MSG_DROP &&
			 spin_me_same(me, m))
			/* its process keeps the packets it has: it sorts
			 * out duplicates (the first copy may have been
			 * lost at a full ring) */
			return spin_to_xsk(xdp, st, c->me);
		else if ((sh->flags & bpf_htons(SPIN_F_SACK_REQ)) && m->status != SPIN_MSG_DROP)
			return spin_sack(xdp, c, cfg, st, m);
	}
	if (old & bit)
		return spin_drop(st, SPIN_DROP_DUPLICATE);
	if (m->status != SPIN_MSG_DROP && !spin_me_same(me, m)) {
		/* the entry the first packet matched was unlinked (and maybe
		 * another appended in its slot): the rest of the message goes
		 * nowhere, and no event names that slot */
		__sync_fetch_and_or(&m->flags, SPIN_MSGF_ME_GONE);
		__sync_lock_test_and_set(&m->status, SPIN_MSG_DROP);
	}
	if (m->status == SPIN_MSG_DROP) {
		/* account the bytes so the message still ends; no handlers */
		c->msg_dropped = 1;
		c->phases = 0;
		spin_account(c, m);
		if (c->done)
			spin_msg_free(&c->key);
		if (m->flags & SPIN_MSGF_NOMATCH)	/* nack if this is packet 0 */
			return spin_reject(xdp, st, cfg, NULL, SPIN_DROP_NO_MATCH);
		if ((c->done || (sh->flags & bpf_htons(SPIN_F_SACK_REQ))) &&
		    (sh->flags & bpf_htons(SPIN_F_REL))) {
			/* a reliable sender learns that it failed */
			spin_dd_note(rank, msg_id, SPIN_DD_DONE, SPIN_FAIL_DROPPED, 0, 0);
			spin_drop_count(st, (m->flags & SPIN_MSGF_ME_GONE) ? SPIN_DROP_ME_GONE :
					SPIN_DROP_MSG_DROPPED);
			return spin_answer(xdp, c, cfg, st, SPIN_PUT_ACK, 0, rank, msg_id,
					   SPIN_FAIL_DROPPED, 0, 0);
		}
		return spin_drop(st, (m->flags & SPIN_MSGF_ME_GONE) ? SPIN_DROP_ME_GONE :
				 SPIN_DROP_MSG_DROPPED);
	}
	c->phases = (m->flags & SPIN_MSGF_PROCEED) ? SPIN_PH_DEPOSIT : SPIN_PH_PAYLOAD;
	return spin_dispatch(xdp, c, me, st, 1);
}

/* ------------------------------------------------------------ fan-out -- */

#ifndef TC_ACT_OK
#define TC_ACT_OK		0
#define TC_ACT_SHOT		2
#endif

/* The headers of a frame as spin_do_put built them. */
struct spin_l2l4 {
	struct ethhdr	eth;
	struct iphdr	ip;
	struct udphdr	udp;
	struct spin_hdr	sh;
} __attribute__((packed));

/* A fan-out copy's own tag (wire.h, "Authenticator"), over the header just
 * stored: read in place, written with bpf_skb_store_bytes (the head may be
 * shared with the copy in flight).  0 without a key. */
static __always_inline int spin_tc_sign(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;
	struct spin_auth *au = spin_auth_get();
	__u64 tag;

	if (!au || !au->on)
		return 0;
	if ((void *)(sh + 1) > end)
		return -1;
	tag = spin_auth_tag(au, sh);
	return bpf_skb_store_bytes(skb, SPIN_HDR_OFF + SPIN_AUTH_LEN, &tag, sizeof(tag), 0) ? -1 : 0;
}

#define SPIN_TC_SAME	0x1	/* pass: the puts of put 0's bytes (frame unchanged) */
#define SPIN_TC_HAVE0	0x2	/* the frame holds put 0 */
#define SPIN_TC_SLOT_SHIFT 8	/* pass >> 8 & 7: the slot of the process whose
				 * handler made the puts (spin_fanout_meta.slot) */
#define SPIN_TC_CPU_SHIFT 16	/* pass >> 16: the CPU whose ring holds them */

/*
 * Queued put t of CPU cpu's ring of the slot's queue (wire.h, struct
 * spin_putq_ent; cpu and slot in pass), message id sequence id: build it
 * in the frame and send a clone of the frame.  Only an entry that carries
 * its ticket and the frame's seal (from its slot's finish stage) is
 * sent, and it is taken (its ticket cleared) when it is dealt with: a
 * frame whose metadata a handler of another slot wrote finds none.  The
 * puts of put 0's own bytes go in a first pass (SPIN_TC_SAME: headers
 * only, while the frame still holds them), the others in a second (new
 * length and payload).  A BPF global function: checked once, whatever
 * the loop around it.  Returns 0 (sent or for the host), 1 (not this
 * pass), -1 (put_failed), -2 (counted otherwise).
 */
static __always_inline int spin_tc_put1(struct __sk_buff *skb, __u64 t, __u32 pass, __u32 id,
					__u64 seal)
{
	__u32 k = (__u32)t & (SPIN_PUTQ_SIZE - 1), len, rank, same, ifindex, hget, pti;
	__u32 slot = (pass >> SPIN_TC_SLOT_SHIFT) & (SPIN_MAX_PROCS - 1);
	__u32 cpu = pass >> SPIN_TC_CPU_SHIFT;
	struct spin_stats *st = spin_stats_get();
	struct spin_cfg *cfg = spin_cfg_get();
	struct spin_putq_ent *e;
	struct spin_peer *peer;
	struct spin_l2l4 h;
	__be16 tot_len;

	__u32 qk = slot;	/* (a key of its own: slot keeps its bounds) */
	void *q;

	if (!skb || !cfg)
		return -1;
	q = bpf_map_lookup_elem(&spin_putqs, &qk);
	e = q ? bpf_map_lookup_percpu_elem(q, &k, cpu) : NULL;
	if (!e || (__u32)e->ticket != (__u32)t || e->ticket >> 48 != cpu || !seal || e->seal != seal)
		/* overwritten (SPIN_PUTQ_SIZE later puts came first),
		 * refused by the finish stage, taken already, or not this
		 * frame's: counted once, in the second pass */
		return (pass & SPIN_TC_SAME) ? 1 : -1;
	same = e->r.src == SPIN_SRC_PACKET;
	/* this frame's: taken (its seal cleared: no seal is 0; a ticket of
	 * 0 is CPU 0's first) by the second pass, which comes to every
	 * entry, whatever comes of it (the first pass's too) */
	if (!(pass & SPIN_TC_SAME))
		e->seal = 0;
	if (same != !!(pass & SPIN_TC_SAME))
		return 1;
	if (same && !(pass & SPIN_TC_HAVE0))
		return -1;	/* put 0's bytes, but put 0 was not built */
	if (bpf_skb_load_bytes(skb, 0, &h, sizeof(h)))
		return -1;
	hget = e->r.kind == SPIN_PUT_HGET;
	len = hget ? 0 : e->r.len;	/* a GET has no payload */
	/* the portal of the frame (its low byte: put 0 may have put its own
	 * target's slot in the high byte) in the puts' own process's slot */
	pti = SPIN_PT_OF(slot, bpf_ntohs(h.sh.pt_index) & ((1u << SPIN_PT_SLOT_SHIFT) - 1));
	if (!hget && e->r.src == SPIN_SRC_HOST)
		return 0;	/* posted by the finish stage (spin_fanout) */
	if (len > SPIN_MAX_SEG)
		return -1;
	rank = e->r.target_rank;
	peer = bpf_map_lookup_elem(&spin_peers, &rank);
	if (!peer || !peer->valid) {
		spin_drop_count(st, SPIN_DROP_NO_PEER);
		return -2;
	}
	if (!same) {
		if (bpf_skb_change_tail(skb, SPIN_PAY_OFF + len, 0))
			return -1;
		if (SPIN_LEN_NZ(len)) {
			SPIN_LEN_CLAMP(len, SPIN_MAX_SEG);
			if (bpf_skb_store_bytes(skb, SPIN_PAY_OFF, e->data, len, 0))
				return -1;
		}
	}
	tot_len = bpf_htons(20 + 8 + sizeof(h.sh) + len);
	__builtin_memcpy(h.eth.h_dest, peer->mac, 6);
	__builtin_memcpy(h.eth.h_source, peer->src_mac, 6);
	h.eth.h_proto = bpf_htons(ETH_P_IP);
	{
		/* spin_ip_csum's sum, on the stack copy's fields */
		__u32 sum, sa = peer->src_ip, da = peer->ip;
		__u16 w0;

		__builtin_memcpy(&w0, &h.ip, 2);
		sum = w0 + tot_len + h.ip.id + h.ip.frag_off + bpf_htons((64 << 8) | IPPROTO_UDP) +
		      (sa & 0xffff) + (sa >> 16) + (da & 0xffff) + (da >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		h.ip.check = ~sum;
	}
	h.ip.saddr = peer->src_ip;
	h.ip.daddr = peer->ip;
	h.ip.tot_len = tot_len;
	h.ip.ttl = 64;
	h.ip.protocol = IPPROTO_UDP;
	h.udp.source = cfg->port;
	h.udp.dest = peer->port;
	h.udp.len = bpf_htons(8 + sizeof(h.sh) + len);
	h.udp.check = 0;
	h.sh.version = SPIN_VERSION;
	h.sh.op = hget ? SPIN_OP_GET : SPIN_OP_PUT;
	h.sh.flags = bpf_htons(e->r.kind == SPIN_PUT_HOST ? SPIN_F_FROM_HOST : SPIN_F_FROM_DEVICE);
	h.sh.seg_size = bpf_htons(len ? len : SPIN_MAX_SEG);
	/* from the process whose handler made the put, to its target's
	 * process (as spin_do_put for put 0: docs/design.md, "Many Portals
	 * processes per interface") */
	h.sh.src_rank = bpf_htonl(cfg->proc_rank[slot]);
	h.sh.src_pid = bpf_htonl(cfg->proc_pid[slot]);
	h.sh.pt_index = bpf_htons(SPIN_PT_OF((__u32)peer->slot & (SPIN_MAX_PROCS - 1),
					     pti & ((1u << SPIN_PT_SLOT_SHIFT) - 1)));
	h.sh.job_key = bpf_htonl(cfg->job_key);
	h.sh.msg_id = bpf_htonl(((cpu + 1) << 24) | (id & 0xffffff));
	h.sh.match_bits = bpf_cpu_to_be64(e->r.match_bits);
	h.sh.msg_len = bpf_htonl(hget ? e->r.len : len);
	h.sh.pkt_off = 0;
	h.sh.remote_off = bpf_cpu_to_be64(e->r.remote_off);
	h.sh.hdr_data = bpf_cpu_to_be64(e->r.hdr_data);
	h.sh.user_hdr[0] = bpf_cpu_to_be64(e->user_hdr[0]);
	h.sh.user_hdr[1] = bpf_cpu_to_be64(e->user_hdr[1]);
	h.sh.user_hdr[2] = bpf_cpu_to_be64(e->user_hdr[2]);
	h.sh.user_hdr[3] = bpf_cpu_to_be64(e->user_hdr[3]);
	h.sh.auth_tag = 0;
	if (bpf_skb_store_bytes(skb, 0, &h, sizeof(h), 0) || spin_tc_sign(skb))
		return -1;
	/* (a GET's record is in spin_hgets: the finish stage wrote it) */
	ifindex = peer->ifindex ? peer->ifindex : skb->ifindex;
	if (bpf_clone_redirect(skb, ifindex, 0))
		return -1;
	if (st) {
		st->tx_device += e->r.kind == SPIN_PUT_DEVICE;
		st->tx_host_inline += e->r.kind == SPIN_PUT_HOST;
		st->hgets_sent += hget;
		st->fanout_copies++;
	}
	if (!hget && e->r.ct == SPIN_CT_LOCAL_ME)
		spin_me_ct_put(&e->me);
	return 0;
}

__noinline int spin_tc_put(struct __sk_buff *skb, __u64 t, __u32 pass, __u32 id, __u64 seal)
{
	int rc = spin_tc_put1(skb, t, pass, id, seal);

	if (rc == -1)
		spin_drop_count(spin_stats_get(), SPIN_DROP_PUT_FAILED);
	return rc;
}

#ifdef SPIN_NO_KFUNCS
/* spin_tc's loop as a bpf_loop callback: 6.1's verifier walked the plain
 * loop's 126 iterations, each branch on n apart, past its 10^6
 * instructions */
struct spin_tc_q {
	struct __sk_buff *skb;
	__u64 t0, seal;
	__u32 n, pass, id0;
};

static int spin_tc_cb(__u32 i, struct spin_tc_q *q)
{
	__u32 k = i < q->n ? i : i - q->n;

	spin_tc_put(q->skb, q->t0 + k, (i < q->n ? SPIN_TC_SAME : 0) | q->pass, q->id0 + k,
		    q->seal);
	return 0;
}
#endif

/*
 * spin_tc, at TC ingress (tcx) of the runtime's interface: the second half
 * of a fan-out (spin_fanout in rt_common.bpf.h).  A frame that the runtime
 * passed with fan-out metadata holds put 0, built: it is sent to put 0's
 * egress with bpf_clone_redirect; then every queued put of the invocation
 * (in the queue of the metadata's slot, sealed with the metadata's seal)
 * is built in the frame in turn and a clone sent (bpf_skb_store_bytes and
 * bpf_skb_change_tail unshare the head from the clones in flight), and the
 * frame itself is dropped.  Every other frame goes on to the stack
 * untouched.
 */
SEC("tc")
int spin_tc(struct __sk_buff *skb)
{
	void *meta = (void *)(long)skb->data_meta, *data = (void *)(long)skb->data;
	const struct spin_fanout_meta *pm = meta;
	struct spin_stats *st;
	struct spin_cfg *cfg;
	__u32 n, id0, ifindex0, pass, failed = 0;
	__u64 t0, seal;

	if ((void *)(pm + 1) > data || pm->magic != SPIN_FANOUT_MAGIC)
		return TC_ACT_OK;
	cfg = spin_cfg_get();
	if (!cfg || pm->my_rank != cfg->my_rank)
		return TC_ACT_OK;
	st = spin_stats_get();
	n = pm->n;
	t0 = pm->t0;
	id0 = pm->id0;
	seal = pm->seal;
	ifindex0 = pm->ifindex0;
	/* the slot (whose queue, and whose process the copies speak for)
	 * and the CPU (whose ring) */
	pass = (pm->slot & (SPIN_MAX_PROCS - 1)) << SPIN_TC_SLOT_SHIFT |
	       (__u32)pm->cpu << SPIN_TC_CPU_SHIFT;
	if (n > SPIN_MAX_PUTS - 1)
		n = SPIN_MAX_PUTS - 1;
	pass |= ifindex0 ? SPIN_TC_HAVE0 : 0;
	/* put 0: the frame as it is */
	if (ifindex0) {
		if (bpf_clone_redirect(skb, ifindex0, 0))
			failed++;
		else if (st)
			st->fanout_copies++;
	}
	/* two passes over the queued puts; spin_tc_put counts its failures */
#ifdef SPIN_NO_KFUNCS
	{
		struct spin_tc_q q = { .skb = skb, .t0 = t0, .seal = seal, .n = n, .pass = pass,
				       .id0 = id0 };

		bpf_loop(2 * n, spin_tc_cb, &q, 0);
	}
#else
	for (__u32 i = 0; i < 2 * (SPIN_MAX_PUTS - 1); i++) {
		__u32 k = i < n ? i : i - n;

		if (i >= 2 * n)
			break;
		spin_tc_put(skb, t0 + k, (i < n ? SPIN_TC_SAME : 0) | pass, id0 + k, seal);
	}
#endif
	if (failed)
		spin_drop_count(st, SPIN_DROP_PUT_FAILED);
	return TC_ACT_SHOT;
}
