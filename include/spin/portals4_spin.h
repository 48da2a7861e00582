/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sPIN extension of the Portals 4 host API (Hoefler et al., "sPIN:
 * High-performance streaming Processing in the Network", SC17), as libspin
 * implements it.  Included by spin/portals4.h.
 *
 * A match entry carries (ptl_me_t, the fields after min_free):
 *   handlers                 a handler object loaded with PtlSpinHandlerLoad
 *                            (its header, payload and completion handlers,
 *                            declared with SPIN_HANDLERS in spin/handler.h)
 *   hpu_memory               an initial handler-memory image made with
 *                            PtlHPUAllocMem (copied into the entry's own
 *                            handler memory when it is appended)
 *   handler_host_mem(_length) the region PTL_HANDLER_HOST_MEM addresses; it
 *                            must lie in the host window (PtlSpinHostAlloc)
 * What such an entry does on the wire is what the spin runtime does
 * (docs/design.md): the handlers run in XDP for every packet of every
 * message that matches it.  Entries with handlers need their buffer (start,
 * length) in the host window too, or length 0.
 *
 * The host window: memory that the XDP runtime writes directly (a mmap-ed
 * BPF array map).  Any entry whose buffer lies in it (and that is not
 * PTL_ME_MANAGE_LOCAL) is deposited by the runtime, with no copy in
 * userspace; other entries receive through the process's AF_XDP socket and
 * the library deposits.
 */
#ifndef SPIN_PORTALS4_SPIN_H
#define SPIN_PORTALS4_SPIN_H

#ifdef __cplusplus
extern "C" {
#endif

/* Allocate length bytes of the host window (page aligned, zeroed). */
int PtlSpinHostAlloc(ptl_handle_ni_t ni_handle, ptl_size_t length, void **addr);
int PtlSpinHostFree(ptl_handle_ni_t ni_handle, void *addr);

/* Load a handler object (an ELF file built with clang -target bpf against
 * spin/handler.h).  A verifier rejection returns PTL_ARG_INVALID and
 * PtlSpinErrmsg() holds the relevant verifier lines. */
int PtlSpinHandlerLoad(ptl_handle_ni_t ni_handle, const char *path,
		       ptl_handle_handler_t *handler);
int PtlSpinHandlerUnload(ptl_handle_handler_t handler);

/* The paper's handler-memory allocation: up to SPIN_HPU_SIZE (4096) bytes,
 * zeroed; PtlHPUWriteMem sets the image an entry starts with. */
int PtlHPUAllocMem(ptl_size_t length, ptl_handle_ni_t ni_handle, ptl_handle_hpu_mem_t *mem);
int PtlHPUFreeMem(ptl_handle_hpu_mem_t mem);
int PtlHPUWriteMem(ptl_handle_hpu_mem_t mem, ptl_size_t offset, const void *buf,
		   ptl_size_t length);
/* Read (or write) the live handler memory of an appended entry. */
int PtlMEReadHPU(ptl_handle_me_t me_handle, ptl_size_t offset, void *buf, ptl_size_t length);
int PtlMEWriteHPU(ptl_handle_me_t me_handle, ptl_size_t offset, const void *buf,
		  ptl_size_t length);

/* How this process's waits ended (PtlEQWait, PtlEQPoll, PtlCTWait,
 * PtlCTPoll) and how often its progress thread was woken: what let a
 * waiting thread see the event that completed its wait.  Counts since
 * PtlNIInit; they never go back.  A wait that slept and found its event
 * after a sleep that ran to its period (`timer`) was not woken: with
 * SPIN_PTL_WAKE_US that is the design, otherwise a wake-up was missed or
 * came later than the period ($SPIN_PTL_POLL_US, default 2000 us). */
typedef struct {
	uint64_t waits;		/* waits that found what they waited for: */
	uint64_t waits_nosleep;	/*   without sleeping (busy-polling, or it was there) */
	uint64_t waits_woken;	/*   after a sleep the runtime's event-ring wake-up ended */
	uint64_t waits_rx;	/*   after a sleep a packet on the AF_XDP socket ended */
	uint64_t waits_poked;	/*   after a sleep another thread of this process ended
				 *   (it took the events: eventfd or condition variable) */
	uint64_t waits_timer;	/*   after a sleep that ran to its period */
	uint64_t sleeps;	/* sleeps in poll() by waiting callers */
	uint64_t sleeps_timer;	/*   of those, ended by their period */
	uint64_t bg_wakeups;	/* progress thread: poll() ended by a ring or the socket */
	uint64_t bg_timer;	/*   ... by its period (10 ms, or SPIN_PTL_WAKE_US) */
} ptl_spin_wait_stats_t;
int PtlSpinWaitStats(ptl_handle_ni_t ni_handle, ptl_spin_wait_stats_t *stats);

/* Reliable delivery (docs/reliable.md): what this process's sends needed
 * to get through, since PtlNIInit.  Initiator side, then target side (its
 * AF_XDP entries; the runtime counts its own in spinctl stats). */
typedef struct {
	uint64_t msgs;		/* reliable messages sent */
	uint64_t acked;		/* answered by the target (ack or final nack) */
	uint64_t failed;	/* given up: no answer within $SPIN_PTL_TIMEOUT_MS */
	uint64_t timeouts;	/* retransmission timer expiries */
	uint64_t tail_probes;	/* tail probes: a message's last packet sent again,
				 * asking, 2 round trips after it went out
				 * without an answer (before its timer) */
	uint64_t sacks;		/* selective acks received */
	uint64_t not_now;	/* "not now" nacks (receiver not ready) */
	uint64_t retx_pkts;	/* packets sent again */
	uint64_t window_waits;	/* sends that waited for the duplicate window */
	uint64_t probes;	/* probes sent for quiet messages (one-packet puts
				 * without an ack wanted, acknowledged in bulk):
				 * every 32nd such put asking itself, and
				 * duplicates sent to ask */
	uint64_t range_acked;	/* of acked: by a probe's range ack */
	uint64_t rto_us;	/* the retransmission timeout now */
	uint64_t srtt_us;	/* smoothed round-trip time (0: no sample yet) */
	uint64_t dup_answered;	/* target: duplicates answered from its window */
	uint64_t sacks_sent;	/* target: selective acks sent */
	uint64_t held;		/* target: times an event or a packet waited, or was
				 * refused "not now", because its event queue was
				 * full (back-pressure) */
	/* congestion window (initiator, per target rank) */
	uint64_t cc_waits;	/* sends that waited for the window */
	uint64_t cc_cuts;	/* times a window was halved (loss or "not now") */
	uint64_t cc_held;	/* packets held back by a window, sent later */
	uint64_t cwnd_max;	/* the largest window now of the ranks sent to, packets */
	uint64_t regets;	/* gets sent again naming the reply packets they miss */
	uint64_t reget_pkts;	/* target: reply packets sent again for such re-gets */
	uint64_t reget_crossed;	/* target: repeated gets that crossed their whole reply
				 * or last repair (sent before it came), not
				 * answered again */
	uint64_t reply_waits;	/* gets that waited for room in this process's
				 * AF_XDP ring for their replies */
	/* reordering (docs/reliable.md, "Reordering") */
	uint64_t rack_lost;	/* messages found lost because a later one to
				 * their rank was answered a reordering window
				 * before (sent again: in retx_pkts) */
	uint64_t reo_deferred;	/* SACKs whose holes waited out the reordering
				 * window before they were sent again */
	uint64_t spurious;	/* retransmissions found spurious: the answer
				 * came sooner after them than any round trip */
	uint64_t undos;		/* window cuts undone: all their losses spurious */
	uint64_t min_rtt_us;	/* smallest round trip lately (0: none) */
	uint64_t reo_wnd_us;	/* the largest reordering window of the ranks
				 * sent to (0: none reordered) */
} ptl_spin_rel_stats_t;
int PtlSpinRelStats(ptl_handle_ni_t ni_handle, ptl_spin_rel_stats_t *stats);

/*
 * Shipped handlers (docs/shipping.md): send a handler object to peers'
 * Portals processes, which verify it, cache it by its SHA-256 and install
 * it on an entry the sender names; the sender's puts to portal index
 * SPIN_SHIP_PT (31) with PtlSpinShipBits(ni, entry_id) run it, and puts
 * with PtlSpinIfuncBits(hash) run the cached program by its hash.  A
 * target accepts code only with $SPIN_SHIP_ALLOW (off by default).
 * Logical NIs only.  Each call waits for every target's answer; the
 * return is PTL_OK when all succeeded, else PTL_FAIL (PTL_ARG_INVALID for
 * bad arguments) and each result says why.
 */
#define PTL_SPIN_SHIP_PT	31
#define PTL_SPIN_PLACE_NATIVE	1	/* the target's runtime runs in native XDP */
#define PTL_SPIN_PLACE_GENERIC	2	/* ... in generic (skb) XDP */
typedef struct {
	ptl_process_t target;
	int status;			/* PTL_OK or PTL_FAIL */
	unsigned int code;		/* enum spin_ship_status (spin/wire.h): 0 ok,
					 * 1 malformed, 2 denied, 3 limit, 4 verifier,
					 * 5 no such entry, 6 failed, 7 undelivered */
	char reason[1024];		/* why, one line (verifier: its relevant lines, '|' between) */
	unsigned char hash[32];		/* SHA-256 of the object */
	int placement;			/* PTL_SPIN_PLACE_* */
	int cache_hit;			/* the target had the program loaded already */
	unsigned int insns;		/* instructions the target's kernel holds */
	unsigned int programs;		/* shipped programs the target holds now */
	unsigned int handlers;		/* handler programs on the target's runtime now */
	uint64_t cache_hits, loads;	/* the target's counters since it started */
	uint64_t invocations;		/* PtlSpinHandlerQuery: messages the entry completed */
	unsigned char hpu[64];		/* PtlSpinHandlerQuery: its handler memory, first bytes */
} ptl_spin_ship_result_t;

/* Ship len bytes of object obj to n targets, to be installed on entry_id
 * (0 .. 2^24 - 1) of this process, with hpu_len bytes of handler memory
 * (<= 4096, zeroed) and host_len bytes of handler host memory. */
int PtlSpinHandlerShip(ptl_handle_ni_t ni_handle, const void *obj, ptl_size_t len,
		       const ptl_process_t *targets, unsigned int n, uint32_t entry_id,
		       ptl_size_t hpu_len, ptl_size_t host_len, ptl_spin_ship_result_t *results);
/* Remove entry_id from the targets (its program too, unless still used). */
int PtlSpinHandlerUnship(ptl_handle_ni_t ni_handle, const ptl_process_t *targets, unsigned int n,
			 uint32_t entry_id, ptl_spin_ship_result_t *results);
/* Report entry_id at the targets: invocations, handler memory. */
int PtlSpinHandlerQuery(ptl_handle_ni_t ni_handle, const ptl_process_t *targets, unsigned int n,
			uint32_t entry_id, ptl_spin_ship_result_t *results);
/* Report the ifunc entry of the targets' cached program hash. */
int PtlSpinIfuncQuery(ptl_handle_ni_t ni_handle, const ptl_process_t *targets, unsigned int n,
		      const unsigned char hash[32], ptl_spin_ship_result_t *results);
/* Match bits of this process's entry_id at a target (portal PTL_SPIN_SHIP_PT). */
ptl_match_bits_t PtlSpinShipBits(ptl_handle_ni_t ni_handle, uint32_t entry_id);
/* Match bits of an ifunc message: runs the target's cached program hash. */
ptl_match_bits_t PtlSpinIfuncBits(const unsigned char hash[32]);
/* SHA-256 of len bytes (an object's hash). */
void PtlSpinShipHash(const void *obj, ptl_size_t len, unsigned char hash[32]);

/* One line on why the last call of this thread failed ("" if none). */
const char *PtlSpinErrmsg(void);

#ifdef __cplusplus
}
#endif
#endif /* SPIN_PORTALS4_SPIN_H */
