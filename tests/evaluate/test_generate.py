#!/usr/bin/env python3
"""test_generate: generate_samples (docs/generate.md) on a tiny GPT trained in the test.

- the key/value cache: every step's logits equal --recompute's (the whole prefix again) to fp32 rounding and equal
  the logits tests/checkpoint's ckpt_logits computes in one full forward over the final sequence, for several
  context lengths; the greedy outputs are identical;
- the output formats byte for byte against a transcription of Megatron's text_generation_utils (the input-file
  blocks, the interactive transcript, the unconditional JSON lines with its tokens[1:length-1] slice), the tokens
  being the greedy choices over the dumped logits with Megatron's stop rules (EOD, maxlen);
- top_k_logits (temperature, top-k with ties, top-p's shifted mask) equal to Megatron's PyTorch code on random
  logits (gen_tool), and the multinomial draw's frequencies against the softmax;
- the bad inputs, and with --mpi: TP=2, PP=2 and TP=2 x PP=2 under mpirun give one process's greedy text.

Usage: test_generate.py [--mpi] GENERATE_SAMPLES GEN_TOOL PRETRAIN_GPT PREPROCESS_DATA CKPT_LOGITS"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy not found (apt-get install python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evalkit import parse_argv, BU, CHARS, EOD, MPIRUN, VOCAB, check, summary, tiny_gpt  # noqa: E402

MPI, (GEN, TOOL, PRETRAIN, PREPROCESS, LOGITS) = parse_argv()


def run(cmd, ok=True, stdin=None):
    e = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if ok and p.returncode != 0:
        print(out[-3000:] + err[-3000:])
        raise SystemExit("FAIL: %s exited %d" % (" ".join(cmd[:3]), p.returncode))
    return p.returncode, out, err


# ---- the character-level GPT-2 vocabulary (evalkit.py): encoding and decoding ------------------------------------
NV = len(VOCAB)


def tokenize(text):
    return [VOCAB[BU[b]] for b in text.encode("utf-8")]


def detokenize(ids):
    return "".join("<|endoftext|>" if i == EOD else chr(CHARS[i]) for i in ids)


# ---- fixtures ------------------------------------------------------------------------------------------------------
tmp = tempfile.mkdtemp(prefix="zt_gen_")
rng = random.Random(11)
NOUNS = ["cat", "dog", "bird", "fish", "cow", "fox"]
VERBS = ["sees", "likes", "hears", "finds"]


def sentence():
    return "the %s %s the %s." % (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS))


SEQ = 64
vocab_json, merges, TOK, MODEL, ck, _ = tiny_gpt(
    tmp, [" ".join(sentence() for _ in range(rng.randint(1, 3))) for d in range(300)], PREPROCESS, PRETRAIN, run,
    seq=SEQ, layers=4, iters=120, log_interval=40, dropout=False)
n_file = [0]


def new(name):
    n_file[0] += 1
    return os.path.join(tmp, "%s%d" % (name, n_file[0]))


def gen(extra, mpi=None, ok=True, stdin=None, ckpt=None):
    cmd = [GEN, "--load", ckpt or ck] + MODEL + list(extra)
    if mpi:
        cmd = MPIRUN + ["-np", str(mpi)] + cmd
    return run(cmd, ok=ok, stdin=stdin)


def read(path):
    return open(path, "rb").read()


def steps(path, rows=1):
    return np.fromfile(path, np.float32).reshape(-1, rows, NV)


def oracle_run(ctx, lg, out_len):
    """sample_sequence_batch with --greedy for one context over the dumped logits: the tokens of the stream."""
    toks = list(ctx)
    maxlen = min(SEQ - 1, len(ctx) + out_len)
    cl, k = len(ctx), 0
    while cl <= maxlen:
        prev = int(np.argmax(lg[k][0]))
        toks.append(prev)
        k += 1
        cl += 1
        if prev == EOD:
            break
    return toks, k


CONTEXTS = ["t\n", "the cat\n", "the dog sees the fox. the\n", "the bird hears the cow. a fish\n",
            "the cow finds the dog"]

if not MPI:
    # 1. top_k_logits against Megatron's PyTorch code (temperature first, top-k ties kept, top-p's shifted mask)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        torch = None
    if torch is None:
        print("SKIP part: PyTorch not found; top_k_logits not compared")
    else:
        # megatron/text_generation_utils.py's, with stable=True: torch's default sort orders equal logits arbitrarily
        # (not by index on rows of ~16 or more), so which of two tied tokens crosses the top-p boundary is unspecified
        # there; generate_samples takes the lower index first, one of the orders torch may give
        def top_k_logits(logits, top_k=0, top_p=0.0, filter_value=-float('Inf')):
            if top_k > 0:
                indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
                logits[indices_to_remove] = filter_value
            if top_p > 0.0:
                sorted_logits, sorted_indices = torch.sort(logits, descending=True, dim=-1, stable=True)
                cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
                sorted_indices_to_remove = cumulative_probs > top_p
                sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
                sorted_indices_to_remove[..., 0] = 0
                for i in range(sorted_indices.size(0)):
                    indices_to_remove = sorted_indices[i][sorted_indices_to_remove[i]]
                    logits[i][indices_to_remove] = filter_value
            return logits
        nrng = np.random.RandomState(3)
        bad = []
        for trial in range(120):
            V = int(nrng.randint(2, 60))
            x = (nrng.randn(4, V) * nrng.uniform(0.5, 4)).astype(np.float32)
            if trial % 3 == 0:
                x = np.round(x, 0).astype(np.float32)  # ties at the k-th value
            k = int(nrng.randint(0, V + 1)) if trial % 4 else 0
            p = float(nrng.choice([0.0, 0.3, 0.7, 0.9, 0.95, 0.999])) if trial % 5 else 0.0
            temp = float(nrng.choice([1.0, 0.7, 1.9]))
            x.tofile(os.path.join(tmp, "f.in"))
            run([TOOL, "filter", str(V), str(k), repr(p), repr(temp), os.path.join(tmp, "f.in"), os.path.join(tmp, "f.out")])
            got = np.fromfile(os.path.join(tmp, "f.out"), np.float32).reshape(4, V)
            t = torch.from_numpy(x.copy()).float()
            t /= temp
            want = top_k_logits(t, top_k=k, top_p=p).numpy()
            if not np.array_equal(np.isinf(got), np.isinf(want)) or \
                    not np.allclose(got[~np.isinf(got)], want[~np.isinf(want)], rtol=1e-6, atol=0):
                bad.append((V, k, p, temp))
        x = np.random.RandomState(4).randn(3, 50).astype(np.float32) * 3
        x.tofile(os.path.join(tmp, "f.in"))
        run([TOOL, "filter", "50", "0", "1.0", "1.0", os.path.join(tmp, "f.in"), os.path.join(tmp, "f.out")])
        check(np.array_equal(np.fromfile(os.path.join(tmp, "f.out"), np.float32).reshape(3, 50), x),
              "top_p 1.0 keeps every token (torch drops tail tokens only when its fp32 sum rounds above 1)")
        check(not bad, "top_k_logits: 120 random rows sets (ties, k, p, temperature) equal to Megatron's torch code",
              repr(bad[:5]))

    # 2. the multinomial draw: frequencies of 20000 draws (streams 0..19999) against softmax(logits / T) over top-k
    lg = np.array([2.0, 1.0, 0.5, 0.0, -1.0, -3.0], np.float32)
    lg.tofile(os.path.join(tmp, "s.in"))
    _, out, _ = run([TOOL, "sample", "6", "20000", "1234", "0.8", "4", "0", os.path.join(tmp, "s.in")])
    draws = np.array([int(x) for x in out.split()])
    freq = np.bincount(draws, minlength=6) / len(draws)
    pz = np.exp(lg[:4] / 0.8 - (lg[:4] / 0.8).max())
    pz = np.concatenate([pz / pz.sum(), [0, 0]])
    check(np.abs(freq - pz).max() < 0.015 and freq[4] == 0 and freq[5] == 0,
          "sampling: 20000 draws follow softmax(logits/0.8) over the top 4, none outside", "%s vs %s" % (freq, pz))

    # 3. the key/value cache against --recompute and against ckpt_logits's full forward, several context lengths
    inp = new("in")
    open(inp, "w").write("".join(CONTEXTS))
    o_kv, o_re, d_kv, d_re = new("kv.out"), new("re.out"), new("kv.f32"), new("re.f32")
    OUT = "40"
    _, so_kv, _ = gen(["--sample-input-file", inp, "--sample-output-file", o_kv, "--greedy", "--out-seq-length", OUT,
                       "--dump-logits", d_kv])
    gen(["--sample-input-file", inp, "--sample-output-file", o_re, "--greedy", "--out-seq-length", OUT, "--recompute",
         "--dump-logits", d_re])
    lk, lr = steps(d_kv), steps(d_re)
    check(lk.shape == lr.shape and lk.shape[0] > 50, "kv cache: as many steps as --recompute", "%s %s" % (lk.shape, lr.shape))
    scale = np.maximum(1.0, np.abs(lr))
    err = float(np.max(np.abs(lk - lr) / scale)) if lk.shape == lr.shape else 1.0
    check(err < 2e-6, "kv cache: every step's logits equal --recompute's to fp32 rounding", "max rel err %g" % err)
    check(read(o_kv) == read(o_re), "kv cache: the greedy output file equals --recompute's")
    o_ds = new("ds.out")
    _, so_ds, _ = gen(["--sample-input-file", inp, "--sample-output-file", o_ds, "--greedy", "--out-seq-length", OUT,
                       "--ds-inference"])
    check(read(o_ds) == read(o_kv) and "> --ds-inference: DeepSpeed-Inference's injected fp16 kernels are DeepSpeed's" in
          so_ds, "--ds-inference (generate_text.sh's): the same greedy output, and the log says which forward ran",
          so_ds[-600:])
    # a checkpoint with MoE layers (docs/moe.md: 4 experts in layers 2 and 4, top-1, an eval capacity factor that
    # keeps every token): each cached step routes its new tokens as the whole prefix's pass routes them
    ck_moe = os.path.join(tmp, "ck_moe")
    moe = ["--num-experts", "4", "--moe-eval-capacity-factor", "8", "--moe-loss-coeff", "0.01"]
    run([PRETRAIN] + MODEL + moe + ["--micro-batch-size", "4", "--global-batch-size", "8", "--data-path",
                                    os.path.join(tmp, "corpus_text_document"), "--split", "100,0,0", "--lr", "3e-3",
                                    "--train-iters", "40", "--eval-iters", "0", "--save", ck_moe])
    m_kv, m_re = new("moe_kv.f32"), new("moe_re.f32")
    gen(moe + ["--sample-input-file", inp, "--sample-output-file", new("moe.out"), "--greedy", "--out-seq-length", OUT,
               "--dump-logits", m_kv], ckpt=ck_moe)
    gen(moe + ["--sample-input-file", inp, "--sample-output-file", new("moe.out"), "--greedy", "--out-seq-length", OUT,
               "--recompute", "--dump-logits", m_re], ckpt=ck_moe)
    mk, mr = steps(m_kv), steps(m_re)
    err = float(np.max(np.abs(mk - mr) / np.maximum(1.0, np.abs(mr)))) if mk.shape == mr.shape else 1.0
    check(mk.shape == mr.shape and mk.shape[0] > 50 and err < 2e-6, "MoE checkpoint: kv cache = --recompute at every "
          "step to fp32 rounding", "%s %s max rel err %g" % (mk.shape, mr.shape, err))
    # a Llama-style checkpoint (docs/gpt.md: RMSNorm, SwiGLU, no linear biases, rotary embeddings on half of each head,
    # untied output layer, 2 key/value heads for the 4 query heads): each cached step turns its query and key by its own
    # position, the cache holding each group's key and value repeated per head
    ck_ll = os.path.join(tmp, "ck_llama")
    llama = ["--normalization", "rmsnorm", "--swiglu", "--disable-bias-linear", "--use-rotary-position-embeddings",
             "--rotary-percent", "0.5", "--untie-embeddings-and-output-weights", "--num-key-value-heads", "2"]
    run([PRETRAIN] + MODEL + llama + ["--micro-batch-size", "4", "--global-batch-size", "8", "--data-path",
                                      os.path.join(tmp, "corpus_text_document"), "--split", "100,0,0", "--lr", "3e-3",
                                      "--train-iters", "40", "--eval-iters", "0", "--save", ck_ll])
    l_kv, l_re = new("llama_kv.f32"), new("llama_re.f32")
    gen(llama + ["--sample-input-file", inp, "--sample-output-file", new("llama.out"), "--greedy", "--out-seq-length",
                 OUT, "--dump-logits", l_kv], ckpt=ck_ll)
    gen(llama + ["--sample-input-file", inp, "--sample-output-file", new("llama.out"), "--greedy", "--out-seq-length",
                 OUT, "--recompute", "--dump-logits", l_re], ckpt=ck_ll)
    yk, yr = steps(l_kv), steps(l_re)
    err = float(np.max(np.abs(yk - yr) / np.maximum(1.0, np.abs(yr)))) if yk.shape == yr.shape else 1.0
    check(yk.shape == yr.shape and yk.shape[0] > 50 and err < 2e-6, "Llama-style checkpoint (rotary): kv cache = "
          "--recompute at every step to fp32 rounding", "%s %s max rel err %g" % (yk.shape, yr.shape, err))
    _, _, e = gen(["--sample-input-file", inp, "--sample-output-file", new("llama.out"), "--greedy"], ckpt=ck_ll,
                  ok=False)
    check("is not in the checkpoint" in e or "shape" in e, "Llama-style checkpoint without its flags: refused",
          e[-300:])
    # the streams, replayed over the dumped logits with Megatron's rules; then one full forward over each sequence
    at, seqs, want = 0, [], b""
    for c in CONTEXTS:
        ctx = tokenize(c)
        toks, k = oracle_run(ctx, lk[at:], int(OUT))
        seqs.append((ctx, toks, at, k))
        at += k
        want += ("\nContext:" + c + "\n\nMegatron-LM:" + detokenize(toks)[len(c):] + "\n").encode()
    check(at == lk.shape[0], "kv cache: the steps are the greedy streams (EOD or maxlen)", "%d vs %d" % (at, lk.shape[0]))
    check(read(o_kv) == want, "input file: the output file byte for byte as Megatron writes it",
          repr(read(o_kv)[:300]) + " vs " + repr(want[:300]))
    rows = np.full((len(seqs), SEQ), EOD, np.int32)
    for i, (ctx, toks, a, k) in enumerate(seqs):
        rows[i, :len(toks)] = toks
    np.save(os.path.join(tmp, "tok.npy"), rows)
    run([LOGITS, ck, os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")])
    full = np.load(os.path.join(tmp, "logits.npy"))[..., :NV]
    worst, lens = 0.0, []
    for i, (ctx, toks, a, k) in enumerate(seqs):
        ref = full[i, len(ctx) - 1:len(ctx) - 1 + k]
        worst = max(worst, float(np.max(np.abs(lk[a:a + k, 0] - ref) / np.maximum(1.0, np.abs(ref)))))
        lens.append(len(ctx))
    check(worst < 2e-6, "kv cache: the logits of every step equal one full forward (ckpt_logits) for contexts of %s "
          "tokens" % lens, "max rel err %g" % worst)
    expect_stdout = "".join("\nContext: %s\n\nMegatron-LM: %s\n" % (c, detokenize(t)[len(c):])
                            for c, (ctx, t, a, k) in zip(CONTEXTS, seqs))
    check(expect_stdout in so_kv, "input file: the printed Context / Megatron-LM blocks", so_kv[-600:])
    print("info: %d of %d streams end at EOD" % (sum(t[-1] == EOD for c, t, a, k in seqs), len(seqs)))

    # 4. unconditional samples: greedy (replayed) and sampled (JSON as json.dumps writes it)
    gf, dg = new("gen.jsonl"), new("gen.f32")
    gen(["--num-samples", "3", "--micro-batch-size", "2", "--genfile", gf, "--greedy", "--out-seq-length", "30",
         "--dump-logits", dg])
    lg = steps(dg, 2)
    want_lines, at = [], 0
    for batch in range(2):  # two micro batches of 2 rows; the 4th sample is not written
        toks = [[EOD], [EOD]]
        lengths = [min(SEQ - 1, 1 + 30)] * 2
        done = [False, False]
        cl = 1
        while cl <= min(SEQ - 1, 1 + 30):
            for b in range(2):
                prev = int(np.argmax(lg[at][b]))
                toks[b].append(prev)
                if prev == EOD and not done[b]:
                    lengths[b] = cl
                    done[b] = True
            at += 1
            cl += 1
            if all(done):
                break
        for b in range(2):
            L = lengths[b]
            want_lines.append(json.dumps({"text": detokenize(toks[b][1:L - 1]), "length": L - 1, "finished": L < SEQ - 1}))
    want_lines = want_lines[:3]
    got = read(gf).decode()
    check(at == lg.shape[0] and got == "".join(l + "\n" for l in want_lines),
          "unconditional: --genfile's JSON lines as Megatron writes them (tokens[1:length-1], length-1, finished)",
          repr(got[:300]) + " vs " + repr(want_lines[:2]))
    g1, g2, g3 = new("s.jsonl"), new("s.jsonl"), new("s.jsonl")
    samp = ["--num-samples", "4", "--micro-batch-size", "2", "--temperature", "3", "--out-seq-length", "40"]
    gen(samp + ["--genfile", g1])
    gen(samp + ["--genfile", g2])
    gen(samp + ["--genfile", g3, "--seed", "99"])
    lines = read(g1).decode().splitlines()
    okj = len(lines) == 4 and all(json.dumps(json.loads(l)) == l for l in lines)
    check(okj, "unconditional sampling: 4 lines, each exactly json.dumps of its datum", repr(lines[:2]))
    check(any(('\\"' in l or "\\\\" in l or "\\n" in l) for l in lines), "unconditional sampling at temperature 3: "
          "escapes in the JSON (quotes, backslashes or newlines)", repr(lines))
    check(read(g1) == read(g2) and read(g1) != read(g3), "sampling: the same --seed gives the same samples, another "
          "seed others")
    d1, d2 = new("k.f32"), new("k.f32")
    o3 = new("k.out")
    gen(["--sample-input-file", inp, "--sample-output-file", o3, "--top_k", "3", "--temperature", "0.9",
         "--dump-logits", d1, "--out-seq-length", "20"])
    # every sampled token is among the step's 3 largest logits (the tokens read back from the output file)
    ok_k = True
    lk3 = steps(d1)
    blocks = read(o3).decode().split("\nContext:")[1:]
    at = 0
    for c, blk in zip(CONTEXTS, blocks):
        text = blk.split("\n\nMegatron-LM:", 1)[1][:-1]
        eod = text.endswith("<|endoftext|>")
        gen_toks = tokenize(text[:-len("<|endoftext|>")] if eod else text) + ([EOD] if eod else [])
        for j, t in enumerate(gen_toks):
            row = lk3[at + j][0]
            ok_k &= bool(row[t] >= np.sort(row)[-3])
        at += len(gen_toks)
    check(ok_k and at == lk3.shape[0], "--top_k 3: every sampled token is among its step's 3 largest logits")

    # 5. interactive: the transcript of generate_samples_interactive (a prompt, its stream every 24 steps, the answer,
    #    "Press Enter", the next prompt, "stop")
    ctx = tokenize("the fox")
    di = new("i.f32")
    _, out2, _ = gen(["--greedy", "--out-seq-length", "30", "--dump-logits", di], stdin=b"\nthe fox\n\nstop\n")
    toks, k = oracle_run(ctx, steps(di), 30)
    tr = "\nContext prompt (stop to exit) >>> Prompt should not be empty!\n\nContext prompt (stop to exit) >>> "
    for counter in range(0, k, 24):
        tr += "\nContext: the fox\n\nMegatron-LM: %s\n" % detokenize(toks[:len(ctx) + counter + 1])[len("the fox"):]
    tr += "\nContext: the fox\n\nMegatron-LM: %s\n" % detokenize(toks)[len("the fox"):]
    tr += "\nPress Enter to continue >>>\nContext prompt (stop to exit) >>> "
    check(tr in out2, "interactive: the transcript as generate_samples_interactive prints it",
          repr(out2[-700:]) + "\nwant " + repr(tr))

    # 6. a context of half --seq-length or more is skipped with Megatron's message; "stop" ends the run
    inp2, o2 = new("in"), new("o")
    long_ctx = "the cat sees the dog and the fox " * 2
    open(inp2, "w").write("the cat\n" + long_ctx[:SEQ // 2] + "\nthe dog\nnonstop\nthe fox\n")
    _, out, _ = gen(["--sample-input-file", inp2, "--sample-output-file", o2, "--greedy", "--out-seq-length", "5"])
    body = read(o2).decode()
    check("\nContext length %d \nPlease give smaller context (half of the sequence length)!\n" % (SEQ // 2 + 1) in out
          and body.count("\nContext:") == 2 and "Context:the dog\n" in body and "Context:the fox" not in body,
          "input file: a long context skipped with Megatron's message, a line containing 'stop' ends the run",
          repr(body) + out[-400:])

    # 7. bad inputs: refused before any work, naming the flag; nothing overwritten
    def refused(what, extra, needle, stdin=None):
        rc, out, err = gen(extra, ok=False, stdin=stdin)
        check(rc != 0 and needle in err, "refused: " + what, "rc %d: %s" % (rc, (out + err)[-400:]))

    existing = new("exists")
    open(existing, "w").write("keep me\n")
    refused("--temperature 0 without --greedy", ["--sample-input-file", inp, "--temperature", "0"], "--temperature 0")
    refused("--top_p 1.5", ["--sample-input-file", inp, "--top_p", "1.5"], "--top_p 1.5")
    refused("--top_k past the vocabulary", ["--sample-input-file", inp, "--top_k", "1000"], "--top_k 1000")
    refused("--num-samples without --genfile", ["--num-samples", "2"], "--genfile FILE is required")
    # examples_deepspeed/generate_text.sh's options (the model's sizes the test's): --num-samples 0 with --genfile is
    # the interactive mode, as in Megatron, the file not written; --ds-inference (its ds_inference=...) and --use-tutel
    g0 = new("g")
    rc, o0, e0 = gen(["--tensor-model-parallel-size", "1", "--tokenizer-type", "GPT2BPETokenizer", "--fp16",
                      "--num-experts", "1", "--mlp-type", "standard", "--micro-batch-size", "8", "--out-seq-length",
                      "1024", "--temperature", "1.0", "--genfile", g0, "--top_p", "0.9", "--log-interval", "1",
                      "--num-samples", "0", "--use-tutel", "--ds-inference"], ok=False, stdin=b"the fox\nstop\n")
    check(rc == 0 and "WARNING: --genfile %s is not written" % g0 in o0 + e0 and not os.path.exists(g0) and
          "Megatron-LM:" in o0, "generate_text.sh's options: interactive as in Megatron (--num-samples 0), --genfile "
          "not written (a warning), --ds-inference and --use-tutel accepted", (o0 + e0)[-600:])
    refused("--genfile exists", ["--num-samples", "1", "--genfile", existing], "the file exists")
    refused("--sample-output-file exists", ["--sample-input-file", inp, "--sample-output-file", existing],
            "the file exists")
    check(read(existing) == b"keep me\n", "refused: the existing files are kept")
    bad_in = new("bad")
    open(bad_in, "wb").write(b"the cat\nthe \xff dog\n")
    refused("an input line that is not UTF-8", ["--sample-input-file", bad_in, "--sample-output-file", new("o")],
            "line 2: not UTF-8")
    refused("a missing input file", ["--sample-input-file", os.path.join(tmp, "nope")], "--sample-input-file")
    refused("--out-seq-length -1", ["--sample-input-file", inp, "--out-seq-length", "-1"], "--out-seq-length -1")
    refused("--top_k x", ["--top_k", "x"], "--top_k x")
    big = dict(VOCAB)
    for i in range(200):
        big["tok%d" % i] = len(big)
    big_json = new("big.json")
    json.dump(big, open(big_json, "w"))
    model_big = [big_json if a == vocab_json else a for a in MODEL]
    rc, out, err = run([GEN, "--load", ck] + model_big + ["--sample-input-file", inp], ok=False)
    check(rc != 0 and "the tokenizer has 297 ids, the checkpoint's output layer 128 rows" in err,
          "refused: a tokenizer with more ids than the checkpoint's output layer", (out + err)[-400:])
    # a checkpoint trained with the ds_config's sparse_attention: generating densely would not be the trained model,
    # and prefixes of every length do not fit a block layout; refused (with and without the cache), nothing written
    cfg = new("ds_sparse.json")
    json.dump({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sparse_attention": {"mode": "fixed",
               "block": 16, "num_local_blocks": 2, "attention": "unidirectional"}}, open(cfg, "w"))
    ck_sparse = new("ck_sparse")
    run([PRETRAIN] + MODEL + ["--micro-batch-size", "4", "--global-batch-size", "8", "--data-path",
                              os.path.join(tmp, "corpus_text_document"), "--split", "100,0,0", "--lr", "3e-3",
                              "--train-iters", "2", "--eval-iters", "0", "--deepspeed", "--deepspeed_config", cfg,
                              "--save", ck_sparse])
    for extra in ([], ["--recompute"]):
        outf = new("o")
        rc, out, err = gen(["--sample-input-file", inp, "--sample-output-file", outf] + extra, ok=False,
                           ckpt=ck_sparse)
        check(rc == 1 and "generate_samples: --load %s was trained with sparse_attention (mode fixed, block 16, in "
              "the ds_config it saved)" % ck_sparse in err and not os.path.exists(outf),
              "refused: a sparse_attention checkpoint %s" % " ".join(extra), (out + err)[-400:])
else:
    inp = new("in")
    open(inp, "w").write("".join(CONTEXTS))
    o1 = new("o")
    gen(["--sample-input-file", inp, "--sample-output-file", o1, "--greedy", "--out-seq-length", "30"])
    for tp, pp in [(2, 1), (1, 2), (2, 2)]:
        o = new("o")
        rc, out, err = gen(["--sample-input-file", inp, "--sample-output-file", o, "--greedy", "--out-seq-length", "30",
                            "--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp)],
                           mpi=tp * pp, ok=False)
        check(rc == 0 and os.path.exists(o) and read(o) == read(o1), "TP=%d PP=%d: the greedy output equals one "
              "process's" % (tp, pp), (out + err)[-800:])
    g1, g2 = new("g"), new("g")
    samp = ["--num-samples", "3", "--micro-batch-size", "2", "--top_k", "5", "--out-seq-length", "20"]
    gen(samp + ["--genfile", g1])
    rc, out, err = gen(samp + ["--genfile", g2, "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size",
                               "2"], mpi=4, ok=False)
    check(rc == 0 and read(g1) == read(g2), "TP=2 PP=2: the sampled unconditional samples equal one process's",
          (out + err)[-800:])
    rc, out, err = gen(["--sample-input-file", inp], mpi=2, ok=False)
    check(rc != 0 and "data-parallel replicas" in err, "refused: 2 processes without model parallelism",
          (out + err)[-400:])

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(summary("failures"))
