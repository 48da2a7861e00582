#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Tests of the impairing link (selftests/impair, progs/impair.bpf.c) that
# the reliable-delivery tests run over: two namespaces (10.77.50.1 and .2)
# joined through a relay namespace.  Decided by the link's own counters,
# ping's and selftests/udp_seq's (numbered datagrams: how many arrived
# after a higher number).  The only timing checked is a lower bound (a
# delayed ping takes at least the delay), which load cannot break.  One
# PASS/FAIL line per case, then "N passed, N failed, N skipped".
#
#   selftests/test_impair.sh [-t GLOB]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh

FILTER=
[ "${1:-}" = "-t" ] && FILTER=${2:-}
PASS=0 FAIL=0 SKIP=0
TAG=spinti$$
NA=$TAG-a NB=$TAG-b NM=$TAG-m
DIR=/sys/fs/bpf/$TAG
IMPAIR=$TOP/selftests/impair
UDPSEQ=$TOP/selftests/udp_seq
LOG=$(mktemp -d /tmp/spin-impair.XXXXXX)

cleanup() {
	spin_ns_cleanup
	rm -rf "$DIR" "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" != 0 ]; then
	echo "SKIP impair/all (need root)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
spin_bpffs_ensure || { echo "FAIL impair/bpffs"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
if ! spin_ns_impair "$NA" 10.77.50.1 "$NB" 10.77.50.2 "$NM" "$DIR" >"$LOG/topo" 2>&1; then
	echo "FAIL impair/topology"; sed 's/^/    /' "$LOG/topo"
	echo "0 passed, 1 failed, 0 skipped"; exit 1
fi

# set END ARGS...: the impairment of frames arriving at END (a: from NS_A)
set_end() { nsx "$NM" "$IMPAIR" set "$DIR" "$@"; }
# count END FIELD: one of the end's counters
count() { nsx "$NM" "$IMPAIR" stats "$DIR" "$1" | awk -v f="$2" '{ for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }'; }
# pings N: ping NS_B from NS_A N times, 2 ms apart; print ping's summary
pings() { nsx "$NA" ping -c "$1" -i 0.002 -W 2 10.77.50.2 2>&1 | grep -E 'packets transmitted'; }
# received SUMMARY: the replies ping counted (duplicates apart)
received() { sed -n 's/.* \([0-9]*\) received.*/\1/p' <<<"$1"; }

CLEAN="drop 0 dup 0 corrupt 0 delay 0 jitter 0 reorder 0"
# seqs N GAP_US: N numbered datagrams from NS_A to NS_B, GAP_US apart; print
# udp_seq's "received R distinct D inversions I"
seqs() {
	local pid
	nsx "$NB" timeout -k 2 60 "$UDPSEQ" recv 9100 "$1" 1000 >"$LOG/seq" 2>&1 &
	pid=$!
	spin_wait_until 10 spin_ns_udp_bound "$NB" 9100 || { kill "$pid"; fail "the receiver did not bind"; }
	nsx "$NA" "$UDPSEQ" send 10.77.50.2 9100 "$1" "$2"
	wait "$pid" || fail "udp_seq recv failed: $(cat "$LOG/seq")"
	cat "$LOG/seq"
}
# field LINE NAME: the number after NAME in LINE
field() { awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$1"; }
# min_rtt SUMMARY: ping's least round trip in microseconds
min_rtt() { sed -n 's/^rtt [^=]*= \([0-9]*\)\.\([0-9]*\)\/.*/\1 \2/p' <<<"$1" |
	awk '{ printf "%d\n", $1 * 1000 + substr($2 "000", 1, 3) }'; }

run() {
	local name=$1 fn=$2 rc
	if [ -n "$FILTER" ] && [[ $name != $FILTER ]]; then return; fi
	set_end a $CLEAN && set_end b $CLEAN &&
		nsx "$NM" "$IMPAIR" reset "$DIR" a && nsx "$NM" "$IMPAIR" reset "$DIR" b || return
	# not as an if's condition: set -e would not apply inside it
	( set -e; "$fn" ) >"$LOG/$name" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS impair/$name"; PASS=$((PASS + 1))
	else
		echo "FAIL impair/$name"; FAIL=$((FAIL + 1))
		sed 's/^/    /' "$LOG/$name" | tail -20
	fi
}
fail() { echo "$*"; return 1; }

t_clean() {
	# nothing set: every ping answered, every frame counted and passed on
	local f0 s
	f0=$(count a frames)
	s=$(pings 50); echo "$s"
	[ "$(received "$s")" = 50 ] || fail "want 50 replies"
	[ $(($(count a frames) - f0)) -ge 50 ] || fail "fewer than 50 frames counted at a"
	[ "$(count a dropped)" = 0 ] && [ "$(count a duplicated)" = 0 ] || fail "impaired with nothing set"
	[ "$(count a delayed)" = 0 ] && [ "$(count a reordered)" = 0 ] || fail "held with nothing set"
}

t_delay() {
	# 20 ms on the way there, 5 ms back: every round trip takes at least
	# 25 ms (a lower bound: a busy holder only sends later), every frame
	# counted as delayed, none reordered, nothing lost
	local s rtt f
	set_end a delay 20000
	set_end b delay 5000
	s=$(nsx "$NA" ping -c 20 -i 0.01 -W 5 10.77.50.2 2>&1 | grep -A1 'packets transmitted'); echo "$s"
	[ "$(received "$s")" = 20 ] || fail "want 20 replies"
	rtt=$(min_rtt "$s"); echo "least round trip $rtt us"
	[ -n "$rtt" ] && [ "$rtt" -ge 25000 ] || fail "a round trip shorter than the 25 ms delay"
	for e in a b; do
		f=$(count $e frames)
		[ "$f" -ge 20 ] && [ "$(count $e delayed)" = "$f" ] || fail "$e: delayed $(count $e delayed) of $f frames"
		[ "$(count $e reordered)" = 0 ] && [ "$(count $e hold_lost)" = 0 ] ||
			fail "$e: reordered $(count $e reordered), hold_lost $(count $e hold_lost)"
	done
}

t_reorder() {
	# 5% of the frames held 1 ms more while the rest pass: datagrams sent
	# 20 us apart arrive after higher-numbered ones
	local s r
	set_end a reorder 50000
	s=$(seqs 2000 20); echo "$s"
	r=$(count a reordered); echo "reordered $r delayed $(count a delayed) of $(count a frames)"
	[ "$r" -gt 0 ] && [ "$(count a delayed)" = "$r" ] || fail "no frame held back, or others too"
	[ "$(field "$s" inversions)" -gt 0 ] || fail "every datagram arrived in order"
}

t_jitter() {
	# a delay of 0-500 us, drawn per frame: frames 20 us apart overtake
	# each other; with a fixed delay as well, the order is the same
	local s
	set_end a delay 200 jitter 500
	s=$(seqs 2000 20); echo "$s"
	[ "$(count a delayed)" -gt 0 ] && [ "$(count a reordered)" = 0 ] || fail "delayed $(count a delayed), reordered $(count a reordered)"
	[ "$(field "$s" inversions)" -gt 0 ] || fail "every datagram arrived in order"
}

t_drop_all() {
	local s
	set_end a drop 1000000
	s=$(pings 20); echo "$s"
	[ "$(received "$s")" = 0 ] || fail "a reply came through a link that drops everything"
	[ "$(count a dropped)" = "$(count a frames)" ] || fail "dropped != frames"
	# ARP passes: the neighbour is still resolved
	nsx "$NA" ip neigh flush dev veth0
	nsx "$NA" ping -c 1 -W 1 10.77.50.2 >/dev/null 2>&1 || true
	nsx "$NA" ip neigh show 10.77.50.2 | grep -qE 'REACHABLE|STALE|DELAY' ||
		fail "ARP did not pass: $(nsx "$NA" ip neigh show 10.77.50.2)"
}

t_drop_half() {
	# 1000 requests with 50% loss: the counted share is 40-60% (6 standard
	# deviations each way), and every request that passed was answered
	# (the way back is clean); ping waits 2 s for the last replies
	local s d n
	set_end a drop 500000
	s=$(pings 1000); echo "$s"
	n=$(count a frames) d=$(count a dropped)
	echo "frames $n dropped $d"
	[ "$n" -ge 1000 ] || fail "fewer than 1000 frames counted"
	[ $((d * 100)) -ge $((n * 40)) ] && [ $((d * 100)) -le $((n * 60)) ] ||
		fail "dropped $d of $n, want 40-60%"
	[ "$(received "$s")" = $((n - d)) ] || fail "replies != frames passed"
}

t_dup_all() {
	local s
	set_end a dup 1000000
	s=$(nsx "$NA" ping -c 20 -i 0.002 -W 2 10.77.50.2 2>&1 | grep -E 'packets transmitted'); echo "$s"
	[ "$(received "$s")" = 20 ] || fail "want 20 replies"
	# every request arrives twice, so does its reply; ping may exit
	# before the last duplicate reply arrives
	[ "$(sed -n 's/.* +\([0-9]*\) duplicates.*/\1/p' <<<"$s")" -ge 19 ] ||
		fail "want +19 or +20 duplicates"
	[ "$(count a duplicated)" = "$(count a frames)" ] || fail "duplicated != frames"
}

t_corrupt_all() {
	# one bit of every request flipped after the Ethernet header: the
	# checksums catch most; every frame counted as corrupted
	local s
	set_end a corrupt 1000000
	s=$(pings 50); echo "$s"
	[ "$(count a corrupted)" = "$(count a frames)" ] || fail "corrupted != frames"
	[ "$(received "$s")" -lt 50 ] || fail "all 50 replies came back: nothing was corrupted"
}

t_bad_input() {
	local rc=0
	nsx "$NM" "$IMPAIR" set "$DIR" a drop 1000001 2>"$LOG/err" || rc=$?
	[ "$rc" = 2 ] && grep -q "parts per million" "$LOG/err" || fail "drop 1000001: exit $rc"
	rc=0
	nsx "$NM" "$IMPAIR" set "$DIR" a drop 05 2>"$LOG/err" || rc=$?
	[ "$rc" = 2 ] || fail "drop 05: exit $rc"
	rc=0
	nsx "$NM" "$IMPAIR" set "$DIR" nosuchdev drop 5 2>"$LOG/err" || rc=$?
	[ "$rc" = 1 ] && grep -q "no interface 'nosuchdev'" "$LOG/err" || fail "unknown device: exit $rc"
	# microseconds 0 to 10^7, checked for overflow; hold only after reorder
	local a
	for a in "delay 10000001" "jitter 18446744073709551617" "delay -1" "jitter +5" \
		"delay ''" "reorder 1000001" "reorder 10 hold 10000001"; do
		rc=0
		eval nsx "$NM" "$IMPAIR" set "$DIR" a "$a" 2>"$LOG/err" || rc=$?
		[ "$rc" = 2 ] && [ "$(wc -l <"$LOG/err")" = 1 ] || fail "$a: exit $rc, $(cat "$LOG/err")"
	done
	for a in "hold 5" "reorder 10 hold" "delay" "reorder 10 jitter"; do
		rc=0
		nsx "$NM" "$IMPAIR" set "$DIR" a $a 2>"$LOG/err" || rc=$?
		[ "$rc" = 2 ] && grep -q "^usage" "$LOG/err" || fail "$a: exit $rc"
	done
	nsx "$NM" "$IMPAIR" set "$DIR" a delay 10000000 jitter 0 reorder 1000000 hold 0 ||
		fail "the largest values were refused"
}

run clean t_clean
run delay t_delay
run reorder t_reorder
run jitter t_jitter
run drop_all t_drop_all
run drop_half t_drop_half
run dup_all t_dup_all
run corrupt_all t_corrupt_all
run bad_input t_bad_input

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
