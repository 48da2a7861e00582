// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* XDP_PASS: attached on the receiving end of a veth so that frames sent to
 * it with XDP_TX/redirect are accepted (veth needs XDP or GRO there). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
