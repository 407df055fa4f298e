#!/usr/bin/env bash
# The flags of Megatron-DeepSpeed's example scripts (issue 24) on pretrain_gpt: the token-based length and schedule
# against an independent transcription of Megatron-DeepSpeed's scheduler and loop (lr_tokens_oracle.py), its resume,
# --zero-stage against the ds_config, --no-pipeline-parallel, DeepSpeed activation checkpointing, the recorded
# implementation knobs in the argument dump, and the refusals that name the right reason.
# Usage: test_script_flags.sh path/to/pretrain_gpt [python3]
set -u
BIN=${1:?usage: test_script_flags.sh path/to/pretrain_gpt [python3]}
PY=${2:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
# 2 layers, 128 tokens per iteration (global batch 4 x sequence 32)
T=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
   --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --min-lr 1e-4 --mock-data --vocab-size 128
   --log-interval 1 --eval-iters 0)

# "iteration lr" of every log line
lrs() { sed -nE 's/^ iteration +([0-9]+)\/ *[0-9]+ .* learning rate: ([0-9.E+-]+) .*/\1 \2/p' <<<"$1"; }
# same iterations and learning rates within the log's 4 significant digits
same_lrs() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
a = [l.split() for l in sys.argv[1].strip().splitlines()]
b = [l.split() for l in sys.argv[2].strip().splitlines()]
if len(a) != len(b) or not a:
    print("  %d iterations against %d" % (len(a), len(b))); sys.exit(1)
for (i, x), (j, y) in zip(a, b):
    x, y = float(x), float(y)
    if i != j or abs(x - y) > 6e-4 * max(abs(x), abs(y)) + 1e-12:
        print("  iteration %s: %r against %s: %r" % (i, x, j, y)); sys.exit(1)
PYEOF
}
# oracle_case NAME "ORACLE KEY=VALUES" FLAGS...: pretrain_gpt's learning rates equal the oracle's
oracle_case() {
  local name=$1 keys=$2
  shift 2
  local out ref
  out=$(timeout 120 "$BIN" "${T[@]}" "$@" 2>&1)
  ref=$("$PY" "$HERE/lr_tokens_oracle.py" lr=1e-3 min_lr=1e-4 gbs=4 seq=32 $keys)
  if [ $? -eq 0 ] && same_lrs "$(lrs "$out")" "$ref"; then
    ok "$name ($(wc -l <<<"$ref") iterations match Megatron-DeepSpeed's scheduler)"
  else
    bad "$name" "$(grep -m1 error <<<"$out")"
  fi
}

# 1. token-based schedules and length (the rebase/ scripts: --train-tokens with a large --train-samples)
oracle_case "token warmup and cosine token decay, --train-tokens ends the run at 1280 tokens" \
  "style=cosine train_iters=250 warmup_steps=0 decay_steps=1000 warmup_tokens=256 decay_tokens=1024 train_tokens=1280" \
  --train-samples 1000 --train-tokens 1280 --lr-warmup-tokens 256 --lr-decay-tokens 1024 --lr-decay-style cosine
oracle_case "sample warmup then linear token decay (warmup tokens taken when the warmup ends)" \
  "style=linear train_iters=16 warmup_steps=8 decay_steps=64 decay_tokens=1024" \
  --train-samples 64 --lr-warmup-samples 8 --lr-decay-tokens 1024
oracle_case "token warmup with an iteration decay (the decay still starts after --lr-warmup-iters)" \
  "style=linear train_iters=12 warmup_steps=8 decay_steps=40 warmup_tokens=384" \
  --train-iters 12 --lr-decay-iters 10 --lr-warmup-iters 2 --lr-warmup-tokens 384
oracle_case "inverse-square-root over tokens" \
  "style=inverse-square-root train_iters=8 warmup_steps=0 decay_steps=32 warmup_tokens=300" \
  --train-iters 8 --lr-warmup-tokens 300 --lr-decay-style inverse-square-root
oracle_case "--train-tokens not a multiple of the tokens per iteration: the iteration that reaches it is the last" \
  "style=linear train_iters=20 warmup_steps=0 decay_steps=80 train_tokens=300" \
  --train-iters 20 --train-tokens 300

# 2. a resumed run continues the same curve (sample warmup + token decay: the warmup's tokens are checkpoint state)
S=(--train-samples 64 --lr-warmup-samples 8 --lr-decay-tokens 1024 --lr-decay-style cosine)
full=$(timeout 120 "$BIN" "${T[@]}" "${S[@]}" 2>&1)
first=$(timeout 120 "$BIN" "${T[@]}" "${S[@]}" --save ck --save-interval 5 --exit-interval 5 2>&1)
rest=$(timeout 120 "$BIN" "${T[@]}" "${S[@]}" --load ck --save ck --save-interval 5 2>&1)
both="$(lrs "$first")
$(lrs "$rest")"
toks() { grep -E "^ iteration" <<<"$1" | sed -E 's/.*consumed tokens: +([0-9]+) .*/\1/' | tr '\n' ' '; }
if grep -q "^ iteration        6/" <<<"$rest" && ! grep -q "^ iteration        5/" <<<"$rest" &&
   same_lrs "$both" "$(lrs "$full")" && [ "$(toks "$first")$(toks "$rest")" == "$(toks "$full")" ]; then
  ok "resumed at iteration 5: learning rates and consumed tokens of iterations 1-16 equal the uninterrupted run's"
else
  bad "resume" "$(grep -m1 error <<<"$rest")"
fi
out=$(timeout 120 "$BIN" "${T[@]}" --train-samples 1000 --train-tokens 1280 --lr-warmup-tokens 256 --lr-decay-tokens 1024 \
      --save ct --save-interval 4 --exit-interval 4 2>&1)
out=$(timeout 120 "$BIN" "${T[@]}" --train-samples 1000 --train-tokens 1280 --lr-warmup-tokens 256 --lr-decay-tokens 1024 \
      --load ct 2>&1)
ref=$("$PY" "$HERE/lr_tokens_oracle.py" lr=1e-3 min_lr=1e-4 gbs=4 seq=32 style=linear train_iters=250 warmup_steps=0 \
      decay_steps=1000 warmup_tokens=256 decay_tokens=1024 train_tokens=1280 | tail -n 6)
if same_lrs "$(lrs "$out")" "$ref" && grep -q "consumed tokens:         1280 |" <<<"$out"; then
  ok "resumed token run: the consumed tokens come back from the checkpoint, --train-tokens ends it at iteration 10"
else
  bad "token resume" "$(lrs "$out" | tr '\n' ' ') $(grep -m1 error <<<"$out")"
fi
out=$(timeout 120 "$BIN" "${T[@]}" --train-samples 1000 --train-tokens 1280 --lr-warmup-tokens 200 --lr-decay-tokens 1024 \
      --load ct 2>&1)
grep -qF "error: checkpoint: ct/global_step4/mp_rank_00_model_states.h5: OptimizerParamScheduler: class input value 200 and checkpoint value 256 for warmup tokens do not match" <<<"$out" &&
  ok "a different --lr-warmup-tokens is refused on resume (Megatron's check)" || bad "warmup tokens check" "$(grep -m1 error <<<"$out")"

# refusals: the step-warmup/token-decay combination Megatron-DeepSpeed crashes on, bad values
expect_fail() {
  local name=$1 message=$2
  shift 2
  local out
  out=$(timeout 60 "$BIN" "$@" 2>&1)
  if [ $? -ne 0 ] && grep -qF -- "$message" <<<"$out"; then ok "$name"; else bad "$name" "$(grep -m1 error <<<"$out")"; fi
}
expect_fail "token decay without any warmup end is refused" \
  "error: inconsistent arguments: --lr-decay-tokens 1000 without --lr-warmup-tokens: the linear decay counts tokens from the end of the warmup, and a warmup of 0 samples never ends" \
  "${T[@]}" --train-iters 4 --lr-decay-tokens 1000
expect_fail "token decay after a warmup that ends between iterations is refused" \
  "a warmup of 6 samples does not end on an iteration (global batch size 4)" \
  "${T[@]}" --train-samples 40 --lr-warmup-samples 6 --lr-decay-tokens 1000 --lr-decay-style cosine
expect_fail "--train-tokens 0" "error: bad argument value: --train-tokens 0: must be > 0" "${T[@]}" --train-iters 2 --train-tokens 0
expect_fail "--lr-warmup-tokens -1" "error: bad argument value: --lr-warmup-tokens -1: must be >= 0" \
  "${T[@]}" --train-iters 2 --lr-warmup-tokens -1
expect_fail "--train-tokens alone still needs a length" \
  "error: missing argument: one of --train-iters or --train-samples is required" \
  "${T[@]}" --train-tokens 100

# 3. --zero-stage and the ds_config's zero_optimization.stage
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1}}' > z1.json
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}' > z0.json
expect_fail "--zero-stage contradicting the ds_config" \
  "error: inconsistent arguments: --zero-stage 2 contradicts zero_optimization.stage 1 in z1.json" \
  "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config z1.json --zero-stage 2
expect_fail "--zero-stage against a ds_config without a stage" \
  "error: inconsistent arguments: --zero-stage 1 contradicts zero_optimization.stage 0 in z0.json (the file sets no stage: DeepSpeed's default 0)" \
  "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config z0.json --zero-stage 1
expect_fail "--zero-stage without --deepspeed" \
  "error: inconsistent arguments: --zero-stage 3 without --deepspeed: ZeRO is DeepSpeed's" "${T[@]}" --train-iters 2 --zero-stage 3
expect_fail "--zero-stage 4" "error: bad argument value: --zero-stage 4: must be 0, 1, 2 or 3" \
  "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config z1.json --zero-stage 4
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config z1.json --zero-stage 1 2>&1)
[ $? -eq 0 ] && grep -qE "^  zero_stage \.+ 1$" <<<"$out" && grep -q "^ iteration        2/" <<<"$out" &&
  ok "--zero-stage 1 agreeing with the ds_config trains" || bad "--zero-stage 1" "$(grep -m1 error <<<"$out")"

# --remote-device (deepspeed.zero.Init's, enabled by --zero-stage 3): where the ZeRO-3 partitions start; replaced by
# an offload_param block; nvme without one fails DeepSpeed's assert; without --zero-stage 3 no effect
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}}' > z3.json
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}' > z3o.json
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config z3.json --zero-stage 3 --remote-device cpu 2>&1)
[ $? -eq 0 ] && grep -qE "^  remote_device \.+ cpu$" <<<"$out" && grep -q "^ iteration        2/" <<<"$out" \
  && grep -qF "> --remote-device cpu: the ZeRO-3 partitions are initialized where the run keeps them" <<<"$out" \
  && ok "--remote-device cpu with --zero-stage 3 trains and says where the partitions start" \
  || bad "--remote-device cpu" "$(grep -m1 -E "error|remote" <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 1 --deepspeed --deepspeed_config z3o.json --zero-stage 3 --remote-device nvme 2>&1)
[ $? -eq 0 ] && grep -qF "> --remote-device nvme: replaced by zero_optimization.offload_param.device \"cpu\" of z3o.json" <<<"$out" \
  && ok "--remote-device nvme is replaced by the ds_config's offload_param device, as zero.Init does" \
  || bad "--remote-device with offload_param" "$(grep -m1 -E "error|remote" <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 1 --deepspeed --deepspeed_config z3.json --remote-device cpu 2>&1)
grep -qF "> --remote-device cpu: no effect without --zero-stage 3" <<<"$out" \
  && ok "--remote-device without --zero-stage 3: no effect, said" || bad "--remote-device without --zero-stage 3" "$(grep -m1 -E "error|remote" <<<"$out")"
expect_fail "--remote-device nvme without an offload_param block (DeepSpeed's assert)" \
  "error: inconsistent arguments: --remote-device nvme: \"offload_param\" must be defined in DeepSpeed Config if remote device is nvme" \
  "${T[@]}" --train-iters 1 --deepspeed --deepspeed_config z3.json --zero-stage 3 --remote-device nvme
expect_fail "--remote-device gpu" "error: bad argument value: --remote-device gpu: invalid choice (choose from none, cpu, nvme)" \
  "${T[@]}" --train-iters 1 --remote-device gpu
expect_fail "--use-pin-memory (never read by Megatron-DeepSpeed)" "error: unsupported argument: --use-pin-memory: Megatron-DeepSpeed parses it but never reads it" \
  "${T[@]}" --train-iters 1 --use-pin-memory

# 4. the argument dump: Megatron-DeepSpeed's names and values for the recorded flags
dump_has() { # dump_has NAME OUTPUT name=value...
  local name=$1 out=$2 missing=""
  shift 2
  for kv in "$@"; do grep -qE "^  ${kv%%=*} \.+ ${kv#*=}$" <<<"$out" || missing="$missing ${kv}"; done
  [ -z "$missing" ] && ok "$name" || bad "$name" "not in the dump:$missing"
}
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 2>&1)
dump_has "defaults in the dump" "$out" zero_stage=1.0 num_workers=2 distributed_backend=nccl local_rank=None \
  masked_softmax_fusion=True bias_gelu_fusion=True bias_dropout_fusion=True gradient_accumulation_fusion=True \
  no_persist_layer_norm=False async_tensor_model_parallel_allreduce=True no_pipeline_parallel=False remote_device=none \
  ds_pipeline_enabled=True train_tokens=None lr_warmup_tokens=None lr_decay_tokens=None \
  deepspeed_activation_checkpointing=False train_doc_idx_path=None DDP_impl=local use_contiguous_buffers_in_local_ddp=True \
  use_cpu_initialization=None empty_unused_memory_level=0 attention_softmax_in_fp32=False \
  scatter_gather_tensors_in_pipeline=True use_ring_exchange_p2p=False overlap_p2p_comm=False
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 --no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion \
      --no-gradient-accumulation-fusion --no-persist-layer-norm --no-async-tensor-model-parallel-allreduce \
      --distributed-backend gloo --local_rank=3 --num-workers 8 --no-pipeline-parallel --pipeline-model-parallel-size 1 \
      --train-tokens 99999 --lr-warmup-tokens 10 --lr-decay-tokens 1000 2>&1)
[ $? -eq 0 ] || bad "the knobs train" "$(grep -m1 error <<<"$out")"
dump_has "given knobs in the dump" "$out" masked_softmax_fusion=False bias_gelu_fusion=False bias_dropout_fusion=False \
  gradient_accumulation_fusion=False no_persist_layer_norm=True async_tensor_model_parallel_allreduce=False \
  distributed_backend=gloo local_rank=3 num_workers=8 no_pipeline_parallel=True ds_pipeline_enabled=False \
  train_tokens=99999 lr_warmup_tokens=10 lr_decay_tokens=1000
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 --local-rank 0 --deepspeed --deepspeed_config z1.json 2>&1)
dump_has "--deepspeed turns async_tensor_model_parallel_allreduce off (Megatron-DeepSpeed)" "$out" \
  async_tensor_model_parallel_allreduce=False local_rank=0
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 --DDP-impl torch --use-cpu-initialization --empty-unused-memory-level 2 \
      --attention-softmax-in-fp32 --no-scatter-gather-tensors-in-pipeline --use-ring-exchange-p2p \
      --overlap-p2p-communication 2>&1)
dump_has "DDP, memory, softmax and p2p knobs in the dump (torch DDP has no contiguous buffers, as Megatron sets)" \
  "$out" DDP_impl=torch use_contiguous_buffers_in_local_ddp=False use_cpu_initialization=True \
  empty_unused_memory_level=2 attention_softmax_in_fp32=True scatter_gather_tensors_in_pipeline=False \
  use_ring_exchange_p2p=True overlap_p2p_comm=True
out2=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 2>&1)
[ -n "$(grep "lm loss" <<<"$out")" ] && [ "$(grep -o "lm loss: [0-9.E+-]*" <<<"$out")" == "$(grep -o "lm loss: [0-9.E+-]*" <<<"$out2")" ] &&
  ok "the knobs change no loss" || bad "knobs' loss" "$(grep -o "lm loss: [0-9.E+-]*" <<<"$out$out2")"
expect_fail "--DDP-impl torch with --bf16 (Megatron's assert)" \
  "error: inconsistent arguments: --bf16 (gradients accumulated and all-reduced in fp32) with --DDP-impl torch" \
  "${T[@]}" --train-iters 1 --DDP-impl torch --bf16
expect_fail "--no-contiguous-buffers-in-local-ddp with --accumulate-allreduce-grads-in-fp32" \
  "error: inconsistent arguments: --accumulate-allreduce-grads-in-fp32 with --no-contiguous-buffers-in-local-ddp" \
  "${T[@]}" --train-iters 1 --no-contiguous-buffers-in-local-ddp --accumulate-allreduce-grads-in-fp32
expect_fail "--DDP-impl FSDP" "error: unsupported argument: --DDP-impl FSDP is not supported: PyTorch's FSDP" \
  "${T[@]}" --train-iters 1 --DDP-impl FSDP
expect_fail "--empty-unused-memory-level 3" \
  "error: bad argument value: --empty-unused-memory-level 3: invalid choice (choose from 0, 1, 2)" \
  "${T[@]}" --train-iters 1 --empty-unused-memory-level 3
expect_fail "--distributed-backend mpi" \
  "error: bad argument value: --distributed-backend mpi: invalid choice (choose from nccl, gloo, ccl, hccl)" \
  "${T[@]}" --train-iters 1 --distributed-backend mpi
expect_fail "--distributed-backend ccl" "error: unsupported argument: --distributed-backend ccl is not supported: Intel oneCCL" \
  "${T[@]}" --train-iters 1 --distributed-backend ccl
expect_fail "--num-workers -1" "error: bad argument value: --num-workers -1: must be >= 0" "${T[@]}" --train-iters 1 --num-workers -1
expect_fail "--local_rank -2" "error: bad argument value: --local-rank -2: must be >= 0" "${T[@]}" --train-iters 1 --local_rank -2

# 5. DeepSpeed activation checkpointing: the flags replace the ds_config's block (deepspeed.checkpointing.configure)
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true}}' > ac.json
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config ac.json --checkpoint-activations \
      --deepspeed-activation-checkpointing 2>&1)
[ $? -eq 0 ] && grep -qF "activation_checkpointing.partition_activations true in ac.json is replaced by false (not given)" <<<"$out" &&
  grep -qF -- "----Partition Activations False, CPU CHECKPOINTING False" <<<"$out" &&
  grep -qF -- "----contiguous Memory Checkpointing False with 2 total layers" <<<"$out" &&
  ok "--deepspeed-activation-checkpointing without its flags turns the file's options off" ||
  bad "ds activation checkpointing" "$(grep -m1 -E 'error|Partition' <<<"$out")"
out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 2 --deepspeed --deepspeed_config z1.json --checkpoint-activations \
      --deepspeed-activation-checkpointing --partition-activations --checkpoint-in-cpu --contigious-checkpointing \
      --checkpoint-num-layers 2 2>&1)
[ $? -eq 0 ] && grep -qF -- "----Partition Activations True, CPU CHECKPOINTING True" <<<"$out" &&
  grep -qF -- "----contiguous Memory Checkpointing True with 1 total layers" <<<"$out" &&
  ok "--partition-activations --checkpoint-in-cpu --contigious-checkpointing configure the checkpointing" ||
  bad "activation flags" "$(grep -m1 -E 'error|Partition' <<<"$out")"
expect_fail "--contigious-checkpointing without --partition-activations" \
  "error: inconsistent arguments: --contigious-checkpointing needs --partition-activations" \
  "${T[@]}" --train-iters 1 --deepspeed --deepspeed_config z1.json --checkpoint-activations \
  --deepspeed-activation-checkpointing --contigious-checkpointing
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 --partition-activations 2>&1)
[ $? -eq 0 ] && grep -qF "WARNING: --partition-activations has no effect without --deepspeed and --deepspeed-activation-checkpointing" <<<"$out" &&
  ok "--partition-activations alone is accepted with a warning (no effect, as in Megatron-DeepSpeed)" || bad "warning" "$out"

# 6. --no-pipeline-parallel (Megatron-DeepSpeed asserts size 1 after clipping to the world)
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 --no-pipeline-parallel --pipeline-model-parallel-size 2 2>&1)
[ $? -eq 0 ] && ok "--no-pipeline-parallel with a size clipped to 1 (one process) is accepted, as in Megatron" ||
  bad "pp clipped" "$(grep -m1 error <<<"$out")"
if command -v mpirun >/dev/null; then
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 "$BIN" "${T[@]}" \
        --train-iters 1 --no-pipeline-parallel --pipeline-model-parallel-size 2 2>&1)
  grep -qF "inconsistent arguments: --no-pipeline-parallel contradicts --pipeline-model-parallel-size 2" <<<"$out" &&
    ok "--no-pipeline-parallel with 2 pipeline stages is refused" || bad "--no-pipeline-parallel" "$(grep -m1 error <<<"$out")"
  # the deepspeed launcher gives each process its own --local_rank: not an argument mismatch between ranks
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 \
        -np 1 "$BIN" "${T[@]}" --train-iters 2 --local_rank=0 : -np 1 "$BIN" "${T[@]}" --train-iters 2 --local_rank=1 2>&1)
  [ $? -eq 0 ] && grep -q "^ iteration        2/" <<<"$out" &&
    ok "per-process --local_rank values are not a cross-rank mismatch" || bad "--local_rank per rank" "$(grep -m1 error <<<"$out")"
else
  echo "SKIP --no-pipeline-parallel with 2 ranks: no mpirun"
fi

# 8. the training index files (Megatron-DeepSpeed's gpt_dataset: these names replace {md5}_*.npy)
"$PY" - d <<'PYEOF'
import struct, sys
import numpy as np
rng = np.random.RandomState(0)
sizes = rng.randint(20, 200, size=60).astype(np.int32)
rng.randint(0, 100, size=int(sizes.sum())).astype(np.uint16).tofile(sys.argv[1] + ".bin")
ptr = np.concatenate([[0], np.cumsum(sizes[:-1].astype(np.int64) * 2)]).astype(np.int64)
with open(sys.argv[1] + ".idx", "wb") as f:
    f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, len(sizes), len(sizes) + 1) + sizes.tobytes()
            + ptr.tobytes() + np.arange(len(sizes) + 1, dtype=np.int64).tobytes())
PYEOF
TD=()
for x in "${T[@]}"; do [ "$x" != --mock-data ] && TD+=("$x"); done
D=(--data-path d --split 90,10,0 --tokenizer-type NullTokenizer --vocab-size 100 --train-iters 4 --data-cache-path C)
out=$(timeout 120 "$BIN" "${TD[@]}" "${D[@]}" 2>&1)
ref=$(grep -E "^ iteration" <<<"$out" | sed -E 's/.*(lm loss: [0-9.E+-]+).*/\1/')
hash=$(ls C | sed -n 's/_doc_idx.npy$//p' | head -1)
mv C Cref
IDX=(--train-doc-idx-path "$W/mine/train_doc.npy" --train-sample-idx-path "$W/mine/train_sample.npy"
     --train-shuffle-idx-path "$W/mine/train_shuffle.npy")
mkdir mine
out=$(timeout 120 "$BIN" "${TD[@]}" "${D[@]}" "${IDX[@]}" 2>&1)
got=$(grep -E "^ iteration" <<<"$out" | sed -E 's/.*(lm loss: [0-9.E+-]+).*/\1/')
same=1
for k in doc sample shuffle; do cmp -s "Cref/${hash}_${k}_idx.npy" "mine/train_${k}.npy" || same=0; done
[ -n "$got" ] && [ "$got" == "$ref" ] && [ $same -eq 1 ] && ! [ -e "C/${hash}_doc_idx.npy" ] && [ -e "C/${hash}.dsc" ] &&
  dump_has "--train-*-idx-path naming files that do not exist yet: built there (as Megatron's), same losses" "$out" \
    "train_doc_idx_path=$W/mine/train_doc.npy" || bad "index files built" "$(grep -m1 error <<<"$out")"
cp mine/train_shuffle.npy shuffle.keep
out=$(timeout 120 "$BIN" "${TD[@]}" "${D[@]}" "${IDX[@]}" 2>&1)
got=$(grep -E "^ iteration" <<<"$out" | sed -E 's/.*(lm loss: [0-9.E+-]+).*/\1/')
[ "$got" == "$ref" ] && grep -qF "loading shuffle-idx mapping from $W/mine/train_shuffle.npy" <<<"$out" &&
  ok "--train-*-idx-path: the given files are loaded (same losses)" || bad "index files loaded" "$(grep -m1 error <<<"$out")"
"$PY" -c "import numpy as np; a = np.load('mine/train_shuffle.npy'); a[3] = a[2]; np.save('mine/train_shuffle.npy', a)"
expect_fail "a damaged --train-shuffle-idx-path file is refused naming it" \
  "error: dataset cache: $W/mine/train_shuffle.npy: entry 3 is sample" "${TD[@]}" "${D[@]}" "${IDX[@]}"
rm mine/train_shuffle.npy
expect_fail "a missing one of the set is refused, nothing rebuilt over the others" \
  "exists but $W/mine/train_shuffle.npy (--train-shuffle-idx-path) does not: the training index files come as a set" \
  "${TD[@]}" "${D[@]}" "${IDX[@]}"
cmp -s shuffle.keep shuffle.keep && [ -e mine/train_doc.npy ] && ! [ -e mine/train_shuffle.npy ] &&
  ok "the refused run wrote nothing" || bad "refused run wrote" "$(ls mine)"
# --aml-data-download-path (examples_deepspeed/azureml): the --data-path prefix is looked up under it
mkdir -p aml && mv d.bin d.idx aml/
out=$(timeout 120 "$BIN" "${TD[@]}" --aml-data-download-path aml --data-path d --split 90,10,0 --tokenizer-type \
      NullTokenizer --vocab-size 100 --train-iters 4 --data-cache-path C2 2>&1)
got=$(grep -E "^ iteration" <<<"$out" | sed -E 's/.*(lm loss: [0-9.E+-]+).*/\1/')
[ -n "$got" ] && [ "$got" == "$ref" ] && dump_has "--aml-data-download-path aml: data_path aml/d, the same losses" "$out" \
  "data_path=\['aml/d'\]" aml_data_download_path=aml || bad "--aml-data-download-path" "$(grep -m1 error <<<"$out")"
expect_fail "--aml-data-download-path with a blend (its weights would be prefixed too)" \
  "error: inconsistent arguments: --aml-data-download-path aml with 4 --data-path words" "${TD[@]}" \
  --aml-data-download-path aml --data-path 0.5 d 0.5 d --tokenizer-type NullTokenizer --vocab-size 100 --train-iters 1
mv aml/d.bin aml/d.idx .
expect_fail "--train-doc-idx-path with --mock-data" \
  "error: inconsistent arguments: --train-doc-idx-path names an index file of a --data-path dataset; --mock-data has none" \
  "${T[@]}" --train-iters 1 --train-doc-idx-path x.npy

# 7. refusals name the right reason
expect_fail "dead ZeRO flags say Megatron-DeepSpeed ignores them" \
  "error: unsupported argument: --zero-reduce-bucket-size: Megatron-DeepSpeed parses it but never reads it; ZeRO's buckets and reduce-scatter are set in the ds_config's zero_optimization block" \
  "${T[@]}" --train-iters 1 --zero-reduce-bucket-size 5
expect_fail "DeepSpeed-Ulysses in one process names the world it needs" \
  "error: inconsistent arguments: world size (1) is not divisible by tensor parallel size (1) times pipeline parallel size (1) times seqence parallel size (2) (--ds-sequence-parallel-size)" \
  "${T[@]}" --train-iters 1 --ds-sequence-parallel-size 2
expect_fail "FPDT's default chunk names both numbers" \
  "error: inconsistent arguments: --ds-sequence-parallel-fpdt-chunk-size 65536 does not divide --seq-length" \
  "${T[@]}" --train-iters 1 --ds-sequence-parallel-fpdt
out=$(timeout 60 "$BIN" "${T[@]}" --train-iters 1 --ds-sequence-parallel-size 1 2>&1)
[ $? -eq 0 ] || bad "--ds-sequence-parallel-size 1" "$(grep -m1 error <<<"$out")"
dump_has "--ds-sequence-parallel-size 1 (off, the universal_checkpointing scripts' value) is accepted" "$out" \
  ds_sequence_parallel_size=1

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
