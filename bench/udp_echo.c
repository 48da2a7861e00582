// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/udp_echo - the host-CPU baseline of sPIN's streaming ping-pong.
 *
 * A process on a kernel UDP socket receives sPIN pings and answers each
 * packet with the pong the streaming ping-pong handler would send from the
 * device: a new single-packet message to the sender (src_rank = our rank,
 * the ping's job key, match bits 10, fresh message id,
 * flags |= SPIN_F_FROM_DEVICE) carrying the packet's payload.  One datagram
 * at a time; a multi-packet ping is answered packet by packet.
 *
 *   udp_echo [--bind IP] [--port N] [--rank R] [--pid P] [--busy]
 *            [--count N] [--quiet]
 *
 * --busy spins on non-blocking receives instead of sleeping in poll().
 * Runs until --count packets were echoed (0: forever) or SIGINT/SIGTERM,
 * then prints one summary line.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <spin/spin.h>

#define PONG_MATCH_BITS	10

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: udp_echo [--bind IP] [--port N] [--rank R] [--pid P] [--busy]\n"
		"                [--count N] [--quiet]\n"
		"  --bind IP    address to listen on (default 0.0.0.0)\n"
		"  --port N     sPIN UDP port (default %d)\n"
		"  --rank R     our rank, src_rank of the pongs (default 1)\n"
		"  --pid P      our Portals pid, src_pid of the pongs (default 0)\n"
		"  --busy       busy-poll the socket instead of blocking\n"
		"  --count N    exit after echoing N packets (default 0: run until signalled)\n"
		"  --quiet      no summary line\n", SPIN_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "rank", required_argument, NULL, 'r' },
		{ "pid", required_argument, NULL, 'P' },
		{ "busy", no_argument, NULL, 'B' },
		{ "count", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *bind_ip = "0.0.0.0";
	unsigned long port = SPIN_DEFAULT_PORT, rank = 1, pid = 0;
	unsigned long long count = 0, echoed = 0, errors = 0;
	int busy = 0, quiet = 0, c, rc;
	static unsigned char buf[65536];
	struct sigaction sa = { .sa_handler = on_signal };
	struct spin_sock *s;

	while ((c = getopt_long(argc, argv, "b:p:r:P:Bc:qh", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'b': bind_ip = optarg; break;
		case 'p': port = strtoul(optarg, &end, 0); break;
		case 'r': rank = strtoul(optarg, &end, 0); break;
		case 'P': pid = strtoul(optarg, &end, 0); break;
		case 'B': busy = 1; break;
		case 'c': count = strtoull(optarg, &end, 0); break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SPIN_EUSAGE;
		}
		if (end && *end) {
			fprintf(stderr, "udp_echo: bad number '%s'\n", optarg);
			return SPIN_EUSAGE;
		}
	}
	if (optind != argc || port == 0 || port > 65535) {
		usage(stderr);
		return SPIN_EUSAGE;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	rc = spin_sock_open(bind_ip, port, &s);
	if (rc) {
		fprintf(stderr, "udp_echo: %s\n", spin_errmsg());
		return -rc;
	}
	if (!quiet)
		fprintf(stderr, "udp_echo: listening on %s:%lu rank %lu (%s)\n",
			bind_ip, port, rank, busy ? "busy-poll" : "blocking");

	while (!stop && (!count || echoed < count)) {
		struct spin_msg_args a = {};
		struct sockaddr_in from;
		struct spin_hdr h;
		int n;

		/* blocking waits wake up every 200 ms to notice signals */
		n = spin_sock_recv_pkt(s, &h, buf, sizeof(buf), &from, busy ? 0 : 200);
		if (n == -SPIN_ETIMEDOUT)
			continue;
		if (n < 0) {
			errors++;
			if (!quiet)
				fprintf(stderr, "udp_echo: %s\n", spin_errmsg());
			continue;
		}
		/* the pong: the handler's put from device of this packet */
		a.op = SPIN_OP_PUT;
		a.pt_index = ntohs(h.pt_index);
		a.src_rank = rank;
		a.src_pid = pid;
		a.dst_rank = ntohl(h.src_rank);
		a.job_key = ntohl(h.job_key);
		a.msg_id = 0;			/* fresh */
		a.match_bits = PONG_MATCH_BITS;
		a.seg_size = n > SPIN_MAX_SEG ? n : SPIN_MAX_SEG;
		a.flags = ntohs(h.flags) | SPIN_F_FROM_DEVICE;
		rc = spin_sock_send(s, &from, &a, buf, n, NULL);
		if (rc) {
			errors++;
			if (!quiet)
				fprintf(stderr, "udp_echo: %s\n", spin_errmsg());
			continue;
		}
		echoed++;
	}
	if (!quiet)
		printf("udp_echo: echoed %llu packets, %llu errors\n", echoed, errors);
	spin_sock_close(s);
	return errors && !echoed ? SPIN_EIO : 0;
}
