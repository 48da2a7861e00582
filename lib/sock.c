// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin: the sPIN wire header and a plain UDP socket that speaks sPIN.
 *
 * This is the non-offloaded endpoint: hosts use it to send messages to a
 * runtime (or to another host) and to receive what handlers send back.  It
 * touches no BPF object.
 *
 * Socket semantics:
 *  - spin_sock_open(NULL or "", ...) binds to any address; port 0 lets the
 *    kernel pick one; SO_RCVBUF/SO_SNDBUF are 8 MiB (forced when allowed);
 *  - spin_sock_send() accepts seg_size up to what one UDP datagram holds
 *    (65419); the runtime itself only takes seg_size <= SPIN_MAX_SEG on a
 *    1500-byte MTU.  order[] lists packet indices in sending order; entries
 *    must be < the packet count and may repeat (to test duplicates);
 *  - spin_hdr_parse() is strict: a packet must carry exactly
 *    min(seg_size, msg_len - pkt_off) bytes at a multiple of seg_size (a
 *    GET: no bytes at pkt_off 0, msg_len being the requested length);
 *    receive calls skip datagrams that fail it;
 *  - spin_sock_send_get() sends one header-only GET datagram; the REPLY is
 *    an ordinary message for spin_sock_recv_msg() (same msg_id);
 *  - the fd is always O_NONBLOCK; waits are done with poll() inside the
 *    calls below, so callers may also poll spin_sock_fd() themselves;
 *  - one struct spin_sock is not thread-safe; use one per thread;
 *  - spin_sock_recv_pkt() reads the socket directly and never looks at the
 *    reassembly table of spin_sock_recv_msg();
 *  - spin_sock_recv_msg() keeps up to SPIN_REASM_PENDING partially received
 *    messages (any interleaving of up to that many messages is reassembled;
 *    when the table is full, packets of further new messages are dropped
 *    unless the least recently touched message saw no packet for
 *    SPIN_MSG_TIMEOUT_NS, which is then given up),
 *    ignores duplicate packets of a message and, best effort, duplicates of
 *    recently completed messages (SPIN_REASM_DONE_RING keys remembered for
 *    SPIN_TOMBSTONE_NS, as the runtime does; after that an id may be reused).
 *    Packets of other messages that arrive while one is being received are
 *    kept in that table, not dropped.  The table is lib/reasm.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <endian.h>

#include <spin/spin.h>

#include "libspin_internal.h"

#define SOCK_BUF_BYTES	(8 << 20)	/* SO_RCVBUF / SO_SNDBUF */
#define SOCK_BATCH	64		/* packets per sendmmsg */
#define SOCK_SEND_WAIT_MS 1000		/* give up when the socket stays full */
#define UDP_MAX_PAYLOAD	65507
#define SPIN_HOST_MAX_SEG (UDP_MAX_PAYLOAD - (int)sizeof(struct spin_hdr))

struct spin_sock {
	int fd;
	uint16_t port;
	uint32_t job_key;		/* $SPIN_JOB_KEY at open, 0: none */
	struct spin_auth auth;		/* $SPIN_AUTH_KEY at open, on 0: none */
	uint64_t rx_bad_auth;		/* datagrams dropped: tag not the key's */
	struct spin_reasm ra;		/* spin_sock_recv_msg's messages */
	uint8_t rxbuf[UDP_MAX_PAYLOAD + 1];
};

/* ------------------------------------------------------------ header -- */

void spin_hdr_build(struct spin_hdr *h, const struct spin_msg_args *a,
		    uint32_t msg_len, uint32_t pkt_off)
{
	uint16_t seg = a->seg_size ? a->seg_size : SPIN_MAX_SEG;
	int i;

	memset(h, 0, sizeof(*h));
	h->version = SPIN_VERSION;
	h->op = a->op ? a->op : SPIN_OP_PUT;
	h->flags = htons(a->flags);
	h->pt_index = htons(a->pt_index);
	h->seg_size = htons(seg);
	h->src_rank = htonl(a->src_rank);
	h->src_pid = htonl(a->src_pid);
	h->job_key = htonl(a->job_key);
	h->msg_id = htonl(a->msg_id);
	h->match_bits = htobe64(a->match_bits);
	h->msg_len = htonl(msg_len);
	h->pkt_off = htonl(pkt_off);
	h->remote_off = htobe64(a->remote_off);
	h->hdr_data = htobe64(a->hdr_data);
	for (i = 0; i < 4; i++)
		h->user_hdr[i] = htobe64(a->user_hdr[i]);
	spin_auth_sign(&a->auth, h);
}

/*
 * Validate a header.  A packet at pkt_off must carry exactly
 * min(seg_size, msg_len - pkt_off) bytes and pkt_off must be a multiple of
 * seg_size (wire.h).  Reads only the header bytes of udp_payload; `len` is
 * the whole UDP payload length.
 */
int spin_hdr_parse(const void *udp_payload, size_t len, struct spin_hdr *out)
{
	struct spin_hdr h;
	uint32_t msg_len, pkt_off, seg, pay, want;

	if (!udp_payload || len < sizeof(h) || len > UDP_MAX_PAYLOAD)
		return -1;
	memcpy(&h, udp_payload, sizeof(h));
	if (h.version != SPIN_VERSION)
		return -1;
	if (h.op == 0 || h.op >= SPIN_OP_MAX)
		return -1;
	seg = ntohs(h.seg_size);
	msg_len = ntohl(h.msg_len);
	pkt_off = ntohl(h.pkt_off);
	pay = len - sizeof(h);
	if (h.op == SPIN_OP_GET) {
		/* a request: msg_len is the requested length; no payload but
		 * a reliable re-get's bitmap (wire.h): whole words, one
		 * packet's worth at most */
		if (pkt_off || (pay && (!(ntohs(h.flags) & SPIN_F_REL) || pay % 8 ||
					pay > SPIN_MAX_SEG)))
			return -1;
		if (out)
			*out = h;
		return (int)pay;
	}
	if (seg == 0 || pkt_off % seg)
		return -1;
	if (pkt_off > msg_len || (pkt_off == msg_len && msg_len != 0))
		return -1;
	want = msg_len - pkt_off < seg ? msg_len - pkt_off : seg;
	if (pay != want)
		return -1;
	if (out)
		*out = h;
	return (int)pay;
}

/* ------------------------------------------------------- message ids -- */

static _Atomic uint32_t next_msg_id;
static pthread_once_t msg_id_once = PTHREAD_ONCE_INIT;

static void msg_id_init(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec ^ ((uint32_t)getpid() << 16);
	}
	atomic_store(&next_msg_id, r);
}

uint32_t spin_next_msg_id(void)
{
	uint32_t id;

	pthread_once(&msg_id_once, msg_id_init);
	do
		id = atomic_fetch_add_explicit(&next_msg_id, 1, memory_order_relaxed);
	while (id == 0);
	return id;
}

/* ------------------------------------------------------------ socket -- */

static void set_buf(int fd, int opt_force, int opt, int bytes)
{
	/* the FORCE variants ignore rmem_max/wmem_max but need CAP_NET_ADMIN */
	if (setsockopt(fd, SOL_SOCKET, opt_force, &bytes, sizeof(bytes)))
		(void)setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes));
}

int spin_sock_open(const char *bind_ip, uint16_t port, struct spin_sock **out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct spin_sock *s;
	struct spin_auth auth;
	uint32_t key;
	int fd, err;

	if (!out)
		return spin_seterr(SPIN_EUSAGE, "spin_sock_open: out is NULL");
	*out = NULL;
	if ((err = spin_job_key_env(&key)))
		return err;
	if ((err = spin_auth_key_env(&auth)))
		return err;
	if (bind_ip && *bind_ip && inet_pton(AF_INET, bind_ip, &sa.sin_addr) != 1)
		return spin_seterr(SPIN_EUSAGE,
				    "spin_sock_open: '%s' is not an IPv4 address", bind_ip);
	sa.sin_port = htons(port);

	s = calloc(1, sizeof(*s));
	if (!s)
		return spin_seterr(SPIN_EFAIL, "spin_sock_open: out of memory");
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		free(s);
		return spin_seterr(err == EPERM || err == EACCES ? SPIN_EPERM : SPIN_EIO,
				    "spin_sock_open: socket: %s", strerror(err));
	}
	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, SOCK_BUF_BYTES);
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, SOCK_BUF_BYTES);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno;
		close(fd);
		free(s);
		return spin_seterr(err == EADDRINUSE ? SPIN_EEXIST :
				    err == EACCES ? SPIN_EPERM : SPIN_EIO,
				    "spin_sock_open: bind %s:%u: %s%s", bind_ip && *bind_ip ?
				    bind_ip : "0.0.0.0", port, strerror(err),
				    err == EADDRINUSE ? " (another socket is bound to it)" :
				    err == EADDRNOTAVAIL ? " (address not on any interface here)" : "");
	}
	if (!getsockname(fd, (struct sockaddr *)&sa, &sl))
		port = ntohs(sa.sin_port);
	s->fd = fd;
	s->job_key = key;
	s->auth = auth;
	s->port = port;
	s->ra.who = "spin_sock_recv_msg";
	s->ra.remember_done = true;
	*out = s;
	return 0;
}

void spin_sock_close(struct spin_sock *s)
{
	if (!s)
		return;
	spin_reasm_free(&s->ra);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

int spin_sock_fd(struct spin_sock *s)
{
	return s ? s->fd : -1;
}

/* -------------------------------------------------------------- send -- */

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n;
}

int spin_check_order(const char *who, const uint32_t *order, uint32_t npkts)
{
	for (uint32_t i = 0; order && i < npkts; i++)
		if (order[i] >= npkts)
			return spin_seterr(SPIN_EUSAGE, "%s: order[%u]=%u but the message has %u packets",
					   who, i, order[i], npkts);
	return 0;
}

int spin_sock_send(struct spin_sock *s, const struct sockaddr_in *dst,
		   const struct spin_msg_args *a, const void *buf, uint32_t len,
		   const uint32_t *order)
{
	struct spin_hdr hdrs[SOCK_BATCH];
	struct iovec iov[SOCK_BATCH][2];
	struct mmsghdr mm[SOCK_BATCH];
	struct spin_msg_args args;
	uint32_t seg, npkts, i, n, done;
	int err;

	if (!s || !dst || !a || (len && !buf))
		return spin_seterr(SPIN_EUSAGE, "spin_sock_send: NULL argument");
	args = *a;
	seg = args.seg_size ? args.seg_size : SPIN_MAX_SEG;
	if (seg > SPIN_HOST_MAX_SEG)
		return spin_seterr(SPIN_EUSAGE,
				    "spin_sock_send: seg_size %u larger than a UDP datagram allows (%d)",
				    seg, SPIN_HOST_MAX_SEG);
	args.seg_size = seg;
	if (!args.msg_id)
		args.msg_id = spin_next_msg_id();
	if (!args.job_key)
		args.job_key = s->job_key;
	if (!args.auth.on)
		args.auth = s->auth;
	npkts = spin_npkts(len, seg);
	if (len > SPIN_MAX_MSG || npkts > SPIN_MSG_MAX_PKTS)
		return spin_seterr(SPIN_EUSAGE,
				   "spin_sock_send: %u bytes in %u-byte packets: a message has at most %u bytes and %u packets",
				   len, seg, SPIN_MAX_MSG, SPIN_MSG_MAX_PKTS);
	if ((err = spin_check_order("spin_sock_send", order, npkts)))
		return err;

	for (done = 0; done < npkts; ) {
		n = npkts - done < SOCK_BATCH ? npkts - done : SOCK_BATCH;
		for (i = 0; i < n; i++) {
			uint32_t idx = order ? order[done + i] : done + i;
			uint32_t off = idx * seg;
			uint32_t pay = len - off < seg ? len - off : seg;

			if (!len)
				pay = 0;
			spin_hdr_build(&hdrs[i], &args, len, off);
			iov[i][0].iov_base = &hdrs[i];
			iov[i][0].iov_len = sizeof(hdrs[i]);
			iov[i][1].iov_base = pay ? (uint8_t *)buf + off : NULL;
			iov[i][1].iov_len = pay;
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_name = (void *)dst;
			mm[i].msg_hdr.msg_namelen = sizeof(*dst);
			mm[i].msg_hdr.msg_iov = iov[i];
			mm[i].msg_hdr.msg_iovlen = pay ? 2 : 1;
		}
		for (i = 0; i < n; ) {
			int r = sendmmsg(s->fd, mm + i, n - i, 0);

			if (r > 0) {
				i += r;
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
				/* socket buffer or device queue full: wait a bit */
				if (wait_fd(s->fd, POLLOUT, SOCK_SEND_WAIT_MS) <= 0)
					return spin_seterr(SPIN_EIO,
							    "spin_sock_send: socket stayed full for %d ms",
							    SOCK_SEND_WAIT_MS);
				if (errno == ENOBUFS)
					usleep(50);
				continue;
			}
			return spin_seterr(SPIN_EIO, "spin_sock_send: sendmmsg to %s:%u: %s",
					    inet_ntoa(dst->sin_addr), ntohs(dst->sin_port),
					    r < 0 ? strerror(errno) : "nothing sent");
		}
		done += n;
	}
	return 0;
}

int spin_sock_send_get(struct spin_sock *s, const struct sockaddr_in *dst,
		       const struct spin_msg_args *a, uint32_t length, uint32_t *msg_id)
{
	struct spin_msg_args args;
	struct spin_hdr h;
	ssize_t n;

	if (!s || !dst || !a)
		return spin_seterr(SPIN_EUSAGE, "spin_sock_send_get: NULL argument");
	if (length > SPIN_MAX_MSG)
		return spin_seterr(SPIN_EUSAGE, "spin_sock_send_get: %u bytes requested, at most %u",
				   length, SPIN_MAX_MSG);
	args = *a;
	args.op = SPIN_OP_GET;
	if (!args.msg_id)
		args.msg_id = spin_next_msg_id();
	if (!args.job_key)
		args.job_key = s->job_key;
	if (!args.auth.on)
		args.auth = s->auth;
	spin_hdr_build(&h, &args, length, 0);
	for (;;) {
		n = sendto(s->fd, &h, sizeof(h), 0, (const struct sockaddr *)dst, sizeof(*dst));
		if (n == (ssize_t)sizeof(h))
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == ENOBUFS) &&
		    wait_fd(s->fd, POLLOUT, SOCK_SEND_WAIT_MS) > 0)
			continue;
		return spin_seterr(SPIN_EIO, "spin_sock_send_get: sendto %s:%u: %s",
				   inet_ntoa(dst->sin_addr), ntohs(dst->sin_port),
				   n < 0 ? strerror(errno) : "short send");
	}
	if (msg_id)
		*msg_id = args.msg_id;
	return 0;
}

/* ----------------------------------------------------------- receive -- */

/* Milliseconds left until deadline (timeout -1: forever). */
static int left_ms(int timeout_ms, uint64_t deadline)
{
	uint64_t t;

	if (timeout_ms < 0)
		return -1;
	t = spin_now_ms();
	return t >= deadline ? 0 : (int)(deadline - t);
}

/*
 * Receive one valid sPIN datagram: header into *h, payload into the iovec
 * after the header.  Invalid datagrams are skipped.  Returns the payload
 * length, -SPIN_ETIMEDOUT, -SPIN_ENOSPC (payload larger than cap; the
 * datagram is consumed) or -SPIN_EIO.
 */
static int recv_one(struct spin_sock *s, struct spin_hdr *h, void *buf, size_t cap,
		    struct sockaddr_in *from, int timeout_ms)
{
	uint64_t deadline = timeout_ms > 0 ? spin_now_ms() + timeout_ms : 0;
	struct spin_hdr raw;

	for (;;) {
		struct sockaddr_in sa;
		struct iovec iov[2] = {
			{ .iov_base = &raw, .iov_len = sizeof(raw) },
			{ .iov_base = buf, .iov_len = cap },
		};
		struct msghdr mh = {
			.msg_name = &sa, .msg_namelen = sizeof(sa),
			.msg_iov = iov, .msg_iovlen = 2,
		};
		ssize_t n;
		int pay;

		n = recvmsg(s->fd, &mh, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			int w;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return spin_seterr(SPIN_EIO, "spin_sock_recv: recvmsg: %s",
						    strerror(errno));
			if (timeout_ms == 0)
				return spin_seterr(SPIN_ETIMEDOUT, "spin_sock_recv: no packet");
			w = left_ms(timeout_ms, deadline);
			if (w == 0 || (w = wait_fd(s->fd, POLLIN, w)) == 0)
				return spin_seterr(SPIN_ETIMEDOUT,
						    "spin_sock_recv: no packet within %d ms",
						    timeout_ms);
			if (w < 0)
				return spin_seterr(SPIN_EIO, "spin_sock_recv: poll: %s",
						    strerror(errno));
			continue;
		}
		pay = spin_hdr_parse(&raw, (size_t)n, h);
		if (pay < 0)
			continue;	/* not sPIN or malformed: skip */
		if (!spin_auth_ok(&s->auth, &raw)) {
			s->rx_bad_auth++;	/* forged, or another job's: skip */
			continue;
		}
		if (mh.msg_flags & MSG_TRUNC)
			return spin_seterr(SPIN_ENOSPC,
					    "spin_sock_recv: %d-byte payload does not fit in %zu bytes",
					    pay, cap);
		if (from)
			*from = sa;
		return pay;
	}
}

int spin_sock_recv_pkt(struct spin_sock *s, struct spin_hdr *h, void *buf, size_t cap,
		       struct sockaddr_in *from, int timeout_ms)
{
	struct spin_hdr tmp;

	if (!s || (cap && !buf))
		return spin_seterr(SPIN_EUSAGE, "spin_sock_recv_pkt: NULL argument");
	return recv_one(s, h ? h : &tmp, buf, cap, from, timeout_ms);
}

int spin_sock_recv_msg(struct spin_sock *s, struct spin_hdr *h, void *buf, size_t cap,
		       struct sockaddr_in *from, int timeout_ms)
{
	struct spin_reasm_dst d = { .h = h, .buf = buf, .cap = cap, .from = from };
	uint64_t deadline = timeout_ms > 0 ? spin_now_ms() + timeout_ms : 0;

	if (!s || (cap && !buf))
		return spin_seterr(SPIN_EUSAGE, "spin_sock_recv_msg: NULL argument");

	for (;;) {
		struct spin_hdr ph;
		struct sockaddr_in sa;
		int pay, w, ret;

		w = left_ms(timeout_ms, deadline);
		if (timeout_ms > 0 && w == 0)
			return spin_seterr(SPIN_ETIMEDOUT,
					    "spin_sock_recv_msg: no complete message within %d ms",
					    timeout_ms);
		pay = recv_one(s, &ph, s->rxbuf, sizeof(s->rxbuf), &sa, w);
		if (pay < 0) {
			if (pay == -SPIN_ETIMEDOUT && timeout_ms > 0)
				return spin_seterr(SPIN_ETIMEDOUT,
						    "spin_sock_recv_msg: no complete message within %d ms",
						    timeout_ms);
			return pay;
		}
		ret = spin_reasm_pkt(&s->ra, &d, &ph, s->rxbuf, (uint32_t)pay, &sa);
		if (ret != SPIN_REASM_MORE)
			return ret;
	}
}
