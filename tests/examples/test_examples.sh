# Megatron-DeepSpeed's own example scripts (examples_deepspeed/) as their users run them, with tiny sizes and
# --mock-data: each family's megatron_options / deepspeed_options are rebuilt here in the script's own words (same
# flags, same order, same ds_config template filled by the same sed lines; templates/ holds the templates as the
# scripts ship them), then run with pretrain_gpt / pretrain_bert. The scripts always pass --load and --save with
# the same folder: the first run starts on an empty folder (Megatron's warning), is stopped half-way (an
# appended --exit-interval, as a preempted job), and the rerun must continue exactly where an uninterrupted run
# is (losses, learning rate, loss scale of every later iteration). Scripts run without what they need (the MoS
# teacher's checkpoint, a ds_config block) must be refused naming it, before anything is written (family "refused").
#
# usage: test_examples.sh FAMILY BIN_DIR PYTHON   (FAMILY: rebase, rebase_flashattn, megatron_checkpointing, moe_dense, moe_experts,
#        moe_experts_ep, moe_dense_cl, compression, offload_pp, universal_checkpointing, bert_with_pile, t5, curriculum_learning, data_efficiency_ltd,
#        data_efficiency_cl, data_efficiency_bert, bert_finetune,
#        sequence_parallel, sequence_parallel_30B, sequence_parallel_fpdt, long_seq_support, llama, zero_bubble, refused)
set -u
family="$1" bindir="$2" PY="${3:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
cd "$tmp" || exit 1

# run NP PROGRAM ARGS...: one process, or NP ranks under mpirun; the output (stdout and stderr) in $out, status in $rc
run() {
  local np="$1" prog="$bindir/$2"
  shift 2
  if [ "$np" -eq 1 ]; then out=$(timeout 600 "$prog" "$@" 2>&1); else out=$(timeout 600 "${mpi[@]}" -np "$np" "$prog" "$@" 2>&1); fi
  rc=$?
}
need_mpi() { command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }; }
# the iteration lines from iteration $1 on, reduced to the fields that must match across a restart
tail_from() { grep -E "^ iteration +[0-9]+/" <<<"$2" | awk -v from="$1" '{ split($2, it, "/"); if (it[1] + 0 >= from) print }' |
  sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second: .*$//'; }
# resumes NAME NP PROGRAM STOP ARGS...: a run stopped at STOP then rerun on the same folder equals one straight run
resumes() {
  local name="$1" np="$2" prog="$3" stop="$4"
  shift 4
  local ckpt="$tmp/ckpt_$name"
  rm -rf "$ckpt" "$ckpt.ref"
  run "$np" "$prog" "$@" --load "$ckpt.ref" --save "$ckpt.ref"
  local ref="$out" ref_rc=$rc
  if [ $ref_rc -ne 0 ]; then bad "$name: straight run" "exit $ref_rc: $(grep -m3 -iE "error|refus" <<<"$ref")"; return; fi
  grep -qF "WARNING: could not find the metadata file $ckpt.ref/latest" <<<"$ref" \
    && ok "$name: --load on an empty folder starts from scratch with Megatron's warning" \
    || bad "$name: empty --load" "no Megatron warning"
  run "$np" "$prog" "$@" --load "$ckpt" --save "$ckpt" --exit-interval "$stop"
  [ $rc -eq 0 ] || { bad "$name: stopped run" "exit $rc: $(grep -m3 -iE "error" <<<"$out")"; return; }
  run "$np" "$prog" "$@" --load "$ckpt" --save "$ckpt"
  [ $rc -eq 0 ] || { bad "$name: rerun" "exit $rc: $(grep -m3 -iE "error" <<<"$out")"; return; }
  local a b
  a=$(tail_from $((stop + 1)) "$ref") b=$(tail_from $((stop + 1)) "$out")
  if [ -n "$a" ] && [ "$a" = "$b" ]; then
    ok "$name: rerun continues at iteration $((stop + 1)) exactly as the straight run ($(wc -l <<<"$a") lines)"
  else
    bad "$name: rerun" "differs from the straight run:"$'\n'"$(diff <(echo "$a") <(echo "$b") | head -6)"
  fi
  last=$ref
}
# tb_written NAME DIR TAG...: the TensorBoard event file under DIR holds these tags
tb_written() {
  local name="$1" dir="$2"
  shift 2
  local f
  f=$(find "$dir" -name 'events.out.tfevents.*' 2>/dev/null | head -1)
  [ -n "$f" ] || { bad "$name: tensorboard" "no event file under $dir"; return; }
  local missing=() t
  for t in "$@"; do grep -qaF "$t" "$f" || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && ok "$name: tensorboard event file has ${*@Q}" || bad "$name: tensorboard" "missing tags: ${missing[*]@Q} in $f"
}

# ---- examples_deepspeed/rebase/ds_pretrain_gpt_125M.sh (token-based schedule, fp16, ZeRO-1, TP 2 x PP 2) ----
# With "flashattn": rebase/ds_pretrain_gpt_125M_flashattn.sh, the same script with --use-flash-attn after
# --no-async-tensor-model-parallel-allreduce; attention is exact either way, so it must train the 125M losses.
# With "rope": rebase/ds_pretrain_gpt_1.3B_rope.sh, the same options (at the test's tiny sizes) with
# --use-rotary-position-embeddings --rotary-percent 0.25 (rotary on 4 of each head's 16 dimensions, no learned positions).
# With "seq_parallel": sequence_parallel/ds_pretrain_gpt_1.3B_seq_parallel_32k.sh, the same script shape with
# --ds-sequence-parallel-size 4 (DeepSpeed-Ulysses over 4 ranks, data-parallel size 1), TP 1, no pipeline,
# --use-flash-attn-triton, global batch 2 of micro batches of 1; with "seq_parallel_30B": ds_pretrain_gpt_30B_seq_
# parallel_32k.sh, the same with ZeRO-3, which must also train the losses of its options at
# --ds-sequence-parallel-size 1 in one process (to 1e-3: fp16 gradients summed in parts over the ranks round otherwise).
# With "long_seq": deepspeed4science/megatron_long_seq_support/pretrain_gpt_1.3B_seq_parallel.sh, the same script shape
# with Megatron's --sequence-parallel over TP 2 (8 there), no pipeline, ZeRO 0, micro batches of 1, its own template
# (rebase's with a flops_profiler block at step 1).
# With "zbh1": zero_bubble_pp/zbh1_pretrain_gpt_1.3b.sh, the same script shape (it reads ../rebase's template) with
# TP 1, ZeRO 0, micro batches of 1, no activation checkpointing, --enable-zbh1-pipeline --enable-zbh1-exact-semantics
# and pipeline stages (8 there, 4 here): it must train the losses of the same script without the two flags (1F1B)
# bit for bit.
rebase() {
  local variant="${1:-}" name=rebase_125M flash_attn="" sp_option=""
  if [ "$variant" = flashattn ]; then name=rebase_125M_flashattn flash_attn="--use-flash-attn"; fi
  if [ "$variant" = rope ]; then name=rebase_1.3B_rope flash_attn="--use-rotary-position-embeddings --rotary-percent 0.25"; fi
  need_mpi
  seq_len=64 num_layers=4 hidden_size=64 num_attn_heads=4 global_batch_size=8 lr=6.0e-4 min_lr=1.0e-6 init_std=0.02
  mp_size=2 pp_size=2 no_pp="false" zero_stage=1 batch_size=2 log_interval=1 eval_iters=1 eval_interval=3
  if [[ "$variant" = seq_parallel* ]]; then
    name=$([ "$variant" = seq_parallel ] && echo seq_parallel_1.3B || echo seq_parallel_30B)
    num_layers=2 global_batch_size=2 lr=2.0e-4 init_std=0.013 mp_size=1 pp_size=1 no_pp="true" batch_size=1
    sp_size=4 sp_option="--ds-sequence-parallel-size ${sp_size}" flash_attn="--use-flash-attn-triton"
    if [ "$variant" = seq_parallel_30B ]; then zero_stage=3; fi
  fi
  local np=4 template="$here/templates/rebase_ds_config_gpt_TEMPLATE.json"
  if [ "$variant" = long_seq ]; then # Megatron's sequence parallelism over TP 2 (8 in the script), DP 1
    name=long_seq_support_1.3B num_layers=2 global_batch_size=2 lr=2.0e-4 init_std=0.013 mp_size=2 pp_size=1
    no_pp="true" zero_stage=0 batch_size=1 flash_attn="--use-flash-attn-triton" np=2
    template="$here/templates/deepspeed4science_ds_config_gpt_TEMPLATE.json"
  fi
  zbh1_options=""
  if [ "$variant" = zbh1 ]; then
    name=zbh1_1.3b mp_size=1 pp_size=4 zero_stage=0 batch_size=1
    zbh1_options="--enable-zbh1-pipeline --enable-zbh1-exact-semantics"
  fi
  train_tokens=$((global_batch_size * 64 * 6)) train_samples=$((global_batch_size * 64 * 6 * 2 / 64))
  exit_duration=30000000 lr_warmup_tokens=$((global_batch_size * 64 * 2)) lr_decay_tokens=$train_tokens
  lr_decay_style="cosine"
  save_interval=100 activation_checkpoint="true" log_optimizer_state="true" seed=1234 num_workers=0
  if [ "$variant" = zbh1 ]; then activation_checkpoint="false"; fi
  prescale_grad="true"
  if [[ $zero_stage -gt 0 ]]; then prescale_grad="false"; fi
  tensorboard_path="$tmp/tensorboard/$name"
  mkdir -p "$tensorboard_path"
  data_options="--mock-data --data-impl mmap"
  megatron_options=" \
    --override-opt_param-scheduler \
    --adam-beta1 0.9 \
    --adam-beta2 0.95 \
    --tensor-model-parallel-size ${mp_size} ${sp_option} \
    --init-method-std ${init_std} \
    --lr-decay-tokens ${lr_decay_tokens} \
    --lr-warmup-tokens ${lr_warmup_tokens} \
    --micro-batch-size ${batch_size} \
    --exit-duration-in-mins ${exit_duration} \
    --global-batch-size ${global_batch_size} \
    --num-layers ${num_layers} \
    --hidden-size ${hidden_size} \
    --num-attention-heads ${num_attn_heads} \
    --seq-length ${seq_len} \
    --max-position-embeddings ${seq_len} \
    --train-tokens ${train_tokens} \
    --train-samples ${train_samples} \
    --lr ${lr} \
    --min-lr ${min_lr} \
    --lr-decay-style ${lr_decay_style} \
    --split 949,50,1 \
    --log-interval ${log_interval} \
    --eval-interval ${eval_interval} \
    --eval-iters ${eval_iters} \
    --save-interval ${save_interval} \
    --weight-decay 0.1 \
    --clip-grad 1.0 \
    --hysteresis 2 \
    --num-workers ${num_workers} \
    --fp16 \
    --seed ${seed} \
    --no-async-tensor-model-parallel-allreduce ${flash_attn} \
    --tensorboard-queue-size 1 \
    --log-timers-to-tensorboard \
    --log-batch-size-to-tensorboard \
    --log-validation-ppl-to-tensorboard \
    --tensorboard-dir ${tensorboard_path}"
  if [ "$variant" = long_seq ]; then megatron_options="--sequence-parallel ${megatron_options}"; fi
  if [ "${activation_checkpoint}" = "true" ]; then megatron_options="${megatron_options} --checkpoint-activations"; fi
  if [ "${log_optimizer_state}" = "true" ]; then megatron_options="${megatron_options} --log-optimizer-states-to-tensorboard"; fi
  config_json="ds_config_gbs${global_batch_size}_mbs${batch_size}_log${log_interval}_zero${zero_stage}.json"
  sed "s/GBSIZE/${global_batch_size}/" "$template" \
    | sed "s/MBSIZE/${batch_size}/" \
    | sed "s/LOG_INTERVAL/${log_interval}/" \
    | sed "s/ZERO_STAGE/${zero_stage}/" \
    | sed "s/PRESCALE_GRAD/${prescale_grad}/" \
      > ${config_json}
  deepspeed_options=" \
    --deepspeed \
    --deepspeed_config ${config_json} \
    --zero-stage ${zero_stage} ${zbh1_options} \
    --pipeline-model-parallel-size ${pp_size}"
  if [[ "${no_pp}" = "true" ]]; then deepspeed_options="${deepspeed_options} --no-pipeline-parallel"; fi
  if [ "${activation_checkpoint}" = "true" ]; then deepspeed_options="${deepspeed_options} --deepspeed-activation-checkpointing"; fi
  if [ "$variant" = seq_parallel_30B ]; then
    # shellcheck disable=SC2086
    run 4 pretrain_gpt ${megatron_options} ${data_options} ${deepspeed_options}
    local sp_out=$out sp_rc=$rc
    # shellcheck disable=SC2086
    run 1 pretrain_gpt ${megatron_options/${sp_option}/--ds-sequence-parallel-size 1} ${data_options} ${deepspeed_options}
    if [ $sp_rc -eq 0 ] && [ $rc -eq 0 ] && [ "$(field "$sp_out" "lm loss" | wc -w)" -eq 6 ] \
       && close "$(field "$out" "lm loss")" "$(field "$sp_out" "lm loss")" 1e-3; then
      ok "$name: ZeRO-3 over 4 sequence-parallel ranks trains one process's lm losses ($(field "$sp_out" "lm loss" | cut -d' ' -f1,6))"
    else
      bad "$name" "exit $sp_rc/$rc: SP=4 '$(field "$sp_out" "lm loss")', one process '$(field "$out" "lm loss")' $(grep -m1 error <<<"$sp_out")"
    fi
    return
  fi
  # shellcheck disable=SC2086
  resumes $name $np pretrain_gpt 3 ${megatron_options} ${data_options} ${deepspeed_options}
  local iters
  iters=$(grep -cE "^ iteration +[0-9]+/" <<<"$last")
  [ "$iters" -eq 6 ] && ok "$name: --train-tokens $train_tokens ends training after 6 iterations of $((global_batch_size * 64)) tokens (--train-samples allows 12)" \
    || bad "$name: --train-tokens" "$iters iterations (expected 6)"
  tb_written $name "$tensorboard_path" "lm loss" "learning-rate" "batch-size" "lm loss validation ppl"
  if [ "$variant" = long_seq ]; then
    grep -qE "^  sequence_parallel \.+ True$" <<<"$last" && grep -qE "^  tensor_model_parallel_size \.+ 2$" <<<"$last" \
      && grep -qF -- "-------------------------- DeepSpeed Flops Profiler --------------------------" <<<"$last" \
      && ok "$name: Megatron's sequence parallelism at TP 2 in the argument dump; the template's flops profile at step 1" \
      || bad "$name: argument dump / flops profile" "$(grep -E "^  (sequence_parallel|tensor_model_parallel_size) " <<<"$last")"
  fi
  if [ "$variant" = seq_parallel ]; then
    grep -qE "^  ds_sequence_parallel_size \.+ 4$" <<<"$last" && grep -qE "^  data_parallel_size \.+ 1$" <<<"$last" \
      && ok "$name: the argument dump has ds_sequence_parallel_size 4, data_parallel_size 1" \
      || bad "$name: argument dump" "$(grep -E "^  (ds_sequence_parallel_size|data_parallel_size)" <<<"$last")"
  fi
  if [ "$variant" = zbh1 ]; then
    grep -qE "^  enable_zbh1_pipeline \.+ True$" <<<"$last" && grep -qE "^  enable_zbh1_exact_semantics \.+ True$" <<<"$last" \
      && grep -qF "> zero-bubble H1 pipeline schedule with exact semantics" <<<"$last" \
      && ok "$name: the argument dump has enable_zbh1_pipeline and enable_zbh1_exact_semantics True; the schedule line" \
      || bad "$name: argument dump" "$(grep -E "zbh1|zero-bubble" <<<"$last")"
    local zb_run=$last a b
    rm -rf "$tmp/ckpt_1f1b"
    # shellcheck disable=SC2086
    run 4 pretrain_gpt ${megatron_options} ${data_options} ${deepspeed_options/${zbh1_options}/} --load "$tmp/ckpt_1f1b" \
      --save "$tmp/ckpt_1f1b"
    a=$(tail_from 1 "$zb_run") b=$(tail_from 1 "$out")
    [ $rc -eq 0 ] && [ -n "$a" ] && [ "$a" = "$b" ] && ! grep -qF "zero-bubble" <<<"$out" \
      && ok "$name: the losses of the same script without the zero-bubble flags (1F1B), bit for bit ($(wc -l <<<"$a") iterations)" \
      || bad "$name: against 1F1B" "exit $rc:"$'\n'"$(diff <(echo "$a") <(echo "$b") | head -6)"
    return
  fi
  if [ "$variant" = rope ]; then
    grep -qE "^  use_rotary_position_embeddings \.+ True$" <<<"$last" && grep -qE "^  rotary_percent \.+ 0.25$" <<<"$last" \
      && grep -qE "^  add_position_embedding \.+ False$" <<<"$last" \
      && ok "$name: the argument dump has rotary embeddings on 0.25 of each head and no position embeddings" \
      || bad "$name: argument dump" "$(grep -E "rotary|position_embedding" <<<"$last")"
  fi
  [ "$variant" = flashattn ] || return
  grep -qE "^  use_flash_attn \.+ True$" <<<"$last" && ok "$name: use_flash_attn True in the argument dump" \
    || bad "$name: argument dump" "no 'use_flash_attn ... True'"
  local flash_run=$last
  rm -rf "$tmp/ckpt_plain"
  # shellcheck disable=SC2086
  run 4 pretrain_gpt ${megatron_options/--use-flash-attn /} ${data_options} ${deepspeed_options} --load "$tmp/ckpt_plain" \
    --save "$tmp/ckpt_plain"
  local a b
  a=$(tail_from 1 "$flash_run") b=$(tail_from 1 "$out")
  [ $rc -eq 0 ] && [ -n "$a" ] && [ "$a" = "$b" ] \
    && ok "$name: the 125M script's losses without --use-flash-attn ($(wc -l <<<"$a") iterations, attention dropout 0.1)" \
    || bad "$name: against the 125M run" "exit $rc:"$'\n'"$(diff <(echo "$a") <(echo "$b") | head -6)"
}

# ---- examples_deepspeed/rebase/ds_pretrain_gpt_1.3B_megatron_checkpointing.sh (no DeepSpeed; Megatron's recompute) ----
megatron_checkpointing() {
  seq_len=64 num_layers=2 hidden_size=64 num_attn_heads=4 global_batch_size=8 lr=2.0e-4 min_lr=1.0e-6 init_std=0.013
  train_tokens=$((8 * 64 * 6)) train_samples=$((8 * 64 * 6 * 2 / 64)) exit_duration=30000000
  lr_warmup_tokens=$((8 * 64 * 2)) lr_decay_tokens=$train_tokens lr_decay_style="cosine"
  mp_size=1 pp_size=1 no_pp="true" batch_size=4 log_interval=1 eval_iters=1 eval_interval=3 save_interval=100
  seed=1234 num_workers=0
  tensorboard_path="$tmp/tensorboard/megatron_checkpointing"
  data_options="--mock-data --data-impl mmap"
  megatron_options=" \
    --override-opt_param-scheduler \
    --adam-beta1 0.9 \
    --adam-beta2 0.95 \
    --tensor-model-parallel-size ${mp_size} \
    --init-method-std ${init_std} \
    --lr-decay-tokens ${lr_decay_tokens} \
    --lr-warmup-tokens ${lr_warmup_tokens} \
    --micro-batch-size ${batch_size} \
    --exit-duration-in-mins ${exit_duration} \
    --global-batch-size ${global_batch_size} \
    --num-layers ${num_layers} \
    --hidden-size ${hidden_size} \
    --num-attention-heads ${num_attn_heads} \
    --seq-length ${seq_len} \
    --max-position-embeddings ${seq_len} \
    --train-tokens ${train_tokens} \
    --train-samples ${train_samples} \
    --lr ${lr} \
    --min-lr ${min_lr} \
    --lr-decay-style ${lr_decay_style} \
    --split 949,50,1 \
    --log-interval ${log_interval} \
    --eval-interval ${eval_interval} \
    --eval-iters ${eval_iters} \
    --save-interval ${save_interval} \
    --weight-decay 0.1 \
    --clip-grad 1.0 \
    --hysteresis 2 \
    --num-workers ${num_workers} \
    --fp16 \
    --seed ${seed} \
    --no-async-tensor-model-parallel-allreduce \
    --tensorboard-queue-size 1 \
    --log-timers-to-tensorboard \
    --log-batch-size-to-tensorboard \
    --log-validation-ppl-to-tensorboard \
    --log-optimizer-states-to-tensorboard \
    --tensorboard-dir ${tensorboard_path} \
    --pipeline-model-parallel-size ${pp_size}"
  if [[ "${no_pp}" = "true" ]]; then megatron_options="${megatron_options} --no-pipeline-parallel"; fi
  megatron_options="${megatron_options} \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 1"
  # shellcheck disable=SC2086
  resumes megatron_checkpointing 1 pretrain_gpt 2 ${megatron_options} ${data_options}
  tb_written megatron_checkpointing "$tensorboard_path" "lm loss" "learning-rate"
}

# ---- examples_deepspeed/MoE/ds_pretrain_gpt_{350M_dense,125M_MoE64}.sh: the MoE scripts' shared options block with
# EP_SIZE experts (1: the dense model; 64: MoE64) on NUM_GPUS ranks (EP_PARALLEL_SIZE = min(EP_SIZE, NUM_GPUS)) ----
# moe_script NAME EP_SIZE [NUM_GPUS]
moe_script() {
  local name=$1 EP_SIZE=$2 NUM_GPUS=${3:-1}
  SEQ_LEN=64 NUM_LAYERS=2 HIDDEN_SIZE=64 NUM_ATTN_HEADS=4 GLOBAL_BATCH_SIZE=8 LR=3.0e-4 MIN_LR=3.0e-5
  TRAIN_TOKENS=$((8 * 64 * 6)) TRAIN_SAMPLES=$((8 * 64 * 6 * 3 / 64)) EXIT_DURATION=30000000
  WARMUP_TOKENS=$((8 * 64)) LR_DECAY_TOKENS=$((8 * 64 * 5)) BATCH_SIZE=4 MP_SIZE=1 PP_SIZE=1
  if [[ $EP_SIZE -gt $NUM_GPUS ]]; then EP_PARALLEL_SIZE=$NUM_GPUS; else EP_PARALLEL_SIZE=$EP_SIZE; fi
  MLC=0.01 MOE_TRAIN_CAP_FACTOR=1.0 MOE_EVAL_CAP_FACTOR=1.0 MOE_MIN_CAP=4 MOE_DROP_TOKEN="true"
  CL_ENABLED="false" CL_START_SEQLEN=16 CL_AVG_SEQLEN=$(((16 + 64) / 2)) CL_TOKENS=$((8 * 64 * 4))
  CL_STEP=$((CL_TOKENS / (GLOBAL_BATCH_SIZE * CL_AVG_SEQLEN)))
  LOG_INTERVAL=1 EVAL_ITERS=1 EVAL_INTERVAL=3 SAVE_INTERVAL=1000 INIT_STD=0.014 ACTIVATION_CHECKPOINT="true"
  TENSORBOARD_DIR="$tmp/tensorboard/$name"
  mkdir -p "$TENSORBOARD_DIR"
  data_options="--mock-data --data-impl mmap"
  megatron_options=" \
        --override-opt_param-scheduler \
        --adam-beta1 0.9 \
        --adam-beta2 0.95 \
        --tensor-model-parallel-size ${MP_SIZE} \
        --moe-expert-parallel-size ${EP_PARALLEL_SIZE} \
        --num-experts ${EP_SIZE} \
        --moe-loss-coeff ${MLC} \
        --moe-train-capacity-factor ${MOE_TRAIN_CAP_FACTOR} \
        --moe-eval-capacity-factor ${MOE_EVAL_CAP_FACTOR} \
        --moe-min-capacity ${MOE_MIN_CAP} \
        --init-method-std ${INIT_STD} \
        --lr-decay-tokens ${LR_DECAY_TOKENS} \
        --lr-warmup-tokens ${WARMUP_TOKENS} \
        --micro-batch-size ${BATCH_SIZE} \
        --exit-duration-in-mins ${EXIT_DURATION} \
        --global-batch-size ${GLOBAL_BATCH_SIZE} \
        --num-layers ${NUM_LAYERS} \
        --hidden-size ${HIDDEN_SIZE} \
        --num-attention-heads ${NUM_ATTN_HEADS} \
        --seq-length ${SEQ_LEN} \
        --max-position-embeddings ${SEQ_LEN} \
        --train-tokens ${TRAIN_TOKENS} \
        --train-samples ${TRAIN_SAMPLES} \
        --lr ${LR} \
        --min-lr ${MIN_LR} \
        --lr-decay-style cosine \
        --split 98,2,0 \
        --log-interval ${LOG_INTERVAL} \
        --eval-interval ${EVAL_INTERVAL} \
        --eval-iters ${EVAL_ITERS} \
        --save-interval ${SAVE_INTERVAL} \
        --weight-decay 0.1 \
        --clip-grad 1.0 \
        --hysteresis 2 \
        --num-workers 0 \
        --fp16 \
        --tensorboard-queue-size 1 \
        --log-timers-to-tensorboard \
        --log-batch-size-to-tensorboard \
        --log-validation-ppl-to-tensorboard \
        --tensorboard-dir ${TENSORBOARD_DIR}"
  if [ "${ACTIVATION_CHECKPOINT}" = "true" ]; then megatron_options="${megatron_options} --checkpoint-activations"; fi
  if [[ $EP_SIZE -gt 1 ]]; then megatron_options="${megatron_options} --create-moe-param-group"; fi
  if [ "${MOE_DROP_TOKEN}" = "false" ]; then megatron_options="${megatron_options} --disable-moe-token-dropping"; fi
  config_json="ds_config_gpt_$name.json"
  sed "s/CONFIG_BATCH_SIZE/${GLOBAL_BATCH_SIZE}/" "$here/templates/MoE_ds_config_gpt_TEMPLATE.json" \
    | sed "s/CONFIG_MBSIZE/${BATCH_SIZE}/" \
    | sed "s/LOG_INTERVAL/${LOG_INTERVAL}/" \
    | sed "s/ZERO_STAGE/0/" \
    | sed "s/PRESCALE_GRAD/true/" \
    | sed "s/CONFIG_FP16_ENABLED/true/" \
    | sed "s/CONFIG_BF16_ENABLED/false/" \
    | sed "s/CONFIG_CL_ENABLED/${CL_ENABLED}/" \
    | sed "s/CONFIG_CL_MIN/${CL_START_SEQLEN}/" \
    | sed "s/CONFIG_CL_MAX/${SEQ_LEN}/" \
    | sed "s/CONFIG_CL_DURATION/${CL_STEP}/" \
	  > ${config_json}
  deepspeed_options=" \
		    --deepspeed \
		    --deepspeed_config ${config_json} \
		    --pipeline-model-parallel-size ${PP_SIZE}"
  if [[ $EP_SIZE -gt 1 ]]; then deepspeed_options="${deepspeed_options} --no-pipeline-parallel"; fi
  if [ "${ACTIVATION_CHECKPOINT}" = "true" ]; then deepspeed_options="${deepspeed_options} --deepspeed-activation-checkpointing"; fi
  # shellcheck disable=SC2086
  resumes "$name" "$NUM_GPUS" pretrain_gpt 3 ${megatron_options} ${data_options} ${deepspeed_options}
  tb_written "$name" "$TENSORBOARD_DIR" "lm loss" "batch-size"
}
moe_dense() { moe_script moe_dense_350M 1; }
# MoE64: layer 2 of 2 holds 64 experts (--expert-interval 2), top-1, capacity 4 of 256 tokens; the log line's moe loss
moe_losses() { grep -E "^ iteration " <<<"$last" | grep -oE "moe loss: [0-9.E+-]+" | sed 's/.*: //' | tr '\n' ' '; }
moe_experts() {
  moe_script moe_125M_MoE64 64
  local m
  m=$(moe_losses)
  [ "$(wc -w <<<"$m")" -ge 5 ] && awk -v m="$m" 'BEGIN { n = split(m, x, " "); for (i = 1; i <= n; i++) if (!(x[i] > 0 && x[i] < 1)) exit 1 }' \
    && ok "moe_125M_MoE64: 64 experts train, the log line's moe loss ($m)" || bad "moe_125M_MoE64: moe loss" "'$m'"
}
# MoE64 on 2 GPUs, as the script runs there: --moe-expert-parallel-size 2 (32 experts per rank, all-to-all) at DP=2
moe_experts_ep() {
  need_mpi
  moe_script moe_125M_MoE64_2gpu 64 2
  local m
  m=$(moe_losses)
  [ "$(wc -w <<<"$m")" -ge 5 ] && awk -v m="$m" 'BEGIN { n = split(m, x, " "); for (i = 1; i <= n; i++) if (!(x[i] > 0 && x[i] < 1)) exit 1 }' \
    && ok "moe_125M_MoE64 on 2 GPUs: 64 experts over 2 expert-parallel ranks train, the log line's moe loss ($m)" \
    || bad "moe_125M_MoE64 on 2 GPUs: moe loss" "'$m'"
}

# dense_cl_options LAYERS TENSORBOARD_PATH CONFIG_JSON TEMPLATE: the option list of MoE/ds_pretrain_gpt_125M_dense_cl.sh,
# which compression/'s scripts repeat word for word (megatron_options, the TensorBoard and recompute flags in
# tb_options, deepspeed_options), from the caller's script variables; CONFIG_JSON is TEMPLATE filled by their sed lines.
dense_cl_options() {
  megatron_options=" \
      --override-opt_param-scheduler \
      --adam-beta1 0.9 \
      --adam-beta2 0.95 \
      --tensor-model-parallel-size ${MP_SIZE} \
      --init-method-std ${INIT_STD} \
      --lr-decay-tokens ${LR_DECAY_TOKENS} \
      --lr-warmup-tokens ${WARMUP_TOKENS} \
      --micro-batch-size ${BATCH_SIZE} \
      --exit-duration-in-mins ${EXIT_DURATION} \
      --global-batch-size ${GLOBAL_BATCH_SIZE} \
      --num-layers $1 \
      --hidden-size ${HIDDEN_SIZE} \
      --num-attention-heads ${NUM_ATTN_HEADS} \
      --seq-length ${SEQ_LEN} \
      --max-position-embeddings ${SEQ_LEN} \
      --train-tokens ${TRAIN_TOKENS} \
      --train-samples ${TRAIN_SAMPLES} \
      --lr ${LR} \
      --min-lr ${MIN_LR} \
      --lr-decay-style cosine \
      --split 98,2,0 \
      --log-interval ${LOG_INTERVAL} \
      --eval-interval ${EVAL_INTERVAL} \
      --eval-iters ${EVAL_ITERS} \
      --save-interval ${SAVE_INTERVAL} \
      --weight-decay 0.1 \
      --clip-grad 1.0 \
      --hysteresis 2 \
      --num-workers 0 \
      --fp16"
  tb_options=" \
      --tensorboard-queue-size 1 \
      --log-timers-to-tensorboard \
      --log-batch-size-to-tensorboard \
      --log-validation-ppl-to-tensorboard \
      --tensorboard-dir $2"
  if [ "${ACTIVATION_CHECKPOINT}" = "true" ]; then tb_options="${tb_options} --checkpoint-activations"; fi
  if [ "${LOG_OPTIMIZER_STATE}" = "true" ]; then tb_options="${tb_options} --log-optimizer-states-to-tensorboard"; fi
  if [[ $ZERO_STAGE -gt 0 ]]; then prescale_grad="false"; else prescale_grad="true"; fi
  sed "s/CONFIG_BATCH_SIZE/${GLOBAL_BATCH_SIZE}/" "$4" \
    | sed "s/CONFIG_MBSIZE/${BATCH_SIZE}/" \
    | sed "s/LOG_INTERVAL/${LOG_INTERVAL}/" \
    | sed "s/ZERO_STAGE/${ZERO_STAGE}/" \
    | sed "s/PRESCALE_GRAD/${prescale_grad}/" \
    | sed "s/CONFIG_FP16_ENABLED/true/" \
    | sed "s/CONFIG_BF16_ENABLED/false/" \
    | sed "s/CONFIG_CL_ENABLED/${CL_ENABLED}/" \
    | sed "s/CONFIG_CL_MIN/${CL_START_SEQLEN}/" \
    | sed "s/CONFIG_CL_MAX/${SEQ_LEN}/" \
    | sed "s/CONFIG_CL_DURATION/${CL_STEP}/" \
      > "$3"
  deepspeed_options=" \
          --deepspeed \
          --deepspeed_config $3 \
          --zero-stage ${ZERO_STAGE} \
          --pipeline-model-parallel-size ${PP_SIZE}"
  if [[ "${NO_PP}" = "true" ]]; then deepspeed_options="${deepspeed_options} --no-pipeline-parallel"; fi
  if [ "${ACTIVATION_CHECKPOINT}" = "true" ]; then deepspeed_options="${deepspeed_options} --deepspeed-activation-checkpointing"; fi
}

# ---- examples_deepspeed/MoE/ds_pretrain_gpt_125M_dense_cl.sh (the dense 125M with CL_ENABLED="true") ----
# No MoE flags; the MoE ds_config template's curriculum_learning block filled by the script's sed lines. The script's
# CL_STEP is CL_TOKENS billion tokens over GLOBAL_BATCH_SIZE x CL_AVG_SEQLEN; here CL_TOKENS is in tokens, so the
# curriculum takes 4 steps: lengths 24 40 48 64 (fixed_linear from 16 to 64, difficulty_step 8).
moe_dense_cl() {
  SEQ_LEN=64 NUM_LAYERS=2 HIDDEN_SIZE=64 NUM_ATTN_HEADS=4 MIN_LR=6.0e-5 GLOBAL_BATCH_SIZE=8 LR=2.4e-3
  TRAIN_TOKENS=$((8 * 64 * 5)) TRAIN_SAMPLES=$((8 * 64 * 5 * 3 / 64)) EXIT_DURATION=30000000
  WARMUP_TOKENS=$((8 * 64)) LR_DECAY_TOKENS=$((8 * 64 * 5)) BATCH_SIZE=4 MP_SIZE=1 PP_SIZE=1 NO_PP="true" ZERO_STAGE=0
  CL_ENABLED="true" CL_START_SEQLEN=16 CL_AVG_SEQLEN=$(((16 + 64) / 2)) CL_TOKENS=$((8 * 40 * 4))
  CL_STEP=$((CL_TOKENS / (GLOBAL_BATCH_SIZE * CL_AVG_SEQLEN)))
  LOG_INTERVAL=1 EVAL_ITERS=1 EVAL_INTERVAL=3 SAVE_INTERVAL=1000 INIT_STD=0.02 ACTIVATION_CHECKPOINT="true"
  LOG_OPTIMIZER_STATE="true"
  TENSORBOARD_PATH="$tmp/tensorboard/moe_dense_cl"
  mkdir -p "$TENSORBOARD_PATH"
  data_options="--mock-data --data-impl mmap"
  dense_cl_options "${NUM_LAYERS}" "$TENSORBOARD_PATH" ds_config_gpt_moe_dense_cl.json \
    "$here/templates/MoE_ds_config_gpt_TEMPLATE.json"
  # shellcheck disable=SC2086
  resumes moe_dense_cl_125M 1 pretrain_gpt 3 ${megatron_options} ${tb_options} ${data_options} ${deepspeed_options}
  local lens
  lens=$(grep -E "^ iteration " <<<"$last" | sed -E 's/.*curriculum seqlen: +([0-9]+).*/\1/' | tr '\n' ' ')
  [ "$lens" = "24 40 48 64 64 64 64 " ] \
    && ok "moe_dense_cl_125M: curriculum seqlen 24 40 48 64 64 64 64 (fixed_linear, min 16, step 8, $CL_STEP steps)" \
    || bad "moe_dense_cl_125M: curriculum seqlen" "got '$lens'"
  local iters toks
  iters=$(grep -cE "^ iteration " <<<"$last")
  toks=$(grep -E "^ iteration " <<<"$last" | tail -1 | sed -E 's/.*consumed tokens: +([0-9]+) .*/\1/')
  [ "$iters" -eq 7 ] && [ "$toks" = 2944 ] \
    && ok "moe_dense_cl_125M: --train-tokens $TRAIN_TOKENS stops it after 7 iterations, 2944 = 8 x (24+40+48+4x64) tokens" \
    || bad "moe_dense_cl_125M: --train-tokens" "$iters iterations, $toks tokens (expected 7, 2944)"
  tb_written moe_dense_cl_125M "$TENSORBOARD_PATH" "lm loss" "seqlen/curriculum_seqlen"
}

# ---- examples_deepspeed/compression/ (knowledge distillation; the Int8 scripts' compression_training) ----
# ds_pretrain_gpt_125M_dense_kd.sh and _dense_cl_kd.sh (CL_ENABLED="true"): the MoE dense script's options (their
# ds_config_gpt_TEMPLATE.json is the MoE family's, byte for byte) plus --kd --kd-beta-ce 1 and the teacher's shape,
# a student of 10 layers distilled from a 12-layer teacher (here 2 from 3). The teacher is the script's
# CHECKPOINT_PATH_TEACHER, a dense run of the same options without --kd, trained first. The students use the
# scripts' --load/--save folder (dense_kd is also stopped half-way and rerun); their log lines carry the kd loss.
# 125M-L10-Int8-test-64gpu-distilled-group48.sh and its L12 sibling: --load of a trained checkpoint with
# --no-load-lr-state --reset-iteration and the compression template's compression_training block, refused naming
# the block and what Megatron-DeepSpeed does with it, before anything is written.
compression() {
  SEQ_LEN=64 NUM_LAYERS=3 HIDDEN_SIZE=64 NUM_ATTN_HEADS=4 MIN_LR=6.0e-5 GLOBAL_BATCH_SIZE=8 LR=2.4e-3
  TRAIN_TOKENS=$((8 * 64 * 6)) TRAIN_SAMPLES=$((8 * 64 * 6 * 3 / 64)) EXIT_DURATION=30000000
  WARMUP_TOKENS=$((8 * 64)) LR_DECAY_TOKENS=$((8 * 64 * 5)) BATCH_SIZE=4 MP_SIZE=1 PP_SIZE=1 NO_PP="true" ZERO_STAGE=0
  CL_START_SEQLEN=16 CL_AVG_SEQLEN=$(((16 + 64) / 2)) CL_TOKENS=$((8 * 40 * 4))
  CL_STEP=$((CL_TOKENS / (GLOBAL_BATCH_SIZE * CL_AVG_SEQLEN)))
  LOG_INTERVAL=1 EVAL_ITERS=1 EVAL_INTERVAL=3 SAVE_INTERVAL=1000 INIT_STD=0.02 ACTIVATION_CHECKPOINT="true"
  LOG_OPTIMIZER_STATE="true" KD_BETA_CE=1
  local CHECKPOINT_PATH_TEACHER="$tmp/teacher" cl
  data_options="--mock-data --data-impl mmap"
  local template="$here/templates/MoE_ds_config_gpt_TEMPLATE.json"
  # the teacher: the same options, NUM_LAYERS layers, no --kd
  CL_ENABLED="false"
  dense_cl_options "${NUM_LAYERS}" "$tmp/tensorboard/teacher" ds_config_teacher.json "$template"
  # shellcheck disable=SC2086
  run 1 pretrain_gpt ${megatron_options} ${tb_options} ${data_options} ${deepspeed_options} --save "$CHECKPOINT_PATH_TEACHER"
  [ $rc -eq 0 ] || { bad "compression: the teacher's run" "exit $rc: $(grep -m3 -iE "error" <<<"$out")"; return; }
  for cl in false true; do
    local name=ds_pretrain_gpt_125M_dense_kd
    [ $cl = true ] && name=ds_pretrain_gpt_125M_dense_cl_kd
    CL_ENABLED=$cl
    dense_cl_options 2 "$tmp/tensorboard/$name" "ds_config_$name.json" "$template"
    local kd_options=" \
        --kd \
        --kd-beta-ce ${KD_BETA_CE} \
        --num-layers-teacher ${NUM_LAYERS} \
        --hidden-size-teacher ${HIDDEN_SIZE} \
        --num-attention-heads-teacher ${NUM_ATTN_HEADS} \
        --load-teacher ${CHECKPOINT_PATH_TEACHER}"
    if [ $cl = false ]; then
      # shellcheck disable=SC2086
      resumes "$name" 1 pretrain_gpt 3 ${megatron_options} ${kd_options} ${tb_options} ${data_options} ${deepspeed_options}
    else # one run: the restart is the plain KD script's
      # shellcheck disable=SC2086
      run 1 pretrain_gpt ${megatron_options} ${kd_options} ${tb_options} ${data_options} ${deepspeed_options} \
        --load "$tmp/ckpt_$name" --save "$tmp/ckpt_$name"
      last=$out
    fi
    local kd
    kd=$(grep -E "^ iteration " <<<"$last" | grep -oE "kd loss: [0-9.E+-]+" | sed 's/.*: //' | tr '\n' ' ')
    [ "$(wc -w <<<"$kd")" -ge 5 ] && awk -v m="$kd" 'BEGIN { n = split(m, x, " "); for (i = 1; i <= n; i++) if (!(x[i] > 0)) exit 1 }' \
      && ok "$name: a 2-layer student distills from the 3-layer teacher, the log line's kd loss ($kd)" \
      || bad "$name: kd loss" "'$kd' $(grep -m2 -iE "error" <<<"$last")"
    if [ $cl = true ]; then
      local lens
      lens=$(grep -E "^ iteration " <<<"$last" | sed -E 's/.*curriculum seqlen: +([0-9]+).*/\1/' | tr '\n' ' ')
      [[ "$lens" == "24 40 48 64 "* ]] && ok "$name: curriculum seqlen $lens" || bad "$name: curriculum seqlen" "got '$lens'"
    fi
  done
  # the Int8 scripts: refused, nothing written (not the tensorboard folder, not --save)
  local before after script
  for script in 125M-L10-Int8-test-64gpu-distilled-group48 125M-L12-Int8-test-64gpu-distilled-group48; do
    CL_ENABLED="false"
    local layers=2
    [ "$script" = 125M-L12-Int8-test-64gpu-distilled-group48 ] && layers=${NUM_LAYERS}
    dense_cl_options "$layers" "$tmp/tensorboard/$script" "ds_config_$script.json" \
      "$here/templates/compression_ds_config_gpt_TEMPLATE_compression.json"
    before=$(find "$tmp" | sort)
    # shellcheck disable=SC2086
    run 1 pretrain_gpt ${megatron_options} --load "$CHECKPOINT_PATH_TEACHER" --save "$tmp/ckpt_$script" \
      --no-load-lr-state --reset-iteration ${tb_options} ${data_options} ${deepspeed_options}
    after=$(find "$tmp" | sort)
    if [ $rc -ne 0 ] && [ "$after" = "$before" ] \
       && grep -qF "compression_training is not supported yet: lands with the compression work" <<<"$out" \
       && grep -qF "Megatron-DeepSpeed compresses none of GPT's layers with this block" <<<"$out"; then
      ok "compression/$script.sh: refused naming compression_training and what Megatron-DeepSpeed does with it, nothing written"
    else
      bad "compression/$script.sh" "exit $rc; wrote: $(comm -13 <(echo "$before") <(echo "$after") | head -3 | tr '\n' ' ') $(grep -m2 -iE "error" <<<"$out")"
    fi
  done
}

# ---- examples_deepspeed/offload_pp/ds_pretrain_gpt_350M.sh (ZeRO-3, optimizer offloaded to the CPU) ----
offload_pp() {
  SEQ_LEN=64 NUM_LAYERS=2 HIDDEN_SIZE=64 NUM_ATTN_HEADS=4 GLOBAL_BATCH_SIZE=8 LR=3.0e-4 MIN_LR=3.0e-5
  TRAIN_TOKENS=$((8 * 64 * 6)) TRAIN_SAMPLES=$((8 * 64 * 6 * 3 / 64)) EXIT_DURATION=30000000
  WARMUP_TOKENS=$((8 * 64)) LR_DECAY_TOKENS=$((8 * 64 * 5)) BATCH_SIZE=2 MP_SIZE=1 PP_SIZE=1 NUM_GPUS=2 EP_SIZE=1
  if [[ $EP_SIZE -gt $NUM_GPUS ]]; then EP_PARALLEL_SIZE=$NUM_GPUS; else EP_PARALLEL_SIZE=$EP_SIZE; fi
  MLC=0.01 MOE_TRAIN_CAP_FACTOR=1.0 MOE_EVAL_CAP_FACTOR=1.0 MOE_MIN_CAP=4 MOE_DROP_TOKEN="true"
  LOG_INTERVAL=1 EVAL_ITERS=1 EVAL_INTERVAL=3 SAVE_INTERVAL=1000 INIT_STD=0.014 ACTIVATION_CHECKPOINT="true"
  TENSORBOARD_DIR="$tmp/tensorboard/offload_pp"
  data_options="--mock-data --data-impl mmap"
  megatron_options=" \
        --override-opt_param-scheduler \
        --adam-beta1 0.9 \
        --adam-beta2 0.95 \
        --tensor-model-parallel-size ${MP_SIZE} \
        --moe-expert-parallel-size ${EP_PARALLEL_SIZE} \
        --num-experts ${EP_SIZE} \
        --moe-loss-coeff ${MLC} \
        --moe-train-capacity-factor ${MOE_TRAIN_CAP_FACTOR} \
        --moe-eval-capacity-factor ${MOE_EVAL_CAP_FACTOR} \
        --moe-min-capacity ${MOE_MIN_CAP} \
        --init-method-std ${INIT_STD} \
        --lr-decay-tokens ${LR_DECAY_TOKENS} \
        --lr-warmup-tokens ${WARMUP_TOKENS} \
        --micro-batch-size ${BATCH_SIZE} \
        --exit-duration-in-mins ${EXIT_DURATION} \
        --rampup-batch-size 4 4 16 \
        --global-batch-size ${GLOBAL_BATCH_SIZE} \
        --num-layers ${NUM_LAYERS} \
        --hidden-size ${HIDDEN_SIZE} \
        --num-attention-heads ${NUM_ATTN_HEADS} \
        --seq-length ${SEQ_LEN} \
        --max-position-embeddings ${SEQ_LEN} \
        --train-tokens ${TRAIN_TOKENS} \
        --train-samples ${TRAIN_SAMPLES} \
        --lr ${LR} \
        --min-lr ${MIN_LR} \
        --lr-decay-style cosine \
        --split 98,2,0 \
        --log-interval ${LOG_INTERVAL} \
        --eval-interval ${EVAL_INTERVAL} \
        --eval-iters ${EVAL_ITERS} \
        --save-interval ${SAVE_INTERVAL} \
        --weight-decay 0.1 \
        --clip-grad 1.0 \
        --hysteresis 2 \
        --num-workers 0 \
        --fp16 \
        --tensorboard-queue-size 1 \
        --log-timers-to-tensorboard \
        --timing-log-level 1 \
        --no-pipeline-parallel \
        --cpu-optimizer \
        --log-batch-size-to-tensorboard \
        --log-validation-ppl-to-tensorboard \
        --tensorboard-dir ${TENSORBOARD_DIR}"
  if [ "${ACTIVATION_CHECKPOINT}" = "true" ]; then megatron_options="${megatron_options} --checkpoint-activations"; fi
  if [[ $EP_SIZE -gt 1 ]]; then megatron_options="${megatron_options} --create-moe-param-group"; fi
  if [ "${MOE_DROP_TOKEN}" = "false" ]; then megatron_options="${megatron_options} --disable-moe-token-dropping"; fi
  config_json="ds_config_gpt_offload_pp.json"
  sed "s/CONFIG_BATCH_SIZE/${GLOBAL_BATCH_SIZE}/" "$here/templates/offload_pp_ds_config_gpt_TEMPLATE.json" \
    | sed "s/CONFIG_MBSIZE/${BATCH_SIZE}/" \
    | sed "s/LOG_INTERVAL/${LOG_INTERVAL}/" \
    | sed "s/ZERO_STAGE/0/" \
    | sed "s/PRESCALE_GRAD/true/" \
    | sed "s/CONFIG_FP16_ENABLED/true/" \
    | sed "s/CONFIG_BF16_ENABLED/false/" \
	  > ${config_json}
  deepspeed_options=" \
		    --deepspeed \
		    --deepspeed_config ${config_json} \
		    --pipeline-model-parallel-size ${PP_SIZE}"
  if [[ $EP_SIZE -gt 1 ]]; then deepspeed_options="${deepspeed_options} --no-pipeline-parallel"; fi
  if [ "${ACTIVATION_CHECKPOINT}" = "true" ]; then deepspeed_options="${deepspeed_options} --deepspeed-activation-checkpointing"; fi
  need_mpi
  # shellcheck disable=SC2086
  resumes offload_pp_350M 2 pretrain_gpt 4 ${megatron_options} ${data_options} ${deepspeed_options}
  grep -qF "> --cpu-optimizer (DeepSpeedCPUAdam): the optimizer step runs on the CPU (zero_optimization.offload_optimizer.device cpu in ${config_json})" <<<"$last" \
    && ok "offload_pp_350M: --cpu-optimizer with the template's offload_optimizer cpu, said in the log" \
    || bad "offload_pp_350M: --cpu-optimizer" "$(grep -m1 -E "cpu-optimizer|error" <<<"$last")"
  tb_written offload_pp_350M "$TENSORBOARD_DIR" "lm loss" "batch-size"
}

# ---- examples_deepspeed/universal_checkpointing/megatron_gpt/run_bf16.sh, then run_universal_bf16.sh ----
# (saved with DP 2, resumed with DP 1 and --universal-checkpoint; TP 2 x PP 2 shrunk to TP 1 x PP 2 for the VM)
universal_checkpointing() {
  need_mpi
  CONFIG_JSON="$tmp/ds_config.json" ZERO_STAGE=1 DTYPE="bf16" LAYERS=4 HIDDEN=64 SEQ=64 EXIT_INTERVAL=3
  local step
  for step in save universal; do
    TP=1 PP=2 SP=1
    if [ $step = save ]; then DP=2 GLOBAL_BATCH=8; else DP=1 GLOBAL_BATCH=8; fi
    WORLD_SIZE=$((TP * PP * DP * SP)) MICRO_BATCH=$((GLOBAL_BATCH / WORLD_SIZE))
    TRAIN_ITERS=6 LR=6.0e-3 MIN_LR=6.0e-4
    CHECKPOINT_PATH=$tmp/z${ZERO_STAGE}_uni_ckpt/checkpoints/gpt2/z${ZERO_STAGE}/$DTYPE/tp${TP}_pp${PP}_dp${DP}_sp${SP}_toy
    LOAD_CHECKPOINT_PATH=$tmp/z${ZERO_STAGE}_uni_ckpt/checkpoints/gpt2/z${ZERO_STAGE}/$DTYPE/tp${TP}_pp${PP}_dp2_sp${SP}_toy
    LOG_DIR="$tmp/z${ZERO_STAGE}_uni_ckpt/tensorboard/$DTYPE/$step"
    mkdir -p "$LOG_DIR"
    options=" \
	--tensor-model-parallel-size $TP \
	--pipeline-model-parallel-size $PP \
	--ds-sequence-parallel-size $SP \
        --num-layers $LAYERS \
        --hidden-size $HIDDEN \
        --num-attention-heads 32 \
        --seq-length $SEQ \
        --loss-scale 12 \
        --max-position-embeddings $SEQ \
	--micro-batch-size $MICRO_BATCH \
	--global-batch-size $GLOBAL_BATCH \
	--train-iters $TRAIN_ITERS \
        --lr $LR \
	--min-lr $MIN_LR \
        --lr-decay-style cosine \
        --log-interval 1 \
        --eval-iters 1 \
        --eval-interval 10 \
	--mock-data \
	--save-interval 100 \
        --split 98,2,0 \
        --clip-grad 1.0 \
	--weight-decay 0.1 \
	--adam-beta1 0.9 \
	--adam-beta2 0.95 \
	--init-method-std 0.006 \
        --${DTYPE} \
	--checkpoint-activations \
	--exit-interval ${EXIT_INTERVAL} \
        --save ${CHECKPOINT_PATH} \
        --load ${LOAD_CHECKPOINT_PATH} \
        --make-vocab-size-divisible-by 256"
    if [ $step = universal ]; then options="${options} --universal-checkpoint"; fi
    options="${options} --tensorboard-dir $LOG_DIR"
    options="${options} \
        --deepspeed \
        --deepspeed_config=${CONFIG_JSON} \
        --zero-stage=${ZERO_STAGE} \
        --deepspeed-activation-checkpointing"
    if [[ ${ZERO_STAGE} -gt 1 ]]; then options="${options} --no-pipeline-parallel"; fi
    cat <<EOT > $CONFIG_JSON
{
  "train_batch_size" : $GLOBAL_BATCH,
  "train_micro_batch_size_per_gpu": $MICRO_BATCH,
  "steps_per_print": 1,
  "zero_optimization": {
    "stage": $ZERO_STAGE
  },
  "bf16": {
    "enabled": true
  },
  "data_types": {
        "grad_accum_dtype": "fp32"
  },
  "wall_clock_breakdown" : false
}
EOT
    if [ $step = universal ]; then EXIT_INTERVAL=6; fi
    # shellcheck disable=SC2086
    run "$WORLD_SIZE" pretrain_gpt ${options}
    if [ $rc -ne 0 ]; then bad "universal_checkpointing: $step" "exit $rc: $(grep -m3 -iE "error" <<<"$out")"; return; fi
    if [ $step = save ]; then
      saved=$out
      [ -d "$CHECKPOINT_PATH/global_step3" ] && ok "universal_checkpointing: run_bf16 saved global_step3 at DP 2" \
        || bad "universal_checkpointing: save" "no $CHECKPOINT_PATH/global_step3"
    else
      grep -qE "^ iteration +4/" <<<"$out" && ! grep -qE "^ iteration +[123]/" <<<"$out" \
        && ok "universal_checkpointing: run_universal_bf16 resumed the DP-2 checkpoint at DP 1, iterations 4-6" \
        || bad "universal_checkpointing: resume" "$(grep -E "^ iteration|error" <<<"$out" | head -4)"
    fi
  done
}

# ---- examples_deepspeed/bert_with_pile/ds_pretrain_bert.sh ----
bert_with_pile() {
  "$PY" "$here/../bert/make_fixture.py" "$tmp/fx" >/dev/null || { bad "bert fixture" "make_fixture.py failed"; return; }
  "$bindir/preprocess_data" --input "$tmp/fx/corpus.jsonl" --output-prefix "$tmp/fx/corpus" --workers 1 \
    --vocab-file "$tmp/fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
    || { bad "bert fixture" "preprocess_data failed"; return; }
  seq_len=32 global_batch_size=8 lr=1e-4 min_lr=1e-5 train_iters=6 lr_warmup_iters=2 lr_decay_iters=6
  lr_decay_style="linear" num_layers=2 hidden_size=32 num_attn_heads=4 init_std=0.02 batch_size=4 mp_size=1
  pp_size=1 no_pp="true" zero_stage=0 log_interval=1 eval_iters=1 eval_interval=3 save_interval=100
  activation_checkpoint="false" log_optimizer_state="true" num_workers=0
  vocab_path="$tmp/fx/vocab.txt" data_path="$tmp/fx/corpus_text_sentence"
  tensorboard_path="$tmp/tensorboard/bert"
  data_options=" \
    --vocab-file ${vocab_path} \
    --data-path ${data_path} \
    --data-impl mmap"
  megatron_options=" \
    --override-opt_param-scheduler \
    --adam-beta1 0.9 \
    --adam-beta2 0.999 \
    --init-method-std ${init_std} \
    --tensor-model-parallel-size ${mp_size} \
    --lr-decay-iters ${lr_decay_iters} \
    --lr-warmup-iters ${lr_warmup_iters} \
    --micro-batch-size ${batch_size} \
    --global-batch-size ${global_batch_size} \
    --num-layers ${num_layers} \
    --hidden-size ${hidden_size} \
    --num-attention-heads ${num_attn_heads} \
    --seq-length ${seq_len} \
    --max-position-embeddings ${seq_len} \
    --train-iters ${train_iters} \
    --lr ${lr} \
    --min-lr ${min_lr} \
    --lr-decay-style ${lr_decay_style} \
    --split 949,50,1 \
    --log-interval ${log_interval} \
    --eval-interval ${eval_interval} \
    --eval-iters ${eval_iters} \
    --save-interval ${save_interval} \
    --weight-decay 1e-2 \
    --clip-grad 1.0 \
    --num-workers ${num_workers} \
    --fp16 \
    --tensorboard-queue-size 1 \
    --log-timers-to-tensorboard \
    --log-batch-size-to-tensorboard \
    --log-validation-ppl-to-tensorboard \
    --tensorboard-dir ${tensorboard_path}"
  if [ "${activation_checkpoint}" = "true" ]; then megatron_options="${megatron_options} --checkpoint-activations"; fi
  if [ "${log_optimizer_state}" = "true" ]; then megatron_options="${megatron_options} --log-optimizer-states-to-tensorboard"; fi
  config_json="ds_config_bert_bsz${global_batch_size}_mbsz${batch_size}_log${log_interval}_zero${zero_stage}.json"
  if [[ $zero_stage -gt 0 ]]; then prescale=false; else prescale=true; fi
  sed "s/CONFIG_BATCH_SIZE/${global_batch_size}/" "$here/templates/bert_with_pile_ds_config_bert_TEMPLATE.json" \
    | sed "s/CONFIG_MBSIZE/${batch_size}/" \
    | sed "s/LOG_INTERVAL/${log_interval}/" \
    | sed "s/ZERO_STAGE/${zero_stage}/" \
    | sed "s/PRESCALE_GRAD/${prescale}/" \
    | sed "s/CONFIG_FP16_ENABLED/true/" \
    | sed "s/CONFIG_BF16_ENABLED/false/" \
      > ${config_json}
  deepspeed_options=" \
    --deepspeed \
    --deepspeed_config ${config_json} \
    --zero-stage ${zero_stage} \
    --pipeline-model-parallel-size ${pp_size}"
  if [[ "${no_pp}" = "true" ]]; then deepspeed_options="${deepspeed_options} --no-pipeline-parallel"; fi
  if [ "${activation_checkpoint}" = "true" ]; then deepspeed_options="${deepspeed_options} --deepspeed-activation-checkpointing"; fi
  # shellcheck disable=SC2086
  resumes bert_with_pile 1 pretrain_bert 3 ${megatron_options} ${data_options} ${deepspeed_options}
  tb_written bert_with_pile "$tensorboard_path" "lm loss" "sop loss"
}

# ---- examples/pretrain_t5.sh and examples/pretrain_t5_distributed_with_mp.sh ----
# T5_ARGS / DATA_ARGS / OUTPUT_ARGS in the scripts' words (--kv-channels, --encoder-seq-length, --fp16,
# --vocab-extra-ids 100, --data-impl mmap) with tiny sizes; the second script adds --tensor-model-parallel-size 2
# and --distributed-backend nccl (2 ranks here, its global batch 8 times its micro batch as the script's 128 / 16).
t5() {
  "$PY" "$here/../bert/make_fixture.py" "$tmp/fx" >/dev/null || { bad "t5 fixture" "make_fixture.py failed"; return; }
  "$bindir/preprocess_data" --input "$tmp/fx/corpus.jsonl" --output-prefix "$tmp/fx/corpus" --workers 1 \
    --vocab-file "$tmp/fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
    || { bad "t5 fixture" "preprocess_data failed"; return; }
  VOCAB_FILE="$tmp/fx/vocab.txt" DATA_PATH="$tmp/fx/corpus_text_sentence"
  T5_ARGS="
    --num-layers 2 \
    --hidden-size 32 \
    --num-attention-heads 4 \
    --kv-channels 8 \
    --ffn-hidden-size 128 \
    --encoder-seq-length 64 \
    --decoder-seq-length 16 \
    --max-position-embeddings 64 \
    --micro-batch-size 4 \
    --global-batch-size 4 \
    --lr 0.0001 \
    --train-iters 6 \
    --lr-decay-iters 6 \
    --lr-decay-style linear \
    --min-lr 0.00001 \
    --weight-decay 1e-2 \
    --lr-warmup-fraction .01 \
    --clip-grad 1.0 \
    --fp16 \
    --vocab-extra-ids 100
"
  DATA_ARGS="
    --data-path $DATA_PATH \
    --vocab-file $VOCAB_FILE \
    --data-impl mmap \
    --split 949,50,1
"
  OUTPUT_ARGS="
    --log-interval 1 \
    --save-interval 100 \
    --eval-interval 3 \
    --eval-iters 1
"
  # shellcheck disable=SC2086
  resumes pretrain_t5 1 pretrain_t5 3 $T5_ARGS $DATA_ARGS $OUTPUT_ARGS
  grep -q "encoder_seq_length \.* 64" <<<"$last" && grep -q "decoder_seq_length \.* 16" <<<"$last" \
    && grep -q "validation loss at iteration 3 | lm loss value" <<<"$last" \
    && ok "pretrain_t5.sh: the encoder/decoder lengths in the argument dump, lm loss validated at 3" \
    || bad "pretrain_t5.sh" "$(grep -E 'seq_length|validation' <<<"$last" | head -4)"
  need_mpi
  T5_ARGS="--tensor-model-parallel-size 2 ${T5_ARGS/--global-batch-size 4/--global-batch-size 32}"
  # shellcheck disable=SC2086
  resumes pretrain_t5_distributed_with_mp 2 pretrain_t5 3 $T5_ARGS $DATA_ARGS $OUTPUT_ARGS --distributed-backend nccl
}

# ---- examples_deepspeed/curriculum_learning/ds_pretrain_gpt2.sh (legacy seqlen curriculum, fixed_linear) ----
# The script's options with tiny sizes; its ds_zero_stage_1_config_curriculum_fixed_linear.json filled as its sed lines
# fill CONFIG_CL_MIN/MAX/DURATION, with the batch for one process and without the optimizer's "max_grad_norm", which
# DeepSpeed itself refuses ("please switch to using the deepspeed parameter 'gradient_clipping'").
curriculum_learning() {
  local SEQ_LEN=64 CURRICULUM_MIN=8 CURRICULUM_STEP=4 TOTAL_BATCHSIZE=8 BATCHSIZE=2 NUM_ITER=6 LR_WARMUP_ITER=2
  cat >"$tmp/cl_template.json" <<'EOF'
{
  "train_batch_size": 8,
  "gradient_accumulation_steps": 4,
  "steps_per_print": 1,
  "zero_optimization": {
    "stage": 1
  },
  "optimizer": {
    "type": "Adam",
    "params": {
      "lr": 0.00015,
      "betas": [0.9, 0.95]
    }
  },
  "gradient_clipping": 1.0,
  "fp16": {
    "enabled": true,
    "loss_scale": 0,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    "min_loss_scale": 1
  },
  "wall_clock_breakdown": false,
  "zero_allow_untested_optimizer": false,
  "curriculum_learning": {
    "enabled": true,
    "curriculum_type": "seqlen",
    "min_difficulty": CONFIG_CL_MIN,
    "max_difficulty": CONFIG_CL_MAX,
    "schedule_type": "fixed_linear",
    "schedule_config": {
      "total_curriculum_step": CONFIG_CL_DURATION,
      "difficulty_step": 8
    }
  }
}
EOF
  local config_json="$tmp/cl.json"
  sed "s/CONFIG_CL_MIN/${CURRICULUM_MIN}/" "$tmp/cl_template.json" | sed "s/CONFIG_CL_MAX/${SEQ_LEN}/" \
    | sed "s/CONFIG_CL_DURATION/${CURRICULUM_STEP}/" >"$config_json"
  local gpt_options=(--tensor-model-parallel-size 1 --num-layers 2 --hidden-size 64 --num-attention-heads 4
    --seq-length $SEQ_LEN --max-position-embeddings $SEQ_LEN --micro-batch-size $BATCHSIZE
    --global-batch-size $TOTAL_BATCHSIZE --train-iters $NUM_ITER --train-tokens 100000 --lr-decay-tokens 3000
    --mock-data --vocab-size 256 --data-impl mmap --split 949,50,1 --distributed-backend nccl
    --override-opt_param-scheduler --lr 1.5e-4 --lr-decay-style cosine --min-lr 1.0e-5 --weight-decay 1e-2
    --clip-grad 1.0 --lr-warmup-iters $LR_WARMUP_ITER --checkpoint-activations --log-interval 1 --eval-interval 100
    --eval-iters 1 --fp16 --seed 1234 --tensorboard-queue-size 1 --log-timers-to-tensorboard
    --log-batch-size-to-tensorboard --log-validation-ppl-to-tensorboard --no-masked-softmax-fusion
    --tensorboard-dir "$tmp/cl_tb")
  local deepspeed_options=(--deepspeed --deepspeed_config "$config_json" --zero-stage 1
    --pipeline-model-parallel-size 1 --deepspeed-activation-checkpointing)
  resumes curriculum_learning 1 pretrain_gpt 3 "${gpt_options[@]}" "${deepspeed_options[@]}"
  local lens
  lens=$(grep -E "^ iteration " <<<"$last" | sed -E 's/.*curriculum seqlen: +([0-9]+).*/\1/' | tr '\n' ' ')
  [ "$lens" = "16 32 48 64 64 64 " ] && ok "curriculum_learning: curriculum seqlen 16 32 48 64 64 64 (fixed_linear, min 8, step 8, 4 steps)" \
    || bad "curriculum_learning: curriculum seqlen" "got '$lens'"
  tb_written curriculum_learning "$tmp/cl_tb" "seqlen/curriculum_seqlen"
}

# de_template TEMPLATE: a data_efficiency ds_config template filled as the data_efficiency run scripts fill it, from
# the caller's variables (global_batch_size, batch_size, ..., ltd_*, cl_* and, for the 2-metric templates, cl_2nd_*)
de_template() {
  sed "s/GBSIZE/${global_batch_size}/" "$here/templates/$1" \
    | sed "s/MBSIZE/${batch_size}/" \
    | sed "s/LOG_INTERVAL/${log_interval}/" \
    | sed "s/ZERO_STAGE/${zero_stage}/" \
    | sed "s/PRESCALE_GRAD/${prescale_grad}/" \
    | sed "s/DATA_EFFICIENCY_SEED/${seed}/" \
    | sed "s/LTD_ENABLED/${ltd_enabled}/" \
    | sed "s/LTD_MIN/${ltd_start}/" \
    | sed "s/LTD_MAX/${seq_len}/" \
    | sed "s/LTD_STEP/${ltd_step}/" \
    | sed "s/CL_ENABLED/${cl_enabled}/" \
    | sed "s/DATA_SAMPLING_NUM_WORKERS/${num_workers}/" \
    | sed "s#CL_CLUSTER_PATH#${data_cluster_path}#" \
    | sed "s#CL_1st_METRIC_NAME#${cl_1st_metric}#" \
    | sed "s#CL_1st_SAMPLE_PATH#${cl_1st_index_to_sample_path}#" \
    | sed "s#CL_1st_METRIC_PATH#${cl_1st_index_to_metric_path}#" \
    | sed "s#CL_1st_DIFF_TYPE#${cl_1st_difficulty_type}#" \
    | sed "s#CL_1st_CLUSTER_TYPE#${cl_1st_clustering_type}#" \
    | sed "s/CL_1st_MIN/${cl_1st_min}/" \
    | sed "s/CL_1st_MAX/${cl_1st_max}/" \
    | sed "s/CL_1st_TOTAL_STEP/${cl_1st_total_step}/" \
    | sed "s/CL_1st_DIFF_STEP/${cl_1st_difficulty_step}/" \
    | sed "s/CL_1st_ROOT/${cl_1st_root}/" \
    | sed "s#CL_2nd_METRIC_NAME#${cl_2nd_metric:-}#" \
    | sed "s#CL_2nd_SAMPLE_PATH#${cl_2nd_index_to_sample_path:-}#" \
    | sed "s#CL_2nd_METRIC_PATH#${cl_2nd_index_to_metric_path:-}#" \
    | sed "s#CL_2nd_DIFF_TYPE#${cl_2nd_difficulty_type:-}#" \
    | sed "s#CL_2nd_CLUSTER_TYPE#${cl_2nd_clustering_type:-}#" \
    | sed "s/CL_2nd_MIN/${cl_2nd_min:-}/" \
    | sed "s/CL_2nd_MAX/${cl_2nd_max:-}/" \
    | sed "s/CL_2nd_TOTAL_STEP/${cl_2nd_total_step:-}/" \
    | sed "s/CL_2nd_DIFF_STEP/${cl_2nd_difficulty_step:-}/" \
    | sed "s/CL_2nd_ROOT/${cl_2nd_root:-}/"
}

# ---- examples_deepspeed/data_efficiency/gpt/pretrain/ds_pretrain_gpt_1.3B_dense_base_script.sh with random-LTD ----
# ltd_enabled=true, cl_enabled=false (the run script's random-LTD-only case): its 24 layers (the template's
# total_layer_num and layer ids 1-22) at hidden 32, 64 tokens, the 1-metric template as the script fills it
# (data_sampling disabled, its placeholders filled with the script's 'dummy' defaults), --random-ltd.
data_efficiency_ltd() {
  local seq_len=64 num_layers=24 hidden_size=32 num_attn_heads=2 global_batch_size=8 lr=2.0e-4 min_lr=1.0e-6
  local init_std=0.013 train_tokens=100000 train_samples=48 lr_warmup_tokens=1024 lr_decay_tokens=100000
  local lr_decay_style="cosine" mp_size=1 pp_size=1 no_pp="true" zero_stage=1 batch_size=8 ltd_enabled="true"
  local ltd_start=16 ltd_step=8 cl_enabled="false" cl_1st_metric="dummy" cl_1st_index_to_sample_path="dummy"
  local cl_1st_index_to_metric_path="dummy" cl_1st_difficulty_type="value" cl_1st_clustering_type="single_cluster"
  local cl_1st_min=2048 cl_1st_max=2048 cl_1st_total_step=1 cl_1st_difficulty_step=1 cl_1st_root=1
  local log_interval=1 eval_iters=1 eval_interval=100 save_interval=100 seed=1234 num_workers=0
  local prescale_grad="false" data_cluster_path="" num_workers=0
  local checkpoint_path="$tmp/de_ckpt" tensorboard_path="$tmp/de_tb"
  local config_json="$tmp/ds_config_gbs${global_batch_size}_mbs${batch_size}_log${log_interval}_zero${zero_stage}_seed${seed}_ltd_${ltd_start}_${ltd_step}.json"
  de_template "data_efficiency_ds_config_gpt_1clmetric_TEMPLATE.json" >"$config_json"
  local megatron_options=(--override-opt_param-scheduler --adam-beta1 0.9 --adam-beta2 0.95
    --tensor-model-parallel-size ${mp_size} --init-method-std ${init_std} --lr-decay-tokens ${lr_decay_tokens}
    --lr-warmup-tokens ${lr_warmup_tokens} --micro-batch-size ${batch_size} --exit-duration-in-mins 30000000
    --global-batch-size ${global_batch_size} --num-layers ${num_layers} --hidden-size ${hidden_size}
    --num-attention-heads ${num_attn_heads} --seq-length ${seq_len} --max-position-embeddings ${seq_len}
    --train-tokens ${train_tokens} --train-samples ${train_samples} --lr ${lr} --min-lr ${min_lr}
    --lr-decay-style ${lr_decay_style} --split 949,50,1 --log-interval ${log_interval} --eval-interval ${eval_interval}
    --eval-iters ${eval_iters} --save-interval ${save_interval} --weight-decay 0.1 --clip-grad 1.0 --hysteresis 2
    --num-workers ${num_workers} --fp16 --seed ${seed} --tensorboard-queue-size 1 --log-timers-to-tensorboard
    --log-batch-size-to-tensorboard --log-validation-ppl-to-tensorboard --tensorboard-dir ${tensorboard_path}
    --checkpoint-activations --log-optimizer-states-to-tensorboard --random-ltd)
  local data_options=(--mock-data --vocab-size 256 --data-impl mmap)
  local deepspeed_options=(--deepspeed --deepspeed_config ${config_json} --zero-stage ${zero_stage}
    --pipeline-model-parallel-size ${pp_size} --no-pipeline-parallel --deepspeed-activation-checkpointing)
  resumes data_efficiency_ltd 1 pretrain_gpt 3 "${megatron_options[@]}" "${data_options[@]}" "${deepspeed_options[@]}"
  local lens
  lens=$(grep -E "^ iteration " <<<"$last" | sed -E 's/.*random ltd reserved length: +([0-9]+).*/\1/' | tr '\n' ' ')
  # floor(t / 8 * 48 + 16) = 16 22 28 34 40 46, down to the template's seq_per_step 16
  [ "$lens" = "16 16 16 32 32 32 " ] && ok "data_efficiency_ltd: random ltd reserved length 16 16 16 32 32 32 (16 -> 64 over 8 steps by 16)" \
    || bad "data_efficiency_ltd: random ltd reserved length" "got '$lens'"
  grep -qE "^> random-LTD: layers 1,2,3,.*,22 \(22 of 24\)" <<<"$last" && ok "data_efficiency_ltd: layers 1-22 of 24 drop tokens" \
    || bad "data_efficiency_ltd: the layers" "$(grep -m1 "random-LTD" <<<"$last")"
  tb_written data_efficiency_ltd "$tmp/de_tb" "seqlen/random_ltd_reserved_length"
}

# ---- examples_deepspeed/data_efficiency/gpt/pretrain/ds_pretrain_gpt_1.3B_dense_base_script.sh with curriculum ----
# cl_enabled=true, cl_num_metric=2: the run script's "CL vocab rarity + seqlen truncation" case (the 2-metric
# template as the script fills it, --train-*-idx-path naming the exact one-epoch index files and
# --data-efficiency-curriculum-learning), at hidden 32 and 64 tokens. The vocabulary-rarity analysis comes first, as
# the data_efficiency README orders it: ds_analyze_gpt_data_map.sh / _reduce.sh (analyze_data) on a NullTokenizer
# corpus, exactly one epoch of its train split; the training run builds its index files at the names the script gives
# (they do not exist yet), one epoch for its 48 samples: the same samples, which the sampler checks against the
# analysis (every sample id inside the dataset) and the test against the analysis' own index files.
# Scaled to the tiny corpus: cl_1st_min=50 (the script's 1 admits no sample of ~200: 1% of them rounds to 0),
# seqlen_truncate 16 -> 64 over 4 steps.
data_efficiency_cl() {
  local seq_len=64 num_layers=2 hidden_size=32 num_attn_heads=2 global_batch_size=8 lr=2.0e-4 min_lr=1.0e-6
  local init_std=0.013 train_tokens=100000 train_samples=48 lr_warmup_tokens=1024 lr_decay_tokens=100000
  local lr_decay_style="cosine" mp_size=1 pp_size=1 no_pp="true" zero_stage=1 batch_size=8 ltd_enabled="false"
  local ltd_start=64 ltd_step=1 cl_enabled="true" cl_num_metric=2 seed=1234 num_workers=0 prescale_grad="false"
  local data_home="$tmp/data" analysis="$tmp/analysis_gpt_1epoch"
  local cl_1st_metric="voc" cl_1st_index_to_sample_path="$analysis/vocab_rarity/vocab_rarity_index_to_sample_percentile_merged"
  local cl_1st_index_to_metric_path="$analysis/vocab_rarity/vocab_rarity_index_to_metric" cl_1st_difficulty_type="percentile"
  local cl_1st_clustering_type="schedule_based" cl_1st_min=50 cl_1st_max=100 cl_1st_total_step=4 cl_1st_difficulty_step=1
  local cl_1st_root=2 cl_2nd_metric="seqlen_truncate" cl_2nd_index_to_sample_path="dummy"
  local cl_2nd_index_to_metric_path="dummy" cl_2nd_difficulty_type="value" cl_2nd_clustering_type="single_cluster"
  local cl_2nd_min=16 cl_2nd_max=64 cl_2nd_total_step=4 cl_2nd_difficulty_step=8 cl_2nd_root=1
  local log_interval=1 eval_iters=1 eval_interval=100 save_interval=100
  local checkpoint_path="$tmp/decl_ckpt" tensorboard_path="$tmp/decl_tb" data_cluster_path="$tmp/data_cluster"
  mkdir -p "$data_home" "$data_cluster_path"
  "$PY" - "$data_home/c.jsonl" <<'PYEOF'
import json, sys
import numpy as np
rng = np.random.RandomState(11)
with open(sys.argv[1], "w") as f:
    for n in rng.randint(20, 120, size=200):
        f.write(json.dumps({"text": " ".join(map(str, rng.randint(0, 250, size=n)))}) + "\n")
PYEOF
  "$bindir/preprocess_data" --input "$data_home/c.jsonl" --output-prefix "$data_home/pile" --tokenizer-type NullTokenizer \
    --vocab-size 250 --append-eod --workers 1 >/dev/null 2>&1 || { bad "data_efficiency_cl: preprocess_data" "failed"; return; }
  local data_path="$data_home/pile_text_document"
  local doc_idx_path="$data_home/pile_text_document_train_indexmap_exact1ep_${seq_len}sl_${seed}s_doc_idx.npy"
  local sample_idx_path="$data_home/pile_text_document_train_indexmap_exact1ep_${seq_len}sl_${seed}s_sample_idx.npy"
  local shuffle_idx_path="$data_home/pile_text_document_train_indexmap_exact1ep_${seq_len}sl_${seed}s_shuffle_idx.npy"
  # ds_analyze_gpt_data_map.sh / _reduce.sh: total_vocab_freq, then vocab_rarity (1 worker, 2 threads)
  local an=(--analyzing-data-type GPT --data-path "$data_path" --split 949,50,1 --tokenizer-type NullTokenizer
            --vocab-size 250 --seq-length $seq_len --train-data-exact-num-epochs 1 --seed $seed --save "$analysis"
            --num-layers 1 --hidden-size 1 --num-attention-heads 1 --analyzing-num-workers 1 --analyzing-worker-id 0
            --analyzing-num-threads 2 --global-batch-size 1000 --data-cache-path "$tmp/index-cache")
  local metric task
  for metric in total_vocab_freq vocab_rarity; do
    for task in map reduce; do
      run 1 analyze_data "${an[@]}" --analyzing-task $task --analyzing-metric $metric
      [ $rc -eq 0 ] || { bad "data_efficiency_cl: analyze_data $task $metric" "$(grep -m2 error <<<"$out")"; return; }
    done
  done
  local config_json="$tmp/ds_config_gbs${global_batch_size}_mbs${batch_size}_log${log_interval}_zero${zero_stage}_seed${seed}_cl_${cl_1st_metric}_${cl_1st_min}_${cl_1st_max}_${cl_1st_total_step}_${cl_1st_root}_${cl_2nd_metric}_${cl_2nd_min}_${cl_2nd_max}_${cl_2nd_total_step}_${cl_2nd_root}.json"
  de_template "data_efficiency_ds_config_gpt_2clmetrics_TEMPLATE.json" >"$config_json"
  local megatron_options=(--override-opt_param-scheduler --adam-beta1 0.9 --adam-beta2 0.95
    --tensor-model-parallel-size ${mp_size} --init-method-std ${init_std} --lr-decay-tokens ${lr_decay_tokens}
    --lr-warmup-tokens ${lr_warmup_tokens} --micro-batch-size ${batch_size} --exit-duration-in-mins 30000000
    --global-batch-size ${global_batch_size} --num-layers ${num_layers} --hidden-size ${hidden_size}
    --num-attention-heads ${num_attn_heads} --seq-length ${seq_len} --max-position-embeddings ${seq_len}
    --train-tokens ${train_tokens} --train-samples ${train_samples} --lr ${lr} --min-lr ${min_lr}
    --lr-decay-style ${lr_decay_style} --split 949,50,1 --log-interval ${log_interval} --eval-interval ${eval_interval}
    --eval-iters ${eval_iters} --save-interval ${save_interval} --weight-decay 0.1 --clip-grad 1.0 --hysteresis 2
    --num-workers ${num_workers} --fp16 --seed ${seed} --tensorboard-queue-size 1 --log-timers-to-tensorboard
    --log-batch-size-to-tensorboard --log-validation-ppl-to-tensorboard --tensorboard-dir ${tensorboard_path}
    --checkpoint-activations --log-optimizer-states-to-tensorboard
    --train-doc-idx-path ${doc_idx_path} --train-sample-idx-path ${sample_idx_path}
    --train-shuffle-idx-path ${shuffle_idx_path} --data-efficiency-curriculum-learning)
  local data_options=(--tokenizer-type NullTokenizer --vocab-size 250 --data-path "$data_path" --data-impl mmap
                      --data-cache-path "$tmp/index-cache")
  local deepspeed_options=(--deepspeed --deepspeed_config ${config_json} --zero-stage ${zero_stage}
    --pipeline-model-parallel-size ${pp_size} --no-pipeline-parallel --deepspeed-activation-checkpointing)
  resumes data_efficiency_cl 1 pretrain_gpt 3 "${megatron_options[@]}" "${data_options[@]}" "${deepspeed_options[@]}"
  local h d
  for d in $(grep -l "Dataset name train" "$tmp"/index-cache/*.dsc); do # the analysis' (the run's .dsc is there too)
    [ -e "${d%.dsc}_shuffle_idx.npy" ] && h=$d
  done
  cmp -s "${h%.dsc}_shuffle_idx.npy" "$shuffle_idx_path" && cmp -s "${h%.dsc}_sample_idx.npy" "$sample_idx_path" &&
    cmp -s "${h%.dsc}_doc_idx.npy" "$doc_idx_path" &&
    ok "data_efficiency_cl: the run's index files are the analyzed epoch's (the analysis names its samples)" ||
    bad "data_efficiency_cl: index files" "differ from the analysis' ($h)"
  local lens
  lens=$(field "$last" "curriculum seqlen")
  # seqlen_truncate: floor(t / 4 * 48 + 16) down to a multiple of 8 = 24 40 52->48 64, then 64
  [ "$lens" = "24 40 48 64 64 64 " ] && ok "data_efficiency_cl: curriculum seqlen 24 40 48 64 64 64 (seqlen_truncate 16 -> 64 over 4 steps by 8)" \
    || bad "data_efficiency_cl: curriculum seqlen" "got '$lens'"
  local n
  n=$(grep -c "^new data cluster (previous_difficulties {'voc': .*) with size [0-9]* generated\.$" <<<"$last")
  [ "$n" -ge 3 ] && ok "data_efficiency_cl: $n vocabulary-rarity clusters as the percentile grows 50 -> 100" \
    || bad "data_efficiency_cl: clusters" "$(grep -m2 "data cluster" <<<"$last")"
  grep -qE "^> data sampling: DeepSpeed's curriculum over 2 metrics, seed 1234, [0-9]+ samples per epoch: voc \(percentile, schedule_based, fixed_root from 50 to 100" <<<"$last" \
    && ok "data_efficiency_cl: the start-up line" || bad "data_efficiency_cl: start-up line" "$(grep -m1 "data sampling" <<<"$last")"
  tb_written data_efficiency_cl "$tmp/decl_tb" "seqlen/curriculum_seqlen"
}

# ---- examples_deepspeed/data_efficiency/bert/pretrain/ds_pretrain_bert_336M_base_script.sh, random-LTD + curriculum --
# The run script's "ltd + CL vocab rarity + seqlen truncation" case: its 24 layers (the template's total_layer_num and
# layer ids 1-22) at hidden 32 and 64 tokens, the 2-metric BERT template as the script fills it, --random-ltd,
# --train-idx-path naming the mapping the analysis built and --data-efficiency-curriculum-learning. The analysis comes
# first, as ds_analyze_bert_data_map.sh / _reduce.sh run it (analyze_data --analyzing-data-type BERT,
# --train-data-exact-num-epochs 5, --return-data-index) on tests/bert's sentence-split corpus; the training run loads
# that epoch's samples mapping from the path the script gives. Scaled: vocabulary rarity 50 -> 100 percent over 4
# steps, seqlen_truncate 32 -> 64 over 4 steps by 8, random-LTD 16 -> 64 over 8 steps.
data_efficiency_bert() {
  local seq_len=64 num_layers=24 hidden_size=32 num_attn_heads=4 global_batch_size=8 batch_size=4 lr=1e-4
  local min_lr=1e-6 init_std=0.02 train_tokens=100000 train_iters=6 lr_warmup_iters=2 lr_decay_tokens=100000
  local lr_decay_style="cosine" mp_size=1 pp_size=1 no_pp="true" zero_stage=0 log_interval=1 eval_iters=1
  local eval_interval=100 save_interval=100 num_workers=0 seed=1234 prescale_grad="true" dropout=0.1
  local ltd_enabled="true" ltd_start=16 ltd_step=8 cl_enabled="true" cl_num_metric=2
  local fx="$tmp/bert_fx" analysis="$tmp/analysis_pile_bert_5epoch"
  local cl_1st_metric="voc" cl_1st_index_to_sample_path="$analysis/vocab_rarity/vocab_rarity_index_to_sample_percentile_merged"
  local cl_1st_index_to_metric_path="$analysis/vocab_rarity/vocab_rarity_index_to_metric"
  local cl_1st_difficulty_type="percentile" cl_1st_clustering_type="schedule_based" cl_1st_min=50 cl_1st_max=100
  local cl_1st_total_step=4 cl_1st_difficulty_step=1 cl_1st_root=2 cl_2nd_metric="seqlen_truncate"
  local cl_2nd_index_to_sample_path="dummy" cl_2nd_index_to_metric_path="dummy" cl_2nd_difficulty_type="value"
  local cl_2nd_clustering_type="single_cluster" cl_2nd_min=32 cl_2nd_max=64 cl_2nd_total_step=4
  local cl_2nd_difficulty_step=8 cl_2nd_root=1
  local tensorboard_path="$tmp/debert_tb" data_cluster_path="$tmp/debert_cluster"
  mkdir -p "$data_cluster_path"
  "$PY" "$here/../bert/make_fixture.py" "$fx" >/dev/null || { bad "data_efficiency_bert: fixture" "failed"; return; }
  "$bindir/preprocess_data" --input "$fx/corpus.jsonl" --output-prefix "$fx/pile_bert_train" --workers 1 \
    --vocab-file "$fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
    || { bad "data_efficiency_bert: preprocess_data" "failed"; return; }
  local data_path="$fx/pile_bert_train_text_sentence" vocab_path="$fx/vocab.txt"
  local train_idx_path="$fx/pile_bert_train_text_sentence_train_indexmap_exact5ep_61msl_0.10ssp_1234s.npy"
  local an=(--analyzing-data-type BERT --analyzing-num-workers 1 --analyzing-worker-id 0 --analyzing-num-threads 2
            --vocab-file "$vocab_path" --data-path "$data_path" --data-impl mmap --tokenizer-type BertWordPieceLowerCase
            --micro-batch-size 100 --global-batch-size 100 --seq-length $seq_len --max-position-embeddings $seq_len
            --num-layers 1 --hidden-size 1 --num-attention-heads 1 --split 949,50,1 --distributed-backend gloo
            --train-data-exact-num-epochs 5 --return-data-index --save-interval 1 --save "$analysis")
  local metric task
  for metric in total_vocab_freq vocab_rarity; do
    for task in map reduce; do
      run 1 analyze_data "${an[@]}" --analyzing-task $task --analyzing-metric $metric
      [ $rc -eq 0 ] || { bad "data_efficiency_bert: analyze_data $task $metric" "$(grep -m2 error <<<"$out")"; return; }
    done
  done
  [ -s "$train_idx_path" ] || { bad "data_efficiency_bert: the analysis' samples mapping" "no $train_idx_path"; return; }
  local config_json="$tmp/ds_config_bert_gbs${global_batch_size}_mbs${batch_size}_ltd_cl.json"
  de_template "data_efficiency_ds_config_bert_2clmetrics_TEMPLATE.json" >"$config_json"
  local megatron_options=(--override-opt_param-scheduler --adam-beta1 0.9 --adam-beta2 0.999
    --tensor-model-parallel-size ${mp_size} --init-method-std ${init_std} --lr-decay-tokens ${lr_decay_tokens}
    --lr-warmup-iters ${lr_warmup_iters} --micro-batch-size ${batch_size} --exit-duration-in-mins 30000000
    --global-batch-size ${global_batch_size} --num-layers ${num_layers} --hidden-size ${hidden_size}
    --num-attention-heads ${num_attn_heads} --seq-length ${seq_len} --max-position-embeddings ${seq_len}
    --train-tokens ${train_tokens} --train-iters ${train_iters} --lr ${lr} --min-lr ${min_lr}
    --lr-decay-style ${lr_decay_style} --split 949,50,1 --log-interval ${log_interval} --eval-interval ${eval_interval}
    --eval-iters ${eval_iters} --save-interval ${save_interval} --weight-decay 1e-2 --clip-grad 1.0
    --num-workers ${num_workers} --fp16 --seed ${seed} --tensorboard-queue-size 1 --log-timers-to-tensorboard
    --log-batch-size-to-tensorboard --log-validation-ppl-to-tensorboard --tensorboard-dir ${tensorboard_path}
    --attention-dropout ${dropout} --hidden-dropout ${dropout} --random-ltd
    --train-idx-path ${train_idx_path} --data-efficiency-curriculum-learning)
  local data_options=(--vocab-file "$vocab_path" --data-path "$data_path" --data-impl mmap)
  local deepspeed_options=(--deepspeed --deepspeed_config ${config_json} --zero-stage ${zero_stage}
    --pipeline-model-parallel-size ${pp_size} --no-pipeline-parallel)
  resumes data_efficiency_bert 1 pretrain_bert 3 "${megatron_options[@]}" "${data_options[@]}" "${deepspeed_options[@]}"
  grep -qF "loading indexed mapping from $train_idx_path" <<<"$last" &&
    ok "data_efficiency_bert: the training samples mapping is the analysis' (--train-idx-path)" ||
    bad "data_efficiency_bert: --train-idx-path" "$(grep -m1 "indexmap" <<<"$last")"
  local lens
  lens=$(field "$last" "curriculum seqlen")
  # seqlen_truncate: floor(t / 4 * 32 + 32) down to a multiple of 8 = 40 48 56 64, then 64 (BERT rounds up to 8)
  [ "$lens" = "40 48 56 64 64 64 " ] && ok "data_efficiency_bert: curriculum seqlen 40 48 56 64 64 64 (seqlen_truncate 32 -> 64)" \
    || bad "data_efficiency_bert: curriculum seqlen" "got '$lens'"
  lens=$(grep -E "^ iteration " <<<"$last" | sed -E 's/.*random ltd reserved length: +([0-9]+).*/\1/' | tr '\n' ' ')
  [ "$lens" = "16 16 16 32 32 32 " ] && ok "data_efficiency_bert: random ltd reserved length 16 16 16 32 32 32" \
    || bad "data_efficiency_bert: random ltd reserved length" "got '$lens'"
  local n
  n=$(grep -c "^new data cluster (previous_difficulties {'voc': .*) with size [0-9]* generated\.$" <<<"$last")
  [ "$n" -ge 2 ] && ok "data_efficiency_bert: $n vocabulary-rarity clusters as the percentile grows 50 -> 100" \
    || bad "data_efficiency_bert: clusters" "$(grep -m2 "data cluster" <<<"$last")"
  tb_written data_efficiency_bert "$tensorboard_path" "seqlen/curriculum_seqlen" "seqlen/random_ltd_reserved_length"
}

# ---- scripts run without what they need (a teacher checkpoint, a ds_config block): refused by name, nothing written ----
refused() {
  local base=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
              --micro-batch-size 2 --global-batch-size 8 --train-iters 2 --lr 1e-4 --mock-data --save "$tmp/never")
  # refused_with NAME TEXT ARGS...: pretrain_gpt ARGS exits non-zero printing TEXT, and no file or folder appears
  # under $tmp (the working directory, --save and the scripts' checkpoint and TensorBoard folders)
  refused_with() {
    local name="$1" text="$2" before after
    shift 2
    before=$(find "$tmp" | sort)
    run 1 pretrain_gpt "$@"
    after=$(find "$tmp" | sort)
    if [ $rc -ne 0 ] && grep -qF -- "$text" <<<"$out" && [ "$after" = "$before" ]; then
      ok "$name: refused naming \"$text\" ($(grep -m1 error <<<"$out" | cut -c1-110))"
    elif [ "$after" != "$before" ]; then
      bad "$name" "exit $rc; it wrote: $(comm -13 <(echo "$before") <(echo "$after") | head -3 | tr '\n' ' ')"
    else
      bad "$name" "exit $rc, expected a refusal naming \"$text\": $(grep -m2 -iE "error" <<<"$out")"
    fi
  }
  # expect NAME "WORK TEXT" FLAGS...: the tiny base options with FLAGS, refused naming the work
  expect() {
    local name="$1" work="$2"
    shift 2
    refused_with "$name" "$work" "${base[@]}" "$@"
  }
  # MoE/ds_pretrain_gpt_350M_PR-MoE32or64_MoS.sh: the student of Mixture-of-Students (PR-MoE, --mos with its teacher
  # flags); it distills from a trained teacher in tests/moe's kd_train. Here its --load-teacher names the script's
  # teacher run, which is not there: refused before any work
  expect "MoE/ds_pretrain_gpt_350M_PR-MoE32or64_MoS without its teacher's checkpoint" \
    "--mos: --load-teacher /nonexistent/gpt-1.3B-teacher: no checkpoint there" \
    --num-experts 2 --mlp-type residual --moe-loss-coeff 0.01 --create-moe-param-group --mos --kd-beta-ce 1 \
    --num-layers-teacher 4 --num-experts-teacher 2 2 --hidden-size-teacher 64 --num-attention-heads-teacher 4 \
    --load-teacher /nonexistent/gpt-1.3B-teacher
  # data_efficiency/gpt/pretrain/ds_pretrain_gpt_1.3B_dense_base_script.sh runs (family data_efficiency_cl); its flag
  # without the ds_config's data_sampling block is refused naming the block
  expect "data_efficiency: --data-efficiency-curriculum-learning without its ds_config block" \
    "--data-efficiency-curriculum-learning needs the ds_config's data_efficiency.data_sampling.curriculum_learning block" \
    --data-efficiency-curriculum-learning
  # random-LTD runs (tests/random_ltd), with its ds_config block: --random-ltd alone is refused naming the block
  expect "data_efficiency: --random-ltd without its ds_config block" \
    "--random-ltd needs the ds_config's data_efficiency.data_routing.random_ltd block" --random-ltd
}

# ---- examples_deepspeed/sequence_parallel/ds_pretrain_gpt_6.7B_fpdt_32k.sh (DeepSpeed FPDT) ----
# Its whole option list at tiny sizes (validation every 3 iterations, so that each run's TensorBoard file has it, as
# the rebase families): FPDT over 4 sequence-parallel ranks (chunks of 16 of the 64 tokens, offloading:
# in host memory already on the CPU), fp16, ZeRO-3, rotary on a quarter of each head, the token-based schedule; run
# straight, then stopped and rerun on its folder; and against plain DeepSpeed-Ulysses with the same options (the
# script's dropouts are 0, so FPDT's layers without hidden dropout change nothing: the same losses to 1e-3, the
# chunked attention rounding otherwise in fp16).
fpdt() {
  need_mpi
  local name=fpdt_6.7B seq_len=64 sp_size=4 zero_stage=3 batch_size=2 global_batch_size=8 prescale_grad="false"
  local config_json="ds_config_gbs${global_batch_size}_mbs${batch_size}_log1_zero${zero_stage}.json"
  sed "s/GBSIZE/${global_batch_size}/" "$here/templates/rebase_ds_config_gpt_TEMPLATE.json" | sed "s/MBSIZE/${batch_size}/" \
    | sed "s/LOG_INTERVAL/1/" | sed "s/ZERO_STAGE/${zero_stage}/" | sed "s/PRESCALE_GRAD/${prescale_grad}/" >"$config_json"
  local fpdt_flags=(--ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 16 --ds-sequence-parallel-fpdt-offloading)
  local common=(--override-opt_param-scheduler --adam-beta1 0.9 --adam-beta2 0.95 --tensor-model-parallel-size 1
    --ds-sequence-parallel-size $sp_size --init-method-std 0.009 --lr-decay-tokens 3072 --lr-warmup-tokens 512
    --micro-batch-size $batch_size --exit-duration-in-mins 30000000 --global-batch-size $global_batch_size
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length $seq_len --max-position-embeddings $seq_len
    --train-tokens 3072 --train-samples 96 --lr 1.2e-4 --min-lr 1.0e-6 --lr-decay-style cosine --split 949,50,1
    --log-interval 1 --eval-interval 3 --eval-iters 1 --save-interval 100 --weight-decay 0.1 --attention-dropout 0.0
    --hidden-dropout 0.0 --clip-grad 1.0 --hysteresis 2 --num-workers 0 --fp16 --seed 1234
    --no-async-tensor-model-parallel-allreduce
    --use-flash-attn-v2 --tensorboard-queue-size 1 --use-rotary-position-embeddings --rotary-percent 0.25
    --rotary-position-embeddings-theta 100000000 --log-timers-to-tensorboard --log-batch-size-to-tensorboard
    --log-validation-ppl-to-tensorboard --tensorboard-dir "$tmp/output/tensorboard/fpdt" --checkpoint-activations
    --log-optimizer-states-to-tensorboard --mock-data --data-impl mmap
    --deepspeed --deepspeed_config "$config_json" --zero-stage $zero_stage --pipeline-model-parallel-size 1
    --no-pipeline-parallel --deepspeed-activation-checkpointing --checkpoint-in-cpu)
  resumes $name 4 pretrain_gpt 3 "${fpdt_flags[@]}" "${common[@]}"
  local fpdt_run=$last
  [ "$(grep -cE "^ iteration +[0-9]+/" <<<"$fpdt_run")" -eq 6 ] \
    && ok "$name: --train-tokens 3072 ends training after 6 iterations of 512 tokens" \
    || bad "$name: --train-tokens" "$(grep -cE "^ iteration +[0-9]+/" <<<"$fpdt_run") iterations (expected 6)"
  grep -qE "^  ds_sequence_parallel_fpdt \.+ True$" <<<"$fpdt_run" \
    && grep -qE "^  ds_sequence_parallel_fpdt_chunk_size \.+ 16$" <<<"$fpdt_run" \
    && grep -qE "^  ds_sequence_parallel_fpdt_offloading \.+ True$" <<<"$fpdt_run" \
    && ok "$name: the argument dump has FPDT on, chunks of 16, offloading" \
    || bad "$name: argument dump" "$(grep -E "^  ds_sequence_parallel" <<<"$fpdt_run")"
  tb_written $name "$tmp/output/tensorboard/fpdt" "lm loss" "learning-rate" "batch-size" "lm loss validation ppl"
  run 4 pretrain_gpt "${common[@]}" --load "$tmp/ckpt_plain_sp" --save "$tmp/ckpt_plain_sp"
  if [ $rc -eq 0 ] && [ "$(field "$fpdt_run" "lm loss" | wc -w)" -eq 6 ] \
     && close "$(field "$fpdt_run" "lm loss")" "$(field "$out" "lm loss")" 1e-3; then
    ok "$name: FPDT trains plain DeepSpeed-Ulysses's lm losses ($(field "$fpdt_run" "lm loss" | cut -d' ' -f1,6))"
  else
    bad "$name: against Ulysses" "exit $rc: FPDT '$(field "$fpdt_run" "lm loss")', Ulysses '$(field "$out" "lm loss")'"
  fi
}

# ---- examples_deepspeed/universal_checkpointing/llama/run_llama_bf16.sh, then run_universal_llama_bf16.sh ----
# The Llama flags (RMSNorm, SwiGLU, no linear biases, rotary embeddings, untied output layer, no query-key layer
# scaling) and the scripts' whole option lists at tiny sizes (TP 2 x PP 2, ZeRO-1, bf16, data from --mock-data):
# run_llama_bf16 at DP 2 stops at iteration 3 (its DEBUG_MODE --exit-interval) with a checkpoint, run_universal_llama
# _bf16 at DP 1 resumes it with --universal-checkpoint for iterations 4-6. Then pretrain_llama2_distributed.sh (GQA).
llama() {
  need_mpi
  local step TP=2 PP=2 DP SP=1 GLOBAL_BATCH=8 WORLD_SIZE MICRO_BATCH DS_CONFIG="$tmp/deepspeed.json" exit_interval
  local ck="$tmp/z1_uni_ckpt/checkpoints/llama/z1/bf16/tp2_pp2_dp2_sp1_toy"
  for step in run_llama_bf16 run_universal_llama_bf16; do
    if [ $step = run_llama_bf16 ]; then DP=2 exit_interval=3; else DP=1 exit_interval=6; fi
    WORLD_SIZE=$((TP * PP * DP * SP)) MICRO_BATCH=$((GLOBAL_BATCH / WORLD_SIZE))
    cat <<EOT >"$DS_CONFIG"
{
  "train_batch_size" : $GLOBAL_BATCH,
  "train_micro_batch_size_per_gpu": $MICRO_BATCH,
  "steps_per_print": 1,

  "zero_optimization": {
    "stage": 1
  },

  "bf16": {
    "enabled": true
  },

  "wall_clock_breakdown" : false
}
EOT
    local llama_options=(--tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP --ds-sequence-parallel-size $SP
      --num-layers 4 --hidden-size 64 --ffn-hidden-size 172 --num-attention-heads 4 --micro-batch-size $MICRO_BATCH
      --global-batch-size $GLOBAL_BATCH --seq-length 64 --max-position-embeddings 64 --train-iters 6
      --save "$tmp/z1_uni_ckpt/checkpoints/llama/z1/bf16/tp${TP}_pp${PP}_dp${DP}_sp${SP}_toy" --load "$ck"
      --mock-data --data-impl mmap --split 949,50,1 --distributed-backend nccl --lr 3e-4 --lr-decay-style cosine
      --min-lr 3e-5 --weight-decay 0.1 --clip-grad 1 --lr-warmup-iters 2 --optimizer adam --adam-beta1 0.9
      --adam-beta2 0.95 --log-interval 1 --save-interval 100 --eval-interval 10 --eval-iters 1 --exit-interval $exit_interval
      --bf16 --no-query-key-layer-scaling --attention-dropout 0 --hidden-dropout 0 --use-rotary-position-embeddings
      --untie-embeddings-and-output-weights --swiglu --normalization rmsnorm --disable-bias-linear
      --tensorboard-dir "$tmp/z1_uni_ckpt/tensorboard/llama/$step" --zero-stage=1 --deepspeed_config="$DS_CONFIG"
      --deepspeed)
    if [ $step = run_universal_llama_bf16 ]; then llama_options+=(--universal-checkpoint); fi
    run "$WORLD_SIZE" pretrain_gpt "${llama_options[@]}"
    if [ $rc -ne 0 ]; then bad "llama: $step" "exit $rc: $(grep -m3 -iE "error" <<<"$out")"; return; fi
    if [ $step = run_llama_bf16 ]; then
      [ -d "$ck/global_step3" ] && grep -qE "^ iteration +3/" <<<"$out" \
        && ok "llama: run_llama_bf16 trained 3 iterations at TP 2 x PP 2 x DP 2 and saved global_step3 ($(field "$out" "lm loss"))" \
        || bad "llama: run_llama_bf16" "no $ck/global_step3: $(grep -E "^ iteration|error" <<<"$out" | head -4)"
      grep -qE "^  swiglu \.+ True$" <<<"$out" && grep -qE "^  normalization \.+ rmsnorm$" <<<"$out" \
        && grep -qE "^  add_bias_linear \.+ False$" <<<"$out" && grep -qE "^  ffn_hidden_size \.+ 172$" <<<"$out" \
        && ok "llama: the argument dump has swiglu, rmsnorm, no linear biases and the script's --ffn-hidden-size 172" \
        || bad "llama: argument dump" "$(grep -E "swiglu|normalization|add_bias_linear|ffn_hidden" <<<"$out")"
    else
      grep -qE "^ iteration +4/" <<<"$out" && grep -qE "^ iteration +6/" <<<"$out" && ! grep -qE "^ iteration +[123]/" <<<"$out" \
        && ok "llama: run_universal_llama_bf16 resumed the DP-2 checkpoint at DP 1, iterations 4-6 ($(field "$out" "lm loss"))" \
        || bad "llama: universal resume" "$(grep -E "^ iteration|error" <<<"$out" | head -4)"
    fi
  done
  # examples_deepspeed/pretrain_llama2_distributed.sh: the same Llama flags with grouped-query attention
  # (--num-key-value-heads; 2 for the 4 heads here), TP 2 x PP 2, ZeRO-0, bf16; its data and SentencePiece tokenizer
  # replaced by --mock-data
  cat <<EOT >"$DS_CONFIG"
{
  "train_batch_size" : 8,
  "train_micro_batch_size_per_gpu": 4,
  "steps_per_print": 1,
  "zero_optimization": {
    "stage": 0
  },
  "bf16": {
    "enabled": true
  }
}
EOT
  local l2="$tmp/llama2"
  local llama2_options=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers 4 --hidden-size 64
    --ffn-hidden-size 172 --num-attention-heads 4 --micro-batch-size 4 --global-batch-size 8 --seq-length 64
    --max-position-embeddings 64 --train-iters 3 --save "$l2" --load "$l2" --mock-data --data-impl mmap
    --split 949,50,1 --distributed-backend nccl --lr 3e-4 --lr-decay-style cosine --min-lr 3e-5 --weight-decay 0.1
    --clip-grad 1 --lr-warmup-iters 2 --optimizer adam --adam-beta1 0.9 --adam-beta2 0.95 --log-interval 1
    --save-interval 10000 --eval-interval 1000 --eval-iters 1 --bf16 --no-query-key-layer-scaling --attention-dropout 0
    --hidden-dropout 0 --use-rotary-position-embeddings --untie-embeddings-and-output-weights --swiglu
    --normalization rmsnorm --disable-bias-linear --num-key-value-heads 2 --zero-stage=0 --deepspeed_config="$DS_CONFIG"
    --deepspeed)
  run 4 pretrain_gpt "${llama2_options[@]}"
  [ $rc -eq 0 ] && grep -qE "^ iteration +3/" <<<"$out" && grep -qE "^  num_key_value_heads \.+ 2$" <<<"$out" \
    && ok "llama: pretrain_llama2_distributed.sh (grouped-query attention, TP 2 x PP 2) trained 3 iterations ($(field "$out" "lm loss"))" \
    || bad "llama: pretrain_llama2_distributed" "exit $rc: $(grep -E "^ iteration|error|num_key_value" <<<"$out" | head -4)"
}

# data_efficiency/bert/finetune/ds_finetune_bert_{mnli,qqp,race}.sh: finetune_bert (tasks/main.py) with the scripts'
# options and ds_config template (fp16 with DeepSpeed's dynamic loss scaler, ZeRO 0, prescaled gradients,
# --finetune, --no-pipeline-parallel) from a pretrain_bert checkpoint, on tests/finetune/make_tasks.py's files;
# a rerun of the script (which passes --save, not --load) trains the same again
bert_finetune() {
  local seq_len=32 num_layers=2 hidden_size=32 num_attn_heads=4 mp_size=1 pp_size=1 no_pp="true" zero_stage=0
  local log_interval=2 eval_iters=1 eval_interval=6 save_interval=500000 seed=1234 activation_checkpoint="false"
  local fx="$tmp/ft_fx" tasks="$tmp/ft_tasks" pretrained_checkpoint="$tmp/bert-pile-tiny"
  "$PY" "$here/../bert/make_fixture.py" "$fx" >/dev/null || { bad "bert_finetune: fixture" "failed"; return; }
  "$PY" "$here/../finetune/make_tasks.py" "$tasks" >/dev/null || { bad "bert_finetune: tasks" "failed"; return; }
  "$bindir/preprocess_data" --input "$fx/corpus.jsonl" --output-prefix "$fx/pile_bert_train" --workers 1 \
    --vocab-file "$fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
    || { bad "bert_finetune: preprocess_data" "failed"; return; }
  local vocab_file="$fx/vocab.txt"
  run 1 pretrain_bert --num-layers $num_layers --hidden-size $hidden_size --num-attention-heads $num_attn_heads \
    --seq-length $seq_len --max-position-embeddings $seq_len --micro-batch-size 8 --global-batch-size 8 --lr 1e-3 \
    --train-iters 20 --log-interval 10 --eval-interval 20 --eval-iters 1 --split 949,50,1 \
    --data-path "$fx/pile_bert_train_text_sentence" --vocab-file "$vocab_file" --save "$pretrained_checkpoint"
  [ $rc -eq 0 ] || { bad "bert_finetune: the pretrained checkpoint" "$(grep -m2 error <<<"$out")"; return; }
  local task global_batch_size batch_size lr epochs train_data valid_data
  for task in MNLI QQP RACE; do
    case $task in
      MNLI) global_batch_size=8 batch_size=8 lr=2e-3 epochs=4 train_data="$tasks/MNLI/train.tsv"
            valid_data="$tasks/MNLI/dev_matched.tsv $tasks/MNLI/dev_mismatched.tsv" ;;
      QQP) global_batch_size=8 batch_size=8 lr=2e-3 epochs=3 train_data="$tasks/QQP/train.tsv"
           valid_data="$tasks/QQP/dev.tsv" ;;
      RACE) global_batch_size=2 batch_size=2 lr=1e-3 epochs=2 train_data="$tasks/RACE/train/middle"
            valid_data="$tasks/RACE/dev/middle" ;;
    esac
    local jobname="${task}-bsz${global_batch_size}-lr${lr}-epochs${epochs}-seed${seed}"
    local checkpoint_path="${pretrained_checkpoint}-finetune/${jobname}"
    mkdir -p "${checkpoint_path}"
    local config_json="$tmp/ds_config_bert_bsz${global_batch_size}_mbsz${batch_size}_log${log_interval}_zero${zero_stage}.json"
    sed "s/CONFIG_BATCH_SIZE/${global_batch_size}/" "$here/templates/data_efficiency_finetune_ds_config_bert_TEMPLATE.json" \
      | sed "s/CONFIG_MBSIZE/${batch_size}/" \
      | sed "s/LOG_INTERVAL/${log_interval}/" \
      | sed "s/ZERO_STAGE/${zero_stage}/" \
      | sed "s/PRESCALE_GRAD/true/" \
      | sed "s/CONFIG_FP16_ENABLED/true/" \
      | sed "s/CONFIG_BF16_ENABLED/false/" \
      > ${config_json}
    # shellcheck disable=SC2206
    local options=(--finetune --deepspeed --deepspeed_config ${config_json} --zero-stage ${zero_stage} --task ${task}
      --seed ${seed} --train-data ${train_data} --valid-data ${valid_data} --tokenizer-type BertWordPieceLowerCase
      --vocab-file ${vocab_file} --epochs ${epochs} --pretrained-checkpoint ${pretrained_checkpoint}
      --tensor-model-parallel-size ${mp_size} --pipeline-model-parallel-size ${pp_size} --num-layers ${num_layers}
      --hidden-size ${hidden_size} --num-attention-heads ${num_attn_heads} --global-batch-size ${global_batch_size}
      --micro-batch-size ${batch_size} --lr ${lr} --lr-decay-style linear --lr-warmup-fraction 0.065
      --seq-length ${seq_len} --max-position-embeddings ${seq_len} --save-interval ${save_interval}
      --save ${checkpoint_path} --log-interval ${log_interval} --eval-interval ${eval_interval}
      --eval-iters ${eval_iters} --weight-decay 1.0e-1 --fp16)
    [ "${activation_checkpoint}" = "true" ] && options+=(--checkpoint-activations --deepspeed-activation-checkpointing)
    [ "${no_pp}" = "true" ] && options+=(--no-pipeline-parallel)
    run 1 finetune_bert "${options[@]}"
    local first_out="$out" first_rc=$rc
    run 1 finetune_bert "${options[@]}"
    local acc
    acc=$(grep -F "| overall:" <<<"$first_out" | sed -E 's/.*= ([0-9.]+) %$/\1/' | tr '\n' ' ')
    if [ $first_rc -eq 0 ] && [ "$(wc -w <<<"$acc")" -eq $epochs ] && grep -qE "^ iteration .* loss scale: 2048\.0 \|" <<<"$first_out" \
       && [ -d "${checkpoint_path}/global_step$(grep -E "^ iteration " <<<"$first_out" | tail -1 | sed -E 's/^ iteration +([0-9]+)\/.*/\1/')" ] \
       && [ "$(grep -E "^ iteration |overall" <<<"$first_out" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second.*//')" \
          = "$(grep -E "^ iteration |overall" <<<"$out" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second.*//')" ]; then
      ok "bert_finetune: ds_finetune_bert_${task,,}.sh (fp16, loss scale 2048) trained $epochs epochs, accuracy by epoch: $acc%; its rerun the same"
    else
      bad "bert_finetune: ds_finetune_bert_${task,,}.sh" "rc=$first_rc/$rc acc '$acc' $(grep -m3 -E "error|loss scale" <<<"$first_out")"
    fi
  done
}

case "$family" in
  rebase | megatron_checkpointing | moe_dense | moe_experts | moe_experts_ep | moe_dense_cl | compression | offload_pp | universal_checkpointing | bert_with_pile \
  | t5 | curriculum_learning | data_efficiency_ltd | data_efficiency_cl | data_efficiency_bert | bert_finetune | llama \
  | refused) "$family" ;;
  sequence_parallel_fpdt) fpdt ;;
  sequence_parallel) rebase seq_parallel ;;
  sequence_parallel_30B) rebase seq_parallel_30B ;;
  rebase_flashattn) rebase flashattn ;;
  rebase_rope) rebase rope ;;
  long_seq_support) rebase long_seq ;;
  zero_bubble) rebase zbh1 ;;
  *) echo "unknown family $family"; exit 2 ;;
esac
echo "examples $family: $pass passed, $fail failed"
[ $fail -eq 0 ]
