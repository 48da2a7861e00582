#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What a lossy link does to spin's raw sends (spin_sock: no retransmission;
# the Portals library retransmits, docs/reliable.md and bench/rel.sh):
# the share of messages the receiver's runtime completes when the link
# drops a given share of the frames.  Two namespaces joined through the
# impairing link (selftests/impair, spin_ns_impair); the sender sends
# messages from a UDP socket (selftests/xsk_peer sock-send), the receiver's
# runtime deposits them into a window entry and counts them
# (msgs_completed); a message with a lost packet expires (msg_timeout).
# The baseline in the same run is the loss-free link (0 ppm), and the
# expectation without retransmission is (1 - p)^packets.
#
#   bench/loss.sh     (root)   REPS=3 N=200 LOSS_PPM="0 1000 10000 100000"
#                              SIZES="8 1376 65536"
#
# Writes bench/results/loss.csv (loss_ppm,size,packets,rep,sent,completed,
# timed_out), bench/results/loss_summary.txt and bench/results/loss.png.
# Namespaces spinbl<pid>-a/-b/-m, 10.77.51.0/24, removed on exit.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
. selftests/lib/netns.sh

REPS=${REPS:-3}
N=${N:-200}
LOSS_PPM=${LOSS_PPM:-"0 1000 10000 100000"}
SIZES=${SIZES:-"8 1376 65536"}
OUT=${OUT:-bench/results}
TAG=spinbl$$
NA=$TAG-a NB=$TAG-b NM=$TAG-m
DIR=/sys/fs/bpf/$TAG
SPINCTL=$TOP/tools/spinctl
CSV=$OUT/loss.csv

trap 'nsx "$NB" "$SPINCTL" detach veth0 >/dev/null 2>&1; spin_ns_cleanup; rm -rf "$DIR"' EXIT
spin_bpffs_ensure
mkdir -p "$OUT"
spin_ns_impair "$NA" 10.77.51.1 "$NB" 10.77.51.2 "$NM" "$DIR" >/dev/null
nsx "$NB" "$SPINCTL" attach veth0 rank 1 >/dev/null
nsx "$NB" "$SPINCTL" pt alloc veth0 0
nsx "$NB" "$SPINCTL" me append veth0 pt 0 bits 1 len 65536 no-events >/dev/null
nsx "$NB" "$SPINCTL" peer add veth0 0 10.77.51.1 >/dev/null

# stat NAME: one of the receiver's counters
stat() { nsx "$NB" "$SPINCTL" -j stats veth0 | grep -oE "\"$1\":[0-9]+" | cut -d: -f2; }
# send SIZE: N messages of SIZE bytes, at most 100 per sender process
send() {
	local left=$N k list
	while [ "$left" -gt 0 ]; do
		k=$((left < 100 ? left : 100))
		list=$(printf "$1,%.0s" $(seq "$k")); list=${list%,}
		nsx "$NA" "$TOP/selftests/xsk_peer" sock-send to 10.77.51.2 pt 0 bits 1 rank 0 \
			sizes "$list" >/dev/null
		left=$((left - k))
	done
}

echo "loss_ppm,size,packets,rep,sent,completed,timed_out" >"$CSV"
for r in $(seq "$REPS"); do
	for loss in $LOSS_PPM; do
		nsx "$NM" selftests/impair set "$DIR" a drop "$loss"
		for size in $SIZES; do
			nsx "$NB" "$SPINCTL" stats veth0 reset >/dev/null
			send "$size"
			# a multi-packet message completes or expires (after 1 s);
			# a lost single-packet message leaves nothing: count once
			# the counters have not moved for 2 s (at most 20 s)
			prev= same=0
			for _ in $(seq 40); do
				sleep 0.5
				c=$(stat msgs_completed) t=$(stat msg_timeout)
				if [ "$c,$t" = "$prev" ]; then
					same=$((same + 1)); [ $same -ge 4 ] && break
				else
					same=0 prev="$c,$t"
				fi
			done
			echo "$loss,$size,$(((size + 1375) / 1376)),$r,$N,$c,$t" >>"$CSV"
		done
	done
done

# median over repetitions of the completed share, and (1 - p)^packets
{
	echo "messages completed by the receiver, of $N sent, median of $REPS repetitions (no retransmission)"
	printf "%9s %7s %8s %10s %10s\n" loss_ppm size packets completed expected
	for loss in $LOSS_PPM; do
		for size in $SIZES; do
			awk -F, -v l="$loss" -v s="$size" 'NR > 1 && $1 == l && $2 == s { print $6, $3, $5 }' "$CSV" |
				sort -n | awk -v l="$loss" -v s="$size" '{ v[NR] = $1; p = $2; n = $3 }
				END { m = v[int((NR + 1) / 2)]
				      printf "%9d %7d %8d %9.1f%% %9.1f%%\n", l, s, p, 100 * m / n,
					     100 * (1 - l / 1e6) ^ p }'
		done
	done
} | tee "$OUT/loss_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$CSV'; png='$OUT/loss.png'" bench/loss.gp 2>/dev/null ||
		echo "loss: plot failed" >&2
fi
