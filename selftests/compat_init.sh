#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# /init of the initramfs selftests/compat_vm.sh builds (busybox sh): load
# the modules for virtio 9p and overlayfs, put a tmpfs overlay on the
# host's root (shared read-only), mount the work tree, the output
# directory and the kernel's modules, and hand over to
# selftests/compat_guest.sh in the new root.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m || echo "compat-init: insmod $m failed"; done
for a in $(cat /proc/cmdline); do
	case $a in
	spin.top=*) TOP=${a#spin.top=} ;;
	spin.out=*) OUT=${a#spin.out=} ;;
	esac
done
fail() { echo "compat-init: $*"; echo o >/proc/sysrq-trigger; sleep 10; }
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,ro spinroot /lower || fail "cannot mount the host root over 9p"
mount -t tmpfs -o size=1g rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work root /newroot ||
	fail "cannot mount the overlay root"
KVER=$(cat /proc/sys/kernel/osrelease)
# the guest's /tmp first: a work tree under /tmp (a CI checkout) is then
# mounted on top of it, not hidden by it
mkdir -p /newroot/tmp
mount -t tmpfs -o mode=1777 tmp /newroot/tmp || fail "cannot mount /tmp"
mkdir -p /newroot$TOP /newroot$OUT /newroot/lib/modules/$KVER
mount -t 9p -o $o spinwt /newroot$TOP || fail "cannot mount the work tree"
mount -t 9p -o $o spinout /newroot$OUT || fail "cannot mount the output directory"
mount -t 9p -o $o,ro spinmods /newroot/lib/modules/$KVER || fail "cannot mount the modules"
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash "$TOP/selftests/compat_guest.sh" --pid1 "$OUT"
