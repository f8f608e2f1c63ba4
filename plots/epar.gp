# epar shared gnuplot style. Compiled into epar and copied at the top of every figure script it writes (so a
# figure folder renders wherever it is copied); a script may then change the size with
#   set terminal @epar_term size W,H
epar_term = "pngcairo enhanced font 'DejaVu Sans,10' linewidth 1.5"
set terminal @epar_term size 900,650
set datafile separator comma
set datafile missing 'nan'
# an across-seed sd is nan with one seed: draw no error bar then (sd(7) in place of 7 in a using spec)
sd(c) = (valid(c) ? column(c) : 0)
set encoding utf8
set grid back lc rgb '#dddddd'
set border 3 lc rgb '#444444'
set tics nomirror out
set key top right opaque box lc rgb '#bbbbbb'
set style fill solid 0.8 noborder
# perceptually ordered palette (viridis-like), for heatmaps
set palette defined (0 '#440154', 1 '#3b528b', 2 '#21918c', 3 '#5ec962', 4 '#fde725')
set colorbox
# line colours
set linetype 1 lc rgb '#1f77b4' pt 7 ps 0.6
set linetype 2 lc rgb '#d62728' pt 5 ps 0.6
set linetype 3 lc rgb '#2ca02c' pt 9 ps 0.6
set linetype 4 lc rgb '#ff7f0e' pt 11 ps 0.6
set linetype 5 lc rgb '#9467bd' pt 13 ps 0.6
set linetype 6 lc rgb '#8c564b' pt 15 ps 0.6
set linetype 7 lc rgb '#e377c2' pt 7 ps 0.6
set linetype 8 lc rgb '#7f7f7f' pt 5 ps 0.6
# more colours for a panel of up to 12 series (none repeats within a panel)
set linetype 9 lc rgb '#17becf' pt 9 ps 0.6
set linetype 10 lc rgb '#bcbd22' pt 11 ps 0.6
set linetype 11 lc rgb '#000000' pt 13 ps 0.6
set linetype 12 lc rgb '#8c8cff' pt 15 ps 0.6
# Degenerate data. gnuplot stops on a plot without one valid point ("x range is invalid"): an empty table, a
# column of nan (nothing learned; one seed's sd). A figure whose data can be so checks first and then draws a
# "no data" panel in place of the plot (title and axis labels kept), so the other figures still render:
#   eval epar_check('table.csv', '3:5')        (the file and the using spec of the plot, 1 or 2 columns; CSVs have a
#                                               header row; counted whatever ranges are set)
#   if (epar_ok) {
#       plot 'table.csv' skip 1 using 3:5 ...
#   } else { @epar_no_data }
epar_check(file, spec) = sprintf("undefine STATS_*; stats [*:*][*:*] '%s' skip 1 using %s nooutput; epar_ok = exists('STATS_records') && STATS_records > 0", file, spec)
epar_no_data = "set label 9999 'no data (an empty table, or every value nan)' at graph 0.5, graph 0.5 center front tc rgb '#777777' font ',12'; plot [0:1][0:1] '+' using (1):(1) axes x2y2 with points ps 0 notitle; unset label 9999"
# a heatmap of a long-form CSV with columns (row, column, value): call @epar_heatmap before plot
epar_heatmap = "unset key; set view map; set size ratio -1; set yrange [*:*] reverse; set tics out; unset grid"
# and plot it with  eval epar_cells('table.csv', '2', '1', '3')  (the columns of x, y and the value, on a unit grid):
# an image, cell by cell when the grid is one row or column (gnuplot draws no image under 2 x 2), "no data" when no
# value is valid
epar_cells(file, x, y, z) = sprintf("eval epar_check('%s', '%s:%s'); if (!epar_ok) { eval epar_no_data } else { undefine STATS_*; stats [*:*][*:*] '%s' skip 1 using %s:%s nooutput; if (STATS_max_x > STATS_min_x && STATS_max_y > STATS_min_y) { plot '%s' skip 1 using %s:%s:%s with image notitle } else { plot '%s' skip 1 using %s:%s:(0.5):(0.5):%s with boxxyerror fs solid noborder fc palette notitle } }", file, x, z, file, x, y, file, x, y, z, file, x, y, z)
