// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin errors: thread-local one-line messages, libbpf output capture and
 * verifier log filtering.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "libspin_internal.h"

static __thread char errmsg[1024];
static __thread char vlog[16384];
static __thread char vlog_err[512];

/* libbpf output of this thread since the last spin_libbpf_reset() (tail) */
#define CAP_SIZE 8192
static __thread char cap[CAP_SIZE];
static __thread size_t cap_len;

static int verbose;

const char *spin_errmsg(void)
{
	return errmsg[0] ? errmsg : "no error";
}

int spin_seterr(int code, const char *fmt, ...)
{
	va_list ap;
	char *nl;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	/* one line */
	while ((nl = strchr(errmsg, '\n')))
		*nl = ' ';
	return -code;
}

int spin_errno_code(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case EPERM:
	case EACCES:
		return SPIN_EPERM;
	case ENOENT:
		return SPIN_ENOENT;
	case EEXIST:
	case EBUSY:
		return SPIN_EEXIST;
	case ENOSPC:
	case E2BIG:
		return SPIN_ENOSPC;
	case ENODEV:
	case ENXIO:
		return SPIN_ENODEV;
	case ETIMEDOUT:
		return SPIN_ETIMEDOUT;
	case EIO:
		return SPIN_EIO;
	case EINVAL:
		return SPIN_EUSAGE;
	default:
		return SPIN_EFAIL;
	}
}

void spin_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("spin: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------ libbpf output -- */

static void cap_append(const char *s, size_t n)
{
	if (n >= CAP_SIZE) {
		s += n - (CAP_SIZE - 1);
		n = CAP_SIZE - 1;
	}
	if (cap_len + n >= CAP_SIZE) {
		size_t drop = cap_len + n - (CAP_SIZE - 1);

		memmove(cap, cap + drop, cap_len - drop);
		cap_len -= drop;
	}
	memcpy(cap + cap_len, s, n);
	cap_len += n;
	cap[cap_len] = 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[2048];
	int n, v = __atomic_load_n(&verbose, __ATOMIC_RELAXED);

	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0)
		return 0;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (level != LIBBPF_DEBUG)
		cap_append(line, n);
	if ((level == LIBBPF_DEBUG && v >= 2) || (level != LIBBPF_DEBUG && v >= 1))
		fputs(line, stderr);
	return n;
}

static pthread_once_t print_once = PTHREAD_ONCE_INIT;

static void print_init(void)
{
	libbpf_set_print(libbpf_print);
}

void spin_libbpf_init(void)
{
	pthread_once(&print_once, print_init);
}

void spin_set_verbose(int level)
{
	__atomic_store_n(&verbose, level, __ATOMIC_RELAXED);
	spin_libbpf_init();
}

void spin_libbpf_reset(void)
{
	spin_libbpf_init();
	cap_len = 0;
	cap[0] = 0;
}

const char *spin_libbpf_all(void)
{
	return cap;
}

/* The last line that libbpf printed, without "libbpf: " and newline. */
const char *spin_libbpf_last(void)
{
	static __thread char last[512];
	const char *e = cap + cap_len, *s;

	while (e > cap && (e[-1] == '\n' || e[-1] == ' '))
		e--;
	s = e;
	while (s > cap && s[-1] != '\n')
		s--;
	if (!strncmp(s, "libbpf: ", 8))
		s += 8;
	snprintf(last, sizeof(last), "%.*s", (int)(e - s), s);
	return last;
}

/* ------------------------------------------------------- verifier log -- */

const char *spin_verifier_log(void)
{
	return vlog;
}

void spin_vlog_clear(void)
{
	vlog[0] = 0;
	vlog_err[0] = 0;
}

/* Lines that follow the error in a verifier log (statistics). */
static int is_trailer(const char *s, size_t n)
{
	static const char *const pfx[] = {
		"processed ", "verification time", "stack depth", "-- END",
		"max_states_per_insn", "Validating ", "Func#",
	};
	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++) {
		size_t l = strlen(pfx[i]);

		if (n >= l && !strncmp(s, pfx[i], l))
			return 1;
	}
	return 0;
}

#define VLOG_SCAN	64	/* lines looked at, from the end */
#define VLOG_BEFORE	10	/* lines of context before the error */
#define VLOG_LINE_MAX	300

/*
 * Keep the end of a verifier log: the error line (the last line that is
 * not a statistics trailer), the VLOG_BEFORE lines before it (the failing
 * instructions and register states) and the "processed N insns" line.
 */
const char *spin_vlog_set(const char *log)
{
	const char *ls[VLOG_SCAN];
	size_t ll[VLOG_SCAN];
	int n = 0, err = -1, proc = -1, first;
	const char *end, *p;
	size_t used = 0;

	spin_vlog_clear();
	if (!log)
		return vlog_err;
	end = log + strlen(log);
	/* collect the last VLOG_SCAN non-empty lines, newest first */
	p = end;
	while (p > log && n < VLOG_SCAN) {
		const char *e = p, *s;

		while (e > log && (e[-1] == '\n' || e[-1] == '\r'))
			e--;
		s = e;
		while (s > log && s[-1] != '\n')
			s--;
		if (e > s) {
			ls[n] = s;
			ll[n] = e - s;
			n++;
		}
		p = s;
	}
	if (!n)
		return vlog_err;
	/* reverse to oldest first */
	for (int i = 0; i < n / 2; i++) {
		const char *ts = ls[i];
		size_t tl = ll[i];

		ls[i] = ls[n - 1 - i];
		ll[i] = ll[n - 1 - i];
		ls[n - 1 - i] = ts;
		ll[n - 1 - i] = tl;
	}
	for (int i = n - 1; i >= 0; i--) {
		if (!is_trailer(ls[i], ll[i])) {
			err = i;
			break;
		}
		if (!strncmp(ls[i], "processed ", 10))
			proc = i;
	}
	if (err < 0)
		err = n - 1;
	first = err - VLOG_BEFORE < 0 ? 0 : err - VLOG_BEFORE;
	for (int i = first; i < n; i++) {
		int len;

		if (i > err && i != proc)
			continue;
		len = ll[i] > VLOG_LINE_MAX ? VLOG_LINE_MAX : (int)ll[i];
		if (used + len + 5 >= sizeof(vlog))
			break;
		used += snprintf(vlog + used, sizeof(vlog) - used, "%.*s%s\n", len, ls[i],
				 ll[i] > VLOG_LINE_MAX ? "..." : "");
	}
	snprintf(vlog_err, sizeof(vlog_err), "%.*s",
		 (int)(ll[err] > 400 ? 400 : ll[err]), ls[err]);
	return vlog_err;
}
