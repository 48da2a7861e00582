/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Handler memory layout shared by test_handlers.bpf.c and test_unit.c. */
#ifndef SPIN_TEST_HANDLERS_H
#define SPIN_TEST_HANDLERS_H

#define T_HDR_DROP	0x001
#define T_HDR_PROCEED	0x002
#define T_HDR_FAIL	0x004
#define T_CAS		0x008
#define T_DMA		0x010
#define T_DMA_OOB	0x020
#define T_DMA_FROM	0x040
#define T_PUT_STATE	0x080
#define T_PUT_UNKNOWN	0x100
#define T_PUT_TWICE	0x200
#define T_PAY_DROP_ODD	0x400
#define T_DMA_HHOST	0x800
#define T_TRACK		0x1000	/* per-message order tracking */
#define T_PUT_BIG	0x2000	/* a device put longer than a packet */
#define T_PUT_FAN	0x4000	/* fan_n device puts of the packet to fan_rank[] */
#define T_PUT_FAN_OTHER	0x8000	/* ... then one of other bytes (refused) */

#define TEST_FAN_MAX	66	/* SPIN_MAX_PUTS + 1 puts, and one of other bytes */

struct test_state {
	__u64 mode;
	__u64 hdr_calls;
	__u64 pay_calls;
	__u64 cmpl_calls;
	__u64 order_violations;
	__u64 pay_bytes;
	__u64 first_byte_sum;
	__u64 cas_counter;
	__u64 dma_errors;
	__u64 dma_from_value;
	__u64 last_len;
	__u64 last_bits;
	__u64 last_src;
	__u64 last_hdr_data;
	__u64 last_user0;
	__s64 cmpl_dropped;
	__u8 put_src[16];
	/* T_TRACK, indexed by message id % 256 */
	__u8 hdr_seen[256];
	__u32 pay_count[256];
	/* T_PUT_FAN */
	__u32 fan_n;
	__u32 fan_rank[TEST_FAN_MAX];
	__s32 fan_rc[TEST_FAN_MAX];
	__u64 last_tgt;		/* the header's target_id.rank */
};

/* dma_handler.bpf.c: reads from the entry's host memory at off[0..2] into
 * three stack variables of 8, 24 and 4 bytes, writes them back together
 * (36 bytes) at out_off.  errors counts failed DMA calls. */
struct dma_state {
	__u64 off[3];
	__u64 out_off;
	__u64 calls;
	__u64 errors;
};

/* hapi_handler.bpf.c: the header handler carries out ops[0..n) in order
 * (a bpf_loop) and records each call's results. */
#define HAPI_CAS_B	1	/* PtlHandlerDMACASB(off, &a -> res, b, opts) */
#define HAPI_CAS_NB	2	/* ... NB, handle in h */
#define HAPI_FADD_B	3	/* PtlHandlerDMAFetchAddB(off, a, &res, type, opts) */
#define HAPI_FADD_NB	4	/* ... NB, handle in h */
#define HAPI_TO_NB	5	/* PtlHandlerDMAToHostNB(&a, off, 8, opts, &h) */
#define HAPI_FROM_NB	6	/* PtlHandlerDMAFromHostNB(off, &res, 8, opts, &h) */
#define HAPI_WAIT	7	/* test = DMATest(a), wait = DMAWait(a) */
#define HAPI_RMW	8	/* the 64-bit host word += a with a DMA from host and
				 * one to host: not atomic (the negative control) */
#define HAPI_MAX_OPS	12

struct hapi_op {
	__u32 kind;
	__u32 type;		/* ptl_datatype_t of FADD */
	__u32 opts;		/* PTL_ME_HOST_MEM / PTL_HANDLER_HOST_MEM */
	__u32 pad;
	__u64 off;
	__u64 a, b;
	/* results */
	__u64 res;
	__s64 rc;
	__u64 h;		/* the NB call's handle */
	__s64 test, wait;	/* DMATest(h), DMAWait(h) */
};

struct hapi_state {
	__u64 calls;
	__u32 n;
	__u32 pad;
	struct hapi_op ops[HAPI_MAX_OPS];
};

/* puts_handler.bpf.c: the header handler makes puts op[0..n) in order
 * and records each call's return value in rc[].  Put i has match bits
 * PUTS_MB + i, remote offset 16 * i, header data PUTS_HDR + i and user
 * header words (i, 0x1111 * i, ~i, the message id). */
#define PUTS_MAX	66
#define PUTS_DEV	1	/* PtlHandlerPutFromDevice(&buf[off], len, ...) */
#define PUTS_HOST	2	/* PtlHandlerPutFromHost(off, len, ...) */
#define PUTS_NULL	3	/* PtlHandlerPutFromDevice(NULL, len, ...) */
#define PUTS_PKT	4	/* PtlHandlerPutFromDevice(packet payload, its length, ...) */
#define PUTS_GET	5	/* PtlHandlerGetToHost(off, len, ...) */
#define PUTS_MB		0x2000
#define PUTS_HDR	3000
#define PUTS_BUF	1024

struct puts_op {
	__u16 kind;
	__u16 len;
	__u16 off;
	__u16 ct;		/* 1: PTL_LOCAL_ME_CT, 0: 0 */
	__u32 rank;
};

struct puts_state {
	__u32 n;
	__u32 calls;
	__s32 rc[PUTS_MAX];
	struct puts_op op[PUTS_MAX];
	__u8 buf[PUTS_BUF];
};

/* room_handler.bpf.c: scratch memory and per-message state.
 * ROOM_SCRATCH: the payload handler fills all of spin_scratch() with
 * room_word(i, seed) and copies it to host memory 0..16 KiB in four DMAs.
 * ROOM_MSG: the header handler records (length, msg id, user_hdr[0]) in
 * spin_msg_state() and in handler memory (shared, the control); payload
 * handlers add their bytes and packets to the per-message state; the
 * completion handler writes both records to host memory at
 * ROOM_REC_OFF + tag * 64 (per message) and ROOM_CTL_OFF + tag * 64
 * (handler memory). */
#define ROOM_SCRATCH	1
#define ROOM_MSG	2
#define ROOM_REC_OFF	16384
#define ROOM_CTL_OFF	(16384 + 1024)
#define room_word(i, seed)	((__u64)(i) * 0x9e3779b97f4a7c15ull ^ (seed))

struct room_state {
	__u64 mode;
	__u64 seed;
	__u64 calls;
	__u64 errors;
	/* ROOM_MSG: the header handler's fields, shared by all messages */
	__u64 len, id, tag;
};

struct room_rec {
	__u64 len, id, tag, bytes, pkts, pad[3];
};

/* big_handler.bpf.c (SPIN_HANDLER_MEM 64 KiB): the payload handler sums
 * w[] as the host initialised it into sum, then sets w[i] = i * 3 + the
 * packet's length, all of it. */
#define BIG_WORDS	(65536 / 8 - 2)
struct big_state {
	__u64 calls;
	__u64 sum;
	__u64 w[BIG_WORDS];
};

/* loop_words.bpf.c: sums of the payload's 8-byte words */
struct words_state {
	__u64 sum;		/* as integers */
	__u64 dsum;		/* as doubles (bit pattern), in packet order */
	__u64 words;
};

#endif
