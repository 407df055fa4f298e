#!/usr/bin/env bash
# The sentence-order head learns end to end (label unit): on a generated corpus where the order of a sample's two
# segments is visible (make_fixture.py --sop-order: the word "story" is in each document's first sentence only, so
# it lands in segment A unless Megatron's SOP swap put A second), a 2-layer BERT trained by pretrain_bert for 1500
# iterations must bring the sop loss from ln 2 well down, on the training lines and on held-out validation data,
# while the lm loss falls too. A label staged against the wrong sample, a pooler reading the wrong position or a
# binary head left out of the optimizer keeps it at ln 2 (0.693). The curve has a plateau at ln 2 (100 to 600
# iterations depending on the seed and split; dropout lengthens it, so it is off here), then a sharp drop to ~0.1
# (an independent PyTorch twin on the same batches shows the same plateau: docs/bert.md).
# Usage: test_bert_sop_learns.sh PRETRAIN_BERT [PYTHON]
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
"$PY" "$(dirname "$0")/make_fixture.py" "$tmp/fx" --sop-order || { echo "FAIL: make_fixture.py --sop-order"; exit 1; }
"$(dirname "$bin")/preprocess_data" --input "$tmp/fx/order.jsonl" --output-prefix "$tmp/fx/order" --workers 1 \
  --vocab-file "$tmp/fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
  || { echo "FAIL: preprocess_data --split-sentences"; exit 1; }
o=$(timeout 600 "$bin" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
      --max-position-embeddings 32 --micro-batch-size 16 --global-batch-size 16 --data-path "$tmp/fx/order_text_sentence" \
      --vocab-file "$tmp/fx/vocab.txt" --split 95,5,0 --lr 1e-3 --lr-warmup-iters 20 --train-iters 1500 \
      --hidden-dropout 0 --attention-dropout 0 --log-interval 100 --eval-interval 100000 --eval-iters 4 --seed 1234 2>&1); rc=$?
sop=($(field "$o" "sop loss")) lm=($(field "$o" "lm loss"))
vsop=$(grep -F "validation loss at the end of training" <<<"$o" | sed -nE 's/.*sop loss value: ([0-9.E+-]+).*/\1/p')
if [ $rc -ne 0 ] || [ ${#sop[@]} -ne 15 ] || [ -z "$vsop" ]; then
  bad "pretrain_bert on the order corpus" "rc=$rc, ${#sop[@]} log lines, validation sop '$vsop'"; grep -E "error" <<<"$o" | head -3
else
  first=${sop[0]} last=${sop[14]}
  if awk -v a="$first" 'BEGIN { exit !(a > 0.67 && a < 0.72) }'; then ok "sop loss starts at ln 2 (iterations 1-100: $first)"
  else bad "sop loss at the start" "$first, expected ~0.693"; fi
  if awk -v a="$last" 'BEGIN { exit !(a < 0.3) }'; then ok "sop loss learned (iterations 1401-1500: $last < 0.3)"
  else bad "sop loss did not fall" "iterations 1401-1500: $last (curve: ${sop[*]})"; fi
  if awk -v a="$vsop" 'BEGIN { exit !(a < 0.3) }'; then ok "validation sop loss $vsop < 0.3"
  else bad "validation sop loss" "$vsop"; fi
  if awk -v a="${lm[0]}" -v b="${lm[14]}" 'BEGIN { exit !(b < a - 0.5) }'; then ok "lm loss falls too (${lm[0]} -> ${lm[14]})"
  else bad "lm loss" "${lm[0]} -> ${lm[14]}"; fi
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
