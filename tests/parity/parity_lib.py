"""Shared helpers of the PyTorch parity tests (test_gpt_parity.py, test_bert_parity.py, test_bert_hf_export.py):
the PASS/FAIL counter, the norm-wise relative difference, Megatron's weight-decay groups, its cosine LR schedule
in samples (the dumps' schedule), the key rows of the fused QKV bias."""
import math

import numpy as np

MAX_LR, MIN_LR = 1e-3, 1e-4  # the schedule every parity dump trains with
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


def key_bias_rows(C, NH):
    HD = C // NH
    return np.array([h * 3 * HD + HD + d for h in range(NH) for d in range(HD)])
