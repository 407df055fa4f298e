#!/usr/bin/env bash
# evaluate_zeroshot's forward against the training forward on the CPU (tests/evaluate/eval_speed.c): the main job's GPT
# shape by default, both built in one run from the same weights, alternating; prints tokens/s of each and the ratio.
# Usage: bench/eval_speed.sh [LAYERS HIDDEN HEADS SEQ MICRO_BATCH PADDED_VOCAB N]   (needs scripts/build.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./build/bench/bin/eval_speed "$@"
