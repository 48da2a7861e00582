// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Handlers named like common local variables (h, p, c, m, state, data):
 * SPIN_HANDLERS must not capture them.  Compiling this file is the test. */
#include <spin/handler.h>

__handler int h(const ptl_header_t hdr, void *state) { return PROCESS_DATA; }
__handler int p(const ptl_payload_t pay, void *state) { return SUCCESS; }
__handler int c(int dropped_bytes, bool flow_control_triggered, void *state) { return SUCCESS; }

SPIN_HANDLERS(h, p, c);
