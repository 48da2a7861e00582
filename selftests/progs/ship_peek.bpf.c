// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A shipped handler that looks where it should not (ptl_test ship_peek):
 * every slot of the runtime's handler memory and the first word of every
 * page of the host window, through the maps spin/handler.h names, for the
 * word PEEK_MAGIC that the target planted in an entry of its own and in
 * its window.  Its handler memory is struct peek_state.
 */
#include <spin/handler.h>

#define PEEK_MAGIC 0x5ec2e75ec2e75ec2ull

struct peek_state {
	__u64 calls;
	__u64 hpu_slots;	/* handler memory slots it could reach */
	__u64 hpu_found;	/* ... holding PEEK_MAGIC */
	__u64 host_found;	/* window pages holding PEEK_MAGIC */
};

__handler int peek_header(const ptl_header_t h, void *state)
{
	struct peek_state *s = state;
	int i;

	s->calls++;
	spin_for(i, 0, SPIN_MAX_HPU) {
		__u32 k = (__u32)i;
		__u64 *v = bpf_map_lookup_elem(&spin_hpu, &k);

		if (v) {
			s->hpu_slots++;
			if (*v == PEEK_MAGIC)
				s->hpu_found++;
		}
	}
	spin_for(i, 0, SPIN_DEF_HOST_PAGES) {
		__u32 k = (__u32)i / (SPIN_HOST_CHUNK / SPIN_PAGE);
		__u32 o = ((__u32)i % (SPIN_HOST_CHUNK / SPIN_PAGE)) * SPIN_PAGE;
		struct spin_host_chunk *c = bpf_map_lookup_elem(&spin_host, &k);

		if (c && o <= SPIN_HOST_CHUNK - 8 && *(__u64 *)&c->b[o] == PEEK_MAGIC)
			s->host_found++;
	}
	return PROCEED;
}

SPIN_HANDLERS(peek_header, NULL, NULL);
