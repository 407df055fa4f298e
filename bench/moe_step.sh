#!/usr/bin/env bash
# MoE step time on the CPU (issue 18, docs/moe.md): pretrain_gpt with 8 experts, top-1, against the dense model of the
# same active parameters (each token runs one expert, an MLP of the dense shape), in the same run: the runs alternate
# dense, MoE, dense, MoE ... (ROUNDS pairs, each ITERS iterations on --mock-data), each run's time per iteration is the
# median of its logged iterations after the first two, and the ratio MoE / dense is taken pair by pair (its median is
# the figure; a target of at most 1.3). Also the tokens the capacity dropped (the "> MoE:" line of the MoE runs).
# Three variants: Megatron-DeepSpeed's default --expert-interval 2 (MoE in every second layer), every layer, and every
# layer without token dropping (every token computed: the MoE layer's whole cost against the dense MLP's).
#   bench/moe_step.sh [ROUNDS] [ITERS]        (default 3 pairs of 8 iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/pretrain_gpt ] || bash scripts/build.sh >/dev/null
rounds=${1:-3} iters=${2:-8}
shape=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256
       --micro-batch-size 8 --global-batch-size 8 --vocab-size 1024 --make-vocab-size-divisible-by 128 --mock-data
       --lr 1e-4 --train-iters "$iters" --log-interval 1 --eval-iters 0 --attention-dropout 0 --hidden-dropout 0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "shape: 4 layers, h=256, 8 heads, seq 256, micro batch 8 (2048 tokens), FFN 1024; MoE: 8 experts, top-1, capacity factor 1.0"
. bench/lib_step.sh
for variant in "2" "1" "1 --disable-moe-token-dropping"; do
  interval=${variant%% *} extra=()
  [ "$variant" != "$interval" ] && extra=(${variant#* })
  ratios=() dense_ms=() moe_ms=()
  for r in $(seq "$rounds"); do
    ./build/bin/pretrain_gpt "${shape[@]}" >"$tmp/dense.log" 2>&1
    ./build/bin/pretrain_gpt "${shape[@]}" --num-experts 8 --expert-interval "$interval" --moe-loss-coeff 0.01 \
      "${extra[@]}" >"$tmp/moe.log" 2>&1
    d=$(per_iter "$tmp/dense.log") m=$(per_iter "$tmp/moe.log")
    dense_ms+=("$d") moe_ms+=("$m") ratios+=("$(awk -v a="$m" -v b="$d" 'BEGIN { printf "%.3f", a / b }')")
  done
  echo "--expert-interval $variant: dense $(med "${dense_ms[@]}") ms/iteration, MoE $(med "${moe_ms[@]}") ms/iteration;" \
       "MoE / dense $(med "${ratios[@]}") (pairs: ${ratios[*]}; target <= 1.3)"
  echo "  $(grep -m1 '^> MoE:' "$tmp/moe.log" | sed 's/^> //')"
done
