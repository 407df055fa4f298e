#!/usr/bin/env python3
"""PyTorch parity of DeepSpeed's Mixture-of-Experts layers in the GPT model: the experts' gating (top-1 with Random
Token Selection, Jitter or RSample; top-2 with or without the Gumbel-sampled second expert; top-k with the 'probs'
drop policy; token dropping or not), the experts (GELU, or SwiGLU with --swiglu; with or without linear biases), the
residual MoE, the auxiliary (load-balancing) loss, every parameter gradient and three AdamW steps of a tiny zerotron
GPT against an independent float64 PyTorch twin. Without linear biases the twin runs with zero biases that are not
trained (the same function).

Usage: test_moe_parity.py GPT_PARITY_DUMP_BINARY
Runs `GPT_PARITY_DUMP_BINARY OUTDIR --moe NAME` for each configuration below, recomputes everything with torch
autograd in float64 from the dumped weights, batches and random draws, prints a PASS/FAIL line per check, then
"N passed, M failed". Exit status 1 on any failure.

The twin follows DeepSpeed's deepspeed/moe/sharded_moe.py (top1gating, top2gating, topkgating, TopKGate.forward,
MOELayer.forward), deepspeed/moe/layer.py (MoE, residual MoE) and Megatron-DeepSpeed's ParallelTransformerLayer /
pretrain_gpt.py (the MoE mlp has no separate bias; moe loss = moe_loss_coeff * sum of the layers' l_aux, added to the
lm loss). Everything that is not the MLP (embeddings, attention, layer norms, the head and its loss) is the dense
twin of test_gpt_parity.py, imported: its `layer` is wrapped so that an MoE layer runs the dense layer's attention
half and then the MoE on the post-attention layer norm's output.

Token order: Megatron's hidden states are [s, b, h] and the MoE flattens them to S = T*B tokens in sequence-major
order, token s = t*B + b. Capacities, cumsum locations, Random Token Selection and every dumped per-token array use
that order.

The routing decisions (argmax, top-k, capacity drops) are recomputed here in float64 from the twin's own logits and
the C's random draws (read from the dump, never generated here); only the draws are shared. Each pass's smallest
decision margin is printed next to its expert counts, so a count mismatch can be told apart from a float32 near-tie.
"""
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
    print(f"FAIL moe_parity: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_gpt_parity as G  # noqa: E402  (the dense GPT twin: layer, gpt_loss, Dump, names, tolerances)
from parity_lib import check, check_step_scalars, clip_and_adamw, key_bias_rows, lr_at, no_weight_decay, rel, summary  # noqa: E402
from parity_lib import twin_mlp_act  # noqa: E402

torch.set_default_dtype(torch.float64)

TOL_AUX = 1e-5  # relative, each layer's l_aux in each pass; the other tolerances are test_gpt_parity.py's
EPS32 = float(np.finfo(np.float32).eps)  # 1.1920929e-07: DeepSpeed clamps the gate denominators at the fp32 eps
NONE, JITTER, RSAMPLE = 0, 1, 2  # noisy_gate_policy codes of moe.npy
POLICY = {NONE: "None", JITTER: "Jitter", RSAMPLE: "RSample"}
DENSE_MLP = ["mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"]
MOE_NAMES = ["top1", "top2", "top2_argmax", "top3", "nodrop", "residual_pyramid", "jitter", "rsample", "recompute",
             "swiglu_nobias", "swiglu_residual"]
# the linear biases --disable-bias-linear removes (the attention's and every ParallelMLP's, experts included)
LINEAR_BIASES = ("query_key_value.bias", "self_attention.dense.bias", "dense_h_to_4h.bias", "dense_4h_to_h.bias")

DENSE_LAYER = G.layer  # the dense twin's transformer layer; G.layer is replaced by moe_layer below


def expected_names(L, untie, experts, residual, add_bias=True):
    """The dense GPT's names with each MoE layer's four dense MLP names replaced by the MoE's parameters (without the
    linear biases when add_bias is off)."""
    if not add_bias:
        return [n for n in expected_names(L, untie, experts, residual) if not n.endswith(LINEAR_BIASES)]
    names = []
    for n in G.expected_names(L, untie):
        hit = [l for l in range(L) if experts[l] > 1 and n.startswith(f"language_model.encoder.layers.{l}.mlp.")]
        if not hit:
            names.append(n)
            continue
        l = hit[0]
        p = f"language_model.encoder.layers.{l}.mlp."
        if n != p + "dense_h_to_4h.weight":
            continue  # one replacement per layer
        names.append(p + "deepspeed_moe.gate.wg.weight")
        for e in range(experts[l]):
            q = p + f"deepspeed_moe.experts.deepspeed_experts.{e}."
            names += [q + "dense_h_to_4h.weight", q + "dense_h_to_4h.bias", q + "dense_4h_to_h.weight",
                      q + "dense_4h_to_h.bias"]
        if residual:
            names += [p + "mlp.dense_h_to_4h.weight", p + "mlp.dense_h_to_4h.bias", p + "mlp.dense_4h_to_h.weight",
                      p + "mlp.dense_4h_to_h.bias", p + "coefficient.weight", p + "coefficient.bias"]
    return names


def mlp(P, q, x, swiglu=False):
    """Megatron's ParallelMLP (one expert, or the residual MoE's dense branch) with parameter prefix q, x [S, C]; with
    swiglu dense_h_to_4h's output is chunked in two, silu(first) * second (no bias: the biases are zeros here)."""
    f = twin_mlp_act(x @ P[q + "dense_h_to_4h.weight"].T + P[q + "dense_h_to_4h.bias"], {"swiglu": swiglu})
    return f @ P[q + "dense_4h_to_h.weight"].T + P[q + "dense_4h_to_h.bias"]


def zero_biases(P):
    """P with a zero bias for every linear weight that has none (--disable-bias-linear): the same function, and as
    they are not among the trained names they get no gradient and no optimizer step."""
    Q = dict(P)
    for n, w in P.items():
        b = n[:-len("weight")] + "bias"
        if n.endswith(".weight") and b.endswith(LINEAR_BIASES) and b not in Q:
            Q[b] = torch.zeros(w.shape[0], dtype=w.dtype)
    return Q


def capacity(S, E, factor, min_capacity):
    """DeepSpeed's _capacity: ceil(S / E * factor) in float32 (factor is a float32 torch.tensor there), at least
    min_capacity."""
    c = int(np.ceil(np.float32(S / E) * np.float32(factor)))
    return max(c, int(min_capacity))


def within_top(values, cap):
    """[S, E] bool: entry (s, e) is among the cap largest of column e, i.e. fewer than cap entries of the column are
    strictly larger. This is what torch.topk(values, cap, dim=0) selects, independent of how topk breaks ties among
    equal values that rank below every entry this test asks about (the zeros of unselected tokens)."""
    greater = (values[None, :, :] > values[:, None, :]).sum(1)  # [s, e]: #u with values[u, e] > values[s, e]
    return greater < cap


def row_margin(score, k):
    """Smallest gap between the k-th and (k+1)-th largest entry of a row (how close a top-k choice is to a tie)."""
    v = score.sort(dim=1, descending=True).values
    return float((v[:, k - 1] - v[:, k]).min()) if v.shape[1] > k else math.inf


def gate(x, wg, E, mc, training, draws, notes):
    """DeepSpeed's TopKGate.forward + top1gating / top2gating / topkgating on the tokens x [S, C] (sequence-major).
    Returns (weights [S, E]: the combine weight of each kept (token, expert) pair, 0 elsewhere, differentiable;
    keep [S, E] bool: the kept pairs after capacity dropping; l_aux; the smallest decision margin)."""
    S = x.shape[0]
    k, policy = mc["topk"], mc["policy"]
    if policy == JITTER and training:
        x = x * draws["jitter"]  # multiplicative_jitter: the router input only (the experts get x itself)
    logits = x @ wg.T
    gates = torch.softmax(logits, dim=1)
    me = gates.mean(0)  # l_aux's differentiable factor; ce (from the masks) is a constant
    cf = mc["train_cf"] if training else mc["eval_cf"]
    lg = logits.detach()
    if k == 1:
        rsample = policy == RSAMPLE and training  # top1gating gets noisy_gate_policy only in training
        score = lg + draws["gumbel"] if rsample else gates.detach()
        margin = row_margin(score, 1)
        mask = F.one_hot(score.argmax(1), E).bool()
        l_aux = (me * mask.double().mean(0)).sum() * E
        if mc["drop"]:
            cap = capacity(S, E, cf, mc["min_cap"])
            keep = mask & within_top(mask * draws["rts"], cap)  # Random Token Selection: mask1 * uniform, topk
        else:
            keep = mask  # capacity = max expert count: nothing is dropped
        return gates * keep, keep, l_aux, margin
    if k == 2:
        mask1 = F.one_hot(gates.detach().argmax(1), E).bool()
        margin = row_margin(gates.detach(), 1)
        second = lg + draws["gumbel"] if mc["sampling"] else lg  # the sampling applies in eval passes too
        second = second.masked_fill(mask1, -math.inf)
        margin = min(margin, row_margin(second, 1))
        mask2 = F.one_hot(second.argmax(1), E).bool()
        loc1 = mask1.long().cumsum(0) - 1
        loc2 = mask2.long().cumsum(0) - 1 + mask1.long().sum(0, keepdim=True)  # after all first choices
        l_aux = (me * mask1.double().mean(0)).mean() * E * E
        if mc["drop"]:
            cap = capacity(S, E, cf * 2, mc["min_cap"])
            mask1 = mask1 & (loc1 < cap)
            mask2 = mask2 & (loc2 < cap)
        g1 = (gates * mask1).sum(1)
        g2 = (gates * mask2).sum(1)
        denom = torch.clamp(g1 + g2, min=EPS32)  # renormalized over the kept two
        weights = (g1 / denom)[:, None] * mask1 + (g2 / denom)[:, None] * mask2
        return weights, mask1 | mask2, l_aux, margin
    # k > 2: topkgating with drop_policy 'probs'
    top_val, top_idx = lg.topk(k, dim=1)
    margin = row_margin(lg, k)
    mask = torch.zeros(S, E, dtype=torch.bool).scatter(1, top_idx, True)
    l_aux = (me * mask.double().mean(0)).mean() * E * E / k
    if mc["drop"]:
        cap = capacity(S, E, cf * k, mc["min_cap"])
        if cap > S:  # torch.topk(k=cap > S) raises in DeepSpeed; every selected token fits
            notes.append(f"top-{k} capacity {cap} > S = {S}: DeepSpeed's torch.topk(topk_masked_gates, k={cap}, "
                         f"dim=0) would raise here; the twin keeps every selected token")
        # the capacity topk runs over topk_masked_gates = the LOGIT where selected and 0 elsewhere, so unselected
        # zeros outrank selected negative logits
        masked = torch.zeros(S, E).scatter(1, top_idx, top_val)
        keep = mask & within_top(masked, cap)
        if cap < S:  # closeness of a selected value to its column's capacity boundary
            v = masked.sort(dim=0, descending=True).values
            sel = keep | mask
            for e in range(E):
                bnd = v[cap - 1, e]
                gaps = (masked[sel[:, e], e] - bnd).abs()
                gaps = gaps[gaps > 0]
                if gaps.numel():
                    margin = min(margin, float(gaps.min()))
    else:
        keep = mask
    gm = gates * keep
    weights = gm / torch.clamp(gm.sum(1, keepdim=True), min=EPS32)
    return weights, keep, l_aux, margin


class PassState:
    """What one forward needs beyond the dense twin's arguments: training or eval, the C's random draws per MoE
    layer, and where each MoE layer records (layer, kept counts, l_aux, decision margin)."""

    def __init__(self, training, draws):
        self.training, self.draws = training, draws
        self.records, self.notes = [], []


def moe_layer(P, l, x, cfg):
    """Layer l of the GPT over x [B, T, C]: the dense twin's layer, or for an MoE layer its attention half followed by
    DeepSpeed's MoE (no separate mlp bias: Megatron's MoE branch adds mlp_bias 0)."""
    E = cfg["experts"][l]
    if E <= 1:
        return DENSE_LAYER(P, l, x, cfg)
    C, FFN = cfg["C"], cfg["FFN"]
    p = f"language_model.encoder.layers.{l}."
    q = p + "mlp."
    # the dense layer with an all-zero MLP is exactly x + attention: gelu(0) = 0, 0 @ 0 = 0, + 0
    Pz = dict(P)
    for n, shape in zip(DENSE_MLP, [(FFN, C), (FFN,), (C, FFN), (C,)]):
        Pz[p + n] = torch.zeros(shape)
    x = DENSE_LAYER(Pz, l, x, cfg)
    h = F.layer_norm(x, (C,), P[p + "post_attention_layernorm.weight"], P[p + "post_attention_layernorm.bias"],
                     G.LN_EPS)
    Bb, T = h.shape[0], h.shape[1]
    hs = h.transpose(0, 1).reshape(T * Bb, C)  # [s, b, h] -> [S, h]: token s = t*B + b
    st = cfg["pass"]
    weights, keep, l_aux, margin = gate(hs, P[q + "deepspeed_moe.gate.wg.weight"], E, cfg["moe"], st.training,
                                        st.draws[l], st.notes)
    out = torch.zeros_like(hs)
    for e in range(E):  # each expert on its kept tokens, scaled by their combine weights
        idx = keep[:, e].nonzero().squeeze(1)
        if idx.numel():
            y = mlp(P, q + f"deepspeed_moe.experts.deepspeed_experts.{e}.", hs[idx], cfg["moe"]["swiglu"])
            out = out.index_add(0, idx, weights[idx, e:e + 1] * y)
    if cfg["moe"]["residual"]:
        coef = torch.softmax(hs @ P[q + "coefficient.weight"].T + P[q + "coefficient.bias"], dim=-1)
        out = out * coef[:, 0:1] + mlp(P, q + "mlp.", hs, cfg["moe"]["swiglu"]) * coef[:, 1:]
    st.records.append((l, keep.sum(0).numpy().astype(np.int64), l_aux, margin))
    return x + out.view(T, Bb, C).transpose(0, 1)


G.layer = moe_layer  # G.gpt_loss looks `layer` up at call time: the dense twin's forward now runs MoE layers


def forward(P, batch, cfg, st):
    """(lm loss, moe loss = moe_loss_coeff * sum of the layers' l_aux) of one micro batch; st collects records."""
    tokens, targets, mask, _ = batch
    cfg["pass"] = st
    lm = G.gpt_loss(P if cfg["moe"]["add_bias"] else zero_biases(P), tokens, targets, mask, cfg)
    aux = [r[2] for r in st.records]
    moe = cfg["moe"]["coeff"] * sum(aux) if aux else torch.zeros(())
    return lm, moe


def loss_and_grads(P, names, passes, cfg):
    """Mean lm and moe losses over the micro batches [(batch, PassState)] and the gradients of
    sum_mb (lm_mb + moe_mb) / n_mb."""
    leaves = {n: P[n].detach().clone().requires_grad_(True) for n in names}
    total = 0.0
    lms, moes = [], []
    for batch, st in passes:
        lm, moe = forward(leaves, batch, cfg, st)
        lms.append(lm.item())
        moes.append(float(moe))
        total = total + (lm + moe) / len(passes)
    total.backward()
    return (sum(lms) / len(lms), sum(moes) / len(moes),
            {n: leaves[n].grad.detach() if leaves[n].grad is not None else torch.zeros_like(leaves[n]) for n in names})


def load_draws(d, tag, prefix, cfg, training):
    """The C's random draws of one pass, per MoE layer, checked against what DeepSpeed draws in that pass: present
    exactly when used (the RTS priorities may also be present without token dropping, where they change nothing),
    the right shape and range."""
    mc, S, C = cfg["moe"], cfg["T"] * cfg["B"], cfg["C"]
    draws, problems, found, fatal = {}, [], [], False
    for l in range(cfg["L"]):
        E = cfg["experts"][l]
        if E <= 1:
            continue
        k = mc["topk"]
        want = {"rts": k == 1 and mc["drop"],
                "gumbel": (k == 2 and mc["sampling"]) or (k == 1 and mc["policy"] == RSAMPLE and training),
                "jitter": mc["policy"] == JITTER and training}
        optional = {"rts": k == 1 and not mc["drop"], "gumbel": False, "jitter": False}
        dl = {}
        for kind, width in [("rts", E), ("gumbel", E), ("jitter", C)]:
            name = f"{prefix}moe.{l}.{kind}"
            present = os.path.exists(os.path.join(d.path, name + ".npy"))
            if present:
                found.append(f"{l}.{kind}")
            if present != want[kind] and not (present and optional[kind]):
                problems.append(f"{name}.npy {'present' if present else 'missing'}")
                fatal |= not present  # the twin needs it; an unexpected extra draw is not read
            if not (present and want[kind]):
                continue
            a = d.load(name).astype(np.float64)
            if a.shape != (S, width):
                problems.append(f"{name}.npy shape {a.shape}, expected {(S, width)}")
                fatal = True
                continue
            if not np.isfinite(a).all():
                problems.append(f"{name}.npy not finite")
            if kind == "rts" and not (a.min() > 0 and a.max() < 1):
                problems.append(f"{name}.npy outside (0, 1): [{a.min()}, {a.max()}]")
            if kind == "jitter" and not (a.min() >= 1 - 1e-2 - 1e-6 and a.max() <= 1 + 1e-2 + 1e-6):
                problems.append(f"{name}.npy outside [0.99, 1.01]: [{a.min()}, {a.max()}]")
            dl[kind] = torch.from_numpy(a)
        draws[l] = dl
    check(not problems, f"{tag} {prefix or 'fwd.'}random draws",
          f"{'; '.join(problems) if problems else 'as DeepSpeed draws them'} (files: {', '.join(found) or 'none'})")
    if fatal:
        raise ValueError(f"random draws of pass '{prefix}' unusable")
    return draws


def check_records(d, tag, prefix, cfg, st):
    """Per MoE layer: the C's kept-token counts exactly equal to the twin's, its l_aux within TOL_AUX."""
    for note in dict.fromkeys(st.notes):  # once per pass, not per layer
        print(f"# {tag} {prefix or 'fwd.'}: {note}")
    kept_total = {}
    for l, counts, l_aux, margin in st.records:
        zc = d.load(f"{prefix}moe.{l}.counts", np.int32).astype(np.int64)
        check(zc.shape == counts.shape and bool((zc == counts).all()), f"{tag} {prefix or 'fwd.'}moe.{l} counts",
              f"zt {zc.tolist()} ref {counts.tolist()} (smallest decision margin {margin:.2e})")
        za = d.scalar(f"{prefix}moe.{l}.aux")
        ra = float(l_aux)
        e = abs(za - ra) / abs(ra)
        check(e <= TOL_AUX, f"{tag} {prefix or 'fwd.'}moe.{l} l_aux",
              f"zt {za:.7f} ref {ra:.7f} rel {e:.2e} (tol {TOL_AUX:.0e})")
        kept_total[l] = (int(zc.sum()), int(counts.sum()))
    return kept_total


def run_config(binary, tag, tmp):
    out = os.path.join(tmp, tag)
    proc = subprocess.run([binary, out, "--moe", tag], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not check(proc.returncode == 0, f"{tag} dump", f"exit status {proc.returncode}"):
        print(proc.stdout)
        return
    d = G.Dump(out)
    c = d.load("config", np.int32).tolist()
    cfg = dict(zip(["L", "C", "NH", "FFN", "V", "maxpos", "T", "B", "untie", "recompute", "steps", "nmb",
                    "warmup", "decay", "gbs", "ltd_layers", "ltd_keep"], c))
    if cfg.get("ltd_keep", 0):
        raise ValueError("random-LTD together with MoE is not covered by this twin")
    m = d.load("moe", np.float64).tolist()
    if len(m) != 11:
        raise ValueError(f"moe.npy has {len(m)} values, expected 11")
    mc = {"topk": int(m[0]), "train_cf": m[1], "eval_cf": m[2], "min_cap": int(m[3]), "drop": bool(m[4]),
          "sampling": bool(m[5]), "policy": int(m[6]), "residual": bool(m[7]), "coeff": m[8], "swiglu": bool(m[9]),
          "add_bias": bool(m[10])}
    experts = d.load("moe_experts", np.int32).astype(np.int64).tolist()
    if mc["policy"] not in POLICY or len(experts) != cfg["L"] or mc["topk"] < 1:
        raise ValueError(f"moe.npy {m} / moe_experts.npy {experts} malformed")
    cfg["moe"], cfg["experts"] = mc, experts
    S, k = cfg["T"] * cfg["B"], mc["topk"]
    print(f"# {tag}: " + ", ".join(f"{a}={b}" for a, b in cfg.items() if a not in ("moe", "experts")))
    print(f"# {tag}: experts per layer {experts}, k={k}, capacity factor train {mc['train_cf']} eval {mc['eval_cf']}, "
          f"min capacity {mc['min_cap']}, drop tokens {mc['drop']}, 2nd-expert sampling {mc['sampling']}, noisy gate "
          f"{POLICY[mc['policy']]}, residual {mc['residual']}, moe_loss_coeff {mc['coeff']}, swiglu {mc['swiglu']}, "
          f"linear biases {mc['add_bias']}, S={S} tokens")
    if any(E > 1 and E < k for E in experts) or not any(E > 1 for E in experts):
        raise ValueError(f"experts {experts} cannot route top-{k} (or no MoE layer)")

    with open(os.path.join(out, "names.txt")) as f:
        names = [line.strip() for line in f if line.strip()]
    want = expected_names(cfg["L"], cfg["untie"], experts, mc["residual"], mc["add_bias"])
    missing, extra = sorted(set(want) - set(names)), sorted(set(names) - set(want))
    check(sorted(names) == sorted(want) and len(names) == len(set(names)), f"{tag} parameter names",
          f"{len(names)} names" + ("" if not (missing or extra) else f"; missing {missing}, extra {extra}"))
    names = [n for n in names if n in want]
    P0 = {n: torch.from_numpy(d.load(n).astype(np.float64)) for n in names}

    step_prefixes = [f"step{s}.mb{j}." for s in range(1, cfg["steps"] + 1) for j in range(cfg["nmb"])]
    kept = {}  # pass prefix -> {layer: (zt kept total, ref kept total)}

    # ---- one forward/backward (training mode) ----
    st = PassState(True, load_draws(d, tag, "", cfg, True))
    ref_lm, ref_moe, ref_grads = loss_and_grads(P0, names, [(d.batch(""), st)], cfg)
    kept[""] = check_records(d, tag, "", cfg, st)
    for what, z, r in [("loss", d.scalar("loss"), ref_lm), ("moe_loss", d.scalar("moe_loss"), ref_moe)]:
        e = abs(z - r) / abs(r)
        check(e <= G.TOL_LOSS, f"{tag} {what}", f"zt {z:.7f} ref {r:.7f} rel {e:.2e} (tol {G.TOL_LOSS:.0e})")
    worst = 0.0
    for n in names:
        g = d.load("grad." + n)
        gr = ref_grads[n].numpy()
        if g.shape != gr.shape:
            check(False, f"{tag} grad {n}", f"shape {g.shape}, expected {gr.shape}")
            continue
        nr = float(np.linalg.norm(gr))
        if nr == 0:  # an expert that got no token: exactly zero in both
            nz = float(np.linalg.norm(g.astype(np.float64)))
            check(nz == 0, f"{tag} grad {n}", f"reference exactly 0 (no token reached it), ||zt|| {nz:.3e}")
            continue
        e = rel(g, gr)
        worst = max(worst, e)
        check(e <= G.TOL_GRAD, f"{tag} grad {n}", f"rel {e:.2e} (||ref|| {nr:.3e}, tol {G.TOL_GRAD:.0e})")
    print(f"# {tag}: max gradient rel error {worst:.2e}")

    # ---- the same batch in eval mode: eval capacity factor, no jitter / RSample noise ----
    st = PassState(False, load_draws(d, tag, "eval.", cfg, False))
    with torch.no_grad():
        lm, moe = forward(P0, d.batch(""), cfg, st)
    kept["eval."] = check_records(d, tag, "eval.", cfg, st)
    for what, z, r in [("eval.loss", d.scalar("eval.loss"), float(lm)),
                       ("eval.moe_loss", d.scalar("eval.moe_loss"), float(moe))]:
        e = abs(z - r) / abs(r)
        check(e <= G.TOL_LOSS, f"{tag} {what}", f"zt {z:.7f} ref {r:.7f} rel {e:.2e} (tol {G.TOL_LOSS:.0e})")

    # ---- three AdamW steps, as test_gpt_parity.py checks them ----
    kb = key_bias_rows(cfg["C"], cfg["NH"])
    P = {n: P0[n].clone() for n in names}
    mom = {n: torch.zeros_like(P[n]) for n in names}
    var = {n: torch.zeros_like(P[n]) for n in names}
    samples = 0
    lr_sum = 0.0
    clipped = 0
    worst_p = worst_d = 0.0
    for s in range(1, cfg["steps"] + 1):
        passes = []
        for j in range(cfg["nmb"]):
            pre = f"step{s}.mb{j}."
            passes.append((d.batch(pre), PassState(True, load_draws(d, tag, pre, cfg, True))))
        loss, moe_loss, grads = loss_and_grads(P, names, passes, cfg)
        for j, (_, stj) in enumerate(passes):
            kept[f"step{s}.mb{j}."] = check_records(d, tag, f"step{s}.mb{j}.", cfg, stj)
        lr = lr_at(samples, cfg["warmup"], cfg["decay"])
        norm, clip = clip_and_adamw(P, mom, var, grads, names, s, lr)
        clipped += clip < 1.0
        samples += cfg["gbs"]
        lr_sum += lr

        pre = f"step{s}."
        zm = d.scalar(pre + "moe_loss")
        e = abs(zm - moe_loss) / abs(moe_loss)
        check(e <= G.TOL_LOSS, f"{tag} step{s} moe_loss", f"zt {zm:.7f} ref {moe_loss:.7f} rel {e:.2e} (tol {G.TOL_LOSS:.0e})")
        check_step_scalars(d, tag, s, loss, norm, clip, lr, G.TOL_LOSS, G.TOL_GRAD)
        for n in names:
            zp = d.load(pre + n).astype(np.float64)
            rp = P[n].numpy()
            ep = rel(zp, rp)
            dz, dr = zp - P0[n].numpy(), rp - P0[n].numpy()
            note = ""
            if n.endswith("self_attention.query_key_value.bias"):
                keep = np.ones(zp.shape[0], dtype=bool)
                keep[kb] = False
                move = float(np.abs(dz[kb] - dr[kb]).max())
                move = move / lr_sum if lr_sum > 0 else (0.0 if move == 0 else math.inf)
                check(move <= G.KEY_BIAS_MOVE, f"{tag} step{s} key bias {n}",
                      f"max |delta_zt - delta_ref| over key rows = {move:.2e} x sum(lr) (tol {G.KEY_BIAS_MOVE})")
                zp, rp, dz, dr = zp[keep], rp[keep], dz[keep], dr[keep]
                ep = rel(zp, rp)
                note = " (key rows excluded)"
            nd = float(np.linalg.norm(dr))
            ed = rel(dz, dr) if nd > 0 else float(np.linalg.norm(dz))  # lr 0, or an unused expert's bias: no move
            worst_p, worst_d = max(worst_p, ep), max(worst_d, ed)
            check(ep <= G.TOL_PARAM and ed <= G.TOL_DELTA, f"{tag} step{s} param {n}",
                  f"rel {ep:.2e} (tol {G.TOL_PARAM:.0e}), delta rel {ed:.2e}{note} (||delta|| {nd:.2e}, tol "
                  f"{G.TOL_DELTA:.0e})")
    check(clipped > 0, f"{tag} clipping exercised", f"clip coefficient < 1 in {clipped} of {cfg['steps']} steps")
    print(f"# {tag}: max parameter rel error {worst_p:.2e}, max update (delta) rel error {worst_d:.2e}")

    for l in range(cfg["L"] if mc["add_bias"] else 0):  # the key bias's zero gradient (none without biases)
        n = f"language_model.encoder.layers.{l}.self_attention.query_key_value.bias"
        g = d.load("grad." + n).astype(np.float64)
        r = float(np.linalg.norm(g[kb])) / float(np.linalg.norm(g))
        check(r <= G.KEY_BIAS_GRAD, f"{tag} key-bias grad layer {l}",
              f"||g_key|| / ||g_qkv_bias|| = {r:.2e} (tol {G.KEY_BIAS_GRAD:.0e})")

    # ---- the drop path: exercised where token dropping is on, never taken where it is off ----
    full = k * S
    dropped = [f"{pre or 'fwd.'}moe.{l} {z}/{full}" for pre, per in kept.items() for l, (z, r) in per.items()
               if z < full]
    if mc["drop"]:
        check(len(dropped) > 0, f"{tag} token dropping exercised",
              f"kept slots < k*S = {full} in {len(dropped)} of {sum(len(v) for v in kept.values())} (pass, layer)s"
              + (f", e.g. {', '.join(dropped[:3])}" if dropped else ""))
    else:
        check(not dropped, f"{tag} nothing dropped",
              f"every pass and layer keeps all k*S = {full} slots" if not dropped else f"dropped: {', '.join(dropped)}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    t0 = time.time()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zt_moe_parity_") as tmp:
        for tag in MOE_NAMES:
            try:
                run_config(binary, tag, tmp)
            except Exception as e:  # a missing or malformed dump file: report it, go on
                check(False, f"{tag} comparison", f"{type(e).__name__}: {e}")
    print(f"# {time.time() - t0:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
