#!/usr/bin/env bash
# preprocess_data throughput with HFTokenizer on tokenizer.json directories (PreTrainedTokenizerFast, Llama-3's
# layout) against GPT2BPETokenizer on the same vocabulary, in the same run: the Brown corpus jsonl, --workers 1,
# --append-eod, MB/s of JSON lines as preprocess_data reports it (after start-up). The two tokenizer.json directories
# hold the real GPT-2 vocabulary and merges (tests/tokenizer/test_hf_fast_tokenizer.py's gpt2_dirs): Hugging Face's
# gpt2 layout (GPT-2's regex; its .bin must equal GPT2BPETokenizer's byte for byte, checked here) and Llama-3's
# (its Split regex, ignore_merges, the bos template). The corpus is read 4 times over (one file, 24 MB) so that a
# run lasts about half a second. Each figure is the median of RUNS interleaved rounds (default 5); each ratio is the
# median of the rounds' own ratios to GPT2BPETokenizer's run beside them (which keeps it steady on a noisy machine).
#   bench/hf_tokenizer.sh              (uses build/, builds it if needed)
#   ZT_BUILD_DIR=/tmp/b RUNS=7 bench/hf_tokenizer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${ZT_BUILD_DIR:-build}"
RUNS="${RUNS:-5}"
source bench/brown_prologue.sh
bench_brown hf_tokenizer bin/preprocess_data
python3 -c "import sys; sys.path.insert(0, 'tests/tokenizer'); import test_hf_fast_tokenizer as t; \
t.gpt2_dirs(sys.argv[1], sys.argv[2], sys.argv[3])" "$OUT" "$VOCAB" "$MERGES"
for _ in 1 2 3 4; do cat "$INPUT"; done >"$OUT/input.jsonl"
echo "input: $INPUT 4 times over ($(stat -c %s "$OUT/input.jsonl") bytes, $(wc -l <"$OUT/input.jsonl") documents);" \
  "--workers 1 --append-eod; $RUNS rounds"

rate() { # name, then the tokenizer flags
  local name=$1
  shift
  "$BUILD/bin/preprocess_data" --input "$OUT/input.jsonl" --output-prefix "$OUT/$name" "$@" --append-eod --workers 1 \
    --log-interval 1000000 | sed -n 's/^Done:.* docs\/s, \([0-9.]*\) MB\/s.*/\1/p'
}
gpt2=() json=() llama=()
for ((r = 0; r < RUNS; r++)); do
  gpt2+=("$(rate gpt2 --tokenizer-type GPT2BPETokenizer --vocab-file "$VOCAB" --merge-file "$MERGES")")
  json+=("$(rate json --tokenizer-type HFTokenizer --tokenizer-model "$OUT/gpt2-json")")
  llama+=("$(rate llama --tokenizer-type HFTokenizer --tokenizer-model "$OUT/llama3-gpt2-vocab")")
done
g=$(printf '%s\n' "${gpt2[@]}" | median)
j=$(printf '%s\n' "${json[@]}" | median)
l=$(printf '%s\n' "${llama[@]}" | median)
ratio() { # the median of the rounds' ratios of the named array to gpt2
  local -n x=$1
  for ((r = 0; r < RUNS; r++)); do awk -v a="${x[r]}" -v b="${gpt2[r]}" 'BEGIN {printf "%.3f\n", a / b}'; done | median
}
same=no
cmp -s "$OUT/gpt2_text_document.bin" "$OUT/json_text_document.bin" && same=yes
echo "GPT2BPETokenizer (vocab.json + merges.txt):            $g MB/s (rounds: ${gpt2[*]})"
echo "HFTokenizer, tokenizer.json in Hugging Face's gpt2 layout: $j MB/s (rounds: ${json[*]}); ratio $(ratio json);" \
  ".bin equal to GPT2BPETokenizer's: $same"
echo "HFTokenizer, tokenizer.json in Llama-3's layout:           $l MB/s (rounds: ${llama[*]}); ratio $(ratio llama)"
[[ $same == yes ]] || { echo "error: hf_tokenizer: the gpt2-layout tokenizer.json wrote other ids" >&2; exit 1; }
