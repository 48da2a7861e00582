/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the sample host programs share (samples/NAME/ programs): Portals set-up,
 * an error check, time, percentiles and a barrier between the ranks of a
 * job.  Header-only so each sample stays one file; logic that belongs to
 * the product goes into libspin instead.
 *
 * Environment (as for every spin program): SPIN_IFACE, SPIN_HOSTFILE and
 * SPIN_RANK (or PMI_RANK, OMPI_COMM_WORLD_RANK); SAMPLE_DIR names a
 * directory all ranks share, for the barrier.
 */
#ifndef SPIN_SAMPLE_H
#define SPIN_SAMPLE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <spin/portals4.h>
#include <spin/spin.h>

/* Die with the call, its Portals return code and the library's reason. */
#define PTL_CHECK(call)								\
	do {									\
		int _rc = (call);						\
		if (_rc != PTL_OK) {						\
			fprintf(stderr, "%s:%d: %s = %d (%s)\n", __FILE__, __LINE__, \
				#call, _rc, PtlSpinErrmsg());			\
			exit(1);						\
		}								\
	} while (0)

static inline uint64_t sample_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int sample_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The p-th percentile (0..100) of n values; sorts v. */
static inline uint64_t sample_percentile(uint64_t *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), sample_cmp_u64);
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/*
 * A tally in shared memory (a file in $SAMPLE_DIR mapped by every rank):
 * ranks count what they have done, one waiter sleeps on a futex until the
 * count reaches a target.  For a benchmark's own synchronisation (such as
 * "every rank has checked message i"), which must not use the network
 * being measured.  sample_tally_open(name, 1) creates (the waiter, before
 * a barrier), sample_tally_open(name, 0) opens (the others, after it).
 */
struct sample_tally {
	uint32_t count;		/* futex word */
	uint32_t bad;		/* a rank failed */
};

static inline struct sample_tally *sample_tally_open(const char *name, int create)
{
	const char *dir = getenv("SAMPLE_DIR");
	struct sample_tally *t;
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/tally.%s", dir ? dir : ".", name);
	fd = open(p, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0 || (create && ftruncate(fd, sizeof(*t)))) {
		fprintf(stderr, "sample: %s: %s\n", p, strerror(errno));
		exit(1);
	}
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (t == MAP_FAILED) {
		fprintf(stderr, "sample: mmap %s: %s\n", p, strerror(errno));
		exit(1);
	}
	return t;
}

/* Count one; wake the waiter when the count reaches target (or on bad). */
static inline void sample_tally_add(struct sample_tally *t, uint32_t target, int bad)
{
	if (bad)
		__atomic_store_n(&t->bad, 1, __ATOMIC_RELEASE);
	if (__atomic_add_fetch(&t->count, 1, __ATOMIC_ACQ_REL) >= target || bad)
		syscall(SYS_futex, &t->count, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Sleep until the count reaches target: 0, or -1 after timeout_ms or
 * when a rank reported bad. */
static inline int sample_tally_wait(struct sample_tally *t, uint32_t target, int timeout_ms)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t v = __atomic_load_n(&t->count, __ATOMIC_ACQUIRE);
		struct timespec ts;
		long left;

		if (__atomic_load_n(&t->bad, __ATOMIC_ACQUIRE))
			return -1;
		if (v >= target)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = timeout_ms - ((now.tv_sec - t0.tv_sec) * 1000 +
				     (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -1;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (left % 1000) * 1000000;
		syscall(SYS_futex, &t->count, FUTEX_WAIT, v, &ts, NULL, 0);
	}
}

/*
 * Wait until all `size` ranks reached barrier `name` (a file per rank in
 * $SAMPLE_DIR; up to timeout_ms).  Exits on timeout: a sample that cannot
 * synchronise cannot produce a result.
 */
/* $SAMPLE_GATE, if set, names a file: wait (at most timeout_ms) until it
 * exists.  A test holds a job there to look at its set-up while it is all
 * in place (samples/raid/lib.sh RAID_HOOK). */
static inline void sample_gate(int timeout_ms)
{
	const char *g = getenv("SAMPLE_GATE");

	if (!g || !*g)
		return;
	for (int t = 0; t < timeout_ms; t++) {
		if (access(g, F_OK) == 0)
			return;
		usleep(1000);
	}
	fprintf(stderr, "sample: gate %s did not open in %d ms\n", g, timeout_ms);
	exit(1);
}

static inline void sample_barrier(const char *name, uint32_t rank, uint32_t size, int timeout_ms)
{
	const char *dir = getenv("SAMPLE_DIR");
	char p[512];
	FILE *f;

	if (!dir || !*dir) {
		fprintf(stderr, "sample: SAMPLE_DIR (a directory all ranks share) is not set\n");
		exit(1);
	}
	snprintf(p, sizeof(p), "%s/barrier.%s.%u", dir, name, rank);
	f = fopen(p, "w");
	if (!f || fclose(f)) {
		fprintf(stderr, "sample: %s: %s\n", p, strerror(errno));
		exit(1);
	}
	for (int t = 0; t < timeout_ms; t++) {
		uint32_t n = 0;

		for (uint32_t r = 0; r < size; r++) {
			snprintf(p, sizeof(p), "%s/barrier.%s.%u", dir, name, r);
			n += access(p, F_OK) == 0;
		}
		if (n == size)
			return;
		usleep(1000);
	}
	fprintf(stderr, "sample: rank %u: barrier '%s' timed out after %d ms\n", rank, name,
		timeout_ms);
	exit(1);
}

/* The path of a file that sits next to this program's binary (a sample's
 * handler object, e.g. "reduce.bpf.o"), or of the file in $SPIN_SAMPLE_DIR. */
static inline const char *sample_obj_path(const char *file, char *buf, size_t len)
{
	const char *env = getenv("SPIN_SAMPLE_DIR");
	char dir[512];
	ssize_t n;
	char *p;

	if (env) {
		snprintf(buf, len, "%s/%s", env, file);
		return buf;
	}
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n < 0) {
		snprintf(buf, len, "%s", file);
		return buf;
	}
	dir[n] = 0;
	p = strrchr(dir, '/');
	if (p)
		*p = 0;
	snprintf(buf, len, "%s/%s", dir, file);
	return buf;
}

/*
 * A UDP socket for a sample's host-only baseline: bound to ip:port (ip in
 * network order, INADDR_ANY for any; port 0 for any), with receive and send
 * buffers of bufsize bytes (0: the defaults); force uses SO_*BUFFORCE (root
 * may exceed net.core.[rw]mem_max).  -1 on failure (errno set).
 */
static inline int sample_udp_socket(uint32_t ip, uint16_t port, int bufsize, int force)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;

	a.sin_addr.s_addr = ip;
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bufsize) {
		setsockopt(fd, SOL_SOCKET, force ? SO_RCVBUFFORCE : SO_RCVBUF, &bufsize, sizeof(bufsize));
		setsockopt(fd, SOL_SOCKET, force ? SO_SNDBUFFORCE : SO_SNDBUF, &bufsize, sizeof(bufsize));
	}
	if ((ip != INADDR_ANY || port) && bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The address of rank r's host in the job, at a UDP port. */
static inline struct sockaddr_in sample_rank_addr(const struct spin_job *j, uint32_t r,
						  uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr = j->hosts[r].ip;
	return a;
}

/* The usual start: a logical matching NI, its rank and size, an event queue
 * and a portal table entry. */
struct sample_ni {
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_pt_index_t pt;
	uint32_t rank, size;
};

static inline void sample_ni_init(struct sample_ni *s, ptl_pt_index_t pt, ptl_size_t eq_count)
{
	ptl_process_t id;
	ptl_size_t n;

	PTL_CHECK(PtlInit());
	PTL_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
			    NULL, &s->ni));
	PTL_CHECK(PtlGetId(s->ni, &id));
	PTL_CHECK(PtlGetMap(s->ni, 0, NULL, &n));
	s->rank = id.rank;
	s->size = (uint32_t)n;
	PTL_CHECK(PtlEQAlloc(s->ni, eq_count, &s->eq));
	PTL_CHECK(PtlPTAlloc(s->ni, 0, s->eq, pt, &s->pt));
}

static inline void sample_ni_fini(struct sample_ni *s)
{
	PtlNIFini(s->ni);
	PtlFini();
}

#endif /* SPIN_SAMPLE_H */
