// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Conditional read (sPIN paper, use case "conditional read"): a request is
 * a small put whose header says which bytes of the server's data region it
 * wants (remote offset; length, version and id in hdr_data).  The header
 * handler checks the predicate in handler memory (an allowed range and a
 * minimum version, set by the host with PtlHPUWriteMem / PtlMEWriteHPU) and
 * either answers with the requested bytes straight from host memory
 * (PtlHandlerPutFromHost to the requester's reply entry) or drops the
 * request: the host sees neither.  The payload handler makes sure a request
 * never writes into the data region.
 */
#include <spin/handler.h>
#include "condread.h"

__handler int condread_header_handler(const ptl_header_t h, void *state) {
   condread_state_t *s = state;
   __u64 off = h.offset, len = CR_LEN(h.hdr_data), id = CR_ID(h.hdr_data);
   if (len == 0 || len > CR_MAX_REPLY || off < s->lo || off > s->hi || len > s->hi - off ||
       CR_VER(h.hdr_data) < s->min_version) {
      PtlHandlerFAdd(&s->denied, NULL, 1);
      return DROP;
   }
   if (PtlHandlerPutFromHost(off, len, 0, PTL_NO_ACK_REQ, h.source_id, CR_REPLY_BITS,
                             (id % CR_SLOTS) * CR_SLOT, NULL, h.hdr_data))
      return FAIL;
   PtlHandlerFAdd(&s->answered, NULL, 1);
   return PROCESS_DATA;
}

/* a request's own bytes (if any) are not data: never deposit them */
__handler int condread_payload_handler(const ptl_payload_t p, void *state) {
   return SUCCESS;
}

SPIN_HANDLERS(condread_header_handler, condread_payload_handler, NULL);
