/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * RAID-5 parity update (sPIN paper, use case "distributed RAID"): what the
 * handlers (raid_data.bpf.c, raid_parity.bpf.c) and the host program
 * (raid.c) share.  Handler memory layouts and the wire conventions.
 *
 * Ranks: 0 is the client, 1..N the data servers, N+1 the parity server.
 * Every data server holds a region of S bytes; the parity server holds S
 * bytes with parity[x] = XOR over the data servers of data[x].  A write of
 * L bytes at offset o to data server d touches the stripe bytes [o, o+L).
 */
#ifndef RAID_H
#define RAID_H

#define RAID_PT		0	/* portal index of everything */
#define RAID_DATA_BITS	0x5a1du	/* client -> data server: new data */
#define RAID_PARITY_BITS 0x9a21u	/* data server -> parity: delta */
#define RAID_ACK_BITS	0xac4u	/* parity -> client: durable */

/* hdr_data of a write, of its deltas and of its acks: the client's rank in
 * the top 8 bits, the client's write sequence number below. */
#define RAID_TAG_RANK(t)	((__u32)((t) >> 56))
#define RAID_TAG_SEQ(t)		((t) & ((1ull << 56) - 1))
#define RAID_TAG(rank, seq)	(((__u64)(rank) << 56) | ((seq) & ((1ull << 56) - 1)))

#define RAID_CHUNK	256	/* bytes XORed per DMA (handler stack) */
#define RAID_SLOTS	64	/* messages in flight per data server; CPUs */

/*
 * Per-message state of a data server.  The payload handler does not see the
 * message header, and handler memory is one block per match entry shared by
 * all messages, so the header handler claims slot[msg_id % RAID_SLOTS] (CAS)
 * and records what the payload handlers need; the completion handler frees it.
 */
struct raid_msg_slot {
	__u64 id;		/* message id, 0 = free */
	__u64 offset;		/* remote offset of the write (stripe offset) */
	__u64 tag;		/* client rank | write sequence */
	__u64 pad;
};

struct raid_data_state {	/* handler memory of a data server's entry */
	__u32 parity_rank;	/* set by the host (PtlHPUWriteMem) */
	__u32 pad;
	__u64 parity_bits;
	struct raid_msg_slot slot[RAID_SLOTS];
};

/*
 * A delta is always one packet, so its header, payload and completion
 * handlers run in one invocation on one CPU: the parity server keeps the
 * header's fields in a per-CPU slot.
 */
struct raid_cpu_slot {
	__u64 offset;		/* parity offset of the delta */
	__u64 tag;
	__u32 length;
	__u32 source;		/* data server rank */
	__u32 ok;		/* payload handler applied the delta */
	__u32 pad;
};

struct raid_parity_state {	/* handler memory of the parity entry */
	__u64 ack_bits;		/* set by the host */
	__u64 pad;
	struct raid_cpu_slot cpu[RAID_SLOTS];
};

/* The 8-byte acknowledgement the parity server puts to the client at remote
 * offset = the delta's stripe offset. */
struct raid_ack {
	__u32 length;		/* delta bytes now in parity */
	__u32 source;		/* data server that sent the delta */
};

#endif
