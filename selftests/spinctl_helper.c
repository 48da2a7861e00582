// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Library-level checks for selftests/test_spinctl.sh (issue 14): what the
 * CLI cannot reach.  Every command prints what it found and exits 0 when
 * the library behaves, 1 when it does not, 2 on a setup error.
 *
 *   spinctl_helper me-huge IFACE        huge window lengths are refused
 *   spinctl_helper xdp-link IFACE PIN   re-attach IFACE's spin_rx through a
 *                                       bpf_link pinned at PIN (netlink can
 *                                       then not detach it)
 *   spinctl_helper tcx-count IFACE      programs at IFACE's TC ingress (tcx)
 *   spinctl_helper rendezvous DIR       publishing never follows a link
 *                                       planted in DIR, a FIFO is not read
 *   spinctl_helper owner IFACE          owner liveness: pid + start time
 *   spinctl_helper pin-open PIN         another user opens and maps a pin
 *   spinctl_helper bpf-stats            hold BPF_ENABLE_STATS (run counts and
 *                                       run time of every program) until
 *                                       stdin closes; prints "on" when held
 *
 * Only the public API (include/spin/spin.h) is used, so the same file also
 * builds against older libspin versions; spin_owner_alive() (libspin
 * internal) is declared weak.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <spin/spin.h>

bool spin_owner_alive(uint32_t pid, uint32_t start) __attribute__((weak));
uint32_t spin_proc_start(uint32_t pid) __attribute__((weak));

static int bad;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", ok ? "ok" : "WRONG");
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	if (!ok)
		bad = 1;
}

static int open_rt(const char *ifname, struct spin_rt **rt)
{
	if (spin_open(ifname, rt)) {
		fprintf(stderr, "spin_open %s: %s\n", ifname, spin_errmsg());
		return -1;
	}
	return 0;
}

static int active_entries(struct spin_rt *rt)
{
	struct spin_me m;
	int n = 0;

	for (uint32_t i = 0; i < SPIN_MAX_ME; i++)
		if (!spin_me_get(rt, i, &m) && m.state != SPIN_ME_FREE)
			n++;
	return n;
}

/* Finding 2: a window length near 2^64 must not wrap the allocator into an
 * entry at offset 0 that covers every other entry's buffer. */
static int me_huge(const char *ifname)
{
	static const uint64_t lens[] = {
		UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 4094, UINT64_MAX - 4095,
		UINT64_MAX - 8191, 1ull << 63, (1ull << 32) * SPIN_PAGE,
	};
	struct spin_me_spec s = {
		.pt_index = 0, .list = SPIN_LIST_PRIORITY, .match_rank = SPIN_RANK_ANY,
		.match_pid = SPIN_PID_ANY, .host_off = UINT64_MAX, .hhost_off = UINT64_MAX,
		.match_bits = 0x5a5a,
	};
	struct spin_rt *rt;
	struct spin_pt pt;
	bool allocated;
	int before, idx;

	if (open_rt(ifname, &rt))
		return 2;
	allocated = !spin_pt_get(rt, 0, &pt) && (pt.flags & SPIN_PT_ALLOCATED);
	if (!allocated && spin_pt_alloc(rt, 0)) {
		fprintf(stderr, "pt alloc: %s\n", spin_errmsg());
		spin_close(rt);
		return 2;
	}
	before = active_entries(rt);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (int kind = 0; kind < 3; kind++) {
			struct spin_me_spec t = s;
			struct spin_me m;
			const char *what = kind == 0 ? "host_len (first fit)" :
					   kind == 1 ? "host_len at offset 4096" :
						       "hhost_len (first fit)";

			if (kind == 0) {
				t.host_len = lens[i];
			} else if (kind == 1) {
				t.host_len = lens[i];
				t.host_off = 4096;
			} else {
				t.hhost_len = lens[i];
			}
			idx = spin_me_append(rt, &t);
			if (idx >= 0) {
				spin_me_get(rt, (uint32_t)idx, &m);
				check(false, "%s %#llx accepted: entry %d at window %llu+%llu", what,
				      (unsigned long long)lens[i], idx,
				      (unsigned long long)(kind == 2 ? m.hhost_off : m.host_off),
				      (unsigned long long)(kind == 2 ? m.hhost_len : m.host_len));
				spin_me_unlink(rt, (uint32_t)idx);
			} else {
				check(true, "%s %#llx refused: %s", what, (unsigned long long)lens[i],
				      spin_errmsg());
			}
		}
	}
	/* an explicit offset near 2^64 with a small length must not wrap either */
	{
		struct spin_me_spec t = s;

		t.host_off = UINT64_MAX - 4095;
		t.host_len = 8192;
		idx = spin_me_append(rt, &t);
		check(idx < 0, "offset %#llx + 8192 %s", (unsigned long long)t.host_off,
		      idx < 0 ? "refused" : "accepted");
		if (idx >= 0)
			spin_me_unlink(rt, (uint32_t)idx);
	}
	/* a sane length still works */
	{
		struct spin_me_spec t = s;
		struct spin_me m;

		t.host_len = 3 * SPIN_PAGE + 1;
		idx = spin_me_append(rt, &t);
		check(idx >= 0, "a %llu-byte buffer is accepted (%s)",
		      (unsigned long long)t.host_len, idx >= 0 ? "ok" : spin_errmsg());
		if (idx >= 0) {
			spin_me_get(rt, (uint32_t)idx, &m);
			check(m.host_off % SPIN_PAGE == 0 && m.host_len == t.host_len,
			      "placed at %llu+%llu", (unsigned long long)m.host_off,
			      (unsigned long long)m.host_len);
			spin_me_unlink(rt, (uint32_t)idx);
		}
	}
	check(active_entries(rt) == before, "entries in use: %d before, %d after", before,
	      active_entries(rt));
	if (!allocated)
		spin_pt_free(rt, 0);
	spin_close(rt);
	return bad;
}

static int xdp_link(const char *ifname, const char *pin)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_link_create_opts, lo);
	char path[1024];
	int ifindex = if_nametoindex(ifname), fd, lfd;
	__u32 mode;

	if (!ifindex || spin_pin_dir(ifname, path, sizeof(path) - 16)) {
		fprintf(stderr, "no interface or pin dir for %s\n", ifname);
		return 2;
	}
	strcat(path, "/prog_rx");
	fd = bpf_obj_get(path);
	if (fd < 0 || bpf_xdp_query(ifindex, 0, &q)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 2;
	}
	mode = q.skb_prog_id ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	if (bpf_xdp_detach(ifindex, mode, NULL)) {
		fprintf(stderr, "xdp detach: %s\n", strerror(errno));
		return 2;
	}
	lo.flags = mode;
	lfd = bpf_link_create(fd, ifindex, BPF_XDP, &lo);
	if (lfd < 0 || bpf_obj_pin(lfd, pin)) {
		fprintf(stderr, "xdp link on %s: %s\n", ifname, strerror(errno));
		return 2;
	}
	printf("spin_rx on %s attached through a bpf_link pinned at %s\n", ifname, pin);
	return 0;
}

static int tcx_count(const char *ifname)
{
	__u32 ids[16], cnt = 16, flags = 0;
	int ifindex = if_nametoindex(ifname);

	if (!ifindex)
		return 2;
	/* BPF_TCX_INGRESS = 46 (Linux >= 6.6); the query's target_fd is the
	 * ifindex for tcx */
	if (bpf_prog_query(ifindex, (enum bpf_attach_type)46, 0, &flags, ids, &cnt)) {
		if (errno == ENOENT) {
			printf("0\n");
			return 0;
		}
		fprintf(stderr, "tcx query: %s\n", strerror(errno));
		return 2;
	}
	printf("%u\n", cnt);
	return 0;
}

static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

/* The rendezvous file: published with O_EXCL into a new file, never through
 * a symbolic link someone planted; a FIFO in place of a rank's file is not
 * opened for reading (it would block for ever). */
static int rendezvous(const char *dir)
{
	struct spin_job j = { .rank = 0, .size = 1 };
	struct in_addr ip;
	char victim[512], link[512], path[512], line[128];
	struct stat st;
	int fd, err;

	inet_pton(AF_INET, "10.77.66.1", &ip);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "untouched\n", 10) != 10) {
		fprintf(stderr, "%s: %s\n", victim, strerror(errno));
		return 2;
	}
	close(fd);
	/* the name the library used to write to: .spin-rank-R.PID */
	snprintf(link, sizeof(link), "%s/.spin-rank-0.%d", dir, (int)getpid());
	if (symlink(victim, link)) {
		fprintf(stderr, "symlink %s: %s\n", link, strerror(errno));
		return 2;
	}
	err = spin_job_rendezvous(&j, dir, ip, 2000);
	check(err == 0, "rendezvous of 1 rank: %s", err ? spin_errmsg() : "ok");
	check(read_line(victim, line, sizeof(line)) && !strcmp(line, "untouched"),
	      "the planted link's target is untouched ('%s')", line);
	snprintf(path, sizeof(path), "%s/spin-rank-0", dir);
	check(!lstat(path, &st) && S_ISREG(st.st_mode), "spin-rank-0 is a regular file");
	check(read_line(path, line, sizeof(line)) && !strcmp(line, "10.77.66.1"),
	      "spin-rank-0 holds the address ('%s')", line);
	spin_job_free(&j);
	unlink(link);

	/* rank 1's name is a FIFO nobody writes: not a published address */
	snprintf(path, sizeof(path), "%s/spin-rank-1", dir);
	if (mkfifo(path, 0666)) {
		fprintf(stderr, "mkfifo %s: %s\n", path, strerror(errno));
		return 2;
	}
	j = (struct spin_job){ .rank = 0, .size = 2 };
	err = spin_job_rendezvous(&j, dir, ip, 200);
	check(err == -SPIN_ETIMEDOUT, "a FIFO as rank 1's file: %s", err ? spin_errmsg() : "accepted");
	spin_job_free(&j);
	j = (struct spin_job){ .rank = 0, .size = 1 };
	err = spin_job_rendezvous(&j, dir, ip, -1);
	check(err == -SPIN_EUSAGE, "a negative timeout is refused: %s", err ? spin_errmsg() : "accepted");
	spin_job_free(&j);
	/* 0.0.0.0 is never published (a process that read its runtime's
	 * address before the attach wrote it did, and its job hung) */
	j = (struct spin_job){ .rank = 2, .size = 3 };
	err = spin_job_rendezvous(&j, dir, (struct in_addr){ 0 }, 200);
	check(err == -SPIN_EUSAGE, "address 0.0.0.0 is refused: %s", err ? spin_errmsg() : "accepted");
	snprintf(path, sizeof(path), "%s/spin-rank-2", dir);
	check(access(path, F_OK) != 0, "and not published");
	spin_job_free(&j);
	return bad;
}

/* The owner of a portal table entry: the pid and its start time. */
static int owner(const char *ifname)
{
	struct spin_rt *rt;
	struct spin_pt pt;
	uint32_t start, me = (uint32_t)getpid(), start_field;
	int pfd[2];
	pid_t child;
	char c;

	if (!spin_owner_alive || !spin_proc_start) {
		check(false, "libspin has no spin_owner_alive()/spin_proc_start()");
		return 1;
	}
	start = spin_proc_start(0);
	check(start != 0, "this process's start time: %u", start);
	check(spin_proc_start(me) == start, "by pid: the same");
	check(spin_owner_alive(me, start), "this process is alive");
	check(spin_owner_alive(me, 0), "... also without a start time (pid only)");
	check(!spin_owner_alive(me, start + 1), "this pid with another start time is stale");
	check(!spin_owner_alive(0, 0), "pid 0 is nobody");

	/* a child: alive, then a zombie, then gone */
	if (pipe(pfd))
		return 2;
	child = fork();
	if (child == 0) {
		close(pfd[1]);
		(void)!read(pfd[0], &c, 1);
		_exit(0);
	}
	close(pfd[0]);
	start = spin_proc_start((uint32_t)child);
	check(start && spin_owner_alive((uint32_t)child, start), "a running child is alive");
	close(pfd[1]);
	for (int i = 0; i < 200; i++) {	/* until it is a zombie (bounded: 2 s) */
		char p[64], buf[512], *s;
		FILE *f;

		snprintf(p, sizeof(p), "/proc/%d/stat", (int)child);
		f = fopen(p, "r");
		if (!f)
			break;
		s = fgets(buf, sizeof(buf), f);
		fclose(f);
		if (s && (s = strrchr(buf, ')')) && s[2] == 'Z')
			break;
		usleep(10000);
	}
	check(!spin_owner_alive((uint32_t)child, start), "an exited (zombie) child is not alive");
	waitpid(child, NULL, 0);
	check(!spin_owner_alive((uint32_t)child, start), "a reaped child is not alive");

	/* a portal table entry a process owns records its start time */
	if (open_rt(ifname, &rt))
		return 2;
	if (spin_pt_alloc_flags(rt, 15, SPIN_PT_OWNED)) {
		fprintf(stderr, "pt alloc 15: %s\n", spin_errmsg());
		spin_close(rt);
		return 2;
	}
	spin_pt_get(rt, 15, &pt);
	/* the field after owner_pid (it was padding before) */
	memcpy(&start_field, (char *)&pt.owner_pid + sizeof(pt.owner_pid), sizeof(start_field));
	check(pt.owner_pid == me && start_field == spin_proc_start(0),
	      "portal table entry 15: owner pid %u, start %u", pt.owner_pid, start_field);
	check(spin_owner_alive(pt.owner_pid, start_field), "... and its owner is alive");
	spin_pt_free(rt, 15);
	spin_close(rt);
	return bad;
}

static int bpf_stats(void)
{
	char c;
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (fd < 0) {
		printf("BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 2;
	}
	printf("on\n");
	while (read(0, &c, 1) > 0)
		;
	close(fd);
	return 0;
}

/*
 * pin-open PIN: what another application can do with a runtime pin it finds
 * by name: open it (BPF_OBJ_GET), read it and, if it is mmap-able, map it
 * writable.  Exit 1 when any of that worked, 0 (with the one-line error)
 * when the open was refused.
 */
static int pin_open(const char *pin)
{
	int fd = bpf_obj_get(pin);
	struct bpf_map_info info = {};
	uint32_t ilen = sizeof(info);

	if (fd < 0) {
		printf("%s: %s\n", pin, strerror(errno));
		return errno == EACCES || errno == EPERM ? 0 : 2;
	}
	if (!bpf_obj_get_info_by_fd(fd, &info, &ilen) && (info.map_flags & BPF_F_MMAPABLE)) {
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		printf("%s: opened, mmap %s\n", pin, m == MAP_FAILED ? strerror(errno) : "worked");
	} else {
		printf("%s: opened\n", pin);
	}
	close(fd);
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "me-huge"))
		return me_huge(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "xdp-link"))
		return xdp_link(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "tcx-count"))
		return tcx_count(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "rendezvous"))
		return rendezvous(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "owner"))
		return owner(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "bpf-stats"))
		return bpf_stats();
	if (argc == 3 && !strcmp(argv[1], "pin-open"))
		return pin_open(argv[2]);
	fprintf(stderr, "usage: spinctl_helper me-huge IFACE | xdp-link IFACE PIN | tcx-count IFACE |\n"
		"       rendezvous DIR | owner IFACE | bpf-stats | pin-open PIN\n");
	return 2;
}
