# Sourced by the data_sampler tests (after tests/lib/common.sh), in their work folder: a NullTokenizer corpus of 80
# documents of 20-119 ids in 0..99 (NumPy seed 5), preprocessed with end-of-document tokens into
# corpus_text_document. Needs BIN (the bin folder) and PY (a python3); exits the test on a failure.
"$PY" - <<'PYEOF'
import json
import numpy as np
rng = np.random.RandomState(5)
with open("c.jsonl", "w") as f:
    for n in rng.randint(20, 120, size=80):
        f.write(json.dumps({"text": " ".join(map(str, rng.randint(0, 100, size=n)))}) + "\n")
PYEOF
"$BIN/preprocess_data" --input c.jsonl --output-prefix corpus --tokenizer-type NullTokenizer --vocab-size 100 \
  --append-eod --workers 1 >/dev/null 2>&1 || { bad "preprocess_data" "failed"; exit 1; }
