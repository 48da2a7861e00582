// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin jobs: this process's rank, the job size and every host's address,
 * from a hostfile and/or the launcher's environment, and the peers that
 * follow from them.
 *
 * Hostfile (the argument, else $SPIN_HOSTFILE): one host per line, '#'
 * starts a comment, blank lines are ignored.
 *
 *     IP [mac=M] [port=P]                 rank = index among the host lines
 *     rank=N ip=A [mac=M] [port=P]        (rank= may be left out: the index)
 *
 * Rank: $SPIN_RANK, $PMI_RANK, $OMPI_COMM_WORLD_RANK (the first one set),
 * else the one host line naming an IPv4 address of this host.  Size:
 * $SPIN_SIZE, $PMI_SIZE, $OMPI_COMM_WORLD_SIZE, else the number of hosts;
 * with a hostfile both must agree and the ranks must be 0..size-1, each
 * once.  Errors are one line naming file:line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libspin_internal.h"

#define JOB_NVARS SPIN_JOB_NVARS
const char *const spin_job_rank_vars[SPIN_JOB_NVARS] = {
	"SPIN_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK",
};
const char *const spin_job_size_vars[SPIN_JOB_NVARS] = {
	"SPIN_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
};
#define rank_vars spin_job_rank_vars
#define size_vars spin_job_size_vars

#define LINE_FORMS "a host line is 'IP [mac=M] [port=P]' or 'rank=N ip=A [mac=M] [port=P]'"

/* A decimal number without sign, <= max. */
static bool parse_dec(const char *s, uint64_t max, uint32_t *v)
{
	uint64_t x = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
		if (x > max)
			return false;
	}
	*v = (uint32_t)x;
	return true;
}

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Six groups of one or two hex digits separated by ':' (no signs, spaces
 * or 0x, which sscanf's %x would take). */
bool spin_mac_parse(const char *s, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++) {
		int hi = hexdigit(s[0]), lo;

		if (hi < 0)
			return false;
		lo = hexdigit(s[1]);
		if (lo >= 0) {
			mac[i] = (uint8_t)(hi << 4 | lo);
			s += 2;
		} else {
			mac[i] = (uint8_t)hi;
			s += 1;
		}
		if (i < 5 && *s++ != ':')
			return false;
	}
	return *s == '\0';
}

int spin_job_key_parse(const char *s, uint32_t *key)
{
	uint64_t x = 0;
	uint32_t v;
	int d, n = 0;

	if (!s)
		return -SPIN_EUSAGE;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (s += 2; *s && (d = hexdigit(*s)) >= 0 && n < 9; s++, n++)
			x = x << 4 | (uint64_t)d;
		if (*s || !n || n > 8 || !x)
			return -SPIN_EUSAGE;
		*key = (uint32_t)x;
		return 0;
	}
	if (s[0] == '0' || !parse_dec(s, UINT32_MAX, &v) || !v)
		return -SPIN_EUSAGE;
	*key = v;
	return 0;
}

int spin_job_key_env(uint32_t *key)
{
	const char *e = getenv("SPIN_JOB_KEY");

	*key = 0;
	if (!e || !*e)
		return 0;
	if (spin_job_key_parse(e, key))
		return spin_seterr(SPIN_EUSAGE, "SPIN_JOB_KEY '%.40s': give 0x and 1 to 8 hex digits, or a decimal number, not 0",
				   e);
	return 0;
}

/* 32 hex digits (0x optional), nothing else: the key's bytes in order. */
static bool auth_hex(const char *s, struct spin_auth *a)
{
	uint8_t b[16];
	int hi, lo;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (int i = 0; i < 16; i++) {
		if ((hi = hexdigit(s[2 * i])) < 0 || (lo = hexdigit(s[2 * i + 1])) < 0)
			return false;
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	if (s[32])
		return false;
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < 8; i++) {
		a->k0 |= (uint64_t)b[i] << (8 * i);
		a->k1 |= (uint64_t)b[8 + i] << (8 * i);
	}
	a->on = 1;
	return true;
}

int spin_auth_key_parse(const char *s, struct spin_auth *a)
{
	char line[80];
	struct stat sb;
	ssize_t n;
	int fd;

	if (!s || !a)
		return spin_seterr(SPIN_EUSAGE, "auth key: none given");
	if (!auth_hex(s, a)) {
		bool hexish = *s && strspn(s, "0123456789abcdefABCDEFxX") == strlen(s);

		/* not a key: a file that holds one */
		if (hexish || !*s)
			return spin_seterr(SPIN_EUSAGE, "auth key '%.40s': give 32 hex digits (128 bits) or a key file",
					   s);
		fd = open(s, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return spin_seterr(SPIN_EUSAGE, "auth key file %.200s: %s (give 32 hex digits or a key file)",
					   s, strerror(errno));
		if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
			close(fd);
			return spin_seterr(SPIN_EUSAGE, "auth key file %.200s: not a regular file", s);
		}
		if (sb.st_mode & 077) {
			close(fd);
			return spin_seterr(SPIN_EUSAGE, "auth key file %.200s is readable or writable by others: run 'chmod 600 %.200s'",
					   s, s);
		}
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
		if (n < 0)
			n = 0;
		line[n] = 0;
		line[strcspn(line, "\r\n")] = 0;
		if (!auth_hex(line, a))
			return spin_seterr(SPIN_EUSAGE, "auth key file %.200s: its first line must be 32 hex digits", s);
	}
	if (!a->k0 && !a->k1) {
		a->on = 0;
		return spin_seterr(SPIN_EUSAGE, "auth key: all zero, give a random one (e.g. 'head -c16 /dev/urandom | xxd -p')");
	}
	return 0;
}

int spin_auth_key_env(struct spin_auth *a)
{
	const char *e = getenv("SPIN_AUTH_KEY");

	memset(a, 0, sizeof(*a));
	if (!e || !*e)
		return 0;
	if (spin_auth_key_parse(e, a)) {
		char why[256];

		snprintf(why, sizeof(why), "%s", spin_errmsg());
		memset(a, 0, sizeof(*a));
		return spin_seterr(SPIN_EUSAGE, "SPIN_AUTH_KEY: %s", why);
	}
	return 0;
}

static bool parse_ip(const char *s, struct in_addr *a)
{
	return inet_pton(AF_INET, s, a) == 1 && a->s_addr != 0;
}

/*
 * The first variable of vars that is set (and not empty): its name in
 * *name and its value in *v; *name is NULL when none is set.
 */
static int env_u32(const char *const vars[JOB_NVARS], const char **name, uint32_t *v)
{
	*name = NULL;
	for (int i = 0; i < JOB_NVARS; i++) {
		const char *s = getenv(vars[i]);

		if (!s || !*s)
			continue;
		*name = vars[i];
		if (!parse_dec(s, UINT32_MAX, v))
			return spin_seterr(SPIN_EUSAGE, "%s='%s' is not a number", vars[i], s);
		return 0;
	}
	return 0;
}

/* One host line (comment already cut off, not blank); idx: its index. */
static int parse_host(const char *path, unsigned int ln, char *line, uint32_t idx,
		      struct spin_job_host *h)
{
	enum { K_RANK = 1, K_IP = 2, K_MAC = 4, K_PORT = 8 };
	unsigned int seen = 0;
	char *save = NULL, *tok;
	bool first = true;

	memset(h, 0, sizeof(*h));
	for (tok = strtok_r(line, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save), first = false) {
		char *val = strchr(tok, '=');
		unsigned int k;
		uint32_t v;

		if (!val) {
			if (!first)
				return spin_seterr(SPIN_EUSAGE, "%s:%u: '%s' is not key=value (%s)",
						   path, ln, tok, LINE_FORMS);
			if (!parse_ip(tok, &h->ip))
				return spin_seterr(SPIN_EUSAGE, "%s:%u: bad IPv4 address '%s' (%s)",
						   path, ln, tok, LINE_FORMS);
			seen |= K_IP;
			continue;
		}
		*val++ = '\0';
		if (!strcmp(tok, "rank"))
			k = K_RANK;
		else if (!strcmp(tok, "ip"))
			k = K_IP;
		else if (!strcmp(tok, "mac"))
			k = K_MAC;
		else if (!strcmp(tok, "port"))
			k = K_PORT;
		else
			return spin_seterr(SPIN_EUSAGE, "%s:%u: unknown key '%s' (keys: rank ip mac port)",
					   path, ln, tok);
		if (seen & k)
			return spin_seterr(SPIN_EUSAGE, "%s:%u: %s given twice", path, ln, tok);
		seen |= k;
		switch (k) {
		case K_RANK:
			if (!parse_dec(val, UINT32_MAX, &h->rank))
				return spin_seterr(SPIN_EUSAGE, "%s:%u: bad rank '%s'", path, ln, val);
			break;
		case K_IP:
			if (!parse_ip(val, &h->ip))
				return spin_seterr(SPIN_EUSAGE, "%s:%u: bad IPv4 address '%s'",
						   path, ln, val);
			break;
		case K_MAC:
			if (!spin_mac_parse(val, h->mac))
				return spin_seterr(SPIN_EUSAGE,
						   "%s:%u: bad MAC address '%s' (aa:bb:cc:dd:ee:ff)",
						   path, ln, val);
			h->has_mac = true;
			break;
		case K_PORT:
			if (!parse_dec(val, UINT16_MAX, &v) || !v)
				return spin_seterr(SPIN_EUSAGE, "%s:%u: bad port '%s' (1..65535)",
						   path, ln, val);
			h->port = (uint16_t)v;
			break;
		}
	}
	if (!(seen & K_IP))
		return spin_seterr(SPIN_EUSAGE, "%s:%u: no IPv4 address (%s)", path, ln, LINE_FORMS);
	if (!(seen & K_RANK))
		h->rank = idx;
	if (h->rank >= SPIN_MAX_PEERS)
		return spin_seterr(SPIN_EUSAGE, "%s:%u: rank %u out of range (0..%u)", path, ln,
				   h->rank, SPIN_MAX_PEERS - 1);
	return 0;
}

/*
 * Read every host of path into j->hosts (file order) and their line
 * numbers into lines[]; ranks are checked for duplicates (an address may come again:
 * another process there).
 */
static int read_hostfile(const char *path, struct spin_job *j, unsigned int *lines)
{
	int *at;			/* rank -> index + 1 */
	unsigned int ln = 0;
	size_t cap = 0;
	char *line = NULL;
	int err = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return spin_seterr(SPIN_ENOENT, "hostfile %s: no such file", path);
		return spin_seterr(spin_errno_code(errno), "hostfile %s: %s", path, strerror(errno));
	}
	j->hosts = calloc(SPIN_MAX_PEERS, sizeof(*j->hosts));
	at = calloc(SPIN_MAX_PEERS, sizeof(*at));
	if (!j->hosts || !at) {
		free(at);
		fclose(f);
		return spin_seterr(SPIN_EFAIL, "out of memory");
	}
	while (getline(&line, &cap, f) >= 0) {
		struct spin_job_host *h;
		char *p = strchr(line, '#');

		ln++;
		if (p)
			*p = '\0';
		if (!line[strspn(line, " \t\r\n")])
			continue;
		if (j->nhosts >= SPIN_MAX_PEERS) {
			err = spin_seterr(SPIN_EUSAGE, "%s:%u: more than %u hosts", path, ln,
					  SPIN_MAX_PEERS);
			break;
		}
		h = &j->hosts[j->nhosts];
		err = parse_host(path, ln, line, j->nhosts, h);
		if (err)
			break;
		if (at[h->rank]) {
			err = spin_seterr(SPIN_EUSAGE, "%s:%u: duplicate rank %u (also on line %u)",
					  path, ln, h->rank, lines[at[h->rank] - 1]);
			break;
		}
		/* an address named again is another Portals process there: the
		 * k-th rank at an address is its slot k (docs/design.md, "Many
		 * Portals processes per interface"; spin_job_peers) */
		at[h->rank] = (int)j->nhosts + 1;
		lines[j->nhosts++] = ln;
	}
	if (!err && ferror(f))
		err = spin_seterr(SPIN_EFAIL, "hostfile %s: %s", path, strerror(errno));
	if (!err && !j->nhosts)
		err = spin_seterr(SPIN_EUSAGE, "hostfile %s: no hosts in it (%s)", path, LINE_FORMS);
	free(line);
	free(at);
	fclose(f);
	return err;
}

/* This host's IPv4 addresses (all interfaces of the network namespace). */
static int local_addrs(uint32_t *out, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa))
		return spin_seterr(SPIN_EFAIL, "cannot read this host's addresses: %s",
				   strerror(errno));
	for (i = ifa; i && n < max; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			out[n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(ifa);
	return n;
}

static bool is_local(const uint32_t *addrs, int n, uint32_t ip)
{
	for (int i = 0; i < n; i++)
		if (addrs[i] == ip)
			return true;
	return false;
}

/* lines[] and by_rank[]: SPIN_MAX_PEERS each, the caller's */
static int job_load_in(struct spin_job *j, const char *hostfile, unsigned int *lines,
		       unsigned int *by_rank)
{
	struct spin_job_host *sorted;
	const char *path, *rvar, *svar;
	uint32_t erank = 0, esize = 0, addrs[64];
	char ip[INET_ADDRSTRLEN];
	int err, naddr;

	path = hostfile && *hostfile ? hostfile : getenv("SPIN_HOSTFILE");
	if (path && !*path)
		path = NULL;
	if ((err = env_u32(rank_vars, &rvar, &erank)) || (err = env_u32(size_vars, &svar, &esize)))
		return err;
	if (svar && (!esize || esize > SPIN_MAX_PEERS))
		return spin_seterr(SPIN_EUSAGE, "%s=%u: the job size must be 1..%u", svar, esize,
				   SPIN_MAX_PEERS);

	if (!path) {
		if (!rvar)
			return spin_seterr(SPIN_EUSAGE, "no hostfile and no rank: give a hostfile "
					   "(SPIN_HOSTFILE) or set SPIN_RANK and SPIN_SIZE");
		if (!svar)
			return spin_seterr(SPIN_EUSAGE, "%s=%u but no job size: set SPIN_SIZE or "
					   "give a hostfile (SPIN_HOSTFILE)", rvar, erank);
		if (erank >= esize)
			return spin_seterr(SPIN_EUSAGE, "%s=%u is outside the job (%s=%u: ranks 0..%u)",
					   rvar, erank, svar, esize, esize - 1);
		j->rank = erank;
		j->size = esize;
		return 0;
	}

	err = read_hostfile(path, j, lines);
	if (err)
		return err;
	if (svar && esize != j->nhosts)
		return spin_seterr(SPIN_EUSAGE, "hostfile %s has %u hosts, but %s=%u: list every "
				   "rank of the job once", path, j->nhosts, svar, esize);
	j->size = j->nhosts;
	for (uint32_t i = 0; i < j->nhosts; i++)
		if (j->hosts[i].rank >= j->size)
			return spin_seterr(SPIN_EUSAGE, "%s:%u: rank %u is outside the job (%u hosts: "
					   "ranks 0..%u)", path, lines[i], j->hosts[i].rank,
					   j->size, j->size - 1);
	/* ranks are 0..size-1, each once: sort by rank */
	sorted = calloc(j->nhosts, sizeof(*sorted));
	if (!sorted)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	for (uint32_t i = 0; i < j->nhosts; i++) {
		sorted[j->hosts[i].rank] = j->hosts[i];
		by_rank[j->hosts[i].rank] = lines[i];
	}
	free(j->hosts);
	j->hosts = sorted;

	naddr = local_addrs(addrs, (int)(sizeof(addrs) / sizeof(addrs[0])));
	if (rvar) {
		if (erank >= j->size)
			return spin_seterr(SPIN_EUSAGE, "%s: %s=%u is outside the job (%u hosts: "
					   "ranks 0..%u)", path, rvar, erank, j->size, j->size - 1);
		j->rank = erank;
		if (naddr > 0 && !is_local(addrs, naddr, j->hosts[erank].ip.s_addr))
			spin_warn("%s=%u is %s on %s:%u, not an address of this host", rvar, erank,
				  inet_ntop(AF_INET, &j->hosts[erank].ip, ip, sizeof(ip)), path,
				  by_rank[erank]);
		return 0;
	}
	if (naddr < 0)
		return naddr;
	{
		int found = -1;

		for (uint32_t r = 0; r < j->size; r++) {
			if (!is_local(addrs, naddr, j->hosts[r].ip.s_addr))
				continue;
			if (found >= 0) {
				return spin_seterr(SPIN_EUSAGE, "%s:%u: this host has the addresses "
						   "of rank %d and of rank %u (line %u): set SPIN_RANK "
						   "to choose", path, by_rank[found], found, r,
						   by_rank[r]);
			}
			found = (int)r;
		}
		if (found < 0)
			return spin_seterr(SPIN_EUSAGE, "hostfile %s names none of this host's IPv4 "
					   "addresses: set SPIN_RANK (or PMI_RANK, "
					   "OMPI_COMM_WORLD_RANK)", path);
		j->rank = (uint32_t)found;
	}
	return 0;
}

static int job_load(struct spin_job *j, const char *hostfile)
{
	unsigned int *lines = calloc(SPIN_MAX_PEERS, sizeof(*lines));
	unsigned int *by_rank = calloc(SPIN_MAX_PEERS, sizeof(*by_rank));
	int err;

	if (!lines || !by_rank)
		err = spin_seterr(SPIN_EFAIL, "out of memory");
	else
		err = job_load_in(j, hostfile, lines, by_rank);
	free(lines);
	free(by_rank);
	return err;
}

int spin_job_load(struct spin_job *j, const char *hostfile)
{
	int err;

	if (!j)
		return spin_seterr(SPIN_EUSAGE, "spin_job_load: no job");
	memset(j, 0, sizeof(*j));
	err = job_load(j, hostfile);
	if (err) {
		spin_job_free(j);
		memset(j, 0, sizeof(*j));
	}
	return err;
}

/*
 * The process slot of each of n ranks (docs/design.md, "Many Portals
 * processes per interface"): rank r's is how many lower ranks share its
 * address ips[r].  One pass with a hash of the addresses; -ENOMEM.
 */
int spin_slots_of(const uint32_t *ips, uint32_t n, uint16_t *out)
{
	uint32_t cap = 16, *key;
	uint16_t *cnt;
	bool *used;

	while (cap < 2 * n)
		cap <<= 1;
	key = calloc(cap, sizeof(*key));
	cnt = calloc(cap, sizeof(*cnt));
	used = calloc(cap, sizeof(*used));
	if (!key || !cnt || !used) {
		free(key);
		free(cnt);
		free(used);
		return -ENOMEM;
	}
	for (uint32_t r = 0; r < n; r++) {
		uint32_t h = (ips[r] * 2654435761u) & (cap - 1);

		while (used[h] && key[h] != ips[r])
			h = (h + 1) & (cap - 1);
		used[h] = true;
		key[h] = ips[r];
		out[r] = cnt[h]++;
	}
	free(key);
	free(cnt);
	free(used);
	return 0;
}

uint32_t spin_job_slot(const struct spin_job *j, uint32_t rank)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < rank && i < j->nhosts; i++)
		k += j->hosts[i].ip.s_addr == j->hosts[rank].ip.s_addr;
	return k;
}

int spin_job_peers(struct spin_rt *rt, const struct spin_job *j)
{
	uint16_t *slots;
	uint32_t *ips;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
	char ip[INET_ADDRSTRLEN], msg[512];
	int fd, err;

	if (!rt || !j)
		return spin_seterr(SPIN_EUSAGE, "spin_job_peers: no runtime or job");
	if (!j->nhosts)
		return spin_seterr(SPIN_EUSAGE, "the job has no hosts: load it from a hostfile "
				   "(SPIN_HOSTFILE)");
	/* start ARP for every host without a MAC at once, not one after the
	 * other in spin_peer_add (one empty datagram to the discard port) */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (uint32_t i = 0; fd >= 0 && i < j->nhosts; i++) {
		if (j->hosts[i].has_mac || j->hosts[i].ip.s_addr == rt->cfg->my_ip)
			continue;
		sa.sin_addr = j->hosts[i].ip;
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (fd >= 0)
		close(fd);
	/* ranks that share an address are processes there, by slot */
	slots = calloc(j->nhosts, sizeof(*slots));
	ips = calloc(j->nhosts, sizeof(*ips));
	for (uint32_t i = 0; ips && i < j->nhosts; i++)
		ips[i] = j->hosts[i].ip.s_addr;
	if (!slots || !ips || spin_slots_of(ips, j->nhosts, slots)) {
		free(slots);
		free(ips);
		return spin_seterr(SPIN_EFAIL, "out of memory");
	}
	free(ips);
	for (uint32_t i = 0; i < j->nhosts; i++) {
		const struct spin_job_host *h = &j->hosts[i];
		struct spin_peer_spec p = { .rank = h->rank, .ip = h->ip, .port = h->port,
					    .slot = slots[i] };

		if (slots[i] >= SPIN_MAX_PROCS) {
			free(slots);
			return spin_seterr(SPIN_EUSAGE, "rank %u (%s): more than %d ranks at one "
					   "address (Portals processes per interface)", h->rank,
					   inet_ntop(AF_INET, &h->ip, ip, sizeof(ip)), SPIN_MAX_PROCS);
		}
		if (h->has_mac)
			memcpy(p.mac, h->mac, 6);
		err = spin_peer_add(rt, &p);
		if (err < 0) {
			free(slots);
			snprintf(msg, sizeof(msg), "%s", spin_errmsg());
			return spin_seterr(-err, "rank %u (%s): %s", h->rank,
					   inet_ntop(AF_INET, &h->ip, ip, sizeof(ip)), msg);
		}
	}
	free(slots);
	return (int)j->nhosts;
}

/*
 * A rank's published address: the first line of dir/spin-rank-R, read
 * only if it is a regular file (not a symbolic link, FIFO or device that
 * someone else put into the shared directory).
 */
static bool read_rank_file(int dfd, uint32_t r, struct in_addr *ip)
{
	char name[32], line[64];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(name, sizeof(name), "spin-rank-%u", r);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return false;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	return parse_ip(line, ip);
}

int spin_job_rendezvous(struct spin_job *j, const char *dir, struct in_addr my_ip, int timeout_ms)
{
	char path[PATH_MAX], tmp[PATH_MAX], ip[INET_ADDRSTRLEN], line[INET_ADDRSTRLEN + 1];
	struct spin_job_host *hosts;
	uint64_t deadline;
	uint32_t have = 0;
	int dfd, fd, n, len;

	if (!j || !dir || !*dir || !j->size || j->rank >= j->size || j->nhosts)
		return spin_seterr(SPIN_EUSAGE, "spin_job_rendezvous: needs a rank and size and no hostfile");
	if (timeout_ms < 0)
		return spin_seterr(SPIN_EUSAGE, "spin_job_rendezvous: timeout %d ms out of range "
				   "(0..%d)", timeout_ms, INT32_MAX);
	/* no rank could reach it, and the others would wait for ever: no
	 * rank reads 0.0.0.0 as an address (parse_ip) */
	if (!my_ip.s_addr)
		return spin_seterr(SPIN_EUSAGE, "rendezvous: this rank's address is 0.0.0.0 (the "
				   "runtime has none: attach it with one, or give the interface an "
				   "IPv4 address)");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return spin_seterr(SPIN_ENOENT, "rendezvous directory %s: %s (SPIN_RENDEZVOUS must be a "
				   "directory every rank can write)", dir, strerror(errno));
	/* publish: write a new file of our own (mkstemp: O_CREAT|O_EXCL, so an
	 * existing name or a symbolic link planted in the shared directory is
	 * never opened), then rename it over the rank's name, so a reader
	 * never sees half a line */
	n = snprintf(tmp, sizeof(tmp), "%s/.spin-rank-%u.XXXXXX", dir, j->rank);
	if (n < 0 || n >= (int)sizeof(tmp) ||
	    snprintf(path, sizeof(path), "%s/spin-rank-%u", dir, j->rank) >= (int)sizeof(path)) {
		close(dfd);
		return spin_seterr(SPIN_EUSAGE, "rendezvous directory name too long: %s", dir);
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		close(dfd);
		return spin_seterr(SPIN_ENOENT, "rendezvous directory %s: %s (SPIN_RENDEZVOUS must be a "
				   "directory every rank can write)", dir, strerror(e));
	}
	len = snprintf(line, sizeof(line), "%s\n", inet_ntop(AF_INET, &my_ip, ip, sizeof(ip)));
	if (fchmod(fd, 0644) || write(fd, line, len) != len || close(fd) || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		close(dfd);
		return spin_seterr(SPIN_EIO, "rendezvous directory %s: cannot publish rank %u: %s", dir,
				   j->rank, strerror(e));
	}
	hosts = calloc(j->size, sizeof(*hosts));
	if (!hosts) {
		close(dfd);
		return spin_seterr(SPIN_EFAIL, "out of memory");
	}
	deadline = spin_now_ms() + (uint64_t)timeout_ms;
	while (have < j->size) {
		have = 0;
		for (uint32_t r = 0; r < j->size; r++) {
			if (read_rank_file(dfd, r, &hosts[r].ip)) {
				hosts[r].rank = r;
				have++;
			}
		}
		if (have < j->size) {
			if (spin_now_ms() > deadline) {
				free(hosts);
				close(dfd);
				return spin_seterr(SPIN_ETIMEDOUT, "rendezvous in %s: %u of %u ranks "
						   "published their address within %d ms", dir, have,
						   j->size, timeout_ms);
			}
			usleep(2000);
		}
	}
	close(dfd);
	j->hosts = hosts;
	j->nhosts = j->size;
	return 0;
}

void spin_job_free(struct spin_job *j)
{
	if (!j)
		return;
	free(j->hosts);
	j->hosts = NULL;
	j->nhosts = 0;
}
