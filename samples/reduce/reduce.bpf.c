// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reduce/accumulate (sPIN paper, use case "reduce"): P-1 senders put a
 * vector of int64 to the root; the root's payload handler adds every element
 * of every packet into an accumulator in handler memory with the handler
 * API's atomic fetch-and-add (PtlHandlerFAdd; the sum stays out of the
 * host's sight until it is complete).  The
 * completion handler counts contributions; the one that completes the last
 * of `expected` contributions DMAs the sum into the entry's host buffer,
 * clears the accumulator for the next round and then DMAs the round number
 * in front of it: that word is how the host learns that the full sum is
 * there.
 *
 * One match entry holds up to REDUCE_MAX elements (handler memory is 4 KiB);
 * longer vectors are cut into chunks, one match entry (match bits = chunk
 * index) and one put per chunk.
 *
 * Host buffer of the entry:   [u64 round][s64 sum[nelem]]
 *
 * Built with REDUCE_DOUBLE (reduce_double.bpf.c) the elements are doubles
 * and the sum is MPI_SUM: IEEE-754 adds (spin/softfloat.h) made atomic by
 * a compare-and-swap loop; every completion also DMAs the number of
 * contributions added so far to REDUCE_PROGRESS_OFF of the buffer.
 */
#include <spin/handler.h>
#include "reduce.h"

__handler int reduce_header_handler(const ptl_header_t h, void *state) {
   reduce_state_t *s = state;
   /* a contribution of the wrong shape would corrupt the sum: drop it */
   if (h.offset != 0 || h.length != s->nelem * 8 || s->nelem > REDUCE_MAX) return DROP;
   return PROCESS_DATA;
}

__handler int reduce_payload_handler(const ptl_payload_t p, void *state) {
   reduce_state_t *s = state;
   __u32 first = p.offset / 8;   /* packets are cut at SPIN_MAX_SEG = 172 * 8 bytes */
   for (__u32 i = 0; i < REDUCE_PKT_ELEMS; i++) {
      __u64 *v = SPIN_PTR(p, i * 8, 8);
      __u32 j = first + i;
      if (!v) break;
      asm volatile("" : "+r"(j));   /* index, not a pointer the verifier cannot bound */
      if (j >= REDUCE_MAX) return FAIL;
#if defined(REDUCE_NONATOMIC)   /* the negative control of reduce_stress only */
      s->sum[j] += *v;
#elif defined(REDUCE_DOUBLE)      /* MPI_SUM of doubles: IEEE add, atomic */
      spin_f64_atomic_add((__u64 *)&s->sum[j], *v, NULL);
#else
      PtlHandlerFAdd((__u64 *)&s->sum[j], NULL, *v);
#endif
   }
   return SUCCESS;
}

__handler int reduce_completion_handler(int dropped_bytes, bool flow_control_triggered, void *state) {
   reduce_state_t *s = state;
   __u64 before, n = s->nelem;
   PtlHandlerFAdd(&s->arrived, &before, 1);
#ifdef REDUCE_DOUBLE
   /* contributions added so far, for a root that orders them */
   before++;
   PtlHandlerDMAToHostB(&before, REDUCE_PROGRESS_OFF, 8, PTL_ME_HOST_MEM);
   before--;
#endif
   if (before + 1 < s->expected) return SUCCESS;   /* more to come */
   /* the last contribution: every other one completed, so the sum is final */
   if (n > REDUCE_MAX) return FAIL;
   if (n) PtlHandlerDMAToHostB(s->sum, 8, n * 8, PTL_ME_HOST_MEM);
   for (__u32 i = 0; i < n && i < REDUCE_MAX; i++) {   /* only the used part is dirty */
      s->sum[i] = 0;
      asm volatile("" ::: "memory");                   /* a loop, not memset() */
   }
   s->arrived = 0;
   s->round++;
   PtlHandlerDMAToHostB(&s->round, 0, 8, PTL_ME_HOST_MEM);   /* tell the host */
   return SUCCESS;
}

SPIN_HANDLERS(reduce_header_handler, reduce_payload_handler, reduce_completion_handler);
