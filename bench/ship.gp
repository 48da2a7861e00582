# gnuplot -e "csv='bench/results/ship.csv'; out='bench/results/ship.png'" bench/ship.gp
set terminal pngcairo size 900,500
set output out
set datafile separator ","
set style fill solid 0.5
set boxwidth 0.6
set logscale y
set ylabel "time (median, min..max bars)"
set xtics rotate by -30
set title "shipped handlers (bench/ship.sh): ms for ship_*, us for *rtt*"
plot csv using 0:(((strstrt(strcol(1), "ship_") > 0 || strstrt(strcol(1), "rtt") > 0)) ? $2 : 1/0):xtic(1) with boxes notitle, \
     '' using 0:(((strstrt(strcol(1), "ship_") > 0 || strstrt(strcol(1), "rtt") > 0)) ? $2 : 1/0):3:4 with yerrorbars notitle
