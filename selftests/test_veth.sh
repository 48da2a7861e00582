#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Integration tests on veth pairs between network namespaces these tests
# create (10.77.<n>.0/24, nothing leaves them).  One PASS/FAIL/SKIP line per
# test and a closing "N passed, N failed, N skipped".
#
#   selftests/test_veth.sh [-t GLOB]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh

SPINCTL=$TOP/tools/spinctl
PP=$TOP/samples/pingpong/pingpong_host
XSKP=$TOP/selftests/xsk_peer
TAG=spint$$
CLI=$TAG-cli
SRV=$TAG-srv
CL2=$TAG-cl2
spin_test_args "$@"
LOG=$(mktemp -d /tmp/spin-veth.XXXXXX)

cleanup() {
	spin_ns_cleanup
	rm -rf "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

S() { nsx "$SRV" "$@"; }
C() { nsx "$CLI" "$@"; }

# run_test NAME FUNC: run FUNC in a subshell, its output to a log shown on failure
run_test() {
	spin_run_test veth "$1" "$2" 25
	[ "$SPIN_RAN" = 1 ] || return 0
	# every test leaves the server interface as it found it: its server
	# process gone first (one still exiting while the next test attaches
	# and loads could meet the new runtime's pins), then the runtime
	if [ -s "$LOG/server.pid" ]; then
		local pid
		pid=$(cat "$LOG/server.pid")
		kill "$pid" 2>/dev/null || true
		spin_wait_until $WAIT_S gone "$pid" || kill -9 "$pid" 2>/dev/null || true
		rm -f "$LOG/server.pid"
	fi
	S "$SPINCTL" detach veth0 >/dev/null 2>&1 || true
}

# gone PID: exited (a zombie counts: the test's subshell, its parent, is
# gone, and whoever adopted it may not reap it at once)
gone() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "$st" = Z ]
}

fail() { echo "$*"; return 1; }

# expect_rc WANT CMD...: CMD must exit with WANT
expect_rc() {
	local want=$1 rc=0; shift
	"$@" >"$LOG/out" 2>&1 || rc=$?
	cat "$LOG/out"
	[ "$rc" -eq "$want" ] || fail "exit code $rc, want $want: $*"
}

no_pins() {
	local ino
	ino=$(stat -L -c %i "/var/run/netns/$SRV")
	[ ! -e "/sys/fs/bpf/spin/ns$ino/veth0" ] || fail "pins left in /sys/fs/bpf/spin/ns$ino/veth0"
	! ip -n "$SRV" link show veth0 | grep -q "prog/xdp" || fail "XDP program left on veth0"
}

attach_srv() {
	S "$SPINCTL" attach veth0 rank 1 "$@"
}

# the server answers pings from the client (rank 0)
start_pp_server() {
	pp_server "$1" client 0 10.77.1.1
}

# How long a test waits for something that should come at once: a reply, a
# listener getting ready.  Only a failure waits that long; a loaded machine
# is slow, but not this slow.
WAIT_MS=30000
WAIT_S=$((WAIT_MS / 1000))

# pp_server MODE [ARGS...]: the ping-pong server, without a peer for the
# client unless ARGS add one; returns once it printed its ready line (it
# has loaded the handler and appended the entry)
pp_server() {
	local mode=$1 pid; shift
	# emptied here, not only by the redirection: that happens in the
	# child, which may run after the first look at the log, which would
	# then find the ready line of an earlier test's server
	: >"$LOG/server"
	nsenter --net="/var/run/netns/$SRV" -- "$PP" server veth0 "$mode" "$@" seconds 600 >"$LOG/server" 2>&1 &
	pid=$!
	echo $pid >"$LOG/server.pid"
	spin_wait_until $WAIT_S ready_or_gone "$pid" "pingpong server" "$LOG/server" &&
		grep -q "pingpong server" "$LOG/server" && return 0
	echo "pingpong server (pid $pid): no ready line; its output:"
	cat "$LOG/server"
	if kill -0 "$pid" 2>/dev/null; then
		echo "pingpong server: still running: $(ps -o stat=,etime=,wchan=,args= -p "$pid")"
	else
		local rc=0
		wait "$pid" || rc=$?
		echo "pingpong server: exited with status $rc"
	fi
	return 1
}

# ready_or_gone PID PATTERN FILE: FILE has PATTERN, or PID has exited (no
# use waiting longer)
ready_or_gone() {
	grep -q "$2" "$3" || ! kill -0 "$1" 2>/dev/null
}

# pp_client ARGS...: the ping-pong client against the server, each pong
# waited for up to WAIT_MS (its default, 1 s, is a timing a loaded machine
# can miss; it stops at the first lost pong), the whole run bounded
pp_client() {
	C timeout -k 5 300 "$PP" client 10.77.1.2 "$@" timeout-ms $WAIT_MS quiet
}

# wait_stats PATTERN: `spinctl -j stats veth0` of the server shows PATTERN
# (the runtime handles a frame in the receiver's NAPI poll, which need not
# have run when the sender's system call returns)
wait_stats() {
	spin_wait_until $WAIT_S stats_grep "$1"
}
stats_grep() { S "$SPINCTL" -j stats veth0 | grep -q "$1"; }

# ------------------------------------------------------------------ tests --

t_attach_detach() {
	attach_srv
	S "$SPINCTL" -j status veth0 | grep -q '"prog_id"'
	# wake-ups of waiting processes: deferred to the work item by default
	S "$SPINCTL" -j status veth0 | grep -q '"wake": *"deferred"' || fail "default wake mode not deferred"
	S "$SPINCTL" status veth0 | grep -q "wake deferred" || fail "status does not show the wake mode"
	ip -n "$SRV" link show veth0 | grep -q "prog/xdp"
	S "$SPINCTL" detach veth0
	no_pins
	attach_srv wake-direct
	S "$SPINCTL" -j status veth0 | grep -q '"wake": *"direct"' || fail "wake-direct not kept"
	S "$SPINCTL" detach veth0
	no_pins
}

t_attach_generic() {
	attach_srv generic
	ip -n "$SRV" link show veth0 | grep -q "xdpgeneric"
	start_pp_server stream
	pp_client stream size 64,4000 count 50
	S "$SPINCTL" detach veth0
	no_pins
}

t_errors() {
	# missing interface
	expect_rc 5 S "$SPINCTL" attach nosuchif0
	grep -q "nosuchif0" "$LOG/out"
	# no bpffs
	SPIN_BPFFS=/tmp/spin-no-bpffs expect_rc 4 S env SPIN_BPFFS=/tmp/spin-no-bpffs "$SPINCTL" attach veth0
	grep -qi "bpffs" "$LOG/out"
	# not root
	expect_rc 3 S setpriv --reuid=65534 --regid=65534 --clear-groups "$SPINCTL" attach veth0
	grep -qi "root" "$LOG/out"
	no_pins
	# not attached
	expect_rc 8 S "$SPINCTL" status veth0
	grep -q "attach" "$LOG/out"
	# attached twice
	attach_srv
	expect_rc 9 S "$SPINCTL" attach veth0
	# the verifier rejects a handler: relevant lines, nothing left behind
	expect_rc 7 S "$SPINCTL" handler load veth0 selftests/progs/bad_handler.bpf.o
	grep -q "invalid access to packet" "$LOG/out"
	[ "$(wc -l <"$LOG/out")" -lt 30 ] || fail "verifier output is a wall of log"
	S "$SPINCTL" handler list veth0 | grep -q bad_handler && fail "rejected handler left loaded"
	# bad match bits / unknown handler
	S "$SPINCTL" pt alloc veth0 0
	expect_rc 2 S "$SPINCTL" me append veth0 pt 0 bits zz
	expect_rc 8 S "$SPINCTL" me append veth0 pt 0 handler nosuch
	S "$SPINCTL" detach veth0
	no_pins
}

t_pingpong_stream() {
	attach_srv
	start_pp_server stream
	pp_client stream size 64,1376 count 500
	pp_client stream size 1377,4000,65536 count 50 order shuffle
	pp_client stream size 20000 count 20 order reverse
	S "$SPINCTL" -j stats veth0 >"$LOG/stats"
	cat "$LOG/stats"
	grep -q '"tx_device":' "$LOG/stats"
}

t_pingpong_store() {
	attach_srv
	start_pp_server store
	pp_client store size 64,1376 count 300
	pp_client store size 1377,4000,65536,1000000 count 20 order shuffle
	pp_client store size 20000 count 20 order reverse
}

t_counters() {
	local ev
	attach_srv
	S "$SPINCTL" peer add veth0 0 10.77.1.1 >/dev/null
	S "$SPINCTL" pt alloc veth0 3
	S "$SPINCTL" me append veth0 pt 3 bits 0x55 len 65536
	# the event ring keeps what the runtime posts until it is read: the
	# listener need not be up before the puts arrive
	S "$SPINCTL" events veth0 count 10 timeout-ms $WAIT_MS >"$LOG/ev" &
	ev=$!
	for i in $(seq 10); do
		C "$SPINCTL" send to 10.77.1.2 pt 3 bits 0x55 len $((i * 1000)) rank 0 >/dev/null
	done
	wait $ev
	cat "$LOG/ev"
	[ "$(grep -c "put" "$LOG/ev")" -eq 10 ] || fail "want 10 completion events"
	wait_stats '"msgs_completed":10,' || fail "msgs_completed != 10"
	S "$SPINCTL" -j me list veth0 >"$LOG/me"
	cat "$LOG/me"
	grep -q '"success":10' "$LOG/me" || fail "ME success counter != 10"
	S "$SPINCTL" -j stats veth0 >"$LOG/st"
	grep -q '"msgs_completed":10' "$LOG/st" || fail "msgs_completed != 10"
	grep -q '"rx_bytes":55000' "$LOG/st" || fail "rx_bytes != 55000"
}

t_completion_once_duplicates() {
	# the same message sent twice (same id) completes once
	attach_srv
	S "$SPINCTL" peer add veth0 0 10.77.1.1 >/dev/null
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 65536 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 5000 rank 0 msg-id 4242 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 5000 rank 0 msg-id 4242 >/dev/null
	# all 8 packets handled, whatever became of them
	wait_stats '"rx_packets":8,' || fail "the runtime did not see the 8 packets"
	S "$SPINCTL" -j stats veth0 >"$LOG/st"
	cat "$LOG/st"
	grep -q '"msgs_completed":1,' "$LOG/st" || fail "completed != 1"
	grep -q '"duplicate":4' "$LOG/st" || fail "4 duplicate packets not counted"
}

t_send_reply() {
	attach_srv
	start_pp_server stream
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 data 68656c6c6f rank 0 reply-timeout-ms $WAIT_MS >"$LOG/r"
	cat "$LOG/r"
	grep -q "68 65 6c 6c 6f\|hello" "$LOG/r" || fail "no reply with the sent bytes"
}

t_other_traffic_passes() {
	attach_srv
	nsenter --net="/var/run/netns/$SRV" -- "$TOP/bench/udp_echo" --port 9000 >/dev/null 2>&1 &
	echo $! >"$LOG/server.pid"
	spin_wait_until $WAIT_S spin_ns_udp_bound "$SRV" 9000 || fail "udp_echo did not bind port 9000"
	# (a pong later than pingclient's 1 s counts as lost, which it tolerates)
	C "$TOP/bench/pingclient" --dst 10.77.1.2 --port 9000 --count 50 --size 64 >"$LOG/pc"
	cat "$LOG/pc"
	S "$SPINCTL" -j stats veth0 | grep -q '"passed":' || fail "passed counter missing"
	! S "$SPINCTL" -j stats veth0 | grep -q '"passed":0,' || fail "no frames passed"
}

t_put_redirect() {
	# the pong goes to a peer behind another interface: bpf_redirect.
	# The ping claims to come from rank 5 but comes from the client's
	# address: only an open runtime takes it (t_peer_source)
	local cl2=$CL2
	attach_srv open
	S "$SPINCTL" peer add veth0 5 10.77.2.1 dev veth1
	start_pp_server stream
	nsx "$cl2" "$SPINCTL" recv count 3 timeout-ms $WAIT_MS >"$LOG/recv" 2>&1 &
	local rpid=$!
	# its socket is bound (spinctl recv prints nothing before the messages)
	spin_wait_until $WAIT_S spin_ns_udp_bound "$cl2" 7717 || fail "spinctl recv did not bind port 7717"
	# one 3000-byte ping from "rank 5": three pong messages, sent to rank 5
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 3000 rank 5 >/dev/null
	wait $rpid || { cat "$LOG/recv"; fail "rank 5 did not receive 3 pongs"; }
	cat "$LOG/recv"
	[ "$(grep -c "^message from 10.77.2.2" "$LOG/recv")" -eq 3 ] || fail "want 3 messages from the server"
	grep -q "bits 0xa" "$LOG/recv" || fail "pong match bits"
	S "$SPINCTL" -j stats veth0 | grep -q '"tx_device":3' || fail "tx_device != 3"
}

t_peer_source() {
	# a runtime takes packets only from the peer table's address for the
	# rank they claim: no peer, or another address, is bad_peer
	attach_srv
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 4096 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 0 >/dev/null
	S "$SPINCTL" peer add veth0 3 10.77.1.99 mac 02:00:00:00:00:99 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 3 >/dev/null
	wait_stats '"bad_peer":2[,}]' || fail "bad_peer != 2 (no peer, another address)"
	stats_grep '"msgs":0,' || fail "a forged packet was taken"
	S "$SPINCTL" peer add veth0 0 10.77.1.1 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 0 >/dev/null
	wait_stats '"msgs_completed":1,' || fail "the peer's own put was not taken"
	# open: any address
	S "$SPINCTL" detach veth0 >/dev/null
	attach_srv open
	S "$SPINCTL" status veth0 | grep -q "sources open" || fail "status does not say open"
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 4096 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 3 >/dev/null
	wait_stats '"msgs_completed":1,' || fail "an open runtime refused a put"
}

t_job_key() {
	# a runtime attached with a job key takes only packets that carry it;
	# spin_sock senders (spinctl send) take theirs from $SPIN_JOB_KEY
	attach_srv key 0x5eed1234
	S "$SPINCTL" status veth0 | grep -q "job key set" || fail "status does not say the key is set"
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 4096 >/dev/null
	S "$SPINCTL" peer add veth0 0 10.77.1.1 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 0 >/dev/null
	C env SPIN_JOB_KEY=0x5eed1235 "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 3000 rank 0 >/dev/null
	wait_stats '"bad_key":4[,}]' || fail "bad_key != 4 (no key: 1 packet, another key: 3)"
	stats_grep '"msgs":0,' || fail "a packet without the key was taken"
	C env SPIN_JOB_KEY=0x5eed1234 "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 3000 rank 0 >/dev/null
	wait_stats '"msgs_completed":1,' || fail "the job's own put was not taken"
	# a malformed key: one line naming the variable, usage exit code
	local rc=0
	C env SPIN_JOB_KEY=0x5eed_1234 "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 8 rank 0 \
		>/dev/null 2>"$LOG/badkey" || rc=$?
	[ "$rc" = 2 ] && grep -q "SPIN_JOB_KEY '0x5eed_1234'" "$LOG/badkey" ||
		fail "bad SPIN_JOB_KEY: exit $rc, $(cat "$LOG/badkey")"
}

t_auth_key() {
	# a runtime attached with an auth key takes only packets tagged with
	# it; spin_sock senders (spinctl send) sign with $SPIN_AUTH_KEY; the
	# key comes from a 0600 file or 32 hex digits
	local k=00112233445566778899aabbccddeeff
	printf '%s\n' "$k" >"$LOG/auth.key"
	chmod 600 "$LOG/auth.key"
	attach_srv auth-key "$LOG/auth.key"
	S "$SPINCTL" status veth0 | grep -q "auth key set" || fail "status does not say the auth key is set"
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 4096 >/dev/null
	S "$SPINCTL" peer add veth0 0 10.77.1.1 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 0 >/dev/null
	C env SPIN_AUTH_KEY=ffeeddccbbaa99887766554433221100 "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 \
		len 3000 rank 0 >/dev/null
	wait_stats '"bad_auth":4[,}]' || fail "bad_auth != 4 (no tag: 1 packet, another key: 3)"
	stats_grep '"msgs":0,' || fail "a packet without the tag was taken"
	C env SPIN_AUTH_KEY=$k "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 3000 rank 0 >/dev/null
	wait_stats '"msgs_completed":1,' || fail "the job's own put was not taken"
	C env SPIN_AUTH_KEY="$LOG/auth.key" "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 100 rank 0 \
		>/dev/null
	wait_stats '"msgs_completed":2,' || fail "a put signed with the key file's key was not taken"
	# a malformed key: one line naming the variable, usage exit code
	local rc=0
	C env SPIN_AUTH_KEY=0x1234 "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 8 rank 0 \
		>/dev/null 2>"$LOG/badauth" || rc=$?
	[ "$rc" = 2 ] && grep -q "SPIN_AUTH_KEY: auth key '0x1234'" "$LOG/badauth" ||
		fail "bad SPIN_AUTH_KEY: exit $rc, $(cat "$LOG/badauth")"
}

t_auth_get() {
	# gets of a runtime with an auth key and a get cap: the short reply
	# (built by the runtime) and the long one (sent by the server's
	# process, serve-puts) are both tagged (the client's spin_sock, with
	# $SPIN_AUTH_KEY, drops anything else); a get of more than get-max
	# bytes is refused with op_violation
	local k=00112233445566778899aabbccddeeff
	attach_srv auth-key $k get-max 150000
	S "$SPINCTL" status veth0 | grep -q "get max 150000" || fail "status does not show get max"
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 9 len 200000 op put,get >/dev/null
	S "$SPINCTL" peer add veth0 0 10.77.1.1
	: >"$LOG/get-ev"
	nsenter --net="/var/run/netns/$SRV" -- "$SPINCTL" events veth0 serve-puts >"$LOG/get-ev" 2>&1 &
	echo $! >"$LOG/server.pid"
	head -c 200000 /dev/urandom >"$LOG/getdata"
	C env SPIN_AUTH_KEY=$k "$SPINCTL" send to 10.77.1.2 pt 0 bits 9 file "$LOG/getdata" rank 0 >/dev/null
	wait_stats '"msgs_completed":1,' || fail "the put did not complete"
	C env SPIN_AUTH_KEY=$k "$SPINCTL" -v -j get to 10.77.1.2 pt 0 bits 9 len 100 remote-off 1000 \
		rank 0 timeout-ms $WAIT_MS >"$LOG/get.json" || fail "short get with the key: no reply"
	[ "$(get_hex "$LOG/get.json")" = "$(slice_hex "$LOG/getdata" 1000 100)" ] ||
		fail "short reply differs"
	C env SPIN_AUTH_KEY=$k "$SPINCTL" -v -j get to 10.77.1.2 pt 0 bits 9 len 150000 \
		rank 0 timeout-ms $WAIT_MS >"$LOG/getlong.json" || fail "long get with the key: no reply"
	[ "$(get_hex "$LOG/getlong.json")" = "$(slice_hex "$LOG/getdata" 0 150000)" ] ||
		fail "150000-byte reply (sent by the process) differs"
	expect_rc 3 C env SPIN_AUTH_KEY=$k "$SPINCTL" get to 10.77.1.2 pt 0 bits 9 len 150001 rank 0 \
		timeout-ms $WAIT_MS
	grep -q "failure 'op_violation'" "$LOG/out" || fail "a get over get-max is not refused with op_violation"
	stats_grep '"get_cap":1[,}]' || fail "get_cap != 1"
	stats_grep '"bad_auth":0[,}]' || fail "tagged gets counted as bad_auth"
}

# ------------------------------------------------- jobs: ranks and peers --
#
# The job is the three namespaces: rank 0 = CLI (10.77.1.1), rank 1 = SRV
# (10.77.1.2), rank 2 = CL2 (10.77.2.1).  $LOG/hosts.plain lists them in
# the plain form, $LOG/hosts.kv in the key=value form, with CL2's MAC (it is
# behind the server's veth1, where ARP on veth0 cannot find it); both are
# written at set-up.

# job_json NS [VAR=VALUE...] -- [ARGS...]: spinctl -j job ARGS in NS with
# the environment VAR=VALUE...
job_json() {
	local ns=$1; shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	nsx "$ns" env "${envs[@]}" "$SPINCTL" -j job "$@"
}

# want_job JSON RANK SIZE RANK_FROM: the output of 'spinctl -j job'
want_job() {
	echo "$1"
	case $1 in
	"{\"rank\":$2,\"size\":$3,\"rank_from\":\"$4\","*) ;;
	*) fail "want rank $2 size $3 from $4" ;;
	esac
}

t_job_rank_by_address() {
	local ns r=0 out
	for ns in "$CLI" "$SRV" "$CL2"; do
		out=$(job_json "$ns" -- "$LOG/hosts.plain")
		want_job "$out" $r 3 address
		echo "$out" | grep -q "{\"rank\":$r,\"ip\":\"[0-9.]*\",\"mac\":null,\"port\":null,\"self\":true}" ||
			fail "host $r is not marked self"
		[ "$(echo "$out" | grep -o '"self":true' | wc -l)" -eq 1 ] || fail "want one self host"
		# the same from $SPIN_HOSTFILE, and from the key=value file
		want_job "$(job_json "$ns" SPIN_HOSTFILE="$LOG/hosts.plain" --)" $r 3 address
		want_job "$(job_json "$ns" -- "$LOG/hosts.kv")" $r 3 address
		r=$((r + 1))
	done
	# plain text: the key=value file sorted by rank, with its MAC
	nsx "$CL2" "$SPINCTL" job "$LOG/hosts.kv" >"$LOG/job"
	cat "$LOG/job"
	grep -q "^rank 2 of 3 (rank from address, size from hostfile; hostfile $LOG/hosts.kv)$" "$LOG/job"
	[ "$(sed -n '3,$p' "$LOG/job" | cut -c3- | awk '{print $1 "/" $2}' | xargs)" = \
	  "0/10.77.1.1 1/10.77.1.2 2/10.77.2.1" ] || fail "hosts not listed by rank"
	grep -q "^\* 2 *10.77.2.1 *- *$(spin_ns_mac "$CL2" veth0)$" "$LOG/job"
	grep -q "^  0 *10.77.1.1 *- *-$" "$LOG/job"
}

t_job_rank_by_env() {
	local out
	# each variable alone, in the namespace of that rank
	want_job "$(job_json "$SRV" SPIN_RANK=1 -- "$LOG/hosts.plain")" 1 3 SPIN_RANK
	want_job "$(job_json "$CL2" PMI_RANK=2 PMI_SIZE=3 -- "$LOG/hosts.plain")" 2 3 PMI_RANK
	want_job "$(job_json "$CLI" OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=3 -- "$LOG/hosts.kv")" \
		0 3 OMPI_COMM_WORLD_RANK
	# the first one set wins: SPIN_, then PMI_, then OMPI_COMM_WORLD_
	want_job "$(job_json "$SRV" OMPI_COMM_WORLD_RANK=2 PMI_RANK=0 SPIN_RANK=1 -- "$LOG/hosts.plain")" \
		1 3 SPIN_RANK
	want_job "$(job_json "$SRV" OMPI_COMM_WORLD_RANK=2 PMI_RANK=1 -- "$LOG/hosts.plain")" 1 3 PMI_RANK
	# the environment beats the address (with a warning)
	job_json "$CLI" PMI_RANK=2 -- "$LOG/hosts.plain" >"$LOG/j" 2>"$LOG/warn"
	want_job "$(cat "$LOG/j")" 2 3 PMI_RANK
	cat "$LOG/warn"
	grep -q "PMI_RANK=2 is 10.77.2.1 on $LOG/hosts.plain:5, not an address of this host" "$LOG/warn"
	# no hostfile: rank and size from the launcher alone
	out=$(job_json "$CLI" OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 --)
	want_job "$out" 1 2 OMPI_COMM_WORLD_RANK
	echo "$out" | grep -q '"hostfile":null,"hosts":\[\]'
	# several ranks on one host (own ports): the address is ambiguous
	printf '10.77.1.2 port=7717\n10.77.1.2 port=7718\n' >"$LOG/two.hosts"
	expect_rc 2 S "$SPINCTL" job "$LOG/two.hosts"
	grep -q "^spinctl: $LOG/two.hosts:1: .*set SPIN_RANK" "$LOG/out"
	want_job "$(job_json "$SRV" SPIN_RANK=1 -- "$LOG/two.hosts")" 1 2 SPIN_RANK
}

t_job_peer_load() {
	local cli_mac srv_mac cl2_mac
	cli_mac=$(spin_ns_mac "$CLI" veth0)
	srv_mac=$(spin_ns_mac "$SRV" veth0)
	cl2_mac=$(spin_ns_mac "$CL2" veth0)
	attach_srv
	S "$SPINCTL" peer load veth0 "$LOG/hosts.kv" >"$LOG/load"
	cat "$LOG/load"
	grep -q "^loaded 3 peers from $LOG/hosts.kv (this host: rank 1 of 3)$" "$LOG/load"
	S "$SPINCTL" -j peer list veth0 >"$LOG/peers"
	cat "$LOG/peers"
	grep -q "{\"rank\":0,\"ip\":\"10.77.1.1\",\"port\":7717,\"mac\":\"$cli_mac\"" "$LOG/peers" ||
		fail "rank 0: want 10.77.1.1 $cli_mac (resolved)"
	grep -q "{\"rank\":1,\"ip\":\"10.77.1.2\",\"port\":7717,\"mac\":\"$srv_mac\"" "$LOG/peers" ||
		fail "rank 1 (self): want 10.77.1.2 $srv_mac"
	grep -q "{\"rank\":2,\"ip\":\"10.77.2.1\",\"port\":7717,\"mac\":\"$cl2_mac\"" "$LOG/peers" ||
		fail "rank 2: want 10.77.2.1 $cl2_mac (from the hostfile)"
	[ "$(grep -o '"rank":' "$LOG/peers" | wc -l)" -eq 3 ] || fail "want 3 peers"
	# ping-pong through the loaded peer: this server adds no peer itself
	pp_server stream
	pp_client stream size 64,4000 count 50
	S "$SPINCTL" -j stats veth0 | grep -q '"no_peer":0,' || fail "pongs dropped for want of a peer"
	# again from $SPIN_HOSTFILE, as JSON
	S env SPIN_HOSTFILE="$LOG/hosts.kv" "$SPINCTL" -j peer load veth0 >"$LOG/load"
	cat "$LOG/load"
	grep -q "^{\"ifname\":\"veth0\",\"hostfile\":\"$LOG/hosts.kv\",\"rank\":1,\"size\":3,\"peers\":3}$" "$LOG/load"
}

t_job_errors() {
	# duplicate rank
	printf '10.77.1.1\n# comment\n\nrank=0 ip=10.77.1.2\n' >"$LOG/dup.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/dup.hosts"
	grep -q "^spinctl: $LOG/dup.hosts:4: duplicate rank 0 (also on line 1)$" "$LOG/out"
	# bad IP, in both forms
	printf '10.77.1.1\n10.77.1.256\n' >"$LOG/badip.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/badip.hosts"
	grep -q "^spinctl: $LOG/badip.hosts:2: bad IPv4 address '10.77.1.256'" "$LOG/out"
	printf 'rank=0 ip=10.77.1.1.1\n' >"$LOG/badip.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/badip.hosts"
	grep -q "^spinctl: $LOG/badip.hosts:1: bad IPv4 address '10.77.1.1.1'" "$LOG/out"
	# ranks the runtime cannot address, ranks outside the job, unknown keys
	printf '10.77.1.1\nrank=65536 ip=10.77.1.2\n' >"$LOG/big.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/big.hosts"
	grep -q "^spinctl: $LOG/big.hosts:2: rank 65536 out of range (0..65535)$" "$LOG/out"
	printf '10.77.1.1\nrank=2 ip=10.77.1.2\n' >"$LOG/gap.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/gap.hosts"
	grep -q "^spinctl: $LOG/gap.hosts:2: rank 2 is outside the job" "$LOG/out"
	printf '10.77.1.1 host=a\n' >"$LOG/key.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/key.hosts"
	grep -q "^spinctl: $LOG/key.hosts:1: unknown key 'host'" "$LOG/out"
	# missing file
	expect_rc 8 C "$SPINCTL" job "$LOG/nosuch.hosts"
	grep -q "^spinctl: hostfile $LOG/nosuch.hosts: no such file$" "$LOG/out"
	expect_rc 8 C env SPIN_HOSTFILE="$LOG/nosuch.hosts" "$SPINCTL" job
	grep -q "$LOG/nosuch.hosts" "$LOG/out"
	# environment rank outside the job, size disagreeing with the file
	expect_rc 2 C env SPIN_RANK=3 "$SPINCTL" job "$LOG/hosts.plain"
	grep -q "^spinctl: $LOG/hosts.plain: SPIN_RANK=3 is outside the job (3 hosts: ranks 0..2)$" "$LOG/out"
	expect_rc 2 C env PMI_RANK=0 PMI_SIZE=4 "$SPINCTL" job "$LOG/hosts.plain"
	grep -q "^spinctl: hostfile $LOG/hosts.plain has 3 hosts, but PMI_SIZE=4" "$LOG/out"
	expect_rc 2 C env OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=2 "$SPINCTL" job
	grep -q "OMPI_COMM_WORLD_RANK=2 is outside the job" "$LOG/out"
	expect_rc 2 C env SPIN_RANK=one "$SPINCTL" job "$LOG/hosts.plain"
	grep -q "SPIN_RANK='one' is not a number" "$LOG/out"
	# neither a hostfile nor a rank; no address of this host in the file
	expect_rc 2 C "$SPINCTL" job
	grep -q "no hostfile and no rank" "$LOG/out"
	printf '10.77.1.2\n10.77.2.1\n' >"$LOG/other.hosts"
	expect_rc 2 C "$SPINCTL" job "$LOG/other.hosts"
	grep -q "names none of this host's IPv4 addresses: set SPIN_RANK" "$LOG/out"
	# peer load: nothing is added from a bad file
	attach_srv
	expect_rc 2 S "$SPINCTL" peer load veth0
	grep -q "no hostfile" "$LOG/out"
	expect_rc 8 S "$SPINCTL" peer load veth0 "$LOG/nosuch.hosts"
	expect_rc 2 S "$SPINCTL" peer load veth0 "$LOG/dup.hosts"
	grep -q "$LOG/dup.hosts:4: duplicate rank" "$LOG/out"
	[ "$(S "$SPINCTL" -j peer list veth0)" = "[]" ] || fail "peers added from a bad hostfile"
	# a host that does not answer ARP on veth0 (CL2 is behind veth1): the
	# load stops there with spin_peer_add's message
	expect_rc 8 S "$SPINCTL" peer load veth0 "$LOG/hosts.plain"
	grep -q "^spinctl: rank 2 (10.77.2.1): no MAC for 10.77.2.1" "$LOG/out"
}

# ---------------------------------------------------------- AF_XDP path --

XSK_SIZES=8,100,1376,1377,4000,65536,300000,1048576

# packets of the messages in XSK_SIZES (1376 payload bytes each)
xsk_pkts() {
	local n=0 s
	for s in ${XSK_SIZES//,/ }; do n=$((n + (s + 1375) / 1376)); done
	echo $n
}

# wait_ready PID LOG: receiver PID printed "ready" to LOG (false if it
# exited first or took WAIT_MS)
wait_ready() {
	spin_wait_until $WAIT_S ready_or_gone "$1" "^ready" "$2" && grep -q "^ready" "$2" && return 0
	cat "$2"
	fail "receiver not ready"
}

# frames the client's veth0 dropped: a veth before Linux 6.5 (Debian
# 12's 6.1) drops what does not fit in its peer's 256-frame queue instead
# of pushing back, which a burst of UDP sends meets when the peer's
# softirq work waits for a busy CPU (qemu's one CPU)
cli_tx_dropped() {
	C ip -s -j link show veth0 | sed -n 's/.*"tx":{[^}]*"dropped":\([0-9]*\).*/\1/p'
}

t_xsk_recv() {
	# the exchange below, measured again (up to 3 times) only if the
	# link lost frames: the client's UDP sends have no retransmission,
	# and a packet whose two copies the link dropped never arrives
	local try d0 d1 p
	for try in 1 2 3; do
		d0=$(cli_tx_dropped)
		xsk_recv_once & p=$!
		if wait $p; then return 0; fi
		d1=$(cli_tx_dropped)
		[ "$((${d1:-0} - ${d0:-0}))" -gt 0 ] || return 1
		echo "try $try: the client's veth0 dropped $((d1 - d0)) frames (the server's queue was full): measured again"
		S "$SPINCTL" detach veth0 >/dev/null 2>&1 || true
	done
	return 1
}

xsk_recv_once() {
	# an xsk entry's packets reach the AF_XDP socket of the server's
	# process; the client sends every message twice, packets shuffled
	local rpid n
	n=$(xsk_pkts)
	attach_srv
	S "$SPINCTL" peer add veth0 0 10.77.1.1 >/dev/null
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 7 xsk >/dev/null
	# no socket yet: dropped and counted
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 7 len 100 rank 0 >/dev/null
	wait_stats '"rx_packets":1,' || fail "the runtime did not see the packet"
	S "$SPINCTL" -j stats veth0 | grep -q '"no_xsk":1,' || fail "no_xsk != 1 without a socket"
	: >"$LOG/xr"	# (see pp_server)
	nsx "$SRV" "$XSKP" recv veth0 sizes $XSK_SIZES timeout-ms $WAIT_MS >"$LOG/xr" 2>&1 &
	rpid=$!
	wait_ready $rpid "$LOG/xr"
	C "$XSKP" sock-send to 10.77.1.2 pt 0 bits 7 sizes $XSK_SIZES order shuffle msg-order shuffle dup
	wait $rpid || { cat "$LOG/xr"; fail "AF_XDP receiver failed"; }
	cat "$LOG/xr"
	grep -q "all bytes ok" "$LOG/xr"
	# the receiver is done once every message arrived; the second copies
	# of the last one may still be on their way: all 2n + 1 packets seen
	wait_stats "\"rx_packets\":$((2 * n + 1))," || fail "the runtime did not see all $((2 * n + 1)) packets"
	S "$SPINCTL" -j stats veth0 >"$LOG/st"
	cat "$LOG/st"
	grep -q "\"to_xsk\":$n," "$LOG/st" || fail "to_xsk != $n"
	grep -q "\"duplicate\":$n," "$LOG/st" || fail "duplicate != $n (every packet was sent twice)"
	S "$SPINCTL" stats veth0 | grep -q "^to_xsk *$n$" || fail "spinctl stats does not show to_xsk"
}

t_xsk_send() {
	# the server sends with spin_xsk_send (runtime attached for its
	# socket map); the client receives on a UDP socket
	local rpid n kicks waits pkts
	n=$(xsk_pkts)
	attach_srv
	S "$SPINCTL" peer add veth0 0 10.77.1.1
	: >"$LOG/sr"	# (see pp_server)
	nsx "$CLI" "$XSKP" sock-recv sizes $XSK_SIZES timeout-ms $WAIT_MS >"$LOG/sr" 2>&1 &
	rpid=$!
	wait_ready $rpid "$LOG/sr"
	S "$XSKP" send veth0 to-rank 0 pt 0 bits 7 sizes $XSK_SIZES order shuffle >"$LOG/tx"
	cat "$LOG/tx"
	wait $rpid || { cat "$LOG/sr"; fail "UDP receiver failed"; }
	cat "$LOG/sr"
	grep -q "all bytes ok" "$LOG/sr"
	pkts=$(sed -n 's/.* tx_packets \([0-9]*\) .*/\1/p' "$LOG/tx")
	kicks=$(sed -n 's/.* tx_kicks \([0-9]*\) .*/\1/p' "$LOG/tx")
	waits=$(sed -n 's/.* tx_waits \([0-9]*\) .*/\1/p' "$LOG/tx")
	[ "$pkts" = "$n" ] || fail "tx_packets $pkts, want $n"
	# batches, not a system call per packet.  A kick the kernel could not
	# take frames from (the peer's ring full: veth0 has a queue, so that
	# stops the sender) is followed by a wait (tx_waits) and a kick again;
	# how many there are depends on the scheduling, so they do not count.
	[ -n "$kicks" ] && [ -n "$waits" ] || fail "no tx_kicks / tx_waits in the sender's statistics"
	[ "$(((kicks - waits) * 8))" -le "$pkts" ] ||
		fail "$kicks sendto() kicks ($waits of them after a wait) for $pkts packets"
}

t_xsk_errors() {
	# runtime not attached
	expect_rc 8 S "$XSKP" open veth0
	grep -q "not attached" "$LOG/out"
	# pins there, but the interface's XDP program is gone
	attach_srv >/dev/null
	ip -n "$SRV" link set dev veth0 xdp off
	expect_rc 8 S "$XSKP" open veth0
	grep -q "is the runtime attached" "$LOG/out"
	S "$SPINCTL" detach veth0 >/dev/null 2>&1 || true
	attach_srv >/dev/null
	# a queue veth0 does not have
	expect_rc 2 S "$XSKP" open veth0 queue 5
	grep -q "queue 5" "$LOG/out"
	# a queue another socket owns (the holder waits for a message that
	# never comes, until it is killed once the check is done; nsenter
	# execs it, so $! is the holder itself)
	: >"$LOG/hold"	# (see pp_server)
	nsenter --net="/var/run/netns/$SRV" -- "$XSKP" recv veth0 sizes 1 timeout-ms 600000 quiet-ms 1 \
		>"$LOG/hold" 2>&1 &
	local hold=$!
	echo $hold >"$LOG/server.pid"	# run_test kills it if a check fails
	wait_ready $hold "$LOG/hold"
	expect_rc 9 S "$XSKP" open veth0
	grep -q "another AF_XDP socket" "$LOG/out"
	kill $hold 2>/dev/null || true
	wait $hold || true
	# closed sockets leave the queue and the socket map free.  The kernel
	# releases a closed socket's queue in a work item, after close()
	# returned; xsk_peer retries a busy queue for 1 s, a loaded machine may
	# take longer: up to WAIT_MS
	spin_wait_until $WAIT_S xsk_open_ok || fail "queue 0 still busy after the holder was killed"
	spin_wait_until $WAIT_S xsk_open_ok || fail "queue 0 busy after a closed socket"
}
xsk_open_ok() { S "$XSKP" open veth0 >"$LOG/open" 2>&1 || { cat "$LOG/open"; false; }; }

t_ack() {
	# a put with an ack request: the target's runtime answers with an ACK
	attach_srv
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 5 len 1000 >/dev/null
	S "$SPINCTL" peer add veth0 0 10.77.1.1	# acks go to the initiator's rank
	C "$SPINCTL" -j send to 10.77.1.2 pt 0 bits 5 len 3000 rank 0 msg-id 9191 ack \
		reply-timeout-ms $WAIT_MS >"$LOG/ack.json"
	cat "$LOG/ack.json"
	grep -q '"op":3' "$LOG/ack.json" || fail "no ACK"
	grep -q '"msg_id":9191' "$LOG/ack.json" || fail "ACK for another message"
	grep -q '"len":0' "$LOG/ack.json" || fail "ACK with payload"
	S "$SPINCTL" -j stats veth0 | grep -q '"acks_sent":1' || fail "acks_sent != 1"
}

# get_hex FILE: the "data" field of spinctl -j output
get_hex() { sed -n 's/.*"data":"\([0-9a-f]*\)".*/\1/p' "$1"; }
# slice_hex FILE OFF LEN: bytes [OFF, OFF+LEN) of FILE in hex
slice_hex() { tail -c +$(($2 + 1)) "$1" | head -c "$3" | od -An -v -tx1 | tr -d ' \n'; }

t_get() {
	# the client puts bytes into an entry that allows puts and gets, then
	# gets them back: 100 bytes answered by the server's runtime (XDP_TX;
	# or, if the frame had no room to grow, by the server's process),
	# 100000 bytes by the server's process (serve-puts)
	local want got sent queued
	attach_srv
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 9 len 200000 op put,get >/dev/null
	S "$SPINCTL" me append veth0 pt 0 bits 10 len 4096 >/dev/null	# puts only
	S "$SPINCTL" peer add veth0 0 10.77.1.1	# replies go to the initiator's rank
	# the host's side of the long get: it finds the get's event in the
	# ring whenever it starts reading, so nothing waits for it to be up
	: >"$LOG/get-ev"	# (see pp_server)
	nsenter --net="/var/run/netns/$SRV" -- "$SPINCTL" events veth0 serve-puts >"$LOG/get-ev" 2>&1 &
	echo $! >"$LOG/server.pid"
	head -c 150000 /dev/urandom >"$LOG/getdata"
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 9 file "$LOG/getdata" rank 0 >/dev/null
	# the gets read what the put deposited
	wait_stats '"msgs_completed":1,' || fail "the put did not complete"
	C "$SPINCTL" -v -j get to 10.77.1.2 pt 0 bits 9 len 100 remote-off 1000 rank 0 \
		timeout-ms $WAIT_MS >"$LOG/get.json"
	cut -c 1-400 "$LOG/get.json"
	grep -q '"op":4' "$LOG/get.json" || fail "no REPLY"
	grep -q '"len":100,' "$LOG/get.json" || fail "reply length != 100"
	grep -q '"user_hdr":\[100,0,0,0\]' "$LOG/get.json" || fail "user header words"
	want=$(slice_hex "$LOG/getdata" 1000 100)
	got=$(get_hex "$LOG/get.json")
	[ -n "$want" ] && [ "$got" = "$want" ] || fail "100-byte reply differs from what was put"
	S "$SPINCTL" -j stats veth0 | grep -q '"replies_sent":1,' || fail "100-byte reply not sent by the runtime"
	for i in $(seq 20); do
		C "$SPINCTL" -v -j get to 10.77.1.2 pt 0 bits 9 len $((i * 60)) remote-off $((i * 100)) \
			rank 0 timeout-ms $WAIT_MS >"$LOG/get.json"
		[ "$(get_hex "$LOG/get.json")" = "$(slice_hex "$LOG/getdata" $((i * 100)) $((i * 60)))" ] ||
			fail "reply of $((i * 60)) bytes at $((i * 100)) differs"
	done
	S "$SPINCTL" -j stats veth0 >"$LOG/get-st"
	sent=$(sed -n 's/.*"replies_sent":\([0-9]*\),.*/\1/p' "$LOG/get-st")
	queued=$(sed -n 's/.*"tx_host_queued":\([0-9]*\),.*/\1/p' "$LOG/get-st")
	echo "replies sent by the runtime: $sent, by the process: $queued"
	[ "$((sent + queued))" -eq 21 ] || fail "want 21 replies"
	[ "$sent" -ge 1 ] || fail "no reply sent by the runtime"

	# longer than one packet: the server's process sends the reply
	C "$SPINCTL" -v -j get to 10.77.1.2 pt 0 bits 9 len 100000 remote-off 20000 rank 0 \
		timeout-ms $WAIT_MS >"$LOG/getlong.json"
	cut -c 1-400 "$LOG/getlong.json"
	grep -q '"op":4' "$LOG/getlong.json" || fail "no REPLY for the long get"
	grep -q '"len":100000,' "$LOG/getlong.json" || fail "long reply length != 100000"
	want=$(slice_hex "$LOG/getdata" 20000 100000)
	got=$(get_hex "$LOG/getlong.json")
	[ "${#got}" -eq 200000 ] && [ "$got" = "$want" ] || fail "100000-byte reply differs from what was put"
	# the server prints the event after it sent the reply
	spin_wait_until $WAIT_S grep -q "^get_from_host ok .* rlen 100000 mlen 100000 " "$LOG/get-ev" ||
		fail "no get_from_host event"

	# truncation at the window, and entries without 'op get' do not answer
	C "$SPINCTL" -j get to 10.77.1.2 pt 0 bits 9 len 1000 remote-off 199900 rank 0 \
		timeout-ms $WAIT_MS >"$LOG/gettrunc.json"
	cat "$LOG/gettrunc.json"
	grep -q '"len":100,' "$LOG/gettrunc.json" || fail "truncated reply length != 100"
	grep -q '"user_hdr":\[1000,' "$LOG/gettrunc.json" || fail "requested length not in user_hdr[0]"
	# ... they answer with a negative reply (wire.h: nacks), not silence
	expect_rc 8 C "$SPINCTL" get to 10.77.1.2 pt 0 bits 10 len 10 rank 0 timeout-ms $WAIT_MS
	grep -q "failure 'no_match'" "$LOG/out" || fail "the negative reply does not name no_match"
	S "$SPINCTL" -j stats veth0 >"$LOG/getnack.stats"
	grep -q '"no_match":1,' "$LOG/getnack.stats" || fail "no_match != 1"
	grep -q '"nacks_sent":1,' "$LOG/getnack.stats" || fail "nacks_sent != 1"
}

# ------------------------------------------------------------------- main --

if [ "$(id -u)" != 0 ]; then
	echo "SKIP veth/all (needs root)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
spin_bpffs_ensure || { echo "FAIL veth/setup (no bpffs)"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
if ! spin_ns_pair "$CLI" veth0 10.77.1.1 "$SRV" veth0 10.77.1.2; then
	echo "FAIL veth/setup"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
spin_ns_xdp_pass "$CLI" veth0
# a queue on both ends: a burst (a 1 MB ping is 723 packets, xsk_recv sends
# 2062 at once; the ring takes 256) that comes while the receiver's NAPI
# has not run stops the sender instead of losing a packet (no
# retransmission: the test would time out).  The limit is above what the
# senders' socket buffers hold, so the queue never drops either.
if ! { spin_ns_fifo "$CLI" veth0 10000 && spin_ns_fifo "$SRV" veth0 10000; }; then
	echo "FAIL veth/setup (no pfifo qdisc on veth0)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
# a second client behind the server's second interface (put_redirect)
if ! spin_ns_pair "$CL2" veth0 10.77.2.1 "$SRV" veth1 10.77.2.2; then
	echo "FAIL veth/setup"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
spin_ns_xdp_pass "$CL2" veth0
# the job of the t_job_* tests: one rank per namespace; no launcher
# variables from the caller's environment
unset SPIN_HOSTFILE SPIN_RANK SPIN_SIZE PMI_RANK PMI_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE
cat >"$LOG/hosts.plain" <<EOF
# rank = index among the host lines
10.77.1.1	# $CLI
10.77.1.2	# $SRV

10.77.2.1	# $CL2
EOF
cat >"$LOG/hosts.kv" <<EOF
rank=2 ip=10.77.2.1 mac=$(spin_ns_mac "$CL2" veth0)	# behind the server's veth1
rank=0 ip=10.77.1.1
rank=1   ip=10.77.1.2
EOF

run_test attach_detach t_attach_detach
run_test attach_generic t_attach_generic
run_test errors t_errors
run_test pingpong_stream t_pingpong_stream
run_test pingpong_store t_pingpong_store
run_test counters t_counters
run_test completion_once_duplicates t_completion_once_duplicates
run_test send_reply t_send_reply
run_test other_traffic_passes t_other_traffic_passes
run_test put_redirect t_put_redirect
run_test peer_source t_peer_source
run_test job_key t_job_key
run_test auth_key t_auth_key
run_test auth_get t_auth_get
run_test ack t_ack
run_test get t_get
run_test job_rank_by_address t_job_rank_by_address
run_test job_rank_by_env t_job_rank_by_env
run_test job_peer_load t_job_peer_load
run_test job_errors t_job_errors
run_test xsk_recv t_xsk_recv
run_test xsk_send t_xsk_send
run_test xsk_errors t_xsk_errors

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
