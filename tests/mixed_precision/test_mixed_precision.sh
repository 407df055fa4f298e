#!/usr/bin/env bash
# Mixed precision end to end on the CPU (docs/mixed_precision.md): bf16 and fp16 (static scale) loss
# curves stay within 1% of fp32; Megatron's dynamic scaler skips the overflowing first iterations and
# halves the scale as its hysteresis rule says; the DeepSpeed fp16 block prints DeepSpeed's overflow
# lines, counts skipped steps in its step line and writes the loss_scale monitor event; bad combinations
# are refused with their message; under mpirun (when present) DP=2 fp16 follows one process.
# Usage: test_mixed_precision.sh PRETRAIN_GPT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --mock-data --vocab-size 512 --lr 1e-3 --train-iters 30 --log-interval 5 --eval-interval 30 --eval-iters 2
      --micro-batch-size 4 --global-batch-size 8 --seed 7)

ref=$("$bin" "${tiny[@]}" 2>&1)
lref=$(field "$ref" "lm loss")
[ -n "$lref" ] || { echo "$ref" | tail -5; bad "fp32 reference" "no loss lines"; }

# bf16: fp32 master weights, fp32 gradient accumulation; no loss scaling
out=$("$bin" "${tiny[@]}" --bf16 2>&1)
if close "$lref" "$(field "$out" "lm loss")" 0.01 && grep -q "accumulate and all-reduce gradients in fp32 for bfloat16" <<<"$out" \
   && grep -q "> mixed precision: bf16 weights with fp32 master weights; gradients accumulated in fp32" <<<"$out" \
   && [ "$(field "$out" "loss scale" | tr ' ' '\n' | sort -u | tr -d '\n')" = "1.0" ]; then
  ok "bf16 within 1% of fp32: $(field "$out" "lm loss" | cut -d' ' -f6) vs $(echo $lref | cut -d' ' -f6)"
else
  bad "bf16" "fp32 '$lref' bf16 '$(field "$out" "lm loss")'"
fi
# bf16 must not be bit-identical to fp32 (the weights really are rounded)
[ "$(field "$out" "lm loss")" != "$lref" ] && ok "bf16 rounds the weights (losses differ from fp32 in the last digits)" \
  || bad "bf16" "losses identical to fp32: no rounding happened"

# fp16 with a static scale: no overflow at 1024, within 1% of fp32
out=$("$bin" "${tiny[@]}" --fp16 --loss-scale 1024 2>&1)
skipped=$(field "$out" "number of skipped iterations" | tr ' ' '+')0
if close "$lref" "$(field "$out" "lm loss")" 0.01 && [ $((skipped)) -eq 0 ] \
   && [ "$(field "$out" "loss scale" | tr ' ' '\n' | sort -u | tr -d '\n')" = "1024.0" ]; then
  ok "fp16 static scale 1024 within 1% of fp32, no skipped iterations"
else
  bad "fp16 static" "fp32 '$lref' fp16 '$(field "$out" "lm loss")' skipped $skipped"
fi

# fp16 with Megatron's dynamic scaler from 2**32 (hysteresis 2, window 1000): the first overflow only uses
# up the hysteresis, every later one halves the scale; the skipped iterations are counted and excluded
# from the loss average. Expected scale after k skips (k >= 1): 2**32 / 2**(k-1).
out=$("$bin" "${tiny[@]}" --fp16 --log-interval 1 2>&1)
sk=($(field "$out" "number of skipped iterations"))
sc=($(field "$out" "loss scale"))
nskip=0 good=1
for i in "${!sk[@]}"; do
  nskip=$((nskip + ${sk[$i]}))
  want=$(awk -v k=$nskip 'BEGIN { e = 32 - (k > 0 ? k - 1 : 0); printf "%.1f", 2^e }')
  [ "${sc[$i]}" = "$want" ] || { good=0; echo "  iteration $((i + 1)): scale ${sc[$i]}, expected $want after $nskip skips"; break; }
done
first_line=$(grep -E "^ iteration +1/" <<<"$out")
if [ $good = 1 ] && [ $nskip -ge 5 ] && [ ${#sk[@]} -eq 30 ] && ! grep -q "lm loss" <<<"$first_line" \
   && ! grep -q "grad norm" <<<"$first_line"; then
  ok "Megatron dynamic scaler: $nskip skipped iterations, scale ${sc[0]} -> ${sc[29]}; skipped lines carry no loss or grad norm"
else
  bad "Megatron dynamic scaler" "skips '${sk[*]}' scales '${sc[*]}'"
fi
last=$(field "$out" "lm loss" | awk '{print $NF}')
close "$(echo $lref | awk '{print $NF}')" "$last" 0.02 && ok "fp16 dynamic: final loss $last within 2% of fp32" \
  || bad "fp16 dynamic final loss" "$last vs $(echo $lref | awk '{print $NF}')"

# DeepSpeed fp16 block without ZeRO: FP16_Optimizer's rule (no hysteresis) and lines
cat > "$tmp/ds16.json" <<'JSON'
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "steps_per_print": 10,
 "fp16": {"enabled": true, "initial_scale_power": 24, "loss_scale_window": 10},
 "csv_monitor": {"enabled": true, "output_path": "OUT", "job_name": "mp"}}
JSON
sed -i "s#OUT#$tmp/csv#" "$tmp/ds16.json"
out=$("$bin" "${tiny[@]}" --deepspeed --deepspeed_config "$tmp/ds16.json" 2>&1)
n_over=$(grep -c "\[Rank 0\] Overflow detected. Skipping step. Attempted loss scale: " <<<"$out")
first=$(grep -m1 "Overflow detected" <<<"$out" | sed -E 's/.*Attempted loss scale: //')
stepline=$(grep -m1 "\[Rank 0\] step=10, skipped=" <<<"$out" | sed -E 's/.*skipped=([0-9]+).*/\1/')
if [ "$first" = "16777216, reducing to 8388608.0" ] && [ "$n_over" -ge 3 ] && [ -n "$stepline" ] && [ "$stepline" -ge 3 ] \
   && grep -q "Reducing dynamic loss scale from 16777216 to 8388608.0" <<<"$out" \
   && [ -f "$tmp/csv/mp/Train_Samples_loss_scale.csv" ]; then
  ok "DeepSpeed fp16: '$first', $n_over overflow lines, step line skipped=$stepline, loss_scale monitor file"
else
  bad "DeepSpeed fp16" "first '$first' n=$n_over skipped='$stepline'; $(ls "$tmp/csv/mp" 2>&1 | tr '\n' ' ')"
fi
# the monitor records the scale after each step: the first value is the halved scale
v=$(sed -n 2p "$tmp/csv/mp/Train_Samples_loss_scale.csv" 2>/dev/null | cut -d, -f2)
awk -v v="$v" 'BEGIN { exit !(v == 8388608) }' && ok "loss_scale event after step 1: $v" || bad "loss_scale event" "'$v'"

# errors, before any work
check_err() { # name, expected message fragment, args...
  local name="$1" msg="$2"; shift 2
  local o; o=$("$bin" "${tiny[@]}" "$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$msg" <<<"$o" && ! grep -q "building GPT model" <<<"$o"; then ok "refused: $name"
  else bad "refused: $name" "rc=$rc: $(tail -2 <<<"$o")"; fi
}
check_err "--fp16 with --bf16" "error: inconsistent arguments: --fp16 and --bf16 cannot be used together" --fp16 --bf16
check_err "--loss-scale 0" "error: bad argument value: --loss-scale 0.0: must be > 0" --fp16 --loss-scale 0
check_err "--hysteresis 0" "error: bad argument value: --hysteresis 0: must be > 0" --fp16 --hysteresis 0
printf '%s\n' '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": false}}' > "$tmp/off.json"
check_err "--fp16 against fp16.enabled false" "--fp16 contradicts fp16.enabled false in $tmp/off.json" \
  --fp16 --deepspeed --deepspeed_config "$tmp/off.json"
printf '%s\n' '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": true},
  "data_types": {"grad_accum_dtype": "bf16"}}' > "$tmp/bfacc.json"
check_err "bf16 accumulation without ZeRO" "Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO" \
  --deepspeed --deepspeed_config "$tmp/bfacc.json"
printf '%s\n' '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": true, "auto_cast": true}}' > "$tmp/ac.json"
check_err "fp16.auto_cast" "auto_cast" --deepspeed --deepspeed_config "$tmp/ac.json"

# "auto" takes the flag
printf '%s\n' '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": "auto"}}' > "$tmp/auto.json"
out=$("$bin" "${tiny[@]}" --train-iters 2 --bf16 --deepspeed --deepspeed_config "$tmp/auto.json" 2>&1)
grep -q "> mixed precision: bf16 weights" <<<"$out" && ok "bf16.enabled auto takes --bf16" || bad "bf16 auto" "$(tail -2 <<<"$out")"

# data parallelism: fp16 gradients all-reduced in fp16 across 2 ranks follow one process closely
if command -v mpirun >/dev/null; then
  one=$("$bin" "${tiny[@]}" --fp16 --loss-scale 1024 --micro-batch-size 8 2>&1)
  two=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --fp16 --loss-scale 1024 2>&1)
  if close "$(field "$one" "lm loss")" "$(field "$two" "lm loss")" 1e-3; then
    ok "fp16 DP=2 (fp16 all-reduce) within 1e-3 of one process"
  else
    bad "fp16 DP=2" "'$(field "$one" "lm loss")' vs '$(field "$two" "lm loss")'"
  fi
  # pipeline parallelism: the overflow test spans the stages, the tied embeddings' gradient sum runs in the
  # communication type; bf16 and fp16 (dynamic scale: the same skipped iterations) follow one process
  pp=(--num-layers 4 --pipeline-model-parallel-size 2)
  for prec in "--bf16" "--fp16"; do
    one=$("$bin" "${tiny[@]}" --num-layers 4 $prec 2>&1)
    two=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${pp[@]}" $prec 2>&1)
    if close "$(field "$one" "lm loss")" "$(field "$two" "lm loss")" 1e-5 \
       && [ "$(field "$one" "number of skipped iterations")" = "$(field "$two" "number of skipped iterations")" ] \
       && [ -n "$(field "$two" "lm loss")" ]; then
      ok "$prec PP=2 = one process (1e-5), same skipped iterations ($(field "$two" "number of skipped iterations" | tr -d ' '))"
    else
      bad "$prec PP=2" "'$(field "$one" "lm loss")' vs '$(field "$two" "lm loss")' $(grep -m1 error <<<"$two")"
    fi
  done
else
  echo "SKIP fp16 DP=2 and PP=2: mpirun not found"
fi

echo "mixed precision: $pass passed, $fail failed"
[ $fail -eq 0 ]
