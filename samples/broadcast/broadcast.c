// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Broadcast by binomial tree (sPIN paper, SC17, section 4), one process per
 * rank; every rank runs the same command:
 *
 *   broadcast [mode spin|host] [size S[,S...]] [iters N] [warmup W]
 *             [order inorder|reverse|shuffle] [csv FILE] [label L]
 *             [busy 0|1] [timeout-ms T]
 *
 * mode spin  rank 0 (the root) PtlPut's the message to its children (one
 *            bundle: PtlStartBundle/PtlEndBundle); every
 *            other rank has a match entry with broadcast.bpf.o's payload
 *            handler, which forwards each packet to the node's children
 *            from the NIC (PtlHandlerPutFromDevice, fan-out) and copies it
 *            into the entry's buffer.  The host only waits for its counter
 *            (PTL_ME_EVENT_CT_BYTES) to reach the message length.
 *            order reverse|shuffle: the root sends with spin_sock_send in
 *            that packet order instead (out-of-order arrival).
 * mode host  the baseline: the same tree with processes on kernel UDP
 *            sockets; a node receives the whole message, then sends it to
 *            each of its children.
 *
 * Waiting ranks sleep (poll(), and SPIN_PTL_SPIN_US=0 for the Portals
 * library) unless busy 1: with more processes than CPUs, busy-polling
 * measures the scheduler.  spin: the runtime wakes them after its packet
 * work (its default), or from the packet path if it was attached with
 * SPIN_WAKE_DIRECT=1 ("spin-direct"); wake-us N: it does not wake them,
 * they look every N us ("spin-lazy").
 *
 * Every rank checks every message byte for byte against the pattern the
 * root sent.  Latency of one broadcast (measured at the root): from its
 * first send until every other rank has the whole message:
 *   spin  the handler's completion notice from each rank's NIC (a put to
 *         the root's "done" entry, counted by a PTL_CT; the root busy-polls)
 *   host  a "done" datagram from each rank's process, sent as soon as it
 *         has received the whole message (before it forwards; the root
 *         busy-polls).
 * The time is where the last notice arrives, so that when the root
 * process next gets a CPU does not count: spin, the root's done entry's
 * payload handler (broadcast_done.bpf.o) timestamps each notice by the
 * NIC's clock; host, the kernel's receive timestamp (SO_TIMESTAMPNS).
 * When the root process saw it is reported too ("root process").
 * Then (not measured) the root waits until every rank has checked the
 * message before it starts the next broadcast: a count in shared memory
 * ($SAMPLE_DIR, a futex the root sleeps on), so that this bookkeeping
 * does not add traffic to the network being measured.  Messages alternate
 * between two halves of the buffer.
 *
 * Environment: SPIN_IFACE, SPIN_HOSTFILE, SPIN_RANK (as every spin program),
 * SAMPLE_DIR (shared directory: barriers and the check count).
 * Output (root): one line per size "mode P size iters p50 p99 mean max (root
 * process: p50 p99)"; with csv, a line
 * label,mode,P,size,iters,p50_ns,p99_ns,mean_ns,max_ns,proc_p50_ns,proc_p99_ns
 * per size.
 * Exit status 0 only if every rank got every message intact.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <spin/spin.h>
#include "../sample.h"

#define PT_INDEX	0
#define BCAST_BITS	0xbc
#define DONE_BITS	0xd0	/* completion notices to the root */
#define HOST_PORT	7790	/* baseline: message datagrams */
#define DONE_PORT	7791	/* "done" datagrams to the root */
#define SEG		SPIN_MAX_SEG
#define MAX_SIZES	8
#define MAX_RANKS	256

typedef struct {
	uint32_t rank, size, root, pad;
	ptl_match_bits_t bits;
	ptl_match_bits_t done_bits;
	uint64_t msg_size;
	uint64_t got;
} bcast_info_t;	/* broadcast.bpf.c's handler memory */

struct opts {
	int spin;
	uint32_t sizes[MAX_SIZES], nsizes;
	uint32_t iters, warmup;
	const char *order, *csv, *label;
	const char *wake_us;	/* spin: $SPIN_PTL_WAKE_US of the non-root ranks */
	int timeout_ms;
};

struct wire_hdr {	/* baseline datagram header */
	uint32_t iter;
	uint32_t off;
};
struct done_msg {	/* baseline: "rank has message iter" */
	uint32_t iter;
	uint32_t rank;
};

/* The children of rank in the binomial tree of size ranks rooted at root,
 * larger subtrees first (the handler's order). */
static uint32_t children(uint32_t rank, uint32_t size, uint32_t root, uint32_t *out)
{
	uint32_t r = (rank + size - root) % size, m = r ? r & -r : 1u << 8, n = 0;

	while (m >>= 1)
		if (r + m < size)
			out[n++] = (r + m + root) % size;
	return n;
}

/* Every packet of a message differs, and so does every message. */
/* The bytes of message it: a base pattern that differs per packet
 * (computed once per size), XORed with a byte that differs per message,
 * 8 bytes at a time (every rank makes it for every message: at 64 KiB a
 * byte-wise loop was 18% of the CPU the broadcast itself needs). */
static void pattern_base(uint8_t *b, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + (i / SEG) * 57 + 1);
}

static void pattern(uint8_t *b, const uint8_t *base, uint32_t len, uint32_t it)
{
	uint64_t x = 0x0101010101010101ull * (uint8_t)(it * 31 + 1), w;
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, base + i, 8);
		w ^= x;
		memcpy(b + i, &w, 8);
	}
	for (; i < len; i++)
		b[i] = base[i] ^ (uint8_t)x;
}

static int udp_socket(uint16_t port, int rcvbuf)
{
	return sample_udp_socket(INADDR_ANY, port, rcvbuf, 1);
}

static struct sockaddr_in addr_of(const struct spin_job *j, uint32_t rank, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	for (uint32_t i = 0; i < j->size; i++)
		if (j->hosts[i].rank == rank)
			a.sin_addr = j->hosts[i].ip;
	return a;
}

static int busy;	/* busy-poll instead of sleeping (option busy 1) */

/* Wait for a datagram, up to timeout_ms: sleeping in poll(), or
 * busy-polling with non-blocking receives (busy).  ts: the kernel's
 * receive time (CLOCK_REALTIME, SO_TIMESTAMPNS on the socket), 0 if none. */
static ssize_t recv_wait(int fd, void *buf, size_t len, int timeout_ms, int busy, uint64_t *ts)
{
	uint64_t now = sample_now_ns(), end = now + (uint64_t)timeout_ms * 1000000ull;
	ssize_t n;

	do {
		struct iovec iov = { buf, len };
		char cbuf[CMSG_SPACE(sizeof(struct timespec))];
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ts ? cbuf : NULL,
				     .msg_controllen = ts ? sizeof(cbuf) : 0 };

		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n >= 0) {
			struct cmsghdr *c = ts ? CMSG_FIRSTHDR(&mh) : NULL;

			if (ts)
				*ts = 0;
			for (; c; c = CMSG_NXTHDR(&mh, c))
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
					struct timespec t;

					memcpy(&t, CMSG_DATA(c), sizeof(t));
					*ts = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
				}
			return n;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		if (!busy) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };

			poll(&pf, 1, (int)((end - now) / 1000000ull) + 1);
		}
		now = sample_now_ns();
	} while (now < end);
	return -1;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static ssize_t recv_spin(int fd, void *buf, size_t len, int timeout_ms)
{
	return recv_wait(fd, buf, len, timeout_ms, busy, NULL);
}

/* The baseline's send of a whole message to one rank. */
static int host_send(int fd, const struct sockaddr_in *dst, const uint8_t *msg, uint32_t len,
		     uint32_t it)
{
	uint8_t pkt[sizeof(struct wire_hdr) + SEG];
	uint32_t off = 0;

	do {
		uint32_t n = len - off < SEG ? len - off : SEG;
		struct wire_hdr h = { .iter = it, .off = off };

		memcpy(pkt, &h, sizeof(h));
		memcpy(pkt + sizeof(h), msg + off, n);
		while (sendto(fd, pkt, sizeof(h) + n, 0, (const void *)dst, sizeof(*dst)) < 0)
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
				return -1;
		off += n;
	} while (off < len);
	return 0;
}

/* The baseline's receive of message it (datagrams of other messages are
 * stale and ignored). */
static int host_recv(int fd, uint8_t *msg, uint32_t len, uint32_t it, int timeout_ms)
{
	uint8_t pkt[sizeof(struct wire_hdr) + SEG + 64];
	uint32_t got = 0;

	while (got < len || (len == 0 && got == 0)) {
		struct wire_hdr h;
		ssize_t n = recv_spin(fd, pkt, sizeof(pkt), timeout_ms);

		if (n < (ssize_t)sizeof(h))
			return -1;
		memcpy(&h, pkt, sizeof(h));
		n -= sizeof(h);
		if (h.iter != it || h.off + n > len)
			continue;
		memcpy(msg + h.off, pkt + sizeof(h), n);
		got += n;
		if (len == 0)
			break;
	}
	return 0;
}

static void done_send(int fd, const struct sockaddr_in *root, uint32_t it, uint32_t rank)
{
	struct done_msg dm = { .iter = it, .rank = rank };

	sendto(fd, &dm, sizeof(dm), 0, (const void *)root, sizeof(*root));
}

/* The root (baseline): wait until every other rank reported message it;
 * *last: the latest kernel receive time of those datagrams (CLOCK_REALTIME).
 * Reports of other messages are stale and ignored. */
static int gather(int fd, uint32_t it, uint32_t P, int timeout_ms, uint64_t *last)
{
	uint8_t mark[MAX_RANKS] = { 0 };
	uint32_t seen = 0;

	*last = 0;
	while (seen < P - 1) {
		struct done_msg dm;
		uint64_t ts;

		if (recv_wait(fd, &dm, sizeof(dm), timeout_ms, 1, &ts) != sizeof(dm)) {
			fprintf(stderr, "broadcast: root: message %u: %u of %u ranks have it\n", it,
				seen, P - 1);
			return -1;
		}
		if (dm.iter == it && dm.rank < P && !mark[dm.rank]) {
			mark[dm.rank] = 1;
			seen++;
			if (ts > *last)
				*last = ts;
		}
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: broadcast [mode spin|host] [size S[,S...]] [iters N] [warmup W]\n"
			"                 [order inorder|reverse|shuffle] [csv FILE] [label L]\n"
			"                 [busy 0|1] [wake-us N] [timeout-ms T]\n");
	exit(2);
}

/* how the other ranks' hosts learn of completions: host; spin (woken by
 * the runtime's work item, after the packet work); spin-direct (woken
 * from the packet path: SPIN_WAKE_DIRECT=1 when the runtimes were
 * attached); spin-lazy (wake-us: they look every N us) */
static const char *mode_name(const struct opts *o)
{
	const char *d = getenv("SPIN_WAKE_DIRECT");

	if (!o->spin)
		return "host";
	if (o->wake_us)
		return "spin-lazy";
	return d && *d && strcmp(d, "0") ? "spin-direct" : "spin";
}

int main(int argc, char **argv)
{
	struct opts o = { .spin = 1, .sizes = { 8 }, .nsizes = 1, .iters = 100, .warmup = 10,
			  .order = "inorder", .label = "broadcast", .timeout_ms = 3000 };
	uint32_t kids[16], nkids, rank, P, maxsz = 0, npk_max, *order = NULL;
	struct sample_ni s = { 0 };
	struct spin_sock *sk = NULL;
	struct spin_job job;
	ptl_handle_handler_t h = PTL_HANDLER_NONE;
	ptl_handle_hpu_mem_t hm = 0;
	ptl_handle_ct_t ct = PTL_CT_NONE;
	ptl_handle_md_t md = 0;
	ptl_handle_me_t meh = 0;
	ptl_size_t ct_total = 0;
	struct spin_rt *srt = NULL;
	struct spin_stats st0, st1;
	uint64_t want_puts = 0, want_fanout = 0;
	uint8_t *buf = NULL, *ref, *base;
	uint64_t *lat, *plat;	/* arrival at the root's NIC or kernel; seen by the root process */
	ptl_handle_ct_t done_ct = PTL_CT_NONE;
	ptl_handle_me_t done_meh = 0;
	ptl_size_t done_total = 0;
	void *done_buf = NULL;
	int data_fd = -1, done_fd, bad = 0;
	char path[600], name[64];
	struct sample_tally *checked = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "mode") && v) {
			o.spin = !strcmp(v, "spin");
			if (!o.spin && strcmp(v, "host"))
				usage();
		} else if (!strcmp(a, "size") && v) {
			char *p = (char *)v;

			o.nsizes = 0;
			while (*p && o.nsizes < MAX_SIZES) {
				o.sizes[o.nsizes++] = strtoul(p, &p, 0);
				if (*p == ',')
					p++;
			}
		} else if (!strcmp(a, "iters") && v) {
			o.iters = strtoul(v, NULL, 0);
		} else if (!strcmp(a, "warmup") && v) {
			o.warmup = strtoul(v, NULL, 0);
		} else if (!strcmp(a, "order") && v) {
			o.order = v;
		} else if (!strcmp(a, "csv") && v) {
			o.csv = v;
		} else if (!strcmp(a, "label") && v) {
			o.label = v;
		} else if (!strcmp(a, "busy") && v) {
			busy = atoi(v);
		} else if (!strcmp(a, "wake-us") && v) {
			o.wake_us = v;
		} else if (!strcmp(a, "timeout-ms") && v) {
			o.timeout_ms = atoi(v);
		} else {
			usage();
		}
		i++;
	}
	if (spin_job_load(&job, NULL) < 0) {
		fprintf(stderr, "broadcast: hostfile: %s\n", spin_errmsg());
		return 1;
	}
	/* the Portals library busy-polls in waits for $SPIN_PTL_SPIN_US: with
	 * more processes than CPUs, the other ranks sleep as the baseline's
	 * do; the root busy-polls for the measured gather in both modes */
	if (job.rank == 0)
		setenv("SPIN_PTL_SPIN_US", "200000", 0);
	else if (!busy)
		setenv("SPIN_PTL_SPIN_US", "0", 0);
	/* spin, wake-us N: the other ranks' hosts are not interrupted per
	 * message; they look for completions every N us (the library's
	 * interrupt moderation).  Their forwarding does not wait for them. */
	if (o.spin && job.rank != 0 && o.wake_us)
		setenv("SPIN_PTL_WAKE_US", o.wake_us, 1);
	rank = job.rank;
	P = job.size;
	if (P < 2 || P > MAX_RANKS) {
		fprintf(stderr, "broadcast: %u ranks (2..%u)\n", P, MAX_RANKS);
		return 1;
	}
	for (uint32_t i = 0; i < o.nsizes; i++) {
		if (o.sizes[i] == 0 || o.sizes[i] > (4u << 20)) {
			fprintf(stderr, "broadcast: size %u (1..4 MiB)\n", o.sizes[i]);
			return 2;
		}
		if (o.sizes[i] > maxsz)
			maxsz = o.sizes[i];
	}
	maxsz = (maxsz + 4095) & ~4095u;
	npk_max = (maxsz + SEG - 1) / SEG;
	nkids = children(rank, P, 0, kids);
	ref = malloc(maxsz);
	base = malloc(maxsz);
	lat = calloc(o.warmup + o.iters, sizeof(*lat));
	plat = calloc(o.warmup + o.iters, sizeof(*plat));
	if (!ref || !base || !lat || !plat)
		return 1;

	done_fd = udp_socket(rank == 0 ? DONE_PORT : 0, 0);
	if (done_fd < 0 ||
	    (rank == 0 && setsockopt(done_fd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){ 1 }, sizeof(int)))) {
		perror("broadcast: done socket");
		return 1;
	}
	if (o.spin) {
		sample_ni_init(&s, PT_INDEX, 1024);
		if (s.rank != rank || s.size != P) {
			fprintf(stderr, "broadcast: NI rank %u/%u, job %u/%u\n", s.rank, s.size, rank, P);
			return 1;
		}
		PTL_CHECK(PtlSpinHostAlloc(s.ni, 2 * (ptl_size_t)maxsz, (void **)&buf));
		if (rank == 0) {
			ptl_md_t d = { .start = buf, .length = 2 * (ptl_size_t)maxsz,
				       .options = PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_SUCCESS_DISABLE,
				       .eq_handle = s.eq, .ct_handle = PTL_CT_NONE };

			ptl_me_t dme = {
				.length = 4096, .options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM |
							   PTL_ME_EVENT_SUCCESS_DISABLE,
				.uid = PTL_UID_ANY, .match_id.rank = PTL_RANK_ANY,
				.match_bits = DONE_BITS,
			};

			PTL_CHECK(PtlMDBind(s.ni, &d, &md));
			/* completion notices from the other ranks' NICs: counted,
			 * and timestamped on arrival by broadcast_done.bpf.o */
			PTL_CHECK(PtlSpinHostAlloc(s.ni, 4096, &done_buf));
			PTL_CHECK(PtlCTAlloc(s.ni, &done_ct));
			sample_obj_path("broadcast_done.bpf.o", path, sizeof(path));
			if (PtlSpinHandlerLoad(s.ni, path, &h) != PTL_OK) {
				fprintf(stderr, "broadcast: PtlSpinHandlerLoad %s: %s\n", path,
					PtlSpinErrmsg());
				return 1;
			}
			PTL_CHECK(PtlHPUAllocMem(sizeof(uint64_t), s.ni, &hm));
			dme.start = done_buf;
			dme.ct_handle = done_ct;
			dme.handlers = h;
			dme.hpu_memory = hm;
			PTL_CHECK(PtlMEAppend(s.ni, s.pt, &dme, PTL_PRIORITY_LIST, NULL, &done_meh));
			if (strcmp(o.order, "inorder")) {
				if (spin_sock_open(NULL, 0, &sk) < 0) {
					fprintf(stderr, "broadcast: socket: %s\n", spin_errmsg());
					return 1;
				}
				order = malloc(sizeof(*order) * npk_max);
				if (!order)
					return 1;
				srand(11);
			}
		} else {
			bcast_info_t info = { .rank = rank, .size = P, .root = 0, .bits = BCAST_BITS,
					      .done_bits = DONE_BITS };
			ptl_me_t me = {
				.start = buf, .length = 2 * (ptl_size_t)maxsz,
				.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES |
					   PTL_ME_EVENT_SUCCESS_DISABLE,
				.uid = PTL_UID_ANY, .match_id.rank = PTL_RANK_ANY,
				.match_bits = BCAST_BITS,
			};

			sample_obj_path("broadcast.bpf.o", path, sizeof(path));
			if (PtlSpinHandlerLoad(s.ni, path, &h) != PTL_OK) {
				fprintf(stderr, "broadcast: PtlSpinHandlerLoad %s: %s\n", path,
					PtlSpinErrmsg());
				return 1;
			}
			PTL_CHECK(PtlHPUAllocMem(sizeof(info), s.ni, &hm));
			PTL_CHECK(PtlHPUWriteMem(hm, 0, &info, sizeof(info)));
			PTL_CHECK(PtlCTAlloc(s.ni, &ct));
			me.ct_handle = ct;
			me.handlers = h;
			me.hpu_memory = hm;
			PTL_CHECK(PtlMEAppend(s.ni, s.pt, &me, PTL_PRIORITY_LIST, NULL, &meh));
			/* the runtime's counters: the forwarding must be the NIC's */
			if (spin_open(getenv("SPIN_IFACE"), &srt) < 0 || spin_stats_read(srt, &st0) < 0) {
				fprintf(stderr, "broadcast: runtime stats: %s\n", spin_errmsg());
				return 1;
			}
		}
	} else {
		buf = malloc(2 * (size_t)maxsz);
		data_fd = udp_socket(HOST_PORT, 16 << 20);
		if (!buf || data_fd < 0) {
			perror("broadcast: data socket");
			return 1;
		}
	}

	for (uint32_t si = 0; si < o.nsizes && !bad; si++) {
		uint32_t size = o.sizes[si], N = o.warmup + o.iters;
		uint32_t npk = (size + SEG - 1) / SEG;
		struct sockaddr_in root_done = addr_of(&job, 0, DONE_PORT);

		pattern_base(base, size);
		if (o.spin && rank) {
			/* device puts: per packet one per child, per message one
			 * notice; a fan-out where a packet has two or more */
			want_puts += (uint64_t)N * (nkids * npk + 1);
			want_fanout += (uint64_t)N * (nkids >= 2 ? npk : nkids == 1 ? 1 : 0);
		}
		if (o.spin && rank) {
			/* the completion notice fires every `size` bytes */
			uint64_t v[2] = { size, 0 };

			PTL_CHECK(PtlMEWriteHPU(meh, offsetof(bcast_info_t, msg_size), v, sizeof(v)));
		}
		/* the checks are counted in shared memory, not over the
		 * network being measured */
		snprintf(name, sizeof(name), "checked.%s.%u.%u", o.label, o.spin, size);
		if (checked)
			munmap(checked, sizeof(*checked));
		checked = rank == 0 ? sample_tally_open(name, 1) : NULL;
		snprintf(name, sizeof(name), "start.%s.%u.%u", o.label, o.spin, size);
		sample_barrier(name, rank, P, 60000);
		if (rank) {
			snprintf(name, sizeof(name), "checked.%s.%u.%u", o.label, o.spin, size);
			checked = sample_tally_open(name, 0);
		}
		for (uint32_t it = 0; it < N && !bad; it++) {
			uint8_t *half = buf + (size_t)(it & 1) * maxsz;

			pattern(ref, base, size, it);
			if (rank == 0) {
				uint64_t t0, t0_rt, last = 0, last_t0 = 0;

				if (o.spin)
					memcpy(half, ref, size);
				t0 = sample_now_ns();
				t0_rt = realtime_ns();
				/* the puts to the children leave together: one
				 * kick, and the root is not preempted between
				 * them by the ranks its first put woke */
				if (o.spin && !sk)
					PtlStartBundle(s.ni);
				for (uint32_t k = 0; k < nkids; k++) {
					if (!o.spin) {
						struct sockaddr_in d = addr_of(&job, kids[k], HOST_PORT);

						if (host_send(data_fd, &d, ref, size, it))
							bad = 1;
					} else if (!sk) {
						PTL_CHECK(PtlPut(md, (ptl_size_t)(it & 1) * maxsz, size,
								 PTL_NO_ACK_REQ,
								 (ptl_process_t){ .rank = kids[k] }, PT_INDEX,
								 BCAST_BITS, (ptl_size_t)(it & 1) * maxsz,
								 NULL, 0));
					} else {
						struct sockaddr_in d = addr_of(&job, kids[k], SPIN_DEFAULT_PORT);
						struct spin_msg_args a = {
							.op = SPIN_OP_PUT, .pt_index = PT_INDEX,
							.src_rank = 0, .dst_rank = kids[k],
							.match_bits = BCAST_BITS, .seg_size = SEG,
							.remote_off = (uint64_t)(it & 1) * maxsz,
						};

						for (uint32_t i = 0; i < npk; i++)
							order[i] = !strcmp(o.order, "reverse") ? npk - 1 - i : i;
						if (!strcmp(o.order, "shuffle"))
							for (uint32_t i = npk - 1; i > 0; i--) {
								uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];

								order[i] = order[j];
								order[j] = t;
							}
						if (spin_sock_send(sk, &d, &a, ref, size, order) < 0) {
							fprintf(stderr, "broadcast: send: %s\n", spin_errmsg());
							bad = 1;
						}
					}
				}
				if (o.spin && !sk)
					PtlEndBundle(s.ni);
				/* measured: every other rank has the whole message */
				if (o.spin) {
					ptl_ct_event_t ce;
					unsigned int which;
					ptl_size_t test = done_total + P - 1;
					int rc = PtlCTPoll(&done_ct, &test, 1, o.timeout_ms, &ce, &which);

					if (rc != PTL_OK)	/* ce is not filled in */
						PtlCTGet(done_ct, &ce);
					if (rc != PTL_OK || ce.failure) {
						fprintf(stderr, "broadcast: root: message %u of %u B: %llu of %u ranks done (rc %d)\n",
							it, size, (unsigned long long)(ce.success - done_total),
							P - 1, rc);
						bad = 1;
					}
					done_total = test;
					/* when the last notice reached this NIC */
					if (!bad && PtlMEReadHPU(done_meh, 0, &last, sizeof(last)) != PTL_OK)
						bad = 1;
					last_t0 = t0;
				} else if (gather(done_fd, it, P, o.timeout_ms, &last)) {
					bad = 1;
				} else {
					last_t0 = t0_rt;	/* the kernel's receive times */
				}
				plat[it] = sample_now_ns() - t0;
				if (!bad && (last < last_t0 || last - last_t0 > plat[it])) {
					fprintf(stderr, "broadcast: root: message %u: arrival time %llu ns after the send, not within the %llu ns until the root saw it\n",
						it, (unsigned long long)(last - last_t0),
						(unsigned long long)plat[it]);
					bad = 1;
				}
				lat[it] = last - last_t0;
				/* not measured: every rank has checked it */
				if (!bad && sample_tally_wait(checked, (it + 1) * (P - 1), o.timeout_ms)) {
					if (checked->bad)
						fprintf(stderr, "broadcast: root: message %u: a rank failed its check or gave up\n",
							it);
					else
						fprintf(stderr, "broadcast: root: message %u: %u of %u ranks checked it\n",
							it, checked->count - it * (P - 1), P - 1);
					bad = 1;
				}
				continue;
			}
			/* a non-root rank: wait for the whole message */
			if (o.spin) {
				ptl_ct_event_t ce;
				unsigned int which;
				ptl_size_t test = ct_total + size;
				int rc = PtlCTPoll(&ct, &test, 1, o.timeout_ms, &ce, &which);

				if (rc != PTL_OK)	/* ce is not filled in */
					PtlCTGet(ct, &ce);
				if (rc != PTL_OK || ce.failure) {
					fprintf(stderr, "broadcast: rank %u: message %u of %u B: %llu of %llu bytes (rc %d, %llu failures)\n",
						rank, it, size, (unsigned long long)(ce.success - ct_total),
						(unsigned long long)size, rc, (unsigned long long)ce.failure);
					bad = 1;
					break;
				}
				ct_total = test;
				if (ce.success != test) {
					fprintf(stderr, "broadcast: rank %u: message %u: counter %llu, expected %llu\n",
						rank, it, (unsigned long long)ce.success, (unsigned long long)test);
					bad = 1;
				}
			} else {
				if (host_recv(data_fd, half, size, it, o.timeout_ms)) {
					fprintf(stderr, "broadcast: rank %u: message %u of %u B lost\n", rank, it, size);
					bad = 1;
					break;
				}
				done_send(done_fd, &root_done, it, rank);
				for (uint32_t k = 0; k < nkids; k++) {
					struct sockaddr_in d = addr_of(&job, kids[k], HOST_PORT);

					if (host_send(data_fd, &d, half, size, it))
						bad = 1;
				}
			}
			if (memcmp(half, ref, size)) {
				uint32_t i = 0;

				while (half[i] == ref[i])
					i++;
				fprintf(stderr, "broadcast: rank %u: message %u of %u B differs at byte %u (%u, expected %u)\n",
					rank, it, size, i, half[i], ref[i]);
				bad = 1;
			}
			sample_tally_add(checked, (it + 1) * (P - 1), bad);
		}
		if (rank && bad)	/* a rank that gave up: the root stops waiting */
			sample_tally_add(checked, 0, 1);
		if (rank == 0 && !bad) {
			uint64_t sum = 0, mx = 0, p50, p99, pp50, pp99;

			for (uint32_t it = o.warmup; it < N; it++) {
				sum += lat[it];
				if (lat[it] > mx)
					mx = lat[it];
			}
			p50 = sample_percentile(lat + o.warmup, o.iters, 50);
			p99 = sample_percentile(lat + o.warmup, o.iters, 99);
			pp50 = sample_percentile(plat + o.warmup, o.iters, 50);
			pp99 = sample_percentile(plat + o.warmup, o.iters, 99);
			printf("%s P=%u size=%u iters=%u p50=%.1fus p99=%.1fus mean=%.1fus max=%.1fus (root process: p50=%.1fus p99=%.1fus)\n",
			       mode_name(&o), P, size, o.iters, p50 / 1e3, p99 / 1e3,
			       o.iters ? sum / 1e3 / o.iters : 0, mx / 1e3, pp50 / 1e3, pp99 / 1e3);
			if (o.csv) {
				FILE *f = fopen(o.csv, "a");

				if (f) {
					fprintf(f, "%s,%s,%u,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu\n", o.label,
						mode_name(&o), P, size, o.iters,
						(unsigned long long)p50, (unsigned long long)p99,
						(unsigned long long)(o.iters ? sum / o.iters : 0),
						(unsigned long long)mx, (unsigned long long)pp50,
						(unsigned long long)pp99);
					fclose(f);
				}
			}
		}
	}
	if (o.spin) {
		if (rank) {
			ptl_ct_event_t ce = { 0 };

			PtlCTGet(ct, &ce);
			if (!bad && ce.success != ct_total) {
				fprintf(stderr, "broadcast: rank %u: %llu bytes counted, %llu expected (extra deliveries)\n",
					rank, (unsigned long long)ce.success, (unsigned long long)ct_total);
				bad = 1;
			}
			if (!bad && spin_stats_read(srt, &st1) == 0) {
				uint64_t puts = st1.tx_device - st0.tx_device, fo = st1.fanout - st0.fanout;
				uint64_t failed = st1.drops[SPIN_DROP_PUT_FAILED] - st0.drops[SPIN_DROP_PUT_FAILED] +
						  st1.drops[SPIN_DROP_PUT_OVERFLOW] - st0.drops[SPIN_DROP_PUT_OVERFLOW];

				printf("rank %u: %u children, device puts %llu (fan-outs %llu, copies %llu), refused %llu\n",
				       rank, nkids, (unsigned long long)puts, (unsigned long long)fo,
				       (unsigned long long)(st1.fanout_copies - st0.fanout_copies),
				       (unsigned long long)failed);
				if (puts != want_puts || fo != want_fanout || failed) {
					fprintf(stderr, "broadcast: rank %u: %llu device puts in %llu fan-outs, expected %llu in %llu\n",
						rank, (unsigned long long)puts, (unsigned long long)fo,
						(unsigned long long)want_puts, (unsigned long long)want_fanout);
					bad = 1;
				}
			}
			spin_close(srt);
			PtlMEUnlink(meh);
			PtlCTFree(ct);
			PtlHPUFreeMem(hm);
			PtlSpinHandlerUnload(h);
		} else {
			PtlMEUnlink(done_meh);
			PtlCTFree(done_ct);
			PtlHPUFreeMem(hm);
			PtlSpinHandlerUnload(h);
			PtlMDRelease(md);
		}
		if (sk)
			spin_sock_close(sk);
		sample_ni_fini(&s);
	} else {
		free(buf);
		close(data_fd);
	}
	close(done_fd);
	spin_job_free(&job);
	return bad;
}
