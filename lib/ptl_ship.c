// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Shipped handlers (docs/shipping.md, issue 17): a process sends a handler
 * object to peers' Portals processes; each verifies it (its kernel's BPF
 * verifier, after this file's checks of the object and the policy),
 * caches it by SHA-256 and installs it on an entry the sender names.
 *
 * Everything is built on the Portals API itself: requests and replies are
 * reliable puts on portal SPIN_SHIP_PT of the matching NI (reserved when a
 * process ships or accepts code), installed handlers are match entries
 * with handlers on it.  The receiving agent is the target's own Portals
 * process: a thread ("ptl-ship") started by PtlNIInit when
 * $SPIN_SHIP_ALLOW is set, which waits on the ship event queue (a sender
 * that waits for answers pumps the same queue).  The runtime cannot load
 * programs itself (XDP cannot call bpf()); the process that owns the
 * interface's Portals state, loads its handlers and holds its pins can.
 */
#include <errno.h>
#include <elf.h>
#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>

#include <bpf/bpf.h>

#include "ptl_internal.h"

/* ---------------------------------------------------------- SHA-256 -- */

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++)
		w[i] = (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) + w[i - 7] +
		       (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 16];
	a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; k = h[7];
	for (int i = 0; i < 64; i++) {
		t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void PtlSpinShipHash(const void *obj, ptl_size_t len, unsigned char out[32])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const uint8_t *p = obj;
	uint8_t last[128] = { 0 };
	ptl_size_t n = len, rest;
	uint64_t bits = (uint64_t)len * 8;

	for (; n >= 64; n -= 64, p += 64)
		sha256_block(h, p);
	rest = n;
	if (rest)
		memcpy(last, p, rest);
	last[rest] = 0x80;
	n = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		last[n - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha256_block(h, last);
	if (n == 128)
		sha256_block(h, last + 64);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(h[i] >> 8);
		out[4 * i + 3] = (uint8_t)h[i];
	}
}

ptl_match_bits_t PtlSpinIfuncBits(const unsigned char hash[32])
{
	uint64_t v = 0;

	for (int i = 0; i < 5; i++)
		v = v << 8 | hash[i];
	return SPIN_SHIP_BITS(SPIN_SHIP_K_IFUNC, v);
}

static ptl_match_bits_t entry_bits(uint32_t rank, uint32_t id)
{
	return SPIN_SHIP_BITS(SPIN_SHIP_K_ENTRY, (uint64_t)(rank & 0xffff) << 24 |
					      (id & SPIN_SHIP_ENTRY_MAX));
}

/* ------------------------------------------------------------ policy -- */

/* The helpers shipped code may call by default: those spin/handler.h's
 * calls use, except bpf_probe_read_kernel (113: it reads any kernel
 * address), which only its DMA with bounce buffers needs. */
static const int default_helpers[] = {
	1,	/* map_lookup_elem */
	2,	/* map_update_elem */
	3,	/* map_delete_elem */
	5,	/* ktime_get_ns */
	7,	/* get_prandom_u32 */
	8,	/* get_smp_processor_id */
	12,	/* tail_call (every handler program ends in the runtime's finish
		 * stage; the prog arrays it can name are this runtime's) */
	23,	/* redirect (device puts) */
	28,	/* csum_diff */
	44,	/* xdp_adjust_head */
	54,	/* xdp_adjust_meta */
	65,	/* xdp_adjust_tail */
	131, 132, 133,	/* ringbuf_reserve, _submit, _discard (events) */
	181,	/* loop (spin_for) */
	189, 190,	/* xdp_load_bytes, xdp_store_bytes */
	197,	/* dynptr_from_mem */
};

#define SHIP_MAX_HELPER 256
#define SHIP_MAX_ALLOW	128	/* ranks with a control entry (one each) */
#define SHIP_N_PROG	32
#define SHIP_N_ENTRY	128
#define SHIP_MAX_TARGETS 256	/* ranks one process ships to (an answer entry each) */

struct ship_policy {
	uint8_t *allow;		/* per rank: 1 may ship code here */
	uint32_t n_allow;
	uint32_t max_progs, max_insns, max_bytes, max_entries;
	uint32_t lease_ms;	/* a sender's entries go this long after its last word (0: never) */
	uint8_t helper[SHIP_MAX_HELPER];
	char allow_text[128];
};

/* The maps a shipped program gets of its own instead of the runtime's:
 * what holds other entries' and processes' data (docs/shipping.md,
 * "Memory").  A type or size of 0 keeps the runtime map's. */
static const struct ship_priv_spec {
	const char *name;
	uint32_t type, max_entries, flags;
} ship_priv[] = {
	/* its entries' handler memory, by runtime slot (c->me): only the
	 * slots of its entries are there; a lookup of any other is NULL */
	{ "spin_hpu", BPF_MAP_TYPE_HASH, 0 /* SHIP_N_ENTRY + 1 */, BPF_F_NO_PREALLOC },
	/* the window: shipped entries have none (one chunk of its own) */
	{ "spin_host", 0, 1, 0 },
	{ "spin_hscratch", 0, 0, 0 },
	{ "spin_mstate", 0, 0, 0 },
	{ "spin_mstate_pc", 0, 0, 0 },
	/* events: into a ring nobody reads (shipped entries post none) */
	{ "spin_events", BPF_MAP_TYPE_RINGBUF, 4096, 0 },
	{ "spin_rings", 0, 0, 0 },	/* empty: every process's ring is NULL */
};
#define SHIP_N_PRIV	(sizeof(ship_priv) / sizeof(ship_priv[0]))

struct ship_prog {
	bool used;
	uint8_t hash[32];
	ptl_handle_handler_t h;
	uint32_t insns;
	int pfd[SHIP_N_PRIV];	/* its maps (ship_priv), -1: none */
	int refs;		/* entries installed with it */
	/* its ifunc entry: messages naming the hash */
	ptl_handle_me_t me;
	ptl_handle_hpu_mem_t hpu;
	void *host;
	int slot;
};

struct ship_entry {
	bool used;
	uint32_t rank, id;
	int prog;
	int slot;		/* runtime slot: its key in the program's spin_hpu */
	bool keep;		/* shipped with SPIN_SHIP_F_KEEP: no lease */
	uint64_t calls;		/* its invocations when the lease sweep last looked */
	uint32_t hpu_len;
	ptl_handle_me_t me;
	ptl_handle_hpu_mem_t hpu;
	void *host;
};

/* a request of this process's waiting for its answer */
struct ship_wait {
	uint32_t rank;
	bool done;
	ptl_spin_ship_result_t *res;
};

struct ptl_ship {
	ptl_handle_ni_t nih;
	ptl_handle_eq_t eq;
	bool pt_on;		/* SPIN_SHIP_PT allocated */
	pthread_mutex_t mu;	/* the state below; held while one event is handled */
	pthread_cond_t cv;	/* answers arrived, or a ship call finished */
	uint32_t rank, size;
	/* target side */
	bool target;
	pthread_t thr;
	bool thr_on;
	int efd;		/* the thread's wake-up (ni->ship_efd) */
	volatile bool stop;
	bool stop_renew;	/* the lease thread ends (S->mu) */
	struct ship_policy pol;
	uint8_t **ctl_buf;	/* per rank: its control entry's buffer (allowed ranks) */
	ptl_handle_me_t *ctl_me;
	uint8_t deny_buf[sizeof(struct spin_ship_req)];
	ptl_handle_me_t deny_me;
	struct spin_ship_reply *rep;	/* per rank: the answer sent to it */
	ptl_handle_md_t rep_md;
	struct ship_prog prog[SHIP_N_PROG];
	struct ship_entry ent[SHIP_N_ENTRY];
	uint64_t hits, loads;
	uint64_t *seen_us;	/* per rank: its last request, lease put or
				 * message to its entries (lease_sweep) */
	uint64_t swept_us;	/* when lease_sweep last looked */
	uint8_t lease_buf[8];
	ptl_handle_me_t lease_me;	/* any rank's lease puts */
	bool lease_on;
	/* sender side */
	bool sender;
	struct spin_ship_reply *rin;	/* per target rank: its answer */
	ptl_handle_me_t *rin_me;	/* per target rank: the entry only it can
					 * put its answer into (made on first use) */
	uint8_t *rin_on;
	unsigned int n_rin;
	bool busy;		/* a ship call is out */
	struct ship_wait *w;
	unsigned int nw;
	uint32_t seq;
	uint8_t *shipped;	/* per rank: this process shipped code there */
	uint32_t *lease_ms;	/* per rank: its lease (its answers), 0: none */
	pthread_t renew;	/* puts the leases of what it shipped */
	bool renew_on;
	bool renew_set;		/* $SPIN_SHIP_RENEW_MS given: renew_ms */
	uint32_t renew_ms;	/* its period (0: no lease puts at all) */
	uint64_t lease_word;
	ptl_handle_md_t lease_md;
};

static int seterr(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int seterr(int rc, const char *fmt, ...)
{
	char b[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	return ptl_seterr(rc, "%s", b);
}

static int env_u32(const char *name, uint32_t def, uint32_t lo, uint32_t hi, uint32_t *out)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	*out = def;
	if (!v || !*v)
		return PTL_OK;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end || x < lo || x > hi)
		return seterr(PTL_ARG_INVALID, "PtlNIInit: %s=%s: want a number from %u to %u", name, v,
			      lo, hi);
	*out = (uint32_t)x;
	return PTL_OK;
}

/* "all" or ranks and ranges: "0,2-5" */
static int parse_ranks(const char *name, const char *v, uint32_t size, uint8_t *out)
{
	const char *p = v;

	if (!strcmp(v, "all")) {
		memset(out, 1, size);
		return PTL_OK;
	}
	while (*p) {
		unsigned long a, b;
		char *end;

		errno = 0;
		a = strtoul(p, &end, 10);
		if (end == p || errno)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || errno || b < a)
				goto bad;
		}
		if (b >= size)
			return seterr(PTL_ARG_INVALID, "PtlNIInit: %s=%s: rank %lu is not in the job (size %u)",
				      name, v, b, size);
		for (unsigned long r = a; r <= b; r++)
			out[r] = 1;
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	return PTL_OK;
bad:
	return seterr(PTL_ARG_INVALID, "PtlNIInit: %s=%s: want 'all' or ranks like 0,2-5", name, v);
}

static int policy_load(struct ship_policy *pol, uint32_t size)
{
	const char *a = getenv("SPIN_SHIP_ALLOW"), *hl = getenv("SPIN_SHIP_HELPERS");
	int rc;

	pol->allow = calloc(size, 1);
	if (!pol->allow)
		return seterr(PTL_NO_SPACE, "PtlNIInit: out of memory");
	snprintf(pol->allow_text, sizeof(pol->allow_text), "%s", a);
	rc = parse_ranks("SPIN_SHIP_ALLOW", a, size, pol->allow);
	if (rc != PTL_OK)
		return rc;
	for (uint32_t r = 0; r < size; r++)
		pol->n_allow += pol->allow[r];
	if (pol->n_allow > SHIP_MAX_ALLOW)
		return seterr(PTL_ARG_INVALID,
			      "PtlNIInit: SPIN_SHIP_ALLOW=%s names %u ranks: at most %d may ship code to one process",
			      a, pol->n_allow, SHIP_MAX_ALLOW);
	if ((rc = env_u32("SPIN_SHIP_MAX_PROGS", 8, 1, SHIP_N_PROG, &pol->max_progs)) ||
	    (rc = env_u32("SPIN_SHIP_MAX_INSNS", 32768, 1, 1000000, &pol->max_insns)) ||
	    (rc = env_u32("SPIN_SHIP_MAX_BYTES", 1 << 20, 64, 64 << 20, &pol->max_bytes)) ||
	    (rc = env_u32("SPIN_SHIP_MAX_ENTRIES", 16, 1, SHIP_N_ENTRY, &pol->max_entries)) ||
	    (rc = env_u32("SPIN_SHIP_LEASE_MS", 10000, 0, 86400000, &pol->lease_ms)))
		return rc;
	for (size_t i = 0; i < sizeof(default_helpers) / sizeof(default_helpers[0]); i++)
		pol->helper[default_helpers[i]] = 1;
	if (hl && *hl) {
		/* more helper ids, e.g. "113" */
		const char *p = hl;

		while (*p) {
			char *end;
			unsigned long h = strtoul(p, &end, 10);

			if (end == p || h >= SHIP_MAX_HELPER || (*end && *end != ','))
				return seterr(PTL_ARG_INVALID,
					      "PtlNIInit: SPIN_SHIP_HELPERS=%s: want helper ids below %d, like 113,6",
					      hl, SHIP_MAX_HELPER);
			pol->helper[h] = 1;
			p = *end ? end + 1 : end;
		}
	}
	return PTL_OK;
}

/* ---------------------------------------------------- object checks -- */

/*
 * The runtime maps shipped code may name: the ones spin/handler.h uses
 * (a handler object declares no other: the maps of other entries',
 * messages' and processes' state and the runtime's accounting are the
 * runtime's and its finish stage's only, lib/handler.c, rt_only).  Any
 * other map its code refers to is refused (spin_hpu_big: shipped entries
 * have SPIN_HPU_SIZE of handler memory; spin_wins: they have no window;
 * spin_handlers; spin_me, spin_msgs, spin_stats, spin_cfg, ... which no
 * handler program holds).  Of these, the ones that hold other entries'
 * and processes' data are replaced by maps of the program's own at load
 * (ship_priv below); spin_events and spin_rings only for its finish
 * stage, which is loaded with the same maps.
 */
static const char *const ship_maps_ok[] = {
	"spin_ctx", "spin_events", "spin_host", "spin_hpu", "spin_hscratch", "spin_mstate",
	"spin_mstate_pc", "spin_putq", "spin_rings", "spin_stages",
};

static bool name_in(const char *n, const char *const *list, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++)
		if (!strcmp(n, list[i]))
			return true;
	return false;
}

/* The section header i of the object (inside it: obj_check checked the table). */
static Elf64_Shdr shdr(const uint8_t *b, const Elf64_Ehdr *eh, unsigned int i)
{
	Elf64_Shdr sh;

	memcpy(&sh, b + eh->e_shoff + (uint64_t)i * sizeof(sh), sizeof(sh));
	return sh;
}

/* A NUL-terminated name at off of a string table section, or NULL. */
static const char *elf_str(const uint8_t *b, size_t len, const Elf64_Shdr *st, uint64_t off)
{
	if (st->sh_type != SHT_STRTAB || st->sh_offset > len || st->sh_size > len - st->sh_offset ||
	    off >= st->sh_size || !memchr(b + st->sh_offset + off, 0, st->sh_size - off))
		return NULL;
	return (const char *)b + st->sh_offset + off;
}

/*
 * Every map the object's code refers to (a relocation of a code section
 * against a symbol of its .maps section) must be one of ship_maps_ok: the
 * relocations are what libbpf turns into the program's map references.
 * Hostile bytes: every index and offset is checked against the object.
 */
static int maps_check(const uint8_t *b, size_t len, const Elf64_Ehdr *eh, char *reason, size_t rlen)
{
	Elf64_Shdr shs;
	unsigned int maps_idx = 0;

	if (eh->e_shstrndx >= eh->e_shnum) {
		snprintf(reason, rlen, "ELF section name table index %u outside the %u sections",
			 eh->e_shstrndx, eh->e_shnum);
		return SPIN_SHIP_E_MALFORMED;
	}
	shs = shdr(b, eh, eh->e_shstrndx);
	for (unsigned int i = 1; i < eh->e_shnum; i++) {
		Elf64_Shdr sh = shdr(b, eh, i);
		const char *nm = elf_str(b, len, &shs, sh.sh_name);

		if (nm && !strcmp(nm, ".maps"))
			maps_idx = i;
	}
	if (!maps_idx)
		return 0;	/* no maps at all */
	for (unsigned int i = 1; i < eh->e_shnum; i++) {
		Elf64_Shdr rs = shdr(b, eh, i), sym, str, tgt;
		uint64_t nsym;

		if (rs.sh_type != SHT_REL)
			continue;
		if (rs.sh_info >= eh->e_shnum || rs.sh_link >= eh->e_shnum) {
			snprintf(reason, rlen, "relocation section %u names a section outside the object", i);
			return SPIN_SHIP_E_MALFORMED;
		}
		tgt = shdr(b, eh, rs.sh_info);
		if (tgt.sh_type != SHT_PROGBITS || !(tgt.sh_flags & SHF_EXECINSTR))
			continue;	/* relocations of data (BTF, .maps): no code */
		sym = shdr(b, eh, rs.sh_link);
		if (sym.sh_type != SHT_SYMTAB || sym.sh_entsize != sizeof(Elf64_Sym) ||
		    sym.sh_link >= eh->e_shnum || sym.sh_offset > len || sym.sh_size > len - sym.sh_offset ||
		    rs.sh_offset > len || rs.sh_size > len - rs.sh_offset || rs.sh_size % sizeof(Elf64_Rel)) {
			snprintf(reason, rlen, "relocation section %u or its symbol table outside the object", i);
			return SPIN_SHIP_E_MALFORMED;
		}
		str = shdr(b, eh, sym.sh_link);
		nsym = sym.sh_size / sizeof(Elf64_Sym);
		for (uint64_t o = 0; o < rs.sh_size; o += sizeof(Elf64_Rel)) {
			Elf64_Rel r;
			Elf64_Sym s;
			const char *mn;

			memcpy(&r, b + rs.sh_offset + o, sizeof(r));
			if (ELF64_R_SYM(r.r_info) >= nsym) {
				snprintf(reason, rlen, "relocation names symbol %llu of %llu",
					 (unsigned long long)ELF64_R_SYM(r.r_info), (unsigned long long)nsym);
				return SPIN_SHIP_E_MALFORMED;
			}
			memcpy(&s, b + sym.sh_offset + ELF64_R_SYM(r.r_info) * sizeof(s), sizeof(s));
			if (s.st_shndx != maps_idx)
				continue;
			mn = elf_str(b, len, &str, s.st_name);
			if (!mn) {
				snprintf(reason, rlen, "a map symbol's name is outside the object");
				return SPIN_SHIP_E_MALFORMED;
			}
			if (!name_in(mn, ship_maps_ok, sizeof(ship_maps_ok) / sizeof(ship_maps_ok[0]))) {
				snprintf(reason, rlen,
					 "code uses map %s, which shipped code may not (%s)", mn,
					 !strcmp(mn, "spin_hpu_big") ?
					 "shipped entries have 4 KiB of handler memory: build without SPIN_HANDLER_MEM" :
					 "it may use its own handler memory, scratch and message state, and the runtime's step");
				return SPIN_SHIP_E_DENIED;
			}
		}
	}
	return 0;
}

/*
 * What the target checks of an object before the kernel sees it: an ELF64
 * little-endian BPF relocatable with its section table inside the bytes;
 * the instructions of its code sections (*insns) within the limit; only
 * allowed helpers, no kfunc calls.  0, or a status with why in reason.
 */
static int obj_check(const struct ship_policy *pol, const uint8_t *b, size_t len, uint32_t *insns,
		     char *reason, size_t rlen)
{
	const Elf64_Ehdr *eh = (const void *)b;
	uint64_t n = 0;
	int st;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		snprintf(reason, rlen, "not an ELF64 little-endian object (build it with clang -target bpf)");
		return SPIN_SHIP_E_MALFORMED;
	}
	if (eh->e_machine != EM_BPF || eh->e_type != ET_REL) {
		snprintf(reason, rlen, "ELF object for machine %u type %u, not a BPF relocatable (%u, %u)",
			 eh->e_machine, eh->e_type, EM_BPF, ET_REL);
		return SPIN_SHIP_E_MALFORMED;
	}
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
	    (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff || !eh->e_shnum) {
		snprintf(reason, rlen, "ELF section table outside the object's %zu bytes", len);
		return SPIN_SHIP_E_MALFORMED;
	}
	for (unsigned int i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, b + eh->e_shoff + (uint64_t)i * sizeof(sh), sizeof(sh));
		if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset || sh.sh_size % 8) {
			snprintf(reason, rlen, "code section %u outside the object or not whole instructions", i);
			return SPIN_SHIP_E_MALFORMED;
		}
		for (uint64_t o = 0; o < sh.sh_size; o += 8) {
			const uint8_t *in = b + sh.sh_offset + o;
			int32_t imm;

			n++;
			if (in[0] != (BPF_JMP | BPF_CALL))
				continue;
			memcpy(&imm, in + 4, 4);
			if ((in[1] >> 4) == 2) {	/* BPF_PSEUDO_KFUNC_CALL */
				snprintf(reason, rlen, "calls a kernel function (kfunc): not allowed for shipped code");
				return SPIN_SHIP_E_DENIED;
			}
			if ((in[1] >> 4) == 0 && (imm < 0 || imm >= SHIP_MAX_HELPER || !pol->helper[imm])) {
				snprintf(reason, rlen,
					 "calls BPF helper %d, which shipped code may not use (the target's SPIN_SHIP_HELPERS adds it)",
					 imm);
				return SPIN_SHIP_E_DENIED;
			}
		}
	}
	st = maps_check(b, len, eh, reason, rlen);
	if (st)
		return st;
	*insns = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
	if (!n) {
		snprintf(reason, rlen, "no code in the object");
		return SPIN_SHIP_E_MALFORMED;
	}
	if (n > pol->max_insns) {
		snprintf(reason, rlen, "%llu instructions, more than the target's SPIN_SHIP_MAX_INSNS=%u",
			 (unsigned long long)n, pol->max_insns);
		return SPIN_SHIP_E_LIMIT;
	}
	return 0;
}

/* -------------------------------------------------------- target side -- */

static int placement(void)
{
	struct ptl_ni *ni = ptl_g_ni;

	return ni && ni->rt && ni->rt->cfg && (ni->rt->cfg->flags & SPIN_CFG_F_GENERIC) ?
	       PTL_SPIN_PLACE_GENERIC : PTL_SPIN_PLACE_NATIVE;
}

static uint32_t runtime_handlers(void)
{
	struct ptl_ni *ni = ptl_g_ni;
	int n = ni && ni->rt ? spin_handler_list(ni->rt, NULL, 0) : 0;

	return n < 0 ? 0 : (uint32_t)n;
}

static uint32_t progs_in_use(struct ptl_ship *S)
{
	uint32_t n = 0;

	for (int i = 0; i < SHIP_N_PROG; i++)
		n += S->prog[i].used;
	return n;
}

static void host_free(struct ptl_ship *S, void **p)
{
	if (*p)
		PtlSpinHostFree(S->nih, *p);
	*p = NULL;
}

static void priv_close(struct ship_prog *P)
{
	for (size_t k = 0; k < SHIP_N_PRIV; k++) {
		if (P->pfd[k] >= 0)
			close(P->pfd[k]);
		P->pfd[k] = -1;
	}
}

/*
 * The program's own maps (ship_priv), shaped like the runtime's (key and
 * value sizes from the pinned maps, so the verifier sees what the code was
 * built for).  0, or a status with why in reason.
 */
static int priv_make(struct ship_prog *P, char *reason, size_t rlen)
{
	struct spin_rt *rt = NULL;
	struct ptl_ni *ni;
	int rc, ev = -1;

	for (size_t k = 0; k < SHIP_N_PRIV; k++)
		P->pfd[k] = -1;
	ni = ptl_enter(&rc);
	if (ni) {
		rt = ni->rt;
		ptl_unlock(ni);
	}
	if (!rt) {
		snprintf(reason, rlen, "no runtime");
		return SPIN_SHIP_E_FAIL;
	}
	for (size_t k = 0; k < SHIP_N_PRIV; k++) {
		const struct ship_priv_spec *ps = &ship_priv[k];
		struct bpf_map_info info = { 0 };
		__u32 il = sizeof(info);
		LIBBPF_OPTS(bpf_map_create_opts, o);
		int fd = spin_obj_get_at(rt->dir_fd, ps->name);
		uint32_t type, max;

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &il)) {
			snprintf(reason, rlen, "cannot open the runtime's map %s: %s", ps->name, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		close(fd);
		type = ps->type ? ps->type : info.type;
		max = ps->max_entries ? ps->max_entries : info.max_entries;
		if (!strcmp(ps->name, "spin_hpu"))
			max = SHIP_N_ENTRY + 1;
		o.map_flags = ps->flags | (type == info.type ? info.map_flags & ~BPF_F_MMAPABLE : 0);
		if (type == BPF_MAP_TYPE_ARRAY_OF_MAPS)
			o.inner_map_fd = ev;
		P->pfd[k] = bpf_map_create(type, ps->name,
					   type == BPF_MAP_TYPE_RINGBUF ? 0 : info.key_size,
					   type == BPF_MAP_TYPE_RINGBUF ? 0 : info.value_size, max, &o);
		if (P->pfd[k] < 0) {
			snprintf(reason, rlen, "cannot make the program's own %s: %s", ps->name, strerror(errno));
			goto fail;
		}
		if (type == BPF_MAP_TYPE_RINGBUF)
			ev = P->pfd[k];
	}
	return 0;
fail:
	priv_close(P);
	return SPIN_SHIP_E_FAIL;
}

/* The id of map fd, or 0. */
static uint32_t map_id(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 il = sizeof(info);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &il) ? info.id : 0;
}

/*
 * The kernel's word on what the loaded program (id) can reach: every map
 * it holds must be one of its own (ship_priv), a runtime map of
 * ship_maps_ok, or one made for it by this load (.rodata/.data/.bss: a
 * '.' in the name, which no runtime map has).  maps_check reads the
 * object's relocations by symbol name, but libbpf binds them by offset
 * and names maps from BTF: an object can make the two disagree; this
 * check cannot be fooled that way.  0, or a status with why in reason.
 */
static int prog_maps_check(const struct ship_prog *P, uint32_t id, char *reason, size_t rlen)
{
	struct bpf_prog_info pi = { 0 };
	__u32 pl = sizeof(pi), ids[64];
	struct spin_rt *rt = NULL;
	struct ptl_ni *ni;
	int rc, pfd, st = 0;

	ni = ptl_enter(&rc);
	if (ni) {
		rt = ni->rt;
		ptl_unlock(ni);
	}
	pfd = id ? bpf_prog_get_fd_by_id(id) : -1;
	pi.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pi.map_ids = (__u64)(uintptr_t)ids;
	if (!rt || pfd < 0 || bpf_obj_get_info_by_fd(pfd, &pi, &pl) ||
	    pi.nr_map_ids > sizeof(ids) / sizeof(ids[0])) {
		snprintf(reason, rlen, "cannot read the maps of the loaded program: %s", strerror(errno));
		if (pfd >= 0)
			close(pfd);
		return SPIN_SHIP_E_FAIL;
	}
	close(pfd);
	for (__u32 i = 0; i < pi.nr_map_ids && !st; i++) {
		struct bpf_map_info mi = { 0 };
		__u32 ml = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);
		bool ok = false;

		if (mfd < 0 || bpf_obj_get_info_by_fd(mfd, &mi, &ml)) {
			snprintf(reason, rlen, "cannot read map %u of the loaded program: %s", ids[i],
				 strerror(errno));
			st = SPIN_SHIP_E_FAIL;
		}
		if (mfd >= 0)
			close(mfd);
		if (st)
			break;
		for (size_t k = 0; k < SHIP_N_PRIV && !ok; k++)
			ok = map_id(P->pfd[k]) == ids[i];
		for (size_t k = 0; k < sizeof(ship_maps_ok) / sizeof(ship_maps_ok[0]) && !ok; k++) {
			bool priv = false;
			int fd;

			for (size_t j = 0; j < SHIP_N_PRIV; j++)
				priv |= !strcmp(ship_priv[j].name, ship_maps_ok[k]);
			if (priv)
				continue;	/* the runtime's: never for shipped code */
			fd = spin_obj_get_at(rt->dir_fd, ship_maps_ok[k]);

			ok = map_id(fd) == ids[i];
			if (fd >= 0)
				close(fd);
		}
		if (!ok && strchr(mi.name, '.'))
			ok = true;	/* .rodata/.data/.bss of this load */
		if (!ok && mi.type == BPF_MAP_TYPE_PROG_ARRAY && !strcmp(mi.name, "spin_stages")) {
			/* its own stages (lib/handler.c): the program itself at
			 * SPIN_STAGE_SELF, its finish stage loaded with its maps */
			__u32 k = SPIN_STAGE_SELF, v = 0;
			int sfd = bpf_map_get_fd_by_id(ids[i]);

			ok = sfd >= 0 && !bpf_map_lookup_elem(sfd, &k, &v) && v == id;
			if (sfd >= 0)
				close(sfd);
		}
		if (!ok) {
			snprintf(reason, rlen, "the loaded program uses map %s, which shipped code may not",
				 mi.name);
			st = SPIN_SHIP_E_DENIED;
		}
	}
	return st;
}

/* The program's handler memory of runtime slot (its spin_hpu). */
static int priv_hpu(const struct ship_prog *P)
{
	return P->pfd[0];
}

/* The runtime slot of entry meh, or -1. */
static int me_slot(ptl_handle_me_t meh)
{
	struct ptl_mer *m;
	struct ptl_ni *ni;
	int rc, slot = -1;

	ni = ptl_enter(&rc);
	if (!ni)
		return -1;
	m = ptl_me_get(ni, meh);
	if (m)
		slot = m->rt;
	ptl_unlock(ni);
	return slot;
}

/* Zeroed handler memory for the entry meh in its program's own spin_hpu:
 * its slot, or -1 (reason set). */
static int hpu_add(const struct ship_prog *P, ptl_handle_me_t meh, char *reason, size_t rlen)
{
	static const uint8_t zero[SPIN_HPU_SIZE];
	int slot = me_slot(meh);
	__u32 k = (__u32)slot;

	if (slot < 0 || bpf_map_update_elem(priv_hpu(P), &k, zero, BPF_ANY)) {
		snprintf(reason, rlen, "cannot give the entry its handler memory: %s",
			 slot < 0 ? "not linked" : strerror(errno));
		return -1;
	}
	return slot;
}

static void hpu_del(const struct ship_prog *P, int slot)
{
	__u32 k = (__u32)slot;

	if (slot >= 0 && priv_hpu(P) >= 0)
		bpf_map_delete_elem(priv_hpu(P), &k);
}

/* The first n bytes of slot's handler memory of program P. */
static void hpu_read(const struct ship_prog *P, int slot, void *out, size_t n)
{
	static __thread uint8_t v[SPIN_HPU_SIZE];
	__u32 k = (__u32)slot;

	memset(out, 0, n);
	if (slot >= 0 && !bpf_map_lookup_elem(priv_hpu(P), &k, v))
		memcpy(out, v, n < sizeof(v) ? n : sizeof(v));
}

static void prog_drop(struct ptl_ship *S, int i)
{
	struct ship_prog *P = &S->prog[i];

	if (--P->refs > 0)
		return;
	ptl_me_unlink_force(P->me);
	hpu_del(P, P->slot);
	PtlHPUFreeMem(P->hpu);
	host_free(S, &P->host);
	PtlSpinHandlerUnload(P->h);
	priv_close(P);
	memset(P, 0, sizeof(*P));
}

static void entry_remove(struct ptl_ship *S, struct ship_entry *E)
{
	ptl_me_unlink_force(E->me);
	hpu_del(&S->prog[E->prog], E->slot);
	PtlHPUFreeMem(E->hpu);
	host_free(S, &E->host);
	prog_drop(S, E->prog);
	memset(E, 0, sizeof(*E));
}

static struct ship_entry *entry_find(struct ptl_ship *S, uint32_t rank, uint32_t id)
{
	for (int i = 0; i < SHIP_N_ENTRY; i++)
		if (S->ent[i].used && S->ent[i].rank == rank && S->ent[i].id == id)
			return &S->ent[i];
	return NULL;
}

/* An entry with handlers h on SPIN_SHIP_PT: its handler memory and host
 * memory (host_len bytes, may be 0). */
static int me_make(struct ptl_ship *S, ptl_handle_handler_t h, ptl_match_bits_t bits, uint32_t rank,
		   uint32_t hpu_len, uint32_t host_len, ptl_handle_me_t *me,
		   ptl_handle_hpu_mem_t *hpu, void **host, char *reason, size_t rlen)
{
	ptl_me_t m = { 0 };
	int rc;

	*host = NULL;
	*hpu = PTL_INVALID_HANDLE;
	if (host_len && (rc = PtlSpinHostAlloc(S->nih, host_len, host)) != PTL_OK)
		goto fail;
	if ((rc = PtlHPUAllocMem(hpu_len ? hpu_len : 8, S->nih, hpu)) != PTL_OK)
		goto fail;
	m.start = *host;
	m.length = host_len;
	m.handler_host_mem = *host;
	m.handler_host_mem_length = host_len;
	m.match_id.rank = rank;
	m.match_bits = bits;
	/* no events, no counter: the runtime posts nothing for its messages
	 * and the host does nothing per invocation; the runtime's own
	 * per-entry counters (spin_me_ct) count them (invocations()) */
	m.ct_handle = PTL_CT_NONE;
	m.options = PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE |
		    PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE | PTL_ME_EVENT_COMM_DISABLE;
	m.handlers = h;
	m.hpu_memory = *hpu;
	rc = PtlMEAppend(S->nih, SPIN_SHIP_PT, &m, PTL_PRIORITY_LIST, NULL, me);
	if (rc == PTL_OK)
		return PTL_OK;
fail:
	snprintf(reason, rlen, "cannot install the handler's entry: %s", PtlSpinErrmsg());
	if (*hpu != PTL_INVALID_HANDLE)
		PtlHPUFreeMem(*hpu);
	host_free(S, host);
	return rc;
}

/* Messages entry meh completed: the runtime's counters of its slot. */
static uint64_t invocations(ptl_handle_me_t meh)
{
	struct spin_me sm;
	struct ptl_mer *m;
	struct ptl_ni *ni;
	uint64_t n = 0;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return 0;
	m = ptl_me_get(ni, meh);
	if (m && m->rt >= 0 && !spin_me_get(ni->rt, (uint32_t)m->rt, &sm))
		n = sm.ct_success;
	ptl_unlock(ni);
	return n;
}

/* Keep the relevant verifier lines of msg (the last ones) in reason. */
static void verifier_reason(char *reason, size_t rlen, const char *msg)
{
	const char *p, *q = strstr(msg, "verifier rejected handler");
	size_t n;

	/* "verifier rejected handler 'NAME' (NAME): " names a library
	 * handler the sender does not know: the lines after it */
	if (q && (q = strstr(q, "): ")))
		msg = q + 3;
	n = strlen(msg);
	p = msg;

	if (n >= rlen - 12)
		p = msg + n - (rlen - 12);
	snprintf(reason, rlen, "verifier: %s%s", p == msg ? "" : "...", p);
	for (char *c = reason; *c; c++)
		if (*c == '\n')
			*c = c[1] ? '|' : 0;
}

static void do_ship(struct ptl_ship *S, uint32_t rank, const struct spin_ship_req *q,
		    const uint8_t *obj, struct spin_ship_reply *r)
{
	struct ship_entry *old = entry_find(S, rank, q->entry_id), *E = NULL;
	uint32_t hpu_len = ntohl(q->hpu_len), host_len = ntohl(q->host_len), insns, n = 0;
	uint32_t obj_len = ntohl(q->obj_len);
	uint8_t hash[32];
	struct spin_map_subst subst[SHIP_N_PRIV];
	uint32_t pid = 0;
	int pi = -1, st, rc;

	if (hpu_len > SPIN_HPU_SIZE) {
		r->status = SPIN_SHIP_E_LIMIT;
		snprintf(r->reason, sizeof(r->reason), "handler memory of %u bytes: at most %u", hpu_len,
			 SPIN_HPU_SIZE);
		return;
	}
	if (host_len) {
		/* its window would be the process's window, which the code
		 * could read and write anywhere (docs/shipping.md, "Memory") */
		r->status = SPIN_SHIP_E_DENIED;
		snprintf(r->reason, sizeof(r->reason),
			 "host memory of %u bytes asked: shipped handlers have none (ship with host 0)",
			 host_len);
		return;
	}
	for (int i = 0; i < SHIP_N_ENTRY; i++)
		n += S->ent[i].used && S->ent[i].rank == rank;
	if (!old && n >= S->pol.max_entries) {
		r->status = SPIN_SHIP_E_LIMIT;
		snprintf(r->reason, sizeof(r->reason),
			 "rank %u has %u entries installed here, the target's SPIN_SHIP_MAX_ENTRIES", rank, n);
		return;
	}
	PtlSpinShipHash(obj, obj_len, hash);
	if (memcmp(hash, q->hash, 32)) {
		r->status = SPIN_SHIP_E_MALFORMED;
		snprintf(r->reason, sizeof(r->reason), "object does not match the SHA-256 it was sent with");
		return;
	}
	memcpy(r->hash, hash, 32);
	for (int i = 0; i < SHIP_N_PROG; i++)
		if (S->prog[i].used && !memcmp(S->prog[i].hash, hash, 32))
			pi = i;
	if (pi >= 0) {
		S->hits++;
		r->cache_hit = 1;
	} else {
		struct ship_prog *P;

		if (progs_in_use(S) >= S->pol.max_progs) {
			r->status = SPIN_SHIP_E_LIMIT;
			snprintf(r->reason, sizeof(r->reason),
				 "the target holds as many shipped programs as its SPIN_SHIP_MAX_PROGS=%u",
				 S->pol.max_progs);
			return;
		}
		st = obj_check(&S->pol, obj, obj_len, &insns, r->reason, sizeof(r->reason));
		if (st) {
			r->status = (uint8_t)st;
			return;
		}
		for (pi = 0; pi < SHIP_N_PROG && S->prog[pi].used; pi++)
			;
		P = &S->prog[pi];
		st = priv_make(P, r->reason, sizeof(r->reason));
		if (st) {
			r->status = (uint8_t)st;
			return;
		}
		for (size_t k = 0; k < SHIP_N_PRIV; k++) {
			subst[k].name = ship_priv[k].name;
			subst[k].fd = P->pfd[k];
		}
		rc = ptl_handler_load_mem(S->nih, obj, obj_len, subst, (int)SHIP_N_PRIV, &P->h, &P->insns,
					  &pid);
		if (rc == PTL_OK && (st = prog_maps_check(P, pid, r->reason, sizeof(r->reason)))) {
			/* loaded, on no entry yet: it never ran */
			PtlSpinHandlerUnload(P->h);
			priv_close(P);
			r->status = (uint8_t)st;
			return;
		}
		if (rc != PTL_OK) {
			priv_close(P);
			const char *m = PtlSpinErrmsg();

			if (strstr(spin_errmsg(), "verifier rejected")) {
				/* libspin's whole message (PtlSpinErrmsg is
				 * shorter): the error and the verifier's
				 * relevant lines */
				char *full = malloc(strlen(spin_errmsg()) + strlen(spin_verifier_log()) + 2);

				r->status = SPIN_SHIP_E_VERIFIER;
				if (full) {
					sprintf(full, "%s\n%s", spin_errmsg(), spin_verifier_log());
					verifier_reason(r->reason, sizeof(r->reason), full);
					free(full);
				} else {
					verifier_reason(r->reason, sizeof(r->reason), m);
				}
			} else {
				r->status = strstr(m, "not a spin runtime map") ? SPIN_SHIP_E_DENIED :
					    strstr(m, "slots") ? SPIN_SHIP_E_LIMIT : SPIN_SHIP_E_MALFORMED;
				if (strstr(m, "declares map "))
					snprintf(r->reason, sizeof(r->reason),
						 "the object %s (shipped code may use the runtime's maps and its own .data/.bss)",
						 strstr(m, "declares map "));
				else
					snprintf(r->reason, sizeof(r->reason), "cannot load the object: %s", m);
				for (char *c = r->reason; *c; c++)
					if (*c == '\n')
						*c = ' ';
			}
			return;
		}
		if (me_make(S, P->h, PtlSpinIfuncBits(hash), PTL_RANK_ANY, SPIN_HPU_SIZE, 0, &P->me,
			    &P->hpu, &P->host, r->reason, sizeof(r->reason)) != PTL_OK) {
			PtlSpinHandlerUnload(P->h);
			priv_close(P);
			r->status = SPIN_SHIP_E_FAIL;
			return;
		}
		P->slot = hpu_add(P, P->me, r->reason, sizeof(r->reason));
		if (P->slot < 0) {
			ptl_me_unlink_force(P->me);
			PtlHPUFreeMem(P->hpu);
			PtlSpinHandlerUnload(P->h);
			priv_close(P);
			r->status = SPIN_SHIP_E_FAIL;
			return;
		}
		memcpy(P->hash, hash, 32);
		P->used = true;
		S->loads++;
	}
	S->prog[pi].refs++;
	r->insns = htonl(S->prog[pi].insns);
	/* the new entry next to the old one, then the old one goes: the
	 * sender's messages find one of them all the time */
	for (int i = 0; i < SHIP_N_ENTRY; i++)
		if (!S->ent[i].used) {
			E = &S->ent[i];
			break;
		}
	if (!E) {
		prog_drop(S, pi);
		r->status = SPIN_SHIP_E_LIMIT;
		snprintf(r->reason, sizeof(r->reason), "the target holds %d entries, all it can", SHIP_N_ENTRY);
		return;
	}
	if (me_make(S, S->prog[pi].h, entry_bits(rank, q->entry_id), rank, hpu_len, host_len, &E->me,
		    &E->hpu, &E->host, r->reason, sizeof(r->reason)) != PTL_OK) {
		prog_drop(S, pi);
		r->status = SPIN_SHIP_E_FAIL;
		return;
	}
	E->slot = hpu_add(&S->prog[pi], E->me, r->reason, sizeof(r->reason));
	if (E->slot < 0) {
		ptl_me_unlink_force(E->me);
		PtlHPUFreeMem(E->hpu);
		prog_drop(S, pi);
		r->status = SPIN_SHIP_E_FAIL;
		return;
	}
	E->used = true;
	E->rank = rank;
	E->id = q->entry_id;
	E->keep = !!(ntohs(q->flags) & SPIN_SHIP_F_KEEP);
	E->calls = 0;
	E->prog = pi;
	E->hpu_len = hpu_len ? hpu_len : 8;
	if (old)
		entry_remove(S, old);
}

static void do_query(struct ptl_ship *S, struct ship_entry *E, struct spin_ship_reply *r)
{
	size_t n = E->hpu_len < sizeof(r->hpu) ? E->hpu_len : sizeof(r->hpu);

	r->invocations = htobe64(invocations(E->me));
	memcpy(r->hash, S->prog[E->prog].hash, 32);
	r->insns = htonl(S->prog[E->prog].insns);
	hpu_read(&S->prog[E->prog], E->slot, r->hpu, n);
}

/* A request from rank arrived (ev): answer it. */
static void on_request(struct ptl_ship *S, const ptl_event_t *ev)
{
	uint32_t rank = ev->initiator.rank;
	struct spin_ship_reply *r;
	struct spin_ship_req q;
	const uint8_t *buf;
	struct ship_entry *E;
	bool denied = ev->user_ptr == NULL;
	int rc;

	if (rank >= S->size)
		return;
	r = &S->rep[rank];
	memset(r, 0, sizeof(*r));
	r->magic = htonl(SPIN_SHIP_MAGIC);
	r->version = SPIN_SHIP_VERSION;
	if (!denied && ((uintptr_t)ev->user_ptr - 1 != rank || !S->ctl_buf[rank]))
		return;	/* an allowed rank's entry takes only its own */
	buf = denied ? S->deny_buf : S->ctl_buf[rank];
	memset(&q, 0, sizeof(q));
	memcpy(&q, buf, ev->mlength < sizeof(q) ? ev->mlength : sizeof(q));
	r->op = q.op;
	r->seq = q.seq;
	r->entry_id = q.entry_id;
	q.entry_id = ntohl(q.entry_id);
	if (denied) {
		r->status = SPIN_SHIP_E_DENIED;
		snprintf(r->reason, sizeof(r->reason),
			 "rank %u may not ship code to rank %u (not in its SPIN_SHIP_ALLOW=%s)", rank, S->rank,
			 S->pol.allow_text);
	} else if (ev->rlength > ev->mlength) {
		r->status = SPIN_SHIP_E_LIMIT;
		snprintf(r->reason, sizeof(r->reason),
			 "request of %llu bytes, more than the target's SPIN_SHIP_MAX_BYTES=%u",
			 (unsigned long long)ev->rlength, S->pol.max_bytes);
	} else if (ev->remote_offset || ev->mlength < sizeof(q) || ntohl(q.magic) != SPIN_SHIP_MAGIC ||
		   q.version != SPIN_SHIP_VERSION || ntohl(q.obj_len) != ev->mlength - sizeof(q) ||
		   q.entry_id > SPIN_SHIP_ENTRY_MAX) {
		r->status = SPIN_SHIP_E_MALFORMED;
		snprintf(r->reason, sizeof(r->reason),
			 "malformed request (%llu bytes; header, version or lengths wrong)",
			 (unsigned long long)ev->mlength);
	} else if (q.op == SPIN_SHIP_OP_SHIP) {
		do_ship(S, rank, &q, buf + sizeof(q), r);
	} else if (q.op == SPIN_SHIP_OP_QUERY && (ntohs(q.flags) & SPIN_SHIP_F_HASH)) {
		int pi = -1;

		for (int i = 0; i < SHIP_N_PROG; i++)
			if (S->prog[i].used && !memcmp(S->prog[i].hash, q.hash, 32))
				pi = i;
		if (pi < 0) {
			r->status = SPIN_SHIP_E_NOENT;
			snprintf(r->reason, sizeof(r->reason), "no program with that hash here");
		} else {
			r->invocations = htobe64(invocations(S->prog[pi].me));
			memcpy(r->hash, S->prog[pi].hash, 32);
			r->insns = htonl(S->prog[pi].insns);
			hpu_read(&S->prog[pi], S->prog[pi].slot, r->hpu, sizeof(r->hpu));
		}
	} else if (q.op == SPIN_SHIP_OP_UNSHIP || q.op == SPIN_SHIP_OP_QUERY) {
		E = entry_find(S, rank, q.entry_id);
		if (!E) {
			r->status = SPIN_SHIP_E_NOENT;
			snprintf(r->reason, sizeof(r->reason), "rank %u has no entry %u here", rank, q.entry_id);
		} else if (q.op == SPIN_SHIP_OP_QUERY) {
			do_query(S, E, r);
		} else {
			memcpy(r->hash, S->prog[E->prog].hash, 32);
			entry_remove(S, E);
		}
	} else if (q.op == SPIN_SHIP_OP_UNSHIP_ALL) {
		for (int i = 0; i < SHIP_N_ENTRY; i++)
			if (S->ent[i].used && S->ent[i].rank == rank)
				entry_remove(S, &S->ent[i]);
	} else {
		r->status = SPIN_SHIP_E_MALFORMED;
		snprintf(r->reason, sizeof(r->reason), "unknown request %u", q.op);
	}
	if (!denied)
		S->seen_us[rank] = ptl_now_us();
	r->lease_ms = htonl(S->pol.lease_ms);
	r->placement = (uint8_t)placement();
	r->programs = htonl(progs_in_use(S));
	r->handlers = htonl(runtime_handlers());
	r->cache_hits = htobe64(S->hits);
	r->loads = htobe64(S->loads);
	rc = PtlPut(S->rep_md, (ptl_size_t)rank * sizeof(*r), sizeof(*r), PTL_NO_ACK_REQ,
		    (ptl_process_t){ .rank = rank }, SPIN_SHIP_PT, SPIN_SHIP_BITS(SPIN_SHIP_K_REPLY, 0), 0,
		    NULL, 0);
	if (rc != PTL_OK)
		fprintf(stderr, "spin: ship: cannot answer rank %u: %s\n", rank, PtlSpinErrmsg());
}

/* -------------------------------------------------------- sender side -- */

static void fill_result(ptl_spin_ship_result_t *res, const struct spin_ship_reply *r)
{
	res->code = r->status;
	res->status = r->status ? PTL_FAIL : PTL_OK;
	snprintf(res->reason, sizeof(res->reason), "%.*s", (int)sizeof(r->reason) - 1, r->reason);
	memcpy(res->hash, r->hash, 32);
	res->placement = r->placement;
	res->cache_hit = r->cache_hit;
	res->insns = ntohl(r->insns);
	res->programs = ntohl(r->programs);
	res->handlers = ntohl(r->handlers);
	res->cache_hits = be64toh(r->cache_hits);
	res->loads = be64toh(r->loads);
	res->invocations = be64toh(r->invocations);
	memcpy(res->hpu, r->hpu, sizeof(res->hpu));
}

static void on_reply(struct ptl_ship *S, const ptl_event_t *ev)
{
	uint32_t rank = ev->initiator.rank;
	const struct spin_ship_reply *r;

	if (rank >= S->size || ev->mlength != sizeof(*r) || ev->remote_offset ||
	    (uintptr_t)ev->user_ptr != (uintptr_t)rank + 1)
		return;
	r = &S->rin[rank];
	if (ntohl(r->magic) != SPIN_SHIP_MAGIC || ntohl(r->seq) != S->seq)
		return;	/* late answer of an earlier call */
	S->lease_ms[rank] = ntohl(r->lease_ms);
	for (unsigned int i = 0; i < S->nw; i++)
		if (S->w[i].rank == rank && !S->w[i].done) {
			fill_result(S->w[i].res, r);
			S->w[i].done = true;
		}
}

static void on_ack(struct ptl_ship *S, const ptl_event_t *ev)
{
	uintptr_t i = (uintptr_t)ev->user_ptr;

	if (ev->ni_fail_type == PTL_NI_OK || !i || i > S->nw || S->w[i - 1].done)
		return;
	i--;
	S->w[i].res->status = PTL_FAIL;
	S->w[i].res->code = SPIN_SHIP_E_UNDELIVERED;
	snprintf(S->w[i].res->reason, sizeof(S->w[i].res->reason),
		 "rank %u did not take the request (%s): it accepts no shipped code (SPIN_SHIP_ALLOW unset there) or is gone",
		 S->w[i].rank, ev->ni_fail_type == PTL_NI_DROPPED ? "dropped" :
		 ev->ni_fail_type == PTL_NI_PT_DISABLED ? "portal disabled" : "undeliverable");
	S->w[i].done = true;
}

/* A lease put of rank (ev): its entries stay another lease. */
static void on_lease(struct ptl_ship *S, const ptl_event_t *ev)
{
	uint32_t rank = ev->initiator.rank;

	if (rank < S->size && S->pol.allow[rank])
		S->seen_us[rank] = ptl_now_us();
}

/*
 * The entries of senders whose lease ended (killed, or cut off: no request,
 * no lease put and no message to their entries for lease_ms) go, and their
 * programs with their last entry.  Entries shipped with SPIN_SHIP_F_KEEP
 * stay.  A sender's entries take messages from it only (me_make), so one
 * that sends to them is alive whatever became of its lease puts: a busy
 * sender on a loaded machine did not get one through in 10 s.  Looks at
 * most every tick_ms.  Lock held.
 */
static void lease_sweep(struct ptl_ship *S, uint32_t tick_ms)
{
	uint64_t now = ptl_now_us(), lease = (uint64_t)S->pol.lease_ms * 1000;

	if (!lease || now - S->swept_us < (uint64_t)tick_ms * 1000)
		return;
	S->swept_us = now;
	for (int i = 0; i < SHIP_N_ENTRY; i++) {
		struct ship_entry *E = &S->ent[i];
		uint64_t calls;

		if (!E->used || E->keep)
			continue;
		calls = invocations(E->me);
		if (calls != E->calls) {
			E->calls = calls;
			S->seen_us[E->rank] = now;
		}
	}
	for (int i = 0; i < SHIP_N_ENTRY; i++) {
		struct ship_entry *E = &S->ent[i];

		if (!E->used || E->keep || now - S->seen_us[E->rank] <= lease)
			continue;
		fprintf(stderr, "spin: ship: rank %u's lease ended (nothing from it for %llu ms, lease %u ms): its entry %u removed\n",
			E->rank, (unsigned long long)(now - S->seen_us[E->rank]) / 1000, S->pol.lease_ms, E->id);
		entry_remove(S, E);
	}
}

static void dispatch(struct ptl_ship *S, const ptl_event_t *e)
{
	ptl_event_t ev = *e;

	pthread_mutex_lock(&S->mu);
	if (ev.type == PTL_EVENT_PUT && ev.ni_fail_type == PTL_NI_OK) {
		unsigned int kind = (unsigned int)(ev.match_bits >> 40) & 0xff;

		if (kind == SPIN_SHIP_K_REQ && S->target)
			on_request(S, &ev);
		else if (kind == SPIN_SHIP_K_REPLY && S->sender)
			on_reply(S, &ev);
		else if (kind == SPIN_SHIP_K_LEASE && S->target)
			on_lease(S, &ev);
	} else if (ev.type == PTL_EVENT_ACK || ev.type == PTL_EVENT_SEND) {
		on_ack(S, &ev);
	}
	pthread_cond_broadcast(&S->cv);
	pthread_mutex_unlock(&S->mu);
}

/* Without the ship thread (a sender only): take one event of the ship
 * queue, making progress, waiting up to ms. */
static void pump(struct ptl_ship *S, ptl_time_t ms)
{
	ptl_event_t ev;
	unsigned int which;
	int rc = PtlEQPoll(&S->eq, 1, ms, &ev, &which);

	if (rc == PTL_OK || rc == PTL_EQ_DROPPED)
		dispatch(S, &ev);
}

/* The ship thread sleeps on an eventfd that posting to the ship queue
 * writes (ptl_eq_post): progress is made by the application's calls and
 * the progress thread; this one costs nothing while nothing comes. */
static void *ship_thread(void *arg)
{
	struct ptl_ship *S = arg;
	ptl_event_t ev;
	uint64_t v;
	int rc;

	/* leases are checked at least 4 times a lease */
	int tick = S->pol.lease_ms && S->pol.lease_ms / 4 < 500 ? (int)S->pol.lease_ms / 4 : 500;

	if (tick < 10)
		tick = 10;
	while (!S->stop) {
		struct pollfd p = { .fd = S->efd, .events = POLLIN };

		if (poll(&p, 1, tick) > 0 && (p.revents & POLLIN))
			(void)!read(S->efd, &v, sizeof(v));
		while (!S->stop && ((rc = ptl_eq_take(S->eq, &ev)) == PTL_OK || rc == PTL_EQ_DROPPED))
			dispatch(S, &ev);
		pthread_mutex_lock(&S->mu);
		lease_sweep(S, (uint32_t)tick);
		pthread_mutex_unlock(&S->mu);
	}
	return NULL;
}

/* ------------------------------------------------------------ set-up -- */

static int ship_new(struct ptl_ni *ni, ptl_handle_ni_t nih, struct ptl_ship **out)
{
	struct ptl_ship *S = calloc(1, sizeof(*S));
	int rc;

	if (!S)
		return seterr(PTL_NO_SPACE, "out of memory");
	S->nih = nih;
	S->rank = ni->rank;
	S->size = ni->size ? ni->size : 1;
	pthread_mutex_init(&S->mu, NULL);
	pthread_cond_init(&S->cv, NULL);
	rc = PtlEQAlloc(nih, 1024, &S->eq);
	if (rc == PTL_OK) {
		ptl_pt_index_t got;

		rc = PtlPTAlloc(nih, 0, S->eq, SPIN_SHIP_PT, &got);
		if (rc == PTL_PT_IN_USE)
			rc = seterr(rc, "portal index %d of the matching NI is in use: shipped handlers need it (docs/shipping.md)",
				    SPIN_SHIP_PT);
		S->pt_on = rc == PTL_OK;
	}
	if (rc != PTL_OK) {
		if (S->eq)
			PtlEQFree(S->eq);
		free(S);
		return rc;
	}
	*out = S;
	return PTL_OK;
}

static ptl_me_t ctl_me_spec(void *buf, size_t len, uint32_t rank, ptl_match_bits_t bits, bool trunc)
{
	ptl_me_t m = { 0 };

	m.start = buf;
	m.length = len;
	m.ct_handle = PTL_CT_NONE;
	m.match_id.rank = rank;
	m.match_bits = bits;
	m.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE |
		    (trunc ? 0 : PTL_ME_NO_TRUNCATE);
	return m;
}

int ptl_ship_init(struct ptl_ni *ni, ptl_handle_ni_t nih)
{
	const char *a = getenv("SPIN_SHIP_ALLOW");
	struct ptl_ship *S;
	ptl_md_t md = { 0 };
	ptl_me_t m;
	int rc;

	if (!a || !*a)
		return PTL_OK;	/* off: nothing reserved */
	if (!(ni->options & PTL_NI_LOGICAL))
		return seterr(PTL_ARG_INVALID, "PtlNIInit: SPIN_SHIP_ALLOW needs a logical NI (ranks)");
	rc = ship_new(ni, nih, &S);
	if (rc != PTL_OK)
		return rc;
	S->target = true;
	rc = policy_load(&S->pol, S->size);
	if (rc != PTL_OK)
		goto fail;
	S->ctl_buf = calloc(S->size, sizeof(*S->ctl_buf));
	S->ctl_me = calloc(S->size, sizeof(*S->ctl_me));
	S->rep = calloc(S->size, sizeof(*S->rep));
	S->seen_us = calloc(S->size, sizeof(*S->seen_us));
	if (!S->ctl_buf || !S->ctl_me || !S->rep || !S->seen_us) {
		rc = seterr(PTL_NO_SPACE, "PtlNIInit: out of memory");
		goto fail;
	}
	md.start = S->rep;
	md.length = (ptl_size_t)S->size * sizeof(*S->rep);
	md.eq_handle = PTL_EQ_NONE;
	md.ct_handle = PTL_CT_NONE;
	rc = PtlMDBind(nih, &md, &S->rep_md);
	/* one control entry per allowed rank (its requests one at a time,
	 * up to the size limit), then one that answers everybody else */
	for (uint32_t r = 0; rc == PTL_OK && r < S->size; r++) {
		if (!S->pol.allow[r])
			continue;
		S->ctl_buf[r] = malloc(sizeof(struct spin_ship_req) + S->pol.max_bytes);
		if (!S->ctl_buf[r]) {
			rc = seterr(PTL_NO_SPACE, "PtlNIInit: out of memory");
			break;
		}
		m = ctl_me_spec(S->ctl_buf[r], sizeof(struct spin_ship_req) + S->pol.max_bytes, r,
				SPIN_SHIP_BITS(SPIN_SHIP_K_REQ, 0), true);
		rc = PtlMEAppend(nih, SPIN_SHIP_PT, &m, PTL_PRIORITY_LIST, (void *)(uintptr_t)(r + 1),
				 &S->ctl_me[r]);
	}
	if (rc == PTL_OK) {
		m = ctl_me_spec(S->deny_buf, sizeof(S->deny_buf), PTL_RANK_ANY,
				SPIN_SHIP_BITS(SPIN_SHIP_K_REQ, 0), true);
		rc = PtlMEAppend(nih, SPIN_SHIP_PT, &m, PTL_PRIORITY_LIST, NULL, &S->deny_me);
	}
	if (rc == PTL_OK) {
		/* lease puts of any rank (on_lease looks at who) */
		m = ctl_me_spec(S->lease_buf, sizeof(S->lease_buf), PTL_RANK_ANY,
				SPIN_SHIP_BITS(SPIN_SHIP_K_LEASE, 0), true);
		rc = PtlMEAppend(nih, SPIN_SHIP_PT, &m, PTL_PRIORITY_LIST, NULL, &S->lease_me);
		S->lease_on = rc == PTL_OK;
	}
	if (rc == PTL_OK) {
		S->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (S->efd <= 0)
			rc = seterr(PTL_FAIL, "PtlNIInit: eventfd: %s", strerror(errno));
	}
	if (rc == PTL_OK) {
		int e;
		struct ptl_ni *n = ptl_enter(&e);

		if (n) {
			n->ship_eq = S->eq;
			n->ship_efd = S->efd;
			ptl_unlock(n);
		}
	}
	if (rc == PTL_OK && pthread_create(&S->thr, NULL, ship_thread, S))
		rc = seterr(PTL_FAIL, "PtlNIInit: cannot start the ship thread");
	if (rc != PTL_OK)
		goto fail;
	pthread_setname_np(S->thr, "ptl-ship");
	S->thr_on = true;
	ni->ship = S;
	return PTL_OK;
fail:
	/* PtlNIFini of the caller frees the entries, queue and portal */
	ni->ship_efd = 0;
	if (S->efd > 0)
		close(S->efd);
	for (uint32_t r = 0; S->ctl_buf && r < S->size; r++)
		free(S->ctl_buf[r]);
	free(S->ctl_buf);
	free(S->ctl_me);
	free(S->rep);
	free(S->seen_us);
	free(S->pol.allow);
	free(S);
	return rc;
}

static pthread_mutex_t sender_mu = PTHREAD_MUTEX_INITIALIZER;
static int sender_on_locked(ptl_handle_ni_t nih, struct ptl_ship **out);

/* The sender side on first use (lock not held; two threads of the
 * application may ship at once). */
static int sender_on(ptl_handle_ni_t nih, struct ptl_ship **out)
{
	int rc;

	pthread_mutex_lock(&sender_mu);
	rc = sender_on_locked(nih, out);
	pthread_mutex_unlock(&sender_mu);
	return rc;
}

static int sender_on_locked(ptl_handle_ni_t nih, struct ptl_ship **out)
{
	struct ptl_ni *ni;
	struct ptl_ship *S = NULL;
	int rc;

	ni = ptl_enter(&rc);
	if (!ni)
		return rc;
	S = ni->ship;
	if (!(ni->options & PTL_NI_LOGICAL) || ptl_hidx(nih) != PTL_VIEW_MATCH) {
		ptl_unlock(ni);
		return seterr(PTL_ARG_INVALID, "shipping handlers needs a logical matching NI");
	}
	ptl_unlock(ni);
	if (!S) {
		rc = ship_new(ni, nih, &S);
		if (rc != PTL_OK)
			return rc;
		ni->ship = S;	/* only PtlSpinHandlerShip's caller and PtlNIFini look */
	}
	if (S->sender) {
		*out = S;
		return PTL_OK;
	}
	S->rin = calloc(S->size, sizeof(*S->rin));
	S->rin_me = calloc(S->size, sizeof(*S->rin_me));
	S->rin_on = calloc(S->size, 1);
	S->shipped = calloc(S->size, 1);
	S->lease_ms = calloc(S->size, sizeof(*S->lease_ms));
	if (!S->rin || !S->rin_me || !S->rin_on || !S->shipped || !S->lease_ms)
		return seterr(PTL_NO_SPACE, "out of memory");
	S->renew_set = getenv("SPIN_SHIP_RENEW_MS") != NULL;
	if (S->renew_set && (rc = env_u32("SPIN_SHIP_RENEW_MS", 0, 0, 86400000, &S->renew_ms)))
		return rc;
	pthread_mutex_lock(&S->mu);
	S->sender = true;
	pthread_mutex_unlock(&S->mu);
	*out = S;
	return PTL_OK;
}

static __thread uint64_t timeout_override_ms;	/* PtlNIFini's unship: shorter */

static uint64_t ship_timeout_ms(void)
{
	const char *v = getenv("SPIN_SHIP_TIMEOUT_MS");
	uint64_t t = v ? strtoull(v, NULL, 0) : 0;

	if (timeout_override_ms)
		return timeout_override_ms;
	return t ? t : 20000;
}

/*
 * The sender's leases: every quarter of the shortest lease of the ranks it
 * shipped to (their answers say how long), a put of no consequence to each
 * of them (SPIN_SHIP_K_LEASE).  When this process dies, however it dies,
 * the puts stop and each target removes what it shipped a lease later.
 * The puts go past a full congestion window (ptl_md_set_ctl: the
 * application's own puts to that rank could hold them back for as long as
 * it sends), and one that could not be sent is tried again in 50 ms.
 */
static void *renew_thread(void *arg)
{
	struct ptl_ship *S = arg;

	bool again = false;	/* a put of the last round was not sent */

	pthread_setname_np(pthread_self(), "ptl-ship-lease");
	for (;;) {
		uint32_t ms = 0;
		struct timespec ts;
		uint64_t ns;

		pthread_mutex_lock(&S->mu);
		for (uint32_t r = 0; r < S->size; r++)
			if (S->shipped[r] && S->lease_ms[r] && (!ms || S->lease_ms[r] < ms))
				ms = S->lease_ms[r];
		ms = ms ? ms / 4 : 1000;
		if (S->renew_set)
			ms = S->renew_ms;
		if (ms < 10)
			ms = 10;
		if (again && ms > 50)
			ms = 50;
		clock_gettime(CLOCK_REALTIME, &ts);
		ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000;
		ts.tv_sec += (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		while (!S->stop_renew && pthread_cond_timedwait(&S->cv, &S->mu, &ts) != ETIMEDOUT)
			;
		if (S->stop_renew) {
			pthread_mutex_unlock(&S->mu);
			return NULL;
		}
		pthread_mutex_unlock(&S->mu);
		again = false;
		for (uint32_t r = 0; r < S->size; r++) {
			int rc;

			if (!S->shipped[r] || !S->lease_ms[r])
				continue;
			rc = PtlPut(S->lease_md, 0, sizeof(S->lease_word), PTL_NO_ACK_REQ,
				    (ptl_process_t){ .rank = r }, SPIN_SHIP_PT,
				    SPIN_SHIP_BITS(SPIN_SHIP_K_LEASE, 0), 0, NULL, 0);
			if (rc == PTL_NO_SPACE)
				again = true;
			else if (rc != PTL_OK)
				fprintf(stderr, "spin: ship: cannot renew the lease at rank %u: %s\n", r,
					PtlSpinErrmsg());
		}
	}
}

/* The lease thread on the first shipment that is not SPIN_SHIP_KEEP. */
static void renew_start(ptl_handle_ni_t nih, struct ptl_ship *S)
{
	ptl_md_t md = { 0 };

	pthread_mutex_lock(&sender_mu);
	/* $SPIN_SHIP_RENEW_MS=0: this process's messages to its entries
	 * alone keep them (lease_sweep) */
	if (!S->renew_on && !(S->renew_set && !S->renew_ms)) {
		md.start = &S->lease_word;
		md.length = sizeof(S->lease_word);
		md.eq_handle = PTL_EQ_NONE;
		md.ct_handle = PTL_CT_NONE;
		if (PtlMDBind(nih, &md, &S->lease_md) != PTL_OK) {
			fprintf(stderr, "spin: ship: no lease for what this process ships: %s\n", PtlSpinErrmsg());
		} else if (ptl_md_set_ctl(S->lease_md) != PTL_OK) {
			PtlMDRelease(S->lease_md);
		} else if (pthread_create(&S->renew, NULL, renew_thread, S)) {
			fprintf(stderr, "spin: ship: cannot start the lease thread\n");
			PtlMDRelease(S->lease_md);
		} else {
			S->renew_on = true;
		}
	}
	pthread_mutex_unlock(&sender_mu);
}

/* Send one request (header q, object obj) to n targets and wait for the
 * answers. */
static int request(ptl_handle_ni_t nih, struct spin_ship_req *q, const void *obj, size_t len,
		   const ptl_process_t *targets, unsigned int n, ptl_spin_ship_result_t *res)
{
	struct ptl_ship *S = NULL;
	ptl_handle_md_t mdh;
	ptl_md_t md = { 0 };
	uint8_t *buf;
	uint64_t end;
	int rc, all = PTL_OK;

	if (!targets || !n || !res)
		return PTL_ARG_INVALID;
	rc = sender_on(nih, &S);
	if (rc != PTL_OK)
		return rc;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t t = targets[i].rank;
		ptl_me_t m;

		if (t >= S->size)
			return seterr(PTL_ARG_INVALID, "rank %u is not in the job (size %u)", t, S->size);
		pthread_mutex_lock(&sender_mu);
		if (!S->rin_on[t]) {
			/* its answers: an entry only rank t can put into */
			if (S->n_rin >= SHIP_MAX_TARGETS) {
				pthread_mutex_unlock(&sender_mu);
				return seterr(PTL_NO_SPACE, "this process shipped to %d ranks already, all it can",
					      SHIP_MAX_TARGETS);
			}
			m = ctl_me_spec(&S->rin[t], sizeof(S->rin[t]), t,
					SPIN_SHIP_BITS(SPIN_SHIP_K_REPLY, 0), false);
			rc = PtlMEAppend(nih, SPIN_SHIP_PT, &m, PTL_PRIORITY_LIST, (void *)(uintptr_t)(t + 1),
					 &S->rin_me[t]);
			if (rc != PTL_OK) {
				pthread_mutex_unlock(&sender_mu);
				return rc;
			}
			S->rin_on[t] = 1;
			S->n_rin++;
		}
		pthread_mutex_unlock(&sender_mu);
	}
	buf = malloc(sizeof(*q) + len);
	if (!buf)
		return seterr(PTL_NO_SPACE, "out of memory");
	pthread_mutex_lock(&S->mu);
	while (S->busy)
		pthread_cond_wait(&S->cv, &S->mu);
	S->busy = true;
	S->seq++;
	q->seq = htonl(S->seq);
	memcpy(buf, q, sizeof(*q));
	if (len)
		memcpy(buf + sizeof(*q), obj, len);
	S->w = calloc(n, sizeof(*S->w));
	S->nw = n;
	for (unsigned int i = 0; S->w && i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].target = targets[i];
		S->w[i].rank = targets[i].rank;
		S->w[i].res = &res[i];
	}
	pthread_mutex_unlock(&S->mu);
	if (!S->w) {
		rc = seterr(PTL_NO_SPACE, "out of memory");
		goto out;
	}
	md.start = buf;
	md.length = sizeof(*q) + len;
	md.eq_handle = S->eq;
	md.ct_handle = PTL_CT_NONE;
	md.options = PTL_MD_EVENT_SEND_DISABLE;
	rc = PtlMDBind(nih, &md, &mdh);
	if (rc != PTL_OK)
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		rc = PtlPut(mdh, 0, md.length, PTL_ACK_REQ, targets[i], SPIN_SHIP_PT,
			    SPIN_SHIP_BITS(SPIN_SHIP_K_REQ, 0), 0, (void *)(uintptr_t)(i + 1), 0);
		if (rc != PTL_OK) {
			pthread_mutex_lock(&S->mu);
			res[i].status = PTL_FAIL;
			res[i].code = SPIN_SHIP_E_UNDELIVERED;
			snprintf(res[i].reason, sizeof(res[i].reason), "PtlPut: %s", PtlSpinErrmsg());
			S->w[i].done = true;
			pthread_mutex_unlock(&S->mu);
		} else if (q->op == SPIN_SHIP_OP_SHIP && !(ntohs(q->flags) & SPIN_SHIP_F_KEEP)) {
			/* removed at PtlNIFini, or a lease after this
			 * process dies (SPIN_SHIP_KEEP: left) */
			pthread_mutex_lock(&S->mu);
			S->shipped[targets[i].rank] = 1;
			pthread_mutex_unlock(&S->mu);
		}
	}
	if (q->op == SPIN_SHIP_OP_SHIP && !(ntohs(q->flags) & SPIN_SHIP_F_KEEP))
		renew_start(nih, S);
	end = ptl_now_us() + ship_timeout_ms() * 1000;
	for (;;) {
		unsigned int left = 0;

		pthread_mutex_lock(&S->mu);
		for (unsigned int i = 0; i < n; i++)
			left += !S->w[i].done;
		pthread_mutex_unlock(&S->mu);
		if (!left || ptl_now_us() > end)
			break;
		if (S->thr_on) {
			/* the ship thread takes the events */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_mutex_lock(&S->mu);
			pthread_cond_timedwait(&S->cv, &S->mu, &ts);
			pthread_mutex_unlock(&S->mu);
		} else {
			pump(S, 20);
		}
	}
	rc = PTL_OK;
	pthread_mutex_lock(&S->mu);
	for (unsigned int i = 0; i < n; i++) {
		if (!S->w[i].done) {
			res[i].status = PTL_FAIL;
			res[i].code = SPIN_SHIP_E_UNDELIVERED;
			snprintf(res[i].reason, sizeof(res[i].reason), "no answer from rank %u within %llu ms",
				 targets[i].rank, (unsigned long long)ship_timeout_ms());
		}
		if (res[i].status != PTL_OK)
			all = PTL_FAIL;
	}
	free(S->w);
	S->w = NULL;
	S->nw = 0;
	pthread_mutex_unlock(&S->mu);
	/* the acks are in when the answers are (or the put timed out) */
	for (int t = 0; PtlMDRelease(mdh) == PTL_IN_USE && t < 1000; t++) {
		if (S->thr_on)
			usleep(2000);
		else
			pump(S, 2);
	}
	if (all != PTL_OK)
		ptl_seterr(PTL_FAIL, "%s", res[0].status != PTL_OK ? res[0].reason : "a target failed");
	rc = all;
out:
	pthread_mutex_lock(&S->mu);
	free(S->w);
	S->w = NULL;
	S->nw = 0;
	S->busy = false;
	pthread_cond_broadcast(&S->cv);
	pthread_mutex_unlock(&S->mu);
	free(buf);
	return rc;
}

static void req_init(struct spin_ship_req *q, int op, uint32_t entry_id)
{
	memset(q, 0, sizeof(*q));
	q->magic = htonl(SPIN_SHIP_MAGIC);
	q->version = SPIN_SHIP_VERSION;
	q->op = (uint8_t)op;
	q->entry_id = htonl(entry_id);
}

int PtlSpinHandlerShip(ptl_handle_ni_t nih, const void *obj, ptl_size_t len,
		       const ptl_process_t *targets, unsigned int n, uint32_t entry_id,
		       ptl_size_t hpu_len, ptl_size_t host_len, ptl_spin_ship_result_t *res)
{
	struct spin_ship_req q;

	if (!obj || !len || len > SPIN_MAX_MSG - sizeof(q) || entry_id > SPIN_SHIP_ENTRY_MAX ||
	    hpu_len > SPIN_HPU_SIZE || host_len > UINT32_MAX)
		return seterr(PTL_ARG_INVALID,
			      "PtlSpinHandlerShip: need an object, an entry id below 2^24, handler memory <= %u",
			      SPIN_HPU_SIZE);
	req_init(&q, SPIN_SHIP_OP_SHIP, entry_id);
	if (getenv("SPIN_SHIP_KEEP"))
		q.flags = htons(SPIN_SHIP_F_KEEP);	/* outlives this process: no lease */
	q.obj_len = htonl((uint32_t)len);
	q.hpu_len = htonl((uint32_t)hpu_len);
	q.host_len = htonl((uint32_t)host_len);
	PtlSpinShipHash(obj, len, q.hash);
	return request(nih, &q, obj, len, targets, n, res);
}

int PtlSpinHandlerUnship(ptl_handle_ni_t nih, const ptl_process_t *targets, unsigned int n,
			 uint32_t entry_id, ptl_spin_ship_result_t *res)
{
	struct spin_ship_req q;

	if (entry_id > SPIN_SHIP_ENTRY_MAX)
		return PTL_ARG_INVALID;
	req_init(&q, SPIN_SHIP_OP_UNSHIP, entry_id);
	return request(nih, &q, NULL, 0, targets, n, res);
}

int PtlSpinHandlerQuery(ptl_handle_ni_t nih, const ptl_process_t *targets, unsigned int n,
			uint32_t entry_id, ptl_spin_ship_result_t *res)
{
	struct spin_ship_req q;

	if (entry_id > SPIN_SHIP_ENTRY_MAX)
		return PTL_ARG_INVALID;
	req_init(&q, SPIN_SHIP_OP_QUERY, entry_id);
	return request(nih, &q, NULL, 0, targets, n, res);
}

int PtlSpinIfuncQuery(ptl_handle_ni_t nih, const ptl_process_t *targets, unsigned int n,
		      const unsigned char hash[32], ptl_spin_ship_result_t *res)
{
	struct spin_ship_req q;

	if (!hash)
		return PTL_ARG_INVALID;
	req_init(&q, SPIN_SHIP_OP_QUERY, 0);
	q.flags = htons(SPIN_SHIP_F_HASH);
	memcpy(q.hash, hash, 32);
	return request(nih, &q, NULL, 0, targets, n, res);
}

ptl_match_bits_t PtlSpinShipBits(ptl_handle_ni_t nih, uint32_t entry_id)
{
	struct ptl_ni *ni;
	uint32_t rank = 0;
	int rc;

	ni = ptl_enter(&rc);
	if (ni) {
		rank = ni->rank;
		ptl_unlock(ni);
	}
	(void)nih;
	return entry_bits(rank, entry_id);
}

void ptl_ship_fini(struct ptl_ni *ni, ptl_handle_ni_t nih)
{
	struct ptl_ship *S = ni->ship;
	ptl_process_t *t;
	ptl_spin_ship_result_t *res;
	unsigned int n = 0;

	if (!S)
		return;
	if (S->renew_on) {
		pthread_mutex_lock(&S->mu);
		S->stop_renew = true;
		pthread_cond_broadcast(&S->cv);
		pthread_mutex_unlock(&S->mu);
		pthread_join(S->renew, NULL);
		PtlMDRelease(S->lease_md);
		S->renew_on = false;
	}
	/* the sender's job ends: what it shipped goes (one request to every
	 * rank it shipped to; if that is lost, the leases end) */
	if (S->sender && (t = calloc(S->size, sizeof(*t))) && (res = calloc(S->size, sizeof(*res)))) {
		struct spin_ship_req q;

		for (uint32_t r = 0; r < S->size; r++)
			if (S->shipped[r])
				t[n++].rank = r;
		if (n) {
			req_init(&q, SPIN_SHIP_OP_UNSHIP_ALL, 0);
			timeout_override_ms = 2000;
			request(nih, &q, NULL, 0, t, n, res);
			timeout_override_ms = 0;
		}
		free(res);
		free(t);
	}
	if (S->thr_on) {
		S->stop = true;
		pthread_join(S->thr, NULL);
	}
	if (S->efd > 0) {
		int e;
		struct ptl_ni *n = ptl_enter(&e);

		if (n) {
			n->ship_efd = 0;
			ptl_unlock(n);
		}
		close(S->efd);
	}
	for (int i = 0; i < SHIP_N_ENTRY; i++)
		if (S->ent[i].used)
			entry_remove(S, &S->ent[i]);
	for (int i = 0; i < SHIP_N_PROG; i++)
		if (S->prog[i].used) {
			S->prog[i].refs = 1;
			prog_drop(S, i);
		}
	for (uint32_t r = 0; S->ctl_me && r < S->size; r++)
		if (S->ctl_buf[r])
			ptl_me_unlink_force(S->ctl_me[r]);
	if (S->target)
		ptl_me_unlink_force(S->deny_me);
	if (S->lease_on)
		ptl_me_unlink_force(S->lease_me);
	for (uint32_t r = 0; S->rin_on && r < S->size; r++)
		if (S->rin_on[r])
			ptl_me_unlink_force(S->rin_me[r]);
	if (S->target)
		PtlMDRelease(S->rep_md);
	if (S->pt_on)
		PtlPTFree(nih, SPIN_SHIP_PT);
	PtlEQFree(S->eq);
	ni->ship = NULL;
	for (uint32_t r = 0; S->ctl_buf && r < S->size; r++)
		free(S->ctl_buf[r]);
	free(S->ctl_buf);
	free(S->ctl_me);
	free(S->rep);
	free(S->rin);
	free(S->rin_me);
	free(S->rin_on);
	free(S->shipped);
	free(S->lease_ms);
	free(S->seen_us);
	free(S->pol.allow);
	free(S);
}
