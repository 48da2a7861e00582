/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Conditional read: the request encoding and the handler memory (the
 * predicate), shared by handler and host. */
#ifndef CONDREAD_H
#define CONDREAD_H

#define CR_REQ_BITS	0x11	/* requests match the server's entry */
#define CR_REPLY_BITS	0x22	/* replies match the client's entry */
#define CR_MAX_REPLY	SPIN_MAX_SEG	/* one packet: the runtime answers without the host */
#define CR_SLOTS	64	/* reply slots at the client, CR_SLOT bytes each */
#define CR_SLOT		2048

/* hdr_data of a request: length, version the client read, request id */
#define CR_HDR(len, ver, id)	(((__u64)(len) << 48) | ((__u64)((ver) & 0xffff) << 32) | (__u32)(id))
#define CR_LEN(h)		((__u32)((h) >> 48))
#define CR_VER(h)		((__u32)((h) >> 32) & 0xffff)
#define CR_ID(h)		((__u32)(h))

/* The predicate: [offset, offset + length) within [lo, hi) of the data
 * region, and the request's version at least min_version. */
typedef struct {
	__u64 lo, hi;
	__u64 min_version;
	__u64 answered, denied;	/* counts, for the host */
} condread_state_t;

#endif
