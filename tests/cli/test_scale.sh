#!/usr/bin/env bash
# epar scale (small L only): outputs, both paths agree on pos*, determinism across --jobs, exit 4 for a
# materialised size that cannot fit, bad values exit 2 with nothing written.
. "$(dirname "$0")/lib.sh"
small="--length 300 --hidden 16 --repeats 1 --quiet"

out=$T_TMP/m
expect_exit 0 "materialized" -- "$EPAR" scale $small --path materialized --out "$out"
expect_file "$out/scale/scale.csv"
expect_file "$out/scale/summary.csv"
expect_file "$out/scale/run.json"
expect_grep '^length,hidden,path,threads,seconds,gflops,peak_rss_mb,pos_star$' "$out/scale/scale.csv"
expect_grep '^300,16,materialized,[0-9]+,[0-9.e-]+,[0-9.e+-]+,[0-9.e+-]+,[0-9]+$' "$out/scale/scale.csv"
[ "$(wc -l < "$out/scale/scale.csv")" -eq 2 ] && ok || fail "scale.csv has one row"
expect_grep '"path": "materialized"' "$out/scale/run.json"
[ -z "$(find "$T_TMP" -name '*.tmp*')" ] && ok || fail "temp files left behind"

expect_exit 0 "streaming, 2 threads" -- "$EPAR" scale $small --path streaming --jobs 2 --out "$T_TMP/s2"
expect_grep '^300,16,streaming,2,' "$T_TMP/s2/scale/scale.csv"
pos() { tail -n 1 "$1/scale/scale.csv" | cut -d, -f8; }
[ "$(pos "$out")" = "$(pos "$T_TMP/s2")" ] && ok || fail "pos* differs between paths: $(pos "$out") vs $(pos "$T_TMP/s2")"
# the other metrics agree to float precision
ent() { grep '^mean_entropy,' "$1/scale/summary.csv" | cut -d, -f2; }
awk -v a="$(ent "$out")" -v b="$(ent "$T_TMP/s2")" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5) }' \
    && ok || fail "mean entropy differs between paths: $(ent "$out") vs $(ent "$T_TMP/s2")"
# determinism: the streaming metrics are byte-identical with 1 thread (timings aside)
expect_exit 0 "streaming, 1 thread" -- "$EPAR" scale $small --path streaming --jobs 1 --out "$T_TMP/s1"
strip() { grep -v -E '^(seconds_|cpu_seconds|repeats)' "$1/scale/summary.csv"; }
[ "$(strip "$T_TMP/s1")" = "$(strip "$T_TMP/s2")" ] && ok || fail "streaming summary depends on --jobs"
# auto picks materialized at small L and streaming above the threshold; mechanism none changes the result
expect_exit 0 "auto" -- "$EPAR" scale $small --out "$T_TMP/a"
expect_grep ',materialized,' "$T_TMP/a/scale/scale.csv"
expect_exit 0 "auto above threshold" -- "$EPAR" scale $small --materialized-max-length 100 --out "$T_TMP/a2"
expect_grep ',streaming,' "$T_TMP/a2/scale/scale.csv"
expect_exit 0 "mechanism none" -- "$EPAR" scale $small --mechanism none --out "$T_TMP/n"
[ "$(ent "$T_TMP/n")" != "$(ent "$T_TMP/a")" ] && ok || fail "--mechanism none gave the EPAR result"
# the paper preset analyses head 0 of 12 heads of 64: d = 64 of hidden 768
expect_exit 0 "paper preset" -- "$EPAR" scale --preset paper --length 64 --repeats 1 --quiet --out "$T_TMP/p"
expect_grep '^64,768,materialized,' "$T_TMP/p/scale/scale.csv"
expect_grep '^head_dim,64,' "$T_TMP/p/scale/summary.csv"
# the BLAS kernel: run.json and summary.csv record the kernel the run used, which is the one `epar --version`
# reports for the same environment (or the AVX-512 kernel it says epar scale re-executes with); a kernel set
# by OPENBLAS_CORETYPE is kept, never replaced
want_core() { # the kernel epar scale should run with, from `epar --version` in the current environment
    "$EPAR" --version | sed -n -E 's/^OpenBLAS .*\(kernel ([A-Za-z0-9]+)(; epar scale re-executes with ([A-Za-z0-9]+).*)?\)$/\1 \3/p' |
        awk '{ print $NF }'
}
core_json() { sed -n -E 's/^ *"blas_core": "([^"]*)",?$/\1/p' "$1/scale/run.json"; }
core_csv() { grep '^blas_core,' "$1/scale/summary.csv" | cut -d, -f2; }
w=$(want_core)
[ -n "$w" ] && ok || fail "no kernel in epar --version: $("$EPAR" --version | grep OpenBLAS)"
[ "$(core_json "$out")" = "$w" ] && ok || fail "run.json blas_core '$(core_json "$out")', epar --version says '$w'"
[ "$(core_csv "$out")" = "$w" ] && ok || fail "summary.csv blas_core '$(core_csv "$out")', epar --version says '$w'"
cores="Haswell"
grep -q -w avx512f /proc/cpuinfo && cores="$cores SkylakeX Cooperlake"
for c in $cores; do
    expect_exit 0 "OPENBLAS_CORETYPE=$c" -- env OPENBLAS_CORETYPE=$c "$EPAR" scale $small --out "$T_TMP/core-$c"
    w=$(OPENBLAS_CORETYPE=$c want_core)
    [ "$(core_json "$T_TMP/core-$c")" = "$w" ] && [ "$(core_csv "$T_TMP/core-$c")" = "$w" ] && ok ||
        fail "OPENBLAS_CORETYPE=$c: run.json '$(core_json "$T_TMP/core-$c")', summary.csv '$(core_csv "$T_TMP/core-$c")', epar --version '$w'"
    expect_grep "\"blas_core_source\": \"set by OPENBLAS_CORETYPE=$c\"" "$T_TMP/core-$c/scale/run.json"
done
expect_exit 0 "help" -- "$EPAR" scale --help
expect_grep 'mechanism' "$T_TMP/out"

bad() { # code pattern args...
    local code=$1 pat=$2; shift 2
    rm -rf "$T_TMP/bad"
    expect_exit "$code" "$*" -- "$EPAR" scale --quiet --repeats 1 --out "$T_TMP/bad" "$@"
    expect_error_line "$pat" "$*"
    expect_empty_dir "$T_TMP/bad" "$*"
}
# a materialised L x L matrix of 2^40 doubles cannot fit: exit 4 and a hint to stream
bad 4 "materialized path at length 1048576 needs" --length 1048576 --hidden 8 --path materialized
grep -q '^hint: .*--path streaming' "$T_TMP/err" && ok || fail "no hint to use the streaming path"
bad 2 "length must be >= 1" --length 0
bad 2 "hidden must be >= 1" --hidden -3
bad 2 "invalid value for --length: 'many'" --length many
bad 2 "unknown mechanism 'alibi'" --mechanism alibi
bad 2 "unknown analysis path 'fast'" --path fast
bad 2 "invalid value for --repeats: '0'" --repeats 0
bad 2 "invalid value for --jobs: '0'" --jobs 0
bad 2 "temperature must be a finite number > 0" --temperature 0
bad 2 "gamma must be a finite number >= 0" --gamma -1
# protocol errors (exit 3): an unknown key and a bad mechanism in experiments.scale; nothing written
sed 's/"materialized_max_length": 2048/"materialized_max_lenght": 2048/' paper_protocol.json > "$T_TMP/typo.json"
bad 3 "materialized_max_lenght" --protocol "$T_TMP/typo.json"
sed 's/"mechanism": "epar-enhanced"/"mechanism": "alibi"/' paper_protocol.json > "$T_TMP/mech.json"
bad 3 "unknown mechanism 'alibi'" --protocol "$T_TMP/mech.json"
finish
