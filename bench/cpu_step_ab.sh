#!/usr/bin/env bash
# The CPU training step of this tree against another git revision's, in one run (the model-core issue's "within
# 3% of before"): builds bench_cpu_step at REV in a temporary worktree, then runs the two binaries in turn, ROUNDS
# times each (A B A B ...), and prints each run's median step time, the medians of the runs and their ratio.
#   bench/cpu_step_ab.sh REV [--rounds N] [-- pretrain_gpt flags]     e.g. bench/cpu_step_ab.sh 6005528
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,6p' "$0"; exit 2; }
rev=$1
shift
rounds=5
[ "${1:-}" = --rounds ] && { rounds=$2; shift 2; }
[ "${1:-}" = -- ] && shift
[ -x build/bench/bin/bench_cpu_step ] || bash scripts/build.sh >/dev/null
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/src" "$rev" >/dev/null 2>&1
cmake -B "$tmp/build" -S "$tmp/src" -DCMAKE_BUILD_TYPE=Release -DZT_ENABLE_CUDA=OFF >"$tmp/cmake.log" 2>&1
cmake --build "$tmp/build" --target bench_cpu_step -j"$(nproc)" >"$tmp/build.log" 2>&1 ||
  { tail -20 "$tmp/build.log"; exit 1; }
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "A: this tree ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', modified')); B: $rev"
# revisions before the build/bin split (build/bench/bin for benchmarks) built it into build/bin
bin_b="$tmp/build/bench/bin/bench_cpu_step"
[ -x "$bin_b" ] || bin_b="$tmp/build/bin/bench_cpu_step"
median_of() { grep -E '^step:' | sed -E 's/.*median ([0-9.]+) ms.*/\1/'; }
a=() b=()
for r in $(seq "$rounds"); do
  x=$(./build/bench/bin/bench_cpu_step "$@" | median_of)
  y=$("$bin_b" "$@" | median_of)
  a+=("$x") b+=("$y")
  echo "round $r: A $x ms, B $y ms"
done
. bench/lib_step.sh
ma=$(med "${a[@]}") mb=$(med "${b[@]}")
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "step: A %.1f ms, B %.1f ms (medians of the rounds); A/B = %.3f\n", a, b, a / b }'
