#!/usr/bin/env bash
# Index-cache waits end (issue 25 item 3): under mpirun, two ranks whose --data-cache-path resolves to different
# directories (the same relative path, each rank started in its own working directory: what node-local disks give)
# once left rank 1 "still waiting for rank 0 to write ..." forever. Now the ranks meet after rank 0 wrote its cache,
# rank 1 looks for ZT_DATA_CACHE_TIMEOUT seconds, and every rank ends the job naming rank 1, its path and the seconds.
# Controls: the same layout with a shared working directory trains; a lone rank 1 without MPI (gpt_dataset_dump
# --rank 1) times out with the same kind of message.
# Usage: test_cache_wait_mpi.sh PRETRAIN_GPT PREPROCESS_DATA GPT_DATASET_DUMP   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1" pre="$2" dump="$3"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk 'BEGIN { srand(3); for (d = 0; d < 200; d++) { x = int(rand() * 60); line = "";
  for (t = 0; t < 40 + int(rand() * 60); t++) { line = line (t ? " " : "") x; x = (x + 3) % 60 }
  printf("{\"text\": \"%s\"}\n", line) } }' > "$tmp/a.jsonl"
"$pre" --input "$tmp/a.jsonl" --output-prefix "$tmp/a" --tokenizer-type NullTokenizer --vocab-size 63 --append-eod \
  > "$tmp/pre.log" 2>&1 || { bad "preprocess" "$(tail -2 "$tmp/pre.log")"; exit 1; }
args=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 32 --max-position-embeddings 32
      --micro-batch-size 2 --global-batch-size 4 --tokenizer-type NullTokenizer --vocab-size 63 --lr 1e-3
      --train-iters 2 --log-interval 1 --eval-iters 0 --data-path "$tmp/a_text_document" --split 100,0,0
      --data-cache-path cache)
mkdir -p "$tmp/node0" "$tmp/node1" "$tmp/shared"

# 1. per-node working directories: rank 1 cannot see rank 0's cache
start=$(date +%s)
out=$(ZT_DATA_CACHE_TIMEOUT=3 timeout 120 "${mpi[@]}" -x ZT_DATA_CACHE_TIMEOUT -np 1 -wdir "$tmp/node0" "$bin" \
      "${args[@]}" : -np 1 -wdir "$tmp/node1" "$bin" "${args[@]}" 2>&1)
rc=$? took=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1 cannot see the GPT index cache that rank 0 wrote: rank 1 looked for cache/[0-9a-f]*\.dsc for 3 s (ZT_DATA_CACHE_TIMEOUT); rank 0's is cache/" <<<"$out" \
   && [ -f "$tmp"/node0/cache/*.dsc ] && ! grep -q "^ iteration " <<<"$out"; then
  ok "per-rank cache directories end the job after ${took} s (rc=$rc), naming rank 1, its path and 3 s"
else
  bad "per-rank cache directories" "rc=$rc after ${took}s: $(grep -m2 -E 'error|waiting' <<<"$out"; tail -2 <<<"$out")"
fi
if [ $took -lt 60 ]; then ok "no hang: ended in ${took} s"; else bad "hang" "${took} s"; fi

# 2. control: a shared directory (rank 0 builds, rank 1 loads) trains both iterations
out=$(ZT_DATA_CACHE_TIMEOUT=3 timeout 300 "${mpi[@]}" -x ZT_DATA_CACHE_TIMEOUT -np 2 -wdir "$tmp/shared" "$bin" \
      "${args[@]}" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^ iteration ' <<<"$out")" -eq 2 ] && grep -q "building the indices on rank 0" <<<"$out"; then
  ok "shared cache directory: rank 0 builds, rank 1 loads, 2 iterations"
else
  bad "shared cache directory" "rc=$rc $(grep -m2 error <<<"$out"; tail -2 <<<"$out")"
fi
# ... and again from the cache on both ranks
out=$(timeout 300 "${mpi[@]}" -np 2 -wdir "$tmp/shared" "$bin" "${args[@]}" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^ iteration ' <<<"$out")" -eq 2 ] && ! grep -q "building the indices" <<<"$out"; then
  ok "shared cache directory, second run: both ranks load"
else
  bad "second run" "rc=$rc $(grep -m2 error <<<"$out"; tail -2 <<<"$out")"
fi

# 3. without MPI: a rank 1 whose rank 0 never writes times out
start=$(date +%s)
out=$(cd "$tmp" && ZT_DATA_CACHE_TIMEOUT=2 timeout 60 "$dump" --rank 1 --world 2 data "$tmp/dump" 32 7 100,0,0 50 0 0 \
      "$tmp/lonely-cache" 0 --data-path "$tmp/a_text_document" 2>&1)
rc=$? took=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1 waited 2 s (ZT_DATA_CACHE_TIMEOUT) for rank 0 to write the GPT index cache $tmp/lonely-cache/[0-9a-f]*\.dsc" <<<"$out"; then
  ok "a lone rank 1 without MPI times out after ${took} s naming the file"
else
  bad "lone rank 1" "rc=$rc after ${took}s: $(tail -2 <<<"$out")"
fi
out=$(cd "$tmp" && ZT_DATA_CACHE_TIMEOUT=soon timeout 60 "$dump" --rank 1 --world 2 data "$tmp/dump" 32 7 100,0,0 50 0 0 \
      "$tmp/lonely-cache" 0 --data-path "$tmp/a_text_document" 2>&1)
if grep -q "error: .*ZT_DATA_CACHE_TIMEOUT: 'soon': expected a number of seconds > 0 (default 600)" <<<"$out"; then
  ok "a malformed ZT_DATA_CACHE_TIMEOUT is refused"
else
  bad "malformed timeout" "$(tail -2 <<<"$out")"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
