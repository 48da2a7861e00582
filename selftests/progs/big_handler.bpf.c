// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * 64 KiB of handler memory (SPIN_HANDLER_MEM): the payload handler reads
 * and writes all of it (struct big_state, test_handlers.h);
 * selftests/test_unit.c (big_handler_memory) checks it.
 */
#define SPIN_HANDLER_MEM 65536
#include <spin/handler.h>
#include "test_handlers.h"

_Static_assert(sizeof(struct big_state) == SPIN_HANDLER_MEM, "big_state is 64 KiB");

__handler int big_payload(const ptl_payload_t p, void *state)
{
	struct big_state *s = state;
	__u64 sum = 0;
	int i;

	__sync_fetch_and_add(&s->calls, 1);
	spin_for(i, 0, BIG_WORDS)
		sum += s->w[i];
	s->sum = sum;
	spin_for(i, 0, BIG_WORDS)
		s->w[i] = (__u64)i * 3 + p.length;
	return SUCCESS;
}

SPIN_HANDLERS(NULL, big_payload, NULL);
