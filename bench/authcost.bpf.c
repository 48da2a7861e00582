// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/authcost.bpf.o - the cost of the runtime's auth tag (spin/auth.h)
 * on its own, for progrun's repeat mode (the frame is not changed, so every
 * repetition does the same work):
 *
 *   xdp_hdr   bounds-check the sPIN header, read the key, compare its tag
 *             with a constant: the frame of the check without the hash
 *   xdp_tag   the same, and the tag: SipHash-2-4 (as built; build with
 *             -DSPIN_SIP_C=1 -DSPIN_SIP_D=3 for SipHash-1-3) of the
 *             header's 88 bytes, compared with its auth_tag
 *
 *   bench/progrun --obj bench/authcost.bpf.o --prog xdp_tag --runs 11
 *
 * The difference of the two is the tag's cost per packet (bench/README.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <spin/wire.h>
#include <spin/auth.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* a key in .data: the program reads it from memory, as the runtime does */
struct spin_auth bench_key = { .on = 1, .k0 = 0x0706050403020100ULL, .k1 = 0x0f0e0d0c0b0a0908ULL };

SEC("xdp")
int xdp_hdr(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data, *end = (void *)(long)xdp->data_end;
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;
	volatile __u64 k = bench_key.k0;

	if ((void *)(sh + 1) > end)
		return XDP_PASS;
	return sh->auth_tag == k ? XDP_TX : XDP_DROP;
}

SEC("xdp")
int xdp_tag(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data, *end = (void *)(long)xdp->data_end;
	const struct spin_hdr *sh = data + SPIN_HDR_OFF;

	if ((void *)(sh + 1) > end)
		return XDP_PASS;
	return sh->auth_tag == spin_auth_tag(&bench_key, sh) ? XDP_TX : XDP_DROP;
}
