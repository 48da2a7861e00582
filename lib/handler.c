// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin handlers: load handler objects against the runtime's pinned maps,
 * put their entry program into spin_handlers, unload and list them.
 *
 * The registry is bpffs itself: a loaded handler is pinned as
 * <pin dir>/handlers/<name>, and its slot is found by looking for its
 * program id in spin_handlers (a userspace lookup of a program array
 * returns the program id).  Pins are reached relative to the runtime's
 * checked pin directory (pins.c), never through a symbolic link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libspin_internal.h"

static int handler_path(struct spin_rt *rt, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/%s", rt->pin_dir, SPIN_HANDLER_DIR, name);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* handlers/ of the runtime's pin directory, opened and checked. */
static int handlers_dir(struct spin_rt *rt, int *fd)
{
	return spin_pins_handlers(rt->dir_fd, rt->pin_dir, fd);
}

/* Whether name exists in dir_fd (a pin or anything else), not following links. */
static bool exists_at(int dir_fd, const char *name)
{
	struct stat st;

	return !fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW);
}

/* Program ids of all slots of spin_handlers (0: empty). */
static int read_slots(struct spin_rt *rt, __u32 ids[SPIN_MAX_HANDLERS])
{
	for (__u32 k = 0; k < SPIN_MAX_HANDLERS; k++) {
		ids[k] = 0;
		if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_HANDLERS], &k, &ids[k])) {
			if (errno != ENOENT)
				return spin_seterr(SPIN_EFAIL, "cannot read spin_handlers[%u]: %s", k,
						   strerror(errno));
			ids[k] = 0;
		}
	}
	return 0;
}

static int slot_of(struct spin_rt *rt, __u32 id)
{
	__u32 ids[SPIN_MAX_HANDLERS];
	int err = read_slots(rt, ids);

	if (err)
		return err;
	for (int k = 0; k < SPIN_MAX_HANDLERS; k++)
		if (id && ids[k] == id)
			return k;
	return -SPIN_ENOENT;
}

int spin_handler_slot(struct spin_rt *rt, const char *name)
{
	char p[PATH_MAX];
	__u32 id;
	int fd, slot, hfd, err;

	if (!spin_name_ok(name) || handler_path(rt, name, p, sizeof(p)))
		return spin_seterr(SPIN_EUSAGE, "bad handler name '%s'", name ? name : "");
	if ((err = handlers_dir(rt, &hfd)))
		return err;
	fd = spin_obj_get_at(hfd, name);
	close(hfd);
	if (fd < 0)
		return spin_seterr(SPIN_ENOENT, "no handler '%s' loaded on '%s' (see 'spinctl handler list %s')",
				   name, rt->ifname, rt->ifname);
	id = spin_prog_id(fd);
	close(fd);
	slot = slot_of(rt, id);
	if (slot == -SPIN_ENOENT)
		return spin_seterr(SPIN_ENOENT,
				   "handler '%s' is pinned but not in spin_handlers: unload and load it again",
				   name);
	return slot;
}

/*
 * The spin_wins a handler program gets: an ARRAY_OF_MAPS with the window of
 * the loading handle's process slot and nothing else, so the handler can
 * reach no other process's window (docs/security.md, "Isolation"), whatever
 * it looks up.  An fd, or -1 with errno set.
 */
static int own_wins(struct spin_rt *rt)
{
	int win = rt->win_fd >= 0 ? rt->win_fd : rt->map_fd[SPIN_M_HOST], fd, e;
	LIBBPF_OPTS(bpf_map_create_opts, o, .inner_map_fd = win);
	uint32_t k = rt->slot;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "spin_wins", 4, 4, SPIN_MAX_PROCS, &o);
	if (fd < 0)
		return -1;
	if (k >= SPIN_MAX_PROCS || bpf_map_update_elem(fd, &k, &win, 0)) {
		e = k >= SPIN_MAX_PROCS ? EINVAL : errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Name of a handler object without directory and .bpf.o / .o suffix. */
static void default_name(const char *path, char *out, size_t len)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	if (n > 6 && !strcmp(b + n - 6, ".bpf.o"))
		n -= 6;
	else if (n > 2 && !strcmp(b + n - 2, ".o"))
		n -= 2;
	if (n >= len)
		n = len - 1;
	memcpy(out, b, n);
	out[n] = 0;
}

int spin_obj_abi_check(struct bpf_object *obj, const char *path, const char *what)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, SPIN_ABI_SECTION);
	const void *v;
	size_t sz = 0;
	__u32 abi;

	if (!m)
		return spin_seterr(SPIN_EFAIL,
				   "%s %s carries no spin ABI version (built before ABI %d): rebuild it "
				   "against this spin's headers", what, path, SPIN_ABI_VERSION);
	v = bpf_map__initial_value(m, &sz);
	if (!v || sz < sizeof(abi))
		return spin_seterr(SPIN_EFAIL, "%s %s: malformed %s section", what, path,
				   SPIN_ABI_SECTION);
	memcpy(&abi, v, sizeof(abi));
	if (abi != SPIN_ABI_VERSION)
		return spin_seterr(SPIN_EFAIL,
				   "%s %s was built for spin ABI %u, this spin has ABI %d: rebuild it "
				   "against this spin's headers", what, path, abi, SPIN_ABI_VERSION);
	bpf_map__set_autocreate(m, false);
	return 0;
}

/* Open a handler object for spin_handler_check: only its entry program
 * is loaded, every map is its own (made at load, never pinned). */
static int check_open(const char *path, struct bpf_object **obj, struct bpf_program **entry)
{
	struct bpf_program *prog;
	int err;

	char opath[PATH_MAX];
	int err0 = spin_compat_obj(path, opath, sizeof(opath));	/* *.compat.bpf.o? */

	if (err0 < 0)
		return err0;
	*obj = bpf_object__open_file(opath, NULL);
	if (!*obj)
		return spin_seterr(SPIN_EFAIL, "cannot open handler object %s: %s", path,
				   *spin_libbpf_last() ? spin_libbpf_last() : strerror(errno));
	*entry = bpf_object__find_program_by_name(*obj, SPIN_HANDLER_PROG);
	if (!*entry)
		return spin_seterr(SPIN_ENOENT, "no SPIN_HANDLERS(...) line in %s (no program %s)",
				   path, SPIN_HANDLER_PROG);
	if (bpf_program__type(*entry) != BPF_PROG_TYPE_XDP)
		return spin_seterr(SPIN_EFAIL, "%s in %s is not an XDP program (SEC(\"xdp\"))",
				   SPIN_HANDLER_PROG, path);
	err = spin_obj_abi_check(*obj, path, "handler object");
	if (err)
		return err;
	bpf_object__for_each_program(prog, *obj)
		if (prog != *entry)
			bpf_program__set_autoload(prog, false);
	return 0;
}

int spin_handler_check(const char *path, struct spin_check_result *out)
{
	struct bpf_object *obj = NULL;
	struct bpf_program *entry;
	struct bpf_prog_info info;
	struct bpf_map *map;
	__u32 len = sizeof(info);
	char *log = NULL, *line;
	int err;

	spin_libbpf_reset();
	spin_vlog_clear();
	if (!path || !out)
		return spin_seterr(SPIN_EUSAGE, "spin_handler_check: no object path");
	memset(out, 0, sizeof(*out));
	err = spin_check_priv();
	if (err)
		return err;
	if (access(path, R_OK))
		return spin_seterr(errno == ENOENT ? SPIN_ENOENT : SPIN_EPERM,
				   "handler object %s: %s", path, strerror(errno));
	log = malloc(SPIN_LOG_BUF_SIZE);
	if (!log)
		return spin_seterr(SPIN_EFAIL, "out of memory");
	err = check_open(path, &obj, &entry);
	if (err)
		goto out;
	out->abi = SPIN_ABI_VERSION;
	bpf_object__for_each_map(map, obj)
		if (!bpf_map__is_internal(map))
			out->maps++;
	/* the verifier's statistics only: a full log of a program this size
	 * would not fit */
	log[0] = 0;
	bpf_program__set_log_buf(entry, log, SPIN_LOG_BUF_SIZE);
	bpf_program__set_log_level(entry, 4);
	if (bpf_object__load(obj)) {
		int e = errno;

		/* again with the verifier's log, for the lines that matter */
		bpf_object__close(obj);
		obj = NULL;
		spin_libbpf_reset();
		err = check_open(path, &obj, &entry);
		if (err)
			goto out;
		log[0] = 0;
		bpf_program__set_log_buf(entry, log, SPIN_LOG_BUF_SIZE);
		bpf_program__set_log_level(entry, 1);
		if (!bpf_object__load(obj)) {
			err = spin_seterr(SPIN_EFAIL, "handler object %s: loaded only on the second try",
					  path);
		} else if (log[0]) {
			err = spin_seterr(SPIN_EVERIFIER, "verifier rejected handler object %s: %s", path,
					  spin_vlog_set(log));
		} else {
			err = spin_seterr(e == EPERM ? SPIN_EPERM : SPIN_EFAIL,
					  "cannot load handler object %s: %s", path,
					  *spin_libbpf_last() ? spin_libbpf_last() : strerror(e));
		}
		goto out;
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(entry), &info, &len)) {
		err = spin_seterr(SPIN_EFAIL, "cannot read the program info of %s: %s", path,
				  strerror(errno));
		goto out;
	}
	out->verified_insns = info.verified_insns;
	out->xlated_insns = info.xlated_prog_len / 8;
	out->jited_bytes = info.jited_prog_len;
	line = strstr(log, "processed ");
	if (line) {
		size_t n = strcspn(line, "\n");

		if (n >= sizeof(out->stats))
			n = sizeof(out->stats) - 1;
		memcpy(out->stats, line, n);
	}
	err = 0;
out:
	bpf_object__close(obj);
	free(log);
	return err;
}

/*
 * Load a handler object from a file (path) or from memory (buf, len; path
 * then only names it in messages), against the runtime's maps.
 */
static int handler_load(struct spin_rt *rt, const char *path, const void *buf, size_t len,
			const char *name, const struct spin_map_subst *subst, int n_subst)
{
	struct bpf_object *obj = NULL;
	struct bpf_program *prog, *entry;
	struct bpf_map *map;
	char p[PATH_MAX + 64];
	__u32 ids[SPIN_MAX_HANDLERS];
	char *log = NULL;
	int err, slot = -1, fd, hfd = -1;
	bool pinned = false;

	spin_libbpf_reset();
	spin_vlog_clear();
	err = spin_check_priv();
	if (err)
		return err;
	if (!buf && access(path, R_OK))
		return spin_seterr(errno == ENOENT ? SPIN_ENOENT : SPIN_EPERM,
				   "handler object %s: %s", path, strerror(errno));
	err = spin_lock(rt);
	if (err)
		return err;
	err = handlers_dir(rt, &hfd);
	if (err)
		goto out;
	if (exists_at(hfd, name)) {
		err = spin_seterr(SPIN_EEXIST,
				  "handler '%s' is already loaded on '%s': unload it or pick another name",
				  name, rt->ifname);
		goto out;
	}

	if (buf) {
		LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = name);

		obj = bpf_object__open_mem(buf, len, &oo);
	} else {
		char opath[PATH_MAX];

		err = spin_compat_obj(path, opath, sizeof(opath));	/* *.compat.bpf.o? */
		if (err < 0)
			goto out;
		err = 0;
		obj = bpf_object__open_file(opath, NULL);
	}
	if (!obj) {
		err = spin_seterr(SPIN_EFAIL, "cannot open handler object %s: %s", path,
				  *spin_libbpf_last() ? spin_libbpf_last() : strerror(errno));
		goto out;
	}
	entry = bpf_object__find_program_by_name(obj, SPIN_HANDLER_PROG);
	if (!entry) {
		err = spin_seterr(SPIN_ENOENT, "no SPIN_HANDLERS(...) line in %s (no program %s)",
				  path, SPIN_HANDLER_PROG);
		goto out;
	}
	err = spin_obj_abi_check(obj, path, "handler object");
	if (err)
		goto out;
	if (bpf_program__type(entry) != BPF_PROG_TYPE_XDP) {
		err = spin_seterr(SPIN_EFAIL, "%s in %s is not an XDP program (SEC(\"xdp\"))",
				  SPIN_HANDLER_PROG, path);
		goto out;
	}
	bpf_object__for_each_program(prog, obj)
		if (prog != entry)
			bpf_program__set_autoload(prog, false);
	bpf_object__for_each_map(map, obj) {
		const char *mn = bpf_map__name(map);

		if (bpf_map__is_internal(map))
			continue;	/* .rodata/.data/.bss: created normally (not the ABI's) */
		fd = -1;
		for (int k = 0; k < n_subst; k++)
			if (!strcmp(subst[k].name, mn))
				fd = subst[k].fd;
		if (fd >= 0) {
			/* the caller's map instead of the runtime's (shipped
			 * code: its own handler memory, window, ...) */
			err = bpf_map__reuse_fd(map, fd);
			if (err) {
				err = spin_seterr(SPIN_EFAIL, "cannot use the private map %s for %s: %s",
						  mn, path, strerror(-err));
				goto out;
			}
			continue;
		}
		snprintf(p, sizeof(p), "%s/%s", rt->pin_dir, mn);
		if (!spin_name_ok(mn) || !exists_at(rt->dir_fd, mn)) {
			err = spin_seterr(SPIN_EFAIL,
					  "handler object %s declares map %s that is not a spin runtime map",
					  path, mn);
			goto out;
		}
		if (!strcmp(mn, "spin_wins"))
			fd = own_wins(rt);	/* its process's window only */
		else if (!strcmp(mn, "spin_host"))	/* slot 0's, by name: its own instead */
			fd = dup(rt->win_fd >= 0 ? rt->win_fd : rt->map_fd[SPIN_M_HOST]);
		else
			fd = spin_obj_get_at(rt->dir_fd, mn);
		if (fd < 0) {
			err = spin_seterr(spin_errno_code(errno), "cannot open runtime map %s: %s", p,
					  strerror(errno));
			goto out;
		}
		err = bpf_map__reuse_fd(map, fd);
		close(fd);	/* reuse_fd dup()s it */
		if (err) {
			err = spin_seterr(SPIN_EFAIL, "cannot reuse runtime map %s for %s: %s", mn, path,
					  strerror(-err));
			goto out;
		}
	}
	log = malloc(SPIN_LOG_BUF_SIZE);
	if (!log) {
		err = spin_seterr(SPIN_EFAIL, "out of memory");
		goto out;
	}
	log[0] = 0;
	bpf_program__set_log_buf(entry, log, SPIN_LOG_BUF_SIZE);
	if (bpf_object__load(obj)) {
		int e = errno;

		if (log[0]) {
			const char *line = spin_vlog_set(log);

			int fb = buf ? 0 : spin_compat_fallbacks();

			err = spin_seterr(SPIN_EVERIFIER, "verifier rejected handler '%s' (%s%s): %s",
					  name, path, fb > 0 && (fb & SPIN_COMPAT_KFUNCS) ?
					  ", its helpers-only build: a spin_for loop over a count "
					  "from data needs bpf_iter_num, Linux 6.4" : "", line);
		} else {
			err = spin_seterr(e == EPERM ? SPIN_EPERM : SPIN_EFAIL,
					  "cannot load handler object %s: %s", path,
					  *spin_libbpf_last() ? spin_libbpf_last() : strerror(e));
		}
		goto out;
	}

	err = read_slots(rt, ids);
	if (err)
		goto out;
	for (int k = 0; k < SPIN_MAX_HANDLERS; k++) {
		if (!ids[k]) {
			slot = k;
			break;
		}
	}
	if (slot < 0) {
		err = spin_seterr(SPIN_ENOSPC, "all %d handler slots of '%s' are in use: unload one",
				  SPIN_MAX_HANDLERS, rt->ifname);
		goto out;
	}
	handler_path(rt, name, p, sizeof(p));
	if (spin_obj_pin_at(bpf_program__fd(entry), hfd, name)) {
		err = spin_seterr(spin_errno_code(errno), "cannot pin %s: %s", p, strerror(errno));
		goto out;
	}
	pinned = true;
	fd = bpf_program__fd(entry);
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_HANDLERS], &slot, &fd, BPF_ANY)) {
		err = spin_seterr(SPIN_EFAIL,
				  "cannot insert handler '%s' into spin_handlers[%d]: %s (XDP program "
				  "incompatible with the runtime?)", name, slot, strerror(errno));
		goto out;
	}
	pinned = false;
	spin_gen_bump(rt);
	err = slot;
out:
	if (pinned)
		unlinkat(hfd, name, 0);
	if (hfd >= 0)
		close(hfd);
	spin_unlock(rt);
	bpf_object__close(obj);
	free(log);
	return err;
}

int spin_handler_load(struct spin_rt *rt, const char *path, const char *name)
{
	char nbuf[64];

	if (!rt || !path)
		return spin_seterr(SPIN_EUSAGE, "spin_handler_load: no runtime or object path");
	if (!name) {
		default_name(path, nbuf, sizeof(nbuf));
		name = nbuf;
	}
	if (!spin_name_ok(name))
		return spin_seterr(SPIN_EUSAGE,
				   "bad handler name '%s' (1-63 characters, no '/', spaces or leading '.')",
				   name);
	return handler_load(rt, path, NULL, 0, name, NULL, 0);
}

int spin_handler_load_mem(struct spin_rt *rt, const void *buf, size_t len, const char *name)
{
	if (!rt || !buf || !len || !name)
		return spin_seterr(SPIN_EUSAGE, "spin_handler_load_mem: no runtime, object or name");
	if (!spin_name_ok(name))
		return spin_seterr(SPIN_EUSAGE,
				   "bad handler name '%s' (1-63 characters, no '/', spaces or leading '.')",
				   name);
	return handler_load(rt, name, buf, len, name, NULL, 0);
}

int spin_handler_load_mem_subst(struct spin_rt *rt, const void *buf, size_t len, const char *name,
				const struct spin_map_subst *subst, int n_subst)
{
	if (!rt || !buf || !len || !name || n_subst < 0 || (n_subst && !subst))
		return spin_seterr(SPIN_EUSAGE, "spin_handler_load_mem: no runtime, object or name");
	if (!spin_name_ok(name))
		return spin_seterr(SPIN_EUSAGE,
				   "bad handler name '%s' (1-63 characters, no '/', spaces or leading '.')",
				   name);
	return handler_load(rt, name, buf, len, name, subst, n_subst);
}

static int me_refs(struct spin_rt *rt, int slot, int *first)
{
	int n = 0;

	*first = -1;
	for (int i = 0; i < SPIN_MAX_ME; i++) {
		struct spin_me *m = &rt->me[i];

		if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != SPIN_ME_FREE &&
		    m->handler == (__u32)slot + 1) {
			if (*first < 0)
				*first = i;
			n++;
		}
	}
	return n;
}

int spin_handler_unload(struct spin_rt *rt, const char *name)
{
	char p[PATH_MAX];
	int err, slot, first, hfd = -1;
	__u32 k;

	if (!rt || !name)
		return spin_seterr(SPIN_EUSAGE, "spin_handler_unload: no runtime or name");
	err = spin_check_priv();
	if (err)
		return err;
	err = spin_lock(rt);
	if (err)
		return err;
	err = handlers_dir(rt, &hfd);
	if (err)
		goto out;
	slot = spin_handler_slot(rt, name);
	if (slot < 0) {
		err = slot;
		/* pinned but not in the array: just remove the pin */
		if (err == -SPIN_ENOENT && spin_name_ok(name) && exists_at(hfd, name) &&
		    !unlinkat(hfd, name, 0))
			err = 0;
		goto out;
	}
	if (me_refs(rt, slot, &first)) {
		err = spin_seterr(SPIN_EEXIST, "handler %s is used by match entry %d: unlink it first",
				  name, first);
		goto out;
	}
	k = slot;
	if (bpf_map_delete_elem(rt->map_fd[SPIN_M_HANDLERS], &k) && errno != ENOENT) {
		err = spin_seterr(SPIN_EFAIL, "cannot remove spin_handlers[%u]: %s", k, strerror(errno));
		goto out;
	}
	handler_path(rt, name, p, sizeof(p));
	if (unlinkat(hfd, name, 0))
		spin_warn("cannot remove %s: %s", p, strerror(errno));
	spin_gen_bump(rt);
	err = 0;
out:
	if (hfd >= 0)
		close(hfd);
	spin_unlock(rt);
	return err;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct spin_handler_info *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

int spin_handler_list(struct spin_rt *rt, struct spin_handler_info *out, int max)
{
	struct spin_handler_info all[SPIN_MAX_HANDLERS * 2];
	__u32 ids[SPIN_MAX_HANDLERS];
	char dir[PATH_MAX];
	struct dirent *de;
	int n = 0, err, first, hfd, dfd;
	DIR *d;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_handler_list: no runtime");
	err = read_slots(rt, ids);
	if (err)
		return err;
	snprintf(dir, sizeof(dir), "%s/%s", rt->pin_dir, SPIN_HANDLER_DIR);
	if ((err = handlers_dir(rt, &hfd)))
		return err;
	dfd = dup(hfd);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		err = spin_seterr(spin_errno_code(errno), "cannot read %s: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		close(hfd);
		return err;
	}
	while ((de = readdir(d)) && n < (int)(sizeof(all) / sizeof(all[0]))) {
		struct spin_handler_info *h = &all[n];
		struct bpf_prog_info info = {};
		__u32 ilen = sizeof(info);
		int fd;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(h->name))
			continue;
		fd = spin_obj_get_at(hfd, de->d_name);
		if (fd < 0)
			continue;
		memset(h, 0, sizeof(*h));
		memcpy(h->name, de->d_name, strlen(de->d_name) + 1);
		if (!bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
			h->prog_id = info.id;
			h->insns = info.xlated_prog_len / 8;
		}
		close(fd);
		h->slot = UINT32_MAX;
		for (int k = 0; k < SPIN_MAX_HANDLERS; k++)
			if (ids[k] && ids[k] == h->prog_id)
				h->slot = k;
		h->refs = h->slot == UINT32_MAX ? 0 : me_refs(rt, h->slot, &first);
		n++;
	}
	closedir(d);
	close(hfd);
	qsort(all, n, sizeof(all[0]), cmp_slot);
	if (out)
		memcpy(out, all, sizeof(all[0]) * (n < max ? n : (max > 0 ? max : 0)));
	return n;
}
