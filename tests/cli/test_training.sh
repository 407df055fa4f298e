#!/usr/bin/env bash
# End-to-end pretrain_gpt checks on the CPU: the loss on the patterned --mock-data stream falls far
# below the unigram entropy; a diverging run stops at a non-finite loss naming the iteration; a model
# that cannot fit is refused by the memory plan before any allocation. Usage: test_training.sh BINARY
set -u
bin="$1"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 8 --global-batch-size 16 --mock-data --vocab-size 64)

# 1. learning: 300 iterations; the final validation loss must be under a quarter of ln(63) = 4.14
out=$("$bin" "${tiny[@]}" --lr 3e-3 --min-lr 3e-4 --lr-warmup-iters 20 --lr-decay-style cosine --train-iters 300 \
      --attention-dropout 0 --hidden-dropout 0 --log-interval 100 --eval-interval 300 --eval-iters 4 2>&1)
rc=$?
loss=$(grep -F "validation loss at the end of training for val data" <<<"$out" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
first=$(grep -m1 -F " iteration      100/" <<<"$out" | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/')
if [ $rc -eq 0 ] && [ -n "$loss" ] && awk -v l="$loss" 'BEGIN { exit !(l + 0 < log(63) / 4) }'; then
  ok "learning: final validation loss $loss < ln(63)/4 = 1.035 (loss at iteration 100: $first)"
else
  bad "learning" "rc=$rc final validation loss '$loss'"; echo "$out" | tail -5
fi

# 2. divergence: an absurd learning rate makes the loss non-finite; the run names the iteration and stops
out=$("$bin" "${tiny[@]}" --lr 1e12 --clip-grad 0 --train-iters 50 --log-interval 1 --eval-iters 0 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -qE "error: non-finite (loss|gradient): .* at iteration [0-9]+" <<<"$out"; then
  ok "non-finite loss stops the run: $(grep -m1 -E 'error: non-finite' <<<"$out" | cut -c1-90)"
else
  bad "non-finite loss" "rc=$rc"; echo "$out" | tail -3
fi

# 3. memory plan: ~24 GiB of parameters alone cannot fit; refused with the numbers before allocation
out=$("$bin" --num-layers 96 --hidden-size 4096 --num-attention-heads 32 --seq-length 64 \
      --max-position-embeddings 64 --micro-batch-size 1 --lr 1e-4 --train-iters 1 --mock-data 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -qE "error: memory plan does not fit: needs [0-9.]+ MiB of host memory \(params [0-9.]+" <<<"$out" \
   && grep -qF "the model states alone exceed it: shard them" <<<"$out" && ! grep -q "training \.\.\." <<<"$out"; then
  ok "oversized model refused by the memory plan (sharding named: the model states alone exceed the host)"
else
  bad "memory plan refusal" "rc=$rc"; echo "$out" | tail -3
fi
# activations past the host with recompute already on: recompute is not suggested again
out=$("$bin" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 8192 \
      --max-position-embeddings 8192 --micro-batch-size 256 --lr 1e-4 --train-iters 1 --mock-data \
      --checkpoint-activations 2>&1)
if grep -qE "error: memory plan does not fit: .* reduce --micro-batch-size or --seq-length$" <<<"$out"; then
  ok "activations past the host with --checkpoint-activations: it is not suggested again"
else
  bad "memory plan remedy" "$(grep -m1 error <<<"$out")"
fi

# 4. --train-samples derives the iterations (100 samples / 16 = 6); --optimizer sgd trains
out=$("$bin" "${tiny[@]}" --lr 0.1 --optimizer sgd --train-samples 100 --lr-decay-samples 100 --log-interval 1 --eval-iters 0 2>&1)
rc=$?
l1=$(grep -m1 -F " iteration        1/       6" <<<"$out" | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/')
l6=$(grep -m1 -F " iteration        6/       6" <<<"$out" | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/')
if [ $rc -eq 0 ] && [ -n "$l1" ] && [ -n "$l6" ] && ! grep -q " iteration        7/" <<<"$out" \
   && awk -v a="$l1" -v b="$l6" 'BEGIN { exit !(b + 0 < a + 0) }'; then
  ok "--train-samples 100 runs 6 iterations; sgd lowers the loss ($l1 -> $l6)"
else
  bad "--train-samples / sgd" "rc=$rc first '$l1' last '$l6'"; echo "$out" | tail -3
fi

# 5. --skip-train: no training iterations, only the final validation and test evaluations
out=$("$bin" "${tiny[@]}" --lr 1e-3 --train-iters 10 --skip-train --eval-iters 2 2>&1)
rc=$?
if [ $rc -eq 0 ] && ! grep -q " iteration " <<<"$out" && grep -q "validation loss at the end of training for val data" <<<"$out" \
   && grep -q "validation loss at the end of training for test data" <<<"$out"; then
  ok "--skip-train only evaluates"
else
  bad "--skip-train" "rc=$rc"; echo "$out" | tail -3
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
