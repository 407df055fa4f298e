#!/usr/bin/env python3
"""finetune_bert's metrics (tasks/metrics.h) against independent NumPy implementations of what Megatron-DeepSpeed's
tasks/eval_utils.py calls (scipy.stats.pearsonr, spearmanr, sklearn.metrics.matthews_corrcoef), and against scipy
and sklearn themselves where installed: random and tied data, constant inputs (nan), n = 2.
usage: test_metrics.py METRICS_CHECK"""
import math
import random
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy not installed")
    sys.exit(77)
try:
    import scipy.stats as ss
except ImportError:
    ss = None

failed = passed = 0


def check(name, ok, detail=""):
    global failed, passed
    if ok:
        passed += 1
        print("PASS", name)
    else:
        failed += 1
        print("FAIL", name, detail)


def rank_avg(v):  # 1-based, ties share their mean rank
    v = np.asarray(v, dtype=np.float64)
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r


def pearson(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    xm, ym = x - x.mean(), y - y.mean()
    d = math.sqrt((xm * xm).sum() * (ym * ym).sum())
    return float("nan") if d == 0 else float((xm * ym).sum() / d)


def same(a, b, tol=1e-12):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def main():
    tool = sys.argv[1]
    rng = random.Random(7)
    cases = []
    for n in (2, 3, 5, 17, 200):
        cases.append([rng.gauss(0, 1) for _ in range(2 * n)])
        cases.append([float(rng.randint(0, 5)) for _ in range(2 * n)])  # STS-B's truncated scores: many ties
    cases.append([1.0, 1.0, 1.0, 2.0, 3.0, 4.0])  # a constant side: nan
    lines = []
    for c in cases:
        n = len(c) // 2
        lines.append("pearson %d %s" % (n, " ".join(repr(v) for v in c)))
        lines.append("ranks %d %s" % (n, " ".join(repr(v) for v in c[:n])))
    confusions = [(5, 7, 2, 1), (0, 9, 0, 3), (4, 0, 0, 0), (10, 10, 10, 10), (3, 1, 7, 2)]
    for c in confusions:
        lines.append("mcc %d %d %d %d" % c)
    out = subprocess.run([tool], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    res = out.splitlines()
    k = 0
    for c in cases:
        n = len(c) // 2
        x, y = c[:n], c[n:]
        p, s = (float(t) for t in res[k].split())
        rp, rs = pearson(x, y), pearson(rank_avg(x), rank_avg(y))
        check("pearson/spearman n=%d%s" % (n, " ties" if len(set(x)) < n else ""), same(p, rp) and same(s, rs),
              "zt %r %r ref %r %r" % (p, s, rp, rs))
        if ss is not None and n > 2 and not math.isnan(rp):
            sp, sr = float(ss.pearsonr(x, y)[0]), float(ss.spearmanr(x, y)[0])
            check("scipy agrees n=%d" % n, same(p, sp, 1e-9) and same(s, sr, 1e-9), "scipy %r %r" % (sp, sr))
        r = [float(t) for t in res[k + 1].split()]
        check("rankdata n=%d" % n, r == list(rank_avg(x)), "zt %s" % r[:8])
        k += 2
    for tp, tn, fp, fn in confusions:
        v = float(res[k])
        den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        ref = (tp * tn - fp * fn) / den if den else 0.0
        check("mcc %s" % ((tp, tn, fp, fn),), same(v, ref), "zt %r ref %r" % (v, ref))
        k += 1
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
