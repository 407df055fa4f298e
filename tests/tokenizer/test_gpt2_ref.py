#!/usr/bin/env python3
"""test_gpt2_ref: GPT-2 BPE (data/tokenizer/gpt2_bpe.c, through `test_gpt2_parity encode`) against an
independent Python implementation of Megatron's GPT2Tokenizer algorithm (tokenize = regex findall,
byte encoder, rank-ordered merge loop, encoder.get(token, 0)).

Megatron's pattern needs the `regex` module for \\p{L}/\\p{N}; this oracle writes the same pattern for the
standard `re` module with explicit character classes built from unicodedata (L*, N*, and White_Space for
\\s, as `regex` defines it), which keeps the ordered alternation and backtracking semantics. Because the
classes come from the same Unicode version as the C tables (checked), the texts can use any code point:
random strings over all of Unicode, the characters where JavaScript's \\s differs from Python's (U+0085,
U+FEFF, U+180E, U+001C..U+001F), invalid UTF-8 (decoded with errors='replace'), and Brown documents.

Usage: test_gpt2_ref.py <test_gpt2_parity binary> <test_unicode binary> <scripts/fetch_data.sh>
SKIP (exit 77) when the GPT-2 files cannot be fetched."""
import json
import os
import random
import re
import subprocess
import sys
import unicodedata

WHITE_SPACE = [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
               0x205F, 0x3000]


def char_class(cps):
  """A regex character class body for a sorted list of code points (as ranges)."""
  parts, start, prev = [], None, None
  for cp in cps + [None]:
    if cp is not None and prev is not None and cp == prev + 1:
      prev = cp
      continue
    if start is not None:
      parts.append("\\U%08x" % start if start == prev else "\\U%08x-\\U%08x" % (start, prev))
    start = prev = cp
  return "".join(parts)


def build_pattern():
  letters, numbers = [], []
  for cp in range(0x110000):
    if 0xD800 <= cp <= 0xDFFF:
      continue
    cat = unicodedata.category(chr(cp))
    if cat[0] == "L":
      letters.append(cp)
    elif cat[0] == "N":
      numbers.append(cp)
  L, N, S = char_class(letters), char_class(numbers), char_class(WHITE_SPACE)
  return re.compile("'s|'t|'re|'ve|'m|'ll|'d| ?[%s]+| ?[%s]+| ?[^%s%s%s]+|[%s]+(?![^%s])|[%s]+" %
                    (L, N, S, L, N, S, S, S))


def bytes_to_unicode():
  bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
  cs = bs[:]
  n = 0
  for b in range(256):
    if b not in bs:
      bs.append(b)
      cs.append(256 + n)
      n += 1
  return dict(zip(bs, map(chr, cs)))


class Gpt2Reference:
  def __init__(self, vocab, merges):
    with open(vocab, encoding="utf-8") as f:
      self.encoder = json.load(f)
    with open(merges, encoding="utf-8") as f:
      lines = f.read().split("\n")[1:-1]
    self.ranks = {}
    for i, line in enumerate(lines):
      pair = tuple(line.split())
      if len(pair) == 2:
        self.ranks[pair] = i
    self.byte_encoder = bytes_to_unicode()
    self.pattern = build_pattern()
    self.cache = {}

  def bpe(self, token):
    if token in self.cache:
      return self.cache[token]
    word = list(token)
    while len(word) > 1:
      ranks = [self.ranks.get((word[i], word[i + 1])) for i in range(len(word) - 1)]
      known = [r for r in ranks if r is not None]
      if not known:
        break
      at = ranks.index(min(known))
      first, second = word[at], word[at + 1]
      merged, i = [], 0
      while i < len(word):  # every occurrence, left to right
        if i + 1 < len(word) and word[i] == first and word[i + 1] == second:
          merged.append(first + second)
          i += 2
        else:
          merged.append(word[i])
          i += 1
      word = merged
    self.cache[token] = word
    return word

  def encode(self, text):
    ids = []
    for piece in self.pattern.findall(text):
      token = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
      ids.extend(self.encoder.get(t, 0) for t in self.bpe(token))
    return ids


def random_texts(rng):
  special = [0x85, 0xFEFF, 0x180E, 0x1C, 0x1D, 0x1E, 0x1F, 0x2028, 0x2029, 0xA0, 0x3000, 0x200B, 0x2007, 0x20,
             0x20, 0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C, 0x27, 0x27, ord("s"), ord("t"), ord("l"), ord("d")]
  assigned_bmp = [cp for cp in range(0x10000) if unicodedata.category(chr(cp)) not in ("Cn", "Cs")]
  texts = []
  for _ in range(3000):
    cps = []
    for _ in range(rng.randint(0, 24)):
      r = rng.random()
      if r < 0.35:
        cps.append(rng.randrange(0x20, 0x7F))
      elif r < 0.6:
        cps.append(rng.choice(special))
      elif r < 0.85:
        cps.append(rng.choice(assigned_bmp))
      else:
        cp = rng.randrange(0x110000)
        cps.append(cp if not 0xD800 <= cp <= 0xDFFF else 0xFFFD)
    texts.append("".join(map(chr, cps)).encode("utf-8"))
  for _ in range(500):  # invalid UTF-8 mixed in
    b = bytearray(texts[rng.randrange(len(texts))] or b"x")
    for _ in range(rng.randint(1, 3)):
      b.insert(rng.randrange(len(b) + 1), rng.choice([0x80, 0xBF, 0xC0, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]))
    texts.append(bytes(b))
  return texts


def main():
  binary, unicode_binary, fetch = sys.argv[1:4]
  version = subprocess.run([unicode_binary, "version"], stdout=subprocess.PIPE, check=True).stdout.decode().strip()
  if version != unicodedata.unidata_version:
    print("SKIP: the C tables are Unicode %s but this Python has %s; the oracle's classes would differ" %
          (version, unicodedata.unidata_version))
    sys.exit(77)
  cache = os.environ.get("ZT_DATA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zerotron")
  vocab = os.path.join(cache, "gpt2", "gpt2-vocab.json")
  merges = os.path.join(cache, "gpt2", "gpt2-merges.txt")
  brown = os.path.join(cache, "brown", "brown.jsonl")
  if not all(os.path.exists(p) for p in (vocab, merges, brown)):
    if subprocess.run(["bash", fetch]).returncode != 0:
      print("SKIP: scripts/fetch_data.sh could not provide the GPT-2 files in %s (see its error above)" % cache)
      sys.exit(77)
  rng = random.Random(2024)
  texts = random_texts(rng)
  with open(brown, encoding="utf-8") as f:
    docs = [json.loads(line)["text"] for line in f]
  n_brown = 0
  for i in range(0, len(docs), 12):
    texts.append(docs[i].encode("utf-8"))
    n_brown += 1
  ref = Gpt2Reference(vocab, merges)
  data = b"".join(b"%d\n" % len(t) + t for t in texts)
  out = subprocess.run([binary, "encode", vocab, merges], input=data, stdout=subprocess.PIPE,
                       check=True).stdout.decode().split("\n")
  fails = 0
  n_ids = 0
  for k, t in enumerate(texts):
    exp = ref.encode(t.decode("utf-8", "replace"))
    got = [int(x) for x in out[k].split()] if out[k] else []
    n_ids += len(exp)
    if exp != got:
      fails += 1
      if fails <= 10:
        print("FAIL: text %r\n  reference: %s\n  zerotron:  %s" % (t[:200], exp[:40], got[:40]))
  print("Python reference: %d texts (%d random incl. invalid UTF-8, %d Brown documents), %d ids, %d differ" %
        (len(texts), len(texts) - n_brown, n_brown, n_ids, fails))
  sys.exit(1 if fails else 0)


if __name__ == "__main__":
  main()
