// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libspin Portals: the memory of an MD or a list/match entry as the
 * application described it (lib/ptl_internal.h, struct ptl_buf):
 *
 *  - contiguous: start, length;
 *  - an iovec list (PTL_IOVEC): start points to length ptl_iovec_t, whose
 *    bytes are one buffer in list order.  The list is copied when the MD is
 *    bound or the entry appended (the application may reuse its array); the
 *    copy is reference counted, because a message being received keeps a
 *    snapshot of its entry;
 *  - the whole address space (start NULL, length PTL_SIZE_MAX): an offset is
 *    an address.  An address that comes from the wire (a remote offset) is
 *    not trusted: such copies go through process_vm_readv/writev on this
 *    process, which fail with EFAULT where a memcpy would take the process
 *    down.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "ptl_internal.h"

struct ptl_iovs {
	int refs;
	uint32_t n;
	ptl_iovec_t v[];
};

int ptl_buf_init(struct ptl_buf *b, void *start, ptl_size_t length, bool iovec, const char *who)
{
	const ptl_iovec_t *uv = start;
	ptl_size_t total = 0;

	memset(b, 0, sizeof(*b));
	if (!iovec) {
		if (!start && length == PTL_SIZE_MAX) {
			b->any = true;
			b->len = PTL_SIZE_MAX;
			return PTL_OK;
		}
		if (length && !start)
			return ptl_seterr(PTL_ARG_INVALID, "%s: NULL start with length %llu (the whole "
					  "address space is start NULL, length PTL_SIZE_MAX)", who,
					  (unsigned long long)length);
		/* a sanity bound on a region of this process (as before) */
		if (length > PTL_MAX_CONTIG || (uintptr_t)start + length < (uintptr_t)start)
			return ptl_seterr(PTL_ARG_INVALID, "%s: %llu bytes at %p: more than %llu, or past "
					  "the end of the address space (the whole address space is "
					  "start NULL, length PTL_SIZE_MAX)", who,
					  (unsigned long long)length, start,
					  (unsigned long long)PTL_MAX_CONTIG);
		b->start = start;
		b->len = length;
		return PTL_OK;
	}
	if (length > PTL_MAX_IOVECS)
		return ptl_seterr(PTL_ARG_INVALID, "%s: %llu iovecs, at most %d (max_iovecs)", who,
				  (unsigned long long)length, PTL_MAX_IOVECS);
	if (length && !start)
		return ptl_seterr(PTL_ARG_INVALID, "%s: PTL_IOVEC with a NULL list", who);
	for (ptl_size_t i = 0; i < length; i++) {
		if (uv[i].iov_len && !uv[i].iov_base)
			return ptl_seterr(PTL_ARG_INVALID, "%s: iovec %llu: NULL base, length %llu", who,
					  (unsigned long long)i, (unsigned long long)uv[i].iov_len);
		if (uv[i].iov_len > PTL_SIZE_MAX - total)
			return ptl_seterr(PTL_ARG_INVALID, "%s: the iovecs' lengths overflow", who);
		total += uv[i].iov_len;
	}
	b->iov = malloc(sizeof(*b->iov) + (size_t)length * sizeof(ptl_iovec_t));
	if (!b->iov)
		return PTL_NO_SPACE;
	b->iov->refs = 1;
	b->iov->n = (uint32_t)length;
	if (length)
		memcpy(b->iov->v, uv, (size_t)length * sizeof(ptl_iovec_t));
	b->len = total;
	return PTL_OK;
}

void ptl_buf_get(struct ptl_buf *b)
{
	if (b->iov)
		b->iov->refs++;
}

void ptl_buf_put(struct ptl_buf *b)
{
	if (b->iov && --b->iov->refs == 0)
		free(b->iov);
	b->iov = NULL;
}

/* The iovec holding byte off and the offset in it; false past the end. */
static bool iov_seek(const struct ptl_iovs *v, ptl_size_t off, uint32_t *i, ptl_size_t *in)
{
	for (uint32_t k = 0; k < v->n; k++) {
		if (off < v->v[k].iov_len) {
			*i = k;
			*in = off;
			return true;
		}
		off -= v->v[k].iov_len;
	}
	return false;
}

static int any_copy(void *dst, const void *src, ptl_size_t n, bool to_any)
{
	struct iovec local = { to_any ? (void *)src : dst, n };
	struct iovec remote = { to_any ? dst : (void *)src, n };
	ssize_t r;

	if (!n)
		return 0;
	r = to_any ? process_vm_writev(getpid(), &local, 1, &remote, 1, 0) :
		     process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	return r == (ssize_t)n ? 0 : -1;
}

static int buf_copy(const struct ptl_buf *b, ptl_size_t off, void *mem, ptl_size_t n, bool write)
{
	uint32_t i;
	ptl_size_t in;

	if (off > b->len || n > b->len - off)
		return -1;
	if (b->any)
		return write ? any_copy((void *)(uintptr_t)off, mem, n, true) :
			       any_copy(mem, (const void *)(uintptr_t)off, n, false);
	if (!b->iov) {
		if (n && write)
			memcpy(b->start + off, mem, n);
		else if (n)
			memcpy(mem, b->start + off, n);
		return 0;
	}
	if (!n)
		return 0;
	if (!iov_seek(b->iov, off, &i, &in))
		return -1;
	for (uint8_t *p = mem; n; i++, in = 0) {
		ptl_size_t k;

		if (i >= b->iov->n)
			return -1;
		k = b->iov->v[i].iov_len - in;
		if (k > n)
			k = n;
		if (write)
			memcpy((uint8_t *)b->iov->v[i].iov_base + in, p, k);
		else
			memcpy(p, (const uint8_t *)b->iov->v[i].iov_base + in, k);
		p += k;
		n -= k;
	}
	return 0;
}

int ptl_buf_write(const struct ptl_buf *b, ptl_size_t off, const void *src, ptl_size_t n)
{
	return buf_copy(b, off, (void *)src, n, true);
}

int ptl_buf_read(const struct ptl_buf *b, ptl_size_t off, void *dst, ptl_size_t n)
{
	return buf_copy(b, off, dst, n, false);
}

void *ptl_buf_addr(const struct ptl_buf *b, ptl_size_t off)
{
	uint32_t i;
	ptl_size_t in;

	if (b->any)
		return (void *)(uintptr_t)off;
	if (!b->iov)
		return b->start ? b->start + off : NULL;
	if (!iov_seek(b->iov, off, &i, &in))
		return NULL;
	return (uint8_t *)b->iov->v[i].iov_base + in;
}
