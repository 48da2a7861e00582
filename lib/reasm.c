// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin: message reassembly, shared by spin_sock_recv_msg() (sock.c) and
 * spin_xsk_recv_msg() (xsk.c).  The receive calls feed it one valid packet
 * at a time (spin_reasm_pkt) until it has a message or an error for them.
 *
 *  - up to SPIN_REASM_PENDING messages are in progress at a time, keyed by
 *    (src_rank, msg_id), so any interleaving of that many is reassembled;
 *    a packet whose msg_len or seg_size differs from its message's first
 *    packet is ignored, and so is one the message already has (bitmap);
 *  - when the table is full, the least recently touched message is given
 *    up (counted in `stale`) if it saw no packet for SPIN_MSG_TIMEOUT_NS;
 *    otherwise the new message's packet is dropped: messages in progress
 *    win over new ones, as in the runtime's message table;
 *  - a single-packet message is delivered from the packet, without a slot;
 *    so is a GET (header only: 0 bytes, msg_len the requested length);
 *  - a message larger than the caller's buffer is reported (-SPIN_ENOSPC)
 *    at its first packet and, if there is room in the table, remembered so
 *    that its other packets are swallowed (counted: no bitmap, no data);
 *    one that completes in a later call with a smaller buffer is reported
 *    then and dropped;
 *  - with remember_done, delivered (or swallowed) messages are remembered
 *    for SPIN_TOMBSTONE_NS, as the runtime does (SPIN_REASM_DONE_RING keys,
 *    best effort), and their late duplicates are ignored; after that an id
 *    may be reused;
 *  - with d->direct, the first message that fits is assembled straight in
 *    the caller's buffer, others in memory of their own, copied out when
 *    they complete; spin_reasm_release() moves a partial message out of
 *    the buffer before the call returns.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <spin/spin.h>

#include "libspin_internal.h"

#define DONE_MS		(SPIN_TOMBSTONE_NS / 1000000)	/* as the runtime */
#define STALE_MS	(SPIN_MSG_TIMEOUT_NS / 1000000)	/* incomplete: given up */

uint64_t spin_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------- delivered messages -- */

static uint64_t key_of(uint32_t rank, uint32_t id)
{
	return ((uint64_t)rank << 32 | id) + 1;
}

static struct spin_reasm_done *done_slot(struct spin_reasm *r, uint64_t key)
{
	uint64_t x = key * 0x9e3779b97f4a7c15ull;

	return &r->done[(x >> 40) & (SPIN_REASM_DONE_RING - 1)];
}

/* Remember a delivered message, so that late duplicates are ignored. */
static void done_add(struct spin_reasm *r, uint32_t rank, uint32_t id)
{
	struct spin_reasm_done *d;

	if (!r->remember_done)
		return;
	d = done_slot(r, key_of(rank, id));
	d->key = key_of(rank, id);
	d->t_ms = spin_now_ms();
}

/* A message delivered less than DONE_MS ago (ids may be reused later, e.g.
 * by a restarted sender). */
static bool done_recent(struct spin_reasm *r, uint32_t rank, uint32_t id)
{
	uint64_t key = key_of(rank, id);
	struct spin_reasm_done *d = done_slot(r, key);

	return r->remember_done && d->key == key && spin_now_ms() - d->t_ms < DONE_MS;
}

/* ------------------------------------------------------ the table -- */

static void msg_free(struct spin_reasm *r, struct spin_reasm_msg *p)
{
	free(p->bitmap);
	if (p == r->in_buf)
		r->in_buf = NULL;	/* the data is the caller's buffer */
	else
		free(p->data);
	memset(p, 0, sizeof(*p));
}

void spin_reasm_free(struct spin_reasm *r)
{
	for (int i = 0; i < SPIN_REASM_PENDING; i++)
		msg_free(r, &r->msg[i]);
}

static struct spin_reasm_msg *msg_find(struct spin_reasm *r, uint32_t rank, uint32_t id)
{
	for (int i = 0; i < SPIN_REASM_PENDING; i++)
		if (r->msg[i].used && r->msg[i].src_rank == rank && r->msg[i].msg_id == id)
			return &r->msg[i];
	return NULL;
}

/* A free slot, or the least recently touched message's if it is stale;
 * NULL when the table is full of live messages. */
static struct spin_reasm_msg *msg_new(struct spin_reasm *r)
{
	struct spin_reasm_msg *old = NULL;

	for (int i = 0; i < SPIN_REASM_PENDING; i++) {
		if (!r->msg[i].used)
			return &r->msg[i];
		if (!old || r->msg[i].last_ms < old->last_ms)
			old = &r->msg[i];
	}
	if (spin_now_ms() - old->last_ms < STALE_MS)
		return NULL;
	msg_free(r, old);
	r->stale++;
	return old;
}

/* Start the message of first packet h (not a single-packet message that
 * fits) in free slot p.  Returns 0 or -SPIN_EFAIL. */
static int msg_start(struct spin_reasm *r, struct spin_reasm_msg *p,
		     const struct spin_reasm_dst *d, const struct spin_hdr *h,
		     const struct sockaddr_in *from)
{
	p->used = true;
	p->src_rank = ntohl(h->src_rank);
	p->msg_id = ntohl(h->msg_id);
	p->msg_len = ntohl(h->msg_len);
	p->seg = ntohs(h->seg_size);
	p->npkts = (uint32_t)(((uint64_t)p->msg_len + p->seg - 1) / p->seg);
	p->hdr = *h;
	p->hdr.pkt_off = 0;
	if (from)
		p->from = *from;
	if (p->msg_len > d->cap) {
		p->discard = true;	/* no bitmap, no data: packets are counted */
		return 0;
	}
	p->bitmap = calloc((p->npkts + 63) / 64, sizeof(uint64_t));
	if (d->direct && !r->in_buf) {
		/* straight into the caller's buffer */
		p->data = d->buf;
		r->in_buf = p;
	} else {
		p->data = malloc(p->msg_len);
	}
	if (!p->bitmap || !p->data) {
		msg_free(r, p);
		return spin_seterr(SPIN_EFAIL, "%s: out of memory for a %u-byte message",
				   r->who, ntohl(h->msg_len));
	}
	return 0;
}

/* ------------------------------------------------------- delivery -- */

void spin_reasm_release(struct spin_reasm *r)
{
	struct spin_reasm_msg *p = r->in_buf;
	uint8_t *data;

	if (!p)
		return;
	r->in_buf = NULL;
	data = malloc(p->msg_len);
	if (!data) {
		p->data = NULL;
		msg_free(r, p);		/* lost; counted as stale */
		r->stale++;
		return;
	}
	memcpy(data, p->data, p->msg_len);
	p->data = data;
}

/* A whole message to the caller (data may already be in d->buf). */
static int deliver(struct spin_reasm *r, const struct spin_reasm_dst *d,
		   const struct spin_hdr *h, const void *data, uint32_t len,
		   const struct sockaddr_in *from)
{
	if (data != d->buf) {
		spin_reasm_release(r);	/* a partial message there moves out */
		if (len)
			memcpy(d->buf, data, len);
	}
	if (d->h)
		*d->h = *h;
	if (d->from && from)
		*d->from = *from;
	return (int)len;
}

/* Record a packet of message p; deliver the message when it is complete. */
static int pkt_add(struct spin_reasm *r, const struct spin_reasm_dst *d,
		   struct spin_reasm_msg *p, uint32_t off, const void *payload, uint32_t len)
{
	uint32_t idx = off / p->seg;
	int ret;

	p->last_ms = spin_now_ms();
	if (p->discard) {
		/* swallowed (reported at its first packet); duplicates may
		 * end it early */
		if (++p->got >= p->npkts) {
			done_add(r, p->src_rank, p->msg_id);
			msg_free(r, p);
		}
		return SPIN_REASM_MORE;
	}
	if (p->bitmap[idx / 64] & (1ull << (idx % 64)))
		return SPIN_REASM_MORE;		/* duplicate packet */
	p->bitmap[idx / 64] |= 1ull << (idx % 64);
	memcpy(p->data + off, payload, len);
	if (++p->got < p->npkts)
		return SPIN_REASM_MORE;
	done_add(r, p->src_rank, p->msg_id);
	if (p->msg_len > d->cap)
		/* started by an earlier call with a larger buffer */
		ret = spin_seterr(SPIN_ENOSPC, "%s: message has %u bytes, buffer %zu; dropped",
				  r->who, p->msg_len, d->cap);
	else
		ret = deliver(r, d, &p->hdr, p->data, p->msg_len, &p->from);
	msg_free(r, p);
	return ret;
}

int spin_reasm_pkt(struct spin_reasm *r, const struct spin_reasm_dst *d,
		   const struct spin_hdr *h, const void *payload, uint32_t len,
		   const struct sockaddr_in *from)
{
	uint32_t rank = ntohl(h->src_rank), id = ntohl(h->msg_id);
	uint32_t msg_len = ntohl(h->msg_len), seg = ntohs(h->seg_size);
	uint32_t off = ntohl(h->pkt_off);
	struct spin_reasm_msg *p = msg_find(r, rank, id);
	int err;

	if (!p) {
		if (done_recent(r, rank, id))
			return SPIN_REASM_MORE;	/* duplicate of a delivered message */
		if (h->op == SPIN_OP_GET) {
			/* a request without payload: msg_len is the requested
			 * length, the caller sees 0 bytes */
			done_add(r, rank, id);
			return deliver(r, d, h, payload, 0, from);
		}
		if (len == msg_len && msg_len <= d->cap) {
			/* single-packet message: no table, no extra state */
			done_add(r, rank, id);
			return deliver(r, d, h, payload, len, from);
		}
		p = msg_new(r);
		if (p && (err = msg_start(r, p, d, h, from)))
			return err;
		if (msg_len > d->cap) {
			if (p)		/* its other packets are swallowed */
				(void)pkt_add(r, d, p, off, payload, len);
			return spin_seterr(SPIN_ENOSPC,
					   "%s: message %u from rank %u has %u bytes, buffer %zu; dropped",
					   r->who, id, rank, msg_len, d->cap);
		}
		if (!p)
			return SPIN_REASM_MORE;	/* table full of live messages: drop */
	} else if (p->msg_len != msg_len || p->seg != seg) {
		return SPIN_REASM_MORE;		/* inconsistent with the first packet */
	}
	return pkt_add(r, d, p, off, payload, len);
}
