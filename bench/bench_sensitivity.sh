#!/usr/bin/env bash
# Benchmark of `epar sensitivity` (never part of `make test`): reports ratios measured in one run, so a
# shared or noisy machine still gives comparable numbers.
#   - thread scaling: wall time with --jobs 1 over --jobs N (N = cores)
#   - linearity in draws: wall time with --runs 2 over --runs 1 (ideal 2; less = fixed overhead such as
#     tables, report and start-up)
# Usage: bench/bench_sensitivity.sh [repeats]   (env: EPAR=path/to/epar)
set -eu
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
reps=${1:-3}
cores=$(nproc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
best() { # command... -> fastest wall time of $reps runs
    local b=""
    for _ in $(seq "$reps"); do
        local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now)
        b=$(echo "$t0 $t1 ${b:-inf}" | awk '{d=$2-$1; if ($3=="inf" || d<$3) print d; else print $3}')
    done
    echo "$b"
}
common="--no-render --quiet --out $tmp"
t1=$(best "$EPAR" sensitivity $common --jobs 1)
draws=$(awk -F, '$1!="sweep"{s+=$3}END{print s}' "$tmp/parameter/baseline.csv")
seeds=$(awk -F, 'NR==2{print $NF}' "$tmp/parameter/baseline.csv")
tn=$(best "$EPAR" sensitivity $common --jobs "$cores")
t2=$(best "$EPAR" sensitivity $common --jobs 1 --runs 2)
echo "sensitivity: best of $reps, $((draws * seeds)) draws x 3 forms"
awk -v a="$t1" -v b="$tn" -v r="$t2" -v n="$cores" 'BEGIN{
    printf "  --jobs 1 / --jobs %d wall-time ratio: %.2f (ideal %d)\n", n, a/b, n;
    printf "  --runs 2 / --runs 1 wall-time ratio: %.2f (ideal 2)\n", r/a;
}'
