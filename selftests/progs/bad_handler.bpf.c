// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A handler the verifier must reject: it reads the packet without a bounds
 * check.  Used by the tests of the verifier-rejection path. */
#include <spin/handler.h>

__handler int bad_payload(const ptl_payload_t p, void *state)
{
	__u8 *b = p.base;

	return b[2000] ? SUCCESS : DROP;	/* no check against p.end */
}

SPIN_HANDLERS(NULL, bad_payload, NULL);
