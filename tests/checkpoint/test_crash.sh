#!/usr/bin/env bash
# Crash safety (docs/checkpoints.md): a save killed (SIGKILL, via the ZT_CKPT_TEST_KILL_AT test hook) at every
# one of its write phases leaves the previous checkpoint loadable, and resuming from what is there ends in
# exactly the checkpoint of an uninterrupted run; corrupted, truncated, unlisted or unlisted-manifest files are
# refused with their names before anything is loaded; the per-dataset crc32c catches a consistent-looking file
# whose data changed; deflate-compressed checkpoints (ZT_CKPT_DEFLATE) read back the same.
# Usage: test_crash.sh PRETRAIN_GPT PYTHON
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; py="${2:-/usr/bin/python3}"
here="$(cd "$(dirname "$0")" && pwd)"
"$py" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $py"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 1
      --eval-interval 4 --eval-iters 1 --train-iters 8 --save-interval 4)

"$bin" "${tiny[@]}" --save REF > ref.log 2>&1 || { echo "reference run failed"; tail -3 ref.log; exit 1; }
phases=$(ZT_CKPT_TEST_TRACE=1 "$bin" "${tiny[@]}" --save T 2>&1 | grep -c "^ckpt phase")
per_save=$((phases / 2))
[ "$per_save" -ge 10 ] && ok "$per_save write phases per save" || bad "phase count" "$phases"

# kill at every phase of the second save (and a few of the first), then resume from what is on disk
killed_ok=0 killed_bad=""
for k in 2 $((per_save - 1)) $(seq $((per_save + 1)) $((2 * per_save))); do
  rm -rf K
  ZT_CKPT_TEST_KILL_AT=$k "$bin" "${tiny[@]}" --save K > kill.log 2>&1
  rc=$?
  latest=$(cat K/latest 2>/dev/null)
  if [ $rc -ne 137 ] || ! grep -q "ZT_CKPT_TEST_KILL_AT=$k: killing" kill.log; then
    killed_bad="$killed_bad k=$k(rc=$rc)"; continue
  fi
  out=$("$bin" "${tiny[@]}" --save K --load K 2>&1)
  if [ $? -ne 0 ]; then killed_bad="$killed_bad k=$k(resume failed: $(tail -1 <<<"$out"))"; continue; fi
  if [ -n "$latest" ] && ! grep -qE "successfully loaded checkpoint from K at iteration ${latest#global_step}$" <<<"$out"; then
    killed_bad="$killed_bad k=$k(latest $latest not loaded)"; continue
  fi
  cmp=$("$py" "$here/h5_oracle.py" same REF/global_step8 K/global_step8 2>&1) || { killed_bad="$killed_bad k=$k($cmp)"; continue; }
  [ -z "$(ls -A K | grep '^\.global')" ] || { killed_bad="$killed_bad k=$k(temporary left: $(ls -A K))"; continue; }
  killed_ok=$((killed_ok + 1))
done
[ -z "$killed_bad" ] && ok "killed at $killed_ok write phases: previous checkpoint loadable, resumed run bitwise equal to the uninterrupted one" ||
  bad "kill points" "$killed_bad"

# SIGKILL from outside at random moments of a run that saves every iteration: whatever latest names loads, and
# the resumed run ends with the uninterrupted run's checkpoint
rnd=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
     --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 100
     --eval-interval 1000 --eval-iters 0 --train-iters 30 --save-interval 1)
"$bin" "${rnd[@]}" --save RREF > rref.log 2>&1
random_bad=""
for trial in 1 2 3 4 5; do
  rm -rf R
  "$bin" "${rnd[@]}" --save R > r.log 2>&1 &
  pid=$!
  sleep "0.$(( (RANDOM % 9) + 1 ))$(( RANDOM % 10 ))"
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  at=$(cat R/latest 2>/dev/null || echo none)
  out=$("$bin" "${rnd[@]}" --save R --load R 2>&1) || { random_bad="$random_bad trial $trial (latest $at): $(grep error <<<"$out")"; continue; }
  cmp=$("$py" "$here/h5_oracle.py" same RREF/global_step30 R/global_step30 2>&1) || random_bad="$random_bad trial $trial (latest $at): $cmp"
  echo "  random kill $trial: latest was $at"
done
[ -z "$random_bad" ] && ok "SIGKILL at 5 random moments of a run saving every iteration: resumed runs end bitwise equal" ||
  bad "random kills" "$random_bad"

# corruption is refused with the file's name, before anything is loaded
corrupt_case() { # NAME EXPECTED-REGEX (after preparing C/)
  out=$("$bin" "${tiny[@]}" --train-iters 12 --lr-decay-iters 8 --load C 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -qE "$2" <<<"$out" && ! grep -qE "^ iteration |successfully loaded" <<<"$out"; then ok "$1"; else bad "$1" "rc=$rc $(grep error <<<"$out")"; fi
}
fresh() { rm -rf C; cp -r REF C; }
fresh; f=C/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5
printf '\x5a' | dd of=$f bs=1 seek=$(( $(stat -c %s $f) / 2 )) conv=notrunc 2>/dev/null
corrupt_case "a flipped byte is refused" "error: checkpoint: C/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5: crc32c [0-9a-f]{8}, the manifest records [0-9a-f]{8}: the file is corrupted; refusing to load it"
fresh; f=C/global_step8/mp_rank_00_model_states.h5; n=$(stat -c %s $f); truncate -s $((n - 1000)) $f
corrupt_case "a truncated file is refused" "error: checkpoint: C/global_step8/mp_rank_00_model_states.h5: $((n - 1000)) bytes, the manifest records $n: the file is truncated"
fresh; rm C/global_step8/zt_manifest.txt
corrupt_case "a tag without its manifest is refused" "error: checkpoint: C/global_step8: no manifest \(zt_manifest.txt\): the checkpoint is incomplete"
rm -rf C; mkdir -p C/global_step8; printf global_step8 > C/latest; : > C/global_step8/mp_rank_00_model_states.pt
corrupt_case "a DeepSpeed .pt checkpoint is named as such" "error: checkpoint: C/global_step8 holds PyTorch .pt files: a Megatron/DeepSpeed checkpoint, which zerotron cannot read"
fresh; cp C/global_step8/mp_rank_00_model_states.h5 C/global_step8/mp_rank_01_model_states.h5
corrupt_case "an unlisted file is refused" "error: checkpoint: C/global_step8/mp_rank_01_model_states.h5 is not in the manifest"
fresh; rm C/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5
corrupt_case "a missing file is refused" "error: checkpoint: C/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5: missing \(listed in"
# a changed value with a matching manifest (rewritten): the dataset's own crc32c refuses it
fresh
"$py" - <<'PY'
import h5py, numpy as np, os
p = "C/global_step8/mp_rank_00_model_states.h5"
with h5py.File(p, "r+") as f:
    d = f["module/language_model.encoder.final_layernorm.bias"]
    x = d[()]; x[0] += 1.0; d[...] = x
PY
"$py" "$here/manifest.py" C/global_step8
corrupt_case "a changed dataset under a consistent manifest is refused by its crc32c" "error: checkpoint: C/global_step8/mp_rank_00_model_states.h5: dataset language_model.encoder.final_layernorm.bias is corrupted: crc32c"

# deflate compression: same values, smaller files
rm -rf Z; ZT_CKPT_DEFLATE=6 "$bin" "${tiny[@]}" --save Z > z.log 2>&1
cmp=$("$py" "$here/h5_oracle.py" same REF/global_step8 Z/global_step8 2>&1) &&
  "$py" -c "import h5py,sys; sys.exit(0 if h5py.File('Z/global_step8/mp_rank_00_model_states.h5')['module/language_model.embedding.word_embeddings.weight'].compression == 'gzip' else 1)" &&
  ok "ZT_CKPT_DEFLATE=6: gzip datasets, values bitwise equal ($cmp)" || bad "deflate" "$cmp"
out=$("$bin" "${tiny[@]}" --train-iters 9 --lr-decay-iters 8 --load Z 2>&1) && grep -qE "^ iteration +9/ +9 " <<<"$out" &&
  ok "a deflate checkpoint loads" || bad "deflate load" "$(tail -2 <<<"$out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
