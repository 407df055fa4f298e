#!/usr/bin/env python3
"""HFTokenizer parity: Megatron-DeepSpeed's `--tokenizer-type HFTokenizer --tokenizer-model DIR` in C (data/tokenizer/
hf_tokenizer.c, driven by test_bert_tool) against an independent Python transcription of what Megatron's _HFTokenizer
gets from transformers' SLOW tokenizers (AutoTokenizer.from_pretrained(DIR, use_fast=False), a "[PAD]" pad token added
when the directory has none): LlamaTokenizer (tokenizer.model through Python's sentencepiece; legacy and non-legacy
handling, add_bos_token / add_eos_token / add_prefix_space, the proto edit that turns add_dummy_prefix off) and
GPT2Tokenizer (vocab.json + merges.txt through test_gpt2_ref.py's byte-level BPE; add_prefix_space / add_bos_token),
with PreTrainedTokenizer.tokenize's added-token split (transformers' Trie.split, transcribed; lstrip/rstrip) and
_decode / convert_tokens_to_string. transformers itself is not used.

A small BPE sentencepiece model with byte fallback is trained here on a generated Unicode corpus; several HF
directories are built around it (huggyllama-like legacy, llama2-like legacy=false with added_tokens_decoder, add_eos
without bos, no tokenizer_config.json at all, eos with lstrip/rstrip, pad from special_tokens_map.json (and that file
ignored when tokenizer_config.json has added_tokens_decoder, as transformers >= 4.34 does), added tokens
beyond bos/eos/unk/pad, which the C side may refuse naming tokenizer_config.json) plus three GPT-2 directories around
the real GPT-2 files (plain; add_prefix_space + add_bos_token; clean_up_tokenization_spaces) from $ZT_DATA_CACHE or
~/.cache/zerotron/gpt2 (skipped with a note when absent). Checked: info (vocab_size, eod, pad, bos), encode of
hand-picked and generated texts, decode of every encoded text and of random id lists, and the errors for bad
directories.
  test_hf_tokenizer.py TOOL      (TOOL = test_bert_tool; SKIP, exit 77, without python3-sentencepiece)
Prints PASS/FAIL lines and "N passed, M failed"; exit 1 on any failure.
tests/data/test_prompt_dataset.py imports this module for the model, the directories and the reference tokenizer."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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


try:
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2
except ImportError:
    spm = None
    spm_pb2 = None

SPIECE_UNDERLINE = "\u2581"

# ------------------------------------------------------------------------------------------------------------------
# Corpus and model
# ------------------------------------------------------------------------------------------------------------------

WORDS = ("the of and to in is was for on that with as by at from his her they which this be are an it not or "
         "have had one were all their there been has but more when can who also its into other after first new "
         "time two may only about would these over most such many some then three between where year during "
         "instruction input response task write request below describes context answer question list give "
         "naïve café résumé façade Ångström über straße Ελληνικά λόγος ΣΟΦΟΣ русский язык мир "
         "日本語 中文 한국어 ☃ ★ 42 1999 3.14 e-mail U.S.A. don't it's ### (a) [b] #1: 50% $9").split()
SYLLABLES = "ka ri to me su na lo pe vi dan sor tel mu qua zen bri sta gor lin ex".split()


def corpus(n, seed):
    """n generated sentences (no '<', '>', '|', '▁', emoji: those reach the model through byte fallback)."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        k = rng.randint(3, 18)
        s = " ".join(rng.choice(WORDS) if rng.random() < 0.6 else
                     "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(k))
        if rng.random() < 0.1:
            s = s.replace(" ", "  ", 1)
        if rng.random() < 0.1:
            s = s + "\n" + rng.choice(WORDS)
        lines.append(s[0].upper() + s[1:] + rng.choice([".", "!", "?", ",", ";", ":"]))
    return lines


def train_llama_model(d, name="llama", extra_opts=None):
    """A Llama-like BPE sentencepiece model (byte fallback, unk 0 / bos 1 / eos 2, no pad, dummy prefix on,
    identity normalization, whitespace kept, digits split) trained on corpus(900); returns its path."""
    inp = os.path.join(d, name + "-corpus.txt")
    with open(inp, "w", encoding="utf-8") as f:
        f.write("\n".join(l.replace("\n", " ") for l in corpus(900, 7)) + "\n")
    prefix = os.path.join(d, name)
    opts = dict(input=inp, model_prefix=prefix, model_type="bpe", vocab_size=700, byte_fallback=True, unk_id=0,
                bos_id=1, eos_id=2, pad_id=-1, add_dummy_prefix=True, remove_extra_whitespaces=False,
                normalization_rule_name="identity", split_digits=True, character_coverage=1.0, minloglevel=2)
    opts.update(extra_opts or {})
    spm.SentencePieceTrainer.train(**opts)
    return prefix + ".model"


def added_token(content, lstrip=False, rstrip=False, special=True):
    return {"__type": "AddedToken", "content": content, "lstrip": lstrip, "normalized": False, "rstrip": rstrip,
            "single_word": False, "special": special}


def write_dir(root, name, files):
    """A directory root/name with files {filename: dict (written as JSON) | str (text) | ("copy", path)}."""
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    for fn, content in files.items():
        p = os.path.join(d, fn)
        if isinstance(content, tuple):
            shutil.copyfile(content[1], p)
        elif isinstance(content, dict):
            with open(p, "w", encoding="utf-8") as f:
                json.dump(content, f, indent=2, ensure_ascii=False)
        else:
            with open(p, "w", encoding="utf-8") as f:
                f.write(content)
    return d


def llama_specials_map(**over):
    m = {"bos_token": added_token("<s>"), "eos_token": added_token("</s>"), "unk_token": added_token("<unk>")}
    m.update(over)
    return m


def make_llama_dirs(root, model):
    """The Llama-class directories used by both oracle scripts: {name: path}."""
    n = len(spm.SentencePieceProcessor(model_file=model))
    tm = ("copy", model)
    base_cfg = {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": False,
                "bos_token": added_token("<s>"), "eos_token": added_token("</s>"), "unk_token": added_token("<unk>"),
                "pad_token": None, "clean_up_tokenization_spaces": False, "model_max_length": 2048,
                "sp_model_kwargs": {}}
    decoder012 = {"0": added_token("<unk>"), "1": added_token("<s>"), "2": added_token("</s>")}
    dirs = {}
    dirs["huggyllama"] = write_dir(root, "huggyllama", {
        "tokenizer.model": tm, "tokenizer_config.json": dict(base_cfg),
        "special_tokens_map.json": llama_specials_map()})
    dirs["llama2"] = write_dir(root, "llama2", {
        "tokenizer.model": tm, "tokenizer_config.json": dict(base_cfg, legacy=False, added_tokens_decoder=decoder012),
        "special_tokens_map.json": llama_specials_map()})
    dirs["llama-eos"] = write_dir(root, "llama-eos", {
        "tokenizer.model": tm,
        "tokenizer_config.json": dict(base_cfg, tokenizer_class="LlamaTokenizerFast", add_bos_token=False,
                                      add_eos_token=True, legacy=True),
        "special_tokens_map.json": llama_specials_map()})
    dirs["no-config"] = write_dir(root, "no-config", {"tokenizer.model": tm, "config.json": {"model_type": "llama"}})
    # eos eats the whitespace on both sides (tokenizer_config.json and special_tokens_map.json agree)
    strip_eos = added_token("</s>", lstrip=True, rstrip=True)
    dirs["llama-strip"] = write_dir(root, "llama-strip", {
        "tokenizer.model": tm, "tokenizer_config.json": dict(base_cfg, eos_token=strip_eos),
        "special_tokens_map.json": llama_specials_map(eos_token=strip_eos)})
    # special_tokens_map.json overrides tokenizer_config.json: pad = <unk> (no [PAD] added), plain-string tokens,
    # add_prefix_space false, legacy false
    dirs["llama-pad-unk"] = write_dir(root, "llama-pad-unk", {
        "tokenizer.model": tm,
        "tokenizer_config.json": {"tokenizer_class": "LlamaTokenizer", "legacy": False, "add_prefix_space": False,
                                  "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None},
        "special_tokens_map.json": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                                    "pad_token": "<unk>"}})
    # with added_tokens_decoder, special_tokens_map.json is not read: its pad <unk> is ignored, [PAD] is added
    dirs["llama-map-ignored"] = write_dir(root, "llama-map-ignored", {
        "tokenizer.model": tm, "tokenizer_config.json": dict(base_cfg, legacy=False, added_tokens_decoder=decoder012),
        "special_tokens_map.json": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                                    "pad_token": "<unk>"}})
    # added tokens beyond the base vocabulary (prefixes of each other, one with lstrip): [PAD] goes after them
    dec = dict(decoder012)
    dec[str(n)] = added_token("<sep>", lstrip=True, special=False)
    dec[str(n + 1)] = added_token("<sep>>", special=False)
    dec[str(n + 2)] = added_token("p>q", special=False)
    dirs["llama-added"] = write_dir(root, "llama-added", {
        "tokenizer.model": tm, "tokenizer_config.json": dict(base_cfg, legacy=False, added_tokens_decoder=dec),
        "special_tokens_map.json": llama_specials_map()})
    return dirs


def make_gpt2_dirs(root, vocab, merges):
    files = {"vocab.json": ("copy", vocab), "merges.txt": ("copy", merges)}
    dirs = {}
    dirs["gpt2"] = write_dir(root, "gpt2", dict(files, **{
        "tokenizer_config.json": {"tokenizer_class": "GPT2Tokenizer"}}))
    dirs["gpt2-prefix"] = write_dir(root, "gpt2-prefix", dict(files, **{
        "tokenizer_config.json": {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True, "add_bos_token": True,
                                  "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                  "unk_token": "<|endoftext|>"},
        "special_tokens_map.json": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                    "unk_token": "<|endoftext|>"}}))
    # decode's clean_up_tokenization_spaces when the directory asks for it
    dirs["gpt2-cleanup"] = write_dir(root, "gpt2-cleanup", dict(files, **{
        "tokenizer_config.json": {"tokenizer_class": "GPT2Tokenizer", "clean_up_tokenization_spaces": True}}))
    return dirs


# ------------------------------------------------------------------------------------------------------------------
# The reference: transformers' slow tokenizers as Megatron's _HFTokenizer builds them
# ------------------------------------------------------------------------------------------------------------------

class Trie:
    """transformers.tokenization_utils.Trie (add / split / cut_text), transcribed."""

    def __init__(self, words):
        self.data = {}
        for w in words:
            if not w:
                continue
            ref = self.data
            for ch in w:
                ref = ref.setdefault(ch, {})
            ref[""] = 1

    def split(self, text):
        states = {}
        offsets = [0]
        skip = 0
        for current, current_char in enumerate(text):
            if skip and current < skip:
                continue
            to_remove = set()
            reset = False
            for start, trie_pointer in list(states.items()):
                if "" in trie_pointer:
                    for lookstart, looktrie_pointer in states.items():
                        if lookstart > start:
                            break
                        elif lookstart < start:
                            lookahead_index = current + 1
                            end = current + 1
                        else:
                            lookahead_index = current
                            end = current
                        next_char = text[lookahead_index] if lookahead_index < len(text) else None
                        if "" in looktrie_pointer:
                            start = lookstart
                            end = lookahead_index
                            skip = lookahead_index
                        while next_char in looktrie_pointer:
                            looktrie_pointer = looktrie_pointer[next_char]
                            lookahead_index += 1
                            if "" in looktrie_pointer:
                                start = lookstart
                                end = lookahead_index
                                skip = lookahead_index
                            if lookahead_index == len(text):
                                break
                            next_char = text[lookahead_index]
                    offsets.append(start)
                    offsets.append(end)
                    reset = True
                    break
                elif current_char in trie_pointer:
                    states[start] = trie_pointer[current_char]
                else:
                    to_remove.add(start)
            if reset:
                states = {}
            else:
                for start in to_remove:
                    del states[start]
            if current >= skip and current_char in self.data:
                states[current] = self.data[current_char]
        for start, trie_pointer in states.items():
            if "" in trie_pointer:
                offsets.append(start)
                offsets.append(len(text))
                break
        offsets.append(len(text))
        tokens, start = [], 0
        for end in offsets:
            if start >= end:
                continue
            tokens.append(text[start:end])
            start = end
        return tokens


def split_leftmost_longest(text, words):
    """A plain statement of the split rule (self-check of the Trie transcription)."""
    out, i, plain = [], 0, ""
    while i < len(text):
        best = max((w for w in words if w and text.startswith(w, i)), key=len, default=None)
        if best is None:
            plain += text[i]
            i += 1
            continue
        if plain:
            out.append(plain)
            plain = ""
        out.append(best)
        i += len(best)
    return out + ([plain] if plain else [])


_GPT2_CACHE = {}


def gpt2_reference(vocab, merges):
    key = (vocab, merges)
    if key not in _GPT2_CACHE:
        import test_gpt2_ref
        _GPT2_CACHE[key] = test_gpt2_ref.Gpt2Reference(vocab, merges)
    return _GPT2_CACHE[key]


def _load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _token_parts(v):
    """(content, lstrip, rstrip) of a special-token value (str, AddedToken dict or None)."""
    if v is None:
        return None
    if isinstance(v, dict):
        return (v["content"], bool(v.get("lstrip", False)), bool(v.get("rstrip", False)))
    return (v, False, False)


class HFRef:
    """What Megatron's _HFTokenizer gets from AutoTokenizer.from_pretrained(path, use_fast=False) plus
    add_special_tokens for the missing pad (and eos / bos / unk) tokens."""

    def __init__(self, path):
        tc = os.path.join(path, "tokenizer_config.json")
        cfg = _load_json(tc) if os.path.exists(tc) else {}
        cls = cfg.get("tokenizer_class")
        if cls is None:
            cls = {"llama": "LlamaTokenizer", "gpt2": "GPT2Tokenizer"}[_load_json(os.path.join(path, "config.json"))
                                                                      ["model_type"]]
        self.kind = {"LlamaTokenizer": "llama", "LlamaTokenizerFast": "llama", "GPT2Tokenizer": "gpt2",
                     "GPT2TokenizerFast": "gpt2"}[cls]
        llama = self.kind == "llama"
        # base vocabulary
        if llama:
            model = os.path.join(path, "tokenizer.model")
            self.sp = spm.SentencePieceProcessor(model_file=model)
            self.base = {self.sp.id_to_piece(i): i for i in range(len(self.sp))}
            self.inv_base = {i: self.sp.id_to_piece(i) for i in range(len(self.sp))}
            self.legacy = cfg.get("legacy")
            self.legacy = True if self.legacy is None else bool(self.legacy)
            self.add_bos = bool(cfg.get("add_bos_token", True))
            self.add_eos = bool(cfg.get("add_eos_token", False))
            self.add_prefix_space = bool(cfg.get("add_prefix_space", True))
            if not self.legacy:  # LlamaTokenizer.get_spm_processor: the proto with add_dummy_prefix = False
                with open(model, "rb") as f:
                    proto = spm_pb2.ModelProto.FromString(f.read())
                ns = spm_pb2.NormalizerSpec()
                ns.add_dummy_prefix = False
                proto.normalizer_spec.MergeFrom(ns)
                self.sp = spm.SentencePieceProcessor()
                self.sp.LoadFromSerializedProto(proto.SerializeToString())
            defaults = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None}
        else:
            self.gpt2 = gpt2_reference(os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt"))
            self.base = dict(self.gpt2.encoder)
            self.inv_base = {v: k for k, v in self.base.items()}
            self.byte_decoder = {v: k for k, v in self.gpt2.byte_encoder.items()}
            self.add_bos = bool(cfg.get("add_bos_token", False))
            self.add_eos = False
            self.add_prefix_space = bool(cfg.get("add_prefix_space", False))
            defaults = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                        "pad_token": None}
        self.clean_up = bool(cfg.get("clean_up_tokenization_spaces", False))
        self.vocab_size = len(self.base)
        # special tokens: class defaults < tokenizer_config.json < special_tokens_map.json, which transformers
        # (>= 4.34) reads only when tokenizer_config.json has no added_tokens_decoder
        spec = dict(defaults)
        for k in spec:
            if k in cfg:
                spec[k] = cfg[k]
        sm = os.path.join(path, "special_tokens_map.json")
        if os.path.exists(sm) and "added_tokens_decoder" not in cfg:
            smap = _load_json(sm)
            for k in spec:
                if k in smap:
                    spec[k] = smap[k]
        spec = {k: _token_parts(v) for k, v in spec.items()}
        # added tokens: added_tokens_decoder first (its flags win), then the special tokens, then Megatron's defaults
        self.added = {}
        self.flags = {}
        for k, v in sorted(cfg.get("added_tokens_decoder", {}).items(), key=lambda kv: int(kv[0])):
            self.added[v["content"]] = int(k)
            self.flags[v["content"]] = (bool(v.get("lstrip", False)), bool(v.get("rstrip", False)))
        self._add([spec[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token") if spec[k]])
        megatron = {"pad_token": "[PAD]", "eos_token": "</s>", "bos_token": "<s>", "unk_token": "<unk>"}
        missing = [k for k in ("pad_token", "eos_token", "bos_token", "unk_token") if spec[k] is None]
        for k in missing:
            spec[k] = (megatron[k], False, False)
        self._add([spec[k] for k in missing])
        self.special = {k: v[0] for k, v in spec.items()}
        self.all_special = set(self.special.values())
        self.bos_id = self.added[self.special["bos_token"]]
        self.eos_id = self.added[self.special["eos_token"]]
        self.pad_id = self.added[self.special["pad_token"]]
        self.eos_token = self.special["eos_token"]
        self.inv_added = {v: k for k, v in self.added.items()}
        self.trie = Trie(self.added)

    def _add(self, toks):
        """PreTrainedTokenizer._add_tokens: a content already in the vocabulary (pieces + added) keeps its id, a new
        one gets len(get_vocab()) + the number added so far in this call."""
        vocab = dict(self.base)
        vocab.update(self.added)
        new_idx = len(vocab)
        count = 0
        for content, lstrip, rstrip in toks:
            if content in self.added:
                continue
            if content in vocab:
                idx = vocab[content]
            else:
                idx = new_idx + count
                vocab[content] = idx
                count += 1
            self.added[content] = idx
            self.flags[content] = (lstrip, rstrip)

    @property
    def num_special(self):
        return int(self.add_bos) + int(self.add_eos)

    # ---- tokenize -------------------------------------------------------------------------------------------------
    def _split(self, text):
        tokens = self.trie.split(text)
        for i, tok in enumerate(tokens):
            if tok in self.added:
                lstrip, rstrip = self.flags[tok]
                left = tokens[i - 1] if i > 0 else None
                right = tokens[i + 1] if i < len(tokens) - 1 else None
                if rstrip and right:
                    tokens[i + 1] = right.lstrip()
                if lstrip and left:
                    tokens[i - 1] = left.rstrip()
        out = []
        for tok in tokens:
            if not tok:
                continue
            if tok in self.added:
                out.append(tok)
            else:
                out.extend(self._tokenize(tok))
        return out

    def _tokenize(self, text):
        if self.kind == "gpt2":
            g = self.gpt2
            out = []
            for piece in g.pattern.findall(text):
                out.extend(g.bpe("".join(g.byte_encoder[b] for b in piece.encode("utf-8"))))
            return out
        if self.legacy or not text.startswith((SPIECE_UNDERLINE, " ")):
            return self.sp.encode(text, out_type=str)
        unk = self.special["unk_token"]
        unk_len = len(self.sp.encode(unk))
        tokens = self.sp.encode(unk + text, out_type=str)
        return tokens[unk_len:] if len(tokens) >= unk_len else tokens

    def tokenize(self, text):
        if self.kind == "gpt2":
            if self.add_prefix_space:
                text = " " + text
            return self._split(text)
        if self.legacy or len(text) == 0:
            return self._split(text)
        text = text.replace(SPIECE_UNDERLINE, " ")
        if self.add_prefix_space:
            text = SPIECE_UNDERLINE + text
        tokens = self._split(text)
        if len(tokens) > 1 and tokens[0] == SPIECE_UNDERLINE and tokens[1] in self.all_special:
            tokens = tokens[1:]
        return tokens

    def token_to_id(self, tok):
        if tok in self.added:
            return self.added[tok]
        if self.kind == "gpt2":
            return self.base.get(tok, self.added[self.special["unk_token"]])
        return self.sp.piece_to_id(tok)

    def encode_plain(self, text):
        """The ids without the special tokens encode adds around them."""
        return [self.token_to_id(t) for t in self.tokenize(text)]

    def wrap(self, ids):
        return ([self.bos_id] if self.add_bos else []) + ids + ([self.eos_id] if self.add_eos else [])

    def encode(self, text):
        return self.wrap(self.encode_plain(text))

    def encode_padded(self, text, max_length):
        """tokenizer(text, padding="max_length", max_length=max_length, truncation=True).input_ids."""
        ids = self.encode_plain(text)
        ids = self.wrap(ids[:max(0, max_length - self.num_special)])
        return ids + [self.pad_id] * (max_length - len(ids))

    # ---- decode ---------------------------------------------------------------------------------------------------
    def _tokens_to_string(self, tokens):
        if self.kind == "gpt2":
            return bytearray(self.byte_decoder[c] for c in "".join(tokens)).decode("utf-8", errors="replace")
        tokens = list(tokens)
        if tokens[0].startswith(SPIECE_UNDERLINE) and self.add_prefix_space:
            tokens[0] = tokens[0][1:]
        cur, out, prev_special = [], "", False
        for i, tok in enumerate(tokens):
            if tok in self.all_special:
                if not prev_special and i != 0 and self.legacy:
                    out += " "
                out += self.sp.decode(cur) + tok
                prev_special = True
                cur = []
            else:
                if prev_special and i == 1 and self.add_prefix_space and not tok.startswith(SPIECE_UNDERLINE):
                    out += " "
                cur.append(tok)
                prev_special = False
        return out + self.sp.decode(cur)

    def decode(self, ids):
        tokens = [self.inv_added[i] if i in self.inv_added else self.inv_base[i] for i in ids]
        legacy_added = set(self.added) - self.all_special
        sub_texts, cur = [], []
        for tok in tokens:
            if tok in legacy_added:
                if cur:
                    s = self._tokens_to_string(cur)
                    if s:
                        sub_texts.append(s)
                    cur = []
                sub_texts.append(tok)
            else:
                cur.append(tok)
        if cur:
            sub_texts.append(self._tokens_to_string(cur))
        text = (" " if self.kind == "gpt2" else "").join(sub_texts)
        if self.clean_up:
            for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                         (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
                text = text.replace(a, b)
        return text


# ------------------------------------------------------------------------------------------------------------------
# The C driver
# ------------------------------------------------------------------------------------------------------------------

def run_tool(tool, args, lines):
    p = subprocess.run([tool] + args, input="".join(l + "\n" for l in lines).encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (tool, " ".join(args), p.returncode, p.stderr.decode()[-2000:]))
    out = p.stdout.decode().split("\n")
    if len(out) < len(lines):
        raise RuntimeError("%s %s: %d output lines for %d inputs" % (tool, " ".join(args), len(out) - 1, len(lines)))
    return out[:len(lines)]


def c_info(tool, d):
    p = subprocess.run([tool, "HFTokenizer", "--tokenizer-model", d, "info"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        return None, p.stderr.decode()
    return dict(l.split()[:2] for l in p.stdout.decode().strip().split("\n") if l.strip()), p.stderr.decode()


def c_encode(tool, d, texts):
    out = run_tool(tool, ["HFTokenizer", "--tokenizer-model", d, "encode"], [t.encode("utf-8").hex() for t in texts])
    return [[int(x) for x in l.split()] for l in out]


def c_decode(tool, d, id_lists):
    out = run_tool(tool, ["HFTokenizer", "--tokenizer-model", d, "decode"], [" ".join(map(str, i)) for i in id_lists])
    return [bytes.fromhex(l.strip()).decode("utf-8", "replace") for l in out]


def short(x, n=40):
    if isinstance(x, list):
        return str(x[:n])[:-1] + (", ...]" if len(x) > n else "]")
    r = repr(x)
    return r if len(r) <= 2 * n + 2 else r[:2 * n] + "...'"


def first_diff(a, b):
    """'at j (of len(a) / len(b)): a[j-3:j+8] vs b[j-3:j+8]' for two sequences that differ."""
    a, b = a or [], b or []
    j = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    lo = max(0, j - 3)
    return "first difference at %d (lengths %d / %d): ...%s vs ...%s" % (j, len(a), len(b), a[lo:j + 8], b[lo:j + 8])


TEXTS = [
    "Hello world.", "Hello <s>.", "Hello</s>.", "the first time", "  leading and trailing spaces  ",
    "multiple   inner    spaces", "tabs\tand\nnewlines\r\nhere\n", " ", "", "x", "\n", "naïve café Ångström",
    "ΣΟΦΟΣ λόγος", "日本語と中文の混合テキスト", "emoji 😀👍🏽 ☃ ★", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "\u00a0nbsp\u3000ideographic",
    "e\u0301 combining", "12345 67890 3.14159", "don't it's U.S.A. e-mail",
    "clean up: a . b , c ! d ? e ' f n't g 'm h 's i 've j 're k", " . ' ' n't",
    # the SentencePiece whitespace symbol in the text
    "\u2581", "\u2581x", "a\u2581b", "\u2581\u2581two \u2581 spaced\u2581", " \u2581lead",
    # special tokens
    "<s>", "</s>", "<unk>", "[PAD]", "</s></s>", "<s>x</s>", "<s> x </s>", "The answer is 42.</s>",
    "Response: yes</s>", " </s>", "</s> ", "a </s> b", "a  </s>  b", "a\t</s>\nb", "x <s> y", "<s>\n", " <s>x",
    "<s><s>", "<<s>>", "<s<s>>", "</s><s>[PAD]<unk>", "[PA", "[PAD", "PAD]", "[[PAD]]", "<unk>x<unk>", "</", "<s",
    "<|endoftext|>", "a<|endoftext|>b", " <|endoftext|> ", "<|endoftext|><|endoftext|>", "<|endoftext",
    # tokens of the extra-added directory: prefixes of one another, overlapping matches
    "<sep>", "a <sep> b", "<sep>>", "x<sep>>>y", "<se<sep>", "<sep>q", "p>q", "<sep>p>q", "  <sep>", "<sep>",
    "ab" * 150, "x" * 300 + "</s>" + "y" * 10,
] + corpus(150, 99)


def fragment_texts(n, seed):
    """Random concatenations of the fragments the special-token handling cares about."""
    frags = ["<s>", "</s>", "<unk>", "[PAD]", "<|endoftext|>", "<sep>", "<sep>>", "p>q", "<", ">", "/", "s", "[", "]",
             " ", "  ", "\t", "\n", SPIECE_UNDERLINE, "a", "the", ".", "Hello", "é", "日本", "😀", "42", "'s"]
    rng = random.Random(seed)
    return ["".join(rng.choice(frags) for _ in range(rng.randint(1, 10))) for _ in range(n)]


TEXTS += fragment_texts(300, 5)


def random_id_lists(ref, rng, count, exclude=()):
    ids = [i for i in range(ref.vocab_size) if i not in exclude] + [i for i in ref.inv_added if i not in exclude]
    lists = []
    for _ in range(count):
        k = rng.randint(1, 20)
        lst = [rng.choice(ids) for _ in range(k)]
        if rng.random() < 0.3:  # bias towards the special tokens and the whitespace piece
            for _ in range(rng.randint(1, 3)):
                lst.insert(rng.randrange(len(lst) + 1), rng.choice(
                    [ref.bos_id, ref.eos_id, ref.pad_id, ref.base.get(SPIECE_UNDERLINE, ref.bos_id)]))
        lists.append([i for i in lst if i not in exclude])
    return [l for l in lists if l]


def test_dir(tool, name, d, texts, rng, may_refuse=None):
    try:
        _test_dir(tool, name, d, texts, rng, may_refuse)
    except RuntimeError as e:  # the driver died: one FAIL, go on with the next directory
        check(False, "%s: %s" % (name, os.path.basename(tool)), str(e)[-1500:])


def _test_dir(tool, name, d, texts, rng, may_refuse):
    ref = HFRef(d)
    info, err = c_info(tool, d)
    if info is None and may_refuse:  # a documented limitation of the C side: refusing is fine if it names the file
        check(any(m in err for m in may_refuse), "%s: refused, naming %s" % (name, " or ".join(may_refuse)),
              "stderr: %s" % err.strip()[-500:])
        return
    want = {"vocab_size": ref.vocab_size, "eod": ref.eos_id, "pad": ref.pad_id, "bos": ref.bos_id}
    got = None if info is None else {k: int(info[k]) if k in info else None for k in want}
    check(got == want, "%s info (vocab_size, eod, pad, bos)" % name, "C %s (stderr %s) vs reference %s" %
          (got, err.strip()[-300:], want))
    if info is None:
        return
    want_ids = [ref.encode(t) for t in texts]
    got_ids = c_encode(tool, d, texts)
    bad = [i for i in range(len(texts)) if got_ids[i] != want_ids[i]]
    for i in bad[:20]:
        print("  %s encode %s:\n    C         %s\n    reference %s  tokens %s\n    %s" % (
            name, short(texts[i]), short(got_ids[i]), short(want_ids[i]), short(ref.tokenize(texts[i]), 12),
            first_diff(got_ids[i], want_ids[i])))
    check(not bad, "%s encode (%d texts)" % (name, len(texts)), "%d differ (first ones above)" % len(bad))
    # decode every reference encoding (the ids of tokens outside bos/eos/unk/pad go through _decode's "legacy added
    # tokens" path, which is not part of the C contract: those id lists are left out)
    extra = {i for c, i in ref.added.items() if c not in ref.all_special and i >= ref.vocab_size}
    lists = [w for w in want_ids if not extra.intersection(w)]
    groups = [("the encoded texts", lists)]
    if ref.kind == "gpt2":  # the brief's contract covers GPT-2 texts without special tokens; the rest is checked apart
        specials = set(ref.inv_added)
        plain = [l[1:] if ref.add_bos else l for l in lists]
        groups = [("the encoded texts without special tokens (bos dropped)",
                   [l for l in plain if not specials.intersection(l)]),
                  ("the encoded texts with special tokens", [l for l in lists if specials.intersection(l)])]
    for what, group in groups:
        dec = c_decode(tool, d, group)
        exp = [ref.decode(l) for l in group]
        bad = [i for i in range(len(group)) if dec[i] != exp[i]]
        for i in bad[:20]:
            print("  %s decode %s:\n    C         %s\n    reference %s" % (name, short(group[i]), short(dec[i]),
                                                                           short(exp[i])))
        check(not bad, "%s decode of %s (%d id lists)" % (name, what, len(group)),
              "%d differ (first ones above)" % len(bad))
    if ref.kind == "gpt2":
        rl = [[rng.randrange(ref.vocab_size - 1) for _ in range(rng.randint(1, 12))] for _ in range(150)]
    else:
        rl = random_id_lists(ref, rng, 200, exclude=extra)
    dec = c_decode(tool, d, rl)
    exp = [ref.decode(l) for l in rl]
    bad = [i for i in range(len(rl)) if dec[i] != exp[i]]
    for i in bad[:20]:
        print("  %s decode %s:\n    C         %s\n    reference %s" % (name, short(rl[i]), short(dec[i]),
                                                                       short(exp[i])))
    check(not bad, "%s decode of random id lists (%d)" % (name, len(rl)), "%d differ (first ones above)" % len(bad))


def self_check(model, dirs):
    """The reference against facts stated in transformers' documentation / by construction."""
    ok = True
    words = ["<s>", "</s>", "<unk>", "[PAD]", "<sep>", "<sep>>", "p>q", "ab", "b", "abc"]
    rng = random.Random(3)
    for _ in range(3000):
        t = "".join(rng.choice(["<", "s", ">", "/", "<s>", "[PAD]", "p", "q", "a", "b", "c", " ", "e", "<sep>"])
                    for _ in range(rng.randint(0, 12)))
        if Trie(words).split(t) != split_leftmost_longest(t, words):
            ok = check(False, "self-check: Trie.split is leftmost-longest", repr(t))
            break
    h = HFRef(dirs["huggyllama"])
    n2 = HFRef(dirs["llama2"])
    sp = spm.SentencePieceProcessor(model_file=model)
    hello = sp.encode("Hello", out_type=str)
    # transformers' LlamaTokenizer docstring: legacy=True "Hello <s>." -> [bos, 'Hello', '▁', bos, '▁.'],
    # legacy=False -> [bos, 'Hello', '▁', bos, '.']
    want_legacy = [1] + sp.encode("Hello") + [sp.piece_to_id(SPIECE_UNDERLINE), 1] + sp.encode(".")
    ok &= check(sp.encode(".", out_type=str)[0] == SPIECE_UNDERLINE + "." or
                sp.encode(".", out_type=str)[0] == SPIECE_UNDERLINE, "self-check: '.' alone gets the dummy prefix",
                str(sp.encode(".", out_type=str)))
    ok &= check(h.encode("Hello <s>.") == want_legacy, "self-check: legacy 'Hello <s>.'",
                "%s vs %s (Hello = %s)" % (h.encode("Hello <s>."), want_legacy, hello))
    want_new = [1] + sp.encode("Hello") + [sp.piece_to_id(SPIECE_UNDERLINE), 1, sp.piece_to_id(".")]
    ok &= check(n2.encode("Hello <s>.") == want_new, "self-check: legacy=False 'Hello <s>.'",
                "%s vs %s" % (n2.encode("Hello <s>."), want_new))
    # plain text: legacy=False reproduces the dummy-prefix encoding
    for t in corpus(50, 5):
        if n2.encode(t) != h.encode(t):
            ok &= check(False, "self-check: legacy=False == legacy on plain text", repr(t))
            break
    ok &= check(h.vocab_size == len(sp) and h.pad_id == len(sp) and h.eos_id == 2 and h.bos_id == 1,
                "self-check: huggyllama ids", "%d %d %d %d" % (h.vocab_size, h.pad_id, h.eos_id, h.bos_id))
    a = HFRef(dirs["llama-added"])
    ok &= check(a.pad_id == len(sp) + 3 and a.added["<sep>"] == len(sp), "self-check: [PAD] after the added tokens",
                str(a.pad_id))
    s = HFRef(dirs["llama-strip"])
    ok &= check(s.tokenize("a </s> b") == s.tokenize("a") + ["</s>"] + s.sp.encode("b", out_type=str),
                "self-check: lstrip/rstrip eos", str(s.tokenize("a </s> b")))
    u = HFRef(dirs["llama-pad-unk"])
    ok &= check(u.pad_id == 0 and "[PAD]" not in u.added, "self-check: pad from special_tokens_map.json",
                str(u.pad_id))
    # convert_tokens_to_string: no space after a leading <s> (the piece keeps its '▁', the model strips it)
    ok &= check(h.decode(h.encode("Hello world.")) == "<s>Hello world.", "self-check: legacy decode",
                repr(h.decode(h.encode("Hello world."))))
    # legacy: the space goes in front of the decoded run that precedes the special token (not after <s>)
    ok &= check(h.decode(h.encode("Hello world.</s>")) == "<s> Hello world.</s>", "self-check: legacy decode </s>",
                repr(h.decode(h.encode("Hello world.</s>"))))
    ok &= check(n2.decode(n2.encode("Hello world.</s>")) == "<s> Hello world.</s>", "self-check: legacy=False decode",
                repr(n2.decode(n2.encode("Hello world.</s>"))))
    return ok


def bad_inputs(tool, root, model):
    cases = []
    cases.append(("missing directory", os.path.join(root, "no-such-dir"), ["no-such-dir"]))
    empty = write_dir(root, "empty-dir", {"tokenizer_config.json": {"tokenizer_class": "LlamaTokenizer"}})
    cases.append(("neither tokenizer.model nor vocab.json", empty, ["tokenizer.model", "vocab.json", "empty-dir"]))
    bert = write_dir(root, "bert-dir", {"tokenizer.model": ("copy", model),
                                        "tokenizer_config.json": {"tokenizer_class": "BertTokenizer"}})
    cases.append(("tokenizer_class BertTokenizer", bert, ["BertTokenizer"]))
    badjson = write_dir(root, "badjson-dir", {"tokenizer.model": ("copy", model),
                                              "tokenizer_config.json": '{"tokenizer_class": "LlamaTokenizer",'})
    cases.append(("tokenizer_config.json not JSON", badjson, ["tokenizer_config.json"]))
    nomerges = write_dir(root, "nomerges-dir", {"vocab.json": {"a": 0, "<|endoftext|>": 1},
                                                "tokenizer_config.json": {"tokenizer_class": "GPT2Tokenizer"}})
    cases.append(("GPT-2 vocab.json without merges.txt", nomerges, ["merges.txt"]))
    remote = write_dir(root, "remote-dir", {"tokenizer.model": ("copy", model), "tokenizer_config.json": {
        "tokenizer_class": "LlamaTokenizer", "auto_map": {"AutoTokenizer": ["tok.MyTokenizer", None]}}})
    cases.append(("auto_map: custom code, refused with or without --trust-remote-code", remote, ["auto_map"]))
    added = write_dir(root, "added-json-dir", {"tokenizer.model": ("copy", model),
                                               "tokenizer_config.json": {"tokenizer_class": "LlamaTokenizer"},
                                               "added_tokens.json": {"<x>": 9999}})
    cases.append(("added_tokens.json", added, ["added_tokens.json"]))
    for what, d, needles in cases:
        p = subprocess.run([tool, "HFTokenizer", "--tokenizer-model", d, "info"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        err = p.stderr.decode()
        check(p.returncode != 0 and any(n in err for n in needles), "bad directory (%s) is refused naming %s" % (
            what, " or ".join(needles)), "rc %d, stderr: %s" % (p.returncode, err.strip()[-500:]))


def main():
    if len(sys.argv) != 2:
        print("usage: test_hf_tokenizer.py TOOL")
        sys.exit(2)
    tool = sys.argv[1]
    if spm is None:
        print("SKIP: python3-sentencepiece (with sentencepiece_model_pb2) is not installed")
        sys.exit(77)
    cache = os.environ.get("ZT_DATA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zerotron")
    vocab = os.path.join(cache, "gpt2", "gpt2-vocab.json")
    merges = os.path.join(cache, "gpt2", "gpt2-merges.txt")
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as root:
        model = train_llama_model(root)
        dirs = make_llama_dirs(root, model)
        if not self_check(model, dirs):
            print("the reference failed its self-check; the comparisons below are not trustworthy")
        for name, d in dirs.items():
            refuse = ("added_tokens_decoder", "tokenizer_config.json") if name == "llama-added" else None
            test_dir(tool, name, d, TEXTS, rng, may_refuse=refuse)
        if os.path.exists(vocab) and os.path.exists(merges):
            for name, d in make_gpt2_dirs(root, vocab, merges).items():
                test_dir(tool, name, d, TEXTS, rng)
        else:
            print("note: %s / %s absent (scripts/fetch_data.sh fetches them): GPT-2 directories skipped" %
                  (vocab, merges))
        bad_inputs(tool, root, model)
    print("%d passed, %d failed" % (PASSED, FAILED))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
