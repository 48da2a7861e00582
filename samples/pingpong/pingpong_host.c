// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Host side of the sPIN ping-pong (paper section 4.1).
 *
 *   pingpong_host server DEV [stream|store] [client RANK IP] [pt N] [seconds S]
 *       Loads the ping-pong handlers into the spin runtime attached to DEV,
 *       appends the match entry that runs them, and, in store mode, serves
 *       the puts from host memory that are longer than one packet.  Ctrl-C
 *       (or S seconds) unlinks the entry and unloads the handler.
 *
 *   pingpong_host client DST_IP [stream|store] [size S[,S...]] [count N]
 *                        [order inorder|reverse|shuffle] [rank R] [port P]
 *                        [timeout-ms T] [quiet]
 *       Sends N pings of each size from a kernel UDP socket, waits for each
 *       pong (up to T ms, default 1000; the first one lost ends the run),
 *       checks it byte for byte and prints round-trip percentiles.
 *       Exit status 0 only if every pong arrived intact.
 *
 * Streaming mode answers each packet of a ping with a one-packet message
 * (the paper's payload handler does one put per packet); store mode answers
 * with one message of the ping's length.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <spin/spin.h>

#define PONG_BITS 10

static volatile sig_atomic_t stop;

static void on_sig(int s) { stop = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static const char *obj_dir(void)
{
	static char dir[512];
	const char *env = getenv("SPIN_SAMPLE_DIR");
	ssize_t n;
	char *p;

	if (env)
		return env;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n < 0)
		return ".";
	dir[n] = 0;
	p = strrchr(dir, '/');
	if (p)
		*p = 0;
	return dir;
}

static int die(const char *what)
{
	fprintf(stderr, "pingpong_host: %s: %s\n", what, spin_errmsg());
	return 1;
}

/* ------------------------------------------------------------ server -- */

static int server(int argc, char **argv)
{
	const char *dev = argv[0], *mode = "stream", *cip = NULL;
	struct spin_me_spec s = {
		.list = SPIN_LIST_PRIORITY, .ignore_bits = ~0ull,
		.match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
		.options = SPIN_ME_OP_PUT, .host_off = UINT64_MAX, .hhost_off = UINT64_MAX,
	};
	char obj[600], name[32];
	uint32_t crank = 0, pt = 0;
	int seconds = 0, me, rc = 0, loaded = 0;
	struct spin_rt *rt;
	uint64_t end;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "stream") || !strcmp(argv[i], "store"))
			mode = argv[i];
		else if (!strcmp(argv[i], "client") && i + 2 < argc) {
			crank = atoi(argv[++i]);
			cip = argv[++i];
		} else if (!strcmp(argv[i], "pt") && i + 1 < argc)
			pt = atoi(argv[++i]);
		else if (!strcmp(argv[i], "seconds") && i + 1 < argc)
			seconds = atoi(argv[++i]);
		else {
			fprintf(stderr, "pingpong_host: unknown server argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (spin_open(dev, &rt) < 0)
		return die(dev);
	snprintf(obj, sizeof(obj), "%s/pingpong_%s.bpf.o", obj_dir(), mode);
	snprintf(name, sizeof(name), "pingpong_%s", mode);
	rc = spin_handler_load(rt, obj, name);
	if (rc < 0 && rc != -SPIN_EEXIST) {
		fprintf(stderr, "pingpong_host: %s\n%s", spin_errmsg(), spin_verifier_log());
		spin_close(rt);
		return 1;
	}
	loaded = rc >= 0;
	rc = spin_pt_alloc(rt, pt);
	if (rc < 0 && rc != -SPIN_EEXIST) {
		rc = die("portal table");
		goto out_unload;
	}
	if (cip) {
		struct spin_peer_spec p = { .rank = crank };

		if (inet_pton(AF_INET, cip, &p.ip) != 1) {
			fprintf(stderr, "pingpong_host: bad client address '%s'\n", cip);
			rc = 2;
			goto out_unload;
		}
		if (spin_peer_add(rt, &p) < 0) {
			rc = die("client peer");
			goto out_unload;
		}
	}
	s.pt_index = pt;
	s.handler = name;
	if (!strcmp(mode, "store")) {
		s.host_len = 4 << 20;		/* the ping is stored here */
		s.options |= SPIN_ME_EVENT_COMM_DISABLE;
	} else {
		s.options |= SPIN_ME_EVENT_COMM_DISABLE;	/* the host is not involved */
	}
	me = spin_me_append(rt, &s);
	if (me < 0) {
		rc = die("match entry");
		goto out_unload;
	}
	printf("pingpong server on %s: %s mode, match entry %d, handler %s\n", dev, mode, me, name);
	fflush(stdout);
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	spin_events_serve_puts(rt, true);
	end = seconds ? now_ns() + seconds * 1000000000ull : 0;
	while (!stop && (!end || now_ns() < end)) {
		int n = spin_events_poll(rt, NULL, NULL, 100);

		if (n < 0 && n != -SPIN_ETIMEDOUT) {
			rc = die("events");
			break;
		}
	}
	spin_me_unlink(rt, me);
	rc = rc > 0 ? rc : 0;
out_unload:
	if (loaded)
		spin_handler_unload(rt, name);
	spin_close(rt);
	return rc;
}

/* ------------------------------------------------------------ client -- */

static void pattern(uint8_t *b, uint32_t len, uint32_t seq)
{
	/* every segment differs, so a misplaced or reused packet is caught */
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seq * 29 + i * 13 + (i / SPIN_MAX_SEG) * 101);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int client(int argc, char **argv)
{
	const char *dst_ip = argv[0], *order_s = "inorder";
	uint32_t sizes[16] = { 64 }, nsizes = 1, count = 1000, rank = 0;
	uint16_t port = SPIN_DEFAULT_PORT;
	int timeout = 1000, store = 0, quiet = 0, bad = 0;
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct spin_sock *sk;
	uint8_t *ping, *pong;
	uint64_t *rtt;
	uint32_t *order;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "stream") || !strcmp(argv[i], "store"))
			store = !strcmp(argv[i], "store");
		else if (!strcmp(argv[i], "size") && i + 1 < argc) {
			char *p = argv[++i];

			nsizes = 0;
			while (*p && nsizes < 16) {
				sizes[nsizes++] = strtoul(p, &p, 0);
				if (*p == ',')
					p++;
			}
		} else if (!strcmp(argv[i], "count") && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "order") && i + 1 < argc)
			order_s = argv[++i];
		else if (!strcmp(argv[i], "rank") && i + 1 < argc)
			rank = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "port") && i + 1 < argc)
			port = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "timeout-ms") && i + 1 < argc)
			timeout = atoi(argv[++i]);
		else if (!strcmp(argv[i], "quiet"))
			quiet = 1;
		else {
			fprintf(stderr, "pingpong_host: unknown client argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (inet_pton(AF_INET, dst_ip, &dst.sin_addr) != 1) {
		fprintf(stderr, "pingpong_host: bad address '%s'\n", dst_ip);
		return 2;
	}
	dst.sin_port = htons(port);
	if (spin_sock_open(NULL, port, &sk) < 0)
		return die("socket");
	ping = malloc(SPIN_MAX_MSG);
	pong = malloc(SPIN_MAX_MSG);
	rtt = calloc(count ? count : 1, sizeof(*rtt));
	order = malloc(sizeof(*order) * (SPIN_MAX_MSG / SPIN_MAX_SEG + 1));
	if (!ping || !pong || !rtt || !order)
		return 1;
	srand(1);
	for (uint32_t si = 0; si < nsizes && !bad; si++) {
		uint32_t size = sizes[si], npk = size ? (size + SPIN_MAX_SEG - 1) / SPIN_MAX_SEG : 1;
		uint32_t lost = 0, n = 0;

		if (size > SPIN_MAX_MSG) {
			fprintf(stderr, "pingpong_host: size %u above %u\n", size, SPIN_MAX_MSG);
			return 2;
		}
		for (uint32_t i = 0; i < npk; i++)
			order[i] = !strcmp(order_s, "reverse") ? npk - 1 - i : i;
		/* a lost pong ends the run: a test gives a generous timeout-ms
		 * (a loaded machine can miss the 1 s default), and waiting that
		 * long for each further pong would only make a failing run long */
		for (uint32_t it = 0; it < count && !bad && !lost; it++) {
			struct spin_msg_args a = {
				.op = SPIN_OP_PUT, .pt_index = 0, .src_rank = rank, .dst_rank = 1,
				.match_bits = 0x1, .seg_size = SPIN_MAX_SEG,
			};
			uint64_t t0, got = 0;
			uint32_t seen = 0;

			if (!strcmp(order_s, "shuffle"))
				for (uint32_t i = npk - 1; i > 0; i--) {
					uint32_t j = rand() % (i + 1), t = order[i];

					order[i] = order[j];
					order[j] = t;
				}
			pattern(ping, size, it);
			memset(pong, 0, size);
			t0 = now_ns();
			if (spin_sock_send(sk, &dst, &a, ping, size, order) < 0)
				return die("send");
			if (store || npk == 1) {
				struct spin_hdr h;
				int r = spin_sock_recv_msg(sk, &h, pong, size ? size : 1, NULL, timeout);

				if (r < 0) {
					lost++;
					continue;
				}
				got = r;
				if ((uint32_t)r != size || memcmp(ping, pong, size)) {
					fprintf(stderr, "pingpong_host: pong %u of %u bytes differs from the ping\n",
						it, size);
					bad = 1;
				}
				if (be64toh(h.match_bits) != PONG_BITS) {
					fprintf(stderr, "pingpong_host: pong match bits %llu, want %d\n",
						(unsigned long long)be64toh(h.match_bits), PONG_BITS);
					bad = 1;
				}
			} else {
				/* one pong message per ping packet; find its place */
				while (seen < npk) {
					struct spin_hdr h;
					int r = spin_sock_recv_pkt(sk, &h, pong + 0, SPIN_MAX_SEG, NULL, timeout);
					uint32_t k;

					if (r < 0)
						break;
					for (k = 0; k < npk; k++) {
						uint32_t off = k * SPIN_MAX_SEG;
						uint32_t l = size - off < SPIN_MAX_SEG ? size - off : SPIN_MAX_SEG;

						if ((uint32_t)r == l && !memcmp(ping + off, pong, l))
							break;
					}
					if (k == npk) {
						fprintf(stderr, "pingpong_host: a %d-byte pong matches no ping packet\n", r);
						bad = 1;
						break;
					}
					seen++;
					got += r;
				}
				if (seen < npk && !bad) {
					lost++;
					continue;
				}
			}
			if (got == size)
				rtt[n++] = now_ns() - t0;
		}
		qsort(rtt, n, sizeof(*rtt), cmp_u64);
		if (!quiet || bad || lost)
			printf("size %u: %u round trips, %u lost, p50 %.1f us, p99 %.1f us, min %.1f us\n",
			       size, n, lost, n ? rtt[n / 2] / 1e3 : 0, n ? rtt[(uint64_t)n * 99 / 100] / 1e3 : 0,
			       n ? rtt[0] / 1e3 : 0);
		if (lost)
			bad = 1;
	}
	spin_sock_close(sk);
	free(ping);
	free(pong);
	free(rtt);
	free(order);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return server(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "client"))
		return client(argc - 2, argv + 2);
	fprintf(stderr,
		"usage: pingpong_host server DEV [stream|store] [client RANK IP] [pt N] [seconds S]\n"
		"       pingpong_host client DST_IP [stream|store] [size S[,S...]] [count N]\n"
		"                            [order inorder|reverse|shuffle] [rank R] [port P]\n"
		"                            [timeout-ms T] [quiet]\n");
	return 2;
}
