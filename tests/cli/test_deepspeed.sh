#!/usr/bin/env bash
# pretrain_gpt --deepspeed --deepspeed_config: the config's optimizer, scheduler, clipping and batch triple
# drive training; DeepSpeed's step/lr/mom, throughput and timer lines; csv_monitor and tensorboard files;
# config errors refused before any work. Usage: test_deepspeed.sh PRETRAIN_GPT
set -u
bin="$1"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 8 --mock-data --vocab-size 64 --lr 3e-3 --attention-dropout 0 --hidden-dropout 0)
losses() { grep -E "^ iteration " <<<"$1" | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }

# 1. a WarmupDecayLR schedule, AdamW, clipping, monitors, steps_per_print and wall_clock_breakdown
cat > "$tmp/ds.json" <<EOF
{
  // hjson-style comments and trailing commas are accepted, as DeepSpeed accepts them
  "train_batch_size": 16,
  "train_micro_batch_size_per_gpu": 8,
  "steps_per_print": 5,
  "gradient_clipping": 1.0,
  "wall_clock_breakdown": true,
  "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}},
  "scheduler": {"type": "WarmupDecayLR",
                "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 5, "total_num_steps": 20}},
  "csv_monitor": {"enabled": true, "output_path": "$tmp/logs", "job_name": "run1"},
  "tensorboard": {"enabled": true, "output_path": "$tmp/logs", "job_name": "run1"},
}
EOF
out=$("$bin" "${tiny[@]}" --train-iters 20 --log-interval 10 --eval-interval 20 --eval-iters 1 \
      --deepspeed --deepspeed_config "$tmp/ds.json" 2>&1)
rc=$?
[ $rc -eq 0 ] && ok "trains with a ds_config" || { bad "trains with a ds_config" "rc=$rc"; echo "$out" | tail -5; }
grep -q "^DeepSpeedEngine configuration:" <<<"$out" && grep -q "scheduler.params.total_num_steps" <<<"$out" \
  && ok "effective configuration printed" || bad "effective configuration printed" "no block"
# the lr after each 5th step, from DeepSpeed's WarmupDecayLR formula evaluated by Python
want=$("$py" - <<'EOF'
import math
lo, hi, nw, total = 0.0, 3e-3, 5, 20
for step in (5, 10, 15, 20):
    t = step - 1                       # last_batch_iteration after `step` scheduler steps
    gamma = math.log(t + 1) / math.log(nw) if t < nw else max(0.0, float(total - t) / float(max(1.0, total - nw)))
    print("step=%d, skipped=0, lr=[%r], mom=[(0.9, 0.95)]" % (step, lo + (hi - lo) * gamma))
EOF
)
got=$(grep -oE "step=[0-9]+, skipped=.*" <<<"$out")
if [ -n "$got" ] && [ "$got" = "$want" ]; then ok "step/lr/mom lines follow WarmupDecayLR exactly"
else bad "step/lr/mom lines" "got '$got' want '$want'"; fi
if grep -qE "\[INFO\] \[logging.py:96:log_dist\] \[Rank 0\] time \(ms\) \| fwd: [0-9.]+ \| bwd: [0-9.]+ \| bwd_inner: [0-9.]+ \| bwd_allreduce: [0-9.]+ \| step: [0-9.]+$" <<<"$out" \
   && grep -qE "epoch=0/micro_step=40/global_step=20, RunningAvgSamplesPerSec=[0-9.]+, CurrSamplesPerSec=[0-9.]+, MemAllocated=[0-9.]+GB" <<<"$out"; then
  ok "wall-clock timers and throughput lines in DeepSpeed's format"
else
  bad "timer/throughput lines" "$(grep -E 'time \(ms\)|RunningAvg' <<<"$out" | head -2)"
fi
d="$tmp/logs/run1"
if [ "$(head -1 "$d/Train_Samples_train_loss.csv" | tr -d '\r')" = "step,train_loss" ] \
   && [ "$(wc -l < "$d/Train_Samples_train_loss.csv")" -eq 21 ] && [ "$(wc -l < "$d/Train_Samples_lr.csv")" -eq 21 ] \
   && [ -f "$d/Train_Samples_elapsed_time_ms_forward.csv" ] && ls "$d"/events.out.tfevents.* >/dev/null 2>&1 \
   && [ "$(sed -n 2p "$d/Train_Samples_lr.csv" | tr -d '\r')" = "16,0.0" ]; then
  ok "csv_monitor (20 rows per metric, lr at samples 16 = 0.0 after the first warmup step) and tensorboard files"
else
  bad "monitor files" "$(ls "$d" 2>&1 | head -3; head -3 "$d/Train_Samples_lr.csv" 2>&1)"
fi

# 1b. the schedule resumed by params.last_batch_iteration k = 7: the first step runs at the optimizer's lr (DeepSpeed's
# constructor leaves it: iteration 2's loss is that of a run at the constant lr 3e-3), the n-th scheduler step gives
# the schedule at 7 + n (the lr Megatron's line prints after iteration n, and DeepSpeed's step=n line)
cat > "$tmp/ds_resume.json" <<'EOF'
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "steps_per_print": 5, "gradient_clipping": 1.0,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-3, "warmup_num_steps": 5,
                                                   "total_num_steps": 20, "last_batch_iteration": 7}}}
EOF
cat > "$tmp/ds_const.json" <<'EOF'
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "steps_per_print": 5, "gradient_clipping": 1.0,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}}
EOF
out=$("$bin" "${tiny[@]}" --train-iters 10 --log-interval 1 --eval-iters 0 --deepspeed --deepspeed_config \
      "$tmp/ds_resume.json" 2>&1)
const=$("$bin" "${tiny[@]}" --train-iters 2 --log-interval 1 --eval-iters 0 --lr-decay-style constant --deepspeed \
        --deepspeed_config "$tmp/ds_const.json" 2>&1)
want=$("$py" - <<'EOF'
lo, hi, nw, total = 0.0, 3e-3, 5, 20
for step in (5, 10):
    t = 7 + step
    gamma = max(0.0, float(total - t) / float(max(1.0, total - nw)))
    print("step=%d, skipped=0, lr=[%r], mom=[(0.9, 0.95)]" % (step, lo + (hi - lo) * gamma))
EOF
)
got=$(grep -oE "step=[0-9]+, skipped=.*" <<<"$out")
first=$(grep -m1 -E "iteration +1/" <<<"$out" | grep -oE "learning rate: [0-9.E+-]+")
l2=$(losses "$out" | cut -d' ' -f2) c2=$(losses "$const" | cut -d' ' -f2)
if [ "$got" = "$want" ] && [ "$first" = "learning rate: 2.400E-03" ] && [ -n "$l2" ] && [ "$l2" = "$c2" ]; then
  ok "scheduler.params.last_batch_iteration 7: step 1 at the optimizer's lr (iteration 2's loss $l2 = the constant run's), then the schedule from t = 8"
else
  bad "last_batch_iteration" "first '$first'; loss 2 '$l2' vs constant '$c2'; got '$got' want '$want'"
fi

# 2. an optimizer block without a scheduler equals the same Megatron flags (Megatron's constant schedule)
cat > "$tmp/adamw.json" <<'EOF'
{"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
 "optimizer": {"type": "AdamW", "params": {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}}
EOF
o1=$("$bin" "${tiny[@]}" --train-iters 6 --log-interval 1 --eval-iters 0 --lr-decay-style constant \
     --deepspeed --deepspeed_config "$tmp/adamw.json" 2>&1)
o2=$("$bin" "${tiny[@]}" --train-iters 6 --log-interval 1 --eval-iters 0 --lr-decay-style constant \
     --global-batch-size 16 --adam-beta2 0.95 --weight-decay 0.1 --clip-grad 1.0 2>&1)
if [ -n "$(losses "$o1")" ] && [ "$(losses "$o1")" = "$(losses "$o2")" ]; then
  ok "ds_config AdamW + batch triple = the same Megatron flags, loss for loss"
else
  bad "optimizer block equivalence" "'$(losses "$o1")' vs '$(losses "$o2")'"
fi

# 3. flops_profiler: the report at profile_step, with the parameter count of the model, and the same losses
cat > "$tmp/fp.json" <<'EOF'
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8,
 "flops_profiler": {"enabled": true, "profile_step": 2, "module_depth": -1, "top_modules": 1, "detailed": true}}
EOF
cat > "$tmp/nofp.json" <<'EOF'
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8}
EOF
o1=$("$bin" "${tiny[@]}" --train-iters 4 --log-interval 1 --eval-iters 0 --deepspeed --deepspeed_config "$tmp/fp.json" 2>&1)
o2=$("$bin" "${tiny[@]}" --train-iters 4 --log-interval 1 --eval-iters 0 --deepspeed --deepspeed_config "$tmp/nofp.json" 2>&1)
params=$(grep -oE "model parallel rank \(0, 0\): [0-9]+" <<<"$o1" | grep -oE "[0-9]+$")
if grep -q "^Profile Summary at step 3:" <<<"$o1" && grep -qE "^params per GPU: +112.38 K" <<<"$o1" \
   && [ "$params" = "112384" ] && grep -q "^------------------------------ Detailed Profile per GPU" <<<"$o1" \
   && grep -qE "^ +\(0\): ParallelTransformerLayer\($" <<<"$o1" \
   && [ "$(grep -c 'DeepSpeed Flops Profiler' <<<"$o1")" -eq 1 ] && [ "$(losses "$o1")" = "$(losses "$o2")" ]; then
  ok "flops_profiler report once at profile_step ($params params), losses unchanged"
else
  bad "flops_profiler" "$(grep -E 'Profile Summary|params per GPU' <<<"$o1" | head -2) '$(losses "$o1")' vs '$(losses "$o2")'"
fi

# timers.throughput.enabled false silences the throughput lines (DeepSpeed's ThroughputTimer)
printf '%s\n' '{"train_batch_size": 8, "steps_per_print": 1, "timers": {"throughput": {"enabled": false}}}' > "$tmp/tp.json"
o=$("$bin" "${tiny[@]}" --train-iters 4 --eval-iters 0 --deepspeed --deepspeed_config "$tmp/tp.json" 2>&1)
if [ "$(grep -c RunningAvgSamplesPerSec <<<"$o")" -eq 0 ] && [ "$(grep -c 'step=[0-9]*, skipped' <<<"$o")" -eq 4 ]; then
  ok "timers.throughput.enabled false: step lines only"
else bad "throughput disabled" "$(grep -c RunningAvg <<<"$o") throughput lines"; fi

# 4. errors before any work
expect_error() { # name, expected text, json, extra args...
  local name="$1" want="$2" json="$3"; shift 3
  printf '%s\n' "$json" > "$tmp/e.json"
  local o; o=$("$bin" "${tiny[@]}" --train-iters 2 --eval-iters 0 --deepspeed --deepspeed_config "$tmp/e.json" "$@" 2>&1)
  local rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$o" && ! grep -q "training \.\.\." <<<"$o"; then ok "refuses $name"
  else bad "refuses $name" "rc=$rc: $(tail -2 <<<"$o")"; fi
}
expect_error "a misspelt top-level key" 'unknown key "zero_optimisation"' \
  '{"train_batch_size": 8, "zero_optimisation": {"stage": 0}}'
expect_error "an inconsistent batch triple" \
  "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 10 != 8 * 1 * 1" \
  '{"train_batch_size": 10, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1}'
expect_error "a contradicting Megatron flag" "--micro-batch-size 8 contradicts train_micro_batch_size_per_gpu 4" \
  '{"train_micro_batch_size_per_gpu": 4}'
expect_error "offload_param nvme without a path" "zero_optimization.offload_param.device \"nvme\" needs zero_optimization.offload_param.nvme_path" \
  '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}'
expect_error "fp16_master_weights_and_grads (fp16 master weights: refused)" "fp16.fp16_master_weights_and_grads true is not supported yet: lands with the mixed-precision-variant work (fp16 master weights and gradients" \
  '{"train_batch_size": 8, "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}'
o=$("$bin" "${tiny[@]}" --train-iters 2 --deepspeed_config "$tmp/ds.json" 2>&1)
if [ $? -ne 0 ] && grep -qF -- "--deepspeed_config $tmp/ds.json is given without --deepspeed" <<<"$o"; then
  ok "refuses --deepspeed_config without --deepspeed"
else bad "--deepspeed_config alone" "$(tail -1 <<<"$o")"; fi
o=$("$bin" "${tiny[@]}" --train-iters 2 --deepspeed 2>&1)
if [ $? -ne 0 ] && grep -qF -- "--deepspeed needs --deepspeed_config FILE" <<<"$o"; then ok "refuses --deepspeed without a config"
else bad "--deepspeed alone" "$(tail -1 <<<"$o")"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
