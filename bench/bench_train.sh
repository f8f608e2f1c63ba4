#!/usr/bin/env bash
# make bench: training throughput of epar's Transformer (lib/nn, forward + backward + AdamW) against the
# fp32 FMA peak and against PyTorch on the CPU, and EPAR's step-time overhead over `none`.
#
#   Fixed config: 4 layers, dim 128, 4 heads, MLP 512, length 256, batch 16, vocabulary 63 (the KJV's).
#   1. builds bench/fma_peak.c and bench/train_step.c (links build/libepar.a);
#   2. model FLOPs per token, counted from the architecture (printed with the formula): the matrix
#      products only, 2 FLOPs per multiply-add, causal attention counted at the (T+1)/2 keys a query
#      really sees, backward = 2 x forward (the usual "model FLOPs"; LayerNorm, GELU, softmax, AdamW and
#      the masked half of the score blocks epar computes anyway are not counted);
#   3. for each thread count (BENCH_TRAIN_THREADS, default "1 2") and each of BENCH_TRAIN_ROUNDS rounds
#      (default 3): the FMA peak at that thread count, then bench/train_step (mechanisms none, alibi,
#      epar-basic, epar-enhanced interleaved step by step in one process, median step time each, and the
#      row linear-products: the step's linear-layer and head products alone through lib/nn's matmul
#      functions, the same OpenBLAS sgemm on the same shapes as PyTorch's Linear layers; PyTorch's step
#      over that time is the largest tokens/s ratio any step built on this sgemm can reach), then
#      bench/torch_train.py (none and alibi) with torch.set_num_threads equal. Every ratio is taken within
#      a round (same minutes, same machine load) and the median over rounds is reported;
#   4. writes output/bench/train.csv (one row per round x mechanism x implementation). Besides wall time,
#      each step's process CPU time is recorded: on a shared machine the wall time of either side grows
#      when other processes take its core, its CPU time much less, so the CPU-time ratio is the steadier one.
# PyTorch is Debian's python3-torch (scripts/install-deps --with-bench); without it the comparison is
# skipped with a note. Both epar and PyTorch are libgomp programs; both wait passively here unless
# OMP_WAIT_POLICY is set (epar by its own default, lib/blas.h; PyTorch by this script), since threads spinning at
# barriers steal the cores on a loaded machine. Environment: BENCH_TRAIN_THREADS, BENCH_TRAIN_ROUNDS, BENCH_TRAIN_STEPS (timed steps
# per mechanism, default 20), BENCH_PYTHON (default /usr/bin/python3), BENCH_OUT (default output/bench). Never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-output/bench}
THREADS=${BENCH_TRAIN_THREADS:-"1 2"}
ROUNDS=${BENCH_TRAIN_ROUNDS:-3}
STEPS=${BENCH_TRAIN_STEPS:-20}
PY=${BENCH_PYTHON:-/usr/bin/python3}   # Debian's python3 (python3-torch); another interpreter may lack torch
[ -x "$PY" ] || PY=python3
L=4 C=128 H=4 F=512 T=256 B=16 V=63
MECHS=none,alibi,epar-basic,epar-enhanced
mkdir -p build/bench "$OUT"
[ -f build/libepar.a ] || { echo "bench_train: build/libepar.a missing (run make first)"; exit 3; }
gcc -O2 -fopenmp bench/fma_peak.c -o build/bench/fma_peak
gcc -O2 -std=gnu11 -Wall -Wextra -fopenmp -I. -Ilib $(pkg-config --cflags gsl openblas) bench/train_step.c \
    -o build/bench/train_step build/libepar.a -lgsl -lopenblas -lcsv -ljansson -lm

echo "== epar train throughput: $L layers, dim $C, $H heads, mlp $F, length $T, batch $B, vocabulary $V =="
# linear layers and head, and the causal attention products; model FLOPs = their sum
LFLOPS=$(awk -v L=$L -v C=$C -v F=$F -v V=$V 'BEGIN { printf "%.0f", 3 * (L * 2 * (3 * C * C + C * C + 2 * C * F) + 2 * C * V) }')
FLOPS=$(awk -v l=$LFLOPS -v L=$L -v C=$C -v T=$T 'BEGIN { printf "%.0f", l + 3 * L * 2 * 2 * C * (T + 1) / 2 }')
echo "  model FLOPs per token = 3 x [layers x (2 (3C^2 + C^2 + 2CF) + 2 x 2C (T+1)/2) + 2CV] = $FLOPS"
echo "    (qkv, projection, MLP; scores and weighted values over the (T+1)/2 keys a causal query sees on"
echo "     average; the tied output head; x3 for forward + backward; non-matmul ops not counted)"
echo "  of which the linear layers and the head (the row linear-products) = $LFLOPS"
echo "  BLAS: $(./epar --version | grep OpenBLAS)"
echo "  OMP_WAIT_POLICY: epar ${OMP_WAIT_POLICY:-passive (epar's default)}, PyTorch ${OMP_WAIT_POLICY:-passive}"
HAVE_TORCH=1
if ! "$PY" -c 'import torch' 2>/dev/null; then
    HAVE_TORCH=0
    echo "  note: PyTorch is not installed (Debian: apt-get install python3-torch, or scripts/install-deps --with-bench);"
    echo "        the PyTorch comparison is skipped"
else
    echo "  PyTorch $("$PY" -c 'import torch; print(torch.__version__)') (CPU, float32), $PY"
fi

csv=$OUT/train.csv
tmp=$csv.tmp
echo "impl,mechanism,threads,round,seconds_per_step,tokens_per_second,model_gflops,fma_peak_gflops,fraction_of_peak,forward_s,backward_s,optim_s,cpu_seconds_per_step" > "$tmp"
for th in $THREADS; do
    for r in $(seq 1 "$ROUNDS"); do
        peak=$(build/bench/fma_peak "$th" only | cut -d' ' -f2)
        build/bench/train_step --threads "$th" --mechanisms "$MECHS" --floor --steps "$STEPS" --warmup-steps 3 \
            --layers $L --dim $C --heads $H --mlp $F --length $T --batch $B --vocab $V |
            awk -F, -v r="$r" -v peak="$peak" -v fl="$FLOPS" -v lfl="$LFLOPS" 'NR > 1 { g = $12 * ($1 == "linear-products" ? lfl : fl) / 1e9;
                printf "epar,%s,%s,%s,%s,%s,%.4g,%s,%.4g,%s,%s,%s,%s\n", $1, $2, r, $11, $12, g, peak, g / peak, $13, $14, $15, $16 }' >> "$tmp"
        if [ "$HAVE_TORCH" = 1 ]; then
            for m in none alibi; do
                # torch.set_num_threads does not reach the OpenBLAS inside libtorch: without these PyTorch's
                # sgemm ran on every core at "1 thread" (measured: 0.90 s of CPU in 0.46 s of wall per step)
                # and OMP_WAIT_POLICY passive unless set: at two threads libtorch's OpenMP threads spinning at
                # barriers beside the threads of its (pthread) OpenBLAS took the cores from them (measured:
                # 0.74-0.78 s per step against 0.29-0.50 s passive); PyTorch gets its faster setting
                OPENBLAS_NUM_THREADS=$th OMP_NUM_THREADS=$th OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} \
                "$PY" bench/torch_train.py --threads "$th" --mechanism "$m" --steps "$STEPS" --warmup-steps 3 \
                    --layers $L --dim $C --heads $H --mlp $F --length $T --batch $B --vocab $V |
                    awk -F, -v r="$r" -v peak="$peak" -v fl="$FLOPS" '{ g = $12 * fl / 1e9;
                        printf "torch,%s,%s,%s,%s,%s,%.4g,%s,%.4g,,,,%s\n", $1, $2, r, $11, $12, g, peak, g / peak, $13 }' >> "$tmp" ||
                    echo "  note: bench/torch_train.py failed ($m, $th threads, round $r); its row is missing"
            done
        fi
    done
done
mv "$tmp" "$csv"

echo
echo "  per round (seconds per step: median of $STEPS steps after 3 warm-up steps; peak measured right before):"
awk -F, 'NR == 1 { next } { printf "    %-5s %-15s %d thr  round %d  %8.4f s/step %8.0f tok/s %7.2f GFLOP/s  %5.1f%% of %5.1f  cpu %7.4f s/step\n",
                            $1, $2, $3, $4, $5, $6, $7, 100 * $9, $8, $13 }' "$csv"

# medians over rounds of within-round figures
echo
echo "  summary (median over rounds of the within-round figures):"
for th in $THREADS; do
    awk -F, -v th="$th" -v torch="$HAVE_TORCH" -v fl="$FLOPS" -v lfl="$LFLOPS" '
        function med(a, n,    i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
                                        return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
        NR > 1 && $3 == th { s[$1 "," $2 "," $4] = $5; tok[$1 "," $2 "," $4] = $6; fr[$1 "," $2 "," $4] = $9;
                             cs[$1 "," $2 "," $4] = $13; pk[$4] = $8; if ($4 > R) R = $4 }
        END {
            for (r = 1; r <= R; r++) { a[r] = tok["epar,none," r]; f[r] = fr["epar,none," r] }
            printf "    %d thread(s): epar none %.0f tokens/s, %.1f%% of the FMA peak", th, med(a, R), 100 * med(f, R)
            n = 0   # rounds where both PyTorch runs gave a row
            for (r = 1; r <= R; r++) if (tok["torch,none," r] > 0 && tok["torch,alibi," r] > 0) {
                n++; a[n] = tok["torch,none," r]; q[n] = tok["epar,none," r] / tok["torch,none," r];
                qa[n] = tok["epar,alibi," r] / tok["torch,alibi," r]; c[n] = cs["torch,none," r] / cs["epar,none," r];
                ca[n] = cs["torch,alibi," r] / cs["epar,alibi," r]; cl[n] = s["torch,none," r] / s["epar,linear-products," r];
                lf[n] = s["epar,linear-products," r] / s["epar,none," r]
                # + the causal attention products (model FLOPs minus the linear ones) at the FMA peak of the round
                att = (fl - lfl) * tok["epar,none," r] * s["epar,none," r] / (pk[r] * 1e9)
                ca2[n] = s["torch,none," r] / (s["epar,linear-products," r] + att) }
            if (torch && n > 0) {
                printf "; PyTorch none %.0f tokens/s\n", med(a, n)
                printf "      epar / PyTorch tokens/s: none %.2fx, alibi %.2fx (target >= 2x)\n", med(q, n), med(qa, n)
                printf "      ceiling: PyTorch none step / the linear products alone = %.2fx (the ratio if attention, softmax,\n", med(cl, n)
                printf "        GELU, LayerNorm, loss and AdamW took no time; those products are %.0f%% of epar none'"'"'s step);\n", 100 * med(lf, n)
                printf "        %.2fx if the causal attention products also ran, at the FMA peak, and nothing else took time\n", med(ca2, n)
                printf "      PyTorch / epar CPU seconds per step: none %.2fx, alibi %.2fx (robust to other processes taking the cores)\n", med(c, n), med(ca, n)
            } else printf "; no PyTorch figures\n"
            for (r = 1; r <= R; r++) { a[r] = fl * tok["epar,none," r] * s["epar,none," r] / cs["epar,none," r] / 1e9 }
            printf "      epar none: %.1f model GFLOP per CPU-second (per core busy; wall-clock figures also count time the core was taken)\n", med(a, R)
            # overheads from the CPU time of steps interleaved in one process (wall time gives the same within noise)
            for (r = 1; r <= R; r++) { ob[r] = cs["epar,epar-basic," r] / cs["epar,none," r] - 1;
                                       oe[r] = cs["epar,epar-enhanced," r] / cs["epar,none," r] - 1;
                                       oeb[r] = cs["epar,epar-enhanced," r] / cs["epar,epar-basic," r] - 1;
                                       oa[r] = cs["epar,alibi," r] / cs["epar,none," r] - 1;
                                       wb[r] = s["epar,epar-basic," r] / s["epar,none," r] - 1;
                                       we[r] = s["epar,epar-enhanced," r] / s["epar,none," r] - 1 }
            printf "      step CPU time over none: epar-basic %+.1f%%, epar-enhanced %+.1f%%, alibi %+.1f%%; enhanced over basic %+.1f%% (paper: +2.4%%, < 1.2%%)\n",
                   100 * med(ob, R), 100 * med(oe, R), 100 * med(oa, R), 100 * med(oeb, R)
            printf "      (wall time: epar-basic %+.1f%%, epar-enhanced %+.1f%% over none)\n", 100 * med(wb, R), 100 * med(we, R)
        }' "$csv"
done
echo "  table: $csv"
