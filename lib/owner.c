// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin owners: is the process that allocated something still there?
 *
 * A pid alone does not say: kill(pid, 0) succeeds for any process that got
 * the number after the owner exited, and a pid recorded in another PID
 * namespace names a different process (or none) here.  Owners therefore
 * record their start time too (field 22 of /proc/PID/stat, clock ticks
 * since boot, the same in every PID namespace), and a pid counts as alive
 * only while /proc/PID/stat shows that start time and the process is not a
 * zombie.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libspin_internal.h"

/* State and start time of /proc/<pid>/stat (pid 0: this process); 0, or
 * -errno (-ENOENT: no such process). */
static int proc_stat(uint32_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p, *save = NULL, *tok;
	ssize_t n;
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	/* "pid (comm) state ppid ...": comm may hold spaces and ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	tok = strtok_r(p + 1, " ", &save);	/* field 3: state */
	if (!tok)
		return -EIO;
	*state = tok[0];
	for (int f = 4; f <= 22; f++) {
		tok = strtok_r(NULL, " ", &save);
		if (!tok)
			return -EIO;
	}
	errno = 0;
	*start = strtoull(tok, &p, 10);
	if (errno || *p)
		return -EIO;
	return 0;
}

uint32_t spin_proc_start(uint32_t pid)
{
	unsigned long long st;
	char state;
	uint32_t v;

	if (proc_stat(pid, &state, &st))
		return 0;
	v = (uint32_t)st;
	return v ? v : 1;	/* 0 means unknown */
}

bool spin_owner_alive(uint32_t pid, uint32_t start)
{
	unsigned long long st;
	char state;
	uint32_t v;
	int err;

	if (!pid || pid > INT32_MAX)
		return false;
	err = proc_stat(pid, &state, &st);
	if (err == -ENOENT || err == -ESRCH)
		return false;
	if (err || !start) {
		/* no /proc, or an owner that recorded no start time (an older
		 * libspin): all that is left is the pid */
		if (kill((pid_t)pid, 0) == 0)
			return true;
		return errno == EPERM;
	}
	if (state == 'Z' || state == 'X')
		return false;	/* exited, not yet reaped */
	v = (uint32_t)st;
	return (v ? v : 1) == start;
}
