#!/usr/bin/env bash
# epar benchmark on the smoke budget, trimmed to a tiny grid (3 tasks x 3 mechanisms x 2 seeds + the cost cell):
# outputs and columns, parameter counts within the tolerance, --jobs 1 == --jobs 2, a rerun redoes nothing,
# --shard 1/2 + 2/2 + --merge == one process (byte for byte, the wall-clock cost.csv and cost.png aside), a merge
# with a shard missing writes no tables, bad options exit 2 with nothing written, and under mpirun (when epar is
# built with MPI=1 and Open MPI is installed) 2 ranks give the same tables.
. "$(dirname "$0")/lib.sh"
grid="--budget smoke --tasks recall,needle,set --mechanisms none,learned-ape,epar-enhanced --seeds 42,43 --quiet --no-render"
# every table that does not hold wall-clock numbers, and the numbers of every cell
tables() {
    local b=$1/benchmark
    for f in main_table.csv main_table.md when_to_use.csv extrapolation.csv distance.csv params.csv retrieval.csv pairs.csv head_masking.csv boost.csv; do
        echo "== $f"; cat "$b/$f"
    done
    for c in $(cd "$b" && find cells -name cell.json ! -path '*cost*' | sort); do
        echo "== $c"; grep -v -E '"(seconds|train_step_seconds|cpu_seconds)"' "$b/$c"
        cut -d, -f1-7 "$b/${c%cell.json}learning_curve.csv"
    done
    grep -v -E '"(mode|jobs)"' "$b/run.json"
}

# ---- one process, 2 threads: files, columns, the parameter check
a=$T_TMP/a
expect_exit 0 "smoke grid, --jobs 2" -- "$EPAR" benchmark $grid --jobs 2 --out "$a"
b=$a/benchmark
for f in main_table.csv main_table.md when_to_use.csv when_to_use.gp extrapolation.csv distance.csv distance.gp \
         params.csv cost.csv cost.gp comparisons.csv sanity.csv steps_to_learn.csv steps_to_learn.gp run.json curves_recall.gp cells/recall/epar-enhanced/seed-43/cell.json \
         cells/recall/epar-enhanced/seed-43/learning_curve.csv cells/cost/cell.json; do expect_file "$b/$f"; done
expect_grep '^task,paper,condition,length,metric,higher_is_better,seeds,none_mean,none_sd,learned-ape_mean,learned-ape_sd,epar-enhanced_mean,epar-enhanced_sd,best_baseline,best_baseline_mean,best_baseline_sd,chance,chance_se,learned,baselines,basic_vs_baselines_min_rel,basic_vs_baselines_min_lo,basic_vs_baselines_min_hi,basic_vs_baselines_holm_p,basic_vs_baselines_nonsup,basic_beats,basic_beaten_holm,basic_no_spread,basic_mde,enhanced_vs_baselines_min_rel,enhanced_vs_baselines_min_lo,enhanced_vs_baselines_min_hi,enhanced_vs_baselines_holm_p,enhanced_vs_baselines_nonsup,enhanced_beats,enhanced_beaten_holm,enhanced_no_spread,enhanced_mde,basic_vs_best_rel' "$b/main_table.csv"
# the figures render even where no task is learned (at the smoke budget every steps_to_learn is nan): a rerun of a
# copy, its cells reused
if command -v gnuplot >/dev/null; then
    cp -r "$a" "$T_TMP/rendered"
    expect_exit 0 "the smoke grid rendered" -- "$EPAR" benchmark ${grid/ --no-render/} --jobs 2 --out "$T_TMP/rendered"
    for f in steps_to_learn.png when_to_use.png cost.png curves_recall.png; do expect_file "$T_TMP/rendered/benchmark/$f"; done
fi
# EPAR against each baseline (pre-registered): 3 tasks x enhanced x 2 baselines (basic is not in this grid)
expect_grep '^task,epar,baseline,seeds,rel,rel_sd,lo,hi,t,p,p_holm,mde,better$' "$b/comparisons.csv"
[ "$(grep -c '^[a-z-]*,epar-enhanced,\(none\|learned-ape\),2,' "$b/comparisons.csv")" -eq 6 ] && ok || fail "comparisons: one row per task and baseline"
# each row: lo <= rel <= hi when defined, p and its Holm adjustment in [0, 1] with p <= p_holm, better one of the words
awk -F, 'NR > 1 { if ($7 != "nan" && !($7 <= $5 && $5 <= $8)) bad = 1;
                  if ($10 != "nan" && !($10 >= 0 && $10 <= 1 && $11 >= $10 && $11 <= 1)) bad = 1;
                  if ($13 != "" && $13 != "epar" && $13 != "baseline") bad = 1 } END { exit bad }' "$b/comparisons.csv" &&
    ok || fail "comparisons: intervals, p and Holm p consistent"
expect_grep '^task,mechanism,steps,seeds,learned_seeds,steps_to_learn,steps_to_learn_sd,tokens_to_learn$' "$b/steps_to_learn.csv"
expect_grep '^task,mechanism,mean,chance,chance_se,z_vs_chance,rel_vs_chance,learned,margin,meets_margin$' "$b/sanity.csv"
expect_grep '^mechanism,task,length,batch,params,step_ms,step_ms_sd,tokens_per_s,peak_mb,attention_share,overhead_vs_none,overhead_vs_none_sd,overhead_vs_none_hw,overhead_vs_basic,overhead_vs_basic_sd,overhead_vs_basic_hw,repeats,repeats_needed,overhead_vs_none_lo,overhead_vs_none_hi,overhead_vs_basic_lo,overhead_vs_basic_hi,pairs_vs_basic,steps,generations$' "$b/cost.csv"
# the cost cell ran its blocks (the smoke budget: 12): a pair of enhanced and none (deciding) in each, one of
# learned-ape and none (the only one in turn) in every other, each pair its own two steps, so none took 18 steps;
# a block that would have put none twice in a row (a pair's order alternates) got a step of learned-ape in between
# (a spacer: 6 more steps); the deciding models were set up afresh every 3 blocks (4 generations); every overhead in
# its interval (across the 4 generations' medians) and an attention share in (0, 1); no basic: no overhead over it
awk -F, 'NR > 1 { n[$1] = $17; s[$1] = $24; if ($1 != "none" && $25 != 4) bad = 1; if (!($10 > 0 && $10 < 1) || $14 != "nan" || $23 != "nan") bad = 1
                  if ($1 != "none" && !($19 <= $11 && $11 <= $20 && ($13 - ($20 - $19) / 2) ^ 2 < 1e-18)) bad = 1 }
         END { exit bad || n["none"] != "nan" || n["epar-enhanced"] != 12 || n["learned-ape"] != 6 ||
                    s["none"] != 18 || s["epar-enhanced"] != 12 || s["learned-ape"] != 12 }' "$b/cost.csv" &&
    ok || fail "cost: pairs, steps, intervals and attention share"
expect_grep '"clock": "thread CPU time"' "$b/cells/cost/cell.json"
# its pairs: enhanced against none decides (a cost claim reads it), learned-ape against none does not
tr -d ' \n' < "$b/cells/cost/cell.json" | grep -q '"mechanism":"epar-enhanced","against":"none","decides":true,' &&
    tr -d ' \n' < "$b/cells/cost/cell.json" | grep -q '"mechanism":"learned-ape","against":"none","decides":false,' &&
    ok || fail "cost cell: its pairs and which decide"
expect_grep '"blocks": 12' "$b/cells/cost/cell.json"
# learned-ape's model, set up once, takes an untimed step before each of its 6 turns; the fresh models none
python3 -c 'import json, sys; m = {x["mechanism"]: x["warm_steps"] for x in json.load(open(sys.argv[1]))["mechanisms"]}
sys.exit(m != {"none": 0, "learned-ape": 6, "epar-enhanced": 0})' "$b/cells/cost/cell.json" &&
    ok || fail "cost cell: a warm-up step before each turn of a model set up once"
expect_grep '"generations": 4' "$b/cells/cost/cell.json"
expect_grep '^recall,SQuAD 2.0 F1 \(retrieval QA\),short,40,curve:accuracy,1,2,' "$b/main_table.csv"
expect_grep '^needle,' "$b/main_table.csv"
[ "$(wc -l < "$b/main_table.csv")" -eq 4 ] && ok || fail "main table: a header and 3 task rows"
# the paired test: with 2 seeds every comparison of enhanced with the best baseline has a p in [0, 1], or nan when
# the differences have no spread (no test then)
awk -F, -v c="$(head -1 "$b/main_table.csv" | tr ',' '\n' | grep -n '^enhanced_vs_best_p$' | cut -d: -f1)" \
    'NR > 1 && !($c == "nan" || ($c >= 0 && $c <= 1)) { bad = 1 } END { exit bad }' "$b/main_table.csv" && ok || fail "p-values in [0, 1]"
# parameter counts: learned-ape has a smaller MLP and every count is within the 1 % tolerance of none's
awk -F, 'NR > 1 && $6 != 1 { bad = 1 } END { exit bad }' "$b/params.csv" && ok || fail "a parameter count beyond the tolerance"
awk -F, 'NR > 1 && $2 == "learned-ape" && $4 >= 64 { bad = 1 } END { exit bad }' "$b/params.csv" && ok || fail "learned-ape's MLP is narrowed"
# chance: the best constant answer on the cell's evaluation items (an accuracy in (0, 1], se > 0), and how many of
# the 3 mechanisms beat it by 3 se (an integer 0..3); per condition the count of learned tasks
col() { head -1 "$b/main_table.csv" | tr ',' '\n' | grep -n "^$1\$" | cut -d: -f1; }
awk -F, -v c="$(col chance)" -v s="$(col chance_se)" -v l="$(col learned)" \
    'NR > 1 && !($c > 0 && $c <= 1 && $s > 0 && $s < 1 && $l == int($l) && $l >= 0 && $l <= 3) { bad = 1 } END { exit bad || NR != 4 }' \
    "$b/main_table.csv" && ok || fail "chance, chance_se, learned of every task"
expect_grep '"chance": 0\.[0-9]+' "$b/cells/recall/epar-enhanced/seed-43/cell.json"
expect_grep '^\| proxy task \| stands for \| metric \| chance \| learned \|' "$b/main_table.md"
expect_grep '^condition,mechanism,versus,tasks,n_tasks,gain,gain_sd,seeds,t,p,learned_tasks$' "$b/when_to_use.csv"
expect_grep '^needle,none,0,1,' "$b/distance.csv"
expect_grep '^short,epar-enhanced,best_baseline,recall needle,2,' "$b/when_to_use.csv"
expect_grep '^non-sequential,epar-enhanced,none,set,1,' "$b/when_to_use.csv"
expect_grep '^epar-enhanced,lm,32,8,[0-9]+,' "$b/cost.csv"
expect_grep '"param_max_rel_diff": ' "$b/run.json"
expect_grep '"seeds": \[' "$b/run.json"
[ -z "$(find "$T_TMP" -name '*.tmp*')" ] && ok || fail "temp files left behind"

# ---- the audit reads it: a --tasks/--mechanisms subset is another run than the protocol's (stale); the literal
# 110M claims stay "not reproducible here"
expect_exit 0 "run-all --audit-only on the benchmark alone" -- "$EPAR" run-all --audit-only --out "$a" --no-render --quiet
expect_grep '^proxy_train_squad2_f1,training,.*,stale,' "$a/report/claims.csv"
expect_grep '^train_squad2_f1,training,.*,not reproducible here,' "$a/report/claims.csv"
expect_grep '^## The trained proxy' "$a/report/REPORT.md"
# the proxy section names the learned tasks from main_table.csv (count of 3 mechanisms, z from run.json) and the
# tasks no mechanism learned
expect_grep 'by more than 3 standard errors\): ' "$a/report/REPORT.md"
lcol=$(head -1 "$b/main_table.csv" | tr ',' '\n' | grep -n '^learned$' | cut -d: -f1)
want=$(awk -F, -v c="$lcol" 'NR > 1 && $c > 0 { printf "%s%s (%d of 3)", n++ ? ", " : "", $1, $c } END { if (!n) printf "none" }' "$b/main_table.csv")
grep -qF "standard errors): $want." "$a/report/REPORT.md" && ok || fail "learned tasks in REPORT.md, want '$want'"
for t in $(awk -F, -v c="$lcol" 'NR > 1 && $c == 0 { print $1 }' "$b/main_table.csv"); do
    grep -q "Learned by no mechanism: [a-z, -]*$t" "$a/report/REPORT.md" && ok || fail "$t not among the unlearned in REPORT.md"
done

# ---- --jobs 1: the same bytes
one=$T_TMP/one
expect_exit 0 "smoke grid, --jobs 1" -- "$EPAR" benchmark $grid --jobs 1 --out "$one"
[ "$(tables "$a")" = "$(tables "$one")" ] && ok || fail "--jobs 1 and --jobs 2 differ: $(diff <(tables "$a") <(tables "$one") | head -5)"
# the cost cell runs first (with --jobs 2 beside the grid's first cells, so no core idles while it alone runs at
# the end): with one job its cell file is the oldest
first=$(cd "$one/benchmark" && find cells -name cell.json -printf '%T@ %p\n' | sort -n | head -1 | cut -d' ' -f2)
[ "$first" = "cells/cost/cell.json" ] && ok || fail "the first cell done with --jobs 1 is $first, not the cost cell"

# ---- a rerun finds every cell done
before=$(stat -c %Y "$b/cells/recall/none/seed-42/cell.json")
expect_exit 0 "rerun" -- "$EPAR" benchmark $grid --jobs 2 --out "$a"
[ "$(stat -c %Y "$b/cells/recall/none/seed-42/cell.json")" = "$before" ] && ok || fail "a finished cell was redone"
"$EPAR" benchmark ${grid/--quiet/} --jobs 2 --out "$a" 2>&1 >/dev/null | grep -q '0 to run here (19 done already' && ok \
    || fail "the rerun does not report every cell done"

# ---- shards and merge
for k in 1 2; do
    expect_exit 0 "shard $k/2" -- "$EPAR" benchmark $grid --jobs 1 --shard $k/2 --out "$T_TMP/s$k"
done
[ ! -e "$T_TMP/s1/benchmark/main_table.csv" ] && ok || fail "a shard writes no tables"
n1=$(find "$T_TMP/s1/benchmark/cells" -name cell.json | wc -l); n2=$(find "$T_TMP/s2/benchmark/cells" -name cell.json | wc -l)
[ "$n1" -eq 10 ] && [ "$n2" -eq 9 ] && ok || fail "shards hold 10 and 9 of the 19 cells (got $n1, $n2)"
expect_exit 3 "merge with a shard missing" -- "$EPAR" benchmark $grid --merge "$T_TMP/s1" --out "$T_TMP/m1"
expect_error_line '9 of 19 cells are in none of the 1 folder' "missing cells named"
[ ! -e "$T_TMP/m1/benchmark/main_table.csv" ] && ok || fail "a failed merge writes no tables"
expect_exit 0 "merge" -- "$EPAR" benchmark $grid --merge "$T_TMP/s1" "$T_TMP/s2" --out "$T_TMP/m"
[ "$(tables "$a")" = "$(tables "$T_TMP/m")" ] && ok || fail "shards + merge differ from one process: $(diff <(tables "$a") <(tables "$T_TMP/m") | head -5)"
expect_grep '"mode": "merge"' "$T_TMP/m/benchmark/run.json"
# the first seed's final checkpoint is kept (and merged), the others' not; epar inspect reads it under the task id
for m in none learned-ape epar-enhanced; do
    for t in recall needle set; do
        [ -s "$T_TMP/m/benchmark/cells/$t/$m/seed-42/checkpoint.bin" ] && [ ! -e "$b/cells/$t/$m/seed-43/checkpoint.bin" ] &&
            ok || fail "cells/$t/$m: checkpoint.bin kept for seed 42 only"
    done
done
expect_exit 0 "inspect a benchmark checkpoint" -- "$EPAR" inspect "$b/cells/needle/epar-enhanced/seed-42/checkpoint.bin" \
    --out "$T_TMP/i" -q --no-render
expect_grep '"benchmark_task": "needle"' "$T_TMP/i/inspect/needle-epar-enhanced-seed42-item0/inspect.json"
# trained_attention.csv: one row per task x mechanism x seed (every cell measures its trained heads), the same after
# shards + merge
ta=$b/trained_attention.csv
expect_grep '^task,mechanism,seed,items,heads,length,distance_spearman,distance_spearman_sd,distance_ratio,distance_ratio_vs_none,first_share,relevant_share,relevant_uniform,profile_spearman,pattern_threshold,positional_share,positional_share_se,positional_share_vs_none,similarity_threshold,similar_layer_share,similar_layer_share_se,similar_other_share,similar_other_share_se,slope_spearman,slope_spearman_se$' "$ta"
[ "$(tail -n +2 "$ta" | wc -l)" -eq 18 ] && ok || fail "trained_attention.csv: $(tail -n +2 "$ta" | wc -l) rows, want 18 (9 cells x 2 seeds)"
expect_grep '^needle,none,42,16,2,40,[^,]+,[^,]+,[^,]+,0,' "$ta"
awk -F, 'NR > 1 && $2 != "epar-enhanced" && $14 != "nan" { exit 1 } NR > 1 && $2 == "epar-enhanced" && $14 == "nan" { exit 1 }' "$ta" &&
    ok || fail "trained_attention.csv: profile_spearman for EPAR only"
cmp -s "$ta" "$T_TMP/m/benchmark/trained_attention.csv" && ok || fail "trained_attention.csv differs after shards + merge"
# trained_heads.csv: one row per task x mechanism x seed x layer x head (smoke: 1 layer x 2 heads), the same after
# shards + merge; a share of trained_attention.csv is the share of its heads' rows (positional: pattern_best >= 0.8)
th=$b/trained_heads.csv
expect_grep '^task,mechanism,seed,layer,head,items,length,mean_distance,entropy,pattern_current,pattern_previous,pattern_left,pattern_first,pattern_best,best_pattern,positional,similar_layer,similar_other,slope,layer_slope_spearman$' "$th"
[ "$(tail -n +2 "$th" | wc -l)" -eq 36 ] && ok || fail "trained_heads.csv: $(tail -n +2 "$th" | wc -l) rows, want 36 (18 cells x 2 heads)"
python3 - "$th" "$ta" <<'PYEOF' && ok || fail "trained_heads.csv: rows, best pattern, positional or shares do not agree"
import csv, math, sys
heads = list(csv.DictReader(open(sys.argv[1])))
models = {(r["task"], r["mechanism"], r["seed"]): r for r in csv.DictReader(open(sys.argv[2]))}
names = ["current", "previous", "left", "first"]
for r in heads:
    p = [float(r["pattern_" + n]) for n in names]
    assert float(r["pattern_best"]) == max(p) and r["best_pattern"] == names[p.index(max(p))], r
    assert r["positional"] == ("1" if max(p) >= 0.8 else "0"), r
    assert r["similar_other"] == "nan" and r["slope"] == "nan", r      # one layer; no alibi here
    assert -1 <= float(r["similar_layer"]) <= 1, r
for key, m in models.items():
    hs = [r for r in heads if (r["task"], r["mechanism"], r["seed"]) == key]
    assert len(hs) == 2
    assert math.isclose(float(m["positional_share"]), sum(r["positional"] == "1" for r in hs) / 2), key
    assert math.isclose(float(m["similar_layer_share"]), sum(float(r["similar_layer"]) >= 0.8 for r in hs) / 2), key
    # plus-four se of k of 2 heads
    k = sum(r["positional"] == "1" for r in hs); q = (k + 2) / 6
    assert math.isclose(float(m["positional_share_se"]), math.sqrt(q * (1 - q) / 6)), key
PYEOF
cmp -s "$th" "$T_TMP/m/benchmark/trained_heads.csv" && ok || fail "trained_heads.csv differs after shards + merge"

# interventions on the kept checkpoints (F8, F9): every first-seed model's heads masked one at a time
# (head_masking.csv: 9 models x 1 layer x 2 heads at smoke) and, on recall and needle, the boost sweep (6 factors x 2
# modes x 6 models); hurt and removable from the row's own numbers, boost 1 leaves the evaluation as it was, the
# summaries over the learned models recomputed (none learns at smoke: header only), the same after shards + merge
hm=$b/head_masking.csv; bo=$b/boost.csv
expect_grep '^task,mechanism,seed,layer,head,metric,base,masked,delta,hurt,loss_base,loss_masked,threshold,removable,learned$' "$hm"
expect_grep '^task,models,removable_share,removable_share_sd,threshold,heads_per_model$' "$b/head_masking_summary.csv"
expect_grep '^task,mechanism,seed,factor,mode,layer,metric,base,boosted,delta,loss_base,loss_boosted,items,learned$' "$bo"
expect_grep '^task,factor,mode,models,delta_mean,delta_sd$' "$b/boost_summary.csv"
expect_file "$b/boost.gp"
python3 - "$hm" "$b/head_masking_summary.csv" "$bo" "$b/boost_summary.csv" <<'PYEOF' && ok || fail "head_masking/boost: rows, hurt, removable, boost 1 or the summaries do not agree"
import csv, math, statistics, sys
hm, hs, bo, bs = (list(csv.DictReader(open(f))) for f in sys.argv[1:5])
assert len(hm) == 18 and {r["seed"] for r in hm} == {"42"}, len(hm)
for r in hm:
    b, x = float(r["base"]), float(r["masked"])
    assert math.isclose(float(r["hurt"]), (b - x) / abs(b), abs_tol=1e-9), r      # accuracy: worse is lower
    assert r["removable"] == ("1" if float(r["hurt"]) < float(r["threshold"]) else "0"), r
    assert math.isclose(float(r["delta"]), x - b, abs_tol=1e-9), r
assert len(bo) == 2 * 3 * 6 * 2 and {r["task"] for r in bo} == {"recall", "needle"}, len(bo)
for r in bo:
    if float(r["factor"]) == 1:
        assert float(r["delta"]) == 0 and abs(float(r["loss_boosted"]) - float(r["loss_base"])) < 1e-5, r
def models(rows, task):
    return [k for k in {(r["task"], r["mechanism"]) for r in rows if r["learned"] == "1"} if task in ("all", k[0])]
for s in hs:
    ms = models(hm, s["task"])
    shares = [sum(r["removable"] == "1" for r in hm if (r["task"], r["mechanism"]) == m) / int(s["heads_per_model"]) for m in ms]
    assert int(s["models"]) == len(ms) and math.isclose(float(s["removable_share"]), statistics.mean(shares)), s
for s in bs:
    ms = models(bo, s["task"])
    d = [float(r["delta"]) for r in bo if (r["task"], r["mechanism"]) in ms and r["mode"] == s["mode"]
         and float(r["factor"]) == float(s["factor"])]
    assert int(s["models"]) == len(d) and math.isclose(float(s["delta_mean"]), statistics.mean(d)), s
assert all(r["learned"] == "0" for r in hm) == (len(hs) == 0), "a summary without learned models"
PYEOF
for f in head_masking.csv boost.csv; do
    cmp -s "$b/$f" "$T_TMP/m/benchmark/$f" && ok || fail "$f differs after shards + merge"
done

# ---- MPI (optional): 2 ranks share the cells, rank 0 writes the same tables
# EPAR_MPI: the MPI build of the same objects as $EPAR (make test sets it; empty in the sanitizer and coverage builds,
# whose optimisation level differs from ./epar-mpi's, so float results could differ in the last bits)
EPAR_MPI=${EPAR_MPI-./epar-mpi}
if command -v mpirun >/dev/null && [ -n "$EPAR_MPI" ] && [ -x "$EPAR_MPI" ]; then
    [ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    expect_exit 0 "mpirun -np 2" -- mpirun --oversubscribe -np 2 "$EPAR_MPI" benchmark $grid --jobs 1 --out "$T_TMP/mpi"
    [ "$(tables "$a")" = "$(tables "$T_TMP/mpi")" ] && ok || fail "mpirun -np 2 differs from one process: $(diff <(tables "$a") <(tables "$T_TMP/mpi") | head -5)"
else
    echo "# test_benchmark: MPI part skipped (needs mpirun and an epar-mpi of the same build: scripts/install-deps --with-mpi; make MPI=1)"
fi

# ---- bad options: exit 2, nothing written
for bad in "--budget nope" "--shard 3/2" "--shard 0/2" "--shard x" "--tasks nope" "--mechanisms none,none" "--merge" \
           "--mechanisms none,tupe" "--set epar-enhanced.alpha=2" "--set rope.base=0.5" "--set sliding-window.radius=-1"; do
    expect_exit 2 "bad option $bad" -- "$EPAR" benchmark --budget smoke $bad --out "$T_TMP/bad" --quiet
    expect_empty_dir "$T_TMP/bad" "nothing written for $bad"
done
expect_exit 2 "--shard with --merge" -- "$EPAR" benchmark --budget smoke --shard 1/2 --merge "$a" --out "$T_TMP/bad"
# ---- any trainable catalogue mechanism, with its catalogue parameters (each cell.json records them)
# (one namespace, issue 34: rope.base as in train and compare)
expect_exit 0 "catalogue mechanisms" -- "$EPAR" benchmark --budget smoke --tasks recall --mechanisms none,sliding-window,fixed-left,rope \
    --set sliding-window.radius=3 --set rope.base=20000 --seeds 42 --quiet --no-render --out "$T_TMP/cat"
expect_grep ',none_mean,none_sd,sliding-window_mean,sliding-window_sd,fixed-left_mean,' "$T_TMP/cat/benchmark/main_table.csv"
expect_grep '"radius": 3' "$T_TMP/cat/benchmark/cells/recall/sliding-window/seed-42/cell.json"
expect_grep '"base": 20000' "$T_TMP/cat/benchmark/cells/recall/rope/seed-42/cell.json"
# fixed-left is S1's left-context pattern: its heads correlate 1 with it and are positional; alibi's records carry
# the slopes and their layer's Spearman correlation with the mean distance
awk -F, '$2 == "fixed-left" { n++; if ($12 < 0.999999 || $15 != "left" || $16 != 1) bad = 1 } END { exit !(n == 2 && !bad) }' \
    "$T_TMP/cat/benchmark/trained_heads.csv" && ok || fail "trained_heads.csv: fixed-left heads not the left-context pattern"
# cells written by the epar before one namespace (position: rope_base, alibi_max_bias, t5_buckets, t5_max_distance)
# are the same cells: the folder resumes without running any of them again
python3 - "$T_TMP/cat/benchmark/cells" <<'PYEOF'
import json, os, sys
OLD = {"rope": {"base": "rope_base"}, "alibi": {"max_bias": "alibi_max_bias"},
       "t5": {"num_buckets": "t5_buckets", "max_distance": "t5_max_distance"}, "sinusoidal": {}}
def old(cfg):
    pos, m = cfg["position"], cfg["mechanism"]
    mp = pos.pop("mechanism_params") if m in OLD else {}
    pos.update(rope_base=10000.0, alibi_max_bias=8.0, t5_buckets=32, t5_max_distance=128)
    for k, o in OLD.get(m, {}).items(): pos[o] = mp[k]
for root, _, files in os.walk(sys.argv[1]):
    if "cell.json" not in files: continue
    f = os.path.join(root, "cell.json")
    d = json.load(open(f, encoding="utf-8"))
    for cfg in d["config"].get("mechanisms", [d["config"]]): old(cfg)
    for s in d["config"].get("extrapolation_study", {}).get("series", []):
        if s["as"] in OLD: s.pop("mechanism_params")
    json.dump(d, open(f, "w", encoding="utf-8"), indent=1)
PYEOF
expect_grep '"rope_base": 20000' "$T_TMP/cat/benchmark/cells/recall/rope/seed-42/cell.json"
expect_exit 0 "resume a folder of old cells" -- "$EPAR" benchmark --budget smoke --tasks recall --mechanisms none,sliding-window,fixed-left,rope \
    --set sliding-window.radius=3 --set rope.base=20000 --seeds 42 --no-render --out "$T_TMP/cat"
expect_grep '0 to run here' "$T_TMP/err"
expect_grep '"rope_base": 20000' "$T_TMP/cat/benchmark/cells/recall/rope/seed-42/cell.json"
# a cell written before the per-head record (its configuration lacks attention_heads) is redone, not read as missing
python3 - "$T_TMP/cat/benchmark/cells/recall/rope/seed-42/cell.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
del d["config"]["attention_heads"], d["attention"]["per_head"]
json.dump(d, open(sys.argv[1], "w", encoding="utf-8"), indent=1)
PYEOF
expect_exit 0 "a cell without the per-head record" -- "$EPAR" benchmark --budget smoke --tasks recall --mechanisms none,sliding-window,fixed-left,rope \
    --set sliding-window.radius=3 --set rope.base=20000 --seeds 42 --no-render --out "$T_TMP/cat"
expect_grep '1 to run here \(4 done already' "$T_TMP/err"
expect_grep '"per_head"' "$T_TMP/cat/benchmark/cells/recall/rope/seed-42/cell.json"
[ "$(grep -c '^recall,rope,' "$T_TMP/cat/benchmark/trained_heads.csv")" -eq 2 ] && ok || fail "rope's heads missing after the redo"
expect_exit 0 "alibi" -- "$EPAR" benchmark --budget smoke --tasks lm --mechanisms none,alibi --seeds 42 --quiet --no-render \
    --out "$T_TMP/alibi"
awk -F, '$2 == "alibi" { n++; s[$5] = $19; if ($20 == "nan") bad = 1 } END { exit !(n == 2 && !bad && s[0] == 0.0625 && s[1] == 0.00390625) }' \
    "$T_TMP/alibi/benchmark/trained_heads.csv" && ok || fail "trained_heads.csv: alibi's slopes 2^-4, 2^-8 and their correlation"
# transformer-xl (the paper's named baseline, not in the quick list): its cells run and record init_sd
expect_exit 0 "transformer-xl" -- "$EPAR" benchmark --budget smoke --tasks recall --mechanisms none,transformer-xl \
    --set transformer-xl.init_sd=0.05 --seeds 42 --quiet --no-render --out "$T_TMP/txl"
expect_grep ',transformer-xl_mean,transformer-xl_sd,' "$T_TMP/txl/benchmark/main_table.csv"
expect_grep '"init_sd": 0.05' "$T_TMP/txl/benchmark/cells/recall/transformer-xl/seed-42/cell.json"
# a cost cell stopped by its CPU-time limit after one generation (no interval yet) is written and read back: the
# widest half-width is left out of cell.json, the overheads are nan
python3 - "$EPAR_ROOT/paper_protocol.json" "$T_TMP/oneshot.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
j["experiments"]["benchmark"]["budgets"]["smoke"].update(cost_seconds=1e-9, cost_generation=1)
json.dump(j, open(sys.argv[2], "w", encoding="utf-8"))
PYEOF
expect_exit 0 "a cost cell stopped after one generation" -- "$EPAR" benchmark --protocol "$T_TMP/oneshot.json" --budget smoke \
    --tasks recall --mechanisms none,epar-enhanced --seeds 42 --quiet --no-render --out "$T_TMP/oneshot"
expect_grep '"stopped": "seconds"' "$T_TMP/oneshot/benchmark/cells/cost/cell.json"
! grep -q widest_halfwidth "$T_TMP/oneshot/benchmark/cells/cost/cell.json" && ok || fail "an undefined half-width written"
awk -F, '$1 == "epar-enhanced" { found = 1; if ($19 != "nan") bad = 1 } END { exit bad || !found }' \
    "$T_TMP/oneshot/benchmark/cost.csv" && ok || fail "one generation's overhead has an interval"
expect_exit 0 "help" -- "$EPAR" benchmark --help
expect_grep 'shard' "$T_TMP/out"
finish
