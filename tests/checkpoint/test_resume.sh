#!/usr/bin/env bash
# Exact resume and the checkpoint flags, single process (docs/checkpoints.md):
#  - N+M iterations straight = N, save, exit (--exit-interval), resume for M: identical lm loss lines (%.6E) and
#    every dataset of the final checkpoint bitwise equal (read by h5py, an independent reader), with Megatron's
#    schedule + AdamW, SGD, a DeepSpeed scheduler block, and bf16/fp16 when the build has them;
#  - Megatron's messages; the latest files; --finetune, --no-load-optim, --no-save-optim, --no-load-rng, a seed or
#    shape mismatch, --load-tag, --use-checkpoint-args, a missing checkpoint and --exit-on-missing-checkpoint,
#    --exit-signal-handler (SIGTERM), --exit-duration-in-mins, --kill-switch-file (at the start, after a save, and
#    created during the run), --no-initialization (fp32, bf16, --finetune, --no-load-optim, ZeRO-3 at DP=2;
#    refused with nothing to load); a ds_config read from a pipe and recorded in the checkpoint.
# Usage: test_resume.sh PRETRAIN_GPT PYTHON
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; py="${2:-/usr/bin/python3}"
here="$(cd "$(dirname "$0")" && pwd)"
"$py" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $py"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --min-lr 1e-4
      --lr-warmup-iters 2 --log-interval 1 --eval-interval 3 --eval-iters 1)
losses() { # the log lines without their timings
  grep -E "^ iteration " <<<"$1" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/samples per second: [0-9.]+ \|//;
    s/tokens per gpu per second \(tgs\): [0-9.]+ \|//; s/TFLOPs: [0-9.]+ \|//; s/ +/ /g' | tr '\n' '#'; }
vals() { grep -F "validation loss at" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }

# resume_case NAME EXTRA...: 8 straight (saves at 4 and 8) vs exit at 4 + resume
resume_case() {
  local name="$1"; shift
  rm -rf "A_$name" "B_$name"
  local a b1 b2
  a=$("$bin" "${tiny[@]}" "$@" --train-iters 8 --save "A_$name" --save-interval 4 2>&1) || { bad "$name straight" "$(tail -3 <<<"$a")"; return; }
  b1=$("$bin" "${tiny[@]}" "$@" --train-iters 8 --save "B_$name" --exit-interval 4 2>&1) || { bad "$name first half" "$(tail -3 <<<"$b1")"; return; }
  b2=$("$bin" "${tiny[@]}" "$@" --train-iters 8 --save "B_$name" --save-interval 4 --load "B_$name" 2>&1) || { bad "$name resume" "$(tail -3 <<<"$b2")"; return; }
  local la lb
  la=$(losses "$a"); lb="$(losses "$b1")$(losses "$b2")"
  if [ -n "$la" ] && [ "$la" == "$lb" ] && [ "$(vals "$a")" == "$(vals "$b1")$(vals "$b2")" ]; then
    ok "$name: log lines of 8 straight = 4 + resume 4 (last: $(tr '#' '\n' <<<"$la" | tail -2 | head -1 | grep -oE "lm loss: [0-9.E+-]+|loss scale: [0-9.]+" | tr '\n' ' '))"
  else
    bad "$name losses" "straight '$la' vs resumed '$lb'"
  fi
  local cmp
  if cmp=$("$py" "$here/h5_oracle.py" same "A_$name/global_step8" "B_$name/global_step8" 2>&1); then
    ok "$name: final checkpoints bitwise equal ($cmp)"
  else
    bad "$name final checkpoint" "$cmp"
  fi
  LAST_A="$a"; LAST_B1="$b1"; LAST_B2="$b2"
}

resume_case adam
ADAM_B2="$LAST_B2"
zdir="$(dirname "$bin")"
if [ -x "$zdir/zero_to_fp32" ]; then
  "$zdir/zero_to_fp32" A_adam Z_A --safe_serialization >/dev/null && "$zdir/zero_to_fp32" B_adam Z_B --safe_serialization >/dev/null &&
    cmp -s Z_A/model.safetensors Z_B/model.safetensors && ok "adam: zero_to_fp32 outputs of both runs byte-identical" ||
    bad "zero_to_fp32 of straight and resumed" "differ"
fi
# Megatron's messages and files
grep -qE "^saving checkpoint at iteration +4 to B_adam$" <<<"$LAST_B1" &&
  grep -qE "^  successfully saved checkpoint at iteration +4 to B_adam$" <<<"$LAST_B1" &&
  grep -qE "^\[exiting program at iteration 4\] datetime: [0-9-]+ [0-9:]+ $" <<<"$LAST_B1" &&
  ! grep -q "after training is done\|validation loss at the end" <<<"$LAST_B1" &&
  grep -qE "^ loading checkpoint from B_adam at iteration 4$" <<<"$LAST_B2" &&
  grep -qE "^  successfully loaded checkpoint from B_adam at iteration 4$" <<<"$LAST_B2" &&
  ok "Megatron's save/exit/load messages; no final evaluation after --exit-interval" ||
  bad "messages" "$(grep -E "checkpoint|exiting" <<<"$LAST_B1$LAST_B2")"
[ "$(cat A_adam/latest)" == "global_step8" ] && [ "$(cat A_adam/latest_checkpointed_iteration.txt)" == "8" ] &&
  [ -d A_adam/global_step4 ] && [ -f A_adam/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5 ] &&
  [ -f A_adam/global_step8/mp_rank_00_model_states.h5 ] && [ -z "$(ls -A A_adam | grep '^\.')" ] &&
  ok "layout: latest = global_step8, latest_checkpointed_iteration.txt = 8, DeepSpeed file names, no temporaries" ||
  bad "layout" "$(ls -la A_adam A_adam/*)"

resume_case sgd --optimizer sgd --clip-grad 0.5
cat > ds.json <<'JSON'
{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 2, "total_num_steps": 8, "warmup_max_lr": 0.001}}}
JSON
resume_case deepspeed --deepspeed --deepspeed_config ds.json
grep -q '"WarmupDecayLR"' <<<"$("$py" -c "import h5py; print(h5py.File('A_deepspeed/global_step8/mp_rank_00_model_states.h5')['/'].attrs['ds_config'])")" &&
  ok "ds_config text stored in the model states" || bad "ds_config attribute" "missing"
# a ds_config given as a process substitution (a pipe: read once, to EOF) trains, and the checkpoint records the
# text the run read, not what a second read of the pipe would give
out=$("$bin" "${tiny[@]}" --train-iters 2 --save P_pipe --deepspeed --deepspeed_config <(cat ds.json) 2>&1)
grep -q '"WarmupDecayLR"' <<<"$("$py" -c "import h5py; print(h5py.File('P_pipe/global_step2/mp_rank_00_model_states.h5')['/'].attrs['ds_config'])" 2>&1)" &&
  ok "--deepspeed_config <(cat ds.json): trains, and the model states record the text read" ||
  bad "ds_config from a pipe" "$(grep -m2 error <<<"$out")"
if "$bin" --help 2>&1 | grep -q -- "--bf16"; then
  resume_case bf16 --bf16
  [ -f A_bf16/global_step8/bf16_zero_pp_rank_0_mp_rank_00_optim_states.h5 ] &&
    "$py" -c "
import h5py, numpy as np, sys
f = h5py.File('A_bf16/global_step8/mp_rank_00_model_states.h5'); o = h5py.File('A_bf16/global_step8/bf16_zero_pp_rank_0_mp_rank_00_optim_states.h5')
w = f['module/language_model.encoder.final_layernorm.weight']
sys.exit(0 if f.attrs['dtype'] == 'bf16' and w.dtype == np.uint16 and w.attrs['dtype'] == 'bf16' and o['state/fp32'].dtype == np.float32 else 1)" &&
    ok "bf16: bf16_ optimizer file prefix, bf16 weights (uint16 bit patterns), fp32 masters" || bad "bf16 layout" "$(ls A_bf16/global_step8)"
  resume_case fp16 --fp16 --initial-loss-scale 65536 --loss-scale-window 3
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": true, "initial_scale_power": 20, "loss_scale_window": 2, "hysteresis": 2}}\n' > fp16.json
  resume_case ds_fp16 --deepspeed --deepspeed_config fp16.json
  grep -qE "iteration +6/.*skipped iterations: +1" <<<"$LAST_A" && grep -qE "iteration +1/.*skipped iterations: +1" <<<"$LAST_A" && ok "ds_fp16: overflows before and after the resume point skipped identically (loss scale, skipped count)" ||
    bad "ds_fp16 overflow" "no skipped iteration in the straight run"
else
  echo "NOTE: this build has no --bf16/--fp16 yet; mixed-precision resume cases not run"
fi

# --no-save-optim checkpoints need --no-load-optim (or --finetune): Megatron's message
rm -rf C; "$bin" "${tiny[@]}" --train-iters 4 --save C --no-save-optim >/dev/null 2>&1
out=$("$bin" "${tiny[@]}" --train-iters 8 --load C 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: checkpoint: Unable to load optimizer from checkpoint C/global_step4. Specify --no-load-optim or --finetune to prevent attempting to load the optimizer state, exiting ..." <<<"$out" &&
  ok "--no-save-optim checkpoint without --no-load-optim: refused with Megatron's message" || bad "no optim" "$(tail -2 <<<"$out")"
[ -z "$(ls C/global_step4 | grep optim)" ] && ok "--no-save-optim writes no optimizer file" || bad "--no-save-optim" "$(ls C/global_step4)"
out=$("$bin" "${tiny[@]}" --train-iters 8 --load C --no-load-optim 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^ iteration +5/ +8 \| consumed samples: +20 " <<<"$out" && ok "--no-load-optim: resumes at iteration 5 with fresh moments" || bad "--no-load-optim" "$(tail -2 <<<"$out")"

# --finetune: weights only, iteration and consumed samples from 0
out=$("$bin" "${tiny[@]}" --train-iters 2 --load A_adam --finetune 2>&1); rc=$?
fresh=$("$bin" "${tiny[@]}" --train-iters 2 2>&1)
l1=$(grep -m1 -oE "lm loss: [0-9.E+-]+" <<<"$out"); l0=$(grep -m1 -oE "lm loss: [0-9.E+-]+" <<<"$fresh")
[ $rc -eq 0 ] && grep -qE "^ iteration +1/ +2 \| consumed samples: +4 " <<<"$out" && [ "$l1" != "$l0" ] &&
  grep -qE "successfully loaded checkpoint from A_adam at iteration 0" <<<"$out" &&
  ok "--finetune: iteration 1, consumed samples 4, loaded weights (first loss $l1, fresh $l0)" || bad "--finetune" "$(tail -2 <<<"$out") $l1 $l0"

# the seed is the random state
out=$("$bin" "${tiny[@]}" --train-iters 8 --load A_adam --seed 7 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: checkpoint: A_adam/global_step8: saved with --seed 1234, this run has --seed 7" <<<"$out" &&
  ok "a different --seed is refused" || bad "seed" "$(tail -2 <<<"$out")"
out=$("$bin" "${tiny[@]}" --train-iters 9 --lr-decay-iters 8 --load A_adam --seed 7 --no-load-rng 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^ iteration +9/ +9 " <<<"$out" && ok "--no-load-rng accepts the new seed" || bad "--no-load-rng" "$(tail -2 <<<"$out")"

# Megatron's scheduler check: a different schedule is refused, naming both values
out=$("$bin" "${tiny[@]}" --train-iters 9 --load A_adam 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "OptimizerParamScheduler: class input value 36 and checkpoint value 32 for total number of iterations do not match" <<<"$out" &&
  ok "a changed decay length is refused (Megatron's _check_and_set)" || bad "scheduler check" "$(tail -2 <<<"$out")"

out=$("$bin" "${tiny[@]}" --train-iters 9 --load A_adam --override-opt_param-scheduler 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF " > overriding total number of iterations value to 36" <<<"$out" && grep -qE "^ iteration +9/ +9 " <<<"$out" &&
  ok "--override-opt_param-scheduler keeps the command line's schedule" || bad "override" "$(tail -2 <<<"$out")"
out=$("$bin" "${tiny[@]}" --train-iters 9 --load A_adam --use-checkpoint-opt_param-scheduler 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF " > using checkpoint value 32 for total number of iterations" <<<"$out" &&
  grep -qF " > using checkpoint value 0.001 for learning rate" <<<"$out" && grep -qE "^ iteration +9/ +9 .*learning rate: 1.000E-04 " <<<"$out" &&
  ok "--use-checkpoint-opt_param-scheduler takes the checkpoint's schedule (decay over, min lr)" || bad "use-checkpoint" "$(tail -2 <<<"$out")"
out=$("$bin" "${tiny[@]}" --train-iters 9 --load A_adam --override-opt_param-scheduler --use-checkpoint-opt_param-scheduler 2>&1)
grep -qF "error: inconsistent arguments: --override-opt_param-scheduler and --use-checkpoint-opt_param-scheduler: both override and use-checkpoint are set" <<<"$out" &&
  ok "both scheduler flags refused" || bad "both scheduler flags" "$out"
out=$("$bin" "${tiny[@]}" --train-iters 9 --load A_adam --no-load-lr-state 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^ iteration +9/ +9 .*learning rate: 5.000E-04 " <<<"$out" &&
  ok "--no-load-lr-state: the schedule starts afresh (warmup: lr 5.000E-04 after one step)" || bad "--no-load-lr-state" "$(grep -E '^ iteration' <<<"$out" | cut -c1-220)"

# a different shape is refused naming the tensor; --use-checkpoint-args takes the saved shape
out=$("$bin" "${tiny[@]/32/64}" --train-iters 8 --load A_adam 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qE "error: checkpoint: A_adam/global_step8: language_model.embedding.word_embeddings.weight has shape \[128, 32\] in the checkpoint, \[128, 64\] in this model" <<<"$out" &&
  ok "shape mismatch refused with both shapes" || bad "shape mismatch" "$(tail -2 <<<"$out")"
out=$("$bin" --micro-batch-size 2 --global-batch-size 4 --mock-data --lr 1e-3 --min-lr 1e-4 --lr-warmup-iters 2 \
      --log-interval 1 --eval-interval 3 --eval-iters 1 --train-iters 10 --lr-decay-iters 8 --load A_adam --use-checkpoint-args 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "Setting num_layers to 2 from checkpoint" <<<"$out" && grep -q "Setting vocab_size to 100 from checkpoint" <<<"$out" &&
  grep -qE "^ iteration +10/ +10 " <<<"$out" && ok "--use-checkpoint-args: shape from the checkpoint, training continues" || bad "--use-checkpoint-args" "$(tail -3 <<<"$out")"

# --load-tag
out=$("$bin" "${tiny[@]}" --train-iters 8 --load A_adam --load-tag global_step4 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(losses "$out")" == "$(losses "$ADAM_B2")" ] && ok "--load-tag global_step4 resumes from iteration 4" || bad "--load-tag" "$(tail -2 <<<"$out")"
out=$("$bin" "${tiny[@]}" --train-iters 8 --load A_adam --load-tag global_step5 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: checkpoint: A_adam/global_step5: the checkpoint directory of tag global_step5 is missing (--load-tag)" <<<"$out" &&
  ok "a missing --load-tag is refused" || bad "missing tag" "$(tail -2 <<<"$out")"

# no checkpoint: Megatron's warning, or an error with --exit-on-missing-checkpoint
mkdir -p empty
out=$("$bin" "${tiny[@]}" --train-iters 2 --load empty 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF "WARNING: could not find the metadata file empty/latest" <<<"$out" &&
  grep -qF "will not load any checkpoints and will start from random" <<<"$out" && ok "missing checkpoint: warning, start from random" || bad "missing" "$out"
out=$("$bin" "${tiny[@]}" --train-iters 2 --load empty --exit-on-missing-checkpoint 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: checkpoint: --exit-on-missing-checkpoint: no checkpoint in --load empty" <<<"$out" &&
  ok "--exit-on-missing-checkpoint refuses" || bad "--exit-on-missing-checkpoint" "$out"

# argument errors
out=$("$bin" "${tiny[@]}" --train-iters 1 --save-interval 0 --save X 2>&1)
grep -qF "error: bad argument value: --save-interval 0: must be > 0" <<<"$out" && ok "--save-interval 0 refused" || bad "--save-interval 0" "$out"
out=$("$bin" "${tiny[@]}" --train-iters 1 --use-checkpoint-args 2>&1)
grep -qF "error: missing argument: --use-checkpoint-args needs --load DIR" <<<"$out" && ok "--use-checkpoint-args without --load refused" || bad "uca" "$out"

# --kill-switch-file (Megatron-DeepSpeed's found_kill_switch): present at the start, the run exits 0 before building
# anything; found after an iteration, it saves (unless that iteration just did) and exits 0
touch ks
out=$("$bin" "${tiny[@]}" --train-iters 4 --save K0 --kill-switch-file ks 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^\[Detected kill switch at ks\. Exiting\] datetime: " <<<"$out" &&
  ! grep -q "^ iteration\|building GPT model" <<<"$out" && [ ! -e K0 ] &&
  ok "kill switch at the start: exit 0 before any work, nothing written" || bad "kill switch at start" "rc=$rc $(tail -2 <<<"$out")"
rm -f ks
rm -rf K1
out=$("$bin" "${tiny[@]}" --train-iters 8 --save K1 --save-interval 2 --kill-switch-file K1/latest 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^\[Detected kill switch at K1/latest, iteration=2\. Exiting\] datetime: " <<<"$out" &&
  [ "$(grep -c "^ iteration" <<<"$out")" -eq 2 ] && [ "$(grep -c "saving checkpoint at iteration" <<<"$out")" -eq 1 ] &&
  [ "$(cat K1/latest)" == "global_step2" ] &&
  ok "kill switch found after iteration 2 (the save just made it): that save only, exit 0" ||
  bad "kill switch after a save" "rc=$rc $(grep -E "kill|saving" <<<"$out" | head -3)"
rm -rf K2 ks
"$bin" "${tiny[@]}" --hidden-size 64 --train-iters 100000 --save K2 --kill-switch-file ks --log-interval 1 > ks.log 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^ iteration        3/" ks.log && break; sleep 0.05; done
touch ks; wait $pid; rc=$?
it=$(cat K2/latest_checkpointed_iteration.txt 2>/dev/null)
[ $rc -eq 0 ] && [ -n "$it" ] && [ "$(cat K2/latest)" == "global_step$it" ] &&
  grep -qE "^\[Detected kill switch at ks, iteration=$it\. Exiting\] datetime: " ks.log &&
  [ "$(grep "^ iteration" ks.log | tail -1 | awk '{print $2}')" == "$it/" ] &&
  ok "kill switch created during the run: saved at iteration $it, the last one run, exit 0" ||
  bad "kill switch during the run" "rc=$rc it=$it $(tail -2 ks.log)"
rm -f ks

# --no-initialization: the checkpoint fills every weight (the same run as with the initialization), in fp32, bf16
# and with --finetune; without a checkpoint to load it is refused
rm -rf N
"$bin" "${tiny[@]}" --train-iters 6 --save N --exit-interval 3 >/dev/null 2>&1
for extra in "" "--bf16" "--finetune" "--no-load-optim"; do
  # shellcheck disable=SC2086
  a=$("$bin" "${tiny[@]}" --train-iters 6 --load N $extra 2>&1)
  # shellcheck disable=SC2086
  b=$("$bin" "${tiny[@]}" --train-iters 6 --load N $extra --no-initialization 2>&1)
  [ -n "$(losses "$a")" ] && [ "$(losses "$a")" == "$(losses "$b")" ] && [ "$(vals "$a")" == "$(vals "$b")" ] &&
    grep -q "^> --no-initialization: the weights are left for the checkpoint to fill" <<<"$b" &&
    grep -qE "^  perform_initialization \.+ False$" <<<"$b" &&
    ok "--no-initialization ${extra:-(fp32)}: the loaded run's log lines as with the initialization" ||
    bad "--no-initialization $extra" "'$(losses "$a")' vs '$(losses "$b")' $(grep -m1 error <<<"$b")"
done
if command -v mpirun >/dev/null; then # ZeRO-3 at DP=2: every rank's partition and masters come from the checkpoint
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}' > z3.json
  z3=(--deepspeed --deepspeed_config z3.json --train-iters 6)
  rm -rf NZ
  timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${z3[@]}" --save NZ --exit-interval 3 >/dev/null 2>&1
  a=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${z3[@]}" --load NZ 2>&1)
  b=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${z3[@]}" --load NZ --no-initialization 2>&1)
  [ -n "$(losses "$a")" ] && [ "$(losses "$a")" == "$(losses "$b")" ] && [ "$(vals "$a")" == "$(vals "$b")" ] &&
    ok "--no-initialization, ZeRO-3 + bf16 at DP=2: as with the initialization" ||
    bad "--no-initialization ZeRO-3" "'$(losses "$a")' vs '$(losses "$b")' $(grep -m1 error <<<"$b")"
fi
out=$("$bin" "${tiny[@]}" --train-iters 2 --no-initialization 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: missing argument: --no-initialization leaves the weights for a checkpoint to fill: give --load DIR" <<<"$out" &&
  ok "--no-initialization without --load refused" || bad "--no-initialization without --load" "$(tail -1 <<<"$out")"
out=$("$bin" "${tiny[@]}" --train-iters 2 --no-initialization --load empty --save NS 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: checkpoint: --no-initialization: no checkpoint in --load empty (no empty/latest)" <<<"$out" &&
  ! grep -q "^ iteration" <<<"$out" && [ ! -e NS ] &&
  ok "--no-initialization with nothing to load refused before training" || bad "--no-initialization, empty" "$(tail -1 <<<"$out")"

# SIGTERM with --exit-signal-handler: saves after the current iteration and exits 0
rm -rf S
"$bin" "${tiny[@]}" --hidden-size 64 --train-iters 100000 --save S --exit-signal-handler --log-interval 1000 > sig.log 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "training \.\.\." sig.log && break; sleep 0.1; done
sleep 0.5; kill -TERM $pid; wait $pid; rc=$?
it=$(cat S/latest_checkpointed_iteration.txt 2>/dev/null)
[ $rc -eq 0 ] && [ -n "$it" ] && [ "$(cat S/latest)" == "global_step$it" ] && grep -qF "[exiting program after receiving SIGTERM.] datetime:" sig.log &&
  ok "SIGTERM: checkpoint at iteration $it, exit 0" || bad "SIGTERM" "rc=$rc $(tail -3 sig.log)"

# --exit-duration-in-mins (1 minute would be slow: check the message path with a fake clock is not possible, so
# check that a generous limit does not stop the run)
out=$("$bin" "${tiny[@]}" --train-iters 2 --exit-duration-in-mins 60 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^ iteration +2/ +2 " <<<"$out" && ok "--exit-duration-in-mins 60 lets a short run finish" || bad "exit duration" "$(tail -2 <<<"$out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
