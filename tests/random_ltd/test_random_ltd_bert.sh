#!/usr/bin/env bash
# pretrain_bert with random-LTD (an encoder: model_type "encoder"; the kept tokens carry their padding flags, as
# DeepSpeed's bert_sample_tokens gathers the mask), 4 layers with layers 1 and 2 on 8 -> 32 of 32 tokens over 4 steps,
# dropout on, on tests/bert's fixture:
#   1. the logged reserved lengths follow DeepSpeed's schedule; random-LTD changes the lm and sop losses; min = max =
#      --seq-length is the run without random-LTD, bit for bit;
#   2. under mpirun: DP=2, TP=2 and PP=2 = one process (lm and sop losses, validation values, grad norms);
#   3. model_type "decoder" on BERT is refused. (The kept-token gradients against PyTorch: tests/parity's bert_parity.)
# Usage: test_random_ltd_bert.sh PRETRAIN_BERT PYTHON3
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1" PY="$2"
. "$(dirname "$0")/../bert/bert_lib.sh"
tiny+=(--micro-batch-size 4)
# ds NAME MIN MAX MODEL_TYPE: random-LTD on layers 1 and 2 of 4
ds() {
  printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": %s, "data_efficiency": {"enabled": true,
 "data_routing": {"enabled": true, "random_ltd": {"enabled": true, "total_layer_num": 4, "random_ltd_layer_num": 2,
 "random_ltd_layer_id": [1, 2], "model_mask_name": "attention_mask", "model_type": "%s",
 "hidden_state_order": "seq_batch_dim", "random_ltd_schedule": {"min_value": %s, "max_value": %s,
 "schedule_type": "fixed_linear", "schedule_config": {"require_steps": 4, "seq_per_step": 8}}}}}}\n' \
    4 "$4" "$2" "$3" >"$tmp/$1.json"
}
ds ltd 8 32 encoder
ds all 32 32 encoder
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4}\n' >"$tmp/plain.json"
ltd=$(one --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd); rc=$?
lens=$(field "$ltd" "random ltd reserved length")
[ $rc -eq 0 ] && [ "$lens" = "8 8 16 24 32 32 " ] && ok "BERT: reserved lengths $lens (floor(t / 4 x 24 + 8) by 8)" \
  || bad "BERT: reserved lengths" "rc=$rc got '$lens'; $(grep -m2 error <<<"$ltd")"
plain=$(one --deepspeed --deepspeed_config "$tmp/plain.json")
if [ "$(field "$ltd" "lm loss" | wc -w)" -eq 6 ] && ! close "$(field "$plain" "lm loss")" "$(field "$ltd" "lm loss")" 1e-4
then ok "BERT: random-LTD changes the losses"
else bad "BERT: random-LTD changes the losses" "$(field "$ltd" "lm loss") vs $(field "$plain" "lm loss")"; fi
all=$(one --deepspeed --deepspeed_config "$tmp/all.json" --random-ltd)
[ -n "$(field "$all" "lm loss")" ] && [ "$(field "$all" "lm loss")" = "$(field "$plain" "lm loss")" ] \
  && [ "$(field "$all" "sop loss")" = "$(field "$plain" "sop loss")" ] \
  && [ "$(vals "$all" "lm loss")" = "$(vals "$plain" "lm loss")" ] \
  && ok "BERT: reserved length = --seq-length is no random-LTD, bit for bit" \
  || bad "BERT: keep every token" "$(field "$all" "lm loss") vs $(field "$plain" "lm loss")"
if command -v mpirun >/dev/null; then
  # the same micro batches of 4 (BERT's loss is a mean per micro batch: another split changes it, as in Megatron)
  o=$(run 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd); rc=$?
  same "BERT random-LTD, DP=2" "$ltd" "$o" "$rc"
  o=$(run 2 --tensor-model-parallel-size 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd); rc=$?
  same "BERT random-LTD, TP=2" "$ltd" "$o" "$rc"
  o=$(run 2 --pipeline-model-parallel-size 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd); rc=$?
  same "BERT random-LTD, PP=2" "$ltd" "$o" "$rc"
else
  echo "SKIP the parallel layouts: mpirun not found"
fi
ds dec 8 32 decoder
out=$(one --deepspeed --deepspeed_config "$tmp/dec.json" --random-ltd); rc=$?
[ $rc -ne 0 ] && grep -qF 'model_type "decoder" with a bidirectional (BERT) model' <<<"$out" \
  && ! grep -q "^ iteration" <<<"$out" && ok "BERT: model_type decoder refused" \
  || bad "BERT: model_type decoder refused" "rc=$rc $(grep -m2 error <<<"$out")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
