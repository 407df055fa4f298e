#!/usr/bin/env python3
"""BERT dataset parity: a NumPy transcription of Megatron-DeepSpeed's BERT data code (bert_megatron_oracle.py:
get_samples_mapping, get_a_and_b_segments, truncate_segments, create_tokens_and_tokentypes,
create_masked_lm_predictions, pad_and_convert_to_numpy, build_train_valid_test_datasets; bert_dataset.py; and
helpers.cpp build_mapping in Python over its own std::mt19937 / std::mt19937_64 transcription), run with
numpy.random.RandomState, against what bert_dataset_dump (our C) builds: the samples mappings and every field of
every sample, for several seeds, sequence lengths, binary head on and off, short_seq_prob 0 and 0.1, a blend and
separate train/valid/test paths; the provider's batches; the cache names, a cache written by "Megatron" (NumPy)
being used as is, a corrupt cache, ranks waiting for rank 0; and the refusals.

The fixtures are made here: a generated corpus preprocessed by preprocess_data --split-sentences with a generated
BERT vocabulary (words, "##" continuations, letters), plus, when scripts/fetch_data.sh has already cached them,
bert-base-uncased's vocabulary and Brown corpus documents.

usage: test_bert_dataset.py bert_dataset_dump preprocess_data [bert_std_random]
Exit 77 (SKIP) without NumPy."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not available to this Python (%s)" % sys.executable)
    sys.exit(77)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DUMP, PREPROCESS = sys.argv[1], sys.argv[2]
STD_RANDOM = sys.argv[3] if len(sys.argv) > 3 else None
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS", name)
    else:
        failed += 1
        print("FAIL", name, detail)
    sys.stdout.flush()
    return ok


from bert_megatron_oracle import (Indexed, MT19937, MT19937_64, Vocab, build_datasets,  # noqa: E402
                                  build_separate, mapping_name)


# ---- fixtures (bert_fixtures.py) -----------------------------------------------------------------------------------
from bert_fixtures import make_corpus, write_vocab  # noqa: E402
import bert_fixtures  # noqa: E402


def preprocess(*args, **kw):
    return bert_fixtures.preprocess(PREPROCESS, *args, **kw)


# ---- running our C ------------------------------------------------------------------------------------------------
def run_dump(mode, outdir, vocab, args, rank=None):
    os.makedirs(outdir, exist_ok=True)
    cmd = [DUMP] + (["--rank", str(rank), "--world", "2"] if rank is not None else []) + [mode, outdir]
    cmd += (["--vocab", vocab] if vocab else []) + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True)


def load(outdir, name):
    return np.load(os.path.join(outdir, name + ".npy"))


def sizes_of(outdir):
    with open(os.path.join(outdir, "sizes.txt")) as f:
        return [int(x) for x in f.read().split()]


FIELDS = ["text", "types", "labels", "loss_mask", "padding_mask"]
compared = {"samples": 0, "values": 0, "rows": 0}


def compare_split(tag, outdir, k, ref):
    """The mappings of the members and every field of every sample of split k."""
    for i, m in enumerate(ref.members):
        ours = load(outdir, "split%d_member%d_mapping" % (k, i))
        want = m.samples_mapping.astype(np.int64)
        check("%s_split%d_member%d_mapping" % (tag, k, i), ours.shape == want.shape and np.array_equal(ours, want),
              "shape ours %s, reference %s; first rows ours %s reference %s" % (ours.shape, want.shape,
                                                                               ours[:3].tolist(), want[:3].tolist()))
        compared["rows"] += len(want)
    if len(ref.members) > 1:
        check("%s_split%d_blend" % (tag, k), np.array_equal(load(outdir, "split%d_dataset_index" % k), ref.index)
              and np.array_equal(load(outdir, "split%d_dataset_sample_index" % k), ref.sample))
    n = len(ref)
    got = {f: load(outdir, "split%d_%s" % (k, f)) for f in FIELDS + ["is_random", "truncated"]}
    if not check("%s_split%d_size" % (tag, k), got["text"].shape[0] == n, "ours %d, reference %d" %
                 (got["text"].shape[0], n)):
        return
    bad = {}
    for i in range(n):
        s = ref[i]
        for f in FIELDS:
            if not np.array_equal(got[f][i], s[f]) and f not in bad:
                bad[f] = (i, got[f][i].tolist(), s[f].tolist())
        for f in ("is_random", "truncated"):
            if got[f][i] != s[f] and f not in bad:
                bad[f] = (i, got[f][i], s[f])
    compared["samples"] += n
    compared["values"] += n * (len(FIELDS) * got["text"].shape[1] + 2)
    for f in FIELDS + ["is_random", "truncated"]:
        check("%s_split%d_%s" % (tag, k, f), f not in bad, "first difference at sample %s: ours %s reference %s" %
              bad.get(f, ("", "", "")))


def compare_all(tag, outdir, refs):
    sizes = sizes_of(outdir)
    for k in range(3):
        if refs[k] is None:
            check("%s_split%d_absent" % (tag, k), sizes[k] == -1, str(sizes))
        else:
            compare_split(tag, outdir, k, refs[k])


def main():
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="zt_bertds_")
    vocab_path = os.path.join(tmp, "vocab.txt")
    write_vocab(vocab_path)
    vocab = Vocab(vocab_path)
    rng = np.random.RandomState(2024)
    prefix_a = preprocess(tmp, "corpus_a", make_corpus(rng, 260, long_doc=True), vocab_path)
    prefix_b = preprocess(tmp, "corpus_b", make_corpus(rng, 90), vocab_path)
    files = {p: Indexed(p) for p in (prefix_a, prefix_b)}
    a = files[prefix_a]
    check("fixture_sentence_split", len(a.sizes) > 4 * (len(a.doc_idx) - 1) and a.sizes.max() > 1024 and
          512 in a.sizes and 551 in a.sizes and np.any(np.diff(a.doc_idx) == 0),
          "items %d docs %d" % (len(a.sizes), len(a.doc_idx) - 1))
    cont = {i for i, t in vocab.inv_vocab.items() if t.startswith("##")}
    check("fixture_has_subwords", np.isin(a.bin, list(cont)).mean() > 0.1)

    # 0. the random engines: our Python std::mt19937 / mt19937_64 against libstdc++'s; NumPy's choice() cdf
    if STD_RANDOM:
        out = subprocess.run([STD_RANDOM, "1234", "2000"], capture_output=True, text=True).stdout.split()
        g, g64 = MT19937(1234), MT19937_64(1235)
        check("std_mt19937_transcription", [int(x) for x in out[:2000]] == [g() for _ in range(2000)])
        check("std_mt19937_64_transcription", [int(x) for x in out[2000:]] == [g64() for _ in range(2000)])
    pvals = 1. / np.arange(1, 4)
    pvals /= pvals.sum(keepdims=True)
    p = pvals[:3] / pvals[:3].sum(keepdims=True)
    cdf = p.cumsum()
    cdf /= cdf[-1]
    ours = subprocess.run([DUMP, "cdf"], capture_output=True, text=True).stdout.split()
    check("ngram_cdf_bits", [float.fromhex(x) for x in ours] == cdf.tolist(), "%s vs %s" % (ours, cdf.tolist()))

    # 1. one dataset split by --split: seeds, sequence lengths, binary head on/off, short_seq_prob 0 and 0.1
    cases = [("seq128_ssp01", 128, 1234, "949,50,1", [1500, 120, 30], "0.15", "0.1", True),
             ("seq64_ssp0", 64, 7, "8,1,1", [400, 50, 50], "0.15", "0", True),
             ("seq40_nohead", 40, 99, "969, 30, 1", [300, 40, 20], "0.3", "0.1", False),
             ("seq96_nohead_ssp0", 96, 31337, "90/5/5", [200, 30, 30], "0.15", "0.0", False),
             ("seq24_mask05", 24, 5, "10,1", [300, 40, 0], "0.5", "1", True)]
    for tag, seq, seed, split, ns, mp, ssp, head in cases:
        out = os.path.join(tmp, tag)
        args = ["--seq", seq, "--seed", seed, "--split", split, "--samples", ",".join(map(str, ns)),
                "--mask-prob", mp, "--short-seq-prob", ssp] + ([] if head else ["--no-binary-head"])
        r = run_dump("data", out, vocab_path, args + ["--data-path", prefix_a])
        if not check(tag + "_runs", r.returncode == 0, r.stderr[-2000:]):
            continue
        refs = build_datasets(files, vocab, [prefix_a], split, ns, seq, float(mp), float(ssp), seed, head)
        compare_all(tag, out, refs)
        # the cache: Megatron's name beside the data, uint32 [n, 3]
        want = refs[0].members[0].filename
        with open(os.path.join(out, "split0_member0_cache.txt")) as f:
            got_name = f.read()
        check(tag + "_cache_name", got_name == want, "ours %s, Megatron's %s" % (got_name, want))
        if os.path.isfile(want):
            m = np.load(want)
            check(tag + "_cache_file", m.dtype == np.uint32 and np.array_equal(m, refs[0].members[0].samples_mapping),
                  str(m.dtype))
        # a second run loads it
        r = run_dump("data", out + "_again", vocab_path, args + ["--data-path", prefix_a])
        check(tag + "_cache_reused", r.returncode == 0 and "loading indexed mapping from " + want in r.stdout
              and "building samples index mapping" not in r.stdout, r.stdout[-600:] + r.stderr[-600:])
        if r.returncode == 0:
            check(tag + "_cache_same_samples", all(np.array_equal(load(out, "split0_" + f), load(out + "_again",
                                                                                                 "split0_" + f))
                                                   for f in FIELDS))

    # 2. a blend of two datasets (--data-path w1 P1 w2 P2), and --train-data-exact-num-epochs
    words = ["0.7", prefix_a, "0.3", prefix_b]
    out = os.path.join(tmp, "blend")
    args = ["--seq", 64, "--seed", 4321, "--split", "949,50,1", "--samples", "500,60,20"]
    r = run_dump("data", out, vocab_path, args + ["--data-path"] + words)
    if check("blend_runs", r.returncode == 0, r.stderr[-2000:]):
        compare_all("blend", out, build_datasets(files, vocab, words, "949,50,1", [500, 60, 20], 64, 0.15, 0.1, 4321,
                                                 True))
    out = os.path.join(tmp, "exact")
    r = run_dump("data", out, vocab_path, ["--seq", 48, "--seed", 77, "--split", "949,50,1", "--samples", "100,20,10",
                                           "--exact", 2, "--data-path", prefix_b])
    if check("exact_epochs_runs", r.returncode == 0, r.stderr[-2000:]):
        refs = build_datasets(files, vocab, [prefix_b], "949,50,1", [100, 20, 10], 48, 0.15, 0.1, 77, True, exact=2)
        compare_all("exact_epochs", out, refs)
        with open(os.path.join(out, "split0_member0_cache.txt")) as f:
            check("exact_epochs_cache_name", f.read() == refs[0].members[0].filename and "_exact2ep_45msl_0.10ssp_77s"
                  in refs[0].members[0].filename)
    r = run_dump("data", os.path.join(tmp, "exact_short"), vocab_path,
                 ["--seq", 48, "--seed", 77, "--split", "949,50,1", "--samples", "100000,20,10", "--exact", 2,
                  "--data-path", prefix_b])
    check("exact_epochs_too_few", r.returncode != 0 and "--train-data-exact-num-epochs 2 gives" in r.stderr,
          r.stderr[-400:])

    # 3. separate --train-data-path / --valid-data-path (a blend), no test set
    out = os.path.join(tmp, "separate")
    lists = [[prefix_b], ["0.5", prefix_a, "0.5", prefix_b], []]
    r = run_dump("data", out, vocab_path, ["--seq", 56, "--seed", 11, "--samples", "150,40,10", "--no-binary-head",
                                           "--train-data-path"] + lists[0] + ["--valid-data-path"] + lists[1])
    if check("separate_paths_runs", r.returncode == 0, r.stderr[-2000:]):
        compare_all("separate_paths", out, build_separate(files, vocab, lists, [150, 40, 10], 56, 0.15, 0.1, 11,
                                                          False))

    # 4. the provider's batches: Megatron's get_batch with labels -1 -> 0, padding = not padding_mask, float loss
    #    mask, token types and sentence labels (NULL without the binary head); the float flags as typed
    for tag, head, seed in (("provider_head", True, 7), ("provider_nohead", False, 8)):
        out = os.path.join(tmp, tag)
        args = ["--seq", 64, "--seed", seed, "--split", "8,1,1", "--samples", "400,50,50", "--micro-batch", 5,
                "--batches", 3] + ([] if head else ["--no-binary-head"])
        r = run_dump("provider", out, vocab_path, args + ["--data-path", prefix_a])
        if not check(tag + "_runs", r.returncode == 0, r.stderr[-2000:]):
            continue
        refs = build_datasets(files, vocab, [prefix_a], "8,1,1", [400, 50, 50], 64, 0.15, 0.1, seed, head)
        for k in range(3):
            want = [refs[k][i] for i in range(15)]
            text = np.stack([w["text"] for w in want])
            padding = np.stack([w["padding_mask"] for w in want]) == 0
            types = np.stack([w["types"] for w in want])
            types[padding] = 0
            ok = (np.array_equal(load(out, "split%d_batch_tokens" % k), text) and
                  np.array_equal(load(out, "split%d_batch_labels" % k),
                                 np.maximum(np.stack([w["labels"] for w in want]), 0)) and
                  np.array_equal(load(out, "split%d_batch_loss_mask" % k),
                                 np.stack([w["loss_mask"] for w in want]).astype(np.float32)) and
                  np.array_equal(load(out, "split%d_batch_padding" % k) != 0, padding))
            check("%s_split%d_batch" % (tag, k), ok)
            has_types = os.path.isfile(os.path.join(out, "split%d_batch_token_types.npy" % k))
            has_sent = os.path.isfile(os.path.join(out, "split%d_batch_sentence_labels.npy" % k))
            if head:
                check("%s_split%d_types_sentence" % (tag, k), has_types and has_sent and
                      np.array_equal(load(out, "split%d_batch_token_types" % k), types) and
                      np.array_equal(load(out, "split%d_batch_sentence_labels" % k),
                                     [w["is_random"] for w in want]))
            else:
                check("%s_split%d_no_types_sentence" % (tag, k), not has_types and not has_sent)
        check(tag + "_lines", "> building train, validation, and test datasets for BERT ..." in r.stdout and
              "sentence indices in [" in r.stdout and "> finished creating BERT datasets ..." in r.stdout,
              r.stdout[-1500:])

    # 5. a cache written by Megatron (here: NumPy, rows reversed so that it differs from a fresh build) is used as
    #    it is, in --data-cache-path too; corrupt ones are refused naming the file
    seq, seed, ns = 72, 555, [300, 30, 10]
    refs = build_datasets(files, vocab, [prefix_a], "949,50,1", ns, seq, 0.15, 0.1, seed, True)
    train = refs[0].members[0]
    train.samples_mapping = train.samples_mapping[::-1].copy()
    np.save(train.filename, train.samples_mapping, allow_pickle=True)
    out = os.path.join(tmp, "megatron_cache")
    args = ["--seq", seq, "--seed", seed, "--split", "949,50,1", "--samples", ",".join(map(str, ns))]
    r = run_dump("data", out, vocab_path, args + ["--data-path", prefix_a])
    if check("megatron_cache_runs", r.returncode == 0 and "loading indexed mapping from " + train.filename in r.stdout,
             r.stderr[-2000:]):
        compare_split("megatron_cache", out, 0, refs[0])
    bad = train.samples_mapping.copy()
    bad[5, 1] = len(a.sizes) + 3
    np.save(train.filename, bad)
    r = run_dump("data", os.path.join(tmp, "bad_cache"), vocab_path, args + ["--data-path", prefix_a])
    check("corrupt_cache_refused", r.returncode != 0 and os.path.basename(train.filename) in r.stderr and "row 5"
          in r.stderr, r.stderr[-600:])
    # a row that joins two documents (in range, so it passed before issue 25) is refused naming the row
    docs = a.doc_idx
    bad = train.samples_mapping.copy()
    bounds_set, top = set(docs.tolist()), int(bad[:, 1].max())  # rows ending at a document's end, not the last
    r5 = next(k for k in range(len(bad)) if int(bad[k, 1]) in bounds_set and int(bad[k, 1]) < top)
    bad[r5, 1] += 1
    np.save(train.filename, bad)
    r = run_dump("data", os.path.join(tmp, "bad_cache2"), vocab_path, args + ["--data-path", prefix_a])
    check("cross_document_row_refused", r.returncode != 0 and os.path.basename(train.filename) in r.stderr and
          ("row %d (%d, %d, %d) runs past the end of document" % (r5, bad[r5, 0], bad[r5, 1], bad[r5, 2])) in r.stderr,
          r.stderr[-600:])
    os.remove(train.filename)
    # a mapping built without the binary head has the same name; with the binary head its 1-sentence rows are refused
    nohead = os.path.join(tmp, "cache_nohead")
    r1 = run_dump("data", nohead, vocab_path, ["--seq", 40, "--seed", 99, "--split", "969, 30, 1", "--samples",
                                               "300,40,20", "--mask-prob", "0.3", "--data-path", prefix_a])
    check("nohead_cache_refused", r1.returncode != 0 and "--bert-no-binary-head" in r1.stderr and "_train_indexmap_"
          in r1.stderr, r1.stderr[-600:])
    # --data-cache-path: built there (data dir untouched), and found there next time
    cache_dir = os.path.join(tmp, "cache-dir")
    out = os.path.join(tmp, "cache_path")
    args = ["--seq", 80, "--seed", 8080, "--split", "949,50,1", "--samples", "120,10,10", "--cache", cache_dir]
    r = run_dump("data", out, vocab_path, args + ["--data-path", prefix_a])
    name = os.path.basename(mapping_name(prefix_a, "train", None, 120, 77, 0.1, 8080)[0])
    check("cache_path_used", r.returncode == 0 and os.path.isfile(os.path.join(cache_dir, name)) and
          not os.path.isfile(os.path.join(tmp, name)), r.stderr[-400:] + str(os.listdir(tmp)))
    r = run_dump("data", out + "_again", vocab_path, args + ["--data-path", prefix_a])
    check("cache_path_reused", r.returncode == 0 and "loading indexed mapping from " + os.path.join(cache_dir, name)
          in r.stdout, r.stdout[-400:])

    # 6. several ranks, one cache: rank 1 starts first and waits for rank 0 to build, then loads
    outs = [os.path.join(tmp, "rank%d" % k) for k in range(2)]
    args = ["--seq", 64, "--seed", 2025, "--split", "949,50,1", "--samples", "200,20,10", "--cache",
            os.path.join(tmp, "shared-cache"), "--data-path", prefix_a]
    os.makedirs(outs[1])
    waiting = subprocess.Popen([DUMP, "--rank", "1", "--world", "2", "data", outs[1], "--vocab", vocab_path] +
                               [str(x) for x in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    early = waiting.poll() is None
    builder = run_dump("data", outs[0], vocab_path, args, rank=0)
    w_out, w_err = waiting.communicate(timeout=60)
    check("ranks_rank1_waits_for_rank0", early and waiting.returncode == 0 and builder.returncode == 0,
          "rank 1 exited early: %s / %s %s" % (early, w_err[-300:], builder.stderr[-300:]))
    check("ranks_rank0_builds", "building samples index mapping for train" in builder.stdout and
          "building samples index mapping" not in w_out)
    if builder.returncode == 0 and waiting.returncode == 0:
        check("ranks_same_samples", all(np.array_equal(load(outs[0], "split0_" + f), load(outs[1], "split0_" + f))
                                        for f in FIELDS))

    # 7. refusals, before any work, naming the flag or file and the numbers
    gpt_style = preprocess(tmp, "corpus_gpt", make_corpus(np.random.RandomState(3), 40), vocab_path, False)
    no_mask = os.path.join(tmp, "vocab_no_mask.txt")
    write_vocab(no_mask, drop=("[MASK]",))
    repeated = os.path.join(tmp, "vocab_repeated.txt")
    write_vocab(repeated, repeat="walk")
    base = ["--seq", 64, "--samples", "100,10,10"]
    refusals = [
        ("gpt_style_dataset", vocab_path, ["--data-path", gpt_style],
         ["corpus_gpt_text_document is not split into sentences", "--split-sentences"]),
        ("vocab_without_mask", no_mask, ["--data-path", prefix_a], ["has no [MASK] token"]),
        ("vocab_repeated_line", repeated, ["--data-path", prefix_a],
         ["vocabulary has no token with id %d of its" % vocab.vocab["walk"]]),
        ("null_tokenizer", None, ["--null-vocab", 500, "--data-path", prefix_a],
         ["the NullTokenizer tokenizer has no [CLS] token"]),
        ("mask_prob_0", vocab_path, ["--mask-prob", "0", "--data-path", prefix_a], ["--mask-prob 0:", "(0, 1)"]),
        ("mask_prob_1", vocab_path, ["--mask-prob", "1", "--data-path", prefix_a], ["--mask-prob 1:"]),
        ("mask_prob_negative", vocab_path, ["--mask-prob", "-0.2", "--data-path", prefix_a], ["--mask-prob -0.2:"]),
        ("short_seq_prob_negative", vocab_path, ["--short-seq-prob", "-0.1", "--data-path", prefix_a],
         ["--short-seq-prob -0.1 must be in [0, 1]"]),
        ("short_seq_prob_above_1", vocab_path, ["--short-seq-prob", "1.5", "--data-path", prefix_a],
         ["--short-seq-prob 1.5 must be in [0, 1]"]),
        ("seq_length_4", vocab_path, ["--seq", 4, "--data-path", prefix_a], ["--seq-length 4 leaves 1 tokens",
                                                                             "--seq-length >= 5"]),
        ("seed_0", vocab_path, ["--seed", 0, "--data-path", prefix_a], ["--seed 0:"]),
    ]
    for tag, voc, extra, expect in refusals:
        out = os.path.join(tmp, "refuse_" + tag)
        before = set(os.listdir(tmp))
        r = run_dump("provider", out, voc, base + extra)
        made = [f for f in set(os.listdir(tmp)) - before if "indexmap" in f]
        check("refuses_" + tag, r.returncode != 0 and all(e in r.stderr for e in expect) and not made,
              "rc %d: %s (made %s)" % (r.returncode, r.stderr[-500:], made))

    # 8. bert-base-uncased's vocabulary and Brown documents, when fetch_data.sh has cached them (no download here)
    cache = os.environ.get("ZT_DATA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zerotron")
    real_vocab = os.path.join(cache, "npm", "bert-base-uncased-vocab.txt")
    brown = os.path.join(cache, "brown", "brown.jsonl")
    if os.path.isfile(real_vocab) and os.path.isfile(brown):
        import json
        with open(brown) as f:
            texts = [json.loads(line)["text"] for _, line in zip(range(40), f)]
        src = os.path.join(tmp, "brown.jsonl")
        with open(src, "w") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        r = subprocess.run([PREPROCESS, "--input", src, "--output-prefix", os.path.join(tmp, "brown"), "--vocab-file",
                            real_vocab, "--tokenizer-type", "BertWordPieceLowerCase", "--split-sentences"],
                           capture_output=True, text=True)
        prefix = os.path.join(tmp, "brown_text_sentence")
        files[prefix] = Indexed(prefix)
        real = Vocab(real_vocab)
        out = os.path.join(tmp, "brown_out")
        r = run_dump("data", out, real_vocab, ["--seq", 128, "--seed", 1234, "--split", "949,50,1", "--samples",
                                               "400,40,20", "--data-path", prefix])
        if check("brown_runs", r.returncode == 0, r.stderr[-2000:]):
            compare_all("brown", out, build_datasets(files, real, [prefix], "949,50,1", [400, 40, 20], 128, 0.15, 0.1,
                                                     1234, True))
    else:
        print("NOTE: bert-base-uncased vocabulary / Brown corpus not cached (scripts/fetch_data.sh): that case skipped")

    print("compared %d mapping rows, %d samples (%d values)" % (compared["rows"], compared["samples"],
                                                                 compared["values"]))
    print("%d passed, %d failed (%.1f s)" % (passed, failed, time.time() - t_start))
    if not failed:
        shutil.rmtree(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
