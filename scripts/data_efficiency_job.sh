#!/usr/bin/env bash
# The main job's GPT (scripts/main_job.sh: Brown corpus, GPT-2 BPE, 4 layers, hidden 256, 128 tokens, batch 8)
# trained four ways at the same token budget, as Megatron-DeepSpeed's data-efficiency examples compare them
# (issue 21, item 6; docs/data_efficiency.md):
#   baseline    every iteration on 8 x 128 tokens;
#   curriculum  the legacy seqlen curriculum, fixed_linear 16 -> 128 tokens over STEPS/2 steps in multiples of 8;
#   random-LTD  layers 1 and 2 of 4 on a reserved length of 16 -> 128 tokens over STEPS/2 steps in multiples of 16;
#   voc+seqlen  the data-efficiency library's data sampler (--data-efficiency-curriculum-learning), the example
#               script's pair: vocabulary rarity by percentile (analyze_data's files over one epoch of the train
#               split, schedule_based clusters, fixed_root degree 2 from 1 to 100 over STEPS/2 steps) with
#               seqlen_truncate as the curriculum's 16 -> 128; its training split is that one epoch
#               (--train-data-exact-num-epochs 1: the analysis names its samples).
# Each run stops when its consumed tokens (Megatron-DeepSpeed's count: the curriculum's length, random-LTD's
# actual_seq_length) reach the baseline's STEPS x 1024 (--train-tokens), with the token-based LR schedule
# (--lr-warmup-tokens, --lr-decay-tokens) over the same budget; validation at the full length every 100 iterations
# and at the end, then the test split. Prints one line per run: iterations, tokens, final validation and test
# loss, the run's wall time and CPU time (user + system of the process and its threads: less sensitive than the wall
# time to other work on a shared machine).
#   bash scripts/data_efficiency_job.sh [STEPS]   (default 300: about 4 minutes a run on 2 cores, and the analysis)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-300}
. scripts/brown_data.sh
brown_gpt2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tokens=$((STEPS * 8 * 128)) ramp=$((STEPS / 2))
cat >"$out/baseline.json" <<EOF
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8}
EOF
cat >"$out/curriculum.json" <<EOF
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8,
 "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": 16, "max_difficulty": 128,
   "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": $ramp, "difficulty_step": 8}}}
EOF
cat >"$out/random-LTD.json" <<EOF
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8,
 "data_efficiency": {"enabled": true, "data_routing": {"enabled": true, "random_ltd": {"enabled": true,
   "total_layer_num": 4, "random_ltd_layer_num": 2, "random_ltd_layer_id": [1, 2], "model_mask_name": "attention_mask",
   "model_type": "decoder", "hidden_state_order": "seq_batch_dim",
   "random_ltd_schedule": {"min_value": 16, "max_value": 128, "schedule_type": "fixed_linear",
     "schedule_config": {"require_steps": $ramp, "seq_per_step": 16}}}}}}
EOF
cat >"$out/voc+seqlen.json" <<EOF
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8,
 "data_efficiency": {"enabled": true, "seed": 1234, "data_sampling": {"enabled": true, "curriculum_learning": {
   "enabled": true, "data_cluster_path": "$out/clusters", "curriculum_metrics": {
     "voc": {"index_to_sample_path": "$out/analysis/vocab_rarity/vocab_rarity_index_to_sample_percentile_merged",
             "index_to_metric_path": "$out/analysis/vocab_rarity/vocab_rarity_index_to_metric",
             "difficulty_type": "percentile", "clustering_type": "schedule_based", "min_difficulty": 1,
             "max_difficulty": 100, "schedule_type": "fixed_root",
             "schedule_config": {"total_curriculum_step": $ramp, "difficulty_step": 1, "root_degree": 2}},
     "seqlen_truncate": {"index_to_sample_path": "dummy", "index_to_metric_path": "dummy", "difficulty_type": "value",
             "clustering_type": "single_cluster", "min_difficulty": 16, "max_difficulty": 128,
             "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": $ramp, "difficulty_step": 8}}}}}}}
EOF
data=(--data-path "${PREFIX}_text_document" --split 900,50,50 --seq-length 128 --tokenizer-type GPT2BPETokenizer
      --vocab-file "$VOCAB" --merge-file "$MERGES")
# the vocabulary-rarity analysis (examples_deepspeed/data_efficiency/gpt/ds_analyze_gpt_data_map.sh and _reduce.sh)
an=(./build/bin/analyze_data --analyzing-data-type GPT "${data[@]}" --train-data-exact-num-epochs 1 --save "$out/analysis"
    --num-layers 4 --hidden-size 256 --num-attention-heads 4 --analyzing-num-workers 1 --analyzing-worker-id 0
    --analyzing-num-threads "$(nproc)")
for metric in total_vocab_freq vocab_rarity; do
  for task in map reduce; do "${an[@]}" --analyzing-task $task --analyzing-metric $metric >"$out/analyze.log" 2>&1; done
done
summary=()
for run in baseline curriculum random-LTD voc+seqlen; do
  extra=()
  [ "$run" = random-LTD ] && extra=(--random-ltd)
  [ "$run" = voc+seqlen ] && extra=(--data-efficiency-curriculum-learning --train-data-exact-num-epochs 1)
  log="$out/$run.log"
  t0=$(date +%s.%N)
  cpu0=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
  ./build/bin/pretrain_gpt \
    --num-layers 4 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 1024 \
    --max-position-embeddings 128 --micro-batch-size 8 --global-batch-size 8 "${data[@]}" \
    --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-tokens $((30 * 1024)) --lr-decay-tokens "$tokens" \
    --weight-decay 0.1 --adam-beta2 0.95 --clip-grad 1.0 --attention-dropout 0.1 --hidden-dropout 0.1 \
    --train-iters $((STEPS * 10)) --train-tokens "$tokens" --log-interval 1 --eval-interval 100 --eval-iters 10 \
    --deepspeed --deepspeed_config "$out/$run.json" "${extra[@]}" >"$log" 2>&1
  t1=$(date +%s.%N)
  cpu=$(awk -v c0="$cpu0" -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15 + $16 + $17 - c0) / hz }' /proc/$$/stat)
  its=$(grep -E "^ iteration " "$log" | tail -1 | sed -E 's/^ iteration +([0-9]+)\/.*/\1/')
  tok=$(grep -E "^ iteration " "$log" | tail -1 | sed -E 's/.*consumed tokens: +([0-9]+).*/\1/')
  val=$(grep -F "the end of training for val data" "$log" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
  tst=$(grep -F "the end of training for test data" "$log" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
  line=$(printf '%-10s  %5s iterations  %8s tokens  validation loss %s  test loss %s  %.0f s wall, %.0f s CPU' \
         "$run" "$its" "$tok" "$val" "$tst" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$cpu")
  echo "$line"
  summary+=("$line")
done
echo
echo "Same token budget ($tokens tokens, Megatron-DeepSpeed's count) on $(nproc) cores, $(date -u +%Y-%m-%d):"
printf '%s\n' "${summary[@]}"
