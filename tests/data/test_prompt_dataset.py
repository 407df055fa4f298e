#!/usr/bin/env python3
"""SFT (Alpaca-style) prompt data parity: the C SupervisedDataset driven by test_prompt_tool against an independent
Python transcription of Megatron-DeepSpeed's finetune_llama.py data path: megatron/data/prompt_dataset.py
(PROMPT_DICT, sources/targets with tokenizer.eos_token, _tokenize_fn's tokenizer(text, padding="max_length",
max_length=seq_length + 1, truncation=True), source_len = input_ids.ne(pad_token_id).sum(), labels[:source_len] = pad)
and get_batch_pipe (tokens = input_ids[:-1], labels = labels[1:], loss_mask = labels.ne(tokenizer.pad)). The
tokenizer is test_hf_tokenizer.py's reference for Megatron's HFTokenizer (transformers' slow LlamaTokenizer; no
transformers needed), on its trained sentencepiece model and its "huggyllama" (legacy) and "llama2" (legacy=false)
directories. A generated JSON of ~40 examples (with / without / empty "input", Unicode, "</s>" and "[PAD]" inside the
texts, braces, prompts longer than L, examples that fit exactly / overflow by one token) is run for L in 16, 64, 256;
tokens and loss mask must match exactly, labels where the mask is 1. Bad inputs must fail naming the JSON file (and
the example index).
  test_prompt_dataset.py TOOL      (TOOL = test_prompt_tool DIR JSON L; SKIP, exit 77, without python3-sentencepiece)
Prints PASS/FAIL lines and "N passed, M failed"; exit 1 on any failure."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer"))
import test_hf_tokenizer as hf  # noqa: E402

check = hf.check  # its PASS/FAIL counters, summed up at the end


PROMPT_DICT = {
    "prompt_input": (
        "Below is an instruction that describes a task, paired with an input that provides further context. "
        "Write a response that appropriately completes the request.\n\n"
        "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:"
    ),
    "prompt_no_input": (
        "Below is an instruction that describes a task. "
        "Write a response that appropriately completes the request.\n\n"
        "### Instruction:\n{instruction}\n\n### Response:"
    ),
}


def reference_rows(ref, examples, L):
    """[(tokens, labels, loss_mask)] per example: SupervisedDataset + get_batch_pipe with seq_length L."""
    sources = [PROMPT_DICT["prompt_input"].format_map(ex) if ex.get("input", "") != "" else
               PROMPT_DICT["prompt_no_input"].format_map(ex) for ex in examples]
    targets = ["%s%s" % (ex["output"], ref.eos_token) for ex in examples]
    rows = []
    for s, t in zip(sources, targets):
        input_ids = ref.encode_padded(s + t, L + 1)
        source_len = sum(1 for i in ref.encode_padded(s, L + 1) if i != ref.pad_id)
        labels = list(input_ids)
        labels[:source_len] = [ref.pad_id] * min(source_len, len(labels))
        tokens = input_ids[:-1]
        labels = labels[1:]
        rows.append((tokens, labels, [int(x != ref.pad_id) for x in labels]))
    return rows


def sentence(rng, lo, hi):
    k = rng.randint(lo, hi)
    words = [rng.choice(hf.WORDS) if rng.random() < 0.7 else
             "".join(rng.choice(hf.SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(k)]
    s = " ".join(words)
    return s[0].upper() + s[1:] + rng.choice([".", "?", "!", ":"])


def base_examples(rng):
    """~35 examples shared by every (directory, L) run."""
    ex = []
    for i in range(24):
        e = {"instruction": sentence(rng, 2, 14), "output": sentence(rng, 1, 30)}
        r = rng.random()
        if r < 0.4:
            e["input"] = sentence(rng, 1, 12)
        elif r < 0.6:
            e["input"] = ""
        if rng.random() < 0.2:
            e["output"] += "\n" + sentence(rng, 1, 10)
        ex.append(e)
    ex += [
        {"instruction": "Translate to Greek.", "input": "The world", "output": "ο κόσμος — λόγος ΣΟΦΟΣ"},
        {"instruction": "日本語で答えて", "input": "", "output": "はい、わかりました。😀👍🏽"},
        {"instruction": "Repeat the marker.", "output": "first part</s> second part"},
        {"instruction": "Say </s> and <s> and <unk>", "input": "<s>", "output": "<unk></s>"},
        {"instruction": "A [PAD] inside the prompt", "input": "x [PAD] y", "output": "and [PAD] in the output"},
        {"instruction": "Braces {input} and {} stay literal {instruction}", "output": "{output}"},
        {"instruction": "Empty output.", "output": ""},
        {"instruction": "Spaces", "input": "  leading and trailing  ", "output": "  spaced   out  "},
        {"instruction": "Whitespace symbol \u2581 in text", "output": "\u2581x \u2581\u2581y"},
        {"instruction": "Tabs\tand\r\nnewlines", "output": "line1\nline2\n"},
        {"instruction": "Extra keys are ignored.", "input": "in", "output": "out", "id": 7, "meta": {"a": [1]}},
    ]
    return ex


def designed_examples(ref, L):
    """Examples sized for this tokenizer and L: full text exactly L+1 ids / L+2 ids (overflow by one), the prompt
    alone L ids (one label left) / L+1 ids (no label left) / far longer than L."""
    out = []

    def full_len(e):
        s = (PROMPT_DICT["prompt_input"].format_map(e) if e.get("input", "") != "" else
             PROMPT_DICT["prompt_no_input"].format_map(e))
        return len(ref.encode(s + e["output"] + ref.eos_token)), len(ref.encode(s))

    def sized(make, which, want, what):
        """The first make(k) whose length (full_len's which) is want, appended; a note when none is."""
        shortest = None
        for k in range(0, 3 * L):
            e = make(k)
            n = full_len(e)[which]
            shortest = n if shortest is None else shortest
            if n == want:
                out.append(e)
                return
            if n > want:
                break
        if shortest <= want:  # (at L=16 the prompt alone is longer than L)
            print("note: no %s gives exactly %d ids at L=%d" % (what, want, L))

    for want in (L + 1, L + 2):
        sized(lambda k: {"instruction": "Say a.", "output": " ".join(["a"] * k)}, 0, want, "'a a a' output")
    for want in (L, L + 1):
        sized(lambda k: {"instruction": " ".join(["b"] * k), "output": "done"}, 1, want, "'b b b' instruction")
    out.append({"instruction": " ".join(hf.WORDS) * (1 + L // 64), "input": "long", "output": "never seen"})
    return out


def run_c(tool, d, js, L):
    p = subprocess.run([tool, d, js, str(L)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def parse_rows(text):
    rows = {}
    for line in text.split("\n"):
        m = re.match(r"(tokens|labels|mask) (\d+): ?(.*)$", line)
        if m:
            rows[(m.group(1), int(m.group(2)))] = [int(x) for x in m.group(3).split()]
    return rows


def short(x, n=24):
    return str(x[:n])[:-1] + (", ...]" if len(x) > n else "]")


def compare(tool, name, d, ref, examples, js, L):
    with open(js, "w", encoding="utf-8") as f:
        json.dump(examples, f, ensure_ascii=False, indent=1)
    want = reference_rows(ref, examples, L)
    rc, out, err = run_c(tool, d, js, L)
    if not check(rc == 0, "%s L=%d: %s runs" % (name, L, os.path.basename(tool)), "rc %d: %s" % (rc, err[-800:])):
        return
    got = parse_rows(out)
    bad = []
    for i, (tokens, labels, mask) in enumerate(want):
        gt, gl, gm = got.get(("tokens", i)), got.get(("labels", i)), got.get(("mask", i))
        why = []
        if gt != tokens:
            why.append("tokens: C %s\n      reference %s\n      %s" % (gt and short(gt), short(tokens),
                                                                       hf.first_diff(gt, tokens)))
        if gm != mask:
            why.append("mask: C %s\n      reference %s\n      %s" % (gm and short(gm, 70), short(mask, 70),
                                                                     hf.first_diff(gm, mask)))
        elif gl is None or len(gl) != L or any(m and a != b for m, a, b in zip(mask, gl, labels)):
            pos = [j for j in range(L) if mask[j] and (gl is None or j >= len(gl) or gl[j] != labels[j])]
            why.append("labels where mask=1 differ at %s: C %s\n      reference %s" % (
                pos[:10], gl and short(gl), short(labels)))
        if why:
            bad.append(i)
            if len(bad) <= 6:
                ex = json.dumps(examples[i], ensure_ascii=False)
                print("  %s L=%d example %d %s\n    %s" % (name, L, i, ex[:160], "\n    ".join(why)))
    extra = sorted(k for k in got if k[1] >= len(want))
    check(not bad and not extra, "%s L=%d: %d examples (tokens, mask, labels under the mask)" % (
        name, L, len(want)), "%d examples differ (first ones above)%s" % (
        len(bad), "; extra rows %s" % extra[:5] if extra else ""))


def bad_inputs(tool, root, d, model):
    good = {"instruction": "Fine.", "output": "ok"}

    def write(name, content):
        p = os.path.join(root, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return p

    cases = [
        ("not an array", write("bad-not-array.json", {"instruction": "x", "output": "y"}), None),
        ("missing output", write("bad-no-output.json", [good] * 3 + [{"instruction": "x"}, good]), 3),
        ("missing instruction", write("bad-no-instruction.json", [good] * 3 + [{"output": "x"}, good]), 3),
        ("non-string output", write("bad-int-output.json", [good] * 3 + [{"instruction": "x", "output": 5}, good]),
         3),
        ("not JSON", write("bad-syntax.json", '[{"instruction": "x", "output": "y"},'), None),
        ("missing file", os.path.join(root, "bad-missing.json"), None),
    ]
    for what, js, index in cases:
        rc, out, err = run_c(tool, d, js, 16)
        fn = os.path.basename(js)
        ok = rc != 0 and fn in err
        if index is not None:
            ok = ok and re.search(r"(?<![0-9])%d(?![0-9])" % index, err) is not None
        check(ok, "bad JSON (%s) fails naming %s%s" % (what, fn, "" if index is None else " and example %d" % index),
              "rc %d, stderr: %s" % (rc, err.strip()[-500:]))
    rc, out, err = run_c(tool, model, write("good.json", [good]), 16)
    check(rc != 0, "a bare sentencepiece .model as the tokenizer directory fails", "rc %d, stdout %s, stderr %s" % (
        rc, out[:200], err.strip()[-300:]))


def self_check(ref, L):
    """Facts about the reference rows that follow from the definitions."""
    ex = [{"instruction": "Say a.", "output": "a a"}, {"instruction": " ".join(hf.WORDS) * 5, "output": "x"}]
    (t0, l0, m0), (t1, l1, m1) = reference_rows(ref, ex, L)
    full = ref.encode(PROMPT_DICT["prompt_no_input"].format_map(ex[0]) + "a a" + ref.eos_token)
    ok = check(len(t0) == L and t0[:len(full) - 1] == full[:-1] and sum(m0) >= 2 and l0[len(full) - 2] == ref.eos_id,
               "self-check L=%d: short example ends with eos under the mask" % L, "%s %s" % (t0, m0))
    ok &= check(sum(m1) == 0 and ref.pad_id not in t1, "self-check L=%d: long prompt leaves no label" % L, str(m1))
    return ok


def main():
    if len(sys.argv) != 2:
        print("usage: test_prompt_dataset.py TOOL")
        sys.exit(2)
    tool = sys.argv[1]
    if hf.spm is None:
        print("SKIP: python3-sentencepiece (with sentencepiece_model_pb2) is not installed")
        sys.exit(77)
    rng = random.Random(2024)
    base = base_examples(rng)
    with tempfile.TemporaryDirectory() as root:
        model = hf.train_llama_model(root)
        dirs = hf.make_llama_dirs(root, model)
        for name in ("huggyllama", "llama2"):
            ref = hf.HFRef(dirs[name])
            for L in (16, 64, 256):
                if L >= 64:
                    self_check(ref, L)
                examples = base + designed_examples(ref, L)
                compare(tool, name, dirs[name], ref, examples, os.path.join(root, "alpaca-%s-%d.json" % (name, L)), L)
        bad_inputs(tool, root, dirs["huggyllama"], model)
    print("%d passed, %d failed" % (hf.PASSED, hf.FAILED))
    sys.exit(1 if hf.FAILED else 0)


if __name__ == "__main__":
    main()
