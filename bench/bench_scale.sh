#!/usr/bin/env bash
# make bench: the streaming analysis against this machine's arithmetic floor, NumPy, and L^2 scaling.
#   1. measures the fp32 FMA peak with bench/fma_peak.c (best of 7, with the thread count used below) on the
#      widest FMA the CPU has (AVX-512 when present, else AVX2; at the start every ISA is shown), once at the
#      start and again right before every length (the machine is shared: each length is compared with the
#      peak measured next to it);
#      Also: OpenBLAS sgemm alone on the streaming tiles (bench/sgemm_tiles.c), as a fraction of the peak;
#   2. runs `epar scale` per length (streaming for every L, materialised up to BENCH_MAT_MAX) and prints
#      time, GFLOP/s (2 L^2 d / s), peak RSS, and the ratio to the floor
#      floor = 1.25 * 2 L^2 d / peak   (the score FLOPs at the FMA peak, +25% for exp/softmax/V);
#   3. runs bench/numpy_baseline.py at BENCH_NUMPY_L (default 8192), float64 and float32, each right after
#      an epar streaming run at the same L, and prints NumPy time / epar time;
#   4. writes output/bench/scaling.{csv,gp,png} (log-log time and memory vs L, with an L^2 line) and
#      copies the PNG to bench/scaling.png.
# Environment: BENCH_JOBS (threads, default nproc), BENCH_LENGTHS, BENCH_MAT_MAX, BENCH_NUMPY_L, BENCH_HIDDEN,
# BENCH_OUT (default output/bench; the figure is copied to bench/scaling.png only for the default).
# Never part of `make test`. Timings are noisy on a shared machine: every ratio is taken within this run.
set -eu
cd "$(dirname "$0")/.."
EPAR=./epar
OUT=${BENCH_OUT:-output/bench}
JOBS=${BENCH_JOBS:-$(nproc)}
D=${BENCH_HIDDEN:-64}
LENGTHS=${BENCH_LENGTHS:-"1024 2048 4096 8192 16384 32768 65536 131072"}
MAT_MAX=${BENCH_MAT_MAX:-8192}
NUMPY_L=${BENCH_NUMPY_L:-8192}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
mkdir -p build/bench "$OUT"
gcc -O2 -fopenmp bench/fma_peak.c -o build/bench/fma_peak

echo "== fp32 FMA peak (bench/fma_peak.c, best of 7; every ISA the CPU has, the widest is the peak) =="
# lines "threads gflops isa"; with --all the widest ISA is the last line of each thread count
build/bench/fma_peak --all "$JOBS" | tee "$OUT/fma_peak.txt" | awk '{ printf "  %d thread(s): %8.2f GFLOP/s  %s\n", $1, $2, $3 }'
PEAK=$(tail -n 1 "$OUT/fma_peak.txt" | cut -d' ' -f2)
ISA=$(tail -n 1 "$OUT/fma_peak.txt" | cut -d' ' -f3)
echo "  floor model: 1.25 * 2 L^2 d / $PEAK GFLOP/s ($ISA FMA, $JOBS threads), d = $D"
echo "  BLAS: $($EPAR --version | grep OpenBLAS)"
gcc -O2 $(pkg-config --cflags openblas 2>/dev/null) bench/sgemm_tiles.c -o build/bench/sgemm_tiles -lopenblas
P1=$(build/bench/fma_peak 1 only | cut -d' ' -f2)
SG=$(build/bench/sgemm_tiles 8192 "$D")
awk -v sg="$SG" -v p="$P1" 'BEGIN { printf "  OpenBLAS sgemm alone on the streaming tiles (128 x 512, K = d, L = 8192, 1 thread; lib/stream computes them with its own tiles): %.1f GFLOP/s = %.0f%% of the 1-thread peak %.1f\n", sg, 100 * sg / p, p }'

repeats() { if [ "$1" -le 8192 ]; then echo 5; elif [ "$1" -le 32768 ]; then echo 3; else echo 1; fi; }
csv=$OUT/scaling.csv
echo "length,hidden,path,threads,seconds,gflops,peak_rss_mb,pos_star,fma_peak_gflops,floor_seconds,times_floor,fraction_of_floor,cpu_seconds,cpu_share,fma_isa,blas_core,fma_peak_cpu_gflops,times_floor_cpu" > "$csv"
run() { # path L
    local path=$1 L=$2 dir="$OUT/runs/$1-$2" peak isa core cpeak
    rm -rf "$dir"
    read -r _ peak isa < <(build/bench/fma_peak "$JOBS" only)   # the widest ISA
    read -r _ cpeak _ < <(build/bench/fma_peak --cpu "$JOBS" only)   # per CPU-second, summed over the threads
    $EPAR scale --length "$L" --hidden "$D" --path "$path" --repeats "$(repeats "$L")" --jobs "$JOBS" \
        --out "$dir" --quiet || { echo "  $path L=$L failed (exit $?)"; return 0; }
    cpu=$(grep '^cpu_seconds_mean,' "$dir/scale/summary.csv" | cut -d, -f2)
    core=$(grep '^blas_core,' "$dir/scale/summary.csv" | cut -d, -f2)
    # x floor (cpu): the analysis's CPU seconds over the floor's CPU seconds at the peak per CPU-second (both
    # unaffected by other processes taking the cores: on a loaded machine the wall-clock ratio measures the load)
    tail -n 1 "$dir/scale/scale.csv" | awk -F, -v peak="$peak" -v cpu="$cpu" -v isa="$isa" -v core="$core" -v cpk="$cpeak" \
        -v th="$JOBS" 'BEGIN { OFS = "," }
        { floor = 1.25 * 2 * $1 * $1 * $2 / (peak * 1e9); cfloor = 1.25 * 2 * $1 * $1 * $2 / (cpk / th * 1e9);
          print $0, peak, sprintf("%.6g", floor), sprintf("%.4g", $5 / floor), sprintf("%.4g", floor / $5),
                sprintf("%.6g", cpu), sprintf("%.3g", cpu / ($5 * $4)), isa, core, cpk, sprintf("%.4g", cpu / cfloor) }' >> "$csv"
}
echo
echo "== epar scale, d = $D, $JOBS threads (seconds: median of the repeats) =="
for L in $LENGTHS; do
    run streaming "$L"
    [ "$L" -le "$MAT_MAX" ] && run materialized "$L"
done
awk -F, 'NR == 1 { printf "  %7s %-12s %9s %8s %7s %6s %9s %9s %7s %8s %9s %9s %9s\n", "L", "path", "seconds", "GFLOP/s",
                   "RSS MB", "pos*", "peak GF/s", "floor s", "x floor", "within2x", "cpu s", "cpu share", "x fl(cpu)"; next }
         { printf "  %7d %-12s %9.4g %8.4g %7.4g %6d %9.4g %9.4g %7.3g %8s %9.4g %9.3g %9.3g\n", $1, $3, $5, $6, $7, $8, $9, $10,
                  $11, ($11 <= 2 ? "yes" : "no"), $13, $14, $18 }' "$csv"
echo "  cpu share = process CPU time / (seconds x threads): below 1 when other processes took the cores"
echo "  x fl(cpu) = CPU seconds of the analysis / the floor at the FMA peak per CPU-second (fma_peak --cpu): the ratio"
echo "  to read when the cpu share is below 1"
echo "  floor from the $ISA FMA peak; BLAS kernel epar scale ran with (run.json, summary.csv): $(awk -F, 'NR > 1 { print $16 }' "$csv" | sort -u | tr '\n' ' ')"

# slope of log(seconds) vs log(L), streaming, L >= 4096 (least squares)
SLOPE=$(awk -F, '$3 == "streaming" && $1 >= 4096 { x = log($1); y = log($5); n++; sx += x; sy += y; sxx += x*x; sxy += x*y }
                 END { if (n >= 2) printf "%.3f", (n*sxy - sx*sy) / (n*sxx - sx*sx); else print "nan" }' "$csv")
echo "  fitted slope of log(time) vs log(L), streaming, L >= 4096: $SLOPE (L^2 -> 2)"

echo
echo "== NumPy baseline (bench/numpy_baseline.py) at L = $NUMPY_L, d = $D =="
# epar is re-run right before each NumPy run (same minute, same machine load): the ratio is taken there
for dt in float64 float32; do
    rm -rf "$OUT/runs/numpy-epar"
    $EPAR scale --length "$NUMPY_L" --hidden "$D" --path streaming --repeats 3 --jobs "$JOBS" --out "$OUT/runs/numpy-epar" --quiet
    EP=$(tail -n 1 "$OUT/runs/numpy-epar/scale/scale.csv" | cut -d, -f5)
    if NP=$("$PY" bench/numpy_baseline.py --length "$NUMPY_L" --hidden "$D" --repeats 3 --dtype "$dt" | tail -n 1 | cut -d, -f4); then
        echo "$NUMPY_L,$dt,$NP,$EP" >> "$OUT/numpy.csv.tmp"
        awk -v np="$NP" -v ep="$EP" -v dt="$dt" 'BEGIN { printf "  NumPy %s: %.4g s   epar streaming (run just before): %.4g s   ratio %.1fx\n", dt, np, ep, np / ep }'
    else
        echo "  NumPy $dt: failed (is python3-numpy installed?)"
    fi
done
{ echo "length,numpy_dtype,numpy_seconds,epar_seconds"; cat "$OUT/numpy.csv.tmp" 2>/dev/null; } > "$OUT/numpy.csv"
rm -f "$OUT/numpy.csv.tmp"

# figure: log-log time and peak RSS vs L with an L^2 reference through the largest streaming point
awk -F, 'NR > 1 && $3 == "streaming"' "$csv" > "$OUT/scaling_streaming.csv"
awk -F, 'NR > 1 && $3 == "materialized"' "$csv" > "$OUT/scaling_materialized.csv"
REF=$(awk -F, '$3 == "streaming" { L = $1; s = $5 } END { printf "%.6g", s / (L * L) }' "$csv")
cat > "$OUT/scaling.gp" <<GP
load '$PWD/plots/epar.gp'
set terminal @epar_term size 1300,560
set output 'scaling.png'
set datafile separator ','
set multiplot layout 1,2 title 'epar scale: single-head analysis, d = $D, threads: $JOBS (fitted slope of log time vs log L: $SLOPE)'
set logscale xy
set xrange [$(echo "$LENGTHS" | tr ' ' '\n' | sort -n | head -1)/1.5:$(echo "$LENGTHS" | tr ' ' '\n' | sort -n | tail -1)*1.5]
set xlabel 'sequence length L'
set ylabel 'wall time of the analysis (s)'
set key top left Left reverse
plot 'scaling_streaming.csv' using 1:5 with linespoints lt 1 pt 7 title 'streaming', \\
     'scaling_materialized.csv' using 1:5 with linespoints lt 2 pt 5 title 'materialised', \\
     'scaling_streaming.csv' using 1:10 with lines lt 8 dt 2 title 'floor: 1.25 x 2L^2d / FMA peak', \\
     $REF * x**2 with lines lt 3 dt 3 title 'L^2 reference'
set ylabel 'peak resident memory (MB)'
plot 'scaling_streaming.csv' using 1:7 with linespoints lt 1 pt 7 title 'streaming', \\
     'scaling_materialized.csv' using 1:7 with linespoints lt 2 pt 5 title 'materialised'
unset multiplot
GP
if command -v gnuplot >/dev/null; then
    (cd "$OUT" && gnuplot scaling.gp) && echo && echo "figure: $OUT/scaling.png"
    if [ "$OUT" = output/bench ]; then cp "$OUT/scaling.png" bench/scaling.png; echo "  (copied to bench/scaling.png)"; fi
fi
