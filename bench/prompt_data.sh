#!/usr/bin/env bash
# finetune_llama's data start-up: reading and tokenizing an Alpaca-sized JSON (52,002 generated examples, Alpaca's
# field lengths roughly: instruction 5-25 words, input in 40% of them, output 10-90 words) into SupervisedDataset rows
# (max_length 513) through HFTokenizer on a LlamaTokenizer directory (an 8000-piece BPE tokenizer.model trained here on
# the same text, legacy true). The peer measured in the same run is a lower bound of what Megatron-DeepSpeed's
# SupervisedDataset spends: Python's sentencepiece encode of the same 104,004 texts (prompt + output, and the prompt
# alone) and nothing else (transformers' slow tokenizer adds its special-token split and padding on top).
# Usage: bench/prompt_data.sh [BUILD_DIR]   (default build; BUILD_DIR/tests/bin/test_prompt_tool)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
T=$B/tests/bin/test_prompt_tool
[ -x "$T" ] || bash scripts/build.sh >/dev/null
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
/usr/bin/python3 - "$W" <<'PY'
import json, os, random, sys
import sentencepiece as spm
w = sys.argv[1]
rng = random.Random(3)
words = ("the of and to in is was for on that with as by at from his her they which this be are an it not or have "
         "had one were all their there been has but more when can who also its into other after first new time two "
         "may only about would these over most such many some then three between where year during write explain "
         "describe list give summarize translate classify").split()
s = lambda a, b: " ".join(rng.choice(words) for _ in range(rng.randint(a, b)))
ex = [{"instruction": s(5, 25), "input": s(3, 15) if rng.random() < 0.4 else "", "output": s(10, 90)}
      for _ in range(52002)]
json.dump(ex, open(os.path.join(w, "alpaca_data.json"), "w"))
with open(os.path.join(w, "corpus.txt"), "w") as f:
    for e in ex[:20000]:
        f.write(e["instruction"] + " " + e["input"] + " " + e["output"] + "\n")
    f.write("Below is an instruction that describes a task, paired with an input that provides further context. "
            "Write a response that appropriately completes the request. ### Instruction: ### Input: ### Response:\n")
os.makedirs(os.path.join(w, "hf"))
spm.SentencePieceTrainer.train(input=os.path.join(w, "corpus.txt"), model_prefix=os.path.join(w, "hf", "tokenizer"),
                               model_type="bpe", vocab_size=8000, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                               byte_fallback=True, minloglevel=2, hard_vocab_limit=False)
json.dump({"tokenizer_class": "LlamaTokenizer", "pad_token": None}, open(os.path.join(w, "hf",
          "tokenizer_config.json"), "w"))
PY
echo "== $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
line() { "$T" "$W/hf" "$W/alpaca_data.json" 512 --no-rows | grep " examples, "; }
c2=$(line | sed -E 's/.*; ([0-9.]+) s$/\1/')
c1=$(OMP_NUM_THREADS=1 line | sed -E 's/.*; ([0-9.]+) s$/\1/')
line | sed -E 's/^ > [^:]*: //'
py=$(/usr/bin/python3 - "$W" <<'PY'
import json, os, sys, time
import sentencepiece as spm
w = sys.argv[1]
sp = spm.SentencePieceProcessor(model_file=os.path.join(w, "hf", "tokenizer.model"))
t0 = time.time()
ex = json.load(open(os.path.join(w, "alpaca_data.json")))
head_in = ("Below is an instruction that describes a task, paired with an input that provides further context. "
           "Write a response that appropriately completes the request.\n\n### Instruction:\n{instruction}\n\n"
           "### Input:\n{input}\n\n### Response:")
head = ("Below is an instruction that describes a task. Write a response that appropriately completes the request."
        "\n\n### Instruction:\n{instruction}\n\n### Response:")
n = 0
for e in ex:
    src = head_in.format_map(e) if e.get("input", "") != "" else head.format_map(e)
    n += len(sp.encode(src + e["output"])) + len(sp.encode(src))
print("%.2f %d" % (time.time() - t0, n))
PY
)
awk -v c1="$c1" -v c2="$c2" -v py="$py" 'BEGIN { split(py, p, " ");
  printf "zerotron rows: %.2f s on %d threads, %.2f s on 1; Python sentencepiece encode alone: %.2f s (%d ids); zerotron 1 thread / Python = %.2f\n", c2, '"$(nproc)"', c1, p[1], p[2], c1 / p[1] }'
