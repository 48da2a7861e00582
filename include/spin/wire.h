/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * spin wire format and kernel/user ABI.
 *
 * This is the ONE definition of everything that crosses the wire or a BPF
 * map boundary.  It is included by the XDP runtime, by handler objects
 * (through spin/handler.h) and by libspin/spinctl.  All multi-byte wire
 * fields are in network byte order; all map-value fields are in host order.
 */
#ifndef SPIN_WIRE_H
#define SPIN_WIRE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <linux/bpf.h>	/* struct bpf_timer */
#endif

#define SPIN_VERSION		1
/*
 * The ABI between the runtime object, handler objects and libspin: the
 * layout of the runtime's maps, spin_ctx, spin_cfg and the handler entry
 * protocol (spin/handler.h).  Bumped whenever any of them changes; the
 * runtime and every handler object carry it (spin_abi_version, maps.bpf.h)
 * and libspin refuses an object built for another one.
 */
/* 2: handler programs end in the runtime's finish stage (spin_stages)
 * 4: spin_stages is the handler program's own (SPIN_STAGE_SELF)
 * 5: spin_me.busy (was pad_hpu), kept by spin_msg_free in handler programs
 *    too; spin_waker has an element per process slot; spin_src_ev
 * 6: spin_hget.slot; spin_hgets is the runtime's only (handler objects do
 *    not declare it); the finish stage records handler gets and posts
 *    long puts from host, spin_tc neither
 * 7: spin_putq is a process slot's own (spin_putqs, an array of maps; a
 *    handler program's spin_putq is its slot's); spin_putq_ent.seal and
 *    spin_fanout_meta.seal: spin_tc sends a queued put only with the seal
 *    its slot's finish stage gave the frame, and consumes it;
 *    spin_src without the event counts: every slot's ring (slot 0's too)
 *    counted in spin_src_ev, whose pairs the sweeper frees; spin_src_ev_n;
 *    spin_ctx.tgt_rank; handler objects do not declare spin_cfg,
 *    spin_peers or spin_auth (libspin refuses one that does); handler
 *    memory per process slot (libspin: slot 0's spin_hpu/spin_hpu_big,
 *    another's pinned as hpu<slot>/hpubig<slot>)
 * 8: handler objects hold only their own and their slot's maps (spin_ctx,
 *    spin_hscratch, spin_mstate_pc, spin_stages, their slot's spin_hpu,
 *    spin_hpu_big, spin_host/spin_wins, spin_putq and spin_mstate: libspin
 *    refuses one declaring any other); the header verdict, accounting and
 *    the handler's counters go to the finish stage, which takes the
 *    packet's identity from spin_tctx, not spin_ctx; spin_ctx carries the
 *    entry's windows and hpu_size; spin_mstate per slot (spin_mstates);
 *    SPIN_MSGF_SLOT */
#define SPIN_ABI_VERSION	8
#define SPIN_ABI_SECTION	".rodata.spin_abi"
/* The runtime object's spin_fin_slot (maps.bpf.h): libspin sets it in the
 * finish stage it loads for a handler program */
#define SPIN_FIN_SECTION	".rodata.spin_fin"
#define SPIN_DEFAULT_PORT	7717	/* UDP port of sPIN traffic */

/* ---------------------------------------------------------------- wire -- */

enum spin_op {
	SPIN_OP_PUT	= 1,
	SPIN_OP_GET	= 2,	/* Portals get: a request for bytes of the target */
	SPIN_OP_ACK	= 3,	/* acknowledgement of a put (SPIN_F_ACK_REQ) */
	SPIN_OP_REPLY	= 4,	/* the answer to a GET/FETCH: the requested bytes */
	SPIN_OP_ATOMIC	= 5,	/* Portals atomic: combine the payload into the target */
	SPIN_OP_FETCH	= 6,	/* Portals fetch-atomic or swap: as ATOMIC, and the
				 * target's old bytes come back in a REPLY */
	SPIN_OP_SACK	= 7,	/* selective ack of a reliable message's packets
				 * (SPIN_F_REL), see "Reliable delivery" below */
	SPIN_OP_MAX,
};

/* spin_hdr.flags */
#define SPIN_F_ACK_REQ		0x0001	/* initiator wants an ack */
#define SPIN_F_FROM_DEVICE	0x0002	/* sent by a handler (put from device) */
#define SPIN_F_FROM_HOST	0x0004	/* sent by a handler (put from host) */
#define SPIN_F_REL		0x0008	/* reliable: the initiator retransmits until the
					 * target acknowledges (see below) */
#define SPIN_F_SACK_REQ		0x0010	/* reliable: answer with a SACK if the message is
					 * still incomplete after this packet */

/*
 * Reliable delivery (SPIN_F_REL; docs/reliable.md).  The initiator keeps a
 * reliable message until the target answers it.  The target answers a
 * multi-packet message, and a single-packet one that asks (SPIN_F_SACK_REQ
 * or SPIN_F_ACK_REQ, which also says that the initiator's application
 * wants the Portals ack event), with an ACK when it completes, or a nack.
 * Single-packet messages that do not ask are acknowledged in bulk: the
 * initiator sends one of them again with SPIN_F_SACK_REQ now and then
 * (a probe), and the target's answer to that duplicate, its ACK, carries
 * in user_hdr[3] bit i set when message id (msg_id - 1 - i) of the same
 * source completed there without failure (a range ack).  A nack with SPIN_FAIL_QUEUE_FULL means "not now" (event
 * ring, message table or source share full: receiver not ready): the
 * target forgot the message and the initiator sends it again later; every
 * other answer is final.  The initiator marks the last packet of a message,
 * and the last of every retransmission, with SPIN_F_SACK_REQ; a target that
 * still misses packets of the message after it answers with a SACK
 * (SPIN_OP_SACK, target to initiator): msg_id, match_bits, remote_off and
 * hdr_data of the message, user_hdr[0] the packets the message has,
 * user_hdr[2] the index of the first 64-packet word the SACK covers (the
 * first with a gap), payload: the message's packet bitmap from that word
 * on, little-endian 64-bit words (as many as fit in the frame).  A
 * message whose entry is an AF_XDP one is acknowledged by the owning
 * process, which receives it.  A duplicate of
 * a message the target completed is answered again from the duplicate
 * window (spin_dedup), which keeps each id's outcome: an ACK with the same
 * failure, list and length, without running a handler, depositing or
 * posting anything again.  The initiator never has a message unanswered
 * whose id is SPIN_DEDUP_SLOTS or more below the newest it sent, so the
 * window remembers every id a retransmission can carry.  A copy the network
 * held back longer (reordered past SPIN_DEDUP_SLOTS newer ids of its
 * source) finds a newer id in its slot: it was answered before that id was
 * used, so a reliable packet whose slot holds an id at most
 * SPIN_DEDUP_STALE newer (24-bit ids, wrapping) is dropped as a duplicate,
 * and the newer id keeps its slot.
 */

/*
 * An acknowledgement (SPIN_OP_ACK) is a header without payload sent to the
 * initiator when a message with SPIN_F_ACK_REQ completes on the target: its
 * msg_id, match_bits, remote_off and hdr_data are the acknowledged
 * message's; user_hdr[0] is the manipulated length, user_hdr[1] the failure
 * (enum spin_fail), user_hdr[2] the list the entry was on.
 *
 * A get (SPIN_OP_GET) is one packet, a header without payload: msg_len is
 * the requested length (0 is valid), remote_off the offset in the target
 * entry, pkt_off 0; match_bits, pt_index, src_rank/src_pid and msg_id (never
 * 0, in the same per-source id space as puts: a repeated id is a duplicate)
 * as for a put.  It matches entries with SPIN_ME_OP_GET only.  The target
 * answers with a message of op SPIN_OP_REPLY to the initiator's rank: the
 * GET's msg_id, msg_len = the manipulated length (Portals truncation at the
 * entry's window; the reply carries the window's bytes at host_off +
 * remote_off), cut into seg_size packets like a put (one packet, built by
 * the target's runtime with XDP_TX, if it fits in SPIN_MAX_SEG; otherwise
 * sent by the owning process from the host window); match_bits, remote_off
 * and hdr_data echoed; user_hdr[0] the requested length, user_hdr[1] the
 * failure (enum spin_fail), user_hdr[2] the list the entry was on.
 *
 * A reliable get sent again (SPIN_F_REL, the same msg_id) by an initiator
 * that already has part of a multi-packet reply may carry a payload: the
 * reply's packet bitmap as the initiator has it, bit set = packet received,
 * little-endian 64-bit words from word user_hdr[2] on (at most
 * SPIN_MAX_SEG / 8 words), counted in packets of user_hdr[3] bytes (the
 * reply's seg_size).  The target sends again only the reply packets whose
 * bits are clear in those words (a "re-get"; a target that cannot, the
 * whole reply).  The runtime hands such a re-get of a window entry to the
 * owning process's AF_XDP socket, having checked that the entry is still
 * the one the get read: job_key the entry's index (as for SPIN_ME_XSK
 * entries), user_hdr[0] the reply's start in the host window, user_hdr[1]
 * its length (low 32 bits) and the entry's list (bits 32-39), UDP checksum
 * cleared.  A get sent again that the runtime hands to an AF_XDP socket
 * (a re-get of a window entry, or any get of a SPIN_ME_XSK entry it handed
 * over before) carries in auth_tag the time the runtime took it
 * (bpf_ktime_get_ns; the runtime checked the tag, and the process does not
 * check a request's again); a GET_FROM_HOST event has it in timestamp_ns.
 * A repeated get that arrived before the answer to its earlier copy was
 * sent (or just after: they crossed) is answered by that answer, not by
 * another one: without a bitmap, the whole reply; with one, the packets
 * the same bitmap words named (a re-get).  A get waiting behind other long
 * replies is asked for again by its initiator's timer, and sending every
 * such reply again made the target send 7x the bytes asked for (re-gets of
 * 100 16 MiB gets at 10% loss: 26x the packets missing).
 *
 * An atomic (SPIN_OP_ATOMIC) or fetch-atomic/swap (SPIN_OP_FETCH) is one
 * packet (msg_len <= SPIN_MAX_SEG) whose payload is the initiator's operand
 * vector; user_hdr[0] is the Portals operation (ptl_op_t), user_hdr[1] the
 * datatype (ptl_datatype_t), user_hdr[2] the swap operand (PTL_CSWAP*
 * compare value, PTL_MSWAP mask) as its bytes in host order in the low bits;
 * an operand of 16 bytes (PTL_DOUBLE_COMPLEX, PTL_LONG_DOUBLE) continues in
 * user_hdr[3] (its bytes 8..15, the same way).
 * The target's runtime matches it (ATOMIC: entries with SPIN_ME_OP_PUT;
 * FETCH: entries with SPIN_ME_OP_PUT and SPIN_ME_OP_GET) and always hands it
 * to the owning process's AF_XDP socket: the library applies the operation.
 * A FETCH is answered with a REPLY carrying the old bytes (user_hdr as for a
 * get's reply); an ATOMIC with SPIN_F_ACK_REQ is acked like a put.
 *
 * Delivery to an AF_XDP socket: for every packet the runtime hands to the
 * owning process's AF_XDP socket because its entry has SPIN_ME_XSK (puts,
 * gets, atomics), job_key (checked by then) is overwritten with the index
 * of the matched entry in spin_me (the process cannot see the match
 * otherwise).
 *
 * Job key: a runtime attached with a key (spin_cfg.job_key, not 0; the
 * attach option key, or SPIN_JOB_KEY when a Portals process attaches)
 * takes only packets whose job_key is that key (else bad_key), and every
 * packet it or a process on it sends carries it.  Like an InfiniBand
 * Q_Key: 32 bits that a host outside the job does not know; not a
 * cryptographic check (a host on the path sees it).
 *
 * Authenticator: a runtime attached with an auth key (struct spin_auth,
 * 128 bits, in the spin_auth map; the attach option auth-key, or
 * SPIN_AUTH_KEY when a Portals process attaches) takes only packets whose
 * auth_tag is the SipHash-2-4, under that key, of the header's first
 * SPIN_AUTH_LEN bytes as they arrive (every field but the tag: op, flags,
 * portal, cut, source, job key, id, match bits, lengths, offsets,
 * hdr_data, user_hdr), else bad_auth; it is checked after the source and
 * job key checks and before anything else (no state changes before it).
 * The tag is stored as the hash's 8 bytes little-endian.  Everything the
 * runtime or a process on it sends is tagged: puts, gets, atomics, ACKs,
 * nacks, SACKs, replies, handler puts (spin_tc re-tags each fan-out copy).
 * The payload is not covered (docs/security.md).  A packet handed to an
 * AF_XDP socket after the check has job_key rewritten (below), so its
 * tag no longer verifies; ACK/REPLY/SACK packets are not rewritten and
 * the library checks their tag again.
 *
 * Negative acknowledgements: a PUT or ATOMIC with SPIN_F_ACK_REQ, and every
 * GET and FETCH, that the target cannot deliver (portal index not allocated
 * or disabled, no entry matched, no AF_XDP socket for an XSK entry) is
 * answered by the target's runtime from the packet at pkt_off 0: an ACK (for
 * PUT/ATOMIC) or a header-only REPLY (for GET/FETCH, msg_len 0) whose
 * user_hdr[1] is the failure (enum spin_fail) and user_hdr[0] 0, so the
 * initiator sees an event instead of waiting forever.
 *
 * Get cap: a get that would make the runtime send more than
 * spin_cfg.get_max bytes (its manipulated length, for an entry the runtime
 * answers, not SPIN_ME_XSK) is refused before the entry is claimed:
 * get_cap, nacked with a header-only REPLY whose failure is
 * SPIN_FAIL_OP_VIOLATION.
 *
 * Admission: a message whose matched entry will post an event for it (an
 * entry that wants events, a use-once entry (its unlink event), a get
 * whose reply the owning process sends; AF_XDP entries too) is refused
 * before the entry is claimed when the event ring is nearly full (less
 * than SPIN_EVENTS_RESERVE free: the process that reads it fell behind),
 * counted as host_queue_full, or, except for AF_XDP entries, when its
 * source rank has its share of the ring unread (ev_quota; the share
 * shrinks with the sources that have unread events, SPIN_SRC_EV_QUOTA
 * when it is alone) or the ring holds what all the sources with unread
 * events may have (host_queue_full: the rest is kept for new ones), and
 * nacked with SPIN_FAIL_QUEUE_FULL: no completion is ever lost silently.  A
 * message whose entry posts nothing (no-events, not use-once) is taken
 * whatever the ring holds: a runtime whose events nobody reads keeps
 * serving those entries.  Events that no admission precedes are posted
 * only within the source's share and that room: an ACK, a timeout
 * (ev_quota, host_queue_full otherwise); one that finds the ring full is
 * lost (ev_lost).
 * So is the first packet of a multi-packet message that finds the message
 * table full (msg_table_full) or its source rank holding its share of it
 * already (src_quota): SPIN_MAX_MSGS / (n + 1) with n the sources holding
 * entries (half when it is alone), so no number of sources can take the
 * whole table from the others.
 *
 * Flow control (SPIN_PT_FLOWCTRL on the portal table entry): a message that
 * matches no entry of such an entry, or is refused for a full event ring
 * (Portals' resource exhaustion), disables it (SPIN_PT_ENABLED cleared
 * with compare-and-swap), posts SPIN_EV_PT_DISABLED once, and is nacked with
 * SPIN_FAIL_PT_DISABLED; so is every later message until the host
 * re-enables it.
 *
 * Every packet of a message carries the whole header, so any packet can be
 * the first one to arrive.  The payload of a packet is the UDP payload after
 * this header; its length is implied by the UDP length.  Packets of one
 * message are cut at multiples of seg_size: a packet at pkt_off carries
 * min(seg_size, msg_len - pkt_off) bytes.  Every packet of a message has
 * the same msg_len and seg_size, and a message has at most
 * SPIN_MSG_MAX_PKTS packets (else bad_seg).
 */
struct spin_hdr {
	__u8	version;	/* SPIN_VERSION */
	__u8	op;		/* enum spin_op */
	__be16	flags;		/* SPIN_F_* */
	__be16	pt_index;	/* target portal table index */
	__be16	seg_size;	/* payload bytes per packet (last may be short) */
	__be32	src_rank;	/* initiator: logical rank */
	__be32	src_pid;	/* initiator: Portals pid */
	__be32	job_key;	/* the job's key (spin_cfg.job_key), 0: none;
				 * see "Job key" above */
	__be32	msg_id;		/* per-initiator message id, never 0 */
	__be64	match_bits;
	__be32	msg_len;	/* total message length in bytes */
	__be32	pkt_off;	/* offset of this packet's payload in the message */
	__be64	remote_off;	/* Portals remote offset */
	__be64	hdr_data;	/* Portals header data */
	__be64	user_hdr[4];	/* sPIN user header words */
	__be64	auth_tag;	/* SipHash-2-4 of the bytes above under the
				 * job's auth key, 0: none; see
				 * "Authenticator" above (and spin/auth.h) */
};
_Static_assert(sizeof(struct spin_hdr) == 96, "spin_hdr is 96 bytes on the wire");
/* The authenticated bytes: every field before auth_tag. */
#define SPIN_AUTH_LEN		((int)__builtin_offsetof(struct spin_hdr, auth_tag))
_Static_assert(SPIN_AUTH_LEN % 8 == 0, "the authenticated bytes are whole 64-bit words");

/* Frame offsets: the runtime handles IPv4 without options only. */
#define SPIN_HDR_OFF		(14 + 20 + 8)
#define SPIN_PAY_OFF		(SPIN_HDR_OFF + (int)sizeof(struct spin_hdr))

/* Largest sPIN payload in one 1500-byte-MTU IPv4/UDP frame. */
#define SPIN_L3_OVERHEAD	(20 + 8 + (int)sizeof(struct spin_hdr))
#define SPIN_MAX_SEG		(1500 - SPIN_L3_OVERHEAD)	/* 1376 */
/* Largest message (msg_len), 1 GiB: what libspin's receive calls can return
 * (an int) with room to spare, and what the tests move (docs/design.md,
 * "Message state").  The wire's 32-bit msg_len/pkt_off would allow < 4 GiB. */
#define SPIN_MAX_MSG		(1u << 30)

/* ------------------------------------------------------------ limits -- */

/* Portal table entries: 128 per Portals process on the interface (its
 * slot, 0..SPIN_MAX_PROCS-1), 64 for each of its two NIs, the runtime's
 * index slot << 8 | portal (the indexes 128..255 of a slot are never
 * allocated).  The wire's pt_index
 * carries the runtime's index, so the destination process rides in the
 * authenticated header, in its own byte, which the runtime rewrites with
 * one store (docs/design.md, "Many Portals processes per interface"). */
#define SPIN_MAX_PROCS		8	/* Portals processes per interface */
#define SPIN_PT_PER_PROC	128	/* portals of one process: 64 per NI */
#define SPIN_PT_SLOT_SHIFT	8
#define SPIN_MAX_PT		(SPIN_MAX_PROCS << SPIN_PT_SLOT_SHIFT)
#define SPIN_PT_SLOT(pt)	((pt) >> SPIN_PT_SLOT_SHIFT)
#define SPIN_PT_OF(slot, p)	((slot) << SPIN_PT_SLOT_SHIFT | (p))

/*
 * Each process slot has its own host window (spin_wins, an ARRAY_OF_MAPS
 * of mmap-able arrays by slot; slot 0's is spin_host).  Inside the runtime
 * a window address is slot << SPIN_WIN_SHIFT | byte offset in that slot's
 * window ("window address"): the DMA helpers look the window up from it,
 * and every address is made from the slot of the entry it belongs to, so
 * an entry can reach only its own process's window.  Entries (host_off,
 * hhost_off) and events (start) carry plain byte offsets in their slot's
 * window; put requests handed to the host (spin_put_req.src_off of
 * SPIN_SRC_HOST) and spin_hget.host_off carry window addresses.
 */
#define SPIN_WIN_SHIFT		40
#define SPIN_WIN_MASK		((1ull << SPIN_WIN_SHIFT) - 1)
#define SPIN_WIN_ADDR(slot, off) ((__u64)(slot) << SPIN_WIN_SHIFT | (off))
#define SPIN_WIN_SLOT(a)	((a) >> SPIN_WIN_SHIFT)
#define SPIN_WIN_OFF(a)		((a) & SPIN_WIN_MASK)
/* Match entries of an interface, on any portal and list (no per-portal
 * cap): spin_me slots, matched through spin_mx and the portals' wildcard
 * lists (docs/design.md, "Matching").  Slots below SPIN_MAX_HPU have
 * handler memory (spin_hpu); entries with handlers are placed there. */
#define SPIN_MAX_ME		(1 << 17)	/* 131,072 */
#define SPIN_MAX_HPU		4096	/* entries with handler memory (16 MiB) */
#define SPIN_ME_NIL		0xffffffffu	/* no entry (end of a list) */
#define SPIN_MAX_HANDLERS	64	/* handler programs per interface */
/* The stages a handler program tail-calls (spin_stages, a program array
 * of the handler program's own, lib/handler.c): the finish stage
 * (spin_finish in bpf/spin_rt.bpf.c, loaded for this handler program with
 * its maps) deposits when the handler asks for the default deposit, runs
 * counters, events and puts; it enters the handler program again
 * (SPIN_STAGE_SELF) for its completion handler. */
#define SPIN_STAGE_FINISH	0
#define SPIN_STAGE_SELF		1
#define SPIN_MAX_STAGES		2
#define SPIN_MAX_PEERS		65536	/* logical ranks (spin_peers, spin_src: arrays) */
#define SPIN_DEDUP_SLOTS	1024	/* recent message ids remembered per peer */
/* Sources with a duplicate window at once (spin_dedup, a hash that holds
 * windows only for sources that sent lately: 20 KiB each).  A window unused
 * for SPIN_DEDUP_IDLE_NS is freed by the sweeper; while all are in use, a
 * new source's packets are refused (src_table_full, nacked "not now"). */
#define SPIN_DEDUP_SOURCES	4096
#define SPIN_DEDUP_IDLE_NS	(60ull * 1000 * 1000 * 1000)
#define SPIN_DEDUP_STALE	(8 * SPIN_DEDUP_SLOTS)	/* older copies: duplicates */
#define SPIN_MAX_MSGS		65536	/* multi-packet messages in flight (spin_msgs
					 * elements are allocated per message) */
#define SPIN_SRC_MSG_QUOTA	(SPIN_MAX_MSGS / 2)	/* ... of them from one source rank
					 * when it is the only one holding any;
					 * with n sources holding some, each may
					 * hold SPIN_MAX_MSGS / (n + 1) (spin_src_quota
					 * in maps.bpf.h): the others keep a share */
#define SPIN_SRC_MSG_MIN	8	/* ... but never fewer than this */
#define SPIN_BITMAP_WORDS	64	/* words of a packet bitmap chunk: the inline one
					 * in spin_msg (packets 0..4095) and each of
					 * spin_msg_bits (4096 packets each) */
#define SPIN_CHUNK_PKTS		(SPIN_BITMAP_WORDS * 64)	/* 4096 */
#define SPIN_MSG_MAX_PKTS	(1u << 20)	/* packets of one message (seg_size >= 1024
					 * for a SPIN_MAX_MSG message) */
#define SPIN_MSG_MAX_CHUNKS	(SPIN_MSG_MAX_PKTS / SPIN_CHUNK_PKTS)	/* 256, the inline one too */
#define SPIN_MSG_CHUNKS		4096	/* spin_msg_bits entries: bitmap chunks of all
					 * messages in flight beyond their first 4096
					 * packets (4096 * 4096 * 1376 B = 21.5 GiB) */
#define SPIN_SRC_CHUNK_QUOTA	(SPIN_MSG_CHUNKS / 2)	/* ... of them for one source rank */
_Static_assert(SPIN_MAX_MSG / SPIN_MAX_SEG < SPIN_MSG_MAX_PKTS,
	       "a SPIN_MAX_MSG message in full-size packets fits the packet limit");
#define SPIN_HPU_SIZE		4096	/* handler (HPU) memory per match entry */
#define SPIN_HPU_BIG_SIZE	65536	/* ... of an entry with big handler memory
					 * (spin_me_spec.hpu_size > SPIN_HPU_SIZE) */
#define SPIN_MAX_HPU_BIG	64	/* entries with big handler memory: slots
					 * 0 .. SPIN_MAX_HPU_BIG - 1 */
#define SPIN_PAGE		4096	/* host window allocation unit */
#define SPIN_SCRATCH_SIZE	16384	/* spin_scratch(): per-CPU handler scratch */
#define SPIN_MSG_STATE_SIZE	256	/* spin_msg_state(): per-message handler state */
#define SPIN_HOST_CHUNK		16384	/* spin_host map element (4 pages) */
#define SPIN_DEF_HOST_PAGES	4096	/* default host window: 16 MiB */
#define SPIN_MAX_DMA		SPIN_PAGE /* bytes per DMA call */
#define SPIN_MAX_PUTS		64	/* puts per handler invocation, device and host
					 * mixed (power of 2); more than one: fan-out,
					 * see below */
#define SPIN_PUTQ_SIZE		1024	/* per-CPU ring of queued puts of a process
					 * slot (spin_putq, spin_putqs): puts 1.. of
					 * the slot's last invocations on a CPU */
#define SPIN_MSG_TIMEOUT_NS	(1000ull * 1000 * 1000)	/* incomplete message */
/* ... a reliable one (SPIN_F_REL) at least this long without a packet: its
 * sender sends one at least every RTO (at most 200 ms by default) and gives
 * up itself after 2 s without an answer; a target that gave up first
 * would fail a message its sender was still delivering */
#define SPIN_REL_MSG_TIMEOUT_NS	(4000ull * 1000 * 1000)
/* A process whose AF_XDP receive ring has held frames this long without it
 * taking one is stalled (stopped, or not calling the library): a reliable
 * sender's retransmission of a message already in that ring is answered
 * "not now" instead of being queued behind it again, so the sender waits
 * instead of giving up (docs/reliable.md, "Flow control") */
#define SPIN_XSK_STALL_NS	(100ull * 1000 * 1000)
#define SPIN_TOMBSTONE_NS	(200ull * 1000 * 1000)	/* late duplicate of an expired id */
#define SPIN_HDR_WAIT_LOOPS	(1 << 16) /* spins waiting for a header handler */
#define SPIN_GC_MIN_NS		(10ull * 1000 * 1000)	/* sweep period bounds */
#define SPIN_GC_MAX_NS		(250ull * 1000 * 1000)

#define SPIN_RANK_ANY		0xffffffffu
#define SPIN_PID_ANY		0xffffffffu

/* ------------------------------------------------------ runtime ABI -- */

/* Handler slots counted in statistics. */
enum spin_hslot {
	SPIN_H_HEADER = 0,
	SPIN_H_PAYLOAD,
	SPIN_H_COMPLETION,
	SPIN_H_MAX,
};

/* One counter per reason a packet or message is dropped. */
#define SPIN_DROP_REASONS(X)						\
	X(MALFORMED,	"malformed",	"truncated or inconsistent sPIN header") \
	X(BAD_VERSION,	"bad_version",	"unknown sPIN version")		\
	X(BAD_OP,	"bad_op",	"unknown or unsupported operation")	\
	X(BAD_PT,	"bad_pt",	"portal index out of range or not allocated") \
	X(PT_DISABLED,	"pt_disabled",	"portal table entry disabled")	\
	X(ZERO_LEN,	"zero_len",	"zero-length message or packet")	\
	X(BAD_OFFSET,	"bad_offset",	"packet offset + length beyond message") \
	X(BAD_SEG,	"bad_seg",	"packet not cut at the segment size")	\
	X(BAD_SOURCE,	"bad_source",	"source rank out of range")	\
	X(NO_MATCH,	"no_match",	"no match entry accepted the message") \
	X(DUPLICATE,	"duplicate",	"packet or message seen before")	\
	X(MSG_TABLE_FULL, "msg_table_full", "too many messages in flight") \
	X(MSG_TIMEOUT,	"msg_timeout",	"message never completed")	\
	X(HDR_WAIT,	"hdr_wait",	"timed out waiting for the header handler") \
	X(MSG_DROPPED,	"msg_dropped",	"message dropped by its header handler") \
	X(HANDLER_DROP,	"handler_drop",	"payload handler returned DROP")	\
	X(HANDLER_ERROR, "handler_error", "handler missing, failed or bad return") \
	X(HOST_OOB,	"host_oob",	"DMA outside the match entry's window") \
	X(NO_PEER,	"no_peer",	"put to an unknown peer")		\
	X(PUT_OVERFLOW,	"put_overflow",	"more device puts than one invocation can send") \
	X(PUT_FAILED,	"put_failed",	"device put could not be built")	\
	X(HGET_FAILED,	"hget_failed",	"reply to a handler get refused, too long, or its entry gone") \
	X(HOST_QUEUE_FULL, "host_queue_full", "event ring nearly full, or holding what its sources with unread events may: a message that would post an event refused") \
	X(ACK_LOST,	"ack_lost",	"ack requested, but the frame carried a device put") \
	X(NO_XSK,	"no_xsk",	"no AF_XDP socket on the receiving queue")	\
	X(TRUNCATED,	"truncated",	"packets with bytes beyond the entry's window (not dropped)") \
	X(ME_GONE,	"me_gone",	"the message's match entry was unlinked or replaced") \
	X(BAD_PEER,	"bad_peer",	"source address is not the peer table's for the claimed rank") \
	X(SRC_QUOTA,	"src_quota",	"the source rank has its share of the message table in flight") \
	X(BAD_KEY,	"bad_key",	"the packet does not carry the runtime's job key") \
	X(DUP_ANSWERED,	"dup_answered",	"duplicate of a reliable message, answered again") \
	X(BAD_CSUM,	"bad_csum",	"UDP checksum set and wrong: damaged on the way") \
	X(EV_QUOTA,	"ev_quota",	"the source rank has its share of the event ring unread (or no share: spin_src_ev full): refused, or its ack or timeout event not posted") \
	X(EV_LOST,	"ev_lost",	"an event not posted: the event ring is full (nobody reads it)") \
	X(BAD_AUTH,	"bad_auth",	"the packet's auth_tag is not the runtime's auth key's") \
	X(GET_CAP,	"get_cap",	"a get for more than the runtime answers one request with (get_max): refused") \
	X(XSK_FULL,	"xsk_full",	"the AF_XDP socket's receive ring has no room (receive credits): refused, reliable ones with \"not now\"") \
	X(SRC_TABLE_FULL, "src_table_full", "no duplicate window for a new source: SPIN_DEDUP_SOURCES in use") \
	X(XSK_STALLED,	"xsk_stalled",	"retransmission of a message that waits in the ring of a process taking nothing: answered \"not now\"")

enum spin_drop {
#define SPIN_X_ENUM(e, n, d) SPIN_DROP_##e,
	SPIN_DROP_REASONS(SPIN_X_ENUM)
#undef SPIN_X_ENUM
	SPIN_DROP_MAX,
};

/* Per-CPU statistics (spin_stats, one element). */
struct spin_stats {
	__u64	rx_packets;	/* sPIN packets seen */
	__u64	rx_bytes;	/* their payload bytes */
	__u64	passed;		/* non-sPIN frames passed to the stack */
	__u64	msgs;		/* messages matched */
	__u64	msgs_completed;
	__u64	deposited_bytes;	/* default deposit into host memory */
	__u64	dma_to_host_bytes;
	__u64	dma_from_host_bytes;
	__u64	tx_device;	/* puts from device sent (XDP_TX/redirect) */
	__u64	tx_host_inline;	/* puts from host sent from the NIC */
	__u64	tx_host_queued;	/* puts from host handed to the host */
	__u64	to_xsk;		/* packets redirected to AF_XDP sockets */
	__u64	events;		/* completion events posted */
	__u64	acks_sent;	/* acknowledgements sent (target side) */
	__u64	acks_received;	/* acknowledgements received (initiator side) */
	__u64	replies_sent;	/* get replies sent by the runtime (target side) */
	__u64	replies_received; /* get replies received (initiator side) */
	__u64	nacks_sent;	/* negative acks/replies sent (target side) */
	__u64	pt_disabled;	/* portal table entries disabled by flow control */
	__u64	fanout;		/* invocations whose puts went out by fan-out */
	__u64	fanout_copies;	/* frames sent by the fan-out program (tx_device
				 * counts them too) */
	__u64	events_quiet;	/* completion events posted without waking the
				 * reader: its entry's wake threshold
				 * (spin_me.wake_at) was not reached */
	__u64	wakes_deferred;	/* wake-ups of the reader handed to the work
				 * item (SPIN_CFG_F_WAKE_DEFER) */
	__u64	sacks_sent;	/* selective acks sent (target side) */
	__u64	sacks_received;	/* selective acks handed to the AF_XDP socket */
	__u64	hgets_sent;	/* handler gets sent (PtlHandlerGetToHost) */
	__u64	hgets_done;	/* ... whose reply arrived whole */
	__u64	handler_calls[SPIN_H_MAX];
	__u64	drops[SPIN_DROP_MAX];
};

/* spin_cfg.flags */
#define SPIN_CFG_F_GENERIC	0x1	/* attached in XDP generic (skb) mode */
#define SPIN_CFG_F_NO_DEDUP	0x2	/* no duplicate window for whole messages */
#define SPIN_CFG_F_FANOUT	0x8	/* the fan-out program (spin_tc) is attached
					 * at TC ingress: several device puts per
					 * invocation can be sent */
#define SPIN_CFG_F_RB_QUIET	0x4	/* the event reader busy-polls: submit events
					 * without a wake-up (set and cleared by it) */
#define SPIN_CFG_F_WAKE_DEFER	0x10	/* the packet path does not wake the event
					 * reader itself: a work item does, after the
					 * CPU's packet work (spin_waker; attach
					 * default, off with wake-direct) */
#define SPIN_CFG_F_OPEN		0x20	/* accept packets from any address: the
					 * source is not checked against the peer
					 * table (attach option open; insecure) */

/*
 * AF_XDP receive credits of one socket (docs/reliable.md, "Flow control"):
 * the runtime hands it at most room frames beyond those its process took
 * back from its receive ring, so that ring never overflows; a frame beyond
 * is refused, reliable ones with "not now".  Set by the process that binds
 * the socket (room 0: no check), sent counted by the runtime, taken by the
 * process.  Is the socket's process stalled (frames in its ring that it
 * does not take)?  Kept by the runtime: seen is taken when it last looked,
 * since_ns when taken last moved or the ring last went from empty to not
 * (bpf_ktime_get_ns); see SPIN_XSK_STALL_NS.  One cache line each: the
 * sockets' processes run on different CPUs.
 */
struct spin_xsk_cr {
	__u32	room;
	__u32	pad;
	__u64	sent;
	__u64	taken;
	__u64	seen;
	__u64	since_ns;
	__u64	pad2[3];
};

/* Configuration of a runtime instance (spin_cfg, one element, mmap-able). */
struct spin_cfg {
	__u32	ifindex;
	__u32	my_rank;
	__u32	my_pid;
	__u32	my_ip;		/* network order */
	__u8	my_mac[6];
	__be16	port;		/* UDP port, network order */
	__u32	host_pages;	/* size of spin_host in pages (multiple of 4) */
	__u32	flags;
	__u64	msg_timeout_ns;
	__u64	next_msg_id;	/* hosts: fetch-add, ids are its low 24 bits;
				 * the device uses (cpu + 1) << 24 | seq */
	__u64	gen;		/* bumped by the host on every table change */
	__u32	rb_lag;		/* set by the runtime after it posted an event
				 * quietly below a wake threshold: the reader
				 * is behind, so a wake-up must be forced (the
				 * ring wakes only a reader that caught up);
				 * cleared by the reader before it consumes */
	__u32	job_key;	/* 0: none; else packets must carry it (host
				 * order here, network order on the wire) */
	__u32	get_max;	/* bytes the runtime sends in answer to one get
				 * of an entry it serves (not SPIN_ME_XSK: their
				 * process answers), itself or through the host;
				 * a get of more is refused (get_cap); 0 or
				 * above SPIN_MAX_MSG: SPIN_MAX_MSG */
	__u32	pad_get;
	__u64	me_seq;		/* next match entry sequence number, all portals
				 * (host, under its lock): append order within
				 * a list, and an entry's incarnation (spin_msg
				 * .me_seq: a reused slot never repeats it) */
	/* The rank and pid of the Portals process in each slot (slot 0's
	 * are my_rank/my_pid again), written by the process when it
	 * takes the slot (spin_procs has who holds it): what the runtime
	 * sends for that process's entries carries them.  Here, not in
	 * spin_procs, because the paths that answer have no stack left
	 * for a map key. */
	__u32	proc_rank[SPIN_MAX_PROCS];
	__u32	proc_pid[SPIN_MAX_PROCS];
	/* AF_XDP receive credits of the socket on each queue below
	 * SPIN_MAX_PROCS (the queue of that slot's process; spin_xsk_cr) */
	struct spin_xsk_cr xsk_cr[SPIN_MAX_PROCS];
};

/* The job's auth key (spin_auth, one element; not mmap-able, not in
 * spin_cfg): on 0: packets carry no tag and none is checked. */
struct spin_auth {
	__u32	on;
	__u32	pad;
	__u64	k0, k1;		/* SipHash key: its bytes 0-7 and 8-15,
				 * little-endian (spin/auth.h) */
};

/* Portal table entry (spin_pt). */
#define SPIN_PT_ALLOCATED	0x1
#define SPIN_PT_ENABLED		0x2
#define SPIN_PT_FLOWCTRL	0x4	/* no match: disable (PTL_PT_FLOWCTRL) */
struct spin_pt {
	__u32	flags;
	__u32	n_me;		/* entries on it, both lists, any state but FREE */
	__u64	seq;		/* sequence number of its latest append + 1 */
	__u32	owner_pid;	/* OS pid of the process that owns it (SPIN_PT_OWNED),
				 * 0: none (spinctl; it stays until freed) */
	__u32	owner_start;	/* the owner's start time (low 32 bits of
				 * /proc/PID/stat field 22, clock ticks since
				 * boot), 0: unknown; see spin_owner_alive() */
	/* Matching (docs/design.md, "Matching"), kept by the host under its
	 * lock, read by the runtime: per list (enum spin_me_list), how many
	 * exact entries of each source kind (enum spin_mx_kind) are in
	 * spin_mx, and the wildcard entries' list in append order. */
	__u32	n_exact[2][4];
	__u32	n_wild[2];
	__u32	wild_head[2];	/* first wildcard entry, SPIN_ME_NIL: none */
	__u32	wild_tail[2];	/* last one */
};

/*
 * Exact match entries (ignore_bits 0) are found by hash: spin_mx maps
 * (portal, list, match_bits, source) to the FIFO of entries with that key
 * (head and tail; spin_me.next/prev link them in append order).  The
 * source part of the key says which of rank and pid the entry names; the
 * other is SPIN_RANK_ANY / SPIN_PID_ANY, so a message looks up at most
 * the four kinds below (only those the portal has entries of).  Entries
 * with ignore bits are on the portal's wildcard list (spin_pt.wild_*).
 */
enum spin_mx_kind {
	SPIN_MX_RANK_PID = 0,	/* rank and pid given */
	SPIN_MX_RANK = 1,	/* rank given, any pid */
	SPIN_MX_PID = 2,	/* any rank, pid given */
	SPIN_MX_ANY = 3,	/* any source */
	SPIN_MX_WILD = 4,	/* ignore bits: on the wildcard list, not hashed */
};
struct spin_mx_key {
	__u32	pt_list;	/* pt_index << 1 | list */
	__u32	rank;		/* a rank, or SPIN_RANK_ANY */
	__u32	pid;		/* a pid, or SPIN_PID_ANY */
	__u32	pad;		/* 0 */
	__u64	bits;		/* match_bits */
};
struct spin_mx {
	__u32	head;		/* first entry (oldest), in spin_me */
	__u32	tail;		/* last entry */
};

/* Match entry (spin_me, any free slot; see SPIN_MAX_HPU). */
enum spin_me_state {
	SPIN_ME_FREE	= 0,
	SPIN_ME_ACTIVE	= 1,
	SPIN_ME_CLAIMED	= 2,	/* use-once entry consumed, awaiting unlink */
	SPIN_ME_SETUP	= 3,	/* being written by the host */
};
enum spin_me_list {
	SPIN_LIST_PRIORITY = 0,
	SPIN_LIST_OVERFLOW = 1,
};
/* spin_me.options: the Portals 4 values of the corresponding PTL_ME_* */
#define SPIN_ME_OP_PUT		(1u << 2)
#define SPIN_ME_OP_GET		(1u << 3)
#define SPIN_ME_USE_ONCE	(1u << 4)
#define SPIN_ME_NO_TRUNCATE	(1u << 7)
#define SPIN_ME_EVENT_COMM_DISABLE (1u << 10)
#define SPIN_ME_EVENT_SUCCESS_DISABLE (1u << 12)
/* spin's own: the entry's packets go to the AF_XDP socket bound on the
 * receiving queue (spin_xsks) instead of being deposited; the owning
 * process reassembles them.  No handlers. */
#define SPIN_ME_XSK		(1u << 31)
/* spin's own: the runtime keeps spin_me.wake_count for the entry (only then
 * can a reader arm a wake threshold on it; the count is an atomic add per
 * completed message) ... */
#define SPIN_ME_WAKE_COUNT	(1u << 29)
/* ... in bytes (mlength), not messages */
#define SPIN_ME_WAKE_BYTES	(1u << 30)

struct spin_me {
	__u32	state;		/* enum spin_me_state; claimed with CAS */
	__u32	list;		/* enum spin_me_list */
	__u64	seq;		/* append order within the list */
	__u64	match_bits;
	__u64	ignore_bits;
	__u32	match_rank;	/* SPIN_RANK_ANY or a rank */
	__u32	match_pid;	/* SPIN_PID_ANY or a pid */
	__u32	options;	/* SPIN_ME_* */
	__u32	handler;	/* 1 + index into spin_handlers; 0: none */
	__u64	host_off;	/* window in spin_host: byte offset ... */
	__u64	host_len;	/* ... and length */
	__u64	hhost_off;	/* handler host memory (PTL_HANDLER_HOST_MEM) */
	__u64	hhost_len;
	__u64	user_ptr;
	__u32	owner_pid;	/* OS pid of the owning process (events) */
	__u32	hpu_len;	/* bytes of handler memory in use */
	__u32	hpu_size;	/* bytes of handler memory (SPIN_HPU_SIZE, or up to
				 * SPIN_HPU_BIG_SIZE in spin_hpu_big) */
	__u32	busy;	/* messages of more than one packet the runtime has
			 * matched to it and not finished (spin_msgs states
			 * with SPIN_MSGF_MATCHED; added when the first packet
			 * matches, taken when spin_msg_free removes the state,
			 * if the entry still has the state's seq): PtlMEUnlink
			 * returns PTL_IN_USE while it is above 0 (a signed
			 * look: a take racing with a reuse of the slot cannot
			 * make it look busy for ever).  0 at append. */
	/* counters: kept per CPU in spin_me_ct by the runtime (no atomics
	 * on the fast path); spin_me_get() fills these with the sums */
	__u64	ct_success;
	__u64	ct_failure;
	__u64	bytes;
	__u64	ct_puts;	/* puts its handlers sent with ct PTL_LOCAL_ME_CT */
	__u64	ct_gets;	/* gets of its handlers, ct PTL_LOCAL_ME_CT, whose
				 * reply arrived whole (PtlHandlerGetToHost) */
	/* Threshold wake-ups (spin_me_wake_arm()), entries appended with
	 * SPIN_ME_WAKE_COUNT: the runtime adds the units
	 * of every successful put/get event it posts for the entry (1, or
	 * mlength with SPIN_ME_WAKE_BYTES) to wake_count, atomically, and
	 * wakes the event reader only for the event whose add crosses
	 * wake_at; the others are posted quietly.  wake_at 0: every event
	 * wakes (the default).  Failures always wake. */
	__u64	wake_count;
	__u64	wake_at;
	/* matching structure (host-written, under its lock) */
	__u32	pt;		/* portal table index */
	__u32	link;		/* 1 + enum spin_mx_kind while on a list, 0: not.
				 * The runtime frees a consumed use-once entry
				 * (state FREE) without unlinking it: the host
				 * takes it off its list before reusing the slot */
	__u32	next;		/* next entry of its FIFO or wildcard list, */
	__u32	prev;		/* ... previous one; SPIN_ME_NIL: none.  Not
				 * cleared at unlink: a runtime walking the list
				 * may stand on it */
};

/* Per-CPU counters of a match entry (spin_me_ct, same index as spin_me). */
/* The `ct` of a handler put that counts it on the entry's puts counter
 * (PTL_LOCAL_ME_CT, spin/handler.h). */
#define SPIN_CT_LOCAL_ME	0xffffffffu
struct spin_me_ct {
	__u64	success;
	__u64	failure;
	__u64	bytes;
	__u64	puts;		/* handler puts sent with ct PTL_LOCAL_ME_CT */
	__u64	gets;		/* handler gets whose reply arrived whole, ct PTL_LOCAL_ME_CT */
};

/* Peer (spin_peers, indexed by rank). */
struct spin_peer {
	__u32	valid;
	__u32	ifindex;	/* egress interface; 0: the receiving one */
	__u32	ip;		/* network order */
	__be16	port;		/* network order */
	__u8	mac[6];
	__u32	pid;
	__u32	src_ip;		/* our address on the egress interface */
	__u8	src_mac[6];	/* ... and our MAC there */
	__u16	slot;		/* its Portals process's slot at its address:
				 * the high bits of pt_index sent to it */
};

/* A Portals process on this interface (spin_procs, by slot): who the
 * runtime speaks for when it answers or puts for that process's entries.
 * Slot 0's rank and pid are also spin_cfg.my_rank/my_pid. */
struct spin_proc {
	__u32	active;		/* 1 while a process holds the slot */
	__u32	rank;
	__u32	pid;		/* Portals pid */
	__u32	queue;		/* the receive queue its AF_XDP socket is bound to */
	__u32	owner_pid;	/* OS pid and start time (spin_owner_alive) */
	__u32	owner_start;
	__u64	win_hi;		/* end of the host window it allocated from
				 * (unused: every slot has its own window) */
};

/* Per-message state of multi-packet messages (spin_msgs, hash). */
struct spin_msg_key {
	__u32	src_rank;
	__u32	msg_id;
};
/* spin_dedup[rank] (hash by source rank, SPIN_DEDUP_SOURCES windows):
 * recently seen message ids of that source rank, slot
 * id % SPIN_DEDUP_SLOTS, and what became of each (for re-acknowledging a
 * retransmission): out[] is SPIN_DD_OUT(id, state, fail, list), valid
 * while its id bits match; len[] the manipulated length (DONE) or the
 * matched entry's index (XSK); for a GET the runtime answered, aux[] the
 * window offset its reply was read from and ref[] the entry
 * (SPIN_DD_REF: its index and the low bits of its seq), so a retransmitted
 * GET is answered by reading the entry again while it is still that entry. */
enum spin_dd_state {
	SPIN_DD_SEEN = 0,	/* arrived, not finished (or nothing recorded) */
	SPIN_DD_DONE = 1,	/* the runtime completed it (or refused it for good) */
	SPIN_DD_XSK = 2,	/* handed to the owning process's AF_XDP socket,
				 * which acknowledges and remembers it itself */
	SPIN_DD_FORGOT = 3,	/* refused "not now": the next copy is new.  The
				 * slot keeps the id, so that an older id's late
				 * copy still finds a newer one there (stale) */
};
#define SPIN_DD_OUT(id, state, fail, list) \
	(((__u32)(id) & 0xffff) << 16 | ((__u32)(list) & 0xf) << 12 | \
	 ((__u32)(fail) & 0xff) << 4 | ((__u32)(state) & 0xf))
#define SPIN_DD_REF(me, seq)	((__u32)(me) | (__u32)((seq) & 0x7fff) << 17)
#define SPIN_DD_REF_ME(r)	((r) & (SPIN_MAX_ME - 1))
#define SPIN_DD_REF_SEQ(r)	((r) >> 17)
_Static_assert(SPIN_MAX_ME == 1u << 17, "SPIN_DD_REF keeps 17 bits of the entry index");
#define SPIN_DD_OUT_ID(o)	((o) >> 16)
#define SPIN_DD_OUT_STATE(o)	((o) & 0xf)
#define SPIN_DD_OUT_FAIL(o)	(((o) >> 4) & 0xff)
#define SPIN_DD_OUT_LIST(o)	(((o) >> 12) & 0xf)
struct spin_dedup {
	__u32	used;		/* set by packets; the sweeper clears it ... */
	__u32	pad;
	__u64	idle_since;	/* ... and notes when it found it clear: a window
				 * idle for SPIN_DEDUP_IDLE_NS is freed */
	__u32	id[SPIN_DEDUP_SLOTS];
	__u32	out[SPIN_DEDUP_SLOTS];
	__u32	len[SPIN_DEDUP_SLOTS];
	__u32	aux[SPIN_DEDUP_SLOTS];
	__u32	ref[SPIN_DEDUP_SLOTS];
};
/* spin_src[rank]: message-table entries held by that source rank, and
 * the bitmap chunks (spin_msg_bits) of its messages.  (Its events in a
 * ring are counted in spin_src_ev, below.) */
struct spin_src {
	__u32	msgs;
	__u32	chunks;
};
enum spin_msg_status {
	SPIN_MSG_NEW = 0,	/* created; header handler not finished */
	SPIN_MSG_RUNNING,	/* header done: payload handlers may run */
	SPIN_MSG_DROP,		/* header handler dropped the message */
	SPIN_MSG_DONE,		/* completion ran; kept as a tombstone */
};
/* spin_msg.flags */
#define SPIN_MSGF_PROCEED	0x1	/* no payload handlers: default deposit */
#define SPIN_MSGF_NOMATCH	0x2	/* no entry matched: drop the rest */
#define SPIN_MSGF_MATCHED	0x4	/* me and me_seq name the matched entry */
#define SPIN_MSGF_ME_GONE	0x8	/* that entry went away: drop the rest */
/* the process slot of the matched entry (its handlers' spin_mstate:
 * spin_mstates[slot]), set with SPIN_MSGF_MATCHED */
#define SPIN_MSGF_SLOT_SHIFT	24
#define SPIN_MSGF_SLOT(s)	((__u32)((s) & (SPIN_MAX_PROCS - 1)) << SPIN_MSGF_SLOT_SHIFT)
#define SPIN_MSGF_SLOT_OF(f)	(((f) >> SPIN_MSGF_SLOT_SHIFT) & (SPIN_MAX_PROCS - 1))

struct spin_msg {
	__u32	status;		/* enum spin_msg_status */
	__u32	flags;
	__u32	me;		/* index into spin_me */
	__u32	msg_len;
	__u32	mlength;	/* bytes the entry accepts (after truncation) */
	__u32	bytes_seen;	/* payload bytes fully processed (atomic) */
	__u32	dropped;	/* dropped bytes (atomic) */
	__u16	seg;		/* seg_size of its packets (every packet must agree) */
	__u16	nchunks;	/* bitmap chunks in spin_msg_bits: packets 4096 on
				 * (chunk 1..nchunks; 0 for a tombstone) */
	__u64	start;		/* deposit offset: me.host_off + remote_off */
	__u64	me_seq;		/* spin_me.seq of the entry when it matched: the
				 * entry's incarnation (spin_cfg.me_seq only
				 * grows), re-checked by every later packet */
	__u64	deadline;	/* ns (CLOCK_MONOTONIC): expiry, or end of tombstone */
	__u64	gen;		/* this incarnation of the key (ns at creation); its
				 * chunks carry it */
	__u64	bitmap[SPIN_BITMAP_WORDS];	/* packets 0..4095 seen */
};

/*
 * Packets 4096 and on of a message: spin_msg_bits, a hash of bitmap chunks
 * keyed by (source rank, message id, chunk), chunk c holding packets
 * c * 4096 .. c * 4096 + 4095.  The packet that creates a message's state
 * inserts all of its chunks (so a message admitted never waits for bitmap
 * memory, and no later packet inserts one); whoever frees the message
 * state deletes them first (spin_msg_free); the sweeper deletes a chunk
 * whose message is gone (a backstop: nothing should leave one).
 */
struct spin_msg_chunk_key {
	__u32	src_rank;
	__u32	msg_id;
	__u32	chunk;		/* 1 .. SPIN_MSG_MAX_CHUNKS - 1 */
};
struct spin_msg_chunk {
	__u64	gen;		/* spin_msg.gen of the message it belongs to */
	__u64	bitmap[SPIN_BITMAP_WORDS];
};

/* The message-table sweeper (spin_gc, one element). */
struct spin_gc {
	struct bpf_timer timer;
	__u32	armed;		/* 1 once a program has started the timer */
	__u32	pad;
	__u64	runs;		/* sweeps done */
};

/* Per-CPU invocation context (spin_ctx, one element). */
enum spin_put_kind {
	SPIN_PUT_NONE = 0,
	SPIN_PUT_DEVICE,	/* PtlHandlerPutFromDevice */
	SPIN_PUT_HOST,		/* PtlHandlerPutFromHost */
	SPIN_PUT_ACK,		/* acknowledgement of a message with SPIN_F_ACK_REQ */
	SPIN_PUT_REPLY,		/* reply to a get, from the host window */
	SPIN_PUT_SACK,		/* selective ack (SPIN_OP_SACK), bitmap in scratch */
	SPIN_PUT_HGET,		/* PtlHandlerGetToHost: a GET (queued, sent by spin_tc)
				 * whose reply the runtime deposits (spin_hgets) */
};

/* A handler's get in flight (spin_hgets, an LRU hash: the oldest one whose
 * reply never came makes room), keyed by the target's rank and the GET's
 * message id: the REPLY carries both.  Only the runtime's programs and
 * handlers' finish stages hold the map (never a handler program: lib/
 * handler.c); the finish stage writes the record, stamped with its own
 * slot (spin_fin_slot), for a window address of that slot only. */
#define SPIN_HGETS		4096
#define SPIN_HGET_MAX		(64 * SPIN_MAX_SEG)	/* a reply of at most 64 packets */
struct spin_hget_key {
	__u32	rank;
	__u32	msg_id;
};
struct spin_hget {
	__u64	host_off;	/* window address (SPIN_WIN_ADDR) of the reply's byte 0 */
	__u64	me_seq;		/* the entry's seq when it asked (still the same
				 * entry when the reply comes?) */
	__u64	seen;		/* reply packets deposited (bit pkt_off / seg_size) */
	__u32	bytes;		/* reply bytes deposited */
	__u32	len;		/* bytes asked */
	__u32	me;		/* the entry whose handler asked */
	__u32	ct;		/* its ct (SPIN_CT_LOCAL_ME: count on the entry) */
	__u32	slot;		/* the process slot of the finish stage that wrote
				 * it: host_off is in that slot's window */
	__u32	pad;
};
enum spin_put_src {
	SPIN_SRC_PACKET = 0,	/* bytes of this frame at src_off */
	SPIN_SRC_SCRATCH,	/* spin_ctx.scratch */
	SPIN_SRC_HOST,		/* spin_host at byte src_off */
};
struct spin_put_req {
	__u32	kind;		/* enum spin_put_kind */
	__u32	len;
	__u32	src;		/* enum spin_put_src */
	__u32	target_rank;
	__u64	src_off;	/* packet offset / host window byte offset */
	__u64	match_bits;
	__u64	remote_off;
	__u64	hdr_data;
	__u64	user_ptr;
	__u32	ack_req;
	__u32	ct;
	/* SPIN_PUT_ACK: the acknowledged message; SPIN_PUT_REPLY: the get */
	__u32	ack_msg_id;	/* its msg_id (the ACK's/REPLY's msg_id) */
	__u32	ack_fail;	/* enum spin_fail (user_hdr[1]) */
	__u64	ack_mlength;	/* user_hdr[0]: ACK: the manipulated length;
				 * REPLY: the requested length */
	__u32	ack_list;	/* enum spin_me_list of the entry (user_hdr[2]) */
	__u32	pad;
};

struct spin_ctx {
	/* set by the runtime before the handler tail call: the packet's
	 * identity, phases .. tgt_rank (SPIN_CTX_ID_LEN bytes), which the
	 * finish stage takes from spin_tctx, never from here */
	__u32	phases;		/* SPIN_PH_* to run */
	__u32	me;		/* index into spin_me */
	__u32	pt;
	__u32	pay_off;	/* offset of the payload in the frame */
	__u32	pay_len;	/* payload bytes in this packet */
	__u32	pkt_off;
	__u32	msg_len;
	__u32	mlength;
	__u64	start;		/* deposit start in spin_host */
	struct spin_msg_key key;
	__u32	multi;		/* message has per-message state */
	__u32	tgt_rank;	/* the rank of the process the message is for
				 * (its slot's, spin_cfg.proc_rank; the header
				 * handler's target_id): handler programs do not
				 * hold spin_cfg */
	/* of the entry (spin_me), for the handler program, which holds no
	 * spin_me: its buffer and handler host memory in its slot's window
	 * (the DMA calls' offsets) and the handler memory it asked for */
	__u64	host_off, host_len;
	__u64	hhost_off, hhost_len;
	__u32	hpu_size;
	/* counted by the handler program, added to spin_stats by the finish
	 * stage (a handler program holds no spin_stats) */
	__u32	h_oob;		/* DMA out of bounds (host_oob) */
	__u32	h_put_failed;	/* put_failed */
	__u32	h_put_over;	/* put_overflow */
	__u64	h_dma_to;	/* dma_to_host_bytes */
	__u64	h_dma_from;	/* dma_from_host_bytes */
	/* set by the handler program (its outputs, each checked by the
	 * finish stage where it is used) */
	__u32	hdr_rc;		/* header handler return code */
	__u32	pay_rc;
	__u32	done;		/* this packet completed the message */
	__u32	dropped;	/* dropped_bytes passed to completion */
	__u32	n_puts;
	__u32	fail;		/* a handler failed (ptl_ni_fail_t) */
	__u32	drop_reason;	/* 1 + enum spin_drop, or 0 */
	__u32	msg_dropped;	/* header handler dropped the message */
	__u32	seq;		/* per-CPU sequence of device message ids */
	__u32	csum;		/* spin_udp_sum's running sum (one's complement) */
	__u32	ms_ready;	/* spin_msg_state(): a single-packet message's
				 * per-CPU region is zeroed for this invocation */
	__u64	put_addr;	/* address of the first device put's bytes
				 * (later puts must send the same bytes) */
	__u64	data_addr;	/* address of the frame (for put from device) */
	__u64	addr_tmp;
	struct spin_put_req put[1];	/* put 0 (the frame), or an answer */
	__u64	put0_uh[4];	/* put 0's user header words */
	__u64	uh_next[4];	/* spin_put_user_hdr(): for the next put */
	__u32	uh_set;
	__u32	ran;		/* 1 << enum spin_hslot: the handlers the handler
				 * program called (the finish stage counts them) */
	__u64	putq_head;	/* per-CPU ticket of the next queued put (spin_putq) */
	__u64	putq_t0;	/* this invocation's first ticket */
	struct spin_put_req pa;	/* the put call being made (spin/handler.h) */
	__u8	scratch[SPIN_MAX_SEG];	/* payload of a put from local memory */
	__u8	bounce[SPIN_MAX_DMA];	/* DMA to host from handler memory */
};
/*
 * The runtime's copy of what it told a handler program (spin_tctx, one per
 * CPU, a map no handler program holds): the packet's identity, spin_ctx's
 * first SPIN_CTX_ID_LEN bytes (phases .. tgt_rank: entry, portal, offsets,
 * lengths, message key, multi), copied as one block by the dispatch before
 * the tail call, and the CPU's message id sequence.  The finish stage puts
 * them back into spin_ctx before it uses any of them, so a handler that
 * rewrote them there cannot make its stage deposit, account, complete or
 * free another entry's or another slot's message (docs/security.md,
 * "Handlers").
 */
#define SPIN_CTX_ID_LEN		56
_Static_assert(__builtin_offsetof(struct spin_ctx, phases) == 0 &&
	       __builtin_offsetof(struct spin_ctx, tgt_rank) + 4 == SPIN_CTX_ID_LEN,
	       "spin_ctx's identity is its first SPIN_CTX_ID_LEN bytes");
struct spin_tctx {
	__u32	armed;		/* 1: a dispatch whose stage has not finished */
	__u32	acct;		/* the stage accounted it (before a resume) */
	__u64	id[SPIN_CTX_ID_LEN / 8];	/* spin_ctx phases .. tgt_rank */
	__u32	msg_dropped;	/* the header verdict's (the stage's) */
	__u32	done;		/* the stage's accounting */
	__u32	dropped;	/* ... */
	__u32	fail;		/* ... and deposit (kept across a resume) */
	__u32	seq;		/* spin_ctx.seq at the dispatch */
	__u32	pad;
};

#define SPIN_PH_HEADER		0x1
#define SPIN_PH_PAYLOAD		0x2
#define SPIN_PH_DEPOSIT		0x8	/* default deposit of this packet */
#define SPIN_PH_XSK		0x10	/* hand the packet to an AF_XDP socket */
/* between a handler program and the runtime's finish stage (spin_stages,
 * docs/design.md "One packet") */
#define SPIN_PH_DSTAGE		0x20	/* the stage deposits and accounts this packet */
#define SPIN_PH_HAS_CH		0x40	/* ... and the handler program has a completion
					 * handler to come back to */
#define SPIN_PH_RESUME		0x80	/* handler program entered again: run only the
					 * completion handler */

/*
 * Several puts per invocation (fan-out): put 0 is built in the frame as a
 * single put is; puts 1..n-1 are queued, each with its own bytes, in the
 * per-CPU ring spin_putq of the handler's process slot (each slot has its
 * own, spin_putqs; a handler program holds its slot's only), under
 * consecutive tickets of the CPU's sequence (spin_ctx.putq_head).  The
 * finish stage seals them: a random seal per fan-out, written into every
 * queued entry it keeps and into the metadata below, which it puts in
 * front of the frame before returning XDP_PASS.  spin_tc, at TC ingress
 * of the same interface, sends the frame as it is to put 0's egress
 * (bpf_clone_redirect), then, from the queue of the metadata's slot, every
 * queued put whose entry still carries its ticket and the frame's seal:
 * it takes the entry (clears its seal), rebuilds the frame for it
 * (bpf_skb_change_tail, bpf_skb_store_bytes) and sends a clone; see
 * docs/design.md, "Fan-out".  A ring entry overwritten before spin_tc
 * reached it (SPIN_PUTQ_SIZE later puts of the slot on the same CPU) is
 * put_failed.  Metadata a handler wrote itself (XDP_PASS with metadata of
 * its making) names another slot's queue in vain: it cannot read that
 * queue, so it has no seal of it, and no seal is ever 0.
 */
#define SPIN_FANOUT_MAGIC	0x5350464fu	/* "SPFO" */
struct spin_fanout_meta {
	__u32	magic;		/* SPIN_FANOUT_MAGIC */
	__u32	my_rank;	/* the sending runtime's rank (stale metadata
				 * of another node never matches) */
	__u32	ifindex0;	/* egress of put 0 (the frame as built); 0: put 0
				 * is not in the frame (failed, or for the host) */
	__u8	n;		/* queued puts (at most SPIN_MAX_PUTS - 1) */
	__u8	slot;		/* the process slot of the entry whose handler
				 * made the puts: every copy speaks for it, and
				 * its queue holds them */
	__u16	cpu;		/* the CPU whose spin_putq holds them */
	__u32	t0;		/* ticket of the first, its low 32 bits (an
				 * entry keeps the whole one: SPIN_PUTQ_TICKET) */
	__u32	id0;		/* message id sequence of the first (the CPU's
				 * id space, as put 0's; the others follow) */
	__u64	seal;		/* the finish stage's seal of the queued puts
				 * (never 0; 0: none are sent) */
} __attribute__((packed, aligned(4)));
/* Linux 6.1 takes at most 32 bytes of XDP metadata (bpf_xdp_adjust_meta:
 * EACCES beyond), later kernels more */
_Static_assert(sizeof(struct spin_fanout_meta) == 32, "fan-out metadata: 32 bytes at most");

/* A queued put (spin_putq).  r.src is SPIN_SRC_SCRATCH (the bytes are in
 * data[], copied when the handler put), SPIN_SRC_PACKET (the bytes of put
 * 0, from the frame: the fan-out of one packet, no copy) or SPIN_SRC_HOST
 * (a put from host longer than a packet, for the owning process). */
struct spin_putq_ent {
	__u64	ticket;		/* (cpu << 48) | sequence: whose entry it is now */
	__u64	seal;		/* the finish stage's (spin_fanout_meta.seal);
				 * 0 until it sealed the entry, and again once
				 * spin_tc took it (or the stage refused it) */
	struct spin_put_req r;
	__u64	user_hdr[4];
	__u32	me;
	__u32	pad;
	__u8	data[SPIN_MAX_SEG];
};
#define SPIN_PUTQ_TICKET(cpu, seq)	(((__u64)(cpu) << 48) | ((seq) & 0xffffffffffffull))

/* Events posted to the host (spin_events ring buffer). */
enum spin_event_kind {
	SPIN_EV_PUT = 1,	/* a message completed on a match entry */
	SPIN_EV_PUT_FROM_HOST,	/* a handler asks the host to send */
	SPIN_EV_AUTO_UNLINK,	/* a use-once entry was consumed */
	SPIN_EV_MSG_TIMEOUT,	/* an incomplete message expired */
	SPIN_EV_ACK,		/* an acknowledgement arrived (initiator side) */
	SPIN_EV_GET,		/* a get was answered from a match entry (target) */
	SPIN_EV_GET_FROM_HOST,	/* a reply longer than one packet: the owning
				 * process sends it (put.kind SPIN_PUT_REPLY) */
	SPIN_EV_PT_DISABLED,	/* flow control disabled a portal table entry */
	SPIN_EV_FRAME,		/* a frame for the process's AF_XDP path that
				 * arrived on another queue than its socket's
				 * (struct spin_frame_rec) */
};
enum spin_fail {
	SPIN_FAIL_OK = 0,
	SPIN_FAIL_DROPPED,	/* header handler dropped the message */
	SPIN_FAIL_TIMEOUT,
	SPIN_FAIL_HANDLER,	/* a handler returned an error */
	SPIN_FAIL_PT_DISABLED,	/* nack: portal table entry disabled (flow control) */
	SPIN_FAIL_NO_MATCH,	/* nack: no such portal index, or no entry matched */
	SPIN_FAIL_NO_TARGET,	/* nack: the owning process is gone (no AF_XDP socket) */
	SPIN_FAIL_OP_VIOLATION,	/* the entry does not allow the operation */
	SPIN_FAIL_QUEUE_FULL,	/* nack: the target's event ring is (nearly) full, or its
				 * message table, or the source's share of either */
};
struct spin_event {
	__u32	kind;		/* enum spin_event_kind */
	__u32	fail;		/* enum spin_fail */
	__u32	pt_index;
	__u32	me;
	__u64	match_bits;
	__u64	rlength;	/* requested length */
	__u64	mlength;	/* manipulated length */
	__u64	remote_off;
	__u64	start;		/* byte offset in spin_host where data went */
	__u64	hdr_data;
	__u64	user_ptr;	/* SPIN_EV_ACK: the ACK's user_hdr[3] (range ack) */
	__u32	src_rank;
	__u32	src_pid;
	__u32	msg_id;
	__u32	owner_pid;
	__u32	dropped_bytes;
	__u32	flow_control;
	__u32	list;		/* enum spin_me_list of the entry (ACK: the target's) */
	__u32	pad;
	__u64	timestamp_ns;
	struct spin_put_req put;	/* SPIN_EV_PUT_FROM_HOST, SPIN_EV_GET_FROM_HOST */
};

/* The event ring (spin_events, and each process slot's in spin_rings):
 * its size; the room admission keeps for the events of messages already
 * taken (completions, unlinks) and for acks and timeouts; one event's
 * bytes in it (with the record header); the room the sources' events
 * share (SPIN_EV_ROOM, the rest) and its events.  With n sources having
 * unread events in a ring (this one counted), one of them may have
 * SPIN_EV_ROOM_EVENTS / (n + 1) unread (its share: SPIN_SRC_EV_QUOTA, half
 * the room, when it is alone), and an event of any source is taken only
 * while the ring stays below n / (n + 1) of the room: the rest is kept for
 * sources that have none (maps.bpf.h, spin_src_ev_admit). */
#define SPIN_EVENTS_SIZE	(1 << 20)
#define SPIN_EVENTS_RESERVE	(64 << 10)
#define SPIN_EV_REC_SIZE	((((__u32)sizeof(struct spin_event) + 7) & ~7u) + 8)
#define SPIN_EV_ROOM		(SPIN_EVENTS_SIZE - SPIN_EVENTS_RESERVE)
#define SPIN_EV_ROOM_EVENTS	(SPIN_EV_ROOM / SPIN_EV_REC_SIZE)
#define SPIN_SRC_EV_QUOTA	(SPIN_EV_ROOM_EVENTS / 2)

/* The counts of a source's events in a ring: spin_src_ev, a hash by
 * SPIN_SRC_EV_KEY(rank, slot) (slot 0's ring is spin_events), made by the
 * source's first event in that ring (or the admission before it) and
 * freed by the message-table sweeper once the counts are back at 0 (every
 * event of the source read); spin_src_ev_n[slot] counts a slot's pairs:
 * the n of the share.  The events posted for the source that the reader
 * may not have consumed yet are counted in two generations: ev_new counts
 * events posted since the producer position ev_mark, ev_old those posted
 * before it; once the reader's position passes ev_mark, every event of
 * ev_old was read: the runtime moves ev_new to ev_old and starts a new
 * generation at the producer position.  ev_old + ev_new is an upper bound
 * of the source's unread events.  A process that takes a slot makes a new
 * ring, whose positions start again at 0: a mark beyond its producer
 * position is an old ring's, and the counts start again.  Room for 4096
 * sources with unread events in every ring; a source that finds the map
 * full has no share: its messages that would post an event are refused
 * "not now" (ev_quota) until the sweeper frees pairs whose events were read. */
struct spin_src_ev {
	__u32	ev_old;
	__u32	ev_new;
	__u64	ev_mark;
};
#define SPIN_SRC_EV_PAIRS	(SPIN_DEDUP_SOURCES * SPIN_MAX_PROCS)	/* 32,768 */
#define SPIN_SRC_EV_KEY(rank, slot)	((__u32)(rank) << 3 | ((__u32)(slot) & (SPIN_MAX_PROCS - 1)))
_Static_assert(SPIN_MAX_PROCS == 8 && SPIN_MAX_PEERS <= (1u << 29), "SPIN_SRC_EV_KEY: 3 bits of slot");

/*
 * Shipped handlers (docs/shipping.md): a process sends a handler object to
 * a peer's Portals process, which verifies, caches and installs it.  All
 * of it travels as ordinary reliable puts on portal index SPIN_SHIP_PT of
 * the matching NI, reserved by the library of a process that ships or
 * accepts code.  Match bits: SPIN_SHIP_TAG in the top 16 bits, a kind in
 * the next 8, then per kind:
 *   REQ    requests to the target's library (its control entries)
 *   REPLY  its answers, at remote offset = the target's rank * sizeof(reply)
 *   ENTRY  an installed handler: sender rank (16 bits) | entry id (24 bits)
 *   IFUNC  a cached program by hash: the hash's first 5 bytes (40 bits)
 * Every field is big-endian (network order).
 */
#define SPIN_SHIP_PT		31	/* matching NI's portal index */
#define SPIN_SHIP_TAG		0x5348ull	/* "SH" */
#define SPIN_SHIP_K_REQ		1
#define SPIN_SHIP_K_REPLY	2
#define SPIN_SHIP_K_ENTRY	3
#define SPIN_SHIP_K_IFUNC	4
#define SPIN_SHIP_K_LEASE	5	/* a sender renews its lease (no payload) */
#define SPIN_SHIP_BITS(kind, low)	((SPIN_SHIP_TAG << 48) | ((__u64)(kind) << 40) | \
					 ((__u64)(low) & 0xffffffffffull))
#define SPIN_SHIP_ENTRY_MAX	0xffffffu	/* entry ids: 24 bits */
#define SPIN_SHIP_MAGIC		0x5350534eu	/* "SPSN" */
#define SPIN_SHIP_VERSION	2
#define SPIN_SHIP_F_HASH	0x1	/* QUERY: the cached program `hash` (its ifunc entry) */
#define SPIN_SHIP_F_KEEP	0x2	/* SHIP: the entry outlives the sender (no lease) */

enum spin_ship_op {
	SPIN_SHIP_OP_SHIP = 1,		/* load (or find cached), install on entry_id */
	SPIN_SHIP_OP_UNSHIP,		/* remove entry_id */
	SPIN_SHIP_OP_QUERY,		/* report entry_id (invocations, handler memory) */
	SPIN_SHIP_OP_UNSHIP_ALL,	/* remove everything this rank shipped (its job ends) */
};

/* status of a reply */
enum spin_ship_status {
	SPIN_SHIP_OK = 0,
	SPIN_SHIP_E_MALFORMED,		/* bad request or object (reason says what) */
	SPIN_SHIP_E_DENIED,		/* policy: rank, helper or map not allowed */
	SPIN_SHIP_E_LIMIT,		/* programs, instructions, bytes, entries */
	SPIN_SHIP_E_VERIFIER,		/* the kernel's verifier rejected it */
	SPIN_SHIP_E_NOENT,		/* no such entry (unship, query) */
	SPIN_SHIP_E_FAIL,		/* anything else at the target (reason) */
	SPIN_SHIP_E_UNDELIVERED,	/* sender side: no answer, or not accepted */
};

struct spin_ship_req {
	__u32	magic;		/* SPIN_SHIP_MAGIC */
	__u8	version;	/* SPIN_SHIP_VERSION */
	__u8	op;		/* enum spin_ship_op */
	__u16	flags;
	__u32	entry_id;	/* <= SPIN_SHIP_ENTRY_MAX */
	__u32	seq;		/* echoed in the reply */
	__u32	host_len;	/* host-window bytes for the entry (handler host memory) */
	__u32	hpu_len;	/* handler memory, <= SPIN_HPU_SIZE */
	__u32	obj_len;	/* bytes of the object after this header */
	__u32	pad;
	__u8	hash[32];	/* SHA-256 of the object */
};

#define SPIN_SHIP_REASON	1024	/* the reply stays one packet (SPIN_MAX_SEG) */
struct spin_ship_reply {
	__u32	magic;
	__u8	version;
	__u8	op;
	__u8	status;		/* enum spin_ship_status */
	__u8	placement;	/* 1: native XDP, 2: generic XDP */
	__u32	entry_id;
	__u32	seq;
	__u8	cache_hit;	/* the program was loaded already */
	__u8	pad[3];
	__u32	lease_ms;	/* the sender's entries go this long after its
				 * last request or lease put (0: never) */
	__u32	insns;		/* instructions the kernel holds (xlated) */
	__u32	programs;	/* shipped programs loaded at the target now */
	__u32	handlers;	/* handler programs on the target's runtime now */
	__u64	cache_hits;	/* the target's counters since it started */
	__u64	loads;
	__u64	invocations;	/* QUERY: messages the entry completed */
	__u8	hash[32];
	__u8	hpu[64];	/* QUERY: the entry's handler memory, first bytes */
	char	reason[SPIN_SHIP_REASON];	/* NUL-terminated */
};
_Static_assert(sizeof(struct spin_ship_reply) <= SPIN_MAX_SEG, "a ship reply is one packet");

/* A frame handed to a process through its ring (SPIN_EV_FRAME): what its
 * AF_XDP socket would have received.  Answers may be 192 bytes longer
 * than a full packet (SACKs), hence the room. */
#define SPIN_FRAME_REC_MAX	2040
struct spin_frame_rec {
	__u32	kind;		/* SPIN_EV_FRAME */
	__u32	len;		/* bytes of frame[] used */
	__u8	frame[SPIN_FRAME_REC_MAX];
};

/* Names of pinned objects below the interface's bpffs directory. */
#define SPIN_PIN_ROOT		"/sys/fs/bpf/spin"

#endif /* SPIN_WIRE_H */
