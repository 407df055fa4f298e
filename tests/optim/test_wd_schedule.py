#!/usr/bin/python3
"""Oracle test for the weight-decay increment of runtime/optim/lr_schedule.c (zt_wd_get).

The expected values come from Megatron-DeepSpeed's OptimizerParamScheduler.get_wd
(megatron/optimizer_param_scheduler.py), transcribed below: end_wd once num_steps > wd_incr_steps; constant:
end_wd; otherwise ratio = num_steps / wd_incr_steps, coeff = ratio (linear) or 0.5 (cos(pi (1 - ratio)) + 1)
(cosine), wd = start_wd + coeff (end_wd - start_wd). num_steps counts samples: the scheduler steps by the global
batch. Each case runs wd_sched_driver from before the first step to past the end and requires every value to be the
same double as Python's (printed with 17 digits).

usage: test_wd_schedule.py <wd_sched_driver>
"""
import math
import subprocess
import sys

DRIVER = sys.argv[1]


def get_wd(style, start_wd, end_wd, wd_incr_steps, num_steps):
    if num_steps > wd_incr_steps:
        return end_wd
    if style == "constant":
        assert start_wd == end_wd
        return end_wd
    incr_ratio = float(num_steps) / float(wd_incr_steps)
    assert 0.0 <= incr_ratio <= 1.0
    delta_wd = end_wd - start_wd
    if style == "linear":
        coeff = incr_ratio
    elif style == "cosine":
        coeff = 0.5 * (math.cos(math.pi * (1 - incr_ratio)) + 1.0)
    else:
        raise Exception("{} weight decay increment style is not supported.".format(style))
    return start_wd + coeff * delta_wd


# (style, start, end, wd_incr_steps (samples), increment (global batch), steps): iteration runs (train_iters x
# global batch), sample runs whose length is not a whole number of batches, and steps past the end
CASES = [
    ("linear", "0", "0.1", 24, 4, 8),
    ("cosine", "0", "0.1", 24, 4, 8),
    ("linear", "0.01", "0.3", 1000, 7, 160),
    ("cosine", "0.01", "0.3", 1000, 7, 160),
    ("cosine", "0.033", "0.033", 64, 8, 10),
    ("linear", "1e-05", "2.5", 30, 1, 35),
    ("cosine", "0.0", "1.0", 3, 1, 5),
    ("constant", "0.01", "0.01", 24, 4, 8),
]

fail = passed = 0
for style, start, end, incr_steps, increment, steps in CASES:
    name = "%s %s -> %s over %d samples, steps of %d" % (style, start, end, incr_steps, increment)
    out = subprocess.run([DRIVER, style, start, end, str(incr_steps), str(increment), str(steps)],
                         capture_output=True, text=True)
    lines = out.stdout.split("\n")[:-1]
    if out.returncode != 0 or len(lines) != steps + 1:
        print("FAIL %s: exit %d, %d lines: %s" % (name, out.returncode, len(lines), out.stderr.strip()))
        fail += 1
        continue
    bad = []
    for k, line in enumerate(lines):
        n, wd = line.split()
        want = get_wd(style, float(start), float(end), incr_steps, k * increment)
        if int(n) != k * increment or float(wd) != want:
            bad.append("num_steps %s: %s, Megatron's %r" % (n, wd, want))
    past = sum(1 for k in range(steps + 1) if k * increment > incr_steps)
    if bad:
        print("FAIL %s: %d of %d values differ, first %s" % (name, len(bad), len(lines), bad[0]))
        fail += 1
    else:
        print("PASS %s: %d values bitwise Megatron's get_wd (%d past the end)" % (name, len(lines), past))
        passed += 1

print("%d passed, %d failed" % (passed, fail))
sys.exit(1 if fail else 0)
