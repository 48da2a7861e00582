// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/shipbench - shipped handlers (docs/shipping.md), measured by rank 0
 * against rank 1 in one run (bench/ship.sh starts both):
 *
 *   ship_first_ms   PtlSpinHandlerShip of an object rank 1 does not hold
 *                   (transfer, checks, verifier, install) and the first
 *                   message's ack (the handler ran): small (ship_v1) and
 *                   large (ship_big, ~8000 more instructions) handlers
 *   ship_hit_ms     the same object shipped to a second entry (cache hit)
 *   rtt_shipped_us  8-byte put with an ack to the shipped handler, p50
 *   rtt_local_us    the same to the same object loaded by rank 1 itself
 *                   (PtlSpinHandlerLoad, an entry with the same options):
 *                   the baseline of the per-invocation cost
 *   rate_shipped / rate_local   8-byte puts per second into each (stream
 *                   of STREAM puts, until rank 1 has them all)
 *   am_rtt_us       an active message: an ifunc put naming the hash, whose
 *                   handler runs on rank 1's packet path and whose ack
 *                   comes back, p50
 *   udp_rtt_us      the same round trip done by a host process: a UDP
 *                   datagram to a thread of rank 1 that answers it, p50
 *
 *   shipbench DIR TOP REPS   (SPIN_RANK 0 or 1, SPIN_HOSTFILE, SPIN_IFACE)
 * Rank 0 prints "rep,metric,value" lines.  Rank 1 needs SPIN_SHIP_ALLOW=0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <spin/portals4.h>

#define UDP_PORT	9977
#define LOCAL_PT	5
#define PP		2000	/* round trips per measurement */

static ptl_handle_ni_t ni;
static const char *dir, *top;

#define DIE(...) do { fprintf(stderr, "shipbench: " __VA_ARGS__); fprintf(stderr, " (%s)\n", \
			  PtlSpinErrmsg()); exit(1); } while (0)

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char p[512];
	FILE *f;
	uint8_t *b;
	long n;

	snprintf(p, sizeof(p), "%s/selftests/progs/%s", top, name);
	f = fopen(p, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
	    !(b = malloc(n)) || fread(b, 1, n, f) != (size_t)n)
		DIE("cannot read %s", p);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void flag(const char *name)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f)
		fclose(f);
}

static int flagged(const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !access(p, F_OK);
}

static void *udp_echo(void *arg)
{
	int s = *(int *)arg;
	char b[64];
	struct sockaddr_in from;

	for (;;) {
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(s, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);

		if (n > 0)
			sendto(s, b, n, 0, (struct sockaddr *)&from, fl);
	}
	return NULL;
}

static void target(void)
{
	char path[512];
	ptl_handle_handler_t h;
	ptl_handle_hpu_mem_t hm;
	ptl_handle_ct_t ct;
	ptl_handle_me_t meh;
	ptl_pt_index_t pt;
	ptl_me_t me = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(UDP_PORT) };
	pthread_t th;
	void *host;
	int s;

	snprintf(path, sizeof(path), "%s/selftests/progs/ship_v1.bpf.o", top);
	if (PtlSpinHandlerLoad(ni, path, &h) != PTL_OK || PtlHPUAllocMem(32, ni, &hm) != PTL_OK ||
	    PtlCTAlloc(ni, &ct) != PTL_OK || PtlSpinHostAlloc(ni, 4096, &host) != PTL_OK ||
	    PtlPTAlloc(ni, 0, PTL_EQ_NONE, LOCAL_PT, &pt) != PTL_OK)
		DIE("local handler set-up");
	/* the options a shipped entry gets (lib/ptl_ship.c, me_make) */
	me.start = host;
	me.length = 4096;
	me.handler_host_mem = host;
	me.handler_host_mem_length = 4096;
	me.ct_handle = PTL_CT_NONE;
	me.match_id.rank = 0;
	me.match_bits = 1;
	me.options = PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE |
		     PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_COMM_DISABLE;
	me.handlers = h;
	me.hpu_memory = hm;
	if (PtlMEAppend(ni, LOCAL_PT, &me, PTL_PRIORITY_LIST, NULL, &meh) != PTL_OK)
		DIE("local entry");
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)))
		DIE("udp socket: %s", strerror(errno));
	pthread_create(&th, NULL, udp_echo, &s);
	flag("target.up");
	for (int i = 0; i < 6000 && !flagged("done"); i++)
		usleep(100000);
}

/* one 8-byte put with an ack: its round trip in us */
static double rtt(ptl_handle_md_t md, ptl_handle_eq_t eq, ptl_pt_index_t pt, ptl_match_bits_t bits)
{
	ptl_process_t t = { .rank = 1 };
	ptl_event_t ev;
	double t0 = now_us();

	if (PtlPut(md, 0, 8, PTL_ACK_REQ, t, pt, bits, 0, NULL, 0) != PTL_OK)
		DIE("put");
	for (;;) {
		if (PtlEQWait(eq, &ev) != PTL_OK)
			DIE("EQWait");
		if (ev.type == PTL_EVENT_ACK) {
			if (ev.ni_fail_type != PTL_NI_OK)
				DIE("ack failed: %d", ev.ni_fail_type);
			return now_us() - t0;
		}
	}
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double p50(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmpd);
	return v[n / 2];
}

static double rate(ptl_handle_md_t md, ptl_handle_ct_t ct, ptl_pt_index_t pt, ptl_match_bits_t bits,
		   int n)
{
	ptl_process_t t = { .rank = 1 };
	ptl_ct_event_t c0, c;
	double t0;

	PtlCTGet(ct, &c0);
	t0 = now_us();
	for (int i = 0; i < n; i++)
		if (PtlPut(md, 0, 8, PTL_NO_ACK_REQ, t, pt, bits, 0, NULL, 0) != PTL_OK)
			DIE("put");
	if (PtlCTWait(ct, c0.success + n, &c) != PTL_OK || c.failure)
		DIE("stream");
	return n / ((now_us() - t0) / 1e6);
}

static void sender(int reps)
{
	ptl_process_t t = { .rank = 1 };
	ptl_spin_ship_result_t r;
	size_t ls, lb;
	uint8_t *small = slurp("ship_v1.bpf.o", &ls), *big = slurp("ship_big.bpf.o", &lb);
	ptl_handle_eq_t eq;
	ptl_handle_ct_t ct;
	ptl_handle_md_t md, smd;
	uint64_t word = 42;
	static double v[PP];
	int stream = getenv("STREAM") ? atoi(getenv("STREAM")) : 20000;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(UDP_PORT) };
	int s;
	ptl_md_t d = { .start = &word, .length = 8, .ct_handle = PTL_CT_NONE,
		       .options = PTL_MD_EVENT_SEND_DISABLE };

	if (PtlEQAlloc(ni, 256, &eq) != PTL_OK || PtlCTAlloc(ni, &ct) != PTL_OK)
		DIE("eq");
	d.eq_handle = eq;
	if (PtlMDBind(ni, &d, &md) != PTL_OK)
		DIE("md");
	d.eq_handle = PTL_EQ_NONE;
	d.ct_handle = ct;
	d.options = PTL_MD_EVENT_CT_SEND;
	if (PtlMDBind(ni, &d, &smd) != PTL_OK)
		DIE("md");
	s = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, "10.78.1.2", &a.sin_addr);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		DIE("udp: %s", strerror(errno));
	while (!flagged("target.up"))
		usleep(10000);
	for (int rep = 0; rep < reps; rep++) {
		for (int k = 0; k < 2; k++) {
			const char *name = k ? "large" : "small";
			uint8_t *o = k ? big : small;
			size_t l = k ? lb : ls;
			double t0 = now_us(), t1, t2;

			if (PtlSpinHandlerShip(ni, o, l, &t, 1, 1, 32, 0, &r) != PTL_OK)
				DIE("ship %s: %s", name, r.reason);
			t1 = now_us();
			rtt(md, eq, PTL_SPIN_SHIP_PT, PtlSpinShipBits(ni, 1));
			t2 = now_us();
			printf("%d,ship_call_ms_%s,%.3f\n", rep, name, (t1 - t0) / 1e3);
			printf("%d,ship_first_ms_%s,%.3f\n", rep, name, (t2 - t0) / 1e3);
			printf("%d,insns_%s,%u\n", rep, name, r.insns);
			printf("%d,object_kib_%s,%.1f\n", rep, name, l / 1024.0);
			t0 = now_us();
			if (PtlSpinHandlerShip(ni, o, l, &t, 1, 2, 32, 0, &r) != PTL_OK || !r.cache_hit)
				DIE("ship again: %s", r.reason);
			printf("%d,ship_hit_ms_%s,%.3f\n", rep, name, (now_us() - t0) / 1e3);
			if (PtlSpinHandlerUnship(ni, &t, 1, 2, &r) != PTL_OK ||
			    PtlSpinHandlerUnship(ni, &t, 1, 1, &r) != PTL_OK)
				DIE("unship");
		}
		if (PtlSpinHandlerShip(ni, small, ls, &t, 1, 1, 32, 0, &r) != PTL_OK)
			DIE("ship: %s", r.reason);
		printf("%d,placement_native,%d\n", rep, r.placement == PTL_SPIN_PLACE_NATIVE);
		/* shipped and local alternate in blocks: drift hits both */
		for (int j = 0; j < 2; j++) {
			int k = j ^ (rep & 1);	/* which goes first alternates */

			for (int i = 0; i < PP; i++)
				v[i] = k ? rtt(md, eq, LOCAL_PT, 1) : rtt(md, eq, PTL_SPIN_SHIP_PT,
									  PtlSpinShipBits(ni, 1));
			printf("%d,rtt_%s_us,%.2f\n", rep, k ? "local" : "shipped", p50(v, PP));
		}
		for (int j = 0; j < 2; j++) {
			int k = j ^ (rep & 1);

			printf("%d,rate_%s,%.0f\n", rep, k ? "local" : "shipped",
			       k ? rate(smd, ct, LOCAL_PT, 1, stream) :
				   rate(smd, ct, PTL_SPIN_SHIP_PT, PtlSpinShipBits(ni, 1), stream));
		}
		for (int i = 0; i < PP; i++)
			v[i] = rtt(md, eq, PTL_SPIN_SHIP_PT, PtlSpinIfuncBits(r.hash));
		printf("%d,am_rtt_us,%.2f\n", rep, p50(v, PP));
		for (int i = 0; i < PP; i++) {
			char b[8] = "ping";
			double t0 = now_us();

			if (send(s, b, 8, 0) != 8 || recv(s, b, sizeof(b), 0) != 8)
				DIE("udp round trip: %s", strerror(errno));
			v[i] = now_us() - t0;
		}
		printf("%d,udp_rtt_us,%.2f\n", rep, p50(v, PP));
		if (PtlSpinHandlerUnship(ni, &t, 1, 1, &r) != PTL_OK)
			DIE("unship");
		fflush(stdout);
	}
	flag("done");
}

int main(int argc, char **argv)
{
	const char *rk = getenv("SPIN_RANK");

	if (argc != 4 || !rk) {
		fprintf(stderr, "usage: SPIN_RANK=0|1 shipbench DIR TOP REPS\n");
		return 2;
	}
	dir = argv[1];
	top = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (PtlInit() != PTL_OK ||
	    PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL,
		      &ni) != PTL_OK)
		DIE("PtlNIInit");
	if (atoi(rk) == 1)
		target();
	else
		sender(atoi(argv[3]));
	PtlNIFini(ni);
	PtlFini();
	return 0;
}
