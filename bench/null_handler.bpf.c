// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A handler program with no handlers: the runtime's part of every handler
 * program (entry glue, default deposit, finish step, put and fan-out code).
 * bench/insns.sh subtracts its size to get a sample's handler share.
 */
#include <spin/handler.h>

SPIN_HANDLERS(NULL, NULL, NULL);
