// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The broadcast root's "done" entry: every other rank's NIC puts a
 * completion notice here when its copy of the message is complete (see
 * broadcast.bpf.c).  This payload handler timestamps each notice by the
 * NIC's clock and keeps the latest time in handler memory, so the root
 * measures when the last rank had the message at its own NIC, not when
 * the root process next got a CPU.  The notices are counted by the
 * entry's counter, as before; their bytes are not needed.
 */
#include <spin/handler.h>

typedef struct {
	__u64 last_ns;		/* latest arrival (spin_time_ns) */
} done_info_t;

__handler int done_payload_handler(const ptl_payload_t p, void *state) {
   done_info_t *d = state;
   __u64 now = spin_time_ns(), old = d->last_ns;
   /* a maximum: notices are handled on several CPUs at once */
   for (int i = 0; i < 8 && old < now; i++) {
      __u64 seen = __sync_val_compare_and_swap(&d->last_ns, old, now);
      if (seen == old) break;
      old = seen;
   }
   return SUCCESS;
}

SPIN_HANDLERS(NULL, done_payload_handler, NULL);
