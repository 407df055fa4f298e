#!/usr/bin/env bash
# Data parallelism over MPI: pretrain_gpt under mpirun with 2 ranks gives the same losses and gradient
# norms (1e-5 relative, dropout on) as one process with the same global batch, whether each rank runs one
# micro batch or accumulates two; each rank reads its own samples (Megatron's sampler) and dropout masks
# are keyed by the global sample, so the layout does not change the computation.
# Usage: test_mpi_dp.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --mock-data --vocab-size 64 --lr 3e-3 --train-iters 6 --log-interval 1 --eval-interval 6 --eval-iters 2
      --global-batch-size 16)
field() { grep -E "^ iteration " <<<"$1" | sed -E "s/.*$2: ([0-9.E+-]+).*/\1/" | tr '\n' ' '; }
close() { # two space-separated lists, relative tolerance
  awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { n = split(a, x, " "); m = split(b, y, " "); if (n != m || n == 0) exit 1;
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
      if (d > tol * s + 1e-12) exit 1 } }'
}

ref=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 2>&1)
[ -n "$(field "$ref" "lm loss")" ] || { echo "$ref" | tail -5; }
for case in "8 2 ranks x 1 micro batch" "4 2 ranks x 2 micro batches"; do
  set -- $case
  mbs=$1; shift
  out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size "$mbs" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && close "$(field "$ref" "lm loss")" "$(field "$out" "lm loss")" 1e-5 \
     && close "$(field "$ref" "grad norm")" "$(field "$out" "grad norm")" 1e-4 \
     && grep -q "data_parallel_size ........................... 2\|data_parallel_size \.* 2" <<<"$out"; then
    ok "DP=2 ($*) = one process: losses $(field "$out" "lm loss" | cut -d' ' -f1,6)"
  else
    bad "DP=2 ($*)" "rc=$rc ref '$(field "$ref" "lm loss")' got '$(field "$out" "lm loss")'"; echo "$out" | tail -4
  fi
done
# validation averages over the data-parallel ranks too
v1=$(grep -F "validation loss at the end of training for val data" <<<"$ref" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
v2=$(grep -F "validation loss at the end of training for val data" <<<"$out" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
if [ -n "$v1" ] && close "$v1" "$v2" 1e-5; then ok "validation loss equal ($v1 vs $v2)"; else bad "validation loss" "'$v1' vs '$v2'"; fi

# --deepspeed comms_logger: DeepSpeed's summary of the gradient all-reduces (112384 floats = 439.0 KB, one per
# iteration) and the loss averages (8 B: 4 training + 1 validation)
tmpd=$(mktemp -d)
printf '%s\n' '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "comms_logger": {"enabled": true}}' > "$tmpd/cl.json"
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --train-iters 4 --eval-interval 4 --eval-iters 1 \
      --deepspeed --deepspeed_config "$tmpd/cl.json" 2>&1)
rm -rf "$tmpd"
if grep -qE "^Comm. Op +Message Size +Count +Total Latency\(ms\) +Avg Latency\(ms\) +tput_avg \(Gbps\) +busbw_avg \(Gbps\)" <<<"$out" \
   && grep -qE "^ +439.0 KB +4 +[0-9.]+" <<<"$out" && grep -qE "^ +8.0 B +5 +[0-9.]+" <<<"$out"; then
  ok "comms_logger summary: 4 gradient all-reduces of 439.0 KB, 5 loss averages"
else
  bad "comms_logger summary" "$(grep -A3 'Comm. Op' <<<"$out")"
fi

# an error on the command line is reported once (rank 0) and ends every rank
out=$(timeout 60 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 3 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "is not divisible by --micro-batch-size 3" <<<"$out"; then
  ok "a bad batch size ends the job (rc=$rc)"
else
  bad "bad batch size under mpirun" "rc=$rc $(tail -2 <<<"$out")"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
