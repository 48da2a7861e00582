// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ship_v1 built for 8 KiB of handler memory: its code names spin_hpu_big,
 * which shipped code may not use (ptl_test ship_peek). */
#define SPIN_HANDLER_MEM 8192
#include "ship_v1.bpf.c"
