#!/usr/bin/env bash
# make bench: training throughput of epar's Transformer (lib/nn, forward + backward + AdamW) against the fp32 FMA
# peak and against PyTorch on the CPU, where the step's time goes (per op), and EPAR's step-time overhead over none.
#
#   Configurations (BENCH_TRAIN_CONFIGS, default all three; vocabulary 63, the KJV's, in each):
#     quick32   2 layers, dim 64, 4 heads, MLP 256, length 32, batch 32   (the benchmark grid's short tasks)
#     quick128  2 layers, dim 64, 4 heads, MLP 256, length 128, batch 24  (its long tasks)
#     default   4 layers, dim 128, 4 heads, MLP 512, length 256, batch 16 (epar train's model)
#   1. builds bench/fma_peak.c and bench/train_step.c (links build/libepar.a);
#   2. model FLOPs per token, counted from the architecture (printed with the formula): the matrix products only,
#      2 FLOPs per multiply-add, causal attention counted at the (T+1)/2 keys a query really sees, backward =
#      2 x forward (LayerNorm, GELU, softmax, AdamW and any masked work are not counted);
#   3. for each configuration, thread count (BENCH_TRAIN_THREADS, default "1 2") and round (BENCH_TRAIN_ROUNDS,
#      default 3): the fp32 FMA peak at that thread count twice, by wall clock and per CPU-second (fma_peak --cpu:
#      the rate of a core while the probe ran, which other processes do not lower); then bench/train_step
#      (mechanisms interleaved step by step in one process; the default configuration adds alibi, epar-basic,
#      epar-enhanced and the row linear-products: the step's linear-layer and head products alone through lib/nn's
#      matmul functions, the same OpenBLAS sgemm on the same shapes as PyTorch's Linear layers); then
#      bench/torch_train.py (none; alibi too for the default) with torch.set_num_threads equal;
#   4. two fractions of the peak per round: model GFLOP per CPU-second of the step / one core's FMA peak per
#      CPU-second (robust on a shared machine: neither side counts time the core was taken; with N threads it is the
#      efficiency of the busy cores, parallel overhead included), and model GFLOP/s by wall clock /
#      the wall-clock peak, printed with the step's CPU share (process CPU time / (wall x threads): below 1 when
#      other processes held the cores, and the wall-clock fraction then says more about the load than about epar);
#   5. the per-op profile of one thread (train_step --profile: the step's CPU time per op, median over the steps);
#   6. writes output/bench/train.csv (one row per configuration x round x mechanism x implementation) and
#      output/bench/train_profile.csv. Every ratio is taken within a round (same minutes) and the median over
#      rounds is printed.
# PyTorch is Debian's python3-torch (scripts/install-deps --with-bench); without it the comparison is skipped with
# a note. Both epar and PyTorch are libgomp programs; both wait passively here unless OMP_WAIT_POLICY is set (epar by
# its own default, lib/blas.h; PyTorch by this script), since threads spinning at barriers steal the cores on a
# loaded machine. Environment: BENCH_TRAIN_CONFIGS, BENCH_TRAIN_THREADS, BENCH_TRAIN_ROUNDS, BENCH_TRAIN_STEPS (timed
# steps per mechanism, default 20 for the default configuration and 60 for the quick ones), BENCH_PYTHON (default
# /usr/bin/python3), BENCH_OUT (default output/bench). Never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-output/bench}
CONFIGS=${BENCH_TRAIN_CONFIGS:-"quick32 quick128 default"}
THREADS=${BENCH_TRAIN_THREADS:-"1 2"}
ROUNDS=${BENCH_TRAIN_ROUNDS:-3}
PY=${BENCH_PYTHON:-/usr/bin/python3}   # Debian's python3 (python3-torch); another interpreter may lack torch
[ -x "$PY" ] || PY=python3
mkdir -p build/bench "$OUT"
[ -f build/libepar.a ] || { echo "bench_train: build/libepar.a missing (run make first)"; exit 3; }
gcc -O2 -fopenmp bench/fma_peak.c -o build/bench/fma_peak
gcc -O2 -std=gnu11 -Wall -Wextra -fopenmp -I. -Ilib $(pkg-config --cflags gsl openblas) bench/train_step.c \
    -o build/bench/train_step build/libepar.a -lgsl -lopenblas -lcsv -ljansson -lm

config() { # NAME -> L C H F T B V MECHS FLOOR STEPS
    case $1 in
        quick32) echo "2 64 4 256 32 32 63 none,epar-enhanced 0 ${BENCH_TRAIN_STEPS:-60}" ;;
        quick128) echo "2 64 4 256 128 24 63 none,epar-enhanced 0 ${BENCH_TRAIN_STEPS:-60}" ;;
        default) echo "4 128 4 512 256 16 63 none,alibi,epar-basic,epar-enhanced 1 ${BENCH_TRAIN_STEPS:-20}" ;;
        *) echo "bench_train: unknown configuration '$1' (quick32, quick128, default)" >&2; exit 2 ;;
    esac
}

echo "== epar train throughput: configurations $CONFIGS, threads $THREADS, $ROUNDS round(s) =="
echo "  CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  BLAS: $(./epar --version | grep OpenBLAS)"
echo "  OMP_WAIT_POLICY: epar ${OMP_WAIT_POLICY:-passive, the default of epar}, PyTorch ${OMP_WAIT_POLICY:-passive}"
echo "  model FLOPs per token = 3 x [layers x (2 (3C^2 + C^2 + 2CF) + 2 x 2C (T+1)/2) + 2CV]"
echo "    (qkv, projection, MLP; scores and weighted values over the (T+1)/2 keys a causal query sees on average;"
echo "     the tied output head; x3 for forward + backward; non-matmul ops not counted)"
HAVE_TORCH=1
if ! "$PY" -c 'import torch' 2>/dev/null; then
    HAVE_TORCH=0
    echo "  note: PyTorch is not installed (Debian: apt-get install python3-torch, or scripts/install-deps --with-bench);"
    echo "        the PyTorch comparison is skipped"
else
    echo "  PyTorch $("$PY" -c 'import torch; print(torch.__version__)') (CPU, float32), $PY"
fi

csv=$OUT/train.csv
pcsv=$OUT/train_profile.csv
echo "config,impl,mechanism,threads,round,seconds_per_step,tokens_per_second,cpu_seconds_per_step,model_flops_per_token,fma_peak_gflops,fma_peak_cpu_gflops,fraction_of_peak,fraction_of_peak_cpu,cpu_share" > "$csv.tmp"
echo "config,mechanism,op,seconds_per_step,share_of_step" > "$pcsv.tmp"
for cf in $CONFIGS; do
    read -r L C H F T B V MECHS FLOOR STEPS <<< "$(config "$cf")"
    FLOPS=$(awk -v L=$L -v C=$C -v F=$F -v V=$V -v T=$T 'BEGIN { printf "%.0f", 3 * (L * (2 * (3*C*C + C*C + 2*C*F) + 2*2*C*(T+1)/2) + 2*C*V) }')
    LFLOPS=$(awk -v L=$L -v C=$C -v F=$F -v V=$V 'BEGIN { printf "%.0f", 3 * (L * 2 * (3*C*C + C*C + 2*C*F) + 2*C*V) }')
    echo "  $cf: $L layers, dim $C, $H heads, mlp $F, length $T, batch $B, vocabulary $V: $FLOPS model FLOPs per token" \
         "($LFLOPS in the linear layers and the head)"
    floor=
    [ "$FLOOR" = 1 ] && floor=--floor
    for th in $THREADS; do
        for r in $(seq 1 "$ROUNDS"); do
            peak=$(build/bench/fma_peak "$th" only | cut -d' ' -f2)
            cpeak=$(build/bench/fma_peak --cpu "$th" only | cut -d' ' -f2)
            prof=
            [ "$th" = 1 ] && [ "$r" = 1 ] && prof="--profile $OUT/train_profile.$cf.tmp"
            build/bench/train_step --threads "$th" --mechanisms "$MECHS" $floor $prof --steps "$STEPS" --warmup-steps 3 \
                --layers $L --dim $C --heads $H --mlp $F --length $T --batch $B --vocab $V |
                awk -F, -v cf="$cf" -v r="$r" -v pk="$peak" -v cpk="$cpeak" -v fl="$FLOPS" -v lfl="$LFLOPS" 'NR > 1 {
                    f = $1 == "linear-products" ? lfl : fl; tok = $12; ctok = $3 * $4 / $16
                    printf "%s,epar,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.4g,%.4g,%.3g\n", cf, $1, $2, r, $11, tok, $16, f, pk, cpk,
                           tok * f / 1e9 / pk, ctok * f / 1e9 / (cpk / $2), $16 / ($11 * $2) }' >> "$csv.tmp"
            if [ -n "$prof" ]; then
                awk -F, -v cf="$cf" 'NR > 1 { print cf "," $0 }' "$OUT/train_profile.$cf.tmp" >> "$pcsv.tmp"
                rm -f "$OUT/train_profile.$cf.tmp"
            fi
            if [ "$HAVE_TORCH" = 1 ]; then
                tm=none
                [ "$cf" = default ] && tm="none alibi"
                for m in $tm; do
                    # torch.set_num_threads does not reach the OpenBLAS inside libtorch: without these PyTorch's
                    # sgemm ran on every core at "1 thread" (measured: 0.90 s of CPU in 0.46 s of wall per step)
                    # and OMP_WAIT_POLICY passive unless set: at two threads libtorch's OpenMP threads spinning at
                    # barriers beside the threads of its (pthread) OpenBLAS took the cores from them (measured:
                    # 0.74-0.78 s per step against 0.29-0.50 s passive); PyTorch gets its faster setting
                    OPENBLAS_NUM_THREADS=$th OMP_NUM_THREADS=$th OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} \
                    "$PY" bench/torch_train.py --threads "$th" --mechanism "$m" --steps "$STEPS" --warmup-steps 3 \
                        --layers $L --dim $C --heads $H --mlp $F --length $T --batch $B --vocab $V |
                        awk -F, -v cf="$cf" -v r="$r" -v pk="$peak" -v cpk="$cpeak" -v fl="$FLOPS" '{
                            tok = $12; ctok = $3 * $4 / $13
                            printf "%s,torch,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.4g,%.4g,%.3g\n", cf, $1, $2, r, $11, tok, $13, fl, pk,
                                   cpk, tok * fl / 1e9 / pk, ctok * fl / 1e9 / (cpk / $2), $13 / ($11 * $2) }' >> "$csv.tmp" ||
                        echo "  note: bench/torch_train.py failed ($cf, $m, $th threads, round $r); its row is missing"
                done
            fi
        done
    done
done
mv "$csv.tmp" "$csv"
mv "$pcsv.tmp" "$pcsv"

echo
echo "  per round (seconds per step: median of the timed steps after 3 warm-up steps; peaks measured right before):"
awk -F, 'NR == 1 { next } { printf "    %-8s %-5s %-15s %d thr  round %d  %8.4f s/step %8.0f tok/s  cpu %8.4f s/step (share %.2f)  %5.1f%% of the peak per CPU-s (%.1f)  %5.1f%% by wall (%.1f)\n",
                            $1, $2, $3, $4, $5, $6, $7, $8, $14, 100 * $13, $11, 100 * $12, $10 }' "$csv"

echo
echo "  summary (median over rounds of the within-round figures):"
for cf in $CONFIGS; do
    for th in $THREADS; do
        awk -F, -v cf="$cf" -v th="$th" -v torch="$HAVE_TORCH" '
            function med(a, n,    i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
                                            return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
            NR > 1 && $1 == cf && $4 == th { k = $2 "," $3 "," $5; s[k] = $6; tok[k] = $7; cs[k] = $8; fr[k] = $12; frc[k] = $13;
                                             sh[k] = $14; fl = $9; pk[$5] = $10; cpk[$5] = $11; if ($5 > R) R = $5 }
            END {
                if (R == 0) exit
                for (r = 1; r <= R; r++) { a[r] = tok["epar,none," r]; f[r] = frc["epar,none," r]; w[r] = fr["epar,none," r];
                                           c[r] = sh["epar,none," r]; p[r] = cpk[r] / th; ct[r] = fl / 1e9 * (tok["epar,none," r] * s["epar,none," r]) / cs["epar,none," r] }
                printf "    %-8s %d thread(s): epar none %.0f tokens/s (%.1f model GFLOP per CPU-second), %.1f%% of the FMA peak per CPU-second of a core (%.1f GFLOP/s); by wall clock %.1f%% at cpu share %.2f\n",
                       cf, th, med(a, R), med(ct, R), 100 * med(f, R), med(p, R), 100 * med(w, R), med(c, R)
                n = 0
                for (r = 1; r <= R; r++) if (tok["torch,none," r] > 0) {
                    n++; q[n] = tok["epar,none," r] / tok["torch,none," r]; qc[n] = cs["torch,none," r] / cs["epar,none," r]
                    tt[n] = tok["torch,none," r]; ts[n] = sh["torch,none," r]
                    if (tok["torch,alibi," r] > 0) { na++; qa[na] = tok["epar,alibi," r] / tok["torch,alibi," r]; qac[na] = cs["torch,alibi," r] / cs["epar,alibi," r] }
                    if (s["epar,linear-products," r] > 0) { nl++; cl[nl] = s["torch,none," r] / s["epar,linear-products," r]; lf[nl] = s["epar,linear-products," r] / s["epar,none," r] }
                }
                if (torch && n > 0) {
                    printf "      PyTorch none %.0f tokens/s (cpu share %.2f); epar / PyTorch: %.2fx by wall clock, %.2fx by CPU seconds per step (target >= 2x)\n",
                           med(tt, n), med(ts, n), med(q, n), med(qc, n)
                    if (na > 0) printf "      alibi: epar / PyTorch %.2fx by wall clock, %.2fx by CPU seconds\n", med(qa, na), med(qac, na)
                    if (nl > 0) printf "      ceiling: PyTorch none step / epar'"'"'s linear products alone = %.2fx (those products are %.0f%% of epar none'"'"'s step)\n", med(cl, nl), 100 * med(lf, nl)
                }
                if (s["epar,epar-basic,1"] > 0) {
                    for (r = 1; r <= R; r++) { ob[r] = cs["epar,epar-basic," r] / cs["epar,none," r] - 1; oe[r] = cs["epar,epar-enhanced," r] / cs["epar,none," r] - 1
                                               oeb[r] = cs["epar,epar-enhanced," r] / cs["epar,epar-basic," r] - 1; oa[r] = cs["epar,alibi," r] / cs["epar,none," r] - 1 }
                    printf "      step CPU time over none: epar-basic %+.1f%%, epar-enhanced %+.1f%%, alibi %+.1f%%; enhanced over basic %+.1f%% (paper: +2.4%%, < 1.2%%)\n",
                           100 * med(ob, R), 100 * med(oe, R), 100 * med(oa, R), 100 * med(oeb, R)
                }
            }' "$csv"
    done
    # two threads against one: wall-clock tokens/s and CPU seconds per step (the parallel overhead)
    set -- $THREADS
    if [ $# -ge 2 ]; then
        awk -F, -v cf="$cf" -v t1="$1" -v t2="$2" '
            function med(a, n,    i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
                                            return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
            NR > 1 && $1 == cf && $2 == "epar" && $3 == "none" { tok[$4] = tok[$4] " " $7; cs[$4] = cs[$4] " " $8; sh[$4] = sh[$4] " " $14 }
            END {
                n1 = split(tok[t1], a1, " "); n2 = split(tok[t2], a2, " "); split(cs[t1], c1, " "); split(cs[t2], c2, " "); split(sh[t2], s2, " ")
                if (n1 == 0 || n2 == 0) exit
                printf "    %-8s %d threads / %d: %.2fx the tokens/s by wall clock (cpu share at %d threads %.2f), CPU seconds per step %.2fx\n",
                       cf, t2, t1, med(a2, n2) / med(a1, n1), t2, med(s2, n2), med(c2, n2) / med(c1, n1)
            }' "$csv"
    fi
done

echo
echo "  where one thread's step goes (CPU time per op, median over the steps; train_step --profile):"
awk -F, 'NR > 1 { key = $1 " " $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
                  line[key] = line[key] sprintf("  %s %.1f%%", $3, 100 * $5) }
         END { for (i = 1; i <= n; i++) printf "    %s:%s\n", order[i], line[order[i]] }' "$pcsv" | fold -s -w 150 | sed '2,$ s/^\([^ ]\)/        \1/'
echo "  tables: $csv, $pcsv"
