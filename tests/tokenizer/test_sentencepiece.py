#!/usr/bin/env python3
"""SentencePieceTokenizer / GPTSentencePieceTokenizer parity: our C tokenizer (libsentencepiece
through the C shim plus Megatron's wrapper logic in tokenizer.c, driven by test_bert_tool) against
  * Python's sentencepiece module with Megatron-DeepSpeed's _SentencePieceTokenizer /
    _GPTSentencePieceTokenizer rules re-implemented here (special tokens <CLS> <SEP> <EOD> <MASK>,
    the model's pad/bos/eos pieces or <PAD>/<BOS>/<EOS>, <extra_id_N>, added after the model's
    pieces; tokenize splits the text on them; detokenize writes them between decoded runs), and
  * the spm_encode command line (--output_format=id) for the plain model ids.
Three small models are trained here with spm_train (or Python's trainer) on a generated corpus with
Unicode text: unigram with the default ids (eos piece renamed "<MASK>>"), BPE with byte fallback /
identity normalization / a pad piece "<SE" / no bos / user-defined <MASK> and <EOD>, and unigram with
no bos/eos/pad.
  test_sentencepiece.py TOOL      (SKIP, exit 77, when neither spm_train nor python3-sentencepiece exists)
Prints PASS/FAIL lines and "N passed, M failed"."""
import os
import random
import shutil
import subprocess
import sys
import tempfile

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
except ImportError:
    spm = None

WORDS = ("the of and to in is was for on that with as by at from his her they which this be are an it not or "
         "have had one were all their there been has but more when can who also its into other after first new "
         "time two may only about would these over most such many some then three between where year during "
         "naïve café résumé façade coöperate Ångström über straße Ελληνικά λόγος ΣΟΦΟΣ русский язык мир "
         "日本語 中文 한국어 ☃ ★ 😀 42 1999 3.14 e-mail U.S.A. don't it's").split()


SYLLABLES = "ka ri to me su na lo pe vi dan sor tel mu qua zen bri sta gor lin ex".split()


def corpus(n, seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        k = rng.randint(3, 18)
        s = " ".join(rng.choice(WORDS) if rng.random() < 0.6 else
                     "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(k))
        lines.append(s[0].upper() + s[1:] + rng.choice([".", "!", "?", ",", ";"]))
    return lines


TEXTS = [
    "Hello world.", "the first time", "  leading and trailing spaces  ", "multiple   inner    spaces",
    "tabs\tand\nnewlines\r\nhere", "", " ", "naïve café Ångström", "ΣΟΦΟΣ λόγος", "日本語と中文の混合テキスト",
    "emoji 😀👍🏽 ☃", "<EOD>", "text<EOD>more", "<CLS>a<SEP>b<MASK>c", "<EOD><EOD>", "<<EOD>>", "<s>x</s>",
    "<pad> <PAD> <BOS> <EOS> <unk>", "<extra_id_0> <extra_id_4> <extra_id_5> <extra_id_10>", "<EO<EOD>D>",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "ﬁ ligature ½ ①", "\u00a0nbsp\u3000ideographic", "e\u0301 combining",
    "ab" * 300, "x" * 1000 + "<EOD>" + "y" * 10,
    # special tokens that are prefixes of one another (a model's eos piece "<MASK>>", pad piece "<SE"):
    # at one position the first inserted wins, not the longest
    "<SEP>", "<SE", "a<SE<SEP>", "<MASK>>", "x<MASK>>>y", "<MASK>",
] + corpus(200, 99)


class RefSpm:
    """Megatron-DeepSpeed's _SentencePieceTokenizer (gpt=False) / _GPTSentencePieceTokenizer (gpt=True)."""

    def __init__(self, path, extra_ids, gpt):
        self.sp = spm.SentencePieceProcessor(model_file=path)
        self.vocab = {}
        self.inv = {}
        for i in range(len(self.sp)):
            self.vocab[self.sp.id_to_piece(i)] = i
            self.inv[i] = self.sp.id_to_piece(i)
        self.gpt = gpt
        self.special = {}
        if gpt:
            self.eod = self.sp.eos_id()
            return

        def add(t):
            if t not in self.vocab:
                self.vocab[t] = len(self.vocab)
                self.inv[self.vocab[t]] = t
            self.special[t] = self.vocab[t]

        def piece_or(i, fallback):
            try:
                return self.sp.id_to_piece(i)
            except IndexError:
                return fallback

        for t in ("<CLS>", "<SEP>", "<EOD>", "<MASK>"):
            add(t)
        self.eod = self.vocab["<EOD>"]
        add(piece_or(self.sp.pad_id(), "<PAD>"))
        add(piece_or(self.sp.bos_id(), "<BOS>"))
        add(piece_or(self.sp.eos_id(), "<EOS>"))
        for i in range(extra_ids):
            add("<extra_id_%d>" % i)
        self.inv_special = {v: k for k, v in self.special.items()}

    @property
    def vocab_size(self):
        return len(self.vocab)

    def encode(self, text):
        if self.gpt:
            return self.sp.encode_as_ids(text)
        ids, idx = [], 0
        while True:
            best, best_at = None, None
            for tok in self.special:  # earliest occurrence; ties go to the first inserted
                at = text.find(tok, idx)
                if at >= 0 and (best_at is None or at < best_at):
                    best, best_at = tok, at
            if best is None:
                break
            ids += self.sp.encode_as_ids(text[idx:best_at])
            ids.append(self.special[best])
            idx = best_at + len(best)
        return ids + self.sp.encode_as_ids(text[idx:])

    def decode(self, ids):
        if self.gpt:
            return self.sp.decode_ids(ids)
        text, last = "", 0
        for i, t in enumerate(ids):
            if t in self.inv_special:
                text += self.sp.decode_ids(ids[last:i]) + " " + self.inv_special[t] + " "
                last = i + 1
        return text + self.sp.decode_ids(ids[last:])


def run_tool(tool, args, lines):
    p = subprocess.run([tool] + args, input="".join(l + "\n" for l in lines).encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (tool, " ".join(args), p.returncode, p.stderr.decode()[-2000:]))
    return p.stdout.decode().split("\n")[:len(lines)]


def kind_name(gpt):
    return "GPTSentencePieceTokenizer" if gpt else "SentencePieceTokenizer"


def c_args(gpt, model, extra):
    a = [kind_name(gpt), "--tokenizer-model", model]
    return a if gpt else a + ["--vocab-extra-ids", str(extra)]


def c_info(tool, gpt, model, extra):
    p = subprocess.run([tool] + c_args(gpt, model, extra) + ["info"], stdout=subprocess.PIPE, check=True)
    d = dict(l.split() for l in p.stdout.decode().strip().split("\n"))
    return int(d["vocab_size"]), int(d["eod"])


def c_encode(tool, gpt, model, extra, texts_bytes):
    out = run_tool(tool, c_args(gpt, model, extra) + ["encode"], [b.hex() for b in texts_bytes])
    return [[int(x) for x in l.split()] for l in out]


def c_decode(tool, gpt, model, extra, id_lists):
    out = run_tool(tool, c_args(gpt, model, extra) + ["decode"], [" ".join(map(str, ids)) for ids in id_lists])
    return [bytes.fromhex(l).decode("utf-8") for l in out]


def train(d, name, lines, opts):
    inp = os.path.join(d, "corpus.txt")
    with open(inp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    prefix = os.path.join(d, name)
    args = ["--input=" + inp, "--model_prefix=" + prefix] + opts
    if shutil.which("spm_train"):
        subprocess.run(["spm_train"] + args + ["--minloglevel=2"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    else:
        spm.SentencePieceTrainer.train(" ".join(args))
    return prefix + ".model"


def pieces_of(model):
    """The model's piece list and special ids, from spm_export_vocab-free sources: Python, else the .vocab file."""
    if spm:
        sp = spm.SentencePieceProcessor(model_file=model)
        return [sp.id_to_piece(i) for i in range(len(sp))]
    with open(model[:-len(".model")] + ".vocab", encoding="utf-8") as f:
        return [l.split("\t")[0] for l in f.read().split("\n") if l]


def main():
    tool = sys.argv[1]
    if not spm and not shutil.which("spm_train"):
        print("SKIP: neither spm_train (apt-get install sentencepiece) nor python3-sentencepiece is installed")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        lines = corpus(600, 1)
        uni = ["--vocab_size=500", "--model_type=unigram", "--hard_vocab_limit=false", "--eos_piece=<MASK>>"]
        bpe = ["--vocab_size=400", "--model_type=bpe", "--byte_fallback=true", "--normalization_rule_name=identity",
               "--remove_extra_whitespaces=false", "--unk_id=0", "--bos_id=-1", "--eos_id=1", "--pad_id=2",
               "--user_defined_symbols=<MASK>,<EOD>", "--character_coverage=0.99", "--pad_piece=<SE"]
        nospec = ["--vocab_size=300", "--model_type=unigram", "--hard_vocab_limit=false", "--bos_id=-1",
                  "--eos_id=-1", "--pad_id=-1"]
        models = {
            "unigram-default": (train(d, "uni", lines, uni), dict(bos=1, eos=2, pad=-1)),
            "bpe-bytefallback": (train(d, "bpe", lines, bpe), dict(bos=-1, eos=1, pad=2)),
            "unigram-no-specials": (train(d, "nospec", lines, nospec), dict(bos=-1, eos=-1, pad=-1)),
        }
        texts_bytes = [t.encode("utf-8") for t in TEXTS] + [b"bad \xff utf-8 \xe4\xb8 <EOD>\xc3"]
        texts_str = [b.decode("utf-8", "replace") for b in texts_bytes]
        for mname, (model, ids) in models.items():
            # vocab_size and eod from the piece list, by Megatron's rules
            pieces = pieces_of(model)
            n = len(pieces)
            def piece(i, fb):
                return pieces[i] if 0 <= i < n else fb
            added = []
            for t in ["<CLS>", "<SEP>", "<EOD>", "<MASK>", piece(ids["pad"], "<PAD>"), piece(ids["bos"], "<BOS>"),
                      piece(ids["eos"], "<EOS>")] + ["<extra_id_%d>" % i for i in range(5)]:
                if t not in pieces and t not in added:
                    added.append(t)
            eod_sp = pieces.index("<EOD>") if "<EOD>" in pieces else n + added.index("<EOD>")
            got = c_info(tool, False, model, 5)
            check(got == (n + len(added), eod_sp), "%s SentencePieceTokenizer vocab_size/eod (5 extra ids)" % mname,
                  "C %s vs %s from the %d pieces" % (got, (n + len(added), eod_sp), n))
            got = c_info(tool, True, model, 0)
            check(got == (n, ids["eos"]), "%s GPTSentencePieceTokenizer vocab_size/eod" % mname,
                  "C %s vs %s" % (got, (n, ids["eos"])))

            # plain ids against the spm_encode command line (line-based: texts without line breaks)
            if shutil.which("spm_encode"):
                one_line = [t for t in texts_str if "\n" not in t and "\r" not in t]
                p = subprocess.run(["spm_encode", "--model=" + model, "--output_format=id"],
                                   input="".join(t + "\n" for t in one_line).encode(), stdout=subprocess.PIPE,
                                   check=True)
                cli = [[int(x) for x in l.split()] for l in p.stdout.decode().split("\n")[:len(one_line)]]
                got = c_encode(tool, True, model, 0, [t.encode() for t in one_line])
                bad = [i for i in range(len(one_line)) if got[i] != cli[i]]
                check(not bad, "%s GPTSentencePieceTokenizer ids vs spm_encode (%d texts)" % (mname, len(one_line)),
                      bad and "first %r: C %s vs spm_encode %s" % (one_line[bad[0]][:80], got[bad[0]][:30],
                                                                  cli[bad[0]][:30]))
            else:
                print("note: spm_encode not installed (apt-get install sentencepiece): CLI comparison skipped")
            if not spm:
                print("note: python3-sentencepiece not installed: Megatron-rule comparisons skipped")
                continue
            for gpt in (False, True):
                extra = 0 if gpt else 5
                ref = RefSpm(model, extra, gpt)
                kn = "%s %s" % (mname, kind_name(gpt))
                got = c_encode(tool, gpt, model, extra, texts_bytes)
                want = [ref.encode(t) for t in texts_str]
                bad = [i for i in range(len(texts_str)) if got[i] != want[i]]
                check(not bad, "%s encode (%d texts)" % (kn, len(texts_str)),
                      bad and "%d differ; first %r: C %s vs reference %s" % (
                          len(bad), texts_str[bad[0]][:80], got[bad[0]][:30], want[bad[0]][:30]))
                rng = random.Random(5)
                id_lists = [w for w in want if w][:100]
                id_lists += [[rng.randrange(ref.vocab_size) for _ in range(rng.randint(0, 25))] for _ in range(200)]
                dec = c_decode(tool, gpt, model, extra, id_lists)
                bad = [i for i in range(len(id_lists)) if dec[i] != ref.decode(id_lists[i])]
                check(not bad, "%s decode (%d id lists)" % (kn, len(id_lists)),
                      bad and "first %s: C %r vs reference %r" % (id_lists[bad[0]][:20], dec[bad[0]],
                                                                 ref.decode(id_lists[bad[0]])))
            if mname == "bpe-bytefallback":
                # identity normalization + byte fallback + no whitespace squeezing: decode(encode(t)) == t
                plain = [t for t in texts_str if "<" not in t and "\ufffd" not in t and "\r" not in t]
                enc = c_encode(tool, True, model, 0, [t.encode() for t in plain])
                dec = c_decode(tool, True, model, 0, enc)
                bad = [i for i in range(len(plain)) if dec[i] != plain[i]]
                check(not bad, "%s GPTSentencePieceTokenizer decode(encode(t)) == t (%d texts)" % (mname, len(plain)),
                      bad and "first %r -> %r" % (plain[bad[0]][:80], dec[bad[0]][:80]))
        # a missing / corrupt model file dies naming it
        bad_model = os.path.join(d, "corrupt.model")
        with open(bad_model, "wb") as f:
            f.write(b"not a model")
        for path, needle in ((os.path.join(d, "missing.model"), "missing.model"), (bad_model, "corrupt.model")):
            p = subprocess.run([tool, "SentencePieceTokenizer", "--tokenizer-model", path, "info"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            err = p.stderr.decode()
            check(p.returncode == 1 and needle in err and "--tokenizer-model" in err,
                  "bad model file %s dies naming it" % os.path.basename(path), "rc %d: %s" % (p.returncode, err))
        p = subprocess.run([tool, "GPTSentencePieceTokenizer", "info"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(p.returncode == 1 and "--tokenizer-model" in p.stderr.decode(),
              "no --tokenizer-model dies naming the flag", p.stderr.decode())
    print("%d passed, %d failed" % (PASSED, FAILED))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
