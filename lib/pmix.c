// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin jobs from a PMIx launcher (Open MPI's mpirun, Slurm's srun):
 * the rank and the job size from PMIx_Init and PMIX_JOB_SIZE, the peers'
 * addresses by PMIx_Put + PMIx_Commit of this rank's, PMIx_Fence with
 * PMIX_COLLECT_DATA and PMIx_Get of every rank's (docs/portals.md, "The
 * job").
 *
 * libpmix is opened with dlopen at run time (libpmix.so.2, Debian's
 * libpmix2), so libspin does not depend on it; pmix.h (libpmix-dev) gives
 * the types and constants at build time.  Everything PMIx hands back is
 * checked: types, lengths, an IPv4 address that parses and is not
 * 0.0.0.0, rank < size.
 *
 * One PMIx session per process: PMIx_Init on the first job that needs it,
 * PMIx_Finalize from PtlFini (spin_pmix_fini).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "libspin_internal.h"

#define PMIX_SONAME "libpmix.so.2"
/* this rank's IPv4 address, dotted quad (PMIX_STRING) */
#define SPIN_PMIX_KEY "spin.ipv4"

static struct {
	pthread_mutex_t mu;
	void *dl;
	bool up;			/* PMIx_Init succeeded, no PMIx_Finalize yet */
	pmix_proc_t me;
	struct {
	pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
	pmix_status_t (*finalize)(const pmix_info_t *, size_t);
	pmix_status_t (*get)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t,
			     pmix_value_t **);
	pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
	pmix_status_t (*commit)(void);
	pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
	void (*value_destruct)(pmix_value_t *);
	const char *(*error_string)(pmix_status_t);
	} fn;				/* libpmix's, while dl is open */
} px = { .mu = PTHREAD_MUTEX_INITIALIZER };

static const char *px_err(pmix_status_t rc)
{
	static char buf[32];
	const char *s = px.fn.error_string ? px.fn.error_string(rc) : NULL;

	if (s && *s)
		return s;
	snprintf(buf, sizeof(buf), "PMIx status %d", rc);
	return buf;
}

static bool env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

/* A PMIx launcher started this process: its server's variables are set. */
static bool launcher_env(void)
{
	extern char **environ;

	if (env_set("PMIX_RANK") || env_set("PMIX_NAMESPACE"))
		return true;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "PMIX_SERVER_URI", 15))
			return true;
	return false;
}

int spin_pmix_wanted(void)
{
	const char *v = getenv("SPIN_PMIX");
	const char *by = NULL;
	bool forced = false;

	if (v && *v) {
		if (!strcmp(v, "0"))
			return 0;
		if (strcmp(v, "1"))
			return spin_seterr(SPIN_EUSAGE, "SPIN_PMIX='%.40s': give 1 (ranks and peers from "
					   "PMIx), 0 (never from PMIx) or leave it unset (from PMIx when "
					   "a PMIx launcher started the process)", v);
		forced = true;
	}
	/* an explicit hostfile or rendezvous directory wins */
	if (env_set("SPIN_HOSTFILE"))
		by = "SPIN_HOSTFILE";
	else if (env_set("SPIN_RENDEZVOUS"))
		by = "SPIN_RENDEZVOUS";
	if (by) {
		if (forced)
			spin_warn("SPIN_PMIX=1 has no effect: %s=%.200s describes the job (unset it to take "
				  "ranks and peers from PMIx)", by, getenv(by));
		return 0;
	}
	return forced || launcher_env();
}

static int px_sym(void **fn, const char *name)
{
	*fn = dlsym(px.dl, name);
	if (!*fn)
		return spin_seterr(SPIN_EFAIL, "PMIx: %s has no %s (install libpmix2 4.x, or set "
				   "SPIN_PMIX=0 and give a hostfile)", PMIX_SONAME, name);
	return 0;
}

static int px_open(void)
{
	int err;

	if (px.dl)
		return 0;
	px.dl = dlopen(PMIX_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!px.dl)
		return spin_seterr(SPIN_ENOENT, "PMIx: cannot load %s (install libpmix2, or set "
				   "SPIN_PMIX=0 and give a hostfile or SPIN_RENDEZVOUS)", PMIX_SONAME);
	if ((err = px_sym((void **)&px.fn.init, "PMIx_Init")) ||
	    (err = px_sym((void **)&px.fn.finalize, "PMIx_Finalize")) ||
	    (err = px_sym((void **)&px.fn.get, "PMIx_Get")) ||
	    (err = px_sym((void **)&px.fn.put, "PMIx_Put")) ||
	    (err = px_sym((void **)&px.fn.commit, "PMIx_Commit")) ||
	    (err = px_sym((void **)&px.fn.fence, "PMIx_Fence")) ||
	    (err = px_sym((void **)&px.fn.value_destruct, "PMIx_Value_destruct")) ||
	    (err = px_sym((void **)&px.fn.error_string, "PMIx_Error_string"))) {
		dlclose(px.dl);
		memset(&px.fn, 0, sizeof(px.fn));
		px.dl = NULL;
		return err;
	}
	return 0;
}

static void px_free(pmix_value_t *v)
{
	if (v) {
		px.fn.value_destruct(v);
		free(v);
	}
}

/* An unsigned number of any of PMIx's integer types, or false. */
static bool px_uint(const pmix_value_t *v, uint64_t *out)
{
	switch (v->type) {
	case PMIX_UINT32: *out = v->data.uint32; return true;
	case PMIX_UINT64: *out = v->data.uint64; return true;
	case PMIX_SIZE: *out = v->data.size; return true;
	case PMIX_UINT: *out = v->data.uint; return true;
	case PMIX_UINT16: *out = v->data.uint16; return true;
	case PMIX_UINT8: *out = v->data.uint8; return true;
	case PMIX_INT: if (v->data.integer < 0) return false; *out = (uint64_t)v->data.integer; return true;
	case PMIX_INT32: if (v->data.int32 < 0) return false; *out = (uint64_t)v->data.int32; return true;
	case PMIX_INT64: if (v->data.int64 < 0) return false; *out = (uint64_t)v->data.int64; return true;
	default: return false;
	}
}

/* A rank or size variable that is set must say what PMIx says. */
static int env_agrees(const char *const vars[SPIN_JOB_NVARS], const char *what, uint32_t pmix)
{
	for (int i = 0; i < SPIN_JOB_NVARS; i++) {
		const char *s = getenv(vars[i]);
		char *end;
		unsigned long v;

		if (!s || !*s)
			continue;
		v = strtoul(s, &end, 10);
		if (*end || s[0] < '0' || s[0] > '9' || v != pmix)
			return spin_seterr(SPIN_EUSAGE, "%s='%.20s' but PMIx gives %s %u: unset %s, or set "
					   "SPIN_PMIX=0", vars[i], s, what, pmix, vars[i]);
		return 0;
	}
	return 0;
}

int spin_pmix_init(struct spin_job *j)
{
	pmix_proc_t wild;
	pmix_value_t *v = NULL;
	pmix_status_t rc;
	uint64_t size;
	int err = 0;

	memset(j, 0, sizeof(*j));
	pthread_mutex_lock(&px.mu);
	if ((err = px_open()))
		goto out;
	if (!px.up) {
		rc = px.fn.init(&px.me, NULL, 0);
		if (rc != PMIX_SUCCESS) {
			err = spin_seterr(SPIN_EFAIL, "PMIx_Init: %s (no PMIx server reachable: start the "
					  "job with mpirun or srun --mpi=pmix, or set SPIN_PMIX=0 and give "
					  "a hostfile or SPIN_RENDEZVOUS)", px_err(rc));
			goto out;
		}
		px.up = true;
	}
	memset(&wild, 0, sizeof(wild));
	memcpy(wild.nspace, px.me.nspace, sizeof(wild.nspace));
	wild.nspace[sizeof(wild.nspace) - 1] = 0;
	wild.rank = PMIX_RANK_WILDCARD;
	rc = px.fn.get(&wild, PMIX_JOB_SIZE, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v) {
		err = spin_seterr(SPIN_EFAIL, "PMIx_Get(%s): %s (the launcher gives no job size)",
				  PMIX_JOB_SIZE, px_err(rc));
		goto out;
	}
	if (!px_uint(v, &size) || !size || size > SPIN_MAX_PEERS) {
		err = spin_seterr(SPIN_EFAIL, "PMIx: job size %s (type %u): the job size must be 1..%u",
				  px_uint(v, &size) ? "out of range" : "not a number", v->type,
				  SPIN_MAX_PEERS);
		goto out;
	}
	if (px.me.rank >= size) {
		err = spin_seterr(SPIN_EFAIL, "PMIx: rank %u is outside the job (size %llu)",
				  px.me.rank, (unsigned long long)size);
		goto out;
	}
	j->rank = px.me.rank;
	j->size = (uint32_t)size;
	if ((err = env_agrees(spin_job_rank_vars, "rank", j->rank)) ||
	    (err = env_agrees(spin_job_size_vars, "job size", j->size)))
		goto out;
out:
	px_free(v);
	pthread_mutex_unlock(&px.mu);
	if (err)
		memset(j, 0, sizeof(*j));
	return err;
}

/* rank r's published address: a PMIX_STRING of at most 15 characters that
 * is a dotted quad, not 0.0.0.0 */
static int px_addr(uint32_t r, const pmix_value_t *v, struct in_addr *ip)
{
	char s[INET_ADDRSTRLEN];
	size_t n;

	if (v->type != PMIX_STRING || !v->data.string)
		return spin_seterr(SPIN_EUSAGE, "PMIx: rank %u published %s of type %u, not an IPv4 "
				   "address (another program uses the key?)", r, SPIN_PMIX_KEY, v->type);
	n = strnlen(v->data.string, sizeof(s));
	if (n >= sizeof(s) || inet_pton(AF_INET, v->data.string, ip) != 1 || !ip->s_addr) {
		memcpy(s, v->data.string, n < sizeof(s) ? n : sizeof(s) - 1);
		s[n < sizeof(s) ? n : sizeof(s) - 1] = 0;
		for (char *p = s; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				*p = '?';
		return spin_seterr(SPIN_EUSAGE, "PMIx: rank %u published '%s%s' as its address, not a "
				   "usable IPv4 address", r, s, n >= sizeof(s) ? "..." : "");
	}
	return 0;
}

int spin_pmix_exchange(struct spin_job *j, struct in_addr my_ip, int timeout_ms)
{
	char ip[INET_ADDRSTRLEN];
	struct spin_job_host *hosts = NULL;
	pmix_info_t fi[2];
	pmix_value_t val, *v;
	pmix_proc_t p;
	pmix_status_t rc;
	int err = 0;

	if (!j || !j->size || j->rank >= j->size || j->nhosts)
		return spin_seterr(SPIN_EUSAGE, "spin_pmix_exchange: needs a rank and size and no hosts");
	if (!my_ip.s_addr)
		return spin_seterr(SPIN_EUSAGE, "PMIx: this rank's address is 0.0.0.0 (the runtime has "
				   "none: attach it with one, or give the interface an IPv4 address)");
	pthread_mutex_lock(&px.mu);
	if (!px.up) {
		err = spin_seterr(SPIN_EUSAGE, "spin_pmix_exchange: PMIx is not initialized");
		goto out;
	}
	inet_ntop(AF_INET, &my_ip, ip, sizeof(ip));
	memset(&val, 0, sizeof(val));
	val.type = PMIX_STRING;
	val.data.string = ip;
	rc = px.fn.put(PMIX_GLOBAL, SPIN_PMIX_KEY, &val);
	if (rc == PMIX_SUCCESS)
		rc = px.fn.commit();
	if (rc != PMIX_SUCCESS) {
		err = spin_seterr(SPIN_EIO, "PMIx: cannot publish rank %u's address: %s", j->rank,
				  px_err(rc));
		goto out;
	}
	/* every rank's data to every rank, at most timeout_ms (whole
	 * seconds: PMIX_TIMEOUT); a rank that never comes fails the fence */
	memset(fi, 0, sizeof(fi));
	snprintf(fi[0].key, sizeof(fi[0].key), "%s", PMIX_COLLECT_DATA);
	fi[0].value.type = PMIX_BOOL;
	fi[0].value.data.flag = true;
	snprintf(fi[1].key, sizeof(fi[1].key), "%s", PMIX_TIMEOUT);
	fi[1].value.type = PMIX_INT;
	fi[1].value.data.integer = timeout_ms > 0 ? (timeout_ms + 999) / 1000 : 1;
	rc = px.fn.fence(NULL, 0, fi, 2);
	if (rc != PMIX_SUCCESS) {
		err = spin_seterr(rc == PMIX_ERR_TIMEOUT ? SPIN_ETIMEDOUT : SPIN_EIO,
				  "PMIx_Fence: %s (not every rank of the job published its address "
				  "within %d ms)", px_err(rc), timeout_ms);
		goto out;
	}
	hosts = calloc(j->size, sizeof(*hosts));
	if (!hosts) {
		err = spin_seterr(SPIN_EFAIL, "out of memory");
		goto out;
	}
	memset(&p, 0, sizeof(p));
	memcpy(p.nspace, px.me.nspace, sizeof(p.nspace));
	p.nspace[sizeof(p.nspace) - 1] = 0;
	for (uint32_t r = 0; r < j->size; r++) {
		p.rank = r;
		v = NULL;
		rc = px.fn.get(&p, SPIN_PMIX_KEY, NULL, 0, &v);
		if (rc != PMIX_SUCCESS || !v) {
			px_free(v);
			err = spin_seterr(SPIN_EIO, "PMIx_Get: rank %u's address: %s (it did not publish "
					  "one: is every rank a Portals process?)", r, px_err(rc));
			goto out;
		}
		err = px_addr(r, v, &hosts[r].ip);
		px_free(v);
		if (err)
			goto out;
		hosts[r].rank = r;
	}
	/* nobody finalizes while another rank still reads its data */
	rc = px.fn.fence(NULL, 0, &fi[1], 1);
	if (rc != PMIX_SUCCESS) {
		err = spin_seterr(SPIN_EIO, "PMIx_Fence after the addresses: %s", px_err(rc));
		goto out;
	}
	j->hosts = hosts;
	j->nhosts = j->size;
	hosts = NULL;
out:
	free(hosts);
	pthread_mutex_unlock(&px.mu);
	return err;
}

void spin_pmix_fini(void)
{
	pthread_mutex_lock(&px.mu);
	if (px.up) {
		px.fn.finalize(NULL, 0);
		px.up = false;
	}
	pthread_mutex_unlock(&px.mu);
}
