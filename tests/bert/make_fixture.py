"""Writes the BERT tests' fixture: a WordPiece vocab.txt (words, "##" continuations, letters, digits; the special
tokens unless dropped) and a generated corpus.jsonl of multi-sentence documents, from Python's seeded random.
usage: make_fixture.py DIR [--drop TOKEN ...]   (vocabulary variants: make_fixture.py DIR --vocab-only NAME --drop ...)
       make_fixture.py DIR --sop-order             (vocab.txt and order.jsonl: short documents whose first sentence,
                                                    and only it, holds the word "story", so that the sentence order
                                                    of a sample is visible: test_bert_sop_learns.sh)
"""
import os
import random
import sys

WORDS = ("the a of and to in is was he she it they we you for on with as at by from this that be have had not are "
         "but or an one two three all some word time day year people way man woman child world life hand part "
         "place case week work house school point group number story fact run walk talk play read write sing jump "
         "think know see look make take give go come happy quick slow green blue red old new great small large "
         "good bad").split()
SUFFIXES = ["##ing", "##ed", "##s", "##er", "##ly", "##ness"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SPECIAL = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def vocab_lines(drop=()):
    lines = SPECIAL + list(".,!?;:'\"()-") + WORDS + SUFFIXES + list(LETTERS) + ["##" + c for c in LETTERS]
    lines += list("0123456789")
    return [t for t in dict.fromkeys(lines) if t not in drop]


def corpus(rng, ndocs):
    def word():
        r = rng.random()
        if r < 0.7:
            return rng.choice(WORDS)
        if r < 0.9:
            return rng.choice(WORDS) + rng.choice(["ing", "ed", "s", "ly", "ness"])
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 6)))

    def sentence():
        ws = [word() for _ in range(rng.randint(3, 14))]
        return " ".join([ws[0].capitalize()] + ws[1:]) + rng.choice(".!?")

    return [" ".join(sentence() for _ in range(rng.randint(2, 9))) for _ in range(ndocs)]


def order_corpus(rng, ndocs):
    """Documents of 2-4 sentences of 3-6 plain words; "story" in the first sentence only, at a random place."""
    plain = [w for w in WORDS if w != "story"]
    docs = []
    for _ in range(ndocs):
        sents = []
        for i in range(rng.randint(2, 4)):
            ws = [rng.choice(plain) for _ in range(rng.randint(3, 6))]
            if i == 0:
                ws.insert(rng.randint(0, len(ws)), "story")
            sents.append(" ".join([ws[0].capitalize()] + ws[1:]) + ".")
        docs.append(" ".join(sents))
    return docs


def main():
    out = sys.argv[1]
    args = sys.argv[2:]
    if args == ["--sop-order"]:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "vocab.txt"), "w") as f:
            f.write("".join(t + "\n" for t in vocab_lines()))
        with open(os.path.join(out, "order.jsonl"), "w") as f:
            for t in order_corpus(random.Random(4321), 2000):
                f.write('{"text": "%s"}\n' % t)
        return
    name = "vocab.txt"
    if args[:1] == ["--vocab-only"]:
        name, args = args[1], args[2:]
    drop = tuple(args[1:]) if args[:1] == ["--drop"] else ()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name), "w") as f:
        f.write("".join(t + "\n" for t in vocab_lines(drop)))
    if name == "vocab.txt":
        with open(os.path.join(out, "corpus.jsonl"), "w") as f:
            for t in corpus(random.Random(1234), 120):
                f.write('{"text": "%s"}\n' % t)


main()
