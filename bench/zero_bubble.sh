#!/usr/bin/env bash
# The zero-bubble H1 pipeline schedule's step time on the CPU (docs/parallelism.md "Zero-bubble H1 schedule"): a GPT of
# 8 layers (h=256, seq 256) over 2 pipeline stages under mpirun, one thread per stage (one core each on a 2-core
# machine), 8 micro batches of 2 per step, ZeRO-1. The runs alternate 1F1B, --enable-zbh1-pipeline and
# --enable-zbh1-pipeline --enable-zbh1-exact-semantics (ROUNDS triples of ITERS iterations); each run's time per
# iteration is the median of its logged iterations after the first two, and the figures are the medians of the
# triples' ratios to 1F1B. The bound beside them: the step times of both schedules simulated at unit costs (F = B =
# W, a whole backward 2; tests/parallel/test_zbh1_schedule.py), alone (3m + p - 1 against 3(m + p - 1)) and with this
# engine's stage-level recompute (every stage but the last reruns a forward before each backward but the one right
# after it), which makes stage 0 the slowest and leaves the schedule little but the pipeline's start to shorten.
#   bench/zero_bubble.sh [ROUNDS] [ITERS]        (default 3 triples of 8 iterations; needs mpirun)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/pretrain_gpt ] || bash scripts/build.sh >/dev/null
command -v mpirun >/dev/null || { echo "zero_bubble: mpirun not found (apt-get install openmpi-bin)" >&2; exit 1; }
rounds=${1:-3} iters=${2:-8}
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1}}\n' > "$tmp/ds.json"
shape=(--num-layers 8 --hidden-size 256 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256
       --micro-batch-size 2 --global-batch-size 16 --vocab-size 1024 --mock-data --lr 1e-4 --train-iters "$iters"
       --log-interval 1 --eval-iters 0 --deepspeed --deepspeed_config "$tmp/ds.json" --pipeline-model-parallel-size 2)
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "shape: 8 layers, h=256, seq 256, vocab 1024; PP=2 (4 layers a stage), 8 micro batches of 2, ZeRO-1, one thread a stage"
. bench/lib_step.sh
base=() zb=() ex=() r_zb=() r_ex=()
for r in $(seq "$rounds"); do
  "${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" >"$tmp/1f1b.log" 2>&1
  "${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" --enable-zbh1-pipeline >"$tmp/zb.log" 2>&1
  "${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" --enable-zbh1-pipeline --enable-zbh1-exact-semantics \
    >"$tmp/ex.log" 2>&1
  a=$(per_iter "$tmp/1f1b.log") b=$(per_iter "$tmp/zb.log") c=$(per_iter "$tmp/ex.log")
  base+=("$a") zb+=("$b") ex+=("$c")
  r_zb+=("$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%.3f", x / y }')")
  r_ex+=("$(awk -v x="$c" -v y="$a" 'BEGIN { printf "%.3f", x / y }')")
done
grep -m1 "> zero-bubble H1 pipeline, stage 1" "$tmp/zb.log" || true
echo "1F1B: $(med "${base[@]}") ms/iteration; ZB-H1: $(med "${zb[@]}") ms ($(med "${r_zb[@]}") of 1F1B; pairs ${r_zb[*]});" \
     "ZB-H1 exact semantics: $(med "${ex[@]}") ms ($(med "${r_ex[@]}"); pairs ${r_ex[*]})"
# the bound: the schedules simulated at unit costs, p = 2, m = 8, alone and with the stage-level recompute
if [ -x build/tests/bin/schedule_tool ] && command -v python3 >/dev/null; then
  python3 tests/parallel/test_zbh1_schedule.py build/tests/bin/schedule_tool | grep -E "^  p=2 m= 8" \
    | sed -e '1s/^ */simulated, the schedule alone: /' -e '2s/^ */simulated, with the stage-level recompute: /'
fi
