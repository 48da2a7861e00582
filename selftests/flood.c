// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * selftests/flood - the two sides of the flood test (selftests/test_flood.sh)
 * and benchmark (bench/flood.sh).
 *
 *   flood forge --if DEV --src-ip IP --dst-ip IP --dst-mac MAC --rank R
 *               --victim V --key K [--pt N] --bits B --get-bits G
 *               [--ms N] [--pps N] [--fill]
 *     A job member gone bad: sends crafted sPIN frames from a raw socket on
 *     DEV, round robin, as fast as it can (or --pps per second) for --ms
 *     milliseconds: a put and an ack claiming the victim's rank V (from this
 *     host's address), a put with a wrong job key, the first packet of a
 *     two-packet message that never finishes, an ack of nothing, a get, a
 *     one-packet put asking for an ack (as rank R, with key K: its own
 *     rank), and a frame of an unknown version.  Every frame a new message
 *     id.  --fill: first SPIN_MAX_MSGS / 2 + 4096 of those unfinished
 *     messages, more than one source's share of the message table (at most
 *     half of it) whatever the send rate (round robin, one frame in 8 is
 *     one: at 45,000 frames/s on a loaded machine, 3 s sent 17,000, fewer
 *     than a share).  Prints "forge start_ns END_ns sent N failed N"
 *     (CLOCK_MONOTONIC).
 *
 *   flood legit --dst IP --rank R --bits B [--pt N] [--port N] [--bind IP]
 *               [--count N | --ms N] [--len N] [--timeout-ms N]
 *               [--give-up-ms N] [--stamps FILE]
 *     The legitimate sender: one put at a time from a UDP socket (spin_sock,
 *     key from $SPIN_JOB_KEY) asking for an ack; the next once it is acked.
 *     No ack within --timeout-ms (default 200): sent again as a new message
 *     (lost); a QUEUE_FULL nack: again 1 ms later (not_now); any other
 *     failure ends the run.  --count: until N messages are acked; --ms:
 *     as many as it can in that time.  Gives up (exit 1) when no message
 *     was acked for --give-up-ms (default 30000).  --stamps writes each
 *     acked message's CLOCK_MONOTONIC time in ns, one per line.  Prints
 *     "legit acked N not_now N lost N ms N rate N".
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <net/if.h>
#include <linux/sockios.h>
#include <netinet/ether.h>
#include <linux/if_packet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <spin/spin.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s) {
		fprintf(stderr, "flood: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

/* ------------------------------------------------------------ forge -- */

enum { F_RANK_PUT, F_RANK_ACK, F_BAD_KEY, F_HALF_MSG, F_ACK, F_GET, F_PUT_ACK, F_BAD_VER, F_KINDS };

struct forge {
	struct spin_frame_addr ad;
	uint32_t rank, victim, key, pt;
	uint64_t bits, get_bits;
	uint32_t id;
};

static int forge_frame(struct forge *fg, int kind, uint8_t *buf, size_t cap)
{
	static const uint8_t pay[SPIN_MAX_SEG] = { 0x5a };
	struct spin_msg_args a = {
		.op = SPIN_OP_PUT, .pt_index = fg->pt, .src_rank = fg->rank, .src_pid = 66,
		.match_bits = fg->bits, .job_key = fg->key, .msg_id = ++fg->id ? fg->id : ++fg->id,
	};
	struct spin_hdr h;
	uint32_t msg_len = 8, len = 8;
	int n;

	switch (kind) {
	case F_RANK_PUT:
		a.src_rank = fg->victim;
		break;
	case F_RANK_ACK:
		a.src_rank = fg->victim;
		a.op = SPIN_OP_ACK;
		msg_len = len = 0;
		break;
	case F_BAD_KEY:
		a.job_key = fg->key ^ 0x1234567;
		break;
	case F_HALF_MSG:	/* packet 0 of 2: never finished */
		a.seg_size = SPIN_MAX_SEG;
		msg_len = 2 * SPIN_MAX_SEG;
		len = SPIN_MAX_SEG;
		break;
	case F_ACK:
		a.op = SPIN_OP_ACK;
		msg_len = len = 0;
		break;
	case F_GET:
		a.op = SPIN_OP_GET;
		a.match_bits = fg->get_bits;
		msg_len = 64;
		len = 0;
		break;
	case F_PUT_ACK:
		a.flags = SPIN_F_ACK_REQ;
		break;
	}
	spin_hdr_build(&h, &a, msg_len, 0);
	if (kind == F_BAD_VER)
		h.version = 0x7f;
	n = spin_frame_build(buf, cap, &fg->ad, &h, pay, len);
	if (n > 0)
		spin_frame_csum(buf, n);
	return n;
}

static int forge_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "if", 1, 0, 'i' }, { "src-ip", 1, 0, 's' }, { "dst-ip", 1, 0, 'd' },
		{ "dst-mac", 1, 0, 'm' }, { "rank", 1, 0, 'r' }, { "victim", 1, 0, 'v' },
		{ "key", 1, 0, 'k' }, { "pt", 1, 0, 'p' }, { "bits", 1, 0, 'b' },
		{ "get-bits", 1, 0, 'g' }, { "ms", 1, 0, 't' }, { "pps", 1, 0, 'q' },
		{ "fill", 0, 0, 'f' }, { 0 }
	};
	struct forge fg = { .ad = { .sport = SPIN_DEFAULT_PORT, .dport = SPIN_DEFAULT_PORT } };
	const char *ifname = NULL;
	uint64_t ms = 1000, pps = 0, sent = 0, failed = 0, t0, t1, end, fill = 0;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct ether_addr *ea;
	enum { B = 32 };
	static uint8_t frames[B][1600];
	struct mmsghdr mm[B];
	struct iovec iov[B];
	int c, fd, kind = 0;

	fg.id = (uint32_t)now_ns() | 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': ifname = optarg; break;
		case 's': inet_pton(AF_INET, optarg, &fg.ad.src_ip); break;
		case 'd': inet_pton(AF_INET, optarg, &fg.ad.dst_ip); break;
		case 'm':
			ea = ether_aton(optarg);
			if (!ea) {
				fprintf(stderr, "flood: bad MAC '%s'\n", optarg);
				return 2;
			}
			memcpy(fg.ad.dst_mac, ea, 6);
			break;
		case 'r': fg.rank = num(optarg); break;
		case 'v': fg.victim = num(optarg); break;
		case 'k': fg.key = num(optarg); break;
		case 'p': fg.pt = num(optarg); break;
		case 'b': fg.bits = num(optarg); break;
		case 'g': fg.get_bits = num(optarg); break;
		case 't': ms = num(optarg); break;
		case 'q': pps = num(optarg); break;
		case 'f': fill = SPIN_MAX_MSGS / 2 + 4096; break;
		default: return 2;
		}
	}
	if (!ifname || !fg.ad.src_ip || !fg.ad.dst_ip) {
		fprintf(stderr, "flood forge: needs --if, --src-ip, --dst-ip, --dst-mac\n");
		return 2;
	}
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("flood: AF_PACKET socket");
		return 1;
	}
	sll.sll_ifindex = if_nametoindex(ifname);
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, fg.ad.dst_mac, 6);
	if (!sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("flood: bind to the interface");
		return 1;
	}
	{
		/* our own MAC: the frames come from this host's address */
		struct ifreq ifr = { 0 };

		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
			perror("flood: SIOCGIFHWADDR");
			return 1;
		}
		memcpy(fg.ad.src_mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	t0 = now_ns();
	end = t0 + ms * 1000000ull;
	for (;;) {
		int n, k;

		t1 = now_ns();
		if (t1 >= end)
			break;
		if (pps && sent + failed >= (t1 - t0) * pps / 1000000000ull) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
			continue;
		}
		n = pps ? 1 : B;
		for (k = 0; k < n; k++) {
			iov[k].iov_base = frames[k];
			if (fill && sent + failed + k < fill) {	/* --fill: first of all */
				iov[k].iov_len = forge_frame(&fg, F_HALF_MSG, frames[k], sizeof(frames[k]));
			} else {
				iov[k].iov_len = forge_frame(&fg, kind, frames[k], sizeof(frames[k]));
				kind = (kind + 1) % F_KINDS;
			}
			memset(&mm[k], 0, sizeof(mm[k]));
			mm[k].msg_hdr.msg_iov = &iov[k];
			mm[k].msg_hdr.msg_iovlen = 1;
		}
		k = sendmmsg(fd, mm, n, 0);
		if (k < 0) {
			failed += n;
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
				perror("flood: sendmmsg");
				return 1;
			}
			continue;
		}
		sent += k;
		failed += n - k;
	}
	t1 = now_ns();
	printf("forge start_ns %llu end_ns %llu sent %llu failed %llu pps %.0f\n",
	       (unsigned long long)t0, (unsigned long long)t1, (unsigned long long)sent,
	       (unsigned long long)failed, sent * 1e9 / (double)(t1 - t0));
	close(fd);
	return 0;
}

/* ------------------------------------------------------------ legit -- */

static int legit_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dst", 1, 0, 'd' }, { "rank", 1, 0, 'r' }, { "bits", 1, 0, 'b' },
		{ "pt", 1, 0, 'p' }, { "port", 1, 0, 'P' }, { "bind", 1, 0, 'B' },
		{ "count", 1, 0, 'c' }, { "ms", 1, 0, 't' }, { "len", 1, 0, 'l' },
		{ "timeout-ms", 1, 0, 'T' }, { "give-up-ms", 1, 0, 'G' }, { "stamps", 1, 0, 'S' },
		{ 0 }
	};
	struct spin_msg_args a = { .op = SPIN_OP_PUT, .flags = SPIN_F_ACK_REQ, .src_pid = 1 };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(SPIN_DEFAULT_PORT) };
	uint64_t count = 0, ms = 0, len = 8, timeout_ms = 200, give_up_ms = 30000;
	uint64_t acked = 0, not_now = 0, lost = 0, t0, t, last_ok, end = 0;
	const char *bind_ip = NULL, *stamps = NULL;
	int bad = 0;
	uint16_t port = SPIN_DEFAULT_PORT;
	static uint8_t buf[65536], rbuf[65536];
	struct spin_sock *s;
	FILE *sf = NULL;
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': inet_pton(AF_INET, optarg, &dst.sin_addr); break;
		case 'r': a.src_rank = num(optarg); break;
		case 'b': a.match_bits = num(optarg); break;
		case 'p': a.pt_index = num(optarg); break;
		case 'P': port = num(optarg); dst.sin_port = htons(port); break;
		case 'B': bind_ip = optarg; break;
		case 'c': count = num(optarg); break;
		case 't': ms = num(optarg); break;
		case 'l': len = num(optarg); break;
		case 'T': timeout_ms = num(optarg); break;
		case 'G': give_up_ms = num(optarg); break;
		case 'S': stamps = optarg; break;
		default: return 2;
		}
	}
	if (!dst.sin_addr.s_addr || (!count && !ms) || len > sizeof(buf)) {
		fprintf(stderr, "flood legit: needs --dst and --count or --ms\n");
		return 2;
	}
	if (stamps && !(sf = fopen(stamps, "w"))) {
		perror(stamps);
		return 1;
	}
	err = spin_sock_open(bind_ip, port, &s);
	if (err) {
		fprintf(stderr, "flood: %s\n", spin_errmsg());
		return 1;
	}
	memset(buf, 0xab, len);
	t0 = last_ok = now_ns();
	if (ms)
		end = t0 + ms * 1000000ull;
	while (count ? acked < count : now_ns() < end) {
		uint64_t sent_at, dl;
		uint32_t id = spin_next_msg_id();
		int fail = -1;

		a.msg_id = id;
		err = spin_sock_send(s, &dst, &a, buf, (uint32_t)len, NULL);
		if (err) {
			fprintf(stderr, "flood: send: %s\n", spin_errmsg());
			return 1;
		}
		sent_at = now_ns();
		dl = sent_at + timeout_ms * 1000000ull;
		/* the ack of this message (others are late acks of earlier tries) */
		while ((t = now_ns()) < dl) {
			struct spin_hdr h;
			int n = spin_sock_recv_pkt(s, &h, rbuf, sizeof(rbuf), NULL,
						   (int)((dl - t + 999999) / 1000000));

			if (n < 0)
				break;
			if (h.op == SPIN_OP_ACK && ntohl(h.msg_id) == id) {
				fail = (int)be64toh(h.user_hdr[1]);
				break;
			}
		}
		t = now_ns();
		if (fail == 0) {
			acked++;
			last_ok = t;
			if (sf)
				fprintf(sf, "%llu\n", (unsigned long long)t);
			continue;
		}
		if (t - last_ok > give_up_ms * 1000000ull) {
			fprintf(stderr, "flood: no message acked for %llu ms (fail %d)\n",
				(unsigned long long)give_up_ms, fail);
			bad = 1;
			break;
		}
		if (fail < 0) {
			lost++;
		} else if (fail == SPIN_FAIL_QUEUE_FULL) {
			struct timespec ts = { 0, 1000000 };

			not_now++;
			nanosleep(&ts, NULL);
		} else {
			fprintf(stderr, "flood: message %u refused: failure %d\n", id, fail);
			bad = 1;
			break;
		}
	}
	t = now_ns();
	printf("legit acked %llu not_now %llu lost %llu ms %llu rate %.0f\n",
	       (unsigned long long)acked, (unsigned long long)not_now, (unsigned long long)lost,
	       (unsigned long long)((t - t0) / 1000000), acked * 1e9 / (double)(t - t0));
	if (sf)
		fclose(sf);
	spin_sock_close(s);
	return bad || (count && acked < count) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "forge"))
		return forge_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "legit"))
		return legit_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: flood forge ... | flood legit ... (see the source)\n");
	return 2;
}
