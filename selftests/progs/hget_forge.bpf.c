// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler of slot 1 that forges a handler get's record
 * (unit/handler_hget_record): it writes into spin_hgets a get "in flight"
 * from rank 3, message id HGET_FORGE_ID, whose reply goes to slot 0's
 * window at offset 0 for slot 0's entry victim_me (with that entry's seq).
 * A matching reply from rank 3 would then be deposited into slot 0's
 * window.  spin_hgets is the runtime's only (lib/handler.c refuses a
 * handler object that declares it); this object declares it itself. */
#include <spin/handler.h>

#define HGET_FORGE_ID	0x7a7a7a

#ifdef SPIN_HGETS_RT_ONLY	/* maps.bpf.h no longer gives it to handlers */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SPIN_HGETS);
	__type(key, struct spin_hget_key);
	__type(value, struct spin_hget);
} spin_hgets SEC(".maps");
#endif

struct hget_forge {
	__u64 victim_me;
	__u64 calls;
	__u64 victim_seq;	/* the entry's seq (a handler holds no spin_me) */
};

__handler int hf_header(const ptl_header_t h, void *state)
{
	struct hget_forge *s = state;
	struct spin_hget_key k = { .rank = 3, .msg_id = HGET_FORGE_ID };
	struct spin_hget g = { .host_off = SPIN_WIN_ADDR(0, 0), .len = 64 };

	s->calls++;
	g.me = s->victim_me;
	g.me_seq = s->victim_seq;
	bpf_map_update_elem(&spin_hgets, &k, &g, BPF_ANY);
	return PROCESS_DATA;
}

SPIN_HANDLERS(hf_header, NULL, NULL);
