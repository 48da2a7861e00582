// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ping-pong from the sPIN paper (Hoefler et al., SC17, section 4.1).
 *
 * Streaming mode (STREAMING=1): the payload handler sends every packet of
 * the ping straight back from the NIC (put from device); the host never
 * sees the message.  Store mode (STREAMING=0): the header handler lets the
 * ping be deposited into host memory and the completion handler sends the
 * whole message back from there (put from host).
 *
 * The three handlers are the paper's, unchanged; the last line registers
 * them.  PTL_MAX_SIZE and STREAMING are the application's constants.
 */
#include <spin/handler.h>

#ifndef STREAMING
#define STREAMING 1
#endif
#define PTL_MAX_SIZE (64u << 20)

typedef struct { ptl_process_t source; bool stream; ptl_size_t length; ptl_size_t offset; } pingpong_info_t;

__handler int pingpong_header_handler(const ptl_header_t h, void *state) {
   pingpong_info_t *i = state;
   if (h.length > PTL_MAX_SIZE || !STREAMING) {
      i->stream = false;
      i->length = h.length;
      return PROCEED;
   }
   i->source = h.source_id;
   i->stream = true;
   return PROCESS_DATA;
}

__handler int pingpong_payload_handler(const ptl_payload_t p, void *state) {
   pingpong_info_t *i = state;
   PtlHandlerPutFromDevice(p.base, p.length, 1, 0, i->source, 10, 0, NULL, 0);
   return SUCCESS;
}

__handler int pingpong_completion_handler(int dropped_bytes, bool flow_control_triggered, void *state) {
   pingpong_info_t *i = state;
   if (!i->stream) PtlHandlerPutFromHost(i->offset, i->length, 1, 0, i->source, 10, 0, NULL, 0);
   return SUCCESS;
}

SPIN_HANDLERS(pingpong_header_handler, pingpong_payload_handler, pingpong_completion_handler);
