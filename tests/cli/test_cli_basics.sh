#!/usr/bin/env bash
# The command line: help for every command, version, unknown commands/options, exit codes.
. "$(dirname "$0")/lib.sh"

expect_exit 0 "--help" -- "$EPAR" --help
expect_grep 'position-effect' "$T_TMP/out"
expect_exit 0 "--version" -- "$EPAR" --version
for lib in GSL OpenBLAS libcsv jansson; do expect_grep "^$lib " "$T_TMP/out"; done
expect_exit 2 "no command" -- "$EPAR"
expect_exit 2 "unknown command" -- "$EPAR" no-such-command
expect_error_line "unknown command 'no-such-command'" "unknown command message"

# -h, --help and `help CMD` for every command of the table (read from --help)
cmds=$("$EPAR" --help | awk '/^Commands:/{f=1;next} f && /^  [a-z]/{print $1} f && /^$/{exit}')
[ -n "$cmds" ] && ok || fail "no commands listed in --help"
for c in $cmds; do
    expect_exit 0 "$c -h" -- "$EPAR" "$c" -h
    expect_grep "usage: epar $c" "$T_TMP/out"
    expect_exit 0 "$c --help" -- "$EPAR" "$c" --help
    expect_exit 0 "help $c" -- "$EPAR" help "$c"
    expect_grep "usage: epar $c" "$T_TMP/out"
done
expect_exit 2 "help for an unknown command" -- "$EPAR" help nope

# unknown options get a suggestion; values are checked
expect_exit 2 "unknown option" -- "$EPAR" position-effect --gama 0.5
expect_error_line "unknown option '--gama'" "unknown option message"
expect_grep "did you mean '--gamma'" "$T_TMP/err"
expect_exit 2 "option without value" -- "$EPAR" position-effect --alpha
expect_exit 2 "positional argument" -- "$EPAR" position-effect extra

# GSL's CBLAS is OpenBLAS: Debian's libgsl pulls in libgslcblas, but every cblas_ symbol must bind to OpenBLAS
if LD_DEBUG=bindings "$EPAR" position-effect --length 8 --hidden 8 --batch 1 --runs 1 --seed 1 --no-render -q \
        --out "$T_TMP/bind" 2>"$T_TMP/bind.log" && grep -q "symbol \`cblas_dgemm'" "$T_TMP/bind.log"; then
    if grep -E "symbol \`cblas_" "$T_TMP/bind.log" | grep -v -q 'libopenblas'; then
        fail "a cblas_ symbol binds outside OpenBLAS: $(grep -E "symbol \`cblas_" "$T_TMP/bind.log" | grep -v libopenblas | head -2)"
    else ok; fi
else
    echo "# skip (not counted): LD_DEBUG bindings not available, the cblas_ binding was not checked"
fi

# a mistyped command gets the nearest one; 'help help' and 'help --help' explain help
expect_exit 2 "mistyped command" -- "$EPAR" positon-effect
expect_error_line "unknown command 'positon-effect'" "mistyped command message"
expect_grep "^hint: did you mean 'epar position-effect'\?" "$T_TMP/err"
expect_exit 2 "mistyped run-all" -- "$EPAR" runall
expect_grep "did you mean 'epar run-all'" "$T_TMP/err"
expect_exit 2 "a word far from every command" -- "$EPAR" xyz
if grep -q 'did you mean' "$T_TMP/err"; then fail "'xyz' got a suggestion"; else ok; fi
# the same suggestion (lib/err epar_nearest) for a swap of two letters, a form, and a family of mechanisms
expect_exit 2 "swapped letters" -- "$EPAR" trian
expect_grep "^hint: did you mean 'epar train'\?" "$T_TMP/err"
expect_exit 2 "mistyped form" -- "$EPAR" position-effect --form enhance --out "$T_TMP/hint"
expect_grep "^hint: did you mean 'enhanced'\?" "$T_TMP/err"
expect_exit 2 "a mechanism family (compare)" -- "$EPAR" compare --mechanisms epar --out "$T_TMP/hint"
expect_grep "^hint: did you mean 'epar-basic' or 'epar-enhanced'\?" "$T_TMP/err"
expect_exit 2 "a mechanism family (train)" -- "$EPAR" train --mechanism epar --out "$T_TMP/hint"
expect_grep "^hint: did you mean 'epar-basic' or 'epar-enhanced'\?" "$T_TMP/err"
# the hint lists every trainable mechanism, the last one of the catalogue at its end
last=$("$EPAR" compare --list | grep -E '^[a-z0-9-]+ ' | grep -E ' §[0-9a-z]+ +yes ' | awk 'END {print $1}')
expect_grep "$last\)$" "$T_TMP/err"
expect_exit 2 "a mechanism family (benchmark)" -- "$EPAR" benchmark --mechanisms epar --out "$T_TMP/hint"
expect_grep "^hint: did you mean 'epar-basic' or 'epar-enhanced'\?" "$T_TMP/err"
expect_empty_dir "$T_TMP/hint" "a mistyped name writes nothing"
expect_exit 0 "help help" -- "$EPAR" help help
expect_grep '^usage: epar help' "$T_TMP/out"
expect_exit 0 "help --help" -- "$EPAR" help --help

# --seed and --seeds together: a usage error naming both values, nothing written
expect_exit 2 "--seed with --seeds" -- "$EPAR" position-effect --seed 42 --seeds 43,44 --out "$T_TMP/seeds"
expect_error_line "'--seed 42' and '--seeds 43,44' exclude each other" "--seed with --seeds"
expect_empty_dir "$T_TMP/seeds" "--seed with --seeds writes nothing"

# --help columns line up in terminal columns, '§' counting as one (the summaries start at one column)
widths=$(LC_ALL=C.UTF-8 "$EPAR" --help | LC_ALL=C.UTF-8 bash -c '
    f=0; while IFS= read -r line; do
        [ "$line" = "Commands:" ] && { f=1; continue; }; [ $f = 1 ] && [ -z "$line" ] && break
        [[ $f = 1 && $line =~ ^(.*[^\ ]\ \ +)[^\ ] ]] && p=${BASH_REMATCH[1]} && echo ${#p}
    done' | sort -u)
[ "$(echo "$widths" | wc -l)" -eq 1 ] && [ -n "$widths" ] && ok || fail "--help summary columns start at: $(echo $widths)"
LC_ALL=C.UTF-8 "$EPAR" position-effect --help | grep -q '§' && fail "position-effect --help has a § row (alignment untested)" || ok
expect_exit 0 "--help" -- "$EPAR" --help
expect_grep '^  compare +all sources ' "$T_TMP/out"

# --version names the BLAS kernel every command uses, and the one 'scale' runs with when it differs
expect_exit 0 "--version" -- "$EPAR" --version
k=$(sed -n 's/.*(kernel \([A-Za-z0-9]*\)[;)].*/\1/p' "$T_TMP/out")
expect_exit 0 "scale reports its kernel" -- "$EPAR" scale --length 256 --repeats 1 --out "$T_TMP/sc"
ks=$(sed -n 's/.*(BLAS kernel \([A-Za-z0-9]*\)).*/\1/p' "$T_TMP/err")
if [ -n "$k" ] && { [ "$ks" = "$k" ] || grep -q "'epar scale' uses $ks" <("$EPAR" --version); }; then ok
else fail "--version says kernel '$k', scale ran with '$ks' and --version does not say so"; fi
expect_grep '^epar: scale: repetition 1 of 1 took' "$T_TMP/err"

# make install DESTDIR=...: binary, protocol, the manual page and completions, generated from the command table
# (install-files: the installation part of 'make install', for the binary under test, building nothing)
inst=$T_TMP/inst
if make -s -C "$EPAR_ROOT" install-files DESTDIR="$inst" PREFIX=/usr EPAR_BIN="$EPAR" >/dev/null 2>"$T_TMP/err"; then ok
else fail "make install DESTDIR: $(head -c 300 "$T_TMP/err")"; fi
for f in bin/epar share/epar/paper_protocol.json share/man/man1/epar.1 share/bash-completion/completions/epar \
         share/zsh/site-functions/_epar; do expect_file "$inst/usr/$f"; done
for c in $cmds; do
    grep -q "^\.SS $c\$" "$inst/usr/share/man/man1/epar.1" && ok || fail "epar.1 has no section for '$c'"
done
grep -q 'here: ' "$inst/usr/share/man/man1/epar.1" && fail "epar.1 names this machine's protocol path" || ok
if command -v man >/dev/null; then
    MANWIDTH=100 man -l "$inst/usr/share/man/man1/epar.1" > "$T_TMP/man.txt" 2>"$T_TMP/man.err" && ok || fail "man -l epar.1 failed"
    expect_grep '^EPAR\(1\)' "$T_TMP/man.txt"
    expect_grep '^ +-m, --mechanisms LIST' "$T_TMP/man.txt"
    if grep -q -i 'warning' "$T_TMP/man.err"; then fail "man -l warns: $(head -c 200 "$T_TMP/man.err")"; else ok; fi
    # issue 52: EXAMPLES for every command, an ENVIRONMENT section, the shared options once
    sed -n '/^EXAMPLES/,/^SEE ALSO/p' "$T_TMP/man.txt" > "$T_TMP/man.ex"
    for c in $cmds; do
        grep -q "^ *epar $c\( \|\$\)" "$T_TMP/man.ex" && ok || fail "epar.1 has no example of '$c'"
    done
    sed -n '/^ENVIRONMENT/,/^FILES/p' "$T_TMP/man.txt" > "$T_TMP/man.env"
    # every variable the code reads (getenv), and OMP_NUM_THREADS, which libgomp reads for it
    for v in OMP_NUM_THREADS $(grep -rho 'getenv("[A-Z_]*")' lib cmd experiments | sed 's/getenv("\(.*\)")/\1/' | sort -u); do
        grep -q "$v" "$T_TMP/man.env" && ok || fail "epar.1's ENVIRONMENT does not name $v"
    done
    n=$(grep -c -E '^ +--protocol FILE$' "$T_TMP/man.txt")
    [ "$n" = 1 ] && ok || fail "epar.1 gives --protocol $n times (the shared options once)"
    n=$(grep -c -E '^ +--gamma X$' "$T_TMP/man.txt")
    [ "$n" -le 3 ] && ok || fail "epar.1 gives --gamma $n times (the model parameters once, beside the commands whose text differs)"
else
    echo "# skip (not counted): man is not installed, epar.1 was not rendered"
fi
comp() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _epar; echo "${COMPREPLY[*]}"' _ \
         "$inst/usr/share/bash-completion/completions/epar" "$@"; }
[ "$(comp epar posit)" = position-effect ] && ok || fail "bash completion of 'epar posit': '$(comp epar posit)'"
[ "$(comp epar compare --mech)" = --mechanisms ] && ok || fail "bash completion of 'compare --mech': '$(comp epar compare --mech)'"
[ "$(comp epar position-effect --form e)" = enhanced ] && ok || fail "bash completion of '--form e'"
# values (issue 52): tasks, trainable mechanisms, budgets, presets, from the tables the commands check against (their
# error hints list the same names); files for inspect's checkpoints; --help once; registered for epar and ./epar
tasks=$("$EPAR" train --task zz 2>&1 | sed -n 's/^hint: tasks: //p' | sed 's/, / /g')
[ -n "$tasks" ] && [ "$(comp ./epar train --task '')" = "$tasks" ] && ok ||
    fail "bash completion of 'train --task ': '$(comp ./epar train --task '')', want '$tasks'"
mechs=$("$EPAR" train --mechanism zz 2>&1 | sed -n 's/^hint: training supports: //p' | sed 's/, / /g')
[ -n "$mechs" ] && [ "$(comp epar train --mechanism '')" = "$mechs" ] && ok ||
    fail "bash completion of 'train --mechanism ': '$(comp epar train --mechanism '' | head -c 100)', want the trainable ids"
[ "$(comp epar benchmark -m '')" = "$mechs" ] && ok || fail "bash completion of 'benchmark -m ': not the trainable ids"
[ "$(comp epar train --mechanism epar)" = "epar-basic epar-enhanced" ] && ok || fail "bash completion of '--mechanism epar'"
[ "$(comp epar benchmark --mechanisms none,ali)" = "none,alibi none,alibi-learned" ] && ok ||
    fail "bash completion of a list item: '$(comp epar benchmark --mechanisms none,ali)'"
[ "$(comp epar compare --mechanisms tup)" = tupe ] && ok || fail "compare offers every mechanism (tupe): '$(comp epar compare --mechanisms tup)'"
[ -z "$(comp epar train --mechanism tup)" ] && ok || fail "train offers an untrainable mechanism: '$(comp epar train --mechanism tup)'"
budgets=$(python3 -c 'import json; print(" ".join(k for k in json.load(open("paper_protocol.json"))["experiments"]["benchmark"]["budgets"] if k[0] != "_"))')
presets=$(python3 -c 'import json; print(" ".join(json.load(open("paper_protocol.json"))["presets"]))')
[ "$(comp epar benchmark --budget '')" = "$budgets" ] && ok || fail "bash completion of '--budget ': '$(comp epar benchmark --budget '')', want '$budgets'"
[ "$(comp epar run-all --benchmark-budget q)" = quick ] && ok || fail "bash completion of '--benchmark-budget q'"
[ "$(comp epar position-effect --preset '')" = "$presets" ] && ok || fail "bash completion of '--preset ': '$(comp epar position-effect --preset '')'"
mkdir -p "$T_TMP/ck/run" && : > "$T_TMP/ck/run/checkpoint.bin"
[ "$(comp epar inspect "$T_TMP/ck/run/che")" = "$T_TMP/ck/run/checkpoint.bin" ] && ok || fail "inspect's checkpoint: no file offered"
[ -z "$(comp epar inspect --item '')" ] && ok || fail "inspect --item offers something: '$(comp epar inspect --item '')'"
[ "$(comp epar train -- | tr ' ' '\n' | grep -c -x -- --help)" = 1 ] && ok || fail "train's --help offered other than once"
for c in $cmds; do
    n=$(comp epar "$c" -- | tr ' ' '\n' | sort | uniq -d | head -3)
    [ -z "$n" ] && ok || fail "bash completion of '$c --' repeats: $n"
done
# without a protocol to read the presets and budgets from: one error line, exit 3, nothing on stdout
mkdir -p "$T_TMP/noproto" && cp "$EPAR" "$T_TMP/noproto/epar"
expect_exit 3 "--completion without a protocol" -- bash -c 'cd "$1" && ./epar --completion bash' _ "$T_TMP/noproto"
expect_error_line "cannot read protocol" "--completion without a protocol"
[ ! -s "$T_TMP/out" ] && ok || fail "--completion without a protocol printed a partial script"
reg=$(bash -c 'source "$1"; complete -p epar; complete -p ./epar' _ "$inst/usr/share/bash-completion/completions/epar" 2>&1)
[ "$(echo "$reg" | grep -c -- '-F _epar')" = 2 ] && ok || fail "completion not registered for epar and ./epar: $reg"
if command -v zsh >/dev/null; then zsh -n "$inst/usr/share/zsh/site-functions/_epar" && ok || fail "zsh -n _epar"
else echo "# skip (not counted): zsh is not installed, _epar was not parsed"; fi
# the installed binary, run outside the source tree, names its own protocol copy as the default
(cd "$T_TMP" && "$inst/usr/bin/epar" position-effect --help) > "$T_TMP/out"
expect_grep "here: $inst/usr/bin/../share/epar/paper_protocol.json\)" "$T_TMP/out"
finish
