#!/usr/bin/env bash
# Selective recompute (--recompute-activations) on the CPU against no recompute and full recompute: the memory
# plan's activations, rank 0's peak resident set (GNU time) and the mean iteration time after the first, for a GPT of
# 4 layers, hidden 256, 8 heads, sequence 512, micro batch 2 (6 iterations). Expected before measuring: selective
# drops (L - 1) x B x heads x T^2 x 4 bytes = 48 MiB of probabilities and adds one attention forward per layer
# (4 B T^2 C = 0.54 GFLOP against ~6.4 GFLOP of the layer's forward and backward: ~ +8% at equal efficiency, more
# since the CPU attention runs below the GEMMs' rate); full recompute keeps only the layer inputs and adds a whole
# forward (~ +33%).
# Usage: bench/selective_recompute.sh   (build from $ZT_BUILD_DIR, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZT_BUILD_DIR:-build}
[ -x "$BUILD/bin/pretrain_gpt" ] || bash scripts/build.sh >/dev/null
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (apt-get install time)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512
       --mock-data --vocab-size 32000 --lr 1e-4 --train-iters 6 --log-interval 1 --eval-iters 0 --micro-batch-size 2
       --global-batch-size 2)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
printf '%-10s | %-16s | %-14s | %-16s | %s\n' recompute "activations MiB" "peak RSS MiB" "ms / iteration" "time ratio"
base=""
for mode in none selective full; do
  extra=()
  [ $mode = selective ] && extra=(--recompute-activations)
  [ $mode = full ] && extra=(--checkpoint-activations)
  out=$(/usr/bin/time -f "maxrss_kb %M" -o "$tmp/rss" "$BUILD/bin/pretrain_gpt" "${model[@]}" "${extra[@]}" 2>&1)
  act=$(sed -nE 's/.*memory plan \(MiB\):.*activations ([0-9.]+) .*/\1/p' <<<"$out" | head -1)
  ms=$(grep -E "^ iteration " <<<"$out" | sed -E 's/.*elapsed time per iteration \(ms\): *([0-9.]+).*/\1/' |
       awk 'NR > 1 { s += $1; n++ } END { printf "%.1f", s / n }')
  [ -n "$base" ] || base=$ms
  printf '%-10s | %-16s | %-14s | %-16s | %s\n' $mode "$act" "$(awk '{printf "%.1f", $2 / 1024}' "$tmp/rss")" "$ms" \
    "$(awk -v a="$ms" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')"
done
