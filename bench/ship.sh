#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Shipped handlers (docs/shipping.md): bench/shipbench in two namespaces
# (rank 0 ships and measures, rank 1's Portals process takes the code and
# runs a UDP echo thread); every ratio is between numbers of the same run.
#
#   bench/ship.sh   (root)   REPS=5 STREAM=20000 OUT=bench/results
#
# Writes, in OUT:
#   ship_raw.csv      rep,metric,value as shipbench printed them
#   ship.csv          metric,median,min,max,reps
#   ship_summary.txt  the medians and the ratios: shipped/local round trip
#                     and rate (target 1.0: the same program), active
#                     message against the UDP host process
#   ship.png          (gnuplot) the times, medians with min..max bars
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. selftests/lib/ptl_topo.sh
REPS=${REPS:-5}
OUT=${OUT:-$TOP/bench/results}
TAG=spinb$$
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/spin-shipb.XXXXXX)
chmod 755 "$WORK"
cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ "$(id -u)" = 0 ] || { echo "bench/ship.sh: run as root" >&2; exit 1; }
[ -x bench/shipbench ] || { echo "bench/ship.sh: make first (bench/shipbench missing)" >&2; exit 1; }
spin_bpffs_ensure || exit 1
ptl_topo_up "$TAG" 2 "$WORK" >"$WORK/topo.log" 2>&1 || { cat "$WORK/topo.log"; exit 1; }

run() {
	local k=$1; shift
	nsx "$(ptl_ns "$TAG" "$k")" env SPIN_IFACE=veth0 SPIN_HOSTFILE="$WORK/hosts2" SPIN_RANK="$k" \
		"$@" timeout -k 2 900 "$TOP/bench/shipbench" "$WORK" "$TOP" "$REPS"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) CPUs" >"$WORK/load"
run 1 SPIN_SHIP_ALLOW=0 >"$WORK/r1.out" 2>&1 &
p1=$!
run 0 STREAM="${STREAM:-20000}" >"$OUT/ship_raw.csv" 2>"$WORK/r0.err"
rc=$?
wait $p1
[ $rc -eq 0 ] || { echo "shipbench failed ($rc):"; cat "$WORK/r0.err" "$WORK/r1.out"; exit 1; }
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$WORK/load"

# median, min, max per metric
echo "metric,median,min,max,reps" >"$OUT/ship.csv"
cut -d, -f2 "$OUT/ship_raw.csv" | sort -u | while read -r m; do
	grep ",$m," "$OUT/ship_raw.csv" | cut -d, -f3 | sort -g |
		awk -v m="$m" '{ v[NR] = $1 } END { printf "%s,%s,%s,%s,%d\n", m, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
done >>"$OUT/ship.csv"
med() { awk -F, -v m="$1" '$1 == m { print $2 }' "$OUT/ship.csv"; }
{
	cat "$WORK/load"
	echo "REPS=$REPS, medians (min..max) in ship.csv"
	for m in ship_first_ms_small ship_first_ms_large ship_call_ms_small ship_call_ms_large \
		 ship_hit_ms_small ship_hit_ms_large insns_small insns_large object_kib_small object_kib_large \
		 rtt_shipped_us rtt_local_us rate_shipped rate_local am_rtt_us udp_rtt_us placement_native; do
		awk -F, -v m="$m" '$1 == m { printf "%-22s %s (%s .. %s)\n", $1, $2, $3, $4 }' "$OUT/ship.csv"
	done
	# paired: the ratio within each repetition, then their median
	for p in rtt_shipped_us/rtt_local_us rate_shipped/rate_local; do
		awk -F, -v a="${p%/*}" -v b="${p#*/}" '
			$2 == a { x[$1] = $3 } $2 == b { y[$1] = $3 }
			END { for (r in x) if (y[r] > 0) print x[r] / y[r] }' "$OUT/ship_raw.csv" | sort -g |
			awk -v p="$p" '{ v[NR] = $1 } END {
				printf "%s per repetition: median %.3f (%.3f .. %.3f), target 1.0\n",
				       p, v[int((NR + 1) / 2)], v[1], v[NR] }'
	done
	awk -v a="$(med am_rtt_us)" -v b="$(med udp_rtt_us)" \
		'BEGIN { printf "active message / UDP host round trip: %.3f\n", a / b }'
} | tee "$OUT/ship_summary.txt"
if command -v gnuplot >/dev/null; then
	grep -E '^(ship_|rtt_|am_rtt|udp_rtt)' "$OUT/ship.csv" >"$WORK/times.csv"
	gnuplot -e "csv='$WORK/times.csv'; out='$OUT/ship.png'" bench/ship.gp 2>/dev/null ||
		echo "gnuplot failed (ship.png not made)"
fi
