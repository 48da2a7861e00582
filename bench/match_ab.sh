#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What matching costs a small table: a 64-byte put deposited into the one
# entry of a portal (exact: bits 0 from rank 0; wild: all bits ignored, any
# source), this tree's runtime against another built tree's (an older
# commit: git archive COMMIT | tar -x -C DIR && make -C DIR tools/spinctl
# bench/progrun bpf/spin_rt.bpf.o), alternating in one run, each with its
# own spinctl and progrun (--fresh 200000, 3 runs, CPU 1).
#
#   bench/match_ab.sh OLD_TREE      (root)   REPS=3
#
# Writes bench/results/match_ab.csv (progrun's rows, labels old-exact,
# new-exact, old-wild, new-wild) and match_ab_summary.txt (median over
# repetitions of each label's median, min-max).  Namespace spinab<pid>,
# 10.77.89.0/24, removed on exit.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
OLD=$(cd "${1:?usage: match_ab.sh OLD_TREE}" && pwd)
REPS=${REPS:-3}
OUT=${OUT:-$TOP/bench/results}
CSV=$OUT/match_ab.csv
NS=spinab$$
mkdir -p "$OUT"
rm -f "$CSV"
X="nsenter --net=/var/run/netns/$NS"
cleanup() {
	$X "$OLD/tools/spinctl" detach veth0 >/dev/null 2>&1 || true
	$X "$TOP/tools/spinctl" detach veth0 >/dev/null 2>&1 || true
	ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link add veth0 type veth peer name veth1
ip -n "$NS" addr add 10.77.89.1/24 dev veth0
ip -n "$NS" addr add 10.77.89.2/24 dev veth1
ip -n "$NS" link set veth0 up
ip -n "$NS" link set veth1 up
mac() { ip -n "$NS" -o link show "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "link/ether") print $(i + 1) }'; }
ino=$(stat -L -c %i "/var/run/netns/$NS")
for r in $(seq "$REPS"); do
	for t in old new; do
		[ "$t" = old ] && T=$OLD || T=$TOP
		for kind in exact wild; do
			$X "$T/tools/spinctl" detach veth0 >/dev/null 2>&1 || true
			$X "$T/tools/spinctl" attach veth0 rank 1 >/dev/null
			$X "$T/tools/spinctl" pt alloc veth0 0 >/dev/null
			if [ "$kind" = exact ]; then
				$X "$T/tools/spinctl" me append veth0 pt 0 bits 0 rank 0 len 4096 no-events >/dev/null
			else
				$X "$T/tools/spinctl" me append veth0 pt 0 bits 0 ignore 0xffffffffffffffff \
					len 4096 no-events >/dev/null
			fi
			$X "$T/tools/spinctl" peer add veth0 0 10.77.89.2 mac "$(mac veth1)" >/dev/null
			$X taskset -c 1 "$T/bench/progrun" --pinned "/sys/fs/bpf/spin/ns$ino/veth0/prog_rx" \
				--size 64 --fresh 200000 --runs 3 --src-ip 10.77.89.2 --dst-ip 10.77.89.1 \
				--src-mac "$(mac veth1)" --dst-mac "$(mac veth0)" --src-rank 0 --dst-rank 1 \
				--csv "$CSV" --label "$t-$kind" --quiet >/dev/null
			$X "$T/tools/spinctl" detach veth0 >/dev/null
		done
	done
done
med() { awk -F, -v l="$1" 'NR > 1 && $1 == l { print $6 }' "$CSV" | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'; }
{
	echo "BPF_PROG_RUN, 64-byte put deposited into a portal's one entry, $REPS repetitions"
	echo "(ns per packet: median over repetitions of progrun's median of 3 runs, min-max)"
	echo "old: $OLD"
	for l in old-exact new-exact old-wild new-wild; do
		read -r m lo hi < <(med "$l")
		printf '%-10s %7.1f  (%.1f-%.1f)\n' "$l" "$m" "$lo" "$hi"
	done
} | tee "$OUT/match_ab_summary.txt"
