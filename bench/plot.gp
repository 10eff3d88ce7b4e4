# plot.gp: time against contact count for every method, one panel per scene
# (random 3D pile, FCC crystal, robot fleet), log-log, from the
# plot-<scene>.dat files that bench/table.py writes. Writes
# time_vs_contacts.png and time_vs_contacts.svg in the current folder.
# Columns: nc, cmodes total, cmodes eigen (analysis), cmodes eigen (whole
# operator), scipy eigsh, SLEPc, dsyevr, dsyevd, per-contact estimate.
# usage: gnuplot -e "scenes='pile crystal fleet'" bench/plot.gp
if (!exists("scenes")) scenes = "pile crystal fleet"
n = words(scenes)
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set xlabel "contacts"
set ylabel "seconds (median)"
set grid
set key top left font ",8"
set datafile missing "NaN"
do for [fmt in "pngcairo svg"] {
  if (fmt eq "pngcairo") {
    set terminal pngcairo size 500*n,520 font ",10"
    set output "time_vs_contacts.png"
  } else {
    set terminal svg size 500*n,520 font "sans,10" dynamic
    set output "time_vs_contacts.svg"
  }
  set multiplot layout 1,n
  do for [i=1:n] {
    f = "plot-".word(scenes, i).".dat"
    set title word(scenes, i)
    plot f using 1:2 with linespoints lw 2 pt 7 title "cmodes whole analysis", \
         f using 1:3 with linespoints pt 6 title "cmodes eigen (analysis)", \
         f using 1:4 with linespoints pt 5 title "cmodes eigen (same operator)", \
         f using 1:5 with linespoints pt 9 title "scipy eigsh", \
         f using 1:6 with linespoints pt 11 title "SLEPc Krylov-Schur", \
         f using 1:7 with linespoints pt 13 title "dense dsyevr top-6", \
         f using 1:8 with linespoints pt 15 title "dense dsyevd", \
         f using 1:9 with linespoints dt 2 title "per-contact estimate"
  }
  unset multiplot
  unset output
}
