#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# selftests/ktap.sh SUITE...: run test suites (default: selftests/run_tests.sh,
# the whole suite) and add KTAP (the kernel's TAP version 13 dialect) to
# their output for kernel and distribution test runners: "TAP version 13"
# first, "ok N name" / "not ok N name" after each PASS/FAIL line,
# "ok N name # SKIP reason" after each SKIP line, and at the end the plan
# "1..N" and "# Totals: pass:P fail:F skip:S".  Every line of the suites is
# kept as it is, the "N passed, N failed, N skipped" lines too.  The exit
# status is non-zero if a suite failed.  `make -C selftests run_tests`
# runs it (SUITES= to pick: make -C selftests run_tests SUITES=test_spinctl.sh).
#
# A skip's reason is the rest of the SKIP line ("SKIP x/all (needs root)"),
# the C harness's "skip: ..." line just before it, or the first indented
# line after it (the shell suites' log tail).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$TOP/selftests/run_tests.sh"
(
	rc=0
	for s in "$@"; do
		"$s" 2>&1 || rc=1
	done
	exit $rc
) | awk -v OFS=' ' '
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
function emit_skip(   r) {
	r = skip_reason
	gsub(/#/, "", r)
	print "ok " (++n) " " skip_name " # SKIP" (r != "" ? " " r : "")
	skips++
	pending = 0
}
BEGIN { print "TAP version 13"; n = 0; pass = fail = skips = 0; pending = 0; lastmsg = "" }
{
	line = $0
	if (pending) {
		if (line ~ /^[ \t]/) {
			if (skip_reason == "")
				skip_reason = trim(line)
			print line
			next
		}
		emit_skip()
	}
	print line
	if (line ~ /^PASS [^ ]+/) {
		print "ok " (++n) " " $2; pass++
	} else if (line ~ /^FAIL [^ ]+/) {
		print "not ok " (++n) " " $2; fail++
	} else if (line ~ /^SKIP [^ ]+/) {
		skip_name = $2
		rest = line; sub(/^SKIP [^ ]+[ \t]*/, "", rest); rest = trim(rest)
		gsub(/^\(|\)$/, "", rest)
		skip_reason = rest
		if (skip_reason == "" && lastmsg ~ /^skip: /) {
			skip_reason = lastmsg; sub(/^skip: /, "", skip_reason)
		}
		if (skip_reason != "")
			emit_skip()
		else
			pending = 1
	}
	if (line ~ /^[ \t]/)
		lastmsg = trim(line)
	else
		lastmsg = ""
}
END {
	if (pending)
		emit_skip()
	print "1.." n
	print "# Totals: pass:" pass " fail:" fail " skip:" skips
}'
st=("${PIPESTATUS[@]}")
[ "${st[1]}" -eq 0 ] || exit 1
exit "${st[0]}"
