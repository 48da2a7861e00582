#!/bin/sh
# Regenerate vmlinux/<arch>/vmlinux.h from the running kernel's BTF.
# Usage: vmlinux/gen.sh [BTF_FILE]   (default /sys/kernel/btf/vmlinux)
set -eu
btf=${1:-/sys/kernel/btf/vmlinux}
arch=$(uname -m)
case "$arch" in
	x86_64) arch=x86 ;;
	aarch64) arch=arm64 ;;
esac
dir=$(dirname "$0")/$arch
mkdir -p "$dir"
bpftool btf dump file "$btf" format c > "$dir/vmlinux.h.tmp"
mv "$dir/vmlinux.h.tmp" "$dir/vmlinux.h"
echo "wrote $dir/vmlinux.h"
