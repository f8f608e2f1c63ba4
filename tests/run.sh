#!/usr/bin/env bash
# The test runner: every unit program in $TESTBIN and every CLI test script in tests/cli/, TEST_JOBS of them at
# a time (default: the number of CPUs, at most 2; 1 under VALGRIND=1). Prints "== <program>" when each starts and,
# when it ends, its time, one line per failing check and its "# name: N passed, M failed" line; ends with
# "N passed, N failed". The programs are independent (each CLI script works in its own mktemp folder, each unit
# program in its own), so their results do not depend on the order or on what runs beside them.
# Usage: tests/run.sh [unit|cli]   (env: EPAR=path/to/epar, TESTBIN=dir of unit programs, VALGRIND=1, TEST_JOBS=N)
set -u
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
TESTBIN=${TESTBIN:-build/tests}
export EPAR EPAR_ROOT=$PWD
what=${1:-all}
passed=0; failed=0
add() { passed=$((passed + $1)); failed=$((failed + $2)); }

# the result of one program, from its output in file $1 and exit code $2: its failing lines and summary line
report() { # out-file rc name seconds
    local out=$1 rc=$2 name=$3 secs=$4 line p f
    echo "-- $name ($secs s)"
    line=$(grep -E '^# .*: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
    if [ -z "$line" ]; then
        tail -20 "$out"
        echo "not ok $name (crashed or printed no summary, exit $rc)"
        add 0 1; return
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok $name (exit $rc)"; fi
    grep -E '^(not ok|# pending)' "$out" || true
    echo "$line"
    add "$p" "$f"
}

# the programs, the longest first (measured: run-all's two tests are a third of the suite), so that the last one to
# start is a short one
progs=()
if [ "$what" = all ] || [ "$what" = cli ]; then
    for t in tests/cli/test_run_all.sh tests/cli/test_run_all_check.sh tests/cli/test_blas_kernels.sh \
             tests/cli/test_figures.sh tests/cli/test_train.sh tests/cli/test_*.sh; do
        [ -f "$t" ] && [[ " ${progs[*]} " != *" $t "* ]] && progs+=("$t")
    done
fi
if [ "$what" = all ] || [ "$what" = unit ]; then
    for t in "$TESTBIN"/test_*; do [ -x "$t" ] && progs+=("$t"); done
fi
cpus=$(nproc 2>/dev/null || echo 1)
njobs=${TEST_JOBS:-$((cpus < 2 ? cpus : 2))}
[ "${VALGRIND:-0}" = 1 ] && njobs=${TEST_JOBS:-1}
[[ "$njobs" =~ ^[1-9][0-9]*$ ]] || { echo "tests/run.sh: TEST_JOBS must be a positive integer, not '$njobs'" >&2; exit 2; }
outs=$(mktemp -d "${TMPDIR:-/tmp}/epar-run.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$outs"' EXIT
declare -A name_of start_of out_of
running=0 n=0
reap() { # wait for one program to end and report it
    local pid rc
    wait -n -p pid; rc=$?
    report "${out_of[$pid]}" "$rc" "${name_of[$pid]}" $((SECONDS - ${start_of[$pid]}))
    running=$((running - 1))
}
for t in "${progs[@]}"; do
    [ "$running" -ge "$njobs" ] && reap
    echo "== $t"   # which program runs now: a long one is visible while it runs
    if [[ "$t" == *.sh ]]; then cmd=(bash "$t")
    elif [ "${VALGRIND:-0}" = 1 ]; then cmd=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$t")
    else cmd=("$t"); fi
    n=$((n + 1))
    "${cmd[@]}" >"$outs/$n" 2>&1 &
    pid=$!
    name_of[$pid]=$t; start_of[$pid]=$SECONDS; out_of[$pid]=$outs/$n
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do reap; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
