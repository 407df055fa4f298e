#!/usr/bin/env bash
# pretrain_gpt with DeepSpeed MoE layers (docs/moe.md): a 4-layer GPT with 4 experts in layers 2 and 4 (Megatron's
# --expert-interval 2), 12 iterations, dropout on:
#   1. the log line carries "moe loss" (the weighted load-balancing losses, ~coeff x 1 for a balanced gate); MoE
#      changes the losses; the same --seed is the same run; top-1, top-2, top-3, no dropping, Residual MoE with a
#      pyramid (--num-experts 2 4 at --expert-interval 1), the noisy gate policies and --bf16 train;
#   2. a checkpoint at 6 resumed to 12 continues bit for bit, and holds every expert under DeepSpeed's names, each in
#      its own file as DeepSpeed's _save_moe_checkpoint lays them out;
#   3. full recompute = without; under mpirun DP=2, ZeRO-2 / ZeRO-3 at DP=2, TP=2 and TP=2 with --sequence-parallel,
#      PP=2 and PP=4 interleaved with recompute = one process (1e-5), a TP=2 checkpoint resumed in one process;
#      --enable-expert-tensor-parallelism (with SP, Residual MoE, SwiGLU x EP=2) = one process, the rank's parameters
#      fewer by half the experts', its checkpoints resumed whole and whole ones resumed split;
#      expert parallelism: EP=2 and EP=4 (dropping and no dropping), EP x TP with --sequence-parallel, EP x PP, EP with
#      ZeRO-1/2/3 = one process (1e-5), bf16 to its precision, the all-to-all in the comms log; without ZeRO and
#      under ZeRO-1/2 each rank holds only its experts (the memory plan shrinks), under ZeRO-3 all; checkpoints
#      resumed across expert-parallel sizes, and from EP=2 x DP=4 (each expert's state shared by two ranks, without
#      ZeRO and under ZeRO-2) into EP=4, ZeRO-2 and one process;
#   4. refusals before any work, naming the flag and the numbers.
# The gate, experts and gradients against PyTorch are tests/parity's moe_parity.
# Usage: test_moe_train.sh PRETRAIN_GPT PRETRAIN_BERT INSPECT_CHECKPOINT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1" bert="$2" inspect="$3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
tiny=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 128 --make-vocab-size-divisible-by 64
      --lr 3e-3 --train-iters 12 --log-interval 1 --eval-iters 2 --eval-interval 6 --seed 1234)
moe=(--num-experts 4 --topk 2 --moe-loss-coeff 0.01)
run() { timeout 300 "$bin" "${tiny[@]}" "$@" 2>&1; }
mpirun_n() { timeout 300 "${mpi[@]}" -np "$1" "$bin" "${tiny[@]}" "${@:2}" 2>&1; }
losses() { field "$1" "lm loss"; }
moel() { field "$1" "moe loss"; }
vals() { grep -F "validation loss at" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*moe loss value: ([0-9.E+-]+).*/\1 \2/' | tr '\n' ' '; }
same() { # NAME A B TOL: 12 equal lm and moe losses, grad norms and validation values
  if [ "$(losses "$2" | wc -w)" -eq 12 ] && close "$(losses "$2")" "$(losses "$3")" "$4" \
     && close "$(moel "$2")" "$(moel "$3")" "$4" && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 2e-3 \
     && close "$(vals "$2")" "$(vals "$3")" "$4"; then
    ok "$1 (last lm loss $(losses "$3" | awk '{print $NF}'), moe loss $(moel "$3" | awk '{print $NF}'))"
  else
    bad "$1" "$(losses "$2") / $(moel "$2") vs $(losses "$3") / $(moel "$3"); $(grep -m2 -i error <<<"$2$3")"
  fi
}
trains() { # NAME OUT: 12 iterations with finite lm and moe losses, the moe loss within (0, 1) (coefficient 0.01)
  local l m
  l=$(losses "$2") m=$(moel "$2")
  if [ "$(wc -w <<<"$l")" -eq 12 ] && [ "$(wc -w <<<"$m")" -eq 12 ] && ! grep -qi nan <<<"$l$m" \
     && awk -v m="$m" 'BEGIN { n = split(m, x, " "); for (i = 1; i <= n; i++) if (!(x[i] > 0 && x[i] < 1)) exit 1 }'; then
    ok "$1 trains (lm loss $(awk '{print $1, "->", $NF}' <<<"$l"), moe loss $(awk '{print $NF}' <<<"$m"))"
  else bad "$1 trains" "lm '$l' moe '$m'; $(grep -m2 -i error <<<"$2")"; fi
}

# 1. the log line, effect, seeds, variants
base=$(run "${moe[@]}")
dense=$(run)
trains "top-2, 4 experts in layers 2 and 4" "$base"
grep -q "moe loss" <<<"$dense" && bad "a dense model logs no moe loss" "$(grep -m1 'moe loss' <<<"$dense")" \
  || ok "a dense model logs no moe loss"
close "$(losses "$dense")" "$(losses "$base")" 1e-4 && bad "MoE changes the losses" "same as dense" \
  || ok "MoE changes the losses"
[ "$(losses "$(run "${moe[@]}")")" = "$(losses "$base")" ] && ok "the same --seed: the same run, bit for bit" \
  || bad "the same --seed: the same run" "differs"
trains "top-1 (Random Token Selection)" "$(run --num-experts 4 --moe-loss-coeff 0.01)"
trains "top-3 of 4" "$(run --num-experts 4 --topk 3 --moe-loss-coeff 0.01)"
nodrop=$(run "${moe[@]}" --disable-moe-token-dropping --moe-train-capacity-factor 0.5)
drop=$(run "${moe[@]}" --moe-train-capacity-factor 0.5)
trains "--disable-moe-token-dropping" "$nodrop"
close "$(losses "$nodrop")" "$(losses "$drop")" 1e-6 && bad "no dropping differs from dropping at capacity factor 0.5" "same" \
  || ok "no dropping differs from dropping at capacity factor 0.5"
trains "Residual MoE with a pyramid (--num-experts 2 4 --expert-interval 1 --mlp-type residual)" \
  "$(run --num-experts 2 2 4 4 --expert-interval 1 --mlp-type residual --moe-loss-coeff 0.01)"
jit=$(run --num-experts 4 --moe-loss-coeff 0.01 --noisy-gate-policy Jitter)
trains "--noisy-gate-policy Jitter" "$jit"
grep -qE "^  noisy_gate_policy \.+ Jitter$" <<<"$jit" && grep -qE "^  noisy_gate_policy \.+ None$" <<<"$base" \
  && ok "noisy_gate_policy in the argument dump (so the ranks' agreement check covers it)" \
  || bad "noisy_gate_policy in the argument dump" "$(grep -m1 noisy_gate <<<"$jit")"
trains "--noisy-gate-policy RSample" "$(run --num-experts 4 --moe-loss-coeff 0.01 --noisy-gate-policy RSample)"
trains "--bf16" "$(run "${moe[@]}" --bf16)"

# 2. resume bit for bit, the experts in the checkpoint
mkdir -p "$tmp/ck"
run "${moe[@]}" --save "$tmp/ck" --save-interval 6 --exit-interval 6 >"$tmp/save.log"
res=$(run "${moe[@]}" --load "$tmp/ck" --save "$tmp/ck" --save-interval 100)
a=$(losses "$base" | cut -d' ' -f7-12) b=$(losses "$res") am=$(moel "$base" | cut -d' ' -f7-12) bm=$(moel "$res")
[ -n "$b" ] && [ "$(echo $a)" = "$(echo $b)" ] && [ "$(echo $am)" = "$(echo $bm)" ] \
  && ok "a checkpoint at 6 resumed to 12: lm and moe losses bit for bit" \
  || bad "resume bit for bit" "uninterrupted '$a' / '$am'; resumed '$b' / '$bm'"
files=$(ls "$tmp/ck/global_step6" | grep -cE "^layer_[01]_expert_[0-3]_mp_rank_00_model_states\.h5$")
[ "$files" = 8 ] && ok "DeepSpeed's MoE layout: one file per MoE layer and expert (layer_<0-1>_expert_<0-3>_mp_rank_00)" \
  || bad "the per-expert files" "$files of 8: $(ls "$tmp/ck/global_step6" | tr '\n' ' ')"
# a checkpoint of earlier builds (the experts inside mp_rank_00_model_states) still loads, to the same run
if "${ZT_PYTHON3:-python3}" -c "import h5py, numpy" 2>/dev/null; then
  mkdir -p "$tmp/old" && cp -r "$tmp/ck/global_step6" "$tmp/old/" && echo global_step6 >"$tmp/old/latest"
  conv=$("${ZT_PYTHON3:-python3}" "$(dirname "$0")/old_moe_layout.py" "$tmp/old/global_step6" 2>&1)
  old=$(losses "$(run "${moe[@]}" --load "$tmp/old")")
  [ -n "$old" ] && [ "$(echo $old)" = "$(echo $b)" ] && ! ls "$tmp/old/global_step6" | grep -q "^layer_" \
    && ok "a checkpoint with the experts inside the model states (earlier builds: $conv) resumes to the same losses" \
    || bad "the earlier MoE checkpoint layout" "$conv; '$old' vs '$b'"
else
  echo "SKIP the earlier MoE checkpoint layout: h5py/numpy not available"
fi
names=$("$inspect" "$tmp/ck" --tag global_step6 2>&1 | grep -c "deepspeed_moe")
want=$((2 * (1 + 4 * 4)))
[ "$names" = "$want" ] && ok "the checkpoint holds the 2 routers and 2 x 4 experts' 4 tensors under DeepSpeed's names ($names)" \
  || bad "the experts in the checkpoint" "$names datasets named deepspeed_moe, want $want"
tools=$(dirname "$bin")
z=$("$tools/zero_to_fp32" "$tmp/ck" "$tmp/fp32" 2>&1)
n=$(grep -oE "with [0-9]+ params" <<<"$z" | grep -oE "[0-9]+")
[ "$n" = $((2 + 4 * 12 + 2 + 2 * (1 + 4 * 4 - 4))) ] && ok "zero_to_fp32 writes every parameter, the experts included ($n)" \
  || bad "zero_to_fp32 of an MoE checkpoint" "$z"
out=$("$tools/export_hf" "$tmp/ck" "$tmp/hf" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "belongs to an MoE layer" <<<"$out" && [ ! -e "$tmp/hf" ] \
  && ok "export_hf refuses an MoE checkpoint (GPT2LMHeadModel has no experts), writing nothing" \
  || bad "export_hf of an MoE checkpoint" "rc=$rc $(tail -1 <<<"$out")"

# 3. recompute and the data-parallel layouts
same "--checkpoint-activations = without" "$base" "$(run "${moe[@]}" --checkpoint-activations)" 1e-6
if command -v mpirun >/dev/null; then
  same "DP=2 = one process" "$base" "$(mpirun_n 2 "${moe[@]}")" 1e-5
  for z in 0 2 3; do
    printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": %d}}\n' "$z" \
      >"$tmp/z$z.json"
  done
  ds0=$(run "${moe[@]}" --deepspeed --deepspeed_config "$tmp/z0.json")
  for z in 2 3; do
    same "ZeRO-$z at DP=2 = one process" "$ds0" "$(mpirun_n 2 "${moe[@]}" --deepspeed --deepspeed_config "$tmp/z$z.json")" 1e-5
  done
  same "TP=2 (every rank the whole MoE layer) = one process" "$base" \
    "$(mpirun_n 2 "${moe[@]}" --tensor-model-parallel-size 2)" 1e-5
  same "TP=2 with --sequence-parallel (tokens gathered for the gate) = one process" "$base" \
    "$(mpirun_n 2 "${moe[@]}" --tensor-model-parallel-size 2 --sequence-parallel)" 1e-5
  mkdir -p "$tmp/tp"
  mpirun_n 2 "${moe[@]}" --tensor-model-parallel-size 2 --save "$tmp/tp" --save-interval 6 --exit-interval 6 >/dev/null
  r1=$(run "${moe[@]}" --load "$tmp/tp")
  a=$(losses "$base" | cut -d' ' -f7-12) b=$(losses "$r1")
  [ -n "$b" ] && close "$a" "$b" 1e-5 && ok "a TP=2 checkpoint at 6 resumed in one process to 12 = the uninterrupted run (1e-5)" \
    || bad "TP=2 checkpoint resumed in one process" "'$a' vs '$b'"
  # --enable-expert-tensor-parallelism: each expert's MLP split over the tensor-parallel ranks as the dense MLP's
  etp=(--tensor-model-parallel-size 2 --enable-expert-tensor-parallelism)
  whole=$(mpirun_n 2 "${moe[@]}" --tensor-model-parallel-size 2) split=$(mpirun_n 2 "${moe[@]}" "${etp[@]}")
  same "TP=2 with --enable-expert-tensor-parallelism (each expert's FFN split) = one process" "$base" "$split" 1e-5
  same "TP=2 + --sequence-parallel with --enable-expert-tensor-parallelism = one process" "$base" \
    "$(mpirun_n 2 "${moe[@]}" "${etp[@]}" --sequence-parallel)" 1e-5
  res=(--num-experts 2 4 --mlp-type residual)
  same "Residual MoE (its dense branch split too) at TP=2 with --enable-expert-tensor-parallelism = one process" \
    "$(run "${res[@]}" --moe-loss-coeff 0.01)" "$(mpirun_n 2 "${res[@]}" --moe-loss-coeff 0.01 "${etp[@]}")" 1e-5
  same "SwiGLU experts without linear biases: EP=2 x TP=2 + SP, experts split over TP (4 ranks) = one process" \
    "$(run "${moe[@]}" --swiglu --disable-bias-linear)" "$(mpirun_n 4 "${moe[@]}" --swiglu --disable-bias-linear \
       --moe-expert-parallel-size 2 "${etp[@]}" --sequence-parallel)" 1e-5
  np() { grep -oE "model parallel rank \(1, 0\): [0-9]+" <<<"$1" | grep -oE "[0-9]+$"; }
  # 2 MoE layers x 4 experts, each giving up half of dense_h_to_4h (weight and bias) and of dense_4h_to_h's weight
  [ -n "$(np "$whole")" ] && [ "$(np "$split")" = $(($(np "$whole") - 8 * (64 * 128 + 128 + 64 * 128))) ] \
    && ok "--enable-expert-tensor-parallelism: a tensor-parallel rank holds $(np "$split") parameters, not $(np "$whole")" \
    || bad "the experts' parameters split over TP" "$(np "$whole") -> $(np "$split")"
  mkdir -p "$tmp/etp" "$tmp/etp1"
  mpirun_n 2 "${moe[@]}" "${etp[@]}" --save "$tmp/etp" --save-interval 6 --exit-interval 6 >/dev/null
  run "${moe[@]}" --save "$tmp/etp1" --save-interval 6 --exit-interval 6 >/dev/null
  a=$(losses "$base" | cut -d' ' -f7-12) b=$(losses "$(run "${moe[@]}" --load "$tmp/etp")")
  c=$(losses "$(mpirun_n 2 "${moe[@]}" "${etp[@]}" --load "$tmp/etp1")")
  if [ "$(ls "$tmp"/etp/global_step6/layer_*_expert_*_mp_rank_0[01]_* | wc -l)" -eq 16 ] && [ -n "$b" ] \
     && close "$a" "$b" 1e-5 && [ -n "$c" ] && close "$a" "$c" 1e-5; then
    ok "a checkpoint with split experts (16 expert files, a slice each) resumed in one process, and a one-process one \
resumed with split experts, to 12 = the uninterrupted run"
  else bad "split-expert checkpoints" "'$a' vs '$b' / '$c'; $(ls "$tmp/etp/global_step6" | tr '\n' ' ')"; fi
  # with ZeRO-2 and EP=2 over DP=2 x TP=2 (each rank: half of 2 experts' MLPs), saved at 6 and resumed in one process
  for z in 0 2 3; do
    printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": %d}}\n' "$z" \
      >"$tmp/e$z.json"
  done
  mkdir -p "$tmp/ez"
  one=$(run "${moe[@]}" --micro-batch-size 1 --deepspeed --deepspeed_config "$tmp/e0.json")
  same "ZeRO-3 at DP=2 x TP=2 with split experts (4 ranks) = one process" "$one" \
    "$(mpirun_n 4 "${moe[@]}" --micro-batch-size 1 "${etp[@]}" --deepspeed --deepspeed_config "$tmp/e3.json")" 1e-5
  z=$(mpirun_n 4 "${moe[@]}" --micro-batch-size 1 "${etp[@]}" --moe-expert-parallel-size 2 --deepspeed \
      --deepspeed_config "$tmp/e2.json" --save "$tmp/ez" --save-interval 6)
  same "ZeRO-2, EP=2 at DP=2 x TP=2 with split experts (4 ranks) = one process" "$one" "$z" 1e-5
  a=$(losses "$one" | cut -d' ' -f7-12)
  b=$(losses "$(run "${moe[@]}" --micro-batch-size 1 --deepspeed --deepspeed_config "$tmp/e0.json" --load "$tmp/ez" \
      --load-tag global_step6)")
  [ -n "$b" ] && close "$a" "$b" 1e-5 && ok "its checkpoint at 6 (the experts' optimizer state in ZeRO-2 partitions of \
slices) resumed in one process to 12 = the uninterrupted run" || bad "ZeRO-2 split-expert checkpoint" "'$a' vs '$b'"
  same "PP=2 (the aux losses' sum travels with the hidden state) = one process" "$base" \
    "$(mpirun_n 2 "${moe[@]}" --pipeline-model-parallel-size 2)" 1e-5
  # the interleaved schedule over 4 stages of 2 chunks (8 layers, MoE in every second), recompute
  p8=(--num-layers 8 --micro-batch-size 1 --train-iters 4 --eval-interval 4 --eval-iters 1)
  one=$(run "${moe[@]}" "${p8[@]}")
  four=$(mpirun_n 4 "${moe[@]}" "${p8[@]}" --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1 \
         --checkpoint-activations)
  if [ "$(losses "$one" | wc -w)" -eq 4 ] && close "$(losses "$one")" "$(losses "$four")" 1e-5 \
     && close "$(moel "$one")" "$(moel "$four")" 1e-5 && close "$(vals "$one")" "$(vals "$four")" 1e-5; then
    ok "PP=4 x 2 virtual chunks (interleaved), recompute = one process (moe loss $(moel "$four" | awk '{print $NF}'))"
  else bad "PP=4 interleaved" "$(losses "$one") / $(moel "$one") vs $(losses "$four") / $(moel "$four")"; fi

  # expert parallelism: the experts spread over the expert-parallel group, the tokens sent by all-to-all
  ep=$(mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2)
  same "EP=2 at DP=2 (2 experts per rank, all-to-all there and back) = one process" "$base" "$ep" 1e-5
  top1=(--num-experts 4 --moe-loss-coeff 0.01 --moe-train-capacity-factor 0.5 --micro-batch-size 1)
  same "EP=4 at DP=4, top-1 dropping at capacity factor 0.5 = one process" "$(run "${top1[@]}")" \
    "$(mpirun_n 4 "${top1[@]}" --moe-expert-parallel-size 4)" 1e-5
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1%s}\n' "" >"$tmp/mb1.json"
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1%s}\n' ', "use_data_before_expert_parallelism": true' \
    >"$tmp/de.json"
  de=$(mpirun_n 4 "${top1[@]}" --moe-expert-parallel-size 2 --deepspeed --deepspeed_config "$tmp/de.json")
  grep -qF "> expert-parallel groups (D + E, use_data_before_expert_parallelism): [0, 2] [1, 3]" <<<"$de" \
    && ok "use_data_before_expert_parallelism: DeepSpeed's D + E expert groups [0, 2] [1, 3] at DP=4" \
    || bad "use_data_before_expert_parallelism groups" "$(grep -m1 'expert-parallel groups' <<<"$de")"
  same "EP=2 at DP=4 in the D + E topology = one process" "$(run "${top1[@]}" --deepspeed --deepspeed_config "$tmp/mb1.json")" \
    "$de" 1e-5
  same "EP=2 with --disable-moe-token-dropping (the exchange sized by the group's largest count) = one process" \
    "$nodrop" "$(mpirun_n 2 "${moe[@]}" --disable-moe-token-dropping --moe-train-capacity-factor 0.5 \
                 --moe-expert-parallel-size 2)" 1e-5
  same "EP=2 x TP=2 with --sequence-parallel (4 ranks) = one process" "$base" \
    "$(mpirun_n 4 "${moe[@]}" --moe-expert-parallel-size 2 --tensor-model-parallel-size 2 --sequence-parallel)" 1e-5
  llm=(--swiglu --disable-bias-linear)
  same "SwiGLU experts without linear biases: EP=2 x TP=2 + SP (4 ranks) = one process" "$(run "${moe[@]}" "${llm[@]}")" \
    "$(mpirun_n 4 "${moe[@]}" "${llm[@]}" --moe-expert-parallel-size 2 --tensor-model-parallel-size 2 \
       --sequence-parallel)" 1e-5
  same "EP=2 x PP=2 (4 ranks) = one process" "$base" \
    "$(mpirun_n 4 "${moe[@]}" --moe-expert-parallel-size 2 --pipeline-model-parallel-size 2)" 1e-5
  same "EP=2 with ZeRO-2 at DP=2 = one process" "$ds0" \
    "$(mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2 --deepspeed --deepspeed_config "$tmp/z2.json")" 1e-5
  # bf16: an expert's weight gradient sums the tokens of the whole group before its bf16 rounding (EP=1 rounds each
  # rank's share), so the runs agree to bf16's precision, not bit for bit
  bfdp=$(mpirun_n 2 "${moe[@]}" --bf16) bfep=$(mpirun_n 2 "${moe[@]}" --bf16 --moe-expert-parallel-size 2)
  if [ "$(losses "$bfep" | wc -w)" -eq 12 ] && close "$(losses "$bfdp")" "$(losses "$bfep")" 2e-3; then
    ok "EP=2 --bf16 = EP=1 --bf16 at DP=2 to bf16 precision (2e-3)"
  else bad "EP=2 --bf16" "$(losses "$bfdp") vs $(losses "$bfep")"; fi
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "comms_logger": {"enabled": true, "prof_ops": ["all_to_all_single"]}}\n' \
    >"$tmp/cl.json"
  out=$(mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2 --deepspeed --deepspeed_config "$tmp/cl.json")
  n=$(grep -A3 "^all_to_all_single" <<<"$out" | grep -cE "^ +[0-9.]+ [KMG]?B +[0-9]+")
  [ "$n" -ge 1 ] && ok "the comms logger counts the all_to_all_single calls of the dispatch" \
    || bad "all_to_all_single in the comms log" "$(grep -A3 all_to_all <<<"$out" | head -4)"
  # checkpoints between expert-parallel sizes
  mkdir -p "$tmp/ep" "$tmp/ep1"
  mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2 --save "$tmp/ep" --save-interval 6 --exit-interval 6 >/dev/null
  r1=$(run "${moe[@]}" --load "$tmp/ep")
  a=$(losses "$base" | cut -d' ' -f7-12) b=$(losses "$r1")
  [ -n "$b" ] && close "$a" "$b" 1e-5 && ok "an EP=2 checkpoint at 6 resumed in one process to 12 = the uninterrupted run" \
    || bad "EP=2 checkpoint resumed in one process" "'$a' vs '$b'"
  run "${moe[@]}" --save "$tmp/ep1" --save-interval 6 --exit-interval 6 >/dev/null
  r2=$(mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2 --load "$tmp/ep1")
  b=$(losses "$r2")
  [ -n "$b" ] && close "$a" "$b" 1e-5 && ok "a one-process checkpoint at 6 resumed at EP=2 x DP=2 to 12 = the uninterrupted run" \
    || bad "one-process checkpoint resumed at EP=2" "'$a' vs '$b'"
  # where the experts live: without ZeRO and with ZeRO-1/2 each rank holds its own (DeepSpeed's layout), so the
  # plan's parameters, gradients (and without ZeRO the optimizer state) shrink by the other experts'; ZeRO-3 keeps all
  mib() { grep -m1 "memory plan (MiB)" <<<"$1" | sed -E "s/.*$2 ([0-9.]+).*/\1/"; }
  less() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { exit !(a - b > d) }'; }
  zr=(--deepspeed --deepspeed_config)
  e1=$(mpirun_n 2 "${moe[@]}" --train-iters 1) e2=$(mpirun_n 2 "${moe[@]}" --train-iters 1 --moe-expert-parallel-size 2)
  z1=$(mpirun_n 2 "${moe[@]}" --train-iters 1 "${zr[@]}" "$tmp/z2.json")
  z2=$(mpirun_n 2 "${moe[@]}" --train-iters 1 --moe-expert-parallel-size 2 "${zr[@]}" "$tmp/z2.json")
  z3=$(mpirun_n 2 "${moe[@]}" --train-iters 1 --moe-expert-parallel-size 2 "${zr[@]}" "$tmp/z3.json")
  held="expert-parallel rank 0 of 2 holds only its own 1/2 of each MoE layer's experts (132352 of the 264704 expert"
  split="ZeRO stage 2 with expert parallelism: the dense parameters (146688) over the 2 data-parallel ranks, this rank's \
experts (132352) over the 1 rank holding them"
  if grep -qF "$held" <<<"$e2" && grep -qF "$held" <<<"$z2" && grep -qF "$split" <<<"$z2" \
     && grep -qF "every rank holds all experts' parameters (264704 elements), partitioned with the others" <<<"$z3" \
     && less "$(mib "$e1" params)" "$(mib "$e2" params)" 0.4 && less "$(mib "$e1" grads)" "$(mib "$e2" grads)" 0.4 \
     && less "$(mib "$e1" "optimizer state")" "$(mib "$e2" "optimizer state")" 0.9 \
     && less "$(mib "$z1" params)" "$(mib "$z2" params)" 0.4 && less "$(mib "$z1" grads)" "$(mib "$z2" grads)" 0.4; then
    ok "EP=2 holds 2 of 4 experts per layer: params $(mib "$e1" params) -> $(mib "$e2" params) MiB, optimizer state \
$(mib "$e1" "optimizer state") -> $(mib "$e2" "optimizer state") MiB; with ZeRO-2 params $(mib "$z1" params) -> \
$(mib "$z2" params) MiB (the experts partitioned over their own group); ZeRO-3 holds all"
  else bad "local experts at EP=2" "$(grep -h 'expert parallelism\|memory plan\|ZeRO stage' <<<"$e1$e2$z1$z2$z3")"; fi
  same "EP=2 with ZeRO-3 at DP=2 (every expert registered, partitioned over the data-parallel group) = one process" \
    "$ds0" "$(mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2 "${zr[@]}" "$tmp/z3.json")" 1e-5
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}\n' >"$tmp/z1mb1.json"
  same "EP=2 with ZeRO-1 at DP=4 (each expert's state partitioned over its 2 holders) = one process" \
    "$(run "${top1[@]}" --deepspeed --deepspeed_config "$tmp/mb1.json")" \
    "$(mpirun_n 4 "${top1[@]}" --moe-expert-parallel-size 2 "${zr[@]}" "$tmp/z1mb1.json")" 1e-5
  # a checkpoint of EP=2 at DP=4 (each expert's state shared by its two holders, the expert files written by the
  # expert-data-parallel ranks 0) resumed at EP=4 and under ZeRO-2 at EP=1 = the uninterrupted DP=4 run
  mkdir -p "$tmp/ep24"
  ds4=(--deepspeed --deepspeed_config "$tmp/mb1.json")
  un=$(mpirun_n 4 "${top1[@]}" "${ds4[@]}")
  mpirun_n 4 "${top1[@]}" "${ds4[@]}" --moe-expert-parallel-size 2 --save "$tmp/ep24" --save-interval 6 \
    --exit-interval 6 >/dev/null
  a=$(losses "$un" | cut -d' ' -f7-12)
  b=$(losses "$(mpirun_n 4 "${top1[@]}" "${ds4[@]}" --moe-expert-parallel-size 4 --load "$tmp/ep24")")
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}\n' >"$tmp/z2mb1.json"
  c=$(losses "$(mpirun_n 4 "${top1[@]}" --load "$tmp/ep24" --deepspeed --deepspeed_config "$tmp/z2mb1.json")")
  if [ "$(ls "$tmp"/ep24/global_step6/layer_*_expert_* | wc -l)" -eq 8 ] && [ -n "$b" ] && close "$a" "$b" 1e-5 \
     && [ -n "$c" ] && close "$a" "$c" 1e-5; then
    ok "an EP=2 x DP=4 checkpoint at 6 (8 expert files) resumed at EP=4 and under ZeRO-2 to 12 = the uninterrupted run"
  else bad "EP=2 x DP=4 checkpoint resumed at EP=4 / ZeRO-2" "'$a' vs '$b' / '$c'; $(ls "$tmp/ep24/global_step6" | tr '\n' ' ')"; fi
  # the same from ZeRO-2's partitions (the experts' over their two holders), resumed in one process without ZeRO
  mkdir -p "$tmp/ez24"
  mpirun_n 4 "${top1[@]}" --moe-expert-parallel-size 2 --save "$tmp/ez24" --save-interval 6 --exit-interval 6 \
    "${zr[@]}" "$tmp/z2mb1.json" >/dev/null
  b=$(losses "$(run "${top1[@]}" "${ds4[@]}" --load "$tmp/ez24")")
  [ -n "$b" ] && close "$a" "$b" 1e-5 && ok "an EP=2 x DP=4 ZeRO-2 checkpoint at 6 resumed in one process to 12 = the uninterrupted run" \
    || bad "EP=2 x DP=4 ZeRO-2 checkpoint resumed in one process" "'$a' vs '$b'"
  # the flops profiler (DeepSpeed's per-GPU view): at EP=2 each rank holds 2 of each MoE layer's 4 experts, each over
  # the rows of both members (twice EP=1's); a full tree's counts are tests/profiler's test_moe_flops
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "flops_profiler": {"enabled": true, "profile_step": 2}}\n' \
    >"$tmp/fp.json"
  fp1=$(run "${moe[@]}" --deepspeed --deepspeed_config "$tmp/fp.json")
  fp2=$(mpirun_n 2 "${moe[@]}" --moe-expert-parallel-size 2 --deepspeed --deepspeed_config "$tmp/fp.json")
  n=$(grep -oE "model parallel rank \(0, 0\): [0-9]+" <<<"$fp1" | grep -oE "[0-9]+$")
  k() { awk -v n="$1" 'BEGIN { s = sprintf("%.2f", n / 1000); sub(/0+$/, "", s); sub(/\.$/, "", s); print s " K" }'; }
  local_p=$(k $((n - 2 * 2 * (2 * 64 * 256 + 256 + 64))))
  if grep -qE "^params per GPU: +$(k "$n") *$" <<<"$fp1" && grep -qE "^params per GPU: +$local_p *$" <<<"$fp2" \
     && grep -qE "^ +\(0-3\): 4 x ParallelMLP\($" <<<"$fp1" && grep -qE "^ +\(0-1\): 2 x ParallelMLP\($" <<<"$fp2" \
     && grep -A1 "4 x ParallelMLP" <<<"$fp1" | grep -q "2.1 MMACs" && grep -A1 "2 x ParallelMLP" <<<"$fp2" | grep -q "4.19 MMACs" \
     && grep -q "(deepspeed_moe): MOELayer(" <<<"$fp2" && [ "$(losses "$fp2" | wc -w)" -eq 12 ] \
     && close "$(losses "$fp1")" "$(losses "$fp2")" 1e-5; then
    ok "flops profiler with MoE: $(k "$n") params per GPU at EP=1, $local_p at EP=2 (2 local experts, each over 2 x 64 rows)"
  else
    bad "flops profiler with MoE" "$(grep -h 'params per GPU' <<<"$fp1$fp2") $(grep -A1 'x ParallelMLP' <<<"$fp1$fp2")"
  fi
  # with TP every rank computes the whole MoE layer: its MACs stay TP=1's while the dense layers' halve
  moe_macs() { grep -m1 -A1 "(mlp): MoE(" <<<"$1" | tail -1 | grep -oE "[0-9.]+ [KMG]?MACs" | head -1; }
  macs() { grep -m1 "^fwd MACs per GPU" <<<"$1" | grep -oE "[0-9.]+ [KMG]?MACs"; }
  for sp in "" --sequence-parallel; do
    out=$(mpirun_n 2 "${moe[@]}" --tensor-model-parallel-size 2 $sp --deepspeed --deepspeed_config "$tmp/fp.json")
    if [ -n "$(moe_macs "$fp1")" ] && [ "$(moe_macs "$out")" = "$(moe_macs "$fp1")" ] \
       && [ "$(macs "$out")" != "$(macs "$fp1")" ] && [ "$(losses "$out" | wc -w)" -eq 12 ] \
       && close "$(losses "$fp1")" "$(losses "$out")" 1e-5; then
      ok "flops profiler with MoE at TP=2${sp:+ $sp}: the MoE layer $(moe_macs "$out") as at TP=1, the model $(macs "$fp1") -> $(macs "$out") per GPU"
    else bad "flops profiler with MoE at TP=2${sp:+ $sp}" "MoE $(moe_macs "$fp1") vs $(moe_macs "$out"); $(macs "$fp1") vs $(macs "$out"); $(grep -m2 -i error <<<"$out")"; fi
  done
  out=$(mpirun_n 2 "${moe[@]}" "${etp[@]}" --deepspeed --deepspeed_config "$tmp/fp.json")
  ex() { grep -A1 "4 x ParallelMLP" <<<"$1" | grep -oE "[0-9.]+ [KMG]?MACs" | head -1; }
  if [ "$(ex "$fp1")" = "2.1 MMACs" ] && [ "$(ex "$out")" = "1.05 MMACs" ] \
     && close "$(losses "$fp1")" "$(losses "$out")" 1e-5; then ok "flops profiler with split experts at TP=2: each expert $(ex "$fp1") -> $(ex "$out") per GPU"
  else bad "flops profiler with split experts" "$(ex "$fp1") vs $(ex "$out"); $(grep -m2 -i error <<<"$out")"; fi
else
  echo "SKIP the data-parallel layouts: mpirun not found"
fi

# 4. refusals before any work
expect_error() { # NAME MESSAGE ARGS...: exit 1, the message, no iteration and no model built
  local out rc
  out=$(run "${@:3}"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$2" <<<"$out" && ! grep -q "^ iteration\|building GPT model" <<<"$out"; then ok "refused: $1"
  else bad "refused: $1" "rc=$rc; want: $2; got: $(grep -m2 -i error <<<"$out")"; fi
}
expect_error "a --num-experts list of the wrong length" "--num-experts has 3 values: num_experts must be either a single value or a list of the same length as the number of MoE layers (2: --num-layers 4 / --expert-interval 2)" \
  --num-experts 2 2 4
expect_error "--topk above the experts" "--topk 3: an MoE layer has only 2 experts to route a token to" --num-experts 2 --topk 3
expect_error "experts not divisible by the expert-parallel size" "layer 2 has 3 experts, not divisible by --moe-expert-parallel-size 2" \
  --num-experts 3 --moe-expert-parallel-size 2
expect_error "an expert-parallel size that does not divide the data-parallel size" "data-parallel size 1 (world size 1 / (--tensor-model-parallel-size 1 x --pipeline-model-parallel-size 1)) is not divisible by --moe-expert-parallel-size 2" \
  --num-experts 4 --moe-expert-parallel-size 2
expect_error "fewer tokens than --moe-min-capacity (DeepSpeed's assert)" "--micro-batch-size 2 x --seq-length 64 = 128 tokens per MoE layer, fewer than --moe-min-capacity 200" \
  --num-experts 4 --moe-min-capacity 200
expect_error "a capacity factor of 0" "--moe-train-capacity-factor 0 / --moe-eval-capacity-factor 1: must be > 0" \
  --num-experts 4 --moe-train-capacity-factor 0
expect_error "an unknown --noisy-gate-policy" "Jiter" --num-experts 4 --noisy-gate-policy Jiter
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n' >"$tmp/vocab.txt"
out=$(timeout 120 "$bert" "${tiny[@]/--mock-data/--vocab-file=$tmp/vocab.txt}" --data-path "$tmp/none" --num-experts 4 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -qF "MoE layers in bert are not supported" <<<"$out" && ok "refused: MoE in pretrain_bert" \
  || bad "refused: MoE in pretrain_bert" "rc=$rc $(grep -m2 -i error <<<"$out")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
