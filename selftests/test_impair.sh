#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Tests of the impairing link (selftests/impair, progs/impair.bpf.c) that
# the reliable-delivery tests run over: two namespaces (10.77.50.1 and .2)
# joined through a relay namespace.  Decided by the link's own counters
# and ping's: no timing is checked.  One PASS/FAIL line per case, then
# "N passed, N failed, N skipped".
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

run() {
	local name=$1 fn=$2 rc
	if [ -n "$FILTER" ] && [[ $name != $FILTER ]]; then return; fi
	set_end a drop 0 dup 0 corrupt 0 && set_end b drop 0 dup 0 corrupt 0 &&
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
}

run clean t_clean
run drop_all t_drop_all
run drop_half t_drop_half
run dup_all t_dup_all
run corrupt_all t_corrupt_all
run bad_input t_bad_input

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
