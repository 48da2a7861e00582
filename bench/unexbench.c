// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cost of searching the Portals library's unexpected list (lib/ptl_unex.c)
 * for the header a priority PtlMEAppend or PtlMESearch takes, with N
 * headers waiting (distinct match bits, 64 source ranks, one portal), and
 * the search the library did before (a scan of every header for the
 * oldest match, which the old fixed table of 4096 did for any N up to
 * 4096), in the same run, repetitions interleaved:
 *
 *   exact   an entry with a source and no ignore bits (the exact chain)
 *   anysrc  an entry with a wildcard source, no ignore bits (the bits chain)
 *   ignore  an entry with ignore bits and a source (MPI_ANY_TAG from a
 *           rank: that source's headers walked, a 64th of them here)
 *   ignany  ignore bits and any source (the portal's list walked: half
 *           of it on average, the header being a random one)
 *   scan    the old search, for the exact entry
 *   exact1  the exact entry, always for the same header (the newest): the
 *           search's own work, without the cache and TLB misses of a
 *           random header among megabytes of them (matchbench's "one")
 *
 *   bench/unexbench [--reps R] [--finds K] [--csv FILE]
 *
 * CSV: n,kind,rep,finds,ns_per_find.  Pin it (taskset -c 1): unexbench.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/ptl_internal.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the search before lib/ptl_unex.c: every header looked at */
static struct ptl_unex *scan_find(struct ptl_unex **all, uint32_t n, struct ptl_ni *ni,
				  uint32_t pt, const ptl_me_t *me, uint32_t rank)
{
	struct ptl_unex *best = NULL;

	for (uint32_t i = 0; i < n; i++) {
		struct ptl_unex *u = all[i];

		if (u->used && u->pt == pt && ptl_unex_matches(ni, u, me, rank) &&
		    (!best || u->seq < best->seq))
			best = u;
	}
	return best;
}

static volatile uintptr_t sink;

int main(int argc, char **argv)
{
	static const uint32_t ns[] = { 1, 100, 1000, 4096, 10000, 100000 };
	static const char *const kinds[] = { "exact", "anysrc", "ignore", "scan", "exact1", "ignany" };
	int reps = 5, finds = 20000;
	const char *csv = NULL;
	FILE *f = stdout;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--finds") && i + 1 < argc)
			finds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--reps R] [--finds K] [--csv FILE]\n", argv[0]);
			return 2;
		}
	}
	if (csv && !(f = fopen(csv, "w"))) {
		perror(csv);
		return 1;
	}
	fprintf(f, "n,kind,rep,finds,ns_per_find\n");
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint32_t n = ns[k];
		struct ptl_ni *ni = calloc(1, sizeof(*ni));
		struct ptl_unex **all = calloc(n, sizeof(*all));
		uint32_t *pick = calloc((size_t)finds, sizeof(*pick));

		if (!ni || !all || !pick)
			return 1;
		ni->options = PTL_NI_LOGICAL;
		for (uint32_t i = 0; i < n; i++) {
			struct ptl_unex u = { .pt = 4, .seq = i + 1, .kind = PTL_EVENT_PUT,
					      .rank = i % 64 };

			u.ev.match_bits = 0x10000 + i;
			all[i] = ptl_unex_add(ni, &u);
			if (!all[i])
				return 1;
		}
		for (int i = 0; i < finds; i++)
			pick[i] = (uint32_t)(rnd() % n);
		for (int rep = 0; rep < reps; rep++)
			for (int kind = 0; kind < 6; kind++) {
				/* the scan is slow: fewer finds at large n */
				int nf = kind == 3 || kind == 2 || kind == 5 ? (n > 1000 ? finds / 20 : finds) : finds;
				uint64_t t0, t1;

				t0 = now_ns();
				for (int i = 0; i < nf; i++) {
					const struct ptl_unex *h = all[kind == 4 ? n - 1 : pick[i]];
					ptl_me_t me = { .match_bits = h->ev.match_bits,
							.options = PTL_ME_OP_PUT };
					uint32_t rank = h->rank;
					struct ptl_unex *got;

					if (kind == 1 || kind == 5)
						rank = SPIN_RANK_ANY;
					if (kind == 2 || kind == 5)
						me.ignore_bits = 0xf0000000ull;
					me.match_id.rank = rank == SPIN_RANK_ANY ? PTL_RANK_ANY : rank;
					got = kind == 3 ? scan_find(all, n, ni, 4, &me, rank) :
							  ptl_unex_find(ni, 4, &me, rank, NULL);
					if (got != h) {
						fprintf(stderr, "n %u %s: found the wrong header\n", n,
							kinds[kind]);
						return 1;
					}
					sink += (uintptr_t)got;
				}
				t1 = now_ns();
				fprintf(f, "%u,%s,%d,%d,%.1f\n", n, kinds[kind], rep, nf,
					(double)(t1 - t0) / nf);
			}
		ptl_unex_fini(ni);
		free(ni);
		free(all);
		free(pick);
	}
	if (csv)
		fclose(f);
	return 0;
}
