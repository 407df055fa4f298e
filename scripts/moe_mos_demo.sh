#!/usr/bin/env bash
# Mixture of Experts on real data, as Megatron-DeepSpeed's MoE examples use it (issue 18, item 6; docs/moe.md): the
# main job's data and tokenizer (scripts/main_job.sh: Brown corpus, GPT-2 BPE, 128 tokens, batch 8) and four runs of
# STEPS iterations each:
#   teacher   a PR-MoE teacher: 4 layers of hidden 256, experts in layers 2 and 4 as a pyramid (4, then 8), Residual
#             MoE, top-1 (examples_deepspeed/MoE/ds_pretrain_gpt_1.3B_PR-MoE64or128.sh's recipe at a small size);
#   mos       a smaller PR-MoE student (2 layers, 8 experts in layer 2, Residual MoE) distilled from the teacher with
#             --mos --kd-beta-ce 1 (ds_pretrain_gpt_350M_PR-MoE32or64_MoS.sh's flags) for the first two thirds of
#             its iterations, then trained on without the teacher (the MoS recipe's staged KD: saved, resumed without
#             --mos);
#   student   the same student without a teacher;
#   dense     the dense model of the student's active size: 2 layers with an MLP of 1536 (a token of the student
#             runs 3 MLPs of 1024: layer 1's, and in layer 2 its expert and the residual branch; 2 x 1536 = 3 x 1024).
# Prints each run's final validation and test loss and its wall time.
#   bash scripts/moe_mos_demo.sh [STEPS]   (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-300}
. scripts/brown_data.sh
brown_gpt2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(--hidden-size 256 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128
        --micro-batch-size 8 --global-batch-size 8 --data-path "${PREFIX}_text_document" --split 900,50,50
        --tokenizer-type GPT2BPETokenizer --vocab-file "$VOCAB" --merge-file "$MERGES"
        --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 30 --lr-decay-iters "$STEPS"
        --weight-decay 0.1 --adam-beta2 0.95 --clip-grad 1.0 --attention-dropout 0.1 --hidden-dropout 0.1
        --train-iters "$STEPS" --log-interval 10 --eval-interval 100 --eval-iters 10 --seed 1234)
moe=(--moe-loss-coeff 0.01 --moe-train-capacity-factor 1.0 --moe-eval-capacity-factor 1.0 --moe-min-capacity 4
     --mlp-type residual --create-moe-param-group)
student=(--num-layers 2 --ffn-hidden-size 1024 --num-experts 8 "${moe[@]}")
teacher_flags=(--load-teacher "$out/teacher" --num-layers-teacher 4 --hidden-size-teacher 256
               --num-attention-heads-teacher 4 --num-experts-teacher 4 8)
summary=()
report() { # NAME LOG SECONDS
  local val tst
  val=$(grep -F "the end of training for val data" "$2" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
  tst=$(grep -F "the end of training for test data" "$2" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
  summary+=("$(printf '%-8s validation loss %s  test loss %s  %4.0f s' "$1" "$val" "$tst" "$3")")
  echo "${summary[-1]}"
}
run() { # NAME LOG FLAGS...: pretrain_gpt with the common flags, timed (seconds in $secs)
  local t0
  t0=$(date +%s.%N)
  ./build/bin/pretrain_gpt "${common[@]}" "${@:3}" >"$2" 2>&1 || { echo "$1 failed: $(grep -m2 error "$2")"; exit 1; }
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
}
run teacher "$out/teacher.log" --num-layers 4 --ffn-hidden-size 1024 --num-experts 4 8 "${moe[@]}" --save "$out/teacher"
report teacher "$out/teacher.log" "$secs"
stage=$((STEPS * 2 / 3))
run mos "$out/mos1.log" "${student[@]}" --mos --kd-beta-ce 1 "${teacher_flags[@]}" --save "$out/mos" \
  --exit-interval "$stage"
s1=$secs
run mos "$out/mos2.log" "${student[@]}" --load "$out/mos" --save "$out/mos"
report mos "$out/mos2.log" "$(awk -v a="$s1" -v b="$secs" 'BEGIN { print a + b }')"
run student "$out/student.log" "${student[@]}"
report student "$out/student.log" "$secs"
run dense "$out/dense.log" --num-layers 2 --ffn-hidden-size 1536
report dense "$out/dense.log" "$secs"
echo
echo "$STEPS iterations of 8 x 128 tokens on $(nproc) cores, $(date -u +%Y-%m-%d) (mos: KD for the first $stage):"
printf '%s\n' "${summary[@]}"
