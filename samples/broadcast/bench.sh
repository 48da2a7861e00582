#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Broadcast latency, binomial tree, NIC-side forwarding (spin: handlers +
# runtime fan-out) vs host forwarding (processes on kernel UDP sockets), on
# 8 and 16 namespaces connected by one bridge (10.79.26.0/24).  Latency of
# one broadcast: root's first send -> every other rank has the whole message
# (gather at the root, timed where it arrives: by the root's NIC handler for
# spin, by the kernel's receive timestamp for host; see broadcast.c).  Both modes run in the same
# invocation, alternating, REPS times; medians over repetitions.
#
#   samples/broadcast/bench.sh         (root; OUT=bench/results)
#
# Three configurations, alternating in each repetition:
#   spin       the other ranks' hosts are interrupted for each completion
#              (their Portals waits sleep; the runtime wakes them)
#   spin-lazy  the same with interrupt moderation: the runtime never wakes
#              them, they look every LAZY_US (SPIN_PTL_WAKE_US)
#   host       the baseline
#
# Knobs: RANKS="8 16" SIZES="8,65536" ITERS=200 WARMUP=20 REPS=3 LAZY_US=1000
#        BC_CPUS=""  (taskset the ranks round-robin over these CPUs)
# Output: $OUT/broadcast.csv (every repetition), $OUT/broadcast_summary.csv
#         (medians, ratio to host per spin configuration), $OUT/broadcast.png
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/broadcast/lib.sh

RANKS=${RANKS:-"8 16"}
SIZES=${SIZES:-"8,65536"}
ITERS=${ITERS:-200}
WARMUP=${WARMUP:-20}
REPS=${REPS:-3}
LAZY_US=${LAZY_US:-1000}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/spin-bcb.XXXXXX)
chmod 755 "$WORK"
CSV=$OUT/broadcast.csv
SUM=$OUT/broadcast_summary.csv

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "bench: $*" >&2; }

[ "$(id -u)" = 0 ] || { echo "bench: need root" >&2; exit 1; }
[ -x "$BC_BIN" ] || { echo "bench: $BC_BIN missing: run make" >&2; exit 1; }
spin_bpffs_ensure || exit 1
max=0
for n in $RANKS; do [ "$n" -gt "$max" ] && max=$n; done
bc_up "$max" >"$WORK/topo.log" 2>&1 || { cat "$WORK/topo.log" >&2; exit 1; }
for n in $RANKS; do bc_up "$n" >/dev/null 2>&1; done

echo "label,mode,ranks,size,iters,p50_ns,p99_ns,mean_ns,max_ns,proc_p50_ns,proc_p99_ns" >"$CSV"
FAILED=
for rep in $(seq 1 "$REPS"); do
	for n in $RANKS; do
		for mode in spin spin-lazy host; do
			dir=$(mktemp -d "$WORK/run.XXXX")
			log "rep $rep: P=$n $mode"
			args=(mode "${mode%-lazy}")
			[ "$mode" = spin-lazy ] && args+=(wake-us "$LAZY_US")
			bc_run "$n" "$dir" "${args[@]}" size "$SIZES" iters "$ITERS" warmup "$WARMUP" \
				csv "$CSV" label "rep$rep"
			if [ "$BC_RC" != 0 ]; then
				FAILED="$FAILED $mode/P$n/rep$rep"
				tail -3 "$dir"/out.* >&2
			fi
			grep -h "P=" "$dir/out.0" >&2
		done
	done
done

# medians over repetitions, and spin/host
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
col() {	# col MODE RANKS SIZE COLUMN
	awk -F, -v m="$1" -v n="$2" -v s="$3" -v c="$4" \
		'NR > 1 && $2 == m && $3 == n && $4 == s { print $c }' "$CSV" | median
}
echo "ranks,size,mode,p50_ns,p99_ns,host_p50_ns,host_p99_ns,ratio_p50,ratio_p99,proc_p50_ns,host_proc_p50_ns,ratio_proc_p50" >"$SUM"
for n in $RANKS; do
	for s in ${SIZES//,/ }; do
		hp50=$(col host "$n" "$s" 6) hp99=$(col host "$n" "$s" 7) hpp=$(col host "$n" "$s" 10)
		for m in spin spin-lazy; do
			p50=$(col "$m" "$n" "$s" 6) p99=$(col "$m" "$n" "$s" 7) pp=$(col "$m" "$n" "$s" 10)
			[ -n "$p50" ] && [ -n "$hp50" ] || continue
			echo "$n,$s,$m,$p50,$p99,$hp50,$hp99,$(ratio "$p50" "$hp50"),$(ratio "$p99" "$hp99"),$pp,$hpp,$(ratio "$pp" "$hpp")" >>"$SUM"
		done
	done
done
column -t -s, "$SUM" >&2

if command -v gnuplot >/dev/null; then
	# one line per P and size: spin, spin-lazy, host (p50, p99) in us
	awk -F, 'NR > 1 { k = $1 "," $2; if (!(k in h)) { o[++n] = k; h[k] = $6 / 1e3 " " $7 / 1e3 }
		  v[k, $3] = $4 / 1e3 " " $5 / 1e3 }
		 END { for (i = 1; i <= n; i++) { split(o[i], a, ",");
			printf "\"P=%s %s B\" %s %s %s\n", a[1], a[2], v[o[i], "spin"], v[o[i], "spin-lazy"], h[o[i]] } }' \
		"$SUM" >"$WORK/plot.dat"
	gnuplot <<-GP 2>/dev/null && log "plot $OUT/broadcast.png"
		set terminal png size 900,500
		set output "$OUT/broadcast.png"
		set title "Broadcast latency (binomial tree, one bridge): NIC-side vs host forwarding"
		set ylabel "latency [us] (bar: p50, whisker: p99)"
		set logscale y
		set style data histograms
		set style histogram errorbars gap 1 lw 1
		set style fill solid 0.6 border -1
		set key top left
		set xtics rotate by -20
		plot "$WORK/plot.dat" using 2:2:3:xtic(1) title "spin (NIC forwarding)", \
		     "" using 4:4:5 title "spin, hosts not interrupted (moderation)", \
		     "" using 6:6:7 title "host (UDP forwarding)"
	GP
fi
[ -z "$FAILED" ] || { echo "bench: failed:$FAILED" >&2; exit 1; }
