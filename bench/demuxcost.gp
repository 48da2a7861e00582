# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/demuxcost.gp - plot of bench/demuxcost.sh: ns per packet of each
# repetition, the demux alone against the demux and the ring copy, by size.
#   gnuplot -e "csv='bench/results/demuxcost.csv'; png='bench/results/demuxcost.png'" bench/demuxcost.gp
set terminal pngcairo size 800,480 font ',11' noenhanced
set output png
set datafile separator ','
set title 'Per-process frame channel, BPF_PROG_RUN (median of 3 runs per repetition)'
set ylabel 'ns per packet'
set xlabel 'repetition'
set yrange [0:*]
set grid ytics
set key top left
sel(l, s) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $2 == %d { print ++n \",\" $6 \",\" $7 \",\" $8 }' %s", l, s, csv)
plot sel("xdp_parse", 64) using 1:2:3:4 with yerrorlines title 'demux, 64 B', \
     sel("xdp_ring", 64) using 1:2:3:4 with yerrorlines title 'demux + ring copy, 64 B', \
     sel("xdp_parse", 1376) using 1:2:3:4 with yerrorlines title 'demux, 1376 B', \
     sel("xdp_ring", 1376) using 1:2:3:4 with yerrorlines title 'demux + ring copy, 1376 B'
