#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Per-packet cost of the per-process frame channel used for many
# Portals processes per interface (docs/design.md, "Many Portals processes
# per interface"): bench/demuxcost.bpf.o's xdp_ring (take the destination
# process from pt_index, copy the frame into that process's BPF ring
# buffer, drop) against xdp_parse (the same without the copy), with
# BPF_PROG_RUN (--fresh mode), alternating in one run, at 64 and 1376
# payload bytes.  No namespace, no traffic: the programs only run on
# progrun's frames.
#
#   bench/demuxcost.sh      (root)   REPS=5 FRESH=20000 CPU=1 by default
#
# Writes bench/results/demuxcost.csv (progrun's rows: label,size,mode,n,
# runs,ns_median,ns_min,ns_max,action), bench/results/demuxcost_summary.txt
# and bench/results/demuxcost.png.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"

REPS=${REPS:-5}
FRESH=${FRESH:-20000}
OUT=${OUT:-bench/results}
CSV=$OUT/demuxcost.csv
OBJ=$TOP/bench/demuxcost.bpf.o

[ -f "$OBJ" ] && [ -x bench/progrun ] || { echo "demuxcost: build first (make all)" >&2; exit 1; }
# each progrun loads the object afresh: 3 runs x FRESH records must fit the
# 128 MiB ring (1544 bytes a record)
[ "$FRESH" -le 25000 ] || { echo "demuxcost: FRESH at most 25000 (ring room)" >&2; exit 1; }
mkdir -p "$OUT"
rm -f "$CSV"
for r in $(seq "$REPS"); do
	for size in 64 1376; do
		for p in xdp_parse xdp_ring; do
			taskset -c "${CPU:-1}" bench/progrun --obj "$OBJ" --prog "$p" --pt 256 \
				--size "$size" --fresh "$FRESH" --runs 3 --csv "$CSV" \
				--label "$p" --quiet >/dev/null
		done
	done
done
# a run whose ring filled returned XDP_PASS: not the measured path
if awk -F, 'NR > 1 && $9 != "XDP_DROP"' "$CSV" | grep -q .; then
	echo "demuxcost: some runs did not take the measured path (action not XDP_DROP)" >&2
	exit 1
fi
med() { awk -F, -v l="$1" -v s="$2" 'NR > 1 && $1 == l && $2 == s { print $6 }' "$CSV" | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'; }
{
	echo "BPF_PROG_RUN --fresh $FRESH, $REPS repetitions (median, min-max of the runs' medians, ns per packet)"
	for size in 64 1376; do
		read -r p pmin pmax < <(med xdp_parse "$size")
		read -r g gmin gmax < <(med xdp_ring "$size")
		echo "payload $size: demux only $p ($pmin-$pmax), demux and ring copy $g ($gmin-$gmax)"
		awk -v p="$p" -v g="$g" -v s="$size" \
			'BEGIN { printf "ratio ring/demux at %d: %.2f (the copy: %+.1f ns)\n", s, g / p, g - p }'
	done
} | tee "$OUT/demuxcost_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$CSV'; png='$OUT/demuxcost.png'" bench/demuxcost.gp 2>/dev/null ||
		echo "demuxcost: plot failed" >&2
fi
