#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# RAID-5 parity update sample: a client, 3 data servers and a parity server,
# one samples/raid/raid process per namespace (spins<pid>-raid-r0..r4 on a
# bridge, 10.79.22.0/24).  Every case ends with every server's memory
# compared byte for byte with the client's host-side model (parity = XOR of
# all data blocks).  One PASS/FAIL line per case, then the totals.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh
. samples/raid/lib.sh

TAG=spins$$-raid N=5
RAID_BIN=$TOP/samples/raid/raid
SPINCTL=$TOP/tools/spinctl
PASS=0 FAIL=0 SKIP=0
WORK=$(mktemp -d /tmp/spin-raid.XXXXXX)
chmod 755 "$WORK"

cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
	echo "$PASS passed, $FAIL failed, $SKIP skipped"
	[ "$FAIL" -eq 0 ]
	exit $?
}
pass() { echo "PASS sample-raid/$1"; PASS=$((PASS + 1)); }
fail() {
	echo "FAIL sample-raid/$1"; FAIL=$((FAIL + 1))
	shift
	for f in "$@"; do [ -f "$f" ] && sed "s|^|    $(basename "$f"): |" "$f"; done
}

if [ "$(id -u)" != 0 ]; then
	echo "SKIP sample-raid/all (need root)"; SKIP=1; finish
fi
for f in "$RAID_BIN" samples/raid/raid_data.bpf.o samples/raid/raid_parity.bpf.o; do
	[ -e "$f" ] || { fail "build ($f missing: run make)"; finish; }
done
spin_bpffs_ensure || { fail bpffs; finish; }
if ! { sample_topo_up "$TAG" $N $RAID_NET "$WORK/hosts" && sample_topo_fifo "$TAG" $N; } \
	>"$WORK/topo.log" 2>&1; then
	fail topology "$WORK/topo.log"; finish
fi
# A write is acknowledged in microseconds; raid gives up on one after 2 s by
# default, a timing a loaded machine can miss: the tests wait up to 30 s
# (only a lost write waits that long), each rank runs at most 300 s.
RAID_WAIT="timeout-ms 30000"
RAID_TIMEOUT=300

# case NAME ARGS...: one job; passes if every rank exits 0 and the client
# verified both memories it was asked for
case_run() {
	local name=$1 log=$WORK/$1; shift
	if raid_job "$TAG" $N "$WORK" "$log" "$@" $RAID_WAIT && grep -q '^verify' "$log.0"; then
		pass "$name"
	else
		fail "$name" "$log".*
	fi
}

# the handlers load (the verifier accepts them) and sit on the servers'
# entries; instruction counts as spinctl reports them
RAID_HOOK="nsx $TAG-r1 $SPINCTL handler list veth0 >$WORK/h.data 2>&1;
	   nsx $TAG-r4 $SPINCTL handler list veth0 >$WORK/h.parity 2>&1" \
	case_run single-packet sizes 8,1376 count 30 modes spin,udp
if grep -q '^0 ' "$WORK/h.data" && grep -q '^0 ' "$WORK/h.parity"; then
	pass handlers-loaded
else
	fail handlers-loaded "$WORK/h.data" "$WORK/h.parity"
fi
# multi-packet blocks, 4 writes in flight on disjoint stripes
case_run multi-packet sizes 4096,65536 count 20 window 4 modes spin,udp
# a 16 KiB region: every write overlaps earlier ones, sizes not multiples
# of the packet size, whole-region writes touch every stripe
case_run overlapping-stripes region 16384 sizes 1392,4000,16384 count 30 window 4 modes spin,udp
# many small blocks to different stripes concurrently, packets of 8 writes
# interleaved at the data servers and the parity server
case_run concurrent-stripes sizes 2768 count 300 window 8 modes spin
# the final check catches a single wrong byte: flip one byte of the model
log=$WORK/tamper
if raid_job "$TAG" $N "$WORK" "$log" sizes 4096 count 5 modes spin tamper 1234 $RAID_WAIT ||
   ! grep -q 'differs from the host model' "$log.0"; then
	fail detects-corruption "$log".*
else
	pass detects-corruption
fi
finish
