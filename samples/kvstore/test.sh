#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Key-value store sample: a spin server (GETs answered by the handler from
# the table in host memory, SETs and misses by the host process) and
# YCSB-like clients that check every reply against their own model
# (kvstore.c).  Namespaces spins$$-kv-r0 (server), -r1, -r2 (clients) on a
# bridge, 10.79.23.0/24.  One PASS/FAIL line per case.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/sample_topo.sh

KV=$TOP/samples/kvstore/kvstore SPINCTL=$TOP/tools/spinctl
TAG=spins$$-kv SRV=spins$$-kv-r0 C1=spins$$-kv-r1 C2=spins$$-kv-r2
IP0=10.79.23.1 KEYS=2000
pass=0 fail=0 skip=0
D=$(mktemp -d /tmp/kvtest.XXXXXX)

ok() { echo "PASS sample-kvstore/$1"; pass=$((pass + 1)); }
ko() { echo "FAIL sample-kvstore/$1${2:+: $2}"; fail=$((fail + 1)); }
cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	[ -n "${usrv:-}" ] && kill "$usrv" 2>/dev/null && wait "$usrv" 2>/dev/null
	nsx "$SRV" "$SPINCTL" detach veth0 >/dev/null 2>&1
	nsx "$C2" "$SPINCTL" detach veth0 >/dev/null 2>&1
	spin_ns_cleanup
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || { echo "SKIP sample-kvstore/all: not root"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
spin_bpffs_ensure || { echo "FAIL sample-kvstore/bpffs"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
[ -x "$KV" ] && [ -f samples/kvstore/kvstore.bpf.o ] || { echo "FAIL sample-kvstore/build: run make"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

# Every case is a number of requests, not a duration, and checks counts,
# not rates: a loaded machine only makes it take longer.  A reply is waited
# for up to WAIT_MS (the client's default, 1 s, is a timing a loaded machine
# can miss; a reply that does not come is a failure either way); a client
# runs at most 120 s.
WAIT_MS=30000
# client NS ARGS...: run a client, output in $D/out
client() {
	local ns=$1; shift
	timeout 120 nsenter --net=/var/run/netns/"$ns" -- "$KV" client "$IP0" keys $KEYS "$@" \
		timeout-ms $WAIT_MS >"$D/out" 2>&1
}
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" "$2" | head -1; }
# ready PID FILE: stop waiting once FILE says ready or PID exited
ready_or_gone() { grep -q ready "$2" || ! kill -0 "$1" 2>/dev/null; }
# srv_msgs: messages the server's runtime completed so far
srv_msgs() { nsx "$SRV" "$SPINCTL" -j stats veth0 | sed -n 's/.*"msgs_completed":\([0-9]*\),.*/\1/p'; }

# 1. server up: runtime attached, handlers accepted by the verifier, keys loaded
if sample_topo_up "$TAG" 3 23 "$D/hosts" && nsx "$SRV" "$SPINCTL" attach veth0 rank 0 >/dev/null; then
	# 256 slots for 2000 keys: most keys have no slot, so GETs both hit and miss
	# (it runs until case 8 stops it; seconds only bounds a stray one; the
	# log is made here: the redirection happens in the child, maybe after
	# the first look)
	: >"$D/srv"
	SPIN_HOSTFILE=$D/hosts SPIN_RANK=0 nsenter --net=/var/run/netns/"$SRV" -- \
		"$KV" server veth0 keys $KEYS slot-bits 8 seconds 600 >"$D/srv" 2>&1 &
	srv=$!
	spin_wait_until 60 ready_or_gone $srv "$D/srv"
fi
if grep -q ready "$D/srv" 2>/dev/null && nsx "$SRV" "$SPINCTL" handler list veth0 | grep -q kvstore; then
	ok server
else
	ko server "$(tail -5 "$D/srv" 2>/dev/null)"
fi

# 2./3. GETs only, one at a time: hits answered by the handler, misses by the host
if client "$C1" rank 1 clients 2 get-pct 100 window 1 count 3000 warmup 0; then
	dev=$(field dev "$D/out") host=$(field host "$D/out")
	[ "${dev:-0}" -gt 0 ] && ok get-hit || ko get-hit "no reply came from the handler: $(cat "$D/out")"
	[ "${host:-0}" -gt 0 ] && ok get-miss || ko get-miss "no GET fell through to the host: $(cat "$D/out")"
else
	ko get-hit "$(tail -3 "$D/out")"; ko get-miss "client failed"
fi

# 4. SET then GET, one at a time: every GET of a key this client SET returns
# exactly the last acknowledged version (the client's model), from either path
if client "$C1" rank 1 clients 2 get-pct 50 window 1 count 4000 warmup 0 theta 0.99; then
	sets=$(field sets "$D/out") dev=$(field dev "$D/out")
	[ "${sets:-0}" -gt 1000 ] && [ "${dev:-0}" -gt 0 ] && ok set-then-get ||
		ko set-then-get "$(cat "$D/out")"
else
	ko set-then-get "$(tail -3 "$D/out")"
fi

# 5. a hot key: client 1 SETs item 0 as fast as it can while client 2 GETs it;
# every value must be whole (bytes = f(key, version)), never torn.  The
# reader starts once the server has seen the writer's first SETs; the writer
# has 2 times as many requests as the reader (and SETs go through the host,
# GETs do not): it writes all the while the reader reads.
client1() {
	timeout 120 nsenter --net=/var/run/netns/"$C1" -- "$KV" client "$IP0" keys $KEYS "$@" \
		timeout-ms $WAIT_MS
}
HOT_SETS=40000 HOT_GETS=20000
m0=$(srv_msgs)
client1 rank 1 clients 2 hot get-pct 0 window 8 count $HOT_SETS warmup 0 >"$D/hot1" 2>&1 &
w=$!
writing() { local m; m=$(srv_msgs); [ "${m:-0}" -gt "${m0:-0}" ] || ! kill -0 $w 2>/dev/null; }
spin_wait_until 60 writing
client "$C2" rank 2 clients 2 hot get-pct 100 window 8 count $HOT_GETS warmup 0; r2=$?
cp "$D/out" "$D/hot2"
wait $w; r1=$?
dev=$(field dev "$D/hot2") sets=$(field sets "$D/hot1")
if [ $r1 = 0 ] && [ $r2 = 0 ] && [ "${dev:-0}" -gt 0 ] && [ "${sets:-0}" = $HOT_SETS ]; then
	ok hot-key-no-torn-value
else
	ko hot-key-no-torn-value "writer: $(tail -2 "$D/hot1") reader: $(tail -2 "$D/hot2")"
fi

# 6. both clients, Zipf keys, 50/50 and 95/5, 16 outstanding each (no
# warm-up: every reply is checked)
r=0
for mix in 50 95; do
	client1 rank 1 clients 2 get-pct $mix window 16 count 50000 warmup 0 >"$D/m1" 2>&1 &
	w=$!
	client "$C2" rank 2 clients 2 get-pct $mix window 16 count 50000 warmup 0 || r=1
	wait $w || r=1
	[ $r = 0 ] || { ko "mix-$mix" "$(tail -2 "$D/m1") / $(tail -2 "$D/out")"; continue; }
	ok "mix-$mix"
done

# 7. the AF_XDP load generator (client ... xsk veth0: the runtime on the
# client's veth0, requests posted in batches with one kick each, replies
# through an SPIN_ME_XSK entry), against the spin server and against the
# UDP server on its own port; every reply checked as before
xclient() {	# PORT ARGS...: client 2 on AF_XDP
	local port=$1; shift
	SPIN_HOSTFILE=$D/hosts SPIN_RANK=2 timeout 120 nsenter --net=/var/run/netns/"$C2" -- \
		"$KV" client "$IP0" keys $KEYS rank 2 clients 2 port "$port" xsk veth0 "$@" \
		timeout-ms $WAIT_MS >"$D/out" 2>&1
}
if nsx "$C2" "$SPINCTL" attach veth0 rank 2 >/dev/null; then
	# requests in batches with one kick each: a first window of 64
	# requests goes out at once (how many later batches there are, and
	# how large, depends on when the replies come: the scheduling)
	if xclient 7717 get-pct 95 window 64 count 64 warmup 0; then
		pk=$(field tx_packets "$D/out") kicks=$(field tx_kicks "$D/out")
		cp "$D/out" "$D/xbatch"
	else
		pk=0 kicks=0
	fi
	if xclient 7717 get-pct 95 window 32 count 20000 warmup 0; then
		dev=$(field dev "$D/out") host=$(field host "$D/out")
		if [ "${dev:-0}" -gt 0 ] && [ "${host:-0}" -gt 0 ] && [ "${kicks:-0}" -gt 0 ] &&
		   [ "$((kicks * 2))" -lt "${pk:-0}" ]; then
			ok xsk-client
		else
			ko xsk-client "handler and host replies, fewer kicks than half the packets: $(cat "$D/xbatch" "$D/out" 2>/dev/null)"
		fi
	else
		ko xsk-client "$(tail -3 "$D/out")"
	fi
	: >"$D/usrv"
	nsenter --net=/var/run/netns/"$SRV" -- "$KV" udp-server "$IP0" keys $KEYS seconds 600 >"$D/usrv" 2>&1 &
	usrv=$!
	spin_wait_until 60 ready_or_gone $usrv "$D/usrv"
	if xclient 7718 get-pct 50 window 16 count 3000 warmup 0 && [ "$(field dev "$D/out")" = 0 ] &&
	   [ "$(field ops "$D/out")" = 3000 ]; then
		ok xsk-client-udp-server
	else
		ko xsk-client-udp-server "$(tail -3 "$D/out")"
	fi
	kill $usrv 2>/dev/null; wait $usrv 2>/dev/null
	nsx "$C2" "$SPINCTL" detach veth0 >/dev/null 2>&1
else
	ko xsk-client "cannot attach the runtime to the client's veth0"
	ko xsk-client-udp-server "no runtime"
fi

# 8. the server saw what the clients saw: handler hits, host answers, no bad request
kill $srv; wait $srv; srv_rc=$?; srv=
hits=$(sed -n 's/.*handler hits \([0-9]*\).*/\1/p' "$D/srv")
if [ $srv_rc = 0 ] && [ "${hits:-0}" -gt 0 ] && grep -q "bad 0 other 0" "$D/srv"; then
	ok server-counters
else
	ko server-counters "$(tail -2 "$D/srv")"
fi
nsx "$SRV" "$SPINCTL" -v stats veth0 >"$D/stats" 2>&1
if awk '/^drops:/{d=1;next} d && $2 != 0 && $1 != "truncated" {bad=1} END{exit bad}' "$D/stats"; then
	ok no-runtime-drops
else
	ko no-runtime-drops "$(awk '/^drops:/{d=1;next} d && $2 != 0' "$D/stats")"
fi

# 9. clean-up: detach, namespaces gone
nsx "$SRV" "$SPINCTL" detach veth0 >/dev/null 2>&1
spin_ns_cleanup
if ! ip netns list | grep -q "^spins$$-kv"; then ok cleanup; else ko cleanup "namespaces left"; fi

echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
