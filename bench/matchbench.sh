#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Per-packet cost of matching through BPF_PROG_RUN (issue 15): 1, 100,
# 10,000 and 100,000 exact entries, with 0, 10 and 100 wildcard entries
# ahead of them, puts aimed at one entry ("one") and at a random entry of
# the table ("random"); bench/matchbench does the work (see its header),
# REPS interleaved repetitions in one run, pinned to CPU 1.
#
#   bench/matchbench.sh      (root)   REPS=3 CALLS=100000 by default
#
# Writes bench/results/matchbench.csv (target,exact,wild,rep,calls,ns_iqm,
# ns_p50,ns_p90,action_ok), bench/results/matchbench_summary.txt (median
# over repetitions, min-max, and the ratio to 1 exact entry with the same
# wildcards and target) and bench/results/matchbench.png.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
REPS=${REPS:-3}
CALLS=${CALLS:-100000}
OUT=${OUT:-bench/results}
CSV=$OUT/matchbench.csv
mkdir -p "$OUT"
rm -f "$CSV"
for t in one random; do
	bench/matchbench --reps "$REPS" --calls "$CALLS" --target "$t" --csv "$CSV"
done
# median (min, max) over repetitions of each configuration's ns_iqm
summ() {
	awk -F, 'NR > 1 { k = $1 "," $2 "," $3; v[k] = v[k] " " $6 }
		END { for (k in v) print k, v[k] }' "$CSV" |
	while read -r k vals; do
		echo "$k $(echo "$vals" | tr ' ' '\n' | sort -n |
			awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)], a[1], a[NR] }')"
	done | sort -t, -k1,1 -k3,3n -k2,2n
}
summ | tr ' ' ',' > "$OUT/matchbench_med.csv"	# target,exact,wild,median,min,max
{
	echo "BPF_PROG_RUN, 64-byte put deposited, $REPS repetitions of $CALLS calls"
	echo "(ns per packet: interquartile mean of a repetition's calls; median over repetitions, min-max)"
	printf '%-7s %7s %5s %9s %19s %9s\n' target exact wild ns min-max "ratio/1"
	awk -F, '{ key = $1 "," $3; if ($2 == 1) base[key] = $4
		printf "%-7s %7s %5s %9.1f %9.1f-%-9.1f %8.2fx\n", $1, $2, $3, $4, $5, $6,
			$4 / base[key] }' "$OUT/matchbench_med.csv"
} | tee "$OUT/matchbench_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$OUT/matchbench_med.csv'; png='$OUT/matchbench.png'" bench/matchbench.gp 2>/dev/null ||
		echo "matchbench: plot failed" >&2
fi
