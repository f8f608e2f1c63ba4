#!/usr/bin/env bash
# Run the libFuzzer harnesses built by `make fuzz`: each for $1 seconds (default 60), niced, starting
# from the seed corpus tests/fuzz/<name>/ (read only) and a working corpus build-fuzz/corpus/<name>/.
# A crash, leak or sanitizer report stops the fuzzer, leaves build-fuzz/crash-<name>-* and fails this
# script; copy the input into tests/fuzz/regress/<name>/ so tests/cli/test_fuzz_regress.sh replays it.
# Usage: tests/fuzz/run.sh [SECONDS] [NAME ...]   (default: every tests/fuzz/fuzz_NAME.c)
set -u
cd "$(dirname "$0")/../.."
secs=${1:-60}; shift || true
names=${*:-$(ls tests/fuzz/fuzz_*.c | sed 's|.*/fuzz_||; s|\.c$||')}
bad=0
for n in $names; do
    mkdir -p "build-fuzz/corpus/$n"
    log="build-fuzz/fuzz_$n.log"
    echo "fuzz: $n for ${secs}s (log $log)"
    dict=(); [ -f "tests/fuzz/$n.dict" ] && dict=(-dict="tests/fuzz/$n.dict")
    nice -n 10 "build-fuzz/fuzz_$n" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
        -print_final_stats=1 "${dict[@]}" -artifact_prefix="build-fuzz/crash-$n-" \
        "build-fuzz/corpus/$n" "tests/fuzz/$n" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    secs_done=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    echo "fuzz: $n exit $rc, ${runs:-?} executions (${secs_done:-?}/s), corpus $(ls "build-fuzz/corpus/$n" | wc -l) files"
    if [ "$rc" -ne 0 ]; then bad=1; grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5; fi
done
exit $bad
