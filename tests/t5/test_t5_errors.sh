#!/usr/bin/env bash
# pretrain_t5's refusals (label unit): each bad input stops the run before training with a non-zero exit and a message
# naming the flag or file and the numbers, and leaves no checkpoint (--save) and no samples-mapping cache
# (*_indexmap_*.npy) behind: a GPT-style _text_document dataset (not split into sentences); --decoder-seq-length
# missing, or above --max-position-embeddings; --seq-length above it; fewer --vocab-extra-ids than the masked spans a
# sample can hold (and none); --num-layers with --encoder-num-layers, --seq-length with --encoder-seq-length;
# pipeline stages without a split rank, a split rank outside [1, PP-1] or not dividing the layers, or without stages;
# --untie-embeddings-and-output-weights; --mock-data;
# --bert-no-binary-head; MoE layers; --random-ltd; the ds_config's sparse_attention; pretrain_gpt
# and pretrain_bert given the decoder's flags. The encoder flags' other names train exactly as --num-layers and
# --seq-length do.
# Usage: test_t5_errors.sh PRETRAIN_T5 [PYTHON]
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
. "$(dirname "$0")/t5_lib.sh"
gpt="$(dirname "$bin")/pretrain_gpt" bert="$(dirname "$bin")/pretrain_bert"
"$(dirname "$bin")/preprocess_data" --input "$fx/corpus.jsonl" --output-prefix "$fx/gpt" --workers 1 \
  --vocab-file "$vocab" --tokenizer-type BertWordPieceLowerCase >/dev/null || bad "preprocess without --split-sentences" "failed"
tiny+=(--micro-batch-size 4 --save "$tmp/ckpt" --save-interval 1)
# tiny without one flag and its value
without() { local i; for i in "${!tiny[@]}"; do [ "${tiny[$i]}" = "$1" ] && { unset "tiny[$i]" "tiny[$((i + 1))]"; break; }; done; tiny=("${tiny[@]}"); }
saved=("${tiny[@]}")

refused "GPT-style dataset" "$bin" "error: dataset: $fx/gpt_text_document is not split into sentences" \
  --data-path "$fx/gpt_text_document"
refused "--decoder-seq-length above --max-position-embeddings" "$bin" \
  "error: inconsistent arguments: --decoder-seq-length 64 is larger than --max-position-embeddings 32" --decoder-seq-length 64
refused "--seq-length above --max-position-embeddings" "$bin" "--seq-length 64 is larger than --max-position-embeddings 32" --seq-length 64
refused "too few sentinels" "$bin" "error: inconsistent arguments: --vocab-extra-ids 3: a T5 sample of up to 30 tokens (--encoder-seq-length 32 - 2) can hold up to 4 masked spans (--mask-prob 0.15), each replaced by its own sentinel <extra_id_k>; give --vocab-extra-ids 4 or more" \
  --vocab-extra-ids 3
refused "no sentinels" "$bin" "--vocab-extra-ids 0: a T5 sample of up to 30 tokens" --vocab-extra-ids 0
refused "--num-layers and --encoder-num-layers" "$bin" "error: inconsistent arguments: --num-layers 2 and --encoder-num-layers 2: cannot have both num-layers and encoder-num-layers specified" \
  --encoder-num-layers 2
refused "--seq-length and --encoder-seq-length" "$bin" "--seq-length 32 and --encoder-seq-length 32: cannot have both" \
  --encoder-seq-length 32
# the split rank (pipeline sizes need ranks: mpirun 2 or 4 processes with a tiny command)
if command -v mpirun >/dev/null; then
  mrefused() { # name, np, message, flags... (every rank refuses: the message is matched without the line's start,
               # which another rank's output printed at the same moment may precede)
    local name="$1" np="$2" msg="$3" o rc; shift 3
    o=$(timeout 120 "${mpi[@]}" -np "$np" "$bin" "${tiny[@]}" "$@" 2>&1); rc=$?
    if [ $rc -ne 0 ] && grep -qF -- "$msg" <<<"$o" && ! grep -q "^ iteration " <<<"$o" && [ ! -e "$tmp/ckpt" ]; then
      ok "refused: $name ($msg)"
    else bad "refusal: $name" "rc=$rc want '$msg', got '$(grep -m2 -i error <<<"$o")'"; fi
    rm -rf "$tmp/ckpt" "$fx"/*indexmap*
  }
  mrefused "PP=2 without a split rank" 2 "missing argument: --pipeline-model-parallel-split-rank is required with --pipeline-model-parallel-size 2" \
    --pipeline-model-parallel-size 2
  mrefused "split rank = PP" 2 "--pipeline-model-parallel-split-rank 2: split rank needs to be less than pipeline model parallel size (2)" \
    --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 2
  mrefused "split rank 0" 2 "--pipeline-model-parallel-split-rank 0: the encoder needs at least one stage (a split rank in [1, 1])" \
    --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 0
  mrefused "encoder layers over the encoder stages" 4 "encoder_num_layers (2) must be divisible by number of ranks given to encoder (3)" \
    --pipeline-model-parallel-size 4 --pipeline-model-parallel-split-rank 3
  mrefused "decoder layers over the decoder stages" 4 "decoder_num_layers (2) must be divisible by number of ranks given to decoder (3)" \
    --pipeline-model-parallel-size 4 --pipeline-model-parallel-split-rank 1
fi
refused "a split rank without stages" "$bin" "--pipeline-model-parallel-split-rank 1 needs --pipeline-model-parallel-size > 1" \
  --pipeline-model-parallel-split-rank 1
refused "--untie-embeddings-and-output-weights" "$bin" \
  "--untie-embeddings-and-output-weights: T5's output layer is tied to the word embeddings" --untie-embeddings-and-output-weights
refused "--bert-no-binary-head" "$bin" "error: unsupported argument: --bert-no-binary-head is a pretrain_bert flag" --bert-no-binary-head
refused "MoE layers" "$bin" "--num-experts 2: MoE layers in t5" --num-experts 2
refused "--random-ltd" "$bin" "error: unsupported argument: --random-ltd: Megatron-DeepSpeed's random-LTD converts GPT and BERT layers only" --random-ltd
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sparse_attention": {"mode": "fixed", "block": 16}}\n' > "$tmp/sparse.json"
refused "sparse_attention" "$bin" "sparse_attention with T5: DeepSpeed's sparse self-attention replaces a BERT or GPT layer's attention" \
  --deepspeed --deepspeed_config "$tmp/sparse.json"
without --decoder-seq-length
refused "no --decoder-seq-length" "$bin" "error: missing argument: --decoder-seq-length is required by pretrain_t5" 
refused "pretrain_bert --pipeline-model-parallel-split-rank" "$bert" "error: unsupported argument: --pipeline-model-parallel-split-rank 1 is a pretrain_t5 flag" \
  --pipeline-model-parallel-split-rank 1
refused "pretrain_bert --decoder-num-layers" "$bert" "error: unsupported argument: --decoder-num-layers is a pretrain_t5 flag (the decoder of Megatron's encoder-decoder); this program trains bert" \
  --decoder-num-layers 2
without --data-path
refused "--mock-data" "$bin" "error: unsupported argument: --mock-data: pretrain_t5 reads Megatron's T5 samples from sentence-split data" --mock-data --decoder-seq-length 16
refused "pretrain_gpt --decoder-seq-length" "$gpt" "error: unsupported argument: --decoder-seq-length is a pretrain_t5 flag" \
  --mock-data --decoder-seq-length 16 --vocab-extra-ids 0
tiny=("${saved[@]}")

# the encoder's other flag names train exactly as --num-layers / --seq-length, and the good inputs save
a=$(one --train-iters 2 --eval-iters 0)
without --num-layers; without --seq-length
b=$(one --train-iters 2 --eval-iters 0 --encoder-num-layers 2 --encoder-seq-length 32)
tiny=("${saved[@]}")
[ "$(field "$a" "lm loss" | wc -w)" = 2 ] && [ "$(field "$a" "lm loss")" = "$(field "$b" "lm loss")" ] \
  && grep -q "encoder_num_layers \.* 2" <<<"$b" && grep -q "encoder_seq_length \.* 32" <<<"$b" \
  && grep -q "num_layers \.* 2" <<<"$b" && [ -d "$tmp/ckpt/global_step2" ] \
  && ok "--encoder-num-layers 2 --encoder-seq-length 32 = --num-layers 2 --seq-length 32 (lm loss $(field "$b" "lm loss")); the good inputs train and save" \
  || bad "encoder flag names" "'$(field "$a" "lm loss")' vs '$(field "$b" "lm loss")' $(grep -m2 error <<<"$a$b")"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
