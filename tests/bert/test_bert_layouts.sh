#!/usr/bin/env bash
# pretrain_bert in every parallel layout (mpirun, label mpi): a tiny BERT (4 layers, hidden 32, dropout on) on a
# generated sentence-split corpus gives, in each layout, the per-iteration lm loss and sop loss, the validation
# lm/sop values and the grad norms of one process within 1e-5 relative: DP=2; TP=2; TP=2 --sequence-parallel;
# PP=2; PP=4 interleaved (8 layers, 1 per virtual stage, 4 micro batches); ZeRO 1/2/3 at DP=2 (ds_config); ZeRO-2
# with offload_optimizer cpu; full recompute (--recompute-granularity full, --checkpoint-activations with TP=2 x
# DP=2); --apply-residual-connection-post-layernorm and --bert-no-binary-head (no sop loss on the line) against
# their own one-process runs; bf16 and fp16 (static scale) within 1% of fp32 in one process, and PP=2 / TP=2 equal
# to their one-process mixed-precision run (1e-5, as the GPT interleaved mixed-precision cases).
# Usage: test_bert_layouts.sh PRETRAIN_BERT [PYTHON]   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
. "$(dirname "$0")/bert_lib.sh"
t0=$(date +%s)

ref=$(one --micro-batch-size 4)
[ "$(field "$ref" "lm loss" | wc -w)" -eq 6 ] && [ "$(field "$ref" "sop loss" | wc -w)" -eq 6 ] \
  && [ "$(vals "$ref" "sop loss" | wc -w)" -eq 3 ] || { echo "reference run failed:"; tail -5 <<<"$ref"; exit 1; }
grep -q "hidden_dropout \.* 0.1" <<<"$ref" && grep -q "attention_dropout \.* 0.1" <<<"$ref" \
  && ok "reference: dropout 0.1 on, 6 iterations with lm and sop loss, 3 validations" || bad "reference dropout" "$(grep dropout <<<"$ref")"

out=$(run 2 --micro-batch-size 4); same "DP=2" "$ref" "$out" $?
out=$(run 2 --micro-batch-size 4 --tensor-model-parallel-size 2); same "TP=2" "$ref" "$out" $?
out=$(run 2 --micro-batch-size 4 --tensor-model-parallel-size 2 --sequence-parallel); same "TP=2 --sequence-parallel" "$ref" "$out" $?
grep -q "sequence_parallel \.* True" <<<"$out" || bad "sequence_parallel in the summary" "$(grep sequence_parallel <<<"$out")"
out=$(run 2 --micro-batch-size 4 --pipeline-model-parallel-size 2); same "PP=2" "$ref" "$out" $?
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "zero_optimization": {"stage": 1}}\n' > "$tmp/zb.json"
out=$(run 3 --micro-batch-size 4 --pipeline-model-parallel-size 3 --standalone-embedding-stage)
same "PP=3 --standalone-embedding-stage (stage 0 the embeddings alone)" "$ref" "$out" $?
zbh1 "PP=2, 4 micro batches" 2 --micro-batch-size 2 --pipeline-model-parallel-size 2 --deepspeed --deepspeed_config "$tmp/zb.json"
out=$(one --micro-batch-size 4 --recompute-granularity full); same "--recompute-granularity full" "$ref" "$out" $?
out=$(run 4 --micro-batch-size 4 --tensor-model-parallel-size 2 --checkpoint-activations)
same "TP=2 x DP=2 --checkpoint-activations" "$ref" "$out" $?

# interleaved: PP=4 x 2 chunks of one layer (8 layers), 4 micro batches of 2 (a multiple of the stages)
ref8=$(one --num-layers 8 --micro-batch-size 2)
out=$(run 4 --num-layers 8 --micro-batch-size 2 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1)
same "interleaved PP=4 x 2 chunks" "$ref8" "$out" $?
grep -qF "> interleaved pipeline schedule: 4 stages x 2 chunks of 1 layer, 4 micro batches" <<<"$out" \
  && ok "interleaved: schedule line" || bad "interleaved schedule line" "$(grep -m1 'pipeline schedule' <<<"$out")"

# ZeRO through --deepspeed (DP=2, one micro batch of 4 per rank); gradient clipping 1.0 as Megatron's --clip-grad
cfg() { printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, %s}\n' "$2" > "$tmp/$1.json"; }
for st in 1 2 3; do
  cfg z$st "\"zero_optimization\": {\"stage\": $st}"
  out=$(run 2 --micro-batch-size 4 --deepspeed --deepspeed_config "$tmp/z$st.json")
  grep -q "> ZeRO stage $st" <<<"$out" || bad "ZeRO-$st line" "$(grep -m1 'ZeRO' <<<"$out")"
  same "ZeRO-$st DP=2" "$ref" "$out" $?
done
cfg zc '"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}'
out=$(run 2 --micro-batch-size 4 --deepspeed --deepspeed_config "$tmp/zc.json"); same "ZeRO-2 DP=2 offload_optimizer cpu" "$ref" "$out" $?
grep -qi "offload_optimizer cpu" <<<"$out" || bad "offload_optimizer cpu line" "$(grep -i -m1 offload <<<"$out")"

# model variants against their own one-process runs
r=$(one --micro-batch-size 4 --apply-residual-connection-post-layernorm)
[ "$(field "$r" "lm loss")" != "$(field "$ref" "lm loss")" ] || bad "post-layernorm residual" "losses identical to the default: flag ignored"
out=$(run 2 --micro-batch-size 4 --apply-residual-connection-post-layernorm --tensor-model-parallel-size 2)
same "--apply-residual-connection-post-layernorm TP=2" "$r" "$out" $?
out=$(run 2 --micro-batch-size 4 --apply-residual-connection-post-layernorm --pipeline-model-parallel-size 2)
same "--apply-residual-connection-post-layernorm PP=2" "$r" "$out" $?
r=$(one --micro-batch-size 4 --bert-no-binary-head)
out=$(run 2 --micro-batch-size 4 --bert-no-binary-head --tensor-model-parallel-size 2 --sequence-parallel); rc=$?
if [ $rc -eq 0 ] && [ "$(field "$r" "lm loss" | wc -w)" -eq 6 ] && ! grep -q "sop loss" <<<"$r$out" \
   && close "$(field "$r" "lm loss") $(vals "$r" "lm loss")" "$(field "$out" "lm loss") $(vals "$out" "lm loss")" 1e-5; then
  ok "--bert-no-binary-head: lm loss only; TP=2 --sequence-parallel = one process (worst $(worst "$(field "$out" "lm loss")" "$(field "$r" "lm loss")"))"
else
  bad "--bert-no-binary-head" "rc=$rc '$(field "$r" "lm loss")' vs '$(field "$out" "lm loss")' sop lines: $(grep -c 'sop loss' <<<"$r$out")"
fi
out=$(run 2 --micro-batch-size 4 --bert-no-binary-head --pipeline-model-parallel-size 2)
close "$(field "$r" "lm loss") $(vals "$r" "lm loss")" "$(field "$out" "lm loss") $(vals "$out" "lm loss")" 1e-5 && ! grep -q "sop loss" <<<"$out" \
  && ok "--bert-no-binary-head PP=2 = one process" || bad "--bert-no-binary-head PP=2" "'$(field "$out" "lm loss")' $(grep -m1 error <<<"$out")"

# mixed precision: bf16 and fp16 (static scale 1024) within 1% of fp32; PP=2 and TP=2 equal to their own
# one-process run
for prec in "--bf16" "--fp16 --loss-scale 1024"; do
  m=$(one --micro-batch-size 4 $prec)
  if close "$(field "$ref" "lm loss") $(field "$ref" "sop loss")" "$(field "$m" "lm loss") $(field "$m" "sop loss")" 0.01 \
     && [ "$(field "$m" "lm loss")" != "$(field "$ref" "lm loss")" ]; then
    ok "$prec within 1% of fp32 (worst $(worst "$(field "$m" "lm loss") $(field "$m" "sop loss")" "$(field "$ref" "lm loss") $(field "$ref" "sop loss")")), not identical"
  else bad "$prec vs fp32" "'$(field "$m" "lm loss")' vs '$(field "$ref" "lm loss")'"; fi
  out=$(run 2 --micro-batch-size 4 $prec --pipeline-model-parallel-size 2); same "$prec PP=2" "$m" "$out" $?
  out=$(run 2 --micro-batch-size 4 $prec --tensor-model-parallel-size 2); same "$prec TP=2" "$m" "$out" $?
done
echo "($(( $(date +%s) - t0 )) s)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
