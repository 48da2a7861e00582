#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# spinctl and libspin against bad input and hostile pin directories
# (issue 14): a table of malformed invocations, each of which must print
# one line on stderr, exit with its documented code and change nothing;
# window lengths that wrap; pin directories someone else made or linked;
# the order and completeness of detach; the rendezvous file; owners.
#
# Everything runs in two network namespaces made here and in a bpffs
# mounted here (SPIN_BPFFS) in a mount namespace of its own, nothing in
# /sys/fs/bpf.  One PASS/FAIL/SKIP
# line per test and a closing "N passed, N failed, N skipped".
#
#   selftests/test_spinctl.sh [-t GLOB]
set -u
# A mount namespace of our own: the test's bpffs must not be seen by other
# programs (iproute2 puts its pins into the first bpffs it finds mounted).
if [ "$(id -u)" = 0 ] && [ -z "${SPIN_CTL_PRIVATE:-}" ]; then
	exec env SPIN_CTL_PRIVATE=1 unshare --mount --propagation private -- "$0" "$@"
fi
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
# the ABI version this tree builds (wire.h)
ABI=$(sed -n 's/^#define SPIN_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' include/spin/wire.h)
. selftests/lib/netns.sh
SPINCTL=$TOP/tools/spinctl
HELPER=$TOP/selftests/spinctl_helper
TAG=spintc$$
NSA=$TAG-a
NSB=$TAG-b
spin_test_args "$@"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

if [ "$(id -u)" != 0 ]; then
	echo "SKIP spinctl/all (needs root)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
LOG=$(mktemp -d /tmp/spin-ctl.XXXXXX)
chmod 755 "$LOG"	# uid 65534 reaches the bpffs below it
B=$LOG/bpffs		# a bpffs of our own: roots for SPIN_BPFFS below it
TB=$B/t			# the table's runtime
cleanup() {
	# namespaces first: deleting the veths detaches every XDP program,
	# also one held by a bpf_link; then the bpffs and its pins
	spin_ns_cleanup
	if mountpoint -q "$B" 2>/dev/null; then
		umount -l "$B" 2>/dev/null || true
	fi
	rm -rf "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A: spinctl in namespace A with the table's bpffs root
A() { nsx "$NSA" env SPIN_BPFFS="$TB" "$@"; }
fail() { echo "$*"; return 1; }
ino_a() { stat -L -c %i "/var/run/netns/$NSA"; }

# veth2 as setup left it: nothing attached, no pins (tests use it; so does
# a bad invocation that the code under test wrongly accepted)
restore_veth2() {
	A "$SPINCTL" detach veth2 >/dev/null 2>&1 || true
	ip -n "$NSA" link set dev veth2 xdp off 2>/dev/null || true
	ip -n "$NSA" link set dev veth2 xdpgeneric off 2>/dev/null || true
	rm -f "$B/xdp-link"
}

run_test() {
	spin_run_test spinctl "$1" "$2" 40
	if [ "$SPIN_RAN" = 1 ]; then
		restore_veth2
	fi
}

# ------------------------------------------------------------ setup --

setup() {
	mkdir -p "$B" || return 1
	mount -t bpf bpf "$B" || return 1
	chmod 1777 "$B"		# like /sys/fs/bpf: anyone may create entries
	mkdir -m 755 "$TB" || return 1
	spin_ns_pair "$NSA" veth0 10.77.40.1 "$NSB" veth1 10.77.40.2 || return 1
	ip link add veth2 netns "$NSA" type veth peer name veth3 netns "$NSB" || return 1
	ip -n "$NSA" addr add 10.77.41.1/24 dev veth2
	ip -n "$NSB" addr add 10.77.41.2/24 dev veth3
	ip -n "$NSA" link set veth2 up
	ip -n "$NSB" link set veth3 up
	for ns in "$NSA" "$NSB"; do
		nsx "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
		nsx "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
	done
	# the table's runtime: one portal table entry, one match entry, a peer
	A "$SPINCTL" attach veth0 rank 1 >/dev/null || return 1
	A "$SPINCTL" pt alloc veth0 0 || return 1
	A "$SPINCTL" me append veth0 pt 0 bits 1 len 64k >/dev/null || return 1
	A "$SPINCTL" peer add veth0 2 10.77.40.2 mac 02:00:00:00:00:02 || return 1
}

# ------------------------------------------------- the bad-input table --

# Everything a bad invocation could change: the pins (names, types, modes,
# owners), the runtime's configuration with its generation counter (every
# table change bumps it) and the XDP programs of both namespaces.
snap() {
	find "$B" -printf '%P %y %m %u\n' 2>&1 | sort
	A "$SPINCTL" -j status veth0 2>&1
	# the interfaces and their XDP programs (not the carrier, which
	# comes and goes on its own)
	ip -n "$NSA" -o link show 2>&1 | grep -o '^[0-9]*: [^:]*\|prog/xdp.* id [0-9]*'
	ip -n "$NSB" -o link show 2>&1 | grep -o '^[0-9]*: [^:]*\|prog/xdp.* id [0-9]*'
}

ROWS=0 ROW_FAIL=0 BASE=
# bad RC PATTERN ARGS...: `spinctl ARGS` (in namespace A) exits RC with
# exactly one line "spinctl: ..." on stderr matching PATTERN (ERE), nothing
# on stdout, and the state is as before.
bad() {
	local want=$1 pat=$2 rc=0 why= now
	shift 2
	ROWS=$((ROWS + 1))
	timeout -k 2 8 nsenter --net="/var/run/netns/$NSA" -- env SPIN_BPFFS="$TB" "$SPINCTL" "$@" \
		>"$LOG/row.out" 2>"$LOG/row.err" </dev/null || rc=$?
	if [ "$rc" -ne "$want" ]; then
		why="exit $rc, want $want"
	elif [ -s "$LOG/row.out" ]; then
		why="output on stdout: $(head -c 200 "$LOG/row.out")"
	elif [ "$(wc -l <"$LOG/row.err")" -ne 1 ] || [ "$(wc -c <"$LOG/row.err")" -le 1 ]; then
		why="stderr is not one line: $(head -c 300 "$LOG/row.err" | tr '\n' '|')"
	elif ! grep -q '^spinctl: ' "$LOG/row.err"; then
		why="stderr does not start with 'spinctl: '"
	elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$LOG/row.err"; then
		why="message does not match /$pat/"
	fi
	now=$(snap)
	if [ "$now" != "$BASE" ]; then
		why="${why:+$why; }changed the state: $(diff <(echo "$BASE") <(echo "$now") | grep '^[<>]' | head -4 | tr '\n' '|')"
		restore_veth2
		BASE=$(snap)
	fi
	if [ -n "$why" ]; then
		ROW_FAIL=$((ROW_FAIL + 1))
		echo "row $ROWS: spinctl $(printf '%q ' "$@"): $why"
		echo "    stderr: $(head -c 300 "$LOG/row.err" | tr '\n' '|')"
	fi
	return 0
}

table_start() { ROWS=0; ROW_FAIL=0; BASE=$(snap); }
table_end() {
	echo "$ROWS invocations, $ROW_FAIL wrong"
	[ "$ROW_FAIL" -eq 0 ]
}

# Malformed numbers: no leading zeros (base-0 octal), white space, signs,
# suffixes or trailing junk; the message names the option.
t_bad_numbers() {
	table_start
	local NUM='bad number'
	bad 2 "port: $NUM" attach veth2 port 010
	bad 2 "port: $NUM" attach veth2 port ' 7717'
	bad 2 "port: $NUM" attach veth2 port '7717 '
	bad 2 "port: $NUM" attach veth2 port +7717
	bad 2 "port: $NUM" attach veth2 port -1
	bad 2 "port: $NUM" attach veth2 port 7717x
	bad 2 "port: $NUM" attach veth2 port 0x
	bad 2 "port: $NUM" attach veth2 port ''
	bad 2 "rank: $NUM" attach veth2 rank 1.0
	bad 2 "rank: $NUM" attach veth2 rank 1e3
	bad 2 "pid: $NUM" attach veth2 pid 0b101
	bad 2 "pid: $NUM" attach veth2 pid 0o7
	bad 2 "pages: $NUM" attach veth2 pages 010
	bad 2 "pages: $NUM" attach veth2 pages 08
	bad 2 "pages: $NUM" attach veth2 pages ' -1'
	bad 2 "pages: $NUM" attach veth2 pages 4k
	bad 2 "timeout-ms: $NUM" attach veth2 timeout-ms 1,000
	bad 2 "timeout-ms: $NUM" attach veth2 timeout-ms 0x1g
	bad 2 "key: $NUM" attach veth2 key 0x5eed_1234
	bad 2 "key: $NUM" attach veth2 key 05
	# auth keys: 32 hex digits or a 0600 file holding them
	bad 2 "auth key '0x1234': give 32 hex digits" attach veth2 auth-key 0x1234
	bad 2 "auth key '00112233445566778899aabbccddeeff0': give 32" attach veth2 auth-key 00112233445566778899aabbccddeeff0
	bad 2 "auth key: all zero" attach veth2 auth-key 00000000000000000000000000000000
	bad 2 "auth key file $LOG/no-such-key: No such file" attach veth2 auth-key "$LOG/no-such-key"
	printf '00112233445566778899aabbccddeeff\n' >"$LOG/key.loose"; chmod 644 "$LOG/key.loose"
	bad 2 "auth key file $LOG/key.loose is readable or writable by others: run 'chmod 600" attach veth2 auth-key "$LOG/key.loose"
	printf 'not a key\n' >"$LOG/key.bad"; chmod 600 "$LOG/key.bad"
	bad 2 "auth key file $LOG/key.bad: its first line must be 32 hex digits" attach veth2 auth-key "$LOG/key.bad"
	bad 2 "'auth-key' needs a value" attach veth2 auth-key
	bad 2 "INDEX: $NUM" pt alloc veth0 01
	bad 2 "INDEX: $NUM" pt alloc veth0 ' 1'
	bad 2 "INDEX: $NUM" pt enable veth0 -0
	bad 2 "INDEX: $NUM" pt free veth0 1a
	bad 2 "pt: $NUM" me append veth0 pt 00
	bad 2 "bits: $NUM" me append veth0 pt 0 bits 0xg
	bad 2 "bits: $NUM" me append veth0 pt 0 bits -1
	bad 2 "bits: $NUM" me append veth0 pt 0 bits ' 1'
	bad 2 "bits: $NUM" me append veth0 pt 0 bits 1_000
	bad 2 "ignore: $NUM" me append veth0 pt 0 ignore 0X
	bad 2 "rank: $NUM" me append veth0 pt 0 rank 01
	bad 2 "rank: $NUM" me append veth0 pt 0 rank any1
	bad 2 "pid: $NUM" me append veth0 pt 0 pid anyx
	bad 2 "len: bad size" me append veth0 pt 0 len ' -1'
	bad 2 "len: bad size" me append veth0 pt 0 len -1
	bad 2 "len: bad size" me append veth0 pt 0 len 64kk
	bad 2 "len: bad size" me append veth0 pt 0 len 64q
	bad 2 "len: bad size" me append veth0 pt 0 len 010
	bad 2 "len: bad size" me append veth0 pt 0 len 1.5k
	bad 2 "off: bad size" me append veth0 pt 0 off 4096x
	bad 2 "hhost-len: bad size" me append veth0 pt 0 hhost-len +4096
	bad 2 "hhost-off: bad size" me append veth0 pt 0 hhost-off 0x-1
	bad 2 "user-ptr: $NUM" me append veth0 pt 0 user-ptr 0x1p3
	bad 2 "INDEX: $NUM" me show veth0 007
	bad 2 "state-bytes: bad size" me show veth0 0 state-bytes 064
	bad 2 "INDEX: $NUM" me unlink veth0 ' 0'
	bad 2 "RANK: $NUM" peer add veth0 02 10.77.40.2
	bad 2 "port: $NUM" peer add veth0 2 10.77.40.2 port 07717
	bad 2 "pid: $NUM" peer add veth0 2 10.77.40.2 pid -5
	bad 2 "RANK: $NUM" peer del veth0 '2 '
	bad 2 "count: $NUM" events veth0 count 010 timeout-ms 1
	bad 2 "timeout-ms: $NUM" events veth0 count 1 timeout-ms 1s
	bad 2 "count: $NUM" recv count 01 timeout-ms 1
	bad 2 "port: $NUM" recv port 7717.0 timeout-ms 1
	bad 2 "len: bad size" send to 10.77.40.2 pt 0 len 010
	bad 2 "seg: $NUM" send to 10.77.40.2 pt 0 seg 0x
	bad 2 "msg-id: $NUM" send to 10.77.40.2 pt 0 msg-id ' 1'
	bad 2 "user-hdr: $NUM" send to 10.77.40.2 pt 0 user-hdr 1,,2
	bad 2 "user-hdr: $NUM" send to 10.77.40.2 pt 0 user-hdr 1,2,
	bad 2 "user-hdr: $NUM" send to 10.77.40.2 pt 0 user-hdr 1,-2
	bad 2 "reply-timeout-ms: $NUM" send to 10.77.40.2 pt 0 reply-timeout-ms 10ms
	bad 2 "len: bad size" get to 10.77.40.2 pt 0 len 08
	bad 2 "timeout-ms: $NUM" get to 10.77.40.2 pt 0 len 8 timeout-ms 0x
	bad 2 "remote-off: $NUM" get to 10.77.40.2 pt 0 len 8 remote-off +0
	table_end
}

# Numbers outside their option's range, overflowing 64 bits, or lengths
# that would wrap; the message names the option and the range.
t_bad_ranges() {
	table_start
	local R='is out of range'
	bad 2 "port: .* $R \(1\.\.65535\)" attach veth2 port 0
	bad 2 "port: .* $R" attach veth2 port 65536
	bad 2 "get-max: .* $R \(1\.\.1073741824\)" attach veth2 get-max 0
	bad 2 "get-max: .* $R" attach veth2 get-max 1073741825
	bad 2 "rank: .* $R \(0\.\.4294967294\)" attach veth2 rank 4294967295
	bad 2 "rank: .* $R" attach veth2 rank 4294967296
	bad 2 "pages: '0xffffffff' $R \(1\.\.1048576\)" attach veth2 pages 0xffffffff
	bad 2 "pages: .* $R" attach veth2 pages 0
	bad 2 "pages: .* $R" attach veth2 pages 1048577
	bad 2 "timeout-ms: .* $R \(1\.\.2147483647\)" attach veth2 timeout-ms 18446744073709551615
	bad 2 "timeout-ms: .* $R" attach veth2 timeout-ms 18446744073709551616
	bad 2 "timeout-ms: .* $R" attach veth2 timeout-ms 0
	bad 2 "key: .* $R \(1\.\.4294967295\)" attach veth2 key 0
	bad 2 "key: .* $R" attach veth2 key 0x100000000
	bad 2 "timeout-ms: .* $R" attach veth2 timeout-ms 2147483648
	bad 2 "INDEX: .* $R \(0\.\.2047\)" pt alloc veth0 2048
	bad 2 "INDEX: .* $R" pt alloc veth0 4294967296
	bad 2 "pt: .* $R" me append veth0 pt 2048
	bad 2 "len: .* $R" me append veth0 pt 0 len 0xffffffffffffffff
	bad 2 "len: .* $R" me append veth0 pt 0 len 18446744073709551615
	bad 2 "len: .* $R" me append veth0 pt 0 len 0xfffffffffffff001
	bad 2 "len: .* $R" me append veth0 pt 0 len 16777216g
	bad 2 "len: .* $R" me append veth0 pt 0 len 4294967297
	bad 2 "hhost-len: .* $R" me append veth0 pt 0 hhost-len 0xffffffffffffffff
	bad 2 "off: .* $R" me append veth0 pt 0 off 0xfffffffffffff000 len 8192
	bad 2 "hhost-off: .* $R" me append veth0 pt 0 hhost-off 18446744073709551615
	bad 2 "bits: .* $R" me append veth0 pt 0 bits 0x10000000000000000
	bad 2 "bits: .* $R" me append veth0 pt 0 bits 18446744073709551616
	bad 2 "rank: .* $R" me append veth0 pt 0 rank 4294967295
	bad 10 "no room" me append veth0 pt 0 len 4g
	bad 2 "INDEX: .* $R \(0\.\.131071\)" me show veth0 131072
	bad 2 "state-bytes: .* $R" me show veth0 0 state-bytes 4097
	bad 2 "INDEX: .* $R" me unlink veth0 99999999999
	bad 2 "RANK: .* $R \(0\.\.65535\)" peer add veth0 65536 10.77.40.2
	bad 2 "port: .* $R" peer add veth0 2 10.77.40.2 port 65536
	bad 2 "pid: .* $R" peer add veth0 2 10.77.40.2 pid 4294967296
	bad 2 "RANK: .* $R" peer del veth0 65536
	bad 2 "timeout-ms: .* $R" events veth0 timeout-ms 18446744073709551615
	bad 2 "count: .* $R" events veth0 count 18446744073709551616
	bad 2 "timeout-ms: .* $R" recv timeout-ms 18446744073709551615
	bad 2 "port: .* $R" recv port 0
	bad 2 "pt: .* $R" send to 10.77.40.2 pt 65536
	bad 2 "len: .* $R \(0\.\.1073741824\)" send to 10.77.40.2 pt 0 len 1073741825
	bad 2 "seg: .* $R \(1\.\.1376\)" send to 10.77.40.2 pt 0 seg 1377
	bad 2 "seg: .* $R" send to 10.77.40.2 pt 0 seg 0
	bad 2 "sport: .* $R" send to 10.77.40.2 pt 0 sport 65536
	bad 2 "reply-timeout-ms: .* $R" send to 10.77.40.2 pt 0 reply-timeout-ms 2147483648
	bad 2 "user-hdr: .* $R" send to 10.77.40.2 pt 0 user-hdr 18446744073709551616
	bad 2 "msg-id: .* $R" send to 10.77.40.2 pt 0 msg-id 4294967296
	bad 2 "dst-rank: .* $R" send to 10.77.40.2 pt 0 dst-rank 0x100000000
	bad 2 "len: .* $R" get to 10.77.40.2 pt 0 len 0xffffffffffffffff
	bad 2 "timeout-ms: .* $R" get to 10.77.40.2 pt 0 len 1 timeout-ms 18446744073709551615
	table_end
}

# Unknown, ambiguous and missing options, verbs and objects; arguments
# where none belong.
t_bad_options() {
	table_start
	bad 2 "unknown attach option 'bogus'" attach veth2 bogus
	bad 2 "'port' needs a value" attach veth2 port
	bad 2 "unknown option '--port'" attach veth2 --port 1
	bad 2 "'pages' needs a value" attach veth2 pages
	bad 2 "missing IFACE" attach
	bad 2 "unexpected argument" detach veth0 extra
	bad 2 "unexpected argument" status veth0 extra
	bad 2 "unknown stats option" stats veth0 resett
	bad 2 "missing IFACE FILE" handler load veth0
	bad 2 "'name' needs a value" handler load veth0 x.bpf.o name
	bad 2 "unknown handler load option" handler load veth0 x.bpf.o nam x
	bad 2 "unexpected argument" handler unload veth0 x y
	bad 2 "unexpected argument" handler list veth0 extra
	bad 2 "unexpected argument" pt alloc veth0 0 flowctrl extra
	bad 2 "missing IFACE INDEX" pt alloc veth0
	bad 2 "unexpected argument" pt list veth0 extra
	bad 2 "missing 'pt N'" me append veth0
	bad 2 "list must be" me append veth0 pt 0 list bogus
	bad 2 "op must be" me append veth0 pt 0 op bogus
	bad 2 "op must be" me append veth0 pt 0 op put,put
	bad 2 "unknown me append option" me append veth0 pt 0 use-onc
	bad 2 "bad hex" me append veth0 pt 0 state 0
	bad 2 "bad hex" me append veth0 pt 0 state zz
	bad 8 "state file" me append veth0 pt 0 state-file "$LOG/nosuch"
	bad 2 "unexpected argument" me list veth0 extra
	bad 2 "missing IFACE INDEX" me show veth0
	bad 2 "unknown me show option" me show veth0 0 bogus
	bad 2 "missing IFACE RANK IP" peer add veth0 2
	bad 2 "'mac' needs a value" peer add veth0 2 10.77.40.2 mac
	bad 2 "unknown peer add option" peer add veth0 2 10.77.40.2 bogus 1
	bad 2 "unexpected argument" peer list veth0 x
	bad 2 "unexpected argument" peer del veth0 2 x
	bad 2 "unexpected argument" peer load veth0 a b
	bad 2 "'count' needs a value" events veth0 count
	bad 2 "unknown events option" events veth0 skip
	bad 2 "unknown recv option" recv bogus
	bad 2 "missing 'to IP'" send pt 0
	bad 2 "missing 'pt N'" send to 10.77.40.2
	bad 2 "only one of" send to 10.77.40.2 pt 0 len 1 data 00
	bad 8 "file" send to 10.77.40.2 pt 0 file "$LOG/nosuch"
	bad 2 "missing 'len N'" get to 10.77.40.2 pt 0
	bad 2 "unknown get option 'ack'" get to 10.77.40.2 pt 0 len 1 ack
	bad 2 "unknown option '-x'" -x status veth0
	bad 2 "unknown option '--jsn'" --jsn status veth0
	bad 2 "unknown option '-x'" status veth0 -x
	bad 2 "unknown option '-x'" status -vx veth0
	bad 2 "ambiguous option '--ver': --verbose, --version" --ver status veth0
	bad 2 "ambiguous option '--ver'" status veth0 --ver
	bad 2 "option '--json' takes no value" status veth0 --json=1
	bad 2 "unknown object '-j'" -- -j status veth0
	bad 2 "ambiguous object 'st': status, stats" st veth0
	bad 2 "ambiguous object 'stat'" stat veth0
	bad 2 "ambiguous object 's'" s veth0
	bad 2 "ambiguous object 'p'" p list veth0
	bad 2 "ambiguous object 'h'" h
	bad 2 "ambiguous handler verb 'l': list, load" handler l veth0
	bad 2 "ambiguous peer verb 'l'" peer l veth0
	bad 2 "unknown object 'bogus'" bogus veth0
	bad 2 "unknown object ''" '' veth0
	bad 2 "unknown handler verb 'bogus'" handler bogus veth0
	table_end
}

# Options anywhere (getopt_long), as bpftool and ip take them; an
# unambiguous prefix of a long option is that option.
t_options_anywhere() {
	local out
	out=$(A "$SPINCTL" status veth0 -j)
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ifname"]=="veth0" and d["rank"]==1, d'
	out=$(A "$SPINCTL" stats --pret veth0)
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "drops" in d, d'
	[ "$(echo "$out" | wc -l)" -gt 3 ] || fail "--pret is not --pretty"
	A "$SPINCTL" pt list veth0 --json | python3 -c 'import json,sys; json.load(sys.stdin)'
	A "$SPINCTL" status veth0 -V | grep -q "^spinctl .*ABI $ABI," || fail "-V after the object"
	A "$SPINCTL" status veth0 --help | grep -q '^Usage: spinctl' || fail "--help after the object"
}

# In JSON mode an error is {"error": "..."} on stdout (one document), and
# the usual line on stderr; the exit code is the same.
t_json_errors() {
	local rc=0
	A "$SPINCTL" -j status nosuch0 >"$LOG/je.out" 2>"$LOG/je.err" || rc=$?
	[ $rc -eq 5 ] || fail "exit $rc, not 5"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d=={"error":"interface '"'"'nosuch0'"'"' not found"}, d' "$LOG/je.out"
	[ "$(wc -l <"$LOG/je.err")" -eq 1 ] || fail "stderr not one line"
	rc=0
	A "$SPINCTL" me append veth0 --pretty >"$LOG/je.out" 2>/dev/null || rc=$?
	[ $rc -eq 2 ] || fail "exit $rc, not 2"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert list(d)==["error"] and "missing" in d["error"], d' "$LOG/je.out"
	rc=0
	A "$SPINCTL" -j handler load veth0 "$LOG/nosuch.bpf.o" >"$LOG/je.out" 2>/dev/null || rc=$?
	[ $rc -eq 8 ] || fail "exit $rc, not 8"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "nosuch.bpf.o" in d["error"], d' "$LOG/je.out"
	# without -j, nothing on stdout
	rc=0
	A "$SPINCTL" status nosuch0 >"$LOG/je.out" 2>/dev/null || rc=$?
	[ $rc -eq 5 ] && [ ! -s "$LOG/je.out" ] || fail "plain error: exit $rc, stdout $(cat "$LOG/je.out")"
}

# 64-bit values a JSON number cannot hold exactly (> 2^53) are strings of
# their decimal digits; the others stay numbers.
t_json_u64() {
	local me
	me=$(A "$SPINCTL" -j me append veth0 pt 0 bits 0xfffffffffffffffe ignore 0x20000000000001 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["me"])')
	A "$SPINCTL" -j me show veth0 "$me" | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert d["match_bits"]=="18446744073709551614", d["match_bits"]
assert d["ignore_bits"]=="9007199254740993", d["ignore_bits"]
assert isinstance(d["pt"], int)
'
	A "$SPINCTL" me unlink veth0 "$me"
	# 2^53 itself is exact
	me=$(A "$SPINCTL" -j me append veth0 pt 0 bits 0x20000000000000 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["me"])')
	A "$SPINCTL" -j me show veth0 "$me" | python3 -c '
import json,sys; d=json.load(sys.stdin); assert d["match_bits"]==9007199254740992, d'
	A "$SPINCTL" me unlink veth0 "$me"
}

# `status` without an interface: every runtime of the bpffs root, in every
# namespace, entered through its /var/run/netns name (or a process in it);
# pins of a namespace that is gone are listed as such.
t_status_all() {
	local ino
	nsx "$NSB" env SPIN_BPFFS="$TB" "$SPINCTL" attach veth1 generic rank 2 >/dev/null
	ino=$(stat -L -c %i "/var/run/netns/$NSB")
	mkdir -p "$TB/spin/ns1/veth9"	# no namespace has inode 1
	env SPIN_BPFFS="$TB" "$SPINCTL" status >"$LOG/sa.out"
	cat "$LOG/sa.out"
	grep -qE "^$NSA +veth0 +native +[0-9]+ +1 +10.77.40.1 +7717  $TB/spin/ns$(ino_a)/veth0\$" "$LOG/sa.out" || fail "A's runtime"
	grep -qE "^$NSB +veth1 +generic +[0-9]+ +2 +10.77.40.2 +7717 " "$LOG/sa.out" || fail "B's runtime"
	grep -qE "^ns1 +veth9 +namespace gone" "$LOG/sa.out" || fail "stale pins"
	# from inside a namespace too, and as JSON
	nsx "$NSB" env SPIN_BPFFS="$TB" "$SPINCTL" -j status | python3 -c '
import json,sys
d=json.load(sys.stdin)
byname={(r["netns"],r["ifname"]):r for r in d}
a=byname[(sys.argv[1],"veth0")]; b=byname[(sys.argv[2],"veth1")]
assert a["attached"] and a["rank"]==1 and a["mode"]=="native", a
assert b["attached"] and b["rank"]==2 and b["netns_inode"]==int(sys.argv[3]), b
assert not byname[("ns1","veth9")]["attached"]
assert len(d)==3, d
' "$NSA" "$NSB" "$ino"
	rmdir "$TB/spin/ns1/veth9" "$TB/spin/ns1"
	nsx "$NSB" env SPIN_BPFFS="$TB" "$SPINCTL" detach veth1
	# nothing attached anywhere
	env SPIN_BPFFS="$B/empty" "$SPINCTL" status | grep -q '^no spin runtimes' || fail "empty root"
}

# A Prometheus text exposition on stdin: every sample after its metric's
# HELP and TYPE lines, names and labels well-formed, no series twice.
prom_check() {
	python3 -c '
import re,sys
typed=set(); helped=set(); seen=set(); n=0
sample=re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\n]|\\[\\\"n])*\")(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\n]|\\[\\\"n])*\")*\})? (-?[0-9.e+]+)$")
for line in sys.stdin:
    line=line.rstrip("\n")
    if line.startswith("# HELP "):
        helped.add(line.split()[2]); continue
    if line.startswith("# TYPE "):
        f=line.split(); assert f[3] in ("counter","gauge"), line; typed.add(f[2]); continue
    m=sample.match(line)
    assert m, "bad line: " + line
    name=m.group(1)
    assert name in typed and name in helped, "no HELP/TYPE before " + line
    series=line.rsplit(" ",1)[0]
    assert series not in seen, "twice: " + series
    seen.add(series); n+=1
assert n > 40, n
'
}

three_headers() {
	A "$SPINCTL" stats veth2 prom |
		grep -qE '^spin_handler_calls_total\{iface="veth2",phase="header"\} [3-9]$'
}

# stats in the Prometheus text format: the counters, drops by reason,
# handler calls, and run counts/run time of the runtime's and the
# handlers' programs while BPF_ENABLE_STATS is held, instruction counts.
t_stats_prom() {
	local out
	A "$SPINCTL" attach veth2 open >/dev/null
	A "$SPINCTL" handler load veth2 samples/pingpong/pingpong_stream.bpf.o name pp >/dev/null
	A "$SPINCTL" pt alloc veth2 0
	A "$SPINCTL" me append veth2 pt 0 bits 1 handler pp len 64k >/dev/null
	A "$SPINCTL" stats veth2 prom >"$LOG/p0"
	prom_check <"$LOG/p0" || { cat "$LOG/p0"; fail "not the text format"; }
	grep -qx 'spin_up{iface="veth2",mode="native"} 1' "$LOG/p0" || fail "spin_up"
	grep -qx 'spin_rx_packets_total{iface="veth2"} 0' "$LOG/p0" || fail "rx_packets not 0"
	grep -qx 'spin_drops_total{iface="veth2",reason="no_match"} 0' "$LOG/p0" || fail "drops"
	grep -qE '^spin_prog_verified_insns\{iface="veth2",kind="handler",prog="pp"\} [1-9][0-9]*$' "$LOG/p0" || fail "handler insns"
	grep -qE '^spin_prog_verified_insns\{iface="veth2",kind="runtime",prog="spin_rx"\} [1-9][0-9]*$' "$LOG/p0" || fail "runtime insns"
	# run counts while the statistics are on
	coproc STATS { "$HELPER" bpf-stats; }
	read -r -t 10 out <&"${STATS[0]}" || true
	[ "$out" = on ] || fail "bpf-stats: $out"
	nsx "$NSB" ethtool -K veth3 tx off >/dev/null 2>&1	# checksums in software
	for i in 1 2 3; do
		nsx "$NSB" "$SPINCTL" send from 10.77.41.2 to 10.77.41.1 pt 0 bits 1 len 100 rank 1
	done
	spin_wait_until 10 three_headers || { A "$SPINCTL" stats veth2; fail "3 header calls not counted"; }
	A "$SPINCTL" stats veth2 prom >"$LOG/p1"
	exec {STATS[1]}>&-
	wait "$STATS_PID" || true
	prom_check <"$LOG/p1" || fail "not the text format"
	grep -E 'handler|runs|seconds|rx_packets' "$LOG/p1" | grep -v '^#'
	# handlers are tail calls: counted by phase, their time in spin_rx's
	grep -qE '^spin_prog_runs_total\{iface="veth2",kind="runtime",prog="spin_rx"\} ([3-9]|[1-9][0-9]+)$' "$LOG/p1" || fail "runtime runs"
	grep -qE '^spin_prog_run_seconds_total\{iface="veth2",kind="runtime",prog="spin_rx"\} 0\.0*[1-9][0-9]*$' "$LOG/p1" || fail "runtime run time"
	! grep -q '^spin_prog_run.*kind="handler"' "$LOG/p1" || fail "handler run counts that bpf_stats does not count"
	grep -qE '^spin_rx_packets_total\{iface="veth2"\} [3-9]$' "$LOG/p1" || fail "rx_packets"
	# prom with JSON is refused
	rc=0
	A "$SPINCTL" -j stats veth2 prom >/dev/null 2>&1 || rc=$?
	[ $rc -eq 2 ] || fail "-j prom: exit $rc"
}

# handler check: verify a handler object offline, with its own temporary
# maps, in a namespace without a runtime and a bpffs root where nothing
# may appear; the verdict and instruction counts, the verifier's lines on
# a rejection, a refusal for another ABI and for a non-handler.
t_handler_check() {
	local root=$LOG/check-root rc=0 j other
	mkdir -m 755 "$root"
	C() { nsx "$NSB" env SPIN_BPFFS="$root" "$SPINCTL" "$@"; }
	C handler check samples/pingpong/pingpong_stream.bpf.o >"$LOG/hc.out"
	cat "$LOG/hc.out"
	grep -qx "samples/pingpong/pingpong_stream.bpf.o: accepted by the verifier (spin ABI $ABI)" "$LOG/hc.out" || fail "verdict"
	grep -qE '^	[1-9][0-9]* insns verified, [1-9][0-9]* xlated' "$LOG/hc.out" || fail "counts"
	grep -qE '^	verifier: processed [1-9][0-9]* insns \(limit' "$LOG/hc.out" || fail "verifier stats"
	j=$(C -j handler check samples/pingpong/pingpong_stream.bpf.o)
	echo "$j" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["verdict"]=="accepted" and d["verified_insns"]>0 and d["xlated_insns"]>0 and d["abi"]==int(sys.argv[1]), d' "$ABI"
	# the same count as when it is loaded into a runtime
	A "$SPINCTL" handler load veth0 samples/pingpong/pingpong_stream.bpf.o name ppc >/dev/null
	A "$SPINCTL" stats veth0 prom | grep -qx "spin_prog_verified_insns{iface=\"veth0\",kind=\"handler\",prog=\"ppc\"} $(echo "$j" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["verified_insns"])')" || fail "check and load count differently"
	A "$SPINCTL" handler unload veth0 ppc
	# a rejection: the verifier's lines, exit 7
	C handler check selftests/progs/bad_handler.bpf.o >"$LOG/hc.out" 2>"$LOG/hc.err" || rc=$?
	cat "$LOG/hc.err"
	[ $rc -eq 7 ] || fail "bad handler: exit $rc, not 7"
	head -1 "$LOG/hc.err" | grep -q '^spinctl: verifier rejected handler object selftests/progs/bad_handler.bpf.o: ' || fail "message"
	grep -q '^    processed [0-9]* insns' "$LOG/hc.err" || fail "no verifier lines"
	[ ! -s "$LOG/hc.out" ] || fail "output on stdout"
	# another ABI (exit 1), not a handler (exit 8), no file (8)
	mkdir -p "$LOG/abi2" && cp -r include "$LOG/abi2/"
	other=$((ABI + 100))	# (never this spin's)
	sed -i "s/^#define SPIN_ABI_VERSION\t.*/#define SPIN_ABI_VERSION\t$other/" "$LOG/abi2/include/spin/wire.h"
	clang -O2 -g -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -I"$LOG/abi2/include" -Ivmlinux/x86 \
		-c samples/pingpong/pingpong.bpf.c -o "$LOG/abi2.bpf.o"
	table_start
	bad 1 "handler object $LOG/abi2.bpf.o was built for spin ABI $other, this spin has ABI $ABI: rebuild it" handler check "$LOG/abi2.bpf.o"
	bad 1 "handler object $LOG/abi2.bpf.o was built for spin ABI $other" handler load veth0 "$LOG/abi2.bpf.o"
	bad 8 "no SPIN_HANDLERS" handler check bpf/spin_rt.bpf.o
	# a map only the runtime holds (docs/security.md, "Handlers"): refused
	# by check as by load (unit/handler_rt_maps)
	bad 1 "handler object selftests/progs/rt_auth.bpf.o declares map spin_auth, which only the runtime holds" handler check selftests/progs/rt_auth.bpf.o
	# ... and every map of shared state (unit/handler_shared_maps)
	bad 1 "handler object selftests/progs/rt_me.bpf.o declares map spin_me, which only the runtime holds" handler check selftests/progs/rt_me.bpf.o
	bad 8 "nosuch.bpf.o" handler check "$LOG/nosuch.bpf.o"
	bad 2 "missing FILE" handler check
	bad 2 "unexpected argument" handler check a b
	table_end
	# nothing was pinned or attached
	[ -z "$(find "$root" -mindepth 1)" ] || fail "made $(find "$root" -mindepth 1)"
	! ip -n "$NSB" link show | grep -q prog/xdp || fail "attached"
}

# The Wireshark dissector (tools/spin.lua) on a capture of real spin
# traffic: a put cut into 3 packets, a get and its reply, a get nacked with
# no_match, and a frame on the port too short to be sPIN.
t_dissector() {
	command -v tshark >/dev/null && command -v tcpdump >/dev/null ||
		{ echo "no tshark/tcpdump (./run deps installs them)"; exit 77; }
	local cap=$LOG/spin.pcap pid out
	# generic: the frames the runtime sends back (XDP_TX) reach veth3
	# through its queue (in native mode on this kernel they did not)
	A "$SPINCTL" attach veth2 generic open >/dev/null
	A "$SPINCTL" pt alloc veth2 0
	A "$SPINCTL" me append veth2 pt 0 bits 0x8000000000000001 op put,get len 64k >/dev/null
	A "$SPINCTL" peer add veth2 7 10.77.41.2 mac "$(ip -n "$NSB" -o link show veth3 |
		sed -n 's|.*link/ether \([^ ]*\).*|\1|p')"
	# checksums in software; GRO gives veth3 the NAPI that frames the
	# runtime sends back with XDP_TX need
	nsx "$NSB" ethtool -K veth3 gro on tx off >/dev/null 2>&1
	# nsenter execs tcpdump: $! is tcpdump's pid
	nsenter --net="/var/run/netns/$NSB" -- timeout 60 tcpdump -i veth3 -n -U -w "$cap" \
		udp port 7717 2>"$LOG/tcpdump.err" &
	pid=$!
	spin_wait_until 10 grep -q 'listening on' "$LOG/tcpdump.err" || fail "tcpdump did not start"
	nsx "$NSB" "$SPINCTL" send from 10.77.41.2 to 10.77.41.1 pt 0 bits 0x8000000000000001 len 3000 seg 1376 rank 7 msg-id 4242
	nsx "$NSB" "$SPINCTL" get from 10.77.41.2 to 10.77.41.1 pt 0 bits 0x8000000000000001 len 100 rank 7 msg-id 4243 >/dev/null
	nsx "$NSB" "$SPINCTL" get from 10.77.41.2 to 10.77.41.1 pt 5 len 100 rank 7 msg-id 4244 >/dev/null 2>&1 || true
	echo hello | nsx "$NSB" timeout 2 socat - UDP4-DATAGRAM:10.77.41.1:7717 2>/dev/null ||
		nsx "$NSB" python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"hello", ("10.77.41.1", 7717))'
	spin_wait_until 10 sh -c "[ \$(tcpdump -r '$cap' 2>/dev/null | wc -l) -ge 8 ]" ||
		echo "fewer than 8 frames captured"
	kill -TERM "$pid"; wait "$pid" || true
	tshark -X lua_script:tools/spin.lua -r "$cap" -Y spin -T fields -E separator=' ' \
		-e spin.op -e spin.msg_id -e spin.msg_len -e spin.pkt_off -e spin.payload_len \
		-e spin.src_rank -e spin.match_bits -e spin.fail >"$LOG/fields" 2>"$LOG/tshark.err" ||
		{ cat "$LOG/tshark.err"; fail "tshark"; }
	cat "$LOG/fields"
	# op id len off payload rank bits [fail]
	out=$(sed 's/ *$//' "$LOG/fields")
	grep -qx '1 4242 3000 0 1376 7 0x8000000000000001' <<<"$out" || fail "put packet 0"
	grep -qx '1 4242 3000 1376 1376 7 0x8000000000000001' <<<"$out" || fail "put packet 1"
	grep -qx '1 4242 3000 2752 248 7 0x8000000000000001' <<<"$out" || fail "put packet 2"
	grep -qx '2 4243 100 0 0 7 0x8000000000000001' <<<"$out" || fail "get"
	grep -qx '4 4243 100 0 100 0 0x8000000000000001 0' <<<"$out" || fail "reply"
	grep -qx '4 4244 0 0 0 0 0x0000000000000000 5' <<<"$out" || fail "nack no_match"
	# the summary line, and the short frame flagged as malformed
	tshark -X lua_script:tools/spin.lua -r "$cap" -Y 'spin.op == 4 && spin.fail == 5' 2>/dev/null |
		grep -q 'REPLY rank 0 pt 5 .* id 4244 .* fail no_match' || fail "info column"
	tshark -X lua_script:tools/spin.lua -r "$cap" -Y spin -V 2>/dev/null |
		grep -q 'Shorter than the 96-byte sPIN header' || fail "short frame not flagged"
}

# spinctl batch: comments, blank lines, quoting, abbreviations, stdin;
# the first failing line stops it with its exit code and detaches what
# the batch attached; a runtime it did not attach is left as it is.
t_batch() {
	local rc=0 ino
	ino=$(ino_a)
	cat >"$LOG/b1" <<-EOF
	# a runtime on veth2 with an entry and a peer
	attach veth2 generic rank 3   # trailing comment

	  pt alloc veth2 2
	me app veth2 pt 2 bits "0x10" len '4k'
	peer add veth2 9 10.77.41.2 mac 02:00:00:00:00:09
	EOF
	A "$SPINCTL" batch "$LOG/b1"
	A "$SPINCTL" -j status veth2 | grep -q '"mode":"generic".*"rank":3' || fail "attach line"
	A "$SPINCTL" -j pt list veth2 | grep -q '"pt":2' || fail "pt line"
	A "$SPINCTL" -j me list veth2 | grep -q '"match_bits":16' || fail "me line"
	A "$SPINCTL" -j peer list veth2 | grep -q '"rank":9' || fail "peer line"
	# from stdin, with -j for every line
	printf 'pt alloc veth2 3\nstatus veth2\n' | A "$SPINCTL" -j batch - >"$LOG/b.out"
	grep -q '"ifname":"veth2"' "$LOG/b.out" || fail "status from stdin"
	A "$SPINCTL" -j pt list veth2 | grep -q '"pt":3' || fail "stdin line"
	A "$SPINCTL" detach veth2
	# a failing line: its code, one line of its own and one of the batch's,
	# and the runtime the batch attached is gone with everything on it
	printf 'attach veth2\npt alloc veth2 1\nme append veth2 pt 1 bogus 1\npt alloc veth2 4\n' >"$LOG/b2"
	A "$SPINCTL" batch "$LOG/b2" 2>"$LOG/b.err" || rc=$?
	cat "$LOG/b.err"
	[ $rc -eq 2 ] || fail "exit $rc, not 2"
	grep -q "^spinctl: unknown me append option 'bogus'" "$LOG/b.err" || fail "the line's error"
	grep -qx "spinctl: $LOG/b2:3: 'me' failed (exit 2); detached veth2 (attached by this batch)" "$LOG/b.err" || fail "batch line"
	[ "$(wc -l <"$LOG/b.err")" -eq 2 ] || fail "not two lines"
	[ ! -e "$TB/spin/ns$ino/veth2" ] || fail "pins left"
	no_xdp veth2 || fail "still attached"
	# a runtime attached before the batch stays, with what the batch did
	A "$SPINCTL" attach veth2 >/dev/null
	printf 'pt alloc veth2 5\npt alloc veth2 5\n' >"$LOG/b3"
	rc=0
	A "$SPINCTL" batch "$LOG/b3" 2>"$LOG/b.err" || rc=$?
	cat "$LOG/b.err"
	[ $rc -eq 9 ] || fail "exit $rc, not 9"
	grep -qx "spinctl: $LOG/b3:2: 'pt' failed (exit 9)" "$LOG/b.err" || fail "batch line"
	A "$SPINCTL" -j pt list veth2 | grep -q '"pt":5' || fail "line 1 undone"
	A "$SPINCTL" detach veth2
	printf '# nested\nbatch %s\n' "$LOG/b1" >"$LOG/b4"
	printf 'status veth0 "unterminated\n' >"$LOG/b5"
	table_start
	bad 2 "b4:2: batch inside a batch" batch "$LOG/b4"
	bad 2 "b5:1: unterminated \"" batch "$LOG/b5"
	bad 8 "batch file .*nosuch: No such file" batch "$LOG/nosuch"
	bad 2 "missing FILE" batch
	table_end
}

# Interface names the kernel would not take (and that would name other
# directories: '.', '..'), missing interfaces, bad IPv4 and MAC addresses,
# names of things that do not exist.
t_bad_names() {
	table_start
	local IFN='bad interface name'
	bad 2 "no interface name|$IFN" status ''
	bad 2 "$IFN '\.'" status .
	bad 2 "$IFN '\.\.'" status ..
	bad 2 "$IFN" status a/b
	bad 2 "$IFN" status 'a b'
	bad 2 "$IFN" status veth0:1
	bad 2 "$IFN" status 0123456789abcdef
	bad 2 "$IFN 've\?th0'" status $'ve\nth0'
	bad 2 "$IFN" stats ../t
	bad 2 "$IFN" me list ..
	bad 2 "$IFN" attach ..
	bad 2 "$IFN" attach veth0/
	bad 5 "not found" status nosuchif0
	bad 5 "not found" attach nosuchif0
	bad 5 "not found" detach nosuchif0
	bad 5 "not found" pt alloc nosuchif0 0
	bad 2 "bad IPv4 address" peer add veth0 2 10.77.40
	bad 2 "bad IPv4 address" peer add veth0 2 10.77.40.256
	bad 2 "bad IPv4 address" peer add veth0 2 ' 10.77.40.2'
	bad 2 "bad IPv4 address" peer add veth0 2 10.77.40.2/24
	bad 2 "bad IPv4 address" peer add veth0 2 ::1
	bad 2 "bad IPv4 address" peer add veth0 2 0x0a4d2802
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac 02:00:00:00:00
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac 02:00:00:00:00:02:03
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac ' 2:0:0:0:0:2'
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac 0x2:0:0:0:0:2
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac 002:0:0:0:0:2
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac 02-00-00-00-00-02
	bad 2 "bad MAC address" peer add veth0 2 10.77.40.2 mac +2:0:0:0:0:2
	bad 2 "dev: $IFN" peer add veth0 2 10.77.40.2 dev ..
	bad 5 "not found" peer add veth0 2 10.77.40.2 dev nosuchif0
	bad 2 "bad IPv4 address" send to 10.77.40.256 pt 0
	bad 2 "bad IPv4 address" send from 1.2.3 to 10.77.40.2 pt 0
	bad 2 "bad IPv4 address" get to '' pt 0 len 1
	bad 2 "bad IPv4 address" recv on 10.77.40 timeout-ms 1
	bad 8 "" handler load veth0 "$LOG/nosuch.bpf.o"
	bad 2 "bad handler name" handler load veth0 selftests/progs/xdp_pass.bpf.o name ../x
	bad 8 "no handler 'nosuch'" handler unload veth0 nosuch
	bad 8 "no handler 'nosuch'" me append veth0 pt 0 handler nosuch
	bad 8 "not allocated" me append veth0 pt 1
	bad 8 "not allocated" pt free veth0 5
	bad 8 "not in use" me unlink veth0 100
	bad 8 "no peer with rank 7" peer del veth0 7
	bad 8 "no such file" job "$LOG/nosuch.hosts"
	bad 8 "no such file" peer load veth0 "$LOG/nosuch.hosts"
	# last: with the old code these two removed every pin of the
	# namespace (.) or of the whole bpffs root's spin/ (..)
	bad 2 "$IFN '\.'" detach .
	bad 2 "$IFN '\.\.'" detach ..
	table_end
}

# ------------------------------------------------ finding 2: lengths --

# spinctl: an entry length near 2^64 is refused, and nothing is added
t_me_huge_len_cli() {
	local before after idx
	before=$(A "$SPINCTL" -j me list veth0)
	for len in 0xffffffffffffffff 18446744073709551615 0xfffffffffffff001 ' -1'; do
		if A "$SPINCTL" me append veth0 pt 0 bits 9 len "$len" 2>"$LOG/err"; then
			fail "len '$len' accepted"
		fi
		cat "$LOG/err"
	done
	A "$SPINCTL" me append veth0 pt 0 bits 9 hhost-len 0xfffffffffffff001 2>&1 && fail "hhost-len accepted"
	after=$(A "$SPINCTL" -j me list veth0)
	[ "$before" = "$after" ] || fail "match entries changed: $after"
	# the largest legal length that does not fit: no room (exit 10)
	rc=0
	A "$SPINCTL" me append veth0 pt 0 bits 9 len 4g 2>&1 || rc=$?
	[ "$rc" -eq 10 ] || fail "len 4g on a 16 MiB window: exit $rc, want 10"
	# a sane one still works, page aligned after the existing 64 KiB entry
	idx=$(A "$SPINCTL" me append veth0 pt 0 bits 9 len 4097)
	A "$SPINCTL" -j me show veth0 "$idx" | grep -q '"host_off":65536,"host_len":4097' ||
		fail "4097-byte entry not at 65536: $(A "$SPINCTL" -j me show veth0 "$idx")"
	A "$SPINCTL" me unlink veth0 "$idx"
}

# 64 KiB of handler memory: refused without hpu-size, taken with it (a
# slot below 64), shown; more than 64 KiB refused
t_me_hpu_size() {
	local idx rc f="$LOG/hpu64k"
	head -c 65536 /dev/urandom >"$f"
	rc=0
	A "$SPINCTL" me append veth0 pt 0 bits 11 state-file "$f" 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ "$rc" -eq 2 ] || fail "64 KiB state without hpu-size: exit $rc, want 2"
	grep -q "hpu-size" "$LOG/err" || fail "the error does not name hpu-size"
	rc=0
	A "$SPINCTL" me append veth0 pt 0 bits 11 hpu-size 65537 2>&1 || rc=$?
	[ "$rc" -eq 2 ] || fail "hpu-size 65537: exit $rc, want 2"
	idx=$(A "$SPINCTL" me append veth0 pt 0 bits 11 hpu-size 64k state-file "$f") ||
		fail "append with hpu-size 64k"
	[ "$idx" -lt 64 ] || fail "slot $idx, want one below 64"
	A "$SPINCTL" -j me show veth0 "$idx" | grep -q '"hpu_len":65536,"hpu_size":65536' ||
		fail "not shown: $(A "$SPINCTL" -j me show veth0 "$idx")"
	A "$SPINCTL" me unlink veth0 "$idx"
}

# libspin: spin_me_append() with lengths near 2^64 (host and handler host
# memory, first fit and at an offset) refuses them all
t_me_huge_len_lib() {
	A "$HELPER" me-huge veth0
}

# -------------------------------------- finding 7: pin directories --

# A bpffs root anyone may write (mode 1777) where uid 65534 got first.
hostile_root() {
	local r=$B/$1
	mkdir -m 1777 "$r"
	echo "$r"
}

no_xdp() { ! ip -n "$NSA" link show "$1" | grep -q 'prog/xdp'; }

# attach refuses a spin/ that another user made, one that anyone may write,
# and one that is a symbolic link; nothing is created or attached
t_pins_foreign_dir() {
	local r rc
	r=$(hostile_root h1)
	"${NOBODY[@]}" mkdir "$r/spin"
	rc=0
	nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" attach veth2 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	if [ "$rc" -eq 0 ]; then
		nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" detach veth2 || true
		fail "attach used a spin/ owned by uid 65534"
	fi
	[ "$rc" -eq 3 ] || fail "exit $rc, want 3"
	[ "$(wc -l <"$LOG/err")" -eq 1 ] && grep -q 'owned by uid 65534' "$LOG/err" ||
		fail "message does not name the owner"
	[ -z "$(ls -A "$r/spin")" ] || fail "something was created in $r/spin: $(ls -A "$r/spin")"
	no_xdp veth2 || fail "XDP attached to veth2"

	# a spin/ of root's that anyone may write
	rmdir "$r/spin"
	mkdir -m 777 "$r/spin"
	chmod 777 "$r/spin"
	rc=0
	nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" attach veth2 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ "$rc" -ne 0 ] || { nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" detach veth2; fail "attach used a world-writable spin/"; }
	[ "$rc" -eq 3 ] && grep -q 'writable by group or others' "$LOG/err" || fail "exit $rc or message wrong"
	[ -z "$(ls -A "$r/spin")" ] || fail "something was created in $r/spin"
	no_xdp veth2 || fail "XDP attached to veth2"

	# spin/ a symbolic link (to the table runtime's pins): neither attach
	# nor status may go through it
	rmdir "$r/spin"
	"${NOBODY[@]}" ln -s "$TB/spin" "$r/spin"
	rc=0
	nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" attach veth2 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ "$rc" -ne 0 ] || { nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" detach veth2; fail "attach went through a symlinked spin/"; }
	[ "$rc" -eq 3 ] && grep -q 'symbolic link' "$LOG/err" || fail "exit $rc or message wrong"
	no_xdp veth2 || fail "XDP attached to veth2"
	[ ! -e "$TB/spin/ns$(ino_a)/veth2" ] || fail "pins made through the link"
	rc=0
	nsx "$NSA" env SPIN_BPFFS="$r" "$SPINCTL" status veth0 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ "$rc" -eq 3 ] || fail "status through a symlinked spin/: exit $rc, want 3"
}

# detach refuses to go through a symbolic link or another user's directory:
# a victim's pins elsewhere in the bpffs stay, and so does its XDP program
t_detach_no_follow() {
	local v=$B/victim r1 r2 ino rc
	ino=$(ino_a)
	mkdir -m 755 "$v"
	nsx "$NSA" env SPIN_BPFFS="$v" "$SPINCTL" attach veth2 >/dev/null
	[ -e "$v/spin/ns$ino/veth2/prog_rx" ] || fail "victim not attached"

	# spin/ a link to the victim's spin/
	r1=$(hostile_root h2)
	"${NOBODY[@]}" ln -s "$v/spin" "$r1/spin"
	rc=0
	nsx "$NSA" env SPIN_BPFFS="$r1" "$SPINCTL" detach veth2 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ -e "$v/spin/ns$ino/veth2/prog_rx" ] || fail "detach removed the victim's pins through a symlinked spin/"
	! no_xdp veth2 || fail "detach removed the victim's XDP program"
	[ "$rc" -eq 3 ] || fail "exit $rc, want 3"

	# spin/ of uid 65534 with ns<inode> a link to the victim's directory
	r2=$(hostile_root h3)
	"${NOBODY[@]}" mkdir "$r2/spin"
	"${NOBODY[@]}" ln -s "$v/spin/ns$ino" "$r2/spin/ns$ino"
	rc=0
	nsx "$NSA" env SPIN_BPFFS="$r2" "$SPINCTL" detach veth2 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ -e "$v/spin/ns$ino/veth2/prog_rx" ] || fail "detach removed the victim's pins through a foreign spin/"
	! no_xdp veth2 || fail "detach removed the victim's XDP program"
	[ "$rc" -eq 3 ] || fail "exit $rc, want 3"

	# the victim's own detach still works
	nsx "$NSA" env SPIN_BPFFS="$v" "$SPINCTL" detach veth2
	[ ! -e "$v/spin/ns$ino" ] || fail "victim's pins left"
	no_xdp veth2 || fail "victim's XDP program left"
}

# ------------------------------------------------------- detach order --

# XDP is detached first and a failure does not stop the rest: with spin_rx
# held by a bpf_link (netlink cannot detach it), detach reports the XDP
# error (exit 6) but still detaches TC and removes every pin
t_detach_keeps_going() {
	local rc n ino
	ino=$(ino_a)
	A "$SPINCTL" attach veth2 >/dev/null
	n=$(A "$HELPER" tcx-count veth2)
	[ "$n" -ge 1 ] || { echo "no fan-out program at TC ingress of veth2"; return 77; }
	A "$HELPER" xdp-link veth2 "$B/xdp-link"
	rc=0
	A "$SPINCTL" detach veth2 2>"$LOG/err" || rc=$?
	cat "$LOG/err"
	[ "$rc" -eq 6 ] || fail "exit $rc, want 6 (XDP detach failed)"
	[ "$(wc -l <"$LOG/err")" -eq 1 ] && grep -q 'cannot detach XDP' "$LOG/err" ||
		fail "not one line naming the XDP failure"
	n=$(A "$HELPER" tcx-count veth2)
	[ "$n" -eq 0 ] || fail "the fan-out program is still at TC ingress ($n)"
	[ ! -e "$TB/spin/ns$ino/veth2" ] || fail "pins left after the failed XDP detach: $(ls "$TB/spin/ns$ino/veth2" | tr '\n' ' ')"
	rm -f "$B/xdp-link"
	for _ in $(seq 50); do no_xdp veth2 && break; sleep 0.1; done
	no_xdp veth2 || fail "XDP left on veth2 after the link was unpinned"
}

# ---------------------------------------------------------- the rest --

# the rendezvous file is written to a new file (O_EXCL) and renamed, never
# through a link planted under the name the library uses; a FIFO planted as
# another rank's file does not block
t_rendezvous() {
	mkdir -m 1777 "$LOG/rv"
	timeout -k 2 20 "$HELPER" rendezvous "$LOG/rv"
}

# owners: a pid counts as alive only with its start time (finding 10,
# reclaim_stale); portal table entries record it
t_owner() {
	A "$HELPER" owner veth0
}

# what must keep working: unique prefixes, 0x numbers, sizes, ranges' ends
t_good_input() {
	local ino st
	ino=$(ino_a)
	A "$SPINCTL" statu veth0 >/dev/null
	A "$SPINCTL" ha li veth0
	A "$SPINCTL" pe li veth0 >/dev/null
	A "$SPINCTL" pe de veth0 2	# del and delete are one verb
	A "$SPINCTL" peer add veth0 0xff 10.77.40.2 mac 2:0:0:0:0:a port 0x1e25
	A "$SPINCTL" -j peer list veth0 | grep -q '"rank":255,"ip":"10.77.40.2","port":7717,"mac":"02:00:00:00:00:0a"' ||
		fail "peer 255: $(A "$SPINCTL" -j peer list veth0)"
	A "$SPINCTL" peer del veth0 255
	A "$SPINCTL" peer add veth0 2 10.77.40.2 mac 02:00:00:00:00:02
	A "$SPINCTL" attach veth2 pages 0x8 timeout-ms 2147483647 port 65535 rank 4294967294 >/dev/null
	st=$(A "$SPINCTL" -j status veth2)
	echo "$st"
	echo "$st" | grep -q '"rank":4294967294' || fail "rank"
	echo "$st" | grep -q '"port":65535' || fail "port"
	echo "$st" | grep -q '"host_pages":8' || fail "pages"
	echo "$st" | grep -q '"msg_timeout_ns":2147483647000000' || fail "timeout"
	A "$SPINCTL" pt alloc veth2 0xf
	A "$SPINCTL" me append veth2 pt 15 bits 0xffffffffffffffff len 16KiB >/dev/null
	A "$SPINCTL" me append veth2 pt 15 bits 18446744073709551615 len 0x4000 off 16k >/dev/null
	rc=0
	A "$SPINCTL" me append veth2 pt 15 len 1 2>&1 || rc=$?
	[ "$rc" -eq 10 ] || fail "a full 8-page window: exit $rc, want 10"
	A "$SPINCTL" -j me list veth2 | grep -o '"host_len"' | wc -l | grep -qx 2 || fail "entries"
	A "$SPINCTL" detach veth2
	[ ! -e "$TB/spin/ns$ino/veth2" ] || fail "pins left"
}


# ------------------------------------------------ isolation (issue 14) --

# spinctl window against bad input: one line, its exit code, nothing
# changed (the table's runtime veth0 has no granted window)
t_bad_window() {
	table_start
	bad 2 "missing IFACE SLOT USER" window grant veth0 1
	bad 2 "SLOT: .*out of range|SLOT: .*1\.\.7" window grant veth0 0 65534
	bad 2 "SLOT: .*out of range|SLOT: .*1\.\.7" window grant veth0 8 65534
	bad 2 "SLOT: bad number" window grant veth0 01 65534
	bad 2 "USER: no user 'no-such-user-x'" window grant veth0 1 no-such-user-x
	bad 2 "USER: .*out of range|USER: .*4294967294" window grant veth0 1 4294967295
	bad 2 "unexpected argument" window grant veth0 1 65534 extra
	bad 2 "missing IFACE SLOT" window revoke veth0
	bad 8 "not granted" window revoke veth0 3
	bad 2 "LEN: .*out of range|LEN: .*1\.\.4096" window read veth0 1 0 0
	bad 2 "LEN: .*out of range|LEN: .*1\.\.4096" window read veth0 1 0 4097
	bad 2 "OFF: " window read veth0 1 -1 4
	bad 2 "HEX|hex" window write veth0 1 0 zz
	bad 8 "no host window of slot 1" window read veth0 1 0 4
	bad 2 "unknown verb|unknown" window frob veth0 1
	table_end
}

# Two applications, two users without the runtime's pins: root grants slot
# 1's host window to uid 65534 (A) and slot 2's to uid 65533 (B), and
# makes an entry in each slot at the same window offset.  B tries to map,
# read and write A's window, to open the runtime's maps, to place an entry
# over A's range, to unlink A's entry and to read its handler memory:
# each fails with one line and its exit code, and A's traffic goes on.
UA=(setpriv --reuid=65534 --regid=65534 --clear-groups)
UB=(setpriv --reuid=65533 --regid=65533 --clear-groups)
asA() { nsx "$NSA" env SPIN_BPFFS="$TB" "${UA[@]}" "$@"; }
asB() { nsx "$NSA" env SPIN_BPFFS="$TB" "${UB[@]}" "$@"; }
# every check runs (the harness ignores set -e: run_test calls it in an
# if); isobad records a failure, the test's last line returns it
isobad() { echo "FAILED: $*"; ISO_BAD=1; return 0; }
# B's attempt: it must fail with exit $1 and one line naming $2
refused() {
	local want=$1 pat=$2 rc=0; shift 2
	asB "$@" >"$LOG/iso.out" 2>"$LOG/iso.err" || rc=$?
	cat "$LOG/iso.out" "$LOG/iso.err"
	[ "$rc" -eq "$want" ] || isobad "B: '$*': exit $rc, want $want"
	[ "$(wc -l <"$LOG/iso.err")" -eq 1 ] && grep -q "$pat" "$LOG/iso.err" ||
		isobad "B: '$*': not one line naming '$pat'"
}
# wait (no time asserted) until A's window holds $1 at offset 0
a_sees() {
	local i
	for i in $(seq 100); do
		[ "$(asA "$SPINCTL" window read veth2 1 0 $((${#1} / 2)))" = "$1" ] && return 0
		sleep 0.05
	done
	isobad "A's window: $(asA "$SPINCTL" window read veth2 1 0 $((${#1} / 2)) 2>&1), want $1"
}
t_iso_windows() {
	local macb ia ib ih i0 oob oob0 dir rc
	ISO_BAD=0
	dir=$TB/spin/ns$(ino_a)/veth2
	macb=$(ip -n "$NSB" -o link show veth3 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
	nsx "$NSB" ethtool -K veth3 tx off >/dev/null 2>&1	# checksums in software
	A "$SPINCTL" attach veth2 rank 1 >/dev/null
	A "$SPINCTL" peer add veth2 2 10.77.41.2 mac "$macb"
	A "$SPINCTL" pt alloc veth2 256		# slot 1's portal 0
	A "$SPINCTL" pt alloc veth2 512		# slot 2's
	A "$SPINCTL" window grant veth2 1 65534
	A "$SPINCTL" window grant veth2 2 65533
	ia=$(A "$SPINCTL" me append veth2 pt 256 bits 7 len 4096 off 0 no-events)
	ib=$(A "$SPINCTL" me append veth2 pt 512 bits 7 len 4096 off 0 no-events)
	ls -la "$dir"
	nsx "$NSB" "$SPINCTL" send to 10.77.41.1 pt 256 bits 7 data aabbccdd rank 2 >/dev/null
	a_sees aabbccdd
	[ "$(asB "$SPINCTL" window read veth2 2 0 4)" = 00000000 ] ||
		isobad "B's window at the same offset holds A's bytes"

	# map, read, write A's window
	refused 3 "not this user's" "$SPINCTL" window read veth2 1 0 4
	refused 3 "not this user's" "$SPINCTL" window write veth2 1 0 00000000
	# the whole window, the window table, entries, handler memory, by pin
	for m in spin_host spin_wins spin_me spin_hpu spin_hpu_big spin_pt win1; do
		asB "$HELPER" pin-open "$dir/$m" || isobad "B opened $m"
	done
	# place an entry over A's range, unlink A's entry, read its handler
	# memory, free its portal: the runtime's control needs its pins
	refused 3 "" "$SPINCTL" me append veth2 pt 256 bits 9 len 4096 off 0
	refused 3 "" "$SPINCTL" me unlink veth2 "$ia"
	refused 3 "" "$SPINCTL" me show veth2 "$ia"
	refused 3 "" "$SPINCTL" pt free veth2 256
	# root's entry of B's slot at A's offset reaches B's window only
	nsx "$NSB" "$SPINCTL" send to 10.77.41.1 pt 512 bits 7 data 01020304 rank 2 >/dev/null
	for i in $(seq 100); do
		[ "$(asB "$SPINCTL" window read veth2 2 0 4)" = 01020304 ] && break
		sleep 0.05
	done
	[ "$(asB "$SPINCTL" window read veth2 2 0 4)" = 01020304 ] || isobad "B's put did not reach B's window"

	# A's traffic is unaffected: its bytes are there, and the next put lands
	[ "$(asA "$SPINCTL" window read veth2 1 0 4)" = aabbccdd ] || isobad "A's bytes changed"
	nsx "$NSB" "$SPINCTL" send to 10.77.41.1 pt 256 bits 7 data 11223344 rank 2 remote-off 4 >/dev/null
	a_sees aabbccdd11223344
	A "$SPINCTL" me show veth2 "$ia" | grep -q . || isobad "A's entry is gone"

	# a handler for B's entries: loaded as slot 2's ('slot 2'), it and its
	# finish stage reach B's window; loaded as spinctl's (slot 0's), its
	# stage's deposit into B's window fails (host_oob), B's bytes stay
	A "$SPINCTL" handler load veth2 bench/null_handler.bpf.o name null2 slot 2 >/dev/null ||
		isobad "handler load ... slot 2"
	A "$SPINCTL" handler load veth2 bench/null_handler.bpf.o name null0 >/dev/null ||
		isobad "handler load"
	rc=0
	A "$SPINCTL" handler load veth2 bench/null_handler.bpf.o name null3 slot 3 \
		>/dev/null 2>"$LOG/iso.err" || rc=$?
	cat "$LOG/iso.err"
	[ "$rc" -eq 8 ] && grep -q "process slot 3 of 'veth2' has no window" "$LOG/iso.err" ||
		isobad "handler load ... slot 3 (no window): exit $rc"
	ih=$(A "$SPINCTL" me append veth2 pt 512 bits 8 len 4096 off 64 no-events handler null2)
	i0=$(A "$SPINCTL" me append veth2 pt 512 bits 9 len 4096 off 128 no-events handler null0)
	nsx "$NSB" "$SPINCTL" send to 10.77.41.1 pt 512 bits 8 data a1a2a3a4 rank 2 >/dev/null
	for i in $(seq 100); do
		[ "$(asB "$SPINCTL" window read veth2 2 64 4)" = a1a2a3a4 ] && break
		sleep 0.05
	done
	[ "$(asB "$SPINCTL" window read veth2 2 64 4)" = a1a2a3a4 ] ||
		isobad "slot 2's handler did not deposit into B's window"
	oob0=$(A "$SPINCTL" -j stats veth2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["drops"]["host_oob"])')
	nsx "$NSB" "$SPINCTL" send to 10.77.41.1 pt 512 bits 9 data b1b2b3b4 rank 2 >/dev/null
	for i in $(seq 100); do
		oob=$(A "$SPINCTL" -j stats veth2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["drops"]["host_oob"])')
		[ "$oob" -gt "$oob0" ] && break
		sleep 0.05
	done
	[ "$oob" -gt "$oob0" ] || isobad "slot 0's handler on B's entry: no host_oob"
	[ "$(asB "$SPINCTL" window read veth2 2 128 4)" = 00000000 ] ||
		isobad "slot 0's handler reached B's window"
	A "$SPINCTL" me unlink veth2 "$ih"
	A "$SPINCTL" me unlink veth2 "$i0"
	A "$SPINCTL" handler unload veth2 null2
	A "$SPINCTL" handler unload veth2 null0

	# a revoked window is gone for its user
	A "$SPINCTL" window revoke veth2 1
	rc=0
	asA "$SPINCTL" window read veth2 1 0 4 2>"$LOG/iso.err" || rc=$?
	cat "$LOG/iso.err"
	[ "$rc" -eq 8 ] && grep -q "no host window of slot 1" "$LOG/iso.err" || isobad "revoked: exit $rc"
	[ "$ISO_BAD" = 0 ] || A "$SPINCTL" stats -v veth2
	[ "$ISO_BAD" = 0 ]
}

# ------------------------------------------------------------- main --

if ! setup >"$LOG/setup.log" 2>&1; then
	echo "FAIL spinctl/setup"
	sed 's/^/    /' "$LOG/setup.log" | tail -20
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
run_test bad_numbers t_bad_numbers
run_test bad_ranges t_bad_ranges
run_test bad_options t_bad_options
run_test me_huge_len_cli t_me_huge_len_cli
run_test me_huge_len_lib t_me_huge_len_lib
run_test me_hpu_size t_me_hpu_size
run_test pins_foreign_dir t_pins_foreign_dir
run_test detach_no_follow t_detach_no_follow
run_test detach_keeps_going t_detach_keeps_going
run_test rendezvous t_rendezvous
run_test owner t_owner
run_test good_input t_good_input
run_test options_anywhere t_options_anywhere
run_test json_errors t_json_errors
run_test json_u64 t_json_u64
run_test status_all t_status_all
run_test stats_prom t_stats_prom
run_test handler_check t_handler_check
run_test dissector t_dissector
run_test batch t_batch
run_test bad_window t_bad_window
run_test iso_windows t_iso_windows
run_test bad_names t_bad_names	# last: its final rows break the old code's pins
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
