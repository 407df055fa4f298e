#!/usr/bin/env bash
# DeepSpeed-Ulysses per-rank activation memory and step time on the CPU (docs/parallelism.md "DeepSpeed-Ulysses"):
# pretrain_gpt with a long sequence at --ds-sequence-parallel-size 1, 2 and 4 (SP ranks under mpirun; every rank,
# SP=1's one process too, with one thread). For each SP the memory plan's activation MiB per rank, its ratio to SP=1's,
# and the bound 1/SP (every
# activation of a layer is split over the ranks: the residual stream by tokens, the attention's saved probabilities
# [B, NH, T, T] by heads; the all-to-all work space and the rotary table are shared, so the ratio sits slightly
# above 1/SP), the lm loss of the last iteration (the same at every SP), and the median time per iteration after the
# first two (the ranks share this machine's cores: on a 2-core VM SP=4 oversubscribes them, so its time says little).
#   bench/ulysses_memory.sh [SEQ] [ITERS]     (default seq 2048, 4 iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/pretrain_gpt ] || bash scripts/build.sh >/dev/null
command -v mpirun >/dev/null || { echo "mpirun not found (apt-get install openmpi-bin)"; exit 1; }
seq=${1:-2048} iters=${2:-4}
shape=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length "$seq" --max-position-embeddings "$seq"
       --micro-batch-size 1 --global-batch-size 1 --vocab-size 1024 --mock-data --lr 1e-4 --train-iters "$iters"
       --log-interval 1 --eval-iters 0 --attention-dropout 0 --hidden-dropout 0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "shape: 4 layers, h=256, 8 heads, seq $seq, micro batch 1; one thread per rank"
. bench/lib_step.sh
base=""
printf '%-4s | %-22s | %-14s | %-10s | %s\n' SP "activations MiB/rank" "vs SP=1 (1/SP)" "lm loss" "ms/iteration"
for sp in 1 2 4; do
  if [ "$sp" = 1 ]; then
    OMP_NUM_THREADS=1 ./build/bin/pretrain_gpt "${shape[@]}" >"$tmp/run.log" 2>&1
  else
    mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np "$sp" ./build/bin/pretrain_gpt \
      "${shape[@]}" --ds-sequence-parallel-size "$sp" >"$tmp/run.log" 2>&1
  fi
  act=$(grep -m1 "memory plan (MiB)" "$tmp/run.log" | sed -E 's/.*activations ([0-9.]+).*/\1/')
  loss=$(grep -E "^ iteration" "$tmp/run.log" | tail -1 | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/')
  base=${base:-$act}
  printf '%-4s | %-22s | %-14s | %-10s | %s\n' "$sp" "$act" \
    "$(awk -v a="$act" -v b="$base" -v s="$sp" 'BEGIN { printf "%.3f (%.3f)", a / b, 1 / s }')" "$loss" \
    "$(per_iter "$tmp/run.log")"
done
