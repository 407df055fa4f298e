#!/usr/bin/env bash
# pretrain_bert's refusals (label unit): each bad input stops the run before training with a non-zero exit and a
# message naming the flag or file and the numbers, and leaves no checkpoint (--save) and no samples-mapping cache
# (*_indexmap_*.npy) behind: a GPT-style _text_document dataset (not split into sentences); vocab files without
# [MASK], without [CLS], without [SEP]; --seq-length above --max-position-embeddings; --mask-prob 0 and 1.2,
# --short-seq-prob 1.5; --untie-embeddings-and-output-weights; --mock-data (alone and with --data-path); and
# pretrain_gpt given --mask-prob.
# Usage: test_bert_errors.sh PRETRAIN_BERT [PYTHON]
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
. "$(dirname "$0")/bert_lib.sh"
gpt="$(dirname "$bin")/pretrain_gpt"
"$(dirname "$bin")/preprocess_data" --input "$fx/corpus.jsonl" --output-prefix "$fx/gpt" --workers 1 \
  --vocab-file "$vocab" --tokenizer-type BertWordPieceLowerCase >/dev/null || bad "preprocess without --split-sentences" "failed"
"$PY" "$here_bert/make_fixture.py" "$fx" --vocab-only no_mask.txt --drop "[MASK]"
"$PY" "$here_bert/make_fixture.py" "$fx" --vocab-only no_cls.txt --drop "[CLS]"
"$PY" "$here_bert/make_fixture.py" "$fx" --vocab-only no_sep.txt --drop "[SEP]"
nlines() { wc -l < "$1" | tr -d ' '; }
tiny+=(--micro-batch-size 4 --save "$tmp/ckpt" --save-interval 1)
refused "GPT-style dataset" "$bin" \
  "error: dataset: $fx/gpt_text_document is not split into sentences: each of its 120 documents holds at most 1 item (120 items in all), as a GPT-style _text_document dataset does. BERT reads sentences: preprocess with --split-sentences" \
  --data-path "$fx/gpt_text_document"
refused "vocab without [MASK]" "$bin" "error: --vocab-file: $fx/no_mask.txt ($(nlines "$fx/no_mask.txt") lines) has no [MASK] token, which Megatron's BERT tokenizer requires" \
  --vocab-file "$fx/no_mask.txt"
refused "vocab without [CLS]" "$bin" "error: --vocab-file: $fx/no_cls.txt ($(nlines "$fx/no_cls.txt") lines) has no [CLS] token" --vocab-file "$fx/no_cls.txt"
refused "vocab without [SEP]" "$bin" "error: --vocab-file: $fx/no_sep.txt ($(nlines "$fx/no_sep.txt") lines) has no [SEP] token" --vocab-file "$fx/no_sep.txt"
refused "--seq-length above --max-position-embeddings" "$bin" "--seq-length 64 is larger than --max-position-embeddings 32" --seq-length 64
refused "--mask-prob 0" "$bin" "error: bad argument value: --mask-prob 0.0: must be in (0, 1)" --mask-prob 0
refused "--mask-prob 1.2" "$bin" "error: bad argument value: --mask-prob 1.2: must be in (0, 1)" --mask-prob 1.2
refused "--short-seq-prob 1.5" "$bin" "error: bad argument value: --short-seq-prob 1.5: must be in [0, 1]" --short-seq-prob 1.5
refused "--untie-embeddings-and-output-weights" "$bin" \
  "--untie-embeddings-and-output-weights: BERT's output layer is tied to the word embeddings" --untie-embeddings-and-output-weights
refused "--mock-data with --data-path" "$bin" "--mock-data and --data-path are mutually exclusive" --mock-data
# --mock-data alone: tiny without --data-path
saved=("${tiny[@]}")
for i in "${!tiny[@]}"; do [ "${tiny[$i]}" = "--data-path" ] && { unset "tiny[$i]" "tiny[$((i + 1))]"; break; }; done
tiny=("${tiny[@]}")
refused "--mock-data" "$bin" "error: unsupported argument: --mock-data: pretrain_bert reads Megatron's BERT samples from sentence-split data (preprocess_data --split-sentences); give --data-path" --mock-data
refused "pretrain_gpt --mask-prob" "$gpt" "error: unsupported argument: --mask-prob is a pretrain_bert and pretrain_t5 flag (Megatron's masked samples); this program trains gpt" \
  --mock-data --mask-prob 0.2
tiny=("${saved[@]}")
# and the fixture itself trains (the refusals are the inputs', not the setup's)
o=$(one --train-iters 1 --eval-iters 0); [ "$(field "$o" "sop loss" | wc -w)" = 1 ] && [ -d "$tmp/ckpt/global_step1" ] \
  && ok "the good inputs train and save" || bad "good inputs" "$(grep -m2 error <<<"$o")"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
