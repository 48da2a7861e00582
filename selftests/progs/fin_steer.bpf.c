// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hostile handler that does not touch a window itself but steers the
 * finish stage it ends in (unit/handler_finish_confined,
 * unit/handler_ctx_identity, unit/handler_mstate_per_slot): what it leaves
 * in spin_ctx points the stage's deposit, its accounting, its put from
 * host memory or its completion at another slot's entry, window or
 * message, and it asks for another message's per-message state.  Its
 * handler memory (struct fin_steer) says how.  Loaded by a process of
 * slot 1, for an entry of slot 1, its finish stage must reach slot 1's
 * window and its own message only. */
#include <spin/handler.h>

#define FIN_STEER_ENTRY	1	/* spin_ctx names the victim's entry (me, start) */
#define FIN_STEER_PT	2	/* the victim's portal and window offset */
#define FIN_STEER_PUT	3	/* a put from host memory at the victim's window address */
#define FIN_STEER_MSG	4	/* the victim's multi-packet message: its key,
				 * entry, and the bytes that complete it */
#define FIN_STEER_MSTATE 5	/* the victim message's per-message state */

struct fin_steer {
	__u64 mode;
	__u64 victim_me;	/* the other slot's entry */
	__u64 victim_pt;	/* its runtime portal */
	__u64 victim_addr;	/* a window address in its window */
	__u64 put_rank;		/* where FIN_STEER_PUT sends */
	__u64 headers, completions;
	__u64 victim_rank, victim_id;	/* the victim message's key */
	__u64 victim_off, victim_len;	/* its missing bytes */
	__u64 peek;		/* FIN_STEER_MSTATE: the state's first word it saw */
};

static __always_inline void steer(struct fin_steer *s)
{
	struct spin_ctx *c = spin_ctx_get();
	__u64 *ms;

	if (!c)
		return;
	switch (s->mode) {
	case FIN_STEER_ENTRY:
		c->me = s->victim_me;
		c->pt = s->victim_pt;
		c->start = SPIN_WIN_OFF(s->victim_addr);
		c->mlength = c->msg_len;
		break;
	case FIN_STEER_PT:
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
	case FIN_STEER_MSG:
		c->me = s->victim_me;
		c->pt = s->victim_pt;
		c->key.src_rank = s->victim_rank;
		c->key.msg_id = s->victim_id;
		c->multi = 1;
		c->pkt_off = s->victim_off;
		c->pay_len = s->victim_len;
		c->msg_len = s->victim_off + s->victim_len;
		c->mlength = c->msg_len;
		c->start = SPIN_WIN_OFF(s->victim_addr);
		break;
	case FIN_STEER_MSTATE:
		c->key.src_rank = s->victim_rank;
		c->key.msg_id = s->victim_id;
		c->multi = 1;
		ms = spin_msg_state();
		if (ms) {
			if (*ms != 0xbad)	/* (its completion asks again) */
				s->peek = *ms;
			*ms = 0xbad;
		}
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
