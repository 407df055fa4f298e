#!/usr/bin/env python3
"""Recounts the flops profiler's MoE modules as DeepSpeed's profiler counts them, independently of the C code: runs
test_moe_flops PATH, then for each case checks the params, MACs and flops of every module under an MoE layer's
`mlp` against counts made here from the tiny model's dimensions, DeepSpeed's capacity formula (fp32) and the
patched functions' rules, with torch.einsum's flops taken from numpy's own einsum_path as
deepspeed/profiling/flops_profiler/profiler.py::_einsum_flops_compute does. Exits 77 (skip) without numpy."""
import os
import subprocess
import sys
from collections import OrderedDict

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

C, F, B, T = 16, 64, 2, 8
S = B * T
fails = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)


def einsum_flops(equation, *shapes):  # DeepSpeed's _einsum_flops_compute
    letters = OrderedDict((k, 0) for k in equation if k.isalpha()).keys()
    eq = equation.translate({ord(x): 97 + i for i, x in enumerate(letters)})
    text = np.einsum_path(eq, *[np.zeros(s) for s in shapes], optimize="optimal")[1]
    for line in text.split("\n"):
        if "optimized flop" in line.lower():
            return int(float(line.split(":")[-1]))
    raise AssertionError("no FLOP count in einsum_path's report")


def capacity(E, k, cf, min_cap=4):  # DeepSpeed's _capacity: (S / E) * an fp32 tensor, ceil, at least min_capacity
    cap = int(np.ceil(np.float32(S / E) * np.float32(cf * k)))
    return max(cap, min_cap)


def linear(rows, i, o, bias=True):
    return i * o + (o if bias else 0), rows * i * o, 2 * rows * i * o


def mlp(rows):  # ParallelMLP: its two linears (the bias-GELU is TorchScript, which DeepSpeed does not see)
    a, b = linear(rows, C, F), linear(rows, F, C)
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def expected(E, k, drop, residual, cf, routed, pre):
    cap = capacity(E, k, cf) if drop else max(routed)
    sec = (S, E, cap)
    gate_f = 2 * S * C * E + S * E  # F.linear of the router, F.softmax
    if k == 1:
        gate_f += einsum_flops("se,sc->sec", (S, E), (S, cap))
    elif k == 2:
        gate_f += 2 * (einsum_flops("se,se->s", (S, E), (S, E)) + einsum_flops("s,se->se", (S,), (S, E))
                       + einsum_flops("se,sc->sec", (S, E), (S, cap)))
    else:
        gate_f += einsum_flops("se,sec->sec", (S, E), sec)
    if not drop:
        gate_f += 1  # torch.ceil(new_capacity / tp).mul(tp): Tensor.mul on a 0-d tensor
    out = {}
    out[pre + ".deepspeed_moe.gate.wg"] = (E * C, 0, 0)
    out[pre + ".deepspeed_moe.gate"] = (E * C, S * C * E, gate_f)
    ex = mlp(cap)  # one expert over ep_size x capacity rows (ep_size 1)
    for e in range(E):
        out[pre + f".deepspeed_moe.experts.deepspeed_experts.{e}"] = ex
    experts = tuple(E * x for x in ex)
    out[pre + ".deepspeed_moe.experts"] = experts
    out[pre + ".deepspeed_moe.experts.deepspeed_experts"] = experts  # the ModuleList
    own = einsum_flops("sec,sm->ecm", sec, (S, C)) + einsum_flops("sec,ecm->sm", sec, (E, cap, C))
    layer = (E * C + experts[0], S * C * E + experts[1], gate_f + experts[2] + own)
    out[pre + ".deepspeed_moe"] = layer
    moe = layer
    if residual:
        out[pre + ".mlp"] = mlp(S)
        out[pre + ".coefficient"] = linear(S, C, 2)
        moe = tuple(a + b + c for a, b, c in zip(layer, mlp(S), linear(S, C, 2)))
        moe = (moe[0], moe[1], moe[2] + 2 * S)  # F.softmax of the two coefficients
    out[pre] = moe
    return out, cap


def main():
    exe, path = sys.argv[1], sys.argv[2]
    if os.path.exists(path):
        os.remove(path)
    r = subprocess.run([exe, path], capture_output=True, text=True)
    print(r.stdout, end="")
    check(r.returncode == 0, f"test_moe_flops exits 0 (rc {r.returncode}): {r.stderr.strip()[-300:]}")
    if not os.path.exists(path):
        return
    cases, cur = [], None
    for line in open(path):
        w = line.split()
        if w[0] == "case":
            i = w.index("topk")
            cur = {"name": " ".join(w[1:i]), "topk": int(w[i + 1]), "drop": int(w[i + 3]),
                   "residual": int(w[i + 5]), "cf": float(w[i + 7]), "experts": [int(x) for x in w[i + 9:]],
                   "gates": {}, "mods": {}}
            cases.append(cur)
        elif w[0] == "gate":
            cur["gates"][int(w[1])] = (int(w[5]), [int(x) for x in w[7:]])
        elif w[0] == "module":
            cur["mods"][w[1]] = (w[2], int(w[3]), int(w[4]), int(w[5]))
    check(len(cases) == 4, f"4 cases written ({len(cases)})")
    rounded = 0
    for cs in cases:
        for l, E in enumerate(cs["experts"]):
            pre = f"language_model.encoder.layers.{l}.mlp"
            if E == 1:
                check(cs["mods"].get(pre, ("",))[0] == "ParallelMLP", f"{cs['name']}: layer {l} is dense")
                continue
            cap_c, routed = cs["gates"][l]
            want, cap = expected(E, cs["topk"], cs["drop"], cs["residual"], cs["cf"], routed, pre)
            check(cap == cap_c, f"{cs['name']}: layer {l} capacity {cap_c} (expected {cap})")
            got = {p: m for p, m in cs["mods"].items() if p == pre or p.startswith(pre + ".")}
            # the dense branch's and the experts' linears: their own rows
            for p in list(got):
                if p.endswith((".dense_h_to_4h", ".dense_4h_to_h")):
                    rows = S if p.startswith(pre + ".mlp.") else cap
                    i, o = (C, F) if p.endswith("h_to_4h") else (F, C)
                    want[p] = linear(rows, i, o)
            check(set(got) == set(want), f"{cs['name']}: layer {l} modules {sorted(set(got) ^ set(want))}")
            for p in sorted(want):
                if p in got:
                    check(got[p][1:] == want[p], f"{cs['name']}: {p[len(pre) - 3:]} {got[p][1:]} == {want[p]}")
            sec = S * E * cap * C * 2 + 1
            rounded += int(float(f"{sec:.3e}")) != sec
            check(got[pre][0] == "MoE" and got[pre + ".deepspeed_moe"][0] == "MOELayer"
                  and got[pre + ".deepspeed_moe.gate"][0] == "TopKGate", f"{cs['name']}: DeepSpeed's class names")
    check(rounded > 0, f"some einsum count is rounded by einsum_path's %.3e ({rounded} layers)")
    print(f"{len(fails)} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
