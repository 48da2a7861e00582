// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin's Portals 4 layer: data movement and progress.
 *
 * Initiator: PtlPut/PtlGet/PtlAtomic/PtlFetchAtomic/PtlSwap build the
 * message straight into the AF_XDP socket's UMEM (spin_xsk_send); an
 * operation that waits for an ack or a reply is remembered by message id
 * (struct ptl_pending) until it arrives or times out.
 *
 * Target: entries whose buffer is in the host window are deposited by the
 * XDP runtime, which posts completions to its event ring; every other
 * packet that concerns this process (puts/gets to AF_XDP entries, atomics,
 * replies) arrives on the AF_XDP socket and is handled here.
 *
 * Progress: ptl_progress() drains both; it runs in every wait and poll call
 * (busy-polling for up to $SPIN_PTL_SPIN_US, default 1000 us, then
 * sleeping) and in a progress thread that sleeps in poll() on both fds
 * whenever nobody busy-polls.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

#include "ptl_internal.h"
#include "ptl_atomic.h"

static inline void spin_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

uint64_t ptl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* --------------------------------------------------- pending operations -- */

static int n_pending;
static bool timed(const struct ptl_pending *p)
{
	return p->deadline_ms && p->deadline_ms != UINT64_MAX;
}

/* p fails at ms unless answered (tick) */
static void set_deadline(struct ptl_ni *ni, struct ptl_pending *p, uint64_t ms)
{
	ni->n_timed += !timed(p);
	p->deadline_ms = ms;
}

struct ptl_pending *ptl_pend_find(struct ptl_ni *ni, uint32_t id)
{
	if (!id)
		return NULL;
	/* with reliable delivery every operation waiting is in the send
	 * window, one slot per id: no probing (the table's tombstones made
	 * a miss cost a walk of all of it) */
	if (ni->reliable)
		return ptl_rel_find(ni, id);
	for (uint32_t k = 0; k < PTL_N_PENDING; k++) {
		struct ptl_pending *p = &ni->pend[(id + k) & (PTL_N_PENDING - 1)];

		if (p->msg_id == id)
			return p;
		if (!p->msg_id && !p->tomb)
			return NULL;
	}
	return NULL;
}

static struct ptl_pending *pend_add(struct ptl_ni *ni, uint32_t id)
{
	for (uint32_t k = 0; k < PTL_N_PENDING; k++) {
		struct ptl_pending *p = &ni->pend[(id + k) & (PTL_N_PENDING - 1)];

		if (!p->msg_id) {
			memset(p, 0, offsetof(struct ptl_pending, inl));
			p->msg_id = id;
			n_pending++;
			return p;
		}
	}
	return NULL;
}

static void pend_del(struct ptl_ni *ni, struct ptl_pending *p)
{
	ptl_rel_unlink(ni, p);
	ptl_rel_reply_done(ni, p);
	if (p->copy != p->inl)
		free(p->copy);
	p->copy = NULL;
	free(p->bitmap);
	p->bitmap = NULL;
	if (timed(p))
		ni->n_timed--;
	p->msg_id = 0;
	p->tomb = true;
	n_pending--;
}

/* ---------------------------------------------------- initiator events -- */

static void md_event(struct ptl_ni *ni, struct ptl_mdr *md, ptl_event_t *ev, unsigned int ct_opt,
		     bool full)
{
	bool ok = ev->ni_fail_type == PTL_NI_OK;
	unsigned int o = md->md.options;

	if (full && md->md.eq_handle != PTL_EQ_NONE &&
	    (!ok || !(o & PTL_MD_EVENT_SUCCESS_DISABLE)) &&
	    !(ev->type == PTL_EVENT_SEND && (o & PTL_MD_EVENT_SEND_DISABLE) && ok))
		ptl_eq_post(ni, md->md.eq_handle, ev);
	if (o & ct_opt)
		ptl_ct_count(ni, md->md.ct_handle, ok, o & PTL_MD_EVENT_CT_BYTES, ev->mlength);
}

static void send_event(struct ptl_ni *ni, struct ptl_mdr *md, ptl_size_t loff, ptl_size_t len,
		       ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
		       ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr, ptl_ni_fail_t fail)
{
	ptl_event_t ev = { .type = PTL_EVENT_SEND, .start = ptl_buf_addr(&md->buf, loff),
			   .user_ptr = user_ptr, .hdr_data = hdr, .match_bits = bits,
			   .rlength = len, .mlength = len, .remote_offset = roff,
			   .initiator = target, .pt_index = pt, .ni_fail_type = fail };

	md_event(ni, md, &ev, PTL_MD_EVENT_CT_SEND, true);
}

/* An ack or reply arrived (or never will): the initiator's events.  A
 * reliable put's send event comes now too: its bytes were needed until the
 * target had them. */
void ptl_pend_complete(struct ptl_ni *ni, struct ptl_pending *p, ptl_ni_fail_t fail,
		       uint64_t mlength, ptl_list_t list)
{
	struct ptl_mdr *md = &ni->md[p->md];
	ptl_event_t ev = { .start = ptl_buf_addr(&md->buf, p->loff), .user_ptr = p->user_ptr,
			   .hdr_data = p->hdr_data, .match_bits = p->bits, .rlength = p->len,
			   .mlength = mlength, .remote_offset = p->roff, .initiator = p->target,
			   .pt_index = p->pt, .ni_fail_type = fail, .atomic_operation = p->aop,
			   .atomic_type = p->adt, .ptl_list = list };

	if (md->used && md->busy)
		md->busy--;
	if (p->rel && p->wire_op != SPIN_OP_GET && !p->send_posted && ni->md[p->smd].used)
		send_event(ni, &ni->md[p->smd], p->sloff, p->len, p->target, p->pt, p->bits,
			   p->roff, p->user_ptr, p->hdr_data, p->unsent ? fail : PTL_NI_OK);
	if (md->used && (p->kind != PEND_ACK || p->want_ack)) {
		if (p->kind == PEND_ACK) {
			ev.type = PTL_EVENT_ACK;
			md_event(ni, md, &ev, PTL_MD_EVENT_CT_ACK, p->ack_req != PTL_CT_ACK_REQ);
		} else {
			ev.type = PTL_EVENT_REPLY;
			md_event(ni, md, &ev, PTL_MD_EVENT_CT_REPLY, true);
		}
	}
	pend_del(ni, p);
}

/* ------------------------------------------------------------ initiator -- */

/* The rank of a target, or -1 if it is not in the map. */
static int64_t target_rank(struct ptl_ni *ni, ptl_process_t t)
{
	/* a rank in the map whose peer is missing fails in spin_xsk_send
	 * (it caches the peer table, no system call per message) */
	if (ni->options & PTL_NI_LOGICAL)
		return t.rank < ni->map_size && t.rank < SPIN_MAX_PEERS ? (int64_t)t.rank : -1;
	for (size_t r = 0; r < ni->map_size; r++)
		if (ni->map[r].phys.nid == t.phys.nid)
			return (int64_t)r;
	return -1;
}

struct op {
	uint8_t wire_op;		/* SPIN_OP_* */
	struct ptl_mdr *md;		/* payload (put/atomic) */
	ptl_size_t loff, len;
	struct ptl_mdr *get_md;		/* reply destination (get/fetch) */
	ptl_size_t get_loff;
	ptl_ack_req_t ack_req;
	ptl_process_t target;
	ptl_pt_index_t pt;
	ptl_match_bits_t bits;
	ptl_size_t roff;
	void *user_ptr;
	ptl_hdr_data_t hdr;
	ptl_op_t aop;
	ptl_datatype_t adt;
	uint64_t operand[2];	/* CSWAP*, MSWAP: up to 16 bytes (wire.h) */
};

static int start_op(struct ptl_ni *ni, const struct op *o)
{
	struct spin_msg_args a = {};
	struct ptl_pending *p = NULL;
	struct ptl_mdr *rmd = o->get_md ? o->get_md : o->md;
	bool want_ack = o->wire_op != SPIN_OP_GET && o->wire_op != SPIN_OP_FETCH &&
			o->ack_req != PTL_NO_ACK_REQ;
	bool want_reply = o->wire_op == SPIN_OP_GET || o->wire_op == SPIN_OP_FETCH;
	/* every operation is delivered reliably (ptl_rel.c) */
	bool rel = ni->reliable;
	int64_t rank = target_rank(ni, o->target);
	ptl_ni_fail_t fail = PTL_NI_OK;
	int err = 0;
	/* the bytes sent: the MD's own, or gathered from its iovecs (or
	 * checked, from the whole address space) into a copy */
	const uint8_t *src = NULL;
	uint8_t *gather = NULL;

	if (o->wire_op != SPIN_OP_GET) {
		if (ptl_buf_flat(&o->md->buf)) {
			src = o->md->buf.start + o->loff;
		} else {
			gather = malloc(o->len ? o->len : 1);
			if (!gather)
				return ptl_seterr(PTL_NO_SPACE, "no memory to gather %llu bytes",
						  (unsigned long long)o->len);
			if (ptl_buf_read(&o->md->buf, o->loff, gather, o->len)) {
				free(gather);
				return ptl_seterr(PTL_ARG_INVALID,
						  "the MD's bytes at offset %llu (%llu) are not readable",
						  (unsigned long long)o->loff, (unsigned long long)o->len);
			}
			src = gather;
		}
	}

	a.op = o->wire_op;
	/* the target's portal of the same NI kind as the MD's (ptl_pt_rt) */
	a.pt_index = (uint16_t)ptl_pt_rt(o->md->view, o->pt);
	a.match_bits = o->bits;
	a.remote_off = o->roff;
	a.hdr_data = o->hdr;
	a.flags = want_ack ? SPIN_F_ACK_REQ : 0;
	a.user_hdr[0] = o->aop;
	a.user_hdr[1] = o->adt;
	a.user_hdr[2] = o->operand[0];
	a.user_hdr[3] = o->operand[1];
	/* a sender that only sends still takes its answers and sends again
	 * when a retransmission timer is due (not from inside progress: a
	 * triggered operation starts here too) */
	if (rel && !ni->in_progress && ni->rel_next_us != UINT64_MAX &&
	    ptl_now_us() >= ni->rel_next_us)
		ptl_progress(ni);
	a.msg_id = spin_rt_msg_id(ni->rt);
	if (rel && rank >= 0) {
		int rc = ptl_rel_window(ni, a.msg_id);

		/* puts and atomics wait for the congestion window too; the
		 * library's keep-alives go past it (ptl_md_set_ctl) */
		if (rc == PTL_OK && (o->wire_op == SPIN_OP_PUT || o->wire_op == SPIN_OP_ATOMIC) &&
		    !o->md->ctl)
			rc = ptl_rel_cc_wait(ni, (uint32_t)rank);
		/* gets, for room in this process's ring for their replies */
		else if (rc == PTL_OK && o->wire_op == SPIN_OP_GET)
			rc = ptl_rel_reply_wait(ni, o->len);
		if (rc != PTL_OK)
			return rc;
		a.flags |= SPIN_F_REL;
	} else {
		rel = false;
	}
	if (want_ack || want_reply || rel) {
		p = pend_add(ni, a.msg_id);
		if (!p)
			return ptl_seterr(PTL_NO_SPACE, "too many operations waiting for an ack or reply");
		p->kind = want_reply ? (o->wire_op == SPIN_OP_GET ? PEND_GET : PEND_FETCH) : PEND_ACK;
		p->ack_req = o->ack_req;
		p->md = (uint32_t)(rmd - ni->md);
		p->rank = rank < 0 ? ~0u : (uint32_t)rank;
		p->target = o->target;
		p->loff = o->get_md ? o->get_loff : o->loff;
		p->len = o->len;
		p->pt = o->pt;
		p->bits = o->bits;
		p->roff = o->roff;
		p->hdr_data = o->hdr;
		p->user_ptr = o->user_ptr;
		p->aop = o->wire_op == SPIN_OP_GET ? 0 : o->aop;
		p->adt = o->wire_op == SPIN_OP_GET ? 0 : o->adt;
		if (rel)
			p->deadline_ms = UINT64_MAX;
		else
			set_deadline(ni, p, spin_now_ms() + ni->timeout_ms);
		p->want_ack = want_ack;
		rmd->busy++;
	}
	if (rank < 0) {
		fail = PTL_NI_UNDELIVERABLE;
	} else if (rel) {
		p->args = a;
		p->wire_op = o->wire_op;
		if (o->wire_op == SPIN_OP_GET)
			ptl_rel_reply_take(ni, p, o->len);
		p->smd = (uint32_t)(o->md - ni->md);
		p->sloff = o->loff;
		if (o->wire_op != SPIN_OP_GET)
			p->buf = src;
		/* gets and fetches: one request packet; npkts counts the
		 * reply's packets then (on_reply) */
		if (o->wire_op == SPIN_OP_PUT || o->wire_op == SPIN_OP_ATOMIC)
			p->npkts = spin_npkts((uint32_t)o->len, SPIN_MAX_SEG);
		/* a one-packet put keeps a copy: its send event comes now (an
		 * MPI send completes on it), and without an ack wanted it is
		 * acknowledged in bulk (ptl_rel.c, probes) */
		if (gather) {
			/* the gathered copy lives as long as the message */
			p->copy = gather;
			gather = NULL;
		}
		if (o->wire_op == SPIN_OP_PUT && p->npkts == 1 && !p->copy && o->len <= PTL_PEND_INLINE)
			p->copy = p->inl;
		if (o->wire_op == SPIN_OP_PUT && p->npkts == 1 &&
		    (p->copy || (p->copy = malloc(o->len ?: 1)))) {
			if (p->buf != p->copy)
				memcpy(p->copy, p->buf, o->len);
			p->buf = p->copy;
			p->quiet = !want_ack;
			p->send_posted = true;
		}
		err = ptl_rel_send(ni, p, ni->bundle > 0);
		fail = err ? PTL_NI_UNDELIVERABLE : PTL_NI_OK;
		if (err || p->send_posted)	/* the send event below, now */
			rel = false;
	} else if (o->wire_op == SPIN_OP_GET) {
		err = spin_xsk_send_get(ni->xsk, (uint32_t)rank, &a, (uint32_t)o->len, NULL);
		fail = err ? PTL_NI_UNDELIVERABLE : PTL_NI_OK;
	} else if (ni->bundle) {
		err = spin_xsk_post(ni->xsk, (uint32_t)rank, &a, src, (uint32_t)o->len, NULL);
		fail = err ? PTL_NI_UNDELIVERABLE : PTL_NI_OK;
	} else {
		err = spin_xsk_send(ni->xsk, (uint32_t)rank, &a, src, (uint32_t)o->len, NULL, NULL);
		fail = err ? PTL_NI_UNDELIVERABLE : PTL_NI_OK;
	}
	/* the send event: the MD's bytes may be reused now (a reliable
	 * put's when the target has them: ptl_pend_complete) */
	if (o->wire_op != SPIN_OP_GET && !rel)
		send_event(ni, o->md, o->loff, o->len, o->target, o->pt, o->bits, o->roff,
			   o->user_ptr, o->hdr, fail);
	if (p && fail != PTL_NI_OK)
		ptl_pend_complete(ni, p, fail, 0, PTL_PRIORITY_LIST);
	free(gather);
	return PTL_OK;
}

int ptl_put_locked(struct ptl_ni *ni, ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len,
		   ptl_ack_req_t ack_req, ptl_process_t target, ptl_pt_index_t pt,
		   ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr)
{
	struct ptl_mdr *md = ptl_md_get(ni, mdh);
	struct op o = { .wire_op = SPIN_OP_PUT, .md = md, .loff = loff, .len = len,
			.ack_req = ack_req, .target = target, .pt = pt, .bits = bits, .roff = roff,
			.user_ptr = user_ptr, .hdr = hdr };

	if (!md || loff > md->buf.len || len > md->buf.len - loff ||
	    len > ni->lim[md->view].max_msg_size || pt >= PTL_PT_HALF || ack_req > PTL_OC_ACK_REQ)
		return PTL_ARG_INVALID;
	return start_op(ni, &o);
}

int ptl_get_locked(struct ptl_ni *ni, ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len,
		   ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
		   ptl_size_t roff, void *user_ptr)
{
	struct ptl_mdr *md = ptl_md_get(ni, mdh);
	struct op o = { .wire_op = SPIN_OP_GET, .md = md, .loff = loff, .len = len,
			.ack_req = PTL_NO_ACK_REQ, .target = target, .pt = pt, .bits = bits,
			.roff = roff, .user_ptr = user_ptr };

	if (!md || loff > md->buf.len || len > md->buf.len - loff ||
	    len > ni->lim[md->view].max_msg_size || pt >= PTL_PT_HALF)
		return PTL_ARG_INVALID;
	return start_op(ni, &o);
}

int PtlPut(ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len, ptl_ack_req_t ack_req,
	   ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff,
	   void *user_ptr, ptl_hdr_data_t hdr)
{
	struct ptl_ni *ni;
	int rc;

	if (!(ni = ptl_enter(&rc)))
		return rc;
	rc = ptl_put_locked(ni, mdh, loff, len, ack_req, target, pt, bits, roff, user_ptr, hdr);
	ptl_unlock(ni);
	return rc;
}

int PtlGet(ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len, ptl_process_t target,
	   ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr)
{
	struct ptl_ni *ni;
	int rc;

	if (!(ni = ptl_enter(&rc)))
		return rc;
	rc = ptl_get_locked(ni, mdh, loff, len, target, pt, bits, roff, user_ptr);
	ptl_unlock(ni);
	return rc;
}

int ptl_atomic_locked(struct ptl_ni *ni, const struct ptl_amo_args *a, bool check_only)
{
	struct ptl_mdr *pmd, *gmd = NULL;
	size_t es = ptl_atomic_dt_size(a->adt);
	struct op o = {};

	pmd = ptl_md_get(ni, a->put_md);
	if (a->fetch)
		gmd = ptl_md_get(ni, a->get_md);
	if (!pmd || (a->fetch && !gmd) || !es || !ptl_atomic_valid(a->aop, a->adt, a->fetch) ||
	    !a->len || a->len % es ||
	    a->len > (a->fetch ? ni->lim[pmd->view].max_fetch_atomic_size :
				 ni->lim[pmd->view].max_atomic_size) ||
	    a->put_loff > pmd->buf.len ||
	    a->len > pmd->buf.len - a->put_loff || a->pt >= PTL_PT_HALF ||
	    a->ack_req > PTL_OC_ACK_REQ)
		return PTL_ARG_INVALID;
	if (a->fetch && (a->get_loff > gmd->buf.len || a->len > gmd->buf.len - a->get_loff))
		return PTL_ARG_INVALID;
	if (a->fetch && gmd->view != pmd->view)
		return ptl_seterr(PTL_ARG_INVALID, "the get and put MDs are of different NIs");
	if (a->aop >= PTL_CSWAP && a->aop <= PTL_MSWAP) {
		if (es > sizeof(o.operand))
			return ptl_seterr(PTL_ARG_INVALID,
					  "a conditional swap on a %zu-byte datatype: its operand does not fit in a packet's header (%zu bytes)",
					  es, sizeof(o.operand));
		if (!a->has_operand || a->len != es)
			return PTL_ARG_INVALID;
		memcpy(o.operand, a->operand, es);
	}
	if (check_only)
		return PTL_OK;
	o.wire_op = a->fetch ? SPIN_OP_FETCH : SPIN_OP_ATOMIC;
	o.md = pmd;
	o.loff = a->put_loff;
	o.len = a->len;
	o.get_md = gmd;
	o.get_loff = a->get_loff;
	o.ack_req = a->fetch ? PTL_NO_ACK_REQ : a->ack_req;
	o.target = a->target;
	o.pt = a->pt;
	o.bits = a->bits;
	o.roff = a->roff;
	o.user_ptr = a->user_ptr;
	o.hdr = a->hdr;
	o.aop = a->aop;
	o.adt = a->adt;
	return start_op(ni, &o);
}

static int atomic_op(ptl_handle_md_t get_mdh, ptl_size_t get_loff, ptl_handle_md_t put_mdh,
		     ptl_size_t put_loff, ptl_size_t len, ptl_ack_req_t ack_req,
		     ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits,
		     ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr, const void *operand,
		     ptl_op_t aop, ptl_datatype_t adt, bool fetch)
{
	struct ptl_amo_args a = { .get_md = get_mdh, .put_md = put_mdh, .get_loff = get_loff,
				  .put_loff = put_loff, .len = len, .ack_req = ack_req,
				  .target = target, .pt = pt, .bits = bits, .roff = roff,
				  .user_ptr = user_ptr, .hdr = hdr, .aop = aop, .adt = adt,
				  .fetch = fetch };
	size_t es = ptl_atomic_dt_size(adt);
	struct ptl_ni *ni;
	int rc;

	if (operand && es && es <= sizeof(a.operand)) {
		memcpy(a.operand, operand, es);
		a.has_operand = true;
	}
	if (!(ni = ptl_enter(&rc)))
		return rc;
	rc = ptl_atomic_locked(ni, &a, false);
	ptl_unlock(ni);
	return rc;
}

int PtlAtomic(ptl_handle_md_t mdh, ptl_size_t loff, ptl_size_t len, ptl_ack_req_t ack_req,
	      ptl_process_t target, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff,
	      void *user_ptr, ptl_hdr_data_t hdr, ptl_op_t op, ptl_datatype_t dt)
{
	return atomic_op(PTL_INVALID_HANDLE, 0, mdh, loff, len, ack_req, target, pt, bits, roff,
			 user_ptr, hdr, NULL, op, dt, false);
}

int PtlFetchAtomic(ptl_handle_md_t get_mdh, ptl_size_t get_loff, ptl_handle_md_t put_mdh,
		   ptl_size_t put_loff, ptl_size_t len, ptl_process_t target, ptl_pt_index_t pt,
		   ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr,
		   ptl_op_t op, ptl_datatype_t dt)
{
	if (op >= PTL_SWAP)	/* swaps go through PtlSwap */
		return PTL_ARG_INVALID;
	return atomic_op(get_mdh, get_loff, put_mdh, put_loff, len, PTL_NO_ACK_REQ, target, pt,
			 bits, roff, user_ptr, hdr, NULL, op, dt, true);
}

int PtlSwap(ptl_handle_md_t get_mdh, ptl_size_t get_loff, ptl_handle_md_t put_mdh,
	    ptl_size_t put_loff, ptl_size_t len, ptl_process_t target, ptl_pt_index_t pt,
	    ptl_match_bits_t bits, ptl_size_t roff, void *user_ptr, ptl_hdr_data_t hdr,
	    const void *operand, ptl_op_t op, ptl_datatype_t dt)
{
	if (op < PTL_SWAP || op > PTL_MSWAP)
		return PTL_ARG_INVALID;
	return atomic_op(get_mdh, get_loff, put_mdh, put_loff, len, PTL_NO_ACK_REQ, target, pt,
			 bits, roff, user_ptr, hdr, operand, op, dt, true);
}

int PtlAtomicSync(void)
{
	/* atomics are applied by one thread of the target process, in
	 * arrival order: nothing to flush */
	return ptl_g_ni ? PTL_OK : PTL_NO_INIT;
}

/* --------------------------------------------------------------- target -- */

void ptl_send_ack(struct ptl_ni *ni, const struct spin_hdr *h, uint64_t mlength, uint32_t fail,
		  uint32_t list)
{
	ptl_send_ack_range(ni, h, mlength, fail, list, 0);
}

void ptl_send_ack_range(struct ptl_ni *ni, const struct spin_hdr *h, uint64_t mlength,
			uint32_t fail, uint32_t list, uint64_t range)
{
	struct spin_msg_args a = {
		.op = SPIN_OP_ACK, .pt_index = ntohs(h->pt_index), .msg_id = ntohl(h->msg_id),
		.match_bits = be64toh(h->match_bits), .remote_off = be64toh(h->remote_off),
		.hdr_data = be64toh(h->hdr_data), .user_hdr = { mlength, fail, list, range },
	};

	if (spin_xsk_send(ni->xsk, ntohl(h->src_rank), &a, NULL, 0, NULL, NULL))
		ni->drops++;
}

static void send_reply(struct ptl_ni *ni, uint32_t rank, uint32_t pt, uint32_t msg_id,
		       uint64_t bits, uint64_t roff, uint64_t hdr, const void *buf, uint64_t len,
		       uint64_t requested, uint32_t fail, uint32_t list)
{
	struct spin_msg_args a = {
		.op = SPIN_OP_REPLY, .pt_index = (uint16_t)pt, .msg_id = msg_id,
		.match_bits = bits, .remote_off = roff, .hdr_data = hdr,
		.user_hdr = { requested, fail, list },
	};

	if (spin_xsk_send(ni->xsk, rank, &a, buf, (uint32_t)len, NULL, NULL))
		ni->drops++;
}

void ptl_reply_me(struct ptl_ni *ni, const struct spin_hdr *h, const struct ptl_mer *m,
		  uint64_t off, uint64_t len, uint32_t list)
{
	uint8_t *tmp;

	if (ptl_buf_flat(&m->buf)) {
		ptl_reply_to(ni, h, m->buf.start + off, len, SPIN_FAIL_OK, list);
		return;
	}
	tmp = malloc(len ? len : 1);
	if (!tmp || ptl_buf_read(&m->buf, off, tmp, len)) {
		ni->drops++;
		ptl_reply_to(ni, h, NULL, 0, tmp ? SPIN_FAIL_OP_VIOLATION : SPIN_FAIL_QUEUE_FULL, list);
	} else {
		ptl_reply_to(ni, h, tmp, len, SPIN_FAIL_OK, list);
	}
	free(tmp);
}

void ptl_reply_to(struct ptl_ni *ni, const struct spin_hdr *h, const void *buf, uint64_t len,
		  uint32_t fail, uint32_t list)
{
	send_reply(ni, ntohl(h->src_rank), ntohs(h->pt_index), ntohl(h->msg_id),
		   be64toh(h->match_bits), be64toh(h->remote_off), be64toh(h->hdr_data), buf, len,
		   ntohl(h->msg_len), fail, list);
}

/*
 * Back-pressure (docs/reliable.md): the event queue a target event goes to
 * is full (the application is not reading it).  The event waits in
 * ni->held and the runtime's ring behind it is not read, so the runtime
 * soon refuses new messages with "not now" and reliable senders wait,
 * instead of the event being lost (PTL_EQ_DROPPED).
 */
static bool eq_full_for(struct ptl_ni *ni, const struct ptl_mer *m)
{
	struct ptl_eq *q;

	if (!m || (m->me.options & PTL_ME_EVENT_COMM_DISABLE))
		return false;
	q = ptl_eq_get(ni, ni->pt[m->pt].eq);
	return q && q->count == q->cap;
}

/* The entry the runtime matched (wire.h: job_key carries its index in a
 * frame the runtime handed to the socket). */
static struct ptl_mer *me_of_pkt(struct ptl_ni *ni, const struct spin_hdr *h)
{
	uint32_t idx = ntohl(h->job_key);
	int i;

	if (idx >= SPIN_MAX_ME || (i = ni->me_by_rt[idx]) < 0 || !ptl_me_at(ni, (uint32_t)i)->used)
		return NULL;
	return ptl_me_at(ni, (uint32_t)i);
}

struct rematch {
	unsigned int need;	/* PTL_ME_OP_* the message needs */
	uint64_t roff, len;
};

/* me_rematch: an entry still linked and active that takes the message */
static bool rematch_ok(struct ptl_ni *ni, struct ptl_mer *m, void *arg)
{
	const struct rematch *q = arg;
	unsigned int o = m->me.options, ops = o & (PTL_ME_OP_PUT | PTL_ME_OP_GET);
	uint64_t off = (o & PTL_ME_MANAGE_LOCAL) ? m->local_off : q->roff;

	if (!m->used || m->rt < 0 ||
	    __atomic_load_n(&ni->rt->me[m->rt].state, __ATOMIC_ACQUIRE) != SPIN_ME_ACTIVE)
		return false;
	if (!ops)
		ops = PTL_ME_OP_PUT;
	if ((ops & q->need) != q->need)
		return false;
	return !(o & PTL_ME_NO_TRUNCATE) || (off <= m->buf.len && q->len <= m->buf.len - off);
}

/*
 * The runtime matched an entry this process has unlinked since (use-once,
 * min_free or PtlMEUnlink while the packet was on its way): match again
 * among the entries still linked, in Portals order (the match index,
 * ptl_mx_find: no scan of the table), claiming a use-once one in the
 * runtime's table as the runtime would.
 */
static struct ptl_mer *me_rematch(struct ptl_ni *ni, const struct spin_hdr *h)
{
	uint32_t pt = ntohs(h->pt_index), rank = ntohl(h->src_rank), pid = ntohl(h->src_pid);
	uint64_t bits = be64toh(h->match_bits);
	struct rematch q = {
		.need = h->op == SPIN_OP_GET ? PTL_ME_OP_GET :
			h->op == SPIN_OP_FETCH ? PTL_ME_OP_GET | PTL_ME_OP_PUT : PTL_ME_OP_PUT,
		.roff = be64toh(h->remote_off), .len = ntohl(h->msg_len),
	};

	for (int attempt = 0; attempt < 4; attempt++) {
		struct ptl_mer *best;
		uint32_t st = SPIN_ME_ACTIVE;

		best = ptl_mx_find(ni, pt, PTL_PRIORITY_LIST, bits, rank, pid, rematch_ok, &q);
		if (!best)
			best = ptl_mx_find(ni, pt, PTL_OVERFLOW_LIST, bits, rank, pid, rematch_ok, &q);
		if (!best)
			return NULL;
		if (!(best->me.options & PTL_ME_USE_ONCE) ||
		    __atomic_compare_exchange_n(&ni->rt->me[best->rt].state, &st, SPIN_ME_CLAIMED,
						false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return best;
	}
	return NULL;
}

/* The entry for a packet: the one the runtime matched, or a rematch. */
static struct ptl_mer *me_for(struct ptl_ni *ni, const struct spin_hdr *h)
{
	struct ptl_mer *m = me_of_pkt(ni, h);

	/* the slot may hold a newer entry by now */
	if (m && !((m->me.match_bits ^ be64toh(h->match_bits)) & ~m->me.ignore_bits))
		return m;
	return me_rematch(ni, h);
}

/* Where a message lands in entry m (the locally managed offset advances). */
static uint64_t me_place(struct ptl_mer *m, uint64_t roff, uint64_t rlen, uint64_t *mlength)
{
	uint64_t off = (m->me.options & PTL_ME_MANAGE_LOCAL) ? m->local_off : roff;

	*mlength = off >= m->buf.len ? 0 : (rlen < m->buf.len - off ? rlen : m->buf.len - off);
	if (m->max_len && *mlength > m->max_len)	/* its NI's max_msg_size */
		*mlength = m->max_len;
	if (m->me.options & PTL_ME_MANAGE_LOCAL)
		m->local_off += *mlength;
	return off;
}

/* After an operation on a live entry: use-once and min_free unlinks. */
static void me_after(struct ptl_ni *ni, ptl_handle_me_t meh)
{
	struct ptl_mer *m = ptl_me_get(ni, meh);

	if (!m)
		return;
	if ((m->me.options & PTL_ME_USE_ONCE) ||
	    ((m->me.options & PTL_ME_MANAGE_LOCAL) && m->buf.len - m->local_off < m->me.min_free))
		ptl_me_auto_unlink(ni, m, true);
}

/* The payload bytes one packet of h's message carries at most. */
static uint32_t mlength_pkt(const struct spin_hdr *h)
{
	return ntohs(h->seg_size) ? ntohs(h->seg_size) : SPIN_MAX_SEG;
}

static void put_done(struct ptl_ni *ni, struct ptl_mer *snap, ptl_handle_me_t meh,
		     const struct spin_hdr *h, uint64_t off, uint64_t mlength)
{
	ptl_event_t ev = {
		.type = PTL_EVENT_PUT, .start = ptl_buf_addr(&snap->buf, off),
		.hdr_data = be64toh(h->hdr_data), .match_bits = be64toh(h->match_bits),
		.rlength = ntohl(h->msg_len), .mlength = mlength,
		.remote_offset = (snap->me.options & PTL_ME_MANAGE_LOCAL) ? off : be64toh(h->remote_off),
		.ni_fail_type = PTL_NI_OK,
	};

	ptl_target_done(ni, snap, &ev, ntohl(h->src_rank), ntohl(h->src_pid));
	if ((ntohs(h->flags) & SPIN_F_REL) &&
	    (ntohl(h->msg_len) > mlength_pkt(h) || (ntohs(h->flags) & (SPIN_F_SACK_REQ | SPIN_F_ACK_REQ))))
		ptl_rel_done(ni, h, SPIN_FAIL_OK, mlength, snap->list);
	else if (ntohs(h->flags) & SPIN_F_REL)	/* quiet: a probe asks (ptl_rel_dup) */
		ptl_rel_note(ni, h, SPIN_FAIL_OK, mlength, snap->list);
	else if ((ntohs(h->flags) & SPIN_F_ACK_REQ) && !(snap->me.options & PTL_ME_ACK_DISABLE))
		ptl_send_ack(ni, h, mlength, SPIN_FAIL_OK, snap->list);
	me_after(ni, meh);
}

/* Open addressing by id; a freed slot stays a tombstone, so the probe
 * chains of the messages after it stay intact (a lookup that stopped there
 * would start a second reassembly of a message in progress). */
static struct ptl_rx *rx_find(struct ptl_ni *ni, uint32_t rank, uint32_t id, bool create)
{
	struct ptl_rx *free_rx = NULL;

	for (int i = 0; i < PTL_N_RX; i++) {
		struct ptl_rx *r = &ni->rx[(id + i) & (PTL_N_RX - 1)];

		if (r->used && r->rank == rank && r->msg_id == id)
			return r;
		if (!r->used) {
			if (!free_rx)
				free_rx = r;
			if (!r->tomb)
				break;	/* the end of the chain */
		}
	}
	return create ? free_rx : NULL;
}

static void rx_gone(struct ptl_ni *ni, struct ptl_rx *r)
{
	struct ptl_mer *m = ptl_me_get(ni, r->meh);

	if (m && m->rx_busy)	/* one message in flight into it less */
		m->rx_busy--;
	r->bitmap = NULL;
	r->used = false;
	r->tomb = true;
	/* nothing in flight: no chain to keep */
	if (--ni->n_rx == 0)
		for (int i = 0; i < PTL_N_RX; i++)
			ni->rx[i].tomb = false;
}

static void rx_free(struct ptl_ni *ni, struct ptl_rx *r)
{
	free(r->bitmap);
	ptl_buf_put(&r->me.buf);
	rx_gone(ni, r);
}

static void on_put(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay, uint32_t len)
{
	uint32_t msg_len = ntohl(h->msg_len), pkt_off = ntohl(h->pkt_off);
	uint32_t rank = ntohl(h->src_rank), id = ntohl(h->msg_id), seg = ntohs(h->seg_size), k;
	uint16_t flags = ntohs(h->flags);
	bool rel = flags & SPIN_F_REL, sack_req = rel && (flags & SPIN_F_SACK_REQ);
	struct ptl_mer *m;
	struct ptl_rx *r;
	uint64_t off, mlength;

	/* a reliable message completed here before: answer it again */
	if (rel && ptl_rel_dup(ni, h, NULL, 0, sack_req || (pkt_off == 0 && len == msg_len)))
		return;
	/* its event queue is full: "not now" (back-pressure, as the runtime
	 * gives for its ring); the sender tries again later */
	if (rel && eq_full_for(ni, me_of_pkt(ni, h))) {
		ni->rs.held++;
		if (pkt_off == 0 || sack_req)
			ptl_send_ack(ni, h, 0, SPIN_FAIL_QUEUE_FULL, 0);
		return;
	}
	if (pkt_off == 0 && len == msg_len) {
		m = me_for(ni, h);
		if (!m) {
			ni->drops++;
			if (rel)
				ptl_rel_done(ni, h, SPIN_FAIL_NO_MATCH, 0, 0);
			else if (flags & SPIN_F_ACK_REQ)
				ptl_send_ack(ni, h, 0, SPIN_FAIL_NO_MATCH, 0);
			return;
		}
		off = me_place(m, be64toh(h->remote_off), msg_len, &mlength);
		/* (the whole address space: an address that faults takes
		 * nothing, and counts as dropped) */
		if (ptl_buf_write(&m->buf, off, pay, mlength < len ? mlength : len))
			ni->drops++;
		{
			struct ptl_mer snap = *m;

			put_done(ni, &snap, ptl_me_handle(ni, m), h, off, mlength);
		}
		return;
	}
	r = rx_find(ni, rank, id, false);
	if (!r) {
		r = rx_find(ni, rank, id, true);
		m = me_for(ni, h);
		if (!r || !m || !seg) {
			ni->drops++;
			if (rel && !m && seg)
				ptl_rel_done(ni, h, SPIN_FAIL_NO_MATCH, 0, 0);
			return;
		}
		uint32_t npkts = spin_npkts(msg_len, seg);
		uint64_t *bm = calloc((npkts + 63) / 64, sizeof(uint64_t));

		if (!bm) {
			ni->drops++;
			return;
		}
		memset(r, 0, sizeof(*r));
		ni->n_rx++;
		r->npkts = npkts;
		r->bitmap = bm;
		r->used = true;
		r->rank = rank;
		r->msg_id = id;
		r->msg_len = msg_len;
		r->seg = seg;
		r->me = *m;
		ptl_buf_get(&r->me.buf);	/* its iovecs stay while it arrives */
		r->meh = ptl_me_handle(ni, m);
		m->rx_busy++;
		r->h = *h;
		r->h.pkt_off = 0;
		r->off = me_place(m, be64toh(h->remote_off), msg_len, &r->mlength);
	}
	r->last_ms = spin_now_ms();
	k = pkt_off / r->seg;
	if (k >= r->npkts)
		return;
	if (r->bitmap[k / 64] & (1ull << (k % 64))) {
		if (sack_req)
			ptl_rel_send_sack(ni, h, r->bitmap, r->npkts);
		return;
	}
	r->bitmap[k / 64] |= 1ull << (k % 64);
	if (pkt_off < r->mlength &&
	    ptl_buf_write(&r->me.buf, r->off + pkt_off, pay,
			  r->mlength - pkt_off < len ? r->mlength - pkt_off : len))
		ni->drops++;
	if (++r->got_bytes == r->npkts) {	/* got_bytes counts packets */
		struct ptl_rx done = *r;

		rx_gone(ni, r);
		put_done(ni, &done.me, done.meh, &done.h, done.off, done.mlength);
		free(done.bitmap);
		ptl_buf_put(&done.me.buf);
	} else if (sack_req) {
		ptl_rel_send_sack(ni, h, r->bitmap, r->npkts);
	}
}

static void on_get(struct ptl_ni *ni, const struct spin_hdr *h)
{
	struct ptl_mer *m = me_for(ni, h), snap;
	bool rel = ntohs(h->flags) & SPIN_F_REL;
	struct ptl_ldd_slot *sl = NULL;
	uint64_t off, mlength;
	ptl_event_t ev;

	if (!m) {
		ni->drops++;
		if (rel)
			ptl_rel_note(ni, h, SPIN_FAIL_NO_MATCH, 0, 0);
		ptl_reply_to(ni, h, NULL, 0, SPIN_FAIL_NO_MATCH, 0);
		return;
	}
	off = me_place(m, be64toh(h->remote_off), ntohl(h->msg_len), &mlength);
	if (rel && (sl = ptl_rel_note(ni, h, SPIN_FAIL_OK, mlength, m->list))) {
		/* a retransmission reads the entry again, while it lives */
		sl->meh = ptl_me_handle(ni, m);
		sl->off = off;
	}
	ptl_reply_me(ni, h, m, off, mlength, m->list);
	if (sl)
		sl->sent_ns = ptl_now_us() * 1000;
	ev = (ptl_event_t){
		.type = PTL_EVENT_GET, .start = ptl_buf_addr(&m->buf, off),
		.hdr_data = be64toh(h->hdr_data), .match_bits = be64toh(h->match_bits),
		.rlength = ntohl(h->msg_len), .mlength = mlength,
		.remote_offset = (m->me.options & PTL_ME_MANAGE_LOCAL) ? off : be64toh(h->remote_off),
		.ni_fail_type = PTL_NI_OK,
	};
	snap = *m;
	ptl_target_done(ni, &snap, &ev, ntohl(h->src_rank), ntohl(h->src_pid));
	me_after(ni, ptl_me_handle(ni, m));
}

static void on_atomic(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay,
		      uint32_t len, bool fetch)
{
	struct ptl_mer *m = me_for(ni, h), snap;
	ptl_op_t op = (ptl_op_t)be64toh(h->user_hdr[0]);
	ptl_datatype_t dt = (ptl_datatype_t)be64toh(h->user_hdr[1]);
	uint64_t operand[2] = { be64toh(h->user_hdr[2]), be64toh(h->user_hdr[3]) }, off, mlength;
	size_t es = ptl_atomic_dt_size(dt);
	uint8_t old[SPIN_MAX_SEG];
	bool ack = !fetch && (ntohs(h->flags) & SPIN_F_ACK_REQ);
	bool rel = ntohs(h->flags) & SPIN_F_REL;
	uint32_t fail = SPIN_FAIL_OK;
	struct ptl_ldd_slot *sl;
	uint8_t *target;
	ptl_event_t ev;

	if (!m) {
		ni->drops++;
		if (fetch && rel)
			ptl_rel_note(ni, h, SPIN_FAIL_NO_MATCH, 0, 0);
		if (fetch)
			ptl_reply_to(ni, h, NULL, 0, SPIN_FAIL_NO_MATCH, 0);
		else if (rel)
			ptl_rel_done(ni, h, SPIN_FAIL_NO_MATCH, 0, 0);
		else if (ack)
			ptl_send_ack(ni, h, 0, SPIN_FAIL_NO_MATCH, 0);
		return;
	}
	if (!es || !ptl_atomic_valid(op, dt, fetch) || len % es || len > sizeof(old))
		fail = SPIN_FAIL_OP_VIOLATION;
	off = me_place(m, be64toh(h->remote_off), len, &mlength);
	if (es)
		mlength -= mlength % es;
	target = ptl_buf_addr(&m->buf, off);
	if (fail == SPIN_FAIL_OK && mlength && ptl_buf_flat(&m->buf)) {
		if (ptl_atomic_apply(op, dt, target, pay, mlength, operand, fetch ? old : NULL))
			fail = SPIN_FAIL_OP_VIOLATION;
	} else if (fail == SPIN_FAIL_OK && mlength) {
		/* iovecs (an element may straddle two) or the whole address
		 * space: on a copy, written back */
		uint8_t tmp[SPIN_MAX_SEG];

		if (ptl_buf_read(&m->buf, off, tmp, mlength))
			fail = SPIN_FAIL_OP_VIOLATION;
		else if (ptl_atomic_apply(op, dt, tmp, pay, mlength, operand, fetch ? old : NULL) ||
			 ptl_buf_write(&m->buf, off, tmp, mlength))
			fail = SPIN_FAIL_OP_VIOLATION;
	}
	if (fail != SPIN_FAIL_OK)
		mlength = 0;
	if (fetch && rel && (sl = ptl_rel_note(ni, h, fail, mlength, m->list)) && mlength &&
	    (sl->reply = malloc(mlength)))
		memcpy(sl->reply, old, mlength);	/* a retransmission gets these again */
	if (fetch)
		ptl_reply_to(ni, h, old, mlength, fail, m->list);
	else if (rel)
		ptl_rel_done(ni, h, fail, mlength, m->list);
	else if (ack && !(m->me.options & PTL_ME_ACK_DISABLE))
		ptl_send_ack(ni, h, mlength, fail, m->list);
	ev = (ptl_event_t){
		.type = fetch ? PTL_EVENT_FETCH_ATOMIC : PTL_EVENT_ATOMIC, .start = target,
		.hdr_data = be64toh(h->hdr_data), .match_bits = be64toh(h->match_bits),
		.rlength = len, .mlength = mlength,
		.remote_offset = (m->me.options & PTL_ME_MANAGE_LOCAL) ? off : be64toh(h->remote_off),
		.ni_fail_type = ptl_fail_of(fail), .atomic_operation = op, .atomic_type = dt,
	};
	snap = *m;
	ptl_target_done(ni, &snap, &ev, ntohl(h->src_rank), ntohl(h->src_pid));
	me_after(ni, ptl_me_handle(ni, m));
}

/* A reply to one of our gets or fetch-atomics. */
static void on_reply(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay, uint32_t len)
{
	struct ptl_pending *p = ptl_pend_find(ni, ntohl(h->msg_id));
	uint32_t msg_len = ntohl(h->msg_len), pkt_off = ntohl(h->pkt_off), seg = ntohs(h->seg_size);
	uint32_t fail = (uint32_t)be64toh(h->user_hdr[1]), k;
	struct ptl_mdr *md;

	if (!p || p->kind == PEND_ACK || ntohl(h->src_rank) != p->rank) {
		ni->drops++;
		return;
	}
	if (p->rel && fail == SPIN_FAIL_QUEUE_FULL) {
		ptl_rel_on_ack(ni, p, fail, 0, 0);	/* "not now" */
		return;
	}
	if (p->rel)
		ptl_rel_alive(ni, p);
	if (fail) {
		ptl_pend_complete(ni, p, ptl_fail_of(fail), 0, (ptl_list_t)be64toh(h->user_hdr[2]));
		return;
	}
	/* from the wire: a reply is never longer than its get, has at most
	 * the packets a message may have, and each of its packets agrees
	 * with the first on its length and cut; else it is dropped, and the
	 * get waits on (for its target's answer, or its timeout) */
	if (msg_len > p->len || (seg && spin_npkts(msg_len, seg) > SPIN_MSG_MAX_PKTS) ||
	    (p->npkts && (msg_len != p->rlen || seg != p->rseg))) {
		ni->drops++;
		return;
	}
	md = &ni->md[p->md];
	if (!p->npkts) {
		p->npkts = seg ? spin_npkts(msg_len, seg) : 1;
		p->rseg = seg;
		p->rlen = msg_len;
		if (p->npkts > 1) {
			p->bitmap = calloc((p->npkts + 63) / 64, sizeof(uint64_t));
			if (!p->bitmap) {
				ptl_pend_complete(ni, p, PTL_NI_DROPPED, 0, PTL_PRIORITY_LIST);
				return;
			}
		}
	}
	k = seg ? pkt_off / seg : 0;
	if (k >= p->npkts)
		return;
	if (p->bitmap) {
		if (p->bitmap[k / 64] & (1ull << (k % 64)))
			return;
		p->bitmap[k / 64] |= 1ull << (k % 64);
	}
	if (pkt_off < p->len &&
	    ptl_buf_write(&md->buf, p->loff + pkt_off, pay, p->len - pkt_off < len ? p->len - pkt_off : len))
		ni->drops++;
	/* (a reliable get fails only when its target answers nothing at all
	 * for the timeout, ptl_rel.c: a target busy with other replies is
	 * not gone) */
	if (!p->rel)
		set_deadline(ni, p, spin_now_ms() + ni->timeout_ms);
	if (p->reply_cr) {	/* its room in the ring is free again */
		p->reply_cr--;
		ni->reply_out--;
	}
	if (++p->got == p->npkts) {
		if (p->rel)
			ptl_rel_replied(ni, p);
		ptl_pend_complete(ni, p, PTL_NI_OK, msg_len, (ptl_list_t)be64toh(h->user_hdr[2]));
	}
}

/*
 * A re-get (wire.h) of a window entry's reply, which the runtime handed
 * over having checked that the entry is still the one the get read: the
 * reply's range of the window is in the header.  A get with a bitmap that
 * is neither this nor in the window of outcomes is dropped: it is never a
 * first request.  The range must still lie
 * in the entry of that index (it may have been unlinked since), else the
 * initiator asks again and the runtime answers that the entry is gone.
 */
static void on_window_reget(struct ptl_ni *ni, const struct spin_hdr *h, const uint8_t *pay,
			    uint32_t len)
{
	struct ptl_mer *m = me_of_pkt(ni, h);
	uint64_t start = be64toh(h->user_hdr[0]), word = be64toh(h->user_hdr[1]);
	uint64_t mlength = word & 0xffffffff;
	const struct ptl_sent_reply *sr;
	const uint8_t *b;

	/* (an AF_XDP entry's re-get is in this process's window of outcomes,
	 * ptl_rel_dup: one that is not is no get to serve) */
	if (!m || !m->window) {
		ni->drops++;
		return;
	}
	b = ni->win + start;
	if (start > ni->win_len || mlength > ni->win_len - start ||
	    b < (const uint8_t *)m->buf.start ||
	    (uint64_t)(b - (const uint8_t *)m->buf.start) + mlength > m->buf.len) {
		ni->drops++;
		return;
	}
	sr = &ni->sent_reply[(ntohl(h->msg_id) ^ ntohl(h->src_rank) * 31) %
			     (sizeof(ni->sent_reply) / sizeof(ni->sent_reply[0]))];
	ptl_rel_reget(ni, h, pay, len, b, mlength, (uint32_t)(word >> 32) & 0xff,
		      sr->rank == ntohl(h->src_rank) && sr->id == ntohl(h->msg_id) ? sr->sent_ns : 0);
}

static int on_pkt(void *ctx, const struct spin_hdr *h, const void *pay, uint32_t len)
{
	struct ptl_ni *ni = ctx;

	if ((h->op == SPIN_OP_GET || h->op == SPIN_OP_ATOMIC || h->op == SPIN_OP_FETCH) &&
	    (ntohs(h->flags) & SPIN_F_REL)) {
		/* answered before: again; its queue full: "not now" */
		if (ptl_rel_dup(ni, h, pay, len, true))
			return 0;
		if (h->op == SPIN_OP_GET && len) {
			on_window_reget(ni, h, pay, len);
			return 0;
		}
		if (eq_full_for(ni, me_of_pkt(ni, h))) {
			ni->rs.held++;
			if (h->op == SPIN_OP_ATOMIC)
				ptl_send_ack(ni, h, 0, SPIN_FAIL_QUEUE_FULL, 0);
			else
				ptl_reply_to(ni, h, NULL, 0, SPIN_FAIL_QUEUE_FULL, 0);
			return 0;
		}
	}
	switch (h->op) {
	case SPIN_OP_PUT: on_put(ni, h, pay, len); break;
	case SPIN_OP_GET: on_get(ni, h); break;
	case SPIN_OP_ATOMIC: on_atomic(ni, h, pay, len, false); break;
	case SPIN_OP_FETCH: on_atomic(ni, h, pay, len, true); break;
	case SPIN_OP_REPLY: on_reply(ni, h, pay, len); break;
	case SPIN_OP_SACK: ptl_rel_on_sack(ni, h, pay, len); break;
	default: ni->drops++; break;
	}
	return 0;
}

/* The entry a runtime event names, if it is still the one that posted it. */
static struct ptl_mer *me_of_ev(struct ptl_ni *ni, const struct spin_event *e)
{
	int i;

	if (e->me >= SPIN_MAX_ME || (i = ni->me_by_rt[e->me]) < 0 ||
	    !ptl_me_at(ni, (uint32_t)i)->used ||
	    e->user_ptr != ptl_me_handle(ni, ptl_me_at(ni, (uint32_t)i)))
		return NULL;
	return ptl_me_at(ni, (uint32_t)i);
}

static int on_event(void *ctx, const struct spin_event *e)
{
	struct ptl_ni *ni = ctx;
	struct ptl_mer *m;
	struct ptl_pending *p;

	if ((e->kind == SPIN_EV_PUT || e->kind == SPIN_EV_GET) && eq_full_for(ni, me_of_ev(ni, e))) {
		ni->held = *e;
		ni->has_held = true;
		ni->rs.held++;
		return 1;	/* stop reading the ring */
	}
	switch (e->kind) {
	case SPIN_EV_PUT:
	case SPIN_EV_GET: {
		ptl_event_t ev = {
			.type = e->kind == SPIN_EV_PUT ? PTL_EVENT_PUT : PTL_EVENT_GET,
			.start = ni->win + e->start, .hdr_data = e->hdr_data,
			.match_bits = e->match_bits, .rlength = e->rlength, .mlength = e->mlength,
			.remote_offset = e->remote_off, .ni_fail_type = ptl_fail_of(e->fail),
		};

		if (!(m = me_of_ev(ni, e))) {
			ni->drops++;
			break;
		}
		/* the units the runtime added to the entry's wake_count */
		if (e->fail == SPIN_FAIL_OK)
			m->wake_seen += (m->me.options & PTL_ME_EVENT_CT_BYTES) ? e->mlength : 1;
		ptl_target_done(ni, m, &ev, e->src_rank, e->src_pid);
		break;
	}
	case SPIN_EV_AUTO_UNLINK:
		if ((m = me_of_ev(ni, e)))
			ptl_me_auto_unlink(ni, m, false);
		break;
	case SPIN_EV_ACK:
		p = ptl_pend_find(ni, e->msg_id);
		if (p && p->kind == PEND_ACK && p->rank == e->src_rank && p->rel) {
			/* a probe riding on it, answered without a range */
			bool norange = p->quiet && (p->args.flags & SPIN_F_SACK_REQ) &&
				       !e->user_ptr && e->fail == SPIN_FAIL_OK;

			ptl_rel_on_ack(ni, p, e->fail, e->mlength, e->list);
			if (norange)
				ptl_rel_no_range(ni, e->src_rank, e->msg_id);
		}
		else if (p && p->kind == PEND_ACK && p->rank == e->src_rank)
			ptl_pend_complete(ni, p, ptl_fail_of(e->fail), e->mlength, (ptl_list_t)e->list);
		else if (!e->user_ptr)
			ni->drops++;	/* (a probe's ack may name an acked message) */
		if (e->user_ptr)
			ptl_rel_on_range(ni, e->src_rank, e->msg_id, e->user_ptr);
		break;
	case SPIN_EV_GET_FROM_HOST: {
		const struct spin_put_req *r = &e->put;

		struct ptl_sent_reply *sr = &ni->sent_reply[(r->ack_msg_id ^ r->target_rank * 31) %
							   (sizeof(ni->sent_reply) /
							    sizeof(ni->sent_reply[0]))];

		uint64_t src;

		/* a window address of this process's window (wire.h) */
		if (spin_win_local(r->src_off, ni->rt->slot, r->len, ni->win_len, &src))
			break;
		/* a repeated get that crossed the whole reply to its first
		 * copy (it came before that reply was sent) has its answer */
		if (sr->rank == r->target_rank && sr->id == r->ack_msg_id &&
		    ptl_rel_reply_crossed(e->timestamp_ns, sr->sent_ns)) {
			ni->rs.reget_crossed++;
			break;
		}
		send_reply(ni, r->target_rank, e->pt_index, r->ack_msg_id, r->match_bits,
			   r->remote_off, r->hdr_data, ni->win + src, r->len, r->ack_mlength,
			   r->ack_fail, r->ack_list);
		sr->rank = r->target_rank;
		sr->id = r->ack_msg_id;
		sr->sent_ns = ptl_now_us() * 1000;
		break;
	}
	case SPIN_EV_PUT_FROM_HOST: {
		const struct spin_put_req *r = &e->put;
		struct spin_msg_args a = {
			.op = SPIN_OP_PUT, .pt_index = (uint16_t)e->pt_index,
			.match_bits = r->match_bits, .remote_off = r->remote_off,
			.hdr_data = r->hdr_data,
			.flags = SPIN_F_FROM_HOST | (r->ack_req ? SPIN_F_ACK_REQ : 0),
		};

		uint64_t src;

		if (spin_win_local(r->src_off, ni->rt->slot, r->len, ni->win_len, &src))
			break;
		if (spin_xsk_send(ni->xsk, r->target_rank, &a, ni->win + src, r->len, NULL,
				  NULL))
			ni->drops++;
		break;
	}
	case SPIN_EV_PT_DISABLED:
		if (e->pt_index < SPIN_MAX_PT && ni->pt[e->pt_index].used) {
			ptl_event_t ev = {
				.type = PTL_EVENT_PT_DISABLED, .pt_index = ptl_pt_user(e->pt_index),
				.match_bits = e->match_bits,
				.initiator = ptl_initiator(ni, e->src_rank, e->src_pid),
				.ni_fail_type = PTL_NI_PT_DISABLED, .uid = ni->uid,
			};

			ni->pt[e->pt_index].enabled = false;
			ptl_eq_post(ni, ni->pt[e->pt_index].eq, &ev);
		}
		break;
	case SPIN_EV_MSG_TIMEOUT: {
		/* a message that never completed: its entry gets the event,
		 * with the failure, and a use-once entry is used up */
		struct ptl_rx *r = rx_find(ni, e->src_rank, e->msg_id, false);
		ptl_event_t ev = {
			.type = PTL_EVENT_PUT, .match_bits = e->match_bits, .rlength = e->rlength,
			.mlength = 0, .ni_fail_type = PTL_NI_DROPPED,
		};
		ptl_handle_me_t meh;

		if (r) {
			struct ptl_rx dead = *r;

			r->bitmap = NULL;
			rx_free(ni, r);
			ev.start = (uint8_t *)dead.me.me.start + dead.off;
			ev.hdr_data = be64toh(dead.h.hdr_data);
			ev.remote_offset = be64toh(dead.h.remote_off);
			ptl_target_done(ni, &dead.me, &ev, e->src_rank, ntohl(dead.h.src_pid));
			me_after(ni, dead.meh);
			free(dead.bitmap);
		} else if ((m = me_of_ev(ni, e))) {
			ev.start = ni->win + e->start;
			meh = ptl_me_handle(ni, m);
			ptl_target_done(ni, m, &ev, e->src_rank, e->src_pid);
			/* the runtime freed a use-once window entry already */
			if ((m = ptl_me_get(ni, meh)) && (m->me.options & PTL_ME_USE_ONCE))
				ptl_me_auto_unlink(ni, m, false);
		}
		ni->drops++;
		break;
	}
	}
	return 0;
}

/* ------------------------------------------------------------- progress -- */

static void tick(struct ptl_ni *ni)
{
	uint64_t now = spin_now_ms();

	if (now < ni->next_tick_ms)
		return;
	ni->next_tick_ms = now + 10;
	/* reliable messages have their own timers (ptl_rel_tick) */
	if (ni->n_timed > 0)
		for (int i = 0; i < PTL_N_PENDING; i++) {
			struct ptl_pending *p = &ni->pend[i];

			if (p->msg_id && now > p->deadline_ms)
				ptl_pend_complete(ni, p, PTL_NI_UNDELIVERABLE, 0, PTL_PRIORITY_LIST);
		}
	for (int i = 0; i < PTL_N_RX; i++) {
		struct ptl_rx *r = &ni->rx[i];

		if (r->used && now > r->last_ms + 2 * (SPIN_MSG_TIMEOUT_NS / 1000000)) {
			rx_free(ni, r);
			ni->drops++;
		}
	}
}

/* PtlSpinWaitStats: why a thread is looking at the rings, that is how its
 * last sleep ended (END_NONE: it did not sleep, it was running anyway).
 * A waiter that another thread woke (END_POKE) counts what woke that
 * thread: the runtime's wake-up through the progress thread is still the
 * runtime's wake-up, and a progress thread that found the event because
 * its own period ran out did not see a wake-up either. */
enum sleep_end { END_NONE, END_RING, END_RX, END_POKE, END_TIMER };
static __thread enum sleep_end t_look;

int ptl_progress(struct ptl_ni *ni)
{
	int n = 0, k;

	ni->in_progress = true;

	k = spin_xsk_recv(ni->xsk, on_pkt, ni, 0);
	if (k > 0)
		n += k;
	if (ni->has_held && !eq_full_for(ni, me_of_ev(ni, &ni->held))) {
		ni->has_held = false;
		on_event(ni, &ni->held);
		n++;
	}
	if (!ni->has_held) {
		k = spin_events_consume(ni->rt, on_event, ni);
		if (k > 0)
			n += k;
	}
	tick(ni);
	ptl_rel_tick(ni);
	ni->in_progress = false;
	if (n) {
		ni->poke_look = t_look;
		pthread_cond_broadcast(&ni->cv);
		ptl_poke(ni);
	}
	return n;
}

void ptl_poke(struct ptl_ni *ni)
{
	/* the poller's own progress needs no poke; another thread's does:
	 * the poller sleeps in poll(), and the events that would wake it
	 * are taken already */
	if (ni->poller && ni->poke_fd >= 0 && !pthread_equal(ni->poller_thr, pthread_self()) &&
	    write(ni->poke_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0) {
		/* EAGAIN: already poked */
	}
}

bool ptl_wake_arm(struct ptl_ni *ni, struct ptl_mer *m, uint64_t need)
{
	int i;

	if (m->rt < 0 || !need)
		return true;
	for (i = 0; i < ni->n_armed && ni->armed[i] != (uint32_t)m->rt; i++)
		;
	if (i == ni->n_armed) {
		if (ni->n_armed == PTL_N_ARMED)
			return true;	/* not armed: its events wake as before */
		ni->armed[ni->n_armed++] = (uint32_t)m->rt;
	}
	return spin_me_wake_arm(ni->rt, (uint32_t)m->rt, m->wake_seen + need) == 0;
}

void ptl_wake_disarm(struct ptl_ni *ni)
{
	for (int i = 0; i < ni->n_armed; i++)
		spin_me_wake_arm(ni->rt, ni->armed[i], 0);
	ni->n_armed = 0;
}

void ptl_app_poll(struct ptl_ni *ni)
{
	/* the application polls the rings itself (PtlEQGet, PtlCTGet in a
	 * loop): the progress thread stays away for spin_us, as after a
	 * busy-polling wait, and the runtime need not wake anyone for the
	 * events.  Not while the thread or a waiting caller sleeps in poll():
	 * it would then see ring events only at its timeout.  The thread's
	 * next wake-up sends it to wait out the grace period, and the next
	 * call here quiets the runtime. */
	ni->last_spin_us = ptl_now_us();
	if (!ni->bg_in_poll && !ni->poller &&
	    !(__atomic_load_n(&ni->rt->cfg->flags, __ATOMIC_RELAXED) & SPIN_CFG_F_RB_QUIET))
		__atomic_or_fetch(&ni->rt->cfg->flags, SPIN_CFG_F_RB_QUIET, __ATOMIC_SEQ_CST);
	ptl_progress(ni);
}

/* A waiter's sleep ended: count it; a poke counts as what woke the poker.
 * Returns (and makes this thread's t_look) how it counts. */
static enum sleep_end sleep_ended(struct ptl_ni *ni, enum sleep_end how)
{
	ni->ws.sleeps++;
	if (how == END_TIMER)
		ni->ws.sleeps_timer++;
	if (how == END_POKE && ni->poke_look != END_NONE)
		how = ni->poke_look;
	return t_look = how;
}

static void count_wait(struct ptl_ni *ni, enum sleep_end how)
{
	uint64_t *c[] = { [END_NONE] = &ni->ws.waits_nosleep, [END_RING] = &ni->ws.waits_woken,
			  [END_RX] = &ni->ws.waits_rx, [END_POKE] = &ni->ws.waits_poked,
			  [END_TIMER] = &ni->ws.waits_timer };

	ni->ws.waits++;
	(*c[how])++;
}

int ptl_wait(struct ptl_ni *ni, bool (*done)(struct ptl_ni *, void *),
	     bool (*arm)(struct ptl_ni *, void *), void *arg, ptl_time_t timeout_ms)
{
	uint64_t start = ptl_now_us(), deadline = timeout_ms == PTL_TIME_FOREVER ? UINT64_MAX :
					      start + (uint64_t)timeout_ms * 1000;
	bool spinning = true, polling = false;
	unsigned int spins = 0, early = 0;
	enum sleep_end how = END_NONE;	/* how the last sleep ended */
	int rc;

	/* a poller's thresholds are for its own wait only */
	if (ni->waiters++ && ni->n_armed)
		ptl_wake_disarm(ni);
	ni->spinners++;
	t_look = END_NONE;
	/* we busy-poll: no wake-ups, unless another caller sleeps in poll()
	 * and needs them (it would see its events only at its timeout) */
	if (!ni->poller &&
	    !(__atomic_load_n(&ni->rt->cfg->flags, __ATOMIC_RELAXED) & SPIN_CFG_F_RB_QUIET))
		__atomic_or_fetch(&ni->rt->cfg->flags, SPIN_CFG_F_RB_QUIET, __ATOMIC_SEQ_CST);
	for (;;) {
		uint64_t t;

		if (ni->aborted) {	/* PtlAbort */
			rc = PTL_ABORTED;
			break;
		}
		ptl_progress(ni);
		if (done(ni, arg)) {
			rc = PTL_OK;
			break;
		}
		if (ni->stop) {
			rc = PTL_INTERRUPTED;
			break;
		}
		t = ptl_now_us();
		if (t >= deadline) {
			rc = PTL_EQ_EMPTY;
			break;
		}
		if (spinning && t - start < ni->spin_us) {
			uint64_t g, t0 = t;

			/* look without the lock until there may be something
			 * new: packets or events, or another thread held the
			 * lock (it may have taken ours, or changed what done()
			 * checks).  Taking the lock at every turn would keep
			 * out a thread woken from poll() by its own event. */
			ptl_unlock(ni);
			g = __atomic_load_n(&ni->lock_gen, __ATOMIC_ACQUIRE);
			for (;;) {
				if (++spins % 128 == 0)
					sched_yield();	/* another thread may need this CPU */
				else
					spin_cpu_relax();
				if (__atomic_load_n(&ni->lock_gen, __ATOMIC_ACQUIRE) != g ||
				    spin_xsk_rx_pending(ni->xsk) || spin_events_pending(ni->rt) ||
				    __atomic_load_n(&ni->stop, __ATOMIC_RELAXED) ||
				    __atomic_load_n(&ni->aborted, __ATOMIC_RELAXED))
					break;
				/* timers (tick) and the end of the spin */
				if (spins % 64 == 0 && ptl_now_us() - t0 >= 1000)
					break;
			}
			ptl_lock(ni);
			continue;
		}
		if (spinning) {
			spinning = false;
			ni->spinners--;
			ni->last_spin_us = 0;
		}
		if (!polling && !ni->poller) {
			/* sleep in poll() on the event ring and the socket
			 * ourselves: the runtime's wake-up reaches this thread
			 * directly, not the progress thread, which would then
			 * have to wake it (two switches per event instead of
			 * one).  The runtime must wake the ring's readers
			 * again; what it posted quietly meanwhile is taken at
			 * the top of the loop before the first poll(). */
			ni->poller = polling = true;
			ni->poller_thr = pthread_self();
			if (!ni->wake_us)
				__atomic_and_fetch(&ni->rt->cfg->flags, ~SPIN_CFG_F_RB_QUIET,
						   __ATOMIC_SEQ_CST);
			continue;
		}
		if (polling) {
			struct pollfd pfd[4];
			uint64_t until = t + ni->poll_us < deadline ? t + ni->poll_us : deadline;
			int n = 0, ring = -1, poke = -1, lo, r;

			if (ni->wake_us) {
				/* interrupt moderation: no wake-ups, look
				 * again after wake_us */
				until = t + ni->wake_us < deadline ? t + ni->wake_us : deadline;
			} else if (arm && ni->waiters == 1 && early < 256) {
				/* wake only for the event that can end the
				 * wait; if it may be in the ring already (its
				 * writer still finishing it), look again
				 * instead of sleeping, a bounded number of
				 * times */
				if (!arm(ni, arg)) {
					early++;
					ptl_unlock(ni);
					spin_cpu_relax();
					ptl_lock(ni);
					continue;
				}
			} else if (ni->n_armed) {
				ptl_wake_disarm(ni);
			}
			/* a retransmission timer may not wait for a wake-up */
			if (ni->rel_next_us < until)
				until = ni->rel_next_us > t ? ni->rel_next_us : t;

			pfd[n++] = (struct pollfd){ .fd = spin_xsk_fd(ni->xsk), .events = POLLIN };
			/* packets this process sent itself (xsk.h) */
			lo = n;
			pfd[n++] = (struct pollfd){ .fd = spin_xsk_lo_fd(ni->xsk), .events = POLLIN };
			if (spin_events_fd(ni->rt) >= 0 && !ni->has_held) {
				ring = n;
				pfd[n++] = (struct pollfd){ .fd = spin_events_fd(ni->rt), .events = POLLIN };
			}
			if (ni->poke_fd >= 0) {
				poke = n;
				pfd[n++] = (struct pollfd){ .fd = ni->poke_fd, .events = POLLIN };
			}
			ptl_unlock(ni);
			r = ppoll(pfd, n, &(struct timespec){ (until - t) / 1000000, (until - t) % 1000000 * 1000 },
				  NULL);
			if (poke >= 0 && (pfd[poke].revents & POLLIN)) {
				uint64_t v;

				if (read(ni->poke_fd, &v, sizeof(v)) < 0) {
					/* EAGAIN: another reader took it */
				}
			}
			ptl_lock(ni);
			how = r == 0 ? END_TIMER :
			      r < 0 ? END_POKE :	/* a signal */
			      ring >= 0 && pfd[ring].revents ? END_RING :
			      pfd[0].revents || pfd[lo].revents ? END_RX : END_POKE;
			how = sleep_ended(ni, how);
			continue;
		}
		{
			/* another caller polls; it broadcasts cv on progress */
			struct timespec ts;
			uint64_t until = t + ni->poll_us < deadline ? t + ni->poll_us : deadline;

			ts.tv_sec = until / 1000000;
			ts.tv_nsec = (until % 1000000) * 1000;
			how = pthread_cond_timedwait(&ni->cv, &ni->mu, &ts) == ETIMEDOUT ? END_TIMER : END_POKE;
			how = sleep_ended(ni, how);
		}
	}
	if (rc == PTL_OK)
		count_wait(ni, how);
	t_look = END_NONE;
	if (spinning) {
		/* the progress thread resumes after the grace period (it
		 * checks at least every 10 ms: no wake-up on this fast path) */
		ni->spinners--;
		ni->last_spin_us = ptl_now_us();
	}
	if (ni->n_armed)
		ptl_wake_disarm(ni);
	if (--ni->waiters == 0)
		ni->aborted = false;	/* every aborted wait has returned */
	if (polling) {
		/* the same for a caller that slept in poll(): events are
		 * posted quietly until the progress thread (or the next
		 * caller) polls again, and clears the flag first; a caller
		 * still waiting on cv becomes the poller */
		ni->poller = false;
		ni->last_spin_us = ptl_now_us();
		__atomic_or_fetch(&ni->rt->cfg->flags, SPIN_CFG_F_RB_QUIET, __ATOMIC_SEQ_CST);
		pthread_cond_broadcast(&ni->cv);
	}
	return rc;
}

void *ptl_progress_thread(void *arg)
{
	struct ptl_ni *ni = arg;

	ptl_lock(ni);
	while (!ni->stop) {
		struct pollfd pfd[3];
		int n = 0, r;

		/* stay out of the way while callers busy-poll, and for spin_us
		 * after the last one returned: a caller that waits again soon
		 * (a ping-pong) finds the CPU free.  A caller that keeps
		 * polling (PtlEQGet in a loop) keeps moving that moment: look
		 * less and less often, up to every 10 ms */
		uint64_t extra = 0;

		for (;;) {
			uint64_t t = ptl_now_us(), until = ni->last_spin_us + ni->spin_us;
			struct timespec ts;

			if (ni->stop)
				break;
			if (ni->spinners > 0 || ni->poller) {
				uint64_t u = t + 10000;

				ts.tv_sec = u / 1000000;
				ts.tv_nsec = (u % 1000000) * 1000;
				pthread_cond_timedwait(&ni->bg_cv, &ni->mu, &ts);
				continue;
			}
			if (!ni->last_spin_us || t >= until)
				break;
			if (until < t + extra)
				until = t + extra;
			extra = !extra ? ni->spin_us : extra * 2 < 10000 ? extra * 2 : 10000;
			ts.tv_sec = until / 1000000;
			ts.tv_nsec = (until % 1000000) * 1000;
			pthread_cond_timedwait(&ni->bg_cv, &ni->mu, &ts);
		}
		if (ni->stop)
			break;
		/* the runtime wakes the ring's readers again, then whatever it
		 * posted quietly meanwhile is taken before sleeping (with
		 * interrupt moderation it never wakes them: look every wake_us) */
		if (!ni->wake_us)
			__atomic_and_fetch(&ni->rt->cfg->flags, ~SPIN_CFG_F_RB_QUIET,
					   __ATOMIC_SEQ_CST);
		t_look = END_NONE;
		ptl_progress(ni);
		pfd[n++] = (struct pollfd){ .fd = spin_xsk_fd(ni->xsk), .events = POLLIN };
		if (spin_events_fd(ni->rt) >= 0 && !ni->has_held)
			pfd[n++] = (struct pollfd){ .fd = spin_events_fd(ni->rt), .events = POLLIN };
		/* last: packets this process sent itself (xsk.h) */
		pfd[n++] = (struct pollfd){ .fd = spin_xsk_lo_fd(ni->xsk), .events = POLLIN };
		ni->bg_in_poll = true;
		ptl_unlock(ni);
		{
			/* its period, or the next retransmission timer */
			uint64_t per = ni->wake_us && ni->wake_us < 10000 ? ni->wake_us :
				       ni->poll_us > 10000 ? ni->poll_us : 10000, t = ptl_now_us();

			if (ni->rel_next_us != UINT64_MAX)
				per = ni->rel_next_us <= t ? 0 :
				      ni->rel_next_us - t < per ? ni->rel_next_us - t : per;
			r = ppoll(pfd, n, &(struct timespec){ per / 1000000, (long)(per % 1000000) * 1000 },
				  NULL);
		}
		ptl_lock(ni);
		ni->bg_in_poll = false;
		if (r > 0)
			ni->ws.bg_wakeups++;
		else if (r == 0)
			ni->ws.bg_timer++;
		t_look = r == 0 ? END_TIMER : r < 0 ? END_NONE :
			 n > 2 && pfd[1].revents ? END_RING :
			 pfd[0].revents || pfd[n - 1].revents ? END_RX : END_NONE;
		if (!ni->stop && ni->spinners == 0)
			ptl_progress(ni);
	}
	ptl_unlock(ni);
	return NULL;
}

void ptl_data_fini(struct ptl_ni *ni)
{
	for (int i = 0; i < PTL_N_PENDING; i++)
		if (ni->pend[i].msg_id)
			pend_del(ni, &ni->pend[i]);
	for (int i = 0; i < PTL_N_RX; i++)
		if (ni->rx[i].used)
			rx_free(ni, &ni->rx[i]);
	n_pending = 0;
	ni->n_timed = 0;
}
