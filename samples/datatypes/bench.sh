#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Bandwidth of the vector-datatype receive against block size: 4 MiB
# messages (SIZE) put by rank 0 and wanted in a strided layout (stride =
# 2 x block) by rank 1, end to end (sender's first send to data in place):
#
#   spin     the payload handler scatters every packet (datatypes.bpf.o)
#   portals  Portals put into a contiguous entry, then host unpack (memcpy per block)
#   udp      kernel UDP socket receive, then host unpack (the host-only version)
#
# The three take turns message by message (spin, portals, udp, spin, ...)
# in one process pair per block size, so load elsewhere on the machine hits
# them alike; medians of REPS messages, and the ratios are medians of the
# per-round ratios.  Every message is checked byte for byte.  Results:
# $OUT/datatypes.csv (medians and ratios), $OUT/datatypes_raw.csv (the
# receiver's lines), $OUT/datatypes.png, $OUT/datatypes_summary.txt.
#
# Two veth set-ups, each with its own files: "default" (the receiver's XDP
# program, hence the handler, runs in the sender's softirq, on the sender's
# CPU) and "threaded" ($OUT/datatypes_threaded*: threaded NAPI on both veth
# ends, so receive processing runs in a kernel thread on whichever CPU is
# free, as on a NIC whose interrupts land on another core; and a pfifo
# queue on veth0, so a full veth ring stops the sender instead of dropping).
# Messages lost (UDP: a packet missing, no retransmission) or failed (a
# put whose event reports a failure) are counted in the lost columns and
# left out of the medians (at most REPS of each).
#
# Knobs: BLOCKS="8 16 64 256 512 1024 4096 16384 65536" SIZE=4194304 REPS=11
#        WARMUP=2 RANK0_CPU=1 RANK1_CPU=0 (taskset; '' for none)
#        SETUPS="default threaded" OUT=bench/results
#        REPLOT=1: only redraw the PNGs from the CSV files in $OUT
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 1
. selftests/lib/netns.sh
. samples/datatypes/lib.sh
. samples/sample_topo.sh

BLOCKS=${BLOCKS:-"8 16 64 256 512 1024 4096 16384 65536"}
SIZE=${SIZE:-4194304}
REPS=${REPS:-11}
WARMUP=${WARMUP:-2}
RANK0_CPU=${RANK0_CPU-1}
RANK1_CPU=${RANK1_CPU-0}
OUT=${OUT:-bench/results}
DT_TIMEOUT=${DT_TIMEOUT:-300}
SETUPS=${SETUPS:-"default threaded"}
command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ] || { RANK0_CPU=; RANK1_CPU=; }

log() { echo "datatypes bench: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root"; exit 3; }
[ -x "$DT_BIN" ] || { log "$DT_BIN missing: run make"; exit 1; }
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/spin-dtb.XXXXXX)
chmod 755 "$WORK"
cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	spin_ns_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# plot_setup SETUP CSV PNG: MB/s against block size for the three modes
plot_setup() {
	local setup=$1 CSV=$2 PNG=$3 REPS
	REPS=$(awk -F, 'NR == 2 { print $5 }' "${CSV%.csv}_raw.csv" 2>/dev/null)
	if command -v gnuplot >/dev/null; then
		gnuplot <<-EOG 2>&1 | grep -v '^$' >&2
	set terminal pngcairo size 900,560 noenhanced
	set output '$PNG'
	set datafile separator ','
	set key bottom right
	set yrange [0:*]
	set logscale x 2
	set grid
	set title 'Vector datatype receive, $SIZE-byte messages (stride = 2 x block), $setup veth NAPI, medians of $REPS'
	set xlabel 'block size (bytes)'
	set ylabel 'MB/s, end to end'
	set format x '%.0b %BB'
	plot '$CSV' skip 1 using 1:3 with linespoints lw 2 title 'spin: payload handler scatters', \
	     '' skip 1 using 1:4 with linespoints lw 2 title 'Portals receive + host unpack', \
	     '' skip 1 using 1:5 with linespoints lw 2 title 'UDP socket receive + host unpack'
	EOG
	else
		log "gnuplot not installed: no plot"
	fi
}

# bench_setup NAME: one set-up; files $OUT/datatypes${suffix}*
bench_setup() {
	local setup=$1 sfx= b dir thr=0 ns INSNS PIECE pin
	[ "$setup" = threaded ] && sfx=_threaded thr=1
	for ns in "$DT_NS0" "$DT_NS1"; do
		sample_napi_threaded "$ns" veth0 $thr ||
			{ log "cannot set threaded NAPI to $thr in $ns"; return 1; }
		# with a queue, a full veth ring stops the sender instead of
		# dropping (veth is noqueue by default); UDP has no retransmission
		if [ $thr = 1 ]; then
			sample_fifo "$ns" veth0 ||
				{ log "cannot give veth0 a queue in $ns"; return 1; }
		fi
	done
	RAW=$OUT/datatypes${sfx}_raw.csv CSV=$OUT/datatypes$sfx.csv SUM=$OUT/datatypes${sfx}_summary.txt
	PNG=$OUT/datatypes$sfx.png
	echo "mode,size,block,stride,n,median_us,min_us,p90_us,mbps,lost,unpack_us,time_vs_spin" >"$RAW"
	log "$setup veth: size $SIZE, blocks $BLOCKS, $REPS messages (+$WARMUP warm-up) per mode and block; sender CPU ${RANK0_CPU:-any}, receiver CPU ${RANK1_CPU:-any}"
	for b in $BLOCKS; do
		dir=$(mktemp -d "$WORK/b$b.XXXX")
		dt_run "$dir" mode spin,portals,udp size "$SIZE" block "$b" reps "$REPS" warmup "$WARMUP" \
			csv "$RAW" maxlost "$REPS" quiet
		if [ "$DT_R0" -ne 0 ] || [ "$DT_R1" -ne 0 ]; then
			log "block $b failed (sender $DT_R0, receiver $DT_R1)"
			sed 's/^/    /' "$dir/out.0" "$dir/out.1" >&2
			return 1
		fi
		grep ",$b," "$RAW" | tail -3 | awk -F, '{ printf "  %-8s block %6d: median %9.1f us, %7.1f MB/s\n", $1, $3, $6, $9 }' >&2
	done

	# the handler's size: load the object next to the runtime the runs attached;
	# spinctl reports the xlated instructions of the whole entry program
	# (SPIN_HANDLERS glue + payload handler + the library calls inlined),
	# bpftool those of the bpf_loop callback (one block piece) alone
	INSNS=$(nsx "$DT_NS1" "$TOP/tools/spinctl" handler load veth0 "$TOP/samples/datatypes/datatypes.bpf.o" \
		name dtcount 2>/dev/null | sed -n 's/.*, \([0-9]*\) insns).*/\1/p')
	PIECE=
	pin=$(find /sys/fs/bpf/spin -path "*/veth0/handlers/dtcount" 2>/dev/null | head -1)
	if [ -n "$pin" ] && command -v bpftool >/dev/null; then
		PIECE=$(bpftool prog dump xlated pinned "$pin" 2>/dev/null |
			awk '/^[a-z].*\):$/ { f = /vector_piece/ } f && /^ *[0-9]+:/ { n++ } END { print n }')
	fi
	nsx "$DT_NS1" "$TOP/tools/spinctl" handler unload veth0 dtcount >/dev/null 2>&1

	awk -F, 'NR > 1 { t[$3, $1] = $6; m[$3, $1] = $9; l[$3, $1] = $10; u[$3, $1] = $11; r[$3, $1] = $12; if (!($3 in seen)) { seen[$3] = 1; bl[++n] = $3 } }
	END {
		print "block,stride,spin_mbps,portals_mbps,udp_mbps,spin_us,portals_us,udp_us,spin_vs_portals,spin_vs_udp,udp_lost,portals_unpack_us,udp_unpack_us,spin_lost,portals_lost"
		for (i = 1; i <= n; i++) { b = bl[i]
			printf "%d,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.2f,%.2f,%d,%.1f,%.1f,%d,%d\n", b, 2 * b, m[b, "spin"], m[b, "portals"],
				m[b, "udp"], t[b, "spin"], t[b, "portals"], t[b, "udp"],
				r[b, "portals"], r[b, "udp"], l[b, "udp"], u[b, "portals"], u[b, "udp"], l[b, "spin"], l[b, "portals"] }
	}' "$RAW" >"$CSV"
	{
		echo "vector datatype receive, $SIZE-byte messages, stride = 2 x block, veth between two namespaces ($setup NAPI), $(date -u +%FT%TZ)"
		echo "sender on CPU ${RANK0_CPU:-any}, receiver on CPU ${RANK1_CPU:-any}; library at $(git -C "$TOP" log -1 --format=%h -- lib bpf include 2>/dev/null)"
		echo "end to end (first send to data in the strided layout), median of $REPS messages each; the modes take turns message by message"
		echo "ratio = median over the $REPS rounds of (baseline time / spin time) in the same round; > 1: spin faster"
		echo "handler program: ${INSNS:-?} xlated eBPF instructions (spinctl; entry glue + handler + inlined library calls),"
		echo "  of which ${PIECE:-?} in the per-block-piece bpf_loop callback (bpftool); the paper's datatype handler: 54"
		echo
		printf "%8s %10s %10s %10s %13s %9s %15s %9s\n" block "spin" "portals" "udp" "gain/portals" \
			"gain/udp" "unpack us (p)" "lost s/p/u"
		printf "%8s %10s %10s %10s\n" "" "MB/s" "MB/s" "MB/s"
		awk -F, 'NR > 1 { printf "%8d %10.1f %10.1f %10.1f %12.2fx %8.2fx %15.1f %5d/%d/%d\n", $1, $3, $4, $5, $9, $10, $12, $14, $15, $11 }' "$CSV"
	} >"$SUM"
	cat "$SUM"

	plot_setup "$setup" "$CSV" "$PNG"
	return 0
}

if [ "${REPLOT:-0}" = 1 ]; then	# only redraw the plots from the CSV files
	for setup in $SETUPS; do
		sfx=; [ "$setup" = threaded ] && sfx=_threaded
		plot_setup "$setup" "$OUT/datatypes$sfx.csv" "$OUT/datatypes$sfx.png"
	done
	exit 0
fi
spin_bpffs_ensure || { log "no bpffs"; exit 4; }
dt_up >"$WORK/topo.log" 2>&1 || { cat "$WORK/topo.log" >&2; exit 1; }
for setup in $SETUPS; do
	bench_setup "$setup" || exit 1
done
