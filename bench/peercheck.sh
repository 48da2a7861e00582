#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Per-packet cost of the runtime's source check (a packet is accepted only
# from the peer table's address for the rank it claims) with BPF_PROG_RUN:
# the same 64-byte put, deposited into a window entry, through the runtime
# attached normally ("checked") and with the attach option open (no check),
# with a job key ("keyed"), and with a job key and an auth key ("authed":
# the header's SipHash-2-4 tag checked), in alternating repetitions of one
# run.  The baseline is the open runtime of the same build, measured in
# the same run; the authenticator's own cost is authed/keyed.
#
#   bench/peercheck.sh      (root)   REPS=5 FRESH=200000 SIZE=64 by default
#   CPU=1: the CPU progrun runs on (CPU 0 of these VMs is noisy)
#   AUTH_OBJ=spin_rt.bpf.o AUTH_PROGRUN=progrun: the authed variant with
#   another build (e.g. both built with -DSPIN_SIP_C=1 -DSPIN_SIP_D=3 to
#   measure SipHash-1-3; the two must agree)
#
# Writes bench/results/peercheck.csv (progrun's rows: label,size,mode,n,runs,
# ns_median,ns_min,ns_max,action), bench/results/peercheck_summary.txt and
# bench/results/peercheck.png.  Namespace spinpc<pid>, 10.77.31.0/24,
# removed on exit.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
. selftests/lib/netns.sh

REPS=${REPS:-5}
FRESH=${FRESH:-200000}
SIZE=${SIZE:-64}
OUT=${OUT:-bench/results}
NS=spinpc$$
IP_S=10.77.31.1 IP_C=10.77.31.2
SPINCTL=$TOP/tools/spinctl
CSV=$OUT/peercheck.csv

trap 'nsx "$NS" "$SPINCTL" detach veth0 >/dev/null 2>&1; spin_ns_cleanup' EXIT
spin_bpffs_ensure
mkdir -p "$OUT"
rm -f "$CSV"
spin_ns_pair "$NS" veth0 "$IP_S" "$NS" veth1 "$IP_C" >/dev/null

prog_rx() { echo "/sys/fs/bpf/spin/ns$(stat -L -c %i "/var/run/netns/$NS")/veth0/prog_rx"; }
mac() { ip -n "$NS" -o link show "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "link/ether") print $(i + 1) }'; }

# setup OPTS...: the runtime, a window entry for the ping, rank 0's peer
setup() {
	nsx "$NS" "$SPINCTL" detach veth0 >/dev/null 2>&1 || true
	nsx "$NS" "$SPINCTL" attach veth0 rank 1 "$@" >/dev/null &&
	nsx "$NS" "$SPINCTL" pt alloc veth0 0 >/dev/null &&
	nsx "$NS" "$SPINCTL" me append veth0 pt 0 bits 0 ignore 0xffffffffffffffff len 4096 \
		no-events >/dev/null &&
	nsx "$NS" "$SPINCTL" peer add veth0 0 "$IP_C" mac "$(mac veth1)" >/dev/null
}

measure() {	# measure LABEL [PROGRUN OPTS...]
	local l=$1 pr=$TOP/bench/progrun; shift
	[ "$l" = authed ] && pr=${AUTH_PROGRUN:-$pr}
	nsx "$NS" taskset -c "${CPU:-1}" "$pr" --pinned "$(prog_rx)" --size "$SIZE" --fresh "$FRESH" \
		--runs 3 --src-ip "$IP_C" --dst-ip "$IP_S" --src-mac "$(mac veth1)" \
		--dst-mac "$(mac veth0)" --src-rank 0 --dst-rank 1 --csv "$CSV" --label "$l" --quiet "$@"
}

KEY=0x5eed1234
AUTH=00112233445566778899aabbccddeeff
for r in $(seq "$REPS"); do
	setup open || { echo "peercheck: setup (open) failed" >&2; exit 1; }
	measure open
	setup || { echo "peercheck: setup failed" >&2; exit 1; }
	measure checked
	setup key "$KEY" || { echo "peercheck: setup (key) failed" >&2; exit 1; }
	measure keyed --job-key "$KEY"
	setup key "$KEY" auth-key "$AUTH" ${AUTH_OBJ:+obj "$AUTH_OBJ"} || { echo "peercheck: setup (auth) failed" >&2; exit 1; }
	measure authed --job-key "$KEY" --auth-key "$AUTH"
done
# what the last repetition's packets did: deposited, not dropped
echo "last runtime (key and auth key): $(nsx "$NS" "$SPINCTL" -j stats veth0 |
	grep -oE '"(msgs|deposited_bytes|no_match|bad_peer|bad_key|bad_auth)":[0-9]+' | tr '\n' ' ')"

if nsx "$NS" "$SPINCTL" -j stats veth0 | grep -qE '"bad_auth":[1-9]'; then
	echo "peercheck: the authenticated runtime dropped packets as bad_auth: not measured" >&2
	exit 1
fi
# the median over repetitions of each label's per-run median
med() { awk -F, -v l="$1" 'NR > 1 && $1 == l { print $6 }' "$CSV" | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'; }
read -r o omin omax < <(med open)
read -r c cmin cmax < <(med checked)
read -r k kmin kmax < <(med keyed)
read -r a amin amax < <(med authed)
{
	echo "BPF_PROG_RUN, $SIZE-byte put deposited, $REPS repetitions (median, min-max ns per packet)"
	echo "open (no source check): $o ($omin-$omax)"
	echo "checked:                $c ($cmin-$cmax)"
	echo "checked, job key:       $k ($kmin-$kmax)"
	echo "job key and auth tag:   $a ($amin-$amax)"
	awk -v o="$o" -v c="$c" 'BEGIN { printf "ratio checked/open: %.3f\n", c / o }'
	awk -v o="$o" -v k="$k" 'BEGIN { printf "ratio keyed/open: %.3f\n", k / o }'
	awk -v o="$o" -v a="$a" 'BEGIN { printf "ratio authed/open: %.3f\n", a / o }'
	awk -v k="$k" -v a="$a" 'BEGIN { printf "ratio authed/keyed: %.3f (the tag: %+.1f ns)\n", a / k, a - k }'
} | tee "$OUT/peercheck_summary.txt"
if command -v gnuplot >/dev/null; then
	gnuplot -e "csv='$CSV'; png='$OUT/peercheck.png'" bench/peercheck.gp 2>/dev/null ||
		echo "peercheck: plot failed" >&2
fi
