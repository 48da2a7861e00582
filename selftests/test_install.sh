#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# spin installed like a library (issue 18): `make install` into a staging
# tree (PREFIX=/usr DESTDIR=..., multiarch LIBDIR) and into a real
# temporary PREFIX, then everything a user builds against the installed
# tree only, through pkg-config: a handler object and a Portals program
# that writes `#include <portals4.h>`; the exported symbols of libspin.so;
# the installed spinctl finding its runtime object and attaching it in a
# test namespace; the ABI check; make uninstall.
#
# The installs build in a copy of the source tree (the PREFIX is compiled
# into libspin, so installing rebuilds it: the tree under test stays as it
# is).  One PASS/FAIL/SKIP line per test and "N passed, N failed, N skipped".
#
#   selftests/test_install.sh [-t GLOB]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
TAG=spinti$$
NSA=$TAG-a
NSB=$TAG-b
spin_test_args "$@"

if [ "$(id -u)" != 0 ]; then
	echo "SKIP install/all (needs root)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
LOG=$(mktemp -d /tmp/spin-inst.XXXXXX)
SRC=$LOG/src		# the copy of the tree that is installed
ROOT=$LOG/root		# DESTDIR of the PREFIX=/usr install
PFX=$LOG/pfx		# a real PREFIX
MA=$(gcc -print-multiarch 2>/dev/null)
MA=${MA:-$(uname -m)-linux-gnu}
LIBDIR=/usr/lib/$MA
SYSPC=$(pkg-config --variable=pc_path pkg-config)
cleanup() {
	spin_ns_cleanup
	rm -rf "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "$*"; return 1; }

run_test() { spin_run_test install "$1" "$2"; }

# pkg-config that sees only the staging tree: its .pc, its paths prefixed
# with the staging root (-I and -L by the sysroot, variables by prefix)
spc() {
	# (the system's own directories for libbpf.pc, which spin.pc requires)
	PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$ROOT$LIBDIR/pkgconfig:$SYSPC" \
		PKG_CONFIG_SYSROOT_DIR="$ROOT" pkg-config --define-variable=prefix="$ROOT/usr" "$@"
}

setup() {
	mkdir -p "$SRC" || return 1
	# the tree as it is, built objects included (make only redoes what
	# the install paths change), without .git
	tar -C "$TOP" --exclude=./.git -cf - . | tar -C "$SRC" -xpf - || return 1
	make -s -C "$SRC" install PREFIX=/usr LIBDIR="$LIBDIR" DESTDIR="$ROOT" \
		>"$LOG/make-usr.log" 2>&1 || { cat "$LOG/make-usr.log"; return 1; }
	make -s -C "$SRC" install PREFIX="$PFX" >"$LOG/make-pfx.log" 2>&1 ||
		{ cat "$LOG/make-pfx.log"; return 1; }
	spin_ns_pair "$NSA" veth0 10.77.45.1 "$NSB" veth1 10.77.45.2 || return 1
}

# ---------------------------------------------------------------- tests --

# Where everything went (PREFIX=/usr, multiarch LIBDIR): the library with
# its soname and links, the Portals names, spin.pc, headers without the
# runtime internals, the BPF include tree, man pages, completion.
t_layout() {
	local f
	for f in usr/sbin/spinctl "${LIBDIR#/}/libspin.so.1" "${LIBDIR#/}/libspin.a" \
		"${LIBDIR#/}/pkgconfig/spin.pc" "${LIBDIR#/}/spin/spin_rt.bpf.o" \
		usr/include/portals4.h usr/include/spin/spin.h usr/include/spin/portals4.h \
		usr/include/spin/wire.h "${LIBDIR#/}/spin/include/spin/handler.h" \
		"${LIBDIR#/}/spin/include/spin/maps.bpf.h" "${LIBDIR#/}/spin/include/vmlinux.h" \
		usr/share/man/man8/spinctl.8 usr/share/man/man7/spin-handler.7 \
		usr/share/man/man3/libspin.3 usr/share/bash-completion/completions/spinctl \
		usr/share/doc/spin/spin.lua usr/share/doc/spin/spinctl.md usr/lib/systemd/system/spin@.service \
		usr/share/doc/spin/spin.conf.example; do
		[ -f "$ROOT/$f" ] || fail "missing /$f"
	done
	[ "$(readlink "$ROOT$LIBDIR/libspin.so")" = libspin.so.1 ] || fail "libspin.so is not a link to libspin.so.1"
	[ "$(readlink "$ROOT$LIBDIR/libportals.so")" = libspin.so.1 ] || fail "libportals.so is not a link to libspin.so.1"
	readelf -d "$ROOT$LIBDIR/libspin.so.1" | grep -q 'SONAME.*\[libspin.so.1\]' || fail "no soname libspin.so.1"
	# runtime internals are not host headers
	for f in maps.bpf.h rt_common.bpf.h vmlinux.h handler.h; do
		[ ! -e "$ROOT/usr/include/spin/$f" ] || fail "/usr/include/spin/$f installed"
	done
	# the man pages format without warnings
	for f in man8/spinctl.8 man7/spin-handler.7 man3/libspin.3; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$ROOT/usr/share/man/$f" 2>&1 >/dev/null |
			grep . && fail "man page $f has warnings"
	done
	# the completion loads and completes objects
	bash -c ". /usr/share/bash-completion/bash_completion 2>/dev/null
		. '$ROOT/usr/share/bash-completion/completions/spinctl'
		COMP_WORDS=(spinctl hand); COMP_CWORD=1; COMP_LINE='spinctl hand'; COMP_POINT=12
		_spinctl; echo \"\${COMPREPLY[*]}\"" | grep -qx handler || fail "completion of 'hand' is not handler"
	grep -q "^libdir=\${prefix}/lib/$MA$" "$ROOT$LIBDIR/pkgconfig/spin.pc" || fail "libdir in spin.pc"
}

# libspin.so exports exactly the functions of the public headers.
t_exports() {
	local so=$ROOT$LIBDIR/libspin.so.1
	nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$LOG/exp"
	nm -D --defined-only "$so" | awk '$2 != "T" && $2 != "A" { print }' >"$LOG/other"
	(cd "$SRC" && CC=gcc lib/gen-map.sh 1 include/spin/{spin,wire,auth,xsk,ptl_types,portals4,portals4_spin}.h) |
		sed -n 's/^\t\t\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' | sort -u >"$LOG/pub"
	[ "$(wc -l <"$LOG/pub")" -gt 100 ] || fail "only $(wc -l <"$LOG/pub") public functions found"
	diff "$LOG/pub" "$LOG/exp" || fail "exported functions differ from the public headers' (< public, > exported)"
	[ ! -s "$LOG/other" ] || { cat "$LOG/other"; fail "exported data symbols"; }
	for s in spin_seterr spin_lock spin_obj_get_at ptl_progress PtlInit; do
		grep -qx "$s" "$LOG/exp" && echo "exported: $s"
	done | grep -v PtlInit && fail "internal functions exported"
	grep -qx PtlInit "$LOG/exp" || fail "PtlInit not exported"
}

# A Portals program as written for the reference implementation
# (#include <portals4.h>, -lportals or pkg-config's -lspin), built against
# the staging tree only, and run.
t_portals_program() {
	cat >"$LOG/p.c" <<-'EOF'
	#include <portals4.h>
	#include <stdio.h>
	int main(void)
	{
		ptl_handle_ni_t a = PTL_INVALID_HANDLE, b = PTL_INVALID_HANDLE;

		if (PtlInit() != PTL_OK)
			return 1;
		printf("portals ok %d\n", PtlHandleIsEqual(a, b));
		PtlFini();
		return 0;
	}
	EOF
	local cflags libs
	cflags=$(spc --cflags spin)
	libs=$(spc --libs spin)
	echo "cflags: $cflags libs: $libs"
	[[ $cflags == *"-I$ROOT/usr/include"* || $cflags == "" ]] || fail "cflags $cflags"
	# only the staging tree: the build tree's include/ is not on the path
	gcc -nostdinc -isystem /usr/include -isystem /usr/include/$MA -isystem "$(gcc -print-file-name=include)" \
		$cflags "$LOG/p.c" $libs -o "$LOG/p" || fail "cannot build with pkg-config"
	readelf -d "$LOG/p" | grep -q 'NEEDED.*libspin.so.1' || fail "p does not need libspin.so.1"
	LD_LIBRARY_PATH=$ROOT$LIBDIR "$LOG/p" | grep -qx "portals ok 1" || fail "p did not run"
	# the reference implementation's link name
	gcc $cflags "$LOG/p.c" -L"$ROOT$LIBDIR" -lportals -o "$LOG/p2" || fail "cannot link -lportals"
	LD_LIBRARY_PATH=$ROOT$LIBDIR "$LOG/p2" | grep -qx "portals ok 1" || fail "p2 did not run"
	# and statically
	gcc $cflags "$LOG/p.c" $(spc --static --libs spin | sed "s|-lspin|$ROOT$LIBDIR/libspin.a|") \
		-o "$LOG/p3" || fail "cannot link statically"
	"$LOG/p3" | grep -qx "portals ok 1" || fail "p3 did not run"
	# the internals are not reachable with the host flags
	echo '#include <spin/maps.bpf.h>' >"$LOG/i.c"
	! gcc -nostdinc -isystem /usr/include -isystem /usr/include/$MA $cflags -fsyntax-only "$LOG/i.c" 2>/dev/null ||
		fail "spin/maps.bpf.h reachable from the host cflags"
}

# A handler built with the BPF include tree pkg-config names, loaded by the
# installed spinctl (real PREFIX) on a runtime it found by itself.
t_handler_and_spinctl() {
	local inc pc=$PFX/lib/pkgconfig ctl=$PFX/sbin/spinctl
	inc=$(spc --variable=bpfincludedir spin)
	[ "$inc" = "$ROOT$LIBDIR/spin/include" ] || fail "bpfincludedir $inc"
	clang -O2 -g -target bpf -mcpu=v3 -nostdinc -isystem /usr/include -isystem /usr/include/$MA -I"$inc" \
		-c "$TOP/samples/pingpong/pingpong.bpf.c" -o "$LOG/pp.bpf.o" || fail "handler does not build"
	# the same with the real PREFIX's .pc, then load it there
	inc=$(PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=$pc:$SYSPC pkg-config --variable=bpfincludedir spin)
	[ "$inc" = "$PFX/lib/spin/include" ] || fail "bpfincludedir $inc"
	clang -O2 -g -target bpf -mcpu=v3 -nostdinc -isystem /usr/include -isystem /usr/include/$MA -I"$inc" \
		-c "$TOP/samples/pingpong/pingpong.bpf.c" -o "$LOG/pp2.bpf.o" || fail "handler does not build"
	# the installed spinctl finds the installed runtime (nothing else is
	# next to it, SPIN_OBJ_DIR unset)
	nsx "$NSA" env -u SPIN_OBJ_DIR "$ctl" attach veth0 generic || fail "installed spinctl cannot attach"
	nsx "$NSA" "$ctl" handler load veth0 "$LOG/pp2.bpf.o" name pp || fail "handler load"
	nsx "$NSA" "$ctl" handler list veth0 | grep -q '^0 *pp ' || fail "handler not listed"
	nsx "$NSA" "$ctl" detach veth0 || fail "detach"
	# the PREFIX=/usr spinctl looks in /usr/lib/<multiarch>/spin
	local out
	out=$(nsx "$NSA" env -u SPIN_OBJ_DIR "$ROOT/usr/sbin/spinctl" attach veth0 generic 2>&1) && {
		nsx "$NSA" "$ROOT/usr/sbin/spinctl" detach veth0
		[ -e "$LIBDIR/spin/spin_rt.bpf.o" ] && exit 77	# spin installed on this host
		fail "attached without a runtime object"
	}
	echo "$out"
	[[ $out == *"in $LIBDIR/spin)"* ]] || fail "the /usr spinctl does not look in $LIBDIR/spin"
}

# An object built for another ABI is refused by the installed spinctl
# (handler) and by attach (runtime), one line each, nothing attached.
t_abi() {
	local ctl=$PFX/sbin/spinctl out rc=0
	cp -r "$PFX/lib/spin/include" "$LOG/abi2"
	sed -i 's/^#define SPIN_ABI_VERSION\t.*/#define SPIN_ABI_VERSION\t999/' "$LOG/abi2/spin/wire.h"
	grep -q 'SPIN_ABI_VERSION.999' "$LOG/abi2/spin/wire.h" || fail "sed"
	clang -O2 -g -target bpf -mcpu=v3 -I"$LOG/abi2" \
		-c "$TOP/samples/pingpong/pingpong.bpf.c" -o "$LOG/abi2.bpf.o"
	nsx "$NSA" "$ctl" attach veth0 generic
	out=$(nsx "$NSA" "$ctl" handler load veth0 "$LOG/abi2.bpf.o" name x 2>&1) || rc=$?
	echo "$out"
	[ $rc -eq 1 ] || fail "handler load exit $rc, not 1"
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "not one line"
	[[ $out == *"built for spin ABI 999, this spin has ABI 2"* ]] || fail "message"
	[ -z "$(nsx "$NSA" "$ctl" handler list veth0 | tail -n +2)" ] || fail "a handler was loaded"
	nsx "$NSA" "$ctl" detach veth0
	# a runtime object of another ABI
	mkdir "$LOG/rt2"
	clang -O2 -g -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -I"$LOG/abi2" -I"$SRC/vmlinux/x86" \
		-c "$SRC/bpf/spin_rt.bpf.c" -o "$LOG/rt2/spin_rt.bpf.o"
	rc=0
	out=$(nsx "$NSA" env SPIN_OBJ_DIR="$LOG/rt2" "$ctl" attach veth0 generic 2>&1) || rc=$?
	echo "$out"
	[ $rc -eq 1 ] || fail "attach exit $rc, not 1"
	[[ $out == *"runtime object $LOG/rt2/spin_rt.bpf.o was built for spin ABI 999"* ]] || fail "message"
	! ip -n "$NSA" link show veth0 | grep -q prog/xdp || fail "something attached"
}

# The installed spin@.service: systemd-analyze verifies it, and its
# ExecStart/ExecStop command lines (as systemd would run them for
# spin@veth0: %i replaced) attach the configuration of PREFIX/etc/spin/
# veth0.conf in a namespace and detach it; a configuration whose last line
# fails leaves nothing attached.
t_systemd_unit() {
	local unit=$PFX/lib/systemd/system/spin@.service start stop conf=$PFX/etc/spin/veth0.conf rc=0
	[ -f "$unit" ] || fail "no $unit"
	cat "$unit"
	if command -v systemd-analyze >/dev/null; then
		mkdir "$LOG/units"
		cp "$unit" "$LOG/units/"
		ln -s spin@.service "$LOG/units/spin@veth0.service"
		systemd-analyze verify --man=no "$LOG/units/spin@veth0.service" || fail "systemd-analyze verify"
	fi
	start=$(sed -n 's/^ExecStart=//p' "$unit" | sed 's/%i/veth0/g')
	stop=$(sed -n 's/^ExecStop=//p' "$unit" | sed 's/%i/veth0/g')
	[ "$start" = "$PFX/sbin/spinctl batch $PFX/etc/spin/veth0.conf" ] || fail "ExecStart $start"
	[ "$stop" = "$PFX/sbin/spinctl detach veth0" ] || fail "ExecStop $stop"
	grep -qx "ConditionPathExists=$PFX/etc/spin/%i.conf" "$unit" || fail "condition"
	mkdir -p "$PFX/etc/spin"
	cat >"$conf" <<-EOF
	# as an administrator writes it (the installed example's form)
	attach veth0 generic rank 4
	handler load veth0 $LOG/pp-unit.bpf.o name pp
	pt alloc veth0 0
	me append veth0 pt 0 bits 1 handler pp len 64k
	peer add veth0 5 10.77.45.2
	EOF
	clang -O2 -g -target bpf -mcpu=v3 -I"$PFX/lib/spin/include" \
		-c "$TOP/samples/pingpong/pingpong.bpf.c" -o "$LOG/pp-unit.bpf.o"
	nsx "$NSA" env -u SPIN_OBJ_DIR $start || fail "ExecStart"
	nsx "$NSA" "$PFX/sbin/spinctl" -j status veth0 | grep -q '"mode":"generic".*"rank":4' || fail "not attached"
	nsx "$NSA" "$PFX/sbin/spinctl" handler list veth0 | grep -q ' pp ' || fail "no handler"
	nsx "$NSA" "$PFX/sbin/spinctl" -j me list veth0 | grep -q '"handler":"pp"' || fail "no entry"
	nsx "$NSA" $stop || fail "ExecStop"
	! ip -n "$NSA" link show veth0 | grep -q prog/xdp || fail "still attached"
	[ ! -e "/sys/fs/bpf/spin/ns$(stat -L -c %i "/var/run/netns/$NSA")/veth0" ] || fail "pins left"
	# a failing configuration: the unit fails, nothing stays attached
	echo "me append veth0 pt 0 bits 2 handler nosuch" >>"$conf"
	nsx "$NSA" env -u SPIN_OBJ_DIR $start || rc=$?
	[ $rc -ne 0 ] || fail "ExecStart succeeded"
	! ip -n "$NSA" link show veth0 | grep -q prog/xdp || fail "attached after a failed start"
	[ ! -e "/sys/fs/bpf/spin/ns$(stat -L -c %i "/var/run/netns/$NSA")/veth0" ] || fail "pins left"
	# the example configuration names the installed paths
	grep -q "^peer load eth0 $PFX/etc/spin/hosts$" "$PFX/share/doc/spin/spin.conf.example" || fail "example"
	rm -rf "$PFX/etc"
}

# The Debian packages: dpkg-buildpackage in a clean copy of the tree (the
# files git knows and the new ones it does not ignore), lintian with no
# error or warning, and what each package holds; unpacked (not installed
# on this machine), the packaged spinctl looks for its runtime where
# libspin1 puts it.
t_debian() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null &&
		command -v lintian >/dev/null ||
		{ echo "no dpkg-buildpackage/debhelper/lintian (./run deps installs them)"; exit 77; }
	local d=$LOG/deb/spin-0.1 ma=$MA f
	mkdir -p "$d"
	(cd "$TOP" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$d")
	(cd "$d" && dpkg-buildpackage -us -uc -b) >"$LOG/deb.log" 2>&1 || { tail -30 "$LOG/deb.log"; fail "dpkg-buildpackage"; }
	ls "$LOG/deb"
	for f in spin-tools libspin1 libspin-dev; do
		ls "$LOG/deb/${f}_0.1_"*.deb >/dev/null || fail "no $f .deb"
	done
	lintian --fail-on error,warning "$LOG/deb/"*.changes >"$LOG/lintian.out" 2>&1 ||
		{ cat "$LOG/lintian.out"; fail "lintian"; }
	cat "$LOG/lintian.out"
	dpkg-deb -c "$LOG/deb/libspin1_0.1_"*.deb | grep -q "./usr/lib/$ma/libspin.so.1$" || fail "libspin1: library"
	dpkg-deb -c "$LOG/deb/libspin1_0.1_"*.deb | grep -q "./usr/lib/$ma/spin/spin_rt.bpf.o$" || fail "libspin1: runtime"
	dpkg-deb -c "$LOG/deb/libspin-dev_0.1_"*.deb | grep -q "./usr/include/portals4.h$" || fail "dev: portals4.h"
	dpkg-deb -c "$LOG/deb/libspin-dev_0.1_"*.deb | grep -q "./usr/lib/$ma/spin/include/spin/handler.h$" || fail "dev: handler.h"
	dpkg-deb -c "$LOG/deb/libspin-dev_0.1_"*.deb | grep -q "./usr/lib/$ma/libportals.so -> libspin.so.1$" || fail "dev: libportals.so"
	dpkg-deb -c "$LOG/deb/spin-tools_0.1_"*.deb | grep -q "./lib/systemd/system/spin@.service$" || fail "tools: unit"
	dpkg-deb -c "$LOG/deb/spin-tools_0.1_"*.deb | grep -q "./usr/sbin/spinctl$" || fail "tools: spinctl"
	mkdir "$LOG/deb/root"
	for f in "$LOG/deb/"*.deb; do dpkg-deb -x "$f" "$LOG/deb/root"; done
	grep -q "ExecStart=/usr/sbin/spinctl batch /etc/spin/%i.conf" "$LOG/deb/root/lib/systemd/system/spin@.service" || fail "unit paths"
	grep -qa "/usr/lib/$ma/spin" "$LOG/deb/root/usr/sbin/spinctl" || fail "spinctl does not look in /usr/lib/$ma/spin"
	dpkg-deb -f "$LOG/deb/spin-tools_0.1_"*.deb Depends | grep -q 'libspin1 (= 0.1)' || fail "spin-tools Depends"
}

# make uninstall removes every file it installed.
t_uninstall() {
	make -s -C "$SRC" uninstall PREFIX=/usr LIBDIR="$LIBDIR" DESTDIR="$ROOT"
	make -s -C "$SRC" uninstall PREFIX="$PFX"
	find "$ROOT" "$PFX" ! -type d | grep . && fail "left behind"
	return 0
}

if ! setup >"$LOG/setup.log" 2>&1; then
	echo "FAIL install/setup"; sed 's/^/    /' "$LOG/setup.log" | tail -30
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
run_test layout t_layout
run_test exports t_exports
run_test portals_program t_portals_program
run_test handler_and_spinctl t_handler_and_spinctl
run_test abi t_abi
run_test systemd_unit t_systemd_unit
run_test debian t_debian
run_test uninstall t_uninstall	# last: removes the installs
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" -eq 0 ]
