#!/usr/bin/env python3
"""T5 dataset parity (issue 17, item 2): t5_megatron_oracle.py (a NumPy transcription of Megatron-DeepSpeed's
t5_dataset.py and create_masked_lm_predictions with T5's settings, over bert_megatron_oracle.py's build_mapping)
against what t5_dataset_dump (our C: data/t5_dataset.h) builds from the same sentence-split dataset: the samples
mapping and its cache name, every field of every sample (encoder input with sentinels, decoder input, labels, loss
mask, truncated) and the three attention masks Megatron makes, for several sequence lengths, seeds, masking
probabilities and short_seq_prob 0 and 0.1; NumPy's geometric draws against ours; and the refusals (too few sentinel
tokens, a decoder length the spans overflow).

usage: test_t5_dataset.py t5_dataset_dump preprocess_data
Exit 77 (SKIP) without NumPy."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not available to this Python (%s)" % sys.executable)
    sys.exit(77)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bert_fixtures import make_corpus, preprocess, write_vocab  # noqa: E402
from bert_megatron_oracle import Indexed, build_mapping, mapping_name  # noqa: E402
from t5_megatron_oracle import T5Vocab, t5_sample  # noqa: E402

DUMP, PREPROCESS = sys.argv[1], sys.argv[2]
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


def run(outdir, vocab, prefix, seq, seq_dec, seed, samples, mask_prob, ssp, extra=100):
    os.makedirs(outdir, exist_ok=True)
    cmd = [DUMP, outdir, "--vocab", vocab, "--data", prefix, "--seq", str(seq), "--seq-dec", str(seq_dec), "--seed",
           str(seed), "--samples", str(samples), "--mask-prob", str(mask_prob), "--short-seq-prob", str(ssp),
           "--extra-ids", str(extra)]
    return subprocess.run(cmd, capture_output=True, text=True)


def compare(tag, tmp, vocab_path, prefix, seq, seq_dec, seed, samples, mask_prob, ssp):
    out = os.path.join(tmp, tag)
    r = run(out, vocab_path, prefix, seq, seq_dec, seed, samples, mask_prob, ssp)
    if not check("%s: t5_dataset_dump runs" % tag, r.returncode == 0, r.stderr[-400:]):
        return
    load = lambda name: np.load(os.path.join(out, name + ".npy"))  # noqa: E731
    data = Indexed(prefix)
    rows = build_mapping(data.doc_idx, data.sizes, np.iinfo(np.int32).max - 1, samples, seq - 2, ssp, seed, 1)
    got_rows = load("mapping")
    check("%s: samples mapping (%d rows, targets <= %d) = helpers.cpp's with T5's max_seq_length - 2 and no binary "
          "head" % (tag, len(rows), seq - 2), np.array_equal(got_rows, rows.astype(np.int64)),
          "rows %s vs %s" % (got_rows[:3].tolist(), rows[:3].tolist()))
    name = mapping_name(os.path.join(out, os.path.basename(prefix)), "train", None, samples, seq - 2, ssp, seed)[0]
    check("%s: the mapping is cached under Megatron's name %s" % (tag, os.path.basename(name)),
          os.path.basename(name) in r.stdout or os.path.exists(name), r.stdout[-300:])
    vocab = T5Vocab(vocab_path, 100)
    ids = [int(x) for x in open(os.path.join(out, "ids.txt")).read().split()]
    check("%s: [BOS], [EOS], [MASK], [PAD], [CLS], [SEP] and <extra_id_0> ids = Megatron's tokenizer's" % tag,
          ids == [vocab.bos, vocab.eos, vocab.mask, vocab.pad, vocab.cls, vocab.sep, vocab.sentinels[0]],
          "%s vs %s" % (ids, [vocab.bos, vocab.eos, vocab.mask, vocab.pad, vocab.cls, vocab.sep, vocab.sentinels[0]]))
    fields = {k: load(k) for k in ("text_enc", "text_dec", "labels", "loss_mask", "enc_valid", "dec_valid",
                                   "truncated", "spans")}
    bad = {}
    spans = truncated = 0
    for i in range(len(rows)):
        want = t5_sample(data, rows[i], i, seed, vocab, seq, seq_dec, mask_prob)
        ev, dv = fields["enc_valid"][i].astype(np.int64), fields["dec_valid"][i].astype(np.int64)
        history = np.tril(np.ones((seq_dec, seq_dec), dtype=np.int64))
        got = {"text_enc": fields["text_enc"][i], "text_dec": fields["text_dec"][i], "labels": fields["labels"][i],
               "loss_mask": fields["loss_mask"][i], "truncated": int(fields["truncated"][i]),
               "spans": int(fields["spans"][i]), "enc_mask": np.outer(ev, ev), "dec_mask": np.outer(dv, dv) * history,
               "enc_dec_mask": np.outer(dv, ev)}
        for k, v in got.items():
            if not np.array_equal(np.asarray(v), np.asarray(want[k])):
                bad.setdefault(k, i)
        spans += want["spans"]
        truncated += want["truncated"]
    check("%s: every field of %d samples = Megatron's (%d masked spans, %d truncated)" % (tag, len(rows), spans,
          truncated), not bad, "first mismatching sample per field: %s" % bad)
    return out


def main():
    rs = np.random.RandomState(11)
    geo = [int(rs.geometric(0.2)) for _ in range(5)]
    check("NumPy's RandomState.geometric(0.2) is the inversion the C reproduces (first draws %s)" % geo,
          geo == [int(np.ceil(np.log1p(-u) / np.log(0.8))) for u in np.random.RandomState(11).random_sample(5)])
    with tempfile.TemporaryDirectory() as tmp:
        vocab_path = os.path.join(tmp, "vocab.txt")
        write_vocab(vocab_path)
        prefix = preprocess(PREPROCESS, tmp, "corpus", make_corpus(np.random.RandomState(5), 120), vocab_path)
        compare("seq 64, dec 32, seed 1234", tmp, vocab_path, prefix, 64, 32, 1234, 200, 0.15, 0.1)
        compare("seq 128, dec 64, seed 7, mask 0.3", tmp, vocab_path, prefix, 128, 64, 7, 150, 0.3, 0.1)
        compare("seq 32, dec 24, seed 99, short_seq_prob 0", tmp, vocab_path, prefix, 32, 24, 99, 150, 0.15, 0.0)
        # refusals: too few sentinels for the spans; a decoder length the spans overflow
        r = run(os.path.join(tmp, "few"), vocab_path, prefix, 128, 64, 7, 150, 0.3, 0.1, extra=2)
        check("more masked spans than --vocab-extra-ids sentinels is refused naming both",
              r.returncode != 0 and "sentinel tokens of --vocab-extra-ids" in r.stderr, r.stderr[-300:])
        r = run(os.path.join(tmp, "short"), vocab_path, prefix, 128, 8, 7, 150, 0.3, 0.1)
        check("a --decoder-seq-length the spans overflow is refused with the numbers",
              r.returncode != 0 and "exceed --decoder-seq-length 8" in r.stderr, r.stderr[-300:])
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()
