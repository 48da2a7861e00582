#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Key-value store benchmark: the spin server (GETs answered by the handler,
# SETs and misses by the host process) against the host-only server on a
# kernel UDP socket (recvmmsg/sendmmsg), same client, same run.  YCSB-like
# load: Zipf(0.99) keys, 95/5 and 50/50 GET/SET.
#   throughput: one client with WINDOW requests outstanding
#   latency:    one client, one request at a time (p50/p99)
# Results: $OUT/kvstore_raw.csv (every run), $OUT/kvstore.csv (medians and
# spin/host ratios), $OUT/kvstore.png.
#
# Knobs: REPS=3 SECONDS_RUN=2 WARMUP=0.3 KEYS=50000 SLOT_BITS=16 WINDOW=32
#        MIXES="95 50" MODES="host spin" SERVER_CPU=1 CLIENT_CPU=0 ('': no pinning)
#        NAPI_MODES="threaded softirq", where the receive work runs:
#          threaded  the server's veth0 in a NAPI kernel thread pinned to
#                    SERVER_CPU: the server host's "NIC interrupt" on the
#                    server's CPU, for both servers ($OUT/kvstore*.csv)
#          softirq   veth's default: in the sender's softirq, so the spin
#                    server's handlers run on the client's CPU
#                    ($OUT/kvstore_softirq*.csv)
#          all       every veth end threaded, the server's on SERVER_CPU, the
#                    client's and the bridge ports' on CLIENT_CPU
#                    ($OUT/kvstore_all*.csv; the client's CPU is the limit)
#        OUT=bench/results
# Every run records the busy share of the server's and the client's CPU
# (/proc/stat); kvstore.csv gives the server CPU time per request from it.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh

REPS=${REPS:-3} SECONDS_RUN=${SECONDS_RUN:-2} WARMUP=${WARMUP:-0.3} KEYS=${KEYS:-50000}
SLOT_BITS=${SLOT_BITS:-16} WINDOW=${WINDOW:-32} MIXES=${MIXES:-95 50}
SERVER_CPU=${SERVER_CPU-1} CLIENT_CPU=${CLIENT_CPU-0} MODES=${MODES:-host spin}
NAPI_MODES=${NAPI_MODES:-threaded softirq}
OUT=${OUT:-bench/results}
KV=$TOP/samples/kvstore/kvstore SPINCTL=$TOP/tools/spinctl
TAG=spins$$-kv SRV=spins$$-kv-r0 CLI=spins$$-kv-r1 IP0=10.79.23.1
D=$(mktemp -d /tmp/kvbench.XXXXXX)
mkdir -p "$OUT"

cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	nsx "$SRV" "$SPINCTL" detach veth0 >/dev/null 2>&1
	spin_ns_cleanup
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "kvstore bench: $*" >&2; exit 1; }
pin() { [ -n "$1" ] && echo "taskset -c $1"; }

[ "$(id -u)" = 0 ] || die "run as root"
spin_bpffs_ensure || die "no bpffs"
[ -x "$KV" ] || die "run make first"
napi_thread() { sample_napi_threaded "$1" "$2" 1 "$3" || die "no threaded NAPI on $1/$2"; }
fifo() { sample_fifo "$1" "$2" || die "no pfifo qdisc on $1/$2"; }
setup() {	# threaded|softirq|all
	sample_topo_up "$TAG" 2 23 "$D/hosts" || die "cannot build the namespaces"
	if [ "$1" != softirq ]; then
		napi_thread "$SRV" veth0 "$SERVER_CPU"
		fifo "$TAG-br" p0
	fi
	if [ "$1" = all ]; then
		napi_thread "$TAG-br" p0 "$CLIENT_CPU"
		napi_thread "$TAG-br" p1 "$CLIENT_CPU"
		napi_thread "$CLI" veth0 "$CLIENT_CPU"
		fifo "$SRV" veth0
		fifo "$CLI" veth0
		fifo "$TAG-br" p1
	fi
	nsx "$SRV" "$SPINCTL" attach veth0 rank 0 >/dev/null || die "cannot attach the runtime"
}
teardown() {
	nsx "$SRV" "$SPINCTL" detach veth0 >/dev/null 2>&1
	spin_ns_cleanup
}

start_server() {	# spin|host
	: >"$D/srv"
	if [ "$1" = spin ]; then
		SPIN_HOSTFILE=$D/hosts SPIN_RANK=0 nsenter --net=/var/run/netns/"$SRV" -- \
			$(pin "$SERVER_CPU") "$KV" server veth0 keys "$KEYS" slot-bits "$SLOT_BITS" >"$D/srv" 2>&1 &
	else
		nsenter --net=/var/run/netns/"$SRV" -- \
			$(pin "$SERVER_CPU") "$KV" udp-server "$IP0" keys "$KEYS" >"$D/srv" 2>&1 &
	fi
	srv=$!
	for _ in $(seq 200); do grep -q ready "$D/srv" && return 0; kill -0 $srv 2>/dev/null || break; sleep 0.05; done
	die "server ($1) did not start: $(cat "$D/srv")"
}
stop_server() { kill "$srv"; wait "$srv" || die "server reported bad requests: $(tail -2 "$D/srv")"; srv=; }

field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" "$2" | head -1; }
for napi in $NAPI_MODES; do
	case $napi in
	threaded) PFX=kvstore ;;
	softirq) PFX=kvstore_softirq ;;
	all) PFX=kvstore_all ;;
	*) die "NAPI_MODES: threaded, softirq or all, not '$napi'" ;;
	esac
	echo "== NAPI $napi"
	setup "$napi"
	echo "rep,server,mix,kind,window,rps,get_rps,p50_us,p99_us,dev_replies,host_replies,lost,server_cpu,client_cpu" >"$OUT/${PFX}_raw.csv"
	for rep in $(seq "$REPS"); do
		for mode in $MODES; do
			start_server $mode
			port=7717; [ $mode = host ] && port=7718
			for mix in $MIXES; do
				for kind in throughput latency; do
					w=$WINDOW; [ $kind = latency ] && w=1
					s0=$(sample_cpu_ticks "${SERVER_CPU:-1}") c0=$(sample_cpu_ticks "${CLIENT_CPU:-0}")
					nsenter --net=/var/run/netns/"$CLI" -- $(pin "$CLIENT_CPU") "$KV" client "$IP0" \
						port $port rank 1 clients 1 keys "$KEYS" get-pct "$mix" window $w \
						seconds "$SECONDS_RUN" warmup "$WARMUP" >"$D/cli" 2>&1
					rc=$?	# 4: some replies lost (reported), none wrong
					su=$(sample_cpu_util "$s0" "$(sample_cpu_ticks "${SERVER_CPU:-1}")")
					cu=$(sample_cpu_util "$c0" "$(sample_cpu_ticks "${CLIENT_CPU:-0}")")
					[ $rc = 0 ] || [ $rc = 4 ] || die "client failed ($mode $mix $kind): $(cat "$D/cli")"
					echo "$rep,$mode,$mix/$((100 - mix)),$kind,$w,$(field rps "$D/cli"),$(field get_rps "$D/cli"),$(field p50_us "$D/cli"),$(field p99_us "$D/cli"),$(field dev "$D/cli"),$(field host "$D/cli"),$(field lost "$D/cli"),$su,$cu" >>"$OUT/${PFX}_raw.csv"
					tail -1 "$OUT/${PFX}_raw.csv"
				done
			done
			stop_server
			[ $mode = spin ] && tail -1 "$D/srv"
		done
	done
	nsx "$SRV" "$SPINCTL" handler list veth0 >/dev/null
	teardown
	# medians per (server, mix, kind) and spin/host ratios
	python3 - "$OUT/${PFX}_raw.csv" "$OUT/$PFX.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for r in rows:
    med.setdefault((r['server'], r['mix'], r['kind']), []).append(r)
out = open(sys.argv[2], 'w')
out.write("mix,kind,host_rps,spin_rps,rps_ratio,host_get_rps,spin_get_rps,get_rps_ratio,host_p50_us,spin_p50_us,host_p99_us,spin_p99_us,p99_ratio,spin_handler_share,host_srv_cpu_us,spin_srv_cpu_us,srv_cpu_ratio\n")
mixes = sorted({r['mix'] for r in rows}, reverse=True)
for mix in mixes:
    for kind in ('throughput', 'latency'):
        m = {}
        for s in ('host', 'spin'):
            rs = med.get((s, mix, kind), [])
            if not rs:
                sys.exit(0)     # MODES without both servers: raw data only
            m[s] = {k: statistics.median(float(r[k]) for r in rs) for k in ('rps', 'get_rps', 'p50_us', 'p99_us', 'dev_replies', 'host_replies')}
            # server CPU time per request: busy share of its CPU / rate
            m[s]['cpu_us'] = statistics.median(float(r['server_cpu']) / max(1.0, float(r['rps'])) * 1e6 for r in rs)
        h, p = m['host'], m['spin']
        share = p['dev_replies'] / max(1, p['dev_replies'] + p['host_replies'])
        out.write(f"{mix},{kind},{h['rps']:.0f},{p['rps']:.0f},{p['rps']/h['rps']:.2f},{h['get_rps']:.0f},{p['get_rps']:.0f},"
                  f"{p['get_rps']/h['get_rps']:.2f},{h['p50_us']:.1f},{p['p50_us']:.1f},{h['p99_us']:.1f},{p['p99_us']:.1f},"
                  f"{p['p99_us']/h['p99_us']:.2f},{share:.3f},{h['cpu_us']:.2f},{p['cpu_us']:.2f},{p['cpu_us']/h['cpu_us']:.2f}\n")
PY
	cat "$OUT/$PFX.csv"
	gnuplot <<EOF2 2>/dev/null || echo "kvstore bench: gnuplot failed (csv written)"
set terminal pngcairo size 1400,420
set output "$OUT/$PFX.png"
set datafile separator ","
set multiplot layout 1,3 title "key-value store, Zipf 0.99, $KEYS keys, NAPI $napi (median of $REPS)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key below
set title "GET throughput, window $WINDOW (requests/s)"
set yrange [0:*]
plot "< grep throughput $OUT/$PFX.csv" using 6:xtic(1) title "host (UDP)", '' using 7 title "spin"
set title "p99 latency, one at a time (us)"
plot "< grep latency $OUT/$PFX.csv" using 11:xtic(1) title "host (UDP)", '' using 12 title "spin"
set title "server CPU per request, window $WINDOW (us)"
plot "< grep throughput $OUT/$PFX.csv" using 15:xtic(1) title "host (UDP)", '' using 16 title "spin"
unset multiplot
EOF2
done
