// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Host windows of process slots handed to applications that do not hold
 * the runtime's pins (docs/security.md, "Isolation").
 *
 * Every process slot has its own window (spin_wins, an ARRAY_OF_MAPS by
 * slot; wire.h, SPIN_WIN_SHIFT), and the runtime reaches a slot's window
 * only for entries of that slot's portals.  root grants slot S's window to
 * a user: a new, zeroed window goes into spin_wins[S] and is pinned as
 * win<S> in the interface's pin directory, owned by the user, mode 0600;
 * the directories on the way get o+x (search, not read or write), so the
 * user can open that pin and nothing else there: the runtime's other pins
 * stay 0600 root.  The kernel checks the pin's owner and mode at
 * BPF_OBJ_GET; an fd grants the mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libspin_internal.h"

static int slot_check(uint32_t slot)
{
	if (slot < 1 || slot >= SPIN_MAX_PROCS)
		return spin_seterr(SPIN_EUSAGE, "process slot %u: 1..%d (slot 0's window is the runtime owner's spin_host)",
				   slot, SPIN_MAX_PROCS - 1);
	return 0;
}

/* o+x and g+x on a directory (search only), never write */
static int dir_searchable(int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		return -1;
	return fchmod(fd, (st.st_mode & 07777 & ~(mode_t)(S_IWGRP | S_IWOTH)) | S_IXGRP | S_IXOTH);
}

int spin_win_grant(struct spin_rt *rt, uint32_t slot, uint32_t uid, uint32_t gid)
{
	struct spin_pins p;
	struct spin_proc pr;
	char name[16];
	int err, win = -1;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_win_grant: no runtime");
	if ((err = slot_check(slot)) || (err = spin_lock(rt)))
		return err;
	if (!bpf_map_lookup_elem(rt->map_fd[SPIN_M_PROCS], &slot, &pr) && pr.active &&
	    spin_owner_alive(pr.owner_pid, pr.owner_start)) {
		err = spin_seterr(SPIN_EEXIST, "process slot %u of '%s' is held by Portals process %u: grant a free slot",
				  slot, rt->ifname, pr.owner_pid);
		goto out;
	}
	/* a new window, shaped like slot 0's: what an earlier holder left
	 * there is not handed on */
	win = spin_map_like(rt->map_fd[SPIN_M_HOST], "spin_win", 0);
	if (win < 0) {
		err = spin_seterr(spin_errno_code(errno), "cannot make a host window for slot %u: %s",
				  slot, strerror(errno));
		goto out;
	}
	snprintf(name, sizeof(name), "win%u", slot);
	if (unlinkat(rt->dir_fd, name, 0) && errno != ENOENT) {
		err = spin_seterr(spin_errno_code(errno), "cannot remove %s/%s: %s", rt->pin_dir, name,
				  strerror(errno));
		goto out;
	}
	if (spin_obj_pin_at(win, rt->dir_fd, name) ||
	    fchownat(rt->dir_fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) ||
	    fchmodat(rt->dir_fd, name, 0600, 0)) {
		err = spin_seterr(spin_errno_code(errno), "cannot pin %s/%s for uid %u: %s", rt->pin_dir,
				  name, uid, strerror(errno));
		unlinkat(rt->dir_fd, name, 0);
		goto out;
	}
	if (bpf_map_update_elem(rt->map_fd[SPIN_M_WINS], &slot, &win, 0)) {
		err = spin_seterr(spin_errno_code(errno), "cannot put the window of slot %u in spin_wins: %s",
				  slot, strerror(errno));
		unlinkat(rt->dir_fd, name, 0);
		goto out;
	}
	/* the way to the pin: searchable, not listable or writable */
	spin_pins_init(&p);
	err = spin_pins_open(rt->ifname, SPIN_PINS_OPEN, &p);
	if (!err && (dir_searchable(p.spin) || (p.ns != p.spin && dir_searchable(p.ns)) ||
		     dir_searchable(p.dir)))
		err = spin_seterr(spin_errno_code(errno), "cannot make %s searchable: %s", p.path,
				  strerror(errno));
	spin_pins_close(&p);
	if (!err)
		spin_gen_bump(rt);
out:
	if (win >= 0)
		close(win);
	spin_unlock(rt);
	return err;
}

int spin_win_revoke(struct spin_rt *rt, uint32_t slot)
{
	char name[16];
	int err;

	if (!rt)
		return spin_seterr(SPIN_EUSAGE, "spin_win_revoke: no runtime");
	if ((err = slot_check(slot)) || (err = spin_lock(rt)))
		return err;
	snprintf(name, sizeof(name), "win%u", slot);
	if (unlinkat(rt->dir_fd, name, 0)) {
		err = errno == ENOENT ?
			spin_seterr(SPIN_ENOENT, "the window of slot %u of '%s' is not granted", slot, rt->ifname) :
			spin_seterr(spin_errno_code(errno), "cannot remove %s/%s: %s", rt->pin_dir, name,
				    strerror(errno));
		goto out;
	}
	/* the runtime stops writing it; a mapping the user holds is left
	 * with a window nothing reaches any more */
	bpf_map_delete_elem(rt->map_fd[SPIN_M_PUTQS], &slot);	/* (its queued puts too) */
	bpf_map_delete_elem(rt->map_fd[SPIN_M_MSTATES], &slot);	/* (and message states) */
	if (bpf_map_delete_elem(rt->map_fd[SPIN_M_WINS], &slot) && errno != ENOENT)
		err = spin_seterr(SPIN_EFAIL, "cannot take the window of slot %u out of spin_wins: %s",
				  slot, strerror(errno));
	spin_gen_bump(rt);
out:
	spin_unlock(rt);
	return err;
}

int spin_win_open(const char *ifname, uint32_t slot, void **mem, size_t *len)
{
	struct bpf_map_info info = {};
	uint32_t ilen = sizeof(info);
	char path[PATH_MAX];
	size_t l;
	void *m;
	int fd, n, err;

	if (!ifname || !mem)
		return spin_seterr(SPIN_EUSAGE, "spin_win_open: no interface or output");
	*mem = NULL;
	if ((err = slot_check(slot)))
		return err;
	if ((err = spin_pin_dir(ifname, path, sizeof(path))) < 0)
		return err;
	n = strlen(path);
	if (snprintf(path + n, sizeof(path) - n, "/win%u", slot) >= (int)(sizeof(path) - n))
		return spin_seterr(SPIN_EUSAGE, "pin directory path too long for %s", ifname);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return spin_seterr(SPIN_ENOENT, "no host window of slot %u on '%s' (%s): root grants it with 'spinctl window grant %s %u USER'",
					   slot, ifname, path, ifname, slot);
		if (e == EACCES || e == EPERM)
			return spin_seterr(SPIN_EPERM, "the host window of slot %u on '%s' is not this user's (%s: %s)",
					   slot, ifname, path, strerror(e));
		return spin_seterr(spin_errno_code(e), "cannot open %s: %s", path, strerror(e));
	}
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen) || info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size != SPIN_HOST_CHUNK || !(info.map_flags & BPF_F_MMAPABLE)) {
		close(fd);
		return spin_seterr(SPIN_EFAIL, "%s is not a host window", path);
	}
	l = (size_t)info.max_entries * SPIN_HOST_CHUNK;
	m = mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return spin_seterr(spin_errno_code(errno), "cannot map %s (%zu bytes): %s", path, l,
				   strerror(errno));
	*mem = m;
	if (len)
		*len = l;
	return 0;
}

int spin_win_close(void *mem, size_t len)
{
	if (mem && munmap(mem, len))
		return spin_seterr(SPIN_EUSAGE, "spin_win_close: %s", strerror(errno));
	return 0;
}
