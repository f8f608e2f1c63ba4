#!/usr/bin/env bash
# The length-extrapolation study of epar benchmark (issue 33) on the smoke budget, lm, the needle tasks and classify,
# 2 seeds:
# its files and columns, the study's own cells (sliding-window with the protocol's radius, on classify with the task's
# own; multiplicative-pe, linear-elu, performer; shaw is a grid mechanism), the same weights
# read as ntk-rope / interpolation / log-n (equal to rope / none at L, different past it), learned-ape undefined past
# L, pairs.csv's differences agreeing with the series' means, retrieval rows by depth, the claims' specs fitting the
# files, --mechanisms restricting the study to the grid, and protocol errors naming their JSON path (exit 3).
. "$(dirname "$0")/lib.sh"
grid="--budget smoke --tasks lm,needle,needle-long,classify --seeds 42,43 --quiet --no-render"
a=$T_TMP/a
expect_exit 0 "smoke study" -- "$EPAR" benchmark $grid --jobs 2 --out "$a"
b=$a/benchmark
for f in extrapolation_bpc.csv extrapolation_bpc.gp retrieval.csv retrieval.gp pairs.csv \
         cells/lm/shaw/seed-43/cell.json cells/lm/sliding-window/seed-42/cell.json; do expect_file "$b/$f"; done
expect_grep '^task,series,trained,as,log_n,finetuned,length,k,train_length,bin,pos_lo,pos_hi,defined,seeds,bpc,bpc_sd,share,share_sd,share_lo,share_hi,rel,rel_sd,rel_lo,rel_hi,finetune_steps,finetune_tokens$' "$b/extrapolation_bpc.csv"
expect_grep '^task,series,trained,as,log_n,length,k,train_length,bin,depth_lo,depth_hi,distance_lo,distance_hi,defined,seeds,answers,accuracy,accuracy_sd,lo,hi,chance$' "$b/retrieval.csv"
expect_grep '^task,a,b,quantity,length,k,bin,seeds,mean,sd,lo,hi,t,p$' "$b/pairs.csv"
# the study's own cells: lm only, sliding-window with the protocol's radius 8; not in the grid's tables
[ ! -d "$b/cells/needle/sliding-window" ] && ok || fail "sliding-window trained on a task the study does not name"
expect_grep '"radius": 8' "$b/cells/lm/sliding-window/seed-42/cell.json"
expect_grep '"train_length": 32' "$b/cells/lm/rope/seed-42/cell.json"
! grep -q 'sliding-window' "$b/main_table.csv" && ok || fail "the study's own mechanism in the main table"
expect_grep '^lm,shaw,' "$b/params.csv"
expect_grep '"extrapolation_study": \{' "$b/run.json"
# a value of series s, length T, bin, column c of extrapolation_bpc.csv
v() { awk -F, -v s="$1" -v T="$2" -v bn="$3" -v c="$4" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i }
      NR > 1 && $2 == s && $7 == T && $10 == bn { print $h[c] }' "$b/extrapolation_bpc.csv"; }
# at the trained length the same weights give the same numbers; past it they differ
for s in ntk-rope interpolation rope+log-n ntk-rope+log-n; do
    [ "$(v $s 32 window bpc)" = "$(v rope 32 window bpc)" ] && ok || fail "$s at L differs from rope"
    [ -n "$(v $s 256 past_L bpc)" ] && [ "$(v $s 256 past_L bpc)" != "$(v rope 256 past_L bpc)" ] && ok || fail "$s at 8L equals rope"
done
[ "$(v log-n 32 window bpc)" = "$(v none 32 window bpc)" ] && ok || fail "log-n at L differs from none"
[ "$(v log-n 256 past_L bpc)" != "$(v none 256 past_L bpc)" ] && ok || fail "log-n at 8L equals none"
[ "$(v rope 32 window share)" = "0" ] && ok || fail "the share at L is 0 by definition, got $(v rope 32 window share)"
[ "$(v learned-ape 64 window defined)" = "0" ] && [ "$(v learned-ape 64 window bpc)" = "nan" ] && ok || fail "learned-ape past L is undefined"
[ -z "$(v learned-ape 64 past_L bpc)" ] && ok || fail "an undefined length is said once (its window row)"
[ "$(v interpolation+ft 128 past_L finetune_steps)" = "3" ] && [ "$(v interpolation+ft 64 window bpc)" = "" ] && ok \
    || fail "the fine-tuning arm: 3 steps, at its lengths only"
# buckets: within L, L-2L, 2L-4L, 4L-8L at 8L; their positions
[ "$(awk -F, '$2 == "rope" && $7 == 256 { printf "%s:%s-%s ", $10, $11, $12 }' "$b/extrapolation_bpc.csv")" = \
  "window:0-256 past_L:32-256 0-1:0-32 1-2:32-64 2-4:64-128 4-8:128-256 " ] && ok || fail "rope's bins at 8L"
# pairs.csv: per seed a - b, so its mean is the difference of the series' means; ntk-rope - rope at L is 0 exactly
python3 - "$b/extrapolation_bpc.csv" "$b/pairs.csv" <<'PY' && ok || fail "pairs.csv disagrees with extrapolation_bpc.csv"
import csv, sys
s = {(r["series"], r["length"], r["bin"]): r for r in csv.DictReader(open(sys.argv[1]))}
n = 0
for r in csv.DictReader(open(sys.argv[2])):
    if r["task"] != "lm" or r["quantity"] != "bpc" or "|" in r["a"] + r["b"]:
        continue
    a, b = s[(r["a"], r["length"], r["bin"])], s[(r["b"], r["length"], r["bin"])]
    assert abs(float(r["mean"]) - (float(a["bpc"]) - float(b["bpc"]))) < 1e-9, r
    assert r["seeds"] == "2", r
    if r["mean"] != "nan" and float(r["sd"]) > 0:
        assert float(r["lo"]) <= float(r["mean"]) <= float(r["hi"]), r
    n += 1
z = [r for r in csv.DictReader(open(sys.argv[2])) if r["a"] == "ntk-rope" and r["b"] == "rope" and r["task"] == "lm"
     and r["k"] == "1" and r["bin"] == "window" and r["quantity"] == "bpc"]
assert len(z) == 1 and float(z[0]["mean"]) == 0 and float(z[0]["sd"]) == 0 and z[0]["lo"] == "nan", z
assert n > 100, n
PY
# the attention's entropy by length (F7): the table from the cells' rows, its rise from L per seed; alibi's heads stay
# local (smoke: 30 steps), so its rows get less uniform past L while none's do not
expect_grep '^task,series,trained,as,log_n,finetuned,length,k,train_length,defined,seeds,entropy,entropy_sd,entropy_rise,entropy_rise_sd,entropy_rise_lo,entropy_rise_hi,uniformity,uniformity_sd,uniformity_rise,uniformity_rise_sd,uniformity_rise_lo,uniformity_rise_hi$' "$b/extrapolation_entropy.csv"
expect_file "$b/extrapolation_entropy.gp"
python3 - "$b" <<'PY' && ok || fail "extrapolation_entropy.csv disagrees with the cells"
import csv, json, sys
b = sys.argv[1]
t = {(r["series"], int(r["k"])): r for r in csv.DictReader(open(b + "/extrapolation_entropy.csv"))}
def row(m, s, T, series=None):
    c = json.load(open(f"{b}/cells/lm/{m}/seed-{s}/cell.json"))
    return next(r for r in c["extrapolation_study"]["lm"] if r["series"] == (series or m) and r["length"] == T)
for m in ("rope", "none", "alibi"):
    h = [row(m, s, 256)["entropy"] - row(m, s, 32)["entropy"] for s in (42, 43)]
    u = [row(m, s, 256)["uniformity"] - row(m, s, 32)["uniformity"] for s in (42, 43)]
    r = t[(m, 8)]
    assert abs(float(r["entropy_rise"]) - sum(h) / 2) < 1e-9 and abs(float(r["uniformity_rise"]) - sum(u) / 2) < 1e-9, r
    assert float(t[(m, 1)]["entropy_rise"]) == 0 and 0 < float(r["uniformity"]) <= 1, r
    assert float(r["entropy"]) > 0, r
# ntk-rope reads rope's weights: the same entropy at L
assert row("rope", 42, 32, "ntk-rope")["entropy"] == row("rope", 42, 32)["entropy"]
assert t[("learned-ape", 8)]["defined"] == "0" and t[("learned-ape", 8)]["entropy"] == "nan"
assert float(t[("alibi", 8)]["uniformity_rise"]) < 0 < float(t[("none", 8)]["uniformity_rise"])
p = [r for r in csv.DictReader(open(b + "/pairs.csv")) if r["quantity"] == "entropy" and r["a"] == "rope+log-n" and r["k"] == "8"]
assert len(p) == 1 and float(p[0]["mean"]) < 0, p   # log n sharpens every row past L
PY
# groups: the per-seed mean of the members
expect_grep '^lm,shaw\|t5\|alibi,sinusoidal,share,256,8,past_L,2,' "$b/pairs.csv"
# retrieval: every series x length x (8 depth bins + all); learned-ape undefined past L; depth bins cover 1..P
[ "$(grep -c '^needle,rope,' "$b/retrieval.csv")" -eq 36 ] && ok || fail "rope: 4 lengths x 9 rows"
expect_grep '^needle,learned-ape,learned-ape,learned-ape,0,80,2,40,all,0,1,1,78,0,' "$b/retrieval.csv"
expect_grep '^needle,rope,rope,rope,0,320,8,40,0,0,0.125,' "$b/retrieval.csv"
expect_grep '^needle,ntk-rope,rope,ntk-rope,0,320,8,40,all,0,1,1,318,1,2,64,' "$b/retrieval.csv"
# the grid's needle-long cells give pairs by depth at their own length
expect_grep '^needle-long,epar-basic,none,accuracy,72,1,0,2,' "$b/pairs.csv"
# the study's cells on other tasks: sliding-window on needle-long (radius 8) and classify (the task's "set": radius 2);
# linear-elu and performer on lm
for f in cells/needle-long/sliding-window/seed-43 cells/classify/sliding-window/seed-42 cells/lm/linear-elu/seed-42 \
         cells/lm/performer/seed-43; do expect_file "$b/$f/cell.json"; done
expect_grep '"radius": 8' "$b/cells/needle-long/sliding-window/seed-42/cell.json"
expect_grep '"radius": 2' "$b/cells/classify/sliding-window/seed-42/cell.json"
! grep -q '"radius": 8' "$b/cells/classify/sliding-window/seed-42/cell.json" && ok || fail "classify's sliding-window kept radius 8"
expect_grep '^lm,linear-elu,none,bpc_rel,32,1,window,2,' "$b/pairs.csv"
expect_grep '^lm,orthogonal-qk,none,bpc_rel,32,1,window,2,' "$b/pairs.csv"
# S3-16: deberta (relative only) and deberta@absolute=1 (the EMD's absolute table in the last layer; defined at L only)
expect_grep '"absolute": 1' "$b/cells/lm/deberta@absolute=1/seed-42/cell.json"
! grep -q '"absolute": 1' "$b/cells/lm/deberta/seed-42/cell.json" && ok || fail "deberta trained with the EMD"
expect_grep '^lm,deberta@absolute=1,deberta,bpc_rel,32,1,window,2,' "$b/pairs.csv"
expect_grep '^lm,deberta,deberta@absolute=1,bpc_rel,32,1,window,2,' "$b/pairs.csv"
# study cells with parameters of their own (mechanism@parameter=value): their own folder, configuration and pairs
expect_grep '"step": 4' "$b/cells/lm/pi-attention@step=4/seed-42/cell.json"
expect_grep '"radius": 2' "$b/cells/lm/pi-attention@step=4/seed-42/cell.json"
! grep -q '"step": 4' "$b/cells/lm/pi-attention@step=8/seed-42/cell.json" && ok || fail "pi-attention@step=8 trained with step 4"
expect_grep '^lm,pi-attention@step=8,pi-attention@step=4,bpc_rel,32,1,window,2,' "$b/pairs.csv"
expect_grep '^lm,random-sparse,strided,bpc_rel,32,1,window,2,' "$b/pairs.csv"
expect_grep '^lm,performer,none,bpc_rel,32,1,window,2,' "$b/pairs.csv"
# pairs of the grid's other tasks recomputed from the cells: classify's final accuracy; needle-long past the window's
# reach (smoke: 1 layer x radius 8; distance.csv's bins of distances 1..70: the first with distance_lo > 8 starts at 9)
# and sliding-window's z_vs_chance there
python3 - "$b" <<'PY' && ok || fail "the grid pairs disagree with the cells"
import csv, json, math, sys
b = sys.argv[1]
rows = {(r["task"], r["a"], r["b"], r["quantity"], r["bin"]): r for r in csv.DictReader(open(b + "/pairs.csv"))}
cell = lambda t, m, s: json.load(open(f"{b}/cells/{t}/{m}/seed-{s}/cell.json"))
seeds = (42, 43)
d = [cell("classify", "sliding-window", s)["value"] - cell("classify", "none", s)["value"] for s in seeds]
r = rows[("classify", "sliding-window", "none", "accuracy", "all")]
assert abs(float(r["mean"]) - sum(d) / 2) < 1e-9 and r["length"] == "40", r
def acc(m, s, lo, hi):
    c = cell("needle-long", m, s)
    return sum(c["distance_correct"][lo:hi + 1]), sum(c["distance_scored"][lo:hi + 1]), c["chance"]
a = [acc("sliding-window", s, 9, 70) for s in seeds]
n = [acc("none", s, 9, 70) for s in seeds]
d = [x[0] / x[1] - y[0] / y[1] for x, y in zip(a, n)]
r = rows[("needle-long", "sliding-window", "none", "accuracy", "past_reach")]
assert abs(float(r["mean"]) - sum(d) / 2) < 1e-9, (r, d)
m, ch, ans = sum(x[0] / x[1] for x in a) / 2, sum(x[2] for x in a) / 2, sum(x[1] for x in a)
z = (m - ch) / math.sqrt(ch * (1 - ch) / ans)
r = rows[("needle-long", "sliding-window", "chance", "z_vs_chance", "past_reach")]
assert abs(float(r["mean"]) - z) < 1e-6 * max(1, abs(z)) and r["sd"] == "nan", (r, z)
assert sum(1 for k in rows if k[3] == "z_vs_chance" and k[1] == "sliding-window") == 1
PY
# the claims read these files: every spec fits (2 seeds: judged, not 'needs >= 2 seeds')
expect_exit 0 "audit" -- "$EPAR" run-all --audit-only --out "$a" --no-render --quiet
n=$(grep -c ',extrapolation,' "$a/report/claims.csv")
[ "$n" -ge 25 ] && ok || fail "extrapolation claims in the report: $n"
! grep ',extrapolation,' "$a/report/claims.csv" | grep -q -E 'spec|needs >= 2 seeds' && ok || fail "an extrapolation claim's spec does not fit"

# ---- --mechanisms chooses every mechanism: no cells of the study's own, the variants of those chosen
r=$T_TMP/r
expect_exit 0 "restricted" -- "$EPAR" benchmark --budget smoke --tasks lm --mechanisms rope --seeds 42 --quiet --no-render --out "$r"
[ ! -d "$r/benchmark/cells/lm/sliding-window" ] && ok || fail "--mechanisms rope trained sliding-window"
expect_grep '^lm,ntk-rope,rope,' "$r/benchmark/extrapolation_bpc.csv"
expect_grep '"cells_run": false' "$r/benchmark/run.json"

# ---- study cells with parameters of their own pair on the grid's other tasks too (by name: deberta@absolute=1 and
# deberta share a catalogue id): transduce's final accuracy, a - b per seed as the cells give it
python3 -c 'import json,sys; p=json.load(open("paper_protocol.json")); p["experiments"]["benchmark"]["mechanisms"]="none"; json.dump(p,open(sys.argv[1],"w"))' "$T_TMP/deb.json"
r=$T_TMP/deb
expect_exit 0 "deberta study cells on transduce" -- "$EPAR" benchmark --budget smoke --tasks transduce --seeds 42,43 --protocol "$T_TMP/deb.json" --quiet --no-render --out "$r"
python3 - "$r/benchmark" <<'PY' && ok || fail "transduce's deberta@absolute=1 - deberta pair disagrees with the cells"
import csv, json, sys
b = sys.argv[1]
rows = {(r["task"], r["a"], r["b"], r["quantity"], r["bin"]): r for r in csv.DictReader(open(b + "/pairs.csv"))}
cell = lambda m, s: json.load(open(f"{b}/cells/transduce/{m}/seed-{s}/cell.json"))["value"]
d = [cell("deberta@absolute=1", s) - cell("deberta", s) for s in (42, 43)]
r = rows[("transduce", "deberta@absolute=1", "deberta", "accuracy", "all")]
assert abs(float(r["mean"]) - sum(d) / 2) < 1e-9 and r["seeds"] == "2", (r, d)
r = rows[("transduce", "deberta", "deberta@absolute=1", "accuracy", "all")]
assert abs(float(r["mean"]) + sum(d) / 2) < 1e-9, (r, d)
PY

# ---- --set on the command line wins over a task's own "set" too (classify's radius 2)
r=$T_TMP/s
expect_exit 0 "--set over a task's set" -- "$EPAR" benchmark --budget smoke --tasks classify --seeds 42 --set sliding-window.radius=3 --quiet --no-render --out "$r"
expect_grep '"radius": 3' "$r/benchmark/cells/classify/sliding-window/seed-42/cell.json"

# ---- protocol errors: exit 3, the JSON path named, nothing written
bad() {   # name, sed expression
    sed "$2" paper_protocol.json > "$T_TMP/p.json"
    cmp -s paper_protocol.json "$T_TMP/p.json" && fail "$1: the edit did not apply"
    rm -rf "$T_TMP/bad"
    expect_exit 3 "$1" -- "$EPAR" benchmark --budget smoke --tasks lm --protocol "$T_TMP/p.json" --out "$T_TMP/bad" --quiet
    expect_empty_dir "$T_TMP/bad" "nothing written for $1"
}
bad "a variant of other weights" 's/"yarn": "rope"}/"yarn": "rope", "t5": "rope"}/'
expect_error_line 'extrapolation.variants.t5: t5 has other parameters than rope' "the variant named"
bad "an unknown series in a pair" 's/\["ntk-rope", "rope"\], \["interpolation"/["ntk-rope", "ropey"], ["interpolation"/'
expect_error_line "extrapolation.pairs\[0\]: 'ropey' is not a series" "the pair named"
bad "a budget without the study's sizes" 's/"smoke": {"cells": /"smoked": {"cells": /'
expect_error_line 'extrapolation.budgets.smoke: missing' "the budget named"
bad "a fine-tuning length the budget does not evaluate" 's/"finetune_steps": 3, "finetune_lengths": "128,256"/"finetune_steps": 3, "finetune_lengths": "96"/'
expect_error_line 'finetune_lengths: 96 is not one of the budget' "the length named"
bad "a task's set of an unknown parameter" 's/"set": {"sliding-window.radius": 2}/"set": {"sliding-window.radiu": 2}/'
expect_error_line 'tasks\[7\]\.set\.sliding-window\.radiu' "the task's set named"
bad "a study cell's unknown parameter" 's/pi-attention@step=4,/pi-attention@stepp=4,/'
expect_error_line "cells.lm: 'pi-attention@stepp=4': expected mechanism@parameter=value" "the cell named"
finish
