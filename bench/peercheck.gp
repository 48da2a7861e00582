# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/peercheck.gp - plot of bench/peercheck.sh: ns per packet of each
# repetition, open runtime against the source check, and with a job key.
#   gnuplot -e "csv='bench/results/peercheck.csv'; png='bench/results/peercheck.png'" bench/peercheck.gp
set terminal pngcairo size 800,480 font ',11' noenhanced
set output png
set datafile separator ','
set title 'Runtime per-packet cost, BPF_PROG_RUN (median of 3 runs per repetition)'
set ylabel 'ns per packet'
set xlabel 'repetition'
set yrange [0:*]
set grid ytics
set key bottom right
plot "< awk -F, 'NR > 1 && $1 == \"open\" { print ++n \",\" $6 \",\" $7 \",\" $8 }' ".csv \
	using 1:2:3:4 with yerrorlines title 'open (no source check)', \
     "< awk -F, 'NR > 1 && $1 == \"checked\" { print ++n \",\" $6 \",\" $7 \",\" $8 }' ".csv \
	using 1:2:3:4 with yerrorlines title 'checked (peer address and MAC)', \
     "< awk -F, 'NR > 1 && $1 == \"keyed\" { print ++n \",\" $6 \",\" $7 \",\" $8 }' ".csv \
	using 1:2:3:4 with yerrorlines title 'checked and job key'
