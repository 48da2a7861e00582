// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xsk_peer: test and benchmark tool of libspin's AF_XDP path (lib/xsk.c).
 *
 *   xsk_peer open IFACE [queue Q] [frames F] [zero-copy]
 *       open an AF_XDP socket on IFACE's runtime and close it again
 *       (every command that opens one takes queue, frames and zero-copy)
 *   xsk_peer recv IFACE [queue Q] [frames F] sizes LIST [timeout-ms T] [quiet-ms Q]
 *       receive one message per size in LIST (any order) with
 *       spin_xsk_recv_msg(), check every byte, then check that no further
 *       message (a duplicate) arrives within quiet-ms (default 300)
 *   xsk_peer send IFACE to-rank R pt P [bits X] sizes LIST [order shuffle|reverse]
 *       send one message per size with spin_xsk_send()
 *   xsk_peer sock-send to IP [port N] pt P [bits X] [rank R] sizes LIST
 *                      [order shuffle|reverse] [msg-order shuffle] [dup]
 *       the same with spin_sock_send() (UDP); dup sends every message a
 *       second time with the same message id
 *   xsk_peer sock-recv [port N] sizes LIST [timeout-ms T] [quiet-ms Q]
 *       receive and check with spin_sock_recv_msg()
 *   xsk_peer bench xsk IFACE to-rank R | sock to IP [port N]  pt P [bits X]
 *                  [mib N] [msg BYTES]
 *       send N MiB (default 256) as messages of msg bytes (default 1 MiB)
 *       and print "bench MODE bytes B seconds S MBps M" (MB = 10^6 bytes)
 *
 * Message contents: byte i of a message is pattern(seed, i) with the seed
 * carried in hdr_data and the length in user_hdr[0], so receivers check
 * every byte without knowing the sender's order.  Sizes take k/m suffixes.
 * Exit status: 0 ok, 1 check failed, otherwise the SPIN_E* code.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <spin/spin.h>
#include <spin/xsk.h>

#define MAX_SIZES 256

static uint32_t sizes[MAX_SIZES];
static int n_sizes;

static uint8_t pattern(uint64_t seed, uint32_t i)
{
	return (uint8_t)(seed + i * 7u + (i >> 8) * 13u + (i >> 16) * 29u);
}

static void fill(uint8_t *b, uint32_t len, uint64_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = pattern(seed, i);
}

/* First byte that differs from the pattern, or -1. */
static long check(const uint8_t *b, uint32_t len, uint64_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (b[i] != pattern(seed, i))
			return i;
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(void)
{
	static uint64_t s;

	if (!s)
		s = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static void shuffle(uint32_t *a, uint32_t n)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = rnd() % i, t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

static int usage(const char *msg)
{
	fprintf(stderr, "xsk_peer: %s (see the comment at the top of selftests/xsk_peer.c)\n", msg);
	return SPIN_EUSAGE;
}

static int parse_num(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		*v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		*v <<= 20, end++;
	return *end ? -1 : 0;
}

static int parse_sizes(const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;
	uint64_t v;

	n_sizes = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n_sizes >= MAX_SIZES || parse_num(tok, &v) || v > SPIN_MAX_MSG) {
			free(dup);
			return -1;
		}
		sizes[n_sizes++] = (uint32_t)v;
	}
	free(dup);
	return n_sizes ? 0 : -1;
}

struct opts {
	const char *ifname, *to, *order, *msg_order, *mode;
	uint64_t queue, frames, rank, pt, bits, port, timeout_ms, quiet_ms, mib, msg, to_rank;
	int dup, zc;
	int have_sizes, have_pt, have_to_rank;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	o->port = SPIN_DEFAULT_PORT;
	o->timeout_ms = 10000;
	o->quiet_ms = 300;
	o->mib = 256;
	o->msg = 1 << 20;
	for (int i = 0; i < argc; i++) {
		const char *k = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t *num = NULL;

		if (!strcmp(k, "dup")) {
			o->dup = 1;
			continue;
		}
		if (!strcmp(k, "zero-copy")) {
			o->zc = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "xsk_peer: '%s' needs a value\n", k);
			return -1;
		}
		i++;
		if (!strcmp(k, "sizes")) {
			if (parse_sizes(v)) {
				fprintf(stderr, "xsk_peer: bad sizes '%s'\n", v);
				return -1;
			}
			o->have_sizes = 1;
			continue;
		} else if (!strcmp(k, "to")) {
			o->to = v;
			continue;
		} else if (!strcmp(k, "order")) {
			o->order = v;
			continue;
		} else if (!strcmp(k, "msg-order")) {
			o->msg_order = v;
			continue;
		}
		if (!strcmp(k, "queue"))
			num = &o->queue;
		else if (!strcmp(k, "frames"))
			num = &o->frames;
		else if (!strcmp(k, "rank"))
			num = &o->rank;
		else if (!strcmp(k, "to-rank"))
			num = &o->to_rank, o->have_to_rank = 1;
		else if (!strcmp(k, "pt"))
			num = &o->pt, o->have_pt = 1;
		else if (!strcmp(k, "bits"))
			num = &o->bits;
		else if (!strcmp(k, "port"))
			num = &o->port;
		else if (!strcmp(k, "timeout-ms"))
			num = &o->timeout_ms;
		else if (!strcmp(k, "quiet-ms"))
			num = &o->quiet_ms;
		else if (!strcmp(k, "mib"))
			num = &o->mib;
		else if (!strcmp(k, "msg"))
			num = &o->msg;
		if (!num || parse_num(v, num)) {
			fprintf(stderr, "xsk_peer: bad option '%s %s'\n", k, v);
			return -1;
		}
	}
	return 0;
}

/* A packet order for a message of len bytes (NULL: in order). */
static uint32_t *make_order(const char *how, uint32_t len, uint16_t seg)
{
	uint32_t n = len ? (len + seg - 1) / seg : 1, *ord;

	if (!how || !strcmp(how, "in"))
		return NULL;
	ord = malloc(n * sizeof(*ord));
	if (!ord)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		ord[i] = !strcmp(how, "reverse") ? n - 1 - i : i;
	if (!strcmp(how, "shuffle"))
		shuffle(ord, n);
	return ord;
}

static uint32_t max_size(void)
{
	uint32_t m = 1;

	for (int i = 0; i < n_sizes; i++)
		if (sizes[i] > m)
			m = sizes[i];
	return m;
}

static void print_xsk_stats(struct spin_xsk *x)
{
	struct spin_xsk_stats st;

	if (spin_xsk_stats(x, &st))
		return;
	printf("xsk stats: %s queue %u tx_msgs %llu tx_packets %llu tx_kicks %llu tx_waits %llu "
	       "rx_msgs %llu rx_packets %llu rx_invalid %llu rx_stale %llu "
	       "k_rx_dropped %llu k_rx_ring_full %llu k_fill_empty %llu\n",
	       st.zero_copy ? "zero-copy" : "copy", st.queue,
	       (unsigned long long)st.tx_msgs, (unsigned long long)st.tx_packets,
	       (unsigned long long)st.tx_kicks, (unsigned long long)st.tx_waits,
	       (unsigned long long)st.rx_msgs, (unsigned long long)st.rx_packets,
	       (unsigned long long)st.rx_invalid, (unsigned long long)st.rx_stale,
	       (unsigned long long)st.k_rx_dropped, (unsigned long long)st.k_rx_ring_full,
	       (unsigned long long)st.k_rx_fill_ring_empty);
}

static int open_xsk(const struct opts *o, struct spin_rt **rt, struct spin_xsk **x)
{
	struct spin_xsk_opts xo = {
		.queue = (uint32_t)o->queue, .frames = (uint32_t)o->frames, .zero_copy = o->zc,
	};
	int err;

	if (!o->ifname)
		return usage("missing IFACE");
	err = spin_open(o->ifname, rt);
	if (err) {
		fprintf(stderr, "xsk_peer: %s\n", spin_errmsg());
		return -err;
	}
	err = spin_xsk_open(*rt, &xo, x);
	if (err) {
		fprintf(stderr, "xsk_peer: %s\n", spin_errmsg());
		spin_close(*rt);
		*rt = NULL;
		return -err;
	}
	return 0;
}

/* ---------------------------------------------------------- receivers -- */

/* recv and sock-recv: one message per size, each byte checked, then
 * silence for quiet-ms (no duplicate delivered). */
typedef int (*recv_fn)(void *h, struct spin_hdr *hdr, void *buf, size_t cap, int timeout_ms);

static int xsk_recv1(void *h, struct spin_hdr *hdr, void *buf, size_t cap, int timeout_ms)
{
	return spin_xsk_recv_msg(h, hdr, buf, cap, timeout_ms);
}

static int sock_recv1(void *h, struct spin_hdr *hdr, void *buf, size_t cap, int timeout_ms)
{
	return spin_sock_recv_msg(h, hdr, buf, cap, NULL, timeout_ms);
}

static int recv_check(const struct opts *o, recv_fn fn, void *h)
{
	uint32_t cap = max_size() + 1;
	uint8_t *buf = malloc(cap);
	int seen[MAX_SIZES] = {}, bad = 0, n, k;
	uint64_t bytes = 0;
	struct spin_hdr hdr;

	if (!buf)
		return SPIN_EFAIL;
	printf("ready\n");
	fflush(stdout);
	for (k = 0; k < n_sizes; k++) {
		uint64_t seed, want;
		long at;
		int j;

		n = fn(h, &hdr, buf, cap, (int)o->timeout_ms);
		if (n < 0) {
			printf("FAIL: message %d of %d: %s\n", k + 1, n_sizes, spin_errmsg());
			free(buf);
			return 1;
		}
		seed = be64toh(hdr.hdr_data);
		want = be64toh(hdr.user_hdr[0]);
		if ((uint64_t)n != want) {
			printf("FAIL: message id %u has %d bytes, the sender says %llu\n",
			       ntohl(hdr.msg_id), n, (unsigned long long)want);
			bad = 1;
			continue;
		}
		at = check(buf, (uint32_t)n, seed);
		if (at >= 0) {
			printf("FAIL: message id %u (%d bytes): byte %ld is 0x%02x, want 0x%02x\n",
			       ntohl(hdr.msg_id), n, at, buf[at], pattern(seed, (uint32_t)at));
			bad = 1;
		}
		for (j = 0; j < n_sizes; j++)
			if (!seen[j] && sizes[j] == (uint32_t)n)
				break;
		if (j == n_sizes) {
			printf("FAIL: unexpected message of %d bytes (a duplicate?)\n", n);
			bad = 1;
		} else {
			seen[j] = 1;
		}
		bytes += (uint32_t)n;
	}
	/* nothing more may come: duplicates are not delivered twice */
	n = fn(h, &hdr, buf, cap, o->quiet_ms ? (int)o->quiet_ms : 1);
	if (n >= 0) {
		printf("FAIL: an extra message of %d bytes (id %u) arrived\n", n, ntohl(hdr.msg_id));
		bad = 1;
	}
	printf("received %d messages, %llu bytes, %s\n", n_sizes, (unsigned long long)bytes,
	       bad ? "ERRORS" : "all bytes ok");
	free(buf);
	return bad;
}

static int cmd_recv(struct opts *o)
{
	struct spin_rt *rt;
	struct spin_xsk *x;
	int err;

	if (!o->have_sizes)
		return usage("recv: missing sizes");
	if ((err = open_xsk(o, &rt, &x)))
		return err;
	err = recv_check(o, xsk_recv1, x);
	print_xsk_stats(x);
	spin_xsk_close(x);
	spin_close(rt);
	return err;
}

static int cmd_sock_recv(struct opts *o)
{
	struct spin_sock *s;
	int err;

	if (!o->have_sizes)
		return usage("sock-recv: missing sizes");
	if ((err = spin_sock_open(NULL, (uint16_t)o->port, &s))) {
		fprintf(stderr, "xsk_peer: %s\n", spin_errmsg());
		return -err;
	}
	err = recv_check(o, sock_recv1, s);
	spin_sock_close(s);
	return err;
}

/* ------------------------------------------------------------ senders -- */

static void msg_args(const struct opts *o, struct spin_msg_args *a, uint32_t len, uint64_t seed)
{
	memset(a, 0, sizeof(*a));
	a->op = SPIN_OP_PUT;
	a->pt_index = (uint16_t)o->pt;
	a->match_bits = o->bits;
	a->src_rank = (uint32_t)o->rank;
	a->hdr_data = seed;
	a->user_hdr[0] = len;
}

static int cmd_send(struct opts *o, bool sock)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };
	uint32_t idx[MAX_SIZES], cap = max_size();
	struct spin_rt *rt = NULL;
	struct spin_xsk *x = NULL;
	struct spin_sock *s = NULL;
	uint8_t *buf;
	int err = 0;

	if (!o->have_sizes || !o->have_pt)
		return usage("send: missing sizes or pt");
	if (sock) {
		if (!o->to || inet_pton(AF_INET, o->to, &dst.sin_addr) != 1)
			return usage("sock-send: missing or bad 'to IP'");
		dst.sin_port = htons((uint16_t)o->port);
		if ((err = spin_sock_open(NULL, 0, &s))) {
			fprintf(stderr, "xsk_peer: %s\n", spin_errmsg());
			return -err;
		}
	} else {
		if (!o->have_to_rank)
			return usage("send: missing to-rank");
		if ((err = open_xsk(o, &rt, &x)))
			return err;
	}
	buf = malloc(cap);
	for (int i = 0; i < n_sizes; i++)
		idx[i] = i;
	if (o->msg_order && !strcmp(o->msg_order, "shuffle"))
		shuffle(idx, n_sizes);
	for (int k = 0; k < n_sizes && !err; k++) {
		uint32_t len = sizes[idx[k]];
		uint64_t seed = rnd();
		uint32_t *ord = make_order(o->order, len, SPIN_MAX_SEG);
		struct spin_msg_args a;

		msg_args(o, &a, len, seed);
		fill(buf, len, seed);
		if (sock) {
			a.msg_id = spin_next_msg_id();
			err = spin_sock_send(s, &dst, &a, buf, len, ord);
			if (!err && o->dup)
				err = spin_sock_send(s, &dst, &a, buf, len, ord);
		} else {
			err = spin_xsk_send(x, (uint32_t)o->to_rank, &a, buf, len, ord, &a.msg_id);
			if (!err && o->dup)
				err = spin_xsk_send(x, (uint32_t)o->to_rank, &a, buf, len, ord, NULL);
		}
		free(ord);
		if (err)
			fprintf(stderr, "xsk_peer: message of %u bytes: %s\n", len, spin_errmsg());
	}
	printf("sent %d messages%s\n", n_sizes, o->dup ? " twice" : "");
	if (x)
		print_xsk_stats(x);
	free(buf);
	spin_sock_close(s);
	spin_xsk_close(x);
	spin_close(rt);
	return err ? -err : 0;
}

static int cmd_bench(struct opts *o)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };
	bool sock = !strcmp(o->mode, "sock");
	struct spin_rt *rt = NULL;
	struct spin_xsk *x = NULL;
	struct spin_sock *s = NULL;
	uint64_t total = o->mib << 20, sent = 0;
	uint32_t len = (uint32_t)o->msg;
	struct spin_msg_args a;
	uint8_t *buf;
	double t0, t;
	int err = 0;

	if (!o->have_pt || !len || len > SPIN_MAX_MSG)
		return usage("bench: missing pt or bad msg");
	if (sock) {
		if (!o->to || inet_pton(AF_INET, o->to, &dst.sin_addr) != 1)
			return usage("bench sock: missing or bad 'to IP'");
		dst.sin_port = htons((uint16_t)o->port);
		if ((err = spin_sock_open(NULL, 0, &s))) {
			fprintf(stderr, "xsk_peer: %s\n", spin_errmsg());
			return -err;
		}
	} else if (!strcmp(o->mode, "xsk")) {
		if (!o->have_to_rank)
			return usage("bench xsk: missing to-rank");
		if ((err = open_xsk(o, &rt, &x)))
			return err;
	} else {
		return usage("bench: mode is xsk or sock");
	}
	buf = malloc(len);
	fill(buf, len, 1);
	msg_args(o, &a, len, 1);
	t0 = now_s();
	while (sent < total && !err) {
		a.msg_id = 0;
		if (sock) {
			a.msg_id = spin_next_msg_id();
			err = spin_sock_send(s, &dst, &a, buf, len, NULL);
		} else {
			err = spin_xsk_send(x, (uint32_t)o->to_rank, &a, buf, len, NULL, NULL);
		}
		if (!err)
			sent += len;
	}
	t = now_s() - t0;
	if (err)
		fprintf(stderr, "xsk_peer: bench: %s\n", spin_errmsg());
	printf("bench %s bytes %llu seconds %.6f MBps %.1f\n", o->mode,
	       (unsigned long long)sent, t, sent / t / 1e6);
	if (x)
		print_xsk_stats(x);
	free(buf);
	spin_sock_close(s);
	spin_xsk_close(x);
	spin_close(rt);
	return err ? -err : 0;
}

int main(int argc, char **argv)
{
	struct opts o = {};
	const char *cmd;
	int first = 2;

	if (argc < 2)
		return usage("missing command");
	cmd = argv[1];
	if (!strcmp(cmd, "bench")) {
		if (argc < 3)
			return usage("bench: missing mode");
		o.mode = argv[2];
		first = 3;
		if (!strcmp(o.mode, "xsk")) {
			if (argc < 4)
				return usage("bench xsk: missing IFACE");
			o.ifname = argv[3];
			first = 4;
		}
	} else if (!strcmp(cmd, "open") || !strcmp(cmd, "recv") || !strcmp(cmd, "send")) {
		if (argc < 3)
			return usage("missing IFACE");
		o.ifname = argv[2];
		first = 3;
	}
	if (parse_opts(argc - first, argv + first, &o))
		return SPIN_EUSAGE;
	if (!strcmp(cmd, "open")) {
		struct spin_rt *rt;
		struct spin_xsk *x;
		int err = open_xsk(&o, &rt, &x);

		if (err)
			return err;
		printf("AF_XDP socket on %s queue %llu: ok\n", o.ifname, (unsigned long long)o.queue);
		print_xsk_stats(x);
		spin_xsk_close(x);
		spin_close(rt);
		return 0;
	}
	if (!strcmp(cmd, "recv"))
		return cmd_recv(&o);
	if (!strcmp(cmd, "sock-recv"))
		return cmd_sock_recv(&o);
	if (!strcmp(cmd, "send"))
		return cmd_send(&o, false);
	if (!strcmp(cmd, "sock-send"))
		return cmd_send(&o, true);
	if (!strcmp(cmd, "bench"))
		return cmd_bench(&o);
	return usage("unknown command");
}
