# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/loss.gp - plot of bench/loss.sh: share of messages completed against
# the link's frame loss, per message size, with (1 - p)^packets.
#   gnuplot -e "csv='bench/results/loss.csv'; png='bench/results/loss.png'" bench/loss.gp
set terminal pngcairo size 800,480 font ',11' noenhanced
set output png
set datafile separator ','
set title 'Messages completed on a lossy link, no retransmission (each repetition)'
set ylabel 'completed (%)'
set xlabel 'frames dropped by the link (ppm, log)'
set logscale x
set xrange [500:200000]
set yrange [0:105]
set samples 200
set grid
set key bottom left
f(s) = sprintf("< awk -F, 'NR > 1 && $2 == %d && $1 > 0 { print $1 \",\" 100 * $6 / $5 \",\" $3 }' %s", s, csv)
plot f(8) using 1:2 with points pt 7 title '8 B (1 packet)', \
     f(1376) using 1:2 with points pt 5 title '1376 B (1 packet)', \
     f(65536) using 1:2 with points pt 9 title '64 KiB (48 packets)', \
     100 * (1 - x / 1e6) ** 48 with lines title '(1 - p)^48', \
     100 * (1 - x / 1e6) with lines title '1 - p'
