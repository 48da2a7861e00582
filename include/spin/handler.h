/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * spin/handler.h - the device side of sPIN: write packet handlers in C as
 * the sPIN paper does, compile them with `clang -target bpf`, and register
 * them with one line:
 *
 *     SPIN_HANDLERS(my_header_handler, my_payload_handler, my_completion_handler);
 *
 * Any of the three may be NULL.  The line produces the XDP entry program
 * (`spin_handler_entry`) that the runtime reaches by tail call; it runs the
 * phases the runtime asks for and returns to the runtime's finish stage.
 *
 * Handlers are inlined into that entry program (`__handler` is
 * `static __always_inline`), so the verifier sees one function and a
 * handler may keep pointers to its state, the packet and its stack.  The
 * runtime's default deposit and finish step (counters, completion event,
 * the put) are not in it: the program ends with a tail call into the
 * runtime's finish stage (spin_stages), so it is the handlers' code, the
 * calls they make and a small fixed prologue.
 */
#ifndef SPIN_HANDLER_H
#define SPIN_HANDLER_H

/* vmlinux.h has an enumerator DROP of its own; keep it out of the way of
 * the sPIN return code. */
#define DROP __spin_vmlinux_DROP
#include "vmlinux.h"
#undef DROP
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <spin/ptl_types.h>
#include <spin/maps.bpf.h>
#include <spin/softfloat.h>

#ifndef NULL
#define NULL ((void *)0)
#endif

#define __handler static __always_inline

/*
 * Handler memory: SPIN_HPU_SIZE (4 KiB) per entry, or, for a handler built
 * with `#define SPIN_HANDLER_MEM n` (up to SPIN_HPU_BIG_SIZE, 64 KiB)
 * before this header, the entry's big handler memory: the entry must be
 * appended with spin_me_spec.hpu_size >= n (`spinctl me append ...
 * hpu-size n`), or its packets are dropped as handler_error.
 */
#ifndef SPIN_HANDLER_MEM
#define SPIN_HANDLER_MEM	SPIN_HPU_SIZE
#endif
_Static_assert(SPIN_HANDLER_MEM <= SPIN_HPU_BIG_SIZE, "SPIN_HANDLER_MEM is at most 64 KiB");

/* The entry's handler memory as this handler program was built for (the
 * entry's hpu_size: the dispatch put it in spin_ctx; the maps are the
 * handler program's slot's, lib/handler.c). */
static __always_inline void *__spin_hpu(struct spin_ctx *c)
{
	__u32 k = c->me;

	if (SPIN_HANDLER_MEM > SPIN_HPU_SIZE) {
		if (c->hpu_size < SPIN_HANDLER_MEM)
			return NULL;
		return bpf_map_lookup_elem(&spin_hpu_big, &k);
	}
	return bpf_map_lookup_elem(&spin_hpu, &k);
}

/* Handler return codes (sPIN paper, section 3). */
typedef enum {
	SUCCESS = 0,		/* payload/completion: done */
	PROCEED = 1,		/* header: skip payload handlers, deposit */
	PROCESS_DATA = 2,	/* header: run the payload handler per packet */
	DROP = 3,		/* drop the packet (payload) / message (header) */
	SUCCESS_PENDING = 4,	/* as SUCCESS; DMA requests still in flight */
	PROCEED_PENDING = 5,
	PROCESS_DATA_PENDING = 6,
	DROP_PENDING = 7,
	FAIL = 8,		/* handler error: message fails (PTL_NI_FAIL) */
} spin_handler_rc_t;

/* Options of the DMA calls. */
#define PTL_ME_HOST_MEM		0x0	/* offset relative to the ME's buffer */
#define PTL_HANDLER_HOST_MEM	0x1	/* ... relative to handler host memory */

/*
 * The `ct` argument of the put calls: a counting event to count the put's
 * completion on.  PTL_LOCAL_ME_CT names the match entry whose handler
 * makes the put (the paper's handlers pass it): spin counts the put on the
 * entry's ct_puts when it is sent (docs/handlers.md, "Messages from
 * handlers"); other values count nothing.
 */
typedef unsigned int ptl_req_ct_t;
#define PTL_LOCAL_ME_CT		((ptl_req_ct_t)SPIN_CT_LOCAL_ME)

/* Datatype of PtlHandlerDMAFetchAdd* (the Portals atomic datatypes,
 * PTL_INT8_T ... PTL_DOUBLE, spin/ptl_types.h); PTL_INT is C's int, as
 * the simulator's handlers use it. */
typedef ptl_datatype_t ptl_type_t;
#define PTL_INT			PTL_INT32_T

/*
 * A DMA handle, a value as in the paper: the NB calls store one through
 * their last argument, PtlHandlerDMATest() and PtlHandlerDMAWait() take it
 * by value.  spin's DMA completes before the call returns, so the handle
 * only records that and whether it failed.  0 is no DMA.
 */
typedef __u64 ptl_dma_h;
#define SPIN_DMA_H_DONE		(1ull << 63)	/* the DMA was carried out */
#define SPIN_DMA_H_FAILED	(1ull << 62)	/* ... and failed (out of bounds) */

typedef struct {
	__u64 arg[4];
} ptl_user_header_t;

/* What the header handler sees: the message's Portals header. */
typedef struct {
	__u32 type;			/* SPIN_OP_PUT, ... */
	ptl_size_t length;		/* message length in bytes */
	ptl_process_t target_id;	/* rank of this process */
	ptl_process_t source_id;	/* initiator rank */
	ptl_pid_t source_pid;		/* initiator pid */
	ptl_match_bits_t match_bits;
	ptl_size_t offset;		/* remote offset */
	ptl_hdr_data_t hdr_data;
	ptl_pt_index_t pt_index;
	__u32 msg_id;
	ptl_user_header_t user_hdr;
} ptl_header_t;

/*
 * What a payload handler sees: one packet.  base..base+length are the
 * packet's payload bytes, readable and writable in place; the verifier
 * wants every access checked against `end`, which SPIN_PTR() does.
 */
typedef struct {
	void *base;
	ptl_size_t length;
	ptl_size_t offset;		/* of this packet within the message */
	void *end;			/* packet end, for bounds checks */
} ptl_payload_t;

/* Pointer to `size` bytes at `off` in the payload, or NULL. */
#define SPIN_PTR(p, off, size)						\
	((__u8 *)(p).base + (off) + (size) <= (__u8 *)(p).end ?	\
	 (void *)((__u8 *)(p).base + (off)) : (void *)0)

/* ------------------------------------------------------ iteration -- */

#ifndef SPIN_NO_KFUNCS
/* open-coded iterators (Linux 6.4+) */
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __weak __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __weak __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __weak __ksym;
#endif

/*
 * spin_for(i, start, end) { ... }: a plain loop of i = start .. end - 1 (i
 * an int variable of the handler; start and end ints without side effects,
 * at most 8M iterations) that verifies whatever the trip count.  It is an
 * open-coded iterator (bpf_iter_num): the verifier checks the body once
 * per distinct state at its head instead of once per iteration, and knows
 * start <= i < end inside it.  break and return leave it (the iterator is
 * destroyed on the way out).  The body stays in the handler's frame, so it
 * may use the handler's pointers to packet, state and stack.
 *
 * What makes such a loop verify: derive what differs between iterations
 * from i (piece i of a packet, block i of a vector) instead of carrying a
 * counter from one iteration to the next; a carried value that bounds a
 * pointer (an offset into the packet) makes every iteration a new state.
 * samples/datatypes/datatypes.bpf.c is an example.
 */
#ifdef SPIN_NO_KFUNCS
/* Without bpf_iter_num (kernels before 6.4, maps.bpf.h): a bounded loop,
 * which the verifier walks once per iteration: a trip count that depends
 * on the packet may not verify there. */
#define spin_for(i, start, end)	for ((i) = (start); (i) < (end); (i)++)
#else
#define spin_for(i, start, end)							\
	for (struct bpf_iter_num __spin_it					\
		     __attribute__((aligned(8), cleanup(bpf_iter_num_destroy))),	\
	     *__spin_it_init __attribute__((unused)) =				\
		     (bpf_iter_num_new(&__spin_it, (start), (end)),		\
		      (void)bpf_iter_num_destroy, (void *)0);			\
	     ({ int *__spin_ip = bpf_iter_num_next(&__spin_it);		\
		__spin_ip && ((i) = *__spin_ip, (i) >= (start) && (i) < (end)); }); )
#endif

/* ---------------------------------------------------- internals -- */

/* spin extension: the id and source rank of the message being handled. */
static __always_inline __u32 spin_msg_id(void)
{
	__u32 k = 0;
	struct spin_ctx *c = bpf_map_lookup_elem(&spin_ctx, &k);

	return c ? c->key.msg_id : 0;
}

/*
 * spin extension: the remote offset of the message being handled (the
 * header's `offset`), for a payload handler that places or forwards a
 * packet at its place in the target buffer: the packet's bytes belong at
 * spin_msg_offset() + p.offset.  (A header handler sees it as h.offset, but
 * handler memory is shared by the messages in flight.)
 */
/* spin extension: the NIC's clock, in ns.  Here the host's CLOCK_MONOTONIC
 * (bpf_ktime_get_ns), so a host program can compare it with
 * clock_gettime(CLOCK_MONOTONIC): for timestamping arrivals on the NIC. */
static __always_inline __u64 spin_time_ns(void)
{
	return bpf_ktime_get_ns();
}

static __always_inline ptl_size_t spin_msg_offset(void)
{
	__u32 k = 0;
	struct spin_ctx *c = bpf_map_lookup_elem(&spin_ctx, &k);

	return c ? c->start - c->host_off : 0;
}

/*
 * spin extension: SPIN_SCRATCH_SIZE (16 KiB) bytes of scratch memory, for
 * buffers too big for the 512-byte stack (a RAID block, an accumulate
 * buffer).  Use it like a stack buffer: it belongs to the invocation that
 * asked (one per CPU; a handler program does not nest on a CPU), its
 * contents are undefined when the invocation starts (not zeroed: that
 * would cost every packet) and gone when it ends.  Every call of one
 * invocation returns the same memory.  NULL only if the runtime's map is
 * missing; the verifier knows the pointer is to 16 KiB.
 */
static __always_inline void *spin_scratch(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&spin_hscratch, &k);
}

/*
 * spin extension: SPIN_MSG_STATE_SIZE (256) bytes that belong to the
 * message being handled, from its header handler to its completion
 * handler, zeroed when the message's first handler call asks for them:
 * per-message fields (a ping's source, a RAID block's length and flags)
 * that handler memory, shared by the messages in flight on all CPUs,
 * cannot hold.  Packets of one message on several CPUs see the same
 * bytes (use atomics for fields they all update).  The state goes with
 * the message (completion, timeout).  NULL when the table of message
 * states is full (SPIN_MAX_MSGS messages in flight).
 */
static __always_inline void *spin_msg_state(void)
{
	struct spin_ctx *c = spin_ctx_get();
	struct spin_mstate_mem *m;
	__u32 k = 0;

	if (!c)
		return NULL;
	m = bpf_map_lookup_elem(&spin_mstate_pc, &k);
	if (!c->multi) {
		/* a single-packet message: this invocation is all of it */
		if (m && !c->ms_ready) {
			__builtin_memset(m, 0, sizeof(*m));
			c->ms_ready = 1;
		}
		return m;
	}
	{
		struct spin_mstate_mem *s = bpf_map_lookup_elem(&spin_mstate, &c->key);

		if (s || !m)
			return s;
		/* the message's first call: insert zeros (another CPU may win;
		 * then its element is the one) */
		__builtin_memset(m, 0, sizeof(*m));
		bpf_map_update_elem(&spin_mstate, &c->key, m, BPF_NOEXIST);
		return bpf_map_lookup_elem(&spin_mstate, &c->key);
	}
}

/* Launder a pointer of any kind into a plain address (needs CAP_BPF +
 * CAP_PERFMON, which loading XDP programs implies). */
static __always_inline __u64 __spin_addr(struct spin_ctx *c, const void *p)
{
	c->addr_tmp = (__u64)p;
	return *(volatile __u64 *)&c->addr_tmp;
}

/* Resolve a DMA offset to a window address (SPIN_WIN_ADDR) in the entry's
 * slot's window, or -1.  The entry's ranges are the dispatch's copy in
 * spin_ctx: a handler that rewrites them reaches no more than its own
 * slot's window, the only one its maps hold (lib/handler.c). */
static __always_inline __s64 __spin_host_off(struct spin_ctx *c, ptl_size_t off,
					      ptl_size_t len, unsigned int options)
{
	__u64 base, lim;

	if (options & PTL_HANDLER_HOST_MEM) {
		base = c->hhost_off;
		lim = c->hhost_len;
	} else {
		base = c->host_off;
		lim = c->host_len;
	}
	if (len > lim || off > lim - len)
		return -1;
	/* a window address in the entry's process slot's window only
	 * (wire.h, SPIN_WIN_SHIFT): -1 if it does not fit there */
	return (__s64)spin_win_addr(SPIN_PT_SLOT(c->pt), base + off);
}

/*
 * DMA between handler-local memory and host memory.  To host, `local` may
 * be any handler pointer (packet, handler memory, stack).  From host,
 * `local` must be memory the verifier can prove `len` bytes for (stack or
 * handler memory with a constant or bounded len).  Either way it is one
 * copy, or two through the per-CPU bounce buffer when the host range is
 * near the end of a spin_host element (maps.bpf.h).  No dynptr is left on
 * the stack, so any later stack variable may be a DMA target.
 */
static __always_inline int __spin_dma_done(struct spin_ctx *c, int rc, ptl_size_t len, int to_host)
{
	/* counted in spin_ctx: the finish stage adds them to spin_stats */
	if (rc) {
		c->h_oob++;
		c->fail = 1;
		return -1;
	}
	if (to_host)
		c->h_dma_to += len;
	else
		c->h_dma_from += len;
	return 0;
}

static __always_inline int __spin_dma_to(const void *local, ptl_size_t offset, ptl_size_t len,
					 unsigned int options)
{
	struct spin_ctx *c = spin_ctx_get();
	__s64 off;
	int rc = -1;

	if (!c)
		return -1;
	if (len == 0)
		return 0;
	off = __spin_host_off(c, offset, len, options);
	if (off >= 0 && len <= SPIN_MAX_DMA)
		rc = spin_ptr_to_host(local, off, len, c->bounce);
	return __spin_dma_done(c, rc, len, 1);
}

static __always_inline int __spin_dma_from(void *local, ptl_size_t offset, ptl_size_t len,
					   unsigned int options)
{
	struct spin_ctx *c = spin_ctx_get();
	__s64 off;
	int rc = -1;

	if (!c)
		return -1;
	if (len == 0)
		return 0;
	off = __spin_host_off(c, offset, len, options);
	if (off >= 0 && len <= SPIN_MAX_DMA)
		rc = spin_host_to_ptr(local, off, len, c->bounce);
	return __spin_dma_done(c, rc, len, 0);
}

static __always_inline ptl_process_t __spin_proc_id(ptl_process_t p) { return p; }
static __always_inline ptl_process_t __spin_proc_rank(__u64 r)
{
	ptl_process_t p = {};
	p.rank = (ptl_rank_t)r;
	return p;
}
/* A target may be a ptl_process_t or a plain integer rank. */
#define __spin_proc(t) _Generic((t), ptl_process_t: __spin_proc_id, default: __spin_proc_rank)(t)
/* ... and its rank (the put calls take only that: a copy of the whole
 * union is lowered to byte loads) */
static __always_inline ptl_rank_t __spin_rank_id(ptl_process_t p) { return p.rank; }
static __always_inline ptl_rank_t __spin_rank_rank(__u64 r) { return (ptl_rank_t)r; }
#define __spin_rank(t) _Generic((t), ptl_process_t: __spin_rank_id, default: __spin_rank_rank)(t)

/*
 * spin extension: the user header words (ptl_header_t.user_hdr at the
 * target) of the next put this invocation makes; a put without it sends
 * zeros.
 */
static __always_inline void spin_put_user_hdr(const ptl_user_header_t *uh)
{
	struct spin_ctx *c = spin_ctx_get();

	if (!c || !uh)
		return;
	c->uh_next[0] = uh->arg[0];
	c->uh_next[1] = uh->arg[1];
	c->uh_next[2] = uh->arg[2];
	c->uh_next[3] = uh->arg[3];
	c->uh_set = 1;
}

/* The user header words of this put: the ones spin_put_user_hdr() set, or 0. */
static __always_inline void __spin_put_uh(struct spin_ctx *c, __u64 *uh)
{
	if (c->uh_set) {
		uh[0] = c->uh_next[0];
		uh[1] = c->uh_next[1];
		uh[2] = c->uh_next[2];
		uh[3] = c->uh_next[3];
		c->uh_set = 0;
	} else {
		uh[0] = uh[1] = uh[2] = uh[3] = 0;
	}
}

static __always_inline int __spin_put_fail(struct spin_ctx *c, __u32 why)
{
	/* counted in spin_ctx: the finish stage adds them to spin_stats */
	if (why == SPIN_DROP_HOST_OOB)
		c->h_oob++;
	else if (why == SPIN_DROP_PUT_OVERFLOW)
		c->h_put_over++;
	else
		c->h_put_failed++;
	c->uh_set = 0;
	return -1;
}

/*
 * The put calls.  Each call site only stores its arguments into the
 * per-CPU context (spin_ctx.pa) and calls __spin_put_rec(), one BPF
 * subprogram per handler program whatever the number of call sites, which
 * checks them, takes the put's bytes and records the put: put 0 in
 * spin_ctx.put[0] (the runtime's finish stage builds it in the frame),
 * puts 1 .. SPIN_MAX_PUTS - 1 in the CPU's ring spin_putq (the handler
 * program's process slot's own) at tickets putq_t0 + n - 1 (wire.h,
 * struct spin_putq_ent), sealed by the finish stage, sent by spin_tc.
 *
 * The bytes are taken now, so the handler may reuse its buffer:
 *  - a device put: from the packet itself no copy (put 0 is sent in place,
 *    a later put of put 0's bytes from the frame), else copied with
 *    bpf_probe_read_kernel from wherever `local` is (packet, handler
 *    memory, stack);
 *  - a put from host of at most a packet, queued: copied from the host
 *    window (spin_host, an array map whose elements are contiguous, so a
 *    range that crosses an element boundary is one copy); put 0 and longer
 *    puts are read from the window by the runtime (put 0 when the finish
 *    stage builds it, a longer put by the owning process).
 * `a` is the address of the bytes (a device put, laundered by
 * __spin_addr) or the DMA offset (a put from host, a get).
 */
static __noinline int __spin_put_rec(struct spin_ctx *c, __u64 a)
{
	struct spin_putq_ent *e = NULL;
	struct spin_put_req *r;
	__u32 kind, len, n, k, why = SPIN_DROP_PUT_FAILED;
	__u64 *uh, t;
	__s64 off = 0;
	void *dst;

	if (!c)
		return -1;
	kind = c->pa.kind;
	len = c->pa.len;
	if (kind == SPIN_PUT_DEVICE) {
		if (!a || len > SPIN_MAX_SEG)
			goto fail;
	} else {
		if (kind == SPIN_PUT_HGET && (!len || len > SPIN_HGET_MAX))
			goto fail;
		off = __spin_host_off(c, a, len, PTL_ME_HOST_MEM);
		if (off < 0) {
			c->fail = 1;
			why = SPIN_DROP_HOST_OOB;
			goto fail;
		}
		if (kind == SPIN_PUT_HGET && !c->n_puts) {
			/* put 0 stays empty (the frame is not a put): the GET
			 * goes with the queued ones */
			c->put[0].kind = SPIN_PUT_NONE;
			c->n_puts = 1;
		}
	}
	n = c->n_puts;
	if (n) {
		why = SPIN_DROP_PUT_OVERFLOW;
		if (n >= SPIN_MAX_PUTS)
			goto fail;
		if (n == 1)
			c->putq_t0 = c->putq_head;
		k = (__u32)(c->putq_t0 + n - 1) & (SPIN_PUTQ_SIZE - 1);
		e = bpf_map_lookup_elem(&spin_putq, &k);
		if (!e)
			goto fail;
		why = SPIN_DROP_PUT_FAILED;
		e->ticket = 0;
		r = &e->r;
		dst = e->data;
		uh = e->user_hdr;
	} else {
		r = &c->put[0];
		dst = c->scratch;
		uh = c->put0_uh;
	}
	*r = c->pa;
	r->src = SPIN_SRC_SCRATCH;
	r->src_off = 0;
	r->ack_msg_id = 0;
	r->ack_fail = 0;
	r->ack_mlength = 0;
	r->ack_list = 0;
	r->pad = 0;
	if (kind == SPIN_PUT_DEVICE) {
		if (!n) {
			c->put_addr = a;
			if (a >= c->data_addr + c->pay_off &&
			    a + len <= c->data_addr + c->pay_off + c->pay_len) {
				/* from the packet itself: sent in place */
				r->src = SPIN_SRC_PACKET;
				r->src_off = a - c->data_addr;
				len = 0;
			}
		} else if (c->put[0].kind == SPIN_PUT_DEVICE && c->put[0].src == SPIN_SRC_PACKET &&
			   a == c->put_addr && len == c->put[0].len) {
			/* the bytes put 0 sends from the frame */
			r->src = SPIN_SRC_PACKET;
			len = 0;
		}
	} else if (kind == SPIN_PUT_HOST && n && len <= SPIN_MAX_SEG) {
		/* a queued put from host of at most a packet: its bytes now */
		__u32 in, in_last;
		__u8 *p = spin_host_at(off, &in);

		if (!p || (len && !spin_host_at(off + len - 1, &in_last)))
			goto fail;
		a = (__u64)(unsigned long)(p + in);
	} else {
		/* put 0 from host, a longer one, a get: the window's offset */
		if (kind == SPIN_PUT_HOST)
			r->src = SPIN_SRC_HOST;
		r->src_off = off;
		len = 0;
	}
	if (len > SPIN_MAX_SEG)
		len = SPIN_MAX_SEG;	/* (never: for the verifier) */
	if (len && bpf_probe_read_kernel(dst, len, (const void *)(unsigned long)a)) {
		if (!n)
			r->kind = SPIN_PUT_NONE;
		goto fail;
	}
	__spin_put_uh(c, uh);
	if (!e) {
		c->n_puts = 1;
		return 0;
	}
	t = c->putq_t0 + n - 1;
	e->me = c->me;
	e->pad = 0;
	e->seal = 0;	/* its finish stage seals it (spin_fanout) */
	/* the entry before its ticket (a compiler barrier: x86-64 keeps
	 * stores in order; BPF has no fence) */
	asm volatile("" ::: "memory");
	e->ticket = SPIN_PUTQ_TICKET(bpf_get_smp_processor_id(), t);
	c->putq_head = t + 1;
	c->n_puts = n + 1;
	return 0;
fail:
	return __spin_put_fail(c, why);
}

/* A put call: its arguments into spin_ctx.pa, then __spin_put_rec. */
static __always_inline int __spin_put_call(__u32 kind, __u64 a, ptl_size_t len, ptl_req_ct_t ct,
					   ptl_ack_req_t ack, ptl_rank_t target,
					   ptl_match_bits_t mb, ptl_size_t roff, void *user_ptr,
					   ptl_hdr_data_t hdr_data)
{
	struct spin_ctx *c = spin_ctx_get();

	if (!c)
		return -1;
	c->pa.kind = kind;
	c->pa.len = len > 0xffffffffull ? 0xffffffffu : len;
	c->pa.target_rank = target;
	c->pa.match_bits = mb;
	c->pa.remote_off = roff;
	c->pa.hdr_data = hdr_data;
	c->pa.user_ptr = (__u64)(unsigned long)user_ptr;
	c->pa.ack_req = ack;
	c->pa.ct = ct;
	return __spin_put_rec(c, kind == SPIN_PUT_DEVICE ? __spin_addr(c, (const void *)a) : a);
}

/* A put of len bytes at `local` (packet, handler memory, stack). */
#define __spin_put_device(local, len, ct, ack, target, mb, roff, uptr, hdata)		\
	__spin_put_call(SPIN_PUT_DEVICE, (__u64)(unsigned long)(local), (len), (ct), (ack),	\
			__spin_rank(target), (mb), (roff), (uptr), (hdata))

/* A put of len bytes of the entry's host memory at `offset`; longer than
 * a packet, the owning process sends it (SPIN_EV_PUT_FROM_HOST). */
#define __spin_put_host(offset, len, ct, ack, target, mb, roff, uptr, hdata)		\
	__spin_put_call(SPIN_PUT_HOST, (offset), (len), (ct), (ack), __spin_rank(target), (mb),	\
			(roff), (uptr), (hdata))

/*
 * A get of len bytes (at most SPIN_HGET_MAX) from target's entry matching
 * match_bits at remote_offset, whose reply the runtime deposits into this
 * entry's host memory at `offset`.  The GET is queued like a put (it
 * takes one of the SPIN_MAX_PUTS slots, and is never put 0: the finish
 * stage records it in spin_hgets, spin_tc sends it).
 */
#define __spin_get_host(offset, len, ct, ack, target, mb, roff, uptr, hdata)		\
	__spin_put_call(SPIN_PUT_HGET, (offset), (len), (ct), (ack), __spin_rank(target), (mb),	\
			(roff), (uptr), (hdata))

/* ------------------------------------------------- handler calls -- */

static __always_inline ptl_dma_h __spin_dma_handle(int rc)
{
	return SPIN_DMA_H_DONE | (rc ? SPIN_DMA_H_FAILED : 0);
}

/* DMA `len` bytes from handler-local memory (packet, state, stack) into
 * host memory.  The copy is done when the call returns. */
static __always_inline int PtlHandlerDMAToHostB(void *local, ptl_size_t offset,
						ptl_size_t len, unsigned int options)
{
	return __spin_dma_to(local, offset, len, options);
}

static __always_inline int PtlHandlerDMAToHostNB(void *local, ptl_size_t offset,
						 ptl_size_t len, unsigned int options,
						 ptl_dma_h *h)
{
	int rc = __spin_dma_to(local, offset, len, options);

	if (h)
		*h = __spin_dma_handle(rc);
	return rc;
}

static __always_inline int PtlHandlerDMAFromHostB(ptl_size_t offset, void *local,
						  ptl_size_t len, unsigned int options)
{
	return __spin_dma_from(local, offset, len, options);
}

static __always_inline int PtlHandlerDMAFromHostNB(ptl_size_t offset, void *local,
						   ptl_size_t len, unsigned int options,
						   ptl_dma_h *h)
{
	int rc = __spin_dma_from(local, offset, len, options);

	if (h)
		*h = __spin_dma_handle(rc);
	return rc;
}

/* True when the DMA of handle h has completed (in spin, as soon as its NB
 * call returned); false for a handle no NB call produced. */
static __always_inline int PtlHandlerDMATest(ptl_dma_h h)
{
	return (h & SPIN_DMA_H_DONE) != 0;
}

/* Wait for the DMA of handle h: 0 when it completed and succeeded, -1 when
 * it failed or h is no handle (waiting for it would never return). */
static __always_inline int PtlHandlerDMAWait(ptl_dma_h h)
{
	return (h & (SPIN_DMA_H_DONE | SPIN_DMA_H_FAILED)) == SPIN_DMA_H_DONE ? 0 : -1;
}

/*
 * The host word of `size` bytes (4 or 8) at DMA offset `offset`, for an
 * atomic: in range of the window the options select and naturally aligned
 * in host memory (its address, not its offset in the entry), so it never
 * straddles two spin_host elements.  NULL otherwise (the callers count
 * host_oob and fail the message, like any DMA out of range).
 */
static __always_inline void *__spin_host_abs_word(__s64 off, __u32 size)
{
	__u32 in;
	__u8 *b;

	if (off < 0 || (off & (size - 1)))
		return NULL;
	b = spin_host_at(off, &in);
	if (!b)
		return NULL;
	/* in is off % SPIN_HOST_CHUNK and a multiple of size: the mask says
	 * so to the verifier */
	return b + (in & (SPIN_HOST_CHUNK - size));
}

static __always_inline void *__spin_host_word(struct spin_ctx *c, ptl_size_t offset,
					      __u32 size, unsigned int options)
{
	return __spin_host_abs_word(__spin_host_off(c, offset, size, options), size);
}

/*
 * Atomic compare-and-swap of the 64-bit word at `offset` in host memory
 * (PTL_ME_HOST_MEM: the entry's buffer, PTL_HANDLER_HOST_MEM: handler host
 * memory; its address 8-byte aligned): if it equals *cmpval it becomes
 * swapval.  *cmpval gets the value the word had, so the swap happened exactly when
 * *cmpval is unchanged.  Atomic against other handlers on all CPUs and
 * against host processes' atomics on the mapped window.  Returns 0, or -1
 * (nothing done, the message fails) for an offset out of range or
 * misaligned.  The NB form also completes before it returns.
 */
static __always_inline int PtlHandlerDMACASB(ptl_size_t offset, __u64 *cmpval, __u64 swapval,
					     unsigned int options)
{
	struct spin_ctx *c = spin_ctx_get();
	__u64 *w;

	if (!c || !cmpval)
		return -1;
	w = __spin_host_word(c, offset, 8, options);
	if (!w)
		return __spin_dma_done(c, -1, 8, 0);
	*cmpval = __sync_val_compare_and_swap(w, *cmpval, swapval);
	return __spin_dma_done(c, 0, 8, 0);
}

static __always_inline int PtlHandlerDMACASNB(ptl_size_t offset, __u64 *cmpval, __u64 swapval,
					      unsigned int options, ptl_dma_h *h)
{
	int rc = PtlHandlerDMACASB(offset, cmpval, swapval, options);

	if (h)
		*h = __spin_dma_handle(rc);
	return rc;
}

/* One bounded attempt loop of a compare-and-swap read-modify-write on a
 * 32- or 64-bit host word; each failed attempt means another CPU's update
 * went in (lock-free), so the bound is never reached in practice. */
#define SPIN_DMA_CAS_TRIES	1024

/*
 * spin extension: atomic IEEE-754 add on handler or host memory the handler
 * holds a pointer to (*p += v on bit patterns, spin/softfloat.h), for
 * reductions of floats and doubles.  A compare-and-swap loop of at most
 * SPIN_DMA_CAS_TRIES attempts; returns the value before, and sets *ok
 * (if not NULL) to 0 if every attempt lost to another CPU.
 */
#ifdef SPIN_NO_KFUNCS
/* Without bpf_iter_num (before Linux 6.4) spin_for is a bounded loop the
 * verifier walks once per attempt, each with a soft-float add: 1024 of
 * them go past its 10^6 instructions.  There the attempts are a bpf_loop,
 * whose body is checked once. */
struct __spin_cas_q {
	void *p;	/* the word (__u64, or the aligned __u32) */
	__u64 v;	/* the increment's bits */
	__u64 old;	/* the word as last seen */
	__u32 t, sh;	/* 32-bit word: datatype and bit shift (__spin_fadd_val) */
	int done;
};

static int __spin_cas64_cb(__u32 i, struct __spin_cas_q *q)
{
	__u64 prev = __sync_val_compare_and_swap((__u64 *)q->p, q->old, spin_f64_add(q->old, q->v));

	if (prev == q->old) {
		q->done = 1;
		return 1;
	}
	q->old = prev;
	return 0;
}
#endif

static __always_inline __u64 spin_f64_atomic_add(__u64 *p, __u64 v, int *ok)
{
#ifdef SPIN_NO_KFUNCS
	struct __spin_cas_q q = { .p = p, .v = v, .old = *(volatile __u64 *)p };

	bpf_loop(SPIN_DMA_CAS_TRIES, __spin_cas64_cb, &q, 0);
	if (ok)
		*ok = q.done;
	return q.old;
#else
	__u64 old = *(volatile __u64 *)p, prev;
	int i, done = 0;

	spin_for(i, 0, SPIN_DMA_CAS_TRIES) {
		prev = __sync_val_compare_and_swap(p, old, spin_f64_add(old, v));
		if (prev == old) {
			done = 1;
			break;
		}
		old = prev;
	}
	if (ok)
		*ok = done;
	return old;
#endif
}

/* old + inc in datatype t, on the word's bits (w32: the aligned 32-bit word
 * holding an 8/16-bit value at bit shift sh) */
static __always_inline __u64 __spin_fadd_val(__u64 old, __u64 inc, ptl_type_t t, __u32 sh)
{
	switch (t) {
	case PTL_INT8_T: case PTL_UINT8_T:
		return (old & ~(0xffull << sh)) | ((((old >> sh) + inc) & 0xff) << sh);
	case PTL_INT16_T: case PTL_UINT16_T:
		return (old & ~(0xffffull << sh)) | ((((old >> sh) + inc) & 0xffff) << sh);
	case PTL_FLOAT:
		return spin_f32_add((__u32)old, (__u32)inc);
	default:
		return old;
	}
}

#ifdef SPIN_NO_KFUNCS
static int __spin_cas32_cb(__u32 i, struct __spin_cas_q *q)
{
	__u32 prev = __sync_val_compare_and_swap((__u32 *)q->p, (__u32)q->old,
						 (__u32)__spin_fadd_val(q->old, q->v, q->t, q->sh));

	if (prev == (__u32)q->old) {
		q->done = 1;
		return 1;
	}
	q->old = prev;
	return 0;
}
#endif

/*
 * Atomic fetch-and-add on host memory: the value of datatype t at `offset`
 * (its address naturally aligned) becomes value + inc; *res (if not NULL)
 * gets the value before, widened to 64 bits (sign-extended for signed integer
 * types; for PTL_FLOAT/PTL_DOUBLE the IEEE bit pattern, and `inc` is the
 * bit pattern of the increment, low 32 bits for a float).  Integer
 * additions wrap; float and double additions are IEEE-754, rounded to
 * nearest even (spin/softfloat.h).  Types: PTL_INT8_T ... PTL_DOUBLE
 * (PTL_INT is PTL_INT32_T); others return -1.  Returns 0, or -1 (nothing
 * done; the message fails for a bad offset).  The NB form also completes
 * before it returns.
 */
static __always_inline int PtlHandlerDMAFetchAddB(ptl_size_t offset, ptl_size_t inc,
						  ptl_size_t *res, ptl_type_t t,
						  unsigned int options)
{
	struct spin_ctx *c = spin_ctx_get();
	__u64 old = 0, prev;
	int i, ok = 0;
	__u32 size;

	if (!c)
		return -1;
	switch (t) {
	case PTL_INT8_T: case PTL_UINT8_T: size = 1; break;
	case PTL_INT16_T: case PTL_UINT16_T: size = 2; break;
	case PTL_INT32_T: case PTL_UINT32_T: case PTL_FLOAT: size = 4; break;
	case PTL_INT64_T: case PTL_UINT64_T: case PTL_DOUBLE: size = 8; break;
	default: return -1;
	}
	if (size == 8) {
		__u64 *w = __spin_host_word(c, offset, 8, options);

		if (!w)
			return __spin_dma_done(c, -1, size, 0);
		if (t != PTL_DOUBLE) {
			old = __sync_fetch_and_add(w, inc);
		} else {
			old = spin_f64_atomic_add(w, inc, &ok);
			if (!ok)
				return __spin_dma_done(c, -1, size, 0);
		}
	} else {
		/* an 8- or 16-bit value is updated in the aligned 32-bit word
		 * that holds it (little-endian; its other bytes are written back
		 * unchanged) */
		__s64 off = __spin_host_off(c, offset, size, options);
		__u32 *w = NULL, sh = 0;

		if (off >= 0 && !(off & (size - 1))) {
			w = __spin_host_abs_word(off & ~3ll, 4);
			sh = (off & 3) * 8;
		}
		if (!w)
			return __spin_dma_done(c, -1, size, 0);
		if (t == PTL_INT32_T || t == PTL_UINT32_T) {
			old = __sync_fetch_and_add(w, (__u32)inc);
		} else {
#ifdef SPIN_NO_KFUNCS
			struct __spin_cas_q q = { .p = w, .v = inc, .old = *(volatile __u32 *)w,
						  .t = t, .sh = sh };

			bpf_loop(SPIN_DMA_CAS_TRIES, __spin_cas32_cb, &q, 0);
			old = q.old;
			ok = q.done;
#else
			old = *(volatile __u32 *)w;
			spin_for(i, 0, SPIN_DMA_CAS_TRIES) {
				prev = __sync_val_compare_and_swap(w, (__u32)old,
								   (__u32)__spin_fadd_val(old, inc, t, sh));
				if (prev == old) {
					ok = 1;
					break;
				}
				old = prev;
			}
#endif
			if (!ok)
				return __spin_dma_done(c, -1, size, 0);
			old = (old >> sh) & (size == 4 ? 0xffffffffull : (1ull << (size * 8)) - 1);
		}
	}
	if (res) {
		switch (t) {
		case PTL_INT8_T: old = (__u64)(__s64)(__s8)old; break;
		case PTL_INT16_T: old = (__u64)(__s64)(__s16)old; break;
		case PTL_INT32_T: old = (__u64)(__s64)(__s32)old; break;
		case PTL_UINT32_T: case PTL_FLOAT: old = (__u32)old; break;
		default: break;
		}
		*res = old;
	}
	return __spin_dma_done(c, 0, size, 0);
}

static __always_inline int PtlHandlerDMAFetchAddNB(ptl_size_t offset, ptl_size_t inc,
						   ptl_size_t *res, ptl_type_t t,
						   unsigned int options, ptl_dma_h *h)
{
	int rc = PtlHandlerDMAFetchAddB(offset, inc, res, t, options);

	if (h)
		*h = __spin_dma_handle(rc);
	return rc;
}

#define PtlHandlerPutFromDevice(local, len, ct, ack, target, mb, roff, uptr, hdata) \
	__spin_put_device((local), (len), (ct), (ack), (target), (mb), (roff), (uptr), (hdata))

#define PtlHandlerPutFromHost(offset, len, ct, ack, target, mb, roff, uptr, hdata) \
	__spin_put_host((offset), (len), (ct), (ack), (target), (mb), (roff), (uptr), (hdata))

/* The paper's get to host memory: a get of len bytes from target (entry
 * matching mb, at remote offset roff) whose reply lands in this entry's
 * host memory at `offset` (docs/handlers.md). */
#define PtlHandlerGetToHost(offset, len, ct, ack, target, mb, roff, uptr, hdata) \
	__spin_get_host((offset), (len), (ct), (ack), (target), (mb), (roff), (uptr), (hdata))

/* Atomic compare-and-swap on handler memory: true when *value was cmpval
 * and is now swapval. */
static __always_inline bool PtlHandlerCAS(__u64 *value, __u64 cmpval, __u64 swapval)
{
	return __sync_val_compare_and_swap(value, cmpval, swapval) == cmpval;
}

/* Atomic fetch-and-add on handler memory; *before gets the old value. */
static __always_inline int PtlHandlerFAdd(__u64 *val, __u64 *before, __u64 inc)
{
	__u64 old = __sync_fetch_and_add(val, inc);

	if (before)
		*before = old;
	return 0;
}

/* ------------------------------------------------- entry program -- */

static __always_inline int __spin_default_header(const ptl_header_t h, void *s) { return PROCESS_DATA; }
static __always_inline int __spin_default_payload(const ptl_payload_t p, void *s) { return SUCCESS; }
static __always_inline int __spin_default_completion(int d, bool f, void *s) { return SUCCESS; }
#define __SPIN_HH(f) _Generic((f), void *: __spin_default_header, default: (f))
#define __SPIN_PH(f) _Generic((f), void *: __spin_default_payload, default: (f))
#define __SPIN_CH(f) _Generic((f), void *: __spin_default_completion, default: (f))
#define __SPIN_HAS(f) _Generic((f), void *: 0, default: 1)

#include <spin/rt_common.bpf.h>

static __always_inline void __spin_fill_header(ptl_header_t *h, const struct spin_hdr *sh,
					       const struct spin_ctx *c)
{
	h->type = sh->op;
	h->length = bpf_ntohl(sh->msg_len);
	/* the process the message is for (docs/design.md, "Many Portals
	 * processes per interface"): the runtime's dispatch put its rank in
	 * spin_ctx, as a handler program holds no spin_cfg; and its own
	 * portal index */
	h->target_id.rank = c->tgt_rank;
	h->source_id.rank = bpf_ntohl(sh->src_rank);
	h->source_pid = bpf_ntohl(sh->src_pid);
	h->match_bits = bpf_be64_to_cpu(sh->match_bits);
	h->offset = bpf_be64_to_cpu(sh->remote_off);
	h->hdr_data = bpf_be64_to_cpu(sh->hdr_data);
	h->pt_index = (bpf_ntohs(sh->pt_index) & 0xff);
	h->msg_id = bpf_ntohl(sh->msg_id);
	h->user_hdr.arg[0] = bpf_be64_to_cpu(sh->user_hdr[0]);
	h->user_hdr.arg[1] = bpf_be64_to_cpu(sh->user_hdr[1]);
	h->user_hdr.arg[2] = bpf_be64_to_cpu(sh->user_hdr[2]);
	h->user_hdr.arg[3] = bpf_be64_to_cpu(sh->user_hdr[3]);
}

/*
 * The end of every handler program: a tail call into its finish stage
 * (the runtime object's spin_finish, bpf/spin_rt.bpf.c, which libspin
 * loads for this program with its maps and puts in its own spin_stages),
 * which does the default deposit if asked, counters, the completion event
 * and the puts.  Only when the stage is missing (a program not loaded by
 * libspin) does it return: XDP_ABORTED (the xdp_exception tracepoint).
 */
static __always_inline int __spin_to_finish(struct xdp_md *xdp)
{
	bpf_tail_call_static(xdp, &spin_stages, SPIN_STAGE_FINISH);
	return XDP_ABORTED;
}

/*
 * The entry program.  The runtime has parsed and matched the packet and
 * left the invocation in spin_ctx; this runs the requested phases in sPIN
 * order (header, then payload, then completion when this packet finished
 * the message) and tail-calls the runtime's finish stage.  What touches
 * state beyond the handler's own is the stage's: publishing the header
 * verdict to the message, the default deposit and accounting the bytes.
 * So a packet to deposit (SPIN_PH_DSTAGE) and every packet of a
 * multi-packet message go to the stage before the completion handler,
 * and the stage enters this program again for it (SPIN_PH_RESUME) if the
 * packet completed the message and the program has one (SPIN_PH_HAS_CH).
 * A single-packet message is complete with its only packet: its
 * completion handler runs here.
 */
#define SPIN_HANDLERS(hh, ph, ch)					\
SEC("xdp") int spin_handler_entry(struct xdp_md *__spin_xdp)		\
{									\
	void *__spin_data = (void *)(long)__spin_xdp->data;		\
	void *__spin_data_end = (void *)(long)__spin_xdp->data_end;	\
	struct spin_ctx *__spin_c = spin_ctx_get();			\
	const struct spin_hdr *__spin_sh;				\
	void *__spin_state;						\
									\
	if (!__spin_c)							\
		return XDP_ABORTED;					\
	__spin_sh = __spin_data + SPIN_HDR_OFF;				\
	if ((void *)(__spin_sh + 1) > __spin_data_end) {		\
		__spin_c->drop_reason = 1 + SPIN_DROP_MALFORMED;	\
		goto __spin_out;					\
	}								\
	__spin_c->data_addr = __spin_addr(__spin_c, __spin_data);	\
	__spin_state = __spin_hpu(__spin_c);				\
	if (!__spin_state) {						\
		__spin_c->drop_reason = 1 + SPIN_DROP_HANDLER_ERROR;	\
		goto __spin_out;					\
	}								\
	if (__spin_c->phases & SPIN_PH_RESUME) {			\
		/* back from the stage: the completion */		\
		__spin_c->phases &= ~SPIN_PH_RESUME;			\
		goto __spin_completion;					\
	}								\
	if (__spin_c->phases & SPIN_PH_HEADER) {			\
		ptl_header_t __spin_hdr;				\
		__spin_fill_header(&__spin_hdr, __spin_sh, __spin_c); \
		__spin_c->ran |= 1 << SPIN_H_HEADER; 				\
		__spin_c->hdr_rc = __SPIN_HH(hh)(__spin_hdr, __spin_state); \
		spin_hdr_verdict(__spin_c);				\
	}								\
	if ((__spin_c->phases & SPIN_PH_PAYLOAD) && __SPIN_HAS(ph)) {	\
		ptl_payload_t __spin_pay;				\
		__u8 *__spin_base = __spin_data + SPIN_PAY_OFF;		\
		__u32 __spin_len = __spin_c->pay_len;			\
		if (__spin_len > SPIN_MAX_SEG || __spin_base + __spin_len > (__u8 *)__spin_data_end) { \
			__spin_c->drop_reason = 1 + SPIN_DROP_MALFORMED; \
			goto __spin_out;				\
		}							\
		__spin_pay.base = __spin_base;				\
		__spin_pay.length = __spin_len;				\
		__spin_pay.offset = __spin_c->pkt_off;			\
		__spin_pay.end = __spin_data_end;			\
		__spin_c->ran |= 1 << SPIN_H_PAYLOAD; 				\
		__spin_c->pay_rc = __SPIN_PH(ph)(__spin_pay, __spin_state); \
		if (__spin_c->pay_rc == DROP || __spin_c->pay_rc == DROP_PENDING) \
			__spin_c->dropped += __spin_len;		\
		else if (__spin_c->pay_rc == FAIL)			\
			__spin_c->fail = 1;				\
	} else if (__spin_c->phases & (SPIN_PH_DEPOSIT | SPIN_PH_PAYLOAD)) { \
		/* the stage deposits and accounts, then comes back */	\
		__spin_c->phases |= SPIN_PH_DSTAGE |			\
				    (__SPIN_HAS(ch) ? SPIN_PH_HAS_CH : 0); \
		goto __spin_out;					\
	}								\
	if (__spin_c->multi) {						\
		/* the stage accounts, then comes back if it completed */ \
		__spin_c->phases |= __SPIN_HAS(ch) ? SPIN_PH_HAS_CH : 0; \
		goto __spin_out;					\
	}								\
	__spin_c->done = 1;	/* a single-packet message */		\
__spin_completion:							\
	if (__spin_c->done && !__spin_c->msg_dropped) {			\
		__spin_c->ran |= 1 << SPIN_H_COMPLETION; 				\
		if (__SPIN_CH(ch)(__spin_c->dropped, false, __spin_state) == FAIL) \
			__spin_c->fail = 1;				\
	}								\
__spin_out:								\
	return __spin_to_finish(__spin_xdp);				\
}									\
char _spin_license[] SEC("license") = "Dual BSD/GPL"

#endif /* SPIN_HANDLER_H */
