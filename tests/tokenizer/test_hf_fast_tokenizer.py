#!/usr/bin/env python3
"""HFTokenizer parity for FAST tokenizer directories: Megatron-DeepSpeed's `--tokenizer-type HFTokenizer
--tokenizer-model DIR` in C (data/tokenizer/hf_tokenizer.c, driven by test_bert_tool) on a directory whose
tokenizer_config.json says "tokenizer_class": "PreTrainedTokenizerFast" (Meta Llama-3's layout: tokenizer.json and no
slow files, which transformers loads as the fast tokenizer even with use_fast=False), against an independent Python
transcription of what huggingface `tokenizers` + transformers' PreTrainedTokenizerFast + Megatron's _HFTokenizer do.
Neither library is used; the pre-tokenizer regexes run through Python's `regex` module with the exact pattern strings.

Transcribed (tokenizers at 3ba8ad0, transformers 4.4x): AddedVocabulary (ids of the tokenizer.json added tokens
assigned by add_tokens, its "id" fields ignored; split in two passes, normalized=false tokens over the whole text, then
normalized=true tokens over the remaining pieces, leftmost-longest), the ByteLevel pre-tokenizer (add_prefix_space per
piece, GPT-2 regex when use_regex) and the Llama-3 Split (Isolated), BPE (merge_all's (rank, position) heap,
ignore_merges, merges as "a b" strings or ["a", "b"] pairs), TemplateProcessing (possibly inside a Sequence),
the ByteLevel decoder (a token with a char outside the byte map contributes its raw UTF-8), transformers' special-token
loading (tokenizer_config.json, special_tokens_map.json unless added_tokens_decoder is there, the AddedToken flags
and ids that PreTrainedTokenizerFast.__init__ adds), Megatron's add_special_tokens of [PAD] / </s> / <s> / <unk> where
missing, and decode's clean_up_tokenization.

A byte-level BPE (~400 merges) is learned here from a generated multilingual corpus pre-tokenized with the Llama-3
regex, plus a few vocab entries only ignore_merges reaches; three directories are built around it: (1) Llama-3-like
(Split + ByteLevel, ignore_merges, <|begin_of_text|> / <|end_of_text|> / reserved tokens, bos template inside a
Sequence, added_tokens_decoder, clean-up on); (2) the same with ignore_merges false, merges as pairs (one repeated:
the last rank wins) and a bos ... eos template; (3) plain ByteLevel with the GPT-2 regex and the NFC normalizer (on
the text between the normalized=false added tokens, before the normalized ones are matched), no post-processor, the pad
token (a model-vocab string) from special_tokens_map.json, whose bos overrides tokenizer_config.json's and whose unk
is a new special token keeping normalized=true, normalized=true added tokens (one overlapping the special one),
clean-up off. Checked: info
(vocab_size, eod, pad, bos), encode of hand-picked and generated texts (two with invalid UTF-8, read as U+FFFD),
decode of every encoding and of random id lists, and the refusals (another normalizer, another Split regex, a
non-BPE model, byte_fallback, lstrip / rstrip / single_word added tokens, merges outside the vocab, a missing
byte-level character, truncation, add_prefix_space or split_special_tokens in tokenizer_config.json, a ByteLevel
pre-tokenizer with add_prefix_space, added-token ids other than add_tokens', vocab ids with gaps, two templates,
added_tokens_decoder flags that differ) each a non-zero exit naming the file.
With PREPROCESS_DATA and PRETRAIN_GPT: preprocess_data's ids on two directories equal the oracle's, pretrain_gpt
trains on the data whose ids are all in the vocabulary and refuses the Llama-3-like data (ids past vocab_size).
  test_hf_fast_tokenizer.py TOOL [PREPROCESS_DATA PRETRAIN_GPT]
                                      (TOOL = test_bert_tool; SKIP, exit 77, without Python's `regex` module)
Prints PASS/FAIL lines and "N passed, M failed"; exit 1 on any failure."""
import collections
import copy
import heapq
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import regex
except ImportError:
    regex = None

import test_hf_tokenizer as slow  # noqa: E402  (its PASS/FAIL counters are this test's too)
from test_gpt2_ref import bytes_to_unicode  # noqa: E402
from test_hf_tokenizer import TEXTS as SLOW_TEXTS, check, corpus, first_diff, run_tool, short  # noqa: E402

# tokenizers/src/pre_tokenizers/byte_level.rs (RE) and Meta Llama-3's tokenizer.json Split pattern, verbatim.
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# transformers >= 4.49 (PR #35593) ends PreTrainedTokenizerFast.__init__ by forcing the top-level pre-tokenizer's
# add_prefix_space to tokenizer_config.json's add_prefix_space (False when absent); older 4.x keep tokenizer.json's
# value. The C side refuses a ByteLevel pre-tokenizer with add_prefix_space true (version-dependent), so the
# directories here have none; this switch selects the newer behaviour for experiments with the oracle.
TRANSFORMERS_PREFIX_SPACE_OVERRIDE = False


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


def to_byte_level(s):
    return "".join(BYTE_CHAR[b] for b in s.encode("utf-8"))


def split_isolated(rx, s):
    """NormalizedString::split(regex, Isolated): every match and every gap between matches, in order."""
    out, prev = [], 0
    for m in rx.finditer(s):
        if m.start() != prev:
            out.append(s[prev:m.start()])
        out.append(m.group())
        prev = m.end()
    if prev != len(s):
        out.append(s[prev:])
    return out


# ------------------------------------------------------------------------------------------------------------------
# BPE learning (the test's model) and BPE application (the oracle)
# ------------------------------------------------------------------------------------------------------------------

def train_bpe(word_counts, n_merges):
    """Classic BPE learning over byte-level words: repeatedly merge the most frequent adjacent pair (ties: the smallest
    pair), every occurrence left to right. A pair whose concatenation is already a token is never chosen, so merge
    results are distinct. Returns (merges, the final segmentation of each word)."""
    words = [list(w) for w in word_counts]
    counts = [word_counts[w] for w in word_counts]
    pair_counts = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pair_counts[p] += counts[i]
            where[p].add(i)
    tokens = set(BYTE_CHAR.values())
    merges = []
    while len(merges) < n_merges:
        best = None
        for p, c in pair_counts.items():
            if c <= 0 or p[0] + p[1] in tokens:
                continue
            if best is None or c > best[0] or (c == best[0] and p < best[1]):
                best = (c, p)
        if best is None:
            break
        a, b = best[1]
        merges.append((a, b))
        tokens.add(a + b)
        for i in sorted(where[(a, b)]):
            w = words[i]
            for p in zip(w, w[1:]):
                pair_counts[p] -= counts[i]
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += counts[i]
                where[p].add(i)
    return merges, {"".join(w): w for w in words}


def merge_all(ids, merges):
    """tokenizers/src/models/bpe/word.rs Word::merge_all (no dropout): a min-heap of (rank, position) entries, stale
    entries skipped when the symbol was merged away, is last, or its pair no longer maps to the entry's new id."""
    n = len(ids)
    c = list(ids)
    prev = [i - 1 for i in range(n)]
    nxt = [i + 1 if i + 1 < n else -1 for i in range(n)]
    alive = [True] * n
    heap = []
    for i in range(n - 1):
        m = merges.get((c[i], c[i + 1]))
        if m is not None:
            heap.append((m[0], i, m[1]))
    heapq.heapify(heap)
    while heap:
        _, pos, new_id = heapq.heappop(heap)
        if not alive[pos] or nxt[pos] == -1:
            continue
        right = nxt[pos]
        m = merges.get((c[pos], c[right]))
        if m is None or m[1] != new_id:
            continue
        c[pos] = new_id
        nxt[pos] = nxt[right]
        alive[right] = False
        if nxt[right] != -1:
            prev[nxt[right]] = pos
        if prev[pos] >= 0:
            m = merges.get((c[prev[pos]], c[pos]))
            if m is not None:
                heapq.heappush(heap, (m[0], prev[pos], m[1]))
        if nxt[pos] != -1:
            m = merges.get((c[pos], c[nxt[pos]]))
            if m is not None:
                heapq.heappush(heap, (m[0], pos, m[1]))
    return [c[i] for i in range(n) if alive[i]]


def merge_naive(ids, merges):
    """The textbook rule (GPT-2's encoder.py): merge every occurrence of the lowest-rank pair, until none is left."""
    ids = list(ids)
    while len(ids) > 1:
        ranks = [merges[(a, b)][0] for a, b in zip(ids, ids[1:]) if (a, b) in merges]
        if not ranks:
            break
        r = min(ranks)
        out, j = [], 0
        while j < len(ids):
            m = merges.get((ids[j], ids[j + 1])) if j + 1 < len(ids) else None
            if m is not None and m[0] == r:
                out.append(m[1])
                j += 2
            else:
                out.append(ids[j])
                j += 1
        ids = out
    return ids


# ------------------------------------------------------------------------------------------------------------------
# The oracle
# ------------------------------------------------------------------------------------------------------------------

class AddedToken:
    """tokenizers' Python AddedToken: normalized, when not given, is !special at the time the token is used."""

    def __init__(self, content, single_word=False, lstrip=False, rstrip=False, normalized=None, special=False):
        self.content, self.single_word, self.lstrip, self.rstrip = content, single_word, lstrip, rstrip
        self.normalized, self.special = normalized, special

    def get(self):
        """get_token(): the Rust AddedToken as a tuple (content, single_word, lstrip, rstrip, normalized, special)."""
        norm = (not self.special) if self.normalized is None else bool(self.normalized)
        return (self.content, bool(self.single_word), bool(self.lstrip), bool(self.rstrip), norm, bool(self.special))

    def __str__(self):
        return self.content


def _added_token_from_dict(d, **over):
    d = dict(d, **over)
    d.pop("__type", None)
    d.pop("id", None)
    return AddedToken(d.pop("content"), **d)


class FastRef:
    """What Megatron's _HFTokenizer gets from a PreTrainedTokenizerFast directory."""

    SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
               "additional_special_tokens"]

    def __init__(self, path, prefix_space_override=TRANSFORMERS_PREFIX_SPACE_OVERRIDE):
        def load(name):
            p = os.path.join(path, name)
            if not os.path.exists(p):
                return None
            with open(p, encoding="utf-8") as f:
                return json.load(f)
        tj = load("tokenizer.json")
        cfg = load("tokenizer_config.json") or {}
        smap = load("special_tokens_map.json")
        assert cfg.get("tokenizer_class") == "PreTrainedTokenizerFast"
        assert tj.get("normalizer") in (None, {"type": "NFC"})
        assert tj.get("truncation") is None and tj.get("padding") is None
        self.nfc = tj.get("normalizer") is not None
        # ---- model (models/bpe/serialization.rs, model.rs BpeBuilder::build) ----
        m = tj["model"]
        assert m.get("type", "BPE") == "BPE" and not m.get("byte_fallback") and m.get("unk_token") is None
        assert m.get("dropout") is None and m.get("continuing_subword_prefix") is None
        assert m.get("end_of_word_suffix") is None
        self.vocab = dict(m["vocab"])
        self.vocab_r = {i: t for t, i in self.vocab.items()}
        self.ignore_merges = bool(m.get("ignore_merges", False))
        raw = m["merges"]
        if raw and isinstance(raw[0], str):  # legacy "a b" lines: "#version" lines skipped, exactly two parts
            pairs = []
            for line in (l for l in raw if not l.startswith("#version")):
                parts = line.split(" ")
                if len(parts) != 2:
                    raise ValueError("bad merge %r" % line)
                pairs.append(tuple(parts))
        else:
            pairs = [tuple(p) for p in raw]
        self.merges = {}
        for rank, (a, b) in enumerate(pairs):  # a HashMap collected in order: a repeated pair keeps its last rank
            self.merges[(self.vocab[a], self.vocab[b])] = (rank, self.vocab[a + b])
        # ---- pre-tokenizer, post-processor, decoder ----
        pt = tj["pre_tokenizer"]
        if pt["type"] == "ByteLevel":
            self.pre = [("bytelevel", bool(pt["add_prefix_space"]), bool(pt.get("use_regex", True)))]
        else:
            assert pt["type"] == "Sequence"
            self.pre = []
            for p in pt["pretokenizers"]:
                if p["type"] == "Split":
                    assert p["pattern"] == {"Regex": LLAMA3_PATTERN} and p["behavior"] == "Isolated"
                    assert not p["invert"]
                    self.pre.append(("split", regex.compile(LLAMA3_PATTERN)))
                else:
                    assert p["type"] == "ByteLevel"
                    self.pre.append(("bytelevel", bool(p["add_prefix_space"]), bool(p.get("use_regex", True))))
        self.gpt2_rx = regex.compile(GPT2_PATTERN)
        assert tj["decoder"]["type"] == "ByteLevel"
        self.before, self.after = [], []
        pp = tj.get("post_processor")
        procs = [] if pp is None else pp["processors"] if pp["type"] == "Sequence" else [pp]
        templates = [p for p in procs if p["type"] == "TemplateProcessing"]
        assert all(p["type"] in ("ByteLevel", "TemplateProcessing") for p in procs) and len(templates) <= 1
        for t in templates:
            seen_a = False
            for piece in t["single"]:
                if "Sequence" in piece:
                    assert piece["Sequence"]["id"] == "A" and not seen_a
                    seen_a = True
                else:
                    ids = t["special_tokens"][piece["SpecialToken"]["id"]]["ids"]
                    (self.after if seen_a else self.before).extend(ids)
        # ---- added vocabulary: tokenizer.json's added_tokens through add_tokens (their "id" fields are not used) --
        self.added = {}    # content -> id
        self.added_r = {}  # id -> Rust AddedToken tuple
        self.add_tokens([_added_token_from_dict(t).get() for t in tj.get("added_tokens", [])])
        if prefix_space_override:
            apx = bool(cfg.get("add_prefix_space", False))
            if len(self.pre) == 1 and self.pre[0][0] == "bytelevel":
                self.pre = [("bytelevel", apx, self.pre[0][2])]
        # ---- transformers: PreTrainedTokenizerBase.from_pretrained / _from_pretrained ----
        init = {k: v for k, v in cfg.items()}
        decoder = {}  # added_tokens_decoder: id -> AddedToken
        if "added_tokens_decoder" in cfg:
            for idx, tok in cfg["added_tokens_decoder"].items():
                decoder[int(idx)] = _added_token_from_dict(tok)
        else:
            if smap is not None:  # special_tokens_map.json overrides tokenizer_config.json
                for key, value in smap.items():
                    if isinstance(value, dict):
                        value = _added_token_from_dict(value, special=True)
                    elif key == "additional_special_tokens" and isinstance(value, list):
                        extra = list(init.pop("additional_special_tokens", None) or [])
                        for tok in value:
                            tok = _added_token_from_dict(tok, special=True) if isinstance(tok, dict) else tok
                            if all(str(tok) != str(e) for e in extra):
                                extra.append(tok)
                        value = extra
                    init[key] = value
            for t in tj.get("added_tokens", []):  # the legacy path reads tokenizer.json's added tokens
                decoder[t["id"]] = _added_token_from_dict(t)
        amap = {str(t): t for _, t in sorted(decoder.items())}
        for key in self.SPECIAL:  # convert_added_tokens: {"__type": "AddedToken", ...} -> AddedToken
            v = init.get(key)
            if isinstance(v, dict):
                assert v.get("__type") == "AddedToken", "%s: a dict without __type is refused by transformers" % key
                init[key] = _added_token_from_dict(v)
            elif isinstance(v, list):
                init[key] = [_added_token_from_dict(x) if isinstance(x, dict) else x for x in v]
        for key in self.SPECIAL[:-1]:
            if amap and init.get(key) is not None:
                init[key] = amap.get(str(init[key]), init[key])
        self.special = {k: init.get(k) for k in self.SPECIAL}
        if self.special["additional_special_tokens"] is None:
            self.special["additional_special_tokens"] = []
        # ---- PreTrainedTokenizerFast.__init__: tokens missing from the backend, then the special tokens ----
        have = set(self.added_r.values())
        to_add = [t for _, t in sorted(decoder.items()) if t.get() not in have]
        encoder = list(self.added) + [str(t) for t in to_add]
        special_strs = [str(t) for t in self.all_special_extended()]
        for t in self.all_special_extended():
            in_encoder = isinstance(t, str) and t in encoder  # an AddedToken never equals a str
            in_list = any(isinstance(u, AddedToken) and isinstance(t, AddedToken) and u.get() == t.get() or
                          isinstance(u, str) and isinstance(t, str) and u == t for u in to_add)
            if not in_encoder and not in_list:
                to_add.append(t)
        final = []
        for t in to_add:
            if isinstance(t, str):
                final.append(AddedToken(t, special=t in special_strs).get())
            else:
                t = copy.copy(t)
                t.special = t.special or str(t) in special_strs
                final.append(t.get())
        if final:
            self.add_tokens(final)
        # ---- Megatron's _HFTokenizer: add_special_tokens for what is missing (dict order pad, eos, bos, unk) ----
        defaults = [("pad_token", "[PAD]"), ("eos_token", "</s>"), ("bos_token", "<s>"), ("unk_token", "<unk>")]
        megatron = []
        for key, value in defaults:
            if self.special[key] is None:
                tok = AddedToken(value, rstrip=False, lstrip=False, normalized=False, special=True)
                self.special[key] = tok
                megatron.append(tok.get())
        if megatron:
            self.add_tokens(megatron)
        self.vocab_size = len(self.vocab)
        self.eos_id = self.token_to_id(str(self.special["eos_token"]))
        self.pad_id = self.token_to_id(str(self.special["pad_token"]))
        self.bos_id = self.token_to_id(str(self.special["bos_token"]))
        self.clean_up = bool(cfg.get("clean_up_tokenization_spaces", False))
        for t in self.added_r.values():
            assert not (t[1] or t[2] or t[3]), "the oracle does not transcribe single_word / lstrip / rstrip"

    def all_special_extended(self):
        out, seen = [], set()
        for key in self.SPECIAL:
            v = self.special[key]
            for t in (v if isinstance(v, list) else [v] if v is not None else []):
                if str(t) not in seen:
                    seen.add(str(t))
                    out.append(t)
        return out

    def add_tokens(self, tokens):
        """AddedVocabulary::add_tokens: one next id per call (max added id + 1 when that is >= the model vocab size,
        else the model vocab size); a content already added or in the model vocab keeps that id (its flags
        replaced); an identical token is skipped."""
        vs = len(self.vocab)
        if self.added_r:
            mx = max(self.added_r)
            next_id = mx + 1 if mx >= vs or vs == 0 else vs
        else:
            next_id = vs
        for t in tokens:
            content = t[0]
            if not content:
                continue
            if content in self.added and self.added_r.get(self.added[content]) == t:
                continue
            if content in self.added:
                i = self.added[content]
            elif content in self.vocab:
                i = self.vocab[content]
            else:
                i = next_id
                next_id += 1
            self.added[content] = i
            self.added_r[i] = t

    def token_to_id(self, content):
        if content in self.added:
            return self.added[content]
        return self.vocab.get(content)

    # ---- encode ----------------------------------------------------------------------------------------------
    def split_added(self, text):
        """extract_and_normalize: pass 1 with the normalized=false tokens over the text, then the normalizer (NFC)
        on each piece left and pass 2 with the normalized=true tokens over it; leftmost-longest; empty pieces
        dropped."""
        pieces = [(text, None)]
        for normalized in (False, True):
            if normalized and self.nfc:
                pieces = [(unicodedata.normalize("NFC", s) if tid is None else s, tid) for s, tid in pieces]
            words = sorted((t[0] for t in self.added_r.values() if t[4] == normalized), key=len, reverse=True)
            out = []
            for s, tid in pieces:
                if tid is not None:
                    out.append((s, tid))
                    continue
                start, i = 0, 0
                while i < len(s):
                    w = next((w for w in words if s.startswith(w, i)), None)
                    if w is None:
                        i += 1
                        continue
                    if start < i:
                        out.append((s[start:i], None))
                    out.append((w, self.added[w]))
                    i += len(w)
                    start = i
                if start < len(s):
                    out.append((s[start:], None))
            pieces = out
        return pieces

    def pre_tokenize(self, piece):
        words = [piece]
        for step in self.pre:
            nxt = []
            for w in words:
                if step[0] == "split":
                    nxt.extend(split_isolated(step[1], w))
                    continue
                _, apx, use_regex = step
                if apx and not w.startswith(" "):
                    w = " " + w
                nxt.extend(split_isolated(self.gpt2_rx, w) if use_regex else [w])
            words = [w for w in nxt if w]
        return [to_byte_level(w) for w in words]

    def bpe(self, word):
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        cache = self.__dict__.setdefault("_bpe_cache", {})  # the BPE model's word cache (no effect on ids)
        if word not in cache:
            cache[word] = merge_all([self.vocab[ch] for ch in word if ch in self.vocab], self.merges)
        return cache[word]

    def tokens(self, text):
        """The tokens of tokenizer.encode(text) without the template, as strings (for messages)."""
        out = []
        for s, tid in self.split_added(text):
            if tid is not None:
                out.append(s)
            else:
                for w in self.pre_tokenize(s):
                    out.extend(self.vocab_r[i] for i in self.bpe(w))
        return out

    def encode(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        ids = []
        for s, tid in self.split_added(text):
            if tid is not None:
                ids.append(tid)
            else:
                for w in self.pre_tokenize(s):
                    ids.extend(self.bpe(w))
        return self.before + ids + self.after

    # ---- decode ----------------------------------------------------------------------------------------------
    def decode(self, ids, clean_up=None):
        out = bytearray()
        for i in ids:
            tok = self.added_r[i][0] if i in self.added_r else self.vocab_r.get(i)
            if tok is None:  # Tokenizer::decode drops an unknown id
                continue
            if all(ch in CHAR_BYTE for ch in tok):
                out.extend(CHAR_BYTE[ch] for ch in tok)
            else:
                out.extend(tok.encode("utf-8"))
        text = bytes(out).decode("utf-8", "replace")
        if self.clean_up if clean_up is None else clean_up:
            text = (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
                    .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m").replace(" 's", "'s")
                    .replace(" 've", "'ve").replace(" 're", "'re"))
        return text


# ------------------------------------------------------------------------------------------------------------------
# The model and the directories
# ------------------------------------------------------------------------------------------------------------------

EXTRA_WORDS = ["Ġquixotic", "Ġzebra", "999", "ĊĊĊ", to_byte_level(" Ψυχή"), to_byte_level("龍虎"), "<pad>"]


def training_lines():
    rng = random.Random(17)
    lines = list(corpus(1200, 23))
    for _ in range(150):
        lines.append(" ".join(rng.choice(["it's", "IT'S", "we're", "they've", "I'm", "you'll", "she'd", "12", "345",
                                          "2024", "3.14", "\n", "\r\n", "\t", "  ", "x1y22", "naïve", "ΣΟΦΟΣ", "мир"])
                              for _ in range(rng.randint(3, 12))))
    return lines


def build_model():
    """(vocab, merges, training segmentation, the number of learned merges): byte chars in a seeded order, the merge
    results, the extras; plus one merge at the end whose result an earlier merge already made."""
    rx = regex.compile(LLAMA3_PATTERN)
    counts = collections.Counter()
    for line in training_lines():
        for w in split_isolated(rx, line):
            counts[to_byte_level(w)] += 1
    merges, seg = train_bpe(counts, 400)
    chars = sorted(BYTE_CHAR.values())
    random.Random(5).shuffle(chars)
    vocab = {c: i for i, c in enumerate(chars)}
    for a, b in merges:
        vocab[a + b] = len(vocab)
    for w in EXTRA_WORDS:
        assert w not in vocab, w
        vocab[w] = len(vocab)
    learned = len(merges)
    for a, b in merges[::-1]:  # a second way to make a token: "x yz" where "xy z" made "xyz"
        r = a + b
        alt = next(((r[:k], r[k:]) for k in range(1, len(r)) if r[:k] != a and r[:k] in vocab and r[k:] in vocab
                    and (r[:k], r[k:]) not in merges), None)
        if alt:
            merges.append(alt)
            break
    return vocab, merges, seg, learned


def added(content, i, special=True, normalized=None):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": (not special) if normalized is None else normalized, "special": special}


def write_dir(root, name, files):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    for fn, content in files.items():
        with open(os.path.join(d, fn), "w", encoding="utf-8") as f:
            if isinstance(content, str):
                f.write(content)
            else:
                json.dump(content, f, indent=1, ensure_ascii=False)
    return d


def tokenizer_json(vocab, merges, pre_tokenizer, post_processor, added_tokens, ignore_merges, pair_merges):
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens, "normalizer": None,
        "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges] if pair_merges else
                  ["%s %s" % (a, b) for a, b in merges]}}


LLAMA3_PRE = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
BOT, EOT = "<|begin_of_text|>", "<|end_of_text|>"
RESERVED = ["<|reserved_special_token_%d|>" % i for i in range(4)]


def template(before, after, ids):
    single = ([{"SpecialToken": {"id": t, "type_id": 0}} for t in before] + [{"Sequence": {"id": "A", "type_id": 0}}]
              + [{"SpecialToken": {"id": t, "type_id": 0}} for t in after])
    pair = single + [{"Sequence": {"id": "B", "type_id": 1}}]
    return {"type": "TemplateProcessing", "single": single, "pair": pair,
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in before + after}}


def make_dirs(root, vocab, merges):
    v = len(vocab)
    dirs = {}
    # (1) Llama-3-like
    llama_added = [added(t, v + i) for i, t in enumerate([BOT, EOT] + RESERVED)]
    ids = {t["content"]: t["id"] for t in llama_added}
    post = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        template([BOT], [], ids)]}
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOT, "eos_token": EOT,
           "clean_up_tokenization_spaces": True, "model_input_names": ["input_ids", "attention_mask"],
           "model_max_length": 131072,
           "added_tokens_decoder": {str(t["id"]): {k: t[k] for k in t if k != "id"} for t in llama_added}}
    dirs["llama3"] = write_dir(root, "llama3", {
        "tokenizer.json": tokenizer_json(vocab, merges, LLAMA3_PRE, post, llama_added, True, False),
        "tokenizer_config.json": cfg, "special_tokens_map.json": {"bos_token": BOT, "eos_token": EOT}})
    # (2) ignore_merges false, merges as pairs (an early one repeated at the end: the last rank wins), a bos ... eos
    # template on its own
    dirs["llama3-pairs"] = write_dir(root, "llama3-pairs", {
        "tokenizer.json": tokenizer_json(vocab, merges + [merges[3]], LLAMA3_PRE, template([BOT], [EOT], ids),
                                         llama_added, False, True),
        "tokenizer_config.json": cfg})
    # (3) plain ByteLevel + GPT-2 regex, the NFC normalizer (so "cafe" + U+0301 meets the normalized "café"), no
    # post-processor; normalized=true added tokens (one overlapping the special <|endoftext|>, one with a char the
    # decoder maps to a lone byte, one with a char outside the byte map); pad "<pad>" is a model-vocab string;
    # special_tokens_map.json's bos overrides the config's.
    gpt_added = [added("<|endoftext|>", v), added("of<|end", v + 1, special=False),
                 added("café", v + 2, special=False), added("é x", v + 3, special=False),
                 added("Ġzz", v + 4, special=False)]
    dirs["bytelevel"] = write_dir(root, "bytelevel", {
        "tokenizer.json": dict(tokenizer_json(vocab, merges, {"type": "ByteLevel", "add_prefix_space": False,
                                                              "trim_offsets": True, "use_regex": True},
                                              None, gpt_added, False, False), normalizer={"type": "NFC"}),
        "tokenizer_config.json": {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                                  "bos_token": "<pad>", "clean_up_tokenization_spaces": False},
        "special_tokens_map.json": {"pad_token": "<pad>", "bos_token": {
            "content": "<|endoftext|>", "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False}, "unk_token": {  # a new special token that keeps its normalized=true: pass 2
            "content": "zq<|end", "lstrip": False, "normalized": True, "rstrip": False, "single_word": False}}})
    return dirs


# ------------------------------------------------------------------------------------------------------------------
# Texts
# ------------------------------------------------------------------------------------------------------------------

SPECIAL_FRAGMENTS = [BOT, EOT] + RESERVED + [
    "<|begin_of_text", "begin_of_text|>", "<|end_of_", "<|<|end_of_text|>|>", "<|reserved_special_token_9|>",
    "[PAD]", "[PAD", "<unk>", "<unk", "<pad>", "<s>", "</s>", "<|endoftext|>", "of<|endoftext|>", "of<|end",
    "xof<|endx", "café", "é x", "Ġzz", "Ġ", "Ċ", "caféé x", "zq<|end", "zq<|endoftext|>", "zqof<|end",
    "cafe\u0301", "e\u0301 x", "<|endoftext|>\u0301", "A\u030a\u0301", "\u1100\u1161\u11a8", "\u0b47\u0b3e"]
FRAGMENTS = SPECIAL_FRAGMENTS + [
    " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "a", "the", " the", "Hello", ".", ",", "'s", "'S", "'ſ", "'re",
    "'RE", "don't", "é", "日本", "😀", "42", "12345", "١٢٣", "quixotic", " quixotic", "zebra", "999", "ΣΟΦΟΣ",
    "мир", "!!", "...", "<", ">", "|"]

UNICODE_POOL = ("abcxyzABCXYZ éèüñçßøÅŒ ΣΟΦΟΣλόγος мирЖ 日本語中文漢字 한국어 ひらがなカタカナ عربي हिन्दी ไทย "
                "0123456789 ٠١٢٣ ०१२३ １２３ Ⅻ²³½ .,;:!?'\"-_()[]{}<>|/\\@#$%^&*+=~` "
                "\u0301\u0308 😀👍🏽☃★€£¥ \t\n\r\u00a0\u2009\u3000\u0085\u001f")


def generated_texts(seed):
    rng = random.Random(seed)
    texts = [
        # digit runs (\p{N}{1,3}) and other numerals
        "1", "12", "123", "1234", "12345678901", "3.14159", "x1y22z333w4444", "٠١٢٣٤", "१२३४", "１２３４５", "Ⅻ²³",
        "999", " 999", "9999", "2024-01-02",
        # CR / LF runs (\s*[\r\n]+) and trailing whitespace (\s+(?!\S))
        "a\r\nb", "a\n\n\nb", "a\r\r\n\nb", " \n", "\n ", "x \n\n y", "\t\n", "line1\r\nline2\r\n", "a \r\n b",
        "end\n", "\n\n\n", "a\n\n\n\nb", "   x", "x   ", "x \t y",
        # tabs, no-break and other spaces, NEL, unit separator
        "\tx", "a\t\tb", "\t \t", "a\u00a0b", "\u00a0\u00a0x", "x\u2009y", "\u3000z", "a\u0085b", "a\u001fb",
        # apostrophes: the Llama-3 contractions are case-insensitive, GPT-2's are not
        "it's", "IT'S", "we're WE'RE We'Re", "'ſ", "'s'S'ſ", "I'll I'LL", "she'd SHE'D", "you've", "I'm I'M",
        "''s", "' s", "don't DON'T", "l'été", "rock'n'roll", "'", "'''",
        # words only ignore_merges reaches
        "quixotic", " quixotic", "a quixotic zebra", "zebra999", " Ψυχή", "Ψυχή", "龍虎", "ĊĊĊ",
        # byte-level characters typed in the text
        "Ġhello", "ĠĠ", "Ċ\n", "ÿþ",
    ]
    texts += SPECIAL_FRAGMENTS
    texts += ["a %s b" % t for t in SPECIAL_FRAGMENTS] + ["x%sy" % t for t in SPECIAL_FRAGMENTS]
    for _ in range(250):
        texts.append("".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 10))))
    for _ in range(150):
        texts.append("".join(rng.choice(UNICODE_POOL) for _ in range(rng.randint(1, 30))))
    return texts


RAW_TEXTS = [b"ab\xffcd", b"\xe2\x82 x<|end_of_text|>\xc3"]  # invalid UTF-8: each bad sequence reads as U+FFFD


# ------------------------------------------------------------------------------------------------------------------
# The C side
# ------------------------------------------------------------------------------------------------------------------

def tool_info(tool, d):
    p = subprocess.run([tool, "HFTokenizer", "--tokenizer-model", d, "info"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        return None, p.returncode, p.stderr.decode(errors="replace")
    info = dict(l.split()[:2] for l in p.stdout.decode().strip().split("\n") if l.strip())
    return info, 0, p.stderr.decode(errors="replace")


def tool_encode(tool, d, texts):
    raw = [t if isinstance(t, bytes) else t.encode("utf-8") for t in texts]
    out = run_tool(tool, ["HFTokenizer", "--tokenizer-model", d, "encode"], [t.hex() for t in raw])
    return [[int(x) for x in l.split()] for l in out]


def tool_decode(tool, d, id_lists):
    out = run_tool(tool, ["HFTokenizer", "--tokenizer-model", d, "decode"], [" ".join(map(str, i)) for i in id_lists])
    return [bytes.fromhex(l.strip()) for l in out]


# ------------------------------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------------------------------

def self_check(vocab, merges, seg, learned, dirs):
    """The oracle against hand-derived facts and against the model's own construction."""
    ok = True
    ref1, ref2, ref3 = (FastRef(dirs[k]) for k in ("llama3", "llama3-pairs", "bytelevel"))
    mm = {(vocab[a], vocab[b]): (r, vocab[a + b]) for r, (a, b) in enumerate(merges[:learned])}
    # the heap transcription is the textbook rule, and reproduces the segmentation the training produced
    bad = [w for w, s in seg.items() if merge_all([vocab[c] for c in w], mm) != [vocab[t] for t in s]]
    ok &= check(not bad, "self-check: BPE reproduces the training segmentation of %d words" % len(seg), str(bad[:5]))
    rng = random.Random(2)
    alphabet = sorted({c for w in seg for c in w})
    bad = []
    for _ in range(3000):
        ids = [vocab[rng.choice(alphabet)] for _ in range(rng.randint(1, 14))]
        if merge_all(ids, ref2.merges) != merge_naive(ids, ref2.merges):
            bad.append(ids)
    ok &= check(not bad, "self-check: merge_all (heap) == lowest-rank-first on random words", str(bad[:3]))
    ok &= check(len(merges) == learned + 1, "self-check: a merge whose result an earlier merge made exists",
                "%d merges" % len(merges))
    # hand-derived pre-tokenizer splits (Llama-3 regex; tokenizers' byte_level.rs test for the GPT-2 one)
    l3 = regex.compile(LLAMA3_PATTERN)
    cases = [("Hello world's 12345\n\n  x", ["Hello", " world", "'s", " ", "123", "45", "\n\n", " ", " x"]),
             ("IT'S x'ſ", ["IT", "'S", " x", "'ſ"]), ("a\r\n\r\nb", ["a", "\r\n\r\n", "b"]),
             ("(a) ...\n", ["(a", ")", " ...\n"]), ("x  \ty", ["x", "  ", "\ty"])]
    for text, want in cases:
        ok &= check(split_isolated(l3, text) == want, "self-check: Llama-3 split of %r" % text,
                    str(split_isolated(l3, text)))
    g = [to_byte_level(w) for w in split_isolated(regex.compile(GPT2_PATTERN),
                                                  "Hello my friend, how is your day going?")]
    ok &= check(g == ["Hello", "Ġmy", "Ġfriend", ",", "Ġhow", "Ġis", "Ġyour", "Ġday", "Ġgoing", "?"],
                "self-check: GPT-2 split (byte_level.rs pre_tokenization test)", str(g))
    # ids of the added and the Megatron tokens
    v = len(vocab)
    ok &= check((ref1.bos_id, ref1.eos_id, ref1.pad_id, ref1.token_to_id("<unk>")) == (v, v + 1, v + 6, v + 7),
                "self-check: llama3 ids (bos, eos, [PAD], <unk> after the reserved tokens)",
                str((ref1.bos_id, ref1.eos_id, ref1.pad_id, ref1.token_to_id("<unk>"))))
    ok &= check((ref3.bos_id, ref3.eos_id, ref3.pad_id, ref3.token_to_id("zq<|end")) == (v, v, vocab["<pad>"], v + 5)
                and ref3.added_r[v + 5][4], "self-check: bytelevel ids (bos from special_tokens_map.json, pad from the "
                "model vocab, the new normalized unk)", str((ref3.bos_id, ref3.eos_id, ref3.pad_id,
                                                             ref3.token_to_id("zq<|end"))))
    # pass order: the special token first over the whole text, the normalized ones inside what is left
    ok &= check([s for s, _ in ref3.split_added("of<|endoftext|>")] == ["of", "<|endoftext|>"]
                and [s for s, _ in ref3.split_added("of<|endx")] == ["of<|end", "x"],
                "self-check: added-token pass order", str(ref3.split_added("of<|endoftext|>")))
    whole = [ref1.encode(t) for t in (" zebra", "999", "\n\n\n", " Ψυχή")]
    ok &= check(whole == [[v, vocab[w]] for w in ("Ġzebra", "999", "ĊĊĊ", to_byte_level(" Ψυχή"))],
                "self-check: ignore_merges emits a vocab word whole", str(whole))
    ok &= check(ref2.encode(" zebra")[1:-1] != [vocab["Ġzebra"]],
                "self-check: without ignore_merges the word goes through the merges", str(ref2.encode(" zebra")))
    # the decoder: a lone-byte char and a char outside the byte map
    ok &= check(ref3.decode([ref3.added["café"], ref3.added["é x"], ref3.added["Ġzz"]]) == "caf\ufffdé x zz",
                "self-check: ByteLevel decoder on added tokens", repr(ref3.decode([ref3.added["café"]])))
    # round trips
    bad = []
    for t in generated_texts(4) + SLOW_TEXTS:
        if ref1.decode(ref1.encode(t), clean_up=False) != BOT + t or ref2.decode(ref2.encode(t), clean_up=False) != \
                BOT + t + EOT:
            bad.append(t)
        if not any(s in unicodedata.normalize("NFC", t) for s in ref3.added) and t:
            if ref3.decode(ref3.encode(t)) != unicodedata.normalize("NFC", t):  # its normalizer
                bad.append(t)
    ok &= check(not bad, "self-check: decode(encode(t)) gives t back", repr(bad[:3]))
    return ok


def random_id_lists(ref, rng, count):
    pool = list(range(ref.vocab_size)) + sorted(ref.added_r)
    specials = sorted(ref.added_r)
    lists = []
    for _ in range(count):
        lst = [rng.choice(pool) for _ in range(rng.randint(1, 16))]
        for _ in range(rng.randint(0, 3)):
            lst.insert(rng.randrange(len(lst) + 1), rng.choice(specials))
        lists.append(lst)
    return lists


def test_dir(tool, name, d, texts, rng):
    try:
        _test_dir(tool, name, d, texts, rng)
    except RuntimeError as e:  # the driver died: one FAIL, go on with the next directory
        check(False, "%s: %s" % (name, os.path.basename(tool)), str(e)[-1500:])


def _test_dir(tool, name, d, texts, rng):
    ref = FastRef(d)
    info, rc, err = tool_info(tool, d)
    want = {"vocab_size": ref.vocab_size, "eod": ref.eos_id, "pad": ref.pad_id, "bos": ref.bos_id}
    got = None if info is None else {k: int(info[k]) if k in info else None for k in want}
    check(got == want, "%s info (vocab_size, eod, pad, bos)" % name,
          "C %s (rc %d, stderr %s) vs reference %s" % (got, rc, err.strip()[-400:], want))
    if info is None:
        return
    want_ids = [ref.encode(t) for t in texts]
    got_ids = tool_encode(tool, d, texts)
    bad = [i for i in range(len(texts)) if got_ids[i] != want_ids[i]]
    for i in bad[:20]:
        t = texts[i] if isinstance(texts[i], str) else texts[i].decode("utf-8", "replace")
        print("  %s encode %s:\n    C         %s\n    reference %s  tokens %s\n    %s" % (
            name, short(texts[i]), short(got_ids[i]), short(want_ids[i]), short(ref.tokens(t), 12),
            first_diff(got_ids[i], want_ids[i])))
    check(not bad, "%s encode (%d texts)" % (name, len(texts)), "%d differ (first ones above)" % len(bad))
    for what, lists in (("the encoded texts", [w for w in want_ids if w]),
                        ("random id lists", random_id_lists(ref, rng, 300))):
        got = tool_decode(tool, d, lists)
        exp = [ref.decode(l).encode("utf-8") for l in lists]
        bad = [i for i in range(len(lists)) if got[i] != exp[i]]
        for i in bad[:20]:
            print("  %s decode %s:\n    C         %s\n    reference %s" % (
                name, short(lists[i]), short(got[i].decode("utf-8", "replace")), short(exp[i].decode("utf-8"))))
        check(not bad, "%s decode of %s (%d)" % (name, what, len(lists)), "%d differ (first ones above)" % len(bad))


def refusals(tool, root, base):
    """Copies of the llama3 directory with one thing the C side refuses each: non-zero exit, stderr naming the file
    (and one of the key names)."""
    with open(os.path.join(base, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    with open(os.path.join(base, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    merges = tj["model"]["merges"]
    a, b = merges[-2].split(" ")
    unused = next(c for c in BYTE_CHAR.values() if not any(c in m for m in merges))

    def edit(fn):
        t = copy.deepcopy(tj)
        fn(t)
        return t

    def set_added(flag):
        def fn(t):
            t["added_tokens"][2][flag] = True
        return fn

    def bad_merge(kind):
        def fn(t):
            if kind == "part":
                t["model"]["merges"].append("qqqq " + a)
            else:  # both parts are tokens, their concatenation is not
                x = next(tok for tok in t["model"]["vocab"] if tok + b not in t["model"]["vocab"] and len(tok) > 2)
                t["model"]["merges"].append("%s %s" % (x, b))
        return fn

    cases = [
        ("normalizer NFKC", edit(lambda t: t.update(normalizer={"type": "NFKC"})), None, ["normalizer", "NFKC"]),
        ("another Split regex", edit(lambda t: t["pre_tokenizer"]["pretokenizers"][0].update(
            pattern={"Regex": LLAMA3_PATTERN.replace("{1,3}", "{1,2}")})), None, ["Split", "pattern", "Regex"]),
        ("a WordLevel model", edit(lambda t: t.update(model={"type": "WordLevel", "vocab": t["model"]["vocab"],
                                                             "unk_token": "<unk>"})), None, ["model", "type", "BPE"]),
        ("byte_fallback true", edit(lambda t: t["model"].update(byte_fallback=True)), None, ["byte_fallback"]),
        ("an added token with lstrip", edit(set_added("lstrip")), None, ["lstrip"]),
        ("an added token with rstrip", edit(set_added("rstrip")), None, ["rstrip"]),
        ("an added token with single_word", edit(set_added("single_word")), None, ["single_word"]),
        ("a merge part outside the vocab", edit(bad_merge("part")), None, ["merge", "qqqq"]),
        ("a merge result outside the vocab", edit(bad_merge("result")), None, ["merge"]),
        ("a byte-level character missing from the vocab", edit(lambda t: t["model"]["vocab"].pop(unused)), None,
         ["vocab", unused, "byte"]),
        ("truncation set", edit(lambda t: t.update(truncation={"direction": "Right", "max_length": 512,
                                                               "strategy": "LongestFirst", "stride": 0})), None,
         ["truncation"]),
        ("add_prefix_space in tokenizer_config.json", None, dict(cfg, add_prefix_space=True), ["add_prefix_space"]),
        ("split_special_tokens in tokenizer_config.json", None, dict(cfg, split_special_tokens=True),
         ["split_special_tokens"]),
        ("a ByteLevel pre-tokenizer with add_prefix_space (transformers-version dependent)",
         edit(lambda t: t.update(pre_tokenizer={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                                "use_regex": True})), None, ["pre_tokenizer", "add_prefix_space"]),
        ("an added token whose id is not the one add_tokens gives", edit(lambda t: t["added_tokens"][2].update(
            id=t["added_tokens"][2]["id"] + 7)), None, ["added token", "id"]),
        ("a vocab whose ids are not 0..n-1", edit(lambda t: t["model"]["vocab"].update(
            {next(iter(t["model"]["vocab"])): len(t["model"]["vocab"]) + 40})), None, ["vocab", "ids"]),
        ("two TemplateProcessing", edit(lambda t: t["post_processor"]["processors"].append(
            copy.deepcopy(t["post_processor"]["processors"][1]))), None, ["post_processor", "TemplateProcessing"]),
        ("added_tokens_decoder with lstrip", None, dict(cfg, added_tokens_decoder=dict(
            cfg["added_tokens_decoder"], **{k: dict(v, lstrip=True) for k, v in
                                            list(cfg["added_tokens_decoder"].items())[:1]})), ["lstrip"]),
        ("added_tokens_decoder changing normalized", None, dict(cfg, added_tokens_decoder=dict(
            cfg["added_tokens_decoder"], **{k: dict(v, normalized=True) for k, v in
                                            list(cfg["added_tokens_decoder"].items())[:1]})), ["normalized"]),
    ]
    for i, (what, t, c, keys) in enumerate(cases):
        files = {"tokenizer.json": t if t is not None else tj, "tokenizer_config.json": c if c is not None else cfg}
        d = write_dir(root, "refuse-%d" % i, files)
        p = subprocess.run([tool, "HFTokenizer", "--tokenizer-model", d, "info"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        err = p.stderr.decode(errors="replace")
        fname = "tokenizer_config.json" if c is not None else "tokenizer.json"
        check(p.returncode != 0 and fname in err and any(k in err for k in keys),
              "refused: %s (naming %s and %s)" % (what, fname, " or ".join(map(repr, keys))),
              "rc %d, stderr: %s" % (p.returncode, err.strip()[-500:]))


def pipeline(prep, pretrain, root, dirs):
    """preprocess_data --tokenizer-type HFTokenizer on two directories (the ids equal the oracle's encode, eos appended
    with --append-eod), then pretrain_gpt: it trains on the bytelevel directory's data (every id in the vocabulary)
    and refuses the Llama-3-like data before training, whose <|begin_of_text|> and <|end_of_text|> are added tokens
    past Megatron's vocab_size."""
    docs = [d for d in generated_texts(5) if d.strip() and "\ufffd" not in d][:40]
    jl = os.path.join(root, "docs.jsonl")
    with open(jl, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}) + "\n")
    prefixes = {}
    for name, eod in (("llama3", True), ("bytelevel", False)):
        ref = FastRef(dirs[name])
        prefix = os.path.join(root, "docs_" + name)
        p = subprocess.run([prep, "--input", jl, "--output-prefix", prefix, "--tokenizer-type", "HFTokenizer",
                            "--tokenizer-model", dirs[name], "--workers", "2"] + (["--append-eod"] if eod else []),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        want = [i for d in docs for i in ref.encode(d) + ([ref.eos_id] if eod else [])]
        path = prefix + "_text_document.bin"
        got = []
        if p.returncode == 0 and os.path.exists(path):
            with open(path, "rb") as f:
                raw = f.read()
            got = [int.from_bytes(raw[k:k + 2], "little") for k in range(0, len(raw), 2)]
        check(p.returncode == 0 and got == want, "preprocess_data %s: the .bin holds encode(doc)%s per document" % (
            name, " + eos" if eod else ""), "rc %d %s; %s" % (p.returncode, p.stderr.decode()[-300:],
                                                            first_diff(got, want)))
        prefixes[name] = prefix + "_text_document"
    model = ["--num-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2", "--seq-length", "16",
             "--max-position-embeddings", "16", "--micro-batch-size", "2", "--global-batch-size", "2", "--lr", "1e-3",
             "--train-iters", "2", "--log-interval", "1", "--eval-iters", "0", "--split", "100,0,0",
             "--tokenizer-type", "HFTokenizer"]
    p = subprocess.run([pretrain] + model + ["--tokenizer-model", dirs["bytelevel"], "--data-path",
                                             prefixes["bytelevel"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.decode(errors="replace")
    check(p.returncode == 0 and out.count("lm loss:") == 2, "pretrain_gpt trains on the bytelevel directory's data",
          "rc %d: %s" % (p.returncode, (out + p.stderr.decode(errors="replace"))[-600:]))
    p = subprocess.run([pretrain] + model + ["--tokenizer-model", dirs["llama3"], "--data-path", prefixes["llama3"]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    v = FastRef(dirs["llama3"]).vocab_size
    check(p.returncode != 0 and "outside the %d ids" % v in err and "added tokens" in err and "lm loss" not in
          p.stdout.decode(errors="replace"), "pretrain_gpt refuses the Llama-3-like data (ids past vocab_size %d)" % v,
          "rc %d: %s" % (p.returncode, err[-400:]))


# ------------------------------------------------------------------------------------------------------------------
# Qwen2Tokenizer (transformers' slow class, which AutoTokenizer(use_fast=False) loads for Qwen2 / Qwen2.5)
# ------------------------------------------------------------------------------------------------------------------

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


class QwenRef:
    """models/qwen2/tokenization_qwen2.py (vocab.json, merges.txt read line by line: stripped, a first "#version:"
    line and empty lines skipped; NFC in prepare_for_tokenization; PRETOKENIZE_REGEX; GPT-2's bpe; unk, eos and pad
    <|endoftext|> and no bos unless tokenizer_config.json says otherwise), PreTrainedTokenizer's loading of
    added_tokens_decoder and of the special tokens it adds (new ids from len(tokenizer)), tokenize (NFC, then the
    added tokens split the text leftmost-longest), _decode with spaces_between_special_tokens=False (a non-special
    added token written as its text, the runs between byte-decoded with errors="replace"), and Megatron's additions."""
    KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]

    def __init__(self, d):
        def load(name):
            p = os.path.join(d, name)
            return json.load(open(p, encoding="utf-8")) if os.path.exists(p) else None
        self.encoder = load("vocab.json")
        self.merges = {}
        with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
            ranks = []
            for i, line in enumerate(f):
                line = line.strip()
                if (i == 0 and line.startswith("#version:")) or not line:
                    continue
                ranks.append(tuple(line.split()))
        for r, m in enumerate(ranks):
            self.merges[m] = r
        cfg = load("tokenizer_config.json") or {}
        self.added = {}    # content -> id
        self.special = {}  # content -> special
        for idx, t in sorted(((int(k), v) for k, v in cfg.get("added_tokens_decoder", {}).items())):
            self.added[t["content"]], self.special[t["content"]] = idx, t.get("special", False)
        values = {"bos_token": None, "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                  "pad_token": "<|endoftext|>"}
        for k in self.KEYS:
            if k in cfg:
                values[k] = cfg[k]["content"] if isinstance(cfg[k], dict) else cfg[k]
        extra = [x["content"] if isinstance(x, dict) else x for x in cfg.get("additional_special_tokens") or []]
        for t in [values.get(k) for k in self.KEYS] + extra:  # PreTrainedTokenizer.__init__'s _add_tokens
            if t is not None:
                self.add(t)
        for k, t in (("pad_token", "[PAD]"), ("eos_token", "</s>"), ("bos_token", "<s>"), ("unk_token", "<unk>")):
            if values.get(k) is None:  # Megatron's _HFTokenizer
                values[k] = t
                self.add(t)
        self.values = values
        self.vocab_size = len(self.encoder)
        self.decoder = {v: k for k, v in self.encoder.items()}
        self.added_r = {v: k for k, v in self.added.items()}
        # clean_up_tokenization_spaces never applies: Qwen2Tokenizer.decode passes False to PreTrainedTokenizer.decode
        self.rx = regex.compile(QWEN2_PATTERN)
        self.cache = {}

    def add(self, content):
        if content in self.added:
            return
        self.added[content] = self.encoder[content] if content in self.encoder else \
            len(set(self.encoder) | set(self.added))
        self.special[content] = True

    def ids(self, key):
        return self.added.get(self.values[key], self.encoder.get(self.values[key]))

    def bpe(self, word):
        if word not in self.cache:
            self.cache[word] = merge_naive([self.encoder[c] for c in word], {
                (self.encoder[a], self.encoder[b]): (r, self.encoder[a + b]) for (a, b), r in self.merges.items()}) \
                if len(word) > 1 else [self.encoder[word]]
        return self.cache[word]

    def encode(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        text = unicodedata.normalize("NFC", text)
        out = []
        for piece in slow.split_leftmost_longest(text, list(self.added)):
            if piece in self.added:
                out.append(self.added[piece])
                continue
            for w in self.rx.findall(piece):
                out.extend(self.bpe(to_byte_level(w)))
        return out

    def decode(self, ids):
        subs, cur = [], []
        for i in ids:
            tok = self.added_r.get(i, self.decoder.get(i))
            if tok in self.added and not self.special[tok]:
                if cur:
                    subs.append(bytes(CHAR_BYTE[c] for c in "".join(cur)).decode("utf-8", "replace"))
                    cur = []
                subs.append(tok)
            else:
                cur.append(tok)
        if cur:
            subs.append(bytes(CHAR_BYTE[c] for c in "".join(cur)).decode("utf-8", "replace"))
        return "".join(subs)


def qwen_dirs(root, vocab, merges):
    """Qwen2.5's tokenizer_config.json layout over the test's BPE (vocab.json without <|endoftext|>, which is an
    added token; one non-special added token with a byte-alphabet character, which decodes as its text); and a
    directory with config.json's model_type qwen2 only (the class's defaults), its merges.txt
    without the "#version" line and without a final newline."""
    v = len(vocab)
    dec = {str(v + i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                        "special": sp} for i, (c, sp) in enumerate([("<|endoftext|>", True), ("<|im_start|>", True),
                                                                    ("<|im_end|>", True), ("<tool_call>", False),
                                                                    ("</tool_call>", False),
                                                                    ("<\u0120x>", False)])}
    lines = ["%s %s" % m for m in merges]
    files = {"vocab.json": vocab, "merges.txt": "#version: 0.2\n" + "\n".join(lines) + "\n",
             "tokenizer_config.json": {
                 "tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "unk_token": None, "eos_token": "<|im_end|>",
                 "pad_token": "<|endoftext|>", "errors": "replace", "split_special_tokens": False,
                 "clean_up_tokenization_spaces": True,  # Qwen2Tokenizer.decode ignores it "model_max_length": 131072, "added_tokens_decoder": dec,
                 "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]}}
    out = {"qwen2.5": write_dir(root, "qwen2.5", files)}
    out["qwen2-defaults"] = write_dir(root, "qwen2-defaults", {"vocab.json": vocab, "merges.txt": "\n".join(lines),
                                                               "config.json": {"model_type": "qwen2"}})
    return out


def qwen(tool, root, vocab, merges, texts, rng):
    for name, d in qwen_dirs(root, vocab, merges).items():
        ref = QwenRef(d)
        info, rc, err = tool_info(tool, d)
        want = {k: str(v) for k, v in (("vocab_size", ref.vocab_size), ("eod", ref.ids("eos_token")),
                                       ("pad", ref.ids("pad_token")), ("bos", ref.ids("bos_token")))}
        check(info == want, "%s: info (vocab_size, eod, pad, bos)" % name, "%s vs %s %s" % (info, want, err[-300:]))
        if info is None:
            continue
        got = tool_encode(tool, d, texts)
        exp = [ref.encode(t) for t in texts]
        bad = [i for i in range(len(texts)) if got[i] != exp[i]]
        for i in bad[:5]:
            print("  %s encode %s: %s" % (name, short(texts[i]), first_diff(got[i], exp[i])))
        check(not bad, "%s encode (%d texts): Qwen2Tokenizer's ids" % (name, len(texts)), "%d differ" % len(bad))
        ids = sorted(set(ref.added.values()))
        lists = [e for e in exp if e][:400] + [[rng.choice(ids) if rng.random() < 0.2 else rng.randrange(ref.vocab_size)
                                                for _ in range(rng.randint(1, 12))] for _ in range(300)]
        got = tool_decode(tool, d, lists)
        bad = [i for i in range(len(lists)) if got[i] != ref.decode(lists[i]).encode("utf-8")]
        for i in bad[:5]:
            print("  %s decode %s: %r vs %r" % (name, short(lists[i]), got[i][:80], ref.decode(lists[i])[:80]))
        check(not bad, "%s decode (%d id lists): Qwen2Tokenizer's _decode" % (name, len(lists)), "%d differ" % len(bad))


def gpt2_dirs(root, vocab_path, merges_path):
    """Two PreTrainedTokenizerFast directories over the real GPT-2 vocabulary and merges: Hugging Face's gpt2
    tokenizer.json layout (ByteLevel with GPT-2's regex, <|endoftext|> an added token with its vocabulary id), and
    Llama-3's pre-tokenizer and bos template (ignore_merges) over the same model. bench/hf_tokenizer.sh uses them
    too."""
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    with open(merges_path, encoding="utf-8") as f:
        merges = [tuple(l.split()) for i, l in enumerate(f.read().split("\n")) if l.strip() and
                  not (i == 0 and l.startswith("#version"))]
    eot = {"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False, "lstrip": False,
           "rstrip": False, "normalized": True, "special": True}
    gpt2 = tokenizer_json(vocab, merges, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                          "use_regex": True},
                          {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                          [eot], False, False)
    bot = dict(eot, id=len(vocab), content=BOT, normalized=False)
    llama = tokenizer_json(vocab, merges, LLAMA3_PRE, template([BOT], [], {BOT: len(vocab)}), [eot, bot], True, True)
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
           "unk_token": "<|endoftext|>"}
    return {"gpt2-json": write_dir(root, "gpt2-json", {"tokenizer.json": gpt2, "tokenizer_config.json": cfg}),
            "llama3-gpt2-vocab": write_dir(root, "llama3-gpt2-vocab", {
                "tokenizer.json": llama, "tokenizer_config.json": dict(cfg, bos_token=BOT)})}


def real_vocabulary(tool, root, vocab_path, merges_path, texts):
    """The real GPT-2 files as tokenizer.json: Hugging Face's gpt2 layout gives GPT2BPETokenizer's ids (Megatron's
    GPT-2 tokenizer, checked elsewhere against OpenAI's encoder) on every text without <|endoftext|> or Megatron's
    [PAD], and both
    layouts give the oracle's ids."""
    dirs = gpt2_dirs(root, vocab_path, merges_path)
    plain = [t for t in texts if "<|endoftext|>" not in t and "[PAD]" not in t]  # added tokens here
    mega = run_tool(tool, ["GPT2BPETokenizer", "--vocab-file", vocab_path, "--merge-file", merges_path, "encode"],
                    [t.encode("utf-8").hex() for t in plain])
    mega = [[int(x) for x in l.split()] for l in mega]
    got = tool_encode(tool, dirs["gpt2-json"], plain)
    bad = [i for i in range(len(plain)) if got[i] != mega[i]]
    check(not bad, "real GPT-2 vocabulary as tokenizer.json: GPT2BPETokenizer's ids on %d texts" % len(plain),
          "%d differ; first: %r: %s" % (len(bad), short(plain[bad[0]]) if bad else "", first_diff(
              got[bad[0]], mega[bad[0]]) if bad else ""))
    for name, d in dirs.items():
        ref = FastRef(d)
        got = tool_encode(tool, d, texts)
        bad = [i for i, t in enumerate(texts) if got[i] != ref.encode(t)]
        check(not bad, "real GPT-2 vocabulary, %s: the oracle's ids on %d texts" % (name, len(texts)),
              "%d differ; first: %r: %s" % (len(bad), short(texts[bad[0]]) if bad else "",
                                           first_diff(got[bad[0]], ref.encode(texts[bad[0]])) if bad else ""))


def main():
    if len(sys.argv) not in (2, 4):
        print("usage: test_hf_fast_tokenizer.py TOOL [PREPROCESS_DATA PRETRAIN_GPT]")
        sys.exit(2)
    tool = sys.argv[1]
    if regex is None:
        print("SKIP: Python's regex module is not installed")
        sys.exit(77)
    rng = random.Random(11)
    vocab, merges, seg, learned = build_model()
    texts = SLOW_TEXTS + generated_texts(3) + RAW_TEXTS
    with tempfile.TemporaryDirectory() as root:
        dirs = make_dirs(root, vocab, merges)
        if not self_check(vocab, merges, seg, learned, dirs):
            print("the reference failed its self-check; the comparisons below are not trustworthy")
        for name, d in dirs.items():
            test_dir(tool, name, d, texts, rng)
        refusals(tool, root, dirs["llama3"])
        qwen(tool, root, vocab, merges, texts, rng)
        cache = os.environ.get("ZT_DATA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zerotron")
        gv, gm = os.path.join(cache, "gpt2", "gpt2-vocab.json"), os.path.join(cache, "gpt2", "gpt2-merges.txt")
        brown = os.path.join(cache, "brown", "brown.jsonl")
        if os.path.exists(gv) and os.path.exists(gm):
            docs = []
            if os.path.exists(brown):
                with open(brown, encoding="utf-8") as f:
                    docs = [json.loads(l)["text"] for _, l in zip(range(30), f)]
            real_vocabulary(tool, root, gv, gm, SLOW_TEXTS + generated_texts(7)[:300] + docs)
        else:
            print("SKIP part: the real GPT-2 files are not in %s (scripts/fetch_data.sh)" % cache)
        if len(sys.argv) == 4:
            pipeline(sys.argv[2], sys.argv[3], root, dirs)
    print("%d passed, %d failed" % (slow.PASSED, slow.FAILED))
    sys.exit(1 if slow.FAILED else 0)


if __name__ == "__main__":
    main()
