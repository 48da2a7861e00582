// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MPI vector datatype receive (sPIN paper, strided receive; issue use case 3).
 *
 * Rank 0 sends a contiguous message, rank 1 wants it in a strided layout:
 * block k of `block` bytes at k * stride of its buffer, the gaps untouched.
 * Three ways to get there, measured end to end (from the sender's first
 * send to the data in place in the strided layout, on CLOCK_MONOTONIC,
 * which both namespaces share: the sender puts its start time in hdr_data):
 *
 *   spin     a match entry with datatypes.bpf.o: the payload handler
 *            scatters every packet into the strided buffer (host window)
 *   portals  the same Portals put into a contiguous host-window entry
 *            without handlers (deposited by the runtime), then the host
 *            unpacks with one memcpy per block
 *   udp      the host-only version: the message arrives on a kernel UDP
 *            socket (libspin's spin_sock, packets of the same size),
 *            reassembled contiguous, then unpacked on the host
 *
 * Every received message is checked byte for byte, gaps and tail included,
 * against the host's unpack of the same data.  Same arguments on both ranks
 * (SPIN_RANK 0 sends, 1 receives; SAMPLE_DIR for the barrier):
 *
 *   datatypes [mode spin,portals,udp] [size N] [block B[,B...]] [gap G]
 *             [reps N] [warmup N] [order inorder|reverse|shuffle]
 *             [maxlost N] [timeout-ms T] [csv FILE] [quiet]
 *
 *   gap G    bytes between blocks (stride = block + G); default: block
 *   order    spin mode only: the sender sends with spin_sock_send and this
 *            packet permutation instead of PtlPut (out-of-order delivery)
 *   maxlost  up to N messages per mode and block size may be lost (a UDP
 *            message lacking a packet: no retransmission) or fail (a put
 *            whose event reports a failure); default 0.  They are counted
 *            and reported, not timed; the receiver says why on stderr
 *   timeout-ms  how long the receiver waits for a message: a put (default
 *            5000) or a whole UDP message (default 1000: then it lost a
 *            packet); the tests give a generous T, a loaded machine can
 *            miss these
 *   csv      the receiver appends mode,size,block,stride,n,median_us,
 *            min_us,p90_us,mbps,lost,unpack_us,time_vs_spin lines
 *            (unpack_us: median time of the host unpack, 0 for spin;
 *            time_vs_spin: median over the repetitions of this mode's
 *            time / spin's time in the same repetition, 0 without spin)
 *
 * Order: block sizes, repetitions, then the modes one after the other, so
 * a burst of load elsewhere on the machine hits every mode alike.
 * Exit status 0 only if every message arrived intact.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <spin/spin.h>

#include "../sample.h"

#define PT_INDEX	5
#define BITS_SPIN	0x5d7
#define BITS_PLAIN	0x5d8
#define UDP_PORT	7791		/* not the runtime's port: the kernel gets it */
#define CANARY		0xa5
#define TAIL		4096		/* bytes after the extent that must stay untouched */
#define MAX_BLOCKS	16
#define TIMEOUT_MS	5000
#define UDP_TIMEOUT_MS	1000		/* then a UDP message lost a packet */

enum { M_SPIN, M_PORTALS, M_UDP, M_N };
static const char *mode_name[M_N] = { "spin", "portals", "udp" };

typedef struct {	/* the handler memory: datatypes.bpf.c's vector_t */
	uint64_t blocklen, stride;
} vector_t;

static struct {
	int modes[M_N], nmodes;
	uint64_t size, blocks[MAX_BLOCKS], gap;
	int nblocks, gap_set, reps, warmup, quiet, maxlost;
	int timeout_ms, udp_timeout_ms;
	const char *order, *csv;
} o = { .size = 4 << 20, .reps = 5, .warmup = 1, .order = "inorder",
	.timeout_ms = TIMEOUT_MS, .udp_timeout_ms = UDP_TIMEOUT_MS };

static uint64_t stride_of(uint64_t block) { return block + (o.gap_set ? o.gap : block); }

/* Bytes from the first to the last byte of the strided layout. */
static uint64_t extent(uint64_t size, uint64_t block, uint64_t stride)
{
	uint64_t n = (size + block - 1) / block;

	return n ? (n - 1) * stride + (size - (n - 1) * block) : 0;
}

/* The host unpack (the baselines' second step and the reference). */
static void unpack(uint8_t *dst, const uint8_t *src, uint64_t size, uint64_t block, uint64_t stride)
{
	for (uint64_t x = 0, k = 0; x < size; x += block, k++)
		memcpy(dst + k * stride, src + x, size - x < block ? size - x : block);
}

/* Message of repetition `rep`: differs per rep and per packet, so a stale,
 * misplaced or reused packet is caught. */
static void pattern(uint8_t *b, uint64_t size, uint32_t rep)
{
	for (uint64_t i = 0; i < size; i++)
		b[i] = (uint8_t)(i * 13 + (i / SPIN_MAX_SEG) * 101 + rep * 29 + (i >> 16));
}

static void parse_list(char *p, uint64_t *v, int *n, int max)
{
	*n = 0;
	while (*p && *n < max) {
		v[(*n)++] = strtoull(p, &p, 0);
		if (*p == ',')
			p++;
	}
}

static int parse(int argc, char **argv)
{
	o.nmodes = 3;
	for (int m = 0; m < M_N; m++)
		o.modes[m] = m;
	o.blocks[0] = 4096;
	o.nblocks = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "quiet")) {
			o.quiet = 1;
			continue;
		}
		if (!v)
			goto bad;
		i++;
		if (!strcmp(a, "mode")) {
			char buf[64], *s, *save = NULL;

			snprintf(buf, sizeof(buf), "%s", v);
			o.nmodes = 0;
			for (s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
				int m;

				for (m = 0; m < M_N && strcmp(s, mode_name[m]); m++)
					;
				if (m == M_N || o.nmodes == M_N)
					goto bad;
				o.modes[o.nmodes++] = m;
			}
		} else if (!strcmp(a, "size"))
			o.size = strtoull(v, NULL, 0);
		else if (!strcmp(a, "block"))
			parse_list(argv[i], o.blocks, &o.nblocks, MAX_BLOCKS);
		else if (!strcmp(a, "gap")) {
			o.gap = strtoull(v, NULL, 0);
			o.gap_set = 1;
		} else if (!strcmp(a, "reps"))
			o.reps = atoi(v);
		else if (!strcmp(a, "warmup"))
			o.warmup = atoi(v);
		else if (!strcmp(a, "maxlost"))
			o.maxlost = atoi(v);
		else if (!strcmp(a, "timeout-ms"))
			o.timeout_ms = o.udp_timeout_ms = atoi(v);
		else if (!strcmp(a, "order"))
			o.order = v;
		else if (!strcmp(a, "csv"))
			o.csv = v;
		else
			goto bad;
	}
	if (!o.size || o.size > SPIN_MAX_MSG || o.reps < 1 || !o.nmodes || !o.nblocks || o.timeout_ms < 1)
		goto bad;
	for (int b = 0; b < o.nblocks; b++)
		if (!o.blocks[b])
			goto bad;
	if (strcmp(o.order, "inorder") && strcmp(o.order, "reverse") && strcmp(o.order, "shuffle"))
		goto bad;
	if (strcmp(o.order, "inorder") && (o.nmodes != 1 || o.modes[0] != M_SPIN)) {
		fprintf(stderr, "datatypes: order %s needs mode spin alone\n", o.order);
		return -1;
	}
	return 0;
bad:
	fprintf(stderr,
		"usage: datatypes [mode spin,portals,udp] [size N] [block B[,B...]] [gap G]\n"
		"                 [reps N] [warmup N] [order inorder|reverse|shuffle] [maxlost N]\n"
		"                 [timeout-ms T] [csv FILE] [quiet]\n");
	return -1;
}

static const char *obj_path(void)
{
	static char p[600];
	char dir[512];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	char *s;

	dir[n > 0 ? n : 0] = 0;
	s = strrchr(dir, '/');
	if (s)
		*s = 0;
	snprintf(p, sizeof(p), "%s/datatypes.bpf.o", n > 0 ? dir : ".");
	return p;
}

/* ------------------------------------------------------------ sender -- */

static int sender(void)
{
	int raw = strcmp(o.order, "inorder") != 0, need_ptl = 0, need_sock = raw;
	uint32_t npk = (uint32_t)((o.size + SPIN_MAX_SEG - 1) / SPIN_MAX_SEG), *order = NULL;
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct spin_sock *sk = NULL;
	struct sample_ni s = { 0 };
	ptl_handle_md_t md;
	struct spin_job job;
	uint8_t *buf = malloc(o.size);
	char name[96];

	for (int i = 0; i < o.nmodes; i++) {
		need_ptl |= !raw && o.modes[i] != M_UDP;
		need_sock |= o.modes[i] == M_UDP;
	}
	if (!buf)
		return 1;
	if (need_ptl) {
		ptl_md_t d = { .start = buf, .length = o.size, .ct_handle = PTL_CT_NONE };

		sample_ni_init(&s, PT_INDEX, 256);
		d.eq_handle = s.eq;
		PTL_CHECK(PtlMDBind(s.ni, &d, &md));
	}
	if (need_sock) {
		if (spin_job_load(&job, NULL) < 0 || job.nhosts < 2) {
			fprintf(stderr, "datatypes: hostfile: %s\n", spin_errmsg());
			return 1;
		}
		dst.sin_addr = job.hosts[1].ip;
		spin_job_free(&job);
		if (spin_sock_open(NULL, 0, &sk) < 0) {
			fprintf(stderr, "datatypes: socket: %s\n", spin_errmsg());
			return 1;
		}
		order = malloc(sizeof(*order) * npk);
		for (uint32_t i = 0; i < npk; i++)
			order[i] = !strcmp(o.order, "reverse") ? npk - 1 - i : i;
		srand(7);
	}
	/* the same order as the receiver: blocks, repetitions, then the modes
	 * one after the other (so a burst of load elsewhere hits all of them) */
	for (int b = 0; b < o.nblocks; b++)
		for (int rep = 0; rep < o.warmup + o.reps; rep++) {
			pattern(buf, o.size, (uint32_t)rep);
			for (int mi = 0; mi < o.nmodes; mi++) {
				int m = o.modes[mi];
				uint64_t t0;
				int rc;

				if (!strcmp(o.order, "shuffle"))
					for (uint32_t i = npk - 1; i > 0; i--) {
						uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];

						order[i] = order[j];
						order[j] = t;
					}
				snprintf(name, sizeof(name), "ready.%s.%d.%d", mode_name[m], b, rep);
				sample_barrier(name, 0, 2, 30000);
				t0 = sample_now_ns();
				if (m == M_UDP || raw) {
					struct spin_msg_args a = {
						.op = SPIN_OP_PUT, .pt_index = PT_INDEX, .src_rank = 0,
						.dst_rank = 1, .match_bits = BITS_SPIN, .hdr_data = t0,
						.seg_size = SPIN_MAX_SEG,
					};

					dst.sin_port = htons(m == M_UDP ? UDP_PORT : SPIN_DEFAULT_PORT);
					rc = spin_sock_send(sk, &dst, &a, buf, (uint32_t)o.size,
							    raw ? order : NULL);
					if (rc < 0) {
						fprintf(stderr, "datatypes: send: %s\n", spin_errmsg());
						return 1;
					}
				} else {
					ptl_event_t ev;

					PTL_CHECK(PtlPut(md, 0, o.size, PTL_NO_ACK_REQ,
							 (ptl_process_t){ .rank = 1 }, PT_INDEX,
							 m == M_SPIN ? BITS_SPIN : BITS_PLAIN, 0, NULL, t0));
					do
						PTL_CHECK(PtlEQWait(s.eq, &ev));
					while (ev.type != PTL_EVENT_SEND);
					if (ev.ni_fail_type != PTL_NI_OK) {
						fprintf(stderr, "datatypes: %s block %d rep %d: send failed: %d\n",
							mode_name[m], b, rep, ev.ni_fail_type);
						if (!o.maxlost)
							return 1;
					}
				}
				snprintf(name, sizeof(name), "done.%s.%d.%d", mode_name[m], b, rep);
				sample_barrier(name, 0, 2, 30000);
			}
		}
	if (sk)
		spin_sock_close(sk);
	if (need_ptl) {
		PtlMDRelease(md);
		sample_ni_fini(&s);
	}
	free(order);
	free(buf);
	return 0;
}

/* ---------------------------------------------------------- receiver -- */

struct rx {
	struct sample_ni s;
	ptl_handle_handler_t h;
	struct spin_sock *sk;
	uint8_t *strided, *contig, *udp_buf, *want, *src;
	uint64_t cap;		/* bytes of `strided` */
};

/* Wait for the put of `bits`; its hdr_data is the sender's start time.
 * 0: arrived intact; 1: the put failed (its event says so); -1: error. */
static int wait_put(struct rx *r, uint64_t bits, uint64_t *t0)
{
	ptl_event_t ev;
	unsigned int which;

	for (;;) {
		int rc = PtlEQPoll(&r->s.eq, 1, o.timeout_ms, &ev, &which);

		if (rc == PTL_EQ_EMPTY) {
			fprintf(stderr, "datatypes: no message within %d ms\n", o.timeout_ms);
			return -1;
		}
		if (rc != PTL_OK) {
			fprintf(stderr, "datatypes: PtlEQPoll = %d (%s)\n", rc, PtlSpinErrmsg());
			return -1;
		}
		if (ev.type != PTL_EVENT_PUT)
			continue;
		if (ev.ni_fail_type != PTL_NI_OK || ev.match_bits != bits || ev.mlength != o.size) {
			fprintf(stderr, "datatypes: put event: fail %d, bits %#llx, mlength %llu (want %llu)\n",
				ev.ni_fail_type, (unsigned long long)ev.match_bits,
				(unsigned long long)ev.mlength, (unsigned long long)o.size);
			return ev.ni_fail_type != PTL_NI_OK ? 1 : -1;
		}
		*t0 = ev.hdr_data;
		return 0;
	}
}

static int check(const struct rx *r, uint64_t ext, const char *what, int rep)
{
	uint64_t n = ext + TAIL;

	if (!memcmp(r->strided, r->want, n))
		return 0;
	for (uint64_t i = 0; i < n; i++)
		if (r->strided[i] != r->want[i]) {
			fprintf(stderr, "datatypes: %s rep %d: byte %llu of the strided buffer is %#x, "
				"want %#x (%s)\n", what, rep, (unsigned long long)i, r->strided[i],
				r->want[i], i >= ext ? "after the extent" :
				r->want[i] == CANARY ? "maybe a gap" : "in a block");
			break;
		}
	return -1;
}

/* Times of mode m, repetition i (0 when not measured). */
static uint64_t *lat, *unp;
#define LAT(m, i) lat[(m) * o.reps + (i)]
#define UNP(m, i) unp[(m) * o.reps + (i)]

static uint64_t median_of(uint64_t *v, int n)
{
	uint64_t *c = malloc(sizeof(*c) * (n ? n : 1)), x;
	int k = 0;

	for (int i = 0; i < n; i++)
		if (v[i])
			c[k++] = v[i];
	x = sample_percentile(c, k, 50);
	free(c);
	return x;
}

/*
 * One mode's line: medians over the repetitions, and the median over the
 * repetitions of this mode's time / spin's time of the same repetition
 * (paired: both messages were sent back to back, under the same load).
 */
static int report(FILE *csv, int m, uint64_t block, uint64_t stride, int lost)
{
	uint64_t v[o.reps], p50, p90, pmin, u50;
	double ratios[o.reps], vs_spin = 0;
	int n = 0, nr = 0;

	for (int i = 0; i < o.reps; i++)
		if (LAT(m, i)) {
			v[n++] = LAT(m, i);
			if (LAT(M_SPIN, i))
				ratios[nr++] = (double)LAT(m, i) / (double)LAT(M_SPIN, i);
		}
	if (!n) {
		fprintf(stderr, "datatypes: %s block %llu: every message lost a packet\n", mode_name[m],
			(unsigned long long)block);
		return -1;
	}
	pmin = sample_percentile(v, n, 0);
	p50 = sample_percentile(v, n, 50);
	p90 = sample_percentile(v, n, 90);
	u50 = median_of(&UNP(m, 0), o.reps);
	if (nr) {	/* median of the paired ratios */
		for (int i = 1; i < nr; i++)
			for (int j = i; j > 0 && ratios[j - 1] > ratios[j]; j--) {
				double t = ratios[j];

				ratios[j] = ratios[j - 1];
				ratios[j - 1] = t;
			}
		vs_spin = ratios[(nr - 1) / 2];
	}
	if (!o.quiet)
		printf("%-8s size %8llu block %6llu stride %6llu: %d msgs intact, median %9.1f us "
		       "(min %9.1f, p90 %9.1f, unpack %7.1f), %8.1f MB/s, time/spin %.2f%s\n",
		       mode_name[m], (unsigned long long)o.size, (unsigned long long)block,
		       (unsigned long long)stride, n, p50 / 1e3, pmin / 1e3, p90 / 1e3, u50 / 1e3,
		       o.size * 1e3 / p50, vs_spin, lost ? ", some lost" : "");
	if (lost)
		printf("%-8s block %6llu: %d messages lost or failed\n", mode_name[m],
		       (unsigned long long)block, lost);
	if (csv)
		fprintf(csv, "%s,%llu,%llu,%llu,%d,%.2f,%.2f,%.2f,%.2f,%d,%.2f,%.3f\n", mode_name[m],
			(unsigned long long)o.size, (unsigned long long)block, (unsigned long long)stride,
			n, p50 / 1e3, pmin / 1e3, p90 / 1e3, o.size * 1e3 / p50, lost, u50 / 1e3, vs_spin);
	return 0;
}

static int receiver(void)
{
	struct rx r = { 0 };
	uint64_t maxext = 0;
	int bad = 0, need_plain = 0, need_udp = 0;
	FILE *csv = NULL;
	char name[96];

	for (int b = 0; b < o.nblocks; b++) {
		uint64_t e = extent(o.size, o.blocks[b], stride_of(o.blocks[b]));

		maxext = e > maxext ? e : maxext;
	}
	for (int i = 0; i < o.nmodes; i++) {
		need_plain |= o.modes[i] == M_PORTALS;
		need_udp |= o.modes[i] == M_UDP;
	}
	sample_ni_init(&r.s, PT_INDEX, 256);
	r.cap = maxext + TAIL;
	PTL_CHECK(PtlSpinHostAlloc(r.s.ni, r.cap, (void **)&r.strided));
	if (need_plain)
		PTL_CHECK(PtlSpinHostAlloc(r.s.ni, o.size, (void **)&r.contig));
	if (need_udp) {
		r.udp_buf = malloc(o.size);
		if (spin_sock_open(NULL, UDP_PORT, &r.sk) < 0) {
			fprintf(stderr, "datatypes: socket: %s\n", spin_errmsg());
			return 1;
		}
	}
	r.want = malloc(r.cap);
	r.src = malloc(o.size);
	lat = calloc((size_t)M_N * o.reps, sizeof(*lat));
	unp = calloc((size_t)M_N * o.reps, sizeof(*unp));
	if (!lat || !unp || !r.want || !r.src || (need_udp && !r.udp_buf))
		return 1;
	if (PtlSpinHandlerLoad(r.s.ni, obj_path(), &r.h) != PTL_OK) {
		fprintf(stderr, "datatypes: PtlSpinHandlerLoad %s: %s\n", obj_path(), PtlSpinErrmsg());
		return 1;
	}
	if (o.csv && !(csv = fopen(o.csv, "a"))) {
		perror(o.csv);
		return 1;
	}
	for (int b = 0; b < o.nblocks && !bad; b++) {
		uint64_t block = o.blocks[b], stride = stride_of(block);
		uint64_t ext = extent(o.size, block, stride);
		ptl_handle_hpu_mem_t hm;
		ptl_handle_me_t meh[M_N];
		int have_me[M_N] = { 0 }, n[M_N] = { 0 }, lost[M_N] = { 0 };

		memset(lat, 0, sizeof(*lat) * M_N * o.reps);
		for (int mi = 0; mi < o.nmodes; mi++) {
			int m = o.modes[mi];
			ptl_me_t me = {
				.options = PTL_ME_OP_PUT, .ct_handle = PTL_CT_NONE,
				.uid = PTL_UID_ANY, .match_id.rank = PTL_RANK_ANY,
			};

			if (m == M_UDP)
				continue;
			if (m == M_SPIN) {
				vector_t v = { .blocklen = block, .stride = stride };

				PTL_CHECK(PtlHPUAllocMem(sizeof(v), r.s.ni, &hm));
				PTL_CHECK(PtlHPUWriteMem(hm, 0, &v, sizeof(v)));
				me.start = r.strided;
				me.length = ext;
				me.match_bits = BITS_SPIN;
				me.handlers = r.h;
				me.hpu_memory = hm;
			} else {
				me.start = r.contig;
				me.length = o.size;
				me.match_bits = BITS_PLAIN;
			}
			PTL_CHECK(PtlMEAppend(r.s.ni, r.s.pt, &me, PTL_PRIORITY_LIST, NULL, &meh[m]));
			have_me[m] = 1;
		}
		for (int rep = 0; rep < o.warmup + o.reps && !bad; rep++) {
			pattern(r.src, o.size, (uint32_t)rep);
			memset(r.want, CANARY, r.cap);
			unpack(r.want, r.src, o.size, block, stride);
			for (int mi = 0; mi < o.nmodes && !bad; mi++) {
				int m = o.modes[mi];
				uint64_t t0 = 0, t1, tu = 0;	/* tu: data arrived, unpack starts */
				int rc;

				memset(r.strided, CANARY, r.cap);
				if (r.contig)
					memset(r.contig, 0, o.size);
				snprintf(name, sizeof(name), "ready.%s.%d.%d", mode_name[m], b, rep);
				sample_barrier(name, 1, 2, 30000);
				if (m == M_UDP) {
					struct spin_hdr h;
					int got = spin_sock_recv_msg(r.sk, &h, r.udp_buf, o.size, NULL,
								     o.udp_timeout_ms);

					if (got == -SPIN_ETIMEDOUT && lost[m] < o.maxlost) {
						lost[m]++;	/* a packet lost: not timed */
						goto next;
					}
					if (got != (int)o.size) {
						fprintf(stderr, "datatypes: udp receive: %d (%s)\n", got,
							got < 0 ? spin_errmsg() : "short");
						bad = 1;
						break;
					}
					tu = sample_now_ns();
					unpack(r.strided, r.udp_buf, o.size, block, stride);
					t1 = sample_now_ns();
					t0 = be64toh(h.hdr_data);
				} else if ((rc = wait_put(&r, m == M_SPIN ? BITS_SPIN : BITS_PLAIN, &t0))) {
					if (rc > 0 && lost[m] < o.maxlost) {
						lost[m]++;	/* the put failed: reported, not timed */
						goto next;
					}
					bad = 1;
					break;
				} else {
					tu = sample_now_ns();
					if (m == M_PORTALS)
						unpack(r.strided, r.contig, o.size, block, stride);
					t1 = sample_now_ns();
				}
				if (check(&r, ext, mode_name[m], rep))
					bad = 1;
				else if (rep >= o.warmup) {
					LAT(m, rep - o.warmup) = t1 - t0;
					UNP(m, rep - o.warmup) = t1 - tu;
					n[m]++;
				}
next:
				snprintf(name, sizeof(name), "done.%s.%d.%d", mode_name[m], b, rep);
				sample_barrier(name, 1, 2, 30000);
			}
		}
		for (int m = 0; m < M_N; m++)
			if (have_me[m])
				PTL_CHECK(PtlMEUnlink(meh[m]));
		if (have_me[M_SPIN])
			PTL_CHECK(PtlHPUFreeMem(hm));
		for (int mi = 0; mi < o.nmodes && !bad; mi++)
			if (report(csv, o.modes[mi], block, stride, lost[o.modes[mi]]))
				bad = 1;
	}
	if (csv)
		fclose(csv);
	if (r.sk)
		spin_sock_close(r.sk);
	PtlSpinHandlerUnload(r.h);
	sample_ni_fini(&r.s);
	free(lat);
	free(unp);
	if (bad)
		fprintf(stderr, "datatypes: FAILED\n");
	return bad;
}

int main(int argc, char **argv)
{
	const char *rk = getenv("SPIN_RANK");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse(argc, argv))
		return 2;
	if (!rk || (strcmp(rk, "0") && strcmp(rk, "1"))) {
		fprintf(stderr, "datatypes: SPIN_RANK must be 0 (sender) or 1 (receiver)\n");
		return 2;
	}
	return !strcmp(rk, "0") ? sender() : receiver();
}
