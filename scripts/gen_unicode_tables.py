#!/usr/bin/env python3
"""Generates data/tokenizer/unicode_tables.c from Python's unicodedata (standard library only).

Usage: python3 scripts/gen_unicode_tables.py [out.c]   (default: data/tokenizer/unicode_tables.c)

Tables (all read by data/tokenizer/unicode.c):
  - general category: a two-level table (code point >> 7 -> block number, block of 128 categories);
  - canonical combining class: ranges (first, last, ccc) of the non-zero classes;
  - full canonical decomposition (NFD of each character; Hangul syllables are left to the algorithm);
  - the primary composites for NFC's canonical composition (Hangul left to the algorithm);
  - full lowercase mapping as str.lower() applies it to one character;
  - full titlecase mapping as str.title() applies it to one character (str.capitalize()'s first character);
  - the Final_Sigma context classes (case-ignorable, cased) as CPython's str.lower() uses them, found by
    probing str.lower() itself, since unicodedata does not expose the Cased/Case_Ignorable properties.
White_Space is not in unicodedata either; since Unicode 6.3 it is exactly Zs + Zl + Zp + U+0009..U+000D +
U+0085, which unicode.c encodes by hand (this script checks the Zs/Zl/Zp part against that list).
"""
import os
import sys
import unicodedata

MAX_CP = 0x110000
CATS = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
        "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"]
BLOCK = 128
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
# White_Space minus the C0 controls and U+0085 that unicode.c lists itself (Unicode >= 6.3).
EXPECTED_Z = {0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}


def wrap(items, per_line=24, indent="  "):
  lines = []
  for i in range(0, len(items), per_line):
    lines.append(indent + ",".join(str(x) for x in items[i:i + per_line]) + ",")
  return "\n".join(lines)


def main():
  out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
      os.path.dirname(os.path.abspath(__file__)), "..", "data", "tokenizer", "unicode_tables.c")
  chars = [chr(c) if not 0xD800 <= c <= 0xDFFF else None for c in range(MAX_CP)]
  cat_index = {name: i for i, name in enumerate(CATS)}
  cats = [cat_index[unicodedata.category(chr(c))] for c in range(MAX_CP)]

  z = {c for c in range(MAX_CP) if CATS[cats[c]] in ("Zs", "Zl", "Zp")}
  if z != EXPECTED_Z:
    sys.exit("gen_unicode_tables: Zs/Zl/Zp differ from the White_Space list unicode.c assumes: %s" %
             sorted(hex(c) for c in z ^ EXPECTED_Z))

  # Two-level category table.
  block_ids, blocks, stage1 = {}, [], []
  for start in range(0, MAX_CP, BLOCK):
    key = tuple(cats[start:start + BLOCK])
    if key not in block_ids:
      block_ids[key] = len(blocks)
      blocks.append(key)
    stage1.append(block_ids[key])
  assert len(blocks) <= 65535

  # Combining classes as ranges.
  ccc_ranges = []
  for c in range(MAX_CP):
    v = unicodedata.combining(chars[c]) if chars[c] else 0
    if v == 0:
      continue
    if ccc_ranges and ccc_ranges[-1][1] == c - 1 and ccc_ranges[-1][2] == v:
      ccc_ranges[-1][1] = c
    else:
      ccc_ranges.append([c, c, v])

  # NFD per character (excluding the algorithmic Hangul syllables).
  nfd_cps, nfd_off, nfd_data = [], [], []
  for c in range(MAX_CP):
    if chars[c] is None or HANGUL_FIRST <= c <= HANGUL_LAST:
      continue
    d = unicodedata.normalize("NFD", chars[c])
    if d != chars[c]:
      assert len(d) <= 4
      nfd_cps.append(c)
      nfd_off.append(len(nfd_data))
      nfd_data.extend(ord(x) for x in d)
  nfd_off.append(len(nfd_data))

  # Canonical composition (NFC): the primary composites, i.e. each character whose canonical decomposition is a
  # pair and which NFC keeps (not a composition exclusion, not a singleton, not a non-starter decomposition), as
  # (first << 21 | second) -> composite, sorted by key; Hangul syllables are left to the algorithm.
  compose = []
  for c in range(MAX_CP):
    if chars[c] is None or HANGUL_FIRST <= c <= HANGUL_LAST:
      continue
    d = unicodedata.decomposition(chars[c])
    if not d or d.startswith("<"):
      continue
    parts = [int(x, 16) for x in d.split()]
    if len(parts) == 2 and unicodedata.normalize("NFC", chars[c]) == chars[c]:
      compose.append(((parts[0] << 21) | parts[1], c))
  compose.sort()

  # Lowercase and titlecase (one character's str.title(): CPython's _PyUnicode_ToTitleFull, which str.capitalize()
  # applies to the first character): one-to-one mappings as pairs, the longer ones separately.
  def mappings(fn):
    pairs, multi = [], []
    for c in range(MAX_CP):
      if chars[c] is None:
        continue
      m = fn(chars[c])
      if m == chars[c]:
        continue
      if len(m) == 1:
        pairs.append((c, ord(m)))
      else:
        assert len(m) <= 3
        multi.append((c, [ord(x) for x in m] + [0] * (3 - len(m)), len(m)))
    return pairs, multi

  lower_pairs, lower_multi = mappings(str.lower)
  title_pairs, title_multi = mappings(str.title)

  # Final_Sigma classes: 1 = case-ignorable (skipped by both scans), 2 = cased and not case-ignorable.
  # ("X\u03a3").lower() ends in final sigma iff X is cased and not ignorable; ("A" X "\u03a3") iff X is
  # ignorable or cased.
  sigma_ranges = []
  for c in range(MAX_CP):
    if chars[c] is None:
      continue
    p1 = (chars[c] + "\u03a3").lower()[-1] == "\u03c2"
    p2 = ("A" + chars[c] + "\u03a3").lower()[-1] == "\u03c2"
    v = 2 if p1 else (1 if p2 else 0)
    if v == 0:
      continue
    if sigma_ranges and sigma_ranges[-1][1] == c - 1 and sigma_ranges[-1][2] == v:
      sigma_ranges[-1][1] = c
    else:
      sigma_ranges.append([c, c, v])

  o = []
  o.append("/* Generated by scripts/gen_unicode_tables.py from Python %s's unicodedata; do not edit. */" %
           sys.version.split()[0])
  o.append("/* Unicode version %s. Read by data/tokenizer/unicode.c. */" % unicodedata.unidata_version)
  o.append("#include <stdint.h>\n")
  o.append('const char zt_unicode_tables_version[] = "%s";\n' % unicodedata.unidata_version)
  o.append("/* General category (index into zt_ucat): zt_uc_blocks[zt_uc_stage1[cp >> 7] * 128 + (cp & 127)]. */")
  o.append("const uint16_t zt_uc_stage1[%d] = {\n%s\n};" % (len(stage1), wrap(stage1, 32)))
  flat = [v for b in blocks for v in b]
  o.append("const uint8_t zt_uc_blocks[%d] = {\n%s\n};\n" % (len(flat), wrap(flat, 48)))
  o.append("/* Non-zero canonical combining classes: {first, last, ccc}, sorted. */")
  o.append("const uint32_t zt_uc_ccc_ranges[%d][3] = {\n%s\n};" % (
      len(ccc_ranges), wrap(["{%d,%d,%d}" % tuple(r) for r in ccc_ranges], 10)))
  o.append("const int zt_uc_ccc_count = %d;\n" % len(ccc_ranges))
  o.append("/* Full canonical decompositions (Hangul excluded): code point i decomposes to")
  o.append(" * zt_uc_nfd_data[zt_uc_nfd_off[i] .. zt_uc_nfd_off[i + 1]). */")
  o.append("const uint32_t zt_uc_nfd_cps[%d] = {\n%s\n};" % (len(nfd_cps), wrap(nfd_cps, 16)))
  o.append("const uint16_t zt_uc_nfd_off[%d] = {\n%s\n};" % (len(nfd_off), wrap(nfd_off, 20)))
  o.append("const uint32_t zt_uc_nfd_data[%d] = {\n%s\n};" % (len(nfd_data), wrap(nfd_data, 16)))
  o.append("const int zt_uc_nfd_count = %d;\n" % len(nfd_cps))
  o.append("/* Primary composites for NFC: first << 21 | second, sorted, and the composite of each. */")
  o.append("const uint64_t zt_uc_compose_keys[%d] = {\n%s\n};" % (len(compose), wrap([k for k, _ in compose], 8)))
  o.append("const uint32_t zt_uc_compose_cps[%d] = {\n%s\n};" % (len(compose), wrap([v for _, v in compose], 16)))
  o.append("const int zt_uc_compose_count = %d;\n" % len(compose))
  for case, pairs, multi in (("lower", lower_pairs, lower_multi), ("title", title_pairs, title_multi)):
    o.append("/* One-to-one %scase mappings {cp, %s}, sorted by cp. */" % (case, case))
    o.append("const uint32_t zt_uc_%s_pairs[%d][2] = {\n%s\n};" % (
        case, len(pairs), wrap(["{%d,%d}" % p for p in pairs], 12)))
    o.append("const int zt_uc_%s_pair_count = %d;" % (case, len(pairs)))
    o.append("/* %scase mappings to more than one code point: {cp, n, m0, m1, m2}. */" % case.capitalize())
    o.append("const uint32_t zt_uc_%s_multi[%d][5] = {\n%s\n};" % (
        case, len(multi), wrap(["{%d,%d,%d,%d,%d}" % (c, n, *m) for c, m, n in multi], 6)))
    o.append("const int zt_uc_%s_multi_count = %d;\n" % (case, len(multi)))
  o.append("/* Final_Sigma context classes {first, last, class}: 1 = case-ignorable, 2 = cased (not ignorable). */")
  o.append("const uint32_t zt_uc_sigma_ranges[%d][3] = {\n%s\n};" % (
      len(sigma_ranges), wrap(["{%d,%d,%d}" % tuple(r) for r in sigma_ranges], 10)))
  o.append("const int zt_uc_sigma_count = %d;" % len(sigma_ranges))
  with open(out_path, "w", encoding="ascii") as f:
    f.write("\n".join(o) + "\n")
  print("gen_unicode_tables: wrote %s (Unicode %s, %d category blocks, %d ccc ranges, %d decompositions, "
        "%d composites, %d lowercase and %d titlecase mappings, %d sigma-context ranges)" % (
            out_path, unicodedata.unidata_version, len(blocks), len(ccc_ranges), len(nfd_cps), len(compose),
            len(lower_pairs) + len(lower_multi), len(title_pairs) + len(title_multi), len(sigma_ranges)))


if __name__ == "__main__":
  main()
