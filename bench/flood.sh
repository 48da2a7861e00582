#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The legitimate pair's rate under a flood (issue 14), the figures that
# selftests/test_flood.sh does not assert: three namespaces on a bridge
# (10.78.1.1-3, ptl_topo.sh), rank 0 sends 2000-byte puts asking for acks
# to rank 1's runtime, one at a time (selftests/flood legit, CPU 1), for
# BEFORE_MS + FLOOD_MS + AFTER_MS; after BEFORE_MS, rank 2 (a job member in
# the target's peer table, with the key) sends crafted frames for FLOOD_MS
# as fast as it can (selftests/flood forge, CPU 0; PPS=N to limit it).
# From the acked messages' time stamps, in the same run:
#   rate_before   acked/s in the last BEFORE_MS - 200 ms before the flood
#                 (the unflooded rate)
#   ratio         acked/s during the flood / rate_before
#   first_after   ms from the flood's end to the next acked message
#   ratio_100     acked/s in the 100 ms after the flood's end / rate_before
#   max_gap       longest time without an acked message during the flood
# Variants: noreader (no event reader, the legitimate entry no-events) and
# reader (spinctl events reads, the entry wants events).  REPS repetitions
# (default 3) of each, alternating; the summary gives medians.
#
#   bench/flood.sh      (root)   REPS=3 BEFORE_MS=1000 FLOOD_MS=2000 AFTER_MS=1000
#                                PPS=0 NAME=flood
#
# Writes bench/results/NAME.csv, NAME_summary.txt and NAME.png.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
. selftests/lib/netns.sh
. selftests/lib/ptl_topo.sh

REPS=${REPS:-3}
BEFORE_MS=${BEFORE_MS:-1000}
FLOOD_MS=${FLOOD_MS:-2000}
AFTER_MS=${AFTER_MS:-1000}
PPS=${PPS:-0}
OUT=${OUT:-bench/results}
TAG=spinbf$$
SPINCTL=$TOP/tools/spinctl
FLOOD=$TOP/selftests/flood
KEY=0x5eedf100
NAME=${NAME:-flood}
CSV=$OUT/$NAME.csv
SUM=$OUT/${NAME}_summary.txt
WORK=$(mktemp -d /tmp/spin-bflood.XXXXXX)
NL=$(ptl_ns "$TAG" 0) NS=$(ptl_ns "$TAG" 1) NF=$(ptl_ns "$TAG" 2)

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	nsx "$NS" "$SPINCTL" detach veth0 >/dev/null 2>&1
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
spin_bpffs_ensure
mkdir -p "$OUT"
ptl_topo_up "$TAG" 3 "$WORK" >/dev/null
echo "variant,rep,forge_pps,rate_before,rate_during,ratio,first_after_ms,rate_100,ratio_100,max_gap_ms,not_now,lost" >"$CSV"
S() { nsx "$NS" "$@"; }
MAC=

# one VARIANT REP
one() {
	local v=$1 rep=$2 opt= rpid= fpid lpid t0 t1 pps
	[ "$v" = reader ] || opt=no-events
	S "$SPINCTL" attach veth0 rank 1 key $KEY timeout-ms 5000 >/dev/null
	S "$SPINCTL" peer add veth0 0 10.78.1.1 >/dev/null
	S "$SPINCTL" peer add veth0 2 10.78.1.3 >/dev/null
	S "$SPINCTL" pt alloc veth0 0 >/dev/null
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 65536 $opt >/dev/null
	S "$SPINCTL" me append veth0 pt 0 bits 2 len 64 op get $opt >/dev/null
	MAC=$(ip -n "$NS" -br link show veth0 | awk '{ print $3 }')
	if [ "$v" = reader ]; then
		S "$SPINCTL" events veth0 >/dev/null 2>&1 &
		rpid=$!
	fi
	nsx "$NL" env SPIN_JOB_KEY=$KEY "$FLOOD" legit --dst 10.78.1.2 --bind 10.78.1.1 \
		--rank 0 --bits 1 --len 2000 --count 200 >/dev/null
	nsx "$NL" env SPIN_JOB_KEY=$KEY taskset -c 1 "$FLOOD" legit --dst 10.78.1.2 \
		--bind 10.78.1.1 --rank 0 --bits 1 --len 2000 \
		--ms $((BEFORE_MS + FLOOD_MS + AFTER_MS)) --stamps "$WORK/stamps" >"$WORK/legit" &
	lpid=$!
	sleep "$(awk -v m="$BEFORE_MS" 'BEGIN { print m / 1000 }')"
	nsx "$NF" taskset -c 0 "$FLOOD" forge --if veth0 --src-ip 10.78.1.3 --dst-ip 10.78.1.2 \
		--dst-mac "$MAC" --rank 2 --victim 0 --key $KEY --bits 1 --get-bits 2 \
		--ms "$FLOOD_MS" --pps "$PPS" >"$WORK/forge"
	wait $lpid
	[ -n "$rpid" ] && { kill "$rpid"; wait "$rpid" 2>/dev/null || true; }
	S "$SPINCTL" detach veth0 >/dev/null
	read -r _ _ t0 _ t1 _ _ _ _ _ pps <"$WORK/forge"
	# shellcheck disable=SC2046
	awk -v t0="$t0" -v t1="$t1" -v bms="$BEFORE_MS" -v v="$v" -v rep="$rep" -v pps="$pps" \
		-v nn="$(awk '{ print $5 }' "$WORK/legit")" -v lost="$(awk '{ print $7 }' "$WORK/legit")" '
		{ t = $1 }
		t >= t0 - (bms - 200) * 1e6 && t < t0 { nb++ }
		t >= t0 && t <= t1 { nd++; if (prev && t - prev > gap) gap = t - prev }
		t >= t0 && t <= t1 { prev = t }
		t > t1 && !first { first = t }
		t > t1 && t <= t1 + 100e6 { na++ }
		END {
			rb = nb / ((bms - 200) / 1000); rd = nd / ((t1 - t0) / 1e9); ra = na / 0.1
			printf "%s,%d,%.0f,%.0f,%.0f,%.3f,%.2f,%.0f,%.3f,%.2f,%s,%s\n", v, rep, pps,
			       rb, rd, rd / rb, first ? (first - t1) / 1e6 : -1, ra, ra / rb, gap / 1e6,
			       nn, lost
		}' "$WORK/stamps" >>"$CSV"
	tail -1 "$CSV"
}

for r in $(seq "$REPS"); do
	one noreader "$r"
	one reader "$r"
done

median() {	# median VARIANT COLUMN
	awk -F, -v v="$1" -v c="$2" 'NR > 1 && $1 == v { print $c }' "$CSV" | sort -g |
		awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
{
	echo "bench/flood.sh: $REPS repetitions, before $BEFORE_MS ms, flood $FLOOD_MS ms, after $AFTER_MS ms," \
	     "forger limited to $PPS pps (0: as fast as it can); medians:"
	for v in noreader reader; do
		printf '%-9s forger %s pps, unflooded %s msg/s, during %s msg/s (ratio %s), ' \
			"$v" "$(median $v 3)" "$(median $v 4)" "$(median $v 5)" "$(median $v 6)"
		printf 'first ack after the flood %s ms, 100 ms after %s msg/s (ratio %s), longest gap %s ms\n' \
			"$(median $v 7)" "$(median $v 8)" "$(median $v 9)" "$(median $v 10)"
	done
} | tee "$SUM"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$CSV'; png='$OUT/$NAME.png'" bench/flood.gp
fi
