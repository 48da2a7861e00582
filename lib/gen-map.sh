#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# lib/gen-map.sh SOVER HEADER...: the version script of libspin.so: every
# function the public headers declare (as GCC's -aux-info lists them, with
# the header each comes from) is global, everything else local.
#
#   CC=gcc lib/gen-map.sh 1 include/spin/spin.h ... > lib/libspin.map
set -eu
sover=$1; shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "$@"; do
	echo "#include <${h#include/}>"
done > "$tmp/pub.c"
# -aux-info is GCC's: with CC=clang, gcc lists the prototypes
${CC:-gcc} -Iinclude -D_GNU_SOURCE -fsyntax-only -aux-info "$tmp/pub.aux" "$tmp/pub.c" 2>/dev/null ||
	gcc -Iinclude -D_GNU_SOURCE -fsyntax-only -aux-info "$tmp/pub.aux" "$tmp/pub.c" || {
	echo "gen-map.sh: the version script needs gcc (-aux-info)" >&2
	exit 1
}
pat=$(printf '%s\n' "$@" | sed 's/[.]/[.]/g' | paste -sd'|')
syms=$(grep -E "^/\* ($pat):[0-9]+:" "$tmp/pub.aux" | grep -v ' static ' |
	sed -E 's/^[^*]*\*\/ //; s/ \(.*//; s/.*[ *]//' | sort -u)
[ -n "$syms" ] || { echo "gen-map.sh: no function declared in $*" >&2; exit 1; }
echo "LIBSPIN_$sover {"
echo "	global:"
for s in $syms; do
	echo "		$s;"
done
echo "	local:"
echo "		*;"
echo "};"
