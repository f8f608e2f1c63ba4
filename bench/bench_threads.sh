#!/usr/bin/env bash
# make bench: epar's default threads against one thread on a busy machine (issue 31).
#
#   `epar train --task recall` (a 2-layer dim-64 model, about 100 k parameters) with the default thread count
#   (all cores) against `--jobs 1`, while a busy process (`yes > /dev/null`) is pinned on the last core; and the
#   same default threads with libgomp's own spinning restored (GOMP_SPINCOUNT=300000, libgomp's value when
#   OMP_WAIT_POLICY is unset), which was epar's behaviour before it chose passive waiting (lib/blas.h). The three
#   runs alternate within a round (order rotated every round); each ratio is taken within a round and the median
#   over rounds is printed, with each run's CPU share (process CPU time / (wall time x threads)).
#   The weights' checksum (params_fnv1a in run.json) must be the same in every run: threads never change results.
#
# Environment: EPAR (default ./epar), BENCH_THREADS_ROUNDS (3), BENCH_THREADS_STEPS (the task's 1000 steps),
# BENCH_THREADS_BUSY (1: pin the busy process; 0: none), BENCH_THREADS_SPIN (1: include the spinning run; 0: skip,
# it took minutes on a loaded machine), BENCH_OUT (output/bench). Never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
ROUNDS=${BENCH_THREADS_ROUNDS:-3}
STEPS=${BENCH_THREADS_STEPS:-}
BUSY=${BENCH_THREADS_BUSY:-1}
SPIN=${BENCH_THREADS_SPIN:-1}
OUT=${BENCH_OUT:-output/bench}
[ -x "$EPAR" ] || { echo "bench_threads: $EPAR missing (run make first)"; exit 3; }
ncpu=$(nproc)
mkdir -p "$OUT"
work=$(mktemp -d "${TMPDIR:-/tmp}/epar-bench-threads.XXXXXX")
busy_pid=
cleanup() { [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

echo "== threads on a busy machine: epar train --task recall${STEPS:+ --steps $STEPS}, $ncpu cores =="
echo "  CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$BUSY" = 1 ]; then
    if command -v taskset >/dev/null; then
        taskset -c $((ncpu - 1)) yes > /dev/null &
        busy_pid=$!
        echo "  busy process: yes > /dev/null pinned on core $((ncpu - 1)) (pid $busy_pid)"
    else
        echo "  note: taskset missing (util-linux); no busy process"
    fi
fi

variants="default jobs1"
[ "$SPIN" = 1 ] && variants="$variants spinning"
csv=$OUT/threads.csv
echo "variant,round,threads,wall_s,cpu_s,cpu_share,params_fnv1a" > "$csv.tmp"
run() { # VARIANT ROUND
    local v=$1 r=$2 dir=$work/$1-$2 th=$ncpu
    local -a env=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS) args=()
    case $v in
        jobs1) th=1; args=(--jobs 1) ;;
        spinning) env+=(GOMP_SPINCOUNT=300000) ;;
    esac
    [ -n "$STEPS" ] && args+=(--steps "$STEPS")
    local t
    t=$( { "${env[@]}" /usr/bin/time -f '%e %U %S' "$EPAR" train --task recall --out "$dir" --no-render --quiet \
           "${args[@]}" > /dev/null; } 2>&1 | tail -1)
    local fnv
    fnv=$(grep -o '"params_fnv1a": *"[0-9a-f]*"' "$dir"/train/recall/*/run.json | grep -o '[0-9a-f]\{16\}')
    echo "$t" | awk -v v="$v" -v r="$r" -v th="$th" -v f="$fnv" \
        '{ cpu = $2 + $3; printf "%s,%d,%d,%.3f,%.3f,%.3f,%s\n", v, r, th, $1, cpu, cpu / ($1 * th), f }' >> "$csv.tmp"
    rm -rf "$dir"
}
for r in $(seq 1 "$ROUNDS"); do
    set -- $variants
    n=$#
    for k in $(seq 0 $((n - 1))); do
        i=$(( (k + r - 1) % n + 1 ))
        run "${!i}" "$r"
    done
done
mv "$csv.tmp" "$csv"
awk -F, 'NR > 1 { printf "    round %d  %-9s %d thread(s)  %8.2f s wall  %8.2f s CPU  cpu share %.2f\n", $2, $1, $3, $4, $5, $6 }' "$csv"
awk -F, '
    function med(a, n,    i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
                                    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
    NR > 1 { w[$1 "," $2] = $4; f[$7] = 1; if ($2 > R) R = $2 }
    END {
        for (r = 1; r <= R; r++) { a[r] = w["default," r] / w["jobs1," r]; if (w["spinning," r] > 0) s[r] = w["spinning," r] / w["jobs1," r] }
        printf "  default threads / --jobs 1, wall time: %.2fx (median of %d rounds; done when <= 1)\n", med(a, R), R
        if (length(s) > 0) printf "  spinning threads (libgomp default) / --jobs 1: %.2fx\n", med(s, R)
        n = 0; for (k in f) n++
        printf "  weights identical in every run: %s\n", n == 1 ? "yes" : "NO (" n " checksums)"
    }' "$csv"
echo "  table: $csv"
