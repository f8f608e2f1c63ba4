#!/usr/bin/env bash
# Benchmark of the structured kernels of lib/sparse against the dense kernel (what `epar compare` writes to
# sparse_speed.csv and what the pi_speedup check reads): every mask mechanism at L = 1024, 2048, 4096
# (BENCH_SPARSE_LENGTHS), one head of d = 64, one thread, the mechanisms' default parameters. Per row: the dense
# kernel's and the structured kernel's fastest call (µs), the speed-up, the pair-count bound L^2 / pairs and the
# fraction of the bound reached. Then the tile size (rows per tile) for pi-attention at the largest length.
# Both kernels of a row are timed alternately in the same run, so the ratio is meaningful on a shared machine
# even when absolute times are not.
# Usage: bench/bench_sparse.sh          env: EPAR (default ./epar), BENCH_SPARSE_LENGTHS (default 1024,2048,4096),
#                                            BENCH_SPARSE_TILES (default 8,16,32,64,128)
set -eu
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
LENGTHS=${BENCH_SPARSE_LENGTHS:-1024,2048,4096}
TILES=${BENCH_SPARSE_TILES:-8,16,32,64,128}
[ -x "$EPAR" ] || { echo "bench/bench_sparse.sh: build epar first (make)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/epar-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
masks=strided,sparse-fixed,sliding-window,block-sparse,global-local,pi-attention
# the analyses of compare run at a small size: only the kernel timings matter here
small="--length 32 --hidden 32 --heads 4 --batch 1 --seed 42 --no-render --quiet"

table() { # sparse_speed.csv -> aligned table
    awk -F, 'NR == 1 { printf "  %-15s %6s %4s %9s %12s %12s %9s %9s %9s\n", "mechanism", "L", "d", "pairs", "dense_us",
                       "sparse_us", "speedup", "bound", "fraction"; next }
             { printf "  %-15s %6d %4d %9d %12.1f %12.1f %8.2fx %8.2fx %8.1f%%\n", $1, $2, $3, $4, $5, $6, $7, $8,
               100 * $9 }' "$1"
}

mkdir -p build/bench
gcc -O2 -std=gnu11 -fopenmp -I. -Ilib bench/dense_kernel.c -o build/bench/dense_kernel build/libepar.a -lgsl -lopenblas -lm
echo "== the dense kernel against the double FMA peak, per CPU-second of one thread (bench/dense_kernel.c) =="
for c in 0 1; do
    build/bench/dense_kernel 4096 "$c" | awk '{ printf "  L = %d, %s: %.1f GFLOP/s of the %.1f GFLOP/s %s double peak = %.0f%% (target >= 50%%)\n",
                                                $1, $2 ? "causal" : "all keys", $3, $4, $6, 100 * $5 }'
done
echo
echo "== dense vs structured kernel, one head, d = 64, one thread (fastest of 3 after a warm-up call) =="
echo "   $("$EPAR" --version | sed -n 's/^OpenBLAS /BLAS: OpenBLAS /p')"
"$EPAR" compare $small --mechanisms "$masks" --speed-lengths "$LENGTHS" --out "$tmp/all"
table "$tmp/all/compare/sparse_speed.csv"
echo "  bound = L^2 / distinct allowed pairs; fraction = speedup / bound (above 100% when the dense kernel spends"
echo "  more per entry than the structured kernel per pair: its masked softmax scans all L^2 entries)"

largest=$(echo "$LENGTHS" | tr , '\n' | sort -n | tail -1)
echo
echo "== pi-attention at L = $largest: rows per tile (--speed-tile; 0 = lib/sparse's default) =="
for t in 0 $(echo "$TILES" | tr , ' '); do
    "$EPAR" compare $small --mechanisms pi-attention --speed-lengths "$largest" --speed-tile "$t" --out "$tmp/t$t"
    awk -F, -v t="$t" 'NR == 2 { printf "  tile %4s  dense %10.1f us  structured %9.1f us  speedup %6.2fx  %5.1f%% of the bound %.2fx\n",
                                 t, $5, $6, $7, 100 * $9, $8 }' "$tmp/t$t/compare/sparse_speed.csv"
done
