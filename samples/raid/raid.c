// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * RAID-5 parity update with sPIN handlers, and the same algorithm on kernel
 * UDP sockets (the host-only version), measured in the same run.
 *
 * One process per rank (SPIN_IFACE, SPIN_HOSTFILE, SPIN_RANK, SAMPLE_DIR):
 *   rank 0        the client: writes random blocks to random data servers,
 *                 waits until each write is durable, checks everything
 *   ranks 1..N    data servers (raid_data.bpf.o on their match entry)
 *   rank N+1      the parity server (raid_parity.bpf.o)
 *
 *   raid [ndata N] [region BYTES] [sizes L[,L...]] [count C] [window W]
 *        [modes spin,udp] [seed S] [csv FILE] [tamper] [timeout-ms T]
 *
 * Every rank gets the same arguments.  "Durable" means: the new data is in
 * the data server's memory AND the parity server has XORed the delta into
 * its parity.  With spin the client learns it from the parity server's
 * completion handler, which puts one 8-byte ack per delta packet; the data
 * server writes a packet's new data before it sends that packet's delta,
 * so once the acks cover the whole block, both are done.  The UDP version
 * keeps exactly that protocol, with processes doing the work.
 *
 * At most W writes are in flight, on disjoint stripe ranges (a RAID
 * controller's stripe lock: two read-modify-writes of one parity byte must
 * not interleave).  At the end every server dumps its memory and the client
 * compares it byte for byte with its model (parity = XOR of the model's
 * data blocks, computed from scratch).  Exit 0 only if all matched.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <linux/types.h>
#include "../sample.h"
#include <spin/wire.h>
#include "raid.h"

#define UDP_PORT 7819
#define MAX_RANKS 34
#define MAX_SIZES 16
#define MAX_WINDOW 16
#define MAX_WRITE (256u << 10)
#define MAX_PKTS (MAX_WRITE / SPIN_MAX_SEG + 1)

struct udp_hdr {		/* host-only version: every datagram */
	uint64_t tag;
	uint64_t off;		/* stripe offset of this datagram's bytes */
	uint32_t len;
	uint32_t src;
};

static struct {
	uint32_t ndata, region, sizes[MAX_SIZES], nsizes, count, window, seed, tamper;
	int timeout_ms;
	const char *csv, *modes;
} cf = { .ndata = 3, .region = 1 << 20, .sizes = { 4096, 65536 }, .nsizes = 2,
	 .count = 200, .window = 1, .seed = 1, .timeout_ms = 2000, .modes = "spin,udp" };

static struct sample_ni sn;
static struct in_addr ips[MAX_RANKS];

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Initial contents of data server r (the parity's is their XOR). */
static void initial(uint8_t *b, uint32_t r)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (cf.seed + 1) + r, v;

	for (uint32_t i = 0; i < cf.region; i += 8) {
		v = rnd(&s);
		memcpy(b + i, &v, 8);
	}
}

static void initial_parity(uint8_t *p)
{
	uint8_t *t = malloc(cf.region);

	memset(p, 0, cf.region);
	for (uint32_t r = 1; r <= cf.ndata; r++) {
		initial(t, r);
		for (uint32_t i = 0; i < cf.region; i++)
			p[i] ^= t[i];
	}
	free(t);
}

static void read_hosts(void)
{
	const char *path = getenv("SPIN_HOSTFILE");
	char line[128];
	uint32_t n = 0;
	FILE *f = path ? fopen(path, "r") : NULL;

	if (!f) {
		fprintf(stderr, "raid: SPIN_HOSTFILE: cannot open\n");
		exit(1);
	}
	while (n < MAX_RANKS && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = 0;
		if (*line && inet_pton(AF_INET, line, &ips[n]) == 1)
			n++;
	}
	fclose(f);
}

static int udp_socket(void)
{
	int fd = sample_udp_socket(INADDR_ANY, UDP_PORT, 8 << 20, 0);
	struct timeval tv = { .tv_usec = 100000 };

	if (fd < 0) {
		perror("raid: udp socket");
		exit(1);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static struct sockaddr_in udp_addr(uint32_t rank)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(UDP_PORT),
				 .sin_addr = ips[rank] };
	return a;
}

/* ------------------------------------------------------------ servers -- */

struct udp_server {
	int fd, parity;
	uint8_t *mem;
	volatile int stop;
	uint64_t bad;
};

/* The host-only version of both handlers: the same work, by a process. */
static void *udp_serve(void *arg)
{
	struct udp_server *u = arg;
	uint8_t buf[2048];
	uint64_t *d = (uint64_t *)(buf + sizeof(struct udp_hdr));
	struct udp_hdr *h = (struct udp_hdr *)buf;

	while (!u->stop) {
		ssize_t n = recv(u->fd, buf, sizeof(buf), 0);
		struct sockaddr_in to;
		uint64_t *m;

		if (n < (ssize_t)sizeof(*h))
			continue;
		if (h->len != n - sizeof(*h) || h->len % 8 || h->off > cf.region ||
		    h->len > cf.region - h->off) {
			u->bad++;
			continue;
		}
		m = (uint64_t *)(u->mem + h->off);
		if (!u->parity) {	/* old, new, delta to parity */
			for (uint32_t i = 0; i < h->len / 8; i++) {
				uint64_t old = m[i];

				m[i] = d[i];
				d[i] ^= old;
			}
			h->src = sn.rank;
			to = udp_addr(cf.ndata + 1);
			sendto(u->fd, buf, n, 0, (struct sockaddr *)&to, sizeof(to));
		} else {		/* XOR the delta, ack the client */
			struct udp_hdr a = *h;

			for (uint32_t i = 0; i < h->len / 8; i++)
				m[i] ^= d[i];
			to = udp_addr(RAID_TAG_RANK(h->tag));
			sendto(u->fd, &a, sizeof(a), 0, (struct sockaddr *)&to, sizeof(to));
		}
	}
	return NULL;
}

static void dump(const char *mode, const void *mem)
{
	char p[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s.%u", getenv("SAMPLE_DIR"), mode, sn.rank);
	f = fopen(p, "w");
	if (!f || fwrite(mem, 1, cf.region, f) != cf.region || fclose(f)) {
		fprintf(stderr, "raid: rank %u: cannot write %s\n", sn.rank, p);
		exit(1);
	}
}

static int server(void)
{
	int parity = sn.rank == cf.ndata + 1;
	const char *obj = parity ? "raid_parity.bpf.o" : "raid_data.bpf.o";
	union { struct raid_data_state d; struct raid_parity_state p; } st = {};
	struct udp_server u = { .parity = parity };
	ptl_handle_handler_t h;
	ptl_handle_hpu_mem_t mem;
	ptl_handle_me_t meh;
	pthread_t th;
	char path[600];
	void *win;
	int rc;

	PTL_CHECK(PtlSpinHostAlloc(sn.ni, cf.region, &win));
	if (parity)
		initial_parity(win);
	else
		initial(win, sn.rank);
	u.mem = malloc(cf.region);
	memcpy(u.mem, win, cf.region);

	sample_obj_path(obj, path, sizeof(path));
	rc = PtlSpinHandlerLoad(sn.ni, path, &h);
	if (rc != PTL_OK) {
		fprintf(stderr, "raid: rank %u: PtlSpinHandlerLoad(%s) = %d\n%s\n", sn.rank, path, rc,
			PtlSpinErrmsg());
		return 1;
	}
	PTL_CHECK(PtlHPUAllocMem(sizeof(st), sn.ni, &mem));
	if (parity) {
		st.p.ack_bits = RAID_ACK_BITS;
	} else {
		st.d.parity_rank = cf.ndata + 1;
		st.d.parity_bits = RAID_PARITY_BITS;
	}
	PTL_CHECK(PtlHPUWriteMem(mem, 0, &st, sizeof(st)));
	ptl_me_t me = {
		.start = win, .length = cf.region, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
		.options = PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE,
		.match_id.rank = PTL_RANK_ANY,
		.match_bits = parity ? RAID_PARITY_BITS : RAID_DATA_BITS,
		.handlers = h, .hpu_memory = mem,
	};
	PTL_CHECK(PtlMEAppend(sn.ni, sn.pt, &me, PTL_PRIORITY_LIST, NULL, &meh));

	u.fd = udp_socket();
	pthread_create(&th, NULL, udp_serve, &u);
	sample_barrier("ready", sn.rank, sn.size, 30000);
	sample_barrier("done", sn.rank, sn.size, 3600 * 1000);
	u.stop = 1;
	pthread_join(th, NULL);
	dump("spin", win);
	dump("udp", u.mem);
	if (u.bad)
		fprintf(stderr, "raid: rank %u: %llu malformed UDP datagrams\n", sn.rank,
			(unsigned long long)u.bad);
	sample_barrier("dumped", sn.rank, sn.size, 30000);
	PtlMEUnlink(meh);
	PtlSpinHandlerUnload(h);
	return u.bad ? 1 : 0;
}

/* ------------------------------------------------------------- client -- */

struct wr {
	int busy;
	uint64_t seq, t0;
	uint32_t d, off, len, acked, npk;
	uint8_t seen[MAX_PKTS];
};

static struct wr wrs[MAX_WINDOW];
static uint8_t *model[2][MAX_RANKS];	/* [spin, udp][rank] */
static uint8_t *sendbuf, *ackbuf;
static ptl_handle_md_t mdh;
static int ufd;

static struct wr *find(uint64_t seq)
{
	for (uint32_t i = 0; i < cf.window; i++)
		if (wrs[i].busy && wrs[i].seq == seq)
			return &wrs[i];
	return NULL;
}

/* Count one ack; 1 when the write is complete, -1 on a protocol error. */
static int acked(uint64_t tag, uint64_t roff, uint32_t len, uint32_t src)
{
	struct wr *w = find(RAID_TAG_SEQ(tag));
	uint32_t k;

	if (RAID_TAG_RANK(tag) != sn.rank || !w) {
		fprintf(stderr, "raid: ack for an unknown write (tag %#llx)\n", (unsigned long long)tag);
		return -1;
	}
	k = (uint32_t)(roff - w->off) / SPIN_MAX_SEG;
	if (roff < w->off || roff + len > (uint64_t)w->off + w->len ||
	    (roff - w->off) % SPIN_MAX_SEG || k >= w->npk || w->seen[k] || src != w->d) {
		fprintf(stderr, "raid: bad ack: write %llu [%u,+%u) to %u, ack [%llu,+%u) from %u\n",
			(unsigned long long)w->seq, w->off, w->len, w->d, (unsigned long long)roff,
			len, src);
		return -1;
	}
	w->seen[k] = 1;
	w->acked += len;
	return w->acked == w->len;
}

static int overlaps(uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < cf.window; i++)
		if (wrs[i].busy && off < wrs[i].off + wrs[i].len && wrs[i].off < off + len)
			return 1;
	return 0;
}

static void issue(int mode, struct wr *w, uint32_t slot, uint64_t *rs)
{
	uint8_t *b = sendbuf + (size_t)slot * MAX_WRITE;

	for (uint32_t i = 0; i < w->len; i += 8) {
		uint64_t v = rnd(rs);
		memcpy(b + i, &v, 8);
	}
	memcpy(model[mode][w->d] + w->off, b, w->len);
	w->t0 = sample_now_ns();
	if (mode == 0) {
		PTL_CHECK(PtlPut(mdh, (ptl_size_t)slot * MAX_WRITE, w->len, PTL_NO_ACK_REQ,
				 (ptl_process_t){ .rank = w->d }, RAID_PT, RAID_DATA_BITS, w->off, NULL,
				 w->seq));
	} else {
		static struct mmsghdr mm[MAX_PKTS];
		static struct iovec iov[MAX_PKTS][2];
		static struct udp_hdr hd[MAX_PKTS];
		struct sockaddr_in to = udp_addr(w->d);
		uint32_t n = 0, sent = 0;

		for (uint32_t o = 0; o < w->len; o += SPIN_MAX_SEG, n++) {
			uint32_t l = w->len - o < SPIN_MAX_SEG ? w->len - o : SPIN_MAX_SEG;

			hd[n] = (struct udp_hdr){ .tag = RAID_TAG(sn.rank, w->seq), .off = w->off + o,
						  .len = l, .src = sn.rank };
			iov[n][0] = (struct iovec){ &hd[n], sizeof(hd[n]) };
			iov[n][1] = (struct iovec){ b + o, l };
			mm[n].msg_hdr = (struct msghdr){ .msg_name = &to, .msg_namelen = sizeof(to),
							 .msg_iov = iov[n], .msg_iovlen = 2 };
		}
		while (sent < n) {
			int r = sendmmsg(ufd, mm + sent, n - sent, 0);

			if (r < 0) {
				perror("raid: sendmmsg");
				exit(1);
			}
			sent += r;
		}
	}
}

/* Wait for the next ack (spin: event queue, udp: socket, both busy-poll). */
static int next_ack(int mode, uint64_t *tag, uint64_t *roff, uint32_t *len, uint32_t *src)
{
	if (mode == 0) {
		ptl_event_t ev;
		unsigned int which;
		int rc = PtlEQPoll(&sn.eq, 1, 1, &ev, &which);
		struct raid_ack a;

		if (rc == PTL_EQ_EMPTY)
			return 0;
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
			fprintf(stderr, "raid: PtlEQPoll = %d (%s)\n", rc, PtlSpinErrmsg());
			return -1;
		}
		if (ev.type != PTL_EVENT_PUT || ev.ni_fail_type != PTL_NI_OK ||
		    ev.match_bits != RAID_ACK_BITS || ev.mlength != sizeof(a) ||
		    ev.remote_offset > cf.region) {
			fprintf(stderr, "raid: unexpected event type %d fail %d bits %#llx\n", ev.type,
				ev.ni_fail_type, (unsigned long long)ev.match_bits);
			return -1;
		}
		memcpy(&a, ackbuf + ev.remote_offset, sizeof(a));
		*tag = ev.hdr_data;
		*roff = ev.remote_offset;
		*len = a.length;
		*src = a.source;
		return 1;
	} else {
		struct udp_hdr a;
		ssize_t n = recv(ufd, &a, sizeof(a), MSG_DONTWAIT);

		if (n < 0)
			return 0;
		if (n != sizeof(a))
			return -1;
		*tag = a.tag;
		*roff = a.off;
		*len = a.len;
		*src = a.src;
		return 1;
	}
}

static const char *mode_name[2] = { "spin", "udp" };

/* count writes of `size` bytes; latencies in lat[]; 0 or -1 */
static int run(int mode, uint32_t size, uint64_t *seq, uint64_t *rs, uint64_t *lat)
{
	uint32_t issued = 0, done = 0, inflight = 0;

	while (done < cf.count) {
		while (inflight < cf.window && issued < cf.count) {
			uint32_t slot = 0, off = 0, d = 1 + rnd(rs) % cf.ndata, tries;
			struct wr *w;

			while (wrs[slot].busy)
				slot++;
			for (tries = 0; tries < 16; tries++) {
				off = (uint32_t)(rnd(rs) % ((cf.region - size) / 8 + 1)) * 8;
				if (!overlaps(off, size))
					break;
			}
			if (tries == 16)
				break;	/* stripe locked: wait for a completion */
			w = &wrs[slot];
			memset(w, 0, sizeof(*w));
			*w = (struct wr){ .busy = 1, .seq = ++*seq, .d = d, .off = off, .len = size,
					  .npk = (size + SPIN_MAX_SEG - 1) / SPIN_MAX_SEG };
			issue(mode, w, slot, rs);
			issued++;
			inflight++;
		}
		for (;;) {
			uint64_t tag, roff, now;
			uint32_t len, src;
			int r = next_ack(mode, &tag, &roff, &len, &src);

			if (r < 0)
				return -1;
			if (r > 0) {
				r = acked(tag, roff, len, src);
				if (r < 0)
					return -1;
				if (r > 0) {
					struct wr *w = find(RAID_TAG_SEQ(tag));

					lat[done++] = sample_now_ns() - w->t0;
					w->busy = 0;
					inflight--;
					break;
				}
				continue;
			}
			now = sample_now_ns();
			for (uint32_t i = 0; i < cf.window; i++)
				if (wrs[i].busy && now - wrs[i].t0 > cf.timeout_ms * 1000000ull) {
					fprintf(stderr, "raid: %s: write %llu of %u bytes to rank %u at %u: "
						"%u of %u bytes acknowledged after %d ms\n",
						mode_name[mode], (unsigned long long)wrs[i].seq, wrs[i].len,
						wrs[i].d, wrs[i].off, wrs[i].acked, wrs[i].len,
						cf.timeout_ms);
					return -1;
				}
		}
	}
	return 0;
}

static int verify(int mode)
{
	uint8_t *got = malloc(cf.region), *par = calloc(1, cf.region);
	int bad = 0;

	if (cf.tamper)
		model[mode][1 + cf.tamper % cf.ndata][cf.tamper % cf.region] ^= 0x40;
	for (uint32_t r = 1; r <= cf.ndata; r++)
		for (uint32_t i = 0; i < cf.region; i++)
			par[i] ^= model[mode][r][i];
	for (uint32_t r = 1; r <= cf.ndata + 1 && !bad; r++) {
		const uint8_t *want = r <= cf.ndata ? model[mode][r] : par;
		char p[600];
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s.%u", getenv("SAMPLE_DIR"), mode_name[mode], r);
		f = fopen(p, "r");
		if (!f || fread(got, 1, cf.region, f) != cf.region) {
			fprintf(stderr, "raid: cannot read %s\n", p);
			bad = 1;
		} else if (memcmp(got, want, cf.region)) {
			uint32_t i = 0;

			while (got[i] == want[i])
				i++;
			fprintf(stderr, "raid: %s: rank %u (%s) differs from the host model at byte %u: "
				"%#x, want %#x\n", mode_name[mode], r, r <= cf.ndata ? "data" : "parity",
				i, got[i], want[i]);
			bad = 1;
		}
		if (f)
			fclose(f);
	}
	if (!bad)
		printf("verify %s: %u data servers and the parity server match the host model "
		       "(%u bytes each)\n", mode_name[mode], cf.ndata, cf.region);
	free(got);
	free(par);
	return bad;
}

static int client(void)
{
	int use[2] = { strstr(cf.modes, "spin") != NULL, strstr(cf.modes, "udp") != NULL };
	uint64_t *lat = calloc(cf.count, sizeof(*lat)), seq = 0, rs = 0x2545f4914f6cdd1dull + cf.seed;
	ptl_handle_me_t meh;
	FILE *csv = NULL;
	int bad = 0;

	sendbuf = malloc((size_t)MAX_WINDOW * MAX_WRITE);
	for (int m = 0; m < 2; m++)
		for (uint32_t r = 1; r <= cf.ndata; r++) {
			model[m][r] = malloc(cf.region);
			initial(model[m][r], r);
		}
	PTL_CHECK(PtlSpinHostAlloc(sn.ni, cf.region + 8, (void **)&ackbuf));
	ptl_me_t me = {
		.start = ackbuf, .length = cf.region + 8, .ct_handle = PTL_CT_NONE,
		.uid = PTL_UID_ANY, .options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE,
		.match_id.rank = PTL_RANK_ANY, .match_bits = RAID_ACK_BITS,
	};
	PTL_CHECK(PtlMEAppend(sn.ni, sn.pt, &me, PTL_PRIORITY_LIST, NULL, &meh));
	ptl_md_t md = { .start = sendbuf, .length = (size_t)MAX_WINDOW * MAX_WRITE,
			.options = PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_SUCCESS_DISABLE,
			.eq_handle = sn.eq, .ct_handle = PTL_CT_NONE };
	PTL_CHECK(PtlMDBind(sn.ni, &md, &mdh));
	ufd = udp_socket();
	if (cf.csv) {
		csv = fopen(cf.csv, "a");
		if (!csv) {
			perror(cf.csv);
			return 1;
		}
	}
	sample_barrier("ready", sn.rank, sn.size, 30000);
	sample_gate(30000);

	/* sizes outer, modes inner: both versions see the same conditions */
	for (uint32_t si = 0; si < cf.nsizes && !bad; si++)
		for (int m = 0; m < 2 && !bad; m++) {
			uint64_t p50, p99, p0, sum = 0;

			if (!use[m])
				continue;
			if (run(m, cf.sizes[si], &seq, &rs, lat)) {
				bad = 1;
				break;
			}
			for (uint32_t i = 0; i < cf.count; i++)
				sum += lat[i];
			p50 = sample_percentile(lat, cf.count, 50);
			p99 = sample_percentile(lat, cf.count, 99);
			p0 = lat[0];
			printf("%-4s size %6u: %u writes (window %u), latency p50 %.1f us, p99 %.1f us, "
			       "min %.1f us, mean %.1f us\n", mode_name[m], cf.sizes[si], cf.count,
			       cf.window, p50 / 1e3, p99 / 1e3, p0 / 1e3, sum / 1e3 / cf.count);
			if (csv)
				fprintf(csv, "%s,%u,%u,%u,%.2f,%.2f,%.2f,%.2f\n", mode_name[m],
					cf.sizes[si], cf.count, cf.window, p50 / 1e3, p99 / 1e3,
					p0 / 1e3, sum / 1e3 / cf.count);
		}
	if (csv)
		fclose(csv);
	sample_barrier("done", sn.rank, sn.size, 30000);
	sample_barrier("dumped", sn.rank, sn.size, 60000);
	for (int m = 0; m < 2; m++)
		if (use[m] && !bad)
			bad |= verify(m);
	PtlMEUnlink(meh);
	return bad;
}

int main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "tamper") && v) {
			cf.tamper = strtoul(v, NULL, 0);
			i++;
			continue;
		}
		if (!v)
			goto usage;
		i++;
		if (!strcmp(a, "ndata"))
			cf.ndata = strtoul(v, NULL, 0);
		else if (!strcmp(a, "region"))
			cf.region = strtoul(v, NULL, 0);
		else if (!strcmp(a, "count"))
			cf.count = strtoul(v, NULL, 0);
		else if (!strcmp(a, "window"))
			cf.window = strtoul(v, NULL, 0);
		else if (!strcmp(a, "seed"))
			cf.seed = strtoul(v, NULL, 0);
		else if (!strcmp(a, "timeout-ms"))
			cf.timeout_ms = atoi(v);
		else if (!strcmp(a, "csv"))
			cf.csv = v;
		else if (!strcmp(a, "modes"))
			cf.modes = v;
		else if (!strcmp(a, "sizes")) {
			char *p = (char *)v;

			cf.nsizes = 0;
			while (*p && cf.nsizes < MAX_SIZES) {
				cf.sizes[cf.nsizes++] = strtoul(p, &p, 0);
				if (*p == ',')
					p++;
			}
		} else
			goto usage;
	}
	if (cf.ndata < 2 || cf.ndata + 2 > MAX_RANKS || cf.region % 8 || !cf.count ||
	    !cf.window || cf.window > MAX_WINDOW) {
		fprintf(stderr, "raid: bad arguments\n");
		return 2;
	}
	for (uint32_t i = 0; i < cf.nsizes; i++)
		if (!cf.sizes[i] || cf.sizes[i] % 8 || cf.sizes[i] > MAX_WRITE ||
		    cf.sizes[i] > cf.region) {
			fprintf(stderr, "raid: sizes must be multiples of 8, at most %u and the region\n",
				MAX_WRITE);
			return 2;
		}
	read_hosts();
	sample_ni_init(&sn, RAID_PT, 4096);
	if (sn.size != cf.ndata + 2) {
		fprintf(stderr, "raid: %u ranks in the job, need ndata + 2 = %u\n", sn.size,
			cf.ndata + 2);
		return 2;
	}
	rc = sn.rank == 0 ? client() : server();
	sample_ni_fini(&sn);
	return rc;
usage:
	fprintf(stderr, "usage: raid [ndata N] [region BYTES] [sizes L[,L...]] [count C] [window W]\n"
			"            [modes spin,udp] [seed S] [csv FILE] [tamper N] [timeout-ms T]\n");
	return 2;
}
