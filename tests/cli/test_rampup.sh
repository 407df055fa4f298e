#!/usr/bin/env bash
# --rampup-batch-size <start> <increment> <ramp-up samples> on pretrain_gpt (one process): the global batch sizes,
# consumed samples and tokens, iteration count and learning rates against an independent transcription of
# Megatron-DeepSpeed's microbatches.py / update_train_iters / scheduler (rampup_oracle.py) for several settings;
# the losses of a ramped run equal, line for line, a chain of fixed-batch runs that feed the same samples with the
# same batch sizes through checkpoints; a run stopped mid-ramp and resumed equals the straight run; the ds_config
# batch triple (train_batch_size is the final batch) and ZeRO stages 1 and 2 ramp the same; the argument dump and
# Megatron's ramp-up line; bad values refused before any work with the values named.
# Usage: test_rampup.sh path/to/pretrain_gpt [python3]
set -u
BIN=${1:?usage: test_rampup.sh path/to/pretrain_gpt [python3]}
PY=${2:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
T=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
   --micro-batch-size 2 --lr 1e-3 --min-lr 1e-4 --mock-data --vocab-size 128 --log-interval 1 --eval-iters 0)

# the log lines without the timings and the "/ train-iters" (which differs between the chained runs)
lines() { grep -E "^ iteration | validation loss at" <<<"$1" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second.*//; s/iteration +([0-9]+)\/ *[0-9]+/iteration \1/'; }
# "iteration samples tokens batch lr" of every log line, then "train_iters N" from the first line
seq_of() {
  grep -E "^ iteration " <<<"$1" | head -1 | sed -E 's/^ iteration +[0-9]+\/ *([0-9]+) .*/train_iters \1/'
  grep -E "^ iteration " <<<"$1" | sed -E 's/^ iteration +([0-9]+)\/ *[0-9]+ \| consumed samples: +([0-9]+) \| consumed tokens: +([0-9]+) \|.* learning rate: ([0-9.E+-]+) \| global batch size: +([0-9]+) \|.*/\1 \2 \3 \5 \4/'
}
# the oracle's lines against the run's: integers exactly, learning rates to the log's 4 significant digits
same_seq() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
a = sys.argv[1].strip().splitlines()
b = sys.argv[2].strip().splitlines()
if len(a) != len(b) or len(a) < 2:
    print("  %d lines against %d" % (len(a), len(b))); sys.exit(1)
if a[0] != b[0]:
    print("  %s against %s" % (a[0], b[0])); sys.exit(1)
for x, y in zip(a[1:], b[1:]):
    x, y = x.split(), y.split()
    if x[:4] != y[:4] or abs(float(x[4]) - float(y[4])) > 6e-4 * abs(float(y[4])) + 1e-12:
        print("  run %s against Megatron-DeepSpeed %s" % (" ".join(x), " ".join(y))); sys.exit(1)
PYEOF
}
# oracle_case NAME "ORACLE KEY=VALUES" FLAGS...
oracle_case() {
  local name=$1 keys=$2
  shift 2
  local out ref
  out=$(timeout 120 "$BIN" "${T[@]}" "$@" 2>&1)
  ref=$("$PY" "$HERE/rampup_oracle.py" lr=1e-3 min_lr=1e-4 seq=32 mbs=2 dp=1 $keys)
  if [ $? -eq 0 ] && same_seq "$(seq_of "$out")" "$ref"; then
    ok "$name ($(($(wc -l <<<"$ref") - 1)) iterations: batch sizes $(awk 'NR > 1 { print $4 }' <<<"$ref" | uniq | tr '\n' ' ')match Megatron-DeepSpeed)"
  else
    bad "$name" "$(grep -m1 error <<<"$out")"
  fi
}

# 1. the ramp against Megatron-DeepSpeed's formulas
oracle_case "4 -> 16 by 4 over 60 samples, sample warmup and linear decay" \
  "start=4 incr=4 ramp=60 gbs=16 train_samples=200 style=linear warmup_samples=12 decay_samples=200" \
  --global-batch-size 16 --train-samples 200 --rampup-batch-size 4 4 60 --lr-warmup-samples 12
oracle_case "2 -> 12 by 2 over 37 samples (7.4 per increment), cosine" \
  "start=2 incr=2 ramp=37 gbs=12 train_samples=150 style=cosine warmup_samples=0 decay_samples=150" \
  --global-batch-size 12 --train-samples 150 --rampup-batch-size 2 2 37 --lr-decay-style cosine
oracle_case "increments shorter than a batch (2 -> 16 over 10 samples skips sizes)" \
  "start=2 incr=2 ramp=10 gbs=16 train_samples=100 style=linear warmup_samples=0 decay_samples=80" \
  --global-batch-size 16 --train-samples 100 --rampup-batch-size 2 2 10 --lr-decay-samples 80
oracle_case "a partial last batch is dropped (train samples 203)" \
  "start=4 incr=4 ramp=60 gbs=16 train_samples=203 style=linear warmup_samples=0 decay_samples=203" \
  --global-batch-size 16 --train-samples 203 --rampup-batch-size 4 4 60
oracle_case "token warmup, cosine token decay, --train-tokens ends the run inside the ramp" \
  "start=4 incr=4 ramp=60 gbs=16 train_samples=1000 style=cosine warmup_samples=0 decay_samples=1000 warmup_tokens=256 decay_tokens=3000 train_tokens=1500" \
  --global-batch-size 16 --train-samples 1000 --rampup-batch-size 4 4 60 --train-tokens 1500 --lr-warmup-tokens 256 \
  --lr-decay-tokens 3000 --lr-decay-style cosine
oracle_case "sample warmup ending on a ramp step, then linear token decay" \
  "start=4 incr=4 ramp=60 gbs=16 train_samples=200 style=linear warmup_samples=20 decay_samples=200 decay_tokens=5000" \
  --global-batch-size 16 --train-samples 200 --rampup-batch-size 4 4 60 --lr-warmup-samples 20 --lr-decay-tokens 5000
oracle_case "micro batches of 4 (1, 2, 3, then 4 per step)" \
  "start=4 incr=4 ramp=40 gbs=16 train_samples=120 style=linear warmup_samples=0 decay_samples=120 mbs=4" \
  --global-batch-size 16 --train-samples 120 --rampup-batch-size 4 4 40 --micro-batch-size 4

# 2. the losses: a ramped run equals fixed-batch runs chained through checkpoints with the ramp's batch sizes
# (4 for 5 steps, 8 for 3, 12 for 2, then 16), the same samples in the same order and the same schedule
R=(--lr-decay-samples 200 --lr-warmup-samples 8 --eval-iters 2 --eval-interval 4)
ramp=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 16 --train-samples 200 --rampup-batch-size 4 4 60 2>&1)
chain=""
c1=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 4 --train-samples 200 --save ck --save-interval 5 \
     --exit-interval 5 2>&1)
c2=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 8 --train-samples 200 --load ck --save ck \
     --save-interval 8 --exit-interval 8 2>&1)
c3=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 12 --train-samples 200 --load ck --save ck \
     --save-interval 10 --exit-interval 10 2>&1)
c4=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 16 --train-samples 288 --load ck 2>&1) # 18 iterations
chain=$(printf '%s\n%s\n%s\n%s\n' "$(lines "$c1")" "$(lines "$c2")" "$(lines "$c3")" "$(lines "$c4")")
if [ "$(lines "$ramp" | grep -c "^ iteration")" -eq 18 ] && [ "$(lines "$ramp" | grep -c validation)" -eq 6 ] &&
   [ "$chain" == "$(lines "$ramp")" ]; then
  ok "ramped run = fixed batches 4, 8, 12, 16 chained through checkpoints (18 log lines identical: losses, lr, grad norm, samples, tokens; validation at iterations 4, 8, 12, 16 and the end (val and test) with the current batch)"
else
  bad "ramped run = chained fixed batches" "$(diff <(echo "$chain") <(lines "$ramp") | head -4)"
fi
# the first steps equal a fixed run of the start batch size (no checkpoint involved)
if [ "$(lines "$c1" | grep "^ iteration")" == "$(lines "$ramp" | grep "^ iteration" | head -5)" ]; then ok "the first 5 steps equal a fixed batch of 4"
else bad "first steps" "$(diff <(lines "$c1" | grep "^ iteration") <(lines "$ramp" | grep "^ iteration" | head -5) | head -4)"; fi

# 3. stopped mid-ramp (iteration 7, batch 8) and resumed: the same following steps
rm -rf ck
first=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 16 --train-samples 200 --rampup-batch-size 4 4 60 \
        --save ck --save-interval 7 --exit-interval 7 2>&1)
rest=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --global-batch-size 16 --train-samples 200 --rampup-batch-size 4 4 60 \
       --load ck 2>&1)
if [ "$(printf '%s\n%s\n' "$(lines "$first")" "$(lines "$rest")")" == "$(lines "$ramp")" ] &&
   [ "$(lines "$rest" | grep -c "^ iteration")" -eq 11 ]; then
  ok "resumed at iteration 7 inside the ramp: iterations 8-18 identical to the straight run"
else
  bad "resume mid-ramp" "$(diff <(printf '%s\n%s\n' "$(lines "$first")" "$(lines "$rest")") <(lines "$ramp") | head -4)"
fi

# 4. --deepspeed: train_batch_size is the batch after the ramp; the steps' gradient accumulation follows the ramp,
# with and without ZeRO, and the losses equal the Megatron path's (clipping 1.0 as Megatron's default)
for stage in 0 1 2; do
  printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "zero_optimization": {"stage": %d}}\n' \
    "$stage" > ds$stage.json
  out=$(timeout 120 "$BIN" "${T[@]}" "${R[@]}" --train-samples 200 --rampup-batch-size 4 4 60 --deepspeed \
        --deepspeed_config ds$stage.json 2>&1)
  if [ "$(lines "$out" | sed -E 's/ grad norm: [0-9.]+ \|//')" == "$(lines "$ramp" | sed -E 's/ grad norm: [0-9.]+ \|//')" ]; then
    ok "--deepspeed, ZeRO stage $stage, train_batch_size 16: the same 18 steps as the Megatron path"
  else
    bad "--deepspeed ZeRO stage $stage" "$(grep -m1 error <<<"$out")$(diff <(lines "$out") <(lines "$ramp") | head -3)"
  fi
done

# 5. the argument dump and Megatron's line
out=$(timeout 60 "$BIN" "${T[@]}" --global-batch-size 16 --train-samples 20 --rampup-batch-size 4 4 8 2>&1)
if grep -qE "^  rampup_batch_size \.+ \['4', '4', '8'\]$" <<<"$out" &&
   grep -qxF "will use batch size rampup starting from global batch size 4 to global batch size 16 with batch size increments 4 over 8 samples." <<<"$out"; then
  ok "argument dump rampup_batch_size ['4', '4', '8'] and Megatron's ramp-up line"
else
  bad "dump" "$(grep -m1 -E "rampup|error" <<<"$out")"
fi
out=$(timeout 60 "$BIN" "${T[@]}" --global-batch-size 16 --train-samples 20 2>&1)
grep -qE "^  rampup_batch_size \.+ None$" <<<"$out" && ok "without the flag the dump shows None" ||
  bad "dump None" "$(grep -m1 rampup <<<"$out")"

# TensorBoard's batch-size tag (and its vs-samples x axis) follows the ramp as the log line does
out=$(timeout 60 "$BIN" "${T[@]}" --global-batch-size 16 --train-samples 200 --rampup-batch-size 4 4 60 \
      --tensorboard-dir tb --log-batch-size-to-tensorboard 2>&1)
want=$(grep -E "^ iteration " <<<"$out" | sed -E 's/^ iteration +([0-9]+)\/.* consumed samples: +([0-9]+) .* global batch size: +([0-9]+) .*/\1 \2 \3/')
got=$(PYTHONPATH="$HERE/../monitor" "$PY" - tb <<'PYEOF'
import glob, sys
from tfevents import scalars
ev = scalars(glob.glob(sys.argv[1] + "/events.out.tfevents.*")[0])
steps = [(s, v) for t, s, v in ev if t == "batch-size/batch-size"]
samples = [s for t, s, v in ev if t == "batch-size/batch-size vs samples"]
for (it, v), x in zip(steps, samples):
    print("%d %d %d" % (it, x, v))
PYEOF
)
if [ "$(wc -l <<<"$want")" -eq 18 ] && [ "$got" == "$want" ]; then
  ok "TensorBoard batch-size (vs steps and vs samples) = the log line's global batch size at each of 18 steps"
else
  bad "TensorBoard batch-size" "$(diff <(echo "$got") <(echo "$want") | head -3)"
fi

# 6. bad values, refused before any work
expect_fail() {
  local name=$1 message=$2
  shift 2
  local out
  out=$(timeout 60 "$BIN" "$@" 2>&1)
  if [ $? -ne 0 ] && grep -qF -- "$message" <<<"$out" && ! grep -q "^ iteration" <<<"$out"; then ok "$name"
  else bad "$name" "$(grep -m1 error <<<"$out")"; fi
}
G=("${T[@]}" --global-batch-size 16 --train-samples 200)
expect_fail "two values" "error: bad argument value: --rampup-batch-size 4 4: expected the following format: --rampup-batch-size <start batch size> <batch size increment> <ramp-up samples> (got 2 values)" \
  "${G[@]}" --rampup-batch-size 4 4
expect_fail "no value" "(got 0 values)" "${G[@]}" --rampup-batch-size
expect_fail "not an integer" "error: bad argument value: --rampup-batch-size 4 4.5 60: the batch size increment '4.5' is not an integer" \
  "${G[@]}" --rampup-batch-size 4 4.5 60
expect_fail "start 0" "--rampup-batch-size 0 4 60: the start batch size must be > 0" "${G[@]}" --rampup-batch-size 0 4 60
expect_fail "increment 0" "--rampup-batch-size 4 0 60: the batch size increment must be > 0" "${G[@]}" --rampup-batch-size 4 0 60
expect_fail "ramp-up samples 0 (Megatron divides by zero)" \
  "--rampup-batch-size 4 4 0: the ramp-up samples must be in [1, 2^53] (Megatron-DeepSpeed divides by zero with 0)" \
  "${G[@]}" --rampup-batch-size 4 4 0
expect_fail "start = global batch" "error: inconsistent arguments: --rampup-batch-size 16 4 60: the start batch size 16 must be less than the global batch size 16 (--global-batch-size): there is nothing to ramp" \
  "${G[@]}" --rampup-batch-size 16 4 60
expect_fail "start above the global batch" "the start batch size 20 must be less than the global batch size 16 (--global-batch-size)" \
  "${G[@]}" --rampup-batch-size 20 4 60
expect_fail "interval not a multiple of the increment" \
  "--rampup-batch-size 4 5 60: expected global batch size interval (12 = 16 - 4) to be divisible by global batch size increment (5)" \
  "${G[@]}" --rampup-batch-size 4 5 60
expect_fail "more than 10^6 increments" \
  "--rampup-batch-size 1 1 9007199254740992: 1999999 increments from 1 to the global batch size 2000000; at most 1000000 are supported (use a larger increment)" \
  "${T[@]}" --global-batch-size 2000000 --train-samples 9007199254740992 --rampup-batch-size 1 1 9007199254740992
expect_fail "with --train-iters" "expected no batch-size rampup for iteration-based training (--train-iters 10); give the length as --train-samples" \
  "${T[@]}" --global-batch-size 16 --train-iters 10 --rampup-batch-size 4 4 60
expect_fail "a ramp batch not divisible by micro batch x DP" \
  "error: inconsistent arguments: --rampup-batch-size 6 2 60: the global batch size 6 (from 0 consumed samples on) is not divisible by --micro-batch-size 4 x data-parallel size 1 = 4" \
  "${T[@]}" --micro-batch-size 4 --global-batch-size 16 --train-samples 200 --rampup-batch-size 6 2 60
expect_fail "--train-samples inside the ramp" \
  "--rampup-batch-size 4 4 60: --train-samples 50 ends inside the ramp-up, whose 10 steps consume 68 samples" \
  "${T[@]}" --global-batch-size 16 --train-samples 50 --rampup-batch-size 4 4 60
expect_fail "token decay after a warmup the ramp does not end a step on" \
  "a warmup of 22 samples does not end on an iteration" \
  "${G[@]}" --rampup-batch-size 4 4 60 --lr-warmup-samples 22 --lr-decay-tokens 5000
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2}\n' > ds8.json
expect_fail "--deepspeed: the start above train_batch_size" \
  "the start batch size 12 must be less than the global batch size 8 (train_batch_size 8 in ds8.json)" \
  "${T[@]}" --train-samples 200 --rampup-batch-size 12 4 60 --deepspeed --deepspeed_config ds8.json

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
