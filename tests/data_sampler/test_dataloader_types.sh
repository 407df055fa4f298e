#!/bin/bash
# --dataloader-type cyclic, --no-data-sharding and --repeated-dataloader end to end (docs/data.md), against
# Megatron-DeepSpeed's samplers over the real torch.randperm (megatron_samplers.py):
#  1. a cyclic run equals, loss for loss (dropout on), a single-sampler run whose --train-shuffle-idx-path file is
#     reordered to the order Megatron's random sampler draws: one process, and DP=2 sharded and unsharded (label
#     mpi; skipped without mpirun); PP=2 and TP=2 + sequence parallel equal one process, validations included;
#  2. over a training split shorter than the run (--train-data-exact-num-epochs 1, refused with the plain single
#     sampler), with --lr 0, no dropout and one sample per iteration each iteration's losses are a function of the
#     sample it loads (id_losses.py): the cyclic order through three epochs, the repeated sequential one, a resumed
#     run of each (the repeated loader replays from its resume point, as Megatron-DeepSpeed's); a resumed cyclic run
#     with training on continues bit for bit; GPT, BERT and T5;
#  3. the argument dump; an unknown loader type refused (a split too small for the random sampler and a repeated
#     loader with nothing left are refused by test_pretraining_sampler and above).
# Usage: test_dataloader_types.sh BIN_DIR PYTHON3
BIN=$1 PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMP_NUM_THREADS=1

source "$HERE/null_corpus.sh" # corpus_text_document: 80 NullTokenizer documents
D=(--data-path corpus_text_document --split 90,10,0 --tokenizer-type NullTokenizer --vocab-size 100 --seq-length 16
   --seed 3)
model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 16 --log-interval 1
       --make-vocab-size-divisible-by 64)
tiny=("${model[@]}" --lr 1e-3 --micro-batch-size 2 --global-batch-size 8 --train-iters 6 --eval-iters 0)
gpt() { timeout 120 "$BIN/pretrain_gpt" "$@" 2>&1; }
lines() { grep -E "^ iteration " <<<"$1" | sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second: .*//'; }
total_of() { grep -m1 "total number of samples:" <<<"$1" | awk '{print $NF}'; }

# ---- 1. the order of the first epoch, through a reordered shuffle index -------------------------------------------
# NAME NP FLAGS...: the cyclic run at NP processes against the single sampler over the oracle's order
reorder_check() {
  local name=$1 np=$2 a b h sharding=1 dp=1 launch=()
  shift 2
  [[ " $* " == *" --no-data-sharding "* ]] && sharding=0
  [ "$np" -gt 1 ] && dp=$np launch=("${mpi[@]}" -np "$np")
  a=$(timeout 300 "${launch[@]}" "$BIN/pretrain_gpt" "${tiny[@]}" "${D[@]}" --dataloader-type cyclic "$@" 2>&1)
  h=$(grep -l "Dataset name train" index-cache/*.dsc 2>/dev/null | head -1)
  h=${h%.dsc}
  rm -rf mine && mkdir mine
  cp "${h}_doc_idx.npy" mine/doc.npy && cp "${h}_sample_idx.npy" mine/sample.npy
  "$PY" - "${h}_shuffle_idx.npy" mine/shuffle.npy "$HERE" "$sharding" "$dp" <<'PYEOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
import megatron_samplers
shuffle = np.load(sys.argv[1])
n, sharding, dp = len(shuffle), int(sys.argv[4]), int(sys.argv[5])
order = megatron_samplers.positions("cyclic", sharding, n, 2, dp, 0, 48 // (2 * dp))
assert len(order) == 48 and len(set(order)) == 48, "the first epoch repeats a sample"
rest = [i for i in range(n) if i not in set(order)]
np.save(sys.argv[2], shuffle[np.array(order + rest)].astype(shuffle.dtype))
PYEOF
  b=$(timeout 300 "${launch[@]}" "$BIN/pretrain_gpt" "${tiny[@]}" "${D[@]}" --train-doc-idx-path "$tmp/mine/doc.npy" \
      --train-sample-idx-path "$tmp/mine/sample.npy" --train-shuffle-idx-path "$tmp/mine/shuffle.npy" 2>&1)
  if [ -s mine/shuffle.npy ] && [ "$(grep -c "^ iteration" <<<"$a")" -eq 6 ] && [ "$(lines "$a")" == "$(lines "$b")" ]
  then
    ok "$name: the cyclic run = the single sampler over Megatron's random order (6 iterations, dropout on)"
  else
    bad "$name" "$(diff <(lines "$a") <(lines "$b") | head -4) $(grep -m1 error <<<"$a$b")"
  fi
  RUN_A=$a
}
reorder_check "cyclic, one process" 1
single=$(gpt "${tiny[@]}" "${D[@]}")
[ "$(lines "$RUN_A")" != "$(lines "$single")" ] && ok "the cyclic order is not the sequential one" ||
  bad "cyclic = single" "the orders give the same losses"
if command -v mpirun >/dev/null; then
  reorder_check "cyclic, DP=2 (each rank shuffles its bucket)" 2
  reorder_check "cyclic --no-data-sharding, DP=2 (one permutation, ranks strided)" 2 --no-data-sharding
  losses() { grep -E "lm loss" <<<"$1" | sed -E 's/.*lm loss( value)?: ([0-9.E+-]+).*/\2/' | tr '\n' ' '; }
  ev=(--eval-iters 1 --eval-interval 3)
  one=$(gpt "${tiny[@]}" "${D[@]}" "${ev[@]}" --dataloader-type cyclic)
  for lay in "--pipeline-model-parallel-size 2" "--tensor-model-parallel-size 2 --sequence-parallel"; do
    # shellcheck disable=SC2086
    out=$(timeout 300 "${mpi[@]}" -np 2 "$BIN/pretrain_gpt" "${tiny[@]}" "${D[@]}" "${ev[@]}" --dataloader-type cyclic \
          $lay 2>&1)
    # the same samples in the same order: the losses to the layouts' rounding (PP sums the tied embedding's two
    # gradients across stages, TP reduces over ranks), 1e-5
    [ "$(losses "$one" | wc -w)" -eq 9 ] && close "$(losses "$out")" "$(losses "$one")" 1e-5 &&
      ok "cyclic, $lay = one process (6 iterations, 3 validations, 1e-5)" ||
      bad "cyclic $lay" "$(losses "$out") vs $(losses "$one") $(grep -m1 error <<<"$out")"
  done
else
  echo "SKIP DP=2: no mpirun"
fi

# ---- 2. a short training split: the losses follow the sampler's samples -------------------------------------------
S=(--split 20,80,0 --train-data-exact-num-epochs 1)
frozen=("${model[@]}" --lr 0 --micro-batch-size 1 --global-batch-size 1 --eval-iters 0 --attention-dropout 0
        --hidden-dropout 0)
Dshort=("${D[@]}" "${S[@]}")
out=$(gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150)
grep -q "error: bad argument value: --train-data-exact-num-epochs 1 gives 70 training samples, but training needs 150" \
  <<<"$out" && ! grep -q "^ iteration" <<<"$out" && ok "the single sampler refuses a run past the split's end" ||
  bad "short split, single" "$(grep -m1 -E "error|iteration" <<<"$out")"
# id_check NAME KIND SHARDING START LOG [id_losses.py options]: the log's losses follow the sampler's samples
id_check() {
  local name=$1 kind=$2 sharding=$3 start=$4 log=$5 total msg
  shift 5
  total=$(total_of "$log")
  printf '%s\n' "$log" > run.log
  if msg=$("$PY" "$HERE/id_losses.py" run.log "$kind" "$sharding" "${total:-0}" "$start" "$@" 2>&1); then
    ok "$name: $msg"
  else
    bad "$name" "$msg $(grep -m1 error <<<"$log")"
  fi
}
cyc=$(gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --dataloader-type cyclic)
id_check "GPT cyclic over 70 samples, 150 iterations (3 epochs)" cyclic 1 0 "$cyc" --map-out gpt.json --min-distinct 60
rep=$(gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --repeated-dataloader)
id_check "GPT --repeated-dataloader: the split replayed" repeat 0 0 "$rep" --map-in gpt.json
# stopped at 40 and resumed: the loader built after --load replays samples 40..69 (Megatron-DeepSpeed's sampler
# keeps the consumed count it was built with)
gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --repeated-dataloader --save ck_rep --save-interval 40 \
  --exit-interval 40 >/dev/null
res=$(gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --repeated-dataloader --load ck_rep)
grep -q "^ iteration       41/" <<<"$res" || bad "resume at 40" "$(grep -m1 -E "^error|^ iteration" <<<"$res")"
id_check "GPT --repeated-dataloader resumed at 40: passes of samples 40..69" repeat 0 40 "$res" --map-in gpt.json
gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --dataloader-type cyclic --save ck_cyc --save-interval 100 \
  --exit-interval 100 >/dev/null
res=$(gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --dataloader-type cyclic --load ck_cyc)
id_check "GPT cyclic resumed at 100 (in epoch 1)" cyclic 1 100 "$res" --map-in gpt.json
out=$(gpt "${frozen[@]}" "${Dshort[@]}" --train-iters 150 --repeated-dataloader --load ck_cyc)
grep -q "error: dataset: --repeated-dataloader: the training split holds 70 samples and the run has consumed 100" \
  <<<"$out" && ! grep -q "^ iteration" <<<"$out" &&
  ok "a repeated loader resumed past the split's end is refused (Megatron's sampler asserts)" ||
  bad "repeat past the end" "$(grep -m1 -E "^error|^ iteration" <<<"$out")"
# training on, dropout on: a resumed cyclic run continues bit for bit past an epoch's end (70 samples, 8 a step)
trained=("${model[@]}" --lr 1e-3 --micro-batch-size 2 --global-batch-size 8 --eval-iters 1 --eval-interval 4)
full=$(gpt "${trained[@]}" "${Dshort[@]}" --train-iters 14 --dataloader-type cyclic)
gpt "${trained[@]}" "${Dshort[@]}" --train-iters 14 --dataloader-type cyclic --save ck_t --save-interval 10 \
  --exit-interval 10 >/dev/null
second=$(gpt "${trained[@]}" "${Dshort[@]}" --train-iters 14 --dataloader-type cyclic --load ck_t)
if [ "$(grep -c "^ iteration" <<<"$full")" -eq 14 ] &&
   [ "$(lines "$full" | tail -4)" == "$(lines "$second")" ] &&
   [ "$(grep "validation loss at iteration 12" <<<"$full")" == "$(grep "validation loss at iteration 12" <<<"$second")" ]
then
  ok "cyclic resumed at iteration 10 (epoch 1) = uninterrupted, iterations 11-14 and the validation at 12"
else
  bad "cyclic resume" "$(diff <(lines "$full" | tail -4) <(lines "$second") | head -4) $(grep -m1 error <<<"$second")"
fi

# BERT and T5: the same through their samples mappings (sentence-level corpus of tests/bert)
"$PY" "$HERE/../bert/make_fixture.py" fx >/dev/null || bad "make_fixture.py" "failed"
"$BIN/preprocess_data" --input fx/corpus.jsonl --output-prefix fx/corpus --workers 1 --vocab-file fx/vocab.txt \
  --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null 2>&1 || bad "preprocess_data" "BERT corpus"
SD=(--data-path fx/corpus_text_sentence --vocab-file fx/vocab.txt --split 20,80,0 --train-data-exact-num-epochs 1
    --num-attention-heads 4 --hidden-size 32 --max-position-embeddings 32 --seq-length 32 --lr 0
    --micro-batch-size 1 --global-batch-size 1 --eval-iters 0 --attention-dropout 0 --hidden-dropout 0
    --log-interval 1 --seed 1234)
bert=$(timeout 300 "$BIN/pretrain_bert" "${SD[@]}" --num-layers 2 --train-iters 1 2>&1)
n=$(total_of "$bert")
if [ -n "$n" ] && [ "$n" -ge 10 ]; then
  bert=$(timeout 300 "$BIN/pretrain_bert" "${SD[@]}" --num-layers 2 --train-iters $((2 * n + 5)) \
         --dataloader-type cyclic 2>&1)
  id_check "BERT cyclic over $n samples, $((2 * n + 5)) iterations" cyclic 1 0 "$bert" --min-distinct $((n * 3 / 4))
  t5=$(timeout 300 "$BIN/pretrain_t5" "${SD[@]}" --num-layers 1 --decoder-seq-length 16 --vocab-extra-ids 10 \
       --train-iters 1 2>&1)
  n5=$(total_of "$t5")
  t5=$(timeout 300 "$BIN/pretrain_t5" "${SD[@]}" --num-layers 1 --decoder-seq-length 16 --vocab-extra-ids 10 \
       --train-iters $((2 * n5 + 5)) --repeated-dataloader 2>&1)
  id_check "T5 --repeated-dataloader over $n5 samples" repeat 0 0 "$t5" --min-distinct $((n5 * 3 / 4))
  t5=$(timeout 300 "$BIN/pretrain_t5" "${SD[@]}" --num-layers 1 --decoder-seq-length 16 --vocab-extra-ids 10 \
       --train-iters $((2 * n5 + 5)) --dataloader-type cyclic --no-data-sharding 2>&1)
  id_check "T5 cyclic --no-data-sharding over $n5 samples" cyclic 0 0 "$t5" --min-distinct $((n5 * 3 / 4))
else
  bad "BERT samples" "the BERT training split has '$n' samples: $(grep -m1 error <<<"$bert")"
fi

# ---- 3. the argument dump; refusals --------------------------------------------------------------------------------
out=$(gpt "${tiny[@]}" "${D[@]}" --train-iters 1 --dataloader-type cyclic --no-data-sharding --repeated-dataloader)
grep -q "^  dataloader_type \.* cyclic$" <<<"$out" && grep -q "^  data_sharding \.* False$" <<<"$out" &&
  grep -q "^  repeated_dataloader \.* True$" <<<"$out" && ok "the argument dump records the three flags" ||
  bad "argument dump" "$(grep -E "dataloader|sharding" <<<"$out")"
out=$(gpt "${tiny[@]}" "${D[@]}" --dataloader-type random)
grep -q "dataloader-type" <<<"$out" && grep -q "cyclic" <<<"$out" && ! grep -q "^ iteration" <<<"$out" &&
  ok "an unknown loader type is refused with the choices" || bad "unknown type" "$(grep -m1 error <<<"$out")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
