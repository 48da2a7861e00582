# gnuplot -e "csv='bench/results/ship_times.csv'; out='bench/results/ship.png'" bench/ship.gp
# csv: metric,median,min,max,reps rows of the times only (bench/ship.sh)
set terminal pngcairo size 900,500 noenhanced
set output out
set datafile separator ","
set style fill solid 0.5
set boxwidth 0.6
set logscale y
set ylabel "median, min..max bars"
set xtics rotate by -30
set title "shipped handlers (bench/ship.sh): *_ms in ms, *_us in us"
plot csv using 0:2:xtic(1) with boxes notitle, '' using 0:2:3:4 with yerrorbars notitle
