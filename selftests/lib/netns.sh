# shellcheck shell=bash
# Network-namespace helpers shared by the selftests, the demo and the
# benchmarks.  Source this file; every namespace made here is registered and
# removed by spin_ns_cleanup (install it with `trap spin_ns_cleanup EXIT`).
#
# Addresses: 10.77.<net>.<host>/24 inside namespaces these scripts create;
# no traffic ever leaves them.

SPIN_NS_LIST=${SPIN_NS_LIST:-}
SPIN_NS_TAG=${SPIN_NS_TAG:-spin$$}

# nsx NS CMD...: run CMD inside namespace NS with the host's /sys/fs/bpf
# visible (ip netns exec would remount /sys and hide bpffs).
nsx() {
	local ns=$1; shift
	nsenter --net="/var/run/netns/$ns" -- "$@"
}

spin_bpffs_ensure() {
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf || return 1
	fi
}

# spin_ns_add NAME: create a namespace with loopback up.  Pins under its
# inode number (spin_pin_dir) cannot be its own yet: they were left by a
# namespace that had the same number and went away without them being
# removed (its process killed before it detached, e.g. an unshared one of
# test_unit or reduce_stress; an attach that raced a cleanup), possibly in
# another suite running at the same time.  A process here would take them
# for an attached runtime ("no XDP program on veth0"), so they are removed.
spin_ns_add() {
	local ns=$1 ino
	ip netns add "$ns" || return 1
	SPIN_NS_LIST="$SPIN_NS_LIST $ns"
	ino=$(stat -L -c %i "/var/run/netns/$ns" 2>/dev/null) || ino=
	if [ -n "$ino" ] && [ -e "/sys/fs/bpf/spin/ns$ino" ]; then
		echo "spin_ns_add: $ns: removing stale pins /sys/fs/bpf/spin/ns$ino" >&2
		rm -rf "/sys/fs/bpf/spin/ns$ino"
	fi
	ip -n "$ns" link set lo up
}

# spin_wait_until SECS CMD...: run CMD every 0.1 s until it succeeds
# (return 0) or SECS seconds have passed (return 1).  The readiness check
# of the tests: a listener's "ready" line, a bound socket, a counter; SECS
# is generous, it only bounds the failure case.
spin_wait_until() {
	local n=$(($1 * 10)); shift
	# counted in naps, not read from a clock: a loaded machine only makes
	# the wait longer
	until "$@"; do
		[ $((n -= 1)) -ge 0 ] || return 1
		sleep 0.1
	done
	return 0
}

# spin_ns_udp_bound NS PORT: some UDP socket in NS is bound to PORT.
spin_ns_udp_bound() {
	[ -n "$(nsx "$1" ss -Hlun "sport = :$2" 2>/dev/null)" ]
}

# spin_ns_fifo NS DEV [LIMIT]: a pfifo qdisc on DEV.  veth is noqueue: when
# the peer's receive ring is full (its NAPI has not run yet, as on a busy
# machine), the frame is dropped; with a queue, the full ring stops the
# sender instead.  (Frames the peer sends with XDP_TX bypass it.)
spin_ns_fifo() {
	ip -n "$1" link set dev "$2" txqueuelen 1000 &&
		tc -n "$1" qdisc replace dev "$2" root pfifo ${3:+limit "$3"}
}

# spin_napi_threaded NS DEV: DEV's receive work (its NAPI) in a kernel
# thread of its own, run SCHED_FIFO 1 like a threaded IRQ handler.  At the
# default SCHED_OTHER a NAPI thread competes with every CPU-bound process:
# beside `stress-ng --cpu 2` on this kernel, runnable NAPI threads were seen
# to get no CPU for 30-180 s (the kernel's "workqueue lockup" reports at the
# same time), which stalls every packet to DEV that long.  The threads are
# the ones the switch creates (named napi/DEV-<id>); DEV needs its NAPI
# already (XDP attached or GRO on), else there is no thread to find.
spin_napi_tids() {
	ps -eo pid=,comm= | awk -v p="napi/$1-" 'index($2, p) == 1 { print $1 }'
}
spin_napi_threaded() {
	local ns=$1 dev=$2 before tid n=0
	before=" $(spin_napi_tids "$dev" | tr '\n' ' ') "
	ip netns exec "$ns" sh -c "echo 1 > /sys/class/net/$dev/threaded" || return 1
	for tid in $(spin_napi_tids "$dev"); do
		case $before in *" $tid "*) continue ;; esac
		chrt -f -p 1 "$tid" >/dev/null || return 1
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || { echo "spin_napi_threaded: $ns/$dev: no new NAPI thread" >&2; return 1; }
}

# spin_ns_pair NS_A IF_A IP_A NS_B IF_B IP_B: a veth pair between two
# namespaces (created if needed), addresses /24, up, with GRO on both ends
# and tx checksum offload off so reflected UDP carries a full checksum.
# Receivers of XDP_TX traffic also want spin_ns_xdp_pass.
spin_ns_pair() {
	local nsa=$1 ifa=$2 ipa=$3 nsb=$4 ifb=$5 ipb=$6
	ip netns list | grep -qw "^$nsa" || spin_ns_add "$nsa" || return 1
	ip netns list | grep -qw "^$nsb" || spin_ns_add "$nsb" || return 1
	ip link add "$ifa" netns "$nsa" type veth peer name "$ifb" netns "$nsb" || return 1
	ip -n "$nsa" addr add "$ipa/24" dev "$ifa"
	ip -n "$nsb" addr add "$ipb/24" dev "$ifb"
	ip -n "$nsa" link set "$ifa" up
	ip -n "$nsb" link set "$ifb" up
	nsx "$nsa" ethtool -K "$ifa" gro on tx off >/dev/null 2>&1
	nsx "$nsb" ethtool -K "$ifb" gro on tx off >/dev/null 2>&1
	return 0
}

# spin_ns_bridge NS: a new namespace NS with bridge br0 up, a plain switch:
# no netfilter on bridged frames (br_netfilter, when loaded on the host,
# would send every frame through iptables).
spin_ns_bridge() {
	local t
	spin_ns_add "$1" || return 1
	ip -n "$1" link add br0 type bridge || return 1
	ip -n "$1" link set br0 up
	for t in iptables ip6tables arptables; do
		nsx "$1" sysctl -qw "net.bridge.bridge-nf-call-$t=0" 2>/dev/null
	done
	return 0
}

# spin_ns_xdp_pass NS IF: attach an XDP_PASS program to IF in NS.  A veth
# end that receives frames sent with XDP_TX/redirect needs an XDP program
# (with GRO only, delivery is delayed by hundreds of milliseconds here).
spin_ns_xdp_pass() {
	local top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	ip -n "$1" link set dev "$2" xdpdrv obj "$top/selftests/progs/xdp_pass.bpf.o" sec xdp
}

# spin_ns_impair NS_A IP_A NS_B IP_B NS_M DIR: NS_A's veth0 (IP_A/24) and
# NS_B's veth0 (IP_B/24) on one link that runs through the relay namespace
# NS_M, whose ends are "a" (towards NS_A) and "b".  selftests/impair passes
# every frame from one end to the other, impaired as
# `nsx NS_M selftests/impair set DIR a|b drop PPM dup PPM corrupt PPM
# delay US jitter US reorder PPM [hold US]` says for frames arriving at that
# end (a: from NS_A): dropped, duplicated, corrupted, delayed, reordered.
# Frames that wait are kept by a holder process in NS_M (it ends with the
# namespace, spin_ns_cleanup, or when DIR goes); its pins go in DIR, which
# the caller removes.  Namespaces are made if needed.
spin_ns_impair() {
	local nsa=$1 ipa=$2 nsb=$3 ipb=$4 nsm=$5 dir=$6 top ns
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	for ns in "$nsa" "$nsb" "$nsm"; do
		ip netns list | grep -qw "^$ns" || spin_ns_add "$ns" || return 1
	done
	ip link add veth0 netns "$nsa" type veth peer name a netns "$nsm" || return 1
	ip link add veth0 netns "$nsb" type veth peer name b netns "$nsm" || return 1
	ip -n "$nsa" addr add "$ipa/24" dev veth0
	ip -n "$nsb" addr add "$ipb/24" dev veth0
	for ns in "$nsa" "$nsb"; do
		ip -n "$ns" link set veth0 up
		nsx "$ns" ethtool -K veth0 gro on tx off >/dev/null 2>&1
	done
	ip -n "$nsm" link set dev a up && ip -n "$nsm" link set dev b up || return 1
	# frames the outer ends send with XDP_TX arrive at a and b
	spin_ns_xdp_pass "$nsm" a && spin_ns_xdp_pass "$nsm" b || return 1
	mkdir -p "$dir" && nsx "$nsm" "$top/selftests/impair" attach a b "$dir"
}

# spin_ns_mac NS IF: print the MAC address of IF in NS.
spin_ns_mac() {
	ip -n "$1" -o link show "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

# spin_test_args "$@": a suite's options, -t GLOB (FILTER: run only the
# cases it matches) and -v (VERBOSE=1: show every case's output); PASS,
# FAIL and SKIP start at 0.  Anything else: usage, exit 2.
spin_test_args() {
	FILTER= VERBOSE=0
	while [ $# -gt 0 ]; do
		case $1 in
		-t) FILTER=$2; shift ;;
		-v) VERBOSE=1 ;;
		*) echo "usage: $0 [-t GLOB] [-v]" >&2; exit 2 ;;
		esac
		shift
	done
	# shellcheck disable=SC2034
	PASS=0 FAIL=0 SKIP=0
}

# spin_run_test SUITE NAME FUNC [LINES]: FUNC in a subshell with set -e,
# its output in $LOG/NAME.log; one line PASS/FAIL/SKIP SUITE/NAME (exit 77:
# skipped), counted in PASS, FAIL and SKIP; on failure the log's last LINES
# lines (30).  SPIN_RAN says whether it ran: 0 when $FILTER (-t GLOB) left
# NAME out.  Always returns 0, and must not be called where bash ignores
# set -e (in an if or while condition, or before || or &&): set -e would
# be off inside FUNC too, and a failed check in its middle would not fail
# the test (it did so in the veth and spinctl suites).  The subshell checks
# that and fails the test if it is so.
SPIN_RAN=0
spin_run_test() {
	local suite=$1 name=$2 fn=$3 lines=${4:-30} rc
	SPIN_RAN=0
	if [ -n "${FILTER:-}" ] && [[ $name != $FILTER ]]; then
		return 0
	fi
	SPIN_RAN=1
	( set -e
	  # (false ends the command substitution only if set -e is in force)
	  set +e; _e=$(set -e; false; echo ignored); set -e
	  if [ "$_e" = ignored ]; then
		echo "spin_run_test: called where bash ignores set -e" >&2; exit 99
	  fi
	  "$fn" ) >"$LOG/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS $suite/$name"; PASS=$((PASS + 1))
	elif [ $rc -eq 77 ]; then
		echo "SKIP $suite/$name"; SKIP=$((SKIP + 1)); sed 's/^/    /' "$LOG/$name.log" | tail -5
	else
		echo "FAIL $suite/$name"; FAIL=$((FAIL + 1)); sed 's/^/    /' "$LOG/$name.log" | tail -"$lines"
	fi
	return 0
}

spin_ns_cleanup() {
	# never stops half-way (also when the caller runs with set -e)
	local ns dev ino
	for ns in $SPIN_NS_LIST; do
		# detach whatever XDP program is left, then remove pins of
		# this namespace before the namespace goes away
		for dev in $(ip -n "$ns" -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
			ip -n "$ns" link set dev "$dev" xdp off 2>/dev/null || true
			ip -n "$ns" link set dev "$dev" xdpgeneric off 2>/dev/null || true
		done
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
		# pins of runtimes attached inside this namespace (see spin_pin_dir)
		ino=$(stat -L -c %i "/var/run/netns/$ns" 2>/dev/null) || ino=
		if [ -n "$ino" ]; then
			rm -rf "/sys/fs/bpf/spin/ns$ino" || true
		fi
		ip netns del "$ns" 2>/dev/null || true
	done
	SPIN_NS_LIST=
}
