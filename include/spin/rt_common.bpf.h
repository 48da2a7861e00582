/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runtime steps of the runtime programs (bpf/spin_rt.bpf.c) and the finish
 * stage: default deposit, publishing the header handler's verdict, byte
 * accounting, and the finish step (counters, events, puts, answers).  The
 * runtime object's only (SPIN_RT_PROG): they use maps no handler program
 * holds (spin_me, spin_msgs, spin_stats, ...), and handler programs reach
 * them through their finish stage.  Handler objects get the return codes
 * below only.
 */
#ifndef SPIN_RT_COMMON_BPF_H
#define SPIN_RT_COMMON_BPF_H

#include <spin/maps.bpf.h>

#ifndef ETH_P_IP
#define ETH_P_IP	0x0800
#endif

/* Header handler verdicts (same values as handler.h's enum). */
#define SPIN_RC_SUCCESS		0
#define SPIN_RC_PROCEED		1
#define SPIN_RC_PROCESS_DATA	2
#define SPIN_RC_DROP		3
#define SPIN_RC_PENDING		4	/* added to the above: *_PENDING */
#define SPIN_RC_FAIL		8

/*
 * The header handler's verdict (c->hdr_rc) as this packet's phases:
 * SPIN_MSG_RUNNING (with SPIN_MSGF_PROCEED in *flags for PROCEED) or
 * SPIN_MSG_DROP.  The handler program's own (which phases it runs next)
 * and its finish stage's (what it publishes), from the same hdr_rc.
 */
static __always_inline __u32 spin_hdr_verdict_f(struct spin_ctx *c, __u32 *flags)
{
	__u32 rc = c->hdr_rc;

	if (rc >= SPIN_RC_PENDING && rc < SPIN_RC_FAIL)
		rc -= SPIN_RC_PENDING;
	switch (rc) {
	case SPIN_RC_PROCEED:
		c->phases = (c->phases & ~SPIN_PH_PAYLOAD) | SPIN_PH_DEPOSIT;
		*flags = SPIN_MSGF_PROCEED;
		return SPIN_MSG_RUNNING;
	case SPIN_RC_SUCCESS:
	case SPIN_RC_PROCESS_DATA:
		*flags = 0;
		return SPIN_MSG_RUNNING;
	case SPIN_RC_FAIL:
		c->fail = 1;
		/* fall through */
	default:	/* DROP or a bad return code */
		c->phases &= ~(SPIN_PH_PAYLOAD | SPIN_PH_DEPOSIT);
		c->msg_dropped = 1;
		*flags = 0;
		return SPIN_MSG_DROP;
	}
}

static __always_inline void spin_hdr_verdict(struct spin_ctx *c)
{
	__u32 f;

	spin_hdr_verdict_f(c, &f);
}

#ifdef SPIN_RT_PROG
static __always_inline void spin_hcount(int slot)
{
	struct spin_stats *st = spin_stats_get();

	if (st && slot >= 0 && slot < SPIN_H_MAX)
		st->handler_calls[slot]++;
}

/*
 * After the header handler (the finish stage): publish its verdict to the
 * message state (other packets of the message wait for it).  The message
 * state is published with an atomic exchange so the flags are visible
 * before the status.
 */
static __always_inline void spin_after_header(struct spin_ctx *c, struct spin_msg *m)
{
	__u32 f, status = spin_hdr_verdict_f(c, &f);

	if (m) {
		if (f)
			m->flags |= f;
		__sync_lock_test_and_set(&m->status, status);
	}
}

/*
 * Default deposit of this packet's payload into the match entry's buffer in
 * the host window, truncated at the entry's length; bytes beyond it count
 * as dropped.
 */
static __always_inline void spin_deposit(struct xdp_md *xdp, struct spin_ctx *c)
{
	struct spin_stats *st = spin_stats_get();
	__u32 len = c->pay_len, pkt_off = c->pkt_off, n = 0;
	struct spin_me *me;

	if (pkt_off < c->mlength) {
		n = c->mlength - pkt_off;
		if (n > len)
			n = len;
	}
	if (len > n) {
		/* bytes beyond the entry's window (Portals truncation) */
		c->dropped += len - n;
		spin_drop_count(st, SPIN_DROP_TRUNCATED);
	}
	if (!n)
		return;
	/* into the window of the entry's process slot only */
	me = bpf_map_lookup_elem(&spin_me, &c->me);
	if (!me || spin_frame_to_host(xdp, SPIN_PAY_OFF,
				      spin_win_addr(SPIN_PT_SLOT(me->pt), c->start + pkt_off), n,
				      c->bounce)) {
		spin_drop_count(st, SPIN_DROP_HOST_OOB);
		c->dropped += n;
		c->fail = 1;
		return;
	}
	if (st)
		st->deposited_bytes += n;
}

#ifndef SPIN_NO_KFUNCS
/* open-coded iterators (Linux 6.4+): a loop the verifier checks once, in
 * the caller's frame */
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __weak __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __weak __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __weak __ksym;
#endif

/* Delete bitmap chunks 1..n of message key (those that exist); each delete
 * that succeeds gives the source's chunk back.  An open-coded iterator: no
 * callback frame in handler programs, whose stack may be full, and one
 * pass of the verifier over the loop. */
#ifdef SPIN_NO_KFUNCS
/* without bpf_iter_num (maps.bpf.h, SPIN_NO_KFUNCS): bpf_loop */
struct spin_chunks_free_q {
	struct spin_msg_chunk_key ck;
	struct spin_src *s;
};

static int spin_chunks_free_cb(__u32 i, struct spin_chunks_free_q *q)
{
	q->ck.chunk = i + 1;
	if (!bpf_map_delete_elem(&spin_msg_bits, &q->ck) && q->s)
		__sync_fetch_and_add(&q->s->chunks, -1);
	return 0;
}

/* out of line: its q on the stack is a frame of its own, not 24 bytes more
 * on paths that use all 512 (spin_default's; the iterator is 8) */
static __noinline void spin_chunks_free(const struct spin_msg_key *key, __u32 n)
{
	struct spin_chunks_free_q q = {
		.ck = { .src_rank = key->src_rank, .msg_id = key->msg_id },
	};

	q.s = bpf_map_lookup_elem(&spin_src, &key->src_rank);
	if (n >= SPIN_MSG_MAX_CHUNKS)
		n = SPIN_MSG_MAX_CHUNKS - 1;
	bpf_loop(n, spin_chunks_free_cb, &q, 0);
}
#else
static __always_inline void spin_chunks_free(const struct spin_msg_key *key, __u32 n)
{
	struct spin_msg_chunk_key ck = { .src_rank = key->src_rank, .msg_id = key->msg_id };
	struct spin_src *s = bpf_map_lookup_elem(&spin_src, &key->src_rank);
	struct bpf_iter_num it;
	int *i;

	if (n >= SPIN_MSG_MAX_CHUNKS)
		n = SPIN_MSG_MAX_CHUNKS - 1;
	bpf_iter_num_new(&it, 1, (int)n + 1);
	while ((i = bpf_iter_num_next(&it))) {
		ck.chunk = *i;
		if (!bpf_map_delete_elem(&spin_msg_bits, &ck) && s)
			__sync_fetch_and_add(&s->chunks, -1);
	}
	bpf_iter_num_destroy(&it);
}
#endif

/* Remove a message's state, its bitmap chunks first (so a new message with
 * the same key, which can only be created once the state is gone, never
 * finds chunks of this one); the caller whose delete removed the state
 * gives its source's slot back (spin_src), so each slot is given back
 * once. */
static __always_inline void spin_msg_free(struct spin_msg_key *key)
{
	struct spin_msg *m = bpf_map_lookup_elem(&spin_msgs, key);
	struct spin_src *s;
	struct spin_me *me;
	__u32 mi = SPIN_MAX_ME;
	__u64 seq = 0;

	if (m && m->nchunks)
		spin_chunks_free(key, m->nchunks);
	if (m && (m->flags & SPIN_MSGF_MATCHED)) {
		mi = m->me;
		seq = m->me_seq;
		/* its handlers' per-message state (if they made one), in
		 * the map of its entry's slot: a finish stage's spin_mstate
		 * is its slot's (or a shipped program's own); the runtime
		 * finds the slot's in spin_mstates */
		if (spin_fin_slot < SPIN_MAX_PROCS) {
			bpf_map_delete_elem(&spin_mstate, key);
		} else {
			void *ms = bpf_map_lookup_elem(&spin_mstates,
						       spin_slot_key(SPIN_MSGF_SLOT_OF(m->flags)));

			if (ms)
				bpf_map_delete_elem(ms, key);
		}
	}
	if (bpf_map_delete_elem(&spin_msgs, key))
		return;
	s = bpf_map_lookup_elem(&spin_src, &key->src_rank);
	if (s)
		spin_src_give(s);
	/* the entry it matched has one message in flight less (spin_me.busy),
	 * if it is still that entry */
	if (mi < SPIN_MAX_ME && (me = bpf_map_lookup_elem(&spin_me, &mi)) && me->seq == seq &&
	    (__s32)*(volatile __u32 *)&me->busy > 0)
		__sync_fetch_and_add(&me->busy, -1);
}

/* Is me still the entry that message m matched: not unlinked, and no other
 * entry appended in its slot since?  A portal's seq only grows, so the
 * slot's next entry has another seq. */
static __always_inline int spin_me_same(const struct spin_me *me, const struct spin_msg *m)
{
	__u32 s = *(const volatile __u32 *)&me->state;

	return (m->flags & SPIN_MSGF_MATCHED) && me->seq == m->me_seq &&
	       (s == SPIN_ME_ACTIVE || s == SPIN_ME_CLAIMED);
}

/*
 * Account this packet's bytes.  For a single-packet message the packet is
 * the message; otherwise the packet whose bytes complete the message (an
 * atomic add that reaches msg_len) is the one that runs the completion, so
 * the completion handler runs exactly once and after every payload handler
 * of the message returned.
 */
static __always_inline void spin_account(struct spin_ctx *c, struct spin_msg *m)
{
	__u32 old;

	if (!m) {
		c->done = 1;
		return;
	}
	if (c->dropped)
		__sync_fetch_and_add(&m->dropped, c->dropped);
	old = __sync_fetch_and_add(&m->bytes_seen, c->pay_len);
	if (old + c->pay_len == m->msg_len) {
		c->done = 1;
		c->dropped = __sync_fetch_and_add(&m->dropped, 0);
		if (m->status == SPIN_MSG_DROP)
			c->msg_dropped = 1;
	}
}

/* ------------------------------------------------------- finish -- */


static __always_inline void spin_fill_event(struct spin_event *e, __u32 kind, __u32 fail,
					    const struct spin_ctx *c, const struct spin_me *me)
{
	e->kind = kind;
	e->fail = fail;
	e->pt_index = c->pt;
	e->me = c->me;
	e->match_bits = 0;
	e->rlength = c->msg_len;
	e->mlength = c->mlength;
	e->remote_off = 0;
	e->start = c->start;
	e->hdr_data = 0;
	e->user_ptr = me ? me->user_ptr : 0;
	e->src_rank = c->key.src_rank;
	e->src_pid = 0;
	e->msg_id = c->key.msg_id;
	e->owner_pid = me ? me->owner_pid : 0;
	e->dropped_bytes = c->dropped;
	e->flow_control = 0;
	e->list = me ? me->list : 0;
	e->pad = 0;
	e->timestamp_ns = bpf_ktime_get_ns();
	__builtin_memset(&e->put, 0, sizeof(e->put));
}

/* Post an event; the header fields come from the frame's sPIN header. */
static __always_inline void spin_post(struct xdp_md *xdp, struct spin_stats *st, __u32 kind,
				      __u32 fail, const struct spin_ctx *c,
				      struct spin_me *me, const struct spin_put_req *put)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;
	struct spin_event *e;
	void *rb;

	/* slot 0's ring directly; another process's through spin_rings */
	if (SPIN_SLOT_BARRED(SPIN_PT_SLOT(c->pt))) {
		e = NULL;	/* a handler's finish stage: not its slot's */
	} else if (SPIN_PT_SLOT(c->pt)) {
		rb = spin_ring_of(c->pt);
		e = rb ? bpf_ringbuf_reserve(rb, sizeof(*e), 0) : NULL;
	} else {
		e = bpf_ringbuf_reserve(&spin_events, sizeof(*e), 0);
	}
	if (!e) {
		spin_drop_count(st, SPIN_DROP_EV_LOST);
		return;
	}
	spin_fill_event(e, kind, fail, c, me);
	if ((void *)(sh + 1) <= end) {
		e->match_bits = bpf_be64_to_cpu(sh->match_bits);
		e->remote_off = bpf_be64_to_cpu(sh->remote_off);
		e->hdr_data = bpf_be64_to_cpu(sh->hdr_data);
		e->src_pid = bpf_ntohl(sh->src_pid);
	}
	if (put)
		e->put = *put;
	spin_rb_submit(e, (kind == SPIN_EV_PUT || kind == SPIN_EV_GET) && me ?
		       spin_me_wake_flags(me, st, fail, c->mlength) :
		       spin_rb_flags());
	if (st)
		st->events++;
}

/*
 * IPv4 checksum of the rewritten header, from the new field values and the
 * unchanged words of the old header (read before any store to it: reading
 * the header back after the rewrite stalls on store forwarding).
 */
static __always_inline __u16 spin_ip_csum(const struct iphdr *ip, __be16 tot_len,
					  __u32 saddr, __u32 daddr)
{
	__u32 sum = *(const __u16 *)ip + tot_len + ip->id + ip->frag_off +
		    bpf_htons((64 << 8) | IPPROTO_UDP) +
		    (saddr & 0xffff) + (saddr >> 16) + (daddr & 0xffff) + (daddr >> 16);

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/*
 * Resize the frame to headers + len payload bytes: at the tail, or else
 * (growing only) at the head.  Frames backed by an skb, as on veth or with
 * generic XDP, often have no tailroom but always XDP_PACKET_HEADROOM in
 * front; the headers (kept: the rewrite below leaves some fields as they
 * were) move there through the bounce buffer, and the payload area is
 * filled afterwards.  Not for a payload that stays in place in the frame.
 */
static __always_inline int spin_frame_fit(struct xdp_md *xdp, struct spin_ctx *c, __u32 len)
{
	int delta = (int)(SPIN_PAY_OFF + len) -
		    (int)(spin_xdp_end(xdp) - spin_xdp_data(xdp));

	if (!delta || !bpf_xdp_adjust_tail(xdp, delta))
		return 0;
	if (delta < 0 || bpf_xdp_load_bytes(xdp, 0, c->bounce, SPIN_PAY_OFF) ||
	    bpf_xdp_adjust_head(xdp, -delta))
		return -1;
	return bpf_xdp_store_bytes(xdp, 0, c->bounce, SPIN_PAY_OFF) ? -1 : 0;
}

/* a + b in one's complement (the end-around carry) */
static __always_inline __u32 spin_csum_add(__u32 a, __u32 b)
{
	__u32 t = a + b;

	return t + (t < b);
}

/*
 * The one's-complement sum (16 bits, folded) of the frame's UDP datagram and
 * its pseudo-header: 0xffff when its checksum field is right (or, with the
 * field 0, the checksum is ~ of it).  0 if it cannot be computed.  The
 * datagram goes through the per-CPU bounce buffer (bpf_csum_diff takes at
 * most 512 bytes at a time).  Only in the runtime program.
 */
static __noinline __u32 spin_udp_sum(struct xdp_md *xdp)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(ip + 1);
	/* the key in read-only memory and the running sum in the context,
	 * not on the stack: this frame ends the deepest call chain
	 * (spin_rx, spin_default, spin_sack) */
	struct spin_ctx *c = bpf_map_lookup_elem(&spin_ctx, (const void *)&spin_slot_keys[0]);
	__u32 ulen, padded, sum;
	__s64 s;

	if (!c || (void *)(udp + 1) > end)
		return 0;
	ulen = bpf_ntohs(udp->len);
	SPIN_U16(ulen);
	if (ulen > 1500 - 20)
		return 0;
	ulen &= 2047;	/* (the verifier keeps this bound) */
	if (ulen < sizeof(*udp))
		return 0;
	c->csum = spin_csum_add(spin_csum_add(ip->saddr, ip->daddr),
				(__u32)bpf_htons(IPPROTO_UDP) + udp->len);
	if (bpf_xdp_load_bytes(xdp, SPIN_HDR_OFF - sizeof(*udp), c->bounce, ulen))
		return 0;
	/* an odd tail is summed zero-padded */
	c->bounce[ulen & 2047] = 0;
	c->bounce[(ulen + 1) & 2047] = 0;
	c->bounce[(ulen + 2) & 2047] = 0;
	padded = (ulen + 3) & ~3u;
	for (int i = 0; i < 3; i++) {
		__u32 off = i * 512, n;

		if (off >= padded)
			break;
		n = padded - off;
		if (n > 512)
			n = 512;
		if (n < 4)	/* (never: for the verifier) */
			break;
		s = bpf_csum_diff(NULL, 0, (__be32 *)(c->bounce + off), n, 0);
		if (s < 0)
			return 0;
		c->csum = spin_csum_add(c->csum, (__u32)s);
	}
	sum = c->csum;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* The UDP checksum of a header-only frame (udp: its UDP header, 8 bytes
 * before the sPIN header, in bounds): inline. */
static __always_inline void spin_csum_hdr_only(struct iphdr *ip, struct udphdr *udp)
{
	__u64 sum = (__u64)ip->saddr + ip->daddr + bpf_htons(IPPROTO_UDP) + udp->len;
	__s64 s;

	udp->check = 0;
	s = bpf_csum_diff(NULL, 0, (__be32 *)udp, sizeof(*udp) + sizeof(struct spin_hdr), 0);
	if (s < 0)
		return;
	sum += (__u32)s;
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	udp->check = (__u16)~sum ?: 0xffff;
}

/* A handler put with ct PTL_LOCAL_ME_CT was sent: count it on entry *me
 * (a map value: no stack slot for the key). */
static __always_inline void spin_me_ct_put(const __u32 *me)
{
	struct spin_me_ct *ct = bpf_map_lookup_elem(&spin_me_ct, me);

	if (ct)
		ct->puts++;
}

/*
 * Turn this frame into the message a handler put (or an ACK, or a get's
 * REPLY, or a negative ACK/REPLY, counted as nacks_sent): resize it, fill the payload, rewrite Ethernet/IPv4/UDP/sPIN for
 * the target peer and send it with XDP_TX (same interface) or redirect.  A
 * put from host longer than one packet, or longer than this frame can grow,
 * is handed to the host instead (a longer REPLY never comes here:
 * spin_rx_get hands it to the host).
 */
static __always_inline int spin_do_put(struct xdp_md *xdp, struct spin_ctx *c,
				       struct spin_cfg *cfg, struct spin_stats *st,
				       struct spin_put_req *r)
{
	void *data, *end;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	struct spin_hdr *sh;
	struct spin_peer *peer;
	__u32 len = r->len, rank = r->target_rank, src = r->src, id;
	__u64 src_off = r->src_off;
	__be16 tot_len;
	__u16 csum;
	int delta;

	if (r->kind == SPIN_PUT_HOST && len > SPIN_MAX_SEG)
		goto to_host;
	if (len > SPIN_MAX_SEG)
		return spin_drop(st, SPIN_DROP_PUT_FAILED);
	peer = bpf_map_lookup_elem(&spin_peers, &rank);
	if (!peer || !peer->valid)
		return spin_drop(st, SPIN_DROP_NO_PEER);

	/* payload that is elsewhere in this frame moves through scratch */
	if (SPIN_LEN_NZ(len) && src == SPIN_SRC_PACKET && src_off != SPIN_PAY_OFF) {
		SPIN_LEN_CLAMP(len, SPIN_MAX_SEG);
		if (bpf_xdp_load_bytes(xdp, src_off, c->scratch, len))
			return spin_drop(st, SPIN_DROP_PUT_FAILED);
		src = SPIN_SRC_SCRATCH;
	}
	if (src == SPIN_SRC_PACKET) {
		/* the payload stays where it is: only the tail may change */
		delta = (int)(SPIN_PAY_OFF + len) -
			(int)(spin_xdp_end(xdp) - spin_xdp_data(xdp));
		if (delta && bpf_xdp_adjust_tail(xdp, delta))
			return spin_drop(st, SPIN_DROP_PUT_FAILED);
	} else if (spin_frame_fit(xdp, c, len)) {
		/* no room in this frame: a put from host goes as a long one */
		if (r->kind == SPIN_PUT_HOST)
			goto to_host;
		return spin_drop(st, SPIN_DROP_PUT_FAILED);
	}
	if (src == SPIN_SRC_SCRATCH && SPIN_LEN_NZ(len)) {
		SPIN_LEN_CLAMP(len, SPIN_MAX_SEG);
		if (bpf_xdp_store_bytes(xdp, SPIN_PAY_OFF, c->scratch, len))
			return spin_drop(st, SPIN_DROP_PUT_FAILED);
	}
	if (src == SPIN_SRC_HOST && spin_host_to_frame(xdp, SPIN_PAY_OFF, src_off, len, c->bounce))
		return spin_drop(st, SPIN_DROP_PUT_FAILED);

	data = spin_xdp_data(xdp);
	end = spin_xdp_end(xdp);
	eth = data;
	ip = (void *)(eth + 1);
	udp = (void *)(ip + 1);
	sh = (void *)(udp + 1);
	if ((void *)(sh + 1) > end)
		return spin_drop(st, SPIN_DROP_PUT_FAILED);

	tot_len = bpf_htons(20 + 8 + sizeof(*sh) + len);
	csum = spin_ip_csum(ip, tot_len, peer->src_ip, peer->ip);
	__builtin_memcpy(eth->h_dest, peer->mac, 6);
	__builtin_memcpy(eth->h_source, peer->src_mac, 6);
	ip->saddr = peer->src_ip;
	ip->daddr = peer->ip;
	ip->tot_len = tot_len;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->check = csum;
	if (!SPIN_SET(cfg))
		return spin_drop(st, SPIN_DROP_PUT_FAILED);
	udp->source = cfg->port;
	udp->dest = peer->port;
	udp->len = bpf_htons(8 + sizeof(*sh) + len);
	udp->check = 0;

	if (r->kind >= SPIN_PUT_ACK) {
		/* an ack or a get reply carries the acknowledged message's /
		 * the get's id and fields */
		id = r->ack_msg_id;
		sh->op = r->kind == SPIN_PUT_ACK ? SPIN_OP_ACK :
			 r->kind == SPIN_PUT_SACK ? SPIN_OP_SACK : SPIN_OP_REPLY;
		sh->flags = 0;
	} else {
		/* per-CPU id space: no shared cache line on the fast path */
		id = ((bpf_get_smp_processor_id() + 1) << 24) | (c->seq++ & 0xffffff);
		sh->op = SPIN_OP_PUT;
		sh->flags = bpf_htons(r->kind == SPIN_PUT_DEVICE ? SPIN_F_FROM_DEVICE
								  : SPIN_F_FROM_HOST);
	}
	sh->version = SPIN_VERSION;
	sh->seg_size = bpf_htons(len ? len : SPIN_MAX_SEG);
	sh->job_key = bpf_htonl(cfg->job_key);
	sh->msg_id = bpf_htonl(id);
	sh->match_bits = bpf_cpu_to_be64(r->match_bits);
	sh->msg_len = bpf_htonl(len);
	sh->pkt_off = 0;
	sh->remote_off = bpf_cpu_to_be64(r->remote_off);
	sh->hdr_data = bpf_cpu_to_be64(r->hdr_data);
	if (r->kind >= SPIN_PUT_ACK) {
		sh->user_hdr[0] = bpf_cpu_to_be64(r->ack_mlength);
		sh->user_hdr[1] = bpf_cpu_to_be64(r->ack_fail);
		sh->user_hdr[2] = bpf_cpu_to_be64(r->ack_list);
		/* an ACK's range ack (wire.h) rides in user_ptr */
		sh->user_hdr[3] = r->kind == SPIN_PUT_ACK ? bpf_cpu_to_be64(r->user_ptr) : 0;
	} else {
		/* a handler's put 0: its user header words */
		sh->user_hdr[0] = bpf_cpu_to_be64(c->put0_uh[0]);
		sh->user_hdr[1] = bpf_cpu_to_be64(c->put0_uh[1]);
		sh->user_hdr[2] = bpf_cpu_to_be64(c->put0_uh[2]);
		sh->user_hdr[3] = bpf_cpu_to_be64(c->put0_uh[3]);
	}
	/* from the process of the portal the frame names (pt_index's high
	 * byte: wire.h), to the target's process (spin_peer.slot); each
	 * statement reads what it needs again: the callers of this have no
	 * registers or stack to spare for it (docs/design.md, "Many Portals
	 * processes per interface") */
	sh->src_rank = bpf_htonl(cfg->proc_rank[*(__u8 *)&sh->pt_index & (SPIN_MAX_PROCS - 1)]);
	sh->src_pid = bpf_htonl(cfg->proc_pid[*(__u8 *)&sh->pt_index & (SPIN_MAX_PROCS - 1)]);
	*(__u8 *)&sh->pt_index = (__u8)peer->slot;
	/* the job's tag over all of the above (wire.h, "Authenticator") */
	sh->auth_tag = spin_auth_frame_tag(sh);
	/* answers carry a checksum (the receiving runtime checks it); a
	 * handler's device put does not (best-effort, and a second pass
	 * over its bytes) */
	if (r->kind >= SPIN_PUT_ACK && !len) {
		spin_csum_hdr_only(ip, udp);
	}
	else if (r->kind >= SPIN_PUT_ACK) {
		__u32 sum = spin_udp_sum(xdp);

		data = spin_xdp_data(xdp);
		end = spin_xdp_end(xdp);
		udp = data + sizeof(struct ethhdr) + sizeof(struct iphdr);
		if ((void *)(udp + 1) > end)
			return spin_drop(st, SPIN_DROP_PUT_FAILED);
		if (sum)
			udp->check = (__u16)~sum ?: 0xffff;
	}
	if (st) {
		if (r->kind == SPIN_PUT_DEVICE)
			st->tx_device++;
		else if (r->kind >= SPIN_PUT_ACK &&
			 ((r->ack_fail >= SPIN_FAIL_PT_DISABLED && r->ack_fail <= SPIN_FAIL_NO_TARGET) ||
			  r->ack_fail == SPIN_FAIL_QUEUE_FULL))
			st->nacks_sent++;	/* a negative ack or reply: refused */
		else if (r->kind == SPIN_PUT_ACK)
			st->acks_sent++;
		else if (r->kind == SPIN_PUT_SACK)
			st->sacks_sent++;
		else if (r->kind == SPIN_PUT_REPLY)
			st->replies_sent++;
		else
			st->tx_host_inline++;
	}
	if (!peer->ifindex || peer->ifindex == xdp->ingress_ifindex)
		return XDP_TX;
	return bpf_redirect(peer->ifindex, 0);
to_host:
	/* the owning process sends it (SPIN_EV_PUT_FROM_HOST) */
	spin_post(xdp, st, SPIN_EV_PUT_FROM_HOST, 0, c, NULL, r);
	if (st)
		st->tx_host_queued++;
	return XDP_DROP;
}

/*
 * The queued puts of a fan-out that act on host memory are taken here, in
 * the finish stage, not in spin_tc: a get to host is recorded in
 * spin_hgets (where its reply goes), a put from host longer than a packet
 * is posted to its process's ring (SPIN_EV_PUT_FROM_HOST).  Both for the
 * stage's slot only (q.slot: spin_fin_slot in a handler program's stage,
 * a constant of the program; the entry's in the runtime's own), and only
 * for a window address of that slot: one of another slot is neither
 * recorded nor posted (its ticket is cleared, so spin_tc counts it
 * put_failed).  A handler writes spin_putq and spin_ctx, but not the
 * stage's slot, nor spin_hgets (which no handler program holds), so what
 * it writes there cannot make the runtime deposit into another slot's
 * window or ask another slot's process to send (docs/security.md,
 * "Handlers").
 */
struct spin_fo_q {
	__u64	t0;		/* the first queued put's ticket */
	__u32	cpu;		/* this CPU (the spin_putq element written) */
	__u32	id0;		/* message id sequence of the first (as spin_tc's) */
	__u32	slot;		/* the stage's slot */
	__u32	pt;		/* the runtime portal the requests name */
	__u64	seal;		/* the fan-out's (spin_fanout_meta.seal) */
};

static int spin_fo_host_cb(__u32 k, struct spin_fo_q *q)
{
	__u64 t = q->t0 + k;
	__u32 i = (__u32)t & (SPIN_PUTQ_SIZE - 1), mk;
	struct spin_putq_ent *e = bpf_map_lookup_elem(&spin_putq, &i);
	struct spin_stats *st;
	struct spin_event *ev;
	struct spin_me *me;
	void *rb;

	if (!e || e->ticket != SPIN_PUTQ_TICKET(q->cpu, t))
		return 0;
	/* sealed for this frame: spin_tc sends (or passes over) only the
	 * entries with the frame's seal */
	e->seal = q->seal;
	if (e->r.kind != SPIN_PUT_HGET && e->r.src != SPIN_SRC_HOST)
		return 0;	/* spin_tc's: from the frame or the copied bytes */
	mk = e->me;
	me = bpf_map_lookup_elem(&spin_me, &mk);
	if (SPIN_WIN_SLOT(e->r.src_off) != q->slot || !me) {
		/* another slot's window: put_failed (unsealed: a ticket of 0
		 * is CPU 0's first) */
		e->ticket = 0;
		e->seal = 0;
		return 0;
	}
	if (e->r.kind == SPIN_PUT_HGET) {
		/* key and record built in the entry's bytes (a GET has no
		 * payload; nothing else runs on this CPU meanwhile): the
		 * stage's stack is spent */
		struct spin_hget_key *hk = (void *)e->data;
		struct spin_hget *hv = (void *)(e->data + sizeof(*hk)), *old;

		hk->rank = e->r.target_rank;
		hk->msg_id = ((q->cpu + 1) << 24) | ((q->id0 + k) & 0xffffff);
		hv->host_off = e->r.src_off;
		hv->me_seq = me->seq;
		hv->seen = 0;
		hv->bytes = 0;
		hv->len = e->r.len;
		hv->me = mk;
		hv->ct = e->r.ct;
		hv->slot = q->slot;
		hv->pad = 0;
		old = bpf_map_lookup_elem(&spin_hgets, hk);
		/* never over another slot's get in flight (its reply would
		 * come here) */
		if ((old && old->slot != q->slot) || bpf_map_update_elem(&spin_hgets, hk, hv, BPF_ANY)) {
			e->ticket = 0;
			e->seal = 0;
		}
		return 0;
	}
	/* a put from host longer than a packet: the stage's process sends it */
	st = spin_stats_get();
	rb = spin_ring_of(q->pt);
	ev = rb ? bpf_ringbuf_reserve(rb, sizeof(*ev), 0) : NULL;
	if (!ev) {
		spin_drop_count(st, SPIN_DROP_EV_LOST);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = SPIN_EV_PUT_FROM_HOST;
	ev->pt_index = q->pt;
	ev->me = mk;
	ev->owner_pid = me->owner_pid;
	ev->user_ptr = me->user_ptr;
	ev->timestamp_ns = bpf_ktime_get_ns();
	ev->put = e->r;
	spin_rb_submit(ev, spin_rb_flags());
	if (st) {
		st->events++;
		st->tx_host_queued++;
	}
	return 0;
}

/*
 * Fan-out (more than one put from an invocation): put 0 has been dealt with
 * by spin_do_put (verdict: XDP_TX or a redirect when it is in the frame;
 * XDP_DROP when it failed or went to the host), puts 1.. are in spin_putq.
 * The metadata saying where goes in front of the frame and the frame to
 * the stack, where spin_tc (TC ingress) sends put 0 and every queued put.
 * Without spin_tc, or without room for the metadata, only put 0 goes out
 * and the queued ones count as put_failed.
 */
static __always_inline int spin_fanout(struct xdp_md *xdp, struct spin_ctx *c,
				       struct spin_cfg *cfg, struct spin_stats *st, int verdict,
				       const int stage)
{
	struct spin_fanout_meta *m;
	void *data;
	__u32 n = c->n_puts - 1, ifindex0, slot;

	if (n > SPIN_MAX_PUTS - 1)
		n = SPIN_MAX_PUTS - 1;
	ifindex0 = xdp->ingress_ifindex;
	if (verdict == XDP_REDIRECT) {
		__u32 rank = c->put[0].target_rank;
		struct spin_peer *peer = bpf_map_lookup_elem(&spin_peers, &rank);

		if (peer && peer->ifindex)
			ifindex0 = peer->ifindex;
	} else if (verdict != XDP_TX) {
		ifindex0 = 0;
	}
	if (!(cfg->flags & SPIN_CFG_F_FANOUT) ||
	    bpf_xdp_adjust_meta(xdp, -(int)sizeof(*m)))
		goto fail;
	m = (void *)(long)xdp->data_meta;
	data = spin_xdp_data(xdp);
	if ((void *)(m + 1) > data)
		goto fail;
	m->magic = SPIN_FANOUT_MAGIC;
	m->my_rank = cfg->my_rank;
	m->ifindex0 = ifindex0;
	m->n = n;
	m->cpu = bpf_get_smp_processor_id();
	m->t0 = (__u32)c->putq_t0;
	m->id0 = c->seq;
	m->seal = 0;	/* (only a finish stage seals queued puts) */
	/* the process the copies speak for: a handler program's stage's own
	 * slot, whatever spin_ctx says */
	slot = SPIN_PT_SLOT(c->pt) & (SPIN_MAX_PROCS - 1);
	if (spin_fin_slot < SPIN_MAX_PROCS)
		slot = spin_fin_slot & (SPIN_MAX_PROCS - 1);
	{
		const struct spin_hdr *sh = data + SPIN_HDR_OFF;
		struct spin_fo_q q = {
			.t0 = c->putq_t0, .cpu = m->cpu, .id0 = c->seq, .slot = slot,
			/* the frame's portal (put 0's target's, or the
			 * message's), in the stage's slot: as spin_tc had it */
			.pt = SPIN_PT_OF(slot, ((void *)(sh + 1) <= spin_xdp_end(xdp) ?
						bpf_ntohs(sh->pt_index) : c->pt) &
					       ((1u << SPIN_PT_SLOT_SHIFT) - 1)),
		};

		m->slot = slot;
		/* (only the finish stage: the default path runs no handler,
		 * so it has no queued puts).  The seal: random, never 0, in
		 * the entries of this stage's slot's queue (spin_putq is the
		 * slot's own, lib/handler.c) and in the metadata only */
		if (stage) {
			q.seal = ((__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32()) | 1;
			m->seal = q.seal;
			bpf_loop(n, spin_fo_host_cb, &q, 0);
		}
	}
	/* message ids of the queued puts: the ones after put 0's */
	c->seq += n;
	if (st)
		st->fanout++;
	return XDP_PASS;
fail:
	if (st)
		st->drops[SPIN_DROP_PUT_FAILED] += n;
	return verdict;
}

/* The frame's sPIN header flags (SPIN_F_*, host order), 0 if it has none. */
static __always_inline __u32 spin_hdr_flags(struct xdp_md *xdp)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;

	return (void *)(sh + 1) <= end ? bpf_ntohs(sh->flags) : 0;
}

/* Record in message id's slot of its source's duplicate window d what
 * became of it (wire.h, struct spin_dedup), if the slot is still the
 * message's. */
static __always_inline void spin_dd_set(struct spin_dedup *d, __u32 id, __u32 state, __u32 fail,
					__u32 list, __u32 len)
{
	__u32 k = id & (SPIN_DEDUP_SLOTS - 1);

	if (!d || d->id[k] != id)
		return;
	d->len[k] = len;
	d->out[k] = SPIN_DD_OUT(id, state, fail, list);
}

/* The same for message (rank, id), its window looked up. */
static __always_inline void spin_dd_note(__u32 rank, __u32 id, __u32 state, __u32 fail,
					 __u32 list, __u32 len)
{
	spin_dd_set(bpf_map_lookup_elem(&spin_dedup, &rank), id, state, fail, list, len);
}

struct spin_range_q {
	struct spin_dedup *d;
	__u32 id;
	__u64 bits;
};

/* bpf_loop: bit i when message id - 1 - i completed here without failure */
static int spin_range_cb(__u32 i, struct spin_range_q *q)
{
	__u32 id = q->id - 1 - i, k = id & (SPIN_DEDUP_SLOTS - 1), out;

	if (q->d->id[k] != id)
		return 0;
	out = q->d->out[k];
	if (SPIN_DD_OUT_ID(out) == (id & 0xffff) && SPIN_DD_OUT_STATE(out) == SPIN_DD_DONE &&
	    !SPIN_DD_OUT_FAIL(out))
		q->bits |= 1ull << (i & 63);
	return 0;
}

/* A probe's range ack (wire.h): bit i when message id - 1 - i of the
 * source whose window d is completed here without failure. */
static __noinline __u64 spin_range_of(struct spin_dedup *d, __u32 id)
{
	struct spin_range_q q = { .d = d, .id = id };

	if (!d)
		return 0;
	bpf_loop(64, spin_range_cb, &q, 0);
	return q.bits;
}

/* Turn this frame into an answer to the reliable message (rank, id) it
 * belongs to: an ACK (kind SPIN_PUT_ACK; a nack if fail is one) or a SACK
 * (SPIN_PUT_SACK, len bitmap bytes in c->scratch), wire.h. */
static __always_inline int spin_answer_range(struct xdp_md *xdp, struct spin_ctx *c,
					     struct spin_cfg *cfg, struct spin_stats *st,
					     __u32 kind, __u32 len, __u32 rank, __u32 id,
					     __u32 fail, __u32 mlength, __u32 list, __u64 range)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;
	struct spin_put_req *r = &c->put[0];

	if ((void *)(sh + 1) > end)
		return XDP_DROP;
	r->kind = kind;
	r->len = len;
	r->src = len ? SPIN_SRC_SCRATCH : SPIN_SRC_PACKET;
	r->src_off = SPIN_PAY_OFF;
	r->target_rank = rank;
	r->match_bits = bpf_be64_to_cpu(sh->match_bits);
	r->remote_off = bpf_be64_to_cpu(sh->remote_off);
	r->hdr_data = bpf_be64_to_cpu(sh->hdr_data);
	r->user_ptr = range;
	r->ack_req = 0;
	r->ct = 0;
	r->ack_msg_id = id;
	r->ack_fail = fail;
	r->ack_mlength = mlength;
	r->ack_list = list;
	r->pad = 0;
	return spin_do_put(xdp, c, cfg, st, r);
}

static __always_inline int spin_answer(struct xdp_md *xdp, struct spin_ctx *c,
				       struct spin_cfg *cfg, struct spin_stats *st, __u32 kind,
				       __u32 len, __u32 rank, __u32 id, __u32 fail, __u32 mlength,
				       __u32 list)
{
	return spin_answer_range(xdp, c, cfg, st, kind, len, rank, id, fail, mlength, list, 0);
}

/* SACKs are built by the runtime program only: a call from a handler
 * program would add a stack frame to handlers that use all 512 bytes.  A
 * handler entry's message gets its SACK when the packet that asks is a
 * duplicate (spin_rx), at worst one retransmission timer later. */
#define SPIN_SACK_GROW	192	/* bytes a SACK may be longer than the packet it
				 * answers (XDP headroom 256 - struct xdp_frame) */
struct spin_sack_q {
	struct spin_msg *m;
	struct spin_ctx *c;
	struct spin_msg_chunk_key ck;
	__u32 npkts, nwords, w0, n, maxw;
};

/* The bitmap word with full packets [w*64, w*64+64) of the message. */
static __always_inline __u64 spin_sack_full(const struct spin_sack_q *q, __u32 w)
{
	__u32 left = q->npkts - w * 64;

	return left >= 64 ? ~0ull : (1ull << (left & 63)) - 1;
}

/* bpf_loop: inline bitmap word w; w0 ends at the first word with a gap
 * (or past the last word checked) */
static int spin_sack_gap_cb(__u32 w, struct spin_sack_q *q)
{
	if (w >= q->nwords || q->m->bitmap[w & (SPIN_BITMAP_WORDS - 1)] != spin_sack_full(q, w))
		return 1;
	q->w0 = w + 1;
	return 0;
}

/* The message's chunk i (1..), or NULL if it has none (gone, or another
 * message's: a gap, as far as a SACK can tell). */
static __always_inline struct spin_msg_chunk *spin_sack_chunk(struct spin_sack_q *q, __u32 i)
{
	struct spin_msg_chunk *ch;

	q->ck.chunk = i;
	ch = bpf_map_lookup_elem(&spin_msg_bits, &q->ck);
	return ch && ch->gen == q->m->gen ? ch : NULL;
}

/* bpf_loop: chunk i + 1, as spin_sack_gap_cb */
static int spin_sack_chunk_gap_cb(__u32 i, struct spin_sack_q *q)
{
	__u32 c = i + 1, w = c * SPIN_BITMAP_WORDS;
	struct spin_msg_chunk *ch;

	if (w >= q->nwords)
		return 1;
	ch = spin_sack_chunk(q, c);
	if (!ch)
		return 1;	/* w0 == w: all of it is a gap */
	for (__u32 j = 0; j < SPIN_BITMAP_WORDS; j++) {
		if (w + j >= q->nwords || ch->bitmap[j] != spin_sack_full(q, w + j))
			return 1;
		q->w0 = w + j + 1;
	}
	return 0;
}

/* Bitmap word w of the message (0 in a chunk it does not have). */
static __noinline __u64 spin_sack_word(struct spin_sack_q *q, __u32 w)
{
	struct spin_msg_chunk *ch;

	if (w < SPIN_BITMAP_WORDS)
		return q->m->bitmap[w & (SPIN_BITMAP_WORDS - 1)];
	ch = spin_sack_chunk(q, w / SPIN_BITMAP_WORDS);
	return ch ? ch->bitmap[w & (SPIN_BITMAP_WORDS - 1)] : 0;
}

/* bpf_loop: copy bitmap word w0 + i into the SACK's payload (offsets from
 * i, which the verifier does not know: it checks the callback once, not
 * once per word) */
static int spin_sack_copy_cb(__u32 i, struct spin_sack_q *q)
{
	__u32 w = q->w0 + i;

	if (w >= q->nwords || i >= q->maxw)
		return 1;
	*(__u64 *)(q->c->scratch + (i & 255) * 8) = spin_sack_word(q, w);
	q->n = (i + 1) * 8;
	return 0;
}

/*
 * A reliable message is still incomplete after a packet that asked
 * (SPIN_F_SACK_REQ): turn this frame into a SACK (wire.h) to its sender
 * with the message's packet bitmap from the first word with a gap on (in
 * its inline bitmap or in a chunk: a missing chunk reads as a gap).
 * Out of line: it runs once per loss, not per packet.
 */
static __noinline int spin_sack(struct xdp_md *xdp, struct spin_ctx *c, struct spin_cfg *cfg,
				struct spin_stats *st, struct spin_msg *m)
{
	void *data = spin_xdp_data(xdp), *end = spin_xdp_end(xdp);
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;
	struct spin_sack_q q = {};
	__u32 seg, n;

	if (!c || !m || !cfg || (void *)(sh + 1) > end)
		return XDP_DROP;
	seg = m->seg;
	if (!seg)
		return XDP_DROP;
	q.m = m;
	q.c = c;
	q.ck.src_rank = c->key.src_rank;
	q.ck.msg_id = c->key.msg_id;
	q.npkts = (m->msg_len + seg - 1) / seg;
	q.nwords = (q.npkts + 63) / 64;
	q.w0 = 0;
	bpf_loop(SPIN_BITMAP_WORDS, spin_sack_gap_cb, &q, 0);
	if (q.w0 >= SPIN_BITMAP_WORDS)
		bpf_loop(SPIN_MSG_MAX_CHUNKS - 1, spin_sack_chunk_gap_cb, &q, 0);
	if (q.w0 >= q.nwords)
		return XDP_DROP;	/* complete meanwhile: its ACK goes out */
	/* as many words as the frame can take: this packet's payload and
	 * SPIN_SACK_GROW bytes more (a frame built from an skb, as on veth,
	 * grows only into its headroom) */
	q.maxw = (c->pay_len + SPIN_SACK_GROW) / 8;
	if (q.maxw > SPIN_MAX_SEG / 8)
		q.maxw = SPIN_MAX_SEG / 8;
	bpf_loop(SPIN_MAX_SEG / 8, spin_sack_copy_cb, &q, 0);
	/* the length through memory: the verifier checks the rest once for
	 * any length, not once for each it can tell apart */
	c->put[0].len = q.n;
	n = *(volatile __u32 *)&c->put[0].len;
	if (n > SPIN_MAX_SEG)
		return XDP_DROP;
	return spin_answer(xdp, c, cfg, st, SPIN_PUT_SACK, n, c->key.src_rank, c->key.msg_id,
			   0, q.npkts, q.w0);
}

/*
 * Everything after the handlers: counters, the completion event, use-once
 * unlink, freeing the message state, and the put.  In the runtime only:
 * spin_rx's default path for entries without handlers, and the finish
 * stage (spin_finish) every handler program tail-calls.  With sack 0 (the
 * finish stage) an incomplete message's packet that asks for a SACK gets
 * none, as before handler programs ended in the stage: its SACK goes out
 * when its duplicate comes (spin_rx).  With note 0 a completed reliable
 * message's outcome is not written to the duplicate window here: the
 * caller holds the window and writes it (spin_rx, spin_note_outcome).
 */
static __always_inline int spin_do_finish(struct xdp_md *xdp, struct spin_ctx *c,
					  struct spin_stats *st, struct spin_cfg *cfg,
					  const int sack, int note)
{
	struct spin_me *me;
	__u32 k = c->me, fl = spin_hdr_flags(xdp);
	__u32 fail = c->msg_dropped ? SPIN_FAIL_DROPPED : c->fail ? SPIN_FAIL_HANDLER : SPIN_FAIL_OK;
	int verdict = XDP_DROP;

	if (c->drop_reason) {
		spin_drop_count(st, c->drop_reason - 1);
		return XDP_DROP;
	}
	if (c->pay_rc == SPIN_RC_DROP || c->pay_rc == SPIN_RC_DROP + SPIN_RC_PENDING)
		spin_drop_count(st, SPIN_DROP_HANDLER_DROP);
	if ((c->phases & SPIN_PH_HEADER) && c->msg_dropped)
		spin_drop_count(st, SPIN_DROP_MSG_DROPPED);
	me = bpf_map_lookup_elem(&spin_me, &k);
	if (c->done && me) {
		struct spin_me_ct *ct = bpf_map_lookup_elem(&spin_me_ct, &k);

		if (ct) {
			if (c->fail || c->msg_dropped)
				ct->failure++;
			else
				ct->success++;
			ct->bytes += c->mlength;
		}
		if (!c->msg_dropped) {
			if (st)
				st->msgs_completed++;
			if (!(me->options & (SPIN_ME_EVENT_COMM_DISABLE | SPIN_ME_EVENT_SUCCESS_DISABLE)) ||
			    c->fail)
				spin_post(xdp, st, SPIN_EV_PUT, c->fail ? SPIN_FAIL_HANDLER : SPIN_FAIL_OK,
					  c, me, NULL);
		}
		if ((me->options & SPIN_ME_USE_ONCE) &&
		    __sync_val_compare_and_swap(&me->state, SPIN_ME_CLAIMED, SPIN_ME_FREE) == SPIN_ME_CLAIMED)
			spin_post(xdp, st, SPIN_EV_AUTO_UNLINK, 0, c, me, NULL);
		/* a retransmission of it is answered from the window: only
		 * a reliable message's is (spin_dup, spin_get_again and a
		 * probe's range ack read the outcome for SPIN_F_REL
		 * packets only), so others skip the window's hash lookup */
		if ((fl & SPIN_F_REL) && note)
			spin_dd_note(c->key.src_rank, c->key.msg_id, SPIN_DD_DONE, fail,
				     me->list, c->mlength);
	}
	/* the message is complete: its state goes now (a late duplicate
	 * packet is caught by the per-source id window when it arrives) */
	if (c->done && c->multi)
		spin_msg_free(&c->key);
	if (c->n_puts && c->put[0].kind != SPIN_PUT_NONE && !c->msg_dropped) {
		/* a reliable sender gets its ack when it retransmits: the
		 * duplicate is answered from the window */
		if (c->done && (fl & SPIN_F_ACK_REQ))
			spin_drop_count(st, SPIN_DROP_ACK_LOST);
		verdict = spin_do_put(xdp, c, cfg, st, &c->put[0]);
		if (verdict != XDP_DROP && c->put[0].ct == SPIN_CT_LOCAL_ME)
			spin_me_ct_put(&c->me);
		if (c->n_puts > 1)
			verdict = spin_fanout(xdp, c, cfg, st, verdict, !sack);
	} else if (c->n_puts > 1 && !c->msg_dropped) {
		/* put 0 is empty (a handler get came first): the queued ones */
		verdict = spin_fanout(xdp, c, cfg, st, XDP_DROP, !sack);
	} else if (c->done && me &&
		   (((fl & SPIN_F_REL) && (c->multi || (fl & (SPIN_F_SACK_REQ | SPIN_F_ACK_REQ)))) ||
		    ((fl & SPIN_F_ACK_REQ) && !c->msg_dropped))) {
		/* (a single-packet reliable message that does not ask is
		 * acknowledged in bulk, when a probe asks: spin_dup) */
		__u64 range = 0;

		/* a single-packet message that asks for a SACK is a probe
		 * riding on a new message (the initiator's every 32nd quiet
		 * one): its ACK carries the range ack of the ids before it,
		 * as a duplicate probe's does (spin_dup) */
		if (!c->multi && (fl & SPIN_F_REL) && (fl & SPIN_F_SACK_REQ))
			range = spin_range_of(bpf_map_lookup_elem(&spin_dedup, &c->key.src_rank),
					      c->key.msg_id);
		/* the completing packet becomes the acknowledgement */
		verdict = spin_answer_range(xdp, c, cfg, st, SPIN_PUT_ACK, 0, c->key.src_rank,
					    c->key.msg_id, fail, c->mlength, me->list, range);
	} else if (sack && !c->done && c->multi && (fl & SPIN_F_REL) && (fl & SPIN_F_SACK_REQ)) {
		struct spin_msg *m = bpf_map_lookup_elem(&spin_msgs, &c->key);

		if (m)
			verdict = spin_sack(xdp, c, cfg, st, m);
	}
	return verdict;
}

#endif /* SPIN_RT_PROG */

#endif /* SPIN_RT_COMMON_BPF_H */
