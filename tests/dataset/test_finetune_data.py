#!/usr/bin/env python3
"""finetune_bert's data parity: data/finetune_data.c (through finetune_data_dump) against an independent Python
transcription, written here, of Megatron-DeepSpeed's finetuning readers (tasks/glue/{mnli,qqp,qnli,sst2,cola,mrpc,
rte}.py, tasks/race/data.py), tasks/data_utils.py (clean_text, build_tokens_types_paddings_from_ids) and the
name_from_datapath functions, over tests/tokenizer/test_bert_oracle.py's WordPiece (RefBert); and the sample order
against torch itself: torch.randperm on a seeded CPU generator, DistributedSampler + DataLoader.

Fixtures are generated in a temporary directory for every task's train / dev / test layouts (GLUE's real headers),
with runs of spaces, U+00A0 / U+3000 / U+2028 / U+001C whitespace, ' . ' runs, CRLF and lone CR line ends, texts long
enough to be trimmed, the rows Megatron skips with a warning, uids with a sign, '_' or Arabic-Indic digits, a
header-less CoLA file, and RACE directories of JSON lines with '_' questions. Every field of every sample, the log
lines, and the refusals (non-zero exit naming the file and line) are checked.

usage: test_finetune_data.py finetune_data_dump
Exit 77 (SKIP) without torch or NumPy."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

try:
    import numpy  # noqa: F401  (torch's DataLoader collates through it)
    import torch
except ImportError as e:
    print("SKIP: torch / NumPy not available to this Python (%s): %s" % (sys.executable, e))
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
from test_bert_oracle import RefBert  # noqa: E402

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
    sys.stdout.flush()
    return ok


# ---- the transcription of Megatron's tasks/ code ----------------------------------------------------------------


def clean_text(text):
    text = text.replace("\n", " ")
    text = re.sub(r"\s+", " ", text)
    for _ in range(3):
        text = text.replace(" . ", ". ")
    return text


def build_ids(a, b, seq, cls, sep, pad):
    ids, types, pads = [cls] + list(a) + [sep], [0] * (len(a) + 2), [1] * (len(a) + 2)
    if b is not None:
        ids += list(b)
        types += [1] * len(b)
        pads += [1] * len(b)
    cut = len(ids) >= seq
    if cut:
        ids, types, pads = ids[:seq - 1], types[:seq - 1], pads[:seq - 1]
    if b is not None or cut:
        ids.append(sep)
        types.append(1 if b is not None else 0)
        pads.append(1)
    n = seq - len(ids)
    if n > 0:
        ids += [pad] * n
        types += [pad] * n
        pads += [0] * n
    return ids, types, pads


class Fail(Exception):
    pass


# Each GLUE task: (test header rule, train column count, text columns, uid rule, label rule, LABELS)
STR_LABELS = {"MNLI": {"contradiction": 0, "entailment": 1, "neutral": 2},
              "QNLI": {"entailment": 0, "not_entailment": 1}, "RTE": {"entailment": 0, "not_entailment": 1}}
TEST_LABEL = {"MNLI": "contradiction", "QQP": 0, "QNLI": "entailment", "SST-2": 0, "CoLA": 0, "MRPC": 0,
              "RTE": "entailment"}


def glue_file(task, filename, log):
    """One file as Megatron's <task>Dataset.process_samples_from_single_path reads it (raises Fail where it fails)."""
    try:
        return glue_file_(task, filename, log)
    except UnicodeDecodeError as e:
        raise Fail("%s: %s" % (filename, e))


def glue_file_(task, filename, log):
    log.append(" > Processing {} ...".format(filename))
    samples, total, first, is_test = [], 0, True, False
    with open(filename, "r", encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            where = "%s:%d" % (filename, no)
            row = line.strip().split("\t")
            try:
                if first:
                    first = False
                    if task == "MNLI":
                        if len(row) == 10:
                            is_test = True
                            log.append("   reading {}, {} and {} columns and setting labels to {}".format(
                                row[0].strip(), row[8].strip(), row[9].strip(), TEST_LABEL[task]))
                        else:
                            log.append("    reading {} , {}, {}, and {} columns ...".format(
                                row[0].strip(), row[8].strip(), row[9].strip(), row[-1].strip()))
                        continue
                    if task in ("QQP", "QNLI", "RTE"):
                        if len(row) == 3:
                            is_test = True
                            log.append("   reading {}, {}, and {} columns and setting labels to {}".format(
                                row[0].strip(), row[1].strip(), row[2].strip(), TEST_LABEL[task]))
                        elif task == "QQP":
                            assert len(row) == 6
                            log.append("    reading {}, {}, {}, and {} columns ...".format(
                                row[0].strip(), row[3].strip(), row[4].strip(), row[5].strip()))
                        else:
                            assert len(row) == 4
                            log.append("    reading {}, {}, {}, and {} columns ...".format(
                                row[0].strip(), row[1].strip(), row[2].strip(), row[3].strip()))
                        continue
                    if task == "SST-2":
                        if row[0].strip() == "index":
                            is_test = True
                            log.append("   reading {} and {} columns and setting labels to {}".format(
                                row[0].strip(), row[1].strip(), TEST_LABEL[task]))
                        else:
                            assert len(row) == 2
                            log.append("    reading {} and {} columns ...".format(row[0].strip(), row[1].strip()))
                        continue
                    if task == "CoLA":
                        if len(row) == 2:
                            is_test = True
                            log.append("   reading {} and {} columns and setting labels to {}".format(
                                row[0].strip(), row[1].strip(), TEST_LABEL[task]))
                            continue
                    if task == "STS-B":
                        if len(row) == 9:
                            is_test = True
                            log.append("   reading {}, {}, and {} columns and setting labels to {}".format(
                                row[0].strip(), row[7].strip(), row[8].strip(), 0.0))
                        else:
                            assert len(row) == 10
                            log.append("    reading {}, {}, {}, and {} columns ...".format(
                                row[0].strip(), row[7].strip(), row[8].strip(), row[-1].strip()))
                        continue
                    if task == "MRPC":
                        if row[0].strip() == "index":
                            is_test = True
                            log.append("   reading {}, {}, and {} columns and setting labels to {}".format(
                                row[0].strip(), row[3].strip(), row[4].strip(), TEST_LABEL[task]))
                        else:
                            assert len(row) == 5
                            log.append("    reading {}, {}, and {} columns ...".format(
                                row[0].strip(), row[3].strip(), row[4].strip()))
                        continue
                s = glue_row(task, row, is_test, total, log, where)
            except (AssertionError, IndexError, ValueError, OverflowError) as e:
                raise Fail("%s: %s %s" % (where, type(e).__name__, e))
            if s is None:
                continue
            total += 1
            samples.append(s)
            if total % 50000 == 0:
                log.append("  > processed {} so far ...".format(total))
    log.append(" >> processed {} samples.".format(len(samples)))
    return samples


def glue_row(task, row, is_test, total, log, where):
    def skip(why):
        log.append("***WARNING*** {}, skipping: {} ({})".format(why, row, where))

    if task == "STS-B":  # tasks/glue/stsb.py, then build_sample's int(label)
        if is_test:
            assert len(row) == 9
            uid, a, b, label = int(row[0].strip()), clean_text(row[7].strip()), clean_text(row[8].strip()), 0.0
            assert len(a) > 0 and len(b) > 0
        else:
            if len(row) != 10:
                skip("index error")
                return None
            uid, a, b = int(row[0].strip()), clean_text(row[7].strip()), clean_text(row[8].strip())
            label = float(row[-1].strip())
            if len(a) == 0:
                skip("zero length a")
                return None
            if len(b) == 0:
                skip("zero length b")
                return None
        assert uid >= 0
        return dict(a=a, b=b, label=int(label), uid=uid)
    if task == "MNLI":
        a, b = clean_text(row[8].strip()), clean_text(row[9].strip())
        uid = int(row[0].strip())
        label = TEST_LABEL[task] if is_test else row[-1].strip()
        assert len(a) > 0 and len(b) > 0
        assert label in STR_LABELS[task]
        assert uid >= 0
        return dict(a=a, b=b, label=STR_LABELS[task][label], uid=uid)
    pair = task not in ("SST-2", "CoLA")
    if is_test:
        assert len(row) == {"SST-2": 2, "CoLA": 2, "MRPC": 5}.get(task, 3)
        uid = int(row[0].strip())
        ia, ib = (3, 4) if task == "MRPC" else (1, 2)
        a = clean_text(row[ia].strip())
        b = clean_text(row[ib].strip()) if pair else None
        label = TEST_LABEL[task]
        assert len(a) > 0
        assert b is None or len(b) > 0
    else:
        if len(row) != {"QQP": 6, "SST-2": 2, "MRPC": 5}.get(task, 4):
            skip("index error")
            return None
        if task == "QQP":
            uid, a, b, label = int(row[0].strip()), row[3], row[4], int(row[5].strip())
        elif task in ("QNLI", "RTE"):
            uid, a, b, label = int(row[0].strip()), row[1], row[2], row[-1].strip()
        elif task == "SST-2":
            uid, a, b, label = total, row[0], None, int(row[-1].strip())
        elif task == "CoLA":
            uid, a, b, label = total, row[3], None, int(row[1].strip())
        else:  # MRPC
            uid, a, b, label = total, row[3], row[4], int(row[0].strip())
        a = clean_text(a.strip())
        b = clean_text(b.strip()) if b is not None else None
        if len(a) == 0:
            skip("zero length a")
            return None
        if b is not None and len(b) == 0:
            skip("zero length b")
            return None
    labels = STR_LABELS.get(task, [0, 1])
    assert label in labels
    assert uid >= 0
    return dict(a=a, b=b, label=labels[label] if task in STR_LABELS else label, uid=uid)


def race_path(datapath, tok, seq, log):
    log.append("   > working on {}".format(datapath))
    import glob
    names = sorted(glob.glob(os.path.join(datapath, "*.txt")))  # zerotron's documented order
    if not names:
        raise Fail("%s: no *.txt" % datapath)
    samples, docs, questions, n = [], 0, 0, 0
    for name in names:
        with open(name, "r", encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                try:
                    data = json.loads(line)
                    docs += 1
                    context, qs, opts, answers = data["article"], data["questions"], data["options"], data["answers"]
                    assert len(qs) == len(answers) and len(qs) == len(opts)
                    ctx = tok.encode(clean_text(context))
                    for qi, q in enumerate(qs):
                        questions += 1
                        label = ord(answers[qi]) - ord("A")
                        assert 0 <= label < 4
                        assert len(opts[qi]) == 4
                        seqs = []
                        for choice in opts[qi]:
                            qa = q.replace("_", choice) if "_" in q else " ".join([q, choice])
                            qa_ids = tok.encode(clean_text(qa))[:128]
                            seqs.append(build_ids(qa_ids, ctx, seq, tok.cls, tok.sep, tok.pad))
                        samples.append(dict(seqs=seqs, label=label, uid=n))
                        n += 1
                except (AssertionError, KeyError, ValueError, TypeError) as e:
                    raise Fail("%s:%d: %s %s" % (name, no, type(e).__name__, e))
    log.append("    > processed {} document, {} questions, and {} samples in X seconds".format(docs, questions, n))
    return samples


class Tok:
    def __init__(self, vocab, lower):
        self.ref = RefBert(vocab, lower)
        self.cls, self.sep, self.pad = (self.ref.vocab[t] for t in ("[CLS]", "[SEP]", "[PAD]"))
        self.cache = {}

    def encode(self, text):
        if text not in self.cache:
            self.cache[text] = self.ref.encode(text)
        return self.cache[text]


def oracle(task, name, paths, tok, seq):
    log = [" > building {} dataset for {}:".format(task, name), "  > paths: " + " ".join(paths)]
    out = []
    for p in paths:
        if task == "RACE":
            out += race_path(p, tok, seq, log)
        else:
            for s in glue_file(task, p, log):
                seqs = [build_ids(tok.encode(s["a"]), tok.encode(s["b"]) if s["b"] is not None else None, seq,
                                  tok.cls, tok.sep, tok.pad)]
                out.append(dict(seqs=seqs, label=s["label"], uid=s["uid"]))
    log.append("  >> total number of samples: {}".format(len(out)))
    return out, log


def name_from_datapath(task, path):
    if task == "RACE":
        return path.split("RACE")[-1].strip("/").replace("/", "-")
    return path.split(task)[-1].strip(".tsv").strip("/").replace("_", "-")


# ---- running the C side -------------------------------------------------------------------------------------------


def run_dump(args):
    return subprocess.run([DUMP] + [str(a) for a in args], capture_output=True)


def c_load(task, name, paths, vocab, lower, seq):
    p = run_dump([task, seq, vocab, lower, name] + paths)
    if p.returncode != 0:
        return None, None, p.stderr.decode("utf-8", "replace")
    samples, log, meta = [], [], None
    for line in p.stdout.decode("utf-8").split("\n"):
        if line.startswith('{"uid"'):
            samples.append(json.loads(line))
        elif line.startswith('{"name"'):
            meta = json.loads(line)
        elif line:
            log.append(line)
    return samples, log, meta


def compare(label, task, name, paths, vocab, lower, seq, tok):
    want, wlog = oracle(task, name, paths, tok, seq)
    got, glog, meta = c_load(task, name, paths, vocab, lower, seq)
    if got is None:
        return check(label, False, "C refused: " + meta if meta else glog)
    glog = [re.sub(r"in \d+\.\d\d seconds$", "in X seconds", x) for x in glog]
    bad = []
    if len(got) != len(want):
        bad.append("%d samples, want %d" % (len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        diff = [k for k in ("uid", "label") if g[k] != w[k]]
        for c, s in enumerate(w["seqs"]):
            diff += ["%s[%d]: C %s, want %s" % (k, c, g[k][c], s[f]) for f, k in enumerate(("ids", "types", "paddings"))
                     if g[k][c] != s[f]]
        if diff:
            bad.append("sample %d (uid %s, label %s; want %s, %s): %s" % (i, g["uid"], g["label"], w["uid"],
                                                                        w["label"], "; ".join(diff)[:400]))
            break
    if glog != wlog:
        diff = [(a, b) for a, b in zip(glog, wlog) if a != b][:2]
        bad.append("log differs (%d vs %d lines): %r" % (len(glog), len(wlog), diff or (glog[-3:], wlog[-3:])))
    if meta is None or meta["name"] != name[:255] or meta["n"] != len(want):
        bad.append("meta %r" % meta)
    return check("%s (%d samples, seq %d)" % (label, len(want), seq), not bad, "; ".join(bad))


# ---- fixtures -------------------------------------------------------------------------------------------------------

WORDS = ["the", "cat", "dog", "sat", "on", "mat", "unaffable", "hello", "world", "what", "is", "a", "it", "runs",
         "fast", "slow", "Paris", "capital", "of", "France", "question", "answer", "café", "naïve", "東京", "über",
         "don't", "U.S.", "x-ray", "50%", "#tag", "e-mail", "Ünïcödé", "zzzq"]
SPACES = [" ", "  ", "\u00a0", "\u3000", " \u2028 ", "\x1c", "\x0b", "\x0c", " \u2003\u2009 ", "\u0085"]


def make_vocab(d):
    vocab = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # [PAD] is 3: padded types must read 3, not 0
    vocab += ["the", "cat", "dog", "sat", "on", "mat", "un", "##aff", "##able", "hello", "world", "what", "is", "it",
              "run", "##s", "fast", "slow", "paris", "capital", "of", "france", "question", "answer", "cafe", "naive",
              "東", "京", "uber", "don", "'", "t", "u", "s", ".", "x", "-", "ray", "50", "%", "#", "tag", "e", "mail",
              "unicode", ",", "?", "!", "_", "Paris", "The"]
    vocab += [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["##" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    path = os.path.join(d, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(dict.fromkeys(vocab)) + "\n")
    return path


def rtext(rng, lo=1, hi=12):
    parts = []
    for _ in range(rng.randint(lo, hi)):
        r = rng.random()
        parts.append(rng.choice([" . ", ". ", " .", "  .  . "]) if r < 0.12 else rng.choice(WORDS))
        parts.append(rng.choice(SPACES) if rng.random() < 0.3 else " ")
    return "".join(parts).strip(" ")


def write(path, lines, end="\n"):
    with open(path, "wb") as f:
        f.write(end.join(lines).encode("utf-8") + end.encode())
    return path


def long_text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def glue_fixtures(d, rng):
    """{task: [(label, name, [paths], seq)]}"""
    fx = {}
    g = os.path.join(d, "glue")
    for t in ("MNLI", "QQP", "QNLI", "SST-2", "CoLA", "MRPC", "RTE", "STS-B"):
        os.makedirs(os.path.join(g, t), exist_ok=True)
    P = lambda t, n: os.path.join(g, t, n)  # noqa: E731
    # MNLI: train 12 columns, dev 16, test 10
    mh = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
          "sentence1_parse", "sentence2_parse", "sentence1", "sentence2"]
    labs = ["contradiction", "entailment", "neutral"]
    rows = ["\t".join(mh + ["label1", "gold_label"])]
    uids = ["0", " 7 ", "+12", "1_000", "\u0661\u0662", "０３"]  # int() takes a sign, '_', Unicode digits
    for i in range(40):
        a = long_text(rng, 40) if i % 9 == 0 else rtext(rng)
        b = long_text(rng, 30) if i % 7 == 0 else rtext(rng)
        uid = uids[i] if i < len(uids) else str(100 + i)
        rows.append("\t".join([uid, "p", "q", "fiction", "( x )", "( y )", "(S x)", "(S y)", a, b,
                               rng.choice(labs), " %s " % rng.choice(labs)]))
    train = write(P("MNLI", "train.tsv"), rows)
    rows = ["\t".join(mh + ["label1", "label2", "label3", "label4", "label5", "gold_label"])]
    for i in range(15):
        rows.append("\t".join([str(i), "p", "q", "slate", "", "", "", "", rtext(rng), rtext(rng)] + ["neutral"] * 5 +
                              [rng.choice(labs)]))
    dev_m = write(P("MNLI", "dev_matched.tsv"), rows, end="\r\n")
    dev_mm = write(P("MNLI", "dev_mismatched.tsv"), rows[:1] + rows[5:])
    rows = ["\t".join(mh)] + ["\t".join([str(i), "p", "q", "g", "", "", "", "", rtext(rng), rtext(rng)])
                              for i in range(10)]
    test = write(P("MNLI", "test_matched.tsv"), rows)
    fx["MNLI"] = [("MNLI train", "training", [train], 32), ("MNLI train seq 1", "training", [train], 1),
                  ("MNLI train seq 2", "training", [train], 2), ("MNLI train seq 3", "training", [train], 3),
                  ("MNLI dev matched + mismatched", "validation", [dev_m, dev_mm], 128),
                  ("MNLI test", name_from_datapath("MNLI", test), [test], 24)]
    # QQP: train 6 columns with the skipped rows, test 3
    rows = ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"]
    for i in range(30):
        rows.append("\t".join([str(i), str(2 * i), str(2 * i + 1), rtext(rng), rtext(rng), str(rng.randint(0, 1))]))
    rows.insert(5, "77\t1\t2\tonly five columns\t1")                       # index error
    rows.insert(8, "78\t1\t2\t \u3000 \t" + rtext(rng) + "\t1")           # zero length a
    rows.insert(11, "79\t1\t2\t" + rtext(rng) + "\t\u00a0\t0")            # zero length b
    rows.insert(13, "80\t1\t2\t\t\t7")                                      # skipped before its bad label is seen
    rows.insert(15, "")                                                     # an empty line: index error
    rows.insert(17, "81\t1\t2\tq\tq2\t1\t")                               # the trailing tab goes with strip()
    rows.insert(19, "\t82\t1\t2\tq 'quoted'\tq2 \"dq\" \x0b\t1  ")        # strip() takes the leading tab
    rows.insert(21, "83\tq 'x'\t\"y\" \x0b\x7f\u200b\U0001F600 \\ z\t1")            # repr()'s quotes and escapes
    train = write(P("QQP", "train.tsv"), rows)
    rows = ["id\tquestion1\tquestion2"] + ["\t".join([str(i), rtext(rng), rtext(rng)]) for i in range(12)]
    test = write(P("QQP", "test.tsv"), rows)
    fx["QQP"] = [("QQP train", "training", [train], 20), ("QQP test", name_from_datapath("QQP", test), [test], 64)]
    # QNLI: CRLF train, test
    rows = ["index\tquestion\tsentence\tlabel"]
    for i in range(25):
        rows.append("\t".join([str(i), rtext(rng), long_text(rng, 25) if i % 5 == 0 else rtext(rng),
                               rng.choice(["entailment", "not_entailment"])]))
    rows.insert(4, "90\tq\tonly three")
    rows.insert(6, "91\t\t" + rtext(rng) + "\tentailment")
    train = write(P("QNLI", "train.tsv"), rows, end="\r\n")
    rows = ["index\tquestion\tsentence"] + ["\t".join([str(i), rtext(rng), rtext(rng)]) for i in range(8)]
    test = write(P("QNLI", "test.tsv"), rows)
    fx["QNLI"] = [("QNLI train", "training", [train], 24), ("QNLI test", "test", [test], 40)]
    # SST-2: train (a lone CR splits a row into two lines: Python's universal newlines), test
    rows = ["sentence\tlabel"] + ["%s\t%d" % (rtext(rng), rng.randint(0, 1)) for _ in range(25)]
    rows.insert(3, "a b\rc d\t1")
    rows.insert(6, "three\tcolumns\t0")
    rows.insert(9, " \u2028 \t1")
    train = write(P("SST-2", "train.tsv"), rows)
    rows = ["index\tsentence"] + ["%d\t%s" % (i, rtext(rng)) for i in range(10)]
    test = write(P("SST-2", "test.tsv"), rows)
    big = write(P("SST-2", "big.tsv"), ["sentence\tlabel"] + ["%s\t%d" % (rng.choice(WORDS[:6]), i % 2)
                                                               for i in range(50003)])
    fx["SST-2"] = [("SST-2 train", "training", [train], 12), ("SST-2 test", "test", [test], 16),
                   ("SST-2 50003 rows (progress lines)", "training", [big], 4)]
    # CoLA: train without a header (its first line is data), test with one
    rows = ["gj04\t%d\t%s\t%s" % (l, "" if l else "*", rtext(rng)) for l in [rng.randint(0, 1) for _ in range(25)]]
    rows.insert(4, "gj04\t1\tthree")
    rows.insert(7, "gj04\t1\t\t \x0c ")
    train = write(P("CoLA", "train.tsv"), rows)
    rows = ["index\tsentence"] + ["%d\t%s" % (i, rtext(rng)) for i in range(9)]
    test = write(P("CoLA", "test.tsv"), rows)
    fx["CoLA"] = [("CoLA train (no header)", "training", [train], 16), ("CoLA test", "test", [test], 16)]
    # MRPC
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    rows += ["%d\t%d\t%d\t%s\t%s" % (rng.randint(0, 1), i, i + 1, rtext(rng), rtext(rng)) for i in range(25)]
    rows.insert(3, "1\t2\t3\tfour")
    rows.insert(5, "0\t2\t3\t\u3000\tx")
    rows.insert(7, "0\t2\t3\tx\t ")
    train = write(P("MRPC", "msr_paraphrase_train.tsv"), rows)
    rows = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    rows += ["%d\t%d\t%d\t%s\t%s" % (i, i, i + 1, rtext(rng), rtext(rng)) for i in range(8)]
    test = write(P("MRPC", "test.tsv"), rows)
    fx["MRPC"] = [("MRPC train", "training", [train], 20), ("MRPC test", "test", [test], 20)]
    # RTE
    rows = ["index\tsentence1\tsentence2\tlabel"]
    rows += ["%d\t%s\t%s\t%s" % (i, long_text(rng, 20) if i % 6 == 0 else rtext(rng), rtext(rng),
                                 rng.choice(["entailment", "not_entailment"])) for i in range(20)]
    rows.insert(2, "5\tx\ty\tz\tw")
    train = write(P("RTE", "train.tsv"), rows)
    rows = ["index\tsentence1\tsentence2"] + ["%d\t%s\t%s" % (i, rtext(rng), rtext(rng)) for i in range(7)]
    test = write(P("RTE", "test.tsv"), rows)
    fx["RTE"] = [("RTE train", "training", [train], 24), ("RTE train + test", "validation", [train, test], 24)]
    # STS-B: train and dev with 10 columns (float scores, truncated by build_sample's int()), test with 9
    sh = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
    scores = ["3.800", " 0.5 ", "-1.5", "5", "1_0.25", "4e-1", "2.", ".75", "+2.999", "INF"[:0] + "1.0E+0"]
    rows = [sh + "\tscore"]
    rows += ["%d\tmain-news\tf\t2012\t%d\tnone\tnone\t%s\t%s\t%s" % (i, i, rtext(rng), rtext(rng),
                                                                   scores[i % len(scores)]) for i in range(24)]
    rows.insert(3, "70\tg\tf\t2012\t1\ts\ts\tonly nine")            # index error
    rows.insert(6, "71\tg\tf\t2012\t1\ts\ts\t \u3000\tb\t1.0")     # zero length a
    rows.insert(9, "72\tg\tf\t2012\t1\ts\ts\ta\t\u00a0\t2.0")     # zero length b
    train = write(P("STS-B", "train.tsv"), rows)
    rows = [sh] + ["%d\tg\tf\t2012\t%d\ts\ts\t%s\t%s" % (i, i, rtext(rng), rtext(rng)) for i in range(6)]
    test = write(P("STS-B", "test.tsv"), rows)
    fx["STS-B"] = [("STS-B train", "training", [train], 24), ("STS-B test", name_from_datapath("STS-B", test),
                                                               [test], 32)]
    return fx


def race_doc(rng, nq, long_q=False):
    qs, opts, ans = [], [], []
    for i in range(nq):
        q = rtext(rng, 2, 6)
        if i % 2 == 0:
            q = q + " _ " + rtext(rng, 1, 3) if i % 4 else "_ " + q + " _"
        if long_q and i == 0:
            q = long_text(rng, 140) + " _"
        qs.append(q)
        opts.append([rtext(rng, 1, 4) for _ in range(4)])
        ans.append("ABCD"[rng.randint(0, 3)])
    art = rtext(rng, 5, 40).replace(" ", "\n", 2) + "  .  more  text . \U0001F600 \t\u00e9"
    return json.dumps({"answers": ans, "options": opts, "questions": qs, "article": art, "id": "x.txt"},
                      ensure_ascii=rng.random() < 0.5)


def race_fixtures(d, rng):
    base = os.path.join(d, "RACE")
    mid, high, empty = (os.path.join(base, "dev", x) for x in ("middle", "high", "empty"))
    for p in (mid, high, empty):
        os.makedirs(p)
    # created out of order; "B.txt" < "a.txt" < "b.txt" bytewise; hidden and non-.txt files are not read
    for name, n in (("b.txt", 3), ("a.txt", 2), ("B.txt", 1)):
        write(os.path.join(mid, name), [race_doc(rng, rng.randint(1, 4), long_q=name == "a.txt") for _ in range(n)])
    write(os.path.join(mid, "c.txt"), ['{"article": "first", "questions": ["q _ _ end"], "article": " second\\u3000one ",'
                                       ' "options": [["w", "x", "y", "z"]], "answers": ["D"]}'])  # the last key wins
    write(os.path.join(mid, ".hidden.txt"), ["not json"])
    write(os.path.join(mid, "notes.json"), ["not json"])
    write(os.path.join(high, "1.txt"), [race_doc(rng, 3) for _ in range(4)], end="\r\n")
    write(os.path.join(empty, "x.json"), ["{}"])
    return base, mid, high, empty


# ---- the checks ---------------------------------------------------------------------------------------------------


def check_datasets(d, rng, vocab):
    toks = {1: Tok(vocab, True), 0: Tok(vocab, False)}
    fx = glue_fixtures(d, rng)
    for task, cases in fx.items():
        for k, (label, name, paths, seq) in enumerate(cases):
            lower = 0 if task == "MRPC" and k == 1 else 1
            compare(label, task, name, paths, vocab, lower, seq, toks[lower])
    base, mid, high, _ = race_fixtures(d, rng)
    compare("RACE dev/middle", "RACE", name_from_datapath("RACE", mid), [mid], vocab, 1, 200, toks[1])
    compare("RACE middle + high (uids restart per path)", "RACE", "training", [mid, high + "/"], vocab, 1, 48, toks[1])
    compare("RACE cased, seq 8", "RACE", "validation", [high], vocab, 0, 8, toks[0])


def check_clean_text(rng):
    alphabet = [" ", ".", "a", "b", "é", "\n", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u1680",
                "\u2000", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\x00",
                "\x7f", "\u180e", " . ", "\U0001F600"]
    texts = ["", " ", " . ", " . . . ", " .  . . .  . ", "a . . . . . . . b", "x .\u3000. \xa0. y", " ... . ."]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    p = subprocess.run([DUMP, "--clean"], input="".join(t.encode().hex() + "\n" for t in texts).encode(),
                       capture_output=True)
    got = [bytes.fromhex(x).decode() for x in p.stdout.decode().split("\n")[:-1]]
    bad = [(t, g, clean_text(t)) for t, g in zip(texts, got) if g != clean_text(t)]
    check("clean_text (%d texts)" % len(texts), p.returncode == 0 and len(got) == len(texts) and not bad,
          repr(bad[:3]))


def check_names():
    paths = [("MNLI", "/data/glue/MNLI/dev_matched.tsv"), ("MNLI", "/data/glue/MNLI/test.tsv"),
             ("MNLI", "MNLI/dev_mismatched.tsv"), ("MNLI", "/x/MNLI_v2/MNLI/sub/train_set.tsv"),
             ("MNLI", "/no/task/here/vals.tsv"), ("QQP", "/g/QQP/dev.tsv"), ("QNLI", "/g/QNLI/dev.tsv"),
             ("SST-2", "/g/SST-2/dev.tsv"), ("CoLA", "/g/CoLA/dev.tsv"), ("MRPC", "/g/MRPC/msr_paraphrase_test.tsv"),
             ("RTE", "/g/RTE/dev.tsv"), ("RTE", "/g/RTE/.tsv"), ("RACE", "/data/RACE/dev/middle"),
             ("RACE", "/data/RACE/test/high/"), ("RACE", "/data/RACE"), ("RACE", "race/dev_x")]
    bad = []
    for task, p in paths:
        got = run_dump(["--name", task, p]).stdout.decode().rstrip("\n")
        if got != name_from_datapath(task, p):
            bad.append("%s %s: C %r, want %r" % (task, p, got, name_from_datapath(task, p)))
    check("name_from_datapath (%d paths)" % len(paths), not bad, "; ".join(bad))


def torch_perm(seed, n):
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randperm(n, generator=g).tolist()


def check_perm():
    bad = []
    cases = 0
    for seed in (0, 1, 1234, 1235, 2 ** 31 + 7, 2 ** 32 + 5, 2 ** 40 + 1234):
        for n in (0, 1, 2, 3, 5, 10, 17, 100, 1000, 9999):
            cases += 1
            got = run_dump(["--perm", seed, n]).stdout.decode().split()
            if [int(x) for x in got] != torch_perm(seed, n):
                bad.append("seed %d n %d" % (seed, n))
    check("torch.randperm (%d seed x n cases)" % cases, not bad, ", ".join(bad[:5]))


class Range(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def torch_batches(n, W, B, drop, epoch):
    out = []
    for r in range(W):
        s = torch.utils.data.distributed.DistributedSampler(Range(n), num_replicas=W, rank=r)
        s.set_epoch(epoch)
        dl = torch.utils.data.DataLoader(Range(n), batch_size=B, sampler=s, shuffle=False, drop_last=drop)
        out.append([b.tolist() for b in dl])
    return out


def check_loader():
    bad, cases = [], 0
    for n in (0, 1, 2, 5, 7, 13, 33):
        for W in (1, 2, 3, 4):
            for B in (1, 2, 5):
                for drop in (0, 1):
                    for epoch in (0, 1234, 1235):
                        if n == 0 and epoch:
                            continue
                        cases += 1
                        want = torch_batches(n, W, B, bool(drop), epoch)
                        lines = run_dump(["--loader", n, W, B, drop, epoch]).stdout.decode().strip().split("\n")
                        per_rank, batches = (int(x) for x in lines[0].split())
                        got = [[] for _ in range(W)]
                        for ln in lines[1:]:
                            head, idx = ln.split(":")
                            r = int(head.split()[0])
                            got[r].append([int(x) for x in idx.split() if int(x) >= 0])
                        ok = got == want and all(len(w) == batches for w in want)
                        if n:
                            ok = ok and per_rank == len(torch.utils.data.distributed.DistributedSampler(
                                Range(n), num_replicas=W, rank=0))
                        if not ok:
                            bad.append("n %d W %d B %d drop %d epoch %d" % (n, W, B, drop, epoch))
    check("DistributedSampler + DataLoader (%d cases)" % cases, not bad, ", ".join(bad[:5]))


def check_refusals(d, rng, vocab):
    e = os.path.join(d, "bad")
    os.makedirs(e)
    hdr = {"MNLI": "\t".join(["index", "promptID", "pairID", "genre", "s1b", "s2b", "s1p", "s2p", "sentence1",
                              "sentence2", "label1", "gold_label"]),
           "QQP": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", "QNLI": "index\tquestion\tsentence\tlabel",
           "SST-2": "sentence\tlabel", "MRPC": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
           "RTE": "index\tsentence1\tsentence2\tlabel",
           "STS-B": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"}

    def stsb(uid, a, b, score):
        return "\t".join([uid, "g", "f", "2012", "1", "s", "s", a, b, score])

    def mnli(uid, a, b, lab):
        return "\t".join([uid, "p", "q", "g", "", "", "", "", a, b, "neutral", lab])

    ok_mnli = mnli("1", "the cat", "a dog", "neutral")
    cases = [  # (label, task, lines, bad line, text the message must hold)
        ("MNLI bad label", "MNLI", [hdr["MNLI"], ok_mnli, mnli("2", "x", "y", "maybe")], 3, "'maybe'"),
        ("MNLI empty sentence1", "MNLI", [hdr["MNLI"], ok_mnli, mnli("2", " \u3000", "y", "neutral")], 3, "empty"),
        ("MNLI too few columns", "MNLI", [hdr["MNLI"], "1\t2\t3\t4\t5"], 2, "IndexError"),
        ("MNLI header too short", "MNLI", ["a\tb\tc"], 1, "IndexError"),
        ("MNLI uid not an int", "MNLI", [hdr["MNLI"], mnli("1.5", "x", "y", "neutral")], 2, "'1.5'"),
        ("MNLI uid '1__0'", "MNLI", [hdr["MNLI"], mnli("1__0", "x", "y", "neutral")], 2, "'1__0'"),
        ("MNLI negative uid", "MNLI", [hdr["MNLI"], ok_mnli, mnli("-3", "x", "y", "neutral")], 3, "-3"),
        ("MNLI uid beyond int64", "MNLI", [hdr["MNLI"], mnli("9" * 20, "x", "y", "neutral")], 2, "int64"),
        ("QQP header of 5 columns", "QQP", ["id\tqid1\tqid2\tquestion1\tquestion2"], 1, "asserts 6"),
        ("QQP test row of 4 columns", "QQP", ["id\tquestion1\tquestion2", "1\ta\tb", "2\ta\tb\tc"], 3, "asserts 3"),
        ("QQP label 2", "QQP", [hdr["QQP"], "1\t1\t2\ta\tb\t2"], 2, "label 2"),
        ("QQP label not an int", "QQP", [hdr["QQP"], "1\t1\t2\ta\tb\tyes"], 2, "'yes'"),
        ("QNLI bad label", "QNLI", [hdr["QNLI"], "1\ta\tb\tentailment", "2\ta\tb\tneutral"], 3, "'neutral'"),
        ("SST-2 label not an int", "SST-2", [hdr["SST-2"], "good\t1", "bad\tx"], 3, "'x'"),
        ("SST-2 header of 3 columns", "SST-2", ["a\tb\tc"], 1, "asserts 2"),
        ("CoLA test row of whitespace text", "CoLA", ["index\tsentence", "0\ta", "1\t\u00a0"], 3, "asserts 2"),
        ("MRPC test empty text a", "MRPC", ["index\ta\tb\tc\td", "0\t1\t2\t\u3000 \tx"], 2, "empty"),
        ("MRPC header of 4 columns", "MRPC", ["Quality\t#1 ID\t#2 ID\t#1 String"], 1, "asserts 5"),
        ("MRPC test header of 3 columns", "MRPC", ["index\ta\tb"], 1, "IndexError"),
        ("RTE test row of whitespace text b", "RTE", ["index\tsentence1\tsentence2", "0\ta\t "], 2, "asserts 3"),
        ("STS-B score not a number", "STS-B", [hdr["STS-B"], stsb("1", "a", "b", "1.5"), stsb("2", "a", "b", "high")],
         3, "'high'"),
        ("STS-B score '1__0'", "STS-B", [hdr["STS-B"], stsb("1", "a", "b", "1__0")], 2, "'1__0'"),
        ("STS-B score nan (int() fails)", "STS-B", [hdr["STS-B"], stsb("1", "a", "b", "nan")], 2, "ValueError"),
        ("STS-B score inf (int() overflows)", "STS-B", [hdr["STS-B"], stsb("1", "a", "b", "-inf")], 2, "Overflow"),
        ("STS-B header of 9 columns is a test file: data of 10", "STS-B", [hdr["STS-B"][:-6], "1\tg\tf\ty\to\ts\ts\ta\tb\t3"],
         2, "asserts 9"),
        ("STS-B header of 8 columns", "STS-B", ["a\tb\tc\td\te\tf\tg\th"], 1, "asserts 10"),
        ("invalid UTF-8", "QNLI", [hdr["QNLI"], "1\ta\tb\tentailment", "2\ta\xff\tb\tentailment"], 3, "UTF-8"),
    ]
    for k, (label, task, lines, line, needle) in enumerate(cases):
        path = os.path.join(e, "%d.tsv" % k)
        with open(path, "wb") as f:
            f.write(("\n".join(lines) + "\n").encode("utf-8").replace("\u00ff".encode(), b"\xff"))
        megatron = None if "int64" in label else lambda: oracle(task, "training", [path], Tok(vocab, True), 16)
        refuse(label, [task, 16, vocab, 1, "training", path], "%s:%d" % (path, line), needle, megatron)
    refuse("missing file", ["RTE", 16, vocab, 1, "training", os.path.join(e, "nope.tsv")],
           os.path.join(e, "nope.tsv"), "cannot open", None)
    refuse("a directory as a GLUE file", ["RTE", 16, vocab, 1, "training", e], e, "directory", None)
    refuse("tokenizer without [CLS]", ["RTE", 16, vocab, "null", "training", os.path.join(e, "0.tsv")],
           "--tokenizer-type NullTokenizer", "[CLS]", None)

    def race_case(label, docs_lines, line, needle, megatron_fails=True):
        dd = os.path.join(e, "race%d" % len(os.listdir(e)))
        os.makedirs(dd)
        path = os.path.join(dd, "a.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(docs_lines) + "\n")
        refuse(label, ["RACE", 64, vocab, 1, "training", dd], "%s:%d" % (path, line), needle,
               (lambda: oracle("RACE", "training", [dd], Tok(vocab, True), 64)) if megatron_fails else None)

    good = race_doc(rng, 2)

    def doc(**kw):
        base = {"answers": ["A"], "options": [["a", "b", "c", "d"]], "questions": ["q _"], "article": "art"}
        base.update(kw)
        return json.dumps({k: v for k, v in base.items() if v is not None})

    race_case("RACE answer E", [good, doc(answers=["E"])], 2, "'E'")
    race_case("RACE answer of two letters", [good, doc(answers=["AB"])], 2, "'AB'")
    race_case("RACE 3 options", [doc(options=[["a", "b", "c"]])], 1, "3 options")
    race_case("RACE questions / answers lengths", [doc(answers=["A", "B"])], 1, "1 questions and 2 answers")
    race_case("RACE questions / options lengths", [doc(options=[])], 1, "1 questions and 0 options")
    race_case("RACE invalid JSON", [good, good, "{\"article\": "], 3, "JSON")
    race_case("RACE empty line", [good, ""], 2, "empty line")
    race_case("RACE missing article", [doc(article=None)], 1, "\"article\"")
    race_case("RACE missing options", [doc(options=None)], 1, "\"options\"")
    race_case("RACE option not a string", [doc(options=[["a", 2, "c", "d"]])], 1, "element 1 of list 0")
    # refused where Megatron reads on: a string of 4 characters as the 4 options, a lone surrogate (an [UNK])
    race_case("RACE options element not a list", [doc(questions=["a", "b"], answers=["A", "B"],
                                                      options=[["a", "b", "c", "d"], "abcd"])], 1, "element 1",
              megatron_fails=False)
    race_case("RACE lone surrogate escape", [good, doc(article="x\ud800y")], 2, "surrogate", megatron_fails=False)
    empty = os.path.join(e, "race_empty")
    os.makedirs(empty)
    refuse("RACE directory without *.txt", ["RACE", 64, vocab, 1, "training", empty], empty, "*.txt", None)
    refuse("RACE missing directory", ["RACE", 64, vocab, 1, "training", empty + "_nope"], empty + "_nope",
           "cannot open", None)


def refuse(label, args, where, needle, megatron):
    p = run_dump(args)
    err = p.stderr.decode("utf-8", "replace")
    ok = p.returncode != 0 and where in err and needle in err
    if ok and megatron is not None:  # the transcription of Megatron fails on the same input
        try:
            megatron()
            ok, err = False, "the Megatron transcription accepts it"
        except Fail:
            pass
    check("refused: " + label, ok, "rc %d: %s" % (p.returncode, err.strip()[-300:]))


def main():
    rng = random.Random(20240521)
    with tempfile.TemporaryDirectory() as d:
        vocab = make_vocab(d)
        check_datasets(d, rng, vocab)
        check_clean_text(rng)
        check_names()
        check_perm()
        check_loader()
        check_refusals(d, rng, vocab)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
