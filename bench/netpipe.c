// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * netpipe: NetPIPE-style latency and bandwidth between two processes, over
 * the host baselines of the spin Portals library (bench/netpipe_ptl.c):
 *
 *   --transport udp   kernel UDP sockets: a message is cut into 1472-byte
 *                     datagrams (12-byte header seq/offset/length + 1460
 *                     data bytes), sent with sendmmsg() and received with
 *                     recvmmsg() (blocking, MSG_WAITFORONE) straight into
 *                     the message buffer at the expected offset; a datagram
 *                     that arrives elsewhere is moved to its offset.
 *   --gso             the same datagrams, sent as UDP GSO super-datagrams
 *                     (UDP_SEGMENT 1472, up to 44 segments each)
 *   --gro             the receiver enables UDP_GRO and splits coalesced
 *                     datagrams itself (one more copy, fewer system calls)
 *   --transport xsk   libspin's AF_XDP path: spin_xsk_send() (frames built
 *                     in UMEM, one kick per batch) and spin_xsk_recv_msg()
 *                     (the runtime redirects packets of an SPIN_ME_XSK entry
 *                     to the socket; user space reassembles)
 *   --transport tcp   one kernel TCP connection (rank 1 listens on --port,
 *                     7801, at its hostfile address; rank 0 connects),
 *                     TCP_NODELAY, 4 MiB socket buffers; a message is one
 *                     write of its bytes (looped over partial writes), the
 *                     boundaries are implicit (both sides know the size);
 *                     the receiver reads straight into the message buffer
 *                     (at least 1 MiB: a stream of small messages is read
 *                     in large chunks, each message at a multiple of its
 *                     size), never past the last byte asked for; poll()
 *                     bounds the wait for the next byte (--timeout-ms; TCP
 *                     loses nothing, so a timeout is a stall: netpipe.sh
 *                     gives tcp 10 s; after one, both ranks start the next
 *                     phase on a new connection).  The kernel retransmits
 *                     what a lossy link drops: the baseline for spin's
 *                     reliable puts.
 *   --busy            the receiver busy-polls (non-blocking receives)
 *
 * The measurement and the control protocol are in bench/netpipe.h.
 * Run by bench/netpipe.sh; alone: SPIN_HOSTFILE=... SPIN_RANK=0|1
 * [SPIN_IFACE=veth0] bench/netpipe --transport udp|tcp|xsk [options].
 */
#include <endian.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <linux/sockios.h>

#include "netpipe.h"
#include <spin/xsk.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

enum { O_TRANSPORT = O_TR_BASE, O_PORT, O_GSO, O_GRO, O_BUSY, O_IFACE, O_FRAMES, O_PT };

static const struct option tr_opts[] = {
	{ "transport", required_argument, 0, O_TRANSPORT },
	{ "port", required_argument, 0, O_PORT },
	{ "gso", no_argument, 0, O_GSO },
	{ "gro", no_argument, 0, O_GRO },
	{ "busy", no_argument, 0, O_BUSY },
	{ "iface", required_argument, 0, O_IFACE },
	{ "frames", required_argument, 0, O_FRAMES },
	{ "pt", required_argument, 0, O_PT },
	{ 0 },
};

static const char usage[] =
"usage: netpipe --transport udp|tcp|xsk [options]   (SPIN_HOSTFILE, SPIN_RANK set)\n"
"  --port P       udp: the UDP port (7800); tcp: rank 1's listening port (7801)\n"
"  --gso          udp: send with UDP GSO (UDP_SEGMENT)\n"
"  --gro          udp: receive with UDP_GRO\n"
"  --busy         busy-poll receives (udp, tcp, xsk)\n"
"  --iface IF     xsk: interface (default $SPIN_IFACE)\n"
"  --frames N     xsk: UMEM frames (16384)\n"
"  --pt N         xsk: portal index of the SPIN_ME_XSK entry (9)\n";

static const char *transport = "udp";
static uint16_t opt_port;		/* --port; 0: the transport's default */
static int opt_gso, opt_gro, opt_busy;
static const char *opt_iface;
static uint32_t opt_frames = 16384, opt_pt = 9;

static void tr_opt(int c, const char *a)
{
	switch (c) {
	case O_TRANSPORT: transport = a; break;
	case O_PORT: opt_port = (uint16_t)atoi(a); break;
	case O_GSO: opt_gso = 1; break;
	case O_GRO: opt_gro = 1; break;
	case O_BUSY: opt_busy = 1; break;
	case O_IFACE: opt_iface = a; break;
	case O_FRAMES: opt_frames = (uint32_t)atoi(a); break;
	case O_PT: opt_pt = (uint32_t)atoi(a); break;
	}
}

/* ------------------------------------------------------------------ UDP -- */

#define UDP_DGRAM	1472			/* 1500-byte MTU - IPv4 - UDP */
#define UDP_HDRLEN	12
#define UDP_DATA	(UDP_DGRAM - UDP_HDRLEN)	/* 1460 */
#define UDP_GSO_SEGS	44			/* 44 * 1472 < 65507 */
#define RX_BATCH	64
#define TX_BATCH	256			/* datagrams (or GSO packets) per sendmmsg */
#define NSLOTS		16
#define GRO_BUF		(64 * 1024)

struct udp_hdr {
	uint32_t seq, off, len;
};

struct udp_ctx {
	int fd;
	uint8_t *sbuf, *rbuf;
	size_t cap;
	uint32_t tx_seq;		/* next message sequence number */
	uint32_t min_seq;		/* older ones are stale */
	uint32_t max_seen;
	size_t spec;			/* where the next datagram probably goes */
	struct { uint32_t seq, got; int used; } slot[NSLOTS];
	/* receive batch */
	struct mmsghdr rm[RX_BATCH];
	struct iovec riov[RX_BATCH][2];
	struct udp_hdr rh[RX_BATCH];
	uint8_t *grobuf;		/* --gro: RX_BATCH buffers of GRO_BUF */
	/* send batch */
	struct mmsghdr sm[TX_BATCH];
	struct iovec *siov;		/* 2 per datagram */
	struct udp_hdr *sh;		/* one per datagram */
	uint64_t ooo, stale, rx_dgrams, rx_calls, tx_calls, tx_dgrams;
};

static int udp_buffers(void *p, size_t max, void **sbuf, void **rbuf)
{
	struct udp_ctx *c = p;

	c->cap = max;
	/* room for a datagram received at the expected offset past the end */
	c->sbuf = aligned_alloc(4096, (max + UDP_DATA + 4095) & ~(size_t)4095);
	c->rbuf = aligned_alloc(4096, (max + UDP_DATA + 4095) & ~(size_t)4095);
	if (!c->sbuf || !c->rbuf)
		return -1;
	memset(c->sbuf, 0, max);
	memset(c->rbuf, 0, max + UDP_DATA);
	*sbuf = c->sbuf;
	*rbuf = c->rbuf;
	return 0;
}

static int udp_send(void *p, const void *buf, size_t len)
{
	struct udp_ctx *c = p;
	uint32_t seq = c->tx_seq++;
	size_t ndg = len ? (len + UDP_DATA - 1) / UDP_DATA : 1, d = 0;
	size_t per = opt_gso ? UDP_GSO_SEGS : 1;	/* datagrams per sendmmsg entry */

	while (d < ndg) {
		unsigned int nm = 0;
		size_t hi = 0;

		/* fill up to TX_BATCH entries of `per` datagrams each */
		while (nm < TX_BATCH && d < ndg) {
			size_t k = 0, niov = 0;
			struct iovec *iov = &c->siov[hi * 2];

			while (k < per && d < ndg) {
				size_t off = d * UDP_DATA, n = len - off < UDP_DATA ? len - off : UDP_DATA;
				struct udp_hdr *h = &c->sh[hi];

				if (!len)
					n = 0;
				h->seq = seq;
				h->off = (uint32_t)off;
				h->len = (uint32_t)len;
				iov[niov++] = (struct iovec){ h, UDP_HDRLEN };
				iov[niov++] = (struct iovec){ (uint8_t *)buf + off, n };
				hi++, k++, d++;
			}
			c->sm[nm].msg_hdr = (struct msghdr){ .msg_iov = iov, .msg_iovlen = niov };
			nm++;
		}
		for (unsigned int done = 0; done < nm;) {
			int r = sendmmsg(c->fd, c->sm + done, nm - done, 0);

			c->tx_calls++;
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == ENOBUFS || errno == EAGAIN) {
					usleep(50);	/* the device queue is full */
					continue;
				}
				np_log("udp: sendmmsg: %s", strerror(errno));
				return -1;
			}
			done += (unsigned int)r;
		}
		c->tx_dgrams += hi;
	}
	return 0;
}

/* One datagram's data is at `at`; it belongs at h->off (copied there from
 * the GRO buffer, moved there if it was received in the wrong place).
 * Returns 1 when it completes a message. */
static int udp_account(struct udp_ctx *c, const struct udp_hdr *h, const uint8_t *at,
		       size_t dlen, int gro)
{
	int i, fr = -1;

	if ((int32_t)(h->seq - c->min_seq) < 0 || h->off + dlen > c->cap) {
		c->stale++;
		return 0;
	}
	if (gro) {
		memcpy(c->rbuf + h->off, at, dlen);
	} else if (at != c->rbuf + h->off) {
		memmove(c->rbuf + h->off, at, dlen);
		c->ooo++;
	}
	if ((int32_t)(h->seq - c->max_seen) > 0)
		c->max_seen = h->seq;
	c->spec = h->off + dlen >= h->len ? 0 : h->off + dlen;
	if (dlen >= h->len)			/* single-datagram message */
		return 1;
	for (i = 0; i < NSLOTS; i++) {
		if (c->slot[i].used && c->slot[i].seq == h->seq)
			break;
		if (!c->slot[i].used && fr < 0)
			fr = i;
	}
	if (i == NSLOTS) {
		if (fr < 0) {		/* forget the oldest partial message */
			fr = 0;
			for (i = 1; i < NSLOTS; i++)
				if ((int32_t)(c->slot[i].seq - c->slot[fr].seq) < 0)
					fr = i;
			c->stale++;
		}
		i = fr;
		c->slot[i].used = 1;
		c->slot[i].seq = h->seq;
		c->slot[i].got = 0;
	}
	c->slot[i].got += (uint32_t)dlen;
	if (c->slot[i].got >= h->len) {
		c->slot[i].used = 0;
		return 1;
	}
	return 0;
}

static size_t udp_partial(struct udp_ctx *c)
{
	size_t b = 0;

	for (int i = 0; i < NSLOTS; i++)
		if (c->slot[i].used)
			b += c->slot[i].got;
	return b;
}

static uint64_t udp_recv(void *p, size_t len, uint64_t n, int timeout_ms)
{
	struct udp_ctx *c = p;
	size_t ndg = len ? (len + UDP_DATA - 1) / UDP_DATA : 1;
	uint64_t got = 0;
	double deadline = 0;

	if (opt_busy)
		deadline = np_now() + timeout_ms / 1e3;
	while (got < n) {
		/* datagrams still to come (never more: the next phase's belong
		 * to the next call) */
		uint64_t want = (n - got) * ndg - udp_partial(c) / UDP_DATA;
		unsigned int vlen = want < RX_BATCH ? (unsigned int)want : RX_BATCH;
		size_t spec = c->spec;
		int r, flags = opt_busy ? MSG_DONTWAIT : MSG_WAITFORONE;

		if (!vlen)
			vlen = 1;
		for (unsigned int i = 0; i < vlen; i++) {
			if (opt_gro) {
				c->riov[i][0] = (struct iovec){ c->grobuf + (size_t)i * GRO_BUF, GRO_BUF };
				c->rm[i].msg_hdr = (struct msghdr){ .msg_iov = c->riov[i], .msg_iovlen = 1 };
				continue;
			}
			c->riov[i][0] = (struct iovec){ &c->rh[i], UDP_HDRLEN };
			c->riov[i][1] = (struct iovec){ c->rbuf + spec, UDP_DATA };
			c->rm[i].msg_hdr = (struct msghdr){ .msg_iov = c->riov[i], .msg_iovlen = 2 };
			spec += UDP_DATA;
			if (spec >= len)
				spec = 0;
		}
		r = recvmmsg(c->fd, c->rm, vlen, flags, NULL);
		c->rx_calls++;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (opt_busy && np_now() < deadline)
					continue;
				return got;	/* SO_RCVTIMEO passed: lost */
			}
			np_log("udp: recvmmsg: %s", strerror(errno));
			return got;
		}
		if (opt_busy)
			deadline = np_now() + timeout_ms / 1e3;
		for (int i = 0; i < r; i++) {
			size_t ml = c->rm[i].msg_len;

			if (opt_gro) {
				/* coalesced datagrams of UDP_DGRAM bytes (the last
				 * may be short); copy each to its offset */
				uint8_t *b = c->riov[i][0].iov_base;

				for (size_t o = 0; o < ml; o += UDP_DGRAM) {
					size_t dl = ml - o < UDP_DGRAM ? ml - o : UDP_DGRAM;
					struct udp_hdr h;

					if (dl < UDP_HDRLEN)
						break;
					memcpy(&h, b + o, UDP_HDRLEN);
					c->rx_dgrams++;
					got += (uint64_t)udp_account(c, &h, b + o + UDP_HDRLEN,
								     dl - UDP_HDRLEN, 1);
				}
				continue;
			}
			if (ml < UDP_HDRLEN) {
				c->stale++;
				continue;
			}
			c->rx_dgrams++;
			got += (uint64_t)udp_account(c, &c->rh[i], c->riov[i][1].iov_base,
						     ml - UDP_HDRLEN, 0);
		}
	}
	return got;
}

static void udp_resync(void *p)
{
	struct udp_ctx *c = p;
	uint8_t b[2048];

	usleep(200000);
	while (recv(c->fd, b, sizeof(b), MSG_DONTWAIT) >= 0)
		;
	memset(c->slot, 0, sizeof(c->slot));
	c->min_seq = c->max_seen + 1;
	c->spec = 0;
}

static void udp_report(void *p, FILE *f)
{
	struct udp_ctx *c = p;

	fprintf(f, "netpipe[%u]: udp%s%s%s: tx %llu datagrams in %llu sendmmsg, rx %llu "
		"datagrams in %llu recvmmsg, %llu out of place, %llu stale\n", np_o.rank,
		opt_gso ? " gso" : "", opt_gro ? " gro" : "", opt_busy ? " busy" : "",
		(unsigned long long)c->tx_dgrams, (unsigned long long)c->tx_calls,
		(unsigned long long)c->rx_dgrams, (unsigned long long)c->rx_calls,
		(unsigned long long)c->ooo, (unsigned long long)c->stale);
}

static void udp_setup(struct np_transport *t)
{
	static struct udp_ctx c;
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(opt_port),
				  .sin_addr = np_o.my_ip };
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(opt_port),
				    .sin_addr = np_o.peer_ip };
	int rb = 256 << 20, sb = 16 << 20, one = 1, seg = UDP_DGRAM;
	struct timeval tv = { np_o.timeout_ms / 1000, (np_o.timeout_ms % 1000) * 1000 };
	size_t per = opt_gso ? UDP_GSO_SEGS : 1;

	c.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (c.fd < 0)
		np_die("udp: socket: %s", strerror(errno));
	/* large buffers (root: past rmem_max): a stream must not overflow */
	if (setsockopt(c.fd, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof(rb)))
		setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	if (setsockopt(c.fd, SOL_SOCKET, SO_SNDBUFFORCE, &sb, sizeof(sb)))
		setsockopt(c.fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(c.fd, (struct sockaddr *)&me, sizeof(me)) ||
	    connect(c.fd, (struct sockaddr *)&peer, sizeof(peer)))
		np_die("udp: bind/connect: %s", strerror(errno));
	if (opt_gso && setsockopt(c.fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		np_die("udp: UDP_SEGMENT: %s", strerror(errno));
	if (opt_gro) {
		if (setsockopt(c.fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)))
			np_die("udp: UDP_GRO: %s", strerror(errno));
		c.grobuf = malloc((size_t)RX_BATCH * GRO_BUF);
		if (!c.grobuf)
			np_die("out of memory");
	}
	c.siov = calloc(TX_BATCH * per * 2, sizeof(*c.siov));
	c.sh = calloc(TX_BATCH * per, sizeof(*c.sh));
	if (!c.siov || !c.sh)
		np_die("out of memory");
	c.tx_seq = 1;
	c.min_seq = 1;
	t->name = opt_gso ? (opt_gro ? "udp_gso_gro" : "udp_gso") : (opt_gro ? "udp_gro" : "udp");
	if (opt_busy)
		t->name = opt_gso ? "udp_gso_busy" : "udp_busy";
	t->ctx = &c;
	t->buffers = udp_buffers;
	t->send = udp_send;
	t->recv = udp_recv;
	t->resync = udp_resync;
	t->report = udp_report;
}

/* ------------------------------------------------------------------ TCP -- */

#define TCP_BUF		(4 << 20)	/* SO_SNDBUF and SO_RCVBUF asked for */
#define TCP_CHUNK	(1 << 20)	/* least receive buffer: chunks of a stream */

struct tcp_ctx {
	int fd;
	int lfd;			/* rank 1: the listening socket, for resyncs */
	uint8_t *sbuf, *rbuf;
	size_t rcap;			/* bytes at rbuf: max(max, TCP_CHUNK) */
	uint64_t tx_bytes, tx_calls, tx_waits, rx_bytes, rx_calls, rx_waits;
	uint64_t resyncs, dropped;	/* reconnections, bytes they threw away */
	uint64_t retrans;		/* segments retransmitted on closed connections */
};

static struct tcp_ctx tc = { .fd = -1, .lfd = -1 };

static int tcp_buffers(void *p, size_t max, void **sbuf, void **rbuf)
{
	struct tcp_ctx *c = p;

	c->rcap = max > TCP_CHUNK ? max : TCP_CHUNK;
	c->sbuf = aligned_alloc(4096, (max + 4095) & ~(size_t)4095);
	c->rbuf = aligned_alloc(4096, (c->rcap + 4095) & ~(size_t)4095);
	if (!c->sbuf || !c->rbuf)
		return -1;
	memset(c->sbuf, 0, max);
	memset(c->rbuf, 0, c->rcap);
	*sbuf = c->sbuf;
	*rbuf = c->rbuf;
	return 0;
}

/* Wait at most timeout_ms for ev on fd: 1 ready (or an error the next call
 * reports), 0 timed out, -1 poll failed. */
static int tcp_wait(int fd, short ev, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	double deadline = np_now() + timeout_ms / 1e3;

	for (;;) {
		int left = (int)((deadline - np_now()) * 1e3 + 0.999), r;

		r = poll(&pfd, 1, left > 0 ? left : 0);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* The whole message, looped over partial writes; a send buffer that stays
 * full for 2 * --timeout-ms (the peer stopped reading) fails it. */
static int tcp_send(void *p, const void *buf, size_t len)
{
	struct tcp_ctx *c = p;
	const uint8_t *b = buf;
	size_t off = 0;

	while (off < len) {
		ssize_t r = send(c->fd, b + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		int w;

		c->tx_calls++;
		if (r > 0) {
			off += (size_t)r;
			c->tx_bytes += (uint64_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->tx_waits++;
			w = tcp_wait(c->fd, POLLOUT, 2 * np_o.timeout_ms);
			if (w > 0)
				continue;
			if (w == 0)
				np_log("tcp: send of %zu bytes: no room for %d ms after %zu bytes", len,
				       2 * np_o.timeout_ms, off);
			else
				np_log("tcp: poll: %s", strerror(errno));
			return -1;
		}
		np_log("tcp: send: %s", r < 0 ? strerror(errno) : "nothing written");
		return -1;
	}
	return 0;
}

/* n messages of len bytes, each at rbuf + k * len (k = 0 for the first;
 * a stream wraps at the last whole message that fits).  Never reads past
 * the n-th message: the next phase's bytes stay in the socket.  Gives up
 * when no byte came for timeout_ms; returns the whole messages read. */
static uint64_t tcp_recv(void *p, size_t len, uint64_t n, int timeout_ms)
{
	struct tcp_ctx *c = p;
	uint64_t want = (uint64_t)len * n, got = 0;
	size_t wrap = c->rcap / len * len, at = 0;
	double deadline = np_now() + timeout_ms / 1e3;
	int ready = 0;		/* the last read filled what it asked for */

	while (got < want) {
		size_t ask = wrap - at;
		ssize_t r;

		if (ask > want - got)
			ask = (size_t)(want - got);
		if (!ready && !opt_busy) {
			/* wait first: in a ping-pong the bytes are not there yet */
			int w = tcp_wait(c->fd, POLLIN, timeout_ms);

			c->rx_waits++;
			if (w < 0)
				np_log("tcp: poll: %s", strerror(errno));
			if (w <= 0)
				break;
		}
		r = recv(c->fd, c->rbuf + at, ask, MSG_DONTWAIT);
		c->rx_calls++;
		if (r > 0) {
			got += (uint64_t)r;
			c->rx_bytes += (uint64_t)r;
			at += (size_t)r;
			if (at == wrap)
				at = 0;
			ready = (size_t)r == ask;
			if (opt_busy)
				deadline = np_now() + timeout_ms / 1e3;
			continue;
		}
		if (r == 0) {
			np_log("tcp: the peer closed the connection");
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			np_log("tcp: recv: %s", strerror(errno));
			break;
		}
		ready = 0;
		if (opt_busy && np_now() > deadline)
			break;
	}
	return got / len;
}

/* Large buffers (root: past wmem_max/rmem_max), set before listen() or
 * connect() so the window scale covers them. */
static void tcp_bufsize(int fd)
{
	int b = TCP_BUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &b, sizeof(b)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof(b)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
}

/* Rank 0: a new connection to rank 1's listening socket, retried for up to
 * 10 s (rank 1 may not listen yet). */
static int tcp_connect(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(opt_port),
				  .sin_addr = np_o.peer_ip };
	double t0 = np_now();
	int fd, err, one = 1;

	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			np_die("tcp: socket: %s", strerror(errno));
		tcp_bufsize(fd);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		err = errno;
		close(fd);
		if (np_now() - t0 > 10)
			np_die("tcp: cannot connect to %s:%u: %s", inet_ntoa(np_o.peer_ip), opt_port,
			       strerror(err));
		usleep(20000);
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		np_die("tcp: TCP_NODELAY: %s", strerror(errno));
	return fd;
}

/* Rank 1: the next connection from rank 0 (it inherits the buffer sizes). */
static int tcp_accept(void)
{
	int fd, one = 1;

	if (tcp_wait(tc.lfd, POLLIN, 30000) <= 0)
		np_die("tcp: no connection from rank 0 within 30 s");
	fd = accept4(tc.lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		np_die("tcp: accept: %s", strerror(errno));
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		np_die("tcp: TCP_NODELAY: %s", strerror(errno));
	return fd;
}

/* After a failure (a stall longer than the timeout: TCP loses nothing)
 * both sides must start the next phase at a message boundary with nothing
 * of the failed phase in flight, in either direction, and a byte stream
 * has no boundaries to look for.  So the connection is replaced: each side
 * closes it with a reset (SO_LINGER 0: what is queued is thrown away, late
 * segments are refused); rank 0, whose resync comes first (np_resync),
 * connects again at once, into rank 1's listen backlog, and rank 1 accepts
 * that connection in its own resync (NP_RESYNC). */
static void tcp_resync(void *p)
{
	struct tcp_ctx *c = p;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	int outq = 0, inq = 0;

	memset(&ti, 0, sizeof(ti));
	getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	ioctl(c->fd, SIOCOUTQ, &outq);
	ioctl(c->fd, SIOCINQ, &inq);
	np_log("tcp: resync: new connection; %d bytes unacknowledged, %d unread; rto %u us, "
	       "backoff %u, last data received %u ms ago", outq, inq, ti.tcpi_rto, ti.tcpi_backoff,
	       ti.tcpi_last_data_recv);
	c->dropped += (uint64_t)(outq > 0 ? outq : 0) + (uint64_t)(inq > 0 ? inq : 0);
	c->retrans += ti.tcpi_total_retrans;
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c->fd);
	c->fd = np_o.rank == 0 ? tcp_connect() : tcp_accept();
	c->resyncs++;
}

static void tcp_report(void *p, FILE *f)
{
	struct tcp_ctx *c = p;
	struct tcp_info ti;
	socklen_t tl = sizeof(ti), il = sizeof(int);
	int sb = 0, rb = 0;

	memset(&ti, 0, sizeof(ti));
	getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	getsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sb, &il);
	il = sizeof(int);
	getsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rb, &il);
	fprintf(f, "netpipe[%u]: tcp%s: tx %llu bytes in %llu sends (%llu waits for room), rx "
		"%llu bytes in %llu recvs (%llu polls), %llu resyncs (new connections, %llu bytes "
		"thrown away); sndbuf %d rcvbuf %d, rtt %u us, cwnd %u, %llu segments "
		"retransmitted\n", np_o.rank, opt_busy ? " busy" : "",
		(unsigned long long)c->tx_bytes, (unsigned long long)c->tx_calls,
		(unsigned long long)c->tx_waits, (unsigned long long)c->rx_bytes,
		(unsigned long long)c->rx_calls, (unsigned long long)c->rx_waits,
		(unsigned long long)c->resyncs, (unsigned long long)c->dropped, sb, rb, ti.tcpi_rtt,
		ti.tcpi_snd_cwnd, (unsigned long long)(c->retrans + ti.tcpi_total_retrans));
}

static void tcp_setup(struct np_transport *t)
{
	if (np_o.rank == 1) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(opt_port),
					  .sin_addr = np_o.my_ip };
		int one = 1;

		tc.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (tc.lfd < 0)
			np_die("tcp: socket: %s", strerror(errno));
		setsockopt(tc.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		tcp_bufsize(tc.lfd);	/* the accepted sockets inherit them */
		if (bind(tc.lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(tc.lfd, 1))
			np_die("tcp: listen on %s:%u: %s", inet_ntoa(np_o.my_ip), opt_port,
			       strerror(errno));
		tc.fd = tcp_accept();
	} else {
		tc.fd = tcp_connect();
	}
	t->name = opt_busy ? "tcp_busy" : "tcp";
	t->ctx = &tc;
	t->buffers = tcp_buffers;
	t->send = tcp_send;
	t->recv = tcp_recv;
	t->resync = tcp_resync;
	t->report = tcp_report;
}

/* ----------------------------------------------------------------- AF_XDP -- */

#define XSK_BITS 0x4e50	/* "NP" */

struct xsk_ctx {
	struct spin_rt *rt;
	struct spin_xsk *x;
	const char *ifname;
	int attached, me;
	uint32_t peer;
	uint64_t seq, min_seq, max_seen;
	uint8_t *sbuf, *rbuf;
	size_t cap;
	uint64_t stale, errors;
};

static struct xsk_ctx xc;

static int xsk_buffers(void *p, size_t max, void **sbuf, void **rbuf)
{
	struct xsk_ctx *c = p;

	c->cap = max;
	c->sbuf = aligned_alloc(4096, (max + 4095) & ~(size_t)4095);
	c->rbuf = aligned_alloc(4096, (max + 4095) & ~(size_t)4095);
	if (!c->sbuf || !c->rbuf)
		return -1;
	memset(c->sbuf, 0, max);
	memset(c->rbuf, 0, max);
	*sbuf = c->sbuf;
	*rbuf = c->rbuf;
	return 0;
}

static int xsk_send(void *p, const void *buf, size_t len)
{
	struct xsk_ctx *c = p;
	struct spin_msg_args a = {
		.op = SPIN_OP_PUT, .pt_index = (uint16_t)opt_pt, .match_bits = XSK_BITS,
		.hdr_data = ++c->seq,
	};
	int err = spin_xsk_send(c->x, c->peer, &a, buf, (uint32_t)len, NULL, NULL);

	if (err) {
		np_log("xsk: spin_xsk_send: %s", spin_errmsg());
		return -1;
	}
	return 0;
}

static uint64_t xsk_recv(void *p, size_t len, uint64_t n, int timeout_ms)
{
	struct xsk_ctx *c = p;
	uint64_t got = 0;
	double deadline = np_now() + timeout_ms / 1e3;

	while (got < n) {
		struct spin_hdr h;
		int r = spin_xsk_recv_msg(c->x, &h, c->rbuf, c->cap, opt_busy ? 0 : timeout_ms);
		uint64_t s;

		if (r == -SPIN_ETIMEDOUT) {
			if (opt_busy && np_now() < deadline)
				continue;
			return got;
		}
		if (r < 0) {
			c->errors++;
			np_log("xsk: spin_xsk_recv_msg: %s", spin_errmsg());
			if (c->errors > 10)
				return got;
			continue;
		}
		s = be64toh(h.hdr_data);
		if (s < c->min_seq) {
			c->stale++;
			continue;
		}
		if (s > c->max_seen)
			c->max_seen = s;
		got++;
		if (opt_busy)
			deadline = np_now() + timeout_ms / 1e3;
	}
	return got;
}

static void xsk_resync(void *p)
{
	struct xsk_ctx *c = p;
	struct spin_hdr h;

	usleep(200000);
	while (spin_xsk_recv_msg(c->x, &h, c->rbuf, c->cap, 50) >= 0)
		c->max_seen = be64toh(h.hdr_data) > c->max_seen ? be64toh(h.hdr_data) : c->max_seen;
	c->min_seq = c->max_seen + 1;
}

static void xsk_report(void *p, FILE *f)
{
	struct xsk_ctx *c = p;
	struct spin_xsk_stats st;

	if (spin_xsk_stats(c->x, &st))
		return;
	fprintf(f, "netpipe[%u]: xsk (%s mode): tx %llu msgs %llu packets %llu kicks %llu waits, "
		"rx %llu msgs %llu packets, %llu stale partial, kernel rx dropped %llu ring full "
		"%llu fill empty %llu; %llu stale msgs\n", np_o.rank,
		st.zero_copy ? "zero-copy" : "copy", (unsigned long long)st.tx_msgs,
		(unsigned long long)st.tx_packets, (unsigned long long)st.tx_kicks,
		(unsigned long long)st.tx_waits, (unsigned long long)st.rx_msgs,
		(unsigned long long)st.rx_packets, (unsigned long long)st.rx_stale,
		(unsigned long long)st.k_rx_dropped, (unsigned long long)st.k_rx_ring_full,
		(unsigned long long)st.k_rx_fill_ring_empty, (unsigned long long)c->stale);
}

static void xsk_cleanup(void)
{
	if (xc.x)
		spin_xsk_close(xc.x);
	xc.x = NULL;
	if (xc.rt) {
		if (xc.me >= 0)
			spin_me_unlink(xc.rt, (uint32_t)xc.me);
		spin_pt_free(xc.rt, opt_pt);
		spin_close(xc.rt);
		xc.rt = NULL;
	}
	if (xc.attached)
		spin_detach(xc.ifname);
	xc.attached = 0;
}

static void xsk_setup(struct np_transport *t)
{
	struct spin_job j;
	struct spin_xsk_opts xo = { .queue = 0, .frames = opt_frames };
	struct spin_me_spec ms = {
		.pt_index = opt_pt, .list = SPIN_LIST_PRIORITY, .match_bits = XSK_BITS,
		.ignore_bits = 0, .match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
		.options = SPIN_ME_OP_PUT | SPIN_ME_XSK | SPIN_ME_EVENT_COMM_DISABLE |
			   SPIN_ME_EVENT_SUCCESS_DISABLE,
		.host_off = UINT64_MAX, .hhost_off = UINT64_MAX,
	};
	int err;

	xc.me = -1;
	xc.ifname = opt_iface ? opt_iface : getenv("SPIN_IFACE");
	if (!xc.ifname)
		np_die("xsk: no interface (--iface or SPIN_IFACE)");
	if (spin_job_load(&j, NULL))
		np_die("job: %s", spin_errmsg());
	err = spin_open(xc.ifname, &xc.rt);
	if (err == -SPIN_ENOENT) {
		struct spin_attach_opts ao = { .ifname = xc.ifname, .rank = j.rank };

		err = spin_attach(&ao, &xc.rt);
		xc.attached = !err;
	}
	if (err)
		np_die("xsk: runtime on %s: %s", xc.ifname, spin_errmsg());
	atexit(xsk_cleanup);
	if (spin_job_peers(xc.rt, &j) < 0)
		np_die("xsk: peers: %s", spin_errmsg());
	xc.peer = 1 - j.rank;
	spin_job_free(&j);
	err = spin_pt_alloc(xc.rt, opt_pt);
	if (err && err != -SPIN_EEXIST)
		np_die("xsk: pt %u: %s", opt_pt, spin_errmsg());
	xc.me = spin_me_append(xc.rt, &ms);
	if (xc.me < 0)
		np_die("xsk: me append: %s", spin_errmsg());
	err = spin_xsk_open(xc.rt, &xo, &xc.x);
	if (err)
		np_die("xsk: %s", spin_errmsg());
	xc.min_seq = 1;
	t->name = opt_busy ? "xsk_busy" : "xsk";
	t->ctx = &xc;
	t->buffers = xsk_buffers;
	t->send = xsk_send;
	t->recv = xsk_recv;
	t->resync = xsk_resync;
	t->report = xsk_report;
}

int main(int argc, char **argv)
{
	struct np_transport t = { 0 };

	np_parse(argc, argv, tr_opts, tr_opt, usage);
	np_job();
	/* SIGINT/SIGTERM: the default action.  No clean-up from a signal
	 * handler (it could wait for a lock the interrupted code holds);
	 * netpipe.sh detaches the runtime and removes the namespaces. */
	if (!strcmp(transport, "udp")) {
		if (!opt_port)
			opt_port = 7800;
		udp_setup(&t);
	} else if (!strcmp(transport, "tcp")) {
		if (!opt_port)
			opt_port = 7801;
		tcp_setup(&t);
	} else if (!strcmp(transport, "xsk")) {
		xsk_setup(&t);
	} else {
		np_die("unknown transport '%s' (udp, tcp or xsk)", transport);
	}
	return np_run(&t);
}
