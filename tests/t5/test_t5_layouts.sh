#!/usr/bin/env bash
# pretrain_t5 in every parallel layout it runs (mpirun, label mpi): a tiny T5 (2 encoder and 2 decoder layers, hidden
# 32, dropout on) on a generated sentence-split corpus gives, in each layout, the per-iteration lm loss, the
# validation values and the grad norms of one process within 1e-5 relative: DP=2; TP=2; TP=2 --sequence-parallel;
# full recompute; TP=2 x DP=2 --sequence-parallel --checkpoint-activations; pipeline stages split at
# --pipeline-model-parallel-split-rank (PP=2 split 1, PP=4 split 2, PP=4 split 3 with 3 + 1 layers, PP=2 x TP=2 +
# SP, PP=2 x DP=2 with recompute and with ZeRO-1, bf16 PP=2); ZeRO 1/2/3 at DP=2 (ds_config); ZeRO-2
# with offload_optimizer cpu; a decoder of 3 layers over 24 tokens at TP=4 --sequence-parallel (one head per rank);
# --apply-residual-connection-post-layernorm against its own one-process run; bf16 and fp16 (static scale) within 1%
# of fp32 in one process, and TP=2 equal to their one-process mixed-precision run; the ds_config's flops profiler
# prints T5's module tree (encoder, decoder with inter_attention, T5LMHead) with the MACs of the shapes.
# Usage: test_t5_layouts.sh PRETRAIN_T5 [PYTHON]   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
. "$(dirname "$0")/t5_lib.sh"
t0=$(date +%s)

ref=$(one --micro-batch-size 4)
[ "$(field "$ref" "lm loss" | wc -w)" -eq 6 ] && [ "$(vals "$ref" "lm loss" | wc -w)" -eq 3 ] \
  || { echo "reference run failed:"; tail -5 <<<"$ref"; exit 1; }
grep -q "hidden_dropout \.* 0.1" <<<"$ref" && grep -q "attention_dropout \.* 0.1" <<<"$ref" \
  && grep -q "decoder_num_layers \.* 2" <<<"$ref" && grep -q "decoder_seq_length \.* 16" <<<"$ref" \
  && ok "reference: dropout 0.1 on, decoder of 2 layers over 16 tokens, 6 iterations, 3 validations" \
  || bad "reference arguments" "$(grep -E 'dropout|decoder_' <<<"$ref")"

out=$(run 2 --micro-batch-size 4); same "DP=2" "$ref" "$out" $?
out=$(run 2 --micro-batch-size 4 --tensor-model-parallel-size 2); same "TP=2" "$ref" "$out" $?
out=$(run 2 --micro-batch-size 4 --tensor-model-parallel-size 2 --sequence-parallel); same "TP=2 --sequence-parallel" "$ref" "$out" $?
out=$(one --micro-batch-size 4 --recompute-granularity full); same "--recompute-granularity full" "$ref" "$out" $?
out=$(run 4 --micro-batch-size 4 --tensor-model-parallel-size 2 --sequence-parallel --checkpoint-activations)
same "TP=2 x DP=2 --sequence-parallel --checkpoint-activations" "$ref" "$out" $?

# pipeline stages split at --pipeline-model-parallel-split-rank (micro batches of 2: four per step through the 1F1B
# schedule): the encoder's and the decoder's streams cross each boundary
ref2=$(one --micro-batch-size 2)
out=$(run 2 --micro-batch-size 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1)
same "PP=2, split rank 1" "$ref2" "$out" $?
grep -q "pipeline_model_parallel_split_rank \.* 1" <<<"$out" || bad "split rank in the summary" "$(grep split_rank <<<"$out")"
out=$(run 4 --micro-batch-size 2 --pipeline-model-parallel-size 4 --pipeline-model-parallel-split-rank 2)
same "PP=4, split rank 2 (two encoder and two decoder stages)" "$ref2" "$out" $?
r31=$(one --micro-batch-size 2 --num-layers 3 --decoder-num-layers 1)
out=$(run 4 --micro-batch-size 2 --num-layers 3 --decoder-num-layers 1 --pipeline-model-parallel-size 4 \
      --pipeline-model-parallel-split-rank 3)
same "PP=4, split rank 3 (3 encoder stages of one layer, one decoder stage)" "$r31" "$out" $?
out=$(run 4 --micro-batch-size 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1 \
      --tensor-model-parallel-size 2 --sequence-parallel)
same "PP=2 x TP=2 --sequence-parallel" "$ref2" "$out" $?
out=$(run 4 --micro-batch-size 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1 --checkpoint-activations)
same "PP=2 x DP=2 --checkpoint-activations" "$ref2" "$out" $?

# ZeRO through --deepspeed (DP=2, one micro batch of 4 per rank); gradient clipping 1.0 as Megatron's --clip-grad
cfg() { printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, %s}\n' "$2" > "$tmp/$1.json"; }
for st in 1 2 3; do
  cfg z$st "\"zero_optimization\": {\"stage\": $st}"
  out=$(run 2 --micro-batch-size 4 --deepspeed --deepspeed_config "$tmp/z$st.json")
  grep -q "> ZeRO stage $st" <<<"$out" || bad "ZeRO-$st line" "$(grep -m1 'ZeRO' <<<"$out")"
  same "ZeRO-$st DP=2" "$ref" "$out" $?
done
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "zero_optimization": {"stage": 1}}\n' > "$tmp/z1pp.json"
out=$(run 4 --micro-batch-size 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1 --deepspeed \
      --deepspeed_config "$tmp/z1pp.json")
same "ZeRO-1 PP=2 x DP=2" "$ref2" "$out" $?
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "zero_optimization": {"stage": 1}}\n' > "$tmp/zb.json"
out=$(run 3 --micro-batch-size 2 --pipeline-model-parallel-size 3 --pipeline-model-parallel-split-rank 2 \
      --standalone-embedding-stage)
same "PP=3 split rank 2 --standalone-embedding-stage (embeddings, encoder, decoder: a stage each)" "$ref2" "$out" $?
o=$(run 3 --micro-batch-size 2 --pipeline-model-parallel-size 3 --pipeline-model-parallel-split-rank 1 --standalone-embedding-stage)
grep -qF -- "--pipeline-model-parallel-split-rank 1: the encoder needs at least one stage of layers (a split rank in [2, 2]; --standalone-embedding-stage takes stage 0 for the embedding)" <<<"$o" \
  && ! grep -q "^ iteration" <<<"$o" && ok "refused: split rank 1 with --standalone-embedding-stage" \
  || bad "split rank 1 with --standalone-embedding-stage" "$(grep -m2 error <<<"$o")"
zbh1 "PP=2 split rank 1, 4 micro batches" 2 --micro-batch-size 2 --pipeline-model-parallel-size 2 \
  --pipeline-model-parallel-split-rank 1 --deepspeed --deepspeed_config "$tmp/zb.json"
cfg zc '"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}'
out=$(run 2 --micro-batch-size 4 --deepspeed --deepspeed_config "$tmp/zc.json"); same "ZeRO-2 DP=2 offload_optimizer cpu" "$ref" "$out" $?

# a decoder unlike the encoder (3 layers over 24 tokens), one head per rank: TP=4 pads the vocabulary to a multiple
# of 4 x 32 = 128, as one process does with the default 128
r=$(one --micro-batch-size 4 --decoder-num-layers 3 --decoder-seq-length 24)
[ "$(field "$r" "lm loss")" != "$(field "$ref" "lm loss")" ] || bad "--decoder-num-layers 3" "losses identical to the default: flag ignored"
out=$(run 4 --micro-batch-size 4 --decoder-num-layers 3 --decoder-seq-length 24 --tensor-model-parallel-size 4 \
      --sequence-parallel --make-vocab-size-divisible-by 32)
same "decoder of 3 layers over 24 tokens, TP=4 --sequence-parallel" "$r" "$out" $?

r=$(one --micro-batch-size 4 --apply-residual-connection-post-layernorm)
[ "$(field "$r" "lm loss")" != "$(field "$ref" "lm loss")" ] || bad "post-layernorm residual" "losses identical to the default: flag ignored"
out=$(run 2 --micro-batch-size 4 --apply-residual-connection-post-layernorm --tensor-model-parallel-size 2)
same "--apply-residual-connection-post-layernorm TP=2" "$r" "$out" $?

# mixed precision: bf16 and fp16 (static scale 1024) within 1% of fp32; TP=2 equal to its own one-process run
for prec in "--bf16" "--fp16 --loss-scale 1024"; do
  m=$(one --micro-batch-size 4 $prec)
  if close "$(field "$ref" "lm loss")" "$(field "$m" "lm loss")" 0.01 && [ "$(field "$m" "lm loss")" != "$(field "$ref" "lm loss")" ]; then
    ok "$prec within 1% of fp32 (worst $(worst "$(field "$m" "lm loss")" "$(field "$ref" "lm loss")")), not identical"
  else bad "$prec vs fp32" "'$(field "$m" "lm loss")' vs '$(field "$ref" "lm loss")'"; fi
  out=$(run 2 --micro-batch-size 4 $prec --tensor-model-parallel-size 2); same "$prec TP=2" "$m" "$out" $?
done
m=$(one --micro-batch-size 2 --bf16)
out=$(run 2 --micro-batch-size 2 --bf16 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1)
same "--bf16 PP=2" "$m" "$out" $?
# the flops profiler (one process): T5's module tree with the MACs of the shapes, the losses unchanged by it
H=32 TE=32 TD=16 B=4
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "flops_profiler": {"enabled": true, "profile_step": 2, "module_depth": -1, "top_modules": 1, "detailed": true}}\n' > "$tmp/fp.json"
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0}\n' > "$tmp/plain.json"
o=$(one --micro-batch-size 4 --deepspeed --deepspeed_config "$tmp/fp.json"); rc=$?
pl=$(one --micro-batch-size 4 --deepspeed --deepspeed_config "$tmp/plain.json")
tree=$(sed -n '/^T5Model(/,/^)/p' <<<"$o")
V=$(grep -m1 "padded vocab" <<<"$o" | sed -E 's/.*new size: ([0-9]+).*/\1/')
kv=$(awk -v m=$(( B * TE * H * 2 * H )) 'BEGIN { printf "%.2f KMACs", m / 1000 }')
lmh=$(awk -v m=$(( B * TD * H * V )) 'BEGIN { printf "%.2f KMACs", m / 1000 }')
miss=""
for m in "^T5Model\(" "^    \(encoder\): ParallelTransformer\(" "^    \(decoder\): ParallelTransformer\(" \
         "^          \(inter_attention\): ParallelAttention\(" "^            \(key_value\): ColumnParallelLinear\(2.11 K = .* $kv = " \
         "^          \(post_inter_attention_layernorm\): LayerNorm\(" "^      \(final_layernorm\): LayerNorm\(" \
         "^  \(lm_head\): T5LMHead\(.* $lmh = "; do
  grep -qE "$m" <<<"$tree" || miss="$miss [$m]"
done
if [ $rc -eq 0 ] && [ -n "$V" ] && [ -z "$miss" ] && [ "$(grep -c "(inter_attention)" <<<"$tree")" = 2 ] \
   && [ "$(field "$o" "lm loss")" = "$(field "$pl" "lm loss")" ]; then
  ok "flops profiler: T5Model tree (encoder, decoder with 2 inter_attention, key_value $kv over the encoder's tokens, lm_head $lmh); losses unchanged"
else bad "flops profiler" "rc=$rc missing:$miss V=$V; '$(field "$o" "lm loss")' vs '$(field "$pl" "lm loss")'"; fi
echo "($(( $(date +%s) - t0 )) s)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
