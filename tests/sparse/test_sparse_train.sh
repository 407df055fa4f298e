#!/usr/bin/env bash
# pretrain_gpt with the ds_config's sparse_attention block (issue 20), one process unless said (label unit; the
# tensor-parallel case SKIPs without mpirun):
#   1. fixed (unidirectional, block 8 of a 64-token sequence, 2 local blocks): the block-sparse kernels train the same
#      losses and grad norms as the dense kernels with the layout as a mask (ZT_SPARSE_ATTENTION=mask), 1e-5;
#   2. the layout has an effect: the fixed run's losses differ from dense attention's;
#   3. mode dense (every tile listed) equals a run without the block (1e-5);
#   4. bigbird and variable with per-head layouts and random blocks (seeded: two runs bitwise equal), sparse = mask;
#   5. tensor parallelism 2 with per-head layouts (each rank reads its heads' layouts), pipeline parallelism 2,
#      ZeRO-2 and ZeRO-3 at data-parallel size 2 = one process (1e-5); --checkpoint-activations = without; a one-process
#      bigbird checkpoint (random blocks per head) continued by TP=2 = the uninterrupted run; --bf16 sparse = mask;
#   6. a checkpoint at 6, resumed to 12, continues bit for bit;
#   7. errors before any work: --seq-length not a multiple of block (DeepSpeed's message), fixed's divisibility rule,
#      a malformed list; a key the mode does not read is warned about.
# Usage: test_sparse_train.sh PRETRAIN_GPT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 4 --global-batch-size 4 --mock-data --vocab-size 128 --make-vocab-size-divisible-by 64
      --lr 3e-3 --train-iters 12
      --log-interval 1 --eval-iters 0 --seed 1234)
ds() { # ds NAME SPARSE_JSON: a ds_config with that sparse_attention block ("" = none)
  local extra=""
  [ -n "$2" ] && extra=", \"sparse_attention\": $2"
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4%s}\n' "$extra" > "$tmp/$1.json"
}
train() { timeout 300 "$bin" "${tiny[@]}" "$@" 2>&1; }
losses() { field "$1" "lm loss"; }
same() { # same NAME A B TOL: equal losses and grad norms (TOL relative; grad norms also one printed unit)
  if [ "$(losses "$2" | wc -w)" -eq 12 ] && close "$(losses "$2")" "$(losses "$3")" "$4" \
     && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 2e-3; then
    ok "$1 (last lm loss $(losses "$3" | awk '{print $NF}'))"
  else
    bad "$1" "$(losses "$2") vs $(losses "$3"); $(grep -m2 error <<<"$2$3")"
  fi
}

# 1-2. fixed, unidirectional
fixed='{"mode": "fixed", "block": 8, "num_local_blocks": 2, "num_global_blocks": 1, "attention": "unidirectional"}'
ds fixed "$fixed"
sparse=$(train --deepspeed --deepspeed_config "$tmp/fixed.json")
masked=$(ZT_SPARSE_ATTENTION=mask train --deepspeed --deepspeed_config "$tmp/fixed.json")
same "fixed: block-sparse kernels = dense kernels with the layout as a mask" "$masked" "$sparse" 1e-5
grep -q "^> sparse attention (.*fixed.json): " <<<"$sparse" && ok "the layout is logged: $(grep -m1 "^> sparse attention" <<<"$sparse" | cut -c1-160)" \
  || bad "the layout is logged" "$(grep -m3 -i sparse <<<"$sparse")"
ds plain ""
dense=$(train --deepspeed --deepspeed_config "$tmp/plain.json")
if ! close "$(losses "$dense")" "$(losses "$sparse")" 1e-4; then ok "fixed differs from dense attention"
else bad "fixed differs from dense attention" "same losses: the layout had no effect"; fi

# 3. dense mode = no block
ds densemode '{"mode": "dense", "block": 16}'
dm=$(train --deepspeed --deepspeed_config "$tmp/densemode.json")
same "mode dense = no sparse_attention block" "$dense" "$dm" 1e-5

# 4. bigbird and variable, per head, with random blocks
ds bigbird '{"mode": "bigbird", "block": 8, "different_layout_per_head": true, "num_random_blocks": 2, "num_sliding_window_blocks": 3, "num_global_blocks": 1}'
bb=$(train --deepspeed --deepspeed_config "$tmp/bigbird.json")
bb2=$(train --deepspeed --deepspeed_config "$tmp/bigbird.json")
bbm=$(ZT_SPARSE_ATTENTION=mask train --deepspeed --deepspeed_config "$tmp/bigbird.json")
same "bigbird per head: sparse = mask" "$bbm" "$bb" 1e-5
[ -n "$(losses "$bb")" ] && [ "$(losses "$bb")" = "$(losses "$bb2")" ] && ok "bigbird: two runs with the same --seed are bitwise equal" \
  || bad "bigbird: two runs with the same --seed are bitwise equal" "$(losses "$bb") vs $(losses "$bb2")"
ds variable '{"mode": "variable", "block": 4, "different_layout_per_head": true, "num_random_blocks": 1, "local_window_blocks": [2, 4], "global_block_indices": [0, 9], "global_block_end_indices": [2, 10], "attention": "unidirectional"}'
va=$(train --deepspeed --deepspeed_config "$tmp/variable.json")
vam=$(ZT_SPARSE_ATTENTION=mask train --deepspeed --deepspeed_config "$tmp/variable.json")
same "variable per head (block 4, windows [2, 4], global ranges): sparse = mask" "$vam" "$va" 1e-5

# 5. tensor parallelism with per-head layouts
if command -v mpirun >/dev/null; then
  ds fixedph '{"mode": "fixed", "block": 8, "different_layout_per_head": true, "num_local_blocks": 4, "num_global_blocks": 1, "num_different_global_patterns": 4, "attention": "unidirectional"}'
  one=$(train --deepspeed --deepspeed_config "$tmp/fixedph.json")
  tp=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --tensor-model-parallel-size 2 --deepspeed \
       --deepspeed_config "$tmp/fixedph.json" 2>&1)
  same "fixed with 4 global patterns per head, --tensor-model-parallel-size 2 = one process" "$one" "$tp" 1e-5
  pp=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --pipeline-model-parallel-size 2 --deepspeed \
       --deepspeed_config "$tmp/fixedph.json" 2>&1)
  same "the same, --pipeline-model-parallel-size 2 = one process" "$one" "$pp" 1e-5
  rc=$(train --deepspeed --deepspeed_config "$tmp/fixedph.json" --checkpoint-activations)
  same "the same, --checkpoint-activations = without" "$one" "$rc" 1e-6
  blk='"sparse_attention": {"mode": "fixed", "block": 8, "different_layout_per_head": true, "num_local_blocks": 4, "num_global_blocks": 1, "num_different_global_patterns": 4, "attention": "unidirectional"}'
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, %s}\n' "$blk" > "$tmp/acc.json"
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}, %s}\n' "$blk" > "$tmp/z2.json"
  acc=$(train --micro-batch-size 2 --deepspeed --deepspeed_config "$tmp/acc.json")
  z2=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 2 --deepspeed --deepspeed_config \
       "$tmp/z2.json" 2>&1)
  same "the same, ZeRO-2 at data-parallel size 2 = one process accumulating 2 micro batches" "$acc" "$z2" 1e-5
  printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}, %s}\n' "$blk" > "$tmp/z3.json"
  z3=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 2 --deepspeed --deepspeed_config \
       "$tmp/z3.json" 2>&1)
  same "the same, ZeRO-3 at data-parallel size 2 = one process accumulating 2 micro batches" "$acc" "$z3" 1e-5
  # a checkpoint of one process (bigbird: random blocks, a layout per head) continued by TP=2, each rank its heads
  mkdir -p "$tmp/ckr"
  ds bigbird '{"mode": "bigbird", "block": 8, "different_layout_per_head": true, "num_random_blocks": 2, "num_sliding_window_blocks": 3, "num_global_blocks": 1}'
  bbfull=$(train --deepspeed --deepspeed_config "$tmp/bigbird.json")
  train --deepspeed --deepspeed_config "$tmp/bigbird.json" --save "$tmp/ckr" --save-interval 6 --exit-interval 6 >/dev/null
  bbtp=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --tensor-model-parallel-size 2 --deepspeed \
         --deepspeed_config "$tmp/bigbird.json" --load "$tmp/ckr" 2>&1)
  a=$(losses "$bbfull" | cut -d' ' -f7-12) b=$(losses "$bbtp")
  if [ "$(echo $b | wc -w)" -eq 6 ] && close "$a" "$b" 1e-5; then
    ok "bigbird per head: one process's checkpoint at 6 continued by --tensor-model-parallel-size 2 = uninterrupted"
  else bad "bigbird per head: checkpoint continued by TP=2" "uninterrupted '$a' TP=2 '$b'; $(grep -m2 error <<<"$bbtp")"; fi
else
  echo "SKIP tensor parallelism: mpirun not found"
fi

# 5b. bf16 storage (half values in fp32 slots on the CPU): the block-sparse kernels = the masked dense ones
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": true}, "sparse_attention": %s}\n' \
  "$fixed" > "$tmp/fixedbf.json"
bf=$(train --bf16 --deepspeed --deepspeed_config "$tmp/fixedbf.json")
bfm=$(ZT_SPARSE_ATTENTION=mask train --bf16 --deepspeed --deepspeed_config "$tmp/fixedbf.json")
same "fixed, --bf16: block-sparse kernels = dense kernels with the layout as a mask" "$bfm" "$bf" 1e-5

# 6. resume bit for bit
mkdir -p "$tmp/ck"
full=$(train --deepspeed --deepspeed_config "$tmp/bigbird.json")
train --deepspeed --deepspeed_config "$tmp/bigbird.json" --save "$tmp/ck" --save-interval 6 --exit-interval 6 >/dev/null
res=$(train --deepspeed --deepspeed_config "$tmp/bigbird.json" --load "$tmp/ck" --save "$tmp/ck" --save-interval 100)
a=$(losses "$full" | cut -d' ' -f7-12) b=$(losses "$res")
[ -n "$b" ] && [ "$(echo $a)" = "$(echo $b)" ] && ok "bigbird: a checkpoint at 6 resumed to 12 is bitwise equal" \
  || bad "bigbird: resume bitwise" "uninterrupted '$a' resumed '$b'"

# 7. errors before any work
expect_error() { # NAME JSON MESSAGE [FLAGS...]
  ds err "$2"
  local out rc
  out=$(train --deepspeed --deepspeed_config "$tmp/err.json" "${@:4}"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$3" <<<"$out" && ! grep -q "^ iteration\|building GPT model" <<<"$out"; then ok "$1"
  else bad "$1" "rc=$rc; want: $3; got: $(grep -m2 error <<<"$out")"; fi
}
expect_error "sequence not a multiple of block refused" '{"mode": "fixed", "block": 24}' \
  "Sequence Length, 64, needs to be dividable by Block size 24!"
expect_error "fixed: local blocks not a multiple of global blocks refused" \
  '{"mode": "fixed", "block": 8, "num_local_blocks": 4, "num_global_blocks": 3}' \
  "Number of blocks in a local window, 4, must be dividable by number of global blocks, 3!"
expect_error "a list entry that is not an integer refused" '{"mode": "variable", "block": 8, "local_window_blocks": [4, "x"]}' \
  'sparse_attention.local_window_blocks[1] must be an integer, got "x"'
ds unread '{"mode": "dense", "block": 16, "num_local_blocks": 8}'
o=$(train --deepspeed --deepspeed_config "$tmp/unread.json" --train-iters 1)
grep -q "warning: ds_config: .*unread.json: sparse_attention.num_local_blocks is not read in mode \"dense\"" <<<"$o" \
  && ok "a key the mode does not read is warned about" || bad "a key the mode does not read is warned about" "$(grep -m2 -i "warn\|error" <<<"$o")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
