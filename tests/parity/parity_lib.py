"""Shared helpers of the PyTorch parity tests (test_gpt_parity.py, test_bert_parity.py, test_moe_parity.py,
test_t5_parity.py, test_llama_parity.py and the export tests): the PASS/FAIL counter, the norm-wise relative
difference, Megatron's weight-decay groups, its cosine LR schedule in samples (the dumps' schedule), the clipped AdamW
step every dump takes and the check of a dumped step's scalars, the key rows of the fused QKV bias; the layer variants
the twins share (norm, linear, MLP activation); running a tool, reading safetensors."""
import json
import math
import subprocess

import numpy as np

MAX_LR, MIN_LR = 1e-3, 1e-4  # the schedule every parity dump trains with
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP_GRAD = 0.9, 0.95, 1e-8, 0.1, 1.0  # its AdamW and gradient clipping
counts = {"passed": 0, "failed": 0}


def check(ok, name, detail=""):
    counts["passed" if ok else "failed"] += 1
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    return ok


def summary():
    """Prints "N passed, M failed" and returns the exit status."""
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0


def rel(a, ref):
    a = np.asarray(a, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    d = float(np.linalg.norm((a - ref).ravel()))
    n = float(np.linalg.norm(ref.ravel()))
    return d / n if n > 0 else (0.0 if d == 0 else math.inf)


def lr_at(num_samples, warmup, decay):
    """Megatron's OptimizerParamScheduler.get_lr, cosine style, counted in samples."""
    if warmup > 0 and num_samples <= warmup:
        return MAX_LR * num_samples / warmup
    if num_samples > decay:
        return MIN_LR
    ratio = (num_samples - warmup) / (decay - warmup)
    return MIN_LR + 0.5 * (math.cos(math.pi * ratio) + 1.0) * (MAX_LR - MIN_LR)


def no_weight_decay(name):
    # Megatron's _get_params_for_weight_decay_optimization: biases and LayerNorm parameters
    return name.endswith(".bias") or "layernorm" in name


def key_bias_rows(C, NH, rot=0):
    """The key rows of a per-head [q | k | v] query_key_value bias, whose gradient is zero in exact arithmetic (a
    softmax is shift-invariant); with rotary embeddings only the unrotated dims [rot, HD) of each key."""
    HD = C // NH
    return np.array([h * 3 * HD + HD + d for h in range(NH) for d in range(rot, HD)])


def clip_and_adamw(P, m, v, grads, names, k, lr):
    """Step k (from 1) of every dump's optimizer on float64 tensors: the global gradient norm, Megatron's clipping to
    CLIP_GRAD (coefficient CLIP_GRAD / (norm + 1e-6) when below 1), then AdamW with bias correction and decoupled weight
    decay outside the no-decay group, in place on P, m, v. Returns (norm, clip)."""
    norm = math.sqrt(sum(float((grads[n] ** 2).sum()) for n in names))
    coeff = CLIP_GRAD / (norm + 1e-6)
    clip = coeff if coeff < 1.0 else 1.0
    for n in names:
        g = grads[n] * clip
        m[n] = BETA1 * m[n] + (1 - BETA1) * g
        v[n] = BETA2 * v[n] + (1 - BETA2) * g * g
        update = (m[n] / (1 - BETA1 ** k)) / ((v[n] / (1 - BETA2 ** k)).sqrt() + ADAM_EPS)
        if not no_weight_decay(n):
            update = update + WEIGHT_DECAY * P[n]
        P[n] = P[n] - lr * update
    return norm, clip


def check_step_scalars(d, tag, k, loss, norm, clip, lr, tol_loss, tol_grad):
    """A dump's step k: its mean loss, gradient norm, clip multiplier and learning rate against the reference's."""
    s = f"step{k}."
    zl, zn, zc, zlr = d.scalar(s + "loss"), d.scalar(s + "grad_norm"), d.scalar(s + "clip"), d.scalar(s + "lr")
    e = abs(zl - loss) / abs(loss)
    check(e <= tol_loss, f"{tag} step{k} loss", f"zt {zl:.7f} ref {loss:.7f} rel {e:.2e} (tol {tol_loss:.0e})")
    e = abs(zn - norm) / norm
    check(e <= tol_grad, f"{tag} step{k} grad_norm", f"zt {zn:.7f} ref {norm:.7f} rel {e:.2e} (tol {tol_grad:.0e})")
    e = abs(zc - clip) / clip
    check(e <= tol_grad, f"{tag} step{k} clip", f"zt {zc:.7f} ref {clip:.7f} rel {e:.2e} (tol {tol_grad:.0e})")
    e = abs(zlr - lr) / lr if lr else abs(zlr)
    check(e <= 1e-6, f"{tag} step{k} lr", f"zt {zlr:.6e} ref {lr:.6e} (rel {e:.1e})")



# ---- the layer variants of Megatron's ParallelTransformerLayer, for the twins (cfg keys: rmsnorm, ln1p, add_bias,
# swiglu, act = runtime/ops/ops.h's zt_act_kind: 0 the tanh GELU, 1 the erf GELU, 3 the squared ReLU; absent: off)
def twin_norm(P, name, x, cfg, eps):
    """The norm `name` (without .weight/.bias): RMSNorm (--normalization rmsnorm), or LayerNorm whose weight is
    zero-centred with --apply-layernorm-1p (fused_layer_norm.py: `weight = self.weight + 1`)."""
    import torch
    import torch.nn.functional as F
    if cfg.get("rmsnorm", 0):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * P[name + ".weight"]
    w = P[name + ".weight"] + 1 if cfg.get("ln1p", 0) else P[name + ".weight"]
    return F.layer_norm(x, (x.shape[-1],), w, P[name + ".bias"], eps)


def twin_linear(P, name, x, cfg):
    """x W^T (+ b unless --disable-bias-linear)."""
    y = x @ P[name + ".weight"].T
    return y + P[name + ".bias"] if cfg.get("add_bias", 1) else y


def twin_mlp_act(f, cfg):
    """ParallelMLP's activation of dense_h_to_4h's output: SwiGLU (silu of the first half times the second), the squared
    ReLU, F.gelu's erf form (no bias-GELU fusion) or the tanh form (the fused bias-GELU, --openai-gelu)."""
    import torch
    import torch.nn.functional as F
    if cfg.get("swiglu", 0):
        g, u = torch.chunk(f, 2, dim=-1)
        return F.silu(g) * u
    act = cfg.get("act", 0)
    if act == 3:
        return torch.pow(F.relu(f), 2)
    return F.gelu(f) if act == 1 else F.gelu(f, approximate="tanh")


def twin_rope_tables(T, rot, theta):
    """cos, sin [T, rot] of Megatron's RotaryEmbedding(rot, theta)(T), in float64."""
    import torch
    inv_freq = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def twin_apply_rope(x, cos, sin):
    """apply_rotary_pos_emb on x [B, NH, T, HD] with tables [T, rot]: the first rot dims turn, the rest pass."""
    import torch
    rot = cos.shape[-1]
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
    out = xr * cos + torch.cat((-x2, x1), dim=-1) * sin
    return torch.cat((out, xp), dim=-1)


def twin_qkv(qkv, NH, NKV, rope=None):
    """ParallelAttention's query_key_value output [B, T, (NH + 2 NKV) HD] as q, k, v [B, NH, T, HD]: NKV groups of
    NH/NKV queries, a key and a value (NKV = NH: Megatron's per-head [q | k | v]), rotary on q and k (rope: (cos, sin)
    or None), then each group's key and value repeated to its heads (repeat_kv)."""
    B, T = qkv.shape[0], qkv.shape[1]
    R = NH // NKV
    HD = qkv.shape[2] // (NH + 2 * NKV)
    g = qkv.view(B, T, NKV, R + 2, HD)
    q = g[:, :, :, :R, :].reshape(B, T, NH, HD).permute(0, 2, 1, 3)  # head g R + j
    k, v = (g[:, :, :, i, :].permute(0, 2, 1, 3) for i in (R, R + 1))  # [B, NKV, T, HD]
    if rope is not None:
        q, k = twin_apply_rope(q, *rope), twin_apply_rope(k, *rope)
    return q, k.repeat_interleave(R, dim=1), v.repeat_interleave(R, dim=1)


def run(*cmd, ok=True):
    """Runs a command (its arguments str()-ed), stdout and stderr together; a failure ends the test unless ok=False."""
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if ok and p.returncode != 0:
        print(p.stdout[-3000:])
        raise SystemExit("command failed: %s" % " ".join(map(str, cmd)))
    return p


def read_safetensors(path, dtypes=None):
    """An independent reader of the safetensors format (F32 and BF16): {name: float64 numpy array}; dtypes, when a
    dict, receives each tensor's dtype as the header names it."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        b, f = e["data_offsets"]
        if e["dtype"] == "BF16":  # the top 16 bits of a float32
            v = (np.frombuffer(data[b:f], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            assert e["dtype"] == "F32", (name, e)
            v = np.frombuffer(data[b:f], dtype="<f4")
        out[name] = v.reshape(e["shape"]).astype(np.float64)
        if dtypes is not None:
            dtypes[name] = e["dtype"]
    return out
