#!/usr/bin/env bash
# The tracker files and checkpoint discovery (issue 25 items 1 and 3; docs/checkpoints.md):
#  - a `latest` that is present but unusable (empty, whitespace only, starting with a NUL byte, a directory, naming
#    a missing tag) or a latest_checkpointed_iteration.txt that is not an iteration is an error naming the file:
#    exit 1 before training, no new checkpoint written and the existing ones byte-identical (it used to start
#    from random and overwrite global_step4..8);
#  - only an absent --load directory or an absent `latest` starts a new run, with Megatron's warning;
#  - under mpirun, ranks that find different checkpoints (rank 1 given a missing one, or an empty `latest`) end
#    the job at once with an error naming the rank and path (every rank finds it; the first to MPI_Abort is
#    printed), instead of a silent deadlock.
# Usage: test_tracker.sh PRETRAIN_GPT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 1
      --eval-interval 4 --eval-iters 1 --train-iters 8 --save-interval 4)
"$bin" "${tiny[@]}" --save REF > ref.log 2>&1 || { echo "reference run failed"; tail -3 ref.log; exit 1; }
sums() { (cd "$1" && find . -type f | sort | xargs md5sum); }

refused() { # NAME EXPECTED-REGEX (after preparing L/ from REF/)
  before=$(sums L)
  out=$(timeout 120 "$bin" "${tiny[@]}" --train-iters 12 --save L --load L 2>&1); rc=$?
  after=$(sums L)
  if [ $rc -eq 1 ] && grep -qE "$2" <<<"$out" && ! grep -qE "^ iteration |saving checkpoint|start from random$" <<<"$out" &&
     [ "$before" == "$after" ]; then ok "$1"
  else bad "$1" "rc=$rc $(grep -E 'error|random' <<<"$out" | head -2) $( [ "$before" == "$after" ] || echo '(files changed)')"; fi
}
tail_msg="; refusing to start from random over the checkpoints there"
fresh() { rm -rf L; cp -r REF L; }
fresh; : > L/latest
refused "an empty latest is refused" "^error: checkpoint: L/latest is empty$tail_msg"
fresh; printf ' \n\n' > L/latest
refused "a whitespace-only latest is refused" "^error: checkpoint: L/latest is empty \(only whitespace\)$tail_msg"
fresh; printf '\0global_step8\n' > L/latest
refused "a latest starting with a NUL byte is refused" "^error: checkpoint: L/latest holds the control byte 0x00 at offset 0"
fresh; rm L/latest; mkdir L/latest
refused "a directory named latest is refused" "^error: checkpoint: L/latest is a directory, not a tracker file naming a checkpoint$tail_msg"
fresh; printf 'global_step12' > L/latest
refused "a latest naming a missing tag is refused" "^error: checkpoint: L/global_step12: the checkpoint directory of tag global_step12 is missing \(named by latest\)$"
fresh; printf 'abc\n' > L/latest_checkpointed_iteration.txt
refused "an invalid latest_checkpointed_iteration.txt is refused" "^error: checkpoint: L/latest_checkpointed_iteration.txt: invalid metadata file: \"abc\" is not an iteration number \\(0 or more\\)"
fresh; printf -- '-1\n' > L/latest_checkpointed_iteration.txt
refused "a negative latest_checkpointed_iteration.txt is refused" "^error: checkpoint: L/latest_checkpointed_iteration.txt: invalid metadata file: \"-1\" is not an iteration number"
fresh; : > L/latest_checkpointed_iteration.txt
refused "an empty latest_checkpointed_iteration.txt is refused" "^error: checkpoint: L/latest_checkpointed_iteration.txt is empty"
# the tools read the same trackers
fresh; : > L/latest
out=$(timeout 60 "$bin" "${tiny[@]}" --use-checkpoint-args --load L 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qE "^error: checkpoint: L/latest is empty" <<<"$out" && ok "--use-checkpoint-args refuses the empty latest" ||
  bad "--use-checkpoint-args" "rc=$rc $(grep error <<<"$out")"

# what starts a new run: no directory, or a directory without `latest`
rm -rf N; out=$(timeout 120 "$bin" "${tiny[@]}" --load N 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^WARNING: could not find the metadata file N/latest" <<<"$out" && grep -q "will start from random" <<<"$out" &&
  ok "an absent --load directory starts from random with Megatron's warning" || bad "absent directory" "rc=$rc $(tail -1 <<<"$out")"
fresh; rm L/latest; out=$(timeout 120 "$bin" "${tiny[@]}" --load L 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^WARNING: could not find the metadata file L/latest" <<<"$out" &&
  ok "an absent latest starts from random with Megatron's warning" || bad "absent latest" "rc=$rc $(tail -1 <<<"$out")"

# under mpirun every rank must find the same checkpoint (per-rank --load paths through an MPMD launch)
if command -v mpirun >/dev/null; then
  mp=(timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
  dp=("${tiny[@]}" --global-batch-size 8)
  "${mp[@]}" -np 2 "$bin" "${dp[@]}" --save M > m.log 2>&1 || bad "DP=2 save" "$(tail -2 m.log)"
  mpmd() { # NAME EXPECTED-REGEX RANK1-LOAD
    t0=$(date +%s)
    out=$("${mp[@]}" -np 1 "$bin" "${dp[@]}" --load M --train-iters 12 : -np 1 "$bin" "${dp[@]}" --load "$3" --train-iters 12 2>&1); rc=$?
    t=$(( $(date +%s) - t0 ))
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qE "error: (\[rank [01]\] )?checkpoint: $2" <<<"$out" &&
       ! grep -q "^ iteration " <<<"$out"; then ok "$1 (the job ended in ${t} s)"
    else bad "$1" "rc=$rc after ${t} s: $(grep -E 'error' <<<"$out" | head -2)"; fi
  }
  mpmd "rank 1 given a missing checkpoint: error on every rank" "the ranks disagree on the checkpoint to load: rank 0 finds checkpoint global_step8 in --load M, rank 1 finds no checkpoint in --load NOPE" NOPE
  rm -rf E; cp -r M E; : > E/latest
  mpmd "rank 1's latest empty: error on every rank" "rank 1, --load E: E/latest is empty$tail_msg" E
  rm -rf E; cp -r M E; printf global_step4 > E/latest
  mpmd "rank 1 finding another tag: error on every rank" "the ranks disagree on the checkpoint to load: rank 0 finds checkpoint global_step8 in --load M, rank 1 finds checkpoint global_step4 in --load E" E
else
  echo "SKIP: mpirun not found: the rank-agreement checks did not run"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
