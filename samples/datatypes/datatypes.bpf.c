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
 * of the match entry's buffer.  A packet (at most 1376 bytes) covers up to
 * length / blocklen + 2 block pieces; each piece is one DMA.  The loop over
 * the pieces is a bpf_loop, so the verifier checks its body once whatever
 * the block length.
 */
#include <spin/handler.h>

typedef struct {
	__u64 blocklen;		/* bytes per block (> 0) */
	__u64 stride;		/* bytes from block start to block start */
} vector_t;

struct piece_ctx {
	ptl_payload_t p;
	const vector_t *v;
	__u64 done;		/* bytes of this packet scattered */
	__u64 block;		/* block index of the next piece */
	__u64 in_block;		/* offset of the next piece in its block */
	int err;
};

static long vector_piece(__u64 i, void *ctx)
{
	struct piece_ctx *c = ctx;
	__u64 len = c->p.length, done = c->done, n = c->v->blocklen - c->in_block;

	if (done >= len || len > SPIN_MAX_SEG)
		return 1;
	if (n > len - done)
		n = len - done;
	if (PtlHandlerDMAToHostB(c->p.base + done, c->block * c->v->stride + c->in_block, n,
				 PTL_ME_HOST_MEM)) {
		c->err = 1;
		return 1;
	}
	c->done = done + n;
	c->block++;
	c->in_block = 0;
	return 0;
}

__handler int vector_payload_handler(const ptl_payload_t p, void *state) {
	const vector_t *v = state;
	struct piece_ctx c = { .p = p, .v = v };

	if (!v->blocklen || v->stride < v->blocklen)
		return FAIL;
	c.block = p.offset / v->blocklen;
	c.in_block = p.offset % v->blocklen;
	bpf_loop(SPIN_MAX_SEG + 1, vector_piece, &c, 0);
	return c.err || c.done != p.length ? FAIL : SUCCESS;
}

SPIN_HANDLERS(NULL, vector_payload_handler, NULL);
