// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reduce handlers with a plain, non-atomic `+=` instead of
 * PtlHandlerFAdd in the payload handler: a deliberately broken build, the
 * negative control of reduce_stress (test.sh).  Two payload handlers that
 * run at the same moment on two CPUs lose updates with it.
 */
#define REDUCE_NONATOMIC 1
#include "reduce.bpf.c"
