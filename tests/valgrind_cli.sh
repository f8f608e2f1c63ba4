#!/usr/bin/env bash
# `make test-valgrind`, second part: the epar binary under valgrind on a small run and on the error
# paths (usage, protocol, I/O, resource), so leaks and invalid accesses on early returns are caught.
# Each run must exit with its documented code; valgrind's own errors exit 99.
# Not a tests/cli/test_*.sh: too slow for `make test` (valgrind), run by `make test-valgrind` only.
set -u
cd "$(dirname "$0")/.."
EPAR=${EPAR:-./epar}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/epar-vg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0; failed=0
vg() { # CODE DESCRIPTION -- args...
    local want=$1 desc=$2; shift 3
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite "$EPAR" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then pass=$((pass + 1))
    else failed=$((failed + 1)); echo "not ok valgrind: $desc: exit $rc, want $want"; grep -E '==[0-9]+==' "$tmp/err" | head -20; fi
}
s="--length 12 --hidden 8 --batch 2 --runs 1 --seeds 1,2 --no-render --quiet --jobs 2"
printf '{"version": 1, "presets": {' > "$tmp/trunc.json"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {}}, "experiments": {"position-effect": {"lenght": 3}}}' > "$tmp/key.json"
printf '{"version": 1, "default_preset": "r", "presets": {"r": {"heads": 3}}, "experiments": {}}' > "$tmp/heads.json"
: > "$tmp/file"
printf '{"version": 1, "default_preset": "r", "seeds": [1], "presets": {"r": {}}, "experiments": {"position-effect": {"length": 12, "hidden": 8, "batch": 2, "runs": 1}}}' > "$tmp/small.json"
vg 0 "small run" -- position-effect $s --out "$tmp/o"
# the golden protocol with compare's kernel timings at L = 64 (under valgrind the default 1024-4096 take hours)
sed 's/"claims_length": 64}/"claims_length": 64, "speed_lengths": [64], "speed_repeats": 1}/' tests/golden/protocol.json > "$tmp/vg.json"
vg 0 "run-all" -- run-all --protocol "$tmp/vg.json" --seed 42 --no-render --quiet --out "$tmp/o2"
vg 0 "help" -- position-effect --help
vg 0 "version" -- --version
vg 2 "unknown option" -- position-effect --alpah 1
vg 2 "bad number" -- position-effect --alpha nan
vg 2 "bad list" -- position-effect --seeds 1,,2
vg 2 "unknown preset" -- position-effect --preset papr
vg 2 "heads not dividing hidden" -- position-effect --protocol "$tmp/heads.json"
vg 3 "missing protocol" -- position-effect --protocol "$tmp/none.json"
vg 3 "truncated protocol" -- position-effect --protocol "$tmp/trunc.json"
vg 3 "unknown protocol key" -- position-effect --protocol "$tmp/key.json"
vg 3 "out is a file" -- position-effect $s --out "$tmp/file"
vg 3 "commit fails" -- position-effect $s --out "$tmp/file/sub"
vg 4 "size does not fit" -- position-effect --length 200000 --batch 64 --hidden 8 --runs 1 --seed 1 --quiet
echo "# valgrind_cli: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
