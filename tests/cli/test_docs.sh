#!/usr/bin/env bash
# docs/: every claim's source resolves to an entry of docs/SOURCES.md (document and section), every mechanism
# section that `epar compare --list` cites exists in docs/MECHANISMS.md, and every docs/ page named anywhere exists.
. "$(dirname "$0")/lib.sh"
src=docs/SOURCES.md
expect_file "$src"; expect_file docs/MECHANISMS.md; expect_file docs/PROTOCOLS.md

# the text of one document's entry in SOURCES.md: from its "### SN" heading to the next heading
entry() { awk -v h="### $1 " 'index($0, h) == 1 {f = 1; next} f && /^##/ {exit} f' "$src"; }
bad=0; n=0
while IFS= read -r s; do
    IFS=';' read -ra parts <<< "$s"
    for p in "${parts[@]}"; do
        p=${p# }
        n=$((n + 1))
        if [[ $p =~ ^(S[0-4])\ (00[0-4]_[0-9a-f]{16}\.txt) ]]; then
            doc=${BASH_REMATCH[1]}; file=${BASH_REMATCH[2]}
            e=$(entry "$doc")
            if ! grep -q "^### $doc — \`$file\`" "$src"; then bad=$((bad + 1)); echo "no SOURCES.md entry '### $doc — $file' for: $p"; continue; fi
            # each §section: its number (without the "(n)" item) or its heading appears in the document's entry
            for sec in $(grep -o '§[^ ,;/()]*' <<< "$p"); do
                grep -q -F -- "$sec" <<< "$e" || { bad=$((bad + 1)); echo "SOURCES.md entry of $doc lacks $sec (from: $p)"; }
            done
        elif [[ $p =~ ^(charles-wang888/epar-framework@[0-9a-f]+)\ ([^ ]+) ]]; then
            grep -q -F "${BASH_REMATCH[1]}" "$src" && grep -q -F "${BASH_REMATCH[2]}" "$src" ||
                { bad=$((bad + 1)); echo "SOURCES.md does not name $p"; }
        elif [[ $p =~ ^[A-Z][^“]*\ (19|20)[0-9][0-9],\ “([^”]+)” ]]; then   # a published paper (the literature claims)
            grep -q -F "\"${BASH_REMATCH[2]}\"" "$src" || { bad=$((bad + 1)); echo "SOURCES.md does not name the paper of: $p"; }
        else
            bad=$((bad + 1)); echo "source of an unknown form: $p"
        fi
    done
done < <(grep -o '"source": "[^"]*"' paper_protocol.json | cut -d'"' -f4 | sort -u)
[ "$n" -gt 20 ] && ok || fail "only $n claim sources read from paper_protocol.json"
[ "$bad" -eq 0 ] && ok || fail "$bad claim source(s) do not resolve in $src"

# mechanism sections: compare --list's column, and the section table of SOURCES.md
secs=$("$EPAR" compare --list | grep -E '^[a-z0-9-]+ ' | grep -oE ' §[0-9]+ ' | tr -d ' §' | sort -un)
[ "$(echo "$secs" | wc -w)" -gt 20 ] && ok || fail "compare --list shows few sections: $(echo $secs)"
for k in $secs; do grep -q "^## $k\. " docs/MECHANISMS.md && ok || fail "docs/MECHANISMS.md has no section $k"; done
for id in $("$EPAR" compare --list | awk 'NR > 1 && /^[a-z0-9-]+ +/ {print $1}'); do
    case "$id" in fixed-previous|fixed-next|fixed-left|fixed-right|fixed-start) continue ;; esac  # one row: fixed-current ... fixed-end
    grep -q -F "\`$id\`" "$src" && ok || fail "SOURCES.md names no work behind mechanism '$id'"
done

# every docs/ page named in the code, the protocol, the README or the docs exists; no reference to the shared
# documents that do not ship
for d in $(grep -rhoE 'docs/[A-Z_]+\.md' README.md paper_protocol.json cmd lib experiments tests docs | sort -u); do
    [ -f "$d" ] && ok || fail "'$d' is referenced but missing"
done
if grep -rnE '(^|[^/A-Za-z])(MECHANISMS|REPRODUCTION)\.md' README.md paper_protocol.json cmd lib experiments | grep -v 'docs/' | head -3 | grep -q .; then
    fail "references to MECHANISMS.md / REPRODUCTION.md outside docs/"; else ok; fi
# the benchmark page's budget table (docs/commands/benchmark.md) says what the protocol's budgets hold: seeds, model, steps x batch, lengths, the lm
# extrapolation lengths and their tokens (a README that drifted from the protocol said 128..1024 for 32..256)
python3 - docs/commands/benchmark.md paper_protocol.json <<'PY' >"$T_TMP/budgets" 2>&1 && ok || fail "docs/commands/benchmark.md budget table: $(head -c 400 "$T_TMP/budgets")"
import json, re, sys
readme, proto = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
budgets = proto["experiments"]["benchmark"]["budgets"]
bad, seen = [], 0
for line in readme.splitlines():
    m = re.match(r"\| `(\w+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| [^|]+ \|$", line)
    if not m or m.group(1) not in budgets:
        continue
    seen += 1
    b = budgets[m.group(1)]
    s = b["seeds"]
    seeds = str(s[0]) if len(s) == 1 else f"{s[0]}–{s[-1]}"
    want = [seeds, f"{b['layers']} × {b['dim']}, {b['heads']}, {b['mlp']}", f"{b['steps']} × {b['batch']}",
            f"{b['lm_length']} / {b['short_length']} / {b['long_length']}",
            f"{b['extrapolation'].replace(',', ', ')} ({b['extrapolation_tokens']})"]
    for got, w in zip(m.groups()[1:], want):
        if not got.strip().startswith(w):
            bad.append(f"{m.group(1)}: page '{got.strip()}', protocol '{w}'")
if seen != len(budgets):
    bad.append(f"{seen} budget rows in the page, {len(budgets)} budgets in the protocol")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
# docs/MECHANISMS.md §32 is what the file mechanisms say of themselves (epar --mechanism-docs, lib/mechs/)
sed -n '/<!-- mechanism docs begin/,/<!-- mechanism docs end -->/p' docs/MECHANISMS.md | sed '1d;$d' >"$T_TMP/mdocs"
"$EPAR" --mechanism-docs >"$T_TMP/mdocs.bin" && cmp -s "$T_TMP/mdocs" "$T_TMP/mdocs.bin" && ok ||
    fail "docs/MECHANISMS.md §32 differs from 'epar --mechanism-docs': $(diff "$T_TMP/mdocs" "$T_TMP/mdocs.bin" | head -3)"
finish
