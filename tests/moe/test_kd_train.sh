#!/usr/bin/env bash
# Knowledge distillation and Mixture-of-Students (docs/moe.md, Megatron-DeepSpeed's --mos/--kd): a 4-layer teacher
# with 4 experts in layers 2 and 4 is trained and saved (TP=1, and with mpirun TP=2 at the same seed), then a 2-layer
# student with 2 experts trains with --mos --load-teacher:
#   1. the log keys {total loss, lm loss, moe loss, mos loss} in loss_func's order (kd loss with --kd), the mos loss
#      > 0 and finite, total = lm + moe + mos; validation carries mos loss 0 (no teacher forward in evaluation);
#   2. --kd-beta-ce 0 = the student without a teacher, bit for bit; the KD term changes the run otherwise;
#   3. the teacher loaded from its TP=2 checkpoint = from its TP=1 checkpoint (1e-5);
#   4. a --mos run saved at 3 and resumed to 6 continues bit for bit; the staged recipe: the --mos checkpoint resumed
#      without --mos trains on (keys back to lm/moe); --reset-iteration restarts the iteration count;
#   3b. a TP=2 student (also with --sequence-parallel) with the teacher split over the same ranks = one process;
#   5. refusals before any work and with nothing written: a teacher checkpoint contradicting the teacher flags (the
#      numbers), --mos without --load-teacher, a missing teacher shape flag, a pipelined student,
#      teacher heads a TP=2 student's group does not divide.
# The KD term and its gradient against PyTorch are tests/parity's kd_parity.
# Usage: test_kd_train.sh PRETRAIN_GPT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
data=(--seq-length 32 --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4 --mock-data
      --vocab-size 128 --make-vocab-size-divisible-by 64 --lr 3e-3 --log-interval 1 --seed 1234)
teacher=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --num-experts 4 --moe-loss-coeff 0.01)
student=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --num-experts 2 --moe-loss-coeff 0.01
         --eval-iters 1 --eval-interval 3 --train-iters 6)
tflags=(--num-layers-teacher 4 --hidden-size-teacher 64 --num-attention-heads-teacher 4 --num-experts-teacher 4)
run() { timeout 300 "$bin" "${data[@]}" "$@" 2>&1; }
stud() { run "${student[@]}" "$@"; }
mos() { stud --mos --load-teacher "$tmp/t1" "${tflags[@]}" "$@"; }

run "${teacher[@]}" --train-iters 8 --eval-iters 0 --save "$tmp/t1" >"$tmp/t1.log" || echo "teacher training failed"
have_mpi=0
if command -v mpirun >/dev/null; then
  have_mpi=1
  timeout 300 "${mpi[@]}" -np 2 "$bin" "${data[@]}" "${teacher[@]}" --train-iters 8 --eval-iters 0 \
    --tensor-model-parallel-size 2 --save "$tmp/t2" >"$tmp/t2.log" 2>&1 || echo "TP=2 teacher training failed"
fi

# 1. keys and values
out=$(mos)
keys=$(grep -m1 "^ iteration *1/" <<<"$out" | grep -oE "[a-z]+ loss:" | tr '\n' ' ')
[ "$keys" = "total loss: lm loss: moe loss: mos loss: " ] && ok "the log keys of loss_func with --mos: $keys" \
  || bad "the log keys with --mos" "'$keys'; $(grep -m2 -i error <<<"$out")"
m=$(field "$out" "mos loss") t=$(field "$out" "total loss") l=$(field "$out" "lm loss") e=$(field "$out" "moe loss")
if [ "$(wc -w <<<"$m")" -eq 6 ] && awk -v m="$m" -v t="$t" -v l="$l" -v e="$e" 'BEGIN { n = split(m, a, " ");
     split(t, b, " "); split(l, c, " "); split(e, d, " "); for (i = 1; i <= n; i++) {
     if (!(a[i] > 0 && a[i] < 100)) exit 1; s = c[i] + d[i] + a[i]; if ((b[i] - s)^2 > (1e-5 * b[i])^2) exit 1 } }'; then
  ok "mos loss > 0 and finite ($m), total = lm + moe + mos"
else bad "mos loss > 0, total = lm + moe + mos" "mos '$m' total '$t' lm '$l' moe '$e'"; fi
v=$(grep -m1 "validation loss at iteration 3" <<<"$out")
grep -q "mos loss value: 0.000000E+00" <<<"$v" && grep -q "total loss value" <<<"$v" \
  && ok "validation: the same keys, mos loss 0 (no teacher forward in evaluation)" \
  || bad "validation keys" "$v"
kdk=$(stud --kd --load-teacher "$tmp/t1" "${tflags[@]}" | grep -m1 "^ iteration *1/" | grep -oE "[a-z]+ loss:" | tr '\n' ' ')
[ "$kdk" = "total loss: lm loss: moe loss: kd loss: " ] && ok "--kd logs kd loss: $kdk" || bad "--kd keys" "'$kdk'"
grep -q "building the teacher GPT model" <<<"$out" && [ "$(grep -c "memory plan" <<<"$out")" -ge 2 ] \
  && ok "the teacher's memory plan is printed" || bad "the teacher's memory plan" "$(grep "memory plan" <<<"$out")"

# 2. beta 0 = no teacher; beta 1 differs
plain=$(stud)
beta0=$(mos --kd-beta-ce 0)
[ -n "$(field "$plain" "lm loss")" ] && [ "$(field "$beta0" "lm loss")" = "$(field "$plain" "lm loss")" ] \
  && [ "$(field "$beta0" "grad norm")" = "$(field "$plain" "grad norm")" ] \
  && ok "--kd-beta-ce 0 = the student alone, bit for bit" \
  || bad "--kd-beta-ce 0 = the student alone" "$(field "$beta0" "lm loss") vs $(field "$plain" "lm loss")"
[ "$(field "$out" "lm loss" | awk '{print $NF}')" != "$(field "$plain" "lm loss" | awk '{print $NF}')" ] \
  && ok "the KD term changes the training" || bad "the KD term changes the training" "same losses"

# 3. the teacher's TP=2 checkpoint
if [ $have_mpi = 1 ]; then
  out2=$(stud --mos --load-teacher "$tmp/t2" "${tflags[@]}")
  close "$(field "$out2" "total loss")" "$(field "$out" "total loss")" 1e-5 \
    && close "$(field "$out2" "mos loss")" "$(field "$out" "mos loss")" 1e-5 \
    && ok "teacher from its TP=2 checkpoint = from TP=1 (mos loss $(field "$out2" "mos loss" | awk '{print $NF}'))" \
    || bad "teacher from TP=2 = TP=1" "$(field "$out2" "mos loss") vs $(field "$out" "mos loss"); $(grep -m2 -i error <<<"$out2")"
else
  echo "SKIP the teacher's TP=2 checkpoint: mpirun not found"
fi

# 3b. a tensor-parallel student: the teacher split over the same ranks, the KD term over the whole vocabulary from
# the two ranks' slices (their log-sum-exps combined) = the one-process student
if [ $have_mpi = 1 ]; then
  for extra in "" "--sequence-parallel --kd-temp 2"; do
    one=$(mos $extra)
    two=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${data[@]}" "${student[@]}" --tensor-model-parallel-size 2 \
          --mos --load-teacher "$tmp/t2" "${tflags[@]}" $extra 2>&1)
    if [ "$(field "$two" "mos loss" | wc -w)" -eq 6 ] && close "$(field "$two" "total loss")" "$(field "$one" "total loss")" 1e-5 \
       && close "$(field "$two" "mos loss")" "$(field "$one" "mos loss")" 1e-5 \
       && close "$(field "$two" "grad norm")" "$(field "$one" "grad norm")" 1e-4; then
      ok "a TP=2 student${extra:+ ($extra)} with its TP=2 teacher = one process (mos loss $(field "$two" "mos loss" | awk '{print $NF}'))"
    else
      bad "TP=2 student${extra:+ ($extra)}" "$(field "$two" "mos loss") vs $(field "$one" "mos loss"); $(grep -m2 -i error <<<"$two")"
    fi
  done
else
  echo "SKIP the tensor-parallel student: mpirun not found"
fi

# 4. resume, staged MoS, --reset-iteration
mos --save "$tmp/s" --save-interval 3 --exit-interval 3 >/dev/null
res=$(mos --load "$tmp/s")
[ "$(field "$res" "total loss")" = "$(field "$out" "total loss" | cut -d' ' -f4-)" ] \
  && ok "a --mos run resumed at 3 continues bit for bit" \
  || bad "--mos resume" "$(field "$res" "total loss") vs $(field "$out" "total loss")"
staged=$(stud --load "$tmp/s")
sk=$(grep -m1 "^ iteration *4/" <<<"$staged" | grep -oE "[a-z]+ loss:" | tr '\n' ' ')
if [ "$(wc -w <<<"$(field "$staged" "lm loss")")" -eq 3 ] && [ "$sk" = "lm loss: moe loss: " ] \
   && ! grep -qi nan <<<"$(field "$staged" "lm loss")"; then
  ok "staged MoS: the --mos checkpoint resumed without --mos trains on (iterations 4-6, keys $sk)"
else bad "staged MoS" "'$sk' $(field "$staged" "lm loss"); $(grep -m2 -i error <<<"$staged")"; fi
reset=$(stud --load "$tmp/s" --reset-iteration)
[ "$(grep -c "^ iteration" <<<"$reset")" -eq 6 ] && grep -q "^ iteration *1/ *6 | consumed samples: *4 |" <<<"$reset" \
  && grep -q "reset to 0" <<<"$reset" && ok "--reset-iteration: iterations 1-6 again from consumed samples 0" \
  || bad "--reset-iteration" "$(grep -m1 "^ iteration" <<<"$reset" | cut -c1-120); $(grep -m2 -i error <<<"$reset")"

# 5. refusals before any work, nothing written
expect_error() { # NAME MESSAGE ARGS...: exit 1, the message, no iteration, no checkpoint written
  local out rc
  rm -rf "$tmp/never"
  out=$(stud --save "$tmp/never" "${@:3}"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$2" <<<"$out" && ! grep -q "^ iteration" <<<"$out" && [ ! -e "$tmp/never" ]; then
    ok "refused: $1"
  else bad "refused: $1" "rc=$rc; want: $2; got: $(grep -m2 -i error <<<"$out")"; fi
}
expect_error "a teacher checkpoint with other layers" \
  "--load-teacher $tmp/t1 was saved with num_layers 4, and --num-layers-teacher is 2" \
  --mos --load-teacher "$tmp/t1" --num-layers-teacher 2 --hidden-size-teacher 64 --num-attention-heads-teacher 4 \
  --num-experts-teacher 4
expect_error "a teacher checkpoint with another hidden size" \
  "was saved with hidden_size 64, and --hidden-size-teacher is 32" \
  --mos --load-teacher "$tmp/t1" --num-layers-teacher 4 --hidden-size-teacher 32 --num-attention-heads-teacher 4 \
  --num-experts-teacher 4
expect_error "a teacher checkpoint with other experts" "has 4 experts in layer 2, --num-experts-teacher gives it 8" \
  --mos --load-teacher "$tmp/t1" "${tflags[@]}" --num-experts-teacher 8
expect_error "--mos without --load-teacher" "--mos needs --load-teacher DIR" --mos "${tflags[@]}"
expect_error "--kd without --hidden-size-teacher" "--hidden-size-teacher is required with --kd" \
  --kd --load-teacher "$tmp/t1" --num-layers-teacher 4 --num-attention-heads-teacher 4
expect_error "--kd-temp 0" "--kd-temp 0: must be > 0" --mos --load-teacher "$tmp/t1" "${tflags[@]}" --kd-temp 0
expect_error "a missing teacher checkpoint" "--load-teacher $tmp/none: no checkpoint there" \
  --mos --load-teacher "$tmp/none" "${tflags[@]}"
if [ $have_mpi = 1 ]; then
  out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${data[@]}" "${student[@]}" --pipeline-model-parallel-size 2 \
        --mos --load-teacher "$tmp/t1" "${tflags[@]}" 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -qF -- "--mos with --pipeline-model-parallel-size 2: a teacher beside a pipelined student is not supported, as in Megatron-DeepSpeed" <<<"$out" \
    && ! grep -q "^ iteration" <<<"$out" && ok "refused: a pipelined student (as Megatron-DeepSpeed's weights-only load)" \
    || bad "refused: a pipelined student" "rc=$rc $(grep -m2 -i error <<<"$out")"
  out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${data[@]}" "${student[@]}" --tensor-model-parallel-size 2 \
        --mos --load-teacher "$tmp/t1" --num-layers-teacher 4 --hidden-size-teacher 96 \
        --num-attention-heads-teacher 3 --num-experts-teacher 4 2>&1); rc=$?
  [ $rc -ne 0 ] && grep -qF -- "--mos: --num-attention-heads-teacher 3 is not divisible by --tensor-model-parallel-size 2" <<<"$out" \
    && ! grep -q "^ iteration" <<<"$out" && ok "refused: teacher heads the student's tensor-parallel size does not divide" \
    || bad "refused: teacher heads not divisible by TP" "rc=$rc $(grep -m2 -i error <<<"$out")"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
