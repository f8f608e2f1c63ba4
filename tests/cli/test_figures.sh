#!/usr/bin/env bash
# Figures, rendered (the other CLI tests mostly run --no-render): a smoke run of run-all with the benchmark, train,
# inspect and small degenerate runs of the analyses (one sweep value, one type, one mechanism, L=2, a grid of one
# task and one mechanism) exit 0 with a non-empty PNG for every .gp; every script also renders on degenerate copies
# of its tables (every number nan, no rows, one row, constant columns: tests/cli/degenerate_figures.py); a script
# that gnuplot rejects is exit 3 naming gnuplot's message and how to keep the scripts, with nothing written.
. "$(dirname "$0")/lib.sh"
if ! command -v gnuplot >/dev/null; then
    echo "# skip (not counted): gnuplot is not installed (scripts/install-deps installs gnuplot-nox)"
    finish; exit
fi
# every .gp under a folder has a non-empty .png beside it
all_rendered() {
    local d=$1 desc=$2 missing
    missing=$(find "$d" -name '*.gp' | while read -r g; do [ -s "${g%.gp}.png" ] || echo "${g#"$d"/}"; done)
    local n; n=$(find "$d" -name '*.gp' | wc -l)
    if [ "$n" -gt 0 ] && [ -z "$missing" ]; then ok; else fail "$desc: $n scripts, no PNG for: $(echo "$missing" | head -5 | tr '\n' ' ')"; fi
}

# ---- the documented smoke examples, rendered
o=$T_TMP/o
expect_exit 0 "run-all --benchmark-budget smoke (rendered)" -- "$EPAR" run-all --benchmark-budget smoke --seed 42 --out "$o" -q
for s in position optimal parameter adaptive compare benchmark report; do all_rendered "$o/$s" "run-all: $s"; done
# the benchmark figures: each its own caption (the first line of the script, index.html's caption)
caps=$(for g in "$o"/benchmark/*.gp; do head -1 "$g"; done)
[ "$(echo "$caps" | sort | uniq -d)" = "" ] && ok || fail "benchmark figures share a caption: $(echo "$caps" | sort | uniq -d | head -2)"
expect_grep "^# Learning curves on needle \(L=[0-9]+\)" "$o/benchmark/curves_needle.gp"
# nothing is learned in 30 smoke steps: steps_to_learn says so per bar instead of drawing nothing
expect_grep "not learned" "$o/benchmark/steps_to_learn.gp"
expect_grep "^set arrow 1 from 32, graph 0 to 32, graph 1" "$o/benchmark/extrapolation.gp"   # the training length

expect_exit 0 "train a tiny recall model (rendered)" -- "$EPAR" train --task recall --steps 10 --eval-every 5 --length 32 \
    --pairs 4 --keys 16 --values 16 --dim 32 --heads 2 --layers 2 --mlp 64 --batch 8 --eval-batches 1 --eval-sequences 32 \
    --out "$o" -q
all_rendered "$o/train/recall" "train"
# the chance level of eval.csv, drawn on the metric panel
ch=$(awk -F, 'NR == 2 { print $15 }' "$o/train/recall/epar-enhanced/eval.csv")
line=$(sed -n "s/^ *\([0-9.e+-]*\) with lines dt 2 .*title 'chance.*/\1/p" "$o/train/recall/epar-enhanced/learning_curve.gp")
awk -v a="$line" -v b="$ch" 'BEGIN { exit !(a != "" && b > 0 && a - b < 1e-9 && b - a < 1e-9) }' && ok ||
    fail "learning_curve.gp: chance line at '$line', eval.csv's chance is $ch"
ck=$o/train/recall/epar-enhanced/checkpoint.bin
expect_exit 0 "inspect (rendered)" -- "$EPAR" inspect "$ck" --out "$T_TMP/i" -q
expect_exit 0 "train none" -- "$EPAR" train --task recall --mechanism none --steps 5 --eval-every 5 --length 32 --pairs 4 \
    --keys 16 --values 16 --dim 32 --heads 2 --layers 2 --mlp 64 --batch 8 --eval-batches 1 --eval-sequences 32 --out "$o" -q --no-render
expect_exit 0 "inspect two checkpoints (rendered)" -- "$EPAR" inspect "$ck" "$o/train/recall/none/checkpoint.bin" --out "$T_TMP/i" -q
all_rendered "$T_TMP/i/inspect" "inspect"

# ---- degenerate runs of the commands themselves
d=$T_TMP/d
common="--seed 42 --out $d -q"
expect_exit 0 "sensitivity, one value per sweep" -- "$EPAR" sensitivity $common --alpha-values 1 --beta-values 2 --gamma-values 1.5 --batch 2 --runs 1
expect_exit 0 "optimal-position, one type" -- "$EPAR" optimal-position $common --types random --batch 1 --runs 1
expect_exit 0 "adaptive, one length and a 1 x 1 grid" -- "$EPAR" adaptive $common --when-lengths 32 --grid-alpha 1 --grid-beta 1 \
    --batch 1 --runs 1 --grid-batch 1
expect_exit 0 "compare, one mechanism" -- "$EPAR" compare $common -m epar-basic --batch 1 --speed-lengths 64
expect_exit 0 "position-effect, L=2" -- "$EPAR" position-effect $common --batch 1 --runs 1 -L 2
expect_exit 0 "benchmark, one task and one mechanism" -- "$EPAR" benchmark --budget smoke --tasks needle --mechanisms none $common
for s in parameter optimal adaptive compare position benchmark; do all_rendered "$d/$s" "degenerate run: $s"; done

# ---- every script on degenerate tables
python3 tests/cli/degenerate_figures.py "$o" "$T_TMP/i" >"$T_TMP/degen.txt" 2>&1 && ok ||
    fail "figures on degenerate tables: $(grep -v '^#' "$T_TMP/degen.txt" | head -5 | tr '\n' ' ')"

# ---- a script gnuplot rejects: its message, how to keep the scripts, nothing written
mkdir -p "$T_TMP/bin"
cat >"$T_TMP/bin/gnuplot" <<'EOF'
#!/bin/sh
[ "$1" = position_scores.gp ] && { printf 'plot x\n     ^\n"%s" line 41: x range is invalid\n\n' "$1" >&2; exit 1; }
exec "$REAL_GNUPLOT" "$@"
EOF
chmod +x "$T_TMP/bin/gnuplot"
REAL_GNUPLOT=$(command -v gnuplot)
export REAL_GNUPLOT
expect_exit 3 "gnuplot rejects a script" -- env PATH="$T_TMP/bin:$PATH" "$EPAR" position-effect --seed 42 --batch 1 --runs 1 -L 4 --out "$T_TMP/f"
expect_error_line "gnuplot failed on 'position_scores.gp': \"position_scores.gp\" line 41: x range is invalid" "gnuplot's message"
expect_grep '^hint: .*--no-render.*gnuplot position_scores.gp' "$T_TMP/err"
expect_empty_dir "$T_TMP/f" "a failed render"
finish
