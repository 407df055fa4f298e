#!/usr/bin/env bash
# --num-workers: is batch loading worth a worker? Time to produce one GPT micro batch (bench_loader: Megatron's
# sample order, mmap'd .bin reads, masks) on a synthetic 20M-token dataset, against a memcpy bound and against
# pretrain_gpt's iteration time on the same data with a small model (2 layers, hidden 256, seq 1024, micro batch 4,
# GPT-2's 50257-token vocabulary). The .bin is in the page cache, as it is after the first epoch's reads.
# Usage: bench/loader.sh [BUILD_DIR]   (default build; BUILD_DIR/bin/pretrain_gpt and the bench_loader binary)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
[ -x "$B/bin/pretrain_gpt" ] || bash scripts/build.sh >/dev/null
L=$B/bench/bin/bench_loader
[ -x "$L" ] || L=$B/bin/bench_loader
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
/usr/bin/python3 - "$W/syn" <<'PY'
import struct, sys
import numpy as np
rng = np.random.RandomState(0)
sizes = rng.randint(64, 4096, size=10000).astype(np.int32)     # ~20M tokens in 10000 documents
tokens = rng.randint(0, 50257, size=int(sizes.sum())).astype(np.uint16)
tokens.tofile(sys.argv[1] + ".bin")
pointers = np.concatenate([[0], np.cumsum(sizes[:-1].astype(np.int64) * 2)]).astype(np.int64)
with open(sys.argv[1] + ".idx", "wb") as f:
    f.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 8) + struct.pack("<Q", len(sizes))
            + struct.pack("<Q", len(sizes) + 1) + sizes.tobytes() + pointers.tobytes()
            + np.arange(len(sizes) + 1, dtype=np.int64).tobytes())
PY
echo "== $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
out=$("$L" --data-path "$W/syn" --seq 1024 --micro-batch 4 --batches 2000)
grep "^micro batch" <<<"$out"
load=$(sed -n 's/^loader_seconds_per_micro_batch //p' <<<"$out")
it=$("$B/bin/pretrain_gpt" --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 1024 \
     --max-position-embeddings 1024 --micro-batch-size 4 --global-batch-size 4 --lr 1e-4 --train-iters 3 \
     --log-interval 3 --eval-iters 0 --data-path "$W/syn" --split 100,0,0 --tokenizer-type NullTokenizer \
     --vocab-size 50257 --data-cache-path "$W/cache" 2>&1 | grep -E "^ iteration +3/" |
     sed -E 's/.*elapsed time per iteration \(ms\): ([0-9.]+) .*/\1/')
awk -v l="$load" -v it="$it" 'BEGIN { printf "pretrain_gpt iteration (1 micro batch): %.1f ms; producing its batch: %.4f ms = %.5f%% of it\n", it, l * 1e3, 100 * l * 1e3 / it }'
