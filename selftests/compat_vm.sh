#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Boot Debian 12's own kernel (linux-image-amd64, 6.1) under qemu and run
# spin's demo and unit and veth suites there, on the already built tree.
#
#   selftests/compat_vm.sh [-k KERNEL.deb] [--] [COMMAND LINE | COMMAND ARGS...]
#
# The guest's root is this host's root, shared read-only over 9p with a
# tmpfs overlay on top (so the guest runs the host's Debian 12 userland and
# the objects built here); the work tree is shared read-write at the same
# path.  The kernel package (apt-get download) and a small busybox
# initramfs are cached in $SPIN_COMPAT_CACHE (default
# /var/cache/spin-compat), never in the tree.  KVM is used when /dev/kvm
# works, software emulation (TCG) otherwise.
#
# Without a command the guest runs the demo (COUNT=200), selftests/test_unit
# and selftests/test_veth.sh (selftests/compat_guest.sh).  One "compat: ..." summary line per run and a
# closing "N passed, N failed, N skipped"; exit 0 only if all passed.
#
# Environment: SPIN_COMPAT_CACHE, SPIN_COMPAT_MEM (MiB, default 2048),
# SPIN_COMPAT_CPUS (default 2), SPIN_COMPAT_TIMEOUT (s, default 3600),
# SPIN_COMPAT_ACCEL (kvm|tcg, default: kvm if it works).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1

CACHE=${SPIN_COMPAT_CACHE:-/var/cache/spin-compat}
MEM=${SPIN_COMPAT_MEM:-2048}
CPUS=${SPIN_COMPAT_CPUS:-2}
TIMEOUT=${SPIN_COMPAT_TIMEOUT:-3600}
DEB=""
die() { echo "compat: $1" >&2; exit "${2:-1}"; }

while [ $# -gt 0 ]; do
	case $1 in
	-k)	[ $# -ge 2 ] || die "-k needs a kernel .deb" 2; DEB=$2; shift 2 ;;
	--)	shift; break ;;
	-*)	die "unknown option '$1' (usage: $0 [-k KERNEL.deb] [-- COMMAND...])" 2 ;;
	*)	break ;;
	esac
done

[ "$(id -u)" = 0 ] || die "run as root (qemu shares / with the guest)" 3
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: apt-get install qemu-system-x86" 4
[ -x /bin/busybox ] || die "/bin/busybox missing: apt-get install busybox-static" 4
command -v depmod >/dev/null || die "depmod missing: apt-get install kmod" 4
mkdir -p "$CACHE" || die "cannot create the cache directory $CACHE" 4

# ---- the kernel package: Debian 12's linux-image-amd64 (the 6.1 it depends on)
if [ -z "$DEB" ]; then
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	[ -n "$pkg" ] || die "cannot resolve linux-image-amd64 (apt-get update? this needs Debian's archive in sources.list)" 4
	DEB=$(ls "$CACHE/${pkg}"_*.deb 2>/dev/null | tail -1)
	if [ -z "$DEB" ]; then
		echo "compat: downloading $pkg"
		(cd "$CACHE" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
			die "cannot download $pkg (apt-get download $pkg failed: network or sources.list)" 4
		DEB=$(ls "$CACHE/${pkg}"_*.deb | tail -1)
	fi
fi
[ -f "$DEB" ] || die "no kernel package $DEB" 4
KDIR=$CACHE/$(basename "$DEB" .deb)
if [ ! -f "$KDIR/.done" ]; then
	rm -rf "$KDIR"
	mkdir -p "$KDIR" && dpkg-deb -x "$DEB" "$KDIR" || die "cannot unpack $DEB" 4
	touch "$KDIR/.done"
fi
KVER=$(ls "$KDIR/lib/modules" | head -1)
VMLINUZ=$KDIR/boot/vmlinuz-$KVER
[ -f "$VMLINUZ" ] || die "no vmlinuz in $DEB" 4
[ -f "$KDIR/lib/modules/$KVER/modules.dep" ] || depmod -b "$KDIR" "$KVER" || die "depmod failed for $KVER" 4

# ---- the initramfs: busybox, the modules to mount 9p and overlayfs, /init
INITRD=$KDIR/initrd.cpio.gz
INIT_SRC=$TOP/selftests/compat_init.sh
if [ ! -f "$INITRD" ] || [ "$INIT_SRC" -nt "$INITRD" ] || [ "$0" -nt "$INITRD" ]; then
	ir=$(mktemp -d /tmp/spin-compat-ir.XXXXXX)
	mkdir -p "$ir"/{bin,mods,proc,sys,dev,newroot,lower,rw}
	cp /bin/busybox "$ir/bin/busybox"
	for a in sh mount insmod mkdir switch_root echo cat sleep poweroff; do ln -s busybox "$ir/bin/$a"; done
	# the modules in dependency order (modules.dep lists each one's needs)
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		p=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$KDIR/lib/modules/$KVER/modules.dep") || die "module $m not in $KVER" 4
		for d in $(echo "${p#*:}" | tr ' ' '\n' | tac) "${p%%:*}"; do
			[ -n "$d" ] || continue
			b=$(basename "$d")
			grep -qx "$b" "$ir/mods/order" 2>/dev/null && continue
			cp "$KDIR/lib/modules/$KVER/$d" "$ir/mods/" && echo "$b" >>"$ir/mods/order"
		done
	done
	cp "$INIT_SRC" "$ir/init" && chmod +x "$ir/init"
	(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRD.tmp" && mv "$INITRD.tmp" "$INITRD"
	rm -rf "$ir"
fi

# ---- accelerator: KVM if it opens, else TCG
ACCEL=${SPIN_COMPAT_ACCEL:-}
if [ -z "$ACCEL" ]; then
	ACCEL=tcg
	# KVM works if the kernel prints its banner within 10 s (a nested
	# KVM may open and then hang the guest before its first line)
	if [ -c /dev/kvm ]; then
		timeout 10 qemu-system-x86_64 -accel kvm -cpu host,-arch-capabilities -m 256 \
			-nodefaults -display none -serial stdio -kernel "$VMLINUZ" \
			-append "console=ttyS0 earlyprintk=serial,ttyS0" </dev/null 2>/dev/null |
			grep -aq "Linux version" && ACCEL=kvm
	fi
fi
CPU=max
[ "$ACCEL" = kvm ] && CPU=host,-arch-capabilities

# ---- what the guest runs
OUT=$(mktemp -d "$CACHE/out.XXXXXX")	# not /tmp: the guest mounts a tmpfs there
QPID=""
cleanup() {
	[ -n "$QPID" ] && kill "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null
	[ -n "${wd:-}" ] && kill "$wd" 2>/dev/null
	rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ $# -eq 1 ]; then
	echo "$1" >"$OUT/cmd"	# one argument: a shell command line
elif [ $# -gt 1 ]; then
	printf '%q ' "$@" >"$OUT/cmd"
else
	echo "selftests/compat_guest.sh" >"$OUT/cmd"
fi
echo "$TOP" >"$OUT/top"

echo "compat: booting $KVER ($(basename "$DEB")) under qemu ($ACCEL, $CPUS vCPUs, $MEM MiB)"
start=$(date +%s)
# the serial console is the guest's output; the exit code comes back in $OUT/rc
qemu-system-x86_64 -accel "$ACCEL" -cpu "$CPU" -smp "$CPUS" -m "$MEM" \
	-nographic -nodefaults -no-reboot -serial stdio -display none \
	-kernel "$VMLINUZ" -initrd "$INITRD" \
	-append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 loglevel=4 spin.top=$TOP spin.out=$OUT" \
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=root,mount_tag=spinroot \
	-fsdev local,id=wt,path="$TOP",security_model=none \
	-device virtio-9p-pci,fsdev=wt,mount_tag=spinwt \
	-fsdev local,id=out,path="$OUT",security_model=none \
	-device virtio-9p-pci,fsdev=out,mount_tag=spinout \
	-fsdev local,id=mods,path="$KDIR/lib/modules/$KVER",security_model=none,readonly=on \
	-device virtio-9p-pci,fsdev=mods,mount_tag=spinmods </dev/null &
QPID=$!
# the watchdog: its sleep must not outlive this script, or it would hold
# the output pipe of a caller (run_tests.sh's tee) open until it ends
( trap 'kill $sp 2>/dev/null; exit 0' TERM
  sleep "$TIMEOUT" & sp=$!; wait $sp
  echo "compat: guest still running after ${TIMEOUT}s: killed"; kill $QPID 2>/dev/null ) &
wd=$!
wait $QPID
QPID=""
kill $wd 2>/dev/null; wait $wd 2>/dev/null
secs=$(($(date +%s) - start))
rc=$(cat "$OUT/rc" 2>/dev/null) || rc=""
if [ -z "$rc" ]; then
	echo "compat: the guest did not finish (no exit code after ${secs}s: see the console output above)"
	exit 1
fi
echo "compat: guest $KVER finished in ${secs}s, exit $rc"
# the guest's closing count once more, without the console's CR, as the
# last line (run_tests.sh reads the last "N passed, ..." line)
line=$(grep -aE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$OUT/log" 2>/dev/null | tail -1)
[ -n "$line" ] && echo "$line"
exit "$rc"
