#!/usr/bin/env bash
# The test runner: every unit program in $TESTBIN, then every CLI test script in tests/cli/.
# Prints "== <program>" when each starts, one line per failing check, a line per program, and ends with
# "N passed, N failed".
# Usage: tests/run.sh [unit|cli]   (env: EPAR=path/to/epar, TESTBIN=dir of unit programs, VALGRIND=1)
set -u
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
TESTBIN=${TESTBIN:-build/tests}
export EPAR EPAR_ROOT=$PWD
what=${1:-all}
passed=0; failed=0
add() { passed=$((passed + $1)); failed=$((failed + $2)); }

run_counted() { # prog args... ; parses "# name: N passed, M failed"
    local out rc line p f
    echo "== ${*: -1}"   # which program or script runs now: a long one is visible while it runs
    out=$("$@" 2>&1); rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^# .*: [0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -z "$line" ]; then
        printf '%s\n' "$out" | tail -20
        echo "not ok $* (crashed or printed no summary, exit $rc)"
        add 0 1; return
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok $* (exit $rc)"; fi
    printf '%s\n' "$out" | grep -E '^(not ok|# pending)' || true
    echo "$line"
    add "$p" "$f"
}

if [ "$what" = all ] || [ "$what" = unit ]; then
    for t in "$TESTBIN"/test_*; do
        [ -x "$t" ] || continue
        if [ "${VALGRIND:-0}" = 1 ]; then
            run_counted valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$t"
        else
            run_counted "$t"
        fi
    done
fi
if [ "$what" = all ] || [ "$what" = cli ]; then
    for t in tests/cli/test_*.sh; do
        [ -f "$t" ] || continue
        run_counted bash "$t"
    done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
