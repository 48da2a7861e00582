// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A paper-style loop over a packet's contents with spin_for: every 8-byte
 * word of the payload is added to an integer sum and, as a double, to a
 * double sum (spin/softfloat.h), and the words are counted.  The trip count
 * is the packet's length / 8, known only at run time.  test_unit
 * (iteration_words) checks the sums against the host's.
 */
#include <spin/handler.h>
#include "test_handlers.h"

__handler int words_payload_handler(const ptl_payload_t p, void *state)
{
	struct words_state *s = state;
	int i;

	spin_for(i, 0, (int)(p.length / 8)) {
		__u64 *x = SPIN_PTR(p, i * 8, 8);

		if (!x)
			return FAIL;
		s->sum += *x;
		s->dsum = spin_f64_add(s->dsum, *x);
		s->words++;
	}
	return SUCCESS;
}

SPIN_HANDLERS(NULL, words_payload_handler, NULL);
