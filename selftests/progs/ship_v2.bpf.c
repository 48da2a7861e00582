// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ship_v1 as version 2: sums twice each first word. */
#define SHIP_VERSION 2
#include "ship_v1.bpf.c"
