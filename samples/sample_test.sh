# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The start every samples/<name>/test.sh shares.  Source it after
# selftests/lib/netns.sh, then:
#
#   sample_test_begin NAME "$@"   parse -t GLOB / -v into FILTER / VERBOSE,
#                                 set PASS FAIL SKIP = 0 and WORK (a temp dir,
#                                 removed on exit with every namespace made
#                                 through netns.sh and every child process),
#                                 skip without root, fail without bpffs
#   sample_test_need FILE...      fail unless every FILE exists (make)
#   sample_test_abort WHAT [LOG]  one FAIL line (LOG indented), the summary, exit 1

sample_test_cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	spin_ns_cleanup
	rm -rf "$WORK"
}

sample_test_abort() {
	echo "FAIL sample-$SAMPLE/$1"
	[ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/    /' "$2"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

sample_test_need() {
	local f
	for f in "$@"; do
		[ -e "$f" ] || sample_test_abort "build ($f missing: run make)"
	done
}

sample_test_begin() {
	SAMPLE=$1; shift
	spin_test_args "$@"
	WORK=$(mktemp -d "/tmp/spin-$SAMPLE.XXXXXX")
	chmod 755 "$WORK"
	trap sample_test_cleanup EXIT
	trap 'exit 130' INT TERM
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP sample-$SAMPLE/all (need root)"
		echo "0 passed, 0 failed, 1 skipped"
		exit 0
	fi
	spin_bpffs_ensure || sample_test_abort bpffs
}
