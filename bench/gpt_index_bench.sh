#!/usr/bin/env bash
# GPT dataset index building (doc_idx / sample_idx / shuffle_idx, Megatron's algorithm) for a synthetic
# 1-billion-token dataset: time, bound (memcpy of the arrays), memory against the arrays themselves.
# Runs one epoch (seq 2048) and a 2.5-epoch request (separate last epoch). Extra args go to both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
echo "== $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for e in 1 2.5; do
  echo "-- ./build/bench/bin/bench_gpt_index --tokens 1e9 --seq 2048 --epochs-needed $e $*"
  ./build/bench/bin/bench_gpt_index --tokens 1e9 --seq 2048 --epochs-needed "$e" "$@"
done
