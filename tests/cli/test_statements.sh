#!/usr/bin/env bash
# docs/SOURCE_STATEMENTS.md: every testable statement of the sources has a claim of its kind in paper_protocol.json, a
# reason line in docs/PROTOCOLS.md, or (trained statements only) an entry in tests/golden/pending_statements.txt, and
# every claim the table cites exists (tests/cli/statements.py). Then the check itself: broken copies must fail.
. "$(dirname "$0")/lib.sh"
tab=docs/SOURCE_STATEMENTS.md; pro=paper_protocol.json; md=docs/PROTOCOLS.md; pen=tests/golden/pending_statements.txt
chk=tests/cli/statements.py
for f in "$tab" "$pro" "$md" "$pen"; do [ -f "$f" ] && ok || fail "missing $f"; done

python3 "$chk" "$tab" "$pro" "$md" "$pen" >"$T_TMP/out" 2>&1 && ok || fail "statements not covered: $(grep '^problem' "$T_TMP/out" | head -5)"
grep '^# ' "$T_TMP/out"          # the coverage and the pending list, printed
n=$(grep -c '^| S[0-4]-[0-9][0-9] |' "$tab")
[ "$n" -ge 195 ] && ok || fail "$tab has $n statement rows, the first reading had 195"

# a broken copy of one file at a time must fail with the problem named: $1 description, $2 pattern, then the 4 files
expect_problem() {
    local desc=$1 pat=$2; shift 2
    if python3 "$chk" "$@" >"$T_TMP/bad" 2>&1; then fail "$desc: the check passed"
    elif grep -q -E "^problem: .*$pat" "$T_TMP/bad"; then ok
    else fail "$desc: no problem matching '$pat': $(head -3 "$T_TMP/bad")"; fi
}
row() { grep "^| $1 |" "$tab"; }
# a claim id that does not exist
sed 's/`seed003_t5_buckets`/`seed003_t5_bucketz`/' "$tab" >"$T_TMP/t1.md"
expect_problem "unknown claim id" "cites claim 'seed003_t5_bucketz'" "$T_TMP/t1.md" "$pro" "$md" "$pen"
# a static row whose claims are dropped (S3-15 has no reason line)
awk -F'|' 'BEGIN{OFS="|"} $2 == " S3-15 " {$5 = " — "} 1' "$tab" >"$T_TMP/t2.md"
expect_problem "static row without claim" "row S3-15 \\(static part" "$T_TMP/t2.md" "$pro" "$md" "$pen"
# a reason line removed
grep -v '^- S3-22 ' "$md" >"$T_TMP/p3.md"
expect_problem "reason removed" "row S3-22 \\(static part" "$tab" "$pro" "$T_TMP/p3.md" "$pen"
# a static row put on the pending list
{ cat "$pen"; echo "S3-15 waits"; } >"$T_TMP/pen4"
expect_problem "static row pending" "S3-15 has no PROXY part" "$tab" "$pro" "$md" "$T_TMP/pen4"
# a pending row that has got a trained claim meanwhile (S3-09's trained claims are in the table)
{ cat "$pen"; echo "S3-09  PROXY+F: waits"; } >"$T_TMP/pen5"
expect_problem "pending row covered" "S3-09 is covered now" "$tab" "$pro" "$md" "$T_TMP/pen5"
# a trained row that loses its trained claims and is not on the pending list (its static claim stays)
sed '/^| S3-09 /s/; `seed003_floater_learned_extrapolates`, `seed003_floater_recursion_cost`//' "$tab" >"$T_TMP/t6.md"
grep -q '^| S3-09 | [^|]*|[^|]*| `seed003_floater_sinusoid` |' "$T_TMP/t6.md" && ok || fail "the S3-09 row was not cut to its static claim"
expect_problem "proxy row neither claimed nor pending" "row S3-09 \\(proxy part" "$T_TMP/t6.md" "$pro" "$md" "$pen"
# ... and is fine once it is pending again
{ cat "$pen"; echo "S3-09  PROXY+F: waits"; } >"$T_TMP/pen6"
python3 "$chk" "$T_TMP/t6.md" "$pro" "$md" "$T_TMP/pen6" >"$T_TMP/out" 2>&1 && ok || fail "a pending trained row: $(grep '^problem' "$T_TMP/out" | head -3)"
# a static claim does not cover a trained part (S0-09 keeps its static claims without the proxy one)
sed 's/; `proxy_trained_attention_decay`//' "$tab" >"$T_TMP/t7.md"
expect_problem "static claim for a proxy part" "row S0-09 \\(proxy part" "$T_TMP/t7.md" "$pro" "$md" "$pen"
[ -n "$(row S0-09)" ] && ok || fail "no row S0-09"
finish
