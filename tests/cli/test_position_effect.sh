#!/usr/bin/env bash
# epar position-effect: outputs, determinism, parameters that really act, bad input leaves nothing.
. "$(dirname "$0")/lib.sh"
small="--length 24 --hidden 16 --batch 2 --runs 2 --seeds 42,43 --quiet"

out=$T_TMP/run1
expect_exit 0 "small run" -- "$EPAR" position-effect $small --out "$out"
for f in position_effect_matrix attention_weights position_correlation average_attention information_importance \
         position_scores attention_statistics position_effect_distance position_attention; do
    expect_file "$out/position/$f.csv"
    expect_file "$out/position/$f.gp"
    if command -v gnuplot >/dev/null; then expect_file "$out/position/$f.png"; fi
done
for f in summary.csv properties.csv pos_star.csv run.json; do expect_file "$out/position/$f"; done
expect_grep '^query,key,p_effect$' "$out/position/position_effect_matrix.csv"
[ "$(wc -l < "$out/position/position_effect_matrix.csv")" -eq $((24 * 24 + 1)) ] && ok || fail "matrix has L^2 rows"
expect_grep '^mean_attention_weight,0.0416666666667,' "$out/position/summary.csv"
if grep -q ',fail,' "$out/position/properties.csv"; then fail "a Theorem 1 check failed"; else ok; fi
[ -z "$(find "$out" -name '*.tmp*')" ] && ok || fail "temp files left behind"
# a .gp runs on its own from its folder
if command -v gnuplot >/dev/null; then
    rm "$out/position/summary.csv.png" 2>/dev/null
    (cd "$out/position" && rm -f position_scores.png && gnuplot position_scores.gp) && [ -s "$out/position/position_scores.png" ] && ok || fail "gnuplot position_scores.gp from its folder"
    # ... and from a copy of the folder anywhere else (no path back to the source tree or the output root)
    mkdir -p "$T_TMP/elsewhere/a/b" && cp -r "$out/position" "$T_TMP/elsewhere/a/b/" &&
        (cd "$T_TMP/elsewhere/a/b/position" && rm -f ./*.png && for g in ./*.gp; do gnuplot "$g" || exit 1; done) &&
        [ "$(ls "$T_TMP/elsewhere/a/b/position" | grep -c '\.png$')" -eq "$(ls "$T_TMP/elsewhere/a/b/position" | grep -c '\.gp$')" ] && ok ||
        fail "every .gp of position/ renders from a copy of the folder"
fi
if grep -l "^load " "$out"/position/*.gp >/dev/null 2>&1; then fail "a .gp loads another file: $(grep -l '^load ' "$out"/position/*.gp | head -2)"; else ok; fi

# determinism: same seed -> byte-identical CSVs, whatever the thread count
expect_exit 0 "second run, 1 thread" -- "$EPAR" position-effect $small --out "$T_TMP/run2" --jobs 1 --no-render
for f in "$out"/position/*.csv; do
    cmp -s "$f" "$T_TMP/run2/position/$(basename "$f")" && ok || fail "not byte-identical: $(basename "$f")"
done

# gamma really acts (the reference ignores it), and so do form, alpha, beta
expect_exit 0 "gamma 0.5" -- "$EPAR" position-effect $small --gamma 0.5 --out "$T_TMP/g" --no-render
cmp -s "$out/position/position_effect_matrix.csv" "$T_TMP/g/position/position_effect_matrix.csv" && fail "--gamma did not change P" || ok
expect_exit 0 "form basic" -- "$EPAR" position-effect $small --form basic --out "$T_TMP/b" --no-render
expect_grep '^lower_bound,[0-9.e-]+,0,pass' "$T_TMP/b/position/properties.csv"
expect_exit 0 "paper preset" -- "$EPAR" position-effect --preset paper --length 16 --batch 1 --runs 1 --seed 1 --quiet --out "$T_TMP/p" --no-render
expect_grep '"heads": 12' "$T_TMP/p/position/run.json"
expect_grep '"hidden": 768' "$T_TMP/p/position/run.json"

# bad input: usage errors (2), protocol/IO errors (3); nothing written
bad() { # code pattern args...
    local code=$1 pat=$2; shift 2
    rm -rf "$T_TMP/bad"
    expect_exit "$code" "$*" -- "$EPAR" position-effect --quiet --out "$T_TMP/bad" "$@"
    expect_error_line "$pat" "$*"
    expect_empty_dir "$T_TMP/bad/position" "$*"
    [ -z "$(find "$T_TMP/bad" -name '*.tmp*' 2>/dev/null)" ] && ok || fail "temp files after: $*"
}
bad 2 "length must be >= 1" --length 0
bad 2 "length must be >= 1" --length -5
bad 2 "alpha must be a finite number > 0" --alpha 0
bad 2 "beta must be a finite number >= 0" --beta -1
bad 2 "gamma must be a finite number >= 0" --gamma -0.1
bad 2 "invalid value for --alpha: 'nan'" --alpha nan
bad 2 "invalid value for --gamma: 'inf'" --gamma inf
bad 2 "invalid value for --beta: 'abc'" --beta abc
bad 2 "invalid value for --length: '1.5'" --length 1.5
bad 2 "unknown position-effect form 'fancy'" --form fancy
bad 2 "unknown preset 'papr'" --preset papr
bad 2 "heads must divide hidden" --hidden 10 --heads 3
bad 2 "invalid value for --seeds" --seeds 1,,2
bad 2 "invalid value for --seeds" --seeds -1
bad 2 "invalid value for --seed" --seed -3
bad 2 "invalid value for --jobs" --jobs 0
bad 3 "cannot read protocol" --protocol "$T_TMP/none.json"
printf '{"version": 1, "presets": {' > "$T_TMP/trunc.json"
bad 3 "malformed protocol" --protocol "$T_TMP/trunc.json"
printf '{"version": 2, "default_preset": "r", "presets": {"r": {}}, "experiments": {}}' > "$T_TMP/v2.json"
bad 3 "version" --protocol "$T_TMP/v2.json"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"position-effect": {"length": "long"}}}' > "$T_TMP/type.json"
bad 3 '\$.experiments.position-effect.length' --protocol "$T_TMP/type.json"
# output folder that cannot be used
touch "$T_TMP/afile"
expect_exit 3 "out is a regular file" -- "$EPAR" position-effect --quiet --length 8 --hidden 8 --batch 1 --runs 1 --out "$T_TMP/afile"
expect_error_line "cannot use output folder .*afile.: it is not a folder" "out is a regular file"
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$T_TMP/ro"; chmod 500 "$T_TMP/ro"
    expect_exit 3 "read-only out" -- "$EPAR" position-effect --quiet --length 8 --hidden 8 --batch 1 --runs 1 --out "$T_TMP/ro"
fi
expect_exit 4 "size that cannot fit" -- "$EPAR" position-effect --quiet --length 200000 --hidden 8 --batch 64 --runs 1 --seed 1 --out "$T_TMP/big"
expect_error_line "size does not fit" "exit 4 message"
expect_empty_dir "$T_TMP/big/position" "exit 4 leaves nothing"
# a size that passes the check but not the allocator (address space capped at 900 MB: the figures' 488 MB fits, the
# worker's own 488 MB does not): the worker's message, naming what it could not allocate, reaches the user
# (not under AddressSanitizer, whose shadow memory needs more address space than the cap)
if [ -z "${ASAN_OPTIONS:-}" ]; then
    expect_exit 4 "out of memory in a worker" -- bash -c 'ulimit -v 900000 && exec "$0" "$@"' "$EPAR" position-effect \
        --quiet --length 1000 --hidden 8 --batch 64 --runs 1 --seed 1 --jobs 1 --no-render --out "$T_TMP/oom"
    expect_error_line "out of memory allocating position-effect's attention \\(batch x length\\^2\\) \\([0-9.]+ MB\\)" \
        "the worker's allocation named"
    expect_empty_dir "$T_TMP/oom/position" "out of memory leaves nothing"
fi
finish
