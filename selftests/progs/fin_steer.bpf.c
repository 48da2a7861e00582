// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that does not touch a window itself but steers the
 * finish stage it ends in (unit/handler_finish_confined): what it leaves
 * in spin_ctx and writes into the maps it holds points the stage's
 * deposit, its put from host memory or its completion at another slot's
 * entry and window.  Its handler memory (struct fin_steer) says how.
 * Loaded by a process of slot 1, for an entry of slot 1, its finish stage
 * must reach slot 1's window only. */
#include <spin/handler.h>

#define FIN_STEER_ENTRY	1	/* spin_ctx names the victim's entry (me, start) */
#define FIN_STEER_PT	2	/* its own entry rewritten: the victim's portal, offset */
#define FIN_STEER_PUT	3	/* a put from host memory at the victim's window address */

struct fin_steer {
	__u64 mode;
	__u64 victim_me;	/* the other slot's entry */
	__u64 victim_pt;	/* its runtime portal */
	__u64 victim_addr;	/* a window address in its window */
	__u64 put_rank;		/* where FIN_STEER_PUT sends */
	__u64 headers, completions;
};

static __always_inline void steer(struct fin_steer *s)
{
	struct spin_ctx *c = spin_ctx_get();
	__u32 k;
	struct spin_me *me;

	if (!c)
		return;
	switch (s->mode) {
	case FIN_STEER_ENTRY:
		k = s->victim_me;
		me = bpf_map_lookup_elem(&spin_me, &k);
		c->me = k;
		c->pt = s->victim_pt;
		if (me) {
			c->start = me->host_off;
			c->mlength = me->host_len < c->msg_len ? me->host_len : c->msg_len;
		}
		break;
	case FIN_STEER_PT:
		k = c->me;
		me = bpf_map_lookup_elem(&spin_me, &k);
		if (me)
			me->pt = s->victim_pt;
		c->pt = s->victim_pt;
		c->start = SPIN_WIN_OFF(s->victim_addr);
		break;
	case FIN_STEER_PUT:
		c->n_puts = 1;
		c->put[0].kind = SPIN_PUT_HOST;
		c->put[0].src = SPIN_SRC_HOST;
		c->put[0].src_off = s->victim_addr;
		c->put[0].len = 64;
		c->put[0].target_rank = s->put_rank;
		c->put[0].match_bits = 0x99;
		break;
	}
}

__handler int steer_header(const ptl_header_t h, void *state)
{
	struct fin_steer *s = state;

	s->headers++;
	steer(s);
	/* the stage deposits (SPIN_PH_DSTAGE) where the context says, then
	 * comes back for the completion (SPIN_PH_RESUME) */
	return PROCEED;
}

__handler int steer_completion(unsigned long dropped, bool flow_control, void *state)
{
	struct fin_steer *s = state;

	s->completions++;
	steer(s);	/* again, after the stage came back (SPIN_PH_RESUME) */
	return SUCCESS;
}

SPIN_HANDLERS(steer_header, NULL, steer_completion);
