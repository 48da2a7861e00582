# shellcheck shell=bash
# What test.sh and bench.sh of the datatypes sample share: the two
# namespaces and the launch of one sender/receiver pair.  Source after
# selftests/lib/netns.sh, with TOP and WORK set.
#
#   dt_up                  namespaces spins<pid>-dt-r0 (10.79.21.1, rank 0,
#                          sends) and -r1 (10.79.21.2, rank 1, receives) on a
#                          veth pair, hostfile $WORK/hosts
#   dt_run DIR ARGS...     run samples/datatypes/datatypes ARGS on both ranks
#                          (output in DIR/out.0, DIR/out.1); sets DT_R0 and
#                          DT_R1 to their exit codes.  A failing receiver ends
#                          the sender, which would wait at its next barrier
#                          (DT_R0 is then 0: the receiver's code tells).
#                          RANK0_CPU / RANK1_CPU: taskset pinning if set.

DT_NS0=spins$$-dt-r0
DT_NS1=spins$$-dt-r1
DT_BIN=$TOP/samples/datatypes/datatypes

dt_up() {
	# the processes attach the runtime to both ends (PtlNIInit)
	spin_ns_pair "$DT_NS0" veth0 10.79.21.1 "$DT_NS1" veth0 10.79.21.2 || return 1
	printf '10.79.21.1\n10.79.21.2\n' >"$WORK/hosts"
}

dt_run() {
	local dir=$1 k ns cpu pin p0 p1; shift
	for k in 1 0; do
		if [ $k = 0 ]; then ns=$DT_NS0 cpu=${RANK0_CPU:-}; else ns=$DT_NS1 cpu=${RANK1_CPU:-}; fi
		pin=()
		[ -n "$cpu" ] && pin=(taskset -c "$cpu")
		nsenter --net="/var/run/netns/$ns" -- "${pin[@]}" \
			env SPIN_IFACE=veth0 SPIN_HOSTFILE="$WORK/hosts" SPIN_RANK=$k SAMPLE_DIR="$dir" \
			timeout -k 2 "${DT_TIMEOUT:-40}" "$DT_BIN" "$@" >"$dir/out.$k" 2>&1 &
		if [ $k = 0 ]; then p0=$!; else p1=$!; fi
	done
	wait "$p1"; DT_R1=$?
	[ "$DT_R1" -ne 0 ] && kill "$p0" 2>/dev/null
	wait "$p0"; DT_R0=$?
	[ "$DT_R1" -ne 0 ] && DT_R0=0
	return 0
}
