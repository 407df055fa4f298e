"""test_pretraining_sampler: data/pretraining_sampler.c (--dataloader-type cyclic, --no-data-sharding,
--repeated-dataloader) against Megatron-DeepSpeed's samplers over the real torch.randperm (megatron_samplers.py).
Usage: test_pretraining_sampler.py PRETRAINING_SAMPLER_DUMP.
 - torch.randperm(n) under manual_seed(seed) for small and odd n and several seeds;
 - every rank's micro batches over several epochs from several start points (a resumed loader), sharded and not,
   including the layouts where the ranks of an unsharded sampler reach an epoch's end at different micro batches;
 - the sequential sampler under DeepSpeed's RepeatingLoader, replaying from the loader's start;
 - the refusals of a split too small to feed every rank."""
import os
import random
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import megatron_samplers  # noqa: E402

TOOL = sys.argv[1]
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


def oracle(kind, sharding, total, mbs, dp, start, steps):
    lines = []
    for r in range(dp):
        gen = megatron_samplers.rank_batches(kind, sharding, total, mbs, dp, r, start)
        for j in range(steps):
            lines.append("rank %d mb %d: %s" % (r, j, " ".join(map(str, next(gen)))))
    return lines + ["replay ok"]


def run(*args):
    return subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True)


# torch.randperm
for n in [0, 1, 2, 3, 5, 16, 97, 1000, 4099]:
    for seed in [0, 1, 7, 12345]:
        g = torch.Generator()
        g.manual_seed(seed)
        want = " ".join(map(str, torch.randperm(n, generator=g).tolist()))
        got = run("--randperm", n, seed).stdout.strip()
        check(got == want, "randperm(%d) seed %d: %s... != torch's %s..." % (n, seed, got[:60], want[:60]))

# the samplers
rng = random.Random(11)
cases = [("cyclic", 1, 10, 2, 1, 0, 12), ("cyclic", 0, 14, 2, 4, 0, 9), ("cyclic", 0, 14, 2, 4, 8, 9),
         ("cyclic", 1, 14, 2, 4, 8, 9), ("cyclic", 0, 23, 3, 2, 6, 20), ("repeat", 0, 10, 2, 1, 0, 12),
         ("repeat", 0, 23, 2, 2, 4, 15)]
for _ in range(70):
    mbs, dp = rng.randint(1, 4), rng.randint(1, 4)
    step = mbs * dp
    total = rng.randint(step, 60)
    kind = rng.choice(["cyclic", "repeat"])
    if kind == "cyclic":
        start = rng.randint(0, 3 * total // step) * step
    else:
        start = rng.randint(0, (total - step) // step) * step
    steps = 3 * (total // step) + rng.randint(1, 5)
    cases.append((kind, rng.randint(0, 1), total, mbs, dp, start, steps))
for case in cases:
    r = run(*case)
    want = oracle(*case)
    got = r.stdout.strip().split("\n")
    bad = [i for i in range(max(len(got), len(want))) if i >= len(got) or i >= len(want) or got[i] != want[i]]
    check(r.returncode == 0 and not bad, "%s sharding=%d total=%d mbs=%d dp=%d start=%d steps=%d: rc %d, first "
          "difference at line %s: %r != %r %s" % (case + (r.returncode, bad[0] if bad else None,
                                                           got[bad[0]] if bad and bad[0] < len(got) else None,
                                                           want[bad[0]] if bad and bad[0] < len(want) else None,
                                                           r.stderr.strip())))

# refusals
r = run("cyclic", 1, 7, 2, 4, 0, 1)
check(r.returncode != 0 and "--dataloader-type cyclic" in r.stderr and "holds 7 samples" in r.stderr,
      "cyclic over 7 samples at 2 x 4: %r" % r.stderr)
r = run("repeat", 0, 20, 2, 2, 20, 1)
check(r.returncode != 0 and "--repeated-dataloader" in r.stderr and "consumed 20" in r.stderr,
      "repeat from the end: %r" % r.stderr)

print("%d checks, %d failures" % (checks, failures))
sys.exit(1 if failures else 0)
