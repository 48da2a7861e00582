// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of the Portals layer's buffers (lib/ptl_buf.c): iovec lists
 * checked and copied, bytes scattered and gathered across segments at any
 * offset, the whole address space copied with checks, bounds.
 *
 *   selftests/test_ptl_buf [-t GLOB]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "test.h"
#include "../lib/ptl_internal.h"

static void test_contiguous(void)
{
	uint8_t m[64] = { 0 }, in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];
	struct ptl_buf b;

	ASSERT_EQ(ptl_buf_init(&b, m, sizeof(m), false, "t"), PTL_OK, "contiguous");
	ASSERT_TRUE(ptl_buf_flat(&b), "flat");
	ASSERT_EQ(ptl_buf_write(&b, 56, in, 8), 0, "write at the end");
	ASSERT_EQ(ptl_buf_write(&b, 57, in, 8), -1, "write past the end");
	ASSERT_EQ(ptl_buf_write(&b, UINT64_MAX, in, 8), -1, "offset that overflows");
	ASSERT_EQ(ptl_buf_read(&b, 56, out, 8), 0, "read back");
	ASSERT_MEM(out, in, 8, "bytes");
	ASSERT_TRUE(ptl_buf_addr(&b, 3) == m + 3, "address");
	ASSERT_EQ(ptl_buf_init(&b, NULL, 10, false, "t"), PTL_ARG_INVALID, "NULL with a length");
	ASSERT_EQ(ptl_buf_init(&b, NULL, 0, false, "t"), PTL_OK, "NULL, length 0");
	ASSERT_EQ(ptl_buf_init(&b, m, PTL_SIZE_MAX, false, "t"), PTL_ARG_INVALID,
		  "a start with length PTL_SIZE_MAX");
	ASSERT_EQ(ptl_buf_init(&b, m, PTL_MAX_CONTIG + 1, false, "t"), PTL_ARG_INVALID,
		  "more than a contiguous region may have");
}

static void test_iovec(void)
{
	static const size_t cut[] = { 3, 0, 1, 10, 7 };	/* 21 bytes, one empty */
	uint8_t seg[5][16], in[21], out[21];
	ptl_iovec_t iov[5];
	struct ptl_buf b, snap;

	for (int i = 0; i < 5; i++) {
		memset(seg[i], 0xee, sizeof(seg[i]));
		iov[i] = (ptl_iovec_t){ seg[i], cut[i] };
	}
	for (int i = 0; i < 21; i++)
		in[i] = (uint8_t)(i + 1);
	ASSERT_EQ(ptl_buf_init(&b, iov, 5, true, "t"), PTL_OK, "iovec list");
	ASSERT_EQ(b.len, 21, "its bytes");
	ASSERT_TRUE(!ptl_buf_flat(&b), "not flat");
	memset(iov, 0, sizeof(iov));	/* the copy is the buffer's */
	/* every offset and length: scatter, gather, compare with the cut */
	for (size_t off = 0; off <= 21; off++)
		for (size_t n = 0; off + n <= 21; n++) {
			for (int i = 0; i < 5; i++)
				memset(seg[i], 0xee, sizeof(seg[i]));
			ASSERT_EQ(ptl_buf_write(&b, off, in, n), 0, "scatter");
			for (size_t o = 0, i = 0; i < 5; i++)
				for (size_t k = 0; k < cut[i]; k++, o++) {
					uint8_t want = o >= off && o < off + n ? in[o - off] : 0xee;

					if (seg[i][k] != want) {
						T_MSG("off %zu n %zu: byte %zu is 0x%02x, want 0x%02x", off, n,
						      o, seg[i][k], want);
						t_failed_now = 1;
						return;
					}
				}
			memset(out, 0, sizeof(out));
			ASSERT_EQ(ptl_buf_read(&b, off, out, n), 0, "gather");
			ASSERT_MEM(out, in, n, "gathered bytes");
			if (t_failed_now)
				return;
		}
	ASSERT_EQ(ptl_buf_write(&b, 20, in, 2), -1, "past the end");
	ASSERT_TRUE(ptl_buf_addr(&b, 0) == seg[0], "address of byte 0");
	ASSERT_TRUE(ptl_buf_addr(&b, 3) == seg[2], "byte 3 (after the empty segment)");
	ASSERT_TRUE(ptl_buf_addr(&b, 20) == seg[4] + 6, "the last byte");
	ASSERT_TRUE(ptl_buf_addr(&b, 21) == NULL, "past the end");
	/* a snapshot keeps the list when the buffer goes */
	snap = b;
	ptl_buf_get(&snap);
	ptl_buf_put(&b);
	ASSERT_EQ(ptl_buf_read(&snap, 0, out, 21), 0, "the snapshot reads");
	ptl_buf_put(&snap);
	ASSERT_TRUE(snap.iov == NULL, "put clears");
}

static void test_iovec_bad(void)
{
	uint8_t m[8];
	ptl_iovec_t iov[2] = { { m, 8 }, { NULL, 1 } };
	struct ptl_buf b;

	ASSERT_EQ(ptl_buf_init(&b, iov, 2, true, "t"), PTL_ARG_INVALID, "NULL base with a length");
	iov[1] = (ptl_iovec_t){ m, UINT64_MAX - 7 };
	ASSERT_EQ(ptl_buf_init(&b, iov, 2, true, "t"), PTL_ARG_INVALID, "lengths that overflow");
	ASSERT_EQ(ptl_buf_init(&b, iov, PTL_MAX_IOVECS + 1, true, "t"), PTL_ARG_INVALID,
		  "more than max_iovecs");
	ASSERT_EQ(ptl_buf_init(&b, NULL, 2, true, "t"), PTL_ARG_INVALID, "NULL list");
	ASSERT_EQ(ptl_buf_init(&b, NULL, 0, true, "t"), PTL_OK, "an empty list");
	ASSERT_EQ(b.len, 0, "no bytes");
	ptl_buf_put(&b);
}

static void test_any(void)
{
	uint8_t m[32] = { 0 }, in[4] = { 9, 8, 7, 6 }, out[4];
	struct ptl_buf b;
	void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_EQ(ptl_buf_init(&b, NULL, PTL_SIZE_MAX, false, "t"), PTL_OK, "whole address space");
	ASSERT_TRUE(b.any && !ptl_buf_flat(&b), "any");
	ASSERT_EQ(ptl_buf_write(&b, (uintptr_t)m + 5, in, 4), 0, "write to an address");
	ASSERT_MEM(m + 5, in, 4, "bytes");
	ASSERT_EQ(ptl_buf_read(&b, (uintptr_t)m + 5, out, 4), 0, "read from an address");
	ASSERT_MEM(out, in, 4, "read bytes");
	ASSERT_TRUE(ptl_buf_addr(&b, (uintptr_t)m) == m, "the offset is the address");
	/* addresses that fault: an error, not a crash */
	ASSERT_EQ(ptl_buf_write(&b, 8, in, 4), -1, "write to address 8");
	ASSERT_EQ(ptl_buf_read(&b, 8, out, 4), -1, "read from address 8");
	if (hole != MAP_FAILED) {
		ASSERT_EQ(ptl_buf_write(&b, (uintptr_t)hole, in, 4), -1, "write to PROT_NONE");
		munmap(hole, 4096);
	}
	ASSERT_EQ(ptl_buf_write(&b, UINT64_MAX - 1, in, 4), -1, "past the end of the space");
}

int main(int argc, char **argv)
{
	t_args(argc, argv, "ptl_buf");
	RUN_TEST(test_contiguous);
	RUN_TEST(test_iovec);
	RUN_TEST(test_iovec_bad);
	RUN_TEST(test_any);
	return t_summary();
}
