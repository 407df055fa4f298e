"""test_data_sampler: train/data_sampler.c against sampler_oracle.py (DeepSpeedDataSampler over NumPy's own
default_rng). Usage: test_data_sampler.py DATA_SAMPLER_DUMP. Every line data_sampler_dump prints (the cluster
messages, each global batch with its difficulties, each rank's micro-batch slices) must equal the oracle's."""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler_oracle  # noqa: E402

TOOL = sys.argv[1]
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


def fit_code(lo, hi):  # DeepSpeed's find_fit_int_dtype, as its codes
    if lo >= 0:
        return 1 if hi <= 255 else 6 if hi <= 65535 else 7 if hi <= 4294967295 else 8
    return 2 if -128 <= lo and hi <= 127 else 3 if -32768 <= lo and hi <= 32767 else 4 if -2**31 <= lo and hi < 2**31 else 5


def write_index(prefix, items):
    """A DeepSpeed MMapIndexedDataset of the given items (lists of ints), in the smallest fitting dtype."""
    flat = [v for it in items for v in it]
    code = fit_code(min(flat + [0]), max(flat + [0]))
    dt = sampler_oracle.DS_DTYPES[code]
    es = np.dtype(dt).itemsize
    np.array(flat, dt).tofile(prefix + ".bin")
    sizes = np.array([len(it) for it in items], np.int32)
    ptrs = np.concatenate(([0], np.cumsum(sizes[:-1], dtype=np.int64) * es)).astype(np.int64) if len(items) else \
        np.zeros(0, np.int64)
    doc = np.array([0, len(items)], np.int64)
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + np.uint64(1).tobytes() + bytes([code]) + np.uint64(len(items)).tobytes() +
                np.uint64(len(doc)).tobytes() + sizes.tobytes() + ptrs.tobytes() + doc.tobytes())


def analysis(tmp, name, values):
    """index_to_sample / index_to_metric (and the percentile-merged file) of per-sample metric values, as DeepSpeed's
    DataAnalyzer reduce writes them: one row per distinct value, ascending, its samples ascending."""
    uniq = sorted(set(values))
    rows = [[i for i, v in enumerate(values) if v == u] for u in uniq]
    base = os.path.join(tmp, name)
    write_index(base + "_index_to_sample", rows)
    write_index(base + "_index_to_metric", [[u] for u in uniq])
    step = max(1, len(uniq) // 100)
    merged = [sum(rows[i:i + step], []) for i in range(0, len(rows), step)]
    write_index(base + "_index_to_sample_percentile_merged", merged)
    return base


def config(tmp, name, metrics, gbs, mbs, seed=1234, extra=None):
    de = {"enabled": True, "seed": seed,
          "data_sampling": {"enabled": True, "num_workers": 0,
                            "curriculum_learning": {"enabled": True, "data_cluster_path": os.path.join(tmp, "cl"),
                                                    "curriculum_metrics": metrics}}}
    cfg = {"train_batch_size": gbs, "train_micro_batch_size_per_gpu": mbs, "data_efficiency": de}
    if extra:
        cfg.update(extra)
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path, de


def metric(dtype, ctype, lo, hi, sched="fixed_linear", total=10, step=1, root=1, sample=None, met=None, disc=None):
    m = {"index_to_sample_path": sample or "dummy", "index_to_metric_path": met or "dummy", "difficulty_type": dtype,
         "clustering_type": ctype, "min_difficulty": lo, "max_difficulty": hi, "schedule_type": sched}
    if sched == "fixed_discrete":
        m["schedule_config"] = {"difficulty": disc[0], "max_step": disc[1]}
    else:
        m["schedule_config"] = {"total_curriculum_step": total, "difficulty_step": step}
        if sched == "fixed_root":
            m["schedule_config"]["root_degree"] = root
    return m


def run(args):
    return subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True)


def case(tmp, name, metrics, one_epoch, mbs, dp, gas, steps, seed=1234, resume=None):
    gbs = mbs * dp * gas
    path, de = config(tmp, name, metrics, gbs, mbs, seed)
    p = run([path, one_epoch, mbs, dp, steps] + ([resume] if resume else []))
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr[-800:]}")
    if p.returncode:
        return
    got = [ln for ln in p.stdout.splitlines() if not ln.startswith("resume")]
    want = sampler_oracle.dump(de, one_epoch, mbs, dp, gbs, steps)
    same = got == want
    if not same:
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                print(f"  {name}: line {i}:\n    got  {a[:300]}\n    want {b[:300]}")
                break
        else:
            print(f"  {name}: {len(got)} lines, oracle {len(want)}")
    check(same, f"{name}: every line equals DeepSpeedDataSampler's ({len(want)} lines)")
    if resume:
        check("resume ok" in p.stdout, f"{name}: replaying {resume} steps reaches the same state and next batch")


def refused(tmp, name, metrics, needle, one_epoch=40, gbs=4, mbs=2, dp=2, extra=None):
    path, _ = config(tmp, name, metrics, gbs, mbs, extra=extra)
    p = run([path, one_epoch, mbs, dp, 30])
    ok = p.returncode != 0 and needle in p.stderr
    check(ok, f"refused {name}: wants '{needle}', got exit {p.returncode}: {p.stderr.strip()[-400:]}")


def post_process_reshape(text, d):
    """pretrain_gpt.py data_post_process under seqlen_reshape at difficulty d, transcribed (NumPy for torch)."""
    S1 = text.shape[1]
    orig_num_token = text.size
    reshape_len = (S1 // (d + 1)) * (d + 1)
    out = np.concatenate((text[:, :reshape_len].reshape(-1, d + 1), text[:, -(d + 1):]), 0)
    num_row = math.ceil(orig_num_token / (d + 1))
    num_row = min(num_row, out.shape[0])
    if num_row > 1 and num_row % 2 != 0:
        num_row -= 1
    return out[:num_row, :]


def reshape_checks():
    """data/gpt_data.c's re-cut (data_sampler_dump --reshape) equals data_post_process for every difficulty below
    --seq-length, over several micro-batch sizes and lengths."""
    triples = [(B, S, d) for B in (1, 2, 3, 4, 8) for S in (1, 2, 7, 16, 31, 64) for d in range(1, S)]
    out = subprocess.run([TOOL, "--reshape"], input="".join(f"{B} {S + 1} {d + 1}\n" for B, S, d in triples),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    bad, k = [], 0
    for B, S, d in triples:
        want = post_process_reshape(np.arange(B * (S + 1)).reshape(B, S + 1), d)
        R = int(out[k])
        got = [list(map(int, line.split())) for line in out[k + 1:k + 1 + R]]
        k += 1 + R
        if R != want.shape[0] or got != want.tolist():
            bad.append((B, S, d))
    check(not bad and len(triples) > 500, f"seqlen_reshape re-cut of {len(triples)} (micro batch, --seq-length, "
          f"difficulty) triples as data_post_process's: differs at {bad[:5]}")


def main():
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        N = 120
        voc_vals = [int(v) for v in rng.integers(0, 40, N)]  # 40 distinct-ish values
        voc = analysis(tmp, "voc", voc_vals)
        seql = analysis(tmp, "seql", [int(v) for v in rng.integers(1, 9, N)])
        trunc = metric("value", "single_cluster", 8, 32, total=12, step=8)
        # 1. one single-cluster metric (the seqlen_truncate example): the arange cluster, reshuffled when used up
        case(tmp, "seqlen_truncate", {"seqlen_truncate": trunc}, 50, 2, 2, 2, 30, resume=13)
        # 2. value-based clusters (prev, cur] of one metric, fixed_linear
        case(tmp, "value", {"voc": metric("value", "schedule_based", 5, 39, total=20, step=1,
                                          sample=voc + "_index_to_sample", met=voc + "_index_to_metric")},
             N, 2, 1, 3, 40, resume=17)
        # 3. the example's two metrics: vocabulary rarity by percentile (fixed_root, root 2) and seqlen_truncate
        case(tmp, "percentile+truncate",
             {"voc": metric("percentile", "schedule_based", 1, 100, sched="fixed_root", total=25, step=1, root=2,
                            sample=voc + "_index_to_sample_percentile_merged", met=voc + "_index_to_metric"),
              "seqlen_truncate": trunc}, N, 1, 2, 2, 40, seed=2**40 + 3, resume=9)
        # 4. two clustering metrics: intersections and set differences with the earlier clusters
        case(tmp, "two clusterings",
             {"voc": metric("value", "schedule_based", 10, 39, total=15, step=3, sample=voc + "_index_to_sample",
                            met=voc + "_index_to_metric"),
              "seql": metric("percentile", "schedule_based", 30, 100, total=10, step=10,
                             sample=seql + "_index_to_sample_percentile_merged")}, N, 2, 3, 1, 25, seed=99, resume=6)
        # 5. fixed_discrete percentiles, and three data-parallel ranks of micro batch 1
        case(tmp, "fixed_discrete", {"voc": metric("percentile", "schedule_based", 20, 100, sched="fixed_discrete",
                                                   sample=voc + "_index_to_sample_percentile_merged",
                                                   disc=([20, 50, 100], [4, 9]))}, N, 1, 3, 2, 20, seed=0)
        # refusals
        # 6. seqlen_reshape draws as any single-cluster metric; its re-cut of the micro batches is Megatron-DeepSpeed's
        case(tmp, "seqlen_reshape", {"seqlen_reshape": trunc}, N, 2, 2, 1, 10, seed=5)
        reshape_checks()
        m = metric("value", "single_cluster", 8, 32)
        del m["difficulty_type"]
        refused(tmp, "no difficulty_type", {"seqlen_truncate": m}, "seqlen_truncate.difficulty_type is missing")
        refused(tmp, "no index file", {"voc": metric("value", "schedule_based", 5, 39)}, "cannot open dummy.idx")
        refused(tmp, "sample out of range", {"voc": metric("value", "schedule_based", 5, 39,
                                                           sample=voc + "_index_to_sample",
                                                           met=voc + "_index_to_metric")},
                "names sample", one_epoch=60)
        refused(tmp, "rows mismatch", {"voc": metric("value", "schedule_based", 5, 39,
                                                     sample=voc + "_index_to_sample",
                                                     met=seql + "_index_to_metric")}, "rows and", one_epoch=N)
        refused(tmp, "percentile max 0", {"voc": metric("percentile", "schedule_based", 0, 0,
                                                        sample=voc + "_index_to_sample")}, "max_difficulty at least 1")
        refused(tmp, "empty metrics", {}, "curriculum_metrics is empty")
        c = metric("value", "single_cluster", 8, 32)
        c["schedule_type"] = "custom"
        refused(tmp, "custom", {"seqlen_truncate": c}, "\"custom\" is not supported")
        refused(tmp, "no sample admitted", {"voc": metric("value", "schedule_based", -5, 39,
                                                          sample=voc + "_index_to_sample",
                                                          met=voc + "_index_to_metric")},
                "admit no sample", one_epoch=N)
        refused(tmp, "short batch", {"voc": metric("value", "schedule_based", 0, 39, total=1000,
                                                   sample=voc + "_index_to_sample", met=voc + "_index_to_metric")},
                "would return a short global batch", one_epoch=N, gbs=16, mbs=8, dp=2)
        refused(tmp, "dotted name", {"a.b": trunc}, "unknown key")
    print(f"{checks - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


main()
