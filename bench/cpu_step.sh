#!/usr/bin/env bash
# CPU training-step benchmark (issue: foundation). Builds if needed, then times one full GPT training
# step (forward, backward, clip, AdamW) of the GPT-2 124M shape at seq 64, micro batch 4, beside the
# machine's sgemm GFLOP/s measured in the same run. Extra flags after -- go to the pretrain_gpt parser,
# e.g. bench/cpu_step.sh --steps 10 -- --checkpoint-activations
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/bench_cpu_step ] || bash scripts/build.sh >/dev/null
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
./build/bin/bench_cpu_step "$@" | grep -E "^(machine|model|step):"
