# shellcheck shell=bash
# The RAID sample's job launcher, shared by test.sh and bench.sh.  Source
# after selftests/lib/netns.sh and samples/sample_topo.sh; the topology is
# sample_topo_up TAG N $RAID_NET DIR/hosts.
#
#   raid_job TAG N DIR LOG ARGS...
#                            one samples/raid/raid process per namespace
#                            (rank K in TAG-rK), all with ARGS; returns the
#                            client's (rank 0) exit status, or 1 if a server
#                            failed.  RAID_CPUS="c0 c1 ..." pins rank K to
#                            the K-th CPU of the list (the last one repeats).
#                            RAID_HOOK (a command) runs once all ranks are
#                            ready; the client writes nothing until it has
#                            run (SAMPLE_GATE), so the hook sees the job's
#                            whole set-up in place.

RAID_NET=22	# 10.79.22.0/24

raid_job() {
	local tag=$1 n=$2 dir=$3 log=$4 k rc=0 r cpu pids=() cpus t gate=; shift 4
	read -r -a cpus <<<"${RAID_CPUS:-}"
	rm -f "$dir"/barrier.* "$dir"/spin.* "$dir"/udp.* "$dir/gate"
	[ -n "${RAID_HOOK:-}" ] && gate="SAMPLE_GATE=$dir/gate"
	for k in $(seq 0 $((n - 1))); do
		cpu=
		if [ ${#cpus[@]} -gt 0 ]; then
			t=$k; [ "$t" -ge ${#cpus[@]} ] && t=$((${#cpus[@]} - 1))
			cpu="taskset -c ${cpus[$t]}"
		fi
		# shellcheck disable=SC2086
		sample_run "$tag" "$k" "$dir/hosts" SAMPLE_DIR="$dir" $gate timeout -k 2 "${RAID_TIMEOUT:-60}" $cpu \
			"$RAID_BIN" "$@" >"$log.$k" 2>&1 &
		pids+=($!)
	done
	if [ -n "${RAID_HOOK:-}" ]; then
		for t in $(seq 1 300); do
			[ "$(ls "$dir"/barrier.ready.* 2>/dev/null | wc -l)" -ge "$n" ] && break
			sleep 0.1
		done
		eval "$RAID_HOOK"
		: >"$dir/gate"
	fi
	for k in $(seq 0 $((n - 1))); do
		wait "${pids[$k]}"; r=$?
		if [ "$k" = 0 ]; then rc=$r
		elif [ "$r" != 0 ] && [ "$rc" = 0 ]; then rc=1; echo "rank $k exit $r" >>"$log.0"
		fi
	done
	return $rc
}
