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
	"$TOP/samples/reduce/reduce_nonatomic.bpf.o"

# Payload handlers at the same moment on two CPUs (reduce_stress, BPF_PROG_RUN
# from threads pinned to CPU 0 and 1): the atomic handlers must be exact, the
# negative control (plain `+=`) must lose updates in the same run, which
# proves that the handlers overlapped; on one CPU the control must be exact.
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
# shellcheck disable=SC2086
timeout -k 2 30 "$STRESS" $STRESS_OBJS >"$WORK/stress2" 2>&1
rc=$?
if [ $rc -eq 3 ]; then
	echo "SKIP sample-reduce/stress-2cpu-atomic (needs two CPUs)"
	echo "SKIP sample-reduce/stress-2cpu-nonatomic-loses (needs two CPUs)"
	SKIP=$((SKIP + 2))
else
	[ $rc -eq 0 ] && [ "$(stress_wrong "$WORK/stress2" atomic)" = 0 ]
	stress_result stress-2cpu-atomic $((! $?)) stress2
	w=$(stress_wrong "$WORK/stress2" control)
	[ $rc -eq 0 ] && [ "${w:-0}" -gt 0 ]
	stress_result stress-2cpu-nonatomic-loses $((! $?)) stress2
fi
# shellcheck disable=SC2086
timeout -k 2 30 "$STRESS" -1 $STRESS_OBJS >"$WORK/stress1" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(stress_wrong "$WORK/stress1" atomic)" = 0 ] &&
	[ "$(stress_wrong "$WORK/stress1" control)" = 0 ]
stress_result stress-1cpu-nonatomic-exact $((! $?)) stress1

if ! sample_topo_up "$TAG" 8 24 "$WORK/hosts8" >"$WORK/topo.log" 2>&1; then
	sample_test_abort topology "$WORK/topo.log"
fi
head -4 "$WORK/hosts8" >"$WORK/hosts4"

# run_case NAME P "ROOT ARGS" "SENDER ARGS": the root and P-1 senders
run_case() {
	local name=$1 n=$2 rargs=$3 sargs=$4 dir k pids=() rc bad=0
	dir=$(mktemp -d "$WORK/$name.XXXX")
	for k in $(seq 1 $((n - 1))); do
		# shellcheck disable=SC2086
		sample_run "$TAG" "$k" "$WORK/hosts$n" env SAMPLE_DIR="$dir" \
			timeout -k 2 40 "$BIN" sender $sargs >"$dir/out.$k" 2>&1 &
		pids+=($!)
	done
	# shellcheck disable=SC2086
	sample_run "$TAG" 0 "$WORK/hosts$n" env SAMPLE_DIR="$dir" \
		timeout -k 2 40 "$BIN" root $rargs >"$dir/out.0" 2>&1
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
# the baseline computes the same sums
run_case host-p4 4 "host nelem 1,508,8128 rounds 20" "host"
run_case host-p8 8 "host nelem 4064 rounds 10" "host"

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
