#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Tests of the broadcast sample: 8 and 16 namespaces on one bridge
# (10.79.26.0/24); rank 0 broadcasts along a binomial tree whose inner nodes
# forward every packet from the NIC (runtime fan-out); every rank checks
# every message byte for byte.  The host-forwarding baseline (kernel UDP
# sockets) runs the same tree and checks.  One PASS/FAIL line per case,
# then "N passed, N failed, N skipped".
#
#   samples/broadcast/test.sh [-t GLOB] [-v]
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/broadcast/lib.sh

FILTER= VERBOSE=0
while [ $# -gt 0 ]; do
	case $1 in
	-t) FILTER=$2; shift ;;
	-v) VERBOSE=1 ;;
	*) echo "usage: $0 [-t GLOB] [-v]" >&2; exit 2 ;;
	esac
	shift
done
PASS=0 FAIL=0 SKIP=0
WORK=$(mktemp -d /tmp/spin-bc.XXXXXX)
chmod 755 "$WORK"

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" != 0 ]; then
	echo "SKIP sample-broadcast/all (need root)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
if [ ! -x "$BC_BIN" ] || [ ! -f "$BC_BIN.bpf.o" ]; then
	echo "FAIL sample-broadcast/build ($BC_BIN missing: run make)"
	echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
spin_bpffs_ensure || { echo "FAIL sample-broadcast/bpffs"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
if ! bc_up 16 >"$WORK/topo.log" 2>&1; then
	echo "FAIL sample-broadcast/topology"; sed 's/^/    /' "$WORK/topo.log"
	echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
bc_up 8 >/dev/null 2>&1	# hostfile of the first 8 ranks

# run_case NAME P ARGS...: every rank exits 0 (its messages arrived intact)
run_case() {
	local name=$1 n=$2 dir k; shift 2
	[ -z "$FILTER" ] || [[ $name == $FILTER ]] || return 0
	dir=$(mktemp -d "$WORK/$name.XXXX")
	bc_run "$n" "$dir" "$@"
	if [ "$BC_RC" = 0 ]; then
		echo "PASS sample-broadcast/$name"; PASS=$((PASS + 1))
	else
		echo "FAIL sample-broadcast/$name (ranks$BC_FAILED failed)"; FAIL=$((FAIL + 1))
	fi
	if [ "$BC_RC" != 0 ] || [ "$VERBOSE" = 1 ]; then
		for k in $(seq 0 $((n - 1))); do
			[ -s "$dir/out.$k" ] && sed "s/^/    [r$k] /" "$dir/out.$k" | tail -5
		done
	fi
}

# NIC-side forwarding: 8 B (one packet), 64 KiB (48 packets), an odd size
# whose last packet is short; the buffer halves alternate, so a stale or
# misplaced packet of the previous message is caught
run_case spin_p8 8 mode spin size 8,65536,10007 iters 20 warmup 0
run_case spin_p16 16 mode spin size 8,65536,10007 iters 20 warmup 0
# the root sends each message's packets in reverse and shuffled order
run_case spin_p16_reverse 16 mode spin size 65536,4001 order reverse iters 10 warmup 0
run_case spin_p8_shuffle 8 mode spin size 65536,10007 order shuffle iters 10 warmup 0
# the host-forwarding baseline, same tree and checks
run_case host_p8 8 mode host size 8,65536,10007 iters 20 warmup 0
run_case host_p16 16 mode host size 8,65536,10007 iters 20 warmup 0

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" = 0 ]
