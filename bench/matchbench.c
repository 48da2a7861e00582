// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/matchbench - per-packet cost of matching through BPF_PROG_RUN,
 * against the number of exact entries and of wildcard entries ahead of
 * them (issue 15; docs/design.md, "Matching").
 *
 * In a private network namespace (a veth pair it makes), the runtime is
 * attached with libspin; for every configuration (E exact entries, W
 * wildcard entries) the portal's entries are rebuilt: first W wildcard
 * entries on the priority list (ignore bits, bits that never match the
 * puts, so every put walks all of them), then E exact entries with match
 * bits 0..E-1 from rank 0 (no events, a 64-byte window each).  Then --calls
 * single runs (repeat = 1) of a fresh 64-byte put from rank 0, each with a
 * new message id, are timed by the kernel.  The puts' bits (--target):
 * "one", always those of the entry in the middle (the matching work:
 * what the table's size adds to finding one entry), or "random", those
 * of a random one of the E entries (the same, plus the cache and TLB
 * misses of touching a random entry of a large table every packet).
 * A configuration's figure is the interquartile mean of the per-call times
 * (the kernel's clock steps by ~10 ns here). a configuration's figure is the interquartile mean of the
 * per-call times (the kernel's clock steps by ~10 ns here).  Every
 * configuration is measured once per repetition, repetitions interleaved,
 * so the ratios between them come from the same run.
 *
 *   bench/matchbench [--reps K (3)] [--calls N (100000)] [--csv FILE]
 *                    [--exact 1,100,10000,100000] [--wild 0,10,100] [--cpu C (1)]
 *                    [--target one|random (one)]
 *
 * CSV rows: target,exact,wild,rep,calls,ns_iqm,ns_p50,ns_p90,action_ok
 * (action_ok: calls whose put was deposited, XDP_DROP with nothing else
 * counted).  Run from the top of the tree (it loads bpf/spin_rt.bpf.o).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <spin/spin.h>

#define IFA "smb0"
#define IFB "smb1"

static struct spin_rt *rt;
static int *ents, n_ents;

static void cleanup(void)
{
	if (rt)
		spin_close(rt);
	rt = NULL;
	spin_detach(IFA);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double iqm(const uint32_t *v, size_t n)
{
	size_t lo = n / 4, hi = n - n / 4;
	double s = 0;

	for (size_t i = lo; i < hi; i++)
		s += v[i];
	return hi > lo ? s / (hi - lo) : 0;
}

static int parse_list(const char *s, long *v, int max)
{
	int n = 0;
	char *end;

	while (*s && n < max) {
		v[n++] = strtol(s, &end, 0);
		if (end == s)
			return -1;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The portal's entries: W wildcard ones, then E exact ones. */
static int build(long exact, long wild)
{
	struct spin_me_spec s = {
		.pt_index = 0, .list = SPIN_LIST_PRIORITY, .host_len = 64, .host_off = 0,
		.hhost_off = UINT64_MAX, .match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
		.options = SPIN_ME_OP_PUT | SPIN_ME_EVENT_COMM_DISABLE |
			   SPIN_ME_EVENT_SUCCESS_DISABLE,
	};

	for (int i = 0; i < n_ents; i++)
		spin_me_unlink(rt, ents[i]);
	n_ents = 0;
	for (long i = 0; i < wild; i++) {
		/* bits 1 << 62 | i, ignoring the low 8 bits: never a put's bits */
		s.match_bits = 1ull << 62 | (uint64_t)i << 8;
		s.ignore_bits = 0xff;
		if ((ents[n_ents] = spin_me_append(rt, &s)) < 0)
			return -1;
		n_ents++;
	}
	s.ignore_bits = 0;
	s.match_rank = 0;	/* exact: from rank 0 */
	for (long i = 0; i < exact; i++) {
		s.match_bits = i;
		if ((ents[n_ents] = spin_me_append(rt, &s)) < 0)
			return -1;
		n_ents++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "calls", required_argument, NULL, 'n' },
		{ "csv", required_argument, NULL, 'c' },
		{ "exact", required_argument, NULL, 'e' },
		{ "wild", required_argument, NULL, 'w' },
		{ "cpu", required_argument, NULL, 'p' },
		{ "target", required_argument, NULL, 't' },
		{ 0 },
	};
	struct spin_attach_opts o = { .ifname = IFA, .rank = 1, .pid = 7,
				      .obj_path = "bpf/spin_rt.bpf.o" };
	struct spin_peer_spec peer = { .rank = 0, .pid = 3, .port = 7000 };
	struct spin_frame_addr ad = { .sport = 7000, .dport = SPIN_DEFAULT_PORT };
	long exact[8] = { 1, 100, 10000, 100000 }, wild[8] = { 0, 10, 100 };
	int ne = 4, nw = 3, reps = 3, cpu = 1, prog_fd, opt;
	long calls = 100000, maxe = 0, maxw = 0;
	const char *csv = NULL, *target = "one";
	uint32_t *ns;
	uint8_t frame[2048], pay[64] = { 1 };
	char path[512];
	FILE *out = stdout;
	cpu_set_t cs;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'r': reps = atoi(optarg); break;
		case 'n': calls = atol(optarg); break;
		case 'c': csv = optarg; break;
		case 'e': ne = parse_list(optarg, exact, 8); break;
		case 'w': nw = parse_list(optarg, wild, 8); break;
		case 'p': cpu = atoi(optarg); break;
		case 't': target = optarg; break;
		default:
			fprintf(stderr, "usage: matchbench [--reps K] [--calls N] [--csv FILE] "
				"[--exact a,b,..] [--wild a,b,..] [--cpu C]\n");
			return 2;
		}
	}
	if (reps < 1 || calls < 100 || ne < 1 || nw < 1 ||
	    (strcmp(target, "one") && strcmp(target, "random"))) {
		fprintf(stderr, "matchbench: bad arguments\n");
		return 2;
	}
	for (int i = 0; i < ne; i++) {
		if (exact[i] < 1 || exact[i] > 120000) {
			fprintf(stderr, "matchbench: --exact %ld out of range\n", exact[i]);
			return 2;
		}
		maxe = exact[i] > maxe ? exact[i] : maxe;
	}
	for (int i = 0; i < nw; i++) {
		if (wild[i] < 0 || wild[i] > 10000) {
			fprintf(stderr, "matchbench: --wild %ld out of range\n", wild[i]);
			return 2;
		}
		maxw = wild[i] > maxw ? wild[i] : maxw;
	}
	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	sched_setaffinity(0, sizeof(cs), &cs);	/* CPU 0 of these VMs is noisy */
	if (unshare(CLONE_NEWNET)) {
		perror("matchbench: unshare(CLONE_NEWNET)");
		return 1;
	}
	if (system("ip link set lo up && ip link add " IFA " type veth peer name " IFB
		   " && ip addr add 10.77.9.1/24 dev " IFA " && ip link set " IFA " up && ip link set "
		   IFB " up"))
		return 1;
	if (spin_attach(&o, &rt) < 0) {
		fprintf(stderr, "matchbench: attach: %s\n", spin_errmsg());
		return 1;
	}
	atexit(cleanup);
	inet_pton(AF_INET, "10.77.9.2", &peer.ip);
	memcpy(peer.mac, "\x02\x00\x00\x00\x00\x02", 6);
	if (spin_peer_add(rt, &peer) < 0 || spin_pt_alloc(rt, 0) < 0) {
		fprintf(stderr, "matchbench: setup: %s\n", spin_errmsg());
		return 1;
	}
	spin_pin_dir(IFA, path, sizeof(path));
	strcat(path, "/prog_rx");
	prog_fd = bpf_obj_get(path);
	ns = calloc(calls, sizeof(*ns));
	ents = calloc(maxe + maxw, sizeof(*ents));
	if (prog_fd < 0 || !ns || !ents)
		return 1;
	if (csv && !(out = fopen(csv, "a"))) {
		perror(csv);
		return 1;
	}
	if (out == stdout || ftell(out) == 0)
		fprintf(out, "target,exact,wild,rep,calls,ns_iqm,ns_p50,ns_p90,action_ok\n");
	memcpy(ad.src_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(ad.dst_mac, "\x02\x00\x00\x00\x00\x01", 6);
	inet_pton(AF_INET, "10.77.9.2", &ad.src_ip);
	inet_pton(AF_INET, "10.77.9.1", &ad.dst_ip);
	for (int r = 0; r < reps; r++) {
		for (int wi = 0; wi < nw; wi++) {
			for (int ei = 0; ei < ne; ei++) {
				struct spin_stats st0, st1;
				long ok;

				if (build(exact[ei], wild[wi])) {
					fprintf(stderr, "matchbench: append: %s\n", spin_errmsg());
					return 1;
				}
				spin_stats_read(rt, &st0);
				for (long j = 0; j < calls; j++) {
					LIBBPF_OPTS(bpf_test_run_opts, t);
					struct spin_msg_args a = {
						.op = SPIN_OP_PUT, .src_rank = 0, .src_pid = 3,
						.dst_rank = 1, .msg_id = 0,
						.match_bits = *target == 'r' ? rnd() % exact[ei] :
							      (uint64_t)exact[ei] / 2,
					};
					struct spin_hdr h;
					int len;

					a.msg_id = spin_next_msg_id();
					spin_hdr_build(&h, &a, sizeof(pay), 0);
					len = spin_frame_build(frame, sizeof(frame), &ad, &h, pay,
							       sizeof(pay));
					t.data_in = frame;
					t.data_size_in = len;
					t.repeat = 1;
					if (bpf_prog_test_run_opts(prog_fd, &t)) {
						perror("matchbench: BPF_PROG_RUN");
						return 1;
					}
					ns[j] = t.duration;
				}
				spin_stats_read(rt, &st1);
				ok = (long)(st1.deposited_bytes - st0.deposited_bytes) / sizeof(pay);
				qsort(ns, calls, sizeof(*ns), cmp_u32);
				fprintf(out, "%s,%ld,%ld,%d,%ld,%.1f,%u,%u,%ld\n", target, exact[ei],
					wild[wi], r,
					calls, iqm(ns, calls), ns[calls / 2], ns[calls * 9 / 10], ok);
				fflush(out);
				if (ok != calls)
					fprintf(stderr, "matchbench: %ld exact, %ld wild: %ld of %ld puts deposited\n",
						exact[ei], wild[wi], ok, calls);
			}
		}
	}
	if (out != stdout)
		fclose(out);
	return 0;
}
