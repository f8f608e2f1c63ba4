#!/usr/bin/env bash
# Benchmark of `epar optimal-position`: the default protocol (5 seeds x 5 types x 50 runs, with the paired
# basic/enhanced/none forms), compute only (--no-render), best of N runs.
# Reported: wall and CPU seconds with one thread and with the default thread count, and their ratio, both
# measured in this invocation (the machine is shared: compare ratios, not absolute times between runs).
# Usage: bench/bench_optimal.sh [extra epar options]    env: EPAR (default ./epar), N (default 5)
set -eu
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
N=${N:-5}
[ -x "$EPAR" ] || { echo "bench/bench_optimal.sh: build epar first (make)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/epar-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# best_of ARGS...: prints "<best wall> <cpu of that run>" over N runs
best_of() {
    local best="" line
    for _ in $(seq "$N"); do
        line=$( { TIMEFORMAT='%R %U %S'; time "$EPAR" optimal-position --no-render --quiet --out "$tmp" "$@" >/dev/null; } 2>&1 )
        best=$(printf '%s\n%s\n' "$best" "$line" | awk 'NF==3 {w=$1; c=$2+$3; if (b=="" || w<b) {b=w; bc=c}} END {printf "%.3f %.3f", b, bc}')
    done
    echo "$best"
}

one=$(best_of --jobs 1 "$@")
all=$(best_of "$@")
threads=$(nproc)
echo "optimal-position, default protocol (5 seeds x 5 types x 50 runs x 3 paired forms), best of $N, --no-render"
printf '  %-22s wall %6s s   cpu %6s s\n' "--jobs 1" ${one}
printf '  %-22s wall %6s s   cpu %6s s\n' "default ($threads threads)" ${all}
echo "$one $all" | awk '{printf "  speed-up (wall, jobs 1 / default): %.2fx\n", $1 / $3}'
# the result does not depend on the thread count
"$EPAR" optimal-position --no-render --quiet --out "$tmp/a" --jobs 1 "$@"
"$EPAR" optimal-position --no-render --quiet --out "$tmp/b" "$@"
if cmp -s "$tmp/a/optimal/consistency_by_seed.csv" "$tmp/b/optimal/consistency_by_seed.csv"; then
    echo "  results byte-identical for --jobs 1 and default"
else
    echo "  ERROR: results differ between --jobs 1 and default" >&2; exit 1
fi
