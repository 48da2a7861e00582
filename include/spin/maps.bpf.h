/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The runtime's BPF maps, declared once for the runtime and for handler
 * objects.  A handler object declares only the maps that are its own or
 * its process slot's (spin_ctx, spin_hscratch, spin_mstate_pc, spin_stages,
 * an empty spin_handlers, and its slot's spin_hpu, spin_hpu_big, spin_host,
 * spin_wins, spin_putq and spin_mstate):
 * libspin loads it with those replaced by the runtime's pinned ones or its
 * slot's (lib/handler.c).  Every other map holds other entries', messages'
 * or processes' state, or the runtime's accounting: it is declared for the
 * runtime object only (SPIN_RT_PROG), whose finish stage does for a
 * handler program what needs them, and libspin refuses a handler object
 * that declares one (docs/security.md, "Handlers").
 */
#ifndef SPIN_MAPS_BPF_H
#define SPIN_MAPS_BPF_H

/* Handler objects do not declare the maps of shared state (spin_me,
 * spin_msgs, spin_stats, ...; ABI 8): libspin refuses one that does. */
#define SPIN_SHARED_RT_ONLY 1

#include <spin/wire.h>
#include <spin/auth.h>

/* The ABI this object was built for (wire.h): libspin reads it from the
 * object file before loading and refuses another one.  Never referenced by
 * code; libspin does not create its map. */
const volatile __u32 spin_abi_version SEC(SPIN_ABI_SECTION) = SPIN_ABI_VERSION;

/* The runtime's configuration, its peers (spin_peers) and the job's auth
 * key (spin_auth) are the runtime's and the finish stages' only: handler
 * objects do not declare them, and lib/handler.c refuses one that does,
 * so no handler reads the key or rewrites the configuration or where a
 * rank is (docs/security.md, "Handlers").  A handler's header handler gets
 * its target rank from spin_ctx (tgt_rank). */
#define SPIN_CFG_RT_ONLY 1
#ifdef SPIN_RT_PROG
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_cfg);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_cfg SEC(".maps");
#endif

#ifdef SPIN_RT_PROG
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_stats);
} spin_stats SEC(".maps");
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_ctx);
} spin_ctx SEC(".maps");

#ifdef SPIN_RT_PROG
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PT);
	__type(key, __u32);
	__type(value, struct spin_pt);
	__uint(map_flags, BPF_F_MMAPABLE);	/* host updates in place (flow control) */
} spin_pt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_ME);
	__type(key, __u32);
	__type(value, struct spin_me);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_me SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SPIN_MAX_ME);
	__type(key, __u32);
	__type(value, struct spin_me_ct);
} spin_me_ct SEC(".maps");
#endif

/* Queued puts 1.. of handler invocations (wire.h, struct spin_putq_ent):
 * a ring per CPU, indexed by ticket % SPIN_PUTQ_SIZE.  Each process slot
 * has its own (spin_putqs below): this one is slot 0's, and a handler
 * program (and its finish stage) gets, instead of it, its own slot's
 * (lib/handler.c), so it can neither read nor write another slot's
 * queued puts. */
struct spin_putq_def {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SPIN_PUTQ_SIZE);
	__type(key, __u32);
	__type(value, struct spin_putq_ent);
};
struct spin_putq_def spin_putq SEC(".maps");

#ifdef SPIN_RT_PROG
/* The queued puts of each process slot: slot 0's is spin_putq, another
 * slot's is made by libspin when a handler program of the slot is first
 * loaded (lib/handler.c) and dropped when its process gives the slot
 * back.  spin_tc reads the queue of the slot a fan-out frame's metadata
 * names.  The runtime's only: handler objects do not declare it, and
 * lib/handler.c refuses one that does (docs/security.md, "Handlers"). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct spin_putq_def);
} spin_putqs SEC(".maps") = {
	.values = { [0] = &spin_putq },
};
#endif

#ifdef SPIN_RT_PROG
/* Exact match entries by (portal, list, match bits, source): the FIFO of
 * entries with that key (wire.h, struct spin_mx).  Elements are allocated
 * as keys appear (no preallocation): memory follows the distinct keys in
 * use.  Written by the host only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_MAX_ME);
	__type(key, struct spin_mx_key);
	__type(value, struct spin_mx);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} spin_mx SEC(".maps");
#endif

/* Handler (HPU) memory: one SPIN_HPU_SIZE block per match entry slot
 * below SPIN_MAX_HPU, where entries with handlers are placed. */
struct spin_hpu_mem { __u8 b[SPIN_HPU_SIZE]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_HPU);
	__type(key, __u32);
	__type(value, struct spin_hpu_mem);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_hpu SEC(".maps");

/* Big handler memory (SPIN_HPU_BIG_SIZE) of the entries in slots below
 * SPIN_MAX_HPU_BIG whose spin_me.hpu_size asks for more than SPIN_HPU_SIZE,
 * for handlers compiled with SPIN_HANDLER_MEM > SPIN_HPU_SIZE. */
struct spin_hpu_big_mem { __u8 b[SPIN_HPU_BIG_SIZE]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_HPU_BIG);
	__type(key, __u32);
	__type(value, struct spin_hpu_big_mem);
	__uint(map_flags, BPF_F_MMAPABLE);
} spin_hpu_big SEC(".maps");

/* Host memory window of process slot 0, mmap-ed by its process as one
 * contiguous region of SPIN_HOST_CHUNK elements. */
struct spin_host_chunk { __u8 b[SPIN_HOST_CHUNK]; };
/* BPF_F_INNER_MAP: the windows' size is set at attach (host pages), not
 * here, and an inner map's size must match the template's without it.
 * libbpf 1.1 cannot resize a template (bpf_map__set_max_entries on an
 * inner map crashes), so the flag it is. */
struct spin_win_def {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_DEF_HOST_PAGES * SPIN_PAGE / SPIN_HOST_CHUNK);
	__type(key, __u32);
	__type(value, struct spin_host_chunk);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
};
struct spin_win_def spin_host SEC(".maps");

/* The host window of each process slot (wire.h, SPIN_WIN_SHIFT): slot 0's
 * is spin_host, the others are made by their process when it takes the
 * slot, and only it maps them.  A handler program gets, instead of this
 * map, one that holds its own process's window only (lib/handler.c). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct spin_win_def);
} spin_wins SEC(".maps") = {
	.values = { [0] = &spin_host },
};

#ifdef SPIN_RT_PROG
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PEERS);
	__type(key, __u32);
	__type(value, struct spin_peer);
} spin_peers SEC(".maps");
#endif

#ifdef SPIN_RT_PROG
/* Recently seen message ids per source rank (duplicate detection): a
 * window for each source that sent lately (wire.h, SPIN_DEDUP_SOURCES),
 * made by its first packet, freed by the sweeper when idle. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_DEDUP_SOURCES);
	__type(key, __u32);
	__type(value, struct spin_dedup);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} spin_dedup SEC(".maps");

/* Multi-packet messages in flight: elements allocated per message (memory
 * follows the messages in flight, up to SPIN_MAX_MSGS). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_MAX_MSGS);
	__type(key, struct spin_msg_key);
	__type(value, struct spin_msg);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} spin_msgs SEC(".maps");
#endif

/* Handler gets in flight (wire.h, struct spin_hget): inserted by the
 * finish stage of the handler program that queued the GET (spin_fanout),
 * deleted by the REPLY that completes it.  The runtime's only: handler
 * objects do not declare it, and lib/handler.c refuses one that does, so
 * no handler can write a record (docs/security.md, "Handlers"). */
#define SPIN_HGETS_RT_ONLY 1
#ifdef SPIN_RT_PROG
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SPIN_HGETS);
	__type(key, struct spin_hget_key);
	__type(value, struct spin_hget);
} spin_hgets SEC(".maps");
#endif

/* Handler scratch memory (spin_scratch() in spin/handler.h): one per CPU,
 * private to the invocation running there (XDP does not nest on a CPU). */
struct spin_scratch_mem { __u8 b[SPIN_SCRATCH_SIZE]; };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_scratch_mem);
} spin_hscratch SEC(".maps");

/* Per-message handler state (spin_msg_state() in spin/handler.h): of a
 * multi-packet message, an element keyed like spin_msgs, made by the first
 * call of the message's handlers and deleted with the message's state
 * (spin_msg_free); of a single-packet message, the per-CPU element of
 * spin_mstate_pc, zeroed for the invocation (which is the whole message).
 * Each process slot has its own (spin_mstates below): this one is slot
 * 0's, and a handler program (and its finish stage) gets its own slot's
 * instead (lib/handler.c), so whatever key it asks for it reaches no
 * other slot's messages' state. */
struct spin_mstate_mem { __u64 w[SPIN_MSG_STATE_SIZE / 8]; };
struct spin_mstate_def {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_MAX_MSGS);
	__type(key, struct spin_msg_key);
	__type(value, struct spin_mstate_mem);
	__uint(map_flags, BPF_F_NO_PREALLOC);
};
struct spin_mstate_def spin_mstate SEC(".maps");

#ifdef SPIN_RT_PROG
/* The per-message state of each process slot: slot 0's is spin_mstate,
 * another slot's is made by libspin when a handler program of the slot is
 * first loaded (lib/handler.c) and dropped when its process gives the slot
 * back.  spin_msg_free deletes a message's from the map of the slot its
 * entry is in (SPIN_MSGF_SLOT). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct spin_mstate_def);
} spin_mstates SEC(".maps") = {
	.values = { [0] = &spin_mstate },
};

/* The runtime's copy of what the dispatch told a handler program (wire.h,
 * struct spin_tctx): the finish stage's, never a handler program's. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_tctx);
} spin_tctx SEC(".maps");
#endif
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_mstate_mem);
} spin_mstate_pc SEC(".maps");

#ifdef SPIN_RT_PROG
/* Packet bitmap chunks of messages beyond their first 4096 packets (wire.h,
 * struct spin_msg_chunk): inserted by the packet that creates the message
 * state, deleted with it (spin_msg_free). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_MSG_CHUNKS);
	__type(key, struct spin_msg_chunk_key);
	__type(value, struct spin_msg_chunk);
} spin_msg_bits SEC(".maps");

/* spin_msgs entries per source rank: taken before an entry is inserted,
 * given back by the one delete that removes it (spin_msg_free), so one
 * source holds at most its share (spin_src_quota); likewise its spin_msg_bits
 * chunks (counted by the insert and the delete that succeed).  Only the runtime
 * inserts and deletes entries. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PEERS);
	__type(key, __u32);
	__type(value, struct spin_src);
} spin_src SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_gc);
} spin_gc SEC(".maps");

/* The sources' events in the rings (wire.h, struct spin_src_ev), by
 * (rank, slot): memory follows the pairs in use; the sweeper frees a pair
 * whose counts are back at 0 (spin_gc_src_ev). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SPIN_SRC_EV_PAIRS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct spin_src_ev);
} spin_src_ev SEC(".maps");

/* Pairs of spin_src_ev per slot: the sources that may have unread events
 * in the slot's ring, the n of their share (spin_src_ev_admit).  Moved
 * only by an insert and a delete that succeed (each key's insert and
 * delete alternate), so it is the number of the slot's pairs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} spin_src_ev_n SEC(".maps");

/* The source ranks holding message-table slots (spin_src.msgs > 0), one
 * counter: each may hold SPIN_MAX_MSGS / (n + 1) (spin_src_quota). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} spin_src_active SEC(".maps");

/*
 * A source's message-table slots (spin_src.msgs): taken before a message
 * state is inserted, given back by the one delete that removes it.  The
 * first slot a source takes and the last it gives back count it in and
 * out of spin_src_active (fetch-and-add returns each old value once,
 * so every 0 -> 1 has its 1 -> 0).  spin_src_take returns the slots the
 * source held before.
 */
static __always_inline __u32 spin_src_take(struct spin_src *s)
{
	__u32 zero = 0, old = __sync_fetch_and_add(&s->msgs, 1), *n;

	if (!old && (n = bpf_map_lookup_elem(&spin_src_active, &zero)))
		__sync_fetch_and_add(n, 1);
	return old;
}

static __always_inline void spin_src_give(struct spin_src *s)
{
	__u32 zero = 0, *n;

	if (__sync_fetch_and_add(&s->msgs, -1) == 1 && (n = bpf_map_lookup_elem(&spin_src_active, &zero)))
		__sync_fetch_and_add(n, -1);
}

/* A source's share of the message table now: SPIN_MAX_MSGS / (n + 1), n the
 * sources holding slots (this one included), at least SPIN_SRC_MSG_MIN.
 * Alone it has half; two flooding sources leave a third, and every new
 * source finds room the others cannot take. */
static __always_inline __u32 spin_src_quota(void)
{
	__u32 zero = 0, n, q, *pn = bpf_map_lookup_elem(&spin_src_active, &zero);

	n = pn ? *(volatile __u32 *)pn : 1;
	if (n < 1)
		n = 1;
	if (n > SPIN_MAX_MSGS)
		n = SPIN_MAX_MSGS;
	q = SPIN_MAX_MSGS / (n + 1);
	return q < SPIN_SRC_MSG_MIN ? SPIN_SRC_MSG_MIN : q;
}

/* SPIN_EVENTS_SIZE, SPIN_EVENTS_RESERVE, SPIN_SRC_EV_QUOTA: wire.h */
struct spin_ring_def {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SPIN_EVENTS_SIZE);
};
struct spin_ring_def spin_events SEC(".maps");

/* Each Portals process's ring, by slot (docs/design.md, "Many Portals
 * processes per interface"): its events, and the frames for its AF_XDP
 * path that came in on another queue than its socket's.  Slot 0's is
 * spin_events; a process puts its own in when it takes its slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct spin_ring_def);
} spin_rings SEC(".maps") = {
	.values = { [0] = &spin_events },
};

/* The Portals processes on this interface, by slot (wire.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct spin_proc);
} spin_procs SEC(".maps");
#endif

/* Keys of spin_rings in read-only memory: a lookup with one of them takes
 * no stack, which the answering paths do not have to spare. */
/* len (a variable) is not 0, as a test 6.1's verifier learns len >= 1
 * from (a signed compare; it learns nothing from len != 0), where a
 * helper takes len as a size that must not be 0 */
#ifdef SPIN_NO_KFUNCS
#define SPIN_LEN_NZ(len) ({ asm volatile("" : "+r"(len)); (__s32)(len) > 0; })
#else
#define SPIN_LEN_NZ(len) ((len) != 0)
#endif

/* SPIN_LEN_IN: len, known to be in [1, max] (max a power of two),
 * recomputed so that 6.1's verifier knows it too (a helper's size must not
 * be 0).  SPIN_U16: a 16-bit value from bpf_ntohs, masked so that 6.1's
 * verifier, which does not bound a byte swap's result, knows it. */
#ifdef SPIN_NO_KFUNCS
#define SPIN_LEN_IN(len, max)							\
	do {									\
		asm volatile("" : "+r"(len));					\
		(len) = (((len) - 1) & ((max) - 1)) + 1;			\
	} while (0)
#define SPIN_U16(v)	do { asm volatile("" : "+r"(v)); (v) &= 0xffff; } while (0)
/* SPIN_BOUND: v (64-bit), known to be <= max, clamped on the register
 * that is then used, so that 6.1's verifier knows it too (it kept no bound
 * from a compare of a copy reloaded from the stack) */
#define SPIN_BOUND(v, max)	asm volatile("if %0 <= %1 goto +1; %0 = %1" : "+r"(v) : "i"(max))
/* SPIN_LEN_CLAMP: len, known to be in [1, max], clamped there on the
 * register then used (a spilled copy had lost len >= 1) */
#define SPIN_LEN_CLAMP(len, max)						\
	asm volatile("if %0 <= %1 goto +1; %0 = %1; if %0 s> 0 goto +1; %0 = 1"	\
		     : "+r"(len) : "i"(max))
/* SPIN_CLAMP_S: signed v, known to be in [0, max], clamped there on the
 * register then used */
#define SPIN_CLAMP_S(v, max)							\
	asm volatile("if %0 s>= 0 goto +1; %0 = 0; if %0 s<= %1 goto +1; %0 = %1"	\
		     : "+r"(v) : "r"((__s64)(max)))
/* SPIN_SET(p): pointer p, checked by the caller, tested again where it is
 * used (6.1's verifier followed a path on which a copy of it reloaded from
 * the stack was NULL) */
#define SPIN_SET(p)	({ asm volatile("" : "+r"(p)); (p) != 0; })
#else
#define SPIN_LEN_IN(len, max)	do { } while (0)
#define SPIN_U16(v)		do { } while (0)
#define SPIN_BOUND(v, max)	do { } while (0)
#define SPIN_SET(p)		1
#define SPIN_LEN_CLAMP(len, max)	do { } while (0)
#endif

static const volatile __u32 spin_slot_keys[SPIN_MAX_PROCS] = { 0, 1, 2, 3, 4, 5, 6, 7 };

/* &spin_slot_keys[slot] for a slot the caller checked (< SPIN_MAX_PROCS);
 * bounded again on the register used (the compiler drops the mask after
 * the caller's check, and 6.1's verifier kept no bound of that check) */
static __always_inline const void *spin_slot_key(__u32 slot)
{
	__u64 i = slot;

	SPIN_BOUND(i, SPIN_MAX_PROCS - 1);
	return (const void *)&spin_slot_keys[i & (SPIN_MAX_PROCS - 1)];
}
_Static_assert(SPIN_MAX_PROCS == 8, "spin_slot_keys lists every slot");

#ifdef SPIN_RT_PROG
/*
 * Whose finish stage this program is.  The runtime's own programs:
 * SPIN_MAX_PROCS, every process slot.  lib/handler.c loads spin_finish
 * again for every handler program, with that program's maps, and sets this
 * to the process slot that loaded it: then no window and no event ring of
 * another slot is reached, whatever spin_ctx and the maps the handler can
 * write say (docs/security.md, "Handlers").  Read-only data the kernel
 * freezes: the verifier knows the value, so the runtime's programs carry
 * no check.
 */
const volatile __u32 spin_fin_slot SEC(SPIN_FIN_SECTION) = SPIN_MAX_PROCS;
#define SPIN_SLOT_BARRED(s)	(spin_fin_slot < SPIN_MAX_PROCS && (s) != spin_fin_slot)
#else
#define SPIN_SLOT_BARRED(s)	0	/* a handler: its maps confine it (lib/handler.c) */
#endif

#ifdef SPIN_RT_PROG
/* The ring of the process that owns runtime portal pt, or NULL. */
static __always_inline void *spin_ring_of(__u32 pt)
{
	if (SPIN_SLOT_BARRED(SPIN_PT_SLOT(pt)))
		return (void *)0;
	return bpf_map_lookup_elem(&spin_rings, spin_slot_key(SPIN_PT_SLOT(pt) & (SPIN_MAX_PROCS - 1)));
}

/* AF_XDP sockets of processes, by receive queue (SPIN_ME_XSK entries). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} spin_xsks SEC(".maps");

/* Deferred wake-ups of the event rings' readers (SPIN_CFG_F_WAKE_DEFER):
 * the packet path posts quietly and starts the work item of the ring's
 * process slot (BPF workqueue, Linux 6.10+, one per slot: element k wakes
 * spin_rings[k]); it wakes the reader from a kernel worker thread once the
 * CPU's packet work is done (spin_rb_submit).  Set up by the runtime on
 * its first packet, all slots at once. */
struct spin_waker {
	struct bpf_wq wq;
	__u32 armed;		/* 0 no, 1 being set up, 2 ready */
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPIN_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct spin_waker);
} spin_waker SEC(".maps");
#endif

/*
 * SPIN_NO_KFUNCS: the build for kernels whose XDP programs cannot call the
 * kfuncs used here (bpf_wq 6.10, bpf_iter_num 6.4, bpf_dynptr_copy 6.16;
 * Debian 12's 6.1 has none of them, and a kernel before 6.4 refuses an
 * object that merely names a missing kfunc).  Those objects
 * (*.compat.bpf.o) use helpers only: direct ring-buffer wake-ups,
 * bpf_loop or bounded loops, and bpf_probe_read_kernel copies.  libspin
 * picks them when the kernel lacks a kfunc (docs/kernels.md).
 */

#ifndef SPIN_NO_KFUNCS
extern int bpf_wq_init(struct bpf_wq *wq, void *p__map, unsigned int flags) __weak __ksym;
extern int bpf_wq_start(struct bpf_wq *wq, unsigned int flags) __weak __ksym;
extern int bpf_wq_set_callback_impl(struct bpf_wq *wq,
				    int (callback_fn)(void *map, int *key, void *value),
				    unsigned int flags, void *aux) __weak __ksym;
#endif

#ifdef SPIN_RT_PROG
/* The job's auth key (wire.h, "Authenticator"): written once at attach,
 * never mmap-ed (spin_cfg is). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spin_auth);
} spin_auth SEC(".maps");

static __always_inline struct spin_auth *spin_auth_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_auth, &k);
}

/* The tag of the sPIN header sh (in the frame, SPIN_AUTH_LEN bytes in
 * bounds), or 0 without a key. */
static __always_inline __u64 spin_auth_frame_tag(const struct spin_hdr *sh)
{
	struct spin_auth *au = spin_auth_get();

	if (!au || !au->on)
		return 0;
	return spin_auth_tag(au, sh);
}

#endif

/* Handler entry programs, index = spin_me.handler - 1.  A handler program
 * gets an empty one of its own (lib/handler.c): it tail-calls no other. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, SPIN_MAX_HANDLERS);
	__type(key, __u32);
	__type(value, __u32);
} spin_handlers SEC(".maps");

/* The stages (SPIN_STAGE_*): handler programs end with a tail call into
 * the finish stage instead of carrying its code.  Each handler program
 * gets a map of its own here, holding the finish stage loaded for it with
 * its maps and itself (lib/handler.c); the runtime's holds the runtime's
 * spin_finish, which no handler program reaches. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, SPIN_MAX_STAGES);
	__type(key, __u32);
	__type(value, __u32);
} spin_stages SEC(".maps");


#define SPIN_COUNT(st, field) do { if (st) (st)->field++; } while (0)

#ifdef SPIN_RT_PROG
static __always_inline struct spin_stats *spin_stats_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_stats, &k);
}

static __always_inline struct spin_tctx *spin_tctx_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_tctx, &k);
}
#endif

static __always_inline struct spin_ctx *spin_ctx_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_ctx, &k);
}

#ifdef SPIN_RT_PROG
static __always_inline struct spin_cfg *spin_cfg_get(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&spin_cfg, &k);
}
#endif

static __always_inline void spin_drop_count(struct spin_stats *st, int reason)
{
	if (st && reason >= 0 && reason < SPIN_DROP_MAX)
		st->drops[reason]++;
}

/*
 * xdp->data and xdp->data_end, loaded with fixed offsets from the context.
 * Plain C lets clang compute &xdp->data_end into a register and merge it
 * across paths, which the verifier rejects ("modified ctx ptr").
 */
static __always_inline void *spin_xdp_data(struct xdp_md *x)
{
	void *p;

	asm volatile("%0 = *(u32 *)(%1 + 0)" : "=r"(p) : "r"(x));
	return p;
}

static __always_inline void *spin_xdp_end(struct xdp_md *x)
{
	void *p;

	asm volatile("%0 = *(u32 *)(%1 + 4)" : "=r"(p) : "r"(x));
	return p;
}

static __always_inline int spin_drop(struct spin_stats *st, int reason)
{
	spin_drop_count(st, reason);
	return XDP_DROP;
}

#ifndef SPIN_NO_KFUNCS
/* kfuncs of the target kernel (6.4+ / 6.16+) */
extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym;
extern int bpf_dynptr_copy(struct bpf_dynptr *dst_ptr, __u32 dst_off,
			   struct bpf_dynptr *src_ptr, __u32 src_off, __u32 size) __ksym;
#endif

/*
 * Copies between the host window and frames, handler memory or the per-CPU
 * bounce buffer, at most SPIN_MAX_DMA bytes each.  A copy that starts in
 * the first SPIN_HOST_CHUNK - SPIN_MAX_DMA bytes of an element cannot cross
 * it, and the verifier can prove that from the offset alone, so it is one
 * direct helper call.  Only copies near an element's end go through the
 * bounce buffer and dynptrs, whose bounds are checked at run time.
 */
#define SPIN_HOST_FAST	(SPIN_HOST_CHUNK - SPIN_MAX_DMA)

/* The window address of byte `off` of slot's window; ~0 (no window) when
 * off does not fit below the slot bits, so a huge offset can never carry
 * into another slot's window. */
static __always_inline __u64 spin_win_addr(__u32 slot, __u64 off)
{
	return off > SPIN_WIN_MASK || slot >= SPIN_MAX_PROCS ? ~0ull : SPIN_WIN_ADDR(slot, off);
}

/* Window address a + add, in the same window (~0 if it would leave it). */
static __always_inline __u64 spin_win_add(__u64 a, __u64 add)
{
	return add > SPIN_WIN_MASK ? ~0ull : spin_win_addr(SPIN_WIN_SLOT(a), SPIN_WIN_OFF(a) + add);
}

/* The element holding the byte at window address `a` (SPIN_WIN_ADDR), and
 * the offset in it; NULL when the slot has no window or a is past its
 * end. */
static __always_inline __u8 *spin_host_at(__u64 a, __u32 *in)
{
	__u64 slot = SPIN_WIN_SLOT(a);
	__u32 k = SPIN_WIN_OFF(a) / SPIN_HOST_CHUNK;
	struct spin_host_chunk *p;
	void *w;

	*in = a % SPIN_HOST_CHUNK;
	if (slot >= SPIN_MAX_PROCS || SPIN_SLOT_BARRED(slot))
		return (__u8 *)0;
#ifdef SPIN_RT_PROG
	/* the runtime: slot 0's window is spin_host (spin_wins[0] always
	 * holds it), whose lookup the verifier inlines; a handler always
	 * goes through its own spin_wins (lib/handler.c) */
	if (!slot) {
		p = bpf_map_lookup_elem(&spin_host, &k);
		return p ? p->b : (__u8 *)0;
	}
#endif
	w = bpf_map_lookup_elem(&spin_wins, spin_slot_key(slot));
	if (!w)
		return (__u8 *)0;
	p = bpf_map_lookup_elem(w, &k);
	return p ? p->b : (__u8 *)0;
}

#ifdef SPIN_NO_KFUNCS
/* One power-of-two piece of spin_copy_end: the piece m bytes before both
 * ends; its offsets are checked against the buffers' sizes, which is all
 * the verifier needs (no relation between two variables). */
#define SPIN_COPY_PIECE(k)							\
	if (n & (1u << (k))) {							\
		__u32 m = n & ~((1u << (k)) - 1);				\
		__s64 od = (__s64)de - m, os = (__s64)se - m;			\
										\
		if (od < 0 || od > dsize - (1u << (k)) ||			\
		    os < 0 || os > ssize - (1u << (k)))			\
			return -1;						\
		/* the checked offsets, clamped again on the registers	\
		 * used: 6.1 checked a copy and added one recomputed	\
		 * from the stack ("makes map_value pointer be out of	\
		 * bounds") */							\
		SPIN_CLAMP_S(od, dsize - (1u << (k)));				\
		SPIN_CLAMP_S(os, ssize - (1u << (k)));				\
		if (bpf_probe_read_kernel(dst + od, 1u << (k), src + os))	\
			return -1;						\
	}

/* dst[de - n, de) = src[se - n, se), n <= SPIN_MAX_DMA, dst and src of
 * dsize and ssize bytes: at most 13 helper calls (the bits of n). */
static __always_inline int spin_copy_end(__u8 *dst, __u32 dsize, __u32 de,
					 const __u8 *src, __u32 ssize, __u32 se, __u32 n)
{
	if (n > SPIN_MAX_DMA)
		return -1;
	SPIN_COPY_PIECE(12) SPIN_COPY_PIECE(11) SPIN_COPY_PIECE(10) SPIN_COPY_PIECE(9)
	SPIN_COPY_PIECE(8) SPIN_COPY_PIECE(7) SPIN_COPY_PIECE(6) SPIN_COPY_PIECE(5)
	SPIN_COPY_PIECE(4) SPIN_COPY_PIECE(3) SPIN_COPY_PIECE(2) SPIN_COPY_PIECE(1)
	SPIN_COPY_PIECE(0)
	return 0;
}

/* Window [off, off+len) <-> bounce[0, len) without dynptrs: the piece in
 * the first element ends at its end or at off+len, the rest starts the
 * next one. */
static __always_inline int spin_host_bounce(__u64 off, __u8 *bounce, __u32 len, int to_host)
{
	__u32 in, n = SPIN_HOST_CHUNK - off % SPIN_HOST_CHUNK;
	__u8 *b = spin_host_at(off, &in);

	if (n > len)
		n = len;
	if (!b || len > SPIN_MAX_DMA)
		return -1;
	SPIN_LEN_IN(len, SPIN_MAX_DMA);
	if (to_host ? spin_copy_end(b, SPIN_HOST_CHUNK, in + n, bounce, SPIN_MAX_DMA, n, n) :
		      spin_copy_end(bounce, SPIN_MAX_DMA, n, b, SPIN_HOST_CHUNK, in + n, n))
		return -1;
	if (n == len)
		return 0;
	b = spin_host_at(off + n, &in);
	if (!b)
		return -1;
	return to_host ? spin_copy_end(b, SPIN_HOST_CHUNK, len - n, bounce, SPIN_MAX_DMA, len, len - n) :
			 spin_copy_end(bounce, SPIN_MAX_DMA, len, b, SPIN_HOST_CHUNK, len - n, len - n);
}
#else
/*
 * Overwrite a dynptr that is no longer used.  Everything here is inlined
 * into the handler, so the compiler may give the dynptr's stack slot to a
 * later variable of the handler; the verifier still sees a dynptr in that
 * slot and rejects a helper writing there ("potential write to dynptr").
 * A store to the slot makes it plain stack again (it destroys both halves
 * of the dynptr); volatile keeps it, as the dynptr is dead by then.
 */
static __always_inline void spin_dynptr_kill(struct bpf_dynptr *d)
{
	*(volatile __u64 *)d = 0;
}

/* Window [off+done, off+done+n) <-> bounce[done, done+n), within one
 * element; hd is set up over that element. */
static __always_inline int spin_host_piece(struct bpf_dynptr *bd, struct bpf_dynptr *hd,
					   __u64 off, __u32 done, __u32 n, int to_host)
{
	__u32 in;
	__u8 *b = spin_host_at(off + done, &in);

	if (!b || bpf_dynptr_from_mem(b, SPIN_HOST_CHUNK, 0, hd))
		return -1;
	return to_host ? bpf_dynptr_copy(hd, in, bd, done, n) : bpf_dynptr_copy(bd, done, hd, in, n);
}

/* Window [off, off+len) <-> bounce[0, len) through dynptrs: len is at most
 * SPIN_MAX_DMA, so the range spans one element or two.  Leaves no dynptr
 * behind on the stack. */
static __always_inline int spin_host_bounce(__u64 off, __u8 *bounce, __u32 len, int to_host)
{
	struct bpf_dynptr bd, hd;
	__u32 n = SPIN_HOST_CHUNK - off % SPIN_HOST_CHUNK;
	int rc = -1;

	if (n > len)
		n = len;
	if (len <= SPIN_MAX_DMA && !bpf_dynptr_from_mem(bounce, SPIN_MAX_DMA, 0, &bd) &&
	    !spin_host_piece(&bd, &hd, off, 0, n, to_host) &&
	    (n == len || !spin_host_piece(&bd, &hd, off, n, len - n, to_host)))
		rc = 0;
	spin_dynptr_kill(&bd);
	spin_dynptr_kill(&hd);
	return rc;
}
#endif /* SPIN_NO_KFUNCS */

/* b + in when a DMA of up to SPIN_MAX_DMA bytes from there stays in b's
 * chunk (in <= SPIN_HOST_FAST), else NULL (the bounce buffer's way). */
static __always_inline __u8 *spin_host_fast(__u8 *b, __u32 in)
{
	__u64 i = in;

	if (i > SPIN_HOST_FAST)
		return NULL;
	SPIN_BOUND(i, SPIN_HOST_FAST);
	return b + i;
}

/* Frame bytes at foff -> window. */
static __always_inline int spin_frame_to_host(struct xdp_md *xdp, __u32 foff, __u64 off,
					      __u32 len, __u8 *bounce)
{
	__u32 in;
	__u8 *b = spin_host_at(off, &in), *f;

	if (!SPIN_LEN_NZ(len))
		return 0;
	if (!b || len > SPIN_MAX_DMA)
		return -1;
	SPIN_LEN_IN(len, SPIN_MAX_DMA);
	if ((f = spin_host_fast(b, in)))
		return bpf_xdp_load_bytes(xdp, foff, f, len) ? -1 : 0;
	if (bpf_xdp_load_bytes(xdp, foff, bounce, len))
		return -1;
	return spin_host_bounce(off, bounce, len, 1);
}

/* Window -> frame bytes at foff. */
static __always_inline int spin_host_to_frame(struct xdp_md *xdp, __u32 foff, __u64 off,
					      __u32 len, __u8 *bounce)
{
	__u32 in;
	__u8 *b = spin_host_at(off, &in), *f;

	if (!SPIN_LEN_NZ(len))
		return 0;
	if (!b || len > SPIN_MAX_DMA)
		return -1;
	SPIN_LEN_IN(len, SPIN_MAX_DMA);
	if ((f = spin_host_fast(b, in)))
		return bpf_xdp_store_bytes(xdp, foff, f, len) ? -1 : 0;
	if (spin_host_bounce(off, bounce, len, 0))
		return -1;
	return bpf_xdp_store_bytes(xdp, foff, bounce, len) ? -1 : 0;
}

/* Any kernel pointer (packet, map value, stack) -> window. */
static __always_inline int spin_ptr_to_host(const void *src, __u64 off, __u32 len, __u8 *bounce)
{
	__u32 in;
	__u8 *b = spin_host_at(off, &in), *f;

	if (!SPIN_LEN_NZ(len))
		return 0;
	if (!b || len > SPIN_MAX_DMA)
		return -1;
	SPIN_LEN_IN(len, SPIN_MAX_DMA);
	if ((f = spin_host_fast(b, in)))
		return bpf_probe_read_kernel(f, len, src) ? -1 : 0;
	if (bpf_probe_read_kernel(bounce, len, src))
		return -1;
	return spin_host_bounce(off, bounce, len, 1);
}

/* Window -> any kernel pointer the verifier can prove len bytes for
 * (stack, map value): directly, or through the bounce buffer near an
 * element's end. */
static __always_inline int spin_host_to_ptr(void *dst, __u64 off, __u32 len, __u8 *bounce)
{
	__u32 in;
	__u8 *b = spin_host_at(off, &in), *f;

	if (!SPIN_LEN_NZ(len))
		return 0;
	if (!b || len > SPIN_MAX_DMA)
		return -1;
	SPIN_LEN_IN(len, SPIN_MAX_DMA);
	if ((f = spin_host_fast(b, in)))
		return bpf_probe_read_kernel(dst, len, f) ? -1 : 0;
	if (spin_host_bounce(off, bounce, len, 0))
		return -1;
	return bpf_probe_read_kernel(dst, len, bounce) ? -1 : 0;
}

/* Events (the runtime and the finish stages only, SPIN_RT_PROG). */
#ifdef SPIN_RT_PROG
/*
 * The event rings' shares (wire.h, SPIN_EV_ROOM): with n sources having
 * unread events in a ring (pairs in spin_src_ev_n, the asking one
 * included: its first look makes its pair), a source may have
 * SPIN_EV_ROOM_EVENTS / (n + 1) events unread (at least 1; beyond it
 * ev_quota), and, with n > 1, the ring may hold n / (n + 1) of SPIN_EV_ROOM
 * before one more event of anyone (beyond it host_queue_full).  So whatever the order
 * in which n sources fill their shares, 1 / (n + 1) of the room stays
 * free, and a source with no unread events (n + 1 with it) may always
 * post SPIN_EV_ROOM_EVENTS / ((n + 1) (n + 2)) events at once, and its
 * full share SPIN_EV_ROOM_EVENTS / (n + 2) as the others' are read.
 * Alone, a source has half the room (SPIN_SRC_EV_QUOTA); two flooding
 * sources leave a third of it, three a quarter.
 *
 * The counts are an upper bound (wire.h, struct spin_src_ev): a
 * generation ends when the reader's position passes the producer position
 * at which it started; with nobody reading, nothing ends.  Racing CPUs
 * may lose an update of the counts (a few events either way), and so may
 * an event posted while the sweeper frees its pair.  n counts a source
 * whose events were read until the sweeper frees its pair (two sweeps at
 * most after the reader passed them).
 */
/* A source's first counts in a ring (read-only: no stack). */
static const volatile struct spin_src_ev spin_src_ev_zero = { 0 };

/* Source rank's counts in the ring of process slot `slot`, made if it has
 * none (counted in spin_src_ev_n); NULL when spin_src_ev is full. */
static __always_inline struct spin_src_ev *spin_src_ev_get(__u32 rank, __u32 slot)
{
	__u32 k = SPIN_SRC_EV_KEY(rank, slot), *n;
	struct spin_src_ev *s = bpf_map_lookup_elem(&spin_src_ev, &k);

	if (s)
		return s;
	if (!bpf_map_update_elem(&spin_src_ev, &k, (const void *)&spin_src_ev_zero, BPF_NOEXIST) &&
	    (n = bpf_map_lookup_elem(&spin_src_ev_n, spin_slot_key(slot))))
		__sync_fetch_and_add(n, 1);
	return bpf_map_lookup_elem(&spin_src_ev, &k);
}

/* A new generation of a source's counts if the reader passed its mark
 * (cons, prod: the ring's positions); the upper bound of its unread events. */
static __always_inline __u32 spin_src_ev_roll(struct spin_src_ev *s, __u64 cons, __u64 prod)
{
	if (*(volatile __u64 *)&s->ev_mark > prod) {
		/* a mark in the slot's previous ring: this one is new */
		s->ev_old = 0;
		s->ev_new = 0;
		s->ev_mark = prod;
	} else if (cons >= *(volatile __u64 *)&s->ev_mark) {
		s->ev_old = cons >= prod ? 0 : s->ev_new;
		s->ev_new = 0;
		s->ev_mark = prod;
	}
	return s->ev_old + s->ev_new;
}

/* Flags for bpf_ringbuf_submit: no wake-up while the reader busy-polls
 * (SPIN_CFG_F_RB_QUIET); a wake-up is an interrupt, a VM exit on a VM.
 * After an event was posted quietly below a wake threshold (rb_lag), the
 * ring would not wake the reader by itself (it wakes only a reader that
 * has consumed everything before the new event): force it. */
static __always_inline __u64 spin_rb_flags(void)
{
	struct spin_cfg *cfg = spin_cfg_get();

	if (!cfg)
		return 0;
	if (cfg->flags & SPIN_CFG_F_RB_QUIET)
		return BPF_RB_NO_WAKEUP;
	return cfg->rb_lag ? BPF_RB_FORCE_WAKEUP : 0;
}

/* Flags for the completion event of a message on entry me, and its count
 * towards the entry's wake threshold (struct spin_me, wake_count): only
 * the event whose units cross wake_at wakes the reader.  Call after the
 * event's reservation succeeded (every counted unit is in the ring). */
static __always_inline __u64 spin_me_wake_flags(struct spin_me *me, struct spin_stats *st,
						__u32 fail, __u64 mlength)
{
	struct spin_cfg *cfg = spin_cfg_get();
	__u64 u, old, at, flags = spin_rb_flags();

	if (fail || !(me->options & SPIN_ME_WAKE_COUNT))
		return flags;
	u = (me->options & SPIN_ME_WAKE_BYTES) ? mlength : 1;
	old = __sync_fetch_and_add(&me->wake_count, u);
	at = *(volatile __u64 *)&me->wake_at;
	if (!at || flags == BPF_RB_NO_WAKEUP)
		return flags;
	if (old < at && at <= old + u)
		return BPF_RB_FORCE_WAKEUP;
	if (cfg && !cfg->rb_lag)
		cfg->rb_lag = 1;
	if (st)
		st->events_quiet++;
	return BPF_RB_NO_WAKEUP;
}

/* Wake the reader of ring rb (spin_rings) now, without an event: an empty
 * record, discarded, with a forced wake-up (consumers skip it). */
static __always_inline void spin_rb_doorbell(void *rb)
{
	void *e = rb ? bpf_ringbuf_reserve(rb, 8, 0) : NULL;

	if (e)
		bpf_ringbuf_discard(e, BPF_RB_FORCE_WAKEUP);
}

/* Submit an event with wake-up flags from spin_rb_flags() or
 * spin_me_wake_flags().  With SPIN_CFG_F_WAKE_DEFER the wake-up is not done
 * here, in the packet path, where it is an interrupt on this CPU (a VM exit
 * on a VM) that every packet behind this one waits for, but by the waker's
 * work item, which runs once the CPU's packet work is done.  Deferred, a
 * wake-up is always forced (the ring by itself wakes only a reader that
 * had consumed everything before this event); the work item coalesces
 * those that come while it is pending. */
static __noinline void spin_rb_submit(void *e, __u64 flags)
{
	struct spin_cfg *cfg;
	__u32 rank = ((struct spin_event *)e)->src_rank;
	__u32 slot = SPIN_PT_SLOT(((struct spin_event *)e)->pt_index) & (SPIN_MAX_PROCS - 1);
	struct spin_src_ev *se;
	struct spin_stats *st;
	struct spin_waker *w;

	/* the event counts towards its source's share of the ring
	 * (spin_src_ev_admit; its pair made again if the sweeper freed it
	 * since the admission, none when the map is full) */
	se = spin_src_ev_get(rank, slot);
	if (se)
		__sync_fetch_and_add(&se->ev_new, 1);
	/* another process's ring than slot 0's (spin_events): a direct
	 * wake-up wakes a reader that has caught up */
	if (slot && flags != BPF_RB_NO_WAKEUP)
		flags = 0;
	cfg = spin_cfg_get();	/* (not before: one more value kept across the calls) */
	if (flags == BPF_RB_NO_WAKEUP || !cfg || !(cfg->flags & SPIN_CFG_F_WAKE_DEFER) ||
	    !(w = bpf_map_lookup_elem(&spin_waker, spin_slot_key(slot))) ||
	    w->armed != 2) {
		bpf_ringbuf_submit(e, flags);
		return;
	}
#ifdef SPIN_NO_KFUNCS	/* armed is never 2 without bpf_wq: not reached */
	bpf_ringbuf_submit(e, flags);
#else
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	if (bpf_wq_start(&w->wq, 0)) {
		/* cannot defer it: wake now */
		spin_rb_doorbell(bpf_map_lookup_elem(&spin_rings, spin_slot_key(slot)));
		return;
	}
	st = spin_stats_get();
	if (st)
		st->wakes_deferred++;
#endif
}

/* The event ring is nearly full: its reader fell behind (admission). */
static __always_inline bool spin_events_full(__u32 pt)
{
	void *rb = spin_ring_of(pt);

	return !rb || bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) >
	       SPIN_EVENTS_SIZE - SPIN_EVENTS_RESERVE;
}

/*
 * May source rank `rank` have one more event in the ring of runtime portal
 * pt (admission of a message that will post one; events nothing admitted:
 * acks, timeouts)?  0, or the drop reason: ev_quota (its share unread, or
 * spin_src_ev full: a source that cannot be counted has no share) or
 * host_queue_full (the ring holds what the n sources may).
 */
static __noinline __u32 spin_src_ev_admit(__u32 rank, __u32 pt)
{
	__u32 slot = SPIN_PT_SLOT(pt) & (SPIN_MAX_PROCS - 1), *pn;
	struct spin_src_ev *s = spin_src_ev_get(rank, slot);
	void *rb = spin_ring_of(pt);
	__u64 cons, prod, n, share;

	if (!s)
		return SPIN_DROP_EV_QUOTA;
	if (!rb)
		return 0;	/* no ring: nothing is posted (ev_lost) */
	cons = bpf_ringbuf_query(rb, BPF_RB_CONS_POS);
	prod = bpf_ringbuf_query(rb, BPF_RB_PROD_POS);
	pn = bpf_map_lookup_elem(&spin_src_ev_n, spin_slot_key(slot));
	n = pn ? *(volatile __u32 *)pn : 1;
	if ((__s32)n < 1)	/* (only a writer outside the runtime makes it so) */
		n = 1;
	if (n > SPIN_EV_ROOM_EVENTS)
		n = SPIN_EV_ROOM_EVENTS;
	share = SPIN_EV_ROOM_EVENTS / (n + 1);
	if (share < 1)
		share = 1;
	if (spin_src_ev_roll(s, cons, prod) >= share)
		return SPIN_DROP_EV_QUOTA;
	/* (alone, its share is that bound: the ring's other records, such as
	 * the waker's doorbells, take none of it) */
	if (n > 1 && prod > cons &&
	    prod - cons + SPIN_EV_REC_SIZE > SPIN_EV_ROOM - SPIN_EV_ROOM / (n + 1))
		return SPIN_DROP_HOST_QUEUE_FULL;
	return 0;
}

#endif /* SPIN_RT_PROG */

#endif /* SPIN_MAPS_BPF_H */
