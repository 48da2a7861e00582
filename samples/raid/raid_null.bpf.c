// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reference for instruction counts, never attached to a match entry: the
 * smallest handler program that does what a RAID handler does besides its
 * own work (header verdict, one device put per packet, completion).  The
 * runtime's share of every handler program (entry, finish step, put) is
 * this program's size; a RAID handler's own cost is its size minus this.
 */
#include <spin/handler.h>

__handler int null_header(const ptl_header_t h, void *state) { return PROCESS_DATA; }

__handler int null_payload(const ptl_payload_t p, void *state) {
   PtlHandlerPutFromDevice(p.base, p.length, 0, 0, 1, 1, 0, NULL, 0);
   return SUCCESS;
}

__handler int null_completion(int dropped_bytes, bool flow_control_triggered, void *state) { return SUCCESS; }

SPIN_HANDLERS(null_header, null_payload, null_completion);
