# shellcheck shell=bash
# What the sample scripts (samples/<name>/test.sh, bench.sh) share: N network
# namespaces <tag>-r0 .. r<N-1> on a bridge (namespace <tag>-br), rank K at
# 10.79.<net>.(K+1)/24 on veth0, and a hostfile.  Like
# selftests/lib/ptl_topo.sh, but each sample has its own subnet, so sample
# suites never collide with each other or with the selftests.  Source after
# selftests/lib/netns.sh: everything made here is registered with
# spin_ns_add, so spin_ns_cleanup removes it.
#
#   sample_topo_up TAG N NET HOSTFILE   build it, write the hostfile
#   sample_topo_fifo TAG N              a queue on every veth end (tests)
#   sample_ns TAG K                     the namespace of rank K
#   sample_run TAG K HOSTFILE CMD...    run CMD as rank K inside its namespace
#   sample_handler_cost TAG HOSTFILE DIR CMD...
#                                       the loaded handler program's size (below)

sample_ns() { echo "$1-r$2"; }

sample_topo_up() {
	local tag=$1 n=$2 net=$3 hosts=$4 k ns br=$1-br
	spin_ns_bridge "$br" || return 1
	: >"$hosts"
	for k in $(seq 0 $((n - 1))); do
		ns=$(sample_ns "$tag" "$k")
		spin_ns_add "$ns" || return 1
		ip link add veth0 netns "$ns" type veth peer name "p$k" netns "$br" || return 1
		ip -n "$ns" addr add "10.79.$net.$((k + 1))/24" dev veth0
		ip -n "$ns" link set veth0 up
		ip -n "$br" link set "p$k" master br0
		ip -n "$br" link set "p$k" up
		nsx "$ns" ethtool -K veth0 gro on tx off >/dev/null 2>&1
		nsx "$br" ethtool -K "p$k" gro on tx off >/dev/null 2>&1
		# frames the runtime sends with XDP_TX arrive on the bridge port
		spin_ns_xdp_pass "$br" "p$k" || return 1
		echo "10.79.$net.$((k + 1))" >>"$hosts"
	done
	# resolve every neighbour once, so the first round measures no ARP
	for k in $(seq 1 $((n - 1))); do
		nsx "$(sample_ns "$tag" 0)" ping -c1 -W1 "10.79.$net.$((k + 1))" >/dev/null 2>&1
	done
	return 0
}

# sample_topo_fifo TAG N: a pfifo qdisc on every rank's veth0 and every
# bridge port, for the tests: a burst that comes while the receiving end's
# NAPI has not run yet (a busy machine) fills its ring (256 frames), and on
# a noqueue veth the rest is dropped: a lost packet, no retransmission, a
# test that times out.  With the queue the full ring stops the sender.  The
# limit is above what a sender's socket buffer holds.  (Frames sent with
# XDP_TX bypass it; the benchmarks measure the default noqueue veth.)
sample_topo_fifo() {
	local tag=$1 n=$2 k
	for k in $(seq 0 $((n - 1))); do
		spin_ns_fifo "$(sample_ns "$tag" "$k")" veth0 10000 || return 1
		spin_ns_fifo "$tag-br" "p$k" 10000 || return 1
	done
}

sample_run() {
	local tag=$1 k=$2 hosts=$3; shift 3
	nsx "$(sample_ns "$tag" "$k")" env SPIN_IFACE=veth0 SPIN_HOSTFILE="$hosts" SPIN_RANK="$k" "$@"
}

# What a benchmark reports as its handler's cost: start CMD as rank 0
# (SAMPLE_DIR=DIR, killed after 20 s at the latest), wait until its Portals
# handler program is loaded, print `spinctl handler list veth0` and
# `bpftool prog show` of that program (xlated and jited sizes), stop CMD.
sample_handler_cost() {
	local tag=$1 hosts=$2 dir=$3 ns pid id spinctl=${SPINCTL:-$TOP/tools/spinctl}; shift 3
	ns=$(sample_ns "$tag" 0)
	sample_run "$tag" 0 "$hosts" env SAMPLE_DIR="$dir" timeout -k 2 20 "$@" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 50); do
		nsx "$ns" "$spinctl" handler list veth0 2>/dev/null | grep -q ptl && break
		sleep 0.1
	done
	nsx "$ns" "$spinctl" handler list veth0
	id=$(nsx "$ns" "$spinctl" handler list veth0 | awk '$2 ~ /^ptl/ { print $3 }')
	[ -n "$id" ] && bpftool prog show id "$id"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# CPU accounting for the benchmarks: sample_cpu_ticks CPU prints "busy total"
# jiffies of one CPU from /proc/stat (busy: user, nice, system, irq,
# softirq; total adds idle, iowait and steal); sample_cpu_util A B prints
# the busy share (0..1) between two such readings.
sample_cpu_ticks() {
	awk -v c="cpu$1" '$1 == c { b = $2 + $3 + $4 + $7 + $8; print b, b + $5 + $6 + $9 }' /proc/stat
}
sample_cpu_util() {	# "busy0 total0" "busy1 total1"
	echo "$1 $2" | awk '{ t = $4 - $2; printf "%.3f\n", (t > 0 ? ($3 - $1) / t : 0) }'
}

# Where a veth end's receive work runs, for the benchmarks.
#   sample_napi_threaded NS DEV 0|1 [CPU]  0: in the sender's softirq (veth's
#       default); 1: in a NAPI kernel thread, pinned to CPU if given
#   sample_fifo NS DEV [LIMIT]  a pfifo qdisc on DEV: when the peer's NAPI
#       thread lags, a full ring stops the sender instead of dropping
#       (veth is noqueue)
sample_napi_threaded() {
	local before p
	before=" $(pgrep -d ' ' '^napi/') "
	ip netns exec "$1" sh -c "echo $3 > /sys/class/net/$2/threaded" || return 1
	[ "$3" = 1 ] && [ -n "${4:-}" ] || return 0
	sleep 0.1
	for p in $(pgrep '^napi/'); do
		case "$before" in *" $p "*) ;; *) taskset -pc "$4" "$p" >/dev/null ;; esac
	done
}
sample_fifo() {
	spin_ns_fifo "$@"
}
