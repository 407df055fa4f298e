#!/usr/bin/env bash
# pretrain_bert --data-efficiency-curriculum-learning (DeepSpeed's data sampler with pretrain_bert.py's
# data_post_process; docs/data_efficiency.md), on tests/bert's generated sentence corpus at --seq-length 64 with many
# short samples (--short-seq-prob 0.9):
#  1. each micro batch is cut to its longest sample rounded up to 8: the run equals data_sampler_bert_nocut (the
#     sampler's order at the full length), losses and validations, without dropout; the log's curriculum seqlen
#     (the last micro batch's length) is a multiple of 8 and below 64 at some iterations; consumed tokens grow by
#     8 x it;
#  2. with a seqlen_truncate metric the cut is its difficulty rounded up to 8: at multiples of 8 bit for bit the
#     driver's truncation, and 4 .. 20 in steps of 4 logged as 8 8 16 16 24 ...;
#  3. a run resumed at iteration 3 continues bit for bit;
#  4. TP=2 with sequence parallelism equals one process; DP=2 equals one process, and its lengths are the longest over both ranks (one process at micro batch 4 sees the
#     same samples in one micro batch) (mpirun; skipped without it); refused: pipelines, the flops profiler;
#  5. --train-idx-path (the example script's): the training samples mapping built at, then loaded from that path;
#     --return-data-index recorded, no loss changed.
# Usage: test_bert_data_sampling.sh PRETRAIN_BERT PYTHON3 BERT_NOCUT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="$2"; nocut="$3"
. "$(dirname "$0")/../bert/bert_lib.sh"
cd "$tmp" || exit 1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --data-path "$data" --vocab-file "$vocab" --split 90,10,0 --lr 1e-3 --train-iters 6 --log-interval 1
      --eval-interval 3 --eval-iters 1 --global-batch-size 8 --micro-batch-size 2 --seed 1234 --short-seq-prob 0.9
      --data-efficiency-curriculum-learning --deepspeed)
nodrop=(--attention-dropout 0 --hidden-dropout 0)
sampler() { # name, mbs, metric json
  printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": %s, "data_efficiency": {"enabled": true, "seed": 1234, "data_sampling": {"enabled": true, "num_workers": 0, "curriculum_learning": {"enabled": true, "data_cluster_path": "clusters", "curriculum_metrics": {%s}}}}}\n' "$2" "$3" > "$1.json"
}
metric() { # name min max step
  printf '"%s": {"index_to_sample_path": "dummy", "index_to_metric_path": "dummy", "difficulty_type": "value", "clustering_type": "single_cluster", "min_difficulty": %s, "max_difficulty": %s, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 5, "difficulty_step": %s}}' "$1" "$2" "$3" "$4"
}
lines() { grep -E "^ iteration |validation loss at" <<<"$1" | sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second: .*//; s/ curriculum seqlen: +[0-9]+ \|//; s/ consumed tokens: +[0-9]+ \|//'; }
bert() { timeout 120 "$bin" "${tiny[@]}" "$@" 2>&1; }

# ---- 1. the longest sample -----------------------------------------------------------------------------------------
sampler voc 2 "$(metric voc 1 2 1)"
a=$(bert "${nodrop[@]}" --deepspeed_config voc.json)
b=$(timeout 120 "$nocut" "${tiny[@]}" "${nodrop[@]}" --deepspeed_config voc.json 2>&1)
[ "$(field "$a" "lm loss" | wc -w)" -eq 6 ] && close "$(field "$a" "lm loss")" "$(field "$b" "lm loss")" 1e-5 &&
  close "$(field "$a" "sop loss")" "$(field "$b" "sop loss")" 1e-5 &&
  close "$(vals "$a" "lm loss")" "$(vals "$b" "lm loss")" 1e-5 &&
  ok "cut to the longest sample = the sampler's order at --seq-length 64 (6 iterations, 3 validations)" ||
  bad "cut vs no cut" "$(field "$a" "lm loss") vs $(field "$b" "lm loss") $(grep -m1 error <<<"$a$b")"
lens=$(field "$a" "curriculum seqlen")
want=0 tokens="" good=1 short=0
for d in $lens; do
  [ $((d % 8)) -eq 0 ] && [ "$d" -le 64 ] && [ "$d" -ge 8 ] || good=0
  [ "$d" -lt 64 ] && short=$((short + 1))
  want=$((want + 8 * d)) tokens+="$want "
done
[ $good = 1 ] && [ $short -ge 1 ] && [ "$(field "$a" "consumed tokens")" == "$tokens" ] &&
  [ "$(field "$b" "curriculum seqlen")" == "64 64 64 64 64 64 " ] &&
  ok "curriculum seqlen: the last micro batch's length in multiples of 8 ($lens), consumed tokens 8 x it" ||
  bad "lengths" "$lens / $(field "$a" "consumed tokens") vs $tokens"
bert --deepspeed_config voc.json > /dev/null && ok "with dropout it runs" || bad "dropout" "failed"

# ---- 2. seqlen_truncate ---------------------------------------------------------------------------------------------
sampler tr8 2 "$(metric seqlen_truncate 8 40 8)"
a=$(bert "${nodrop[@]}" --deepspeed_config tr8.json)
b=$(timeout 120 "$nocut" "${tiny[@]}" "${nodrop[@]}" --deepspeed_config tr8.json 2>&1)
[ "$(field "$a" "lm loss" | wc -w)" -eq 6 ] && [ "$(lines "$a")" == "$(lines "$b")" ] &&
  [ "$(field "$a" "curriculum seqlen")" == "$(field "$b" "curriculum seqlen")" ] &&
  ok "seqlen_truncate at multiples of 8 ($(field "$a" "curriculum seqlen")): bit for bit the truncated run" ||
  bad "seqlen_truncate" "$(diff <(lines "$a") <(lines "$b") | head -3) $(grep -m1 error <<<"$a$b")"
sampler tr4 2 "$(metric seqlen_truncate 4 20 4)"
a=$(bert --deepspeed_config tr4.json)
b=$(timeout 120 "$nocut" "${tiny[@]}" --deepspeed_config tr4.json 2>&1)
rounded=""
for d in $(field "$b" "curriculum seqlen"); do rounded+="$(((d + 7) / 8 * 8)) "; done
[ -n "$rounded" ] && [ "$(field "$a" "curriculum seqlen")" == "$rounded" ] &&
  ok "seqlen_truncate $(field "$b" "curriculum seqlen")rounded up to 8: $rounded" ||
  bad "rounded" "$(field "$a" "curriculum seqlen") vs $rounded"

# ---- 3. resume ------------------------------------------------------------------------------------------------------
full=$(bert --deepspeed_config voc.json)
bert --deepspeed_config voc.json --save ck --save-interval 3 --exit-interval 3 >/dev/null
res=$(bert --deepspeed_config voc.json --load ck)
tail3() { grep -E "^ iteration +[456]/|validation loss at iteration 6" <<<"$1" |
  sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second: .*//'; }
[ -n "$(tail3 "$res")" ] && [ "$(tail3 "$res")" == "$(tail3 "$full")" ] &&
  ok "resumed at iteration 3: iterations 4-6 (their lengths) and the validation bit for bit" ||
  bad "resume" "$(diff <(tail3 "$res") <(tail3 "$full") | head -4) $(grep -m1 error <<<"$res")"

# ---- 4. data parallelism and refusals -------------------------------------------------------------------------------
if command -v mpirun >/dev/null; then
  one=$(bert "${nodrop[@]}" --deepspeed_config voc.json)
  out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${nodrop[@]}" --deepspeed_config voc.json 2>&1)
  sampler voc4 4 "$(metric voc 1 2 1)"
  four=$(bert "${nodrop[@]}" --micro-batch-size 4 --deepspeed_config voc4.json)
  close "$(field "$out" "lm loss")" "$(field "$one" "lm loss")" 2e-5 &&
    [ "$(field "$out" "lm loss" | wc -w)" -eq 6 ] &&
    [ "$(field "$out" "curriculum seqlen")" == "$(field "$four" "curriculum seqlen")" ] &&
    ok "DP=2 = one process; its lengths ($(field "$out" "curriculum seqlen")) the longest over both ranks" ||
    bad "DP=2" "$(field "$out" "lm loss") vs $(field "$one" "lm loss"); $(field "$out" "curriculum seqlen") vs $(field "$four" "curriculum seqlen") $(grep -m1 error <<<"$out")"
  out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${nodrop[@]}" --tensor-model-parallel-size 2 \
        --sequence-parallel --deepspeed_config voc.json 2>&1)
  close "$(field "$out" "lm loss")" "$(field "$one" "lm loss")" 2e-5 && [ "$(field "$out" "lm loss" | wc -w)" -eq 6 ] &&
    [ "$(field "$out" "curriculum seqlen")" == "$(field "$one" "curriculum seqlen")" ] &&
    ok "TP=2 with sequence parallelism = one process (the same lengths)" ||
    bad "TP=2" "$(field "$out" "lm loss") vs $(field "$one" "lm loss") $(grep -m1 error <<<"$out")"
  out=$(timeout 120 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --pipeline-model-parallel-size 2 --deepspeed_config voc.json 2>&1)
  grep -qF "with --pipeline-model-parallel-size 2 is not supported: each micro batch is cut to its own length" <<<"$out" &&
    ! grep -q "^ iteration" <<<"$out" && ok "refused: pipelines" || bad "refused: pipelines" "$(grep -m1 error <<<"$out")"
else
  echo "SKIP DP=2 and the pipeline refusal: no mpirun"
fi
"$PY" -c "import json; c = json.load(open('voc.json')); c['flops_profiler'] = {'enabled': True, 'profile_step': 1}; json.dump(c, open('fp.json', 'w'))"
out=$(bert --deepspeed_config fp.json)
grep -qF "the flops_profiler with BERT --data-efficiency-curriculum-learning is not supported" <<<"$out" &&
  ! grep -q "^ iteration" <<<"$out" && ok "refused: the flops profiler" || bad "flops profiler" "$(grep -m1 error <<<"$out")"

# ---- 5. --train-idx-path (the BERT data-efficiency script's): the training samples mapping built at that path when
# missing, then loaded from it, the run unchanged; a mapping of other documents, a blend and pretrain_gpt refused
rm -f idx/train_map.npy; mkdir -p idx
a=$(bert --deepspeed_config voc.json --train-idx-path idx/train_map.npy)
b=$(bert --deepspeed_config voc.json --train-idx-path idx/train_map.npy --return-data-index)
c=$(bert --deepspeed_config voc.json)
grep -qF "could not find index map file idx/train_map.npy, building" <<<"$a" && [ -s idx/train_map.npy ] &&
  grep -qF "loading indexed mapping from idx/train_map.npy" <<<"$b" &&
  [ "$(field "$a" "lm loss")" == "$(field "$c" "lm loss")" ] && [ "$(field "$b" "lm loss")" == "$(field "$c" "lm loss")" ] &&
  [ -n "$(field "$a" "lm loss")" ] &&
  ok "--train-idx-path: built there, then loaded from there; the losses are the run's without it" ||
  bad "--train-idx-path" "$(grep -m1 -E "error|index map" <<<"$a$b")"
grep -qE "^  train_idx_path \.+ idx/train_map\.npy$" <<<"$b" && grep -qE "^  return_data_index \.+ True$" <<<"$b" &&
  grep -qE "^  return_data_index \.+ False$" <<<"$c" &&
  ok "the argument dump records --train-idx-path and --return-data-index (which changes no loss)" ||
  bad "argument dump" "$(grep -E "train_idx_path|return_data_index" <<<"$b$c")"
valid=$(ls "$fx"/*_valid_indexmap_*.npy 2>/dev/null | head -1)
out=$(bert --deepspeed_config voc.json --train-idx-path "$valid")
[ -n "$valid" ] && grep -qF "is not a sample of the train documents" <<<"$out" && ! grep -q "^ iteration" <<<"$out" &&
  ok "--train-idx-path naming the validation mapping: refused" || bad "wrong mapping" "$(grep -m1 error <<<"$out")"
out=$(bert --deepspeed_config voc.json --train-idx-path idx/train_map.npy --data-path 1 "$data" 1 "$data")
grep -qF "names one training samples mapping, but --data-path blends 2 datasets" <<<"$out" &&
  ! grep -q "^ iteration" <<<"$out" && ok "--train-idx-path with a blend: refused" || bad "blend" "$(grep -m1 error <<<"$out")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
