"""Shared by the evaluation tests (test_evaluate.py, test_harness.py, test_generate.py): their command line, the
PASS/FAIL counter, the test machines' mpirun command, and the character-level GPT-2 vocabulary their fixtures train on (every
printable ASCII byte and the newline one token, <|endoftext|> last, no merges)."""
import json
import os
import shutil
import sys

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1"]
_count = {"checks": 0, "failures": 0}


def parse_argv():
    """The tests' command line: [--mpi] followed by the tool paths. Returns (mpi, paths); with --mpi and no mpirun
    the test SKIPs (exit 77)."""
    argv = sys.argv[1:]
    mpi = argv[:1] == ["--mpi"]
    if mpi:
        argv = argv[1:]
    if mpi and not shutil.which("mpirun"):
        print("SKIP: mpirun not found (apt-get install openmpi-bin)")
        sys.exit(77)
    return mpi, argv


def check(cond, what, detail=""):
    """One PASS/FAIL line, counted."""
    _count["checks"] += 1
    if cond:
        print("PASS " + what)
    else:
        _count["failures"] += 1
        print("FAIL %s %s" % (what, detail))


def failures():
    return _count["failures"]


def summary(word="failed"):
    """Prints 'N checks, M failed' and returns the exit status."""
    print("%d checks, %d %s" % (_count["checks"], _count["failures"], word))
    return 1 if _count["failures"] else 0


def bytes_to_unicode():
    """GPT-2's byte-to-character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BU = bytes_to_unicode()
CHARS = [10] + list(range(32, 127))
VOCAB = {BU[b]: i for i, b in enumerate(CHARS)}
VOCAB["<|endoftext|>"] = len(CHARS)
EOD = VOCAB["<|endoftext|>"]


def write_vocab(folder):
    """vocab.json and an empty merges.txt in folder; returns their paths."""
    vocab_json, merges = os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt")
    with open(vocab_json, "w") as f:
        json.dump(VOCAB, f)
    with open(merges, "w") as f:
        f.write("#version: 0.2\n")
    return vocab_json, merges


def tiny_gpt(folder, texts, preprocess, pretrain, run, seq=64, layers=2, iters=150, log_interval=30, dropout=True):
    """The evaluation tests' model: the character vocabulary (write_vocab) in folder, texts as a jsonl corpus
    preprocessed with --append-eod, and a GPT of `layers` layers (hidden 32, 4 heads, `seq` positions) trained on it by
    pretrain_gpt for `iters` iterations (micro batch 4, global 8, lr 3e-3; dropout False: no dropout), saved in
    folder/ck. run(cmd) runs a command and stops the test when it fails. Returns (vocab.json, merges.txt, the
    tokenizer flags, the model flags, the checkpoint folder, the training command without --save)."""
    vocab_json, merges = write_vocab(folder)
    with open(os.path.join(folder, "corpus.jsonl"), "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    tok = ["--tokenizer-type", "GPT2BPETokenizer", "--vocab-file", vocab_json, "--merge-file", merges]
    run([preprocess, "--input", os.path.join(folder, "corpus.jsonl"), "--output-prefix", os.path.join(folder, "corpus"),
         "--append-eod", "--workers", "1"] + tok)
    model = ["--num-layers", str(layers), "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length",
             str(seq), "--max-position-embeddings", str(seq)] + tok
    ck = os.path.join(folder, "ck")
    train = [pretrain] + model + ["--micro-batch-size", "4", "--global-batch-size", "8", "--data-path",
                                  os.path.join(folder, "corpus_text_document"), "--split", "100,0,0", "--lr", "3e-3",
                                  "--train-iters", str(iters), "--log-interval", str(log_interval), "--eval-iters", "0"]
    if not dropout:
        train += ["--attention-dropout", "0", "--hidden-dropout", "0"]
    run(train + ["--save", ck])
    return vocab_json, merges, tok, model, ck, train
