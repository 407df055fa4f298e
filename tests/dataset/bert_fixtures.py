"""Fixtures shared by the BERT and T5 dataset tests (test_bert_dataset.py, test_t5_dataset.py): a generated BERT
vocabulary (words, "##" continuations, letters), a generated corpus, and preprocess_data --split-sentences over it."""
import os
import subprocess

# ---- fixtures -----------------------------------------------------------------------------------------------------
WORDS = ("the of and to in is was he she it they we you that this with for on as at by from be have had not but or "
         "are his her their one two three day time year man woman city house river walk talk play work read write run "
         "jump think know see look make take give go come believe happy quick slow green blue red old new great "
         "small large good bad").split()
SUFFIXES = ["##ing", "##ed", "##s", "##er", "##ly", "##ness", "##able", "##est", "##ful", "##less"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def write_vocab(path, drop=(), repeat=None):
    lines = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"] + list(".,!?;:'\"()-") + WORDS + ["un", "re"] + SUFFIXES
    lines += list(LETTERS) + ["##" + c for c in LETTERS] + list("0123456789") + ["##" + c for c in "0123456789"]
    lines = list(dict.fromkeys(lines))  # each token once ("a" is a word and a letter)
    if repeat:
        lines.append(repeat)
    with open(path, "w") as f:
        f.write("".join(t + "\n" for t in lines if t not in drop))


def make_corpus(rng, ndocs, long_doc=False):
    def word():
        r = rng.random_sample()
        if r < 0.6:
            return WORDS[rng.randint(len(WORDS))]
        if r < 0.85:
            return WORDS[rng.randint(len(WORDS))] + ["ing", "ed", "s", "ly", "ness", "able"][rng.randint(6)]
        return "".join(LETTERS[rng.randint(26)] for _ in range(rng.randint(2, 9)))

    def sentence(nwords):
        ws = [word() for _ in range(nwords)]
        ws[0] = ws[0].capitalize()
        return " ".join(ws) + ".!?"[rng.randint(3)]

    docs = []
    for d in range(ndocs):
        if d % 37 == 5:
            docs.append("")  # an empty document
            continue
        nsent = 1 if d % 11 == 3 else int(rng.randint(2, 14))
        docs.append(" ".join(sentence(int(rng.randint(3, 26))) for _ in range(nsent)))
    def plain(ntokens):  # a sentence of exactly ntokens tokens (whole words and the final period)
        ws = [WORDS[rng.randint(len(WORDS))] for _ in range(ntokens - 1)]
        return " ".join([ws[0].capitalize()] + ws[1:]) + "."

    if long_doc:  # documents with a sentence over 512 tokens (skipped), of exactly 512 (kept), one alone (kept)
        docs.insert(7, sentence(8) + " " + sentence(700) + " " + sentence(6))
        docs.insert(9, plain(10) + " " + plain(551) + " " + plain(12))
        docs.insert(12, plain(10) + " " + plain(512) + " " + plain(12) + " " + plain(30))
        docs.insert(20, sentence(600))
    return docs


def preprocess(preprocess_bin, tmp, name, docs, vocab, split_sentences=True):
    src = os.path.join(tmp, name + ".jsonl")
    with open(src, "w") as f:
        for t in docs:
            f.write('{"text": "%s"}\n' % t)
    cmd = [preprocess_bin, "--input", src, "--output-prefix", os.path.join(tmp, name), "--vocab-file", vocab,
           "--tokenizer-type", "BertWordPieceLowerCase", "--workers", "1"]
    if split_sentences:
        cmd.append("--split-sentences")
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return os.path.join(tmp, name + ("_text_sentence" if split_sentences else "_text_document"))
