#!/usr/bin/env bash
# Numerical edge cases through the command (docs/FAILURES.md "Failure behaviour"): huge alpha and tiny
# temperature (scores overflow: hard-attention limit, never NaN), beta = 0, gamma = 0, L = 1,
# form none. Each runs (exit 0) and writes finite numbers where the quantity is defined.
. "$(dirname "$0")/lib.sh"
s="--hidden 8 --batch 2 --runs 1 --seed 1 --no-render --quiet"
run() { # NAME ARGS...
    local n=$1; shift
    expect_exit 0 "$n" -- "$EPAR" position-effect $s "$@" --out "$T_TMP/$n"
}
no_nan() { # NAME FILE...  (no nan/inf cell in the tables that are always defined)
    local n=$1 f; shift
    for f in "$@"; do
        # one seed: the across-seed sd is nan by definition (no spread), every other cell is defined
        if grep -v '^pos_star_seed_sd,' "$T_TMP/$n/position/$f" | grep -q -E '(^|,)-?(nan|inf)(,|$)'; then fail "$n: nan/inf in $f"; else ok; fi
    done
}
always="attention_weights.csv average_attention.csv position_attention.csv pos_star.csv position_scores.csv summary.csv"
col() { awk -F, -v c="$2" 'NR > 1 {print $c}' "$1" | sort -u; } # distinct values of column c

# huge alpha: P stays finite (alpha * ratio), scores overflow to +-inf -> the softmax limit
for a in 1e300 1.7e308; do
    run "alpha$a" -L 16 --alpha "$a"
    no_nan "alpha$a" $always position_effect_matrix.csv
    expect_grep '^mean_attention_weight,0.0625,' "$T_TMP/alpha$a/position/summary.csv"
done
# tiny temperature: 1/T = 1e300 multiplies the scores; same limit
run temp -L 16 --temperature 1e-300
no_nan temp $always
expect_grep '^mean_attention_weight,0.0625,' "$T_TMP/temp/position/summary.csv"
# beta = 0: no decay, P = alpha everywhere
run beta0 -L 12 --beta 0 --alpha 2
[ "$(col "$T_TMP/beta0/position/position_effect_matrix.csv" 3)" = 2 ] && ok || fail "beta 0: P is not constant alpha"
expect_grep '^monotone_max_increment,0,0,pass' "$T_TMP/beta0/position/properties.csv"
# gamma = 0: the enhanced form is constant alpha; strict decrease (Theorem 1 needs gamma > 0) is
# reported as failing, not hidden
run gamma0 -L 12 --gamma 0 --alpha 1.5
[ "$(col "$T_TMP/gamma0/position/position_effect_matrix.csv" 3)" = 1.5 ] && ok || fail "gamma 0: P is not constant alpha"
expect_grep '^monotone_max_increment,0,0,fail' "$T_TMP/gamma0/position/properties.csv"
no_nan gamma0 $always
# L = 1: one position; weight 1, pos* 0, every Theorem 1 check passes (vacuously for monotonicity)
run L1 -L 1
expect_grep '^0,0,1$' "$T_TMP/L1/position/attention_weights.csv"
[ "$(col "$T_TMP/L1/position/pos_star.csv" 4)" = 0 ] && ok || fail "L 1: pos* is not 0"
if grep -q ',fail,' "$T_TMP/L1/position/properties.csv"; then fail "L 1: a property fails"; else ok; fi
no_nan L1 $always
# L = 2, form none: no position effect at all, P = 1
run none -L 2 --form none
[ "$(col "$T_TMP/none/position/position_effect_matrix.csv" 3)" = 1 ] && ok || fail "form none: P is not 1"
finish
