#!/usr/bin/python3
"""Oracle test for runtime/optim/ds_lr_schedules.c.

The expected values come from an independent Python implementation of DeepSpeed's schedule formulas as
in DeepSpeed's deepspeed/runtime/lr_schedules.py (as of DeepSpeed 0.14-0.16, docs/schedulers.md), plus the
values DeepSpeed's constructors put into the optimizer before the first step() (t = -1): LRRangeTest
min_lr, OneCycle cycle_min_lr with betas (cycle_min_mom, 0.99), WarmupLR/WarmupDecayLR warmup_min_lr,
WarmupCosineLR 0.0. Each case runs sched_driver and compares every printed lr/beta to 1e-12 relative.
With params.last_batch_iteration = k >= 0 the constructors leave the optimizer's lr and betas as configured (the
first state, t = k, holds base_lr and the optimizer's betas) and the first step() gives the schedule at k + 1.
Error cases check the exit status and that the message names the scheduler and the parameter.

usage: test_ds_lr_schedules.py <sched_driver>
"""
import math
import subprocess
import sys

DRIVER = sys.argv[1] if len(sys.argv) > 1 else None
OPT_BETAS = (0.9, 0.999)

DEFAULTS = {
    "LRRangeTest": dict(lr_range_test_min_lr=1e-3, lr_range_test_step_size=2000, lr_range_test_step_rate=1.0,
                        lr_range_test_staircase=0),
    "OneCycle": dict(decay_lr_rate=0.0, cycle_first_step_size=2000, cycle_second_step_size=None,
                     decay_step_size=0, cycle_momentum=1, cycle_min_mom=0.8, cycle_max_mom=0.9, decay_mom_rate=0.0),
    "WarmupLR": dict(warmup_min_lr=0.0, warmup_max_lr=None, warmup_num_steps=1000, warmup_type="log"),
    "WarmupDecayLR": dict(warmup_min_lr=0.0, warmup_max_lr=0.001, warmup_num_steps=1000, warmup_type="log"),
    "WarmupCosineLR": dict(warmup_min_ratio=0.0, warmup_num_steps=1000, cos_min_ratio=0.0001, warmup_type="log"),
}


def warmup_gamma(P, t):
    """WarmupLR's gamma during warmup: ln(t+1)/ln(Nw) (log) or t/Nw (linear)."""
    nw = max(2, P["warmup_num_steps"])
    wtype = P["warmup_type"] if P["warmup_type"] in ("log", "linear") else "log"
    if wtype == "linear":
        return t / nw
    return (1.0 / math.log(nw)) * math.log(t + 1)


def expected(kind, P, base_lr, t):
    """(lr, beta1, beta2) the optimizer holds after the constructor (t = -1) and after each step()."""
    b1, b2 = OPT_BETAS
    if kind == "LRRangeTest":
        interval = (t + 1) / P["lr_range_test_step_size"]
        if P["lr_range_test_staircase"]:
            interval = math.floor(interval)
        return P["lr_range_test_min_lr"] * (1 + P["lr_range_test_step_rate"] * interval), b1, b2
    if kind == "OneCycle":
        lo, hi = P["cycle_min_lr"], P["cycle_max_lr"]
        mlo, mhi = P["cycle_min_mom"], P["cycle_max_mom"]
        first = float(P["cycle_first_step_size"])
        second = first if P["cycle_second_step_size"] is None else float(P["cycle_second_step_size"])
        total = first + second
        ratio = first / total
        cyc = bool(P["cycle_momentum"])
        if t == -1:
            return lo, (mlo if cyc else b1), (0.99 if cyc else b2)
        if t < total:
            i = t + 1
            cycle = math.floor(1 + i / total)
            x = 1.0 + i / total - cycle
            sf = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
            lr = lo + (hi - lo) * sf
            mom = mhi - (mhi - mlo) * sf
        else:
            d = t - total + 1
            dss = P["decay_step_size"]
            lr = lo if (dss == 0 or P["decay_lr_rate"] == 0) else lo / (1 + P["decay_lr_rate"] * (d / dss))
            mom = mhi if (dss == 0 or P["decay_mom_rate"] == 0) else mhi * (1 + P["decay_mom_rate"] * (d / dss))
        return lr, (mom if cyc else b1), (0.99 if cyc else b2)
    if kind in ("WarmupLR", "WarmupDecayLR"):
        lo = P["warmup_min_lr"]
        hi = base_lr if P["warmup_max_lr"] is None else P["warmup_max_lr"]
        if t < 0:
            return lo, b1, b2
        nw = max(2, P["warmup_num_steps"])
        if t < nw:
            g = warmup_gamma(P, t)
        elif kind == "WarmupLR":
            g = 1.0
        else:
            T = P["total_num_steps"]
            g = max(0.0, float(T - t) / float(max(1.0, T - nw)))
        return lo + (hi - lo) * g, b1, b2
    if kind == "WarmupCosineLR":
        if t < 0:
            return 0.0, b1, b2
        nw = max(2, P["warmup_num_steps"])
        if t < nw:
            r = P["warmup_min_ratio"] + warmup_gamma(P, t) * (1.0 - P["warmup_min_ratio"])
        else:
            s = t - nw + 1
            S = P["total_num_steps"] - nw
            r = max(0.0, P["cos_min_ratio"] + (1.0 - P["cos_min_ratio"]) * (1 + math.cos(math.pi * s / S)) / 2)
        return base_lr * r, b1, b2
    raise ValueError(kind)


# (name, kind, base_lr, steps, params)
CASES = [
    ("lrrt_defaults", "LRRangeTest", 0.1, 12, {}),
    ("lrrt_continuous", "LRRangeTest", 0.1, 30,
     dict(lr_range_test_min_lr=0.01, lr_range_test_step_size=5, lr_range_test_step_rate=2.0)),
    ("lrrt_staircase", "LRRangeTest", 0.1, 30,
     dict(lr_range_test_min_lr=0.002, lr_range_test_step_size=4, lr_range_test_step_rate=0.5,
          lr_range_test_staircase=1)),
    ("onecycle_sym_nodecay", "OneCycle", 0.1, 40, dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=5)),
    ("onecycle_asym_decay", "OneCycle", 0.1, 45,
     dict(cycle_min_lr=2e-4, cycle_max_lr=3e-3, cycle_first_step_size=6, cycle_second_step_size=4,
          decay_step_size=3, decay_lr_rate=0.5, decay_mom_rate=0.1, cycle_min_mom=0.85, cycle_max_mom=0.95)),
    ("onecycle_lr_decay_only", "OneCycle", 0.1, 40,
     dict(cycle_min_lr=1e-3, cycle_max_lr=1e-2, cycle_first_step_size=5, cycle_second_step_size=10,
          decay_step_size=2, decay_lr_rate=0.2)),
    ("onecycle_no_momentum", "OneCycle", 0.1, 25,
     dict(cycle_min_lr=1e-3, cycle_max_lr=1e-2, cycle_first_step_size=4, cycle_momentum=0, decay_step_size=1,
          decay_lr_rate=1.0)),
    ("onecycle_second_zero", "OneCycle", 0.1, 12, dict(cycle_min_lr=1e-3, cycle_max_lr=1e-2,
                                                       cycle_first_step_size=3, cycle_second_step_size=0)),
    ("onecycle_rate_but_no_step", "OneCycle", 0.1, 30,
     dict(cycle_min_lr=1e-3, cycle_max_lr=5e-3, cycle_first_step_size=4, decay_lr_rate=0.5, decay_mom_rate=0.5)),
    ("onecycle_stairs_ignored", "OneCycle", 0.1, 30,
     dict(cycle_min_lr=1e-3, cycle_max_lr=5e-3, cycle_first_step_size=7, cycle_first_stair_count=3,
          cycle_second_stair_count=2)),
    ("onecycle_stairs_cli_default", "OneCycle", 0.1, 12,
     dict(cycle_min_lr=1e-3, cycle_max_lr=5e-3, cycle_first_step_size=4, cycle_first_stair_count=-1,
          cycle_second_stair_count=-1)),
    ("onecycle_default_sizes", "OneCycle", 0.1, 10, dict(cycle_min_lr=1e-5, cycle_max_lr=1e-3)),
    ("warmup_default_max_is_optimizer_lr", "WarmupLR", 0.005, 20, dict(warmup_num_steps=10)),
    ("warmup_defaults", "WarmupLR", 0.003, 8, {}),
    ("warmup_linear", "WarmupLR", 0.1, 20, dict(warmup_min_lr=1e-5, warmup_max_lr=1e-3, warmup_num_steps=8,
                                                warmup_type="linear")),
    ("warmup_clamp_to_2", "WarmupLR", 0.1, 6, dict(warmup_max_lr=1e-3, warmup_num_steps=1)),
    ("warmup_clamp_linear", "WarmupLR", 0.1, 6, dict(warmup_max_lr=1e-3, warmup_num_steps=0,
                                                     warmup_type="linear")),
    ("warmup_bad_type", "WarmupLR", 0.1, 12, dict(warmup_max_lr=2e-3, warmup_num_steps=7, warmup_type="cosine")),
    ("decay_log", "WarmupDecayLR", 0.1, 30, dict(total_num_steps=20, warmup_num_steps=5, warmup_max_lr=1e-3)),
    ("decay_linear_min", "WarmupDecayLR", 0.1, 20,
     dict(total_num_steps=12, warmup_num_steps=4, warmup_min_lr=1e-4, warmup_max_lr=2e-3, warmup_type="linear")),
    ("decay_total_below_warmup", "WarmupDecayLR", 0.1, 10, dict(total_num_steps=3, warmup_num_steps=5)),
    ("decay_total_zero", "WarmupDecayLR", 0.1, 8, dict(total_num_steps=0, warmup_num_steps=3)),
    ("decay_default_max", "WarmupDecayLR", 0.7, 10, dict(total_num_steps=8, warmup_num_steps=3)),
    ("cosine_beyond_total", "WarmupCosineLR", 0.01, 45, dict(total_num_steps=20, warmup_num_steps=5)),
    ("cosine_linear_ratios", "WarmupCosineLR", 0.02, 30,
     dict(total_num_steps=15, warmup_num_steps=3, warmup_min_ratio=0.1, cos_min_ratio=0.05, warmup_type="linear")),
    ("cosine_total_below_warmup", "WarmupCosineLR", 0.01, 12, dict(total_num_steps=3, warmup_num_steps=6)),
    ("cosine_clamp_to_2", "WarmupCosineLR", 0.01, 12, dict(total_num_steps=10, warmup_num_steps=1)),
    ("cosine_negative_floor", "WarmupCosineLR", 0.01, 30,
     dict(total_num_steps=12, warmup_num_steps=2, cos_min_ratio=-0.5)),
    ("resume_lrrt", "LRRangeTest", 0.1, 10, dict(lr_range_test_step_size=3, last_batch_iteration=7)),
    ("resume_onecycle", "OneCycle", 0.1, 20, dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=5,
                                                  last_batch_iteration=3)),
    ("resume_warmup", "WarmupLR", 0.005, 12, dict(warmup_num_steps=10, last_batch_iteration=4)),
    ("resume_decay", "WarmupDecayLR", 0.1, 12, dict(total_num_steps=20, warmup_num_steps=5, last_batch_iteration=9)),
    ("resume_cosine", "WarmupCosineLR", 0.01, 12, dict(total_num_steps=20, warmup_num_steps=5,
                                                       last_batch_iteration=0)),
]

# (name, kind, params, strings the error must contain)
ERRORS = [
    ("onecycle_no_min", "OneCycle", dict(cycle_max_lr=1e-3), ["OneCycle", "cycle_min_lr", "required"]),
    ("onecycle_no_max", "OneCycle", dict(cycle_min_lr=1e-4), ["OneCycle", "cycle_max_lr", "required"]),
    ("onecycle_neg_first", "OneCycle", dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=-5),
     ["OneCycle", "cycle_first_step_size", "-5"]),
    ("onecycle_zero_first", "OneCycle", dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=0),
     ["OneCycle", "cycle_first_step_size"]),
    ("onecycle_neg_second", "OneCycle", dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_second_step_size=-1),
     ["OneCycle", "cycle_second_step_size", "-1"]),
    ("onecycle_neg_decay", "OneCycle", dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, decay_step_size=-2),
     ["OneCycle", "decay_step_size", "-2"]),
    ("lrrt_zero_step", "LRRangeTest", dict(lr_range_test_step_size=0), ["LRRangeTest", "lr_range_test_step_size"]),
    ("lrrt_neg_step", "LRRangeTest", dict(lr_range_test_step_size=-3), ["LRRangeTest", "lr_range_test_step_size", "-3"]),
    ("decay_no_total", "WarmupDecayLR", {}, ["WarmupDecayLR", "total_num_steps", "required"]),
    ("cosine_no_total", "WarmupCosineLR", {}, ["WarmupCosineLR", "total_num_steps", "required"]),
    ("cosine_total_eq_warmup", "WarmupCosineLR", dict(total_num_steps=10, warmup_num_steps=10),
     ["WarmupCosineLR", "total_num_steps", "10"]),
    ("last_batch_iteration_below", "WarmupLR", dict(last_batch_iteration=-2), ["WarmupLR", "last_batch_iteration",
                                                                              "-2"]),
]


def args_for(kind, base_lr, steps, params):
    a = [DRIVER, kind, repr(base_lr), str(steps)]
    for k, v in params.items():
        a.append("%s=%s" % (k, v if isinstance(v, str) else repr(v)))
    return a


def close(a, b):
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def main():
    if DRIVER is None:
        print("usage: test_ds_lr_schedules.py <sched_driver>")
        return 2
    passed = failed = 0

    def report(ok, name, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("PASS %s" % name)
        else:
            failed += 1
            print("FAIL %s %s" % (name, detail))

    for name, kind, base_lr, steps, params in CASES:
        P = dict(DEFAULTS[kind])
        P.update(params)
        r = subprocess.run(args_for(kind, base_lr, steps, params), capture_output=True, text=True)
        if r.returncode != 0:
            report(False, name, "exit %d: %s" % (r.returncode, r.stderr.strip()))
            continue
        lines = [l.split() for l in r.stdout.splitlines()]
        states = [l for l in lines if l[0] == "state"]
        restore = [l for l in lines if l[0] == "restore"]
        restore0 = [l for l in lines if l[0] == "restore0"]
        bad = []
        k = params.get("last_batch_iteration", -1)
        # constructed at k >= 0: the optimizer's own lr and betas until the first step()
        exp_at = lambda t: (base_lr,) + OPT_BETAS if k >= 0 and t == k else expected(kind, P, base_lr, t)  # noqa
        if len(states) != steps + 1 or int(states[0][1]) != k:
            bad.append("%d states from t=%s, expected %d from t=%d" % (len(states), states[0][1] if states else None,
                                                                    steps + 1, k))
        for l in states:
            t = int(l[1])
            got = tuple(float(x) for x in l[2:5])
            exp = exp_at(t)
            if not all(close(g, e) for g, e in zip(got, exp)):
                bad.append("t=%d got %r expected %r" % (t, got, exp))
        mid = k + steps // 2 + 1
        if len(restore) != 1 or int(restore[0][1]) != mid or \
                not all(close(float(g), e) for g, e in zip(restore[0][2:5], exp_at(mid))):
            bad.append("restore line %r (expected t=%d)" % (restore, mid))
        if len(restore0) != 1 or int(restore0[0][1]) != k or \
                not all(close(float(g), e) for g, e in zip(restore0[0][2:5], exp_at(k))):
            bad.append("restore0 line %r (expected t=%d)" % (restore0, k))
        if name == "warmup_bad_type" and ("warning" not in r.stderr or "cosine" not in r.stderr):
            bad.append("no warning naming warmup_type 'cosine': %r" % r.stderr)
        if name in ("decay_total_below_warmup", "cosine_total_below_warmup") and "less than" not in r.stderr:
            bad.append("no total_num_steps < warmup_num_steps warning: %r" % r.stderr)
        report(not bad, name, "; ".join(bad[:4]))

    # the first optimizer step's lr, spelled out (the constructor's values), independent of the tables
    first = [("LRRangeTest", 0.1, {}, 1e-3),
             ("WarmupLR", 0.005, dict(warmup_min_lr=1e-6), 1e-6),
             ("WarmupCosineLR", 0.01, dict(total_num_steps=20), 0.0),
             ("OneCycle", 0.1, dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3), 1e-4)]
    for kind, base_lr, params, lr in first:
        r = subprocess.run(args_for(kind, base_lr, 0, params), capture_output=True, text=True)
        got = float(r.stdout.split()[2]) if r.returncode == 0 else None
        extra = ""
        if kind == "OneCycle" and r.returncode == 0:
            b = tuple(float(x) for x in r.stdout.split()[3:5])
            if b != (0.8, 0.99):
                extra = " betas %r, expected (0.8, 0.99)" % (b,)
        report(got == lr and not extra, "first_step_lr_%s" % kind, "got %r expected %r%s" % (got, lr, extra))

    # OneCycle with an optimizer without betas: warning, betas left alone
    r = subprocess.run(args_for("OneCycle", 0.1, 0, dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3)),
                       capture_output=True, text=True, env={"SCHED_NO_BETAS": "1"})
    ok = r.returncode == 0 and "cycle_momentum is disabled" in r.stderr and \
        tuple(float(x) for x in r.stdout.split()[3:5]) == OPT_BETAS
    report(ok, "onecycle_sgd_disables_momentum", "rc %d out %r err %r" % (r.returncode, r.stdout, r.stderr))

    for name, kind, params, needles in ERRORS:
        r = subprocess.run(args_for(kind, 0.1, 3, params), capture_output=True, text=True)
        missing = [n for n in needles if n not in r.stderr]
        ok = r.returncode == 1 and "error:" in r.stderr and not missing
        report(ok, "error_" + name, "rc %d, missing %r in %r" % (r.returncode, missing, r.stderr.strip()))

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
