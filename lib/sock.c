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
 *    min(seg_size, msg_len - pkt_off) bytes at a multiple of seg_size;
 *    receive calls skip datagrams that fail it;
 *  - the fd is always O_NONBLOCK; waits are done with poll() inside the
 *    calls below, so callers may also poll spin_sock_fd() themselves;
 *  - one struct spin_sock is not thread-safe; use one per thread;
 *  - spin_sock_recv_pkt() reads the socket directly and never looks at the
 *    reassembly table of spin_sock_recv_msg();
 *  - spin_sock_recv_msg() keeps up to SOCK_PENDING partially received
 *    messages (any interleaving of up to that many messages is reassembled;
 *    when the table is full, packets of further new messages are dropped
 *    unless the least recently touched message saw no packet for
 *    SPIN_MSG_TIMEOUT_NS, which is then given up),
 *    ignores duplicate packets of a message and, best effort, duplicates of
 *    recently completed messages (SOCK_DONE_RING keys remembered for
 *    SPIN_TOMBSTONE_NS, as the runtime does; after that an id may be reused).
 *    Packets of other messages that arrive while one is being received are
 *    kept in that table, not dropped.
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
#define SOCK_PENDING	16		/* messages being reassembled */
#define SOCK_DONE_RING	256		/* completed keys remembered (power of 2) */
#define SOCK_DONE_MS	(SPIN_TOMBSTONE_NS / 1000000) /* ... for this long, like the runtime */
#define SOCK_STALE_MS	(SPIN_MSG_TIMEOUT_NS / 1000000) /* incomplete message given up */
#define SOCK_SEND_WAIT_MS 1000		/* give up when the socket stays full */
#define UDP_MAX_PAYLOAD	65507
#define SPIN_HOST_MAX_SEG (UDP_MAX_PAYLOAD - (int)sizeof(struct spin_hdr))

struct pend_msg {
	int used;
	int discard;		/* too large for the caller: swallow the rest */
	uint32_t src_rank, msg_id;
	uint32_t msg_len, seg, npkts, got;
	uint64_t last_use;	/* ms, CLOCK_MONOTONIC */
	uint64_t *bitmap;
	uint8_t *data;
	struct spin_hdr hdr;	/* first packet's header, pkt_off set to 0 */
	struct sockaddr_in from;
};

struct done_key {
	uint64_t key;		/* (src_rank << 32 | msg_id) + 1, 0: empty */
	uint64_t t_ms;		/* when it was delivered */
};

struct spin_sock {
	int fd;
	uint16_t port;
	struct pend_msg pend[SOCK_PENDING];
	struct done_key done[SOCK_DONE_RING];	/* recently delivered messages */
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
	h->dst_rank = htonl(a->dst_rank);
	h->msg_id = htonl(a->msg_id);
	h->match_bits = htobe64(a->match_bits);
	h->msg_len = htonl(msg_len);
	h->pkt_off = htonl(pkt_off);
	h->remote_off = htobe64(a->remote_off);
	h->hdr_data = htobe64(a->hdr_data);
	for (i = 0; i < 4; i++)
		h->user_hdr[i] = htobe64(a->user_hdr[i]);
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
	int fd, err;

	if (!out)
		return spin_seterr(SPIN_EUSAGE, "spin_sock_open: out is NULL");
	*out = NULL;
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
	s->port = port;
	*out = s;
	return 0;
}

static void pend_free(struct pend_msg *p)
{
	free(p->bitmap);
	free(p->data);
	memset(p, 0, sizeof(*p));
}

void spin_sock_close(struct spin_sock *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < SOCK_PENDING; i++)
		pend_free(&s->pend[i]);
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

int spin_sock_send(struct spin_sock *s, const struct sockaddr_in *dst,
		   const struct spin_msg_args *a, const void *buf, uint32_t len,
		   const uint32_t *order)
{
	struct spin_hdr hdrs[SOCK_BATCH];
	struct iovec iov[SOCK_BATCH][2];
	struct mmsghdr mm[SOCK_BATCH];
	struct spin_msg_args args;
	uint32_t seg, npkts, i, n, done;

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
	npkts = len ? (uint32_t)(((uint64_t)len + seg - 1) / seg) : 1;
	if (order)
		for (i = 0; i < npkts; i++)
			if (order[i] >= npkts)
				return spin_seterr(SPIN_EUSAGE,
						    "spin_sock_send: order[%u]=%u but the message has %u packets",
						    i, order[i], npkts);

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

/* ----------------------------------------------------------- receive -- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline (timeout -1: forever). */
static int left_ms(int timeout_ms, uint64_t deadline)
{
	uint64_t t;

	if (timeout_ms < 0)
		return -1;
	t = now_ms();
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
	uint64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
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

static uint64_t key_of(uint32_t rank, uint32_t id)
{
	return ((uint64_t)rank << 32 | id) + 1;
}

static struct done_key *done_slot(struct spin_sock *s, uint64_t key)
{
	uint64_t x = key * 0x9e3779b97f4a7c15ull;

	return &s->done[(x >> 40) & (SOCK_DONE_RING - 1)];
}

/* Remember a delivered message, so that late duplicates are ignored. */
static void done_add(struct spin_sock *s, uint32_t rank, uint32_t id)
{
	struct done_key *d = done_slot(s, key_of(rank, id));

	d->key = key_of(rank, id);
	d->t_ms = now_ms();
}

/* A message delivered less than SOCK_DONE_MS ago (ids may be reused later,
 * e.g. by a restarted sender). */
static bool done_recent(struct spin_sock *s, uint64_t key)
{
	struct done_key *d = done_slot(s, key);

	return d->key == key && now_ms() - d->t_ms < SOCK_DONE_MS;
}

static struct pend_msg *pend_find(struct spin_sock *s, uint32_t rank, uint32_t id)
{
	int i;

	for (i = 0; i < SOCK_PENDING; i++)
		if (s->pend[i].used && s->pend[i].src_rank == rank && s->pend[i].msg_id == id)
			return &s->pend[i];
	return NULL;
}

/*
 * A free slot for a new message.  When the table is full, the least recently
 * touched message is given up if it saw no packet for SOCK_STALE_MS;
 * otherwise NULL: the new message's packet is dropped (messages in progress
 * win over new ones, as in the runtime's message table).
 */
static struct pend_msg *pend_new(struct spin_sock *s)
{
	struct pend_msg *old = NULL;
	int i;

	for (i = 0; i < SOCK_PENDING; i++) {
		if (!s->pend[i].used)
			return &s->pend[i];
		if (!old || s->pend[i].last_use < old->last_use)
			old = &s->pend[i];
	}
	if (now_ms() - old->last_use < SOCK_STALE_MS)
		return NULL;
	pend_free(old);
	return old;
}

/* Copy a completed message out to the caller and forget it. */
static int pend_deliver(struct spin_sock *s, struct pend_msg *p, struct spin_hdr *h,
			void *buf, size_t cap, struct sockaddr_in *from)
{
	int len = (int)p->msg_len;

	if (p->msg_len > cap) {
		/* started by an earlier call with a larger buffer */
		done_add(s, p->src_rank, p->msg_id);
		pend_free(p);
		return spin_seterr(SPIN_ENOSPC,
				    "spin_sock_recv_msg: message has %d bytes, buffer %zu; dropped",
				    len, cap);
	}

	if (h)
		*h = p->hdr;
	if (from)
		*from = p->from;
	if (len)
		memcpy(buf, p->data, len);
	done_add(s, p->src_rank, p->msg_id);
	pend_free(p);
	return len;
}

int spin_sock_recv_msg(struct spin_sock *s, struct spin_hdr *h, void *buf, size_t cap,
		       struct sockaddr_in *from, int timeout_ms)
{
	uint64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;

	if (!s || (cap && !buf))
		return spin_seterr(SPIN_EUSAGE, "spin_sock_recv_msg: NULL argument");

	for (;;) {
		struct spin_hdr ph;
		struct sockaddr_in sa;
		struct pend_msg *p;
		uint32_t rank, id, msg_len, seg, off, idx;
		uint64_t key;
		int pay, w;

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
		rank = ntohl(ph.src_rank);
		id = ntohl(ph.msg_id);
		msg_len = ntohl(ph.msg_len);
		seg = ntohs(ph.seg_size);
		off = ntohl(ph.pkt_off);
		key = key_of(rank, id);
		p = pend_find(s, rank, id);

		if (!p) {
			if (done_recent(s, key))
				continue;	/* duplicate of a delivered message */
			if (msg_len > cap) {
				/* remember it so its other packets are swallowed */
				p = pend_new(s);
				if (!p)
					return spin_seterr(SPIN_ENOSPC,
							   "spin_sock_recv_msg: message %u from rank %u has %u bytes, buffer %zu; dropped",
							   id, rank, msg_len, cap);
				p->used = 1;
				p->discard = 1;
				p->src_rank = rank;
				p->msg_id = id;
				p->msg_len = msg_len;
				p->seg = seg;
				p->npkts = msg_len ? (msg_len + seg - 1) / seg : 1;
				p->got = 1;
				p->last_use = now_ms();
				if (p->got == p->npkts) {
					done_add(s, rank, id);
					pend_free(p);
				}
				return spin_seterr(SPIN_ENOSPC,
						    "spin_sock_recv_msg: message %u from rank %u has %u bytes, buffer %zu; dropped",
						    id, rank, msg_len, cap);
			}
			if ((uint32_t)pay == msg_len) {
				/* single-packet message: no table, no extra state */
				if (h)
					*h = ph;
				if (from)
					*from = sa;
				if (pay)
					memcpy(buf, s->rxbuf, pay);
				done_add(s, rank, id);
				return pay;
			}
			p = pend_new(s);
			if (!p)
				continue;	/* table full of live messages: drop */
			p->npkts = (msg_len + seg - 1) / seg;
			p->bitmap = calloc((p->npkts + 63) / 64, sizeof(uint64_t));
			p->data = malloc(msg_len);
			if (!p->bitmap || !p->data) {
				pend_free(p);
				return spin_seterr(SPIN_EFAIL,
						    "spin_sock_recv_msg: out of memory for a %u-byte message",
						    msg_len);
			}
			p->used = 1;
			p->src_rank = rank;
			p->msg_id = id;
			p->msg_len = msg_len;
			p->seg = seg;
			p->hdr = ph;
			p->hdr.pkt_off = 0;
			p->from = sa;
		} else if (p->msg_len != msg_len || p->seg != seg) {
			continue;	/* inconsistent with the first packet: ignore */
		}
		p->last_use = now_ms();
		idx = off / seg;
		if (p->discard) {
			/* no bitmap: count packets, duplicates may end it early */
			if (++p->got >= p->npkts) {
				done_add(s, rank, id);
				pend_free(p);
			}
			continue;
		}
		if (p->bitmap[idx / 64] & (1ull << (idx % 64)))
			continue;	/* duplicate packet */
		p->bitmap[idx / 64] |= 1ull << (idx % 64);
		memcpy(p->data + off, s->rxbuf, pay);
		if (++p->got == p->npkts)
			return pend_deliver(s, p, h, buf, cap, from);
	}
}
