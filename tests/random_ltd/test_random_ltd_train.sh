#!/usr/bin/env bash
# pretrain_gpt with random-LTD (--random-ltd and the ds_config's data_efficiency.data_routing.random_ltd block;
# docs/data_efficiency.md), a 4-layer GPT with layers 1 and 2 on a reserved length of 16 -> 64 of 64 tokens over 8
# steps, dropout on:
#   1. the reserved length of each iteration, the consumed tokens and the layer tokens against random_ltd_oracle.py
#      (DeepSpeed's scheduler and Megatron-DeepSpeed's actual_seq_length, transcribed);
#   2. random-LTD changes the losses; a reserved length of every token (min = max = --seq-length) is no random-LTD,
#      bit for bit; the same --seed gives the same run, another seed another; evaluation runs on every token (a
#      checkpoint evaluated with and without --random-ltd gives the same validation loss);
#   3. a checkpoint at 6 resumed to 12 continues bit for bit (losses, tokens, layer tokens);
#   4. under mpirun: DP=2, ZeRO-2 at DP=2, TP=2, PP=2 and full recompute = one process (1e-5);
#   5. refusals before any work, naming the flag or key and the numbers (BERT: test_random_ltd_bert.sh).
# Usage: test_random_ltd_train.sh PRETRAIN_GPT PYTHON3
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1" py="$2"
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
tiny=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 128 --make-vocab-size-divisible-by 64
      --lr 3e-3 --train-iters 12 --log-interval 1 --eval-iters 2 --eval-interval 6 --seed 1234)
# ds NAME MIN MAX [EXTRA_LTD_KEYS] [TOP_LEVEL_EXTRA]: a ds_config with random-LTD on layers 1 and 2
ds() {
  cat >"$tmp/$1.json" <<EOF
{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, ${5:-}
 "data_efficiency": {"enabled": true, "seed": 1234,
   "data_routing": {"enabled": true, "random_ltd": {"enabled": true, "total_layer_num": 4, "random_ltd_layer_num": 2,
     "random_ltd_layer_id": [1, 2], "model_mask_name": "attention_mask", "model_type": "decoder",
     "hidden_state_order": "seq_batch_dim", ${4:-}
     "random_ltd_schedule": {"min_value": $2, "max_value": $3, "schedule_type": "fixed_linear",
       "schedule_config": {"require_steps": 8, "seq_per_step": 8}}}}}}
EOF
}
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}\n' >"$tmp/plain.json"
ds ltd 16 64
ds all 64 64
run() { timeout 300 "$bin" "${tiny[@]}" "$@" 2>&1; }
mpirun_n() { timeout 300 "${mpi[@]}" -np "$1" "$bin" "${tiny[@]}" "${@:2}" 2>&1; }
losses() { field "$1" "lm loss"; }
vals() { grep -F "validation loss at" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }
same() { # NAME A B TOL: 12 equal losses, grad norms (one printed unit) and validation values
  if [ "$(losses "$2" | wc -w)" -eq 12 ] && close "$(losses "$2")" "$(losses "$3")" "$4" \
     && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 2e-3 && close "$(vals "$2")" "$(vals "$3")" "$4"; then
    ok "$1 (last lm loss $(losses "$3" | awk '{print $NF}'))"
  else
    bad "$1" "$(losses "$2") vs $(losses "$3"); $(grep -m2 error <<<"$2$3")"
  fi
}

# 1. the schedule and the counts
ltd=$(run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd)
want=$("$py" "$here/random_ltd_oracle.py" 16 64 8 8 4 2 64 4 12)
got_r=$(field "$ltd" "random ltd reserved length") got_t=$(field "$ltd" "consumed tokens")
want_r=$(head -12 <<<"$want" | awk '{print $1}' | tr '\n' ' ') want_t=$(head -12 <<<"$want" | awk '{print $2}' | tr '\n' ' ')
[ -n "$got_r" ] && [ "$got_r" = "$want_r" ] && ok "reserved length per iteration = DeepSpeed's scheduler: $got_r" \
  || bad "reserved length per iteration" "got '$got_r' want '$want_r'"
[ -n "$got_t" ] && [ "$got_t" = "$want_t" ] && ok "consumed tokens = Megatron-DeepSpeed's (actual_seq_length): $got_t" \
  || bad "consumed tokens" "got '$got_t' want '$want_t'"
lt=$(sed -nE 's/^> random-LTD: ([0-9]+) layer tokens consumed in 12 iterations.*/\1/p' <<<"$ltd")
wl=$(tail -1 <<<"$want" | awk '{print $2}')
[ -n "$lt" ] && [ "$lt" = "$wl" ] && ok "layer tokens after 12 iterations = the scheduler's: $lt" \
  || bad "layer tokens" "got '$lt' want '$wl'; $(grep -m2 -E 'random-LTD|error' <<<"$ltd")"

# 2. effect, keep-all, seeds, evaluation
plain=$(run --deepspeed --deepspeed_config "$tmp/plain.json")
if [ "$(losses "$ltd" | wc -w)" -eq 12 ] && ! close "$(losses "$plain")" "$(losses "$ltd")" 1e-4; then
  ok "random-LTD changes the losses"
else bad "random-LTD changes the losses" "$(losses "$ltd") vs $(losses "$plain")"; fi
all=$(run --deepspeed --deepspeed_config "$tmp/all.json" --random-ltd)
[ "$(losses "$all" | wc -w)" -eq 12 ] && [ "$(losses "$all")" = "$(losses "$plain")" ] \
  && [ "$(field "$all" "grad norm")" = "$(field "$plain" "grad norm")" ] && [ "$(vals "$all")" = "$(vals "$plain")" ] \
  && [ "$(field "$all" "consumed tokens")" = "$(field "$plain" "consumed tokens")" ] \
  && ok "reserved length = --seq-length (min = max = 64): no random-LTD, bit for bit" \
  || bad "keep every token = no random-LTD" "$(losses "$all") vs $(losses "$plain")"
again=$(run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd)
[ "$(losses "$again")" = "$(losses "$ltd")" ] && ok "the same --seed: the same run, bit for bit" \
  || bad "the same --seed: the same run" "$(losses "$again") vs $(losses "$ltd")"
other=$(run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd --seed 1235)
plain2=$(run --deepspeed --deepspeed_config "$tmp/plain.json" --seed 1235)
close "$(losses "$plain2")" "$(losses "$other")" 1e-4 && bad "another --seed draws other tokens" "same losses as dense" \
  || ok "another --seed: another run"
mkdir -p "$tmp/ck"
run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd --save "$tmp/ck" --save-interval 6 --exit-interval 6 \
  >"$tmp/save.log"
e1=$(run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd --load "$tmp/ck" --skip-train)
e2=$(run --deepspeed --deepspeed_config "$tmp/plain.json" --load "$tmp/ck" --skip-train)
v1=$(grep -F "end of training for val data" <<<"$e1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
v2=$(grep -F "end of training for val data" <<<"$e2" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
[ -n "$v1" ] && [ "$v1" = "$v2" ] && ok "evaluation runs on every token: the checkpoint's validation loss $v1 with and without --random-ltd" \
  || bad "evaluation on every token" "'$v1' vs '$v2'; $(grep -m2 error <<<"$e1$e2")"

# 3. resume bit for bit
res=$(run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd --load "$tmp/ck" --save "$tmp/ck" \
      --save-interval 100)
a=$(losses "$ltd" | cut -d' ' -f7-12) b=$(losses "$res")
ta=$(field "$ltd" "consumed tokens" | cut -d' ' -f7-12) tb=$(field "$res" "consumed tokens")
la=$(grep -E "^> random-LTD: [0-9]+ layer tokens" <<<"$ltd") lb=$(grep -E "^> random-LTD: [0-9]+ layer tokens" <<<"$res")
[ -n "$b" ] && [ "$(echo $a)" = "$(echo $b)" ] && [ "$(echo $ta)" = "$(echo $tb)" ] && [ -n "$lb" ] && [ "$la" = "$lb" ] \
  && ok "a checkpoint at 6 resumed to 12: losses, consumed tokens and layer tokens bit for bit" \
  || bad "resume bit for bit" "uninterrupted '$a' / '$ta' / '$la'; resumed '$b' / '$tb' / '$lb'"

# 4. parallel layouts = one process
if command -v mpirun >/dev/null; then
  printf '%s\n' "$(sed 's/"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,/"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},/' "$tmp/ltd.json")" >"$tmp/z2.json"
  same "DP=2 = one process" "$ltd" "$(mpirun_n 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd)" 1e-5
  same "ZeRO-2 at DP=2 = one process" "$ltd" "$(mpirun_n 2 --deepspeed --deepspeed_config "$tmp/z2.json" --random-ltd)" 1e-5
  same "TP=2 = one process" "$ltd" "$(mpirun_n 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd \
                                       --tensor-model-parallel-size 2)" 1e-5
  same "PP=2 = one process" "$ltd" "$(mpirun_n 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd \
                                       --pipeline-model-parallel-size 2)" 1e-5
  out=$(mpirun_n 2 --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd --tensor-model-parallel-size 2 \
        --sequence-parallel)
  grep -qF -- "--sequence-parallel with random-LTD" <<<"$out" && ! grep -q "^ iteration" <<<"$out" \
    && ok "refused: --sequence-parallel (TP=2)" || bad "refused: --sequence-parallel" "$(grep -m2 error <<<"$out")"
else
  echo "SKIP the parallel layouts: mpirun not found"
fi
same "--checkpoint-activations = without" "$ltd" "$(run --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd \
                                                    --checkpoint-activations)" 1e-6

# 5. refusals before any work
expect_error() { # NAME MESSAGE ARGS...: exit 1, the message, no iteration and no model built
  local out rc
  out=$(run "${@:3}"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$2" <<<"$out" && ! grep -q "^ iteration\|building GPT model" <<<"$out"; then ok "refused: $1"
  else bad "refused: $1" "rc=$rc; want: $2; got: $(grep -m2 error <<<"$out")"; fi
}
expect_error "--random-ltd without the block" "--random-ltd needs the ds_config's data_efficiency.data_routing.random_ltd block" \
  --deepspeed --deepspeed_config "$tmp/plain.json" --random-ltd
expect_error "the block without --random-ltd" "data_efficiency.data_routing.random_ltd is enabled without --random-ltd" \
  --deepspeed --deepspeed_config "$tmp/ltd.json"
expect_error "--reset-attention-mask" "--reset-attention-mask with random-LTD" --deepspeed --deepspeed_config \
  "$tmp/ltd.json" --random-ltd --reset-attention-mask
ds bad 16 128
expect_error "max_value above --seq-length" "random_ltd_schedule.max_value 128 is larger than --seq-length 64" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
ds bad 4 64
expect_error "a first reserved length of 0" "the reserved length at step 0 is 0 (min_value 4 rounded down to a multiple of seq_per_step 8)" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
expect_error "total_layer_num against --num-layers" "total_layer_num 4 differs from --num-layers 6" \
  --deepspeed --deepspeed_config "$tmp/ltd.json" --random-ltd --num-layers 6
sed 's/"random_ltd_layer_id": \[1, 2\]/"random_ltd_layer_id": [1, 2, 3]/' "$tmp/ltd.json" >"$tmp/bad.json"
expect_error "random_ltd_layer_num against the list (DeepSpeed's ValueError)" \
  "random_ltd_layer_num 2 must be equivalent to the len of random_ltd_layer_id 3" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
sed 's/"random_ltd_layer_id": \[1, 2\]/"random_ltd_layer_id": [1, 4]/' "$tmp/ltd.json" >"$tmp/bad.json"
expect_error "a layer id past the model" "random_ltd_layer_id[1] = 4 is not a layer of the model (0 to 3 with --num-layers 4)" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
sed 's/"random_ltd_layer_id": \[1, 2\]/"random_ltd_layer_id": [2, 2]/' "$tmp/ltd.json" >"$tmp/bad.json"
expect_error "a layer listed twice" "random_ltd_layer_id lists layer 2 twice" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
sed 's/"model_type": "decoder"/"model_type": "encoder"/' "$tmp/ltd.json" >"$tmp/bad.json"
expect_error "model_type encoder on a GPT" 'model_type "encoder" with a causal (GPT) model' \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
sed 's/"model_type": "decoder",//' "$tmp/ltd.json" >"$tmp/bad.json"
expect_error "a missing required key" "data_efficiency.data_routing.random_ltd.model_type is missing" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
ds bad 16 64 '"layer_token_lr_schedule": {"enabled": true},'
expect_error "layer_token_lr_schedule (DeepSpeed's NotImplementedError)" \
  "layer_token_lr_schedule.enabled true is not supported: DeepSpeed's RandomLTDScheduler raises NotImplementedError" \
  --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
ds bad 16 64 "" '"data_efficiency_unused": 1,'
sed -i 's/"data_efficiency_unused": 1,//; s/"data_efficiency": {"enabled": true, "seed": 1234,/"data_efficiency": {"enabled": true, "seed": 1234, "data_sampling": {"enabled": true, "curriculum_learning": {"enabled": true, "curriculum_metrics": {}}},/' "$tmp/bad.json"
expect_error "the data sampler's block beside random-LTD is read too (an empty curriculum_metrics refused)" \
  "curriculum_learning.curriculum_metrics is empty" --deepspeed --deepspeed_config "$tmp/bad.json" --random-ltd
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
