// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Conditional read: a server (rank 0) with a data region answers a request
 * for some of its bytes only if a predicate holds (the range is allowed and
 * the request's version is recent enough); otherwise the request is dropped
 * and the requester hears nothing.  Ranks from SPIN_HOSTFILE / SPIN_RANK.
 *
 *   condread_host server spin|host
 *       spin: loads condread.bpf.o; one match entry over the data region
 *             (host window) whose header handler checks the predicate in
 *             handler memory and answers with PtlHandlerPutFromHost or drops;
 *             the host only changes the predicate (PtlMEWriteHPU) when a
 *             client asks on the control socket.
 *       host: the baseline: requests over a kernel UDP socket (busy-polled),
 *             the check and the answer on the CPU.
 *   condread_host client sock|ptl|host test
 *       allowed requests get exactly the right bytes, denied ones nothing,
 *       predicate changes take effect, the server's counts agree.
 *   condread_host client sock|ptl|host bench [count N] [size S[,S...]]
 *                 [deny PCT] [window W] [csv FILE] [label L]
 *       latency of allowed requests (one at a time) and the rate of a
 *       stream with PCT % denied requests, W allowed ones outstanding.
 *       sock: requests and replies over a kernel UDP socket (sPIN packets,
 *       libspin spin_sock_*); ptl: PtlPut requests, replies into a match
 *       entry (PTL_EVENT_PUT); host: plain UDP to the baseline server.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <linux/types.h>
#include <spin/spin.h>
#include "../sample.h"
#include "condread.h"

#define CTL_PORT	7793	/* client -> server: set predicate, counts, quit */
#define DATA_PORT	7794	/* baseline requests */
#define DATA_LEN	(64 << 10)
#define PT		0
/* How long the test waits for a reply that must come, and for the server's
 * answer on the control socket: an answer takes microseconds; only a
 * failure waits this long, however loaded the machine.  (A denied request
 * is given 20 ms to stay unanswered: load can only make a wrong answer come
 * later, and then the next request's id check or the final check for stray
 * replies catches it.) */
#define WAIT_MS		30000

struct ctl_msg {
	uint32_t op;		/* CTL_SET, CTL_COUNTS, CTL_QUIT */
	uint32_t pad;
	uint64_t lo, hi, min_version, answered, denied;
};
enum { CTL_SET = 1, CTL_COUNTS, CTL_QUIT };

struct req_msg { uint32_t id, len, ver, pad; uint64_t off; };	/* baseline */

static struct spin_job job;

static uint8_t data_byte(uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + 0x5a);
}

static struct sockaddr_in rank_addr(uint32_t r, uint16_t port)
{
	return sample_rank_addr(&job, r, port);
}

static int udp_socket(uint16_t port)
{
	int fd = sample_udp_socket(INADDR_ANY, port, 4 << 20, 0);

	if (fd < 0) {
		perror("condread_host: udp socket");
		exit(1);
	}
	return fd;
}

/* -------------------------------------------------------------- server -- */

static int server(const char *mode)
{
	int spin = !strcmp(mode, "spin"), ctl = udp_socket(CTL_PORT), dfd = -1;
	condread_state_t pol = { .lo = 0, .hi = 0, .min_version = ~0ull };	/* deny all */
	struct sample_ni s;
	ptl_handle_me_t meh;
	uint8_t *region;

	if (spin) {
		ptl_handle_handler_t h;
		ptl_handle_hpu_mem_t mem;
		char obj[600];

		sample_ni_init(&s, PT, 64);
		PTL_CHECK(PtlSpinHandlerLoad(s.ni, sample_obj_path("condread.bpf.o", obj, sizeof(obj)), &h));
		PTL_CHECK(PtlSpinHostAlloc(s.ni, DATA_LEN, (void **)&region));
		PTL_CHECK(PtlHPUAllocMem(sizeof(pol), s.ni, &mem));
		PTL_CHECK(PtlHPUWriteMem(mem, 0, &pol, sizeof(pol)));
		for (uint64_t i = 0; i < DATA_LEN; i++)
			region[i] = data_byte(i);
		ptl_me_t me = {
			.start = region, .length = DATA_LEN, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
			/* the host sees nothing of the requests */
			.options = PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
				   PTL_ME_EVENT_UNLINK_DISABLE,
			.match_id.rank = PTL_RANK_ANY, .match_bits = CR_REQ_BITS, .handlers = h,
			.hpu_memory = mem,
		};
		PTL_CHECK(PtlMEAppend(s.ni, s.pt, &me, PTL_PRIORITY_LIST, NULL, &meh));
	} else {
		region = malloc(DATA_LEN);
		for (uint64_t i = 0; i < DATA_LEN; i++)
			region[i] = data_byte(i);
		dfd = udp_socket(DATA_PORT);
	}
	sample_barrier("ready", 0, job.size, 30000);
	for (;;) {
		struct ctl_msg m;
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		if (spin) {
			struct pollfd p = { .fd = ctl, .events = POLLIN };

			/* the data path needs no host: sleep until a control message */
			if (poll(&p, 1, 60000) <= 0) {
				fprintf(stderr, "condread_host: server: no client for 60 s\n");
				return 1;
			}
		} else {
			/* baseline: busy-poll requests, look at the control socket now and then */
			static uint8_t rq[32][64], rp[32][4 + CR_MAX_REPLY];
			static struct sockaddr_in src[32];
			struct mmsghdr mm[32], out[32];
			struct iovec iov[32], oiov[32][2];
			int k = 0, r;

			for (int i = 0; i < 32; i++) {
				iov[i] = (struct iovec){ rq[i], sizeof(rq[i]) };
				mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &src[i], .msg_namelen = sizeof(src[i]),
								     .msg_iov = &iov[i], .msg_iovlen = 1 } };
			}
			r = recvmmsg(dfd, mm, 32, MSG_DONTWAIT, NULL);
			for (int i = 0; i < r; i++) {
				const struct req_msg *q = (const void *)rq[i];

				if (mm[i].msg_len != sizeof(*q) || q->len == 0 || q->len > CR_MAX_REPLY ||
				    q->off < pol.lo || q->off > pol.hi || q->len > pol.hi - q->off ||
				    q->ver < pol.min_version) {
					pol.denied++;
					continue;
				}
				memcpy(rp[k], &q->id, 4);
				oiov[k][0] = (struct iovec){ rp[k], 4 };
				oiov[k][1] = (struct iovec){ region + q->off, q->len };
				out[k] = (struct mmsghdr){ .msg_hdr = { .msg_name = &src[i], .msg_namelen = sizeof(src[i]),
									.msg_iov = oiov[k], .msg_iovlen = 2 } };
				k++;
				pol.answered++;
			}
			if (k && sendmmsg(dfd, out, k, 0) != k)
				perror("condread_host: server sendmmsg");
			if (r > 0)
				continue;
		}
		n = recvfrom(ctl, &m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n != sizeof(m))
			continue;
		if (m.op == CTL_QUIT)
			break;
		if (m.op == CTL_SET) {
			pol.lo = m.lo;
			pol.hi = m.hi < DATA_LEN ? m.hi : DATA_LEN;
			pol.min_version = m.min_version;
			if (spin)	/* the predicate, live, into the entry's handler memory */
				PTL_CHECK(PtlMEWriteHPU(meh, 0, &pol, offsetof(condread_state_t, answered)));
		}
		if (spin)
			PTL_CHECK(PtlMEReadHPU(meh, 0, &pol, sizeof(pol)));
		m.answered = pol.answered;
		m.denied = pol.denied;
		sendto(ctl, &m, sizeof(m), 0, (struct sockaddr *)&from, fl);
	}
	if (spin) {
		PtlMEUnlink(meh);
		sample_ni_fini(&s);
	}
	return 0;
}

/* -------------------------------------------------------------- client -- */

struct client {
	int mode;			/* 0 sock, 1 ptl, 2 host */
	int ctl, dfd;
	struct sockaddr_in srv_ctl, srv_data, srv_spin;
	struct spin_sock *sk;
	struct sample_ni s;
	ptl_handle_md_t md;
	ptl_handle_me_t me;
	uint8_t *slots;			/* ptl: the reply entry's buffer */
};

static void ctl_call(struct client *C, struct ctl_msg *m)
{
	struct pollfd p = { .fd = C->ctl, .events = POLLIN };

	if (sendto(C->ctl, m, sizeof(*m), 0, (struct sockaddr *)&C->srv_ctl, sizeof(C->srv_ctl)) != sizeof(*m) ||
	    poll(&p, 1, WAIT_MS) <= 0 || recv(C->ctl, m, sizeof(*m), 0) != sizeof(*m)) {
		fprintf(stderr, "condread_host: no answer on the control socket\n");
		exit(1);
	}
}

static void set_policy(struct client *C, uint64_t lo, uint64_t hi, uint64_t minver)
{
	struct ctl_msg m = { .op = CTL_SET, .lo = lo, .hi = hi, .min_version = minver };

	ctl_call(C, &m);
}

/*
 * A request to the spin server carries `len` bytes of padding: the runtime
 * builds the one-packet reply in the request's own frame and can only grow
 * a frame at its tail (rt_common.bpf.h, spin_do_put), which on veth has
 * room for a few bytes only; a reply longer than its request is dropped as
 * put_failed.  Same-size request and reply need no growth.  The server's
 * payload handler discards the padding.
 */
static uint8_t pad[2 * CR_MAX_REPLY];
static int pad_requests = 1;	/* CONDREAD_PAD=0: unpadded (the runtime's host fallback) */

static void send_req(struct client *C, uint32_t id, uint64_t off, uint32_t len, uint32_t ver)
{
	uint32_t plen = !pad_requests ? 0 : len < sizeof(pad) ? len : sizeof(pad);

	if (C->mode == 0) {
		struct spin_msg_args a = {
			.op = SPIN_OP_PUT, .pt_index = PT, .src_rank = job.rank, .dst_rank = 0,
			.match_bits = CR_REQ_BITS, .remote_off = off, .hdr_data = CR_HDR(len, ver, id),
		};

		if (spin_sock_send(C->sk, &C->srv_spin, &a, pad, plen, NULL) < 0) {
			fprintf(stderr, "condread_host: send: %s\n", spin_errmsg());
			exit(1);
		}
	} else if (C->mode == 1) {
		ptl_process_t srv = { .rank = 0 };

		PTL_CHECK(PtlPut(C->md, 0, plen, PTL_NO_ACK_REQ, srv, PT, CR_REQ_BITS, off, NULL,
				 CR_HDR(len, ver, id)));
	} else {
		struct req_msg q = { .id = id, .len = len, .ver = ver, .off = off };

		if (sendto(C->dfd, &q, sizeof(q), 0, (struct sockaddr *)&C->srv_data, sizeof(C->srv_data)) !=
		    sizeof(q)) {
			perror("condread_host: sendto");
			exit(1);
		}
	}
}

/* One reply: its id and bytes; -1 when none came within timeout_us. */
static int recv_reply(struct client *C, uint32_t *id, uint8_t *buf, int timeout_us)
{
	uint64_t end = sample_now_ns() + timeout_us * 1000ull;

	if (C->mode == 0) {
		struct spin_hdr h;
		int r;

		do {
			r = spin_sock_recv_pkt(C->sk, &h, buf, CR_MAX_REPLY, NULL, 0);
			if (r >= 0) {
				*id = CR_ID(be64toh(h.hdr_data));
				return r;
			}
		} while (sample_now_ns() < end);
		return -1;
	}
	if (C->mode == 1) {
		ptl_event_t ev;
		int rc;

		do {
			rc = PtlEQGet(C->s.eq, &ev);
			if (rc == PTL_OK && ev.type == PTL_EVENT_PUT) {
				*id = CR_ID(ev.hdr_data);
				memcpy(buf, ev.start, ev.mlength);
				return (int)ev.mlength;
			}
			if (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
				fprintf(stderr, "condread_host: unexpected event %d (rc %d)\n", ev.type, rc);
				exit(1);
			}
		} while (sample_now_ns() < end);
		return -1;
	}
	do {
		uint8_t b[4 + CR_MAX_REPLY];
		ssize_t n = recv(C->dfd, b, sizeof(b), MSG_DONTWAIT);

		if (n >= 4) {
			memcpy(id, b, 4);
			memcpy(buf, b + 4, n - 4);
			return (int)n - 4;
		}
	} while (sample_now_ns() < end);
	return -1;
}

static int check_bytes(const uint8_t *b, uint64_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (b[i] != data_byte(off + i))
			return -1;
	return 0;
}

static uint32_t next_id = 1;

/* One request; want: answer expected.  Returns 0 if it behaved. */
static int probe(struct client *C, const char *what, uint64_t off, uint32_t len, uint32_t ver, int want)
{
	uint8_t buf[CR_MAX_REPLY];
	uint32_t id = next_id++, got_id = 0;
	int r;

	send_req(C, id, off, len, ver);
	r = recv_reply(C, &got_id, buf, want ? WAIT_MS * 1000 : 20000);
	if (want && r < 0) {
		fprintf(stderr, "condread_host: %s (off %llu len %u ver %u): no answer\n", what,
			(unsigned long long)off, len, ver);
		return 1;
	}
	if (!want && r >= 0) {
		fprintf(stderr, "condread_host: %s (off %llu len %u ver %u): answered (%d bytes), should be denied\n",
			what, (unsigned long long)off, len, ver, r);
		return 1;
	}
	if (want && (got_id != id || (uint32_t)r != len || check_bytes(buf, off, len))) {
		fprintf(stderr, "condread_host: %s: reply id %u (want %u), %d bytes (want %u)%s\n", what,
			got_id, id, r, len, (uint32_t)r == len && check_bytes(buf, off, len) ? ", wrong bytes" : "");
		return 1;
	}
	return 0;
}

static int client_test(struct client *C)
{
	int bad = 0, allowed = 0, denied = 0;
	struct ctl_msg m = { .op = CTL_COUNTS };
	uint8_t buf[CR_MAX_REPLY];
	uint32_t id;

#define P(what, off, len, ver, want)						\
	do {									\
		int _b = probe(C, what, off, len, ver, want);			\
		bad += _b;							\
		if (want) allowed++; else denied++;				\
		printf("%s %s\n", _b ? "bad " : "ok  ", what);			\
	} while (0)

	/* everything is denied until the host sets a predicate */
	P("before any predicate: denied", 4096, 64, 9, 0);
	set_policy(C, 4096, 32768, 3);
	P("in range, 1 byte", 4096, 1, 3, 1);
	P("in range, 64 bytes", 10000, 64, 3, 1);
	P("in range, one full packet", 32768 - CR_MAX_REPLY, CR_MAX_REPLY, 7, 1);
	P("below the range", 4095, 16, 3, 0);
	P("straddles the end", 32760, 16, 3, 0);
	P("beyond the region", 1 << 20, 16, 3, 0);
	P("old version", 8192, 16, 2, 0);
	P("zero length", 8192, 0, 3, 0);
	P("longer than a packet", 8192, CR_MAX_REPLY + 1, 3, 0);
	for (int i = 0; i < 50; i++) {
		uint32_t len = 1 + (i * 97) % CR_MAX_REPLY;
		uint64_t off = 4096 + (i * 4099ull) % (32768 - 4096 - len);

		bad += probe(C, "in range, mixed", off, len, 3 + i % 4, 1);
		bad += probe(C, "old version, mixed", off, len, i % 3, 0);
		allowed++;
		denied++;
	}
	printf("%s 100 mixed requests\n", bad ? "bad " : "ok  ");
	/* the host changes the predicate: it holds for the next request */
	set_policy(C, 0, 8192, 5);
	P("new range: once allowed, now denied", 10000, 64, 5, 0);
	P("new range: once denied, now allowed", 0, 64, 5, 1);
	P("new version: version 3 now denied", 4096, 64, 3, 0);
	set_policy(C, 0, 0, 0);
	P("empty range: denied", 0, 1, 9, 0);
	/* nothing late or stray */
	if (recv_reply(C, &id, buf, 100000) >= 0) {
		fprintf(stderr, "condread_host: a stray reply, id %u\n", id);
		bad++;
	}
	ctl_call(C, &m);
	if (m.answered != (uint64_t)allowed || m.denied != (uint64_t)denied) {
		fprintf(stderr, "condread_host: server counted %llu answered, %llu denied; sent %d allowed, %d denied\n",
			(unsigned long long)m.answered, (unsigned long long)m.denied, allowed, denied);
		bad++;
	}
	printf("%s server counts: %llu answered, %llu denied\n", bad ? "bad " : "ok  ",
	       (unsigned long long)m.answered, (unsigned long long)m.denied);
	return bad;
}

static int client_bench(struct client *C, int argc, char **argv)
{
	uint32_t sizes[16] = { 64 }, nsizes = 1, count = 2000, deny = 50, window = 16;
	const char *csv = NULL, *label = NULL;
	uint64_t *lat;
	uint8_t buf[CR_MAX_REPLY];
	int bad = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "size") && i + 1 < argc) {
			char *p = argv[++i];

			nsizes = 0;
			while (*p && nsizes < 16) {
				sizes[nsizes++] = strtoul(p, &p, 0);
				if (*p == ',')
					p++;
			}
		} else if (!strcmp(argv[i], "count") && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "deny") && i + 1 < argc)
			deny = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "window") && i + 1 < argc)
			window = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "csv") && i + 1 < argc)
			csv = argv[++i];
		else if (!strcmp(argv[i], "label") && i + 1 < argc)
			label = argv[++i];
		else {
			fprintf(stderr, "condread_host: unknown bench argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (window > CR_SLOTS)
		window = CR_SLOTS;
	lat = calloc(count, sizeof(*lat));
	set_policy(C, 0, DATA_LEN / 2, 1);
	for (uint32_t si = 0; si < nsizes && !bad; si++) {
		uint32_t len = sizes[si], n = 0, sent = 0, outstanding = 0, answered = 0, ndeny = 0;
		uint64_t t0, t1;

		/* latency: one allowed request at a time */
		for (uint32_t i = 0; i < count && !bad; i++) {
			uint64_t off = (i * 4099ull) % (DATA_LEN / 2 - len), t;
			uint32_t id = next_id++, got;
			int r;

			t = sample_now_ns();
			send_req(C, id, off, len, 1);
			r = recv_reply(C, &got, buf, 1000000);
			if (r != (int)len || got != id || check_bytes(buf, off, len)) {
				fprintf(stderr, "condread_host: bench: request %u: bad or no reply\n", id);
				bad = 1;
				break;
			}
			lat[n++] = sample_now_ns() - t;
		}
		/* rate: deny % of the requests are outside the range (never
		 * answered), at most `window` answered ones outstanding */
		t0 = sample_now_ns();
		while ((sent < count || outstanding) && !bad) {
			uint32_t got;

			while (sent < count && outstanding < window) {
				uint32_t id = next_id++;
				uint64_t off = (sent * 4099ull) % (DATA_LEN / 2 - len);

				if ((sent * 37) % 100 < deny) {	/* outside the allowed half */
					send_req(C, id, DATA_LEN / 2 + off, len, 1);
					ndeny++;
				} else {
					send_req(C, id, off, len, 1);
					outstanding++;
				}
				sent++;
			}
			if (!outstanding)
				break;
			if (recv_reply(C, &got, buf, 1000000) != (int)len) {
				fprintf(stderr, "condread_host: bench: a stream reply is missing\n");
				bad = 1;
				break;
			}
			outstanding--;
			answered++;
		}
		t1 = sample_now_ns();
		{
			uint64_t p50 = sample_percentile(lat, n, 50), p99 = sample_percentile(lat, n, 99);
			double rate = (t1 - t0) ? sent / ((t1 - t0) / 1e9) : 0;

			printf("%s size %u: latency p50 %.1f us p99 %.1f us (%u allowed requests); stream of %u (%u denied, window %u): %.0f requests/s\n",
			       label ? label : "", len, p50 / 1e3, p99 / 1e3, n, sent, ndeny, window, rate);
			if (csv && !bad) {
				FILE *f = fopen(csv, "a");

				if (f) {
					fprintf(f, "%s,%u,%u,%.2f,%.2f,%u,%u,%.0f\n", label ? label : "", len, n,
						p50 / 1e3, p99 / 1e3, deny, window, rate);
					fclose(f);
				}
			}
		}
	}
	return bad;
}

static int client(int argc, char **argv)
{
	struct client C = { .mode = !strcmp(argv[0], "sock") ? 0 : !strcmp(argv[0], "ptl") ? 1 : 2 };
	const char *padenv = getenv("CONDREAD_PAD");
	struct ctl_msg q = { .op = CTL_QUIT };
	int rc;

	if (padenv && !strcmp(padenv, "0"))
		pad_requests = 0;
	if (argc < 2 || (strcmp(argv[1], "test") && strcmp(argv[1], "bench")))
		return 2;
	C.ctl = udp_socket(0);
	C.srv_ctl = rank_addr(0, CTL_PORT);
	C.srv_data = rank_addr(0, DATA_PORT);
	C.srv_spin = rank_addr(0, SPIN_DEFAULT_PORT);
	if (C.mode == 0) {
		/* replies come to the runtime's port, as to any rank */
		if (spin_sock_open(NULL, SPIN_DEFAULT_PORT, &C.sk) < 0) {
			fprintf(stderr, "condread_host: socket: %s\n", spin_errmsg());
			return 1;
		}
	} else if (C.mode == 1) {
		ptl_md_t md = { .start = pad, .length = sizeof(pad), .eq_handle = PTL_EQ_NONE,
				.ct_handle = PTL_CT_NONE,
				.options = PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_SUCCESS_DISABLE };
		ptl_me_t me = {
			.length = CR_SLOTS * CR_SLOT, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
			.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE,
			.match_id.rank = 0, .match_bits = CR_REPLY_BITS,
		};

		sample_ni_init(&C.s, PT, 1024);
		PTL_CHECK(PtlMDBind(C.s.ni, &md, &C.md));
		PTL_CHECK(PtlSpinHostAlloc(C.s.ni, CR_SLOTS * CR_SLOT, (void **)&C.slots));
		me.start = C.slots;
		PTL_CHECK(PtlMEAppend(C.s.ni, C.s.pt, &me, PTL_PRIORITY_LIST, NULL, &C.me));
	} else {
		C.dfd = udp_socket(0);
	}
	sample_barrier("ready", job.rank, job.size, 30000);
	rc = !strcmp(argv[1], "test") ? client_test(&C) : client_bench(&C, argc - 2, argv + 2);
	sendto(C.ctl, &q, sizeof(q), 0, (struct sockaddr *)&C.srv_ctl, sizeof(C.srv_ctl));
	if (C.mode == 1)
		sample_ni_fini(&C.s);
	if (C.sk)
		spin_sock_close(C.sk);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr,
			"usage: condread_host server spin|host\n"
			"       condread_host client sock|ptl|host test\n"
			"       condread_host client sock|ptl|host bench [count N] [size S[,S...]] [deny PCT]\n"
			"                                          [window W] [csv FILE] [label L]\n");
		return 2;
	}
	rc = spin_job_load(&job, getenv("SPIN_HOSTFILE"));
	if (rc < 0 || job.nhosts < 2 || job.nhosts != job.size) {
		fprintf(stderr, "condread_host: job: %s\n", rc < 0 ? spin_errmsg() : "need a hostfile of 2+ ranks");
		return 1;
	}
	if (!strcmp(argv[1], "server"))
		rc = job.rank == 0 ? server(argv[2]) : 2;
	else
		rc = job.rank != 0 ? client(argc - 2, argv + 2) : 2;
	spin_job_free(&job);
	return rc;
}
