#!/usr/bin/env python3
"""zero_to_fp32, inspect_checkpoint and export_hf against independent readers (docs/checkpoints.md).

- zero_to_fp32: the HDF5 output (h5py) and the safetensors output (parsed here with NumPy: 8-byte little-endian
  header length, JSON header, data offsets) hold exactly the fp32 master weights that an independent h5py
  reassembly of the optimizer partitions gives; with bf16 training, the masters (not the bf16 weights); sharding
  follows Hugging Face's greedy split with model-0000i-of-0000N names and an index json; tag folders and --tag.
- inspect_checkpoint prints the iteration, the layout and every tensor with its shape.
- export_hf: a GPT-2 written below in PyTorch with Hugging Face's GPT2LMHeadModel semantics (Conv1D [in, out]
  weights, c_attn [q|k|v] blocks, gelu_new, tied lm_head), loaded from the exported config.json and
  model.safetensors, gives the logits our model computes from the checkpoint (ckpt_logits), tied and untied.
Usage: test_tools.py PRETRAIN_GPT ZERO_TO_FP32 INSPECT_CHECKPOINT EXPORT_HF CKPT_LOGITS"""
import json, math, os, subprocess, sys, tempfile

try:
    import h5py
    import numpy as np
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5_oracle  # noqa: E402

pretrain, z2f, inspect, export, logits_bin = sys.argv[1:6]
work = tempfile.mkdtemp()
os.chdir(work)
env = dict(os.environ, OMP_NUM_THREADS="1")
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("PASS", what)
    else:
        failed += 1
        print("FAIL", what, detail)


def run(*cmd):
    p = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout[-2000:])
        raise SystemExit("command failed: %s" % " ".join(map(str, cmd)))
    return p.stdout


TINY = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length", "16",
        "--max-position-embeddings", "16", "--micro-batch-size", "2", "--global-batch-size", "4", "--mock-data",
        "--vocab-size", "100", "--lr", "1e-2", "--log-interval", "5", "--eval-interval", "100", "--eval-iters", "0",
        "--train-iters", "10"]


def read_safetensors(path):
    """An independent parser of the safetensors format."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    out, end = {}, 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        assert e["dtype"] == "F32", e
        b, f = e["data_offsets"]
        assert b == end, "offsets not contiguous at %s" % name
        count = int(np.prod(e["shape"])) if e["shape"] else 1
        assert f - b == 4 * count, name
        out[name] = np.frombuffer(data[b:f], dtype="<f4").reshape(e["shape"])
        end = f
    assert end == len(data), "data region has %d bytes, tensors cover %d" % (len(data), end)
    return out, meta, n


# ---- a trained checkpoint (fp32) ----------------------------------------------------------------------
run(pretrain, *TINY, "--save", "ck")
ref = {k: v["fp32"].reshape(v["shape"]) for k, v in h5_oracle.full_state("ck/global_step10").items()}
weights = {k: v["weights"] for k, v in h5_oracle.full_state("ck/global_step10").items()}

out = run(z2f, "ck", "o_h5")
with h5py.File("o_h5/model.h5", "r") as f:
    got = {k: f[k][()] for k in f}
check(got.keys() == ref.keys() and all(np.array_equal(got[k], ref[k]) for k in ref),
      "zero_to_fp32 (HDF5, the default): %d tensors equal to the reassembled fp32 states" % len(ref))
check("Reconstructed fp32 state dict with %d params" % len(ref) in out and "zero stage 0" in out,
      "zero_to_fp32 prints DeepSpeed's summary lines", out)
run(z2f, "ck", "o_st", "--safe_serialization")
st, meta, hlen = read_safetensors("o_st/model.safetensors")
check(meta == {"format": "pt"} and hlen % 8 == 0 and st.keys() == ref.keys() and
      all(np.array_equal(st[k], ref[k]) for k in ref), "safetensors read by NumPy: header, offsets, values exact")
check(all(np.array_equal(weights[k], ref[k]) for k in ref), "fp32 training: masters equal the saved weights")

# sharding: Hugging Face's greedy split
limit = 20000
run(z2f, "ck", "o_sh", "--safe_serialization", "--max_shard_size", "20KB")
sizes = [(k, ref[k].size * 4) for k in h5_oracle.full_state("ck/global_step10")]  # saved order
shards, cur, cur_b = [], [], 0
for k, b in sizes:
    if b > limit:
        shards.append([k])
        continue
    if cur and cur_b + b > limit:
        shards.append(cur)
        cur, cur_b = [], 0
    cur.append(k)
    cur_b += b
if cur:
    shards.append(cur)
N = len(shards)
names = ["model-%05d-of-%05d.safetensors" % (i + 1, N) for i in range(N)]
index = json.load(open("o_sh/model.safetensors.index.json"))
want_map = {k: names[i] for i, s in enumerate(shards) for k in s}
check(sorted(os.listdir("o_sh")) == sorted(names + ["model.safetensors.index.json"]) and index["weight_map"] == want_map
      and index["metadata"]["total_size"] == sum(b for _, b in sizes),
      "--max_shard_size 20KB: %d shards named and split as Hugging Face does, index json" % N, str(os.listdir("o_sh")))
merged = {}
for n_ in names:
    merged.update(read_safetensors("o_sh/" + n_)[0])
check(merged.keys() == ref.keys() and all(np.array_equal(merged[k], ref[k]) for k in ref), "shards hold every tensor exactly")
run(z2f, "ck/global_step10", "o_tag")
run(z2f, "ck", "o_tag2", "--tag", "global_step10")
with h5py.File("o_tag/model.h5", "r") as f, h5py.File("o_tag2/model.h5", "r") as g:
    check(all(np.array_equal(f[k][()], ref[k]) and np.array_equal(g[k][()], ref[k]) for k in ref),
          "zero_to_fp32 takes a tag folder directly, or --tag")
# the progress bar: drawn on a terminal only (script(1) gives the tool a pseudo-terminal)
import shutil
if shutil.which("script"):
    t = subprocess.run(["script", "-qec", "%s ck o_tty 2>&1 >/dev/null" % z2f, "/dev/null"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    plain = subprocess.run([z2f, "ck", "o_notty"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(t.returncode == 0 and b"\r[" in t.stdout and b"28/28 tensors" in t.stdout and b"\r" not in plain.stderr
          and b"tensors" not in plain.stderr, "zero_to_fp32 draws a progress bar on a terminal, none otherwise",
          repr(t.stdout[-300:]))
p = subprocess.run([z2f, "nowhere", "o_x"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(p.returncode != 0 and "Unable to find 'latest' file at nowhere/latest" in p.stdout, "a folder without latest is refused",
      p.stdout)

# ---- inspect_checkpoint -----------------------------------------------------------------------------------
out = run(inspect, "ck")
lines = out.splitlines()
shape_ok = all(any(l.split()[:2] == [k, "[" + ", ".join(str(d) for d in ref[k].shape) + "]"] or
                   (l.strip().startswith(k + " ") and "[" + ", ".join(str(d) for d in ref[k].shape) + "]" in l)
                   for l in lines) for k in ref)
check("iteration: 10 | consumed samples: 40 |" in out and "parallel layout: tensor 1 x pipeline 1 x data 1" in out
      and "optimizer: adam, step 10" in out and "tensors: %d, %d elements" % (len(ref), sum(v.size for v in ref.values()))
      in out and shape_ok, "inspect_checkpoint: iteration, layout, optimizer, every tensor with its shape", out[-800:])

# ---- bf16: zero_to_fp32 prefers the fp32 masters -------------------------------------------------------
if "--bf16" in run(pretrain, "--help"):
    run(pretrain, *TINY, "--bf16", "--save", "ckb")
    fs = h5_oracle.full_state("ckb/global_step10")
    run(z2f, "ckb", "o_b", "--safe_serialization")
    st = read_safetensors("o_b/model.safetensors")[0]
    masters_used = all(np.array_equal(st[k].ravel(), fs[k]["fp32"].ravel()) for k in fs)
    bf = lambda x: ((x.view(np.uint32).astype(np.uint64) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16 << 16
                    ).astype(np.uint32).view(np.float32)
    differs = any(not np.array_equal(st[k], fs[k]["weights"]) for k in fs)
    rounds = all(np.array_equal(bf(st[k].ravel().copy()), fs[k]["weights"].ravel()) for k in fs)
    check(masters_used and differs and rounds, "bf16: zero_to_fp32 writes the fp32 masters (bf16-rounded they are "
          "the saved bf16 weights)")
else:
    print("NOTE: no --bf16 in this build; the masters-vs-bf16 case is not run")

# ---- export_hf against a PyTorch GPT-2 with Hugging Face's semantics ----------------------------------------
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
    print("NOTE: torch not available; export_hf logits not checked")


def gpt2_logits(d, cfg, ids):
    """GPT2LMHeadModel's forward (eval mode) in float64 from the exported files."""
    sd = {k: torch.from_numpy(v.astype(np.float64)) for k, v in d.items()}
    C, H, L, eps = cfg["n_embd"], cfg["n_head"], cfg["n_layer"], cfg["layer_norm_epsilon"]
    B, T = ids.shape
    ids = torch.from_numpy(ids.astype(np.int64))
    x = sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][torch.arange(T)]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    acts = {"gelu_new": lambda u: 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3))),
            "relu2": lambda u: torch.relu(u) ** 2}  # transformers' NewGELUActivation, ReLUSquaredActivation
    act = acts[cfg["activation_function"]]
    for l in range(L):
        p = "transformer.h.%d." % l
        h = F.layer_norm(x, (C,), sd[p + "ln_1.weight"], sd[p + "ln_1.bias"], eps)
        qkv = h @ sd[p + "attn.c_attn.weight"] + sd[p + "attn.c_attn.bias"]  # Conv1D: x W + b, W [in, out]
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        att = att.masked_fill(~mask, torch.finfo(att.dtype).min).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ sd[p + "attn.c_proj.weight"] + sd[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), sd[p + "ln_2.weight"], sd[p + "ln_2.bias"], eps)
        x = x + act(h @ sd[p + "mlp.c_fc.weight"] + sd[p + "mlp.c_fc.bias"]) @ sd[p + "mlp.c_proj.weight"] \
            + sd[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"], eps)
    head = sd["transformer.wte.weight"] if cfg["tie_word_embeddings"] else sd["lm_head.weight"]
    return (x @ head.T).numpy()


rng = np.random.default_rng(0)
ids = rng.integers(0, 100, size=(2, 16)).astype(np.int32)
np.save("ids.npy", ids)
for name, extra in (("tied", []), ("untied", ["--untie-embeddings-and-output-weights"]),
                    ("squared-relu", ["--squared-relu"])):
    ck = {"tied": "ck", "untied": "cku"}.get(name, "cksq")
    want_act = "relu2" if name == "squared-relu" else "gelu_new"
    if name != "tied":
        run(pretrain, *TINY, *extra, "--save", ck)
    out = run(export, ck, "hf_" + name)
    cfg = json.load(open("hf_%s/config.json" % name))
    d, meta, _ = read_safetensors("hf_%s/model.safetensors" % name)
    want_keys = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight", "transformer.ln_f.bias"}
    check(cfg["model_type"] == "gpt2" and cfg["architectures"] == ["GPT2LMHeadModel"] and cfg["vocab_size"] == 100 and
          cfg["n_positions"] == 16 and cfg["n_embd"] == 32 and cfg["n_layer"] == 2 and cfg["n_head"] == 4 and
          abs(cfg["layer_norm_epsilon"] - 1e-5) < 1e-12 and cfg["activation_function"] == want_act and
          cfg["tie_word_embeddings"] == (name != "untied") and want_keys <= d.keys() and
          ("lm_head.weight" in d) == (name == "untied") and d["transformer.wte.weight"].shape == (100, 32) and
          d["transformer.h.0.attn.c_attn.weight"].shape == (32, 96),
          "export_hf (%s): config.json and tensor names/shapes (vocabulary padding removed, Conv1D [in, out])" % name,
          json.dumps(cfg))
    run(logits_bin, ck, "ids.npy", "ours.npy")
    ours = np.load("ours.npy")[:, :, :100]
    if torch is not None:
        theirs = gpt2_logits(d, cfg, ids)
        err = float(np.max(np.abs(theirs - ours)))
        check(err < 1e-4 and float(np.std(ours)) > 1e-3, "export_hf (%s): PyTorch GPT-2 logits = ours (max abs diff %.2e)"
              % (name, err))
        # the QKV re-layout matters: a model that skips it disagrees
        bad = dict(d)
        for l in range(2):
            w = d["transformer.h.%d.attn.c_attn.weight" % l]
            bad["transformer.h.%d.attn.c_attn.weight" % l] = w[:, np.arange(96).reshape(3, 4, 8).transpose(1, 0, 2).ravel()]
        err_bad = float(np.max(np.abs(gpt2_logits(bad, cfg, ids) - ours)))
        check(err_bad > 100 * max(err, 1e-7), "export_hf (%s): without the QKV re-layout the logits differ (%.2e)"
              % (name, err_bad))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
