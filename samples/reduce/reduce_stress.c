// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * reduce_stress: the reduce handlers' accumulation with payload handlers
 * that run at the same moment on two CPUs (test.sh, cases stress-*).
 *
 *   reduce_stress [-n N] [-1] ATOMIC.bpf.o CONTROL.bpf.o
 *
 * Like selftests/test_unit, the process moves into a private network
 * namespace, attaches the runtime to a veth there as root (rank 0) and runs
 * crafted frames through the pinned entry program with BPF_PROG_RUN, which
 * runs the program on the calling CPU.  Both handler objects are loaded,
 * each with one match entry (match bits 0 and 1).  Two threads, pinned to
 * CPU 0 and CPU 1, each put N one-packet contributions (173 int64) to each
 * entry, alternating between the two; every contribution is a message of
 * its own (its own id: no duplicate suppression), so every BPF_PROG_RUN runs
 * a header, a payload and a completion handler.  An entry expects 2 * N
 * contributions, so its last completion DMAs the sum to the host buffer.
 *
 * Per entry it prints
 *   atomic|control (OBJ): C contributions (...), round R, W of 173 elements wrong
 * with the sum in the host buffer compared, element by element, with the
 * sum of the values the threads sent (pseudo-random int64, sums mod 2^64).
 * Exit 0 when the run is valid: every contribution was processed without a
 * drop and both rounds completed (whatever the sums); 2 otherwise; 3 with
 * fewer than two CPUs (without -1).  test.sh judges the sums: ATOMIC must
 * be exact and CONTROL, the same handlers with a plain `+=`, must have lost
 * updates, which shows that the payload handlers did overlap.  With -1 both threads
 * run on CPU 0, where they take turns: an update could only be lost if the
 * kernel preempted a program run between an element's load and its store,
 * which a kernel without involuntary preemption (PREEMPT_NONE, as on the
 * test VM) never does.  Then CONTROL must be exact too, so its lost updates
 * on two CPUs come from the overlap and not from another mistake.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "../sample.h"
#include "reduce.h"

#define IF0		"rst0"
#define IF1		"rst1"
#define NME		2		/* the atomic entry and the control */
#define PAY		(REDUCE_PKT_ELEMS * 8)
#define DEADLINE_S	20		/* a run normally takes well under 1 s */

static struct spin_rt *rt;
static int prog_fd;
static uint32_t n_per;			/* contributions per thread and entry */
static uint64_t deadline;
static uint64_t want[NME][REDUCE_PKT_ELEMS];	/* the exact sums */
static pthread_mutex_t want_lock = PTHREAD_MUTEX_INITIALIZER;

static void cleanup(void)
{
	if (rt)
		spin_close(rt);
	rt = NULL;
	spin_detach(IF0);
}

static void on_signal(int sig)
{
	cleanup();
	_exit(128 + sig);
}

static uint64_t mix(uint64_t x)	/* splitmix64 */
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct worker {
	int id, cpu;
	pthread_barrier_t *bar;
	uint32_t sent[NME];
	int err;
};

static void *work(void *p)
{
	struct worker *w = p;
	struct spin_frame_addr ad = { .sport = 7000, .dport = SPIN_DEFAULT_PORT };
	struct spin_msg_args a = { .op = SPIN_OP_PUT, .src_rank = 1, .src_pid = 3, .seg_size = PAY };
	uint64_t sum[NME][REDUCE_PKT_ELEMS] = { 0 };
	uint8_t frame[2048], out[2048];
	uint64_t v[REDUCE_PKT_ELEMS];
	struct spin_hdr h;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) || sched_getcpu() != w->cpu) {
		fprintf(stderr, "reduce_stress: cannot run on CPU %d\n", w->cpu);
		w->err = 1;
	}
	memcpy(ad.src_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(ad.dst_mac, "\x02\x00\x00\x00\x00\x01", 6);
	inet_pton(AF_INET, "10.79.99.2", &ad.src_ip);
	inet_pton(AF_INET, "10.79.99.1", &ad.dst_ip);
	pthread_barrier_wait(w->bar);
	for (uint32_t i = 0; i < n_per && !w->err; i++) {
		if (!(i & 255) && sample_now_ns() > deadline) {
			fprintf(stderr, "reduce_stress: thread %d: deadline after %u contributions\n", w->id, i);
			w->err = 1;
			break;
		}
		for (uint32_t m = 0; m < NME; m++) {
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_out = out,
				    .data_size_out = sizeof(out), .repeat = 1);

			a.match_bits = m;
			a.msg_id = 1 + (i * 2 + w->id) * NME + m;	/* unique */
			for (int e = 0; e < REDUCE_PKT_ELEMS; e++) {
				v[e] = mix((uint64_t)a.msg_id << 8 | e);
				sum[m][e] += v[e];
			}
			spin_hdr_build(&h, &a, PAY, 0);
			o.data_size_in = spin_frame_build(frame, sizeof(frame), &ad, &h, v, PAY);
			if (bpf_prog_test_run_opts(prog_fd, &o)) {
				fprintf(stderr, "reduce_stress: BPF_PROG_RUN: %s\n", strerror(errno));
				w->err = 1;
				break;
			}
			w->sent[m]++;
		}
	}
	pthread_mutex_lock(&want_lock);
	for (int m = 0; m < NME; m++)
		for (int e = 0; e < REDUCE_PKT_ELEMS; e++)
			want[m][e] += sum[m][e];
	pthread_mutex_unlock(&want_lock);
	return NULL;
}

static int setup(const char *const objs[NME], int idx[NME])
{
	struct spin_attach_opts o = { .ifname = IF0, .rank = 0, .pid = 3 };
	reduce_state_t init = { .expected = 2ull * n_per, .nelem = REDUCE_PKT_ELEMS };
	char path[1024], name[16];

	if (unshare(CLONE_NEWNET)) {
		perror("reduce_stress: unshare(CLONE_NEWNET)");
		return -1;
	}
	if (system("ip link add " IF0 " type veth peer name " IF1 " && ip addr add 10.79.99.1/24 dev " IF0
		   " && ip link set " IF0 " up && ip link set " IF1 " up"))
		return -1;
	if (spin_attach(&o, &rt) < 0) {
		fprintf(stderr, "reduce_stress: attach: %s\n", spin_errmsg());
		return -1;
	}
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	spin_pin_dir(IF0, path, sizeof(path));
	strcat(path, "/prog_rx");
	prog_fd = bpf_obj_get(path);
	if (prog_fd < 0 || spin_pt_alloc(rt, 0) < 0) {
		fprintf(stderr, "reduce_stress: %s: %s\n", path, prog_fd < 0 ? strerror(errno) : spin_errmsg());
		return -1;
	}
	{
		/* the contributions come from rank 1 at 10.79.99.2 (mkframe) */
		struct spin_peer_spec p = { .rank = 1, .pid = 3, .port = SPIN_DEFAULT_PORT,
					    .mac = { 2, 0, 0, 0, 0, 2 } };

		inet_pton(AF_INET, "10.79.99.2", &p.ip);
		if (spin_peer_add(rt, &p) < 0) {
			fprintf(stderr, "reduce_stress: peer: %s\n", spin_errmsg());
			return -1;
		}
	}
	for (int m = 0; m < NME; m++) {
		struct spin_me_spec s = {
			.pt_index = 0, .match_bits = m, .handler = name,
			.match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
			.options = SPIN_ME_OP_PUT | SPIN_ME_EVENT_COMM_DISABLE,
			.host_len = 8 + PAY, .host_off = UINT64_MAX, .hhost_off = UINT64_MAX,
			.hpu_init = &init, .hpu_init_len = sizeof(init),
		};

		snprintf(name, sizeof(name), "reduce%d", m);
		if (spin_handler_load(rt, objs[m], name) < 0 || (idx[m] = spin_me_append(rt, &s)) < 0) {
			fprintf(stderr, "reduce_stress: %s: %s\n%s\n", objs[m], spin_errmsg(), spin_verifier_log());
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *objs[NME];
	int idx[NME], c, rc = 0;
	struct worker w[2] = { { .id = 0, .cpu = 0 }, { .id = 1, .cpu = 1 } };
	pthread_barrier_t bar;
	pthread_t th[2];
	struct spin_stats st;
	uint8_t *host;
	size_t host_len;

	n_per = 20000;
	while ((c = getopt(argc, argv, "n:1")) != -1) {
		if (c == 'n')
			n_per = strtoul(optarg, NULL, 0);
		else if (c == '1')
			w[1].cpu = 0;
		else
			goto usage;
	}
	if (argc - optind != NME || n_per < 1 || n_per > 1000000) {
usage:
		fprintf(stderr, "usage: reduce_stress [-n N (1..1000000)] [-1] ATOMIC.bpf.o CONTROL.bpf.o\n");
		return 2;
	}
	objs[0] = argv[optind];
	objs[1] = argv[optind + 1];
	if (w[1].cpu && sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "reduce_stress: needs two CPUs\n");
		return 3;
	}
	if (setup(objs, idx) < 0 || !(host = spin_host_mem(rt, &host_len)))
		return 2;

	deadline = sample_now_ns() + DEADLINE_S * 1000000000ull;
	pthread_barrier_init(&bar, NULL, 2);
	for (int t = 0; t < 2; t++) {
		w[t].bar = &bar;
		pthread_create(&th[t], NULL, work, &w[t]);
	}
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	if (w[0].err || w[1].err)
		return 2;

	spin_stats_read(rt, &st);
	for (int r = 0; r < SPIN_DROP_MAX; r++)
		if (st.drops[r]) {
			fprintf(stderr, "reduce_stress: %llu drops %s\n", (unsigned long long)st.drops[r],
				spin_drop_name(r));
			rc = 2;
		}
	for (int m = 0; m < NME; m++) {
		reduce_state_t s;
		struct spin_me me;
		const uint64_t *buf;
		int wrong = 0;

		if (spin_me_get(rt, idx[m], &me) < 0 || spin_hpu_read(rt, idx[m], &s, sizeof(s)) < 0 ||
		    me.host_off + 8 + PAY > host_len)
			return 2;
		buf = (const uint64_t *)(host + me.host_off);	/* [round][sum] */
		for (int e = 0; e < REDUCE_PKT_ELEMS; e++)
			wrong += buf[1 + e] != want[m][e];
		/* the last completion cleared arrived: count what each CPU sent */
		printf("%s (%s): %u contributions (%u from CPU %d, %u from CPU %d), round %llu, %d of %d elements wrong\n",
		       m ? "control" : "atomic", objs[m], w[0].sent[m] + w[1].sent[m], w[0].sent[m], w[0].cpu, w[1].sent[m], w[1].cpu,
		       (unsigned long long)buf[0], wrong, REDUCE_PKT_ELEMS);
		if (buf[0] != 1 || s.round != 1 || s.arrived != 0) {
			fprintf(stderr, "reduce_stress: %s: round did not complete once\n", objs[m]);
			rc = 2;
		}
	}
	printf("messages completed %llu of %u\n", (unsigned long long)st.msgs_completed, 4 * n_per);
	if (st.msgs_completed != 4ull * n_per)
		rc = 2;
	return rc;
}
