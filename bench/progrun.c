// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/progrun - per-packet cost of an XDP program with BPF_PROG_RUN.
 *
 * Builds one sPIN ping frame (Ethernet/IPv4/UDP/sPIN + --size payload
 * bytes) and times the program on it with bpf_prog_test_run_opts, in one
 * of two modes:
 *
 *   repeat (default)  the kernel runs the program --repeat times on the
 *                     frame and reports the mean ns per run;
 *   --fresh N         N calls with repeat = 1, each on a fresh copy of the
 *                     ping with a new message id; the interquartile mean
 *                     of the N per-call times is taken (the kernel's clock
 *                     steps by ~10 ns on this VM).  Each call's time includes
 *                     the kernel's timer reads (tens of ns), so compare
 *                     programs measured in the same mode only.
 *
 * This is done --runs times and the median over runs (min, max) printed.
 *
 * The program comes from an object file it loads itself
 *     progrun --obj bench/reflector.bpf.o --prog xdp_reflector
 * or from a pinned program (the spin runtime's entry after `spinctl attach`)
 *     progrun --pinned /sys/fs/bpf/spin/<...>/prog_rx
 *
 * Notes on what the number means:
 *  - a non-live test run executes the program and returns its action; an
 *    XDP_TX frame is not transmitted, so this is the program's CPU cost plus
 *    the fixed cost of the test-run loop (measure selftests/progs/xdp_pass.bpf.o for
 *    that floor);
 *  - the kernel runs the repetitions on the same buffer, so a program that
 *    rewrites the frame in place sees its own output next time.  A ping-pong
 *    reflector turns the ping into a pong that is again a valid ping (both
 *    UDP ports are the sPIN port by default), so every repetition does the
 *    full work.  progrun checks this: it prints the action of a single run
 *    and of the last repetition and warns when they differ.  A program that
 *    does not accept its own output as input (the spin runtime drops it)
 *    must be measured with --fresh.
 *
 * Options: --size S (64) --repeat N (1000000) --runs K (11)
 *          --src-ip/--dst-ip/--src-mac/--dst-mac (the frame's addresses)
 *          --port N (both UDP ports, default 7717) --sport N
 *          --src-rank R (0) --dst-rank R (1) --pt N (0) --match-bits B (0)
 *          --job-key K (0: none)
 *          --auth-key HEX|FILE: tag the frames with this auth key
 *          --flags F: the sPIN header's flags (SPIN_F_*; 0x8: reliable)
 *          --fresh N: see above
 *          --csv FILE --label NAME: append
 *             "label,size,mode,n,runs,ns_median,ns_min,ns_max,action"
 *             (mode "repeat" or "fresh", n = repetitions or calls per run)
 *          --quiet: only the result line
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <spin/spin.h>

#define FRAME_MAX	(SPIN_PAY_OFF + 65536)

static const char *xdp_action_name(unsigned int a)
{
	static const char *const n[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS",
					 "XDP_TX", "XDP_REDIRECT" };

	return a < sizeof(n) / sizeof(n[0]) ? n[a] : "XDP_?";
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = b[i];
	}
	return 0;
}

static uint16_t ip_csum(const void *p, size_t len)
{
	const uint16_t *w = p;
	uint32_t sum = 0;

	while (len > 1) {
		sum += *w++;
		len -= 2;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

struct frame_spec {
	uint8_t src_mac[6], dst_mac[6];
	struct in_addr src_ip, dst_ip;
	uint16_t sport, dport;
	struct spin_msg_args args;
	uint32_t size;
};

static size_t build_frame(uint8_t *f, const struct frame_spec *fs)
{
	struct ethhdr *eth = (void *)f;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct spin_hdr *sh = (void *)(udp + 1);
	uint8_t *pay = (uint8_t *)(sh + 1);
	uint32_t i;

	memset(f, 0, SPIN_PAY_OFF);
	memcpy(eth->h_dest, fs->dst_mac, 6);
	memcpy(eth->h_source, fs->src_mac, 6);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + sizeof(*sh) + fs->size);
	ip->frag_off = htons(0x4000);	/* DF */
	ip->saddr = fs->src_ip.s_addr;
	ip->daddr = fs->dst_ip.s_addr;
	ip->check = ip_csum(ip, sizeof(*ip));
	udp->source = htons(fs->sport);
	udp->dest = htons(fs->dport);
	udp->len = htons(sizeof(*udp) + sizeof(*sh) + fs->size);
	udp->check = 0;
	spin_hdr_build(sh, &fs->args, fs->size, 0);
	for (i = 0; i < fs->size; i++)
		pay[i] = (uint8_t)(i * 7 + 1);
	return SPIN_PAY_OFF + fs->size;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Interquartile mean of a sorted array: robust like the median, but finer
 * than the kernel's per-call clock steps. */
static double iqm(const uint32_t *v, size_t n)
{
	size_t lo = n / 4, hi = n - n / 4, i;
	double sum = 0;

	if (hi <= lo)
		return n ? v[n / 2] : 0;
	for (i = lo; i < hi; i++)
		sum += v[i];
	return sum / (hi - lo);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: progrun (--obj FILE --prog NAME | --pinned PATH) [options]\n"
		"  --obj FILE --prog NAME  load NAME from the BPF object FILE\n"
		"  --pinned PATH           use the pinned program at PATH\n"
		"  --size S                payload bytes of the ping (default 64)\n"
		"  --repeat N              repetitions per run (default 1000000)\n"
		"  --runs K                runs, median reported (default 11)\n"
		"  --src-ip IP --dst-ip IP frame addresses (default 10.77.0.1 -> 10.77.0.2)\n"
		"  --src-mac M --dst-mac M (default 02:00:00:00:00:01 -> 02:00:00:00:00:02)\n"
		"  --port N                UDP destination port (default %d)\n"
		"  --sport N               UDP source port (default: --port)\n"
		"  --src-rank R --dst-rank R --pt N --match-bits B --job-key K  sPIN header\n"
		"  --auth-key HEX|FILE  tag the frames (wire.h, \"Authenticator\")\n"
		"  --flags F               the sPIN header's flags (SPIN_F_*, e.g. 0x8 reliable)\n"
		"  --fresh N               N single runs on fresh pings per run instead of --repeat\n"
		"  --csv FILE --label NAME append label,size,mode,n,runs,ns_median,ns_min,ns_max,action\n"
		"  --quiet                 only the result line\n", SPIN_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "obj", required_argument, NULL, 'o' },
		{ "prog", required_argument, NULL, 'P' },
		{ "pinned", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'k' },
		{ "src-ip", required_argument, NULL, 1 },
		{ "dst-ip", required_argument, NULL, 2 },
		{ "src-mac", required_argument, NULL, 3 },
		{ "dst-mac", required_argument, NULL, 4 },
		{ "port", required_argument, NULL, 'p' },
		{ "sport", required_argument, NULL, 5 },
		{ "src-rank", required_argument, NULL, 6 },
		{ "dst-rank", required_argument, NULL, 7 },
		{ "pt", required_argument, NULL, 8 },
		{ "match-bits", required_argument, NULL, 9 },
		{ "job-key", required_argument, NULL, 10 },
		{ "auth-key", required_argument, NULL, 11 },
		{ "flags", required_argument, NULL, 12 },
		{ "csv", required_argument, NULL, 'c' },
		{ "label", required_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "fresh", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *obj_path = NULL, *prog_name = NULL, *pinned = NULL;
	const char *csv = NULL, *label = NULL;
	unsigned long size = 64, runs = 11, port = SPIN_DEFAULT_PORT, sport = 0;
	unsigned long long repeat = 1000000, fresh = 0, odd = 0;
	uint32_t *call_ns = NULL;
	struct frame_spec fs = {
		.src_mac = { 2, 0, 0, 0, 0, 1 }, .dst_mac = { 2, 0, 0, 0, 0, 2 },
		.args = { .op = SPIN_OP_PUT, .src_rank = 0, .dst_rank = 1 },
	};
	static uint8_t frame[FRAME_MAX], out[FRAME_MAX];
	struct bpf_object *obj = NULL;
	uint32_t first_ret = 0, last_ret = 0;
	double *ns;
	size_t flen;
	int quiet = 0, c, fd, err;
	unsigned long k;

	inet_pton(AF_INET, "10.77.0.1", &fs.src_ip);
	inet_pton(AF_INET, "10.77.0.2", &fs.dst_ip);
	while ((c = getopt_long(argc, argv, "o:P:i:s:n:k:p:c:l:qf:h", opts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'o': obj_path = optarg; break;
		case 'P': prog_name = optarg; break;
		case 'i': pinned = optarg; break;
		case 's': size = strtoul(optarg, &end, 0); break;
		case 'n': repeat = strtoull(optarg, &end, 0); break;
		case 'k': runs = strtoul(optarg, &end, 0); break;
		case 'p': port = strtoul(optarg, &end, 0); break;
		case 'c': csv = optarg; break;
		case 'l': label = optarg; break;
		case 'q': quiet = 1; break;
		case 'f': fresh = strtoull(optarg, &end, 0); break;
		case 1: case 2:
			if (inet_pton(AF_INET, optarg, c == 1 ? &fs.src_ip : &fs.dst_ip) != 1) {
				fprintf(stderr, "progrun: bad IPv4 address '%s'\n", optarg);
				return SPIN_EUSAGE;
			}
			break;
		case 3: case 4:
			if (parse_mac(optarg, c == 3 ? fs.src_mac : fs.dst_mac)) {
				fprintf(stderr, "progrun: bad MAC address '%s'\n", optarg);
				return SPIN_EUSAGE;
			}
			break;
		case 5: sport = strtoul(optarg, &end, 0); break;
		case 6: fs.args.src_rank = strtoul(optarg, &end, 0); break;
		case 7: fs.args.dst_rank = strtoul(optarg, &end, 0); break;
		case 8: fs.args.pt_index = strtoul(optarg, &end, 0); break;
		case 9: fs.args.match_bits = strtoull(optarg, &end, 0); break;
		case 10: fs.args.job_key = strtoul(optarg, &end, 0); break;
		case 11:
			if (spin_auth_key_parse(optarg, &fs.args.auth)) {
				fprintf(stderr, "progrun: %s\n", spin_errmsg());
				return SPIN_EUSAGE;
			}
			break;
		case 12: fs.args.flags = strtoul(optarg, &end, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return SPIN_EUSAGE;
		}
		if (end && *end) {
			fprintf(stderr, "progrun: bad number '%s'\n", optarg);
			return SPIN_EUSAGE;
		}
	}
	if (optind != argc || !!pinned == !!obj_path || (obj_path && !prog_name) ||
	    size > 65507 - sizeof(struct spin_hdr) - 8 - 20 || !repeat || repeat > UINT32_MAX ||
	    !runs || runs > 100000 || fresh > 100000000 || !port || port > 65535 || sport > 65535) {
		usage(stderr);
		return SPIN_EUSAGE;
	}
	fs.size = size;
	fs.dport = port;
	fs.sport = sport ? sport : port;
	fs.args.seg_size = size > SPIN_MAX_SEG ? size : SPIN_MAX_SEG;
	if (!label)
		label = pinned ? pinned : prog_name;

	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	if (pinned) {
		fd = bpf_obj_get(pinned);
		if (fd < 0) {
			fprintf(stderr, "progrun: %s: %s (attach the runtime first; bpffs visible?)\n",
				pinned, strerror(errno));
			return errno == ENOENT ? SPIN_ENOENT : SPIN_EFAIL;
		}
	} else {
		struct bpf_program *p;

		obj = bpf_object__open_file(obj_path, NULL);
		if (!obj) {
			fprintf(stderr, "progrun: open %s: %s\n", obj_path, strerror(errno));
			return SPIN_ENOENT;
		}
		err = bpf_object__load(obj);
		if (err) {
			fprintf(stderr, "progrun: load %s: %s\n", obj_path, strerror(-err));
			return SPIN_EVERIFIER;
		}
		p = bpf_object__find_program_by_name(obj, prog_name);
		if (!p) {
			fprintf(stderr, "progrun: no program '%s' in %s\n", prog_name, obj_path);
			return SPIN_ENOENT;
		}
		fd = bpf_program__fd(p);
	}

	ns = calloc(runs, sizeof(*ns));
	if (fresh)
		call_ns = calloc(fresh, sizeof(*call_ns));
	if (!ns || (fresh && !call_ns))
		return SPIN_EFAIL;

	/* one run on a fresh ping: action and output frame */
	{
		LIBBPF_OPTS(bpf_test_run_opts, o);
		struct spin_hdr h;
		int pay;

		fs.args.msg_id = spin_next_msg_id();
		flen = build_frame(frame, &fs);
		o.data_in = frame;
		o.data_size_in = flen;
		o.data_out = out;
		o.data_size_out = sizeof(out);
		o.repeat = 1;
		err = bpf_prog_test_run_opts(fd, &o);
		if (err) {
			fprintf(stderr, "progrun: BPF_PROG_RUN: %s\n", strerror(errno));
			return SPIN_EFAIL;
		}
		first_ret = o.retval;
		if (!quiet)
			fprintf(stderr, "progrun: %s: one ping of %lu bytes -> %s", label, size,
				xdp_action_name(o.retval));
		if (o.retval == 3 /* XDP_TX */ && o.data_size_out >= SPIN_PAY_OFF &&
		    (pay = spin_hdr_parse(out + SPIN_HDR_OFF, o.data_size_out - SPIN_HDR_OFF, &h)) >= 0) {
			if (!quiet)
				fprintf(stderr, ", pong: src_rank %u job_key %u msg_id %u match_bits %llu len %d flags %#x\n",
					ntohl(h.src_rank), ntohl(h.job_key), ntohl(h.msg_id),
					(unsigned long long)be64toh(h.match_bits), pay, ntohs(h.flags));
		} else if (!quiet) {
			fprintf(stderr, "\n");
		}
	}

	for (k = 0; k < runs && !fresh; k++) {
		LIBBPF_OPTS(bpf_test_run_opts, o);

		fs.args.msg_id = spin_next_msg_id();	/* never a duplicate */
		flen = build_frame(frame, &fs);
		o.data_in = frame;
		o.data_size_in = flen;
		o.repeat = repeat;
		err = bpf_prog_test_run_opts(fd, &o);
		if (err) {
			fprintf(stderr, "progrun: BPF_PROG_RUN: %s\n", strerror(errno));
			return SPIN_EFAIL;
		}
		ns[k] = o.duration;
		last_ret = o.retval;
	}
	for (k = 0; k < runs && fresh; k++) {
		struct spin_hdr *sh = (struct spin_hdr *)(frame + SPIN_HDR_OFF);
		unsigned long long j;

		flen = build_frame(frame, &fs);
		for (j = 0; j < fresh; j++) {
			LIBBPF_OPTS(bpf_test_run_opts, o);

			sh->msg_id = htonl(spin_next_msg_id());
			spin_auth_sign(&fs.args.auth, sh);	/* the tag covers msg_id */
			o.data_in = frame;
			o.data_size_in = flen;
			o.repeat = 1;
			err = bpf_prog_test_run_opts(fd, &o);
			if (err) {
				fprintf(stderr, "progrun: BPF_PROG_RUN: %s\n", strerror(errno));
				return SPIN_EFAIL;
			}
			call_ns[j] = o.duration;
			last_ret = o.retval;
			odd += o.retval != first_ret;
		}
		qsort(call_ns, fresh, sizeof(*call_ns), cmp_u32);
		ns[k] = iqm(call_ns, fresh);
	}
	if (odd)
		fprintf(stderr, "progrun: %s: warning: %llu of %llu fresh pings did not give %s\n",
			label, odd, fresh * runs, xdp_action_name(first_ret));
	qsort(ns, runs, sizeof(*ns), cmp_dbl);
	printf("%s: size %lu %s %llu runs %lu ns/pkt median %.1f min %.1f max %.1f action %s\n",
	       label, size, fresh ? "fresh" : "repeat", fresh ? fresh : repeat, runs,
	       ns[runs / 2], ns[0], ns[runs - 1], xdp_action_name(last_ret));
	if (csv) {
		struct stat st;
		int newf = stat(csv, &st) || st.st_size == 0;
		FILE *f = fopen(csv, "a");

		if (!f) {
			fprintf(stderr, "progrun: %s: %s\n", csv, strerror(errno));
			return SPIN_EIO;
		}
		if (newf)
			fprintf(f, "label,size,mode,n,runs,ns_median,ns_min,ns_max,action\n");
		fprintf(f, "%s,%lu,%s,%llu,%lu,%.1f,%.1f,%.1f,%s\n", label, size,
			fresh ? "fresh" : "repeat", fresh ? fresh : repeat, runs,
			ns[runs / 2], ns[0], ns[runs - 1], xdp_action_name(last_ret));
		fclose(f);
	}
	free(ns);
	free(call_ns);
	bpf_object__close(obj);
	return 0;
}
