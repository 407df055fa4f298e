#!/usr/bin/env python3
"""zero_memory_estimate against a Python oracle of DeepSpeed's estimators (the formulas of
stage_1_and_2.py::estimate_zero2_model_states_mem_needs and stage3.py::estimate_zero3_model_states_mem_needs
written out here with Python's own arithmetic, and the all_cold printing), over a grid of parameter counts,
layouts and buffer factors; two published DeepSpeed outputs (docs: t5-3b on 1 node x 8 GPUs; a t5-small run
printed by Python >= 3.11 with OffloadDeviceEnum names); the GPT-shape parameter count against a
module-by-module count; and argument errors. Usage: test_zero_estimate.py <zero_memory_estimate>"""
import subprocess
import sys

EXE = sys.argv[1]
failed = 0


def check(ok, name, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if not ok:
        failed += 1


def zero2(P, gpn, nodes, offload, abf):
    G = nodes * gpn
    if offload:
        gpu = 2 * P
        cpu = P * max(4 * G, 16) * abf
    else:
        gpu = 2 * P + int(18 * P / G)
        cpu = P * 4 * gpn * abf
    return int(cpu), int(gpu)


def zero3(P, L, gpn, nodes, offload, offload_params, zero_init, abf):
    G = nodes * gpn
    f = 1 / nodes
    llm = 4 * L
    if offload:
        if offload_params:
            gpu = llm
            cpu = P * 18 * f * abf if zero_init else P * max(4 * gpn, 18 * f) * abf
        else:
            gpu = llm + int(2 * P / G)
            cpu = P * 16 * f * abf if zero_init else P * max(4 * gpn, 16 * f) * abf
    else:
        gpu = llm + int(18 * P / G)
        cpu = L * 4 * gpn * abf if zero_init else P * 4 * gpn * abf
    return int(cpu), int(gpu)


def header(P, gpn, nodes):
    return ["Estimated memory needed for params, optim states and gradients for a:",
            f"HW: Setup with {nodes} {'nodes' if nodes > 1 else 'node'}, {gpn} {'GPUs' if gpn > 1 else 'GPU'} per node."]


def table2(P, gpn, nodes, abf, cpu_name="cpu "):
    out = header(P, gpn, nodes) + [f"SW: Model with {int(P / 1e6)}M total params.", "  per CPU  |  per GPU |   Options"]
    for off in (True, False):
        c, g = zero2(P, gpn, nodes, off, abf)
        out.append(f" {c / 2**30:7.2f}GB | {g / 2**30:6.2f}GB | offload_optimizer={cpu_name if off else 'none'}")
    return out


def table3(P, L, gpn, nodes, abf, cpu_name="cpu "):
    out = header(P, gpn, nodes) + [f"SW: Model with {int(P / 1e6)}M total params, {int(L / 1e6)}M largest layer params.",
                                   "  per CPU  |  per GPU |   Options"]
    for off in (True, False):
        for offp in (True, False):
            if not off and offp:
                continue
            for zi in (True, False):
                c, g = zero3(P, L, gpn, nodes, off, offp, zi, abf)
                out.append(f" {c / 2**30:7.2f}GB | {g / 2**30:6.2f}GB | offload_param={cpu_name if offp else 'none'}, "
                           f"offload_optimizer={cpu_name if off else 'none'}, zero_init={1 if zi else 0}")
    return out


def run(*args):
    r = subprocess.run([EXE] + [str(a) for a in args], capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines(), r.stderr


# 1. the grid: every line of both tables equals the oracle's
cases = 0
bad = []
for P in (1, 999_999, 60_506_624, 124_475_904, 2_851_598_336, 13_000_000_000, 175_000_000_000, 1_000_000_000_000):
    for L in sorted({1, max(1, P // 97), max(1, P // 3)}):
        for gpn in (1, 2, 8):
            for nodes in (1, 2, 3, 16):
                for abf in (1.5, 1.0, 2.25):
                    rc, out, err = run("--params", P, "--largest-layer-params", L, "--num-gpus-per-node", gpn,
                                       "--num-nodes", nodes, "--additional-buffer-factor", abf)
                    want = table2(P, gpn, nodes, abf) + table3(P, L, gpn, nodes, abf)
                    cases += 1
                    if rc != 0 or out != want:
                        bad.append((P, L, gpn, nodes, abf, rc, err, [(a, b) for a, b in zip(out, want) if a != b][:2]))
check(not bad, f"{cases} layouts: both tables equal the Python oracle line for line", repr(bad[:3]))

# 2. --stage selects one table
rc, out, _ = run("--params", "13e9", "--stage", "2", "--num-gpus-per-node", 8)
check(rc == 0 and out == table2(13_000_000_000, 8, 1, 1.5), "--stage 2: the ZeRO-2 table only")
rc, out, _ = run("--params", "1.3B", "--largest-layer-params", "65M", "--stage", "3", "--num_nodes", 4)
check(rc == 0 and out == table3(1_300_000_000, 65_000_000, 1, 4, 1.5), "--stage 3, 1.3B / 65M suffixes, --num_nodes")

# 3. published outputs. DeepSpeed's docs (memory.md), t5-3b (2,851,598,336 parameters, largest layer the 32128 x 1024
# shared embedding) on 1 node x 8 GPUs:
docs = ["Estimated memory needed for params, optim states and gradients for a:",
        "HW: Setup with 1 node, 8 GPUs per node.",
        "SW: Model with 2851M total params, 32M largest layer params.",
        "  per CPU  |  per GPU |   Options",
        "   71.71GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1",
        "  127.48GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0",
        "   63.74GB |   0.79GB | offload_param=none, offload_optimizer=cpu , zero_init=1",
        "  127.48GB |   0.79GB | offload_param=none, offload_optimizer=cpu , zero_init=0",
        "    1.47GB |   6.10GB | offload_param=none, offload_optimizer=none, zero_init=1",
        "  127.48GB |   6.10GB | offload_param=none, offload_optimizer=none, zero_init=0"]
rc, out, _ = run("--params", 2851598336, "--largest-layer-params", 32128 * 1024, "--num-gpus-per-node", 8, "--stage", 3)
check(rc == 0 and out == docs, "DeepSpeed docs example (t5-3b, 1 node x 8 GPUs)", "\n".join(out))
# t5-small (60,506,624 parameters, 32128 x 512 embedding) on one GPU, as printed under Python >= 3.11:
small = [" %7.2fGB | %6.2fGB | %s" % row for row in (
    (1.52, 0.06, "offload_param=OffloadDeviceEnum.cpu, offload_optimizer=OffloadDeviceEnum.cpu, zero_init=1"),
    (1.52, 0.06, "offload_param=OffloadDeviceEnum.cpu, offload_optimizer=OffloadDeviceEnum.cpu, zero_init=0"),
    (1.35, 0.17, "offload_param=none, offload_optimizer=OffloadDeviceEnum.cpu, zero_init=1"),
    (1.35, 0.17, "offload_param=none, offload_optimizer=OffloadDeviceEnum.cpu, zero_init=0"),
    (0.09, 1.08, "offload_param=none, offload_optimizer=none, zero_init=1"),
    (0.34, 1.08, "offload_param=none, offload_optimizer=none, zero_init=0"))]
rc, out, _ = run("--params", 60506624, "--largest-layer-params", 32128 * 512, "--stage", 3, "--enum-names")
check(rc == 0 and out[2] == "SW: Model with 60M total params, 16M largest layer params." and out[4:] == small,
      "published t5-small output with --enum-names", "\n".join(out))


# 4. GPT shapes: an independent module-by-module count (Megatron's modules and their own parameters)
def gpt_modules(L, h, ffn, pos, V, untie):
    mods = {"embedding.word_embeddings": V * h, "embedding.position_embeddings": pos * h,
            "encoder.final_layernorm": 2 * h}
    for i in range(L):
        p = f"encoder.layers.{i}."
        mods[p + "input_layernorm"] = h + h
        mods[p + "self_attention.query_key_value"] = 3 * h * h + 3 * h
        mods[p + "self_attention.dense"] = h * h + h
        mods[p + "post_attention_layernorm"] = h + h
        mods[p + "mlp.dense_h_to_4h"] = ffn * h + ffn
        mods[p + "mlp.dense_4h_to_h"] = h * ffn + h
    if untie:
        mods["output_layer"] = V * h
    return sum(mods.values()), max(mods.values())


for (L, h, seq, V, extra) in ((12, 768, 1024, 50257, []), (24, 1024, 2048, 50257, ["--untie-embeddings-and-output-weights"]),
                              (2, 64, 4096, 1000, ["--max-position-embeddings", 8192, "--make-vocab-size-divisible-by", 64]),
                              (96, 12288, 2048, 50257, []), (4, 256, 128, 50257, ["--ffn-hidden-size", 2000]),
                              (40, 5120, 2048, 51200, [])):
    pos = seq
    div = 128
    ffn = 4 * h
    untie = "--untie-embeddings-and-output-weights" in extra
    if "--max-position-embeddings" in extra:
        pos = extra[extra.index("--max-position-embeddings") + 1]
    if "--make-vocab-size-divisible-by" in extra:
        div = extra[extra.index("--make-vocab-size-divisible-by") + 1]
    if "--ffn-hidden-size" in extra:
        ffn = extra[extra.index("--ffn-hidden-size") + 1]
    Vp = V
    while Vp % div:
        Vp += 1
    P, big = gpt_modules(L, h, ffn, pos, Vp, untie)
    rc, out, err = run("--num-layers", L, "--hidden-size", h, "--seq-length", seq, "--vocab-size", V,
                       "--num-gpus-per-node", 8, "--num-nodes", 2, *extra)
    want = table2(P, 8, 2, 1.5) + table3(P, big, 8, 2, 1.5)
    ok = rc == 0 and out[1:] == want and f"{P} parameters, largest layer {big}" in out[0] and f"padded to {Vp}" in out[0]
    check(ok, f"GPT L={L} h={h} seq={seq} V={V} {' '.join(map(str, extra))}: {P} parameters, largest {big}",
          err + "\n".join(out[:3]))
check(gpt_modules(12, 768, 3072, 1024, 50304, False)[0] == 124_475_904, "oracle: GPT-2 124M = 124,475,904 (hand count)")

# 5. errors name the flag and the value
for args, needle in ((["--params", "1x"], "argument --params: '1x' is not a positive whole number"),
                     (["--params", "1.5"], "argument --params: '1.5' is not a positive whole number"),
                     (["--params", "1e9"], "ZeRO-3 needs --largest-layer-params with --params 1000000000"),
                     (["--params", "1e9", "--largest-layer-params", "2e9"], "--largest-layer-params 2000000000 is larger than --params 1000000000"),
                     (["--params", "1e9", "--stage", "1"], "argument --stage: 1 has no DeepSpeed estimator"),
                     (["--params", "1e9", "--num-gpus-per-node", "0"], "argument --num-gpus-per-node: 0 is out of range"),
                     (["--params", "1e9", "--num-nodes", "two"], "argument --num-nodes: invalid int value: 'two'"),
                     (["--params", "1e9", "--additional-buffer-factor", "-1"], "argument --additional-buffer-factor: '-1' is not a positive number"),
                     (["--num-layers", "2", "--hidden-size", "8"], "a GPT shape needs --num-layers, --hidden-size, --vocab-size and --seq-length"),
                     (["--params", "1e9", "--num-layers", "2"], "give either --params"),
                     (["--num-layers", "2", "--hidden-size", "8", "--vocab-size", "10", "--seq-length", "64",
                       "--max-position-embeddings", "32"], "--seq-length 64 is larger than --max-position-embeddings 32"),
                     (["--params", "1e9", "--tensor-model-parallel-size", "2"], "unrecognized argument: --tensor-model-parallel-size"),
                     ([], "nothing to estimate")):
    rc, out, err = run(*args)
    check(rc == 1 and needle in err, f"error: {' '.join(args) or '(no arguments)'}", f"rc {rc}: {err}")

print(f"{failed} failed")
sys.exit(1 if failed else 0)
