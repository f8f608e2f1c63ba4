#!/usr/bin/env bash
# epar compare: --list, outputs and their columns, determinism across --jobs, bad input leaves nothing.
. "$(dirname "$0")/lib.sh"
small="--length 32 --hidden 32 --heads 4 --batch 1 --seeds 42,43 --quiet --no-render --speed-lengths 64"
mset="none,epar-enhanced,alibi,t5,rope,fixed-left,performer,strided,pi-attention,gqa"

expect_exit 0 "--list" -- "$EPAR" compare --list
n=$(grep -c -E '^(none|epar-basic|epar-enhanced|sinusoidal|learned-ape|floater|multiplicative-pe|shaw|transformer-xl|t5|deberta|tupe|rope|ntk-rope|interpolation|log-n|alibi|fixed-current|fixed-previous|fixed-next|fixed-left|fixed-right|fixed-start|fixed-end|linear-elu|linear-cos|performer|strided|sparse-fixed|sliding-window|block-sparse|global-local|pi-attention|gqa|orthogonal-qk|alibi-learned|learned-ape-rand|learned-ape-hier|floater-learned) ' "$T_TMP/out")
[ "$n" -eq 39 ] && ok || fail "--list shows $n of the 39 canonical ids"
# the registry's size, as --list shows it (one line per mechanism: id, kind, section, parameters)
# (train "only": trained-only per-head mixes, which compare leaves out and refuses)
nmech=$(awk 'NR > 1 && /^[a-z0-9-]+ +/ && !/ only +/ {n++} END {print n + 0}' "$T_TMP/out")
expect_grep 'alibi\.max_bias=8' "$T_TMP/out"
expect_grep 'additive bias' "$T_TMP/out"
expect_exit 0 "--help" -- "$EPAR" compare --help

# the protocol-default mechanism list (all) at a small size, with figures
out=$T_TMP/all
expect_exit 0 "all mechanisms, small" -- "$EPAR" compare --length 32 --hidden 32 --heads 4 --batch 1 --seed 42 --quiet --out "$out" --speed-lengths 48,128
d=$out/compare
for f in mechanisms alibi_slopes t5_buckets fixed_patterns masks ablation extrapolation seed_checks consistency performer_error sparse_speed; do
    expect_file "$d/$f.csv"
done
expect_file "$d/run.json"
[ "$(($(wc -l < "$d/mechanisms.csv") - 1))" -eq "$nmech" ] && ok || fail "mechanisms.csv has one row per mechanism of --list ($nmech)"
head -1 "$d/mechanisms.csv" | grep -q '^mechanism,kind,empty_rows,empty_rows_sd,entropy,entropy_sd,normalised_entropy,normalised_entropy_sd,mean_distance,mean_distance_sd,local_mass,local_mass_sd,sparsity,sparsity_sd,retention_mid,retention_mid_sd,retention_max,retention_max_sd,distance_mi,distance_mi_sd,consistency_random,.*ranking_norm,ranking_norm_sd,ranking_nan_items,flops_per_row,time_us_per_row,time_us_per_row_sd$' && ok || fail "mechanisms.csv columns"
expect_grep '^heads,head,slope$' "$d/alibi_slopes.csv"
expect_grep '^8,0,0\.5$' "$d/alibi_slopes.csv"
expect_grep '^12,8,0\.707106781187$' "$d/alibi_slopes.csv"
[ "$(grep -c '^16,' "$d/alibi_slopes.csv")" -eq 16 ] && ok || fail "16 rows for 16 heads"
expect_grep '^distance,bucket,num_buckets,max_distance,bidirectional$' "$d/t5_buckets.csv"
expect_grep '^91,15,16,128,0$' "$d/t5_buckets.csv"
expect_grep '^-8,24,32,128,1$' "$d/t5_buckets.csv"
# sparse_speed.csv: every mask mechanism at every --speed-lengths; pairs, bound, speed-up and fraction consistent
expect_grep '^mechanism,L,d,pairs,dense_us,sparse_us,speedup,pair_bound,fraction_of_bound,dense_gflops,fma_peak_gflops,dense_fraction_of_peak$' "$d/sparse_speed.csv"
# the structure, not the timings: the speed-ups are timed against the dense kernel without a mask path
# (epar_sparse_dense_fast, which takes no mask), never against the masked reference (exactness tests only)
grep -q 'epar_sparse_dense_fast(cfg->causal' "$EPAR_ROOT/experiments/analysis/compare_speed.c" && ok ||
    fail "sparse_speed.csv must time epar_sparse_dense_fast (no mask)"
grep -q '^void epar_sparse_dense_fast(int causal, int L, const double \*Q, const double \*K, const double \*V, int ld, int d,$' \
    "$EPAR_ROOT/lib/sparse.h" && ok || fail "epar_sparse_dense_fast's signature changed (it must take no mask)"
python3 - "$d/sparse_speed.csv" "$d/seed_checks.csv" <<'PY' && ok || fail "sparse_speed.csv rows or arithmetic"
import sys, csv
rows = list(csv.DictReader(open(sys.argv[1])))
want = [(m, L) for m in ["strided", "sparse-fixed", "sliding-window", "block-sparse", "global-local", "pi-attention"]
        for L in (48, 128)]
assert [(r["mechanism"], int(r["L"])) for r in rows] == want, rows
for r in rows:
    L, p = int(r["L"]), int(r["pairs"])
    assert r["d"] == "64" and 0 < p <= L * L
    rel = lambda a, b: abs(a - b) <= 1e-9 * abs(b)
    assert rel(float(r["pair_bound"]), L * L / p)
    assert rel(float(r["speedup"]), float(r["dense_us"]) / float(r["sparse_us"]))
    assert rel(float(r["fraction_of_bound"]), float(r["speedup"]) / float(r["pair_bound"]))
    # the dense kernel's rate: 4 d flops per pair it reads (all L^2: compare's default is not causal) over its time,
    # against the FMA peak measured in the same run
    assert rel(float(r["dense_gflops"]), 4 * 64 * L * L / (float(r["dense_us"]) * 1e-6) / 1e9)
    assert float(r["fma_peak_gflops"]) > 0 and rel(float(r["dense_fraction_of_peak"]),
                                                     float(r["dense_gflops"]) / float(r["fma_peak_gflops"]))
# pi-attention at L=128: ring band 2r+1 = 65 keys and the residue class L/pi = 8, 5 of them in the band (0, +-16, +-32)
assert int(rows[-1]["pairs"]) == 128 * (65 + 8 - 5)
# the seed check reads the pi-attention row at the largest length: min(measured speed-up, pair bound) (above
# the bound the ratio measures the dense kernel's overhead and the machine's load; at L = 128 on a busy machine
# the measured one does exceed it)
pi = [r for r in csv.DictReader(open(sys.argv[2])) if r["check"] == "pi_speedup"][0]
su, bound = float(rows[-1]["speedup"]), float(rows[-1]["pair_bound"])
assert float(pi["value"]) == min(su, bound) and float(pi["reference"]) == bound, (pi, su, bound)
assert "L=128" in pi["detail"] and "structured kernel" in pi["detail"]
PY
expect_grep '"time_us_per_row": "mechanisms.csv time_us_per_row: .*structured' "$d/run.json"
expect_grep '"speed_lengths": \[' "$d/run.json"
# measurements only (the verdicts come from the protocol's claims in run-all): every check a claim reads exists
expect_grep '^check,value,reference,se,trials,detail$' "$d/seed_checks.csv"
if grep -q -E ',(not )?reproduced(,|$)' "$d/seed_checks.csv"; then fail "seed_checks.csv holds a verdict"; else ok; fi
for c in $(grep -o '"check": "[^"]*"' "$EPAR_ROOT/paper_protocol.json" | cut -d'"' -f4 | sort -u); do
    expect_grep "^$c," "$d/seed_checks.csv"
done
[ -z "$(cut -d, -f1 "$d/seed_checks.csv" | sort | uniq -d)" ] && ok || fail "check names are unique"
expect_grep '^multiplicative-exponential,multiplicative,exponential,' "$d/ablation.csv"
expect_grep '^additive-linear,additive,linear,' "$d/ablation.csv"
[ "$(grep -c -E '^(rope|ntk-rope|interpolation|alibi|epar-enhanced),[01],' "$d/extrapolation.csv")" -eq 40 ] && ok || fail "extrapolation: 5 mechanisms x 2 x 4 lengths"
expect_grep '^fixed-left,4,' "$d/fixed_patterns.csv"
expect_grep '^seed,features,orthogonal,max_abs_error,mean_row_kl$' "$d/performer_error.csv"
expect_grep '^pi-attention,step,' "$d/masks.csv"
for f in attention_none attention_alibi attention_pi-attention mechanisms_locality mechanisms_entropy consistency ablation extrapolation alibi_slopes t5_buckets; do
    expect_file "$d/$f.gp"
    if command -v gnuplot >/dev/null; then expect_file "$d/$f.png"; fi
done
# means are always defined; the across-seed sd columns are nan with one seed (no spread to report)
if grep -q -E ',nan(,|$)' <(cut -d, -f1-3,5 "$d/mechanisms.csv"); then fail "nan in entropy columns"; else ok; fi

# determinism: same seeds -> byte-identical CSVs for any --jobs (the measured times and timing claims excepted)
expect_exit 0 "jobs 1" -- "$EPAR" compare $small --mechanisms "$mset" --set alibi.max_bias=4 --out "$T_TMP/j1" --jobs 1
expect_exit 0 "jobs 2" -- "$EPAR" compare $small --mechanisms "$mset" --set alibi.max_bias=4 --out "$T_TMP/j2" --jobs 2
for f in "$T_TMP"/j1/compare/*.csv; do
    b=$(basename "$f")
    case $b in
    mechanisms.csv) strip() { rev "$1" | cut -d, -f3- | rev; } ;;
    seed_checks.csv) strip() { grep -v -E '^(pi_speedup|linear_cost_exponent|performer_cost_exponent),' "$1"; } ;;
    sparse_speed.csv) strip() { cut -d, -f1-4,8 "$1"; } ;;   # mechanism, L, d, pairs, pair_bound
    *) strip() { cat "$1"; } ;;
    esac
    cmp -s <(strip "$f") <(strip "$T_TMP/j2/compare/$b") && ok || fail "not byte-identical across --jobs: $b"
done
[ "$(($(wc -l < "$T_TMP/j1/compare/mechanisms.csv") - 1))" -eq 10 ] && ok || fail "--mechanisms selects 10 rows"
expect_grep '^4,0,0\.5$' "$T_TMP/j1/compare/alibi_slopes.csv"
expect_grep '"max_bias": 4' "$T_TMP/j1/compare/run.json"
# a parameter really acts
cmp -s "$T_TMP/j1/compare/attention_alibi.csv" "$out/compare/attention_alibi.csv" && fail "--set alibi.max_bias did not change A" || ok

# same inputs and projections for every mechanism: a zero learned table reproduces the baseline exactly
expect_exit 0 "zero table" -- "$EPAR" compare $small --mechanisms none,learned-ape,shaw --set learned-ape.init_sd=0 --set shaw.init_sd=0 --out "$T_TMP/z"
cmp -s "$T_TMP/z/compare/attention_none.csv" "$T_TMP/z/compare/attention_learned-ape.csv" && ok || fail "learned-ape with a zero table differs from none"
cmp -s "$T_TMP/z/compare/attention_none.csv" "$T_TMP/z/compare/attention_shaw.csv" && ok || fail "shaw with a zero table differs from none"

# one parameter namespace (issue 34): rope.base is the same parameter here as in train and benchmark
# (tests/cli/test_train.sh); it changes rope's row and nothing else
expect_exit 0 "rope at its default base" -- "$EPAR" compare $small --mechanisms none,rope --out "$T_TMP/rb0"
expect_exit 0 "--set rope.base=20000" -- "$EPAR" compare $small --mechanisms none,rope --set rope.base=20000 --out "$T_TMP/rb1"
row() { awk -F, -v m="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^time_/) t[i] = 1 }   # without the timings
                            $1 == m { s = ""; for (i = 1; i <= NF; i++) if (!t[i]) s = s $i ","; print s }' "$2/compare/mechanisms.csv"; }
[ -n "$(row none "$T_TMP/rb0")" ] && [ "$(row none "$T_TMP/rb0")" = "$(row none "$T_TMP/rb1")" ] && ok ||
    fail "--set rope.base changed none's row"
[ "$(row rope "$T_TMP/rb0")" != "$(row rope "$T_TMP/rb1")" ] && ok || fail "--set rope.base=20000 did not change rope's row"
expect_grep '"base": 20000' "$T_TMP/rb1/compare/run.json"

# causal: look-ahead patterns dropped from the default list, refused when asked for
expect_exit 0 "causal" -- "$EPAR" compare $small --causal --mechanisms none,alibi,strided,fixed-left --out "$T_TMP/c"
python3 - "$T_TMP/c/compare/attention_alibi.csv" <<'PY' && ok || fail "causal heatmap has weight above the diagonal"
import sys, csv
r = csv.reader(open(sys.argv[1])); next(r)
sys.exit(1 if any(int(j) > int(i) and float(w) != 0 for i, j, w in r) else 0)
PY

# bad input: exit 2, one error line, nothing written
bad() { # pattern args...
    local pat=$1; shift
    rm -rf "$T_TMP/bad"
    expect_exit 2 "$*" -- "$EPAR" compare $small --out "$T_TMP/bad" "$@"
    expect_error_line "$pat" "$*"
    expect_empty_dir "$T_TMP/bad" "$*"
}
bad "unknown mechanism 'alibii'" --mechanisms none,alibii
bad "invalid --speed-lengths value '0'" --speed-lengths 0
bad "invalid --speed-tile '-1'" --speed-tile -1
bad "unknown parameter 'alibi.slope'" --set alibi.slope=3
bad "unknown mechanism 'nothere'" --set nothere.x=1
bad "invalid --set 'alibi'" --set alibi
bad "invalid value for gqa.groups" --set gqa.groups=0
bad "invalid value for rope.base: '0.5'" --set rope.base=0.5
bad "gqa.groups '3' must divide" --mechanisms gqa --set gqa.groups=3
bad "looks ahead" --causal --mechanisms fixed-next
bad "mechanism listed twice" --mechanisms rope,rope
bad "learned-ape table has 16 positions" --mechanisms learned-ape --set learned-ape.max_length=16
bad "heads must divide hidden" --heads 5
# a second run into the same folder replaces it: none of the first run's 35 heatmaps survives beside 2 rows
expect_exit 0 "two mechanisms into the full run's folder" -- "$EPAR" compare $small --mechanisms none,alibi --out "$out"
[ "$(ls "$out/compare" | grep -c '^attention_.*\.csv$')" -eq 2 ] && ok || fail "stale heatmaps left: $(ls "$out/compare" | grep -c '^attention_.*\.csv$') attention_*.csv, want 2"
[ ! -e "$out/compare/attention_rope.png" ] && ok || fail "attention_rope.png of the first run left in compare/"
[ -z "$(ls "$out" | grep -E '\.(tmp|old)-')" ] && ok || fail "staging or old folder left in $out: $(ls "$out")"
finish
