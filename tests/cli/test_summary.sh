#!/usr/bin/env bash
# README's headline numbers come from a run: its block "headline" is the opening of the pinned summary of a full
# run-all (docs/SUMMARY.md, docs/summary.json, `make summary-update`), the blocks of docs/ pages are the pinned ones,
# and a fresh `run-all --no-benchmark` agrees with the pin on everything that needs no trained benchmark; the check
# fails on a README, a page or a run that disagrees, and scripts/summary-update splices a new summary into them.
. "$(dirname "$0")/lib.sh"
check=tests/cli/summary_check.py
expect_file docs/SUMMARY.md
expect_file docs/summary.json
expect_exit 0 "README quotes the pinned summary" -- python3 "$check" README.md docs/SUMMARY.md docs/summary.json
grep -q '^<!-- headline:begin' README.md && grep -q '^<!-- benchmark:begin' docs/commands/benchmark.md && ok ||
    fail "README has no headline block, or docs/commands/benchmark.md no benchmark block"

# the check can fail: one number changed in README's block or in a page's, a count typed in elsewhere
sed '/^<!-- headline:begin/,/^<!-- headline:end -->/ s/\*\*\([0-9]*\) claims\*\*/**9\1 claims**/' README.md > "$T_TMP/README.md"
cmp -s README.md "$T_TMP/README.md" && fail "the README copy was not changed" || ok
expect_exit 1 "a README whose block differs from the pin" -- python3 "$check" "$T_TMP/README.md" docs/SUMMARY.md docs/summary.json
expect_grep "README's block 'headline' is not the opening paragraph of the pinned summary" "$T_TMP/out"
mkdir -p "$T_TMP/pg/docs/commands"
cp README.md "$T_TMP/pg/README.md"
sed '/^<!-- benchmark:begin/,/^<!-- benchmark:end -->/ s/on 0 of/on 1 of/' docs/commands/benchmark.md > "$T_TMP/pg/docs/commands/benchmark.md"
cmp -s docs/commands/benchmark.md "$T_TMP/pg/docs/commands/benchmark.md" && fail "the page copy was not changed" || ok
expect_exit 1 "a page whose block differs from the pin" -- python3 "$check" "$T_TMP/pg/README.md" docs/SUMMARY.md docs/summary.json
expect_grep "docs/commands/benchmark.md: block 'benchmark' is not the pinned one" "$T_TMP/out"
{ cat README.md; echo; echo "Of the 16 proxy verdicts 2 are reproduced."; } > "$T_TMP/README.md"
expect_exit 1 "a verdict count typed into README" -- python3 "$check" "$T_TMP/README.md" docs/SUMMARY.md docs/summary.json
expect_grep "README states verdict counts outside the generated blocks" "$T_TMP/out"

# a fresh run of the analyses (no benchmark) agrees with the pin on the static counts and lines
out=$T_TMP/fresh
expect_exit 0 "run-all --no-benchmark" -- "$EPAR" run-all --no-benchmark --no-render -q --out "$out"
expect_file "$out/report/SUMMARY.md"
expect_grep '^<!-- summary:begin' "$out/report/SUMMARY.md"
expect_grep 'no trained benchmark' "$out/report/SUMMARY.md"
expect_exit 0 "the fresh run agrees with the pin on what needs no benchmark" -- \
    python3 "$check" README.md docs/SUMMARY.md docs/summary.json "$out" tests/golden/unpinned.txt
[ -s "$T_TMP/out" ] && grep -q ', 0 problem' "$T_TMP/out" && ok || fail "summary_check: $(head -5 "$T_TMP/out")"
# ... and the check would see a change: one static verdict count off in the pin
python3 - docs/summary.json "$T_TMP/pin.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
j["static"]["verdicts"]["reproduced"] += 1
json.dump(j, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False, indent=2)
PYEOF
expect_exit 1 "a pin whose static counts differ" -- python3 "$check" README.md docs/SUMMARY.md "$T_TMP/pin.json" "$out"
expect_grep "static verdicts differ from the pin" "$T_TMP/out"

# every number of the summary is the audit's: the verdict counts of the opening line are claims.csv's
total=$(python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' "$out/report/claims.csv")
expect_grep "judges \*\*$total claims\*\*" "$out/report/SUMMARY.md"

# scripts/summary-update splices a run's summary into README and docs/ (in a copy of the tree)
mkdir -p "$T_TMP/tree/scripts" "$T_TMP/tree/docs/commands" "$T_TMP/run/report"
cp scripts/summary-update "$T_TMP/tree/scripts/"
printf 'intro\n<!-- headline:begin (the opening) -->\nold numbers\n<!-- headline:end -->\nend\n' > "$T_TMP/tree/README.md"
printf 'a page\n<!-- benchmark:begin -->\nold\n<!-- benchmark:end -->\nend\n' > "$T_TMP/tree/docs/commands/benchmark.md"
printf '<!-- summary:begin (new) -->\nnew numbers\nand more\n\n- a line\n<!-- summary:end -->\n\n<!-- benchmark:begin (new) -->\n- trained\n<!-- benchmark:end -->\n' > "$T_TMP/run/report/SUMMARY.md"
echo '{}' > "$T_TMP/run/report/summary.json"
expect_exit 0 "summary-update --from a run" -- "$T_TMP/tree/scripts/summary-update" --from "$T_TMP/run"
printf 'intro\n<!-- headline:begin (the opening) -->\nnew numbers\nand more\n<!-- headline:end -->\nend\n' > "$T_TMP/want.md"
cmp -s "$T_TMP/tree/README.md" "$T_TMP/want.md" && ok || fail "summary-update's README: $(diff "$T_TMP/want.md" "$T_TMP/tree/README.md" | head -5)"
printf 'a page\n<!-- benchmark:begin (new) -->\n- trained\n<!-- benchmark:end -->\nend\n' > "$T_TMP/want.md"
cmp -s "$T_TMP/tree/docs/commands/benchmark.md" "$T_TMP/want.md" && ok ||
    fail "summary-update's page: $(diff "$T_TMP/want.md" "$T_TMP/tree/docs/commands/benchmark.md" | head -5)"
cmp -s "$T_TMP/tree/docs/SUMMARY.md" "$T_TMP/run/report/SUMMARY.md" && ok || fail "summary-update did not pin docs/SUMMARY.md"
# a run without the benchmark is no pin: README is left alone
sed -i '/benchmark:/,$d' "$T_TMP/run/report/SUMMARY.md"
cp "$T_TMP/tree/README.md" "$T_TMP/readme.before"
expect_exit 1 "summary-update of a run without its benchmark" -- "$T_TMP/tree/scripts/summary-update" --from "$T_TMP/run"
expect_grep "no benchmark block" "$T_TMP/err"
cmp -s "$T_TMP/tree/README.md" "$T_TMP/readme.before" && ok || fail "a refused summary-update changed README"
finish
