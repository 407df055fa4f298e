#!/usr/bin/env bash
# pretrain_gpt on the GPU against the CPU (issue: CUDA backend, correctness on the GPU): a small GPT on the mock
# data stream for 200 iterations with dropout, logged every 10.
#  - fp32 on the GPU: the first logged loss within 1e-4 of the CPU's, every logged loss within 1%;
#  - bf16 on the GPU: every logged loss within 1% of the fp32 CPU run's;
#  - bf16 on the GPU saved at 100, stopped, resumed to 200: the losses of the straight run bit for bit.
# Usage: test_gpu_train.sh PRETRAIN_GPT   (SKIP 77 without a GPU or a CUDA build)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--num-layers 2 --hidden-size 128 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128
      --mock-data --vocab-size 512 --micro-batch-size 4 --global-batch-size 8 --lr 1e-3 --min-lr 1e-4
      --lr-decay-style cosine --lr-warmup-iters 20 --train-iters 200 --log-interval 10 --eval-interval 1000
      --eval-iters 1 --seed 7 --attention-dropout 0.1 --hidden-dropout 0.1)
losses() { field "$1" "lm loss"; }
probe=$(timeout 120 "$bin" "${tiny[@]}" --train-iters 1 --lr-warmup-iters 0 2>&1) ||
  { echo "FAIL one iteration: $(tail -3 <<<"$probe")"; exit 1; }
if ! grep -q "^> compute: GPU" <<<"$probe"; then
  echo "SKIP: pretrain_gpt does not train on a GPU here ($(grep -m1 '^> compute' <<<"$probe" || echo 'no CUDA device'))"
  exit 77
fi
gpu=$(timeout 600 "$bin" "${tiny[@]}" 2>&1); rc=$?
[ $rc -eq 0 ] || bad "GPU fp32 run" "exit $rc: $(tail -3 <<<"$gpu")"
grep -m1 "device memory plan" <<<"$gpu"
cpu=$(CUDA_VISIBLE_DEVICES= timeout 900 "$bin" "${tiny[@]}" 2>&1) || bad "CPU fp32 run" "$(tail -3 <<<"$cpu")"
c=$(losses "$cpu") g=$(losses "$gpu")
echo "CPU fp32: $c"
echo "GPU fp32: $g"
close "${c%% *}" "${g%% *}" 1e-4 && ok "first logged loss: GPU fp32 within 1e-4 of the CPU" || bad "first loss" "$c / $g"
close "$c" "$g" 1e-2 && ok "GPU fp32 losses within 1% of the CPU's over 200 iterations" || bad "fp32 curve" "$c / $g"
b=$(timeout 600 "$bin" "${tiny[@]}" --bf16 --save "$tmp/ck" --save-interval 100 2>&1) || bad "GPU bf16 run" "$(tail -3 <<<"$b")"
echo "GPU bf16: $(losses "$b")"
close "$c" "$(losses "$b")" 1e-2 && ok "GPU bf16 losses within 1% of the fp32 CPU run's" || bad "bf16 curve" "$(losses "$b")"
r1=$(timeout 600 "$bin" "${tiny[@]}" --bf16 --save "$tmp/r" --save-interval 100 --exit-interval 100 2>&1)
r2=$(timeout 600 "$bin" "${tiny[@]}" --bf16 --save "$tmp/r" --load "$tmp/r" 2>&1)
[ -n "$(losses "$b")" ] && [ "$(losses "$b")" == "$(losses "$r1")$(losses "$r2")" ] &&
  ok "GPU bf16: 200 straight = 100 + resume 100, bit for bit" || bad "resume" "$(losses "$r1") + $(losses "$r2")"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
