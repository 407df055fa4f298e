#!/usr/bin/env bash
# --exit-duration-in-mins 1 (label slow: about a minute): the run saves after the iteration that crosses the
# minute, prints Megatron's "[exiting program after <minutes> minutes] datetime: ..." and exits 0, and the
# checkpoint it wrote resumes. Usage: test_exit_duration.sh PRETRAIN_GPT
set -u
bin="$1"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 1000000
      --eval-interval 1000000 --eval-iters 0 --train-iters 100000000)
t0=$(date +%s)
out=$(timeout 600 "$bin" "${tiny[@]}" --save X --exit-duration-in-mins 1 2>&1); rc=$?
t1=$(date +%s)
it=$(cat X/latest_checkpointed_iteration.txt 2>/dev/null)
if [ $rc -eq 0 ] && [ $((t1 - t0)) -ge 60 ] && [ -n "$it" ] && [ "$(cat X/latest)" == "global_step$it" ] &&
   grep -qE "^\[exiting program after 1\.[0-9]+ minutes\] datetime: [0-9-]+ [0-9:]+ $" <<<"$out" &&
   grep -qE "^saving checkpoint at iteration +$it to X$" <<<"$out"; then
  echo "PASS --exit-duration-in-mins 1: saved at iteration $it after $((t1 - t0)) s, exit 0"
else
  echo "FAIL --exit-duration-in-mins: rc=$rc $((t1 - t0)) s latest=$it"; grep -E "exiting|checkpoint|error" <<<"$out"; exit 1
fi
out=$("$bin" "${tiny[@]}" --train-iters $((it + 1)) --override-opt_param-scheduler --load X 2>&1) &&
  grep -qF "successfully loaded checkpoint from X at iteration $it" <<<"$out" && echo "PASS it resumes" ||
  { echo "FAIL resume: $(tail -2 <<<"$out")"; exit 1; }
