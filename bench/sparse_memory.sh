#!/usr/bin/env bash
# The longest sequence pretrain_gpt can train in a memory budget with dense attention and with DeepSpeed's sparse
# layouts (issue 20, item 5: "a trainable sequence at least 10x longer than dense in the same memory"). For each
# attention kind, the largest --seq-length (a multiple of 1024) whose memory plan (the trainer's own "> memory
# plan" line: parameters, gradients, optimizer state, activations, what it allocates) fits in the budget, found by
# bisection over --skip-train runs (the plan is computed, nothing is trained); then the sparse kinds train 2
# iterations at their longest length to show it runs, with the peak RSS. A 2-layer GPT (hidden 256, 8 heads of 32),
# micro batch 1, on the CPU.
# Usage: bench/sparse_memory.sh [--budget-mib 4096] [--max-seq 1048576] [--no-train]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZT_BUILD_DIR:-build}
budget=4096 maxseq=1048576 train=1
while [ $# -gt 0 ]; do
  case "$1" in
    --budget-mib) budget=$2; shift 2 ;;
    --max-seq) maxseq=$2; shift 2 ;;
    --no-train) train=0; shift ;;
    *) echo "usage: bench/sparse_memory.sh [--budget-mib N] [--max-seq N] [--no-train]" >&2; exit 2 ;;
  esac
done
[ -x "$BUILD/bin/pretrain_gpt" ] || bash scripts/build.sh >/dev/null
bin=$BUILD/bin/pretrain_gpt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc); budget: $budget MiB"
printf '{"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1}\n' >"$tmp/dense.json"
printf '{"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1, "sparse_attention": {"mode": "fixed", "block": 64, "num_local_blocks": 4, "num_global_blocks": 1, "attention": "unidirectional"}}\n' >"$tmp/fixed.json"
printf '{"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1, "sparse_attention": {"mode": "bigbird", "block": 16, "num_random_blocks": 1, "num_sliding_window_blocks": 3, "num_global_blocks": 1}}\n' >"$tmp/bigbird.json"
model() { echo --num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length "$1" --max-position-embeddings "$1" \
  --micro-batch-size 1 --global-batch-size 1 --mock-data --vocab-size 512 --lr 1e-4 --eval-iters 0 --log-interval 1; }
# plan KIND T: the plan's total MiB, or a large number when it does not fit this machine at all
plan() {
  local out
  out=$(OMP_NUM_THREADS=2 "$bin" $(model "$2") --train-iters 1 --skip-train --deepspeed --deepspeed_config "$tmp/$1.json" 2>&1 || true)
  local t
  t=$(grep -m1 -oE "(total|needs) [0-9.]+ MiB|total [0-9.]+$" <<<"$out" | grep -oE "[0-9.]+" | head -1)
  [ -n "$t" ] || { echo "bench/sparse_memory.sh: no memory plan at seq $2 ($1): $(grep -m1 error <<<"$out")" >&2; exit 1; }
  echo "$t"
}
fits() { awk -v t="$(plan "$1" "$2")" -v b="$budget" 'BEGIN { exit !(t <= b) }'; }
printf "%-8s %12s %14s %10s\n" kind "longest seq" "plan MiB" "vs dense"
dense_len=0
for kind in dense fixed bigbird; do
  lo=0 hi=$((maxseq / 1024))
  while [ $lo -lt $hi ]; do # the largest k with k*1024 fitting
    mid=$(((lo + hi + 1) / 2))
    if fits $kind $((mid * 1024)); then lo=$mid; else hi=$((mid - 1)); fi
  done
  len=$((lo * 1024))
  [ $kind = dense ] && dense_len=$len
  printf "%-8s %12d %14s %10s\n" $kind $len "$( [ $len -gt 0 ] && plan $kind $len || echo -)" \
    "$(awk -v a=$len -v b=$dense_len 'BEGIN { if (b > 0) printf "x%.1f", a / b; else print "-" }')"
  eval "len_$kind=$len"
done
if [ $train = 1 ]; then
  for kind in fixed bigbird; do
    eval "len=\$len_$kind"
    [ "$len" -gt 0 ] || continue
    out=$( { OMP_NUM_THREADS=2 /usr/bin/time -f "peak RSS %M KB" "$bin" $(model $len) --train-iters 2 --deepspeed \
             --deepspeed_config "$tmp/$kind.json"; } 2>&1 || true)
    echo "$kind at seq $len: $(grep -E '^ iteration +2/' <<<"$out" | grep -oE 'elapsed time per iteration \(ms\): [0-9.]+|lm loss: [0-9.E+-]+' | tr '\n' ' ')$(grep -m1 'peak RSS' <<<"$out")"
  done
fi
