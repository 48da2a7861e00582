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

/* stages/ of the runtime's pin directory, opened and checked (made if
 * create: a runtime attached before it existed has none); -SPIN_ENOENT
 * without create when it is missing. */
static int stages_dir(struct spin_rt *rt, bool create, int *fd)
{
	return spin_dir_open_at(rt->dir_fd, rt->pin_dir, SPIN_STAGES_DIR, create, NULL, fd);
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
 * The spin_wins a handler program and its finish stage get: an
 * ARRAY_OF_MAPS with win (the window of the loading handle's process slot,
 * or a shipped program's own) at that slot and nothing else, so they can
 * reach no other process's window (docs/security.md, "Isolation"), whatever
 * they look up.  An fd, or -1 with errno set.
 */
static int own_wins(struct spin_rt *rt, int win)
{
	int fd, e;
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

/*
 * The loading handle's process slot's map of a per-slot kind: slot 0's is
 * the runtime's map `base`, another slot's the inner map of the array of
 * maps `outer` at the slot, made like `base` (spin_map_like) and put
 * there the first time it is needed.  Called under the runtime's lock.
 * An fd, or -1 with errno set.
 */
static int own_slot_map(struct spin_rt *rt, int base, int outer, const char *name)
{
	uint32_t k = rt->slot, id = 0;
	int fd, e;

	if (k >= SPIN_MAX_PROCS) {
		errno = EINVAL;
		return -1;
	}
	if (!k)
		return dup(rt->map_fd[base]);
	if (!bpf_map_lookup_elem(rt->map_fd[outer], &k, &id) && id) {
		fd = bpf_map_get_fd_by_id(id);
		if (fd >= 0 || errno != ENOENT)
			return fd;
	}
	fd = spin_map_like(rt->map_fd[base], name, 0);
	if (fd < 0)
		return -1;
	if (bpf_map_update_elem(rt->map_fd[outer], &k, &fd, 0)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/*
 * The queued puts (spin_putq) of the loading handle's process slot, for a
 * handler program and its finish stage: slot 0's is the runtime's
 * spin_putq, another slot's is made here the first time a handler program
 * of the slot is loaded and put in spin_putqs (where spin_tc reads it),
 * so only the slots that fan out pay for one (docs/design.md, "Fan-out").
 * A handler program holds no other slot's: it cannot read or rewrite
 * their queued puts (docs/security.md, "Handlers").  Called under the
 * runtime's lock.  An fd, or -1 with errno set.
 */
static int own_putq(struct spin_rt *rt)
{
	return own_slot_map(rt, SPIN_M_PUTQ, SPIN_M_PUTQS, "spin_putq");
}

/*
 * The per-message state (spin_mstate) of the loading handle's process
 * slot, for a handler program and its finish stage: slot 0's is the
 * runtime's spin_mstate, another slot's is made here the first time a
 * handler program of the slot is loaded and put in spin_mstates (where the
 * runtime deletes a message's state when it frees the message), and
 * dropped when the slot is given back.  A handler program holds no other
 * slot's: whatever message key it asks for, it reaches no other process's
 * messages' state.  Called under the runtime's lock.  An fd, or -1 with
 * errno set.
 */
static int own_mstate(struct spin_rt *rt)
{
	return own_slot_map(rt, SPIN_M_MSTATE, SPIN_M_MSTATES, "spin_mstate");
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

/*
 * The runtime maps no handler program may hold (docs/security.md,
 * "Handlers"): every one but those below, which are its own or its
 * process slot's (own_make, maps_bind).  spin/maps.bpf.h declares the
 * others for the runtime object only (SPIN_RT_PROG), which the finish
 * stages are loaded from: what holds other entries' and messages' state
 * (spin_me, spin_msgs, spin_msg_bits, spin_dedup, spin_mx, spin_pt, ...),
 * other processes' (spin_procs, spin_rings, spin_putqs, spin_mstates,
 * spin_xsks), the runtime's accounting (spin_stats, spin_me_ct, spin_src,
 * ...), the finish stage's copy of a packet's identity (spin_tctx),
 * spin_hgets, where replies to handler gets are deposited, spin_auth, the
 * job's secret key, with which a handler could tag frames that claim any
 * rank, and spin_cfg and spin_peers, the runtime's configuration and rank
 * table.
 */
static bool rt_only(const char *mn)
{
	static const char *const own[] = {
		"spin_ctx", "spin_hscratch", "spin_mstate_pc", "spin_stages", "spin_handlers",
		"spin_hpu", "spin_hpu_big", "spin_host", "spin_wins", "spin_putq", "spin_mstate",
	};

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(mn, own[i]))
			return false;
	return true;
}

/* Open a handler object for spin_handler_check: only its entry program
 * is loaded, every map is its own (made at load, never pinned). */
static int check_open(const char *path, struct bpf_object **obj, struct bpf_program **entry)
{
	struct bpf_program *prog;
	struct bpf_map *m;
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
	/* what handler_load would refuse (maps_bind) */
	bpf_object__for_each_map(m, *obj)
		if (!bpf_map__is_internal(m) && rt_only(bpf_map__name(m)))
			return spin_seterr(SPIN_EFAIL,
					   "handler object %s declares map %s, which only the "
					   "runtime holds: rebuild it with this spin/maps.bpf.h", path,
					   bpf_map__name(m));
	bpf_object__for_each_program(prog, *obj)
		if (prog != *entry)
			bpf_program__set_autoload(prog, false);
	return 0;
}

/*
 * The verifier's log of handler object path, which failed to load, when
 * its log filled SPIN_LOG_BUF_SIZE: before Linux 6.4 the kernel keeps a
 * log's start, not its end, and the lines that say why it refused are at
 * the end.  Verified again, with maps of its own (check_open) and a log of
 * SPIN_LOG_BIG_SIZE; NULL when that log did not fit either (or the object
 * loaded this time).  The caller frees it.
 */
static bool log_cut(const char *log)
{
	/* full, and without the statistics a log ends with (a kernel that
	 * keeps the end, 6.4 on, has them) */
	return strnlen(log, SPIN_LOG_BUF_SIZE) >= SPIN_LOG_BUF_SIZE - 1 && !strstr(log, "processed ");
}

static char *log_again(const char *path)
{
	struct bpf_program *entry;
	struct bpf_object *obj = NULL;
	char *log = malloc(SPIN_LOG_BIG_SIZE);

	if (!log || check_open(path, &obj, &entry))
		goto fail;
	log[0] = 0;
	bpf_program__set_log_buf(entry, log, SPIN_LOG_BIG_SIZE);
	bpf_program__set_log_level(entry, 1);
	if (!bpf_object__load(obj) || !log[0] || strnlen(log, SPIN_LOG_BIG_SIZE) >= SPIN_LOG_BIG_SIZE - 1)
		goto fail;
	bpf_object__close(obj);
	return log;
fail:
	bpf_object__close(obj);
	free(log);
	return NULL;
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
			/* its end cut off (Linux before 6.4): again with room */
			char *big = log_cut(log) ? log_again(path) : NULL;

			err = spin_seterr(SPIN_EVERIFIER, "verifier rejected handler object %s: %s", path,
					  spin_vlog_set(big ? big : log));
			free(big);
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
 * The maps a handler program and its finish stage get instead of the
 * runtime's (docs/security.md, "Handlers"): its process's window under
 * both names (spin_wins holding only it, spin_host), its process's queued
 * puts (spin_putq) and messages' state (spin_mstate), its process slot's
 * handler memory (spin_hpu, spin_hpu_big: spin_hpu_fd), a spin_stages of
 * its own (its finish stage, itself) and an empty spin_handlers (no tail
 * call into another process's handler program with a spin_ctx of its
 * making).
 */
struct own_maps {
	int wins, host, stages, handlers, putq, hpu, hpu_big, mstate;
};

static void own_close(struct own_maps *o)
{
	int *f[] = { &o->wins, &o->host, &o->stages, &o->handlers, &o->putq, &o->hpu, &o->hpu_big,
		     &o->mstate };

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (*f[i] >= 0)
			close(*f[i]);
		*f[i] = -1;
	}
}

static int own_make(struct spin_rt *rt, const struct spin_map_subst *subst, int n_subst,
		    struct own_maps *o)
{
	int win = rt->win_fd >= 0 ? rt->win_fd : rt->map_fd[SPIN_M_HOST];

	o->wins = o->host = o->stages = o->handlers = o->putq = o->hpu = o->hpu_big = o->mstate = -1;
	if (spin_hpu_fd(rt, rt->slot, false, &o->hpu) || spin_hpu_fd(rt, rt->slot, true, &o->hpu_big)) {
		own_close(o);
		return -SPIN_EFAIL;	/* (set by spin_hpu_fd) */
	}
	for (int k = 0; k < n_subst; k++)	/* a shipped program's own window */
		if (!strcmp(subst[k].name, "spin_host"))
			win = subst[k].fd;
	o->wins = own_wins(rt, win);
	o->host = dup(win);
	o->putq = own_putq(rt);
	o->mstate = own_mstate(rt);
	o->stages = bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "spin_stages", 4, 4, SPIN_MAX_STAGES,
				   NULL);
	o->handlers = o->stages < 0 ? -1 :
		      bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "spin_handlers", 4, 4,
				     SPIN_MAX_HANDLERS, NULL);
	if (o->wins < 0 || o->host < 0 || o->putq < 0 || o->mstate < 0 || o->handlers < 0) {
		int e = errno;

		own_close(o);
		return spin_seterr(spin_errno_code(e), "cannot make a handler program's own maps: %s",
				   strerror(e));
	}
	return 0;
}

/*
 * Bind every map obj declares (path names it in messages): to the
 * caller's (subst: a shipped program's own), to the handler's own (o), or
 * to the runtime's pinned one of that name.  An object declaring a map the
 * runtime has not is refused, and so is a handler program (stage false)
 * declaring one of the runtime's own (rt_only): only the runtime and the
 * finish stages (stage true), code fixed at load, hold them.
 */
static int maps_bind(struct spin_rt *rt, struct bpf_object *obj, const char *path,
		     const struct spin_map_subst *subst, int n_subst, const struct own_maps *o,
		     bool stage)
{
	struct bpf_map *map;
	char p[PATH_MAX + 64];
	int fd, err;

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
			if (err)
				return spin_seterr(SPIN_EFAIL, "cannot use the private map %s for %s: %s",
						   mn, path, strerror(-err));
			continue;
		}
		snprintf(p, sizeof(p), "%s/%s", rt->pin_dir, mn);
		/* the runtime's maps are spin_*: never another pin of the
		 * directory (win<slot>, a window granted to a user) */
		if (strncmp(mn, "spin_", 5) || !spin_name_ok(mn) || !exists_at(rt->dir_fd, mn))
			return spin_seterr(SPIN_EFAIL,
					   "handler object %s declares map %s that is not a spin runtime map",
					   path, mn);
		if (!stage && rt_only(mn))
			return spin_seterr(SPIN_EFAIL,
					   "handler object %s declares map %s, which only the "
					   "runtime holds: rebuild it with this spin/maps.bpf.h", path, mn);
		if (!strcmp(mn, "spin_wins"))
			fd = dup(o->wins);	/* its process's window only */
		else if (!strcmp(mn, "spin_putq"))	/* slot 0's, by name: its own instead */
			fd = dup(o->putq);
		else if (!strcmp(mn, "spin_host"))	/* slot 0's, by name: its own instead */
			fd = dup(o->host);
		else if (!strcmp(mn, "spin_stages"))	/* its finish stage, itself */
			fd = dup(o->stages);
		else if (!strcmp(mn, "spin_handlers"))	/* no other handler program */
			fd = dup(o->handlers);
		else if (!strcmp(mn, "spin_hpu"))	/* its slot's entries' only */
			fd = dup(o->hpu);
		else if (!strcmp(mn, "spin_hpu_big"))
			fd = dup(o->hpu_big);
		else if (!strcmp(mn, "spin_mstate"))	/* its slot's messages' only */
			fd = dup(o->mstate);
		else
			fd = spin_obj_get_at(rt->dir_fd, mn);
		if (fd < 0)
			return spin_seterr(spin_errno_code(errno), "cannot open runtime map %s: %s", p,
					   strerror(errno));
		err = bpf_map__reuse_fd(map, fd);
		close(fd);	/* reuse_fd dup()s it */
		if (err)
			return spin_seterr(SPIN_EFAIL, "cannot reuse runtime map %s for %s: %s", mn, path,
					   strerror(-err));
	}
	return 0;
}

/* The tag (a hash of the instructions, map references left out) of
 * program fd; 0 or -1. */
static int prog_tag(int fd, __u8 tag[BPF_TAG_SIZE])
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	memcpy(tag, info.tag, BPF_TAG_SIZE);
	return 0;
}

/*
 * A handler program's finish stage: the runtime object's spin_finish
 * loaded again with the maps the handler program has (o, subst, the
 * runtime's pins for the rest) and spin_fin_slot set to the loading
 * process's slot (maps.bpf.h), so that it reaches that slot's window and
 * event ring only, whatever spin_ctx says.  It must be the program the
 * runtime was attached with (same tag as the runtime's spin_finish).
 * *fin: its fd.
 */
static int fin_load(struct spin_rt *rt, const char *name, const struct spin_map_subst *subst,
		    int n_subst, const struct own_maps *o, int *fin)
{
	struct bpf_object *obj = NULL;
	struct bpf_program *prog, *pf;
	struct bpf_map *m;
	char path[PATH_MAX];
	__u8 want[BPF_TAG_SIZE], got[BPF_TAG_SIZE];
	__u32 k = SPIN_STAGE_FINISH, id = 0, me_slot;
	size_t sz = 0;
	const void *ro;
	int err, rfd;
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "spin_fin");

	*fin = -1;
	if ((err = spin_rt_obj_find(path, sizeof(path))))
		return err;
	obj = bpf_object__open_file(path, &oo);
	if (!obj)
		return spin_seterr(SPIN_EFAIL, "cannot open runtime object %s: %s", path,
				   *spin_libbpf_last() ? spin_libbpf_last() : strerror(errno));
	err = spin_obj_abi_check(obj, path, "runtime object");
	if (err)
		goto out;
	pf = bpf_object__find_program_by_name(obj, "spin_finish");
	m = bpf_object__find_map_by_name(obj, SPIN_FIN_SECTION);
	ro = m ? bpf_map__initial_value(m, &sz) : NULL;
	if (!pf || !ro || sz < sizeof(__u32)) {
		err = spin_seterr(SPIN_EFAIL, "runtime object %s has no spin_finish or no %s: rebuild it",
				  path, SPIN_FIN_SECTION);
		goto out;
	}
	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, prog == pf);
	me_slot = rt->slot < SPIN_MAX_PROCS ? rt->slot : 0;
	if (sz != sizeof(me_slot) || bpf_map__set_initial_value(m, &me_slot, sizeof(me_slot))) {
		err = spin_seterr(SPIN_EFAIL, "cannot set the finish stage's slot in %s", path);
		goto out;
	}
	err = maps_bind(rt, obj, path, subst, n_subst, o, true);
	if (err)
		goto out;
	if (bpf_object__load(obj)) {
		err = spin_seterr(SPIN_EFAIL, "cannot load the finish stage of handler '%s' from %s: %s",
				  name, path, *spin_libbpf_last() ? spin_libbpf_last() : strerror(errno));
		goto out;
	}
	/* the runtime's own, for its tag */
	rfd = -1;
	if (!bpf_map_lookup_elem(rt->map_fd[SPIN_M_STAGES], &k, &id))
		rfd = bpf_prog_get_fd_by_id(id);
	if (prog_tag(rfd, want) || prog_tag(bpf_program__fd(pf), got) ||
	    memcmp(want, got, sizeof(want))) {
		err = spin_seterr(SPIN_EFAIL,
				  "runtime object %s is not the one '%s' was attached with (its spin_finish "
				  "differs): set SPIN_OBJ_DIR to the attached runtime's directory",
				  path, rt->ifname);
		if (rfd >= 0)
			close(rfd);
		goto out;
	}
	close(rfd);
	*fin = dup(bpf_program__fd(pf));
	err = *fin < 0 ? spin_seterr(SPIN_EFAIL, "dup: %s", strerror(errno)) : 0;
out:
	bpf_object__close(obj);
	return err;
}

/*
 * Load a handler object from a file (path) or from memory (buf, len; path
 * then only names it in messages), against the runtime's maps, with its
 * own finish stage.
 */
static int handler_load(struct spin_rt *rt, const char *path, const void *buf, size_t len,
			const char *name, const struct spin_map_subst *subst, int n_subst)
{
	struct bpf_object *obj = NULL;
	struct bpf_program *prog, *entry;
	struct own_maps own = { -1, -1, -1, -1, -1, -1, -1, -1 };
	char p[PATH_MAX + 64];
	__u32 ids[SPIN_MAX_HANDLERS], k;
	char *log = NULL;
	int err, slot = -1, fd, hfd = -1, sfd = -1, fin = -1;
	bool pinned = false, spinned = false;

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
	/* its own spin_stages is pinned as stages/<name>: a program array
	 * empties when nothing holds it open */
	err = stages_dir(rt, true, &sfd);
	if (err)
		goto out;
	unlinkat(sfd, name, 0);	/* a leftover of a handler that is gone */

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
	err = own_make(rt, subst, n_subst, &own);
	if (err)
		goto out;
	err = maps_bind(rt, obj, path, subst, n_subst, &own, false);
	if (err)
		goto out;
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
			/* its end cut off (Linux before 6.4): again with room */
			char *big = !buf && log_cut(log) ? log_again(path) : NULL;
			const char *line = spin_vlog_set(big ? big : log);
			int fb = buf ? 0 : spin_compat_fallbacks();

			free(big);

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
	/* its finish stage, then both in its spin_stages */
	err = fin_load(rt, name, subst, n_subst, &own, &fin);
	if (err)
		goto out;
	k = SPIN_STAGE_FINISH;
	if (bpf_map_update_elem(own.stages, &k, &fin, BPF_ANY) ||
	    (k = SPIN_STAGE_SELF,
	     bpf_map_update_elem(own.stages, &k, &(int){ bpf_program__fd(entry) }, BPF_ANY))) {
		err = spin_seterr(SPIN_EFAIL, "cannot fill the stages of handler '%s': %s", name,
				  strerror(errno));
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
	if (spin_obj_pin_at(own.stages, sfd, name)) {
		err = spin_seterr(spin_errno_code(errno), "cannot pin %s/%s/%s: %s", rt->pin_dir,
				  SPIN_STAGES_DIR, name, strerror(errno));
		goto out;
	}
	spinned = true;
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
	pinned = spinned = false;
	spin_gen_bump(rt);
	err = slot;
out:
	if (pinned)
		unlinkat(hfd, name, 0);
	if (spinned)
		unlinkat(sfd, name, 0);
	if (sfd >= 0)
		close(sfd);
	if (hfd >= 0)
		close(hfd);
	spin_unlock(rt);
	bpf_object__close(obj);
	if (fin >= 0)
		close(fin);
	own_close(&own);
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

int spin_handler_load_slot(struct spin_rt *rt, const char *path, const char *name, uint32_t slot)
{
	uint32_t oslot, k = slot, id = 0;
	int ofd, fd, err;

	if (!rt || !path)
		return spin_seterr(SPIN_EUSAGE, "spin_handler_load_slot: no runtime or object path");
	if (slot >= SPIN_MAX_PROCS)
		return spin_seterr(SPIN_EUSAGE, "process slot %u out of range (0..%d)", slot,
				   SPIN_MAX_PROCS - 1);
	if (slot == rt->slot)
		return spin_handler_load(rt, path, name);
	/* the slot's window, from spin_wins (the map's id) */
	if (bpf_map_lookup_elem(rt->map_fd[SPIN_M_WINS], &k, &id) || !id)
		return spin_seterr(SPIN_ENOENT, "process slot %u of '%s' has no window (grant one: "
				   "'spinctl window grant %s %u USER')", slot, rt->ifname, rt->ifname,
				   slot);
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return spin_seterr(spin_errno_code(errno), "cannot open the window of slot %u: %s", slot,
				   strerror(errno));
	oslot = rt->slot;
	ofd = rt->win_fd;
	rt->slot = slot;
	rt->win_fd = slot ? fd : -1;	/* slot 0's is spin_host */
	err = spin_handler_load(rt, path, name);
	rt->slot = oslot;
	rt->win_fd = ofd;
	close(fd);
	return err;
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

/* Unpin a handler program's spin_stages: the program array empties (when
 * no one holds it open), and the program and its finish stage go. */
static void stages_unpin(struct spin_rt *rt, const char *name)
{
	int sfd;

	if (stages_dir(rt, false, &sfd))
		return;
	if (unlinkat(sfd, name, 0) && errno != ENOENT)
		spin_warn("cannot remove %s/%s/%s: %s", rt->pin_dir, SPIN_STAGES_DIR, name,
			  strerror(errno));
	close(sfd);
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
		/* pinned but not in the array: just remove the pins */
		if (err == -SPIN_ENOENT && spin_name_ok(name) && exists_at(hfd, name) &&
		    !unlinkat(hfd, name, 0)) {
			stages_unpin(rt, name);
			err = 0;
		}
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
	stages_unpin(rt, name);
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
