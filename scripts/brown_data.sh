# The demo corpus of the Brown-corpus jobs (scripts/main_job.sh, data_efficiency_job.sh, moe_mos_demo.sh), sourced from
# the repository root:
#   brown_setup   installs what the data needs, builds zerotron, fetches the corpus and GPT-2's tokenizer files
#                 (scripts/fetch_data.sh) and sets CACHE;
#   brown_gpt2    runs brown_setup unless it ran, then tokenizes the corpus with GPT-2's BPE once (appending EOD, as
#                 Megatron's GPT data) and sets VOCAB, MERGES and PREFIX (the dataset is "${PREFIX}_text_document").
brown_setup() {
  bash scripts/install_deps.sh --data
  bash scripts/build.sh
  bash scripts/fetch_data.sh
  CACHE="${ZT_DATA_CACHE:-$HOME/.cache/zerotron}"
  BROWN_SETUP_DONE=1
}
brown_gpt2() {
  [ "${BROWN_SETUP_DONE:-}" = 1 ] || brown_setup
  VOCAB="$CACHE/gpt2/gpt2-vocab.json" MERGES="$CACHE/gpt2/gpt2-merges.txt"
  PREFIX="$CACHE/brown/brown"
  if [ ! -f "${PREFIX}_text_document.idx" ]; then
    ./build/bin/preprocess_data --input "$CACHE/brown/brown.jsonl" --output-prefix "$PREFIX" \
      --tokenizer-type GPT2BPETokenizer --vocab-file "$VOCAB" --merge-file "$MERGES" --append-eod --workers 2
  fi
}
