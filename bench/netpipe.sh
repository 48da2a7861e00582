#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/netpipe.sh - NetPIPE-style latency, bandwidth and 8-byte message
# rate of the spin Portals library against host baselines (root).
#
# Two namespaces joined by a veth pair (veth0 10.77.91.1 <-> veth0
# 10.77.91.2), one process per namespace (rank 0 measures, rank 1 echoes),
# the same transfers over every transport in one run.  With LOSS_PPM set
# the two veth0 are joined through a relay namespace instead
# (spin_ns_impair, selftests/impair) that drops that share of the frames in
# each direction.  Transports:
#
#   spin      bench/netpipe_ptl: Portals 4 (PtlPut into a persistent ME in
#             the host window, deposited by the XDP runtime; PtlCTWait);
#             puts are reliable (retransmitted, docs/reliable.md)
#   spin_norel  the same with SPIN_PTL_RELIABLE=0 in both ranks: the
#             library without reliable delivery (a lost packet loses the
#             message: the size is marked failed)
#   spin_nocc  spin with SPIN_PTL_CC=0: reliable, without the congestion
#             window (only the 1024-message send window)
#   spin_e1k, spin_e100k  spin with 1,000 / 100,000 entries on each rank's
#             portal (netpipe_ptl --entries: the others match nothing)
#   udp       bench/netpipe --transport udp: 1472-byte datagrams,
#             sendmmsg/recvmmsg, blocking receives
#   udp_gso   the same sent with UDP GSO (UDP_SEGMENT)
#   udp_gso_gro  GSO sender, UDP_GRO receiver (whole super-datagrams
#             cross the veth and reach the socket unsegmented)
#   udp_busy  udp with busy-polling receivers
#   xsk       bench/netpipe --transport xsk: libspin's raw AF_XDP path
#             (spin_xsk_send / spin_xsk_recv_msg on an SPIN_ME_XSK entry)
#   xsk_busy  xsk with busy-polling receivers
#   tcp       bench/netpipe --transport tcp: one kernel TCP connection
#             (TCP_NODELAY, 4 MiB socket buffers), the host stack's own
#             reliable delivery; tcp_busy with busy-polling receivers
#
# Results in $OUT (bench/results): netpipe.csv, netpipe_rate.csv,
# netpipe_summary.txt (ratios against the targets), netpipe.png, and
# netpipe_logs/ (each rank's stderr).  See bench/README.md, "NetPIPE".
#
# Knobs (environment):
#   TRANSPORTS="spin udp udp_gso udp_gso_gro udp_busy xsk"   which, in this order
#   REPS=3                        repetitions, transports round-robin; the CSVs
#                                 hold the per-column medians over them
#   MIN=8 MAX=4m PERTURB=0        sizes MIN..MAX in powers of 2 (+-PERTURB)
#   PP_COUNT=10000 PP_TIME=0.25   ping-pong rounds per size: count and time caps
#   ST_TIME=0.3 ST_ITERS=30 ST_BYTES=8m ST_KMAX=512   stream caps per size
#   RATE=1 RATE_COUNT=100000 RATE_ITERS=5              8-byte message rate
#   BUDGET=1000000 SETTLE_MS=0    sizes > 1376 B: at most BUDGET messages per
#                                 phase (all transports), SETTLE_MS of quiet
#                                 before each phase (transports on the spin
#                                 runtime); not needed since the runtime frees
#                                 a completed message at once (bench/README.md)
#   NAPI_THREADED=0               1: threaded NAPI on both veth ends (receive
#                                 work in a kernel thread, as on a NIC whose
#                                 interrupts land on another core)
#   RANK0_CPU=1 RANK1_CPU=0       taskset pinning of rank 0 / rank 1 ('' : none)
#   TR_TIMEOUT=600                seconds before a transport run is killed
#   TCP_TIMEOUT_MS=10000          tcp: no byte for this long fails a phase (the
#                                 others: 1000 ms).  TCP loses nothing, it only
#                                 stalls: on a lossy link its retransmission
#                                 timeouts (200 ms, doubled per try) can add
#                                 up to more than a second
#   LOSS_PPM=                     frames dropped per million in each direction
#                                 by the relay (0 .. 1000000); empty: the plain
#                                 veth pair, no relay (0: the relay, no loss)
#   OUT=bench/results
#
# Quick run: MAX=64k PP_TIME=0.05 ST_TIME=0.05 RATE_COUNT=20000 bench/netpipe.sh
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
. selftests/lib/netns.sh

TRANSPORTS=${TRANSPORTS:-"spin udp udp_gso udp_gso_gro udp_busy xsk"}
REPS=${REPS:-3}
MIN=${MIN:-8}
MAX=${MAX:-4m}
PERTURB=${PERTURB:-0}
PP_COUNT=${PP_COUNT:-10000}
PP_TIME=${PP_TIME:-0.25}
ST_TIME=${ST_TIME:-0.3}
ST_ITERS=${ST_ITERS:-30}
ST_BYTES=${ST_BYTES:-8m}
ST_KMAX=${ST_KMAX:-512}
RATE=${RATE:-1}
RATE_COUNT=${RATE_COUNT:-100000}
RATE_ITERS=${RATE_ITERS:-5}
BUDGET=${BUDGET:-1000000}
SETTLE_MS=${SETTLE_MS:-0}
RANK0_CPU=${RANK0_CPU-1}
RANK1_CPU=${RANK1_CPU-0}
TR_TIMEOUT=${TR_TIMEOUT:-600}
TCP_TIMEOUT_MS=${TCP_TIMEOUT_MS:-10000}
LOSS_PPM=${LOSS_PPM:-}
OUT=${OUT:-bench/results}

NS_A=spinnp-$$-a
NS_B=spinnp-$$-b
NS_M=spinnp-$$-m		# the relay (LOSS_PPM set)
PINDIR=/sys/fs/bpf/spinnp-$$	# its pins (selftests/impair)
IF=veth0
IP_A=10.77.91.1
IP_B=10.77.91.2
SPINCTL=$ROOT/tools/spinctl
TMPD=
R1_PID=

log() { printf 'netpipe: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

cleanup() {
	if [ -n "$R1_PID" ]; then
		kill "$R1_PID" 2>/dev/null
		wait "$R1_PID" 2>/dev/null
		R1_PID=
	fi
	spin_ns_cleanup
	[ -n "$LOSS_PPM" ] && rm -rf "$PINDIR"
	[ -n "$TMPD" ] && rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP)"
[ -x bench/netpipe ] || die "bench/netpipe missing: run 'make' first"
if [ ! -x bench/netpipe_ptl ]; then
	for l in spin spin_md_host spin_norel spin_nocc; do
		case " $TRANSPORTS " in *" $l "*)
			log "SKIP $l: bench/netpipe_ptl not built (no Portals library?)"
			TRANSPORTS=$(echo " $TRANSPORTS " | sed "s/ $l / /") ;;
		esac
	done
fi
if [ -n "$LOSS_PPM" ]; then
	case $LOSS_PPM in *[!0-9]*) die "LOSS_PPM=$LOSS_PPM: parts per million, 0 .. 1000000" ;; esac
	[ "$LOSS_PPM" -le 1000000 ] || die "LOSS_PPM=$LOSS_PPM: at most 1000000"
	[ -x selftests/impair ] || die "selftests/impair missing: run 'make' first"
fi
command -v taskset >/dev/null || { RANK0_CPU=; RANK1_CPU=; }
[ "$(nproc)" -ge 2 ] || { RANK0_CPU=; RANK1_CPU=; }
spin_bpffs_ensure || die "cannot mount bpffs on /sys/fs/bpf"

mkdir -p "$OUT" "$OUT/netpipe_logs"
CSV=$OUT/netpipe.csv
RCSV=$OUT/netpipe_rate.csv
SUM=$OUT/netpipe_summary.txt
rm -f "$CSV" "$RCSV" "$SUM" "$OUT/netpipe.png" "$OUT"/netpipe_logs/*.log "$OUT/netpipe_raw.csv" \
	"$OUT/netpipe_rate_raw.csv"
TMPD=$(mktemp -d /tmp/netpipe.XXXXXX)

if [ -n "$LOSS_PPM" ]; then
	# NS_A's veth0 and NS_B's veth0 (the same names, addresses and
	# settings as spin_ns_pair gives) on one link through the relay NS_M,
	# which drops LOSS_PPM of the IPv4 frames arriving at either end
	[ "$IF" = veth0 ] || die "the impairing link names the interfaces veth0"
	spin_ns_impair "$NS_A" "$IP_A" "$NS_B" "$IP_B" "$NS_M" "$PINDIR" >/dev/null ||
		die "cannot create the impairing link"
	for end in a b; do
		nsx "$NS_M" selftests/impair set "$PINDIR" "$end" drop "$LOSS_PPM" ||
			die "cannot set the loss of the relay's end $end"
	done
else
	spin_ns_pair "$NS_A" "$IF" "$IP_A" "$NS_B" "$IF" "$IP_B" || die "cannot create the veth pair"
fi
if [ "${NAPI_THREADED:-0}" = 1 ]; then
	# receive processing in a kernel thread (on whichever CPU is free), as
	# on a NIC whose interrupts land on another core, instead of in the
	# sender's softirq; the same for every transport
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" sh -c "echo 1 > /sys/class/net/$IF/threaded" ||
			die "cannot switch $ns/$IF to threaded NAPI"
		# a queue, so a full veth ring stops the sender instead of
		# dropping (veth is noqueue by default)
		[ -n "${VETH_QDISC:-}" ] && ip -n "$ns" link set dev "$IF" txqueuelen 1000 &&
			tc -n "$ns" qdisc replace dev "$IF" root "$VETH_QDISC"
	done
fi
MAC_A=$(spin_ns_mac "$NS_A" "$IF")
MAC_B=$(spin_ns_mac "$NS_B" "$IF")
HOSTS=$TMPD/hostfile
printf '%s mac=%s\n%s mac=%s\n' "$IP_A" "$MAC_A" "$IP_B" "$MAC_B" >"$HOSTS"
log "rank 0 $NS_A/$IF $IP_A (CPU ${RANK0_CPU:-any})  <->  rank 1 $NS_B/$IF $IP_B (CPU ${RANK1_CPU:-any})${LOSS_PPM:+, through $NS_M dropping $LOSS_PPM ppm each way}"

COMMON=(--min "$MIN" --max "$MAX" --perturb "$PERTURB" --pp-count "$PP_COUNT"
	--pp-time "$PP_TIME" --st-time "$ST_TIME" --st-iters "$ST_ITERS" --st-bytes "$ST_BYTES"
	--st-kmax "$ST_KMAX" --budget "$BUDGET" --rate-count "$RATE_COUNT" --rate-iters "$RATE_ITERS")
[ "$RATE" = 1 ] && COMMON+=(--rate)

# Interface state per transport: the UDP baselines get what a host stack
# has on a real NIC (checksum offload, no XDP program); the spin transports
# get the namespaces' default (tx checksum off, see netns.sh) and attach
# the runtime themselves (PtlNIInit, spin_attach), detached afterwards.
iface_udp() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		ip -n "$ns" link set dev "$IF" xdp off 2>/dev/null
		nsx "$ns" ethtool -K "$IF" tx on >/dev/null 2>&1
	done
}
iface_spin() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		nsx "$ns" ethtool -K "$IF" tx off >/dev/null 2>&1
	done
}
detach_all() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		[ -x "$SPINCTL" ] && nsx "$ns" "$SPINCTL" detach "$IF" >/dev/null 2>&1
		ip -n "$ns" link set dev "$IF" xdp off 2>/dev/null
	done
}

# the relay's counters (LOSS_PPM set): impair_stats FILE appends them
impair_reset() {
	[ -n "$LOSS_PPM" ] || return 0
	nsx "$NS_M" selftests/impair reset "$PINDIR" a >/dev/null 2>&1
	nsx "$NS_M" selftests/impair reset "$PINDIR" b >/dev/null 2>&1
}
impair_stats() {
	[ -n "$LOSS_PPM" ] || return 0
	{ nsx "$NS_M" selftests/impair stats "$PINDIR" a
	  nsx "$NS_M" selftests/impair stats "$PINDIR" b; } >>"$1" 2>&1
}

# rank NS RANK CPU CMD...: the command in NS with the job's environment and
# RANK_ENV (timeout --foreground: stays in our process group, so Ctrl-C
# reaches it)
RANK_ENV=()
rank() {
	local ns=$1 r=$2 cpu=$3; shift 3
	local pin=()
	[ -n "$cpu" ] && pin=(taskset -c "$cpu")
	nsenter --net="/var/run/netns/$ns" -- env SPIN_IFACE="$IF" SPIN_HOSTFILE="$HOSTS" \
		SPIN_RANK="$r" "${RANK_ENV[@]}" timeout --foreground -k 5 "$TR_TIMEOUT" "${pin[@]}" "$@"
}

FAILED=
LOSSES=
run_transport() {	# run_transport LABEL REP
	local l=$1 r=$2 cmd rc settle=$SETTLE_MS
	RANK_ENV=()
	case $l in
	spin)		cmd=(bench/netpipe_ptl) ;;
	spin_norel)	cmd=(bench/netpipe_ptl); RANK_ENV=(SPIN_PTL_RELIABLE=0) ;;
	spin_nocc)	cmd=(bench/netpipe_ptl); RANK_ENV=(SPIN_PTL_CC=0) ;;
	spin_md_host)	cmd=(bench/netpipe_ptl --md-host) ;;
	spin_e1k)	cmd=(bench/netpipe_ptl --entries 1000) ;;
	spin_e100k)	cmd=(bench/netpipe_ptl --entries 100000) ;;
	udp)		cmd=(bench/netpipe --transport udp) ;;
	udp_gso)	cmd=(bench/netpipe --transport udp --gso) ;;
	udp_gro)	cmd=(bench/netpipe --transport udp --gro) ;;
	udp_gso_gro)	cmd=(bench/netpipe --transport udp --gso --gro) ;;
	udp_busy)	cmd=(bench/netpipe --transport udp --busy) ;;
	tcp)		cmd=(bench/netpipe --transport tcp --timeout-ms "$TCP_TIMEOUT_MS") ;;
	tcp_busy)	cmd=(bench/netpipe --transport tcp --busy --timeout-ms "$TCP_TIMEOUT_MS") ;;
	xsk)		cmd=(bench/netpipe --transport xsk) ;;
	xsk_busy)	cmd=(bench/netpipe --transport xsk --busy) ;;
	*)		log "unknown transport $l"; FAILED="$FAILED $l"; return ;;
	esac
	case $l in udp*|tcp*) iface_udp; settle=0 ;; *) iface_spin ;; esac
	log "rep $r/$REPS $l: ${RANK_ENV[*]}${RANK_ENV[*]:+ }${cmd[*]}"
	impair_reset
	rank "$NS_B" 1 "$RANK1_CPU" "$ROOT/${cmd[0]}" "${cmd[@]:1}" "${COMMON[@]}" --label "$l" \
		--settle-ms "$settle" >"$OUT/netpipe_logs/$l.rep$r.rank1.log" 2>&1 &
	R1_PID=$!
	rank "$NS_A" 0 "$RANK0_CPU" "$ROOT/${cmd[0]}" "${cmd[@]:1}" "${COMMON[@]}" --label "$l" \
		--settle-ms "$settle" --csv "$TMPD/raw.csv" --rate-csv "$TMPD/raw_rate.csv" \
		2>"$OUT/netpipe_logs/$l.rep$r.rank0.log"
	rc=$?
	if [ $rc = 3 ]; then
		# it ran to the end; some messages were lost (the CSV's failed column)
		log "$l: messages lost, see $OUT/netpipe_logs/$l.rep$r.rank0.log"
		LOSSES="$LOSSES $l/rep$r"
		rc=0
	elif [ $rc != 0 ]; then
		log "$l: rank 0 failed (exit $rc), see $OUT/netpipe_logs/$l.rep$r.rank0.log"
		tail -n 5 "$OUT/netpipe_logs/$l.rep$r.rank0.log" >&2
		FAILED="$FAILED $l/rep$r"
		kill "$R1_PID" 2>/dev/null
	fi
	wait "$R1_PID" 2>/dev/null || [ $rc != 0 ] || {
		log "$l: rank 1 failed, see $OUT/netpipe_logs/$l.rep$r.rank1.log"
		FAILED="$FAILED $l/rep$r/rank1"
	}
	R1_PID=
	RANK_ENV=()
	impair_stats "$OUT/netpipe_logs/$l.rep$r.impair.log"
	detach_all
}

T0=$(date +%s)
for r in $(seq "$REPS"); do
	for l in $TRANSPORTS; do
		run_transport "$l" "$r"
	done
done
iface_spin
T1=$(date +%s)

# medians over the repetitions, per transport and size, column by column
# (the failures are summed; a repetition without a value, nan, is left out
# of that column's median); rows in the order they were first measured
aggregate() {	# aggregate RAW OUT
	[ -s "$1" ] || return 0
	awk -F, 'NR == 1 { print; next } $1 == "transport" { next }
	{
		k = $1 FS $2
		if (!(k in n)) { order[++nk] = k; nf[k] = NF }
		n[k]++
		for (c = 3; c <= NF; c++) v[k, c, n[k]] = $c
	}
	function med(k, c,   m, i, j, t, a) {
		m = 0
		for (i = 1; i <= n[k]; i++)
			if (v[k, c, i] ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) a[++m] = v[k, c, i] + 0
		if (!m) return "nan"
		for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		for (i = 1; i <= nk; i++) {
			k = order[i]; line = k
			for (c = 3; c <= nf[k]; c++) {
				if (c == nf[k]) { s = 0; for (j = 1; j <= n[k]; j++) s += v[k, c, j]; line = line FS s }
				else line = line FS med(k, c)
			}
			print line
		}
	}' "$1" >"$2"
}
aggregate "$TMPD/raw.csv" "$CSV"
aggregate "$TMPD/raw_rate.csv" "$RCSV"
[ -s "$TMPD/raw.csv" ] && cp "$TMPD/raw.csv" "$OUT/netpipe_raw.csv"
[ -s "$TMPD/raw_rate.csv" ] && cp "$TMPD/raw_rate.csv" "$OUT/netpipe_rate_raw.csv"

# ------------------------------------------------------------ summary --

# v TRANSPORT SIZE COLUMN: a value from netpipe.csv
v() { awk -F, -v t="$1" -v s="$2" -v c="$3" 'NR > 1 && $1 == t && $2 == s { print $c; exit }' "$CSV"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { num = "^[-+]?[0-9]*[.]?[0-9]+([eE][-+]?[0-9]+)?$"
	if (a ~ num && b ~ num && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'; }
# verdict VALUE OP TARGET
verdict() { awk -v a="$1" -v t="$3" -v op="$2" 'BEGIN { if (a == "n/a" || a == "") { print "n/a"; exit }
	ok = (op == ">=") ? (a + 0 >= t) : (a + 0 <= t); print (ok ? "MET" : "NOT MET") }'; }

have() { [ -s "$CSV" ] && awk -F, -v t="$1" 'NR > 1 && $1 == t { f = 1 } END { exit !f }' "$CSV"; }

{
	echo "spin NetPIPE benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), kernel $(uname -r), $(nproc) CPUs, $((T1 - T0)) s"
	echo "library: lib/ at $(git log -1 --format='%h %s' -- lib/ 2>/dev/null | cut -c1-70)$(git diff --quiet HEAD -- lib/ include/ 2>/dev/null || echo ' + uncommitted changes')"
	if [ -n "$LOSS_PPM" ]; then
		echo "link: LOSS_PPM=$LOSS_PPM: two veth pairs through a relay namespace (selftests/impair) dropping $LOSS_PPM ppm ($(awk -v p="$LOSS_PPM" 'BEGIN { printf "%g", p / 1e4 }')%) of the frames in each direction (MTU 1500)"
		awk '{ f[$1] += $3; d[$1] += $5 } END { for (e in f) printf "  relay end %s (frames %s): %d frames, %d dropped (%.3f%%)\n", e, e == "a" ? "from rank 0" : "from rank 1", f[e], d[e], f[e] ? 100 * d[e] / f[e] : 0 }' \
			"$OUT"/netpipe_logs/*.impair.log 2>/dev/null | sort
	else
		echo "link: LOSS_PPM unset: one veth pair between the two namespaces, no relay, no loss (MTU 1500)"
	fi
	echo "rank 0 (measures) on CPU ${RANK0_CPU:-any}, rank 1 (echoes) on CPU ${RANK1_CPU:-any} (taskset)"
	echo "medians over $REPS repetitions (transports round-robin; per-run rows in netpipe_raw.csv)"
	echo "per size: ping-pong until $PP_COUNT rounds or ${PP_TIME}s (latency = half round trip), stream of K = clamp($ST_BYTES / size, 2, $ST_KMAX) messages until ${ST_TIME}s (3..$ST_ITERS iterations, median MB/s, MB = 10^6 B)"
	echo
	if [ -s "$CSV" ]; then
		printf '%-12s %8s %10s %10s %10s %10s %11s  %s\n' transport size p50_us mean_us \
			min_us bw_MBps bw_max_MBps failed
		tail -n +2 "$CSV" | while IFS=, read -r t s p50 mean bw mn _ _ bmax _ _ _ f; do
			printf '%-12s %8s %10.2f %10.2f %10.2f %10.1f %11.1f  %s\n' "$t" "$s" "$p50" \
				"$mean" "$mn" "$bw" "$bmax" "$f"
		done
	fi
	if [ -s "$RCSV" ]; then
		echo
		echo "8-byte message rate (streams of $RATE_COUNT, median of $RATE_ITERS, median over reps):"
		tail -n +2 "$RCSV" | while IFS=, read -r t _ _ _ med mn mx f; do
			printf '  %-12s %8.3f M msgs/s  (min %.3f, max %.3f)%s\n' "$t" "$med" "$mn" "$mx" \
				"$([ "$f" != 0 ] && echo "  $f FAILED streams")"
		done
	fi
	echo
	echo "Ratios (spin = the Portals library; all measured in this run):"
	if have spin; then
		for base in udp udp_gso udp_gso_gro udp_gro udp_busy tcp tcp_busy spin_norel xsk xsk_busy; do
			have "$base" || continue
			echo "  spin vs $base:"
			l8=$(ratio "$(v spin 8 3)" "$(v "$base" 8 3)")
			printf '    8-byte latency p50  %6s x' "$l8"
			[ "$base" = udp ] && printf '   (target <= 0.6x: %s)' "$(verdict "$l8" "<=" 0.6)"
			echo
			# bandwidth for sizes >= 64 KiB: per size, then min and geometric mean
			rs=
			while read -r s; do
				r=$(ratio "$(v spin "$s" 5)" "$(v "$base" "$s" 5)")
				[ "$r" = n/a ] || rs="$rs $s:$r"
			done < <(awk -F, -v t=spin 'NR > 1 && $1 == t && $2 >= 65536 { print $2 }' "$CSV")
			if [ -n "$rs" ]; then
				mn=$(echo "$rs" | tr ' ' '\n' | grep . | cut -d: -f2 | sort -g | head -1)
				gm=$(echo "$rs" | tr ' ' '\n' | grep . | cut -d: -f2 |
					awk '{ s += log($1); n++ } END { if (n) printf "%.2f", exp(s / n) }')
				printf '    bandwidth >= 64 KiB  min %s x, geomean %s x' "$mn" "$gm"
				[ "$base" = udp ] && printf '   (target >= 2x: %s for all sizes)' \
					"$(verdict "$mn" ">=" 2)"
				echo
				echo "      per size:${rs//:/=}"
			fi
			if [ -s "$RCSV" ]; then
				rr=$(ratio "$(awk -F, '$1 == "spin" { print $5 }' "$RCSV")" \
					"$(awk -F, -v t="$base" '$1 == t { print $5 }' "$RCSV")")
				printf '    8-byte message rate  %6s x\n' "$rr"
			fi
		done
	else
		echo "  no spin results (see $OUT/netpipe_logs/spin.rep*.rank0.log)"
	fi
	[ -n "$LOSSES" ] && { echo; echo "lost messages (timeouts; 'failed' column, rank logs):$LOSSES"; }
	[ -n "$FAILED" ] && { echo; echo "FAILED:$FAILED"; }
	grep -h "netpipe\[" "$OUT"/netpipe_logs/*.log 2>/dev/null | grep -E "failed after|failed:|FAIL" | head -20 |
		sed 's/^/  log: /'
} | tee "$SUM"

# --------------------------------------------------------------- plot --

if command -v gnuplot >/dev/null && [ -s "$CSV" ]; then
	gnuplot -e "dir='$OUT'" bench/netpipe.gp 2>&1 | grep -v '^$' >&2 || true
	[ -e "$OUT/netpipe.png" ] && log "plot $OUT/netpipe.png"
else
	log "gnuplot not installed or no results: no plot"
fi

[ -z "$FAILED" ]
