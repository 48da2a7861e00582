#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Key-value store benchmark: the spin server (GETs answered by the handler,
# SETs and misses by the host process) against the host-only server on a
# kernel UDP socket (recvmmsg/sendmmsg), same client, same run.  YCSB-like
# load: Zipf(0.99) keys, 95/5 and 50/50 GET/SET.
#   throughput: one client with WINDOW requests outstanding
#   latency:    one client, one request at a time (p50/p99)
#
# Knobs: REPS=3 SECONDS_RUN=2 WARMUP=0.3 KEYS=50000 SLOT_BITS=16 WINDOW=32
#        MIXES="95 50" MODES="host spin" SERVER_CPU=1 CLIENT_CPU=0 ('': no pinning)
#        SETUPS="xsk threaded softirq", the client and where the receive
#        work runs:
#          xsk       the load generator on AF_XDP (kvstore client ... xsk
#                    veth0: libspin's packet path, one kick per batch of
#                    requests) on a veth pair straight to the server; both
#                    veth ends in threaded NAPI, the server's on SERVER_CPU,
#                    the client's on CLIENT_CPU, so each host's receive work
#                    is on its own CPU and the client is not the limit.
#                    Throughput at XSK_WINDOWS="32 128" ($OUT/kvstore_xsk*)
#          threaded  the kernel-UDP client through a bridge; the server's
#                    veth0 in a NAPI kernel thread pinned to SERVER_CPU
#                    ($OUT/kvstore.csv, kvstore_raw.csv, kvstore.png)
#          softirq   the same without threads: veth's default runs the
#                    receiving end's XDP and stack in the sender's softirq,
#                    so the spin server's handlers run on the client's CPU
#                    ($OUT/kvstore_softirq*)
#          all       the bridge set-up with every veth end threaded, the
#                    server's on SERVER_CPU, the client's and the bridge
#                    ports' on CLIENT_CPU ($OUT/kvstore_all*; the client's
#                    CPU is the limit)
#        OUT=bench/results
# Every run records the busy share of the server's and the client's CPU
# (/proc/stat); the summary CSV gives the server CPU time per request.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh

REPS=${REPS:-3} SECONDS_RUN=${SECONDS_RUN:-2} WARMUP=${WARMUP:-0.3} KEYS=${KEYS:-50000}
SLOT_BITS=${SLOT_BITS:-16} WINDOW=${WINDOW:-32} MIXES=${MIXES:-95 50}
SERVER_CPU=${SERVER_CPU-1} CLIENT_CPU=${CLIENT_CPU-0} MODES=${MODES:-host spin}
SETUPS=${SETUPS:-${NAPI_MODES:-xsk threaded softirq}} XSK_WINDOWS=${XSK_WINDOWS:-32 128}
OUT=${OUT:-bench/results}
KV=$TOP/samples/kvstore/kvstore SPINCTL=$TOP/tools/spinctl
TAG=spins$$-kv SRV=spins$$-kv-r0 CLI=spins$$-kv-r1 IP0=10.79.23.1 IP1=10.79.23.2
D=$(mktemp -d /tmp/kvbench.XXXXXX)
mkdir -p "$OUT"

cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	teardown
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
setup() {	# xsk|threaded|softirq|all
	if [ "$1" = xsk ]; then
		# client and server on one veth pair, each end's NAPI thread on
		# its host's CPU, the runtime on both (the client's AF_XDP path)
		spin_ns_pair "$SRV" veth0 "$IP0" "$CLI" veth0 "$IP1" || die "cannot build the namespaces"
		printf '%s\n%s\n' "$IP0" "$IP1" >"$D/hosts"
		napi_thread "$SRV" veth0 "$SERVER_CPU"
		napi_thread "$CLI" veth0 "$CLIENT_CPU"
		fifo "$SRV" veth0
		fifo "$CLI" veth0
		nsx "$CLI" "$SPINCTL" attach veth0 rank 1 >/dev/null || die "cannot attach the runtime (client)"
	else
		sample_topo_up "$TAG" 2 23 "$D/hosts" || die "cannot build the namespaces"
	fi
	if [ "$1" = threaded ] || [ "$1" = all ]; then
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
	nsx "$CLI" "$SPINCTL" detach veth0 >/dev/null 2>&1
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
for setup in $SETUPS; do
	case $setup in
	xsk) PFX=kvstore_xsk; RUNS="" ; for w in $XSK_WINDOWS; do RUNS="$RUNS throughput:$w"; done ;;
	threaded) PFX=kvstore ;;
	softirq) PFX=kvstore_softirq ;;
	all) PFX=kvstore_all ;;
	*) die "SETUPS: xsk, threaded, softirq or all, not '$setup'" ;;
	esac
	[ "$setup" = xsk ] || RUNS="throughput:$WINDOW"
	RUNS="$RUNS latency:1"
	CLIENT_ARGS=""; [ "$setup" = xsk ] && CLIENT_ARGS="xsk veth0"
	echo "== $setup"
	setup "$setup"
	echo "rep,server,mix,kind,window,rps,get_rps,p50_us,p99_us,dev_replies,host_replies,lost,server_cpu,client_cpu" >"$OUT/${PFX}_raw.csv"
	for rep in $(seq "$REPS"); do
		for mode in $MODES; do
			start_server $mode
			port=7717; [ $mode = host ] && port=7718
			for mix in $MIXES; do
				for run in $RUNS; do
					kind=${run%:*} w=${run#*:}
					s0=$(sample_cpu_ticks "${SERVER_CPU:-1}") c0=$(sample_cpu_ticks "${CLIENT_CPU:-0}")
					# shellcheck disable=SC2086
					SPIN_HOSTFILE=$D/hosts SPIN_RANK=1 nsenter --net=/var/run/netns/"$CLI" -- \
						$(pin "$CLIENT_CPU") "$KV" client "$IP0" \
						port $port rank 1 clients 1 keys "$KEYS" get-pct "$mix" window $w \
						seconds "$SECONDS_RUN" warmup "$WARMUP" $CLIENT_ARGS >"$D/cli" 2>&1
					rc=$?	# 4: some replies lost (reported), none wrong
					su=$(sample_cpu_util "$s0" "$(sample_cpu_ticks "${SERVER_CPU:-1}")")
					cu=$(sample_cpu_util "$c0" "$(sample_cpu_ticks "${CLIENT_CPU:-0}")")
					[ $rc = 0 ] || [ $rc = 4 ] || die "client failed ($setup $mode $mix $kind): $(cat "$D/cli")"
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
	# medians per (server, mix, kind, window) and spin/host ratios
	python3 - "$OUT/${PFX}_raw.csv" "$OUT/$PFX.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for r in rows:
    med.setdefault((r['server'], r['mix'], r['kind'], r['window']), []).append(r)
out = open(sys.argv[2], 'w')
out.write("mix,kind,window,label,host_rps,spin_rps,rps_ratio,host_get_rps,spin_get_rps,get_rps_ratio,host_p50_us,spin_p50_us,host_p99_us,spin_p99_us,p99_ratio,spin_handler_share,host_srv_cpu_us,spin_srv_cpu_us,srv_cpu_ratio\n")
mixes = sorted({r['mix'] for r in rows}, reverse=True)
runs = sorted({(r['kind'], r['window']) for r in rows}, key=lambda k: (k[0] != 'throughput', int(k[1])))
for mix in mixes:
    for kind, win in runs:
        m = {}
        for s in ('host', 'spin'):
            rs = med.get((s, mix, kind, win), [])
            if not rs:
                sys.exit(0)     # MODES without both servers: raw data only
            m[s] = {k: statistics.median(float(r[k]) for r in rs) for k in ('rps', 'get_rps', 'p50_us', 'p99_us', 'dev_replies', 'host_replies')}
            # server CPU time per request: busy share of its CPU / rate
            m[s]['cpu_us'] = statistics.median(float(r['server_cpu']) / max(1.0, float(r['rps'])) * 1e6 for r in rs)
        h, p = m['host'], m['spin']
        share = p['dev_replies'] / max(1, p['dev_replies'] + p['host_replies'])
        out.write(f"{mix},{kind},{win},{mix} w{win},{h['rps']:.0f},{p['rps']:.0f},{p['rps']/h['rps']:.2f},{h['get_rps']:.0f},{p['get_rps']:.0f},"
                  f"{p['get_rps']/h['get_rps']:.2f},{h['p50_us']:.1f},{p['p50_us']:.1f},{h['p99_us']:.1f},{p['p99_us']:.1f},"
                  f"{p['p99_us']/h['p99_us']:.2f},{share:.3f},{h['cpu_us']:.2f},{p['cpu_us']:.2f},{p['cpu_us']/h['cpu_us']:.2f}\n")
PY
	cat "$OUT/$PFX.csv"
	gnuplot <<EOF2 2>/dev/null || echo "kvstore bench: gnuplot failed (csv written)"
set terminal pngcairo size 1400,420
set output "$OUT/$PFX.png"
set datafile separator ","
set multiplot layout 1,3 title "key-value store, Zipf 0.99, $KEYS keys, $setup (median of $REPS)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key below
set title "GET throughput, mix and window (requests/s)"
set yrange [0:*]
plot "< grep throughput $OUT/$PFX.csv" using 8:xtic(4) title "host (UDP)", '' using 9 title "spin"
set title "p99 latency, one at a time (us)"
plot "< grep latency $OUT/$PFX.csv" using 13:xtic(1) title "host (UDP)", '' using 14 title "spin"
set title "server CPU per request, mix and window (us)"
plot "< grep throughput $OUT/$PFX.csv" using 17:xtic(4) title "host (UDP)", '' using 18 title "spin"
unset multiplot
EOF2
done
