#!/usr/bin/env python3
"""Tests runtime/parallel/parallel_state through tests/parallel/layout_tool.

1. The reference examples written out literally (Megatron's docstring W=16 t=2 p=4, DeepSpeed's W=16 t=2 EP=4,
   the interleaved 16 layers p=4 v=2 example).
2. Every layout with world <= 64 (all tp, pp dividing it, every ep dividing dp, vpp 1 or 2 where allowed)
   against an independent reimplementation of the nested loops of Megatron's
   parallel_state.initialize_model_parallel and DeepSpeed's groups._get_expert_parallel_ranks (its E + D and
   D + E topologies), plus
   properties: partitions, round trips, model group = same dp rank.
3. Every refusal message verbatim.
4. DeepSpeed's 'type:transformer' pipeline partition (zt_layout_ds_partition, GPTModelPipe's stages under
   --deepspeed) against a transcription of deepspeed.runtime.utils.partition_balanced over the binary weights of
   front + num_layers + back items, for num_layers 1..40, pp 1..9, front 0..2, back 0..4; and hand-checked cases.
Usage: test_parallel_state.py <layout_tool>
"""
import os
import subprocess
import sys

TOOL = sys.argv[1]
KINDS = ["tensor", "data", "pipeline", "model", "embedding", "position_embedding", "expert", "expert_data"]
from checks import check, finish  # noqa: E402  (tests/parallel/checks.py, beside this file)


def parse(text):
    """Returns a list of layouts: dict with L, G[kind] = list of groups, R[kind][rank], C[rank], S[(s,c)]."""
    out, cur = [], None
    for line in text.splitlines():
        f = line.split()
        if f[0] == "L":
            cur = {"L": tuple(map(int, f[1:])), "G": {}, "R": {k: {} for k in KINDS}, "C": {}, "S": {}}
        elif f[0] == "G":
            n, size = int(f[2]), int(f[3])
            m = list(map(int, f[4:]))
            assert len(m) == n * size, line
            cur["G"][f[1]] = [m[g * size:(g + 1) * size] for g in range(n)]
        elif f[0] == "R":
            m = list(map(int, f[4:]))
            assert len(m) == int(f[3]), line
            cur["R"][f[1]][int(f[2])] = m
        elif f[0] == "C":
            cur["C"][int(f[1])] = tuple(map(int, f[2:]))
        elif f[0] == "S":
            cur["S"][(int(f[1]), int(f[2]))] = (int(f[3]), int(f[4]))
        elif f[0] == "E":
            out.append(cur)
    return out


def run_layouts(layouts, data_first=False):
    inp = "".join("%d %d %d %d %d %d\n" % x for x in layouts)
    env = dict(os.environ, ZT_LAYOUT_DATA_FIRST="1" if data_first else "0")
    r = subprocess.run([TOOL], input=inp, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print("layout_tool failed:", r.stderr)
        sys.exit(1)
    return parse(r.stdout)


# ---- the oracle: Megatron's and DeepSpeed's loops, transcribed from the reference text ------------------
def megatron_groups(W, t, p, ep, data_first=False):
    d = W // (t * p)
    num_tp_groups = W // t
    num_pp_groups = W // p
    g = {k: [] for k in KINDS}
    all_dp = []
    for i in range(p):
        start_rank = i * num_pp_groups
        end_rank = (i + 1) * num_pp_groups
        for j in range(t):
            ranks = list(range(start_rank + j, end_rank, t))
            all_dp.append(ranks)
    g["data"] = all_dp
    for i in range(d):
        g["model"].append([dp_ranks[i] for dp_ranks in all_dp])
    for i in range(num_tp_groups):
        g["tensor"].append(list(range(i * t, (i + 1) * t)))
    for i in range(num_pp_groups):
        ranks = list(range(i, W, num_pp_groups))
        g["pipeline"].append(ranks)
        if len(ranks) > 1:
            g["embedding"].append([ranks[0], ranks[-1]])
            g["position_embedding"].append([ranks[0]])
        else:
            g["embedding"].append(ranks)
            g["position_embedding"].append(ranks)
    # deepspeed/utils/groups.py::_get_expert_parallel_ranks (E + D ordering, or D + E with
    # use_data_before_expert_parallel_), data groups per pipeline stage
    pp_stride = W // p
    dp_groups = []
    for pp_stage_start in range(0, W, pp_stride):
        for i in range(t):
            if data_first:
                dp_stride = W // ep // t // p
                grp = []
                for ds in range(dp_stride):
                    grp.extend(range(pp_stage_start + i + ds * t, pp_stage_start + pp_stride, dp_stride * t))
                dp_groups.append(grp)
            else:
                dp_groups.append(list(range(pp_stage_start + i, pp_stage_start + pp_stride, t)))
    for dp_ranks in dp_groups:
        parts = [dp_ranks[i:i + ep] for i in range(0, len(dp_ranks), ep)]
        g["expert"].extend(parts)
        for z in zip(*parts):
            g["expert_data"].append(list(z))
    return g


def check_layout(lay, W, t, p, ep, v, nl, data_first=False):
    tag = "W=%d t=%d p=%d ep=%d v=%d L=%d%s" % (W, t, p, ep, v, nl, " D+E" if data_first else "")
    d = W // (t * p)
    check(lay["L"] == (W, t, p, d, ep, v), "%s: L line %s" % (tag, lay["L"]))
    ref = megatron_groups(W, t, p, ep, data_first)
    for k in KINDS:
        got = lay["G"][k]
        check(got == ref[k], "%s: %s groups %s != reference %s" % (tag, k, got, ref[k]))
        # every rank's own group is the one of all_groups that contains it (none for embedding middles)
        flat = [r for grp in got for r in grp]
        check(len(flat) == len(set(flat)), "%s: %s groups overlap" % (tag, k))
        for r in range(W):
            mine = [grp for grp in got if r in grp]
            expect = mine[0] if mine else []
            check(lay["R"][k][r] == expect, "%s: rank %d %s group %s != %s" % (tag, r, k, lay["R"][k][r], expect))
            check(lay["R"][k][r] == sorted(lay["R"][k][r]), "%s: rank %d %s group not ascending" % (tag, r, k))
        if k not in ("embedding", "position_embedding"):
            check(sorted(flat) == list(range(W)), "%s: %s groups do not partition the world" % (tag, k))
    for r in range(W):
        tp_rank, dp_rank, pp_rank, back, mp_rank, seed, seed_dp, tp_seed = lay["C"][r]
        check((tp_rank, dp_rank, pp_rank) == (r % t, (r // t) % d, r // (t * d)), "%s: coords of %d" % (tag, r))
        check(back == r, "%s: rank round trip %d -> %d" % (tag, r, back))
        check(mp_rank == pp_rank * t + tp_rank, "%s: mp_rank of %d" % (tag, r))
        check(seed == 1234 + 100 * pp_rank, "%s: seed of %d" % (tag, r))
        check(seed_dp == 1234 + 100 * pp_rank + 10 * dp_rank, "%s: dp-random seed of %d" % (tag, r))
        check(tp_seed == 1234 + 100 * pp_rank + 2718 + tp_rank, "%s: tp seed of %d" % (tag, r))
        # model group = all ranks with the same dp rank; tensor = same (dp, pp); data = same (tp, pp)
        check(lay["R"]["model"][r] == [q for q in range(W) if (q // t) % d == dp_rank], "%s: model group %d" % (tag, r))
        check(lay["R"]["data"][r] == [q for q in range(W) if q % t == tp_rank and q // (t * d) == pp_rank],
              "%s: data group %d" % (tag, r))
    if nl > 0:
        # Megatron's transformer offset: vpp_rank * (L / vpp) + pp_rank * (L / pp / vpp)
        per = nl // p // v
        covered = []
        for s in range(p):
            for c in range(v):
                first, count = lay["S"][(s, c)]
                check((first, count) == (c * (nl // v) + s * per, per), "%s: layers of stage %d chunk %d" % (tag, s, c))
                covered += list(range(first, first + count))
        check(sorted(covered) == list(range(nl)), "%s: layers not covered exactly once" % tag)


# ---- 1. literal examples -------------------------------------------------------------------------------
lay = run_layouts([(16, 2, 4, 1, 1, 0)])[0]
check(lay["G"]["tensor"] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]], "docstring TP")
check(lay["G"]["data"] == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]], "docstring DP")
check(lay["G"]["pipeline"] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]], "docstring PP")
check(lay["G"]["model"] == [[0, 1, 4, 5, 8, 9, 12, 13], [2, 3, 6, 7, 10, 11, 14, 15]], "docstring model groups")
check(lay["G"]["embedding"] == [[0, 12], [1, 13], [2, 14], [3, 15]], "docstring embedding groups")
check(lay["G"]["position_embedding"] == [[0], [1], [2], [3]], "docstring position embedding groups")
check(lay["G"]["expert"] == [[0], [2], [1], [3], [4], [6], [5], [7], [8], [10], [9], [11], [12], [14], [13], [15]],
      "docstring expert groups (ep 1)")
check(lay["G"]["expert_data"] == lay["G"]["data"], "docstring expert-data groups (ep 1) = data groups")
check(lay["R"]["embedding"][5] == [] and lay["R"]["embedding"][13] == [1, 13], "embedding membership")
check(lay["C"][13][:3] == (1, 0, 3), "rank 13 coords (tp 1, dp 0, pp 3)")
check(lay["C"][13][4] == 7, "rank 13 mp_rank 7")

lay = run_layouts([(16, 2, 1, 4, 1, 0)])[0]
check(lay["G"]["data"] == [[0, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13, 15]], "EP example DP")
check(lay["G"]["expert"] == [[0, 2, 4, 6], [8, 10, 12, 14], [1, 3, 5, 7], [9, 11, 13, 15]], "EP example EP groups")
check(lay["G"]["expert_data"] == [[0, 8], [2, 10], [4, 12], [6, 14], [1, 9], [3, 11], [5, 13], [7, 15]],
      "EP example expert-DP groups")
check(lay["G"]["embedding"] == [[i] for i in range(16)], "pp 1: embedding group is the rank alone")

lay = run_layouts([(16, 1, 1, 2, 1, 0)])[0]  # DeepSpeed docs: world 16, ep 2
check(lay["G"]["expert"] == [[2 * i, 2 * i + 1] for i in range(8)], "ds world 16 ep 2: EP groups")
check(lay["G"]["expert_data"] == [list(range(0, 16, 2)), list(range(1, 16, 2))], "ds world 16 ep 2: EDP groups")

lay = run_layouts([(4, 1, 4, 1, 2, 16)])[0]  # 16 layers, p=4, v=2 (1-based: GPU0 [1,2],[9,10]; GPU1 [3,4],[11,12])
one_based = {s: [list(range(lay["S"][(s, c)][0] + 1, lay["S"][(s, c)][0] + lay["S"][(s, c)][1] + 1)) for c in range(2)]
             for s in range(4)}
check(one_based == {0: [[1, 2], [9, 10]], 1: [[3, 4], [11, 12]], 2: [[5, 6], [13, 14]], 3: [[7, 8], [15, 16]]},
      "interleaved example %s" % one_based)

# ---- 2. sweep over every layout with world <= 64 -------------------------------------------------------
layouts = []
for W in range(1, 65):
    for t in [x for x in range(1, W + 1) if W % x == 0]:
        for p in [x for x in range(1, W // t + 1) if (W // t) % x == 0]:
            d = W // (t * p)
            for ep in [x for x in range(1, d + 1) if d % x == 0]:
                for v in ([1, 2] if p > 2 else [1]):
                    nl = p * v * (1 + (W + t + ep) % 3)
                    layouts.append((W, t, p, ep, v, nl if W % 2 else 0))
results = run_layouts(layouts)
check(len(results) == len(layouts), "sweep: %d layouts back of %d" % (len(results), len(layouts)))
for lay, (W, t, p, ep, v, nl) in zip(results, layouts):
    check_layout(lay, W, t, p, ep, v, nl)
for lay, x in zip(run_layouts([(16, 2, 4, 1, 1, 0), (16, 2, 1, 4, 1, 0)]), [(16, 2, 4, 1, 1, 0), (16, 2, 1, 4, 1, 0)]):
    check_layout(lay, *x)
print("sweep: %d layouts" % len(layouts))
# the D + E topology (ds_config use_data_before_expert_parallelism) over the same layouts, and groups.py's example
# (world 32, tp 2, ep 8: the first data group listed as [0, 4, 8, ..., 28, 2, 6, ..., 30])
results = run_layouts(layouts, data_first=True)
for lay, (W, t, p, ep, v, nl) in zip(results, layouts):
    check_layout(lay, W, t, p, ep, v, nl, data_first=True)
lay = run_layouts([(32, 2, 1, 8, 1, 0)], data_first=True)[0]
check(lay["G"]["expert"][:2] == [list(range(0, 32, 4)), list(range(2, 32, 4))], "D+E example EP groups %s" % lay["G"]["expert"][:2])
check(lay["G"]["expert_data"][:2] == [[0, 2], [4, 6]], "D+E example expert-DP groups %s" % lay["G"]["expert_data"][:2])
print("sweep, D + E topology: %d layouts" % len(layouts))

# Megatron's clipping: tp = min(tp, world), pp = min(pp, world // tp)
lay = run_layouts([(4, 8, 1, 1, 1, 0), (8, 2, 16, 1, 1, 0)])
check(lay[0]["L"] == (4, 4, 1, 1, 1, 1), "tp 8 on world 4 clipped to 4: %s" % (lay[0]["L"],))
check(lay[1]["L"] == (8, 2, 4, 1, 1, 1), "pp 16 on world 8 / tp 2 clipped to 4: %s" % (lay[1]["L"],))

# ---- 3. refusals verbatim ------------------------------------------------------------------------------
E = "error: inconsistent arguments: "
refusals = [
    ((6, 4, 1, 1, 1, 0), E + "world size 6 is not divisible by --tensor-model-parallel-size 4 x "
                          "--pipeline-model-parallel-size 1 = 4"),
    ((12, 2, 4, 1, 1, 0), E + "world size 12 is not divisible by --tensor-model-parallel-size 2 x "
                           "--pipeline-model-parallel-size 4 = 8"),
    ((16, 2, 2, 3, 1, 0), E + "data-parallel size 4 (world size 16 / (--tensor-model-parallel-size 2 x "
                           "--pipeline-model-parallel-size 2)) is not divisible by --moe-expert-parallel-size 3"),
    ((8, 1, 1, 16, 1, 0), E + "data-parallel size 8 (world size 8 / (--tensor-model-parallel-size 1 x "
                           "--pipeline-model-parallel-size 1)) is not divisible by --moe-expert-parallel-size 16"),
    ((8, 1, 4, 1, 1, 10), E + "--num-layers 10 is not divisible by --pipeline-model-parallel-size 4"),
    ((8, 1, 4, 1, 2, 12), E + "--num-layers 12 is not divisible by --pipeline-model-parallel-size 4 x "
                           "virtual pipeline size 2 = 8"),
    ((8, 1, 2, 1, 2, 16), E + "--pipeline-model-parallel-size 2 must be greater than 2 with the interleaved "
                           "schedule (virtual pipeline size 2)"),
    ((0, 1, 1, 1, 1, 0), E + "world size 0 must be >= 1"),
    ((8, 0, 1, 1, 1, 0), E + "--tensor-model-parallel-size 0 must be >= 1"),
    ((8, 1, 0, 1, 1, 0), E + "--pipeline-model-parallel-size 0 must be >= 1"),
    ((8, 1, 1, 0, 1, 0), E + "--moe-expert-parallel-size 0 must be >= 1"),
    ((8, 1, 1, 1, 0, 0), E + "virtual pipeline size 0 must be >= 1"),
]
for args, msg in refusals:
    r = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True)
    check(r.returncode == 1 and r.stderr.strip() == msg,
          "refusal %s: rc %d stderr %r, expected %r" % (args, r.returncode, r.stderr.strip(), msg))


# ---- 4. DeepSpeed's pipeline partition ----------------------------------------------------------------------
def ds_partition_balanced(weights, num_parts):
    """deepspeed.runtime.utils.partition_balanced (and partition_uniform when there are no more items than parts),
    in plain Python floats."""
    n, m = len(weights), num_parts
    if n <= m:
        return [min(p, n) for p in range(m + 1)]
    inf = float("inf")
    dp_max = [[inf] * (m + 1) for _ in range(n + 1)]
    dp_min = [[inf] * (m + 1) for _ in range(n + 1)]
    dp_cost = [[inf] * (m + 1) for _ in range(n + 1)]
    position = [[0] * (m + 1) for _ in range(n + 1)]
    prefix = [0.0] * (n + 1)
    for i, w in enumerate(weights):
        prefix[i + 1] = prefix[i] + w
    dp_max[0][0] = 0
    dp_cost[0][0] = 0
    for i in range(1, n + 1):
        for j in range(1, min(i, m) + 1):
            for k in range(i):
                max_sum = max(dp_max[k][j - 1], prefix[i] - prefix[k])
                min_sum = min(dp_min[k][j - 1], prefix[i] - prefix[k])
                cost = max_sum - min_sum
                if dp_cost[i][j] >= cost:
                    dp_cost[i][j] = cost
                    dp_max[i][j] = max_sum
                    dp_min[i][j] = min_sum
                    position[i][j] = k
    parts = [n]
    for i in reversed(range(1, m + 1)):
        parts.append(position[parts[-1]][i])
    parts.reverse()
    return parts


cases = [(L, pp, f, b) for L in range(1, 41) for pp in range(1, 10) for f in range(0, 3) for b in range(0, 5)
         if (L + f + b) * pp <= 400 or L in (24, 30, 40)]
r = subprocess.run([TOOL, "partition"], input="".join("%d %d %d %d\n" % c for c in cases), capture_output=True,
                   text=True)
lines = r.stdout.split("\n")
check(r.returncode == 0 and len(lines) >= len(cases), "layout_tool partition: rc %d, %d lines" % (r.returncode,
                                                                                                 len(lines)))
for (L, pp, f, b), line in zip(cases, lines):
    parts = ds_partition_balanced([0] * f + [1] * L + [0] * b, pp)
    want = [min(max(c - f, 0), L) for c in parts]
    check(line == "P " + " ".join(map(str, want)), "partition of %d layers (+%d, +%d items) over %d stages: %s, "
          "DeepSpeed's %s" % (L, f, b, pp, line, want))
# hand-checked: ties keep the last cut, so the last stages are the smallest and the extra layers go to the first
# ones: 30 layers over 4 stages with GPTModelPipe's 2 front and 3 back items (fp16) are 8, 8, 7, 7
hand = {(30, 4, 2, 3): "P 0 8 16 23 30", (24, 4, 2, 2): "P 0 6 12 18 24", (6, 4, 2, 3): "P 0 2 4 5 6"}
r = subprocess.run([TOOL, "partition"], input="".join("%d %d %d %d\n" % c for c in hand), capture_output=True,
                   text=True)
for c, line in zip(hand, r.stdout.split("\n")):
    check(line == hand[c], "partition %s: %s, hand-checked %s" % (c, line, hand[c]))

finish()
