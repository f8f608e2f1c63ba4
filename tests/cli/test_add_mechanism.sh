#!/usr/bin/env bash
# docs/DEVELOPMENT.md "Adding a mechanism" says what is true: its template, saved as lib/mechs/mymech.c in a copy of
# the tree with its one registry line, builds, is trainable in `compare --list`, runs through compare and train, and
# the generic tests (test_mech, test_nnpos, test_nn: gradient, causality, fp64 reference, overfit, threads) cover it
# without a test of its own. Builds a second epar (about a minute on 2 cores), so the sanitizer runs skip it.
. "$(dirname "$0")/lib.sh"
# every file of lib/mechs/ defines registered mechanisms (kernel.c two); a mechanism added as a file (EPAR_MECH_FILE) is
# named only by its file and its registry line among lib/, cmd/ and experiments/; one moved into a file from lib/mech.c's
# table (EPAR_MECH_FILE_AT) keeps the id compare and the experiments name, and is defined in that file alone
reg=lib/mechs/registry.h
for f in lib/mechs/*.c; do
    names=$(sed -n 's/^const struct epar_mech_def epar_mech_def_\([a-z0-9_]*\) = .*/\1/p' "$f")
    [ -n "$names" ] && ok || fail "$f defines no mechanism (const struct epar_mech_def epar_mech_def_<name> = ...)"
    for id in $names; do
        if grep -q -E "^EPAR_MECH_FILE\([A-Z0-9_]+, $id\)" "$reg"; then
            n=$(grep -rliw -- "$id" lib cmd experiments | wc -l)
            [ "$n" -eq 2 ] && ok ||
                fail "$id is named in $n files of lib/, cmd/, experiments/: $(grep -rliw -- "$id" lib cmd experiments | tr '\n' ' ')"
        elif grep -q -E "^EPAR_MECH_FILE_AT\([A-Z0-9_]+, $id\)" "$reg"; then
            n=$(grep -rlw -- "epar_mech_def_$id" lib cmd experiments | wc -l)
            [ "$n" -eq 1 ] && ok || fail "epar_mech_def_$id is named in $n files of lib/, cmd/, experiments/, want $f alone"
        else
            fail "$id of $f has no line in $reg"
        fi
    done
done
if [ "${EPAR_OPT:-1}" = 0 ]; then
    echo "# skip (not counted): an instrumented run; the optimised make test builds the template"
    finish; exit
fi
doc=docs/DEVELOPMENT.md
src="$T_TMP/tree"
mkdir -p "$src"
cp -r Makefile lib cmd experiments plots scripts tests paper_protocol.json "$src/"
sed -n '/<!-- template begin/,/<!-- template end -->/p' "$doc" | sed '1,2d;$d' | sed '$d' >"$src/lib/mechs/mymech.c"
grep -q 'epar_mech_def_mymech' "$src/lib/mechs/mymech.c" && ok || fail "no template between the markers of $doc"
grep -q -F 'EPAR_MECH_FILE(<NAME>, <name>)' "$doc" && ok || fail "$doc does not show the registry line"
echo 'EPAR_MECH_FILE(MYMECH, mymech)' >>"$src/lib/mechs/registry.h"
# the section's other promise: nothing else names the new mechanism
n=$(grep -rl mymech "$src/lib" "$src/cmd" "$src/experiments" | wc -l)
[ "$n" -eq 2 ] && ok || fail "the new mechanism is named in $n files of lib/, cmd/, experiments/, want its file and the registry"

tests="build/tests/test_mech build/tests/test_nnpos build/tests/test_nn"
# a make of its own, not a submake of the one running the suite: under `make -j2 test` the inherited jobserver made
# make warn "-j2 forced in submake", which the warnings check below counted against the template
if (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j"$(nproc)" epar $tests >"$T_TMP/build.log" 2>&1); then ok
else fail "the tree with the template does not build: $(grep -E 'error|warning' "$T_TMP/build.log" | head -3)"; finish; exit; fi
grep -q -E 'warning' "$T_TMP/build.log" && fail "warnings building the template: $(grep warning "$T_TMP/build.log" | head -2)" || ok
E="$src/epar"
"$E" compare --list >"$T_TMP/list" && grep -q -E '^mymech +additive bias +§32 +yes ' "$T_TMP/list" && ok ||
    fail "compare --list does not show mymech trainable: $(grep mymech "$T_TMP/list")"
"$E" compare --mechanisms none,mymech --set mymech.s=1 --out "$T_TMP/o" --no-render -q && ok || fail "compare --mechanisms mymech"
grep -q '^mymech,' "$T_TMP/o/compare/mechanisms.csv" && ok || fail "compare's mechanisms.csv has no mymech row"
"$E" train --task recall --mechanism mymech --steps 5 --out "$T_TMP/o" --no-render -q && ok || fail "train --mechanism mymech"
expect_file "$T_TMP/o/train/recall/mymech/learning_curve.csv"
"$E" --mechanism-docs | grep -q '^### mymech' && ok || fail "--mechanism-docs does not print the template's section"
for t in $tests; do
    (cd "$src" && CHECK_VERBOSE=1 "$t" >"$T_TMP/$(basename "$t").out" 2>&1) && ok || fail "$(basename "$t") fails with mymech registered"
done
for want in 'mymech: model gradient against finite differences' 'mymech: causal' \
            'mymech: trained attention \(fp32\) = compare' 'mymech: overfits one batch' 'mymech rows sum to 1' \
            "'mymech' has its function set"; do
    cat "$T_TMP"/test_*.out | grep -q -E "^ok .*$want" && ok || fail "no generic test '$want' ran on mymech"
done
finish
