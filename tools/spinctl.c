// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spinctl - control sPIN runtimes: attach, handlers, portal table, match
 * entries, peers, statistics, events and test messages.
 *
 *   spinctl [-j|-p] [-v] OBJECT VERB [ARGS]
 *
 * Objects and verbs may be abbreviated to a prefix that names only one of
 * them (an exact name always wins); an ambiguous prefix is an error.
 * Options may come anywhere (getopt_long; "--" ends them).  The exit code
 * is the SPIN_E* value of the error (2 for usage errors); in JSON mode an
 * error is also {"error": "..."} on stdout.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <endian.h>
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <spin/spin.h>
#include <spin/portals4.h>

#define SPINCTL_VERSION "0.1"

static int json, pretty, verbose;
static const char *cur_obj = "";

/* ------------------------------------------------------------- errors -- */

static int jdepth;
static void jstr_raw(const char *s);

/* In JSON mode an error is also a document of its own on stdout, as
 * bpftool does: {"error": "..."} (not inside a document already begun). */
static void jerror(const char *msg)
{
	if (!json || jdepth)
		return;
	fputs(pretty ? "{\n  \"error\": " : "{\"error\":", stdout);
	jstr_raw(msg);
	fputs(pretty ? "\n}\n" : "}\n", stdout);
	fflush(stdout);
}

/* An error line "spinctl: ..." on stderr (and the JSON error). */
__attribute__((format(printf, 1, 2)))
static void errf(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "spinctl: %s\n", msg);
	jerror(msg);
}

static int fail(int rc)
{
	const char *log;

	if (rc < 0)
		rc = -rc;
	fprintf(stderr, "spinctl: %s\n", spin_errmsg());
	jerror(spin_errmsg());
	if (rc == SPIN_EVERIFIER) {
		log = spin_verifier_log();
		while (log && *log) {
			const char *nl = strchr(log, '\n');
			int n = nl ? (int)(nl - log) : (int)strlen(log);

			fprintf(stderr, "    %.*s\n", n, log);
			log += n + (nl ? 1 : 0);
		}
	}
	return rc;
}

/* One line, whatever the arguments hold: control characters become '?'. */
__attribute__((format(printf, 1, 2)))
static int usage_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	fprintf(stderr, "spinctl: %s", msg);
	if (*cur_obj)
		fprintf(stderr, " (see 'spinctl %s help')\n", cur_obj);
	else
		fputs(" (see 'spinctl help')\n", stderr);
	jerror(msg);
	return SPIN_EUSAGE;
}

/* ---------------------------------------------------------------- JSON -- */

static bool jfirst[32] = { true };

static void jindent(void)
{
	if (pretty) {
		putchar('\n');
		for (int i = 0; i < jdepth; i++)
			fputs("  ", stdout);
	}
}

static void jstr_raw(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void jkey(const char *key)
{
	if (jdepth > 0) {
		if (!jfirst[jdepth])
			putchar(',');
		jindent();
	}
	jfirst[jdepth] = false;
	if (key) {
		jstr_raw(key);
		fputs(pretty ? ": " : ":", stdout);
	}
}

static void jopen(const char *key, char c)
{
	jkey(key);
	putchar(c);
	jdepth++;
	jfirst[jdepth] = true;
}

static void jclose(char c)
{
	bool empty = jfirst[jdepth];

	jdepth--;
	if (!empty)
		jindent();
	putchar(c);
	if (jdepth == 0) {
		putchar('\n');
		jfirst[0] = true;
		fflush(stdout);
	}
}

#define jobj(k)		jopen(k, '{')
#define jobj_end()	jclose('}')
#define jarr(k)		jopen(k, '[')
#define jarr_end()	jclose(']')

/* A 64-bit value: a number, or a string of its decimal digits when a JSON
 * number (an IEEE double in most parsers) cannot hold it exactly (> 2^53). */
static void ju64(const char *key, uint64_t v)
{
	jkey(key);
	if (v > (1ULL << 53))
		printf("\"%" PRIu64 "\"", v);
	else
		printf("%" PRIu64, v);
}

static void jstr(const char *key, const char *s)
{
	jkey(key);
	jstr_raw(s ? s : "");
}

static void jbool(const char *key, bool b)
{
	jkey(key);
	fputs(b ? "true" : "false", stdout);
}

static void jnull(const char *key)
{
	jkey(key);
	fputs("null", stdout);
}

/* ------------------------------------------------------------ parsing -- */

static int hexval_c(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_prefix(const char *word, const char *full)
{
	return *word && !strncmp(word, full, strlen(word));
}

/*
 * Numbers are decimal (no leading zeros: "010" is neither 8 nor 10 but an
 * error) or 0x hex; nothing else is taken: no white space, no sign, no
 * trailing characters.  Every option has a range, named in its error.
 * scan_num: 0, or -1 (malformed), -2 (does not fit in 64 bits); *end is
 * the first character after the digits.
 */
static int scan_num(const char *s, uint64_t *v, const char **end)
{
	uint64_t x = 0;
	bool over = false;
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		int d;

		p += 2;
		if (hexval_c(*p) < 0)
			return -1;
		for (; (d = hexval_c(*p)) >= 0; p++) {
			if (x >> 60)
				over = true;
			x = x << 4 | (uint64_t)d;
		}
	} else {
		if (*p < '0' || *p > '9')
			return -1;
		if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
			return -1;	/* a leading zero: octal to some, decimal to others */
		for (; *p >= '0' && *p <= '9'; p++) {
			uint64_t d = (uint64_t)(*p - '0');

			if (x > (UINT64_MAX - d) / 10)
				over = true;
			x = x * 10 + d;
		}
	}
	*v = x;
	*end = p;
	return over ? -2 : 0;
}

static int range_err(const char *what, const char *s, uint64_t min, uint64_t max)
{
	return usage_err("%s: '%s' is out of range (%" PRIu64 "..%" PRIu64 ")", what, s, min, max);
}

/* A number of min..max for option what. */
static int parse_num(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	const char *end;
	uint64_t x;
	int r;

	if (!s)
		return usage_err("'%s' needs a value", what);
	r = scan_num(s, &x, &end);
	if (r == -2 && !*end)
		return range_err(what, s, min, max);
	if (r || *end)
		return usage_err("%s: bad number '%s' (decimal without leading zeros, or 0x hex; %"
				 PRIu64 "..%" PRIu64 ")", what, s, min, max);
	if (x < min || x > max)
		return range_err(what, s, min, max);
	*v = x;
	return 0;
}

/* Sizes: a number with an optional k/m/g suffix (powers of 1024, an 'b' or
 * 'ib' may follow), min..max bytes. */
static int parse_size(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	const char *end;
	uint64_t x, m = 1;
	int r;

	if (!s)
		return usage_err("'%s' needs a value", what);
	r = scan_num(s, &x, &end);
	if (r == -1)
		goto bad;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': m = 1ull << 10; break;
		case 'm': case 'M': m = 1ull << 20; break;
		case 'g': case 'G': m = 1ull << 30; break;
		default: goto bad;
		}
		if (end[1] && strcasecmp(end + 1, "b") && strcasecmp(end + 1, "ib"))
			goto bad;
	}
	if (r == -2 || x > UINT64_MAX / m || x * m < min || x * m > max)
		return range_err(what, s, min, max);
	*v = x * m;
	return 0;
bad:
	return usage_err("%s: bad size '%s' (decimal without leading zeros or 0x hex, optionally "
			 "followed by k, m or g; %" PRIu64 "..%" PRIu64 ")", what, s, min, max);
}

static int parse_u32r(const char *what, const char *s, uint32_t min, uint32_t max, uint32_t *v)
{
	uint64_t x = 0;
	int err = parse_num(what, s, min, max, &x);

	if (!err)
		*v = (uint32_t)x;
	return err;
}

static int parse_u16r(const char *what, const char *s, uint16_t min, uint16_t max, uint16_t *v)
{
	uint64_t x = 0;
	int err = parse_num(what, s, min, max, &x);

	if (!err)
		*v = (uint16_t)x;
	return err;
}

static int parse_u64(const char *what, const char *s, uint64_t *v)
{
	return parse_num(what, s, 0, UINT64_MAX, v);
}

static int parse_u32(const char *what, const char *s, uint32_t *v)
{
	return parse_u32r(what, s, 0, UINT32_MAX, v);
}

/* A rank or pid to match or to use as one's own: SPIN_RANK_ANY/SPIN_PID_ANY
 * (0xffffffff) is 'any', not a number. */
#define ID_MAX	(UINT32_MAX - 1)

static int parse_port(const char *what, const char *s, uint16_t *v)
{
	return parse_u16r(what, s, 1, UINT16_MAX, v);
}

/* Timeouts in ms: up to 2^31-1 (24.8 days; poll() takes an int). */
#define TIMEOUT_MS_MAX	((uint64_t)INT32_MAX)

/* Interface names as the kernel takes them (dev_valid_name). */
static int check_ifname(const char *what, const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= IF_NAMESIZE || !strcmp(s, ".") || !strcmp(s, ".."))
		goto bad;
	for (const char *c = s; *c; c++)
		if (*c == '/' || *c == ':' || (unsigned char)*c <= ' ' || *c == 0x7f)
			goto bad;
	return 0;
bad:
	return usage_err("%s: bad interface name '%.32s%s' (1..%d bytes, not '.' or '..', no '/', "
			 "':' or white space)", what, s, n > 32 ? "..." : "", IF_NAMESIZE - 1);
}

static int parse_ip(const char *s, struct in_addr *a)
{
	if (!s || inet_pton(AF_INET, s, a) != 1)
		return usage_err("bad IPv4 address '%s'", s ? s : "");
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	return spin_mac_parse(s, mac) ? 0 : usage_err("bad MAC address '%s' (aa:bb:cc:dd:ee:ff)", s);
}

/* Hex bytes ("0a0b0c", "0x0a0b", "0a:0b", "0a 0b") into buf. */
static int parse_hex(const char *what, const char *s, uint8_t *buf, size_t cap, size_t *len)
{
	size_t n = 0;

	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		s += 2;
	while (*s) {
		int hi, lo;

		if (*s == ':' || *s == ' ' || *s == '-' || *s == '_') {
			s++;
			continue;
		}
		hi = hexval_c(s[0]);
		lo = s[1] ? hexval_c(s[1]) : -1;
		if (hi < 0 || lo < 0)
			return usage_err("bad hex bytes for %s", what);
		if (n >= cap)
			return usage_err("%s longer than %zu bytes", what, cap);
		buf[n++] = hi << 4 | lo;
		s += 2;
	}
	*len = n;
	return 0;
}

static int read_file(const char *what, const char *path, uint8_t **buf, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		errf("%s %s: %s", what, path, strerror(errno));
		return errno == ENOENT ? SPIN_ENOENT : SPIN_EFAIL;
	}
	*buf = malloc(cap + 1);
	if (!*buf) {
		fclose(f);
		errf("out of memory");
		return SPIN_EFAIL;
	}
	n = fread(*buf, 1, cap + 1, f);
	fclose(f);
	if (n > cap) {
		free(*buf);
		*buf = NULL;
		return usage_err("%s %s is larger than %zu bytes", what, path, cap);
	}
	*len = n;
	return 0;
}

#define NEED(n, what) do {						\
	if (argc < (n))							\
		return usage_err("missing %s", what);			\
} while (0)

/* Option value: argv[i + 1] must exist. */
#define OPTARG(name) ({							\
	if (i + 1 >= argc)						\
		return usage_err("'%s' needs a value", name);		\
	argv[++i];							\
})

static int open_rt(const char *ifname, struct spin_rt **rt)
{
	int err = check_ifname("IFACE", ifname);

	if (err)
		return err;
	err = spin_open(ifname, rt);
	return err ? fail(err) : 0;
}

/* Verbs that take IFACE and nothing else. */
#define ONLY_IFACE() do {						\
	NEED(1, "IFACE");						\
	if (argc > 1)							\
		return usage_err("unexpected argument '%s'", argv[1]);	\
} while (0)

static const char *ipstr(uint32_t ip, char *buf)
{
	struct in_addr a = { .s_addr = ip };

	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

static const char *macstr(const uint8_t *m, char *buf)
{
	sprintf(buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return buf;
}

static void hexdump(const uint8_t *p, size_t len, const char *indent)
{
	for (size_t o = 0; o < len; o += 16) {
		printf("%s%04zx: ", indent, o);
		for (size_t i = 0; i < 16; i++) {
			if (o + i < len)
				printf("%02x ", p[o + i]);
			else
				fputs("   ", stdout);
			if (i == 7)
				putchar(' ');
		}
		fputs(" |", stdout);
		for (size_t i = 0; i < 16 && o + i < len; i++)
			putchar(isprint(p[o + i]) ? p[o + i] : '.');
		puts("|");
	}
}

static void jhex(const char *key, const uint8_t *p, size_t len)
{
	jkey(key);
	putchar('"');
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
	putchar('"');
}

/* ---------------------------------------------------- attach / status -- */

static void print_status(const struct spin_status *st)
{
	char ip[INET_ADDRSTRLEN], mac[18];
	const struct spin_cfg *c = &st->cfg;

	if (json) {
		jobj(NULL);
		jstr("ifname", st->ifname);
		ju64("ifindex", st->ifindex);
		jstr("mode", st->generic ? "generic" : "native");
		jbool("attached", st->prog_id != 0);
		ju64("prog_id", st->prog_id);
		ju64("rank", c->my_rank);
		ju64("pid", c->my_pid);
		jstr("ip", ipstr(c->my_ip, ip));
		jstr("mac", macstr(c->my_mac, mac));
		ju64("port", ntohs(c->port));
		ju64("host_pages", c->host_pages);
		ju64("msg_timeout_ns", c->msg_timeout_ns);
		ju64("gen", c->gen);
		ju64("next_msg_id", c->next_msg_id);
		jstr("wake", c->flags & SPIN_CFG_F_WAKE_DEFER ? "deferred" : "direct");
		jstr("sources", c->flags & SPIN_CFG_F_OPEN ? "open" : "peers");
		jstr("job_key", c->job_key ? "set" : "none");
		jstr("auth_key", st->auth ? "set" : "none");
		ju64("get_max", c->get_max);
		jstr("pin_dir", st->pin_dir);
		jobj_end();
		return;
	}
	printf("%s: ifindex %u  mode %s  ", st->ifname, st->ifindex,
	       st->generic ? "generic" : "native");
	if (st->prog_id)
		printf("prog id %u\n", st->prog_id);
	else
		printf("NOT ATTACHED (stale pins: run 'spinctl detach %s')\n", st->ifname);
	printf("\trank %u  pid %u  ip %s  mac %s  port %u\n", c->my_rank, c->my_pid,
	       ipstr(c->my_ip, ip), macstr(c->my_mac, mac), ntohs(c->port));
	printf("\thost window %u pages (%llu KiB)  msg timeout %llu ms  gen %llu  wake %s\n",
	       c->host_pages, (unsigned long long)c->host_pages * SPIN_PAGE / 1024,
	       (unsigned long long)(c->msg_timeout_ns / 1000000), (unsigned long long)c->gen,
	       c->flags & SPIN_CFG_F_WAKE_DEFER ? "deferred" : "direct");
	printf("\tsources %s  job key %s  auth key %s\n", c->flags & SPIN_CFG_F_OPEN ?
	       "open (any address: the peer table is not checked)" :
	       "peers (only the peer table's address for each rank)",
	       c->job_key ? "set (packets without it are dropped)" : "none",
	       st->auth ? "set (packets without its tag are dropped)" : "none");
	printf("\tget max %u bytes per request\n", c->get_max);
	printf("\tpins %s\n", st->pin_dir);
}

static int cmd_attach(int argc, char **argv)
{
	struct spin_attach_opts o = {};
	struct spin_status st;
	struct spin_rt *rt;
	uint64_t v;
	int err;

	NEED(1, "IFACE");
	o.ifname = argv[0];
	if ((err = check_ifname("IFACE", argv[0])))
		return err;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "no-dedup")) {
			o.no_dedup = true;
		} else if (!strcmp(a, "wake-direct")) {
			o.wake_direct = true;
		} else if (!strcmp(a, "open")) {
			o.open = true;
		} else if (!strcmp(a, "generic") || !strcmp(a, "skb")) {
			o.generic = true;
		} else if (!strcmp(a, "native") || !strcmp(a, "drv")) {
			o.generic = false;
		} else if (!strcmp(a, "port")) {
			if ((err = parse_port("port", OPTARG(a), &o.port)))
				return err;
		} else if (!strcmp(a, "rank")) {
			if ((err = parse_u32r("rank", OPTARG(a), 0, ID_MAX, &o.rank)))
				return err;
		} else if (!strcmp(a, "pid")) {
			if ((err = parse_u32r("pid", OPTARG(a), 0, ID_MAX, &o.pid)))
				return err;
		} else if (!strcmp(a, "pages")) {
			if ((err = parse_u32r("pages", OPTARG(a), 1, SPIN_MAX_HOST_PAGES, &o.host_pages)))
				return err;
		} else if (!strcmp(a, "key")) {
			if ((err = parse_u32r("key", OPTARG(a), 1, UINT32_MAX, &o.job_key)))
				return err;
		} else if (!strcmp(a, "get-max")) {
			if ((err = parse_u32r("get-max", OPTARG(a), 1, SPIN_MAX_MSG, &o.get_max)))
				return err;
		} else if (!strcmp(a, "auth-key")) {
			if (spin_auth_key_parse(OPTARG(a), &o.auth))
				return usage_err("%s", spin_errmsg());
		} else if (!strcmp(a, "timeout-ms")) {
			if ((err = parse_num("timeout-ms", OPTARG(a), 1, TIMEOUT_MS_MAX, &v)))
				return err;
			o.msg_timeout_ns = v * 1000000ull;	/* < 2^51: no overflow */
		} else if (!strcmp(a, "obj")) {
			o.obj_path = OPTARG(a);
		} else {
			return usage_err("unknown attach option '%s'", a);
		}
	}
	err = spin_attach(&o, &rt);
	if (err)
		return fail(err);
	err = spin_get_status(rt, &st);
	spin_close(rt);
	if (err)
		return fail(err);
	if (json)
		print_status(&st);
	else
		printf("attached spin to %s (%s mode, prog id %u); pins in %s\n", st.ifname,
		       st.generic ? "generic" : "native", st.prog_id, st.pin_dir);
	return 0;
}

static int cmd_detach(int argc, char **argv)
{
	int err;

	ONLY_IFACE();
	if ((err = check_ifname("IFACE", argv[0])))
		return err;
	err = spin_detach(argv[0]);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		jstr("ifname", argv[0]);
		jbool("detached", true);
		jobj_end();
	} else if (verbose) {
		printf("detached spin from %s\n", argv[0]);
	}
	return 0;
}

/* A network namespace pins were made in: how to enter it, what to call it. */
struct ns_ref {
	unsigned long ino;	/* 0: the initial namespace */
	char path[64];		/* a path to open for setns, "" if none found */
	char name[64];		/* ip netns name, "pid N", "init" */
};

/* Find the namespace with inode ino: /var/run/netns first (its name), then
 * any process in it; the initial namespace is pid 1's. */
static void ns_find(unsigned long ino, struct ns_ref *r)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;

	memset(r, 0, sizeof(*r));
	r->ino = ino;
	if (!ino) {
		snprintf(r->path, sizeof(r->path), "/proc/1/ns/net");
		snprintf(r->name, sizeof(r->name), "init");
		return;
	}
	snprintf(r->name, sizeof(r->name), "ns%lu", ino);
	if ((d = opendir("/var/run/netns"))) {
		while ((de = readdir(d))) {
			char p[sizeof(r->path)];

			if (de->d_name[0] == '.' ||
			    snprintf(p, sizeof(p), "/var/run/netns/%s", de->d_name) >= (int)sizeof(p))
				continue;
			if (!stat(p, &sb) && sb.st_ino == ino) {
				memcpy(r->path, p, sizeof(p));
				snprintf(r->name, sizeof(r->name), "%.63s", de->d_name);
				break;
			}
		}
		closedir(d);
		if (r->path[0])
			return;
	}
	if ((d = opendir("/proc"))) {
		while ((de = readdir(d))) {
			char p[sizeof(r->path)];

			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			snprintf(p, sizeof(p), "/proc/%.20s/ns/net", de->d_name);
			if (!stat(p, &sb) && sb.st_ino == ino) {
				memcpy(r->path, p, sizeof(p));
				snprintf(r->name, sizeof(r->name), "pid %.20s", de->d_name);
				break;
			}
		}
		closedir(d);
	}
}

static bool all_digits(const char *p)
{
	if (!*p)
		return false;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

/* One runtime of status_all: enter its namespace, read its status. */
static int status_one(const struct ns_ref *ns, const char *ifname, int self_fd, bool *header)
{
	struct spin_status st;
	struct spin_rt *rt;
	const char *why = NULL;
	char ip[INET_ADDRSTRLEN];
	int fd, err = 0;

	if (strlen(ifname) >= IF_NAMESIZE)
		return 0;	/* not an interface's directory */
	if (!ns->path[0]) {
		why = "namespace gone: stale pins, remove the directory";
	} else if ((fd = open(ns->path, O_RDONLY | O_CLOEXEC)) < 0 || setns(fd, CLONE_NEWNET)) {
		why = "cannot enter its namespace (need root)";
		if (fd >= 0)
			close(fd);
	} else {
		close(fd);
		err = spin_open(ifname, &rt);
		if (!err) {
			err = spin_get_status(rt, &st);
			spin_close(rt);
		}
		if (setns(self_fd, CLONE_NEWNET)) {
			errf("cannot return to spinctl's own network namespace: %s", strerror(errno));
			exit(SPIN_EFAIL);
		}
		if (err)
			why = spin_errmsg();
	}
	if (json) {
		jobj(NULL);
		jstr("netns", ns->name);
		ju64("netns_inode", ns->ino);
		if (why) {
			jstr("ifname", ifname);
			jbool("attached", false);
			jstr("error", why);
		} else {
			jstr("ifname", st.ifname);
			ju64("ifindex", st.ifindex);
			jstr("mode", st.generic ? "generic" : "native");
			jbool("attached", st.prog_id != 0);
			ju64("prog_id", st.prog_id);
			ju64("rank", st.cfg.my_rank);
			jstr("ip", ipstr(st.cfg.my_ip, ip));
			ju64("port", ntohs(st.cfg.port));
			jstr("pin_dir", st.pin_dir);
		}
		jobj_end();
		return 0;
	}
	if (!*header) {
		printf("%-20s %-15s %-8s %8s %6s %-15s %5s  %s\n", "NETNS", "IFACE", "MODE", "PROG_ID",
		       "RANK", "IP", "PORT", "PINS");
		*header = true;
	}
	if (why) {
		printf("%-20s %-15s %s\n", ns->name, ifname, why);
		return 0;
	}
	printf("%-20s %-15s %-8s ", ns->name, st.ifname, st.generic ? "generic" : "native");
	if (st.prog_id)
		printf("%8u ", st.prog_id);
	else
		printf("%8s ", "STALE");
	printf("%6u %-15s %5u  %s\n", st.cfg.my_rank, ipstr(st.cfg.my_ip, ip), ntohs(st.cfg.port),
	       st.pin_dir);
	return 0;
}

/* Every runtime on the host, in every network namespace: the pin root's
 * directories (<root>/spin/IFACE for the initial namespace,
 * <root>/spin/ns<inode>/IFACE for the others). */
static int status_all(void)
{
	const char *root = getenv("SPIN_BPFFS");
	char top[PATH_MAX];
	struct dirent *de, *de2;
	bool header = false;
	int self_fd;
	DIR *d, *d2;

	if (!root || !*root)
		root = "/sys/fs/bpf";
	snprintf(top, sizeof(top), "%s/spin", root);
	self_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self_fd < 0) {
		errf("cannot open /proc/self/ns/net: %s", strerror(errno));
		return SPIN_EFAIL;
	}
	d = opendir(top);
	if (!d && errno != ENOENT) {
		errf("cannot read %s: %s", top, strerror(errno));
		close(self_fd);
		return errno == EACCES ? SPIN_EPERM : SPIN_EFAIL;
	}
	if (json)
		jarr(NULL);
	while (d && (de = readdir(d))) {
		struct ns_ref ns;
		char sub[PATH_MAX];

		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (strncmp(de->d_name, "ns", 2) || !all_digits(de->d_name + 2)) {
			ns_find(0, &ns);
			status_one(&ns, de->d_name, self_fd, &header);
			continue;
		}
		ns_find(strtoul(de->d_name + 2, NULL, 10), &ns);
		if (snprintf(sub, sizeof(sub), "%s/%.255s", top, de->d_name) >= (int)sizeof(sub) ||
		    !(d2 = opendir(sub)))
			continue;
		while ((de2 = readdir(d2)))
			if (de2->d_name[0] != '.' && (de2->d_type == DT_DIR || de2->d_type == DT_UNKNOWN))
				status_one(&ns, de2->d_name, self_fd, &header);
		closedir(d2);
	}
	if (d)
		closedir(d);
	close(self_fd);
	if (json)
		jarr_end();
	else if (!header)
		printf("no spin runtimes (no pins below %s)\n", top);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	struct spin_status st;
	struct spin_rt *rt;
	int err;

	if (argc == 0)
		return status_all();
	if (argc > 1)
		return usage_err("unexpected argument '%s'", argv[1]);
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_get_status(rt, &st);
	spin_close(rt);
	if (err)
		return fail(err);
	print_status(&st);
	return 0;
}

/* ----------------------------------------------------------- handlers -- */

static int handler_load(int argc, char **argv)
{
	struct spin_handler_info hi[SPIN_MAX_HANDLERS];
	const char *name = NULL, *file;
	char nbuf[64];
	struct spin_rt *rt;
	int err, slot, n;
	uint64_t ps = UINT64_MAX;	/* the process slot it is loaded for */

	NEED(2, "IFACE FILE");
	file = argv[1];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "name")) {
			name = OPTARG("name");
		} else if (!strcmp(argv[i], "slot")) {
			if ((err = parse_num("slot", OPTARG("slot"), 0, SPIN_MAX_PROCS - 1, &ps)))
				return err;
		} else {
			return usage_err("unknown handler load option '%s'", argv[i]);
		}
	}
	if ((err = open_rt(argv[0], &rt)))
		return err;
	slot = ps == UINT64_MAX ? spin_handler_load(rt, file, name) :
				  spin_handler_load_slot(rt, file, name, (uint32_t)ps);
	if (slot < 0) {
		spin_close(rt);
		return fail(slot);
	}
	if (!name) {
		/* the name libspin chose: the one in this slot */
		nbuf[0] = 0;
		n = spin_handler_list(rt, hi, SPIN_MAX_HANDLERS);
		for (int i = 0; i < n && i < SPIN_MAX_HANDLERS; i++)
			if (hi[i].slot == (uint32_t)slot)
				memcpy(nbuf, hi[i].name, sizeof(nbuf));
		name = nbuf;
	}
	n = spin_handler_list(rt, hi, SPIN_MAX_HANDLERS);
	spin_close(rt);
	for (int i = 0; i < n && i < SPIN_MAX_HANDLERS; i++) {
		if (strcmp(hi[i].name, name))
			continue;
		if (json) {
			jobj(NULL);
			jstr("name", hi[i].name);
			ju64("slot", hi[i].slot);
			ju64("prog_id", hi[i].prog_id);
			ju64("insns", hi[i].insns);
			jobj_end();
		} else {
			printf("loaded handler %s into slot %u (prog id %u, %u insns)\n", hi[i].name,
			       hi[i].slot, hi[i].prog_id, hi[i].insns);
		}
		return 0;
	}
	if (json) {
		jobj(NULL);
		jstr("name", name);
		ju64("slot", slot);
		jobj_end();
	} else {
		printf("loaded handler %s into slot %d\n", name, slot);
	}
	return 0;
}

/*
 * handler push|unship|query: this process becomes the job's rank on IFACE
 * for the call (a Portals process: PtlNIInit), sends the request to the
 * ranks' Portals processes, prints each answer (docs/shipping.md).  A push
 * stays after it exits (SPIN_SHIP_KEEP): it goes with an unship, with the
 * target process, or when a process of this rank ships and ends.
 */
static int ship_ranks(const char *s, ptl_process_t *t, unsigned int *n)
{
	const char *p = s;

	*n = 0;
	while (*p) {
		char *end;
		unsigned long r;

		errno = 0;
		r = strtoul(p, &end, 10);
		if (end == p || errno || r > 65535 || (*end && *end != ',') || *n >= 64)
			return usage_err("rank list '%s': want up to 64 ranks like 1,2,3", s);
		t[(*n)++].rank = (ptl_rank_t)r;
		p = *end ? end + 1 : end;
	}
	return *n ? 0 : usage_err("rank list '%s' is empty", s);
}

static int ship_exit(const ptl_spin_ship_result_t *r, unsigned int n)
{
	static const int code[] = { 0, SPIN_EUSAGE, SPIN_EPERM, SPIN_ENOSPC, SPIN_EVERIFIER,
				    SPIN_ENOENT, SPIN_EFAIL, SPIN_ETIMEDOUT };

	for (unsigned int i = 0; i < n; i++)
		if (r[i].status != PTL_OK)
			return r[i].code < sizeof(code) / sizeof(code[0]) ? code[r[i].code] : SPIN_EFAIL;
	return 0;
}

static void ship_print(const char *verb, const ptl_spin_ship_result_t *r, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		char hx[17];

		for (int k = 0; k < 8; k++)
			snprintf(hx + 2 * k, 3, "%02x", r[i].hash[k]);
		if (json) {
			jobj(NULL);
			ju64("rank", r[i].target.rank);
			jstr("result", r[i].status == PTL_OK ? "ok" : "failed");
			ju64("code", r[i].code);
			jstr("reason", r[i].reason);
			jstr("hash", hx);
			jstr("placement", r[i].placement == PTL_SPIN_PLACE_GENERIC ? "generic" : "native");
			ju64("cache_hit", r[i].cache_hit);
			ju64("insns", r[i].insns);
			ju64("programs", r[i].programs);
			ju64("invocations", r[i].invocations);
			jobj_end();
		} else if (r[i].status != PTL_OK) {
			fprintf(stderr, "spinctl: handler %s: rank %u: %s\n", verb, r[i].target.rank,
				r[i].reason);
		} else {
			printf("rank %u: %s ok, hash %s, %s XDP, %s, %u insns, %u programs shipped there, %llu invocations\n",
			       r[i].target.rank, verb, hx,
			       r[i].placement == PTL_SPIN_PLACE_GENERIC ? "generic" : "native",
			       strcmp(verb, "push") ? "-" : r[i].cache_hit ? "cache hit" : "loaded",
			       r[i].insns, r[i].programs,
			       (unsigned long long)r[i].invocations);
		}
	}
}

static int handler_ship(int argc, char **argv, int op)
{
	static const char *verbs[] = { "push", "unship", "query" };
	ptl_process_t t[64];
	ptl_spin_ship_result_t r[64];
	ptl_handle_ni_t nih;
	uint64_t entry = UINT64_MAX, hpu = 64, host = 0;
	const char *file = NULL, *ranks = NULL;
	unsigned int n = 0;
	uint8_t *obj = NULL;
	long len = 0;
	int err, i = op == 0 ? 2 : 1;

	NEED(op == 0 ? 2 : 1, op == 0 ? "IFACE FILE" : "IFACE");
	if ((err = check_ifname("IFACE", argv[0])))
		return err;
	if (op == 0)
		file = argv[1];
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "rank"))
			ranks = OPTARG("rank");
		else if (!strcmp(argv[i], "entry")) {
			if ((err = parse_num("entry", OPTARG("entry"), 0, SPIN_SHIP_ENTRY_MAX, &entry)))
				return err;
		} else if (op == 0 && !strcmp(argv[i], "hpu")) {
			if ((err = parse_num("hpu", OPTARG("hpu"), 0, SPIN_HPU_SIZE, &hpu)))
				return err;
		} else if (op == 0 && !strcmp(argv[i], "host")) {
			if ((err = parse_num("host", OPTARG("host"), 0, 16 << 20, &host)))
				return err;
		} else
			return usage_err("unknown handler %s option '%s'", verbs[op], argv[i]);
	}
	if (!ranks || entry == UINT64_MAX)
		return usage_err("handler %s needs 'rank R[,R...]' and 'entry ID'", verbs[op]);
	if ((err = ship_ranks(ranks, t, &n)))
		return err;
	if (file) {
		FILE *f = fopen(file, "rb");

		if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
		    !(obj = malloc(len)) || fread(obj, 1, len, f) != (size_t)len) {
			fprintf(stderr, "spinctl: cannot read handler object %s: %s\n", file,
				errno ? strerror(errno) : "empty");
			if (f)
				fclose(f);
			free(obj);
			return SPIN_ENOENT;
		}
		fclose(f);
	}
	setenv("SPIN_IFACE", argv[0], 1);
	setenv("SPIN_SHIP_KEEP", "1", 1);
	unsetenv("SPIN_SHIP_ALLOW");	/* this process accepts nothing */
	if (PtlInit() != PTL_OK ||
	    PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL,
		      &nih) != PTL_OK) {
		fprintf(stderr, "spinctl: cannot become a Portals process on %s: %s\n", argv[0],
			PtlSpinErrmsg());
		free(obj);
		return SPIN_EFAIL;
	}
	if (op == 0)
		PtlSpinHandlerShip(nih, obj, (ptl_size_t)len, t, n, (uint32_t)entry, hpu, host, r);
	else if (op == 1)
		PtlSpinHandlerUnship(nih, t, n, (uint32_t)entry, r);
	else
		PtlSpinHandlerQuery(nih, t, n, (uint32_t)entry, r);
	PtlNIFini(nih);
	PtlFini();
	free(obj);
	ship_print(verbs[op], r, n);
	return ship_exit(r, n);
}

static volatile sig_atomic_t serve_stop;
static void serve_sig(int sig) { (void)sig; serve_stop = 1; }

/*
 * handler serve IFACE allow R[,R...]|all [for SECONDS]: a Portals process
 * of the job on IFACE that takes shipped handlers from the ranks named
 * (its library's ship thread does the work, docs/shipping.md) until
 * SIGINT/SIGTERM or SECONDS; what it holds goes when it ends.
 */
static int handler_serve(int argc, char **argv)
{
	const char *allow = NULL;
	uint64_t secs = 0, t0;
	struct sigaction sa = { .sa_handler = serve_sig };
	ptl_handle_ni_t nih;
	ptl_process_t me;
	int err;

	NEED(1, "IFACE");
	if ((err = check_ifname("IFACE", argv[0])))
		return err;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "allow"))
			allow = OPTARG("allow");
		else if (!strcmp(argv[i], "for")) {
			if ((err = parse_num("for", OPTARG("for"), 1, 365ull * 86400, &secs)))
				return err;
		} else
			return usage_err("unknown handler serve option '%s'", argv[i]);
	}
	if (!allow)
		return usage_err("handler serve needs 'allow R[,R...]' or 'allow all' (ranks that may ship code here)");
	setenv("SPIN_IFACE", argv[0], 1);
	setenv("SPIN_SHIP_ALLOW", allow, 1);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (PtlInit() != PTL_OK ||
	    PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL,
		      &nih) != PTL_OK) {
		fprintf(stderr, "spinctl: cannot serve shipped handlers on %s: %s\n", argv[0],
			PtlSpinErrmsg());
		return SPIN_EFAIL;
	}
	PtlGetId(nih, &me);
	printf("serving shipped handlers on %s as rank %u (allow %s), pid %d\n", argv[0], me.rank, allow,
	       (int)getpid());
	fflush(stdout);
	t0 = (uint64_t)time(NULL);
	while (!serve_stop && (!secs || (uint64_t)time(NULL) - t0 < secs))
		usleep(100000);
	PtlNIFini(nih);
	PtlFini();
	return 0;
}

static int handler_push(int argc, char **argv) { return handler_ship(argc, argv, 0); }
static int handler_unship(int argc, char **argv) { return handler_ship(argc, argv, 1); }
static int handler_query(int argc, char **argv) { return handler_ship(argc, argv, 2); }

static int handler_check(int argc, char **argv)
{
	struct spin_check_result r;
	int err;

	NEED(1, "FILE");
	if (argc > 1)
		return usage_err("unexpected argument '%s'", argv[1]);
	err = spin_handler_check(argv[0], &r);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		jstr("file", argv[0]);
		jstr("verdict", "accepted");
		ju64("abi", r.abi);
		ju64("verified_insns", r.verified_insns);
		ju64("xlated_insns", r.xlated_insns);
		ju64("jited_bytes", r.jited_bytes);
		ju64("maps", r.maps);
		jstr("verifier_stats", r.stats);
		jobj_end();
	} else {
		printf("%s: accepted by the verifier (spin ABI %u)\n", argv[0], r.abi);
		printf("\t%u insns verified, %u xlated, %u bytes jited, %u maps (temporary)\n",
		       r.verified_insns, r.xlated_insns, r.jited_bytes, r.maps);
		if (r.stats[0])
			printf("\tverifier: %s\n", r.stats);
	}
	return 0;
}

static int handler_list(int argc, char **argv)
{
	struct spin_handler_info hi[SPIN_MAX_HANDLERS * 2];
	struct spin_rt *rt;
	int err, n;

	ONLY_IFACE();
	if ((err = open_rt(argv[0], &rt)))
		return err;
	n = spin_handler_list(rt, hi, SPIN_MAX_HANDLERS * 2);
	spin_close(rt);
	if (n < 0)
		return fail(n);
	if (n > SPIN_MAX_HANDLERS * 2)
		n = SPIN_MAX_HANDLERS * 2;
	if (json) {
		jarr(NULL);
		for (int i = 0; i < n; i++) {
			jobj(NULL);
			jstr("name", hi[i].name);
			if (hi[i].slot == UINT32_MAX)
				jnull("slot");
			else
				ju64("slot", hi[i].slot);
			ju64("prog_id", hi[i].prog_id);
			ju64("insns", hi[i].insns);
			ju64("refs", hi[i].refs);
			jobj_end();
		}
		jarr_end();
		return 0;
	}
	if (!n) {
		if (verbose)
			printf("no handlers loaded on %s\n", argv[0]);
		return 0;
	}
	printf("%-5s %-24s %8s %8s %5s\n", "SLOT", "NAME", "PROG_ID", "INSNS", "REFS");
	for (int i = 0; i < n; i++) {
		if (hi[i].slot == UINT32_MAX)
			printf("%-5s ", "-");
		else
			printf("%-5u ", hi[i].slot);
		printf("%-24s %8u %8u %5u\n", hi[i].name, hi[i].prog_id, hi[i].insns, hi[i].refs);
	}
	return 0;
}

static int handler_unload(int argc, char **argv)
{
	struct spin_rt *rt;
	int err;

	NEED(2, "IFACE NAME");
	if (argc > 2)
		return usage_err("unexpected argument '%s'", argv[2]);
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_handler_unload(rt, argv[1]);
	spin_close(rt);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		jstr("name", argv[1]);
		jbool("unloaded", true);
		jobj_end();
	}
	return 0;
}

/* ----------------------------------------------------- portal table -- */

static int pt_op(int argc, char **argv, int op)
{
	struct spin_rt *rt;
	uint32_t idx = 0;
	int err;

	uint32_t flags = 0;

	NEED(2, "IFACE INDEX");
	if (op == 0 && argc > 2 && !strcmp(argv[2], "flowctrl"))
		flags = SPIN_PT_FLOWCTRL;
	if (argc > 2 + (flags != 0))
		return usage_err("unexpected argument '%s'", argv[2 + (flags != 0)]);
	if ((err = parse_u32r("INDEX", argv[1], 0, SPIN_MAX_PT - 1, &idx)))
		return err;
	if ((err = open_rt(argv[0], &rt)))
		return err;
	switch (op) {
	case 0: err = spin_pt_alloc_flags(rt, idx, flags); break;
	case 1: err = spin_pt_free(rt, idx); break;
	case 2: err = spin_pt_enable(rt, idx, true); break;
	default: err = spin_pt_enable(rt, idx, false); break;
	}
	spin_close(rt);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		ju64("pt", idx);
		jbool("ok", true);
		jobj_end();
	}
	return 0;
}

static int pt_alloc(int argc, char **argv) { return pt_op(argc, argv, 0); }
static int pt_free(int argc, char **argv) { return pt_op(argc, argv, 1); }
static int pt_enable(int argc, char **argv) { return pt_op(argc, argv, 2); }
static int pt_disable(int argc, char **argv) { return pt_op(argc, argv, 3); }

static int pt_list(int argc, char **argv)
{
	struct spin_rt *rt;
	struct spin_me me;
	int err, shown = 0;

	ONLY_IFACE();
	if ((err = open_rt(argv[0], &rt)))
		return err;
	if (json)
		jarr(NULL);
	else
		printf("%-4s %-10s %-8s %-8s %6s %8s %8s %8s\n", "PT", "STATE", "ENABLED", "FLOWCTRL",
		       "N_ME", "ACTIVE", "SEQ", "OWNER");
	static int actives[SPIN_MAX_PT];

	for (uint32_t k = 0; k < SPIN_MAX_ME; k++)
		if (!spin_me_get(rt, k, &me) && me.state != SPIN_ME_FREE && me.pt < SPIN_MAX_PT)
			actives[me.pt]++;
	for (uint32_t i = 0; i < SPIN_MAX_PT; i++) {
		struct spin_pt pt = {};
		int active = actives[i];

		if (spin_pt_get(rt, i, &pt))
			continue;
		if (!(pt.flags & SPIN_PT_ALLOCATED) && !verbose)
			continue;
		shown++;
		if (json) {
			jobj(NULL);
			ju64("pt", i);
			jbool("allocated", pt.flags & SPIN_PT_ALLOCATED);
			jbool("enabled", pt.flags & SPIN_PT_ENABLED);
			jbool("flowctrl", pt.flags & SPIN_PT_FLOWCTRL);
			ju64("owner_pid", pt.owner_pid);
			ju64("n_me", pt.n_me);
			ju64("active", active);
			ju64("seq", pt.seq);
			jobj_end();
		} else {
			printf("%-4u %-10s %-8s %-8s %6u %8d %8llu %8u\n", i,
			       pt.flags & SPIN_PT_ALLOCATED ? "allocated" : "free",
			       pt.flags & SPIN_PT_ENABLED ? "yes" : "no",
			       pt.flags & SPIN_PT_FLOWCTRL ? "yes" : "no", pt.n_me, active,
			       (unsigned long long)pt.seq, pt.owner_pid);
		}
	}
	if (json)
		jarr_end();
	spin_close(rt);
	(void)shown;
	return 0;
}

/* ------------------------------------------------------ match entries -- */

static const char *state_name(uint32_t s)
{
	switch (s) {
	case SPIN_ME_FREE: return "free";
	case SPIN_ME_ACTIVE: return "active";
	case SPIN_ME_CLAIMED: return "claimed";
	case SPIN_ME_SETUP: return "setup";
	default: return "?";
	}
}

static const char *list_name(uint32_t l)
{
	return l == SPIN_LIST_OVERFLOW ? "overflow" : l == SPIN_LIST_PRIORITY ? "priority" : "?";
}

/* Names of handler slots (index = slot). */
static void handler_names(struct spin_rt *rt, char names[SPIN_MAX_HANDLERS][64])
{
	struct spin_handler_info hi[SPIN_MAX_HANDLERS * 2];
	int n = spin_handler_list(rt, hi, SPIN_MAX_HANDLERS * 2);

	memset(names, 0, SPIN_MAX_HANDLERS * 64);
	for (int i = 0; i < n && i < SPIN_MAX_HANDLERS * 2; i++)
		if (hi[i].slot < SPIN_MAX_HANDLERS)
			memcpy(names[hi[i].slot], hi[i].name, 64);
}

static const char *me_handler(const struct spin_me *m, char names[SPIN_MAX_HANDLERS][64],
			      char *buf)
{
	if (!m->handler)
		return "-";
	if (m->handler <= SPIN_MAX_HANDLERS && names[m->handler - 1][0])
		return names[m->handler - 1];
	sprintf(buf, "#%u", m->handler - 1);
	return buf;
}

static void options_str(uint32_t o, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s%s%s",
		 o & SPIN_ME_OP_PUT ? "put " : "", o & SPIN_ME_OP_GET ? "get " : "",
		 o & SPIN_ME_XSK ? "xsk " : "",
		 o & SPIN_ME_USE_ONCE ? "use-once " : "",
		 o & SPIN_ME_NO_TRUNCATE ? "no-truncate " : "",
		 o & SPIN_ME_EVENT_COMM_DISABLE ? "no-comm-events " : "",
		 o & SPIN_ME_EVENT_SUCCESS_DISABLE ? "no-success-events " : "");
	if (*buf)
		buf[strlen(buf) - 1] = 0;
}

static void json_me(uint32_t idx, const struct spin_me *m, const char *hname)
{
	char ob[128];

	ju64("me", idx);
	ju64("pt", m->pt);
	jstr("list", list_name(m->list));
	jstr("state", state_name(m->state));
	ju64("seq", m->seq);
	ju64("match_bits", m->match_bits);
	ju64("ignore_bits", m->ignore_bits);
	if (m->match_rank == SPIN_RANK_ANY)
		jstr("rank", "any");
	else
		ju64("rank", m->match_rank);
	if (m->match_pid == SPIN_PID_ANY)
		jstr("pid", "any");
	else
		ju64("pid", m->match_pid);
	options_str(m->options, ob, sizeof(ob));
	jstr("options", ob);
	if (m->handler)
		jstr("handler", hname);
	else
		jnull("handler");
	ju64("host_off", m->host_off);
	ju64("host_len", m->host_len);
	ju64("hhost_off", m->hhost_off);
	ju64("hhost_len", m->hhost_len);
	ju64("user_ptr", m->user_ptr);
	ju64("owner_pid", m->owner_pid);
	ju64("hpu_len", m->hpu_len);
	ju64("hpu_size", m->hpu_size);
	ju64("success", m->ct_success);
	ju64("failure", m->ct_failure);
	ju64("bytes", m->bytes);
	ju64("handler_puts", m->ct_puts);
	ju64("handler_gets", m->ct_gets);
}

static int me_append(int argc, char **argv)
{
	struct spin_me_spec s = {
		.list = SPIN_LIST_PRIORITY,
		.match_rank = SPIN_RANK_ANY,
		.match_pid = SPIN_PID_ANY,
		.host_off = UINT64_MAX,
		.hhost_off = UINT64_MAX,
	};
	char names[SPIN_MAX_HANDLERS][64], hb[16];
	uint8_t *state = NULL;
	bool have_pt = false;
	struct spin_rt *rt;
	struct spin_me m;
	size_t slen = 0;
	uint64_t v;
	int err, idx;

	NEED(1, "IFACE");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "pt")) {
			if ((err = parse_u32r("pt", OPTARG(a), 0, SPIN_MAX_PT - 1, &s.pt_index)))
				goto out;
			have_pt = true;
		} else if (!strcmp(a, "bits")) {
			if ((err = parse_u64("bits", OPTARG(a), &s.match_bits)))
				goto out;
		} else if (!strcmp(a, "ignore")) {
			if ((err = parse_u64("ignore", OPTARG(a), &s.ignore_bits)))
				goto out;
		} else if (!strcmp(a, "rank")) {
			const char *r = OPTARG(a);

			if (!strcmp(r, "any"))
				s.match_rank = SPIN_RANK_ANY;
			else if ((err = parse_u32r("rank", r, 0, ID_MAX, &s.match_rank)))
				goto out;
		} else if (!strcmp(a, "pid")) {
			const char *r = OPTARG(a);

			if (!strcmp(r, "any"))
				s.match_pid = SPIN_PID_ANY;
			else if ((err = parse_u32r("pid", r, 0, ID_MAX, &s.match_pid)))
				goto out;
		} else if (!strcmp(a, "list")) {
			const char *l = OPTARG(a);

			if (is_prefix(l, "priority"))
				s.list = SPIN_LIST_PRIORITY;
			else if (is_prefix(l, "overflow"))
				s.list = SPIN_LIST_OVERFLOW;
			else {
				err = usage_err("list must be priority or overflow, not '%s'", l);
				goto out;
			}
		} else if (!strcmp(a, "use-once")) {
			s.options |= SPIN_ME_USE_ONCE;
		} else if (!strcmp(a, "no-truncate")) {
			s.options |= SPIN_ME_NO_TRUNCATE;
		} else if (!strcmp(a, "no-events")) {
			s.options |= SPIN_ME_EVENT_SUCCESS_DISABLE | SPIN_ME_EVENT_COMM_DISABLE;
		} else if (!strcmp(a, "xsk")) {
			s.options |= SPIN_ME_XSK;
		} else if (!strcmp(a, "op")) {
			const char *o = OPTARG(a);

			s.options &= ~(SPIN_ME_OP_PUT | SPIN_ME_OP_GET);
			if (!strcmp(o, "put"))
				s.options |= SPIN_ME_OP_PUT;
			else if (!strcmp(o, "get"))
				s.options |= SPIN_ME_OP_GET;
			else if (!strcmp(o, "put,get") || !strcmp(o, "get,put"))
				s.options |= SPIN_ME_OP_PUT | SPIN_ME_OP_GET;
			else {
				err = usage_err("op must be put, get or put,get, not '%s'", o);
				goto out;
			}
		} else if (!strcmp(a, "handler")) {
			s.handler = OPTARG(a);
		} else if (!strcmp(a, "len")) {
			if ((err = parse_size("len", OPTARG(a), 0, SPIN_MAX_HOST_BYTES, &s.host_len)))
				goto out;
		} else if (!strcmp(a, "off")) {
			if ((err = parse_size("off", OPTARG(a), 0, SPIN_MAX_HOST_BYTES - 1, &s.host_off)))
				goto out;
		} else if (!strcmp(a, "hhost-len")) {
			if ((err = parse_size("hhost-len", OPTARG(a), 0, SPIN_MAX_HOST_BYTES, &s.hhost_len)))
				goto out;
		} else if (!strcmp(a, "hhost-off")) {
			if ((err = parse_size("hhost-off", OPTARG(a), 0, SPIN_MAX_HOST_BYTES - 1, &s.hhost_off)))
				goto out;
		} else if (!strcmp(a, "state")) {
			free(state);
			state = calloc(1, SPIN_HPU_SIZE);
			if (!state) {
				err = SPIN_EFAIL;
				goto out;
			}
			if ((err = parse_hex("state", OPTARG(a), state, SPIN_HPU_SIZE, &slen)))
				goto out;
		} else if (!strcmp(a, "state-file")) {
			free(state);
			state = NULL;
			if ((err = read_file("state file", OPTARG(a), &state, SPIN_HPU_BIG_SIZE, &slen)))
				goto out;
		} else if (!strcmp(a, "hpu-size")) {
			if ((err = parse_size("hpu-size", OPTARG(a), 0, SPIN_HPU_BIG_SIZE, &v)))
				goto out;
			s.hpu_size = v;
		} else if (!strcmp(a, "user-ptr")) {
			if ((err = parse_u64("user-ptr", OPTARG(a), &v)))
				goto out;
			s.user_ptr = v;
		} else {
			err = usage_err("unknown me append option '%s'", a);
			goto out;
		}
	}
	if (!have_pt) {
		err = usage_err("missing 'pt N'");
		goto out;
	}
	s.hpu_init = state;
	s.hpu_init_len = slen;
	if ((err = open_rt(argv[0], &rt)))
		goto out;
	idx = spin_me_append(rt, &s);
	if (idx < 0) {
		err = fail(idx);
		spin_close(rt);
		goto out;
	}
	if (json) {
		handler_names(rt, names);
		if (spin_me_get(rt, idx, &m)) {
			jobj(NULL);
			ju64("me", idx);
			jobj_end();
		} else {
			jobj(NULL);
			json_me(idx, &m, me_handler(&m, names, hb));
			jobj_end();
		}
	} else {
		printf("%d\n", idx);
		if (verbose && !spin_me_get(rt, idx, &m))
			fprintf(stderr, "me %d: window %llu+%llu, handler host memory %llu+%llu\n", idx,
				(unsigned long long)m.host_off, (unsigned long long)m.host_len,
				(unsigned long long)m.hhost_off, (unsigned long long)m.hhost_len);
	}
	spin_close(rt);
	err = 0;
out:
	free(state);
	return err;
}

static int me_list(int argc, char **argv)
{
	char names[SPIN_MAX_HANDLERS][64], hb[16], win[48], mb[40];
	struct spin_rt *rt;
	struct spin_me m;
	bool hdr = false;
	int err;

	ONLY_IFACE();
	if ((err = open_rt(argv[0], &rt)))
		return err;
	handler_names(rt, names);
	if (json)
		jarr(NULL);
	for (uint32_t i = 0; i < SPIN_MAX_ME; i++) {
		if (spin_me_get(rt, i, &m) || m.state == SPIN_ME_FREE)
			continue;
		if (json) {
			jobj(NULL);
			json_me(i, &m, me_handler(&m, names, hb));
			jobj_end();
			continue;
		}
		if (!hdr) {
			printf("%-4s %-3s %-8s %-7s %-37s %-6s %-16s %-21s %8s %8s %10s\n", "ME", "PT",
			       "LIST", "STATE", "BITS/IGNORE", "RANK", "HANDLER", "WINDOW", "SUCCESS",
			       "FAILURE", "BYTES");
			hdr = true;
		}
		snprintf(mb, sizeof(mb), "%#" PRIx64 "/%#" PRIx64, (uint64_t)m.match_bits,
			 (uint64_t)m.ignore_bits);
		snprintf(win, sizeof(win), "%" PRIu64 "+%" PRIu64, (uint64_t)m.host_off,
			 (uint64_t)m.host_len);
		printf("%-4u %-3u %-8s %-7s %-37s ", i, m.pt, list_name(m.list),
		       state_name(m.state), mb);
		if (m.match_rank == SPIN_RANK_ANY)
			printf("%-6s ", "any");
		else
			printf("%-6u ", m.match_rank);
		printf("%-16s %-21s %8llu %8llu %10llu\n", me_handler(&m, names, hb), win,
		       (unsigned long long)m.ct_success, (unsigned long long)m.ct_failure,
		       (unsigned long long)m.bytes);
	}
	if (json)
		jarr_end();
	else if (!hdr && verbose)
		printf("no match entries on %s\n", argv[0]);
	spin_close(rt);
	return 0;
}

static int me_unlink(int argc, char **argv)
{
	struct spin_rt *rt;
	uint32_t idx = 0;
	int err;

	NEED(2, "IFACE INDEX");
	if (argc > 2)
		return usage_err("unexpected argument '%s'", argv[2]);
	if ((err = parse_u32r("INDEX", argv[1], 0, SPIN_MAX_ME - 1, &idx)))
		return err;
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_me_unlink(rt, idx);
	spin_close(rt);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		ju64("me", idx);
		jbool("unlinked", true);
		jobj_end();
	}
	return 0;
}

static int me_show(int argc, char **argv)
{
	char names[SPIN_MAX_HANDLERS][64], hb[16], ob[128];
	uint8_t hpu[SPIN_HPU_SIZE];
	struct spin_rt *rt;
	struct spin_me m;
	uint64_t nbytes = UINT64_MAX;
	uint32_t idx = 0;
	size_t n;
	int err;

	NEED(2, "IFACE INDEX");
	if ((err = parse_u32r("INDEX", argv[1], 0, SPIN_MAX_ME - 1, &idx)))
		return err;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "state-bytes")) {
			if ((err = parse_size("state-bytes", OPTARG("state-bytes"), 0, SPIN_HPU_SIZE,
					      &nbytes)))
				return err;
		} else {
			return usage_err("unknown me show option '%s'", argv[i]);
		}
	}
	if ((err = open_rt(argv[0], &rt)))
		return err;
	/* only the first SPIN_MAX_HPU entries (those with handlers) have
	 * handler memory */
	if ((err = spin_me_get(rt, idx, &m)) ||
	    (idx < SPIN_MAX_HPU && (err = spin_hpu_read(rt, idx, hpu, sizeof(hpu))))) {
		spin_close(rt);
		return fail(err);
	}
	handler_names(rt, names);
	spin_close(rt);
	if (nbytes == UINT64_MAX)
		n = m.hpu_len > 64 ? m.hpu_len : 64;
	else
		n = nbytes;
	if (n > SPIN_HPU_SIZE)
		n = SPIN_HPU_SIZE;
	if (idx >= SPIN_MAX_HPU)
		n = 0;
	if (json) {
		jobj(NULL);
		json_me(idx, &m, me_handler(&m, names, hb));
		jhex("hpu", hpu, n);
		jobj_end();
		return 0;
	}
	options_str(m.options, ob, sizeof(ob));
	printf("me %u: pt %u  list %s  state %s  seq %llu\n", idx, m.pt,
	       list_name(m.list), state_name(m.state), (unsigned long long)m.seq);
	printf("\tmatch bits %#llx  ignore %#llx  rank ", (unsigned long long)m.match_bits,
	       (unsigned long long)m.ignore_bits);
	if (m.match_rank == SPIN_RANK_ANY)
		printf("any");
	else
		printf("%u", m.match_rank);
	if (m.match_pid == SPIN_PID_ANY)
		printf("  pid any\n");
	else
		printf("  pid %u\n", m.match_pid);
	printf("\toptions %s  handler %s  owner pid %u  user ptr %#llx\n", *ob ? ob : "-",
	       me_handler(&m, names, hb), m.owner_pid, (unsigned long long)m.user_ptr);
	printf("\twindow %llu+%llu  handler host memory %llu+%llu\n",
	       (unsigned long long)m.host_off, (unsigned long long)m.host_len,
	       (unsigned long long)m.hhost_off, (unsigned long long)m.hhost_len);
	printf("\tsuccess %llu  failure %llu  bytes %llu  handler puts %llu  handler gets %llu\n",
	       (unsigned long long)m.ct_success, (unsigned long long)m.ct_failure,
	       (unsigned long long)m.bytes, (unsigned long long)m.ct_puts,
	       (unsigned long long)m.ct_gets);
	printf("\thandler memory (%u bytes in use, showing %zu):\n", m.hpu_len, n);
	hexdump(hpu, n, "\t");
	return 0;
}

/* -------------------------------------------------------------- peers -- */

static int peer_add(int argc, char **argv)
{
	struct spin_peer_spec p = {};
	struct spin_rt *rt;
	int err;

	NEED(3, "IFACE RANK IP");
	if ((err = parse_u32r("RANK", argv[1], 0, SPIN_MAX_PEERS - 1, &p.rank)) ||
	    (err = parse_ip(argv[2], &p.ip)))
		return err;
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "mac")) {
			if ((err = parse_mac(OPTARG(a), p.mac)))
				return err;
		} else if (!strcmp(a, "port")) {
			if ((err = parse_port("port", OPTARG(a), &p.port)))
				return err;
		} else if (!strcmp(a, "dev")) {
			p.ifname = OPTARG(a);
			if ((err = check_ifname("dev", p.ifname)))
				return err;
		} else if (!strcmp(a, "pid")) {
			if ((err = parse_u32("pid", OPTARG(a), &p.pid)))
				return err;
		} else {
			return usage_err("unknown peer add option '%s'", a);
		}
	}
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_peer_add(rt, &p);
	spin_close(rt);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		ju64("rank", p.rank);
		jbool("added", true);
		jobj_end();
	}
	return 0;
}

static int peer_list(int argc, char **argv)
{
	char ip[INET_ADDRSTRLEN], mac[18], dev[IF_NAMESIZE];
	struct spin_rt *rt;
	struct spin_peer p;
	bool hdr = false;
	int err;

	ONLY_IFACE();
	if ((err = open_rt(argv[0], &rt)))
		return err;
	if (json)
		jarr(NULL);
	for (uint32_t r = 0; r < SPIN_MAX_PEERS; r++) {
		if (spin_peer_get(rt, r, &p) || !p.valid)
			continue;
		if (!p.ifindex)
			strcpy(dev, "-");
		else if (!if_indextoname(p.ifindex, dev))
			snprintf(dev, sizeof(dev), "#%u", p.ifindex);
		if (json) {
			jobj(NULL);
			ju64("rank", r);
			jstr("ip", ipstr(p.ip, ip));
			ju64("port", ntohs(p.port));
			jstr("mac", macstr(p.mac, mac));
			ju64("ifindex", p.ifindex);
			ju64("pid", p.pid);
			jobj_end();
			continue;
		}
		if (!hdr) {
			printf("%-6s %-15s %-6s %-17s %-16s %s\n", "RANK", "IP", "PORT", "MAC", "DEV",
			       "PID");
			hdr = true;
		}
		printf("%-6u %-15s %-6u %-17s %-16s %u\n", r, ipstr(p.ip, ip), ntohs(p.port),
		       macstr(p.mac, mac), dev, p.pid);
	}
	if (json)
		jarr_end();
	spin_close(rt);
	return 0;
}

static int peer_del(int argc, char **argv)
{
	struct spin_rt *rt;
	uint32_t rank = 0;
	int err;

	NEED(2, "IFACE RANK");
	if (argc > 2)
		return usage_err("unexpected argument '%s'", argv[2]);
	if ((err = parse_u32r("RANK", argv[1], 0, SPIN_MAX_PEERS - 1, &rank)))
		return err;
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_peer_del(rt, rank);
	spin_close(rt);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		ju64("rank", rank);
		jbool("deleted", true);
		jobj_end();
	}
	return 0;
}

/* Load a hostfile: FILE, else $SPIN_HOSTFILE (spin_job_load would fall
 * back to it too; checked here for a usage error instead). */
static int job_file(int argc, char **argv, int pos, const char **file)
{
	if (argc > pos + 1)
		return usage_err("unexpected argument '%s'", argv[pos + 1]);
	*file = argc > pos ? argv[pos] : getenv("SPIN_HOSTFILE");
	if (*file && !**file)
		*file = NULL;
	return 0;
}

static int peer_load(int argc, char **argv)
{
	struct spin_status st;
	struct spin_job j;
	struct spin_rt *rt;
	const char *file;
	int err, n;

	NEED(1, "IFACE");
	if ((err = job_file(argc, argv, 1, &file)))
		return err;
	if (!file)
		return usage_err("no hostfile: give FILE or set SPIN_HOSTFILE");
	err = spin_job_load(&j, file);
	if (err)
		return fail(err);
	if ((err = open_rt(argv[0], &rt))) {
		spin_job_free(&j);
		return err;
	}
	if (!spin_get_status(rt, &st) && st.cfg.my_rank != j.rank)
		fprintf(stderr, "spinctl: warning: %s is attached with rank %u, but %s makes this "
			"host rank %u (attach with 'rank %u')\n", argv[0], st.cfg.my_rank, file,
			j.rank, j.rank);
	n = spin_job_peers(rt, &j);
	spin_close(rt);
	if (n < 0) {
		spin_job_free(&j);
		return fail(n);
	}
	if (json) {
		jobj(NULL);
		jstr("ifname", argv[0]);
		jstr("hostfile", file);
		ju64("rank", j.rank);
		ju64("size", j.size);
		ju64("peers", n);
		jobj_end();
	} else {
		printf("loaded %d peers from %s (this host: rank %u of %u)\n", n, file, j.rank,
		       j.size);
	}
	spin_job_free(&j);
	return 0;
}

/* ---------------------------------------------------------------- job -- */

/* Which variable gave the rank or size (spin_job_load's order), or NULL. */
static const char *first_env(const char *a, const char *b, const char *c)
{
	const char *vars[] = { a, b, c };

	for (int i = 0; i < 3; i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return vars[i];
	}
	return NULL;
}

static int cmd_job(int argc, char **argv)
{
	const char *file, *rank_from, *size_from;
	char ip[INET_ADDRSTRLEN], mac[18], port[8];
	struct spin_job j;
	int err;

	if ((err = job_file(argc, argv, 0, &file)))
		return err;
	err = spin_job_load(&j, file);
	if (err)
		return fail(err);
	rank_from = first_env("SPIN_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK");
	size_from = first_env("SPIN_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE");
	if (!rank_from)
		rank_from = "address";
	if (!size_from)
		size_from = "hostfile";
	if (json) {
		jobj(NULL);
		ju64("rank", j.rank);
		ju64("size", j.size);
		jstr("rank_from", rank_from);
		jstr("size_from", size_from);
		if (file)
			jstr("hostfile", file);
		else
			jnull("hostfile");
		jarr("hosts");
		for (uint32_t i = 0; i < j.nhosts; i++) {
			const struct spin_job_host *h = &j.hosts[i];

			jobj(NULL);
			ju64("rank", h->rank);
			jstr("ip", inet_ntop(AF_INET, &h->ip, ip, sizeof(ip)));
			if (h->has_mac)
				jstr("mac", macstr(h->mac, mac));
			else
				jnull("mac");
			if (h->port)
				ju64("port", h->port);
			else
				jnull("port");
			jbool("self", h->rank == j.rank);
			jobj_end();
		}
		jarr_end();
		jobj_end();
	} else {
		printf("rank %u of %u (rank from %s, size from %s; hostfile %s)\n", j.rank, j.size,
		       rank_from, size_from, file ? file : "none");
		if (j.nhosts)
			printf("  %-6s %-15s %-6s %s\n", "RANK", "IP", "PORT", "MAC");
		for (uint32_t i = 0; i < j.nhosts; i++) {
			const struct spin_job_host *h = &j.hosts[i];

			snprintf(port, sizeof(port), "%u", h->port);
			printf("%c %-6u %-15s %-6s %s\n", h->rank == j.rank ? '*' : ' ', h->rank,
			       inet_ntop(AF_INET, &h->ip, ip, sizeof(ip)), h->port ? port : "-",
			       h->has_mac ? macstr(h->mac, mac) : "-");
		}
	}
	spin_job_free(&j);
	return 0;
}

/* -------------------------------------------------------------- stats -- */

static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
#define F(n) { #n, offsetof(struct spin_stats, n) }
	F(rx_packets), F(rx_bytes), F(passed), F(msgs), F(msgs_completed),
	F(deposited_bytes), F(dma_to_host_bytes), F(dma_from_host_bytes), F(tx_device),
	F(tx_host_inline), F(tx_host_queued), F(to_xsk), F(events), F(acks_sent),
	F(acks_received), F(replies_sent), F(replies_received), F(nacks_sent), F(pt_disabled),
	F(fanout), F(fanout_copies), F(events_quiet), F(wakes_deferred), F(sacks_sent),
	F(sacks_received), F(hgets_sent), F(hgets_done),
#undef F
};
static const char *const hslot_names[SPIN_H_MAX] = { "header", "payload", "completion" };

/* A Prometheus label value: backslash, double quote and newline escaped. */
static void prom_label(const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			printf("\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", stdout);
		else
			putchar(*v);
	}
}

static void prom_head(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{iface="IF"[,key="val"]} v */
static void prom_line(const char *name, const char *iface, const char *key, const char *val,
		      const char *key2, const char *val2, uint64_t v)
{
	printf("%s{iface=\"", name);
	prom_label(iface);
	if (key) {
		printf("\",%s=\"", key);
		prom_label(val);
	}
	if (key2) {
		printf("\",%s=\"", key2);
		prom_label(val2);
	}
	printf("\"} %" PRIu64 "\n", v);
}

struct prog_stat {
	char name[64];		/* handler name, or "spin_rx" */
	const char *kind;	/* "runtime" or "handler" */
	struct bpf_prog_info info;
	bool ok;
};

static void prog_stat(uint32_t id, struct prog_stat *p)
{
	__u32 len = sizeof(p->info);
	int fd = bpf_prog_get_fd_by_id(id);

	memset(&p->info, 0, sizeof(p->info));
	p->ok = fd >= 0 && !bpf_obj_get_info_by_fd(fd, &p->info, &len);
	if (fd >= 0)
		close(fd);
}

/* The runtime's counters, its drops, handler calls, and the run counts,
 * run time and instruction counts of its programs, in the Prometheus text
 * format (for node_exporter's textfile collector: write to a temporary
 * file and rename it into the collector's directory). */
static int stats_prom(struct spin_rt *rt, const char *iface, const struct spin_stats *s)
{
	struct spin_handler_info hi[SPIN_MAX_HANDLERS];
	struct prog_stat ps[SPIN_MAX_HANDLERS + 1];
	struct spin_status st;
	int n, np = 0, err, enabled = -1;
	char name[96];
	FILE *f;

	err = spin_get_status(rt, &st);
	if (err)
		return err;
	n = spin_handler_list(rt, hi, SPIN_MAX_HANDLERS);
	if (n < 0)
		return n;
	if (st.prog_id) {
		snprintf(ps[np].name, sizeof(ps[np].name), "spin_rx");
		ps[np].kind = "runtime";
		prog_stat(st.prog_id, &ps[np++]);
	}
	for (int i = 0; i < n && i < SPIN_MAX_HANDLERS; i++) {
		memcpy(ps[np].name, hi[i].name, sizeof(ps[np].name));
		ps[np].name[sizeof(ps[np].name) - 1] = 0;
		ps[np].kind = "handler";
		prog_stat(hi[i].prog_id, &ps[np++]);
	}
	if ((f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r"))) {
		if (fscanf(f, "%d", &enabled) != 1)
			enabled = -1;
		fclose(f);
	}

	prom_head("spin_up", "gauge", "1 if the spin runtime is attached to the interface, 0 for stale pins.");
	prom_line("spin_up", iface, "mode", st.generic ? "generic" : "native", NULL, NULL,
		  st.prog_id != 0);
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++) {
		snprintf(name, sizeof(name), "spin_%s_total", stat_fields[i].name);
		printf("# HELP %s spin runtime counter %s (spinctl stats, docs/spinctl.md).\n"
		       "# TYPE %s counter\n", name, stat_fields[i].name, name);
		prom_line(name, iface, NULL, NULL, NULL, NULL,
			  *(uint64_t *)((char *)s + stat_fields[i].off));
	}
	prom_head("spin_handler_calls_total", "counter", "Handler invocations by phase.");
	for (int h = 0; h < SPIN_H_MAX; h++)
		prom_line("spin_handler_calls_total", iface, "phase", hslot_names[h], NULL, NULL,
			  s->handler_calls[h]);
	prom_head("spin_drops_total", "counter", "Packets dropped by the runtime, by reason.");
	for (int d = 0; d < SPIN_DROP_MAX; d++)
		prom_line("spin_drops_total", iface, "reason", spin_drop_name(d), NULL, NULL,
			  s->drops[d]);
	prom_head("spin_bpf_stats_enabled", "gauge",
		  "kernel.bpf_stats_enabled: run counts and run time are only counted while it is 1 (or a BPF_ENABLE_STATS file descriptor is held).");
	printf("spin_bpf_stats_enabled %d\n", enabled < 0 ? 0 : enabled);
	/* Only the program the kernel runs is counted: handlers are tail calls
	 * of spin_rx, their runs are spin_handler_calls_total and their time
	 * is part of spin_rx's. */
	prom_head("spin_prog_runs_total", "counter", "Runs of the runtime's XDP program, handlers included (bpf_prog_info.run_cnt).");
	for (int i = 0; i < np; i++)
		if (ps[i].ok && !strcmp(ps[i].kind, "runtime"))
			prom_line("spin_prog_runs_total", iface, "kind", ps[i].kind, "prog", ps[i].name,
				  ps[i].info.run_cnt);
	prom_head("spin_prog_run_seconds_total", "counter", "Time spent in the runtime's XDP program, handlers included (bpf_prog_info.run_time_ns).");
	for (int i = 0; i < np; i++) {
		if (!ps[i].ok || strcmp(ps[i].kind, "runtime"))
			continue;
		printf("spin_prog_run_seconds_total{iface=\"");
		prom_label(iface);
		printf("\",kind=\"%s\",prog=\"", ps[i].kind);
		prom_label(ps[i].name);
		printf("\"} %" PRIu64 ".%09" PRIu64 "\n", (uint64_t)ps[i].info.run_time_ns / 1000000000,
		       (uint64_t)ps[i].info.run_time_ns % 1000000000);
	}
	prom_head("spin_prog_verified_insns", "gauge", "Instructions the verifier processed when the program was loaded.");
	for (int i = 0; i < np; i++)
		if (ps[i].ok)
			prom_line("spin_prog_verified_insns", iface, "kind", ps[i].kind, "prog",
				  ps[i].name, ps[i].info.verified_insns);
	prom_head("spin_prog_xlated_insns", "gauge", "Instructions of the program after the verifier's rewrites.");
	for (int i = 0; i < np; i++)
		if (ps[i].ok)
			prom_line("spin_prog_xlated_insns", iface, "kind", ps[i].kind, "prog",
				  ps[i].name, ps[i].info.xlated_prog_len / 8);
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	struct spin_stats s;
	struct spin_rt *rt;
	bool reset = false, prom = false;
	int err;

	NEED(1, "IFACE");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "reset"))
			reset = true;
		else if (!strcmp(argv[i], "prom"))
			prom = true;
		else
			return usage_err("unknown stats option '%s'", argv[i]);
	}
	if (prom && json)
		return usage_err("'prom' and JSON (-j/-p) exclude each other");
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_stats_read(rt, &s);
	if (!err && prom)
		err = stats_prom(rt, argv[0], &s);
	if (!err && reset)
		err = spin_stats_reset(rt);
	spin_close(rt);
	if (err)
		return fail(err);
	if (prom)
		return 0;
	if (json) {
		jobj(NULL);
		for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
			ju64(stat_fields[i].name, *(uint64_t *)((char *)&s + stat_fields[i].off));
		jobj("handler_calls");
		for (int h = 0; h < SPIN_H_MAX; h++)
			ju64(hslot_names[h], s.handler_calls[h]);
		jobj_end();
		jobj("drops");
		for (int d = 0; d < SPIN_DROP_MAX; d++)
			ju64(spin_drop_name(d), s.drops[d]);
		jobj_end();
		jobj_end();
		return 0;
	}
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		printf("%-22s %" PRIu64 "\n", stat_fields[i].name,
		       *(uint64_t *)((char *)&s + stat_fields[i].off));
	printf("%-22s", "handler_calls");
	for (int h = 0; h < SPIN_H_MAX; h++)
		printf(" %s %llu", hslot_names[h], (unsigned long long)s.handler_calls[h]);
	printf("\ndrops:\n");
	for (int d = 0; d < SPIN_DROP_MAX; d++) {
		if (!s.drops[d] && !verbose)
			continue;
		printf("  %-20s %12llu  %s\n", spin_drop_name(d), (unsigned long long)s.drops[d],
		       spin_drop_desc(d));
	}
	if (reset && verbose)
		printf("(counters reset)\n");
	return 0;
}

/* ------------------------------------------------------------- events -- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static const char *ev_kind(uint32_t k)
{
	switch (k) {
	case SPIN_EV_PUT: return "put";
	case SPIN_EV_PUT_FROM_HOST: return "put_from_host";
	case SPIN_EV_AUTO_UNLINK: return "auto_unlink";
	case SPIN_EV_MSG_TIMEOUT: return "msg_timeout";
	case SPIN_EV_ACK: return "ack";
	case SPIN_EV_GET: return "get";
	case SPIN_EV_GET_FROM_HOST: return "get_from_host";
	case SPIN_EV_PT_DISABLED: return "pt_disabled";
	default: return "unknown";
	}
}

static const char *ev_fail(uint32_t f)
{
	switch (f) {
	case SPIN_FAIL_OK: return "ok";
	case SPIN_FAIL_DROPPED: return "dropped";
	case SPIN_FAIL_TIMEOUT: return "timeout";
	case SPIN_FAIL_HANDLER: return "handler";
	case SPIN_FAIL_PT_DISABLED: return "pt_disabled";
	case SPIN_FAIL_NO_MATCH: return "no_match";
	case SPIN_FAIL_NO_TARGET: return "no_target";
	case SPIN_FAIL_OP_VIOLATION: return "op_violation";
	case SPIN_FAIL_QUEUE_FULL: return "queue_full";
	default: return "unknown";
	}
}

struct ev_state {
	uint64_t seen, want;
};

static int on_event(void *ctx, const struct spin_event *e)
{
	struct ev_state *st = ctx;

	if (json) {
		jobj(NULL);
		jstr("kind", ev_kind(e->kind));
		jstr("fail", ev_fail(e->fail));
		ju64("pt", e->pt_index);
		ju64("me", e->me);
		ju64("match_bits", e->match_bits);
		ju64("rlength", e->rlength);
		ju64("mlength", e->mlength);
		ju64("remote_off", e->remote_off);
		ju64("start", e->start);
		ju64("hdr_data", e->hdr_data);
		ju64("user_ptr", e->user_ptr);
		ju64("src_rank", e->src_rank);
		ju64("src_pid", e->src_pid);
		ju64("msg_id", e->msg_id);
		ju64("owner_pid", e->owner_pid);
		ju64("dropped_bytes", e->dropped_bytes);
		jbool("flow_control", e->flow_control);
		ju64("timestamp_ns", e->timestamp_ns);
		if (e->kind == SPIN_EV_PUT_FROM_HOST || e->kind == SPIN_EV_GET_FROM_HOST) {
			jobj("put");
			ju64("target_rank", e->put.target_rank);
			ju64("src_off", e->put.src_off);
			ju64("len", e->put.len);
			ju64("match_bits", e->put.match_bits);
			ju64("remote_off", e->put.remote_off);
			ju64("hdr_data", e->put.hdr_data);
			jbool("ack_req", e->put.ack_req);
			jobj_end();
		}
		jobj_end();
	} else {
		printf("%s %s pt %u me %u rank %u pid %u msg %u bits %#llx rlen %llu mlen %llu "
		       "roff %llu start %llu hdr %#llx dropped %u", ev_kind(e->kind), ev_fail(e->fail),
		       e->pt_index, e->me, e->src_rank, e->src_pid, e->msg_id,
		       (unsigned long long)e->match_bits, (unsigned long long)e->rlength,
		       (unsigned long long)e->mlength, (unsigned long long)e->remote_off,
		       (unsigned long long)e->start, (unsigned long long)e->hdr_data,
		       e->dropped_bytes);
		if (e->kind == SPIN_EV_PUT_FROM_HOST || e->kind == SPIN_EV_GET_FROM_HOST)
			printf(" -> rank %u src_off %llu len %u bits %#llx", e->put.target_rank,
			       (unsigned long long)e->put.src_off, e->put.len,
			       (unsigned long long)e->put.match_bits);
		putchar('\n');
		fflush(stdout);
	}
	st->seen++;
	return st->want && st->seen >= st->want;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static int cmd_events(int argc, char **argv)
{
	struct ev_state st = {};
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t timeout = 0, deadline = 0;
	bool serve = false, skip = false;
	struct spin_rt *rt;
	int err, n;

	NEED(1, "IFACE");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "count")) {
			if ((err = parse_u64("count", OPTARG(a), &st.want)))
				return err;
		} else if (!strcmp(a, "timeout-ms")) {
			if ((err = parse_num("timeout-ms", OPTARG(a), 0, TIMEOUT_MS_MAX, &timeout)))
				return err;
		} else if (!strcmp(a, "serve-puts")) {
			serve = true;
		} else if (!strcmp(a, "skip-old")) {
			skip = true;
		} else {
			return usage_err("unknown events option '%s'", a);
		}
	}
	if ((err = open_rt(argv[0], &rt)))
		return err;
	if (serve && (err = spin_events_serve_puts(rt, true))) {
		spin_close(rt);
		return fail(err);
	}
	/* events queued before we started: consume them silently */
	while (skip && (n = spin_events_poll(rt, NULL, NULL, 0)) > 0)
		;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (timeout)
		deadline = now_ms() + timeout;
	err = 0;
	while (!stop && !(st.want && st.seen >= st.want)) {
		int wait = 200;

		if (deadline) {
			uint64_t t = now_ms();

			if (t >= deadline)
				break;
			if (deadline - t < (uint64_t)wait)
				wait = deadline - t;
		}
		n = spin_events_poll(rt, on_event, &st, wait);
		if (n < 0) {
			err = fail(n);
			break;
		}
	}
	spin_close(rt);
	if (!err && st.want && st.seen < st.want && !stop) {
		errf("%llu of %llu events before the timeout",
			(unsigned long long)st.seen, (unsigned long long)st.want);
		err = SPIN_ETIMEDOUT;
	}
	return err;
}

/* --------------------------------------------------------------- send -- */

/* One received sPIN message, as a line (and a hexdump) or a JSON object. */
static void print_msg(const char *what, const struct sockaddr_in *from, const struct spin_hdr *h,
		      const uint8_t *buf, int n)
{
	char ipb[INET_ADDRSTRLEN];
	size_t shown = verbose ? (size_t)n : (size_t)(n < 64 ? n : 64);

	if (json) {
		jobj(NULL);
		jstr("from", ipstr(from->sin_addr.s_addr, ipb));
		ju64("port", ntohs(from->sin_port));
		ju64("len", n);
		ju64("op", h->op);
		ju64("flags", ntohs(h->flags));
		ju64("pt", ntohs(h->pt_index));
		ju64("src_rank", ntohl(h->src_rank));
		ju64("src_pid", ntohl(h->src_pid));
		ju64("msg_id", ntohl(h->msg_id));
		ju64("match_bits", be64toh(h->match_bits));
		ju64("remote_off", be64toh(h->remote_off));
		ju64("hdr_data", be64toh(h->hdr_data));
		jarr("user_hdr");
		for (int i = 0; i < 4; i++)
			ju64(NULL, be64toh(h->user_hdr[i]));
		jarr_end();
		jhex("data", buf, shown);
		jobj_end();
	} else {
		printf("%s from %s:%u: %s, %d bytes, pt %u bits %#llx rank %u msg %u hdr %#llx\n", what,
		       ipstr(from->sin_addr.s_addr, ipb), ntohs(from->sin_port),
		       h->op == SPIN_OP_ACK ? "ack" : h->op == SPIN_OP_PUT ? "put" :
		       h->op == SPIN_OP_GET ? "get" : h->op == SPIN_OP_REPLY ? "reply" : "op?", n,
		       ntohs(h->pt_index), (unsigned long long)be64toh(h->match_bits),
		       ntohl(h->src_rank), ntohl(h->msg_id),
		       (unsigned long long)be64toh(h->hdr_data));
		hexdump(buf, shown, "  ");
	}
}

/* spinctl recv [on IP] [port N] [count N] [timeout-ms N]: messages sent to
 * this host (by handlers or hosts) that no runtime consumed. */
static int cmd_recv(int argc, char **argv)
{
	const char *bind_ip = NULL;
	uint16_t port = SPIN_DEFAULT_PORT;
	uint64_t count = 1, timeout = 0;
	struct sockaddr_in from;
	struct spin_sock *s;
	struct spin_hdr h;
	uint8_t *buf;
	int err = 0, n;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i];

		if (!strcmp(o, "on")) {
			struct in_addr a;

			bind_ip = OPTARG(o);
			if ((err = parse_ip(bind_ip, &a)))
				return err;
		} else if (!strcmp(o, "port")) {
			if ((err = parse_port("port", OPTARG(o), &port)))
				return err;
		} else if (!strcmp(o, "count")) {
			if ((err = parse_u64("count", OPTARG(o), &count)))
				return err;
		} else if (!strcmp(o, "timeout-ms")) {
			if ((err = parse_num("timeout-ms", OPTARG(o), 0, TIMEOUT_MS_MAX, &timeout)))
				return err;
		} else {
			return usage_err("unknown recv option '%s'", o);
		}
	}
	buf = malloc(SPIN_MAX_MSG);
	if (!buf)
		return fail(-SPIN_EFAIL);
	err = spin_sock_open(bind_ip, port, &s);
	if (err < 0) {
		free(buf);
		return fail(err);
	}
	for (uint64_t k = 0; !count || k < count; k++) {
		n = spin_sock_recv_msg(s, &h, buf, SPIN_MAX_MSG, &from,
				       timeout ? (timeout > INT32_MAX ? INT32_MAX : (int)timeout) : -1);
		if (n < 0) {
			err = fail(n);
			break;
		}
		print_msg("message", &from, &h, buf, n);
		fflush(stdout);
	}
	spin_sock_close(s);
	free(buf);
	return err;
}

/* Addressing and header options that send and get share. */
struct msg_opts {
	struct spin_msg_args a;
	struct sockaddr_in dst;
	const char *src_ip;
	uint16_t port, sport;
	bool have_to, have_pt, have_sport;
};

/* Parse argv[*i] if it is a shared option (advancing *i past its value):
 * 1 if it was one, 0 if not, or a positive SPIN_E* error. */
static int msg_opt(struct msg_opts *m, int argc, char **argv, int *ip)
{
	int i = *ip, err = 0;
	const char *o = argv[i];

#define MOPT(name, parse, dst) else if (!strcmp(o, name)) { err = parse(name, OPTARG(o), dst); }
	if (!strcmp(o, "from")) {
		struct in_addr a;

		m->src_ip = OPTARG(o);
		err = parse_ip(m->src_ip, &a);
	} else if (!strcmp(o, "to")) {
		err = parse_ip(OPTARG(o), &m->dst.sin_addr);
		m->have_to = true;
	} else if (!strcmp(o, "sport")) {
		err = parse_u16r("sport", OPTARG(o), 0, UINT16_MAX, &m->sport);
		m->have_sport = true;
	} else if (!strcmp(o, "pt")) {
		err = parse_u16r("pt", OPTARG(o), 0, UINT16_MAX, &m->a.pt_index);
		m->have_pt = true;
	}
	MOPT("port", parse_port, &m->port)
	MOPT("bits", parse_u64, &m->a.match_bits)
	MOPT("rank", parse_u32, &m->a.src_rank)
	MOPT("pid", parse_u32, &m->a.src_pid)
	MOPT("dst-rank", parse_u32, &m->a.dst_rank)
	MOPT("msg-id", parse_u32, &m->a.msg_id)
	MOPT("hdr-data", parse_u64, &m->a.hdr_data)
	MOPT("remote-off", parse_u64, &m->a.remote_off)
	else
		return 0;
#undef MOPT
	*ip = i;
	return err ? err : 1;
}

/* After parsing: 'to' and 'pt' are required; hand the values out. */
static int msg_opts_finish(const struct msg_opts *m, struct spin_msg_args *a,
			   struct sockaddr_in *dst, const char **src_ip, uint16_t *port,
			   uint16_t *sport, bool *have_sport)
{
	if (!m->have_to)
		return usage_err("missing 'to IP'");
	if (!m->have_pt)
		return usage_err("missing 'pt N'");
	*a = m->a;
	*dst = m->dst;
	*src_ip = m->src_ip;
	*port = m->port;
	*sport = m->sport;
	*have_sport = m->have_sport;
	return 0;
}

static int cmd_send(int argc, char **argv)
{
	struct msg_opts m = {
		.a = { .op = SPIN_OP_PUT }, .dst = { .sin_family = AF_INET },
		.port = SPIN_DEFAULT_PORT,
	};
	struct spin_msg_args a;
	struct sockaddr_in dst, from;
	const char *src_ip = NULL, *hexdata = NULL, *file = NULL;
	uint16_t port = 0, sport = 0;
	bool have_sport = false;
	uint64_t len = 0, reply_ms = 0, v;
	uint8_t *buf = NULL, *rbuf = NULL;
	char ipb[INET_ADDRSTRLEN];
	struct spin_sock *s = NULL;
	struct spin_hdr h;
	size_t blen = 0;
	int err, n;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i];
		int r = msg_opt(&m, argc, argv, &i);

		if (r < 0 || r > 1)
			return r;
		if (r == 1)
			continue;
		if (!strcmp(o, "len")) {
			if ((err = parse_size("len", OPTARG(o), 0, SPIN_MAX_MSG, &len)))
				return err;
		} else if (!strcmp(o, "data")) {
			hexdata = OPTARG(o);
		} else if (!strcmp(o, "file")) {
			file = OPTARG(o);
		} else if (!strcmp(o, "seg")) {
			if ((err = parse_u16r("seg", OPTARG(o), 1, SPIN_MAX_SEG, &m.a.seg_size)))
				return err;
		} else if (!strcmp(o, "user-hdr")) {
			/* 1..4 numbers separated by single commas */
			char *dup = strdup(OPTARG(o)), *tok = dup, *comma;
			int k = 0;

			if (!dup)
				return fail(-SPIN_EFAIL);
			for (;;) {
				comma = strchr(tok, ',');
				if (comma)
					*comma = 0;
				if (k >= 4) {
					free(dup);
					return usage_err("user-hdr takes at most 4 words");
				}
				if ((err = parse_u64("user-hdr", tok, &v))) {
					free(dup);
					return err;
				}
				m.a.user_hdr[k++] = v;
				if (!comma)
					break;
				tok = comma + 1;
			}
			free(dup);
		} else if (!strcmp(o, "ack")) {
			m.a.flags |= SPIN_F_ACK_REQ;
		} else if (!strcmp(o, "reply-timeout-ms")) {
			if ((err = parse_num("reply-timeout-ms", OPTARG(o), 0, TIMEOUT_MS_MAX, &reply_ms)))
				return err;
		} else {
			return usage_err("unknown send option '%s'", o);
		}
	}
	if ((err = msg_opts_finish(&m, &a, &dst, &src_ip, &port, &sport, &have_sport)))
		return err;
	if (!!hexdata + !!file + !!len > 1)
		return usage_err("give only one of len, data and file");
	if (a.seg_size > SPIN_MAX_SEG)
		return usage_err("seg must be at most %d", SPIN_MAX_SEG);
	if (hexdata) {
		buf = malloc(strlen(hexdata) / 2 + 1);
		if (!buf)
			return SPIN_EFAIL;
		if ((err = parse_hex("data", hexdata, buf, strlen(hexdata) / 2 + 1, &blen)))
			goto out;
	} else if (file) {
		if ((err = read_file("file", file, &buf, SPIN_MAX_MSG, &blen)))
			goto out;
	} else {
		if (len > SPIN_MAX_MSG) {
			err = usage_err("len must be at most %u", SPIN_MAX_MSG);
			goto out;
		}
		blen = len;
		buf = malloc(blen + 1);
		if (!buf) {
			err = SPIN_EFAIL;
			goto out;
		}
		for (size_t i = 0; i < blen; i++)
			buf[i] = i & 0xff;
	}
	dst.sin_port = htons(port);
	/* a reply from a handler is sent to the peer's spin port */
	if (!have_sport && reply_ms)
		sport = port;
	err = spin_sock_open(src_ip, sport, &s);
	if (err) {
		err = fail(err);
		goto out;
	}
	err = spin_sock_send(s, &dst, &a, buf, blen, NULL);
	if (err) {
		err = fail(err);
		goto out;
	}
	if (!reply_ms) {
		if (json) {
			jobj(NULL);
			jstr("to", ipstr(dst.sin_addr.s_addr, ipb));
			ju64("port", port);
			ju64("len", blen);
			jbool("sent", true);
			jobj_end();
		} else if (verbose) {
			printf("sent %zu bytes to %s:%u pt %u bits %#llx\n", blen,
			       ipstr(dst.sin_addr.s_addr, ipb), port, a.pt_index,
			       (unsigned long long)a.match_bits);
		}
		err = 0;
		goto out;
	}
	rbuf = malloc(SPIN_MAX_MSG);
	if (!rbuf) {
		err = SPIN_EFAIL;
		goto out;
	}
	n = spin_sock_recv_msg(s, &h, rbuf, SPIN_MAX_MSG, &from, reply_ms > INT32_MAX ? INT32_MAX :
			       (int)reply_ms);
	if (n < 0) {
		err = fail(n);
		goto out;
	}
	print_msg("reply", &from, &h, rbuf, n);
	err = 0;
out:
	if (s)
		spin_sock_close(s);
	free(buf);
	free(rbuf);
	return err;
}

/*
 * spinctl get [from SRCIP] to IP [port N] [sport N] pt N [bits X] len N
 *             [remote-off N] [rank R] [pid P] [dst-rank R] [msg-id N]
 *             [hdr-data X] [timeout-ms N]
 * A Portals get from a UDP socket: one GET, then the REPLY with its id.
 */
static int cmd_get(int argc, char **argv)
{
	struct msg_opts m = {
		.a = { .op = SPIN_OP_GET }, .dst = { .sin_family = AF_INET },
		.port = SPIN_DEFAULT_PORT,
	};
	struct spin_msg_args a;
	struct sockaddr_in dst, from;
	const char *src_ip = NULL;
	uint16_t port = 0, sport = 0;
	bool have_len = false, have_sport = false;
	uint64_t len = 0, timeout = 2000;
	struct spin_sock *s = NULL;
	uint8_t *rbuf = NULL;
	struct spin_hdr h;
	uint32_t id;
	uint64_t deadline;
	int err, n;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i];
		int r = msg_opt(&m, argc, argv, &i);

		if (r < 0 || r > 1)
			return r;
		if (r == 1)
			continue;
		if (!strcmp(o, "len")) {
			if ((err = parse_size("len", OPTARG(o), 0, SPIN_MAX_MSG, &len)))
				return err;
			have_len = true;
		} else if (!strcmp(o, "timeout-ms")) {
			if ((err = parse_num("timeout-ms", OPTARG(o), 0, TIMEOUT_MS_MAX, &timeout)))
				return err;
		} else {
			return usage_err("unknown get option '%s'", o);
		}
	}
	if ((err = msg_opts_finish(&m, &a, &dst, &src_ip, &port, &sport, &have_sport)))
		return err;
	if (!have_len)
		return usage_err("missing 'len N'");
	if (len > SPIN_MAX_MSG)
		return usage_err("len must be at most %u", SPIN_MAX_MSG);
	if (!timeout || timeout > INT32_MAX)
		timeout = INT32_MAX;
	dst.sin_port = htons(port);
	/* the reply goes to the initiator rank's spin port */
	err = spin_sock_open(src_ip, have_sport ? sport : port, &s);
	if (err) {
		err = fail(err);
		goto out;
	}
	rbuf = malloc(len ? len : 1);
	if (!rbuf) {
		err = SPIN_EFAIL;
		goto out;
	}
	err = spin_sock_send_get(s, &dst, &a, (uint32_t)len, &id);
	if (err) {
		err = fail(err);
		goto out;
	}
	/* other messages that arrive meanwhile are skipped */
	deadline = now_ms() + timeout;
	for (;;) {
		uint64_t t = now_ms();

		if (t >= deadline) {
			errf("get: no reply to message %u within %llu ms", id,
				(unsigned long long)timeout);
			err = SPIN_ETIMEDOUT;
			goto out;
		}
		n = spin_sock_recv_msg(s, &h, rbuf, len ? len : 1, &from, (int)(deadline - t));
		if (n == -SPIN_ENOSPC)
			continue;
		if (n < 0) {
			err = fail(n);
			goto out;
		}
		if (h.op == SPIN_OP_REPLY && ntohl(h.msg_id) == id)
			break;
	}
	print_msg("reply", &from, &h, rbuf, n);
	err = 0;
	{
		/* a negative reply (wire.h): the target could not deliver */
		uint64_t f = be64toh(h.user_hdr[1]);

		if (f) {
			fprintf(stderr, "spinctl: get: the target answered with failure '%s'%s\n",
				ev_fail((uint32_t)f), f == SPIN_FAIL_OP_VIOLATION ?
				" (its entry does not allow the get, or it is longer than the target's get-max: ask for less)" : "");
			err = (f == SPIN_FAIL_NO_MATCH || f == SPIN_FAIL_PT_DISABLED ||
			       f == SPIN_FAIL_NO_TARGET) ? SPIN_ENOENT :
			      f == SPIN_FAIL_OP_VIOLATION ? SPIN_EPERM : SPIN_EFAIL;
		}
	}
out:
	if (s)
		spin_sock_close(s);
	free(rbuf);
	return err;
}

/* --------------------------------------------------------------- help -- */

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const char help_attach[] =
	"spinctl attach IFACE [generic] [port N] [rank R] [pid P] [pages N] [timeout-ms N]\n"
	"          [no-dedup] [wake-direct] [open] [key K] [auth-key HEX|FILE] [get-max N]\n"
	"          [obj FILE]\n"
	"    load the runtime, pin it and attach it to IFACE (native XDP unless 'generic');\n"
	"    wake-direct: the packet path wakes waiting processes itself, not a work item;\n"
	"    open: take packets from any address; key K: only packets with the job key K\n"
	"    (1..0xffffffff; Portals processes take it from $SPIN_JOB_KEY);\n"
	"    auth-key: only packets tagged with this 128-bit key (32 hex digits, or a\n"
	"    file mode 0600 holding them; Portals processes: $SPIN_AUTH_KEY);\n"
	"    get-max N: refuse a get that would make the runtime send more than N bytes\n"
	"    (1..2^30, default 2^30; entries of Portals processes: their process answers)\n";
static const char help_detach[] =
	"spinctl detach IFACE\n"
	"    detach the runtime from IFACE and remove every pin (handlers too)\n";
static const char help_status[] =
	"spinctl status [IFACE]\n"
	"    ifindex, mode, prog id, rank, pid, ip, mac, port, pages, gen, wake;\n"
	"    without IFACE: every runtime on the host, in every network namespace\n";
static const char help_batch[] =
	"spinctl batch FILE|-\n"
	"    run FILE's commands (one per line as after 'spinctl', # comments, \"...\"\n"
	"    and '...' quote) in order; stop at the first that fails, with its exit\n"
	"    code, detaching the runtimes this batch attached\n";
static const char help_handler[] =
	"spinctl handler load IFACE FILE [name NAME] [slot N]   (NAME: FILE without .bpf.o;\n"
	"    N: the process slot whose window it and its finish stage reach, 0 by default)\n"
	"spinctl handler list IFACE\n"
	"spinctl handler unload IFACE NAME\n"
	"spinctl handler push IFACE FILE rank R[,R...] entry ID [hpu N] [host N]\n"
	"spinctl handler unship|query IFACE rank R[,R...] entry ID\n"
	"    push: ship FILE to the ranks' Portals processes (they need $SPIN_SHIP_ALLOW),\n"
	"    installed on this rank's entry ID; it stays after spinctl exits\n"
	"    (docs/shipping.md); needs the job ($SPIN_HOSTFILE, $SPIN_RANK)\n"
	"spinctl handler serve IFACE allow R[,R...]|all [for SECONDS]\n"
	"    be this rank's Portals process on IFACE and take shipped handlers from\n"
	"    the ranks allowed until SIGINT/SIGTERM (or SECONDS); they go when it ends\n"
	"spinctl handler check FILE\n"
	"    verify FILE offline (its own temporary maps, nothing attached): the\n"
	"    verifier's verdict and instruction counts\n";
static const char help_pt[] =
	"spinctl pt alloc IFACE INDEX [flowctrl]\n"
	"spinctl pt free|enable|disable IFACE INDEX\n"
	"spinctl pt list IFACE\n";

/* ---------------------------------------------------------- window -- */

/* USER: a name, or a uid (decimal or 0x hex); its group with it. */
static int parse_user(const char *s, uint32_t *uid, uint32_t *gid)
{
	struct passwd *pw = getpwnam(s);

	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return usage_err("USER: no user '%s' (a name, or a uid)", s);
	if (parse_u32r("USER", s, 0, UINT32_MAX - 1, uid))
		return SPIN_EUSAGE;
	pw = getpwuid(*uid);
	*gid = pw ? pw->pw_gid : *uid;
	return 0;
}

static int window_grant(int argc, char **argv)
{
	uint32_t slot = 0, uid = 0, gid = 0;
	struct spin_rt *rt;
	int err;

	NEED(3, "IFACE SLOT USER");
	if (argc > 3)
		return usage_err("unexpected argument '%s'", argv[3]);
	if ((err = parse_u32r("SLOT", argv[1], 1, SPIN_MAX_PROCS - 1, &slot)) ||
	    (err = parse_user(argv[2], &uid, &gid)))
		return err;
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_win_grant(rt, slot, uid, gid);
	spin_close(rt);
	if (err)
		return fail(err);
	if (json) {
		jobj(NULL);
		ju64("slot", slot);
		ju64("uid", uid);
		jobj_end();
	}
	return 0;
}

static int window_revoke(int argc, char **argv)
{
	uint32_t slot = 0;
	struct spin_rt *rt;
	int err;

	NEED(2, "IFACE SLOT");
	if (argc > 2)
		return usage_err("unexpected argument '%s'", argv[2]);
	if ((err = parse_u32r("SLOT", argv[1], 1, SPIN_MAX_PROCS - 1, &slot)))
		return err;
	if ((err = open_rt(argv[0], &rt)))
		return err;
	err = spin_win_revoke(rt, slot);
	spin_close(rt);
	return err ? fail(err) : 0;
}

/* window read IFACE SLOT OFF LEN / window write IFACE SLOT OFF HEX: the
 * granted window, as its user (no runtime pin needed) */
static int window_rw(int argc, char **argv, bool wr)
{
	uint32_t slot = 0;
	uint64_t off = 0, len = 0;
	uint8_t buf[4096], *m;
	size_t wlen = 0, n = 0;
	int err;

	NEED(4, wr ? "IFACE SLOT OFF HEX" : "IFACE SLOT OFF LEN");
	if (argc > 4)
		return usage_err("unexpected argument '%s'", argv[4]);
	if ((err = check_ifname("IFACE", argv[0])) ||
	    (err = parse_u32r("SLOT", argv[1], 1, SPIN_MAX_PROCS - 1, &slot)) ||
	    (err = parse_size("OFF", argv[2], 0, SPIN_MAX_HOST_BYTES, &off)))
		return err;
	if (wr) {
		if ((err = parse_hex("HEX", argv[3], buf, sizeof(buf), &n)))
			return err;
		len = n;
	} else if ((err = parse_size("LEN", argv[3], 1, sizeof(buf), &len))) {
		return err;
	}
	if ((err = spin_win_open(argv[0], slot, (void **)&m, &wlen)))
		return fail(err);
	if (off > wlen || len > wlen - off) {
		spin_win_close(m, wlen);
		return usage_err("[%" PRIu64 ", +%" PRIu64 ") is outside the %zu-byte window of slot %u",
				 off, len, wlen, slot);
	}
	if (wr) {
		memcpy(m + off, buf, len);
	} else {
		for (uint64_t i = 0; i < len; i++)
			printf("%02x", m[off + i]);
		printf("\n");
	}
	spin_win_close(m, wlen);
	return 0;
}

static int window_read(int argc, char **argv) { return window_rw(argc, argv, false); }
static int window_write(int argc, char **argv) { return window_rw(argc, argv, true); }

static const char help_me[] =
	"spinctl me append IFACE pt N [bits X] [ignore X] [rank R|any] [pid P|any]\n"
	"          [list priority|overflow] [op put|get|put,get] [use-once] [no-truncate]\n"
	"          [no-events] [xsk]\n"
	"          [handler NAME] [len N] [off N] [hhost-len N] [hhost-off N]\n"
	"          [state HEX | state-file F] [hpu-size N] [user-ptr X]\n"
	"                                                      prints the ME index\n"
	"spinctl me list IFACE\n"
	"spinctl me show IFACE INDEX [state-bytes N]\n"
	"spinctl me unlink IFACE INDEX\n";
static const char help_window[] =
	"spinctl window grant IFACE SLOT USER                 root: slot SLOT's host window to USER\n"
	"spinctl window revoke IFACE SLOT\n"
	"spinctl window read IFACE SLOT OFF LEN               as its user: LEN bytes (hex)\n"
	"spinctl window write IFACE SLOT OFF HEX\n";
static const char help_peer[] =
	"spinctl peer add IFACE RANK IP [mac M] [port N] [dev IF] [pid P]\n"
	"spinctl peer list IFACE\n"
	"spinctl peer del IFACE RANK\n"
	"spinctl peer load IFACE [FILE]   every host of a hostfile (default $SPIN_HOSTFILE)\n";
static const char help_job[] =
	"spinctl job [FILE]\n"
	"    this process's rank, the job size and the hosts, from the environment\n"
	"    (SPIN_RANK/SIZE, PMI_RANK/SIZE, OMPI_COMM_WORLD_RANK/SIZE) and the hostfile\n"
	"    FILE (default $SPIN_HOSTFILE); '*' marks this process\n";
static const char help_stats[] =
	"spinctl stats IFACE [reset] [prom]\n"
	"    counters summed over CPUs; drop reasons by name (all of them with -v);\n"
	"    prom: Prometheus text format with the programs' run counts, run time\n"
	"    (kernel.bpf_stats_enabled) and instruction counts\n";
static const char help_events[] =
	"spinctl events IFACE [count N] [timeout-ms N] [serve-puts] [skip-old]\n"
	"    follow completion events, one line (or JSON object) each; skip-old first\n"
	"    discards events queued before the command started\n";
static const char help_send[] =
	"spinctl send [from SRCIP] to IP [port N] [sport N] pt N [bits X]\n"
	"          [len N | data HEX | file F] [rank R] [pid P] [dst-rank R] [seg N] [msg-id N]\n"
	"          [hdr-data X] [remote-off N] [user-hdr A,B,C,D] [ack] [reply-timeout-ms N]\n"
	"    send one sPIN message from a UDP socket; with reply-timeout-ms wait for\n"
	"    one reply message (on port N unless sport is given) and print it\n";
static const char help_get[] =
	"spinctl get [from SRCIP] to IP [port N] [sport N] pt N [bits X] len N [remote-off N]\n"
	"          [rank R] [pid P] [dst-rank R] [msg-id N] [hdr-data X] [timeout-ms N]\n"
	"    a Portals get from a UDP socket (bound to port N unless sport is given):\n"
	"    ask the entry for len bytes at remote-off, wait for the reply (default\n"
	"    2000 ms; exit 12 on timeout) and print it\n";
static const char help_recv[] =
	"spinctl recv [on IP] [port N] [count N (0: forever)] [timeout-ms N]\n"
	"    receive sPIN messages on a UDP socket (for hosts without a runtime) and print them\n";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: spinctl [OPTIONS] OBJECT VERB [ARGS]\n"
		"       spinctl OBJECT help\n"
		"OBJECT := attach | detach | status | stats | handler | pt | me | peer | job | events |\n"
		"          send | get | recv | batch | help\n"
		"OPTIONS := -j/--json | -p/--pretty (JSON; errors as {\"error\": ...}) |\n"
		"           -v/--verbose (repeat for libbpf debug) | -V/--version | -h/--help\n"
		"           anywhere on the line; -- ends them\n"
		"Objects and verbs may be abbreviated to a prefix that names only one of them\n"
		"(stat is ambiguous; statu = status, ha li = handler list, me a = me append).\n"
		"Numbers are decimal (no leading zeros) or 0x hex.\n\n"
		"%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s\n"
		"Environment: SPIN_BPFFS (default /sys/fs/bpf), SPIN_OBJ_DIR (runtime object),\n"
		"SPIN_HOSTFILE, SPIN_RANK, SPIN_SIZE (and the launcher's PMI_*, OMPI_COMM_WORLD_*).\n"
		"Exit code: 0, 2 usage, or the SPIN_E* error (see docs/spinctl.md).\n",
		help_attach, help_detach, help_status, help_stats, help_handler, help_pt, help_me,
		help_peer, help_window, help_job, help_events, help_send, help_get, help_recv, help_batch);
}

static const struct cmd handler_cmds[] = {
	{ "list", handler_list }, { "load", handler_load }, { "unload", handler_unload },
	{ "push", handler_push }, { "unship", handler_unship }, { "query", handler_query },
	{ "serve", handler_serve }, { "check", handler_check }, {}
};
static const struct cmd pt_cmds[] = {
	{ "list", pt_list }, { "alloc", pt_alloc }, { "free", pt_free }, { "enable", pt_enable },
	{ "disable", pt_disable }, {}
};
static const struct cmd me_cmds[] = {
	{ "list", me_list }, { "append", me_append }, { "show", me_show }, { "unlink", me_unlink }, {}
};
static const struct cmd window_cmds[] = {
	{ "grant", window_grant }, { "revoke", window_revoke }, { "read", window_read },
	{ "write", window_write }, {}
};
static const struct cmd peer_cmds[] = {
	{ "list", peer_list }, { "add", peer_add }, { "del", peer_del }, { "delete", peer_del },
	{ "load", peer_load }, {}
};

/*
 * The command word names: an exact name, else the only command it is a
 * prefix of (names of one function, like del and delete, count once).  A
 * prefix of several is an error (exit 2) listing them, not a guess.
 */
static int match(const struct cmd *t, const char *what, const char *word, const struct cmd **out)
{
	const struct cmd *found = NULL;
	char names[256] = "";
	int n = 0;

	*out = NULL;
	for (const struct cmd *c = t; c->name; c++) {
		if (!strcmp(c->name, word)) {
			*out = c;
			return 0;
		}
	}
	for (const struct cmd *c = t; c->name; c++) {
		if (!is_prefix(word, c->name))
			continue;
		if (found && found->fn == c->fn)
			continue;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 n ? ", " : "", c->name);
		if (!found)
			found = c;
		n++;
	}
	if (n == 1) {
		*out = found;
		return 0;
	}
	if (n > 1)
		return usage_err("ambiguous %s '%s': %s", what, word, names);
	return usage_err("unknown %s '%s'", what, word);
}

static int dispatch(const struct cmd *t, const char *help, int argc, char **argv)
{
	const struct cmd *c;
	char what[64];
	int err;

	if (argc < 1 || is_prefix(argv[0], "help")) {
		fputs(help, argc < 1 ? stderr : stdout);
		return argc < 1 ? SPIN_EUSAGE : 0;
	}
	snprintf(what, sizeof(what), "%s verb", cur_obj);
	if ((err = match(t, what, argv[0], &c)))
		return err;
	return c->fn(argc - 1, argv + 1);
}

static int do_handler(int argc, char **argv) { return dispatch(handler_cmds, help_handler, argc, argv); }
static int do_pt(int argc, char **argv) { return dispatch(pt_cmds, help_pt, argc, argv); }
static int do_me(int argc, char **argv) { return dispatch(me_cmds, help_me, argc, argv); }
static int do_peer(int argc, char **argv) { return dispatch(peer_cmds, help_peer, argc, argv); }
static int do_window(int argc, char **argv) { return dispatch(window_cmds, help_window, argc, argv); }

/* Objects without verbs: "spinctl attach help" shows their help. */
#define SIMPLE(fn, help)						\
static int do_##fn(int argc, char **argv)				\
{									\
	if (argc >= 1 && !strcmp(argv[0], "help")) {			\
		fputs(help, stdout);					\
		return 0;						\
	}								\
	return cmd_##fn(argc, argv);					\
}
SIMPLE(attach, help_attach)
SIMPLE(detach, help_detach)
SIMPLE(status, help_status)
SIMPLE(stats, help_stats)
SIMPLE(events, help_events)
SIMPLE(send, help_send)
SIMPLE(recv, help_recv)
SIMPLE(get, help_get)
SIMPLE(job, help_job)

static int do_help(int argc, char **argv)
{
	usage(stdout);
	return 0;
}

static int do_version(int argc, char **argv)
{
	if (json) {
		jobj(NULL);
		jstr("version", SPINCTL_VERSION);
		ju64("wire_version", SPIN_VERSION);
		ju64("abi_version", SPIN_ABI_VERSION);
		jstr("libbpf", libbpf_version_string());
		jobj_end();
	} else {
		printf("spinctl %s (sPIN wire version %d, ABI %d, libbpf %s)\n", SPINCTL_VERSION,
		       SPIN_VERSION, SPIN_ABI_VERSION, libbpf_version_string());
	}
	return 0;
}

static int do_batch(int argc, char **argv);

/* Abbreviations: an exact name, or a prefix of only one of them. */
static const struct cmd objects[] = {
	{ "status", do_status }, { "stats", do_stats }, { "attach", do_attach },
	{ "detach", do_detach }, { "handler", do_handler }, { "me", do_me }, { "pt", do_pt },
	{ "peer", do_peer }, { "window", do_window }, { "job", do_job }, { "events", do_events }, { "send", do_send }, { "recv", do_recv },
	{ "get", do_get }, { "batch", do_batch },
	{ "help", do_help },
	{ "version", do_version }, {}
};

/* ------------------------------------------------------------ batch -- */

#define BATCH_LINE	4096
#define BATCH_WORDS	128

/* Split a line into words: blanks separate them, "..." and '...' quote
 * (backslash escapes " and \ inside "..." and anything outside quotes), #
 * at the start of a word starts a comment.  Returns the number of words,
 * or -1 with *why set. */
static int batch_split(char *line, char **w, int max, const char **why)
{
	char *in = line, *out = line;
	int n = 0;

	for (;;) {
		while (*in == ' ' || *in == '\t' || *in == '\r' || *in == '\n')
			in++;
		if (!*in || *in == '#')
			return n;
		if (n == max) {
			*why = "too many words";
			return -1;
		}
		w[n++] = out;
		while (*in && *in != ' ' && *in != '\t' && *in != '\r' && *in != '\n') {
			if (*in == '\'') {
				in++;
				while (*in && *in != '\'')
					*out++ = *in++;
				if (!*in) {
					*why = "unterminated '";
					return -1;
				}
				in++;
			} else if (*in == '"') {
				in++;
				while (*in && *in != '"') {
					if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
						in++;
					*out++ = *in++;
				}
				if (!*in) {
					*why = "unterminated \"";
					return -1;
				}
				in++;
			} else if (*in == '\\' && in[1]) {
				in++;
				*out++ = *in++;
			} else {
				*out++ = *in++;
			}
		}
		/* out never passes in: the terminator takes the blank's
		 * place (or the string's own) */
		if (*in)
			in++;
		*out++ = 0;
	}
}

static int batch_depth;

/*
 * spinctl batch FILE|-: one command per line, as after "spinctl" (the
 * options of the batch command line apply to all), stopping at the first
 * that fails with its exit code.  A batch that fails detaches the
 * runtimes it attached itself (a later line failed: nothing it set up on
 * them stays); what it changed on runtimes attached before stays.
 */
static int do_batch(int argc, char **argv)
{
	char line[BATCH_LINE + 2], *w[BATCH_WORDS];
	char attached[16][IF_NAMESIZE];
	const char *file, *why = NULL;
	int nattached = 0, lineno = 0, err = 0, n = 0;
	FILE *f;

	if (argc >= 1 && !strcmp(argv[0], "help")) {
		fputs(help_batch, stdout);
		return 0;
	}
	NEED(1, "FILE");
	if (argc > 1)
		return usage_err("unexpected argument '%s'", argv[1]);
	if (batch_depth)
		return usage_err("batch inside a batch");
	file = argv[0];
	f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	if (!f) {
		errf("batch file %s: %s", file, strerror(errno));
		return errno == ENOENT ? SPIN_ENOENT : errno == EACCES ? SPIN_EPERM : SPIN_EFAIL;
	}
	batch_depth++;
	while (fgets(line, sizeof(line), f)) {
		const struct cmd *c = NULL;
		bool own = true;	/* the batch's error, not a command's */

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			cur_obj = "batch";
			err = usage_err("%s:%d: line longer than %d bytes", file, lineno, BATCH_LINE);
		} else if ((n = batch_split(line, w, BATCH_WORDS, &why)) < 0) {
			cur_obj = "batch";
			err = usage_err("%s:%d: %s", file, lineno, why);
		} else if (n == 0) {
			continue;
		} else {
			cur_obj = "";
			err = match(objects, "object", w[0], &c);
			own = false;
			if (!err && c->fn == do_batch) {
				cur_obj = "batch";
				err = usage_err("%s:%d: batch inside a batch", file, lineno);
				own = true;
			} else if (!err) {
				cur_obj = c->name;
				err = c->fn(n - 1, w + 1);
			}
		}
		if (err) {
			/* one line of the batch's: which line failed (unless the
			 * batch said so itself), what it detached */
			bool said = false;

			if (!own) {
				fprintf(stderr, "spinctl: %s:%d: '%s' failed (exit %d)", file, lineno,
					w[0], err);
				said = true;
			}
			for (int i = nattached - 1; i >= 0; i--) {
				if (spin_detach(attached[i]))
					continue;
				if (!said)
					fprintf(stderr, "spinctl: %s:%d: stopped", file, lineno);
				fprintf(stderr, "; detached %s (attached by this batch)", attached[i]);
				said = true;
			}
			if (said)
				fputc('\n', stderr);
			break;
		}
		if (c->fn == do_attach && n >= 2 && nattached < 16 && strlen(w[1]) < IF_NAMESIZE)
			strcpy(attached[nattached++], w[1]);
	}
	if (!err && ferror(f)) {
		errf("batch file %s: %s", file, strerror(errno));
		err = SPIN_EIO;
	}
	if (f != stdin)
		fclose(f);
	batch_depth--;
	return err;
}

static const struct option long_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "pretty", no_argument, NULL, 'p' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{}
};

/* getopt_long took ARG for an unknown or ambiguous option. */
static int bad_option(const char *arg, int opt)
{
	char cands[128] = "";
	const char *name;
	size_t n;
	int hits = 0;

	if (strncmp(arg, "--", 2))
		return opt ? usage_err("unknown option '-%c'", opt) :
			     usage_err("unknown option '%s'", arg);
	name = arg + 2;
	n = strcspn(name, "=");
	for (const struct option *o = long_opts; o->name; o++) {
		if (!strncmp(o->name, name, n)) {
			snprintf(cands + strlen(cands), sizeof(cands) - strlen(cands), "%s--%s",
				 hits++ ? ", " : "", o->name);
		}
	}
	if (hits > 1)
		return usage_err("ambiguous option '%s': %s", arg, cands);
	if (hits == 1 && name[n] == '=')
		return usage_err("option '--%.*s' takes no value", (int)n, name);
	return usage_err("unknown option '%s'", arg);
}

int main(int argc, char **argv)
{
	bool want_version = false, want_help = false;
	char **opts, **rest;
	int nopt = 0, nrest = 0;
	const struct cmd *c;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * Options anywhere: they are taken out of the line first, the rest
	 * keeps its order.  An argument of '-' and a digit is a value (a
	 * malformed number, "port -1"), not an option; no option takes a
	 * value; "--" ends the options.
	 */
	opts = calloc(argc + 1, sizeof(*opts));
	rest = calloc(argc + 1, sizeof(*rest));
	if (!opts || !rest) {
		errf("out of memory");
		return SPIN_EFAIL;
	}
	opts[nopt++] = argv[0];
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (++i < argc)
				rest[nrest++] = argv[i];
			break;
		}
		if (a[0] == '-' && a[1] && !isdigit((unsigned char)a[1]))
			opts[nopt++] = argv[i];
		else
			rest[nrest++] = argv[i];
	}
	opterr = 0;	/* our own one-line messages */
	for (;;) {
		int o = getopt_long(nopt, opts, "+:jpvVh", long_opts, NULL);

		if (o == -1)
			break;
		switch (o) {
		case 'j': json = 1; break;
		case 'p': json = pretty = 1; break;
		case 'v': verbose++; break;
		case 'V': want_version = true; break;
		case 'h': want_help = true; break;
		default:
			cur_obj = "";
			return bad_option(opts[optind - 1], optopt);
		}
	}
	if (want_help) {
		usage(stdout);
		return 0;
	}
	if (want_version)
		return do_version(0, NULL);
	spin_set_verbose(verbose);
	if (nrest == 0) {
		usage(stderr);
		return SPIN_EUSAGE;
	}
	{
		int err = match(objects, "object", rest[0], &c);

		if (err)
			return err;
	}
	cur_obj = c->name;
	return c->fn(nrest - 1, rest + 1);
}
