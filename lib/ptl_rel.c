// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin's Portals layer: reliable delivery (docs/reliable.md, wire.h
 * "Reliable delivery").
 *
 * Initiator: every put goes out with SPIN_F_REL and stays in the pending
 * table, its bytes in the MD, until the target answers it.  The last packet
 * of a message asks for a SACK (SPIN_F_SACK_REQ); a SACK names the packets
 * the target misses and exactly those are sent again (fast retransmit, no
 * timer).  A retransmission timer (RTO from the smoothed round-trip time,
 * doubled per expiry) covers lost tails and lost answers: it sends the
 * message's last packet again, asking, which the target answers with its
 * ACK (if it completed the message: from its duplicate window), a SACK, or
 * "not now".  A message fails (PTL_NI_UNDELIVERABLE) when the target has
 * not answered anything about it for $SPIN_PTL_TIMEOUT_MS.
 *
 * Congestion window: per target rank, the packets in flight (sent, not
 * known to have arrived) are at most cwnd.  A new message waits until its
 * rank's window has room (PtlPut returns then); a long put's packets go
 * out as the window opens, each batch followed by its last packet once more,
 * asking for a SACK, which tells how far the target got.  AIMD: slow start from
 * $SPIN_PTL_CWND_INIT to ssthresh (one packet more per packet answered),
 * then one packet more per window.  Losses (the holes a SACK names below a
 * packet that arrived, a message's timer expiry) shrink it at most once per
 * loss event (a round trip and a window of packets sent) by half the share
 * of packets lost since the last cut; a share of 1/16 or more also ends
 * slow start; "not now" from the target halves it.
 *
 * Reordering (RACK-TLP style, below "Reordering"): puts and atomics are
 * found lost by time once a message sent after them was answered, SACK
 * holes wait a reordering window, timers and tail probes restart with
 * the rank's answers (one probe per silent rank), and retransmissions
 * answered sooner than min_rtt are spurious: the window grows, the RTO
 * learns the late round trip, the cut is undone.
 *
 * Target (AF_XDP entries, which this process receives itself): the same
 * answers as the runtime gives for window entries, from a per-source window
 * of outcomes (struct ptl_ldd).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <endian.h>

#include "ptl_internal.h"

#define REL_RTO_INIT_US	10000	/* before the first round-trip sample */
#define REL_TLP_MIN_US	100	/* a tail probe waits at least this (2 srtt) */
#define REL_REGETS	8	/* re-gets per get and timer round (wire.h) */
#define REL_CROSS_NS	2000000	/* a repeated get taken this soon after its whole
				 * reply was sent crossed it on the way */
#define REL_PROBE_EVERY	32	/* quiet messages to one rank per probe (half
				 * the 64 ids a range ack covers) */
#define REL_MIN_RTT_WIN_US 10000000	/* min_rtt: the smallest of 10 s of samples */
#define REL_REO_MULT_MAX 16	/* reordering window: at most 16 min_rtt / 4 ... */
#define REL_REO_PERSIST	16	/* ... kept this many loss events after the last
				 * spurious retransmission (RFC 8985: 16) */
/* what a message's latest transmission was (ptl_pending.xmit_kind) */
#define REL_X_NEW	0	/* packets never sent before */
#define REL_X_REPAIR	1	/* the holes a SACK named */
#define REL_X_PROBE	2	/* its last packet again, asking (tail probe,
				 * timer, a loss found by time) */
#define REL_X_NOTNOW	3	/* none since the target said "not now": its
				 * timer (with backoff) sends it again */

void ptl_rel_init(struct ptl_ni *ni)
{
	for (int r = 0; r < SPIN_MAX_PEERS; r++)
		ni->cc[r] = (struct ptl_cc){ .cwnd = ni->cwnd_init, .ssthresh = ni->cwnd_max,
					     .reo_mult = 1 };
	ni->cc_partial = 0;
	ni->rel_head = ni->rel_tail = -1;
	ni->rel_next_us = UINT64_MAX;
	for (int i = 0; i < SPIN_DEDUP_SLOTS; i++)
		ni->rel_win[i] = -1;
	ni->rto_us = REL_RTO_INIT_US < ni->rto_min_us ? ni->rto_min_us : REL_RTO_INIT_US;
	if (ni->rto_us > ni->rto_max_us)
		ni->rto_us = ni->rto_max_us;
	ni->srtt_us = ni->rttvar_us = 0;
	ni->min_rtt_us = ni->min_rtt_at = 0;
	memset(&ni->rs, 0, sizeof(ni->rs));
}

void ptl_rel_fini(struct ptl_ni *ni)
{
	for (int r = 0; r < SPIN_MAX_PEERS; r++) {
		if (!ni->ldd[r])
			continue;
		for (int i = 0; i < SPIN_DEDUP_SLOTS; i++)
			free(ni->ldd[r]->s[i].reply);
		free(ni->ldd[r]);
		ni->ldd[r] = NULL;
	}
	free(ni->retx_list);
	ni->retx_list = NULL;
	free(ni->send_list);
	ni->send_list = NULL;
	ni->send_cap = 0;
	free(ni->probed);
	ni->probed = NULL;
	free(ni->reply_rank);
	ni->reply_rank = NULL;
	ni->rel_head = ni->rel_tail = -1;
	ni->rel_next_us = UINT64_MAX;
}

/* ------------------------------------------------------------ initiator -- */

/* ----------------------------------------------------- congestion window -- */

static struct ptl_cc *cc_of(struct ptl_ni *ni, uint32_t rank)
{
	return ni->cc_on && rank < SPIN_MAX_PEERS ? &ni->cc[rank] : NULL;
}

/* p's packets count in its rank's window (puts and atomics: a get's reply
 * is the target's to send) */
static bool cc_counts(const struct ptl_pending *p)
{
	return p->wire_op == SPIN_OP_PUT || p->wire_op == SPIN_OP_ATOMIC;
}

/* packets rank's window takes now */
static uint32_t cc_room(struct ptl_ni *ni, uint32_t rank)
{
	struct ptl_cc *c = cc_of(ni, rank);

	if (!c)
		return UINT32_MAX;
	return c->cwnd > c->inflight ? c->cwnd - c->inflight : 0;
}

static void cc_sent(struct ptl_ni *ni, struct ptl_pending *p, uint32_t n)
{
	struct ptl_cc *c = cc_of(ni, p->rank);

	if (!c || !cc_counts(p))
		return;
	p->cc_out += n;
	c->inflight += n;
	c->ep_sent += n;
}

/* n of p's packets in flight arrived: the window grows (slow start below
 * ssthresh, else one packet per window's worth) */
static void cc_arrived(struct ptl_ni *ni, struct ptl_pending *p, uint32_t n)
{
	struct ptl_cc *c = cc_of(ni, p->rank);

	if (!c || !n)
		return;
	if (n > p->cc_out)
		n = p->cc_out;
	p->cc_out -= n;
	c->inflight -= n < c->inflight ? n : c->inflight;
	if (c->cwnd < c->ssthresh) {
		c->cwnd += n;
	} else {
		c->acc += n;
		if (c->acc >= c->cwnd) {
			c->acc -= c->cwnd;
			c->cwnd++;
		}
	}
	if (c->cwnd > ni->cwnd_max)
		c->cwnd = ni->cwnd_max;
}

/* p left the window without arriving (failed, forgotten) */
static void cc_forget(struct ptl_ni *ni, struct ptl_pending *p)
{
	struct ptl_cc *c = cc_of(ni, p->rank);

	if (c) {
		c->inflight -= p->cc_out < c->inflight ? p->cc_out : c->inflight;
		if (cc_counts(p) && p->sent_upto < p->npkts) {
			c->partial--;
			ni->cc_partial--;
		}
	}
	p->cc_out = 0;
}

/* `lost` packets to rank were found lost (REL_LOST_ALL: the target said
 * "not now").  At most once per loss event the window shrinks by half the
 * share of packets lost since the last cut (as DCTCP scales its cut by the
 * share of marked packets): a random loss in a long run of packets costs
 * little, a queue that drops half of a burst halves the window. */
#define REL_LOST_ALL	UINT32_MAX
#define REL_CC_CONGESTED 16	/* a loss share of 1/16 or more is congestion */
static void cc_cut(struct ptl_ni *ni, uint32_t rank, uint64_t now, uint32_t lost,
		   struct ptl_pending *p)
{
	struct ptl_cc *c = cc_of(ni, rank);
	uint64_t rtt = ni->srtt_us ? ni->srtt_us : ni->rto_us, w;

	if (!c)
		return;
	c->ep_lost = lost == REL_LOST_ALL ? UINT64_MAX / 2 : c->ep_lost + lost;
	/* one loss event per window of data: a round trip and a window's
	 * worth of packets sent since the last cut (a probe's quick answer
	 * can make the smoothed RTT far shorter than a long message's batches
	 * take; losses among the packets sent before the cut are that cut's) */
	if (c->cut_us && (now - c->cut_us < rtt || c->ep_sent < c->cwnd))
		goto counted;
	/* the window before, should all of this event's losses turn out
	 * spurious (ptl_rel_spurious) */
	c->prior_cwnd = c->cwnd;
	c->prior_ssthresh = c->ssthresh;
	c->gen = c->gen + 1 ? c->gen + 1 : 1;
	c->undo_left = 0;
	/* the reordering window shrinks back after REL_REO_PERSIST loss
	 * events without a spurious retransmission */
	if (c->reo_persist && !--c->reo_persist)
		c->reo_mult = 1;
	if (c->ep_lost >= c->ep_sent)
		w = c->cwnd / 2;
	else	/* cwnd * (1 - lost / sent / 2) */
		w = c->cwnd - (uint64_t)c->cwnd * c->ep_lost / (2 * c->ep_sent);
	if (w < ni->cwnd_min)
		w = ni->cwnd_min;
	c->cwnd = (uint32_t)w;
	/* a queue that overflows loses a share of a burst; a lossy link a
	 * packet here and there: only the first ends slow start */
	if (c->ep_lost * REL_CC_CONGESTED >= c->ep_sent)
		c->ssthresh = c->cwnd;
	c->acc = 0;
	c->cut_us = now;
	c->ep_sent = c->ep_lost = 0;
	ni->rs.cc_cuts++;
counted:
	/* each loss of the event (a message sent again) must be found
	 * spurious for an undo; "not now" never is */
	if (p && lost != REL_LOST_ALL) {
		p->cut_gen = c->gen;
		c->undo_left++;
	} else {
		c->undo_left = UINT32_MAX / 2;
	}
}

static bool cc_open(struct ptl_ni *ni, void *arg)
{
	uint32_t rank = *(uint32_t *)arg;
	struct ptl_cc *c = cc_of(ni, rank);

	return !c || (!c->partial && c->inflight < c->cwnd);
}


static int32_t pidx(struct ptl_ni *ni, struct ptl_pending *p)
{
	return (int32_t)(p - ni->pend);
}

static void rel_link(struct ptl_ni *ni, struct ptl_pending *p)
{
	int32_t i = pidx(ni, p);

	ni->rel_win[p->args.msg_id & (SPIN_DEDUP_SLOTS - 1)] = i;
	p->rel_next = -1;
	p->rel_prev = ni->rel_tail;
	if (ni->rel_tail >= 0)
		ni->pend[ni->rel_tail].rel_next = i;
	else
		ni->rel_head = i;
	ni->rel_tail = i;
}

void ptl_rel_unlink(struct ptl_ni *ni, struct ptl_pending *p)
{
	int32_t *w;

	if (!p->rel)
		return;
	free(p->sack);
	p->sack = NULL;
	cc_forget(ni, p);
	w = &ni->rel_win[p->args.msg_id & (SPIN_DEDUP_SLOTS - 1)];
	if (*w == pidx(ni, p))
		*w = -1;
	if (p->rel_prev >= 0)
		ni->pend[p->rel_prev].rel_next = p->rel_next;
	else
		ni->rel_head = p->rel_next;
	if (p->rel_next >= 0)
		ni->pend[p->rel_next].rel_prev = p->rel_prev;
	else
		ni->rel_tail = p->rel_prev;
	p->rel = false;
}

/* The target of p answered something: p's and its rank's sign of life. */
static void alive(struct ptl_ni *ni, struct ptl_pending *p, uint64_t now)
{
	p->alive_us = now;
	if (p->rank < SPIN_MAX_PEERS)
		ni->alive_rank[p->rank] = now;
}

/* p failed: its target has answered nothing, about it or anything else,
 * for the timeout (a busy target answers "not now", a probe for its
 * newer messages may stand for p). */
static bool gone(struct ptl_ni *ni, struct ptl_pending *p, uint64_t now)
{
	uint64_t last = p->alive_us;

	if (p->rank < SPIN_MAX_PEERS && ni->alive_rank[p->rank] > last)
		last = ni->alive_rank[p->rank];
	return now - last >= ni->timeout_ms * 1000;
}

static void arm(struct ptl_ni *ni, uint64_t at)
{
	if (at < ni->rel_next_us)
		ni->rel_next_us = at;
}

/* Tail loss probe (as TCP's, RFC 8985): a message whose last packet (or
 * repair) went out 2 smoothed round trips ago without an answer sends
 * that packet again, asking, once, well before its timer: a lost last
 * packet or answer then costs 2 srtt, not the RTO (at least
 * $SPIN_PTL_RTO_MIN_US).  No window cut, no backoff: a probe that was not
 * needed costs one packet and a repeated answer.  Puts and atomics with
 * an answer to wait for; all of the message sent. */
static bool rack_counts(const struct ptl_ni *ni, const struct ptl_pending *p);

static bool tail_probes(const struct ptl_ni *ni, const struct ptl_pending *p)
{
	return ni->tlp_on && !p->quiet && (p->wire_op == SPIN_OP_PUT || p->wire_op == SPIN_OP_ATOMIC ||
			     p->wire_op == SPIN_OP_FETCH) && p->sent_upto >= p->npkts;
}

static uint64_t tail_at(const struct ptl_ni *ni, const struct ptl_pending *p)
{
	uint64_t pto = 2 * ni->srtt_us, from = p->tail_us;

	if (!ni->srtt_us)
		return UINT64_MAX;	/* no round trip known: the timer */
	/* as TCP's probe timer, restarted by every answer of the rank: a
	 * rank that keeps answering is not silent, and an older message's
	 * answer after this one's is reordering that the loss detection by
	 * time (rack_due) handles */
	if (rack_counts(ni, p) && ni->alive_rank[p->rank] > from)
		from = ni->alive_rank[p->rank];
	return from + (pto > REL_TLP_MIN_US ? pto : REL_TLP_MIN_US);
}

/* p's last packet (or a repair) just went out: its tail probe may come. */
static void tail_sent(struct ptl_ni *ni, struct ptl_pending *p, uint64_t now)
{
	p->tail_us = now;
	p->tail_probed = false;
	if (tail_probes(ni, p))
		arm(ni, tail_at(ni, p));
}

/* The timer after `tries` expiries: RTO doubled per expiry, capped. */
static uint64_t backoff(struct ptl_ni *ni, uint32_t tries)
{
	uint64_t t = ni->rto_us << (tries < 10 ? tries : 10);

	return t < ni->rto_max_us ? t : ni->rto_max_us;
}

/* Jacobson/Karels (RFC 6298) on the time from a message's first send to
 * its ACK, for messages that were never sent again (Karn). */
static void rtt_sample(struct ptl_ni *ni, uint64_t us, uint64_t now)
{
	uint64_t d;

	/* the smallest round trip of the last REL_MIN_RTT_WIN_US: an answer
	 * that comes sooner after a retransmission answers an earlier copy
	 * (now 0: a lower bound, not a round trip, ptl_rel_spurious) */
	if (now && (!ni->min_rtt_us || us <= ni->min_rtt_us ||
		    now - ni->min_rtt_at > REL_MIN_RTT_WIN_US)) {
		ni->min_rtt_us = us ? us : 1;
		ni->min_rtt_at = now;
	}
	if (!ni->srtt_us) {
		ni->srtt_us = us ? us : 1;
		ni->rttvar_us = us / 2;
	} else {
		d = us > ni->srtt_us ? us - ni->srtt_us : ni->srtt_us - us;
		ni->rttvar_us = (3 * ni->rttvar_us + d) / 4;
		ni->srtt_us = (7 * ni->srtt_us + us) / 8;
	}
	ni->rto_us = ni->srtt_us + 4 * ni->rttvar_us;
	if (ni->rto_us < ni->rto_min_us)
		ni->rto_us = ni->rto_min_us;
	if (ni->rto_us > ni->rto_max_us)
		ni->rto_us = ni->rto_max_us;
}

/*
 * Reordering (docs/reliable.md, "Reordering"), after RACK-TLP (RFC 8985)
 * and Linux's tcp_rack_advance: a message is found lost by time, not by a
 * timer of its own, once a message sent after it to the same rank was
 * answered and a reordering window more than that answer's round trip
 * has gone by since it was sent; a SACK's holes wait out the same window
 * before they are sent again (the packets behind may only be late).  The
 * window is 0 until the rank reordered (an answer came for a message
 * older than one answered before, or a retransmission was spurious),
 * then min_rtt / 4, one quarter more per spurious retransmission (at most
 * REL_REO_MULT_MAX, never more than srtt), back to min_rtt / 4 after
 * REL_REO_PERSIST loss events without one.  A retransmission is spurious
 * when its message's answer comes sooner after it than the smallest round
 * trip: an earlier copy got through.  Then the round trip of the copy
 * before is sampled (Eifel's response, RFC 4015: Karn's rule kept the
 * late answers out of the RTO), and a window cut whose losses were all
 * spurious is undone.  Puts and atomics with an answer to wait for (not
 * quiet messages, gets or fetches).
 */
static bool rack_counts(const struct ptl_ni *ni, const struct ptl_pending *p)
{
	return ni->rack_on && !p->quiet && p->rank < SPIN_MAX_PEERS && cc_counts(p);
}

static uint64_t reo_wnd(struct ptl_ni *ni, const struct ptl_cc *c)
{
	uint64_t w;

	/* (RFC 8985 keeps 0 until reordering was seen, in some states:
	 * here the first answers of a burst through a jittery link made
	 * every message sent just before them lost) */
	w = ni->min_rtt_us / 4 * c->reo_mult;
	if (w > ni->srtt_us)
		w = ni->srtt_us;
	if (w > ni->rs.reo_wnd_us)
		ni->rs.reo_wnd_us = w;
	return w;
}

/* p went out (again) now: new packets, a repair, or a probe */
static void xmitted(struct ptl_pending *p, uint64_t now, uint8_t kind)
{
	p->prev_xmit_us = p->xmit_us;
	p->xmit_us = now;
	p->xmit_kind = kind;
}

/* When p is found lost by time (UINT64_MAX: not by time): a message sent
 * after its latest transmission was answered. */
static uint64_t rack_due(struct ptl_ni *ni, const struct ptl_pending *p)
{
	const struct ptl_cc *c;

	if (!rack_counts(ni, p) || p->sent_upto < p->npkts || p->sack ||
	    p->xmit_kind == REL_X_NOTNOW)
		return UINT64_MAX;
	c = &ni->cc[p->rank];
	if (c->rack_xmit_us <= p->xmit_us)
		return UINT64_MAX;
	return p->xmit_us + c->rack_rtt_us + reo_wnd(ni, c);
}

/* Packets sent again were only late: the reordering window grows. */
static void reo_late(struct ptl_ni *ni, struct ptl_cc *c)
{
	(void)ni;
	c->reo_seen = true;
	if (c->reo_mult < REL_REO_MULT_MAX)
		c->reo_mult++;
	c->reo_persist = REL_REO_PERSIST;
}

/* p's answer to a retransmission came sooner than any round trip. */
static void spurious(struct ptl_ni *ni, struct ptl_pending *p, struct ptl_cc *c, uint64_t now)
{
	ni->rs.spurious++;
	reo_late(ni, c);
	/* Eifel's response: the round trip of the copy before (a lower
	 * bound when an older one was answered) */
	if (p->prev_xmit_us)
		rtt_sample(ni, now - p->prev_xmit_us, 0);
	/* its loss counted in a cut: undone when all of that cut's were */
	if (ni->cc_on && p->cut_gen && p->cut_gen == c->gen && c->undo_left &&
	    !--c->undo_left) {
		if (c->cwnd < c->prior_cwnd)
			c->cwnd = c->prior_cwnd;
		if (c->ssthresh < c->prior_ssthresh)
			c->ssthresh = c->prior_ssthresh;
		ni->rs.undos++;
	}
	p->cut_gen = 0;
}

/* An answer about p came now (final: its ACK; else a SACK): its rank's
 * newest transmission known to have arrived, reordering seen, or a
 * spurious retransmission.  Returns true when the answer is to an
 * earlier copy than p's latest retransmission. */
static bool delivered(struct ptl_ni *ni, struct ptl_pending *p, uint64_t now, bool final)
{
	bool early = false;
	struct ptl_cc *c;
	uint64_t x;

	if (!rack_counts(ni, p) || !p->xmit_us)
		return false;
	c = &ni->cc[p->rank];
	if (p->xmit_kind != REL_X_NEW && now - p->xmit_us < ni->min_rtt_us) {
		if (final)
			spurious(ni, p, c, now);
		early = true;
	}
	/* which copy arrived is known only for one never sent again; for
	 * another, the first is assumed (an answer after a timer's probe
	 * may be the delayed original's: taking the probe's time made every
	 * message sent before it lost at once) */
	x = p->xmit_kind == REL_X_NEW ? p->xmit_us : p->sent_us;
	if (x > c->rack_xmit_us) {
		c->rack_xmit_us = x;
		c->rack_rtt_us = now - x;
	} else if (final && p->xmit_kind == REL_X_NEW && x < c->rack_xmit_us) {
		c->reo_seen = true;	/* answered after a message sent later */
	}
	return early;
}

/* The slot of the window for an id (and for the id 1024 before it). */
static bool window_free(struct ptl_ni *ni, void *arg)
{
	return ni->rel_win[*(uint32_t *)arg & (SPIN_DEDUP_SLOTS - 1)] < 0;
}

struct ptl_pending *ptl_rel_find(struct ptl_ni *ni, uint32_t id)
{
	int32_t i = ni->rel_win[id & (SPIN_DEDUP_SLOTS - 1)];

	return i >= 0 && ni->pend[i].msg_id == id ? &ni->pend[i] : NULL;
}

static void resend(struct ptl_ni *ni, struct ptl_pending *p, const uint32_t *list, uint32_t n,
		   uint64_t now, bool repair);

/* Ask rank about its quiet messages: its newest one again, asking; the
 * answer's range ack covers the 64 ids before it. */
static void probe(struct ptl_ni *ni, uint32_t rank, uint64_t now)
{
	struct ptl_pending *p = ptl_pend_find(ni, ni->quiet_last[rank]);

	ni->quiet_n[rank] = 0;
	if (!p || !p->rel || !p->quiet || p->rank != rank)
		return;
	ni->rs.probes++;
	ni->probe_id[rank] = p->args.msg_id;
	ni->probe_us[rank] = now;
	resend(ni, p, &(uint32_t){ 0 }, 1, now, false);	/* (not counted as a loss) */
}

/* Make progress until done(arg) (answers come, timers fail messages of a
 * gone target, so it ends); a send that waits says what for (WHAT N). */
static int wait_for(struct ptl_ni *ni, bool (*done)(struct ptl_ni *, void *), void *arg,
		    const char *what, uint32_t n)
{
	for (;;) {
		int rc = ptl_wait(ni, done, NULL, arg, 1000);

		if (rc == PTL_OK)
			return PTL_OK;
		if (rc == PTL_INTERRUPTED)
			return ptl_seterr(PTL_INTERRUPTED, "reliable send: interrupted waiting for %s %u",
					  what, n);
	}
}

/*
 * Reply credits: the replies of this process's reliable gets land in its
 * AF_XDP ring, which the runtime fills only up to its receive credits and
 * then drops (xsk_full).  A target sends a whole reply at once, so gets
 * whose replies add up to more than the ring takes lose packets that are
 * then asked for again, and whole replies once nothing of them came: 100
 * 16 MiB gets among 10^5 small ones into window entries made the target
 * send 4.4x the packets, and some gets failed.  Replies in flight are
 * kept to half the ring; a longer one goes when a quarter or less is in
 * flight.
 */
static uint64_t reply_pkts(uint64_t len)
{
	return len <= SPIN_MAX_SEG ? 1 : (len + SPIN_MAX_SEG - 1) / SPIN_MAX_SEG;
}

static bool reply_room(struct ptl_ni *ni, void *arg)
{
	uint64_t n = *(uint64_t *)arg, room = spin_xsk_rx_frames(ni->xsk) / 2;

	/* a reply longer than the room goes once what is in flight is half
	 * of it (the holes of a reply that came at 10% loss), so that its
	 * repairs do not hold the next one back a round trip */
	return ni->reply_out + n <= room || (n > room && ni->reply_out <= room / 2);
}

int ptl_rel_reply_wait(struct ptl_ni *ni, uint64_t len)
{
	uint64_t n = reply_pkts(len);

	/* a bundle only queues, and progress cannot wait for itself */
	if (reply_room(ni, &n) || ni->bundle || ni->in_progress)
		return PTL_OK;
	ni->rs.reply_waits++;
	return wait_for(ni, reply_room, &n, "room for the reply of a get of (bytes)",
			(uint32_t)(len > UINT32_MAX ? UINT32_MAX : len));
}

void ptl_rel_reply_take(struct ptl_ni *ni, struct ptl_pending *p, uint64_t len)
{
	p->reply_cr = (uint32_t)reply_pkts(len);
	ni->reply_out += p->reply_cr;
}

void ptl_rel_reply_done(struct ptl_ni *ni, struct ptl_pending *p)
{
	ni->reply_out -= p->reply_cr < ni->reply_out ? p->reply_cr : ni->reply_out;
	p->reply_cr = 0;
}

int ptl_rel_window(struct ptl_ni *ni, uint32_t id)
{
	uint32_t old = (id - SPIN_DEDUP_SLOTS) & 0xffffff;
	struct ptl_pending *p;

	if (window_free(ni, &old))
		return PTL_OK;
	ni->rs.window_waits++;
	/* its answer may only wait for a probe */
	p = ptl_pend_find(ni, old);
	if (p && p->quiet)
		probe(ni, p->rank, ptl_now_us());
	/* it is answered, or fails once its target has answered nothing for
	 * the timeout (ptl_rel_tick); a busy target ("not now") is waited for */
	return wait_for(ni, window_free, &old, "the answer to message", old);
}

/* A get whose reply came in part: ask again for the packets it misses
 * (wire.h, "re-get"), one request per SPIN_MAX_SEG / 8 bitmap words that
 * hold a gap, at most REL_REGETS requests per round (the next round asks
 * for the gaps after those). */
static int send_regets(struct ptl_ni *ni, struct ptl_pending *p, struct spin_msg_args *a)
{
	uint64_t words[SPIN_MAX_SEG / 8];
	uint32_t nw = (p->npkts + 63) / 64, w = 0, sent = 0;

	while (sent < REL_REGETS) {
		uint32_t n;
		int err;

		while (w < nw && p->bitmap[w] == ptl_word_full(p->npkts, w))
			w++;
		if (w == nw)
			break;
		for (n = 0; n < sizeof(words) / 8 && w + n < nw; n++)
			words[n] = htole64(p->bitmap[w + n]);
		a->user_hdr[2] = w;
		a->user_hdr[3] = p->rseg;
		err = spin_xsk_send_reget(ni->xsk, p->rank, a, (uint32_t)p->len, words, n * 8);
		if (err)
			return err;
		ni->rs.regets++;
		sent++;
		w += n;
	}
	return 0;
}

/* Send packets list[0..n) (NULL: all) of p, the last one with last_flags;
 * a get is its one header-only request. */
static int send_pkts(struct ptl_ni *ni, struct ptl_pending *p, const uint32_t *list, uint32_t n,
		     uint16_t last_flags, bool post_only)
{
	struct spin_msg_args a;

	if (p->wire_op == SPIN_OP_GET) {
		a = p->args;
		a.flags |= last_flags;
		if (p->bitmap && p->got && p->rseg)
			return send_regets(ni, p, &a);
		return spin_xsk_send_get(ni->xsk, p->rank, &a, (uint32_t)p->len, NULL);
	}
	return spin_xsk_send_pkts(ni->xsk, p->rank, &p->args, p->buf, (uint32_t)p->len, list, n,
				  last_flags, post_only);
}

/* Send p's next packets never sent, as many as its rank's window takes
 * (all of them: `all`; at least one of a message not started), the last
 * asking for a SACK (the message's last: for its ACK) so that the answer
 * tells how far the target got. */
static int send_new(struct ptl_ni *ni, struct ptl_pending *p, bool all, bool post_only)
{
	uint32_t before = p->sent_upto, left = p->npkts - before, n = left, room;
	struct ptl_cc *c = cc_of(ni, p->rank);
	int err;

	if (!all && (room = cc_room(ni, p->rank)) < n)
		n = room ? room : !before;
	if (!n)
		return 0;
	if (!before && n == left) {
		err = send_pkts(ni, p, NULL, 0, p->npkts > 1 ? SPIN_F_SACK_REQ : 0, post_only);
	} else {
		if (n > ni->send_cap) {
			uint32_t *l = realloc(ni->send_list, n * sizeof(*l));

			if (!l)
				return ptl_seterr(PTL_NO_SPACE, "reliable send: out of memory");
			ni->send_list = l;
			ni->send_cap = n;
		}
		for (uint32_t i = 0; i < n; i++)
			ni->send_list[i] = before + i;
		if (before + n == p->npkts) {
			err = send_pkts(ni, p, ni->send_list, n, SPIN_F_SACK_REQ, post_only);
		} else {
			/* not the end: the batch's last packet once more, asking.
			 * A duplicate is answered with a SACK by the runtime
			 * program whatever the entry (a handler program answers
			 * no SACK for a new packet), one packet per batch. */
			err = send_pkts(ni, p, ni->send_list, n, 0, post_only);
			if (!err)
				err = send_pkts(ni, p, &ni->send_list[n - 1], 1, SPIN_F_SACK_REQ,
						post_only);
		}
	}
	if (err)
		return err;
	p->sent_upto = before + n;
	cc_sent(ni, p, n);
	if (p->rel) {	/* a later batch (the first: ptl_rel_send) */
		uint64_t now = ptl_now_us();

		xmitted(p, now, REL_X_NEW);
		if (p->sent_upto == p->npkts)	/* its last batch */
			tail_sent(ni, p, now);
	}
	if (c) {
		/* a message is "partial" while the window holds some of it */
		bool was = before && before < p->npkts, is = p->sent_upto < p->npkts;

		if (is && !was) {
			c->partial++;
			ni->cc_partial++;
			ni->rs.cc_held += p->npkts - p->sent_upto;
			p->karn = true;	/* its answer times the batches: no sample */
		} else if (was && !is) {
			c->partial--;
			ni->cc_partial--;
		}
	}
	return 0;
}

/* Send more of the messages the window held back, oldest first. */
static void pump(struct ptl_ni *ni)
{
	for (int32_t i = ni->rel_head; i >= 0 && ni->cc_partial; i = ni->pend[i].rel_next) {
		struct ptl_pending *p = &ni->pend[i];

		if (cc_counts(p) && p->sent_upto < p->npkts && cc_room(ni, p->rank) &&
		    send_new(ni, p, false, false))
			ni->drops++;	/* the timer sends again */
	}
}

int ptl_rel_cc_wait(struct ptl_ni *ni, uint32_t rank)
{
	/* a bundle only queues, and progress (a triggered operation) cannot
	 * wait for itself: those go out anyway, counted in flight */
	if (cc_open(ni, &rank) || ni->bundle || ni->in_progress)
		return PTL_OK;
	ni->rs.cc_waits++;
	/* quiet messages are answered only when asked */
	if (ni->quiet_n[rank])
		probe(ni, rank, ptl_now_us());
	return wait_for(ni, cc_open, &rank, "the congestion window of rank", rank);
}

int ptl_rel_send(struct ptl_ni *ni, struct ptl_pending *p, bool post_only)
{
	/* its round trip starts before the send: a long message can wait
	 * for ring space while its first packets already arrive */
	uint64_t now = ptl_now_us();
	bool pb;
	int err;

	p->sent_us = now;
	/* every REL_PROBE_EVERY-th quiet message to a rank asks itself: its
	 * ACK carries the range ack of the ids before it, and no duplicate
	 * goes out as a probe (probe(), which stays for the window's and
	 * the timer's waits and for answers without a range) */
	pb = p->quiet && !post_only && p->npkts == 1 && p->rank < SPIN_MAX_PEERS &&
	     ni->quiet_n[p->rank] + 1 >= REL_PROBE_EVERY;
	if (pb)
		p->args.flags |= SPIN_F_SACK_REQ;
	if (cc_counts(p))
		err = send_new(ni, p, post_only, post_only);
	else
		err = send_pkts(ni, p, NULL, 0, 0, post_only);
	if (err)
		return err;
	/* a long message's timers start when its packets went out; one
	 * packet's send takes microseconds against an RTO of at least
	 * $SPIN_PTL_RTO_MIN_US: no second clock read on the 8-byte path */
	if (p->npkts > 1)
		now = ptl_now_us();
	p->alive_us = now;
	p->rto_at_us = now + ni->rto_us;
	xmitted(p, now, REL_X_NEW);
	p->rel = true;
	rel_link(ni, p);
	arm(ni, p->rto_at_us);
	tail_sent(ni, p, now);
	ni->rs.msgs++;
	if (p->quiet) {
		ni->quiet_last[p->rank] = p->args.msg_id;
		if (pb) {
			ni->quiet_n[p->rank] = 0;
			ni->rs.probes++;	/* riding on it */
		} else if (++ni->quiet_n[p->rank] >= REL_PROBE_EVERY && !post_only) {
			probe(ni, p->rank, now);
		}
	}
	return 0;
}

/* The ACK of a probe riding on a quiet message (ptl_rel_send) came
 * without a range (a runtime older than the riding probe; wire.h):
 * probe with a duplicate of the newest older quiet message to rank that
 * is still unanswered, if there is one. */
void ptl_rel_no_range(struct ptl_ni *ni, uint32_t rank, uint32_t msg_id)
{
	for (uint32_t i = 0; i < 64 && rank < SPIN_MAX_PEERS; i++) {
		struct ptl_pending *p = ptl_pend_find(ni, (msg_id - 1 - i) & 0xffffff);

		if (p && p->rel && p->quiet && p->rank == rank) {
			ni->quiet_last[rank] = p->args.msg_id;
			probe(ni, rank, ptl_now_us());
			return;
		}
	}
}

/* Send packets list[0..n) of p again, the last one asking for a SACK.
 * retx_us marks a SACK's repair: a SACK asked for before it landed names
 * the same gaps (a timer's probe does not count: the SACK that answers it
 * must be acted on). */
static void resend(struct ptl_ni *ni, struct ptl_pending *p, const uint32_t *list, uint32_t n,
		   uint64_t now, bool repair)
{
	struct ptl_cc *c;

	if (send_pkts(ni, p, list, n, SPIN_F_SACK_REQ, ni->bundle > 0))
		ni->drops++;	/* the timer sends again */
	else if (cc_counts(p) && (c = cc_of(ni, p->rank)))
		c->ep_sent += n;	/* sent again: in the loss share's base */
	xmitted(p, now, repair ? REL_X_REPAIR : REL_X_PROBE);
	p->karn = true;
	if (repair) {
		p->retx_us = now;
		tail_sent(ni, p, now);
	}
}

void ptl_rel_on_ack(struct ptl_ni *ni, struct ptl_pending *p, uint32_t fail, uint64_t mlength,
		    uint32_t list)
{
	uint64_t now = ptl_now_us();

	if (fail == SPIN_FAIL_QUEUE_FULL) {
		/* "not now": the target forgot the message; the timer sends
		 * it again (the last packet asks, the SACK brings the rest) */
		ni->rs.not_now++;
		alive(ni, p, now);
		p->xmit_kind = REL_X_NOTNOW;
		cc_cut(ni, p->rank, now, REL_LOST_ALL, NULL);
		p->karn = true;
		p->rto_at_us = now + backoff(ni, ++p->tries);
		arm(ni, p->rto_at_us);
		return;
	}
	if (!p->karn && (p->wire_op == SPIN_OP_PUT || p->wire_op == SPIN_OP_ATOMIC))
		rtt_sample(ni, now - p->sent_us, now);
	delivered(ni, p, now, true);
	/* the target gave the message up while it was still being sent (its
	 * packets stopped for SPIN_REL_MSG_TIMEOUT_NS): not delivered, and
	 * the send event says so, not only an ack event nobody may ask for */
	if (fail == SPIN_FAIL_TIMEOUT)
		p->unsent = true;
	alive(ni, p, now);
	if (!fail)
		cc_arrived(ni, p, p->cc_out);
	ni->rs.acked++;
	ptl_pend_complete(ni, p, ptl_fail_of(fail), mlength, (ptl_list_t)list);
}

void ptl_rel_replied(struct ptl_ni *ni, struct ptl_pending *p)
{
	/* a one-packet reply's round trip is a sample like an ack's */
	if (!p->karn && p->npkts == 1) {
		uint64_t now = ptl_now_us();

		rtt_sample(ni, now - p->sent_us, now);
	}
	ni->rs.acked++;
}

void ptl_rel_on_range(struct ptl_ni *ni, uint32_t rank, uint32_t msg_id, uint64_t range)
{
	/* the answer to our last probe of rank: a round-trip sample (the
	 * target answers a probe from its window at once) */
	if (rank < SPIN_MAX_PEERS && ni->probe_us[rank] && ni->probe_id[rank] == msg_id) {
		uint64_t now = ptl_now_us();

		rtt_sample(ni, now - ni->probe_us[rank], now);
		ni->probe_us[rank] = 0;
	}
	for (uint32_t i = 0; i < 64; i++) {
		struct ptl_pending *p;

		if (!(range & (1ull << i)))
			continue;
		p = ptl_pend_find(ni, (msg_id - 1 - i) & 0xffffff);
		if (p && p->rel && p->quiet && p->rank == rank) {
			alive(ni, p, ptl_now_us());
			cc_arrived(ni, p, p->cc_out);
			ni->rs.acked++;
			ni->rs.range_acked++;
			ptl_pend_complete(ni, p, PTL_NI_OK, p->len, PTL_PRIORITY_LIST);
		}
	}
}

void ptl_rel_alive(struct ptl_ni *ni, struct ptl_pending *p)
{
	uint64_t now = ptl_now_us();

	alive(ni, p, now);
	if (p->rank < SPIN_MAX_PEERS &&
	    (ni->reply_rank || (ni->reply_rank = calloc(SPIN_MAX_PEERS, sizeof(*ni->reply_rank)))))
		ni->reply_rank[p->rank] = now;
	p->rto_at_us = now + backoff(ni, p->tries);
	arm(ni, p->rto_at_us);
}

/* The holes of SACK words v[0..nw) (from word w0 on, host order) below
 * packet hi, into retx_list; how many. */
static uint32_t sack_holes(struct ptl_ni *ni, const uint64_t *v, uint32_t w0, uint32_t nw,
			   uint32_t hi)
{
	uint32_t n = 0;

	if (!ni->retx_list &&
	    !(ni->retx_list = malloc(SPIN_MAX_SEG / 8 * 64 * sizeof(uint32_t))))
		return 0;
	for (uint32_t w = w0; w - w0 < nw && w * 64 < hi; w++)
		for (uint32_t b = 0; b < 64 && w * 64 + b < hi; b++)
			if (!(v[w - w0] & (1ull << b)))
				ni->retx_list[n++] = w * 64 + b;
	return n;
}

/* Send the holes n in retx_list of p again (lost), the last asking. */
static void repair(struct ptl_ni *ni, struct ptl_pending *p, uint32_t n, uint64_t now)
{
	p->rep_lo = ni->retx_list[0];
	p->rep_hi = ni->retx_list[n - 1] + 1;
	p->rep_n = n;
	cc_cut(ni, p->rank, now, n, p);
	resend(ni, p, ni->retx_list, n, now, true);
	ni->rs.retx_pkts += n;
}

/* p's SACK held for the reordering window (ptl_rel_on_sack): its holes
 * are lost now, unless an answer since filled them. */
static void reo_repair(struct ptl_ni *ni, struct ptl_pending *p, uint64_t now)
{
	uint32_t n = sack_holes(ni, p->sack, p->sack_w0, p->sack_nw, p->sack_hi);

	free(p->sack);
	p->sack = NULL;
	p->reo_at_us = 0;
	if (n)
		repair(ni, p, n, now);
}

void ptl_rel_on_sack(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay,
		     uint32_t len)
{
	struct ptl_pending *p = ptl_pend_find(ni, ntohl(h->msg_id));
	uint64_t now = ptl_now_us(), npk = be64toh(h->user_hdr[0]), w0 = be64toh(h->user_hdr[2]);
	uint32_t nw = len / 8, n = 0, words, got, hi, out;
	uint64_t v[SPIN_MAX_SEG / 8];
	bool early;

	if (!p || !p->rel || p->rank != ntohl(h->src_rank) || npk != p->npkts ||
	    (p->wire_op != SPIN_OP_PUT && p->wire_op != SPIN_OP_ATOMIC)) {
		ni->drops++;
		return;
	}
	words = (p->npkts + 63) / 64;
	if (w0 >= words || !nw) {
		ni->drops++;
		return;
	}
	ni->rs.sacks++;
	alive(ni, p, now);
	p->rto_at_us = now + backoff(ni, p->tries);
	arm(ni, p->rto_at_us);
	if (nw > SPIN_MAX_SEG / 8)	/* what a frame holds; retx_list has room for it */
		nw = SPIN_MAX_SEG / 8;
	if (nw > words - w0)
		nw = words - (uint32_t)w0;
	/* the target has every packet before word w0 and the ones set from
	 * it on; hi: one past the highest it has */
	got = w0 * 64;
	hi = (uint32_t)w0 * 64;
	for (uint32_t w = (uint32_t)w0; w - w0 < nw; w++) {
		memcpy(&v[w - w0], pay + (w - w0) * 8, 8);
		v[w - w0] = le64toh(v[w - w0]);
		if ((w + 1) * 64 > p->npkts)
			v[w - w0] &= (1ull << (p->npkts - w * 64)) - 1;
		got += (uint32_t)__builtin_popcountll(v[w - w0]);
		if (v[w - w0])
			hi = w * 64 + 64 - (uint32_t)__builtin_clzll(v[w - w0]);
	}
	/* what arrived leaves the window */
	out = p->sent_upto > got ? p->sent_upto - got : 0;
	if (out < p->cc_out)
		cc_arrived(ni, p, p->cc_out - out);
	if (hi > p->sent_upto)
		hi = p->sent_upto;
	/* sooner after a repair than any round trip: it answers a copy
	 * sent before the repair; the repaired packets it has came from
	 * earlier copies (late, not lost: all of them, a spurious repair) */
	early = delivered(ni, p, now, false) && p->xmit_kind == REL_X_REPAIR;
	if (early && p->rep_n && rack_counts(ni, p)) {
		uint32_t left = 0;

		for (uint32_t k = p->rep_lo; k < p->rep_hi && k < hi; k++)
			if (k >= w0 * 64 && k / 64 - w0 < nw && !(v[k / 64 - w0] & (1ull << (k % 64))))
				left++;
		if (p->rep_hi > hi)	/* not shown: not known to have come */
			left = p->rep_n;
		if (!left) {
			spurious(ni, p, &ni->cc[p->rank], now);
		} else if (left < p->rep_n) {
			ni->cc[p->rank].reo_seen = true;
			reo_late(ni, &ni->cc[p->rank]);
		}
		p->rep_n = 0;
	}
	/* a SACK asked for before our last retransmission can have landed
	 * names the same gaps again */
	if (!early &&
	    !(p->retx_us && now - p->retx_us < (ni->srtt_us ? ni->srtt_us : ni->rto_us) / 2)) {
		uint64_t w = rack_counts(ni, p) ? reo_wnd(ni, &ni->cc[p->rank]) : 0, sent, due;

		/* the holes below the highest packet it has were lost (or
		 * are late); the ones above may be on their way */
		n = sack_holes(ni, v, (uint32_t)w0, nw, hi);
		/* late, by RACK's rule, once a reordering window has passed
		 * since the packet sent with them (or after them) arrived:
		 * the holes went out with the latest transmission, or before
		 * it if that was a lone probe (2 round trips later) */
		sent = p->xmit_kind == REL_X_PROBE && p->prev_xmit_us ? p->prev_xmit_us : p->xmit_us;
		due = sent + (now - p->xmit_us) + w;
		if (n && w && due > now) {
			if (!p->sack && !(p->sack = malloc(sizeof(v)))) {
				repair(ni, p, n, now);
				goto more;
			}
			/* the newest bitmap (the target's only grows); the
			 * first deadline */
			memcpy(p->sack, v, nw * 8);
			p->sack_w0 = (uint32_t)w0;
			p->sack_nw = nw;
			p->sack_hi = hi;
			if (!p->reo_at_us) {
				p->reo_at_us = due;
				ni->rs.reo_deferred++;
			}
			arm(ni, p->reo_at_us);
		} else {
			if (p->sack) {	/* filled, or due now */
				free(p->sack);
				p->sack = NULL;
				p->reo_at_us = 0;
			}
			if (n)
				repair(ni, p, n, now);
		}
	}
more:
	/* the window may take more of it now */
	if (p->sent_upto < p->npkts && send_new(ni, p, false, ni->bundle > 0))
		ni->drops++;
}

/*
 * Is get or fetch p's timer early: did a reply packet of its target come
 * within an RTO?  A target answers gets in the order they came, one whole
 * reply after another, so a get waiting behind other long replies is not
 * lost; asking again then only made the target send a whole reply twice
 * (100 16 MiB gets among 10^5 small ones at 1% loss: 4.4x the packets,
 * and gets failed).  It waits until its target's replies stop (at most
 * all gets in flight to it, which the id window bounds).
 */
static bool replies_coming(struct ptl_ni *ni, const struct ptl_pending *p, uint64_t now)
{
	return (p->wire_op == SPIN_OP_GET || p->wire_op == SPIN_OP_FETCH) && ni->reply_rank &&
	       p->rank < SPIN_MAX_PEERS && ni->reply_rank[p->rank] + backoff(ni, 0) > now;
}

void ptl_rel_tick(struct ptl_ni *ni)
{
	uint64_t now, next = UINT64_MAX;
	uint32_t gen;
	int32_t i, nx;

	/* a bundle holds everything until it ends */
	if (ni->bundle)
		return;
	if (ni->cc_partial)
		pump(ni);
	if (ni->rel_next_us == UINT64_MAX || (now = ptl_now_us()) < ni->rel_next_us)
		return;
	/* (marks of this walk: a generation, not a clear of every rank's) */
	if (!ni->probed && !(ni->probed = calloc(SPIN_MAX_PEERS, sizeof(*ni->probed))))
		return;
	gen = ++ni->probed_gen;
	/* newest first: a probe's range ack covers the quiet messages of its
	 * rank up to 64 ids older, which then wait for that answer */
	for (i = ni->rel_tail; i >= 0; i = nx) {
		struct ptl_pending *p = &ni->pend[i];
		uint32_t id = p->args.msg_id;
		uint32_t pr = ni->probed[p->rank].gen == gen ? ni->probed[p->rank].id : 0;

		nx = p->rel_prev;
		if (!p->quiet || now < p->rto_at_us || gone(ni, p, now))
			continue;
		if (pr && ((pr - id) & 0xffffff) <= 64) {
			p->rto_at_us = now + backoff(ni, p->tries);
			continue;
		}
		ni->probed[p->rank].gen = gen;
		ni->probed[p->rank].id = id;
	}
	for (i = ni->rel_head; i >= 0; i = nx) {
		struct ptl_pending *p = &ni->pend[i];
		uint64_t due;

		nx = p->rel_next;
		/* a SACK's holes waited out the reordering window */
		if (p->sack && now >= p->reo_at_us)
			reo_repair(ni, p, now);
		else if (p->sack && p->reo_at_us < next)
			next = p->reo_at_us;
		/* a message answered after it was sent after it: lost once
		 * the reordering window passed, whatever its timer says (no
		 * tail probe: others' answers show the way is open) */
		due = rack_due(ni, p);
		if (due != UINT64_MAX) {
			if (now < due) {
				if (p->rto_at_us < due)
					p->rto_at_us = due;
				if (due < next)
					next = due;
				continue;
			}
			if (!gone(ni, p, now)) {
				/* its last packet again, asking, as a tail
				 * probe does it and with no cut either: a
				 * SACK's holes cut the window */
				ni->rs.rack_lost++;
				resend(ni, p, &(uint32_t){ p->sent_upto - 1 }, 1, now, false);
				ni->rs.retx_pkts++;
				p->rto_at_us = now + backoff(ni, p->tries);
				if (p->rto_at_us < next)
					next = p->rto_at_us;
				continue;
			}
		}
		/* as TCP's timer, restarted by every answer of the rank: a
		 * rank that keeps answering is not silent (a flight that
		 * grew a queue on the way outlived the RTO of its first
		 * answers, and every message of it expired); a message it
		 * lost is found by time (rack_due) */
		if (rack_counts(ni, p) && now >= p->rto_at_us && p->xmit_kind != REL_X_NOTNOW &&
		    ni->alive_rank[p->rank] + backoff(ni, p->tries) > now)
			p->rto_at_us = ni->alive_rank[p->rank] + backoff(ni, p->tries);
		if (now < p->rto_at_us && !p->tail_probed && tail_probes(ni, p)) {
			uint64_t at = tail_at(ni, p);

			if (now >= at && rack_counts(ni, p) && ni->cc[p->rank].tlp_us &&
			    ni->alive_rank[p->rank] < ni->cc[p->rank].tlp_us) {
				/* one tail probe per silent rank, as TCP's
				 * one per flight: the others wait for its
				 * answer (or their timer) */
			} else if (now >= at) {
				/* its tail or answer is late: ask again now */
				if (rack_counts(ni, p))
					ni->cc[p->rank].tlp_us = now;
				p->tail_probed = true;
				ni->rs.tail_probes++;
				resend(ni, p, &(uint32_t){ p->sent_upto - 1 }, 1, now, false);
				ni->rs.retx_pkts++;
			} else if (at < next) {
				next = at;
			}
		}
		if (now >= p->rto_at_us && replies_coming(ni, p, now)) {
			/* not late: behind other replies of its target */
			p->rto_at_us = ni->reply_rank[p->rank] + backoff(ni, 0);
		} else if (now >= p->rto_at_us) {
			struct ptl_cc *c = p->rank < SPIN_MAX_PEERS ? &ni->cc[p->rank] : NULL;

			if (gone(ni, p, now)) {
				ni->rs.failed++;
				p->unsent = true;
				ptl_pend_complete(ni, p, PTL_NI_UNDELIVERABLE, 0, PTL_PRIORITY_LIST);
				continue;
			}
			/* a rank silent since another message's timer sent a
			 * probe: this one waits for that answer, as TCP keeps
			 * one timer per connection (a link that holds every
			 * frame a while made each message's timer expire, and
			 * each sent a packet and cut the window) */
			if (rack_counts(ni, p) && c->tmo_us && ni->alive_rank[p->rank] < c->tmo_us &&
			    now - c->tmo_us < c->tmo_wait_us) {
				p->rto_at_us = c->tmo_us + c->tmo_wait_us;
				if (p->rto_at_us < next)
					next = p->rto_at_us;
				continue;
			}
			/* the tail or the answer was lost: ask again (a get
			 * or fetch: its one request) */
			ni->rs.timeouts++;
			if (!p->quiet)	/* a quiet message's timer is its probe */
				cc_cut(ni, p->rank, now, 1, p);
			resend(ni, p, &(uint32_t){ cc_counts(p) ? p->sent_upto - 1 : 0 }, 1, now, false);
			ni->rs.retx_pkts++;
			p->rto_at_us = now + backoff(ni, ++p->tries);
			/* a rank silent for an RTO: the others wait for
			 * this probe's answer */
			if (rack_counts(ni, p) && now - ni->alive_rank[p->rank] >= backoff(ni, 0)) {
				c->tmo_us = now;
				c->tmo_wait_us = backoff(ni, p->tries);
			}
		}
		if (p->rto_at_us < next)
			next = p->rto_at_us;
	}
	/* at most every half of the shortest tail probe time: a walk costs
	 * the messages in flight, and a sender takes its answers only here */
	if (next < now + REL_TLP_MIN_US / 2)
		next = now + REL_TLP_MIN_US / 2;
	ni->rel_next_us = next;
}

/* --------------------------------------------------------------- target -- */

struct ptl_ldd_slot *ptl_rel_note(struct ptl_ni *ni, const struct spin_hdr *h, uint32_t fail,
				  uint64_t mlength, uint32_t list)
{
	uint32_t rank = ntohl(h->src_rank), id = ntohl(h->msg_id);
	struct ptl_ldd_slot *s;
	struct ptl_ldd *d;

	if (rank >= SPIN_MAX_PEERS)
		return NULL;
	d = ni->ldd[rank];
	if (!d && !(d = ni->ldd[rank] = calloc(1, sizeof(*d))))
		return NULL;
	s = &d->s[id & (SPIN_DEDUP_SLOTS - 1)];
	free(s->reply);
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->mlength = (uint32_t)mlength;
	s->fail = (uint8_t)fail;
	s->list = (uint8_t)list;
	s->op = h->op;
	return s;
}

static uint64_t range_of(const struct ptl_ldd *d, uint32_t id);

void ptl_rel_done(struct ptl_ni *ni, const struct spin_hdr *h, uint32_t fail, uint64_t mlength,
		  uint32_t list)
{
	uint32_t rank = ntohl(h->src_rank);
	uint64_t range = 0;

	ptl_rel_note(ni, h, fail, mlength, list);
	/* a probe riding on a new one-packet put (ptl_rel_send): its ACK
	 * carries the range ack, as a duplicate probe's does */
	if (h->op == SPIN_OP_PUT && (ntohs(h->flags) & SPIN_F_SACK_REQ) && !h->pkt_off &&
	    rank < SPIN_MAX_PEERS && ni->ldd[rank])
		range = range_of(ni->ldd[rank], ntohl(h->msg_id));
	ptl_send_ack_range(ni, h, mlength, fail, list, range);
}

/* A probe's range ack (wire.h): bit i when put id - 1 - i completed here
 * without failure. */
static uint64_t range_of(const struct ptl_ldd *d, uint32_t id)
{
	uint64_t bits = 0;

	for (uint32_t i = 0; i < 64; i++) {
		uint32_t o = (id - 1 - i) & 0xffffff;
		const struct ptl_ldd_slot *s = &d->s[o & (SPIN_DEDUP_SLOTS - 1)];

		if (s->id == o && s->op == SPIN_OP_PUT && !s->fail)
			bits |= 1ull << i;
	}
	return bits;
}

/* A re-get of entry m's bytes [off, +mlength) (ptl_rel_reget): from the
 * entry in place, or through a copy (iovecs, the whole address space). */
static void reget_me(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay,
		     uint32_t len, const struct ptl_mer *m, uint64_t off, uint64_t mlength,
		     uint32_t list, uint64_t whole_sent_ns)
{
	uint8_t *tmp;

	if (!len || ptl_buf_flat(&m->buf)) {
		if (len)
			ptl_rel_reget(ni, h, pay, len, m->buf.start + off, mlength, list,
				      whole_sent_ns);
		else
			ptl_reply_me(ni, h, m, off, mlength, list);
		return;
	}
	tmp = malloc(mlength ? mlength : 1);
	if (!tmp || ptl_buf_read(&m->buf, off, tmp, mlength))
		ni->drops++;	/* asked again at the initiator's next timeout */
	else
		ptl_rel_reget(ni, h, pay, len, tmp, mlength, list, whole_sent_ns);
	free(tmp);
}

bool ptl_rel_dup(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay, uint32_t len,
		 bool answer)
{
	uint32_t rank = ntohl(h->src_rank), id = ntohl(h->msg_id);
	struct ptl_ldd *d = rank < SPIN_MAX_PEERS ? ni->ldd[rank] : NULL;
	struct ptl_ldd_slot *s;
	struct ptl_mer *m;

	if (!d)
		return false;
	s = &d->s[id & (SPIN_DEDUP_SLOTS - 1)];
	if (s->id != id || s->op != h->op)
		return false;
	if (!answer)
		return true;
	ni->rs.dup_answered++;
	if (h->op == SPIN_OP_FETCH)
		ptl_reply_to(ni, h, s->reply, s->reply ? s->mlength : 0,
			     s->reply || s->fail ? s->fail : SPIN_FAIL_DROPPED, s->list);
	else if (h->op == SPIN_OP_GET && !s->fail && (m = ptl_me_get(ni, s->meh))) {
		/* read again, as an RDMA read retry does; a re-get names
		 * the packets it misses */
		if (!len && s->mlength > SPIN_MAX_SEG &&
		    ptl_rel_reply_crossed(be64toh(h->auth_tag), s->sent_ns)) {
			ni->rs.reget_crossed++;
			return true;
		}
		reget_me(ni, h, pay, len, m, s->off, s->mlength, s->list, s->sent_ns);
		if (!len)
			s->sent_ns = ptl_now_us() * 1000;
	}
	else if (h->op == SPIN_OP_GET)	/* its entry is gone: the bytes with it */
		ptl_reply_to(ni, h, NULL, 0, s->fail ? s->fail : SPIN_FAIL_DROPPED, s->list);
	else
		ptl_send_ack_range(ni, h, s->mlength, s->fail, s->list,
				   (ntohs(h->flags) & SPIN_F_SACK_REQ) ? range_of(d, id) : 0);
	return true;
}

bool ptl_rel_reply_crossed(uint64_t took_ns, uint64_t sent_ns)
{
	return took_ns && sent_ns && took_ns < sent_ns + REL_CROSS_NS;
}

void ptl_rel_reget(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay, uint32_t plen,
		   const void *buf, uint64_t len, uint32_t list, uint64_t whole_sent_ns)
{
	uint32_t seg = (uint32_t)be64toh(h->user_hdr[3]), npkts, nw, n = 0;
	uint64_t w0 = be64toh(h->user_hdr[2]);
	struct ptl_sent_repair *r;
	struct spin_msg_args a = {
		.op = SPIN_OP_REPLY, .pt_index = ntohs(h->pt_index), .msg_id = ntohl(h->msg_id),
		.match_bits = be64toh(h->match_bits), .remote_off = be64toh(h->remote_off),
		.hdr_data = be64toh(h->hdr_data),
		.user_hdr = { ntohl(h->msg_len), SPIN_FAIL_OK, list },
	};

	/* no bitmap, or one in other packets than this side sends: all */
	if (!plen || plen % 8 || seg != SPIN_MAX_SEG || len <= seg) {
		ptl_reply_to(ni, h, buf, len, SPIN_FAIL_OK, list);
		return;
	}
	npkts = spin_npkts((uint32_t)len, seg);
	nw = (npkts + 63) / 64;
	if (w0 >= nw)
		return;
	if (ni->send_cap < npkts) {
		uint32_t *l = realloc(ni->send_list, npkts * sizeof(*l));

		if (!l)
			return;	/* asked again at the initiator's next timeout */
		ni->send_list = l;
		ni->send_cap = npkts;
	}
	for (uint32_t i = 0; i < plen / 8 && w0 + i < nw; i++) {
		uint64_t have;
		uint32_t w = (uint32_t)w0 + i;

		memcpy(&have, pay + 8 * i, 8);
		have = le64toh(have);
		for (uint32_t b = 0; b < 64 && w * 64 + b < npkts; b++)
			if (!(have >> b & 1))
				ni->send_list[n++] = w * 64 + b;
	}
	if (!n)
		return;
	/* asked for before the whole reply, or the last repair of the same
	 * words, went out (or just after: they crossed): that answers it */
	if (ptl_rel_reply_crossed(be64toh(h->auth_tag), whole_sent_ns)) {
		ni->rs.reget_crossed++;
		return;
	}
	r = &ni->sent_repair[(a.msg_id ^ ntohl(h->src_rank) * 31 ^ (uint32_t)w0 * 7) %
			     (sizeof(ni->sent_repair) / sizeof(ni->sent_repair[0]))];
	if (r->rank == ntohl(h->src_rank) && r->id == a.msg_id && r->w0 == w0 &&
	    ptl_rel_reply_crossed(be64toh(h->auth_tag), r->sent_ns)) {
		ni->rs.reget_crossed++;
		return;
	}
	ni->rs.reget_pkts += n;
	if (spin_xsk_send_pkts(ni->xsk, ntohl(h->src_rank), &a, buf, (uint32_t)len, ni->send_list,
			       n, 0, false)) {
		ni->drops++;
		return;
	}
	r->rank = ntohl(h->src_rank);
	r->id = a.msg_id;
	r->w0 = w0;
	r->sent_ns = ptl_now_us() * 1000;
}

void ptl_rel_send_sack(struct ptl_ni *ni, const struct spin_hdr *h, const uint64_t *bitmap,
		       uint32_t npkts)
{
	uint64_t words[SPIN_MAX_SEG / 8];
	uint32_t nwords = (npkts + 63) / 64, w0, n = 0;
	struct spin_msg_args a = {
		.op = SPIN_OP_SACK, .pt_index = ntohs(h->pt_index), .msg_id = ntohl(h->msg_id),
		.match_bits = be64toh(h->match_bits), .remote_off = be64toh(h->remote_off),
		.hdr_data = be64toh(h->hdr_data),
	};

	for (w0 = 0; w0 < nwords; w0++)
		if (bitmap[w0] != ptl_word_full(npkts, w0))
			break;
	if (w0 == nwords)
		return;
	while (w0 + n < nwords && n < sizeof(words) / 8) {
		words[n] = htole64(bitmap[w0 + n]);
		n++;
	}
	a.user_hdr[0] = npkts;
	a.user_hdr[2] = w0;
	ni->rs.sacks_sent++;
	if (spin_xsk_send(ni->xsk, ntohl(h->src_rank), &a, words, n * 8, NULL, NULL))
		ni->drops++;
}
