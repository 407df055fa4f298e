#!/usr/bin/env bash
# Pipeline parallelism under mpirun: pretrain_gpt with PP=2, PP=4, PP=2 x DP=2, PP=2 x TP=2 (also with
# --sequence-parallel), untied output layer and full recompute gives the lm losses, gradient norms and validation
# loss of one process for 10 iterations of 4 micro batches with dropout on (Megatron's 1F1B schedule; each stage
# draws its layers' one-process weights; the tied word embeddings' copy on the last stage equals the first
# stage's and their gradients are summed over the embedding group). The interleaved schedule
# (--num-layers-per-virtual-pipeline-stage) the same way at PP=4 and PP=3, with TP, SP, DP, untied, bf16, fp16.
# Per-stage parameter counts are checked against the shapes; an uneven layer split and the interleaved schedule's
# bad arguments are refused (mixed precision with 1F1B: tests/mixed_precision). Under --deepspeed the stages are
# DeepSpeed's partition of GPTModelPipe (need not divide the layers): 6 layers over PP=4 (2, 2, 1, 1) and 8 over
# PP=3 (3, 3, 2) give one process's losses, with DeepSpeed's partition print; a checkpoint saved at PP=4 over 6
# layers resumes in one process as the straight run continues; a stage left without a layer is refused.
# --standalone-embedding-stage (Megatron's embedding-only stage 0): PP=3 and TP=2 x PP=2 give one process's losses,
# stage 0 counting the embeddings' parameters alone; its refusals and its no-effect line under --deepspeed.
# Usage: test_pp.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
L=4 H=64 NH=4 S=64 V=128
tiny=(--num-layers $L --hidden-size $H --num-attention-heads $NH --seq-length $S --max-position-embeddings $S
      --mock-data --vocab-size $V --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 10 --log-interval 1
      --eval-interval 10 --eval-iters 1 --global-batch-size 16 --attention-dropout 0.1 --hidden-dropout 0.1)
field() { grep -E "^ iteration " <<<"$1" | grep -F "$2:" | sed -E "s/.*$2: *([0-9.E+-]+).*/\1/" | tr '\n' ' '; }
val() { grep -F "validation loss at the end of training for val data" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/'; }
close() { # two space-separated lists, relative tolerance, plus an absolute slack
  awk -v a="$1" -v b="$2" -v tol="$3" -v abs="$4" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ");
    if (n != m || n == 0) exit 1;
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
      if (d > tol * s + abs) exit 1 } }'
}
same() { # name ref out rc: losses 1e-5 relative, grad norms (3 printed decimals) 1e-5 + one printed unit
  if [ "$4" -eq 0 ] && close "$(field "$2" "lm loss")" "$(field "$3" "lm loss")" 1e-5 1e-12 \
     && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 1e-5 1e-3 \
     && close "$(val "$2")" "$(val "$3")" 1e-5 1e-12; then
    ok "$1 = one process: losses $(field "$3" "lm loss" | cut -d' ' -f1,10), validation $(val "$3")"
  else
    bad "$1" "rc=$4 ref '$(field "$2" "lm loss")' '$(field "$2" "grad norm")' got '$(field "$3" "lm loss")' '$(field "$3" "grad norm")'"
    echo "$3" | grep -E "error|^ iteration" | tail -4
  fi
}
run() { timeout 300 "${mpi[@]}" -np "$1" "$bin" "${tiny[@]}" "${@:2}" 2>&1; }

ref=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 4 2>&1)
[ "$(field "$ref" "lm loss" | wc -w)" -eq 10 ] || { echo "reference run failed:"; echo "$ref" | tail -5; exit 1; }

out=$(run 2 --micro-batch-size 4 --pipeline-model-parallel-size 2); same "PP=2" "$ref" "$out" $?
# per-stage parameter counts from the shapes: the first stage holds the embeddings, the last the final layernorm
# and the copy of the word embeddings
layer=$(( 4 * H + 3 * H * H + 3 * H + H * H + H + 4 * H * H + 4 * H + 4 * H * H + H ))
for want in " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): $(( V * H + S * H + 2 * layer ))" \
            " > number of parameters on (tensor, pipeline) model parallel rank (0, 1): $(( 2 * layer + 2 * H + V * H ))"; do
  if ends_line "$want" "$out"; then ok "parameter count:$want"; else bad "parameter count" "want '$want', got '$(grep 'number of parameters' <<<"$out")'"; fi
done
out=$(run 4 --micro-batch-size 4 --pipeline-model-parallel-size 4); same "PP=4" "$ref" "$out" $?
out=$(run 4 --micro-batch-size 2 --pipeline-model-parallel-size 2); same "PP=2 x DP=2" "$ref" "$out" $?
out=$(run 4 --micro-batch-size 4 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2)
same "PP=2 x TP=2" "$ref" "$out" $?
out=$(run 4 --micro-batch-size 4 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2 --sequence-parallel \
      --checkpoint-activations)
same "PP=2 x TP=2 --sequence-parallel --checkpoint-activations" "$ref" "$out" $?
out=$(run 2 --micro-batch-size 8 --pipeline-model-parallel-size 2); 
ref2=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 2>&1)
same "PP=2, 2 micro batches (fewer than in-flight slots)" "$ref2" "$out" $?
ref_u=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 4 --untie-embeddings-and-output-weights 2>&1)
out=$(run 4 --micro-batch-size 4 --pipeline-model-parallel-size 4 --untie-embeddings-and-output-weights)
same "PP=4 untied output layer" "$ref_u" "$out" $?

# Megatron's interleaved schedule (--num-layers-per-virtual-pipeline-stage), 8 layers: PP=4 with 2 chunks of one
# layer per stage (stage s: layers s and s+4), 4 micro batches (= p: all forwards first) and 8 (the steady state);
# with TP=2 --sequence-parallel --checkpoint-activations and with DP=2 (8 ranks), untied, bf16 and fp16 (dynamic
# scale: the same skipped iterations, hysteresis and growth), PP=3 (6 layers, 6 micro batches); 2 layers per chunk
# makes one chunk per stage, which still runs the interleaved schedule
il=(--num-layers 8 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1)
ref8=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --num-layers 8 --micro-batch-size 4 2>&1)
ref8b=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --num-layers 8 --micro-batch-size 2 2>&1)
out=$(run 4 --micro-batch-size 4 "${il[@]}"); same "interleaved PP=4 x 2 chunks, 4 micro batches" "$ref8" "$out" $?
grep -qF "> interleaved pipeline schedule: 4 stages x 2 chunks of 1 layer, 4 micro batches (8 virtual steps); bubble (p-1)/(v m) = 0.375" <<<"$out" \
  && ok "interleaved: schedule line" || bad "interleaved schedule line" "$(grep -m1 'pipeline schedule' <<<"$out")"
for want in " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): $(( V * H + S * H + 2 * layer ))" \
            " > number of parameters on (tensor, pipeline) model parallel rank (0, 1): $(( 2 * layer ))" \
            " > number of parameters on (tensor, pipeline) model parallel rank (0, 3): $(( 2 * layer + 2 * H + V * H ))"; do
  if ends_line "$want" "$out"; then ok "interleaved parameter count:$want"; else bad "interleaved parameter count" "want '$want', got '$(grep 'number of parameters' <<<"$out")'"; fi
done
out=$(run 4 --micro-batch-size 2 "${il[@]}"); same "interleaved PP=4 x 2 chunks, 8 micro batches" "$ref8b" "$out" $?
out=$(run 8 --micro-batch-size 4 "${il[@]}" --tensor-model-parallel-size 2 --sequence-parallel --checkpoint-activations)
same "interleaved PP=4 x TP=2 --sequence-parallel --checkpoint-activations" "$ref8" "$out" $?
out=$(run 8 --micro-batch-size 1 "${il[@]}"); same "interleaved PP=4 x DP=2" "$ref8b" "$out" $?
out=$(run 4 --micro-batch-size 4 "${il[@]}" --num-layers-per-virtual-pipeline-stage 2)
same "interleaved schedule with one chunk per stage (2 layers per virtual stage)" "$ref8" "$out" $?
for extra in --untie-embeddings-and-output-weights --bf16 "--fp16 --initial-loss-scale 1048576 --loss-scale-window 3"; do
  one=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --num-layers 8 --micro-batch-size 2 $extra 2>&1)
  out=$(run 4 --micro-batch-size 2 "${il[@]}" $extra); rc=$?
  if [ "$(field "$one" "number of skipped iterations")" = "$(field "$out" "number of skipped iterations")" ]; then
    same "interleaved PP=4 $extra (skipped iterations: $(field "$out" "number of skipped iterations" | tr -d ' '))" "$one" "$out" $rc
  else bad "interleaved PP=4 $extra" "skipped '$(field "$one" "number of skipped iterations")' vs '$(field "$out" "number of skipped iterations")'"; fi
done
gbs12=(--num-layers 6 --global-batch-size 12 --micro-batch-size 2)
ref6=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" "${gbs12[@]}" 2>&1)
out=$(run 3 "${gbs12[@]}" --pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 1)
same "interleaved PP=3 x 2 chunks, 6 micro batches" "$ref6" "$out" $?

# DeepSpeed's partition of GPTModelPipe under --deepspeed (ZeRO-1, 4 micro batches of 4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "steps_per_print": 5, "zero_optimization": {"stage": 1}}\n' > "$tmp/ds.json"
ds=(--deepspeed --deepspeed_config "$tmp/ds.json" --micro-batch-size 4)
one6=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --num-layers 6 "${ds[@]}" 2>&1)
out=$(run 4 --num-layers 6 "${ds[@]}" --pipeline-model-parallel-size 4); rc=$?
same "--deepspeed: 6 layers over PP=4 (DeepSpeed's partition 2, 2, 1, 1)" "$one6" "$out" $rc
# DeepSpeed's PipelineEngine line every steps_per_print batches: the batch's mean loss (the log line's, 4 decimals)
steps=$(grep -E "^steps: [0-9]+ loss: [0-9.]+ iter time \(s\): [0-9.]+ samples/sec: [0-9.]+$" <<<"$out" | sed -E 's/^steps: ([0-9]+) loss: ([0-9.]+) .*/\1 \2/' | tr '\n' ' ')
want=$(field "$out" "lm loss" | awk '{ printf "5 %.4f 10 %.4f ", $5, $10 }')
[ -n "$steps" ] && [ "$steps" = "$want" ] && ok "--deepspeed PP: DeepSpeed's pipeline line at steps 5 and 10 with the batch loss ($steps)" \
  || bad "DeepSpeed's pipeline line" "'$steps' against '$want'"
parts=$(grep -E "^stage=[0-9]+ layers=" <<<"$out" | tr '\n' ' ')
[ "$parts" = "stage=0 layers=4 stage=1 layers=2 stage=2 layers=1 stage=3 layers=3 " ] \
  && grep -qF "Partitioning pipeline stages with method type:transformer" <<<"$out" && grep -qE "^     8: LayerNorm$" <<<"$out" \
  && ok "--deepspeed: DeepSpeed's partition print ($parts)" || bad "partition print" "'$parts'"
one8=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --num-layers 8 "${ds[@]}" 2>&1)
out=$(run 3 --num-layers 8 "${ds[@]}" --pipeline-model-parallel-size 3)
same "--deepspeed: 8 layers over PP=3 (3, 3, 2)" "$one8" "$out" $?
run 4 --num-layers 6 "${ds[@]}" --pipeline-model-parallel-size 4 --save "$tmp/ck" --save-interval 5 --exit-interval 5 >/dev/null
res=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --num-layers 6 "${ds[@]}" --load "$tmp/ck" 2>&1)
if [ "$(field "$res" "lm loss")" = "$(field "$one6" "lm loss" | cut -d' ' -f6-10) " ] && [ -n "$(field "$res" "lm loss")" ]; then
  ok "--deepspeed: saved at PP=4 over 6 layers (iteration 5), resumed in one process: the straight run's losses"
else bad "uneven checkpoint resumed in one process" "'$(field "$res" "lm loss")' against '$(field "$one6" "lm loss")' $(grep -m1 error <<<"$res")"; fi

# the standalone embedding stage (no --deepspeed: Megatron's pipeline model)
out=$(run 3 --micro-batch-size 4 --pipeline-model-parallel-size 3 --standalone-embedding-stage)
same "--standalone-embedding-stage PP=3 (stage 0 the embedding, 2 layers on each other stage)" "$ref" "$out" $?
want=" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): $(( V * H + S * H ))"
ends_line "$want" "$out" && grep -qE "^  transformer_pipeline_model_parallel_size \.+ 2$" <<<"$out" \
  && ok "--standalone-embedding-stage: stage 0 holds the embeddings alone;$want" \
  || bad "standalone parameter count" "want '$want', got '$(grep 'number of parameters' <<<"$out")'"
out=$(run 4 --micro-batch-size 4 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2 --standalone-embedding-stage)
same "--standalone-embedding-stage TP=2 x PP=2 (all 4 layers on stage 1)" "$ref" "$out" $?
out=$(run 4 --num-layers 6 "${ds[@]}" --pipeline-model-parallel-size 4 --standalone-embedding-stage)
grep -qF "> --standalone-embedding-stage: no effect with --deepspeed" <<<"$out" \
  && [ "$(grep -E "^stage=[0-9]+ layers=" <<<"$out" | tr '\n' ' ')" = "stage=0 layers=4 stage=1 layers=2 stage=2 layers=1 stage=3 layers=3 " ] \
  && ok "--standalone-embedding-stage with --deepspeed: no effect (said), DeepSpeed's partition" \
  || bad "standalone with --deepspeed" "$(grep -E "standalone|^stage=|error" <<<"$out" | head -5)"

refused() { # name expected-message np args...
  local name="$1" msg="$2" np="$3"; shift 3
  local o rc
  o=$(timeout 120 "${mpi[@]}" -np "$np" "$bin" "${tiny[@]}" --micro-batch-size 4 "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$msg" <<<"$o"; then ok "refused: $name"
  else bad "refusal: $name" "rc=$rc $(grep -m2 error <<<"$o")"; fi
}
refused "uneven layers" "--num-layers 4 is not divisible by --pipeline-model-parallel-size 3 (with --deepspeed" 3 --pipeline-model-parallel-size 3
refused "--deepspeed: a stage without a layer" "--num-layers 3 over --pipeline-model-parallel-size 4: DeepSpeed's partition of GPTModelPipe's layers (type:transformer) leaves stage" \
  4 --pipeline-model-parallel-size 4 --num-layers 3 --deepspeed --deepspeed_config "$tmp/ds.json"
refused "--standalone-embedding-stage, layers not divisible over the other stages" "--num-layers 4 must be divisible by transformer_pipeline_model_parallel_size 3 (--pipeline-model-parallel-size 4 - 1" \
  4 --pipeline-model-parallel-size 4 --standalone-embedding-stage
refused "--standalone-embedding-stage with the interleaved schedule" "--standalone-embedding-stage with --num-layers-per-virtual-pipeline-stage 1" \
  4 "${il[@]}" --standalone-embedding-stage
refused "--deepspeed, interleaved: Megatron's even split" "--num-layers 6 is not divisible by --pipeline-model-parallel-size 4" \
  4 --pipeline-model-parallel-size 4 --num-layers 6 --num-layers-per-virtual-pipeline-stage 1 --deepspeed --deepspeed_config "$tmp/ds.json"
refused "interleaved with PP=2" "--pipeline-model-parallel-size 2 must be greater than 2 with the interleaved schedule (--num-layers-per-virtual-pipeline-stage 1)" \
  2 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
refused "interleaved, micro batches not a multiple of the stages" "number of microbatches (2) is not divisible by pipeline-model-parallel-size (4) when using interleaved schedule" \
  4 "${il[@]}" --micro-batch-size 8
refused "interleaved, layers not divisible" "--num-layers 8 is not divisible by --pipeline-model-parallel-size 4 x --num-layers-per-virtual-pipeline-stage 3 = 12" \
  4 "${il[@]}" --num-layers-per-virtual-pipeline-stage 3
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
