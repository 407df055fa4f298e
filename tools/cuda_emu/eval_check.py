#!/usr/bin/env python3
"""evaluate_zeroshot, generate_samples and run_text_generation_server on the emulated GPU (tools/cuda_emu, README.md "Programs") against the CPU
build's, on a tiny GPT trained here by the CPU build's pretrain_gpt: the emulated run must say "> compute: GPU" and
give the CPU's numbers to fp32 rounding. ctest entries cuda_emu_evaluate, cuda_emu_generate and
cuda_emu_text_generation_server (labels emu, slow).
The emulated runs have ZT_EMU_HOST_GUARD=1: host code reading the model's device memory without a copy ends them.

  --tool evaluate_zeroshot: WikiText-style perplexity (--task WIKITEXT103, overlapping windows: rows outside the
      loss mask), LAMBADA (--task LAMBADA --strict-lambada: the greedy last word) and three harness tasks in one run
      (--tasks piqa,lambada_openai,triviaqa: log-likelihoods, acc, acc_norm, perplexity; triviaqa's greedy
      generations through the key/value cache: the same tokens generated and exact_match) on one emulated GPU; TP=2 (WikiText
      and LAMBADA, the vocabulary split over the ranks with a padding row: the cross-entropy then runs on the host
      over copied logits rows), PP=2 (stage tensors over the emulated NCCL), DP=2 and --bf16 against the one-process
      CPU run.
      Summed losses, log-likelihoods and perplexities within 1e-5 relative; LAMBADA counts, acc, acc_norm and their
      standard errors equal.
  --tool generate_samples: greedy generation from an input file with the key/value cache, and with --recompute, on
      one emulated GPU, and unconditional samples two rows per forward; TP=2, PP=2 and --fp16 with the cache: the
      texts equal the CPU's byte for byte, and every step's logits (--dump-logits) within 1e-5 of the CPU's largest
      magnitude.
  --tool run_text_generation_server: the CPU build's server and the emulated one answer the same requests (greedy
      with log-probabilities over prompts of three lengths two rows per forward, scoring, beam search of width 3 in
      two forwards a step) on one emulated GPU, TP=2 and PP=2: the texts and segments equal, the log-probabilities
      and beam scores within 1e-5 (absolute, or relative above 1).

With --gpu DIR the same cases run DIR/evaluate_zeroshot or DIR/generate_samples (a CUDA build's) on the real GPUs of
this machine instead, the tolerances times 10; without a GPU the whole run is skipped (exit 77), and a case needing
more GPUs than there are is skipped with the reason the tool gives.

    eval_check.py --tool TOOL [--zt-build DIR] [--out DIR] [--jobs N] [--gpu DIR]
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--tool", required=True, choices=["evaluate_zeroshot", "generate_samples",
                                                 "run_text_generation_server"])
ap.add_argument("--zt-build", default=os.path.join(ROOT, "build"))
ap.add_argument("--out")
ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
ap.add_argument("--gpu", help="a directory with a CUDA build's evaluate_zeroshot / generate_samples")
A = ap.parse_args()
ZT = os.path.abspath(A.zt_build)
OUT = os.path.abspath(A.out or os.path.join(ZT, "cuda_emu" + ("_gpu" if A.gpu else "")))
LOGS = os.path.join(OUT, "logs")
os.makedirs(LOGS, exist_ok=True)
CPU = {t: os.path.join(ZT, "bin", t) for t in ("evaluate_zeroshot", "generate_samples", "run_text_generation_server",
                                                "pretrain_gpt", "preprocess_data")}
for t, p in CPU.items():
    if not os.access(p, os.X_OK):
        print("FAIL: %s not found: build it first (scripts/build.sh)" % p)
        sys.exit(1)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_btl="self,vader",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")
SCALE = 10.0 if A.gpu else 1.0
KIND = "GPU" if A.gpu else "emulated GPU"
passed = failed = skipped = 0


def ok(what):
    global passed
    passed += 1
    print("PASS " + what, flush=True)


def bad(what, detail):
    global failed
    failed += 1
    print("FAIL %s: %s" % (what, detail), flush=True)


def launch(np_, log, cmd, env_extra=None):
    """One run (under mpirun with np_ > 1), its output in log; returns (exit status, output, seconds)."""
    env = dict(ENV, **(env_extra or {}))
    if np_ > 1:
        cmd = MPIRUN + ["-np", str(np_)] + cmd
    t0 = time.time()
    with open(log, "w") as f:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=900)
    return p.returncode, open(log, errors="replace").read(), time.time() - t0


# ---- the tool on the emulated GPU (or the real one) -----------------------------------------------------------------
if A.gpu:
    GPU_BIN = os.path.join(os.path.abspath(A.gpu), A.tool)
    if not shutil.which("nvidia-smi") or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        print("SKIP: no GPU here (nvidia-smi -L fails)")
        sys.exit(77)
else:
    GPU_BIN = os.path.join(OUT, "bin", A.tool)
    t0 = time.time()
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools/cuda_emu/emu_build.py"), "--root", ROOT,
                        "--zt-build", ZT, "--out", OUT], stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(1)
    blog = os.path.join(LOGS, "eval_check_build_%s.log" % A.tool)
    with open(blog, "w") as f:
        r = subprocess.run(["make", "-C", OUT, "-j%d" % A.jobs, "--no-print-directory", GPU_BIN], stdout=f,
                           stderr=subprocess.STDOUT)
    if r.returncode != 0:
        print("".join(l for l in open(blog) if "error" in l)[:3000])
        print("FAIL: the emulated %s does not build (see %s)" % (A.tool, blog))
        sys.exit(1)
    print("emulated %s: %s (built in %.1f s)" % (A.tool, GPU_BIN, time.time() - t0), flush=True)

# ---- fixtures: a character-level GPT-2 vocabulary, a corpus, a tiny GPT trained on it --------------------------------
FIX = os.path.join(LOGS, "eval_fixture_" + A.tool)
shutil.rmtree(FIX, ignore_errors=True)
os.makedirs(FIX)


def bytes_to_unicode():  # GPT-2's byte-to-character table
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BU = bytes_to_unicode()
CHARS = [10] + list(range(32, 127))  # every printable ASCII byte and the newline is one token; no merges
VOCAB = {BU[b]: i for i, b in enumerate(CHARS)}
VOCAB["<|endoftext|>"] = len(CHARS)
NV = len(VOCAB)  # 97: with --make-vocab-size-divisible-by 1 the output layer has 97 rows, odd, so TP=2 pads one
json.dump(VOCAB, open(os.path.join(FIX, "vocab.json"), "w"))
open(os.path.join(FIX, "merges.txt"), "w").write("#version: 0.2\n")
TOK = ["--tokenizer-type", "GPT2BPETokenizer", "--vocab-file", os.path.join(FIX, "vocab.json"), "--merge-file",
       os.path.join(FIX, "merges.txt")]
rng = random.Random(5)
NOUNS = ["cat", "dog", "bird", "fish", "cow", "fox"]
VERBS = ["sees", "likes", "hears", "finds"]


def sentence():
    return "the %s %s the %s." % (rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS))


with open(os.path.join(FIX, "corpus.jsonl"), "w") as f:
    for _ in range(200):
        # a fixed phrase the model learns, so that greedy continuations (LAMBADA, lambada_openai's acc) often hit
        f.write(json.dumps({"text": " ".join(sentence() for _ in range(rng.randint(1, 3))) +
                            (" hello world." if rng.random() < 0.5 else "")}) + "\n")
SEQ = 32
MODEL = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length", str(SEQ),
         "--max-position-embeddings", str(SEQ), "--make-vocab-size-divisible-by", "1"] + TOK
CK = os.path.join(FIX, "ck")
for name, cmd in [("preprocess", [CPU["preprocess_data"], "--input", os.path.join(FIX, "corpus.jsonl"),
                                  "--output-prefix", os.path.join(FIX, "corpus"), "--append-eod", "--workers", "1"]
                   + TOK),
                  ("pretrain", [CPU["pretrain_gpt"]] + MODEL +
                   ["--micro-batch-size", "4", "--global-batch-size", "8", "--data-path",
                    os.path.join(FIX, "corpus_text_document"), "--split", "100,0,0", "--lr", "3e-3", "--train-iters",
                    "600", "--log-interval", "20", "--eval-iters", "0", "--attention-dropout", "0", "--hidden-dropout",
                    "0", "--seed", "3", "--save", CK])]:
    rc, out, _ = launch(1, os.path.join(FIX, name + ".log"), cmd, {"CUDA_VISIBLE_DEVICES": ""})
    if rc != 0:
        print(out[-2000:])
        print("FAIL: fixture: %s exited %d" % (name, rc))
        sys.exit(1)


def close(a, b, tol):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-30)


def compute_line(out):
    return next((l for l in out.splitlines() if l.startswith("> compute:")), "no '> compute:' line")


def pair(name, np_, args, files=()):
    """The CPU build's one-process run and the (emulated) GPU run with np_ processes of the same arguments; files:
    output paths (a '%' in the arguments) each run writes its own copy of. Returns (cpu output, gpu output, the
    files of each) or None when a run failed or was skipped."""
    res = []
    for side in ("cpu", "gpu"):
        tag = "%s.%s" % ("".join(c if c.isalnum() else "_" for c in name), side)
        paths = [os.path.join(FIX, "%s.%s" % (tag, f)) for f in files]
        it = iter(paths)
        argv = [next(it) if a == "%" else a for a in args]
        log = os.path.join(LOGS, "eval_%s.log" % tag)
        if side == "cpu":
            rc, out, secs = launch(1, log, [CPU[A.tool], "--load", CK] + MODEL + argv, {"CUDA_VISIBLE_DEVICES": ""})
        else:
            # the emulated device memory is out of the host's reach outside the emulator's own device work: a host
            # read of the model's memory without a copy ends the run with a note (tools/cuda_emu/README.md)
            extra = {} if A.gpu else {"ZT_EMU_DEVICES": str(np_), "ZT_EMU_HOST_GUARD": "1"}
            rc, out, secs = launch(np_, log, [GPU_BIN, "--load", CK] + MODEL + argv, extra)
        if rc != 0:
            err = [l for l in out.splitlines() if "error" in l or "cuda emulator" in l][:3] or out.splitlines()[-3:]
            bad("%s: %s run" % (name, side.upper() if side == "cpu" else KIND), "exit status %d: %s" % (rc, err))
            return None
        if side == "cpu" and compute_line(out) != "> compute: CPU":
            bad("%s: the CPU reference" % name, compute_line(out))
            return None
        if side == "gpu":
            if A.gpu and "share" in compute_line(out):
                global skipped
                skipped += 1
                print("SKIP %s: %s" % (name, compute_line(out)))
                return None
            if compute_line(out).startswith("> compute: GPU"):
                ok("%s: the %s run computes on the GPU (%s; %.1f s)" % (name, KIND, compute_line(out)[11:], secs))
            else:
                bad("%s: the %s run does not compute on the GPU" % (name, KIND), compute_line(out))
                return None
        res.append((out, paths))
    return res[0][0], res[1][0], res[0][1], res[1][1]


def field(out, prefix, conv=float):
    """The value after `prefix` on the last output line holding it."""
    lines = [l for l in out.splitlines() if prefix in l]
    return conv(lines[-1].split(prefix, 1)[1].split()[0]) if lines else None


# ---- evaluate_zeroshot ---------------------------------------------------------------------------------------------
def eval_case(name, np_, args):
    r = pair(name, np_, args)
    if not r:
        return
    c, g = r[0], r[1]
    if "--task" in args and args[args.index("--task") + 1] == "LAMBADA":
        ca = [l for l in c.splitlines() if " examples correct" in l]
        ga = [l for l in g.splitlines() if " examples correct" in l]
        if ca and ca == ga:
            ok("%s: the same LAMBADA result (%s)" % (name, ca[0]))
        else:
            bad("%s: LAMBADA" % name, "CPU %s, %s %s" % (ca, KIND, ga))
        return
    a, b = field(c, "> summed loss "), field(g, "> summed loss ")
    tol = 1e-5 * SCALE
    if a is not None and b is not None and close(a, b, tol):
        ok("%s: summed loss within %g of the CPU's (%.9g, %.9g)" % (name, tol, a, b))
    else:
        bad("%s: summed loss" % name, "CPU %s, %s %s" % (a, KIND, b))


def harness_case(name, np_, args):
    r = pair(name, np_, args + ["--output-path", "%"], files=["json"])
    if not r:
        return
    c, g, cf, gf = r
    def sums(out):  # "> piqa: N documents, R requests, summed log-likelihood S", one line per task
        return [(l.split(":")[0], float(l.split("summed log-likelihood ")[1].split()[0]))
                for l in out.splitlines() if l.startswith("> ") and "summed log-likelihood " in l]
    a, b = sums(c), sums(g)
    tol = 1e-5 * SCALE
    if len(a) == 2 and [t for t, _ in a] == [t for t, _ in b] and all(close(x, y, tol) for (_, x), (_, y) in zip(a, b)):
        ok("%s: summed log-likelihoods within %g of the CPU's (%s)" % (name, tol, ", ".join("%s %.9g" % t for t in b)))
    else:
        bad("%s: summed log-likelihoods" % name, "CPU %s, %s %s" % (a, KIND, b))
    jc, jg = json.load(open(cf[0]))["results"], json.load(open(gf[0]))["results"]
    gen_c = [l for l in c.splitlines() if l.startswith("> triviaqa: ") and l.endswith(" tokens generated")]
    gen_g = [l for l in g.splitlines() if l.startswith("> triviaqa: ") and l.endswith(" tokens generated")]
    if gen_c and gen_c == gen_g and jc.get("triviaqa") and jc.get("triviaqa") == jg.get("triviaqa"):
        ok("%s: %s, %s" % (name, gen_g[0][2:], jg["triviaqa"]))
    else:
        bad("%s: triviaqa" % name, "CPU %s %s, %s %s %s" % (gen_c, jc.get("triviaqa"), KIND, gen_g, jg.get("triviaqa")))
    for task in ("piqa", "lambada_openai"):
        # acc (piqa: the larger log-likelihood; lambada_openai: the greedy continuation) equal, perplexity close
        mc, mg = jc.get(task, {}), jg.get(task, {})
        ac = {k: v for k, v in mc.items() if k.startswith("acc")}
        ag = {k: v for k, v in mg.items() if k.startswith("acc")}
        pc, pg = mc.get("perplexity,none", 0.0), mg.get("perplexity,none", 0.0)
        if ac and ac == ag and close(pc, pg, tol) and set(mc) == set(mg):
            ok("%s: %s: the same %s%s" % (name, task, ", ".join("%s %.6g" % kv for kv in sorted(ac.items())),
                                          ", perplexity within %g (%.9g)" % (tol, pg) if pc else ""))
        else:
            bad("%s: %s metrics" % (name, task), "CPU %s, %s %s" % (mc, KIND, mg))


if A.tool == "evaluate_zeroshot":
    with open(os.path.join(FIX, "wiki.txt"), "w") as f:  # about 700 tokens: 44 windows of 32 with overlap 16
        f.write(" = The %s = \n" % rng.choice(NOUNS))
        for _ in range(30):
            f.write(" %s , and the %s @-@ %s . \n" % (sentence()[:-1], rng.choice(NOUNS), rng.choice(VERBS)))
    with open(os.path.join(FIX, "lambada.jsonl"), "w") as f:
        for i in range(16):
            f.write(json.dumps({"text": (sentence() + " hello world") if i % 2 else
                                " ".join(sentence() for _ in range(rng.randint(1, 2)))[:-1]}) + "\n")
    with open(os.path.join(FIX, "piqa.jsonl"), "w") as f:
        for _ in range(10):
            f.write(json.dumps({"goal": "the %s %s" % (rng.choice(NOUNS), rng.choice(VERBS)),
                                "sol1": "the " + rng.choice(NOUNS), "sol2": "a %s %s" % (rng.choice(VERBS),
                                                                                           rng.choice(NOUNS)),
                                "label": rng.randint(0, 1)}) + "\n")
    WIKI = ["--task", "WIKITEXT103", "--valid-data", os.path.join(FIX, "wiki.txt"), "--overlapping-eval", "16",
            "--micro-batch-size", "4"]
    LAMB = ["--task", "LAMBADA", "--valid-data", os.path.join(FIX, "lambada.jsonl"), "--micro-batch-size", "4"]
    with open(os.path.join(FIX, "triviaqa.jsonl"), "w") as f:
        for i in range(6):
            f.write(json.dumps({"question": "the %s %s" % (rng.choice(NOUNS), rng.choice(VERBS)),
                                "answer": {"aliases": ["Hello World!" if i % 2 else "the " + rng.choice(NOUNS)]}})
                    + "\n")
    PIQA = ["--tasks", "piqa,lambada_openai,triviaqa", "--task-data", "piqa=" + os.path.join(FIX, "piqa.jsonl"),
            "lambada_openai=" + os.path.join(FIX, "lambada.jsonl"), "triviaqa=" + os.path.join(FIX, "triviaqa.jsonl"),
            "--bootstrap-iters", "100", "--micro-batch-size", "4", "--max-gen-toks", "8"]
    eval_case("WikiText, overlapping windows, one GPU", 1, WIKI)
    eval_case("LAMBADA --strict-lambada, one GPU", 1, LAMB + ["--strict-lambada"])
    harness_case("harness piqa, lambada_openai and triviaqa, one GPU", 1, PIQA)
    eval_case("WikiText, TP=2 (a padding row: the cross-entropy on the host)", 2,
              WIKI + ["--tensor-model-parallel-size", "2"])
    eval_case("LAMBADA, TP=2", 2, LAMB + ["--tensor-model-parallel-size", "2"])
    eval_case("WikiText, PP=2", 2, WIKI + ["--pipeline-model-parallel-size", "2"])
    eval_case("WikiText, DP=2 (two replicas, one GPU each)", 2, WIKI)
    eval_case("WikiText --bf16 (the weights rounded to bf16 on both, fp32 storage)", 1, WIKI + ["--bf16"])


# ---- generate_samples ----------------------------------------------------------------------------------------------
def floats(path):
    data = open(path, "rb").read()
    return struct.unpack("<%df" % (len(data) // 4), data)


def logits_close(name, a_path, b_path, what):
    a, b = floats(a_path), floats(b_path)
    if not a or len(a) != len(b):
        bad("%s: %s logits" % (name, what), "%d and %d values" % (len(a), len(b)))
        return
    big = max(abs(x) for x in a)
    worst = max(abs(x - y) for x, y in zip(a, b))
    tol = 1e-5 * SCALE
    if worst <= tol * big:
        ok("%s: %d steps' logits within %g of the largest (%.3g) of %s (worst %.2g)" %
           (name, len(a) // NV, tol, big, what, worst))
    else:
        bad("%s: %s logits" % (name, what), "worst difference %.3g, largest magnitude %.3g" % (worst, big))


def gen_case(name, np_, args, outfile, recompute_too=False):
    r = pair(name, np_, args + [outfile, "%", "--dump-logits", "%"], files=["txt", "logits"])
    if not r:
        return
    c, g, (ct, cl), (gt, gl) = r
    a, b = open(ct, "rb").read(), open(gt, "rb").read()
    if a and a == b:
        ok("%s: the %s's text equals the CPU's byte for byte (%d bytes)" % (name, KIND, len(a)))
    else:
        bad("%s: text" % name, "CPU %r, %s %r" % (a[:200], KIND, b[:200]))
    logits_close(name, cl, gl, "the CPU's")
    if recompute_too:
        rr = pair(name + " --recompute", np_, args + ["--recompute", outfile, "%", "--dump-logits", "%"],
                  files=["txt", "logits"])
        if not rr:
            return
        rt, rl = rr[3]
        if open(rt, "rb").read() == b:
            ok("%s: --recompute on the %s: the same text as the key/value cache" % (name, KIND))
        else:
            bad("%s: --recompute text" % name, "%r, cache %r" % (open(rt, "rb").read()[:200], b[:200]))
        logits_close(name + ": the key/value cache", gl, rl, "--recompute on the " + KIND)


if A.tool == "generate_samples":
    with open(os.path.join(FIX, "prompts.txt"), "w") as f:
        f.write("the cat sees\nhello\nthe fox likes\nthe bird\n")  # each under half --seq-length (Megatron's rule)
    INPUT = ["--sample-input-file", os.path.join(FIX, "prompts.txt"), "--greedy", "--out-seq-length", "10"]
    gen_case("greedy from an input file, one GPU", 1, INPUT, "--sample-output-file", recompute_too=True)
    gen_case("unconditional, 2 rows per forward, one GPU", 1,
             ["--num-samples", "4", "--micro-batch-size", "2", "--greedy", "--out-seq-length", "12"], "--genfile")
    gen_case("greedy, TP=2 (a padding row)", 2, INPUT + ["--tensor-model-parallel-size", "2"],
             "--sample-output-file")
    gen_case("greedy, PP=2", 2, INPUT + ["--pipeline-model-parallel-size", "2"], "--sample-output-file")
    gen_case("greedy --fp16 (the weights rounded to fp16 on both, fp32 storage)", 1, INPUT + ["--fp16"],
             "--sample-output-file")

# ---- run_text_generation_server -------------------------------------------------------------------------------------
def serve(name, side, np_, args, env_extra):
    """Starts a server (port 0); returns (process, port, pid, the output lines so far) or None."""
    import threading
    cmd = ([CPU[A.tool]] if side == "cpu" else [GPU_BIN]) + ["--load", CK, "--port", "0"] + MODEL + args
    if np_ > 1:
        cmd = MPIRUN + ["-np", str(np_)] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         env=dict(ENV, **env_extra))
    lines, found, ready = [], [], threading.Event()

    def reader():
        for raw in p.stdout:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            if " * Running on http://0.0.0.0:" in line:
                found.append((int(line.split("0.0.0.0:")[1].split("/")[0]), int(line.split("pid ")[1].split(")")[0])))
                ready.set()
        ready.set()

    threading.Thread(target=reader, daemon=True).start()
    ready.wait(900)
    if not found:
        bad("%s: the %s server" % (name, side), "did not start: %s" % "".join(lines)[-600:])
        p.kill()
        return None
    return p, found[0][0], found[0][1], lines


def put(port, req):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    c.request("PUT", "/api", body=json.dumps(req), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.status, r.read()
    c.close()
    return out


def stop(srv):
    import signal
    p, port, pid, lines = srv
    try:
        os.kill(pid, signal.SIGTERM)
        p.wait(300)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        p.kill()
    return "".join(lines)


SERVER_REQS = [{"prompts": ["the cat sees", "hello", "the fox likes the"], "tokens_to_generate": 8, "top_k": 1,
                "logprobs": True},
               {"prompts": ["the bird", "hello world."], "tokens_to_generate": 0, "logprobs": True, "add_BOS": True},
               # width 3 at --micro-batch-size 2: two forwards a step over a 4-row cache
               {"prompts": ["the dog"], "tokens_to_generate": 6, "beam_width": 3, "stop_token": NV - 1}]


def server_case(name, np_, args):
    srv = {}
    for side in ("cpu", "gpu"):
        env = {"CUDA_VISIBLE_DEVICES": ""} if side == "cpu" else \
            ({} if A.gpu else {"ZT_EMU_DEVICES": str(np_), "ZT_EMU_HOST_GUARD": "1"})
        srv[side] = serve(name, side, 1 if side == "cpu" else np_, args, env)
        if not srv[side]:
            for s_ in srv.values():
                if s_:
                    stop(s_)
            return
    gline = compute_line("".join(srv["gpu"][3]))
    if gline.startswith("> compute: GPU"):
        ok("%s: the %s server computes on the GPU (%s)" % (name, KIND, gline[11:]))
    else:
        bad("%s: the %s server does not compute on the GPU" % (name, KIND), gline)
    tol = 1e-5 * SCALE
    for req in SERVER_REQS:
        (ca, a), (cb, b) = put(srv["cpu"][1], req), put(srv["gpu"][1], req)
        if ca != 200 or cb != 200:
            bad("%s: %s" % (name, json.dumps(req)), "CPU %d %r, %s %d %r" % (ca, a[:200], KIND, cb, b[:200]))
            continue
        x, y = json.loads(a), json.loads(b)
        nums = "scores" if "scores" in x else "logprobs"
        fx = [v for row in x[nums] for v in (row if isinstance(row, list) else [row])]
        fy = [v for row in y[nums] for v in (row if isinstance(row, list) else [row])]
        worst = max([abs(u - v) / max(1.0, abs(u)) for u, v in zip(fx, fy)] or [0.0])
        if x["text"] == y["text"] and x["segments"] == y["segments"] and len(fx) == len(fy) and worst <= tol:
            ok("%s: %s: the %s's texts equal the CPU's, %d %s within %g (worst %.2g)" %
               (name, json.dumps(req)[:70], KIND, len(fx), nums, tol, worst))
        else:
            bad("%s: %s" % (name, json.dumps(req)), "CPU %r, %s %r (worst %.3g)" % (a[:300], KIND, b[:300], worst))
    for side in ("cpu", "gpu"):
        stop(srv[side])


if A.tool == "run_text_generation_server":
    server_case("server, one GPU, 2 rows per forward", 1, ["--micro-batch-size", "2"])
    server_case("server, TP=2 (a padding row)", 2, ["--micro-batch-size", "2", "--tensor-model-parallel-size", "2"])
    server_case("server, PP=2", 2, ["--micro-batch-size", "2", "--pipeline-model-parallel-size", "2"])

print("%d passed, %d failed%s" % (passed, failed, ", %d skipped" % skipped if skipped else ""))
sys.exit(1 if failed else 0)
