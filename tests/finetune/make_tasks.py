#!/usr/bin/env python3
"""Fixtures for the finetune_bert tests: small GLUE-format and RACE-format task files over the words of the BERT
test fixture's vocabulary (tests/bert/make_fixture.py), with labels a tiny BERT can learn in a few epochs.

  make_tasks.py OUTDIR [SEED]

MNLI: the label is decided by a keyword of sentence2 ("good" entailment, "bad" contradiction, "blue" neutral), the
rest random words; train.tsv with the 12 columns of GLUE's MNLI train file, dev_matched.tsv and dev_mismatched.tsv
with the 16 of its dev files. QQP: is_duplicate = question2 repeats question1's first word. CoLA: acceptable when the sentence has "good". STS-B: the
score is twice the "good"s of sentence2 plus a fraction. RACE: directories
train/ and dev/ of *.txt JSON lines, each article with questions whose answer is the option repeating the
article's first word."""
import json
import os
import random
import sys

WORDS = ("give world walk fact small old story some child look sing times run play great time write large think "
         "woman way case take day hand make read man group life two one word").split()


def sentence(rng, n, extra=None):
    w = [rng.choice(WORDS) for _ in range(n)]
    if extra is not None:
        w.insert(rng.randrange(len(w) + 1), extra)
    return " ".join(w).capitalize() + "."


def mnli(out, rng):
    d = os.path.join(out, "MNLI")
    os.makedirs(d, exist_ok=True)
    keys = {"entailment": "good", "contradiction": "bad", "neutral": "blue"}
    train_head = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
                  "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
    dev_head = train_head[:11] + ["label2", "label3", "label4", "label5", "gold_label"]
    for name, head, n in (("train.tsv", train_head, 96), ("dev_matched.tsv", dev_head, 24),
                          ("dev_mismatched.tsv", dev_head, 20)):
        with open(os.path.join(d, name), "w") as f:
            f.write("\t".join(head) + "\n")
            for i in range(n):
                label = rng.choice(sorted(keys))
                s1 = sentence(rng, rng.randint(3, 9))
                s2 = sentence(rng, rng.randint(2, 6), keys[label])
                row = [str(i), str(1000 + i), "%de" % i, "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", s1, s2]
                row += [label] * (len(head) - len(row))
                f.write("\t".join(row) + "\n")


def qqp(out, rng):
    d = os.path.join(out, "QQP")
    os.makedirs(d, exist_ok=True)
    for name, n in (("train.tsv", 64), ("dev.tsv", 20)):
        with open(os.path.join(d, name), "w") as f:
            f.write("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n")
            for i in range(n):
                q1 = [rng.choice(WORDS) for _ in range(rng.randint(3, 7))]
                dup = rng.randint(0, 1)
                q2 = [q1[0] if dup else rng.choice([w for w in WORDS if w != q1[0]])]
                q2 += [rng.choice(WORDS) for _ in range(rng.randint(2, 5))]
                f.write("%d\t%d\t%d\t%s?\t%s?\t%d\n" % (i, 2 * i, 2 * i + 1, " ".join(q1), " ".join(q2), dup))


def cola(out, rng):
    d = os.path.join(out, "CoLA")
    os.makedirs(d, exist_ok=True)
    for name, n in (("train.tsv", 48), ("dev.tsv", 16)):  # GLUE's CoLA files have no header row
        with open(os.path.join(d, name), "w") as f:
            for i in range(n):
                ok = rng.randint(0, 1)
                f.write("src%d\t%d\t\t%s\n" % (i % 3, ok, sentence(rng, rng.randint(3, 7), "good" if ok else "bad")))


def stsb(out, rng):
    d = os.path.join(out, "STS-B")
    os.makedirs(d, exist_ok=True)
    head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    for name, n in (("train.tsv", 64), ("dev.tsv", 20)):
        with open(os.path.join(d, name), "w") as f:
            f.write(head + "\n")
            for i in range(n):
                k = rng.randint(0, 2)  # the score grows with the "good"s of sentence2
                s2 = " ".join(["good"] * k + [rng.choice(WORDS) for _ in range(rng.randint(2, 5))]).capitalize() + "."
                score = 2.0 * k + rng.uniform(0, 0.99)
                f.write("%d\tmain-news\tf\t2012\t%d\tnone\tnone\t%s\t%s\t%.3f\n"
                        % (i, i, sentence(rng, rng.randint(3, 7)), s2, score))


def race(out, rng):
    for split, files, per in (("train", 2, 6), ("dev", 1, 5)):
        d = os.path.join(out, "RACE", split, "middle")
        os.makedirs(d, exist_ok=True)
        for k in range(files):
            with open(os.path.join(d, "%d.txt" % (k + 1)), "w") as f:
                for a in range(per):
                    art = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
                    questions, options, answers = [], [], []
                    for q in range(rng.randint(1, 3)):
                        ans = rng.randrange(4)
                        opts = [rng.choice([w for w in WORDS if w != art[0]]) for _ in range(4)]
                        opts[ans] = art[0]
                        questions.append("What is _ here" if q % 2 else "Which word comes first?")
                        options.append(opts)
                        answers.append("ABCD"[ans])
                    f.write(json.dumps({"answers": answers, "options": options, "questions": questions,
                                        "article": " ".join(art) + ".", "id": "%d.txt" % a}) + "\n")


def main():
    out = sys.argv[1]
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    mnli(out, rng)
    qqp(out, rng)
    race(out, rng)
    cola(out, rng)
    stsb(out, rng)


if __name__ == "__main__":
    main()
