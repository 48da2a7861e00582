#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Runs inside the guest selftests/compat_vm.sh boots, as PID 1 (--pid1 OUT:
# set up the mounts, run the command in OUT/cmd, write its exit code to
# OUT/rc, power off), or as that default command: the demo and the unit
# and veth suites (the fallbacks are forced on newer kernels by
# selftests/test_compat.sh).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1

if [ "${1:-}" = --pid1 ]; then
	OUT=$2
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
	mount -t tmpfs run /run; mkdir -p /run/netns /run/lock
	# (/tmp: a tmpfs of compat_init.sh's)
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs shm /dev/shm
	mount -t bpf bpf /sys/fs/bpf
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	ip link set lo up
	hostname spin-compat
	ulimit -l unlimited
	echo "compat-guest: kernel $(uname -r), $(nproc) CPUs"
	# (a copy in OUT/log: the serial console ends its lines with CRs)
	bash -c "$(cat "$OUT/cmd")" 2>&1 | tee "$OUT/log"
	echo "${PIPESTATUS[0]}" >"$OUT/rc"
	sync
	echo o >/proc/sysrq-trigger
	sleep 30
	exit 0
fi

# the default command: one summary per run, a closing count over all
total_p=0 total_f=0 total_s=0
KV=$(uname -r | cut -d. -f1,2)
run() {
	local name=$1; shift
	local out rc line
	out=$(mktemp)
	echo "== compat: $name"
	# each test's line names the kernel (PASS linux-6.1/unit/setup), so
	# that the host's run_tests.sh lists the guest's tests apart from its own
	"$@" 2>&1 | sed -u -E "s#^(PASS|FAIL|SKIP) #\1 linux-$KV/#" | tee "$out"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -1)
	rm -f "$out"
	if [ -z "$line" ]; then
		# the demo has no summary line: its exit code is the verdict
		if [ "$rc" -eq 0 ]; then line="1 passed, 0 failed, 0 skipped"; echo "PASS linux-$KV/$name"
		else line="0 passed, 1 failed, 0 skipped"; echo "FAIL linux-$KV/$name (exit $rc)"; fi
	fi
	echo "compat: $name (kernel $(uname -r)): $line, exit $rc"
	set -- $line
	total_p=$((total_p + $1)); total_f=$((total_f + $3)); total_s=$((total_s + $5))
	[ "$rc" -eq 0 ] || [ "$3" -gt 0 ] || total_f=$((total_f + 1))
}
run demo env COUNT=200 samples/pingpong/demo.sh
run unit selftests/test_unit
run veth selftests/test_veth.sh
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
