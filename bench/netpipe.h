/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bench/netpipe.h - the transport-independent part of the NetPIPE-style
 * benchmark (bench/netpipe.c: UDP and AF_XDP; bench/netpipe_ptl.c: spin
 * Portals).  Included by both; everything is static.
 *
 * Two processes, rank 0 (the measuring side) and rank 1 (the echo side),
 * one per network namespace.  Besides the measured transport they share a
 * TCP control connection (rank 1 listens on the control port) that carries
 * only untimed commands: rank 0 says what comes next ("ping-pong N rounds of
 * S bytes", "stream K messages of S bytes", "resync"), rank 1 does it and
 * reports how many messages it saw.  Per size:
 *
 *   ping-pong  rank 0 sends S bytes, rank 1 sends them back as soon as the
 *              whole message is there; latency = half the round trip,
 *              p50/mean/min/p99 over the rounds; batches of rounds until
 *              --pp-count rounds or --pp-time seconds
 *   stream     rank 0 sends K messages of S bytes back to back, rank 1
 *              waits for all K, then sends an 8-byte "done"; bandwidth =
 *              K * S / (first send .. done received), MB = 10^6 bytes;
 *              median (and max) over iterations until --st-time seconds
 *              (at least --st-min-iters, at most --st-iters)
 *   rate       (--rate) the stream of --rate-count 8-byte messages:
 *              messages per second, median over --rate-iters
 *
 * Lost messages (UDP has no retransmission, neither has a Portals put
 * without acknowledgement) show up as a timeout: the size is marked failed
 * in the CSV, both sides drain what is still in flight and go on; rank 0
 * then exits with status 3 (1: an error).
 *
 * Job: SPIN_HOSTFILE (two IPv4 addresses, rank 0 first) and SPIN_RANK, as
 * for every spin program (spin/spin.h, spin_job_load).
 */
#ifndef NETPIPE_H
#define NETPIPE_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <spin/spin.h>

/* ------------------------------------------------------------ transport -- */

struct np_transport {
	const char *name;
	void *ctx;
	/* Buffers for messages up to max bytes: *sbuf what rank 0 sends, *rbuf
	 * where messages arrive (rank 1 echoes from it). */
	int (*buffers)(void *ctx, size_t max, void **sbuf, void **rbuf);
	/* Send one message of len bytes from buf (sbuf or rbuf); 0 or < 0. */
	int (*send)(void *ctx, const void *buf, size_t len);
	/* Wait for n whole messages of len bytes (all arriving at rbuf);
	 * returns how many came before timeout_ms passed without one. */
	uint64_t (*recv)(void *ctx, size_t len, uint64_t n, int timeout_ms);
	/* After a failure: let late packets arrive, forget them. */
	void (*resync)(void *ctx);
	/* One line of transport statistics (may be NULL). */
	void (*report)(void *ctx, FILE *f);
};

/* --------------------------------------------------------------- options -- */

struct np_opts {
	const char *label;	/* transport label in the CSV */
	const char *csv, *rate_csv;
	size_t min_size, max_size;
	int perturb;		/* also S-p and S+p (NetPIPE's +-3) */
	uint64_t pp_count;	/* max measured round trips per size */
	double pp_time;		/* max seconds of ping-pong per size */
	uint64_t warmup;	/* unmeasured round trips per size */
	size_t st_bytes;	/* bytes per stream iteration (K = st_bytes / S) */
	uint64_t st_kmin, st_kmax;
	double st_time;		/* max seconds of streaming per size */
	int st_iters, st_min_iters;
	int rate;		/* 1: the 8-byte message rate too */
	uint64_t rate_count;
	int rate_iters;
	int timeout_ms;		/* no progress for this long: lost */
	uint64_t budget;	/* max messages per phase of a multi-packet size */
	int settle_ms;		/* pause before each phase of a multi-packet size */
	size_t single;		/* largest single-packet message (spin: SPIN_MAX_SEG) */
	uint16_t ctrl_port;
	int verbose;
	/* from the job */
	uint32_t rank;
	struct in_addr my_ip, peer_ip;
};

static struct np_opts np_o = {
	.min_size = 8, .max_size = 4u << 20, .perturb = 0,
	.pp_count = 10000, .pp_time = 0.25, .warmup = 20,
	.st_bytes = 8u << 20, .st_kmin = 2, .st_kmax = 512, .st_time = 0.3,
	.st_iters = 30, .st_min_iters = 3,
	.rate = 0, .rate_count = 100000, .rate_iters = 5,
	.timeout_ms = 1000, .ctrl_port = 7790,
	.budget = 1000000, .settle_ms = 0, .single = SPIN_MAX_SEG,
};

static void np_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "netpipe[%u]: ", np_o.rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void np_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "netpipe[%u]: ", np_o.rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double np_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t np_parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k': case 'K': v *= 1024; end++; break;
	case 'm': case 'M': v *= 1024 * 1024; end++; break;
	}
	if (*end || v < 0)
		np_die("bad size '%s'", s);
	return (size_t)v;
}

/* Common options; extra (transport) options go to tr_opt(). */
enum {
	O_LABEL = 1000, O_CSV, O_RATE_CSV, O_MIN, O_MAX, O_PERTURB, O_PPC, O_PPT, O_WARM,
	O_STB, O_STKMAX, O_STT, O_STI, O_RATE, O_RATEC, O_RATEI, O_TMO, O_CPORT, O_VERB,
	O_BUDGET, O_SETTLE,
	O_TR_BASE = 2000,
};

static const struct option np_common_opts[] = {
	{ "label", required_argument, 0, O_LABEL },
	{ "csv", required_argument, 0, O_CSV },
	{ "rate-csv", required_argument, 0, O_RATE_CSV },
	{ "min", required_argument, 0, O_MIN },
	{ "max", required_argument, 0, O_MAX },
	{ "perturb", required_argument, 0, O_PERTURB },
	{ "pp-count", required_argument, 0, O_PPC },
	{ "pp-time", required_argument, 0, O_PPT },
	{ "warmup", required_argument, 0, O_WARM },
	{ "st-bytes", required_argument, 0, O_STB },
	{ "st-kmax", required_argument, 0, O_STKMAX },
	{ "st-time", required_argument, 0, O_STT },
	{ "st-iters", required_argument, 0, O_STI },
	{ "rate", no_argument, 0, O_RATE },
	{ "rate-count", required_argument, 0, O_RATEC },
	{ "rate-iters", required_argument, 0, O_RATEI },
	{ "timeout-ms", required_argument, 0, O_TMO },
	{ "ctrl-port", required_argument, 0, O_CPORT },
	{ "verbose", no_argument, 0, O_VERB },
	{ "budget", required_argument, 0, O_BUDGET },
	{ "settle-ms", required_argument, 0, O_SETTLE },
	{ "help", no_argument, 0, 'h' },
};

#define NP_COMMON_HELP \
"common options (rank 0 decides; rank 1 only needs the transport options):\n" \
"  --label L          transport name in the CSV (default: the transport's)\n" \
"  --csv F            append one line per size (rank 0)\n" \
"  --rate-csv F       append the 8-byte message rate (with --rate)\n" \
"  --min S --max S    sizes S..max in powers of 2 (8, 4m)   --perturb P  also S-P, S+P\n" \
"  --pp-count N --pp-time T   ping-pong rounds per size: at most N, about T s (10000, 0.25)\n" \
"  --warmup N         unmeasured round trips per size (20)\n" \
"  --st-bytes B --st-kmax K   stream: K = clamp(B / S, 2, K) messages (8m, 512)\n" \
"  --st-time T --st-iters N   stream iterations: about T s, 3..N (0.3, 30)\n" \
"  --rate --rate-count N --rate-iters R   8-byte rate: R streams of N (100000, 5)\n" \
"  --timeout-ms T     no message for T ms: lost (1000)\n" \
"  --budget N --settle-ms T   sizes > 1376 (more than one spin packet): at most N\n" \
"                     messages per phase (ping-pong, stream) and T ms of quiet before\n" \
"                     each phase (1000000, 0)\n" \
"  --ctrl-port P      TCP control port on rank 1 (7790)\n" \
"environment: SPIN_HOSTFILE (rank 0's IP, then rank 1's), SPIN_RANK\n"

/* Parse argv; tr_opt(code, optarg) handles codes >= O_TR_BASE from tr_opts. */
static void np_parse(int argc, char **argv, const struct option *tr_opts,
		     void (*tr_opt)(int code, const char *arg), const char *usage)
{
	struct option all[64];
	int n = 0, c;

	for (size_t i = 0; i < sizeof(np_common_opts) / sizeof(np_common_opts[0]); i++)
		all[n++] = np_common_opts[i];
	for (int i = 0; tr_opts && tr_opts[i].name; i++)
		all[n++] = tr_opts[i];
	memset(&all[n], 0, sizeof(all[n]));
	while ((c = getopt_long(argc, argv, "h", all, NULL)) != -1) {
		switch (c) {
		case O_LABEL: np_o.label = optarg; break;
		case O_CSV: np_o.csv = optarg; break;
		case O_RATE_CSV: np_o.rate_csv = optarg; break;
		case O_MIN: np_o.min_size = np_parse_size(optarg); break;
		case O_MAX: np_o.max_size = np_parse_size(optarg); break;
		case O_PERTURB: np_o.perturb = atoi(optarg); break;
		case O_PPC: np_o.pp_count = strtoull(optarg, NULL, 0); break;
		case O_PPT: np_o.pp_time = atof(optarg); break;
		case O_WARM: np_o.warmup = strtoull(optarg, NULL, 0); break;
		case O_STB: np_o.st_bytes = np_parse_size(optarg); break;
		case O_STKMAX: np_o.st_kmax = strtoull(optarg, NULL, 0); break;
		case O_STT: np_o.st_time = atof(optarg); break;
		case O_STI: np_o.st_iters = atoi(optarg); break;
		case O_RATE: np_o.rate = 1; break;
		case O_RATEC: np_o.rate_count = strtoull(optarg, NULL, 0); break;
		case O_RATEI: np_o.rate_iters = atoi(optarg); break;
		case O_TMO: np_o.timeout_ms = atoi(optarg); break;
		case O_CPORT: np_o.ctrl_port = (uint16_t)atoi(optarg); break;
		case O_VERB: np_o.verbose = 1; break;
		case O_BUDGET: np_o.budget = strtoull(optarg, NULL, 0); break;
		case O_SETTLE: np_o.settle_ms = atoi(optarg); break;
		case 'h':
			fputs(usage, stdout);
			fputs(NP_COMMON_HELP, stdout);
			exit(0);
		default:
			if (c >= O_TR_BASE && tr_opt) {
				tr_opt(c, optarg);
				break;
			}
			fputs(usage, stderr);
			exit(2);
		}
	}
	if (np_o.min_size < 1 || np_o.max_size < np_o.min_size)
		np_die("bad size range");
	if (np_o.st_iters < np_o.st_min_iters)
		np_o.st_min_iters = np_o.st_iters;
}

/* The job: rank and the two addresses (hostfile lines: rank 0, rank 1). */
static void np_job(void)
{
	struct spin_job j;
	int err = spin_job_load(&j, NULL);

	if (err)
		np_die("job: %s", spin_errmsg());
	if (j.size != 2 || j.nhosts != 2)
		np_die("job: need exactly 2 ranks (SPIN_HOSTFILE with 2 hosts), have %u", j.size);
	np_o.rank = j.rank;
	np_o.my_ip = j.hosts[j.rank].ip;
	np_o.peer_ip = j.hosts[1 - j.rank].ip;
	spin_job_free(&j);
}

/* --------------------------------------------------------- control link -- */

enum { NP_PP = 1, NP_ST, NP_RESYNC, NP_QUIT, NP_HELLO };

struct np_cmd {
	uint32_t op, pad;
	uint64_t size, n;
};

struct np_rep {
	int64_t status;		/* 0 ok, < 0 failed */
	uint64_t count;		/* messages seen */
};

static int np_ctrl = -1;

static void np_xfer(int write_it, void *p, size_t len)
{
	char *c = p;

	while (len) {
		ssize_t r = write_it ? write(np_ctrl, c, len) : read(np_ctrl, c, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			np_die("control connection: %s", r ? strerror(errno) : "closed by the peer");
		c += r;
		len -= (size_t)r;
	}
}

static void np_ctrl_open(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(np_o.ctrl_port) };
	int one = 1, fd;

	if (np_o.rank == 1) {
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		sa.sin_addr = np_o.my_ip;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1))
			np_die("control: listen on port %u: %s", np_o.ctrl_port, strerror(errno));
		fd = accept(l, NULL, NULL);
		if (fd < 0)
			np_die("control: accept: %s", strerror(errno));
		close(l);
	} else {
		double t0 = np_now();

		sa.sin_addr = np_o.peer_ip;
		for (;;) {
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
				break;
			if (fd >= 0)
				close(fd);
			if (np_now() - t0 > 20)
				np_die("control: cannot connect to %s:%u", inet_ntoa(np_o.peer_ip),
				       np_o.ctrl_port);
			usleep(20000);
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	np_ctrl = fd;
}

static struct np_rep np_call(uint32_t op, uint64_t size, uint64_t n)
{
	struct np_cmd c = { .op = op, .size = size, .n = n };
	struct np_rep r;

	np_xfer(1, &c, sizeof(c));
	np_xfer(0, &r, sizeof(r));
	return r;
}

/* ---------------------------------------------------------------- stats -- */

static int np_cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double np_pct(double *v, size_t n, double p)	/* v sorted */
{
	size_t i;

	if (!n)
		return NAN;
	i = (size_t)ceil(p * (double)n) - 1;
	if (i >= n)
		i = n - 1;
	return v[i];
}

static double np_median(double *v, size_t n)		/* sorts v */
{
	qsort(v, n, sizeof(*v), np_cmp_d);
	if (!n)
		return NAN;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --------------------------------------------------------------- rank 1 -- */

static void np_serve(struct np_transport *t, void *sbuf, void *rbuf)
{
	(void)sbuf;
	for (;;) {
		struct np_cmd c;
		struct np_rep r = { 0, 0 };

		np_xfer(0, &c, sizeof(c));
		switch (c.op) {
		case NP_HELLO:
			break;
		case NP_PP:
			/* reply first: rank 0 starts sending once we said yes */
			np_xfer(1, &r, sizeof(r));
			for (r.count = 0; r.count < c.n; r.count++) {
				if (t->recv(t->ctx, c.size, 1, np_o.timeout_ms) != 1) {
					r.status = -1;
					break;
				}
				if (t->send(t->ctx, rbuf, c.size)) {
					r.status = -2;
					break;
				}
			}
			np_xfer(1, &r, sizeof(r));
			continue;
		case NP_ST:
			np_xfer(1, &r, sizeof(r));
			r.count = t->recv(t->ctx, c.size, c.n, np_o.timeout_ms);
			if (r.count == c.n) {
				if (t->send(t->ctx, rbuf, 8))
					r.status = -2;
			} else {
				r.status = -1;
			}
			np_xfer(1, &r, sizeof(r));
			continue;
		case NP_RESYNC:
			t->resync(t->ctx);
			break;
		case NP_QUIT:
			np_xfer(1, &r, sizeof(r));
			if (t->report)
				t->report(t->ctx, stderr);
			return;
		default:
			np_die("control: unknown command %u", c.op);
		}
		np_xfer(1, &r, sizeof(r));
	}
}

/* --------------------------------------------------------------- rank 0 -- */

static void np_fill(uint8_t *b, size_t len, size_t seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 9));
}

static int np_failed;

static void np_resync(struct np_transport *t)
{
	t->resync(t->ctx);
	np_call(NP_RESYNC, 0, 0);
}

/* n round trips of len bytes; half round trips in us appended to lat[] */
static int np_pingpong(struct np_transport *t, void *sbuf, size_t len, uint64_t n,
		       double *lat, size_t *nlat)
{
	struct np_rep r = np_call(NP_PP, len, n);
	uint64_t i;

	for (i = 0; i < n; i++) {
		double t0 = np_now(), t1;

		if (t->send(t->ctx, sbuf, len))
			break;
		if (t->recv(t->ctx, len, 1, np_o.timeout_ms) != 1)
			break;
		t1 = np_now();
		if (lat)
			lat[(*nlat)++] = (t1 - t0) * 1e6 / 2;
	}
	np_xfer(0, &r, sizeof(r));
	if (i < n || r.status) {
		np_log("%s: ping-pong of %zu bytes failed after %llu of %llu rounds (peer: %lld, "
		       "%llu)", t->name, len, (unsigned long long)i, (unsigned long long)n,
		       (long long)r.status, (unsigned long long)r.count);
		np_resync(t);
		return -1;
	}
	return 0;
}

/* One stream of k messages of len bytes; seconds or < 0 */
static double np_stream(struct np_transport *t, void *sbuf, size_t len, uint64_t k)
{
	struct np_rep r = np_call(NP_ST, len, k);
	double t0 = np_now(), t1;
	uint64_t i, got;

	for (i = 0; i < k; i++)
		if (t->send(t->ctx, sbuf, len))
			break;
	got = t->recv(t->ctx, 8, 1, np_o.timeout_ms + 500);
	t1 = np_now();
	np_xfer(0, &r, sizeof(r));
	if (i < k || got != 1 || r.status) {
		np_log("%s: stream of %llu x %zu bytes failed: sent %llu, peer got %llu (status "
		       "%lld)", t->name, (unsigned long long)k, len, (unsigned long long)i,
		       (unsigned long long)r.count, (long long)r.status);
		np_resync(t);
		return -1;
	}
	return t1 - t0;
}

static void np_measure_size(struct np_transport *t, uint8_t *sbuf, uint8_t *rbuf, size_t len,
			    FILE *csv)
{
	size_t cap = (size_t)np_o.pp_count, nlat = 0;
	double *lat = malloc(cap * sizeof(double)), *bw, est, tstart;
	uint64_t k, batch;
	int fail = 0, iters = 0;

	if (!lat)
		np_die("out of memory");
	if (len > np_o.single) {
		/* the whole phase within the budget, warm-up included */
		if (cap + np_o.warmup > np_o.budget)
			cap = np_o.budget > np_o.warmup + 10 ? np_o.budget - np_o.warmup : 10;
		usleep((useconds_t)np_o.settle_ms * 1000);
	}
	np_fill(sbuf, len, len);
	memset(rbuf, 0, len);
	/* warm up, then check that the echo is the message */
	if (np_pingpong(t, sbuf, len, np_o.warmup ? np_o.warmup : 1, NULL, NULL))
		fail++;
	else if (memcmp(sbuf, rbuf, len))
		np_die("%s: the echo of a %zu-byte message differs from it", t->name, len);
	/* ping-pong: batches of about 0.05 s until the count or time cap */
	tstart = np_now();
	batch = 10;
	while (nlat < cap && np_now() - tstart < np_o.pp_time) {
		double b0 = np_now();

		if (batch > cap - nlat)
			batch = cap - nlat;
		if (np_pingpong(t, sbuf, len, batch, lat, &nlat) && ++fail > 3)
			break;
		est = (np_now() - b0) / (double)batch;
		batch = (uint64_t)(0.05 / (est > 0 ? est : 1e-6));
		if (batch < 1)
			batch = 1;
		if (batch > 5000)
			batch = 5000;
	}
	qsort(lat, nlat, sizeof(*lat), np_cmp_d);
	double sum = 0;
	for (size_t i = 0; i < nlat; i++)
		sum += lat[i];
	double p50 = np_pct(lat, nlat, 0.5), mean = nlat ? sum / (double)nlat : NAN;
	double p99 = np_pct(lat, nlat, 0.99), mn = nlat ? lat[0] : NAN;

	/* stream */
	k = np_o.st_bytes / len;
	if (k < np_o.st_kmin)
		k = np_o.st_kmin;
	if (k > np_o.st_kmax)
		k = np_o.st_kmax;
	int max_iters = np_o.st_iters;

	if (len > np_o.single) {
		if (k > np_o.budget)
			k = np_o.budget;
		if ((uint64_t)max_iters * k > np_o.budget)
			max_iters = (int)(np_o.budget / k);
		usleep((useconds_t)np_o.settle_ms * 1000);
	}
	bw = calloc((size_t)np_o.st_iters, sizeof(double));
	tstart = np_now();
	for (int it = 0; it < max_iters; it++) {
		double s;

		if (it >= np_o.st_min_iters && np_now() - tstart > np_o.st_time)
			break;
		s = np_stream(t, sbuf, len, k);
		if (s < 0) {
			if (++fail > 3)
				break;
			continue;
		}
		bw[iters++] = (double)k * (double)len / s / 1e6;
	}
	double bmed = np_median(bw, (size_t)iters), bmax = iters ? bw[iters - 1] : NAN;

	printf("%-8s %8zu  lat p50 %9.2f us  mean %9.2f us  bw %9.1f MB/s (max %9.1f)  "
	       "pp %8.1f MB/s  [%zu rounds, %d x %llu msgs%s]\n",
	       np_o.label, len, p50, mean, bmed, bmax, len / p50, nlat, iters,
	       (unsigned long long)k, fail ? ", FAILURES" : "");
	fflush(stdout);
	if (csv) {
		fprintf(csv, "%s,%zu,%.3f,%.3f,%.1f,%.3f,%.3f,%.1f,%.1f,%zu,%llu,%d,%d\n",
			np_o.label, len, p50, mean, bmed, mn, p99, len / p50, bmax, nlat,
			(unsigned long long)k, iters, fail);
		fflush(csv);
	}
	np_failed += fail;
	free(lat);
	free(bw);
}

static void np_measure_rate(struct np_transport *t, uint8_t *sbuf)
{
	double *v = calloc((size_t)np_o.rate_iters, sizeof(double));
	int n = 0, fail = 0;
	FILE *f = NULL;

	np_fill(sbuf, 8, 8);
	np_stream(t, sbuf, 8, np_o.rate_count / 10 + 1);	/* warm-up */
	for (int i = 0; i < np_o.rate_iters; i++) {
		double s = np_stream(t, sbuf, 8, np_o.rate_count);

		if (s < 0) {
			fail++;
			continue;
		}
		v[n++] = (double)np_o.rate_count / s;
	}
	double med = np_median(v, (size_t)n), mx = n ? v[n - 1] : NAN, mn = n ? v[0] : NAN;

	printf("%-8s rate of 8-byte messages: %.3f M msgs/s median (min %.3f, max %.3f) over %d "
	       "streams of %llu%s\n", np_o.label, med / 1e6, mn / 1e6, mx / 1e6, n,
	       (unsigned long long)np_o.rate_count, fail ? ", FAILURES" : "");
	if (np_o.rate_csv && (f = fopen(np_o.rate_csv, "a"))) {
		if (ftell(f) == 0)
			fprintf(f, "transport,size,msgs,streams,Mmsgs_per_s,Mmsgs_per_s_min,"
				"Mmsgs_per_s_max,failed\n");
		fprintf(f, "%s,8,%llu,%d,%.4f,%.4f,%.4f,%d\n", np_o.label,
			(unsigned long long)np_o.rate_count, n, med / 1e6, mn / 1e6, mx / 1e6, fail);
		fclose(f);
	}
	np_failed += fail;
	free(v);
}

static void np_size_list(size_t *list, int *n)
{
	*n = 0;
	for (size_t s = np_o.min_size; s <= np_o.max_size; s *= 2) {
		if (np_o.perturb && s > (size_t)np_o.perturb)
			list[(*n)++] = s - (size_t)np_o.perturb;
		list[(*n)++] = s;
		if (np_o.perturb && s + (size_t)np_o.perturb <= np_o.max_size)
			list[(*n)++] = s + (size_t)np_o.perturb;
	}
}

/* Run the benchmark over t; returns the exit status. */
static int np_run(struct np_transport *t)
{
	void *sbuf, *rbuf;
	FILE *csv = NULL;

	if (!np_o.label)
		np_o.label = t->name;
	signal(SIGPIPE, SIG_IGN);
	/* room for max_size plus the perturbation */
	if (t->buffers(t->ctx, np_o.max_size + (size_t)np_o.perturb, &sbuf, &rbuf))
		np_die("%s: cannot set up buffers", t->name);
	np_ctrl_open();
	if (np_o.rank == 1) {
		np_serve(t, sbuf, rbuf);
		return 0;
	}
	np_call(NP_HELLO, 0, 0);
	if (np_o.csv) {
		csv = fopen(np_o.csv, "a");
		if (!csv)
			np_die("%s: %s", np_o.csv, strerror(errno));
		if (ftell(csv) == 0)
			fprintf(csv, "transport,size,lat_us_p50,lat_us_mean,bw_MBps,lat_us_min,"
				"lat_us_p99,pp_MBps,bw_MBps_max,rounds,stream_msgs,stream_iters,"
				"failed\n");
	}
	size_t sizes[256];
	int ns;

	np_size_list(sizes, &ns);
	for (int i = 0; i < ns; i++)
		np_measure_size(t, sbuf, rbuf, sizes[i], csv);
	if (np_o.rate)
		np_measure_rate(t, sbuf);
	np_call(NP_QUIT, 0, 0);
	if (t->report)
		t->report(t->ctx, stderr);
	if (csv)
		fclose(csv);
	/* 3: it ran to the end, but messages were lost (see the CSV) */
	return np_failed ? 3 : 0;
}

#endif /* NETPIPE_H */
