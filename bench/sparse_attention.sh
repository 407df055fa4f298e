#!/usr/bin/env bash
# Block-sparse attention on the CPU (issue 20): forward+backward time and the floats kept for the backward of the
# block-sparse kernel against the dense one, at seq 2048, 4096, 8192 (B 1, 4 heads of 64, blocks 16 and 64) with
# DeepSpeed's `fixed` layout (4 local blocks, 1 global, unidirectional, causal) and `bigbird` (sliding window 3,
# 1 global, 1 random), made by models/transformer/sparsity.h. Best of 2 runs each. Dense at 8192 keeps 1 GiB of
# probabilities (B*NH*T*T floats) plus 2*T*T floats of scratch per thread.
# Usage: bench/sparse_attention.sh [--seq 2048,4096,8192] [--heads 4] [--head-dim 64] [--blocks 16,64] [--reps 2]
#                                  [--dense-max-seq 8192]
# The build is taken from $ZT_BUILD_DIR (default build/; built with scripts/build.sh when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZT_BUILD_DIR:-build}
[ -x "$BUILD/bench/bin/bench_sparse_attention" ] || bash scripts/build.sh >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/bench/bin/bench_sparse_attention" "$@"
