# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# samples/raid/raid.gp: write latency of the RAID-5 sample against block size.
#   gnuplot -e "dir='bench/results'" samples/raid/raid.gp
# Reads dir/raid.csv (size,spin_p50_us,spin_p99_us,udp_p50_us,udp_p99_us,
# p50_ratio,p99_ratio,...); writes dir/raid.png.
if (!exists("dir")) dir = 'bench/results'
set terminal pngcairo size 900,540 font ',11' noenhanced
set datafile separator ','
set output dir.'/raid.png'
set title 'RAID-5 write, client send -> data and parity durable (median of reps)'
set xlabel 'block size [bytes]'
set ylabel 'latency [us]'
set logscale xy 2
set format x '%.0s%cB'
set grid
set key top left
plot dir.'/raid.csv' every ::1 using 1:2 with linespoints lw 2 pt 7 title 'spin handlers, p50', \
     ''              every ::1 using 1:3 with linespoints lw 1 pt 6 dt 2 title 'spin handlers, p99', \
     ''              every ::1 using 1:4 with linespoints lw 2 pt 5 title 'host-only UDP, p50', \
     ''              every ::1 using 1:5 with linespoints lw 1 pt 4 dt 2 title 'host-only UDP, p99'
