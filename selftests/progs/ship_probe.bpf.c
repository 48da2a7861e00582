// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A handler that verifies but calls bpf_probe_read_kernel (any kernel
 * address): shipped code may not, unless the target allows helper 113. */
#include <spin/handler.h>

__handler int probe_header(const ptl_header_t h, void *state)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (void *)(long)h.hdr_data);
	*(__u64 *)state = v;
	return PROCESS_DATA;
}

SPIN_HANDLERS(probe_header, NULL, NULL);
