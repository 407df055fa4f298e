#!/usr/bin/env bash
# The learning-rate range test walkthrough of DeepSpeed's tutorial (docs/lr_range_test.md) on the demo
# corpus: the same small GPT trained three ways with a DeepSpeed config: a fixed learning rate, and two
# LRRangeTest schedules from the same minimum that grow slowly (step_rate 5) and fast (step_rate 50).
# The csv_monitor files give loss and lr per step; scripts/plot_lr_range_test.py draws the figure.
# Usage: scripts/lr_range_test.sh [OUTDIR] [ITERS]   (needs scripts/main_job.sh's data; ~5 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-/tmp/zt_lr_range_test}" ITERS="${2:-300}"
CACHE="${ZT_DATA_CACHE:-$HOME/.cache/zerotron}"
PREFIX="$CACHE/brown/brown_text_document"
[ -f "$PREFIX.idx" ] || { echo "error: lr_range_test: $PREFIX.idx is missing: run scripts/main_job.sh first" >&2; exit 1; }
bash scripts/build.sh >/dev/null
mkdir -p "$OUT"
run() { # name, scheduler json ("" for none)
  local name=$1 sched=$2
  cat > "$OUT/$name.json" <<JSON
{
  "train_batch_size": 8, "train_micro_batch_size_per_gpu": 8, "gradient_clipping": 1.0, "steps_per_print": 50,
  "optimizer": {"type": "AdamW", "params": {"lr": 2e-4, "betas": [0.9, 0.95], "weight_decay": 0.01}},
  ${sched}
  "csv_monitor": {"enabled": true, "output_path": "$OUT", "job_name": "$name"}
}
JSON
  rm -rf "${OUT:?}/$name"
  ./build/bin/pretrain_gpt --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 128 --max-position-embeddings 128 --micro-batch-size 8 --lr 2e-4 \
    --lr-decay-style constant --train-iters "$ITERS" --log-interval 50 --eval-iters 0 \
    --data-path "$PREFIX" --split 900,50,50 --vocab-file "$CACHE/gpt2/gpt2-vocab.json" \
    --merge-file "$CACHE/gpt2/gpt2-merges.txt" --deepspeed --deepspeed_config "$OUT/$name.json" \
    > "$OUT/$name.log" 2>&1 || echo "note: run $name stopped early: $(tail -1 "$OUT/$name.log")"
  echo "$name: $(grep -c '' "$OUT/$name/Train_Samples_train_loss.csv") loss rows"
}
run fixed ''
run lrrt_slow '"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_min_lr": 2e-4, "lr_range_test_step_size": 20, "lr_range_test_step_rate": 5, "lr_range_test_staircase": false}},'
run lrrt_fast '"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_min_lr": 2e-4, "lr_range_test_step_size": 20, "lr_range_test_step_rate": 50, "lr_range_test_staircase": false}},'
echo "csv files under $OUT/{fixed,lrrt_slow,lrrt_fast}; plot: /usr/bin/python3 scripts/plot_lr_range_test.py $OUT docs/images/lr_range_test.png"
