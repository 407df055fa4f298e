#!/usr/bin/env python3
"""PyTorch parity of the T5 model: lm loss, every parameter gradient and three AdamW training steps of a tiny zerotron
T5 against an independent float64 PyTorch implementation of Megatron-DeepSpeed's T5Model (megatron/model/t5_model.py,
language_model.py, transformer.py; pretrain_t5.py's loss_func; the masks of megatron/data/t5_dataset.py) given the
same weights and batches.

Usage: test_t5_parity.py T5_PARITY_DUMP_BINARY
Runs the dump binary (tests/parity/t5_parity_dump.c) into a temporary directory for the configurations of CONFIGS
(the default pre-LN model with a 2-layer encoder and a 2-layer decoder; --apply-residual-connection-post-layernorm;
full activation recompute; a 3-layer decoder over the 2-layer encoder; the last three together; the Llama-style
--normalization rmsnorm --swiglu --disable-bias-linear; --squared-relu with --apply-layernorm-1p), recomputes
everything with torch autograd in float64 and prints a PASS/FAIL line per check, then "N passed, M failed". Exit
status 1 on any failure.

The model twinned here: the shared embedding (word embeddings [V, C] + learned positions [P, C]; the encoder's input
at positions 0..Te-1, the decoder's at 0..Td-1, the same tables; embedding dropout off); the encoder's pre-LN (or
post-LN-residual) layers with bidirectional self-attention, then language_model.encoder.final_layernorm; the
decoder's layers (input_layernorm, causal self-attention, post_attention_layernorm, inter_attention: query [C, C] over
the decoder, key_value [2C, C] over the encoder's final-layernorm output in Megatron's per-head layout (row
h*2*HD + {0,1}*HD + d is the key/value of head h), dense; post_inter_attention_layernorm, the MLP), then
language_model.decoder.final_layernorm; T5LMHead: logits = h @ word_embeddings^T + lm_head.bias; per-token
cross-entropy; lm loss = sum(loss * loss_mask) / sum(loss_mask). The MLP's GELU is Megatron's default fused
bias-GELU (bias_gelu_fusion, on unless --no-bias-gelu-fusion: the tanh approximation), as in test_bert_parity.py.

The reference follows Megatron, not zerotron, where the two differ without changing the result: Megatron's masks
(t5_dataset.py's make_attention_mask(query_tokens, key_tokens), token >= 1 is real) mask a score when the query OR
the key is padding (the encoder's self-attention, the decoder's self-attention on top of the causal history mask, and
the cross-attention; a padding query row then attends uniformly, -10000 everywhere); zerotron masks the encoder's
padding as keys only (in the encoder's self-attention and the cross-attention) and the decoder's self-attention is
causal only. The padded query rows never reach the loss, so only losses and gradients are compared: the decoder's
padded positions trail its real tokens (so under the causal mask no real query sees them) and have loss mask 0, and
the encoder's padded positions are masked as keys in every encoder layer and in the cross-attention (so nothing real
reads their values).

Relative errors are norm-wise per tensor, as in test_gpt_parity.py: rel(a, ref) = ||a - ref||_2 / ||ref||_2."""
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
    print(f"FAIL t5_parity: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_lib import check, check_step_scalars, clip_and_adamw, key_bias_rows, lr_at, no_weight_decay, rel, summary  # noqa: E402
from parity_lib import twin_linear, twin_mlp_act, twin_norm, twin_qkv, twin_rope_tables  # noqa: E402

torch.set_default_dtype(torch.float64)

# Tolerances and their reasons: as test_gpt_parity.py (fp32 rounding of the C forward/backward ~1e-7..1e-6).
TOL_LOSS = 1e-5        # relative, the loss of a forward
TOL_GRAD = 1e-5        # relative norm-wise, every gradient tensor and the global grad norm
TOL_PARAM = 1e-5       # relative norm-wise, every parameter tensor after each step
TOL_DELTA = 1e-3       # relative norm-wise, each parameter's change since step 0 (see test_gpt_parity.py)
# The key rows of the self-attentions' fused QKV bias and of the cross-attention's key_value bias: their gradient is
# zero in exact arithmetic (every unmasked score of a query row shifts by q.b_k), so they are checked as in
# test_bert_parity.py.
KEY_BIAS_MOVE = 0.1
KEY_BIAS_GRAD = 1e-5

LN_EPS = 1e-5
PAD_ID = 0  # Megatron's T5 pad id in the dump's batches (real tokens are >= 1)


class Dump:
    def __init__(self, path):
        self.path = path

    def load(self, name, dtype=np.float32):
        a = np.load(os.path.join(self.path, name + ".npy"), allow_pickle=False)
        if a.dtype != dtype:
            raise ValueError(f"{name}.npy has dtype {a.dtype}, expected {dtype}")
        return a

    def scalar(self, name):
        return float(self.load(name).reshape(-1)[0])

    def batch(self, prefix):
        """The encoder's tokens and padding flags (bool, True = pad) [B, Te]; the decoder's tokens, labels and loss
        mask [B, Td]."""
        i64 = lambda n: torch.from_numpy(self.load(prefix + n, np.int32).astype(np.int64))
        return {"tokens": i64("tokens"), "padding": i64("padding") != 0, "dec_tokens": i64("dec_tokens"),
                "labels": i64("labels"),
                "loss_mask": torch.from_numpy(self.load(prefix + "loss_mask").astype(np.float64))}


LAYER_COMMON = ["input_layernorm.weight", "input_layernorm.bias",
                "self_attention.query_key_value.weight", "self_attention.query_key_value.bias",
                "self_attention.dense.weight", "self_attention.dense.bias",
                "post_attention_layernorm.weight", "post_attention_layernorm.bias"]
LAYER_CROSS = ["inter_attention.query.weight", "inter_attention.query.bias",
               "inter_attention.key_value.weight", "inter_attention.key_value.bias",
               "inter_attention.dense.weight", "inter_attention.dense.bias",
               "post_inter_attention_layernorm.weight", "post_inter_attention_layernorm.bias"]
LAYER_MLP = ["mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"]


def expected_names(L, DL, rmsnorm=0, add_bias=1, pos_emb=1):
    """Megatron's T5Model names; RMSNorm has no bias, --disable-bias-linear drops the attention's (the
    cross-attention's too) and the MLP's biases (lm_head.bias stays), rotary embeddings the learned positions."""
    norms = ("layernorm.bias",)
    linear = ("query_key_value.bias", "dense.bias", "query.bias", "key_value.bias", "dense_h_to_4h.bias",
              "dense_4h_to_h.bias")
    return [n for n in expected_names_default(L, DL) if not (rmsnorm and n.endswith(norms))
            and not (not add_bias and n.endswith(linear))
            and not (not pos_emb and n.endswith("position_embeddings.weight"))]


def expected_names_default(L, DL):
    emb = "language_model.embedding."
    names = [emb + "word_embeddings.weight", emb + "position_embeddings.weight"]
    for l in range(L):
        names += [f"language_model.encoder.layers.{l}." + s for s in LAYER_COMMON + LAYER_MLP]
    names += ["language_model.encoder.final_layernorm.weight", "language_model.encoder.final_layernorm.bias"]
    for l in range(DL):
        names += [f"language_model.decoder.layers.{l}." + s for s in LAYER_COMMON + LAYER_CROSS + LAYER_MLP]
    names += ["language_model.decoder.final_layernorm.weight", "language_model.decoder.final_layernorm.bias",
              "lm_head.bias"]
    return names


def kv_key_rows(C, NH):
    """The key rows of the cross-attention's key_value [2C] in Megatron's per-head layout (h*2*HD + d)."""
    HD = C // NH
    return np.array([h * 2 * HD + d for h in range(NH) for d in range(HD)])


def make_attention_mask(source_block, target_block):
    """t5_dataset.py's make_attention_mask for a batch: [b, sq, sk], True where query and key are both real."""
    return (target_block[:, None, :] >= 1) & (source_block[:, :, None] >= 1)


def make_history_mask(block):
    """t5_dataset.py's make_history_mask: [b, s, s], True where the key is not after the query."""
    s = block.shape[1]
    ar = torch.arange(s)
    return (ar[None, :] <= ar[:, None]).unsqueeze(0).expand(block.shape[0], s, s)


def t5_forward(P, b, cfg):
    """Megatron's T5Model forward in float64 (dropout off). Returns (lm_logits [B, Td, V], lm loss)."""
    L, DL, C, NH, V = cfg["L"], cfg["dec_layers"], cfg["C"], cfg["NH"], cfg["V"]
    post_ln = cfg["post_ln"]
    HD = C // NH
    enc_tokens, dec_tokens = b["tokens"], b["dec_tokens"]
    Bb, Te = enc_tokens.shape
    Td = dec_tokens.shape[1]
    emb = "language_model.embedding."
    W = P[emb + "word_embeddings.weight"]
    Ppos = P[emb + "position_embeddings.weight"] if cfg["pos_emb"] else None

    # pretrain_t5.py's get_batch: the dataset's masks (1 = attend) turned into "True = masked" (< 0.5)
    enc_mask = ~make_attention_mask(enc_tokens, enc_tokens)
    dec_mask = ~(make_attention_mask(dec_tokens, dec_tokens) & make_history_mask(dec_tokens))
    enc_dec_mask = ~make_attention_mask(dec_tokens, enc_tokens)

    def ln(x, name):  # RMSNorm, LayerNorm or LayerNorm-1p
        return twin_norm(P, name, x, cfg, LN_EPS)

    def linear(name, x):
        return twin_linear(P, name, x, cfg)

    def core_attention(q, k, v, mask):
        """q [B, NH, Tq, HD], k/v [B, NH, Tk, HD], mask [B, Tq, Tk] (True = masked) -> context [B, Tq, C]."""
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        probs = torch.softmax(scores.masked_fill(mask.unsqueeze(1), -10000.0), dim=-1)  # attention_mask_func
        return (probs @ v).permute(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], C)

    def self_attention(p, x, mask):
        # Megatron's per-head layout [.., head, (q, k, v), d]; rotary (the encoder's and the decoder's self-attention,
        # positions 0 .. T - 1 of RotaryEmbedding(seq_length) sliced; not the cross-attention)
        rope = twin_rope_tables(x.shape[1], cfg["rot"], float(cfg["theta"])) if cfg["rot"] else None
        q, k, v = twin_qkv(linear(p + "query_key_value", x), NH, NH, rope)
        ctx = core_attention(q, k, v, mask)
        return linear(p + "dense", ctx)

    def inter_attention(p, x, mem, mask):
        q = linear(p + "query", x).view(Bb, x.shape[1], NH, HD).permute(0, 2, 1, 3)
        kv = linear(p + "key_value", mem).view(Bb, mem.shape[1], NH, 2, HD)
        k, v = (kv[:, :, :, i, :].permute(0, 2, 1, 3) for i in range(2))  # [.., head, (k, v), d]
        ctx = core_attention(q, k, v, mask)
        return linear(p + "dense", ctx)

    def mlp(p, x):
        return linear(p + "mlp.dense_4h_to_h", twin_mlp_act(linear(p + "mlp.dense_h_to_4h", x), cfg))

    def layer(p, x, mask, mem=None, cross_mask=None):
        """ParallelTransformerLayer: LayerType.encoder (mem None) or LayerType.decoder."""
        ln1 = ln(x, p + "input_layernorm")
        ln_in = (ln1 if post_ln else x) + self_attention(p + "self_attention.", ln1, mask)
        ln_out = ln(ln_in, p + "post_attention_layernorm")
        if mem is not None:  # default_decoder_cross_attention
            ln_in = (ln_out if post_ln else ln_in) + inter_attention(p + "inter_attention.", ln_out, mem, cross_mask)
            ln_out = ln(ln_in, p + "post_inter_attention_layernorm")
        return (ln_out if post_ln else ln_in) + mlp(p, ln_out)

    # the encoder
    x = W[enc_tokens] + (Ppos[torch.arange(Te)] if Ppos is not None else 0)  # t5_position_ids
    for l in range(L):
        x = layer(f"language_model.encoder.layers.{l}.", x, enc_mask)
    enc_out = ln(x, "language_model.encoder.final_layernorm")
    # the decoder (the same embedding module)
    y = W[dec_tokens] + (Ppos[torch.arange(Td)] if Ppos is not None else 0)
    for l in range(DL):
        y = layer(f"language_model.decoder.layers.{l}.", y, dec_mask, enc_out, enc_dec_mask)
    h = ln(y, "language_model.decoder.final_layernorm")
    # T5LMHead: parallel_lm_logits with the shared word embeddings and lm_head.bias
    logits = h @ W.T + P["lm_head.bias"]
    ce = F.cross_entropy(logits.reshape(-1, V), b["labels"].reshape(-1), reduction="none")
    lm = b["loss_mask"].reshape(-1)
    return logits, (ce * lm).sum() / lm.sum()  # pretrain_t5.py's loss_func


def loss_and_grads(P, names, batches, cfg):
    """Mean lm loss over micro batches and the gradients of sum_mb loss_mb / n_mb."""
    leaves = {n: P[n].detach().clone().requires_grad_(True) for n in names}
    acc = 0.0
    losses = []
    for b in batches:
        _, loss = t5_forward(leaves, b, cfg)
        losses.append(loss.item())
        acc = acc + loss / len(batches)
    acc.backward()
    return sum(losses) / len(losses), {n: leaves[n].grad.detach() if leaves[n].grad is not None
                                       else torch.zeros_like(leaves[n]) for n in names}


CONFIG_KEYS = ["L", "C", "NH", "FFN", "V", "maxpos", "T", "B", "dec_layers", "Td", "post_ln", "recompute", "steps",
               "nmb", "warmup", "decay", "gbs", "rmsnorm", "swiglu", "add_bias", "act", "ln1p", "rot", "theta",
               "pos_emb"]


def read_dump(out):
    d = Dump(out)
    cfg = dict(zip(CONFIG_KEYS, d.load("config", np.int32).tolist()))
    with open(os.path.join(out, "names.txt")) as f:
        names = [line.strip() for line in f if line.strip()]
    return d, cfg, names


def key_rows_of(name, C, NH, rot=0):
    """The rows of a bias whose gradient is zero in exact arithmetic (None for the other parameters); rotary turns
    the self-attention's first rot dims of each key, whose bias then shifts scores by position."""
    if name.endswith("self_attention.query_key_value.bias"):
        return key_bias_rows(C, NH, rot)
    if name.endswith("inter_attention.key_value.bias"):
        return kv_key_rows(C, NH)
    return None


def check_batch(tag, what, b):
    """The dump's batch is shaped as the header of t5_parity_dump.c says (Megatron's masks and zerotron's flags agree,
    padding trails, the loss mask covers exactly the real decoder positions); returns whether it is."""
    pad_ok = bool(torch.equal(b["padding"], b["tokens"] == PAD_ID))
    dec_real = b["dec_tokens"] != PAD_ID
    mask_ok = bool(torch.equal(b["loss_mask"] != 0, dec_real))
    # real positions first, then padding: each row's "is real" flags never rise
    trailing = all(bool((r[:, :-1].int() >= r[:, 1:].int()).all()) for r in (~b["padding"], dec_real))
    some_pad = bool(b["padding"].any()) and bool((~dec_real).any())
    return check(pad_ok and mask_ok and trailing and some_pad, f"{tag} {what} batch",
                 f"padding = (tokens == {PAD_ID}): {pad_ok}, loss mask = real decoder tokens: {mask_ok}, trailing "
                 f"padding: {trailing}, encoder pads {int(b['padding'].sum())}, decoder pads {int((~dec_real).sum())}")


def run_config(binary, tag, extra_args, tmp):
    out = os.path.join(tmp, tag)
    proc = subprocess.run([binary, out] + extra_args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not check(proc.returncode == 0, f"{tag} dump", f"exit status {proc.returncode}"):
        print(proc.stdout)
        return
    d, cfg, names = read_dump(out)
    print(f"# {tag}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))

    want = expected_names(cfg["L"], cfg["dec_layers"], cfg["rmsnorm"], cfg["add_bias"], cfg["pos_emb"])
    check(sorted(names) == sorted(want) and len(names) == len(set(names)), f"{tag} parameter names",
          f"{len(names)} names" + ("" if set(names) == set(want) else
                                   f"; missing {sorted(set(want) - set(names))}, extra {sorted(set(names) - set(want))}"))
    names = [n for n in names if n in want]
    P0 = {n: torch.from_numpy(d.load(n).astype(np.float64)) for n in names}
    C, NH = cfg["C"], cfg["NH"]

    # ---- one forward/backward ----
    nl = int(d.load("nlosses", np.int32)[0])
    check(nl == 1, f"{tag} number of losses", f"losses.n = {nl}")
    b0 = d.batch("")
    check_batch(tag, "forward/backward", b0)
    ref_lm, ref_grads = loss_and_grads(P0, names, [b0], cfg)
    zt = d.scalar("lm_loss")
    worst_loss = abs(zt - ref_lm) / abs(ref_lm)
    check(worst_loss <= TOL_LOSS, f"{tag} lm loss", f"zt {zt:.7f} ref {ref_lm:.7f} rel {worst_loss:.2e} "
          f"(tol {TOL_LOSS:.0e})")
    worst = 0.0
    for n in names:
        g = d.load("grad." + n)
        gr = ref_grads[n].numpy()
        if g.shape != gr.shape:
            check(False, f"{tag} grad {n}", f"shape {g.shape}, expected {gr.shape}")
            continue
        e = rel(g, gr)
        worst = max(worst, e)
        check(e <= TOL_GRAD, f"{tag} grad {n}", f"rel {e:.2e} (||ref|| {np.linalg.norm(gr):.3e}, tol {TOL_GRAD:.0e})")
    print(f"# {tag}: max loss rel error {worst_loss:.2e}, max gradient rel error {worst:.2e}")

    # ---- three AdamW steps ----
    P = {n: P0[n].clone() for n in names}
    m = {n: torch.zeros_like(P[n]) for n in names}
    v = {n: torch.zeros_like(P[n]) for n in names}
    samples = 0
    lr_sum = 0.0
    clipped = 0
    worst_p = worst_d = 0.0
    for k in range(1, cfg["steps"] + 1):
        batches = [d.batch(f"step{k}.mb{j}.") for j in range(cfg["nmb"])]
        if k == 1:
            check_batch(tag, "step1.mb0", batches[0])
        loss, grads = loss_and_grads(P, names, batches, cfg)
        lr = lr_at(samples, cfg["warmup"], cfg["decay"])
        norm, clip = clip_and_adamw(P, m, v, grads, names, k, lr)
        clipped += clip < 1.0
        samples += cfg["gbs"]
        lr_sum += lr

        s = f"step{k}."
        check_step_scalars(d, tag, k, loss, norm, clip, lr, TOL_LOSS, TOL_GRAD)
        for n in names:
            zp = d.load(s + n).astype(np.float64)
            rp = P[n].numpy()
            ep = rel(zp, rp)
            dz, dr = zp - P0[n].numpy(), rp - P0[n].numpy()
            note = ""
            kb = key_rows_of(n, C, NH, cfg["rot"])
            if kb is not None:
                keep = np.ones(zp.shape[0], dtype=bool)
                keep[kb] = False
                move = float(np.abs(dz[kb] - dr[kb]).max())
                move = move / lr_sum if lr_sum > 0 else (0.0 if move == 0 else math.inf)
                check(move <= KEY_BIAS_MOVE, f"{tag} step{k} key bias {n}",
                      f"max |delta_zt - delta_ref| over key rows = {move:.2e} x sum(lr) (tol {KEY_BIAS_MOVE})")
                zp, rp, dz, dr = zp[keep], rp[keep], dz[keep], dr[keep]
                ep = rel(zp, rp)
                note = " (key rows excluded)"
            nd = float(np.linalg.norm(dr))
            ed = rel(dz, dr) if nd > 0 else float(np.linalg.norm(dz))
            worst_p, worst_d = max(worst_p, ep), max(worst_d, ed)
            check(ep <= TOL_PARAM and ed <= TOL_DELTA, f"{tag} step{k} param {n}",
                  f"rel {ep:.2e} (tol {TOL_PARAM:.0e}), delta rel {ed:.2e}{note} (||delta|| {nd:.2e}, tol "
                  f"{TOL_DELTA:.0e})")
    check(clipped > 0, f"{tag} clipping exercised", f"clip coefficient < 1 in {clipped} of {cfg['steps']} steps")
    print(f"# {tag}: max parameter rel error {worst_p:.2e}, max update (delta) rel error {worst_d:.2e}")

    for n in names:
        kb = key_rows_of(n, C, NH, cfg["rot"])
        if kb is None:
            continue
        g = d.load("grad." + n).astype(np.float64)
        r = float(np.linalg.norm(g[kb])) / float(np.linalg.norm(g))
        check(r <= KEY_BIAS_GRAD, f"{tag} key-bias grad {n}",
              f"||g_key|| / ||g_bias|| = {r:.2e} (tol {KEY_BIAS_GRAD:.0e})")


CONFIGS = [("default", []), ("post_ln", ["--post-ln"]), ("recompute", ["--recompute"]),
           ("dec_layers3", ["--dec-layers", "3"]),
           ("post_ln_recompute_dec_layers3", ["--post-ln", "--recompute", "--dec-layers", "3"]),
           ("llama", ["--llama"]), ("sq_1p_dec_layers3", ["--sq-1p", "--dec-layers", "3"]), ("rope", ["--rope"])]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    t0 = time.time()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zt_t5_parity_") as tmp:
        for tag, args in CONFIGS:
            try:
                run_config(binary, tag, args, tmp)
            except Exception as e:  # a missing or malformed dump file: report it, go on
                check(False, f"{tag} comparison", f"{type(e).__name__}: {e}")
    print(f"# {time.time() - t0:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
