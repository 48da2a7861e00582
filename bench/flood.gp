# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/flood.gp - plot of bench/flood.sh: the legitimate pair's rate during
# a flood and in the 100 ms after it, as a share of its unflooded rate in
# the same run, per repetition, without and with an event reader.
#   gnuplot -e "csv='bench/results/flood.csv'; png='bench/results/flood.png'" bench/flood.gp
set terminal pngcairo size 800,480 font ',11' noenhanced
set output png
set datafile separator ','
set title 'Legitimate acked puts under a flood, share of the unflooded rate (same run)'
set ylabel 'rate / unflooded rate'
set xlabel 'repetition'
set yrange [0:1.3]
set xtics 1
set grid ytics
set key bottom right
plot 0.9 with lines dashtype 2 lc rgb 'gray' title '0.9', \
     "< awk -F, 'NR > 1 && $1 == \"noreader\"' ".csv using 2:6 with linespoints title 'no reader: during', \
     "< awk -F, 'NR > 1 && $1 == \"noreader\"' ".csv using 2:9 with linespoints title 'no reader: 100 ms after', \
     "< awk -F, 'NR > 1 && $1 == \"reader\"' ".csv using 2:6 with linespoints title 'reader: during', \
     "< awk -F, 'NR > 1 && $1 == \"reader\"' ".csv using 2:9 with linespoints title 'reader: 100 ms after'
