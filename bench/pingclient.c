// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/pingclient - round-trip latency of sPIN ping-pong, measured from a
 * plain kernel UDP socket (libspin's spin_sock).
 *
 * Sends --count single-packet ping messages of --size bytes, one at a time,
 * and waits for each pong.  A pong must carry exactly the ping's payload
 * (the first 8 bytes are the ping's sequence number, the rest a pattern
 * derived from it), match bits 10 and the job key we sent ($SPIN_JOB_KEY,
 * default none); late pongs of
 * earlier pings are recognised by their sequence number and skipped.  No
 * pong within --timeout-ms counts as a loss and the next ping goes out;
 * after --max-lost-in-row losses in a row the client gives up (exit SPIN_EIO).
 *
 *   pingclient --dst IP [--port N] [--sport N] [--bind IP] [--count N]
 *              [--size S] [--warmup N] [--timeout-ms N] [--busy] [--rank R]
 *              [--dst-rank R] [--pt N] [--match-bits B]
 *              [--csv FILE --label NAME] [--raw FILE] [--max-lost-in-row N]
 *
 * Output: one line with n, loss, min/mean/p50/p90/p99/p999/max in us.
 * --csv appends "label,size,n,p50_ns,p99_ns,mean_ns,loss" (a header line is
 * written first if the file is empty); --raw writes every RTT in ns.
 * Exit status: 0, SPIN_EIO if no pong came back at all or a pong was wrong.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include <spin/spin.h>

#define PONG_MATCH_BITS	10

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void fill(uint8_t *p, uint32_t size, uint64_t seq)
{
	uint32_t i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)(seq * 131 + i * 7 + 1);
	memcpy(p, &seq, size < 8 ? size : 8);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of a sorted array */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)ceil(p * n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pingclient --dst IP [options]\n"
		"  --dst IP         server address (required)\n"
		"  --port N         server sPIN port (default %d)\n"
		"  --sport N        our UDP port (default: the sPIN port, where pongs go)\n"
		"  --bind IP        our address (default 0.0.0.0)\n"
		"  --count N        measured round trips (default 10000)\n"
		"  --size S         ping payload bytes, 1..%d (default 64)\n"
		"  --warmup N       unmeasured round trips first (default 1000)\n"
		"  --timeout-ms N   wait for a pong at most N ms (default 1000)\n"
		"  --busy           busy-poll the socket instead of blocking\n"
		"  --rank R         our rank, src_rank of the pings (default 0)\n"
		"  --dst-rank R     server rank (default 1)\n"
		"  --pt N           portal table index (default 0)\n"
		"  --match-bits B   match bits of the pings (default 0)\n"
		"  --csv FILE       append label,size,n,p50_ns,p99_ns,mean_ns,loss\n"
		"  --label NAME     label of the CSV line (default 'ping')\n"
		"  --raw FILE       write every RTT (ns), one per line\n"
		"  --max-lost-in-row N  give up after N pings in a row without a pong (default 100)\n",
		SPIN_DEFAULT_PORT, SPIN_MAX_SEG);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dst", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "sport", required_argument, NULL, 'S' },
		{ "bind", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "busy", no_argument, NULL, 'B' },
		{ "rank", required_argument, NULL, 'r' },
		{ "dst-rank", required_argument, NULL, 'R' },
		{ "pt", required_argument, NULL, 'T' },
		{ "match-bits", required_argument, NULL, 'm' },
		{ "csv", required_argument, NULL, 'c' },
		{ "label", required_argument, NULL, 'l' },
		{ "raw", required_argument, NULL, 'W' },
		{ "max-lost-in-row", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *dst_ip = NULL, *bind_ip = "0.0.0.0", *csv = NULL, *label = "ping";
	const char *raw = NULL;
	unsigned long port = SPIN_DEFAULT_PORT, sport = 0, size = 64, rank = 0, dst_rank = 1;
	uint32_t key;
	unsigned long pt = 0, timeout_ms = 1000;
	unsigned long long count = 10000, warmup = 1000, match_bits = 0, i;
	unsigned long long lost = 0, late = 0, bad_pay = 0, bad_hdr = 0;
	unsigned long long consec = 0, max_consec = 100;
	uint8_t ping[SPIN_MAX_SEG], pong[65536];
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct spin_sock *s;
	uint64_t *rtt, sum = 0;
	size_t n = 0;
	int busy = 0, c, rc;

	while ((c = getopt_long(argc, argv, "d:p:S:b:n:s:w:t:Br:R:T:m:c:l:W:L:h", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'd': dst_ip = optarg; break;
		case 'p': port = strtoul(optarg, &end, 0); break;
		case 'S': sport = strtoul(optarg, &end, 0); break;
		case 'b': bind_ip = optarg; break;
		case 'n': count = strtoull(optarg, &end, 0); break;
		case 's': size = strtoul(optarg, &end, 0); break;
		case 'w': warmup = strtoull(optarg, &end, 0); break;
		case 't': timeout_ms = strtoul(optarg, &end, 0); break;
		case 'B': busy = 1; break;
		case 'r': rank = strtoul(optarg, &end, 0); break;
		case 'R': dst_rank = strtoul(optarg, &end, 0); break;
		case 'T': pt = strtoul(optarg, &end, 0); break;
		case 'm': match_bits = strtoull(optarg, &end, 0); break;
		case 'c': csv = optarg; break;
		case 'l': label = optarg; break;
		case 'W': raw = optarg; break;
		case 'L': max_consec = strtoull(optarg, &end, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SPIN_EUSAGE;
		}
		if (end && *end) {
			fprintf(stderr, "pingclient: bad number '%s'\n", optarg);
			return SPIN_EUSAGE;
		}
	}
	if (optind != argc || !dst_ip || !port || port > 65535 || sport > 65535 ||
	    size < 1 || size > SPIN_MAX_SEG || count < 1 || pt >= SPIN_MAX_PT ||
	    timeout_ms < 1 || timeout_ms > 3600000 || !max_consec) {
		usage(stderr);
		return SPIN_EUSAGE;
	}
	if (inet_pton(AF_INET, dst_ip, &dst.sin_addr) != 1) {
		fprintf(stderr, "pingclient: '%s' is not an IPv4 address\n", dst_ip);
		return SPIN_EUSAGE;
	}
	dst.sin_port = htons(port);
	if (spin_job_key_env(&key)) {
		fprintf(stderr, "pingclient: %s\n", spin_errmsg());
		return SPIN_EUSAGE;
	}
	if (!sport)
		sport = port;	/* the runtime answers to the peer's port = its own */
	rtt = calloc(count, sizeof(*rtt));
	if (!rtt) {
		fprintf(stderr, "pingclient: out of memory\n");
		return SPIN_EFAIL;
	}
	rc = spin_sock_open(bind_ip, sport, &s);
	if (rc) {
		fprintf(stderr, "pingclient: %s\n", spin_errmsg());
		return -rc;
	}

	for (i = 0; i < warmup + count; i++) {
		struct spin_msg_args a = {
			.op = SPIN_OP_PUT, .pt_index = pt, .src_rank = rank,
			.dst_rank = dst_rank, .match_bits = match_bits,
		};
		uint64_t seq = i + 1, t0, t1 = 0, deadline;

		fill(ping, size, seq);
		t0 = now_ns();
		rc = spin_sock_send(s, &dst, &a, ping, size, NULL);
		if (rc) {
			fprintf(stderr, "pingclient: %s\n", spin_errmsg());
			spin_sock_close(s);
			return -rc;
		}
		deadline = t0 + timeout_ms * 1000000ull;
		for (;;) {
			struct spin_hdr h;
			uint64_t now = now_ns();
			size_t hd = size < 8 ? size : 8;
			int len, wait;

			if (now >= deadline)
				break;
			wait = busy ? 0 : (int)((deadline - now + 999999) / 1000000);
			len = spin_sock_recv_pkt(s, &h, pong, sizeof(pong), NULL, wait);
			if (len == -SPIN_ETIMEDOUT)
				continue;
			if (len < 0) {
				fprintf(stderr, "pingclient: %s\n", spin_errmsg());
				continue;
			}
			t1 = now_ns();
			if (len >= (int)hd && memcmp(pong, ping, hd)) {
				late++;		/* pong of another (earlier) ping */
				t1 = 0;
				continue;
			}
			if (len != (int)size || memcmp(pong, ping, size)) {
				bad_pay++;
				t1 = 0;
				continue;
			}
			if (be64toh(h.match_bits) != PONG_MATCH_BITS ||
			    ntohl(h.job_key) != key || ntohl(h.msg_len) != size ||
			    ntohl(h.pkt_off) != 0 || ntohl(h.src_rank) != dst_rank ||
			    !(ntohs(h.flags) & SPIN_F_FROM_DEVICE))
				bad_hdr++;
			break;
		}
		if (!t1) {
			lost += i >= warmup;
			if (++consec >= max_consec) {
				fprintf(stderr, "pingclient: %llu pings in a row without a pong from %s:%lu; giving up\n",
					consec, dst_ip, port);
				break;
			}
			continue;
		}
		consec = 0;
		if (i >= warmup) {
			rtt[n++] = t1 - t0;
			sum += t1 - t0;
		}
	}
	spin_sock_close(s);
	lost = count - n;	/* includes pings never sent after giving up */

	if (raw) {
		FILE *f = fopen(raw, "w");

		if (!f) {
			fprintf(stderr, "pingclient: %s: %s\n", raw, strerror(errno));
		} else {
			for (i = 0; i < n; i++)
				fprintf(f, "%llu\n", (unsigned long long)rtt[i]);
			fclose(f);
		}
	}
	qsort(rtt, n, sizeof(*rtt), cmp_u64);
	{
		double mean = n ? (double)sum / n : 0;
		uint64_t p50 = pct(rtt, n, .50), p90 = pct(rtt, n, .90), p99 = pct(rtt, n, .99);
		uint64_t p999 = pct(rtt, n, .999);

		printf("%s: size %lu n %llu ok %zu loss %llu late %llu bad_payload %llu bad_header %llu\n",
		       label, size, count, n, lost, late, bad_pay, bad_hdr);
		printf("%s: rtt us: min %.2f mean %.2f p50 %.2f p90 %.2f p99 %.2f p999 %.2f max %.2f\n",
		       label, n ? rtt[0] / 1e3 : 0, mean / 1e3, p50 / 1e3, p90 / 1e3, p99 / 1e3,
		       p999 / 1e3, n ? rtt[n - 1] / 1e3 : 0);
		if (csv) {
			struct stat st;
			int fresh = stat(csv, &st) || st.st_size == 0;
			FILE *f = fopen(csv, "a");

			if (!f) {
				fprintf(stderr, "pingclient: %s: %s\n", csv, strerror(errno));
				return SPIN_EIO;
			}
			if (fresh)
				fprintf(f, "label,size,n,p50_ns,p99_ns,mean_ns,loss\n");
			fprintf(f, "%s,%lu,%llu,%llu,%llu,%.0f,%llu\n", label, size, count,
				(unsigned long long)p50, (unsigned long long)p99, mean, lost);
			fclose(f);
		}
	}
	free(rtt);
	if (!n || bad_pay || bad_hdr || consec >= max_consec) {
		if (!n)
			fprintf(stderr, "pingclient: no pong came back from %s:%lu\n", dst_ip, port);
		return SPIN_EIO;
	}
	return 0;
}
