// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Multi-process integration tests of the Portals 4 API (spin/portals4.h).
 * One process per network namespace; selftests/test_ptl.sh builds the
 * namespaces and starts the processes:
 *
 *   SPIN_IFACE=veth0 SPIN_HOSTFILE=F SPIN_RANK=k PTL_TEST_DIR=D PTL_TEST_NPROCS=n \
 *       selftests/ptl_test CASE
 *
 * (or PMI_RANK / OMPI_COMM_WORLD_RANK instead of SPIN_RANK).  Processes
 * synchronise with a file barrier in D (never through the library).  Every
 * check prints one line on failure ("r<rank> <case>:<line>: ..."); the exit
 * status is 0 when all checks passed, 1 otherwise, 77 for a skip.
 */
#include <complex.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/types.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <spin/portals4.h>
#include <spin/spin.h>
#include "progs/test_handlers.h"

/* ------------------------------------------------------------ harness -- */

static int R = -1, N = 0;		/* this process's rank, processes in the case */
static const char *DIR_ = "/tmp";
static const char *CASE = "?";
static int failed;
static ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
static ptl_ni_limits_t lim;
static int skip_link = 1;		/* eq_next() skips PTL_EVENT_LINK */
static int physical;			/* the NI uses physical addressing */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

static void msleep(int ms) { usleep(ms * 1000); }

#define LOG(fmt, ...) fprintf(stderr, "r%d %s:%d: " fmt "\n", R, CASE, __LINE__, ##__VA_ARGS__)
#define FAIL(fmt, ...) do { LOG("FAIL " fmt, ##__VA_ARGS__); failed = 1; } while (0)
#define CHK(cond, fmt, ...) ({ int __ok = !!(cond); \
	if (!__ok) { FAIL("%s: " fmt, #cond, ##__VA_ARGS__); } \
	__ok; })
#define CHK_EQ(got, want, what) ({ unsigned long long __g = (unsigned long long)(got), \
	__w = (unsigned long long)(want); int __ok = __g == __w; \
	if (!__ok) FAIL("%s: expected %llu (0x%llx), got %llu (0x%llx)", what, __w, __w, __g, __g); \
	__ok; })
#define DIE(fmt, ...) do { LOG("FATAL " fmt, ##__VA_ARGS__); fflush(stderr); exit(1); } while (0)

static const char *rc_name(int rc)
{
	static const char *n[] = { "PTL_OK", "PTL_ARG_INVALID", "PTL_CT_NONE_REACHED",
		"PTL_EQ_DROPPED", "PTL_EQ_EMPTY", "PTL_FAIL", "PTL_IN_USE", "PTL_INTERRUPTED",
		"PTL_LIST_TOO_LONG", "PTL_NO_INIT", "PTL_NO_SPACE", "PTL_PID_IN_USE",
		"PTL_PT_FULL", "PTL_PT_EQ_NEEDED", "PTL_PT_IN_USE", "PTL_IGNORED", "PTL_ABORTED" };
	static __thread char b[32];

	if (rc >= 0 && rc < (int)(sizeof(n) / sizeof(n[0])))
		return n[rc];
	snprintf(b, sizeof(b), "rc %d", rc);
	return b;
}

static const char *ev_name(int t)
{
	static const char *n[] = { "GET", "GET_OVERFLOW", "PUT", "PUT_OVERFLOW", "ATOMIC",
		"ATOMIC_OVERFLOW", "FETCH_ATOMIC", "FETCH_ATOMIC_OVERFLOW", "REPLY", "SEND",
		"ACK", "PT_DISABLED", "LINK", "AUTO_UNLINK", "AUTO_FREE", "SEARCH" };
	static __thread char b[32];

	if (t >= 0 && t < (int)(sizeof(n) / sizeof(n[0])))
		return n[t];
	snprintf(b, sizeof(b), "type %d", t);
	return b;
}

static const char *fail_name(unsigned f)
{
	static const char *n[] = { "NI_OK", "NI_UNDELIVERABLE", "NI_DROPPED", "NI_PT_DISABLED",
		"NI_PERM_VIOLATION", "NI_NO_MATCH", "NI_OP_VIOLATION", "NI_SEGV" };
	static __thread char b[32];

	if (f < sizeof(n) / sizeof(n[0]))
		return n[f];
	snprintf(b, sizeof(b), "fail %u", f);
	return b;
}

/* the call must return want */
#define RC(call, want) ({ int __rc = (call), __w = (want); \
	if (__rc != __w) FAIL("%s: expected %s, got %s%s%s", #call, rc_name(__w), rc_name(__rc), \
			      *PtlSpinErrmsg() ? " -- " : "", PtlSpinErrmsg()); \
	__rc == __w; })
/* the call must succeed, else the process stops */
#define OK(call) do { int __rc = (call); \
	if (__rc != PTL_OK) DIE("%s: %s -- %s", #call, rc_name(__rc), PtlSpinErrmsg()); } while (0)

static void dump_ev(const char *pfx, const ptl_event_t *e)
{
	LOG("%s event %s: init %u/%u pt %u mb 0x%llx rlen %llu mlen %llu roff %llu hdr 0x%llx "
	    "uptr %p start %p list %u fail %s aop %u atype %u", pfx, ev_name(e->type),
	    e->initiator.phys.nid, e->initiator.phys.pid, e->pt_index,
	    (unsigned long long)e->match_bits, (unsigned long long)e->rlength,
	    (unsigned long long)e->mlength, (unsigned long long)e->remote_offset,
	    (unsigned long long)e->hdr_data, e->user_ptr, e->start, e->ptl_list,
	    fail_name(e->ni_fail_type), e->atomic_operation, e->atomic_type);
}

/* ------------------------------------------------------ file barrier -- */

static void touch(const char *name, int rank)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/b.%s.%d", DIR_, name, rank);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		DIE("barrier file %s: %s", p, strerror(errno));
	close(fd);
}

static int exists(const char *name, int rank)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/b.%s.%d", DIR_, name, rank);
	return access(p, F_OK) == 0;
}

/* wait until every rank in 0..N-1 reached barrier `name`: at most
 * $PTL_BARRIER_MS (default 20 s; the scripts set it a few seconds below
 * the process's own time limit, so that a rank that died is named, while
 * a rank that is only slow to start, 17 processes attaching a runtime
 * each on two loaded CPUs, is waited for) */
static void barrier(const char *name)
{
	const char *v = getenv("PTL_BARRIER_MS");
	uint64_t end = now_ms() + (v && atoll(v) > 0 ? (uint64_t)atoll(v) : 20000);

	touch(name, R);
	for (int r = 0; r < N; r++) {
		while (!exists(name, r)) {
			if (now_ms() > end)
				DIE("barrier '%s': rank %d never came", name, r);
			usleep(500);
		}
	}
}

static void barrierf(const char *fmt, ...)
{
	char b[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	barrier(b);
}

static void put_file(const char *name, const void *buf, size_t len)
{
	char p[512], t[520];
	FILE *f;

	snprintf(p, sizeof(p), "%s/d.%s", DIR_, name);
	snprintf(t, sizeof(t), "%s.tmp", p);
	f = fopen(t, "w");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		DIE("write %s", t);
	rename(t, p);
}

static size_t get_file(const char *name, void *buf, size_t cap)
{
	char p[512];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/d.%s", DIR_, name);
	f = fopen(p, "r");
	if (!f)
		DIE("read %s: %s", p, strerror(errno));
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

/* ------------------------------------------------------------ pattern -- */

static inline uint8_t pat(uint32_t seed, uint64_t i)
{
	uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u + (uint32_t)(i >> 9) * 97u;

	return (uint8_t)(x ^ (x >> 11) ^ (x >> 19) ^ seed);
}

static void fill(void *b, size_t len, uint32_t seed)
{
	uint8_t *p = b;

	for (size_t i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

/* buf must hold bytes off..off+len of the pattern `seed` */
static int check_pat_off(const char *what, const void *b, size_t len, uint32_t seed, size_t off)
{
	const uint8_t *p = b;
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < len; i++)
		if (p[i] != pat(seed, off + i) && !bad++)
			first = i;
	if (bad)
		FAIL("%s: %zu of %zu bytes differ, first at %zu (got 0x%02x want 0x%02x)", what,
		     bad, len, first, p[first], pat(seed, off + first));
	return !bad;
}

static int check_pat(const char *what, const void *b, size_t len, uint32_t seed)
{
	return check_pat_off(what, b, len, seed, 0);
}

static int check_byte(const char *what, const void *b, size_t len, uint8_t v)
{
	const uint8_t *p = b;
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < len; i++)
		if (p[i] != v && !bad++)
			first = i;
	if (bad)
		FAIL("%s: %zu of %zu guard bytes changed, first at %zu (0x%02x)", what, bad, len,
		     first, p[first]);
	return !bad;
}

/* --------------------------------------------------------- NI, memory -- */

static int env_rank(void)
{
	/* PTL_TEST_RANK: the launcher's rank under a name libspin does not
	 * read (ptl/mpirun_pmix: the rank must come from PMIx) */
	const char *v[] = { "PTL_TEST_RANK", "SPIN_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK" };

	for (int i = 0; i < 4; i++)
		if (getenv(v[i]) && *getenv(v[i]))
			return atoi(getenv(v[i]));
	return -1;
}

/* the limits init_ni asks for (NULL: none) */
static const ptl_ni_limits_t *want_lim;

static void init_ni(unsigned opts, ptl_pid_t pid)
{
	OK(PtlInit());
	OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | opts, pid, want_lim, &lim, &ni));
	physical = !!(opts & PTL_NI_PHYSICAL);
}

static void fini_ni(void)
{
	RC(PtlNIFini(ni), PTL_OK);
	PtlFini();
}

enum { K_WIN, K_MAL };
static const char *kname[] = { "window", "malloc" };

static void *kbuf(int kind, size_t len)
{
	void *p = NULL;

	if (kind == K_WIN) {
		OK(PtlSpinHostAlloc(ni, len, &p));
	} else {
		if (posix_memalign(&p, 4096, len ? len : 1))
			DIE("out of memory");
		memset(p, 0, len);
	}
	return p;
}

static ptl_process_t any_proc(void)
{
	ptl_process_t p;

	p.phys.nid = PTL_NID_ANY;
	p.phys.pid = PTL_PID_ANY;
	return p;
}

static ptl_process_t rank_proc(ptl_rank_t r)
{
	ptl_process_t p;

	memset(&p, 0, sizeof(p));
	p.rank = r;
	return p;
}

static ptl_handle_me_t me_add(ptl_pt_index_t pt, void *start, size_t len, unsigned opts,
			      ptl_match_bits_t mb, ptl_match_bits_t ign, ptl_handle_ct_t ct,
			      ptl_list_t list, void *uptr)
{
	ptl_me_t me;
	ptl_handle_me_t h;

	memset(&me, 0, sizeof(me));
	me.start = start;
	me.length = len;
	me.ct_handle = ct;
	me.uid = PTL_UID_ANY;
	me.options = opts;
	me.match_id = any_proc();
	me.match_bits = mb;
	me.ignore_bits = ign;
	OK(PtlMEAppend(ni, pt, &me, list, uptr, &h));
	return h;
}

static ptl_handle_eq_t eq_new(ptl_size_t n)
{
	ptl_handle_eq_t eq;

	OK(PtlEQAlloc(ni, n, &eq));
	return eq;
}

static ptl_handle_ct_t ct_new(void)
{
	ptl_handle_ct_t ct;

	OK(PtlCTAlloc(ni, &ct));
	return ct;
}

static ptl_pt_index_t pt_new(unsigned opts, ptl_handle_eq_t eq, ptl_pt_index_t want)
{
	ptl_pt_index_t pt;

	OK(PtlPTAlloc(ni, opts, eq, want, &pt));
	if (want != PTL_PT_ANY)
		CHK_EQ(pt, want, "PtlPTAlloc index");
	return pt;
}

static ptl_handle_md_t md_new(void *start, size_t len, unsigned opts, ptl_handle_eq_t eq,
			      ptl_handle_ct_t ct)
{
	ptl_md_t md = { .start = start, .length = len, .options = opts, .eq_handle = eq,
			.ct_handle = ct };
	ptl_handle_md_t h;

	OK(PtlMDBind(ni, &md, &h));
	return h;
}

/* ------------------------------------------------------------- events -- */

static int nlinks;	/* link events skipped */

/* next event within ms (PTL_EQ_EMPTY on timeout) */
static int eq_next(ptl_handle_eq_t eq, ptl_event_t *ev, int ms)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		int64_t left = (int64_t)(end - now_ms());
		unsigned which = 99;
		int rc;

		if (left < 0)
			left = 0;
		memset(ev, 0xa5, sizeof(*ev));
		rc = PtlEQPoll(&eq, 1, (ptl_time_t)left, ev, &which);
		if ((rc == PTL_OK || rc == PTL_EQ_DROPPED) && which != 0)
			FAIL("PtlEQPoll: which %u for one queue", which);
		if ((rc == PTL_OK || rc == PTL_EQ_DROPPED) && ev->type == PTL_EVENT_LINK && skip_link) {
			nlinks++;
			continue;
		}
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED && rc != PTL_EQ_EMPTY)
			FAIL("PtlEQPoll: %s", rc_name(rc));
		return rc;
	}
}

/* an event must come within ms */
static int want_ev(ptl_handle_eq_t eq, ptl_event_t *ev, int ms, const char *what)
{
	int rc = eq_next(eq, ev, ms);

	if (rc == PTL_EQ_EMPTY) {
		FAIL("%s: no event within %d ms", what, ms);
		return 0;
	}
	if (rc == PTL_EQ_DROPPED)
		FAIL("%s: PTL_EQ_DROPPED", what);
	return rc == PTL_OK || rc == PTL_EQ_DROPPED;
}

/* no event may come within ms */
static void no_ev(ptl_handle_eq_t eq, int ms, const char *what)
{
	ptl_event_t ev;

	while (eq_next(eq, &ev, ms) != PTL_EQ_EMPTY) {
		FAIL("%s: unexpected event", what);
		dump_ev("unexpected", &ev);
		ms = 10;
	}
}

/* events in the queue (within ms of the last one) */
static int drain(ptl_handle_eq_t eq, int ms)
{
	ptl_event_t ev;
	int n = 0;

	while (eq_next(eq, &ev, ms) != PTL_EQ_EMPTY)
		n++;
	return n;
}

enum {
	F_TYPE = 1 << 0, F_INI = 1 << 1, F_PT = 1 << 2, F_MB = 1 << 3, F_RLEN = 1 << 4,
	F_MLEN = 1 << 5, F_ROFF = 1 << 6, F_HDR = 1 << 7, F_UPTR = 1 << 8, F_START = 1 << 9,
	F_LIST = 1 << 10, F_FAIL = 1 << 11, F_AOP = 1 << 12, F_ATYPE = 1 << 13,
};
#define TGT_M (F_TYPE | F_INI | F_PT | F_MB | F_RLEN | F_MLEN | F_ROFF | F_HDR | F_UPTR | \
	       F_START | F_LIST | F_FAIL)
#define SEND_M (F_TYPE | F_MLEN | F_UPTR | F_FAIL)
#define ACK_M (F_TYPE | F_MLEN | F_ROFF | F_UPTR | F_FAIL | F_LIST)
#define REPLY_M (F_TYPE | F_MLEN | F_ROFF | F_UPTR | F_FAIL)

struct xev {
	unsigned m;		/* F_*: fields to check */
	int type;
	ptl_process_t ini;	/* rank, or nid/pid on physical NIs */
	ptl_pt_index_t pt;
	uint64_t mb, rlen, mlen, roff, hdr;
	void *uptr, *start;
	int list, fail;
	int aop, atype;
};

static int check_ev_at(int line, const char *what, const ptl_event_t *e, const struct xev *x)
{
	int bad = 0;

#define CK(flag, field, got, want, fmt) \
	if ((x->m & (flag)) && (got) != (want)) { \
		LOG("FAIL (line %d) %s: event %s: " field " expected " fmt ", got " fmt, line, what, \
		    ev_name(e->type), want, got); bad++; }
	if ((x->m & F_TYPE) && e->type != x->type) {
		LOG("FAIL (line %d) %s: event type expected %s, got %s", line, what,
		    ev_name(x->type), ev_name(e->type));
		bad++;
	}
	if (physical) {
		CK(F_INI, "initiator.phys.nid", e->initiator.phys.nid, x->ini.phys.nid, "%u");
		CK(F_INI, "initiator.phys.pid", e->initiator.phys.pid, x->ini.phys.pid, "%u");
	} else {
		CK(F_INI, "initiator.rank", e->initiator.rank, x->ini.rank, "%u");
	}
	CK(F_PT, "pt_index", e->pt_index, x->pt, "%u");
	CK(F_MB, "match_bits", (unsigned long long)e->match_bits, (unsigned long long)x->mb, "0x%llx");
	CK(F_RLEN, "rlength", (unsigned long long)e->rlength, (unsigned long long)x->rlen, "%llu");
	CK(F_MLEN, "mlength", (unsigned long long)e->mlength, (unsigned long long)x->mlen, "%llu");
	CK(F_ROFF, "remote_offset", (unsigned long long)e->remote_offset,
	   (unsigned long long)x->roff, "%llu");
	CK(F_HDR, "hdr_data", (unsigned long long)e->hdr_data, (unsigned long long)x->hdr, "0x%llx");
	CK(F_UPTR, "user_ptr", e->user_ptr, x->uptr, "%p");
	CK(F_START, "start", e->start, x->start, "%p");
	CK(F_LIST, "ptl_list", (int)e->ptl_list, x->list, "%d");
	if ((x->m & F_FAIL) && e->ni_fail_type != (unsigned)x->fail) {
		LOG("FAIL (line %d) %s: event %s: ni_fail_type expected %s, got %s", line, what,
		    ev_name(e->type), fail_name(x->fail), fail_name(e->ni_fail_type));
		bad++;
	}
	CK(F_AOP, "atomic_operation", (int)e->atomic_operation, x->aop, "%d");
	CK(F_ATYPE, "atomic_type", (int)e->atomic_type, x->atype, "%d");
#undef CK
	if (bad) {
		failed = 1;
		dump_ev("  the", e);
	}
	return !bad;
}
#define CHKEV(what, e, ...) check_ev_at(__LINE__, what, e, &(struct xev){ __VA_ARGS__ })

/*
 * Initiator side: collect the events of one operation, in any order: want[]
 * lists the types; returns 1 when all came (out[i] matches want[i]).
 */
static int collect(ptl_handle_eq_t eq, int ms, int n, const int *want, ptl_event_t *out,
		   const char *what)
{
	int got[8] = { 0 }, have = 0;
	uint64_t end = now_ms() + ms;

	while (have < n) {
		ptl_event_t ev;
		int64_t left = (int64_t)(end - now_ms());
		int rc = eq_next(eq, &ev, left > 0 ? (int)left : 0), i;

		if (rc == PTL_EQ_EMPTY) {
			for (i = 0; i < n; i++)
				if (!got[i])
					FAIL("%s: no %s event within %d ms", what, ev_name(want[i]), ms);
			return 0;
		}
		if (rc == PTL_EQ_DROPPED)
			FAIL("%s: PTL_EQ_DROPPED", what);
		for (i = 0; i < n; i++)
			if (!got[i] && want[i] == ev.type)
				break;
		if (i == n) {
			FAIL("%s: unexpected event", what);
			dump_ev("unexpected", &ev);
			continue;
		}
		got[i] = 1;
		out[i] = ev;
		have++;
	}
	return 1;
}

static int ct_wait(ptl_handle_ct_t ct, ptl_size_t test, int ms, const char *what)
{
	ptl_ct_event_t got;
	unsigned which = 99;
	int rc = PtlCTPoll(&ct, &test, 1, ms, &got, &which);

	if (rc != PTL_OK) {
		ptl_ct_event_t c = { 0, 0 };

		PtlCTGet(ct, &c);
		FAIL("%s: counter did not reach %llu within %d ms: %s (success %llu failure %llu)",
		     what, (unsigned long long)test, ms, rc_name(rc),
		     (unsigned long long)c.success, (unsigned long long)c.failure);
		return 0;
	}
	CHK_EQ(which, 0, "PtlCTPoll which");
	return 1;
}

static void ct_is(ptl_handle_ct_t ct, uint64_t succ, uint64_t fail, const char *what)
{
	ptl_ct_event_t c = { 99, 99 };
	char b[160];

	RC(PtlCTGet(ct, &c), PTL_OK);
	snprintf(b, sizeof(b), "%s: ct success", what);
	CHK_EQ(c.success, succ, b);
	snprintf(b, sizeof(b), "%s: ct failure", what);
	CHK_EQ(c.failure, fail, b);
}

#define PT_DATA 4		/* the portal index most cases use */
#define T_EV_MS 15000		/* waiting for an event that must come */

/* ------------------------------------------------------ put and get -- */

static const size_t sizes[] = { 8, 1024, SPIN_MAX_SEG, 65536, 1 << 20, 4 << 20 };
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define BIGBUF ((4 << 20) + 4096)
static const int ackm[3] = { PTL_ACK_REQ, PTL_CT_ACK_REQ, PTL_NO_ACK_REQ };
static const char *ackname[] = { "ACK_REQ", "NO_ACK_REQ", "CT_ACK_REQ", "OC_ACK_REQ" };

/* rank 0 puts every size into a window ME and a malloc ME of rank 1, with
 * every ack request, a local and a remote offset and header data */
static void c_put(void)
{
	char ctx[160];
	ptl_event_t ev;
	int i;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *buf[2][NSIZES];

		pt_new(0, eq, PT_DATA);
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++) {
				size_t len = sizes[s] + 64;

				buf[k][s] = kbuf(k, len + 64);
				memset(buf[k][s], 0xee, len + 64);
				me_add(PT_DATA, buf[k][s], len, PTL_ME_OP_PUT, 0x100 + k * 16 + s, 0,
				       PTL_CT_NONE, PTL_PRIORITY_LIST, (void *)(uintptr_t)(0x1000 + k * 16 + s));
			}
		barrier("put.ready");
		i = 0;
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++)
				for (int a = 0; a < 3; a++, i++) {
					size_t size = sizes[s], len = size + 64, roff = a * 24;
					uint8_t *b = buf[k][s];

					snprintf(ctx, sizeof(ctx), "put %zu B into %s ME, %s", size,
						 kname[k], ackname[ackm[a]]);
					if (want_ev(eq, &ev, T_EV_MS, ctx)) {
						CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
						      .ini = rank_proc(0), .pt = PT_DATA,
						      .mb = 0x100 + k * 16 + s, .rlen = size, .mlen = size,
						      .roff = roff, .hdr = ((uint64_t)i << 40) | 0xabcdef,
						      .uptr = (void *)(uintptr_t)(0x1000 + k * 16 + s),
						      .start = b + roff, .list = PTL_PRIORITY_LIST);
						check_byte(ctx, b, roff, 0xee);
						check_pat(ctx, b + roff, size, i + 1);
						check_byte(ctx, b + roff + size, len + 64 - roff - size, 0xee);
					}
					memset(b, 0xee, len + 64);
					barrierf("put.%d", i);
				}
		no_ev(eq, 50, "put target: no more events");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t ct = ct_new();
		uint8_t *src = kbuf(K_MAL, BIGBUF);
		ptl_handle_md_t md = md_new(src, BIGBUF, PTL_MD_EVENT_CT_ACK, eq, ct);
		uint64_t nct = 0;

		barrier("put.ready");
		i = 0;
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++)
				for (int a = 0; a < 3; a++, i++) {
					size_t size = sizes[s], roff = a * 24, lo = a * 8 + k * 3;
					void *uptr = (void *)(uintptr_t)(0x2000 + i);
					int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
					ptl_event_t evs[2];

					snprintf(ctx, sizeof(ctx), "put %zu B into %s ME, %s", size,
						 kname[k], ackname[ackm[a]]);
					fill(src + lo, size, i + 1);
					RC(PtlPut(md, lo, size, ackm[a], rank_proc(1), PT_DATA,
						  0x100 + k * 16 + s, roff, uptr,
						  ((uint64_t)i << 40) | 0xabcdef), PTL_OK);
					if (collect(eq, T_EV_MS, ackm[a] == PTL_ACK_REQ ? 2 : 1, want, evs, ctx)) {
						CHKEV(ctx, &evs[0], .m = SEND_M, .type = PTL_EVENT_SEND,
						      .mlen = size, .uptr = uptr);
						if (ackm[a] == PTL_ACK_REQ)
							CHKEV(ctx, &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK,
							      .mlen = size, .roff = roff, .uptr = uptr,
							      .list = PTL_PRIORITY_LIST);
					}
					if (ackm[a] != PTL_NO_ACK_REQ)
						ct_wait(ct, ++nct, T_EV_MS, ctx);
					barrierf("put.%d", i);
					if (ackm[a] != PTL_ACK_REQ)
						no_ev(eq, 20, ctx);
					ct_is(ct, nct, 0, ctx);
				}
		RC(PtlMDRelease(md), PTL_OK);
	}
	fini_ni();
}

/* rank 0 gets every size from a window ME and a malloc ME of rank 1 */
static void c_get(void)
{
	char ctx[160];
	ptl_event_t ev;
	int i;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *buf[2][NSIZES];

		pt_new(0, eq, PT_DATA);
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++) {
				size_t len = sizes[s] + 64;

				buf[k][s] = kbuf(k, len);
				fill(buf[k][s], len, 0x77 + k * 16 + s);
				me_add(PT_DATA, buf[k][s], len, PTL_ME_OP_GET, 0x200 + k * 16 + s, 0,
				       PTL_CT_NONE, PTL_PRIORITY_LIST, (void *)(uintptr_t)(0x3000 + k * 16 + s));
			}
		barrier("get.ready");
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++)
				for (int v = 0; v < 2; v++) {
					size_t size = sizes[s], ro = v * 40;

					snprintf(ctx, sizeof(ctx), "get %zu B from %s ME, remote offset %zu",
						 size, kname[k], ro);
					if (want_ev(eq, &ev, T_EV_MS, ctx))
						CHKEV(ctx, &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_GET,
						      .ini = rank_proc(0), .pt = PT_DATA,
						      .mb = 0x200 + k * 16 + s, .rlen = size, .mlen = size,
						      .roff = ro, .uptr = (void *)(uintptr_t)(0x3000 + k * 16 + s),
						      .start = buf[k][s] + ro, .list = PTL_PRIORITY_LIST);
				}
		barrier("get.done");
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++)
				check_pat("get target buffer unchanged", buf[k][s], sizes[s] + 64,
					  0x77 + k * 16 + s);
		no_ev(eq, 50, "get target: no more events");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t ct = ct_new();
		uint8_t *dst = kbuf(K_MAL, BIGBUF);
		ptl_handle_md_t md = md_new(dst, BIGBUF, PTL_MD_EVENT_CT_REPLY, eq, ct);
		uint64_t nct = 0;

		barrier("get.ready");
		i = 0;
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < NSIZES; s++)
				for (int v = 0; v < 2; v++, i++) {
					size_t size = sizes[s], ro = v * 40, lo = v * 5 + k;
					void *uptr = (void *)(uintptr_t)(0x4000 + i);

					snprintf(ctx, sizeof(ctx), "get %zu B from %s ME, remote offset %zu",
						 size, kname[k], ro);
					memset(dst, 0x5a, size + 128);
					RC(PtlGet(md, lo, size, rank_proc(1), PT_DATA, 0x200 + k * 16 + s, ro,
						  uptr), PTL_OK);
					if (want_ev(eq, &ev, T_EV_MS, ctx))
						CHKEV(ctx, &ev, .m = REPLY_M, .type = PTL_EVENT_REPLY,
						      .mlen = size, .roff = ro, .uptr = uptr);
					ct_wait(ct, ++nct, T_EV_MS, ctx);
					check_byte(ctx, dst, lo, 0x5a);
					check_pat_off(ctx, dst + lo, size, 0x77 + k * 16 + s, ro);
					check_byte(ctx, dst + lo + size, 64, 0x5a);
				}
		barrier("get.done");
		RC(PtlMDRelease(md), PTL_OK);
	}
	fini_ni();
}

/* ------------------------------------------------------- truncation -- */

#define OUTSIDE_RANK 99	/* a rank outside every map */

/* one put by rank 0 and its initiator events */
static void put_wait(ptl_handle_md_t md, ptl_handle_eq_t eq, size_t lo, size_t len, int ack,
		     ptl_rank_t to, ptl_pt_index_t pt, uint64_t mb, size_t roff, void *uptr,
		     uint64_t hdr, int want_fail, int64_t want_mlen, int list, const char *ctx)
{
	int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
	ptl_event_t evs[2];

	RC(PtlPut(md, lo, len, ack, rank_proc(to), pt, mb, roff, uptr, hdr), PTL_OK);
	if (!collect(eq, T_EV_MS, ack == PTL_ACK_REQ ? 2 : 1, want, evs, ctx))
		return;
	/* the SEND fails only when nothing could be sent (a rank outside the map) */
	CHKEV(ctx, &evs[0], .m = SEND_M & ~(want_fail ? F_MLEN : 0), .type = PTL_EVENT_SEND,
	      .mlen = len, .uptr = uptr, .fail = to == OUTSIDE_RANK ? PTL_NI_UNDELIVERABLE : 0);
	if (ack == PTL_ACK_REQ) {
		if (want_fail)
			CHKEV(ctx, &evs[1], .m = F_TYPE | F_UPTR | F_FAIL, .type = PTL_EVENT_ACK,
			      .uptr = uptr, .fail = want_fail);
		else
			CHKEV(ctx, &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = want_mlen,
			      .roff = roff, .uptr = uptr, .list = list);
	}
}

static void get_wait(ptl_handle_md_t md, ptl_handle_eq_t eq, size_t lo, size_t len, ptl_rank_t to,
		     ptl_pt_index_t pt, uint64_t mb, size_t roff, void *uptr, int want_fail,
		     int64_t want_mlen, const char *ctx)
{
	ptl_event_t ev;

	RC(PtlGet(md, lo, len, rank_proc(to), pt, mb, roff, uptr), PTL_OK);
	if (!want_ev(eq, &ev, T_EV_MS, ctx))
		return;
	if (want_fail)
		CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_FAIL, .type = PTL_EVENT_REPLY, .uptr = uptr,
		      .fail = want_fail);
	else
		CHKEV(ctx, &ev, .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = want_mlen, .roff = roff,
		      .uptr = uptr);
}

#define U(x) ((void *)(uintptr_t)(x))

static void c_truncate(void)
{
	char ctx[160];
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	for (int k = 0; k < 2; k++) {
		if (R == 1) {
			ptl_handle_eq_t eq = eq_new(64);
			uint8_t *t = kbuf(k, 1064), *nt = kbuf(k, 1064), *f = kbuf(k, 4000);
			ptl_handle_me_t fh;

			if (k == 0)
				pt_new(0, eq, PT_DATA);
			else
				pt_new(0, eq, PT_DATA + 1);
			memset(t, 0xee, 1064);
			memset(nt, 0xee, 1064);
			fill(t, 1000, 0x99);
			me_add(PT_DATA + k, t, 1000, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0x300, 0, PTL_CT_NONE,
			       PTL_PRIORITY_LIST, U(0x30));
			me_add(PT_DATA + k, nt, 1000, PTL_ME_OP_PUT | PTL_ME_NO_TRUNCATE, 0x310, 0,
			       PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x31));
			fh = me_add(PT_DATA + k, f, 4000, PTL_ME_OP_PUT, 0x310, 0, PTL_CT_NONE,
				    PTL_PRIORITY_LIST, U(0x32));
			barrierf("tr%d.ready", k);

			snprintf(ctx, sizeof(ctx), "%s: put 3000 B into a 1000 B ME", kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
				      .pt = PT_DATA + k, .mb = 0x300, .rlen = 3000, .mlen = 1000,
				      .hdr = 1, .uptr = U(0x30), .start = t);
			check_pat(ctx, t, 1000, 11);
			check_byte(ctx, t + 1000, 64, 0xee);
			barrierf("tr%d.1", k);

			snprintf(ctx, sizeof(ctx), "%s: put 1000 B at remote offset 600", kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
				      .pt = PT_DATA + k, .mb = 0x300, .rlen = 1000, .mlen = 400,
				      .roff = 600, .hdr = 2, .uptr = U(0x30), .start = t + 600);
			check_pat(ctx, t, 600, 11);
			check_pat(ctx, t + 600, 400, 12);
			check_byte(ctx, t + 1000, 64, 0xee);
			barrierf("tr%d.2", k);

			snprintf(ctx, sizeof(ctx), "%s: get 2000 B at remote offset 200", kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_GET,
				      .ini = rank_proc(0), .pt = PT_DATA + k, .mb = 0x300, .rlen = 2000,
				      .mlen = 800, .roff = 200, .uptr = U(0x30), .start = t + 200);
			barrierf("tr%d.3", k);

			snprintf(ctx, sizeof(ctx), "%s: put 3000 B, NO_TRUNCATE ME skipped", kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
				      .pt = PT_DATA + k, .mb = 0x310, .rlen = 3000, .mlen = 3000,
				      .hdr = 4, .uptr = U(0x32), .start = f);
			check_pat(ctx, f, 3000, 14);
			check_byte(ctx, nt, 1064, 0xee);
			barrierf("tr%d.4", k);

			snprintf(ctx, sizeof(ctx), "%s: put 800 B into the NO_TRUNCATE ME", kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
				      .pt = PT_DATA + k, .mb = 0x310, .rlen = 800, .mlen = 800,
				      .hdr = 5, .uptr = U(0x31), .start = nt);
			check_pat(ctx, nt, 800, 15);
			check_byte(ctx, nt + 800, 264, 0xee);
			RC(PtlMEUnlink(fh), PTL_OK);
			barrierf("tr%d.5", k);
			barrierf("tr%d.6", k);
			no_ev(eq, 50, "no event for a message that did not fit the NO_TRUNCATE ME");
		} else if (R == 0) {
			ptl_handle_eq_t eq = eq_new(64);
			uint8_t *src = kbuf(K_MAL, 8192);
			ptl_handle_md_t md = md_new(src, 8192, 0, eq, PTL_CT_NONE);

			barrierf("tr%d.ready", k);
			fill(src, 3000, 11);
			put_wait(md, eq, 0, 3000, PTL_ACK_REQ, 1, PT_DATA + k, 0x300, 0, U(1), 1, 0, 1000,
				 PTL_PRIORITY_LIST, "truncated put");
			barrierf("tr%d.1", k);
			fill(src, 1000, 12);
			put_wait(md, eq, 0, 1000, PTL_ACK_REQ, 1, PT_DATA + k, 0x300, 600, U(2), 2, 0, 400,
				 PTL_PRIORITY_LIST, "truncated put at offset");
			barrierf("tr%d.2", k);
			memset(src, 0x5a, 8192);
			get_wait(md, eq, 100, 2000, 1, PT_DATA + k, 0x300, 200, U(3), 0, 800,
				 "truncated get");
			check_byte("truncated get", src, 100, 0x5a);
			check_pat_off("truncated get", src + 100, 400, 11, 200);
			check_pat_off("truncated get", src + 500, 400, 12, 0);
			check_byte("truncated get: beyond mlength", src + 900, 2000, 0x5a);
			barrierf("tr%d.3", k);
			fill(src, 3000, 14);
			put_wait(md, eq, 0, 3000, PTL_ACK_REQ, 1, PT_DATA + k, 0x310, 0, U(4), 4, 0, 3000,
				 PTL_PRIORITY_LIST, "put past NO_TRUNCATE");
			barrierf("tr%d.4", k);
			fill(src, 800, 15);
			put_wait(md, eq, 0, 800, PTL_ACK_REQ, 1, PT_DATA + k, 0x310, 0, U(5), 5, 0, 800,
				 PTL_PRIORITY_LIST, "put into NO_TRUNCATE");
			barrierf("tr%d.5", k);
			fill(src, 3000, 16);
			put_wait(md, eq, 0, 3000, PTL_ACK_REQ, 1, PT_DATA + k, 0x310, 0, U(6), 6,
				 PTL_NI_DROPPED, 0, 0, "NO_TRUNCATE, no other ME: dropped");
			barrierf("tr%d.6", k);
		}
	}
	fini_ni();
}

/* ------------------------------------------ use once, manage local -- */

static void c_useonce(void)
{
	char ctx[160];

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *u1 = kbuf(K_WIN, 2000), *v1 = kbuf(K_MAL, 2000);
		uint8_t *u2 = kbuf(K_MAL, 2000), *v2 = kbuf(K_WIN, 2000);
		ptl_handle_me_t hu1, hv1, hu2;

		pt_new(0, eq, PT_DATA);
		hu1 = me_add(PT_DATA, u1, 2000, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x11, 0, PTL_CT_NONE,
			     PTL_PRIORITY_LIST, U(0xa1));
		hv1 = me_add(PT_DATA, v1, 2000, PTL_ME_OP_PUT, 0x11, 0, PTL_CT_NONE, PTL_PRIORITY_LIST,
			     U(0xb1));
		hu2 = me_add(PT_DATA, u2, 2000, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x12, 0, PTL_CT_NONE,
			     PTL_PRIORITY_LIST, U(0xa2));
		me_add(PT_DATA, v2, 2000, PTL_ME_OP_PUT, 0x12, 0, PTL_CT_NONE, PTL_PRIORITY_LIST,
		       U(0xb2));
		barrier("uo.ready");
		barrier("uo.sent");
		for (int round = 0; round < 2; round++) {
			int want[4] = { PTL_EVENT_PUT, PTL_EVENT_AUTO_UNLINK, PTL_EVENT_PUT,
					PTL_EVENT_AUTO_FREE };
			ptl_event_t evs[4], *e1, *e2;
			uint64_t mb = 0x11 + round;
			void *uu = U(0xa1 + round), *uv = U(0xb1 + round);
			uint8_t *bu = round ? u2 : u1, *bv = round ? v2 : v1;

			snprintf(ctx, sizeof(ctx), "use-once %s ME, then persistent %s ME",
				 kname[round], kname[!round]);
			if (!collect(eq, T_EV_MS, 4, want, evs, ctx))
				continue;
			e1 = evs[0].hdr_data == (uint64_t)(1 + 2 * round) ? &evs[0] : &evs[2];
			e2 = e1 == &evs[0] ? &evs[2] : &evs[0];
			CHKEV(ctx, e1, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0), .pt = PT_DATA,
			      .mb = mb, .rlen = 500, .mlen = 500, .hdr = 1 + 2 * round, .uptr = uu,
			      .start = bu);
			CHKEV(ctx, &evs[1], .m = F_TYPE | F_PT | F_UPTR | F_FAIL, .type = PTL_EVENT_AUTO_UNLINK,
			      .pt = PT_DATA, .uptr = uu);
			CHKEV(ctx, &evs[3], .m = F_TYPE | F_PT | F_UPTR | F_FAIL, .type = PTL_EVENT_AUTO_FREE,
			      .pt = PT_DATA, .uptr = uu);
			CHKEV(ctx, e2, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0), .pt = PT_DATA,
			      .mb = mb, .rlen = 700, .mlen = 700, .hdr = 2 + 2 * round, .uptr = uv,
			      .start = bv);
			check_pat(ctx, bu, 500, 1 + 2 * round);
			check_pat(ctx, bv, 700, 2 + 2 * round);
		}
		RC(PtlMEUnlink(hu1), PTL_ARG_INVALID);	/* auto-unlinked: stale */
		RC(PtlMEUnlink(hu2), PTL_ARG_INVALID);
		RC(PtlMEUnlink(hv1), PTL_OK);
		RC(PtlMEUnlink(hv1), PTL_ARG_INVALID);
		barrier("uo.unlinked");
		barrier("uo.done");
		no_ev(eq, 50, "explicit unlink, dropped put: no event");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("uo.ready");
		for (int round = 0; round < 2; round++) {
			fill(src, 500, 1 + 2 * round);
			put_wait(md, eq, 0, 500, PTL_ACK_REQ, 1, PT_DATA, 0x11 + round, 0, U(1), 1 + 2 * round,
				 0, 500, PTL_PRIORITY_LIST, "use-once: first put");
			fill(src, 700, 2 + 2 * round);
			put_wait(md, eq, 0, 700, PTL_ACK_REQ, 1, PT_DATA, 0x11 + round, 0, U(2), 2 + 2 * round,
				 0, 700, PTL_PRIORITY_LIST, "use-once: second put");
		}
		barrier("uo.sent");
		barrier("uo.unlinked");
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 0x11, 0, U(3), 9, PTL_NI_DROPPED, 0, 0,
			 "put after unlinking both entries");
		barrier("uo.done");
	}
	fini_ni();
}

static void c_managelocal(void)
{
	char ctx[160];

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *m1 = kbuf(K_WIN, 4096), *m2 = kbuf(K_MAL, 4096);
		int seen[7] = { 0 }, unlinked = 0;

		pt_new(0, eq, PT_DATA);
		memset(m1, 0xee, 4096);
		memset(m2, 0xee, 4096);
		for (int k = 0; k < 2; k++) {
			ptl_me_t me;
			ptl_handle_me_t h;

			memset(&me, 0, sizeof(me));
			me.start = k ? m2 : m1;
			me.length = 4000;
			me.ct_handle = PTL_CT_NONE;
			me.uid = PTL_UID_ANY;
			me.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL;
			me.match_id = any_proc();
			me.match_bits = 0x21;
			me.min_free = 1000;
			OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(0xc1 + k), &h));
		}
		barrier("ml.ready");
		barrier("ml.sent");
		for (int n = 0; n < 9; n++) {
			ptl_event_t ev;

			if (!want_ev(eq, &ev, T_EV_MS, "manage local: 7 puts, one auto-unlink and free"))
				break;
			if (ev.type == PTL_EVENT_AUTO_UNLINK || ev.type == PTL_EVENT_AUTO_FREE) {
				CHKEV("manage local: auto unlink", &ev, .m = F_TYPE | F_PT | F_UPTR | F_FAIL,
				      .type = ev.type == PTL_EVENT_AUTO_FREE && unlinked == 1 ?
					      PTL_EVENT_AUTO_FREE : PTL_EVENT_AUTO_UNLINK,
				      .pt = PT_DATA, .uptr = U(0xc1));
				unlinked++;
				continue;
			}
			int i = (int)ev.hdr_data;

			if (i < 0 || i > 6 || seen[i]++) {
				FAIL("manage local: unexpected event");
				dump_ev("unexpected", &ev);
				continue;
			}
			snprintf(ctx, sizeof(ctx), "manage local: put %d", i);
			LOG("manage local: put %d remote_offset %llu", i, (unsigned long long)ev.remote_offset);
			CHKEV(ctx, &ev, .m = TGT_M & ~F_ROFF, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
			      .pt = PT_DATA, .mb = 0x21, .rlen = 1000, .mlen = 1000, .hdr = i,
			      .uptr = U(i < 4 ? 0xc1 : 0xc2),
			      .start = i < 4 ? m1 + 1000 * i : m2 + 1000 * (i - 4));
		}
		CHK_EQ(unlinked, 2, "manage local: AUTO_UNLINK and AUTO_FREE (free space 96 < min_free 1000)");
		for (int i = 0; i < 7; i++) {
			snprintf(ctx, sizeof(ctx), "manage local: bytes of put %d", i);
			check_pat(ctx, i < 4 ? m1 + 1000 * i : m2 + 1000 * (i - 4), 1000, 50 + i);
		}
		check_byte("manage local: rest of the first ME", m1 + 4000, 96, 0xee);
		check_byte("manage local: rest of the second ME", m2 + 3000, 1096, 0xee);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("ml.ready");
		for (int i = 0; i < 7; i++) {
			fill(src, 1000, 50 + i);
			put_wait(md, eq, 0, 1000, PTL_ACK_REQ, 1, PT_DATA, 0x21, 0, U(i + 1), i, 0, 1000,
				 PTL_PRIORITY_LIST, "manage local put");
		}
		barrier("ml.sent");
	}
	fini_ni();
}

/* --------------------------------------------- overflow and search -- */

static ptl_me_t me_spec(void *start, size_t len, unsigned opts, uint64_t mb, uint64_t ign)
{
	ptl_me_t me;

	memset(&me, 0, sizeof(me));
	me.start = start;
	me.length = len;
	me.ct_handle = PTL_CT_NONE;
	me.uid = PTL_UID_ANY;
	me.options = opts;
	me.match_id = any_proc();
	me.match_bits = mb;
	me.ignore_bits = ign;
	return me;
}

static void c_overflow(void)
{
	/* bits, length, hdr_data of the unexpected puts; 0x1xx: window overflow
	 * ME, 0x2xx: malloc overflow ME (both locally managed: back to back) */
	static const struct { uint64_t mb; size_t len; } m[5] = {
		{ 0x101, 600 }, { 0x102, 1500 }, { 0x201, 600 }, { 0x202, 1500 }, { 0x203, 100 } };
	static const size_t at[5] = { 0, 600, 0, 600, 2100 };
	char ctx[160];
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *ov[2] = { kbuf(K_WIN, 16384), kbuf(K_MAL, 16384) };
		uint8_t *p1 = kbuf(K_WIN, 4096), *p2 = kbuf(K_MAL, 4096), *p3 = kbuf(K_MAL, 4096);
		int seen[5] = { 0 };
		ptl_me_t me;

		pt_new(0, eq, PT_DATA);
		for (int k = 0; k < 2; k++) {
			ptl_handle_me_t h;

			me = me_spec(ov[k], 16384, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL, 0x100 * (k + 1), 0xff);
			OK(PtlMEAppend(ni, PT_DATA, &me, PTL_OVERFLOW_LIST, U(0xf1 + k), &h));
		}
		barrier("ov.ready");
		barrier("ov.sent");
		for (int n = 0; n < 5; n++) {
			int i;

			if (!want_ev(eq, &ev, T_EV_MS, "unexpected puts on the overflow list"))
				break;
			i = (int)ev.hdr_data - 1;
			if (i < 0 || i > 4 || seen[i]++) {
				FAIL("overflow: unexpected event");
				dump_ev("unexpected", &ev);
				continue;
			}
			snprintf(ctx, sizeof(ctx), "unexpected put %d (bits 0x%llx) on the overflow ME", i,
				 (unsigned long long)m[i].mb);
			CHKEV(ctx, &ev, .m = TGT_M & ~F_ROFF, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
			      .pt = PT_DATA, .mb = m[i].mb, .rlen = m[i].len, .mlen = m[i].len,
			      .hdr = i + 1, .uptr = U(0xf1 + (i >= 2)), .start = ov[i >= 2] + at[i],
			      .list = PTL_OVERFLOW_LIST);
			check_pat(ctx, ov[i >= 2] + at[i], m[i].len, 70 + i);
		}
		/* priority entries that match unexpected messages */
		me_add(PT_DATA, p1, 4096, PTL_ME_OP_PUT, 0x101, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0xe1));
		snprintf(ctx, sizeof(ctx), "PtlMEAppend (window) matching an unexpected put");
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M & ~(F_ROFF | F_LIST), .type = PTL_EVENT_PUT_OVERFLOW,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 0x101, .rlen = 600, .mlen = 600,
			      .hdr = 1, .uptr = U(0xe1), .start = ov[0]);
		me_add(PT_DATA, p2, 4096, PTL_ME_OP_PUT, 0x201, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0xe2));
		snprintf(ctx, sizeof(ctx), "PtlMEAppend (malloc) matching an unexpected put");
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M & ~(F_ROFF | F_LIST), .type = PTL_EVENT_PUT_OVERFLOW,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 0x201, .rlen = 600, .mlen = 600,
			      .hdr = 3, .uptr = U(0xe2), .start = ov[1]);
		no_ev(eq, 50, "one PUT_OVERFLOW per unexpected message");

		/* search */
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x202, 0);
		for (int s = 0; s < 2; s++) {
			snprintf(ctx, sizeof(ctx), "PtlMESearch SEARCH_ONLY bits 0x202 (%d)", s);
			RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_ONLY, U(0xd0 + s)), PTL_OK);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M & ~(F_ROFF | F_LIST), .type = PTL_EVENT_SEARCH,
				      .ini = rank_proc(0), .pt = PT_DATA, .mb = 0x202, .rlen = 1500,
				      .mlen = 1500, .hdr = 4, .uptr = U(0xd0 + s), .start = ov[1] + 600);
		}
		/* a persistent search reports every match, oldest first; a
		 * use-once search the first only */
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x200, 0xf);
		RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_ONLY, U(0xda)), PTL_OK);
		for (int s = 0; s < 2; s++) {
			snprintf(ctx, sizeof(ctx), "PtlMESearch SEARCH_ONLY with ignore bits: match %d", s);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_FAIL | F_MB | F_HDR,
				      .type = PTL_EVENT_SEARCH, .uptr = U(0xda), .fail = PTL_NI_OK,
				      .mb = 0x202 + s, .hdr = 4 + s);
		}
		me.options |= PTL_ME_USE_ONCE;
		RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_ONLY, U(0xdb)), PTL_OK);
		snprintf(ctx, sizeof(ctx), "PtlMESearch SEARCH_ONLY use-once with ignore bits");
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_FAIL | F_MB | F_HDR,
			      .type = PTL_EVENT_SEARCH, .uptr = U(0xdb), .fail = PTL_NI_OK, .mb = 0x202,
			      .hdr = 4);
		no_ev(eq, 50, "one SEARCH per match");
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x202, 0);
		/* Portals 4.1: SEARCH_DELETE reports a match with the overflow
		 * event (as an append would), SEARCH only when nothing matched */
		snprintf(ctx, sizeof(ctx), "PtlMESearch SEARCH_DELETE bits 0x202");
		RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_DELETE, U(0xd2)), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M & ~(F_ROFF | F_LIST), .type = PTL_EVENT_PUT_OVERFLOW,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 0x202, .rlen = 1500, .mlen = 1500,
			      .hdr = 4, .uptr = U(0xd2), .start = ov[1] + 600);
		snprintf(ctx, sizeof(ctx), "PtlMESearch SEARCH_ONLY after SEARCH_DELETE");
		RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_ONLY, U(0xd3)), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_FAIL, .type = PTL_EVENT_SEARCH,
			      .uptr = U(0xd3), .fail = PTL_NI_NO_MATCH);
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x999, 0);
		snprintf(ctx, sizeof(ctx), "PtlMESearch of bits never sent");
		RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_DELETE, U(0xd4)), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_FAIL, .type = PTL_EVENT_SEARCH,
			      .uptr = U(0xd4), .fail = PTL_NI_NO_MATCH);
		/* wildcard search with ignore bits finds 0x203 (0x202 is gone) */
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x200, 0xf);
		snprintf(ctx, sizeof(ctx), "PtlMESearch SEARCH_DELETE with ignore bits");
		RC(PtlMESearch(ni, PT_DATA, &me, PTL_SEARCH_DELETE, U(0xd5)), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M & ~(F_ROFF | F_LIST), .type = PTL_EVENT_PUT_OVERFLOW,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 0x203, .rlen = 100, .mlen = 100,
			      .hdr = 5, .uptr = U(0xd5), .start = ov[1] + 2100);
		/* deleted: a new priority ME for 0x202/0x203 sees no overflow event */
		me_add(PT_DATA, p3, 4096, PTL_ME_OP_PUT, 0x202, 0x1, PTL_CT_NONE, PTL_PRIORITY_LIST,
		       U(0xe3));
		no_ev(eq, 100, "append after SEARCH_DELETE");
		barrier("ov.appended");
		barrier("ov.sent2");
		snprintf(ctx, sizeof(ctx), "expected put into the priority ME");
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0), .pt = PT_DATA,
			      .mb = 0x101, .rlen = 800, .mlen = 800, .hdr = 6, .uptr = U(0xe1), .start = p1,
			      .list = PTL_PRIORITY_LIST);
		check_pat(ctx, p1, 800, 76);
		no_ev(eq, 50, "overflow: no more events");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("ov.ready");
		for (int i = 0; i < 5; i++) {
			fill(src, m[i].len, 70 + i);
			put_wait(md, eq, 0, m[i].len, PTL_ACK_REQ, 1, PT_DATA, m[i].mb, 0, U(i + 1), i + 1,
				 0, m[i].len, PTL_OVERFLOW_LIST, "unexpected put");
		}
		barrier("ov.sent");
		barrier("ov.appended");
		fill(src, 800, 76);
		put_wait(md, eq, 0, 800, PTL_ACK_REQ, 1, PT_DATA, 0x101, 0, U(6), 6, 0, 800,
			 PTL_PRIORITY_LIST, "expected put");
		barrier("ov.sent2");
	}
	fini_ni();
}

/* ----------------------------------------------------- flow control -- */

static void c_flowctl(void)
{
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *a = kbuf(K_WIN, 4096), *b = kbuf(K_MAL, 4096);

		RC(PtlPTAlloc(ni, PTL_PT_FLOWCTRL, PTL_EQ_NONE, PT_DATA, &(ptl_pt_index_t){ 0 }),
		   PTL_PT_EQ_NEEDED);
		pt_new(PTL_PT_FLOWCTRL, eq, PT_DATA);
		me_add(PT_DATA, a, 4096, PTL_ME_OP_PUT, 1, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x71));
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT, 3, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x73));
		barrier("fc.ready");
		barrier("fc.nacked");
		if (want_ev(eq, &ev, T_EV_MS, "flow control: PT_DISABLED event"))
			CHKEV("flow control", &ev, .m = F_TYPE | F_PT | F_FAIL, .type = PTL_EVENT_PT_DISABLED,
			      .pt = PT_DATA, .fail = PTL_NI_PT_DISABLED);
		no_ev(eq, 100, "flow control: one PT_DISABLED event, nothing delivered");
		RC(PtlPTEnable(ni, PT_DATA), PTL_OK);
		barrier("fc.enabled");
		barrier("fc.sent");
		for (int k = 0; k < 2; k++) {
			int w = -1;

			if (!want_ev(eq, &ev, T_EV_MS, "flow control: delivery after PtlPTEnable"))
				break;
			w = ev.match_bits == 3;
			CHKEV("after PtlPTEnable", &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
			      .pt = PT_DATA, .mb = w ? 3 : 1, .rlen = 100, .mlen = 100, .hdr = w ? 4 : 3,
			      .uptr = U(w ? 0x73 : 0x71), .start = w ? b : a);
			check_pat("after PtlPTEnable", w ? b : a, 100, w ? 4 : 3);
		}
		RC(PtlPTDisable(ni, PT_DATA), PTL_OK);
		barrier("fc.disabled");
		barrier("fc.sent2");
		no_ev(eq, 100, "explicitly disabled portal: nothing delivered");
		RC(PtlPTEnable(ni, PT_DATA), PTL_OK);
		barrier("fc.enabled2");
		barrier("fc.sent3");
		if (want_ev(eq, &ev, T_EV_MS, "delivery after the second PtlPTEnable"))
			CHKEV("after the second PtlPTEnable", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 1, .rlen = 100, .mlen = 100,
			      .hdr = 6, .uptr = U(0x71), .start = a);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("fc.ready");
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 2, 0, U(1), 1, PTL_NI_PT_DISABLED, 0, 0,
			 "flow control: put without a match");
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(2), 2, PTL_NI_PT_DISABLED, 0, 0,
			 "flow control: put to a disabled portal");
		barrier("fc.nacked");
		barrier("fc.enabled");
		fill(src, 100, 3);
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(3), 3, 0, 100, PTL_PRIORITY_LIST,
			 "flow control: put after PtlPTEnable (window ME)");
		fill(src, 100, 4);
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 3, 0, U(4), 4, 0, 100, PTL_PRIORITY_LIST,
			 "flow control: put after PtlPTEnable (malloc ME)");
		barrier("fc.sent");
		barrier("fc.disabled");
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(5), 5, PTL_NI_PT_DISABLED, 0, 0,
			 "put to a portal disabled with PtlPTDisable");
		barrier("fc.sent2");
		barrier("fc.enabled2");
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(6), 6, 0, 100, PTL_PRIORITY_LIST,
			 "put after the second PtlPTEnable");
		barrier("fc.sent3");
	}
	fini_ni();
}

/*
 * Flow control on resource exhaustion (PTL_PT_FLOWCTRL): a full event
 * queue (fc_eqfull) and a full unexpected list (fc_unex,
 * max_unexpected_headers) disable the portal instead of dropping events:
 * PTL_EVENT_PT_DISABLED in the queue's last slot, every later put acked
 * with PTL_NI_PT_DISABLED, no PTL_EQ_DROPPED; PtlPTEnable takes puts again.
 * Round 0: a host-window entry (the runtime acks a put before the library
 * sees its event, so more puts may get in before the library disables the
 * portal: their events wait for room, none is lost; the portal is
 * disabled once the library has seen the events); round 1: an
 * ordinary-memory entry (exactly the queue's size less one are taken).
 */
#define FC_EQ 8
static void fc_run(bool unex)
{
	int cap = unex ? lim.max_unexpected_headers + 64 : FC_EQ;
	int maxput = unex ? lim.max_unexpected_headers + 16 : 3 * FC_EQ;
	char ctx[128];

	for (int round = 0; round < 2; round++) {
		int n_ok = 0;

		if (unex && round == 0)
			continue;	/* the window entry's extra puts: see above */
		if (R == 1) {
			ptl_handle_eq_t eq = eq_new((ptl_size_t)cap);
			uint8_t *b = kbuf(round ? K_MAL : K_WIN, 4096);
			ptl_handle_me_t me;
			ptl_event_t ev;
			int nput = 0, ndis = 0, rc;

			pt_new(PTL_PT_FLOWCTRL, eq, PT_DATA);
			me = me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 1, 0,
				    PTL_CT_NONE, unex ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST, U(0x71));
			barrierf("fc%d.ready", round);
			barrierf("fc%d.sent", round);
			get_file("fc.nok", &n_ok, sizeof(n_ok));
			snprintf(ctx, sizeof(ctx), "%s, %s entry: %d puts taken",
				 unex ? "unexpected list full" : "event queue full", kname[!!round], n_ok);
			while ((rc = eq_next(eq, &ev, 300)) != PTL_EQ_EMPTY) {
				CHK(rc == PTL_OK, "%s: no event dropped", ctx);
				if (ev.type == PTL_EVENT_PUT) {
					CHK_EQ(ev.hdr_data, (uint64_t)nput, ctx);
					nput++;
				} else if (CHK(ev.type == PTL_EVENT_PT_DISABLED, "%s: event %s", ctx,
					       ev_name(ev.type))) {
					CHK_EQ(ev.pt_index, PT_DATA, ctx);
					CHK_EQ(ev.ni_fail_type, PTL_NI_PT_DISABLED, ctx);
					CHK(nput >= (unex ? lim.max_unexpected_headers : FC_EQ - 1),
					    "%s: PT_DISABLED after %d puts", ctx, nput);
					ndis++;
				}
			}
			CHK_EQ(nput, n_ok, ctx);
			CHK_EQ(ndis, 1, "one PT_DISABLED event");
			barrierf("fc%d.drained", round);
			barrierf("fc%d.refused", round);
			if (round == 1)	/* acked after the library's check: exact */
				CHK_EQ(n_ok, unex ? lim.max_unexpected_headers : FC_EQ - 1, ctx);
			RC(PtlMEUnlink(me), PTL_OK);
			/* (the headers stay on the unexpected list: not searched) */
			me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE |
			       PTL_ME_UNEXPECTED_HDR_DISABLE, 1, 0, PTL_CT_NONE, PTL_PRIORITY_LIST,
			       U(0x72));
			RC(PtlPTEnable(ni, PT_DATA), PTL_OK);
			barrierf("fc%d.enabled", round);
			barrierf("fc%d.sent2", round);
			if (want_ev(eq, &ev, T_EV_MS, "put after PtlPTEnable"))
				CHKEV(ctx, &ev, .m = F_TYPE | F_PT | F_UPTR | F_FAIL, .type = PTL_EVENT_PUT,
				      .pt = PT_DATA, .uptr = U(0x72));
			barrierf("fc%d.done", round);
			fini_ni();	/* the next round from scratch (unexpected list, portal) */
			init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
		} else if (R == 0) {
			ptl_handle_eq_t eq = eq_new(64);
			uint8_t *src = kbuf(K_MAL, 4096);
			ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);
			int k, ndis = 0;

			barrierf("fc%d.ready", round);
			for (k = 0; k < maxput && ndis < 3 && !failed; k++) {
				int w[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
				ptl_event_t evs[2];

				RC(PtlPut(md, 0, 64, PTL_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, U(k + 1),
					  (uint64_t)n_ok), PTL_OK);
				if (!collect(eq, T_EV_MS, 2, w, evs, "flow control put"))
					break;
				if (evs[1].ni_fail_type == PTL_NI_OK && !ndis)
					n_ok++;
				else
					CHK(evs[1].ni_fail_type == PTL_NI_PT_DISABLED && ++ndis,
					    "put %d after the portal was disabled: %s", k,
					    fail_name(evs[1].ni_fail_type));
			}
			if (round == 1)
				CHK(ndis == 3, "puts acked PT_DISABLED after %d taken", n_ok);
			put_file("fc.nok", &n_ok, sizeof(n_ok));
			barrierf("fc%d.sent", round);
			barrierf("fc%d.drained", round);
			/* the library has seen every event: the portal is off */
			put_wait(md, eq, 0, 64, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(0x98), 98,
				 PTL_NI_PT_DISABLED, 0, 0, "put to the flow-controlled portal");
			barrierf("fc%d.refused", round);
			barrierf("fc%d.enabled", round);
			put_wait(md, eq, 0, 64, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(0x99), 99, 0, 64,
				 PTL_PRIORITY_LIST, "put after PtlPTEnable");
			barrierf("fc%d.sent2", round);
			barrierf("fc%d.done", round);
			fini_ni();
			init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
		}
	}
	fini_ni();
}

static void c_fc_eqfull(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	fc_run(false);
}

static void c_fc_unex(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	fc_run(true);
}

/* fc_unex with max_unexpected_headers 40 asked for in PtlNIInit */
static void c_fc_unex_small(void)
{
	static ptl_ni_limits_t w;

	memset(&w, 0xff, sizeof(w));	/* every other one: spin's (-1, PTL_SIZE_MAX) */
	w.max_unexpected_headers = 40;
	want_lim = &w;
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	CHK_EQ(lim.max_unexpected_headers, 40, "max_unexpected_headers as desired");
	fc_run(true);
}

/*
 * limits: PtlNIInit's desired limits are what the NI gets (clamped to
 * spin's: more than spin has gives spin's), reported in actual, the same
 * for a second PtlNIInit of the NI, per NI (the non-matching NI has its
 * own), and enforced with the specification's return codes, each at
 * exactly its value.  Then the return codes of the frees: PtlEQFree of a
 * queue a portal still names is PTL_OK (what the specification lists; the
 * portal's events go nowhere), PtlMDRelease of an MD a triggered operation
 * will use is PTL_IN_USE until it is cancelled.
 */
static void c_limits(void)
{
	ptl_ni_limits_t w, got, nl, big;
	ptl_handle_ni_t ni2, nni;
	ptl_handle_eq_t eqs[3];
	ptl_handle_ct_t cts[3];
	ptl_handle_md_t mds[4], h;
	ptl_handle_me_t me;
	ptl_pt_index_t pt;
	ptl_iovec_t iov[3];
	ptl_ct_event_t inc = { 1, 0 };
	uint8_t *buf = kbuf(K_MAL, 4096);
	ptl_me_t ms;
	ptl_md_t md;
	ptl_event_t ev;
	int n;

	memset(&w, 0xff, sizeof(w));
	w.max_entries = 6;
	w.max_unexpected_headers = 7;
	w.max_mds = 3;
	w.max_cts = 2;
	w.max_eqs = 2;
	w.max_pt_index = 3;
	w.max_iovecs = 2;
	w.max_list_size = 4;
	w.max_triggered_ops = 2;
	w.max_msg_size = 1000;
	w.max_atomic_size = 16;
	w.max_fetch_atomic_size = 8;
	want_lim = &w;
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	want_lim = NULL;
	CHK_EQ(lim.max_entries, 6, "max_entries");
	CHK_EQ(lim.max_unexpected_headers, 7, "max_unexpected_headers");
	CHK_EQ(lim.max_mds, 3, "max_mds");
	CHK_EQ(lim.max_cts, 2, "max_cts");
	CHK_EQ(lim.max_eqs, 2, "max_eqs");
	CHK_EQ(lim.max_pt_index, 3, "max_pt_index");
	CHK_EQ(lim.max_iovecs, 2, "max_iovecs");
	CHK_EQ(lim.max_list_size, 4, "max_list_size");
	CHK_EQ(lim.max_triggered_ops, 2, "max_triggered_ops");
	CHK_EQ(lim.max_msg_size, 1000, "max_msg_size");
	CHK_EQ(lim.max_atomic_size, 16, "max_atomic_size");
	CHK_EQ(lim.max_fetch_atomic_size, 8, "max_fetch_atomic_size");
	/* -1 and PTL_SIZE_MAX: spin's */
	CHK_EQ(lim.max_waw_ordered_size, 1376, "max_waw_ordered_size: spin's");
	/* a second PtlNIInit of the NI: the same limits, whatever it asks */
	memset(&big, 0, sizeof(big));
	OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, &big, &got,
		     &ni2));
	CHK(!memcmp(&got, &lim, sizeof(got)), "a second PtlNIInit gets the NI's limits");
	RC(PtlNIFini(ni2), PTL_OK);
	/* the non-matching NI: its own; more than spin has gives spin's */
	memset(&big, 0x7f, sizeof(big));
	OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, &big, &nl,
		     &nni));
	CHK_EQ(nl.max_eqs, 64, "max_eqs: spin's (PTL_N_EQ)");
	CHK_EQ(nl.max_entries, 131072, "max_entries: spin's");
	CHK_EQ(nl.max_unexpected_headers, 131072, "max_unexpected_headers: spin's most");
	CHK_EQ(nl.max_pt_index, SPIN_PT_PER_PROC / 2 - 1, "max_pt_index: spin's");
	CHK_EQ(nl.max_msg_size, SPIN_MAX_MSG, "max_msg_size: spin's");

	/* event queues: max_eqs, and the other NI's are its own */
	for (n = 0; n < 2; n++)
		OK(PtlEQAlloc(ni, 16, &eqs[n]));
	RC(PtlEQAlloc(ni, 16, &eqs[2]), PTL_NO_SPACE);
	OK(PtlEQAlloc(nni, 16, &eqs[2]));
	RC(PtlEQFree(eqs[2]), PTL_OK);
	/* counters */
	for (n = 0; n < 2; n++)
		OK(PtlCTAlloc(ni, &cts[n]));
	RC(PtlCTAlloc(ni, &cts[2]), PTL_NO_SPACE);
	/* memory descriptors; iovecs */
	iov[0] = (ptl_iovec_t){ buf, 8 };
	iov[1] = (ptl_iovec_t){ buf + 8, 8 };
	iov[2] = (ptl_iovec_t){ buf + 16, 8 };
	md = (ptl_md_t){ iov, 3, PTL_IOVEC, PTL_EQ_NONE, PTL_CT_NONE };
	RC(PtlMDBind(ni, &md, &h), PTL_ARG_INVALID);
	md.length = 2;
	OK(PtlMDBind(ni, &md, &mds[0]));
	mds[1] = md_new(buf, 4096, 0, eqs[0], PTL_CT_NONE);
	mds[2] = md_new(buf, 4096, 0, PTL_EQ_NONE, PTL_CT_NONE);
	md = (ptl_md_t){ buf, 64, 0, PTL_EQ_NONE, PTL_CT_NONE };
	RC(PtlMDBind(ni, &md, &mds[3]), PTL_NO_SPACE);
	RC(PtlMDRelease(mds[0]), PTL_OK);
	/* portal indexes 0..3 */
	RC(PtlPTAlloc(ni, 0, eqs[0], 4, &pt), PTL_ARG_INVALID);
	for (n = 0; n < 4; n++) {
		OK(PtlPTAlloc(ni, 0, eqs[0], PTL_PT_ANY, &pt));
		CHK_EQ(pt, (ptl_pt_index_t)n, "PTL_PT_ANY");
	}
	RC(PtlPTAlloc(ni, 0, eqs[0], PTL_PT_ANY, &pt), PTL_PT_FULL);
	/* entries: 4 on a portal (max_list_size), 6 in all (max_entries) */
	ms = me_spec(buf, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 0x5, 0);
	for (n = 0; n < 4; n++)
		OK(PtlMEAppend(ni, 0, &ms, PTL_PRIORITY_LIST, NULL, &me));
	RC(PtlMEAppend(ni, 0, &ms, PTL_OVERFLOW_LIST, NULL, &me), PTL_LIST_TOO_LONG);
	OK(PtlMEAppend(ni, 1, &ms, PTL_PRIORITY_LIST, NULL, &me));
	RC(PtlMEUnlink(me), PTL_OK);
	OK(PtlMEAppend(ni, 1, &ms, PTL_PRIORITY_LIST, NULL, &me));
	OK(PtlMEAppend(ni, 2, &ms, PTL_PRIORITY_LIST, NULL, &me));
	RC(PtlMEAppend(ni, 3, &ms, PTL_PRIORITY_LIST, NULL, &me), PTL_NO_SPACE);
	ms.options |= PTL_IOVEC;
	ms.start = iov;
	ms.length = 3;
	RC(PtlMEAppend(ni, 3, &ms, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	/* message and atomic sizes: a put of max_msg_size to itself arrives */
	RC(PtlPut(mds[1], 0, 1001, PTL_NO_ACK_REQ, rank_proc(R), 0, 0x5, 0, NULL, 0),
	   PTL_ARG_INVALID);
	RC(PtlGet(mds[1], 0, 1001, rank_proc(R), 0, 0x5, 0, NULL), PTL_ARG_INVALID);
	RC(PtlAtomic(mds[1], 0, 24, PTL_NO_ACK_REQ, rank_proc(R), 0, 0x5, 0, NULL, 0, PTL_SUM,
		     PTL_UINT64_T), PTL_ARG_INVALID);
	RC(PtlFetchAtomic(mds[1], 0, mds[1], 64, 16, rank_proc(R), 0, 0x5, 0, NULL, 0, PTL_SUM,
			  PTL_UINT64_T), PTL_ARG_INVALID);
	OK(PtlPut(mds[1], 0, 1000, PTL_NO_ACK_REQ, rank_proc(R), 0, 0x5, 0, U(0x1), 0));
	for (n = 0; n < 4; n++) {
		if (!want_ev(eqs[0], &ev, T_EV_MS, "the put of max_msg_size"))
			break;
		if (ev.type == PTL_EVENT_PUT) {
			CHK_EQ(ev.mlength, 1000, "max_msg_size arrived whole");
			break;
		}
	}
	/* triggered operations */
	OK(PtlTriggeredCTInc(cts[1], inc, cts[0], 100));
	OK(PtlTriggeredPut(mds[2], 0, 8, PTL_NO_ACK_REQ, rank_proc(R), 0, 0x5, 0, NULL, 0, cts[0],
			   100));
	RC(PtlTriggeredCTInc(cts[1], inc, cts[0], 100), PTL_NO_SPACE);
	/* an MD a triggered operation will send from: PTL_IN_USE */
	RC(PtlMDRelease(mds[2]), PTL_IN_USE);
	OK(PtlCTCancelTriggered(cts[0]));
	RC(PtlMDRelease(mds[2]), PTL_OK);
	OK(PtlTriggeredCTInc(cts[1], inc, cts[0], 100));	/* room again */
	/* a queue a portal still names: freed (PTL_OK), then a put to the
	 * portal finds no queue, and nothing breaks */
	RC(PtlEQFree(eqs[1]), PTL_OK);
	RC(PtlEQFree(eqs[0]), PTL_OK);	/* portals 0..3 name it */
	RC(PtlEQFree(eqs[0]), PTL_ARG_INVALID);
	OK(PtlPut(mds[1], 0, 8, PTL_NO_ACK_REQ, rank_proc(R), 0, 0x5, 0, NULL, 0));
	OK(PtlEQAlloc(ni, 16, &eqs[0]));	/* the slot again: another generation */
	no_ev(eqs[0], 200, "a freed queue's portal posts nowhere");
	RC(PtlNIFini(nni), PTL_OK);
	fini_ni();
}

/*
 * abort: PtlAbort (Portals 4.3, as the reference implementation has it).
 * Four threads wait where nothing will come (PtlEQWait, PtlEQPoll without
 * a timeout, PtlCTWait, PtlCTPoll); the main thread calls PtlAbort until
 * they have all returned (one call can come before some of them wait: it
 * does nothing then), and each returned PTL_ABORTED.  Then the waits work
 * again: a poll finds its queue empty, a PtlAbort with nobody waiting
 * changes nothing, and the queue and counter are freed.
 */
struct abort_arg {
	int kind;
	ptl_handle_eq_t eq;
	ptl_handle_ct_t ct;
	int rc;
	int done;
};

static void *abort_waiter(void *p)
{
	struct abort_arg *a = p;
	ptl_event_t ev;
	ptl_ct_event_t ce;
	ptl_size_t test = 5;
	unsigned int which;

	switch (a->kind) {
	case 0: a->rc = PtlEQWait(a->eq, &ev); break;
	case 1: a->rc = PtlEQPoll(&a->eq, 1, PTL_TIME_FOREVER, &ev, &which); break;
	case 2: a->rc = PtlCTWait(a->ct, 5, &ce); break;
	default: a->rc = PtlCTPoll(&a->ct, &test, 1, PTL_TIME_FOREVER, &ce, &which); break;
	}
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void c_abort(void)
{
	static const char *const what[4] = { "PtlEQWait", "PtlEQPoll", "PtlCTWait", "PtlCTPoll" };
	struct abort_arg a[4];
	pthread_t th[4];
	ptl_handle_eq_t eq;
	ptl_handle_ct_t ct;
	ptl_event_t ev;
	unsigned int which;
	int left, calls = 0;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	eq = eq_new(16);
	ct = ct_new();
	for (int i = 0; i < 4; i++) {
		a[i] = (struct abort_arg){ .kind = i, .eq = eq, .ct = ct, .rc = -1 };
		if (pthread_create(&th[i], NULL, abort_waiter, &a[i]))
			DIE("pthread_create");
	}
	do {
		PtlAbort();
		calls++;
		usleep(2000);
		left = 0;
		for (int i = 0; i < 4; i++)
			left += !__atomic_load_n(&a[i].done, __ATOMIC_ACQUIRE);
	} while (left);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHK(a[i].rc == PTL_ABORTED, "%s after PtlAbort: %s", what[i], rc_name(a[i].rc));
	}
	LOG("every wait aborted after %d PtlAbort calls", calls);
	RC(PtlEQPoll(&eq, 1, 0, &ev, &which), PTL_EQ_EMPTY);
	PtlAbort();	/* nobody waits: nothing happens */
	RC(PtlEQPoll(&eq, 1, 10, &ev, &which), PTL_EQ_EMPTY);
	RC(PtlCTPoll(&ct, &(ptl_size_t){ 5 }, 1, 10, &(ptl_ct_event_t){ 0 }, &which),
	   PTL_CT_NONE_REACHED);
	RC(PtlEQFree(eq), PTL_OK);
	RC(PtlCTFree(ct), PTL_OK);
	fini_ni();
}

/*
 * unexorder: the unexpected list through the API against a model.  Rank 0
 * puts UO_N messages (hdr_data k, match bits k % UO_KEYS) to rank 1's
 * overflow entry; rank 1 then appends priority entries of every shape
 * (a rank and bits, any source and bits, ignore bits; use-once or
 * persistent) and each must take exactly the headers the model (the
 * alive headers in arrival order) gives it: the oldest one that matches
 * (use-once) or every one, oldest first, as PTL_EVENT_PUT_OVERFLOW.
 */
#define UO_N 3000
#define UO_KEYS 200
static void c_unexorder(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(2 * UO_N);
		uint8_t *ov = kbuf(K_MAL, UO_N * 8), *pb = kbuf(K_MAL, 64);
		static bool alive[UO_N];
		uint64_t rs2 = 0x1234567;
		int nleft = UO_N, appends = 0, taken = 0;
		ptl_event_t ev;
		char ctx[128];

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, ov, UO_N * 8, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 0, ~0ull,
		       PTL_CT_NONE, PTL_OVERFLOW_LIST, U(0x0f));
		barrier("uo.ready");
		for (int k = 0; k < UO_N; k++) {
			if (!want_ev(eq, &ev, T_EV_MS, "a put on the overflow list"))
				break;
			CHKEV("overflow", &ev, .m = F_TYPE | F_LIST | F_HDR, .type = PTL_EVENT_PUT,
			      .list = PTL_OVERFLOW_LIST, .hdr = (uint64_t)k);
			alive[k] = true;
		}
		while (nleft > 0 && !failed && appends < 4000) {
			uint64_t r, bits, ign = 0;
			int shape, k0;
			bool once;
			ptl_me_t me;
			ptl_handle_me_t h;

			rs2 ^= rs2 << 13, rs2 ^= rs2 >> 7, rs2 ^= rs2 << 17;
			r = rs2;
			shape = (int)(r % 4);
			once = (r >> 8) % 10 < 7;
			/* aim at a live header */
			k0 = (int)((r >> 16) % UO_N);
			for (int j = 0; j < UO_N && !alive[k0]; j++)
				k0 = (k0 + 1) % UO_N;
			bits = (uint64_t)(k0 % UO_KEYS);
			if (shape == 2)
				ign = 0x7;
			me = me_spec(pb, 64, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE |
				     PTL_ME_EVENT_UNLINK_DISABLE | (once ? PTL_ME_USE_ONCE : 0), bits ^ (r >> 40 & ign),
				     ign);
			if (shape == 0 || shape == 3)
				me.match_id.rank = shape == 0 ? 0 : 1;	/* rank 1 sent nothing */
			snprintf(ctx, sizeof(ctx), "append %d: bits %llu ign 0x%llx %s%s", appends,
				 (unsigned long long)me.match_bits, (unsigned long long)ign,
				 shape == 0 ? "rank 0" : shape == 3 ? "rank 1" : "any source",
				 once ? " use-once" : "");
			OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(0x100 + appends), &h));
			for (int k = 0; k < UO_N; k++) {
				if (!alive[k] || ((uint64_t)(k % UO_KEYS) ^ me.match_bits) & ~ign ||
				    shape == 3)
					continue;
				if (!want_ev(eq, &ev, T_EV_MS, ctx))
					break;
				CHKEV(ctx, &ev, .m = F_TYPE | F_HDR | F_UPTR, .type = PTL_EVENT_PUT_OVERFLOW,
				      .hdr = (uint64_t)k, .uptr = U(0x100 + appends));
				alive[k] = false;
				nleft--;
				taken++;
				if (once)
					break;
			}
			no_ev(eq, 0, ctx);
			{
				/* linked (persistent, or use-once that took
				 * nothing): off again; a use-once one that took
				 * a header was never linked */
				int rc = PtlMEUnlink(h);

				CHK(rc == PTL_OK || rc == PTL_ARG_INVALID, "%s: unlink %s", ctx, rc_name(rc));
			}
			appends++;
		}
		LOG("%d appends took %d headers in the model's order", appends, taken);
		CHK(nleft == 0, "every header taken (%d left)", nleft);
		barrier("uo.done");
	} else if (R == 0) {
		uint8_t *src = kbuf(K_MAL, 64);
		ptl_handle_md_t md = md_new(src, 64, 0, PTL_EQ_NONE, PTL_CT_NONE);

		barrier("uo.ready");
		for (int k = 0; k < UO_N && !failed; k++)
			RC(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, (uint64_t)(k % UO_KEYS), 0,
				  NULL, (uint64_t)k), PTL_OK);
		barrier("uo.done");
	}
	fini_ni();
}

/*
 * countsearch: counting searches (Portals 4.3, as the reference
 * implementation has them): a PtlMESearch with a counter and
 * PTL_ME_EVENT_CT_OVERFLOW adds one success per unexpected header it finds
 * (its mlength with PTL_ME_EVENT_CT_BYTES) and then one failure, which
 * says the search is over; a use-once search that found a header adds no
 * failure.  Headers (bits 1, 55, 55, 1, 55) wait on the unexpected list.
 */
static void c_countsearch(void)
{
	static const uint64_t bits[5] = { 1, 55, 55, 1, 55 };

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t ct = ct_new();
		uint8_t *ov = kbuf(K_MAL, 4096);
		struct { uint64_t bits; unsigned opts; ptl_search_op_t op; uint64_t s, f; int nev;
			 int type; } step[] = {
			/* success, failure after the step; events */
			{ 55, 0, PTL_SEARCH_ONLY, 3, 1, 3, PTL_EVENT_SEARCH },
			{ 55, PTL_ME_USE_ONCE, PTL_SEARCH_ONLY, 4, 1, 1, PTL_EVENT_SEARCH },
			{ 55, PTL_ME_EVENT_CT_BYTES, PTL_SEARCH_ONLY, 4 + 3 * 64, 2, 3, PTL_EVENT_SEARCH },
			{ 99, 0, PTL_SEARCH_ONLY, 4 + 3 * 64, 3, 1, PTL_EVENT_SEARCH },
			{ 99, PTL_ME_USE_ONCE, PTL_SEARCH_ONLY, 4 + 3 * 64, 4, 1, PTL_EVENT_SEARCH },
			{ 55, 0, PTL_SEARCH_DELETE, 7 + 3 * 64, 5, 3, PTL_EVENT_PUT_OVERFLOW },
			{ 55, 0, PTL_SEARCH_DELETE, 7 + 3 * 64, 6, 1, PTL_EVENT_SEARCH },
			{ 1, PTL_ME_USE_ONCE, PTL_SEARCH_DELETE, 8 + 3 * 64, 6, 1, PTL_EVENT_PUT_OVERFLOW },
			{ 1, 0, PTL_SEARCH_DELETE, 9 + 3 * 64, 7, 1, PTL_EVENT_PUT_OVERFLOW },
			{ 1, 0, PTL_SEARCH_DELETE, 9 + 3 * 64, 8, 1, PTL_EVENT_SEARCH },
		};
		char ctx[96];
		ptl_event_t ev;
		ptl_ct_event_t c;

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, ov, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 0, ~0ull, PTL_CT_NONE,
		       PTL_OVERFLOW_LIST, U(0x0f));
		barrier("cs.ready");
		for (int k = 0; k < 5; k++)
			if (want_ev(eq, &ev, T_EV_MS, "a put on the overflow list"))
				CHKEV("overflow", &ev, .m = F_TYPE | F_LIST, .type = PTL_EVENT_PUT,
				      .list = PTL_OVERFLOW_LIST);
		for (size_t i = 0; i < sizeof(step) / sizeof(step[0]) && !failed; i++) {
			ptl_me_t me = me_spec(NULL, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_OVERFLOW | step[i].opts,
					      step[i].bits, 0);

			snprintf(ctx, sizeof(ctx), "step %zu: %s bits %llu%s%s", i,
				 step[i].op == PTL_SEARCH_ONLY ? "SEARCH_ONLY" : "SEARCH_DELETE",
				 (unsigned long long)step[i].bits,
				 step[i].opts & PTL_ME_USE_ONCE ? " use-once" : "",
				 step[i].opts & PTL_ME_EVENT_CT_BYTES ? " bytes" : "");
			me.ct_handle = ct;
			OK(PtlMESearch(ni, PT_DATA, &me, step[i].op, U(0x50 + i)));
			for (int k = 0; k < step[i].nev; k++)
				if (want_ev(eq, &ev, T_EV_MS, ctx))
					CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR, .type = step[i].type,
					      .uptr = U(0x50 + i));
			no_ev(eq, 50, ctx);
			OK(PtlCTGet(ct, &c));
			CHK_EQ(c.success, step[i].s, ctx);
			CHK_EQ(c.failure, step[i].f, ctx);
		}
		barrier("cs.done");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("cs.ready");
		for (int k = 0; k < 5; k++)
			put_wait(md, eq, 0, 64, PTL_ACK_REQ, 1, PT_DATA, bits[k], 0, U(k + 1), 0, 0, 64,
				 PTL_OVERFLOW_LIST, "a put to the overflow list");
		barrier("cs.done");
	}
	fini_ni();
}

/*
 * uhrlength: PTL_ME_LOCAL_INC_UH_RLENGTH (Portals 4.2/4.3).  Three puts
 * (100, 200, 300 bytes) wait on the unexpected list; a locally managed
 * priority entry appended with the option takes them and starts at local
 * offset 600, so the next put lands there (round 0); with min_free 500 the
 * entry is used up at its append (AUTO_UNLINK, AUTO_FREE; the next put
 * goes to the overflow list, round 1); without the option it starts at 0
 * (round 2).
 */
static void c_uhrlength(void)
{
	static const size_t ulen[3] = { 100, 200, 300 };
	char ctx[96];

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *ov = kbuf(K_MAL, 4096);

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, ov, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 0x55, 0, PTL_CT_NONE,
		       PTL_OVERFLOW_LIST, U(0x0f));
		barrier("uh.ready");
		for (int round = 0; round < 3; round++) {
			uint8_t *b = kbuf(K_MAL, 1000);
			ptl_me_t me = me_spec(b, 1000, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL |
					      PTL_ME_EVENT_LINK_DISABLE |
					      (round < 2 ? PTL_ME_LOCAL_INC_UH_RLENGTH : 0), 0x55, 0);
			ptl_handle_me_t h;
			ptl_event_t ev;

			snprintf(ctx, sizeof(ctx), "LOCAL_INC_UH_RLENGTH round %d", round);
			me.min_free = round == 1 ? 500 : 0;
			barrierf("uh%d.queued", round);
			for (int k = 0; k < 3; k++)	/* the puts on the overflow entry */
				if (want_ev(eq, &ev, T_EV_MS, ctx))
					CHKEV(ctx, &ev, .m = F_TYPE | F_RLEN | F_UPTR | F_LIST,
					      .type = PTL_EVENT_PUT, .rlen = ulen[k], .uptr = U(0x0f),
					      .list = PTL_OVERFLOW_LIST);
			OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(0x70 + round), &h));
			for (int k = 0; k < 3; k++)
				if (want_ev(eq, &ev, T_EV_MS, ctx))
					CHKEV(ctx, &ev, .m = F_TYPE | F_RLEN | F_UPTR, .type = PTL_EVENT_PUT_OVERFLOW,
					      .rlen = ulen[k], .uptr = U(0x70 + round));
			if (round == 1) {
				if (want_ev(eq, &ev, T_EV_MS, ctx))
					CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR, .type = PTL_EVENT_AUTO_UNLINK,
					      .uptr = U(0x71));
				if (want_ev(eq, &ev, T_EV_MS, ctx))
					CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR, .type = PTL_EVENT_AUTO_FREE,
					      .uptr = U(0x71));
				RC(PtlMEUnlink(h), PTL_ARG_INVALID);	/* never linked */
			}
			barrierf("uh%d.appended", round);
			barrierf("uh%d.sent", round);
			if (!want_ev(eq, &ev, T_EV_MS, ctx)) {
			} else if (round == 1) {
				ptl_me_t sme = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x55, 0);

				CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_LIST | F_MLEN, .type = PTL_EVENT_PUT,
				      .uptr = U(0x0f), .list = PTL_OVERFLOW_LIST, .mlen = 50);
				/* that header off the unexpected list */
				OK(PtlMESearch(ni, PT_DATA, &sme, PTL_SEARCH_DELETE, U(0x99)));
				if (want_ev(eq, &ev, T_EV_MS, ctx))
					CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_RLEN, .type = PTL_EVENT_PUT_OVERFLOW,
					      .uptr = U(0x99), .rlen = 50);
			} else {
				CHKEV(ctx, &ev, .m = F_TYPE | F_UPTR | F_ROFF | F_MLEN | F_START,
				      .type = PTL_EVENT_PUT, .uptr = U(0x70 + round), .roff = round ? 0 : 600,
				      .mlen = 50, .start = b + (round ? 0 : 600));
				check_pat(ctx, b + (round ? 0 : 600), 50, 7 + round);
				RC(PtlMEUnlink(h), PTL_OK);
			}
			barrierf("uh%d.done", round);
		}
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("uh.ready");
		for (int round = 0; round < 3; round++) {
			for (int k = 0; k < 3; k++)
				put_wait(md, eq, 0, ulen[k], PTL_ACK_REQ, 1, PT_DATA, 0x55, 0, U(k + 1), k,
					 0, (int64_t)ulen[k], PTL_OVERFLOW_LIST, "put to the unexpected list");
			barrierf("uh%d.queued", round);
			barrierf("uh%d.appended", round);
			fill(src, 50, 7 + round);
			put_wait(md, eq, 0, 50, PTL_ACK_REQ, 1, PT_DATA, 0x55, 0, U(9), 9, 0, 50,
				 round == 1 ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST, "put after the append");
			barrierf("uh%d.sent", round);
			barrierf("uh%d.done", round);
		}
	}
	fini_ni();
}

/* --------------------------------------------------------- counters -- */

struct inc_arg { ptl_handle_ct_t ct; int delay_ms; };

static void *inc_later(void *p)
{
	struct inc_arg *a = p;

	msleep(a->delay_ms);
	RC(PtlCTInc(a->ct, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
	return NULL;
}

static void c_counters(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t c1 = ct_new(), c2 = ct_new(), c3 = ct_new();
		uint8_t *b1 = kbuf(K_WIN, 4096), *b2 = kbuf(K_MAL, 4096), *b3 = kbuf(K_WIN, 4096);
		ptl_handle_ct_t cts[2] = { c1, c2 };
		ptl_size_t tests[2] = { 3, 2000 };
		ptl_ct_event_t ce;
		unsigned which = 9;

		pt_new(0, eq, PT_DATA);
		fill(b3, 4096, 33);
		me_add(PT_DATA, b1, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 1, 0, c1,
		       PTL_PRIORITY_LIST, U(1));
		me_add(PT_DATA, b2, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES, 2,
		       0, c2, PTL_PRIORITY_LIST, U(2));
		me_add(PT_DATA, b3, 4096, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, 3, 0, c3,
		       PTL_PRIORITY_LIST, U(3));
		barrier("ct.ready");
		ct_wait(c1, 3, T_EV_MS, "ME counter (window, CT_COMM): 3 puts");
		ct_wait(c3, 2, T_EV_MS, "ME counter (window, CT_COMM): 2 gets");
		RC(PtlCTPoll(cts, tests, 2, T_EV_MS, &ce, &which), PTL_OK);
		CHK(which <= 1, "PtlCTPoll which %u", which);
		ct_wait(c2, 2000, T_EV_MS, "ME counter (malloc, CT_BYTES): 2000 bytes");
		barrier("ct.sent");
		msleep(50);
		ct_is(c1, 3, 0, "ME counter, CT_COMM");
		ct_is(c2, 2000, 0, "ME counter, CT_BYTES");
		ct_is(c3, 2, 0, "ME counter, gets");
		CHK_EQ(drain(eq, 200), 7, "counters: full events next to the counters");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(128);
		ptl_handle_ct_t cs = ct_new(), ca = ct_new(), cr = ct_new(), cl = ct_new();
		uint8_t *src = kbuf(K_MAL, 8192);
		ptl_handle_md_t ms = md_new(src, 4096, PTL_MD_EVENT_CT_SEND, PTL_EQ_NONE, cs);
		ptl_handle_md_t ma = md_new(src, 4096, PTL_MD_EVENT_CT_ACK, PTL_EQ_NONE, ca);
		ptl_handle_md_t mr = md_new(src + 4096, 4096, PTL_MD_EVENT_CT_REPLY, PTL_EQ_NONE, cr);
		ptl_handle_ct_t cts[2] = { ca, cr };
		ptl_size_t tests[2] = { 2, 2 };
		ptl_ct_event_t ce;
		unsigned which = 9;
		pthread_t th;
		struct inc_arg ia = { cl, 100 };
		uint64_t t0;

		/* local counter operations */
		ct_is(cl, 0, 0, "new counter");
		RC(PtlCTSet(cl, (ptl_ct_event_t){ 5, 0 }), PTL_OK);
		ct_is(cl, 5, 0, "PtlCTSet");
		RC(PtlCTInc(cl, (ptl_ct_event_t){ 2, 0 }), PTL_OK);
		ct_is(cl, 7, 0, "PtlCTInc");
		RC(PtlCTWait(cl, 7, &ce), PTL_OK);
		CHK_EQ(ce.success, 7, "PtlCTWait event.success");
		RC(PtlCTPoll(&cl, &(ptl_size_t){ 8 }, 1, 50, &ce, &which), PTL_CT_NONE_REACHED);
		t0 = now_ms();
		pthread_create(&th, NULL, inc_later, &ia);
		RC(PtlCTWait(cl, 8, &ce), PTL_OK);
		CHK_EQ(ce.success, 8, "PtlCTWait woken by another thread's PtlCTInc");
		CHK(now_ms() - t0 >= 90, "PtlCTWait returned after %llu ms, before the increment",
		    (unsigned long long)(now_ms() - t0));
		pthread_join(th, NULL);
		RC(PtlCTInc(cl, (ptl_ct_event_t){ 0, 3 }), PTL_OK);
		ct_is(cl, 8, 3, "PtlCTInc of failure");
		RC(PtlCTSet(cl, (ptl_ct_event_t){ 0, 0 }), PTL_OK);
		ct_is(cl, 0, 0, "PtlCTSet to zero");

		barrier("ct.ready");
		for (int i = 0; i < 3; i++)
			RC(PtlPut(ms, 0, 100, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, NULL, 0), PTL_OK);
		for (int i = 0; i < 2; i++)
			RC(PtlPut(ma, 0, 1000, PTL_CT_ACK_REQ, rank_proc(1), PT_DATA, 2, 0, NULL, 0), PTL_OK);
		for (int i = 0; i < 2; i++)
			RC(PtlGet(mr, i * 500, 500, rank_proc(1), PT_DATA, 3, i * 500, NULL), PTL_OK);
		ct_wait(cs, 3, T_EV_MS, "MD counter, CT_SEND");
		RC(PtlCTPoll(cts, tests, 2, T_EV_MS, &ce, &which), PTL_OK);
		CHK(which <= 1, "PtlCTPoll which %u", which);
		ct_wait(ca, 2, T_EV_MS, "MD counter, CT_ACK");
		ct_wait(cr, 2, T_EV_MS, "MD counter, CT_REPLY");
		check_pat("gets counted with CT_REPLY", src + 4096, 1000, 33);
		barrier("ct.sent");
		msleep(50);
		ct_is(cs, 3, 0, "MD counter, CT_SEND");
		ct_is(ca, 2, 0, "MD counter, CT_ACK");
		ct_is(cr, 2, 0, "MD counter, CT_REPLY");
		no_ev(eq, 10, "counters: MDs without an EQ");
		RC(PtlCTFree(cl), PTL_OK);
	}
	fini_ni();
}

/* ---------------------------------------------------------- atomics -- */

/* slots of the target buffer (rank 0); every initiator (ranks 1..N-1)
 * combines into them concurrently */
enum {
	A_SUM32 = 0,	/* int32[4] SUM */
	A_MIN32 = 32, A_MAX32 = 40, A_BOR64 = 48, A_BAND64 = 56, A_BXOR64 = 64, A_SUM64 = 72,
	A_DSUM = 80,	/* double SUM */
	A_U16SUM = 88,	/* uint16 SUM (wraps) */
	A_FADD = 96,	/* uint64 fetch-add counter */
	A_SWAP = 104,	/* uint64 SWAP */
	A_LOCK = 112,	/* uint64 CSWAP 0 -> rank: one winner */
	A_CSW = 120,	/* rank 1 only: CSWAP success and failure */
	A_MSW = 128,	/* rank 1 only: MSWAP */
	A_FMIN = 136,	/* rank 1 only: fetch MIN int32 */
	A_END = 144,
};
#define A_FADD_N 20
#define A_REP 10

static int aop_at(uint64_t off, int *dt)
{
	switch (off) {
	case A_SUM32: *dt = PTL_INT32_T; return PTL_SUM;
	case A_MIN32: *dt = PTL_INT32_T; return PTL_MIN;
	case A_MAX32: *dt = PTL_INT32_T; return PTL_MAX;
	case A_BOR64: *dt = PTL_UINT64_T; return PTL_BOR;
	case A_BAND64: *dt = PTL_UINT64_T; return PTL_BAND;
	case A_BXOR64: *dt = PTL_UINT64_T; return PTL_BXOR;
	case A_SUM64: *dt = PTL_UINT64_T; return PTL_SUM;
	case A_DSUM: *dt = PTL_DOUBLE; return PTL_SUM;
	case A_U16SUM: *dt = PTL_UINT16_T; return PTL_SUM;
	case A_FADD: *dt = PTL_UINT64_T; return PTL_SUM;
	case A_SWAP: *dt = PTL_UINT64_T; return PTL_SWAP;
	case A_LOCK: *dt = PTL_UINT64_T; return PTL_CSWAP;
	case A_CSW: *dt = PTL_UINT64_T; return PTL_CSWAP;
	case A_MSW: *dt = PTL_UINT64_T; return PTL_MSWAP;
	case A_FMIN: *dt = PTL_INT32_T; return PTL_MIN;
	}
	return -1;
}

static void a_init(uint8_t *t)
{
	memset(t, 0, A_END);
	*(int32_t *)(t + A_MIN32) = 1000;
	*(int32_t *)(t + A_MAX32) = -1000;
	*(uint64_t *)(t + A_BAND64) = ~0ull;
	*(uint64_t *)(t + A_BXOR64) = 0x5555;
	*(uint16_t *)(t + A_U16SUM) = 0xfff0;
	*(uint64_t *)(t + A_SWAP) = 777;
	*(uint64_t *)(t + A_CSW) = 5;
	*(uint64_t *)(t + A_MSW) = 0xaaaa;
	*(int32_t *)(t + A_FMIN) = 50;
}

/* initiator: one atomic with an ack, or one fetch/swap, waiting for its events */
static void a_op(ptl_handle_md_t md, ptl_handle_eq_t eq, size_t lo, size_t len, uint64_t mb,
		 size_t roff, int op, int dt)
{
	char ctx[96];
	int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
	ptl_event_t evs[2];

	snprintf(ctx, sizeof(ctx), "PtlAtomic op %d type %d at %zu of ME 0x%llx", op, dt, roff,
		 (unsigned long long)mb);
	RC(PtlAtomic(md, lo, len, PTL_ACK_REQ, rank_proc(0), PT_DATA, mb, roff, U(roff), 0x5a5a, op,
		     dt), PTL_OK);
	if (collect(eq, T_EV_MS, 2, want, evs, ctx)) {
		CHKEV(ctx, &evs[0], .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = len, .uptr = U(roff));
		CHKEV(ctx, &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = len, .roff = roff,
		      .uptr = U(roff), .list = PTL_PRIORITY_LIST);
	}
}

static void a_fetch(ptl_handle_md_t gmd, size_t glo, ptl_handle_md_t pmd, size_t plo,
		    ptl_handle_eq_t eq, size_t len, uint64_t mb, size_t roff, int op, int dt,
		    const void *operand)
{
	char ctx[96];
	int want[2] = { PTL_EVENT_SEND, PTL_EVENT_REPLY };
	ptl_event_t evs[2];

	snprintf(ctx, sizeof(ctx), "%s op %d type %d at %zu of ME 0x%llx",
		 operand || op == PTL_SWAP ? "PtlSwap" : "PtlFetchAtomic", op, dt, roff,
		 (unsigned long long)mb);
	if (operand || op == PTL_SWAP)
		RC(PtlSwap(gmd, glo, pmd, plo, len, rank_proc(0), PT_DATA, mb, roff, U(roff + 1), 7,
			   operand, op, dt), PTL_OK);
	else
		RC(PtlFetchAtomic(gmd, glo, pmd, plo, len, rank_proc(0), PT_DATA, mb, roff, U(roff + 1),
				  7, op, dt), PTL_OK);
	/* the get MD and the put MD share the EQ here: SEND comes from the
	 * put MD, REPLY from the get MD */
	if (collect(eq, T_EV_MS, 2, want, evs, ctx)) {
		CHKEV(ctx, &evs[0], .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = len, .uptr = U(roff + 1));
		CHKEV(ctx, &evs[1], .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = len, .roff = roff,
		      .uptr = U(roff + 1));
	}
}

static void c_atomic(void)
{
	int ni_ = N - 1;	/* initiators */

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	CHK(lim.max_atomic_size >= 16, "max_atomic_size %llu", (unsigned long long)lim.max_atomic_size);
	if (R == 0) {
		ptl_handle_eq_t eq = eq_new(4096);
		uint8_t *t[2] = { kbuf(K_MAL, 4096), kbuf(K_WIN, 4096) };
		int natomic = 0, nfetch = 0, seen_ini[8] = { 0 };
		ptl_event_t ev;

		pt_new(0, eq, PT_DATA);
		for (int k = 0; k < 2; k++) {
			a_init(t[k]);
			me_add(PT_DATA, t[k], A_END, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0xa7 + k, 0, PTL_CT_NONE,
			       PTL_PRIORITY_LIST, U(0x700 + k));
		}
		barrier("at.ready");
		barrier("at.done");
		while (eq_next(eq, &ev, 300) != PTL_EQ_EMPTY) {
			int dt = -1, op = aop_at(ev.remote_offset, &dt), k = ev.match_bits == 0xa8;

			if (ev.type == PTL_EVENT_ATOMIC)
				natomic++;
			else if (ev.type == PTL_EVENT_FETCH_ATOMIC)
				nfetch++;
			if (ev.initiator.rank < 8)
				seen_ini[ev.initiator.rank]++;
			CHK(op >= 0, "atomic event at remote offset %llu", (unsigned long long)ev.remote_offset);
			CHK(ev.initiator.rank >= 1 && (int)ev.initiator.rank < N, "initiator %u",
			    ev.initiator.rank);
			CHKEV("atomic target event", &ev, .m = F_PT | F_UPTR | F_START | F_FAIL | F_AOP |
			      F_ATYPE | F_LIST | F_HDR, .pt = PT_DATA, .uptr = U(0x700 + k),
			      .start = t[k] + ev.remote_offset, .aop = op, .atype = dt,
			      .hdr = ev.type == PTL_EVENT_ATOMIC ? 0x5a5a : 7);
			CHK(ev.mlength == ev.rlength && ev.mlength > 0 && ev.mlength <= 16,
			    "atomic mlength %llu rlength %llu", (unsigned long long)ev.mlength,
			    (unsigned long long)ev.rlength);
		}
		/* per initiator and ME: 4*A_REP + A_REP + 2*A_REP + 3 + 3 + A_REP + 4 (atomics),
		 * A_FADD_N + 1 + 1 (fetches); rank 1 also 2 CSWAP + 1 MSWAP + 1 FMIN */
		CHK_EQ(natomic, 2 * ni_ * (9 * A_REP + 6 + 4), "ATOMIC events");
		CHK_EQ(nfetch, 2 * ni_ * (A_FADD_N + 2) + 2 * 4, "FETCH_ATOMIC events");
		for (int k = 0; k < 2; k++) {
			uint8_t *b = t[k];
			int32_t s32[4] = { 0 }, mn = 1000, mx = -1000;
			uint64_t bor = 0, band = ~0ull, bxor = 0x5555, s64 = 0, sw, lock;
			uint16_t u16 = 0xfff0;
			double ds = 0;
			char ctx[64];

			snprintf(ctx, sizeof(ctx), "atomics on the %s ME", kname[!k]);
			for (int r = 1; r < N; r++) {
				for (int i = 0; i < A_REP; i++) {
					s32[0] += r; s32[1] += 2 * r; s32[2] -= r; s32[3] += 1;
					if (100 - r * 7 - i < mn) mn = 100 - r * 7 - i;
					if (r * 5 + i > mx) mx = r * 5 + i;
					ds += 0.5;
					u16 += 0x10;
				}
				for (int i = 0; i < 3; i++) {
					bor |= 1ull << (r * 3 + i);
					band &= ~(1ull << (r * 5 + i));
				}
				bxor ^= 1ull << r;
				for (int i = 0; i < A_REP; i++)
					s64 += 1000000007ull * r;
			}
			for (int i = 0; i < 4; i++)
				CHK_EQ(((int32_t *)(b + A_SUM32))[i], s32[i], ctx);
			CHK_EQ(*(int32_t *)(b + A_MIN32), mn, "MIN int32");
			CHK_EQ(*(int32_t *)(b + A_MAX32), mx, "MAX int32");
			CHK_EQ(*(uint64_t *)(b + A_BOR64), bor, "BOR uint64");
			CHK_EQ(*(uint64_t *)(b + A_BAND64), band, "BAND uint64");
			CHK_EQ(*(uint64_t *)(b + A_BXOR64), bxor, "BXOR uint64");
			CHK_EQ(*(uint64_t *)(b + A_SUM64), s64, "SUM uint64");
			CHK(*(double *)(b + A_DSUM) == ds, "SUM double: %g, want %g", *(double *)(b + A_DSUM), ds);
			CHK_EQ(*(uint16_t *)(b + A_U16SUM), u16, "SUM uint16 (wraps)");
			CHK_EQ(*(uint64_t *)(b + A_FADD), (uint64_t)ni_ * A_FADD_N, "fetch-add counter");
			sw = *(uint64_t *)(b + A_SWAP);
			lock = *(uint64_t *)(b + A_LOCK);
			CHK(sw >= 1 && sw < (uint64_t)N, "SWAP final value %llu", (unsigned long long)sw);
			CHK(lock >= 1 && lock < (uint64_t)N, "CSWAP lock holder %llu", (unsigned long long)lock);
			CHK_EQ(*(uint64_t *)(b + A_CSW), 9, "CSWAP success then failure");
			CHK_EQ(*(uint64_t *)(b + A_MSW), 0x12aa, "MSWAP");
			CHK_EQ(*(int32_t *)(b + A_FMIN), 20, "fetch MIN");
			put_file(k ? "at.final1" : "at.final0", b, A_END);
		}
		barrier("at.checked");
	} else {
		ptl_handle_eq_t eq = eq_new(256);
		uint8_t *src = kbuf(K_MAL, 4096), *res = kbuf(K_MAL, 8192);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);
		ptl_handle_md_t gmd = md_new(res, 8192, 0, eq, PTL_CT_NONE);
		uint64_t olds[2][A_FADD_N + 2];
		int r = R;

		barrier("at.ready");
		for (int k = 0; k < 2; k++) {
			uint64_t mb = 0xa7 + k;
			int32_t *v = (int32_t *)src;
			uint64_t *u = (uint64_t *)(src + 64);

			for (int i = 0; i < A_REP; i++) {
				v[0] = r; v[1] = 2 * r; v[2] = -r; v[3] = 1;
				a_op(md, eq, 0, 16, mb, A_SUM32, PTL_SUM, PTL_INT32_T);
				v[0] = 100 - r * 7 - i;
				a_op(md, eq, 0, 4, mb, A_MIN32, PTL_MIN, PTL_INT32_T);
				v[0] = r * 5 + i;
				a_op(md, eq, 0, 4, mb, A_MAX32, PTL_MAX, PTL_INT32_T);
				*(double *)u = 0.5;
				a_op(md, eq, 64, 8, mb, A_DSUM, PTL_SUM, PTL_DOUBLE);
				*(uint16_t *)u = 0x10;
				a_op(md, eq, 64, 2, mb, A_U16SUM, PTL_SUM, PTL_UINT16_T);
				*u = 1000000007ull * r;
				a_op(md, eq, 64, 8, mb, A_SUM64, PTL_SUM, PTL_UINT64_T);
				/* BXOR twice with the same value: no change */
				*u = 0x1111ull * r + i;
				a_op(md, eq, 64, 8, mb, A_BXOR64, PTL_BXOR, PTL_UINT64_T);
				a_op(md, eq, 64, 8, mb, A_BXOR64, PTL_BXOR, PTL_UINT64_T);
				*u = 0;
				a_op(md, eq, 64, 8, mb, A_BOR64, PTL_BOR, PTL_UINT64_T);
			}
			for (int i = 0; i < 3; i++) {
				*u = 1ull << (r * 3 + i);
				a_op(md, eq, 64, 8, mb, A_BOR64, PTL_BOR, PTL_UINT64_T);
				*u = ~(1ull << (r * 5 + i));
				a_op(md, eq, 64, 8, mb, A_BAND64, PTL_BAND, PTL_UINT64_T);
			}
			*u = 1ull << r;
			a_op(md, eq, 64, 8, mb, A_BXOR64, PTL_BXOR, PTL_UINT64_T);
			*u = ~0ull;
			a_op(md, eq, 64, 8, mb, A_BAND64, PTL_BAND, PTL_UINT64_T);
			*u = 0;
			a_op(md, eq, 64, 8, mb, A_BXOR64, PTL_BXOR, PTL_UINT64_T);
			a_op(md, eq, 64, 8, mb, A_SUM64, PTL_SUM, PTL_UINT64_T);
			/* fetch-add: every old value is unique over all initiators */
			for (int i = 0; i < A_FADD_N; i++) {
				*u = 1;
				memset(res, 0xcc, 64);
				a_fetch(gmd, 8, md, 64, eq, 8, mb, A_FADD, PTL_SUM, PTL_UINT64_T, NULL);
				memcpy(&olds[k][i], res + 8, 8);
				check_byte("fetch: bytes next to the result", res, 8, 0xcc);
			}
			*u = r;
			a_fetch(gmd, 0, md, 64, eq, 8, mb, A_SWAP, PTL_SWAP, PTL_UINT64_T, NULL);
			memcpy(&olds[k][A_FADD_N], res, 8);
			*u = r;
			a_fetch(gmd, 0, md, 64, eq, 8, mb, A_LOCK, PTL_CSWAP, PTL_UINT64_T, &(uint64_t){ 0 });
			memcpy(&olds[k][A_FADD_N + 1], res, 8);
			if (r == 1) {
				*u = 9;
				a_fetch(gmd, 0, md, 64, eq, 8, mb, A_CSW, PTL_CSWAP, PTL_UINT64_T,
					&(uint64_t){ 5 });
				CHK_EQ(*(uint64_t *)res, 5, "CSWAP that succeeds: old value");
				*u = 11;
				a_fetch(gmd, 0, md, 64, eq, 8, mb, A_CSW, PTL_CSWAP, PTL_UINT64_T,
					&(uint64_t){ 5 });
				CHK_EQ(*(uint64_t *)res, 9, "CSWAP that fails: old value");
				*u = 0x1234;
				a_fetch(gmd, 0, md, 64, eq, 8, mb, A_MSW, PTL_MSWAP, PTL_UINT64_T,
					&(uint64_t){ 0xff00 });
				CHK_EQ(*(uint64_t *)res, 0xaaaa, "MSWAP: old value");
				*(int32_t *)u = 20;
				a_fetch(gmd, 0, md, 64, eq, 4, mb, A_FMIN, PTL_MIN, PTL_INT32_T, NULL);
				CHK_EQ(*(int32_t *)res, 50, "fetch MIN: old value");
			}
		}
		put_file(r == 1 ? "at.olds1" : r == 2 ? "at.olds2" : "at.olds3", olds, sizeof(olds));
		barrier("at.done");
		barrier("at.checked");
		if (r == 1) {
			/* the fetched old values of all initiators */
			int ni_ = N - 1;
			uint64_t all[3][2][A_FADD_N + 2];

			for (int i = 1; i < N; i++) {
				char nm[32];

				snprintf(nm, sizeof(nm), "at.olds%d", i);
				get_file(nm, all[i - 1], sizeof(all[0]));
			}
			for (int k = 0; k < 2; k++) {
				uint8_t fin[A_END];
				int hits[64] = { 0 }, zeros = 0;
				uint64_t sw_seen = 0;

				get_file(k ? "at.final1" : "at.final0", fin, A_END);
				for (int i = 0; i < ni_; i++)
					for (int j = 0; j < A_FADD_N; j++) {
						uint64_t o = all[i][k][j];

						if (o < 64)
							hits[o]++;
						else
							FAIL("fetch-add old value %llu out of range", (unsigned long long)o);
					}
				for (int o = 0; o < ni_ * A_FADD_N; o++)
					if (hits[o] != 1)
						FAIL("fetch-add: old value %d returned %d times (want once)", o, hits[o]);
				/* SWAP: old values and the final value are {777, 1..ni} */
				for (int i = 0; i < ni_; i++)
					sw_seen |= 1ull << (all[i][k][A_FADD_N] == 777 ? 0 : all[i][k][A_FADD_N]);
				sw_seen |= 1ull << *(uint64_t *)(fin + A_SWAP);
				CHK_EQ(sw_seen, (2ull << ni_) - 1, "SWAP chain: old values + final (bit set)");
				for (int i = 0; i < ni_; i++) {
					uint64_t o = all[i][k][A_FADD_N + 1];

					if (o == 0)
						zeros++;
					else
						CHK_EQ(o, *(uint64_t *)(fin + A_LOCK), "CSWAP loser sees the winner");
				}
				CHK_EQ(zeros, 1, "CSWAP lock: exactly one winner");
			}
		}
	}
	fini_ni();
}

/* -------------------------------------------------------- triggered -- */

static void c_triggered(void)
{
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *b[3] = { kbuf(K_MAL, 4096), kbuf(K_WIN, 4096), kbuf(K_MAL, 4096) };
		uint8_t *g = kbuf(K_WIN, 4096), *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, PTL_EQ_NONE, PTL_CT_NONE);

		pt_new(0, eq, PT_DATA);
		for (int i = 0; i < 3; i++)
			me_add(PT_DATA, b[i], 4096, PTL_ME_OP_PUT, i + 1, 0, PTL_CT_NONE, PTL_PRIORITY_LIST,
			       U(0x80 + i));
		fill(g, 4096, 44);
		me_add(PT_DATA, g, 4096, PTL_ME_OP_GET, 4, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x84));
		barrier("tr.ready");
		barrier("tr.inc1");
		no_ev(eq, 300, "triggered put below its threshold");
		barrier("tr.checked1");
		if (want_ev(eq, &ev, T_EV_MS, "triggered put at its threshold"))
			CHKEV("triggered put", &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(0),
			      .pt = PT_DATA, .mb = 1, .rlen = 256, .mlen = 256, .hdr = 11, .uptr = U(0x80),
			      .start = b[0]);
		check_pat("triggered put", b[0], 256, 11);
		if (want_ev(eq, &ev, T_EV_MS, "triggered put chained by PtlTriggeredCTInc"))
			CHKEV("chained triggered put", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 2, .rlen = 300, .mlen = 300,
			      .hdr = 12, .uptr = U(0x81), .start = b[1]);
		check_pat("chained triggered put", b[1], 300, 12);
		if (want_ev(eq, &ev, T_EV_MS, "triggered get"))
			CHKEV("triggered get", &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_GET,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 4, .rlen = 1000, .mlen = 1000,
			      .roff = 8, .uptr = U(0x84), .start = g + 8);
		barrier("tr.local");
		/* a put from here makes rank 0's ME counter trigger a put back */
		fill(src, 64, 5);
		RC(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, rank_proc(0), PT_DATA, 5, 0, NULL, 0), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "put triggered by a message's arrival"))
			CHKEV("remote-triggered put", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 3, .rlen = 128, .mlen = 128,
			      .hdr = 13, .uptr = U(0x82), .start = b[2]);
		check_pat("remote-triggered put", b[2], 128, 13);
		barrier("tr.remote");
		no_ev(eq, 200, "cancelled triggered put");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t t = ct_new(), t2 = ct_new(), t3 = ct_new(), t4 = ct_new(), rc = ct_new();
		ptl_handle_ct_t gct = ct_new();
		uint8_t *src = kbuf(K_MAL, 8192), *dst = kbuf(K_MAL, 4096), *rb = kbuf(K_WIN, 4096);
		ptl_handle_md_t md = md_new(src, 8192, 0, eq, PTL_CT_NONE);
		ptl_handle_md_t gmd = md_new(dst, 4096, PTL_MD_EVENT_CT_REPLY, eq, gct);

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, rb, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_SUCCESS_DISABLE,
		       5, 0, rc, PTL_PRIORITY_LIST, U(0x85));
		fill(src, 256, 11);
		fill(src + 1024, 300, 12);
		fill(src + 2048, 128, 13);
		barrier("tr.ready");
		RC(PtlTriggeredPut(md, 0, 256, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, U(1), 11, t, 2),
		   PTL_OK);
		RC(PtlTriggeredCTInc(t2, (ptl_ct_event_t){ 1, 0 }, t, 3), PTL_OK);
		RC(PtlTriggeredPut(md, 1024, 300, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 2, 0, U(2), 12, t2,
				   1), PTL_OK);
		RC(PtlTriggeredCTSet(t3, (ptl_ct_event_t){ 10, 0 }, t, 4), PTL_OK);
		RC(PtlTriggeredGet(gmd, 100, 1000, rank_proc(1), PT_DATA, 4, 8, U(4), t, 5), PTL_OK);
		RC(PtlCTInc(t, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		no_ev(eq, 100, "nothing triggered at 1 of 2");
		barrier("tr.inc1");
		barrier("tr.checked1");
		RC(PtlCTInc(t, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "SEND of the triggered put"))
			CHKEV("triggered put", &ev, .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = 256,
			      .uptr = U(1));
		ct_is(t2, 0, 0, "chained counter before its trigger");
		RC(PtlCTInc(t, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		ct_wait(t2, 1, T_EV_MS, "PtlTriggeredCTInc");
		if (want_ev(eq, &ev, T_EV_MS, "SEND of the chained triggered put"))
			CHKEV("chained triggered put", &ev, .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = 300,
			      .uptr = U(2));
		ct_is(t3, 0, 0, "PtlTriggeredCTSet before its trigger");
		RC(PtlCTInc(t, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		ct_wait(t3, 10, T_EV_MS, "PtlTriggeredCTSet");
		memset(dst, 0x5a, 4096);
		RC(PtlCTInc(t, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "REPLY of the triggered get"))
			CHKEV("triggered get", &ev, .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = 1000,
			      .roff = 8, .uptr = U(4));
		ct_wait(gct, 1, T_EV_MS, "triggered get: CT_REPLY");
		check_pat_off("triggered get", dst + 100, 1000, 44, 8);
		check_byte("triggered get", dst, 100, 0x5a);
		/* remote trigger: a put arriving on ME 5 counts rc to 1 */
		RC(PtlTriggeredPut(md, 2048, 128, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 3, 0, U(3), 13, rc,
				   1), PTL_OK);
		/* cancelled before its threshold: never fires */
		RC(PtlTriggeredPut(md, 0, 64, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, U(9), 14, t4, 1),
		   PTL_OK);
		RC(PtlCTCancelTriggered(t4), PTL_OK);
		RC(PtlCTInc(t4, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		barrier("tr.local");
		if (want_ev(eq, &ev, T_EV_MS, "SEND of the remote-triggered put"))
			CHKEV("remote-triggered put", &ev, .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = 128,
			      .uptr = U(3));
		ct_is(rc, 1, 0, "ME counter of the triggering message");
		barrier("tr.remote");
		no_ev(eq, 100, "cancelled triggered put: no SEND");
	}
	fini_ni();
}

/* ------------------------------------------------------- sends to self -- */

static void *self_waiter(void *arg)
{
	ptl_handle_ct_t ct = *(ptl_handle_ct_t *)arg;
	ptl_ct_event_t e;

	RC(PtlCTWait(ct, 1, &e), PTL_OK);
	CHK_EQ(e.success, 1, "self: the sleeping waiter's counter");
	return NULL;
}

/* Every rank sends to its own rank: puts (one and many packets, with an
 * ack), gets (one packet, answered by the runtime from the host window,
 * and many), an atomic, a fetch-atomic, a swap, a put that matches
 * nothing (answered PTL_NI_DROPPED), triggered put and get: into a host
 * window entry and an ordinary-memory entry, with the events, counters and
 * bytes any other target gives. */
static void c_self(void)
{
	ptl_handle_eq_t iq, tq;
	ptl_handle_ct_t ict, tct, trig;
	ptl_event_t ev, evs[2];
	ptl_process_t me;
	const size_t L = 128 << 10;
	uint8_t *src, *dst;
	ptl_handle_md_t md, dmd;
	uint64_t ni_ct = 0, nt_ct = 0;
	char ctx[160];

	/* PTL_TEST_PHYS=1: a physical NI, the target its own nid/pid */
	init_ni(getenv("PTL_TEST_PHYS") ? PTL_NI_PHYSICAL : PTL_NI_LOGICAL, PTL_PID_ANY);
	OK(PtlGetId(ni, &me));
	iq = eq_new(64);
	tq = eq_new(64);
	ict = ct_new();
	tct = ct_new();
	trig = ct_new();
	src = kbuf(K_MAL, L);
	dst = kbuf(K_MAL, L);
	md = md_new(src, L, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY, iq, ict);
	dmd = md_new(dst, L, PTL_MD_EVENT_CT_REPLY, iq, ict);
	pt_new(0, tq, PT_DATA);
	barrier("self.ready");
	for (int k = 0; k < 2; k++) {
		uint8_t *b = kbuf(k, L);
		const ptl_match_bits_t mb = 0x5e1f0 + k;
		void *uptr = U(0x700 + k);
		const size_t plen[2] = { 1000, 100000 }, glen[2] = { 8, 70000 };
		int want_pa[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
		uint64_t *v = (uint64_t *)(b + 4096), *ops = (uint64_t *)src, *got = (uint64_t *)dst;

		me_add(PT_DATA, b, L, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, mb, 0, tct,
		       PTL_PRIORITY_LIST, uptr);
		for (int i = 0; i < 2; i++) {
			snprintf(ctx, sizeof(ctx), "put %zu B to self, %s ME", plen[i], kname[k]);
			memset(b, 0xee, L);
			fill(src, plen[i], 30 + i);
			RC(PtlPut(md, 0, plen[i], PTL_ACK_REQ, me, PT_DATA, mb, 16, U(1), 0x77), PTL_OK);
			if (collect(iq, T_EV_MS, 2, want_pa, evs, ctx)) {
				CHKEV(ctx, &evs[0], .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = plen[i],
				      .uptr = U(1));
				CHKEV(ctx, &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = plen[i],
				      .roff = 16, .uptr = U(1), .list = PTL_PRIORITY_LIST);
			}
			if (want_ev(tq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = me, .pt = PT_DATA,
				      .mb = mb, .rlen = plen[i], .mlen = plen[i], .roff = 16, .hdr = 0x77,
				      .uptr = uptr, .start = b + 16, .list = PTL_PRIORITY_LIST);
			check_byte(ctx, b, 16, 0xee);
			check_pat(ctx, b + 16, plen[i], 30 + i);
			check_byte(ctx, b + 16 + plen[i], 64, 0xee);
			ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
			ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
		}
		for (int i = 0; i < 2; i++) {
			snprintf(ctx, sizeof(ctx), "get %zu B from self, %s ME", glen[i], kname[k]);
			fill(b, L, 40 + i);
			memset(dst, 0x5a, L);
			RC(PtlGet(dmd, 8, glen[i], me, PT_DATA, mb, 100, U(2)), PTL_OK);
			if (want_ev(iq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = glen[i],
				      .roff = 100, .uptr = U(2));
			if (want_ev(tq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_GET, .ini = me,
				      .pt = PT_DATA, .mb = mb, .rlen = glen[i], .mlen = glen[i],
				      .roff = 100, .uptr = uptr, .start = b + 100);
			check_byte(ctx, dst, 8, 0x5a);
			check_pat_off(ctx, dst + 8, glen[i], 40 + i, 100);
			check_byte(ctx, dst + 8 + glen[i], 64, 0x5a);
			ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
			ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
		}
		/* atomics on 4 uint64 at offset 4096 */
		for (int j = 0; j < 4; j++) {
			v[j] = 1000 + j;
			ops[j] = 10 * (j + 1);
		}
		snprintf(ctx, sizeof(ctx), "atomic SUM to self, %s ME", kname[k]);
		RC(PtlAtomic(md, 0, 32, PTL_ACK_REQ, me, PT_DATA, mb, 4096, U(3), 0, PTL_SUM,
			     PTL_UINT64_T), PTL_OK);
		if (collect(iq, T_EV_MS, 2, want_pa, evs, ctx))
			CHKEV(ctx, &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = 32, .roff = 4096,
			      .uptr = U(3), .list = PTL_PRIORITY_LIST);
		if (want_ev(tq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_ATOMIC, .ini = me,
			      .pt = PT_DATA, .mb = mb, .rlen = 32, .mlen = 32, .roff = 4096, .uptr = uptr,
			      .start = b + 4096);
		for (int j = 0; j < 4; j++)
			CHK_EQ(v[j], 1000 + j + 10 * (j + 1), ctx);
		ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
		ct_wait(tct, ++nt_ct, T_EV_MS, ctx);

		snprintf(ctx, sizeof(ctx), "fetch-atomic SUM to self, %s ME", kname[k]);
		memset(dst, 0, 64);
		RC(PtlFetchAtomic(dmd, 0, md, 0, 32, me, PT_DATA, mb, 4096, U(4), 0, PTL_SUM,
				  PTL_UINT64_T), PTL_OK);
		if (collect(iq, T_EV_MS, 2, (int[]){ PTL_EVENT_SEND, PTL_EVENT_REPLY }, evs, ctx))
			CHKEV(ctx, &evs[1], .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = 32,
			      .roff = 4096, .uptr = U(4));
		if (want_ev(tq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_FETCH_ATOMIC, .ini = me,
			      .pt = PT_DATA, .mb = mb, .rlen = 32, .mlen = 32, .roff = 4096, .uptr = uptr,
			      .start = b + 4096, .list = PTL_PRIORITY_LIST);
		for (int j = 0; j < 4; j++) {
			CHK_EQ(got[j], 1000 + j + 10 * (j + 1), ctx);
			CHK_EQ(v[j], 1000 + j + 20 * (j + 1), ctx);
		}
		ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
		ct_wait(tct, ++nt_ct, T_EV_MS, ctx);

		snprintf(ctx, sizeof(ctx), "swap (CSWAP) to self, %s ME", kname[k]);
		{
			uint64_t cmp = v[0];

			ops[0] = 0xc0ffee;
			RC(PtlSwap(dmd, 0, md, 0, 8, me, PT_DATA, mb, 4096, U(5), 0, &cmp, PTL_CSWAP,
				   PTL_UINT64_T), PTL_OK);
			if (collect(iq, T_EV_MS, 2, (int[]){ PTL_EVENT_SEND, PTL_EVENT_REPLY }, evs, ctx))
				CHKEV(ctx, &evs[1], .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = 8,
				      .roff = 4096, .uptr = U(5));
			if (want_ev(tq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = F_TYPE | F_INI | F_MLEN, .type = PTL_EVENT_FETCH_ATOMIC,
				      .ini = me, .mlen = 8);
			CHK_EQ(got[0], cmp, ctx);
			CHK_EQ(v[0], 0xc0ffee, ctx);
			ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
			ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
		}

		/* a datatype of 16 bytes: its CSWAP operand fills two header words */
		snprintf(ctx, sizeof(ctx), "double complex SUM and CSWAP to self, %s ME", kname[k]);
		{
			double complex *z = (double complex *)(b + 8192), *zs = (double complex *)src,
				       *zg = (double complex *)dst, cmp = 1 - 2 * I;

			z[0] = 1 - 2 * I;
			z[1] = 3 + 0.5 * I;
			zs[0] = 0.5 + 0.5 * I;
			zs[1] = -1;
			RC(PtlAtomic(md, 0, 32, PTL_ACK_REQ, me, PT_DATA, mb, 8192, U(20), 0, PTL_SUM,
				     PTL_DOUBLE_COMPLEX), PTL_OK);
			if (collect(iq, T_EV_MS, 2, want_pa, evs, ctx))
				CHKEV(ctx, &evs[1], .m = F_TYPE | F_FAIL | F_MLEN, .type = PTL_EVENT_ACK,
				      .fail = PTL_NI_OK, .mlen = 32);
			if (want_ev(tq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = F_TYPE | F_ATYPE | F_AOP, .type = PTL_EVENT_ATOMIC,
				      .atype = PTL_DOUBLE_COMPLEX, .aop = PTL_SUM);
			CHK(z[0] == 1.5 - 1.5 * I && z[1] == 2 + 0.5 * I, "%s: sums", ctx);
			ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
			ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
			/* compare with z[0] as it is now: swapped; then a stale
			 * comparand: not */
			for (int round = 0; round < 2; round++) {
				cmp = round ? 1 - 2 * I : 1.5 - 1.5 * I;
				zs[0] = 9 + 9 * I;
				RC(PtlSwap(dmd, 0, md, 0, 16, me, PT_DATA, mb, 8192, U(21), 0, &cmp, PTL_CSWAP,
					   PTL_DOUBLE_COMPLEX), PTL_OK);
				collect(iq, T_EV_MS, 2, (int[]){ PTL_EVENT_SEND, PTL_EVENT_REPLY }, evs, ctx);
				want_ev(tq, &ev, T_EV_MS, ctx);
				CHK(zg[0] == (round ? 9 + 9 * I : 1.5 - 1.5 * I), "%s: old value, round %d",
				    ctx, round);
				CHK(z[0] == 9 + 9 * I, "%s: CSWAP round %d", ctx, round);
				ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
				ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
			}
		}

		snprintf(ctx, sizeof(ctx), "triggered put and get to self, %s ME", kname[k]);
		memset(b, 0, L);
		fill(src, 3000, 50);
		fill(b + 8192, 2000, 51);
		memset(dst, 0x5a, 4096);
		RC(PtlTriggeredPut(md, 0, 3000, PTL_NO_ACK_REQ, me, PT_DATA, mb, 0, U(6), 6, trig,
				   2 * k + 1), PTL_OK);
		RC(PtlTriggeredGet(dmd, 0, 2000, me, PT_DATA, mb, 8192, U(7), trig, 2 * k + 2), PTL_OK);
		no_ev(tq, 50, "nothing triggered yet");
		RC(PtlCTInc(trig, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		if (want_ev(tq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = me, .pt = PT_DATA,
			      .mb = mb, .rlen = 3000, .mlen = 3000, .roff = 0, .hdr = 6, .uptr = uptr,
			      .start = b, .list = PTL_PRIORITY_LIST);
		if (want_ev(iq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = 3000, .uptr = U(6));
		check_pat(ctx, b, 3000, 50);
		ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
		RC(PtlCTInc(trig, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		if (want_ev(iq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = 2000,
			      .roff = 8192, .uptr = U(7));
		if (want_ev(tq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = F_TYPE | F_INI | F_MLEN, .type = PTL_EVENT_GET, .ini = me,
			      .mlen = 2000);
		check_pat(ctx, dst, 2000, 51);
		ct_wait(ict, ++ni_ct, T_EV_MS, ctx);
		ct_wait(tct, ++nt_ct, T_EV_MS, ctx);
	}
	/* the unexpected list: a put to self lands on an overflow entry; a
	 * use-once priority entry appended after it is used up at once
	 * (PUT_OVERFLOW, AUTO_UNLINK, AUTO_FREE; never linked) */
	{
		uint8_t *ovb = kbuf(K_MAL, 4096), *pb = kbuf(K_MAL, 4096);
		ptl_handle_me_t hov, hp;
		int want3[3] = { PTL_EVENT_PUT_OVERFLOW, PTL_EVENT_AUTO_UNLINK, PTL_EVENT_AUTO_FREE };
		ptl_event_t e3[3];

		hov = me_add(PT_DATA, ovb, 4096, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL, 0x0f0, 0,
			     PTL_CT_NONE, PTL_OVERFLOW_LIST, U(0x7f0));
		fill(src, 300, 60);
		RC(PtlPut(md, 0, 300, PTL_ACK_REQ, me, PT_DATA, 0x0f0, 0, U(9), 0x99), PTL_OK);
		if (collect(iq, T_EV_MS, 2, (int[]){ PTL_EVENT_SEND, PTL_EVENT_ACK }, evs, "put to self, unexpected"))
			CHKEV("put to self, unexpected", &evs[1], .m = ACK_M & ~F_ROFF, .type = PTL_EVENT_ACK,
			      .mlen = 300, .uptr = U(9), .list = PTL_OVERFLOW_LIST);
		ct_wait(ict, ++ni_ct, T_EV_MS, "put to self, unexpected");
		if (want_ev(tq, &ev, T_EV_MS, "put to self, unexpected: target"))
			CHKEV("put to self, unexpected: target", &ev, .m = F_TYPE | F_LIST | F_UPTR,
			      .type = PTL_EVENT_PUT, .list = PTL_OVERFLOW_LIST, .uptr = U(0x7f0));
		skip_link = 0;
		hp = me_add(PT_DATA, pb, 4096, PTL_ME_OP_PUT | PTL_ME_USE_ONCE, 0x0f0, 0, PTL_CT_NONE,
			    PTL_PRIORITY_LIST, U(0x7f1));
		if (collect(tq, T_EV_MS, 3, want3, e3, "use-once entry used up at its append")) {
			CHKEV("use-once entry used up at its append", &e3[0], .m = F_TYPE | F_UPTR | F_MLEN |
			      F_HDR, .type = PTL_EVENT_PUT_OVERFLOW, .uptr = U(0x7f1), .mlen = 300,
			      .hdr = 0x99);
			CHKEV("use-once entry used up at its append", &e3[1], .m = F_TYPE | F_UPTR | F_PT,
			      .type = PTL_EVENT_AUTO_UNLINK, .uptr = U(0x7f1), .pt = PT_DATA);
			CHKEV("use-once entry used up at its append", &e3[2], .m = F_TYPE | F_UPTR | F_PT,
			      .type = PTL_EVENT_AUTO_FREE, .uptr = U(0x7f1), .pt = PT_DATA);
		}
		skip_link = 1;
		RC(PtlMEUnlink(hp), PTL_ARG_INVALID);	/* never linked */
		RC(PtlMEUnlink(hov), PTL_OK);
	}
	/* matching as for any sender: nothing matches these bits */
	RC(PtlPut(md, 0, 64, PTL_ACK_REQ, me, PT_DATA, 0xdead, 0, U(8), 0), PTL_OK);
	if (collect(iq, T_EV_MS, 2, (int[]){ PTL_EVENT_SEND, PTL_EVENT_ACK }, evs, "put to self, no match"))
		CHKEV("put to self, no match", &evs[1], .m = F_TYPE | F_FAIL | F_UPTR,
		      .type = PTL_EVENT_ACK, .fail = PTL_NI_DROPPED, .uptr = U(8));
	ct_wait(ict, ni_ct + 1, T_EV_MS, "put to self, no match: CT_ACK counts the failure");
	no_ev(tq, 50, "self: no more target events");
	no_ev(iq, 20, "self: no more initiator events");
	if (getenv("PTL_TEST_NO_TIMER")) {
		/* a thread sleeps on a counter while this one puts to self
		 * (into ordinary memory: the loopback queue's eventfd wakes
		 * it; into the host window: the event ring).  If the put
		 * comes first, the wait does not sleep: the check below holds
		 * either way. */
		for (int k = 0; k < 2; k++) {
			ptl_handle_ct_t c2 = ct_new();
			uint8_t *b2 = kbuf(k, 4096);
			pthread_t th;

			me_add(PT_DATA, b2, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM |
			       PTL_ME_EVENT_SUCCESS_DISABLE, 0x51ee9 + k, 0, c2, PTL_PRIORITY_LIST, NULL);
			if (pthread_create(&th, NULL, self_waiter, &c2))
				DIE("pthread_create");
			msleep(100);
			RC(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, me, PT_DATA, 0x51ee9 + k, 0, NULL, 0), PTL_OK);
			pthread_join(th, NULL);
			if (want_ev(iq, &ev, T_EV_MS, "self: put to a sleeping waiter"))
				CHK_EQ(ev.type, PTL_EVENT_SEND, "self: put to a sleeping waiter");
		}
		/* every wait that slept was woken (the loopback queue's
		 * eventfd, the event ring), none ended by its 2 s period */
		ptl_spin_wait_stats_t st;

		OK(PtlSpinWaitStats(ni, &st));
		LOG("waits %llu: slept and woken by a packet %llu, by the ring %llu, poked %llu, by the timer %llu",
		    (unsigned long long)st.waits, (unsigned long long)st.waits_rx,
		    (unsigned long long)st.waits_woken, (unsigned long long)st.waits_poked,
		    (unsigned long long)st.waits_timer);
		CHK_EQ(st.waits_timer, 0, "self: waits ended by their period");
	}
	barrier("self.done");
	fini_ni();
}

/* -------------------------------------------- non-matching, SHMEM-like -- */

/* What an OpenSHMEM library does over Portals (Sandia OpenSHMEM's Portals
 * transport): a non-matching logical NI, the symmetric heap (ordinary
 * memory) and a data segment (here in the host window) each exposed
 * through one list entry per portal, counting on a target counter; MDs
 * with success events off, counting acks (puts, atomics: quiet and fence
 * wait on them) and replies (gets, fetches).  Every rank puts to every
 * rank, itself included; gets; atomics and fetch-atomics on rank 0;
 * a fence between a long put and its flag, the target waiting on its
 * counter; a put triggered by an arrival, and a triggered atomic.  A
 * matching NI is open at the same time with its own portal 0. */
#define SH_HEAP 0		/* portal of the heap (both NIs have a portal 0) */
#define SH_DATA 1		/* portal of the data segment */
#define SH_HEAPLEN (256 << 10)
static void c_shmem(void)
{
	ptl_handle_ni_t nni, h;
	ptl_handle_eq_t err_eq, meq;
	ptl_handle_ct_t tct_heap, tct_data, tct_top, put_ct, get_ct, trig;
	ptl_handle_md_t heap_md, data_md, res_md, mmd;
	ptl_handle_le_t heap_le, data_le;
	ptl_handle_me_t mme;
	ptl_pt_index_t pt;
	ptl_ni_limits_t nlim;
	ptl_le_t le;
	ptl_md_t md;
	uint8_t *heap, *data, *res, *mbuf, *msrc;
	uint64_t nput = 0, nget = 0, th = 0;
	const int K = 10;
	char ctx[160];

	OK(PtlInit());
	OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &nlim,
		     &nni));
	/* and a matching NI beside it */
	OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &lim, &ni));
	CHK(!PtlHandleIsEqual(ni, nni), "two NIs, two handles");
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, &nlim,
		     &h), PTL_ARG_INVALID);

	OK(PtlEQAlloc(nni, 64, &err_eq));
	OK(PtlCTAlloc(nni, &tct_heap));
	OK(PtlCTAlloc(nni, &tct_data));
	OK(PtlCTAlloc(nni, &put_ct));
	OK(PtlCTAlloc(nni, &get_ct));
	OK(PtlCTAlloc(nni, &trig));
	OK(PtlCTAlloc(nni, &tct_top));
	OK(PtlPTAlloc(nni, 0, err_eq, SH_HEAP, &pt));
	OK(PtlPTAlloc(nni, 0, err_eq, SH_DATA, &pt));
	if (posix_memalign((void **)&heap, 4096, SH_HEAPLEN) || posix_memalign((void **)&res, 4096, 65536))
		DIE("out of memory");
	memset(heap, 0, SH_HEAPLEN);
	memset(res, 0, 65536);
	OK(PtlSpinHostAlloc(nni, 65536, (void **)&data));
	memset(&le, 0, sizeof(le));
	le.uid = PTL_UID_ANY;
	le.options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_LINK_DISABLE |
		     PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_CT_COMM;
	le.start = heap;
	le.length = SH_HEAPLEN;
	le.ct_handle = tct_heap;
	OK(PtlLEAppend(nni, SH_HEAP, &le, PTL_PRIORITY_LIST, NULL, &heap_le));
	le.start = data;
	le.length = 65536;
	le.ct_handle = tct_data;
	OK(PtlLEAppend(nni, SH_DATA, &le, PTL_PRIORITY_LIST, NULL, &data_le));
	CHK(PtlNIHandle(heap_le, &h) == PTL_OK && h == nni, "PtlNIHandle(list entry) is the non-matching NI");
	RC(PtlLEAppend(ni, SH_HEAP, &le, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
	md = (ptl_md_t){ .start = heap, .length = SH_HEAPLEN,
			 .options = PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_ACK,
			 .eq_handle = err_eq, .ct_handle = put_ct };
	OK(PtlMDBind(nni, &md, &heap_md));
	md.start = data;
	md.length = 65536;
	OK(PtlMDBind(nni, &md, &data_md));
	md = (ptl_md_t){ .start = res, .length = 65536,
			 .options = PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_REPLY,
			 .eq_handle = err_eq, .ct_handle = get_ct };
	OK(PtlMDBind(nni, &md, &res_md));
	CHK(PtlNIHandle(res_md, &h) == PTL_OK && h == nni, "PtlNIHandle(MD) is the non-matching NI");

	/* the matching NI's portal 0 and an entry on it */
	meq = eq_new(64);
	pt_new(0, meq, SH_HEAP);
	mbuf = kbuf(K_MAL, 4096);
	msrc = kbuf(K_MAL, 4096);
	mme = me_add(SH_HEAP, mbuf, 4096, PTL_ME_OP_PUT, 7, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x77));
	mmd = md_new(msrc, 4096, 0, meq, PTL_CT_NONE);
	{
		ptl_me_t me = { .start = heap, .length = 8, .ct_handle = PTL_CT_NONE,
				.options = PTL_ME_OP_PUT, .match_id = any_proc() };

		RC(PtlMEAppend(nni, SH_HEAP, &me, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
	}
	/* the last portal index of each NI: at least 64 indexes per NI (the
	 * issue's "at least 64 portal indexes"), each reached from its own
	 * kind of NI, not the other's */
	CHK(lim.max_pt_index >= 63 && nlim.max_pt_index >= 63, "64 portal indexes per NI: max_pt_index %d, %d",
	    lim.max_pt_index, nlim.max_pt_index);
	pt_new(0, meq, (ptl_pt_index_t)lim.max_pt_index);
	me_add((ptl_pt_index_t)lim.max_pt_index, mbuf + 2048, 1024, PTL_ME_OP_PUT, 9, 0, PTL_CT_NONE,
	       PTL_PRIORITY_LIST, U(0x79));
	OK(PtlPTAlloc(nni, 0, err_eq, (ptl_pt_index_t)nlim.max_pt_index, &pt));
	CHK_EQ(pt, (ptl_pt_index_t)nlim.max_pt_index, "non-matching NI: its last portal index");
	le.start = heap + SH_HEAPLEN - 4096;
	le.length = 4096;
	le.ct_handle = tct_top;
	OK(PtlLEAppend(nni, (ptl_pt_index_t)nlim.max_pt_index, &le, PTL_PRIORITY_LIST, NULL, &h));
	barrier("sh.ready");

	/* 0: the same portal index on the two NIs: a put on each */
	fill(msrc, 512, 90 + R);
	RC(PtlPut(mmd, 0, 512, PTL_NO_ACK_REQ, rank_proc((R + 1) % N), SH_HEAP, 7, 0, NULL, 0), PTL_OK);
	{
		ptl_event_t evs[2];

		if (collect(meq, T_EV_MS, 2, (int[]){ PTL_EVENT_PUT, PTL_EVENT_SEND }, evs,
			    "matching NI: put on portal 0"))
			CHKEV("matching NI: put on portal 0", &evs[0],
			      .m = F_TYPE | F_INI | F_MLEN | F_UPTR | F_START, .type = PTL_EVENT_PUT,
			      .ini = rank_proc((R + N - 1) % N), .mlen = 512, .uptr = U(0x77),
			      .start = mbuf);
	}
	check_pat("matching NI: put on portal 0", mbuf, 512, 90 + (R + N - 1) % N);

	/* 0b: a put to the last portal index of each NI (after every rank
	 * took step 0's events: both steps post to meq) */
	barrier("sh.p0");
	fill(msrc + 1024, 700, 60 + R);
	RC(PtlPut(mmd, 1024, 700, PTL_NO_ACK_REQ, rank_proc((R + 1) % N), (ptl_pt_index_t)lim.max_pt_index,
		  9, 0, NULL, 0), PTL_OK);
	{
		ptl_event_t evs[2];

		if (collect(meq, T_EV_MS, 2, (int[]){ PTL_EVENT_PUT, PTL_EVENT_SEND }, evs,
			    "matching NI: put on its last portal index"))
			CHKEV("matching NI: put on its last portal index", &evs[0],
			      .m = F_TYPE | F_INI | F_MLEN | F_UPTR | F_START, .type = PTL_EVENT_PUT,
			      .ini = rank_proc((R + N - 1) % N), .mlen = 700, .uptr = U(0x79),
			      .start = mbuf + 2048);
	}
	check_pat("matching NI: put on its last portal index", mbuf + 2048, 700, 60 + (R + N - 1) % N);
	fill(heap + 1024, 600, 70 + R);
	RC(PtlPut(heap_md, 1024, 600, PTL_CT_ACK_REQ, rank_proc((R + 1) % N), (ptl_pt_index_t)nlim.max_pt_index,
		  0, 100, NULL, 0), PTL_OK);
	ct_wait(put_ct, ++nput, T_EV_MS, "non-matching NI: put on its last portal index acked");
	ct_wait(tct_top, 1, T_EV_MS, "non-matching NI: target counter of its last portal index");
	check_pat("non-matching NI: put on its last portal index", heap + SH_HEAPLEN - 4096 + 100, 600,
		  70 + (R + N - 1) % N);
	barrier("sh.top");

	/* 1: puts to every PE (itself too) into heap and data segment; quiet */
	fill(heap + 4096 + R * 16384, 10000, 100 + R);
	fill(data + 32768 + R * 1000, 1000, 150 + R);
	for (int t = 0; t < N; t++) {
		RC(PtlPut(heap_md, 4096 + R * 16384, 10000, PTL_CT_ACK_REQ, rank_proc(t), SH_HEAP, 0,
			  4096 + R * 16384, NULL, 0), PTL_OK);
		RC(PtlPut(data_md, 32768 + R * 1000, 1000, PTL_CT_ACK_REQ, rank_proc(t), SH_DATA, 0,
			  R * 1000, NULL, 0), PTL_OK);
		nput += 2;
	}
	ct_wait(put_ct, nput, T_EV_MS, "quiet after the puts");
	ct_wait(tct_heap, th += N, T_EV_MS, "heap: target counter of the puts");
	ct_wait(tct_data, N, T_EV_MS, "data segment: target counter of the puts");
	barrier("sh.put");
	for (int r = 0; r < N; r++) {
		snprintf(ctx, sizeof(ctx), "heap put from PE %d", r);
		check_pat(ctx, heap + 4096 + r * 16384, 10000, 100 + r);
		snprintf(ctx, sizeof(ctx), "data segment put from PE %d", r);
		check_pat(ctx, data + r * 1000, 1000, 150 + r);
	}
	barrier("sh.checked");

	/* 2: gets from the next PE and from itself */
	fill(heap + 150000, 20000, 200 + R);
	barrier("sh.getready");
	RC(PtlGet(res_md, 0, 20000, rank_proc((R + 1) % N), SH_HEAP, 0, 150000, NULL), PTL_OK);
	RC(PtlGet(res_md, 20000, 20000, rank_proc(R), SH_HEAP, 0, 150000, NULL), PTL_OK);
	nget += 2;
	ct_wait(get_ct, nget, T_EV_MS, "gets: CT_REPLY");
	check_pat("get from the next PE", res, 20000, 200 + (R + 1) % N);
	check_pat("get from itself", res + 20000, 20000, 200 + R);
	ct_wait(tct_heap, th += 2, T_EV_MS, "heap: target counter of the gets");
	barrier("sh.get");

	/* 3: atomics and fetch-atomics on PE 0 */
	{
		uint64_t *src = (uint64_t *)(heap + 200000), *fetched = (uint64_t *)(res + 40000);

		src[0] = R + 1;
		src[1] = 1;
		for (int k = 0; k < K; k++) {
			RC(PtlAtomic(heap_md, 200000, 8, PTL_CT_ACK_REQ, rank_proc(0), SH_HEAP, 0, 0, NULL,
				     0, PTL_SUM, PTL_UINT64_T), PTL_OK);
			RC(PtlFetchAtomic(res_md, 40000 + 8 * k, heap_md, 200008, 8, rank_proc(0), SH_HEAP,
					  0, 8, NULL, 0, PTL_SUM, PTL_UINT64_T), PTL_OK);
		}
		nput += K;
		nget += K;
		ct_wait(put_ct, nput, T_EV_MS, "quiet after the atomics");
		ct_wait(get_ct, nget, T_EV_MS, "fetch-atomics: CT_REPLY");
		for (int k = 1; k < K; k++)
			CHK(fetched[k] > fetched[k - 1] && fetched[k] < (uint64_t)N * K,
			    "fetch-add %d: %llu after %llu", k, (unsigned long long)fetched[k],
			    (unsigned long long)fetched[k - 1]);
		if (R == 0)
			ct_wait(tct_heap, th += 2 * K * N, T_EV_MS, "heap: target counter of the atomics");
		barrier("sh.amo");
		if (R == 0) {
			CHK_EQ(*(uint64_t *)heap, (uint64_t)K * N * (N + 1) / 2, "atomic SUM at PE 0");
			CHK_EQ(*(uint64_t *)(heap + 8), (uint64_t)K * N, "fetch-add at PE 0");
		}
	}
	barrier("sh.amochecked");

	/* 4: fence: a long put, then its flag; the target waits on its counter */
	if (R == 0) {
		fill(heap + 80000, 70000, 77);
		heap[210000] = 1;
		RC(PtlPut(heap_md, 80000, 70000, PTL_CT_ACK_REQ, rank_proc(1), SH_HEAP, 0, 80000, NULL,
			  0), PTL_OK);
		ct_wait(put_ct, ++nput, T_EV_MS, "fence");
		RC(PtlPut(heap_md, 210000, 1, PTL_CT_ACK_REQ, rank_proc(1), SH_HEAP, 0, 210000, NULL, 0),
		   PTL_OK);
		ct_wait(put_ct, ++nput, T_EV_MS, "quiet after the flag");
	} else if (R == 1) {
		ct_wait(tct_heap, th += 2, T_EV_MS, "target counter: data and flag");
		CHK_EQ(heap[210000], 1, "the flag");
		check_pat("data before its flag", heap + 80000, 70000, 77);
	}
	barrier("sh.fence");

	/* 5: triggered: PE 1 puts back when PE 0's put arrives (its
	 * heap counter), and then adds with a triggered atomic */
	if (R == 1) {
		fill(heap + 100000, 4000, 55);
		*(uint64_t *)(heap + 104000) = 5;
		RC(PtlTriggeredPut(heap_md, 100000, 4000, PTL_CT_ACK_REQ, rank_proc(0), SH_HEAP, 0,
				   100000, NULL, 0, tct_heap, th + 1), PTL_OK);
		RC(PtlTriggeredAtomic(heap_md, 104000, 8, PTL_CT_ACK_REQ, rank_proc(0), SH_HEAP, 0, 0,
				      NULL, 0, PTL_SUM, PTL_UINT64_T, tct_heap, th + 1), PTL_OK);
		barrier("sh.trigready");
		ct_wait(tct_heap, th += 1, T_EV_MS, "PE 0's put arrived");
		ct_wait(put_ct, nput += 2, T_EV_MS, "the triggered put and atomic: acks");
	} else if (R == 0) {
		barrier("sh.trigready");
		no_ev(err_eq, 50, "nothing yet");
		RC(PtlPut(heap_md, 4096, 8, PTL_CT_ACK_REQ, rank_proc(1), SH_HEAP, 0, 220000, NULL, 0),
		   PTL_OK);
		ct_wait(put_ct, ++nput, T_EV_MS, "the triggering put");
		ct_wait(tct_heap, th += 2, T_EV_MS, "the triggered put and atomic arrived");
		check_pat("triggered put", heap + 100000, 4000, 55);
		CHK_EQ(*(uint64_t *)heap, (uint64_t)K * N * (N + 1) / 2 + 5, "triggered atomic");
	} else {
		barrier("sh.trigready");
	}
	barrier("sh.trig");

	/* 6: the unexpected list of a non-matching portal (to itself): an
	 * overflow list entry takes a put, PtlLESearch finds its header, a
	 * use-once priority entry is used up by it at its append */
	{
		ptl_handle_eq_t lq;
		ptl_handle_le_t ov, pr;
		uint8_t *ovb = kbuf(K_MAL, 4096), *prb = kbuf(K_MAL, 4096);
		ptl_event_t ev, e3[3];
		int want3[3] = { PTL_EVENT_PUT_OVERFLOW, PTL_EVENT_AUTO_UNLINK, PTL_EVENT_AUTO_FREE };

		OK(PtlEQAlloc(nni, 16, &lq));
		OK(PtlPTAlloc(nni, 0, lq, 2, &pt));
		le = (ptl_le_t){ .start = ovb, .length = 4096, .ct_handle = PTL_CT_NONE,
				 .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE };
		OK(PtlLEAppend(nni, 2, &le, PTL_OVERFLOW_LIST, U(0x6f), &ov));
		fill(heap + 230000, 100, 66);
		RC(PtlPut(heap_md, 230000, 100, PTL_CT_ACK_REQ, rank_proc(R), 2, 0, 8, NULL, 0x66), PTL_OK);
		ct_wait(put_ct, ++nput, T_EV_MS, "put on a non-matching overflow list entry");
		if (want_ev(lq, &ev, T_EV_MS, "non-matching overflow entry"))
			CHKEV("non-matching overflow entry", &ev, .m = F_TYPE | F_LIST | F_UPTR | F_MLEN |
			      F_START, .type = PTL_EVENT_PUT, .list = PTL_OVERFLOW_LIST, .uptr = U(0x6f),
			      .mlen = 100, .start = ovb + 8);
		check_pat("non-matching overflow entry", ovb + 8, 100, 66);
		le = (ptl_le_t){ .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT };
		RC(PtlLESearch(nni, 2, &le, PTL_SEARCH_ONLY, U(0x70)), PTL_OK);
		if (want_ev(lq, &ev, T_EV_MS, "PtlLESearch"))
			CHKEV("PtlLESearch", &ev, .m = F_TYPE | F_UPTR | F_FAIL | F_HDR | F_MLEN,
			      .type = PTL_EVENT_SEARCH, .uptr = U(0x70), .fail = PTL_NI_OK, .hdr = 0x66,
			      .mlen = 100);
		RC(PtlLESearch(ni, 2, &le, PTL_SEARCH_ONLY, U(0x70)), PTL_ARG_INVALID);
		le = (ptl_le_t){ .start = prb, .length = 4096, .ct_handle = PTL_CT_NONE,
				 .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT | PTL_LE_USE_ONCE };
		OK(PtlLEAppend(nni, 2, &le, PTL_PRIORITY_LIST, U(0x71), &pr));
		if (collect(lq, T_EV_MS, 3, want3, e3, "use-once list entry used up at its append"))
			CHKEV("use-once list entry used up at its append", &e3[0],
			      .m = F_TYPE | F_UPTR | F_MLEN | F_HDR, .type = PTL_EVENT_PUT_OVERFLOW,
			      .uptr = U(0x71), .mlen = 100, .hdr = 0x66);
		RC(PtlLEUnlink(pr), PTL_ARG_INVALID);
		le = (ptl_le_t){ .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT };
		RC(PtlLESearch(nni, 2, &le, PTL_SEARCH_ONLY, U(0x72)), PTL_OK);
		if (want_ev(lq, &ev, T_EV_MS, "PtlLESearch after"))
			CHKEV("PtlLESearch after", &ev, .m = F_TYPE | F_UPTR | F_FAIL,
			      .type = PTL_EVENT_SEARCH, .uptr = U(0x72), .fail = PTL_NI_NO_MATCH);
		RC(PtlLEUnlink(ov), PTL_OK);
		RC(PtlPTFree(nni, 2), PTL_OK);
	}
	barrier("sh.unex");
	no_ev(err_eq, 20, "no failure events");
	no_ev(meq, 20, "matching NI: no more events");
	ct_is(put_ct, nput, 0, "acks, no failure");
	RC(PtlLEUnlink(heap_le), PTL_OK);
	RC(PtlLEUnlink(data_le), PTL_OK);
	RC(PtlLEUnlink(heap_le), PTL_ARG_INVALID);
	RC(PtlMEUnlink(mme), PTL_OK);
	barrier("sh.done");
	RC(PtlNIFini(nni), PTL_OK);
	RC(PtlCTGet(put_ct, &(ptl_ct_event_t){ 0, 0 }), PTL_ARG_INVALID);	/* its NI is gone */
	fini_ni();
}

/* ------------------------------------------ triggered appends and unlinks -- */

/* Rank 1 appends an entry when its counter reaches 1 (PtlCTInc) and
 * another when a put arrives on a counting entry (the trigger fires inside
 * progress), and unlinks the first at 2; rank 0's puts find nothing
 * before (PTL_NI_DROPPED), the entries between, nothing after. */
static void c_trigme(void)
{
	ptl_event_t evs[2];
	int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t trig = ct_new(), arr = ct_new();
		uint8_t *b1 = kbuf(K_MAL, 4096), *b2 = kbuf(K_WIN, 4096), *b3 = kbuf(K_MAL, 4096);
		ptl_handle_me_t h1, h2;
		ptl_event_t ev;
		ptl_me_t me;

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, b3, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM |
		       PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_LINK_DISABLE, 1, 0, arr,
		       PTL_PRIORITY_LIST, U(3));
		skip_link = 0;	/* the triggered appends' LINK events are checked */
		memset(&me, 0, sizeof(me));
		me.ct_handle = PTL_CT_NONE;
		me.uid = PTL_UID_ANY;
		me.match_id = any_proc();
		me.options = PTL_ME_OP_PUT;
		me.start = b1;
		me.length = 4096;
		me.match_bits = 9;
		RC(PtlTriggeredMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(1), &h1, trig, 1), PTL_OK);
		me.start = b2;
		me.match_bits = 10;
		RC(PtlTriggeredMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(2), &h2, arr, 1), PTL_OK);
		RC(PtlTriggeredMEUnlink(h1, trig, 2), PTL_OK);
		RC(PtlTriggeredMEAppend(ni, (ptl_pt_index_t)lim.max_pt_index + 1, &me, PTL_PRIORITY_LIST, U(2), &h2, arr, 1),
		   PTL_ARG_INVALID);
		barrier("tm.ready");
		barrier("tm.before");
		RC(PtlCTInc(trig, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "triggered append: LINK"))
			CHKEV("triggered append: LINK", &ev, .m = F_TYPE | F_UPTR, .type = PTL_EVENT_LINK,
			      .uptr = U(1));
		barrier("tm.linked");
		if (want_ev(eq, &ev, T_EV_MS, "put on the triggered entry"))
			CHKEV("put on the triggered entry", &ev, .m = F_TYPE | F_UPTR | F_MLEN | F_START,
			      .type = PTL_EVENT_PUT, .uptr = U(1), .mlen = 100, .start = b1);
		check_pat("put on the triggered entry", b1, 100, 21);
		/* rank 0's put on entry 3 appended entry 2, in progress */
		if (want_ev(eq, &ev, T_EV_MS, "append triggered by an arrival: LINK"))
			CHKEV("append triggered by an arrival: LINK", &ev, .m = F_TYPE | F_UPTR,
			      .type = PTL_EVENT_LINK, .uptr = U(2));
		if (want_ev(eq, &ev, T_EV_MS, "put on the entry an arrival appended"))
			CHKEV("put on the entry an arrival appended", &ev, .m = F_TYPE | F_UPTR | F_MLEN,
			      .type = PTL_EVENT_PUT, .uptr = U(2), .mlen = 200);
		check_pat("put on the entry an arrival appended", b2, 200, 22);
		barrier("tm.put");
		RC(PtlCTInc(trig, (ptl_ct_event_t){ 1, 0 }), PTL_OK);
		RC(PtlMEUnlink(h1), PTL_ARG_INVALID);	/* the trigger unlinked it */
		barrier("tm.unlinked");
		barrier("tm.after");
		no_ev(eq, 50, "trigme: no more events");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("tm.ready");
		RC(PtlPut(md, 0, 100, PTL_ACK_REQ, rank_proc(1), PT_DATA, 9, 0, NULL, 0), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "before the trigger"))
			CHK_EQ(evs[1].ni_fail_type, PTL_NI_DROPPED, "before the trigger: no entry");
		barrier("tm.before");
		barrier("tm.linked");
		fill(src, 100, 21);
		RC(PtlPut(md, 0, 100, PTL_ACK_REQ, rank_proc(1), PT_DATA, 9, 0, NULL, 0), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "on the triggered entry"))
			CHK_EQ(evs[1].ni_fail_type, PTL_NI_OK, "on the triggered entry");
		RC(PtlPut(md, 0, 8, PTL_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, NULL, 0), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "the arrival that triggers"))
			CHK_EQ(evs[1].ni_fail_type, PTL_NI_OK, "the arrival that triggers");
		fill(src + 1000, 200, 22);
		/* the append happens when rank 1 takes the arrival: retry
		 * until it has (not a timing assumption: bounded by T_EV_MS) */
		for (uint64_t end = now_ms() + T_EV_MS;;) {
			RC(PtlPut(md, 1000, 200, PTL_ACK_REQ, rank_proc(1), PT_DATA, 10, 0, NULL, 0), PTL_OK);
			if (!collect(eq, T_EV_MS, 2, want, evs, "on the entry an arrival appended") ||
			    evs[1].ni_fail_type == PTL_NI_OK)
				break;
			if (now_ms() > end) {
				FAIL("the entry an arrival appended never matched");
				break;
			}
			msleep(5);
		}
		barrier("tm.put");
		barrier("tm.unlinked");
		RC(PtlPut(md, 0, 100, PTL_ACK_REQ, rank_proc(1), PT_DATA, 9, 0, NULL, 0), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "after the triggered unlink"))
			CHK_EQ(evs[1].ni_fail_type, PTL_NI_DROPPED, "after the triggered unlink");
		barrier("tm.after");
	}
	fini_ni();
}

/* ---------------------------------------------------- iovecs, any address -- */

/* Rank 0 puts from an iovec MD into an iovec entry of rank 1 (other cuts,
 * one and many packets, offsets inside segments), gets them back into
 * another iovec MD, and adds with an atomic whose elements straddle two
 * iovecs; then the same through an MD and an entry that cover the whole
 * address space (start NULL, length PTL_SIZE_MAX: offsets are addresses),
 * and a put to an address that is not mapped there, which the target
 * survives (and counts as dropped). */
#define IOV_TOTAL 100000
static void c_iovec(void)
{
	static const size_t mcut[] = { 1, 999, 4096, 20000, 7, 50000, 24897 };	/* MD: 100000 */
	static const size_t ecut[] = { 33333, 3, 1500, 15164, 50000 };		/* entry: 100000 */
	ptl_event_t ev;
	char ctx[160];

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_iovec_t iov[5];
		uint8_t *seg[5], *any_buf = kbuf(K_MAL, 8192);
		ptl_me_t me;
		ptl_handle_me_t h;
		uint64_t addr = (uint64_t)(uintptr_t)any_buf;
		ptl_sr_value_t drops0 = 0, drops1 = 0;

		pt_new(0, eq, PT_DATA);
		for (int i = 0; i < 5; i++) {
			seg[i] = kbuf(K_MAL, ecut[i]);
			memset(seg[i], 0xee, ecut[i]);
			iov[i] = (ptl_iovec_t){ seg[i], ecut[i] };
		}
		memset(&me, 0, sizeof(me));
		me.start = iov;
		me.length = 5;
		me.ct_handle = PTL_CT_NONE;
		me.uid = PTL_UID_ANY;
		me.options = PTL_IOVEC | PTL_ME_OP_PUT | PTL_ME_OP_GET;
		me.match_id = any_proc();
		me.match_bits = 1;
		OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(1), &h));
		memset(iov, 0, sizeof(iov));	/* the library keeps its own copy */
		/* the whole address space */
		me.start = NULL;
		me.length = PTL_SIZE_MAX;
		me.options = PTL_ME_OP_PUT | PTL_ME_OP_GET;
		me.match_bits = 2;
		OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(2), &h));
		memset(any_buf, 0xee, 8192);
		put_file("iov.addr", &addr, sizeof(addr));
		barrier("iov.ready");
		/* the put: 99980 bytes at entry offset 13 */
		if (want_ev(eq, &ev, T_EV_MS, "put into the iovec entry"))
			CHKEV("put into the iovec entry", &ev, .m = F_TYPE | F_MLEN | F_ROFF | F_UPTR |
			      F_START, .type = PTL_EVENT_PUT, .mlen = IOV_TOTAL - 20, .roff = 13,
			      .uptr = U(1), .start = seg[0] + 13);
		{
			size_t o = 0;

			for (int i = 0; i < 5; i++)
				for (size_t k = 0; k < ecut[i]; k++, o++) {
					uint8_t want = o < 13 || o >= 13 + IOV_TOTAL - 20 ? 0xee :
						       pat(5, o - 13 + 7);

					if (seg[i][k] != want) {
						FAIL("iovec entry byte %zu (segment %d + %zu): 0x%02x, want 0x%02x",
						     o, i, k, seg[i][k], want);
						i = 5;
						break;
					}
				}
		}
		barrier("iov.put");
		if (want_ev(eq, &ev, T_EV_MS, "get from the iovec entry"))
			CHK_EQ(ev.type, PTL_EVENT_GET, "get from the iovec entry");
		if (want_ev(eq, &ev, T_EV_MS, "atomic across two iovecs"))
			CHK_EQ(ev.type, PTL_EVENT_ATOMIC, "atomic across two iovecs");
		barrier("iov.amo");
		{
			/* 4 uint64 at entry offset 33333 - 12: the first straddles
			 * segments 0 and 1, the second 1 and 2 */
			uint8_t v[32];
			size_t o = 33333 - 12;

			for (int k = 0; k < 32; k++, o++)
				v[k] = o < 33333 ? seg[0][o] : o < 33336 ? seg[1][o - 33333] :
				       seg[2][o - 33336];
			for (int k = 0; k < 4; k++) {
				uint64_t got, base;
				uint8_t b8[8];

				memcpy(&got, v + 8 * k, 8);
				for (int j = 0; j < 8; j++)
					b8[j] = pat(5, 33333 - 12 + 8 * k + j - 13 + 7);
				memcpy(&base, b8, 8);
				snprintf(ctx, sizeof(ctx), "atomic SUM element %d across iovecs", k);
				CHK_EQ(got, base + 1000 + k, ctx);
			}
		}
		/* the whole address space */
		if (want_ev(eq, &ev, T_EV_MS, "put to an address"))
			CHKEV("put to an address", &ev, .m = F_TYPE | F_MLEN | F_ROFF | F_UPTR | F_START,
			      .type = PTL_EVENT_PUT, .mlen = 3000, .roff = addr + 100, .uptr = U(2),
			      .start = any_buf + 100);
		check_byte("put to an address: before", any_buf, 100, 0xee);
		check_pat("put to an address", any_buf + 100, 3000, 9);
		check_byte("put to an address: after", any_buf + 3100, 8192 - 3100, 0xee);
		RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &drops0), PTL_OK);
		barrier("iov.any");
		/* a put to address 4096: not mapped here; taken, not deposited */
		if (want_ev(eq, &ev, T_EV_MS, "put to an unmapped address"))
			CHK_EQ(ev.type, PTL_EVENT_PUT, "put to an unmapped address");
		RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &drops1), PTL_OK);
		CHK(drops1 > drops0, "a put to an unmapped address counts as dropped (%d, %d)", drops0,
		    drops1);
		if (want_ev(eq, &ev, T_EV_MS, "get from an address"))
			CHK_EQ(ev.type, PTL_EVENT_GET, "get from an address");
		barrier("iov.done");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t ct = ct_new();
		ptl_iovec_t miov[7], giov[7];
		uint8_t *mseg[7], *gseg[7], *src = kbuf(K_MAL, 4096);
		ptl_md_t md;
		ptl_handle_md_t pmd, gmd, amd, anymd;
		uint64_t addr = 0, ops[4];
		int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
		ptl_event_t evs[2];
		size_t o = 0;

		for (int i = 0; i < 7; i++) {
			mseg[i] = kbuf(K_MAL, mcut[i]);
			gseg[i] = kbuf(K_MAL, mcut[i]);
			for (size_t k = 0; k < mcut[i]; k++, o++)
				mseg[i][k] = pat(5, o);
			memset(gseg[i], 0x5a, mcut[i]);
			miov[i] = (ptl_iovec_t){ mseg[i], mcut[i] };
			giov[i] = (ptl_iovec_t){ gseg[i], mcut[i] };
		}
		md = (ptl_md_t){ .start = miov, .length = 7, .options = PTL_IOVEC | PTL_MD_EVENT_CT_ACK |
				 PTL_MD_EVENT_CT_REPLY, .eq_handle = eq, .ct_handle = ct };
		OK(PtlMDBind(ni, &md, &pmd));
		md.start = giov;
		OK(PtlMDBind(ni, &md, &gmd));
		md = (ptl_md_t){ .start = ops, .length = sizeof(ops), .eq_handle = eq, .ct_handle = ct,
				 .options = PTL_MD_EVENT_CT_ACK };
		OK(PtlMDBind(ni, &md, &amd));
		md = (ptl_md_t){ .start = NULL, .length = PTL_SIZE_MAX, .eq_handle = eq, .ct_handle = ct,
				 .options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY };
		OK(PtlMDBind(ni, &md, &anymd));
		md.length = 100;	/* NULL with another length: no */
		RC(PtlMDBind(ni, &md, &amd), PTL_ARG_INVALID);
		md = (ptl_md_t){ .start = miov, .length = (ptl_size_t)lim.max_iovecs + 1, .options = PTL_IOVEC,
				 .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE };
		RC(PtlMDBind(ni, &md, &amd), PTL_ARG_INVALID);
		md = (ptl_md_t){ .start = ops, .length = sizeof(ops), .eq_handle = eq, .ct_handle = ct,
				 .options = PTL_MD_EVENT_CT_ACK };
		OK(PtlMDBind(ni, &md, &amd));
		barrier("iov.ready");
		get_file("iov.addr", &addr, sizeof(addr));
		memset(miov, 0, sizeof(miov));	/* the library keeps its own copy */
		/* MD offset 7 (segment 1), entry offset 13 */
		RC(PtlPut(pmd, 7, IOV_TOTAL - 20, PTL_ACK_REQ, rank_proc(1), PT_DATA, 1, 13, U(10), 0),
		   PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "put from an iovec MD"))
			CHKEV("put from an iovec MD", &evs[1], .m = F_TYPE | F_MLEN | F_FAIL,
			      .type = PTL_EVENT_ACK, .mlen = IOV_TOTAL - 20, .fail = PTL_NI_OK);
		barrier("iov.put");
		/* get it back into the other iovec MD at its offset 3 */
		RC(PtlGet(gmd, 3, IOV_TOTAL - 20, rank_proc(1), PT_DATA, 1, 13, U(11)), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "get into an iovec MD"))
			CHKEV("get into an iovec MD", &ev, .m = F_TYPE | F_MLEN | F_FAIL | F_UPTR,
			      .type = PTL_EVENT_REPLY, .mlen = IOV_TOTAL - 20, .fail = PTL_NI_OK,
			      .uptr = U(11));
		o = 0;
		for (int i = 0; i < 7; i++)
			for (size_t k = 0; k < mcut[i]; k++, o++) {
				uint8_t w = o < 3 || o >= 3 + IOV_TOTAL - 20 ? 0x5a : pat(5, o - 3 + 7);

				if (gseg[i][k] != w) {
					FAIL("iovec MD byte %zu (segment %d + %zu): 0x%02x, want 0x%02x", o,
					     i, k, gseg[i][k], w);
					i = 7;
					break;
				}
			}
		for (int k = 0; k < 4; k++)
			ops[k] = 1000 + k;
		RC(PtlAtomic(amd, 0, 32, PTL_ACK_REQ, rank_proc(1), PT_DATA, 1, 33333 - 12, U(12), 0,
			     PTL_SUM, PTL_UINT64_T), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "atomic across two iovecs"))
			CHKEV("atomic across two iovecs", &evs[1], .m = F_TYPE | F_MLEN | F_FAIL,
			      .type = PTL_EVENT_ACK, .mlen = 32, .fail = PTL_NI_OK);
		barrier("iov.amo");
		/* whole address space: local offset = address, remote too */
		fill(src, 3000, 9);
		RC(PtlPut(anymd, (uintptr_t)src, 3000, PTL_ACK_REQ, rank_proc(1), PT_DATA, 2,
			  addr + 100, U(13), 0), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "put between address spaces"))
			CHKEV("put between address spaces", &evs[0], .m = F_TYPE | F_MLEN | F_START,
			      .type = PTL_EVENT_SEND, .mlen = 3000, .start = src);
		barrier("iov.any");
		RC(PtlPut(amd, 0, 8, PTL_ACK_REQ, rank_proc(1), PT_DATA, 2, 4096, U(14), 0), PTL_OK);
		collect(eq, T_EV_MS, 2, want, evs, "put to an unmapped address");
		memset(src, 0, 4096);
		RC(PtlGet(anymd, (uintptr_t)src + 8, 3000, rank_proc(1), PT_DATA, 2, addr + 100, U(15)),
		   PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "get between address spaces"))
			CHKEV("get between address spaces", &ev, .m = F_TYPE | F_MLEN | F_FAIL,
			      .type = PTL_EVENT_REPLY, .mlen = 3000, .fail = PTL_NI_OK);
		check_pat("get between address spaces", src + 8, 3000, 9);
		barrier("iov.done");
	}
	fini_ni();
}

/* --------------------------------------------- event options, EQ full -- */

static void c_eventopts(void)
{
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t ca = ct_new(), cb = ct_new();
		uint8_t *b = kbuf(K_WIN, 16384), *m = kbuf(K_MAL, 16384);
		int links = 0;

		pt_new(0, eq, PT_DATA);
		skip_link = 0;
		me_add(PT_DATA, b, 1024, PTL_ME_OP_PUT | PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_CT_COMM |
		       PTL_ME_EVENT_LINK_DISABLE, 1, 0, ca, PTL_PRIORITY_LIST, U(0x91));
		me_add(PT_DATA, m, 1024, PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_CT_COMM |
		       PTL_ME_EVENT_LINK_DISABLE, 2, 0, cb, PTL_PRIORITY_LIST, U(0x92));
		me_add(PT_DATA, m + 4096, 1024, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE |
		       PTL_ME_EVENT_LINK_DISABLE, 3, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x93));
		me_add(PT_DATA, b + 4096, 1024, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 4, 0, PTL_CT_NONE,
		       PTL_PRIORITY_LIST, U(0x94));
		no_ev(eq, 50, "PTL_ME_EVENT_LINK_DISABLE: no LINK event");
		me_add(PT_DATA, b + 8192, 1024, PTL_ME_OP_PUT, 5, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x95));
		while (eq_next(eq, &ev, 50) != PTL_EQ_EMPTY) {
			if (ev.type == PTL_EVENT_LINK) {
				links++;
				CHKEV("LINK event", &ev, .m = F_TYPE | F_UPTR | F_FAIL | F_PT,
				      .type = PTL_EVENT_LINK, .pt = PT_DATA, .uptr = U(0x95));
			} else {
				FAIL("event after an append");
				dump_ev("unexpected", &ev);
			}
		}
		LOG("note: PtlMEAppend without LINK_DISABLE gave %d LINK events", links);
		skip_link = 1;
		barrier("eo.ready");
		barrier("eo.sent");
		/* 3 (twice: the second finds no ME) and 4 give PUT events, 1 and 2 none */
		for (int i = 0; i < 2; i++) {
			if (!want_ev(eq, &ev, T_EV_MS, "event options"))
				break;
			if (ev.match_bits == 3)
				CHKEV("USE_ONCE + EVENT_UNLINK_DISABLE", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
				      .ini = rank_proc(0), .pt = PT_DATA, .mb = 3, .rlen = 100, .mlen = 100,
				      .hdr = 3, .uptr = U(0x93), .start = m + 4096);
			else
				CHKEV("plain ME next to them", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
				      .ini = rank_proc(0), .pt = PT_DATA, .mb = 4, .rlen = 100, .mlen = 100,
				      .hdr = 4, .uptr = U(0x94), .start = b + 4096);
		}
		no_ev(eq, 200, "SUCCESS_DISABLE / COMM_DISABLE / UNLINK_DISABLE: no other event");
		ct_is(ca, 2, 0, "counter of the EVENT_SUCCESS_DISABLE ME");
		ct_is(cb, 2, 0, "counter of the EVENT_COMM_DISABLE ME");
		check_pat("EVENT_SUCCESS_DISABLE ME", b, 100, 1);
		check_pat("EVENT_COMM_DISABLE ME", m, 100, 2);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t c = ct_new();
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);
		ptl_handle_md_t mns = md_new(src, 4096, PTL_MD_EVENT_SEND_DISABLE, eq, PTL_CT_NONE);
		ptl_handle_md_t mnsucc = md_new(src, 4096, PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_CT_ACK,
						eq, c);

		barrier("eo.ready");
		for (int i = 1; i <= 4; i++) {
			fill(src, 100, i);
			put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, i, 0, U(i), i, 0, 100,
				 PTL_PRIORITY_LIST, "event options: put");
		}
		/* the use-once ME 3 is gone: dropped */
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 3, 0, U(5), 3, PTL_NI_DROPPED, 0, 0,
			 "put to a consumed USE_ONCE ME");
		/* SEND_DISABLE: only the ACK */
		fill(src, 100, 1);
		RC(PtlPut(mns, 0, 100, PTL_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, U(6), 1), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "MD EVENT_SEND_DISABLE: ACK"))
			CHKEV("MD EVENT_SEND_DISABLE", &ev, .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = 100,
			      .uptr = U(6));
		no_ev(eq, 50, "MD EVENT_SEND_DISABLE: no SEND");
		/* SUCCESS_DISABLE: no SEND or ACK on success, the counter counts */
		fill(src, 100, 2);
		RC(PtlPut(mnsucc, 0, 100, PTL_ACK_REQ, rank_proc(1), PT_DATA, 2, 0, U(7), 2), PTL_OK);
		ct_wait(c, 1, T_EV_MS, "MD EVENT_SUCCESS_DISABLE: CT_ACK");
		no_ev(eq, 50, "MD EVENT_SUCCESS_DISABLE: no SEND, no ACK");
		/* ... but a failure is still an event */
		RC(PtlPut(mnsucc, 0, 100, PTL_ACK_REQ, rank_proc(1), PT_DATA, 0x77, 0, U(8), 2), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, "MD EVENT_SUCCESS_DISABLE: failed ACK"))
			CHKEV("MD EVENT_SUCCESS_DISABLE, no match", &ev, .m = F_TYPE | F_UPTR | F_FAIL,
			      .type = PTL_EVENT_ACK, .uptr = U(8), .fail = PTL_NI_DROPPED);
		no_ev(eq, 50, "MD EVENT_SUCCESS_DISABLE: one event for the failure");
		barrier("eo.sent");
	}
	fini_ni();
}

static void c_eqdrop(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(4);
		ptl_handle_ct_t ct = ct_new();
		uint8_t *b = kbuf(K_MAL, 4096);
		ptl_event_t ev;
		int n = 0, dropped = 0, rc;

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 1, 0, ct, PTL_PRIORITY_LIST,
		       U(1));
		barrier("ed.ready");
		barrier("ed.sent");
		ct_wait(ct, 12, T_EV_MS, "the counter counts what the EQ cannot hold");
		msleep(100);
		while ((rc = PtlEQGet(eq, &ev)) != PTL_EQ_EMPTY) {
			if (rc == PTL_EQ_DROPPED)
				dropped++;
			else if (rc != PTL_OK) {
				FAIL("PtlEQGet: %s", rc_name(rc));
				break;
			}
			if (ev.type == PTL_EVENT_LINK)
				continue;
			CHKEV("event of a full EQ", &ev, .m = F_TYPE | F_INI | F_PT | F_MB | F_UPTR | F_FAIL,
			      .type = PTL_EVENT_PUT, .ini = rank_proc(0), .pt = PT_DATA, .mb = 1, .uptr = U(1));
			if (++n > 12)
				break;
		}
		CHK(n >= 1 && n <= 4, "events from an EQ of 4 after 12 puts: %d", n);
		CHK(dropped >= 1, "PTL_EQ_DROPPED returned %d times", dropped);
		RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, eq, PTL_CT_NONE);

		barrier("ed.ready");
		for (int i = 0; i < 12; i++)
			put_wait(md, eq, 0, 8, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(i + 1), i, 0, 8,
				 PTL_PRIORITY_LIST, "put to a full EQ");
		barrier("ed.sent");
	}
	fini_ni();
}

/* ---------------------------------------------------- bad arguments -- */

static void c_badargs(void)
{
	ptl_handle_ni_t h;
	ptl_handle_eq_t eq, eq2, eqs;
	ptl_handle_ct_t ct, cts;
	ptl_handle_md_t md, mds;
	ptl_handle_me_t me, mes;
	ptl_pt_index_t pt;
	ptl_event_t ev;
	ptl_ct_event_t ce;
	ptl_me_t mspec;
	ptl_md_t mdspec;
	unsigned which;
	uint8_t *buf = kbuf(K_MAL, 1 << 16);
	const ptl_handle_any_t bad[2] = { PTL_INVALID_HANDLE, 0x12345678 };
	ptl_size_t test = 1;
	ptl_process_t p1 = rank_proc(R ^ 1);
	int n;

	/* before PtlInit */
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &lim, &h),
	   PTL_NO_INIT);
	RC(PtlEQAlloc(0, 8, &eq), PTL_NO_INIT);
	RC(PtlCTAlloc(0, &ct), PTL_NO_INIT);
	RC(PtlPut(0, 0, 8, PTL_NO_ACK_REQ, p1, 0, 0, 0, NULL, 0), PTL_NO_INIT);
	RC(PtlEQGet(0, &ev), PTL_NO_INIT);

	OK(PtlInit());
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
		     NULL, &lim, &h), PTL_ARG_INVALID);
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &lim, &h), PTL_ARG_INVALID);
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL | PTL_NI_PHYSICAL, PTL_PID_ANY,
		     NULL, &lim, &h), PTL_ARG_INVALID);
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &lim, NULL),
	   PTL_ARG_INVALID);
	OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &lim, &ni));
	/* per NI kind: the halves of the process's part of the runtime's
	 * portal table */
	CHK_EQ(lim.max_pt_index, SPIN_PT_PER_PROC / 2 - 1, "max_pt_index");
	/* no per-list cap: a list can take every entry of the NI */
	CHK_EQ(lim.max_list_size, lim.max_entries, "max_list_size");
	CHK_EQ(lim.max_msg_size, 1ull << 30, "max_msg_size: 1 GiB (SPIN_MAX_MSG)");
	CHK_EQ(lim.max_msg_size, SPIN_MAX_MSG, "max_msg_size");

	/* bad handles of every type */
	for (int i = 0; i < 2; i++) {
		ptl_handle_any_t x = bad[i];
		ptl_sr_value_t sv;
		void *vp;
		ptl_handle_hpu_mem_t hm;

		RC(PtlNIStatus(x, PTL_SR_DROP_COUNT, &sv), PTL_ARG_INVALID);
		RC(PtlNIHandle(x, &h), PTL_ARG_INVALID);
		RC(PtlPTAlloc(x, 0, PTL_EQ_NONE, PTL_PT_ANY, &pt), PTL_ARG_INVALID);
		RC(PtlEQAlloc(x, 8, &eq), PTL_ARG_INVALID);
		RC(PtlCTAlloc(x, &ct), PTL_ARG_INVALID);
		mdspec = (ptl_md_t){ buf, 64, 0, PTL_EQ_NONE, PTL_CT_NONE };
		RC(PtlMDBind(x, &mdspec, &md), PTL_ARG_INVALID);
		mspec = me_spec(buf, 64, PTL_ME_OP_PUT, 0, 0);
		RC(PtlMEAppend(x, 0, &mspec, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
		RC(PtlEQGet(x, &ev), PTL_ARG_INVALID);
		RC(PtlEQWait(x, &ev), PTL_ARG_INVALID);
		RC(PtlEQPoll(&x, 1, 10, &ev, &which), PTL_ARG_INVALID);
		RC(PtlEQFree(x), PTL_ARG_INVALID);
		RC(PtlCTGet(x, &ce), PTL_ARG_INVALID);
		RC(PtlCTWait(x, 1, &ce), PTL_ARG_INVALID);
		RC(PtlCTPoll(&x, &test, 1, 10, &ce, &which), PTL_ARG_INVALID);
		RC(PtlCTSet(x, (ptl_ct_event_t){ 1, 0 }), PTL_ARG_INVALID);
		RC(PtlCTInc(x, (ptl_ct_event_t){ 1, 0 }), PTL_ARG_INVALID);
		RC(PtlCTFree(x), PTL_ARG_INVALID);
		RC(PtlCTCancelTriggered(x), PTL_ARG_INVALID);
		RC(PtlMDRelease(x), PTL_ARG_INVALID);
		RC(PtlMEUnlink(x), PTL_ARG_INVALID);
		RC(PtlPut(x, 0, 8, PTL_NO_ACK_REQ, p1, 0, 0, 0, NULL, 0), PTL_ARG_INVALID);
		RC(PtlGet(x, 0, 8, p1, 0, 0, 0, NULL), PTL_ARG_INVALID);
		RC(PtlAtomic(x, 0, 8, PTL_NO_ACK_REQ, p1, 0, 0, 0, NULL, 0, PTL_SUM, PTL_UINT64_T),
		   PTL_ARG_INVALID);
		RC(PtlTriggeredPut(x, 0, 8, PTL_NO_ACK_REQ, p1, 0, 0, 0, NULL, 0, x, 1), PTL_ARG_INVALID);
		RC(PtlSpinHostAlloc(x, 4096, &vp), PTL_ARG_INVALID);
		RC(PtlHPUAllocMem(64, x, &hm), PTL_ARG_INVALID);
		RC(PtlHPUFreeMem(x), PTL_ARG_INVALID);
		RC(PtlMEReadHPU(x, 0, buf, 8), PTL_ARG_INVALID);
		RC(PtlSpinHandlerUnload(x), PTL_ARG_INVALID);
		RC(PtlGetId(x, &p1), PTL_ARG_INVALID);
		p1 = rank_proc(R ^ 1);
	}
	RC(PtlEQFree(PTL_EQ_NONE), PTL_ARG_INVALID);
	RC(PtlCTFree(PTL_CT_NONE), PTL_ARG_INVALID);

	/* event queues */
	RC(PtlEQAlloc(ni, 0, &eq), PTL_ARG_INVALID);
	RC(PtlEQAlloc(ni, 8, NULL), PTL_ARG_INVALID);
	eq = eq_new(8);
	RC(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
	RC(PtlEQPoll(&eq, 1, 0, &ev, &which), PTL_EQ_EMPTY);
	RC(PtlEQPoll(&eq, 0, 10, &ev, &which), PTL_ARG_INVALID);
	RC(PtlNIHandle(eq, &h), PTL_OK);
	CHK(PtlHandleIsEqual(h, ni), "PtlNIHandle(eq) is the NI");
	eqs = eq_new(8);
	RC(PtlEQFree(eqs), PTL_OK);
	RC(PtlEQFree(eqs), PTL_ARG_INVALID);
	RC(PtlEQGet(eqs, &ev), PTL_ARG_INVALID);
	eq2 = eq_new(8);
	if (!PtlHandleIsEqual(eq2, eqs))
		RC(PtlEQGet(eqs, &ev), PTL_ARG_INVALID);

	/* counters */
	ct = ct_new();
	cts = ct_new();
	RC(PtlCTFree(cts), PTL_OK);
	RC(PtlCTFree(cts), PTL_ARG_INVALID);
	RC(PtlCTGet(cts, &ce), PTL_ARG_INVALID);
	RC(PtlCTWait(cts, 1, &ce), PTL_ARG_INVALID);
	RC(PtlCTInc(cts, (ptl_ct_event_t){ 1, 0 }), PTL_ARG_INVALID);
	RC(PtlCTPoll(&ct, &test, 0, 10, &ce, &which), PTL_ARG_INVALID);
	RC(PtlCTPoll(&ct, &test, 1, 10, &ce, &which), PTL_CT_NONE_REACHED);
	/* a handle of the wrong type */
	RC(PtlEQGet(ct, &ev), PTL_ARG_INVALID);
	RC(PtlCTGet(eq, &ce), PTL_ARG_INVALID);
	RC(PtlMDRelease(eq), PTL_ARG_INVALID);
	RC(PtlMEUnlink(ct), PTL_ARG_INVALID);
	RC(PtlPut(ct, 0, 8, PTL_NO_ACK_REQ, p1, 0, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlCTFree(eq), PTL_ARG_INVALID);
	RC(PtlEQFree(ct), PTL_ARG_INVALID);
	RC(PtlPTAlloc(eq, 0, PTL_EQ_NONE, PTL_PT_ANY, &pt), PTL_ARG_INVALID);

	/* portal table */
	RC(PtlPTAlloc(ni, 0, eq, SPIN_MAX_PT / 2, &pt), PTL_ARG_INVALID);
	RC(PtlPTAlloc(ni, 0, eq, 1000, &pt), PTL_ARG_INVALID);
	RC(PtlPTAlloc(ni, 0, eqs, 3, &pt), PTL_ARG_INVALID);
	RC(PtlPTAlloc(ni, PTL_PT_FLOWCTRL, PTL_EQ_NONE, 3, &pt), PTL_PT_EQ_NEEDED);
	RC(PtlPTAlloc(ni, 0, eq, 3, NULL), PTL_ARG_INVALID);
	RC(PtlPTAlloc(ni, 0, eq, 3, &pt), PTL_OK);
	CHK_EQ(pt, 3, "PtlPTAlloc index");
	RC(PtlPTAlloc(ni, 0, eq, 3, &pt), PTL_PT_IN_USE);
	n = 1;
	for (int i = 0; i < SPIN_MAX_PT + 4; i++) {
		int rc = PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &pt);

		if (rc == PTL_PT_FULL)
			break;
		if (!RC(rc, PTL_OK))
			break;
		CHK(pt <= (ptl_pt_index_t)lim.max_pt_index && pt != 3, "PTL_PT_ANY gave %u", pt);
		n++;
	}
	CHK_EQ(n, lim.max_pt_index + 1, "portal indexes allocated before PTL_PT_FULL (max_pt_index + 1)");
	for (ptl_pt_index_t i = 0; i <= (ptl_pt_index_t)lim.max_pt_index; i++)
		if (i != 3)
			RC(PtlPTFree(ni, i), PTL_OK);
	RC(PtlPTFree(ni, 5), PTL_ARG_INVALID);
	RC(PtlPTFree(ni, lim.max_pt_index + 1), PTL_ARG_INVALID);
	RC(PtlPTEnable(ni, lim.max_pt_index + 1), PTL_ARG_INVALID);
	RC(PtlPTEnable(ni, 5), PTL_ARG_INVALID);

	/* match entries */
	mspec = me_spec(buf, 64, PTL_ME_OP_PUT, 0, 0);
	RC(PtlMEAppend(ni, 5, &mspec, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	RC(PtlMEAppend(ni, SPIN_MAX_PT, &mspec, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	RC(PtlMEAppend(ni, 3, &mspec, 7, NULL, &me), PTL_ARG_INVALID);
	RC(PtlMEAppend(ni, 3, NULL, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	RC(PtlMESearch(ni, 5, &mspec, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
	RC(PtlMESearch(ni, 3, &mspec, 9, NULL), PTL_ARG_INVALID);
	mspec = me_spec(NULL, 64, PTL_ME_OP_PUT, 0, 0);
	RC(PtlMEAppend(ni, 3, &mspec, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	mspec = me_spec(buf, 64, PTL_ME_OP_PUT, 0, 0);
	mspec.ct_handle = cts;
	RC(PtlMEAppend(ni, 3, &mspec, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	mspec = me_spec(buf, 64, PTL_ME_OP_PUT, 0, 0);
	mspec.handlers = 0x7777;
	RC(PtlMEAppend(ni, 3, &mspec, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
	mspec = me_spec(buf, 64, PTL_ME_OP_PUT, 0, 0);
	mes = me_add(3, buf, 64, PTL_ME_OP_PUT, 0x42, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, NULL);
	RC(PtlPTFree(ni, 3), PTL_PT_IN_USE);
	RC(PtlMEUnlink(mes), PTL_OK);
	RC(PtlMEUnlink(mes), PTL_ARG_INVALID);
	n = 0;
	for (int i = 0; i < (int)lim.max_entries + 8; i++) {
		int rc = PtlMEAppend(ni, 3, &mspec, PTL_PRIORITY_LIST, NULL, &me);

		if (rc != PTL_OK) {
			/* one list can take the whole table: it fills */
			CHK(rc == PTL_NO_SPACE || rc == PTL_LIST_TOO_LONG, "append %d: %s", i,
			    rc_name(rc));
			break;
		}
		n++;
	}
	CHK_EQ(n, lim.max_entries, "MEs appended to one list before the table is full");

	/* memory descriptors */
	mdspec = (ptl_md_t){ NULL, 100, 0, PTL_EQ_NONE, PTL_CT_NONE };
	RC(PtlMDBind(ni, &mdspec, &md), PTL_ARG_INVALID);
	mdspec = (ptl_md_t){ NULL, 0, 0, PTL_EQ_NONE, PTL_CT_NONE };
	RC(PtlMDBind(ni, &mdspec, &md), PTL_OK);
	RC(PtlMDRelease(md), PTL_OK);
	/* iovecs: too many; a segment with a NULL base; lengths that overflow */
	mdspec = (ptl_md_t){ buf, (ptl_size_t)lim.max_iovecs + 1, PTL_IOVEC, PTL_EQ_NONE, PTL_CT_NONE };
	RC(PtlMDBind(ni, &mdspec, &md), PTL_ARG_INVALID);
	{
		ptl_iovec_t bad_iov[2] = { { buf, 8 }, { NULL, 8 } };

		mdspec = (ptl_md_t){ bad_iov, 2, PTL_IOVEC, PTL_EQ_NONE, PTL_CT_NONE };
		RC(PtlMDBind(ni, &mdspec, &md), PTL_ARG_INVALID);
		bad_iov[1] = (ptl_iovec_t){ buf, PTL_SIZE_MAX - 4 };
		RC(PtlMDBind(ni, &mdspec, &md), PTL_ARG_INVALID);
	}
	mdspec = (ptl_md_t){ buf, 64, 0, eqs, PTL_CT_NONE };
	RC(PtlMDBind(ni, &mdspec, &md), PTL_ARG_INVALID);
	mdspec = (ptl_md_t){ buf, 64, 0, PTL_EQ_NONE, cts };
	RC(PtlMDBind(ni, &mdspec, &md), PTL_ARG_INVALID);
	RC(PtlMDBind(ni, NULL, &md), PTL_ARG_INVALID);
	mds = md_new(buf, 64, 0, PTL_EQ_NONE, PTL_CT_NONE);
	RC(PtlMDRelease(mds), PTL_OK);
	RC(PtlMDRelease(mds), PTL_ARG_INVALID);
	RC(PtlPut(mds, 0, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
	md = md_new(buf, 4096, 0, eq, PTL_CT_NONE);
	RC(PtlPut(md, 4000, 200, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlPut(md, 4097, 0, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlPut(md, ~0ull - 4, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlGet(md, 0, 4097, p1, 3, 0, 0, NULL), PTL_ARG_INVALID);
	RC(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, p1, SPIN_MAX_PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlPut(md, 0, 8, 9, p1, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlGet(md, 0, 8, p1, SPIN_MAX_PT, 0, 0, NULL), PTL_ARG_INVALID);
	RC(PtlAtomic(md, 0, lim.max_atomic_size + 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0, PTL_SUM,
		     PTL_UINT64_T), PTL_ARG_INVALID);
	RC(PtlAtomic(md, 0, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0, PTL_OP_LAST, PTL_UINT64_T),
	   PTL_ARG_INVALID);
	RC(PtlAtomic(md, 0, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0, PTL_SUM, PTL_DATATYPE_LAST),
	   PTL_ARG_INVALID);
	RC(PtlAtomic(md, 0, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0, PTL_SWAP, PTL_UINT64_T),
	   PTL_ARG_INVALID);
	RC(PtlAtomic(md, 0, 3, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT32_T),
	   PTL_ARG_INVALID);
	RC(PtlAtomic(md, 0, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0, PTL_BOR, PTL_DOUBLE),
	   PTL_ARG_INVALID);
	RC(PtlSwap(md, 0, md, 8, 16, p1, 3, 0, 0, NULL, 0, buf, PTL_CSWAP, PTL_UINT64_T),
	   PTL_ARG_INVALID);	/* CSWAP: one element */
	RC(PtlFetchAtomic(md, 0, md, 8, 8, p1, 3, 0, 0, NULL, 0, PTL_SUM, PTL_FLOAT + 100),
	   PTL_ARG_INVALID);
	{
		/* one byte more than max_msg_size (not touched: no memory) */
		uint8_t *big = malloc((size_t)SPIN_MAX_MSG + 4096);
		ptl_handle_md_t bmd = md_new(big, (size_t)SPIN_MAX_MSG + 4096, 0, PTL_EQ_NONE, PTL_CT_NONE);

		RC(PtlPut(bmd, 0, (size_t)SPIN_MAX_MSG + 1, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0),
		   PTL_ARG_INVALID);
		RC(PtlGet(bmd, 0, (size_t)SPIN_MAX_MSG + 1, p1, 3, 0, 0, NULL), PTL_ARG_INVALID);
		RC(PtlMDRelease(bmd), PTL_OK);
		free(big);
	}
	no_ev(eq, 50, "rejected operations give no event");

	/* sPIN extension */
	{
		ptl_handle_hpu_mem_t hm;
		ptl_handle_handler_t hh;
		void *w;
		char path[600];
		const char *top = getenv("PTL_TEST_TOP") ? getenv("PTL_TEST_TOP") : ".";

		RC(PtlHPUAllocMem(4097, ni, &hm), PTL_ARG_INVALID);
		OK(PtlHPUAllocMem(64, ni, &hm));
		RC(PtlHPUWriteMem(hm, 60, buf, 8), PTL_ARG_INVALID);
		RC(PtlHPUWriteMem(hm, 0, buf, 64), PTL_OK);
		RC(PtlHPUFreeMem(hm), PTL_OK);
		RC(PtlHPUFreeMem(hm), PTL_ARG_INVALID);
		RC(PtlHPUWriteMem(hm, 0, buf, 8), PTL_ARG_INVALID);
		CHK(PtlSpinHandlerLoad(ni, "/nonexistent/handler.bpf.o", &hh) != PTL_OK,
		    "loading a missing object fails");
		snprintf(path, sizeof(path), "%s/selftests/progs/bad_handler.bpf.o", top);
		RC(PtlSpinHandlerLoad(ni, path, &hh), PTL_ARG_INVALID);
		CHK(*PtlSpinErrmsg(), "PtlSpinErrmsg after a verifier rejection");
		RC(PtlSpinHostFree(ni, buf), PTL_ARG_INVALID);
		OK(PtlSpinHostAlloc(ni, 4096, &w));
		RC(PtlSpinHostFree(ni, w), PTL_OK);
		RC(PtlSpinHostFree(ni, w), PTL_ARG_INVALID);
		/* the ME buffer of an entry with handlers must be in the window */
	}

	/* map */
	{
		ptl_size_t actual = 0;
		ptl_process_t map[8], id;

		RC(PtlGetMap(ni, 0, NULL, &actual), PTL_OK);
		CHK_EQ(actual, N, "PtlGetMap size");
		RC(PtlGetMap(ni, 8, map, &actual), PTL_OK);
		for (int r = 0; r < N && r < 8; r++)
			CHK_EQ(map[r].phys.nid, (10u << 24) | (78u << 16) | (1u << 8) | (r + 1),
			       "PtlGetMap nid");
		RC(PtlGetId(ni, &id), PTL_OK);
		CHK_EQ(id.rank, R, "PtlGetId rank");
		RC(PtlGetPhysId(ni, &id), PTL_OK);
		CHK_EQ(id.phys.nid, (10u << 24) | (78u << 16) | (1u << 8) | (R + 1), "PtlGetPhysId nid");
	}

	/* after PtlNIFini the NI and its objects are gone */
	RC(PtlNIFini(ni), PTL_OK);
	RC(PtlEQAlloc(ni, 8, &eq), PTL_ARG_INVALID);
	RC(PtlEQGet(eq, &ev), PTL_ARG_INVALID);
	RC(PtlCTGet(ct, &ce), PTL_ARG_INVALID);
	RC(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, p1, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
	RC(PtlNIFini(ni), PTL_ARG_INVALID);
	PtlFini();
	RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &lim, &h),
	   PTL_NO_INIT);
	RC(PtlEQGet(eq, &ev), PTL_NO_INIT);
	(void)eq2;
}

/* ------------------------------------------------- unknown targets -- */

/* hostfile of 3 hosts, processes for ranks 0 and 1 only: rank 2 has an
 * address and no runtime; rank 99 is outside the map */
static void c_unknown(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(16);

		pt_new(0, eq, PT_DATA);
		barrier("un.ready");
		barrier("un.done");
		no_ev(eq, 50, "no events on a portal without entries");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 8192);
		ptl_handle_md_t md = md_new(src, 8192, 0, eq, PTL_CT_NONE);
		uint64_t t0;
		int tmo = getenv("SPIN_PTL_TIMEOUT_MS") ? atoi(getenv("SPIN_PTL_TIMEOUT_MS")) : 2000;

		barrier("un.ready");
		/* no peer to wait for: both events are posted inside PtlPut */
		RC(PtlPut(md, 0, 100, PTL_ACK_REQ, rank_proc(OUTSIDE_RANK), PT_DATA, 1, 0, U(1), 1), PTL_OK);
		for (int k = 0; k < 2; k++) {
			ptl_event_t ev;

			if (RC(PtlEQGet(eq, &ev), PTL_OK))
				CHKEV("acked put to rank 99 (outside the map), at once", &ev,
				      .m = F_TYPE | F_UPTR | F_FAIL, .type = k ? PTL_EVENT_ACK : PTL_EVENT_SEND,
				      .uptr = U(1), .fail = PTL_NI_UNDELIVERABLE);
		}
		put_wait(md, eq, 0, 3000, PTL_NO_ACK_REQ, OUTSIDE_RANK, PT_DATA, 1, 0, U(2), 2, PTL_NI_UNDELIVERABLE,
			 0, 0, "put to rank 99 (outside the map)");
		get_wait(md, eq, 0, 100, OUTSIDE_RANK, PT_DATA, 1, 0, U(3), PTL_NI_UNDELIVERABLE, 0,
			 "get from rank 99 (outside the map)");
		/* rank 2: in the map, nobody answers */
		{
			int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
			ptl_event_t evs[2];

			t0 = now_ms();
			RC(PtlPut(md, 0, 100, PTL_ACK_REQ, rank_proc(2), PT_DATA, 1, 0, U(4), 4), PTL_OK);
			if (collect(eq, tmo + 5000, 2, want, evs, "acked put to rank 2 (no process)")) {
				LOG("put to rank 2: SEND %s after, ACK %s after %llu ms",
				    fail_name(evs[0].ni_fail_type), fail_name(evs[1].ni_fail_type),
				    (unsigned long long)(now_ms() - t0));
				CHKEV("acked put to rank 2 (no process)", &evs[1], .m = F_TYPE | F_UPTR | F_FAIL,
				      .type = PTL_EVENT_ACK, .uptr = U(4), .fail = PTL_NI_UNDELIVERABLE);
				CHK(now_ms() - t0 >= (uint64_t)tmo * 9 / 10,
				    "ACK failed after %llu ms, before the timeout of %d ms",
				    (unsigned long long)(now_ms() - t0), tmo);
			}
			t0 = now_ms();
			get_wait(md, eq, 0, 100, 2, PT_DATA, 1, 0, U(5), PTL_NI_UNDELIVERABLE, 0,
				 "get from rank 2 (no process)");
			/* a bound on the failure, not a speed: the timeout
			 * plus room for a busy machine */
			CHK(now_ms() - t0 < (uint64_t)tmo + 10000, "get from rank 2: %llu ms",
			    (unsigned long long)(now_ms() - t0));
		}
		/* rank 1: portal not allocated, and no entry */
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, lim.max_pt_index, 1, 0, U(6), 6, PTL_NI_DROPPED, 0, 0,
			 "acked put to an unallocated portal");
		put_wait(md, eq, 0, 100, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(7), 7, PTL_NI_DROPPED, 0, 0,
			 "acked put without a matching entry");
		put_wait(md, eq, 0, 3000, PTL_ACK_REQ, 1, PT_DATA, 1, 0, U(8), 8, PTL_NI_DROPPED, 0, 0,
			 "acked 3-packet put without a matching entry");
		get_wait(md, eq, 0, 100, 1, PT_DATA, 1, 0, U(9), PTL_NI_DROPPED, 0,
			 "get without a matching entry");
		barrier("un.done");
	}
	fini_ni();
}

/* ------------------------------------------------- killed process -- */

#define KBIG (32u << 20)

static void c_kill(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *b = kbuf(K_MAL, KBIG), *w = kbuf(K_WIN, 65536);
		pid_t me = getpid();
		ptl_event_t ev;

		pt_new(0, eq, 3);
		pt_new(0, PTL_EQ_NONE, 5);
		me_add(3, b, KBIG, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0x51, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(1));
		me_add(3, w, 65536, PTL_ME_OP_PUT, 0x52, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(2));
		put_file("kill.pid", &me, sizeof(me));
		barrier("k.ready");
		for (;;)	/* until rank 0 kills this process */
			eq_next(eq, &ev, 1000);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, KBIG);
		ptl_handle_md_t md = md_new(src, KBIG, 0, eq, PTL_CT_NONE);
		int tmo = getenv("SPIN_PTL_TIMEOUT_MS") ? atoi(getenv("SPIN_PTL_TIMEOUT_MS")) : 2000;
		int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
		ptl_event_t evs[2];
		pid_t victim;
		uint64_t t0;

		fill(src, KBIG, 0x61);
		barrier("k.ready");
		get_file("kill.pid", &victim, sizeof(victim));
		RC(PtlPut(md, 0, KBIG, PTL_ACK_REQ, rank_proc(1), 3, 0x51, 0, U(1), 1), PTL_OK);
		msleep(3);
		CHK(kill(victim, SIGKILL) == 0, "kill %d: %s", victim, strerror(errno));
		t0 = now_ms();
		while (kill(victim, 0) == 0 && now_ms() - t0 < 5000)
			msleep(2);
		t0 = now_ms();
		if (collect(eq, tmo + 10000, 2, want, evs, "32 MiB put to a process killed meanwhile"))
			LOG("put in flight at the kill: SEND %s, ACK %s (mlength %llu) after %llu ms",
			    fail_name(evs[0].ni_fail_type), fail_name(evs[1].ni_fail_type),
			    (unsigned long long)evs[1].mlength, (unsigned long long)(now_ms() - t0));
		t0 = now_ms();
		put_wait(md, eq, 0, 1000, PTL_ACK_REQ, 1, 3, 0x51, 0, U(2), 2, PTL_NI_UNDELIVERABLE, 0, 0,
			 "acked put to the dead process's malloc ME");
		put_wait(md, eq, 0, 100000, PTL_ACK_REQ, 1, 3, 0x51, 0, U(3), 3, PTL_NI_UNDELIVERABLE, 0,
			 0, "acked 100 KB put to the dead process's malloc ME");
		get_wait(md, eq, 0, 1000, 1, 3, 0x51, 0, U(4), PTL_NI_UNDELIVERABLE, 0,
			 "get from the dead process's malloc ME");
		CHK(now_ms() - t0 < 3ull * tmo + 20000, "failures took %llu ms (3 timeouts of %d ms)",
		    (unsigned long long)(now_ms() - t0), tmo);
		{
			int w2[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };

			RC(PtlPut(md, 0, 1000, PTL_ACK_REQ, rank_proc(1), 3, 0x52, 0, U(5), 5), PTL_OK);
			if (collect(eq, tmo + 5000, 2, w2, evs, "acked put to the dead process's window ME"))
				LOG("put to the dead process's window ME: ACK %s",
				    fail_name(evs[1].ni_fail_type));
		}
		barrier("k.dead");
		/* the new rank 1 */
		barrier("k.ready2");
		fill(src, 65536, 0x62);
		put_wait(md, eq, 0, 65536, PTL_ACK_REQ, 1, 3, 0x53, 0, U(6), 6, 0, 65536,
			 PTL_PRIORITY_LIST, "put to the new rank 1");
		memset(src, 0, 65536);
		get_wait(md, eq, 0, 65536, 1, 3, 0x53, 0, U(7), 0, 65536, "get from the new rank 1");
		check_pat("round trip with the new rank 1", src, 65536, 0x62);
		barrier("k.done");
	}
	fini_ni();
}

/* the process that replaces the killed rank 1 */
static void c_kill2(void)
{
	char cmd[700], line[4096];
	const char *top = getenv("PTL_TEST_TOP") ? getenv("PTL_TEST_TOP") : ".";
	pid_t dead;
	FILE *f;
	int n = 0, rc;
	ptl_event_t ev;

	barrier("k.dead");
	get_file("kill.pid", &dead, sizeof(dead));
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	snprintf(cmd, sizeof(cmd), "%s/tools/spinctl -j status veth0 >/dev/null", top);
	rc = system(cmd);
	CHK_EQ(rc, 0, "spinctl -j status veth0 after the takeover");
	snprintf(cmd, sizeof(cmd), "%s/tools/spinctl -j me list veth0", top);
	f = popen(cmd, "r");
	CHK(f != NULL, "popen %s", cmd);
	while (f && fgets(line, sizeof(line), f)) {
		char *p = line;

		while ((p = strstr(p, "\"owner_pid\""))) {
			p = strchr(p, ':');
			if (!p)
				break;
			if (strtoul(p + 1, NULL, 10) == (unsigned long)dead)
				n++;
		}
	}
	if (f)
		CHK_EQ(pclose(f), 0, "spinctl -j me list veth0");
	CHK_EQ(n, 0, "match entries of the killed process left after the takeover");
	{
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *b = kbuf(K_MAL, 65536);
		ptl_pt_index_t pt;

		RC(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 5, &pt), PTL_OK);	/* the dead one's */
		pt_new(0, eq, 3);
		me_add(3, b, 65536, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0x53, 0, PTL_CT_NONE, PTL_PRIORITY_LIST,
		       U(3));
		barrier("k.ready2");
		if (want_ev(eq, &ev, T_EV_MS, "put to the new process"))
			CHKEV("put to the new process", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
			      .ini = rank_proc(0), .pt = 3, .mb = 0x53, .rlen = 65536, .mlen = 65536,
			      .hdr = 6, .uptr = U(3), .start = b);
		check_pat("put to the new process", b, 65536, 0x62);
		if (want_ev(eq, &ev, T_EV_MS, "get from the new process"))
			CHKEV("get from the new process", &ev, .m = TGT_M & ~F_HDR, .type = PTL_EVENT_GET,
			      .ini = rank_proc(0), .pt = 3, .mb = 0x53, .rlen = 65536, .mlen = 65536,
			      .uptr = U(3), .start = b);
		barrier("k.done");
	}
	fini_ni();
}

/* ----------------------------------------- physical, all to all -- */

static ptl_nid_t nid_of(int r) { return (10u << 24) | (78u << 16) | (1u << 8) | (r + 1); }

static void c_phys(void)
{
	ptl_handle_eq_t eq, seq;
	uint8_t *b[4], *src;
	ptl_handle_md_t md;
	ptl_process_t id;
	int seen[4] = { 0 };
	ptl_event_t ev;

	init_ni(PTL_NI_PHYSICAL, 100 + R);
	RC(PtlGetPhysId(ni, &id), PTL_OK);
	CHK_EQ(id.phys.nid, nid_of(R), "PtlGetPhysId nid");
	CHK_EQ(id.phys.pid, 100 + R, "PtlGetPhysId pid");
	RC(PtlGetId(ni, &id), PTL_OK);
	CHK_EQ(id.phys.nid, nid_of(R), "PtlGetId nid");
	CHK_EQ(id.phys.pid, 100 + R, "PtlGetId pid");
	eq = eq_new(64);
	seq = eq_new(64);
	pt_new(0, eq, PT_DATA);
	for (int s = 0; s < N; s++) {
		ptl_me_t me;
		ptl_handle_me_t h;

		if (s == R)
			continue;
		b[s] = kbuf(s & 1 ? K_WIN : K_MAL, 4096);
		me = me_spec(b[s], 4096, PTL_ME_OP_PUT, 0xa0, 0);
		me.match_id.phys.nid = nid_of(s);
		me.match_id.phys.pid = 100 + s;
		OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, U(0x600 + s), &h));
	}
	src = kbuf(K_MAL, 4 * 4096);
	md = md_new(src, 4 * 4096, 0, seq, PTL_CT_NONE);
	barrier("ph.ready");
	for (int d = 0; d < N; d++) {
		ptl_process_t to;
		int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
		ptl_event_t evs[2];

		if (d == R)
			continue;
		to.phys.nid = nid_of(d);
		to.phys.pid = 100 + d;
		fill(src + d * 4096, 3000, R * 16 + d);
		RC(PtlPut(md, d * 4096, 3000, PTL_ACK_REQ, to, PT_DATA, 0xa0, 0, U(d), R << 8 | d), PTL_OK);
		if (collect(seq, T_EV_MS, 2, want, evs, "physical put")) {
			CHKEV("physical put", &evs[0], .m = SEND_M, .type = PTL_EVENT_SEND, .mlen = 3000,
			      .uptr = U(d));
			CHKEV("physical put", &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = 3000,
			      .uptr = U(d));
		}
	}
	for (int n = 0; n < N - 1; n++) {
		int s;
		ptl_process_t from;

		if (!want_ev(eq, &ev, T_EV_MS, "all-to-all: a put from every other rank"))
			break;
		s = (int)(ev.hdr_data >> 8);
		if (s < 0 || s >= N || s == R || seen[s]++) {
			FAIL("all-to-all: unexpected event");
			dump_ev("unexpected", &ev);
			continue;
		}
		from.phys.nid = nid_of(s);
		from.phys.pid = 100 + s;
		CHKEV("all-to-all put", &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = from, .pt = PT_DATA,
		      .mb = 0xa0, .rlen = 3000, .mlen = 3000, .hdr = (uint64_t)s << 8 | R,
		      .uptr = U(0x600 + s), .start = b[s]);
		check_pat("all-to-all put", b[s], 3000, s * 16 + R);
	}
	barrier("ph.done");
	fini_ni();
}

/* ------------------------------- many processes per interface -- */

/*
 * N ranks, several per interface (docs/design.md, "Many Portals processes
 * per interface"): every rank puts 3000 bytes to every rank (itself too)
 * on an entry with match bits 0x1000 | source, which every rank has, so a
 * message that reached the wrong process of an address would land on that
 * process's entry with the same bits and fail its byte and event checks
 * (and its own would never come); every rank gets 2000 bytes from every
 * rank and adds source + 1 to every rank's counter with PtlAtomic.  The
 * receive buffers alternate between the host window and malloc()ed memory.
 */
#define MP_MAX 16
static void mp_body(void)
{
	ptl_handle_eq_t eq, seq;
	ptl_handle_md_t md, gmd, amd;
	uint8_t *b[MP_MAX], *src, *g, *gdst;
	uint64_t *ctr, *opnd;
	int nput = 0, nget = 0, nato = 0, nsend = 0, nack = 0, nreply = 0;
	uint64_t t0;
	ptl_event_t ev;

	if (N > MP_MAX)
		DIE("mproc: at most %d ranks", MP_MAX);
	eq = eq_new(512);
	seq = eq_new(512);
	pt_new(0, eq, PT_DATA);
	for (int s = 0; s < N; s++) {
		b[s] = kbuf((s + R) & 1 ? K_WIN : K_MAL, 3000);
		me_add(PT_DATA, b[s], 3000, PTL_ME_OP_PUT, 0x1000 | s, 0, PTL_CT_NONE,
		       PTL_PRIORITY_LIST, U(0x600 + s));
	}
	g = kbuf(R & 1 ? K_WIN : K_MAL, 2000);
	fill(g, 2000, 0x77 + R);
	me_add(PT_DATA, g, 2000, PTL_ME_OP_GET, 0x2000, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x2000));
	ctr = kbuf(R & 1 ? K_MAL : K_WIN, 8);
	*ctr = 0;
	me_add(PT_DATA, ctr, 8, PTL_ME_OP_PUT, 0x3000, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x3000));
	src = kbuf(K_MAL, (size_t)N * 3000);
	gdst = kbuf(K_MAL, (size_t)N * 2000);
	opnd = kbuf(K_MAL, 8);
	*opnd = (uint64_t)R + 1;
	md = md_new(src, (size_t)N * 3000, 0, seq, PTL_CT_NONE);
	gmd = md_new(gdst, (size_t)N * 2000, 0, seq, PTL_CT_NONE);
	amd = md_new(opnd, 8, 0, seq, PTL_CT_NONE);
	for (int d = 0; d < N; d++)
		fill(src + (size_t)d * 3000, 3000, R * 16 + d);
	barrier("mp.ready");
	for (int d = 0; d < N; d++) {
		RC(PtlPut(md, (size_t)d * 3000, 3000, PTL_ACK_REQ, rank_proc(d), PT_DATA, 0x1000 | R, 0,
			  U(d), (uint64_t)R << 8 | d), PTL_OK);
		RC(PtlGet(gmd, (size_t)d * 2000, 2000, rank_proc(d), PT_DATA, 0x2000, 0, U(0x100 + d)),
		   PTL_OK);
		RC(PtlAtomic(amd, 0, 8, PTL_ACK_REQ, rank_proc(d), PT_DATA, 0x3000, 0, U(0x200 + d), 0,
			     PTL_SUM, PTL_UINT64_T), PTL_OK);
	}
	/* both sides' events, each checked, until all came (or 30 s) */
	t0 = now_ms();
	while ((nput < N || nget < N || nato < N || nsend < 2 * N || nack < 2 * N || nreply < N) &&
	       now_ms() - t0 < 30000) {
		int got = 0;

		if (eq_next(eq, &ev, 0) == PTL_OK) {
			got = 1;
			if (ev.ni_fail_type != PTL_NI_OK) {
				FAIL("mproc: target event %s failed (%s)", ev_name(ev.type),
				     fail_name(ev.ni_fail_type));
			} else if (ev.type == PTL_EVENT_PUT) {
				int s = (int)(ev.match_bits & 0xfff);
				char ctx[64];

				snprintf(ctx, sizeof(ctx), "mproc: put from rank %d", s);
				nput++;
				if (s >= N) {
					FAIL("mproc: put with match bits 0x%llx", (unsigned long long)ev.match_bits);
					continue;
				}
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(s),
				      .pt = PT_DATA, .mb = 0x1000 | s, .rlen = 3000, .mlen = 3000,
				      .hdr = (uint64_t)s << 8 | R, .uptr = U(0x600 + s), .start = b[s]);
				check_pat(ctx, b[s], 3000, s * 16 + R);
			} else if (ev.type == PTL_EVENT_GET) {
				nget++;
			} else if (ev.type == PTL_EVENT_ATOMIC) {
				nato++;
			} else {
				dump_ev("mproc: unexpected target event", &ev);
				failed = 1;
			}
		}
		if (eq_next(seq, &ev, 0) == PTL_OK) {
			got = 1;
			if (ev.ni_fail_type != PTL_NI_OK)
				FAIL("mproc: initiator event %s (user_ptr %p) failed (%s)", ev_name(ev.type),
				     ev.user_ptr, fail_name(ev.ni_fail_type));
			if (ev.type == PTL_EVENT_SEND)
				nsend++;
			else if (ev.type == PTL_EVENT_ACK)
				nack++;
			else if (ev.type == PTL_EVENT_REPLY)
				nreply++;
		}
		if (!got)
			msleep(1);
	}
	if (nput != N || nget != N || nato != N || nsend != 2 * N || nack != 2 * N || nreply != N)
		FAIL("mproc: events: %d/%d puts, %d/%d gets, %d/%d atomics in; %d/%d sends, %d/%d acks, "
		     "%d/%d replies", nput, N, nget, N, nato, N, nsend, 2 * N, nack, 2 * N, nreply, N);
	for (int d = 0; d < N; d++) {
		char ctx[64];

		snprintf(ctx, sizeof(ctx), "mproc: get from rank %d", d);
		check_pat(ctx, gdst + (size_t)d * 2000, 2000, 0x77 + d);
	}
	barrier("mp.done");	/* every rank's atomics are in */
	CHK_EQ(*(volatile uint64_t *)ctr, (uint64_t)N * (N + 1) / 2, "mproc: the atomics' sum");
	barrier("mp.fin");
}

static void c_mproc(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	mp_body();
	fini_ni();
}

/*
 * mproc's all-to-all in a job that only PMIx describes (ptl/mpirun_pmix):
 * no hostfile, no rendezvous directory, no rank or size variable libspin
 * reads; the rank and the map come from PMIx and are the launcher's.
 */
static void c_pmix(void)
{
	static const char *const none[] = {
		"SPIN_HOSTFILE", "SPIN_RENDEZVOUS", "SPIN_RANK", "SPIN_SIZE", "PMI_RANK", "PMI_SIZE",
		"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	};
	ptl_process_t id;
	ptl_size_t actual = 0;

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		if (getenv(none[i]))
			DIE("pmix: %s is set: the job must come from PMIx alone", none[i]);
	if (!getenv("PMIX_RANK"))
		DIE("pmix: no PMIX_RANK: not started by a PMIx launcher");
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	RC(PtlGetId(ni, &id), PTL_OK);
	CHK_EQ(id.rank, R, "PtlGetId rank from PMIx = the launcher's rank");
	RC(PtlGetMap(ni, 0, NULL, &actual), PTL_OK);
	CHK_EQ(actual, N, "map size from PMIx = the launcher's size");
	mp_body();
	fini_ni();
}

/*
 * Rank 1 is not a Portals process: it publishes 0.0.0.0 as its address
 * through PMIx (selftests/pmix_forge, exec-ed in its place); rank 0's
 * PtlNIInit must refuse it, with the one line that names the rank.
 */
static void c_pmix_forged(void)
{
	char path[512];
	int rc;

	if (R != 0) {
		snprintf(path, sizeof(path), "%s/selftests/pmix_forge",
			 getenv("PTL_TEST_TOP") ? getenv("PTL_TEST_TOP") : ".");
		execl(path, path, "0.0.0.0", (char *)NULL);
		DIE("exec %s: %s", path, strerror(errno));
	}
	OK(PtlInit());
	rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni);
	CHK_EQ(rc, PTL_FAIL, "PtlNIInit with a rank whose PMIx address is 0.0.0.0");
	LOG("refused: %s", PtlSpinErrmsg());
	CHK(strstr(PtlSpinErrmsg(), "PMIx: rank 1 published '0.0.0.0' as its address, not a usable "
		   "IPv4 address") != NULL, "the message names rank 1 and its address");
	PtlFini();
}

/*
 * A process of an interface that has others is SIGKILLed and comes back:
 * every rank takes pid 100 + rank; the last rank (its address's last
 * slot) kills itself once all are up; a new process for it (mpkill2) takes
 * the same slot and the same pid, which the dead one held, and all of them
 * do mproc's all-to-all.
 */
static void mp_pid_is(ptl_pid_t want)
{
	ptl_process_t id;

	RC(PtlGetPhysId(ni, &id), PTL_OK);
	CHK_EQ(id.phys.pid, want, "PtlGetPhysId pid");
}

static const char *top_dir(void);

/* What the killed process leaves in its handler memory (mpkill), which the
 * next holder of its slot must not find (mpkill2). */
#define MPKILL_SECRET	0x5ec7e75ec7e70001ull

/* The killed rank, before it dies: an entry with a handler and handler
 * memory holding MPKILL_SECRET. */
static void mp_hpu_secret(void)
{
	ptl_handle_handler_t h;
	ptl_handle_hpu_mem_t hm;
	struct test_state st = { .cas_counter = MPKILL_SECRET };
	ptl_handle_me_t mh;
	ptl_me_t me;
	char path[1024];
	int rc;

	snprintf(path, sizeof(path), "%s/selftests/progs/test_handlers.bpf.o", top_dir());
	rc = PtlSpinHandlerLoad(ni, path, &h);
	if (rc != PTL_OK)
		DIE("PtlSpinHandlerLoad %s: %s -- %s", path, rc_name(rc), PtlSpinErrmsg());
	OK(PtlHPUAllocMem(sizeof(st), ni, &hm));
	RC(PtlHPUWriteMem(hm, 0, &st, sizeof(st)), PTL_OK);
	pt_new(0, PTL_EQ_NONE, 7);
	me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x5ec, 0);
	me.handlers = h;
	me.hpu_memory = hm;
	OK(PtlMEAppend(ni, 7, &me, PTL_PRIORITY_LIST, U(0x5ec), &mh));
	memset(&st, 0, sizeof(st));
	RC(PtlMEReadHPU(mh, 0, &st, sizeof(st)), PTL_OK);
	CHK_EQ(st.cas_counter, MPKILL_SECRET, "the secret in its handler memory");
}

/* The next holder of the killed rank's slot: the dead one's handler memory
 * is not its slot's handler memory (docs/security.md, "Handlers"): the
 * slot's hpu<slot> map is a new one, or holds no MPKILL_SECRET. */
static void mp_hpu_fresh(void)
{
	const char *ifn = getenv("SPIN_IFACE") ? getenv("SPIN_IFACE") : "veth0";
	size_t len = (size_t)SPIN_MAX_HPU * SPIN_HPU_SIZE;
	char path[1024];
	int fd, found = 0;
	uint8_t *p;

	/* mp_hosts 2 2: the second rank of an address is its slot 1 */
	if (spin_pin_dir(ifn, path, sizeof(path)) ||
	    strlen(path) + 8 >= sizeof(path))
		DIE("spin_pin_dir %s", ifn);
	snprintf(path + strlen(path), 8, "/hpu%d", R % 2);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		CHK(errno == ENOENT, "%s: %s", path, strerror(errno));
		return;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (!CHK(p != MAP_FAILED, "mmap %s: %s", path, strerror(errno)))
		return;
	for (size_t i = 0; i < SPIN_MAX_HPU; i++)
		found += ((const struct test_state *)(p + i * SPIN_HPU_SIZE))->cas_counter ==
			 MPKILL_SECRET;
	munmap(p, len);
	CHK_EQ(found, 0, "entries of its slot's handler memory with the dead holder's secret");
}

static void c_mpkill(void)
{
	init_ni(PTL_NI_LOGICAL, 100 + R);
	mp_pid_is(100 + R);
	if (R == N - 1)
		mp_hpu_secret();
	barrier("k.init");
	if (R == N - 2) {
		/* another process on the last rank's interface (no job: the
		 * lowest free slot) asks for the last rank's pid: refused */
		char pid[16];
		pid_t c;
		int st = 0;

		snprintf(pid, sizeof(pid), "%d", 100 + N - 1);
		c = fork();
		if (c == 0) {
			unsetenv("SPIN_HOSTFILE");
			setenv("PTL_TEST_NPROCS", "1", 1);
			setenv("SPIN_RANK", "0", 1);
			setenv("PTL_TEST_PID", pid, 1);
			execl("/proc/self/exe", "ptl_test", "pidtaken", (char *)NULL);
			_exit(127);
		}
		CHK(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		    "a second process asking for a live process's pid is refused (status 0x%x)", st);
	}
	barrier("k.checked");
	if (R == N - 1) {
		LOG("rank %d: SIGKILL", R);
		kill(getpid(), SIGKILL);
	}
	mp_body();
	fini_ni();
}

static void c_pidtaken(void)
{
	ptl_handle_ni_t h;
	int rc;

	OK(PtlInit());
	rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL,
		       (ptl_pid_t)atoi(getenv("PTL_TEST_PID") ? getenv("PTL_TEST_PID") : "0"), NULL,
		       &lim, &h);
	CHK(rc == PTL_PID_IN_USE && strstr(PtlSpinErrmsg(), "pid"),
	    "PtlNIInit with a live process's pid: %s -- %s", rc_name(rc), PtlSpinErrmsg());
	if (rc == PTL_OK)
		PtlNIFini(h);
	PtlFini();
}

static void c_mpkill2(void)
{
	init_ni(PTL_NI_LOGICAL, 100 + R);
	mp_pid_is(100 + R);
	mp_hpu_fresh();
	mp_body();
	fini_ni();
}

/* --------------------------------------- launcher environment, ring -- */

static void c_ring(void)
{
	ptl_handle_eq_t eq, seq;
	uint8_t *b, *src;
	ptl_handle_md_t md;
	ptl_process_t id;
	ptl_size_t actual = 0;
	ptl_event_t ev;
	int next = (R + 1) % N, prev = (R + N - 1) % N;
	const char *sz = getenv("PMI_SIZE") ? getenv("PMI_SIZE") : getenv("OMPI_COMM_WORLD_SIZE");

	CHK(getenv("SPIN_RANK") == NULL, "the launcher case runs without SPIN_RANK");
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	RC(PtlGetId(ni, &id), PTL_OK);
	CHK_EQ(id.rank, R, "PtlGetId rank from the launcher's environment");
	RC(PtlGetMap(ni, 0, NULL, &actual), PTL_OK);
	CHK_EQ(actual, sz ? atoi(sz) : -1, "map size = the launcher's size");
	eq = eq_new(16);
	pt_new(0, eq, PT_DATA);
	b = kbuf(R & 1 ? K_WIN : K_MAL, 8192);
	me_add(PT_DATA, b, 8192, PTL_ME_OP_PUT, 0x33, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x33));
	src = kbuf(K_MAL, 8192);
	seq = eq_new(16);
	md = md_new(src, 8192, 0, seq, PTL_CT_NONE);
	barrier("ring.ready");
	fill(src, 5000, 0x40 + R);
	put_wait(md, seq, 0, 5000, PTL_ACK_REQ, next, PT_DATA, 0x33, 0, U(1), R, 0, 5000,
		 PTL_PRIORITY_LIST, "ring put");
	if (want_ev(eq, &ev, T_EV_MS, "ring: put from the previous rank"))
		CHKEV("ring", &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(prev), .pt = PT_DATA,
		      .mb = 0x33, .rlen = 5000, .mlen = 5000, .hdr = prev, .uptr = U(0x33), .start = b);
	check_pat("ring", b, 5000, 0x40 + prev);
	barrier("ring.done");
	fini_ni();
}

/* ------------------------------------------------ sPIN extension -- */

static const char *top_dir(void)
{
	return getenv("PTL_TEST_TOP") ? getenv("PTL_TEST_TOP") : ".";
}

/* the paper's ping-pong: rank 1's payload handler answers every packet of a
 * ping with a put from the device (to the same portal index, bits 10) */
static void c_spin_pingpong(void)
{
	char path[600];
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_handler_t h;
		ptl_me_t me;
		ptl_handle_me_t mh;
		int rc;

		snprintf(path, sizeof(path), "%s/samples/pingpong/pingpong_stream.bpf.o", top_dir());
		rc = PtlSpinHandlerLoad(ni, path, &h);
		if (rc != PTL_OK)
			DIE("PtlSpinHandlerLoad %s: %s -- %s", path, rc_name(rc), PtlSpinErrmsg());
		pt_new(0, eq, 7);
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x99, 0);
		me.handlers = h;
		OK(PtlMEAppend(ni, 7, &me, PTL_PRIORITY_LIST, U(0x99), &mh));
		barrier("pp.ready");
		barrier("pp.done");
		while (eq_next(eq, &ev, 50) != PTL_EQ_EMPTY)	/* the pings, if reported */
			CHKEV("ping on the handler ME", &ev, .m = F_TYPE | F_INI | F_PT | F_MB | F_RLEN | F_UPTR,
			      .type = PTL_EVENT_PUT, .ini = rank_proc(0), .pt = 7, .mb = 0x99, .rlen = 1000,
			      .uptr = U(0x99));
		RC(PtlMEUnlink(mh), PTL_OK);
		RC(PtlSpinHandlerUnload(h), PTL_OK);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64), seq = eq_new(64);
		uint8_t *pong[2] = { kbuf(K_WIN, 4096), kbuf(K_MAL, 4096) }, *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, seq, PTL_CT_NONE);

		pt_new(0, eq, 7);
		barrier("pp.ready");
		for (int k = 0; k < 2; k++) {
			char ctx[96];
			ptl_handle_me_t mh = me_add(7, pong[k], 4096, PTL_ME_OP_PUT, 10, 0, PTL_CT_NONE,
						    PTL_PRIORITY_LIST, U(0x10 + k));

			snprintf(ctx, sizeof(ctx), "pong from the device into a %s ME", kname[k]);
			fill(src, 1000, 0x50 + k);
			put_wait(md, seq, 0, 1000, PTL_NO_ACK_REQ, 1, 7, 0x99, 0, U(k), 0, 0, 0, 0, "ping");
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(1), .pt = 7,
				      .mb = 10, .rlen = 1000, .mlen = 1000, .hdr = 0, .uptr = U(0x10 + k),
				      .start = pong[k]);
			check_pat(ctx, pong[k], 1000, 0x50 + k);
			RC(PtlMEUnlink(mh), PTL_OK);
		}
		barrier("pp.done");
	}
	fini_ni();
}

/* The pingpong handler on a process's own entry: a ping to itself runs
 * the handler, whose device put (the pong, to the sender: itself) goes
 * through the runtime again and lands in its window or ordinary-memory
 * entry.  Each rank on its own. */
static void c_spin_self(void)
{
	char path[600];
	ptl_event_t ev;
	ptl_handle_eq_t eq, seq;
	ptl_handle_handler_t h;
	ptl_me_t me;
	ptl_handle_me_t hm;
	uint8_t *pong[2], *src;
	ptl_handle_md_t md;
	int rc;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	eq = eq_new(64);
	seq = eq_new(64);
	pong[0] = kbuf(K_WIN, 4096);
	pong[1] = kbuf(K_MAL, 4096);
	src = kbuf(K_MAL, 4096);
	md = md_new(src, 4096, 0, seq, PTL_CT_NONE);
	snprintf(path, sizeof(path), "%s/samples/pingpong/pingpong_stream.bpf.o", top_dir());
	rc = PtlSpinHandlerLoad(ni, path, &h);
	if (rc != PTL_OK)
		DIE("PtlSpinHandlerLoad %s: %s -- %s", path, rc_name(rc), PtlSpinErrmsg());
	pt_new(0, eq, 7);
	me = me_spec(NULL, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_SUCCESS_DISABLE, 0x99, 0);
	me.handlers = h;
	OK(PtlMEAppend(ni, 7, &me, PTL_PRIORITY_LIST, U(0x99), &hm));
	for (int k = 0; k < 2; k++) {
		char ctx[96];
		ptl_handle_me_t mh = me_add(7, pong[k], 4096, PTL_ME_OP_PUT, 10, 0, PTL_CT_NONE,
					    PTL_PRIORITY_LIST, U(0x10 + k));

		snprintf(ctx, sizeof(ctx), "pong from its own handler into a %s ME", kname[k]);
		fill(src, 1000, 0x60 + k);
		RC(PtlPut(md, 0, 1000, PTL_NO_ACK_REQ, rank_proc(R), 7, 0x99, 0, U(k), 0), PTL_OK);
		if (want_ev(eq, &ev, T_EV_MS, ctx))
			CHKEV(ctx, &ev, .m = TGT_M, .type = PTL_EVENT_PUT, .ini = rank_proc(R), .pt = 7,
			      .mb = 10, .rlen = 1000, .mlen = 1000, .hdr = 0, .uptr = U(0x10 + k),
			      .start = pong[k]);
		check_pat(ctx, pong[k], 1000, 0x60 + k);
		if (want_ev(seq, &ev, T_EV_MS, ctx))
			CHK_EQ(ev.type, PTL_EVENT_SEND, ctx);
		RC(PtlMEUnlink(mh), PTL_OK);
	}
	no_ev(eq, 50, "spin_self: no more events");
	RC(PtlMEUnlink(hm), PTL_OK);
	RC(PtlSpinHandlerUnload(h), PTL_OK);
	barrier("sps.done");
	fini_ni();
}

/* test_handlers.bpf.o with an initial handler-memory image: the payload
 * handler copies each packet to the ME buffer (T_DMA) and puts 16 bytes of
 * handler memory to rank 0 (T_PUT_STATE: bits 0x77, hdr_data 5) */
static void c_spin_hpu(void)
{
	char path[600];
	ptl_event_t ev;
	uint8_t put_src[16];

	for (int i = 0; i < 16; i++)
		put_src[i] = 0xc0 + i;
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_handler_t h;
		ptl_handle_hpu_mem_t hm;
		struct test_state st;
		ptl_handle_me_t mh;
		uint8_t *w = kbuf(K_WIN, 4096);
		uint64_t end;
		ptl_me_t me;
		int rc;

		snprintf(path, sizeof(path), "%s/selftests/progs/test_handlers.bpf.o", top_dir());
		rc = PtlSpinHandlerLoad(ni, path, &h);
		if (rc != PTL_OK)
			DIE("PtlSpinHandlerLoad %s: %s -- %s", path, rc_name(rc), PtlSpinErrmsg());
		OK(PtlHPUAllocMem(sizeof(st), ni, &hm));
		memset(&st, 0, sizeof(st));
		st.mode = T_DMA | T_PUT_STATE;
		st.cas_counter = 12345;
		memcpy(st.put_src, put_src, 16);
		RC(PtlHPUWriteMem(hm, 0, &st, sizeof(st)), PTL_OK);
		pt_new(0, eq, 6);
		me = me_spec(w, 4096, PTL_ME_OP_PUT, 0x55, 0);
		me.handlers = h;
		me.hpu_memory = hm;
		OK(PtlMEAppend(ni, 6, &me, PTL_PRIORITY_LIST, U(0x55), &mh));
		memset(&st, 0xff, sizeof(st));
		RC(PtlMEReadHPU(mh, 0, &st, sizeof(st)), PTL_OK);
		CHK_EQ(st.cas_counter, 12345, "handler memory starts with the image");
		CHK_EQ(st.hdr_calls, 0, "no handler ran yet");
		barrier("hp.ready");
		end = now_ms() + T_EV_MS;
		do {
			RC(PtlMEReadHPU(mh, 0, &st, sizeof(st)), PTL_OK);
			if (st.cmpl_calls)
				break;
			msleep(5);
		} while (now_ms() < end);
		CHK_EQ(st.cmpl_calls, 1, "completion handler calls");
		CHK_EQ(st.hdr_calls, 1, "header handler calls");
		CHK_EQ(st.pay_calls, 3, "payload handler calls (3000 B: 3 packets)");
		CHK_EQ(st.pay_bytes, 3000, "payload bytes seen by the handlers");
		CHK_EQ(st.order_violations, 0, "handler order violations");
		CHK_EQ(st.dma_errors, 0, "DMA errors");
		CHK_EQ(st.cas_counter, 12345, "image value kept");
		CHK_EQ(st.last_len, 3000, "header handler: length");
		CHK_EQ(st.last_bits, 0x55, "header handler: match bits");
		CHK_EQ(st.last_src, 0, "header handler: source rank");
		CHK_EQ(st.last_hdr_data, 0xabc, "header handler: hdr_data");
		CHK_EQ(st.first_byte_sum, pat(0x66, 0) + pat(0x66, SPIN_MAX_SEG) + pat(0x66, 2 * SPIN_MAX_SEG),
		       "first bytes of the packets");
		check_pat("payload copied by the handler (DMA to host)", w, 3000, 0x66);
		st.cas_counter = 999;
		RC(PtlMEWriteHPU(mh, offsetof(struct test_state, cas_counter), &st.cas_counter, 8), PTL_OK);
		st.cas_counter = 0;
		RC(PtlMEReadHPU(mh, offsetof(struct test_state, cas_counter), &st.cas_counter, 8), PTL_OK);
		CHK_EQ(st.cas_counter, 999, "PtlMEWriteHPU then PtlMEReadHPU");
		RC(PtlMEReadHPU(mh, 4090, &st, 16), PTL_ARG_INVALID);
		barrier("hp.done");
		while (eq_next(eq, &ev, 50) != PTL_EQ_EMPTY)
			CHKEV("message on the handler ME", &ev, .m = F_TYPE | F_INI | F_PT | F_MB | F_RLEN |
			      F_UPTR | F_HDR, .type = PTL_EVENT_PUT, .ini = rank_proc(0), .pt = 6, .mb = 0x55,
			      .rlen = 3000, .uptr = U(0x55), .hdr = 0xabc);
		RC(PtlMEUnlink(mh), PTL_OK);
		RC(PtlHPUFreeMem(hm), PTL_OK);
		RC(PtlSpinHandlerUnload(h), PTL_OK);
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64), seq = eq_new(64);
		uint8_t *b = kbuf(K_MAL, 4096), *src = kbuf(K_MAL, 4096);
		ptl_handle_md_t md = md_new(src, 4096, 0, seq, PTL_CT_NONE);

		pt_new(0, eq, 6);
		me_add(6, b, 4096, PTL_ME_OP_PUT, 0x77, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x77));
		barrier("hp.ready");
		fill(src, 3000, 0x66);
		/* no ack: a packet whose payload handler puts from the device
		 * becomes that put (the runtime's drop reason ack_lost) */
		put_wait(md, seq, 0, 3000, PTL_NO_ACK_REQ, 1, 6, 0x55, 0, U(1), 0xabc, 0, 3000,
			 PTL_PRIORITY_LIST, "put to the handler ME");
		for (int i = 0; i < 3; i++)
			if (want_ev(eq, &ev, T_EV_MS, "put from the device (handler memory)")) {
				CHKEV("put from the device", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
				      .ini = rank_proc(1), .pt = 6, .mb = 0x77, .rlen = 16, .mlen = 16,
				      .hdr = 5, .uptr = U(0x77), .start = b);
				CHK(!memcmp(b, put_src, 16), "bytes of the device put = the handler memory image");
			}
		barrier("hp.done");
	}
	fini_ni();
}

/* ---------------------------------------------------- wake thresholds -- */

/* A sleeping PtlCTWait arms a wake threshold on its counter's only entry:
 * the runtime wakes it for the event that reaches the test, and posts the
 * others quietly (stats: events_quiet).  Not armed when the entry's events
 * go to an event queue; a second waiter disarms it.  Run with
 * SPIN_PTL_SPIN_US=0 (waits sleep at once). */
struct ctw_arg { ptl_handle_ct_t ct; ptl_size_t test; int ok; };

static void *ctw_thread(void *p)
{
	struct ctw_arg *a = p;

	a->ok = ct_wait(a->ct, a->test, T_EV_MS, "wake threshold with a second waiter");
	return NULL;
}

static uint64_t quiet_events(struct spin_rt *rt)
{
	struct spin_stats st;

	if (spin_stats_read(rt, &st) < 0)
		DIE("spin_stats_read: %s", spin_errmsg());
	return st.events_quiet;
}

#define CTW_N	64
#define CTW_LEN	1000

static void c_ctwake(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(256);
		ptl_handle_ct_t ca = ct_new(), cb = ct_new();
		uint8_t *ba = kbuf(K_WIN, CTW_N * CTW_LEN), *bb = kbuf(K_WIN, 4096);
		struct ctw_arg ta;
		struct spin_rt *rt;
		ptl_event_t ev;
		unsigned which;
		pthread_t th;
		uint64_t q0, q1;

		if (spin_open(getenv("SPIN_IFACE"), &rt) < 0)
			DIE("spin_open: %s", spin_errmsg());
		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, ba, CTW_N * CTW_LEN,
		       PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES |
		       PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_LINK_DISABLE,
		       1, 0, ca, PTL_PRIORITY_LIST, U(1));
		me_add(PT_DATA, bb, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_LINK_DISABLE,
		       2, 0, cb, PTL_PRIORITY_LIST, U(2));

		/* one wake-up for 64 messages */
		q0 = quiet_events(rt);
		barrier("cw.a");
		ct_wait(ca, CTW_N * CTW_LEN, T_EV_MS, "sleeping wait, threshold armed");
		ct_is(ca, CTW_N * CTW_LEN, 0, "counter after 64 puts");
		check_pat("64 puts", ba, CTW_N * CTW_LEN, 7);
		q1 = quiet_events(rt);
		CHK(q1 - q0 >= CTW_N / 2, "%llu of %d events posted quietly (threshold armed)",
		    (unsigned long long)(q1 - q0), CTW_N);
		LOG("armed: %llu of %d events quiet", (unsigned long long)(q1 - q0), CTW_N);

		/* events an event queue wants: every one wakes */
		barrier("cw.b");
		ct_wait(cb, 16, T_EV_MS, "sleeping wait, entry with events");
		CHK_EQ(quiet_events(rt) - q1, 0, "events posted quietly for an entry with an event queue");
		CHK_EQ(drain(eq, 200), 16, "put events in the queue");

		/* a second waiter disarms the first's threshold: its event
		 * reaches it, and the first still completes */
		ta = (struct ctw_arg){ ca, 2 * CTW_N * CTW_LEN, 0 };
		pthread_create(&th, NULL, ctw_thread, &ta);
		msleep(50);
		barrier("cw.c");
		RC(PtlEQWait(eq, &ev), PTL_OK);
		CHK_EQ(ev.type, PTL_EVENT_PUT, "second waiter's event type");
		CHK_EQ(ev.match_bits, 2, "second waiter's event match bits");
		pthread_join(th, NULL);
		CHK(ta.ok, "first waiter completed");
		(void)which;
		check_pat("64 more puts", ba, CTW_N * CTW_LEN, 7);
		barrier("cw.done");
		spin_close(rt);
	} else if (R == 0) {
		uint8_t *src = kbuf(K_MAL, CTW_N * CTW_LEN);
		ptl_handle_md_t md;

		fill(src, CTW_N * CTW_LEN, 7);
		md = md_new(src, CTW_N * CTW_LEN, 0, PTL_EQ_NONE, PTL_CT_NONE);
		barrier("cw.a");
		msleep(100);	/* rank 1 is asleep */
		for (int i = 0; i < CTW_N; i++)
			RC(PtlPut(md, i * CTW_LEN, CTW_LEN, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1,
				  i * CTW_LEN, NULL, 0), PTL_OK);
		barrier("cw.b");
		msleep(100);
		for (int i = 0; i < 16; i++)
			RC(PtlPut(md, 0, 100, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 2, 0, NULL, 0),
			   PTL_OK);
		barrier("cw.c");
		msleep(100);
		for (int i = 0; i < CTW_N; i++) {
			if (i == CTW_N / 2)
				RC(PtlPut(md, 0, 100, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 2, 0, NULL, 0),
				   PTL_OK);
			RC(PtlPut(md, i * CTW_LEN, CTW_LEN, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1,
				  i * CTW_LEN, NULL, 0), PTL_OK);
		}
		barrier("cw.done");
	}
	fini_ni();
}

/* ------------------------------------------------------------ bundles -- */

/* Puts between PtlStartBundle and PtlEndBundle are only queued: nothing
 * arrives before the outermost PtlEndBundle, everything after it. */
static void c_bundle(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_ct_t ct = ct_new();
		uint8_t *b = kbuf(K_WIN, 4096);

		pt_new(0, PTL_EQ_NONE, PT_DATA);
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, 1, 0, ct,
		       PTL_PRIORITY_LIST, U(1));
		barrier("bu.ready");
		barrier("bu.posted");
		msleep(100);
		ct_is(ct, 0, 0, "puts inside an open bundle");
		barrier("bu.checked");
		barrier("bu.inner");
		msleep(100);
		ct_is(ct, 0, 0, "puts after an inner PtlEndBundle");
		barrier("bu.checked2");
		ct_wait(ct, 4, T_EV_MS, "puts after the outer PtlEndBundle");
		check_pat("bundled puts", b, 4 * 500, 5);
		barrier("bu.done");
	} else if (R == 0) {
		uint8_t *src = kbuf(K_MAL, 2000);
		ptl_handle_md_t md;

		fill(src, 2000, 5);
		md = md_new(src, 2000, 0, PTL_EQ_NONE, PTL_CT_NONE);
		RC(PtlEndBundle(ni), PTL_ARG_INVALID);
		RC(PtlStartBundle(ni + 1), PTL_ARG_INVALID);
		barrier("bu.ready");
		RC(PtlStartBundle(ni), PTL_OK);
		RC(PtlStartBundle(ni), PTL_OK);
		for (int i = 0; i < 4; i++)
			RC(PtlPut(md, i * 500, 500, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, i * 500,
				  NULL, 0), PTL_OK);
		barrier("bu.posted");
		barrier("bu.checked");
		RC(PtlEndBundle(ni), PTL_OK);
		barrier("bu.inner");
		barrier("bu.checked2");
		RC(PtlEndBundle(ni), PTL_OK);
		barrier("bu.done");
	}
	fini_ni();
}

/* ------------------------------------------------- interrupt moderation -- */

/* How this process's waits ended (PtlSpinWaitStats): the wake-up tests
 * decide from these counts, not from how fast this machine wakes a
 * process. */
static ptl_spin_wait_stats_t wait_stats(void)
{
	ptl_spin_wait_stats_t st = { 0 };

	OK(PtlSpinWaitStats(ni, &st));
	return st;
}

#define WS_D(b, a, f)	((unsigned long long)((b).f - (a).f))

/* SPIN_PTL_WAKE_US=20000: a sleeping wait is never woken by the runtime; it
 * looks every 20 ms.  Eight puts at odd moments: every wait that slept ends
 * when its period runs out, none through the event ring (which an
 * interrupt per event would wake). */
#define WU_N	8

static void c_wakeus(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_ct_t ct = ct_new();
		uint8_t *b = kbuf(K_WIN, 4096);
		ptl_spin_wait_stats_t w0, w1;

		pt_new(0, PTL_EQ_NONE, PT_DATA);
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_SUCCESS_DISABLE,
		       1, 0, ct, PTL_PRIORITY_LIST, U(1));
		w0 = wait_stats();
		barrier("wu.ready");
		for (int i = 0; i < WU_N; i++) {
			if (!ct_wait(ct, i + 1, T_EV_MS, "moderated wait"))
				break;
			barrierf("wu.got.%d", i);
		}
		w1 = wait_stats();
		LOG("moderated waits: %llu ended by the period, %llu woken, %llu without sleeping, %llu other",
		    WS_D(w1, w0, waits_timer), WS_D(w1, w0, waits_woken), WS_D(w1, w0, waits_nosleep),
		    WS_D(w1, w0, waits_rx) + WS_D(w1, w0, waits_poked));
		CHK_EQ(WS_D(w1, w0, waits), WU_N, "moderated waits completed");
		CHK_EQ(WS_D(w1, w0, waits_woken), 0, "moderated waits ended by the runtime's wake-up");
		CHK_EQ(WS_D(w1, w0, waits_timer) + WS_D(w1, w0, waits_nosleep), WU_N,
		       "moderated waits ended by their period or without sleeping");
		CHK(WS_D(w1, w0, waits_timer) > 0, "no moderated wait slept (%llu found their put at once)",
		    WS_D(w1, w0, waits_nosleep));
	} else if (R == 0) {
		uint8_t *src = kbuf(K_MAL, 64);
		ptl_handle_md_t md = md_new(src, 64, 0, PTL_EQ_NONE, PTL_CT_NONE);

		barrier("wu.ready");
		for (int i = 0; i < WU_N; i++) {
			usleep(30000 + 7000 * i);	/* rank 1 is asleep, at various phases */
			RC(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, NULL, 0), PTL_OK);
			barrierf("wu.got.%d", i);
		}
	}
	fini_ni();
}

/* ------------------------------------------ deferred and direct wake-ups -- */

/* A wait that sleeps is woken by the runtime: in its default mode through
 * the runtime's work item (spin_waker, counted in wakes_deferred), with
 * SPIN_WAKE_DIRECT=1 at attach from the packet path (nothing counted).
 * PTL_TEST_WAKE says which mode the runtime must be in.  Run with a long
 * look-again period (SPIN_PTL_POLL_US=2000000): a wait whose wake-up went
 * missing ends when that period runs out, and PtlSpinWaitStats says so,
 * whatever the machine's speed.  A wait that found its put before it slept
 * (a busy machine) proves nothing: puts go on until WK_N waits slept, at
 * most WK_MAX.  Rank 1 waits, rank 0 puts; with 4 ranks, 2 per address
 * (test_ptl.sh wake_slot1), rank 1 is the process in slot 1 of its
 * address (its own ring, spin_rings[1]) and rank 2, at the other address,
 * puts: slot 1's wake-ups must be deferred too (they were direct). */
#define WK_N	20
#define WK_MAX	(3 * WK_N)

static void c_wake(void)
{
	const char *want = getenv("PTL_TEST_WAKE");
	int more = 1, putter = N > 2 ? 2 : 0;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_ct_t ct = ct_new();
		uint8_t *b = kbuf(K_WIN, 4096);
		ptl_spin_wait_stats_t w0, w1;
		uint64_t d0, d1, slept = 0;
		struct spin_status ss;
		struct spin_stats st;
		struct spin_rt *rt;
		bool deferred;
		int i;

		if (spin_open(getenv("SPIN_IFACE"), &rt) < 0 || spin_get_status(rt, &ss) < 0)
			DIE("spin_open/status: %s", spin_errmsg());
		deferred = ss.cfg.flags & SPIN_CFG_F_WAKE_DEFER;
		CHK(want && !strcmp(want, deferred ? "deferred" : "direct"),
		    "runtime wakes %s, want %s", deferred ? "deferred" : "direct", want ? want : "?");
		pt_new(0, PTL_EQ_NONE, PT_DATA);
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_SUCCESS_DISABLE,
		       1, 0, ct, PTL_PRIORITY_LIST, U(1));
		if (spin_stats_read(rt, &st) < 0)
			DIE("spin_stats_read: %s", spin_errmsg());
		d0 = st.wakes_deferred;
		w0 = wait_stats();
		barrier("wk.ready");
		for (i = 0; i < WK_MAX && more; i++) {
			ptl_spin_wait_stats_t a = wait_stats(), z;
			bool ok = ct_wait(ct, i + 1, T_EV_MS, "sleeping wait");

			z = wait_stats();
			slept += WS_D(z, a, waits) - WS_D(z, a, waits_nosleep);
			/* stop at the first wait that was not woken */
			more = ok && slept < WK_N && z.waits_timer == w0.waits_timer;
			put_file("wk.more", &more, sizeof(more));
			barrierf("wk.got.%d", i);
		}
		w1 = wait_stats();
		if (spin_stats_read(rt, &st) < 0)
			DIE("spin_stats_read: %s", spin_errmsg());
		d1 = st.wakes_deferred;
		LOG("%s wake-ups, %d puts: %llu waits woken, %llu ended by the 2 s period, %llu without sleeping, "
		    "%llu other; %llu wake-ups deferred", deferred ? "deferred" : "direct", i,
		    WS_D(w1, w0, waits_woken), WS_D(w1, w0, waits_timer), WS_D(w1, w0, waits_nosleep),
		    WS_D(w1, w0, waits_rx) + WS_D(w1, w0, waits_poked), (unsigned long long)(d1 - d0));
		CHK_EQ(WS_D(w1, w0, waits), i, "waits completed");
		CHK_EQ(WS_D(w1, w0, waits_timer), 0, "waits that missed their wake-up (ended by the period)");
		CHK(slept >= WK_N, "%llu of %d puts found a sleeping wait, want %d",
		    (unsigned long long)slept, i, WK_N);
		CHK_EQ(WS_D(w1, w0, waits_woken), slept, "sleeping waits ended by the runtime's wake-up");
		if (deferred)
			CHK(d1 - d0 >= WS_D(w1, w0, waits_woken), "%llu wake-ups through the work item for %llu woken waits",
			    (unsigned long long)(d1 - d0), WS_D(w1, w0, waits_woken));
		else
			CHK_EQ(d1 - d0, 0, "wake-ups deferred in direct mode");
		spin_close(rt);
	} else {
		uint8_t *src = kbuf(K_MAL, 64);
		ptl_handle_md_t md = md_new(src, 64, 0, PTL_EQ_NONE, PTL_CT_NONE);

		barrier("wk.ready");
		for (int i = 0; i < WK_MAX && more; i++) {
			usleep(5000 + 500 * (i % 10));	/* rank 1 is asleep */
			if (R == putter)
				RC(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, NULL, 0),
				   PTL_OK);
			barrierf("wk.got.%d", i);
			get_file("wk.more", &more, sizeof(more));
		}
	}
	fini_ni();
}

/* ------------------------------------------------- polling with PtlEQGet -- */

/* An application that polls with PtlEQGet consumes the events itself: the
 * progress thread is not woken for each of them (before, every event
 * woke it, and it competed with the polling thread for the CPU).  Counted
 * as the thread's poll() calls that a ring or the socket ended
 * (PtlSpinWaitStats bg_wakeups), not as its context switches: its timed
 * waits, which a busy machine makes more of, are not what is checked.
 * test_ptl.sh runs it with a 200 ms grace period (SPIN_PTL_SPIN_US): with
 * the default 1 ms, beside stress-ng --cpu 2 the poller was descheduled
 * long enough often enough for 61 wake-ups in 200 events. */
#define EG_N	200

static void c_eqget(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(EG_N * 2);
		uint8_t *b = kbuf(K_WIN, 4096);
		uint64_t end;
		ptl_spin_wait_stats_t w0, w1;
		int got = 0;

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE, 1, 0, PTL_CT_NONE,
		       PTL_PRIORITY_LIST, U(1));
		w0 = wait_stats();
		barrier("eg.ready");
		end = now_ms() + T_EV_MS;
		while (got < EG_N && now_ms() < end) {
			ptl_event_t ev;

			if (PtlEQGet(eq, &ev) == PTL_OK && ev.type == PTL_EVENT_PUT)
				got++;
		}
		w1 = wait_stats();
		CHK_EQ(got, EG_N, "put events taken with PtlEQGet");
		LOG("progress thread: %llu wake-ups by the rings, %llu polls ran out, during %d events",
		    WS_D(w1, w0, bg_wakeups), WS_D(w1, w0, bg_timer), EG_N);
		CHK(WS_D(w1, w0, bg_wakeups) < EG_N / 4,
		    "the progress thread was woken %llu times during %d events polled with PtlEQGet",
		    WS_D(w1, w0, bg_wakeups), EG_N);
		barrier("eg.done");
	} else if (R == 0) {
		uint8_t *src = kbuf(K_MAL, 64);
		ptl_handle_md_t md = md_new(src, 64, 0, PTL_EQ_NONE, PTL_CT_NONE);

		barrier("eg.ready");
		msleep(20);
		for (int i = 0; i < EG_N; i++) {
			RC(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, NULL, 0), PTL_OK);
			usleep(200);
		}
		barrier("eg.done");
	}
	fini_ni();
}

/* ------------------------------------------------------ two waiters -- */

/* One thread sleeps in PtlCTWait (it is the one in poll()) while another
 * busy-polls PtlEQPoll on another queue: the sleeper must still be woken
 * by its events (or poked by the busy one when it takes them), never find
 * them only when its sleep runs out (SPIN_PTL_POLL_US=2000000 makes that
 * a 2 s sleep, told apart by PtlSpinWaitStats). */
#define TW_N	10

struct tw_arg { ptl_handle_ct_t ct; int ok; };

static void *tw_sleeper(void *p)
{
	struct tw_arg *a = p;

	a->ok = 1;
	for (int i = 0; i < TW_N; i++) {
		if (!ct_wait(a->ct, i + 1, T_EV_MS, "sleeping waiter next to a busy one")) {
			a->ok = 0;
			break;
		}
	}
	return NULL;
}

static void c_twowaiters(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_ct_t ct = ct_new();
		uint8_t *b = kbuf(K_WIN, 4096);
		struct tw_arg a = { .ct = ct };
		ptl_spin_wait_stats_t w0, w1;
		pthread_t th;

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, b, 4096, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_SUCCESS_DISABLE |
		       PTL_ME_EVENT_LINK_DISABLE, 1, 0, ct, PTL_PRIORITY_LIST, U(1));
		w0 = wait_stats();
		pthread_create(&th, NULL, tw_sleeper, &a);
		barrier("tw.ready");
		/* the busy one: 1 ms polls of a queue nothing is posted to */
		while (!exists("tw.sent", 0)) {
			ptl_event_t ev;
			unsigned int which;

			PtlEQPoll(&eq, 1, 1, &ev, &which);
		}
		pthread_join(th, NULL);
		w1 = wait_stats();
		CHK(a.ok, "the sleeping waiter got its %d puts", TW_N);
		LOG("sleeping waiter: %llu waits woken by the ring, %llu poked, %llu by its period, %llu without sleeping",
		    WS_D(w1, w0, waits_woken), WS_D(w1, w0, waits_poked), WS_D(w1, w0, waits_timer),
		    WS_D(w1, w0, waits_nosleep));
		CHK_EQ(WS_D(w1, w0, waits), TW_N, "waits completed (the busy one's never do)");
		CHK_EQ(WS_D(w1, w0, waits_timer), 0, "sleeping waits that found their put only at the end of their period");
		CHK(WS_D(w1, w0, waits_nosleep) < TW_N, "the waiter never slept");
		barrier("tw.done");
	} else if (R == 0) {
		uint8_t *src = kbuf(K_MAL, 64);
		ptl_handle_md_t md = md_new(src, 64, 0, PTL_EQ_NONE, PTL_CT_NONE);

		barrier("tw.ready");
		for (int i = 0; i < TW_N; i++) {
			usleep(20000 + 3000 * i);
			RC(PtlPut(md, 0, 64, PTL_NO_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, NULL, 0), PTL_OK);
		}
		touch("tw.sent", 0);
		barrier("tw.done");
	}
	fini_ni();
}

/* ------------------------------------------------------------- main -- */

/*
 * rel: reliable delivery (docs/reliable.md), run by selftests/test_rel.sh
 * over an impaired link.  Rank 0 puts the messages of $PTL_REL_SPEC
 * ("SIZE:COUNT,...") to rank 1 as fast as the library takes them, each
 * message its own bytes (a pattern seeded with its number, which hdr_data
 * and user_ptr carry) into its own place of one entry per size, which is
 * in the host window ($PTL_REL_KIND=window: the runtime deposits) or in
 * process memory (malloc: this process receives); $PTL_REL_ACK=1 asks for
 * acks.  Rank 1 wants exactly one PUT event per message, NI_OK, full
 * length, every byte right, and its counter equal to the messages; rank 0
 * one SEND (and ACK) per message, NI_OK.  Both print the library's
 * reliable-delivery counters.  $PTL_REL_HANDLERS=1 (window entries): the
 * entries run test_handlers.bpf.o, whose handlers count their calls (and
 * the payload handler copies each packet, T_DMA); then each header and
 * completion handler ran once per message and each payload handler once
 * per packet.  $PTL_REL_PAUSE_MS: rank 1 stops reading its event queue
 * ($PTL_REL_EQ entries, default 65536) for that long after half the
 * messages: nothing may be lost (no PTL_EQ_DROPPED), the sender waits.
 * $PTL_REL_STOP_MS: rank 0 stops (SIGSTOP, the whole process, its progress
 * thread too) for that long right after it posts its first message of
 * 1 MiB or more, which is then partly sent: a sender descheduled in the
 * middle of a message must not lose it.  $PTL_REL_TSTOP_MS: rank 1 stops
 * so after $PTL_REL_TSTOP_AT messages (default half of them): a receiver that takes nothing from its
 * AF_XDP ring for longer than the sender's timeout must not lose any
 * either (receive credits: the runtime answers "not now" for it).
 * $PTL_REL_OP=get: rank 0 gets each message's bytes (patterned by rank 1)
 * and checks them; atomic: each message adds 1 to one of 64 counters
 * (PtlAtomic), fetch: to one counter with PtlFetchAtomic.  The counters
 * must end at the number of messages and the fetched old values must all
 * differ: no operation applied twice.
 */
#define REL_MAXCLS 8
struct rel_cls { size_t size, count, first; };

static int rel_spec(struct rel_cls *c, size_t *total, size_t *bytes)
{
	const char *s = getenv("PTL_REL_SPEC") ? getenv("PTL_REL_SPEC") : "8:1000,65536:20";
	int n = 0;

	*total = *bytes = 0;
	while (*s && n < REL_MAXCLS) {
		char *e;

		c[n].size = strtoull(s, &e, 10);
		if (*e != ':')
			DIE("PTL_REL_SPEC: want SIZE:COUNT,... at '%s'", s);
		c[n].count = strtoull(e + 1, &e, 10);
		if (!c[n].size || !c[n].count || (*e && *e != ','))
			DIE("PTL_REL_SPEC: want SIZE:COUNT,... at '%s'", s);
		c[n].first = *total;
		*total += c[n].count;
		*bytes += c[n].size * c[n].count;
		n++;
		s = *e ? e + 1 : e;
	}
	return n;
}

static void rel_stats(void)
{
	ptl_spin_rel_stats_t st = { 0 };

	OK(PtlSpinRelStats(ni, &st));
	LOG("reliable: msgs %llu acked %llu failed %llu timeouts %llu tail_probes %llu sacks %llu not_now %llu held %llu "
	    "retx_pkts %llu window_waits %llu probes %llu range_acked %llu rto_us %llu srtt_us %llu dup_answered %llu sacks_sent %llu "
	    "cc_waits %llu cc_cuts %llu cc_held %llu cwnd_max %llu regets %llu reget_pkts %llu reget_crossed %llu "
	    "reply_waits %llu rack_lost %llu reo_deferred %llu spurious %llu undos %llu min_rtt_us %llu "
	    "reo_wnd_us %llu",
	    (unsigned long long)st.msgs, (unsigned long long)st.acked,
	    (unsigned long long)st.failed, (unsigned long long)st.timeouts,
	    (unsigned long long)st.tail_probes, (unsigned long long)st.sacks, (unsigned long long)st.not_now, (unsigned long long)st.held,
	    (unsigned long long)st.retx_pkts, (unsigned long long)st.window_waits,
	    (unsigned long long)st.probes, (unsigned long long)st.range_acked,
	    (unsigned long long)st.rto_us, (unsigned long long)st.srtt_us,
	    (unsigned long long)st.dup_answered, (unsigned long long)st.sacks_sent,
	    (unsigned long long)st.cc_waits, (unsigned long long)st.cc_cuts,
	    (unsigned long long)st.cc_held, (unsigned long long)st.cwnd_max,
	    (unsigned long long)st.regets, (unsigned long long)st.reget_pkts,
	    (unsigned long long)st.reget_crossed, (unsigned long long)st.reply_waits,
	    (unsigned long long)st.rack_lost, (unsigned long long)st.reo_deferred,
	    (unsigned long long)st.spurious, (unsigned long long)st.undos,
	    (unsigned long long)st.min_rtt_us, (unsigned long long)st.reo_wnd_us);
}

/* what one message of c_rel does: put, get, atomic (+1 on one of 64
 * counters) or fetch (+1 on one counter, the old value comes back) */
enum rel_op { REL_PUT, REL_GET, REL_ATOMIC, REL_FETCH };

static int rel_event_ok(enum rel_op op, const ptl_event_t *ev)
{
	static const int want[] = { PTL_EVENT_PUT, PTL_EVENT_GET, PTL_EVENT_ATOMIC,
				    PTL_EVENT_FETCH_ATOMIC };

	return ev->type == want[op] && ev->ni_fail_type == PTL_NI_OK;
}

/* Stop this process for ms: a child sends it SIGCONT. */
static void stop_self(int ms)
{
	pid_t child = fork();

	if (child < 0)
		DIE("fork: %s", strerror(errno));
	if (!child) {
		pid_t pp = getppid();
		char path[64], st[256];

		/* once the parent is stopped, the sender sends the rest
		 * (rel_sender waits for it): they all meet a stopped process */
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pp);
		for (int i = 0; i < 5000; i++) {
			FILE *f = fopen(path, "r");
			char *e = f && fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;

			if (f)
				fclose(f);
			if (e && e[1] == ' ' && e[2] == 'T')
				break;
			usleep(1000);
		}
		touch("rel.stopped", R);
		usleep((useconds_t)ms * 1000);
		kill(pp, SIGCONT);
		_exit(0);
	}
	LOG("stopping for %d ms", ms);
	raise(SIGSTOP);
	waitpid(child, NULL, 0);
}

static void rel_target(enum rel_op op, int kind, int hnd, struct rel_cls *c, int ncls,
		       size_t total, ptl_handle_eq_t eq, int pause_ms)
{
	int stop_ms = getenv("PTL_REL_TSTOP_MS") ? atoi(getenv("PTL_REL_TSTOP_MS")) : 0;
	size_t stop_at = getenv("PTL_REL_TSTOP_AT") ? (size_t)atol(getenv("PTL_REL_TSTOP_AT")) :
			 total / 2;
	ptl_handle_ct_t ct = ct_new();
	ptl_ct_event_t cv;
	uint8_t *buf[REL_MAXCLS], *seen = calloc(total, 1);
	ptl_handle_me_t mh[REL_MAXCLS];
	ptl_handle_handler_t h = PTL_INVALID_HANDLE;
	size_t got = 0, bad = 0;
	ptl_event_t ev;
	char path[512];
	struct spin_rt *drt;
	struct spin_stats d0, d1;

	if (!seen)
		DIE("out of memory");
	pt_new(0, eq, PT_DATA);
	if (hnd) {
		snprintf(path, sizeof(path), "%s/selftests/progs/test_handlers.bpf.o", top_dir());
		if (PtlSpinHandlerLoad(ni, path, &h) != PTL_OK)
			DIE("PtlSpinHandlerLoad %s: %s", path, PtlSpinErrmsg());
	}
	for (int k = 0; k < ncls; k++) {
		size_t len = op == REL_PUT || op == REL_GET ? c[k].size * c[k].count : 64 * 8;
		ptl_me_t me;

		buf[k] = kbuf(kind, len);
		if (op == REL_GET)
			for (size_t i = 0; i < c[k].count; i++)
				fill(buf[k] + i * c[k].size, c[k].size, (uint32_t)(c[k].first + i) + 1);
		me = me_spec(buf[k], len, (op == REL_GET ? PTL_ME_OP_GET :
					   op == REL_FETCH ? PTL_ME_OP_GET | PTL_ME_OP_PUT : PTL_ME_OP_PUT) |
			     PTL_ME_EVENT_CT_COMM, 0x700 + k, 0);
		me.ct_handle = ct;
		if (hnd) {
			struct test_state st = { .mode = T_DMA };
			ptl_handle_hpu_mem_t hm;

			OK(PtlHPUAllocMem(sizeof(st), ni, &hm));
			OK(PtlHPUWriteMem(hm, 0, &st, sizeof(st)));
			me.handlers = h;
			me.hpu_memory = hm;
		}
		OK(PtlMEAppend(ni, PT_DATA, &me, PTL_PRIORITY_LIST, NULL, &mh[k]));
	}
	/* the runtime's duplicates over the case (spurious retransmissions
	 * and the link's duplicates that reached it), logged at the end */
	if (spin_open(getenv("SPIN_IFACE"), &drt) < 0 || spin_stats_read(drt, &d0) < 0)
		DIE("spin_open/spin_stats_read: %s", spin_errmsg());
	barrier("rel.ready");
	while (got < total && !bad) {
		size_t n, k;

		if (stop_ms > 0 && got == stop_at) {
			stop_self(stop_ms);
			stop_ms = 0;
		}
		if (pause_ms && got == total / 2) {
			LOG("target: not reading for %d ms", pause_ms);
			msleep(pause_ms);
			pause_ms = 0;
		}
		if (!want_ev(eq, &ev, 30000, "rel: target event"))
			break;
		n = (size_t)ev.hdr_data;
		for (k = 0; k < (size_t)ncls && (ev.match_bits != 0x700 + k); k++)
			;
		if (op == REL_GET && k < (size_t)ncls)	/* a get has no header data */
			n = c[k].first + ev.remote_offset / c[k].size;
		if (!rel_event_ok(op, &ev) || k == (size_t)ncls || n < c[k].first ||
		    n >= c[k].first + c[k].count || seen[n] ||
		    ((op == REL_PUT || op == REL_GET) &&
		     (ev.mlength != c[k].size || ev.rlength != c[k].size ||
		      ev.start != buf[k] + (n - c[k].first) * c[k].size))) {
			FAIL("rel: message %zu: unexpected or repeated event", n);
			dump_ev("target", &ev);
			bad++;
			continue;
		}
		seen[n] = 1;
		got++;
		/* (test_handlers copies to the message offset, not the remote
		 * offset: handlers decide where bytes go) */
		if (op == REL_PUT && !hnd &&
		    !check_pat("rel: bytes", ev.start, c[k].size, (uint32_t)n + 1))
			bad++;
	}
	LOG("target: %zu of %zu messages, each once", got, total);
	if (spin_stats_read(drt, &d1) < 0)
		DIE("spin_stats_read: %s", spin_errmsg());
	LOG("target runtime: duplicate %llu dup_answered %llu sacks_sent %llu",
	    (unsigned long long)(d1.drops[SPIN_DROP_DUPLICATE] - d0.drops[SPIN_DROP_DUPLICATE]),
	    (unsigned long long)(d1.drops[SPIN_DROP_DUP_ANSWERED] - d0.drops[SPIN_DROP_DUP_ANSWERED]),
	    (unsigned long long)(d1.sacks_sent - d0.sacks_sent));
	spin_close(drt);
	no_ev(eq, 200, "rel: after the last message");
	OK(PtlCTGet(ct, &cv));
	CHK_EQ(cv.success, total, "rel: counter");
	CHK_EQ(cv.failure, 0, "rel: counter failures");
	for (int k = 0; (op == REL_ATOMIC || op == REL_FETCH) && k < ncls; k++) {
		/* each message added 1 exactly once */
		uint64_t sum = 0, v;

		for (int i = 0; i < 64; i++) {
			memcpy(&v, buf[k] + i * 8, 8);
			sum += v;
		}
		CHK_EQ(sum, c[k].count, "rel: atomic sum");
	}
	for (int k = 0; hnd && k < ncls; k++) {
		struct test_state st;
		uint64_t np = (c[k].size + (SPIN_MAX_SEG - 1)) / SPIN_MAX_SEG;

		OK(PtlMEReadHPU(mh[k], 0, &st, sizeof(st)));
		LOG("handlers of %zu-byte messages: header %llu payload %llu completion %llu",
		    c[k].size, (unsigned long long)st.hdr_calls, (unsigned long long)st.pay_calls,
		    (unsigned long long)st.cmpl_calls);
		CHK_EQ(st.hdr_calls, c[k].count, "rel: header handler runs");
		CHK_EQ(st.pay_calls, c[k].count * np, "rel: payload handler runs");
		CHK_EQ(st.pay_bytes, c[k].count * c[k].size, "rel: payload handler bytes");
		CHK_EQ(st.cmpl_calls, c[k].count, "rel: completion handler runs");
		CHK_EQ(st.dma_errors, 0, "rel: handler DMA errors");
	}
	free(seen);
}

/* An initiator event of c_rel: counted by type, a failure reported. */
static void rel_count(const ptl_event_t *ev, size_t *n, size_t *sends, size_t *acks,
		      size_t *replies)
{
	(*n)++;
	if (ev->ni_fail_type != PTL_NI_OK) {
		FAIL("rel: %s of message %zu failed", ev_name(ev->type),
		     (size_t)(uintptr_t)ev->user_ptr);
		dump_ev("initiator", ev);
	}
	*sends += ev->type == PTL_EVENT_SEND;
	*acks += ev->type == PTL_EVENT_ACK;
	*replies += ev->type == PTL_EVENT_REPLY;
}

static void rel_initiator(enum rel_op op, int ack, struct rel_cls *c, int ncls, size_t total,
			  size_t bytes, ptl_handle_eq_t eq)
{
	int stop_ms = getenv("PTL_REL_STOP_MS") ? atoi(getenv("PTL_REL_STOP_MS")) : 0;
	/* the message before which the target stops ($PTL_REL_TSTOP_*) */
	size_t stop_at = getenv("PTL_REL_TSTOP_MS") && getenv("PTL_REL_TSTOP_AT") ?
			 (size_t)atol(getenv("PTL_REL_TSTOP_AT")) : 0;
	/* put/get: each message its own bytes; atomic/fetch: 8 bytes each */
	size_t cap = op == REL_PUT || op == REL_GET ? bytes : total * 8;
	uint8_t *src = calloc(1, cap ? cap : 1), *dst = calloc(1, cap ? cap : 1);
	uint8_t *fseen = calloc(total, 1);
	ptl_handle_md_t md, gmd;
	size_t sends = 0, acks = 0, replies = 0, off = 0, ev_n = 0, want;
	const uint64_t one = 1;
	ptl_event_t ev;
	uint64_t t0;

	if (!src || !dst || !fseen)
		DIE("out of memory");
	want = op == REL_GET ? total : op == REL_FETCH ? 2 * total : total * (ack ? 2 : 1);
	for (int k = 0; k < ncls; k++)
		for (size_t i = 0; i < c[k].count; i++) {
			if (op == REL_PUT)
				fill(src + off, c[k].size, (uint32_t)(c[k].first + i) + 1);
			else if (op != REL_GET)
				memcpy(src + (c[k].first + i) * 8, &one, 8);
			off += c[k].size;
		}
	md = md_new(src, cap, 0, eq, PTL_CT_NONE);
	gmd = md_new(dst, cap, 0, eq, PTL_CT_NONE);
	barrier("rel.ready");
	t0 = now_ms();
	off = 0;
	for (int k = 0; k < ncls; k++)
		for (size_t i = 0; i < c[k].count; i++) {
			size_t n = c[k].first + i;
			void *u = (void *)(uintptr_t)n;

			/* a target that stops after $PTL_REL_TSTOP_AT messages
			 * (rel_target): the rest go out once it has stopped */
			if (n && n == stop_at) {
				uint64_t w = now_ms();

				while (!exists("rel.stopped", 1) && now_ms() - w < 30000)
					msleep(1);
			}

			switch (op) {
			case REL_PUT:
				OK(PtlPut(md, off, c[k].size, ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ,
					  rank_proc(1), PT_DATA, 0x700 + k, i * c[k].size, u, n));
				break;
			case REL_GET:
				OK(PtlGet(gmd, off, c[k].size, rank_proc(1), PT_DATA, 0x700 + k,
					  i * c[k].size, u));
				break;
			case REL_ATOMIC:
				OK(PtlAtomic(md, n * 8, 8, ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ,
					     rank_proc(1), PT_DATA, 0x700 + k, (n % 64) * 8, u, n,
					     PTL_SUM, PTL_UINT64_T));
				break;
			case REL_FETCH:
				OK(PtlFetchAtomic(gmd, n * 8, md, n * 8, 8, rank_proc(1), PT_DATA,
						  0x700 + k, 0, u, n, PTL_SUM, PTL_UINT64_T));
				break;
			}
			off += c[k].size;
			if (stop_ms > 0 && c[k].size >= (1 << 20)) {
				stop_self(stop_ms);
				stop_ms = 0;
			}
			/* take what came meanwhile: the queue holds 65536 */
			while (PtlEQGet(eq, &ev) == PTL_OK)
				rel_count(&ev, &ev_n, &sends, &acks, &replies);
		}
	while (ev_n < want && want_ev(eq, &ev, 30000, "rel: initiator event"))
		rel_count(&ev, &ev_n, &sends, &acks, &replies);
	LOG("initiator: %zu messages (%zu bytes) in %llu ms: %zu send, %zu ack, %zu reply events",
	    total, bytes, (unsigned long long)(now_ms() - t0), sends, acks, replies);
	CHK_EQ(sends, op == REL_GET ? 0 : total, "rel: send events");
	CHK_EQ(acks, (op == REL_PUT || op == REL_ATOMIC) && ack ? total : 0, "rel: ack events");
	CHK_EQ(replies, op == REL_GET || op == REL_FETCH ? total : 0, "rel: reply events");
	off = 0;
	for (int k = 0; op == REL_GET && k < ncls; k++)
		for (size_t i = 0; i < c[k].count; i++) {
			if (!check_pat("rel: got bytes", dst + off, c[k].size,
				       (uint32_t)(c[k].first + i) + 1))
				break;
			off += c[k].size;
		}
	if (op == REL_FETCH) {
		/* the old values are 0..count-1 of each counter, each once:
		 * no fetch was applied twice */
		size_t dups = 0;

		for (int k = 0; k < ncls; k++)
			for (size_t i = 0; i < c[k].count; i++) {
				uint64_t v;

				memcpy(&v, dst + (c[k].first + i) * 8, 8);
				if (v >= c[k].count || fseen[c[k].first + v]++)
					dups++;
			}
		CHK_EQ(dups, 0, "rel: fetched values repeated or out of range");
	}
	rel_stats();
	/* $PTL_REL_RETX_MAX_PCT: packets sent again at most that share of the
	 * packets the messages have (a link that loses nothing: every
	 * retransmission is spurious) */
	if (getenv("PTL_REL_RETX_MAX_PCT")) {
		uint64_t pct = strtoull(getenv("PTL_REL_RETX_MAX_PCT"), NULL, 10), pkts = 0;
		ptl_spin_rel_stats_t st = { 0 };

		for (int k = 0; k < ncls; k++)
			pkts += c[k].count * (c[k].size <= SPIN_MAX_SEG ? 1 :
					      (c[k].size + SPIN_MAX_SEG - 1) / SPIN_MAX_SEG);
		OK(PtlSpinRelStats(ni, &st));
		LOG("retransmitted %llu of %llu packets (%.1f%%, at most %llu%% wanted)",
		    (unsigned long long)st.retx_pkts, (unsigned long long)pkts,
		    100.0 * (double)st.retx_pkts / (double)(pkts ? pkts : 1), (unsigned long long)pct);
		CHK(st.retx_pkts * 100 <= pct * pkts, "rel: %llu packets sent again of %llu, more than %llu%%",
		    (unsigned long long)st.retx_pkts, (unsigned long long)pkts, (unsigned long long)pct);
	}
	/* (src and dst stay: the MDs are bound until PtlNIFini) */
	free(fseen);
}

static void c_rel(void)
{
	struct rel_cls c[REL_MAXCLS];
	size_t total, bytes;
	int ncls = rel_spec(c, &total, &bytes);
	int kind = getenv("PTL_REL_KIND") && !strcmp(getenv("PTL_REL_KIND"), "malloc") ? K_MAL : K_WIN;
	int ack = getenv("PTL_REL_ACK") && atoi(getenv("PTL_REL_ACK"));
	int hnd = getenv("PTL_REL_HANDLERS") && atoi(getenv("PTL_REL_HANDLERS"));
	int pause_ms = getenv("PTL_REL_PAUSE_MS") ? atoi(getenv("PTL_REL_PAUSE_MS")) : 0;
	int eqn = getenv("PTL_REL_EQ") ? atoi(getenv("PTL_REL_EQ")) : 1 << 16;
	const char *o = getenv("PTL_REL_OP") ? getenv("PTL_REL_OP") : "put";
	enum rel_op op = !strcmp(o, "get") ? REL_GET : !strcmp(o, "atomic") ? REL_ATOMIC :
			 !strcmp(o, "fetch") ? REL_FETCH : REL_PUT;
	ptl_handle_eq_t eq;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	eq = eq_new(R == 1 ? eqn : 1 << 16);
	if (R == 1)
		rel_target(op, kind, hnd, c, ncls, total, eq, pause_ms);
	else
		rel_initiator(op, ack, c, ncls, total, bytes, eq);
	barrier("rel.done");
	if (R == 0)
		no_ev(eq, 100, "rel: initiator, after the last event");
	else
		rel_stats();	/* the target's side: answers, re-gets served */
	fini_ni();
}

/*
 * rel_gone: reliable puts to a target that answers nothing (test_rel.sh
 * drops every frame towards it): each fails with PTL_NI_UNDELIVERABLE in
 * its ack event (and a multi-packet one in its send event), not before
 * $SPIN_PTL_TIMEOUT_MS, after the retransmission timer tried again.
 */
static void c_rel_gone(void)
{
	uint64_t tmo = getenv("SPIN_PTL_TIMEOUT_MS") ? strtoull(getenv("SPIN_PTL_TIMEOUT_MS"), NULL, 10) : 2000;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 0) {
		ptl_handle_eq_t eq = eq_new(64);
		uint8_t *src = kbuf(K_MAL, 65536);
		ptl_handle_md_t md = md_new(src, 65536, 0, eq, PTL_CT_NONE);
		size_t lens[2] = { 8, 65536 };
		ptl_spin_rel_stats_t st;

		for (int i = 0; i < 2; i++) {
			int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
			ptl_event_t evs[2];
			uint64_t t0 = now_ms(), dt;

			OK(PtlPut(md, 0, lens[i], PTL_ACK_REQ, rank_proc(1), PT_DATA, 1, 0, U(i + 1), 0));
			if (!collect(eq, (int)tmo + 20000, 2, want, evs, "put to a gone target"))
				continue;
			dt = now_ms() - t0;
			LOG("%zu-byte put to a gone target: %s after %llu ms", lens[i],
			    fail_name(evs[0].ni_fail_type), (unsigned long long)dt);
			/* a one-packet put's send event came at once (its bytes
			 * were copied); a longer one's when it failed */
			CHKEV("put to a gone target", &evs[0], .m = F_TYPE | F_UPTR | F_FAIL,
			      .type = PTL_EVENT_SEND, .uptr = U(i + 1),
			      .fail = lens[i] > SPIN_MAX_SEG ? PTL_NI_UNDELIVERABLE : PTL_NI_OK);
			CHKEV("put to a gone target", &evs[1], .m = F_TYPE | F_UPTR | F_FAIL,
			      .type = PTL_EVENT_ACK, .uptr = U(i + 1), .fail = PTL_NI_UNDELIVERABLE);
			CHK(dt >= tmo, "failed after %llu ms, before the timeout of %llu ms",
			    (unsigned long long)dt, (unsigned long long)tmo);
		}
		OK(PtlSpinRelStats(ni, &st));
		CHK_EQ(st.failed, 2, "reliable: failed");
		CHK(st.timeouts >= 2, "the timer sent again: %llu timeouts", (unsigned long long)st.timeouts);
		no_ev(eq, 100, "after the failures");
	}
	barrier("rg.done");
	fini_ni();
}

/* a send event of rel_incast: its message's latency; 1 if NI_OK */
static int incast_sent(const ptl_event_t *ev, const uint64_t *t_put, uint64_t *lat, size_t count)
{
	size_t n = (size_t)(uintptr_t)ev->user_ptr;

	if (ev->type != PTL_EVENT_SEND || ev->ni_fail_type != PTL_NI_OK)
		return 0;
	if (n < count)
		lat[n] = now_us() - t_put[n];
	return 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * rel_incast: ranks 1..N-1 all put $PTL_REL_SPEC (one size: SIZE:COUNT) to
 * rank 0 at once, each into its own entry in rank 0's host window: every
 * message of every sender arrives once with its bytes; every sender gets
 * one send event per message, NI_OK.  (selftests/test_rel.sh: 8 senders.)
 */
static void c_rel_incast(void)
{
	struct rel_cls c[REL_MAXCLS];
	size_t total, bytes;
	int ncls = rel_spec(c, &total, &bytes);
	size_t size = c[0].size, count = c[0].count;
	ptl_handle_eq_t eq;
	ptl_event_t ev;

	/* bench/incast.sh: failed messages are counted, not a failure, and
	 * each sender writes its latencies to PTL_TEST_DIR/lat.RANK */
	int bench = getenv("PTL_INCAST_BENCH") && atoi(getenv("PTL_INCAST_BENCH"));

	if (ncls != 1)
		DIE("rel_incast: PTL_REL_SPEC is one SIZE:COUNT");
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	eq = eq_new(1 << 16);
	if (R == 0) {
		uint8_t *buf[64], *seen = calloc((size_t)N * count, 1);
		ptl_handle_ct_t ct = ct_new();
		ptl_ct_event_t cv;
		size_t got = 0, lost = 0, want = (size_t)(N - 1) * count;
		uint64_t t0;

		if (!seen || N > 64)
			DIE("rel_incast: at most 64 ranks");
		pt_new(0, eq, PT_DATA);
		for (int r = 1; r < N; r++) {
			buf[r] = kbuf(K_WIN, size * count);
			me_add(PT_DATA, buf[r], size * count, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM,
			       0x800 + r, 0, ct, PTL_PRIORITY_LIST, NULL);
		}
		barrier("ri.ready");
		t0 = now_us();
		while (got + lost < want) {
			size_t n;
			ptl_rank_t r;

			if (!want_ev(eq, &ev, 30000, "rel_incast: target event"))
				break;
			r = ev.initiator.rank;
			n = (size_t)ev.hdr_data;
			if (bench && ev.type == PTL_EVENT_PUT && ev.ni_fail_type != PTL_NI_OK) {
				lost++;	/* the benchmark counts what a run lost */
				continue;
			}
			if (ev.type != PTL_EVENT_PUT || ev.ni_fail_type != PTL_NI_OK || r < 1 ||
			    (int)r >= N || ev.match_bits != 0x800 + r || n >= count ||
			    seen[r * count + n] || ev.mlength != size ||
			    ev.start != buf[r] + n * size) {
				FAIL("rel_incast: unexpected or repeated event");
				dump_ev("target", &ev);
				break;
			}
			seen[r * count + n] = 1;
			got++;
			if (!check_pat("rel_incast: bytes", ev.start, size, ((uint32_t)r << 20 | (uint32_t)n) + 1))
				break;
		}
		t0 = now_us() - t0;
		LOG("target: %zu of %zu messages from %d senders, each once", got, want, N - 1);
		/* what bench/incast.sh reads: the aggregate rate at the target */
		LOG("incast: %zu bytes in %llu us: %.1f MB/s, %zu messages lost", got * size,
		    (unsigned long long)t0, t0 ? (double)(got * size) / (double)t0 : 0.0, lost);
		OK(PtlCTGet(ct, &cv));
		if (!bench)
			CHK_EQ(cv.success, want, "rel_incast: counter");
		rel_stats();
		barrier("ri.done");
		free(seen);
	} else {
		uint8_t *src = malloc(size * count);
		uint64_t *t_put = calloc(count, sizeof(*t_put)), *lat = calloc(count, sizeof(*lat));
		ptl_handle_md_t md;
		size_t sends = 0;
		uint64_t t0;

		if (!src || !t_put || !lat)
			DIE("out of memory");
		for (size_t n = 0; n < count; n++)
			fill(src + n * size, size, ((uint32_t)R << 20 | (uint32_t)n) + 1);
		md = md_new(src, size * count, 0, eq, PTL_CT_NONE);
		barrier("ri.ready");
		t0 = now_ms();
		for (size_t n = 0; n < count; n++) {
			/* a message's latency: from the call (which may wait for
			 * the congestion window) to its send event (the target
			 * has it) */
			t_put[n] = now_us();
			OK(PtlPut(md, n * size, size, PTL_NO_ACK_REQ, rank_proc(0), PT_DATA, 0x800 + R,
				  n * size, (void *)(uintptr_t)n, n));
			while (PtlEQGet(eq, &ev) == PTL_OK)
				sends += incast_sent(&ev, t_put, lat, count);
		}
		while (sends < count && want_ev(eq, &ev, 30000, "rel_incast: send event"))
			sends += incast_sent(&ev, t_put, lat, count);
		LOG("sender %d: %zu messages of %zu bytes in %llu ms", R, count, size,
		    (unsigned long long)(now_ms() - t0));
		if (sends == count) {
			qsort(lat, count, sizeof(*lat), cmp_u64);
			LOG("incast latency: p50 %llu us p99 %llu us max %llu us",
			    (unsigned long long)lat[count / 2], (unsigned long long)lat[count * 99 / 100],
			    (unsigned long long)lat[count - 1]);
		}
		if (bench && getenv("PTL_TEST_DIR")) {
			char path[4096];
			FILE *f;

			snprintf(path, sizeof(path), "%s/lat.%d", getenv("PTL_TEST_DIR"), R);
			if ((f = fopen(path, "w"))) {
				for (size_t n = 0; n < count; n++)
					fprintf(f, "%llu\n", (unsigned long long)lat[n]);
				fclose(f);
			}
		}
		free(t_put);
		free(lat);
		CHK_EQ(sends, count, "rel_incast: send events NI_OK");
		rel_stats();
		barrier("ri.done");
	}
	fini_ni();
}

/* A 65,536-rank map (issue 15): every process sets a map of 65,536 logical
 * ranks (ranks 0..N-1 the job's processes, the others other pids on the
 * same hosts), PtlGetMap gives it back, a map one larger is refused, and
 * rank 0 puts to rank N-1 through it, acknowledged.  (A packet from a rank
 * that high is the unit test's rank_65535.) */
#define BIGMAP 65536
static void c_bigmap(void)
{
	ptl_process_t *m = calloc(N, sizeof(*m)), *big = calloc(BIGMAP + 1, sizeof(*big));
	ptl_process_t *got = calloc(BIGMAP, sizeof(*got));
	int tgt = N - 1;
	ptl_size_t n = 0;
	ptl_event_t ev;

	if (!m || !big || !got)
		DIE("out of memory");
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	RC(PtlGetMap(ni, N, m, &n), PTL_OK);
	CHK_EQ(n, N, "PtlGetMap: the job's map");
	for (int r = 0; r <= BIGMAP; r++) {
		big[r] = m[r % N];
		if (r >= N)
			big[r].phys.pid = m[r % N].phys.pid + 1 + r;
	}
	RC(PtlSetMap(ni, BIGMAP + 1, big), PTL_ARG_INVALID);
	RC(PtlSetMap(ni, BIGMAP, big), PTL_OK);
	RC(PtlGetMap(ni, BIGMAP, got, &n), PTL_OK);
	CHK_EQ(n, BIGMAP, "PtlGetMap: size");
	CHK(!memcmp(got, big, BIGMAP * sizeof(*got)), "PtlGetMap gives the map back");
	if (R == tgt) {
		ptl_handle_eq_t eq = eq_new(16);
		uint8_t *b = kbuf(K_MAL, 64);

		pt_new(0, eq, PT_DATA);
		me_add(PT_DATA, b, 64, PTL_ME_OP_PUT, 0xb16, 0, PTL_CT_NONE, PTL_PRIORITY_LIST, NULL);
		barrier("bm.ready");
		if (want_ev(eq, &ev, T_EV_MS, "put through the big map"))
			CHKEV("put through the big map", &ev, .m = TGT_M, .type = PTL_EVENT_PUT,
			      .ini = rank_proc(0), .pt = PT_DATA, .mb = 0xb16, .rlen = 8, .mlen = 8,
			      .start = b, .list = PTL_PRIORITY_LIST);
		barrier("bm.done");
	} else if (R == 0) {
		ptl_handle_eq_t eq = eq_new(16);
		uint8_t *src = kbuf(K_MAL, 64);
		ptl_handle_md_t md = md_new(src, 64, 0, eq, PTL_CT_NONE);
		int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
		ptl_event_t evs[2];

		barrier("bm.ready");
		RC(PtlPut(md, 0, 8, PTL_ACK_REQ, rank_proc(tgt), PT_DATA, 0xb16, 0, NULL, 0), PTL_OK);
		if (collect(eq, T_EV_MS, 2, want, evs, "put through the big map"))
			CHKEV("put through the big map", &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK,
			      .mlen = 8, .list = PTL_PRIORITY_LIST);
		barrier("bm.done");
		RC(PtlMDRelease(md), PTL_OK);
	} else {
		barrier("bm.ready");
		barrier("bm.done");
	}
	fini_ni();
	free(m);
	free(big);
	free(got);
}



/* ------------------------------------------------- shipped handlers -- */

struct ship_state { uint64_t calls, sum, version, mix; };	/* progs/ship_v1.bpf.c */

static uint8_t *ship_obj(const char *name, size_t *len)
{
	char path[600];
	uint8_t *b;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/selftests/progs/%s", top_dir(), name);
	f = fopen(path, "rb");
	if (!f)
		DIE("%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n);
	if (!b || fread(b, 1, n, f) != (size_t)n)
		DIE("cannot read %s", path);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int ship_msgs(void)
{
	const char *v = getenv("PTL_TEST_SHIP_MSGS");

	return v ? atoi(v) : 10000;
}

/* n messages to entry bits at each of the targets, payload: the word i;
 * waits until each target has them all (reliable puts: the send event). */
static void ship_invoke(const ptl_process_t *t, int nt, ptl_match_bits_t bits, int n)
{
	ptl_handle_ct_t ct = ct_new();
	uint64_t *src = kbuf(K_MAL, (size_t)n * 8);
	ptl_handle_md_t md = md_new(src, (size_t)n * 8, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_SUCCESS_DISABLE,
				    PTL_EQ_NONE, ct);

	for (int i = 0; i < n; i++)
		src[i] = (uint64_t)i;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < nt; k++)
			RC(PtlPut(md, (size_t)i * 8, 8, PTL_NO_ACK_REQ, t[k], PTL_SPIN_SHIP_PT, bits, 0,
				  NULL, 0), PTL_OK);
	ct_wait(ct, (ptl_size_t)n * nt, 60000, "messages to the shipped handler sent and taken");
	ct_is(ct, (uint64_t)n * nt, 0, "messages to the shipped handler");
	/* quiet puts: the MD is free when a probe's range ack came */
	for (int i = 0; i < 500 && PtlMDRelease(md) == PTL_IN_USE; i++)
		msleep(10);
	PtlCTFree(ct);
}

static void ship_check(const ptl_spin_ship_result_t *r, int nt, const char *what, uint64_t calls,
		       uint64_t sum, uint64_t version)
{
	for (int k = 0; k < nt; k++) {
		struct ship_state st;
		char b[160];

		memcpy(&st, r[k].hpu, sizeof(st));
		snprintf(b, sizeof(b), "%s: rank %u invocations", what, r[k].target.rank);
		CHK_EQ(r[k].invocations, calls, b);
		snprintf(b, sizeof(b), "%s: rank %u handler calls", what, r[k].target.rank);
		CHK_EQ(st.calls, calls, b);
		snprintf(b, sizeof(b), "%s: rank %u sum", what, r[k].target.rank);
		CHK_EQ(st.sum, sum, b);
		snprintf(b, sizeof(b), "%s: rank %u version", what, r[k].target.rank);
		CHK_EQ(st.version, version, b);
	}
}

static void ship_all_ok(int rc, const ptl_spin_ship_result_t *r, int nt, const char *what)
{
	if (!CHK(rc == PTL_OK, "%s: %s", what, rc_name(rc)))
		for (int k = 0; k < nt; k++)
			LOG("  rank %u: code %u %s", r[k].target.rank, r[k].code, r[k].reason);
}

/* Rank 0 ships ship_v1 to ranks 0..3 (itself too), invokes it with
 * PTL_TEST_SHIP_MSGS messages per rank, ships it again (cache hit), by
 * hash (ifunc), replaces it with ship_v2, removes it.  SPIN_SHIP_ALLOW=0. */
static void c_ship(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 0) {
		ptl_process_t t[4];
		ptl_spin_ship_result_t r[4], r0[4];
		size_t l1, l2;
		uint8_t *o1 = ship_obj("ship_v1.bpf.o", &l1), *o2 = ship_obj("ship_v2.bpf.o", &l2);
		uint8_t h1[32];
		int n = ship_msgs(), nt = N < 4 ? N : 4, rc;
		uint64_t sum = (uint64_t)n * (n - 1) / 2, t0;
		ptl_handle_eq_t eq = eq_new(16);
		ptl_handle_md_t md;
		ptl_event_t ev;
		uint64_t one = 1;

		for (int k = 0; k < nt; k++)
			t[k].rank = k;
		barrier("ship.up");
		/* the runtimes' handlers before: what must come back */
		RC(PtlSpinHandlerQuery(ni, t, nt, 7, r0), PTL_FAIL);
		for (int k = 0; k < nt; k++)
			CHK_EQ(r0[k].code, SPIN_SHIP_E_NOENT, "query before shipping: no entry");
		t0 = now_ms();
		rc = PtlSpinHandlerShip(ni, o1, l1, t, nt, 7, sizeof(struct ship_state), 0, r);
		ship_all_ok(rc, r, nt, "ship v1");
		LOG("shipped %zu bytes to %d ranks in %llu ms", l1, nt, (unsigned long long)(now_ms() - t0));
		PtlSpinShipHash(o1, l1, h1);
		for (int k = 0; k < nt; k++) {
			CHK_EQ(r[k].cache_hit, 0, "first shipment: loaded");
			CHK(r[k].insns > 0, "rank %d: instructions %u", k, r[k].insns);
			CHK(!memcmp(r[k].hash, h1, 32), "rank %d: the object's SHA-256", k);
			CHK(r[k].placement == PTL_SPIN_PLACE_NATIVE || r[k].placement == PTL_SPIN_PLACE_GENERIC,
			    "rank %d: placement %d", k, r[k].placement);
			CHK_EQ(r[k].programs, 1, "programs at the target");
			CHK_EQ(r[k].handlers, r0[k].handlers + 1, "handlers on the target's runtime: one more");
			CHK_EQ(r[k].loads, 1, "loads");
		}
		if (getenv("PTL_TEST_SHIP_PLACE"))
			for (int k = 0; k < nt; k++)
				CHK_EQ(r[k].placement, !strcmp(getenv("PTL_TEST_SHIP_PLACE"), "generic") ?
				       PTL_SPIN_PLACE_GENERIC : PTL_SPIN_PLACE_NATIVE, "placement the sender learns");
		LOG("placement at rank 1: %s, %u instructions",
		    r[nt > 1].placement == PTL_SPIN_PLACE_NATIVE ? "native" : "generic", r[nt > 1].insns);
		/* the same code on a second entry: a cache hit, no load */
		rc = PtlSpinHandlerShip(ni, o1, l1, t, nt, 8, sizeof(struct ship_state), 0, r);
		ship_all_ok(rc, r, nt, "ship v1 again");
		for (int k = 0; k < nt; k++) {
			CHK_EQ(r[k].cache_hit, 1, "second shipment: cache hit");
			CHK_EQ(r[k].cache_hits, 1, "cache hits counted");
			CHK_EQ(r[k].loads, 1, "no second load");
			CHK_EQ(r[k].handlers, r0[k].handlers + 1, "no second program");
		}
		ship_invoke(t, nt, PtlSpinShipBits(ni, 7), n);
		rc = PtlSpinHandlerQuery(ni, t, nt, 7, r);
		ship_all_ok(rc, r, nt, "query v1");
		ship_check(r, nt, "entry 7 after the messages", n, sum, 1);
		rc = PtlSpinHandlerQuery(ni, t, nt, 8, r);
		ship_all_ok(rc, r, nt, "query entry 8");
		ship_check(r, nt, "entry 8 (no messages)", 0, 0, 0);
		/* ifunc: the cached program by its hash, once per message */
		ship_invoke(t, nt, PtlSpinIfuncBits(h1), 3);
		rc = PtlSpinIfuncQuery(ni, t, nt, h1, r);
		ship_all_ok(rc, r, nt, "ifunc query");
		ship_check(r, nt, "ifunc messages", 3, 3, 1);
		/* a new version on entry 7 */
		rc = PtlSpinHandlerShip(ni, o2, l2, t, nt, 7, sizeof(struct ship_state), 0, r);
		ship_all_ok(rc, r, nt, "ship v2");
		for (int k = 0; k < nt; k++) {
			CHK_EQ(r[k].cache_hit, 0, "v2: loaded");
			CHK_EQ(r[k].loads, 2, "v2: second load");
			CHK_EQ(r[k].programs, 2, "v1 (entry 8) and v2 (entry 7)");
		}
		ship_invoke(t, nt, PtlSpinShipBits(ni, 7), 100);
		rc = PtlSpinHandlerQuery(ni, t, nt, 7, r);
		ship_all_ok(rc, r, nt, "query v2");
		ship_check(r, nt, "entry 7 runs v2", 100, 2 * (99 * 100 / 2), 2);
		/* removal */
		rc = PtlSpinHandlerUnship(ni, t, nt, 7, r);
		ship_all_ok(rc, r, nt, "unship 7");
		rc = PtlSpinHandlerUnship(ni, t, nt, 8, r);
		ship_all_ok(rc, r, nt, "unship 8");
		RC(PtlSpinHandlerQuery(ni, t, nt, 7, r), PTL_FAIL);
		for (int k = 0; k < nt; k++) {
			CHK_EQ(r[k].code, SPIN_SHIP_E_NOENT, "query after unship: no entry");
			CHK_EQ(r[k].programs, 0, "no shipped program left");
			CHK_EQ(r[k].handlers, r0[k].handlers, "the target's runtime has its handlers of before");
		}
		/* the entry is gone from the wire too */
		md = md_new(&one, 8, 0, eq, PTL_CT_NONE);
		RC(PtlPut(md, 0, 8, PTL_ACK_REQ, t[nt - 1], PTL_SPIN_SHIP_PT, PtlSpinShipBits(ni, 7), 0,
			  NULL, 0), PTL_OK);
		do {
			rc = PtlEQPoll(&eq, 1, 5000, &ev, NULL);
		} while (rc == PTL_OK && ev.type != PTL_EVENT_ACK);
		RC(rc, PTL_OK);
		CHK(ev.ni_fail_type != PTL_NI_OK, "a put to the removed entry is not taken (%d)", ev.ni_fail_type);
		RC(PtlMDRelease(md), PTL_OK);
		/* rank 1's job ends: what it shipped to rank 2 goes with it */
		barrier("ship.r1go");
		barrier("ship.r1");	/* rank 1 shipped to rank 2 */
		if (nt > 2) {
			RC(PtlSpinHandlerQuery(ni, &t[2], 1, 7, r), PTL_FAIL);
			CHK_EQ(r[0].programs, 1, "rank 1's program at rank 2");
		}
		barrier("ship.r1q");
		barrier("ship.r1fini");	/* rank 1 called PtlNIFini */
		if (nt > 2) {
			RC(PtlSpinHandlerQuery(ni, &t[2], 1, 7, r), PTL_FAIL);
			CHK_EQ(r[0].programs, 0, "rank 1's program gone from rank 2 with its PtlNIFini");
			CHK_EQ(r[0].handlers, r0[2].handlers, "rank 2's runtime as before");
		}
		free(o1);
		free(o2);
		barrier("ship.done");
	} else {
		barrier("ship.up");
		barrier("ship.r1go");
		if (R == 1 && N > 2) {
			ptl_process_t t2 = { .rank = 2 };
			ptl_spin_ship_result_t r;
			size_t l1;
			uint8_t *o1 = ship_obj("ship_v1.bpf.o", &l1);

			RC(PtlSpinHandlerShip(ni, o1, l1, &t2, 1, 5, 8, 0, &r), PTL_OK);
			free(o1);
			barrier("ship.r1");
			barrier("ship.r1q");
			fini_ni();
			barrier("ship.r1fini");
			barrier("ship.done");
			return;
		}
		barrier("ship.r1");
		barrier("ship.r1q");
		barrier("ship.r1fini");
		barrier("ship.done");
	}
	fini_ni();
}

static void ship_expect(const char *what, int rc, const ptl_spin_ship_result_t *r, unsigned code,
			const char *reason_has)
{
	RC(rc, PTL_FAIL);
	if (!CHK_EQ(r->code, code, what) || !CHK(strstr(r->reason, reason_has), "%s: reason '%s' lacks '%s'",
						   what, r->reason, reason_has))
		return;
	LOG("%s: %s", what, r->reason);
}

/* Failures come back to the sender with the reason, and the target is
 * unchanged: rank 0 ships to rank 1 (both SPIN_SHIP_ALLOW=0,
 * SPIN_SHIP_MAX_INSNS=5000 SPIN_SHIP_MAX_BYTES=300000
 * SPIN_SHIP_MAX_PROGS=1): garbage, a cut object, a verifier rejection, a
 * helper the policy denies, too many instructions, host memory (none for
 * shipped code),
 * too many bytes, one program too many; rank 1 ships to rank 0, which
 * does not allow it. */
static void c_ship_fail(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 0) {
		ptl_process_t t = { .rank = 1 };
		ptl_spin_ship_result_t r, r0;
		size_t lb, lp, lg, l1;
		uint8_t *bad = ship_obj("bad_handler.bpf.o", &lb), *probe = ship_obj("ship_probe.bpf.o", &lp);
		uint8_t *big = ship_obj("ship_big.bpf.o", &lg), *v1 = ship_obj("ship_v1.bpf.o", &l1);
		char junk[300];

		barrier("sf.up");
		RC(PtlSpinHandlerQuery(ni, &t, 1, 1, &r0), PTL_FAIL);
		CHK_EQ(r0.code, SPIN_SHIP_E_NOENT, "query before");
		memset(junk, 'x', sizeof(junk));
		ship_expect("garbage", PtlSpinHandlerShip(ni, junk, sizeof(junk), &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_MALFORMED, "not an ELF64");
		ship_expect("cut object", PtlSpinHandlerShip(ni, v1, 300, &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_MALFORMED, "section table");
		{
			/* an ELF object of the host's machine (this program's first 64 KiB) */
			FILE *f = fopen("/proc/self/exe", "rb");
			static uint8_t host[65536];
			size_t n = f ? fread(host, 1, sizeof(host), f) : 0;

			if (f)
				fclose(f);
			ship_expect("host ELF", PtlSpinHandlerShip(ni, host, n, &t, 1, 1, 8, 0, &r), &r,
				    SPIN_SHIP_E_MALFORMED, "not a BPF relocatable");
		}
		ship_expect("verifier", PtlSpinHandlerShip(ni, bad, lb, &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_VERIFIER, "verifier");
		ship_expect("helper", PtlSpinHandlerShip(ni, probe, lp, &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_DENIED, "helper 113");
		{
			size_t lo;
			uint8_t *own = ship_obj("ship_ownmap.bpf.o", &lo);

			ship_expect("own map", PtlSpinHandlerShip(ni, own, lo, &t, 1, 1, 8, 0, &r), &r,
				    SPIN_SHIP_E_DENIED, "code uses map ship_own");
			free(own);
		}
		ship_expect("instructions", PtlSpinHandlerShip(ni, big, lg, &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_LIMIT, "SPIN_SHIP_MAX_INSNS");
		ship_expect("host memory", PtlSpinHandlerShip(ni, v1, l1, &t, 1, 1, 8, 1 << 30, &r), &r,
			    SPIN_SHIP_E_DENIED, "host 0");
		{
			size_t nb = 400000;
			uint8_t *huge = calloc(1, nb);

			ship_expect("bytes", PtlSpinHandlerShip(ni, huge, nb, &t, 1, 1, 8, 0, &r), &r,
				    SPIN_SHIP_E_LIMIT, "SPIN_SHIP_MAX_BYTES");
			free(huge);
		}
		RC(PtlSpinHandlerQuery(ni, &t, 1, 1, &r), PTL_FAIL);
		CHK_EQ(r.code, SPIN_SHIP_E_NOENT, "no entry after the failures");
		CHK_EQ(r.programs, 0, "no shipped program after the failures");
		CHK_EQ(r.loads, 0, "nothing loaded");
		CHK_EQ(r.handlers, r0.handlers, "the target's runtime unchanged");
		/* and a good one still goes in */
		RC(PtlSpinHandlerShip(ni, v1, l1, &t, 1, 1, 8, 0, &r), PTL_OK);
		CHK_EQ(r.handlers, r0.handlers + 1, "a good object after the failures");
		/* SPIN_SHIP_MAX_PROGS=1: a second program is over the limit,
		 * the first one's entry stays */
		{
			size_t l2;
			uint8_t *v2 = ship_obj("ship_v2.bpf.o", &l2);

			ship_expect("programs", PtlSpinHandlerShip(ni, v2, l2, &t, 1, 2, 8, 0, &r), &r,
				    SPIN_SHIP_E_LIMIT, "SPIN_SHIP_MAX_PROGS");
			CHK_EQ(r.handlers, r0.handlers + 1, "over the program limit: runtime unchanged");
			free(v2);
		}
		RC(PtlSpinHandlerQuery(ni, &t, 1, 1, &r), PTL_OK);
		barrier("sf.r1");	/* rank 1 ships to rank 0 */
		barrier("sf.done");
		free(bad); free(probe); free(big); free(v1);
	} else {
		ptl_process_t t = { .rank = 0 };
		ptl_spin_ship_result_t r;
		size_t l1;
		uint8_t *v1 = ship_obj("ship_v1.bpf.o", &l1);

		barrier("sf.up");
		barrier("sf.r1");
		ship_expect("rank not allowed", PtlSpinHandlerShip(ni, v1, l1, &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_DENIED, "SPIN_SHIP_ALLOW");
		CHK_EQ(r.programs, 0, "denied: nothing at the target");
		barrier("sf.done");
		free(v1);
	}
	fini_ni();
}

/*
 * Shipped code reaches only its own entries' handler memory and no host
 * window (docs/shipping.md, "Memory"): rank 1 plants PEEK_MAGIC in the
 * handler memory of an entry of its own (a handler it loaded) and in a
 * page of its window; rank 0 ships ship_peek, which looks for it in every
 * handler-memory slot and every window page of the runtime's maps, and
 * ship_bigmem, whose code names spin_hpu_big (refused, runtime unchanged).
 * SPIN_SHIP_ALLOW=0.
 */
#define PEEK_MAGIC 0x5ec2e75ec2e75ec2ull
struct peek_state { uint64_t calls, hpu_slots, hpu_found, host_found; };	/* progs/ship_peek.bpf.c */

static void c_ship_peek(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_handle_eq_t eq = eq_new(64);
		ptl_handle_handler_t h;
		ptl_handle_hpu_mem_t hm;
		ptl_handle_me_t mh;
		uint64_t magic = PEEK_MAGIC, got = 0;
		char path[600];
		void *w = NULL;
		ptl_me_t me;

		snprintf(path, sizeof(path), "%s/selftests/progs/ship_v1.bpf.o", top_dir());
		if (PtlSpinHandlerLoad(ni, path, &h) != PTL_OK)
			DIE("PtlSpinHandlerLoad %s: %s", path, PtlSpinErrmsg());
		OK(PtlHPUAllocMem(64, ni, &hm));
		OK(PtlHPUWriteMem(hm, 0, &magic, 8));
		pt_new(0, eq, 6);
		me = me_spec(NULL, 0, PTL_ME_OP_PUT, 0x77, 0);
		me.handlers = h;
		me.hpu_memory = hm;
		OK(PtlMEAppend(ni, 6, &me, PTL_PRIORITY_LIST, U(0x77), &mh));
		OK(PtlMEReadHPU(mh, 0, &got, 8));
		CHK_EQ(got, PEEK_MAGIC, "the secret is in the local entry's handler memory");
		OK(PtlSpinHostAlloc(ni, 4096, &w));
		memcpy(w, &magic, 8);
		barrier("pk.up");
		barrier("pk.done");
		OK(PtlMEReadHPU(mh, 0, &got, 8));
		CHK_EQ(got, PEEK_MAGIC, "the local entry's handler memory unchanged");
		CHK(!memcmp(w, &magic, 8), "the window page unchanged");
		RC(PtlMEUnlink(mh), PTL_OK);
		RC(PtlHPUFreeMem(hm), PTL_OK);
		RC(PtlSpinHandlerUnload(h), PTL_OK);
		PtlSpinHostFree(ni, w);
	} else if (R == 0) {
		ptl_process_t t = { .rank = 1 };
		ptl_spin_ship_result_t r, r0;
		struct peek_state st = { 0 };
		size_t lp, lb;
		uint8_t *peek = ship_obj("ship_peek.bpf.o", &lp), *bigm = ship_obj("ship_bigmem.bpf.o", &lb);

		barrier("pk.up");
		RC(PtlSpinHandlerQuery(ni, &t, 1, 1, &r0), PTL_FAIL);
		ship_expect("code naming spin_hpu_big", PtlSpinHandlerShip(ni, bigm, lb, &t, 1, 1, 64, 0, &r), &r,
			    SPIN_SHIP_E_DENIED, "spin_hpu_big");
		CHK_EQ(r.handlers, r0.handlers, "refused: the target's runtime unchanged");
		CHK_EQ(r.programs, 0, "refused: no shipped program");
		ship_expect("host memory", PtlSpinHandlerShip(ni, peek, lp, &t, 1, 1, 64, 4096, &r), &r,
			    SPIN_SHIP_E_DENIED, "host 0");
		CHK_EQ(r.handlers, r0.handlers, "host memory refused: the target's runtime unchanged");
		RC(PtlSpinHandlerShip(ni, peek, lp, &t, 1, 1, sizeof(st), 0, &r), PTL_OK);
		ship_invoke(&t, 1, PtlSpinShipBits(ni, 1), 1);
		for (int i = 0; i < 200; i++) {
			RC(PtlSpinHandlerQuery(ni, &t, 1, 1, &r), PTL_OK);
			if (r.invocations >= 1)
				break;
			msleep(50);
		}
		memcpy(&st, r.hpu, sizeof(st));
		CHK_EQ(r.invocations, 1, "the peeking handler ran");
		CHK_EQ(st.calls, 1, "its own handler memory works");
		CHK_EQ(st.hpu_found, 0, "other entries' handler memory out of reach");
		CHK_EQ(st.host_found, 0, "the window out of reach");
		/* its entry and its program's ifunc entry */
		CHK(st.hpu_slots >= 1 && st.hpu_slots <= 2, "handler memory slots it reaches: %llu, want its own (1-2)",
		    (unsigned long long)st.hpu_slots);
		LOG("peek: %llu calls, %llu slots reached, %llu + %llu secrets found",
		    (unsigned long long)st.calls, (unsigned long long)st.hpu_slots,
		    (unsigned long long)st.hpu_found, (unsigned long long)st.host_found);
		RC(PtlSpinHandlerUnship(ni, &t, 1, 1, &r), PTL_OK);
		CHK_EQ(r.programs, 0, "unshipped");
		barrier("pk.done");
		free(peek);
		free(bigm);
	}
	fini_ni();
}

/* Shipped programs the target (rank 0) holds now: the count in any answer
 * of its own (a query of itself, SPIN_SHIP_ALLOW has rank 0). */
static uint32_t ship_held(uint32_t *handlers)
{
	ptl_process_t self = { .rank = 0 };
	ptl_spin_ship_result_t r;

	memset(&r, 0, sizeof(r));
	RC(PtlSpinHandlerQuery(ni, &self, 1, 999, &r), PTL_FAIL);
	CHK_EQ(r.code, SPIN_SHIP_E_NOENT, "query of the target itself");
	if (handlers)
		*handlers = r.handlers;
	return r.programs;
}

/*
 * What a killed sender shipped goes when its lease ends (docs/shipping.md,
 * "Removal"): rank 1 ships ship_v1 to rank 0 and waits; rank 0 checks the
 * program is still there after 3 leases (rank 1's library renews them),
 * SIGKILLs rank 1 (no PtlNIFini, no UNSHIP_ALL) and waits for the program
 * to go.  SPIN_SHIP_ALLOW=0,1 SPIN_SHIP_LEASE_MS=2000.
 */
static void c_ship_lease(void)
{
	int lease = getenv("SPIN_SHIP_LEASE_MS") ? atoi(getenv("SPIN_SHIP_LEASE_MS")) : 10000;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_process_t t = { .rank = 0 };
		ptl_spin_ship_result_t r;
		pid_t me = getpid();
		size_t l1;
		uint8_t *v1 = ship_obj("ship_v1.bpf.o", &l1);
		uint64_t end;

		barrier("sl.up");
		RC(PtlSpinHandlerShip(ni, v1, l1, &t, 1, 5, 32, 0, &r), PTL_OK);
		put_file("sl.pid", &me, sizeof(me));
		barrier("sl.shipped");
		end = now_ms() + 50000;
		while (now_ms() < end)	/* until rank 0 kills this process */
			msleep(100);
		DIE("rank 0 did not kill this process within 50 s");
	} else if (R == 0) {
		uint32_t h0 = 0, h = 0, held;
		pid_t victim;
		uint64_t t0, dt;

		/* before rank 1 may ship (it ships once past sl.up: a check
		 * after the barrier raced with its shipment, and lost beside
		 * stress-ng) */
		CHK_EQ(ship_held(&h0), 0, "nothing shipped yet");
		barrier("sl.up");
		barrier("sl.shipped");
		CHK_EQ(ship_held(&h), 1, "rank 1's program is here");
		CHK_EQ(h, h0 + 1, "on the runtime");
		msleep(3 * lease);
		CHK_EQ(ship_held(NULL), 1, "rank 1 alive: its lease renewed, its program stays (3 leases later)");
		get_file("sl.pid", &victim, sizeof(victim));
		CHK(kill(victim, SIGKILL) == 0, "kill %d: %s", victim, strerror(errno));
		t0 = now_ms();
		while ((held = ship_held(NULL)) != 0 && now_ms() - t0 < (uint64_t)lease + 12000)
			msleep(100);
		dt = now_ms() - t0;
		CHK_EQ(held, 0, "rank 1 killed: its program removed");
		ship_held(&h);
		CHK_EQ(h, h0, "the target's runtime as before the shipment");
		LOG("killed sender's program removed %llu ms after SIGKILL (lease %d ms; bound: lease + lease/4)",
		    (unsigned long long)dt, lease);
	}
	fini_ni();
}

/*
 * A sender's messages to its shipped entries keep them (docs/shipping.md,
 * "Removal"): rank 1 runs with SPIN_SHIP_RENEW_MS=0 (no lease puts), ships
 * ship_v1 to rank 0 and sends a message to it every 100 ms for 3 leases;
 * rank 0 checks the program is still there, then that it goes a lease
 * after rank 1 stopped sending (so nothing else kept it).  Beside
 * stress-ng a busy sender's lease puts did not get through for 10 s and
 * its code went while it sent.  SPIN_SHIP_LEASE_MS=2000 at rank 0.
 */
static void c_ship_traffic(void)
{
	int lease = getenv("SPIN_SHIP_LEASE_MS") ? atoi(getenv("SPIN_SHIP_LEASE_MS")) : 10000;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 1) {
		ptl_process_t t = { .rank = 0 };
		ptl_spin_ship_result_t r;
		size_t l1;
		uint8_t *v1 = ship_obj("ship_v1.bpf.o", &l1);
		uint64_t end;
		int n = 0;

		barrier("st.up");
		RC(PtlSpinHandlerShip(ni, v1, l1, &t, 1, 5, 32, 0, &r), PTL_OK);
		barrier("st.shipped");
		end = now_ms() + 3 * (uint64_t)lease;
		for (; now_ms() < end && n < 1000; n++) {
			ship_invoke(&t, 1, PtlSpinShipBits(ni, 5), 1);
			msleep(100);
		}
		LOG("%d messages to the shipped entry in 3 leases", n);
		barrier("st.sent");
		barrier("st.gone");	/* alive, silent, until rank 0 saw it go */
		free(v1);
	} else if (R == 0) {
		uint32_t held;
		uint64_t t0;

		barrier("st.up");
		barrier("st.shipped");
		CHK_EQ(ship_held(NULL), 1, "rank 1's program is here");
		barrier("st.sent");
		CHK_EQ(ship_held(NULL), 1, "rank 1 sent to it, no lease put: its program stays (3 leases)");
		t0 = now_ms();
		while ((held = ship_held(NULL)) != 0 && now_ms() - t0 < (uint64_t)lease + 12000)
			msleep(100);
		CHK_EQ(held, 0, "rank 1 silent: its program went a lease later");
		LOG("silent sender's program removed %llu ms after its last message (lease %d ms)",
		    (unsigned long long)(now_ms() - t0), lease);
		barrier("st.gone");
	}
	fini_ni();
}

/* A target without SPIN_SHIP_ALLOW takes no code: the sender learns it. */
static void c_ship_off(void)
{
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	barrier("so.up");
	if (R == 0) {
		ptl_process_t t = { .rank = 1 };
		ptl_spin_ship_result_t r;
		size_t l1;
		uint8_t *v1 = ship_obj("ship_v1.bpf.o", &l1);

		ship_expect("shipping off", PtlSpinHandlerShip(ni, v1, l1, &t, 1, 1, 8, 0, &r), &r,
			    SPIN_SHIP_E_UNDELIVERED, "SPIN_SHIP_ALLOW");
		free(v1);
	}
	barrier("so.done");
	fini_ni();
}


/* A Portals process that accepts shipped code until the script (as rank
 * 0) touches b.serve.done.0: test_ptl.sh's ship_push runs spinctl
 * handler push/query/unship against it. */
static void c_ship_serve(void)
{
	uint64_t end = now_ms() + 25000;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (getenv("PTL_TEST_IDLE_MS")) {
		/* what accepting shipped code costs an idle process */
		struct rusage a, b;
		int ms = atoi(getenv("PTL_TEST_IDLE_MS"));

		getrusage(RUSAGE_SELF, &a);
		msleep(ms);
		getrusage(RUSAGE_SELF, &b);
		LOG("idle %d ms: %.1f ms CPU (user %.1f, sys %.1f)", ms,
		    ((b.ru_utime.tv_sec - a.ru_utime.tv_sec) + (b.ru_stime.tv_sec - a.ru_stime.tv_sec)) * 1e3 +
		    ((b.ru_utime.tv_usec - a.ru_utime.tv_usec) + (b.ru_stime.tv_usec - a.ru_stime.tv_usec)) / 1e3,
		    (b.ru_utime.tv_sec - a.ru_utime.tv_sec) * 1e3 + (b.ru_utime.tv_usec - a.ru_utime.tv_usec) / 1e3,
		    (b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1e3 + (b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e3);
	}
	touch("serve.up", R);
	while (!exists("serve.done", 0) && now_ms() < end)
		msleep(20);
	CHK(exists("serve.done", 0), "the script finished within 25 s");
	fini_ni();
}

/*
 * matchorder: many entries appended, matched and unlinked in Portals order,
 * through the whole stack (PtlMEAppend, the runtime's matching, the
 * library's events), every match checked against a reference model in
 * plain C that both ranks run.  Rank 1 appends $PTL_TEST_MO_N entries
 * (default 3000) in random order: match bits from N/8 values (several
 * entries per key), 2% with overlapping ignore bits, rank 0 or any,
 * use-once or persistent, priority or overflow list, host-window or
 * ordinary memory.  Rank 0 puts $PTL_TEST_MO_MSGS messages, one at a time,
 * at bits taken from random entries (its ignored bits flipped), or random
 * bits (nothing matches: PTL_NI_DROPPED); between rounds rank 1 unlinks a
 * random eighth of the entries.  Each put's ack (list, failure) and the
 * target's event (the entry's user_ptr, list) must be the model's; at the
 * end every entry is unlinked, a put is dropped and the portal is free.
 * selftests/test_ptl_match checks the library's match index the same way.
 */
struct mo_ent {
	uint64_t bits, ign;
	bool any_rank, once, overflow, win, alive;
	ptl_handle_me_t h;
};

static uint64_t mo_rs;
static uint64_t mo_rnd(void)
{
	mo_rs ^= mo_rs << 13;
	mo_rs ^= mo_rs >> 7;
	mo_rs ^= mo_rs << 17;
	return mo_rs;
}

/* the first live entry that takes bits from rank 0: priority list first,
 * append order within a list; -1: none */
static long mo_model(const struct mo_ent *v, long n, uint64_t bits)
{
	for (int l = 0; l < 2; l++)
		for (long i = 0; i < n; i++)
			if (v[i].alive && v[i].overflow == l && !((v[i].bits ^ bits) & ~v[i].ign))
				return i;	/* every entry takes rank 0: any, or 0 */
	return -1;
}

#define MO_ROUNDS 4
static void c_matchorder(void)
{
	static const uint64_t masks[] = { 0xf, 0xf0, 0xff, 0xf00f, 0x3c, 0x1 };
	long n = getenv("PTL_TEST_MO_N") ? atol(getenv("PTL_TEST_MO_N")) : 3000;
	long nmsg = getenv("PTL_TEST_MO_MSGS") ? atol(getenv("PTL_TEST_MO_MSGS")) : n;
	struct mo_ent *v = calloc((size_t)n, sizeof(*v));
	uint64_t *msg = calloc((size_t)nmsg, sizeof(*msg));
	long *want = calloc((size_t)nmsg, sizeof(*want)), *order = calloc((size_t)n, sizeof(*order));
	long matched = 0, onces = 0;
	ptl_handle_eq_t eq;
	char ctx[160];

	if (!v || !msg || !want || !order || n < 16)
		DIE("PTL_TEST_MO_N %ld: out of memory or too small", n);
	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (lim.max_entries < n) {
		FAIL("max_entries %d < %ld", lim.max_entries, n);
		fini_ni();
		return;
	}
	/* both ranks draw the same entries and messages */
	mo_rs = 0x9e3779b97f4a7c15ull;
	for (long i = 0; i < n; i++) {
		v[i].bits = mo_rnd() % (uint64_t)(n / 8);
		v[i].ign = mo_rnd() % 50 ? 0 : masks[mo_rnd() % 6];
		v[i].any_rank = mo_rnd() % 2;
		v[i].once = mo_rnd() % 3 == 0;
		v[i].overflow = mo_rnd() % 10 == 0;
		v[i].win = mo_rnd() % 2;
		v[i].alive = true;
	}
	for (long j = 0; j < nmsg; j++) {
		const struct mo_ent *e = &v[mo_rnd() % (uint64_t)n];

		msg[j] = mo_rnd() % 8 == 0 ? mo_rnd() | 1ull << 63 : e->bits ^ (mo_rnd() & e->ign);
	}
	eq = eq_new((ptl_size_t)(nmsg < 64 ? 64 : nmsg + 16));
	if (R == 1) {
		uint8_t *wbuf = kbuf(K_WIN, 64), *mbuf = kbuf(K_MAL, 64);
		uint64_t t0 = now_ms();

		pt_new(0, eq, PT_DATA);
		for (long i = 0; i < n; i++) {
			struct mo_ent *e = &v[i];
			ptl_me_t me;

			memset(&me, 0, sizeof(me));
			me.start = e->win ? wbuf : mbuf;
			me.length = 64;
			me.ct_handle = PTL_CT_NONE;
			me.uid = PTL_UID_ANY;
			me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE |
				     PTL_ME_EVENT_UNLINK_DISABLE | (e->once ? PTL_ME_USE_ONCE : 0);
			me.match_id = e->any_rank ? any_proc() : rank_proc(0);
			me.match_bits = e->bits;
			me.ignore_bits = e->ign;
			if (PtlMEAppend(ni, PT_DATA, &me, e->overflow ? PTL_OVERFLOW_LIST :
					PTL_PRIORITY_LIST, U(i + 1), &e->h) != PTL_OK)
				DIE("PtlMEAppend of entry %ld of %ld: %s", i, n, PtlSpinErrmsg());
		}
		LOG("%ld entries appended in %llu ms", n, (unsigned long long)(now_ms() - t0));
	}
	barrier("mo.ready");
	for (int round = 0; round < MO_ROUNDS; round++) {
		long lo = nmsg * round / MO_ROUNDS, hi = nmsg * (round + 1) / MO_ROUNDS;

		/* the model, on both ranks */
		for (long j = lo; j < hi; j++) {
			want[j] = mo_model(v, n, msg[j]);
			if (want[j] >= 0 && v[want[j]].once) {
				v[want[j]].alive = false;
				onces++;
			}
			matched += want[j] >= 0;
		}
		if (R == 0) {
			uint8_t *src = kbuf(K_MAL, 8);
			ptl_handle_md_t md = md_new(src, 8, 0, eq, PTL_CT_NONE);

			for (long j = lo; j < hi && !failed; j++) {
				int w[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
				ptl_event_t evs[2];

				snprintf(ctx, sizeof(ctx), "message %ld (bits 0x%llx): entry %ld", j,
					 (unsigned long long)msg[j], want[j]);
				RC(PtlPut(md, 0, 8, PTL_ACK_REQ, rank_proc(1), PT_DATA, msg[j], 0, U(j + 1),
					  (uint64_t)j), PTL_OK);
				if (!collect(eq, T_EV_MS, 2, w, evs, ctx))
					break;
				if (want[j] < 0)
					CHKEV(ctx, &evs[1], .m = F_TYPE | F_UPTR | F_FAIL, .type = PTL_EVENT_ACK,
					      .uptr = U(j + 1), .fail = PTL_NI_DROPPED);
				else
					CHKEV(ctx, &evs[1], .m = ACK_M, .type = PTL_EVENT_ACK, .mlen = 8,
					      .roff = 0, .uptr = U(j + 1),
					      .list = v[want[j]].overflow ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST);
			}
			RC(PtlMDRelease(md), PTL_OK);
			free(src);
		} else {
			long nev = 0;

			for (long j = lo; j < hi; j++)
				nev += want[j] >= 0;
			for (long k = 0; k < nev && !failed; k++) {
				ptl_event_t ev;
				long j;

				snprintf(ctx, sizeof(ctx), "round %d: event %ld of %ld", round, k, nev);
				if (!want_ev(eq, &ev, T_EV_MS, ctx))
					break;
				j = (long)ev.hdr_data;
				if (!CHK(ev.type == PTL_EVENT_PUT && j >= lo && j < hi && want[j] >= 0,
					 "%s: a put of this round that matched", ctx)) {
					dump_ev("got", &ev);
					continue;
				}
				snprintf(ctx, sizeof(ctx), "message %ld (bits 0x%llx): entry %ld", j,
					 (unsigned long long)msg[j], want[j]);
				CHKEV(ctx, &ev, .m = F_TYPE | F_MB | F_MLEN | F_UPTR | F_LIST | F_FAIL,
				      .type = PTL_EVENT_PUT, .mb = msg[j], .mlen = 8, .uptr = U(want[j] + 1),
				      .list = v[want[j]].overflow ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST);
			}
		}
		barrierf("mo.sent%d", round);
		/* rank 1 unlinks a random eighth; the model follows */
		for (long k = 0; k < n / 8; k++) {
			struct mo_ent *e = &v[mo_rnd() % (uint64_t)n];

			if (R == 1 && e->h != 0)
				RC(PtlMEUnlink(e->h), e->alive ? PTL_OK : PTL_ARG_INVALID);
			e->alive = false;
			e->h = 0;
		}
		barrierf("mo.unlinked%d", round);
		if (failed)
			break;
	}
	if (R == 1) {
		no_ev(eq, 50, "every put's event came, no other");
		/* the rest, in random order */
		for (long i = 0; i < n; i++)
			order[i] = i;
		for (long k = n; k > 1; k--) {
			long j = (long)(mo_rnd() % (uint64_t)k), t = order[j];

			order[j] = order[k - 1];
			order[k - 1] = t;
		}
		for (long i = 0; i < n; i++) {
			struct mo_ent *e = &v[order[i]];

			if (e->h != 0)
				RC(PtlMEUnlink(e->h), e->alive ? PTL_OK : PTL_ARG_INVALID);
		}
		RC(PtlPTFree(ni, PT_DATA), PTL_OK);	/* nothing linked on it */
		LOG("%ld messages, %ld matched (%ld use-once entries consumed)", nmsg, matched, onces);
		CHK(matched > nmsg / 2 && onces > 0, "most messages matched");
	}
	barrier("mo.done");
	fini_ni();
	free(v);
	free(msg);
	free(want);
	free(order);
}

/*
 * meinuse: PtlMEUnlink of an entry a message is still arriving into returns
 * PTL_IN_USE (Portals 4.1, PtlMEUnlink: "the match list entry has pending
 * operations and cannot be unlinked"), for a window entry (the runtime's
 * message state, spin_me.busy) and for an ordinary-memory entry (the
 * library's reassembly); once the message has come whole, its event is
 * there and the entry unlinks.  Rank 1 sends the first of the message's
 * three packets by hand, from a UDP socket (what the runtime sees from any
 * sender), then on the same socket a one-packet put to a marker entry: the
 * marker's event says the first packet is in.  It sends the first packet
 * again every 50 ms (a reliable message lives while its packets come), so
 * the message never expires, however loaded the machine; the rest comes
 * once rank 0 has checked.  Before, PtlMEUnlink unlinked the entry and the
 * rest of the message was dropped (me_gone): no event.
 */
#define MIU_LEN (2 * SPIN_MAX_SEG + 100)	/* three packets */

static void miu_send(int fd, const struct sockaddr_in *to, const struct spin_msg_args *a,
		     uint32_t msg_len, uint32_t off, uint32_t seed)
{
	uint8_t b[sizeof(struct spin_hdr) + SPIN_MAX_SEG];
	uint32_t n = msg_len - off < SPIN_MAX_SEG ? msg_len - off : SPIN_MAX_SEG;

	spin_hdr_build((struct spin_hdr *)b, a, msg_len, off);
	for (uint32_t i = 0; i < n; i++)
		b[sizeof(struct spin_hdr) + i] = pat(seed, off + i);
	if (sendto(fd, b, sizeof(struct spin_hdr) + n, 0, (const void *)to, sizeof(*to)) < 0)
		FAIL("sendto: %s", strerror(errno));
}

static void c_meinuse(void)
{
	ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
	char ctx[128], rest[64];
	ptl_event_t ev;

	init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
	if (R == 0) {
		eq = eq_new(64);
		pt_new(0, eq, PT_DATA);
	}
	for (int k = 0; k < 2; k++) {
		snprintf(ctx, sizeof(ctx), "a message arriving into a %s entry", kname[k]);
		snprintf(rest, sizeof(rest), "miu.rest.%d", k);
		if (R == 0) {
			uint8_t *buf = kbuf(k, MIU_LEN), *mark = kbuf(K_MAL, 64);
			void *uptr = (void *)(uintptr_t)(0x6000 + k);
			ptl_handle_me_t h, mh;

			memset(buf, 0xee, MIU_LEN);
			h = me_add(PT_DATA, buf, MIU_LEN, PTL_ME_OP_PUT, 0x600 + k, 0, PTL_CT_NONE,
				   PTL_PRIORITY_LIST, uptr);
			mh = me_add(PT_DATA, mark, 64, PTL_ME_OP_PUT, 0x680 + k, 0, PTL_CT_NONE,
				    PTL_PRIORITY_LIST, NULL);
			barrierf("miu.ready.%d", k);
			if (want_ev(eq, &ev, T_EV_MS, "the marker"))
				CHKEV("the marker", &ev, .m = F_TYPE | F_MB, .type = PTL_EVENT_PUT,
				      .mb = 0x680 + k);
			RC(PtlMEUnlink(h), PTL_IN_USE);
			CHK(strstr(PtlSpinErrmsg(), "still arriving") != NULL, "PtlSpinErrmsg says why: %s",
			    PtlSpinErrmsg());
			RC(PtlMEUnlink(h), PTL_IN_USE);	/* and again: nothing changed */
			touch(rest, 0);
			if (want_ev(eq, &ev, T_EV_MS, ctx)) {
				CHKEV(ctx, &ev, .m = TGT_M & ~(F_HDR | F_INI), .type = PTL_EVENT_PUT,
				      .pt = PT_DATA, .mb = 0x600 + k, .rlen = MIU_LEN, .mlen = MIU_LEN,
				      .roff = 0, .uptr = uptr, .start = buf, .list = PTL_PRIORITY_LIST);
				check_pat(ctx, buf, MIU_LEN, 40 + k);
			}
			RC(PtlMEUnlink(h), PTL_OK);
			RC(PtlMEUnlink(h), PTL_ARG_INVALID);
			RC(PtlMEUnlink(mh), PTL_OK);
			no_ev(eq, 50, ctx);
		} else if (R == 1) {
			ptl_process_t map[2], me;
			ptl_size_t got = 0;
			struct sockaddr_in to = { .sin_family = AF_INET,
						  .sin_port = htons(SPIN_DEFAULT_PORT) };
			const char *jk = getenv("SPIN_JOB_KEY");
			struct spin_msg_args a = {
				.op = SPIN_OP_PUT, .pt_index = PT_DATA, .src_rank = 1, .dst_rank = 0,
				.match_bits = 0x600 + k, .flags = SPIN_F_REL,
				.job_key = jk ? (uint32_t)strtoul(jk, NULL, 0) : 0,
				/* an id of its own, newer than any this rank sent */
				.msg_id = 0x40000000u | (uint32_t)(now_us() & 0xfffff) << 4 | (uint32_t)k,
			}, m = a;
			uint64_t end = now_ms() + 60000;
			int fd = socket(AF_INET, SOCK_DGRAM, 0);

			OK(PtlGetMap(ni, 2, map, &got));
			OK(PtlGetPhysId(ni, &me));
			if (fd < 0)
				DIE("socket: %s", strerror(errno));
			to.sin_addr.s_addr = htonl(map[0].phys.nid);
			a.src_pid = m.src_pid = me.phys.pid;
			m.match_bits = 0x680 + k;
			m.msg_id = a.msg_id + 0x100;
			barrierf("miu.ready.%d", k);
			miu_send(fd, &to, &a, MIU_LEN, 0, 40 + k);
			miu_send(fd, &to, &m, 8, 0, 9);
			while (!exists(rest, 0)) {
				if (now_ms() > end)
					DIE("rank 0 never checked the entry");
				msleep(50);
				miu_send(fd, &to, &a, MIU_LEN, 0, 40 + k);
			}
			miu_send(fd, &to, &a, MIU_LEN, SPIN_MAX_SEG, 40 + k);
			miu_send(fd, &to, &a, MIU_LEN, 2 * SPIN_MAX_SEG, 40 + k);
			close(fd);
		}
		barrierf("miu.done.%d", k);
	}
	fini_ni();
}

/*
 * reply_forged: a reply is checked against its get.  Rank 1 takes its
 * runtime off its interface (nothing there answers rank 0's get), learns
 * the get's message id from rank 0 (its runtime's next id, read before
 * PtlGet) and answers it by hand from a UDP socket: first with a reply of
 * 3000 bytes to a get of 100 (three packets), then with the right one.
 * The long one is dropped (PTL_SR_DROP_COUNT), the get completes with the
 * second: mlength 100, its bytes.  (Before, the long reply completed the
 * get: a REPLY event of mlength 3000 for 100 bytes asked, the wrong
 * bytes.)  Rank 1 attaches its runtime again at the end (PtlNIInit).
 */
#define RF_LEN	100
#define RF_BAD	3000

static void c_reply_forged(void)
{
	uint32_t id = 0;

	if (R == 0) {
		ptl_handle_eq_t eq;
		uint8_t *buf;
		ptl_handle_md_t md;
		ptl_sr_value_t d0 = 0, d1 = 0;
		struct spin_status ss;
		struct spin_rt *rt;
		ptl_event_t ev;

		init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
		eq = eq_new(16);
		buf = kbuf(K_MAL, 4096);
		memset(buf, 0xee, 4096);
		md = md_new(buf, 4096, 0, eq, PTL_CT_NONE);
		barrier("rf.detached");
		if (spin_open(getenv("SPIN_IFACE"), &rt) < 0 || spin_get_status(rt, &ss) < 0)
			DIE("spin_open/status: %s", spin_errmsg());
		id = (uint32_t)ss.cfg.next_msg_id & 0xffffff;
		if (!id)
			id = 1;
		spin_close(rt);
		put_file("rf.id", &id, sizeof(id));
		RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &d0), PTL_OK);
		RC(PtlGet(md, 0, RF_LEN, rank_proc(1), PT_DATA, 0x77, 0, U(0x77)), PTL_OK);
		barrier("rf.asked");
		if (want_ev(eq, &ev, T_EV_MS, "the get's reply"))
			CHKEV("the get's reply", &ev, .m = REPLY_M, .type = PTL_EVENT_REPLY, .mlen = RF_LEN,
			      .roff = 0, .uptr = U(0x77), .fail = PTL_NI_OK);
		check_pat("the right reply's bytes", buf, RF_LEN, 62);
		check_byte("past the get", buf + RF_LEN, 4096 - RF_LEN, 0xee);
		RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &d1), PTL_OK);
		CHK(d1 - d0 >= 3, "the long reply's 3 packets dropped (%llu)", (unsigned long long)(d1 - d0));
		no_ev(eq, 50, "one reply");
		barrier("rf.done");
		RC(PtlMDRelease(md), PTL_OK);
		fini_ni();
	} else if (R == 1) {
		ptl_process_t map[2];
		ptl_size_t got = 0;
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(SPIN_DEFAULT_PORT) };
		const char *jk = getenv("SPIN_JOB_KEY");
		struct spin_msg_args a = {
			.op = SPIN_OP_REPLY, .pt_index = PT_DATA, .src_rank = 1, .dst_rank = 0,
			.match_bits = 0x77, .job_key = jk ? (uint32_t)strtoul(jk, NULL, 0) : 0,
		};
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		/* rank 0's address, then nothing on this interface answers */
		init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
		OK(PtlGetMap(ni, 2, map, &got));
		fini_ni();
		if (spin_detach(getenv("SPIN_IFACE")) < 0)
			DIE("spin_detach: %s", spin_errmsg());
		if (fd < 0)
			DIE("socket: %s", strerror(errno));
		to.sin_addr.s_addr = htonl(map[0].phys.nid);
		barrier("rf.detached");
		barrier("rf.asked");
		get_file("rf.id", &id, sizeof(id));
		a.msg_id = id;
		for (uint32_t off = 0; off < RF_BAD; off += SPIN_MAX_SEG)
			miu_send(fd, &to, &a, RF_BAD, off, 61);
		msleep(20);
		miu_send(fd, &to, &a, RF_LEN, 0, 62);
		close(fd);
		barrier("rf.done");
		init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);	/* the runtime again */
		fini_ni();
	} else {
		barrier("rf.detached");
		barrier("rf.asked");
		barrier("rf.done");
	}
}

/*
 * msgsize_target: a target NI whose desired limits ask for max_msg_size
 * 1000 takes at most 1000 bytes of a message (mlength), as the reference
 * implementation does: rank 0 (spin's limits) puts 3000 bytes into a
 * window entry and an ordinary-memory entry of rank 1 and gets 3000 back.
 * The PUT and GET events, the ACK and the REPLY say 1000, and only 1000
 * bytes move each way.  (Before, the target took all 3000 while its
 * PtlNIInit said 1000.)
 */
#define MT_MAX	1000
#define MT_LEN	3000

static void c_msgsize_target(void)
{
	ptl_event_t ev;
	char ctx[96];

	if (R == 1) {
		ptl_ni_limits_t w;
		ptl_handle_eq_t eq;
		uint8_t *buf[2];

		memset(&w, 0xff, sizeof(w));
		w.max_msg_size = MT_MAX;
		want_lim = &w;
		init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
		want_lim = NULL;
		CHK_EQ(lim.max_msg_size, MT_MAX, "max_msg_size");
		eq = eq_new(64);
		pt_new(0, eq, PT_DATA);
		for (int k = 0; k < 2; k++) {
			buf[k] = kbuf(k, 4096);
			memset(buf[k], 0xee, 4096);
			me_add(PT_DATA, buf[k], 4096, PTL_ME_OP_PUT | PTL_ME_OP_GET, 0x900 + k, 0,
			       PTL_CT_NONE, PTL_PRIORITY_LIST, U(0x900 + k));
		}
		barrier("mt.ready");
		for (int k = 0; k < 2; k++) {
			snprintf(ctx, sizeof(ctx), "a put of %d into a %s entry", MT_LEN, kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = F_TYPE | F_MB | F_RLEN | F_MLEN | F_START, .type = PTL_EVENT_PUT,
				      .mb = 0x900 + k, .rlen = MT_LEN, .mlen = MT_MAX, .start = buf[k]);
			check_pat(ctx, buf[k], MT_MAX, 70 + k);
			check_byte(ctx, buf[k] + MT_MAX, 4096 - MT_MAX, 0xee);
			snprintf(ctx, sizeof(ctx), "a get of %d from a %s entry", MT_LEN, kname[k]);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = F_TYPE | F_MB | F_RLEN | F_MLEN, .type = PTL_EVENT_GET,
				      .mb = 0x900 + k, .rlen = MT_LEN, .mlen = MT_MAX);
		}
		barrier("mt.done");
	} else if (R == 0) {
		ptl_handle_eq_t eq;
		uint8_t *src;
		ptl_handle_md_t md;
		int want[2] = { PTL_EVENT_SEND, PTL_EVENT_ACK };
		ptl_event_t evs[2];

		init_ni(PTL_NI_LOGICAL, PTL_PID_ANY);
		eq = eq_new(64);
		src = kbuf(K_MAL, 8192);
		md = md_new(src, 8192, 0, eq, PTL_CT_NONE);
		barrier("mt.ready");
		for (int k = 0; k < 2; k++) {
			snprintf(ctx, sizeof(ctx), "a put of %d into a %s entry", MT_LEN, kname[k]);
			fill(src, MT_LEN, 70 + k);
			RC(PtlPut(md, 0, MT_LEN, PTL_ACK_REQ, rank_proc(1), PT_DATA, 0x900 + k, 0, U(1), 0),
			   PTL_OK);
			if (collect(eq, T_EV_MS, 2, want, evs, ctx))
				CHKEV(ctx, &evs[1], .m = F_TYPE | F_MLEN | F_FAIL, .type = PTL_EVENT_ACK,
				      .mlen = MT_MAX, .fail = PTL_NI_OK);
			snprintf(ctx, sizeof(ctx), "a get of %d from a %s entry", MT_LEN, kname[k]);
			memset(src + 4096, 0xee, 4096);
			RC(PtlGet(md, 4096, MT_LEN, rank_proc(1), PT_DATA, 0x900 + k, 0, U(2)), PTL_OK);
			if (want_ev(eq, &ev, T_EV_MS, ctx))
				CHKEV(ctx, &ev, .m = F_TYPE | F_MLEN | F_FAIL, .type = PTL_EVENT_REPLY,
				      .mlen = MT_MAX, .fail = PTL_NI_OK);
			check_pat(ctx, src + 4096, MT_MAX, 70 + k);
			check_byte(ctx, src + 4096 + MT_MAX, 4096 - MT_MAX, 0xee);
		}
		barrier("mt.done");
	} else {
		barrier("mt.ready");
		barrier("mt.done");
	}
	if (R < 2)
		fini_ni();
}

static const struct { const char *name; void (*fn)(void); } cases[] = {
	{ "put", c_put }, { "get", c_get }, { "truncate", c_truncate }, { "useonce", c_useonce },
	{ "managelocal", c_managelocal }, { "overflow", c_overflow }, { "flowctl", c_flowctl },
	{ "counters", c_counters }, { "atomic", c_atomic }, { "triggered", c_triggered },
	{ "eventopts", c_eventopts }, { "eqdrop", c_eqdrop }, { "badargs", c_badargs },
	{ "unknown", c_unknown }, { "kill", c_kill }, { "kill2", c_kill2 }, { "phys", c_phys },
	{ "ring", c_ring }, { "spin_pingpong", c_spin_pingpong }, { "spin_hpu", c_spin_hpu },
	{ "ctwake", c_ctwake }, { "bundle", c_bundle }, { "wakeus", c_wakeus }, { "wake", c_wake },
	{ "eqget", c_eqget }, { "twowaiters", c_twowaiters }, { "rel", c_rel },
	{ "rel_gone", c_rel_gone }, { "self", c_self }, { "shmem", c_shmem }, { "iovec", c_iovec }, { "trigme", c_trigme }, { "spin_self", c_spin_self }, { "rel_incast", c_rel_incast },
	{ "bigmap", c_bigmap }, { "ship", c_ship }, { "ship_fail", c_ship_fail },
	{ "ship_peek", c_ship_peek }, { "ship_lease", c_ship_lease },
	{ "ship_traffic", c_ship_traffic },
	{ "ship_off", c_ship_off }, { "ship_serve", c_ship_serve }, { "matchorder", c_matchorder },
	{ "fc_eqfull", c_fc_eqfull }, { "fc_unex", c_fc_unex }, { "fc_unex_small", c_fc_unex_small },
	{ "limits", c_limits }, { "countsearch", c_countsearch }, { "abort", c_abort },
	{ "unexorder", c_unexorder },
	{ "meinuse", c_meinuse },
	{ "reply_forged", c_reply_forged },
	{ "msgsize_target", c_msgsize_target },
	{ "uhrlength", c_uhrlength },
	{ "mproc", c_mproc }, { "pmix", c_pmix }, { "pmix_forged", c_pmix_forged }, { "mpkill", c_mpkill }, { "mpkill2", c_mpkill2 }, { "pidtaken", c_pidtaken },
};

int main(int argc, char **argv)
{
	const char *n = getenv("PTL_TEST_NPROCS");

	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: ptl_test CASE  (env: SPIN_IFACE SPIN_HOSTFILE SPIN_RANK|PMI_RANK|"
			"OMPI_COMM_WORLD_RANK PTL_TEST_DIR PTL_TEST_NPROCS)\ncases:");
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			fprintf(stderr, " %s", cases[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	CASE = argv[1];
	R = env_rank();
	N = n ? atoi(n) : 2;
	if (getenv("PTL_TEST_DIR"))
		DIR_ = getenv("PTL_TEST_DIR");
	if (R < 0 || N < 1)
		DIE("no rank (SPIN_RANK, PMI_RANK or OMPI_COMM_WORLD_RANK) or PTL_TEST_NPROCS");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].name, CASE)) {
			cases[i].fn();
			if (nlinks)
				LOG("note: %d LINK events skipped", nlinks);
			LOG("%s", failed ? "FAILED" : "ok");
			return failed ? 1 : 0;
		}
	fprintf(stderr, "ptl_test: unknown case '%s'\n", CASE);
	return 2;
}
