// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * RAID-5 parity server (sPIN paper, distributed RAID): XOR every delta a
 * data server puts into the parity block in host memory, and when the delta
 * is in, acknowledge to the client that wrote the data (8 bytes at the
 * stripe offset, the write's tag as header data).
 */
#include <spin/handler.h>
#include "raid.h"

__handler int raid_parity_header(const ptl_header_t h, void *state) {
   struct raid_parity_state *s = state;
   struct raid_cpu_slot *c = &s->cpu[bpf_get_smp_processor_id() % RAID_SLOTS];
   if (h.length > SPIN_MAX_SEG || h.length % 8) return DROP;   /* a delta is one packet */
   c->offset = h.offset;
   c->tag = h.hdr_data;
   c->length = h.length;
   c->source = h.source_id.rank;
   c->ok = 0;
   return PROCESS_DATA;
}

__handler int raid_parity_payload(const ptl_payload_t p, void *state) {
   struct raid_parity_state *s = state;
   struct raid_cpu_slot *cs = &s->cpu[bpf_get_smp_processor_id() % RAID_SLOTS];
   __u64 par[RAID_CHUNK / 8], off = cs->offset + p.offset;
#pragma clang loop unroll(disable)
   for (__u32 c = 0; c < SPIN_MAX_SEG && c < p.length; c += RAID_CHUNK) {
      __u32 n = p.length - c < RAID_CHUNK ? p.length - c : RAID_CHUNK;
      if (PtlHandlerDMAFromHostB(off + c, par, n, PTL_ME_HOST_MEM)) return FAIL;
#pragma clang loop unroll(disable)
      for (__u32 i = 0; i < RAID_CHUNK / 8 && i < n / 8; i++) {
         __u64 *d = SPIN_PTR(p, c + i * 8, 8);
         if (!d) return FAIL;
         par[i] ^= *d;
      }
      if (PtlHandlerDMAToHostB(par, off + c, n, PTL_ME_HOST_MEM)) return FAIL;
   }
   cs->ok = 1;
   return SUCCESS;
}

__handler int raid_parity_completion(int dropped_bytes, bool flow_control_triggered, void *state) {
   struct raid_parity_state *s = state;
   struct raid_cpu_slot *cs = &s->cpu[bpf_get_smp_processor_id() % RAID_SLOTS];
   struct raid_ack a = { .length = cs->length, .source = cs->source };
   if (!cs->ok || dropped_bytes) return FAIL;
   PtlHandlerPutFromDevice(&a, sizeof(a), 0, 0, RAID_TAG_RANK(cs->tag), s->ack_bits, cs->offset, NULL, cs->tag);
   return SUCCESS;
}

SPIN_HANDLERS(raid_parity_header, raid_parity_payload, raid_parity_completion);
