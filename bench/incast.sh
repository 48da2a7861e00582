#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Incast with and without the congestion window (docs/reliable.md): 8 and
# 16 senders put 64 KiB messages into one receiver through a bridge whose
# port to the receiver is a bottleneck with a shallow queue (token bucket:
# it drops what does not fit, as a switch port does).  Every configuration
# runs with the congestion window (SPIN_PTL_CC=1, the default) and without
# it (SPIN_PTL_CC=0: only the 1024-message send window), alternating, in
# the same run; each is selftests/ptl_test rel_incast.
#
#   bench/incast.sh      (root)
#
# Knobs: REPS=3 SENDERS="8 16" SIZE=65536 BYTES=104857600 (per run, all
# senders together) RATE=400mbit QUEUE=256k (the bottleneck) OUT=bench/results
#
# Per run: the aggregate rate at the receiver (MB/s, over the messages that
# arrived), messages lost (the receiver gave them up: no packet for 1 s),
# each message's latency from the PtlPut call to its send event (the
# target has it) over all senders (p50, p99), the bottleneck's drops and
# the packets the senders sent again.  Writes OUT/incast.csv,
# OUT/incast_summary.txt (medians over REPS with min-max, and CC/no-CC
# ratios) and OUT/incast.png.  Namespaces spinic<pid>-*, 10.78.1.0/24,
# removed on exit.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. selftests/lib/ptl_topo.sh

REPS=${REPS:-3}
SENDERS=${SENDERS:-"8 16"}
SIZE=${SIZE:-65536}
BYTES=${BYTES:-104857600}
RATE=${RATE:-400mbit}
QUEUE=${QUEUE:-256k}
OUT=${OUT:-bench/results}
TAG=spinic$$
BIN=$TOP/selftests/ptl_test
WORK=$(mktemp -d /tmp/spin-incast.XXXXXX)
CSV=$OUT/incast.csv

cleanup() { spin_ns_cleanup; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || { echo "incast: run as root" >&2; exit 3; }
[ -x "$BIN" ] || { echo "incast: $BIN missing (run make first)" >&2; exit 1; }
spin_bpffs_ensure || { echo "incast: no bpffs at /sys/fs/bpf" >&2; exit 4; }
max=0
for n in $SENDERS; do [ "$n" -gt "$max" ] && max=$n; done
ptl_topo_up "$TAG" $((max + 1)) "$WORK" >"$WORK/topo" 2>&1 ||
	{ echo "incast: topology failed:" >&2; cat "$WORK/topo" >&2; exit 1; }
mkdir -p "$OUT"
echo "senders,cc,rep,mb_s,lost,p50_us,p99_us,bottleneck_drops,retx_pkts" >"$CSV"

# run N CC REP: one incast, one CSV row
run() {
	local n=$1 cc=$2 rep=$3 dir k pids=() count mbs lost p50 p99 drops retx
	count=$((BYTES / SIZE / n))
	dir=$(mktemp -d "$WORK/run.XXXX")
	tc -n "$TAG-br" qdisc replace dev p0 root tbf rate "$RATE" burst 64k limit "$QUEUE" || return 1
	for k in $(seq 0 "$n"); do
		nsx "$(ptl_ns "$TAG" "$k")" env SPIN_IFACE=veth0 SPIN_HOSTFILE="$WORK/hosts$((n + 1))" \
			SPIN_RANK=$k PTL_TEST_DIR="$dir" PTL_TEST_NPROCS=$((n + 1)) PTL_TEST_TOP="$TOP" \
			SPIN_PTL_HOST_PAGES=65536 PTL_REL_SPEC="$SIZE:$count" PTL_INCAST_BENCH=1 \
			SPIN_PTL_CC="$cc" timeout -k 2 300 "$BIN" rel_incast >"$dir/out.$k" 2>&1 &
		pids+=($!)
	done
	for k in $(seq 0 "$n"); do wait "${pids[$k]}"; done
	drops=$(tc -n "$TAG-br" -s qdisc show dev p0 | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)
	tc -n "$TAG-br" qdisc del dev p0 root 2>/dev/null
	read -r mbs lost < <(sed -n 's/.*incast: [0-9]* bytes in [0-9]* us: \([0-9.]*\) MB\/s, \([0-9]*\) messages lost.*/\1 \2/p' \
		"$dir/out.0")
	retx=$(cat "$dir"/out.* | sed -n 's/.* retx_pkts \([0-9]*\) .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
	read -r p50 p99 < <(cat "$dir"/lat.* 2>/dev/null | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int(NR / 2) + 1], v[int(NR * 0.99) + (NR * 0.99 > int(NR * 0.99))]; else print "", "" }')
	if [ -z "${mbs:-}" ] || [ -z "${p99:-}" ]; then
		echo "incast: run senders=$n cc=$cc rep=$rep did not finish; its receiver said:" >&2
		tail -5 "$dir/out.0" >&2
		mbs=0 lost=$count p50= p99=
	fi
	echo "$n,$cc,$rep,$mbs,$lost,$p50,$p99,${drops:-0},$retx" >>"$CSV"
	printf 'senders %2d cc %d rep %d: %6s MB/s lost %4s p50 %8s us p99 %8s us bottleneck drops %6s retx %6s\n' \
		"$n" "$cc" "$rep" "$mbs" "$lost" "$p50" "$p99" "${drops:-0}" "$retx"
	rm -rf "$dir"
}

for rep in $(seq "$REPS"); do
	for n in $SENDERS; do
		for cc in 1 0; do
			run "$n" "$cc" "$rep"
		done
	done
done

# median (min-max) of column COL over the rows of N senders, CC
med() {
	awk -F, -v n="$1" -v c="$2" -v col="$3" 'NR > 1 && $1 == n && $2 == c && $col != "" { print $col }' "$CSV" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%s %s %s\n", v[int((NR + 1) / 2)], v[1], v[NR]; else print "- - -" }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
{
	echo "incast through a $RATE bottleneck with a $QUEUE queue, $SIZE-byte puts, $BYTES bytes per run,"
	echo "$REPS repetitions, median (min-max); cc=1 congestion window, cc=0 without"
	for n in $SENDERS; do
		for cc in 1 0; do
			read -r m mlo mhi < <(med "$n" "$cc" 4)
			read -r l llo lhi < <(med "$n" "$cc" 5)
			read -r q qlo qhi < <(med "$n" "$cc" 7)
			read -r d dlo dhi < <(med "$n" "$cc" 8)
			echo "senders $n cc $cc: $m MB/s ($mlo-$mhi), lost $l ($llo-$lhi), p99 $q us ($qlo-$qhi), bottleneck drops $d ($dlo-$dhi)"
		done
		read -r a _ < <(med "$n" 1 4); read -r b _ < <(med "$n" 0 4)
		read -r pa _ < <(med "$n" 1 7); read -r pb _ < <(med "$n" 0 7)
		echo "senders $n: throughput cc/no-cc $(ratio "$a" "$b")x, p99 latency cc/no-cc $(ratio "$pa" "$pb")x"
	done
} | tee "$OUT/incast_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$CSV'; png='$OUT/incast.png'" bench/incast.gp ||
		echo "incast: gnuplot failed" >&2
fi
