#!/usr/bin/env python3
"""hf2megads_weight_converter (Megatron-DeepSpeed's tools/hf2megads_weight_converter.py): a Hugging Face
LlamaForCausalLM or GPT2LMHeadModel directory into a pretrain_gpt checkpoint (docs/checkpoints.md
"hf2megads_weight_converter").

Usage: test_hf_import.py PRETRAIN_GPT CONVERTER ZERO_TO_FP32 EXPORT_HF

1. scratch: a Hugging Face directory written here (no transformers: config.json, random BF16 weights in two
   safetensors shards with model.safetensors.index.json, an old-style rotary inv_freq buffer; 2 layers, hidden 48,
   4 heads, 2 key/value groups, intermediate 128, vocabulary 100, untied lm_head, rope_theta 500) converted with
   --load-mode auto and finetune_llama.sh's flags (scaled down). zero_to_fp32 of the result holds exactly the Megatron
   tensors written here from the Hugging Face ones (q/k/v_proj into query_key_value's grouped rows [G][R q | k | v][hd],
   gate/up_proj into dense_h_to_4h's halves, padding rows 100..127 the mean of the token rows), and the
   Megatron-named float64 twin (test_llama_parity.py, checked against the C model there) on those tensors gives the
   logits of the Hugging Face twin (test_llama_hf_export.py's hf_forward, after modeling_llama.py) on the directory,
   within 1e-6 of max |logit|. Negative control: q_proj cut without the group split moves them by > 1e-4.
2. layouts: the same conversion under mpirun -np 2 with --tensor-model-parallel-size 2 and with
   --pipeline-model-parallel-size 2 writes two model-parallel parts whose zero_to_fp32 equals the one-process one bit
   for bit; pretrain_gpt --finetune --load trains from the converted checkpoint at TP 1 and TP 2 with the same losses.
3. round trip: a tiny tied Llama trained 2 iterations by pretrain_gpt, export_hf, converted (--load-mode safetensor
   --hf-ckpt-num-shards 1), export_hf again: the two model.safetensors hold the same tensors bit for bit. export_hf
   --dtype bf16 writes the F32 export's values rounded to nearest even (torch_dtype bfloat16), which convert back
   exactly.
   --to-hf-ckpt --load of the converted checkpoint (finetune_llama.sh's convert_mds2hf) writes release/ holding the
   directory's values bit for bit as BF16 (its torch_dtype) and its config.json; over an existing release/, or for a checkpoint of
   another model, it is refused.
4. refusals (exit 1, nothing written): a model flag that differs from config.json (both values named), --load-mode
   torchbin, --to-hf-ckpt without --load, rope_scaling in config.json, a vocabulary other than vocab_size, a missing tensor, a tensor
   of no place, a --save directory that holds a checkpoint.
5. GPT-2: a tiny GPT trained 2 iterations, export_hf (GPT2LMHeadModel), converted, export_hf again: bit for bit. The
   same tensors as the hub stores them (GPT2Model's keys without "transformer.", BF16, the attn.bias mask buffers)
   converted with --load-mode auto: the Megatron-named twin on the result gives the logits of a float64 GPT-2 written
   here after transformers' modeling_gpt2.py (Conv1D, c_attn's [q | k | v] blocks, gelu_new) on the directory
   (1e-6), and export_hf of it gives back the BF16 values bit for bit; refused: --max-position-embeddings other than
   n_positions, the erf GELU (--no-bias-gelu-fusion) for gelu_new."""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"FAIL llama_hf_import: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity_lib  # noqa: E402
from parity_lib import check, run, summary  # noqa: E402
import test_llama_hf_export as X  # noqa: E402  the two float64 twins and the tiny training run

torch.set_default_dtype(torch.float64)
L, C, NH, NKV, FFN, V, VP, T, THETA = 2, 48, 4, 2, 128, 100, 128, 16, 500
HD, R = C // NH, NH // NKV
MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1", "-np", "2"]
# finetune_llama.sh's comm_args, scaled down; its HFTokenizer is replaced by mock data of vocab_size tokens
MODEL = ["--num-layers", L, "--hidden-size", C, "--num-attention-heads", NH, "--num-key-value-heads", NKV,
         "--ffn-hidden-size", FFN, "--attention-dropout", 0, "--hidden-dropout", 0, "--no-query-key-layer-scaling",
         "--disable-bias-linear", "--normalization", "rmsnorm", "--use-rotary-position-embeddings",
         "--untie-embeddings-and-output-weights", "--swiglu", "--rotary-position-embeddings-theta", THETA,
         "--seq-length", T, "--max-position-embeddings", T, "--micro-batch-size", 4, "--global-batch-size", 8,
         "--mock-data", "--vocab-size", V, "--make-vocab-size-divisible-by", 32]
SCRIPT = ["--lr-warmup-iters", 0, "--weight-decay", 0.1, "--clip-grad", 1, "--finetune", "--train-iters", 2,
          "--lr", "2e-5", "--lr-decay-style", "cosine", "--log-interval", 1, "--eval-iters", 0, "--eval-interval", 100,
          "--split", "100,0,0", "--zero-stage", 0, "--distributed-backend", "nccl", "--num-workers", 0,
          "--no-masked-softmax-fusion", "--no-bias-gelu-fusion", "--no-bias-dropout-fusion",
          "--no-gradient-accumulation-fusion"]


def bf16(t):
    return t.float().to(torch.bfloat16)


def write_safetensors(path, tensors):
    """tensors: {name: torch tensor (float32 or bfloat16)} in the format's layout (header, then the data in order)."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        if t.dtype == torch.bfloat16:
            raw, dt = t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes(), "BF16"
        else:
            raw, dt = t.float().contiguous().numpy().astype("<f4").tobytes(), "F32"
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def scratch_model():
    g = torch.Generator().manual_seed(5)
    rnd = lambda *s: bf16(torch.randn(*s, generator=g) * 0.3)  # noqa: E731
    W = {"model.embed_tokens.weight": rnd(V, C)}
    for i in range(L):
        p = f"model.layers.{i}."
        W.update({p + "input_layernorm.weight": bf16(1 + torch.randn(C, generator=g) * 0.2),
                  p + "self_attn.q_proj.weight": rnd(NH * HD, C), p + "self_attn.k_proj.weight": rnd(NKV * HD, C),
                  p + "self_attn.v_proj.weight": rnd(NKV * HD, C), p + "self_attn.o_proj.weight": rnd(C, NH * HD),
                  p + "post_attention_layernorm.weight": bf16(1 + torch.randn(C, generator=g) * 0.2),
                  p + "mlp.gate_proj.weight": rnd(FFN, C), p + "mlp.up_proj.weight": rnd(FFN, C),
                  p + "mlp.down_proj.weight": rnd(C, FFN)})
    W["model.norm.weight"] = bf16(1 + torch.randn(C, generator=g) * 0.2)
    W["lm_head.weight"] = rnd(V, C)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": C,
           "intermediate_size": FFN, "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NKV,
           "hidden_act": "silu", "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_theta": float(THETA),
           "rope_scaling": None, "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
           "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
    return W, cfg


def write_hf_dir(d, W, cfg, shards=2, extra=None):
    os.makedirs(d, exist_ok=True)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    names = list(W)
    parts = [names[:len(names) // 2], names[len(names) // 2:]] if shards == 2 else [names]
    wmap = {}
    for k, part in enumerate(parts):
        fn = "model.safetensors" if shards == 1 else f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        t = {n: W[n] for n in part}
        if k == 0 and extra:
            t.update(extra)
        write_safetensors(os.path.join(d, fn), t)
        wmap.update({n: fn for n in t})
    if shards > 1:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wmap},
                  open(os.path.join(d, "model.safetensors.index.json"), "w"))


def megatron_from_hf(W):
    """The Megatron tensors the converter must write (float64), padding rows the token rows' mean."""
    f = {k: v.double() for k, v in W.items()}
    pad = lambda w: torch.cat([w, w.mean(0, keepdim=True).expand(VP - V, C)])  # noqa: E731
    P = {"language_model.embedding.word_embeddings.weight": pad(f["model.embed_tokens.weight"]),
         "language_model.output_layer.weight": pad(f["lm_head.weight"]),
         "language_model.encoder.final_layernorm.weight": f["model.norm.weight"]}
    for i in range(L):
        h, m = f"model.layers.{i}.", f"language_model.encoder.layers.{i}."
        q = f[h + "self_attn.q_proj.weight"].view(NKV, R, HD, C)
        k = f[h + "self_attn.k_proj.weight"].view(NKV, 1, HD, C)
        v = f[h + "self_attn.v_proj.weight"].view(NKV, 1, HD, C)
        P[m + "self_attention.query_key_value.weight"] = torch.cat([q, k, v], 1).reshape(-1, C)
        P[m + "self_attention.dense.weight"] = f[h + "self_attn.o_proj.weight"]
        P[m + "input_layernorm.weight"] = f[h + "input_layernorm.weight"]
        P[m + "post_attention_layernorm.weight"] = f[h + "post_attention_layernorm.weight"]
        P[m + "mlp.dense_h_to_4h.weight"] = torch.cat([f[h + "mlp.gate_proj.weight"], f[h + "mlp.up_proj.weight"]])
        P[m + "mlp.dense_4h_to_h.weight"] = f[h + "mlp.down_proj.weight"]
    return P


def read_st(path):
    """{name: (dtype, float64 array)} of a safetensors file (parity_lib's reader, F32 or BF16)."""
    dt = {}
    t = parity_lib.read_safetensors(path, dt)
    return {k: (dt[k], v) for k, v in t.items()}


def bf16_round(a):
    """float64 values rounded to float32, then to bfloat16 (nearest, ties to even), as float64."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def fp32_of(z2f, ck, out):
    run(z2f, ck, out, "--safe_serialization")
    return {k: torch.from_numpy(v) for k, v in parity_lib.read_safetensors(os.path.join(out, "model.safetensors"))
            .items()}


def losses(text):
    return [float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", text)]


def gpt2_hf_logits(W, cfg, ids):
    """GPT2LMHeadModel(...)(ids).logits (eval) on GPT2Model-named weights W, after modeling_gpt2.py."""
    C, nh = cfg["n_embd"], cfg["n_head"]
    hd, eps = C // nh, cfg["layer_norm_epsilon"]
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (C,), W[p + ".weight"], W[p + ".bias"], eps)  # noqa: E731
    conv = lambda x, p: x @ W[p + ".weight"] + W[p + ".bias"]  # noqa: E731  Conv1D: [in, out]
    Bb, S = ids.shape
    x = W["wte.weight"][ids] + W["wpe.weight"][torch.arange(S)]
    mask = torch.ones(S, S, dtype=torch.bool).triu(1)
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        q, k, v = conv(ln(x, p + "ln_1"), p + "attn.c_attn").split(C, dim=2)
        q, k, v = (t.view(Bb, S, nh, hd).transpose(1, 2) for t in (q, k, v))
        a = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(hd)).masked_fill(mask, float("-inf")), -1) @ v
        x = x + conv(a.transpose(1, 2).reshape(Bb, S, C), p + "attn.c_proj")
        h = conv(ln(x, p + "ln_2"), p + "mlp.c_fc")
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))  # gelu_new
        x = x + conv(h, p + "mlp.c_proj")
    return ln(x, "ln_f") @ W["wte.weight"].T


def gpt2_megatron_logits(P, ids, L_):
    """The Megatron-named twin (test_llama_parity.py's layer) of a GPT-2-style GPT: LayerNorm, biases, positions."""
    mcfg = {"L": L_, "C": X.C, "NH": X.NH, "kv_heads": X.NH, "rmsnorm": 0, "swiglu": 0, "add_bias": 1, "rotary": 0,
            "theta": 10000.0, "percent": 1.0, "pos_emb": 1, "untie": 0}
    emb = "language_model.embedding."
    x = P[emb + "word_embeddings.weight"][ids] + P[emb + "position_embeddings.weight"][torch.arange(ids.shape[1])]
    for l in range(L_):
        x = X.M.layer(P, l, x, mcfg, None)
    x = X.M.norm(P, "language_model.encoder.final_layernorm", x, mcfg)
    return x @ P[emb + "word_embeddings.weight"].T


def with_flag(args, flag, value):
    """args with flag's value replaced."""
    i = args.index(flag)
    return args[:i + 1] + [value] + args[i + 2:]


def nothing_written(save):
    return not os.path.exists(save) or not os.listdir(save)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    pretrain, conv, z2f, export_hf = sys.argv[1:]
    torch.set_num_threads(1)
    mpi = shutil.which("mpirun") is not None
    with tempfile.TemporaryDirectory(prefix="zt_hf_import_") as tmp:
        # ---- 1. a Hugging Face directory written here --------------------------------------------------------------
        W, cfg = scratch_model()
        hf = os.path.join(tmp, "hf")
        write_hf_dir(hf, W, cfg, extra={"model.layers.0.self_attn.rotary_emb.inv_freq": torch.ones(HD // 2)})
        ck = os.path.join(tmp, "ck1")
        p = run(conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--save", ck, *MODEL, *SCRIPT, "--bf16",
                "--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2)
        check("one tensor- and pipeline-parallel part" in p.stdout and "global_step0" in p.stdout
              and os.path.exists(os.path.join(ck, "global_step0", "mp_rank_00_model_states.h5"))
              and not any("optim_states" in n for n in os.listdir(os.path.join(ck, "global_step0"))),
              "scratch: converted", "finetune_llama.sh's flags (TP 2, PP 2 asked, one process): global_step0 with one "
              "model-parallel part, no optimizer states")
        P = fp32_of(z2f, ck, os.path.join(tmp, "fp1"))
        want = megatron_from_hf(W)
        keys_ok = set(P) == set(want)
        exact = keys_ok and all(torch.equal(P[k], want[k]) for k in want if "word_embeddings" not in k
                                and "output_layer" not in k)
        emb = keys_ok and all(torch.equal(P[k][:V], want[k][:V]) and float((P[k][V:] - want[k][V:]).abs().max())
                              <= 1e-7 * float(want[k][V:].abs().max()) for k in
                              ("language_model.embedding.word_embeddings.weight",
                               "language_model.output_layer.weight"))
        check(keys_ok and exact and emb, "scratch: Megatron tensors", f"{len(P)} tensors; q/k/v grouped, gate/up "
              f"halves, norms exact; embeddings and lm_head: {V} token rows exact, {VP - V} padding rows the mean "
              f"(missing {sorted(set(want) - set(P))}, extra {sorted(set(P) - set(want))})")
        mcfg = {"L": L, "C": C, "NH": NH, "kv_heads": NKV, "rmsnorm": 1, "swiglu": 1, "add_bias": 0, "rotary": 1,
                "theta": float(THETA), "percent": 1.0, "pos_emb": 0, "untie": 1}
        Wd = {k: v.double() for k, v in W.items()}
        ids = torch.randint(0, V, (3, T), generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            ref = X.hf_forward(Wd, cfg, ids)
            scale = float(ref.abs().max())
            got = X.megatron_logits(P, ids, mcfg)[..., :V]
            e = float((got - ref).abs().max()) / scale
            Pb = dict(P)
            for i in range(L):  # negative control: q, k, v as contiguous blocks, no group split
                n = f"language_model.encoder.layers.{i}.self_attention.query_key_value.weight"
                h = f"model.layers.{i}.self_attn."
                Pb[n] = torch.cat([Wd[h + "q_proj.weight"], Wd[h + "k_proj.weight"], Wd[h + "v_proj.weight"]])
            ctl = float((X.megatron_logits(Pb, ids, mcfg)[..., :V] - ref).abs().max()) / scale
        check(e <= 1e-6 and ctl > 1e-4, "scratch: logits", f"Megatron twin on the converted tensors vs the Hugging "
              f"Face twin on the directory: max |diff| / max |logit| = {e:.2e} (tol 1e-6); control (no group split) "
              f"{ctl:.2e} (> 1e-4)")

        # --to-hf-ckpt (finetune_llama.sh's convert_mds2hf): back to the directory, its config.json kept
        back = os.path.join(tmp, "back")
        p = run(conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--to-hf-ckpt", "--load", ck, "--save", back, *MODEL,
                *SCRIPT, "--bf16")
        rel = os.path.join(back, "release")
        Bk = read_st(os.path.join(rel, "model.safetensors"))
        same = set(Bk) == set(W) and all(Bk[k][0] == "BF16" and np.array_equal(Bk[k][1], W[k].double().numpy())
                                         for k in W)
        cfg_kept = open(os.path.join(rel, "config.json")).read() == open(os.path.join(hf, "config.json")).read()
        check(same and cfg_kept and sorted(os.listdir(back)) == ["release"], "scratch: --to-hf-ckpt",
              f"{len(Bk)} BF16 tensors in release/ (torch_dtype bfloat16) equal to the directory's bit for bit: "
              f"{same}; config.json the directory's: {cfg_kept}")
        q = run(conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--to-hf-ckpt", "--load", ck, "--save", back, *MODEL,
                ok=False)
        check(q.returncode != 0 and "already holds" in q.stdout and sorted(os.listdir(back)) == ["release"],
              "refused: --to-hf-ckpt over an existing release/", q.stdout.strip()[-200:])
        other, _ = X.train(pretrain, tmp, "other", X.LLAMA)  # a checkpoint of another model: refused
        out_other = os.path.join(tmp, "back_other")
        q = run(conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--to-hf-ckpt", "--load", other, "--save",
                out_other, *MODEL, ok=False)
        check(q.returncode != 0 and "is not the model of" in q.stdout and not os.path.exists(out_other),
              "refused: --to-hf-ckpt of another model's checkpoint", q.stdout.strip()[-300:])

        # ---- 2. layouts ---------------------------------------------------------------------------------------------
        if mpi:
            for tag, par in (("tp2", ["--tensor-model-parallel-size", 2]), ("pp2", ["--pipeline-model-parallel-size",
                                                                                   2])):
                ck2 = os.path.join(tmp, "ck_" + tag)
                run(*MPI, conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--save", ck2, *MODEL, *SCRIPT,
                    "--bf16", *par)
                files = sorted(n for n in os.listdir(os.path.join(ck2, "global_step0")) if n.endswith(".h5"))
                P2 = fp32_of(z2f, ck2, os.path.join(tmp, "fp_" + tag))
                same = set(P2) == set(P) and all(torch.equal(P2[k], P[k]) for k in P)
                check(same and files == ["mp_rank_00_model_states.h5", "mp_rank_01_model_states.h5"],
                      f"layouts: {tag} under mpirun -np 2", f"parts {files}; zero_to_fp32 equal to the one-process "
                      f"conversion bit for bit: {same}")
            t1 = run(pretrain, *MODEL, *SCRIPT, "--load", ck, "--save", os.path.join(tmp, "ft1")).stdout
            t2 = run(*MPI, pretrain, *MODEL, *SCRIPT, "--load", ck, "--tensor-model-parallel-size", 2).stdout
            a, b = losses(t1), losses(t2)
            check(len(a) == 2 and len(b) == 2 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)),
                  "layouts: pretrain_gpt --finetune --load", f"TP 1 lm losses {a}, TP 2 {b} (1e-5)")
        else:
            print("SKIP layouts: mpirun not found (apt-get install openmpi-bin)")

        # ---- 3. round trip with export_hf ---------------------------------------------------------------------------
        ckr, _ = X.train(pretrain, tmp, "rt", X.LLAMA)
        hf1, hf2, ckc = (os.path.join(tmp, n) for n in ("rt_hf1", "rt_hf2", "rt_ck"))
        run(export_hf, ckr, hf1)
        run(conv, "--hf-ckpt-dir", hf1, "--load-mode", "safetensor", "--hf-ckpt-num-shards", 1, "--save", ckc,
            "--num-layers", X.L, "--hidden-size", X.C, "--num-attention-heads", X.NH, "--seq-length", X.T,
            "--max-position-embeddings", X.T, "--mock-data", "--vocab-size", X.VOCAB, "--make-vocab-size-divisible-by",
            X.DIVISIBLE, "--micro-batch-size", 4, "--global-batch-size", 8, *X.LLAMA)
        run(export_hf, ckc, hf2)
        A = parity_lib.read_safetensors(os.path.join(hf1, "model.safetensors"))
        B = parity_lib.read_safetensors(os.path.join(hf2, "model.safetensors"))
        same = set(A) == set(B) and all(np.array_equal(A[k], B[k]) for k in A)
        check(same, "round trip: export_hf, convert, export_hf", f"{len(A)} tensors equal bit for bit: {same}")
        # export_hf --dtype bf16: every tensor BF16, the F32 export's values rounded to nearest even; converted back
        hb, ckb, hb2 = (os.path.join(tmp, n) for n in ("rt_bf16", "rt_bf16_ck", "rt_bf16_hf"))
        run(export_hf, ckr, hb, "--dtype", "bf16")
        Cb = read_st(os.path.join(hb, "model.safetensors"))
        bcfg = json.load(open(os.path.join(hb, "config.json")))
        rounded = set(Cb) == set(A) and all(Cb[k][0] == "BF16" and np.array_equal(Cb[k][1], bf16_round(A[k]))
                                            for k in A)
        moved = sum(int(np.count_nonzero(bf16_round(A[k]) != A[k])) for k in A)
        run(conv, "--hf-ckpt-dir", hb, "--load-mode", "auto", "--save", ckb, "--num-layers", X.L, "--hidden-size",
            X.C, "--num-attention-heads", X.NH, "--seq-length", X.T, "--max-position-embeddings", X.T, "--mock-data",
            "--vocab-size", X.VOCAB, "--make-vocab-size-divisible-by", X.DIVISIBLE, *X.LLAMA)
        run(export_hf, ckb, hb2)
        D = parity_lib.read_safetensors(os.path.join(hb2, "model.safetensors"))
        back_ok = set(D) == set(A) and all(np.array_equal(D[k], Cb[k][1]) for k in A)
        q = run(export_hf, ckr, os.path.join(tmp, "rt_fp16"), "--dtype", "fp16", ok=False)
        check(q.returncode != 0 and "--dtype: invalid choice: 'fp16'" in q.stdout and
              not os.path.exists(os.path.join(tmp, "rt_fp16")), "refused: export_hf --dtype fp16",
              q.stdout.strip()[-160:])
        check(rounded and moved > 0 and bcfg.get("torch_dtype") == "bfloat16" and back_ok,
              "export_hf --dtype bf16", f"{len(Cb)} BF16 tensors = the F32 export rounded to nearest even ({moved} "
              f"values moved), torch_dtype {bcfg.get('torch_dtype')}; converted and exported again in F32: the BF16 "
              f"values exactly: {back_ok}")

        # ---- 4. refusals ---------------------------------------------------------------------------------------------
        def refused(tag, want, *extra, hf_dir=hf, model=MODEL, save=None):
            save = save or os.path.join(tmp, "no_" + tag)
            q = run(conv, "--hf-ckpt-dir", hf_dir, "--load-mode", "auto", "--save", save, *model, *extra, ok=False)
            out = q.stdout.strip()
            check(q.returncode != 0 and all(w in out for w in want) and (save == ckc or nothing_written(save)),
                  f"refused: {tag}", out[-300:].replace("\n", " "))

        refused("a flag differs", ["--num-layers 3, num_hidden_layers 2", "--rotary-position-embeddings-theta 10000, "
                "rope_theta 500", "Nothing was written"],
                model=with_flag(with_flag(MODEL, "--num-layers", 3), "--rotary-position-embeddings-theta", 10000))
        refused("torchbin", ["--load-mode torchbin", "safetensors"], "--load-mode", "torchbin")
        refused("to-hf-ckpt without --load", ["--to-hf-ckpt: --load"], "--to-hf-ckpt")
        refused("vocabulary", ["vocabulary is 101 tokens", "vocab_size 100"],
                model=with_flag(MODEL, "--vocab-size", 101))
        bad = os.path.join(tmp, "hf_scaling")
        write_hf_dir(bad, W, dict(cfg, rope_scaling={"type": "linear", "factor": 2.0}))
        refused("rope_scaling", ["rope_scaling"], hf_dir=bad)
        Wm = dict(W)
        del Wm["model.layers.1.mlp.up_proj.weight"]
        bad = os.path.join(tmp, "hf_missing")
        write_hf_dir(bad, Wm, cfg)
        refused("missing tensor", ["model.layers.1.mlp.up_proj.weight is missing"], hf_dir=bad)
        bad = os.path.join(tmp, "hf_extra")
        write_hf_dir(bad, dict(W, **{"model.layers.2.mlp.up_proj.weight": W["model.norm.weight"]}), cfg)
        refused("tensor of no place", ["model.layers.2.mlp.up_proj.weight has no place"], hf_dir=bad)
        before = sorted(os.listdir(ckc))
        refused("--save holds a checkpoint", ["already holds a checkpoint"], save=ckc)
        check(sorted(os.listdir(ckc)) == before, "refused: --save untouched", f"{before}")

        # ---- 5. GPT-2 -----------------------------------------------------------------------------------------------
        gargs = ["--num-layers", X.L, "--hidden-size", X.C, "--num-attention-heads", X.NH, "--seq-length", X.T,
                 "--max-position-embeddings", X.T, "--mock-data", "--vocab-size", X.VOCAB,
                 "--make-vocab-size-divisible-by", X.DIVISIBLE, "--micro-batch-size", 4, "--global-batch-size", 8]
        ckg, _ = X.train(pretrain, tmp, "gpt2", [])
        g1, g2, ckg2 = (os.path.join(tmp, n) for n in ("g_hf1", "g_hf2", "g_ck"))
        run(export_hf, ckg, g1)
        p = run(conv, "--hf-ckpt-dir", g1, "--load-mode", "safetensor", "--hf-ckpt-num-shards", 1, "--save", ckg2,
                *gargs)
        run(export_hf, ckg2, g2)
        A = parity_lib.read_safetensors(os.path.join(g1, "model.safetensors"))
        B = parity_lib.read_safetensors(os.path.join(g2, "model.safetensors"))
        same = set(A) == set(B) and all(np.array_equal(A[k], B[k]) for k in A)
        check(same and "GPT2LMHeadModel" in p.stdout, "gpt2: export_hf, convert, export_hf",
              f"{len(A)} tensors equal bit for bit: {same}")
        gcfg = json.load(open(os.path.join(g1, "config.json")))
        hub = {k[len("transformer."):] if k.startswith("transformer.") else k: bf16(torch.from_numpy(v))
               for k, v in A.items()}
        for i in range(X.L):  # the causal-mask buffers older GPT-2 files hold
            hub[f"h.{i}.attn.bias"] = torch.ones(1, 1, X.T, X.T).tril()
        g3, ckg3, g4 = (os.path.join(tmp, n) for n in ("g_hub", "g_hub_ck", "g_hub_hf"))
        write_hf_dir(g3, hub, gcfg, shards=1)
        run(conv, "--hf-ckpt-dir", g3, "--load-mode", "auto", "--save", ckg3, *gargs)
        P = fp32_of(z2f, ckg3, os.path.join(tmp, "g_fp"))
        Wd = {k: v.double() for k, v in hub.items()}
        ids = torch.randint(0, X.VOCAB, (3, X.T), generator=torch.Generator().manual_seed(4))
        with torch.no_grad():
            ref = gpt2_hf_logits(Wd, gcfg, ids)
            scale = float(ref.abs().max())
            e = float((gpt2_megatron_logits(P, ids, X.L)[..., :X.VOCAB] - ref).abs().max()) / scale
        run(export_hf, ckg3, g4)
        E = parity_lib.read_safetensors(os.path.join(g4, "model.safetensors"))
        back = all(np.array_equal(E["transformer." + k], Wd[k].numpy()) for k in hub if not k.endswith("attn.bias"))
        check(e <= 1e-6 and back, "gpt2: the hub's layout (no prefix, BF16, mask buffers)",
              f"Megatron twin on the converted tensors vs a float64 GPT-2 after modeling_gpt2.py: max |diff| / max "
              f"|logit| = {e:.2e} (tol 1e-6); export_hf gives the BF16 values back bit for bit: {back}")
        refused("gpt2 positions", ["--max-position-embeddings 32, n_positions 16"], hf_dir=g3,
                model=with_flag(gargs, "--max-position-embeddings", 32))
        refused("gpt2 activation", ["the flags' MLP activation gelu, activation_function gelu_new"], hf_dir=g3,
                model=gargs + ["--no-bias-gelu-fusion"])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
