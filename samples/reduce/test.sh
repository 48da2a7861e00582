#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Tests of the reduce sample: P ranks (4 or 8 namespaces spins<pid>-red-rK
# on a bridge, 10.79.24.0/24); rank 0 is the root, ranks 1..P-1 contribute.
# The root checks every element of every round's sum against the sum it
# computes itself.  One PASS/FAIL line per case, then "N passed, N failed,
# N skipped".
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_test.sh
. samples/sample_topo.sh

TAG=spins$$-red
BIN=$TOP/samples/reduce/reduce_host
sample_test_begin reduce "$@"
sample_test_need "$BIN" "$TOP/samples/reduce/reduce.bpf.o" "$TOP/samples/reduce/reduce_stress" \
	"$TOP/samples/reduce/reduce_nonatomic.bpf.o" "$TOP/samples/reduce/reduce_double.bpf.o"

# Payload handlers at the same moment on two CPUs (reduce_stress, BPF_PROG_RUN
# from threads pinned to CPU 0 and 1): the atomic handlers must be exact, the
# negative control (plain `+=`) must lose updates in the same run, which
# proves that the handlers overlapped; on one CPU the control must be exact.
# How much the two threads overlap is up to the scheduler: with other load
# on both CPUs a run may have no overlap at all (beside stress-ng --cpu 2,
# 1 run in 6 had no lost update), so the two-CPU run is repeated, up to 10
# times, until the control lost updates; the atomic handlers must be exact
# in every run.
# stress_wrong OUT atomic|control: W of its line "... W of 173 elements wrong"
stress_wrong() {
	sed -n "s/^$2 (.* \([0-9]*\) of [0-9]* elements wrong$/\1/p" "$1"
}
# stress_result NAME OK OUT: one line; OUT is shown on failure (and with -v)
stress_result() {
	if [ "$2" = 1 ]; then
		echo "PASS sample-reduce/$1"; PASS=$((PASS + 1))
		[ "$VERBOSE" = 1 ] && sed 's/^/    /' "$WORK/$3"
	else
		echo "FAIL sample-reduce/$1"; FAIL=$((FAIL + 1))
		sed 's/^/    /' "$WORK/$3"
	fi
}
STRESS="$TOP/samples/reduce/reduce_stress"
STRESS_OBJS="$TOP/samples/reduce/reduce.bpf.o $TOP/samples/reduce/reduce_nonatomic.bpf.o"
atomic_ok=1 lost=0 runs=0
: >"$WORK/stress2"
while [ $runs -lt 10 ] && [ $atomic_ok = 1 ] && [ $lost = 0 ]; do
	runs=$((runs + 1))
	# shellcheck disable=SC2086
	timeout -k 2 120 "$STRESS" $STRESS_OBJS >"$WORK/stress2.run" 2>&1
	rc=$?
	[ $rc -eq 3 ] && break
	{ echo "run $runs (exit $rc):"; cat "$WORK/stress2.run"; } >>"$WORK/stress2"
	[ $rc -eq 0 ] && [ "$(stress_wrong "$WORK/stress2.run" atomic)" = 0 ] || atomic_ok=0
	w=$(stress_wrong "$WORK/stress2.run" control)
	[ $rc -eq 0 ] && [ "${w:-0}" -gt 0 ] && lost=1
done
if [ $rc -eq 3 ]; then
	echo "SKIP sample-reduce/stress-2cpu-atomic (needs two CPUs)"
	echo "SKIP sample-reduce/stress-2cpu-nonatomic-loses (needs two CPUs)"
	SKIP=$((SKIP + 2))
else
	stress_result stress-2cpu-atomic $atomic_ok stress2
	stress_result stress-2cpu-nonatomic-loses $lost stress2
fi
# shellcheck disable=SC2086
timeout -k 2 120 "$STRESS" -1 $STRESS_OBJS >"$WORK/stress1" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(stress_wrong "$WORK/stress1" atomic)" = 0 ] &&
	[ "$(stress_wrong "$WORK/stress1" control)" = 0 ]
stress_result stress-1cpu-nonatomic-exact $((! $?)) stress1

if ! { sample_topo_up "$TAG" 8 24 "$WORK/hosts8" && sample_topo_fifo "$TAG" 8; } >"$WORK/topo.log" 2>&1; then
	sample_test_abort topology "$WORK/topo.log"
fi
head -4 "$WORK/hosts8" >"$WORK/hosts4"

# A round takes microseconds to milliseconds; the root gives up on one after
# 2 s by default, a timing a loaded machine can miss: the tests wait up to
# 30 s (only a lost contribution waits that long), a rank runs at most 300 s.
ROOT_WAIT="timeout-ms 30000"

# run_case NAME P "ROOT ARGS" "SENDER ARGS": the root and P-1 senders
run_case() {
	local name=$1 n=$2 rargs=$3 sargs=$4 dir k pids=() rc bad=0
	dir=$(mktemp -d "$WORK/$name.XXXX")
	for k in $(seq 1 $((n - 1))); do
		# shellcheck disable=SC2086
		sample_run "$TAG" "$k" "$WORK/hosts$n" env SAMPLE_DIR="$dir" \
			timeout -k 2 300 "$BIN" sender $sargs >"$dir/out.$k" 2>&1 &
		pids+=($!)
	done
	# shellcheck disable=SC2086
	sample_run "$TAG" 0 "$WORK/hosts$n" env SAMPLE_DIR="$dir" \
		timeout -k 2 300 "$BIN" root $rargs $ROOT_WAIT >"$dir/out.0" 2>&1
	rc=$?
	[ $rc -ne 0 ] && { bad=1; echo "root exit $rc" >>"$dir/rcs"; }
	for k in "${!pids[@]}"; do
		wait "${pids[$k]}"; rc=$?
		[ $rc -ne 0 ] && { bad=1; echo "rank $((k + 1)) exit $rc" >>"$dir/rcs"; }
	done
	# a root that ran no round proves nothing
	grep -q "rounds exact, 0 bad" "$dir/out.0" || { bad=1; echo "no exact round" >>"$dir/rcs"; }
	if [ $bad -eq 0 ]; then
		echo "PASS sample-reduce/$name"; PASS=$((PASS + 1))
	else
		echo "FAIL sample-reduce/$name"; FAIL=$((FAIL + 1))
		sed 's/^/    /' "$dir/rcs"
		for k in $(seq 0 $((n - 1))); do
			[ -s "$dir/out.$k" ] && sed "s/^/    [$k] /" "$dir/out.$k" | tail -20
		done
	fi
}

# one chunk (1 packet, a packet boundary, 3 packets), several chunks
run_case spin-p4-put 4 "spin nelem 1,173,174,508,509,4064 rounds 20" "ptl"
# packets of every message in random order: the sum must not care
run_case spin-p4-shuffled 4 "spin nelem 508,2000,8128 rounds 20" "sock shuffle"
# 7 concurrent senders
run_case spin-p8-concurrent 8 "spin nelem 173,508,4064 rounds 20" "ptl"
# each sender first puts a message of the wrong length: the header handler
# drops it, so it neither adds nor counts as a contribution
run_case spin-p4-wrong-length 4 "spin nelem 1,508,1000 rounds 10" "ptl bogus"
# MPI_SUM of doubles: the senders contribute one after the other, so the
# handler adds in rank order, and every element must equal, bit for bit,
# the host FPU's sum in that order (random signs, mantissas and exponents:
# rounding happens in every add)
run_case spin-p8-double-ordered 8 "spin double ordered nelem 1,173,174,508,1000 rounds 5" "ptl"
# doubles from 7 concurrent senders, in packets of any order: with values
# that are small integers every order gives the exact sum
run_case spin-p8-double-int-concurrent 8 "spin double-int nelem 173,508,4064 rounds 10" "ptl"
run_case spin-p4-double-int-shuffled 4 "spin double-int nelem 508,2000 rounds 10" "sock shuffle"
# the baseline computes the same sums
run_case host-p4 4 "host nelem 1,508,8128 rounds 20" "host"
run_case host-p8 8 "host nelem 4064 rounds 10" "host"

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
