#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# KTAP output (selftests/ktap.sh, `make -C selftests run_tests`): the
# converter on a made-up suite whose every kind of line is known (the
# exact output), its exit status, and the make target on a real suite,
# checked by a small KTAP reader.  One PASS/FAIL/SKIP line per test and
# "N passed, N failed, N skipped".
#
#   selftests/test_ktap.sh [-t GLOB]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
spin_test_args "$@"
LOG=$(mktemp -d /tmp/spin-ktap.XXXXXX)
trap 'rm -rf "$LOG"' EXIT
fail() { echo "$*"; return 1; }

run_test() { spin_run_test ktap "$1" "$2"; }

# KTAP reader: one version line first, results numbered 1..N in order,
# the plan 1..N, SKIP directives with a reason; prints "P F S".
ktap_read() {
	python3 -c '
import re,sys
lines=sys.stdin.read().split("\n")
assert lines[0]=="TAP version 13", lines[0]
n=0; p=f=s=0; plan=None
for l in lines[1:]:
    m=re.match(r"^(not )?ok (\d+) (\S+)( # SKIP( .*)?)?$", l)
    if m:
        n+=1
        assert int(m.group(2))==n, l
        if m.group(4):
            assert m.group(5), "skip without a reason: "+l
            s+=1
        elif m.group(1): f+=1
        else: p+=1
        continue
    m=re.match(r"^1\.\.(\d+)$", l)
    if m:
        assert plan is None; plan=int(m.group(1))
assert plan==n, (plan,n)
print(p,f,s)
'
}

t_converter() {
	local rc=0
	cat >"$LOG/fake.sh" <<-'EOF'
	#!/bin/sh
	echo "PASS fake/one"
	echo "  skip: needs two CPUs"
	echo "SKIP fake/two"
	echo "FAIL fake/three"
	echo "    why it failed"
	echo "SKIP fake/four"
	echo "    no tshark"
	echo "SKIP fake/all (needs root)"
	echo "1 passed, 1 failed, 3 skipped"
	exit 1
	EOF
	chmod +x "$LOG/fake.sh"
	selftests/ktap.sh "$LOG/fake.sh" >"$LOG/out" || rc=$?
	cat "$LOG/out"
	[ $rc -eq 1 ] || fail "exit $rc, not 1"
	diff -u - "$LOG/out" <<-'EOF'
	TAP version 13
	PASS fake/one
	ok 1 fake/one
	  skip: needs two CPUs
	SKIP fake/two
	ok 2 fake/two # SKIP needs two CPUs
	FAIL fake/three
	not ok 3 fake/three
	    why it failed
	SKIP fake/four
	    no tshark
	ok 4 fake/four # SKIP no tshark
	SKIP fake/all (needs root)
	ok 5 fake/all # SKIP needs root
	1 passed, 1 failed, 3 skipped
	1..5
	# Totals: pass:1 fail:1 skip:3
	EOF
	[ "$(ktap_read <"$LOG/out")" = "1 1 3" ] || fail "reader"
	# a suite that passes: exit 0, the runner's summary line untouched
	printf '#!/bin/sh\necho "PASS a/b"\necho "1 passed, 0 failed, 0 skipped"\n' >"$LOG/ok.sh"
	chmod +x "$LOG/ok.sh"
	selftests/ktap.sh "$LOG/ok.sh" >"$LOG/out" || fail "exit $? for a passing suite"
	grep -qx '1 passed, 0 failed, 0 skipped' "$LOG/out" || fail "summary line"
}

# make -C selftests run_tests on a real suite (the softfloat one: fast).
t_make_target() {
	make -s -C selftests run_tests SUITES=test_softfloat >"$LOG/out"
	cat "$LOG/out"
	read -r p f s < <(ktap_read <"$LOG/out")
	[ "$p $f" = "$p 0" ] && [ "$p" -ge 3 ] || fail "ktap: $p passed, $f failed"
	grep -qE "^$p passed, 0 failed, $s skipped$" "$LOG/out" || fail "the suite's summary line"
	grep -qx "ok 1 softfloat/[a-z_]*" "$LOG/out" || fail "no ok line"
}

run_test converter t_converter
run_test make_target t_make_target
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
