#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The runtime fuzzer (unit/fuzz_frames) at length: FRAMES mutated frames
# through BPF_PROG_RUN (default 10^8, about 4 minutes here), canary pages
# around every window, entries replaced under it.  ./run test runs 10^6.
# Prints the test's PASS/FAIL line and the usual summary.  Root.
#
#   selftests/fuzz_long.sh            FRAMES=100000000 by default
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
FRAMES=${FRAMES:-100000000}
case $FRAMES in ''|*[!0-9]*) echo "fuzz_long: FRAMES must be a decimal count" >&2; exit 2 ;; esac
exec env SPIN_FUZZ_FRAMES="$FRAMES" "$TOP/selftests/test_unit" -t fuzz_frames
