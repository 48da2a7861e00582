#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Flood (issue 14): three namespaces on a bridge (selftests/lib/ptl_topo.sh,
# 10.78.1.1-3): a legitimate sender (rank 0, a UDP socket), the target
# (rank 1, the runtime, attached with a job key) and a job member gone bad
# (rank 2, in the target's peer table, knows the key).  While rank 2 sends
# crafted frames as fast as it can for FLOOD_MS (selftests/flood forge:
# puts and acks claiming rank 0, a wrong key, first packets of messages
# that never finish, acks of nothing, gets, puts asking for acks, an
# unknown version), rank 0 sends 2000-byte puts asking for acks, one at a
# time (selftests/flood legit).  Asserted are counts, never times:
#   - every legitimate message is acked (one lost or refused 'not now' is
#     sent again; a hard failure or no ack for 60 s fails), some of them
#     while the flood ran, and 200 more after it;
#   - the target counted the flood under its reasons: bad_peer, bad_key,
#     bad_version, src_quota (rank 2's share of the message table), and,
#     with nobody reading events, ev_quota (rank 2's share of the ring);
#   - with and without an event reader (spinctl events): without one the
#     legitimate entry is no-events (a runtime whose events nobody reads
#     keeps serving it), with one it wants events.
# The rates and recovery times are bench/flood.sh's.  One PASS/FAIL line
# per case, then "N passed, N failed, N skipped".
#
#   selftests/test_flood.sh [-t GLOB] [-v]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. selftests/lib/ptl_topo.sh

spin_test_args "$@"
TAG=spintf$$
SPINCTL=$TOP/tools/spinctl
FLOOD=$TOP/selftests/flood
KEY=0x5eedf100
FLOOD_MS=${FLOOD_MS:-3000}
WORK=$(mktemp -d /tmp/spin-flood.XXXXXX)
NL=$(ptl_ns "$TAG" 0) NS=$(ptl_ns "$TAG" 1) NF=$(ptl_ns "$TAG" 2)

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	nsx "$NS" "$SPINCTL" detach veth0 >/dev/null 2>&1
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" != 0 ]; then
	echo "SKIP flood/all (need root)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
spin_bpffs_ensure || { echo "FAIL flood/bpffs"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
if ! ptl_topo_up "$TAG" 3 "$WORK" >"$WORK/topo" 2>&1; then
	echo "FAIL flood/topology"; sed 's/^/    /' "$WORK/topo"
	echo "0 passed, 1 failed, 0 skipped"; exit 1
fi

S() { nsx "$NS" "$@"; }
# stat NAME: the target's counter or drop reason NAME (spinctl -j stats)
stat() { S "$SPINCTL" -j stats veth0 | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }

# flood_case NAME READER: READER 1 runs spinctl events on the target and
# the legitimate entry wants events; 0: no reader, no-events entry
flood_case() {
	local name=$1 reader=$2 dir opt= rpid= fpid lpid bad=0 v r mac n
	[ -n "$FILTER" ] && [[ $name != $FILTER ]] && return 0
	dir=$(mktemp -d "$WORK/$name.XXXX")
	[ "$reader" = 1 ] || opt=no-events
	{
		S "$SPINCTL" attach veth0 rank 1 key $KEY timeout-ms 5000 &&
			S "$SPINCTL" peer add veth0 0 10.78.1.1 &&
			S "$SPINCTL" peer add veth0 2 10.78.1.3 &&
			S "$SPINCTL" pt alloc veth0 0 &&
			S "$SPINCTL" me append veth0 pt 0 bits 1 len 65536 $opt &&
			S "$SPINCTL" me append veth0 pt 0 bits 2 len 64 op get $opt
	} >"$dir/setup" 2>&1 || { echo "setup failed" >>"$dir/why"; bad=1; }
	mac=$(ip -n "$NS" -br link show veth0 | awk '{ print $3 }')
	if [ $bad = 0 ] && [ "$reader" = 1 ]; then
		S "$SPINCTL" events veth0 >/dev/null 2>"$dir/reader" &
		rpid=$!
	fi
	if [ $bad = 0 ]; then
		# the pair works before the flood (and the peers' MACs are known)
		nsx "$NL" env SPIN_JOB_KEY=$KEY "$FLOOD" legit --dst 10.78.1.2 --bind 10.78.1.1 \
			--rank 0 --bits 1 --len 2000 --count 50 --give-up-ms 60000 >"$dir/before" 2>&1 ||
			{ echo "the pair does not work before the flood" >>"$dir/why"; bad=1; }
	fi
	if [ $bad = 0 ]; then
		nsx "$NF" "$FLOOD" forge --if veth0 --src-ip 10.78.1.3 --dst-ip 10.78.1.2 \
			--dst-mac "$mac" --rank 2 --victim 0 --key $KEY --bits 1 --get-bits 2 \
			--fill --ms "$FLOOD_MS" >"$dir/forge" 2>&1 &
		fpid=$!
		nsx "$NL" env SPIN_JOB_KEY=$KEY "$FLOOD" legit --dst 10.78.1.2 --bind 10.78.1.1 \
			--rank 0 --bits 1 --len 2000 --ms $((FLOOD_MS + 500)) --give-up-ms 60000 \
			--stamps "$dir/stamps" >"$dir/during" 2>&1 &
		lpid=$!
		wait $fpid || { echo "forger exit $?" >>"$dir/why"; bad=1; }
		wait $lpid || { echo "legitimate sender failed during the flood" >>"$dir/why"; bad=1; }
		# service after the flood: 200 more, every one acked
		nsx "$NL" env SPIN_JOB_KEY=$KEY "$FLOOD" legit --dst 10.78.1.2 --bind 10.78.1.1 \
			--rank 0 --bits 1 --len 2000 --count 200 --give-up-ms 60000 >"$dir/after" 2>&1 ||
			{ echo "legitimate sender failed after the flood" >>"$dir/why"; bad=1; }
	fi
	if [ $bad = 0 ]; then
		# some legitimate messages were acked while the forger sent
		read -r _ _ t0 _ t1 _ <"$dir/forge"
		n=$(awk -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b { n++ } END { print n + 0 }' "$dir/stamps")
		echo "legitimate messages acked during the flood: $n" >>"$dir/why"
		[ "$n" -gt 0 ] || { echo "no legitimate message acked during the flood" >>"$dir/why"; bad=1; }
		for r in bad_peer bad_key bad_version src_quota $([ "$reader" = 0 ] && echo ev_quota); do
			v=$(stat "$r")
			echo "$r ${v:-?}" >>"$dir/why"
			[ "${v:-0}" -gt 0 ] || { echo "$r not counted" >>"$dir/why"; bad=1; }
		done
	fi
	[ -n "$rpid" ] && { kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null; }
	S "$SPINCTL" -v stats veth0 >"$dir/stats" 2>&1
	S "$SPINCTL" detach veth0 >/dev/null 2>&1
	if [ $bad = 0 ]; then
		echo "PASS flood/$name"; PASS=$((PASS + 1))
	else
		echo "FAIL flood/$name"; FAIL=$((FAIL + 1))
	fi
	if [ $bad = 1 ] || [ "$VERBOSE" = 1 ]; then
		for f in why setup before forge during after; do
			[ -s "$dir/$f" ] && sed "s/^/    $f: /" "$dir/$f"
		done
		grep -vE ' 0$' "$dir/stats" | sed 's/^/    stats: /'
	fi
}

flood_case noreader 0
flood_case reader 1

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
