#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Benchmark of the reduce sample against its host-only version (root).
# P = 4 and 8 ranks (namespaces spins<pid>-red-rK on a bridge,
# 10.79.24.0/24); rank 0 is the root, pinned to ROOT_CPU, the senders to
# SENDER_CPU.  Each round the root sends "go" to every sender and waits for
# the full sum; every sum is checked element by element.  Configurations,
# round-robin REPS times in one run:
#
#   spin_sock  spin root (handlers add in handler memory, the last completion
#              DMAs the sum), senders put from kernel UDP sockets (libspin
#              spin_sock_send): only the root's receive side differs from host
#   spin_ptl   spin root, senders use PtlPut (Portals over AF_XDP)
#   host       baseline: kernel UDP datagrams to a busy-polling root
#              (recvmmsg) that adds on the CPU; no XDP program on any rank
#
# Output in $OUT (default bench/results): reduce_raw.csv (every run),
# reduce.csv (medians over the repetitions and the ratio to host),
# reduce.png, reduce_handler.txt (the handler program's instruction count).
#
# Knobs: REPS=3 ROUNDS=200 SIZES=1,173,508,2032,4064,8128 PS="4 8"
#        ROOT_CPU=1 SENDER_CPU=0 CONFIGS="spin_sock spin_ptl host"
#        NAPI_MODES="softirq threaded": the root's veth0 in softirq or threaded NAPI
#        (files reduce*.csv and reduce_threaded*.csv)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh

OUT=${OUT:-$TOP/bench/results}
REPS=${REPS:-3} ROUNDS=${ROUNDS:-200} SIZES=${SIZES:-1,173,508,2032,4064,8128}
PS=${PS:-"4 8"} ROOT_CPU=${ROOT_CPU:-1} SENDER_CPU=${SENDER_CPU:-0}
CONFIGS=${CONFIGS:-"spin_sock spin_ptl host"}
NAPI_MODES=${NAPI_MODES:-"softirq threaded"}
TAG=spins$$-red
BIN=$TOP/samples/reduce/reduce_host
SPINCTL=$TOP/tools/spinctl
WORK=$(mktemp -d /tmp/spin-reduce-bench.XXXXXX)

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "reduce bench: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root"; exit 2; }
[ -x "$BIN" ] || { log "$BIN missing: run make"; exit 1; }
spin_bpffs_ensure || exit 1
mkdir -p "$OUT"
sample_topo_up "$TAG" 8 24 "$WORK/hosts8" >"$WORK/topo.log" 2>&1 || { cat "$WORK/topo.log"; exit 1; }
head -4 "$WORK/hosts8" >"$WORK/hosts4"

detach_all() {
	local k
	for k in $(seq 0 7); do
		nsx "$(sample_ns "$TAG" "$k")" "$SPINCTL" detach veth0 >/dev/null 2>&1
	done
}

# run CFG P ROUNDS SIZES CSV: one root and P-1 senders; 0 if every round exact
run() {
	local cfg=$1 n=$2 rounds=$3 sizes=$4 csv=$5 rmode smode dir k pids=() rc=0
	case $cfg in
	spin_sock) rmode=spin smode=sock ;;
	spin_ptl) rmode=spin smode=ptl ;;
	host) rmode=host smode=host ;;
	esac
	detach_all	# every configuration starts from bare interfaces
	dir=$(mktemp -d "$WORK/run.XXXX")
	for k in $(seq 1 $((n - 1))); do
		sample_run "$TAG" "$k" "$WORK/hosts$n" env SAMPLE_DIR="$dir" taskset -c "$SENDER_CPU" \
			timeout -k 2 120 "$BIN" sender $smode >"$dir/out.$k" 2>&1 &
		pids+=($!)
	done
	sample_run "$TAG" 0 "$WORK/hosts$n" env SAMPLE_DIR="$dir" taskset -c "$ROOT_CPU" \
		timeout -k 2 120 "$BIN" root $rmode nelem "$sizes" rounds "$rounds" csv "$csv" label "$cfg" \
		>"$dir/out.0" 2>&1 || rc=1
	for k in "${!pids[@]}"; do wait "${pids[$k]}" || rc=1; done
	if [ $rc -ne 0 ]; then
		log "$cfg P=$n failed:"; tail -n 5 "$dir"/out.* >&2
	fi
	cat "$dir/out.0" >&2
	return $rc
}

FAILED=0
for napi in $NAPI_MODES; do
	# softirq: the receiving veth's XDP (the "NIC") runs in the sender's
	# softirq, on the sender's CPU; threaded: in a NAPI kernel thread that
	# the scheduler puts on the idle CPU, as a NIC has its own processor
	PFX=reduce; [ "$napi" = threaded ] && PFX=reduce_threaded
	sample_napi_threaded "$(sample_ns "$TAG" 0)" veth0 "$([ "$napi" = threaded ] && echo 1 || echo 0)" ||
		{ log "cannot set NAPI mode $napi"; FAILED=1; continue; }
	# threaded: a full veth ring pushes back on the sender (a qdisc on
	# the root's bridge port) instead of dropping, as in bench/netpipe.sh
	if [ "$napi" = threaded ]; then
		sample_fifo "$TAG-br" p0 10000
	else
		tc -n "$TAG-br" qdisc del dev p0 root 2>/dev/null
	fi
	log "NAPI $napi"
	RAW=$OUT/${PFX}_raw.csv
	echo "config,P,nelem,bytes,rounds_exact,first_p50_us,first_p99_us,go_p50_us,go_p99_us,rep" >"$RAW"
	for rep in $(seq 1 "$REPS"); do
		for n in $PS; do
			for cfg in $CONFIGS; do
				: >"$WORK/one.csv"
				run "$cfg" "$n" "$ROUNDS" "$SIZES" "$WORK/one.csv" || FAILED=1
				sed "s/\$/,$rep/" "$WORK/one.csv" >>"$RAW"
			done
		done
	done

	# medians over the repetitions, and the ratio to host at the same P and size
	python3 - "$RAW" "$OUT/$PFX.csv" <<'EOPY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader(open(sys.argv[1])) if int(r['rounds_exact']) > 0]
keys = sorted({(r['config'], int(r['P']), int(r['nelem'])) for r in rows}, key=lambda k: (k[1], k[0], k[2]))
med = {}
for k in keys:
    rs = [r for r in rows if (r['config'], int(r['P']), int(r['nelem'])) == k]
    med[k] = {f: st.median(float(r[f]) for r in rs) for f in ('first_p50_us', 'first_p99_us', 'go_p50_us', 'go_p99_us')}
    med[k]['exact'] = sum(int(r['rounds_exact']) for r in rs)
with open(sys.argv[2], 'w') as f:
    f.write('config,P,nelem,bytes,rounds_exact,first_p50_us,first_p99_us,go_p50_us,go_p99_us,first_p50_vs_host\n')
    for k in keys:
        m = med[k]; h = med.get(('host', k[1], k[2]))
        ratio = '%.2f' % (m['first_p50_us'] / h['first_p50_us']) if h and h['first_p50_us'] else ''
        f.write('%s,%d,%d,%d,%d,%.1f,%.1f,%.1f,%.1f,%s\n' % (k[0], k[1], k[2], k[2] * 8, m['exact'],
                m['first_p50_us'], m['first_p99_us'], m['go_p50_us'], m['go_p99_us'], ratio))
EOPY
	column -s, -t "$OUT/$PFX.csv" >&2

	if command -v gnuplot >/dev/null; then
		plots=
		for n in $PS; do
			for cfg in $CONFIGS; do
				grep -q "^$cfg,$n," "$OUT/$PFX.csv" || continue
				awk -F, -v c="$cfg" -v p="$n" '$1 == c && $2 == p { print $4, $6 }' "$OUT/$PFX.csv" >"$WORK/$cfg.$n.dat"
				plots="$plots${plots:+, }'$WORK/$cfg.$n.dat' using 1:2 with linespoints title '$cfg P=$n'"
			done
		done
		gnuplot <<EOGP
set terminal pngcairo size 900,560 noenhanced
set output '$OUT/$PFX.png'
set title '$PFX: first contribution sent to full sum at the root (p50, median of $REPS runs)'
set xlabel 'vector size (bytes per sender)'
set ylabel 'microseconds'
set logscale xy 2
set format x '%.0b%B'
set key top left
set grid
plot $plots
EOGP
	fi

done

# the handler's instruction counts (xlated, as loaded) at the root
{
	echo "# reduce handler program at the root (spinctl handler list; bpftool prog show)"
	detach_all
	sample_handler_cost "$TAG" "$WORK/hosts4" "$(mktemp -d "$WORK/cost.XXXX")" "$BIN" root spin
} >"$OUT/reduce_handler.txt" 2>&1
cat "$OUT/reduce_handler.txt" >&2
exit $FAILED
