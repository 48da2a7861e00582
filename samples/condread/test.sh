#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Tests of the conditional-read sample: a server (rank 0) and a client
# (rank 1) in namespaces spins<pid>-cr-rK on a bridge (10.79.25.0/24).  The
# client checks that allowed requests get exactly the right bytes, denied
# ones nothing, that predicate changes take effect at once, and that the
# server's counts agree.  One PASS/FAIL line per case, then
# "N passed, N failed, N skipped".
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_test.sh
. samples/sample_topo.sh

TAG=spins$$-cr
BIN=$TOP/samples/condread/condread_host
sample_test_begin condread "$@"
sample_test_need "$BIN" "$TOP/samples/condread/condread.bpf.o"
if ! { sample_topo_up "$TAG" 2 25 "$WORK/hosts" && sample_topo_fifo "$TAG" 2; } >"$WORK/topo.log" 2>&1; then
	sample_test_abort topology "$WORK/topo.log"
fi

# run_case NAME SERVER_MODE CLIENT_ARGS...
run_case() {
	local name=$1 smode=$2 dir srv rc bad=0; shift 2
	dir=$(mktemp -d "$WORK/$name.XXXX")
	# no runtime left from an earlier case: each starts from bare interfaces
	for k in 0 1; do nsx "$(sample_ns "$TAG" $k)" "$TOP/tools/spinctl" detach veth0 >/dev/null 2>&1; done
	sample_run "$TAG" 0 "$WORK/hosts" env SAMPLE_DIR="$dir" \
		timeout -k 2 300 "$BIN" server "$smode" >"$dir/out.0" 2>&1 &
	srv=$!
	sample_run "$TAG" 1 "$WORK/hosts" env SAMPLE_DIR="$dir" \
		timeout -k 2 300 "$BIN" client "$@" >"$dir/out.1" 2>&1
	rc=$?
	[ $rc -ne 0 ] && { bad=1; echo "client exit $rc" >>"$dir/rcs"; }
	wait $srv; rc=$?
	[ $rc -ne 0 ] && { bad=1; echo "server exit $rc" >>"$dir/rcs"; }
	grep -q "^ok   server counts" "$dir/out.1" || { bad=1; echo "no final check" >>"$dir/rcs"; }
	if [ $bad -eq 0 ]; then
		echo "PASS sample-condread/$name"; PASS=$((PASS + 1))
	else
		echo "FAIL sample-condread/$name"; FAIL=$((FAIL + 1))
		sed 's/^/    /' "$dir/rcs"
		for k in 0 1; do [ -s "$dir/out.$k" ] && sed "s/^/    [$k] /" "$dir/out.$k" | head -30; done
	fi
}

# the handler answers from host memory; the client is a kernel UDP socket
run_case spin-sock-client spin sock test
# the same with a Portals client: PtlPut requests, replies into its entry
run_case spin-ptl-client spin ptl test
# unpadded requests: replies longer than the frame can grow (about 200 bytes
# on veth) are sent by the server process (SPIN_EV_PUT_FROM_HOST) instead
CONDREAD_PAD=0 run_case spin-sock-client-unpadded spin sock test
# ... and they did go that way: the server's runtime handed some to the host
q=$(nsx "$(sample_ns "$TAG" 0)" "$TOP/tools/spinctl" stats veth0 2>&1 | awk '$1 == "tx_host_queued" {print $2}')
if [ "${q:-0}" -gt 0 ]; then
	echo "PASS sample-condread/unpadded-replies-via-host"; PASS=$((PASS + 1))
else
	echo "FAIL sample-condread/unpadded-replies-via-host"; FAIL=$((FAIL + 1))
	echo "    tx_host_queued '${q:-}' (expected > 0)"
fi
# the baseline passes the same checks
run_case host host host test

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
