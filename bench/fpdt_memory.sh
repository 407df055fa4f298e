#!/usr/bin/env bash
# DeepSpeed FPDT's chunked attention on the CPU (docs/parallelism.md "DeepSpeed FPDT"): pretrain_gpt with a long
# sequence in one process, plain and with --ds-sequence-parallel-fpdt at two chunk sizes. For each: the memory plan's
# activation MiB, its ratio to the plain run's, the bound (the plain activations less the attention's saved
# probabilities [B, NH, T, T] and the backward's per-thread [2, T, T] work space, which the chunked attention replaces
# by log-sum-exps and per-thread [2, chunk, chunk] blocks), the peak resident memory, the lm loss of the last
# iteration (the same to rounding) and the median time per iteration after the first two.
#   bench/fpdt_memory.sh [SEQ] [ITERS] [THREADS]     (default seq 2048, 5 iterations, 2 threads)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/pretrain_gpt ] || bash scripts/build.sh >/dev/null
seq=${1:-2048} iters=${2:-5} threads=${3:-2}
L=4 H=256 NH=8 B=1
shape=(--num-layers $L --hidden-size $H --num-attention-heads $NH --seq-length "$seq" --max-position-embeddings "$seq"
       --micro-batch-size $B --global-batch-size $B --vocab-size 1024 --mock-data --lr 1e-4 --train-iters "$iters"
       --log-interval 1 --eval-iters 0 --attention-dropout 0 --hidden-dropout 0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "shape: $L layers, h=$H, $NH heads, seq $seq, micro batch $B; $threads threads"
. bench/lib_step.sh
base="" bound=""
printf '%-22s | %-16s | %-15s | %-13s | %-12s | %s\n' run "activations MiB" "vs plain (bound)" "peak RSS MiB" \
  "lm loss" "ms/iteration"
for chunk in 0 512 128; do
  extra=()
  name="plain"
  if [ "$chunk" != 0 ]; then
    extra=(--ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size "$chunk")
    name="FPDT chunk $chunk"
  fi
  OMP_NUM_THREADS=$threads /usr/bin/time -f "%M" -o "$tmp/rss" ./build/bin/pretrain_gpt "${shape[@]}" "${extra[@]}" \
    >"$tmp/run.log" 2>&1
  act=$(grep -m1 "memory plan (MiB)" "$tmp/run.log" | sed -E 's/.*activations ([0-9.]+).*/\1/')
  loss=$(grep -E "^ iteration" "$tmp/run.log" | tail -1 | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/')
  if [ -z "$base" ]; then
    base=$act
    # the probabilities of every layer and the backward's work space of each thread, in MiB
    bound=$(awk -v a="$act" -v s="$seq" -v l=$L -v nh=$NH -v b=$B -v t="$threads" \
      'BEGIN { printf "%.1f", a - (l * b * nh + 2 * t) * s * s * 4 / 1048576 }')
  fi
  printf '%-22s | %-16s | %-15s | %-13s | %-12s | %s\n' "$name" "$act" \
    "$(awk -v a="$act" -v b="$base" -v c="$bound" 'BEGIN { printf "%.3f (%.3f)", a / b, c / b }')" \
    "$(awk -v k="$(cat "$tmp/rss")" 'BEGIN { printf "%.0f", k / 1024 }')" "$loss" "$(per_iter "$tmp/run.log")"
done
