#!/usr/bin/env bash
# The task options are one table, epar_task_options in lib/tasks.c: `epar train`'s options and their --help (so the
# manual page), the keys of experiments.train.<task> and of the benchmark's tasks are made from its rows. Read from the
# source as written, the table must be what the binary shows and accepts, and nothing else may hold a copy of a row,
# a help text or a default.
. "$(dirname "$0")/lib.sh"

# ---- the rows as lib/tasks.c writes them: key member type def bench_def use help (tab-separated)
python3 - lib/tasks.c > "$T_TMP/rows" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
block = src[src.index("const struct epar_task_option epar_task_options[] = {"):]
block = block[:block.index("{.f = {0}}};")]
for row in block.split("{.f = {")[1:]:
    key = re.search(r'\.key = "(\w+)"', row).group(1)
    member = re.search(r'\.offset = OPT\((\w+)\)', row).group(1)
    typ = re.search(r'\.type = EPAR_FIELD_(\w+)', row).group(1)
    d = re.search(r'\.def = ([-+0-9.e]+)', row)
    b = re.search(r'\.bench_def = ([-+0-9.e]+)', row)
    use = re.search(r'\.use = ([A-Z |]+)', row).group(1).replace(" ", "")
    lits = re.search(r'\.help = ((?:"(?:[^"\\]|\\.)*"\s*)+)', row).group(1)
    help_ = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', lits))
    print("\t".join([key, member, typ, d.group(1) if d else "0", b.group(1) if b else "0", use, help_]))
PY
n=$(wc -l < "$T_TMP/rows")
[ "$n" -ge 8 ] && ok || fail "only $n rows read from lib/tasks.c's epar_task_options"

# ---- epar train --help: an option per TRAIN row, its help the row's, its default the row's def
expect_exit 0 "train --help" -- "$EPAR" train --help
cp "$T_TMP/out" "$T_TMP/help"
while IFS=$'\t' read -r key member typ def bdef use help; do
    case "$use" in *TRAIN*) ;; *) continue ;; esac
    name=${key//_/-}
    want=$help
    case "$typ" in INT|DOUBLE) want="$help (default: the protocol's, else $(printf '%g' "$def"))" ;; esac
    line=$(grep -E -- "^      --$name( [A-Z]+)? " "$T_TMP/help")
    text=$(printf '%s' "$line" | sed -E 's/^ +--[a-z-]+( [A-Z]+)? +//')
    [ "$text" = "$want" ] && ok || fail "--$name: help '$text', the table says '$want'"
done < "$T_TMP/rows"
# the benchmark's drifted "(32)": no help line of the Tasks group shows a number in parentheses of its own
sed -n '/^Tasks:/,/^$/p' "$T_TMP/help" | grep -E '\([0-9.]+\)' && fail "a task option's help holds its own default" || ok

# ---- a row's help text and its place are written once: no other row, help or default of a task option
while IFS=$'\t' read -r key member typ def bdef use help; do
    c=$(grep -rF --include='*.[ch]' -- "\"$help\"" lib cmd experiments | wc -l)
    [ "$c" -eq 1 ] && ok || fail "the help of '$key' is written $c times: $(grep -rlF -- "\"$help\"" lib cmd experiments | tr '\n' ' ')"
    copies=$(grep -rnE "offsetof\([^)]*\b(task|opt)\.$member\)|\b(task|opt)\.$member = [0-9]" cmd experiments lib)
    [ -z "$copies" ] && ok || fail "a copy of the row or default of '$key': $copies"
done < "$T_TMP/rows"

# ---- experiments.train.<task> takes every TRAIN key (lm's in lm, the others in recall), and run.json records the
# row's default when the protocol sets it so
head -c 20000 README.md > "$T_TMP/text.txt"
python3 - "$T_TMP/rows" "$T_TMP/train.json" "$T_TMP/text.txt" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
d = json.load(open("paper_protocol.json"))
t = d["experiments"]["train"]
for key, member, typ, dflt, bdef, use, help_ in rows:
    if "TRAIN" not in use: continue
    obj = t["lm"] if key in ("text", "holdout") else t["recall"]
    obj[key] = sys.argv[3] if typ == "STRING" else (int(float(dflt)) if typ == "INT" else float(dflt))
t["recall"]["train_sequences"] = 0
json.dump(d, open(sys.argv[2], "w"))
PY
tiny="--length 16 --dim 8 --heads 2 --layers 1 --mlp 8 --batch 2 --steps 2 --eval-every 1 --eval-batches 1 -q --no-render"
expect_exit 0 "train recall: the table's keys in experiments.train.recall" -- \
    "$EPAR" train --task recall --protocol "$T_TMP/train.json" $tiny --pairs 2 --keys 4 --values 4 --out "$T_TMP/o1"
expect_exit 0 "train lm: the table's keys in experiments.train.lm" -- \
    "$EPAR" train --task lm --protocol "$T_TMP/train.json" $tiny --out "$T_TMP/o2"
python3 - "$T_TMP/rows" "$T_TMP/o1/train/recall/epar-enhanced/run.json" "$T_TMP/o2/train/lm/epar-enhanced/run.json" \
    "$T_TMP/text.txt" <<'PY' && ok || fail "run.json's task_options are not the protocol's (the rows' defaults)"
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
rec = json.load(open(sys.argv[2]))["config"]["task_options"]
lm = json.load(open(sys.argv[3]))["config"]["task_options"]
given = {"pairs": 2, "keys": 4, "values": 4}
bad = 0
for key, member, typ, dflt, bdef, use, help_ in rows:
    if "TRAIN" not in use: continue
    o = lm if key in ("text", "holdout") else rec
    want = sys.argv[4] if typ == "STRING" else given.get(key, float(dflt))
    if key == "train_sequences": continue          # written only when set (0: a fresh draw every batch)
    if o.get(key) != want: print("task_options.%s: %r, want %r" % (key, o.get(key), want)); bad = 1
sys.exit(bad)
PY

# ---- the benchmark's tasks take every BENCH key (at its benchmark default, on recall)
python3 - "$T_TMP/rows" "$T_TMP/bench.json" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
d = json.load(open("paper_protocol.json"))
task = next(t for t in d["experiments"]["benchmark"]["tasks"] if t["id"] == "recall")
for key, member, typ, dflt, bdef, use, help_ in rows:
    if "BENCH" not in use or key in task: continue
    v = float(bdef) if float(bdef) != 0 else float(dflt)
    task[key] = bool(v) if typ == "BOOL" else (int(v) if typ == "INT" else v)
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 0 "benchmark: the table's keys in a task" -- \
    "$EPAR" benchmark --budget smoke --tasks recall --plan --protocol "$T_TMP/bench.json" --out "$T_TMP/o3"

finish
