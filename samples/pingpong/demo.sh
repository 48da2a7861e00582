#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The sPIN ping-pong on a veth pair between two network namespaces that
# this script creates and removes: the server runs the spin runtime with the
# paper's ping-pong handlers, the client pings from a kernel UDP socket and
# checks every pong byte for byte.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh

CLI=spindemo-cli SRV=spindemo-srv
SPINCTL=$TOP/tools/spinctl PP=$TOP/samples/pingpong/pingpong_host
COUNT=${COUNT:-2000}

[ "$(id -u)" = 0 ] || { echo "demo: run as root" >&2; exit 3; }
spin_bpffs_ensure || { echo "demo: cannot mount bpffs at /sys/fs/bpf" >&2; exit 4; }
OUT=$(mktemp /tmp/spin-demo.XXXXXX)
cleanup() {
	nsx $SRV "$SPINCTL" detach veth0 >/dev/null 2>&1
	rm -f "$OUT"
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	spin_ns_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
step() { printf '\n== %s\n' "$*"; }
S() { echo "[server]# $*"; nsx $SRV "$@"; }
C() { echo "[client]# $*"; nsx $CLI "$@"; }

step "namespaces $CLI (10.77.1.1) and $SRV (10.77.1.2) on a veth pair"
spin_ns_pair $CLI veth0 10.77.1.1 $SRV veth0 10.77.1.2 || exit 1
spin_ns_xdp_pass $CLI veth0	# veth drops XDP_TX frames at a receiver without XDP

step "attach the spin runtime to the server's veth0"
S "$SPINCTL" attach veth0 rank 1 || exit 1
S "$SPINCTL" status veth0

rc=0
for mode in stream store; do
	step "$mode mode: handlers loaded, match entry appended by the host program"
	# nsenter directly (not the nsx function) so that $! is the server
	nsenter --net=/var/run/netns/$SRV -- "$PP" server veth0 $mode client 0 10.77.1.1 seconds 120 \
		>"$OUT" &
	server=$!
	# ready once it says so (its handler verified, peer and entry in
	# place): seconds on a slow machine (6.1's verifier under qemu)
	for _ in $(seq 600); do
		grep -q "^pingpong server on" "$OUT" && break
		kill -0 $server 2>/dev/null || break
		sleep 0.2
	done
	cat "$OUT"
	grep -q "^pingpong server on" "$OUT" || { echo "demo: the $mode server did not start"; rc=1; }
	S "$SPINCTL" handler list veth0
	S "$SPINCTL" me list veth0
	step "$mode mode: $COUNT pings per size from the client, pongs checked byte for byte"
	C "$PP" client 10.77.1.2 $mode size 64,1376 count $COUNT || rc=1
	C "$PP" client 10.77.1.2 $mode size 4000,65536 count $((COUNT / 10)) order shuffle || rc=1
	kill $server; wait $server
done

step "runtime statistics"
S "$SPINCTL" stats veth0

step "detach and remove the namespaces"
S "$SPINCTL" detach veth0
[ $rc -eq 0 ] && echo "demo: all pongs arrived intact" || echo "demo: FAILED"
exit $rc
