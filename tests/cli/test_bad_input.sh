#!/usr/bin/env bash
# Bad input of every kind: each case asserts the exit code (2 usage, 3 I/O or protocol, 4 resource),
# exactly one line "epar: error: ..." naming the problem (regex), and that nothing is left in the
# output folder (no files, no staging folder, no temp file).
#
# The cases are rows `bad COMMAND CODE PATTERN ARGS...`: the command runs as
#   epar COMMAND --quiet --no-render --out <fresh folder> ARGS...
# (a later --out in ARGS wins).
# To cover a new command, add rows for its own options; the shared rows at the end run for every
# command of the table automatically.
. "$(dirname "$0")/lib.sh"

MNT=()
cleanup() { for m in "${MNT[@]}"; do umount "$m" 2>/dev/null; done; rm -rf "$T_TMP"; }
trap cleanup EXIT

SKIPPED=0

N=0
# bad COMMAND CODE PATTERN ARGS...
bad() {
    local cmd=$1 code=$2 pat=$3; shift 3
    N=$((N + 1))
    local d="$T_TMP/case$N"
    mkdir -p "$d"
    CASE_DIR=$d
    expect_exit "$code" "[$N] $cmd $*" -- "$EPAR" "$cmd" --quiet --no-render --out "$d/out" "$@"
    expect_error_line "$pat" "[$N] $cmd $*"
    no_files_left "$d" "[$N] $cmd $*"
}
# nothing but fixtures (names starting with "fixture") and empty folders in the case folder
no_files_left() {
    local left
    left=$(find "$1" -mindepth 1 \( -type f -o -type l -o -name '*.tmp*' \) ! -path "$1/fixture*" | head -3)
    if [ -z "$left" ]; then ok; else fail "$2: files left: $left"; fi
}

F=$T_TMP/fixtures; mkdir -p "$F"
pf() { printf '%s' "$2" > "$F/$1"; echo "$F/$1"; }  # protocol fixture NAME CONTENT -> path
R='"version": 1, "default_preset": "r"'
ok_presets='"presets": {"r": {}}'
sec() { echo "{$R, $ok_presets, \"experiments\": {\"position-effect\": {$1}}}"; }
small="--length 8 --hidden 8 --batch 1 --runs 1 --seed 1"

# ---- malformed protocol files: exit 3, the message names the file and the JSON path or parse error ----
PE=position-effect
bad $PE 3 "cannot read protocol '.*none.json': .*No such file" --protocol "$F/none.json"
bad $PE 3 "cannot read protocol '.*fixtures': is a folder" --protocol "$F"
bad $PE 3 "malformed protocol '.*empty.json': .*end of file" --protocol "$(pf empty.json '')"
bad $PE 3 "malformed protocol '.*trunc.json'" --protocol "$(pf trunc.json '{"version": 1, "presets": {')"
printf '\x7fELF\x02\x01\n\r\x1b[2J\x00\xff\xfe binary' > "$F/binary.json"
bad $PE 3 "malformed protocol '.*binary.json'" --protocol "$F/binary.json"
bad $PE 3 "invalid protocol .*: \\$: expected a JSON object" --protocol "$(pf array.json '[1, 2]')"
bad $PE 3 "\\$\\.experiments\\.position-effect\\.length: expected an integer" --protocol "$(pf t1.json "$(sec '"length": "long"')")"
bad $PE 3 "\\$\\.experiments\\.position-effect\\.runs: expected an integer" --protocol "$(pf t2.json "$(sec '"runs": 2.5')")"
bad $PE 3 "\\$\\.presets\\.r\\.alpha: expected a number" \
    --protocol "$(pf t3.json "{$R, \"presets\": {\"r\": {\"alpha\": \"big\"}}, \"experiments\": {}}")"
bad $PE 3 "\\$\\.presets\\.r\\.form: expected" \
    --protocol "$(pf t4.json "{$R, \"presets\": {\"r\": {\"form\": 2}}, \"experiments\": {}}")"
bad $PE 3 "invalid token near 'NaN'" \
    --protocol "$(pf nan.json "{$R, \"presets\": {\"r\": {\"alpha\": NaN}}, \"experiments\": {}}")"
bad $PE 3 "real number overflow near '1e400'" --protocol "$(pf huge.json "$(sec '"length": 1e400')")"
bad $PE 3 "too big integer near '99999999999999999999'" --protocol "$(pf bigint.json "$(sec '"length": 99999999999999999999')")"
bad $PE 3 "length: expected an integer in \\[1, 1073741824\\], got 2000000000" --protocol "$(pf range.json "$(sec '"length": 2000000000')")"
bad $PE 3 "\\$\\.presets\\.r\\.alpha: expected a number > 0, got -1" \
    --protocol "$(pf neg.json "{$R, \"presets\": {\"r\": {\"alpha\": -1}}, \"experiments\": {}}")"
python3 -c "print('['*5000 + ']'*5000)" > "$F/deep.json" 2>/dev/null || printf '%5000s' '' | tr ' ' '[' > "$F/deep.json"
bad $PE 3 "maximum parsing depth" --protocol "$F/deep.json"
bad $PE 3 "\\$\\.version: unsupported version" --protocol "$(pf v2.json '{"version": 2, "default_preset": "r", "presets": {"r": {}}, "experiments": {}}')"
bad $PE 3 "\\$\\.version: unsupported version" --protocol "$(pf v1s.json '{"version": "1", "default_preset": "r", "presets": {"r": {}}, "experiments": {}}')"
bad $PE 3 "\\$\\.version: missing" --protocol "$(pf nov.json '{"default_preset": "r", "presets": {"r": {}}, "experiments": {}}')"
bad $PE 3 "\\$\\.presets: missing" --protocol "$(pf nop.json "{$R, \"experiments\": {}}")"
bad $PE 3 "\\$\\.default_preset: missing or not the name of a preset" \
    --protocol "$(pf nodp.json '{"version": 1, "default_preset": "x", "presets": {"r": {}}, "experiments": {}}')"
bad $PE 3 "\\$\\.experiments: missing" --protocol "$(pf noexp.json "{$R, $ok_presets}")"
# unknown keys are errors naming the JSON path (documented: typos must not pass silently)
bad $PE 3 "\\$\\.experiment: unknown key" --protocol "$(pf k1.json "{$R, $ok_presets, \"experiments\": {}, \"experiment\": {}}")"
bad $PE 3 "\\$\\.experiments\\.position-effect\\.lenght: unknown key" --protocol "$(pf k2.json "$(sec '"lenght": 8')")"
bad $PE 3 "\\$\\.presets\\.r\\.alhpa: unknown key" \
    --protocol "$(pf k3.json "{$R, \"presets\": {\"r\": {\"alhpa\": 1}}, \"experiments\": {}}")"
bad $PE 3 "duplicate object key" --protocol "$(pf dup.json "$(sec '"length": 8, "length": 9')")"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {}, "_c": "\xff\xfe"}' > "$F/utf8.json"
bad $PE 3 "unable to decode byte 0xff" --protocol "$F/utf8.json"
bad $PE 3 "\\$\\.seeds\\[1\\]: expected an integer seed" --protocol "$(pf seeds.json "{$R, \"seeds\": [1, -2], $ok_presets, \"experiments\": {}}")"
bad $PE 3 "\\$\\.seeds: expected a non-empty array" --protocol "$(pf seeds0.json "{$R, \"seeds\": [], $ok_presets, \"experiments\": {}}")"
bad $PE 3 "distance_curve: expected an integer in \\[1," --protocol "$(pf dc.json "$(sec '"distance_curve": 0')")"
# inconsistent values inside a valid file are protocol errors (3) naming the file, the section and the preset
bad $PE 3 "invalid protocol '.*heads.json': \\\$\\.experiments\\.position-effect \\(preset r\\): heads must divide hidden, got heads '3' and hidden '10'" \
    --protocol "$(pf heads.json "{$R, \"presets\": {\"r\": {\"heads\": 3}}, \"experiments\": {\"position-effect\": {\"hidden\": 10}}}")"
# fuzzing regressions (tests/fuzz/regress/protocol/): must fail cleanly, never crash
for f in tests/fuzz/regress/protocol/*; do
    [ -f "$f" ] || continue
    bad $PE 3 "protocol '$f'" --protocol "$f"
done

# option-parser fuzzing regressions (tests/fuzz/regress/options/: arguments separated by NUL bytes):
# whatever they parse to, epar exits with a documented code and no sanitizer/crash exit
for f in tests/fuzz/regress/options/*; do
    [ -f "$f" ] || continue
    mapfile -d '' args < "$f"
    "$EPAR" position-effect --quiet --no-render --length 8 --hidden 8 --batch 1 --runs 1 --out "$T_TMP/fz" \
        "${args[@]}" >/dev/null 2>&1 </dev/null
    rc=$?
    case $rc in 0|2|3|4) ok ;; *) fail "options regression $f: exit $rc" ;; esac
done

# ---- every numeric option: invalid values and lists -> exit 2 naming the option and the value ----
for v in abc '' 1e999 nan inf 1x 0x; do
    bad $PE 2 "invalid value for --alpha: '$v'" --alpha "$v"
done
bad $PE 2 "alpha must be a finite number > 0, got '0'" --alpha 0
bad $PE 2 "alpha must be a finite number > 0, got '-2'" --alpha -2
bad $PE 2 "beta must be a finite number >= 0, got '-1'" --beta -1
bad $PE 2 "invalid value for --beta: 'x'" --beta x
bad $PE 2 "gamma must be a finite number >= 0, got '-0.5'" --gamma -0.5
bad $PE 2 "invalid value for --gamma: '1,2'" --gamma 1,2
bad $PE 2 "temperature must be a finite number > 0 .*got '0'" --temperature 0
bad $PE 2 "temperature must be a finite number > 0 .*got '-1'" --temperature -1
bad $PE 2 "invalid value for --temperature: '1e-320'" --temperature 1e-320   # subnormal: 1/T would overflow
bad $PE 3 "invalid protocol '.*temp.json': .*temperature must be a finite number > 0" --protocol "$(pf temp.json "{$R, \"presets\": {\"r\": {\"temperature\": 1e-320}}, \"experiments\": {}}")"
bad $PE 2 "invalid value for --temperature: 'warm'" --temperature warm
for v in 1.5 99999999999 '' 8k 0x10; do
    bad $PE 2 "invalid value for --length: '$v' \\(expected an integer\\)" --length "$v"
done
bad $PE 2 "length must be >= 1, got '0'" --length 0
bad $PE 2 "length must be >= 1, got '-1'" --length=-1
bad $PE 2 "hidden must be >= 1, got '0'" --hidden 0
bad $PE 2 "invalid value for --hidden: 'x'" --hidden x
bad $PE 2 "heads must be >= 1, got '0'" --heads 0
bad $PE 2 "batch must be >= 1, got '0'" --batch 0
bad $PE 2 "invalid value for --batch: '2x'" --batch 2x
bad $PE 2 "runs must be >= 1, got '-3'" --runs -3
bad $PE 2 "invalid value for --runs: '1e3'" --runs 1e3
bad $PE 2 "invalid value for --seed: '-3'" --seed -3
bad $PE 2 "invalid value for --seed: '1.5'" --seed 1.5
bad $PE 2 "invalid value for --seed: '4294967296'" --seed 4294967296
for v in '1,,2' '' ',' '1,' 'a' '1.5' '-1' '4294967296' '1;2'; do
    bad $PE 2 "invalid value for --seeds" --seeds "$v"
done
bad $PE 2 "invalid value for --seeds: too many seeds" --seeds "$(seq -s, 1 65)"
bad $PE 2 "invalid value for --seeds: too many values" --seeds "$(seq -s, 1 300)"
bad $PE 2 "invalid value for --jobs: '0'" --jobs 0
bad $PE 2 "invalid value for --jobs: '-2'" -j -2
bad $PE 2 "invalid value for --jobs: 'x'" --jobs x
bad $PE 2 "invalid value for --distance-curve: '0'" --distance-curve 0
bad $PE 2 "invalid value for --distance-curve: 'x'" --distance-curve x
bad $PE 2 "invalid value for --alpha: '1\\?2'" --alpha $'1\n2'   # a newline stays on one line
bad $PE 2 "option '--alpha' needs a value" --alpha
bad $PE 2 "option '--no-render' takes no value, got '1'" --no-render=1
bad $PE 2 "unknown option '--alpah'" --alpah 1
bad $PE 2 "unknown option '-x'" -x
bad $PE 2 "unexpected argument 'extra'" extra
bad $PE 2 "unexpected argument 'x'" -- x
bad $PE 2 "unknown position-effect form 'fancy'" --form fancy
bad $PE 2 "unknown preset 'papr'" --preset papr

# ---- inconsistent combinations ----
bad $PE 2 "heads must divide hidden, got heads '3' and hidden '10'" --hidden 10 --heads 3
bad $PE 2 "heads must divide hidden, got heads '12' and hidden '8'" --preset paper --hidden 8
bad $PE 2 "'--seed -1' and '--seeds 1,2' exclude each other" --seeds 1,2 --seed -1

# ---- sizes that cannot fit: exit 4 before anything is written ----
bad $PE 4 "size does not fit: length 200000, batch 64" --length 200000 --hidden 8 --batch 64 --runs 1 --seed 1
bad $PE 4 "out of memory" --length 4 --hidden 4194304 --batch 1 --runs 1 --seed 1  # weights: 422 TB, beyond any address space

# ---- output paths ----
# a regular file, a path below a regular file, empty, a device, a folder that cannot be created
mk() { mkdir -p "$T_TMP/case$((N + 1))"; : > "$T_TMP/case$((N + 1))/fixture_file"; echo "$T_TMP/case$((N + 1))/fixture_file"; }
f=$(mk); bad $PE 3 "cannot use output folder '.*fixture_file': it is not a folder" $small --out "$f"
[ ! -s "$f" ] && ok || fail "the regular file given as --out was written to"
f=$(mk); bad $PE 3 "cannot use output folder '.*fixture_file/sub': '.*fixture_file' is not a folder" $small --out "$f/sub"
bad $PE 2 "invalid value for --out: '' \\(expected a folder\\)" $small --out ''
bad $PE 3 "cannot use output folder '/dev/full': it is not a folder" $small --out /dev/full
[ -c /dev/full ] && ok || fail "/dev/full is no longer a character device"
bad $PE 3 "cannot create output folder '/proc/epar-no-such/out'" $small --out /proc/epar-no-such/out
# <out>/position exists as a regular file: the run fails at commit and removes its staging folder
N1=$((N + 1)); mkdir -p "$T_TMP/case$N1/fixture_out"; : > "$T_TMP/case$N1/fixture_out/position"
bad $PE 3 "cannot create '.*fixture_out/position'" $small --out "$T_TMP/case$N1/fixture_out"
[ -z "$(find "$T_TMP/case$N1" -name '*.tmp*')" ] && ok || fail "staging folder left after a failed commit"
# missing folders are created (documented behaviour, not an error)
expect_exit 0 "missing output folders are created" -- "$EPAR" $PE --quiet --no-render $small --out "$T_TMP/new/a/b"
expect_file "$T_TMP/new/a/b/position/summary.csv"
# unwritable folder: a read-only mount as root (root ignores file modes), else mode 500
N1=$((N + 1)); ro="$T_TMP/case$N1/fixture_ro"; mkdir -p "$ro"
if [ "$(id -u)" -eq 0 ]; then
    if mount -t tmpfs -o ro,size=64k tmpfs "$ro" 2>/dev/null; then MNT+=("$ro"); else ro=; fi
else chmod 500 "$ro"; fi
if [ -n "$ro" ]; then
    bad $PE 3 "cannot write in output folder '.*fixture_ro': (Read-only file system|Permission denied)" $small --out "$ro"
    expect_empty_dir "$ro" "read-only folder stays empty"
else
    echo "# skip: read-only output folder (cannot mount a read-only tmpfs here)"; SKIPPED=$((SKIPPED + 1))
fi
# a full device: a 64 KiB tmpfs (root only); the first CSVs fit, a later one does not
N1=$((N + 1)); full="$T_TMP/case$N1/fixture_full"; mkdir -p "$full"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
    MNT+=("$full")
    bad $PE 3 "cannot write '.*': No space left on device" --length 64 --hidden 8 --batch 2 --runs 1 --seed 1 --out "$full"
    expect_empty_dir "$full" "full device: everything written before the failure is removed"
else
    echo "# skip: full device (needs root to mount a small tmpfs)"; SKIPPED=$((SKIPPED + 1))
fi
# standard output on a full device: exit 3, one error line; the files are complete (written before)
if [ -w /dev/full ]; then
    "$EPAR" $PE --no-render $small --out "$T_TMP/stdout_full" >/dev/full 2>"$T_TMP/err"; rc=$?
    [ "$rc" -eq 3 ] && ok || fail "stdout to /dev/full: exit $rc, want 3"
    expect_error_line "cannot write to standard output" "stdout to /dev/full"
    expect_file "$T_TMP/stdout_full/position/summary.csv"
    "$EPAR" --help >/dev/full 2>"$T_TMP/err"; rc=$?
    [ "$rc" -eq 3 ] && ok || fail "--help to /dev/full: exit $rc, want 3"
    [ -c /dev/full ] && ok || fail "/dev/full is no longer a character device"
fi

# ---- shared machinery, for every command of the table ----
cmds=$("$EPAR" --help | awk '/^Commands:/{f=1;next} f && /^  [a-z]/{print $1} f && /^$/{exit}')
for c in $cmds; do
    if [ "$c" = inspect ]; then   # the checkpoint holds the run's protocol values and seed: these are refused
        for o in protocol preset seed seeds; do bad "$c" 2 "unknown option '--$o'" --$o x; done
        bad "$c" 2 "invalid value for --jobs: '0'" --jobs 0
        bad "$c" 2 "unknown option '--no-such-option'" --no-such-option
        continue
    fi
    bad "$c" 3 "cannot read protocol '.*none.json'" --protocol "$F/none.json"
    bad "$c" 3 "malformed protocol '.*trunc.json'" --protocol "$F/trunc.json"
    bad "$c" 3 "\\$\\.version: unsupported version" --protocol "$F/v2.json"
    bad "$c" 2 "unknown preset 'papr'" --preset papr
    # train runs one seed (--seed); every other command takes a list
    if [ "$c" = train ]; then bad "$c" 2 "unknown option '--seeds'" --seeds 1,2
    else bad "$c" 2 "invalid value for --seeds: '1,,2'" --seeds 1,,2; fi
    bad "$c" 2 "invalid value for --seed: '-4'" --seed -4
    bad "$c" 2 "invalid value for --jobs: '0'" --jobs 0
    bad "$c" 2 "unknown option '--no-such-option'" --no-such-option
done

echo "# $T_NAME: $N cases run, $SKIPPED skipped (no root)"
finish
