// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A handler to ship (docs/shipping.md; ptl_test ship_*): its handler
 * memory is struct ship_state: messages seen, the sum of each message's
 * first 8 bytes times SHIP_VERSION, and the version that ran last.
 * ship_v2 is the same with SHIP_VERSION 2; ship_big adds SHIP_BIG
 * straight-line instructions (the benchmark's large handler).
 */
#include <spin/handler.h>

#ifndef SHIP_VERSION
#define SHIP_VERSION 1
#endif

struct ship_state {
	__u64 calls;
	__u64 sum;
	__u64 version;
	__u64 mix;
};

__handler int ship_header(const ptl_header_t h, void *state)
{
	struct ship_state *s = state;

	__sync_fetch_and_add(&s->calls, 1);
	s->version = SHIP_VERSION;
	return PROCESS_DATA;
}

__handler int ship_payload(const ptl_payload_t p, void *state)
{
	struct ship_state *s = state;
	__u64 *v = SPIN_PTR(p, 0, 8);

	if (!v || p.offset)
		return SUCCESS;
	__sync_fetch_and_add(&s->sum, *v * SHIP_VERSION);
#ifdef SHIP_BIG
	{
		__u64 x = *v;

#define M1 x = (x ^ (x >> 13)) * 0x9e3779b97f4a7c15ull;
#define M10 M1 M1 M1 M1 M1 M1 M1 M1 M1 M1
#define M100 M10 M10 M10 M10 M10 M10 M10 M10 M10 M10
#define M1000 M100 M100 M100 M100 M100 M100 M100 M100 M100 M100
		M1000 M1000
		s->mix = x;
	}
#endif
	return SUCCESS;
}

SPIN_HANDLERS(ship_header, ship_payload, NULL);
