#!/usr/bin/env bash
# The ds_config's checkpoint.tag_validation (DeepSpeed's _checkpoint_tag_validation at each save): the check itself
# under mpirun (one tag: consistent; a rank-dependent tag: not, on every rank), and Warn, Ignore and Fail accepted by
# pretrain_gpt --deepspeed, which saves and resumes under each; another value refused naming the choices.
# Usage: test_tag_validation.sh PRETRAIN_GPT TAG_CHECK
set -u
bin="$1" check="$2"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMP_NUM_THREADS=1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2)
if command -v mpirun >/dev/null; then
  out=$("${mpi[@]}" "$check" same 2>&1 | sort)
  [ "$out" = $'rank 0 consistent 1\nrank 1 consistent 1' ] && ok "one tag on two ranks: consistent" ||
    bad "one tag" "$out"
  out=$("${mpi[@]}" "$check" rank 2>&1 | sort)
  [ "$out" = $'rank 0 consistent 0\nrank 1 consistent 0' ] && ok "rank-dependent tags: inconsistent on every rank" ||
    bad "rank-dependent tags" "$out"
else
  echo "SKIP the two-rank checks: mpirun not found (apt-get install openmpi-bin)"
fi
out=$("$check" rank 2>&1)
[ "$out" = "rank 0 consistent 1" ] && ok "one process: consistent" || bad "one process" "$out"
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --micro-batch-size 4 --global-batch-size 8 --mock-data --vocab-size 64 --lr 1e-3 --eval-iters 0 --log-interval 1
      --deepspeed)
for v in Warn Ignore Fail; do
  printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "checkpoint": {"tag_validation": "%s"}}\n' "$v" \
    > "ds_$v.json"
  o1=$("$bin" "${tiny[@]}" --deepspeed_config "ds_$v.json" --train-iters 3 --exit-interval 2 --save "ck_$v" 2>&1)
  o2=$("$bin" "${tiny[@]}" --deepspeed_config "ds_$v.json" --train-iters 3 --load "ck_$v" --save "ck_$v" 2>&1)
  if grep -q "successfully saved checkpoint at iteration       2" <<<"$o1" && grep -q "iteration        3/" <<<"$o2" &&
     ! grep -q "not consistent" <<<"$o1$o2"; then
    ok "tag_validation $v: saves and resumes"
  else
    bad "tag_validation $v" "$(grep -m2 -iE "error|consistent" <<<"$o1$o2")"
  fi
done
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "checkpoint": {"tag_validation": "Strict"}}\n' \
  > ds_bad.json
out=$("$bin" "${tiny[@]}" --deepspeed_config ds_bad.json --train-iters 2 2>&1)
[ $? -ne 0 ] && grep -q "Warn" <<<"$out" && grep -q "tag_validation" <<<"$out" && ok "tag_validation Strict refused" ||
  bad "tag_validation Strict" "$(grep -m1 error <<<"$out")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
