#!/usr/bin/env python3
"""Checks the flops profiler report's DeepSpeed layout: runs test_flops_profiler PATH, then compares the
summary lines, the aggregated depth lines and the detailed module tree of PATH (and PATH.depth2: depth
2, not detailed, no bwd timings) against counts and DeepSpeed's number formatting recomputed here from
the tiny model's dimensions (2 layers, h=16, 2 heads, ffn 64, T=8, B=2, V=32, 8 positions)."""
import os
import re
import subprocess
import sys

L, C, NH, F, T, B, V, P = 2, 16, 2, 64, 8, 2, 32, 8
HD, N = C // NH, B * T


def number(num, suffix=""):  # DeepSpeed's number_to_string (precision 2)
    for mag, u in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if num >= mag:
            return f"{round(num / mag, 2):g} {u}{suffix}"
    if num >= 1 or num == 0:
        return f"{round(num, 2):g} {suffix}"
    if num >= 1e-3:
        return f"{round(num / 1e-3, 2):g} m{suffix}"
    return f"{round(num / 1e-6, 2):g} u{suffix}"


def params(n):
    return number(n).replace("G", "B").strip()


fails = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)


def main():
    exe, path = sys.argv[1], sys.argv[2]
    if os.path.exists(path):
        os.remove(path)
    r = subprocess.run([exe, path], capture_output=True, text=True)
    check(r.returncode == 0, f"test_flops_profiler {path} exits 0 (rc {r.returncode})")
    if not os.path.exists(path):
        check(False, f"report written to {path}")
        return
    text = open(path).read()
    lines = text.split("\n")
    # per-layer parameters and MACs, counted independently of the C code
    lin = lambda i, o: (i * o + o, N * i * o)
    qkv, dense, fc1, fc2 = lin(C, 3 * C), lin(C, C), lin(C, F), lin(F, C)
    core_macs = 2 * B * NH * T * T * HD
    layer_p = 2 * 2 * C + qkv[0] + dense[0] + fc1[0] + fc2[0]
    layer_m = qkv[1] + dense[1] + fc1[1] + fc2[1] + core_macs
    total_p = V * C + P * C + L * layer_p + 2 * C
    total_m = L * layer_m + N * C * V
    elementwise = L * (2 * 5 * N * C + 2 * B * NH * T * T) + 5 * N * C  # LayerNorms, baddbmm out, softmax
    total_f = 2 * total_m + elementwise

    heads = ["-------------------------- DeepSpeed Flops Profiler --------------------------",
             "----------------------------- Aggregated Profile per GPU -----------------------------",
             "------------------------------ Detailed Profile per GPU ------------------------------"]
    pos = [text.find(h) for h in heads]
    check(all(p >= 0 for p in pos) and pos == sorted(pos), "section headers present, in order")
    check(lines[-2] == "-" * 78 and lines[-1] == "", "closing rule")
    check("Profile Summary at step 3:" in lines, "profile step line")

    summary = {}
    for l in lines:
        m = re.match(r"^(.{70})  (.*)$", l)
        if m and m.group(1).rstrip().endswith(":"):
            summary[m.group(1).rstrip()] = m.group(2).rstrip()
    fwd, bwd, step = 0.002, 0.004, 0.001
    want = {
        "world size:": "1", "data parallel size:": "1", "model parallel size:": "1", "batch size per GPU:": str(B),
        "params per GPU:": params(total_p), "params of model = params per GPU * mp_size:": params(total_p),
        "fwd MACs per GPU:": number(total_m, "MACs"), "fwd flops per GPU:": number(total_f).rstrip(),
        "fwd flops of model = fwd flops per GPU * mp_size:": number(total_f).rstrip(),
        "fwd latency:": number(fwd, "s"),
        "fwd FLOPS per GPU = fwd flops per GPU / fwd latency:": number(total_f / fwd, "FLOPS"),
        "bwd latency:": number(bwd, "s"),
        "bwd FLOPS per GPU = 2 * fwd flops per GPU / bwd latency:": number(2 * total_f / bwd, "FLOPS"),
        "fwd+bwd FLOPS per GPU = 3 * fwd flops per GPU / (fwd+bwd latency):": number(3 * total_f / (fwd + bwd),
                                                                                     "FLOPS"),
        "step latency:": number(step, "s"), "iter latency:": number(fwd + bwd + step, "s"),
        "FLOPS per GPU = 3 * fwd flops per GPU / iter latency:": number(3 * total_f / (fwd + bwd + step), "FLOPS"),
        "samples/second:": str(round(B / (fwd + bwd + step), 2)),
    }
    for k, v in want.items():
        check(summary.get(k) == v, f"summary '{k}' = '{v}' (got '{summary.get(k)}')")

    # aggregated: module tree depth 7 (GPTModel .. linear layers) -> depths 0..5 printed, top 2
    check("Top 2 modules in terms of params, MACs or fwd latency at different model depths:" in lines,
          "aggregated title")
    depths = [int(m.group(1)) for l in lines for m in [re.match(r"^depth (\d+):$", l)] if m]
    check(depths == list(range(6)), f"depth lines 0..5 (got {depths})")
    i = lines.index("depth 2:")
    check(lines[i + 1] == "    params      - {'ParallelTransformer': '%s', 'Embedding': '%s'}"
          % (params(L * layer_p + 2 * C), params(V * C + P * C)), "depth 2 params line: " + lines[i + 1])
    i = lines.index("depth 5:")
    check(lines[i + 2] == "    MACs        - {'ParallelMLP': '%s', 'ParallelAttention': '%s'}"
          % (number(L * (fc1[1] + fc2[1]), "MACs"), number(L * (qkv[1] + dense[1] + core_macs), "MACs")),
          "depth 5 MACs line: " + lines[i + 2])
    check(re.match(r"^    fwd latency - \{'GPTModel': '[0-9.]+ [mu]?s'\}$", lines[lines.index("depth 0:") + 3])
          is not None, "depth 0 latency line")

    # detailed tree: names, classes, nesting (2 spaces per level), percentages
    tree = [l for l in lines if re.match(r"^ *\((\w+)\): ", l)]
    names = [re.match(r"^( *)\((\w+)\): (\w+)\(", l).groups() for l in tree]
    got = [(len(s), n, c) for s, n, c in names[:2]]
    check(got == [(2, "language_model", "TransformerLanguageModel"), (4, "embedding", "Embedding")],
          f"tree starts with language_model / embedding ({got})")
    want_names = ["language_model", "embedding", "word_embeddings", "position_embeddings", "encoder", "layers"]
    for l in range(L):
        want_names += [str(l), "input_layernorm", "self_attention", "query_key_value", "core_attention", "dense",
                       "post_attention_layernorm", "mlp", "dense_h_to_4h", "dense_4h_to_h"]
    want_names += ["final_layernorm"]
    check([n for _, n, _ in names] == want_names, "tree module names in Megatron's order")
    check(lines[lines.index("GPTModel(") + 1].startswith(
        f"  {params(total_p)} = 100% Params, {number(total_m, 'MACs')} = 100% MACs, "), "root profile line")
    q = [l for l in tree if "(query_key_value)" in l][0]
    pct_p, pct_m = round(100 * qkv[0] / total_p, 2), round(100 * qkv[1] / total_m, 2)
    check(q.strip().startswith(f"(query_key_value): ColumnParallelLinear({params(qkv[0])} = {pct_p:g}% Params, "
                               f"{number(qkv[1], 'MACs')} = {pct_m:g}% MACs, "), "qkv profile: " + q.strip())
    ln = [l for l in tree if "(final_layernorm)" in l][0]
    check(ln.endswith(f"FLOPS, ({C},), eps=1e-05, elementwise_affine=True)"), "LayerNorm keeps its extra_repr")

    # second report: module_depth 2, not detailed, no bwd timings
    t2 = open(path + ".depth2").read().split("\n")
    d2 = [l for l in t2 if re.match(r"^depth \d+:$", l)]
    check(d2 == ["depth 0:", "depth 1:"], f"module_depth 2 prints depths 0 and 1 ({d2})")
    check(not any("Detailed Profile" in l for l in t2), "detailed false: no tree")
    check(not any(l.startswith("bwd latency:") for l in t2), "no bwd timings: no bwd lines")
    check("Top 1 modules in terms of params, MACs or fwd latency at different model depths:" in t2, "top 1 title")


if __name__ == "__main__":
    main()
    print(f"{len(fails)} failed")
    sys.exit(1 if fails else 0)
