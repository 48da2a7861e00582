// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * impair: an impairing link between two network namespaces, for tests and
 * benchmarks (this kernel has no netem).  Run it in a relay namespace that
 * holds one end of a veth pair to each outer namespace (spin_ns_impair in
 * selftests/lib/netns.sh builds that); progs/impair.bpf.c at TC ingress of
 * both ends passes every frame on to the other end, dropping, corrupting,
 * duplicating, delaying or reordering IPv4 frames as set per end.  ARP
 * passes untouched.
 *
 * A frame that must wait goes to a tap device; the holder, a process
 * 'attach' leaves running in the relay namespace, keeps it until its time
 * and sends it out of the other end.  Frames with nothing to wait for take
 * the direct way, so a frame held back is overtaken by the ones after it.
 * The holder never sends early; on a loaded machine it may send late.  It
 * exits when DIR/ports goes, or with the namespace.
 *
 *   impair attach DEV_A DEV_B DIR
 *       load progs/impair.bpf.o (next to this binary), attach it at TC
 *       ingress (clsact) of DEV_A and DEV_B, pin its maps as DIR/ports,
 *       DIR/counts and DIR/held, start the holder
 *   impair set DIR DEV [drop PPM] [dup PPM] [corrupt PPM] [delay US]
 *                      [jitter US] [reorder PPM [hold US]]
 *       for frames arriving at DEV: the probabilities of a drop, a
 *       duplicate, a flipped bit, in parts per million (0 to 1000000);
 *       a delay of every frame and a uniform extra 0 to jitter, in
 *       microseconds (0 to 10000000); the probability that a frame is
 *       held back 'hold' microseconds more (default 1000) so that later
 *       frames overtake it.  The ones not given stay.
 *   impair stats DIR DEV
 *       print "DEV frames N dropped N duplicated N corrupted N delayed N
 *       reordered N hold_lost N" (hold_lost: frames the holder lost, its
 *       queue full or a send failed)
 *   impair reset DIR DEV
 *       zero DEV's counters
 *
 * Removing the relay namespace removes the filters and ends the holder;
 * DIR is the caller's to remove.  Exit status: 0, 2 for a usage error, 1
 * for anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "progs/impair.h"

static int usage(void)
{
	fprintf(stderr, "usage: impair attach DEV_A DEV_B DIR\n"
			"       impair set DIR DEV [drop PPM] [dup PPM] [corrupt PPM] [delay US]\n"
			"                          [jitter US] [reorder PPM [hold US]]\n"
			"       impair stats DIR DEV\n"
			"       impair reset DIR DEV\n");
	return 2;
}

static int ifindex_of(const char *dev, __u32 *out)
{
	unsigned int i = if_nametoindex(dev);

	if (!i) {
		fprintf(stderr, "impair: no interface '%s' here\n", dev);
		return -1;
	}
	*out = i;
	return 0;
}

static int map_open(const char *dir, const char *name)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = bpf_obj_get(p);
	if (fd < 0)
		fprintf(stderr, "impair: %s: %s (run 'impair attach' first)\n", p, strerror(errno));
	return fd;
}

/* ------------------------------------------------------------ holder -- */

#define HOLD_MAX	65536	/* frames held at once; more are lost */
#define HOLD_BATCH	64	/* frames read or sent per system call round */
#define TAP_QLEN	32768	/* the taps' rings */

struct held_frame {
	__u64 depart, seq;	/* sent in (depart, seq) order */
	__u32 out, len;
	__u16 slot;
	unsigned char *buf;
};

static struct held_frame *heap;
static unsigned int heap_n;

static bool before(const struct held_frame *a, const struct held_frame *b)
{
	return a->depart < b->depart || (a->depart == b->depart && a->seq < b->seq);
}

static void heap_push(struct held_frame f)
{
	unsigned int i = heap_n++;

	while (i && before(&f, &heap[(i - 1) / 2])) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = f;
}

static struct held_frame heap_pop(void)
{
	struct held_frame top = heap[0], last = heap[--heap_n];
	unsigned int i = 0, c;

	while ((c = 2 * i + 1) < heap_n) {
		if (c + 1 < heap_n && before(&heap[c + 1], &heap[c]))
			c++;
		if (!before(&heap[c], &last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (heap_n)
		heap[i] = last;
	return top;
}

static __u64 now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);	/* bpf_ktime_get_ns's clock */
	return (__u64)t.tv_sec * 1000000000ull + (__u64)t.tv_nsec;
}

/* the holder's counters, DIR/held mapped; NULL (said) on failure */
static struct impair_held *held_map(int fd)
{
	void *m = mmap(NULL, 2 * sizeof(struct impair_held), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);

	if (m == MAP_FAILED) {
		fprintf(stderr, "impair: mmap of the holder's counters: %s\n", strerror(errno));
		return NULL;
	}
	return m;
}

static void lost(struct impair_held *held, __u16 slot)
{
	if (slot < 2)
		__atomic_fetch_add(&held[slot].lost, 1, __ATOMIC_RELAXED);
}

/* send the frames that are due (at most HOLD_BATCH); one the end does not
 * take (its peer's ring full, as on the direct way) is lost */
static void hold_send(int pk, struct impair_held *held)
{
	struct held_frame f[HOLD_BATCH];
	struct sockaddr_ll sa[HOLD_BATCH];
	struct mmsghdr m[HOLD_BATCH];
	struct iovec iov[HOLD_BATCH];
	unsigned int n = 0, i = 0;
	__u64 now = now_ns();
	int r;

	while (n < HOLD_BATCH && heap_n && heap[0].depart <= now) {
		f[n] = heap_pop();
		sa[n] = (struct sockaddr_ll){
			.sll_family = AF_PACKET,
			.sll_ifindex = (int)f[n].out,
			.sll_protocol = *(__u16 *)(f[n].buf + 12),	/* the EtherType */
		};
		iov[n] = (struct iovec){ .iov_base = f[n].buf, .iov_len = f[n].len };
		m[n] = (struct mmsghdr){ .msg_hdr = {
			.msg_name = &sa[n], .msg_namelen = sizeof(sa[n]),
			.msg_iov = &iov[n], .msg_iovlen = 1 } };
		n++;
	}
	while (i < n) {
		r = sendmmsg(pk, m + i, n - i, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			lost(held, f[i].slot);	/* this one failed: skip it */
			r = 1;
		}
		i += (unsigned int)r;
	}
	for (i = 0; i < n; i++)
		free(f[i].buf);
}

/* take what the tap has: every frame starts with a struct impair_hold_hdr
 * (anything else, e.g. a packet the tap's own stack sent, is ignored) */
static int hold_read(int fd, struct impair_held *held, unsigned char *buf, size_t cap)
{
	static __u64 seq;
	struct impair_hold_hdr h;

	for (int i = 0; i < HOLD_BATCH; i++) {
		ssize_t r = read(fd, buf, cap);
		struct held_frame f;

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if ((size_t)r < sizeof(h) + ETH_HLEN)
			continue;
		memcpy(&h, buf, sizeof(h));
		if (h.magic != IMPAIR_HOLD_MAGIC)
			continue;
		f = (struct held_frame){ .depart = h.depart_ns, .seq = seq++, .out = h.out_ifindex,
					 .len = (__u32)(r - sizeof(h)), .slot = h.slot };
		if (heap_n == HOLD_MAX || !(f.buf = malloc(f.len))) {
			lost(held, h.slot);
			continue;
		}
		memcpy(f.buf, buf + sizeof(h), f.len);
		heap_push(f);
	}
	return 0;
}

/* the holder: read the taps, send each frame when it is due */
static int hold_loop(const int tap[2], int pk, struct impair_held *held, const char *pin)
{
	size_t cap = 65536 + sizeof(struct impair_hold_hdr);
	unsigned char *buf = malloc(cap);
	struct pollfd pfd[2] = { { .fd = tap[0], .events = POLLIN }, { .fd = tap[1], .events = POLLIN } };
	__u64 checked = now_ns();

	heap = calloc(HOLD_MAX, sizeof(*heap));
	if (!buf || !heap)
		return 1;
	prctl(PR_SET_NAME, "impair-hold");
	prctl(PR_SET_TIMERSLACK, 1);	/* wake when the first frame is due */
	for (;;) {
		__u64 now, wait = 500000000ull;
		struct timespec ts;

		while (heap_n && heap[0].depart <= now_ns())
			hold_send(pk, held);
		now = now_ns();
		if (heap_n && heap[0].depart - now < wait)
			wait = heap[0].depart - now;
		ts = (struct timespec){ .tv_sec = (time_t)(wait / 1000000000ull),
					.tv_nsec = (long)(wait % 1000000000ull) };
		if (ppoll(pfd, 2, &ts, NULL) < 0 && errno != EINTR)
			return 1;
		for (int k = 0; k < 2; k++) {
			if (pfd[k].revents & (POLLERR | POLLHUP | POLLNVAL))
				return 1;
			if ((pfd[k].revents & POLLIN) && hold_read(tap[k], held, buf, cap))
				return 1;
		}
		if (now - checked >= 1000000000ull) {
			if (access(pin, F_OK))
				return 0;	/* the link is gone */
			checked = now;
		}
	}
}

/* a tap for the frames arriving at one end: its fd, *ifindex */
static int tap_open(const char *end, __u32 *ifindex)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	char path[128];
	int fd, s, v;
	FILE *f;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "impair: /dev/net/tun: %s\n", strerror(errno));
		return -1;
	}
	snprintf(ifr.ifr_name, IFNAMSIZ, "hold%%d");
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || ioctl(fd, TUNSETIFF, &ifr)) {
		fprintf(stderr, "impair: a tap for %s: %s\n", end, strerror(errno));
		goto fail;
	}
	/* no IPv6 (the tap would send its own solicitations) */
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifr.ifr_name);
	if ((f = fopen(path, "w"))) {
		fputs("1\n", f);
		fclose(f);
	}
	ifr.ifr_qlen = TAP_QLEN;
	v = ioctl(s, SIOCSIFTXQLEN, &ifr);
	if (!v)
		v = ioctl(s, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (v || ioctl(s, SIOCSIFFLAGS, &ifr) || !(*ifindex = if_nametoindex(ifr.ifr_name))) {
		fprintf(stderr, "impair: tap %s: %s\n", ifr.ifr_name, strerror(errno));
		goto fail;
	}
	close(s);
	return fd;
fail:
	if (s >= 0)
		close(s);
	close(fd);
	return -1;
}

/* start the holder in the background, reading tap[0..1]; it gets the fds */
static int hold_start(const int tap[2], int held_fd, const char *dir)
{
	char pin[PATH_MAX];
	struct impair_held *held;
	int pk, one = 8 << 20;
	pid_t pid;

	snprintf(pin, sizeof(pin), "%s/ports", dir);
	pk = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);	/* sends only */
	if (pk < 0) {
		fprintf(stderr, "impair: packet socket: %s\n", strerror(errno));
		return -1;
	}
	setsockopt(pk, SOL_SOCKET, SO_SNDBUFFORCE, &one, sizeof(one));
	if (!(held = held_map(held_fd)))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "impair: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		/* let the caller's pipes close; the relay's removal ends us */
		setsid();
		if (nul >= 0) {
			dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
		if (chdir("/"))
			_exit(1);
		_exit(hold_loop(tap, pk, held, pin));
	}
	close(pk);
	munmap(held, 2 * sizeof(*held));
	return 0;
}

/* DEV's tap's tx drops (its ring was full), from /proc/net/dev */
static __u64 tap_drops(__u32 ifindex)
{
	char name[IF_NAMESIZE], line[512];
	unsigned long long v[12];
	__u64 d = 0;
	FILE *f;

	if (!ifindex || !if_indextoname(ifindex, name) || !(f = fopen("/proc/net/dev", "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':'), *n = line;

		if (!c)
			continue;
		*c = 0;
		while (*n == ' ')
			n++;
		if (strcmp(n, name))
			continue;
		if (sscanf(c + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10], &v[11]) == 12)
			d = v[11];
	}
	fclose(f);
	return d;
}

static int attach(const char *a, const char *b, const char *dir)
{
	char exe[PATH_MAX], obj_path[PATH_MAX + 32], pin[PATH_MAX];
	static const char *const pins[] = { "ports", "counts", "held" };
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map, *cmap, *hmap;
	__u32 ia, ib, hold[2];
	int tap[2] = { -1, -1 };
	ssize_t n;
	int err, mfd, cfd, hfd;

	if (ifindex_of(a, &ia) || ifindex_of(b, &ib))
		return 1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return perror("impair: /proc/self/exe"), 1;
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(obj_path, sizeof(obj_path), "%s/progs/impair.bpf.o", exe);
	obj = bpf_object__open_file(obj_path, NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "impair: cannot load %s: %s\n", obj_path, strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "impair");
	map = bpf_object__find_map_by_name(obj, "impair_ports");
	cmap = bpf_object__find_map_by_name(obj, "impair_counts");
	hmap = bpf_object__find_map_by_name(obj, "impair_held");
	if (!prog || !map || !cmap || !hmap) {
		fprintf(stderr, "impair: %s lacks the program or a map\n", obj_path);
		return 1;
	}
	mfd = bpf_map__fd(map);
	cfd = bpf_map__fd(cmap);
	hfd = bpf_map__fd(hmap);
	/* the holder's taps: hold[0] for frames arriving at a, [1] at b */
	for (int k = 0; k < 2; k++)
		if ((tap[k] = tap_open(k ? b : a, &hold[k])) < 0)
			return 1;
	for (int k = 0; k < 2; k++) {
		struct impair_port p = { .out_ifindex = k ? ia : ib, .hold_ifindex = hold[k],
					 .slot = (__u32)k, .reorder_us = IMPAIR_REORDER_US };
		struct impair_count z = { 0 };
		__u32 in = k ? ib : ia;
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)in, .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(prog));

		if (bpf_map_update_elem(cfd, &in, &z, BPF_ANY) ||
		    bpf_map_update_elem(mfd, &in, &p, BPF_ANY)) {
			fprintf(stderr, "impair: map update: %s\n", strerror(errno));
			return 1;
		}
		err = bpf_tc_hook_create(&hook);
		if (err && err != -EEXIST) {
			fprintf(stderr, "impair: clsact on %s: %s\n", k ? b : a, strerror(-err));
			return 1;
		}
		err = bpf_tc_attach(&hook, &opts);
		if (err) {
			fprintf(stderr, "impair: TC ingress of %s: %s\n", k ? b : a, strerror(-err));
			return 1;
		}
	}
	for (int k = 0; k < 3; k++) {
		snprintf(pin, sizeof(pin), "%s/%s", dir, pins[k]);
		if (bpf_obj_pin(k == 0 ? mfd : k == 1 ? cfd : hfd, pin)) {
			fprintf(stderr, "impair: pin %s: %s\n", pin, strerror(errno));
			return 1;
		}
	}
	if (hold_start(tap, hfd, dir))
		return 1;
	close(tap[0]);
	close(tap[1]);
	bpf_object__close(obj);	/* the filters and the pins keep them */
	return 0;
}

/* a decimal number 0 to max, no sign, no leading zero: *v, or -1 (said) */
static int parse_num(const char *s, __u32 max, __u32 *v, const char *what)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (!*s || *s < '0' || *s > '9' || *end || errno || x > max || (s[0] == '0' && s[1])) {
		fprintf(stderr, "impair: '%s': give %s, 0 to %u\n", s, what, max);
		return -1;
	}
	*v = (__u32)x;
	return 0;
}

static int parse_ppm(const char *s, __u32 *v)
{
	return parse_num(s, 1000000, v, "parts per million");
}

static int parse_us(const char *s, __u32 *v)
{
	return parse_num(s, IMPAIR_MAX_US, v, "microseconds");
}

/* DEV's entry of DIR's map `name` into *v; *k its key.  The map's fd, or
 * -1 (said). */
static int end_get(const char *dir, const char *dev, const char *name, __u32 *k, void *v)
{
	int fd;

	if (ifindex_of(dev, k) || (fd = map_open(dir, name)) < 0)
		return -1;
	if (bpf_map_lookup_elem(fd, k, v)) {
		fprintf(stderr, "impair: %s is not an end of the relay\n", dev);
		close(fd);
		return -1;
	}
	return fd;
}

static int end_put(int fd, __u32 k, const void *v)
{
	if (bpf_map_update_elem(fd, &k, v, BPF_EXIST)) {
		fprintf(stderr, "impair: map update: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

static int set(int argc, char **argv)
{
	struct impair_port p;
	char name[IF_NAMESIZE];
	__u32 k;
	int fd;

	if (argc < 2)
		return usage();
	for (int i = 2; i < argc; i += 2)	/* the words first: usage before anything else */
		if (i + 1 >= argc || (strcmp(argv[i], "drop") && strcmp(argv[i], "dup") &&
				      strcmp(argv[i], "corrupt") && strcmp(argv[i], "delay") &&
				      strcmp(argv[i], "jitter") && strcmp(argv[i], "reorder") &&
				      (strcmp(argv[i], "hold") || strcmp(argv[i - 2], "reorder"))))
			return usage();
	if ((fd = end_get(argv[0], argv[1], "ports", &k, &p)) < 0)
		return 1;
	for (int i = 2; i < argc; i += 2) {
		const char *w = argv[i], *v = argv[i + 1];
		int bad;

		if (!strcmp(w, "delay"))
			bad = parse_us(v, &p.delay_us);
		else if (!strcmp(w, "jitter"))
			bad = parse_us(v, &p.jitter_us);
		else if (!strcmp(w, "hold"))
			bad = parse_us(v, &p.reorder_us);
		else if (!strcmp(w, "reorder"))
			p.reorder_us = IMPAIR_REORDER_US,	/* unless a hold follows */
			bad = parse_ppm(v, &p.reorder_ppm);
		else
			bad = parse_ppm(v, !strcmp(w, "drop") ? &p.drop_ppm :
					   !strcmp(w, "dup") ? &p.dup_ppm : &p.corrupt_ppm);
		if (bad)
			return 2;
	}
	if ((p.delay_us || p.jitter_us || p.reorder_ppm) &&
	    (!p.hold_ifindex || !if_indextoname(p.hold_ifindex, name))) {
		fprintf(stderr, "impair: the holder is not running (its tap is gone): attach again\n");
		return 1;
	}
	return end_put(fd, k, &p);
}

static int stats(int argc, char **argv, bool reset)
{
	struct impair_count p;
	struct impair_port port;
	struct impair_held *held;
	__u64 drops;
	__u32 k;
	int fd, pfd, hfd;

	if (argc != 2)
		return usage();
	if ((fd = end_get(argv[0], argv[1], "counts", &k, &p)) < 0 ||
	    (pfd = end_get(argv[0], argv[1], "ports", &k, &port)) < 0 ||
	    (hfd = map_open(argv[0], "held")) < 0 || !(held = held_map(hfd)))
		return 1;
	if (port.slot >= 2) {
		fprintf(stderr, "impair: %s has no holder slot\n", argv[1]);
		return 1;
	}
	held += port.slot;
	drops = tap_drops(port.hold_ifindex);
	if (reset) {
		__atomic_store_n(&held->lost, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&held->tap_drops_base, drops, __ATOMIC_RELAXED);
		memset(&p, 0, sizeof(p));
		return end_put(fd, k, &p);
	}
	printf("%s frames %llu dropped %llu duplicated %llu corrupted %llu delayed %llu "
	       "reordered %llu hold_lost %llu\n", argv[1],
	       (unsigned long long)p.frames, (unsigned long long)p.dropped,
	       (unsigned long long)p.duplicated, (unsigned long long)p.corrupted,
	       (unsigned long long)p.delayed, (unsigned long long)p.reordered,
	       (unsigned long long)(__atomic_load_n(&held->lost, __ATOMIC_RELAXED) +
				    (drops > held->tap_drops_base ? drops - held->tap_drops_base : 0)));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "attach") && argc == 5)
		return attach(argv[2], argv[3], argv[4]);
	if (!strcmp(argv[1], "set"))
		return set(argc - 2, argv + 2);
	if (!strcmp(argv[1], "stats"))
		return stats(argc - 2, argv + 2, false);
	if (!strcmp(argv[1], "reset"))
		return stats(argc - 2, argv + 2, true);
	return usage();
}
