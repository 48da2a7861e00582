// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Kernel feature probes and the fallbacks they select (docs/kernels.md).
 *
 *   kfuncs  bpf_wq (6.10), bpf_iter_num (6.4), bpf_dynptr_copy (6.16): without
 *           any of them the *.compat.bpf.o objects are loaded (helpers only,
 *           built with -DSPIN_NO_KFUNCS next to every .bpf.o)
 *   tcx     TC ingress through tcx (6.6): without it the fan-out program is
 *           attached with a clsact qdisc and a cls_bpf filter
 *
 * SPIN_COMPAT_FORCE=all (or a comma list of kfuncs,tcx) takes the fallback
 * on any kernel, so that every fallback is tested on the newest one too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "libspin_internal.h"

static const char *const kfuncs[] = { "bpf_wq_start", "bpf_iter_num_new", "bpf_dynptr_copy" };

/* SPIN_COMPAT_FORCE: bits of SPIN_COMPAT_*, or -1 for a bad word. */
static int forced(void)
{
	const char *env = getenv("SPIN_COMPAT_FORCE");
	char buf[128], *w, *save = NULL;
	int bits = 0;

	if (!env || !*env)
		return 0;
	snprintf(buf, sizeof(buf), "%s", env);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "all"))
			bits |= SPIN_COMPAT_KFUNCS | SPIN_COMPAT_TCX;
		else if (!strcmp(w, "kfuncs"))
			bits |= SPIN_COMPAT_KFUNCS;
		else if (!strcmp(w, "tcx"))
			bits |= SPIN_COMPAT_TCX;
		else
			return -1;
	}
	return bits;
}

int spin_compat_fallbacks(void)
{
	static int probed = -1;
	int f = forced();

	if (f < 0)
		return spin_seterr(SPIN_EUSAGE, "SPIN_COMPAT_FORCE='%s': give 'all' or a comma list "
				   "of kfuncs,tcx", getenv("SPIN_COMPAT_FORCE"));
	if (probed < 0) {
		struct btf *btf = btf__load_vmlinux_btf();
		size_t i;

		probed = 0;
		/* without kernel BTF nothing can be told: helpers only */
		for (i = 0; i < sizeof(kfuncs) / sizeof(kfuncs[0]); i++)
			if (!btf || btf__find_by_name_kind(btf, kfuncs[i], BTF_KIND_FUNC) < 0)
				probed |= SPIN_COMPAT_KFUNCS;
		btf__free(btf);
		/* tcx is told by its attach (spin_attach): EINVAL before 6.6 */
	}
	return probed | f;
}

int spin_compat_obj(const char *path, char *out, size_t len)
{
	int fb = spin_compat_fallbacks();
	size_t n = strlen(path);

	if (fb < 0)
		return fb;
	if (!(fb & SPIN_COMPAT_KFUNCS) || n < 6 || strcmp(path + n - 6, ".bpf.o") ||
	    (n >= 13 && !strcmp(path + n - 13, ".compat.bpf.o"))) {
		snprintf(out, len, "%s", path);
		return 0;
	}
	snprintf(out, len, "%.*s.compat.bpf.o", (int)(n - 6), path);
	if (access(out, R_OK) == 0)
		return 1;
	snprintf(out, len, "%s", path);
	return spin_seterr(SPIN_EFAIL, "%s calls kfuncs this kernel lacks (bpf_wq: Linux 6.10, "
			   "bpf_iter_num: 6.4, bpf_dynptr_copy: 6.16) and there is no %.*s.compat.bpf.o "
			   "next to it: build that with -DSPIN_NO_KFUNCS", path, (int)(n - 6), path);
}

/*
 * A new map shaped like tmpl_fd's (type, key and value size, flags, and
 * its BTF key and value types), with max_entries elements (0: the
 * template's): an inner map for an array of maps whose template tmpl_fd
 * is.  The BTF matters before Linux 6.2: a map made with BTF has its
 * spin lock and timer offsets looked up there (none: -ENOENT), one made
 * without keeps -EINVAL, and bpf_map_meta_equal compares them, so a
 * BTF-less window did not go into spin_wins (EINVAL).  -1 and errno on
 * failure.
 */
int spin_map_like(int tmpl_fd, const char *name, uint32_t max_entries)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);
	struct bpf_map_info info = {};
	uint32_t ilen = sizeof(info);
	int fd, btf = -1, e;

	if (bpf_obj_get_info_by_fd(tmpl_fd, &info, &ilen))
		return -1;
	o.map_flags = info.map_flags;
	if (info.btf_id && (info.btf_key_type_id || info.btf_value_type_id) &&
	    (btf = bpf_btf_get_fd_by_id(info.btf_id)) >= 0) {
		o.btf_fd = btf;
		o.btf_key_type_id = info.btf_key_type_id;
		o.btf_value_type_id = info.btf_value_type_id;
	}
	fd = bpf_map_create(info.type, name, info.key_size, info.value_size,
			    max_entries ? max_entries : info.max_entries, &o);
	e = errno;
	if (btf >= 0)
		close(btf);
	errno = e;
	return fd;
}
