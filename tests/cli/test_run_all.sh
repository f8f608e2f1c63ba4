#!/usr/bin/env bash
# epar run-all: the audit files (claims.csv schema, REPORT.md, index.html links), exit codes, stale and failing
# experiments, the smoke benchmark's audit. The regression check against tests/golden: tests/cli/test_run_all_check.sh.
. "$(dirname "$0")/lib.sh"

out=$T_TMP/full
expect_exit 0 "run-all (one seed, figures rendered when gnuplot is present)" -- "$EPAR" run-all --no-benchmark --seed 42 --out "$out"
expect_grep '^audit: [0-9]+ claims' "$T_TMP/out"
expect_grep '^  total ' "$T_TMP/out"
# progress on stderr as plain lines when stderr is not a terminal (no carriage returns)
expect_grep '^epar: run-all: \[1/[0-9]+\] position-effect' "$T_TMP/err"
if grep -q "$(printf '\r')" "$T_TMP/err"; then fail "progress bar drawn on a non-terminal"; else ok; fi
# the progress line and the summary count the same claims
np=$(sed -n 's/^epar: run-all: auditing \([0-9]*\) claims$/\1/p' "$T_TMP/err"); ns=$(sed -n 's/^audit: \([0-9]*\) claims.*/\1/p' "$T_TMP/out")
[ -n "$np" ] && [ "$np" = "$ns" ] && ok || fail "progress says '$np' claims, the summary '$ns'"
for f in report/claims.csv report/REPORT.md report/retention_definitions.csv index.html; do expect_file "$out/$f"; done
[ -z "$(find "$out" -name '*.tmp*')" ] && ok || fail "temp files left behind"
# every rendered claim row shows its claims.csv value rounded, never a falsehood (0.482 as "0", -0.5 as "-0")
python3 tests/cli/rendered_claims.py "$out" >"$T_TMP/rc.txt" && ok || fail "index.html rounding: $(head -5 "$T_TMP/rc.txt")"
# one seed has no spread: no prediction-rule claim may be "not reproduced" (it was, from t(-1) x sd nan)
n=$(python3 -c 'import csv,sys; print(sum(r["rule"].startswith("prediction") and r["verdict"] == "not reproduced" for r in csv.DictReader(open(sys.argv[1]))))' "$out/report/claims.csv")
[ "$n" = 0 ] && ok || fail "$n prediction claims 'not reproduced' with one seed"

# claims.csv: exact header, one of the verdicts on every row, every claim id of the protocol present
claims=$out/report/claims.csv
[ "$(head -1 "$claims")" = "claim_id,section,source,statement,reported,measured,measured_sd,measured_lo,measured_hi,n_seeds,rule,accepted,verdict,measurement,input,run_protocol_hash,run_seeds,run_epar_version,note,seeds_needed" ] && ok ||
    fail "claims.csv header: $(head -1 "$claims")"
python_free_verdicts() { # fields may be quoted, so look for a verdict word between commas on every row
    local bad=0 n=0
    while IFS= read -r line; do
        n=$((n + 1))
        case "$line" in
            *",reproduced,"*|*",partly reproduced,"*|*",not reproduced,"*|*",inconclusive,"*|*",trivially true,"*|\
            *",ill-posed,"*|*",needs >= 2 seeds,"*|*",not reproducible here,"*|*",stale,"*) ;;
            *) bad=$((bad + 1)); echo "bad row: $line" | head -c 200; echo ;;
        esac
    done < <(tail -n +2 "$claims")
    [ "$bad" -eq 0 ] && [ "$n" -gt 0 ]
}
python_free_verdicts && ok || fail "a claims.csv row without a verdict"
ids=$(grep -o '^    {"id": "[^"]*"' paper_protocol.json | sed 's/.*"id": "//; s/"$//')
[ -n "$ids" ] && ok || fail "no claim ids found in paper_protocol.json"
missing=0
for id in $ids; do
    grep -q "^$id," "$claims" || { missing=$((missing + 1)); echo "claim $id not in claims.csv"; }
done
[ "$missing" -eq 0 ] && ok || fail "$missing claim(s) of the protocol missing from claims.csv"
# the deterministic verdicts that do not depend on other experiments
expect_grep '^retention_max_basic,.*,not reproduced,' "$claims"
expect_grep '^retention_max_enhanced,.*,not reproduced,' "$claims"   # 78.95% is not 78% at half a unit
# one seed has no spread: a claim judged against a spread says so
expect_grep '^opt_structured_consistency_enhanced,.*,needs >= 2 seeds,' "$claims"
# every note says how its verdict follows, every row names its measurement and input
if awk -F, 'NR > 1 && $NF == ""' "$claims" | grep -q .; then fail "a claims.csv row with an empty note"; else ok; fi
expect_grep '^identity_mean_attention,.*,trivially true,' "$claims"
expect_grep '^ref_alpha_1_position_strength,.*,reproduced,' "$claims"
expect_grep '^train_wikitext103_ppl,.*,not reproducible here,.*needs training' "$claims"

# index.html and REPORT.md: every link resolves to an existing file
bad=0
for l in $(grep -o '\(href\|src\)="[^"]*"' "$out/index.html" | sed 's/^[a-z]*="//; s/"$//; s/#.*//' | grep .); do
    case "$l" in http:*|https:*|//*) bad=$((bad + 1)); echo "external link $l" ;; esac
    [ -f "$out/$l" ] || { bad=$((bad + 1)); echo "index.html link to missing $l"; }
done
[ "$bad" -eq 0 ] && ok || fail "$bad broken or external link(s) in index.html"
missing=0
for p in $(cd "$out" && find . -name '*.png' | sed 's|^\./||'); do
    grep -q "<img src=\"$p\"" "$out/index.html" || { missing=$((missing + 1)); echo "index.html does not show $p"; }
done
[ "$missing" -eq 0 ] && ok || fail "$missing PNG(s) not shown in index.html"
# figure captions and alt texts show what gnuplot's markup stands for (α, A<sub>ij</sub>), never the markup itself
raw=$(grep -o '<figure>.*</figure>' "$out/index.html" | grep -E '\{/|[_^]\{' | head -2)
[ -z "$raw" ] && ok || fail "gnuplot markup in index.html's figures: $raw"
grep -q '<figcaption>[^<]*α' "$out/index.html" && grep -q '<sub>ij</sub>' "$out/index.html" && ok ||
    fail "index.html's captions do not render {/Symbol a} and A_{ij}"
# every image with its size, so the page does not move when lazy images load
unsized=$(grep -o '<img [^>]*>' "$out/index.html" "$out/report/REPORT.html" | grep -v ' width="[1-9][0-9]*" height="[1-9][0-9]*"' | head -2)
[ -z "$unsized" ] && ok || fail "images without width and height: $unsized"
expect_grep '<meta name="viewport"' "$out/index.html"
expect_grep 'id="verdict-filter"' "$out/index.html"
[ "$(grep -c '<tr class="claim ' "$out/index.html")" -eq "$(($(wc -l < "$claims") - 1))" ] && ok ||
    fail "index.html has one claim row per claims.csv row"
# measured values at the precision of the reported figure (6 significant digits at most, a digit or two more only
# where a value that misses the claim would print as the claim), never the CSV's 12
long=$(grep -o 'data-label="measured" class="num meas">.*' "$out/index.html" | sed 's|</td>.*||; s/<[^>]*>//g' | tr ';[],' '\n\n\n\n' |
       sed -E 's/[^0-9.]//g; s/\.//; s/^0+//' | awk 'length($0) >= 10' | head -3)
[ -z "$long" ] && ok || fail "index.html shows measured values with 10+ significant digits: $long"
expect_file "$out/report/REPORT.html"
bad=0
for l in $(grep -o '\(href\|src\)="[^"#]*' "$out/report/REPORT.html" | sed 's/^[a-z]*="//'); do
    [ -f "$out/report/$l" ] || { bad=$((bad + 1)); echo "REPORT.html link to missing $l"; }
done
[ "$bad" -eq 0 ] && ok || fail "$bad broken link(s) in REPORT.html"
bad=0
for l in $(grep -o '](\([^)]*\))' "$out/report/REPORT.md" | sed 's/^](//; s/)$//'); do
    [ -f "$out/report/$l" ] || { bad=$((bad + 1)); echo "REPORT.md link to missing $l"; }
done
[ "$bad" -eq 0 ] && ok || fail "$bad broken link(s) in REPORT.md"
expect_grep '^## Known defects of the reference code' "$out/report/REPORT.md"
expect_grep 'gamma is ignored' "$out/report/REPORT.md"

# deterministic: same protocol and seed -> byte-identical audit, whatever --jobs
expect_exit 0 "second run, 1 thread" -- "$EPAR" run-all --no-benchmark --seed 42 --out "$T_TMP/again" --jobs 1 --no-render -q
[ ! -s "$T_TMP/out" ] && [ ! -s "$T_TMP/err" ] && ok || fail "--quiet still printed something"
# rows that hold wall-clock measurements (tests/golden/unpinned.txt) legitimately differ between runs
timing_rows=$(awk -F, '$1 == "report/claims.csv" && $2 != "*" {printf "%s^%s,", sep, $2; sep="|"}' tests/golden/unpinned.txt)
untimed() { if [ -n "$timing_rows" ]; then grep -v -E "$timing_rows" "$1"; else cat "$1"; fi; }
cmp -s <(untimed "$claims") <(untimed "$T_TMP/again/report/claims.csv") && ok ||
    fail "claims.csv not byte-identical across runs (timing rows excluded)"
cmp -s "$out/report/retention_definitions.csv" "$T_TMP/again/report/retention_definitions.csv" && ok ||
    fail "retention_definitions.csv not byte-identical"

# the benchmark is a step of run-all (here at the smoke budget): it runs after the experiments, and its proxy claims
# are judged (none left 'not reproducible here'); --no-benchmark above skipped it
expect_exit 0 "run-all with the smoke benchmark" -- "$EPAR" run-all --seed 42 --benchmark-budget smoke --out "$T_TMP/wb" --no-render
expect_grep '^epar: run-all: benchmark, budget smoke$' "$T_TMP/err"
expect_file "$T_TMP/wb/benchmark/main_table.csv"
n_proxy=$(grep -c '^proxy_' "$T_TMP/wb/report/claims.csv")
[ "$n_proxy" -ge 14 ] && ok || fail "only $n_proxy proxy claims in claims.csv"
grep '^proxy_' "$T_TMP/wb/report/claims.csv" | grep -q ',not reproducible here,' && fail "a proxy claim left unjudged" || ok
expect_exit 0 "a second run-all reuses the finished cells" -- "$EPAR" run-all --seed 42 --benchmark-budget smoke --out "$T_TMP/wb" --no-render
expect_grep '; 0 to run here' "$T_TMP/err"
expect_exit 2 "unknown benchmark budget" -- "$EPAR" run-all --benchmark-budget huge --out "$T_TMP/nb"
expect_error_line "unknown benchmark budget 'huge'" "unknown benchmark budget"
[ ! -e "$T_TMP/nb" ] && ok || fail "a usage error wrote $T_TMP/nb"
expect_exit 2 "--no-benchmark with --benchmark-budget" -- "$EPAR" run-all --no-benchmark --benchmark-budget smoke

# --audit-only on a folder without experiments: an error, not a verdict table
mkdir -p "$T_TMP/empty"
expect_exit 3 "audit only, nothing to audit" -- "$EPAR" run-all --audit-only --out "$T_TMP/empty" -q
expect_error_line "nothing to audit in '.*empty'" "audit-only on an empty folder"
expect_empty_dir "$T_TMP/empty" "audit-only on an empty folder writes nothing"
# stale inputs: an experiment rerun with other parameters, then audited: its claims are marked, not judged
expect_exit 0 "optimal-position with gamma 0.5 into the audited folder" -- "$EPAR" optimal-position --seed 42 --gamma 0.5 --types structured --out "$out" --no-render -q
expect_exit 0 "audit only" -- "$EPAR" run-all --audit-only --seed 42 --out "$out" --no-render -q
expect_grep '^opt_structured_consistency_enhanced,.*,stale,.*gamma=0.5.*would be' "$claims"
expect_grep '^opt_clustered_consistency_enhanced,.*,stale,' "$claims"
expect_grep '^retention_max_basic,.*,not reproduced,' "$claims"   # computed claims are never stale
# the types that run did not produce: "rerun the experiment", not "fix the claim's measure"
expect_grep '^ref_opt_random_consistency,.*,stale,.*no row matches.*holds another run.*rerun the experiment that writes output/optimal/' "$claims"
expect_grep '^retention_max_basic,.*,"computed: [^"]*","none \(the closed form' "$claims"
expect_grep '^train_glue_acc,.*,not reproducible here,"not measured: needs [^"]*",none,' "$claims"

# a measurement spec that does not fit its file: warning, verdict not reproducible here, the columns named
sed 's/"mean_attention_weight"}, "column": "value"}/"mean_attention_weight"}, "column": "valeur"}/' paper_protocol.json > "$T_TMP/spec.json"
expect_exit 0 "spec problem is not fatal" -- "$EPAR" run-all --no-benchmark --protocol "$T_TMP/spec.json" --seed 42 --no-render --out "$T_TMP/spec"
expect_grep 'warning: 1 claim\(s\) have a measurement spec' "$T_TMP/err"
expect_grep "^identity_mean_attention,.*not reproducible here,.*column 'valeur' not in the file \\(columns: metric,value,note\\)" "$T_TMP/spec/report/claims.csv"

# bad claims -> exit 3 naming the JSON path, nothing written
sed 's/"mean_attention_weight"}, "column": "value"}, "tolerance": {"rule": "exact"}/"mean_attention_weight"}, "column": "value"}, "tolerance": {"rule": "roughly"}/' paper_protocol.json > "$T_TMP/badrule.json"
cmp -s paper_protocol.json "$T_TMP/badrule.json" && fail "the rule was not changed" || ok
expect_exit 3 "unknown tolerance rule" -- "$EPAR" run-all --protocol "$T_TMP/badrule.json" --out "$T_TMP/bad" -q
expect_error_line '\$\.claims\[[0-9]+\]\.tolerance\.rule' "unknown rule"
expect_empty_dir "$T_TMP/bad" "bad claims leave nothing"
# an experiment that fails: exit 1, the audit still written
sed 's/"distance_curve": 20/"distance_curve": 0/' paper_protocol.json > "$T_TMP/failexp.json"
expect_exit 1 "failed experiment -> exit 1" -- "$EPAR" run-all --no-benchmark --protocol "$T_TMP/failexp.json" --out "$T_TMP/fx" --no-render -q
expect_grep 'position-effect failed' "$T_TMP/err"
expect_file "$T_TMP/fx/report/claims.csv"
# after a good run, a run whose position-effect fails does not audit the old files as its own
expect_exit 0 "a good one-seed run" -- "$EPAR" run-all --no-benchmark --seed 42 --out "$T_TMP/fx2" --no-render -q
expect_exit 1 "then a failing run with another seed" -- "$EPAR" run-all --no-benchmark --protocol "$T_TMP/failexp.json" --seed 7 --out "$T_TMP/fx2" --no-render -q
expect_grep '^thm1_continuity,.*,stale,.*(not this protocol|not the 1 seed)' "$T_TMP/fx2/report/claims.csv"
expect_grep 'warning: [0-9]+ claim\(s\) read results of another run' "$T_TMP/err"
# usage errors
expect_exit 2 "check + update" -- "$EPAR" run-all --check --update-golden
expect_exit 2 "golden without check" -- "$EPAR" run-all --golden tests/golden
expect_exit 2 "unknown option" -- "$EPAR" run-all --chek
expect_grep "did you mean '--check'" "$T_TMP/err"

# index.html opens with the bottom line (generated from the verdicts, linked to the claims), then the counts; no
# budget banner without a benchmark
grep -q 'id="bottom-line"' "$out/index.html" && ok || fail "index.html has no bottom line"
python3 - "$out/index.html" <<'PYEOF' && ok || fail "the bottom line does not come first or is not linked"
import re, sys
s = open(sys.argv[1], encoding="utf-8").read()
b, c = s.find('id="bottom-line"'), s.find('id="summary"')
sys.exit(not (0 < b < c and re.search(r'retention.*does not hold', s[b:c]) and 'href="#claims-thm1"' in s[b:c]))
PYEOF
if grep -q 'id="budget-banner"' "$out/index.html"; then fail "a budget banner without a benchmark"; else ok; fi
# a smoke benchmark (here also a subset) is audited with a banner on stdout, index.html and REPORT.html, and its empty
# tables are not blamed on the protocol's measurement specs
cp -r "$out" "$T_TMP/smoke"
expect_exit 0 "a smoke benchmark" -- "$EPAR" benchmark --budget smoke --tasks lm,recall --mechanisms none,epar-enhanced \
    --seeds 42 --out "$T_TMP/smoke" --quiet --no-render
expect_exit 0 "run-all --audit-only after it" -- "$EPAR" run-all --audit-only --seed 42 --out "$T_TMP/smoke" --no-render
expect_grep '^NOTE: Reduced benchmark: .* budget smoke \(1 seed' "$T_TMP/out"
if grep -q 'measurement spec that does not fit' "$T_TMP/err"; then fail "smoke's empty tables blamed on the specs"; else ok; fi
for f in index.html report/REPORT.html; do expect_grep 'id="budget-banner".*Reduced benchmark' "$T_TMP/smoke/$f"; done
expect_grep 'Reduced benchmark' "$T_TMP/smoke/report/REPORT.md"
# the protocol table gives the sizes the cells trained (their cell.json), not the preset's
expect_grep '^\| `benchmark/` .*\| 1 x 32 \(layers x width\) \| 2 \|' "$T_TMP/smoke/report/REPORT.md"
expect_grep '^\| `compare/` .*\| every mechanism \(EPAR.s: epar-enhanced\) \| 1 \| 1 \| 0.5 \|' "$T_TMP/smoke/report/REPORT.md"
finish
