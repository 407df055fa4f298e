#!/usr/bin/env bash
# CPU Adam bandwidth benchmark (issue: ZeRO / offload). Times zt_optimizer_step (AdamW, fp32) over N
# parameters and reports the GB/s of the state it touches (p, g, m, v read + written: 32 bytes per
# parameter) against this machine's memory bandwidth measured in the same run (STREAM-like triad and
# in-place loops over arrays far larger than the last-level cache). Target: >= 60% of the bound.
# Usage: bench/cpu_adam.sh [--params 64M] [--steps 10] [--stream-elems 128M]
# The build is taken from $ZT_BUILD_DIR (default build/; built with scripts/build.sh when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZT_BUILD_DIR:-build}
[ -x "$BUILD/bench/bin/bench_cpu_adam" ] || bash scripts/build.sh >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc); LLC: $(lscpu | sed -n 's/^L3 cache: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/bench/bin/bench_cpu_adam" "$@"
