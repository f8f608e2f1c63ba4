#!/usr/bin/env bash
# epar inspect: a trained checkpoint's attention (causal, rows summing to 1), its tables, heatmaps and head view;
# --layers/--heads/--text; several checkpoints give a comparison grid; a truncated, corrupt, foreign or newer
# checkpoint is exit 3 with one error line and nothing written; usage errors exit 2.
. "$(dirname "$0")/lib.sh"
out=$T_TMP/o
expect_exit 0 "train recall 60 steps" -- "$EPAR" train --task recall --steps 60 --out "$out" --quiet
ck=$out/train/recall/epar-enhanced/checkpoint.bin
expect_file "$ck"
expect_exit 0 "inspect --item 0" -- "$EPAR" inspect "$ck" --item 0 --out "$out"
d=$out/inspect/recall-epar-enhanced-seed42-item0
for f in attention.csv tokens.csv heads.csv profile.csv inspect.json head_view.html attention_layer0.png \
         attention_layer1.png profile.png attention_layer0.gp; do expect_file "$d/$f"; done
expect_grep '^layer,head,query,key,weight$' "$d/attention.csv"
expect_grep '^position,token,symbol,target,target_symbol,scored,prediction,prediction_symbol,correct,p_target,relevant_keys$' "$d/tokens.csv"
# correct: 1 or 0 at the scored positions (the argmax is the target or not), nan elsewhere
awk -F, 'NR > 1 && !($6 == 1 ? $9 == ($7 == $4) : $9 == "nan") { exit 1 }' "$d/tokens.csv" && ok || fail "tokens.csv: correct is not prediction == target at the scored positions"
expect_grep '^layer,head,mean_distance,entropy,entropy_uniform,previous_share,first_share,relevant_share,relevant_uniform,relevant_queries,distance_spearman,alpha,beta,gamma,profile_pearson,profile_spearman,pos_star,importance_argmax,consistency,ranking,pattern_current,pattern_previous,pattern_left,pattern_first,pattern_best,similar_layer,similar_other,slope$' "$d/heads.csv"
# S1's fixed patterns (F17): the best is the largest of the four; similarities are correlations; no slope but alibi's
awk -F, 'NR > 1 { m = $21; for (c = 22; c <= 24; c++) if ($c > m) m = $c
                  if ($25 != m || $26 < -1 || $26 > 1 || $27 < -1 || $27 > 1 || $28 != "nan") exit 1 }' "$d/heads.csv" &&
    ok || fail "heads.csv: pattern_best, similar_layer/_other or slope out of place"
expect_grep '^layer,head,distance,attention_mass,uniform_mass,queries,p_effect$' "$d/profile.csv"
# causal (key <= query), every (layer, head, query) row complete and summing to 1 within 1e-5
msg=$(awk -F, 'NR > 1 { if ($4 > $3) bad = bad " non-causal " $0; k = $1 "," $2 "," $3; s[k] += $5; n[k]++ }
    END { for (k in s) { split(k, a, ","); if (n[k] != a[3] + 1) bad = bad " row " k " has " n[k] " keys";
                         d = s[k] - 1; if (d < 0) d = -d; if (d > 1e-5) bad = bad " row " k " sums to " s[k]; rows++ }
          if (rows != 2 * 4 * 32) bad = bad " " rows " rows, want 256"; print bad }' "$d/attention.csv")
[ -z "$msg" ] && ok || fail "attention.csv:$(echo "$msg" | head -c 300)"
[ "$(tail -n +2 "$d/heads.csv" | wc -l)" -eq 8 ] && ok || fail "heads.csv has one row per layer and head"
# recall: the questions' relevant keys are the facts (positions 0..3); the EPAR columns are filled
awk -F, 'NR > 1 && $3 ~ /\?$/ && $11 !~ /^[0-3]$/ { exit 1 }' "$d/tokens.csv" && ok || fail "a question's relevant key is not a fact"
awk -F, 'NR > 1 && ($12 != 1 || $14 != 0.5 || $10 != 4 || $8 == "nan") { exit 1 }' "$d/heads.csv" && ok ||
    fail "heads.csv: alpha 1, gamma 0.5, 4 relevant queries, a relevant share"
expect_grep '"item": 0' "$d/inspect.json"
expect_grep 'id="layer"' "$d/head_view.html"
if grep -qE '(src|href)="https?:' "$d/head_view.html"; then fail "head_view.html loads from the network"; else ok; fi
expect_grep "^set xtics \('k" "$d/attention_layer0.gp"   # token labels on the axes
[ -z "$(find "$out/inspect" -name '*.tmp*')" ] && ok || fail "temp files left behind"

# ---- --layers, --heads, --text, several checkpoints
expect_exit 0 "inspect --layers 1 --heads 0,2" -- "$EPAR" inspect "$ck" --layers 1 --heads 0,2 --out "$T_TMP/s" -q --no-render
s=$T_TMP/s/inspect/recall-epar-enhanced-seed42-item0
# the similarities are to every head of the model, whichever are written
[ "$(grep '^1,2,' "$s/heads.csv" | cut -d, -f26,27)" = "$(grep '^1,2,' "$d/heads.csv" | cut -d, -f26,27)" ] && ok ||
    fail "heads.csv: similar_layer/_other depend on --heads"
[ "$(cut -d, -f1,2 "$s/attention.csv" | tail -n +2 | sort -u | tr '\n' ' ')" = "1,0 1,2 " ] && ok ||
    fail "--layers 1 --heads 0,2 writes other heads: $(cut -d, -f1,2 "$s/attention.csv" | tail -n +2 | sort -u | tr '\n' ' ')"
[ ! -e "$s/attention_layer0.gp" ] && [ -f "$s/attention_layer1.gp" ] && ok || fail "one heatmap per selected layer"
expect_exit 0 "inspect --text" -- "$EPAR" inspect "$ck" --text 'k1:v2 k3:v0 _ k3? =v0 k1?' --out "$T_TMP/t" -q --no-render
t=$(echo "$T_TMP"/t/inspect/recall-epar-enhanced-seed42-text-*)
[ "$(tail -n +2 "$t/tokens.csv" | wc -l)" -eq 6 ] && ok || fail "--text: 6 tokens"
expect_grep '^3,[0-9]+,k3\?,[0-9]+,=v0,0,[0-9]+,[^,]*,nan,[0-9.e-]+,1$' "$t/tokens.csv"
expect_exit 0 "train none 20 steps" -- "$EPAR" train --task recall --mechanism none --steps 20 --out "$out" --quiet --no-render
expect_exit 0 "inspect two checkpoints" -- "$EPAR" inspect "$ck" "$out/train/recall/none/checkpoint.bin" --out "$T_TMP/c" -q
expect_file "$T_TMP/c/inspect/comparison-item0/comparison.png"
expect_file "$T_TMP/c/inspect/recall-none-seed42-item0/head_view.html"
awk -F, 'NR > 1 && $3 == "recall-none-seed42" && $12 != "nan" { exit 1 }' "$T_TMP/c/inspect/recall-none-seed42-item0/heads.csv" &&
    ok || fail "no EPAR columns for mechanism none"
# a mechanism with learned relative terms inside the scores (transformer-xl: W_R, u, v): its checkpoint reloads them
# and the rows are the model's softmax (causal, each summing to 1)
expect_exit 0 "train transformer-xl 20 steps" -- "$EPAR" train --task recall --mechanism transformer-xl --steps 20 --out "$out" --quiet --no-render
expect_exit 0 "inspect transformer-xl" -- "$EPAR" inspect "$out/train/recall/transformer-xl/checkpoint.bin" --out "$T_TMP/x" -q --no-render
msg=$(awk -F, 'NR > 1 { if ($4 > $3) bad = bad " non-causal " $0; k = $1 "," $2 "," $3; s[k] += $5 }
    END { for (k in s) { d = s[k] - 1; if (d < 0) d = -d; if (d > 1e-5) bad = bad " row " k " sums to " s[k]; rows++ }
          if (rows != 2 * 4 * 32) bad = bad " " rows " rows, want 256"; print bad }' "$T_TMP/x/inspect/recall-transformer-xl-seed42-item0/attention.csv")
[ -z "$msg" ] && ok || fail "transformer-xl attention.csv:$(echo "$msg" | head -c 300)"

# ---- bad checkpoints: exit 3, one error line, no inspect folder at all
bad=$T_TMP/bad
mkdir -p "$bad"
head -c 100 "$ck" > "$bad/truncated.bin"
head -c -20 "$ck" > "$bad/short.bin"
cp "$ck" "$bad/flipped.bin"; printf '\x55' | dd of="$bad/flipped.bin" bs=1 seek=5000 conv=notrunc 2>/dev/null
printf 'not a checkpoint at all, just some text' > "$bad/foreign.bin"
cp "$ck" "$bad/newer.bin"; printf '\x07' | dd of="$bad/newer.bin" bs=1 seek=8 conv=notrunc 2>/dev/null
for f in truncated short flipped foreign newer; do
    expect_exit 3 "$f checkpoint" -- "$EPAR" inspect "$bad/$f.bin" --out "$T_TMP/bo"
    [ "$(grep -c '^epar: error: ' "$T_TMP/err")" -eq 1 ] && [ "$(grep -vc -e '^epar: error: ' -e '^hint: ' "$T_TMP/err")" -eq 0 ] &&
        ok || fail "$f: not one error line: $(head -c 300 "$T_TMP/err")"
    [ ! -e "$T_TMP/bo" ] && ok || fail "$f: wrote $(find "$T_TMP/bo" | head -3 | tr '\n' ' ')"
done
expect_exit 3 "truncated second of two" -- "$EPAR" inspect "$ck" "$bad/truncated.bin" --out "$T_TMP/bo"
[ ! -e "$T_TMP/bo" ] && ok || fail "a bad second checkpoint still wrote the first's folder"
expect_exit 3 "newer version" -- "$EPAR" inspect "$bad/newer.bin" --out "$T_TMP/bo"
expect_error_line "has format version 7; this epar reads version 1" "version message"
expect_exit 3 "missing file" -- "$EPAR" inspect "$T_TMP/nope.bin" --out "$T_TMP/bo"

# ---- usage errors: exit 2, nothing written
expect_exit 2 "unknown option" -- "$EPAR" inspect "$ck" --bogus --out "$T_TMP/u"
expect_exit 2 "no checkpoint" -- "$EPAR" inspect --out "$T_TMP/u"
expect_exit 2 "--item and --text" -- "$EPAR" inspect "$ck" --item 1 --text 'k1?' --out "$T_TMP/u"
expect_exit 2 "item out of range" -- "$EPAR" inspect "$ck" --item 100000 --out "$T_TMP/u"
expect_exit 2 "layer out of range" -- "$EPAR" inspect "$ck" --layers 2 --out "$T_TMP/u"
expect_exit 2 "bad head list" -- "$EPAR" inspect "$ck" --heads 0,x --out "$T_TMP/u"
expect_exit 2 "unknown symbol in --text" -- "$EPAR" inspect "$ck" --text 'k1? zz' --out "$T_TMP/u"
expect_error_line "token 'zz'" "unknown symbol message"
[ ! -e "$T_TMP/u" ] && ok || fail "a usage error wrote files"
# ---- interventions at evaluation (F8, F9): --mask-heads zeroes heads' outputs, --boost multiplies the answer-relevant
# keys' weights in the last layer (as written, or renormalised); intervention.csv compares the evaluation
expect_exit 0 "inspect --mask-heads 0.1,1.3" -- "$EPAR" inspect "$ck" --mask-heads 0.1,1.3 --eval-items 64 --out "$T_TMP/iv" -q --no-render
m=$T_TMP/iv/inspect/recall-epar-enhanced-seed42-item0-mask0.1+1.3
expect_grep '^heads_masked,boost,boost_layer,boost_mode,items,metric,base,intervened,delta,loss_base,loss_intervened,loss_delta$' "$m/intervention.csv"
line=$(tail -1 "$m/intervention.csv")
case $line in '"0.1,1.3",1,-1,,64,accuracy,'*) ok ;; *) fail "intervention.csv: the masked heads, 64 items, accuracy: $line" ;; esac
echo "${line#\"0.1,1.3\",}" | awk -F, '{ x = $7 - $6 - $8; if (x < 0) x = -x; exit !($11 != 0 && x < 1e-9) }' && ok ||
    fail "intervention.csv: masking two heads changes nothing, or delta is not intervened - base: $line"
expect_grep '"heads_masked": "0.1,1.3"' "$m/inspect.json"
expect_exit 0 "inspect --boost 1" -- "$EPAR" inspect "$ck" --boost 1 --eval-items 64 --out "$T_TMP/iv" -q --no-render
b1=$T_TMP/iv/inspect/recall-epar-enhanced-seed42-item0-boost1
# boost 1 is the identity: the same attention as without (within float rounding), no change of the evaluation
paste -d, <(tail -n +2 "$d/attention.csv") <(tail -n +2 "$b1/attention.csv") |
    awk -F, '{ x = $5 - $10; if (x < 0) x = -x; if (x > 1e-6 || $1 != $6 || $4 != $9) exit 1 }' && ok || fail "--boost 1 changed the attention"
awk -F, 'NR == 2 { x = $12; if (x < 0) x = -x; exit !($9 == 0 && x < 1e-6) }' "$b1/intervention.csv" && ok ||
    fail "--boost 1 changed the evaluation: $(tail -1 "$b1/intervention.csv")"
expect_exit 0 "inspect --boost 4" -- "$EPAR" inspect "$ck" --boost 4 --eval-items 64 --out "$T_TMP/iv" -q --no-render
expect_exit 0 "inspect --boost 4 --boost-renorm" -- "$EPAR" inspect "$ck" --boost 4 --boost-renorm --eval-items 64 --out "$T_TMP/iv" -q --no-render
b4=$T_TMP/iv/inspect/recall-epar-enhanced-seed42-item0-boost4; b4r=${b4}r
expect_grep '^,4,1,as-written,64,' "$b4/intervention.csv"
expect_grep '^,4,1,renormalised,64,' "$b4r/intervention.csv"
# as written the last layer's rows with a relevant key sum to more than 1; renormalised every row sums to 1
awk -F, 'NR > 1 && $1 == 1 { s[$2 "," $3] += $5 } END { for (k in s) if (s[k] > 1.01) n++; exit !(n > 0) }' "$b4/attention.csv" &&
    ok || fail "--boost 4 as written: no row of the last layer sums above 1"
awk -F, 'NR > 1 { s[$1 "," $2 "," $3] += $5 } END { for (k in s) { x = s[k] - 1; if (x < 0) x = -x; if (x > 1e-5) exit 1 } }' \
    "$b4r/attention.csv" && ok || fail "--boost 4 --boost-renorm: a row does not sum to 1"
for a in "--boost 0" "--boost -2" "--boost nan" "--boost x" "--mask-heads 2.0" "--mask-heads 0.4" "--mask-heads 0.1,0.1" \
         "--mask-heads a" "--mask-heads 0-1" "--boost-renorm" "--boost 2 --eval-items 0" "--eval-items 5" \
         "--boost 2 --eval-items 100000"; do
    # shellcheck disable=SC2086
    expect_exit 2 "inspect $a" -- "$EPAR" inspect "$ck" $a --out "$T_TMP/ivbad" -q --no-render
    expect_error_line "(--boost|--mask-heads|--eval-items)" "inspect $a"
done
[ ! -e "$T_TMP/ivbad" ] && ok || fail "a bad intervention wrote files"
expect_exit 0 "help" -- "$EPAR" inspect --help
expect_grep 'CHECKPOINT' "$T_TMP/out"
finish
