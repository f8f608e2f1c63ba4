# Shared helpers for CLI tests. Source it; call `finish` at the end.
# Each check prints "not ok ..." on failure; the summary line is "# <name>: N passed, M failed".
set -u
EPAR=${EPAR:-./epar}
case "$EPAR" in /*) ;; *) EPAR="$EPAR_ROOT/$EPAR" ;; esac
T_NAME=$(basename "$0" .sh)
T_PASS=0; T_FAIL=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/epar-cli.XXXXXX")
trap 'rm -rf "$T_TMP"' EXIT
cd "$EPAR_ROOT"

ok()   { T_PASS=$((T_PASS + 1)); }
fail() { T_FAIL=$((T_FAIL + 1)); echo "not ok $T_NAME: $*"; }

# expect_exit CODE DESCRIPTION -- command...   (stdout/stderr kept in $T_TMP/out, $T_TMP/err)
expect_exit() {
    local want=$1 desc=$2; shift 3
    "$@" >"$T_TMP/out" 2>"$T_TMP/err"; local rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else fail "$desc: exit $rc, want $want ($(head -c 300 "$T_TMP/err"))"; fi
}
# the last command's stderr has exactly one "epar: error:" line matching a pattern
expect_error_line() {
    local pat=$1 desc=$2 n
    n=$(grep -c '^epar: error: ' "$T_TMP/err")
    if [ "$n" -eq 1 ] && grep -q -E "^epar: error: .*$pat" "$T_TMP/err"; then ok
    else fail "$desc: stderr does not have one 'epar: error:' line matching '$pat': $(head -c 300 "$T_TMP/err")"; fi
}
# no files at all under a folder (nothing half-written)
expect_empty_dir() {
    local d=$1 desc=$2
    if [ ! -e "$d" ] || [ -z "$(find "$d" -mindepth 1 -print -quit)" ]; then ok
    else fail "$desc: files left in $d: $(find "$d" -mindepth 1 | head -5 | tr '\n' ' ')"; fi
}
expect_file() { if [ -s "$1" ]; then ok; else fail "missing or empty file $1"; fi; }
expect_grep() { if grep -q -E "$1" "$2"; then ok; else fail "'$1' not found in $2"; fi; }
finish() { echo "# $T_NAME: $T_PASS passed, $T_FAIL failed"; [ "$T_FAIL" -eq 0 ]; }
