// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin pin directories, opened safely.
 *
 * bpffs is often mounted world-writable with the sticky bit (mode 1777), so
 * any local user can create <bpffs>/spin before root does, as a directory of
 * their own or as a symbolic link to someone else's pins.  Every directory
 * of the pin layout (spin/, spin/ns<inode>/, spin/.../<ifname>/ and its
 * handlers/) is therefore opened one component at a time with
 * O_DIRECTORY | O_NOFOLLOW and checked with fstat(): a real directory, owned
 * by the caller's effective uid or by root, not writable by group or
 * others.  Everything below is then reached relative to those descriptors:
 * pins are made and opened with BPF_F_PATH_FD (or /proc/self/fd/N/NAME on
 * kernels before 6.5), and removed with unlinkat(), never through a path a
 * symbolic link could redirect.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "libspin_internal.h"

/* BPF_OBJ_PIN/BPF_OBJ_GET attributes of Linux >= 6.5 (path_fd). */
#ifndef BPF_F_PATH_FD
#define BPF_F_PATH_FD	(1U << 14)
#endif

struct obj_attr {
	__u64 pathname;
	__u32 bpf_fd;
	__u32 file_flags;
	__s32 path_fd;
	__u32 pad;
};

static int path_fd_works = -1;	/* unknown, 0: kernel too old, 1: yes */

static int obj_call(int cmd, int dir_fd, const char *name, int obj_fd, __u32 flags)
{
	struct obj_attr a;
	char p[64 + NAME_MAX];
	int r;

	if (path_fd_works != 0) {
		memset(&a, 0, sizeof(a));
		a.pathname = (__u64)(unsigned long)name;
		a.bpf_fd = cmd == BPF_OBJ_PIN ? (__u32)obj_fd : 0;
		a.file_flags = flags | BPF_F_PATH_FD;
		a.path_fd = dir_fd;
		r = (int)syscall(__NR_bpf, cmd, &a, sizeof(a));
		if (r >= 0 || errno != EINVAL || path_fd_works == 1) {
			if (r >= 0)
				path_fd_works = 1;
			return r;
		}
		path_fd_works = 0;
	}
	/* before Linux 6.5: the directory's own inode through its descriptor
	 * (the magic link is not resolved by name, so nothing can redirect it) */
	snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", dir_fd, name);
	memset(&a, 0, sizeof(a));
	a.pathname = (__u64)(unsigned long)p;
	a.bpf_fd = cmd == BPF_OBJ_PIN ? (__u32)obj_fd : 0;
	a.file_flags = flags;
	return (int)syscall(__NR_bpf, cmd, &a, sizeof(a));
}

int spin_obj_pin_at(int obj_fd, int dir_fd, const char *name)
{
	if (!spin_name_ok(name)) {
		errno = EINVAL;
		return -1;
	}
	return obj_call(BPF_OBJ_PIN, dir_fd, name, obj_fd, 0) < 0 ? -1 : 0;
}

int spin_obj_get_at(int dir_fd, const char *name)
{
	struct stat st;

	if (!spin_name_ok(name)) {
		errno = EINVAL;
		return -1;
	}
	/* a symbolic link in a pin directory is not one of ours */
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -1;
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		return -1;
	}
	return obj_call(BPF_OBJ_GET, dir_fd, name, -1, 0);
}

/* "<parent>/<name>" for messages (cut short if it must be). */
static const char *shown(const char *parent, const char *name, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s", parent, name) >= (int)len && len > 4)
		strcpy(buf + len - 4, "...");
	return buf;
}

int spin_dir_check(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st))
		return spin_seterr(spin_errno_code(errno), "cannot stat %s: %s", path,
				   strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return spin_seterr(SPIN_EPERM, "unsafe pin directory %s: not a directory (remove it)",
				   path);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return spin_seterr(SPIN_EPERM,
				   "unsafe pin directory %s: owned by uid %u, not by root or uid %u "
				   "(someone else made it: remove it)", path, (unsigned)st.st_uid,
				   (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return spin_seterr(SPIN_EPERM,
				   "unsafe pin directory %s: writable by group or others (mode %04o; "
				   "remove it or chmod go-w)", path, (unsigned)(st.st_mode & 07777));
	return 0;
}

int spin_dir_open_at(int parent_fd, const char *parent, const char *name, bool create,
		     bool *made, int *out)
{
	char p[PATH_MAX];
	int fd, err;

	*out = -1;
	if (made)
		*made = false;
	shown(parent, name, p, sizeof(p));
	if (create) {
		if (!mkdirat(parent_fd, name, 0700)) {
			if (made)
				*made = true;
		} else if (errno != EEXIST) {
			return spin_seterr(spin_errno_code(errno), "cannot create %s: %s", p,
					   strerror(errno));
		}
	}
	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		struct stat st;

		if (e == ENOENT)
			return -SPIN_ENOENT;	/* the caller says what is missing */
		if ((e == ELOOP || e == ENOTDIR) &&
		    !fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
			return spin_seterr(SPIN_EPERM,
					   "unsafe pin directory %s: a symbolic link, not a directory "
					   "(someone else made it: remove it)", p);
		if (e == ELOOP || e == ENOTDIR)
			return spin_seterr(SPIN_EPERM,
					   "unsafe pin directory %s: not a directory (remove it)", p);
		if (e == EACCES || e == EPERM)
			return spin_seterr(SPIN_EPERM, "cannot open %s: need root (CAP_BPF, CAP_NET_ADMIN)",
					   p);
		return spin_seterr(spin_errno_code(e), "cannot open %s: %s", p, strerror(e));
	}
	err = spin_dir_check(fd, p);
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/* Remove directory name below parent_fd with everything in it, never
 * following a symbolic link (one is removed like a file).  depth bounds
 * the recursion: pin directories are two levels deep. */
static int rm_at(int parent_fd, const char *name, int depth)
{
	struct dirent *de;
	int fd, dfd, ret = 0;
	DIR *d;

	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP || errno == ENOTDIR)	/* a link or a file: remove only it */
			return unlinkat(parent_fd, name, 0) && errno != ENOENT ? -errno : 0;
		return -errno;
	}
	dfd = dup(fd);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		ret = -errno;
		if (dfd >= 0)
			close(dfd);
		close(fd);
		return ret;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode)) {
			int r = depth > 0 ? rm_at(fd, de->d_name, depth - 1) : -ELOOP;

			if (r && !ret)
				ret = r;
		} else if (unlinkat(fd, de->d_name, 0) && errno != ENOENT && !ret) {
			ret = -errno;
		}
	}
	closedir(d);
	close(fd);
	if (unlinkat(parent_fd, name, AT_REMOVEDIR) && errno != ENOENT && !ret)
		ret = -errno;
	return ret;
}

int spin_rm_pins_at(int parent_fd, const char *name)
{
	if (!name || !*name || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
		return -EINVAL;
	return rm_at(parent_fd, name, 4);
}

/* ------------------------------------------------- the pin layout -- */

void spin_pins_init(struct spin_pins *p)
{
	memset(p, 0, sizeof(*p));
	p->root = p->spin = p->ns = p->dir = -1;
}

void spin_pins_close(struct spin_pins *p)
{
	if (p->dir >= 0)
		close(p->dir);
	if (p->ns >= 0 && p->ns != p->spin)
		close(p->ns);
	if (p->spin >= 0)
		close(p->spin);
	if (p->root >= 0)
		close(p->root);
	spin_pins_init(p);
}

int spin_pins_open(const char *ifname, int mode, struct spin_pins *p)
{
	const char *root = spin_bpffs_root();
	unsigned long ino;
	bool made;
	int err;

	spin_pins_init(p);
	err = spin_netns_ino(&ino);
	if (err)
		return err;
	if (ino)
		snprintf(p->ns_name, sizeof(p->ns_name), "ns%lu", ino);
	p->root = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->root < 0) {
		err = errno == EACCES || errno == EPERM ?
			spin_seterr(SPIN_EPERM, "cannot open %s: need root (CAP_BPF, CAP_NET_ADMIN)", root) :
			spin_seterr(SPIN_ENOBPFFS, "bpffs not mounted at %s: run 'mount -t bpf bpf %s'",
				    root, root);
		goto fail;
	}
	shown(root, "spin", p->path, sizeof(p->path));
	err = spin_dir_open_at(p->root, root, "spin", mode != SPIN_PINS_OPEN, &made, &p->spin);
	if (err)
		goto fail;
	p->made_spin = made;
	if (ino) {
		char parent[PATH_MAX];

		memcpy(parent, p->path, sizeof(parent));
		shown(parent, p->ns_name, p->path, sizeof(p->path));
		err = spin_dir_open_at(p->spin, parent, p->ns_name, mode != SPIN_PINS_OPEN, &made,
				       &p->ns);
		if (err)
			goto fail;
		p->made_ns = made;
	} else {
		p->ns = p->spin;
	}
	{
		char parent[PATH_MAX];

		memcpy(parent, p->path, sizeof(parent));
		shown(parent, ifname, p->path, sizeof(p->path));
		if (mode == SPIN_PINS_CREATE) {
			if (mkdirat(p->ns, ifname, 0700)) {
				err = errno == EEXIST ? -SPIN_EEXIST :
				      spin_seterr(spin_errno_code(errno), "cannot create %s: %s",
						  p->path, strerror(errno));
				goto fail;
			}
			p->made_dir = true;
		}
		err = spin_dir_open_at(p->ns, parent, ifname, false, NULL, &p->dir);
		if (err)
			goto fail;
	}
	return 0;
fail:
	/* keep the descriptors of what was opened: the caller may clean up */
	return err;
}

int spin_pins_handlers(int dir_fd, const char *pin_dir, int *out)
{
	int err = spin_dir_open_at(dir_fd, pin_dir, SPIN_HANDLER_DIR, false, NULL, out);

	if (err == -SPIN_ENOENT)
		return spin_seterr(SPIN_ENOENT, "incomplete spin pins in %s (no %s/): run "
				   "'spinctl detach' and attach again", pin_dir, SPIN_HANDLER_DIR);
	return err;
}
