#!/usr/bin/env bash
# GPU op benchmark (bench/gpu_ops.c): each CUDA op at the GPT-2 124M shapes against the copy bandwidth and the
# GEMM peak measured in the same run. Here with a GPU: bench/gpu_ops.sh [--batch B --seq T --dtype bf16].
# On the device machine: scripts/gpu_bundle.sh here, then run(command="scripts/gpu_run.sh bench_gpu_ops",
# carry=[".gpu"]).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bench/bin/bench_gpu_ops ] || bash scripts/build.sh >/dev/null
[ -x build/bench/bin/bench_gpu_ops ] || { echo "SKIP: built without CUDA (no bench_gpu_ops)"; exit 0; }
echo "date: $(date -u +%Y-%m-%d)"
./build/bench/bin/bench_gpu_ops "$@"
