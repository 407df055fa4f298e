#!/usr/bin/env bash
# finetune_bert end to end (docs/finetune.md): a tiny BERT pretrained by pretrain_bert on the BERT test fixture, then
# fine-tuned on GLUE-format and RACE-format files (tests/finetune/make_tasks.py): it learns (MNLI's accuracy rises
# above the majority class), Megatron's log lines (the head's warning, the epochs, the accuracy per --valid-data file
# and overall, the names Megatron derives from the paths), TP=2 (+SP), PP=2, DP=2 and ZeRO-2 give one process's
# losses and accuracies, a stopped run resumed from its checkpoint continues exactly, --epochs 0 on the fine-tuned
# checkpoint reproduces the last epoch's accuracy, RACE's four rows a question, and the refusals.
# usage: test_finetune.sh FINETUNE_BERT PYTHON
set -u
bin="$1" PY="$2"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/common.sh"
pre_bin="$(dirname "$bin")/pretrain_bert"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
"$PY" "$here/../bert/make_fixture.py" "$tmp/fx" || { echo "FAIL: make_fixture.py"; exit 1; }
"$(dirname "$bin")/preprocess_data" --input "$tmp/fx/corpus.jsonl" --output-prefix "$tmp/fx/corpus" --workers 1 \
  --vocab-file "$tmp/fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
  || { echo "FAIL: preprocess_data"; exit 1; }
"$PY" "$here/make_tasks.py" "$tmp/t" || { echo "FAIL: make_tasks.py"; exit 1; }
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
       --vocab-file "$tmp/fx/vocab.txt" --seed 1234)
# the pretrained BERT: 20 iterations of pretrain_bert
timeout 300 "$pre_bin" "${model[@]}" --data-path "$tmp/fx/corpus_text_sentence" --split 90,10,0 --lr 1e-3 \
  --train-iters 20 --log-interval 10 --eval-interval 20 --eval-iters 1 --micro-batch-size 8 --global-batch-size 8 \
  --save "$tmp/pre" >"$tmp/pre.log" 2>&1 || { echo "FAIL: pretrain_bert"; tail -3 "$tmp/pre.log"; exit 1; }
mnli=(--task MNLI --pretrained-checkpoint "$tmp/pre" --train-data "$tmp/t/MNLI/train.tsv"
      --valid-data "$tmp/t/MNLI/dev_matched.tsv" "$tmp/t/MNLI/dev_mismatched.tsv" --log-interval 1 --eval-interval 6
      --eval-iters 1 --lr 2e-3)
ft() { timeout 300 "$bin" "${model[@]}" "$@" 2>&1; }
ftn() { local np="$1"; shift; timeout 300 "${mpi[@]}" -np "$np" "$bin" "${model[@]}" "$@" 2>&1; }
losses() { field "$1" "lm loss"; }
# the validation values and the accuracy lines (elapsed times dropped)
evals() { grep -E "validation loss at|\| overall:|metrics for" <<<"$1" | sed -E 's/, elapsed time.*//' | tr '\n' ';'; }
overall() { grep -F "| overall:" <<<"$1" | sed -E 's/.*= ([0-9.]+) %$/\1/' | tr '\n' ' '; }

# 1. learning, and Megatron's lines
o=$(ft "${mnli[@]}" --epochs 15 --micro-batch-size 8 --global-batch-size 8 --save "$tmp/ft"); rc=$?
acc=$(overall "$o")
first=$(awk '{print $1}' <<<"$acc") last=$(awk '{print $NF}' <<<"$acc")
if [ $rc -eq 0 ] && [ "$(wc -w <<<"$acc")" -eq 15 ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b >= 70 && b > a) }'; then
  ok "MNLI learns: overall accuracy $first % after epoch 1, $last % after epoch 15 (majority class 41 %)"
else
  bad "MNLI learns" "rc=$rc accuracies '$acc' $(grep -m2 error <<<"$o")"
fi
for line in "***WARNING*** could not find classification_head in the checkpoint, initializing to random" \
            "working on epoch 1 ..." "working on epoch 15 ..." " > building MNLI dataset for dev-matched:" \
            " > building MNLI dataset for dev-mismatched:" "building classification model for MNLI ..." \
            "calculating metrics ..." "done :-)" " iteration      180/     180 |"; do
  grep -qF -- "$line" <<<"$o" && ok "line: $line" || bad "line: $line" "not in the output"
done
if grep -qE '^ > \|epoch: 14\| metrics for dev-matched: correct / total = [0-9]+ / 24 = [0-9.]+ %, elapsed time \(sec\): [0-9.]+$' <<<"$o" \
   && grep -qE '^ > \|epoch: 14\| metrics for dev-mismatched: correct / total = [0-9]+ / 20 = ' <<<"$o" \
   && grep -qE '^ >> \|epoch: 14\| overall: correct / total = [0-9]+ / 44 = [0-9.]+ %$' <<<"$o" \
   && [ "$(grep -c "validation loss at iteration" <<<"$o")" -eq 30 ] && ! grep -q "end of training" <<<"$o" \
   && [ -d "$tmp/ft/global_step12" ] && [ -d "$tmp/ft/global_step180" ]; then
  ok "accuracy lines per file (24 and 20 samples) and overall, validation every 6 iterations only, a checkpoint each epoch"
else
  bad "accuracy lines" "$(grep -E "epoch: 14" <<<"$o" | head -3) $(ls "$tmp/ft" | head -3)"
fi

# 2. --epochs 0 on the fine-tuned checkpoint: the last epoch's accuracy again
e=$(ft --task MNLI --epochs 0 --load "$tmp/ft" --valid-data "$tmp/t/MNLI/dev_matched.tsv" "$tmp/t/MNLI/dev_mismatched.tsv" \
    --micro-batch-size 8 --global-batch-size 8 --lr 2e-3); rc=$?
want=$(grep -F "|epoch: 14| overall" <<<"$o" | sed 's/epoch: 14/epoch: -1/')
if [ $rc -eq 0 ] && grep -qF "evaluation only mode, setting epoch to -1" <<<"$e" && [ -n "$want" ] \
   && grep -qF -- "$want" <<<"$e" && ! grep -q "^ iteration " <<<"$e"; then
  ok "--epochs 0 --load: $(grep -F "| overall" <<<"$e" | sed 's/^ *//')"
else
  bad "--epochs 0" "rc=$rc want '$want' got '$(grep -F "overall" <<<"$e")' $(grep -m2 error <<<"$e")"
fi

# 3. layouts = one process (3 epochs: losses, validation values, accuracies)
ref=$(ft "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8)
same() { # name out rc
  if [ "$3" -eq 0 ] && close "$(losses "$ref")" "$(losses "$2")" 1e-5 && [ "$(losses "$2" | wc -w)" -eq 36 ] \
     && [ "$(evals "$ref" | sed -E 's/value: [0-9.E+-]+ \| lm loss PPL: [0-9.E+-]+//g')" = "$(evals "$2" | sed -E 's/value: [0-9.E+-]+ \| lm loss PPL: [0-9.E+-]+//g')" ] \
     && close "$(grep -F "validation loss at" <<<"$ref" | sed -E 's/.*value: ([0-9.E+-]+).*/\1/' | tr '\n' ' ')" \
              "$(grep -F "validation loss at" <<<"$2" | sed -E 's/.*value: ([0-9.E+-]+).*/\1/' | tr '\n' ' ')" 1e-5; then
    ok "$1 = one process (36 losses, 6 validations, 3 accuracy passes)"
  else
    bad "$1" "rc=$3 ref '$(losses "$ref" | cut -c1-80)' got '$(losses "$2" | cut -c1-80)' $(grep -m2 error <<<"$2")"
  fi
}
o=$(ftn 2 "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8 --tensor-model-parallel-size 2 --sequence-parallel); same "TP=2 with --sequence-parallel" "$o" $?
o=$(ftn 2 "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8 --pipeline-model-parallel-size 2); same "PP=2" "$o" $?
# data parallelism spreads each global batch over the ranks (torch's DistributedSampler): the same samples, other
# rows, so dropout (keyed by row) is off for the comparison; the accuracy pass drops each rank's last partial batch
ref=$(ft "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8 --hidden-dropout 0 --attention-dropout 0)
dp_acc=$(grep -F "| overall:" <<<"$ref" | head -1 | sed -E 's/.*= ([0-9]+) \/ 44 .*/\1/')
ref=$(sed -E 's/\/ 24 =.*/\/ 24/; s/\/ 20 =.*/\/ 20/; s/\/ 44 =.*/\/ 44/' <<<"$ref")
dpfix() { sed -E 's/\/ 24 =.*/\/ 24/; s/\/ 16 =.*/\/ 20/; s/\/ 40 =.*/\/ 44/; s/= [0-9]+ \/ (16|20|24|40|44)/= N \/ \1/' <<<"$1"; }
ref=$(dpfix "$ref")
o=$(ftn 2 "${mnli[@]}" --epochs 3 --micro-batch-size 4 --global-batch-size 8 --hidden-dropout 0 --attention-dropout 0); rc=$?
grep -qF "metrics for dev-mismatched: correct / total = " <<<"$o" && grep -qE "dev-mismatched: correct / total = [0-9]+ / 16 =" <<<"$o" \
  && ok "DP=2: the accuracy pass drops each rank's last partial micro batch (dev-mismatched: 16 of 20, as torch's loader with drop_last)" \
  || bad "DP=2 accuracy totals" "$(grep -F "metrics for" <<<"$o" | head -2)"
same "DP=2" "$(dpfix "$o")" $rc
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}\n' >"$tmp/z2.json"
o=$(ftn 2 "${mnli[@]}" --epochs 3 --micro-batch-size 4 --global-batch-size 8 --hidden-dropout 0 --attention-dropout 0 \
    --deepspeed --deepspeed_config "$tmp/z2.json" --zero-stage 2); same "DP=2 with ZeRO-2 (--deepspeed)" "$(dpfix "$o")" $?

# 4. a stopped run resumed from its checkpoint continues exactly (mid-epoch 2 of 3)
a=$(ft "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8)
b1=$(ft "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8 --save "$tmp/r" --exit-interval 17); rb1=$?
cp -r "$tmp/r" "$tmp/r17"
b2=$(ft "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8 --save "$tmp/r" --load "$tmp/r"); rb2=$?
strip() { grep -E "^ iteration |validation loss at|metrics for|overall" <<<"$1" \
          | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second.*//; s/, elapsed time.*//'; }
if [ $rb1 -eq 0 ] && [ $rb2 -eq 0 ] && [ "$(strip "$a")" = "$(strip "$b1"; strip "$b2")" ] \
   && [ "$(grep -m1 "working on epoch" <<<"$b2")" = "working on epoch 2 ..." ] \
   && ! grep -qF "could not find classification_head" <<<"$b2"; then
  ok "stopped at iteration 17 (epoch 2) and resumed with --load: every line as the straight run's"
else
  bad "resume" "rc=$rb1/$rb2 $(diff <(strip "$a") <(strip "$b1"; strip "$b2") | head -4) $(grep -m2 error <<<"$b1$b2")"
fi

# the same checkpoint (one process, iteration 17) continued at PP=2: resharded, the straight run's losses (1e-5)
c=$(ftn 2 "${mnli[@]}" --epochs 3 --micro-batch-size 8 --global-batch-size 8 --load "$tmp/r17" \
    --pipeline-model-parallel-size 2); rc=$?
ta=$(losses "$a" | awk '{ for (i = 18; i <= NF; i++) printf "%s ", $i }')
if [ $rc -eq 0 ] && close "$ta" "$(losses "$c")" 1e-5 && [ "$(losses "$c" | wc -w)" -eq 19 ]; then
  ok "a one-process checkpoint at iteration 17 continued at PP=2: iterations 18-36 as the straight run's (1e-5)"
else
  bad "resharded resume" "rc=$rc want '$(cut -c1-60 <<<"$ta")' got '$(losses "$c" | cut -c1-60)' $(grep -m2 error <<<"$c")"
fi

# 5. RACE: four rows a question, MultipleChoice's head, one process = PP=2
race=(--task RACE --pretrained-checkpoint "$tmp/pre" --train-data "$tmp/t/RACE/train/middle"
      --valid-data "$tmp/t/RACE/dev/middle" --epochs 2 --micro-batch-size 2 --global-batch-size 2 --lr 1e-3
      --log-interval 1 --eval-interval 5 --eval-iters 1)
r1=$(ft "${race[@]}"); rc1=$?
r2=$(ftn 2 "${race[@]}" --pipeline-model-parallel-size 2); rc2=$?
if [ $rc1 -eq 0 ] && grep -qF "***WARNING*** could not find multichoice_head in the checkpoint" <<<"$r1" \
   && grep -qE "^ > \|epoch: 1\| metrics for dev-middle: correct / total = [0-9]+ / 10 = " <<<"$r1" \
   && grep -qF "building multichoice model for RACE ..." <<<"$r1" && [ "$(losses "$r1" | wc -w)" -eq 20 ] \
   && grep -qE "^ iteration +1/ +20 \| consumed samples: +8 \|.*global batch size: +8 \|" <<<"$r1"; then
  ok "RACE: 21 questions x 4 rows, 10 iterations an epoch of 2 questions (8 rows), dev-middle's 10 questions scored"
else
  bad "RACE" "rc=$rc1 $(grep -E "metrics|^ iteration +1/" <<<"$r1" | head -2) $(grep -m2 error <<<"$r1")"
fi
[ $rc2 -eq 0 ] && close "$(losses "$r1")" "$(losses "$r2")" 1e-5 && [ "$(evals "$r1" | sed -E 's/value: [0-9.E+-]+ \| lm loss PPL: [0-9.E+-]+//g')" = "$(evals "$r2" | sed -E 's/value: [0-9.E+-]+ \| lm loss PPL: [0-9.E+-]+//g')" ] \
  && ok "RACE PP=2 = one process" || bad "RACE PP=2" "rc=$rc2 $(losses "$r2" | cut -c1-60) $(grep -m2 error <<<"$r2")"

# --keep-last where every rank's share divides into micro batches: accepted, and it changes nothing
k0=$(ft "${mnli[@]}" --epochs 1 --micro-batch-size 4 --global-batch-size 4)
k=$(ft "${mnli[@]}" --epochs 1 --micro-batch-size 4 --global-batch-size 4 --keep-last); rc=$?
[ $rc -eq 0 ] && [ -n "$(strip "$k")" ] && [ "$(strip "$k")" = "$(strip "$k0")" ] && ok "--keep-last with whole micro batches: the run without it" \
  || bad "--keep-last accepted" "rc=$rc $(grep -m2 error <<<"$k")"

# 6. CoLA with --finetune: Megatron's Matthews correlation line instead of the accuracy, 0 / 0 overall
o=$(ft --task CoLA --finetune --pretrained-checkpoint "$tmp/pre" --train-data "$tmp/t/CoLA/train.tsv" \
    --valid-data "$tmp/t/CoLA/dev.tsv" --epochs 2 --micro-batch-size 8 --global-batch-size 8 --lr 2e-3); rc=$?
if [ $rc -eq 0 ] && [ "$(grep -cE '^ > \|epoch: [01]\| metrics for de: mcc = -?[0-9.e-]+ , elapsed time \(sec\): [0-9.]+$' <<<"$o")" -eq 2 ] \
   && grep -qF " >> |epoch: 1| overall: correct / total = 0 / 0 = 0.0000 %" <<<"$o"; then
  ok "CoLA --finetune: $(grep -F "|epoch: 1| metrics" <<<"$o" | sed 's/ , elapsed.*//; s/^ *//')"
else
  bad "CoLA --finetune" "rc=$rc $(grep -E "metrics|overall|error" <<<"$o" | head -3)"
fi

# 7. STS-B: the regression (mean squared error on Megatron's int() of the scores); with --finetune the Pearson and
# Spearman lines, which rise as it learns; without it Megatron's accuracy of the one output's argmax
o=$(ft --task STS-B --finetune --pretrained-checkpoint "$tmp/pre" --train-data "$tmp/t/STS-B/train.tsv" \
    --valid-data "$tmp/t/STS-B/dev.tsv" --epochs 12 --micro-batch-size 8 --global-batch-size 8 --lr 2e-3); rc=$?
corr=$(grep -E "metrics for de: pearson" <<<"$o" | sed -E 's/.* corr = ([-0-9.e]+) .*/\1/' | tr '\n' ' ')
if [ $rc -eq 0 ] && [ "$(grep -cE '^ > \|epoch: [0-9]+\| metrics for de: pearson = [-0-9.e]+ spearmanr = [-0-9.e]+ corr = [-0-9.e]+ elapsed time \(sec\): [0-9.]+$' <<<"$o")" -eq 12 ] \
   && awk -v c="$corr" 'BEGIN { n = split(c, x, " "); exit !(n == 12 && x[12] > 0.8 && x[12] > x[1]) }'; then
  ok "STS-B --finetune learns: corr by epoch $corr"
else
  bad "STS-B --finetune" "rc=$rc corr '$corr' $(grep -m2 -E "error|metrics" <<<"$o")"
fi
e=$(ft --task STS-B --epochs 0 --pretrained-checkpoint "$tmp/pre" --valid-data "$tmp/t/STS-B/dev.tsv" \
    --micro-batch-size 8 --global-batch-size 8 --lr 2e-3); rc=$?
zeros=$(awk -F'\t' 'NR > 1 && int($10) == 0' "$tmp/t/STS-B/dev.tsv" | wc -l)
grep -qF " >> |epoch: -1| overall: correct / total = $zeros / 20 = " <<<"$e" && [ $rc -eq 0 ] \
  && ok "STS-B without --finetune: Megatron's accuracy of argmax (0) against the truncated scores ($zeros of 20 are 0)" \
  || bad "STS-B accuracy" "rc=$rc $(grep -E "overall|error" <<<"$e" | head -2)"

# 8. refusals before any work, nothing written
refuse() { # name message flags...
  local name="$1" msg="$2" o rc; shift 2
  o=$(timeout 60 "$bin" "${model[@]}" "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$msg" <<<"$o" && ! grep -q "^ iteration " <<<"$o" \
     && [ ! -e "$tmp/none" ]; then
    ok "refused: $name"
  else
    bad "refused: $name" "rc=$rc: $(grep -m1 error <<<"$o")"
  fi
}
base=(--micro-batch-size 8 --global-batch-size 8 --lr 1e-3 --save "$tmp/none")
refuse "no --task" "--task is required" "${base[@]}" --epochs 1 --train-data "$tmp/t/MNLI/train.tsv" --valid-data "$tmp/t/MNLI/dev_matched.tsv"
refuse "an unknown task" "--task BoolQ: Task BoolQ is not implemented" "${base[@]}" --task BoolQ --epochs 1 --valid-data x.tsv
refuse "LAMBADA" "evaluate_zeroshot runs it" "${base[@]}" --task LAMBADA --epochs 1 --valid-data x.tsv
refuse "no --epochs" "--epochs is required" "${base[@]}" --task MNLI --train-data "$tmp/t/MNLI/train.tsv" --valid-data "$tmp/t/MNLI/dev_matched.tsv"
refuse "--train-iters" "--train-iters: fine-tuning runs --epochs passes" "${base[@]}" "${mnli[@]}" --epochs 1 --train-iters 5
refuse "gradient accumulation" "--global-batch-size 16 is not --micro-batch-size 8 x 1 data-parallel ranks = 8: finetuning with gradient accumulation" \
  "${mnli[@]}" --epochs 1 --micro-batch-size 8 --global-batch-size 16 --save "$tmp/none"
refuse "a missing pretrained checkpoint" "no checkpoint" "${base[@]}" "${mnli[@]}" --epochs 1 --pretrained-checkpoint "$tmp/nope"
refuse "a pretrained checkpoint of another shape" "has shape" "${base[@]}" "${mnli[@]}" --epochs 1 --hidden-size 64
printf 'index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2\tlabel1\tgold_label\n0\t1\t2\tg\tx\ty\tx\ty\tGive world.\tGood day.\tmaybe\tmaybe\n' >"$tmp/bad.tsv"
refuse "a bad label, named with its file and line" "bad.tsv:2" "${base[@]}" "${mnli[@]}" --epochs 1 --train-data "$tmp/bad.tsv"
refuse "--keep-last with a partial micro batch" "--keep-last: each data-parallel rank's 96 training samples end in an incomplete micro batch of 6" \
  "${mnli[@]}" --epochs 1 --micro-batch-size 10 --global-batch-size 10 --keep-last --save "$tmp/none"
refuse "interleaved schedule" "Interleaved pipeline schedule is not yet supported for downstream tasks." \
  "${base[@]}" "${mnli[@]}" --epochs 1 --num-layers-per-virtual-pipeline-stage 1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
