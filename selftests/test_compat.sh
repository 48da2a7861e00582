#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The fallbacks for older kernels (docs/kernels.md), forced on this one with
# SPIN_COMPAT_FORCE: the helpers-only objects (no kfunc call in the loaded
# runtime), the fan-out program through clsact + cls_bpf instead of tcx (and
# gone after detach), a bad SPIN_COMPAT_FORCE refused, and the ping-pong
# tests of test_veth.sh with every fallback forced.  The same suites run on
# Debian 12's own 6.1 kernel, where the fallbacks are needed, under
# ./run compat (selftests/compat_vm.sh).
#
#   selftests/test_compat.sh [-t GLOB]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh

SPINCTL=$TOP/tools/spinctl
NS=spintc$$
spin_test_args "$@"
LOG=$(mktemp -d /tmp/spin-compat.XXXXXX)
cleanup() {
	spin_ns_cleanup
	rm -rf "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

N() { nsx "$NS" "$@"; }
fail() { echo "$*"; return 1; }

# the id of the XDP program on veth0, empty if none
xdp_id() {
	N ip -d link show dev veth0 | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p' | head -1
}

# kfunc calls in the runtime's translated code
kfunc_calls() {
	bpftool prog dump xlated id "$1" | grep -cE 'call (bpf_wq_|bpf_iter_num_|bpf_dynptr_copy)' || true
}

# run_test NAME FUNC: in a fresh namespace with veth0 (10.77.60.1) and
# veth1, detached and removed afterwards whatever happened
run_test() {
	spin_ns_add "$NS" || { echo "FAIL compat/$1 (no namespace)"; FAIL=$((FAIL + 1)); return; }
	ip -n "$NS" link add name veth0 type veth peer name veth1
	ip -n "$NS" addr add 10.77.60.1/24 dev veth0
	ip -n "$NS" link set veth0 up
	ip -n "$NS" link set veth1 up
	spin_run_test compat "$1" "$2" 30
	N "$SPINCTL" detach veth0 >/dev/null 2>&1
	spin_ns_cleanup
}

t_force_bad() {
	local out rc=0
	out=$(SPIN_COMPAT_FORCE=kfuncs,tcp N "$SPINCTL" attach veth0 rank 0 2>&1) || rc=$?
	echo "$out"
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2 (usage)"
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "not one line"
	echo "$out" | grep -q "SPIN_COMPAT_FORCE='kfuncs,tcp'" || fail "the variable not named"
	[ -z "$(xdp_id)" ] || fail "attached anyway"
}

t_kfuncs_objects() {
	local id
	# this kernel has the kfuncs: the full runtime calls them
	N "$SPINCTL" attach veth0 rank 0 >/dev/null
	id=$(xdp_id)
	[ -n "$id" ] || fail "no XDP program after attach"
	if [ "$(kfunc_calls "$id")" -eq 0 ]; then
		echo "the full runtime calls no kfunc: this kernel lacks them, nothing to compare"
		exit 77
	fi
	N "$SPINCTL" detach veth0
	# forced: the helpers-only runtime, not one kfunc call
	SPIN_COMPAT_FORCE=kfuncs N "$SPINCTL" attach veth0 rank 0 >/dev/null
	id=$(xdp_id)
	[ -n "$id" ] || fail "no XDP program after the forced attach"
	[ "$(kfunc_calls "$id")" -eq 0 ] || fail "forced: the runtime still calls kfuncs"
	# and a handler is loaded from its helpers-only build
	SPIN_COMPAT_FORCE=kfuncs N "$SPINCTL" handler load veth0 \
		samples/pingpong/pingpong_stream.bpf.o name pp
	N "$SPINCTL" handler list veth0 | grep -q pp || fail "handler not listed"
	N "$SPINCTL" detach veth0
	[ -z "$(xdp_id)" ] || fail "still attached after detach"
}

t_tc_cls_bpf() {
	SPIN_COMPAT_FORCE=tcx N "$SPINCTL" attach veth0 rank 0 >/dev/null
	N tc filter show dev veth0 ingress | grep -q 'spin_tc' ||
		fail "no cls_bpf filter with spin_tc at veth0's ingress"
	N "$SPINCTL" detach veth0
	! N tc filter show dev veth0 ingress | grep -q 'spin_tc' ||
		fail "the cls_bpf filter is left after detach"
	[ -z "$(xdp_id)" ] || fail "still attached after detach"
}

# the ping-pong tests of test_veth.sh, every fallback forced
t_pingpong_forced() {
	local out
	out=$(SPIN_COMPAT_FORCE=all selftests/test_veth.sh -t 'pingpong_*' 2>&1)
	echo "$out"
	echo "$out" | grep -qx '2 passed, 0 failed, 0 skipped' || fail "ping-pong with fallbacks forced failed"
}

spin_bpffs_ensure || { echo "FAIL compat/setup (no bpffs)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
run_test force_bad t_force_bad
run_test kfuncs_objects t_kfuncs_objects
run_test tc_cls_bpf t_tc_cls_bpf
# shellcheck disable=SC2053  # FILTER is a glob (-t)
if [ -z "$FILTER" ] || [[ pingpong_forced == $FILTER ]]; then
	spin_run_test compat pingpong_forced t_pingpong_forced 40
fi
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
