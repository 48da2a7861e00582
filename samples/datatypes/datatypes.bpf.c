// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MPI vector datatype receive from the sPIN paper (Hoefler et al., SC17,
 * section 4.3, "strided receive"): the sender puts a contiguous message,
 * the payload handler scatters each packet into the strided layout in
 * host memory (block length and stride in handler memory, written by the
 * host with PtlHPUWriteMem).  Every packet is handled on its own, so the
 * packets may arrive in any order.
 *
 * Packed byte x of the message goes to x / blocklen * stride + x % blocklen
 * of the match entry's buffer.  A packet (at most SPIN_MAX_SEG bytes) covers the
 * blocks first..last; the part of block first + i that lies in the packet
 * is piece i, one DMA.  The loop over the pieces is a plain loop with
 * spin_for (spin/handler.h), which verifies whatever the block length: the
 * verifier checks its body once, and everything in it is derived from i.
 */
#include <spin/handler.h>

typedef struct {
	__u64 blocklen;		/* bytes per block (> 0) */
	__u64 stride;		/* bytes from block start to block start */
} vector_t;

__handler int vector_payload_handler(const ptl_payload_t p, void *state) {
	const vector_t *v = state;
	__u64 bl = v->blocklen, stride = v->stride, first, last;
	int i;

	if (!bl || stride < bl || !p.length || p.length > SPIN_MAX_SEG)
		return FAIL;
	first = p.offset / bl;				/* block of the packet's first byte */
	last = (p.offset + p.length - 1) / bl;		/* ... and of its last */
	spin_for(i, 0, (int)(last - first + 1)) {	/* at most SPIN_MAX_SEG pieces */
		__u64 b = first + i, lo = b * bl, hi = lo + bl;

		if (lo < p.offset)			/* the block's bytes in this packet */
			lo = p.offset;
		if (hi > p.offset + p.length)
			hi = p.offset + p.length;
		if (lo - p.offset >= SPIN_MAX_SEG || hi <= lo ||
		    PtlHandlerDMAToHostB(p.base + (lo - p.offset), b * stride + lo % bl, hi - lo,
					 PTL_ME_HOST_MEM))
			return FAIL;
	}
	return SUCCESS;
}

SPIN_HANDLERS(NULL, vector_payload_handler, NULL);
