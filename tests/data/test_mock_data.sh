#!/usr/bin/env bash
# --mock-data's vocabulary bound (issue 25: --vocab-size 1 divided by zero in data/mock_data.c and died of SIGFPE):
# V = 1 is refused naming the flag and the value, before any step; V = 2 (the smallest stream: token 0 and the
# end-of-document token 1) trains.
# Usage: test_mock_data.sh PRETRAIN_GPT
set -u
bin="$1"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
tiny=(--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 2 --train-iters 2 --lr 1e-3 --log-interval 1 --mock-data
      --tokenizer-type NullTokenizer)
for v in 1 0 -3; do
  out=$("$bin" "${tiny[@]}" --vocab-size "$v" 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -q "^error: .*--vocab-size:\? \?$v" <<<"$out" && ! grep -q "^ iteration " <<<"$out"; then
    ok "--vocab-size $v refused (exit 1): $(grep -m1 'error:' <<<"$out")"
  else
    bad "--vocab-size $v" "rc=$rc $(tail -2 <<<"$out")"
  fi
done
out=$("$bin" "${tiny[@]}" --vocab-size 1 2>&1)
if grep -q "error: --vocab-size: 1: --mock-data needs a vocabulary of at least 2 tokens" <<<"$out"; then
  ok "the message names --mock-data and the value"
else
  bad "message" "$(tail -2 <<<"$out")"
fi
out=$("$bin" "${tiny[@]}" --vocab-size 2 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^ iteration ' <<<"$out")" -eq 2 ]; then
  ok "--vocab-size 2 trains 2 iterations"
else
  bad "--vocab-size 2" "rc=$rc $(tail -3 <<<"$out")"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
