#!/usr/bin/env bash
# The Llama-style GPT (docs/gpt.md "Llama-style models": --normalization rmsnorm, --swiglu, --disable-bias-linear,
# --use-rotary-position-embeddings, --untie-embeddings-and-output-weights, --no-query-key-layer-scaling) in every
# parallel layout: TP=2 + --sequence-parallel, PP=2, DP=2 with ZeRO-2, TP=2 x PP=2 give one process's lm losses and
# grad norms over 6 iterations with dropout on; a checkpoint saved at TP=2 resumes in one process to the uninterrupted
# run's losses, and zero_to_fp32 writes the same tensors from a TP=2 and a one-process checkpoint (SwiGLU's
# dense_h_to_4h: the gate half, then the linear half, whatever the layout that saved it); grouped-query attention
# (--num-key-value-heads 2) at TP=2 + SP = one process, its TP=2 checkpoint resumed in one process; random-LTD with
# rotary at TP=2 and PP=2 = one process; --use-checkpoint-args. Also the argument dump, the parameter counts (no biases, no position embeddings, the SwiGLU
# width, the grouped query_key_value), and the refusals.
# Usage: test_llama.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
tools=$(dirname "$bin")
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d /tmp/zt_llama.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
L=2 H=64 NH=4 S=64 V=128
llama=(--normalization rmsnorm --swiglu --disable-bias-linear --use-rotary-position-embeddings
       --untie-embeddings-and-output-weights --no-query-key-layer-scaling)
tiny=(--num-layers $L --hidden-size $H --num-attention-heads $NH --seq-length $S --max-position-embeddings $S
      --mock-data --vocab-size $V --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 6 --log-interval 1
      --eval-interval 6 --eval-iters 1 --global-batch-size 16 --attention-dropout 0.1 --hidden-dropout 0.1
      "${llama[@]}")
same() { # name ref out rc: lm losses to 1e-5 and grad norms (3 printed decimals) to 1e-5 + one printed unit
  if [ "$4" -eq 0 ] && close "$(field "$2" "lm loss")" "$(field "$3" "lm loss")" 1e-5 \
     && awk -v a="$(field "$2" "grad norm")" -v b="$(field "$3" "grad norm")" 'BEGIN { n = split(a, x, " ");
          m = split(b, y, " "); if (n != m || n == 0) exit 1; for (i = 1; i <= n; i++) { d = x[i] - y[i];
          if (d < 0) d = -d; if (d > 1e-5 * x[i] + 1e-3) exit 1 } }'; then
    ok "$1 = one process: lm losses $(field "$3" "lm loss" | cut -d' ' -f1,6)"
  else
    bad "$1" "rc=$4 ref '$(field "$2" "lm loss")' got '$(field "$3" "lm loss")'"
    echo "$3" | grep -E "error|^ iteration" | tail -4
  fi
}

ref=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 2>&1)
[ "$(field "$ref" "lm loss" | wc -w)" -eq 6 ] || { echo "reference run failed:"; echo "$ref" | tail -5; exit 1; }

# the argument dump (Megatron-DeepSpeed's names and values) and the default SwiGLU width int(4h 2/3 / 64) 64 = 128
for kv in "normalization rmsnorm" "swiglu True" "add_bias_linear False" "use_rotary_position_embeddings True" \
          "rope_theta 10000" "rotary_percent 1.0" "add_position_embedding False" \
          "apply_query_key_layer_scaling False" "ffn_hidden_size 128"; do
  set -- $kv
  grep -qE "^  $1 \.+ $2\$" <<<"$ref" && ok "argument dump: $1 $2" || bad "argument dump: $1" "$(grep -E "^  $1 " <<<"$ref")"
done
# parameters: word embeddings, per layer RMSNorm weight, QKV and dense without biases, RMSNorm weight, dense_h_to_4h
# [2 x 128, H] and dense_4h_to_h [H, 128]; the final RMSNorm weight; the untied output layer; no position embeddings
F=128
want=$(( V * H + L * (H + 3 * H * H + H * H + H + 2 * F * H + F * H) + H + V * H ))
ends_line " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): $want" "$ref" \
  && ok "parameter count $want (no biases, no position embeddings, SwiGLU's 2 x 128 rows)" \
  || bad "parameter count" "want $want: $(grep 'number of parameters' <<<"$ref")"

# --no-position-embedding alone: no position table, so no position information (Megatron-DeepSpeed's
# add_position_embedding False); the GPT of the same flags without it has S x H more parameters
np_out=$(OMP_NUM_THREADS=1 "$bin" --num-layers $L --hidden-size $H --num-attention-heads $NH --seq-length $S \
         --max-position-embeddings $S --mock-data --vocab-size $V --make-vocab-size-divisible-by 32 --lr 3e-3 \
         --train-iters 2 --log-interval 1 --global-batch-size 16 --micro-batch-size 8 --no-position-embedding 2>&1)
np_with=$(OMP_NUM_THREADS=1 "$bin" --num-layers $L --hidden-size $H --num-attention-heads $NH --seq-length $S \
         --max-position-embeddings $S --mock-data --vocab-size $V --make-vocab-size-divisible-by 32 --lr 3e-3 \
         --train-iters 2 --log-interval 1 --global-batch-size 16 --micro-batch-size 8 2>&1)
cnt() { grep -m1 "number of parameters on" <<<"$1" | sed -E 's/.*: ([0-9]+)$/\1/'; }
if grep -qE "^  add_position_embedding \.+ False$" <<<"$np_out" && [ -n "$(cnt "$np_out")" ] \
   && [ $(( $(cnt "$np_with") - $(cnt "$np_out") )) -eq $(( S * H )) ] \
   && [ "$(field "$np_out" "lm loss")" != "$(field "$np_with" "lm loss")" ]; then
  ok "--no-position-embedding: no position table ($(cnt "$np_out") = $(cnt "$np_with") - $S x $H parameters), other losses"
else
  bad "--no-position-embedding" "$(cnt "$np_out") vs $(cnt "$np_with"): $(grep -m1 error <<<"$np_out")"
fi

out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --sequence-parallel 2>&1)
same "TP=2 + --sequence-parallel" "$ref" "$out" $?
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --pipeline-model-parallel-size 2 2>&1)
same "PP=2" "$ref" "$out" $?
cat > ds_z2.json <<'EOF'
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
EOF
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 4 --deepspeed --deepspeed_config ds_z2.json \
      2>&1)
same "DP=2, ZeRO-2" "$ref" "$out" $?
out=$(timeout 300 "${mpi[@]}" -np 4 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --pipeline-model-parallel-size 2 2>&1)
same "TP=2 x PP=2" "$ref" "$out" $?

# grouped-query attention: 2 key/value heads for the 4 query heads (query_key_value [(4 + 2 x 2) x 16, 64], the
# grouped layout); TP=2 + SP (one group per rank) and a TP=2 checkpoint resumed in one process
gqa=(--num-key-value-heads 2)
gref=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" "${gqa[@]}" --micro-batch-size 8 2>&1)
gwant=$(( want - L * (3 * H * H - (H + 2 * 2 * (H / NH)) * H) ))
ends_line " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): $gwant" "$gref" \
  && ok "GQA: parameter count $gwant (query_key_value of 4 queries + 2 keys + 2 values per row of heads)" \
  || bad "GQA parameter count" "want $gwant: $(grep 'number of parameters' <<<"$gref")"
grep -qE "^  num_key_value_heads \.+ 2$" <<<"$gref" && ok "argument dump: num_key_value_heads 2" \
  || bad "argument dump: num_key_value_heads" "$(grep num_key_value <<<"$gref")"
[ "$(field "$gref" "lm loss")" != "$(field "$ref" "lm loss")" ] && ok "GQA trains another model than full attention" \
  || bad "GQA" "the same losses as without it: $(field "$gref" "lm loss")"
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${gqa[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --sequence-parallel --save ck_gqa --save-interval 3 --exit-interval 3 2>&1)
same "GQA, TP=2 + --sequence-parallel (iterations 1-3)" "$(grep -E "^ iteration +[123]/" <<<"$gref")" "$out" $?
res=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" "${gqa[@]}" --micro-batch-size 8 --load ck_gqa 2>&1)
if [ -n "$(field "$res" "lm loss")" ] && [ "$(field "$res" "lm loss")" = "$(field "$gref" "lm loss" | cut -d' ' -f4-)" ]; then
  ok "GQA: saved at TP=2, resumed in one process: iterations 4-6 as uninterrupted"
else
  bad "GQA TP=2 -> one process resume" "'$(field "$res" "lm loss")' vs '$(field "$gref" "lm loss" | cut -d' ' -f4-)'"
fi

# random-LTD with rotary: layer 1 runs on a reserved length of 16 -> 64 of the 64 tokens, its kept tokens turned by
# positions 0 .. r-1 as Megatron-DeepSpeed's (tests/parity/test_llama_parity.py's llama_ltd checks that against the
# twin); TP=2 and PP=2 = one process
cat > ltd.json <<'EOF'
{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8,
 "data_efficiency": {"enabled": true, "seed": 1234,
   "data_routing": {"enabled": true, "random_ltd": {"enabled": true, "total_layer_num": 2, "random_ltd_layer_num": 1,
     "random_ltd_layer_id": [1], "model_mask_name": "attention_mask", "model_type": "decoder",
     "hidden_state_order": "seq_batch_dim",
     "random_ltd_schedule": {"min_value": 16, "max_value": 64, "schedule_type": "fixed_linear",
       "schedule_config": {"require_steps": 8, "seq_per_step": 16}}}}}}
EOF
ltd=(--deepspeed --deepspeed_config ltd.json --random-ltd --micro-batch-size 8)
lref=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" "${ltd[@]}" 2>&1)
[ "$(field "$lref" "random ltd reserved length")" = "16 16 16 32 32 32 " ] &&
  [ "$(field "$lref" "lm loss")" != "$(field "$ref" "lm loss")" ] &&
  ok "random-LTD with rotary: reserved lengths 16 16 16 32 32 32, other losses than without" ||
  bad "random-LTD with rotary" "'$(field "$lref" "random ltd reserved length")' $(grep -m1 error <<<"$lref")"
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${ltd[@]}" --tensor-model-parallel-size 2 2>&1)
same "random-LTD with rotary, TP=2" "$lref" "$out" $?
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${ltd[@]}" --pipeline-model-parallel-size 2 2>&1)
same "random-LTD with rotary, PP=2" "$lref" "$out" $?

# saved at TP=2 after 3 iterations, resumed in one process: the uninterrupted run's last 3 iterations
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --save ck_tp2 --save-interval 3 --exit-interval 3 2>&1)
res=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 --load ck_tp2 2>&1)
if [ "$(field "$res" "lm loss")" = "$(field "$ref" "lm loss" | cut -d' ' -f4-)" ]; then
  ok "saved at TP=2, resumed in one process: iterations 4-6 as uninterrupted ($(field "$res" "lm loss"))"
else
  bad "TP=2 -> one process resume" "'$(field "$res" "lm loss")' vs '$(field "$ref" "lm loss" | cut -d' ' -f4-)'"
fi
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 --save ck_tp1 --save-interval 3 --exit-interval 3 \
  >/dev/null 2>&1
"$tools/zero_to_fp32" ck_tp2 fp32_tp2 --safe_serialization >/dev/null 2>&1
"$tools/zero_to_fp32" ck_tp1 fp32_tp1 --safe_serialization >/dev/null 2>&1
# the same tensors to the TP=2 run's fp32 reduction order (3 Adam steps: ~1e-5); SwiGLU's halves or the heads in
# another order would differ by the weights' own size (~2e-2)
cmpst=$(/usr/bin/python3 - fp32_tp2/model.safetensors fp32_tp1/model.safetensors <<'EOF' 2>&1
import json, struct, sys
try:
    import numpy as np
except ImportError:
    print("SKIP numpy"); sys.exit(0)
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], np.float32).reshape(v["shape"])
            for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
worst = max(float(np.abs(a[k] - b[k]).max()) for k in b) if sorted(a) == sorted(b) and all(
    a[k].shape == b[k].shape for k in b) else 1.0
print("OK" if worst < 1e-4 else "DIFF", len(b), worst)
EOF
)
case "$cmpst" in
  OK*) ok "zero_to_fp32: the TP=2 checkpoint's tensors are the one-process checkpoint's (count, max diff: ${cmpst#OK })";;
  SKIP*) echo "SKIP zero_to_fp32 comparison: numpy not available";;
  *) bad "zero_to_fp32 of TP=2 vs one process" "$cmpst";;
esac

# --use-checkpoint-args restores what Megatron-DeepSpeed's load_args_from_checkpoint forces (add_position_embedding,
# use_rotary_position_embeddings, rotary_percent, add_bias_linear, swiglu, the untied output layer); like it, not
# --normalization
res=$(OMP_NUM_THREADS=1 "$bin" --seq-length $S --max-position-embeddings $S --mock-data --vocab-size $V --make-vocab-size-divisible-by 32 --lr 3e-3 \
      --train-iters 6 --log-interval 1 --eval-interval 6 --eval-iters 1 --global-batch-size 16 --micro-batch-size 8 \
      --attention-dropout 0.1 --hidden-dropout 0.1 --normalization rmsnorm --load ck_tp1 --use-checkpoint-args 2>&1)
if [ "$(field "$res" "lm loss")" = "$(field "$ref" "lm loss" | cut -d' ' -f4-)" ]; then
  ok "--use-checkpoint-args takes the shape and the Llama flags from the checkpoint: iterations 4-6 as uninterrupted"
else
  bad "--use-checkpoint-args of a Llama-style checkpoint" "'$(field "$res" "lm loss")' $(grep -m1 error <<<"$res")"
fi

# refusals, before any work
refused() { # name pattern args...
  local name="$1" pat="$2"; shift 2
  local o rc
  o=$(OMP_NUM_THREADS=1 "$bin" "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$pat" <<<"$o" && ! grep -q "^ iteration" <<<"$o"; then ok "refused: $name"
  else bad "refusal: $name" "rc=$rc $(tail -2 <<<"$o")"; fi
}
refused "--rotary-percent giving an odd count" "gives 1 rotary dimensions" "${tiny[@]}" --micro-batch-size 8 \
  --rotary-percent 0.1
refused "--rotary-percent 0" "--rotary-percent 0: must be in (0, 1]" "${tiny[@]}" --micro-batch-size 8 \
  --rotary-percent 0
refused "resuming with another rotary theta" "saved with rope_theta 10000, this run has 500" "${tiny[@]}" \
  --micro-batch-size 8 --load ck_tp1 --rotary-position-embeddings-theta 500
refused "resuming without --swiglu" "(a different architecture?)" --num-layers $L --hidden-size $H \
  --num-attention-heads $NH --seq-length $S --max-position-embeddings $S --mock-data --vocab-size $V \
  --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 6 --global-batch-size 16 --micro-batch-size 8 --load ck_tp1
refused "--num-key-value-heads not dividing the heads" "num_attention_heads must be divisible by num_key_value_heads (got \`num_attention_heads\`: 4 and \`num_key_value_heads\`: 3)" \
  "${tiny[@]}" --micro-batch-size 8 --num-key-value-heads 3
o=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --num-key-value-heads 1 \
    --tensor-model-parallel-size 2 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF -- "--num-key-value-heads 1 is not divisible by --tensor-model-parallel-size 2" <<<"$o" \
  && ! grep -q "^ iteration" <<<"$o" && ok "refused: --num-key-value-heads 1 at TP=2 (whole groups per rank)" \
  || bad "refusal: --num-key-value-heads 1 at TP=2" "rc=$rc $(grep -m1 error <<<"$o")"
refused "GQA with --mos" "GQA currently does not support args.mos" "${tiny[@]}" --micro-batch-size 8 \
  --num-key-value-heads 2 --mos --load-teacher ck_tp1 --num-layers-teacher 2 --hidden-size-teacher 64 \
  --num-attention-heads-teacher 4
# (BERT and T5 take rotary embeddings, BERT GQA too: tests/cli/test_model_variants.sh); T5 refuses GQA before reading
# any file, as Megatron-DeepSpeed's cross-attention asserts
o=$("$tools/pretrain_t5" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 \
    --max-position-embeddings 64 --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --lr 1e-4 \
    --data-path /nonexistent/corpus --vocab-file /nonexistent/vocab.txt --decoder-seq-length 32 --swiglu \
    --num-key-value-heads 2 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF -- "--num-key-value-heads 2 of 4 heads in T5: Megatron-DeepSpeed's cross-attention asserts" \
  <<<"$o" && ok "refused: pretrain_t5 --num-key-value-heads (GQA + cross-attention)" \
  || bad "pretrain_t5 --num-key-value-heads" "rc=$rc $(grep -m1 error <<<"$o")"
# export_hf writes Llama's architecture as LlamaForCausalLM (its logits: tests/parity/test_llama_hf_export.py), and
# refuses a mix Hugging Face's Llama has not, writing nothing
out=$("$tools/export_hf" ck_gqa hf 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF '"LlamaForCausalLM"' hf/config.json && grep -qE '"num_key_value_heads": *2' hf/config.json \
  && ok "export_hf: the GQA checkpoint saved at TP=2 as LlamaForCausalLM (num_key_value_heads 2)" \
  || bad "export_hf of a Llama checkpoint" "rc=$rc $out"
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 --rotary-percent 0.5 --train-iters 1 --save ck_half \
  >/dev/null 2>&1
out=$("$tools/export_hf" ck_half hf_half 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "rotary_percent 0.5" <<<"$out" && [ ! -e hf_half ] \
  && ok "export_hf refuses rotary on half of each head (not Hugging Face's Llama), writing nothing" \
  || bad "export_hf of a partial-rotary checkpoint" "rc=$rc $out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
