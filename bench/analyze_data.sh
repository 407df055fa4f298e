#!/usr/bin/env bash
# analyze_data throughput (docs/data_efficiency_analyzer.md): the GPT analysis of the Brown corpus (GPT-2 BPE,
# --seq-length 256, --split 949,50,1, EPOCHS exact epochs: 100 by default, 482,853 samples, 124 M tokens), the four
# steps (map/reduce of total_vocab_freq, then of vocab_rarity) with 1 and 2 threads; each figure the median of RUNS
# rounds (default 3), map steps also in million tokens/s. With DS_SRC=<a DeepSpeed source tree> and PyTorch, the
# peer in the same run: DeepSpeed's own DataAnalyzer over the same samples, 2 threads
# (tests/analyzer/deepspeed_crosscheck.py; it also checks that both trees are identical).
#   bench/analyze_data.sh                      (uses build/, builds it if needed)
#   ZT_BUILD_DIR=/tmp/b EPOCHS=10 DS_SRC=~/DeepSpeed PYTHON=/usr/bin/python3 bench/analyze_data.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${ZT_BUILD_DIR:-build}"
RUNS="${RUNS:-3}"
EPOCHS="${EPOCHS:-100}"
source bench/brown_prologue.sh
bench_brown analyze_data.sh bin/analyze_data bin/preprocess_data
"$BUILD/bin/preprocess_data" --input "$INPUT" --output-prefix "$OUT/brown" --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod --workers 2 >/dev/null
flags=(--analyzing-data-type GPT --data-path "$OUT/brown_text_document" --vocab-file "$VOCAB" --merge-file "$MERGES"
       --seq-length 256 --split 949,50,1 --train-data-exact-num-epochs "$EPOCHS")
# the index files are built once, outside the timings
"$BUILD/bin/analyze_data" "${flags[@]}" --analyzing-task map --analyzing-metric total_vocab_freq --save "$OUT/warm" \
  2>&1 | sed -n 's/^> analyzing \([0-9]*\) train samples.*/\1/p' >"$OUT/n"
n=$(cat "$OUT/n")
echo "input: $INPUT, $EPOCHS epochs of the train split at --seq-length 256: $n samples, $((n * 257)) tokens; $RUNS rounds"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
for T in 1 2; do
  declare -A times=()
  for r in $(seq "$RUNS"); do
    save="$OUT/t${T}_$r"
    a=("$BUILD/bin/analyze_data" "${flags[@]}" --save "$save" --analyzing-num-threads "$T" --analyzing-num-threads-reduce "$T"
       --global-batch-size 10000)
    for step in "map total_vocab_freq" "reduce total_vocab_freq" "map vocab_rarity" "reduce vocab_rarity"; do
      set -- $step
      times[$1_$2]+="$(secs "${a[@]}" --analyzing-task "$1" --analyzing-metric "$2") "
    done
    rm -rf "$save"
  done
  line="threads $T:"
  for step in map_total_vocab_freq reduce_total_vocab_freq map_vocab_rarity reduce_vocab_rarity; do
    m=$(tr ' ' '\n' <<<"${times[$step]}" | grep . | median)
    extra=""
    [[ $step == map_* ]] && extra=" ($(echo "$n * 257 / $m / 1000000" | bc -l | xargs printf '%.0f') M tokens/s)"
    line+=" $step $(printf '%.3f' "$m") s$extra;"
  done
  echo "$line"
  unset times
done
if [[ -n ${DS_SRC:-} ]]; then
  t0=$(date +%s.%N)
  res=$("${PYTHON:-/usr/bin/python3}" tests/analyzer/deepspeed_crosscheck.py "$DS_SRC" "$BUILD/bin/analyze_data" "$OUT/xcheck" 1 2 2 10000 -- \
        "${flags[@]}" 2>/dev/null | tail -1) || res="the cross-check failed (PyTorch? DS_SRC?)"
  t1=$(date +%s.%N)
  echo "peer: DeepSpeed DataAnalyzer (its Python, 2 threads, with analyze_data's run inside): $(echo "$t1 - $t0" | bc -l | xargs printf '%.1f') s; $res"
fi
