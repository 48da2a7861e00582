#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Cost of a search of the Portals library's unexpected list (issue 15):
# 1 to 100,000 headers waiting, entries exact, with a wildcard source and
# with ignore bits, and the old search (a scan of every header) in the same
# run, repetitions interleaved, pinned to CPU 1; bench/unexbench does the
# work (see its header).  No root needed.
#
#   bench/unexbench.sh        REPS=5 FINDS=20000 by default
#
# Writes bench/results/unexbench.csv (n,kind,rep,finds,ns_per_find),
# bench/results/unexbench_summary.txt (median over repetitions, min-max,
# the ratio to 1 header and, for the exact entry, the old scan's cost over
# the new search's) and bench/results/unexbench.png.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
REPS=${REPS:-5}
FINDS=${FINDS:-20000}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
CSV=$OUT/unexbench.csv
PIN=
command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ] && PIN="taskset -c 1"
$PIN bench/unexbench --reps "$REPS" --finds "$FINDS" --csv "$CSV"
# n,kind,median,min,max
awk -F, 'NR > 1 { k = $1 "," $2; v[k] = v[k] " " $5 }
	END { for (k in v) print k, v[k] }' "$CSV" |
	while read -r k vals; do
		echo "$k,$(echo "$vals" | tr ' ' '\n' | sed '/^$/d' | sort -g |
			awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] "," a[1] "," a[NR] }')"
	done | sort -t, -k2,2 -k1,1n > "$OUT/unexbench_med.csv"
{
	echo "unexpected list search, $REPS repetitions (ns per search: median over repetitions, min-max)"
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-7s %7s %9s %21s %8s %10s\n' kind headers ns min-max "ratio/1" "scan/new"
	awk -F, '{ m[$2 "," $1] = $3 } END { }
		{ if ($1 == 1) base[$2] = $3; row[NR] = $0 }
		END { for (i = 1; i <= NR; i++) { split(row[i], f, ",");
			printf "%-7s %7s %9.1f %10.1f-%-10.1f %7.2fx", f[2], f[1], f[3], f[4], f[5], f[3] / base[f[2]];
			if (f[2] == "exact" || f[2] == "exact1") printf " %9.1fx", m["scan," f[1]] / f[3];
			printf "\n" } }' "$OUT/unexbench_med.csv"
} | tee "$OUT/unexbench_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$OUT/unexbench_med.csv'; png='$OUT/unexbench.png'" bench/unexbench.gp 2>/dev/null ||
		echo "unexbench: plot failed" >&2
fi
