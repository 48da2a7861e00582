#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench/rtpath.sh: per-packet cost of the runtime + the paper's streaming
# ping-pong handler against the hand-written XDP reflector, in
# BPF_PROG_RUN, for this tree and (optionally) another built tree, in one
# run: every repetition measures empty, xdp_reflector, this tree's
# spin_stream and OLD's spin_stream one after the other, so the ratios
# spin_stream / xdp_reflector are same-run ratios.
#
#   sudo bench/rtpath.sh [OLD_TREE]
#   REPS=5 RUNS=11 REPEAT=1000000 CPU=1 PSIZE=64 AUTH=1 bench/rtpath.sh ...
#
# With AUTH=1 (the default) every repetition also times this tree's
# spin_stream attached with an auth key, the pings tagged with it
# (spin_stream_auth): the SipHash-2-4 check of the ping and the tag of the
# pong on top of the same path.
#
# The spin runtime is set up as bench/run.sh does (rank 1, pingpong_stream,
# a match-all entry, rank 0 the client), except that rank 1 is the server
# itself with its own addresses (peer check: run.sh's rank 1 at the
# client's address makes every repetition after the first a bad_peer
# drop), so that repeat mode's own output is a valid ping again and every
# repetition ends in XDP_TX; each tree's runtime is attached with that tree's
# spinctl, and all programs are timed by this tree's bench/progrun
# (repeat mode, see bench/README.md), pinned to CPU $CPU.
#
# With DEPOSIT=1 (the default) every repetition also times, in fresh mode
# (FRESH calls on new pings per run, progrun --fresh), an entry without
# handler (a 64-byte put deposited into the host window, no events): an
# unreliable put (deposit) and a reliable one (deposit_rel, SPIN_F_REL: its
# outcome goes into the duplicate window), for this tree and OLD, against
# empty_fresh and xdp_reflector_fresh of the same repetition (fresh mode
# includes the kernel's clock reads: compare within a mode only).
#
# Writes bench/results/rtpath.csv (progrun's rows, label,size,mode,n,runs,
# ns_median,ns_min,ns_max,action, plus the repetition), rtpath_summary.txt
# (per label the median over repetitions of progrun's median, min-max; the
# ratio to the reflector per repetition, median and min-max) and
# rtpath.png.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../selftests/lib/netns.sh
. "$TOP/selftests/lib/netns.sh"
OLD=${1:-}
REPS=${REPS:-5}
RUNS=${RUNS:-11}
REPEAT=${REPEAT:-1000000}
CPU=${CPU:-1}
PSIZE=${PSIZE:-64}
AUTH=${AUTH:-1}
DEPOSIT=${DEPOSIT:-1}
FRESH=${FRESH:-100000}
AUTH_KEY=0123456789abcdeffedcba9876543210
RES=${OUT:-$TOP/bench/results}
CSV=$RES/rtpath.csv

[ "$(id -u)" = 0 ] || { echo "rtpath: run as root (namespaces, XDP)" >&2; exit 1; }
for b in bench/progrun bench/reflector.bpf.o selftests/progs/xdp_pass.bpf.o tools/spinctl \
	 samples/pingpong/pingpong_stream.bpf.o; do
	[ -e "$TOP/$b" ] || { echo "rtpath: $TOP/$b missing: run 'make' first" >&2; exit 1; }
	[ -z "$OLD" ] || [ -e "$OLD/$b" ] || { echo "rtpath: $OLD/$b missing: build $OLD first" >&2; exit 1; }
done
trap spin_ns_cleanup EXIT
spin_bpffs_ensure || { echo "rtpath: no bpffs" >&2; exit 1; }
NS_C=${SPIN_NS_TAG}_rpc
NS_S=${SPIN_NS_TAG}_rps
IP_C=10.77.64.1
IP_S=10.77.64.2
spin_ns_pair "$NS_C" veth0 "$IP_C" "$NS_S" veth0 "$IP_S" || exit 1
MAC_C=$(spin_ns_mac "$NS_C" veth0)
MAC_S=$(spin_ns_mac "$NS_S" veth0)
mkdir -p "$RES"
echo "label,size,mode,n,runs,ns_median,ns_min,ns_max,action,rep" >"$CSV"
TMP=$(mktemp)
trap 'rm -f "$TMP"; spin_ns_cleanup' EXIT

progrun() {	# progrun LABEL REP ARGS...
	local label=$1 rep=$2
	shift 2
	: >"$TMP"
	nsx "$NS_S" taskset -c "$CPU" "$TOP/bench/progrun" "$@" --size "$PSIZE" --repeat "$REPEAT" \
		--runs "$RUNS" --src-ip "$IP_C" --dst-ip "$IP_S" --src-mac "$MAC_C" --dst-mac "$MAC_S" \
		--csv "$TMP" --label "$label" --quiet >/dev/null || { echo "rtpath: progrun $label failed" >&2; return 1; }
	grep -v '^label,' "$TMP" | sed "s/\$/,$rep/" >>"$CSV"
}

spin_stream() {	# spin_stream TREE LABEL REP [AUTH_KEY]: attach TREE's runtime, time it, detach
	local tree=$1 ino key=${4:-}
	local ctl="$tree/tools/spinctl"
	if ! { nsx "$NS_S" "$ctl" attach veth0 rank 1 ${key:+auth-key "$key"} &&
	       nsx "$NS_S" "$ctl" handler load veth0 "$tree/samples/pingpong/pingpong_stream.bpf.o" name pp &&
	       nsx "$NS_S" "$ctl" pt alloc veth0 0 &&
	       nsx "$NS_S" "$ctl" me append veth0 pt 0 bits 0 ignore 0xffffffffffffffff handler pp no-events &&
	       nsx "$NS_S" "$ctl" peer add veth0 0 "$IP_C" mac "$MAC_C" &&
	       nsx "$NS_S" "$ctl" peer add veth0 1 "$IP_S" mac "$MAC_S"; } >/dev/null; then
		echo "rtpath: cannot set up $tree's runtime" >&2
		nsx "$NS_S" "$ctl" detach veth0 >/dev/null 2>&1
		return 1
	fi
	ino=$(stat -L -c %i "/var/run/netns/$NS_S")
	progrun "$2" "$3" --pinned "/sys/fs/bpf/spin/ns$ino/veth0/prog_rx" ${key:+--auth-key "$key"}
	nsx "$NS_S" "$ctl" detach veth0 >/dev/null
}

spin_deposit() {	# spin_deposit TREE LABEL REP: TREE's runtime, a deposit entry, reliable and not
	local tree=$1 ino
	local ctl="$tree/tools/spinctl"
	if ! { nsx "$NS_S" "$ctl" attach veth0 rank 1 &&
	       nsx "$NS_S" "$ctl" pt alloc veth0 0 &&
	       nsx "$NS_S" "$ctl" me append veth0 pt 0 bits 0 ignore 0xffffffffffffffff len 4096 no-events &&
	       nsx "$NS_S" "$ctl" peer add veth0 0 "$IP_C" mac "$MAC_C" &&
	       nsx "$NS_S" "$ctl" peer add veth0 1 "$IP_S" mac "$MAC_S"; } >/dev/null; then
		echo "rtpath: cannot set up $tree's runtime" >&2
		nsx "$NS_S" "$ctl" detach veth0 >/dev/null 2>&1
		return 1
	fi
	ino=$(stat -L -c %i "/var/run/netns/$NS_S")
	progrun "$2" "$3" --pinned "/sys/fs/bpf/spin/ns$ino/veth0/prog_rx" --fresh "$FRESH" &&
	progrun "${2/deposit/deposit_rel}" "$3" --pinned "/sys/fs/bpf/spin/ns$ino/veth0/prog_rx" \
		--fresh "$FRESH" --flags 0x8 || return 1
	nsx "$NS_S" "$ctl" detach veth0 >/dev/null
}

for rep in $(seq "$REPS"); do
	echo "rtpath: repetition $rep/$REPS" >&2
	progrun empty "$rep" --obj "$TOP/selftests/progs/xdp_pass.bpf.o" --prog xdp_pass || exit 1
	progrun xdp_reflector "$rep" --obj "$TOP/bench/reflector.bpf.o" --prog xdp_reflector || exit 1
	spin_stream "$TOP" spin_stream "$rep" || exit 1
	if [ -n "$OLD" ]; then
		spin_stream "$OLD" spin_stream_old "$rep" || exit 1
	fi
	if [ "$AUTH" = 1 ]; then
		spin_stream "$TOP" spin_stream_auth "$rep" "$AUTH_KEY" || exit 1
	fi
	if [ "$DEPOSIT" = 1 ]; then
		progrun empty_fresh "$rep" --obj "$TOP/selftests/progs/xdp_pass.bpf.o" --prog xdp_pass \
			--fresh "$FRESH" || exit 1
		progrun xdp_reflector_fresh "$rep" --obj "$TOP/bench/reflector.bpf.o" --prog xdp_reflector \
			--fresh "$FRESH" || exit 1
		spin_deposit "$TOP" deposit "$rep" || exit 1
		if [ -n "$OLD" ]; then
			spin_deposit "$OLD" deposit_old "$rep" || exit 1
		fi
	fi
done

python3 - "$CSV" "$OLD" >"$RES/rtpath_summary.txt" <<'EOF'
import csv, statistics as S, sys
rows = list(csv.DictReader(open(sys.argv[1])))
labels = []
for r in rows:
    if r["label"] not in labels:
        labels.append(r["label"])
ns = {l: {int(r["rep"]): float(r["ns_median"]) for r in rows if r["label"] == l} for l in labels}
reps = sorted(ns["xdp_reflector"])
mode = {r["label"]: r["mode"] for r in rows}
print("BPF_PROG_RUN, %s-byte ping, %d repetitions (each: progrun's median of its runs)"
      % (rows[0]["size"], len(reps)))
if sys.argv[2]:
    print("*_old: the runtime (and ping-pong) of %s" % sys.argv[2])
print("%-20s %-6s %8s %14s %18s %18s" % ("label", "mode", "ns", "min-max", "x reflector",
                                          "x reflector, net"))
for l in labels:
    sfx = "_fresh" if mode[l] == "fresh" else ""
    ref, emp = ns["xdp_reflector" + sfx], ns["empty" + sfx]
    v = [ns[l][k] for k in reps]
    g = [ns[l][k] / ref[k] for k in reps]
    n = [(ns[l][k] - emp[k]) / max(ref[k] - emp[k], 1) for k in reps]
    print("%-20s %-6s %8.1f %6.1f-%-7.1f %6.2f (%.2f-%.2f) %6.2f (%.2f-%.2f)" %
          (l, mode[l], S.median(v), min(v), max(v), S.median(g), min(g), max(g),
           S.median(n), min(n), max(n)))
print("(x reflector: per repetition ns / the reflector's ns of the same repetition and mode,"
      " median and min-max over repetitions; net: both minus the empty program's ns of that mode)")
EOF
cat "$RES/rtpath_summary.txt"
gnuplot -e "csv='$CSV'; out='$RES/rtpath.png'" "$TOP/bench/rtpath.gp" 2>/dev/null ||
	echo "rtpath: no plot (gnuplot failed or missing)" >&2
