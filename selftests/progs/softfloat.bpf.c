// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spin/softfloat.h in BPF: every run computes the eight operations of the
 * SF_BATCH vectors in sf_vecs (test_softfloat.c fills them through mmap
 * and compares the results with the host's FPU).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <spin/softfloat.h>
#include "softfloat.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SF_BATCH);
	__type(key, __u32);
	__type(value, struct sf_vec);
	__uint(map_flags, BPF_F_MMAPABLE);
} sf_vecs SEC(".maps");

static long sf_one(__u64 i, void *ctx)
{
	__u32 k = i;
	struct sf_vec *v = bpf_map_lookup_elem(&sf_vecs, &k);
	__u32 fa, fb;

	if (!v)
		return 1;
	fa = (__u32)v->a;
	fb = (__u32)v->b;
	v->r[SF_D_ADD] = spin_f64_add(v->a, v->b);
	v->r[SF_D_MUL] = spin_f64_mul(v->a, v->b);
	v->r[SF_D_MIN] = spin_f64_min(v->a, v->b);
	v->r[SF_D_MAX] = spin_f64_max(v->a, v->b);
	v->r[SF_F_ADD] = spin_f32_add(fa, fb);
	v->r[SF_F_MUL] = spin_f32_mul(fa, fb);
	v->r[SF_F_MIN] = spin_f32_min(fa, fb);
	v->r[SF_F_MAX] = spin_f32_max(fa, fb);
	return 0;
}

SEC("xdp")
int sf_run(struct xdp_md *ctx)
{
	bpf_loop(SF_BATCH, sf_one, NULL, 0);
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
