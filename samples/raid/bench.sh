#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Write latency of the RAID-5 sample against block size: client send ->
# durable (new data in the data server's memory and the delta XORed into
# the parity), one write in flight, random blocks to random data servers,
#
#   spin   the data server's and the parity server's handlers do the work
#   udp    the same algorithm in processes on kernel UDP sockets (host-only)
#
# both in the same job, size by size (spin then udp for each size), REPS
# jobs; every job ends with the byte-for-byte memory check.  Results:
#   $OUT/raid.csv          size, medians over the jobs of p50/p99 (us) of
#                          both versions, and the ratios spin/udp
#   $OUT/raid_raw.csv      every job's lines
#   $OUT/raid.png          the plot
#   $OUT/raid_summary.txt  the table, the set-up and the handlers' sizes
#
# Knobs: SIZES="8 1376 4096 16384 65536" COUNT=400 REPS=3 NDATA=3
#        RAID_CPUS="1 0" (taskset: client on CPU 1, the servers on CPU 0;
#        '' for none) OUT=bench/results
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh
. samples/raid/lib.sh

SIZES=${SIZES:-"8 1376 4096 16384 65536"}
COUNT=${COUNT:-400}
REPS=${REPS:-3}
NDATA=${NDATA:-3}
RAID_CPUS=${RAID_CPUS-"1 0"}
OUT=${OUT:-bench/results}
RAID_TIMEOUT=${RAID_TIMEOUT:-600}
RAID_BIN=$TOP/samples/raid/raid
SPINCTL=$TOP/tools/spinctl
N=$((NDATA + 2)) TAG=spins$$-raid
command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ] || RAID_CPUS=

log() { echo "raid bench: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root"; exit 3; }
[ -x "$RAID_BIN" ] || { log "$RAID_BIN missing: run make"; exit 1; }
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/spin-raidb.XXXXXX)
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
spin_bpffs_ensure || { log "no bpffs"; exit 4; }
sample_topo_up "$TAG" $N $RAID_NET "$WORK/hosts" >"$WORK/topo.log" 2>&1 ||
	{ cat "$WORK/topo.log" >&2; exit 1; }

# xlated instruction counts: the two handlers as loaded on their entries,
# and raid_null.bpf.o (runtime share: entry, finish, one put) for reference
insns() {
	local dns=$TAG-r1 pns=$TAG-r$((NDATA + 1))
	nsx "$dns" "$SPINCTL" handler list veth0 | awk 'NR > 1 { print "data", $4 }'
	nsx "$pns" "$SPINCTL" handler list veth0 | awk 'NR > 1 { print "parity", $4 }'
	nsx "$dns" "$SPINCTL" handler load veth0 "$TOP/samples/raid/raid_null.bpf.o" name raidnull >/dev/null &&
		nsx "$dns" "$SPINCTL" handler list veth0 | awk '$2 == "raidnull" { print "null", $4 }'
	nsx "$dns" "$SPINCTL" handler unload veth0 raidnull >/dev/null
}

sizes_csv=$(echo $SIZES | tr ' ' ',')
echo "rep,mode,size,count,window,p50_us,p99_us,min_us,mean_us" >"$WORK/raw.csv"
rc=0
for r in $(seq "$REPS"); do
	log "job $r/$REPS: sizes $sizes_csv, $COUNT writes each, CPUs '${RAID_CPUS:-any}'"
	: >"$WORK/job.csv"
	hook=:
	[ "$r" = 1 ] && hook="insns >$WORK/insns.txt 2>&1"
	if ! RAID_HOOK=$hook RAID_CPUS=$RAID_CPUS raid_job "$TAG" $N "$WORK" "$WORK/log$r" \
		ndata $NDATA sizes "$sizes_csv" count "$COUNT" csv "$WORK/job.csv" \
		timeout-ms 5000; then
		log "job $r failed:"; cat "$WORK/log$r".* >&2; rc=1; break
	fi
	grep '^verify' "$WORK/log$r.0" >&2
	sed "s/^/$r,/" "$WORK/job.csv" >>"$WORK/raw.csv"
done
[ $rc = 0 ] || exit 1
cp "$WORK/raw.csv" "$OUT/raid_raw.csv"

# medians over the jobs, per mode and size
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -F, -v m="$1" -v s="$2" -v c="$3" 'NR > 1 && $2 == m && $3 == s { print $c }' "$OUT/raid_raw.csv" | med; }
{
	echo "size,spin_p50_us,spin_p99_us,udp_p50_us,udp_p99_us,p50_ratio,p99_ratio"
	for s in $SIZES; do
		a=$(col spin "$s" 6) b=$(col spin "$s" 7) c=$(col udp "$s" 6) d=$(col udp "$s" 7)
		awk -v s="$s" -v a="$a" -v b="$b" -v c="$c" -v d="$d" \
			'BEGIN { printf "%s,%.1f,%.1f,%.1f,%.1f,%.2f,%.2f\n", s, a, b, c, d, a / c, b / d }'
	done
} >"$OUT/raid.csv"

get() { awk -v k="$1" '$1 == k { print $2 }' "$WORK/insns.txt"; }
{
	echo "RAID-5 parity update: write latency, client send -> data and parity durable"
	echo "$NDATA data servers + 1 parity server + 1 client, one process per namespace on a bridge (veth, MTU 1500)"
	echo "CPUs (taskset, rank 0 first, last repeats): '${RAID_CPUS:-any}'; 1 write in flight; $COUNT writes per size and version per job; medians over $REPS jobs"
	echo
	printf "%8s  %12s  %12s  %12s  %12s  %9s  %9s\n" size spin_p50_us spin_p99_us udp_p50_us udp_p99_us p50_ratio p99_ratio
	tail -n +2 "$OUT/raid.csv" | tr , ' ' |
		while read -r s a b c d e f; do printf "%8s  %12s  %12s  %12s  %12s  %9s  %9s\n" "$s" "$a" "$b" "$c" "$d" "$e" "$f"; done
	echo
	echo "handler programs, xlated eBPF instructions (spinctl handler list):"
	echo "  data server  $(get data)  (paper: 58 + 1 put)"
	echo "  parity       $(get parity)  (paper: 46 + 1 put)"
	echo "  raid_null    $(get null)  (header/payload/completion that do nothing but one device put: the runtime's share)"
	n=$(get null)
	[ -n "$n" ] && [ -n "$(get data)" ] && echo "  own work: data server $(( $(get data) - n )), parity $(( $(get parity) - n ))"
} >"$OUT/raid_summary.txt"
cat "$OUT/raid_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$OUT'" samples/raid/raid.gp 2>&1 | grep -v '^$' >&2 || true
else
	log "gnuplot not installed: no plot"
fi
