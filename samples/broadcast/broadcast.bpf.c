// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Broadcast by binomial tree with NIC-side forwarding (sPIN paper, SC17,
 * section 4: "the payload handler of each non-leaf node forwards every
 * packet to its children").
 *
 * Handler memory (set by the host): this node's rank, the number of ranks
 * and the root.  For every packet, the payload handler computes the
 * children of this node in the binomial tree rooted at `root` (relative
 * rank r = rank - root mod P; the children are r + 2^k for every 2^k below
 * the lowest set bit of r, larger subtrees first), puts the packet to each
 * of them from the device (up to log2 P puts of the same bytes: the
 * runtime's fan-out) at the same place in their buffer, and copies it into
 * this node's buffer.  The host only waits for its counter to reach the
 * message length.
 *
 * Completion notice: the packet whose bytes complete this node's copy of
 * the message (a byte counter in handler memory; the host sets the message
 * size) is also put to the root's "done" entry, so the root learns from the
 * NIC when the last rank has the whole message.  It is a put of the same
 * bytes, so it joins the packet's fan-out.
 */
#include <spin/handler.h>

#define BCAST_MAX_LOG 8		/* up to 256 ranks */

typedef struct {
	__u32 rank, size, root, pad;
	ptl_match_bits_t bits;		/* match bits of the forwarded puts */
	ptl_match_bits_t done_bits;	/* ... of the completion notice */
	__u64 msg_size;			/* set by the host */
	__u64 got;			/* bytes received (all messages) */
} bcast_info_t;

__handler int bcast_payload_handler(const ptl_payload_t p, void *state) {
   bcast_info_t *i = state;
   ptl_size_t off = spin_msg_offset() + p.offset;
   __u32 r = (i->rank + i->size - i->root) % i->size;
   __u32 m = r ? r & -r : 1u << BCAST_MAX_LOG;
   for (int k = 0; k < BCAST_MAX_LOG; k++) {
      m >>= 1;
      if (!m) break;
      if (r + m < i->size)
         PtlHandlerPutFromDevice(p.base, p.length, PTL_LOCAL_ME_CT, PTL_NO_ACK_REQ,
                                 (r + m + i->root) % i->size, i->bits, off, NULL, 0);
   }
   if (PtlHandlerDMAToHostB(p.base, off, p.length, PTL_ME_HOST_MEM)) return FAIL;
   __u64 before;
   PtlHandlerFAdd(&i->got, &before, p.length);
   if (i->msg_size && (before + p.length) / i->msg_size != before / i->msg_size)
      PtlHandlerPutFromDevice(p.base, p.length, 0, PTL_NO_ACK_REQ, i->root, i->done_bits, 0, NULL, i->rank);
   return SUCCESS;
}

SPIN_HANDLERS(NULL, bcast_payload_handler, NULL);
