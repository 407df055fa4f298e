"""train/rampup.c against Megatron-DeepSpeed's code (rampup_oracle.py: microbatches.py and update_train_iters,
transcribed) on 20 settings where Python's float division decides a batch size and 400 random valid ones, seeded: micro batch 1/2/4 x DP 1/2/3, 1 to 60 increments, ramp-up
samples from 1 to 20000 (many not multiples of the increment count, so the float division and int() truncation
matter, and some shorter than the number of increments, so batch sizes are skipped), --train-samples at or past the
ramp's end. For each: the iteration count, the global batch of every step, the list of batch sizes the ramp uses
(zt_rampup_batches) and, for every sample count up to 3000, whether a step ends there (zt_rampup_reaches).
Usage: test_rampup_formula.py path/to/rampup_driver"""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rampup_oracle import Rampup, ramp_steps  # noqa: E402

QUERIES = 3000


def expected(start, incr, ramp, gbs, mbs, dp, train):
    iters, batches = ramp_steps(start, incr, ramp, gbs, mbs, dp, train)
    runs = []
    for b in batches:
        if runs and runs[-1][0] == b:
            runs[-1][1] += 1
        else:
            runs.append([b, 1])
    # the ramp phase (update_train_iters' loop), its batch sizes and the step ends along it
    calc = Rampup(start, incr, ramp, gbs, mbs, dp)
    sizes, ends, c = [], {0}, 0
    while c <= ramp:
        calc.update(c, False)
        b = calc.current_global_batch_size
        if not sizes or sizes[-1] != b:
            sizes.append(b)
        c += b
        ends.add(c)
    if sizes[-1] != gbs:
        sizes.append(gbs)
    reached = "".join("1" if n in ends or (n >= c and (n - c) % gbs == 0) else "0" for n in range(QUERIES))
    return "%d | %s | %s | %s" % (iters, " ".join("%d*%d" % (b, k) for b, k in runs), " ".join(map(str, sizes)),
                                  reached), c


def settings(rng, count):
    out = []
    while len(out) < count:
        mbs, dp = rng.choice([1, 2, 4]), rng.choice([1, 2, 3])
        per = mbs * dp
        start, incr = per * rng.randint(1, 6), per * rng.randint(1, 4)
        n = rng.randint(1, 60)
        gbs = start + incr * n
        ramp = rng.choice([rng.randint(1, 2 * n), n * rng.randint(1, 50) + rng.randint(-1, 1),
                           rng.randint(1, 20000)])
        ramp = max(ramp, 1)
        if ramp // start > 20000:
            continue
        out.append([start, incr, ramp, gbs, mbs, dp])
    return out


def float_edges(count):
    """Settings (micro batch 1, DP 1) where a step starts at a sample count at which Python's float division and
    int() give a smaller batch than exact arithmetic would (e.g. 1 1 27 to 14: at 27 consumed samples,
    27 / (27 / 13) = 12.999... and the batch is 13, not 14)."""
    out = []
    for start, incr, n, ramp in ((s, i, n, r) for s in range(1, 9) for i in range(1, 5) for n in range(1, 20)
                                 for r in range(1, 200)):
        gbs = start + incr * n
        calc, c = Rampup(start, incr, ramp, gbs, 1, 1), 0
        while c <= ramp:
            calc.update(c, False)
            if calc.current_global_batch_size != start + (c * n // ramp) * incr:
                out.append([start, incr, ramp, gbs, 1, 1])
                break
            c += calc.current_global_batch_size
        if len(out) == count:
            return out
    return out


def main():
    driver = sys.argv[1]
    rng = random.Random(20261125)
    cases, want = [], []
    edges = float_edges(20)
    for s in edges + settings(rng, 400):
        calc, end = Rampup(*s), 0  # the ramp's end: update_train_iters' loop
        while end <= s[2]:
            calc.update(end, False)
            end += calc.current_global_batch_size
        train = end + rng.randint(0, 3 * s[3])
        line, _ = expected(*s, train=train)
        cases.append(s + [train, QUERIES])
        want.append(line)
    text = "".join(" ".join(map(str, c)) + "\n" for c in cases)
    p = subprocess.run([driver], input=text, capture_output=True, text=True, timeout=300)
    got = p.stdout.splitlines()
    if p.returncode != 0 or len(got) != len(want):
        print("FAIL driver: rc %d, %d lines for %d settings: %s" % (p.returncode, len(got), len(want),
                                                                      p.stderr.strip()[:300]))
        return 1
    bad = 0
    for c, g, w in zip(cases, got, want):
        if g != w:
            bad += 1
            if bad <= 3:
                gi, wi = g.split(" | "), w.split(" | ")
                part = next(i for i in range(4) if gi[i] != wi[i])
                print("FAIL --rampup-batch-size %d %d %d --global-batch-size %d --micro-batch-size %d, DP %d, "
                      "--train-samples %d: %s differs:\n  zerotron:  %s\n  Megatron:  %s" %
                      (tuple(c[:7]) + (["iterations", "step batches", "ramp batch sizes", "step ends"][part],
                                       gi[part][:200], wi[part][:200])))
    steps = sum(int(w.split(" | ")[0]) for w in want)
    if bad:
        print("%d of %d settings differ" % (bad, len(cases)))
        return 1
    print("PASS %d settings (%d where the float division decides a batch; %d steps, %d sample counts queried) "
          "equal Megatron-DeepSpeed's ramp-up" % (len(cases), len(edges), steps, len(cases) * QUERIES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
