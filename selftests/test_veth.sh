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
FILTER=${2:-}
[ "${1:-}" = "-t" ] || FILTER=
PASS=0 FAIL=0 SKIP=0
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
	local name=$1 fn=$2 rc
	if [ -n "$FILTER" ] && [[ $name != $FILTER ]]; then
		return
	fi
	( set -e; "$fn" ) >"$LOG/$name" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS veth/$name"; PASS=$((PASS + 1))
	elif [ $rc -eq 77 ]; then
		echo "SKIP veth/$name"; SKIP=$((SKIP + 1)); sed 's/^/    /' "$LOG/$name" | tail -5
	else
		echo "FAIL veth/$name"; FAIL=$((FAIL + 1)); sed 's/^/    /' "$LOG/$name" | tail -25
	fi
	# every test leaves the server interface as it found it
	S "$SPINCTL" detach veth0 >/dev/null 2>&1 || true
	if [ -s "$LOG/server.pid" ]; then
		kill "$(cat "$LOG/server.pid")" 2>/dev/null || true
		rm -f "$LOG/server.pid"
	fi
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
	local mode=$1
	nsenter --net="/var/run/netns/$SRV" -- "$PP" server veth0 "$mode" client 0 10.77.1.1 seconds 60 >"$LOG/server" 2>&1 &
	echo $! >"$LOG/server.pid"
	for _ in $(seq 50); do
		grep -q "pingpong server" "$LOG/server" && return 0
		sleep 0.1
	done
	cat "$LOG/server"
	return 1
}

# ------------------------------------------------------------------ tests --

t_attach_detach() {
	attach_srv
	S "$SPINCTL" -j status veth0 | grep -q '"prog_id"'
	ip -n "$SRV" link show veth0 | grep -q "prog/xdp"
	S "$SPINCTL" detach veth0
	no_pins
}

t_attach_generic() {
	attach_srv generic
	ip -n "$SRV" link show veth0 | grep -q "xdpgeneric"
	start_pp_server stream
	C "$PP" client 10.77.1.2 stream size 64,4000 count 50 quiet
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
	C "$PP" client 10.77.1.2 stream size 64,1384 count 500 quiet
	C "$PP" client 10.77.1.2 stream size 1385,4000,65536 count 50 order shuffle quiet
	C "$PP" client 10.77.1.2 stream size 20000 count 20 order reverse quiet
	S "$SPINCTL" -j stats veth0 >"$LOG/stats"
	cat "$LOG/stats"
	grep -q '"tx_device":' "$LOG/stats"
}

t_pingpong_store() {
	attach_srv
	start_pp_server store
	C "$PP" client 10.77.1.2 store size 64,1384 count 300 quiet
	C "$PP" client 10.77.1.2 store size 1385,4000,65536,1000000 count 20 order shuffle quiet
	C "$PP" client 10.77.1.2 store size 20000 count 20 order reverse quiet
}

t_counters() {
	local ev
	attach_srv
	S "$SPINCTL" pt alloc veth0 3
	S "$SPINCTL" me append veth0 pt 3 bits 0x55 len 65536
	S "$SPINCTL" events veth0 count 10 timeout-ms 5000 >"$LOG/ev" &
	ev=$!
	sleep 0.3
	for i in $(seq 10); do
		C "$SPINCTL" send to 10.77.1.2 pt 3 bits 0x55 len $((i * 1000)) rank 0 >/dev/null
	done
	wait $ev
	cat "$LOG/ev"
	[ "$(grep -c "put" "$LOG/ev")" -eq 10 ] || fail "want 10 completion events"
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
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 1 len 65536 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 5000 rank 0 msg-id 4242 >/dev/null
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 5000 rank 0 msg-id 4242 >/dev/null
	sleep 0.2
	S "$SPINCTL" -j stats veth0 >"$LOG/st"
	cat "$LOG/st"
	grep -q '"msgs_completed":1,' "$LOG/st" || fail "completed != 1"
	grep -q '"duplicate":4' "$LOG/st" || fail "4 duplicate packets not counted"
}

t_send_reply() {
	attach_srv
	start_pp_server stream
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 data 68656c6c6f rank 0 reply-timeout-ms 2000 >"$LOG/r"
	cat "$LOG/r"
	grep -q "68 65 6c 6c 6f\|hello" "$LOG/r" || fail "no reply with the sent bytes"
}

t_other_traffic_passes() {
	attach_srv
	nsenter --net="/var/run/netns/$SRV" -- "$TOP/bench/udp_echo" --port 9000 >/dev/null 2>&1 &
	echo $! >"$LOG/server.pid"
	sleep 0.3
	C "$TOP/bench/pingclient" --dst 10.77.1.2 --port 9000 --count 50 --size 64 >"$LOG/pc"
	cat "$LOG/pc"
	S "$SPINCTL" -j stats veth0 | grep -q '"passed":' || fail "passed counter missing"
	! S "$SPINCTL" -j stats veth0 | grep -q '"passed":0,' || fail "no frames passed"
}

t_put_redirect() {
	# the pong goes to a peer behind another interface: bpf_redirect
	local cl2=$CL2
	attach_srv
	S "$SPINCTL" peer add veth0 5 10.77.2.1 dev veth1
	start_pp_server stream
	nsx "$cl2" "$SPINCTL" recv count 3 timeout-ms 5000 >"$LOG/recv" 2>&1 &
	local rpid=$!
	sleep 0.3
	# one 3000-byte ping from "rank 5": three pong messages, sent to rank 5
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 1 len 3000 rank 5 >/dev/null
	wait $rpid || { cat "$LOG/recv"; fail "rank 5 did not receive 3 pongs"; }
	cat "$LOG/recv"
	[ "$(grep -c "^message from 10.77.2.2" "$LOG/recv")" -eq 3 ] || fail "want 3 messages from the server"
	grep -q "bits 0xa" "$LOG/recv" || fail "pong match bits"
	S "$SPINCTL" -j stats veth0 | grep -q '"tx_device":3' || fail "tx_device != 3"
}

# ---------------------------------------------------------- AF_XDP path --

XSK_SIZES=8,100,1384,1385,4000,65536,300000,1048576

# packets of the messages in XSK_SIZES (1384 payload bytes each)
xsk_pkts() {
	local n=0 s
	for s in ${XSK_SIZES//,/ }; do n=$((n + (s + 1383) / 1384)); done
	echo $n
}

# wait_ready LOG: a receiver printed "ready"
wait_ready() {
	for _ in $(seq 50); do
		grep -q "^ready" "$1" && return 0
		sleep 0.1
	done
	cat "$1"
	fail "receiver not ready"
}

t_xsk_recv() {
	# an xsk entry's packets reach the AF_XDP socket of the server's
	# process; the client sends every message twice, packets shuffled
	local rpid n
	n=$(xsk_pkts)
	attach_srv
	S "$SPINCTL" pt alloc veth0 0
	S "$SPINCTL" me append veth0 pt 0 bits 7 xsk >/dev/null
	# no socket yet: dropped and counted
	C "$SPINCTL" send to 10.77.1.2 pt 0 bits 7 len 100 rank 0 >/dev/null
	for _ in $(seq 20); do
		S "$SPINCTL" -j stats veth0 | grep -q '"no_xsk":1,' && break
		sleep 0.05
	done
	S "$SPINCTL" -j stats veth0 | grep -q '"no_xsk":1,' || fail "no_xsk != 1 without a socket"
	nsx "$SRV" "$XSKP" recv veth0 sizes $XSK_SIZES timeout-ms 10000 >"$LOG/xr" 2>&1 &
	rpid=$!
	wait_ready "$LOG/xr"
	C "$XSKP" sock-send to 10.77.1.2 pt 0 bits 7 sizes $XSK_SIZES order shuffle msg-order shuffle dup
	wait $rpid || { cat "$LOG/xr"; fail "AF_XDP receiver failed"; }
	cat "$LOG/xr"
	grep -q "all bytes ok" "$LOG/xr"
	S "$SPINCTL" -j stats veth0 >"$LOG/st"
	cat "$LOG/st"
	grep -q "\"to_xsk\":$n," "$LOG/st" || fail "to_xsk != $n"
	grep -q "\"duplicate\":$n," "$LOG/st" || fail "duplicate != $n (every packet was sent twice)"
	S "$SPINCTL" stats veth0 | grep -q "^to_xsk *$n$" || fail "spinctl stats does not show to_xsk"
}

t_xsk_send() {
	# the server sends with spin_xsk_send (runtime attached for its
	# socket map); the client receives on a UDP socket
	local rpid n kicks pkts
	n=$(xsk_pkts)
	attach_srv
	S "$SPINCTL" peer add veth0 0 10.77.1.1
	nsx "$CLI" "$XSKP" sock-recv sizes $XSK_SIZES timeout-ms 10000 >"$LOG/sr" 2>&1 &
	rpid=$!
	wait_ready "$LOG/sr"
	S "$XSKP" send veth0 to-rank 0 pt 0 bits 7 sizes $XSK_SIZES order shuffle >"$LOG/tx"
	cat "$LOG/tx"
	wait $rpid || { cat "$LOG/sr"; fail "UDP receiver failed"; }
	cat "$LOG/sr"
	grep -q "all bytes ok" "$LOG/sr"
	pkts=$(sed -n 's/.* tx_packets \([0-9]*\) .*/\1/p' "$LOG/tx")
	kicks=$(sed -n 's/.* tx_kicks \([0-9]*\) .*/\1/p' "$LOG/tx")
	[ "$pkts" = "$n" ] || fail "tx_packets $pkts, want $n"
	# batches, not a system call per packet
	[ "$((kicks * 8))" -le "$pkts" ] || fail "$kicks sendto() kicks for $pkts packets"
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
	# a queue another socket owns
	nsx "$SRV" "$XSKP" recv veth0 sizes 1 timeout-ms 1500 quiet-ms 1 >"$LOG/hold" 2>&1 &
	local hold=$!
	wait_ready "$LOG/hold"
	expect_rc 9 S "$XSKP" open veth0
	grep -q "another AF_XDP socket" "$LOG/out"
	wait $hold || true
	# closed sockets leave the queue and the socket map free
	S "$XSKP" open veth0 >/dev/null
	S "$XSKP" open veth0 >/dev/null
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
# a second client behind the server's second interface (put_redirect)
if ! spin_ns_pair "$CL2" veth0 10.77.2.1 "$SRV" veth1 10.77.2.2; then
	echo "FAIL veth/setup"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
spin_ns_xdp_pass "$CL2" veth0

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
run_test xsk_recv t_xsk_recv
run_test xsk_send t_xsk_send
run_test xsk_errors t_xsk_errors

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
