# shellcheck shell=bash
# What test.sh and bench.sh of the broadcast sample share: P namespaces on
# one bridge and the launch of one broadcast process per rank.  Source after
# selftests/lib/netns.sh, with TOP and WORK set.
#
#   bc_up P              namespaces spins<pid>-bc-r0 .. -r<P-1> (veth0 =
#                        10.79.26.<K+1>/24, rank K) plugged into a bridge in
#                        spins<pid>-bc-br; hostfile $WORK/hosts<P>
#   bc_napi P softirq|threaded  the ranks' receive work: softirq or a
#                        NAPI thread per rank
#   bc_detach P          remove the ranks' runtimes: the next run attaches
#                        them anew, with its environment's attach options
#                        (BC_ENV="SPIN_WAKE_DIRECT=1")
#   bc_run P DIR ARGS... run samples/broadcast/broadcast ARGS on ranks
#                        0..P-1 (output DIR/out.<K>); BC_RC is 0 if every
#                        rank exited 0, else the first failing rank's code,
#                        BC_FAILED lists the failing ranks.
#                        BC_CPUS="0 1": taskset the ranks round-robin;
#                        BC_ENV: more environment for the ranks.

BC_TAG=spins$$-bc
BC_BIN=$TOP/samples/broadcast/broadcast
BC_UP=0

bc_ns() { echo "$BC_TAG-r$1"; }

# bc_up P: build (or grow to) P ranks
bc_up() {
	local n=$1 k ns br=$BC_TAG-br
	if [ "$BC_UP" = 0 ]; then
		spin_ns_bridge "$br" || return 1
	fi
	for k in $(seq "$BC_UP" $((n - 1))); do
		ns=$(bc_ns "$k")
		spin_ns_add "$ns" || return 1
		ip link add veth0 netns "$ns" type veth peer name "p$k" netns "$br" || return 1
		ip -n "$ns" addr add "10.79.26.$((k + 1))/24" dev veth0
		ip -n "$ns" link set veth0 up
		ip -n "$br" link set "p$k" master br0
		ip -n "$br" link set "p$k" up
		nsx "$ns" ethtool -K veth0 gro on tx off >/dev/null 2>&1
		nsx "$br" ethtool -K "p$k" gro on tx off >/dev/null 2>&1
		# frames the runtime sends (XDP_TX, fan-out) arrive on the bridge port
		spin_ns_xdp_pass "$br" "p$k" || return 1
	done
	[ "$n" -gt "$BC_UP" ] && BC_UP=$n
	: >"$WORK/hosts$n"
	for k in $(seq 0 $((n - 1))); do
		echo "10.79.26.$((k + 1))" >>"$WORK/hosts$n"
	done
	# neighbours resolved before the runtime needs them
	for k in $(seq 1 $((n - 1))); do
		nsx "$(bc_ns 0)" ping -c1 -W1 "10.79.26.$((k + 1))" >/dev/null 2>&1 &
	done
	wait
	return 0
}

# bc_napi P softirq|threaded: where the ranks' receive work (their veth0,
# where the runtime's XDP runs) is done: in the sender's softirq (veth's
# default) or in a NAPI thread per rank, scheduled on any CPU like a
# process (each rank's "NIC" works on its own), SCHED_FIFO 1 as
# spin_napi_threaded explains.  Threaded veth drops what it cannot take at
# once unless the sending bridge port has a queue.
bc_napi() {
	local n=$1 mode=$2 k on=0
	[ "$mode" = threaded ] && on=1
	for k in $(seq 0 $((n - 1))); do
		if [ $on = 1 ]; then
			spin_napi_threaded "$(bc_ns "$k")" veth0 || return 1
			tc -n "$BC_TAG-br" qdisc replace dev "p$k" root pfifo || return 1
		else
			ip netns exec "$(bc_ns "$k")" sh -c "echo 0 > /sys/class/net/veth0/threaded" || return 1
			tc -n "$BC_TAG-br" qdisc del dev "p$k" root 2>/dev/null
		fi
	done
	return 0
}

bc_detach() {
	local k
	for k in $(seq 0 $(($1 - 1))); do
		nsx "$(bc_ns "$k")" "$TOP/tools/spinctl" detach veth0 >/dev/null 2>&1
	done
	return 0
}

bc_run() {
	local n=$1 dir=$2 k ns pin cpus pids=() rc; shift 2
	read -r -a cpus <<<"${BC_CPUS:-}"
	for k in $(seq $((n - 1)) -1 0); do
		ns=$(bc_ns "$k")
		pin=()
		[ ${#cpus[@]} -gt 0 ] && pin=(taskset -c "${cpus[$((k % ${#cpus[@]}))]}")
		# shellcheck disable=SC2086
		nsenter --net="/var/run/netns/$ns" -- "${pin[@]}" \
			env ${BC_ENV:-} SPIN_IFACE=veth0 SPIN_HOSTFILE="$WORK/hosts$n" SPIN_RANK="$k" SAMPLE_DIR="$dir" \
			timeout -k 2 "${BC_TIMEOUT:-60}" "$BC_BIN" "$@" >"$dir/out.$k" 2>&1 &
		pids[k]=$!
	done
	BC_RC=0 BC_FAILED=
	for k in $(seq 0 $((n - 1))); do
		wait "${pids[$k]}"; rc=$?
		if [ $rc -ne 0 ]; then
			BC_FAILED="$BC_FAILED $k"
			[ "$BC_RC" = 0 ] && BC_RC=$rc
		fi
	done
	return 0
}
