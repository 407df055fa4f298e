#!/usr/bin/env python3
"""test_evaluate: evaluate_zeroshot (docs/evaluate.md) against an independent NumPy transcription of Megatron-
DeepSpeed's tasks/zeroshot_gpt (datasets.py, detokenizer.py, evaluate.py's scoring and printing) applied to the
logits that tests/checkpoint's ckpt_logits dumps from the same checkpoint; hand-checked LM windows and LAMBADA
examples (strict, non-strict, truncation); the detokenizers on random texts; the bad inputs. With --mpi: TP=2, PP=2
and DP=2 evaluations under mpirun equal to one process, and a checkpoint saved with TP=2 evaluated by one process.

The tiny GPT is trained in the test by pretrain_gpt on a generated corpus with a character-level GPT-2 BPE vocabulary
(every printable ASCII byte one token, no merges), so the Python tokenizer below is exact by construction.

Usage: test_evaluate.py [--mpi] EVALUATE_ZEROSHOT EVAL_TOOL PRETRAIN_GPT PREPROCESS_DATA CKPT_LOGITS PRETRAIN_BERT"""
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy not found (apt-get install python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evalkit import parse_argv, BU, EOD, MPIRUN, VOCAB, check, summary, tiny_gpt  # noqa: E402

MPI, (EVAL, TOOL, PRETRAIN, PREPROCESS, LOGITS, PRETRAIN_BERT) = parse_argv()
HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, ok=True, env=None):
    e = dict(os.environ, OMP_NUM_THREADS="1")
    if env:
        e.update(env)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e)
    out = p.stdout.decode("utf-8", "replace")
    if ok and p.returncode != 0:
        print(out[-3000:])
        raise SystemExit("FAIL: %s exited %d" % (" ".join(cmd[:3]), p.returncode))
    return p.returncode, out


# ---- Megatron's detokenizer.py, transcribed ------------------------------------------------------------------------


def ptb_detokenizer(string):
    string = string.replace(" '", "'")
    string = string.replace(" \n", "\n")
    string = string.replace("\n ", "\n")
    string = string.replace(" n't", "n't")
    string = string.replace(" N ", "1 ")
    string = string.replace("$ 1", "$1")
    string = string.replace("# 1", "#1")
    return string


def wikitext_detokenizer(string):
    string = string.replace("s '", "s'")
    string = re.sub(r"/' [0-9]/", r"/'[0-9]/", string)
    string = string.replace(" @-@ ", "-")
    string = string.replace(" @,@ ", ",")
    string = string.replace(" @.@ ", ".")
    string = string.replace(" : ", ": ")
    string = string.replace(" ; ", "; ")
    string = string.replace(" . ", ". ")
    string = string.replace(" ! ", "! ")
    string = string.replace(" ? ", "? ")
    string = string.replace(" , ", ", ")
    string = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", string)
    string = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", string)
    string = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", string)
    string = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', string)
    string = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", string)
    string = string.replace("= = = =", "====")
    string = string.replace("= = =", "===")
    string = string.replace("= =", "==")
    string = string.replace(" " + chr(176) + " ", chr(176))
    string = string.replace(" \n", "\n")
    string = string.replace("\n ", "\n")
    string = string.replace(" N ", " 1 ")
    string = string.replace(" 's", "'s")
    return string


DETOK = {"ptb": ptb_detokenizer, "wiki": wikitext_detokenizer, "lambada": lambda s: s}


def get_detokenizer(path):
    for key in DETOK:
        if key in path:
            return DETOK[key]
    return None

# ---- the character-level GPT-2 vocabulary (evalkit.py): encoding and decoding ------------------------------------


def tokenize(text):
    return [VOCAB.get(BU[b], 0) for b in text.encode("utf-8")]


# ---- Megatron's datasets.py, transcribed (plus the documented left truncation of long LAMBADA examples) ----------


def lm_dataset(tokens, seq_len, ov):
    ov = max(1, ov if ov is not None else seq_len)
    total_targets = len(tokens) - 1
    targets = max(total_targets - ov, 0)
    n = max(math.ceil(targets / ov) + 1, 1)
    items = []
    for idx in range(n):
        start = idx * ov
        toks = tokens[start:start + seq_len + 1]
        pad_mask = [1] * len(toks)
        if len(toks) < seq_len + 1:
            num_pad = seq_len + 1 - len(toks)
            pad_mask += [0] * num_pad
            toks = toks + [EOD] * num_pad
        pad_mask = np.array(pad_mask[1:])
        if ov != seq_len and idx != 0:
            pad_mask[:-ov] *= 0
        items.append((np.array(toks), pad_mask))
    return items


def lambada_tokens(text, strict):
    if not strict:
        tokens = tokenize(text)
        return tokens[:-1], [tokens[-1]]
    last_token = text.split()[-1]
    start_idx = text.rfind(last_token)
    return tokenize(text[:start_idx].strip()), tokenize(" " + last_token)


def lambada_item(ctx, labels, seq_len):
    tokens = ctx + labels
    pad_mask = [0] * len(ctx) + [1] * len(labels)
    drop = max(len(tokens) - (seq_len + 1), 0)  # zerotron: left truncation (Megatron fails on such examples)
    tokens, pad_mask = tokens[drop:], pad_mask[drop:]
    if len(tokens) < seq_len + 1:
        num_pad = seq_len + 1 - len(tokens)
        pad_mask += [0] * num_pad
        tokens = tokens + [EOD] * num_pad
    return np.array(tokens), np.array(pad_mask[1:]), drop


def megatron_block(task, total, n_examples=0, ntok=0, norig=0):
    """evaluate_and_print_results: output is a float32 tensor in Megatron (so are the avg loss and its products)."""
    string = " validation results on {} | ".format(task)
    if task == "WIKITEXT103":
        val_loss = np.float32(total) / np.float32(ntok - 1)
        ppl = math.exp(min(20, float(val_loss)))
        token_ratio = (ntok - 1) / (norig - 1)
        adjusted_ppl = math.exp(min(20, float(np.float32(float(val_loss) * token_ratio))))
        string += "avg loss: {:.4E} | ".format(float(val_loss))
        string += "ppl: {:.4E} | ".format(ppl)
        string += "adjusted ppl: {:.4E} | ".format(adjusted_ppl)
        string += "token ratio: {} |".format(token_ratio)
    else:
        acc = np.float32(total) / np.float32(n_examples)
        string += "number correct: {:.4E} | ".format(float(total))
        string += "total examples: {:.4E} | ".format(n_examples)
        string += "avg accuracy: {:.4E}".format(float(acc))
    length = len(string) + 1
    return "-" * length + "\n" + string + "\n" + "-" * length


def model_scores(ck, rows, seq, layout=None):
    """Per-token cross-entropy (float64) and argmax over the padded vocabulary of the checkpoint's logits; with
    layout = (mask [heads, nb, nb], block), attention computes only those blocks (ckpt_logits' dense kernels with the
    layout as a mask)."""
    toks = np.stack([r[:seq] for r in rows]).astype(np.int32)
    np.save(os.path.join(tmp, "tok.npy"), toks)
    extra = []
    if layout is not None:
        np.save(os.path.join(tmp, "layout.npy"), layout[0].astype(np.int32))
        extra = [os.path.join(tmp, "layout.npy"), str(layout[1])]
    run([LOGITS, ck, os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")] + extra)
    lg = np.load(os.path.join(tmp, "logits.npy")).astype(np.float64)
    labels = np.stack([r[1:seq + 1] for r in rows])
    mx = lg.max(-1, keepdims=True)
    lse = np.log(np.exp(lg - mx).sum(-1)) + mx[..., 0]
    ce = lse - np.take_along_axis(lg, labels[..., None], -1)[..., 0]
    return ce, lg.argmax(-1), labels


def oracle(ck, task, path, seq, ov=32, strict=False, layout=None):
    if task == "WIKITEXT103":
        data = open(path, "rb").read().decode("utf-8")
        norig = len(data.strip().split(" "))
        data = get_detokenizer(path)(data)
        toks = tokenize(data)
        items = lm_dataset(toks, seq, ov)
        ce, _, _ = model_scores(ck, [t for t, _ in items], seq, layout)
        total = float(sum((ce[i] * m).sum() for i, (_, m) in enumerate(items)))
        return total, megatron_block(task, total, ntok=len(toks), norig=norig)
    items = []
    for line in open(path, encoding="utf-8").readlines():
        ctx, lab = lambada_tokens(json.loads(line)["text"], strict)
        items.append(lambada_item(ctx, lab, seq))
    _, am, labels = model_scores(ck, [t for t, _, _ in items], seq, layout)
    correct = 0
    for i, (_, m, _) in enumerate(items):
        c = (am[i] == labels[i]).astype(np.float64)
        c[(1 - m).astype(bool)] = 1
        correct += int(c.prod())
    return float(correct), megatron_block(task, correct, n_examples=len(items))


def block_of(out):
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(" validation results on "):
            return "\n".join(lines[i - 1:i + 2])
    return None


def total_of(out):
    m = re.search(r"^> summed loss (\S+) over", out, re.M) or re.search(r"^> (\S+) of \d+ examples correct", out, re.M)
    return float(m.group(1)) if m else None


# ---- fixtures --------------------------------------------------------------------------------------------------
tmp = tempfile.mkdtemp(prefix="zt_eval_")
rng = random.Random(7)
NOUNS = ["cat", "dog", "bird", "fish", "cow", "fox"]
VERBS = ["sees", "likes", "hears", "finds"]
OBJECT = {"sees": "fox", "likes": "fish", "hears": "bird", "finds": "cow"}


def sentence():
    v = rng.choice(VERBS)  # the verb names the object: the last word follows from the context
    return "the %s %s the %s." % (rng.choice(NOUNS), v, OBJECT[v])


SEQ = 48
vocab_json, merges, TOK, MODEL, ck, train = tiny_gpt(
    tmp, [" ".join(sentence() for _ in range(rng.randint(2, 6))) for d in range(300)], PREPROCESS, PRETRAIN, run,
    seq=SEQ, dropout=False)

# the task files: a WikiText-style text (its path contains "wiki": the wikitext detokenizer) and LAMBADA examples,
# one of them longer than --seq-length + 1 tokens
wiki = os.path.join(tmp, "wiki.test.tokens")
with open(wiki, "w") as f:
    f.write(" = The animals = \n\n")
    for i in range(12):
        s = sentence()[:-1]
        f.write(" %s , and the %s @-@ %s ( %s ) . \n" % (s, rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(VERBS)))
lamb = os.path.join(tmp, "lambada_test.jsonl")
with open(lamb, "w") as f:
    for i in range(23):
        f.write(json.dumps({"text": sentence()[:-1]}) + "\n")
    f.write(json.dumps({"text": " ".join(sentence() for _ in range(3))[:-1]}) + "\n")


# a checkpoint trained with the ds_config's sparse_attention (DeepSpeed's fixed layout, one per head, two global
# patterns, block 8: 6 x 6 blocks at SEQ 48); its layout from an independent transcription of DeepSpeed's
# sparsity_config.py, made for SEQ, causal (tril), cut to the first seq / 8 blocks for a shorter evaluation
sys.path.insert(0, os.path.join(HERE, "..", "sparse"))
import sparsity_oracle  # noqa: E402
SPARSE = {"mode": "fixed", "block": 8, "different_layout_per_head": True, "num_local_blocks": 2,
          "num_global_blocks": 1, "num_different_global_patterns": 2, "attention": "unidirectional"}
ck_sparse = os.path.join(tmp, "ck_sparse")


def sparse_layout(seq):
    full = sparsity_oracle.Fixed(4, block=8, different_layout_per_head=True, num_local_blocks=2, num_global_blocks=1,
                                 attention="unidirectional", num_different_global_patterns=2).make_layout(SEQ)
    nb = seq // 8
    return np.tril(np.asarray(full)[:, :nb, :nb]), 8


def train_sparse(mpi=None):
    cfg = os.path.join(tmp, "ds_sparse.json")
    json.dump({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sparse_attention": SPARSE},
              open(cfg, "w"))
    cmd = train[:train.index("--train-iters")] + ["--train-iters", "40", "--deepspeed", "--deepspeed_config", cfg,
                                                  "--save", ck_sparse]
    if mpi:
        cmd = MPIRUN + ["-np", str(mpi)] + cmd + ["--tensor-model-parallel-size", str(mpi)]
    return run(cmd)


def evaluate(task, path, extra=(), mpi=None, ckpt=None, mbs="3"):
    cmd = [EVAL, "--task", task, "--valid-data", path, "--load", ckpt or ck, "--micro-batch-size", mbs] + MODEL
    cmd += list(extra)
    if mpi:
        cmd = MPIRUN + ["-np", str(mpi)] + cmd
    return run(cmd, ok=False)


if not MPI:
    # 1. hand-checked windows (tokens 0..9, seq 4): every target scored exactly once
    rc, out = run([TOOL, "windows", "10", "4", "2", "99"])
    want = ["0 1 2 3 4 | 1 1 1 1", "2 3 4 5 6 | 0 0 1 1", "4 5 6 7 8 | 0 0 1 1", "6 7 8 9 99 | 0 0 1 0",
            "8 9 99 99 99 | 0 0 0 0"]
    check(out.split("\n")[:-1] == want, "windows: --overlapping-eval 2, seq 4, 10 tokens (5 windows)", repr(out))
    rc, out = run([TOOL, "windows", "10", "4", "4", "99"])
    want = ["0 1 2 3 4 | 1 1 1 1", "4 5 6 7 8 | 1 1 1 1", "8 9 99 99 99 | 1 0 0 0"]
    check(out.split("\n")[:-1] == want, "windows: --overlapping-eval = seq (disjoint, 3 windows)", repr(out))
    rc, out = run([TOOL, "windows", "1", "4", "2", "99"])
    check(out.split("\n")[:-1] == ["0 99 99 99 99 | 0 0 0 0"], "windows: one token, one empty window", repr(out))
    # random shapes against the transcription of _LMDataset
    bad = 0
    for trial in range(200):
        n, seq = rng.randint(1, 40), rng.randint(1, 9)
        ov = rng.randint(1, seq)
        rc, out = run([TOOL, "windows", str(n), str(seq), str(ov), "99"])
        want = ["%s | %s" % (" ".join(str(x if x != EOD else 99) for x in t), " ".join(str(x) for x in m))
                for t, m in lm_dataset(list(range(n)), seq, ov)]
        bad += out.split("\n")[:-1] != want
    check(bad == 0, "windows: 200 random (tokens, seq, overlap) equal to datasets.py's _LMDataset", "%d differ" % bad)

    # 2. hand-checked LAMBADA examples (character tokens: a=a, _ = 'Ġ' the space, E = end of document)
    def ids(s):
        return " ".join(str(EOD) if c == "E" else str(VOCAB["Ġ" if c == "_" else c]) for c in s)
    hand = os.path.join(tmp, "hand.jsonl")
    with open(hand, "w") as f:
        for t in ["ab cd", "ab cd ", "cd ab cd", "abcdefgh"]:
            f.write(json.dumps({"text": t}) + "\n")
    rc, out = run([TOOL, "lambada", hand, "6", "0", vocab_json, merges])
    want = [ids("ab_cdEE") + " | 0 0 0 1 0 0 | 0",       # non-strict: the last token d
            ids("ab_cd_E") + " | 0 0 0 0 1 0 | 0",       # the trailing space is the last token
            ids("d_ab_cd") + " | 0 0 0 0 0 1 | 1",       # 8 tokens > 7: the first dropped
            ids("bcdefgh") + " | 0 0 0 0 0 1 | 1"]
    check(out.split("\n")[:-1] == want, "LAMBADA non-strict: the last token is the label", "\n" + out + "\n".join(want))
    rc, out = run([TOOL, "lambada", hand, "6", "1", vocab_json, merges])
    want = [ids("ab_cdEE") + " | 0 1 1 1 0 0 | 0",       # strict: label ' cd' (3 tokens), context 'ab'
            ids("ab_cdEE") + " | 0 1 1 1 0 0 | 0",       # text.split()[-1]; the context stripped
            ids("d_ab_cd") + " | 0 0 0 1 1 1 | 1",       # rfind: the last 'cd'; 8 tokens, the first dropped
            ids("abcdefg") + " | 0 0 0 0 0 0 | 2"]       # no space: the label ' abcdefgh' (9 tokens), kept from h
    check(out.split("\n")[:-1][:3] == want[:3], "LAMBADA strict: the last word tokenized as ' ' + word",
          "\n" + out + "\n".join(want))
    # the fourth: context empty, label 9 tokens > 7: the last 7 kept, the first label token (now input 0) unscored
    check(out.split("\n")[3] == ids("bcdefgh") + " | 1 1 1 1 1 1 | 2", "LAMBADA strict: a label longer than the "
          "window keeps its last seq + 1 tokens", out.split("\n")[3])

    # 3. the detokenizers and the original-token count on random texts, against detokenizer.py
    pieces = ["s '", "/' 3/", " @-@ ", " @,@ ", " @.@ ", " : ", " ; ", " . ", " ! ", " ? ", " , ", "(", ")", "[", "]",
              "{", "}", '"', "'", "= = = =", "= =", " = ", " \u00b0 ", " \n", "\n ", " N ", " 's", " n't", "$ 1", "# 1",
              " ", "  ", "\u00a0", "\u3000", "\u2028", "\x1c", "\t", "\u0085", "a", "b", "N", "s", "1", "\u00e9"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    data = b"".join(b"%d\n" % len(t.encode()) + t.encode() for t in texts)
    for kind, fn in (("wiki", wikitext_detokenizer), ("ptb", ptb_detokenizer)):
        p = subprocess.run([TOOL, "detok", kind], input=data, stdout=subprocess.PIPE)
        got, raw = [], p.stdout
        while raw:
            n, rest = raw.split(b"\n", 1)
            got.append(rest[:int(n)].decode())
            raw = rest[int(n):]
        diff = [(t, g, fn(t)) for t, g in zip(texts, got) if g != fn(t)]
        check(p.returncode == 0 and len(got) == len(texts) and not diff, "%s detokenizer: 3000 random texts equal to "
              "detokenizer.py" % kind, repr(diff[:2]))
    p = subprocess.run([TOOL, "count"], input=data, stdout=subprocess.PIPE)
    counts = [int(x) for x in p.stdout.split()]
    want = [len(t.strip().split(" ")) for t in texts]
    check(counts == want, "original tokens: len(text.strip().split(' ')) on 3000 random texts",
          repr([(t, c, w) for t, c, w in zip(texts, counts, want) if c != w][:2]))

    # 4. the metrics against the NumPy transcription on the checkpoint's own logits
    for ov in (48, 16, 5):
        rc, out = evaluate("WIKITEXT103", wiki, ["--overlapping-eval", str(ov)])
        total, block = oracle(ck, "WIKITEXT103", wiki, SEQ, ov)
        got = total_of(out)
        check(rc == 0 and got is not None and abs(got - total) <= 1e-5 * abs(total),
              "WIKITEXT103 --overlapping-eval %d: summed loss %s, NumPy %.9g" % (ov, got, total), out[-500:])
        check(rc == 0 and block_of(out) == megatron_block("WIKITEXT103", got, ntok=len(tokenize(wikitext_detokenizer(
            open(wiki).read()))), norig=len(open(wiki).read().strip().split(" "))) and block is not None,
            "WIKITEXT103 --overlapping-eval %d: Megatron's result block" % ov, "\n%s\n%s" % (block_of(out), block))
        print(block_of(out))
    counts = []
    for strict in (0, 1):
        extra = ["--strict-lambada"] if strict else []
        rc, out = evaluate("LAMBADA", lamb, extra)
        total, block = oracle(ck, "LAMBADA", lamb, SEQ, strict=bool(strict))
        counts.append(total_of(out))
        check(rc == 0 and block_of(out) == block, "LAMBADA%s: %d of 24 correct, Megatron's block" %
              (" --strict-lambada" if strict else "", total), "\n%s\n%s" % (out[-800:], block))
        check("1 of them are longer than --seq-length 48 + 1 tokens" in out, "LAMBADA%s: the long example's "
              "truncation is said" % (" strict" if strict else ""), out[-600:])
        print(block_of(out))
    # strict needs every token of the last word: never more correct than the last token alone
    check(None not in counts and counts[1] <= counts[0], "LAMBADA: strict %s <= non-strict %s" % tuple(counts))
    # the micro batch does not change the results (a short last batch)
    rc, o1 = evaluate("LAMBADA", lamb, mbs="1")
    rc2, o5 = evaluate("LAMBADA", lamb, mbs="5")
    check(rc == 0 and rc2 == 0 and block_of(o1) == block_of(o5), "LAMBADA: micro batch 1 = micro batch 5")

    # the default --overlapping-eval (32) above a shorter --seq-length: disjoint windows, said; LAMBADA ignores it
    rc, o1 = evaluate("WIKITEXT103", wiki, ["--seq-length", "24"])
    rc2, o2 = evaluate("WIKITEXT103", wiki, ["--seq-length", "24", "--overlapping-eval", "24"])
    check(rc == 0 and rc2 == 0 and "the default 32 is larger than --seq-length 24; using 24" in o1 and
          total_of(o1) == total_of(o2), "WIKITEXT103 --seq-length 24 without --overlapping-eval = --overlapping-eval 24",
          o1[-400:])
    rc, o1 = evaluate("LAMBADA", lamb, ["--seq-length", "24"])
    check(rc == 0 and total_of(o1) is not None, "LAMBADA --seq-length 24 runs (no window stride involved)", o1[-400:])
    # 5. bad input: clear errors (exit 1, never a signal), naming the file, line, flag or checkpoint
    def refused(what, extra, needle, task="LAMBADA", path=lamb, ckpt=None):
        rc, out = evaluate(task, path, extra, ckpt=ckpt)
        check(rc == 1 and needle in out and "Traceback" not in out, "refused: " + what, "rc=%d\n%s" % (rc, out[-600:]))
    refused("missing task file", [], "--valid-data %s/nope.jsonl: cannot open" % tmp, path=tmp + "/nope.jsonl")
    badf = os.path.join(tmp, "bad.jsonl")
    for name, lines, needle in [("malformed JSON line", ['{"text": "a b"}', '{"text": "a b"', ''], ":2: not valid JSON"),
                                ("no text key", ['{"text": "a b"}', '{"txt": "a b"}'], ":2: no \"text\" key"),
                                ("text not a string", ['{"text": 3}'], ":1: \"text\" is not a string"),
                                ("empty line", ['{"text": "a b"}', '', '{"text": "a b"}'], ":2: empty line"),
                                ("empty file", [], "no examples (an empty file)")]:
        open(badf, "w").write("\n".join(lines) + ("\n" if lines else ""))
        refused(name, [], badf + needle if ":" in needle[:2] else needle, path=badf)
    open(badf, "w").write('{"text": "   "}\n')
    refused("strict LAMBADA text without words", ["--strict-lambada"], badf + ":1: \"text\" has no words", path=badf)
    refused("unknown task", ["--task", "RACE"], "--task RACE: evaluate_zeroshot runs LAMBADA and WIKITEXT103")
    refused("--overlapping-eval larger than --seq-length", ["--overlapping-eval", "64"],
            "--overlapping-eval 64 is larger than --seq-length 48", task="WIKITEXT103", path=wiki)
    refused("a checkpoint of another shape", ["--num-layers", "3"], "not in the checkpoint (a different architecture?)")
    refused("no checkpoint in --load", [], "no checkpoint there", ckpt=os.path.join(tmp, "empty"))
    one = os.path.join(tmp, "one.txt")
    open(one, "w").write("a")
    refused("a one-token WikiText file", [], "perplexity needs at least 2", task="WIKITEXT103", path=one)
    # a BERT checkpoint (pretrain_bert on tests/bert's fixture)
    fx = os.path.join(tmp, "fx")
    run([sys.executable, os.path.join(HERE, "..", "bert", "make_fixture.py"), fx])
    run([PREPROCESS, "--input", fx + "/corpus.jsonl", "--output-prefix", fx + "/corpus", "--workers", "1",
         "--vocab-file", fx + "/vocab.txt", "--tokenizer-type", "BertWordPieceLowerCase", "--split-sentences"])
    run([PRETRAIN_BERT, "--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length",
         str(SEQ), "--max-position-embeddings", str(SEQ), "--data-path", fx + "/corpus_text_sentence", "--vocab-file",
         fx + "/vocab.txt", "--split", "100,0,0", "--lr", "1e-3", "--train-iters", "2", "--eval-iters", "0",
         "--micro-batch-size", "2", "--save", fx + "/ck"])
    refused("a BERT checkpoint", [], "a BERT checkpoint (it holds ", ckpt=fx + "/ck")
    h = run([EVAL, "--help"])[1]
    check("--strict-lambada" in h and "--overlapping-eval" in h, "--help lists the task flags")

    # 7. a checkpoint trained with sparse_attention is evaluated with its run's layout, not densely: both tasks equal
    # NumPy's scoring of logits computed with the transcribed DeepSpeed layout as the attention mask, at SEQ and at
    # a shorter --seq-length (the layout's first blocks); dense scoring of the same weights differs
    train_sparse()
    for task, path, ex, seq in (("WIKITEXT103", wiki, ["--overlapping-eval", "16"], SEQ), ("LAMBADA", lamb, [], SEQ),
                                ("WIKITEXT103", wiki, ["--overlapping-eval", "16", "--seq-length", "32"], 32)):
        rc, out = evaluate(task, path, ex, ckpt=ck_sparse)
        a = total_of(out)
        total, block = oracle(ck_sparse, task, path, seq, 16, layout=sparse_layout(seq))
        close = a is not None and (abs(a - total) <= 1e-5 * max(abs(total), 1) if task == "WIKITEXT103" else a == total)
        check(rc == 0 and close and "sparse attention: mode fixed, block 8, %d x %d blocks per head" % (seq // 8, seq // 8)
              in out, "sparse checkpoint: %s at --seq-length %d = NumPy on logits with the DeepSpeed layout as the mask "
              "(%s vs %.9g)" % (task, seq, a, total), out[-800:])
        if task == "WIKITEXT103" and seq == SEQ:
            dense, _ = oracle(ck_sparse, task, path, seq, 16)
            # 5x the tolerance of the equality above: a dense evaluation would fail it
            check(abs(dense - total) > 5e-5 * abs(total), "sparse checkpoint: dense scoring of its weights differs "
                  "(%.9g vs %.9g) by more than the check above allows: the layout is applied" % (dense, total))
    refused("sparse checkpoint at a --seq-length that is not a multiple of its block", ["--seq-length", "44"],
            "--seq-length 44: --load %s was trained with sparse_attention (mode fixed, block 8) made for --seq-length "
            "48" % ck_sparse, ckpt=ck_sparse)
    refused("sparse checkpoint with another head count", ["--num-attention-heads", "2"],
            "--num-attention-heads 2: --load %s was trained with 4 heads" % ck_sparse, ckpt=ck_sparse)

    # 8. a checkpoint with MoE layers (docs/moe.md: 4 experts in layer 2, top-1; an eval capacity factor of 8 keeps
    # every token, so the scores do not depend on how the evaluation batches them): both tasks with the run's MoE flags
    # equal NumPy's scoring of the logits ckpt_logits computes with the checkpoint's saved MoE flags
    ck_moe = os.path.join(tmp, "ck_moe")
    moe = ["--num-experts", "4", "--moe-eval-capacity-factor", "8", "--moe-loss-coeff", "0.01"]
    run(train[:train.index("--train-iters")] + ["--train-iters", "40", "--save", ck_moe] + moe)
    for task, path, ex in (("WIKITEXT103", wiki, ["--overlapping-eval", "16"]), ("LAMBADA", lamb, [])):
        rc, out = evaluate(task, path, ex + moe, ckpt=ck_moe)
        a = total_of(out)
        total, _ = oracle(ck_moe, task, path, SEQ, 16)
        close = a is not None and (abs(a - total) <= 1e-5 * max(abs(total), 1) if task == "WIKITEXT103" else a == total)
        check(rc == 0 and close, "MoE checkpoint: %s = NumPy on its logits (%s vs %.9g)" % (task, a, total), out[-800:])
    rc, out = evaluate("WIKITEXT103", wiki, ["--overlapping-eval", "16"], ckpt=ck_moe)
    check(rc == 1 and "deepspeed_moe" in out and "Traceback" not in out, "refused: an MoE checkpoint evaluated without "
          "its MoE flags names the MoE tensors", "rc=%d\n%s" % (rc, out[-600:]))
else:
    # 6. layouts under mpirun: TP=2, PP=2, DP=2 equal to one process on both tasks
    base = {t: evaluate(t, p, ["--overlapping-eval", "16"] if t == "WIKITEXT103" else [])
            for t, p in (("WIKITEXT103", wiki), ("LAMBADA", lamb))}
    for layout, extra in (("TP=2", ["--tensor-model-parallel-size", "2"]),
                          ("PP=2", ["--pipeline-model-parallel-size", "2"]), ("DP=2", [])):
        for task, path in (("WIKITEXT103", wiki), ("LAMBADA", lamb)):
            ex = extra + (["--overlapping-eval", "16"] if task == "WIKITEXT103" else [])
            rc, out = evaluate(task, path, ex, mpi=2)
            a, b = total_of(out), total_of(base[task][1])
            same = rc == 0 and a is not None and b is not None and abs(a - b) <= 1e-5 * max(abs(b), 1)
            check(same and (task == "WIKITEXT103" or a == b), "%s %s = one process (%s vs %s)" % (layout, task, a, b),
                  out[-800:])
    # a checkpoint saved with TP=2 (2 processes), evaluated by one process and by TP=2: the same numbers
    ck2 = os.path.join(tmp, "ck_tp2")
    run(MPIRUN + ["-np", "2"] + train + ["--tensor-model-parallel-size", "2", "--save", ck2])
    r1 = evaluate("LAMBADA", lamb, ckpt=ck2)
    r2 = evaluate("LAMBADA", lamb, ["--tensor-model-parallel-size", "2"], ckpt=ck2, mpi=2)
    check("the checkpoint's 256 rows (this layout alone would pad to 128)" in r1[1], "TP=2 checkpoint in one process: "
          "scored over the checkpoint's 256 padded rows, said", r1[1][-600:])
    w1 = evaluate("WIKITEXT103", wiki, ckpt=ck2)
    w2 = evaluate("WIKITEXT103", wiki, ["--pipeline-model-parallel-size", "2"], ckpt=ck2, mpi=2)
    check(r1[0] == 0 and r2[0] == 0 and total_of(r1[1]) == total_of(r2[1]), "TP=2 checkpoint: LAMBADA in one process "
          "= in TP=2 (%s)" % total_of(r1[1]))
    a, b = total_of(w1[1]), total_of(w2[1])
    check(w1[0] == 0 and w2[0] == 0 and a is not None and b is not None and abs(a - b) <= 1e-5 * abs(a),
          "TP=2 checkpoint: WIKITEXT103 in one process = in PP=2 (%s vs %s)" % (a, b))
    total, block = oracle(ck2, "LAMBADA", lamb, SEQ)
    check(block_of(r2[1]) == block, "TP=2 checkpoint: LAMBADA under TP=2 = NumPy on its logits")
    # an MoE checkpoint saved with TP=2 (docs/moe.md: every tensor-parallel rank runs the whole MoE layer), evaluated
    # by one process and by TP=2 + DP: the same numbers
    ck_moe2 = os.path.join(tmp, "ck_moe_tp2")
    moe = ["--num-experts", "4", "--moe-eval-capacity-factor", "8", "--moe-loss-coeff", "0.01"]
    run(MPIRUN + ["-np", "2"] + train[:train.index("--train-iters")] + ["--train-iters", "20",
        "--tensor-model-parallel-size", "2", "--save", ck_moe2] + moe)
    m1 = evaluate("WIKITEXT103", wiki, ["--overlapping-eval", "16"] + moe, ckpt=ck_moe2)
    m2 = evaluate("WIKITEXT103", wiki, ["--overlapping-eval", "16", "--tensor-model-parallel-size", "2"] + moe,
                  ckpt=ck_moe2, mpi=2)
    a, b = total_of(m1[1]), total_of(m2[1])
    check(m1[0] == 0 and m2[0] == 0 and a is not None and b is not None and abs(a - b) <= 1e-5 * abs(a),
          "MoE checkpoint saved at TP=2: WIKITEXT103 in one process = in TP=2 (%s vs %s)" % (a, b), m2[1][-600:])
    # a checkpoint whose padded vocabulary (97 rows: --make-vocab-size-divisible-by 1) TP=2 cannot split: the run
    # holds 98 rows and scores over the checkpoint's 97 (its own cross-entropy), as one process does
    ck97 = os.path.join(tmp, "ck97")
    run(train[:train.index("--train-iters")] + ["--train-iters", "20", "--make-vocab-size-divisible-by", "1", "--save",
                                                ck97])
    tp97 = {}
    for task, path in (("WIKITEXT103", wiki), ("LAMBADA", lamb)):
        o1 = evaluate(task, path, ["--make-vocab-size-divisible-by", "1"], ckpt=ck97)
        o2 = evaluate(task, path, ["--tensor-model-parallel-size", "2"], ckpt=ck97, mpi=2)
        a, b = total_of(o1[1]), total_of(o2[1])
        check(o1[0] == 0 and o2[0] == 0 and a is not None and b is not None and abs(a - b) <= 1e-6 * max(abs(a), 1)
              and "the checkpoint's 97 rows" in o2[1], "97-row checkpoint: %s under TP=2 (98 rows) = one process "
              "(%s vs %s)" % (task, b, a), o2[1][-600:])
        tp97[task] = b
    total, _ = oracle(ck97, "WIKITEXT103", wiki, 48, 32)
    check(tp97["WIKITEXT103"] is not None and abs(tp97["WIKITEXT103"] - total) <= 1e-5 * total, "97-row checkpoint: "
          "WIKITEXT103 under TP=2 = NumPy on its 97-row logits (%s vs %.9g)" % (tp97["WIKITEXT103"], total))

    # a ZeRO-3 checkpoint saved by 2 data-parallel ranks (parameters partitioned), evaluated by one process and PP=2
    cz = os.path.join(tmp, "ds_z3.json")
    json.dump({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3}}, open(cz, "w"))
    ckz = os.path.join(tmp, "ck_z3")
    run(MPIRUN + ["-np", "2"] + train[:train.index("--train-iters")] + ["--train-iters", "10", "--deepspeed",
                                                                           "--deepspeed_config", cz, "--save", ckz])
    z1 = evaluate("WIKITEXT103", wiki, ckpt=ckz)
    z2 = evaluate("WIKITEXT103", wiki, ["--pipeline-model-parallel-size", "2"], ckpt=ckz, mpi=2)
    total, _ = oracle(ckz, "WIKITEXT103", wiki, SEQ, 32)
    a, b = total_of(z1[1]), total_of(z2[1])
    check(a is not None and b is not None and abs(a - b) <= 1e-5 * a and abs(a - total) <= 1e-5 * total,
          "ZeRO-3 DP=2 checkpoint: WIKITEXT103 in one process = PP=2 = NumPy (%s, %s, %.9g)" % (a, b, total),
          z1[1][-500:] + z2[1][-500:])


    # a sparse_attention checkpoint saved with TP=2 (each rank its two heads' layouts) evaluated by one process and by
    # TP=2: the same numbers, equal to NumPy with the whole layout
    train_sparse(mpi=2)
    total, _ = oracle(ck_sparse, "WIKITEXT103", wiki, SEQ, 16, layout=sparse_layout(SEQ))
    s1 = evaluate("WIKITEXT103", wiki, ["--overlapping-eval", "16"], ckpt=ck_sparse)
    s2 = evaluate("WIKITEXT103", wiki, ["--overlapping-eval", "16", "--tensor-model-parallel-size", "2"],
                  ckpt=ck_sparse, mpi=2)
    a, b = total_of(s1[1]), total_of(s2[1])
    check(a is not None and b is not None and abs(a - b) <= 1e-5 * a and abs(a - total) <= 1e-5 * total,
          "sparse TP=2 checkpoint: WIKITEXT103 in one process = TP=2 = NumPy with the layout (%s, %s, %.9g)" %
          (a, b, total), s1[1][-500:] + s2[1][-500:])

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(summary())
