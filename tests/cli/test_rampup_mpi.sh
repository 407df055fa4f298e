#!/usr/bin/env bash
# --rampup-batch-size across processes: data parallelism (each rank accumulates 1 to 4 micro batches as the batch
# grows), ZeRO-2 over 2 ranks, Megatron's 1F1B pipeline (PP=2) and the interleaved schedule (PP=3 x 2 chunks, its
# steps rebuilt for each micro-batch count) give the log lines of one process: the same batch sizes, consumed
# samples, tokens and learning rates exactly, losses and validation losses to 1e-5, grad norms to the log's last
# digit; a DP=2 run stopped inside the ramp and resumed equals the straight DP=2 run line for line.
# Usage: test_rampup_mpi.sh path/to/pretrain_gpt [python3]   (SKIP, exit 77, without mpirun)
set -u
BIN=${1:?usage: test_rampup_mpi.sh path/to/pretrain_gpt [python3]}
PY=${2:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/common.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
export OMP_NUM_THREADS=1
T=(--num-layers 6 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 --lr 1e-3
   --min-lr 1e-4 --mock-data --vocab-size 128 --log-interval 1 --eval-iters 1 --eval-interval 4
   --lr-decay-samples 200 --lr-warmup-samples 8)
lines() { grep -E "^ iteration |^ validation loss at" <<<"$1" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second.*//'; }
# the same lines; losses to 1e-5 relative, grad norms to 0.002 (printed with 3 decimals), the rest exactly
same_lines() {
  "$PY" - "$1" "$2" <<'PYEOF'
import re, sys
a, b = sys.argv[1].strip().splitlines(), sys.argv[2].strip().splitlines()
if len(a) != len(b) or len(a) < 10:
    print("  %d lines against %d" % (len(a), len(b))); sys.exit(1)
num = re.compile(r"(lm loss(?: value| PPL)?|grad norm): ([0-9.E+-]+)")
for x, y in zip(a, b):
    if num.sub(r"\1: _", x) != num.sub(r"\1: _", y):
        print("  %s\n  against one process:\n  %s" % (x, y)); sys.exit(1)
    for (k, u), (_, v) in zip(num.findall(x), num.findall(y)):
        u, v = float(u), float(v)
        tol = 0.002 if k == "grad norm" else 1e-5 * abs(v)
        if abs(u - v) > tol:
            print("  %s %r against %r in: %s" % (k, u, v, y)); sys.exit(1)
PYEOF
}
check() { # NAME REFERENCE-LINES RUN-OUTPUT
  local got
  got=$(lines "$3")
  if same_lines "$got" "$2"; then ok "$1 ($(grep -c "^ iteration" <<<"$got") iterations, batch sizes $(sed -nE 's/.*global batch size: +([0-9]+).*/\1/p' <<<"$got" | uniq | tr '\n' ' ')= one process)"
  else bad "$1" "$(grep -m1 error <<<"$3")"; fi
}

# micro batch 2: batches 4, 8, 12, 16 (2-8 micro batches in one process and with PP=2, 1-4 per rank with DP=2)
A=("${T[@]}" --micro-batch-size 2 --global-batch-size 16 --train-samples 160 --rampup-batch-size 4 4 30)
ref=$(lines "$(timeout 120 "$BIN" "${A[@]}" 2>&1)")
check "DP=2" "$ref" "$(timeout 300 "${mpi[@]}" -np 2 "$BIN" "${A[@]}" 2>&1)"
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "zero_optimization": {"stage": 2}}\n' > z2.json
check "DP=2 with ZeRO-2 (--deepspeed, train_batch_size 16)" "$ref" \
  "$(timeout 300 "${mpi[@]}" -np 2 "$BIN" "${A[@]}" --deepspeed --deepspeed_config z2.json 2>&1)"
check "PP=2 (1F1B over 2 to 8 micro batches)" "$ref" \
  "$(timeout 300 "${mpi[@]}" -np 2 "$BIN" "${A[@]}" --pipeline-model-parallel-size 2 2>&1)"

# micro batch 1: batches 3, 6, 9, 12 = 3-12 micro batches, multiples of the 3 stages of the interleaved schedule
B=("${T[@]}" --micro-batch-size 1 --global-batch-size 12 --train-samples 120 --rampup-batch-size 3 3 30)
ref3=$(lines "$(timeout 120 "$BIN" "${B[@]}" 2>&1)")
check "interleaved PP=3 x 2 chunks (the schedule rebuilt for 3, 6, 9, 12 micro batches)" "$ref3" \
  "$(timeout 300 "${mpi[@]}" -np 3 "$BIN" "${B[@]}" --pipeline-model-parallel-size 3 \
     --num-layers-per-virtual-pipeline-stage 1 2>&1)"
out=$(timeout 60 "${mpi[@]}" -np 3 "$BIN" "${T[@]}" --micro-batch-size 1 --global-batch-size 12 --train-samples 120 \
      --rampup-batch-size 2 2 30 --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1 2>&1)
if [ $? -ne 0 ] && grep -qF "number of microbatches (2) is not divisible by pipeline-model-parallel-size (3) when using interleaved schedule (global batch size 2 of --rampup-batch-size" <<<"$out" &&
   ! grep -q "^ iteration" <<<"$out"; then
  ok "interleaved schedule: a ramp batch of 2 micro batches over 3 stages is refused before training"
else
  bad "interleaved refusal" "$(grep -m1 error <<<"$out")"
fi

# DP=2 stopped at iteration 6 (batch 8) and resumed
straight=$(lines "$(timeout 300 "${mpi[@]}" -np 2 "$BIN" "${A[@]}" 2>&1)")
first=$(timeout 300 "${mpi[@]}" -np 2 "$BIN" "${A[@]}" --save ck --save-interval 6 --exit-interval 6 2>&1)
rest=$(timeout 300 "${mpi[@]}" -np 2 "$BIN" "${A[@]}" --load ck 2>&1)
if [ "$(printf '%s\n%s\n' "$(lines "$first")" "$(lines "$rest")")" == "$straight" ] &&
   grep -qE "^ iteration +7/" <<<"$rest"; then
  ok "DP=2 resumed at iteration 6 inside the ramp: the following lines identical to the straight run"
else
  bad "DP=2 resume" "$(diff <(printf '%s\n%s\n' "$(lines "$first")" "$(lines "$rest")") <(echo "$straight") | head -3)"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
