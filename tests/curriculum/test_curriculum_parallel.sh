#!/bin/bash
# The legacy seqlen curriculum in every parallel layout (label mpi): with a schedule that changes the length every
# iteration or two (8 -> 32, fixed_linear), TP=2, TP=2 with --sequence-parallel, TP=2 with full recompute and
# partitioned activations, PP=2 (1F1B, stage tensors sized by the curriculum length), PP=4 with the interleaved
# schedule, and DP=2 with ZeRO-2 and with ZeRO-3 give the one-process run's losses and grad norms (to fp32
# reduction-order rounding), the same curriculum seqlen and consumed tokens; evaluation at the full length in the
# pipeline (its stage tensors grow back); --sequence-parallel with a length that does not split is refused before any
# work. Usage: test_curriculum_parallel.sh PRETRAIN_GPT PYTHON3
BIN=$1 PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tiny=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 --mock-data
      --vocab-size 200 --lr 1e-3 --train-iters 6 --log-interval 1 --eval-interval 3 --eval-iters 1 --micro-batch-size 2
      --global-batch-size 8 --seed 3)
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 32, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 5, "difficulty_step": 8}}}\n' > cl.json
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 32, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 5, "difficulty_step": 8}}}\n' > z2.json
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": 9, "max_difficulty": 32, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 5, "difficulty_step": 3}}}\n' > odd.json
one=$(timeout 120 "$BIN" "${tiny[@]}" --deepspeed --deepspeed_config cl.json 2>&1)
want_len=$("$PY" "$HERE/curriculum_oracle.py" cl.json 1 6 | tr '\n' ' ')
[ "$(field "$one" "curriculum seqlen")" == "$want_len" ] && ok "one process: curriculum seqlen $want_len" ||
  bad "one process" "$(field "$one" "curriculum seqlen") / $(grep -m1 error <<<"$one")"
vals() { grep "validation loss at" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }
layout() { # name, np, config, flags...
  local name=$1 np=$2 cfg=$3
  shift 3
  local out
  out=$(timeout 300 "${mpi[@]}" -np "$np" "$BIN" "${tiny[@]}" --deepspeed --deepspeed_config "$cfg" "$@" 2>&1)
  if [ "$(field "$out" "curriculum seqlen")" == "$want_len" ] &&
     [ "$(field "$out" "consumed tokens")" == "$(field "$one" "consumed tokens")" ] &&
     close "$(field "$out" "lm loss")" "$(field "$one" "lm loss")" 2e-6 &&
     close "$(field "$out" "grad norm")" "$(field "$one" "grad norm")" 2e-3 &&
     close "$(vals "$out")" "$(vals "$one")" 2e-6 && [ "$(vals "$out" | wc -w)" -eq 4 ]; then
    ok "$name = one process (6 iterations at $want_len, 4 validations at 32)"
  else
    bad "$name" "loss $(field "$out" "lm loss") vs $(field "$one" "lm loss"); seqlen $(field "$out" "curriculum seqlen"); $(grep -m1 error <<<"$out")"
  fi
}
layout "TP=2" 2 cl.json --tensor-model-parallel-size 2
layout "TP=2 --sequence-parallel" 2 cl.json --tensor-model-parallel-size 2 --sequence-parallel
layout "PP=2 (1F1B)" 2 cl.json --pipeline-model-parallel-size 2
# full recompute with each rank keeping its half of the saved layer inputs (slots of the planned length)
sed 's/"curriculum_learning"/"activation_checkpointing": {"partition_activations": true}, "curriculum_learning"/' cl.json > pa.json
layout "TP=2, full recompute, partition_activations" 2 pa.json --tensor-model-parallel-size 2 --recompute-granularity full
layout "DP=2 ZeRO-2" 2 z2.json
sed 's/"stage": 2/"stage": 3/' z2.json > z3.json
layout "DP=2 ZeRO-3" 2 z3.json
# the interleaved schedule needs more than 2 stages: 8 layers over PP=4 in 2 virtual chunks, against 8 layers in one
one=$(timeout 120 "$BIN" "${tiny[@]}" --num-layers 8 --deepspeed --deepspeed_config cl.json 2>&1)
layout "PP=4 interleaved (2 virtual chunks)" 4 cl.json --num-layers 8 --pipeline-model-parallel-size 4 \
  --num-layers-per-virtual-pipeline-stage 1
out=$(timeout 120 "${mpi[@]}" -np 2 "$BIN" "${tiny[@]}" --deepspeed --deepspeed_config odd.json --tensor-model-parallel-size 2 --sequence-parallel 2>&1)
if grep -qF "the fixed_linear schedule gives a sequence length of 21 at iteration 3, which --sequence-parallel cannot split over 2 tensor-parallel ranks" <<<"$out" &&
   ! grep -q "building GPT model" <<<"$out"; then ok "refused: --sequence-parallel with lengths in steps of 3 over 2 ranks"
else bad "refused: sequence parallel" "$(grep -m1 error <<<"$out")"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
