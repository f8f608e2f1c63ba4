#!/usr/bin/env bash
# epar adaptive: files and columns, determinism across --jobs, parameters that really act, bad input leaves nothing.
. "$(dirname "$0")/lib.sh"
small="--length 16 --hidden 16 --batch 2 --runs 2 --seeds 42,43 --grid-length 8 --grid-hidden 8 --grid-batch 1
       --grid-alpha 0.5,1 --grid-beta 1,2 --when-lengths 16,32 --when-hidden 8 --quiet"

expect_exit 0 "help" -- "$EPAR" adaptive --help
expect_grep 'dropout-in-grid' "$T_TMP/out"

out=$T_TMP/run1
expect_exit 0 "small run" -- "$EPAR" adaptive $small --out "$out" --jobs 2
d=$out/adaptive
for f in adaptive_metrics task_types content_types entropy_by_row sensitivity_grid when_to_use attention_weights \
         position_attention task_weights content_importance; do expect_file "$d/$f.csv"; done
expect_file "$d/run.json"
for g in adaptive_summary attention_weights task_weights content_importance attention_entropy task_types content_types \
         position_attention grid_entropy grid_task_weight grid_content_importance when_to_use; do
    expect_file "$d/$g.gp"
    if command -v gnuplot >/dev/null; then expect_file "$d/$g.png"; fi
done
[ -z "$(find "$out" -name '*.tmp*')" ] && ok || fail "temp files left behind"

# columns (a public interface)
expect_grep '^scope,seed,run,attention_entropy_mean,attention_entropy_none_mean,task_weight_mean,task_weight_std,task_weight_min,task_weight_max,content_importance_mean,content_importance_std,content_importance_min,content_importance_max,fusion_weight_mean,content_type_0,content_type_1,content_type_2,content_type_3,content_type_4$' "$d/adaptive_metrics.csv"
expect_grep '^alpha,beta,alpha_index,beta_index,attention_entropy_mean,attention_entropy_sd,entropy_delta_vs_none_mean,' "$d/sensitivity_grid.csv"
expect_grep ',task_weight_mean,task_weight_sd,content_importance_mean,content_importance_sd,' "$d/sensitivity_grid.csv"
expect_grep '^length,condition,form,entropy_mean,entropy_sd,entropy_norm_mean,mean_distance_mean,mean_distance_sd,local_mass_mean,local_mass_sd,consistency_mean,consistency_sd,' "$d/when_to_use.csv"
expect_grep '^task_id,given_count,given_fraction,classifier_count,classifier_fraction$' "$d/task_types.csv"
expect_grep '^content_type,count,fraction$' "$d/content_types.csv"
expect_grep '^seed,run,item,query,entropy,entropy_none$' "$d/entropy_by_row.csv"

# row counts: 2 seeds x 2 runs + 2 seed rows + mean + sd; grid 2x2; when 3 inputs x 3 forms x 2 lengths
[ "$(wc -l < "$d/adaptive_metrics.csv")" -eq 9 ] && ok || fail "adaptive_metrics rows"
[ "$(grep -c '^across_seeds_mean,' "$d/adaptive_metrics.csv")" -eq 1 ] && ok || fail "across-seeds mean row"
[ "$(wc -l < "$d/sensitivity_grid.csv")" -eq 5 ] && ok || fail "grid rows"
[ "$(wc -l < "$d/when_to_use.csv")" -eq 19 ] && ok || fail "when_to_use rows"
[ "$(wc -l < "$d/entropy_by_row.csv")" -eq $((2 * 2 * 2 * 16 + 1)) ] && ok || fail "entropy_by_row rows"
for c in clean shuffled noisy; do for f in none basic enhanced; do
    [ "$(grep -c "^[0-9]*,$c,$f," "$d/when_to_use.csv")" -eq 2 ] && ok || fail "when_to_use has $c/$f at 2 lengths"
done; done
# counts add up: 2 seeds x 2 runs x 2 items task ids; x 16 positions content types
awk -F, 'NR>1 {g+=$2; c+=$4} END {exit !(g==8 && c==8)}' "$d/task_types.csv" && ok || fail "task counts sum to 8"
awk -F, 'NR>1 {n+=$2} END {exit !(n==128)}' "$d/content_types.csv" && ok || fail "content type counts sum to 128"
# n_seeds column and the paired baseline: none - none = 0
awk -F, 'NR>1 && $19!=2 {bad=1} NR>1 && $3=="none" && ($13!=0 || $15!=0 || $17!=0) {bad=1} END {exit bad}' \
    "$d/when_to_use.csv" && ok || fail "when_to_use n_seeds = 2 and zero deltas for form none"
# values in range: entropy <= ln L, task weights and importance in (0,1)
awk -F, 'BEGIN {l = log(16)} NR>1 && $1=="run" && ($4>l+1e-9 || $4<=0 || $8<=0 || $9>=1 || $12<=0 || $13>=1) {bad=1} END {exit bad}' \
    "$d/adaptive_metrics.csv" && ok || fail "adaptive metrics in range"
# grid: task weights do not depend on alpha, beta (one draw per seed shared by the cells)
[ "$(awk -F, 'NR>1 {print $9}' "$d/sensitivity_grid.csv" | sort -u | wc -l)" -eq 1 ] && ok || fail "grid task weight constant over cells"
[ "$(awk -F, 'NR>1 {print $5}' "$d/sensitivity_grid.csv" | sort -u | wc -l)" -eq 4 ] && ok || fail "grid entropy differs between cells"
expect_grep '"dropout_active": false' "$d/run.json"

# determinism: byte-identical CSVs for --jobs 1 and --jobs 2
expect_exit 0 "one thread" -- "$EPAR" adaptive $small --out "$T_TMP/run2" --jobs 1 --no-render
for f in "$d"/*.csv; do
    cmp -s "$f" "$T_TMP/run2/adaptive/$(basename "$f")" && ok || fail "not byte-identical across --jobs: $(basename "$f")"
done

# parameters act: gamma changes the attention; form none equals its own baseline; dropout only touches the grid
expect_exit 0 "gamma 0.5" -- "$EPAR" adaptive $small --gamma 0.5 --out "$T_TMP/g" --no-render
cmp -s "$d/adaptive_metrics.csv" "$T_TMP/g/adaptive/adaptive_metrics.csv" && fail "--gamma did not change the metrics" || ok
expect_exit 0 "form none" -- "$EPAR" adaptive $small --form none --out "$T_TMP/n" --no-render
awk -F, 'NR>1 && $4!=$5 {bad=1} END {exit bad}' "$T_TMP/n/adaptive/adaptive_metrics.csv" && ok || fail "form none: entropy = none baseline"
expect_exit 0 "dropout in grid" -- "$EPAR" adaptive $small --dropout-in-grid --out "$T_TMP/dr" --no-render
cmp -s "$d/adaptive_metrics.csv" "$T_TMP/dr/adaptive/adaptive_metrics.csv" && ok || fail "--dropout-in-grid changed the main experiment"
cmp -s "$d/sensitivity_grid.csv" "$T_TMP/dr/adaptive/sensitivity_grid.csv" && fail "--dropout-in-grid changed nothing" || ok
expect_grep '"dropout_active": true' "$T_TMP/dr/adaptive/run.json"
expect_exit 0 "noise 0" -- "$EPAR" adaptive $small --noise-sd 0 --out "$T_TMP/z" --no-render
awk -F, 'NR>1 && $2=="clean" {c[$1","$3]=$4} NR>1 && $2=="noisy" {n[$1","$3]=$4} END {for (k in c) if (c[k]!=n[k]) exit 1}' \
    "$T_TMP/z/adaptive/when_to_use.csv" && ok || fail "noise sd 0: noisy equals clean"

# bad input: usage errors (2), protocol errors (3); nothing written
bad() { # code pattern args...
    local code=$1 pat=$2; shift 2
    rm -rf "$T_TMP/bad"
    expect_exit "$code" "$*" -- "$EPAR" adaptive --quiet --out "$T_TMP/bad" "$@"
    expect_error_line "$pat" "$*"
    expect_empty_dir "$T_TMP/bad/adaptive" "$*"
    [ -z "$(find "$T_TMP/bad" -name '*.tmp*' 2>/dev/null)" ] && ok || fail "temp files after: $*"
}
bad 2 "invalid value for --when-lengths: '1'" --when-lengths 16,1
bad 2 "invalid value for --when-lengths: '16.5'" --when-lengths 16.5
bad 2 "invalid value for --when-lengths" --when-lengths 16,,32
bad 2 "grid alpha values must be finite numbers > 0" --grid-alpha 1,0
bad 2 "grid beta values must be finite numbers >= 0" --grid-beta -1
bad 2 "content correlation must be in \[0, 1\)" --content-corr 1
bad 2 "noise sd must be a finite number >= 0" --noise-sd -0.5
bad 2 "local window must be >= 0" --local-window -1
bad 2 "invalid value for --grid-runs" --grid-runs 0
bad 2 "grid hidden must be >= 4" --grid-hidden 2
bad 2 "hidden must be >= 4" --hidden 2
bad 2 "length must be >= 1" --length 0
bad 2 "invalid value for --noise-sd: 'x'" --noise-sd x
bad 2 "unknown option '--dropout-in-grids'" --dropout-in-grids
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"adaptive": {"dropout_in_grid": "yes"}}}' > "$T_TMP/p1.json"
bad 3 "dropout_in_grid" --protocol "$T_TMP/p1.json"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"adaptive": {"grid_alfa": [1]}}}' > "$T_TMP/p2.json"
bad 3 'adaptive.grid_alfa' --protocol "$T_TMP/p2.json"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"adaptive": {"when_lengths": [16, 1.5]}}}' > "$T_TMP/p3.json"
bad 3 'when_lengths\[1\]' --protocol "$T_TMP/p3.json"
# many content types: one count column each in adaptive_metrics.csv (the header once stopped at 4096 characters
# while the rows went on), and with one seed the across-seed sd row is nan, not a copy of the mean row
sed 's/"content_types": 5,/"content_types": 300,/' paper_protocol.json > "$T_TMP/ct.json"
expect_exit 0 "content_types 300" -- "$EPAR" adaptive $small --seeds 42 --protocol "$T_TMP/ct.json" --out "$T_TMP/ct"
m=$T_TMP/ct/adaptive/adaptive_metrics.csv
[ "$(head -1 "$m" | tr ',' '\n' | grep -c '^content_type_')" = 300 ] && head -1 "$m" | grep -q ',content_type_299$' &&
    awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad }' "$m" && ok ||
    fail "adaptive_metrics.csv with 300 content types: header or row widths wrong"
grep '^across_seeds_sd,' "$m" | cut -d, -f4- | tr ',' '\n' | grep -v -x -q 'nan' &&
    fail "one seed: across_seeds_sd holds numbers" || ok
expect_exit 4 "size that cannot fit" -- "$EPAR" adaptive --quiet --when-lengths 100000 --seed 1 --out "$T_TMP/big"
expect_error_line "size does not fit" "exit 4 message"
expect_empty_dir "$T_TMP/big/adaptive" "exit 4 leaves nothing"
finish
