#!/usr/bin/env bash
# generate_samples' greedy generation with the key/value cache against --recompute (the whole prefix every step) on
# the CPU: a small GPT (4 layers, hidden 256, 8 heads, --seq-length 512, a 97-token character vocabulary) saved after
# one training iteration, N contexts (--sample-input-file) continued by up to OUT+1 tokens each way; prints tokens/s
# of both and the ratio; and run_text_generation_server on the same model, each round: the same N contexts, one request
# each (greedy, top_k 1, OUT tokens), timed by the client (HTTP and JSON included) against that round's cache rate;
# and evaluate_zeroshot --tasks triviaqa (the harness's generate_until: the same decoder, one micro batch of 1 per
# context, the stop strings looked for after every token) with the contexts as questions and --max-gen-toks OUT,
# against the same rate.
# Usage: bench/gen_speed.sh [OUT N THREADS ROUNDS]   (ZT_BUILD_DIR: the build, default ./build; needs python3)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-400} N=${2:-2} THREADS=${3:-2} ROUNDS=${4:-2}
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
# the same contexts as triviaqa questions (the corpus has no "\n", "." or ",": each generation runs OUT tokens)
python3 -c 'import json, sys; [print(json.dumps({"question": l.rstrip("\n"), "answer": {"aliases": ["x"]}})) for l in open(sys.argv[1])]' \
  "$W/in.txt" > "$W/triviaqa.jsonl"
rate() { tee -a "$W/log" | grep -o "[0-9.]* tokens/s" | tail -1 | cut -d" " -f1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# the server on the same model, up for every round
OMP_NUM_THREADS=$THREADS "$BIN/run_text_generation_server" "${MODEL[@]}" --load "$W/ck" --port 0 > "$W/server.log" 2>&1 &
SRV=$!
trap 'kill -TERM $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 600); do grep -q "Running on" "$W/server.log" && break; sleep 0.1; done
# serve ROUND KV_RATE: the same contexts, one PUT each (greedy, top_k 1, OUT tokens), timed by the client (HTTP and
# JSON included); the texts must be generate_samples' first OUT tokens
serve() {
  python3 - "$W" "$OUT" "$2" "$1" <<'PY'
import http.client, json, re, sys, time
w, out, kv, rnd = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
port = int(re.search(r"0\.0\.0\.0:(\d+)/api", open(w + "/server.log").read()).group(1))
contexts = list(open(w + "/in.txt"))  # with their newlines, as generate_samples reads them (readlines)
want = open(w + "/kv%s.jsonl" % rnd).read()
tokens, secs, same = 0, 0.0, True
for c in contexts:
    body = json.dumps({"prompts": [c], "tokens_to_generate": out, "top_k": 1, "no_log": True})
    t0 = time.time()
    h = http.client.HTTPConnection("127.0.0.1", port)
    h.request("PUT", "/api", body=body)
    rep = json.loads(h.getresponse().read())
    secs += time.time() - t0
    tokens += len(rep["segments"][0]) - len(c)
    same &= ("\nContext:%s\n\nMegatron-LM:%s" % (c, rep["text"][0][len(c):])) in want
print("%.1f %.3f %s" % (tokens / secs, tokens / secs / kv, "the same" if same else "DIFFERENT"))
PY
}
ratios=() hratios=()
for round in $(seq "$ROUNDS"); do
  kv=$(OMP_NUM_THREADS=$THREADS "$BIN/generate_samples" "${MODEL[@]}" --load "$W/ck" --greedy --sample-input-file \
       "$W/in.txt" --out-seq-length "$OUT" --sample-output-file "$W/kv$round.jsonl" | rate)
  re=$(OMP_NUM_THREADS=$THREADS "$BIN/generate_samples" "${MODEL[@]}" --load "$W/ck" --greedy --sample-input-file \
       "$W/in.txt" --out-seq-length "$OUT" --sample-output-file "$W/re$round.jsonl" --recompute | rate)
  cmp -s "$W/kv$round.jsonl" "$W/re$round.jsonl" && same=identical || same=DIFFERENT
  read -r srate sratio ssame <<<"$(serve "$round" "$kv")"
  ratios+=("$sratio")
  grep "> generated" "$W/log" | tail -2 | sed "s/^/  /"
  hr=$(OMP_NUM_THREADS=$THREADS "$BIN/evaluate_zeroshot" "${MODEL[@]}" --load "$W/ck" --micro-batch-size 1 \
       --tasks triviaqa --task-data "triviaqa=$W/triviaqa.jsonl" --max-gen-toks "$OUT" | rate)
  grep "> generated" "$W/log" | tail -1 | sed "s/^/  /"
  hratio=$(python3 -c "print('%.3f' % ($hr / $kv))")
  hratios+=("$hratio")
  echo "round $round: key/value cache $kv tokens/s, --recompute $re tokens/s, ratio $(python3 -c "print('%.2f' % ($kv / $re))")x (texts $same); server $srate tokens/s, $sratio of the cache rate (texts $ssame); evaluate_zeroshot triviaqa $hr tokens/s, $hratio of the cache rate"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "server / generate_samples' cache rate: median $(median "${ratios[@]}") of $ROUNDS rounds"
echo "evaluate_zeroshot triviaqa / generate_samples' cache rate: median $(median "${hratios[@]}") of $ROUNDS rounds"
