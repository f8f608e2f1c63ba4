#!/usr/bin/env bash
# The staged grid (docs/STAGED.md) on a tiny grid of the smoke budget with three looks (2, 3 and 5 seeds): the later
# looks train only the cells of the claims still open and write their tables under benchmark/stages/; --jobs 1 ==
# --jobs 2, --shard 1/2 + 2/2 + --merge == one process, and kill -9 + resume == one process, byte for byte (every CSV
# of every look and stages.json), and so is mpirun -np 2; --plan trains nothing; --cap adds a look; a bad --cap exits 2;
# by default (futility) a claim that cannot close by the cap gets no later look (the grid above turns futility off).
. "$(dirname "$0")/lib.sh"
python3 - "$EPAR_ROOT/paper_protocol.json" "$T_TMP/staged.json" "$T_TMP/futile.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
b = j["experiments"]["benchmark"]["budgets"]["smoke"]
b.update(seeds=[42, 43, 44, 45, 46, 47], stages=[2, 3, 5])
json.dump(j, open(sys.argv[3], "w"))
# the smoke budget learns nothing, so no open claim can close by the cap: without futility, to run the later looks
b.update(extend_all_open=True)
json.dump(j, open(sys.argv[2], "w"))
PYEOF
grid="--protocol $T_TMP/staged.json --budget smoke --tasks recall,needle --mechanisms none,rope,epar-basic,epar-enhanced --quiet --no-render"
# every CSV of every look (cost.csv: wall clock) and stages.json (less the claims of the cost cell, whose verdicts
# read the wall clock, and the count of decided claims that includes them)
tables() {
    (cd "$1/benchmark" && find . -name '*.csv' ! -name cost.csv ! -path './cells/*' | sort | while read -r f; do
        echo "== $f"; cat "$f"; done; echo "== stages.json"
     python3 -c "
import json, sys
d = json.load(open('stages.json'))
d['claims'] = {k: v for k, v in d['claims'].items() if v['cells'] > 0}
d.pop('decided_trained_claims')
print(json.dumps(d, indent=1))")
}

a=$T_TMP/a
expect_exit 0 "staged grid, --jobs 2" -- "$EPAR" benchmark $grid --jobs 2 --out "$a"
expect_file "$a/benchmark/stages.json"
looks=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['looks']))" "$a/benchmark/stages.json")
[ "$looks" -ge 2 ] && ok || fail "a later look ran ($looks looks in stages.json)"
[ -n "$(find "$a/benchmark/stages" -name main_table.csv 2>/dev/null | head -1)" ] && ok || fail "a later look wrote its tables"
# a later look's cells: seeds 44 and up only for the claims' own cells (never every cell of the grid)
n44=$(find "$a/benchmark/cells" -path '*seed-44*' -name cell.json | wc -l)
n42=$(find "$a/benchmark/cells" -path '*seed-42*' -name cell.json | wc -l)
[ "$n44" -lt "$n42" ] && ok || fail "look 2 trained only some cells at seed 44 ($n44 of $n42)"
python3 - "$a/benchmark/stages.json" <<'PYEOF' && ok || fail "stages.json: every claim's look, seeds, verdict, level and folder"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stages"] == [2, 3, 5] and abs(d["look_level"] - (1 - 0.05 / 3)) < 1e-12, d["look_level"]
for cid, c in d["claims"].items():
    assert c["seeds"] == [2, 3, 5][c["look"] - 1], (cid, c)
    assert (c["root"] == "") == (c["look"] == 1), (cid, c)
    assert not c["open"] or c["verdict"] == "inconclusive", (cid, c)
assert d["trained_tokens"] > 0 and d["cells"] > 0
PYEOF
tables "$a" > "$T_TMP/a.txt"

b=$T_TMP/b
expect_exit 0 "staged grid, --jobs 1" -- "$EPAR" benchmark $grid --jobs 1 --out "$b"
tables "$b" > "$T_TMP/b.txt"
cmp -s "$T_TMP/a.txt" "$T_TMP/b.txt" && ok || fail "--jobs 1 == --jobs 2 through every look: $(diff "$T_TMP/a.txt" "$T_TMP/b.txt" | head -5)"

# shards run the first look; the merge gathers them and runs the later looks here
for k in 1 2; do expect_exit 0 "shard $k/2" -- "$EPAR" benchmark $grid --shard $k/2 --out "$T_TMP/s$k"; done
expect_exit 0 "merge" -- "$EPAR" benchmark $grid --merge "$T_TMP/s1" "$T_TMP/s2" --out "$T_TMP/m"
tables "$T_TMP/m" > "$T_TMP/m.txt"
cmp -s "$T_TMP/a.txt" "$T_TMP/m.txt" && ok || fail "shards + merge == one process: $(diff "$T_TMP/a.txt" "$T_TMP/m.txt" | head -5)"

# kill -9 at some point of the run, then the same command again
k=$T_TMP/k
timeout -s KILL 1.5 "$EPAR" benchmark $grid --jobs 2 --out "$k" >/dev/null 2>&1
expect_exit 0 "resume after kill -9" -- "$EPAR" benchmark $grid --jobs 2 --out "$k"
tables "$k" > "$T_TMP/k.txt"
cmp -s "$T_TMP/a.txt" "$T_TMP/k.txt" && ok || fail "kill -9 + resume == one process: $(diff "$T_TMP/a.txt" "$T_TMP/k.txt" | head -5)"

# under mpirun the ranks share the first look's cells and every later look's (EPAR_MPI: make test's MPI build)
EPAR_MPI=${EPAR_MPI-./epar-mpi}
if command -v mpirun >/dev/null && [ -n "$EPAR_MPI" ] && [ -x "$EPAR_MPI" ]; then
    [ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    expect_exit 0 "mpirun -np 2" -- mpirun --oversubscribe -np 2 "$EPAR_MPI" benchmark $grid --jobs 1 --out "$T_TMP/mpi"
    tables "$T_TMP/mpi" > "$T_TMP/mpi.txt"
    cmp -s "$T_TMP/a.txt" "$T_TMP/mpi.txt" && ok || fail "mpirun -np 2 == one process: $(diff "$T_TMP/a.txt" "$T_TMP/mpi.txt" | head -5)"
else
    echo "# test_staged: MPI part skipped (needs mpirun and an epar-mpi of the same build)"
fi

# --plan: the looks, the claims each cell feeds, an estimate; nothing trained
p=$T_TMP/p
expect_exit 0 "--plan" -- "$EPAR" benchmark --protocol "$T_TMP/staged.json" --budget smoke --tasks recall,needle \
    --mechanisms none,rope,epar-basic,epar-enhanced --plan --out "$p"
[ ! -d "$p/benchmark/cells" ] && ok || fail "--plan trained nothing"
"$EPAR" benchmark --protocol "$T_TMP/staged.json" --budget smoke --tasks recall,needle --mechanisms none,rope,epar-basic,epar-enhanced \
    --plan --out "$p" > "$T_TMP/plan.txt" 2>&1
expect_grep '^benchmark --budget smoke: 3 look\(s\) at 2, 3, 5 seeds; every look judges at level 0.9833' "$T_TMP/plan.txt"
expect_grep '^look 1: every cell at 2 seeds: 17 cells' "$T_TMP/plan.txt"
expect_grep '^  needle / epar-enhanced: .*proxy_train_squad2_f1' "$T_TMP/plan.txt"
expect_grep '^look 3: the cells of the claims still open at 5 seeds: at most' "$T_TMP/plan.txt"

# futility (the default): the open claims here need more seeds than the cap (none learned), so no later look
f=$T_TMP/f
"$EPAR" benchmark --protocol "$T_TMP/futile.json" --budget smoke --tasks recall,needle --mechanisms none,rope,epar-basic,epar-enhanced \
    --no-render --out "$f" > "$T_TMP/futile.txt" 2>&1
expect_grep 'of the open claims stopped before the cap: at the observed spread they need more seeds than the cap' "$T_TMP/futile.txt"
python3 - "$f/benchmark/stages.json" <<'PYEOF' && ok || fail "futility: one look; every open claim at 2 seeds, its seeds needed above the cap"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["looks"]) == 1 and "futility" in d, d["looks"]
op = [c for c in d["claims"].values() if c["open"]]
assert op and all(c["seeds"] == 2 and (c["seeds_needed"] is None or c["seeds_needed"] > 5) for c in op), op
PYEOF
[ "$(find "$f/benchmark/cells" -path '*seed-44*' -name cell.json | wc -l)" -eq 0 ] && ok || fail "futility: no cell at seed 44"

# --cap: one more look at 6 seeds, the first cells reused (a rerun of the same grid trains only the new look's)
expect_exit 0 "--cap 6" -- "$EPAR" benchmark $grid --cap 6 --out "$a"
python3 - "$a/benchmark/stages.json" <<'PYEOF' && ok || fail "--cap 6: a fourth look, each at 1 - 0.05/4"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stages"] == [2, 3, 5, 6] and abs(d["look_level"] - (1 - 0.05 / 4)) < 1e-12, d
PYEOF
for bad in "--cap 5" "--cap 4" "--cap 65"; do
    expect_exit 2 "bad $bad" -- "$EPAR" benchmark $grid $bad --out "$T_TMP/bad"
done
expect_empty_dir "$T_TMP/bad" "bad --cap"
finish
