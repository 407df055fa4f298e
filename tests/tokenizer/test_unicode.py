#!/usr/bin/env python3
"""test_unicode: compares data/tokenizer/unicode.c (through the test_unicode binary) with Python's
unicodedata, str.lower(), str.title(), unicodedata.normalize('NFD') and bytes.decode('utf-8', 'replace').

Usage: test_unicode.py <path to test_unicode binary>
White_Space is checked against the property list of PropList.txt (stable since Unicode 6.3), since
unicodedata does not expose it. If Python's Unicode version differs from the tables', only code points
assigned in both are compared (and the script says so)."""
import random
import subprocess
import sys
import unicodedata

WHITE_SPACE = {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
               0x205F, 0x3000}

failures = 0


def fail(msg):
  global failures
  failures += 1
  if failures <= 30:
    print("FAIL: " + msg)


def run(binary, mode, data=b""):
  p = subprocess.run([binary, mode], input=data, stdout=subprocess.PIPE, check=True)
  return p.stdout


def records(blobs):
  return b"".join(b"%d\n" % len(b) + b for b in blobs)


def parse_records(out):
  res, i = [], 0
  while i < len(out):
    j = out.index(b"\n", i)
    n = int(out[i:j])
    res.append(out[j + 1:j + 1 + n])
    i = j + 1 + n
  return res


def check_table(binary):
  version = run(binary, "version").decode().strip()
  same = version == unicodedata.unidata_version
  if not same:
    print("NOTE: tables are Unicode %s, Python has %s: comparing only code points assigned in both" %
          (version, unicodedata.unidata_version))
  lines = run(binary, "table").decode().split("\n")
  checked = 0
  for cp in range(0x110000):
    f = lines[cp].split(" ")
    assert int(f[0], 16) == cp, "table line %d is for %s" % (cp, f[0])
    cat = unicodedata.category(chr(cp))
    if not same and (cat == "Cn" or f[1] == "Cn"):
      continue
    checked += 1
    ch = chr(cp)
    exp_nfd = "" if 0xD800 <= cp <= 0xDFFF else unicodedata.normalize("NFD", ch)
    exp = [cp, cat, unicodedata.combining(ch), int(cat[0] == "L"), int(cat[0] == "N"), int(cp in WHITE_SPACE),
           ",".join("%X" % ord(x) for x in exp_nfd) if exp_nfd else "%X" % cp,
           ",".join("%X" % ord(x) for x in ch.lower()),
           ",".join("%X" % ord(x) for x in ch.title()),
           ch.encode("utf-8", "surrogatepass").hex().upper() if not 0xD800 <= cp <= 0xDFFF else "EFBFBD"]
    got = [cp, f[1], int(f[2]), int(f[3]), int(f[4]), int(f[5]), f[6], f[7], f[8], f[9]]
    if exp != got:
      fail("U+%04X: expected %s, got %s" % (cp, exp[1:], got[1:]))
  print("table: %d code points compared (Unicode %s)" % (checked, version))


def utf8_cases():
  rng = random.Random(1234)
  cases = [b"", b"abc", b"\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
           b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80", b"\xe2\x82", b"a\xe2\x82b", b"\xc3", b"\x80\x80",
           b"\xf8\x88\x80\x80\x80",
           b"\xef\xbf\xbd", b"\xf0\x90\x80", b"\xf1\x80\x80\xc0", b"\xe1\x80\xe1\x80\x80", b"\xf5\x80", b"\xdf\xbf",
           "h\u00e9llo w\u00f6rld \U0001F600".encode(), b"\xed\x9f\xbf\xee\x80\x80"]
  interesting = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
  for _ in range(20000):
    n = rng.randint(1, 8)
    cases.append(bytes(rng.choice(interesting) for _ in range(n)))
  for _ in range(5000):
    cases.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))))
  for _ in range(2000):  # valid text with one corrupted byte
    s = "".join(chr(rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800),
                                rng.randrange(0x10000, 0x110000)])) for _ in range(rng.randint(1, 6))).encode()
    b = bytearray(s)
    b[rng.randrange(len(b))] = rng.randrange(256)
    cases.append(bytes(b))
  return cases


def check_decode(binary):
  cases = utf8_cases()
  out = run(binary, "decode", records(cases)).decode().split("\n")
  for case, line in zip(cases, out):
    cps, status = line.split(" | ")
    got = [int(x, 16) for x in cps.split()] if cps else []
    exp = [ord(x) for x in case.decode("utf-8", "replace")]
    if got != exp:
      fail("decode %r: expected %s, got %s" % (case, exp, got))
    try:
      case.decode("utf-8")
      exp_status = "valid"
    except UnicodeDecodeError as e:
      exp_status = "invalid %d" % e.start
    if status != exp_status:
      fail("valid %r: expected %s, got %s" % (case, exp_status, status))
  print("decode: %d byte strings compared" % len(cases))


def check_strings(binary):
  rng = random.Random(99)
  assigned = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) not in ("Cn", "Cs")]
  marks = [cp for cp in assigned if unicodedata.combining(chr(cp))]
  decomposable = [cp for cp in assigned if unicodedata.decomposition(chr(cp)) and
                  not unicodedata.decomposition(chr(cp)).startswith("<")] + list(range(0xAC00, 0xAC40))
  # Lower: every assigned code point around a capital sigma (both Final_Sigma scans), plus random strings.
  lower_cases = ["A" + chr(cp) + "\u03a3" + chr(cp) + "a" for cp in assigned]
  lower_cases += [chr(cp) + "\u03a3" for cp in assigned]
  lower_cases += ["\u03a3" + chr(cp) for cp in assigned]
  pool = [0x3A3, 0x3A3, 0x41, 0x61, 0x20, 0x27, 0x2E, 0x301, 0x2B0, 0xAA, 0x130, 0x391, 0x3C3, 0xAD, 0x1F88]
  for _ in range(5000):
    lower_cases.append("".join(chr(rng.choice(pool if rng.random() < 0.7 else assigned))
                               for _ in range(rng.randint(0, 8))))
  got = parse_records(run(binary, "lower", records(s.encode() for s in lower_cases)))
  bad = 0
  for s, g in zip(lower_cases, got):
    if g.decode() != s.lower():
      bad += 1
      fail("lower %r: expected %r, got %r" % (s, s.lower(), g.decode()))
  print("lower: %d strings compared, %d differ" % (len(lower_cases), bad))
  nfd_cases = []
  for _ in range(20000):
    nfd_cases.append("".join(chr(rng.choice(marks if rng.random() < 0.5 else decomposable))
                             for _ in range(rng.randint(0, 6))))
  got = parse_records(run(binary, "nfd", records(s.encode() for s in nfd_cases)))
  bad = 0
  for s, g in zip(nfd_cases, got):
    if g.decode() != unicodedata.normalize("NFD", s):
      bad += 1
      fail("nfd %r: expected %r, got %r" % (s, unicodedata.normalize("NFD", s), g.decode()))
  print("nfd: %d strings compared, %d differ" % (len(nfd_cases), bad))
  # NFC: every assigned code point alone and after a starter, the NFD cases, and strings of starters, marks,
  # composites and Hangul jamo (L, V, T) that compose in every order the blocking rule allows or forbids
  jamo = list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A7, 0x11C3))
  starters = [0x41, 0x61, 0x45, 0x4F, 0x55, 0x3B1, 0x415, 0x928, 0xB47, 0xB3E, 0x1B05, 0x1B35, 0x3099, 0x304B]
  nfc_cases = [chr(cp) for cp in assigned] + ["A" + chr(cp) for cp in marks] + nfd_cases[:5000]
  for _ in range(20000):
    nfc_cases.append("".join(chr(rng.choice(rng.choice((starters, marks, decomposable, jamo))))
                             for _ in range(rng.randint(0, 7))))
  got = parse_records(run(binary, "nfc", records(s.encode("utf-8", "surrogatepass") for s in nfc_cases)))
  bad = 0
  for s, g in zip(nfc_cases, got):
    if g.decode() != unicodedata.normalize("NFC", s):
      bad += 1
      if bad <= 20:
        fail("nfc %r: expected %r, got %r" % (s, unicodedata.normalize("NFC", s), g.decode()))
  print("nfc: %d strings compared, %d differ" % (len(nfc_cases), bad))


def main():
  binary = sys.argv[1]
  check_table(binary)
  check_decode(binary)
  check_strings(binary)
  if failures:
    print("%d failures" % failures)
    sys.exit(1)
  print("PASS")


if __name__ == "__main__":
  main()
