#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The whole test suite: unit tests (BPF_PROG_RUN) and veth/netns integration
# tests.  Prints every suite's PASS/FAIL/SKIP lines and one closing
# "N passed, N failed, N skipped" over all of them.  Exit status is non-zero
# if any test failed or if a suite did not run at all.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh

if [ "$(id -u)" != 0 ]; then
	echo "selftests: need root (BPF, XDP and network namespaces)" >&2
	exit 3
fi
spin_bpffs_ensure || { echo "selftests: cannot mount bpffs at /sys/fs/bpf" >&2; exit 4; }

total_p=0 total_f=0 total_s=0 bad=0
run_suite() {
	local name=$1; shift
	local out rc line
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
	rm -f "$out"
	if [ -z "$line" ]; then
		echo "FAIL $name/suite (no summary line: the suite did not run to the end, rc $rc)"
		total_f=$((total_f + 1)); bad=1
		return
	fi
	set -- $line
	total_p=$((total_p + $1)); total_f=$((total_f + $3)); total_s=$((total_s + $5))
	if [ "$1" -eq 0 ]; then
		echo "FAIL $name/suite (ran no test)"
		total_f=$((total_f + 1)); bad=1
	fi
	[ "$rc" -eq 0 ] || bad=1
}

pins_before=$(ls /sys/fs/bpf/spin 2>/dev/null | sort)
run_suite unit selftests/test_unit
run_suite softfloat selftests/test_softfloat
run_suite veth selftests/test_veth.sh
run_suite compat selftests/test_compat.sh
run_suite spinctl selftests/test_spinctl.sh
run_suite install selftests/test_install.sh
run_suite ktap selftests/test_ktap.sh
run_suite ptl selftests/test_ptl.sh
run_suite ptl_atomic selftests/test_ptl_atomic
run_suite ptl_buf selftests/test_ptl_buf
run_suite ptl_match selftests/test_ptl_match
run_suite ptl_unex selftests/test_ptl_unex
run_suite impair selftests/test_impair.sh
run_suite rel selftests/test_rel.sh
run_suite flood selftests/test_flood.sh
# every sample with an integration test (samples/<name>/test.sh)
for t in samples/*/test.sh; do
	[ -e "$t" ] || continue
	run_suite "sample-$(basename "$(dirname "$t")")" "$t"
done

# Debian 12's own kernel (6.1) under qemu: the demo and the unit and veth
# suites run there too (selftests/compat_vm.sh, docs/kernels.md; about
# 13-18 minutes under software emulation).  SPIN_TEST_COMPAT=0 leaves it out.
if [ "${SPIN_TEST_COMPAT:-1}" != 0 ]; then
	run_suite linux-6.1 selftests/compat_vm.sh
fi

# nothing may be left behind: no pin directory that was not there before
# (a stale one from before may have been removed: spin_ns_add does that)
pins_after=$(ls /sys/fs/bpf/spin 2>/dev/null | sort)
pins_new=$(comm -13 <(echo "$pins_before") <(echo "$pins_after") | grep . || true)
if [ -n "$pins_new" ]; then
	echo "FAIL cleanup/pins (left behind: $(echo $pins_new))"
	total_f=$((total_f + 1)); bad=1
else
	echo "PASS cleanup/pins"; total_p=$((total_p + 1))
fi
if ip netns list | grep -qE '^spin[tp]'; then
	echo "FAIL cleanup/netns"; total_f=$((total_f + 1)); bad=1
else
	echo "PASS cleanup/netns"; total_p=$((total_p + 1))
fi

echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$bad" -eq 0 ] && [ "$total_f" -eq 0 ]
