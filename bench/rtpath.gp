# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/rtpath.gp - plot of bench/rtpath.sh (gnuplot 5.4):
#   gnuplot -e "csv='bench/results/rtpath.csv'; out='bench/results/rtpath.png'" bench/rtpath.gp
# Every repetition's ns per packet (progrun's median of its runs) per
# program, repetitions side by side.
if (!exists("csv")) csv = 'bench/results/rtpath.csv'
if (!exists("out")) out = 'bench/results/rtpath.png'
set terminal pngcairo size 1300,640 font ',11' noenhanced
set output out
set datafile separator ','
set multiplot layout 1,2
set ylabel 'ns per packet'
set xlabel 'repetition'
set yrange [0:*]
set xtics 1
set grid ytics
set key below
set style data linespoints
lab(l) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" {print $10 \",\" $6 \",\" $7 \",\" $8}' %s", l, csv)
set title 'runtime + streaming ping-pong vs. XDP reflector (64 B, repeat mode)'
plot lab('empty') using 1:2:3:4 with yerrorlines title 'empty (xdp_pass)', \
     lab('xdp_reflector') using 1:2:3:4 with yerrorlines title 'xdp_reflector', \
     lab('spin_stream') using 1:2:3:4 with yerrorlines title 'spin_stream (this tree)', \
     lab('spin_stream_old') using 1:2:3:4 with yerrorlines title 'spin_stream (before)', \
     lab('spin_stream_auth') using 1:2:3:4 with yerrorlines title 'spin_stream, auth key (this tree)'
set title 'deposit entry, no handler (64 B put, fresh mode)'
plot lab('empty_fresh') using 1:2:3:4 with yerrorlines title 'empty (xdp_pass)', \
     lab('xdp_reflector_fresh') using 1:2:3:4 with yerrorlines title 'xdp_reflector', \
     lab('deposit') using 1:2:3:4 with yerrorlines title 'deposit (this tree)', \
     lab('deposit_rel') using 1:2:3:4 with yerrorlines title 'deposit, reliable (this tree)', \
     lab('deposit_old') using 1:2:3:4 with yerrorlines title 'deposit (before)', \
     lab('deposit_rel_old') using 1:2:3:4 with yerrorlines title 'deposit, reliable (before)'
unset multiplot
