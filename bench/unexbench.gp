# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/unexbench.gp - plot of bench/unexbench.sh: ns per search of the
# unexpected list against the headers waiting, one line per kind of entry
# and the old scan; median over repetitions, bars min and max.
#   gnuplot -e "csv='bench/results/unexbench_med.csv'; png='bench/results/unexbench.png'" bench/unexbench.gp
# (csv: n,kind,median,min,max)
set terminal pngcairo size 900,520 font ',11' noenhanced
set output png
set datafile separator ','
set title 'Unexpected list: one search (PtlMEAppend / PtlMESearch), library only'
set ylabel 'ns per search'
set xlabel 'unexpected headers waiting'
set logscale xy
set xrange [0.5:200000]
set grid ytics
set key top left
ser(k) = sprintf("< awk -F, '$2 == \"%s\" { print $1 \",\" $3 \",\" $4 \",\" $5 }' %s | sort -t, -k1n", k, csv)
plot for [k in "exact exact1 anysrc ignore ignany scan"] ser(k) using 1:2:3:4 with yerrorlines title (k eq 'scan' ? 'old search (every header scanned)' : k eq 'exact' ? 'entry with a source (exact key), random header' : k eq 'exact1' ? 'entry with a source, the same header' : k eq 'anysrc' ? 'wildcard source (bits key), random header' : k eq 'ignore' ? 'ignore bits, a source (its headers walked)' : 'ignore bits, any source (portal list walked)')
