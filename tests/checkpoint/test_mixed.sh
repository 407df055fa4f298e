#!/usr/bin/env bash
# Files of different saves mixed in one checkpoint tag (issue 25 item 6; docs/checkpoints.md), each with the
# manifest recomputed so that its whole-file checksums agree: every file records the iteration of its save and
# --load / zero_to_fp32 check it against the tag's other files and the tag's name; a changed fp32 master in an
# optimizer file (read by ranges, one tensor's slice at a time) is caught by the dataset's own crc32c.
# Before these checks, all three loaded and training went on from the mixed state.
# Usage: test_mixed.sh PRETRAIN_GPT ZERO_TO_FP32 PYTHON
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; z2f="$2"; py="${3:-/usr/bin/python3}"
"$py" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $py"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 1
      --eval-interval 4 --eval-iters 1 --train-iters 8 --save-interval 4)
"$bin" "${tiny[@]}" --save REF > ref.log 2>&1 || { echo "reference run failed"; tail -3 ref.log; exit 1; }
remanifest() { "$py" "$(dirname "$0")/manifest.py" C/global_step8; } # crc32c and size of each listed file
refused() { # NAME EXPECTED-REGEX
  out=$(timeout 120 "$bin" "${tiny[@]}" --train-iters 12 --lr-decay-iters 8 --load C 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -qE "$2" <<<"$out" && ! grep -qE "^ iteration |successfully loaded" <<<"$out"; then ok "$1"
  else bad "$1" "rc=$rc $(grep -E 'error|loaded' <<<"$out" | head -2)"; fi
}
fresh() { rm -rf C; cp -r REF C; }
model=mp_rank_00_model_states.h5 optim=zero_pp_rank_0_mp_rank_00_optim_states.h5

fresh; cp REF/global_step4/$model C/global_step8/$model; remanifest
refused "a step-4 model file in global_step8 is refused" "^error: checkpoint: C/global_step8/$model: saved at iteration 4, in the tag directory of iteration 8"
fresh; cp REF/global_step4/$optim C/global_step8/$optim; remanifest
refused "a step-4 optimizer file in global_step8 is refused" "^error: checkpoint: C/global_step8/$optim: saved at iteration 4, but C/global_step8/$model at iteration 8: files of different saves mixed"
out=$(timeout 60 "$z2f" C O1 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "files of different saves mixed" <<<"$out" && ok "zero_to_fp32 refuses the mixed tag" || bad "zero_to_fp32 mixed" "rc=$rc $(tail -1 <<<"$out")"
# the same tag renamed (a copy kept under another name) still loads: only global_step<N> names are checked
rm -rf T; mkdir T; cp -r REF/global_step8 T/keep; printf keep > T/latest
out=$(timeout 120 "$bin" "${tiny[@]}" --train-iters 9 --lr-decay-iters 8 --load T 2>&1) && grep -q "successfully loaded checkpoint from T at iteration 8" <<<"$out" &&
  ok "a tag under another name loads" || bad "renamed tag" "$(grep error <<<"$out")"

# one fp32 master value changed, manifest recomputed
fresh
"$py" - <<'PY'
import h5py
with h5py.File("C/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5", "r+") as f:
    d = f["state/fp32"]
    x = d[()]; x[len(x) // 2] = -x[len(x) // 2] + 0.5; d[...] = x
PY
remanifest
refused "a changed fp32 master under a recomputed manifest is refused by the dataset's crc32c" "^error: checkpoint: C/global_step8/$optim: dataset fp32 is corrupted: crc32c [0-9a-f]{8}, recorded [0-9a-f]{8}$"
out=$(timeout 60 "$z2f" C O2 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "dataset fp32 is corrupted" <<<"$out" && ok "zero_to_fp32 refuses the changed master" || bad "zero_to_fp32 master" "rc=$rc $(tail -1 <<<"$out")"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
