#!/usr/bin/env python3
"""PyTorch parity of the BERT model: lm loss, sop loss, every parameter gradient and three AdamW training steps of a
tiny zerotron BERT against an independent float64 PyTorch implementation of Megatron-DeepSpeed's BertModel
(megatron/model/bert_model.py, language_model.py, transformer.py; pretrain_bert.py's loss_func) given the same
weights and batches.

Usage: test_bert_parity.py BERT_PARITY_DUMP_BINARY
Runs the dump binary (tests/parity/bert_parity_dump.c) into a temporary directory for the configurations of CONFIGS
(the default pre-LN model with the binary head; --apply-residual-connection-post-layernorm; --bert-no-binary-head;
full activation recompute; random-LTD on layer 1, 10 of 16 tokens, alone and with post-LN and recompute: the layer
runs on the listed tokens with the padding mask of those tokens, as DeepSpeed's bert_sample_tokens gathers it; the
Llama-style --normalization rmsnorm --swiglu --disable-bias-linear; --openai-gelu with --apply-layernorm-1p, post-LN;
rotary embeddings on half of each head (theta 500, no learned positions) with 2 key/value heads of 4 and no biases,
alone and with random-LTD, whose kept tokens turn by positions 0 .. r-1 as in Megatron-DeepSpeed's
apply_rotary_pos_emb, which slices the table to the length of the tensor it is given; fine-tuned with --cls 3,
Megatron's Classification head of 3 classes (megatron/model/classification.py), and with --cls 1 --choices 4, its
MultipleChoice head of RACE (multiple_choice.py), 8 rows = 2 samples of 4 choices), and with --cls 1 --regression
STS-B's one output and mean squared error (tasks/finetune_utils.py mse_loss_func),
recomputes everything with torch autograd in float64 and prints a PASS/FAIL line per
check, then "N passed, M failed". Exit status 1 on any failure.

The fine-tuned twin (cls_forward) is Megatron's: the language model with two token types and the pooler (tanh of
language_model.pooler.dense on sequence index 0 of the final layernorm's output), the classification dropout (off:
--hidden-dropout 0), classification_head [K, C] or multichoice_head [1, C], the logits viewed as
[-1, num_classes] or [-1, num_choices] (a sample's choices are consecutive rows), and tasks/finetune_utils.py's
cross_entropy_loss_func (torch.nn.CrossEntropyLoss, the mean over the samples), reported as "lm loss"; no lm_head,
binary_head or output layer, so the parameter names must be exactly that model's. The model's predictions
(zt_model.predictions, one a sample) are checked against the twin's argmax after the single forward and after every
training micro batch's forward. Negative controls: the twin pooling sequence index 1 instead of 0, and (with choices)
grouping the rows strided (view(num_choices, -1).t()) instead of consecutively, must both miss the dumped loss.

The reference follows Megatron, not zerotron, where the two differ without changing the result: Megatron's padding
mask (bert_extended_attention_mask) masks a score when the query OR the key is padding (a padding query row then
attends uniformly, -10000 everywhere); zerotron masks keys only. The padding rows never reach a loss (their loss
mask is 0, the pooler reads position 0, and as keys they are masked), so only losses and gradients are compared.

Relative errors are norm-wise per tensor, as in test_gpt_parity.py: rel(a, ref) = ||a - ref||_2 / ||ref||_2.

The module also exports bert_forward() (the Megatron-named float64 twin), used by test_bert_hf_export.py."""
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
    print(f"FAIL bert_parity: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_lib import check, check_step_scalars, clip_and_adamw, key_bias_rows, lr_at, no_weight_decay, rel, summary  # noqa: E402
from parity_lib import twin_linear, twin_mlp_act, twin_norm, twin_qkv, twin_rope_tables  # noqa: E402

torch.set_default_dtype(torch.float64)

# Tolerances and their reasons: as test_gpt_parity.py (fp32 rounding of the C forward/backward ~1e-7..1e-6).
TOL_LOSS = 1e-5        # relative, each loss of a forward
TOL_GRAD = 1e-5        # relative norm-wise, every gradient tensor and the global grad norm
TOL_PARAM = 1e-5       # relative norm-wise, every parameter tensor after each step
TOL_DELTA = 1e-3       # relative norm-wise, each parameter's change since step 0 (see test_gpt_parity.py)
# The key rows of the fused QKV bias: their gradient is zero in exact arithmetic (with the padding mask too, a
# query row's unmasked scores all shift by q.b_k), so they are checked as in test_gpt_parity.py.
KEY_BIAS_MOVE = 0.1
KEY_BIAS_GRAD = 1e-5
# multichoice_head.bias (one scalar added to every choice's logit) has the same property: the softmax over a sample's
# choices is shift-invariant, so its gradient is zero in exact arithmetic (fp32 rounding leaves ~1e-8, float64
# ~1e-17). Its gradient is checked against zero relative to ||grad multichoice_head.weight|| (KEY_BIAS_GRAD); after
# the steps only a bound on its move: Adam normalizes a rounding-noise gradient to a step of about lr, whatever its
# size, so the two sides may differ by up to about sum(lr).
SHIFT_BIAS = "multichoice_head.bias"
SHIFT_BIAS_MOVE = 1.5

LN_EPS = 1e-5


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

    def batch(self, prefix, ltd=False):
        """tokens, token types, labels, padding (bool, True = pad), loss mask, sentence labels; with random-LTD the
        kept positions [L, B, r]."""
        i64 = lambda n: torch.from_numpy(self.load(prefix + n, np.int32).astype(np.int64))
        return {"tokens": i64("tokens"), "types": i64("token_types"), "labels": i64("labels"),
                "padding": i64("padding") != 0, "loss_mask": torch.from_numpy(self.load(prefix + "loss_mask")
                                                                              .astype(np.float64)),
                "sentence": i64("sentence_labels"), "kept": i64("ltd_kept") if ltd else None}


def expected_names(L, binary_head, rmsnorm=0, add_bias=1, pos_emb=1, cls=0, choices=0):
    """Megatron's BertModel names; RMSNorm has no bias (the transformer's norms: not lm_head.layernorm, a LayerNorm
    in Megatron whatever --normalization says), --disable-bias-linear drops the attention's and the MLP's biases,
    rotary or no position embeddings the learned positions. cls > 0: Classification's (choices 1) or
    MultipleChoice's (choices > 1) names: the language model with token types and the pooler, then
    classification_head or multichoice_head; no lm_head, binary_head or output layer."""
    names = expected_names_default(L, binary_head) if not cls else expected_names_cls(L, choices)
    norms = ("input_layernorm.bias", "post_attention_layernorm.bias", "encoder.final_layernorm.bias")
    linear = ("query_key_value.bias", "self_attention.dense.bias", "dense_h_to_4h.bias", "dense_4h_to_h.bias")
    return [n for n in names if not (rmsnorm and n.endswith(norms)) and not (not add_bias and n.endswith(linear))
            and not (not pos_emb and n.endswith("position_embeddings.weight"))]


def expected_names_default(L, binary_head):
    emb = "language_model.embedding."
    names = [emb + "word_embeddings.weight", emb + "position_embeddings.weight"]
    if binary_head:
        names.append(emb + "tokentype_embeddings.weight")
    for l in range(L):
        p = f"language_model.encoder.layers.{l}."
        for s in ["input_layernorm.weight", "input_layernorm.bias",
                  "self_attention.query_key_value.weight", "self_attention.query_key_value.bias",
                  "self_attention.dense.weight", "self_attention.dense.bias",
                  "post_attention_layernorm.weight", "post_attention_layernorm.bias",
                  "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias",
                  "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"]:
            names.append(p + s)
    names += ["language_model.encoder.final_layernorm.weight", "language_model.encoder.final_layernorm.bias"]
    if binary_head:
        names += ["language_model.pooler.dense.weight", "language_model.pooler.dense.bias"]
    names += ["lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layernorm.weight", "lm_head.layernorm.bias",
              "lm_head.bias"]
    if binary_head:
        names += ["binary_head.weight", "binary_head.bias"]
    return names


def expected_names_cls(L, choices):
    """Megatron's Classification / MultipleChoice state (language_model.*, then the head), spelled out here rather
    than derived from the BertModel list, so that a leftover pretraining head is an extra name."""
    emb = "language_model.embedding."
    names = [emb + "word_embeddings.weight", emb + "position_embeddings.weight", emb + "tokentype_embeddings.weight"]
    for l in range(L):
        p = f"language_model.encoder.layers.{l}."
        names += [p + s + t for s in ["input_layernorm", "self_attention.query_key_value", "self_attention.dense",
                                      "post_attention_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"]
                  for t in (".weight", ".bias")]
    names += ["language_model.encoder.final_layernorm.weight", "language_model.encoder.final_layernorm.bias",
              "language_model.pooler.dense.weight", "language_model.pooler.dense.bias"]
    head = "multichoice_head" if choices > 1 else "classification_head"
    return names + [head + ".weight", head + ".bias"]


def bert_forward(P, b, cfg):
    """Megatron's BertModel forward in float64 (dropout off). Returns (lm_logits [B, T, V], binary logits [B, 2] or
    None, lm loss, sop loss or None)."""
    h = bert_encode(P, b, cfg)
    C, V = cfg["C"], cfg["V"]
    emb = "language_model.embedding."
    # BertLMHead: dense -> erf GELU (tanh with --openai-gelu) -> layernorm -> tied output layer + bias
    y = F.gelu(h @ P["lm_head.dense.weight"].T + P["lm_head.dense.bias"],
               approximate="tanh" if cfg.get("head_tanh", 0) else "none")
    y = F.layer_norm(y, (C,), P["lm_head.layernorm.weight"], P["lm_head.layernorm.bias"], LN_EPS)
    logits = y @ P[emb + "word_embeddings.weight"].T + P["lm_head.bias"]
    ce = F.cross_entropy(logits.reshape(-1, V), b["labels"].reshape(-1), reduction="none")
    lm = b["loss_mask"].reshape(-1)
    lm_loss = (ce * lm).sum() / lm.sum()
    if not cfg["binary_head"]:
        return logits, None, lm_loss, None
    pooled = torch.tanh(h[:, 0] @ P["language_model.pooler.dense.weight"].T + P["language_model.pooler.dense.bias"])
    bl = pooled @ P["binary_head.weight"].T + P["binary_head.bias"]
    sop_loss = F.cross_entropy(bl, b["sentence"], ignore_index=-1)
    return logits, bl, lm_loss, sop_loss


def cls_forward(P, b, cfg, pool_index=0, strided=False):
    """Megatron's Classification (choices 1) / MultipleChoice (choices > 1) forward in float64, dropout off (the
    classification dropout is torch.nn.Dropout(--hidden-dropout), 0 here). Returns (scores [samples, classes or
    choices], the mean cross-entropy over the samples). pool_index and strided are the negative controls: the pooler on
    another sequence index, the choices of a sample taken strided (view(choices, -1).t()) instead of consecutive."""
    h = bert_encode(P, b, cfg)  # [b, s, h]: the encoder's output after final_layernorm
    # Pooler: hidden_states[sequence_index] (index 0: the [CLS] position), dense, tanh
    pooled = torch.tanh(h[:, pool_index, :] @ P["language_model.pooler.dense.weight"].T
                        + P["language_model.pooler.dense.bias"])
    out = pooled  # classification_dropout / multichoice_dropout with p = 0: the identity
    choices = cfg["choices"]
    if choices > 1:  # MultipleChoice: multichoice_head [1, C], logits.view(-1, num_choices)
        logits = out @ P["multichoice_head.weight"].T + P["multichoice_head.bias"]
        scores = logits.view(choices, -1).t() if strided else logits.view(-1, choices)
    else:  # Classification: classification_head [K, C], logits.view(-1, num_classes)
        logits = out @ P["classification_head.weight"].T + P["classification_head.bias"]
        scores = logits.view(-1, cfg["cls"])
    if cfg.get("regression", 0):  # STS-B's mse_loss_func: MSELoss(logits.view(-1), labels.float())
        return scores, torch.nn.MSELoss()(logits.view(-1), b["sentence"].to(logits.dtype))
    loss = torch.nn.CrossEntropyLoss()(scores, b["sentence"])  # cross_entropy_loss_func: the mean over the samples
    return scores, loss


def bert_encode(P, b, cfg):
    """Megatron's language model (embedding, encoder, final_layernorm) in float64 (dropout off): [B, T, C]."""
    L, C, NH = cfg["L"], cfg["C"], cfg["NH"]
    post_ln = cfg["post_ln"]
    HD = C // NH
    tokens = b["tokens"]
    Bb, T = tokens.shape
    emb = "language_model.embedding."
    # Embedding: word + position (not with rotary or no position embeddings) (+ tokentype)
    x = P[emb + "word_embeddings.weight"][tokens]
    if cfg.get("pos_emb", 1):
        x = x + P[emb + "position_embeddings.weight"][torch.arange(T)]
    if cfg["binary_head"] or cfg.get("cls", 0):  # BertModel with the binary head; Classification, MultipleChoice
        x = x + P[emb + "tokentype_embeddings.weight"][b["types"]]

    def extended_mask(padding):
        """bert_extended_attention_mask: [b, 1, s, s], True where query or key is padding."""
        keep = (~padding).double()
        return (keep.unsqueeze(1) * keep.unsqueeze(2)).unsqueeze(1) < 0.5

    def norm(name, x):  # the transformer's norms (not lm_head.layernorm): RMSNorm, LayerNorm or LayerNorm-1p
        return twin_norm(P, name, x, cfg, LN_EPS)

    def linear(name, x):
        return twin_linear(P, name, x, cfg)

    def layer(l, x, mask):
        Tl = x.shape[1]
        p = f"language_model.encoder.layers.{l}."
        ln1 = norm(p + "input_layernorm", x)
        # Megatron's layout: per head [q, k, v]; with --num-key-value-heads per group [R queries, k, v]; rotary on
        # the first rot dims of q and k at positions 0 .. T - 1
        rope = twin_rope_tables(Tl, cfg["rot"], float(cfg["theta"])) if cfg.get("rot", 0) else None
        q, k, v = twin_qkv(linear(p + "self_attention.query_key_value", ln1), NH, cfg.get("kv_heads", NH), rope)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        probs = torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1)  # attention_mask_func
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(Bb, Tl, C)
        attn = linear(p + "self_attention.dense", ctx)
        ln_in = (ln1 if post_ln else x) + attn
        ln2 = norm(p + "post_attention_layernorm", ln_in)
        f = twin_mlp_act(linear(p + "mlp.dense_h_to_4h", ln2), cfg)
        return (ln2 if post_ln else ln_in) + linear(p + "mlp.dense_4h_to_h", f)

    mask = extended_mask(b["padding"])
    for l in range(L):
        if b.get("kept") is not None and cfg["ltd_layers"] >> l & 1:
            # random-LTD (DeepSpeed's GatherTokens, bert_sample_tokens' mask of the kept tokens, ScatterTokens)
            kept = b["kept"][l]
            idx = kept[:, :, None].expand(-1, -1, C)
            x = x.scatter(1, idx, layer(l, torch.gather(x, 1, idx), extended_mask(torch.gather(b["padding"], 1, kept))))
        else:
            x = layer(l, x, mask)
    enc = "language_model.encoder."
    return norm(enc + "final_layernorm", x)


def bert_losses(P, b, cfg):
    if cfg.get("cls", 0):  # one loss, "lm loss"
        _, loss = cls_forward(P, b, cfg)
        return loss, None, loss
    _, _, lm, sop = bert_forward(P, b, cfg)
    return lm, sop, (lm + sop if sop is not None else lm)


def loss_and_grads(P, names, batches, cfg):
    """Mean total loss over micro batches, the last forward's (lm, sop) and the gradients of sum_mb total_mb / n_mb."""
    leaves = {n: P[n].detach().clone().requires_grad_(True) for n in names}
    acc = 0.0
    losses = []
    parts = None
    for b in batches:
        lm, sop, total = bert_losses(leaves, b, cfg)
        losses.append(total.item())
        parts = (lm.item(), sop.item() if sop is not None else None)
        acc = acc + total / len(batches)
    acc.backward()
    return sum(losses) / len(losses), parts, {n: leaves[n].grad.detach() if leaves[n].grad is not None
                                              else torch.zeros_like(leaves[n]) for n in names}


CONFIG_KEYS = ["L", "C", "NH", "FFN", "V", "maxpos", "T", "B", "binary_head", "post_ln", "recompute", "steps", "nmb",
               "warmup", "decay", "gbs", "ltd_layers", "ltd_keep", "rmsnorm", "swiglu", "add_bias", "head_tanh",
               "ln1p", "rot", "theta", "pos_emb", "kv_heads", "cls", "choices", "regression"]


def read_dump(out):
    d = Dump(out)
    cfg = dict(zip(CONFIG_KEYS, d.load("config", np.int32).tolist()))
    with open(os.path.join(out, "names.txt")) as f:
        names = [line.strip() for line in f if line.strip()]
    return d, cfg, names


def check_predictions(d, tag, prefix, P, b, cfg):
    """zt_model.predictions after a forward (n_predictions of them) against the twin's argmax over each sample's scores
    (torch.argmax: the first of equal maxima); without a classification head none (n_predictions 0)."""
    n = int(d.load(prefix + "n_predictions", np.int32)[0])
    zp = d.load(prefix + "predictions", np.int32)
    what = f"{tag} {prefix}predictions"
    if not cfg["cls"]:
        if not prefix:  # once a pretraining config
            check(n == 0 and zp.size == 0, what, f"n_predictions {n} (expected 0: no classification head)")
        return
    with torch.no_grad():
        scores, _ = cls_forward(P, b, cfg)
    ref = torch.argmax(scores, dim=1).numpy()
    if scores.shape[1] > 1:
        top2 = torch.topk(scores, 2, dim=1).values
        margin = float((top2[:, 0] - top2[:, 1]).min())
    else:  # STS-B: one output, argmax 0 (what Megatron's accuracy pass compares without --finetune)
        margin = float("inf")
    check(n == ref.shape[0] and zp.shape == ref.shape and bool((zp == ref).all()), what,
          f"zt {zp.tolist()} (n_predictions {n}) ref {ref.tolist()}, labels {b['sentence'].tolist()}, "
          f"min top-2 margin {margin:.2e}")
    return ref


# A negative control must miss the dumped loss and gradients by at least this many times their tolerances.
NEG_FACTOR = 100


def negative_controls(d, tag, P0, names, b, cfg):
    """The twin made wrong on purpose (pooling sequence index 1; with choices, grouping the rows strided) must miss the
    dumped loss and the worst gradient of the single forward by far more than the tolerances: the checks can fail."""
    zt = d.scalar("lm_loss")
    variants = [("pooler on sequence index 1", {"pool_index": 1})]
    if cfg["choices"] > 1:
        variants.append(("choices grouped strided, view(choices, -1).t()", {"strided": True}))
    for what, kw in variants:
        leaves = {n: P0[n].clone().requires_grad_(True) for n in names}
        _, loss = cls_forward(leaves, b, cfg, **kw)
        loss.backward()
        e = abs(zt - loss.item()) / abs(loss.item())
        eg = max(rel(d.load("grad." + n), leaves[n].grad.numpy()) for n in names
                 if n != SHIFT_BIAS and leaves[n].grad is not None)
        check(e > NEG_FACTOR * TOL_LOSS and eg > NEG_FACTOR * TOL_GRAD, f"{tag} negative control ({what})",
              f"zt {zt:.7f} wrong twin {loss.item():.7f}: loss rel {e:.2e}, max gradient rel {eg:.2e} (both must "
              f"exceed {NEG_FACTOR} x the tolerances)")


def run_config(binary, tag, extra_args, tmp):
    out = os.path.join(tmp, tag)
    proc = subprocess.run([binary, out] + extra_args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not check(proc.returncode == 0, f"{tag} dump", f"exit status {proc.returncode}"):
        print(proc.stdout)
        return
    d, cfg, names = read_dump(out)
    print(f"# {tag}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))
    cls = cfg["cls"] > 0

    want = expected_names(cfg["L"], cfg["binary_head"], cfg["rmsnorm"], cfg["add_bias"], cfg["pos_emb"], cfg["cls"],
                          cfg["choices"])
    if cls:  # the twin itself holds none of the pretraining heads' or an output layer's weights
        stray = [n for n in want if n.startswith(("lm_head", "binary_head", "output_layer"))]
        check(not stray and cfg["binary_head"] == 0, f"{tag} twin without pretraining heads",
              f"{len(want)} names, binary_head {cfg['binary_head']}" + (f", stray {stray}" if stray else ""))
    check(sorted(names) == sorted(want) and len(names) == len(set(names)), f"{tag} parameter names",
          f"{len(names)} names" + ("" if set(names) == set(want) else
                                   f"; missing {sorted(set(want) - set(names))}, extra {sorted(set(names) - set(want))}"))
    names = [n for n in names if n in want]
    P0 = {n: torch.from_numpy(d.load(n).astype(np.float64)) for n in names}

    # ---- one forward/backward ----
    nl = int(d.load("nlosses", np.int32)[0])
    check(nl == (2 if cfg["binary_head"] else 1), f"{tag} number of losses", f"losses.n = {nl}")
    if cls:  # the engine's name of the one loss (Megatron's finetune_utils reports {'lm loss': ...})
        check("1 losses, lm loss " in proc.stdout, f"{tag} loss name", proc.stdout.splitlines()[1:2])
    ltd = cfg.get("ltd_keep", 0) > 0
    ref_total, (ref_lm, ref_sop), ref_grads = loss_and_grads(P0, names, [d.batch("", ltd)], cfg)
    check_predictions(d, tag, "", P0, d.batch("", ltd), cfg)
    if cls:
        negative_controls(d, tag, P0, names, d.batch("", ltd), cfg)
    worst_loss = 0.0
    for what, zt, ref in [("lm loss", d.scalar("lm_loss"), ref_lm), ("sop loss", d.scalar("sop_loss"), ref_sop),
                          ("total loss", d.scalar("total_loss"), ref_total)]:
        if ref is None:
            continue
        e = abs(zt - ref) / abs(ref)
        worst_loss = max(worst_loss, e)
        check(e <= TOL_LOSS, f"{tag} {what}", f"zt {zt:.7f} ref {ref:.7f} rel {e:.2e} (tol {TOL_LOSS:.0e})")
    worst = 0.0
    for n in names:
        g = d.load("grad." + n)
        gr = ref_grads[n].numpy()
        if g.shape != gr.shape:
            check(False, f"{tag} grad {n}", f"shape {g.shape}, expected {gr.shape}")
            continue
        if n == SHIFT_BIAS:
            scale = float(np.linalg.norm(ref_grads["multichoice_head.weight"]))
            r = float(np.linalg.norm(g.astype(np.float64) - gr)) / scale
            check(r <= KEY_BIAS_GRAD, f"{tag} grad {n} (zero: shift-invariant)",
                  f"|g_zt - g_ref| / ||g_ref(multichoice_head.weight)|| = {r:.2e} (zt {float(g[0]):.2e}, ref "
                  f"{float(gr[0]):.2e}, tol {KEY_BIAS_GRAD:.0e})")
            continue
        e = rel(g, gr)
        worst = max(worst, e)
        check(e <= TOL_GRAD, f"{tag} grad {n}", f"rel {e:.2e} (||ref|| {np.linalg.norm(gr):.3e}, tol {TOL_GRAD:.0e})")
    print(f"# {tag}: max loss rel error {worst_loss:.2e}, max gradient rel error {worst:.2e}")

    # ---- three AdamW steps ----
    kb = key_bias_rows(cfg["C"], cfg["NH"])
    P = {n: P0[n].clone() for n in names}
    m = {n: torch.zeros_like(P[n]) for n in names}
    v = {n: torch.zeros_like(P[n]) for n in names}
    samples = 0
    lr_sum = 0.0
    clipped = 0
    worst_p = worst_d = 0.0
    for k in range(1, cfg["steps"] + 1):
        batches = [d.batch(f"step{k}.mb{j}.", ltd) for j in range(cfg["nmb"])]
        for j, b in enumerate(batches):
            check_predictions(d, tag, f"step{k}.mb{j}.", P, b, cfg)
        loss, _, grads = loss_and_grads(P, names, batches, cfg)
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
            if n == SHIFT_BIAS:
                move = float(np.abs(dz - dr).max())
                move = move / lr_sum if lr_sum > 0 else (0.0 if move == 0 else math.inf)
                check(move <= SHIFT_BIAS_MOVE, f"{tag} step{k} shift-invariant {n}",
                      f"|delta_zt - delta_ref| = {move:.2e} x sum(lr) (tol {SHIFT_BIAS_MOVE})")
                continue
            if n.endswith("self_attention.query_key_value.bias"):
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

    for l in range(cfg["L"] if cfg["add_bias"] else 0):  # (no key bias without linear biases)
        n = f"language_model.encoder.layers.{l}.self_attention.query_key_value.bias"
        g = d.load("grad." + n).astype(np.float64)
        r = float(np.linalg.norm(g[kb])) / float(np.linalg.norm(g))
        check(r <= KEY_BIAS_GRAD, f"{tag} key-bias grad layer {l}",
              f"||g_key|| / ||g_qkv_bias|| = {r:.2e} (tol {KEY_BIAS_GRAD:.0e})")


CONFIGS = [("default", []), ("post_ln", ["--post-ln"]), ("no_binary_head", ["--no-binary-head"]),
           ("post_ln_no_binary_head_recompute", ["--post-ln", "--no-binary-head", "--recompute"]),
           ("recompute", ["--recompute"]), ("random_ltd", ["--random-ltd"]),
           ("random_ltd_post_ln_recompute", ["--random-ltd", "--post-ln", "--recompute"]),
           ("llama", ["--llama"]), ("openai_1p_post_ln", ["--openai-1p", "--post-ln"]), ("rope_gqa", ["--rope-gqa"]),
           ("rope_gqa_random_ltd", ["--rope-gqa", "--random-ltd"]), ("cls3", ["--cls", "3"]),
           ("race_choices4", ["--cls", "1", "--choices", "4"]), ("stsb_regression", ["--cls", "1", "--regression"])]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    t0 = time.time()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zt_bert_parity_") as tmp:
        for tag, args in CONFIGS:
            try:
                run_config(binary, tag, args, tmp)
            except Exception as e:  # a missing or malformed dump file: report it, go on
                check(False, f"{tag} comparison", f"{type(e).__name__}: {e}")
    print(f"# {time.time() - t0:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
