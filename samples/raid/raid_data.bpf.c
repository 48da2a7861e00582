// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * RAID-5 data server (sPIN paper, distributed RAID): for every packet of a
 * client's write, read the old bytes from host memory, write the new ones,
 * and put old XOR new (the parity delta) to the parity server, from the
 * packet itself.  The host CPU is not involved.
 */
#include <spin/handler.h>
#include "raid.h"

__handler int raid_data_header(const ptl_header_t h, void *state) {
   struct raid_data_state *s = state;
   struct raid_msg_slot *m = &s->slot[h.msg_id % RAID_SLOTS];
   if (h.length % 8 || !PtlHandlerCAS(&m->id, 0, h.msg_id)) return DROP;
   m->offset = h.offset;
   m->tag = RAID_TAG(h.source_id.rank, h.hdr_data);
   return PROCESS_DATA;
}

__handler int raid_data_payload(const ptl_payload_t p, void *state) {
   struct raid_data_state *s = state;
   struct raid_msg_slot *m = &s->slot[spin_msg_id() % RAID_SLOTS];
   __u64 old[RAID_CHUNK / 8], off = m->offset + p.offset;
   if (m->id != spin_msg_id()) return FAIL;
#pragma clang loop unroll(disable)
   for (__u32 c = 0; c < SPIN_MAX_SEG && c < p.length; c += RAID_CHUNK) {
      __u32 n = p.length - c < RAID_CHUNK ? p.length - c : RAID_CHUNK;
      if (PtlHandlerDMAFromHostB(off + c, old, n, PTL_ME_HOST_MEM)) return FAIL;   /* old data */
      if (PtlHandlerDMAToHostB(p.base + c, off + c, n, PTL_ME_HOST_MEM)) return FAIL; /* new data */
#pragma clang loop unroll(disable)
      for (__u32 i = 0; i < RAID_CHUNK / 8 && i < n / 8; i++) {
         __u64 *d = SPIN_PTR(p, c + i * 8, 8);
         if (!d) return FAIL;
         *d ^= old[i];                                     /* delta, in place */
      }
   }
   PtlHandlerPutFromDevice(p.base, p.length, PTL_LOCAL_ME_CT, 0, s->parity_rank, s->parity_bits, off, NULL, m->tag);
   return SUCCESS;
}

__handler int raid_data_completion(int dropped_bytes, bool flow_control_triggered, void *state) {
   struct raid_data_state *s = state;
   s->slot[spin_msg_id() % RAID_SLOTS].id = 0;
   return SUCCESS;
}

SPIN_HANDLERS(raid_data_header, raid_data_payload, raid_data_completion);
