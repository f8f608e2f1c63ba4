#!/usr/bin/env bash
# epar optimal-position: outputs and their columns, determinism across --jobs, parameters that act, the
# paired forms, bad input leaves nothing.
. "$(dirname "$0")/lib.sh"
small="--length 24 --hidden 16 --batch 2 --runs 4 --seeds 42,43 --quiet"

out=$T_TMP/run1
expect_exit 0 "small run" -- "$EPAR" optimal-position $small --out "$out" --jobs 2
d=$out/optimal
for f in consistency_by_seed.csv consistency.csv forms_comparison.csv forms_paired_difference.csv \
         verification_summary.csv radar.csv verification_report.txt run.json; do expect_file "$d/$f"; done
for g in verification_results consistency_verification ranking_correlation position_score_analysis \
         standard_deviation_analysis comprehensive_performance_score information_type_radar_comparison \
         consistency_vs_ranking_correlation forms_comparison; do
    expect_file "$d/$g.gp"
    if command -v gnuplot >/dev/null; then expect_file "$d/$g.png"; fi
done
# the columns the audit reads, exactly
expect_grep '^seed,info_type,consistency,consistency_std,proximity,proximity_std,score_similarity,score_similarity_std,ranking_correlation,ranking_correlation_std,position_score_mean,runs,consistency_se_run$' "$d/consistency_by_seed.csv"
expect_grep '^info_type,consistency,proximity,score_similarity,ranking_correlation,position_score_mean,consistency_sd,proximity_sd,score_similarity_sd,ranking_correlation_sd,seeds,runs,consistency_se_run,proximity_se_run,score_similarity_se_run,ranking_correlation_se_run$' "$d/consistency.csv"
expect_grep '^form,info_type,consistency,consistency_sd,ranking_correlation,ranking_correlation_sd,seeds,consistency_se_run,ranking_correlation_se_run$' "$d/forms_comparison.csv"
[ "$(wc -l < "$d/consistency_by_seed.csv")" -eq 11 ] && ok || fail "2 seeds x 5 types rows in consistency_by_seed.csv"
[ "$(wc -l < "$d/consistency.csv")" -eq 6 ] && ok || fail "5 type rows in consistency.csv"
[ "$(wc -l < "$d/forms_comparison.csv")" -eq 16 ] && ok || fail "3 forms x 5 types rows in forms_comparison.csv"
expect_grep '^structured,.*,2,4,[^,]+,[^,]+,[^,]+,[^,]+$' "$d/consistency.csv"
for t in random structured sparse dense clustered; do expect_grep "^Information Type: $t$" "$d/verification_report.txt"; done
expect_grep 'Verification Result: (Excellent|Good|Needs Improvement)' "$d/verification_report.txt"
expect_grep 'is argmax_i I_i' "$d/verification_report.txt"
# values in range: consistency in [0,1], ranking in [-1,1]
awk -F, 'NR>1 && ($3<0 || $3>1 || $9<-1 || $9>1) {bad=1} END {exit bad}' "$d/consistency_by_seed.csv" && ok || fail "values out of range"
# the enhanced rows of the paired comparison are the main result (same weights, data, importance)
c_main=$(awk -F, '$1=="clustered"{print $2}' "$d/consistency.csv")
c_enh=$(awk -F, '$1=="enhanced" && $2=="clustered"{print $3}' "$d/forms_comparison.csv")
[ -n "$c_main" ] && [ "$c_main" = "$c_enh" ] && ok || fail "main (enhanced) consistency '$c_main' != paired enhanced '$c_enh'"
[ -z "$(find "$out" -name '*.tmp*')" ] && ok || fail "temp files left behind"
# a .gp runs on its own from its folder
if command -v gnuplot >/dev/null; then
    (cd "$d" && rm -f forms_comparison.png && gnuplot forms_comparison.gp) && [ -s "$d/forms_comparison.png" ] && ok || fail "gnuplot forms_comparison.gp from its folder"
fi

# determinism: byte-identical CSVs and report whatever the thread count
expect_exit 0 "1 thread" -- "$EPAR" optimal-position $small --out "$T_TMP/run2" --jobs 1 --no-render
for f in "$d"/*.csv "$d"/verification_report.txt; do
    cmp -s "$f" "$T_TMP/run2/optimal/$(basename "$f")" && ok || fail "not byte-identical across --jobs: $(basename "$f")"
done
# one type alone gives the same numbers for that type (its streams do not depend on the list)
expect_exit 0 "structured alone" -- "$EPAR" optimal-position $small --types structured --out "$T_TMP/one" --no-render
[ "$(grep '^42,structured,' "$d/consistency_by_seed.csv")" = "$(grep '^42,structured,' "$T_TMP/one/optimal/consistency_by_seed.csv")" ] && ok || fail "structured alone differs"

# parameters act: gamma changes the enhanced result, not basic/none; form picks the main result
expect_exit 0 "gamma 0.5" -- "$EPAR" optimal-position $small --gamma 0.5 --out "$T_TMP/g" --no-render
cmp -s "$d/consistency.csv" "$T_TMP/g/optimal/consistency.csv" && fail "--gamma did not change the result" || ok
[ "$(grep '^basic,' "$d/forms_comparison.csv")" = "$(grep '^basic,' "$T_TMP/g/optimal/forms_comparison.csv")" ] && ok || fail "gamma changed the basic form"
expect_exit 0 "form basic" -- "$EPAR" optimal-position $small --form basic --out "$T_TMP/b" --no-render
c_b=$(awk -F, '$1=="random"{print $2}' "$T_TMP/b/optimal/consistency.csv")
c_pb=$(awk -F, '$1=="basic" && $2=="random"{print $3}' "$d/forms_comparison.csv")
[ "$c_b" = "$c_pb" ] && ok || fail "--form basic main result '$c_b' != paired basic '$c_pb'"
expect_exit 0 "importance norm" -- "$EPAR" optimal-position $small --importance norm --out "$T_TMP/n" --no-render
expect_grep '^norm,' "$T_TMP/n/optimal/consistency.csv"

# several heads (head-averaged attention, the paper preset's path)
expect_exit 0 "two heads" -- "$EPAR" optimal-position $small --heads 2 --out "$T_TMP/h" --no-render
c_h=$(awk -F, '$1=="dense"{print $2}' "$T_TMP/h/optimal/consistency.csv")
c_he=$(awk -F, '$1=="enhanced" && $2=="dense"{print $3}' "$T_TMP/h/optimal/forms_comparison.csv")
[ -n "$c_h" ] && [ "$c_h" = "$c_he" ] && [ "$c_h" != "$(awk -F, '$1=="dense"{print $2}' "$d/consistency.csv")" ] && ok || fail "--heads 2 path"

# a size that cannot fit: exit 4, nothing written
rm -rf "$T_TMP/big"
expect_exit 4 "size that cannot fit" -- "$EPAR" optimal-position --quiet --length 100000 --hidden 8 --runs 1 --seed 1 --out "$T_TMP/big"
expect_error_line "size does not fit" "exit 4 message"
expect_empty_dir "$T_TMP/big" "exit 4 leaves nothing"

# bad input: usage errors (2) / protocol errors (3); nothing written
bad() { # code pattern args...
    local code=$1 pat=$2; shift 2
    rm -rf "$T_TMP/bad"
    expect_exit "$code" "$*" -- "$EPAR" optimal-position --quiet --out "$T_TMP/bad" "$@"
    expect_error_line "$pat" "$*"
    expect_empty_dir "$T_TMP/bad" "$*"
}
bad 2 "runs must be >= 1" --runs 0
bad 2 "batch must be >= 1" --batch 0
bad 2 "unknown importance type 'fancy'" --types random,fancy
bad 2 "empty list of importance types" --types ""
bad 2 "empty or overlong item" --types random,,dense
bad 2 "listed twice" --types dense,dense
bad 2 "invalid value for --importance: 'l2'" --importance l2
bad 2 "cannot be combined" --importance norm --types random
bad 2 "length must be >= 1" --length 0
bad 2 "gamma must be a finite number >= 0" --gamma -1
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"optimal-position": {"types": "random,nope"}}}' > "$T_TMP/t.json"
bad 3 '\$.experiments.optimal-position.types' --protocol "$T_TMP/t.json"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"optimal-position": {"typez": "random"}}}' > "$T_TMP/k.json"
bad 3 'optimal-position.typez' --protocol "$T_TMP/k.json"
finish
