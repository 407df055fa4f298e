#!/usr/bin/env python3
"""test_gpt2_files: GPT-2 BPE on tiny hand-written vocab.json / merges.txt files, whose expected ids follow by
hand from Megatron's GPT2Tokenizer (merge order by rank, a later duplicate merge line takes the later rank,
encoder.get(token, 0) for strings not in the vocabulary, the unterminated last line of merges.txt
dropped), and the error messages for bad files (each names the file, and the line where there is one).

Usage: test_gpt2_files.py <test_gpt2_parity binary>   (its encode/decode modes)"""
import os
import subprocess
import sys
import tempfile

failures = 0


def check(cond, msg):
  global failures
  if not cond:
    failures += 1
    print("FAIL: " + msg)


def run(binary, mode, vocab, merges, data):
  return subprocess.run([binary, mode, vocab, merges], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def encode(binary, vocab, merges, texts):
  data = b"".join(b"%d\n" % len(t) + t for t in texts)
  p = run(binary, "encode", vocab, merges, data)
  if p.returncode != 0:
    return None, p.stderr.decode()
  return [[int(x) for x in line.split()] for line in p.stdout.decode().split("\n")[:len(texts)]], p.stderr.decode()


def write(d, name, text):
  path = os.path.join(d, name)
  with open(path, "wb") as f:
    f.write(text.encode("utf-8") if isinstance(text, str) else text)
  return path


def main():
  binary = sys.argv[1]
  with tempfile.TemporaryDirectory() as d:
    # "\u0120" is the byte alphabet's space (byte 0x20).
    vocab = write(d, "vocab.json", '{"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "\u0120": 6, '
                                   '"\u0120a": 7, "<|endoftext|>": 8, "a": 9}')
    merges = write(d, "merges.txt", "#version: 0.2\nb c\na b\nab c\n\u0120 a\nc c\nb c\nx y")
    ids, err = encode(binary, vocab, merges, [b"abc", b"ab", b"bc", b"a abc", b"cc", b"d", b"xy", b""])
    # "abc": (b,c) was line 2 but its duplicate on line 7 gives it rank 7, so (a,b) (line 3) goes first, then
    # (ab,c) -> "abc"; with rank 2 it would be "a" "bc". "a" is 9 (the later duplicate key). " abc": (a,b),
    # then (ab,c); (\u0120,a) never gets its turn. "cc" merges to a string that is not in the vocabulary and
    # "d" is not in it: id 0. "x y" is the unterminated last line: ignored, so "xy" is two unknown bytes.
    expected = [[5], [3], [4], [9, 6, 5], [0], [0], [0, 0], []]
    check(ids == expected, "tiny vocabulary: ids %s, expected %s (stderr: %s)" % (ids, expected, err.strip()))
    check("no final newline" in err and "line 8" in err, "no warning about merges line 8: %r" % err)
    p = run(binary, "decode", vocab, merges, b"5 7 0\n")
    check(p.returncode == 0 and p.stdout == b"6\nabc aa", "decode '5 7 0': got %r" % p.stdout)
    # Decoding bytes that are not valid UTF-8: replaced as bytes.decode('utf-8', 'replace') does.
    v2 = write(d, "vocab2.json", '{"\u00c3": 0, "\u00a9": 1, "<|endoftext|>": 2}')  # bytes C3 and A9
    m2 = write(d, "merges2.txt", "#version: 0.2\n")
    cases = [[0, 1], [0], [1, 0, 0, 1], [0, 0, 1, 0]]
    p = run(binary, "decode", v2, m2, b"".join(b" ".join(b"%d" % i for i in c) + b"\n" for c in cases))
    exp = b""
    for c in cases:
      t = bytes([0xC3, 0xA9][i] for i in c).decode("utf-8", "replace").encode("utf-8")
      exp += b"%d\n" % len(t) + t
    check(p.stdout == exp, "decode of invalid UTF-8: %r, expected %r" % (p.stdout, exp))

    def expect_error(vocab_text, merges_text, *needles, vocab_path=None, merges_path=None):
      vp = vocab_path or write(d, "bad_vocab.json", vocab_text)
      mp = merges_path or write(d, "bad_merges.txt", merges_text)
      p = run(binary, "encode", vp, mp, b"1\na")
      msg = p.stderr.decode()
      check(p.returncode != 0 and all(n in msg for n in needles),
            "expected an error with %s, got rc %d: %r" % (needles, p.returncode, msg))

    good_vocab = '{"a": 0, "<|endoftext|>": 1}'
    good_merges = "#version: 0.2\n"
    expect_error('{"a": 0,\n "b": }', good_merges, "bad_vocab.json line 2", "not valid JSON")
    expect_error('{"a": 0}', good_merges, "bad_vocab.json", "<|endoftext|>")
    expect_error('{"a": "x", "<|endoftext|>": 1}', good_merges, "bad_vocab.json", 'token "a"', "not a number")
    expect_error('{"a": 1.5, "<|endoftext|>": 1}', good_merges, "bad_vocab.json", 'token "a"')
    expect_error('[1, 2]', good_merges, "bad_vocab.json", "not an object")
    expect_error(good_vocab, "#version: 0.2\na b\na b c\n", "bad_merges.txt line 3", "found 3")
    expect_error(good_vocab, "a b\n", "bad_merges.txt line 1", "#version")
    expect_error(good_vocab, b"#version: 0.2\na \xff\n", "bad_merges.txt line 2", "invalid UTF-8")
    expect_error(good_vocab, good_merges, "cannot open vocab file", "nope.json",
                 vocab_path=os.path.join(d, "nope.json"))
    expect_error(good_vocab, good_merges, "cannot open merges file", "nope.txt",
                 merges_path=os.path.join(d, "nope.txt"))
    p = run(binary, "decode", vocab, merges, b"5 99\n")
    check(p.returncode != 0 and "cannot decode id 99" in p.stderr.decode(), "decode of id 99: %r" % p.stderr)
  print("FAILED: %d" % failures if failures else "PASS")
  sys.exit(1 if failures else 0)


if __name__ == "__main__":
  main()
