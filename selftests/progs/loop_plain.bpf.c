// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * samples/datatypes/datatypes.bpf.c with a C for loop where it has
 * spin_for: the verifier walks every iteration of a loop whose trip count
 * depends on the data and gives up, so this handler is rejected
 * (test_unit iteration_helper); the spin_for version verifies.
 */
#include <spin/handler.h>

typedef struct {
	__u64 blocklen;
	__u64 stride;
} vector_t;

__handler int plain_payload_handler(const ptl_payload_t p, void *state) {
	const vector_t *v = state;
	__u64 bl = v->blocklen, stride = v->stride, first, last;
	int i, n;

	if (!bl || stride < bl || !p.length || p.length > SPIN_MAX_SEG)
		return FAIL;
	first = p.offset / bl;
	last = (p.offset + p.length - 1) / bl;
	n = last - first + 1;
	if (n > SPIN_MAX_SEG)
		return FAIL;
	for (i = 0; i < n; i++) {
		__u64 b = first + i, lo = b * bl, hi = lo + bl;

		if (lo < p.offset)
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

SPIN_HANDLERS(NULL, plain_payload_handler, NULL);
