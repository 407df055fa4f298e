#!/usr/bin/env bash
# Zero-shot evaluation of the main job's GPT (scripts/main_job.sh: 4 layers, h=256, on the Brown corpus with
# GPT-2's vocabulary) with evaluate_zeroshot on held-out Brown text: the documents of the run's test split
# (--split 900,50,50 over the corpus's 500 documents: the last 25), never seen in training.
#   1. WIKITEXT103-style perplexity of those documents (joined by newlines; the file's name has none of ptb/wiki/
#      lambada, so no detokenizer: Brown's text is already plain), with Megatron's adjusted (word-level) perplexity;
#   2. a LAMBADA-style last-word set built here, deterministically, from the same documents: every sentence of 8 to
#      60 words whose last word is alphabetic and of 3 letters or more, with the two sentences before it as context,
#      the sentence's final punctuation removed (one JSON line each); scored non-strict and --strict-lambada;
#   3. the same two as lm-evaluation-harness scores them (evaluate_zeroshot --tasks): the documents, one JSON line
#      each, as pile_10k (word and byte perplexity of whole documents, bits per byte) and the last-word set as
#      lambada_openai (the last word's perplexity, acc: it is the greedy continuation).
# The checkpoint: $ZT_EVAL_CKPT (default $CACHE/brown/gpt_ckpt); when it holds none, the main job is run first with
# `--save` there. ZT_BIN: where the binaries are (default ./build/bin). Extra arguments go to evaluate_zeroshot.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${ZT_DATA_CACHE:-$HOME/.cache/zerotron}"
BIN="${ZT_BIN:-./build/bin}"
CK="${ZT_EVAL_CKPT:-$CACHE/brown/gpt_ckpt}"
OUT="${ZT_EVAL_OUT:-$CACHE/brown/eval}"
if [ ! -f "$CK/latest" ]; then
  bash scripts/main_job.sh --save "$CK"
fi
mkdir -p "$OUT"
VOCAB="$CACHE/gpt2/gpt2-vocab.json" MERGES="$CACHE/gpt2/gpt2-merges.txt"
# the held-out text and the last-word set, from the test split's documents
python3 - "$CACHE/brown/brown.jsonl" "$OUT" <<'EOF'
import json, re, sys
src, out = sys.argv[1], sys.argv[2]
docs = [json.loads(l)["text"] for l in open(src, encoding="utf-8")]
assert len(docs) == 500, "expected the 500 Brown documents of scripts/fetch_data.sh, found %d" % len(docs)
# Megatron's split of 500 documents by 900,50,50: 450 train, 25 valid, 25 test (the last 25)
test = docs[475:]
with open(out + "/brown_test.txt", "w", encoding="utf-8") as f:
    f.write("\n".join(d.strip() for d in test) + "\n")
with open(out + "/brown_test.jsonl", "w", encoding="utf-8") as f:
    f.write("".join(json.dumps({"text": d.strip()}) + "\n" for d in test))
n = 0
with open(out + "/brown_lastword.jsonl", "w", encoding="utf-8") as f:
    for d in test:
        sents = [s.strip() for s in re.split(r"(?<=[.!?])\s+", d.replace("\n", " ")) if s.strip()]
        for i in range(2, len(sents)):
            s = re.sub(r"[.!?\"')]+$", "", sents[i])
            words = s.split()
            if not (8 <= len(words) <= 60) or not re.fullmatch(r"[A-Za-z]{3,}", words[-1]):
                continue
            f.write(json.dumps({"text": " ".join(sents[i - 2:i] + [s])}) + "\n")
            n += 1
print("> held-out text: %d documents; last-word set: %d examples" % (len(test), n))
EOF
MODEL=(--num-layers 4 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 1024
       --seq-length 128 --max-position-embeddings 128 --micro-batch-size 8
       --tokenizer-type GPT2BPETokenizer --vocab-file "$VOCAB" --merge-file "$MERGES" --load "$CK")
"$BIN/evaluate_zeroshot" --task WIKITEXT103 --valid-data "$OUT/brown_test.txt" "${MODEL[@]}" "$@"
"$BIN/evaluate_zeroshot" --task LAMBADA --valid-data "$OUT/brown_lastword.jsonl" "${MODEL[@]}" "$@"
"$BIN/evaluate_zeroshot" --task LAMBADA --strict-lambada --valid-data "$OUT/brown_lastword.jsonl" "${MODEL[@]}" "$@"
rm -f "$OUT/harness.json" # --output-path never overwrites: this run's results replace the last run's
"$BIN/evaluate_zeroshot" --tasks pile_10k,lambada_openai --task-data pile_10k="$OUT/brown_test.jsonl" \
  lambada_openai="$OUT/brown_lastword.jsonl" --output-path "$OUT/harness.json" "${MODEL[@]}" "$@"
