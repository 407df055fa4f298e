#!/usr/bin/env bash
# The main job: install, build, then train a small GPT on the CPU with Megatron's flags.
# Until the data pipeline lands (.bin/.idx datasets, tokenizers), it trains on --mock-data, a patterned
# synthetic token stream whose loss can fall far below its unigram entropy (ln 2047 = 7.62).
# Extra arguments are passed to pretrain_gpt (e.g. --train-iters 50).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
exec ./build/bin/pretrain_gpt \
  --num-layers 4 --hidden-size 256 --num-attention-heads 8 --ffn-hidden-size 1024 \
  --seq-length 128 --max-position-embeddings 128 \
  --micro-batch-size 8 --global-batch-size 16 \
  --mock-data --vocab-size 2048 \
  --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 20 \
  --weight-decay 0.1 --adam-beta2 0.95 --clip-grad 1.0 \
  --train-iters 300 --log-interval 20 --eval-interval 100 --eval-iters 5 "$@"
