#!/usr/bin/env bash
# generate_samples' greedy generation with the key/value cache against --recompute (the whole prefix every step) on
# the CPU: a small GPT (4 layers, hidden 256, 8 heads, --seq-length 512, a 97-token character vocabulary) saved after
# one training iteration, N contexts (--sample-input-file) continued by up to OUT+1 tokens each way; prints tokens/s of both and the
# ratio. Usage: bench/gen_speed.sh [OUT N THREADS]   (ZT_BUILD_DIR: the build, default ./build; needs python3)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-400} N=${2:-2} THREADS=${3:-2}
BIN=${ZT_BUILD_DIR:-./build}/bin
W=$(mktemp -d /tmp/zt_gen_speed.XXXXXX)
trap 'rm -rf "$W"' EXIT
python3 - "$W" <<'PY'
import json, sys, random
w = sys.argv[1]
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, [chr(c) for c in cs]))
bu = bytes_to_unicode()
vocab = {bu[b]: i for i, b in enumerate([10] + list(range(32, 127)))}
vocab["<|endoftext|>"] = len(vocab)
json.dump(vocab, open(w + "/vocab.json", "w"))
open(w + "/merges.txt", "w").write("#version: 0.2\n")
r = random.Random(1)
with open(w + "/corpus.jsonl", "w") as f:
    for _ in range(64):
        f.write(json.dumps({"text": " ".join(r.choice(["the", "cat", "sees", "a", "dog"]) for _ in range(200))}) + "\n")
PY
TOK=(--tokenizer-type GPT2BPETokenizer --vocab-file "$W/vocab.json" --merge-file "$W/merges.txt")
MODEL=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 "${TOK[@]}")
"$BIN/preprocess_data" --input "$W/corpus.jsonl" --output-prefix "$W/c" --append-eod --workers 1 "${TOK[@]}" >/dev/null
OMP_NUM_THREADS=$THREADS "$BIN/pretrain_gpt" "${MODEL[@]}" --micro-batch-size 1 --global-batch-size 1 \
  --data-path "$W/c_text_document" --split 100,0,0 --lr 1e-4 --train-iters 1 --eval-iters 0 --save "$W/ck" >/dev/null
for i in $(seq "$N"); do echo "the cat sees a dog $i"; done > "$W/in.txt"
rate() { tee -a "$W/log" | grep -o "[0-9.]* tokens/s" | tail -1 | cut -d" " -f1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2; do
  kv=$(OMP_NUM_THREADS=$THREADS "$BIN/generate_samples" "${MODEL[@]}" --load "$W/ck" --greedy --sample-input-file \
       "$W/in.txt" --out-seq-length "$OUT" --sample-output-file "$W/kv$round.jsonl" | rate)
  re=$(OMP_NUM_THREADS=$THREADS "$BIN/generate_samples" "${MODEL[@]}" --load "$W/ck" --greedy --sample-input-file \
       "$W/in.txt" --out-seq-length "$OUT" --sample-output-file "$W/re$round.jsonl" --recompute | rate)
  cmp -s "$W/kv$round.jsonl" "$W/re$round.jsonl" && same=identical || same=DIFFERENT
  grep "> generated" "$W/log" | tail -2 | sed "s/^/  /"
  echo "round $round: key/value cache $kv tokens/s, --recompute $re tokens/s, ratio $(python3 -c "print('%.2f' % ($kv / $re))")x (texts $same)"
done
