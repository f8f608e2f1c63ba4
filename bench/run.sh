#!/bin/sh
# Runs every benchmark script bench/bench_*.sh (make bench). Benchmarks report ratios measured in one
# invocation (the machine is shared: absolute times are noisy); nothing here is part of `make test`.
cd "$(dirname "$0")/.." || exit 1
status=0
for b in bench/bench_*.sh; do
    [ -f "$b" ] || continue
    echo "== $b"
    bash "$b" || status=1
done
exit $status
