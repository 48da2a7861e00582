/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Layout shared by softfloat.bpf.c and test_softfloat.c. */
#ifndef SPIN_TEST_SOFTFLOAT_H
#define SPIN_TEST_SOFTFLOAT_H

#define SF_BATCH	4096	/* vectors per BPF_PROG_RUN */

enum { SF_D_ADD, SF_D_MUL, SF_D_MIN, SF_D_MAX, SF_F_ADD, SF_F_MUL, SF_F_MIN, SF_F_MAX, SF_OPS };

/* a, b: two doubles' bits; their low 32 bits are also two floats' */
struct sf_vec {
	__u64 a, b;
	__u64 r[SF_OPS];
};

#endif
