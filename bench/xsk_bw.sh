#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# One-way bandwidth of libspin's two host send paths over a veth pair:
#   sock  spin_sock_send(): a UDP socket, one sendmmsg() per 64 packets
#   xsk   spin_xsk_send(): AF_XDP (copy mode on veth), frames built in UMEM,
#         one sendto() kick per batch of 64
# The sender in namespace A sends MIB MiB as MSG-byte messages to rank 1 in
# namespace B, whose runtime deposits them into a 1 MiB window (the same
# receiver for both paths).  Bandwidth = bytes the receiver deposited
# (spinctl -j stats: deposited_bytes) / the sender's time; MB = 10^6 bytes.
#
#   bench/xsk_bw.sh            (root)   MIB=256 MSG=1048576 RUNS=3 by default
#
# Writes bench/results/xsk_bw.csv (one row per run and the medians) and
# prints a summary.  Namespaces spinx<pid>-{a,b}, 10.77.20.0/24, removed on
# exit.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
. selftests/lib/netns.sh

MIB=${MIB:-256}
MSG=${MSG:-1048576}
RUNS=${RUNS:-3}
OUT=bench/results/xsk_bw.csv
SPINCTL=$TOP/tools/spinctl
XSKP=$TOP/selftests/xsk_peer
A=spinx$$-a
B=spinx$$-b

[ "$(id -u)" = 0 ] || { echo "xsk_bw: need root" >&2; exit 3; }
[ -x "$XSKP" ] || { echo "xsk_bw: build first (make)" >&2; exit 1; }
trap spin_ns_cleanup EXIT
trap 'exit 130' INT TERM
spin_bpffs_ensure
spin_ns_pair "$A" veth0 10.77.20.1 "$B" veth0 10.77.20.2
nsx "$A" "$SPINCTL" attach veth0 rank 0 >/dev/null
nsx "$B" "$SPINCTL" attach veth0 rank 1 >/dev/null
nsx "$A" "$SPINCTL" peer add veth0 1 10.77.20.2
nsx "$B" "$SPINCTL" pt alloc veth0 1
nsx "$B" "$SPINCTL" me append veth0 pt 1 bits 1 len "$MSG" no-events >/dev/null

stat_of() {	# stat_of NAME: a counter of B's runtime
	nsx "$B" "$SPINCTL" -j stats veth0 | grep -o "\"$1\":[0-9]*" | cut -d: -f2
}

# delivered bytes once the counter stops moving
delivered() {
	local a b
	a=$(stat_of deposited_bytes)
	for _ in $(seq 50); do
		sleep 0.05
		b=$(stat_of deposited_bytes)
		[ "$a" = "$b" ] && break
		a=$b
	done
	echo "$a"
}

mkdir -p bench/results
echo "mode,run,mib,msg_bytes,sent_bytes,delivered_bytes,seconds,MBps" >"$OUT"
declare -A rates
for run in $(seq "$RUNS"); do
	for mode in sock xsk; do
		nsx "$B" "$SPINCTL" stats veth0 reset >/dev/null
		if [ $mode = sock ]; then
			line=$(nsx "$A" "$XSKP" bench sock to 10.77.20.2 pt 1 bits 1 mib "$MIB" msg "$MSG" | grep '^bench')
		else
			line=$(nsx "$A" "$XSKP" bench xsk veth0 to-rank 1 pt 1 bits 1 mib "$MIB" msg "$MSG" | grep '^bench')
		fi
		# "bench MODE bytes B seconds S MBps M"
		set -- $line
		sent=$4 secs=$6
		got=$(delivered)
		mbps=$(awk -v b="$got" -v s="$secs" 'BEGIN { printf "%.1f", b / s / 1e6 }')
		echo "$mode,$run,$MIB,$MSG,$sent,$got,$secs,$mbps" >>"$OUT"
		rates[$mode]="${rates[$mode]:-} $mbps"
		printf '  run %d %-4s %6.1f MB/s  (%d of %d bytes delivered in %s s)\n' \
			"$run" "$mode" "$mbps" "$got" "$sent" "$secs"
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms=$(echo "${rates[sock]}" | median)
mx=$(echo "${rates[xsk]}" | median)
ratio=$(awk -v x="$mx" -v s="$ms" 'BEGIN { printf "%.2f", x / s }')
echo "sock,median,$MIB,$MSG,,,,$ms" >>"$OUT"
echo "xsk,median,$MIB,$MSG,,,,$mx" >>"$OUT"
echo "xsk_bw: $MIB MiB as $MSG-byte messages, median of $RUNS: spin_sock $ms MB/s, spin_xsk $mx MB/s, ratio ${ratio}x (results in $OUT)"
