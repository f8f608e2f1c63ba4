#!/usr/bin/env bash
# A disk that fills up mid-run: every command exits 3 with one "epar: error:" line naming the file and the reason,
# and leaves no empty or truncated file and no staging folder; the section folder of an earlier run stays as it was.
# The disk: tests/shim/enospc.c, LD_PRELOAD'ed (inherited by the gnuplot children), with room for a given number of
# bytes shared by every process of the run; and, where this machine lets the test mount one, a real small tmpfs.
# One command of each kind: CSV-only (optimal-position --no-render), rendered (position-effect, sensitivity),
# run-all --no-benchmark, benchmark --budget smoke.
. "$(dirname "$0")/lib.sh"

tb=${TESTBIN:-build/tests}
case $tb in /*) SHIM=$tb/libenospc.so ;; *) SHIM=$EPAR_ROOT/$tb/libenospc.so ;; esac
if [ ! -f "$SHIM" ]; then
    fail "the full-disk shim $SHIM is not built (make test builds it)"
    finish
    exit 1
fi
# an ASan build wants its runtime first in the library list; the shim is loaded before it (and is not sanitized)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
gp=0; command -v gnuplot >/dev/null && gp=1

# disk BYTES [SUFFIX] -- command...: run with room for BYTES bytes (only in files ending in SUFFIX when given);
# sets rc, stdout/stderr in $T_TMP/out, $T_TMP/err
disk() {
    local bytes=$1 match=${2:-}
    [ "$match" = -- ] && match="" || shift
    shift 2
    head -c 8 /dev/zero >"$T_TMP/counter"
    LD_PRELOAD=$SHIM ENOSPC_BYTES=$bytes ENOSPC_COUNTER=$T_TMP/counter ENOSPC_MATCH=$match "$@" >"$T_TMP/out" 2>"$T_TMP/err"
    rc=$?
}
used() { od -An -tu8 "$T_TMP/counter" | tr -d ' \n'; }

# a complete PNG: the signature first, the IEND chunk last
png_ok() {
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
        [ "$(tail -c 12 "$1" | od -An -tx1 | tr -d ' \n')" = 0000000049454e44ae426082 ]
}

# nothing damaged under DIR: no staging folder or temp file, no lock file, no empty file, every PNG complete,
# every CSV and script ending in a newline, every JSON parsing
no_damage() { # DIR DESC
    local d=$1 desc=$2 f bad=""
    [ -d "$d" ] || { ok; return; }
    bad=$(find "$d" \( -name '*.tmp*' -o -name '.epar-lock*' -o \( -type f -empty \) \) -print | head -3)
    while IFS= read -r f; do png_ok "$f" || bad="$bad $f(truncated)"; done < <(find "$d" -name '*.png')
    while IFS= read -r f; do [ "$(tail -c 1 "$f" | od -An -tx1 | tr -d ' ')" = 0a ] || bad="$bad $f(cut)"; done \
        < <(find "$d" \( -name '*.csv' -o -name '*.gp' -o -name '*.md' -o -name '*.txt' \))
    while IFS= read -r f; do python3 -m json.tool "$f" >/dev/null 2>&1 || bad="$bad $f(bad json)"; done \
        < <(find "$d" -name '*.json')
    [ -z "$bad" ] && ok || fail "$desc: damaged files left: $bad"
}

# the one error line: names a file (where it was to go, not a staging folder) and the reason
disk_error() { # DESC
    local n
    n=$(grep -c '^epar: error: ' "$T_TMP/err")
    if [ "$n" -eq 1 ] && grep -qE "^epar: error: cannot write '[^']+': (No space left on device|gnuplot left)" "$T_TMP/err" &&
        ! grep '^epar: error: ' "$T_TMP/err" | grep -q '\.tmp-'; then ok
    else fail "$1: want one 'epar: error: cannot write '<file>': <reason>' line: $(head -c 400 "$T_TMP/err")"; fi
}

# full DESC SECTION BYTES [SUFFIX] -- command... (with --out $T_TMP/o): exit 3, one error line, no section folder
full() {
    local desc=$1 sec=$2; shift 2
    rm -rf "$T_TMP/o"
    disk "$@"
    [ "$rc" -eq 3 ] && ok || fail "$desc: exit $rc on a full disk, want 3 ($(head -c 300 "$T_TMP/err"))"
    disk_error "$desc"
    [ ! -e "$T_TMP/o/$sec" ] && ok || fail "$desc: something of the section left: $(find "$T_TMP/o/$sec" | head -3)"
    no_damage "$T_TMP/o" "$desc"
}

# ---- CSV-only: optimal-position --no-render ----
small="--length 24 --hidden 16 --batch 2 --runs 4 --seeds 42,43 --quiet --no-render"
expect_exit 0 "optimal-position without the shim" -- "$EPAR" optimal-position $small --out "$T_TMP/ref"
rm -rf "$T_TMP/o"
disk 999999999 -- "$EPAR" optimal-position $small --out "$T_TMP/o"
total=$(used)
[ "$rc" -eq 0 ] && [ "$total" -gt 1000 ] && ok || fail "optimal-position with room to spare: exit $rc, $total bytes"
# what the shim counts is what is on disk, and the files are those of a run without it
[ "$total" -eq "$(find "$T_TMP/o/optimal" -type f -printf '%s\n' | awk '{s += $1} END {print s}')" ] && ok ||
    fail "the shim counted $total bytes, the files hold $(du -sb "$T_TMP/o/optimal")"
diff -r -x run.json "$T_TMP/ref/optimal" "$T_TMP/o/optimal" >/dev/null && ok || fail "the shim changed what was written"
for b in 0 $((total / 3)) $((total - 1)); do
    full "optimal-position --no-render, room for $b of $total bytes" optimal $b -- "$EPAR" optimal-position $small --out "$T_TMP/o"
done
rm -rf "$T_TMP/o"
disk "$total" -- "$EPAR" optimal-position $small --out "$T_TMP/o"
[ "$rc" -eq 0 ] && ok || fail "optimal-position with exactly the room it needs: exit $rc ($(head -c 300 "$T_TMP/err"))"
no_damage "$T_TMP/o" "optimal-position that fits"

# ---- rendered: position-effect (9 figures), sensitivity ----
small="--length 24 --hidden 16 --batch 2 --runs 2 --seeds 42,43 --quiet"
rm -rf "$T_TMP/o"
disk 999999999 -- "$EPAR" position-effect $small --out "$T_TMP/o"
total=$(used)
[ "$rc" -eq 0 ] && ok || fail "position-effect with room to spare: exit $rc ($(head -c 300 "$T_TMP/err"))"
for b in $((total / 2)) $((total - 1)); do
    full "position-effect, room for $b of $total bytes" position $b -- "$EPAR" position-effect $small --out "$T_TMP/o"
done
if [ "$gp" = 1 ]; then
    # only the figures fail: gnuplot exits 0 with an empty or cut PNG, epar sees it in the file
    for b in 0 5000 50000; do
        full "position-effect, room for $b bytes of figures" position $b .png -- "$EPAR" position-effect $small --out "$T_TMP/o"
    done
    grep -qE "^epar: error: cannot write '$T_TMP/o/position/[a-z_]+\.png': " "$T_TMP/err" && ok ||
        fail "the error names the figure in its section folder: $(head -c 300 "$T_TMP/err")"
    full "sensitivity --gamma 0.5, no room for figures" parameter 20000 .png -- \
        "$EPAR" sensitivity --gamma 0.5 --length 16 --hidden 16 --seeds 42,43 --quiet --out "$T_TMP/o"
else
    echo "# gnuplot not installed: the figure cases are skipped"
fi
# an earlier complete run's folder is kept as it was when the next run cannot be written
rm -rf "$T_TMP/keep"
expect_exit 0 "position-effect, a complete run" -- "$EPAR" position-effect $small --out "$T_TMP/keep"
cp -r "$T_TMP/keep/position" "$T_TMP/before"
disk $((total / 2)) -- "$EPAR" position-effect $small --gamma 0.7 --out "$T_TMP/keep"
[ "$rc" -eq 3 ] && ok || fail "position-effect over an earlier run, full disk: exit $rc"
diff -r "$T_TMP/before" "$T_TMP/keep/position" >/dev/null && ok || fail "the earlier run's folder changed"
no_damage "$T_TMP/keep" "position-effect over an earlier run"

# ---- run-all --no-benchmark (the small golden protocol): the disk fills up during the experiments ----
rm -rf "$T_TMP/o"
disk 1000000 -- "$EPAR" run-all --no-benchmark --protocol tests/golden/protocol.json --seed 42 --quiet --out "$T_TMP/o"
[ "$rc" -eq 3 ] && ok || fail "run-all on a full disk: exit $rc, want 3 ($(tail -c 300 "$T_TMP/err"))"
# one error line per experiment that could not be written, each naming its file and the reason
bad=$(grep '^epar: error: ' "$T_TMP/err" | grep -vE "^epar: error: cannot write '[^']+': (No space left on device|gnuplot left)" | head -2)
[ -z "$bad" ] && grep -q '^epar: error: ' "$T_TMP/err" && ok || fail "run-all error lines: $bad $(head -c 300 "$T_TMP/err")"
grep -q 'epar: run-all: .* failed (exit 3)' "$T_TMP/err" && ok || fail "run-all does not say which experiment failed"
no_damage "$T_TMP/o" "run-all on a full disk"
# a section folder that is there is complete: its run.json, and with gnuplot a PNG for every script
incomplete=""
for d in "$T_TMP"/o/*/; do
    [ -f "$d/run.json" ] || incomplete="$incomplete $d"
    if [ "$gp" = 1 ]; then for s in "$d"*.gp; do [ -e "$s" ] && [ ! -f "${s%.gp}.png" ] && incomplete="$incomplete $s"; done; fi
done
[ -z "$incomplete" ] && ok || fail "run-all on a full disk left incomplete sections:$incomplete"
[ ! -e "$T_TMP/o/report" ] && ok || fail "run-all on a full disk wrote report/"

# ---- benchmark --budget smoke on a small grid (--no-render: its steps_to_learn figure does not render yet), then
# resumed with room: the same tables as a run that never failed ----
grid="--budget smoke --tasks recall,needle,set --mechanisms none,learned-ape,epar-enhanced --seeds 42,43 --quiet --no-render"
expect_exit 0 "benchmark, reference run" -- "$EPAR" benchmark $grid --out "$T_TMP/bref"
rm -rf "$T_TMP/o"
# the corpus cache of the lm cost cell (4 MB, whose failure to be cached is not an error) is there already, so the
# room is taken by the cells: the disk fills up after some of them
if [ -f "$T_TMP/bref/train/data/kjv.txt" ]; then mkdir -p "$T_TMP/o/train/data" && cp "$T_TMP/bref/train/data/kjv.txt" "$T_TMP/o/train/data/"; fi
disk 200000 -- "$EPAR" benchmark $grid --out "$T_TMP/o"
[ "$rc" -eq 3 ] && ok || fail "benchmark on a full disk: exit $rc, want 3 ($(tail -c 300 "$T_TMP/err"))"
disk_error "benchmark on a full disk"
no_damage "$T_TMP/o" "benchmark on a full disk"
n=$(find "$T_TMP/o/benchmark/cells" -name cell.json | wc -l)
echo "# benchmark on a full disk: $n of 19 cells written before it filled up"
[ ! -e "$T_TMP/o/benchmark/main_table.csv" ] && ok || fail "benchmark on a full disk wrote its tables"
expect_exit 0 "the benchmark resumed with room" -- "$EPAR" benchmark $grid --out "$T_TMP/o"
no_damage "$T_TMP/o" "the resumed benchmark"
for f in main_table.csv comparisons.csv params.csv extrapolation.csv; do
    cmp -s "$T_TMP/bref/benchmark/$f" "$T_TMP/o/benchmark/$f" && ok || fail "resumed after a full disk: $f differs from an uninterrupted run"
done

# ---- a real small file system, when this machine lets the test mount one ----
mnt=$T_TMP/mnt
mkdir -p "$mnt"
if mount -t tmpfs -o size=300k tmpfs "$mnt" 2>/dev/null; then
    trap 'umount "$mnt" 2>/dev/null; rm -rf "$T_TMP"' EXIT
    expect_exit 3 "sensitivity --gamma 0.5 on a 300 KB tmpfs" -- \
        "$EPAR" sensitivity --gamma 0.5 --length 16 --hidden 16 --seeds 42,43 --quiet --out "$mnt/o"
    expect_error_line "cannot write '$mnt/o/parameter/[a-z_]+\.(png|csv|gp|txt|json)': No space left on device" "sensitivity on a 300 KB tmpfs"
    expect_empty_dir "$mnt/o" "sensitivity on a 300 KB tmpfs"
    umount "$mnt"
    mount -t tmpfs -o size=2m tmpfs "$mnt"
    expect_exit 3 "position-effect on a 2 MB tmpfs" -- "$EPAR" position-effect --quiet --out "$mnt/o"
    expect_error_line "cannot write '$mnt/o/position/[a-z_]+\.[a-z]+': No space left on device" "position-effect on a 2 MB tmpfs"
    expect_empty_dir "$mnt/o" "position-effect on a 2 MB tmpfs"
    umount "$mnt"
else
    echo "# mount -t tmpfs is not allowed here: the real small file system cases are skipped (the shim cases ran)"
fi
finish
