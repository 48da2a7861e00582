#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What reliable delivery (docs/reliable.md) gives on a lossy link: latency,
# bandwidth and the 8-byte message rate of bench/netpipe.sh at each loss
# rate, over the impairing link (two namespaces joined through a relay
# namespace, selftests/impair, that drops LOSS ppm of the frames in each
# direction; LOSS_PPM of netpipe.sh), three transports in every run:
#
#   spin        bench/netpipe_ptl: Portals puts, reliable (the library
#               retransmits what the link loses)
#   spin_norel  the same with SPIN_PTL_RELIABLE=0 in both ranks: the library
#               as it was before reliable delivery (a lost packet loses the
#               message; netpipe marks the size failed and goes on)
#   tcp         bench/netpipe --transport tcp: one kernel TCP connection,
#               the host stack's own retransmission
#
# Loss 0 runs through the same relay with nothing dropped: it is the
# baseline of every ratio.  The ratios in rel_summary.txt are between
# numbers of this run only: (a) spin's bandwidth at each size >= 64 KiB
# against spin's at loss 0 (target >= 0.7 at 1%), (b) spin's 8-byte half
# round trip against spin_norel's in the same netpipe.sh run (target
# <= 1.05 at loss 0: the price of reliability on a clean link), (c) spin
# against tcp (bandwidth >= 64 KiB, 8-byte latency), (d) which transport
# completed every size (every phase of every repetition without a lost
# message, no repetition killed).
#
#   bench/rel.sh     (root)   LOSSES="0 1000 10000" REPS=3 MAX=4m
#   quick:  LOSSES="0 10000" REPS=1 MAX=256k PP_TIME=0.05 ST_TIME=0.05 \
#           RATE_COUNT=20000 bench/rel.sh
#
# Knobs (environment):
#   LOSSES="0 1000 10000"   ppm of frames dropped in each direction, one
#                           netpipe.sh run each (0: the baseline, keep it)
#   REPS=3 MAX=4m MIN=8     repetitions and sizes of each run
#   TRANSPORTS="spin spin_norel tcp"
#   PP_COUNT PP_TIME ST_TIME ST_ITERS ST_BYTES ST_KMAX RATE_COUNT RATE_ITERS
#   TR_TIMEOUT TCP_TIMEOUT_MS RANK0_CPU RANK1_CPU NAPI_THREADED
#                           passed to bench/netpipe.sh as they are (its
#                           defaults; TR_TIMEOUT=600 s per transport run; a
#                           phase fails after 1 s without progress, tcp's
#                           after TCP_TIMEOUT_MS=10000: TCP only stalls)
#   OUT=bench/results
# SPIN_PTL_RELIABLE is removed from the environment: spin is reliable.
#
# Writes, in OUT:
#   rel.csv          one row per (loss_ppm, transport, size): medians over
#                    the repetitions (netpipe.csv) of the p50/mean/p99 half
#                    round trip (us) and the stream bandwidth (MB/s, 10^6
#                    B/s), the lowest and highest repetition (_lo, _hi, from
#                    netpipe_raw.csv), reps (repetitions with a row for the
#                    size), failed (failed phases, summed), complete (1: every
#                    repetition measured the size without a failure); on the
#                    8-byte rows also the message rate (M msgs/s, median,
#                    _lo/_hi over repetitions, rate_failed streams).  An
#                    empty value: nothing measured (every phase failed, or
#                    the run was killed before the size).
#   rel_summary.txt  the ratios (a)-(d) per loss rate
#   rel.png          bandwidth and p50 latency against size, one curve per
#                    transport and loss rate, the repetitions' range as
#                    error bars (bench/rel.gp)
#   rel_runs/loss<PPM>/   each netpipe.sh run: its CSVs, summary, plot, logs
set -u
cd "$(dirname "$0")/.." || exit 1

LOSSES=${LOSSES:-"0 1000 10000"}
REPS=${REPS:-3}
MIN=${MIN:-8}
MAX=${MAX:-4m}
TRANSPORTS=${TRANSPORTS:-"spin spin_norel tcp"}
OUT=${OUT:-bench/results}
unset SPIN_PTL_RELIABLE PERTURB

log() { printf 'rel: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

TMPB=
trap '[ -n "$TMPB" ] && rm -rf "$TMPB"' EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP)"
{ [ -x bench/netpipe ] && [ -x selftests/impair ]; } || die "run 'make' first"
for l in $LOSSES; do
	case $l in '' | *[!0-9]*) die "LOSSES: '$l' is not a number of ppm" ;; esac
done
case " $LOSSES " in *" 0 "*) ;; *) log "no loss 0 in LOSSES: ratio (a) has no baseline" ;; esac

mkdir -p "$OUT" || die "cannot create $OUT"
CSV=$OUT/rel.csv
SUM=$OUT/rel_summary.txt
RUNS=$OUT/rel_runs
rm -rf "$CSV" "$SUM" "$OUT/rel.png" "$RUNS"
mkdir -p "$RUNS"
TMPB=$(mktemp -d /tmp/rel.XXXXXX)

# ------------------------------------------------------------- the runs --

T0=$(date +%s)
for loss in $LOSSES; do
	d=$TMPB/loss$loss
	log "loss $loss ppm: bench/netpipe.sh (TRANSPORTS=\"$TRANSPORTS\" REPS=$REPS MAX=$MAX)"
	t=$(date +%s)
	# the rank processes' progress on stderr; everything in netpipe.out
	LOSS_PPM=$loss TRANSPORTS=$TRANSPORTS REPS=$REPS MIN=$MIN MAX=$MAX OUT=$d \
		bench/netpipe.sh 2>&1 | tee "$TMPB/netpipe$loss.out" |
		grep --line-buffered -E '^netpipe: (rep |.*(failed|lost))' >&2
	rc=${PIPESTATUS[0]}
	mkdir -p "$d"
	mv "$TMPB/netpipe$loss.out" "$d/netpipe.out"
	echo "$rc $(($(date +%s) - t))" >"$d/status"
	[ "$rc" = 0 ] || log "loss $loss ppm: netpipe.sh exit $rc (failed transport runs: see the summary)"
	cp -r "$d" "$RUNS/"
done
T1=$(date +%s)

# ------------------------------------------------------------- rel.csv --

# the sizes netpipe measures: MIN, 2 MIN, ... up to MAX (k, m: KiB, MiB)
sizes=$(awk -v a="$MIN" -v b="$MAX" 'function sz(s,  m) {
		m = 1; if (s ~ /[kK]$/) m = 1024; else if (s ~ /[mM]$/) m = 1048576
		sub(/[kKmM]$/, "", s); return int(s * m) }
	BEGIN { for (s = sz(a); s <= sz(b); s *= 2) print s }')

echo "loss_ppm,transport,size,lat_us_p50,lat_us_p50_lo,lat_us_p50_hi,lat_us_mean,lat_us_p99,bw_MBps,bw_MBps_lo,bw_MBps_hi,reps,failed,complete,rate_Mmsgs_per_s,rate_lo,rate_hi,rate_failed" >"$CSV"
for loss in $LOSSES; do
	d=$RUNS/loss$loss
	for f in netpipe.csv netpipe_raw.csv netpipe_rate.csv netpipe_rate_raw.csv; do
		[ -e "$d/$f" ] || : >"$d/$f"
	done
	# netpipe.csv: transport,size,lat_us_p50,lat_us_mean,bw_MBps,lat_us_min,
	# lat_us_p99,pp_MBps,bw_MBps_max,rounds,stream_msgs,stream_iters,failed
	# netpipe_rate.csv: transport,size,msgs,streams,Mmsgs_per_s,_min,_max,failed
	awk -F, -v OFS=, -v loss="$loss" -v reps="$REPS" -v ts="$TRANSPORTS" -v ss="$sizes" \
	    -v med="$d/netpipe.csv" -v raw="$d/netpipe_raw.csv" \
	    -v rmed="$d/netpipe_rate.csv" -v rraw="$d/netpipe_rate_raw.csv" '
	function num(x) { return x ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
	function val(x) { return num(x) ? x : "" }
	function lohi(k, x) {
		if (!num(x)) return
		if (!(k in lo) || x + 0 < lo[k] + 0) lo[k] = x
		if (!(k in hi) || x + 0 > hi[k] + 0) hi[k] = x
	}
	$1 == "transport" { next }
	FILENAME == med { k = $1 SUBSEP $2; p50[k] = $3; mean[k] = $4; bw[k] = $5; p99[k] = $7; fl[k] = $13 }
	FILENAME == raw { k = $1 SUBSEP $2; n[k]++; lohi("l" SUBSEP k, $3); lohi("b" SUBSEP k, $5) }
	FILENAME == rmed { rate[$1] = $5; rfl[$1] = $8 }
	FILENAME == rraw { lohi("r" SUBSEP $1, $5) }
	END {
		nt = split(ts, T, " "); ns = split(ss, S, " ")
		for (i = 1; i <= nt; i++) for (j = 1; j <= ns; j++) {
			t = T[i]; s = S[j]; k = t SUBSEP s
			f = (k in fl) ? fl[k] + 0 : 0; r = (k in n) ? n[k] : 0
			ok = (r == reps && f == 0 && num(p50[k]) && num(bw[k])) ? 1 : 0
			line = loss OFS t OFS s OFS val(p50[k]) OFS val(lo["l", k]) OFS val(hi["l", k]) \
			       OFS val(mean[k]) OFS val(p99[k]) OFS val(bw[k]) OFS val(lo["b", k]) \
			       OFS val(hi["b", k]) OFS r OFS f OFS ok
			if (s == 8)
				line = line OFS val(rate[t]) OFS val(lo["r", t]) OFS val(hi["r", t]) \
				       OFS ((t in rfl) ? rfl[t] : "")
			else
				line = line OFS OFS OFS OFS
			print line
		}
	}' "$d/netpipe.csv" "$d/netpipe_raw.csv" "$d/netpipe_rate.csv" "$d/netpipe_rate_raw.csv" >>"$CSV"
done

# ------------------------------------------------------------- summary --

# relay LOSS END: "frames dropped" over the whole run at that end
relay() {
	cat "$RUNS/loss$1"/netpipe_logs/*.impair.log 2>/dev/null |
		awk -v e="$2" '$1 == e { f += $3; d += $5 } END { printf "%d %d", f, d }'
}

{
	echo "Reliable delivery on a lossy link: spin (reliable puts) vs spin_norel (SPIN_PTL_RELIABLE=0) vs tcp"
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), kernel $(uname -r), $(nproc) CPUs, $((T1 - T0)) s"
	echo "library: lib/ at $(git log -1 --format='%h %s' -- lib/ 2>/dev/null | cut -c1-70)$(git diff --quiet HEAD -- lib/ include/ bpf/ 2>/dev/null || echo ' + uncommitted changes')"
	echo "link: two veth pairs through a relay namespace (selftests/impair) that drops LOSS ppm of the IPv4"
	echo "  frames arriving at either end (both directions); loss 0 = the same relay, nothing dropped"
	echo "each loss rate: one bench/netpipe.sh run, TRANSPORTS=\"$TRANSPORTS\" REPS=$REPS sizes $MIN..$MAX,"
	echo "  PP_TIME=${PP_TIME:-0.25} ST_TIME=${ST_TIME:-0.3} RATE_COUNT=${RATE_COUNT:-100000}; medians over the repetitions"
	echo "  (rel.csv; every run's own summary and logs in rel_runs/loss<PPM>/)"
	echo "latency: half round trip p50 (us); bandwidth: stream, MB/s (10^6 B/s); a phase fails after"
	echo "  1 s without progress (tcp: ${TCP_TIMEOUT_MS:-10000} ms, TCP only stalls)"
	echo "'*': the size had failed phases (lost messages): the value is from the phases that completed"
	for loss in $LOSSES; do
		read -r rc secs <"$RUNS/loss$loss/status"
		read -r fa da <<<"$(relay "$loss" a)"
		read -r fb db <<<"$(relay "$loss" b)"
		echo
		printf '== loss %s ppm (%s%%): netpipe.sh exit %s, %s s; relay dropped %s of %s frames from rank 0 (%s%%), %s of %s from rank 1 (%s%%)\n' \
			"$loss" "$(awk -v p="$loss" 'BEGIN { printf "%g", p / 1e4 }')" "$rc" "$secs" \
			"$da" "$fa" "$(awk -v f="$fa" -v d="$da" 'BEGIN { printf "%.3f", f ? 100 * d / f : 0 }')" \
			"$db" "$fb" "$(awk -v f="$fb" -v d="$db" 'BEGIN { printf "%.3f", f ? 100 * d / f : 0 }')"
		awk -F, -v L="$loss" -v ts="$TRANSPORTS" -v reps="$REPS" -v nsz="$(echo "$sizes" | wc -w)" \
		    -v rate_on="${RATE:-1}" '
		function num(x) { return x ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
		function mark(k) { return (fl[k] > 0 || rp[k] < reps) ? "*" : "" }
		# r(a, b): a / b to 2 decimals, or "n/a"
		function r(a, b) { return (num(a) && num(b) && b + 0 > 0) ? sprintf("%.2f", a / b) : "n/a" }
		function human(s) { return s >= 1048576 ? s / 1048576 "M" : s >= 1024 ? s / 1024 "K" : s }
		NR == 1 { next }
		{
			k = $1 SUBSEP $2 SUBSEP $3
			lat[k] = $4; bw[k] = $9; rp[k] = $12; fl[k] = $13; ok[k] = $14
			if ($3 == 8) { rate[$1, $2] = $15; rfl[$1, $2] = $18 }
			if ($1 == L && !(($3) in seen)) { seen[$3] = 1; S[++ns] = $3 }
			if ($1 == 0) base = 1
		}
		END {
			# (a) spin at this loss against spin at loss 0
			if (L == 0) {
				print "(a) spin bandwidth / spin at loss 0: the baseline"
			} else if (!base) {
				print "(a) spin bandwidth / spin at loss 0: no loss-0 run"
			} else {
				line = ""; mn = ""; bad = 0
				for (i = 1; i <= ns; i++) {
					s = S[i]; if (s < 65536) continue
					x = r(bw[L, "spin", s], bw[0, "spin", s])
					if (x == "n/a") bad = 1
					else if (mn == "" || x + 0 < mn + 0) mn = x
					if (mark(L SUBSEP "spin" SUBSEP s) != "") bad = 1
					line = line sprintf(" %s=%s%s", human(s), x == "n/a" ? "fail" : x, mark(L SUBSEP "spin" SUBSEP s))
				}
				printf "(a) spin bandwidth / spin at loss 0, sizes >= 64 KiB: min %s%s\n", mn == "" ? "n/a" : mn,
					bad ? " (and failed sizes)" : ""
				if (L == 10000)
					printf "    target >= 0.7 at 1%%: %s\n", (!bad && mn != "" && mn + 0 >= 0.7) ? "MET" : "NOT MET"
				print "   " line
			}
			# (b) the price of reliability at 8 bytes
			a = lat[L, "spin", 8]; b = lat[L, "spin_norel", 8]
			x = r(a, b)
			printf "(b) 8-byte latency spin / spin_norel: %s%s / %s%s us = %s", num(a) ? a : "n/a",
				mark(L SUBSEP "spin" SUBSEP 8), num(b) ? b : "n/a", mark(L SUBSEP "spin_norel" SUBSEP 8), x
			if (L == 0)
				printf "   (target <= 1.05 at loss 0: %s)", (x != "n/a" && x + 0 <= 1.05) ? "MET" : "NOT MET"
			print ""
			# (c) against the kernel: TCP
			a = lat[L, "spin", 8]; b = lat[L, "tcp", 8]
			printf "(c) spin / tcp: 8-byte latency %s (%s / %s us)\n", r(a, b), num(a) ? a : "n/a", num(b) ? b : "n/a"
			line = ""; mn = ""; gs = 0; gn = 0
			for (i = 1; i <= ns; i++) {
				s = S[i]; if (s < 65536) continue
				x = r(bw[L, "spin", s], bw[L, "tcp", s])
				if (x != "n/a") { if (mn == "" || x + 0 < mn + 0) mn = x; gs += log(x > 0 ? x : 1e-9); gn++ }
				line = line sprintf(" %s=%s%s", human(s), x == "n/a" ? "fail" : x,
					(mark(L SUBSEP "spin" SUBSEP s) mark(L SUBSEP "tcp" SUBSEP s)) != "" ? "*" : "")
			}
			printf "    bandwidth >= 64 KiB: min %s, geomean %s\n   %s\n", mn == "" ? "n/a" : mn,
				gn ? sprintf("%.2f", exp(gs / gn)) : "n/a", line
			line = ""
			nt = split(ts, T, " ")
			for (i = 1; i <= nt; i++)
				line = line sprintf("  %s %s%s", T[i], num(rate[L, T[i]]) ? rate[L, T[i]] : "n/a",
					rfl[L, T[i]] > 0 ? " (" rfl[L, T[i]] " streams failed)" : "")
			print "    8-byte message rate (M msgs/s):" line
			# (d) who completed every size
			print "(d) completed every size (" reps " repetitions, no failed phase):"
			for (i = 1; i <= nt; i++) {
				t = T[i]; nok = 0; fs = ""; ms = ""
				for (j = 1; j <= ns; j++) {
					k = L SUBSEP t SUBSEP S[j]
					if (ok[k]) nok++
					else if (rp[k] < reps) ms = ms " " human(S[j]) "(" rp[k] "/" reps ")"
					else fs = fs " " human(S[j])
				}
				rs = (rate_on == 1 && (rfl[L, t] > 0 || !num(rate[L, t]))) ? "; 8-byte rate FAILED" : ""
				printf "    %-11s %s%s%s%s\n", t, nok == nsz ? "yes, all " nsz " sizes" : "NO: " nok " of " nsz " sizes",
					fs != "" ? "; failed phases at" fs : "", ms != "" ? "; missing repetitions at" ms : "", rs
			}
		}' "$CSV"
	done
} | tee "$SUM"

# --------------------------------------------------------------- plot --

if command -v gnuplot >/dev/null && [ -s "$CSV" ]; then
	# (a curve with nothing measured, e.g. spin_norel's bandwidth at 1%, is
	# left out: gnuplot's "no valid points" is no error here)
	gnuplot -e "csv='$CSV'; png='$OUT/rel.png'" bench/rel.gp 2>&1 |
		grep -vE '^$|no valid points' >&2
	if [ -e "$OUT/rel.png" ]; then log "plot $OUT/rel.png"; else log "plot failed"; fi
else
	log "gnuplot not installed or no results: no plot"
fi
log "$CSV, $SUM"
