#!/usr/bin/env bash
# pretrain_gpt on the emulated GPU (tools/cuda_emu, README.md "Programs") against the CPU build's pretrain_gpt: a tiny
# GPT on --mock-data, the same command for both; the emulated run must say "> compute: GPU" and log every "lm loss"
# of the CPU run within 1e-5 relative. ctest entry cuda_emu_train (labels emu, slow).
# With --gpu BIN the same cases run BIN (a CUDA build's pretrain_gpt) on the real GPUs of this machine instead, with
# 1e-4 (fp32 on tensor cores' neighbours: cuBLAS and NCCL sum in other orders); a case needing more GPUs than there
# are is skipped with the reason pretrain_gpt gives, and without a GPU the whole run is (exit 77): ctest entry
# test_gpu_parallel (labels gpu, mpi, slow).
#
#   train_check.sh [--zt-build DIR] [--out DIR] [--jobs N] [--gpu BIN]
#
# Each case is one line, `train_case NAME NP [FLAGS...]`: NP processes (mpirun -np NP for both runs when NP > 1,
# the emulated one with ZT_EMU_DEVICES=NP: one emulated GPU per rank, as on a node with NP GPUs), FLAGS added to the
# tiny model's; TOL=x before it changes the tolerance (bf16 keeps the GPU's activations in bf16, the CPU's in fp32).
# The cases cover the GPU path's data, tensor (with sequence parallelism and recompute; block recompute on one
# process) and pipeline parallelism
# (1F1B, interleaved and zero-bubble H1), ZeRO stages 1-3 and mixed precision over the emulated NCCL, block-sparse
# attention (ds_config sparse_attention, one process and TP=2), the legacy seqlen curriculum (one process, TP=2 + SP, PP=2),
# random-LTD (one process, TP=2; BERT one process), MoE layers (top-2, Residual MoE at ZeRO-2 DP=2, PP=2, TP=2 + SP, bf16,
# EP=2), knowledge distillation (MoS from a teacher checkpoint), DeepSpeed-Ulysses sequence parallelism (SP=2),
# and checkpoints: a GPU run
# saved and resumed bit for bit, and its checkpoint loaded by the CPU build; then pretrain_bert (lm loss, sop loss and
# the validation values against the CPU build's pretrain_bert) on one GPU, TP=2 + SP, PP=2 and ZeRO-3 at DP=2; and
# pretrain_t5 (the encoder-decoder: cross-attention, two stacks) on one GPU, TP=2 + SP with recompute, ZeRO-3 at DP=2,
# PP=2 split at rank 1 and bf16.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ZT_BUILD=$ROOT/build
OUT=
JOBS=$(nproc)
GPU_BIN=
while [ $# -gt 0 ]; do
  case "$1" in
    --zt-build) ZT_BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --gpu) GPU_BIN=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "train_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
ZT_BUILD=$(cd "$ZT_BUILD" && pwd)
OUT=${OUT:-$ZT_BUILD/cuda_emu$([ -n "$GPU_BIN" ] && echo _gpu)}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
. "$ROOT/tests/lib/common.sh"  # ok, bad, mpi=(mpirun ...), field, close
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none

cpu_bin=$ZT_BUILD/bin/pretrain_gpt
[ -x "$cpu_bin" ] || { echo "FAIL: $cpu_bin not found: build it first (scripts/build.sh)"; exit 1; }
skipped=0
gpu_kind=emulated
scale=1 # the tolerances' factor
if [ -n "$GPU_BIN" ]; then
  emu_bin=$GPU_BIN
  gpu_kind=GPU
  scale=10
  probe=$(timeout 300 "$emu_bin" --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 8 \
          --max-position-embeddings 8 --vocab-size 64 --micro-batch-size 1 --global-batch-size 1 --train-iters 1 \
          --lr 1e-3 --mock-data --eval-iters 0 2>&1)
  if ! grep -q "^> compute: GPU" <<<"$probe"; then
    echo "SKIP: pretrain_gpt does not train on a GPU here ($(grep -m1 '^> compute' <<<"$probe" || echo 'no CUDA device'))"
    exit 77
  fi
  echo "GPU pretrain_gpt: $emu_bin on $(grep -m1 '^> compute' <<<"$probe" | cut -c13-)"
else
  emu_bin=$OUT/bin/pretrain_gpt
  t0=$(date +%s.%N)
  python3 "$ROOT/tools/cuda_emu/emu_build.py" --root "$ROOT" --zt-build "$ZT_BUILD" --out "$OUT" >/dev/null || exit 1
  if ! make -C "$OUT" -j"$JOBS" --no-print-directory "$emu_bin" "$OUT/bin/pretrain_bert" "$OUT/bin/pretrain_t5" "$OUT/bin/finetune_bert" \
       >"$OUT/logs/train_check_build.log" 2>&1; then
    grep -E "error|warning: .* does not compile" "$OUT/logs/train_check_build.log" | head -n 20
    echo "FAIL: the emulated pretrain_gpt does not build (see $OUT/logs/train_check_build.log)"
    exit 1
  fi
  echo "emulated pretrain_gpt: $emu_bin (built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
fi
tol_of() { awk -v t="$1" -v s="$scale" 'BEGIN { printf "%g", t * s }'; }
# a GPU run that stayed on the CPU because this machine has fewer GPUs than processes: the case is skipped
short_of_gpus() {
  if [ -n "$GPU_BIN" ] && grep -q "^> compute: .*share [0-9]* GPU" "$1"; then
    echo "SKIP $2: $(grep -m1 '^> compute' "$1" | sed 's/^> compute: //')"
    skipped=$((skipped + 1))
    return 0
  fi
  return 1
}

tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --vocab-size 128 --micro-batch-size 2 --global-batch-size 4 --train-iters 4 --log-interval 1 --eval-iters 1
      --eval-interval 1000 --lr 1e-3 --seed 1 --mock-data)

# launch NP LOG BIN FLAGS...: one run, its output in LOG, its exit status returned
launch() {
  local np=$1 log=$2
  shift 2
  if [ "$np" -gt 1 ]; then
    timeout 900 "${mpi[@]}" -np "$np" "$@" </dev/null >"$log" 2>&1
  else
    timeout 900 "$@" </dev/null >"$log" 2>&1
  fi
}

train_case() {
  local name=$1 np=$2
  shift 2
  local k=${name//[^A-Za-z0-9_.=-]/_} rc c g ms tol
  tol=$(tol_of "${TOL:-1e-5}")
  local cpu_log=$OUT/logs/train_$k.cpu.log emu_log=$OUT/logs/train_$k.emu.log
  # the reference stays on the CPU even in a CUDA build on a GPU machine
  CUDA_VISIBLE_DEVICES= launch "$np" "$cpu_log" "$cpu_bin" "${tiny[@]}" "$@"
  rc=$?
  [ $rc -eq 0 ] || { bad "$name: CPU run" "exit status $rc: $(tail -n 3 "$cpu_log")"; return; }
  ZT_EMU_DEVICES=$np launch "$np" "$emu_log" "$emu_bin" "${tiny[@]}" "$@"
  rc=$?
  if [ $rc -ne 0 ]; then
    bad "$name: $gpu_kind run" "exit status $rc: $(grep -m3 -E 'error|cuda emulator' "$emu_log" || tail -n 3 "$emu_log")"
    return
  fi
  short_of_gpus "$emu_log" "$name" && return
  if grep -q "^> compute: GPU" "$emu_log"; then
    ok "$name: the $gpu_kind run trains on the GPU ($(grep -m1 '^> compute: GPU' "$emu_log" | cut -c1-60)...)"
  else
    bad "$name: the $gpu_kind run does not train on the GPU" "$(grep -m1 '^> compute' "$emu_log" || echo 'no > compute line')"
  fi
  ! grep -q "^> compute: GPU" "$cpu_log" || bad "$name: the reference run" "trained on a GPU"
  c=$(field "$(cat "$cpu_log")" "lm loss") g=$(field "$(cat "$emu_log")" "lm loss")
  if close "$c" "$g" "$tol"; then
    ok "$name: $(wc -w <<<"$g") logged lm losses within $tol of the CPU's ($g)"
  else
    bad "$name: lm loss" "CPU '$c', emulated GPU '$g'"
  fi
  if grep -q "sop loss" "$cpu_log"; then # BERT: the sentence-order loss and the validation values too
    c="$(field "$(cat "$cpu_log")" "sop loss") $(grep -F "validation loss at" "$cpu_log" | grep -oE "(lm|sop) loss value: [0-9.E+-]+" | sed 's/.*: //' | tr '\n' ' ')"
    g="$(field "$(cat "$emu_log")" "sop loss") $(grep -F "validation loss at" "$emu_log" | grep -oE "(lm|sop) loss value: [0-9.E+-]+" | sed 's/.*: //' | tr '\n' ' ')"
    if [ "$(wc -w <<<"$c")" -ge 3 ] && close "$c" "$g" "$tol"; then
      ok "$name: sop losses and validation lm/sop values within $tol of the CPU's ($g)"
    else
      bad "$name: sop loss / validation" "CPU '$c', emulated GPU '$g'"
    fi
  fi
  if grep -q "| overall:" "$cpu_log"; then # finetune_bert: the accuracy lines
    c=$(grep -E "metrics for|overall" "$cpu_log" | sed 's/, elapsed time.*//') g=$(grep -E "metrics for|overall" "$emu_log" | sed 's/, elapsed time.*//')
    [ "$c" = "$g" ] && ok "$name: the accuracy lines as the CPU's ($(grep -c . <<<"$g"))" \
      || bad "$name: accuracy lines" "CPU '$c', emulated GPU '$g'"
  fi
  # the emulator's speed, for the README: the mean time of the iterations after the first
  ms=$(grep -E "^ iteration " "$emu_log" | sed -E 's/.*elapsed time per iteration \(ms\): *([0-9.]+).*/\1/' |
       awk 'NR > 1 { s += $1; n++ } END { if (n) printf "%.0f", s / n }')
  echo "     $name: ${ms:-?} ms per emulated iteration (logs: $cpu_log, $emu_log)"
}

# resume_case NAME NP FLAGS...: the emulated GPU run of 4 iterations, and the same saved at 2, stopped and resumed:
# the same losses bit for bit; the CPU build loads that checkpoint and continues within 1e-3 (other kernels).
resume_case() {
  local name=$1 np=$2
  shift 2
  local k=${name//[^A-Za-z0-9_.=-]/_} d
  d=$(mktemp -d "$OUT/logs/ckpt_$k.XXXX")
  ZT_EMU_DEVICES=$np launch "$np" "$d/straight.log" "$emu_bin" "${tiny[@]}" "$@"
  short_of_gpus "$d/straight.log" "$name" && return
  ZT_EMU_DEVICES=$np launch "$np" "$d/first.log" "$emu_bin" "${tiny[@]}" "$@" --save "$d/ck" --save-interval 2 \
    --exit-interval 2
  ZT_EMU_DEVICES=$np launch "$np" "$d/second.log" "$emu_bin" "${tiny[@]}" "$@" --load "$d/ck"
  CUDA_VISIBLE_DEVICES= launch "$np" "$d/cpu.log" "$cpu_bin" "${tiny[@]}" "$@" --load "$d/ck"
  local s a b c
  s=$(field "$(cat "$d/straight.log")" "lm loss") a=$(field "$(cat "$d/first.log")" "lm loss")
  b=$(field "$(cat "$d/second.log")" "lm loss") c=$(field "$(cat "$d/cpu.log")" "lm loss")
  if [ -n "$s" ] && [ "$s" == "$a$b" ]; then ok "$name: saved at 2 and resumed on the GPU: the same losses bit for bit"
  else bad "$name: GPU resume" "straight '$s', saved '$a' + resumed '$b'"; fi
  if [ -n "$c" ] && close "$b" "$c" "$(tol_of 1e-3)"; then ok "$name: the CPU build continues the GPU's checkpoint ($c)"
  else bad "$name: CPU load of the GPU checkpoint" "GPU '$b', CPU '$c': $(grep -m1 error "$d/cpu.log")"; fi
}

train_case "one process, fp32, dropout 0.1" 1
train_case "--profile pt (each traced span waits for the device)" 1 --profile pt --tensorboard-dir "$OUT/logs/profile_tb" \
  --train-iters 4
train_case "one process, fp32, no dropout, 2 micro batches" 1 --attention-dropout 0 --hidden-dropout 0 \
  --micro-batch-size 1 --global-batch-size 2
train_case "DP=2" 2
train_case "TP=2, sequence parallel, recompute" 2 --tensor-model-parallel-size 2 --sequence-parallel \
  --checkpoint-activations
train_case "recompute, block method: the first of the 2 layers" 1 --recompute-granularity full --recompute-method block \
  --recompute-num-layers 1
train_case "PP=2 (1F1B), untied" 2 --pipeline-model-parallel-size 2 --untie-embeddings-and-output-weights
train_case "PP=4 x 2 virtual chunks (interleaved)" 4 --pipeline-model-parallel-size 4 --num-layers 8 \
  --num-layers-per-virtual-pipeline-stage 1 --micro-batch-size 1
zero_cfg() { # a ds_config of ZeRO stage $1 with small buckets (several collectives per step)
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0, "zero_optimization":
  {"stage": %d, "reduce_bucket_size": 3000, "allgather_bucket_size": 3000, "stage3_prefetch_bucket_size": 5000,
  "stage3_param_persistence_threshold": 100}}' "$1" >"$OUT/logs/zero$1.json"
  echo "$OUT/logs/zero$1.json"
}
for stage in 1 2 3; do
  train_case "ZeRO-$stage, DP=2" 2 --micro-batch-size 1 --deepspeed --deepspeed_config "$(zero_cfg "$stage")"
done
# the zero-bubble H1 schedule: the B passes' matmul_backward without the weight gradient, the W passes' without the
# input gradient, on copies in device memory (4 micro batches of 1 over 2 stages)
train_case "PP=2 zero-bubble H1 (--enable-zbh1-pipeline)" 2 --pipeline-model-parallel-size 2 --micro-batch-size 1 \
  --deepspeed --deepspeed_config "$(zero_cfg 1)" --enable-zbh1-pipeline
sparse_cfg() { # a ds_config with the sparse_attention block $2 (issue 20), named $1
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "sparse_attention": %s}' "$2" \
    >"$OUT/logs/sparse_$1.json"
  echo "$OUT/logs/sparse_$1.json"
}
train_case "sparse attention: fixed per head, dropout 0.1" 1 --deepspeed --deepspeed_config "$(sparse_cfg fixed \
  '{"mode": "fixed", "block": 8, "different_layout_per_head": true, "num_local_blocks": 2, "num_global_blocks": 1,
    "num_different_global_patterns": 2, "attention": "unidirectional"}')"
train_case "sparse attention: bigbird (block 4, random blocks), TP=2" 2 --tensor-model-parallel-size 2 --deepspeed \
  --deepspeed_config "$(sparse_cfg bigbird '{"mode": "bigbird", "block": 4, "different_layout_per_head": true,
    "num_random_blocks": 1, "num_sliding_window_blocks": 3, "num_global_blocks": 1}')"
curriculum_cfg() { # the legacy seqlen curriculum (ds_config curriculum_learning, issue 21): 8, 16, 24, 32 tokens
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "curriculum_learning": {"enabled": true,
    "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 32, "schedule_type": "fixed_linear",
    "schedule_config": {"total_curriculum_step": 4, "difficulty_step": 8}}}' >"$OUT/logs/curriculum.json"
  echo "$OUT/logs/curriculum.json"
}
train_case "seqlen curriculum 8 -> 32, dropout 0.1" 1 --deepspeed --deepspeed_config "$(curriculum_cfg)"
train_case "seqlen curriculum, TP=2 + sequence parallel" 2 --tensor-model-parallel-size 2 --sequence-parallel \
  --deepspeed --deepspeed_config "$(curriculum_cfg)"
train_case "seqlen curriculum, PP=2" 2 --pipeline-model-parallel-size 2 --deepspeed --deepspeed_config "$(curriculum_cfg)"
random_ltd_cfg() { # random-LTD (ds_config data_efficiency.data_routing.random_ltd, issue 21): layer 1 keeps 8 -> 32
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "data_efficiency": {"enabled": true,
    "data_routing": {"enabled": true, "random_ltd": {"enabled": true, "total_layer_num": 2, "random_ltd_layer_num": 1,
    "random_ltd_layer_id": [1], "model_type": "decoder", "hidden_state_order": "seq_batch_dim",
    "random_ltd_schedule": {"min_value": 8, "max_value": 32, "schedule_type": "fixed_linear",
    "schedule_config": {"require_steps": 4, "seq_per_step": 8}}}}}}' >"$OUT/logs/random_ltd.json"
  echo "$OUT/logs/random_ltd.json"
}
train_case "random-LTD 8 -> 32 tokens on layer 1, dropout 0.1" 1 --deepspeed --deepspeed_config "$(random_ltd_cfg)" \
  --random-ltd
train_case "random-LTD, TP=2" 2 --tensor-model-parallel-size 2 --deepspeed --deepspeed_config "$(random_ltd_cfg)" \
  --random-ltd
# Mixture of Experts (docs/moe.md): layer 2 of 2 holds 4 experts; the gather / scale_rows / row_dot path on the GPU
train_case "MoE: top-2 of 4 experts, dropout 0.1" 1 --num-experts 4 --topk 2 --moe-loss-coeff 0.1
train_case "MoE: Residual MoE, top-1 with RTS, ZeRO-2 at DP=2" 2 --num-experts 4 --mlp-type residual --micro-batch-size 1 \
  --deepspeed --deepspeed_config "$(zero_cfg 2)"
train_case "MoE: top-2, PP=2 (the aux sum sent with the hidden state)" 2 --num-experts 4 --topk 2 \
  --pipeline-model-parallel-size 2
train_case "MoE: top-2, TP=2 with sequence parallelism" 2 --num-experts 4 --topk 2 --tensor-model-parallel-size 2 \
  --sequence-parallel
TOL=2e-3 train_case "MoE: top-2, bf16 (the router in fp32)" 1 --bf16 --num-experts 4 --topk 2
train_case "MoE: top-2, expert parallelism EP=2 at DP=2 (the all-to-all through NCCL)" 2 --num-experts 4 --topk 2 \
  --moe-expert-parallel-size 2 --micro-batch-size 1
resume_case "MoE: EP=2 at DP=2, each rank holding only its experts (their gradients over their own group)" 2 \
  --num-experts 4 --topk 2 --moe-expert-parallel-size 2 --micro-batch-size 1
train_case "MoE: EP=2 with ZeRO-2 at DP=2 (the experts partitioned apart: Adam over two ranges)" 2 --num-experts 4 \
  --topk 2 --moe-expert-parallel-size 2 --micro-batch-size 1 --deepspeed --deepspeed_config "$(zero_cfg 2)"
# Mixture-of-Students: a teacher saved by the CPU build, distilled into a student of its shape (the KL term and its
# gradient computed where the logits live: kd_rows on the GPU)
rm -rf "$OUT/teacher"
if CUDA_VISIBLE_DEVICES= launch 1 "$OUT/logs/teacher.log" "$cpu_bin" "${tiny[@]}" --save "$OUT/teacher" --save-interval 4; then
  train_case "MoS: KD from a teacher checkpoint (kd_rows on the GPU)" 1 --mos --kd-beta-ce 1 --kd-temp 2 \
    --load-teacher "$OUT/teacher" --num-layers-teacher 2 --hidden-size-teacher 64 --num-attention-heads-teacher 4
  train_case "MoS: a TP=2 student, its teacher split alike (kd_lse, the ranks' log-sum-exps, kd_rows)" 2 --mos \
    --kd-temp 2 --load-teacher "$OUT/teacher" --num-layers-teacher 2 --hidden-size-teacher 64 \
    --num-attention-heads-teacher 4 --tensor-model-parallel-size 2
else
  bad "MoS: the teacher run" "$(tail -n 3 "$OUT/logs/teacher.log")"
fi
# The Llama-style GPT (docs/gpt.md): rmsnorm_forward/backward, swiglu_forward/backward and rope on the GPU
llama=(--normalization rmsnorm --swiglu --disable-bias-linear --use-rotary-position-embeddings
       --untie-embeddings-and-output-weights)
train_case "Llama-style: RMSNorm, SwiGLU, no biases, rotary, dropout 0.1" 1 "${llama[@]}"
train_case "Llama-style, TP=2 + sequence parallel, rotary on half of each head" 2 "${llama[@]}" --rotary-percent 0.5 \
  --tensor-model-parallel-size 2 --sequence-parallel
TOL=2e-3 train_case "Llama-style, bf16" 1 --bf16 "${llama[@]}"
train_case "Llama-style with random-LTD (the kept tokens turn by 0 .. r-1)" 1 "${llama[@]}" --deepspeed \
  --deepspeed_config "$(random_ltd_cfg)" --random-ltd
train_case "Llama-style with grouped-query attention (gqa_pack), TP=2" 2 "${llama[@]}" --num-key-value-heads 2 \
  --tensor-model-parallel-size 2
# The other model variants (docs/gpt.md): act_forward/backward after the unfused dense_h_to_4h (the squared ReLU, the
# erf GELU without linear biases), weight + 1 of the zero-centred LayerNorms (copy, add_bias)
train_case "--squared-relu, --apply-layernorm-1p, TP=2 + sequence parallel" 2 --squared-relu --apply-layernorm-1p \
  --tensor-model-parallel-size 2 --sequence-parallel
TOL=2e-3 train_case "--disable-bias-linear (the erf GELU), --apply-layernorm-1p, bf16" 1 --bf16 --disable-bias-linear \
  --apply-layernorm-1p
train_case "MoE: top-2 experts with --squared-relu" 1 --num-experts 4 --topk 2 --squared-relu
train_case "MoE: SwiGLU experts without linear biases, EP=2 at DP=2" 2 --num-experts 4 --topk 2 --swiglu \
  --disable-bias-linear --moe-expert-parallel-size 2
# DeepSpeed-Ulysses (docs/parallelism.md): copy2d packing and the all-to-alls of q, k, v and the context through NCCL
train_case "DeepSpeed-Ulysses SP=2, dropout 0.1" 2 --ds-sequence-parallel-size 2
train_case "DeepSpeed-Ulysses SP=2, Llama-style with rotary and GQA (the groups' all-to-all)" 2 \
  --ds-sequence-parallel-size 2 "${llama[@]}" --num-key-value-heads 2
# DeepSpeed FPDT: the chunked share (a copy2d per chunk places it), the layers without hidden dropout
train_case "DeepSpeed FPDT SP=2, chunks of 8, Llama-style with rotary and GQA" 2 --ds-sequence-parallel-size 2 \
  --ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 8 "${llama[@]}" --num-key-value-heads 2
TOL=2e-3 train_case "bf16, TP=2 x DP=2" 4 --bf16 --tensor-model-parallel-size 2 --micro-batch-size 1
resume_case "bf16, TP=2" 2 --bf16 --tensor-model-parallel-size 2

# BERT (pretrain_bert) on a generated sentence-split corpus (tests/bert/make_fixture.py, preprocess_data
# --split-sentences): lm loss, sop loss and the validation values against the CPU build's pretrain_bert; one GPU,
# TP=2 with sequence parallelism, PP=2, ZeRO-3 at DP=2 (2 layers, 3 iterations: about 0.5 s each emulated)
cpu_bin=$ZT_BUILD/bin/pretrain_bert
emu_bin=$([ -n "$GPU_BIN" ] && echo "$(dirname "$GPU_BIN")/pretrain_bert" || echo "$OUT/bin/pretrain_bert")
bfx=$OUT/logs/bert_fixture
rm -rf "$bfx"
if [ ! -x "$cpu_bin" ] || [ ! -x "$emu_bin" ]; then
  echo "SKIP BERT cases: $cpu_bin or $emu_bin not built"; skipped=$((skipped + 1))
elif ! { python3 "$ROOT/tests/bert/make_fixture.py" "$bfx" && "$ZT_BUILD/bin/preprocess_data" --input "$bfx/corpus.jsonl" \
          --output-prefix "$bfx/corpus" --vocab-file "$bfx/vocab.txt" --tokenizer-type BertWordPieceLowerCase \
          --split-sentences --workers 1 >/dev/null; }; then
  bad "BERT fixture" "make_fixture.py / preprocess_data failed"
else
  tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
        --data-path "$bfx/corpus_text_sentence" --vocab-file "$bfx/vocab.txt" --split 949,50,1 --micro-batch-size 2
        --global-batch-size 4 --train-iters 3 --log-interval 1 --eval-iters 1 --eval-interval 1000 --lr 1e-3 --seed 1)
  train_case "BERT one process, dropout 0.1" 1
  train_case "BERT TP=2, sequence parallel" 2 --tensor-model-parallel-size 2 --sequence-parallel
  train_case "BERT PP=2 (1F1B)" 2 --pipeline-model-parallel-size 2
  train_case "BERT ZeRO-3, DP=2" 2 --micro-batch-size 1 --deepspeed --deepspeed_config "$(zero_cfg 3)"
  train_case "BERT sparse attention: bslongformer (block 4)" 1 --deepspeed --deepspeed_config "$(sparse_cfg bsl \
    '{"mode": "bslongformer", "block": 4, "num_sliding_window_blocks": 3, "global_block_indices": [0, 6],
      "global_block_end_indices": [1, 8]}')"
  sed 's/"decoder"/"encoder"/' "$(random_ltd_cfg)" >"$OUT/logs/random_ltd_bert.json"
  train_case "BERT random-LTD 8 -> 32 tokens on layer 1 (the kept tokens' padding)" 1 --deepspeed --deepspeed_config \
    "$OUT/logs/random_ltd_bert.json" --random-ltd
  train_case "BERT --openai-gelu (the LM head's tanh GELU), --apply-layernorm-1p" 1 --openai-gelu --apply-layernorm-1p
  train_case "BERT RMSNorm, SwiGLU, no linear biases, TP=2" 2 --normalization rmsnorm --swiglu --disable-bias-linear \
    --tensor-model-parallel-size 2
  train_case "BERT rotary on half the head, 2 key/value heads of 4" 1 --use-rotary-position-embeddings \
    --rotary-percent 0.5 --num-key-value-heads 2
  # finetune_bert (docs/finetune.md) from a CPU-pretrained checkpoint: MNLI's classification head on one GPU, RACE's
  # multiple-choice head (four rows a question) at TP=2
  cpu_bin=$ZT_BUILD/bin/finetune_bert
  emu_bin=$([ -n "$GPU_BIN" ] && echo "$(dirname "$GPU_BIN")/finetune_bert" || echo "$OUT/bin/finetune_bert")
  bert_tiny=("${tiny[@]}")
  if [ ! -x "$cpu_bin" ] || [ ! -x "$emu_bin" ]; then
    echo "SKIP finetune_bert cases: $cpu_bin or $emu_bin not built"; skipped=$((skipped + 1))
  elif ! { CUDA_VISIBLE_DEVICES= "$ZT_BUILD/bin/pretrain_bert" "${tiny[@]}" --save "$bfx/pre" >"$OUT/logs/ft_pre.log" 2>&1 \
           && python3 "$ROOT/tests/finetune/make_tasks.py" "$bfx/tasks"; }; then
    bad "finetune_bert fixture" "pretrain_bert --save or make_tasks.py failed: $(tail -n 2 "$OUT/logs/ft_pre.log")"
  else
    tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
          --vocab-file "$bfx/vocab.txt" --lr 2e-3 --log-interval 1 --eval-interval 6 --eval-iters 1 --seed 1
          --pretrained-checkpoint "$bfx/pre" --epochs 1)
    train_case "finetune_bert MNLI (classification head), dropout 0.1" 1 --task MNLI --micro-batch-size 8 \
      --global-batch-size 8 --train-data "$bfx/tasks/MNLI/train.tsv" --valid-data "$bfx/tasks/MNLI/dev_matched.tsv" \
      "$bfx/tasks/MNLI/dev_mismatched.tsv"
    train_case "finetune_bert RACE (multiple choice), TP=2" 2 --task RACE --micro-batch-size 2 --global-batch-size 2 \
      --train-data "$bfx/tasks/RACE/train/middle" --valid-data "$bfx/tasks/RACE/dev/middle" \
      --tensor-model-parallel-size 2
  fi
  tiny=("${bert_tiny[@]}")
  # T5 (pretrain_t5) on the same corpus: 2 encoder and 2 decoder layers, 32 encoder and 16 decoder tokens
  cpu_bin=$ZT_BUILD/bin/pretrain_t5
  emu_bin=$([ -n "$GPU_BIN" ] && echo "$(dirname "$GPU_BIN")/pretrain_t5" || echo "$OUT/bin/pretrain_t5")
  if [ ! -x "$cpu_bin" ] || [ ! -x "$emu_bin" ]; then
    echo "SKIP T5 cases: $cpu_bin or $emu_bin not built"; skipped=$((skipped + 1))
  else
    tiny+=(--decoder-seq-length 16 --vocab-extra-ids 10)
    train_case "T5 one process, dropout 0.1" 1
    train_case "T5 TP=2, sequence parallel, recompute" 2 --tensor-model-parallel-size 2 --sequence-parallel \
      --checkpoint-activations
    train_case "T5 ZeRO-3, DP=2" 2 --micro-batch-size 1 --deepspeed --deepspeed_config "$(zero_cfg 3)"
    train_case "T5 PP=2 (split rank 1)" 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1
    TOL=2e-3 train_case "T5 bf16" 1 --bf16
    train_case "T5 --squared-relu, --apply-layernorm-1p (the decoder's inter-attention LayerNorm)" 1 --squared-relu \
      --apply-layernorm-1p
    train_case "T5 RMSNorm, SwiGLU, no linear biases, PP=2 (split rank 1)" 2 --normalization rmsnorm --swiglu \
      --disable-bias-linear --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1
    train_case "T5 rotary on half the head (encoder and decoder self-attention)" 1 --use-rotary-position-embeddings \
      --rotary-percent 0.5
  fi
fi

echo "$pass passed, $fail failed$([ $skipped -gt 0 ] && echo ", $skipped skipped")"
[ $fail -eq 0 ] || exit 1
[ $pass -gt 0 ] || exit 77
