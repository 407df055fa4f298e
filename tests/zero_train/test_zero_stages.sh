#!/usr/bin/env bash
# ZeRO stages 1 and 2 (docs/zero.md) under mpirun: the same losses and gradient norms as stage 0 (1e-6
# relative, as printed) over 10 iterations with gradient accumulation, at DP=2 and DP=4 and TP=2 x DP=2, with small buckets,
# with reduce_scatter off, in fp16 (DeepSpeed's DynamicLossScaler: hysteresis lines, then halving) and bf16;
# the optimizer state per rank shrinks with the data-parallel size; Lamb on a partition and an overflow at the
# minimum scale stop with their messages (stage 3 and ZeRO with pipeline parallelism: test_zero3.sh).
# Usage: test_zero_stages.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
. "$(dirname "$0")/zero_lib.sh"
optim_mib() { grep -m1 "memory plan (MiB)" <<<"$1" | sed -E 's/.*optimizer state ([0-9.]+).*/\1/'; }

for np in 2 4; do
  cfg s0 '"zero_optimization": {"stage": 0}'
  ref=$(run $np s0)
  lref=$(field "$ref" "lm loss") gref=$(field "$ref" "grad norm")
  [ -n "$lref" ] || { bad "DP=$np stage 0" "$(tail -3 <<<"$ref")"; continue; }
  for case in "s1|\"zero_optimization\": {\"stage\": 1}" \
              "s2|\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": 5000, \"allgather_bucket_size\": 7000}" \
              "s2ar|\"zero_optimization\": {\"stage\": 2, \"reduce_scatter\": false}"; do
    name=${case%%|*}
    cfg "$name" "${case#*|}"
    out=$(run $np "$name")
    if close "$lref" "$(field "$out" "lm loss")" 1e-6 && close "$gref" "$(field "$out" "grad norm")" 1e-6 \
       && grep -q "> ZeRO stage" <<<"$out"; then
      ok "DP=$np $name = stage 0 (10 iterations, 16/(2x$np) micro batches each): final loss $(field "$out" "lm loss" | awk '{print $NF}')"
    else
      bad "DP=$np $name" "stage 0 '$lref' got '$(field "$out" "lm loss")' $(grep -m2 error <<<"$out")"
    fi
    if [ "$name" = s1 ]; then
      est=$(grep -m1 "> ZeRO memory: DeepSpeed's estimate_zero2_model_states_mem_needs(" <<<"$out")
      P=$(sed -E 's/.*mem_needs\(([0-9]+) params.*/\1/' <<<"$est") gpu=$(sed -E 's/.*: ([0-9.]+) MiB per GPU.*/\1/' <<<"$est")
      want=$(awk -v P="$P" -v G=$np 'BEGIN { printf "%.1f", (2 * P + int(18 * P / G)) / 1048576 }')
      [ -n "$P" ] && [ "$gpu" = "$want" ] && ok "DP=$np the estimator line: $P params, $gpu MiB per GPU (2P + 18P/G)" \
        || bad "DP=$np estimator line" "'$est' (want $want MiB)"
      a=$(optim_mib "$ref") b=$(optim_mib "$out")
      awk -v a="$a" -v b="$b" -v n=$np 'BEGIN { exit !(b > 0 && b <= a / n * 1.01 + 0.05) }' \
        && ok "DP=$np optimizer state per rank: $a MiB -> $b MiB" || bad "DP=$np optimizer state" "$a -> $b MiB"
    fi
  done
done

# tensor x data parallelism: TP=2 x DP=2, the partitions cut each rank's tensor-parallel shard
ref=$(run 4 s0 --tensor-model-parallel-size 2)
for name in s1 s2; do
  out=$(run 4 $name --tensor-model-parallel-size 2)
  if close "$(field "$ref" "lm loss")" "$(field "$out" "lm loss")" 1e-6 && close "$(field "$ref" "grad norm")" "$(field "$out" "grad norm")" 1e-6 \
     && [ -n "$(field "$out" "lm loss")" ]; then
    ok "TP=2 x DP=2 $name = stage 0"
  else
    bad "TP=2 x DP=2 $name" "'$(field "$ref" "lm loss")' vs '$(field "$out" "lm loss")' $(grep -m1 error <<<"$out")"
  fi
done

# optimizer offload to NVMe (swap files through runtime/aio): bit-identical to keeping the state in memory,
# pipelined or not, fp32 and fp16 (masters swapped too); the files are gone after the run; the optimizer
# state leaves the memory plan
for prec in fp32 fp16; do
  extra=""; [ $prec = fp16 ] && extra='"fp16": {"enabled": true, "initial_scale_power": 12}, '
  cfg m$prec "$extra\"zero_optimization\": {\"stage\": 2}"
  ref=$(run 2 m$prec)
  for pipe in false true; do
    cfg n$prec$pipe "$extra\"zero_optimization\": {\"stage\": 2, \"sub_group_size\": 7000, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/nvme\", \"pipeline_read\": $pipe, \"buffer_count\": 6}}"
    out=$(run 2 n$prec$pipe)
    if [ "$(field "$ref" "lm loss")" = "$(field "$out" "lm loss")" ] && [ -n "$(field "$out" "lm loss")" ] \
       && grep -q "> offload_optimizer nvme: .* sub-groups of 7000" <<<"$out" && [ -z "$(find "$tmp/nvme" -type f)" ] \
       && [ "$(optim_mib "$out")" = "0.0" ]; then
      ok "offload_optimizer nvme ($prec, pipelined $pipe) = in memory, bit for bit; swap files removed; optimizer state 0.0 MiB in the plan"
    else
      bad "offload nvme $prec $pipe" "'$(field "$ref" "lm loss")' vs '$(field "$out" "lm loss")'; files: $(find "$tmp/nvme" -type f | head -3); $(grep -m1 error <<<"$out")"
    fi
  done
done
mkdir -p "$tmp/ro" && chmod 500 "$tmp/ro"
cfg ro "\"zero_optimization\": {\"stage\": 1, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/ro/x\"}}"
out=$(run 2 ro)
if [ "$(id -u)" = 0 ]; then # root writes anywhere: use a path under a regular file instead
  touch "$tmp/file"
  cfg ro "\"zero_optimization\": {\"stage\": 1, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/file/x\"}}"
  out=$(run 2 ro)
fi
expect "an nvme_path that cannot be created" "offload_optimizer: nvme_path: cannot create $tmp/" "$out"
if [ "$(id -u)" = 0 ] && mkdir -p "$tmp/small" && mount -t tmpfs -o size=64k tmpfs "$tmp/small" 2>/dev/null; then
  cfg full "\"zero_optimization\": {\"stage\": 1, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$tmp/small\"}}"
  out=$(run 2 full)
  expect "a full disk" "no space left on device (ENOSPC)" "$out"
  [ -z "$(find "$tmp/small" -type f)" ] && ok "no swap file left on the full disk" || bad "full disk" "files left: $(find "$tmp/small" -type f)"
  umount "$tmp/small"
else
  echo "SKIP full disk: cannot mount a small tmpfs here (needs root)"
fi

# fp16 under ZeRO: DeepSpeed's DynamicLossScaler (hysteresis 2: the first overflow only spends it)
cfg f1 '"fp16": {"enabled": true, "initial_scale_power": 20, "hysteresis": 2}, "zero_optimization": {"stage": 1}'
cfg f2 '"fp16": {"enabled": true, "initial_scale_power": 20, "hysteresis": 2}, "zero_optimization": {"stage": 2, "reduce_bucket_size": 5000}'
o1=$(run 2 f1) o2=$(run 2 f2)
first=$(grep -m1 "OVERFLOW" <<<"$o2" | sed -E 's/.*\[deepspeed\] //')
if [ "$first" = "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1048576, but hysteresis is 2. Reducing hysteresis to 1" ] \
   && grep -q "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1048576, reducing to 524288$" <<<"$o2" \
   && grep -q "(DeepSpeed DynamicLossScaler)" <<<"$o2" && close "$(field "$o1" "lm loss")" "$(field "$o2" "lm loss")" 1e-6; then
  ok "fp16 ZeRO-2 = ZeRO-1, DynamicLossScaler lines: '$first'"
else
  bad "fp16 ZeRO" "first '$first'; $(grep -c OVERFLOW <<<"$o2") lines; '$(field "$o1" "lm loss")' vs '$(field "$o2" "lm loss")'"
fi
cfg b0 '"bf16": {"enabled": true}, "zero_optimization": {"stage": 0}'
cfg b2 '"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}'
o0=$(run 2 b0) o2=$(run 2 b2)
if grep -q "gradients stored in bf16" <<<"$o2" && close "$(field "$o0" "lm loss")" "$(field "$o2" "lm loss")" 0.01; then
  ok "bf16 ZeRO-2 (bf16 gradient accumulation, as DeepSpeed's default with ZeRO) within 1% of stage 0"
else
  bad "bf16 ZeRO-2" "'$(field "$o0" "lm loss")' vs '$(field "$o2" "lm loss")'"
fi

# the legacy boolean form is stage 1
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "zero_optimization": true}\n' > "$tmp/legacy.json"
out=$(run 2 legacy --train-iters 2)
grep -q "> ZeRO stage 1: " <<<"$out" && ok "\"zero_optimization\": true runs stage 1" || bad "legacy form" "$(grep -m1 error <<<"$out")"

# refusals, before training
cfg lamb '"optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}, "zero_optimization": {"stage": 1}'
expect "Lamb on a partition" "Lamb's trust ratio needs whole parameter tensors" "$(run 2 lamb)"
cfg min '"fp16": {"enabled": true, "initial_scale_power": 30, "min_loss_scale": 1073741824, "hysteresis": 1}, "zero_optimization": {"stage": 1}'
out=$(run 2 min)
# (both ranks stop with the message; their lines may interleave in mpirun's merged output)
if grep -qF "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run." <<<"$out" \
   && grep -q "loss scale: " <<<"$out" && ! grep -q "^ iteration " <<<"$out"; then
  ok "overflow at the minimum scale stops the run with DeepSpeed's message"
else
  bad "at-minimum stop" "$(grep -m2 "error\|OVERFLOW" <<<"$out")"
fi
echo "ZeRO stages: $pass passed, $fail failed"
[ $fail -eq 0 ]
