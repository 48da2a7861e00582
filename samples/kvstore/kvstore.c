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
 *       [hot] [seed X] [timeout-ms T]
 *       YCSB-like load: Zipf(theta) keys, G% GETs, up to W outstanding.
 *       Client R of C only SETs the keys i with i % C == R - 1, so it knows
 *       what each of them must hold; every reply is checked: key, value
 *       bytes = f(key, version), the writer in the version, and for its own
 *       keys the version against the SETs it sent and had acknowledged.
 *       Prints one line of results; exit 0 only if every reply was right.
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
#include "../sample.h"
#include "kvstore.h"

#define BATCH		64
#define MAX_WINDOW	64
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
			reply_add(&q, &from[i], ntohl(h.dst_rank), ntohl(h.src_rank), KV_OP_REPLY_HOST | key,
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

static int client(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(SPIN_DEFAULT_PORT) };
	uint32_t rank = 1, nclients = 1, window = 1, get_pct = 95, timeout_ms = 1000;
	uint64_t nkeys = 10000, count = 0, sent = 0, seed = 1;
	double seconds = 2, warmup = 0.5, theta = 0.99;
	bool hot = false, measuring;
	static struct req req[MAX_WINDOW];
	static uint8_t out[BATCH][PKT_MAX], in[BATCH][2048];
	struct iovec oiov[BATCH], iiov[BATCH];
	struct mmsghdr omsg[BATCH], imsg[BATCH];
	uint64_t *committed, *latest, *nset, t_start, t_meas = 0, t_end = 0, t_stop;
	struct cstats cs = { 0 };
	uint32_t busy = 0, seq = 0;
	struct timeval tv = { 0, 20000 };
	struct zipf z;
	uint64_t epoch;
	struct timespec ts;
	int fd;

	if (inet_pton(AF_INET, argv[0], &dst.sin_addr) != 1)
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
			dst.sin_port = htons(strtoul(v, NULL, 0));
		else if (!strcmp(a, "rank"))
			rank = strtoul(v, NULL, 0);
		else if (!strcmp(a, "clients"))
			nclients = strtoul(v, NULL, 0);
		else if (!strcmp(a, "keys"))
			nkeys = strtoull(v, NULL, 0);
		else if (!strcmp(a, "get-pct"))
			get_pct = strtoul(v, NULL, 0);
		else if (!strcmp(a, "window"))
			window = strtoul(v, NULL, 0);
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
		else {
			fprintf(stderr, "kvstore: unknown client argument '%s'\n", a);
			return 2;
		}
	}
	if (!window || window > MAX_WINDOW || !rank || rank > nclients || nclients > MAX_CLIENTS ||
	    get_pct > 100 || !nkeys || theta <= 0 || theta >= 1)
		return fprintf(stderr, "kvstore: bad client arguments\n"), 2;
	fd = udp_socket(INADDR_ANY, SPIN_DEFAULT_PORT);
	if (fd < 0)
		return perror("kvstore: client socket"), 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* versions of this run: (epoch << 32) | (n-th SET of the key << 8) |
	 * rank, the epoch in ms, so a later run's versions are larger */
	clock_gettime(CLOCK_REALTIME, &ts);
	epoch = ((uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000) & 0xffffff;
	rng_state = seed * 0x1000193ull + rank;
	zipf_init(&z, nkeys, theta);
	committed = calloc(nkeys, 8);
	latest = calloc(nkeys, 8);
	nset = calloc(nkeys, 8);
	cs.cap = count ? count + 16 : (uint64_t)(seconds * 2e6) + 16;
	cs.lat = malloc(cs.cap * 8);
	if (!committed || !latest || !nset || !cs.lat)
		return fprintf(stderr, "kvstore: out of memory\n"), 1;
	for (int i = 0; i < BATCH; i++) {
		oiov[i] = (struct iovec){ out[i], 0 };
		omsg[i].msg_hdr = (struct msghdr){ .msg_name = &dst, .msg_namelen = sizeof(dst),
						   .msg_iov = &oiov[i], .msg_iovlen = 1 };
	}
	t_start = sample_now_ns();
	measuring = warmup <= 0;
	if (measuring)
		t_meas = t_start;
	t_stop = t_start + (uint64_t)((warmup + seconds) * 1e9);
	for (;;) {
		uint64_t now = sample_now_ns();
		bool sending = count ? sent < count : now < t_stop;
		uint32_t nb = 0;
		int n;

		if (!measuring && now >= t_start + (uint64_t)(warmup * 1e9)) {
			measuring = true;
			t_meas = now;
			memset(&cs, 0, offsetof(struct cstats, lat));
		}
		if (!sending && !busy)
			break;
		/* fill the window */
		for (uint32_t w = 0; sending && w < window && nb < BATCH; w++) {
			struct req *q = &req[w];
			struct spin_msg_args a = {
				.op = SPIN_OP_PUT, .pt_index = KV_PT, .src_rank = rank, .dst_rank = 0,
				.msg_id = spin_next_msg_id(),
			};
			struct kv_rec rec;
			uint32_t len = 0;

			if (q->busy || (count && sent >= count))
				continue;
			q->idx = hot ? 0 : (mix64(zipf_next(&z)) % nkeys);
			q->set = rng() % 100 >= get_pct;
			if (q->set && q->idx % nclients != rank - 1) {
				/* SET only our own keys: the next one of ours */
				q->idx = q->idx - q->idx % nclients + rank - 1;
				if (q->idx >= nkeys)
					q->idx = rank - 1;
				if (q->idx >= nkeys)
					q->set = false, q->idx = 0;
			}
			q->key = key_of(q->idx);
			q->seq = ++seq;
			q->committed = committed[q->idx];
			a.hdr_data = (uint64_t)w << 32 | q->seq;
			if (q->set) {
				q->version = epoch << 32 | (++nset[q->idx] & 0xffffff) << 8 | rank;
				latest[q->idx] = q->version;
				rec = (struct kv_rec){ .key = q->key, .version = q->version, .vlen = KV_VAL_LEN };
				value_fill(rec.value, q->key, q->version);
				a.match_bits = KV_OP_SET | q->key;
				a.remote_off = ((uint64_t)(rank - 1) * MAX_WINDOW + w) * KV_SLOT;
				len = sizeof(rec);
				memcpy(out[nb] + sizeof(struct spin_hdr), &rec, len);
			} else {
				a.match_bits = KV_OP_GET | q->key;	/* no payload */
				len = 0;
			}
			spin_hdr_build((struct spin_hdr *)out[nb], &a, len, 0);
			oiov[nb].iov_len = sizeof(struct spin_hdr) + len;
			q->busy = true;
			busy++;
			sent++;
			nb++;
		}
		if (nb) {
			uint64_t t0 = sample_now_ns();

			for (uint32_t w = 0, k = 0; w < window && k < nb; w++)
				if (req[w].busy && req[w].seq > seq - nb)
					req[w].t0 = t0, k++;
			for (uint32_t done = 0; done < nb; ) {
				n = sendmmsg(fd, omsg + done, nb - done, 0);
				if (n < 0 && errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
					return perror("kvstore: sendmmsg"), 1;
				done += n > 0 ? n : 0;
			}
		}
		for (int i = 0; i < BATCH; i++) {
			iiov[i] = (struct iovec){ in[i], sizeof(in[i]) };
			imsg[i].msg_hdr = (struct msghdr){ .msg_iov = &iiov[i], .msg_iovlen = 1 };
		}
		n = recvmmsg(fd, imsg, BATCH, MSG_WAITFORONE, NULL);
		now = sample_now_ns();
		for (int i = 0; i < n; i++) {
			struct spin_hdr h;
			int len = spin_hdr_parse(in[i], imsg[i].msg_len, &h);
			uint64_t tag = be64toh(h.hdr_data), bits = be64toh(h.match_bits);
			uint32_t w = tag >> 32;
			struct kv_rec r;
			struct req *q;
			bool ok;

			if (len != sizeof(r) || w >= window || !req[w].busy || req[w].seq != (uint32_t)tag) {
				/* a late reply of a request given up on, or garbage */
				if (len < 0 || w >= window)
					cs.bad++;
				continue;
			}
			q = &req[w];
			memcpy(&r, in[i] + sizeof(struct spin_hdr), sizeof(r));
			ok = (bits & KV_KEY_MASK) == q->key && r.key == q->key && value_ok(&r);
			if (q->set) {
				ok = ok && r.version == q->version;
				if (ok && r.version > committed[q->idx])
					committed[q->idx] = r.version;
			} else if (q->idx % nclients == rank - 1) {
				/* our key: at least what was acknowledged when we
				 * asked, at most what we have sent */
				if (r.version >> 32 == epoch)
					ok = ok && r.version >= q->committed && r.version <= latest[q->idx] &&
					     (r.version & 0xff) == rank;
				else	/* an earlier client's: only before our first acked SET */
					ok = ok && !q->committed && (r.version == 0 || (r.version & 0xff) == rank);
			} else {
				ok = ok && (r.version == 0 || (r.version & 0xff) == q->idx % nclients + 1);
			}
			if (!ok) {
				if (cs.bad < 5)
					fprintf(stderr, "kvstore: client %u: bad %s reply for item %llu: key %llx/%llx version %llx (committed %llx latest %llx)\n",
						rank, q->set ? "SET" : "GET", (unsigned long long)q->idx,
						(unsigned long long)r.key, (unsigned long long)q->key,
						(unsigned long long)r.version, (unsigned long long)q->committed,
						(unsigned long long)latest[q->idx]);
				cs.bad++;
			}
			if ((bits & KV_OP_MASK) == KV_OP_REPLY_DEV)
				cs.dev++;
			else
				cs.host++;
			if (q->set)
				cs.sets++;
			else
				cs.gets++;
			if (cs.nlat < cs.cap)
				cs.lat[cs.nlat++] = now - q->t0;
			q->busy = false;
			busy--;
		}
		for (uint32_t w = 0; w < window; w++)
			if (req[w].busy && now - req[w].t0 > timeout_ms * 1000000ull) {
				req[w].busy = false;
				busy--;
				cs.lost++;
			}
		if (!t_end && !(count ? sent < count : now < t_stop))
			t_end = now;
	}
	{
		double el = (double)((t_end ? t_end : sample_now_ns()) - t_meas) / 1e9;
		uint64_t ops = cs.gets + cs.sets, nl = cs.nlat;
		uint64_t p50 = sample_percentile(cs.lat, nl, 50), p99 = sample_percentile(cs.lat, nl, 99);

		printf("client %u: ops %llu gets %llu sets %llu dev %llu host %llu lost %llu bad %llu "
		       "seconds %.3f rps %.0f get_rps %.0f p50_us %.2f p99_us %.2f\n",
		       rank, (unsigned long long)ops, (unsigned long long)cs.gets,
		       (unsigned long long)cs.sets, (unsigned long long)cs.dev,
		       (unsigned long long)cs.host, (unsigned long long)cs.lost,
		       (unsigned long long)cs.bad, el, el > 0 ? ops / el : 0, el > 0 ? cs.gets / el : 0,
		       p50 / 1e3, p99 / 1e3);
	}
	close(fd);
	return cs.bad ? 1 : cs.lost ? 4 : 0;	/* 4: replies lost, none wrong */
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
		"                      [seed X] [timeout-ms T]\n");
	return 2;
}
