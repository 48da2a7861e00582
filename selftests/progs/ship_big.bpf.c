// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ship_v1 with about 8000 more instructions: the benchmark's large handler. */
#define SHIP_BIG 1
#include "ship_v1.bpf.c"
