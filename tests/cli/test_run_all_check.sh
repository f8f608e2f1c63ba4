#!/usr/bin/env bash
# epar run-all --check: the regression check against tests/golden (clean pins pass; a perturbed, vanished or flipped
# pin fails with exit 1 and is named; --update-golden restores a passing check; no pins is exit 3), and --check leaves
# no temporary folder behind. Apart from tests/cli/test_run_all.sh so that the two halves run side by side.
. "$(dirname "$0")/lib.sh"
# --check's temporary folders go to a folder of this test alone: other runs of the suite on the machine (other
# worktrees, CI jobs, the other tests of this suite) create theirs in /tmp at the same time, which the "nothing left
# behind" check must not see
export TMPDIR=$T_TMP/tmp
mkdir -p "$TMPDIR"

# regression: clean pins pass; a perturbed pin in a temp copy fails with exit 1 and is named
expect_exit 0 "run-all --check on the committed pins" -- "$EPAR" run-all --check -q
expect_grep '^regress: [0-9]+ pinned numbers checked: [0-9]+ unchanged, 0 moved, 0 missing' "$T_TMP/out"
cp -r tests/golden "$T_TMP/golden"
awk -F, 'BEGIN{OFS=","} $1=="position/summary.csv" && $2=="pos_star_mean" && $3=="value" {$4=$4+0.5} {print}' \
    tests/golden/pins.csv > "$T_TMP/golden/pins.csv"
cmp -s tests/golden/pins.csv "$T_TMP/golden/pins.csv" && fail "the pin was not perturbed" || ok
expect_exit 1 "perturbed pin -> exit 1" -- "$EPAR" run-all --check --golden "$T_TMP/golden" -q
expect_grep 'position/summary.csv +pos_star_mean +value' "$T_TMP/out"
expect_grep '1 moved, 0 missing' "$T_TMP/out"
# a pinned number that disappears is a regression too
grep -v '^report/claims.csv,identity_mean_attention,' tests/golden/pins.csv > "$T_TMP/golden/pins.csv"
# the verdicts of the full reference protocol are pinned too
printf 'report/claims.csv,no_such_claim,measured,1,1e-06,1e-09\n' >> "$T_TMP/golden/pins.csv"
expect_exit 1 "pin of a vanished number -> exit 1" -- "$EPAR" run-all --check --golden "$T_TMP/golden" -q
expect_grep '(missing)' "$T_TMP/out"
grep -q '^reference/report/claims.csv,opt_structured_consistency_enhanced,verdict,reproduced,' tests/golden/pins.csv && ok ||
    fail "the full protocol's headline verdict is not pinned"
sed 's/^\(reference\/report\/claims.csv,opt_structured_consistency_enhanced,verdict,\)reproduced,/\1not reproduced,/' \
    tests/golden/pins.csv > "$T_TMP/golden/pins.csv"
expect_exit 1 "a flipped headline verdict -> exit 1" -- "$EPAR" run-all --check --golden "$T_TMP/golden" -q
expect_grep 'reference/report/claims.csv +opt_structured_consistency_enhanced +verdict' "$T_TMP/out"
# updating is deliberate and restores a passing check
expect_exit 0 "update the copy" -- "$EPAR" run-all --update-golden --golden "$T_TMP/golden" -q
expect_exit 0 "check after update" -- "$EPAR" run-all --check --golden "$T_TMP/golden" -q
rm "$T_TMP/golden/pins.csv"
expect_exit 3 "no pins" -- "$EPAR" run-all --check --golden "$T_TMP/golden" -q
expect_error_line "no regression pins" "no pins"
expect_grep 'make regress-update' "$T_TMP/err"
expect_exit 3 "no golden folder" -- "$EPAR" run-all --check --golden "$T_TMP/nowhere" -q
[ -z "$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'epar-golden.*' -newer "$T_TMP" 2>/dev/null)" ] && ok ||
    fail "temporary folders of --check left behind"
finish
