// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Key-value store: GETs answered by sPIN handlers from host memory, SETs
 * and misses by the host process; a host-only UDP server as the baseline;
 * a YCSB-like client that checks every reply.
 *
 *   kvstore server DEV [keys N] [slot-bits B] [seconds S]
 *       spin server on DEV (runtime attached there as rank 0, peers from
 *       $SPIN_HOSTFILE): loads kvstore.bpf.o, appends the GET entry (the
 *       handlers, the slot table as handler host memory) and the SET entry
 *       (no handlers, deposited into a staging area), loads N keys, then
 *       applies SETs and answers misses until SIGTERM/S seconds.
 *   kvstore udp-server IP [keys N] [port P] [seconds S]
 *       the same store on a kernel UDP socket (recvmmsg/sendmmsg batches).
 *   kvstore client SERVER_IP [port P] [rank R] [clients C] [keys N]
 *       [get-pct G] [window W] [seconds S] [warmup S] [count N] [theta T]
 *       [hot] [seed X] [timeout-ms T] [xsk DEV]
 *       YCSB-like load: Zipf(theta) keys, G% GETs, up to W outstanding.
 *       Client R of C only SETs the keys i with i % C == R - 1, so it knows
 *       what each of them must hold; every reply is checked: key, value
 *       bytes = f(key, version), the writer in the version, and for its own
 *       keys the version against the SETs it sent and had acknowledged.
 *       Prints one line of results; exit 0 only if every reply was right.
 *       Requests go out on a kernel UDP socket, or with xsk DEV on
 *       libspin's AF_XDP path (the runtime attached to DEV with this
 *       client's rank, the server rank 0 of $SPIN_HOSTFILE; port P then
 *       replaces rank 0's port): the load generator whose own cost per
 *       request is small enough not to be the limit.
 *
 * Both servers reply to the client's address on the sPIN port (7717), with
 * the same messages, so the client code is the same for both.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/types.h>
#include <spin/spin.h>
#include <spin/xsk.h>
#include "../sample.h"
#include "kvstore.h"

#define BATCH		64
#define MAX_WINDOW	256
#define MAX_CLIENTS	16
#define UDP_PORT	7718
#define PKT_MAX		(sizeof(struct spin_hdr) + sizeof(struct kv_rec))

static volatile sig_atomic_t stop;
static void on_sig(int s) { (void)s; stop = 1; }

/* ---------------------------------------------------------- keys/values -- */

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* The key of item i: a scrambled 56-bit id, never 0. */
static inline uint64_t key_of(uint64_t i)
{
	return (mix64(i ^ 0x6b76ull) & KV_KEY_MASK) | 1;
}

/* The value of (key, version): every byte depends on both. */
static void value_fill(uint8_t *v, uint64_t key, uint64_t version)
{
	uint64_t x = key * 0x2545F4914F6CDD1Dull ^ version;

	for (int i = 0; i < KV_VAL_LEN; i += 8) {
		x = mix64(x);
		memcpy(v + i, &x, 8);
	}
}

static bool value_ok(const struct kv_rec *r)
{
	uint8_t v[KV_VAL_LEN];

	value_fill(v, r->key, r->version);
	return r->vlen == KV_VAL_LEN && !memcmp(v, r->value, KV_VAL_LEN);
}

/* ---------------------------------------------------------------- store -- */

/* The host's full store: open addressing, every key once. */
struct store {
	struct kv_rec *e;
	uint64_t mask;
	uint64_t n;
};

static struct kv_rec *store_find(struct store *s, uint64_t key, bool insert)
{
	for (uint64_t i = mix64(key) & s->mask;; i = (i + 1) & s->mask) {
		if (s->e[i].key == key)
			return &s->e[i];
		if (!s->e[i].key) {
			if (!insert || s->n + 1 > s->mask / 4 * 3)
				return NULL;
			s->e[i].key = key;
			s->n++;
			return &s->e[i];
		}
	}
}

static void store_init(struct store *s, uint64_t nkeys)
{
	uint64_t cap = 16;

	while (cap < nkeys * 2)
		cap <<= 1;
	s->e = calloc(cap, sizeof(*s->e));
	s->mask = cap - 1;
	s->n = 0;
	if (!s->e) {
		fprintf(stderr, "kvstore: out of memory\n");
		exit(1);
	}
}

/* The slot table the handlers read (spin server only). */
struct cache {
	struct kv_rec *slot;
	uint64_t shift, mask;
};

/*
 * Seqlock write: odd, the record, even.  The handler reads seq, the record,
 * seq again, and uses the copy only if both were the same even number.
 *
 * Replacement: a slot holds the key the host last answered a miss for
 * (install); loads and SETs fill an empty slot or update the key already
 * there but never evict another key, so a cold key's SET does not push a
 * hot key out of the table.
 */
static void cache_put(struct cache *c, const struct kv_rec *r, bool install)
{
	struct kv_rec *s = &c->slot[kv_slot_of(r->key, c->shift) & c->mask];
	uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);

	if (!install && s->key && s->key != r->key)
		return;

	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);	/* odd before the data */
	s->key = r->key;
	s->version = r->version;
	s->vlen = r->vlen;
	memcpy(s->value, r->value, KV_VAL_LEN);
	__atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);	/* data before even */
}

static void store_load(struct store *s, struct cache *c, uint64_t nkeys)
{
	for (uint64_t i = 0; i < nkeys; i++) {
		uint64_t key = key_of(i);
		struct kv_rec *r = store_find(s, key, true);

		if (!r || r->vlen) {
			fprintf(stderr, "kvstore: key %llu of item %llu is not unique\n",
				(unsigned long long)key, (unsigned long long)i);
			exit(1);
		}
		r->version = 0;
		r->vlen = KV_VAL_LEN;
		value_fill(r->value, key, 0);
		if (c)
			cache_put(c, r, false);
	}
}

/* Apply a SET (payload rec) to the store and the table; the record as
 * stored, or NULL if it is malformed or the store is full. */
static struct kv_rec *store_set(struct store *s, struct cache *c, const struct kv_rec *in,
				uint64_t key)
{
	struct kv_rec *r;

	if (in->key != key || in->vlen != KV_VAL_LEN)
		return NULL;
	r = store_find(s, key, true);
	if (!r)
		return NULL;
	r->version = in->version;
	r->vlen = KV_VAL_LEN;
	memcpy(r->value, in->value, KV_VAL_LEN);
	if (c)
		cache_put(c, r, false);
	return r;
}

/* ------------------------------------------------------- reply batches -- */

struct replies {
	int fd;
	uint32_t job_key;		/* $SPIN_JOB_KEY: the clients' runtimes may want one */
	uint32_t n;
	uint8_t buf[BATCH][PKT_MAX];
	struct iovec iov[BATCH];
	struct mmsghdr msg[BATCH];
	struct sockaddr_in to[BATCH];
	uint64_t sent;
};

static void replies_flush(struct replies *q)
{
	uint32_t done = 0;

	while (done < q->n) {
		int r = sendmmsg(q->fd, q->msg + done, q->n - done, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("kvstore: sendmmsg");
			break;
		}
		done += r;
	}
	q->sent += done;
	q->n = 0;
}

/* Queue a reply message to `to` (sPIN port). */
static void reply_add(struct replies *q, const struct sockaddr_in *to, uint32_t my_rank,
		      uint32_t dst_rank, uint64_t bits, uint64_t tag, const struct kv_rec *r)
{
	struct spin_msg_args a = {
		.op = SPIN_OP_PUT, .pt_index = KV_PT, .src_rank = my_rank, .dst_rank = dst_rank,
		.match_bits = bits, .hdr_data = tag, .msg_id = spin_next_msg_id(),
	};
	uint32_t i = q->n;

	a.job_key = q->job_key;
	spin_hdr_build((struct spin_hdr *)q->buf[i], &a, sizeof(*r), 0);
	memcpy(q->buf[i] + sizeof(struct spin_hdr), r, sizeof(*r));
	q->iov[i] = (struct iovec){ q->buf[i], PKT_MAX };
	q->to[i] = *to;
	q->msg[i].msg_hdr = (struct msghdr){ .msg_name = &q->to[i], .msg_namelen = sizeof(q->to[i]),
					     .msg_iov = &q->iov[i], .msg_iovlen = 1 };
	if (++q->n == BATCH)
		replies_flush(q);
}

static int udp_socket(uint32_t ip, uint16_t port)
{
	return sample_udp_socket(ip, port, 8 << 20, 0);
}

/* --------------------------------------------------------- spin server -- */

struct srv {
	struct spin_rt *rt;
	struct store st;
	struct cache c;
	uint8_t *win;
	size_t win_len;
	int get_me, set_me;
	struct spin_job job;
	struct sockaddr_in peer[MAX_CLIENTS + 1];
	struct replies q;
	uint64_t host_gets, sets, bad, other;
};

static int srv_event(void *ctx, const struct spin_event *ev)
{
	struct srv *s = ctx;
	uint64_t key = ev->match_bits & KV_KEY_MASK;
	struct kv_rec *r = NULL;

	if (ev->kind != SPIN_EV_PUT || ev->src_rank > MAX_CLIENTS || !s->peer[ev->src_rank].sin_port) {
		s->other++;
		return 0;
	}
	if ((int)ev->me == s->get_me && ev->fail == SPIN_FAIL_HANDLER) {
		/* the handler could not answer: the host does */
		r = store_find(&s->st, key, false);
		if (r)
			cache_put(&s->c, r, true);	/* the next GET hits */
		s->host_gets++;
	} else if ((int)ev->me == s->set_me && ev->fail == SPIN_FAIL_OK &&
		   ev->mlength == sizeof(struct kv_rec) && ev->start + sizeof(struct kv_rec) <= s->win_len) {
		struct kv_rec in;

		memcpy(&in, s->win + ev->start, sizeof(in));
		r = store_set(&s->st, &s->c, &in, key);
		s->sets++;
	} else {
		s->other++;
		return 0;
	}
	if (!r) {
		s->bad++;
		return 0;
	}
	reply_add(&s->q, &s->peer[ev->src_rank], s->job.rank, ev->src_rank, KV_OP_REPLY_HOST | key,
		  ev->hdr_data, r);
	return 0;
}

static int server(int argc, char **argv)
{
	const char *dev = argv[0];
	uint64_t nkeys = 10000, bits = 16, seconds = 0, end;
	struct spin_me_spec get = {
		.pt_index = KV_PT, .list = SPIN_LIST_PRIORITY, .match_bits = KV_OP_GET,
		.ignore_bits = KV_KEY_MASK, .match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
		.options = SPIN_ME_OP_PUT | SPIN_ME_EVENT_SUCCESS_DISABLE, .handler = "kvstore",
		.host_len = KV_SLOT, .host_off = UINT64_MAX, .hhost_off = UINT64_MAX,
	};
	struct spin_me_spec set = {
		.pt_index = KV_PT, .list = SPIN_LIST_PRIORITY, .match_bits = KV_OP_SET,
		.ignore_bits = KV_KEY_MASK, .match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
		.options = SPIN_ME_OP_PUT, .host_len = MAX_CLIENTS * MAX_WINDOW * KV_SLOT,
		.host_off = UINT64_MAX, .hhost_off = UINT64_MAX,
	};
	static struct srv s;
	struct kv_hpu hpu = { 0 };
	struct spin_me me;
	char obj[600];
	int rc;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "keys"))
			nkeys = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "slot-bits"))
			bits = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "seconds"))
			seconds = strtoull(argv[i + 1], NULL, 0);
		else {
			fprintf(stderr, "kvstore: unknown server argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (bits < 4 || bits > 24)
		return fprintf(stderr, "kvstore: slot-bits must be 4..24\n"), 2;
	if (spin_open(dev, &s.rt) < 0 || spin_job_load(&s.job, NULL) < 0) {
		fprintf(stderr, "kvstore: %s: %s\n", dev, spin_errmsg());
		return 1;
	}
	if (spin_job_peers(s.rt, &s.job) < 0) {
		fprintf(stderr, "kvstore: peers: %s\n", spin_errmsg());
		return 1;
	}
	for (uint32_t r = 0; r < s.job.nhosts && r <= MAX_CLIENTS; r++)
		s.peer[r] = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr = s.job.hosts[r].ip,
						  .sin_port = htons(SPIN_DEFAULT_PORT) };
	s.q.fd = udp_socket(INADDR_ANY, 0);
	if (s.q.fd < 0)
		return perror("kvstore: socket"), 1;
	if (spin_job_key_env(&s.q.job_key))
		return fprintf(stderr, "kvstore: %s\n", spin_errmsg()), 2;
	sample_obj_path("kvstore.bpf.o", obj, sizeof(obj));
	rc = spin_handler_load(s.rt, obj, "kvstore");
	if (rc < 0) {
		fprintf(stderr, "kvstore: %s\n%s", spin_errmsg(), spin_verifier_log());
		return 1;
	}
	if (spin_pt_alloc(s.rt, KV_PT) < 0) {
		fprintf(stderr, "kvstore: portal table: %s\n", spin_errmsg());
		rc = 1;
		goto out_unload;
	}
	hpu.shift = 64 - bits;
	hpu.slot_mask = (1ull << bits) - 1;
	get.hhost_len = (1ull << bits) * KV_SLOT;
	get.hpu_init = &hpu;
	get.hpu_init_len = sizeof(hpu);
	s.get_me = spin_me_append(s.rt, &get);
	s.set_me = s.get_me < 0 ? -1 : spin_me_append(s.rt, &set);
	if (s.set_me < 0) {
		fprintf(stderr, "kvstore: match entry: %s\n", spin_errmsg());
		rc = 1;
		goto out_me;
	}
	s.win = spin_host_mem(s.rt, &s.win_len);
	if (!s.win || spin_me_get(s.rt, s.get_me, &me) < 0 || me.hhost_off + me.hhost_len > s.win_len) {
		fprintf(stderr, "kvstore: host window: %s\n", spin_errmsg());
		rc = 1;
		goto out_me;
	}
	s.c = (struct cache){ (struct kv_rec *)(s.win + me.hhost_off), 64 - bits, (1ull << bits) - 1 };
	memset(s.c.slot, 0, me.hhost_len);
	store_init(&s.st, nkeys);
	store_load(&s.st, &s.c, nkeys);
	printf("kvstore server on %s: %llu keys, %llu slots of %d bytes, GET entry %d, SET entry %d: ready\n",
	       dev, (unsigned long long)nkeys, 1ull << bits, KV_SLOT, s.get_me, s.set_me);
	fflush(stdout);
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	end = seconds ? sample_now_ns() + seconds * 1000000000ull : 0;
	while (!stop && (!end || sample_now_ns() < end)) {
		int n = spin_events_poll(s.rt, srv_event, &s, 100);

		if (s.q.n)
			replies_flush(&s.q);
		if (n < 0 && n != -SPIN_ETIMEDOUT && n != -EINTR) {
			fprintf(stderr, "kvstore: events: %s\n", spin_errmsg());
			rc = 1;
			break;
		}
	}
	spin_hpu_read(s.rt, s.get_me, &hpu, sizeof(hpu));
	printf("server: handler hits %llu misses %llu retries %llu, host gets %llu sets %llu replies %llu bad %llu other %llu\n",
	       (unsigned long long)hpu.hits, (unsigned long long)hpu.misses,
	       (unsigned long long)hpu.retries, (unsigned long long)s.host_gets,
	       (unsigned long long)s.sets, (unsigned long long)s.q.sent,
	       (unsigned long long)s.bad, (unsigned long long)s.other);
	rc = s.bad ? 1 : rc;
out_me:
	if (s.set_me >= 0)
		spin_me_unlink(s.rt, s.set_me);
	if (s.get_me >= 0)
		spin_me_unlink(s.rt, s.get_me);
	spin_pt_free(s.rt, KV_PT);
out_unload:
	spin_handler_unload(s.rt, "kvstore");
	spin_close(s.rt);
	return rc;
}

/* ---------------------------------------------------------- UDP server -- */

static int udp_server(int argc, char **argv)
{
	struct in_addr ip;
	uint64_t nkeys = 10000, seconds = 0, end, gets = 0, sets = 0, bad = 0;
	uint16_t port = UDP_PORT;
	static struct replies q;
	static struct store st;
	static uint8_t in[BATCH][2048];
	struct iovec iov[BATCH];
	struct mmsghdr msg[BATCH];
	struct sockaddr_in from[BATCH];
	struct timeval tv = { 0, 100000 };
	int fd;

	if (inet_pton(AF_INET, argv[0], &ip) != 1)
		return fprintf(stderr, "kvstore: bad address '%s'\n", argv[0]), 2;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "keys"))
			nkeys = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "port"))
			port = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "seconds"))
			seconds = strtoull(argv[i + 1], NULL, 0);
		else {
			fprintf(stderr, "kvstore: unknown udp-server argument '%s'\n", argv[i]);
			return 2;
		}
	}
	fd = udp_socket(ip.s_addr, port);
	if (fd < 0)
		return perror("kvstore: udp socket"), 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	q.fd = fd;
	if (spin_job_key_env(&q.job_key))
		return fprintf(stderr, "kvstore: %s\n", spin_errmsg()), 2;
	store_init(&st, nkeys);
	store_load(&st, NULL, nkeys);
	printf("kvstore udp server on %s:%u: %llu keys: ready\n", argv[0], port,
	       (unsigned long long)nkeys);
	fflush(stdout);
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	end = seconds ? sample_now_ns() + seconds * 1000000000ull : 0;
	while (!stop && (!end || sample_now_ns() < end)) {
		int n;

		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ in[i], sizeof(in[i]) };
			msg[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
							  .msg_iov = &iov[i], .msg_iovlen = 1 };
		}
		n = recvmmsg(fd, msg, BATCH, MSG_WAITFORONE, NULL);
		for (int i = 0; i < n; i++) {
			struct spin_hdr h;
			int len = spin_hdr_parse(in[i], msg[i].msg_len, &h);
			uint64_t bits = be64toh(h.match_bits), key = bits & KV_KEY_MASK;
			struct kv_rec *r = NULL;

			if (len < 0) {
				bad++;
				continue;
			}
			if ((bits & KV_OP_MASK) == KV_OP_GET) {
				r = store_find(&st, key, false);
				gets++;
			} else if ((bits & KV_OP_MASK) == KV_OP_SET && len == sizeof(struct kv_rec)) {
				struct kv_rec rec;

				memcpy(&rec, in[i] + sizeof(struct spin_hdr), sizeof(rec));
				r = store_set(&st, NULL, &rec, key);
				sets++;
			}
			if (!r) {
				bad++;
				continue;
			}
			/* the server is rank 0: the clients put to it */
			reply_add(&q, &from[i], 0, ntohl(h.src_rank), KV_OP_REPLY_HOST | key,
				  be64toh(h.hdr_data), r);
		}
		if (q.n)
			replies_flush(&q);
	}
	printf("server: host gets %llu sets %llu replies %llu bad %llu\n", (unsigned long long)gets,
	       (unsigned long long)sets, (unsigned long long)q.sent, (unsigned long long)bad);
	close(fd);
	return bad ? 1 : 0;
}

/* -------------------------------------------------------------- client -- */

/* YCSB's Zipfian generator (Gray et al.), items 0..n-1, item 0 hottest;
 * the client scrambles the rank into an item as YCSB does. */
struct zipf {
	uint64_t n;
	double theta, alpha, zetan, eta, zeta2;
};

static void zipf_init(struct zipf *z, uint64_t n, double theta)
{
	z->n = n;
	z->theta = theta;
	z->zetan = 0;
	for (uint64_t i = 1; i <= n; i++)
		z->zetan += 1.0 / pow((double)i, theta);
	z->zeta2 = 1.0 + 1.0 / pow(2.0, theta);
	z->alpha = 1.0 / (1.0 - theta);
	z->eta = (1.0 - pow(2.0 / (double)n, 1.0 - theta)) / (1.0 - z->zeta2 / z->zetan);
}

static uint64_t rng_state;
static inline uint64_t rng(void) { return mix64(rng_state++); }
static inline double rng_unit(void) { return (double)(rng() >> 11) / 9007199254740992.0; }

static uint64_t zipf_next(struct zipf *z)
{
	double u = rng_unit(), uz = u * z->zetan;
	uint64_t r;

	if (uz < 1.0)
		r = 0;
	else if (uz < z->zeta2)
		r = 1;
	else
		r = (uint64_t)((double)z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
	return r < z->n ? r : z->n - 1;
}

struct req {
	bool busy, set;
	uint32_t seq;
	uint64_t idx, key, version, committed, t0;
};

struct cstats {
	uint64_t gets, sets, dev, host, lost, bad, nlat;
	uint64_t *lat;
	uint64_t cap;
};

/* The client's view of its requests, whatever carries them. */
struct cli {
	uint32_t rank, nclients, window;
	uint64_t epoch, now;
	uint64_t *committed, *latest;
	struct req req[MAX_WINDOW];
	struct cstats cs;
	uint32_t busy;
};

/* One reply: h as received (network order), len payload bytes (< 0: not a
 * sPIN packet).  Checks it against the request it answers. */
static void cli_reply(struct cli *c, const struct spin_hdr *h, const void *payload, int len)
{
	uint64_t tag = be64toh(h->hdr_data), bits = be64toh(h->match_bits);
	uint32_t w = tag >> 32;
	struct kv_rec r;
	struct req *q;
	bool ok;

	if (len != sizeof(r) || w >= c->window || !c->req[w].busy || c->req[w].seq != (uint32_t)tag) {
		/* a late reply of a request given up on, or garbage */
		if (len < 0 || w >= c->window)
			c->cs.bad++;
		return;
	}
	q = &c->req[w];
	memcpy(&r, payload, sizeof(r));
	ok = (bits & KV_KEY_MASK) == q->key && r.key == q->key && value_ok(&r);
	if (q->set) {
		ok = ok && r.version == q->version;
		if (ok && r.version > c->committed[q->idx])
			c->committed[q->idx] = r.version;
	} else if (q->idx % c->nclients == c->rank - 1) {
		/* our key: at least what was acknowledged when we asked, at
		 * most what we have sent */
		if (r.version >> 32 == c->epoch)
			ok = ok && r.version >= q->committed && r.version <= c->latest[q->idx] &&
			     (r.version & 0xff) == c->rank;
		else	/* an earlier client's: only before our first acked SET */
			ok = ok && !q->committed && (r.version == 0 || (r.version & 0xff) == c->rank);
	} else {
		ok = ok && (r.version == 0 || (r.version & 0xff) == q->idx % c->nclients + 1);
	}
	if (!ok) {
		if (c->cs.bad < 5)
			fprintf(stderr, "kvstore: client %u: bad %s reply for item %llu: key %llx/%llx version %llx (committed %llx latest %llx)\n",
				c->rank, q->set ? "SET" : "GET", (unsigned long long)q->idx,
				(unsigned long long)r.key, (unsigned long long)q->key,
				(unsigned long long)r.version, (unsigned long long)q->committed,
				(unsigned long long)c->latest[q->idx]);
		c->cs.bad++;
	}
	if ((bits & KV_OP_MASK) == KV_OP_REPLY_DEV)
		c->cs.dev++;
	else
		c->cs.host++;
	if (q->set)
		c->cs.sets++;
	else
		c->cs.gets++;
	if (c->cs.nlat < c->cs.cap)
		c->cs.lat[c->cs.nlat++] = c->now - q->t0;
	q->busy = false;
	c->busy--;
}

/*
 * How requests leave and replies arrive.
 *   udp  a kernel UDP socket bound to the sPIN port: sendmmsg, recvmmsg.
 *   xsk  libspin's AF_XDP path on DEV, where the spin runtime is attached
 *        with this client's rank: requests are posted to rank 0 of
 *        $SPIN_HOSTFILE (spin_xsk_post, one kick per batch), replies reach
 *        the socket through a match entry with SPIN_ME_XSK.  The cheap
 *        load generator: no socket layer on either path.
 */
struct cli_net {
	int fd;
	struct sockaddr_in dst;
	struct iovec oiov[BATCH], iiov[BATCH];
	struct mmsghdr omsg[BATCH], imsg[BATCH];
	uint8_t out[BATCH][PKT_MAX], in[BATCH][2048];
	uint32_t nb;
	struct spin_rt *rt;
	struct spin_xsk *x;
	int me;
	bool pt;	/* we allocated KV_PT (and free it) */
};

static int net_open_xsk(struct cli_net *n, const char *dev, uint16_t port, uint32_t rank)
{
	struct spin_me_spec s = {
		.pt_index = KV_PT, .list = SPIN_LIST_PRIORITY, .ignore_bits = ~0ull,
		.match_rank = SPIN_RANK_ANY, .match_pid = SPIN_PID_ANY,
		.options = SPIN_ME_OP_PUT | SPIN_ME_XSK,
	};
	struct spin_job job;

	n->me = -1;
	if (spin_open(dev, &n->rt) < 0 || spin_job_load(&job, NULL) < 0)
		return -1;
	if (job.nhosts < 1 || job.hosts[0].ip.s_addr != n->dst.sin_addr.s_addr || job.rank != rank) {
		spin_job_free(&job);
		fprintf(stderr, "kvstore: client xsk: the server must be rank 0 of the hostfile and "
			"the client's rank (%u) its job rank ($SPIN_RANK, %u)\n", rank, job.rank);
		return -2;
	}
	if (spin_job_peers(n->rt, &job) < 0) {
		spin_job_free(&job);
		return -1;
	}
	if (port && port != SPIN_DEFAULT_PORT) {
		/* the UDP server listens on its own port */
		struct spin_peer_spec ps = { .rank = 0, .ip = job.hosts[0].ip, .port = port };

		if (job.hosts[0].has_mac)
			memcpy(ps.mac, job.hosts[0].mac, 6);
		if (spin_peer_add(n->rt, &ps) < 0) {
			spin_job_free(&job);
			return -1;
		}
	}
	spin_job_free(&job);
	if (spin_pt_alloc(n->rt, KV_PT) < 0)
		return -1;
	n->pt = true;
	n->me = spin_me_append(n->rt, &s);
	if (n->me < 0 || spin_xsk_open(n->rt, NULL, &n->x) < 0)
		return -1;
	return 0;
}

static void net_close(struct cli_net *n)
{
	if (n->x)
		spin_xsk_close(n->x);
	if (n->rt) {
		if (n->me >= 0)
			spin_me_unlink(n->rt, n->me);
		if (n->pt)
			spin_pt_free(n->rt, KV_PT);
		spin_close(n->rt);
	}
	if (n->fd >= 0)
		close(n->fd);
}

/* Queue one request (args and payload) for net_flush. */
static int net_add(struct cli_net *n, const struct spin_msg_args *a, const void *pay, uint32_t len)
{
	if (n->x)
		return spin_xsk_post(n->x, 0, a, pay, len, NULL);
	memcpy(n->out[n->nb] + sizeof(struct spin_hdr), pay, len);
	spin_hdr_build((struct spin_hdr *)n->out[n->nb], a, len, 0);
	n->oiov[n->nb].iov_len = sizeof(struct spin_hdr) + len;
	n->nb++;
	return 0;
}

static int net_flush(struct cli_net *n)
{
	if (n->x)
		return spin_xsk_flush(n->x);
	for (uint32_t done = 0; done < n->nb; ) {
		int k = sendmmsg(n->fd, n->omsg + done, n->nb - done, 0);

		if (k < 0 && errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
			return perror("kvstore: sendmmsg"), -1;
		done += k > 0 ? k : 0;
	}
	n->nb = 0;
	return 0;
}

static int xsk_reply(void *ctx, const struct spin_hdr *h, const void *payload, uint32_t len)
{
	cli_reply(ctx, h, payload, (int)len);
	return 0;
}

/* Wait up to 20 ms for replies and check each of them. */
static int net_recv(struct cli_net *n, struct cli *c)
{
	int k;

	if (n->x) {
		struct pollfd p = { .fd = spin_xsk_fd(n->x), .events = POLLIN };

		c->now = sample_now_ns();	/* replies already waiting */
		k = spin_xsk_recv(n->x, xsk_reply, c, 0);
		if (!k) {
			(void)poll(&p, 1, 20);	/* EINTR: look again */
			c->now = sample_now_ns();
			k = spin_xsk_recv(n->x, xsk_reply, c, 0);
		}
		if (k < 0)
			fprintf(stderr, "kvstore: receive: %s\n", spin_errmsg());
		return k;
	}
	for (int i = 0; i < BATCH; i++) {
		n->iiov[i] = (struct iovec){ n->in[i], sizeof(n->in[i]) };
		n->imsg[i].msg_hdr = (struct msghdr){ .msg_iov = &n->iiov[i], .msg_iovlen = 1 };
	}
	k = recvmmsg(n->fd, n->imsg, BATCH, MSG_WAITFORONE, NULL);
	c->now = sample_now_ns();
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;	/* SO_RCVTIMEO: nothing for 20 ms */
	if (k < 0)
		return perror("kvstore: recvmmsg"), -1;
	for (int i = 0; i < k; i++) {
		struct spin_hdr h;
		int len = spin_hdr_parse(n->in[i], n->imsg[i].msg_len, &h);

		cli_reply(c, &h, n->in[i] + sizeof(struct spin_hdr), len);
	}
	return k;
}

static int client(int argc, char **argv)
{
	static struct cli_net net = { .fd = -1 };
	static struct cli c = { .rank = 1, .nclients = 1, .window = 1 };
	uint32_t get_pct = 95, timeout_ms = 1000, seq = 0;
	uint64_t nkeys = 10000, count = 0, sent = 0, seed = 1;
	double seconds = 2, warmup = 0.5, theta = 0.99;
	bool hot = false, measuring;
	uint64_t *nset, t_start, t_meas = 0, t_end = 0, t_stop;
	const char *xdev = NULL;
	struct timeval tv = { 0, 20000 };
	struct timespec ts;
	uint16_t port = 0;
	struct zipf z;
	int rc;

	net.dst = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(SPIN_DEFAULT_PORT) };
	if (inet_pton(AF_INET, argv[0], &net.dst.sin_addr) != 1)
		return fprintf(stderr, "kvstore: bad address '%s'\n", argv[0]), 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "hot")) {
			hot = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "kvstore: client argument '%s' needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "port"))
			port = strtoul(v, NULL, 0);
		else if (!strcmp(a, "rank"))
			c.rank = strtoul(v, NULL, 0);
		else if (!strcmp(a, "clients"))
			c.nclients = strtoul(v, NULL, 0);
		else if (!strcmp(a, "keys"))
			nkeys = strtoull(v, NULL, 0);
		else if (!strcmp(a, "get-pct"))
			get_pct = strtoul(v, NULL, 0);
		else if (!strcmp(a, "window"))
			c.window = strtoul(v, NULL, 0);
		else if (!strcmp(a, "seconds"))
			seconds = atof(v);
		else if (!strcmp(a, "warmup"))
			warmup = atof(v);
		else if (!strcmp(a, "count"))
			count = strtoull(v, NULL, 0);
		else if (!strcmp(a, "theta"))
			theta = atof(v);
		else if (!strcmp(a, "seed"))
			seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "timeout-ms"))
			timeout_ms = strtoul(v, NULL, 0);
		else if (!strcmp(a, "xsk"))
			xdev = v;
		else {
			fprintf(stderr, "kvstore: unknown client argument '%s'\n", a);
			return 2;
		}
	}
	if (!c.window || c.window > MAX_WINDOW || !c.rank || c.rank > c.nclients ||
	    c.nclients > MAX_CLIENTS || get_pct > 100 || !nkeys || theta <= 0 || theta >= 1)
		return fprintf(stderr, "kvstore: bad client arguments\n"), 2;
	if (port)
		net.dst.sin_port = htons(port);
	if (xdev) {
		rc = net_open_xsk(&net, xdev, port, c.rank);
		if (rc < 0) {
			if (rc == -1)
				fprintf(stderr, "kvstore: client on %s: %s\n", xdev, spin_errmsg());
			net_close(&net);
			return 1;
		}
	} else {
		net.fd = udp_socket(INADDR_ANY, SPIN_DEFAULT_PORT);
		if (net.fd < 0)
			return perror("kvstore: client socket"), 1;
		setsockopt(net.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		for (int i = 0; i < BATCH; i++) {
			net.oiov[i] = (struct iovec){ net.out[i], 0 };
			net.omsg[i].msg_hdr = (struct msghdr){ .msg_name = &net.dst, .msg_namelen = sizeof(net.dst),
							       .msg_iov = &net.oiov[i], .msg_iovlen = 1 };
		}
	}
	/* versions of this run: (epoch << 32) | (n-th SET of the key << 8) |
	 * rank, the epoch in ms, so a later run's versions are larger */
	clock_gettime(CLOCK_REALTIME, &ts);
	c.epoch = ((uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000) & 0xffffff;
	rng_state = seed * 0x1000193ull + c.rank;
	zipf_init(&z, nkeys, theta);
	c.committed = calloc(nkeys, 8);
	c.latest = calloc(nkeys, 8);
	nset = calloc(nkeys, 8);
	c.cs.cap = count ? count + 16 : (uint64_t)(seconds * 4e6) + 16;
	c.cs.lat = malloc(c.cs.cap * 8);
	if (!c.committed || !c.latest || !nset || !c.cs.lat)
		return fprintf(stderr, "kvstore: out of memory\n"), 1;
	t_start = sample_now_ns();
	measuring = warmup <= 0;
	if (measuring)
		t_meas = t_start;
	t_stop = t_start + (uint64_t)((warmup + seconds) * 1e9);
	for (;;) {
		uint64_t now = sample_now_ns();
		bool sending = count ? sent < count : now < t_stop;
		uint32_t nb = 0;

		if (!measuring && now >= t_start + (uint64_t)(warmup * 1e9)) {
			measuring = true;
			t_meas = now;
			memset(&c.cs, 0, offsetof(struct cstats, lat));
		}
		if (!sending && !c.busy)
			break;
		/* fill the window */
		for (uint32_t w = 0; sending && w < c.window && nb < BATCH; w++) {
			struct req *q = &c.req[w];
			struct spin_msg_args a = {
				.op = SPIN_OP_PUT, .pt_index = KV_PT, .src_rank = c.rank, .dst_rank = 0,
				.msg_id = spin_next_msg_id(),
			};
			struct kv_rec rec;
			uint32_t len = 0;

			if (q->busy || (count && sent >= count))
				continue;
			q->idx = hot ? 0 : (mix64(zipf_next(&z)) % nkeys);
			q->set = rng() % 100 >= get_pct;
			if (q->set && q->idx % c.nclients != c.rank - 1) {
				/* SET only our own keys: the next one of ours */
				q->idx = q->idx - q->idx % c.nclients + c.rank - 1;
				if (q->idx >= nkeys)
					q->idx = c.rank - 1;
				if (q->idx >= nkeys)
					q->set = false, q->idx = 0;
			}
			q->key = key_of(q->idx);
			q->seq = ++seq;
			q->committed = c.committed[q->idx];
			q->t0 = now;
			a.hdr_data = (uint64_t)w << 32 | q->seq;
			if (q->set) {
				q->version = c.epoch << 32 | (++nset[q->idx] & 0xffffff) << 8 | c.rank;
				c.latest[q->idx] = q->version;
				rec = (struct kv_rec){ .key = q->key, .version = q->version, .vlen = KV_VAL_LEN };
				value_fill(rec.value, q->key, q->version);
				a.match_bits = KV_OP_SET | q->key;
				a.remote_off = ((uint64_t)(c.rank - 1) * MAX_WINDOW + w) * KV_SLOT;
				len = sizeof(rec);
			} else {
				a.match_bits = KV_OP_GET | q->key;	/* no payload */
			}
			if (net_add(&net, &a, &rec, len) < 0) {
				fprintf(stderr, "kvstore: send: %s\n", spin_errmsg());
				net_close(&net);
				return 1;
			}
			q->busy = true;
			c.busy++;
			sent++;
			nb++;
		}
		if (nb && net_flush(&net) < 0) {
			if (net.x)
				fprintf(stderr, "kvstore: send: %s\n", spin_errmsg());
			net_close(&net);
			return 1;
		}
		if (net_recv(&net, &c) < 0) {
			net_close(&net);
			return 1;
		}
		now = c.now = sample_now_ns();
		for (uint32_t w = 0; w < c.window; w++)
			if (c.req[w].busy && now - c.req[w].t0 > timeout_ms * 1000000ull) {
				c.req[w].busy = false;
				c.busy--;
				c.cs.lost++;
			}
		if (!t_end && !(count ? sent < count : now < t_stop))
			t_end = now;
	}
	{
		double el = (double)((t_end ? t_end : sample_now_ns()) - t_meas) / 1e9;
		uint64_t ops = c.cs.gets + c.cs.sets, nl = c.cs.nlat;
		uint64_t p50 = sample_percentile(c.cs.lat, nl, 50), p99 = sample_percentile(c.cs.lat, nl, 99);

		printf("client %u: ops %llu gets %llu sets %llu dev %llu host %llu lost %llu bad %llu "
		       "seconds %.3f rps %.0f get_rps %.0f p50_us %.2f p99_us %.2f\n",
		       c.rank, (unsigned long long)ops, (unsigned long long)c.cs.gets,
		       (unsigned long long)c.cs.sets, (unsigned long long)c.cs.dev,
		       (unsigned long long)c.cs.host, (unsigned long long)c.cs.lost,
		       (unsigned long long)c.cs.bad, el, el > 0 ? ops / el : 0, el > 0 ? c.cs.gets / el : 0,
		       p50 / 1e3, p99 / 1e3);
	}
	if (net.x) {
		struct spin_xsk_stats st;

		if (!spin_xsk_stats(net.x, &st))
			printf("client %u: xsk tx_packets %llu tx_kicks %llu rx_packets %llu rx_invalid %llu k_rx_dropped %llu\n",
			       c.rank, (unsigned long long)st.tx_packets, (unsigned long long)st.tx_kicks,
			       (unsigned long long)st.rx_packets, (unsigned long long)st.rx_invalid,
			       (unsigned long long)st.k_rx_dropped);
	}
	net_close(&net);
	return c.cs.bad ? 1 : c.cs.lost ? 4 : 0;	/* 4: replies lost, none wrong */
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return server(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "udp-server"))
		return udp_server(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "client"))
		return client(argc - 2, argv + 2);
	fprintf(stderr,
		"usage: kvstore server DEV [keys N] [slot-bits B] [seconds S]\n"
		"       kvstore udp-server IP [keys N] [port P] [seconds S]\n"
		"       kvstore client SERVER_IP [port P] [rank R] [clients C] [keys N] [get-pct G]\n"
		"                      [window W] [seconds S] [warmup S] [count N] [theta T] [hot]\n"
		"                      [seed X] [timeout-ms T] [xsk DEV]\n");
	return 2;
}
