#!/usr/bin/env bash
# Expert parallelism's cost on the CPU (issue 18, docs/moe.md): bench/moe_step.sh's 8-expert top-1 model (MoE in every
# second layer) at DP=2 under mpirun, one thread per rank, with --moe-expert-parallel-size 1 (every rank runs all 8
# experts over its own tokens) and 2 (each rank runs 4 experts over both ranks' tokens, the rows exchanged by two
# all-to-alls in the forward and two in the backward of each MoE layer). The runs alternate EP=1, EP=2 (ROUNDS pairs of
# ITERS iterations); each run's time per iteration is the median of its logged iterations after the first two, and the
# figure is the median of the pairs' ratios EP=2 / EP=1 (the same losses: tests/moe). Also the bytes of one
# all_to_all_single (DeepSpeed's comms logger), and each run's memory plan: at EP=2 a rank holds only its 4 experts
# of each MoE layer (docs/moe.md), against the bound of the parameters the other 4 take (their weights, fp32
# gradients and Adam moments: 4 x 4 bytes each); and the plans under ZeRO-2 at EP=1 and EP=2.
#   bench/moe_ep_step.sh [ROUNDS] [ITERS]        (default 3 pairs of 8 iterations; needs mpirun)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/pretrain_gpt ] || bash scripts/build.sh >/dev/null
command -v mpirun >/dev/null || { echo "moe_ep_step: mpirun not found (apt-get install openmpi-bin)" >&2; exit 1; }
rounds=${1:-3} iters=${2:-8}
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2)
shape=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256
       --micro-batch-size 8 --global-batch-size 16 --vocab-size 1024 --make-vocab-size-divisible-by 128 --mock-data
       --lr 1e-4 --train-iters "$iters" --log-interval 1 --eval-iters 0 --attention-dropout 0 --hidden-dropout 0
       --num-experts 8 --expert-interval 2 --moe-loss-coeff 0.01)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
echo "shape: 4 layers, h=256, seq 256, micro batch 8 (2048 tokens per rank), FFN 1024; 8 experts in layers 2 and 4, top-1;" \
     "DP=2, one thread per rank"
. bench/lib_step.sh
ratios=() one_ms=() two_ms=()
for r in $(seq "$rounds"); do
  "${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" --moe-expert-parallel-size 1 >"$tmp/ep1.log" 2>&1
  "${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" --moe-expert-parallel-size 2 >"$tmp/ep2.log" 2>&1
  a=$(per_iter "$tmp/ep1.log") b=$(per_iter "$tmp/ep2.log")
  one_ms+=("$a") two_ms+=("$b") ratios+=("$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%.3f", x / y }')")
done
echo "EP=1: $(med "${one_ms[@]}") ms/iteration; EP=2: $(med "${two_ms[@]}") ms/iteration; EP=2 / EP=1 $(med "${ratios[@]}")" \
     "(pairs: ${ratios[*]})"
plan() { grep -m1 "memory plan (MiB)" "$1" | sed 's/^> memory plan (MiB): //'; }
echo "memory plan per rank (MiB), EP=1: $(plan "$tmp/ep1.log")"
echo "memory plan per rank (MiB), EP=2: $(plan "$tmp/ep2.log")"
held=$(grep -m1 -oE "\(([0-9]+) of the ([0-9]+) expert parameter elements\)" "$tmp/ep2.log" | grep -oE "[0-9]+" | head -2 | tr '\n' ' ')
read -r mine all <<<"$held"
awk -v m="$mine" -v a="$all" -v p1="$(plan "$tmp/ep1.log")" -v p2="$(plan "$tmp/ep2.log")" 'BEGIN {
  split(p1, x, " "); split(p2, y, " ")        # params X | grads X | optimizer state X | activations X | total X
  saved = (x[2] - y[2]) + (x[5] - y[5]) + (x[9] - y[9]); bound = (a - m) * 16 / 1048576
  printf "EP=2 holds %d of the %d expert parameter elements: params + grads + optimizer state %.1f MiB smaller per rank;" \
         " the other experts'"'"' weights, gradients and moments are %.1f MiB (saved / bound %.2f)\n", m, a, saved, bound, saved / bound }'
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}\n' >"$tmp/z2.json"
for ep in 1 2; do # ZeRO-2: the experts' state partitioned over the ranks holding them (at EP=2 one rank each)
  "${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" --train-iters 1 --moe-expert-parallel-size $ep --deepspeed \
    --deepspeed_config "$tmp/z2.json" >"$tmp/z2_$ep.log" 2>&1
  echo "memory plan per rank (MiB), ZeRO-2, EP=$ep: $(plan "$tmp/z2_$ep.log")"
done
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "comms_logger": {"enabled": true, "prof_ops": ["all_to_all_single"]}}\n' \
  >"$tmp/cl.json"
"${mpi[@]}" ./build/bin/pretrain_gpt "${shape[@]}" --moe-expert-parallel-size 2 --deepspeed \
  --deepspeed_config "$tmp/cl.json" >"$tmp/cl.log" 2>&1
echo "all_to_all_single per call (comms logger, message size: count): $(grep -A12 '^all_to_all_single' "$tmp/cl.log" |
  grep -E '^ +[0-9.]+ [KMG]?B +[0-9]+' | awk '{ printf "%s%s %s: %s", sep, $1, $2, $3; sep = ", " }')"
