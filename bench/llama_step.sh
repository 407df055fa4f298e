#!/usr/bin/env bash
# Llama-style step time on the CPU (docs/gpt.md "Llama-style models"): pretrain_gpt with RMSNorm, SwiGLU, no linear
# biases and rotary embeddings (then also grouped-query attention) against the GPT of the same shape and the same
# matrix-product FLOPs (SwiGLU's default width 2/3 x 4h in three matrices = GELU's 4h in two), in the same run: the
# runs alternate GPT, Llama, GPT, Llama ... (ROUNDS pairs of ITERS iterations on --mock-data); each run's time per
# iteration is the median of its logged iterations after the first two, and the ratio Llama / GPT is taken pair by
# pair (its median is the figure). The variants add only per-element work (RMSNorm's one pass instead of LayerNorm's
# two, the rotary turn of q and k, SwiGLU's product) to a step the GEMMs dominate, so the ratio should be 1.00 +- 0.03;
# GQA adds the repack of q, k, v and the sum of the repeated keys' gradients, and saves 1/3 of query_key_value's GEMM.
#   bench/llama_step.sh [ROUNDS] [ITERS]        (default 3 pairs of 8 iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/pretrain_gpt ] || bash scripts/build.sh >/dev/null
rounds=${1:-3} iters=${2:-8}
shape=(--num-layers 4 --hidden-size 384 --num-attention-heads 6 --seq-length 256 --max-position-embeddings 256
       --micro-batch-size 8 --global-batch-size 8 --vocab-size 1024 --make-vocab-size-divisible-by 128 --mock-data
       --lr 1e-4 --train-iters "$iters" --log-interval 1 --eval-iters 0 --attention-dropout 0 --hidden-dropout 0)
llama=(--normalization rmsnorm --swiglu --disable-bias-linear --use-rotary-position-embeddings)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "shape: 4 layers, h=384, 6 heads, seq 256, micro batch 8 (2048 tokens); GPT: FFN 1536 (GELU); Llama: FFN 1024 (SwiGLU)"
. bench/lib_step.sh
for variant in "" "--num-key-value-heads 2"; do
  ratios=() gpt_ms=() llama_ms=()
  for r in $(seq "$rounds"); do
    ./build/bin/pretrain_gpt "${shape[@]}" >"$tmp/gpt.log" 2>&1
    # shellcheck disable=SC2086
    ./build/bin/pretrain_gpt "${shape[@]}" "${llama[@]}" $variant >"$tmp/llama.log" 2>&1
    g=$(per_iter "$tmp/gpt.log") l=$(per_iter "$tmp/llama.log")
    gpt_ms+=("$g") llama_ms+=("$l") ratios+=("$(awk -v a="$l" -v b="$g" 'BEGIN { printf "%.3f", a / b }')")
  done
  echo "Llama-style${variant:+ $variant}: GPT $(med "${gpt_ms[@]}") ms/iteration, Llama $(med "${llama_ms[@]}")" \
       "ms/iteration; Llama / GPT $(med "${ratios[@]}") (pairs: ${ratios[*]})"
done
