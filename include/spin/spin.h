/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libspin control plane: attach the runtime to an interface, load handler
 * objects, manage portal table entries, match entries and peers, read
 * statistics and events, map the host-memory window, and send sPIN messages
 * from userspace.
 *
 * Errors: functions return 0 / a non-negative value on success and a
 * negative SPIN_E* code on failure; spin_errmsg() then holds one line that
 * names the object and the fix.
 */
#ifndef SPIN_SPIN_H
#define SPIN_SPIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <spin/wire.h>
#include <spin/auth.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes; spinctl exits with the positive value. */
enum spin_err {
	SPIN_OK		= 0,
	SPIN_EFAIL	= 1,	/* anything else */
	SPIN_EUSAGE	= 2,	/* bad arguments */
	SPIN_EPERM	= 3,	/* not root / missing capability */
	SPIN_ENOBPFFS	= 4,	/* bpffs not mounted */
	SPIN_ENODEV	= 5,	/* no such interface */
	SPIN_EXDP	= 6,	/* XDP attach failed / unsupported */
	SPIN_EVERIFIER	= 7,	/* verifier rejected a program */
	SPIN_ENOENT	= 8,	/* not attached / no such object */
	SPIN_EEXIST	= 9,	/* already attached / exists / busy */
	SPIN_ENOSPC	= 10,	/* table or window full */
	SPIN_EIO	= 11,	/* send/receive failed */
	SPIN_ETIMEDOUT	= 12,
};

const char *spin_errmsg(void);	/* last error, one line, thread-local */

/* ------------------------------------------------------------ runtime -- */

struct spin_rt;

/* Largest host window: 2^20 pages of SPIN_PAGE bytes (4 GiB).  Lengths and
 * offsets in the window (spin_me_spec) are checked against it. */
#define SPIN_MAX_HOST_PAGES	(1u << 20)
#define SPIN_MAX_HOST_BYTES	((uint64_t)SPIN_MAX_HOST_PAGES * SPIN_PAGE)

struct spin_attach_opts {
	const char *ifname;
	bool generic;		/* XDP generic (skb) mode instead of native */
	bool no_dedup;		/* skip the per-source window of recent message
				 * ids: a duplicated single-packet message is
				 * then delivered twice (lossless fabrics) */
	uint16_t port;		/* UDP port, 0: SPIN_DEFAULT_PORT */
	uint32_t rank;		/* this node's rank */
	uint32_t pid;		/* this node's Portals pid */
	uint32_t host_pages;	/* host window pages, 0: default; at most
				 * SPIN_MAX_HOST_PAGES, rounded up to a
				 * multiple of 4 */
	uint64_t msg_timeout_ns;/* 0: SPIN_MSG_TIMEOUT_NS */
	bool wake_direct;	/* the packet path wakes the host's event reader
				 * itself (an interrupt on its CPU, a VM exit
				 * on a VM) instead of handing the wake-up to a
				 * work item that runs after the packet work */
	bool open;		/* accept packets from any source address (no
				 * check against the peer table): insecure,
				 * for a runtime without peers */
	uint32_t job_key;	/* 0: none; else packets must carry it */
	uint32_t get_max;	/* bytes the runtime sends in answer to one get
				 * of an entry it serves (wire.h, "Get cap"),
				 * 0: SPIN_MAX_MSG */
	struct spin_auth auth;	/* the job's auth key (wire.h, "Authenticator"),
				 * on 0: none; else every packet must carry its
				 * tag, and every packet sent carries it */
	const char *obj_path;	/* runtime object, NULL: installed default */
};

/* Load the runtime, pin it under spin_pin_dir(ifname) and attach it. */
int spin_attach(const struct spin_attach_opts *o, struct spin_rt **out);
/* Open an attached runtime from its pins. */
int spin_open(const char *ifname, struct spin_rt **out);
void spin_close(struct spin_rt *rt);
/* Detach from the interface and remove every pin. */
int spin_detach(const char *ifname);
/* The bpffs directory of an interface (depends on the network namespace). */
int spin_pin_dir(const char *ifname, char *buf, size_t len);

struct spin_status {
	char ifname[32];
	uint32_t ifindex;
	bool generic;
	uint32_t prog_id;
	struct spin_cfg cfg;
	char pin_dir[256];
	bool auth;		/* attached with an auth key (never shown) */
};
int spin_get_status(struct spin_rt *rt, struct spin_status *st);

/* --- added by the control plane: libbpf/diagnostic verbosity --- */
/* 0 (default): libbpf output is captured and only used in error messages;
 * 1: libbpf warnings and info go to stderr; 2: libbpf debug output too. */
void spin_set_verbose(int level);

/* ----------------------------------------------------------- handlers -- */

/* Load a handler object (SPIN_HANDLERS in it) under `name`.  On verifier
 * rejection returns -SPIN_EVERIFIER and spin_verifier_log() holds the
 * relevant lines. */
int spin_handler_load(struct spin_rt *rt, const char *path, const char *name);
/* The same from len bytes at buf (a shipped object, docs/shipping.md). */
int spin_handler_load_mem(struct spin_rt *rt, const void *buf, size_t len, const char *name);
/* Load it as process slot `slot`'s (0..SPIN_MAX_PROCS-1), whatever the
 * handle's: it and its finish stage reach that slot's window only (root,
 * for the entries of a slot granted with spin_win_grant; -SPIN_ENOENT if
 * the slot has no window). */
int spin_handler_load_slot(struct spin_rt *rt, const char *path, const char *name, uint32_t slot);
int spin_handler_unload(struct spin_rt *rt, const char *name);
const char *spin_verifier_log(void);

struct spin_handler_info {
	char name[64];
	uint32_t slot;		/* index into spin_handlers */
	uint32_t prog_id;
	uint32_t insns;		/* xlated instructions */
	uint32_t refs;		/* match entries using it */
};
/* Fill up to `max`; returns the number of handlers. */
int spin_handler_list(struct spin_rt *rt, struct spin_handler_info *out, int max);

/* Verify a handler object offline: its maps are created from the object's
 * own definitions (temporary, nothing pinned), its entry program loaded
 * and closed again, nothing attached; no runtime needed.  0 when the
 * verifier accepts it (out filled), -SPIN_EVERIFIER with
 * spin_verifier_log() when it rejects it, another -SPIN_E* when the
 * object is no handler or built for another ABI. */
struct spin_check_result {
	uint32_t abi;			/* the object's SPIN_ABI_VERSION */
	uint32_t verified_insns;	/* instructions the verifier processed */
	uint32_t xlated_insns;		/* instructions after its rewrites */
	uint32_t jited_bytes;		/* native code, 0 without the JIT */
	uint32_t maps;			/* maps the object declares */
	char stats[256];		/* the verifier's statistics line */
};
int spin_handler_check(const char *path, struct spin_check_result *out);

/* -------------------------------------------------- portal table / ME -- */

int spin_pt_alloc(struct spin_rt *rt, uint32_t pt_index);
/* flags: 0 or SPIN_PT_FLOWCTRL (a message that matches no entry disables
 * the portal table entry, wire.h).  Both set owner_pid = getpid(). */
/* flags: SPIN_PT_FLOWCTRL, and SPIN_PT_OWNED: the entry belongs to this
 * process (spin_pt.owner_pid): when the process is gone, the next Portals
 * process on the interface frees it and its match entries.  Without it
 * (spinctl) the entry stays until it is freed by hand. */
#define SPIN_PT_OWNED	0x80000000u
int spin_pt_alloc_flags(struct spin_rt *rt, uint32_t pt_index, uint32_t flags);
/* Read a portal table entry (flags, n_me, seq, owner_pid). */
int spin_pt_get(struct spin_rt *rt, uint32_t pt_index, struct spin_pt *out);
int spin_pt_free(struct spin_rt *rt, uint32_t pt_index);
int spin_pt_enable(struct spin_rt *rt, uint32_t pt_index, bool enable);

struct spin_me_spec {
	uint32_t pt_index;
	enum spin_me_list list;
	uint64_t match_bits;
	uint64_t ignore_bits;
	uint32_t match_rank;	/* SPIN_RANK_ANY */
	uint32_t match_pid;	/* SPIN_PID_ANY */
	uint32_t options;	/* SPIN_ME_* */
	const char *handler;	/* loaded handler name or NULL */
	uint64_t host_len;	/* ME buffer in the host window */
	uint64_t host_off;	/* UINT64_MAX: allocate */
	uint64_t hhost_len;	/* handler host memory */
	uint64_t hhost_off;	/* UINT64_MAX: allocate */
	const void *hpu_init;	/* initial handler memory */
	size_t hpu_init_len;	/* <= hpu_size */
	size_t hpu_size;	/* handler memory: 0 or SPIN_HPU_SIZE (4 KiB), or up to
				 * SPIN_HPU_BIG_SIZE (64 KiB) for a handler built with
				 * SPIN_HANDLER_MEM (one of SPIN_MAX_HPU_BIG entries) */
	uint64_t user_ptr;
};
/* Returns the ME index (>= 0). */
int spin_me_append(struct spin_rt *rt, const struct spin_me_spec *s);
int spin_me_unlink(struct spin_rt *rt, uint32_t me_index);
int spin_me_get(struct spin_rt *rt, uint32_t me_index, struct spin_me *out);
/* Threshold wake-ups.  For an entry appended with SPIN_ME_WAKE_COUNT the
 * runtime counts the units of the successful put/get completion events it
 * posts (messages, or bytes with SPIN_ME_WAKE_BYTES too) in
 * spin_me.wake_count.
 * With a threshold armed, only the event whose units reach `at` wakes a
 * reader sleeping on the event ring (spin_events_fd); the others are
 * posted quietly (stats: events_quiet).  Failures always wake.  at 0
 * disarms (every event wakes, the default).  Returns 1 if wake_count has
 * already reached `at` (that event may have been posted before the
 * threshold was seen: do not sleep on it), 0 if armed, < 0 on error.  A
 * reader computes `at` from the units it has consumed plus what it still
 * needs, so events in the ring that it has not read yet are counted. */
int spin_me_wake_arm(struct spin_rt *rt, uint32_t me_index, uint64_t at);
/* Read/write an ME's handler memory. */
int spin_hpu_read(struct spin_rt *rt, uint32_t me_index, void *buf, size_t len);
int spin_hpu_write(struct spin_rt *rt, uint32_t me_index, const void *buf, size_t len);

/* ------------------------------------------------------------- peers -- */

struct spin_peer_spec {
	uint32_t rank;
	struct in_addr ip;
	uint8_t mac[6];		/* all zero: resolve from the neighbour table */
	uint16_t port;		/* 0: same as ours */
	const char *ifname;	/* NULL: the runtime's interface */
	uint32_t pid;
	uint16_t slot;		/* its Portals process's slot at its address
				 * (docs/design.md, "Many Portals processes") */
};
int spin_peer_add(struct spin_rt *rt, const struct spin_peer_spec *p);
/* A MAC address: six groups of one or two hex digits separated by ':'
 * (no signs, spaces or 0x); true if s is exactly that. */
bool spin_mac_parse(const char *s, uint8_t mac[6]);
int spin_peer_del(struct spin_rt *rt, uint32_t rank);
int spin_peer_get(struct spin_rt *rt, uint32_t rank, struct spin_peer *out);

/* --------------------------------------------- host window, stats, events -- */

/* Map the host window of this handle's process slot (shared, read-write):
 * spin_host for slot 0 (spinctl, tools), a Portals process's own window
 * for its slot (docs/security.md, "Isolation"). */
void *spin_host_mem(struct spin_rt *rt, size_t *len);
/* root: give process slot `slot` (1..7) of the runtime a new, zeroed host
 * window, pinned as win<slot> in its pin directory, owned by uid:gid, mode
 * 0600; entries of that slot's portals (SPIN_PT_OF(slot, p)) deposit into
 * it and reach no other window.  -SPIN_EEXIST if a live Portals process
 * holds the slot. */
int spin_win_grant(struct spin_rt *rt, uint32_t slot, uint32_t uid, uint32_t gid);
/* root: take the grant back (the pin goes, and the runtime stops writing
 * the window). */
int spin_win_revoke(struct spin_rt *rt, uint32_t slot);
/* Any user: map the window of slot `slot` granted to this user (no other
 * pin of the runtime is needed or reachable) at *mem, *len bytes; 0, or
 * -SPIN_EPERM when it is another user's, -SPIN_ENOENT when not granted. */
int spin_win_open(const char *ifname, uint32_t slot, void **mem, size_t *len);
int spin_win_close(void *mem, size_t len);
int spin_stats_read(struct spin_rt *rt, struct spin_stats *sum);
int spin_stats_reset(struct spin_rt *rt);
const char *spin_drop_name(int reason);
const char *spin_drop_desc(int reason);

typedef int (*spin_event_fn)(void *ctx, const struct spin_event *ev);
/* Poll events for up to timeout_ms (-1 forever); returns events handled or
 * a negative error.  Callback returning non-zero stops the poll. */
int spin_events_poll(struct spin_rt *rt, spin_event_fn fn, void *ctx, int timeout_ms);
/* Handle the events already in the ring without waiting (no system call
 * when it is empty).  Returns events handled or a negative error. */
int spin_events_consume(struct spin_rt *rt, spin_event_fn fn, void *ctx);
/* An fd that polls readable when events wait (after the first
 * spin_events_poll/consume), or -1. */
int spin_events_fd(struct spin_rt *rt);
/* Whether the event ring holds events not yet consumed: a hint, safe to
 * call from another thread without the reader's lock (false before the
 * ring was first opened by spin_events_poll/consume). */
bool spin_events_pending(struct spin_rt *rt);
/* Serve SPIN_EV_PUT_FROM_HOST requests (puts from host longer than one
 * packet) and SPIN_EV_GET_FROM_HOST requests (get replies longer than one
 * packet: a SPIN_OP_REPLY message with the get's msg_id) that arrive in
 * spin_events_poll by sending them from the host window with
 * spin_sock_send (set once). */
int spin_events_serve_puts(struct spin_rt *rt, bool on);

/* --------------------------------------------------- userspace sending -- */

struct spin_msg_args {
	uint8_t op;		/* SPIN_OP_PUT (0 too); SPIN_OP_REPLY for a get's
				 * answer (msg_id = the get's); gets are sent with
				 * spin_sock_send_get() */
	uint16_t pt_index;
	uint32_t src_rank, src_pid, dst_rank;
	uint32_t msg_id;	/* 0: allocate */
	uint64_t match_bits;
	uint64_t remote_off;
	uint64_t hdr_data;
	uint64_t user_hdr[4];
	uint16_t seg_size;	/* 0: SPIN_MAX_SEG */
	uint16_t flags;
	uint32_t job_key;	/* the job's key (wire.h), 0: none.  AF_XDP
				 * sends use the runtime's; spin_sock sends
				 * this, or if it is 0 $SPIN_JOB_KEY as it
				 * was at spin_sock_open */
	struct spin_auth auth;	/* the job's auth key, on 0: none.  AF_XDP sends
				 * use the runtime's; spin_sock signs with this,
				 * or if it is off with $SPIN_AUTH_KEY as it was
				 * at spin_sock_open */
};

/* Fill a wire header for the packet at pkt_off of a message, its auth_tag
 * signed with a->auth if that is on. */
void spin_hdr_build(struct spin_hdr *h, const struct spin_msg_args *a,
		    uint32_t msg_len, uint32_t pkt_off);
/* Parse and validate a wire header; returns payload length or -1. */
int spin_hdr_parse(const void *udp_payload, size_t len, struct spin_hdr *out);

/* A UDP socket that speaks sPIN (the non-offloaded endpoint). */
struct spin_sock;
int spin_sock_open(const char *bind_ip, uint16_t port, struct spin_sock **out);
void spin_sock_close(struct spin_sock *s);
int spin_sock_fd(struct spin_sock *s);
/* Send a message of len bytes, cut into seg_size packets; order[] may give
 * a packet permutation (NULL: in order).  Returns 0 or negative error. */
int spin_sock_send(struct spin_sock *s, const struct sockaddr_in *dst,
		   const struct spin_msg_args *a, const void *buf, uint32_t len,
		   const uint32_t *order);
/*
 * Send a Portals get: one header-only SPIN_OP_GET datagram asking the target
 * for `length` bytes of the entry that a->pt_index/match_bits select, at
 * a->remote_off in it (a->op is ignored).  The target answers with a
 * SPIN_OP_REPLY message to a->src_rank's peer address (its spin port) with
 * the same msg_id: receive it with spin_sock_recv_msg() (msg_len = the
 * manipulated length, user_hdr[0] the requested length, user_hdr[1] the
 * failure, user_hdr[2] the list).  a->msg_id 0: allocated; *msg_id (if not
 * NULL) gets the id used.
 */
int spin_sock_send_get(struct spin_sock *s, const struct sockaddr_in *dst,
		       const struct spin_msg_args *a, uint32_t length, uint32_t *msg_id);
/* Receive one packet; fills header, copies payload; returns payload length,
 * -SPIN_ETIMEDOUT, or another negative error. */
int spin_sock_recv_pkt(struct spin_sock *s, struct spin_hdr *h, void *buf, size_t cap,
		       struct sockaddr_in *from, int timeout_ms);
/* Receive one whole message into buf (reassembling packets of one msg id,
 * any order); returns its length. */
int spin_sock_recv_msg(struct spin_sock *s, struct spin_hdr *h, void *buf, size_t cap,
		       struct sockaddr_in *from, int timeout_ms);
/* A whole Ethernet/IPv4/UDP/sPIN frame, for BPF_PROG_RUN, raw sockets and
 * generators.  Addresses in network order, ports in host order. */
struct spin_frame_addr {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip;
	uint16_t sport, dport;
};
/* Returns the frame length, or -1 if it does not fit in cap. */
int spin_frame_build(void *buf, size_t cap, const struct spin_frame_addr *a,
		     const struct spin_hdr *h, const void *payload, uint32_t len);
/* Fill in the UDP checksum of a frame spin_frame_build made (flen bytes;
 * spin_frame_build leaves it 0: no checksum).  The runtime drops a sPIN
 * packet whose checksum is set and wrong (bad_csum).  0, or -1 if the
 * frame is not IPv4/UDP. */
int spin_frame_csum(void *frame, size_t flen);

/* A fresh message id for rank `rank` (process-unique, never 0). */
uint32_t spin_next_msg_id(void);

/* ------------------------------------------------ job: ranks and peers -- */

/*
 * A job is the set of processes (one per host or network namespace) that
 * talk to each other over spin, each with a rank 0..size-1.  The ranks and
 * the peers' addresses come from a hostfile and/or the launcher's
 * environment, so one hostfile works unchanged on every host:
 *
 *   hostfile  the argument, else $SPIN_HOSTFILE.  One host per line; '#'
 *             starts a comment, blank lines are ignored.  A line is either
 *                 IP [mac=M] [port=P]
 *             (rank = the line's index among the host lines) or
 *                 rank=N ip=A [mac=M] [port=P]
 *             The ranks must be 0..size-1, each once; size = the number of
 *             host lines.
 *   rank      $SPIN_RANK, else $PMI_RANK, else $OMPI_COMM_WORLD_RANK; with a
 *             hostfile and none of them, the one host line that names one
 *             of this host's IPv4 addresses (getifaddrs).
 *   size      $SPIN_SIZE, else $PMI_SIZE, else $OMPI_COMM_WORLD_SIZE, else
 *             the number of hosts; with both they must agree.
 *
 * docs/spinctl.md ("Hostfiles and launchers") has the details.
 */
struct spin_job {
	uint32_t rank, size;		/* this process's rank, the job size */
	struct spin_job_host {
		uint32_t rank;
		struct in_addr ip;
		uint8_t mac[6];
		bool has_mac;		/* mac= given: no ARP for this host */
		uint16_t port;		/* 0: the runtime's port */
	} *hosts;			/* sorted by rank: hosts[i].rank == i */
	uint32_t nhosts;		/* 0 without a hostfile */
};

/* Fill j (on error it is left empty; spin_job_free() after success).  Errors
 * name file:line: -SPIN_EUSAGE for a bad line, duplicate rank, a rank out
 * of range or a rank that cannot be determined, -SPIN_ENOENT for a missing
 * hostfile. */
int spin_job_load(struct spin_job *j, const char *hostfile);
/* spin_peer_add() every host of the job, this process's own rank included
 * (MAC from the hostfile or resolved by spin_peer_add); stops at the first
 * failure.  Returns the number of peers added. */
int spin_job_peers(struct spin_rt *rt, const struct spin_job *j);
/* A job with a rank and size but no hostfile (a launcher's environment
 * only): publish this process's address as <dir>/spin-rank-<rank> and wait
 * up to timeout_ms until every rank of the job has, then fill j->hosts.
 * dir is a directory all ranks share (SPIN_RENDEZVOUS for PtlNIInit). */
int spin_job_rendezvous(struct spin_job *j, const char *dir, struct in_addr my_ip, int timeout_ms);
void spin_job_free(struct spin_job *j);
/* A job key (wire.h): "0x" and 1 to 8 hex digits, or a decimal number
 * without leading zeros; 1 to 0xffffffff.  0 or -SPIN_EUSAGE. */
int spin_job_key_parse(const char *s, uint32_t *key);
/* $SPIN_JOB_KEY: 0 and *key = 0 if unset or empty, 0 and the key, or
 * -SPIN_EUSAGE (the error names the variable and the form). */
int spin_job_key_env(uint32_t *key);
/* An auth key (wire.h, "Authenticator"): 32 hex digits (0x optional), the
 * key's 16 bytes in order, not all zero; or the path of a file (mode 0600
 * or stricter: not readable by group or others) that holds them on one
 * line.  0 and *a filled (on 1), or -SPIN_EUSAGE naming the problem. */
int spin_auth_key_parse(const char *s, struct spin_auth *a);
/* $SPIN_AUTH_KEY, the same forms: 0 and a->on 0 if unset or empty, 0 and
 * the key, or -SPIN_EUSAGE (the error names the variable). */
int spin_auth_key_env(struct spin_auth *a);
/* The auth key of an attached runtime (on 0: none). */
void spin_rt_auth(struct spin_rt *rt, struct spin_auth *out);

#ifdef __cplusplus
}
#endif
#endif /* SPIN_SPIN_H */
