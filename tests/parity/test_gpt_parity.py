#!/usr/bin/env python3
"""PyTorch parity of the GPT model: loss, every parameter gradient and three AdamW training steps of a
tiny zerotron GPT against an independent float64 PyTorch implementation of Megatron's GPT given the
same weights and batches.

Usage: test_gpt_parity.py GPT_PARITY_DUMP_BINARY
Runs the dump binary (tests/parity/gpt_parity_dump.c) into a temporary directory for four
configurations (tied embeddings; untied output layer + full activation recompute; each again with random-LTD on
layer 1: the layer runs on 10 of the 16 tokens of each row, at the positions the dump lists, attending causally
among them, and the other tokens pass it unchanged, as DeepSpeed's GatherTokens / ScatterTokens do), recomputes
everything with torch autograd in float64 and prints a PASS/FAIL line per check, then
"N passed, M failed". Exit status 1 on any failure.

Relative errors are norm-wise per tensor: rel(a, ref) = ||a - ref||_2 / ||ref||_2 over all of the
tensor's elements (not an element-wise maximum, which is meaningless for elements that are ~0)."""
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
    print(f"FAIL gpt_parity: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_lib import check, check_step_scalars, clip_and_adamw, key_bias_rows, lr_at, no_weight_decay, rel, summary  # noqa: E402

torch.set_default_dtype(torch.float64)

# Tolerances. fp32 rounding of the C forward/backward gives relative errors ~1e-7..1e-6.
TOL_LOSS = 1e-5        # relative, the loss of a forward
TOL_GRAD = 1e-5        # relative norm-wise, every gradient tensor and the global grad norm
TOL_PARAM = 1e-5       # relative norm-wise, every parameter tensor after each step
# The parameter change of a step (Delta = p_k - p_0) is lr * (Adam update) with lr <= 1e-3, ~1-5% of a
# weight's size, so the 1e-5 check on the parameters alone would hardly see a wrong update; Delta is
# checked norm-wise at 1e-3. Two float32 effects bound how well an exact optimizer can do there:
# (a) the C parameters are stored in float32, so a change of ~1e-3 on a norm weight of ~1 carries
# rounding of ~6e-8 per step, 6e-5 of Delta (observed ~4e-5 for the norm weights, ~1e-6 elsewhere);
# (b) the float32 gradients carry ~1e-6 relative noise, which Adam's m/(sqrt(v)+eps) passes on
# unchanged for ordinary elements. 1e-3 leaves >20x headroom over (a), while a wrong term (bias
# correction, weight-decay group, lr, clip coefficient, moment decay) changes Delta by 1e-2 or more.
TOL_DELTA = 1e-3
# The key rows of the fused QKV bias are compared separately: their gradient is identically zero
# in exact arithmetic (softmax is invariant to adding q.b_k to every score of a query row), so the
# float32 gradient there is pure rounding noise (~1e-9 of the QKV bias gradient, checked as
# KEY_BIAS_GRAD), which Adam normalizes into updates of ~noise/eps ~ 1e-3 of a normal O(1) update,
# while the float64 reference barely moves them. Those rows must move by less than KEY_BIAS_MOVE x
# the summed learning rate (a normal element moves by ~1 x); the other rows get the checks above.
KEY_BIAS_MOVE = 0.1
KEY_BIAS_GRAD = 1e-5   # ||g_key_bias|| / ||g_qkv_bias|| in the C gradients

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
        kept = torch.from_numpy(self.load(prefix + "ltd_kept", np.int32).astype(np.int64)) if ltd else None
        return (torch.from_numpy(self.load(prefix + "tokens", np.int32).astype(np.int64)),
                torch.from_numpy(self.load(prefix + "targets", np.int32).astype(np.int64)),
                torch.from_numpy(self.load(prefix + "loss_mask").astype(np.float64)), kept)


def expected_names(L, untie):
    names = ["language_model.embedding.word_embeddings.weight", "language_model.embedding.position_embeddings.weight"]
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
    if untie:
        names.append("language_model.output_layer.weight")
    return names


def layer(P, l, x, cfg):
    """Megatron's pre-LN ParallelTransformerLayer l over x [B, T, C] with the causal mask of its T tokens."""
    C, NH = cfg["C"], cfg["NH"]
    HD = C // NH
    Bb, T = x.shape[0], x.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)  # True above the diagonal: key j > query i
    p = f"language_model.encoder.layers.{l}."
    h = F.layer_norm(x, (C,), P[p + "input_layernorm.weight"], P[p + "input_layernorm.bias"], LN_EPS)
    qkv = h @ P[p + "self_attention.query_key_value.weight"].T + P[p + "self_attention.query_key_value.bias"]
    qkv = qkv.view(Bb, T, NH, 3, HD)  # Megatron's per-head layout [.., head, (q, k, v), d]
    q, k, v = (qkv[:, :, :, i, :].permute(0, 2, 1, 3) for i in range(3))  # [B, NH, T, HD]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
    probs = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    ctx = (probs @ v).permute(0, 2, 1, 3).reshape(Bb, T, C)  # channel h*HD + d
    x = x + ctx @ P[p + "self_attention.dense.weight"].T + P[p + "self_attention.dense.bias"]
    h = F.layer_norm(x, (C,), P[p + "post_attention_layernorm.weight"], P[p + "post_attention_layernorm.bias"],
                     LN_EPS)
    f = F.gelu(h @ P[p + "mlp.dense_h_to_4h.weight"].T + P[p + "mlp.dense_h_to_4h.bias"], approximate="tanh")
    return x + f @ P[p + "mlp.dense_4h_to_h.weight"].T + P[p + "mlp.dense_4h_to_h.bias"]


def gpt_loss(P, tokens, targets, mask, cfg, kept=None):
    """Megatron GPT forward in float64: returns sum(ce * mask) / sum(mask). kept [L, B, r]: random-LTD's kept
    positions for the layers in cfg["ltd_layers"] (DeepSpeed's GatherTokens, the layer on them, ScatterTokens)."""
    L, C, V = cfg["L"], cfg["C"], cfg["V"]
    Bb, T = tokens.shape
    emb = "language_model.embedding."
    x = P[emb + "word_embeddings.weight"][tokens] + P[emb + "position_embeddings.weight"][torch.arange(T)]
    for l in range(L):
        if kept is not None and cfg["ltd_layers"] >> l & 1:
            idx = kept[l][:, :, None].expand(-1, -1, C)  # [B, r, C]
            x = x.scatter(1, idx, layer(P, l, torch.gather(x, 1, idx), cfg))
        else:
            x = layer(P, l, x, cfg)
    enc = "language_model.encoder."
    x = F.layer_norm(x, (C,), P[enc + "final_layernorm.weight"], P[enc + "final_layernorm.bias"], LN_EPS)
    w_out = P["language_model.output_layer.weight"] if cfg["untie"] else P[emb + "word_embeddings.weight"]
    logits = x @ w_out.T  # [B, T, V]: every padded class takes part in the softmax
    ce = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
    m = mask.reshape(-1)
    return (ce * m).sum() / m.sum()


def loss_and_grads(P, names, batches, cfg):
    """Mean loss over micro batches and the gradients of sum_mb loss_mb / n_mb (the engine's scaling)."""
    leaves = {n: P[n].detach().clone().requires_grad_(True) for n in names}
    total = 0.0
    losses = []
    for tokens, targets, mask, kept in batches:
        loss = gpt_loss(leaves, tokens, targets, mask, cfg, kept)
        losses.append(loss.item())
        total = total + loss / len(batches)
    total.backward()
    # a parameter the model does not use gets a zero gradient (then its comparison fails, not the script)
    return sum(losses) / len(losses), {n: leaves[n].grad.detach() if leaves[n].grad is not None
                                       else torch.zeros_like(leaves[n]) for n in names}


def run_config(binary, tag, extra_args, tmp):
    out = os.path.join(tmp, tag)
    proc = subprocess.run([binary, out] + extra_args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not check(proc.returncode == 0, f"{tag} dump", f"exit status {proc.returncode}"):
        print(proc.stdout)
        return
    d = Dump(out)
    c = d.load("config", np.int32).tolist()
    cfg = dict(zip(["L", "C", "NH", "FFN", "V", "maxpos", "T", "B", "untie", "recompute", "steps", "nmb",
                    "warmup", "decay", "gbs", "ltd_layers", "ltd_keep"], c))
    ltd = cfg["ltd_keep"] > 0
    print(f"# {tag}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))

    with open(os.path.join(out, "names.txt")) as f:
        names = [line.strip() for line in f if line.strip()]
    want = expected_names(cfg["L"], cfg["untie"])
    check(sorted(names) == sorted(want) and len(names) == len(set(names)), f"{tag} parameter names",
          f"{len(names)} names" + ("" if set(names) == set(want) else
                                   f"; missing {sorted(set(want) - set(names))}, extra {sorted(set(names) - set(want))}"))
    names = [n for n in names if n in want]

    P0 = {n: torch.from_numpy(d.load(n).astype(np.float64)) for n in names}

    # ---- one forward/backward ----
    if ltd:  # the kept positions: sorted, distinct, in range, ltd_keep per row of each random-LTD layer
        for prefix in [""] + [f"step{k}.mb{j}." for k in range(1, cfg["steps"] + 1) for j in range(cfg["nmb"])]:
            kp = d.load(prefix + "ltd_kept", np.int32)
            good = kp.shape == (cfg["L"], cfg["B"], cfg["ltd_keep"])
            for l in range(cfg["L"]):
                if cfg["ltd_layers"] >> l & 1:
                    good &= bool((np.diff(kp[l], axis=1) > 0).all() and kp[l].min() >= 0 and kp[l].max() < cfg["T"])
            check(good, f"{tag} {prefix}ltd_kept: {cfg['ltd_keep']} sorted distinct positions of {cfg['T']} per row")
    ref_loss, ref_grads = loss_and_grads(P0, names, [d.batch("", ltd)], cfg)
    zt_loss = d.scalar("loss")
    e = abs(zt_loss - ref_loss) / abs(ref_loss)
    check(e <= TOL_LOSS, f"{tag} loss", f"zt {zt_loss:.7f} ref {ref_loss:.7f} rel {e:.2e} (tol {TOL_LOSS:.0e})")
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
    print(f"# {tag}: max gradient rel error {worst:.2e}")

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
        loss, grads = loss_and_grads(P, names, batches, cfg)
        lr = lr_at(samples, cfg["warmup"], cfg["decay"])  # the value before the schedule steps
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
            if n.endswith("self_attention.query_key_value.bias"):
                # key rows: no relative comparison (see KEY_BIAS_MOVE); the others as usual
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
            ed = rel(dz, dr) if nd > 0 else float(np.linalg.norm(dz))  # lr 0: both must not move
            worst_p, worst_d = max(worst_p, ep), max(worst_d, ed)
            check(ep <= TOL_PARAM and ed <= TOL_DELTA, f"{tag} step{k} param {n}",
                  f"rel {ep:.2e} (tol {TOL_PARAM:.0e}), delta rel {ed:.2e}{note} (||delta|| {nd:.2e}, tol "
                  f"{TOL_DELTA:.0e})")
    check(clipped > 0, f"{tag} clipping exercised", f"clip coefficient < 1 in {clipped} of {cfg['steps']} steps")
    print(f"# {tag}: max parameter rel error {worst_p:.2e}, max update (delta) rel error {worst_d:.2e}")

    # the key bias gradient: zero in exact arithmetic, so the C gradient there must be rounding noise
    for l in range(cfg["L"]):
        n = f"language_model.encoder.layers.{l}.self_attention.query_key_value.bias"
        g = d.load("grad." + n).astype(np.float64)
        r = float(np.linalg.norm(g[kb])) / float(np.linalg.norm(g))
        check(r <= KEY_BIAS_GRAD, f"{tag} key-bias grad layer {l}",
              f"||g_key|| / ||g_qkv_bias|| = {r:.2e} (tol {KEY_BIAS_GRAD:.0e})")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    t0 = time.time()
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead (and contend under ctest -j)
    with tempfile.TemporaryDirectory(prefix="zt_gpt_parity_") as tmp:
        for tag, args in [("tied", []), ("untied_recompute", ["--untie-recompute"]), ("random_ltd", ["--random-ltd"]),
                          ("random_ltd_untied_recompute", ["--untie-recompute", "--random-ltd"])]:
            try:
                run_config(binary, tag, args, tmp)
            except Exception as e:  # a missing or malformed dump file: report it, go on
                check(False, f"{tag} comparison", f"{type(e).__name__}: {e}")
    print(f"# {time.time() - t0:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
