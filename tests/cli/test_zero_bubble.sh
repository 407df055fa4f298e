# The zero-bubble H1 pipeline schedule (--enable-zbh1-pipeline, train/schedule.c, runtime/ops/wgrad_store.c) on
# GPT under mpirun. With --enable-zbh1-exact-semantics the step is bit for bit 1F1B's: the same log lines and
# byte-identical optimizer states (fp32 masters and Adam moments) after 6 iterations of 8 micro batches, with dropout
# on: PP=2, PP=4, TP=2 x PP=2, PP=2 x DP=2, bf16, fp16 with its dynamic loss scale, --recompute-granularity full,
# SwiGLU without biases, MoE layers, uneven stages (6 layers over PP=4). Without exact semantics, the first micro batches' weight gradients add up last on each
# stage after the first: the losses equal 1F1B's within 1e-5 and the optimizer states are not byte-identical (the
# test fails if the weight passes stop being deferred). Megatron-DeepSpeed's asserts are refused before work;
# without pipeline stages the flag is said to have no effect. The schedule's order and its bubble:
# tests/parallel/test_zbh1_schedule.py.
#
# usage: test_zero_bubble.sh path/to/pretrain_gpt [python3]
set -u
BIN=${1:?usage: test_zero_bubble.sh path/to/pretrain_gpt [python3]}
PY=${2:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/common.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: $PY has no h5py (apt-get install python3-h5py)"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
export OMP_NUM_THREADS=1
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, %s}\n' \
  '"zero_optimization": {"stage": 1}' > z1.json
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0, %s}\n' \
  '"zero_optimization": {"stage": 1}' > dp2.json
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, %s}\n' \
  '"zero_optimization": {"stage": 1}, "bf16": {"enabled": true}' > bf16.json
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, %s}\n' \
  '"zero_optimization": {"stage": 0}, "fp16": {"enabled": true, "initial_scale_power": 16}' > fp16.json
BASE=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 --lr 1e-3
      --min-lr 1e-4 --mock-data --vocab-size 128 --log-interval 1 --eval-iters 1 --eval-interval 3 --train-iters 6
      --micro-batch-size 2 --global-batch-size 16)
T=("${BASE[@]}" --deepspeed --deepspeed_config z1.json)
ZB=(--enable-zbh1-pipeline)
EXACT=(--enable-zbh1-pipeline --enable-zbh1-exact-semantics)
lines() { grep -E "^ iteration |^ validation loss at" <<<"$1" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second.*//'; }
# train NP NAME ARGS...: a run saving to $W/NAME; its output in $out, status in $rc
train() {
  local np="$1" name="$2"
  shift 2
  rm -rf "$W/$name"
  out=$(timeout 300 "${mpi[@]}" -np "$np" "$BIN" "${T[@]}" --save "$W/$name" "$@" 2>&1)
  rc=$?
}
optim_files() { (cd "$W/$1/global_step6" 2>/dev/null && ls ./*optim_states.h5 2>/dev/null); }
# same_states A B: every dataset of every optimizer state file bitwise equal (HDF5 files themselves differ in their
# object headers' times)
same_states() {
  "$PY" - "$W/$1/global_step6" "$W/$2/global_step6" <<'PYEOF'
import glob, os, sys
import h5py, numpy as np
files = sorted(glob.glob(os.path.join(sys.argv[1], "*optim_states.h5")))
if not files:
    sys.exit(2)
for f in files:
    with h5py.File(f) as a, h5py.File(os.path.join(sys.argv[2], os.path.basename(f))) as b:
        names = []
        a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for n in names:
            x, y = np.asarray(a[n][()]), np.asarray(b[n][()])
            same = x.tolist() == y.tolist() if x.dtype == object else x.tobytes() == y.tobytes()
            if x.shape != y.shape or not same:
                sys.exit(1)
PYEOF
}
# both NP ZB-FLAGS ARGS...: 1F1B with ARGS (output in $ref, status in $ref_rc), then ZB-H1 with ARGS and the flags
# of the array named ZB-FLAGS ($out, $rc)
both() {
  local np="$1"
  local -n zbflags="$2"
  shift 2
  train "$np" ref "$@"
  ref="$out" ref_rc=$rc
  train "$np" zb "$@" "${zbflags[@]}"
}
# exact NP LABEL ARGS...: 1F1B, then ZB-H1 with exact semantics: identical lines and optimizer states
exact() {
  local np="$1" label="$2"
  shift 2
  both "$np" EXACT "$@"
  local a b
  a=$(lines "$ref") b=$(lines "$out")
  if [ $ref_rc -eq 0 ] && [ $rc -eq 0 ] && [ "$(grep -c "^ iteration" <<<"$a")" -eq 6 ] && [ "$a" = "$b" ] \
     && same_states ref zb && grep -qF "> zero-bubble H1 pipeline schedule with exact semantics" <<<"$out"; then
    ok "$label: ZB-H1 with exact semantics = 1F1B bit for bit ($(grep -c . <<<"$a") log lines, $(optim_files ref | wc -l) optimizer state files; lm loss $(field "$out" "lm loss" | awk '{print $NF}'))"
  else
    bad "$label" "rc $ref_rc/$rc: $(diff <(echo "$a") <(echo "$b") | head -4) $(grep -m2 -iE "error" <<<"$out$ref")"
  fi
}
# variant NP LABEL ARGS...: ZB-H1 without exact semantics: 1F1B's losses within 1e-5, optimizer states not identical
variant() {
  local np="$1" label="$2"
  shift 2
  both "$np" ZB "$@"
  if [ $ref_rc -eq 0 ] && [ $rc -eq 0 ] && [ "$(field "$ref" "lm loss" | wc -w)" -eq 6 ] \
     && close "$(field "$ref" "lm loss")" "$(field "$out" "lm loss")" 1e-5 && { same_states ref zb; [ $? -eq 1 ]; } \
     && grep -qF "> zero-bubble H1 pipeline schedule: stages 1 to" <<<"$out"; then
    ok "$label: ZB-H1 = 1F1B's losses within 1e-5, its weight gradients summed in another order (optimizer states differ)"
  else
    bad "$label" "rc $ref_rc/$rc: 1F1B '$(field "$ref" "lm loss")' ZB-H1 '$(field "$out" "lm loss")' $(grep -m2 -iE "error" <<<"$out$ref")"
  fi
}

exact 2 "PP=2" --pipeline-model-parallel-size 2
variant 2 "PP=2" --pipeline-model-parallel-size 2
exact 4 "PP=4" --pipeline-model-parallel-size 4
variant 4 "PP=4" --pipeline-model-parallel-size 4
exact 4 "TP=2 x PP=2" --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2
exact 4 "PP=2 x DP=2" --pipeline-model-parallel-size 2 --micro-batch-size 1 --deepspeed_config dp2.json
exact 2 "PP=2 bf16 (ZeRO-1)" --pipeline-model-parallel-size 2 --bf16 --deepspeed_config bf16.json
exact 2 "PP=2 fp16 (dynamic loss scale)" --pipeline-model-parallel-size 2 --fp16 --deepspeed_config fp16.json
exact 2 "PP=2 --recompute-granularity full" --pipeline-model-parallel-size 2 --recompute-granularity full
exact 2 "PP=2 --swiglu --disable-bias-linear" --pipeline-model-parallel-size 2 --swiglu --disable-bias-linear
exact 2 "PP=2 MoE (4 experts, top-2: the experts' linears deferred)" --pipeline-model-parallel-size 2 --num-experts 4 \
  --topk 2 --moe-loss-coeff 0.01
exact 4 "PP=4 over 6 layers (DeepSpeed's partition 2, 2, 1, 1)" --pipeline-model-parallel-size 4 --num-layers 6

out=$(timeout 120 "$BIN" "${T[@]}" --train-iters 1 "${ZB[@]}" 2>&1)
[ $? -eq 0 ] && grep -qF "> --enable-zbh1-pipeline: no effect without pipeline stages" <<<"$out" \
  && grep -qE "^  enable_zbh1_pipeline \.+ True$" <<<"$out" && grep -qE "^  enable_zbh1_exact_semantics \.+ False$" <<<"$out" \
  && ok "one process: trains, says the flag has no effect, dumps enable_zbh1_pipeline True" \
  || bad "one process" "$(grep -E "zbh1|error" <<<"$out" | head -3)"

# refused EXPECTED NP ARGS...: refused before training, with the message
refused() {
  local want="$1" np="$2"
  shift 2
  local o
  if [ "$np" -eq 1 ]; then o=$(timeout 60 "$BIN" "$@" 2>&1); else o=$(timeout 60 "${mpi[@]}" -np "$np" "$BIN" "$@" 2>&1); fi
  if [ $? -ne 0 ] && grep -qF -- "$want" <<<"$o" && ! grep -qE "^ iteration" <<<"$o"; then ok "refused: $want"
  else bad "refusal '$want'" "$(grep -m2 -iE "error" <<<"$o")"; fi
}
refused "--enable-zbh1-exact-semantics without --enable-zbh1-pipeline" 1 "${T[@]}" --enable-zbh1-exact-semantics
refused "--enable-zbh1-pipeline without --deepspeed" 1 "${BASE[@]}" "${ZB[@]}"
refused "--enable-zbh1-pipeline with --sequence-parallel" 1 "${T[@]}" "${ZB[@]}" --sequence-parallel
refused "--enable-zbh1-pipeline with --num-layers-per-virtual-pipeline-stage 1" 4 "${T[@]}" "${ZB[@]}" --num-layers 8 \
  --num-layers-per-virtual-pipeline-stage 1 --pipeline-model-parallel-size 4

echo "zero_bubble: $pass passed, $fail failed"
[ $fail -eq 0 ]
