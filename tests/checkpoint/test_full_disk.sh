#!/usr/bin/env bash
# A full disk during a save (issue 25 item 4; docs/checkpoints.md): simulated by enospc_shim.so (LD_PRELOAD: writes
# to files under the save directory fail with ENOSPC past a byte budget), at 11 budgets that stop the first or the
# second save in its model file, its optimizer file or at its close. Every run must end with exit status 1 and the
# checkpoint error naming the file (never a signal: HDF5's library shutdown used to crash after the failed close),
# `latest` must still name the previous complete checkpoint, and that checkpoint must load.
# Usage: test_full_disk.sh PRETRAIN_GPT ENOSPC_SHIM
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; shim="$2"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 1
      --eval-interval 4 --eval-iters 1 --train-iters 8 --save-interval 4)
"$bin" "${tiny[@]}" --save REF > ref.log 2>&1 || { echo "reference run failed"; tail -3 ref.log; exit 1; }
one=$(du -sb REF/global_step4 | cut -f1)   # bytes of one checkpoint
bad_sizes=""; n_ok=0; n_second=0
for pct in 5 15 30 50 80 98 105 120 140 160 185; do
  budget=$((one * pct / 100)); rm -rf F
  out=$(ZT_ENOSPC_DIR="$work/F" ZT_ENOSPC_BYTES=$budget LD_PRELOAD="$shim" "$bin" "${tiny[@]}" --save F 2>&1); rc=$?
  latest=$(cat F/latest 2>/dev/null || echo none)
  want=none; [ $pct -gt 100 ] && want=global_step4
  if [ $rc -ne 1 ] || ! grep -qE "^error: checkpoint: F/\.global_step[48]\.tmp/[a-z0-9_]+\.h5: (closing the HDF5 file failed|cannot write|cannot create)" <<<"$out"; then
    bad_sizes="$bad_sizes $pct%(rc=$rc: $(grep -iE 'error|signal|fault' <<<"$out" | head -2 | tr '\n' ' '))"; continue
  fi
  if [ "$latest" != "$want" ]; then bad_sizes="$bad_sizes $pct%(latest $latest, expected $want)"; continue; fi
  if [ $want == global_step4 ]; then
    res=$("$bin" "${tiny[@]}" --load F 2>&1) && grep -q "successfully loaded checkpoint from F at iteration 4$" <<<"$res" ||
      { bad_sizes="$bad_sizes $pct%(previous checkpoint does not load: $(grep error <<<"$res"))"; continue; }
    n_second=$((n_second + 1))
  fi
  n_ok=$((n_ok + 1))
done
[ -z "$bad_sizes" ] && ok "disk full at 11 points of a save ($n_second in the second save): exit 1 with the file named, the previous checkpoint loads" ||
  bad "full disk" "$bad_sizes"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
