#!/usr/bin/env bash
# pretrain_gpt on real .bin/.idx datasets written by preprocess_data (NullTokenizer, so the test needs no
# download): learning on a patterned corpus, identical losses across runs and with a reused index cache,
# blending, separate train/valid paths, the three document masks, and the data errors before any work.
# Usage: test_pretrain_data.sh PRETRAIN_GPT PREPROCESS_DATA
set -u
bin="$1" pre="$2"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# documents: x_{t+1} = (x_t + stride) mod 60, 40-200 tokens, written as NullTokenizer text ("3 7 11 ...")
awk -v seed=5 -v n=400 'BEGIN { srand(seed); for (d = 0; d < n; d++) { x = int(rand() * 60); s = 1 + int(rand() * 5);
  len = 40 + int(rand() * 160); line = ""; for (t = 0; t < len; t++) { line = line (t ? " " : "") x; x = (x + s) % 60 }
  printf("{\"text\": \"%s\"}\n", line) } }' > "$tmp/a.jsonl"
awk -v seed=9 -v n=100 'BEGIN { srand(seed); for (d = 0; d < n; d++) { x = int(rand() * 60);
  len = 20 + int(rand() * 50); line = ""; for (t = 0; t < len; t++) { line = line (t ? " " : "") x; x = (x + 7) % 60 }
  printf("{\"text\": \"%s\"}\n", line) } }' > "$tmp/b.jsonl"
for p in a b; do
  "$pre" --input "$tmp/$p.jsonl" --output-prefix "$tmp/$p" --tokenizer-type NullTokenizer --vocab-size 63 \
    --append-eod > "$tmp/$p.log" 2>&1 || { bad "preprocess $p" "$(tail -2 "$tmp/$p.log")"; }
done
tok=(--tokenizer-type NullTokenizer --vocab-size 63)
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 8 --global-batch-size 16 "${tok[@]}")
val() { grep -F "validation loss at the end of training for val data" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/'; }
losses() { grep -E "^ iteration " <<<"$1" | sed -E 's/.*lm loss: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }

# 1. learning on the dataset (NullTokenizer: 64 ids, eod 63), below a quarter of ln(64)
out=$("$bin" "${tiny[@]}" --data-path "$tmp/a_text_document" --split 90,5,5 --lr 3e-3 --min-lr 3e-4 \
      --lr-warmup-iters 20 --lr-decay-style cosine --train-iters 200 --attention-dropout 0 --hidden-dropout 0 \
      --log-interval 50 --eval-interval 200 --eval-iters 4 2>&1)
rc=$? loss=$(val "$out")
if [ $rc -eq 0 ] && [ -n "$loss" ] && awk -v l="$loss" 'BEGIN { exit !(l + 0 < log(64) / 4) }' \
   && grep -q "validation loss at the end of training for test data" <<<"$out"; then
  ok "learns from --data-path: final validation loss $loss < ln(64)/4"
else
  bad "learning from --data-path" "rc=$rc loss '$loss'"; echo "$out" | tail -5
fi
if [ -d "$tmp/index-cache" ] && [ "$(ls "$tmp"/index-cache/*.dsc 2>/dev/null | wc -l)" -eq 3 ]; then
  ok "index caches written to dirname(prefix)/index-cache (train, valid, test)"
else
  bad "index cache" "$(ls "$tmp"/index-cache 2>&1 | head -5)"
fi

# 2. the same run again (now from the cache) with dropout: identical losses, and the cache was used
run2() { "$bin" "${tiny[@]}" --data-path "$tmp/a_text_document" --split 90,5,5 --lr 3e-3 --train-iters 12 \
         --log-interval 1 --eval-interval 6 --eval-iters 2 --reset-position-ids --reset-attention-mask \
         --eod-mask-loss "$@" 2>&1; }
o1=$(run2) o2=$(run2)
l1=$(losses "$o1") l2=$(losses "$o2")
if [ -n "$l1" ] && [ "$l1" = "$l2" ] && grep -q "loading shuffle-idx mapping" <<<"$o2"; then
  ok "document masks + dropout: identical losses across runs, second from the cache"
else
  bad "repeatability" "'$l1' vs '$l2'"; echo "$o2" | tail -3
fi
o3=$(run2 --data-cache-path "$tmp/other-cache")
if [ "$(losses "$o3")" = "$l1" ] && ! grep -q "WARNING: could not find index map" <<<"$o3"; then
  ok "--data-cache-path: the default index-cache is still found first"
else
  bad "--data-cache-path lookup" "$(losses "$o3")"
fi
# the masks change the computation: without them the losses differ
o4=$("$bin" "${tiny[@]}" --data-path "$tmp/a_text_document" --split 90,5,5 --lr 3e-3 --train-iters 12 \
     --log-interval 1 --eval-interval 6 --eval-iters 2 2>&1)
if [ -n "$(losses "$o4")" ] && [ "$(losses "$o4")" != "$l1" ]; then
  ok "--reset-position-ids/--reset-attention-mask/--eod-mask-loss change the losses"
else
  bad "masks have an effect" "'$(losses "$o4")'"
fi

# 3. blending and separate paths run
out=$("$bin" "${tiny[@]}" --data-path 0.7 "$tmp/a_text_document" 0.3 "$tmp/b_text_document" --split 90,5,5 \
      --lr 1e-3 --train-iters 5 --log-interval 5 --eval-interval 5 --eval-iters 1 2>&1)
if [ $? -eq 0 ] && grep -q "blended train dataset of" <<<"$out"; then ok "blended --data-path trains"
else bad "blending" "$(tail -3 <<<"$out")"; fi
out=$("$bin" "${tiny[@]}" --train-data-path "$tmp/a_text_document" --valid-data-path "$tmp/b_text_document" \
      --lr 1e-3 --train-iters 5 --log-interval 5 --eval-interval 5 --eval-iters 1 2>&1)
if [ $? -eq 0 ] && grep -q "validation loss at the end of training for val data" <<<"$out" \
   && ! grep -q "for test data" <<<"$out"; then ok "--train-data-path/--valid-data-path (no test set)"
else bad "separate paths" "$(tail -3 <<<"$out")"; fi

# 4. errors before any work, naming the flag or file and the numbers
expect_error() { # name, expected text, args...
  local name="$1" want="$2"; shift 2
  local o; o=$("$bin" "$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$o" && ! grep -q "training \.\.\." <<<"$o"; then ok "refuses $name"
  else bad "refuses $name" "rc=$rc: $(tail -2 <<<"$o")"; fi
}
base=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 8 --lr 1e-3 --train-iters 5)
expect_error "a missing dataset" "$tmp/nope_text_document.idx" "${base[@]}" "${tok[@]}" --data-path "$tmp/nope_text_document"
expect_error "no data source" "no training data: give --data-path" "${base[@]}"
expect_error "--mock-data with --data-path" "--mock-data and --data-path are mutually exclusive" "${base[@]}" \
  --mock-data --data-path "$tmp/a_text_document"
expect_error "GPT-2 without --merge-file" "--tokenizer-type GPT2BPETokenizer needs --vocab-file (vocab.json) and --merge-file" \
  "${base[@]}" --data-path "$tmp/a_text_document" --vocab-file "$tmp/a.jsonl"
expect_error "HFTokenizer without its directory" "--tokenizer-type HFTokenizer needs --tokenizer-model" "${base[@]}" \
  --data-path "$tmp/a_text_document" --tokenizer-type HFTokenizer
expect_error "--num-workers -1" "--num-workers -1: must be >= 0" "${base[@]}" "${tok[@]}" \
  --data-path "$tmp/a_text_document" --num-workers -1
expect_error "a split without training documents" "--split '0,50,50' leaves no training documents" "${base[@]}" \
  "${tok[@]}" --data-path "$tmp/a_text_document" --split 0,50,50
expect_error "tokens outside the vocabulary" "a_text_document.bin holds token ids 0..63, outside the 21 ids of the NullTokenizer tokenizer" "${base[@]}" --tokenizer-type NullTokenizer \
  --vocab-size 20 --data-path "$tmp/a_text_document"
expect_error "an odd weight list" "--data-path has 3 words" "${base[@]}" "${tok[@]}" \
  --data-path 0.5 "$tmp/a_text_document" 0.5

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
