#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/run.sh - sPIN ping-pong benchmarks and their baselines (root).
#
# Two namespaces joined by a veth pair; the client runs bench/pingclient on a
# kernel UDP socket against each server variant:
#
#   udp_echo       bench/udp_echo, a host process on a UDP socket (blocking)
#   udp_echo_busy  the same, busy-polling its socket
#   xdp_reflector  bench/reflector.bpf.o, hand-written XDP_TX ping-pong
#   spin_stream    the spin runtime + samples/pingpong streaming handler
#
# and BPF_PROG_RUN measures the per-packet cost of the XDP programs
# (empty program, reflector, spin runtime + handler).  The last stage is
# bench/netpipe.sh (Portals vs UDP vs AF_XDP, NetPIPE-style).
#
# Results in bench/results/: latency.csv, latency_summary.csv, progrun.csv,
# summary.txt (ratios) and *.png plots (gnuplot).
#
# Environment knobs:
#   COUNT=100000     measured round trips per (variant, size, rep)
#   WARMUP=2000      unmeasured round trips first
#   SIZES="64 256 1024 1376"  ping payload sizes
#   REPS=3           repetitions (variants round-robin); medians reported
#   VARIANTS="udp_echo udp_echo_busy xdp_reflector spin_stream"
#   CLIENT_BUSY=0    1: the client busy-polls too
#   PROGRUN_MODE=repeat BPF_PROG_RUN mode: repeat (REPEAT kernel repetitions,
#                    ~26 ns fixed cost) or fresh (FRESH single runs on new
#                    pings, one syscall each: ~90 ns fixed cost, 10 ns steps)
#   FRESH=100000 REPEAT=1000000 RUNS=11 PSIZE=64
#   PROGRUN=1        0: skip BPF_PROG_RUN
#   CLIENT_CPU=0 SERVER_CPU=1         taskset pinning ('' to disable)
#   OUT=bench/results
#   TIMEOUT_MS=200   per-pong timeout
#   NETPIPE=1        0: skip the NetPIPE stage (bench/netpipe.sh, its own knobs)
#
# Quick run: COUNT=5000 SIZES=64 FRESH=20000 RUNS=5 bench/run.sh

set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
. selftests/lib/netns.sh

COUNT=${COUNT:-100000}
WARMUP=${WARMUP:-2000}
SIZES=${SIZES:-"64 256 1024 1376"}
REPS=${REPS:-3}
VARIANTS=${VARIANTS:-"udp_echo udp_echo_busy xdp_reflector spin_stream"}
CLIENT_BUSY=${CLIENT_BUSY:-0}
REPEAT=${REPEAT:-1000000}
FRESH=${FRESH:-100000}
PROGRUN_MODE=${PROGRUN_MODE:-repeat}
RUNS=${RUNS:-11}
PSIZE=${PSIZE:-64}
PROGRUN=${PROGRUN:-1}
CLIENT_CPU=${CLIENT_CPU-0}
SERVER_CPU=${SERVER_CPU-1}
OUT=${OUT:-bench/results}
TIMEOUT_MS=${TIMEOUT_MS:-200}
PORT=${PORT:-7717}

NS_C=spinb-cli-$$
NS_S=spinb-srv-$$
IF_C=spinbc0
IF_S=spinbs0
IP_C=10.77.90.1
IP_S=10.77.90.2
SPINCTL=$ROOT/tools/spinctl
SERVER_PID=

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

nspin() {	# nspin NS CPU CMD...: run CMD in NS, pinned to CPU (if set)
	local ns=$1 cpu=$2; shift 2
	if [ -n "$cpu" ]; then nsx "$ns" taskset -c "$cpu" "$@"; else nsx "$ns" "$@"; fi
}

cleanup() {
	stop_server
	spin_ns_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP)"
for b in bench/pingclient bench/udp_echo bench/progrun bench/reflector.bpf.o selftests/progs/xdp_pass.bpf.o; do
	[ -e "$b" ] || die "$b missing: run 'make' first"
done
command -v taskset >/dev/null || { CLIENT_CPU=; SERVER_CPU=; }
[ "$(nproc)" -ge 2 ] || SERVER_CPU=$CLIENT_CPU
spin_bpffs_ensure || die "cannot mount bpffs on /sys/fs/bpf"

mkdir -p "$OUT"
LAT=$OUT/latency.csv
PRC=$OUT/progrun.csv
SUM=$OUT/summary.txt
rm -f "$LAT" "$PRC" "$SUM" "$OUT/latency_summary.csv" "$OUT"/*.png "$OUT/spinctl.log"

spin_ns_pair "$NS_C" "$IF_C" "$IP_C" "$NS_S" "$IF_S" "$IP_S" || die "cannot create the veth pair"
# An XDP program on the client end, so that pongs sent with XDP_TX are
# received at once (GRO alone leaves them in the veth ring for ms; see
# bench/README.md).  Same client path for every variant.
spin_ns_xdp_pass "$NS_C" "$IF_C" || die "cannot attach an XDP program to the client veth"
MAC_C=$(spin_ns_mac "$NS_C" "$IF_C")
MAC_S=$(spin_ns_mac "$NS_S" "$IF_S")
log "client $NS_C/$IF_C $IP_C $MAC_C  <->  server $NS_S/$IF_S $IP_S $MAC_S"

# ------------------------------------------------------------ servers --

wait_udp_port() {	# wait until something listens on PORT in the server ns
	local _
	for _ in $(seq 50); do
		nsx "$NS_S" ss -Hlun "sport = :$PORT" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

stop_server() {
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
		SERVER_PID=
	fi
}

setup_udp_server() {	# setup_udp_server [--busy]
	local pin=()
	# a plain command (not a function) in the background, so that $! is the
	# server itself: nsenter and taskset exec it in place
	[ -n "$SERVER_CPU" ] && pin=(taskset -c "$SERVER_CPU")
	if nsx "$NS_S" ss -Hlun "sport = :$PORT" 2>/dev/null | grep -q .; then
		log "port $PORT already in use in $NS_S"
		return 1
	fi
	nsenter --net="/var/run/netns/$NS_S" -- "${pin[@]}" "$ROOT/bench/udp_echo" \
		--port "$PORT" --rank 1 --quiet "$@" &
	SERVER_PID=$!
	wait_udp_port || { log "udp_echo did not start"; stop_server; return 1; }
}

setup_reflector() {
	ip -n "$NS_S" link set dev "$IF_S" xdpdrv obj "$ROOT/bench/reflector.bpf.o" sec xdp ||
		{ log "cannot attach the reflector"; return 1; }
}

teardown_reflector() {
	ip -n "$NS_S" link set dev "$IF_S" xdpdrv off 2>/dev/null
}

# spinctl inside the server namespace (nsx keeps /sys/fs/bpf visible);
# its output goes to the log, errors stay on stderr
sctl() { nsx "$NS_S" "$SPINCTL" "$@" >>"$OUT/spinctl.log"; }

# setup_spin_server: the spin runtime with the paper's streaming ping-pong
# handler on the server end, answering the client (rank 0).  Rank 1, the
# server itself, is a peer too: BPF_PROG_RUN in repeat mode feeds the
# program its own previous output, so every repetition is a pong from rank
# 1 with a fresh message id, which the handler answers like a ping (the
# reflector's output is likewise a valid ping again).
setup_spin_server() {
	[ -x "$SPINCTL" ] || { log "SKIP spin: $SPINCTL not built"; return 2; }
	[ -e "$ROOT/samples/pingpong/pingpong_stream.bpf.o" ] ||
		{ log "SKIP spin: samples/pingpong/pingpong_stream.bpf.o not built"; return 2; }
	if ! { sctl attach "$IF_S" rank 1 &&
	       sctl handler load "$IF_S" "$ROOT/samples/pingpong/pingpong_stream.bpf.o" name pp &&
	       sctl pt alloc "$IF_S" 0 &&
	       sctl me append "$IF_S" pt 0 bits 0 ignore 0xffffffffffffffff handler pp no-events &&
	       sctl peer add "$IF_S" 0 "$IP_C" &&
	       sctl peer add "$IF_S" 1 "$IP_S" mac "$MAC_S"; }; then
		log "spin server setup failed"
		return 1
	fi
}

teardown_spin_server() {
	[ -x "$SPINCTL" ] && sctl detach "$IF_S" >/dev/null 2>&1
	ip -n "$NS_S" link set dev "$IF_S" xdp off 2>/dev/null
}

# Path of the runtime's pinned entry program (after setup_spin_server).
spin_prog_rx() {
	local ino
	ino=$(stat -L -c %i "/var/run/netns/$NS_S") || return 1
	echo "/sys/fs/bpf/spin/ns$ino/$IF_S/prog_rx"
}

setup_variant() {
	case $1 in
	udp_echo)	setup_udp_server ;;
	udp_echo_busy)	setup_udp_server --busy ;;
	xdp_reflector)	setup_reflector ;;
	spin_stream)	setup_spin_server ;;
	*)		log "unknown variant $1"; return 1 ;;
	esac
}

teardown_variant() {
	case $1 in
	udp_echo|udp_echo_busy)	stop_server ;;
	xdp_reflector)		teardown_reflector ;;
	spin_stream)		teardown_spin_server ;;
	esac
}

# ------------------------------------------------------------ latency --

busy_flag=
[ "$CLIENT_BUSY" = 1 ] && busy_flag=--busy
FAILED=

for rep in $(seq "$REPS"); do
	for v in $VARIANTS; do
		setup_variant "$v"
		rc=$?
		if [ $rc != 0 ]; then
			teardown_variant "$v"
			[ $rc = 2 ] || FAILED="$FAILED $v"
			continue
		fi
		for size in $SIZES; do
			log "rep $rep/$REPS $v size $size: $COUNT round trips"
			nspin "$NS_C" "$CLIENT_CPU" "$ROOT/bench/pingclient" --dst "$IP_S" \
				--port "$PORT" --count "$COUNT" --warmup "$WARMUP" --size "$size" \
				--timeout-ms "$TIMEOUT_MS" $busy_flag --csv "$LAT" --label "$v" ||
				FAILED="$FAILED $v/$size"
		done
		teardown_variant "$v"
	done
done

# ------------------------------------------------------- BPF_PROG_RUN --

progrun() {	# progrun LABEL ARGS...
	local label=$1 mode; shift
	if [ "$PROGRUN_MODE" = repeat ]; then
		mode=(--repeat "$REPEAT")
	else
		mode=(--fresh "$FRESH")
	fi
	log "BPF_PROG_RUN $label: $RUNS runs, ${mode[*]}"
	nspin "$NS_S" "$SERVER_CPU" "$ROOT/bench/progrun" "$@" --size "$PSIZE" \
		"${mode[@]}" --runs "$RUNS" --src-ip "$IP_C" --dst-ip "$IP_S" \
		--src-mac "$MAC_C" --dst-mac "$MAC_S" --port "$PORT" \
		--csv "$PRC" --label "$label" || FAILED="$FAILED progrun/$label"
}

if [ "$PROGRUN" = 1 ]; then
	progrun empty --obj "$ROOT/selftests/progs/xdp_pass.bpf.o" --prog xdp_pass
	progrun xdp_reflector --obj "$ROOT/bench/reflector.bpf.o" --prog xdp_reflector
	case " $VARIANTS " in *" spin_stream "*)
		setup_spin_server
		rc=$?
		if [ $rc = 0 ]; then
			progrun spin_stream --pinned "$(spin_prog_rx)"
		elif [ $rc != 2 ]; then
			FAILED="$FAILED progrun/spin_stream"
		fi
		teardown_spin_server
	esac
fi

# ------------------------------------------------------------ summary --

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# col LABEL SIZE COLUMN FILE: the median of a column over repetitions
col() {
	awk -F, -v l="$1" -v s="$2" -v c="$3" 'NR > 1 && $1 == l && $2 == s { print $c }' "$4" | median
}

if [ -s "$LAT" ]; then
	echo "label,size,p50_ns,p99_ns,mean_ns,loss" > "$OUT/latency_summary.csv"
	for v in $VARIANTS; do
		for size in $SIZES; do
			p50=$(col "$v" "$size" 4 "$LAT")
			[ -n "$p50" ] || continue
			echo "$v,$size,$p50,$(col "$v" "$size" 5 "$LAT"),$(col "$v" "$size" 6 "$LAT"),$(col "$v" "$size" 7 "$LAT")"
		done
	done >> "$OUT/latency_summary.csv"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else printf "n/a" }'; }

{
	echo "spin ping-pong benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), kernel $(uname -r), $(nproc) CPUs"
	echo "veth pair in namespaces; client CPU ${CLIENT_CPU:-any}, server CPU ${SERVER_CPU:-any}; client ${busy_flag:-blocking}"
	echo "COUNT=$COUNT WARMUP=$WARMUP REPS=$REPS (medians over reps)"
	echo
	if [ -s "$OUT/latency_summary.csv" ]; then
		printf '%-14s %6s %10s %10s %10s %6s   %-16s %-16s\n' variant size p50_us p99_us mean_us loss \
			"p50 / udp_echo" "p50 / reflector"
		tail -n +2 "$OUT/latency_summary.csv" | while IFS=, read -r l s p50 p99 mean loss; do
			base=$(awk -F, -v s="$s" '$1 == "udp_echo" && $2 == s { print $3 }' "$OUT/latency_summary.csv")
			refl=$(awk -F, -v s="$s" '$1 == "xdp_reflector" && $2 == s { print $3 }' "$OUT/latency_summary.csv")
			printf '%-14s %6s %10.2f %10.2f %10.2f %6s   %-16s %-16s\n' "$l" "$s" \
				"$(ratio "$p50" 1000)" "$(ratio "$p99" 1000)" "$(ratio "$mean" 1000)" "$loss" \
				"$(ratio "$p50" "$base")" "$(ratio "$p50" "$refl")"
		done
	fi
	if [ -s "$PRC" ]; then
		echo
		empty=$(awk -F, '$1 == "empty" { print $6 }' "$PRC")
		refl=$(awk -F, '$1 == "xdp_reflector" { print $6 }' "$PRC")
		empty=${empty:-0} refl=${refl:-0}
		echo "BPF_PROG_RUN, $PSIZE-byte ping, mode $PROGRUN_MODE, median of $RUNS runs:"
		printf '%-14s %12s %14s %14s %16s   %s\n' program ns/pkt "net of empty" "/ reflector" \
			"net / net refl" action
		tail -n +2 "$PRC" | while IFS=, read -r l s _ _ _ med _ _ act; do
			net=$(awk -v a="$med" -v b="$empty" 'BEGIN { printf "%.1f", a - b }')
			rnet=$(awk -v a="$refl" -v b="$empty" 'BEGIN { printf "%.1f", a - b }')
			printf '%-14s %12s %14s %14s %16s   %s\n' "$l" "$med" "$net" \
				"$(ratio "$med" "$refl")" "$(ratio "$net" "$rnet")" "$act"
		done
	fi
	[ -n "$FAILED" ] && { echo; echo "FAILED:$FAILED"; }
} | tee "$SUM"

# -------------------------------------------------------------- plots --

if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$OUT'; size0='${SIZES%% *}'" bench/plot.gp 2>&1 | grep -v '^$' >&2 ||
		true
	for f in "$OUT"/*.png; do [ -e "$f" ] && log "plot $f"; done
else
	log "gnuplot not installed: no plots"
fi

# ------------------------------------------------------------ netpipe --

# The NetPIPE-style stage (bench/netpipe.sh, its own namespaces): Portals
# puts against kernel UDP and the raw AF_XDP loop, 8 B .. 4 MiB, results in
# $OUT/netpipe*.  About 3 minutes; NETPIPE=0 skips it.
if [ "${NETPIPE:-1}" = 1 ]; then
	log "netpipe stage: bench/netpipe.sh (NETPIPE=0 skips it)"
	OUT="$OUT" bench/netpipe.sh || FAILED="$FAILED netpipe"
	# the same with the receive work in a kernel thread (threaded NAPI) and
	# a queue on the veth (so a full ring pushes back instead of dropping):
	# closer to a NIC, whose receive work runs on the core its interrupt
	# lands on, not in the sender's system call
	log "netpipe stage, threaded NAPI: results in $OUT/netpipe_threaded"
	NAPI_THREADED=1 VETH_QDISC=pfifo OUT="$OUT/netpipe_threaded" bench/netpipe.sh ||
		FAILED="$FAILED netpipe_threaded"
fi

# ------------------------------------------------------------ samples --
# Every sample's benchmark against its host-only version (samples/*/bench.sh,
# results in $OUT/<sample>*); SAMPLES=0 skips them.
if [ "${SAMPLES:-1}" = 1 ]; then
	for b in samples/*/bench.sh; do
		[ -e "$b" ] || continue
		log "sample stage: $b"
		OUT="$OUT" "$b" || FAILED="$FAILED $(basename "$(dirname "$b")")"
	done
fi

[ -n "$FAILED" ] && log "FAILED:$FAILED"
[ -z "$FAILED" ]
