// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * netpipe_ptl: the NetPIPE-style benchmark (bench/netpipe.h) over the spin
 * Portals 4 library (spin/portals4.h).
 *
 * Each rank appends one persistent match entry (PTL_ME_OP_PUT, match bits
 * NP_BITS, any initiator) whose buffer is in the host window
 * (PtlSpinHostAlloc): the XDP runtime deposits every packet of a message
 * into it, no copy in user space.  The entry counts completed messages on a
 * counting event (PTL_ME_EVENT_CT_COMM); receiving n messages is waiting for
 * the counter to reach base + n (PtlCTPoll with a timeout, i.e. PtlCTWait
 * that gives up when nothing arrives).  Sending is PtlPut(PTL_NO_ACK_REQ)
 * from an MD (PTL_MD_EVENT_CT_SEND) over the send buffer (malloc memory, or
 * with --md-host the host window); rank 1 echoes from a second MD over its
 * entry's buffer.  Ranks and peers: PtlNIInit(PTL_NI_LOGICAL) loads the job
 * from SPIN_HOSTFILE/SPIN_RANK on SPIN_IFACE; PtlGetId names our rank.
 */
#include "netpipe.h"
#include <spin/portals4.h>

#define NP_BITS 0x4e5050ull	/* "NPP" */

enum { O_MDHOST = O_TR_BASE, O_PT, O_ENTRIES };

static const struct option tr_opts[] = {
	{ "md-host", no_argument, 0, O_MDHOST },
	{ "pt", required_argument, 0, O_PT },
	{ "entries", required_argument, 0, O_ENTRIES },
	{ 0 },
};

static const char usage[] =
"usage: netpipe_ptl [options]   (SPIN_IFACE, SPIN_HOSTFILE, SPIN_RANK set)\n"
"  --md-host      the send buffer (MD) in the host window too (default: malloc)\n"
"  --pt N         portal table index (5)\n"
"  --entries N    N entries on the portal: N - 1 that match nothing (exact,\n"
"                 other match bits, appended first), then the measured one (1)\n";

static int opt_md_host;
static ptl_pt_index_t opt_pt = 5;
static long opt_entries = 1;

static void tr_opt(int c, const char *a)
{
	switch (c) {
	case O_MDHOST: opt_md_host = 1; break;
	case O_PT: opt_pt = (ptl_pt_index_t)atoi(a); break;
	case O_ENTRIES:
		opt_entries = atol(a);
		if (opt_entries < 1)
			np_die("--entries %s: 1 or more", a);
		break;
	}
}

struct ptl_ctx {
	ptl_handle_ni_t ni;
	ptl_pt_index_t pt;
	ptl_handle_ct_t ct_me, ct_md;
	ptl_handle_md_t md_s, md_r;
	ptl_handle_me_t me;
	ptl_process_t peer;
	uint8_t *sbuf, *rbuf;
	size_t cap;
	ptl_size_t base;	/* counter value everything before was consumed at */
	uint64_t puts, put_fail, waits, timeouts, resyncs;
	int inited, ni_up, pt_up, me_up, md_s_up, md_r_up;
};

static struct ptl_ctx pc = {
	.ct_me = PTL_INVALID_HANDLE, .ct_md = PTL_INVALID_HANDLE,
};

static void ptl_check(int rc, const char *what)
{
	if (rc != PTL_OK)
		np_die("%s failed: %d (%s)", what, rc, PtlSpinErrmsg());
}

static int ptl_buffers(void *p, size_t max, void **sbuf, void **rbuf)
{
	struct ptl_ctx *c = p;
	size_t len = (max + 4095) & ~(size_t)4095;
	ptl_md_t md = { .options = PTL_MD_EVENT_CT_SEND, .eq_handle = PTL_EQ_NONE };
	ptl_me_t me = {
		.uid = PTL_UID_ANY,
		.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_SUCCESS_DISABLE |
			   PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE,
		.match_id = { .rank = PTL_RANK_ANY },
		.match_bits = NP_BITS, .ignore_bits = 0,
	};
	void *rb, *sb;

	c->cap = max;
	ptl_check(PtlSpinHostAlloc(c->ni, len, &rb), "PtlSpinHostAlloc (receive buffer)");
	if (opt_md_host) {
		ptl_check(PtlSpinHostAlloc(c->ni, len, &sb), "PtlSpinHostAlloc (send buffer)");
	} else {
		sb = aligned_alloc(4096, len);
		if (!sb)
			return -1;
		memset(sb, 0, len);
	}
	c->sbuf = sb;
	c->rbuf = rb;
	/* the counters: messages arrived at our entry, sends done from our MDs */
	ptl_check(PtlCTAlloc(c->ni, &c->ct_me), "PtlCTAlloc");
	ptl_check(PtlCTAlloc(c->ni, &c->ct_md), "PtlCTAlloc");
	md.start = sb;
	md.length = max;
	md.ct_handle = c->ct_md;
	ptl_check(PtlMDBind(c->ni, &md, &c->md_s), "PtlMDBind (send buffer)");
	c->md_s_up = 1;
	md.start = rb;
	ptl_check(PtlMDBind(c->ni, &md, &c->md_r), "PtlMDBind (entry buffer, for echoes)");
	c->md_r_up = 1;
	/* entries that match nothing, ahead of the measured one */
	for (long i = 1; i < opt_entries; i++) {
		ptl_me_t x = me;
		ptl_handle_me_t h;

		x.start = NULL;
		x.length = 0;
		x.ct_handle = PTL_CT_NONE;
		x.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE;
		x.match_bits = NP_BITS + (uint64_t)i;
		ptl_check(PtlMEAppend(c->ni, c->pt, &x, PTL_PRIORITY_LIST, NULL, &h),
			  "PtlMEAppend (--entries)");
	}
	me.start = rb;
	me.length = max;
	me.ct_handle = c->ct_me;
	ptl_check(PtlMEAppend(c->ni, c->pt, &me, PTL_PRIORITY_LIST, NULL, &c->me), "PtlMEAppend");
	c->me_up = 1;
	*sbuf = sb;
	*rbuf = rb;
	return 0;
}

static int ptl_send(void *p, const void *buf, size_t len)
{
	struct ptl_ctx *c = p;
	const uint8_t *b = buf;
	ptl_handle_md_t md = c->md_s;
	ptl_size_t off = (ptl_size_t)(b - c->sbuf);
	int rc;

	if (b >= c->rbuf && b < c->rbuf + c->cap) {
		md = c->md_r;
		off = (ptl_size_t)(b - c->rbuf);
	}
	rc = PtlPut(md, off, len, PTL_NO_ACK_REQ, c->peer, c->pt, NP_BITS, 0, NULL, 0);
	c->puts++;
	if (rc != PTL_OK) {
		c->put_fail++;
		np_log("PtlPut of %zu bytes: %d (%s)", len, rc, PtlSpinErrmsg());
		return -1;
	}
	return 0;
}

static uint64_t ptl_recv(void *p, size_t len, uint64_t n, int timeout_ms)
{
	struct ptl_ctx *c = p;
	ptl_size_t want = c->base + n;
	ptl_ct_event_t ev = { 0, 0 };
	ptl_size_t last = c->base;

	(void)len;
	c->waits++;
	for (;;) {
		unsigned int which;
		int rc = PtlCTPoll(&c->ct_me, &want, 1, (ptl_time_t)timeout_ms, &ev, &which);

		if (rc == PTL_OK)
			break;
		if (rc != PTL_CT_NONE_REACHED) {
			np_log("PtlCTPoll: %d (%s)", rc, PtlSpinErrmsg());
			break;
		}
		/* a timeout: go on while messages still come */
		if (PtlCTGet(c->ct_me, &ev) != PTL_OK || ev.success <= last)
			break;
		last = ev.success;
	}
	if (ev.failure)
		np_log("the entry's counter has %llu failures", (unsigned long long)ev.failure);
	if (ev.success >= want) {
		c->base = want;
		return n;
	}
	c->timeouts++;
	{
		uint64_t got = ev.success - c->base;

		c->base = ev.success;
		return got;
	}
}

static void ptl_resync(void *p)
{
	struct ptl_ctx *c = p;
	ptl_ct_event_t ev;

	usleep(200000);
	if (PtlCTGet(c->ct_me, &ev) == PTL_OK)
		c->base = ev.success;
	c->resyncs++;
}

static void ptl_report(void *p, FILE *f)
{
	struct ptl_ctx *c = p;
	ptl_ct_event_t me = { 0, 0 }, md = { 0, 0 };
	ptl_sr_value_t drops = -1;

	PtlCTGet(c->ct_me, &me);
	PtlCTGet(c->ct_md, &md);
	PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &drops);
	fprintf(f, "netpipe[%u]: ptl%s: %llu puts (%llu failed), entry counter %llu ok %llu failed, "
		"send counter %llu ok %llu failed, %llu timeouts, %llu resyncs, NI drop count %d\n",
		np_o.rank, opt_md_host ? " md-host" : "", (unsigned long long)c->puts,
		(unsigned long long)c->put_fail, (unsigned long long)me.success,
		(unsigned long long)me.failure, (unsigned long long)md.success,
		(unsigned long long)md.failure, (unsigned long long)c->timeouts,
		(unsigned long long)c->resyncs, drops);
	{
		ptl_spin_rel_stats_t r;

		if (PtlSpinRelStats(c->ni, &r) == PTL_OK)
			fprintf(f, "netpipe[%u]: reliable: msgs %llu timeouts %llu tail_probes %llu sacks %llu "
				"not_now %llu retx_pkts %llu probes %llu rto_us %llu srtt_us %llu "
				"cc_cuts %llu cwnd_max %llu\n", np_o.rank,
				(unsigned long long)r.msgs, (unsigned long long)r.timeouts,
				(unsigned long long)r.tail_probes, (unsigned long long)r.sacks,
				(unsigned long long)r.not_now, (unsigned long long)r.retx_pkts,
				(unsigned long long)r.probes, (unsigned long long)r.rto_us,
				(unsigned long long)r.srtt_us, (unsigned long long)r.cc_cuts,
				(unsigned long long)r.cwnd_max);
	}
}

static void ptl_cleanup(void)
{
	if (pc.me_up)
		PtlMEUnlink(pc.me);
	if (pc.md_s_up)
		PtlMDRelease(pc.md_s);
	if (pc.md_r_up)
		PtlMDRelease(pc.md_r);
	if (pc.ct_me != PTL_INVALID_HANDLE)
		PtlCTFree(pc.ct_me);
	if (pc.ct_md != PTL_INVALID_HANDLE)
		PtlCTFree(pc.ct_md);
	if (pc.pt_up)
		PtlPTFree(pc.ni, pc.pt);
	if (pc.ni_up)
		PtlNIFini(pc.ni);
	if (pc.inited)
		PtlFini();
	pc.me_up = pc.md_s_up = pc.md_r_up = pc.pt_up = pc.ni_up = pc.inited = 0;
	pc.ct_me = pc.ct_md = PTL_INVALID_HANDLE;
}

int main(int argc, char **argv)
{
	struct np_transport t = {
		.name = "spin", .ctx = &pc, .buffers = ptl_buffers, .send = ptl_send,
		.recv = ptl_recv, .resync = ptl_resync, .report = ptl_report,
	};
	ptl_ni_limits_t lim;
	ptl_process_t id;

	np_parse(argc, argv, tr_opts, tr_opt, usage);
	np_job();
	/* SIGINT/SIGTERM: the default action.  No clean-up from a signal
	 * handler (it could wait for a lock the interrupted code holds);
	 * netpipe.sh detaches the runtime and removes the namespaces. */
	ptl_check(PtlInit(), "PtlInit");
	pc.inited = 1;
	atexit(ptl_cleanup);
	ptl_check(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
			    &lim, &pc.ni), "PtlNIInit");
	pc.ni_up = 1;
	ptl_check(PtlGetId(pc.ni, &id), "PtlGetId");
	if (id.rank != np_o.rank)
		np_die("PtlGetId says rank %u, the job says %u", id.rank, np_o.rank);
	if (lim.max_msg_size && lim.max_msg_size < np_o.max_size)
		np_die("max_msg_size %llu < --max %zu", (unsigned long long)lim.max_msg_size,
		       np_o.max_size);
	pc.peer.rank = 1 - id.rank;
	ptl_check(PtlPTAlloc(pc.ni, 0, PTL_EQ_NONE, opt_pt, &pc.pt), "PtlPTAlloc");
	pc.pt_up = 1;
	if (opt_md_host)
		t.name = "spin_md_host";
	return np_run(&t);
}
