// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * udp_seq: numbered UDP datagrams, to see what a link does to their order
 * (selftests/test_impair.sh).
 *
 *   udp_seq send IP PORT N [GAP_US]
 *       send datagrams 0 to N-1 (an 8-byte number each) to IP:PORT,
 *       GAP_US microseconds apart (default 20)
 *   udp_seq recv PORT N [QUIET_MS]
 *       receive until N distinct numbers came or none came for QUIET_MS
 *       (default 2000) after the first; print "received R distinct D
 *       inversions I": an inversion is a datagram whose number is below
 *       one that arrived before it
 *
 * Exit status: 0, 2 for a usage error, 1 for anything else.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static int usage(void)
{
	fprintf(stderr, "usage: udp_seq send IP PORT N [GAP_US]\n"
			"       udp_seq recv PORT N [QUIET_MS]\n");
	return 2;
}

/* a decimal number 1 to max (0 too if zero_ok) into *v, else -1 (said) */
static int num(const char *s, unsigned long max, int zero_ok, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	if (!*s || *s < '0' || *s > '9' || *end || errno || *v > max || (!zero_ok && !*v)) {
		fprintf(stderr, "udp_seq: '%s': give a number up to %lu\n", s, max);
		return -1;
	}
	return 0;
}

static int port_of(const char *s, uint16_t *port)
{
	unsigned long v;

	if (num(s, 65535, 0, &v))
		return -1;
	*port = (uint16_t)v;
	return 0;
}

static void pause_us(unsigned long us)
{
	struct timespec t = { .tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

static int do_send(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	unsigned long n, gap = 20;
	int s;

	if (argc < 3 || argc > 4 || inet_pton(AF_INET, argv[0], &to.sin_addr) != 1 ||
	    port_of(argv[1], &to.sin_port) || num(argv[2], 10000000, 0, &n) ||
	    (argc == 4 && num(argv[3], 1000000, 1, &gap)))
		return usage();
	to.sin_port = htons(to.sin_port);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return perror("udp_seq: socket"), 1;
	for (uint64_t i = 0; i < n; i++) {
		/* a full socket buffer: wait, the link is busy */
		while (sendto(s, &i, sizeof(i), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
				return perror("udp_seq: sendto"), 1;
		if (gap)
			pause_us(gap);
	}
	close(s);
	return 0;
}

static int do_recv(int argc, char **argv)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	unsigned long n, quiet = 2000, got = 0, distinct = 0, inversions = 0;
	uint64_t max = 0;
	unsigned char *seen;
	int s, big = 4 << 20;

	if (argc < 2 || argc > 3 || port_of(argv[0], &me.sin_port) ||
	    num(argv[1], 10000000, 0, &n) || (argc == 3 && num(argv[2], 600000, 0, &quiet)))
		return usage();
	me.sin_port = htons(me.sin_port);
	seen = calloc(n, 1);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (!seen || s < 0)
		return perror("udp_seq"), 1;
	setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	if (bind(s, (struct sockaddr *)&me, sizeof(me)))
		return perror("udp_seq: bind"), 1;
	while (distinct < n) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		uint64_t v;
		ssize_t r;

		/* the first datagram may take as long as the sender needs */
		if (poll(&p, 1, got ? (int)quiet : -1) == 0)
			break;
		r = recv(s, &v, sizeof(v), 0);
		if (r != sizeof(v) || v >= n)
			continue;
		if (got++ && v < max)
			inversions++;
		if (v > max)
			max = v;
		if (!seen[v]) {
			seen[v] = 1;
			distinct++;
		}
	}
	printf("received %lu distinct %lu inversions %lu\n", got, distinct, inversions);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "send"))
		return do_send(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "recv"))
		return do_recv(argc - 2, argv + 2);
	return usage();
}
