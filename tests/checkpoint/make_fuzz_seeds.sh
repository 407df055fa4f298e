#!/usr/bin/env bash
# Makes the seed corpus of the checkpoint fuzzer (tests/fuzz/fuzz_checkpoint.c, input format there) from real
# checkpoints of a tiny GPT (1 layer, hidden 8, vocabulary 16: a few KiB per file): Adam with and without the
# optimizer file, SGD, fp16 and bf16 weights, deflate, and tracker variants.
# Usage: make_fuzz_seeds.sh PRETRAIN_GPT OUT_DIR
set -eu
bin="$1"; out="$2"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
tiny=(--num-layers 1 --hidden-size 8 --num-attention-heads 2 --seq-length 4 --max-position-embeddings 4
      --micro-batch-size 1 --global-batch-size 1 --mock-data --vocab-size 16 --make-vocab-size-divisible-by 1
      --lr 1e-3 --train-iters 1 --eval-iters 0 --eval-interval 1000 --log-interval 100)
sep() { printf 'ZTFZSEC\001'; }
seed() { # NAME DIR [ITERATION-TEXT]
  local d="$1" tag; tag=$(cat "$2/latest")
  { cat "$2/latest" | sed "s/$tag/t/"; sep; cat "$2/$tag/mp_rank_00_model_states.h5"; sep
    cat "$2/$tag"/*optim_states.h5 2>/dev/null || true
    if [ $# -gt 2 ]; then sep; printf '%s' "$3"; fi; } > "$out/$d"
}
cd "$work"
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --save A > /dev/null
seed adam A
seed adam_iteration_txt A "1"
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --save N --no-save-optim > /dev/null
seed no_optim N
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --optimizer sgd --save S > /dev/null
seed sgd S
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --fp16 --save H > /dev/null
seed fp16 H
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --bf16 --save B > /dev/null
seed bf16 B
OMP_NUM_THREADS=1 ZT_CKPT_DEFLATE=6 "$bin" "${tiny[@]}" --save Z > /dev/null
seed deflate Z
ls -l "$out"
