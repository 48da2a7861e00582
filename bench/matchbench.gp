# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/matchbench.gp - plot of bench/matchbench.sh: ns per packet against
# the number of exact entries, one line per (target, wildcards ahead); the
# points are the median over repetitions, the bars min and max.
#   gnuplot -e "csv='bench/results/matchbench_med.csv'; png='bench/results/matchbench.png'" bench/matchbench.gp
# (csv: target,exact,wild,median,min,max, as bench/matchbench.sh writes it)
set terminal pngcairo size 900,520 font ',11' noenhanced
set output png
set datafile separator ','
set title 'Matching cost through BPF_PROG_RUN (64-byte put, deposited)'
set ylabel 'ns per packet'
set xlabel 'exact entries'
set logscale x
set xrange [0.5:200000]
set yrange [0:*]
set grid ytics
set key top left
ser(t, w) = sprintf("< awk -F, '$1 == \"%s\" && $3 == %d { print $2 \",\" $4 \",\" $5 \",\" $6 }' %s | sort -t, -k1n", t, w, csv)
plot for [w in "0 10 100"] ser("one", w+0) using 1:2:3:4 with yerrorlines title sprintf('one entry, %s wildcard ahead', w), \
     for [w in "0 10 100"] ser("random", w+0) using 1:2:3:4 with yerrorlines dashtype 2 title sprintf('random entry, %s wildcard ahead', w)
