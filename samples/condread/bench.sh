#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Benchmark of the conditional-read sample against its host-only version
# (root).  Server rank 0 (pinned to SERVER_CPU) and client rank 1 (pinned to
# CLIENT_CPU) in namespaces spins<pid>-cr-rK on a bridge (10.79.25.0/24).
# Per reply size: latency of allowed requests one at a time (p50/p99), and
# the rate of a stream of COUNT requests of which DENY % are denied, WINDOW
# allowed ones outstanding.  Configurations, round-robin REPS times:
#
#   spin_sock  spin server (header handler answers from host memory or
#              drops), client on a kernel UDP socket (sPIN packets)
#   spin_ptl   spin server, Portals client (PtlPut requests, reply entry)
#   host       baseline: kernel UDP server, busy-polled, check and answer on
#              the CPU; no XDP program on either rank
#
# Output in $OUT (default bench/results): condread_raw.csv, condread.csv
# (medians and ratios to host), condread.png, condread_handler.txt.
# Knobs: REPS=3 COUNT=3000 SIZES=8,64,512,1376 DENY=50 WINDOW=16
#        SERVER_CPU=1 CLIENT_CPU=0 CONFIGS="spin_sock spin_ptl host"
#        NAPI_MODES="softirq threaded": the server's veth0 in softirq or threaded
#        NAPI (files condread*.csv and condread_threaded*.csv)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh

OUT=${OUT:-$TOP/bench/results}
REPS=${REPS:-3} COUNT=${COUNT:-3000} SIZES=${SIZES:-8,64,512,1376} DENY=${DENY:-50}
WINDOW=${WINDOW:-16} SERVER_CPU=${SERVER_CPU:-1} CLIENT_CPU=${CLIENT_CPU:-0}
CONFIGS=${CONFIGS:-"spin_sock spin_ptl host"}
NAPI_MODES=${NAPI_MODES:-"softirq threaded"}
TAG=spins$$-cr
BIN=$TOP/samples/condread/condread_host
SPINCTL=$TOP/tools/spinctl
WORK=$(mktemp -d /tmp/spin-condread-bench.XXXXXX)

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "condread bench: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root"; exit 2; }
[ -x "$BIN" ] || { log "$BIN missing: run make"; exit 1; }
spin_bpffs_ensure || exit 1
mkdir -p "$OUT"
sample_topo_up "$TAG" 2 25 "$WORK/hosts" >"$WORK/topo.log" 2>&1 || { cat "$WORK/topo.log"; exit 1; }

detach_all() {
	local k
	for k in 0 1; do nsx "$(sample_ns "$TAG" "$k")" "$SPINCTL" detach veth0 >/dev/null 2>&1; done
}

# run CFG CSV
run() {
	local cfg=$1 csv=$2 smode cmode dir srv rc=0
	case $cfg in
	spin_sock) smode=spin cmode=sock ;;
	spin_ptl) smode=spin cmode=ptl ;;
	host) smode=host cmode=host ;;
	esac
	detach_all
	dir=$(mktemp -d "$WORK/run.XXXX")
	sample_run "$TAG" 0 "$WORK/hosts" env SAMPLE_DIR="$dir" taskset -c "$SERVER_CPU" \
		timeout -k 2 300 "$BIN" server "$smode" >"$dir/out.0" 2>&1 &
	srv=$!
	sample_run "$TAG" 1 "$WORK/hosts" env SAMPLE_DIR="$dir" taskset -c "$CLIENT_CPU" \
		timeout -k 2 300 "$BIN" client "$cmode" bench count "$COUNT" size "$SIZES" deny "$DENY" \
		window "$WINDOW" csv "$csv" label "$cfg" >"$dir/out.1" 2>&1 || rc=1
	wait $srv || rc=1
	[ $rc -ne 0 ] && { log "$cfg failed:"; tail -n 5 "$dir"/out.* >&2; }
	cat "$dir/out.1" >&2
	return $rc
}

FAILED=0
for napi in $NAPI_MODES; do
	# softirq: the receiving veth's XDP (the "NIC") runs in the sender's
	# softirq, on the sender's CPU; threaded: in a NAPI kernel thread that
	# the scheduler puts on the idle CPU, as a NIC has its own processor
	PFX=condread; [ "$napi" = threaded ] && PFX=condread_threaded
	sample_napi_threaded "$(sample_ns "$TAG" 0)" veth0 "$([ "$napi" = threaded ] && echo 1 || echo 0)" ||
		{ log "cannot set NAPI mode $napi"; FAILED=1; continue; }
	log "NAPI $napi"
	RAW=$OUT/${PFX}_raw.csv
	echo "config,size,latency_n,lat_p50_us,lat_p99_us,deny_pct,window,rate_rps,rep" >"$RAW"
	for rep in $(seq 1 "$REPS"); do
		for cfg in $CONFIGS; do
			: >"$WORK/one.csv"
			run "$cfg" "$WORK/one.csv" || FAILED=1
			sed "s/\$/,$rep/" "$WORK/one.csv" >>"$RAW"
		done
	done

	python3 - "$RAW" "$OUT/$PFX.csv" <<'EOPY'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r['config'], int(r['size'])) for r in rows})
med = {k: {f: st.median(float(r[f]) for r in rows if (r['config'], int(r['size'])) == k)
           for f in ('lat_p50_us', 'lat_p99_us', 'rate_rps')} for k in keys}
with open(sys.argv[2], 'w') as f:
    f.write('config,size,lat_p50_us,lat_p99_us,rate_rps,lat_p50_vs_host,rate_vs_host\n')
    for k in keys:
        m = med[k]; h = med.get(('host', k[1]))
        f.write('%s,%d,%.1f,%.1f,%.0f,%s,%s\n' % (k[0], k[1], m['lat_p50_us'], m['lat_p99_us'], m['rate_rps'],
                '%.2f' % (m['lat_p50_us'] / h['lat_p50_us']) if h else '',
                '%.2f' % (m['rate_rps'] / h['rate_rps']) if h else ''))
EOPY
	column -s, -t "$OUT/$PFX.csv" >&2

	if command -v gnuplot >/dev/null; then
		plots= plots2=
		for cfg in $CONFIGS; do
			awk -F, -v c="$cfg" '$1 == c { print $2, $3, $5 }' "$OUT/$PFX.csv" >"$WORK/$cfg.dat"
			plots="$plots${plots:+, }'$WORK/$cfg.dat' using 1:2 with linespoints title '$cfg'"
			plots2="$plots2${plots2:+, }'$WORK/$cfg.dat' using 1:(\$3/1000) with linespoints title '$cfg'"
		done
		gnuplot <<EOGP
set terminal pngcairo size 1100,480 noenhanced
set output '$OUT/$PFX.png'
set multiplot layout 1,2 title '$PFX: conditional read (medians of $REPS runs)'
set logscale x 2
set xlabel 'reply size (bytes)'
set grid
set key top left
set title 'allowed request latency p50'
set ylabel 'microseconds'
plot $plots
set title 'request rate, $DENY % denied, window $WINDOW'
set ylabel 'thousand requests/s'
plot $plots2
unset multiplot
EOGP
	fi

done

{
	echo "# condread handler program at the server (spinctl handler list; bpftool prog show)"
	detach_all
	sample_handler_cost "$TAG" "$WORK/hosts" "$(mktemp -d "$WORK/cost.XXXX")" "$BIN" server spin
} >"$OUT/condread_handler.txt" 2>&1
cat "$OUT/condread_handler.txt" >&2
exit $FAILED
