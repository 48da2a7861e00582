// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * impair: an impairing link between two network namespaces, for tests and
 * benchmarks (this kernel has no netem).  Run it in a relay namespace that
 * holds one end of a veth pair to each outer namespace (spin_ns_impair in
 * selftests/lib/netns.sh builds that); progs/impair.bpf.c at TC ingress of
 * both ends passes every frame on to the other end, dropping, corrupting
 * or duplicating IPv4 frames with the probabilities set per end.
 *
 *   impair attach DEV_A DEV_B DIR
 *       load progs/impair.bpf.o (next to this binary), attach it at TC
 *       ingress (clsact) of DEV_A and DEV_B, pin its maps as DIR/ports and
 *       DIR/counts
 *   impair set DIR DEV [drop PPM] [dup PPM] [corrupt PPM]
 *       the probabilities for frames arriving at DEV, in parts per
 *       million (0 to 1000000); the ones not given stay
 *   impair stats DIR DEV
 *       print "DEV frames N dropped N duplicated N corrupted N"
 *   impair reset DIR DEV
 *       zero DEV's counters
 *
 * Removing the relay namespace removes the filters; DIR is the caller's to
 * remove.  Exit status: 0, 2 for a usage error, 1 for anything else.
 */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "progs/impair.h"

static int usage(void)
{
	fprintf(stderr, "usage: impair attach DEV_A DEV_B DIR\n"
			"       impair set DIR DEV [drop PPM] [dup PPM] [corrupt PPM]\n"
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

static int attach(const char *a, const char *b, const char *dir)
{
	char exe[PATH_MAX], obj_path[PATH_MAX + 32], pin[PATH_MAX];
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map, *cmap;
	__u32 ia, ib;
	ssize_t n;
	int err, mfd, cfd;

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
	if (!prog || !map || !cmap) {
		fprintf(stderr, "impair: %s lacks the program or a map\n", obj_path);
		return 1;
	}
	mfd = bpf_map__fd(map);
	cfd = bpf_map__fd(cmap);
	for (int k = 0; k < 2; k++) {
		struct impair_port p = { .out_ifindex = k ? ia : ib };
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
	for (int k = 0; k < 2; k++) {
		snprintf(pin, sizeof(pin), "%s/%s", dir, k ? "counts" : "ports");
		if (bpf_obj_pin(k ? cfd : mfd, pin)) {
			fprintf(stderr, "impair: pin %s: %s\n", pin, strerror(errno));
			return 1;
		}
	}
	bpf_object__close(obj);	/* the filters and the pin keep them */
	return 0;
}

static int parse_ppm(const char *s, __u32 *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (!*s || *end || errno || x > 1000000 || (s[0] == '0' && s[1])) {
		fprintf(stderr, "impair: '%s': give parts per million, 0 to 1000000\n", s);
		return -1;
	}
	*v = (__u32)x;
	return 0;
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
	__u32 k;
	int fd;

	if (argc < 2 || argc % 2)
		return usage();
	if ((fd = end_get(argv[0], argv[1], "ports", &k, &p)) < 0)
		return 1;
	for (int i = 2; i < argc; i += 2) {
		__u32 *v = !strcmp(argv[i], "drop") ? &p.drop_ppm :
			   !strcmp(argv[i], "dup") ? &p.dup_ppm :
			   !strcmp(argv[i], "corrupt") ? &p.corrupt_ppm : NULL;

		if (!v)
			return usage();
		if (parse_ppm(argv[i + 1], v))
			return 2;
	}
	return end_put(fd, k, &p);
}

static int stats(int argc, char **argv, bool reset)
{
	struct impair_count p;
	__u32 k;
	int fd;

	if (argc != 2)
		return usage();
	if ((fd = end_get(argv[0], argv[1], "counts", &k, &p)) < 0)
		return 1;
	if (reset) {
		memset(&p, 0, sizeof(p));
		return end_put(fd, k, &p);
	}
	printf("%s frames %llu dropped %llu duplicated %llu corrupted %llu\n", argv[1],
	       (unsigned long long)p.frames, (unsigned long long)p.dropped,
	       (unsigned long long)p.duplicated, (unsigned long long)p.corrupted);
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
