#!/usr/bin/env python3
"""GPT dataset parity: a NumPy reimplementation of Megatron-DeepSpeed's index building (split,
number of epochs, doc_idx / sample_idx / shuffle_idx with numpy.random.RandomState, the 0.8
last-epoch rule, blending with 1.005 oversampling and the greedy choice, md5-named caches, the
ltor masks) written from the reference description, against what gpt_dataset_dump (our C) builds.

usage: test_gpt_dataset.py PATH/TO/gpt_dataset_dump
Exit 77 (SKIP) without NumPy."""
import hashlib
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not available to this Python (%s)" % sys.executable)
    sys.exit(77)

DUMP = sys.argv[1]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS", name)
    else:
        failed += 1
        print("FAIL", name, detail)


# ---- the format (Megatron's MMapIndexedDataset), written independently ----------------------------
DTYPE_CODES = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.uint16: 8}


def write_dataset(prefix, docs, dtype):
    sizes = np.array([len(d) for d in docs], dtype=np.int32)
    itemsize = np.dtype(dtype).itemsize
    pointers = np.zeros(len(docs), dtype=np.int64)
    if len(docs) > 1:
        pointers[1:] = np.cumsum(sizes[:-1].astype(np.int64)) * itemsize
    doc_idx = np.arange(len(docs) + 1, dtype=np.int64)
    with open(prefix + ".bin", "wb") as f:
        for d in docs:
            f.write(np.asarray(d, dtype=dtype).tobytes())
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", DTYPE_CODES[dtype]))
        f.write(struct.pack("<Q", len(sizes)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(sizes.tobytes())
        f.write(pointers.tobytes())
        f.write(doc_idx.tobytes())
    return sizes


def make_docs(rng, n, max_len, vocab, zero_every=0):
    docs = []
    for i in range(n):
        length = 0 if zero_every and i % zero_every == 7 else int(rng.randint(1, max_len))
        docs.append(rng.randint(0, vocab, size=length))
    return docs


# ---- Megatron's algorithms, reimplemented from the reference -------------------------------------
def split_bounds(split_string, size):
    sep = "," if "," in split_string else "/" if "/" in split_string else None
    splits = [float(s) for s in split_string.split(sep)] if sep else [float(split_string)]
    while len(splits) < 3:
        splits.append(0.0)
    total = sum(splits)
    splits = [s / total for s in splits]
    idx = [0]
    for i, s in enumerate(splits):
        idx.append(idx[i] + int(round(s * float(size))))
    diff = idx[-1] - size
    for i in range(1, len(idx)):
        idx[i] -= diff
    return idx


def num_epochs(tpe, seq, ns):
    epochs, total = 0, 0
    while True:
        epochs += 1
        total += tpe
        if (total - 1) // seq >= ns:
            return epochs


def build_doc_idx(documents, epochs, rng, separate_last):
    if not separate_last or epochs == 1:
        doc_idx = np.mgrid[0:epochs, 0:len(documents)][1]
        doc_idx[:] = documents
        doc_idx = doc_idx.reshape(-1).astype(np.int32)
        rng.shuffle(doc_idx)
        return doc_idx
    first = build_doc_idx(documents, epochs - 1, rng, False)
    last = build_doc_idx(documents, 1, rng, False)
    return np.concatenate((first, last))


def build_sample_idx(sizes, doc_idx, seq, epochs, tpe):
    n = (epochs * tpe - 1) // seq
    out = np.zeros((n + 1, 2), dtype=np.int64)
    pos, offset = 0, 0
    for k in range(1, n + 1):
        remaining = seq + 1
        while remaining != 0:
            doc_len = int(sizes[doc_idx[pos]]) - offset
            remaining -= doc_len
            if remaining <= 0:
                offset += remaining + doc_len - 1
                remaining = 0
            else:
                pos += 1
                offset = 0
        out[k] = (pos, offset)
    return out


def build_shuffle_idx(num, total, rng):
    dtype = np.uint32 if total < np.iinfo(np.uint32).max - 1 else np.int64
    first = np.arange(0, num, dtype=dtype)
    rng.shuffle(first)
    if num == total:
        return first
    last = np.arange(num, total, dtype=dtype)
    rng.shuffle(last)
    return np.concatenate((first, last))


class GPTDataset:
    def __init__(self, docs, sizes, documents, ns, seq, seed, exact=None):
        self.docs, self.seq = docs, seq
        tpe = int(np.sum(sizes[documents]))
        epochs = exact if exact else num_epochs(tpe, seq, ns)
        rng = np.random.RandomState(seed=seed)
        separate = False
        if epochs > 1 and not exact:
            from_prev = ((epochs - 1) * tpe - 1) // seq
            per_epoch = (tpe - 1) // seq
            separate = (ns - from_prev) < int(0.80 * per_epoch)
        self.epochs = epochs
        self.doc_idx = build_doc_idx(documents, epochs, rng, separate)
        self.sample_idx = build_sample_idx(sizes, self.doc_idx, seq, epochs, tpe)
        num = from_prev if separate else self.sample_idx.shape[0] - 1
        self.shuffle_idx = build_shuffle_idx(num, self.sample_idx.shape[0] - 1, rng)
        self.separate = separate

    def __len__(self):
        return self.shuffle_idx.shape[0]

    def __getitem__(self, i):
        j = self.shuffle_idx[i]
        (df, of), (dl, ol) = self.sample_idx[j], self.sample_idx[j + 1]
        if df == dl:
            return np.asarray(self.docs[self.doc_idx[df]][of:ol + 1])
        parts = [self.docs[self.doc_idx[df]][of:]]
        parts += [self.docs[self.doc_idx[k]] for k in range(df + 1, dl)]
        parts.append(self.docs[self.doc_idx[dl]][:ol + 1])
        return np.concatenate(parts)


def blend_indices(weights, size):
    w = np.array(weights, dtype=np.float64)
    w /= np.sum(w)
    index = np.zeros(size, dtype=np.int32)
    sample = np.zeros(size, dtype=np.int64)
    current = [0] * len(w)
    for k in range(size):
        kd = max(float(k), 1.0)
        errors = [w[i] * kd - current[i] for i in range(len(w))]
        best = int(np.argmax(errors))
        index[k], sample[k] = best, current[best]
        current[best] += 1
    return index, sample


def weights_and_samples(weights, num_samples):
    total = 0.0
    for w in weights:
        total += w
    weights = [w / total for w in weights]
    return weights, [[int(math.ceil(n * w * 1.005)) for n in num_samples] for w in weights]


# ---- running our C -------------------------------------------------------------------------------
def run_dump(outdir, seq, seed, split, ns, words, cache="-", exact=0, mode="--data-path"):
    os.makedirs(outdir, exist_ok=True)
    cmd = [DUMP, "data", outdir, str(seq), str(seed), split, str(ns[0]), str(ns[1]), str(ns[2]), cache,
           str(exact), mode] + words
    return subprocess.run(cmd, capture_output=True, text=True)


def load(outdir, name):
    return np.load(os.path.join(outdir, name + ".npy"))


def sizes_of(outdir):
    with open(os.path.join(outdir, "sizes.txt")) as f:
        return [int(x) for x in f.read().split()]


def compare_single(tag, outdir, k, ref):
    check("%s_doc_idx" % tag, np.array_equal(load(outdir, "split%d_doc_idx" % k), ref.doc_idx))
    check("%s_sample_idx" % tag, np.array_equal(load(outdir, "split%d_sample_idx" % k), ref.sample_idx))
    ours = load(outdir, "split%d_shuffle_idx" % k)
    check("%s_shuffle_idx" % tag, np.array_equal(ours, ref.shuffle_idx.astype(np.int64)),
          "first entries ours %s, reference %s" % (ours[:6], ref.shuffle_idx[:6]))
    samples = load(outdir, "split%d_samples" % k)
    want = np.stack([ref[i] for i in range(len(ref))]) if len(ref) else samples
    check("%s_samples" % tag, samples.shape == want.shape and np.array_equal(samples, want),
          "shape ours %s, reference %s" % (samples.shape, want.shape))


def main():
    tmp = tempfile.mkdtemp(prefix="zt_gptds_")
    rng = np.random.RandomState(7)
    docs_a = make_docs(rng, 300, 160, 50000, zero_every=23)
    sizes_a = write_dataset(os.path.join(tmp, "a_text_document"), docs_a, np.uint16)
    docs_b = make_docs(rng, 120, 400, 70000)
    sizes_b = write_dataset(os.path.join(tmp, "b_text_document"), docs_b, np.int32)
    docs_c = make_docs(rng, 40, 90, 1000)
    sizes_c = write_dataset(os.path.join(tmp, "c_text_document"), docs_c, np.uint16)
    prefix_a = os.path.join(tmp, "a_text_document")

    # 1. one dataset, --split '969, 30, 1': one epoch; several epochs with and without a separate last
    #    epoch (the 0.8 rule), and --train-data-exact-num-epochs
    split = "969, 30, 1"
    bounds = split_bounds(split, len(docs_a))
    tpe = int(sizes_a[bounds[0]:bounds[1]].sum())
    per_epoch = (tpe - 1) // 64
    cases = [("one_epoch", 64, 1234, [200, 30, 10], 0),
             ("separate_last_epoch", 64, 99, [2 * per_epoch + per_epoch // 4, 40, 12], 0),
             ("joined_last_epoch", 64, 5, [2 * per_epoch + (per_epoch * 9) // 10, 40, 12], 0),
             ("exact_epochs", 33, 42, [50, 8, 8], 3)]
    for tag, seq, seed, ns, exact in cases:
        out = os.path.join(tmp, tag)
        r = run_dump(out, seq, seed, split, ns, [prefix_a], exact=exact)
        check(tag + "_runs", r.returncode == 0, r.stderr[-2000:])
        if r.returncode != 0:
            continue
        for k in range(3):
            if bounds[k + 1] <= bounds[k]:  # an empty split: Megatron builds no dataset for it
                check("%s_split%d_absent" % (tag, k), sizes_of(out)[k] == -1, str(sizes_of(out)))
                continue
            documents = np.arange(bounds[k], bounds[k + 1], dtype=np.int32)
            ref = GPTDataset(docs_a, sizes_a, documents, ns[k], seq, seed, exact if k == 0 else None)
            compare_single("%s_split%d" % (tag, k), out, k, ref)
            if k == 0 and tag in ("separate_last_epoch", "joined_last_epoch"):
                check(tag + "_rule", ref.separate == (tag == "separate_last_epoch") and ref.epochs == 3,
                      "epochs %d separate %s" % (ref.epochs, ref.separate))
        # the cache: md5 of Megatron's description, in dirname(prefix)/index-cache, Megatron's dtypes
        desc = ("GPT Dataset\n\nData prefix %s\nDataset name train\nNumber of samples %d\nNumber of epochs %d\n"
                "Sequence length %d\nRandom seed %d\nSplit %s\n" %
                (prefix_a, ns[0], GPTDataset(docs_a, sizes_a, np.arange(bounds[0], bounds[1], dtype=np.int32),
                                             ns[0], seq, seed, exact or None).epochs, seq, seed, split))
        h = hashlib.md5(desc.encode("utf-8")).hexdigest()
        cache = os.path.join(tmp, "index-cache")
        names = [h + ".dsc", h + "_doc_idx.npy", h + "_sample_idx.npy", h + "_shuffle_idx.npy"]
        present = all(os.path.isfile(os.path.join(cache, n)) for n in names)
        check(tag + "_cache_named_by_md5", present, "missing %s in %s" % (names, os.listdir(cache)))
        if present:
            with open(os.path.join(cache, h + ".dsc")) as f:
                check(tag + "_cache_dsc", f.read() == desc)
            dt = [np.load(os.path.join(cache, n)).dtype for n in names[1:]]
            check(tag + "_cache_dtypes", dt == [np.int32, np.int64, np.uint32], str(dt))
            check(tag + "_cache_arrays",
                  np.array_equal(np.load(os.path.join(cache, names[3])).astype(np.int64),
                                 load(out, "split0_shuffle_idx")))
        # a second run loads the cache and gives the same samples
        out2 = out + "_again"
        r = run_dump(out2, seq, seed, split, ns, [prefix_a], exact=exact)
        check(tag + "_cache_reused", r.returncode == 0 and "loading shuffle-idx mapping" in r.stdout,
              r.stdout[-800:] + r.stderr[-800:])
        if r.returncode == 0:
            check(tag + "_cache_same_samples",
                  np.array_equal(load(out, "split0_samples"), load(out2, "split0_samples")))

    # 1b. several ranks, one cache: rank 1 starts first and must wait for rank 0 to build, then load
    seq, seed, ns = 40, 2024, [90, 10, 5]
    outs = [os.path.join(tmp, "rank%d" % r) for r in range(2)]
    for o in outs:
        os.makedirs(o)
    cmd = lambda r: [DUMP, "--rank", str(r), "--world", "2", "data", outs[r], str(seq), str(seed), split,
                     str(ns[0]), str(ns[1]), str(ns[2]), os.path.join(tmp, "shared-cache"), "0", "--data-path",
                     prefix_a]
    waiting = subprocess.Popen(cmd(1), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    early = waiting.poll() is None
    builder = subprocess.run(cmd(0), capture_output=True, text=True)
    w_out, w_err = waiting.communicate(timeout=60)
    check("ranks_rank1_waits_for_rank0", early and waiting.returncode == 0 and builder.returncode == 0,
          "rank 1 exited early: %s / %s %s" % (early, w_err[-300:], builder.stderr[-300:]))
    # (rank 1 alone would finish in milliseconds: still running after a second means it waited)
    check("ranks_rank0_builds", "building the indices on rank 0" in builder.stdout, builder.stdout[-300:])
    if builder.returncode == 0 and waiting.returncode == 0:
        check("ranks_same_samples", np.array_equal(load(outs[0], "split0_samples"), load(outs[1], "split0_samples")))

    # 2. a cache written by Megatron (here: by NumPy, with a deliberately different shuffle) is used
    #    as it is, not rebuilt
    seq, seed, ns = 48, 777, [150, 20, 5]
    documents = np.arange(bounds[0], bounds[1], dtype=np.int32)
    ref = GPTDataset(docs_a, sizes_a, documents, ns[0], seq, seed)
    desc = ("GPT Dataset\n\nData prefix %s\nDataset name train\nNumber of samples %d\nNumber of epochs %d\n"
            "Sequence length %d\nRandom seed %d\nSplit %s\n" % (prefix_a, ns[0], ref.epochs, seq, seed, split))
    h = hashlib.md5(desc.encode("utf-8")).hexdigest()
    cache = os.path.join(tmp, "megatron-cache")
    os.makedirs(cache)
    ref.shuffle_idx = ref.shuffle_idx[::-1].copy()
    np.save(os.path.join(cache, h + "_doc_idx.npy"), ref.doc_idx, allow_pickle=True)
    np.save(os.path.join(cache, h + "_sample_idx.npy"), ref.sample_idx, allow_pickle=True)
    np.save(os.path.join(cache, h + "_shuffle_idx.npy"), ref.shuffle_idx, allow_pickle=True)
    with open(os.path.join(cache, h + ".dsc"), "w") as f:
        f.write(desc)
    out = os.path.join(tmp, "megatron_cache")
    r = run_dump(out, seq, seed, split, ns, [prefix_a], cache=cache)
    check("megatron_cache_runs", r.returncode == 0, r.stderr[-2000:])
    if r.returncode == 0:
        compare_single("megatron_cache", out, 0, ref)
    # a corrupt cache entry is refused naming the file
    bad = ref.shuffle_idx.copy()
    bad[3] = 10 ** 6
    np.save(os.path.join(cache, h + "_shuffle_idx.npy"), bad)
    r = run_dump(os.path.join(tmp, "bad_cache"), seq, seed, split, ns, [prefix_a], cache=cache)
    check("corrupt_cache_refused", r.returncode != 0 and h + "_shuffle_idx.npy" in r.stderr and
          "outside" in r.stderr, r.stderr[-600:])
    # in-range corruptions (issue 25: duplicates and foreign entries were accepted): each names file, row, numbers
    sizes_train = sizes_a[ref.doc_idx]
    row = next(k for k in range(1, len(ref.sample_idx)) if ref.sample_idx[k][1] > 0)
    corruptions = []
    x = ref.shuffle_idx.copy(); x[3] = x[4]
    corruptions.append(("shuffle_duplicate", "shuffle_idx", x, "entry 4 is sample %d, which an earlier entry "
                        "already holds" % x[4]))
    corruptions.append(("shuffle_short", "shuffle_idx", ref.shuffle_idx[:-1].copy(), "has %d entries; sample_idx"
                        % (len(ref.shuffle_idx) - 1)))
    x = ref.doc_idx.copy(); x[0] = x[1]
    corruptions.append(("doc_duplicate", "doc_idx", x, "is document %d, which then appears %d times in %d epochs"
                        % (x[1], ref.epochs + 1, ref.epochs)))
    x = ref.doc_idx.copy(); x[2] = bounds[1]  # the first validation document
    corruptions.append(("doc_other_split", "doc_idx", x, "entry 2 is document %d, outside the train documents [%d, %d)"
                        % (bounds[1], bounds[0], bounds[1])))
    x = ref.sample_idx.copy(); x[[2, 3]] = x[[3, 2]]
    corruptions.append(("sample_not_monotone", "sample_idx", x, "row 2 (%d, %d) starts %d tokens after row 1"
                        % (x[2][0], x[2][1], 2 * seq)))
    x = ref.sample_idx.copy(); x[row][1] -= 1
    corruptions.append(("sample_shifted", "sample_idx", x, "row %d (%d, %d) starts %d tokens after row %d" % (
        row, x[row][0], x[row][1], seq - 1, row - 1)))
    x = ref.sample_idx.copy(); x[row][1] = sizes_train[x[row][0]] + 2
    corruptions.append(("sample_past_document", "sample_idx", x, "offset %d is outside document %d of %d tokens" % (
        x[row][1], ref.doc_idx[x[row][0]], sizes_train[x[row][0]])))
    for tag, kind, arr, expect in corruptions:
        good = {"doc_idx": ref.doc_idx, "sample_idx": ref.sample_idx, "shuffle_idx": ref.shuffle_idx}
        good[kind] = arr
        for k2, v in good.items():
            np.save(os.path.join(cache, "%s_%s.npy" % (h, k2)), v)
        r = run_dump(os.path.join(tmp, "bad_" + tag), seq, seed, split, ns, [prefix_a], cache=cache)
        check("corrupt_cache_" + tag, r.returncode != 0 and ("%s_%s.npy: " % (h, kind) in r.stderr or
              "%s_%s.npy has" % (h, kind) in r.stderr) and expect in r.stderr, r.stderr[-600:])

    # 3. blending: three datasets (the dtypes differ), and nine (NumPy's pairwise sum path)
    prefixes = [os.path.join(tmp, p) for p in ("a_text_document", "b_text_document", "c_text_document")]
    all_docs = {prefixes[0]: (docs_a, sizes_a), prefixes[1]: (docs_b, sizes_b), prefixes[2]: (docs_c, sizes_c)}
    for tag, weights, members in [("blend3", [0.5, 0.3, 0.2], prefixes),
                                  ("blend9", [1, 2, 3, 1, 1, 7, 2, 0.5, 3.3], (prefixes * 3)[:9])]:
        seq, seed, ns = 32, 4321, [400, 60, 30]
        words = []
        for w, p in zip(weights, members):
            words += [repr(float(w)), p]
        out = os.path.join(tmp, tag)
        r = run_dump(out, seq, seed, split, ns, words)
        check(tag + "_runs", r.returncode == 0, r.stderr[-2000:])
        if r.returncode != 0:
            continue
        norm, per = weights_and_samples([float(w) for w in weights], ns)
        for k in range(3):
            if any(split_bounds(split, len(all_docs[p][0]))[k + 1] <= split_bounds(split, len(all_docs[p][0]))[k]
                   for p in members):  # a member without documents in this split: no blended dataset
                check("%s_split%d_absent" % (tag, k), sizes_of(out)[k] == -1, str(sizes_of(out)))
                continue
            refs = []
            for i, p in enumerate(members):
                docs, sizes = all_docs[p]
                b = split_bounds(split, len(docs))
                refs.append(GPTDataset(docs, sizes, np.arange(b[k], b[k + 1], dtype=np.int32), per[i][k], seq, seed))
            size = sum(per[i][k] for i in range(len(members)))
            index, sample = blend_indices(norm, size)
            check("%s_split%d_size" % (tag, k), sizes_of(out)[k] == size, "%s vs %d" % (sizes_of(out), size))
            check("%s_split%d_dataset_index" % (tag, k),
                  np.array_equal(load(out, "split%d_dataset_index" % k), index))
            check("%s_split%d_dataset_sample_index" % (tag, k),
                  np.array_equal(load(out, "split%d_dataset_sample_index" % k), sample))
            want = np.stack([refs[index[j]][sample[j]] for j in range(size)])
            check("%s_split%d_samples" % (tag, k), np.array_equal(load(out, "split%d_samples" % k), want))

    # 4. separate --train-data-path / --valid-data-path (blended) and no test set
    seq, seed, ns = 40, 11, [120, 30, 30]
    out = os.path.join(tmp, "separate_paths")
    r = run_dump(out, seq, seed, split, ns, [prefixes[0], ";", "0.6", prefixes[1], "0.4", prefixes[2]],
                 mode="--split-paths")
    check("separate_paths_runs", r.returncode == 0, r.stderr[-2000:])
    if r.returncode == 0:
        check("separate_paths_no_test", sizes_of(out)[2] == -1, str(sizes_of(out)))
        ref = GPTDataset(docs_a, sizes_a, np.arange(0, len(docs_a), dtype=np.int32), ns[0], seq, seed)
        compare_single("separate_paths_train", out, 0, ref)
        norm, per = weights_and_samples([0.6, 0.4], ns)
        refs = [GPTDataset(d, s, np.arange(0, len(d), dtype=np.int32), per[i][1], seq, seed)
                for i, (d, s) in enumerate([(docs_b, sizes_b), (docs_c, sizes_c)])]
        size = per[0][1] + per[1][1]
        index, sample = blend_indices(norm, size)
        want = np.stack([refs[index[j]][sample[j]] for j in range(size)])
        check("separate_paths_valid_blend", np.array_equal(load(out, "split1_samples"), want))

    # 5. bad arguments are refused with the flag and the numbers
    for tag, split_s, words, expect in [
            ("split_four_parts", "1,2,3,4", [prefix_a], "--split '1,2,3,4' has more than 3 parts"),
            ("split_garbage", "90,x", [prefix_a], "--split '90,x'"),
            ("odd_weight_list", split, ["0.5", prefix_a, "0.5"], "--data-path has 3 words"),
            ("bad_weight", split, ["abc", prefix_a, "0.5", prefix_a], "'abc' (word 1) should be a weight"),
            ("no_train_docs", "0,1,0", [prefix_a], "leaves no training documents")]:
        r = run_dump(os.path.join(tmp, tag), 16, 1, split_s, [10, 2, 2], words)
        check("refuses_" + tag, r.returncode != 0 and expect in r.stderr, r.stderr[-400:])

    # 6. Megatron's get_ltor_masks_and_position_ids with reset_position_ids, reset_attention_mask and
    #    eod_mask_loss, on rows with several, adjacent, leading and trailing end-of-document tokens
    eod = 9
    tokens = np.array([[1, 2, 9, 3, 9, 9, 4, 5, 6, 9], [9, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1] * 10], dtype=np.int32)
    np.save(os.path.join(tmp, "tokens.npy"), tokens)
    r = subprocess.run([DUMP, "masks", os.path.join(tmp, "tokens.npy"), str(eod), os.path.join(tmp, "masks")],
                       capture_output=True, text=True)
    check("masks_runs", r.returncode == 0, r.stderr)
    B, T = tokens.shape
    loss_mask = np.ones(tokens.shape, dtype=np.float32)
    loss_mask[tokens == eod] = 0.0
    attention = np.tril(np.ones((B, T, T), dtype=np.int32))
    position = np.tile(np.arange(T), (B, 1))
    for b in range(B):
        eod_index = position[b, tokens[b] == eod].copy()
        prev = 0
        for i in eod_index:
            attention[b, i + 1:, :i + 1] = 0
            position[b, i + 1:] -= i + 1 - prev
            prev = i + 1
    start = np.load(os.path.join(tmp, "masks_start.npy"))
    ours_attention = np.array([[[1 if start[b, q] <= k <= q else 0 for k in range(T)] for q in range(T)]
                               for b in range(B)])
    check("masks_loss_mask", np.array_equal(np.load(os.path.join(tmp, "masks_loss_mask.npy")), loss_mask))
    check("masks_position_ids", np.array_equal(np.load(os.path.join(tmp, "masks_pos.npy")), position))
    check("masks_attention", np.array_equal(ours_attention, attention))

    print("%d passed, %d failed" % (passed, failed))
    if not failed:
        shutil.rmtree(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
