// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Key-value store GETs answered in the network (sPIN use case: a cache
 * served by the NIC from host memory, without waking the host).
 *
 * A GET is a zero-length put whose match bits carry the key.  The header
 * handler reads the key's slot of the host's table (handler host memory)
 * with a seqlock read: the slot's sequence number, the whole record, the
 * sequence number again.  If the slot holds the key and was stable, the
 * record goes straight back to the client (put from device).  Otherwise
 * (empty slot, another key in the slot, the host is writing it) the GET
 * falls through to the host: the completion handler reports the message as
 * not handled, which is the one completion the entry posts (it is appended
 * with events for successful messages disabled), and the host process
 * answers it from its full store.
 *
 * State: struct kv_hpu (kvstore.h) — the table geometry, counters, and
 * one "fell through" flag per CPU, written by the header handler and read
 * by the completion handler of the same one-packet message on the same
 * CPU (an XDP invocation is not preempted).
 */
#include <spin/handler.h>
#include "kvstore.h"

__handler int kv_get_header_handler(const ptl_header_t h, void *state) {
   struct kv_hpu *s = state;
   __u32 cpu = bpf_get_smp_processor_id() & (KV_MAX_CPUS - 1);
   __u64 key = h.match_bits & KV_KEY_MASK;
   __u64 off = (kv_slot_of(key, s->shift) & s->slot_mask) * KV_SLOT;
   struct kv_rec rec;
   __u64 seq, seq2;

   s->miss[cpu] = 1;
   if (PtlHandlerDMAFromHostB(off, &seq, sizeof(seq), PTL_HANDLER_HOST_MEM) || (seq & 1))
      goto fall_through;
   if (PtlHandlerDMAFromHostB(off, &rec, sizeof(rec), PTL_HANDLER_HOST_MEM))
      goto fall_through;
   if (PtlHandlerDMAFromHostB(off, &seq2, sizeof(seq2), PTL_HANDLER_HOST_MEM))
      goto fall_through;
   if (seq2 != seq || rec.seq != seq) {
      PtlHandlerFAdd(&s->retries, NULL, 1);   /* the host wrote it meanwhile */
      goto fall_through;
   }
   if (rec.key != key)
      goto fall_through;
   if (PtlHandlerPutFromDevice(&rec, sizeof(rec), 0, 0, h.source_id, KV_OP_REPLY_DEV | key, 0,
                               NULL, h.hdr_data))
      goto fall_through;
   s->miss[cpu] = 0;
   PtlHandlerFAdd(&s->hits, NULL, 1);
   return PROCEED;
fall_through:
   PtlHandlerFAdd(&s->misses, NULL, 1);
   return PROCEED;
}

__handler int kv_get_completion_handler(int dropped_bytes, bool flow_control_triggered, void *state) {
   struct kv_hpu *s = state;
   __u32 cpu = bpf_get_smp_processor_id() & (KV_MAX_CPUS - 1);

   /* FAIL: the host gets this message's completion event and answers it */
   return s->miss[cpu] ? FAIL : SUCCESS;
}

SPIN_HANDLERS(kv_get_header_handler, NULL, kv_get_completion_handler);
