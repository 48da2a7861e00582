# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/incast.gp - plot of bench/incast.sh: aggregate rate and p99 latency
# of every run, with and without the congestion window, per sender count.
#   gnuplot -e "csv='bench/results/incast.csv'; png='bench/results/incast.png'" bench/incast.gp
set terminal pngcairo size 1000,440 font ',11' noenhanced
set output png
set datafile separator ','
set multiplot layout 1,2 title 'Incast through a dropping bottleneck (each point one run)'
set xlabel 'senders'
set xtics (8, 16)
set xrange [4:20]
set grid ytics
set key top left

set title 'aggregate rate at the receiver'
set key bottom right
set ylabel 'MB/s'
set yrange [0:*]
plot "< awk -F, 'NR > 1 && $2 == 1' ".csv using ($1 - 0.4):4 with points pt 7 ps 1.2 title 'congestion window', \
     "< awk -F, 'NR > 1 && $2 == 0' ".csv using ($1 + 0.4):4 with points pt 5 ps 1.2 title 'without'

set title 'p99 latency, PtlPut to send event'
set key top left
set ylabel 'us (log)'
set logscale y
set yrange [*:*]
plot "< awk -F, 'NR > 1 && $2 == 1 && $7 != \"\"' ".csv using ($1 - 0.4):7 with points pt 7 ps 1.2 title 'congestion window', \
     "< awk -F, 'NR > 1 && $2 == 0 && $7 != \"\"' ".csv using ($1 + 0.4):7 with points pt 5 ps 1.2 title 'without'
unset multiplot
