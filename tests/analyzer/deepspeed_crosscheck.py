"""Manual cross-check (needs PyTorch and a DeepSpeed source tree; not run by ctest): runs DeepSpeed's own
DataAnalyzer (deepspeed/runtime/data_pipeline/data_sampling/*.py from DS_SRC, with deepspeed.comm and the logger
stubbed) with analyze_data.py's GPT metric functions over the train samples of a dataset, runs analyze_data with the
same flags, and compares the two --save trees file by file.

usage: deepspeed_crosscheck.py DS_SRC ANALYZE_DATA WORK_DIR W T R BATCH -- <analyze_data data/tokenizer flags>
  e.g. deepspeed_crosscheck.py ~/DeepSpeed build/bin/analyze_data /tmp/x 1 2 2 10000 -- --analyzing-data-type GPT \
       --data-path brown_text_document --vocab-file vocab.json --merge-file merges.txt --seq-length 256 \
       --split 949,50,1 --train-data-exact-num-epochs 10
The GPT samples are assembled from the index files analyze_data's first run caches (Megatron's GPTDataset.__getitem__).
"""
import filecmp
import glob
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

src, tool, work, W, T, R, batch = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:8])
assert sys.argv[8] == "--"
flags = sys.argv[9:]
os.makedirs(work, exist_ok=False)
pkg = os.path.join(work, "pkg")
sub = os.path.join(pkg, "deepspeed/runtime/data_pipeline/data_sampling")
os.makedirs(sub)
for d in ("deepspeed", "deepspeed/runtime", "deepspeed/runtime/data_pipeline", "deepspeed/runtime/data_pipeline/data_sampling"):
    open(os.path.join(pkg, d, "__init__.py"), "a").close()
os.makedirs(os.path.join(pkg, "deepspeed/comm"))
open(os.path.join(pkg, "deepspeed/comm/__init__.py"), "w").write("def barrier(group=None): pass\n")
os.makedirs(os.path.join(pkg, "deepspeed/utils"))
open(os.path.join(pkg, "deepspeed/utils/__init__.py"), "w").write("import logging\nlogger = logging.getLogger('ds')\n")
for f in ("indexed_dataset", "utils", "data_analyzer"):
    shutil.copy(os.path.join(src, "deepspeed/runtime/data_pipeline/data_sampling", f + ".py"), sub)
sys.path.insert(0, pkg)
from deepspeed.runtime.data_pipeline.data_sampling.data_analyzer import DataAnalyzer  # noqa: E402
from deepspeed.runtime.data_pipeline.data_sampling.indexed_dataset import MMapIndexedDataset  # noqa: E402

ours = os.path.join(work, "zerotron")
common = flags + ["--save", ours, "--analyzing-num-workers", str(W), "--analyzing-num-threads", str(T),
                  "--global-batch-size", str(batch)]
for metric in ("total_vocab_freq", "vocab_rarity"):
    for w in range(W):
        subprocess.run([tool] + common + ["--analyzing-task", "map", "--analyzing-metric", metric, "--analyzing-worker-id",
                                          str(w)], check=True, capture_output=True)
    log = subprocess.run([tool] + common + ["--analyzing-task", "reduce", "--analyzing-metric", metric,
                                            "--analyzing-num-threads-reduce", str(R)], check=True, capture_output=True,
                         text=True).stderr + ""
prefix = flags[flags.index("--data-path") + 1]
cache = flags[flags.index("--data-cache-path") + 1] if "--data-cache-path" in flags else \
    os.path.join(os.path.dirname(os.path.abspath(prefix)), "index-cache")
padded = len(np.fromfile(os.path.join(ours, "total_vocab_freq/total_vocab_freq_metric_value.bin"), np.uint8)) and \
    int(np.frombuffer(open(os.path.join(ours, "total_vocab_freq/total_vocab_freq_metric_value.idx"), "rb").read(), np.int32, 1, 34)[0]) - 1


class Megatron:  # the corpus with Megatron's dtype table (code 8 is uint16 there, uint64 in DeepSpeed's)
    def __init__(self, prefix):
        b = open(prefix + ".idx", "rb").read()
        self.dt = {1: np.uint8, 4: np.int32, 5: np.int64, 8: np.uint16}[b[17]]
        n = int(np.frombuffer(b, np.uint64, 1, 18)[0])
        self.sizes = np.frombuffer(b, np.int32, n, 34)
        self.ptrs = np.frombuffer(b, np.int64, n, 34 + 4 * n)
        self.bin = np.memmap(prefix + ".bin", dtype=np.uint8, mode="r")

    def get(self, i, offset=0, length=None):
        length = self.sizes[i] - offset if length is None else length
        return np.frombuffer(self.bin, self.dt, length, self.ptrs[i] + offset * np.dtype(self.dt).itemsize)


data = Megatron(prefix)
seq = int(flags[flags.index("--seq-length") + 1])
epochs = flags[flags.index("--train-data-exact-num-epochs") + 1] if "--train-data-exact-num-epochs" in flags else "1"
dsc = [d for d in glob.glob(f"{cache}/*.dsc") if "Dataset name train" in open(d).read() and
       re.search(rf"Sequence length {seq}\n", open(d).read()) and f"Number of epochs {epochs}\n" in open(d).read()]
assert len(dsc) == 1, dsc
doc_idx, sample_idx, shuffle_idx = (np.load(f"{dsc[0][:-4]}_{k}.npy") for k in ("doc_idx", "sample_idx", "shuffle_idx"))


class GPT(torch.utils.data.Dataset):  # megatron/data/gpt_dataset.py __getitem__ with --return-data-index
    def __len__(self):
        return sample_idx.shape[0] - 1

    def __getitem__(self, orig):
        idx = shuffle_idx[orig]
        (df, of), (dl, ol) = sample_idx[idx], sample_idx[idx + 1]
        if df == dl:
            s = data.get(doc_idx[df], offset=of, length=ol - of + 1)
        else:
            s = np.concatenate([data.get(doc_idx[df], offset=of)] + [data.get(doc_idx[i]) for i in range(df + 1, dl)] +
                               [data.get(doc_idx[dl], length=ol + 1)])
        return {'text': np.array(s, dtype=np.int64), 'index': np.array([orig], dtype=np.int64)}


neglog = None


def metric_total_vocab_freq(d):
    return torch.bincount(d['text'].view(-1), minlength=padded + 1)


def metric_vocab_rarity(d):
    return torch.tensor([int(torch.sum(neglog[d['text'][r]]).item()) for r in range(d['text'].size()[0])], dtype=torch.long)


theirs = os.path.join(work, "deepspeed")
ds = GPT()
for metric, fn in (("total_vocab_freq", metric_total_vocab_freq), ("vocab_rarity", metric_vocab_rarity)):
    if metric == "vocab_rarity":
        tvf = MMapIndexedDataset(f"{theirs}/total_vocab_freq/total_vocab_freq_metric_value", skip_warmup=True)
        f = np.copy(tvf[0])
        f[f == 0] = 1
        neglog = torch.tensor(np.log(f / sum(f)) * -1, dtype=torch.double)
    kind = 'accumulate_value_over_samples' if metric == "total_vocab_freq" else 'single_value_per_sample'
    for w in range(W):
        DataAnalyzer(ds, num_workers=W, worker_id=w, num_threads=T, batch_size=batch, metric_names=[metric],
                     metric_functions=[fn], metric_types=[kind], metric_dtypes=[torch.long], save_path=theirs).run_map()
    DataAnalyzer(ds, num_workers=W, num_threads=T, num_threads_reduce=R, batch_size=batch, metric_names=[metric],
                 metric_functions=[fn], metric_types=[kind], metric_dtypes=[torch.long], save_path=theirs).run_reduce()


def files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


a, b = files(ours), files(theirs)
assert a == b, f"file sets differ: {sorted(set(a) ^ set(b))[:10]}"
bad = [f for f in a if not filecmp.cmp(os.path.join(ours, f), os.path.join(theirs, f), shallow=False)]
print(f"{len(ds)} samples: {len(a)} files, {len(bad)} differ {bad[:10]}")
sys.exit(1 if bad else 0)
