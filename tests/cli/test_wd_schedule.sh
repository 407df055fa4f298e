#!/usr/bin/env bash
# Megatron's weight-decay increment (--weight-decay-incr-style, --start-weight-decay, --end-weight-decay) on
# pretrain_gpt: the argument dump and the refusals of validate_args; a linear schedule trains differently from either
# constant end; the weight decay of every step is Megatron's get_wd at the samples consumed before it (a scheduled
# run = a chain of one-iteration constant-decay runs with those values from a transcription of get_wd, weights and
# optimizer states bitwise); resume (3 + 3 = 6 iterations, bitwise) and the scheduler check of load_state_dict;
# --deepspeed with and without a ds_config scheduler block.
# Usage: test_wd_schedule.sh path/to/pretrain_gpt [python3 with h5py]
set -u
BIN=${1:?usage: test_wd_schedule.sh path/to/pretrain_gpt [python3]}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
PY=${2:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
H5="$HERE/../checkpoint/h5_oracle.py"
source "$HERE/../lib/common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
export OMP_NUM_THREADS=1
# 6 iterations of global batch 4: the increment runs over 24 samples; lr 1e-2 makes a decay of 0.1 visible in the log
T=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
   --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3 --mock-data --vocab-size 128
   --log-interval 1 --eval-iters 0 --log-params-norm --train-iters 6)
LIN=(--weight-decay-incr-style linear --start-weight-decay 0 --end-weight-decay 0.1)
COS=(--weight-decay-incr-style cosine --start-weight-decay 0.02 --end-weight-decay 0.3)
run() { timeout 120 "$BIN" "${T[@]}" "$@" 2>&1; }
# "loss norm" of every iteration: the lm loss and the parameters' norm after that iteration's step
curve() { grep -E "^ iteration " <<<"$1" | sed -E 's/.*lm loss: ([0-9.E+-]+) .*params norm: ([0-9.]+) .*/\1 \2/' | tr '\n' ' '; }
have_h5=0
"$PY" -c "import h5py, numpy" 2>/dev/null && have_h5=1
# h5_oracle.py MODE A B, or a note when h5py is missing (the log comparisons still run)
h5() { if [ $have_h5 = 1 ]; then "$PY" "$H5" "$@" 2>&1; else echo "equal (h5py missing: not compared)"; fi; }
expect_fail() { # expect_fail NAME MESSAGE FLAGS...
  local name=$1 message=$2 out
  shift 2
  out=$(run "$@")
  if [ $? -ne 0 ] && grep -qF -- "$message" <<<"$out"; then ok "$name"; else bad "$name" "$(grep -m1 error <<<"$out")"; fi
}
dump() { grep -E "^  $2 \.+ " <<<"$1" | sed -E 's/.* //'; }

# 1. the argument dump (Megatron prints the values validate_args leaves) and the refusals
out=$(run --train-iters 1)
[ "$(dump "$out" start_weight_decay) $(dump "$out" end_weight_decay) $(dump "$out" weight_decay_incr_style)" == \
  "0.01 0.01 constant" ] && ok "dump: constant style, both ends --weight-decay 0.01" ||
  bad "constant dump" "$(grep -E "weight_decay" <<<"$out" | tr -s ' .' ' ')"
lin=$(run "${LIN[@]}")
[ "$(dump "$lin" start_weight_decay) $(dump "$lin" end_weight_decay) $(dump "$lin" weight_decay_incr_style)" == \
  "0.0 0.1 linear" ] && grep -qF "> weight decay: linear increment from 0.0 to 0.1 over 24 samples, then 0.1" <<<"$lin" &&
  ok "dump: linear 0.0 -> 0.1, and the start-up line names the 24 samples" ||
  bad "linear dump" "$(grep -E "weight.decay" <<<"$lin" | tr -s ' .' ' ')"
expect_fail "linear without the ends" "error: missing argument: --weight-decay-incr-style linear needs --start-weight-decay and --end-weight-decay (the weight decay goes from the one to the other over the run); both are missing" \
  --weight-decay-incr-style linear
expect_fail "cosine without --end-weight-decay" "error: missing argument: --weight-decay-incr-style cosine needs --start-weight-decay and --end-weight-decay (the weight decay goes from the one to the other over the run); --end-weight-decay is missing" \
  --weight-decay-incr-style cosine --start-weight-decay 0.01
expect_fail "constant with --start-weight-decay" "error: inconsistent arguments: --start-weight-decay 0.0 with --weight-decay-incr-style constant (the default): the weight decay is then --weight-decay 0.05 throughout; give --weight-decay-incr-style linear or cosine for a schedule from --start-weight-decay to --end-weight-decay (Megatron asserts start_weight_decay is None)" \
  --weight-decay 0.05 --start-weight-decay 0
expect_fail "explicit constant with --end-weight-decay" "error: inconsistent arguments: --end-weight-decay 0.1 with --weight-decay-incr-style constant" \
  --weight-decay-incr-style constant --end-weight-decay 0.1
expect_fail "a decreasing schedule" "error: inconsistent arguments: --end-weight-decay 0.01 is smaller than --start-weight-decay 0.1: the weight decay only increases (Megatron's OptimizerParamScheduler asserts end_wd >= start_wd)" \
  --weight-decay-incr-style linear --start-weight-decay 0.1 --end-weight-decay 0.01
expect_fail "a negative start" "error: bad argument value: --start-weight-decay -0.1: must be >= 0" \
  --weight-decay-incr-style cosine --start-weight-decay -0.1 --end-weight-decay 0.1
expect_fail "an unknown style" "error: bad argument value: --weight-decay-incr-style exponential: invalid choice (choose from constant, linear, cosine)" \
  --weight-decay-incr-style exponential

# 2. linear 0 -> 0.1 trains, differently from constant 0.1 and from constant 0; its first step decays by 0
c01=$(run --weight-decay 0.1)
c0=$(run --weight-decay 0)
L=$(curve "$lin") C01=$(curve "$c01") C0=$(curve "$c0")
first() { cut -d' ' -f1-3 <<<"$1"; } # iteration 1's loss and norm, iteration 2's loss (before the second step)
if grep -q "^ iteration        6/" <<<"$lin" && [ "$L" != "$C01" ] && [ "$L" != "$C0" ] && [ "$(first "$L")" == "$(first "$C0")" ] &&
   [ "$(first "$L")" != "$(first "$C01")" ]; then
  ok "linear 0 -> 0.1 differs from constant 0.1 and from constant 0; its first step is constant 0's"
else
  bad "linear against constants" "linear '$L' constant 0.1 '$C01' constant 0 '$C0'"
fi

# 3. each step's weight decay: Megatron's get_wd at the samples before it. The scheduled run equals a chain of
# one-iteration runs with --weight-decay set to those values (resumed with --override-opt_param-scheduler).
wd_values() { # wd_values STYLE START END: the decay of iterations 1..6 (global batch 4, over 24 samples), repr
  "$PY" - "$@" <<'PYEOF'
import math, sys
style, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
for num_steps in range(0, 24, 4):  # OptimizerParamScheduler.get_wd, wd_incr_steps = train_iters x global batch
    r = float(num_steps) / float(24)
    coeff = r if style == "linear" else 0.5 * (math.cos(math.pi * (1 - r)) + 1.0)
    print(repr(start + coeff * (end - start)))
PYEOF
}
chain_case() { # chain_case NAME STYLE START END SCHEDULE-FLAGS...
  local name=$1 style=$2 lo=$3 hi=$4
  shift 4
  local sched chain="" k=0 load=() wd cmp
  sched=$(run "$@" --save "S$style")
  for wd in $(wd_values "$style" "$lo" "$hi"); do
    k=$((k + 1))
    chain+=$(run --weight-decay "$wd" --save "C$style" --exit-interval 1 "${load[@]}")$'\n'
    load=(--load "C$style" --override-opt_param-scheduler)
  done
  cmp=$(h5 full "S$style/global_step6" "C$style/global_step6")
  if [ $k -eq 6 ] && [ -n "$(curve "$sched")" ] && [ "$(curve "$sched")" == "$(curve "$chain")" ] && grep -q "^equal" <<<"$cmp"; then
    ok "$name: 6 steps = 6 one-step runs with --weight-decay $(wd_values "$style" "$lo" "$hi" | tr '\n' ' ')($cmp)"
  else
    bad "$name" "scheduled '$(curve "$sched")' chained '$(curve "$chain")' $cmp $(grep -m1 error <<<"$sched$chain")"
  fi
}
chain_case "linear 0 -> 0.1" linear 0 0.1 "${LIN[@]}"
chain_case "cosine 0.02 -> 0.3" cosine 0.02 0.3 "${COS[@]}"

# 4. resume: 3 + 3 iterations = 6 (losses, norms, every checkpoint dataset and the scheduler state bitwise)
first=$(run "${LIN[@]}" --save R --exit-interval 3)
rest=$(run "${LIN[@]}" --load R --save R)
cmp=$(h5 same Slinear/global_step6 R/global_step6)
if grep -q "^ iteration        4/" <<<"$rest" && ! grep -q "^ iteration        3/" <<<"$rest" &&
   [ "$(curve "$first")$(curve "$rest")" == "$L" ] && grep -q "^equal" <<<"$cmp"; then
  ok "linear, resumed at iteration 3: the 6 iterations and the final checkpoint are the straight run's ($cmp)"
else
  bad "resume" "'$(curve "$first")$(curve "$rest")' vs '$L' $cmp $(grep -m1 error <<<"$rest")"
fi
if [ $have_h5 = 1 ]; then
  keys=$("$PY" -c "import h5py; a = h5py.File('R/global_step6/mp_rank_00_model_states.h5')['lr_scheduler'].attrs
print(a['start_wd'], a['end_wd'], a['wd_incr_style'], a['wd_incr_steps'])" 2>&1)
  [ "$keys" == "0.0 0.1 linear 24" ] && ok "the checkpoint holds Megatron's start_wd, end_wd, wd_incr_style, wd_incr_steps" ||
    bad "scheduler keys" "$keys"
fi
expect_fail "a different --end-weight-decay is refused on resume (Megatron's check)" "R/global_step3/mp_rank_00_model_states.h5: OptimizerParamScheduler: class input value 0.2 and checkpoint value 0.1 for end weight decay do not match" \
  --weight-decay-incr-style linear --start-weight-decay 0 --end-weight-decay 0.2 --load R --load-tag global_step3
expect_fail "a different style is refused on resume" "class input value cosine and checkpoint value linear for weight decay incr style do not match" \
  --weight-decay-incr-style cosine --start-weight-decay 0 --end-weight-decay 0.1 --load R --load-tag global_step3
# a longer run (same --lr-decay-iters): with a linear increment its length changes the values and is refused, as
# Megatron does; with the constant style nothing depends on it and the resume is accepted (a deliberate difference)
expect_fail "a longer linear run is refused on resume" "class input value 32 and checkpoint value 24 for total number of weight decay iterations do not match" \
  "${LIN[@]}" --train-iters 8 --lr-decay-iters 6 --load R --load-tag global_step3
run --save K --exit-interval 3 > /dev/null
out=$(run --train-iters 8 --lr-decay-iters 6 --load K)
grep -qF " > keeping 32 for total number of weight decay iterations (checkpoint value 24): a constant weight decay does not depend on it" <<<"$out" &&
  grep -q "^ iteration        8/" <<<"$out" && ok "a longer constant-decay run resumes (the increment's length is not checked)" ||
  bad "longer constant run" "$(grep -m1 error <<<"$out")"
expect_fail "another constant --weight-decay is refused on resume" "class input value 0.05 and checkpoint value 0.01 for start weight decay do not match" \
  --weight-decay 0.05 --load K
# --use-checkpoint-opt_param-scheduler: Megatron's load_state_dict steps (setting every group's weight decay) before
# it takes the checkpoint's weight-decay keys, so iteration 4 uses the command line's increment (end 0.2 here), as
# the --override-opt_param-scheduler run does; the checkpoint's end 0.1 applies from iteration 5 on
NEW=(--weight-decay-incr-style linear --start-weight-decay 0 --end-weight-decay 0.2 --load R --load-tag global_step3)
use=$(run "${NEW[@]}" --use-checkpoint-opt_param-scheduler --save U --exit-interval 4)
over=$(run "${NEW[@]}" --override-opt_param-scheduler --save O --exit-interval 4)
cmp=$(h5 full U/global_step4 O/global_step4)
if grep -qF " > using checkpoint value 0.1 for end weight decay" <<<"$use" &&
   grep -qF " > overriding end weight decay value to 0.2" <<<"$over" && grep -q "^equal" <<<"$cmp" &&
   [ "$(curve "$use")" == "$(curve "$over")" ] && [ "$(curve "$use")" != "$(cut -d' ' -f7-8 <<<"$L") " ]; then
  ok "--use-checkpoint-opt_param-scheduler takes the checkpoint's end 0.1, after a first step with the command line's ($cmp)"
else
  bad "use-checkpoint" "'$(curve "$use")' '$(curve "$over")' $cmp $(grep -m1 error <<<"$use$over")"
fi
if [ $have_h5 = 1 ]; then
  ends=$("$PY" -c "import h5py
print(*[h5py.File(d + '/global_step4/mp_rank_00_model_states.h5')['lr_scheduler'].attrs['end_wd'] for d in 'UO'])" 2>&1)
  [ "$ends" == "0.1 0.2" ] && ok "the next checkpoints hold end_wd 0.1 (checkpoint's) and 0.2 (command line's)" ||
    bad "end_wd after use/override" "$ends"
fi

# 5. --deepspeed: without a scheduler block Megatron's scheduler (and its weight decay) runs; with one, DeepSpeed's
# scheduler replaces it and the weight decay stays at --start-weight-decay (Megatron-DeepSpeed's first step(0))
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0}' > ds.json
ds=$(run "${LIN[@]}" --deepspeed --deepspeed_config ds.json)
[ -n "$L" ] && [ "$(curve "$ds")" == "$L" ] && ok "--deepspeed without a scheduler block: the linear increment, the same losses" ||
  bad "deepspeed" "'$(curve "$ds")' vs '$L' $(grep -m1 error <<<"$ds")"
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.5}}}' > dso.json
dso=$(run "${LIN[@]}" --deepspeed --deepspeed_config dso.json)
grep -qF "> weight decay: linear increment from 0.0 to 0.1 over 24 samples, then 0.1 (it replaces the ds_config's optimizer.params.weight_decay)" <<<"$dso" &&
  [ -n "$L" ] && [ "$(curve "$dso")" == "$L" ] && ok "--deepspeed with an optimizer block: the increment replaces its weight_decay 0.5" ||
  bad "deepspeed optimizer" "'$(curve "$dso")' vs '$L' $(grep -m1 error <<<"$dso")"
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.01, "warmup_num_steps": 3}}}' > dss.json
dss=$(run "${COS[@]}" --deepspeed --deepspeed_config dss.json)
dsc=$(run --weight-decay 0.02 --deepspeed --deepspeed_config dss.json)
if grep -qF "> --weight-decay-incr-style cosine: the ds_config's scheduler block replaces Megatron's OptimizerParamScheduler, which increments the weight decay; it stays at --start-weight-decay 0.02 for the whole run" <<<"$dss" &&
   [ -n "$(curve "$dss")" ] && [ "$(curve "$dss")" == "$(curve "$dsc")" ]; then
  ok "--deepspeed with a scheduler block: the weight decay stays at --start-weight-decay (= constant 0.02)"
else
  bad "deepspeed scheduler" "'$(curve "$dss")' vs '$(curve "$dsc")' $(grep -m1 error <<<"$dss")"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
