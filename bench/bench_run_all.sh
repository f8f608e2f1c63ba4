#!/bin/sh
# epar run-all at the full protocol, numbers only: how long the whole reproduction takes, and how the time
# splits between the experiments, the audit and the CI regression check. Each timing is the best of N
# repetitions (default 3; BENCH_REPS=N); ratios compare timings taken in this same invocation.
# Usage: bench/bench_run_all.sh   (env: EPAR=./epar, BENCH_REPS=3)
set -u
cd "$(dirname "$0")/.." || exit 1
EPAR=${EPAR:-./epar}
REPS=${BENCH_REPS:-3}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/epar-bench.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
[ -x "$EPAR" ] || { echo "bench: build epar first (make)"; exit 1; }

now() { date +%s%N; }
best() { # best wall time in ms over REPS runs of "$@"
    b=""
    i=0
    while [ "$i" -lt "$REPS" ]; do
        t0=$(now)
        "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; return 1; }
        t1=$(now)
        ms=$(( (t1 - t0) / 1000000 ))
        if [ -z "$b" ] || [ "$ms" -lt "$b" ]; then b=$ms; fi
        i=$((i + 1))
    done
    echo "$b"
}

full=$(best "$EPAR" run-all --no-render --no-benchmark -q --out "$OUT/full") || exit 1
audit=$(best "$EPAR" run-all --audit-only -q --out "$OUT/full") || exit 1
check=$(best "$EPAR" run-all --check -q) || exit 1
one=$(best "$EPAR" run-all --no-render --no-benchmark -q --jobs 1 --out "$OUT/one") || exit 1
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }
echo "run-all --no-render (full protocol, all cores): ${full} ms"
echo "run-all --no-render --jobs 1:                   ${one} ms   (1 thread / all cores = $(ratio "$one" "$full"))"
echo "audit alone (--audit-only):                     ${audit} ms   (share of the full run = $(ratio "$audit" "$full"))"
echo "regression check (--check):                     ${check} ms   (check / full run = $(ratio "$check" "$full"))"
