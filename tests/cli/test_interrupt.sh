#!/usr/bin/env bash
# Interrupts: SIGINT / SIGTERM during a long run exit 130 / 143 and leave no temp, staging or partial
# files, whatever the phase (computing, writing the CSVs, gnuplot rendering). If the signal comes after
# the files were committed, the output folder is complete (never a mix). No gnuplot child survives.
# kill -9 of the benchmark (alone, and as one of two shards at work in one folder): the resumed run removes the
# staging folders no process owns, and only those.
. "$(dirname "$0")/lib.sh"

# ~2 s of work on an idle core: computing, then 13 tables, then gnuplot on 9 figures (L^2-row heatmaps)
# (not --quiet: the progress line tells the run has started and installed its signal handlers; before
# that a background job still has the shell's "ignore SIGINT")
long="--length 320 --hidden 32 --batch 4 --runs 4 --seeds 1,2 --jobs 2"
expected=$(printf '%s\n' attention_statistics attention_weights average_attention information_importance \
    position_attention position_correlation position_effect_distance position_effect_matrix position_scores)

# complete: every table and script, and a PNG per script when gnuplot rendered
complete() { # FOLDER [--no-render]
    local d=$1 f
    for f in $expected; do [ -s "$d/$f.csv" ] && [ -s "$d/$f.gp" ] || return 1; done
    for f in summary.csv properties.csv pos_star.csv run.json; do [ -s "$d/$f" ] || return 1; done
    if [ "${2:-}" != --no-render ] && command -v gnuplot >/dev/null; then for f in $expected; do [ -s "$d/$f.png" ] || return 1; done; fi
    return 0
}

# interrupt SIGNAL DELAY [extra options]
interrupt() {
    local sig=$1 delay=$2; shift 2
    local out="$T_TMP/int-$sig-$delay" want
    case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; esac
    "$EPAR" position-effect $long --out "$out" "$@" >/dev/null 2>"$T_TMP/err" &
    local pid=$! i
    for i in $(seq 200); do grep -q 'position-effect: L=' "$T_TMP/err" 2>/dev/null && break; sleep 0.05; done
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid"; local rc=$?
    local desc="SIG$sig after ${delay}s $*"
    echo "# $desc: exit $rc, last progress: $(grep '^epar: position-effect' "$T_TMP/err" | tail -1 | cut -c24-50)"
    if [ "$rc" -eq "$want" ]; then
        ok
        # one line says so (and what was left: nothing partial)
        [ "$(grep -c "^epar: interrupted by SIG$sig; .*no partial output was left\$" "$T_TMP/err")" = 1 ] && ok ||
            fail "$desc: no one line 'epar: interrupted by SIG$sig; ...': $(tail -c 200 "$T_TMP/err")"
        if [ -d "$out/position" ]; then
            # only possible when the signal came after the commit: then everything is there
            complete "$out/position" "$@" && ok || fail "$desc: partial output folder: $(ls "$out/position" | tr '\n' ' ')"
        else
            expect_empty_dir "$out" "$desc"
        fi
    elif [ "$rc" -eq 0 ]; then
        echo "# $desc: the run finished before the signal (machine fast): checking the output instead"
        complete "$out/position" "$@" && ok || fail "$desc: exit 0 but incomplete output"
    else
        fail "$desc: exit $rc, want $want ($(head -c 200 "$T_TMP/err"))"
    fi
    [ -z "$(find "$T_TMP" -path "$out*" \( -name '*.tmp*' -o -name '*.tmp-*' \) 2>/dev/null)" ] && ok ||
        fail "$desc: temp files left: $(find "$out" -name '*.tmp*' | head -3)"
    # no gnuplot child may keep writing: nothing appears afterwards either
    sleep 0.2
    if [ ! -d "$out/position" ]; then expect_empty_dir "$out" "$desc (0.2 s later)"; fi
    if grep -q '^epar: error:' "$T_TMP/err"; then fail "$desc: an error was printed: $(head -c 200 "$T_TMP/err")"; else ok; fi
}

# delays after the start; on an idle core computing takes ~0.8 s, rendering the next ~0.7 s
interrupt INT 0.3                 # while computing
interrupt TERM 0.3
interrupt HUP 0.5
interrupt INT 1.0                 # writing or rendering, depending on the machine
interrupt TERM 1.2
interrupt INT 1.5
interrupt INT 0.7 --no-render     # without gnuplot: computing or writing

# ---- compare (issue 52: it exited 130 without a word): one line, exit 130, nothing left under --out
"$EPAR" compare --out "$T_TMP/cmp" >/dev/null 2>"$T_TMP/err" &
pid=$!
for i in $(seq 200); do grep -q 'compare: [0-9]* mechanisms' "$T_TMP/err" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
kill -s INT "$pid" 2>/dev/null
wait "$pid"; rc=$?
[ "$rc" -eq 130 ] && ok || fail "compare interrupted: exit $rc, want 130 ($(tail -c 200 "$T_TMP/err"))"
expect_grep '^epar: interrupted by SIGINT; unfinished output removed, no partial output was left$' "$T_TMP/err"
expect_empty_dir "$T_TMP/cmp" "compare interrupted"

# ---- kill -9 of the benchmark: no handler runs, so the staging folders of the cells in progress stay
# (cells/<task>/<mechanism>/seed-<s>.tmp-<host>-<pid>-XXXXXX); the resumed run removes them (their lock is free:
# no process owns them) and its tables are those of an uninterrupted run
grid="--budget smoke --tasks recall,needle,set --mechanisms none,learned-ape,epar-enhanced --seeds 42,43 --no-render"
expect_exit 0 "benchmark, uninterrupted" -- "$EPAR" benchmark $grid --quiet --out "$T_TMP/bref"
stale=0
for delay in 0 0.1 0.3; do
    out=$T_TMP/bk-$delay
    "$EPAR" benchmark $grid --jobs 2 --out "$out" >/dev/null 2>"$T_TMP/berr" &
    pid=$!
    for i in $(seq 500); do grep -q 'done in' "$T_TMP/berr" 2>/dev/null && break; sleep 0.02; done
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    left=$(find "$out" -name '*.tmp-*' -type d | wc -l)
    stale=$((stale + left))
    echo "# benchmark killed (-9) ${delay}s after its first cell: $left staging folder(s) left"
    expect_exit 0 "benchmark resumed after kill -9" -- "$EPAR" benchmark $grid --out "$out"
    [ -z "$(find "$out" \( -name '*.tmp*' -o -name '.epar-lock*' \))" ] && ok ||
        fail "staging folders after the resumed benchmark: $(find "$out" -name '*.tmp*' | head -3)"
    if [ "$left" -gt 0 ]; then expect_grep "benchmark: removed $left staging folder\(s\) left by a killed run" "$T_TMP/err"; fi
    for f in main_table.csv comparisons.csv params.csv; do
        cmp -s "$T_TMP/bref/benchmark/$f" "$out/benchmark/$f" && ok || fail "resumed after kill -9: $f differs from an uninterrupted run"
    done
done
# a kill while cells are in progress leaves their folders: if none of the kills did, the cleanup went untested
[ "$stale" -gt 0 ] && ok || fail "no kill -9 left a staging folder (the runs ended before the kill?): the cleanup is untested"

# shards writing into the same cells/ at once: one is killed and resumed while the other runs; the resumed one
# removes only the killed process's folders (the running shard's are locked), and the running shard finishes
sgrid="--budget smoke --tasks recall,needle,set --mechanisms none,learned-ape,epar-enhanced --seeds 42,43,44,45 --no-render --jobs 1"
sh=$T_TMP/shards
"$EPAR" benchmark $sgrid --shard 1/2 --out "$sh" >/dev/null 2>"$T_TMP/s1err" &
s1=$!
"$EPAR" benchmark $sgrid --shard 2/2 --out "$sh" >/dev/null 2>"$T_TMP/s2err" &
s2=$!
for i in $(seq 500); do grep -q 'done in' "$T_TMP/s2err" 2>/dev/null && break; sleep 0.02; done
kill -9 "$s2" 2>/dev/null
wait "$s2" 2>/dev/null
kill -0 "$s1" 2>/dev/null && alive=running || alive="already done"
expect_exit 0 "shard 2/2 resumed beside shard 1/2 ($alive)" -- "$EPAR" benchmark $sgrid --shard 2/2 --out "$sh"
echo "# shard 2/2 killed and resumed while shard 1/2 was $alive: $(grep -o 'removed [0-9]* staging' "$T_TMP/err" || echo 'removed 0 staging')"
wait "$s1"
rc1=$?
[ "$rc1" -eq 0 ] && ok || fail "the running shard 1/2 failed (exit $rc1) beside a resumed shard: $(head -c 300 "$T_TMP/s1err")"
expect_exit 0 "the tables from both shards' cells" -- "$EPAR" benchmark $sgrid --out "$sh"
expect_grep '; 0 to run here' "$T_TMP/err"
[ -z "$(find "$sh" \( -name '*.tmp*' -o -name '.epar-lock*' \))" ] && ok || fail "staging folders left by the shards"

# no gnuplot started by these runs is still alive (their working folder was under $T_TMP)
left=""
for p in $(pgrep -x gnuplot 2>/dev/null); do
    case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$T_TMP"*) left="$left $p" ;; esac
done
[ -z "$left" ] && ok || fail "gnuplot children survived the interrupts:$left"
finish
