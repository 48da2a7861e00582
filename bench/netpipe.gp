# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/netpipe.gp - the plot of bench/netpipe.sh (gnuplot 5.4).
#   gnuplot -e "dir='bench/results'" bench/netpipe.gp
# Reads dir/netpipe.csv (transport,size,lat_us_p50,lat_us_mean,bw_MBps,...)
# and writes dir/netpipe.png: p50 latency (half round trip) and streaming
# bandwidth against message size, log axes, one curve per transport.

if (!exists("dir")) dir = 'bench/results'
csv = dir.'/netpipe.csv'

set terminal pngcairo size 1400,560 font ',11' noenhanced
set output dir.'/netpipe.png'
set datafile separator ','
set logscale xy 2
set logscale y 10
set grid xtics ytics mxtics mytics
set xtics ('8 B' 8, '64 B' 64, '512 B' 512, '4 KiB' 4096, '32 KiB' 32768, \
	   '256 KiB' 262144, '2 MiB' 2097152)
set key top left
transports = system("tail -n +2 ".csv." | cut -d, -f1 | awk '!seen[$0]++'")
sel(t) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\"' %s", t, csv)

set multiplot layout 1,2 title 'spin NetPIPE over veth: Portals (XDP deposit) vs kernel UDP vs AF_XDP loop'
set title 'latency (half round trip, p50)'
set xlabel 'message size'
set ylabel 'us'
plot for [t in transports] sel(t) using 2:3 with linespoints lw 2 pt 7 ps 0.7 title t

set title 'streaming bandwidth (median of iterations)'
set ylabel 'MB/s (10^6 B/s)'
set key top left
plot for [t in transports] sel(t) using 2:5 with linespoints lw 2 pt 7 ps 0.7 title t
unset multiplot
