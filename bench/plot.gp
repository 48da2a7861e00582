# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/plot.gp - plots of bench/run.sh results (gnuplot 5.4).
#   gnuplot -e "dir='bench/results'; size0='64'" bench/plot.gp
# Reads dir/latency_summary.csv (label,size,p50_ns,p99_ns,mean_ns,loss) and
# dir/progrun.csv (label,size,mode,n,runs,ns_median,ns_min,ns_max,action);
# writes dir/latency.png, dir/latency_size.png and dir/progrun.png.

if (!exists("dir")) dir = 'bench/results'
if (!exists("size0")) size0 = '64'
lat = dir.'/latency_summary.csv'
prc = dir.'/progrun.csv'
have(f) = system('test -s '.f.' && echo 1 || echo 0') + 0

set terminal pngcairo size 900,540 font ',11' noenhanced
set datafile separator ','
set style fill solid 0.85 border -1
set grid ytics
set key top left

if (have(lat)) {
	# p50/p99 per variant at the first size
	set output dir.'/latency.png'
	set title sprintf('sPIN ping-pong round trip over veth, %s-byte payload (median of reps)', size0)
	set ylabel 'round trip [us]'
	set style data histograms
	set style histogram cluster gap 1
	set boxwidth 0.9
	set yrange [0:*]
	set xtics nomirror
	sel = sprintf("< awk -F, 'NR > 1 && $2 == %s' %s", size0, lat)
	plot sel using ($3/1000):xtic(1) title 'p50' lc rgb '#4472c4', \
	     '' using ($4/1000) title 'p99' lc rgb '#ed7d31', \
	     '' using 0:($3/1000):(sprintf('%.1f', $3/1000)) with labels offset -2.2,0.7 notitle, \
	     '' using 0:($4/1000):(sprintf('%.1f', $4/1000)) with labels offset 2.2,0.7 notitle

	# p50 against payload size, one line per variant
	set output dir.'/latency_size.png'
	set title 'sPIN ping-pong p50 round trip by payload size'
	set xlabel 'ping payload [bytes]'
	set ylabel 'p50 round trip [us]'
	set key bottom right
	set xtics auto
	variants = system("tail -n +2 ".lat." | cut -d, -f1 | awk '!seen[$0]++'")
	plot for [v in variants] sprintf("< awk -F, 'NR > 1 && $1 == \"%s\"' %s", v, lat) \
		using 2:($3/1000) with linespoints lw 2 pt 7 title v
	unset xlabel
}

if (have(prc)) {
	set output dir.'/progrun.png'
	pmode = system("awk -F, 'NR == 2 { print $3 }' ".prc)
	psize = system("awk -F, 'NR == 2 { print $2 }' ".prc)
	set title sprintf('XDP per-packet cost, BPF_PROG_RUN %s mode, %s-byte ping (median ns/packet)', pmode, psize)
	set ylabel 'ns per packet'
	set style data histograms
	set style histogram clustered gap 1
	set boxwidth 0.7
	pmax = system("awk -F, 'NR > 1 && $6 > m { m = $6 } END { print m }' ".prc) + 0
	set yrange [0:pmax * 1.15]
	set xtics nomirror
	unset key
	plot '< tail -n +2 '.prc using 6:xtic(1) lc rgb '#4472c4', \
	     '' using 0:6:(sprintf('%.0f', $6)) with labels offset 0,0.8 notitle
}
