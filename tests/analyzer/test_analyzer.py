"""analyze_data against an independent NumPy transcription of DeepSpeed's DataAnalyzer (data_analyzer.py: map with
its per-batch csv flushes, reduce with its per-thread chunk files and merge_file_) and of analyze_data.py's metrics
(total_vocab_freq, vocab_rarity for GPT; seqlen for BERT). Every file under --save is compared byte for byte, for
several worker/thread layouts (whose merged values must also agree with each other), and the refusals are checked
to leave the analysis directory untouched.

usage: test_analyzer.py BIN_DIR MAKE_FIXTURE_PY   (BIN_DIR holds analyze_data and preprocess_data)
"""
import glob
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not installed")
    sys.exit(77)

BIN, FIXTURE = sys.argv[1], sys.argv[2]
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


# ---- Megatron's and DeepSpeed's MMapIndexedDataset files ---------------------------------------------------------
MEGATRON_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
                   8: np.uint16}
DS_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint16, 7: np.uint32, 8: np.uint64}


def read_idx(prefix, table):
    b = open(prefix + ".idx", "rb").read()
    assert b[:9] == b"MMIDIDX\x00\x00"
    code = b[17]
    n, nd = np.frombuffer(b, np.uint64, 2, 18)
    n, nd = int(n), int(nd)
    sizes = np.frombuffer(b, np.int32, n, 34)
    ptrs = np.frombuffer(b, np.int64, n, 34 + 4 * n)
    doc = np.frombuffer(b, np.int64, nd, 34 + 12 * n)
    data = np.fromfile(prefix + ".bin", table[code])
    items = [data[p // data.itemsize: p // data.itemsize + s] for p, s in zip(ptrs, sizes)]
    return table[code], items, doc


def find_fit_int_dtype(lo, hi):  # deepspeed/runtime/data_pipeline/data_sampling/utils.py
    if lo >= 0:
        return np.uint8 if hi <= 255 else np.uint16 if hi <= 65535 else np.uint32 if hi <= 4294967295 else np.uint64
    if hi <= 127 and lo >= -128:
        return np.int8
    if hi <= 32767 and lo >= -32768:
        return np.int16
    if hi <= 2147483647 and lo >= -2147483648:
        return np.int32
    return np.int64


def split_index(start, end, num):
    b = np.linspace(start, end, dtype=int, num=num + 1)
    return [(int(b[i]), int(b[i + 1])) for i in range(num)]


class Builder:  # MMapIndexedDatasetBuilder + create/close_mmap_dataset_builder, writing into a dict of expected files
    def __init__(self, files, fname, dtype):
        self.files, self.fname, self.dtype = files, fname, dtype
        self.data, self.sizes, self.doc_idx = [], [], [0]

    def add_item(self, arr):
        a = np.array(arr, dtype=self.dtype).reshape(-1)
        self.data.append(a.tobytes())
        self.sizes.append(a.size)

    def merge_file_(self, other):
        idx = self.files[other + ".idx"]
        n, nd = (int(x) for x in np.frombuffer(idx, np.uint64, 2, 18))
        code = {v: k for k, v in DS_DTYPES.items()}[self.dtype]
        assert idx[17] == code
        offset = len(self.sizes)
        self.sizes.extend(np.frombuffer(idx, np.int32, n, 34).tolist())
        self.doc_idx.extend((offset + np.frombuffer(idx, np.int64, nd, 34 + 12 * n))[1:].tolist())
        self.data.append(self.files[other + ".bin"])

    def close(self):
        self.doc_idx.append(len(self.sizes))
        self.files[self.fname + ".bin"] = b"".join(self.data)
        code = {v: k for k, v in DS_DTYPES.items()}[self.dtype]
        sizes = np.array(self.sizes, dtype=np.int64)
        ptrs = np.concatenate([[0], np.cumsum(sizes * np.dtype(self.dtype).itemsize)[:-1]]).astype(np.int64) \
            if len(sizes) else np.zeros(0, np.int64)
        self.files[self.fname + ".idx"] = (b"MMIDIDX\x00\x00" + np.uint64(1).tobytes() + bytes([code]) +
                                           np.uint64(len(sizes)).tobytes() + np.uint64(len(self.doc_idx)).tobytes() +
                                           sizes.astype(np.int32).tobytes() + ptrs.tobytes() +
                                           np.array(self.doc_idx, np.int64).tobytes())


# ---- the oracle: DataAnalyzer.run_map / run_reduce for these metrics ---------------------------------------------
def oracle_map(files, samples, metric, kind, W, w, T, threads, batch, fn):
    """samples: the metric input of each sample; fn(sample) -> metric value(s). Mirrors run_map_helper."""
    for t in threads:
        lo, hi = split_index(*split_index(0, len(samples), W)[w], T)[t]
        d = f"{metric}/worker{w}_thread{t}/"
        if kind == "single":
            b = Builder(files, f"{d}{metric}_sample_to_metric", np.int64)
            pending, csv = {}, {}
            for bs in range(lo, hi, batch):
                for i in range(bs, min(bs + batch, hi)):
                    v = fn(samples[i])
                    b.add_item([v])
                    pending.setdefault(v, []).append(i)
                for v in pending:  # after each batch: lists longer than 100 become one csv row
                    if len(pending[v]) > 100:
                        csv[v] = csv.get(v, "") + ",".join(map(str, pending[v])) + "\r\n"
                        pending[v] = []
            b.close()
            for v in pending:
                if pending[v]:
                    csv[v] = csv.get(v, "") + ",".join(map(str, pending[v])) + "\r\n"
            for v, text in csv.items():
                files[f"{d}{metric}_metric_to_sample_{v}.csv"] = text.encode()
        else:
            value = None
            for i in range(lo, hi):
                value = fn(samples[i]) if value is None else value + fn(samples[i])
            b = Builder(files, f"{d}{metric}_metric_value", np.int64)
            b.add_item(value)
            b.close()


def oracle_reduce(files, metric, kind, N, W, T, R):
    m = f"{metric}/{metric}"
    if kind == "accumulate":
        value = None
        for w in range(W):
            for t in range(T):
                _, items, _ = parse(files, f"{metric}/worker{w}_thread{t}/{metric}_metric_value")
                value = np.copy(items[0]) if value is None else value + items[0]
        b = Builder(files, f"{m}_metric_value", find_fit_int_dtype(int(value.min()), int(value.max())))
        b.add_item(value.astype(np.int64))
        b.close()
        return
    per = []
    for w in range(W):
        for t in range(T):
            per.append(np.concatenate(parse(files, f"{metric}/worker{w}_thread{t}/{metric}_sample_to_metric")[1]))
    values = np.concatenate(per)
    assert len(values) == N
    uniq = sorted(set(values.tolist()))
    sdt, mdt = find_fit_int_dtype(0, N - 1), find_fit_int_dtype(min(uniq), max(uniq))
    wt = [(w, t) for w in range(W) for t in range(T)]
    for r, (lo, hi) in enumerate(split_index(0, len(wt), R)):
        b = Builder(files, f"{m}_sample_to_metric_thread{r}", mdt)
        for k in range(lo, hi):
            for v in per[k]:
                b.add_item([v])
        b.close()
    b = Builder(files, f"{m}_sample_to_metric", mdt)
    for r in range(R):
        b.merge_file_(f"{m}_sample_to_metric_thread{r}")
    b.close()
    for r, (lo, hi) in enumerate(split_index(0, len(uniq), R)):
        bs, bm = Builder(files, f"{m}_index_to_sample_thread{r}", sdt), Builder(files, f"{m}_index_to_metric_thread{r}", mdt)
        for v in uniq[lo:hi]:
            samples = []
            for w in range(W):  # merge_metric_to_sample: the csv rows of every worker and thread, in order
                for t in range(T):
                    text = files.get(f"{metric}/worker{w}_thread{t}/{metric}_metric_to_sample_{v}.csv")
                    if text is not None:
                        for row in text.decode().split("\r\n")[:-1]:
                            samples += [int(x) for x in row.split(",")]
            bs.add_item(samples)
            bm.add_item([v])
        bs.close()
        bm.close()
    for name in ("index_to_sample", "index_to_metric"):
        b = Builder(files, f"{m}_{name}", sdt if name == "index_to_sample" else mdt)
        for r in range(R):
            b.merge_file_(f"{m}_{name}_thread{r}")
        b.close()
    _, its, _ = parse(files, f"{m}_index_to_sample")
    b = Builder(files, f"{m}_index_to_sample_percentile_merged", sdt)
    step = max(1, len(its) // 100)
    for v in range(0, len(its), step):
        b.add_item(np.concatenate(its[v:min(len(its), v + step)]).astype(np.int64))
    b.close()


def parse(files, prefix):
    d = tempfile.mkdtemp()
    try:
        for e in ("idx", "bin"):
            open(os.path.join(d, "x." + e), "wb").write(files[prefix + "." + e])
        return read_idx(os.path.join(d, "x"), DS_DTYPES)
    finally:
        shutil.rmtree(d)


def tree(root):
    out = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def run(args, expect_ok=True):
    r = subprocess.run([os.path.join(BIN, "analyze_data")] + args, capture_output=True, text=True,
                       env=dict(os.environ, ZT_PROGRESS_BAR="0"))
    if expect_ok and r.returncode != 0:
        print("FAIL: analyze_data", " ".join(args), "\n", r.stdout[-2000:], r.stderr[-2000:])
        sys.exit(1)
    return r


def compare(got, want, what):
    extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    check(not extra and not missing, f"{what}: files differ: extra {extra[:5]}, missing {missing[:5]}")
    for k in sorted(want):
        check(got[k] == want[k], f"{what}: {k} differs from DeepSpeed's (oracle {len(want[k])} bytes, "
                                 f"analyze_data {len(got[k])} bytes)")


def refused(args, needle, save, what):
    before = tree(save) if os.path.isdir(save) else None
    r = run(args, expect_ok=False)
    check(r.returncode != 0 and needle in r.stderr, f"{what}: expected an error containing {needle!r}, got rc "
                                                     f"{r.returncode}: {r.stderr[-600:]}")
    after = tree(save) if os.path.isdir(save) else None
    check(before == after, f"{what}: the refused run changed {save}")


def main():
    tmp = tempfile.mkdtemp()
    try:
        body(tmp)
    finally:
        shutil.rmtree(tmp)
    print(f"PASS: {checks} checks")


def gpt_case(tmp, V, docs, seq, split, epochs, layouts, want_n=0):
    """A GPT corpus of NullTokenizer ids (eod appended), analyzed in each layout and compared with the oracle."""
    os.makedirs(tmp)
    with open(f"{tmp}/c.jsonl", "w") as f:
        for ids in docs:
            f.write(json.dumps({"text": " ".join(map(str, ids))}) + "\n")
    subprocess.run([os.path.join(BIN, "preprocess_data"), "--input", f"{tmp}/c.jsonl", "--output-prefix",
                    f"{tmp}/gpt", "--tokenizer-type", "NullTokenizer", "--vocab-size", str(V), "--append-eod",
                    "--workers", "1"], check=True, capture_output=True)
    prefix = f"{tmp}/gpt_text_document"
    padded = (V + 1 + 127) // 128 * 128  # NullTokenizer's vocab_size is V + 1 (its eod), padded to 128
    common = ["--analyzing-data-type", "GPT", "--tokenizer-type", "NullTokenizer", "--vocab-size", str(V),
              "--data-path", prefix, "--seq-length", str(seq), "--split", split, "--num-layers", "1",
              "--hidden-size", "1", "--num-attention-heads", "1", "--return-data-index", "--distributed-backend",
              "gloo", "--train-data-exact-num-epochs", str(epochs)]
    run(common + ["--analyzing-task", "map", "--analyzing-metric", "total_vocab_freq", "--save", f"{tmp}/probe"])
    # the train samples as Megatron's GPTDataset.__getitem__ assembles them from the cached index arrays
    _, docs, _ = read_idx(prefix, MEGATRON_DTYPES)
    dsc = [d for d in glob.glob(f"{tmp}/index-cache/*.dsc") if "Dataset name train" in open(d).read()]
    check(len(dsc) == 1, f"one train index in the cache, found {dsc}")
    h = dsc[0][:-4]
    doc_idx, sample_idx, shuffle_idx = (np.load(f"{h}_{k}.npy") for k in ("doc_idx", "sample_idx", "shuffle_idx"))
    samples = []
    for i in range(sample_idx.shape[0] - 1):
        j = shuffle_idx[i]
        (df, of), (dl, ol) = sample_idx[j], sample_idx[j + 1]
        if df == dl:
            s = docs[doc_idx[df]][of:ol + 1]
        else:
            s = np.concatenate([docs[doc_idx[df]][of:]] + [docs[doc_idx[k]] for k in range(df + 1, dl)] +
                               [docs[doc_idx[dl]][:ol + 1]])
        samples.append(s.astype(np.int64))
    N = len(samples)
    check((want_n or N > 300) and all(len(s) == seq + 1 for s in samples), f"{N} train samples of {seq + 1} tokens")

    # analyze_data.py's metrics
    def vocab_freq(s):
        return np.bincount(s, minlength=padded + 1)
    freq = np.sum([vocab_freq(s) for s in samples], axis=0)
    tvf = np.copy(freq).astype(find_fit_int_dtype(int(freq.min()), int(freq.max())))
    tvf[tvf == 0] = 1
    neglog = np.log(tvf / sum(tvf)) * -1

    def rarity(s):
        return int(np.sum(neglog[s]))
    if want_n:
        check(N == want_n, f"{N} train samples, {want_n} planned")
    else:
        check(len(set(rarity(s) for s in samples)) > 200, "vocab_rarity takes more than 200 values (percentile merging)")

    # ---- layouts: (workers, threads, reduce threads, batch size, specific-thread passes for worker 0) ----
    merged = {}
    for W, T, R, batch, passes in layouts:
        save = f"{tmp}/out_{W}_{T}_{R}"
        want = {}
        for metric, kind, fn in (("total_vocab_freq", "accumulate", vocab_freq), ("vocab_rarity", "single", rarity)):
            a = common + ["--analyzing-metric", metric, "--save", save, "--analyzing-num-workers", str(W),
                          "--analyzing-num-threads", str(T), "--global-batch-size", str(batch)]
            procs = []
            for w in range(W):
                for threads in (passes if passes and w == 0 else [None]):
                    extra = ["--analyzing-specific-threads"] + [str(t) for t in threads] if threads else []
                    cmd = [os.path.join(BIN, "analyze_data")] + a + ["--analyzing-task", "map",
                                                                     "--analyzing-worker-id", str(w)] + extra
                    if threads:  # the passes of one worker run one after the other
                        subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, ZT_PROGRESS_BAR="0"))
                    else:  # workers run at once, as on separate nodes
                        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
                    oracle_map(want, samples, metric, kind, W, w, T, threads or range(T), batch, fn)
            for pr in procs:
                check(pr.wait() == 0, f"map worker failed: {pr.stderr.read().decode()[-500:]}")
            run(a + ["--analyzing-task", "reduce", "--analyzing-num-threads-reduce", str(R)])
            oracle_reduce(want, metric, kind, N, W, T, R)
        got = tree(save)
        compare(got, want, f"layout W={W} T={T} R={R} batch={batch}")
        # the merged values do not depend on the layout (the .idx doc_idx records the reduce's chunks)
        keys = ["total_vocab_freq/total_vocab_freq_metric_value.bin", "total_vocab_freq/total_vocab_freq_metric_value.idx"] + \
            [f"vocab_rarity/vocab_rarity_{n}.bin" for n in ("sample_to_metric", "index_to_sample", "index_to_metric",
                                                            "index_to_sample_percentile_merged")] + \
            ["vocab_rarity/vocab_rarity_index_to_sample_percentile_merged.idx"]
        sig = {k: got[k] for k in keys}
        for k in keys:
            check(k in got, f"{k} written")
        if merged:
            check(sig == merged, f"layout W={W} T={T} R={R}: merged results differ from the one-thread run")
        merged = sig
    # the values themselves, read back as DeepSpeed's sampler reads them
    save = "{}/out_{}_{}_{}".format(tmp, *layouts[0][:3])
    dt, items, _ = read_idx(f"{save}/total_vocab_freq/total_vocab_freq_metric_value", DS_DTYPES)
    check(dt == find_fit_int_dtype(0, int(freq.max())) and np.array_equal(items[0], freq), "total_vocab_freq: the token counts")
    dt, items, _ = read_idx(f"{save}/vocab_rarity/vocab_rarity_sample_to_metric", DS_DTYPES)
    check(np.array_equal(np.concatenate(items), [rarity(s) for s in samples]), "vocab_rarity per sample")
    dt, its, _ = read_idx(f"{save}/vocab_rarity/vocab_rarity_index_to_sample", DS_DTYPES)
    check(dt == find_fit_int_dtype(0, N - 1) and sorted(np.concatenate(its).tolist()) == list(range(N)),
          "index_to_sample: every sample once")
    if want_n:
        check(dt == (np.uint8 if want_n <= 256 else np.uint16), f"{want_n} samples: indexes stored as {dt}")
    return common, samples, prefix


def body(tmp):
    # power laws over 300 ids, each document its own skew (samples' rarities spread over 300 values), 2 epochs
    rng = np.random.RandomState(7)
    V = 300
    docs = []
    for _ in range(1500):
        p = 1.0 / np.arange(1, V + 1) ** rng.uniform(0, 2.5)
        docs.append(rng.choice(V, size=rng.randint(1, 61), p=p / p.sum()))
    layouts = [(1, 1, 1, 7, None), (2, 3, 2, 7, None), (3, 2, 4, 150, [[1], [0]]), (1, 4, 3, 1000, None)]
    common, samples, prefix = gpt_case(f"{tmp}/g", V, docs, 64, "90,8,2", 2, layouts)
    N = len(samples)
    # the sample-index dtype at its boundary: 256 samples (indexes up to 255: uint8) and 257 (uint16)
    for n in (256, 257):
        total = n * 16 + 1  # one epoch of one split: (tokens - 1) // seq_length samples
        rest = total - 255 - 3 * ((total - 255) % 2)
        docs = [np.full(254, 3)] + [np.full(1, 5)] * (rest // 2) + [np.full(2, 7)] * ((total - 255) % 2)
        gpt_case(f"{tmp}/b{n}", 20, docs, 16, "100,0,0", 1, [(1, 2, 2, 3, None)], want_n=n)
    # ---- BERT seqlen over a sentence-split WordPiece corpus --------------------------------------------------
    subprocess.run([sys.executable, FIXTURE, f"{tmp}/fx"], check=True, capture_output=True)
    subprocess.run([os.path.join(BIN, "preprocess_data"), "--input", f"{tmp}/fx/corpus.jsonl", "--output-prefix",
                    f"{tmp}/fx/corpus", "--workers", "1", "--vocab-file", f"{tmp}/fx/vocab.txt", "--tokenizer-type",
                    "BertWordPieceLowerCase", "--split-sentences"], check=True, capture_output=True)
    bprefix = f"{tmp}/fx/corpus_text_sentence"
    bseq = 32
    bcommon = ["--analyzing-data-type", "BERT", "--tokenizer-type", "BertWordPieceLowerCase", "--vocab-file",
               f"{tmp}/fx/vocab.txt", "--data-path", bprefix, "--seq-length", str(bseq), "--split", "949,50,1",
               "--train-data-exact-num-epochs", "3", "--analyzing-metric", "seqlen", "--global-batch-size", "1"]
    bsave = f"{tmp}/bert"
    os.makedirs(f"{tmp}/fx", exist_ok=True)
    for w in range(2):
        run(bcommon + ["--analyzing-task", "map", "--save", bsave, "--analyzing-num-workers", "2",
                       "--analyzing-worker-id", str(w), "--analyzing-num-threads", "2"])
    run(bcommon + ["--analyzing-task", "reduce", "--save", bsave, "--analyzing-num-workers", "2",
                   "--analyzing-num-threads", "2", "--analyzing-num-threads-reduce", "3"])
    maps = glob.glob(f"{tmp}/fx/corpus_text_sentence_train_indexmap_exact3ep_*.npy")
    check(len(maps) == 1, f"one BERT train samples mapping, found {maps}")
    mapping = np.load(maps[0])
    _, sents, _ = read_idx(bprefix, MEGATRON_DTYPES)
    sent_len = np.array([len(s) for s in sents])
    # a sample: [CLS] A [SEP] B [SEP] with A + B truncated to the row's target length (binary head: 3 specials)
    seqlens = [min(int(sent_len[a:b].sum()), int(tgt)) + 3 for a, b, tgt in mapping]
    want = {}
    for w in range(2):
        oracle_map(want, seqlens, "seqlen", "single", 2, w, 2, range(2), 1, lambda v: v)
    oracle_reduce(want, "seqlen", "single", len(seqlens), 2, 2, 3)
    compare(tree(bsave), want, "BERT seqlen")

    # ---- BERT total_vocab_freq, vocab_rarity and seqlen_vocab_rarity (analyze_data.py's padding-mask-weighted
    # variants, unmasked text):
    # at --seq-length 512 with --short-seq-prob 0 every document fits its sample, so a sample's tokens are its
    # sentences' plus [CLS] and two [SEP] whatever the (random) A/B split and swap
    vocab = open(f"{tmp}/fx/vocab.txt").read().split("\n")[:-1]
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    bpadded = (len(vocab) + 127) // 128 * 128
    vcommon = bcommon[:bcommon.index("--seq-length")] + ["--seq-length", "512", "--short-seq-prob", "0", "--split",
                                                        "949,50,1", "--train-data-exact-num-epochs", "1",
                                                        "--global-batch-size", "5", "--mask-prob", "0.15"]
    vsave = f"{tmp}/bert_vocab"
    for metric in ("total_vocab_freq", "vocab_rarity", "seqlen_vocab_rarity"):
        for w in range(2):
            run(vcommon + ["--analyzing-metric", metric, "--analyzing-task", "map", "--save", vsave,
                           "--analyzing-num-workers", "2", "--analyzing-worker-id", str(w), "--analyzing-num-threads", "2"])
        run(vcommon + ["--analyzing-metric", metric, "--analyzing-task", "reduce", "--save", vsave,
                       "--analyzing-num-workers", "2", "--analyzing-num-threads", "2", "--analyzing-num-threads-reduce", "3"])
    maps = glob.glob(f"{tmp}/fx/corpus_text_sentence_train_indexmap_exact1ep_509msl_0.00ssp_*.npy")
    check(len(maps) == 1, f"one BERT train samples mapping at 509 tokens, found {maps}")
    mapping = np.load(maps[0])
    check(all(int(sent_len[a:b].sum()) <= int(tgt) for a, b, tgt in mapping), "no BERT sample is truncated")
    bsamples = [np.concatenate([np.concatenate(sents[a:b]).astype(np.int64), [cls, sep, sep]]) for a, b, _ in mapping]
    bfreq = np.sum([np.bincount(x, minlength=bpadded + 1) for x in bsamples], axis=0)
    f = np.copy(bfreq).astype(find_fit_int_dtype(int(bfreq.min()), int(bfreq.max())))
    f[f == 0] = 1
    bneglog = np.log(f / sum(f)) * -1
    coeff = 10 ** (math.ceil(math.log(512 * bneglog.max(), 10)) + 1)  # analyze_data.py's args.seqlen_coeff
    check(1000 < 512 * bneglog.max() < 10000 and coeff == 100000, f"seqlen_vocab_rarity's coefficient {coeff}")
    want = {}
    for metric, kind, fn in (("total_vocab_freq", "accumulate", lambda x: np.bincount(x, minlength=bpadded + 1)),
                             ("vocab_rarity", "single", lambda x: int(np.sum(bneglog[x]))),
                             ("seqlen_vocab_rarity", "single", lambda x: len(x) * coeff + int(np.sum(bneglog[x])))):
        for w in range(2):
            oracle_map(want, bsamples, metric, kind, 2, w, 2, range(2), 5, fn)
        oracle_reduce(want, metric, kind, len(bsamples), 2, 2, 3)
    compare(tree(vsave), want, "BERT total_vocab_freq, vocab_rarity and seqlen_vocab_rarity")

    # ---- refusals, each leaving the analysis directory as it was ----------------------------------------------
    s1 = f"{tmp}/g/out_1_1_1"
    a1 = common + ["--save", s1]
    refused(a1 + ["--analyzing-task", "map", "--analyzing-metric", "vocab_rarity"], "already holds map results", s1,
            "map over an earlier map")
    refused(a1 + ["--analyzing-task", "reduce", "--analyzing-metric", "vocab_rarity"], "already exists", s1,
            "reduce over an earlier reduce")
    s2 = f"{tmp}/fresh"
    os.makedirs(s2)
    a2 = common + ["--save", s2]
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "vocab_rarity"],
            "needs the reduced total_vocab_freq result", s2, "vocab_rarity before total_vocab_freq")
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "total_vocab_freq", "--analyzing-num-workers", "2",
                  "--analyzing-worker-id", "2"], "--analyzing-worker-id 2: workers are numbered 0..1", s2,
            "worker id out of range")
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "total_vocab_freq", "--analyzing-num-threads", "3",
                  "--analyzing-specific-threads", "3"], "--analyzing-specific-threads 3: threads are numbered 0..2",
            s2, "specific thread out of range")
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "total_vocab_freq", "--analyzing-num-threads",
                  str(N + 5)], "gets no samples", s2, "more threads than samples for total_vocab_freq")
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "seqlen"], "GPT data has fixed seqlen", s2,
            "seqlen on GPT")
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "seqlen_vocab_rarity"], "GPT data has fixed seqlen",
            s2, "seqlen_vocab_rarity on GPT")
    refused(a2 + ["--analyzing-task", "maps", "--analyzing-metric", "total_vocab_freq"],
            "invalid choice: 'maps'", s2, "bad task")
    refused(a2 + ["--analyzing-task", "map", "--analyzing-metric", "total_vocab_freq", "--analyzing-num-wrkers", "2"],
            "did you mean --analyzing-num-workers", s2, "misspelt flag")
    bad = [x if x != prefix else f"{tmp}/nope_text_document" for x in a2]
    refused(bad + ["--analyzing-task", "map", "--analyzing-metric", "total_vocab_freq"], "nope_text_document", s2,
            "missing dataset")
    # the map of two workers, reduced with a worker missing, or with another thread count
    s3 = f"{tmp}/partial"
    a3 = common + ["--save", s3, "--analyzing-metric", "vocab_rarity", "--analyzing-num-workers", "2",
                   "--analyzing-num-threads", "2"]
    os.makedirs(f"{s3}/total_vocab_freq")
    for e in ("bin", "idx"):
        shutil.copy(f"{s1}/total_vocab_freq/total_vocab_freq_metric_value.{e}", f"{s3}/total_vocab_freq/")
    run(a3 + ["--analyzing-task", "map", "--analyzing-worker-id", "0"])
    refused(a3 + ["--analyzing-task", "reduce"], "worker 1 thread 0 of the map", s3, "reduce with a worker missing")
    run(a3 + ["--analyzing-task", "map", "--analyzing-worker-id", "1"])
    refused([x if x != "--analyzing-num-threads" else "--analyzing-num-threads" for x in a3][:-2] +
            ["--analyzing-num-workers", "1", "--analyzing-num-threads", "4", "--analyzing-task", "reduce"],
            "did not finish", s3, "reduce with another layout than the map")
    refused([x if x != "64" else "32" for x in a3] + ["--analyzing-task", "reduce"], "ran with other flags", s3,
            "reduce of another --seq-length (another number of samples) than the map's")
    # a damaged map result: the second item's pointer moved, then the .bin one byte short
    part = f"{s3}/vocab_rarity/worker1_thread1/vocab_rarity_sample_to_metric"
    idx, binary = open(part + ".idx", "rb").read(), open(part + ".bin", "rb").read()
    n = int(np.frombuffer(idx, np.uint64, 1, 18)[0])
    open(part + ".idx", "wb").write(idx[:34 + 4 * n + 8] + np.int64(16).tobytes() + idx[34 + 4 * n + 16:])
    refused(a3 + ["--analyzing-task", "reduce"], "item 1 has size 1 at byte 16", s3, "reduce of a moved item")
    open(part + ".idx", "wb").write(idx)
    open(part + ".bin", "wb").write(binary[:-1])
    refused(a3 + ["--analyzing-task", "reduce"], f"holds {len(binary) - 1} bytes", s3, "reduce of a short .bin")
    open(part + ".bin", "wb").write(binary)
    # another vocabulary than the one total_vocab_freq was counted with
    s4 = f"{tmp}/othervocab"
    os.makedirs(f"{s4}/total_vocab_freq")
    for e in ("bin", "idx"):
        shutil.copy(f"{s1}/total_vocab_freq/total_vocab_freq_metric_value.{e}", f"{s4}/total_vocab_freq/")
    refused([x if x != str(V) else "500" for x in common] + ["--save", s4, "--analyzing-metric", "vocab_rarity",
                                                             "--analyzing-task", "map"],
            "computed with other tokenizer flags", s4, "vocab_rarity with another vocabulary")
    # the --save conflicts are refused before any dataset is built: no index cache appears for a fresh copy
    os.makedirs(f"{tmp}/copy")
    for e in ("bin", "idx"):
        shutil.copy(f"{prefix}.{e}", f"{tmp}/copy/")
    fresh = [x if x != prefix else f"{tmp}/copy/" + os.path.basename(prefix) for x in a1]
    refused(fresh + ["--analyzing-task", "map", "--analyzing-metric", "vocab_rarity"], "already holds map results",
            s1, "map over an earlier map, before the dataset")
    refused(fresh + ["--analyzing-task", "reduce", "--analyzing-metric", "vocab_rarity"], "already exists", s1,
            "reduce over an earlier reduce, before the dataset")
    refused([x if x != prefix else f"{tmp}/copy/" + os.path.basename(prefix) for x in a3] +
            ["--analyzing-task", "reduce", "--analyzing-num-workers", "3"], "is missing", s3,
            "reduce with a worker missing, before the dataset")
    check(not os.path.exists(f"{tmp}/copy/index-cache"), "no index files were built for the refused runs")


main()
