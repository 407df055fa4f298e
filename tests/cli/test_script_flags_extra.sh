#!/usr/bin/env bash
# The last flags of Megatron-DeepSpeed's example scripts (issue 24) on pretrain_gpt: the MoE flags of the dense
# scripts (MoE/ds_pretrain_gpt_*_dense.sh, offload_pp) accepted with Megatron-DeepSpeed's types, defaults and checks
# and recorded in the argument dump, an expert-parallel size the data-parallel size does not divide refused (MoE
# itself: tests/moe); the
# dense model trains exactly as without the flags; --random-ltd without its ds_config block refused;
# --data-efficiency-curriculum-learning without its ds_config block refused; --universal-checkpoint (and the ds_config's checkpoint.load_universal)
# following latest_universal when it names one of our checkpoints, latest otherwise, a DeepSpeed universal
# checkpoint refused naming its file; --cpu-optimizer accepted where the optimizer step runs on the CPU;
# the FlashAttention flags recorded (attention is exact either way), the Triton one only without attention dropout.
# Usage: test_script_flags_extra.sh path/to/pretrain_gpt
set -u
BIN=${1:?usage: test_script_flags_extra.sh path/to/pretrain_gpt}
README="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/README.md"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
T=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
   --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --min-lr 1e-4 --mock-data --vocab-size 128
   --log-interval 1 --eval-iters 0 --train-iters 3)
expect_fail() { # expect_fail NAME MESSAGE FLAGS...: exit != 0 and the message in the output
  local name=$1 message=$2
  shift 2
  local out
  out=$(timeout 60 "$BIN" "$@" 2>&1)
  if [ $? -ne 0 ] && grep -qF -- "$message" <<<"$out"; then ok "$name"; else bad "$name" "$(grep -m1 error <<<"$out")"; fi
}
dump_has() { # dump_has NAME OUTPUT name=value...
  local name=$1 out=$2 missing=""
  shift 2
  for kv in "$@"; do grep -qE "^  ${kv%%=*} \.+ ${kv#*=}$" <<<"$out" || missing="$missing ${kv}"; done
  [ -z "$missing" ] && ok "$name" || bad "$name" "not in the dump:$missing"
}
# the iteration lines without the timings
iters() { grep -E "^ iteration +[0-9]+/" <<<"$1" | sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second: .*$//'; }

# 1. the dense model of the MoE scripts
plain=$(timeout 120 "$BIN" "${T[@]}" 2>&1)
dump_has "MoE defaults in the dump (Megatron-DeepSpeed's)" "$plain" "num_experts=\[1\]" mlp_type=standard topk=1 \
  expert_interval=2 moe_expert_parallel_size=1 moe_train_capacity_factor=1.0 moe_eval_capacity_factor=1.0 \
  moe_min_capacity=4 moe_loss_coeff=0.1 create_moe_param_group=False moe_token_dropping=True \
  moe_top2_2nd_expert_sampling=True use_tutel=False enable_expert_tensor_parallelism=False
out=$(timeout 120 "$BIN" "${T[@]}" --moe-expert-parallel-size 1 --num-experts 1 --moe-loss-coeff 0.01 \
      --moe-train-capacity-factor 2.0 --moe-eval-capacity-factor 1.5 --moe-min-capacity 8 --create-moe-param-group \
      --disable-moe-token-dropping --mlp-type standard --topk 1 --expert-interval 2 --use-tutel \
      --enable-expert-tensor-parallelism --disable-moe-top2-2nd-expert-sampling 2>&1)
rc=$?
dump_has "the dense scripts' MoE flags in the dump" "$out" "num_experts=\[1\]" mlp_type=standard topk=1 \
  expert_interval=2 moe_expert_parallel_size=1 moe_train_capacity_factor=2.0 moe_eval_capacity_factor=1.5 \
  moe_min_capacity=8 moe_loss_coeff=0.01 create_moe_param_group=True moe_token_dropping=False \
  moe_top2_2nd_expert_sampling=False use_tutel=True enable_expert_tensor_parallelism=True
a=$(iters "$plain") b=$(iters "$out")
[ $rc -eq 0 ] && [ -n "$a" ] && [ "$a" = "$b" ] && ok "with every entry of --num-experts 1 the run is the dense run ($(wc -l <<<"$a") iterations, same losses)" \
  || bad "dense MoE flags" "exit $rc: $(grep -m1 error <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --num-experts 1 1 --expert-interval 2 2>&1)
[ $? -eq 0 ] && grep -qE "^  num_experts \.+ \[1, 1\]$" <<<"$out" \
  && ok "--num-experts 1 1: one value per MoE layer (4 layers / interval 2)" || bad "--num-experts 1 1" "$(grep -m1 error <<<"$out")"
grep -q "moe loss" <<<"$out" && bad "moe loss" "a dense run logs a moe loss" || ok "no 'moe loss' on the log line (Megatron-DeepSpeed's dense loss_func)"
# MoE layers themselves train, expert parallelism too (tests/moe); an expert-parallel size the data-parallel size does
# not divide is refused with the numbers
expect_fail "--num-experts 64 with --moe-expert-parallel-size 2 in one process is refused with the sizes" \
  "error: inconsistent arguments: data-parallel size 1 (world size 1 / (--tensor-model-parallel-size 1 x --pipeline-model-parallel-size 1)) is not divisible by --moe-expert-parallel-size 2" \
  "${T[@]}" --num-experts 64 --moe-expert-parallel-size 2
# README.md's example of a refusal ("$ pretrain_gpt ... --num-experts 8 --moe-expert-parallel-size 2" and the next
# line): read from the README, so that the documented message is the program's
msg=$(grep -A1 -xF '$ pretrain_gpt ... --num-experts 8 --moe-expert-parallel-size 2' "$README" | sed -n 2p)
if [ -n "$msg" ]; then
  expect_fail "README.md's --num-experts 8 --moe-expert-parallel-size 2 example line word for word" "$msg" "${T[@]}" \
    --num-experts 8 --moe-expert-parallel-size 2
else
  bad "README.md's --num-experts 8 example" "no line after '\$ pretrain_gpt ... --num-experts 8 --moe-expert-parallel-size 2' in $README"
fi
expect_fail "--num-experts with the wrong number of values (Megatron-DeepSpeed's assert)" \
  "error: inconsistent arguments: --num-experts has 3 values: num_experts must be either a single value or a list of the same length as the number of MoE layers (2: --num-layers 4 / --expert-interval 2)" \
  "${T[@]}" --num-experts 1 1 1
expect_fail "--num-experts 0" "error: bad argument value: --num-experts 0: an expert count must be in [1, 65536]" "${T[@]}" --num-experts 0
expect_fail "--num-experts one" "error: bad argument value: --num-experts one: expected an integer" "${T[@]}" --num-experts one
expect_fail "--num-experts without a value" "error: missing argument value: --num-experts expects at least one value" \
  "${T[@]}" --num-experts --topk 1
out=$(timeout 120 "$BIN" "${T[@]}" --mlp-type residual 2>&1)
[ $? -eq 0 ] && grep -qF "WARNING: --mlp-type residual has no effect without MoE layers" <<<"$out" \
  && [ "$(iters "$out")" = "$(iters "$plain")" ] && ok "--mlp-type residual without MoE layers: a warning, the dense run" \
  || bad "--mlp-type residual without MoE layers" "$(grep -m1 -E 'error|WARNING' <<<"$out")"
expect_fail "--mlp-type other" "error: bad argument value: --mlp-type other: invalid choice (choose from standard, residual)" \
  "${T[@]}" --mlp-type other
expect_fail "--topk 0" "error: bad argument value: --topk 0: must be > 0" "${T[@]}" --topk 0
expect_fail "--expert-interval 0 (Megatron-DeepSpeed divides by it)" "error: bad argument value: --expert-interval 0: must be > 0" \
  "${T[@]}" --expert-interval 0
expect_fail "--moe-min-capacity -1" "error: bad argument value: --moe-min-capacity -1: must be >= 0" "${T[@]}" --moe-min-capacity -1
expect_fail "--moe-loss-coeff x" "error: bad argument value: --moe-loss-coeff x: expected a number" "${T[@]}" --moe-loss-coeff x
expect_fail "--num-experts-switch (Megatron-LM's switch MLP) is refused" \
  "error: unsupported argument: --num-experts-switch: Megatron-LM's switch-MLP MoE layer, which zerotron does not support" \
  "${T[@]}" --num-experts-switch 4

# 2. refusals that name the work they land with
expect_fail "--random-ltd without a ds_config random_ltd block is refused (it trains with one: tests/random_ltd)" \
  "error: arguments: --random-ltd needs the ds_config's data_efficiency.data_routing.random_ltd block" \
  "${T[@]}" --random-ltd
expect_fail "--data-efficiency-curriculum-learning without a ds_config data_sampling block is refused (it trains with one: tests/data_sampler)" \
  "error: arguments: --data-efficiency-curriculum-learning needs the ds_config's data_efficiency.data_sampling.curriculum_learning block" \
  "${T[@]}" --data-efficiency-curriculum-learning

# 3. --universal-checkpoint (universal_checkpointing/megatron_gpt/run_universal_*.sh): latest_universal when it names
# one of our tags, latest otherwise; a DeepSpeed universal checkpoint (torch files) refused naming the file
first_it() { grep -m1 -oE "^ iteration +[0-9]+/" <<<"$1" | grep -oE "[0-9]+" | head -1; }
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 6 --save-interval 2 --exit-interval 4 --save C 2>&1)
[ $? -eq 0 ] && [ -d C/global_step2 ] && [ -d C/global_step4 ] || bad "universal: saving" "$(grep -m1 error <<<"$out")"
U=("${T[@]}" --train-iters 6 --load C --universal-checkpoint)
out=$(timeout 120 "$BIN" "${U[@]}" 2>&1)
[ $? -eq 0 ] && grep -qF "> --universal-checkpoint: no C/latest_universal; loading global_step4, named by C/latest" <<<"$out" &&
  [ "$(first_it "$out")" = 5 ] && grep -qE "^  universal_checkpoint \.+ True$" <<<"$out" \
  && ok "--universal-checkpoint without latest_universal loads latest's tag (global_step4, resumes at 5) and says so" \
  || bad "--universal-checkpoint, latest" "$(grep -m1 -E "error|universal" <<<"$out")"
printf 'global_step2\n' > C/latest_universal
out=$(timeout 120 "$BIN" "${U[@]}" 2>&1)
[ $? -eq 0 ] && grep -qF "> --universal-checkpoint: loading global_step2, named by C/latest_universal" <<<"$out" &&
  [ "$(first_it "$out")" = 3 ] && ok "latest_universal naming one of our tags is followed (global_step2, resumes at 3)" \
  || bad "latest_universal followed" "$(grep -m1 -E "error|universal" <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 6 --load C 2>&1)
[ $? -eq 0 ] && [ "$(first_it "$out")" = 5 ] && ok "without --universal-checkpoint latest_universal is ignored (resumes at 5)" \
  || bad "latest_universal ignored" "$(grep -m1 error <<<"$out")"
out=$(timeout 120 "$BIN" "${U[@]}" --load-tag global_step4 2>&1)
[ $? -eq 0 ] && [ "$(first_it "$out")" = 5 ] && grep -qF "loading --load-tag global_step4 (an explicit tag wins" <<<"$out" \
  && ok "--load-tag wins over latest_universal" || bad "--load-tag" "$(grep -m1 -E "error|universal" <<<"$out")"
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "checkpoint": {"load_universal": true}}' > lu.json
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 6 --load C --deepspeed --deepspeed_config lu.json 2>&1)
[ $? -eq 0 ] && grep -qF "> checkpoint.load_universal: loading global_step2, named by C/latest_universal" <<<"$out" &&
  [ "$(first_it "$out")" = 3 ] && ok "the ds_config's checkpoint.load_universal true does the same" \
  || bad "checkpoint.load_universal" "$(grep -m1 -E "error|universal" <<<"$out")"
mkdir -p C/global_step4_universal/zero/language_model.embedding.word_embeddings.weight
: > C/global_step4_universal/mp_rank_00_model_states.pt
printf 'global_step4_universal' > C/latest_universal
before=$(ls -R C | md5sum)
expect_fail "latest_universal naming a DeepSpeed universal checkpoint is refused naming its torch file" \
  "error: checkpoint: C/latest_universal names global_step4_universal, a DeepSpeed universal checkpoint (torch files: C/global_step4_universal/mp_rank_00_model_states.pt), which zerotron cannot read" \
  "${U[@]}" --save C
[ "$(ls -R C | md5sum)" = "$before" ] && ok "the refused run wrote nothing into C" || bad "refused universal run" "C changed"
rm C/global_step4_universal/mp_rank_00_model_states.pt
expect_fail "... also with only its zero/ folder" "a DeepSpeed universal checkpoint (torch files: C/global_step4_universal/zero/language_model.embedding.word_embeddings.weight)" \
  "${U[@]}"
printf 'global_step9' > C/latest_universal
expect_fail "latest_universal naming a missing folder" \
  "error: checkpoint: C/latest_universal names global_step9, but C/global_step9 is missing" "${U[@]}"
: > C/latest_universal
expect_fail "an empty latest_universal" "error: checkpoint: C/latest_universal is empty" "${U[@]}"

# 4. --cpu-optimizer (offload_pp): accepted where the optimizer step runs on the CPU, saying why; --cpu_torch_adam,
# --ds_fused_adam as Megatron-DeepSpeed reads them. (The refusal on a GPU run without offload_optimizer needs a GPU.)
base=$(timeout 120 "$BIN" "${T[@]}" 2>&1)
out=$(timeout 120 "$BIN" "${T[@]}" --cpu-optimizer 2>&1)
[ $? -eq 0 ] && grep -qF "> --cpu-optimizer (DeepSpeedCPUAdam): the optimizer step runs on the CPU (this run computes on the CPU)" <<<"$out" &&
  [ "$(iters "$out")" = "$(iters "$base")" ] && ok "--cpu-optimizer on a CPU run: accepted, said, same losses (the same AdamW)" \
  || bad "--cpu-optimizer on the CPU" "$(grep -m1 -E "error|cpu-optimizer" <<<"$out")"
dump_has "--cpu-optimizer in the dump" "$out" cpu_optimizer=True cpu_torch_adam=False ds_fused_adam=False
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}}}' > off.json
out=$(timeout 120 "$BIN" "${T[@]}" --cpu-optimizer --cpu_torch_adam --deepspeed --deepspeed_config off.json 2>&1)
[ $? -eq 0 ] && grep -qF "> --cpu-optimizer (torch's AdamW): the optimizer step runs on the CPU (zero_optimization.offload_optimizer.device cpu in off.json)" <<<"$out" \
  && ok "--cpu-optimizer --cpu_torch_adam with offload_optimizer cpu: accepted naming the key" \
  || bad "--cpu-optimizer with offload" "$(grep -m1 -E "error|cpu-optimizer" <<<"$out")"
expect_fail "--cpu-optimizer with --optimizer sgd (Megatron-DeepSpeed's assert)" \
  "error: inconsistent arguments: --cpu-optimizer needs --optimizer adam (CPU offloading is for Adam, as Megatron-DeepSpeed asserts)" \
  "${T[@]}" --cpu-optimizer --optimizer sgd
out=$(timeout 120 "$BIN" "${T[@]}" --cpu_torch_adam --ds_fused_adam 2>&1)
[ $? -eq 0 ] && grep -qF "WARNING: --cpu_torch_adam has no effect without --cpu-optimizer" <<<"$out" &&
  [ "$(iters "$out")" = "$(iters "$base")" ] && grep -qE "^  ds_fused_adam \.+ True$" <<<"$out" \
  && ok "--cpu_torch_adam alone warns, --ds_fused_adam is recorded, same losses" || bad "--cpu_torch_adam alone" "$(grep -m1 error <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --cpu-optimizer --ds_fused_adam 2>&1)
grep -qF "WARNING: --ds_fused_adam has no effect with --cpu-optimizer" <<<"$out" && ok "--ds_fused_adam with --cpu-optimizer warns" \
  || bad "--ds_fused_adam warning" "$(grep -m1 error <<<"$out")"

# 5. FlashAttention (rebase/ds_pretrain_gpt_125M_flashattn.sh): exact attention either way, recorded in the dump
out=$(timeout 120 "$BIN" "${T[@]}" --use-flash-attn --disable-mem-efficient-ln 2>&1)
rc=$?
dump_has "--use-flash-attn and --disable-mem-efficient-ln in the dump" "$out" use_flash_attn=True use_flash_attn_v1=True \
  use_flash_attn_v2=False use_flash_attn_triton=False use_flash_attn_builder=False mem_efficient_ln=False
dump_has "FlashAttention off by default" "$plain" use_flash_attn=False mem_efficient_ln=True
[ $rc -eq 0 ] && [ "$(iters "$out")" = "$(iters "$plain")" ] && ok "--use-flash-attn trains the same losses (attention dropout on)" \
  || bad "--use-flash-attn" "exit $rc: $(grep -m1 error <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --use-flash-attn-v2 --use-flash-attn-builder 2>&1)
dump_has "--use-flash-attn-v2, --use-flash-attn-builder in the dump" "$out" use_flash_attn=True use_flash_attn_v2=True \
  use_flash_attn_builder=True
expect_fail "--use-flash-attn-triton with an explicit attention dropout is refused (Megatron-DeepSpeed's Triton path applies none)" \
  "error: unsupported argument: --use-flash-attn-triton with --attention-dropout 0.2: Megatron-DeepSpeed's Triton FlashAttention applies no attention dropout" \
  "${T[@]}" --use-flash-attn-triton --attention-dropout 0.2
out=$(timeout 120 "$BIN" "${T[@]}" --use-flash-attn-triton 2>&1)
zero=$(timeout 120 "$BIN" "${T[@]}" --attention-dropout 0 2>&1)
[ $? -eq 0 ] && grep -qE "^  use_flash_attn_triton \.+ True$" <<<"$out" && grep -qE "^  attention_dropout \.+ 0\.0$" <<<"$out" \
  && grep -qF "> --use-flash-attn-triton: attention dropout 0" <<<"$out" && [ "$(iters "$out")" = "$(iters "$zero")" ] \
  && [ "$(iters "$out")" != "$(iters "$plain")" ] \
  && ok "--use-flash-attn-triton alone trains without attention dropout, as Megatron-DeepSpeed (= --attention-dropout 0, != the default run)" \
  || bad "--use-flash-attn-triton" "$(grep -m1 -E "error|attention_dropout" <<<"$out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
