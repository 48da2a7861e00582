# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/rel.gp - the plot of bench/rel.sh (gnuplot 5.4).
#   gnuplot -e "csv='bench/results/rel.csv'; png='bench/results/rel.png'" bench/rel.gp
# Reads rel.csv (loss_ppm,transport,size,lat_us_p50,lat_us_p50_lo,
# lat_us_p50_hi,lat_us_mean,lat_us_p99,bw_MBps,bw_MBps_lo,bw_MBps_hi,...)
# and draws stream bandwidth and p50 latency against message size, one
# curve per transport (colour) and loss rate (dash), the lowest and highest
# repetition as error bars.  Sizes where nothing was measured are gaps.

if (!exists("csv")) csv = 'bench/results/rel.csv'
if (!exists("png")) png = 'bench/results/rel.png'

set terminal pngcairo size 1500,600 font ',11' noenhanced dashed
set output png
set datafile separator ','
set logscale x 2
set logscale y 10
set grid xtics ytics mytics
set xtics ('8 B' 8, '64 B' 64, '512 B' 512, '4 KiB' 4096, '32 KiB' 32768, \
	   '256 KiB' 262144, '2 MiB' 2097152)
set xlabel 'message size'
set key top left

transports = system("tail -n +2 ".csv." | cut -d, -f2 | awk '!seen[$0]++' | tr '\\n' ' '")
losses = system("tail -n +2 ".csv." | cut -d, -f1 | awk '!seen[$0]++' | tr '\\n' ' '")
# empty fields (nothing measured) as NaN: the curve has a gap there
sel(t, l) = sprintf("< awk -F, -v OFS=, 'NR > 1 && $2 == \"%s\" && $1 == %s { \
	for (i = 1; i <= NF; i++) if ($i == \"\") $i = \"NaN\"; print }' %s", t, l, csv)
pct(l) = sprintf("%g%%", l / 1e4)
col(i) = word("#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b", (i - 1) % 6 + 1)

set multiplot layout 1,2 title 'spin on a lossy link (relay dropping frames both ways): reliable puts vs SPIN_PTL_RELIABLE=0 vs TCP'
set title 'streaming bandwidth (median over repetitions; bars: lowest and highest)'
set ylabel 'MB/s (10^6 B/s)'
plot for [i = 1:words(transports)] for [j = 1:words(losses)] \
	sel(word(transports, i), word(losses, j)) using 3:9:10:11 with yerrorlines \
	lw 2 pt 7 ps 0.6 lc rgb col(i) dt j \
	title sprintf('%s, loss %s', word(transports, i), pct(word(losses, j) + 0))

set title 'latency (half round trip, p50)'
set ylabel 'us'
plot for [i = 1:words(transports)] for [j = 1:words(losses)] \
	sel(word(transports, i), word(losses, j)) using 3:4:5:6 with yerrorlines \
	lw 2 pt 7 ps 0.6 lc rgb col(i) dt j \
	title sprintf('%s, loss %s', word(transports, i), pct(word(losses, j) + 0))
unset multiplot
