/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libspin's AF_XDP packet path: one AF_XDP socket on a queue of the
 * interface the spin runtime is attached to.
 *
 *  - send: a whole message is cut into seg_size packets that are built
 *    (Ethernet/IPv4/UDP/sPIN) straight into UMEM frames and posted to the TX
 *    ring in batches; the kernel is kicked once per batch (sendto) only when
 *    it asks for it (XDP_RING_NEED_WAKEUP); completed frames are reclaimed
 *    from the completion ring.  No system call per packet.
 *  - receive: the runtime redirects every non-duplicate packet of a match
 *    entry with option SPIN_ME_XSK to the socket registered in its XSKMAP
 *    (spin_xsks) at the receiving queue; spin_xsk_recv() hands those packets
 *    to a callback, spin_xsk_recv_msg() reassembles whole messages.
 *
 * The socket works in zero-copy mode where the driver supports it and in
 * copy mode otherwise (veth supports copy mode only).  The UMEM is split in
 * two halves: receive frames (fill/RX rings) and transmit frames (TX and
 * completion rings).
 *
 * Threads: one thread may send while another receives on the same socket;
 * two concurrent senders (or receivers) need a lock or a socket each (on
 * different queues).  Errors: negative SPIN_E* codes, spin_errmsg() holds
 * one line.  Details and numbers: docs/xsk.md.
 */
#ifndef SPIN_XSK_H
#define SPIN_XSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <spin/spin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPIN_XSK_FRAME_SIZE	2048	/* UMEM frame (chunk) size */
#define SPIN_XSK_DEF_FRAMES	4096	/* 8 MiB of UMEM */

struct spin_xsk;

struct spin_xsk_opts {
	uint32_t queue;		/* queue of the runtime's interface */
	uint32_t frames;	/* UMEM frames, power of 2, 64..65536; 0: 4096 */
	bool zero_copy;		/* try zero-copy first, fall back to copy mode */
};

/*
 * Open an AF_XDP socket on rt's interface and queue o->queue (o may be NULL:
 * queue 0, defaults), bind it and register it in the runtime's spin_xsks map
 * at key = queue.  Fails with -SPIN_ENOENT when the runtime's XDP program is
 * not the one attached to the interface, -SPIN_EEXIST when another socket
 * owns the queue.  rt must stay open as long as the socket.
 */
int spin_xsk_open(struct spin_rt *rt, const struct spin_xsk_opts *o, struct spin_xsk **out);
/* Remove the spin_xsks entry (if it is still ours), close, free. */
void spin_xsk_close(struct spin_xsk *x);
/* The socket (for poll(): POLLIN when packets wait). */
int spin_xsk_fd(struct spin_xsk *x);
/* An eventfd that is readable while packets sent to this process itself
 * wait (poll it next to spin_xsk_fd()).  A message whose peer is this
 * socket's own address and port does not go on the wire: every frame is
 * run through the runtime's XDP program (BPF_PROG_RUN), and what the
 * runtime hands to the socket is queued for spin_xsk_recv(); docs/xsk.md. */
int spin_xsk_lo_fd(struct spin_xsk *x);

/*
 * Send a message of len bytes to rank dst_rank (spin_peers: MAC, IP and
 * port; the peer must be on the runtime's interface).  Source addresses and
 * port are the runtime's (spin_cfg); src_rank/src_pid are the runtime's rank
 * and pid (a->src_rank, a->src_pid and a->dst_rank are ignored).  a->msg_id
 * 0 allocates one from the node's counter (spin_cfg.next_msg_id), like puts
 * from host.  seg_size 0 means SPIN_MAX_SEG; larger than that is an error.
 * order[] (NULL: in order) is a packet permutation as in spin_sock_send().
 * Returns once every packet was handed to the kernel (the TX ring drained),
 * so buf may be reused; blocks while the TX ring or UMEM is full, up to one
 * second without progress (-SPIN_EIO).  The message id used is written back
 * to *msg_id when msg_id is not NULL.
 */
int spin_xsk_send(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		  const void *buf, uint32_t len, const uint32_t *order, uint32_t *msg_id);

/*
 * Many small messages: spin_xsk_post() builds a message like
 * spin_xsk_send() (buf may be reused on return) but only queues its packets
 * on the TX ring; spin_xsk_flush() hands everything queued to the kernel
 * and returns when the ring is drained.  One system call per batch instead
 * of one per message (copy mode needs a sendto() for every kick).  A post
 * that finds the ring or UMEM full flushes what is queued itself.
 */
int spin_xsk_post(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		  const void *buf, uint32_t len, uint32_t *msg_id);
int spin_xsk_flush(struct spin_xsk *x);

/* Whether the RX ring holds packets not yet taken by spin_xsk_recv*(): a
 * hint, safe to call from another thread without the receiver's lock (for
 * busy-polling that does not take a lock until there is work). */
bool spin_xsk_rx_pending(const struct spin_xsk *x);
/* Frames the RX ring holds. */
uint32_t spin_xsk_rx_frames(const struct spin_xsk *x);

/* Send a Portals get (one header-only SPIN_OP_GET packet asking for
 * `length` bytes; a->op, seg_size ignored) like spin_xsk_send(). */
int spin_xsk_send_get(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		      uint32_t length, uint32_t *msg_id);
/* A reliable get sent again (wire.h, "re-get"): a's msg_id and SPIN_F_REL,
 * and nbytes (a multiple of 8, at most SPIN_MAX_SEG) of the reply's packet
 * bitmap from word user_hdr[2] on, so that the target sends only the
 * packets it names missing. */
int spin_xsk_send_reget(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
			uint32_t length, const uint64_t *words, uint32_t nbytes);

/*
 * Packet callback of spin_xsk_recv(): h is the wire header as received
 * (network byte order, validated by spin_hdr_parse()), payload its len
 * bytes.  Both point into the UMEM and are valid only during the call.
 * A non-zero return stops the batch after this packet.
 */
typedef int (*spin_xsk_pkt_fn)(void *ctx, const struct spin_hdr *h, const void *payload,
			       uint32_t len);

/*
 * Wait up to timeout_ms (-1: forever, 0: don't wait) for packets, then hand
 * every valid sPIN packet waiting in the RX ring to fn (frames that are not
 * IPv4/UDP/sPIN to the runtime's port are counted in rx_invalid and
 * skipped), and give the frames back to the fill ring.  Returns the number
 * of packets delivered (0 on timeout) or a negative error.
 */
int spin_xsk_recv(struct spin_xsk *x, spin_xsk_pkt_fn fn, void *ctx, int timeout_ms);

/*
 * Receive one whole message into buf (packets in any order, interleaved
 * with other messages; up to 16 messages are reassembled at a time, as in
 * spin_sock_recv_msg()).  Fills *h with the first packet's header (pkt_off
 * 0).  Returns the message length, -SPIN_ETIMEDOUT, -SPIN_ENOSPC (message
 * larger than cap: it is swallowed) or another negative error.  Do not mix
 * with spin_xsk_recv() while messages are partly received.
 */
int spin_xsk_recv_msg(struct spin_xsk *x, struct spin_hdr *h, void *buf, size_t cap,
		      int timeout_ms);

struct spin_xsk_stats {
	bool zero_copy;		/* bound in zero-copy mode */
	uint32_t queue;
	uint64_t tx_packets, tx_bytes;	/* frames handed to the kernel, frame bytes */
	uint64_t tx_msgs;
	uint64_t tx_kicks;	/* sendto() wake-ups */
	uint64_t tx_waits;	/* poll() waits for TX ring / UMEM space */
	uint64_t rx_packets, rx_bytes;	/* delivered sPIN packets, payload bytes */
	uint64_t rx_invalid;	/* frames that were not sPIN */
	uint64_t rx_bad_auth;	/* answers (ACK, REPLY, SACK) whose auth_tag is
				 * not the runtime's key's: dropped */
	uint64_t rx_msgs;	/* messages completed by spin_xsk_recv_msg */
	uint64_t rx_stale;	/* partial messages given up (packets lost) */
	/* receive credits (spin_cfg.xsk_room): frames the runtime counted as
	 * handed over that the ring never held, found when it was empty
	 * (dropped on the way; or still on their way then, at most a few) */
	uint64_t credits_lost;
	/* the kernel's counters (XDP_STATISTICS) */
	uint64_t k_rx_dropped, k_rx_invalid_descs, k_tx_invalid_descs;
	uint64_t k_rx_ring_full, k_rx_fill_ring_empty, k_tx_ring_empty;
	/* sends to self */
	uint64_t lo_packets;	/* frames sent to this process itself */
	uint64_t lo_runs;	/* runtime passes over them (and its answers) */
	uint64_t lo_dropped;	/* dropped by the runtime, or the queue full */
};
int spin_xsk_stats(struct spin_xsk *x, struct spin_xsk_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* SPIN_XSK_H */
