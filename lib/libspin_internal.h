/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libspin internals shared by the lib/ sources (not installed).
 */
#ifndef SPIN_LIBSPIN_INTERNAL_H
#define SPIN_LIBSPIN_INTERNAL_H

#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <spin/spin.h>


/* Default bpffs mount point; the environment variable SPIN_BPFFS overrides. */
#define SPIN_BPFFS_DEFAULT	"/sys/fs/bpf"
#define SPIN_HANDLER_DIR	"handlers"	/* below the pin dir */
#define SPIN_STAGES_DIR		"stages"	/* ... a handler program's own spin_stages,
						 * by its name (lib/handler.c) */
#define SPIN_PIN_PROG_RX	"prog_rx"
#define SPIN_HANDLER_PROG	"spin_handler_entry"
#define SPIN_LOG_BUF_SIZE	(1u << 20)
/* a handler's log again, when SPIN_LOG_BUF_SIZE kept only its start
 * (kernels before 6.4: lib/handler.c, log_again) */
#define SPIN_LOG_BIG_SIZE	(64u << 20)

#ifndef SPIN_LIBDIR
#define SPIN_LIBDIR "/usr/local/lib/spin"
#endif

/* The runtime's maps (include/spin/maps.bpf.h), by index. */
enum spin_map_id {
	SPIN_M_CFG,
	SPIN_M_STATS,
	SPIN_M_CTX,
	SPIN_M_PT,
	SPIN_M_ME,
	SPIN_M_HPU,
	SPIN_M_HOST,
	SPIN_M_PEERS,
	SPIN_M_DEDUP,
	SPIN_M_MSGS,
	SPIN_M_EVENTS,
	SPIN_M_HANDLERS,
	SPIN_M_ME_CT,
	SPIN_M_GC,
	SPIN_M_XSKS,
	SPIN_M_WAKER,
	SPIN_M_AUTH,
	SPIN_M_MX,
	SPIN_M_PROCS,
	SPIN_M_RINGS,
	SPIN_M_PUTQ,
	SPIN_M_SCRATCH,
	SPIN_M_MSTATE,
	SPIN_M_MSTATE_PC,
	SPIN_M_HPU_BIG,
	SPIN_M_HGETS,
	SPIN_M_STAGES,
	SPIN_M_WINS,
	SPIN_M_PUTQS,
	SPIN_M_MSTATES,
	SPIN_M_MAX,
};
extern const char *const spin_map_names[SPIN_M_MAX];

/*
 * The byte offset in the window of process slot `slot` (wlen bytes) of
 * len bytes at window address a (wire.h, SPIN_WIN_SHIFT), as the runtime
 * hands them to the host; -1 when a names another slot's window or the
 * range does not lie inside this one.
 */
static inline int spin_win_local(uint64_t a, uint32_t slot, uint64_t len, uint64_t wlen,
				 uint64_t *off)
{
	uint64_t o = a & ((1ull << 40) - 1);

	if ((a >> 40) != slot || o > wlen || len > wlen - o)
		return -1;
	*off = o;
	return 0;
}

struct ring_buffer;

struct spin_rt {
	char ifname[IF_NAMESIZE];
	char pin_dir[256];
	int map_fd[SPIN_M_MAX];
	int prog_rx_fd;
	int dir_fd;			/* pin dir, flock()ed for table changes */
	pthread_mutex_t mu;		/* threads sharing this handle */

	/* mmap-ed maps (BPF_F_MMAPABLE) */
	struct spin_cfg *cfg;
	size_t cfg_mlen;
	struct spin_auth auth;		/* the runtime's auth key (spin_auth), read at open */
	struct spin_me *me;
	size_t me_mlen;
	uint8_t *hpu;
	size_t hpu_mlen;
	uint8_t *hpu_big;		/* spin_hpu_big, mapped */
	size_t hpu_big_mlen;
	/* the other process slots' handler memory (hpu<slot>, hpubig<slot>:
	 * spin_hpu_fd), mapped on first use (me.c); [0] unused */
	uint8_t *hpu_s[SPIN_MAX_PROCS], *hpu_big_s[SPIN_MAX_PROCS];
	struct spin_pt *ptm;		/* spin_pt, mapped on first use (me.c) */
	size_t ptm_len;
	uint32_t me_hint[3];		/* where the next free-slot search starts */
	bool me_full0;			/* no free slot above SPIN_MAX_HPU at the last
					 * search (me_slot) */
	void *host;
	size_t host_len;
	/* the host window of this handle's process slot: spin_host for slot
	 * 0 (win_fd -1), else the slot's own (win_fd, made by the Portals
	 * layer when it takes the slot; docs/security.md, "Isolation") */
	uint32_t slot;
	int win_fd;
	bool confined;			/* a Portals process's handle: its slot's portals and entries only (me.c) */

	/* events: the ring of this process's slot (ring_fd, made by the
	 * Portals layer for slots above 0), else spin_events */
	int ring_fd;
	/* SPIN_EV_FRAME records (frames for this process's AF_XDP path that
	 * came in on another queue): handed to frame_fn */
	void (*frame_fn)(void *ctx, const uint8_t *frame, uint32_t len);
	void *frame_ctx;
	struct ring_buffer *rb;
	const unsigned long *rb_cons, *rb_prod;	/* read-only views of its positions */
	spin_event_fn ev_fn;
	void *ev_ctx;
	int ev_count;
	int ev_stop;
	bool serve_puts;
	struct spin_sock *sock;
};

/* ---- err.c ---- */
/* Set the thread's error message; returns -code. */
int spin_seterr(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Map an errno value from a bpf()/file operation to a SPIN_E* code. */
int spin_errno_code(int err);
/* A warning that does not fail the operation: stderr, "spin: warning: ...". */
void spin_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* compat.c: kernel features spin falls back from (docs/kernels.md) */
#define SPIN_COMPAT_KFUNCS	1	/* no bpf_wq/bpf_iter_num/bpf_dynptr_copy: *.compat.bpf.o */
#define SPIN_COMPAT_TCX		2	/* no tcx: clsact + cls_bpf */
/* The fallbacks to take (missing or forced by SPIN_COMPAT_FORCE), or a
 * negative SPIN_E* for a bad SPIN_COMPAT_FORCE. */
int spin_compat_fallbacks(void);
/* A new map shaped like tmpl_fd's, its BTF too (an inner map; compat.c). */
int spin_map_like(int tmpl_fd, const char *name, uint32_t max_entries);
/* The object to load for path: path, or (1) its .compat.bpf.o sibling when
 * the kernel lacks kfuncs; a negative SPIN_E* when that is missing. */
int spin_compat_obj(const char *path, char *out, size_t len);
/* libbpf output capture. */
void spin_libbpf_init(void);
void spin_libbpf_reset(void);
const char *spin_libbpf_last(void);	/* last libbpf warning line, "" if none */
const char *spin_libbpf_all(void);	/* everything captured since reset */
/* Keep the relevant lines of a verifier log for spin_verifier_log();
 * returns the line with the error (static thread-local storage). */
const char *spin_vlog_set(const char *log);
void spin_vlog_clear(void);

/* ---- rt.c ---- */
const char *spin_bpffs_root(void);
int spin_check_priv(void);
int spin_check_bpffs(void);
int spin_lock(struct spin_rt *rt);
/* A fresh host message id from the node's counter (spin_cfg.next_msg_id). */
uint32_t spin_rt_msg_id(struct spin_rt *rt);
/* xsk.c: send packets pkts[0..n) of a message (pkts NULL: all, in order)
 * like spin_xsk_send/spin_xsk_post (post_only); the last one sent gets
 * last_flags (SPIN_F_*) added.  a->msg_id must be set.  For reliable
 * delivery (ptl_rel.c): first sends and retransmissions. */
struct spin_xsk;
struct spin_msg_args;
int spin_xsk_send_pkts(struct spin_xsk *x, uint32_t dst_rank, const struct spin_msg_args *a,
		       const void *buf, uint32_t len, const uint32_t *pkts, uint32_t n,
		       uint16_t last_flags, bool post_only);
void spin_unlock(struct spin_rt *rt);
void spin_gen_bump(struct spin_rt *rt);
/* xsk.c: queue a frame for spin_xsk_recv() as if the socket had received
 * it (a frame of this process's ring, SPIN_EV_FRAME); and who this socket's
 * process is (its sends' src_rank/src_pid; default spin_cfg.my_rank/my_pid) */
int spin_xsk_lo_push(struct spin_xsk *x, const uint8_t *f, uint32_t len);
void spin_xsk_set_ident(struct spin_xsk *x, uint32_t rank, uint32_t pid);
/* job.c: the process slot of each of n ranks at addresses ips (how many
 * lower ranks share the address; -ENOMEM), and of one rank of a job */
int spin_slots_of(const uint32_t *ips, uint32_t n, uint16_t *out);
struct spin_job;
uint32_t spin_job_slot(const struct spin_job *j, uint32_t rank);
/* the variables a launcher gives the rank and the size in, in the order
 * spin_job_load reads them */
#define SPIN_JOB_NVARS 3
extern const char *const spin_job_rank_vars[SPIN_JOB_NVARS];
extern const char *const spin_job_size_vars[SPIN_JOB_NVARS];
/* pmix.c: the job from a PMIx launcher (docs/portals.md, "The job").
 * spin_pmix_wanted: 1 when it describes the job (SPIN_PMIX=1, or a PMIx
 * launcher's environment; never with SPIN_PMIX=0, a hostfile or
 * SPIN_RENDEZVOUS), 0 when not, <0 (message set) for a bad SPIN_PMIX.
 * spin_pmix_init: libpmix loaded, PMIx_Init: j->rank, j->size (j
 * emptied first).  spin_pmix_exchange: this rank's address published,
 * PMIx_Fence, every rank's read into j->hosts.  spin_pmix_fini:
 * PMIx_Finalize if PMIx_Init was called (PtlFini). */
int spin_pmix_wanted(void);
int spin_pmix_init(struct spin_job *j);
int spin_pmix_exchange(struct spin_job *j, struct in_addr my_ip, int timeout_ms);
void spin_pmix_fini(void);
/* The inode of this process's network namespace, 0 for the initial one. */
int spin_netns_ino(unsigned long *ino);
uint32_t spin_prog_id(int prog_fd);
/* Whether a name is usable as a file name below the pin dir. */
bool spin_name_ok(const char *name);

/* ---- pins.c ---- */
/*
 * The pin directories, each opened with O_NOFOLLOW and checked (a real
 * directory owned by root or the caller's euid, not group/world-writable;
 * -SPIN_EPERM with the reason otherwise).  -SPIN_ENOENT without a message
 * when a component is missing (p->path names it).
 */
enum { SPIN_PINS_OPEN, SPIN_PINS_PARENTS, SPIN_PINS_CREATE };
struct spin_pins {
	int root;		/* the bpffs root ($SPIN_BPFFS) */
	int spin;		/* <root>/spin */
	int ns;			/* <root>/spin/ns<inode>, or == spin in the initial netns */
	int dir;		/* the interface's pin directory */
	bool made_spin, made_ns, made_dir;	/* created by this call */
	char ns_name[32];	/* "ns<inode>", "" in the initial network namespace */
	char path[PATH_MAX];	/* the last component reached, for messages */
};
/* mode SPIN_PINS_OPEN: open what exists; SPIN_PINS_PARENTS: create spin/
 * and ns<inode>/ if needed; SPIN_PINS_CREATE: also create the interface's
 * directory, which must not exist (-SPIN_EEXIST without a message). */
int spin_pins_open(const char *ifname, int mode, struct spin_pins *p);
/* how long spin_open (and PtlNIInit after losing an attach race) waits
 * for another process's attach to finish */
#define SPIN_OPEN_WAIT_MS	10000
void spin_pins_init(struct spin_pins *p);
void spin_pins_close(struct spin_pins *p);
/* The handlers/ directory below a pin directory, opened and checked. */
int spin_pins_handlers(int dir_fd, const char *pin_dir, int *out);
/* Open (create) directory name below parent_fd, checked as above. */
int spin_dir_open_at(int parent_fd, const char *parent, const char *name, bool create,
		     bool *made, int *out);
int spin_dir_check(int fd, const char *path);
/* Pin obj_fd as name in dir_fd / open the pin name in dir_fd (-1, errno). */
int spin_obj_pin_at(int obj_fd, int dir_fd, const char *name);
int spin_obj_get_at(int dir_fd, const char *name);

/* A map of a handler object bound to fd instead of the runtime's pinned
 * map of that name (shipped handlers: ptl_ship.c). */
struct spin_map_subst {
	const char *name;
	int fd;
};
int spin_handler_load_mem_subst(struct spin_rt *rt, const void *buf, size_t len, const char *name,
				const struct spin_map_subst *subst, int n_subst);
/* The runtime object attach would load without a path (SPIN_OBJ_DIR, next
 * to the program, the library directory; its helpers-only build where the
 * kernel needs it): the handler programs' finish stages come from it. */
int spin_rt_obj_find(char *out, size_t len);
/* Remove directory name below parent_fd and everything in it without
 * following symbolic links; 0 or -errno of the first failure. */
int spin_rm_pins_at(int parent_fd, const char *name);

/* ---- owner.c ---- */
/* Low 32 bits of a process's start time (/proc/PID/stat field 22; pid 0:
 * this process), never 0; 0 if it cannot be read. */
uint32_t spin_proc_start(uint32_t pid);
/* Whether the owner that recorded pid and start (spin_proc_start(0); 0:
 * unknown, then the pid alone decides) still runs: a pid that now belongs
 * to another process, a zombie or no process is not alive.  For stale-owner
 * checks such as reclaiming portal table entries (spin_pt.owner_pid,
 * owner_start). */
bool spin_owner_alive(uint32_t pid, uint32_t start);

/* ---- handler.c ---- */
/* Slot of a loaded handler (spin_handlers index), or a negative error. */
int spin_handler_slot(struct spin_rt *rt, const char *name);
/* Refuse an opened object (what: "runtime object", "handler object") built
 * for another SPIN_ABI_VERSION; its ABI map is then not created. */
struct bpf_object;
int spin_obj_abi_check(struct bpf_object *obj, const char *path, const char *what);

/* ---- reasm.c ---- */
/*
 * Message reassembly of spin_sock_recv_msg() and spin_xsk_recv_msg(); the
 * rules are at the top of reasm.c.  A zeroed struct spin_reasm is an empty
 * table; its owner sets `who` and `remember_done`.
 */
#define SPIN_REASM_PENDING	16	/* messages being reassembled */
#define SPIN_REASM_DONE_RING	256	/* delivered keys remembered (power of 2) */
#define SPIN_REASM_MORE		INT_MIN	/* spin_reasm_pkt(): no message yet */

struct spin_reasm_msg {
	bool used;
	bool discard;		/* too large for the caller: swallow the rest */
	uint32_t src_rank, msg_id, msg_len, seg, npkts, got;
	uint64_t last_ms;	/* last packet, spin_now_ms() */
	uint64_t *bitmap;	/* packets received */
	uint8_t *data;		/* own memory, or the caller's buffer (in_buf) */
	struct spin_hdr hdr;	/* first packet's header, pkt_off set to 0 */
	struct sockaddr_in from;	/* sender of the first packet, if known */
};

struct spin_reasm_done {
	uint64_t key;		/* (src_rank << 32 | msg_id) + 1, 0: empty */
	uint64_t t_ms;		/* when it was delivered */
};

struct spin_reasm {
	const char *who;	/* the receive call, for error messages */
	bool remember_done;	/* ignore late duplicates of delivered messages */
	struct spin_reasm_msg msg[SPIN_REASM_PENDING];
	struct spin_reasm_msg *in_buf;	/* the one assembled in the caller's buffer */
	uint64_t stale;		/* partial messages given up */
	struct spin_reasm_done done[SPIN_REASM_DONE_RING];
};

/* Where one receive call wants its message. */
struct spin_reasm_dst {
	struct spin_hdr *h;	/* first packet's header (pkt_off 0); may be NULL */
	void *buf;
	size_t cap;
	struct sockaddr_in *from;	/* sender; may be NULL */
	bool direct;		/* a message may be assembled in buf itself */
};

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t spin_now_ms(void);
/*
 * One valid packet (h as checked by spin_hdr_parse(), network byte order;
 * from may be NULL).  Returns SPIN_REASM_MORE while no message is complete,
 * else what the receive call returns: the length of the message delivered
 * to d, -SPIN_ENOSPC or -SPIN_EFAIL.
 */
int spin_reasm_pkt(struct spin_reasm *r, const struct spin_reasm_dst *d,
		   const struct spin_hdr *h, const void *payload, uint32_t len,
		   const struct sockaddr_in *from);
/* Before a receive call with d->direct returns: a partial message in the
 * caller's buffer moves to memory of its own. */
void spin_reasm_release(struct spin_reasm *r);
/* Forget every message (close). */
void spin_reasm_free(struct spin_reasm *r);

/* ---- sending (sock.c, xsk.c) ---- */
/* Packets of a message of len bytes cut at seg (a zero-length message is
 * one packet). */
static inline uint32_t spin_npkts(uint32_t len, uint32_t seg)
{
	return len ? (uint32_t)(((uint64_t)len + seg - 1) / seg) : 1;
}
/* A packet permutation given to a send call must name packets that exist. */
int spin_check_order(const char *who, const uint32_t *order, uint32_t npkts);

/* Handler memory of process slot slot (me.c): *fd a new fd of slot 0's
 * spin_hpu (spin_hpu_big if big) or of the map of the same shape pinned as
 * hpu<slot> (hpubig<slot>), made on the slot's first use. */
int spin_hpu_fd(struct spin_rt *rt, uint32_t slot, bool big, int *fd);

#endif /* SPIN_LIBSPIN_INTERNAL_H */
