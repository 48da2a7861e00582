// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reduce handlers over doubles: MPI_SUM with IEEE-754 adds in the
 * payload handler (spin_f64_atomic_add, spin/softfloat.h), bit for bit what
 * the host's FPU gives for the same order of additions.
 */
#define REDUCE_DOUBLE 1
#include "reduce.bpf.c"
