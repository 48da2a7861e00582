/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Portals 4.1 host API as libspin implements it, over the spin
 * XDP runtime and AF_XDP.  Names, types and semantics are the Portals 4.1
 * specification's, so programs written against Portals 4 compile unchanged
 * (`#include <spin/portals4.h>`, or `#include <portals4.h>` with
 * -I<prefix>/include/spin).  The numeric values of constants are spin's own:
 * recompile, don't relink.
 *
 * Implemented: every function of the Portals 4.1 specification (matching
 * and non-matching NIs, a process holding one of each at once; list and
 * match entries; iovec and whole-address-space MDs and entries; sends to
 * the process itself; triggered puts, gets, atomics, counter operations
 * and, as the reference implementation has them, triggered appends and
 * unlinks).  Every datatype; a conditional swap on long double complex is
 * not implemented (its operand does not fit in a packet's header).
 * The sPIN extension is in spin/portals4_spin.h; docs/portals.md has the
 * details and the limits.
 */
#ifndef SPIN_PORTALS4_H
#define SPIN_PORTALS4_H

#include <stddef.h>
#include <stdint.h>
#include <spin/ptl_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------- return codes -- */

enum ptl_retvals {
	PTL_OK = 0,
	PTL_ARG_INVALID,	/* an argument is invalid (or a bad handle) */
	PTL_CT_NONE_REACHED,	/* PtlCTPoll: timeout before any test was reached */
	PTL_EQ_DROPPED,		/* an event was returned, and some were dropped */
	PTL_EQ_EMPTY,		/* no event */
	PTL_FAIL,		/* anything else */
	PTL_IN_USE,		/* the resource is in use */
	PTL_INTERRUPTED,	/* a wait was interrupted (PtlNIFini) */
	PTL_LIST_TOO_LONG,	/* the list of a portal table entry is full */
	PTL_NO_INIT,		/* PtlInit (or PtlNIInit) has not been called */
	PTL_NO_SPACE,		/* out of memory or table entries */
	PTL_PID_IN_USE,		/* the requested pid is in use */
	PTL_PT_FULL,		/* PTL_PT_ANY: no free portal table entry */
	PTL_PT_EQ_NEEDED,	/* PTL_PT_FLOWCTRL without an event queue */
	PTL_PT_IN_USE,		/* the portal table entry is allocated / busy */
	PTL_IGNORED,		/* the call did nothing (it was not needed) */
	PTL_ABORTED,		/* a wait or poll was aborted (PtlAbort, Portals 4.3) */
};

/* ---------------------------------------------------------- base types -- */

typedef unsigned int ptl_time_t;	/* milliseconds */
typedef unsigned int ptl_interface_t;
typedef uint32_t ptl_jid_t;
typedef int ptl_sr_value_t;
typedef enum {
	PTL_SR_DROP_COUNT,		/* messages dropped by the runtime */
	PTL_SR_PERMISSIONS_VIOLATIONS,	/* always 0 (no access control) */
	PTL_SR_OPERATIONS_VIOLATIONS,	/* operations an entry did not allow */
} ptl_sr_index_t;
#define PTL_SR_LAST (PTL_SR_OPERATIONS_VIOLATIONS + 1)

typedef uint32_t ptl_handle_any_t;
typedef ptl_handle_any_t ptl_handle_ni_t;
typedef ptl_handle_any_t ptl_handle_eq_t;
typedef ptl_handle_any_t ptl_handle_ct_t;
typedef ptl_handle_any_t ptl_handle_md_t;
typedef ptl_handle_any_t ptl_handle_me_t;
typedef ptl_handle_any_t ptl_handle_le_t;
/* sPIN extension handles (spin/portals4_spin.h) */
typedef ptl_handle_any_t ptl_handle_handler_t;	/* a loaded handler object */
typedef ptl_handle_any_t ptl_handle_hpu_mem_t;	/* handler (HPU) memory */

#define PTL_INVALID_HANDLE	((ptl_handle_any_t)0xffffffff)
#define PTL_EQ_NONE		((ptl_handle_eq_t)0xf0000002)
#define PTL_CT_NONE		((ptl_handle_ct_t)0xf0000003)
#define PTL_HANDLER_NONE	((ptl_handle_handler_t)0)	/* no handlers */
#define PTL_HPU_MEM_NONE	((ptl_handle_hpu_mem_t)0)	/* no handler memory image */

#define PTL_IFACE_DEFAULT	((ptl_interface_t)0xffffffff)
#define PTL_UID_ANY		((ptl_uid_t)0xffffffff)
#define PTL_JID_ANY		((ptl_jid_t)0xffffffff)
#define PTL_JID_NONE		((ptl_jid_t)0)
#define PTL_PT_ANY		((ptl_pt_index_t)0xffffffff)
#define PTL_TIME_FOREVER	((ptl_time_t)0xffffffff)

/* ptl_ni_fail_t values (ptl_types.h has the type) */
#define PTL_NI_OK		((ptl_ni_fail_t)0)
#define PTL_NI_UNDELIVERABLE	((ptl_ni_fail_t)1)	/* no route, no answer, target gone */
#define PTL_NI_DROPPED		((ptl_ni_fail_t)2)	/* no match, bad portal index */
#define PTL_NI_PT_DISABLED	((ptl_ni_fail_t)3)	/* target portal table entry disabled */
#define PTL_NI_FLOW_CTRL	PTL_NI_PT_DISABLED
#define PTL_NI_PERM_VIOLATION	((ptl_ni_fail_t)4)
#define PTL_NI_NO_MATCH		((ptl_ni_fail_t)5)	/* PtlMESearch found nothing */
#define PTL_NI_OP_VIOLATION	((ptl_ni_fail_t)6)	/* the entry does not allow the op */
#define PTL_NI_SEGV		((ptl_ni_fail_t)7)	/* outside the local buffer */

/* ------------------------------------------------ network interfaces -- */

#define PTL_NI_MATCHING		(1u << 0)
#define PTL_NI_NO_MATCHING	(1u << 1)	/* list entries (PtlLE*), no match bits */
#define PTL_NI_LOGICAL		(1u << 2)
#define PTL_NI_PHYSICAL		(1u << 3)

#define PTL_TARGET_BIND_INACCESSIBLE	(1u << 0)
#define PTL_TOTAL_DATA_ORDERING		(1u << 1)
#define PTL_COHERENT_ATOMICS		(1u << 2)

typedef struct {
	int max_entries;		/* match entries per NI */
	int max_unexpected_headers;
	int max_mds;
	int max_cts;
	int max_eqs;
	int max_pt_index;		/* portal indexes are 0..max_pt_index */
	int max_iovecs;			/* 0: no iovecs */
	int max_list_size;		/* entries per portal table entry */
	int max_triggered_ops;
	ptl_size_t max_msg_size;
	ptl_size_t max_atomic_size;
	ptl_size_t max_fetch_atomic_size;
	ptl_size_t max_waw_ordered_size;
	ptl_size_t max_war_ordered_size;
	ptl_size_t max_volatile_size;
	unsigned int features;
} ptl_ni_limits_t;

int PtlInit(void);
void PtlFini(void);
/* Portals 4.3 (as the reference implementation has it): every thread in
 * PtlEQWait, PtlEQPoll, PtlCTWait or PtlCTPoll returns PTL_ABORTED, and so
 * does every such call made until all of them have returned; then waits
 * work again.  With nobody waiting it does nothing.  What a multithreaded
 * application calls before PtlEQFree / PtlCTFree of what others wait on. */
void PtlAbort(void);

/*
 * iface: PTL_IFACE_DEFAULT is the interface named by $SPIN_IFACE, else the
 * only interface (other than lo) with an IPv4 address; another value is an
 * ifindex.  The spin runtime is attached to it if it is not yet.  Logical
 * NIs load the job (rank, size and peers) from $SPIN_HOSTFILE and the
 * launcher's environment (spin/spin.h, spin_job_load).  pid: PTL_PID_ANY
 * picks one.  A matching and a non-matching NI per process at a time.
 * desired (or NULL): the limits asked for; the NI gets each, or spin's
 * where it asks for more (or a negative count), and they are enforced;
 * actual: what it got.  A second PtlNIInit of the same NI gets the same
 * limits (docs/portals.md, "Limits").
 */
int PtlNIInit(ptl_interface_t iface, unsigned int options, ptl_pid_t pid,
	      const ptl_ni_limits_t *desired, ptl_ni_limits_t *actual,
	      ptl_handle_ni_t *ni_handle);
int PtlNIFini(ptl_handle_ni_t ni_handle);
int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t status_register,
		ptl_sr_value_t *status);
int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle);
/* The rank -> nid/pid map of a logical NI (nid: IPv4 address, host order). */
int PtlSetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size, const ptl_process_t *mapping);
int PtlGetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size, ptl_process_t *mapping,
	      ptl_size_t *actual_map_size);
int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_t *id);
int PtlGetPhysId(ptl_handle_ni_t ni_handle, ptl_process_t *id);
int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid);
int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2);

/* ------------------------------------------------ portal table entries -- */

#define PTL_PT_ONLY_USE_ONCE	(1u << 0)
#define PTL_PT_FLOWCTRL		(1u << 1)
#define PTL_PT_ONLY_TRUNCATE	(1u << 2)
#define PTL_PT_MATCH_UNORDERED	(1u << 3)
#define PTL_PT_ALLOC_DISABLED	(1u << 4)

int PtlPTAlloc(ptl_handle_ni_t ni_handle, unsigned int options, ptl_handle_eq_t eq_handle,
	       ptl_pt_index_t pt_index_req, ptl_pt_index_t *pt_index);
int PtlPTFree(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);
int PtlPTEnable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);
int PtlPTDisable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);

/* ---------------------------------------------------- memory descriptors -- */

#define PTL_IOVEC			(1u << 0)	/* MDs, MEs, LEs: start is a ptl_iovec_t list */
#define PTL_MD_EVENT_CT_SEND		(1u << 1)
#define PTL_MD_EVENT_CT_REPLY		(1u << 2)
#define PTL_MD_EVENT_CT_ACK		(1u << 3)
#define PTL_MD_UNORDERED		(1u << 4)
#define PTL_MD_EVENT_SUCCESS_DISABLE	(1u << 5)
#define PTL_MD_VOLATILE			(1u << 6)
#define PTL_MD_EVENT_SEND_DISABLE	(1u << 7)
#define PTL_MD_UNRELIABLE		(1u << 8)
#define PTL_MD_EVENT_CT_BYTES		(1u << 9)

typedef struct {
	void *start;
	ptl_size_t length;
	unsigned int options;
	ptl_handle_eq_t eq_handle;
	ptl_handle_ct_t ct_handle;
} ptl_md_t;

typedef struct {
	void *iov_base;
	ptl_size_t iov_len;
} ptl_iovec_t;

int PtlMDBind(ptl_handle_ni_t ni_handle, const ptl_md_t *md, ptl_handle_md_t *md_handle);
int PtlMDRelease(ptl_handle_md_t md_handle);

/* --------------------------------------------------- match list entries -- */

typedef unsigned char ptl_list_t;
#define PTL_PRIORITY_LIST	0
#define PTL_OVERFLOW_LIST	1

typedef unsigned char ptl_search_op_t;
#define PTL_SEARCH_ONLY		0
#define PTL_SEARCH_DELETE	1

/* ME options; OP_PUT, OP_GET, USE_ONCE, NO_TRUNCATE, EVENT_COMM_DISABLE and
 * EVENT_SUCCESS_DISABLE have the values of the runtime's SPIN_ME_* */
#define PTL_ME_OP_PUT			(1u << 2)
#define PTL_ME_OP_GET			(1u << 3)
#define PTL_ME_USE_ONCE			(1u << 4)
#define PTL_ME_ACK_DISABLE		(1u << 5)
#define PTL_ME_UNEXPECTED_HDR_DISABLE	(1u << 6)
#define PTL_ME_NO_TRUNCATE		(1u << 7)
#define PTL_ME_MANAGE_LOCAL		(1u << 8)
#define PTL_ME_MAY_ALIGN		(1u << 9)
#define PTL_ME_EVENT_COMM_DISABLE	(1u << 10)
#define PTL_ME_EVENT_FLOWCTRL_DISABLE	(1u << 11)
#define PTL_ME_EVENT_SUCCESS_DISABLE	(1u << 12)
#define PTL_ME_EVENT_OVER_DISABLE	(1u << 13)
#define PTL_ME_EVENT_UNLINK_DISABLE	(1u << 14)
#define PTL_ME_EVENT_LINK_DISABLE	(1u << 15)
#define PTL_ME_EVENT_CT_COMM		(1u << 16)
#define PTL_ME_EVENT_CT_OVERFLOW	(1u << 17)
#define PTL_ME_EVENT_CT_BYTES		(1u << 18)
#define PTL_ME_IS_ACCESSIBLE		(1u << 19)
#define PTL_ME_AUTH_USE_JID		(1u << 20)
/* Portals 4.2/4.3: with PTL_ME_MANAGE_LOCAL, each unexpected header the
 * entry takes at its append moves its local offset by the header's
 * rlength (without it, by nothing) */
#define PTL_ME_LOCAL_INC_UH_RLENGTH	(1u << 21)

typedef struct {
	void *start;			/* may be NULL when length is 0 */
	ptl_size_t length;
	ptl_handle_ct_t ct_handle;
	ptl_uid_t uid;			/* PTL_UID_ANY (no access control) */
	unsigned int options;		/* PTL_ME_* */
	ptl_process_t match_id;		/* rank, or nid/pid; *_ANY wildcards */
	ptl_match_bits_t match_bits;
	ptl_match_bits_t ignore_bits;
	ptl_size_t min_free;		/* PTL_ME_MANAGE_LOCAL: unlink below */
	/*
	 * sPIN extension (spin/portals4_spin.h).  Zero (as in an entry that
	 * was memset or designated-initialized) means none.
	 */
	ptl_handle_handler_t handlers;	/* header/payload/completion handlers */
	ptl_handle_hpu_mem_t hpu_memory;/* initial handler memory image */
	void *handler_host_mem;		/* PTL_HANDLER_HOST_MEM region: in the */
	ptl_size_t handler_host_mem_length; /* host window (PtlSpinHostAlloc) */
} ptl_me_t;

int PtlMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
		ptl_list_t ptl_list, void *user_ptr, ptl_handle_me_t *me_handle);
int PtlMEUnlink(ptl_handle_me_t me_handle);
int PtlMESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
		ptl_search_op_t ptl_search_op, void *user_ptr);

/* ---------------------------------------------------- list entries -- */

/* Non-matching NIs (PTL_NI_NO_MATCHING): an entry takes every message on
 * its portal, in list order, whatever its match bits and source.  The
 * options have the values of the PTL_ME_* of the same name. */
#define PTL_LE_OP_PUT			PTL_ME_OP_PUT
#define PTL_LE_OP_GET			PTL_ME_OP_GET
#define PTL_LE_USE_ONCE			PTL_ME_USE_ONCE
#define PTL_LE_ACK_DISABLE		PTL_ME_ACK_DISABLE
#define PTL_LE_UNEXPECTED_HDR_DISABLE	PTL_ME_UNEXPECTED_HDR_DISABLE
#define PTL_LE_IS_ACCESSIBLE		PTL_ME_IS_ACCESSIBLE
#define PTL_LE_EVENT_COMM_DISABLE	PTL_ME_EVENT_COMM_DISABLE
#define PTL_LE_EVENT_FLOWCTRL_DISABLE	PTL_ME_EVENT_FLOWCTRL_DISABLE
#define PTL_LE_EVENT_SUCCESS_DISABLE	PTL_ME_EVENT_SUCCESS_DISABLE
#define PTL_LE_EVENT_OVER_DISABLE	PTL_ME_EVENT_OVER_DISABLE
#define PTL_LE_EVENT_UNLINK_DISABLE	PTL_ME_EVENT_UNLINK_DISABLE
#define PTL_LE_EVENT_LINK_DISABLE	PTL_ME_EVENT_LINK_DISABLE
#define PTL_LE_EVENT_CT_COMM		PTL_ME_EVENT_CT_COMM
#define PTL_LE_EVENT_CT_OVERFLOW	PTL_ME_EVENT_CT_OVERFLOW
#define PTL_LE_EVENT_CT_BYTES		PTL_ME_EVENT_CT_BYTES
#define PTL_LE_AUTH_USE_JID		PTL_ME_AUTH_USE_JID

typedef struct {
	void *start;
	ptl_size_t length;
	ptl_handle_ct_t ct_handle;
	ptl_uid_t uid;			/* PTL_UID_ANY (no access control) */
	unsigned int options;		/* PTL_LE_* */
} ptl_le_t;

int PtlLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
		ptl_list_t ptl_list, void *user_ptr, ptl_handle_le_t *le_handle);
int PtlLEUnlink(ptl_handle_le_t le_handle);
int PtlLESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
		ptl_search_op_t ptl_search_op, void *user_ptr);

/* ------------------------------------------------------ counting events -- */

typedef struct {
	ptl_size_t success;
	ptl_size_t failure;
} ptl_ct_event_t;

typedef enum {
	PTL_CT_OPERATION,
	PTL_CT_BYTE,
} ptl_ct_type_t;

int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle);
int PtlCTFree(ptl_handle_ct_t ct_handle);
int PtlCTCancelTriggered(ptl_handle_ct_t ct_handle);
int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event);
int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event);
int PtlCTPoll(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size,
	      ptl_time_t timeout, ptl_ct_event_t *event, unsigned int *which);
int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct);
int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment);

/* ------------------------------------------------------ data movement -- */

/* ptl_ack_req_t and its values are in spin/ptl_types.h */

int PtlPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
	   ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
	   ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
	   ptl_hdr_data_t hdr_data);
int PtlGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
	   ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
	   ptl_size_t remote_offset, void *user_ptr);

typedef unsigned char ptl_op_t;
#define PTL_MIN		0
#define PTL_MAX		1
#define PTL_SUM		2
#define PTL_PROD	3
#define PTL_LOR		4
#define PTL_LAND	5
#define PTL_BOR		6
#define PTL_BAND	7
#define PTL_LXOR	8
#define PTL_BXOR	9
#define PTL_SWAP	10
#define PTL_CSWAP	11
#define PTL_CSWAP_NE	12
#define PTL_CSWAP_LE	13
#define PTL_CSWAP_LT	14
#define PTL_CSWAP_GE	15
#define PTL_CSWAP_GT	16
#define PTL_MSWAP	17
#define PTL_OP_LAST	18

/* ptl_datatype_t and PTL_INT8_T ... PTL_LONG_DOUBLE_COMPLEX: spin/ptl_types.h
 * (handlers name them too) */

int PtlAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
	      ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
	      ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
	      ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype);
int PtlFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
		   ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
		   ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
		   ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
		   ptl_op_t operation, ptl_datatype_t datatype);
int PtlSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
	    ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
	    ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
	    ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
	    const void *operand, ptl_op_t operation, ptl_datatype_t datatype);
int PtlAtomicSync(void);
/* Bundles: between PtlStartBundle and the matching PtlEndBundle, puts and
 * atomics are queued on the AF_XDP TX ring and handed to the kernel
 * together at PtlEndBundle (one system call in copy mode, and the packets
 * leave back to back).  Nestable; a get, an ack or a reply sent meanwhile
 * flushes what is queued. */
int PtlStartBundle(ptl_handle_ni_t ni_handle);
int PtlEndBundle(ptl_handle_ni_t ni_handle);

/* -------------------------------------------------------- event queues -- */

typedef unsigned char ptl_event_kind_t;
#define PTL_EVENT_GET			0
#define PTL_EVENT_GET_OVERFLOW		1
#define PTL_EVENT_PUT			2
#define PTL_EVENT_PUT_OVERFLOW		3
#define PTL_EVENT_ATOMIC		4
#define PTL_EVENT_ATOMIC_OVERFLOW	5
#define PTL_EVENT_FETCH_ATOMIC		6
#define PTL_EVENT_FETCH_ATOMIC_OVERFLOW	7
#define PTL_EVENT_REPLY			8
#define PTL_EVENT_SEND			9
#define PTL_EVENT_ACK			10
#define PTL_EVENT_PT_DISABLED		11
#define PTL_EVENT_LINK			12
#define PTL_EVENT_AUTO_UNLINK		13
#define PTL_EVENT_AUTO_FREE		14
#define PTL_EVENT_SEARCH		15

typedef struct {
	void *start;
	void *user_ptr;
	ptl_hdr_data_t hdr_data;
	ptl_match_bits_t match_bits;
	ptl_size_t rlength;
	ptl_size_t mlength;
	ptl_size_t remote_offset;
	ptl_process_t initiator;
	ptl_uid_t uid;
	ptl_pt_index_t pt_index;
	ptl_event_kind_t type;
	ptl_list_t ptl_list;
	ptl_ni_fail_t ni_fail_type;
	ptl_op_t atomic_operation;
	ptl_datatype_t atomic_type;
} ptl_event_t;

int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count, ptl_handle_eq_t *eq_handle);
int PtlEQFree(ptl_handle_eq_t eq_handle);
int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event);
int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event);
int PtlEQPoll(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout,
	      ptl_event_t *event, unsigned int *which);

/* -------------------------------------------------- triggered operations -- */

int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
		    ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
		    ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
		    ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct_handle,
		    ptl_size_t threshold);
int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
		    ptl_process_t target_id, ptl_pt_index_t pt_index,
		    ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
		    ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
		       ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
		       ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
		       ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype,
		       ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
			    ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
			    ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
			    ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
			    ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype,
			    ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
		     ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
		     ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
		     ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
		     const void *operand, ptl_op_t operation, ptl_datatype_t datatype,
		     ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
/* Entries appended and unlinked when a counter reaches a threshold (the
 * reference implementation's PtlTriggeredMEAppend/MEUnlink, and their list
 * entry counterparts).  The handle is valid at once; the entry matches
 * from the moment the operation fires. */
int PtlTriggeredMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
			 ptl_list_t ptl_list, void *user_ptr, ptl_handle_me_t *me_handle,
			 ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredMEUnlink(ptl_handle_me_t me_handle, ptl_handle_ct_t trig_ct_handle,
			 ptl_size_t threshold);
int PtlTriggeredLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
			 ptl_list_t ptl_list, void *user_ptr, ptl_handle_le_t *le_handle,
			 ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredLEUnlink(ptl_handle_le_t le_handle, ptl_handle_ct_t trig_ct_handle,
			 ptl_size_t threshold);
int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment,
		      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct,
		      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

#ifdef __cplusplus
}
#endif

#include <spin/portals4_spin.h>

#endif /* SPIN_PORTALS4_H */
