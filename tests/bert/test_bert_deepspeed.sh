#!/usr/bin/env bash
# pretrain_bert's DeepSpeed surface, one process (label unit): the flops profiler (ds_config "flops_profiler") prints
# BERT's module tree (BertModel, TransformerLanguageModel with its tokentype_embeddings and Pooler, BertLMHead,
# binary_head) with the parameter counts of the shapes and MACs from hand arithmetic, and leaves the losses unchanged;
# csv_monitor writes DeepSpeed's Train/Samples/train_loss, which for BERT is what the engine's backward gets:
# lm loss + sop loss of the step (Megatron-DeepSpeed's forward_step returns their sum), one row per iteration, each
# equal to the log line's two losses added (1e-5).
# Usage: test_bert_deepspeed.sh PRETRAIN_BERT [PYTHON]
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
. "$(dirname "$0")/bert_lib.sh"
tiny+=(--micro-batch-size 4)
H=32 T=32 B=4
cat > "$tmp/ds.json" <<JSON
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0,
 "flops_profiler": {"enabled": true, "profile_step": 2, "module_depth": -1, "top_modules": 1, "detailed": true},
 "csv_monitor": {"enabled": true, "output_path": "$tmp/mon", "job_name": "bert"}}
JSON
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0}\n' > "$tmp/plain.json"
o=$(one --deepspeed --deepspeed_config "$tmp/ds.json"); rc=$?
p=$(one --deepspeed --deepspeed_config "$tmp/plain.json")
ref=$(one)
V=$(grep -m1 "padded vocab" <<<"$o" | sed -E 's/.*new size: ([0-9]+).*/\1/')
nparam=$(grep -m1 "number of parameters on" <<<"$o" | sed -E 's/.*: ([0-9]+)$/\1/')

# the tree: every BERT module named, in Megatron-DeepSpeed's order and classes
tree=$(sed -n '/^BertModel(/,/^)/p' <<<"$o")
miss=""
for m in "^BertModel\(" "^  \(language_model\): TransformerLanguageModel\(" "^      \(tokentype_embeddings\): Embedding\(64 = " \
         "^    \(pooler\): Pooler\(" "^      \(dense\): Linear\(1.06 K = " "^  \(lm_head\): BertLMHead\(" \
         "^    \(layernorm\): LayerNorm\(64 = " "^  \(binary_head\): Linear\(66 = .*, 256 MACs = " \
         "^        \(3\): ParallelTransformerLayer\("; do
  grep -qE "$m" <<<"$tree" || miss="$miss [$m]"
done
# lm_head: dense H*H+H, layernorm 2H, bias V; its MACs: the dense over B*T tokens plus the tied output layer B*T*H*V
lmp=$(( H * H + H + 2 * H + V )) lmm=$(( B * T * H * H + B * T * H * V ))
lmline=$(grep -A1 "^  (lm_head): BertLMHead(" <<<"$tree" | tail -1)
want_lm=$(awk -v p=$lmp -v m=$lmm 'BEGIN { printf "%.2f K = .* %.2f MMACs", p / 1000, m / 1e6 }' | sed 's/\.00 / /; s/0 K/ K/; s/0 MMACs/ MMACs/')
if [ $rc -eq 0 ] && [ -z "$miss" ] && [ -n "$V" ] && grep -qE "^    $want_lm" <<<"$lmline" \
   && grep -qE "^  $(awk -v n="$nparam" 'BEGIN { printf "%.2f K", n / 1000 }') = 100% Params" <<<"$(sed -n 2p <<<"$tree")"; then
  ok "flops profiler tree: BertModel ($nparam params), tokentype_embeddings, pooler, lm_head ($lmp params, $lmm MACs), binary_head (2H+2 params, 2BH MACs), 4 layers"
else
  bad "flops profiler tree" "rc=$rc missing:$miss V=$V lm_head '$lmline' want '$want_lm'; top '$(sed -n 2p <<<"$tree")' params $nparam"
fi
[ "$(grep -c "^BertModel(" <<<"$o")" = 1 ] && ok "the profile printed once" || bad "profile count" "$(grep -c "^BertModel(" <<<"$o")"
[ -n "$(field "$o" "lm loss")" ] && [ "$(field "$o" "lm loss")$(field "$o" "sop loss")" = "$(field "$p" "lm loss")$(field "$p" "sop loss")" ] \
  && ok "losses with the profiler attached identical to without" || bad "profiler changes losses" "'$(field "$o" "lm loss")' vs '$(field "$p" "lm loss")'"
# --deepspeed with no optimizer block = Megatron's flags: the same lm/sop losses as without --deepspeed
close "$(field "$ref" "lm loss") $(field "$ref" "sop loss")" "$(field "$p" "lm loss") $(field "$p" "sop loss")" 1e-6 \
  && ok "--deepspeed (no optimizer block) = plain Megatron flags: lm and sop losses" || bad "--deepspeed vs plain" "'$(field "$p" "lm loss")' vs '$(field "$ref" "lm loss")'"

# csv_monitor: train_loss = lm loss + sop loss per step, at the samples before the step
csv="$tmp/mon/bert/Train_Samples_train_loss.csv"
sums=$(paste -d' ' <(field "$o" "lm loss" | tr ' ' '\n' | sed '/^$/d') <(field "$o" "sop loss" | tr ' ' '\n' | sed '/^$/d') | awk '{ printf "%.7g ", $1 + $2 }')
rows=$(tail -n +2 "$csv" 2>/dev/null | cut -d, -f2 | tr -d '\r' | tr '\n' ' ')
steps=$(tail -n +2 "$csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' ')
if [ "$(head -1 "$csv" 2>/dev/null | tr -d '\r')" = "step,train_loss" ] && [ "$steps" = "0 8 16 24 32 40 " ] && close "$sums" "$rows" 1e-5; then
  ok "csv_monitor train_loss = lm loss + sop loss for each of 6 steps (worst $(worst "$rows" "$sums")): $(cut -d' ' -f1 <<<"$rows")"
else
  bad "csv_monitor train_loss" "header '$(head -1 "$csv" 2>&1)' steps '$steps' rows '$rows' vs lm+sop '$sums'"
fi
[ -f "$tmp/mon/bert/Train_Samples_lr.csv" ] && [ "$(wc -l < "$tmp/mon/bert/Train_Samples_lr.csv")" -eq 7 ] \
  && ok "csv_monitor lr: 6 rows" || bad "csv_monitor lr" "$(ls "$tmp/mon/bert" 2>&1)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
