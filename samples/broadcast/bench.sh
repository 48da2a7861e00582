#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Broadcast latency, binomial tree, NIC-side forwarding (spin: handlers +
# runtime fan-out) vs host forwarding (processes on kernel UDP sockets), on
# 8 and 16 namespaces connected by one bridge (10.79.26.0/24).  Latency of
# one broadcast: root's first send -> every other rank has the whole message
# (gather at the root, timed where it arrives: by the root's NIC handler for
# spin, by the kernel's receive timestamp for host; see broadcast.c).
#
#   samples/broadcast/bench.sh         (root; OUT=bench/results)
#
# Each repetition runs, for each NAPI mode of the ranks' veth0 (where the
# runtime's XDP and the baseline's receive work run: softirq, veth's
# default, or threaded, a NAPI thread per rank), four configurations:
#   spin         the other ranks' hosts are woken for each completion (their
#                Portals waits sleep); the runtime hands the wake-up to its
#                work item, which runs after the packet work (the default)
#   spin-direct  the same, but the packet path wakes them itself
#                (SPIN_WAKE_DIRECT=1: an interrupt, a VM exit here, in the
#                middle of the forwarding)
#   spin-lazy    interrupt moderation: the runtime never wakes them, they
#                look every LAZY_US (SPIN_PTL_WAKE_US)
#   host         the baseline
# Medians over repetitions; ratios to host in the same NAPI mode, and
# "best": each side's fastest NAPI mode against the other's.
#
# Knobs: RANKS="8 16" SIZES="8,65536" ITERS=200 WARMUP=20 REPS=3 LAZY_US=1000
#        NAPI_MODES="softirq threaded"
#        BC_CPUS=""  (taskset the ranks round-robin over these CPUs)
# Output: $OUT/broadcast.csv (every run; label NAPI-repN),
#         $OUT/broadcast_summary.csv, $OUT/broadcast.png
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
NAPI_MODES=${NAPI_MODES:-"softirq threaded"}
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
	for napi in $NAPI_MODES; do
		bc_napi "$max" "$napi" || { echo "bench: cannot set NAPI mode $napi" >&2; exit 1; }
		for n in $RANKS; do
			for mode in spin spin-direct spin-lazy host; do
				dir=$(mktemp -d "$WORK/run.XXXX")
				log "rep $rep, $napi: P=$n $mode"
				args=(mode "${mode%-*}")
				[ "$mode" = spin-lazy ] && args+=(wake-us "$LAZY_US")
				BC_ENV=
				if [ "$mode" = spin-direct ]; then
					# runtimes attached anew, waking from the packet path
					bc_detach "$max"
					BC_ENV=SPIN_WAKE_DIRECT=1
				fi
				bc_run "$n" "$dir" "${args[@]}" size "$SIZES" iters "$ITERS" \
					warmup "$WARMUP" csv "$CSV" label "$napi-rep$rep"
				[ "$mode" = spin-direct ] && bc_detach "$max"
				if [ "$BC_RC" != 0 ]; then
					FAILED="$FAILED $napi/$mode/P$n/rep$rep"
					tail -n 3 "$dir"/out.* >&2
				fi
				grep -h "P=" "$dir/out.0" >&2
			done
		done
	done
done
bc_napi "$max" softirq

# medians over repetitions, and spin/host
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
col() {	# col NAPI MODE RANKS SIZE COLUMN
	awk -F, -v q="$1-" -v m="$2" -v n="$3" -v s="$4" -v c="$5" \
		'NR > 1 && index($1, q) == 1 && $2 == m && $3 == n && $4 == s { print $c }' "$CSV" | median
}
# fastest NAPI mode of MODE by p50: "napi p50"
best() {
	local q v out=
	for q in $NAPI_MODES; do
		v=$(col "$q" "$1" "$2" "$3" 6)
		[ -n "$v" ] && echo "$q $v"
	done | sort -k2,2n | head -1
}
echo "ranks,size,napi,mode,p50_ns,p99_ns,host_p50_ns,host_p99_ns,ratio_p50,ratio_p99,proc_p50_ns,host_proc_p50_ns,ratio_proc_p50,spin_napi,host_napi" >"$SUM"
row() {	# row RANKS SIZE LABEL MODE SPIN_NAPI HOST_NAPI
	local n=$1 s=$2 label=$3 m=$4 q=$5 hq=$6 p50 p99 pp hp50 hp99 hpp
	p50=$(col "$q" "$m" "$n" "$s" 6) p99=$(col "$q" "$m" "$n" "$s" 7) pp=$(col "$q" "$m" "$n" "$s" 10)
	hp50=$(col "$hq" host "$n" "$s" 6) hp99=$(col "$hq" host "$n" "$s" 7) hpp=$(col "$hq" host "$n" "$s" 10)
	[ -n "$p50" ] && [ -n "$hp50" ] || return 0
	echo "$n,$s,$label,$m,$p50,$p99,$hp50,$hp99,$(ratio "$p50" "$hp50"),$(ratio "$p99" "$hp99"),$pp,$hpp,$(ratio "$pp" "$hpp"),$q,$hq" >>"$SUM"
}
for n in $RANKS; do
	for s in ${SIZES//,/ }; do
		for q in $NAPI_MODES; do
			for m in spin spin-direct spin-lazy; do row "$n" "$s" "$q" "$m" "$q" "$q"; done
		done
		hq=$(best host "$n" "$s" | cut -d' ' -f1)
		for m in spin spin-direct spin-lazy; do
			q=$(best "$m" "$n" "$s" | cut -d' ' -f1)
			[ -n "$q" ] && [ -n "$hq" ] && row "$n" "$s" best "$m" "$q" "$hq"
		done
	done
done
column -t -s, "$SUM" >&2

if command -v gnuplot >/dev/null; then
	# one line per P and size; per NAPI mode: spin, spin-direct, spin-lazy,
	# host (p50 p99, us)
	for q in $NAPI_MODES; do
		for n in $RANKS; do
			for s in ${SIZES//,/ }; do
				printf '"P=%s %s B, %s"' "$n" "$s" "$q"
				for m in spin spin-direct spin-lazy host; do
					printf ' %s %s' "$(col "$q" "$m" "$n" "$s" 6 | awk '{ print $1 / 1e3 }')" \
						"$(col "$q" "$m" "$n" "$s" 7 | awk '{ print $1 / 1e3 }')"
				done
				echo
			done
		done
	done >"$WORK/plot.dat"
	gnuplot <<-GP 2>/dev/null && log "plot $OUT/broadcast.png"
		set terminal png size 1100,560
		set output "$OUT/broadcast.png"
		set title "Broadcast latency (binomial tree, one bridge): NIC-side vs host forwarding"
		set ylabel "latency [us] (bar: p50, whisker: p99)"
		set logscale y
		set style data histograms
		set style histogram errorbars gap 1 lw 1
		set style fill solid 0.6 border -1
		set key top left
		set xtics rotate by -25
		plot "$WORK/plot.dat" using 2:2:3:xtic(1) title "spin (NIC forwarding; hosts woken after the packet work)", \
		     "" using 4:4:5 title "spin, hosts woken from the packet path", \
		     "" using 6:6:7 title "spin, hosts not interrupted (moderation)", \
		     "" using 8:8:9 title "host (UDP forwarding)"
	GP
fi
[ -z "$FAILED" ] || { echo "bench: failed:$FAILED" >&2; exit 1; }
