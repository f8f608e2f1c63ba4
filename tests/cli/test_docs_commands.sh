#!/usr/bin/env bash
# The commands and links of README.md, output/README.md and docs/ keep working (tests/cli/doc_commands.py): every
# epar command of a fenced block and of the command table's examples parses, its named values (tasks, mechanisms,
# budgets, presets, forms) are accepted, the fast ones run, every make target exists, every link resolves and
# every page is reachable from README.md. Then the check is shown to fail on a copy of the docs with one thing
# broken at a time.
. "$(dirname "$0")/lib.sh"
check=$EPAR_ROOT/tests/cli/doc_commands.py
mkdir -p "$T_TMP/dc" "$T_TMP/cache"
expect_exit 0 "the docs' commands and links" -- python3 "$check" "$EPAR" "$EPAR_ROOT" "$T_TMP/dc" "$T_TMP/cache"
grep -q ', 0 problem(s)$' "$T_TMP/out" && ok || fail "doc_commands: $(grep -m5 'not ok' "$T_TMP/out")"
n=$(sed -n 's/^doc_commands: \([0-9]*\) checked.*/\1/p' "$T_TMP/out")
[ "${n:-0}" -ge 100 ] && ok || fail "doc_commands checked only '${n:-0}' commands and links"
# README as a front page (issue 52): at most 250 lines, none over 300 characters, a runnable example in the first 60
[ "$(wc -l < README.md)" -le 250 ] && ok || fail "README.md has $(wc -l < README.md) lines (at most 250)"
long=$(awk 'length > 300 {print NR}' README.md | head -3 | tr '\n' ' ')
[ -z "$long" ] && ok || fail "README.md lines over 300 characters: $long"
first=$(awk '/^```/ {f = !f; next} f && /^\.\/epar [a-z]/ {print NR; exit}' README.md)
[ -n "$first" ] && [ "$first" -le 60 ] && ok || fail "README.md's first runnable example is at line '${first:-none}' (want <= 60)"

# the check fails: a copy of the docs with eight things broken, each a problem it must report
rm -rf "$T_TMP/tree"; mkdir -p "$T_TMP/tree/output" "$T_TMP/tree/bench" "$T_TMP/dc2"
cp -r README.md Makefile paper_protocol.json docs "$T_TMP/tree/"; cp output/README.md "$T_TMP/tree/output/"
cp bench/README.md "$T_TMP/tree/bench/"
t=$T_TMP/tree
sed -i -e 's/--gamma 0.5/--gama 0.5/' -e 's/--mechanisms none,alibi,rope,kerple /--mechanisms none,alibi,ropee,kerple /' \
    -e 's/--task recall --steps 600/--task recal --steps 600/' -e 's/^make run-all /make runall /' \
    -e 's/#how-to-read-a-verdict/#how-to-read-verdicts/' "$t/README.md"
sed -i 's/--eval-items 512 /--eval-items 1024 /' "$t/docs/commands/inspect.md"
rm "$t/docs/commands/scale.md"
echo '# a page no link leads to' > "$t/docs/orphan-page.md"
expect_exit 1 "a broken copy of the docs" -- python3 "$check" "$EPAR" "$t" "$T_TMP/dc2" "$T_TMP/cache"
while IFS='|' read -r desc pat; do
    grep -q -E "$pat" "$T_TMP/out" && ok || fail "$desc: no line '$pat' in: $(grep -m9 'not ok' "$T_TMP/out")"
done <<'LIST'
a renamed option|the options of 'epar position-effect --gama 0.5' do not parse
a mechanism that does not exist|'ropee' is not a value 'epar compare' accepts
a task that does not exist|'recal' is not a value 'epar train' accepts
a value checked when the command runs|inspect\.md:[0-9]+: 'epar inspect .*--eval-items 1024' exits 2
a make target that does not exist|'make runall' is not a target
a page that moved|link 'docs/commands/scale.md' leads to no file
an anchor without its heading|no heading '#how-to-read-verdicts'
a page no link leads to|docs/orphan-page.md cannot be reached from README.md
LIST
# and nothing else (the moved page is linked twice: from README and from docs/commands/README.md)
[ "$(grep -c '^not ok' "$T_TMP/out")" -eq 9 ] && ok || fail "the broken copy: $(grep -c '^not ok' "$T_TMP/out") problems reported, want 9"
finish
