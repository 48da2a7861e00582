/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The key-value store's layout, shared by the handlers (kvstore.bpf.c) and
 * the host program (kvstore.c).
 *
 * The table the handlers read is a direct-mapped cache of 2^bits slots of
 * KV_SLOT bytes in the host window (handler host memory of the GET entry).
 * A slot is a seqlock-protected record: the host makes seq odd, writes key,
 * version and value, then makes seq even again; a reader that sees an odd
 * seq, or a seq that changed while it copied, does not use the copy.
 *
 * Wire: every request and reply is one sPIN message on portal KV_PT.
 *   GET    match bits KV_OP_GET | key, no payload, hdr_data = client tag
 *   SET    match bits KV_OP_SET | key, payload = one struct kv_rec (key,
 *          version, value), remote offset = the client's staging slot,
 *          hdr_data = tag
 *   reply  match bits KV_OP_REPLY_DEV | key (answered by the handler) or
 *          KV_OP_REPLY_HOST | key (answered by the host process), hdr_data
 *          = the request's tag, payload = struct kv_rec (a SET's reply
 *          carries the record as stored)
 */
#ifndef KVSTORE_H
#define KVSTORE_H

#define KV_PT			0
#define KV_VAL_LEN		96		/* value bytes per key */
#define KV_SLOT			128		/* bytes per slot: power of two */
#define KV_KEY_MASK		((1ull << 56) - 1)
#define KV_OP_SHIFT		56
#define KV_OP_MASK		(0xffull << KV_OP_SHIFT)
#define KV_OP_GET		(1ull << KV_OP_SHIFT)
#define KV_OP_SET		(2ull << KV_OP_SHIFT)
#define KV_OP_REPLY_DEV		(3ull << KV_OP_SHIFT)
#define KV_OP_REPLY_HOST	(4ull << KV_OP_SHIFT)
#define KV_MAX_CPUS		64

/* One slot of the table, one SET payload, one reply payload. */
struct kv_rec {
	__u64 seq;		/* seqlock: odd while the host writes the slot */
	__u64 key;		/* 0: empty slot */
	__u64 version;		/* (sequence << 8) | writer rank; 0: initial value */
	__u64 vlen;		/* KV_VAL_LEN */
	__u8 value[KV_VAL_LEN];
};

/* Handler memory of the GET entry. */
struct kv_hpu {
	__u64 shift;			/* 64 - log2(slots) */
	__u64 slot_mask;		/* slots - 1 */
	__u64 hits, misses, retries;	/* statistics (PtlHandlerFAdd) */
	__u64 miss[KV_MAX_CPUS];	/* per CPU: this CPU's message fell through */
};

/* The slot a key lives in (Fibonacci hashing). */
static inline __u64 kv_slot_of(__u64 key, __u64 shift)
{
	return (key * 0x9E3779B97F4A7C15ull) >> shift;
}

#endif /* KVSTORE_H */
