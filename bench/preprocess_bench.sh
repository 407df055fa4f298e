#!/usr/bin/env bash
# preprocess_data throughput (MB/s of JSON lines, Megatron's definition: after start-up) on the Brown
# corpus jsonl with GPT-2 BPE, for --workers 1 and 2, beside bounds measured in the same run on one
# thread (bench/preprocess_bounds.c): parse-only, tokenize-only, and their serial sum = the best one
# worker can do. Each figure is the median of RUNS rounds (default 5). Target: >= 10 MB/s per worker.
#   bench/preprocess_bench.sh              (uses build/, builds it if needed)
#   ZT_BUILD_DIR=/tmp/b RUNS=7 bench/preprocess_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${ZT_BUILD_DIR:-build}"
RUNS="${RUNS:-5}"
source bench/brown_prologue.sh
bench_brown preprocess_bench bin/preprocess_data bench/bin/bench_preprocess_bounds
echo "input: $INPUT ($(stat -c %s "$INPUT") bytes, $(wc -l <"$INPUT") documents); GPT2BPETokenizer; $RUNS rounds"

# Interleaved: each round runs the bounds, then --workers 1, then --workers 2, so that all three see the
# same machine conditions; medians over the rounds.
parse=() tok=() one=() r1=() r2=()
rate() {
  "$BUILD/bin/preprocess_data" --input "$INPUT" --output-prefix "$OUT/w$1_$2" --tokenizer-type GPT2BPETokenizer \
    --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod --workers "$1" --log-interval 1000000 |
    sed -n 's/^Done:.* docs\/s, \([0-9.]*\) MB\/s.*/\1/p'
}
for r in $(seq "$RUNS"); do
  b="$("$BUILD/bench/bin/bench_preprocess_bounds" "$INPUT" GPT2BPETokenizer "$VOCAB" "$MERGES")"
  parse+=("$(sed -n 's/^bound parse_only: \([0-9.]*\) MB\/s.*/\1/p' <<<"$b")")
  tok+=("$(sed -n 's/^bound tokenize_only: \([0-9.]*\) MB\/s.*/\1/p' <<<"$b")")
  one+=("$(sed -n 's/^bound one_worker: \([0-9.]*\) MB\/s.*/\1/p' <<<"$b")")
  r1+=("$(rate 1 "$r")")
  r2+=("$(rate 2 "$r")")
done
BOUND="$(printf '%s\n' "${one[@]}" | median)"
echo "bound (1 thread): parse-only $(printf '%s\n' "${parse[@]}" | median) MB/s," \
  "tokenize-only $(printf '%s\n' "${tok[@]}" | median) MB/s, parse+tokenize $BOUND MB/s (medians; runs: ${one[*]})"
for f in bin idx; do
  cmp -s "$OUT/w1_1_text_document.$f" "$OUT/w2_1_text_document.$f" ||
    { echo "error: preprocess_bench: --workers 2 output ($f) differs from --workers 1" >&2; exit 1; }
done
for w in 1 2; do
  if [[ $w == 1 ]]; then rates=("${r1[@]}"); else rates=("${r2[@]}"); fi
  m="$(printf '%s\n' "${rates[@]}" | median)"
  awk -v w="$w" -v m="$m" -v b="$BOUND" -v runs="${rates[*]}" 'BEGIN {
    printf "preprocess_data --workers %d: %.2f MB/s (median; runs: %s), %.2f MB/s per worker, %.0f%% of the " \
           "1-thread parse+tokenize bound per worker%s\n", w, m, runs, m / w, 100 * m / w / b,
           (m / w >= 10 ? "; target 10 MB/s per worker: met" : "; target 10 MB/s per worker: NOT met") }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
