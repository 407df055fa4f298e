#!/usr/bin/env python3
"""export_hf of a Llama-style GPT checkpoint against Hugging Face's LlamaForCausalLM layout (docs/checkpoints.md,
"Llama").

Usage: test_llama_hf_export.py PRETRAIN_GPT EXPORT_HF ZERO_TO_FP32

transformers is not a dependency here, so the exported directory is checked with a PyTorch twin: a float64 forward
written after transformers' modeling_llama.py (LlamaRMSNorm, LlamaRotaryEmbedding with inv_freq = 1 / theta^(arange(0,
head_dim, 2) / head_dim) and emb = cat(freqs, freqs), rotate_half / apply_rotary_pos_emb, LlamaAttention with
repeat_kv and the causal mask, LlamaMLP down_proj(silu(gate_proj(x)) * up_proj(x)), LlamaDecoderLayer, LlamaModel's
final norm, LlamaForCausalLM's lm_head, tied to embed_tokens when config.tie_word_embeddings) that reads the exported
model.safetensors by HF key names and its hyper-parameters from config.json only. It must equal the Megatron-named
float64 twin of test_llama_parity.py (layer(), norm(), rope_tables(): checked there against the C model) fed the same
checkpoint's fp32 weights (zero_to_fp32 --safe_serialization): logits over the real vocabulary within 1e-6 of max
|logit| on random token sequences.

Two configurations, each a tiny Llama GPT trained 2 iterations by pretrain_gpt on mock data (lr 1e-2, so the RMSNorm
weights have moved away from 1; vocabulary 100 padded to 128, so padding rows exist):
  tied  tied embeddings, no GQA (query_key_value per head [NH][q|k|v][HD]), rope theta 10000;
  gqa   --untie-embeddings-and-output-weights, --num-key-value-heads 2 (grouped [G][R queries | k | v][HD]),
        --rotary-position-embeddings-theta 500.
Negative controls (each must move the logits by more than 100 x the tolerance): gate_proj and up_proj swapped; the
fused QKV cut into contiguous [q | k | v] blocks (no per-head / per-group split); with GQA, the query heads given to
the groups in the wrong order (head j G + g instead of g R + j); the q_proj/k_proj rows permuted as transformers'
convert_llama_weights_to_hf.py does for Meta's interleaved-pair checkpoints (the two rotary conventions differ; ours
needs no permutation); with theta 500, the twin run with the default rope_theta 10000. Refusals: a checkpoint with --rotary-percent 0.5 and one with linear biases exit 1 naming the
flag, writing nothing."""
import json
import math
import os
import sys
import tempfile

try:
    import numpy  # noqa: F401  (parity_lib reads the safetensors with it)
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"FAIL llama_hf_export: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity_lib  # noqa: E402
from parity_lib import check, run, summary  # noqa: E402
import test_llama_parity as M  # noqa: E402  the Megatron-named twin (layer, norm, rope_tables)

torch.set_default_dtype(torch.float64)
TOL = 1e-6
L, C, NH, T, VOCAB, DIVISIBLE = 2, 48, 4, 16, 100, 32
LLAMA = ["--normalization", "rmsnorm", "--swiglu", "--disable-bias-linear", "--use-rotary-position-embeddings"]


def read_safetensors(path):
    """The exported tensors as float64 torch tensors (parity_lib's reader)."""
    return {k: torch.from_numpy(v) for k, v in parity_lib.read_safetensors(path).items()}


def train(pretrain, tmp, tag, extra, ok=True):
    ck = os.path.join(tmp, "ck_" + tag)
    p = run(pretrain, "--num-layers", L, "--hidden-size", C, "--num-attention-heads", NH, "--seq-length", T,
            "--max-position-embeddings", T, "--mock-data", "--vocab-size", VOCAB, "--make-vocab-size-divisible-by",
            DIVISIBLE, "--micro-batch-size", 4, "--global-batch-size", 8, "--lr", "1e-2", "--lr-decay-style",
            "constant", "--train-iters", 2, "--log-interval", 1, "--eval-iters", 0, "--eval-interval", 100, "--save", ck,
            *extra, ok=ok)
    return ck, p


# ---- the HF twin, after transformers/models/llama/modeling_llama.py ------------------------------------------------
def rms_norm(x, w, eps):  # LlamaRMSNorm
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotary(cfg, seq_len):  # LlamaRotaryEmbedding (default rope_type) for position_ids 0..seq_len-1
    dim = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.int64).double() / dim))
    freqs = torch.arange(seq_len).double()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):  # unsqueeze_dim=1: cos/sin [T, D] broadcast over [B, heads, T, D]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def repeat_kv(h, n_rep):
    b, nkv, s, d = h.shape
    if n_rep == 1:
        return h
    return h[:, :, None, :, :].expand(b, nkv, n_rep, s, d).reshape(b, nkv * n_rep, s, d)


def hf_forward(W, cfg, ids):
    """LlamaForCausalLM(...)(ids).logits on HF-named weights W (eval mode, no cache): [B, T, vocab_size]."""
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", cfg["hidden_size"] // nh)
    eps = cfg["rms_norm_eps"]
    assert cfg["hidden_act"] == "silu" and not cfg["attention_bias"] and not cfg["mlp_bias"]
    lin = lambda x, p: x @ W[p + ".weight"].T  # nn.Linear(bias=False)
    Bb, S = ids.shape
    x = W["model.embed_tokens.weight"][ids]
    cos, sin = rotary(cfg, S)
    mask = torch.full((S, S), torch.finfo(torch.float64).min).triu(1)  # the causal additive mask
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(Bb, S, nh, hd).transpose(1, 2)
        k = lin(h, p + "self_attn.k_proj").view(Bb, S, nkv, hd).transpose(1, 2)
        v = lin(h, p + "self_attn.v_proj").view(Bb, S, nkv, hd).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k, v = repeat_kv(k, nh // nkv), repeat_kv(v, nh // nkv)
        scores = q @ k.transpose(2, 3) / math.sqrt(hd) + mask
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(Bb, S, nh * hd)
        x = x + lin(ctx, p + "self_attn.o_proj")
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + lin(F.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return x @ head.T


def megatron_logits(P, ids, mcfg):
    """The Megatron-named twin of test_llama_parity.py: logits [B, T, padded vocab]."""
    emb = "language_model.embedding.word_embeddings.weight"
    x = P[emb][ids]
    rope = M.rope_tables(ids.shape[1], mcfg)
    for l in range(mcfg["L"]):
        x = M.layer(P, l, x, mcfg, rope)
    x = M.norm(P, "language_model.encoder.final_layernorm", x, mcfg)
    return x @ (P["language_model.output_layer.weight"] if mcfg["untie"] else P[emb]).T


def expected_hf_shapes(V, FFN, nkv, untie):
    hd = C // NH
    s = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    for i in range(L):
        p = f"model.layers.{i}."
        s.update({p + "input_layernorm.weight": (C,), p + "post_attention_layernorm.weight": (C,),
                  p + "self_attn.q_proj.weight": (NH * hd, C), p + "self_attn.k_proj.weight": (nkv * hd, C),
                  p + "self_attn.v_proj.weight": (nkv * hd, C), p + "self_attn.o_proj.weight": (C, NH * hd),
                  p + "mlp.gate_proj.weight": (FFN, C), p + "mlp.up_proj.weight": (FFN, C),
                  p + "mlp.down_proj.weight": (C, FFN)})
    if untie:
        s["lm_head.weight"] = (V, C)
    return s


def meta_permute(w, n_heads):
    """transformers' convert_llama_weights_to_hf.py permute(): Meta's interleaved pairs -> rotate_half's halves."""
    d1, d2 = w.shape
    return w.view(n_heads, d1 // n_heads // 2, 2, d2).transpose(1, 2).reshape(d1, d2)


def check_export(tag, ck, tmp, export_hf, z2f, nkv, untie, theta):
    hf = os.path.join(tmp, "hf_" + tag)
    out = run(export_hf, ck, hf).stdout
    cfg = json.load(open(os.path.join(hf, "config.json")))
    W = read_safetensors(os.path.join(hf, "model.safetensors"))
    z = os.path.join(tmp, "fp32_" + tag)
    run(z2f, ck, z, "--safe_serialization")
    P = read_safetensors(os.path.join(z, "model.safetensors"))
    VP = P["language_model.embedding.word_embeddings.weight"].shape[0]
    FFN = P["language_model.encoder.layers.0.mlp.dense_4h_to_h.weight"].shape[1]
    want_cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB, "hidden_size": C,
                "intermediate_size": FFN, "num_hidden_layers": L, "num_attention_heads": NH,
                "num_key_value_heads": nkv, "head_dim": C // NH, "hidden_act": "silu", "rms_norm_eps": 1e-5,
                "rope_theta": theta, "max_position_embeddings": T, "tie_word_embeddings": not untie,
                "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32"}
    bad = {k: (cfg.get(k), v) for k, v in want_cfg.items() if cfg.get(k) != v}
    bad.update({k: cfg[k] for k in ("bos_token_id", "eos_token_id") if cfg.get(k, None) is not None})
    check(not bad and "LlamaForCausalLM" in out and VP == 128 and FFN == 128, f"{tag} config.json",
          f"model_type llama, vocab {VOCAB} (padded {VP}), intermediate {FFN}, {nkv} key/value heads, theta {theta}"
          + (f"; wrong: {bad}" if bad else ""))
    want = expected_hf_shapes(VOCAB, FFN, nkv, untie)
    shapes = {k: tuple(v.shape) for k, v in W.items()}
    check(shapes == want, f"{tag} safetensors keys and shapes", f"{len(W)} tensors, HF Llama names; missing "
          f"{sorted(set(want) - set(W))}, extra {sorted(set(W) - set(want))}, shapes differing "
          f"{sorted(k for k in want if k in shapes and shapes[k] != want[k])}")
    emb_ok = torch.equal(W["model.embed_tokens.weight"], P["language_model.embedding.word_embeddings.weight"][:VOCAB])
    head_ok = not untie or torch.equal(W["lm_head.weight"], P["language_model.output_layer.weight"][:VOCAB])
    moved = max(float((W[f"model.layers.{i}.{n}.weight"] - 1).abs().max()) for i in range(L)
                for n in ("input_layernorm", "post_attention_layernorm"))
    check(emb_ok and head_ok and moved > 1e-3, f"{tag} embeddings, lm_head, norms",
          f"padding rows removed: embed_tokens{' and lm_head' if untie else ''} = the first {VOCAB} rows; "
          f"RMSNorm weights max |w - 1| = {moved:.2e} (> 1e-3: trained)")

    mcfg = {"L": L, "C": C, "NH": NH, "kv_heads": nkv, "rmsnorm": 1, "swiglu": 1, "add_bias": 0, "rotary": 1,
            "theta": float(theta), "percent": 1.0, "pos_emb": 0, "untie": int(untie)}
    ids = torch.randint(0, VOCAB, (3, T), generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        ref = megatron_logits(P, ids, mcfg)[..., :VOCAB]
        scale = float(ref.abs().max())
        got = hf_forward(W, cfg, ids)
        e = float((got - ref).abs().max()) / scale
        check(e <= TOL and got.shape == ref.shape, f"{tag} logits (HF Llama twin vs Megatron twin)",
              f"max |diff| / max |logit| = {e:.2e} (tol {TOL:.0e}, max |logit| {scale:.3f}, shape {tuple(got.shape)})")

        controls = {}
        Wb = dict(W)
        for i in range(L):
            p = f"model.layers.{i}.mlp."
            Wb[p + "gate_proj.weight"], Wb[p + "up_proj.weight"] = W[p + "up_proj.weight"], W[p + "gate_proj.weight"]
        controls["gate and up swapped"] = Wb
        hd, R = C // NH, NH // nkv
        Wb, Wg, Wm = dict(W), dict(W), dict(W)
        for i in range(L):
            qkv = P[f"language_model.encoder.layers.{i}.self_attention.query_key_value.weight"]
            p = f"model.layers.{i}.self_attn."
            # contiguous [q | k | v] blocks, as if the fused rows were not interleaved per head / per group
            Wb[p + "q_proj.weight"] = qkv[:NH * hd]
            Wb[p + "k_proj.weight"] = qkv[NH * hd:(NH + nkv) * hd]
            Wb[p + "v_proj.weight"] = qkv[(NH + nkv) * hd:]
            if R > 1:  # groups right, but query head j G + g instead of g R + j
                blocks = qkv.view(nkv, R + 2, hd, C)
                Wg[p + "q_proj.weight"] = blocks[:, :R].transpose(0, 1).reshape(NH * hd, C)
            Wm[p + "q_proj.weight"] = meta_permute(W[p + "q_proj.weight"], NH)
            Wm[p + "k_proj.weight"] = meta_permute(W[p + "k_proj.weight"], nkv)
        controls["QKV cut in contiguous [q|k|v] blocks"] = Wb
        if R > 1:
            controls["query heads mapped to the wrong groups (j G + g)"] = Wg
        controls["q/k rows permuted as for Meta's interleaved rotary"] = Wm
        errs = {k: float((hf_forward(Wx, cfg, ids) - ref).abs().max()) / scale for k, Wx in controls.items()}
        if theta != 10000.0:  # config.json's rope_theta is what the twin reads: the default would be wrong
            errs["rope_theta 10000 instead"] = float((hf_forward(W, dict(cfg, rope_theta=10000.0), ids) - ref)
                                                     .abs().max()) / scale
        check(min(errs.values()) > 100 * TOL, f"{tag} negative controls",
              ", ".join(f"{k} {v:.2e}" for k, v in errs.items()) + f" (each must exceed {100 * TOL:.0e})")
    return e


def refused(tag, pretrain, export_hf, tmp, extra, want):
    ck, _ = train(pretrain, tmp, tag, extra)
    dst = os.path.join(tmp, "hf_" + tag)
    p = run(export_hf, ck, dst, ok=False)
    check(p.returncode == 1 and all(w in p.stdout for w in want) and not os.path.exists(dst),
          f"{tag}: export_hf refuses, writing nothing", p.stdout.strip()[-400:])


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    pretrain, export_hf, z2f = sys.argv[1:]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zt_llama_hf_") as tmp:
        worst = 0.0
        for tag, nkv, untie, theta, extra in [
                ("tied", NH, False, 10000.0, []),
                ("gqa", 2, True, 500.0, ["--untie-embeddings-and-output-weights", "--num-key-value-heads", 2,
                                         "--rotary-position-embeddings-theta", 500])]:
            ck, _ = train(pretrain, tmp, tag, LLAMA + extra)
            try:
                worst = max(worst, check_export(tag, ck, tmp, export_hf, z2f, nkv, untie, theta))
            except Exception as e:  # a missing or malformed file: report it, go on
                check(False, f"{tag} export", f"{type(e).__name__}: {e}")
        refused("rotary_half", pretrain, export_hf, tmp, LLAMA + ["--rotary-percent", "0.5"],
                ["rotary_percent 0.5", "--rotary-percent 1.0", "LlamaForCausalLM"])
        refused("biases", pretrain, export_hf, tmp, [a for a in LLAMA if a != "--disable-bias-linear"],
                ["add_bias_linear True", "--disable-bias-linear", "LlamaForCausalLM"])
        print(f"# worst logits difference {worst:.2e}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
