#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Tests of the vector-datatype sample: two namespaces on a veth pair
# (10.79.21.1 sends, 10.79.21.2 receives); every message is checked byte
# for byte against the host unpack, gaps and the bytes after the layout
# included.  One PASS/FAIL line per case, then "N passed, N failed, N skipped".
#
#   samples/datatypes/test.sh [-t GLOB] [-v]
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_test.sh
. samples/sample_topo.sh
. samples/datatypes/lib.sh

sample_test_begin datatypes "$@"
sample_test_need "$DT_BIN" "$DT_BIN.bpf.o"
# A queue on each veth: when the receiver's ring is full, the sender waits
# instead of losing packets (veth is noqueue by default, and a message with a
# lost packet times out: there is no retransmission).  A 1 MB message sent
# in reverse order with 8-byte blocks lost a packet once in CI on a loaded
# machine.
if ! { dt_up && sample_fifo "$DT_NS0" veth0 && sample_fifo "$DT_NS1" veth0; } >"$WORK/topo.log" 2>&1; then
	sample_test_abort topology "$WORK/topo.log"
fi

# A message arrives in milliseconds; the receiver waits up to 30 s for one
# (its defaults, 5 s for a put and 1 s for a UDP message, are timings a
# loaded machine can miss; only a lost message waits that long); a rank runs
# at most 300 s.
DT_TIMEOUT=300

# run_case NAME ARGS...: sender and receiver with the same arguments; the
# case passes if both exit 0
run_case() {
	local name=$1 dir r0 r1; shift
	[ -z "$FILTER" ] || [[ $name == $FILTER ]] || return 0
	dir=$(mktemp -d "$WORK/$name.XXXX")
	dt_run "$dir" "$@" timeout-ms 30000
	r0=$DT_R0 r1=$DT_R1
	if [ $r0 -eq 0 ] && [ $r1 -eq 0 ]; then
		echo "PASS sample-datatypes/$name"; PASS=$((PASS + 1))
	else
		echo "FAIL sample-datatypes/$name (sender exit $r0, receiver exit $r1)"; FAIL=$((FAIL + 1))
	fi
	if [ $r0 -ne 0 ] || [ $r1 -ne 0 ] || [ "$VERBOSE" = 1 ]; then
		sed 's/^/    [send] /' "$dir/out.0" | tail -20
		sed 's/^/    [recv] /' "$dir/out.1" | tail -20
	fi
}

# 4 MiB: every block size with the handler and both baselines
run_case vector_4m size 4194304 block 8,64,512,4096,65536 reps 1 warmup 0
# a small odd message: blocks that do not divide it, blocks across packets,
# a stride that is not a multiple of the block
run_case vector_odd size 10000 block 24,1000,3000 gap 16 reps 2 warmup 0
run_case vector_odd_stride size 10000 block 7,1376,1377,20000 gap 3 reps 2 warmup 0
# packets in reverse and shuffled order (spin_sock_send with a permutation)
run_case reverse_order mode spin size 1000000 block 8,700,4096 gap 100 order reverse reps 2 warmup 0
run_case shuffled_order mode spin size 4194304 block 64,3000 order shuffle reps 2 warmup 0
# contiguous (gap 0): the strided layout is the message itself
run_case gap0 size 100000 block 512 gap 0 reps 2 warmup 0

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
