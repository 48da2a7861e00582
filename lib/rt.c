// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin runtime control: attach/open/detach, pin layout, status,
 * statistics, events, the host window and peers.
 *
 * Pin layout (SPIN_BPFFS, default /sys/fs/bpf):
 *   <bpffs>/spin/<ifname>/            init network namespace
 *   <bpffs>/spin/ns<inode>/<ifname>/  any other network namespace
 *       <map name>                    every map of the runtime object
 *       prog_rx                       the runtime's entry program
 *       handlers/<name>               loaded handler programs
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libspin_internal.h"

const char *const spin_map_names[SPIN_M_MAX] = {
	[SPIN_M_CFG]		= "spin_cfg",
	[SPIN_M_STATS]		= "spin_stats",
	[SPIN_M_CTX]		= "spin_ctx",
	[SPIN_M_PT]		= "spin_pt",
	[SPIN_M_ME]		= "spin_me",
	[SPIN_M_HPU]		= "spin_hpu",
	[SPIN_M_HOST]		= "spin_host",
	[SPIN_M_PEERS]		= "spin_peers",
	[SPIN_M_DEDUP]		= "spin_dedup",
	[SPIN_M_MSGS]		= "spin_msgs",
	[SPIN_M_EVENTS]		= "spin_events",
	[SPIN_M_HANDLERS]	= "spin_handlers",
	[SPIN_M_ME_CT]		= "spin_me_ct",
	[SPIN_M_GC]		= "spin_gc",
	[SPIN_M_XSKS]		= "spin_xsks",
	[SPIN_M_WAKER]		= "spin_waker",
	[SPIN_M_AUTH]		= "spin_auth",
	[SPIN_M_MX]		= "spin_mx",
	[SPIN_M_PROCS]		= "spin_procs",
	[SPIN_M_RINGS]		= "spin_rings",
	[SPIN_M_PUTQ]		= "spin_putq",
	[SPIN_M_SCRATCH]	= "spin_hscratch",
	[SPIN_M_MSTATE]		= "spin_mstate",
	[SPIN_M_MSTATE_PC]	= "spin_mstate_pc",
	[SPIN_M_HPU_BIG]	= "spin_hpu_big",
	[SPIN_M_HGETS]		= "spin_hgets",
	[SPIN_M_STAGES]		= "spin_stages",
	[SPIN_M_WINS]		= "spin_wins",
	[SPIN_M_PUTQS]		= "spin_putqs",
	[SPIN_M_MSTATES]	= "spin_mstates",
};

/* ------------------------------------------------------------ checks -- */

const char *spin_bpffs_root(void)
{
	const char *r = getenv("SPIN_BPFFS");

	return r && *r ? r : SPIN_BPFFS_DEFAULT;
}

static bool have_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

int spin_check_priv(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (geteuid() == 0)
		return 0;
	if (syscall(SYS_capget, &h, d) == 0 &&
	    (have_cap(d, 39 /* CAP_BPF */) || have_cap(d, CAP_SYS_ADMIN)) &&
	    have_cap(d, CAP_NET_ADMIN))
		return 0;
	return spin_seterr(SPIN_EPERM, "need root (CAP_BPF, CAP_NET_ADMIN)");
}

int spin_check_bpffs(void)
{
	const char *root = spin_bpffs_root();
	struct statfs sf;

	if (statfs(root, &sf) == 0 && sf.f_type == BPF_FS_MAGIC)
		return 0;
	if (errno == EACCES || errno == EPERM)
		return spin_seterr(SPIN_EPERM, "cannot access %s: need root (CAP_BPF, CAP_NET_ADMIN)",
				   root);
	return spin_seterr(SPIN_ENOBPFFS, "bpffs not mounted at %s: run 'mount -t bpf bpf %s'",
			   root, root);
}

bool spin_name_ok(const char *name)
{
	size_t n;

	if (!name || !*name || name[0] == '.')
		return false;
	n = strlen(name);
	if (n >= 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/' || name[i] <= ' ' || name[i] == 0x7f)
			return false;
	return true;
}

/* The kernel's rules for interface names (dev_valid_name): 1..15 bytes,
 * not "." or "..", no '/', ':' or white space.  The name becomes a pin
 * directory name, so "." and ".." must never get through. */
static int check_ifname(const char *ifname)
{
	if (!ifname || !*ifname)
		return spin_seterr(SPIN_EUSAGE, "no interface name given");
	if (strlen(ifname) >= IF_NAMESIZE)
		return spin_seterr(SPIN_EUSAGE, "bad interface name '%.32s%s' (at most %d bytes)",
				   ifname, strlen(ifname) > 32 ? "..." : "", IF_NAMESIZE - 1);
	if (!strcmp(ifname, ".") || !strcmp(ifname, ".."))
		return spin_seterr(SPIN_EUSAGE, "bad interface name '%s'", ifname);
	for (const char *c = ifname; *c; c++)
		if (*c == '/' || *c == ':' || (unsigned char)*c <= ' ' || *c == 0x7f)
			return spin_seterr(SPIN_EUSAGE,
					   "bad interface name '%s' (no '/', ':', spaces or control characters)",
					   ifname);
	return 0;
}

uint32_t spin_prog_id(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (prog_fd < 0 || bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	return info.id;
}

static int map_info(int fd, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

/* ----------------------------------------------------------- pin dir -- */

/* The inode of this process's network namespace, 0 for the init one. */
int spin_netns_ino(unsigned long *ino)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self))
		return spin_seterr(SPIN_EFAIL, "cannot stat /proc/self/ns/net: %s (is /proc mounted?)",
				   strerror(errno));
	if (stat("/proc/1/ns/net", &init)) {
		/* pid 1 may be out of reach (containers); since Linux 6.x the
		 * initial network namespace has a fixed inode number */
		*ino = self.st_ino == 0xEFFFFFF9UL ? 0 : self.st_ino;
		return 0;
	}
	*ino = (self.st_ino == init.st_ino && self.st_dev == init.st_dev) ? 0 : self.st_ino;
	return 0;
}

static int ns_dir(char *buf, size_t len)
{
	unsigned long ino;
	int err, n;

	err = spin_netns_ino(&ino);
	if (err)
		return err;
	if (ino)
		n = snprintf(buf, len, "%s/spin/ns%lu", spin_bpffs_root(), ino);
	else
		n = snprintf(buf, len, "%s/spin", spin_bpffs_root());
	if (n < 0 || (size_t)n >= len)
		return spin_seterr(SPIN_EUSAGE, "bpffs path too long: %s", spin_bpffs_root());
	return 0;
}

int spin_pin_dir(const char *ifname, char *buf, size_t len)
{
	char nd[PATH_MAX];
	int err, n;

	err = check_ifname(ifname);
	if (err)
		return err;
	err = ns_dir(nd, sizeof(nd));
	if (err)
		return err;
	n = snprintf(buf, len, "%s/%s", nd, ifname);
	if (n < 0 || (size_t)n >= len)
		return spin_seterr(SPIN_EUSAGE, "pin directory path too long for %s", ifname);
	return 0;
}

/* ------------------------------------------------------ runtime object -- */

static bool readable(const char *p)
{
	return access(p, R_OK) == 0;
}

static int find_rt_obj(const char *given, char *out, size_t len)
{
	char exe[PATH_MAX - 64], *slash;
	const char *env = getenv("SPIN_OBJ_DIR");
	ssize_t n;

	if (given) {
		if (!readable(given))
			return spin_seterr(SPIN_ENOENT, "runtime object %s: %s", given,
					   strerror(errno));
		snprintf(out, len, "%s", given);
		return 0;
	}
	if (env && *env) {
		snprintf(out, len, "%s/spin_rt.bpf.o", env);
		if (readable(out))
			return 0;
		return spin_seterr(SPIN_ENOENT, "runtime object %s not found (SPIN_OBJ_DIR=%s)",
				   out, env);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(out, len, "%s/../bpf/spin_rt.bpf.o", exe);
			if (readable(out))
				return 0;
			snprintf(out, len, "%s/../../bpf/spin_rt.bpf.o", exe);
			if (readable(out))
				return 0;
		}
	}
	snprintf(out, len, "%s/spin_rt.bpf.o", SPIN_LIBDIR);
	if (readable(out))
		return 0;
	return spin_seterr(SPIN_ENOENT,
			   "runtime object spin_rt.bpf.o not found (looked next to the program and in "
			   "%s): build it with 'make' or set SPIN_OBJ_DIR", SPIN_LIBDIR);
}

int spin_rt_obj_find(char *out, size_t len)
{
	char found[PATH_MAX];
	int err = find_rt_obj(NULL, found, sizeof(found));

	if (err)
		return err;
	err = spin_compat_obj(found, out, len);	/* the helpers-only build? */
	return err < 0 ? err : 0;
}

/* First IPv4 address of the interface (network order), 0 if none. */
static uint32_t if_ipv4(const char *ifname)
{
	struct ifaddrs *ifa, *i;
	uint32_t ip = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !strcmp(i->ifa_name, ifname)) {
			ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			break;
		}
	}
	freeifaddrs(ifa);
	return ip;
}

static int if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = {};
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

/* ---------------------------------------------------------- attach -- */

/* The fan-out program at TC ingress (tcx; attach type numbers of Linux
 * >= 6.6, spelled out for older headers). */
#define SPIN_PIN_PROG_TC	"prog_tc"
#define SPIN_TCX_INGRESS	46

/* TC ingress without tcx (before Linux 6.6, or SPIN_COMPAT_FORCE=tcx): a
 * clsact qdisc (left in place at detach, as tc(8) does: others may use
 * it) and a cls_bpf filter with spin's handle and priority. */
#define SPIN_TC_HANDLE	0x5350
#define SPIN_TC_PRIO	0x5350

static int tc_cls_attach(int ifindex, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, h, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = SPIN_TC_HANDLE, .priority = SPIN_TC_PRIO,
		    .prog_fd = prog_fd);
	int r = bpf_tc_hook_create(&h);

	if ((r && r != -EEXIST) || (r = bpf_tc_attach(&h, &o))) {
		errno = -r;
		return -1;
	}
	return 0;
}

/* Detach spin's fan-out program from TC ingress, attached either way;
 * 0 if it is not attached (any more). */
static int tc_detach(int prog_fd, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, h, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = SPIN_TC_HANDLE, .priority = SPIN_TC_PRIO);
	int r;

	if (!bpf_prog_detach2(prog_fd, ifindex, (enum bpf_attach_type)SPIN_TCX_INGRESS))
		return 0;
	if (errno != ENOENT && errno != EINVAL)	/* EINVAL: no tcx (< 6.6) */
		return -1;
	r = bpf_tc_detach(&h, &o);
	if (r && r != -ENOENT && r != -EINVAL) {
		errno = -r;
		return -1;
	}
	return 0;
}

struct attach_state {
	bool tc_attached;	/* spin_tc (pinned as prog_tc) */
	struct bpf_object *obj;
	char *log;
	const char *ifname;
	char pin_dir[PATH_MAX];
	struct spin_pins pins;	/* the pin directories, opened and checked */
	int ifindex;
	__u32 xdp_flags;
	bool attached;
};

/* Undo a partial attach in the order of spin_detach: XDP, TC, pins. */
static void attach_rollback(struct attach_state *s)
{
	if (s->attached && bpf_xdp_detach(s->ifindex, s->xdp_flags, NULL))
		spin_warn("rollback: cannot detach XDP from ifindex %d: %s", s->ifindex,
			  strerror(errno));
	if (s->tc_attached) {
		int fd = s->pins.dir >= 0 ? spin_obj_get_at(s->pins.dir, SPIN_PIN_PROG_TC) : -1;

		if (fd < 0 || tc_detach(fd, s->ifindex))
			spin_warn("rollback: cannot detach spin_tc from ifindex %d: %s",
				  s->ifindex, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	if (s->pins.made_dir) {
		if (s->pins.dir >= 0) {
			close(s->pins.dir);
			s->pins.dir = -1;
		}
		spin_rm_pins_at(s->pins.ns, s->ifname);
		if (s->pins.ns_name[0])	/* the per-namespace dir, if now empty */
			unlinkat(s->pins.spin, s->pins.ns_name, AT_REMOVEDIR);
	}
	spin_pins_close(&s->pins);
}

int spin_attach(const struct spin_attach_opts *o, struct spin_rt **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct attach_state s = { .ifindex = 0 };
	struct spin_pins old;
	struct bpf_program *prx, *ptc, *pfin;
	struct bpf_map *map;
	struct spin_cfg cfg = {};
	char obj_path[PATH_MAX];
	const char *ifname;
	int fallbacks;
	uint64_t rnd = 0;
	__u32 k = 0, pages;
	int err, fd, perr;

	spin_libbpf_reset();
	spin_vlog_clear();
	if (out)
		*out = NULL;
	if (!o)
		return spin_seterr(SPIN_EUSAGE, "spin_attach: no options");
	ifname = o->ifname;
	s.ifname = ifname;
	spin_pins_init(&s.pins);
	err = check_ifname(ifname);
	if (err)
		return err;
	if (o->host_pages > SPIN_MAX_HOST_PAGES)
		return spin_seterr(SPIN_EUSAGE, "host window of %u pages out of range (1..%u)",
				   o->host_pages, SPIN_MAX_HOST_PAGES);
	err = spin_check_priv();
	if (err)
		return err;
	err = spin_check_bpffs();
	if (err)
		return err;
	s.ifindex = if_nametoindex(ifname);
	if (!s.ifindex)
		return spin_seterr(SPIN_ENODEV, "interface '%s' not found", ifname);
	err = spin_pin_dir(ifname, s.pin_dir, sizeof(s.pin_dir));
	if (err)
		return err;

	/* what exists of the pin directories must be safe to use */
	perr = spin_pins_open(ifname, SPIN_PINS_OPEN, &old);
	if (perr && perr != -SPIN_ENOENT) {
		spin_pins_close(&old);
		return perr;
	}
	if (bpf_xdp_query(s.ifindex, 0, &q) == 0 && (q.prog_id || q.drv_prog_id || q.skb_prog_id ||
						     q.hw_prog_id)) {
		__u32 id = q.prog_id ? q.prog_id : q.drv_prog_id ? q.drv_prog_id :
			   q.skb_prog_id ? q.skb_prog_id : q.hw_prog_id;

		fd = perr ? -1 : spin_obj_get_at(old.dir, SPIN_PIN_PROG_RX);
		spin_pins_close(&old);
		if (fd >= 0) {
			__u32 mine = spin_prog_id(fd);

			close(fd);
			if (mine == id)
				return spin_seterr(SPIN_EEXIST,
						   "spin is already attached to '%s' (run 'spinctl detach %s' first)",
						   ifname, ifname);
		}
		return spin_seterr(SPIN_EEXIST,
				   "'%s' already has an XDP program (id %u): detach it first "
				   "('ip link set dev %s xdp off')", ifname, id, ifname);
	}
	spin_pins_close(&old);
	if (!perr)
		return spin_seterr(SPIN_EEXIST,
				   "stale spin pins in %s (spin is not attached to '%s'): run 'spinctl detach %s'",
				   s.pin_dir, ifname, ifname);

	err = find_rt_obj(o->obj_path, obj_path, sizeof(obj_path));
	if (err)
		return err;
	/* the helpers-only runtime where the kernel lacks its kfuncs */
	fallbacks = spin_compat_fallbacks();
	if (fallbacks < 0)
		return fallbacks;
	{
		char given[PATH_MAX];

		/* a path given is loaded as is if it has no helpers-only build */
		snprintf(given, sizeof(given), "%s", obj_path);
		err = spin_compat_obj(given, obj_path, sizeof(obj_path));
		if (err < 0 && !o->obj_path)
			return err;
		err = 0;
	}

	cfg.ifindex = s.ifindex;
	cfg.my_rank = o->rank;
	cfg.my_pid = o->pid;
	/* every slot speaks as my_rank/my_pid until a process takes it (and
	 * again after it left): an answer for an empty slot is the node's */
	for (int k = 0; k < SPIN_MAX_PROCS; k++) {
		cfg.proc_rank[k] = o->rank;
		cfg.proc_pid[k] = o->pid;
	}
	cfg.my_ip = if_ipv4(ifname);
	if (if_mac(ifname, cfg.my_mac))
		spin_warn("cannot read the MAC address of '%s': %s", ifname, strerror(errno));
	cfg.port = htons(o->port ? o->port : SPIN_DEFAULT_PORT);
	pages = o->host_pages ? o->host_pages : SPIN_DEF_HOST_PAGES;
	/* the map's elements are SPIN_HOST_CHUNK bytes: round up */
	pages = (pages + SPIN_HOST_CHUNK / SPIN_PAGE - 1) / (SPIN_HOST_CHUNK / SPIN_PAGE) *
		(SPIN_HOST_CHUNK / SPIN_PAGE);
	cfg.host_pages = pages;
	cfg.flags = (o->generic ? SPIN_CFG_F_GENERIC : 0) | (o->no_dedup ? SPIN_CFG_F_NO_DEDUP : 0) |
		    (o->wake_direct ? 0 : SPIN_CFG_F_WAKE_DEFER) | (o->open ? SPIN_CFG_F_OPEN : 0);
	cfg.msg_timeout_ns = o->msg_timeout_ns ? o->msg_timeout_ns : SPIN_MSG_TIMEOUT_NS;
	cfg.job_key = o->job_key;
	cfg.get_max = o->get_max && o->get_max < SPIN_MAX_MSG ? o->get_max : SPIN_MAX_MSG;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() << 16;
	cfg.next_msg_id = (rnd & 0x7fffffff) | 1;
	cfg.gen = 1;

	s.log = malloc(SPIN_LOG_BUF_SIZE);
	if (!s.log)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	s.log[0] = 0;
	oo.kernel_log_buf = s.log;
	oo.kernel_log_size = SPIN_LOG_BUF_SIZE;
	s.obj = bpf_object__open_file(obj_path, &oo);
	if (!s.obj) {
		err = spin_seterr(SPIN_EFAIL, "cannot open runtime object %s: %s", obj_path,
				  *spin_libbpf_last() ? spin_libbpf_last() : strerror(errno));
		goto out;
	}
	prx = bpf_object__find_program_by_name(s.obj, "spin_rx");
	if (!prx) {
		err = spin_seterr(SPIN_EFAIL, "runtime object %s has no program 'spin_rx'", obj_path);
		goto out;
	}
	err = spin_obj_abi_check(s.obj, obj_path, "runtime object");
	if (err)
		goto out;
	for (int i = 0; i < SPIN_M_MAX; i++) {
		if (!bpf_object__find_map_by_name(s.obj, spin_map_names[i])) {
			err = spin_seterr(SPIN_EFAIL, "runtime object %s has no map '%s'", obj_path,
					  spin_map_names[i]);
			goto out;
		}
	}
	map = bpf_object__find_map_by_name(s.obj, "spin_host");
	if (bpf_map__set_max_entries(map, pages / (SPIN_HOST_CHUNK / SPIN_PAGE))) {
		err = spin_seterr(SPIN_EUSAGE, "bad host window size %u pages", pages);
		goto out;
	}
	if (bpf_object__load(s.obj)) {
		int e = errno;

		if (s.log[0]) {
			const char *line = spin_vlog_set(s.log);

			err = spin_seterr(SPIN_EVERIFIER, "verifier rejected the runtime %s: %s",
					  obj_path, line);
		} else if (e == EPERM || e == EACCES) {
			err = spin_seterr(SPIN_EPERM, "cannot load runtime %s: %s: need root (CAP_BPF, CAP_NET_ADMIN)",
					  obj_path, spin_libbpf_last());
		} else {
			err = spin_seterr(SPIN_EFAIL, "cannot load runtime %s: %s", obj_path,
					  *spin_libbpf_last() ? spin_libbpf_last() : strerror(e));
		}
		goto out;
	}

	/* pins: create the directories (each checked, never through a
	 * symbolic link), then every map and the programs, relative to the
	 * interface's directory */
	err = spin_pins_open(ifname, SPIN_PINS_CREATE, &s.pins);
	if (err == -SPIN_EEXIST)
		err = spin_seterr(SPIN_EEXIST, "spin is already attached to '%s' (run 'spinctl detach %s' first)",
				  ifname, ifname);
	else if (err == -SPIN_ENOENT)
		err = spin_seterr(SPIN_EFAIL, "cannot create %s: it disappeared", s.pins.path);
	if (err)
		goto out;
	if (mkdirat(s.pins.dir, SPIN_HANDLER_DIR, 0700)) {
		err = spin_seterr(spin_errno_code(errno), "cannot create %s/%s: %s", s.pin_dir,
				  SPIN_HANDLER_DIR, strerror(errno));
		goto out;
	}
	bpf_object__for_each_map(map, s.obj) {
		if (bpf_map__is_internal(map))
			continue;
		if (spin_obj_pin_at(bpf_map__fd(map), s.pins.dir, bpf_map__name(map))) {
			err = spin_seterr(spin_errno_code(errno), "cannot pin map %s/%s: %s", s.pin_dir,
					  bpf_map__name(map), strerror(errno));
			goto out;
		}
	}
	if (spin_obj_pin_at(bpf_program__fd(prx), s.pins.dir, SPIN_PIN_PROG_RX)) {
		err = spin_seterr(spin_errno_code(errno), "cannot pin %s/%s: %s", s.pin_dir,
				  SPIN_PIN_PROG_RX, strerror(errno));
		goto out;
	}
	/* the finish stage every handler program ends in (spin_stages): held
	 * by the pinned map, as the handler programs are */
	pfin = bpf_object__find_program_by_name(s.obj, "spin_finish");
	k = SPIN_STAGE_FINISH;
	if (!pfin) {
		err = spin_seterr(SPIN_EFAIL, "runtime object %s has no program 'spin_finish': rebuild it",
				  obj_path);
		goto out;
	}
	if (bpf_map_update_elem(bpf_map__fd(bpf_object__find_map_by_name(s.obj, "spin_stages")),
				&k, &(int){ bpf_program__fd(pfin) }, 0)) {
		err = spin_seterr(SPIN_EFAIL, "cannot insert spin_finish into spin_stages: %s",
				  strerror(errno));
		goto out;
	}
	/* fan-out (several device puts per invocation): spin_tc at TC
	 * ingress.  Without it the runtime sends the first put only. */
	ptc = bpf_object__find_program_by_name(s.obj, "spin_tc");
	if (ptc) {
		if (spin_obj_pin_at(bpf_program__fd(ptc), s.pins.dir, SPIN_PIN_PROG_TC)) {
			err = spin_seterr(spin_errno_code(errno), "cannot pin %s/%s: %s", s.pin_dir,
					  SPIN_PIN_PROG_TC, strerror(errno));
			goto out;
		}
		int r = -1;

		errno = EINVAL;
		if (!(fallbacks & SPIN_COMPAT_TCX))
			r = bpf_prog_attach_opts(bpf_program__fd(ptc), s.ifindex,
						 (enum bpf_attach_type)SPIN_TCX_INGRESS, NULL);
		if (r && errno == EINVAL)	/* no tcx (< 6.6): cls_bpf */
			r = tc_cls_attach(s.ifindex, bpf_program__fd(ptc));
		if (r) {
			spin_warn("cannot attach the fan-out program at TC ingress of '%s': %s; "
				  "handlers can send one device put per invocation", ifname,
				  strerror(errno));
		} else {
			s.tc_attached = true;
			cfg.flags |= SPIN_CFG_F_FANOUT;
		}
	}
	k = 0;
	/* spin_auth first: spin_cfg's gen (1, never 0 once written) tells
	 * spin_open in another process that this attach wrote both */
	if (o->auth.on &&
	    bpf_map_update_elem(bpf_map__fd(bpf_object__find_map_by_name(s.obj, "spin_auth")),
				&k, &o->auth, 0)) {
		err = spin_seterr(SPIN_EFAIL, "cannot write spin_auth: %s", strerror(errno));
		goto out;
	}
	if (bpf_map_update_elem(bpf_map__fd(bpf_object__find_map_by_name(s.obj, "spin_cfg")),
				&k, &cfg, 0)) {
		err = spin_seterr(SPIN_EFAIL, "cannot write spin_cfg: %s", strerror(errno));
		goto out;
	}

	s.xdp_flags = o->generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	if (bpf_xdp_attach(s.ifindex, bpf_program__fd(prx), XDP_FLAGS_UPDATE_IF_NOEXIST | s.xdp_flags,
			   NULL)) {
		int e = errno;

		if (e == EBUSY || e == EEXIST)
			err = spin_seterr(SPIN_EEXIST, "'%s' already has an XDP program: detach it first",
					  ifname);
		else if (o->generic)
			err = spin_seterr(SPIN_EXDP, "XDP generic attach to '%s' failed: %s", ifname,
					  strerror(e));
		else
			err = spin_seterr(SPIN_EXDP,
					  "XDP native attach to '%s' failed: %s (driver without native XDP? "
					  "try generic mode: 'spinctl attach %s generic')",
					  ifname, strerror(e), ifname);
		goto out;
	}
	s.attached = true;
	bpf_object__close(s.obj);
	s.obj = NULL;
	free(s.log);
	s.log = NULL;
	if (out) {
		err = spin_open(ifname, out);
		if (err) {
			/* keep the error message of spin_open */
			s.attached = true;
			attach_rollback(&s);
			return err;
		}
	}
	spin_pins_close(&s.pins);
	return 0;
out:
	attach_rollback(&s);
	bpf_object__close(s.obj);
	free(s.log);
	return err;
}

/* ------------------------------------------------------------ open -- */

static void *map_mmap(int fd, size_t *mlen)
{
	struct bpf_map_info info;
	size_t len, pg = sysconf(_SC_PAGESIZE);
	void *m;

	if (map_info(fd, &info))
		return NULL;
	len = (size_t)((info.value_size + 7) & ~7u) * info.max_entries;
	len = (len + pg - 1) & ~(pg - 1);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	*mlen = len;
	return m;
}

int spin_open(const char *ifname, struct spin_rt **out)
{
	struct spin_pins pins;
	struct spin_rt *rt;
	int err;

	if (out)
		*out = NULL;
	if (!out)
		return spin_seterr(SPIN_EUSAGE, "spin_open: no output pointer");
	spin_libbpf_init();
	err = check_ifname(ifname);
	if (err)
		return err;
	err = spin_check_bpffs();
	if (err)
		return err;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	for (int i = 0; i < SPIN_M_MAX; i++)
		rt->map_fd[i] = -1;
	rt->prog_rx_fd = rt->dir_fd = rt->ring_fd = rt->win_fd = -1;
	pthread_mutex_init(&rt->mu, NULL);
	snprintf(rt->ifname, sizeof(rt->ifname), "%s", ifname);
	err = spin_pin_dir(ifname, rt->pin_dir, sizeof(rt->pin_dir));
	if (err)
		goto fail;
	/* the pin directories, each checked, none through a symbolic link */
	err = spin_pins_open(ifname, SPIN_PINS_OPEN, &pins);
	if (err == -SPIN_ENOENT) {
		if (!if_nametoindex(ifname))
			err = spin_seterr(SPIN_ENODEV, "interface '%s' not found", ifname);
		else
			err = spin_seterr(SPIN_ENOENT,
					  "spin is not attached to '%s' (run 'spinctl attach %s')",
					  ifname, ifname);
	}
	if (err) {
		spin_pins_close(&pins);
		goto fail;
	}
	rt->dir_fd = pins.dir;	/* kept: flock()ed for table changes */
	pins.dir = -1;
	spin_pins_close(&pins);
	for (int i = 0; i < SPIN_M_MAX; i++) {
		rt->map_fd[i] = spin_obj_get_at(rt->dir_fd, spin_map_names[i]);
		if (rt->map_fd[i] < 0) {
			if (errno == EACCES || errno == EPERM)
				err = spin_seterr(SPIN_EPERM, "need root (CAP_BPF, CAP_NET_ADMIN)");
			else
				err = spin_seterr(SPIN_ENOENT,
						  "incomplete spin pins in %s (%s: %s): run 'spinctl detach %s' and attach again",
						  rt->pin_dir, spin_map_names[i], strerror(errno), ifname);
			goto fail;
		}
	}
	rt->prog_rx_fd = spin_obj_get_at(rt->dir_fd, SPIN_PIN_PROG_RX);
	if (rt->prog_rx_fd < 0) {
		err = spin_seterr(SPIN_ENOENT,
				  "incomplete spin pins in %s (programs): run 'spinctl detach %s' and attach again",
				  rt->pin_dir, ifname);
		goto fail;
	}
	rt->cfg = map_mmap(rt->map_fd[SPIN_M_CFG], &rt->cfg_mlen);
	rt->me = map_mmap(rt->map_fd[SPIN_M_ME], &rt->me_mlen);
	rt->hpu = map_mmap(rt->map_fd[SPIN_M_HPU], &rt->hpu_mlen);
	rt->hpu_big = map_mmap(rt->map_fd[SPIN_M_HPU_BIG], &rt->hpu_big_mlen);
	if (!rt->cfg || !rt->me || !rt->hpu || !rt->hpu_big) {
		err = spin_seterr(SPIN_EFAIL, "cannot mmap the maps of %s: %s", rt->pin_dir,
				  strerror(errno));
		goto fail;
	}
	/* another process may be attaching: its pins are there before it
	 * writes spin_cfg (and spin_auth before that); its remaining steps
	 * take milliseconds, since its verifier ran before the pins.  Beside
	 * stress-ng, a Portals process that opened a runtime being attached
	 * read address 0.0.0.0 and published it, and its job's rendezvous
	 * never completed (ptl/mpirun_mproc). */
	for (int t = 0; !__atomic_load_n(&rt->cfg->gen, __ATOMIC_ACQUIRE); t++) {
		if (t >= SPIN_OPEN_WAIT_MS / 10) {
			err = spin_seterr(SPIN_EFAIL,
					  "the runtime on '%s' is not set up (spin_cfg unwritten after %d ms): "
					  "another attach failed or is still running; run 'spinctl detach %s' "
					  "and attach again", ifname, SPIN_OPEN_WAIT_MS, ifname);
			goto fail;
		}
		usleep(10000);
	}
	{
		uint32_t zero = 0;

		if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_AUTH], &zero, &rt->auth)) {
			err = spin_seterr(SPIN_EFAIL, "cannot read %s/spin_auth: %s", rt->pin_dir,
					  strerror(errno));
			goto fail;
		}
	}
	*out = rt;
	return 0;
fail:
	spin_close(rt);
	return err;
}

void spin_rt_auth(struct spin_rt *rt, struct spin_auth *out)
{
	if (out)
		*out = rt ? rt->auth : (struct spin_auth){ 0 };
}

void spin_close(struct spin_rt *rt)
{
	if (!rt)
		return;
	if (rt->rb)
		ring_buffer__free(rt->rb);
	if (rt->rb_cons) {
		munmap((void *)rt->rb_cons, sysconf(_SC_PAGESIZE));
		munmap((void *)rt->rb_prod, sysconf(_SC_PAGESIZE));
	}
	if (rt->sock)
		spin_sock_close(rt->sock);
	if (rt->cfg)
		munmap(rt->cfg, rt->cfg_mlen);
	if (rt->me)
		munmap(rt->me, rt->me_mlen);
	if (rt->hpu)
		munmap(rt->hpu, rt->hpu_mlen);
	if (rt->hpu_big)
		munmap(rt->hpu_big, rt->hpu_big_mlen);
	for (int k = 1; k < SPIN_MAX_PROCS; k++) {
		if (rt->hpu_s[k])
			munmap(rt->hpu_s[k], (size_t)SPIN_MAX_HPU * SPIN_HPU_SIZE);
		if (rt->hpu_big_s[k])
			munmap(rt->hpu_big_s[k], (size_t)SPIN_MAX_HPU_BIG * SPIN_HPU_BIG_SIZE);
	}
	if (rt->ptm)
		munmap(rt->ptm, rt->ptm_len);
	if (rt->host)
		munmap(rt->host, rt->host_len);
	for (int i = 0; i < SPIN_M_MAX; i++)
		if (rt->map_fd[i] >= 0)
			close(rt->map_fd[i]);
	if (rt->prog_rx_fd >= 0)
		close(rt->prog_rx_fd);
	if (rt->ring_fd >= 0)
		close(rt->ring_fd);
	if (rt->win_fd >= 0)
		close(rt->win_fd);
	if (rt->dir_fd >= 0)
		close(rt->dir_fd);
	pthread_mutex_destroy(&rt->mu);
	free(rt);
}

/* ---------------------------------------------------------- detach -- */

/* The first error of a detach is the one reported; later ones are warned
 * about, and every step still runs. */
struct detach_err {
	int code;
	char msg[1024];
};

__attribute__((format(printf, 3, 4)))
static void detach_fail(struct detach_err *e, int code, const char *fmt, ...)
{
	char m[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (e->code) {
		spin_warn("%s", m);
		return;
	}
	e->code = code;
	snprintf(e->msg, sizeof(e->msg), "%s", m);
}

/*
 * Detach in the reverse order of spin_attach: XDP first (no more packets
 * reach the runtime), then the fan-out program at TC ingress, then the pins
 * and the per-namespace directory.  A failing step does not stop the later
 * ones; the first error is returned.
 */
int spin_detach(const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct detach_err e = { 0 };
	struct spin_pins pins;
	char dir[PATH_MAX];
	__u32 rx_id = 0;
	int ifindex, fd, err, r;

	spin_libbpf_reset();
	err = check_ifname(ifname);
	if (err)
		return err;
	err = spin_check_priv();
	if (err)
		return err;
	err = spin_check_bpffs();
	if (err)
		return err;
	err = spin_pin_dir(ifname, dir, sizeof(dir));
	if (err)
		return err;
	ifindex = if_nametoindex(ifname);
	/* every directory checked and opened without following a symbolic
	 * link: a directory someone else made is refused, not emptied */
	err = spin_pins_open(ifname, SPIN_PINS_OPEN, &pins);
	if (err) {
		spin_pins_close(&pins);
		if (err != -SPIN_ENOENT)
			return err;
		if (!ifindex)
			return spin_seterr(SPIN_ENODEV, "interface '%s' not found", ifname);
		return spin_seterr(SPIN_ENOENT, "spin is not attached to '%s' (run 'spinctl attach %s')",
				   ifname, ifname);
	}
	/* wait for table changes in progress */
	while (flock(pins.dir, LOCK_EX) && errno == EINTR)
		;

	fd = spin_obj_get_at(pins.dir, SPIN_PIN_PROG_RX);
	if (fd >= 0) {
		rx_id = spin_prog_id(fd);
		close(fd);
	}
	/* 1. XDP */
	if (!ifindex) {
		spin_warn("interface '%s' not found; removing the pins in %s", ifname, dir);
	} else if (bpf_xdp_query(ifindex, 0, &q)) {
		spin_warn("cannot query XDP on '%s': %s; removing the pins only", ifname,
			  strerror(errno));
	} else if (rx_id && (q.drv_prog_id == rx_id || q.skb_prog_id == rx_id ||
			     q.hw_prog_id == rx_id)) {
		__u32 mode = q.drv_prog_id == rx_id ? XDP_FLAGS_DRV_MODE :
			     q.skb_prog_id == rx_id ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_HW_MODE;

		if (bpf_xdp_detach(ifindex, mode, NULL))
			detach_fail(&e, SPIN_EXDP, "cannot detach XDP from '%s': %s (the pins are "
				    "removed; remove the program with 'ip link set dev %s xdp off')",
				    ifname, strerror(errno), ifname);
	} else {
		__u32 other = q.prog_id ? q.prog_id : q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;

		if (other)
			spin_warn("spin was not attached to '%s' (XDP program id %u is); removing the pins only",
				  ifname, other);
		else
			spin_warn("spin was not attached to '%s'; removing the pins only", ifname);
	}
	/* 2. the fan-out program at TC ingress */
	fd = ifindex ? spin_obj_get_at(pins.dir, SPIN_PIN_PROG_TC) : -1;
	if (fd >= 0) {
		if (tc_detach(fd, ifindex))
			detach_fail(&e, SPIN_EXDP, "cannot detach the fan-out program (TC ingress) "
				    "from '%s': %s", ifname, strerror(errno));
		close(fd);
	}
	/* 3. the pins, relative to the checked directories (still locked) */
	r = spin_rm_pins_at(pins.ns, ifname);
	if (r)
		detach_fail(&e, spin_errno_code(r), "cannot remove the pins in %s: %s", dir,
			    strerror(-r));
	/* 4. the per-namespace directory, if now empty */
	if (pins.ns_name[0])
		unlinkat(pins.spin, pins.ns_name, AT_REMOVEDIR);
	spin_pins_close(&pins);
	if (e.code)
		return spin_seterr(e.code, "%s", e.msg);
	return 0;
}

/* ---------------------------------------------------------- status -- */

int spin_get_status(struct spin_rt *rt, struct spin_status *st)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	__u32 rx_id;
	int ifindex;

	if (!rt || !st)
		return spin_seterr(SPIN_EUSAGE, "spin_get_status: no runtime");
	memset(st, 0, sizeof(*st));
	snprintf(st->ifname, sizeof(st->ifname), "%s", rt->ifname);
	snprintf(st->pin_dir, sizeof(st->pin_dir), "%s", rt->pin_dir);
	memcpy(&st->cfg, rt->cfg, sizeof(st->cfg));
	st->auth = rt->auth.on;
	st->generic = st->cfg.flags & SPIN_CFG_F_GENERIC;
	ifindex = if_nametoindex(rt->ifname);
	st->ifindex = ifindex ? (uint32_t)ifindex : st->cfg.ifindex;
	rx_id = spin_prog_id(rt->prog_rx_fd);
	if (ifindex && !bpf_xdp_query(ifindex, 0, &q) &&
	    (q.drv_prog_id == rx_id || q.skb_prog_id == rx_id || q.hw_prog_id == rx_id))
		st->prog_id = rx_id;
	return 0;
}

/* ------------------------------------------------------------- lock -- */

int spin_lock(struct spin_rt *rt)
{
	pthread_mutex_lock(&rt->mu);
	while (flock(rt->dir_fd, LOCK_EX)) {
		if (errno == EINTR)
			continue;
		pthread_mutex_unlock(&rt->mu);
		return spin_seterr(SPIN_EFAIL, "cannot lock %s: %s", rt->pin_dir, strerror(errno));
	}
	return 0;
}

void spin_unlock(struct spin_rt *rt)
{
	flock(rt->dir_fd, LOCK_UN);
	pthread_mutex_unlock(&rt->mu);
}

void spin_gen_bump(struct spin_rt *rt)
{
	__atomic_fetch_add(&rt->cfg->gen, 1, __ATOMIC_RELEASE);
}

/* ----------------------------------------------------------- stats -- */

static const char *const drop_names[] = {
#define SPIN_X_NAME(e, n, d) n,
	SPIN_DROP_REASONS(SPIN_X_NAME)
#undef SPIN_X_NAME
};
static const char *const drop_descs[] = {
#define SPIN_X_DESC(e, n, d) d,
	SPIN_DROP_REASONS(SPIN_X_DESC)
#undef SPIN_X_DESC
};
_Static_assert(sizeof(drop_names) / sizeof(drop_names[0]) == SPIN_DROP_MAX, "drop names");

const char *spin_drop_name(int reason)
{
	return reason >= 0 && reason < SPIN_DROP_MAX ? drop_names[reason] : "unknown";
}

const char *spin_drop_desc(int reason)
{
	return reason >= 0 && reason < SPIN_DROP_MAX ? drop_descs[reason] : "unknown drop reason";
}

_Static_assert(sizeof(struct spin_stats) % 8 == 0, "spin_stats is u64 only");

int spin_stats_read(struct spin_rt *rt, struct spin_stats *sum)
{
	const size_t nw = sizeof(struct spin_stats) / 8;
	int ncpu = libbpf_num_possible_cpus();
	__u64 *buf, *s = (__u64 *)sum;
	__u32 k = 0;

	if (!rt || !sum)
		return spin_seterr(SPIN_EUSAGE, "spin_stats_read: no runtime");
	if (ncpu <= 0)
		return spin_seterr(SPIN_EFAIL, "cannot count possible CPUs");
	buf = calloc(ncpu, sizeof(struct spin_stats));
	if (!buf)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_STATS], &k, buf)) {
		int e = errno;

		free(buf);
		return spin_seterr(spin_errno_code(e), "cannot read spin_stats: %s", strerror(e));
	}
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < ncpu; c++)
		for (size_t w = 0; w < nw; w++)
			s[w] += buf[c * nw + w];
	free(buf);
	return 0;
}

int spin_stats_reset(struct spin_rt *rt)
{
	int ncpu = libbpf_num_possible_cpus();
	__u32 k = 0;
	void *buf;
	int err = 0;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_stats_reset: no runtime");
	if (ncpu <= 0)
		return spin_seterr(SPIN_EFAIL, "cannot count possible CPUs");
	buf = calloc(ncpu, sizeof(struct spin_stats));
	if (!buf)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_STATS], &k, buf, 0))
		err = spin_seterr(spin_errno_code(errno), "cannot reset spin_stats: %s",
				  strerror(errno));
	free(buf);
	return err;
}

/* ----------------------------------------------------- host window -- */

void *spin_host_mem(struct spin_rt *rt, size_t *len)
{
	struct bpf_map_info info;
	void *m;
	size_t l;

	if (!rt) {
		spin_seterr(SPIN_EUSAGE, "spin_host_mem: no runtime");
		return NULL;
	}
	pthread_mutex_lock(&rt->mu);
	if (!rt->host) {
		/* this handle's slot's window only */
		int fd = rt->win_fd >= 0 ? rt->win_fd : rt->map_fd[SPIN_M_HOST];

		if (map_info(fd, &info)) {
			spin_seterr(SPIN_EFAIL, "cannot query the host window of slot %u: %s", rt->slot,
				    strerror(errno));
			goto out;
		}
		l = (size_t)info.max_entries * SPIN_HOST_CHUNK;
		m = mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			spin_seterr(spin_errno_code(errno), "cannot mmap the host window of slot %u (%zu bytes): %s",
				    rt->slot, l, strerror(errno));
			goto out;
		}
		rt->host = m;
		rt->host_len = l;
	}
out:
	pthread_mutex_unlock(&rt->mu);
	if (rt->host && len)
		*len = rt->host_len;
	return rt->host;
}

/* ---------------------------------------------------------- events -- */

uint32_t spin_rt_msg_id(struct spin_rt *rt)
{
	uint32_t id;

	do
		id = (uint32_t)__atomic_fetch_add(&rt->cfg->next_msg_id, 1, __ATOMIC_RELAXED) & 0xffffff;
	while (!id);	/* ids with a zero top byte are the host's, see wire.h */
	return id;
}

static void serve_put(struct spin_rt *rt, const struct spin_event *ev)
{
	const struct spin_put_req *r = &ev->put;
	struct spin_msg_args a = {};
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct spin_peer peer;
	char ipbuf[INET_ADDRSTRLEN];
	size_t hlen = 0;
	uint64_t src;
	uint8_t *host;
	int err;

	if (r->kind != SPIN_PUT_HOST && r->kind != SPIN_PUT_REPLY)
		return;
	if (spin_peer_get(rt, r->target_rank, &peer) || !peer.valid) {
		spin_warn("put from host to rank %u: no such peer (spinctl peer add)", r->target_rank);
		return;
	}
	host = spin_host_mem(rt, &hlen);
	if (!host)
		return;
	if (spin_win_local(r->src_off, rt->slot, r->len, hlen, &src)) {
		spin_warn("put from host: [0x%llx, +%u) outside the host window of slot %u",
			  (unsigned long long)r->src_off, r->len, rt->slot);
		return;
	}
	if (!rt->sock) {
		err = spin_sock_open(NULL, 0, &rt->sock);
		if (err) {
			spin_warn("put from host: cannot open a socket: %s", spin_errmsg());
			return;
		}
	}
	dst.sin_addr.s_addr = peer.ip;
	dst.sin_port = peer.port ? peer.port : rt->cfg->port;
	a.op = SPIN_OP_PUT;
	a.pt_index = ev->pt_index;
	a.src_rank = rt->cfg->my_rank;
	a.src_pid = rt->cfg->my_pid;
	a.dst_rank = r->target_rank;
	a.job_key = rt->cfg->job_key;
	a.auth = rt->auth;
	a.msg_id = spin_rt_msg_id(rt);
	a.match_bits = r->match_bits;
	a.remote_off = r->remote_off;
	a.hdr_data = r->hdr_data;
	a.flags = SPIN_F_FROM_HOST | (r->ack_req ? SPIN_F_ACK_REQ : 0);
	if (r->kind == SPIN_PUT_REPLY) {
		/* a get's reply: the get's id, the header the runtime would
		 * have built (wire.h) */
		a.op = SPIN_OP_REPLY;
		a.msg_id = r->ack_msg_id;
		a.flags = 0;
		a.user_hdr[0] = r->ack_mlength;
		a.user_hdr[1] = r->ack_fail;
		a.user_hdr[2] = r->ack_list;
	}
	err = spin_sock_send(rt->sock, &dst, &a, host + src, r->len, NULL);
	if (err)
		spin_warn("put from host to %s:%u failed: %s",
			  inet_ntop(AF_INET, &dst.sin_addr, ipbuf, sizeof(ipbuf)),
			  ntohs(dst.sin_port), spin_errmsg());
}

#define EV_STOP (-ECANCELED)

static int rb_event(void *ctx, void *data, size_t size)
{
	struct spin_rt *rt = ctx;
	struct spin_event ev = {};

	if (size >= 8 && ((const struct spin_frame_rec *)data)->kind == SPIN_EV_FRAME) {
		const struct spin_frame_rec *fr = data;

		if (fr->len <= size - 8 && fr->len <= SPIN_FRAME_REC_MAX && rt->frame_fn)
			rt->frame_fn(rt->frame_ctx, fr->frame, fr->len);
		rt->ev_count++;
		return 0;
	}
	memcpy(&ev, data, size < sizeof(ev) ? size : sizeof(ev));
	if (rt->serve_puts &&
	    (ev.kind == SPIN_EV_PUT_FROM_HOST || ev.kind == SPIN_EV_GET_FROM_HOST))
		serve_put(rt, &ev);
	rt->ev_count++;
	if (rt->ev_fn && rt->ev_fn(rt->ev_ctx, &ev)) {
		rt->ev_stop = 1;
		return EV_STOP;
	}
	return 0;
}

/* The ring's consumer and producer positions, mapped read-only a second
 * time (libbpf keeps its own mappings private), for spin_events_pending. */
static void rb_positions_map(struct spin_rt *rt)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = rt->ring_fd >= 0 ? rt->ring_fd : rt->map_fd[SPIN_M_EVENTS];
	void *c = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	void *p = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, pg);

	if (c == MAP_FAILED || p == MAP_FAILED) {
		if (c != MAP_FAILED)
			munmap(c, pg);
		if (p != MAP_FAILED)
			munmap(p, pg);
		return;	/* spin_events_pending then always says yes */
	}
	rt->rb_cons = c;
	rt->rb_prod = p;
}

bool spin_events_pending(struct spin_rt *rt)
{
	if (!rt || !rt->rb)
		return false;
	if (!rt->rb_cons)
		return true;
	return __atomic_load_n(rt->rb_prod, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(rt->rb_cons, __ATOMIC_RELAXED);
}

int spin_events_poll(struct spin_rt *rt, spin_event_fn fn, void *ctx, int timeout_ms)
{
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_events_poll: no runtime");
	if (!rt->rb) {
		spin_libbpf_reset();
		rt->rb = ring_buffer__new(rt->ring_fd >= 0 ? rt->ring_fd : rt->map_fd[SPIN_M_EVENTS],
					  rb_event, rt, NULL);
		if (!rt->rb)
			return spin_seterr(SPIN_EFAIL, "cannot open the event ring spin_events: %s",
					   *spin_libbpf_last() ? spin_libbpf_last() : strerror(errno));
		rb_positions_map(rt);
	}
	rt->ev_fn = fn;
	rt->ev_ctx = ctx;
	rt->ev_count = 0;
	rt->ev_stop = 0;
	if (timeout_ms != 0)	/* we may sleep: the runtime must wake us */
		__atomic_and_fetch(&rt->cfg->flags, ~SPIN_CFG_F_RB_QUIET, __ATOMIC_SEQ_CST);
	/* what is in the ring now, whether or not its wake-up came yet (it
	 * may be on its way from the runtime's work item, or the event was
	 * posted quietly); sleep only if there was nothing */
	err = ring_buffer__consume(rt->rb);
	if (err == 0 && timeout_ms != 0)
		err = ring_buffer__poll(rt->rb, timeout_ms);
	if (err < 0 && !(err == EV_STOP && rt->ev_stop) && err != -EINTR)
		return spin_seterr(SPIN_EIO, "polling spin_events failed: %s", strerror(-err));
	return rt->ev_count;
}

int spin_events_consume(struct spin_rt *rt, spin_event_fn fn, void *ctx)
{
	int err;

	if (!rt || !rt->rb)
		return spin_events_poll(rt, fn, ctx, 0);
	rt->ev_fn = fn;
	rt->ev_ctx = ctx;
	rt->ev_count = 0;
	rt->ev_stop = 0;
	/* caught up: the runtime need not force wake-ups (cleared before
	 * reading, so an event posted quietly after the read sets it again) */
	if (rt->cfg && __atomic_load_n(&rt->cfg->rb_lag, __ATOMIC_RELAXED))
		__atomic_store_n(&rt->cfg->rb_lag, 0, __ATOMIC_SEQ_CST);
	err = ring_buffer__consume(rt->rb);
	if (err < 0 && !(err == EV_STOP && rt->ev_stop) && err != -EINTR)
		return spin_seterr(SPIN_EIO, "reading spin_events failed: %s", strerror(-err));
	return rt->ev_count;
}

int spin_events_fd(struct spin_rt *rt)
{
	if (!rt || !rt->rb)
		return -1;
	return ring_buffer__epoll_fd(rt->rb);
}

int spin_events_serve_puts(struct spin_rt *rt, bool on)
{
	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_events_serve_puts: no runtime");
	rt->serve_puts = on;
	if (on && !spin_host_mem(rt, NULL))
		return -SPIN_EFAIL;
	return 0;
}

/* ----------------------------------------------------------- peers -- */

/* MAC of ip on ifindex from the kernel's neighbour table (netlink). */
static int neigh_mac(int ifindex, uint32_t ip, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
	} req = {
		.nh = {
			.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg)),
			.nlmsg_type = RTM_GETNEIGH,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1,
		},
		.nd = { .ndm_family = AF_INET },
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	static __thread char buf[32768];
	int fd, found = -ENOENT;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		found = -errno;
		goto out;
	}
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			found = -errno;
			break;
		}
		if (n == 0)
			break;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			struct ndmsg *nd;
			struct rtattr *a;
			int alen;
			uint32_t dst = 0;
			const uint8_t *ll = NULL;

			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (nh->nlmsg_type != RTM_NEWNEIGH)
				continue;
			nd = NLMSG_DATA(nh);
			if (nd->ndm_family != AF_INET || nd->ndm_ifindex != ifindex ||
			    !(nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
					       NUD_PERMANENT | NUD_NOARP)))
				continue;
			alen = RTM_PAYLOAD(nh);
			for (a = RTM_RTA(nd); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				if (a->rta_type == NDA_DST && RTA_PAYLOAD(a) == 4)
					memcpy(&dst, RTA_DATA(a), 4);
				else if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6)
					ll = RTA_DATA(a);
			}
			if (dst == ip && ll && found) {
				memcpy(mac, ll, 6);
				found = 0;
			}
		}
	}
out:
	close(fd);
	return found;
}

/*
 * The peer's MAC from the neighbour table; if it is not there yet, make the
 * kernel resolve it (one empty datagram to the peer's discard port starts
 * ARP) and wait up to a second.
 */
static int neigh_resolve(int ifindex, uint32_t ip, uint8_t mac[6])
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
	int err = neigh_mac(ifindex, ip, mac), fd;

	if (!err)
		return 0;
	sa.sin_addr.s_addr = ip;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err;
	sendto(fd, "", 0, 0, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	for (int i = 0; i < 100 && err; i++) {
		usleep(10000);
		err = neigh_mac(ifindex, ip, mac);
	}
	return err;
}

int spin_peer_add(struct spin_rt *rt, const struct spin_peer_spec *ps)
{
	struct spin_peer peer = {};
	static const uint8_t zero[6];
	char ipbuf[INET_ADDRSTRLEN];
	int ifindex, err;
	__u32 k;

	if (!rt || !ps)
		return spin_seterr(SPIN_EUSAGE, "spin_peer_add: no runtime");
	if (ps->rank >= SPIN_MAX_PEERS)
		return spin_seterr(SPIN_EUSAGE, "peer rank %u out of range (0..%u)", ps->rank,
				   SPIN_MAX_PEERS - 1);
	inet_ntop(AF_INET, &ps->ip, ipbuf, sizeof(ipbuf));
	if (!ps->ip.s_addr)
		return spin_seterr(SPIN_EUSAGE, "peer rank %u: no IPv4 address", ps->rank);
	if (ps->ifname) {
		ifindex = if_nametoindex(ps->ifname);
		if (!ifindex)
			return spin_seterr(SPIN_ENODEV, "interface '%s' not found", ps->ifname);
		peer.ifindex = ifindex;
		/* frames to this peer leave from ps->ifname: its addresses */
		peer.src_ip = if_ipv4(ps->ifname);
		if (!peer.src_ip)
			return spin_seterr(SPIN_EUSAGE, "interface '%s' has no IPv4 address", ps->ifname);
		if (if_mac(ps->ifname, peer.src_mac))
			return spin_seterr(SPIN_EFAIL, "cannot read the MAC address of '%s': %s",
					   ps->ifname, strerror(errno));
	} else {
		ifindex = rt->cfg->ifindex;
		peer.ifindex = 0;
		peer.src_ip = rt->cfg->my_ip;
		memcpy(peer.src_mac, rt->cfg->my_mac, 6);
	}
	if (memcmp(ps->mac, zero, 6)) {
		memcpy(peer.mac, ps->mac, 6);
	} else if (ps->ip.s_addr == rt->cfg->my_ip && !ps->ifname) {
		memcpy(peer.mac, rt->cfg->my_mac, 6);
	} else {
		err = neigh_resolve(ifindex, ps->ip.s_addr, peer.mac);
		if (err == -ENOENT)
			return spin_seterr(SPIN_ENOENT, "no MAC for %s (it did not answer ARP): check "
					   "the address and link, or give 'mac M'", ipbuf);
		if (err)
			return spin_seterr(SPIN_EFAIL, "no MAC for %s (neighbour table: %s): give mac=...",
					   ipbuf, strerror(-err));
	}
	peer.ip = ps->ip.s_addr;
	peer.port = ps->port ? htons(ps->port) : rt->cfg->port;
	peer.pid = ps->pid;
	if (ps->slot >= SPIN_MAX_PROCS)
		return spin_seterr(SPIN_EUSAGE, "peer rank %u: process slot %u out of range (0..%d)",
				   ps->rank, ps->slot, SPIN_MAX_PROCS - 1);
	peer.slot = ps->slot;
	peer.valid = 1;
	k = ps->rank;
	err = spin_lock(rt);
	if (err)
		return err;
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_PEERS], &k, &peer, 0))
		err = spin_seterr(spin_errno_code(errno), "cannot write spin_peers[%u]: %s", k,
				  strerror(errno));
	else
		spin_gen_bump(rt);
	spin_unlock(rt);
	return err;
}

int spin_peer_del(struct spin_rt *rt, uint32_t rank)
{
	struct spin_peer peer = {};
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_peer_del: no runtime");
	if (rank >= SPIN_MAX_PEERS)
		return spin_seterr(SPIN_EUSAGE, "peer rank %u out of range (0..%u)", rank,
				   SPIN_MAX_PEERS - 1);
	err = spin_lock(rt);
	if (err)
		return err;
	if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_PEERS], &rank, &peer) || !peer.valid) {
		err = spin_seterr(SPIN_ENOENT, "no peer with rank %u", rank);
	} else {
		memset(&peer, 0, sizeof(peer));
		if (bpf_map_update_elem(rt->map_fd[SPIN_M_PEERS], &rank, &peer, 0))
			err = spin_seterr(spin_errno_code(errno), "cannot write spin_peers[%u]: %s",
					  rank, strerror(errno));
		else
			spin_gen_bump(rt);
	}
	spin_unlock(rt);
	return err;
}

int spin_peer_get(struct spin_rt *rt, uint32_t rank, struct spin_peer *out)
{
	if (!rt || !out)
		return spin_seterr(SPIN_EUSAGE, "spin_peer_get: no runtime");
	if (rank >= SPIN_MAX_PEERS)
		return spin_seterr(SPIN_EUSAGE, "peer rank %u out of range (0..%u)", rank,
				   SPIN_MAX_PEERS - 1);
	if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_PEERS], &rank, out))
		return spin_seterr(spin_errno_code(errno), "cannot read spin_peers[%u]: %s", rank,
				   strerror(errno));
	return 0;
}
