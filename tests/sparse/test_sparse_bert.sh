#!/usr/bin/env bash
# pretrain_bert with the ds_config's sparse_attention block (issue 20; label unit): bidirectional layouts with
# BERT's padding mask inside the listed tiles. bslongformer and fixed (horizontal global attention) train the same
# lm and sop losses, validation values and grad norms through the block-sparse kernels as through the dense kernels
# with the layout as a mask (ZT_SPARSE_ATTENTION=mask), 1e-5, and differ from dense attention; the per-head fixed
# layout under --tensor-model-parallel-size 2 and --pipeline-model-parallel-size 2 = one process.
# Usage: test_sparse_bert.sh PRETRAIN_BERT [PYTHON]
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
. "$(dirname "$0")/../bert/bert_lib.sh"
tiny+=(--micro-batch-size 4)
ds() { printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4%s}\n' "$2" > "$tmp/$1.json"; }
ds plain ""
ref=$(one --deepspeed --deepspeed_config "$tmp/plain.json")
for mode in bslongformer fixed; do
  case $mode in
    bslongformer) blk='{"mode": "bslongformer", "block": 4, "num_sliding_window_blocks": 3, "global_block_indices": [0, 6], "global_block_end_indices": [1, 8]}' ;;
    fixed) blk='{"mode": "fixed", "block": 4, "different_layout_per_head": true, "num_local_blocks": 2, "num_global_blocks": 1, "num_different_global_patterns": 2, "horizontal_global_attention": true}' ;;
  esac
  ds "$mode" ", \"sparse_attention\": $blk"
  s=$(one --deepspeed --deepspeed_config "$tmp/$mode.json"); rc=$?
  m=$(ZT_SPARSE_ATTENTION=mask one --deepspeed --deepspeed_config "$tmp/$mode.json")
  same "BERT $mode (block-sparse kernels vs ZT_SPARSE_ATTENTION=mask)" "$m" "$s" "$rc"
  if ! close "$(field "$ref" "lm loss")" "$(field "$s" "lm loss")" 1e-4; then ok "BERT $mode differs from dense attention"
  else bad "BERT $mode differs from dense attention" "same lm losses: the layout had no effect"; fi
done
# tensor parallelism 2 (each rank its two heads' layouts) and pipeline parallelism 2 with the per-head fixed layout
if command -v mpirun >/dev/null; then
  s=$(one --deepspeed --deepspeed_config "$tmp/fixed.json")
  for layout in "--tensor-model-parallel-size 2" "--pipeline-model-parallel-size 2"; do
    p=$(run 2 $layout --deepspeed --deepspeed_config "$tmp/fixed.json"); rc=$?
    same "BERT fixed per head, $layout" "$s" "$p" "$rc"
  done
else
  echo "SKIP BERT sparse attention under TP/PP: mpirun not found"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
