// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reduce/accumulate: P-1 senders add their int64 vectors into one buffer at
 * the root (rank 0).  One process per rank (SPIN_HOSTFILE, SPIN_RANK,
 * SPIN_IFACE, SAMPLE_DIR for the start barrier).
 *
 *   reduce_host root spin|host [nelem N[,N...]] [rounds R] [csv FILE]
 *                              [label L] [timeout-ms T] [double|double-int] [ordered]
 *       spin: loads reduce.bpf.o, appends one match entry per chunk of 508
 *             elements (match bits = chunk) whose handlers add every packet
 *             into handler memory with atomics; the last contribution's
 *             completion handler DMAs the sum and the round number into the
 *             host window, which the root polls.
 *       host: the baseline: receives every vector over a kernel UDP socket
 *             (busy-polled) and adds on the CPU.
 *       Each round: "go" (a UDP datagram) to every sender, wait for the
 *       full sum, check it element by element against the sum computed
 *       here; the time from the go to the full sum is the round time.
 *       Exit 0 only if every round of every size was exact.
 *       double: the elements are doubles of any sign and exponent 2^-20..2^20
 *             (reduce_double.bpf.o, MPI_SUM with IEEE adds); needs ordered.
 *       double-int: doubles that are integers of at most 2^19 in magnitude
 *             (exact in any order).
 *       ordered: the root starts one sender after the other (rank order)
 *             and waits until its contribution is added (the handlers
 *             publish the count): the sum must equal the host FPU's sum in
 *             rank order bit for bit.
 *
 *   reduce_host sender ptl|sock|host [shuffle] [bogus]
 *       ptl:  PtlPut of each chunk (Portals over AF_XDP);
 *       sock: the sPIN packets from a kernel UDP socket (libspin's
 *             spin_sock_send), in order or, with shuffle, in random order;
 *       host: plain UDP datagrams to the baseline root.
 *       bogus: before its real contribution, put a message of the wrong
 *              length that the header handler must drop.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <spin/spin.h>
#include <linux/types.h>
#include "../sample.h"

#include "reduce.h"

#define GO_PORT		7791	/* root -> senders: start a round */
#define DATA_PORT	7792	/* senders -> baseline root */
#define MAX_CHUNKS	16
#define MAX_ELEMS	(MAX_CHUNKS * REDUCE_MAX)
#define SLICE		4096	/* host window per chunk: [round][sum] */
#define PT		0

/* Send times: the senders store when each round's first packet left, the
 * root reads them after the round (CLOCK_MONOTONIC is one clock for all
 * namespaces of the machine): [round % TS_ROUNDS][rank]. */
#define TS_ROUNDS	4096
#define TS_RANKS	16
static volatile uint64_t *tsend;

static void tsend_map(int create)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/tsend", getenv("SAMPLE_DIR") ? getenv("SAMPLE_DIR") : ".");
	fd = open(p, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0600);
	if (fd < 0 || (create && ftruncate(fd, TS_ROUNDS * TS_RANKS * 8) < 0)) {
		perror("reduce_host: tsend");
		exit(1);
	}
	tsend = mmap(NULL, TS_ROUNDS * TS_RANKS * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tsend == MAP_FAILED) {
		perror("reduce_host: mmap tsend");
		exit(1);
	}
	close(fd);
}

/* element types: int64 (MPI_SUM of integers), doubles of any exponent and
 * sign (rounding matters, so the order of the adds does), doubles that are
 * small integers (every order gives the same exact sum) */
enum { T_INT64, T_DOUBLE, T_DOUBLE_INT };
struct go_msg { uint32_t round, nelem; uint64_t seed; uint32_t type, pad; };	/* round 0: quit */
struct data_hdr { uint32_t round, rank, first, n; };

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Element i of rank's contribution in a round: any int64, negatives too. */
static int64_t value(uint64_t seed, uint32_t round, uint32_t rank, uint32_t i)
{
	return (int64_t)splitmix64(seed ^ ((uint64_t)round << 44) ^ ((uint64_t)rank << 32) ^ i);
}

/* ... as a double's bits, type T_DOUBLE or T_DOUBLE_INT */
static int64_t dvalue(uint64_t seed, uint32_t round, uint32_t rank, uint32_t i, uint32_t type)
{
	uint64_t x = (uint64_t)value(seed, round, rank, i);
	double d;

	if (type == T_DOUBLE_INT) {
		d = (double)((int64_t)(x >> 44) - (1 << 19));	/* -2^19 .. 2^19 */
		memcpy(&x, &d, 8);
		return (int64_t)x;
	}
	/* sign and mantissa random, exponent within 2^-20 .. 2^20 */
	return (int64_t)((x & 0x800fffffffffffffull) | ((uint64_t)(1023 - 20 + (x >> 52) % 41) << 52));
}

static int64_t elem(uint64_t seed, uint32_t round, uint32_t rank, uint32_t i, uint32_t type)
{
	return type == T_INT64 ? value(seed, round, rank, i) : dvalue(seed, round, rank, i, type);
}

static uint32_t chunk_len(uint32_t nelem, uint32_t c)
{
	uint32_t first = c * REDUCE_MAX;

	return nelem - first < REDUCE_MAX ? nelem - first : REDUCE_MAX;
}

static struct spin_job job;

static struct sockaddr_in rank_addr(uint32_t r, uint16_t port)
{
	return sample_rank_addr(&job, r, port);
}

static int udp_socket(uint16_t port)
{
	int fd = sample_udp_socket(INADDR_ANY, port, 8 << 20, 0);

	if (fd < 0) {
		perror("reduce_host: udp socket");
		exit(1);
	}
	return fd;
}

/* ---------------------------------------------------------------- root -- */

struct root {
	int spin, go_fd, data_fd, timeout_ms;
	struct sample_ni s;
	ptl_handle_handler_t h;
	uint8_t *win;				/* host window: MAX_CHUNKS slices */
	ptl_handle_me_t me[MAX_CHUNKS];
	ptl_handle_hpu_mem_t mem[MAX_CHUNKS];
	uint32_t nchunks, rounds_done;		/* handler rounds of this size */
	int64_t *sum;				/* baseline accumulator */
};

static void spin_setup_size(struct root *R, uint32_t nelem)
{
	R->nchunks = (nelem + REDUCE_MAX - 1) / REDUCE_MAX;
	for (uint32_t c = 0; c < R->nchunks; c++) {
		reduce_state_t img = { .expected = job.size - 1, .nelem = chunk_len(nelem, c) };
		ptl_me_t me = {
			.start = R->win + c * SLICE, .length = SLICE, .ct_handle = PTL_CT_NONE,
			.uid = PTL_UID_ANY,
			.options = PTL_ME_OP_PUT | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
				   PTL_ME_EVENT_UNLINK_DISABLE,
			.match_id.rank = PTL_RANK_ANY, .match_bits = c, .ignore_bits = 0,
			.handlers = R->h,
		};

		memset(R->win + c * SLICE, 0, SLICE);
		PTL_CHECK(PtlHPUAllocMem(sizeof(img), R->s.ni, &R->mem[c]));
		PTL_CHECK(PtlHPUWriteMem(R->mem[c], 0, &img, sizeof(img)));
		me.hpu_memory = R->mem[c];
		PTL_CHECK(PtlMEAppend(R->s.ni, R->s.pt, &me, PTL_PRIORITY_LIST, NULL, &R->me[c]));
	}
	R->rounds_done = 0;
}

static void spin_teardown_size(struct root *R)
{
	for (uint32_t c = 0; c < R->nchunks; c++) {
		PTL_CHECK(PtlMEUnlink(R->me[c]));
		PTL_CHECK(PtlHPUFreeMem(R->mem[c]));
	}
}

/* Wait until every chunk's completion handler published this round. */
static int spin_wait(struct root *R, uint32_t round, uint64_t deadline)
{
	for (uint32_t c = 0; c < R->nchunks; c++) {
		volatile uint64_t *flag = (volatile uint64_t *)(R->win + c * SLICE);

		while (*flag != round) {
			if ((sample_now_ns() & 0x3ff) == 0 && sample_now_ns() > deadline)
				return -1;
		}
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return 0;
}

/* ordered: wait until every chunk added k contributions (the double
 * handlers publish the count at REDUCE_PROGRESS_OFF) */
static int spin_wait_progress(struct root *R, uint64_t k, uint64_t deadline)
{
	for (uint32_t c = 0; c < R->nchunks; c++) {
		volatile uint64_t *n = (volatile uint64_t *)(R->win + c * SLICE + REDUCE_PROGRESS_OFF);

		while (*n != k) {
			if ((sample_now_ns() & 0x3ff) == 0 && sample_now_ns() > deadline)
				return -1;
		}
	}
	return 0;
}

static const int64_t *spin_chunk(struct root *R, uint32_t c)
{
	return (const int64_t *)(R->win + c * SLICE + 8);
}

/* Baseline: receive datagrams and add until (P-1) * nelem elements came. */
static int host_wait(struct root *R, uint32_t round, uint32_t nelem, uint64_t deadline)
{
	static uint8_t bufs[64][1472];
	struct mmsghdr mm[64];
	struct iovec iov[64];
	uint64_t want = (uint64_t)(job.size - 1) * nelem, got = 0;
	uint32_t spins = 0;

	memset(R->sum, 0, nelem * sizeof(*R->sum));
	for (int i = 0; i < 64; i++) {
		iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
		mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	while (got < want) {
		int n = recvmmsg(R->data_fd, mm, 64, MSG_DONTWAIT, NULL);

		if (n <= 0) {
			if (++spins % 1024 == 0 && sample_now_ns() > deadline)
				return -1;
			continue;
		}
		for (int k = 0; k < n; k++) {
			const struct data_hdr *h = (const void *)bufs[k];
			const int64_t *v = (const void *)(h + 1);

			if (mm[k].msg_len < sizeof(*h) || h->round != round ||
			    mm[k].msg_len != sizeof(*h) + h->n * 8ull || h->first + h->n > nelem) {
				fprintf(stderr, "reduce_host: stray datagram (%u bytes, round %u)\n",
					mm[k].msg_len, h->round);
				continue;
			}
			for (uint32_t i = 0; i < h->n; i++)
				R->sum[h->first + i] += v[i];
			got += h->n;
		}
	}
	return 0;
}

/* to rank `only`, or to every sender with 0 */
static void send_go(struct root *R, uint32_t round, uint32_t nelem, uint64_t seed, uint32_t type,
		    uint32_t only)
{
	struct go_msg g = { round, nelem, seed, type, 0 };

	for (uint32_t r = only ? only : 1; r < (only ? only + 1 : job.size); r++) {
		struct sockaddr_in a = rank_addr(r, GO_PORT);

		if (sendto(R->go_fd, &g, sizeof(g), 0, (struct sockaddr *)&a, sizeof(a)) != sizeof(g)) {
			perror("reduce_host: go");
			exit(1);
		}
	}
}

static int root(int argc, char **argv)
{
	struct root R = { .spin = !strcmp(argv[0], "spin"), .timeout_ms = 2000 };
	uint32_t sizes[16] = { 508 }, nsizes = 1, rounds = 100, bad = 0, type = T_INT64, ordered = 0;
	const char *csv = NULL, *label = NULL;
	int64_t *want = calloc(MAX_ELEMS, sizeof(*want));
	uint64_t *t = NULL, *tf = NULL, seed = 0x5eed0000 ^ (uint64_t)getpid();

	if (strcmp(argv[0], "spin") && strcmp(argv[0], "host"))
		return 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "nelem") && i + 1 < argc) {
			char *p = argv[++i];

			nsizes = 0;
			while (*p && nsizes < 16) {
				sizes[nsizes++] = strtoul(p, &p, 0);
				if (*p == ',')
					p++;
			}
		} else if (!strcmp(argv[i], "rounds") && i + 1 < argc)
			rounds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "csv") && i + 1 < argc)
			csv = argv[++i];
		else if (!strcmp(argv[i], "label") && i + 1 < argc)
			label = argv[++i];
		else if (!strcmp(argv[i], "timeout-ms") && i + 1 < argc)
			R.timeout_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "double"))
			type = T_DOUBLE;
		else if (!strcmp(argv[i], "double-int"))
			type = T_DOUBLE_INT;
		else if (!strcmp(argv[i], "ordered"))
			ordered = 1;
		else {
			fprintf(stderr, "reduce_host: unknown root argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if ((type != T_INT64 || ordered) && !R.spin) {
		fprintf(stderr, "reduce_host: double, double-int and ordered are for the spin root\n");
		return 2;
	}
	if (type == T_DOUBLE && !ordered) {
		fprintf(stderr, "reduce_host: double needs ordered (a sum of doubles depends on the order)\n");
		return 2;
	}
	for (uint32_t i = 0; i < nsizes; i++)
		if (sizes[i] < 1 || sizes[i] > MAX_ELEMS) {
			fprintf(stderr, "reduce_host: nelem %u not in 1..%u\n", sizes[i], MAX_ELEMS);
			return 2;
		}
	t = calloc(rounds ? rounds : 1, sizeof(*t));
	tf = calloc(rounds ? rounds : 1, sizeof(*tf));
	R.sum = calloc(MAX_ELEMS, sizeof(*R.sum));
	R.go_fd = udp_socket(0);
	if (R.spin) {
		char obj[600];

		sample_ni_init(&R.s, PT, 64);
		PTL_CHECK(PtlSpinHandlerLoad(R.s.ni, sample_obj_path(type == T_INT64 ? "reduce.bpf.o" :
								     "reduce_double.bpf.o", obj, sizeof(obj)),
					     &R.h));
		PTL_CHECK(PtlSpinHostAlloc(R.s.ni, MAX_CHUNKS * SLICE, (void **)&R.win));
	} else {
		R.data_fd = udp_socket(DATA_PORT);
	}
	tsend_map(1);
	sample_barrier("ready", 0, job.size, 30000);
	for (uint32_t si = 0; si < nsizes; si++) {
		uint32_t nelem = sizes[si], n = 0, fails = 0, exact = 0;

		if (R.spin)
			spin_setup_size(&R, nelem);
		for (uint32_t r = 1; r <= rounds; r++) {
			uint32_t round = si * rounds + r;	/* go id, never 0 */
			uint64_t t0, t1;
			int rc;

			for (uint32_t i = 0; i < nelem; i++) {
				uint64_t s = 0;
				double d = 0, x;

				for (uint32_t k = 1; k < job.size; k++) {
					int64_t e = elem(seed, round, k, i, type);

					if (type == T_INT64) {
						s += (uint64_t)e;
					} else {	/* the FPU, in rank order */
						memcpy(&x, &e, 8);
						d += x;
					}
				}
				if (type != T_INT64)
					memcpy(&s, &d, 8);
				want[i] = (int64_t)s;
			}
			t0 = sample_now_ns();
			rc = 0;
			if (ordered) {
				/* one contribution after the other, in rank order:
				 * the handler adds in the order the host does */
				for (uint32_t k = 1; k < job.size && !rc; k++) {
					send_go(&R, round, nelem, seed, type, k);
					if (k + 1 < job.size)
						rc = spin_wait_progress(&R, k, t0 + R.timeout_ms * 1000000ull);
				}
			} else {
				send_go(&R, round, nelem, seed, type, 0);
			}
			if (rc)
				;
			else if (R.spin)
				rc = spin_wait(&R, ++R.rounds_done, t0 + R.timeout_ms * 1000000ull);
			else
				rc = host_wait(&R, round, nelem, t0 + R.timeout_ms * 1000000ull);
			t1 = sample_now_ns();
			if (rc) {
				fprintf(stderr, "reduce_host: nelem %u round %u: no full sum after %d ms\n",
					nelem, r, R.timeout_ms);
				fails++;
				break;	/* the handler's round count is off now */
			}
			{
				uint32_t wrong = 0;
				uint64_t ts = UINT64_MAX;

				for (uint32_t c = 0, first = 0; c * REDUCE_MAX < nelem; c++, first += REDUCE_MAX) {
					const int64_t *got = R.spin ? spin_chunk(&R, c) : R.sum + first;
					uint32_t len = chunk_len(nelem, c);

					if (!memcmp(got, want + first, len * 8))
						continue;
					for (uint32_t i = 0; i < len; i++)
						if (got[i] != want[first + i]) {
							fprintf(stderr, "reduce_host: nelem %u round %u: sum[%u] = %lld, want %lld\n",
								nelem, r, first + i, (long long)got[i],
								(long long)want[first + i]);
							break;
						}
					wrong = 1;
				}
				fails += wrong;
				exact += !wrong;
				for (uint32_t k = 1; k < job.size; k++) {
					uint64_t x = tsend[(round % TS_ROUNDS) * TS_RANKS + k];

					ts = x && x < ts ? x : ts;
				}
				/* from the first packet sent to the full sum at the root */
				tf[n] = ts <= t1 ? t1 - ts : 0;
				t[n++] = t1 - t0;
			}
		}
		if (R.spin)
			spin_teardown_size(&R);
		bad += fails;
		{
			uint64_t p50 = sample_percentile(t, n, 50), p99 = sample_percentile(t, n, 99);
			uint64_t f50 = sample_percentile(tf, n, 50), f99 = sample_percentile(tf, n, 99);

			printf("%s%s P=%u nelem %u (%u B): %u rounds exact, %u bad; first send to full sum p50 %.1f us, p99 %.1f us; go to full sum p50 %.1f us, p99 %.1f us\n",
			       R.spin ? "spin" : "host",
			       type == T_DOUBLE ? " double" : type == T_DOUBLE_INT ? " double-int" : "",
			       job.size, nelem, nelem * 8, exact, fails,
			       f50 / 1e3, f99 / 1e3, p50 / 1e3, p99 / 1e3);
			if (csv) {
				FILE *f = fopen(csv, "a");

				if (f) {
					fprintf(f, "%s,%u,%u,%u,%u,%.2f,%.2f,%.2f,%.2f\n", label ? label : (R.spin ? "spin" : "host"),
						job.size, nelem, nelem * 8, exact, f50 / 1e3, f99 / 1e3, p50 / 1e3, p99 / 1e3);
					fclose(f);
				}
			}
		}
		if (fails)
			break;
	}
	send_go(&R, 0, 0, 0, 0, 0);	/* quit */
	if (R.spin)
		sample_ni_fini(&R.s);
	return bad ? 1 : 0;
}

/* -------------------------------------------------------------- sender -- */

static int sender(int argc, char **argv)
{
	int mode = !strcmp(argv[0], "ptl") ? 0 : !strcmp(argv[0], "sock") ? 1 : !strcmp(argv[0], "host") ? 2 : -1;
	int shuffle = 0, bogus = 0, go_fd, data_fd = -1;
	int64_t *v = calloc(MAX_ELEMS + 1, sizeof(*v));
	uint32_t *order = calloc(MAX_ELEMS, sizeof(*order));
	struct sockaddr_in root_spin, root_data;
	struct spin_sock *sk = NULL;
	struct sample_ni s;
	ptl_handle_md_t md;
	ptl_process_t root_id = { .rank = 0 };

	if (mode < 0)
		return 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "shuffle"))
			shuffle = 1;
		else if (!strcmp(argv[i], "bogus"))
			bogus = 1;
		else {
			fprintf(stderr, "reduce_host: unknown sender argument '%s'\n", argv[i]);
			return 2;
		}
	}
	go_fd = udp_socket(GO_PORT);
	root_spin = rank_addr(0, SPIN_DEFAULT_PORT);
	root_data = rank_addr(0, DATA_PORT);
	if (mode == 0) {
		ptl_md_t m = { .start = v, .length = (MAX_ELEMS + 1) * 8, .eq_handle = PTL_EQ_NONE,
			       .ct_handle = PTL_CT_NONE };

		sample_ni_init(&s, PT, 256);
		m.eq_handle = s.eq;
		PTL_CHECK(PtlMDBind(s.ni, &m, &md));
	} else if (mode == 1) {
		if (spin_sock_open(NULL, 0, &sk) < 0) {
			fprintf(stderr, "reduce_host: socket: %s\n", spin_errmsg());
			return 1;
		}
	} else {
		data_fd = udp_socket(0);
	}
	srand(job.rank * 7919);
	sample_barrier("ready", job.rank, job.size, 30000);
	tsend_map(0);
	for (;;) {
		struct go_msg g;
		struct timeval tv = { .tv_sec = 30 };
		uint32_t nchunks, sent = 0;

		setsockopt(go_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (recv(go_fd, &g, sizeof(g), 0) != sizeof(g)) {
			fprintf(stderr, "reduce_host: rank %u: no go from the root\n", job.rank);
			return 1;
		}
		if (!g.round)
			break;
		if (g.nelem > MAX_ELEMS)
			return 1;
		for (uint32_t i = 0; i < g.nelem; i++)
			v[i] = elem(g.seed, g.round, job.rank, i, g.type);
		nchunks = (g.nelem + REDUCE_MAX - 1) / REDUCE_MAX;
		tsend[(g.round % TS_ROUNDS) * TS_RANKS + job.rank] = sample_now_ns();
		for (uint32_t c = 0; c < nchunks; c++) {
			uint32_t first = c * REDUCE_MAX, len = chunk_len(g.nelem, c);
			/* wrong length: one element more, or one less */
			uint32_t blen = (len > 1 ? len - 1 : 2) * 8;

			if (mode == 0) {
				if (bogus && c == 0) {
					PTL_CHECK(PtlPut(md, 0, blen, PTL_NO_ACK_REQ, root_id, PT, c, 0, NULL, g.round));
					sent++;
				}
				PTL_CHECK(PtlPut(md, first * 8, len * 8, PTL_NO_ACK_REQ, root_id, PT, c, 0,
						 NULL, g.round));
				sent++;
			} else if (mode == 1) {
				struct spin_msg_args a = {
					.op = SPIN_OP_PUT, .pt_index = PT, .src_rank = job.rank, .dst_rank = 0,
					.match_bits = c, .hdr_data = g.round, .seg_size = SPIN_MAX_SEG,
				};
				uint32_t npk = (len * 8 + SPIN_MAX_SEG - 1) / SPIN_MAX_SEG;

				for (uint32_t i = 0; i < npk; i++)
					order[i] = i;
				for (uint32_t i = npk - 1; shuffle && i > 0; i--) {
					uint32_t j = rand() % (i + 1), tmp = order[i];

					order[i] = order[j];
					order[j] = tmp;
				}
				if ((bogus && c == 0 && spin_sock_send(sk, &root_spin, &a, v, blen, NULL) < 0) ||
				    spin_sock_send(sk, &root_spin, &a, v + first, len * 8, order) < 0) {
					fprintf(stderr, "reduce_host: send: %s\n", spin_errmsg());
					return 1;
				}
			} else {
				struct mmsghdr mm[8];
				struct iovec iov[8][2];
				struct data_hdr h[8];
				uint32_t k = 0;

				for (uint32_t off = 0; off < len; off += REDUCE_PKT_ELEMS) {
					uint32_t n = len - off < REDUCE_PKT_ELEMS ? len - off : REDUCE_PKT_ELEMS;

					h[k] = (struct data_hdr){ g.round, job.rank, first + off, n };
					iov[k][0] = (struct iovec){ &h[k], sizeof(h[k]) };
					iov[k][1] = (struct iovec){ v + first + off, n * 8 };
					mm[k] = (struct mmsghdr){ .msg_hdr = {
						.msg_name = &root_data, .msg_namelen = sizeof(root_data),
						.msg_iov = iov[k], .msg_iovlen = 2 } };
					k++;
				}
				if (sendmmsg(data_fd, mm, k, 0) != (int)k) {
					perror("reduce_host: sendmmsg");
					return 1;
				}
			}
		}
		/* Portals: the buffer is reused next round once every put left */
		while (mode == 0 && sent) {
			ptl_event_t ev;

			PTL_CHECK(PtlEQWait(s.eq, &ev));
			if (ev.type == PTL_EVENT_SEND) {
				if (ev.ni_fail_type != PTL_NI_OK) {
					fprintf(stderr, "reduce_host: rank %u: put failed (%d)\n", job.rank,
						ev.ni_fail_type);
					return 1;
				}
				sent--;
			}
		}
	}
	if (mode == 0)
		sample_ni_fini(&s);
	if (sk)
		spin_sock_close(sk);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || (strcmp(argv[1], "root") && strcmp(argv[1], "sender"))) {
		fprintf(stderr,
			"usage: reduce_host root spin|host [nelem N[,N...]] [rounds R] [csv FILE] [label L] [timeout-ms T]\n"
			"                        [double|double-int] [ordered]\n"
			"       reduce_host sender ptl|sock|host [shuffle] [bogus]\n");
		return 2;
	}
	rc = spin_job_load(&job, getenv("SPIN_HOSTFILE"));
	if (rc < 0 || job.nhosts < 2 || job.nhosts != job.size) {
		fprintf(stderr, "reduce_host: job: %s\n", rc < 0 ? spin_errmsg() : "need a hostfile of 2+ ranks");
		return 1;
	}
	if (!strcmp(argv[1], "root"))
		rc = job.rank == 0 ? root(argc - 2, argv + 2) : 2;
	else
		rc = job.rank != 0 ? sender(argc - 2, argv + 2) : 2;
	spin_job_free(&job);
	return rc;
}
