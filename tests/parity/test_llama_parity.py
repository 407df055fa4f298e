#!/usr/bin/env python3
"""PyTorch parity of the GPT model's Llama-style variants: Megatron-DeepSpeed's --normalization rmsnorm, --swiglu,
--disable-bias-linear, --use-rotary-position-embeddings (--rotary-position-embeddings-theta, --rotary-percent) and
--untie-embeddings-and-output-weights, and grouped-query attention (--num-key-value-heads). The loss, every parameter gradient and three AdamW training steps of a tiny
zerotron GPT against a float64 PyTorch twin of Megatron's model given the same weights and batches.

Usage: test_llama_parity.py GPT_PARITY_DUMP_BINARY
Runs `gpt_parity_dump OUTDIR --llama NAME` (tests/parity/gpt_parity_dump.c) for eight configurations (NH = 4 query
heads; NKV key/value heads, 4 unless noted):
  llama            rmsnorm, swiglu, no linear biases, rotary theta 10000 on all head dims, untied output layer,
                   no learned position embedding
  llama_recompute  the same with full activation recompute
  rope_partial     layernorm, GELU MLP, biases, rotary theta 500 on half the head dims, tied embeddings, no
                   learned position embedding
  rms_swiglu       rmsnorm, swiglu, biases, learned absolute positions, no rotary, tied embeddings
  gqa              as llama with NKV = 2 (grouped-query attention, R = NH / NKV = 2 query heads per group)
  mqa_bias         layernorm, GELU MLP, biases, rotary theta 10000 on half the head dims, tied embeddings, no
                   learned position embedding, NKV = 1 (multi-query attention, R = 4)
  sq_relu_ln1p     --apply-layernorm-1p (every LayerNorm scales by weight + 1) and --squared-relu (relu(x)^2 MLP),
                   biases, learned positions, tied embeddings
  erf_nobias       --disable-bias-linear without SwiGLU: no bias-GELU fusion, so the MLP is F.gelu's exact erf form;
                   learned positions, untied output layer (a C side with the tanh form fails: gradients 1-2e-5
                   relative off, against 4e-7 with the erf form, measured)
  llama_ltd        llama with random-LTD (`--llama llama --random-ltd`): layer 1 runs on 10 kept tokens of the 16 of
                   each row, which it turns by positions 0..9 (Megatron-DeepSpeed's apply_rotary_pos_emb slices the
                   table to the length of the tensor it is given: freqs[:r]), not by their places in the row; the
                   C gradients must also be far (ROTARY_MATTERS) from a twin that turns them by their places
and checks, as test_gpt_parity.py does (its Dump, tolerances and the shared parity_lib optimizer are reused), the
parameter names and shapes the variants imply, the loss, every gradient, and the three steps' losses, grad norms,
clip coefficients, learning rates, parameters and updates. For every rotary case it also checks that the rotary
embedding was applied: some C gradient tensor must differ from the twin's with rotary turned off by more than 1e-3
relative, norm-wise (the loss difference, too small to tell, is printed for information).
Prints a PASS/FAIL line per check, then "N passed, M failed". Exit status 1 on any failure.

The twin follows megatron/model/{rmsnorm,rotary_pos_embedding,transformer,language_model}.py:
  GQA (megatron/model/transformer.py before commit 676a482c, ParallelAttention.forward, repeat_kv):
          query_key_value is [(NH + 2 NKV) HD, C] (+ bias), its output viewed as [NKV, R + 2, HD]: row
          g (R+2) HD + j HD + d (j < R) is dim d of query head g R + j, g (R+2) HD + R HD + d of group g's key,
          g (R+2) HD + (R+1) HD + d of its value; query head h attends with group h // R's key and value (causal,
          scale 1/sqrt(HD)); dense stays [C, NH HD]. NKV = NH is the plain per-head layout [NH, 3, HD];
  RMSNorm(x) = x * rsqrt(mean(x^2, -1) + eps) * weight (eps = the layernorm epsilon, 1e-5);
  SwiGLU: h = x W1^T (+ b1), (g, u) = chunk(h, 2, -1) (rows [0, FFN) of W1 the gate, [FFN, 2 FFN) the linear half),
          silu(g) * u, then dense_4h_to_h;
  rotary: rot = int(HD * percent), inv_freq = theta^-(arange(0, rot, 2) / rot), angle[t] = t * inv_freq for the
          sequence positions t = 0..T-1, emb = cat(angle, angle); every query head and every key/value group's key
          (after the QKV split, before the repeat and the 1/sqrt(HD) scores) get x * cos(emb) + rotate_half(x) * sin(emb) on their first rot dims,
          rotate_half(x) = cat(-x2, x1) over the halves of those dims; dims past rot pass unchanged. The tables are
          computed in float64 here. (Megatron-DeepSpeed's HEAD passes the (cos, sin) pair where apply_rotary_pos_emb
          expects the angles, a known porting slip; the twin implements the NeMo/Megatron-LM rotary the flags name.)
The key rows of the QKV bias (each group's key; with rotary only its unrotated dims [rot, HD)) have zero gradient in
exact arithmetic: q_h . b_k adds the same constant to every score of a query row of head h, which the softmax
ignores, so each head's contribution is zero and so is a group's sum over its R heads. Their C gradient must be
rounding noise (KEY_BIAS_GRAD) and their Adam updates, noise/eps, are only bounded (KEY_BIAS_MOVE), as in
test_gpt_parity.py."""
import math
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the oracle is required: never pass silently without it
    print(f"FAIL llama_parity: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_gpt_parity as G  # noqa: E402  (Dump, tolerances, LN_EPS: the dense GPT test's, unchanged)
from parity_lib import check, check_step_scalars, clip_and_adamw, lr_at, rel, summary  # noqa: E402
from parity_lib import twin_linear, twin_mlp_act, twin_norm, twin_qkv, twin_rope_tables  # noqa: E402

torch.set_default_dtype(torch.float64)

# The variants each configuration must dump in llama.npy: rmsnorm, swiglu, add_bias_linear, rotary, rope_theta,
# rotary_percent, add_position_embedding, num_key_value_heads, the MLP's activation unless swiglu (0 the tanh GELU,
# 1 the erf GELU, 3 the squared ReLU: runtime/ops/ops.h's zt_act_kind), LayerNorm-1p; and config.npy's untie and
# recompute.
LLAMA_FIELDS = ["rmsnorm", "swiglu", "add_bias", "rotary", "theta", "percent", "pos_emb", "kv_heads", "act", "ln1p"]
CASES = {
    "llama": ((1, 1, 0, 1, 10000.0, 1.0, 0, 4, 0, 0), 1, 0),
    "llama_recompute": ((1, 1, 0, 1, 10000.0, 1.0, 0, 4, 0, 0), 1, 1),
    "rope_partial": ((0, 0, 1, 1, 500.0, 0.5, 0, 4, 0, 0), 0, 0),
    "rms_swiglu": ((1, 1, 1, 0, 10000.0, 1.0, 1, 4, 0, 0), 0, 0),
    "gqa": ((1, 1, 0, 1, 10000.0, 1.0, 0, 2, 0, 0), 1, 0),
    "mqa_bias": ((0, 0, 1, 1, 10000.0, 0.5, 0, 1, 0, 0), 0, 0),
    "sq_relu_ln1p": ((0, 0, 1, 0, 10000.0, 1.0, 1, 4, 3, 1), 0, 0),
    "erf_nobias": ((0, 0, 0, 0, 10000.0, 1.0, 1, 4, 1, 0), 1, 0),
    "llama_ltd": ((1, 1, 0, 1, 10000.0, 1.0, 0, 4, 0, 0), 1, 0),
}
# the dump's arguments of a case, when not `--llama TAG`
DUMP_ARGS = {"llama_ltd": ["--llama", "llama", "--random-ltd"]}
# Some C gradient tensor must differ from the twin's without rotary by more than this (norm-wise), 100 x TOL_GRAD; a C
# side that ignored rotary matches that twin to ~1e-6 in every tensor. The loss is no witness: at init std 0.02 the
# attention is nearly uniform and the loss moves by only ~1e-5 (llama) or ~1e-6 (rope_partial) relative without
# rotary, below TOL_LOSS, while the largest gradient change is ~2e-2 (QKV weights ~1.5e-2).
ROTARY_MATTERS = 1e-3


def rotary_dim(cfg):
    HD = cfg["C"] // cfg["NH"]
    return int(HD * cfg["percent"]) if cfg["percent"] < 1.0 else HD  # language_model.py's rotary_dim


def expected_shapes(cfg):
    """{name: shape} of every parameter the variants imply, in no particular order."""
    L, C, FFN, V, MAXPOS = cfg["L"], cfg["C"], cfg["FFN"], cfg["V"], cfg["maxpos"]
    emb = "language_model.embedding."
    s = {emb + "word_embeddings.weight": (V, C)}
    if cfg["pos_emb"]:
        s[emb + "position_embeddings.weight"] = (MAXPOS, C)
    norms = [f"language_model.encoder.layers.{l}.{n}" for l in range(L)
             for n in ("input_layernorm", "post_attention_layernorm")] + ["language_model.encoder.final_layernorm"]
    for n in norms:
        s[n + ".weight"] = (C,)
        if not cfg["rmsnorm"]:
            s[n + ".bias"] = (C,)
    h4 = 2 * FFN if cfg["swiglu"] else FFN
    qkv = (cfg["NH"] + 2 * cfg["kv_heads"]) * (C // cfg["NH"])  # NH query heads, NKV keys and values, HD each
    for l in range(L):
        p = f"language_model.encoder.layers.{l}."
        for n, out, inp in (("self_attention.query_key_value", qkv, C), ("self_attention.dense", C, C),
                            ("mlp.dense_h_to_4h", h4, C), ("mlp.dense_4h_to_h", C, FFN)):
            s[p + n + ".weight"] = (out, inp)
            if cfg["add_bias"]:
                s[p + n + ".bias"] = (out,)
    if cfg["untie"]:
        s["language_model.output_layer.weight"] = (V, C)
    return s


def norm(P, name, x, cfg):
    return twin_norm(P, name, x, cfg, G.LN_EPS)


linear = twin_linear


def rope_tables(T, cfg):
    """cos, sin [T, rot] of RotaryEmbedding(rot, theta)(T), in float64."""
    return twin_rope_tables(T, rotary_dim(cfg), cfg["theta"])


def layer(P, l, x, cfg, rope):
    """Megatron's pre-norm ParallelTransformerLayer l over x [B, T, C], causal; rope: (cos, sin) or None."""
    C, NH, NKV = cfg["C"], cfg["NH"], cfg["kv_heads"]
    HD = C // NH
    Bb, T = x.shape[0], x.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)
    p = f"language_model.encoder.layers.{l}."
    h = norm(P, p + "input_layernorm", x, cfg)
    q, k, v = twin_qkv(linear(P, p + "self_attention.query_key_value", h, cfg), NH, NKV, rope)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
    probs = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    ctx = (probs @ v).permute(0, 2, 1, 3).reshape(Bb, T, C)
    x = x + linear(P, p + "self_attention.dense", ctx, cfg)
    h = norm(P, p + "post_attention_layernorm", x, cfg)
    f = twin_mlp_act(linear(P, p + "mlp.dense_h_to_4h", h, cfg), cfg)
    return x + linear(P, p + "mlp.dense_4h_to_h", f, cfg)


def gpt_loss(P, tokens, targets, mask, cfg, rotary=None, kept=None, ltd_by_place=False):
    """sum(ce * mask) / sum(mask) of the forward in float64; rotary overrides cfg's (the rotary-matters check).
    kept [L, B, r]: random-LTD's kept positions for the layers in cfg["ltd_layers"] (DeepSpeed's GatherTokens, the
    layer on them turned by positions 0..r-1, ScatterTokens); ltd_by_place turns them by their places instead (the
    semantics Megatron-DeepSpeed does not have: the witness that the C side follows it)."""
    V = cfg["V"]
    T = tokens.shape[1]
    C = cfg["C"]
    emb = "language_model.embedding."
    x = P[emb + "word_embeddings.weight"][tokens]
    if cfg["pos_emb"]:
        x = x + P[emb + "position_embeddings.weight"][torch.arange(T)]
    on = cfg["rotary"] if rotary is None else rotary
    rope = rope_tables(T, cfg) if on else None
    for l in range(cfg["L"]):
        if kept is not None and cfg["ltd_layers"] >> l & 1:
            idx = kept[l][:, :, None].expand(-1, -1, C)  # [B, r, C]
            r = kept.shape[2]
            if not on:
                lrope = None
            elif ltd_by_place:  # per-row tables: each kept token's own place
                cos, sin = rope
                lrope = (cos[kept[l]][:, None], sin[kept[l]][:, None])  # [B, 1, r, rot]: broadcast over heads
            else:
                lrope = rope_tables(r, cfg)
            x = x.scatter(1, idx, layer(P, l, torch.gather(x, 1, idx), cfg, lrope))
            continue
        x = layer(P, l, x, cfg, rope)
    x = norm(P, "language_model.encoder.final_layernorm", x, cfg)
    w_out = P["language_model.output_layer.weight"] if cfg["untie"] else P[emb + "word_embeddings.weight"]
    logits = x @ w_out.T
    ce = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
    m = mask.reshape(-1)
    return (ce * m).sum() / m.sum()


def loss_and_grads(P, names, batches, cfg, ltd_by_place=False):
    """Mean loss over micro batches and the gradients of sum_mb loss_mb / n_mb (the engine's scaling)."""
    leaves = {n: P[n].detach().clone().requires_grad_(True) for n in names}
    total, losses = 0.0, []
    for tokens, targets, mask, kept in batches:
        loss = gpt_loss(leaves, tokens, targets, mask, cfg, kept=kept, ltd_by_place=ltd_by_place)
        losses.append(loss.item())
        total = total + loss / len(batches)
    total.backward()
    return sum(losses) / len(losses), {n: leaves[n].grad.detach() if leaves[n].grad is not None
                                       else torch.zeros_like(leaves[n]) for n in names}


def zero_grad_key_bias_rows(cfg):
    """Rows of the fused QKV bias whose gradient is zero in exact arithmetic: a group's key bias adds q_h.b_k to every
    score of a query row of each of its heads h (softmax-invariant per head, so the sum over the group's heads is
    zero too) only where the key is not rotated, i.e. dims [rot, HD) of each group's key with rotary, all HD dims
    without it. Group g's key is at rows g (R+2) HD + R HD + d of the grouped layout."""
    NH, NKV = cfg["NH"], cfg["kv_heads"]
    HD, R = cfg["C"] // NH, NH // NKV
    first = rotary_dim(cfg) if cfg["rotary"] else 0
    return np.array([g * (R + 2) * HD + R * HD + d for g in range(NKV) for d in range(first, HD)], dtype=np.int64)


def run_config(binary, tag, tmp):
    out = os.path.join(tmp, tag)
    proc = subprocess.run([binary, out] + DUMP_ARGS.get(tag, ["--llama", tag]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not check(proc.returncode == 0, f"{tag} dump", f"exit status {proc.returncode}"):
        print(proc.stdout)
        return
    d = G.Dump(out)
    c = d.load("config", np.int32).tolist()
    cfg = dict(zip(["L", "C", "NH", "FFN", "V", "maxpos", "T", "B", "untie", "recompute", "steps", "nmb",
                    "warmup", "decay", "gbs", "ltd_layers", "ltd_keep"], c))
    lv = d.load("llama", np.float64).reshape(-1).tolist()
    want_lv, want_untie, want_recompute = CASES[tag]
    ltd = "--random-ltd" in DUMP_ARGS.get(tag, [])
    check(len(lv) == len(LLAMA_FIELDS) and all(abs(a - b) <= 1e-12 * max(1.0, abs(b)) for a, b in zip(lv, want_lv))
          and cfg["untie"] == want_untie and cfg["recompute"] == want_recompute and (cfg["ltd_keep"] > 0) == ltd,
          f"{tag} variants", f"llama.npy {lv} (want {list(want_lv)}), untie {cfg['untie']} recompute "
          f"{cfg['recompute']} (want {want_untie} {want_recompute}), ltd_keep {cfg['ltd_keep']} (want "
          f"{'> 0' if ltd else 0})")
    for k, val in zip(LLAMA_FIELDS, lv):  # the twin follows what the dump says it built
        cfg[k] = val if k in ("theta", "percent") else int(val)
    if len(lv) != len(LLAMA_FIELDS) or cfg["kv_heads"] <= 0 or cfg["NH"] % cfg["kv_heads"]:
        raise ValueError(f"llama.npy {lv}: want {len(LLAMA_FIELDS)} fields ({', '.join(LLAMA_FIELDS)}) with kv_heads "
                         f"dividing NH = {cfg['NH']}")
    print(f"# {tag}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()) + f", rotary dims {rotary_dim(cfg)}")

    with open(os.path.join(out, "names.txt")) as f:
        names = [line.strip() for line in f if line.strip()]
    want = expected_shapes(cfg)
    check(sorted(names) == sorted(want) and len(names) == len(set(names)), f"{tag} parameter names",
          f"{len(names)} names" + ("" if set(names) == set(want) else
                                   f"; missing {sorted(set(want) - set(names))}, extra {sorted(set(names) - set(want))}"))
    P0 = {n: torch.from_numpy(d.load(n).astype(np.float64)) for n in names}  # every listed name must have its file
    bad = [f"{n} {tuple(P0[n].shape)} (want {want[n]})" for n in names if n in want and tuple(P0[n].shape) != want[n]]
    check(not bad, f"{tag} parameter shapes", "; ".join(bad) or f"{len(names)} tensors")
    names = [n for n in names if n in want]  # a missing parameter raises KeyError in the twin: a FAIL, not a skip

    # ---- one forward/backward ----
    batch0 = d.batch("", ltd)
    ref_loss, ref_grads = loss_and_grads(P0, names, [batch0], cfg)
    zt_loss = d.scalar("loss")
    e = abs(zt_loss - ref_loss) / abs(ref_loss)
    check(e <= G.TOL_LOSS, f"{tag} loss", f"zt {zt_loss:.7f} ref {ref_loss:.7f} rel {e:.2e} (tol {G.TOL_LOSS:.0e})")
    if cfg["rotary"]:  # a C side that ignored rotary would match the twin without it; it must be far from that
        plain_loss, plain_grads = loss_and_grads(P0, names, [batch0], dict(cfg, rotary=0))
        el = abs(zt_loss - plain_loss) / abs(plain_loss)
        eg, en = max((rel(d.load("grad." + n), plain_grads[n].numpy()), n) for n in names)
        check(eg > ROTARY_MATTERS, f"{tag} rotary applied",
              f"C gradients vs the twin's without rotary: largest rel {eg:.2e} ({en}; must exceed "
              f"{ROTARY_MATTERS:.0e}); loss zt {zt_loss:.7f} vs {plain_loss:.7f} without rotary, rel {el:.2e} (info)")
    if ltd:  # the kept tokens turn by 0..r-1: far from a twin that turns them by their places in the row
        _, place_grads = loss_and_grads(P0, names, [batch0], cfg, ltd_by_place=True)
        eg, en = max((rel(d.load("grad." + n), place_grads[n].numpy()), n) for n in names)
        check(eg > ROTARY_MATTERS, f"{tag} kept tokens turned by 0..r-1",
              f"C gradients vs the twin turning them by their places: largest rel {eg:.2e} ({en}; must exceed "
              f"{ROTARY_MATTERS:.0e})")
    worst = 0.0
    for n in names:
        g = d.load("grad." + n)
        gr = ref_grads[n].numpy()
        if g.shape != gr.shape:
            check(False, f"{tag} grad {n}", f"shape {g.shape}, expected {gr.shape}")
            continue
        e = rel(g, gr)
        worst = max(worst, e)
        check(e <= G.TOL_GRAD, f"{tag} grad {n}",
              f"rel {e:.2e} (||ref|| {np.linalg.norm(gr):.3e}, tol {G.TOL_GRAD:.0e})")
    print(f"# {tag}: max gradient rel error {worst:.2e}")

    # ---- three AdamW steps ----
    kb = zero_grad_key_bias_rows(cfg)
    qkv_bias = [n for n in names if n.endswith("self_attention.query_key_value.bias")]
    P = {n: P0[n].clone() for n in names}
    m = {n: torch.zeros_like(P[n]) for n in names}
    v = {n: torch.zeros_like(P[n]) for n in names}
    samples, lr_sum, clipped = 0, 0.0, 0
    worst_p = worst_d = 0.0
    for k in range(1, cfg["steps"] + 1):
        batches = [d.batch(f"step{k}.mb{j}.", ltd) for j in range(cfg["nmb"])]
        loss, grads = loss_and_grads(P, names, batches, cfg)
        lr = lr_at(samples, cfg["warmup"], cfg["decay"])
        norm_, clip = clip_and_adamw(P, m, v, grads, names, k, lr)
        clipped += clip < 1.0
        samples += cfg["gbs"]
        lr_sum += lr
        check_step_scalars(d, tag, k, loss, norm_, clip, lr, G.TOL_LOSS, G.TOL_GRAD)
        for n in names:
            zp = d.load(f"step{k}." + n).astype(np.float64)
            rp = P[n].numpy()
            dz, dr = zp - P0[n].numpy(), rp - P0[n].numpy()
            note = ""
            if n in qkv_bias and len(kb):
                # zero-gradient key rows: bounded movement only (test_gpt_parity.py's KEY_BIAS_MOVE)
                keep = np.ones(zp.shape[0], dtype=bool)
                keep[kb] = False
                move = float(np.abs(dz[kb] - dr[kb]).max())
                move = move / lr_sum if lr_sum > 0 else (0.0 if move == 0 else math.inf)
                check(move <= G.KEY_BIAS_MOVE, f"{tag} step{k} key bias {n}",
                      f"max |delta_zt - delta_ref| over {len(kb)} unrotated key rows = {move:.2e} x sum(lr) "
                      f"(tol {G.KEY_BIAS_MOVE})")
                zp, rp, dz, dr = zp[keep], rp[keep], dz[keep], dr[keep]
                note = " (unrotated key rows excluded)"
            ep = rel(zp, rp)
            nd = float(np.linalg.norm(dr))
            ed = rel(dz, dr) if nd > 0 else float(np.linalg.norm(dz))
            worst_p, worst_d = max(worst_p, ep), max(worst_d, ed)
            check(ep <= G.TOL_PARAM and ed <= G.TOL_DELTA, f"{tag} step{k} param {n}",
                  f"rel {ep:.2e} (tol {G.TOL_PARAM:.0e}), delta rel {ed:.2e}{note} (||delta|| {nd:.2e}, tol "
                  f"{G.TOL_DELTA:.0e})")
    check(clipped > 0, f"{tag} clipping exercised", f"clip coefficient < 1 in {clipped} of {cfg['steps']} steps")
    print(f"# {tag}: max parameter rel error {worst_p:.2e}, max update (delta) rel error {worst_d:.2e}")

    # the unrotated key rows' bias gradient: zero in exact arithmetic, so the C gradient there must be rounding noise
    if len(kb):
        for n in qkv_bias:
            g = d.load("grad." + n).astype(np.float64)
            r = float(np.linalg.norm(g[kb])) / float(np.linalg.norm(g))
            check(r <= G.KEY_BIAS_GRAD, f"{tag} key-bias grad {n}",
                  f"||g_key (unrotated)|| / ||g_qkv_bias|| = {r:.2e} (tol {G.KEY_BIAS_GRAD:.0e})")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    t0 = time.time()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zt_llama_parity_") as tmp:
        for tag in CASES:
            try:
                run_config(binary, tag, tmp)
            except Exception as e:  # a missing or malformed dump file, a missing parameter: report it, go on
                check(False, f"{tag} comparison", f"{type(e).__name__}: {e}")
    print(f"# {time.time() - t0:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
