/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Portals 4 scalar types shared by the device side (spin/handler.h) and the
 * host side.  Names and widths follow the Portals 4.1 specification.
 */
#ifndef SPIN_PTL_TYPES_H
#define SPIN_PTL_TYPES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#endif

/* uint64_t as the specification's header declares them (so that
 * PRIu64 and the like fit), __u64 of the same width on the device side */
#ifdef __VMLINUX_H__
typedef __u64 ptl_size_t;
typedef __u64 ptl_match_bits_t;
typedef __u64 ptl_hdr_data_t;
#else
typedef uint64_t ptl_size_t;
typedef uint64_t ptl_match_bits_t;
typedef uint64_t ptl_hdr_data_t;
#endif
#define PTL_SIZE_MAX	((ptl_size_t)0xffffffffffffffffULL)
typedef __u32 ptl_pt_index_t;
typedef __u32 ptl_nid_t;
typedef __u32 ptl_pid_t;
typedef __u32 ptl_rank_t;
typedef __u32 ptl_uid_t;
typedef unsigned char ptl_ni_fail_t;	/* as the specification's header */

typedef union {
	struct {
		ptl_nid_t nid;
		ptl_pid_t pid;
	} phys;
	ptl_rank_t rank;
} ptl_process_t;

/* unsigned char as the specification's header declares it */
typedef unsigned char ptl_ack_req_t;
#define PTL_ACK_REQ	0
#define PTL_NO_ACK_REQ	1
#define PTL_CT_ACK_REQ	2
#define PTL_OC_ACK_REQ	3

/* atomic datatypes (PtlAtomic and friends; PtlHandlerDMAFetchAdd*) */
typedef unsigned char ptl_datatype_t;
#define PTL_INT8_T	0
#define PTL_UINT8_T	1
#define PTL_INT16_T	2
#define PTL_UINT16_T	3
#define PTL_INT32_T	4
#define PTL_UINT32_T	5
#define PTL_FLOAT	6
#define PTL_INT64_T	7
#define PTL_UINT64_T	8
#define PTL_DOUBLE	9
#define PTL_FLOAT_COMPLEX	10	/* float _Complex */
#define PTL_DOUBLE_COMPLEX	11	/* double _Complex */
#define PTL_LONG_DOUBLE		12	/* long double (this machine's) */
#define PTL_LONG_DOUBLE_COMPLEX	13	/* long double _Complex */
#define PTL_DATATYPE_LAST 14

#define PTL_NID_ANY	((ptl_nid_t)0xffffffff)
#define PTL_PID_ANY	((ptl_pid_t)0xffffffff)
#define PTL_RANK_ANY	((ptl_rank_t)0xffffffff)

#endif /* SPIN_PTL_TYPES_H */
