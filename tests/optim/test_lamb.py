#!/usr/bin/python3
"""Oracle test for the Lamb optimizer (ZT_OPT_LAMB in runtime/optim/optimizer.c).

A NumPy float64 implementation of DeepSpeed's FusedLamb (deepspeed/ops/lamb/fused_lamb.py and
csrc/lamb/fused_lamb_cuda_kernel.cu) over a small parameter table, 3 steps per case:
  m = b1 m + (1-b1) g,  v = b2 v + (1-b2) g^2
  current kernel: u = (m/bc1) / (sqrt(v/bc2) + eps) + wd p,  p -= lr * r * u
  legacy kernel (DeepSpeed <= 0.16): u = m / (sqrt(v) + eps) + wd p,  p -= lr*sqrt(bc2)/bc1 * r * u
  r = clamp(||p|| / ||u||, min_coeff, max_coeff) per tensor, r = 1 when ||p|| or ||u|| is 0
  (eps_inside_sqrt: sqrt(. + eps); bias_correction off: bc1 = bc2 = 1; wd 0 for no_weight_decay).
Checks: coefficients, m and v to 1e-5 relative, parameters to 1e-5 relative, and each step's parameter
change per tensor to 1e-3 relative plus the fp32 rounding of p (2e-7 ||p||); the
clamp cases also assert the coefficient they are built to hit (max_coeff, min_coeff, 1 for a
zero-norm parameter and for a zero update).

usage: test_lamb.py <lamb_driver>
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not available to this interpreter (%s)" % sys.executable)
    sys.exit(77)

DRIVER = sys.argv[1] if len(sys.argv) > 1 else None


def lamb_oracle(cfg, tensors, p0, steps):
    """Returns per step (coeffs, params list) and the final m, v (float64). The kernel receives betas,
    eps, weight decay, coefficients, lr and scale as C floats, so the oracle uses those values."""
    cfg = {k: (float(np.float32(v)) if isinstance(v, float) else v) for k, v in cfg.items()}
    steps = [(float(np.float32(lr)), float(np.float32(gs)), g) for lr, gs, g in steps]
    p = [x.astype(np.float64).copy() for x in p0]
    m = [np.zeros_like(x) for x in p]
    v = [np.zeros_like(x) for x in p]
    out = []
    for k, (lr, gs, grads) in enumerate(steps, start=1):
        if cfg["bias_correction"]:
            bc1, bc2 = 1.0 - cfg["beta1"] ** k, 1.0 - cfg["beta2"] ** k
        else:
            bc1 = bc2 = 1.0
        coeffs = []
        for i, (numel, nwd) in enumerate(tensors):
            wd = 0.0 if nwd else cfg["weight_decay"]
            g = grads[i].astype(np.float64) * gs
            m[i] = cfg["beta1"] * m[i] + (1 - cfg["beta1"]) * g
            v[i] = cfg["beta2"] * v[i] + (1 - cfg["beta2"]) * g * g
            if cfg["lamb_legacy"]:
                mh, vh, step = m[i], v[i], lr * np.sqrt(bc2) / bc1
            else:
                mh, vh, step = m[i] / bc1, v[i] / bc2, lr
            denom = np.sqrt(vh + cfg["eps"]) if cfg["eps_inside_sqrt"] else np.sqrt(vh) + cfg["eps"]
            u = mh / denom + wd * p[i]
            wn, un = np.linalg.norm(p[i]), np.linalg.norm(u)
            r = 1.0
            if wn != 0 and un != 0:
                r = min(max(wn / un, cfg["min_coeff"]), cfg["max_coeff"])
            p[i] = p[i] - step * r * u
            coeffs.append(r)
        out.append((coeffs, [x.copy() for x in p]))
    return out, m, v


def f32(x):
    return np.asarray(x, dtype=np.float32)


def make_case(name, rng, cfg, specs, nsteps=3, lrs=(1e-3, 2e-3, 5e-4), scales=(1.0, 0.5, 1.0)):
    """specs: list of (numel, no_weight_decay, init callable, grad callable(step))."""
    tensors = [(n, nwd) for n, nwd, _, _ in specs]
    p0 = [f32(init(n)) for n, _, init, _ in specs]
    steps = []
    for k in range(nsteps):
        steps.append((lrs[k], scales[k], [f32(gf(n, k)) for n, _, _, gf in specs]))
    return dict(name=name, cfg=cfg, tensors=tensors, p0=p0, steps=steps)


def write_case(path, case):
    c = case["cfg"]
    with open(path, "w") as f:
        f.write("%r %r %r %r %r %r %d %d %d\n" % (c["beta1"], c["beta2"], c["eps"], c["weight_decay"],
                                                  c["max_coeff"], c["min_coeff"], c["bias_correction"],
                                                  c["eps_inside_sqrt"], c["lamb_legacy"]))
        f.write("%d %d\n" % (len(case["steps"]), len(case["tensors"])))
        for n, nwd in case["tensors"]:
            f.write("%d %d\n" % (n, nwd))
        f.write(" ".join("%.9g" % x for t in case["p0"] for x in t) + "\n")
        for lr, gs, grads in case["steps"]:
            f.write("%r %r " % (lr, gs) + " ".join("%.9g" % x for g in grads for x in g) + "\n")


def split(flat, tensors):
    out, o = [], 0
    for n, _ in tensors:
        out.append(np.array(flat[o:o + n]))
        o += n
    return out


def rel_ok(got, exp, tol, floor=1e-3):
    """|got - exp| <= tol * max(|exp|, floor * max|exp|): elements near 0 (after cancellation in fp32
    sums) are held to the tensor's scale."""
    scale = max(np.max(np.abs(exp)), 1e-30)
    return np.all(np.abs(got - exp) <= tol * np.maximum(np.abs(exp), floor * scale))


def cfg_with(**kw):
    c = dict(beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, max_coeff=10.0, min_coeff=0.01,
             bias_correction=1, eps_inside_sqrt=0, lamb_legacy=0)
    c.update(kw)
    return c


def main():
    if DRIVER is None:
        print("usage: test_lamb.py <lamb_driver>")
        return 2
    rng = np.random.default_rng(1234)
    normal = lambda s: (lambda n: rng.normal(0.0, s, n))
    grad = lambda s: (lambda n, k: rng.normal(0.0, s, n))
    zero = lambda n, *a: np.zeros(n)
    basic = [(37, 0, normal(0.5), grad(0.1)), (5, 1, normal(1.0), grad(0.3)), (64, 0, normal(0.05), grad(1e-3))]
    clamp = [(16, 1, lambda n: 500.0 + rng.normal(0, 1, n), grad(0.2)),   # ||p||/||u|| ~ 500 -> max_coeff
             (16, 0, normal(1e-4), grad(0.2)),                              # ~ 1e-4 -> min_coeff
             (8, 1, zero, grad(0.1)),                                       # ||p|| = 0 at step 1 -> 1
             (8, 1, normal(1.0), zero)]                                     # g = 0, no decay: u = 0 -> 1
    cases = [
        make_case("basic_wd", rng, cfg_with(weight_decay=0.01), basic),
        make_case("legacy_kernel", rng, cfg_with(weight_decay=0.01, lamb_legacy=1), basic),
        make_case("eps_inside_no_bias_correction", rng,
                  cfg_with(beta1=0.8, beta2=0.95, eps=1e-6, weight_decay=0.1, eps_inside_sqrt=1, bias_correction=0),
                  basic),
        make_case("legacy_no_bias_correction", rng, cfg_with(weight_decay=0.05, lamb_legacy=1, bias_correction=0),
                  basic),
        make_case("clamps", rng, cfg_with(weight_decay=0.1), clamp),
        make_case("clamps_custom_bounds", rng, cfg_with(weight_decay=0.1, max_coeff=3.0, min_coeff=0.2), clamp),
    ]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as d:
        for case in cases:
            path = os.path.join(d, case["name"] + ".txt")
            write_case(path, case)
            r = subprocess.run([DRIVER, path], capture_output=True, text=True)
            bad = []
            if r.returncode != 0:
                bad.append("exit %d: %s" % (r.returncode, r.stderr.strip()))
            else:
                lines = [l.split() for l in r.stdout.splitlines()]
                # %.9g identifies a float32 exactly once rounded back to float32
                f = lambda l: [float(np.float32(float(x))) for x in l[1:]]
                coeff_lines = [f(l) for l in lines if l[0] == "coeffs"]
                param_lines = [f(l) for l in lines if l[0] == "params"]
                m_got = f([l for l in lines if l[0] == "m"][0])
                v_got = f([l for l in lines if l[0] == "v"][0])
                # the oracle starts from the same float32 inputs
                exp, m_exp, v_exp = lamb_oracle(case["cfg"], case["tensors"], case["p0"], case["steps"])
                prev_got = [x.astype(np.float64) for x in case["p0"]]
                prev_exp = prev_got
                for k, ((ce, pe), cg, pg) in enumerate(zip(exp, coeff_lines, param_lines)):
                    if not rel_ok(np.array(cg), np.array(ce), 1e-5):
                        bad.append("step %d coeffs %r expected %r" % (k + 1, cg, ce))
                    pg = split(pg, case["tensors"])
                    for i, (a, b) in enumerate(zip(pg, pe)):
                        if not rel_ok(a, b, 1e-5):
                            bad.append("step %d tensor %d params differ: max |d| %g" % (k + 1, i, np.max(np.abs(a - b))))
                        da, db = a - prev_got[i], b - prev_exp[i]
                        nb = np.linalg.norm(db)
                        # fp32 storage of p rounds each element by <= 6e-8 relative
                        if np.linalg.norm(da - db) > 1e-3 * nb + 2e-7 * np.linalg.norm(b):
                            bad.append("step %d tensor %d update differs: |d-d_exp|/|d_exp| = %g" %
                                       (k + 1, i, np.linalg.norm(da - db) / max(nb, 1e-300)))
                    prev_got, prev_exp = pg, pe
                for tag, got, ex in (("m", m_got, m_exp), ("v", v_got, v_exp)):
                    for i, (a, b) in enumerate(zip(split(got, case["tensors"]), ex)):
                        if not rel_ok(a, b, 1e-5, floor=1e-2):
                            bad.append("%s of tensor %d differs: max |d| %g" % (tag, i, np.max(np.abs(a - b))))
                if case["name"].startswith("clamps"):
                    mx, mn = case["cfg"]["max_coeff"], case["cfg"]["min_coeff"]
                    for k, cg in enumerate(coeff_lines):
                        want = [mx, mn, 1.0 if k == 0 else None, 1.0]
                        for i, w in enumerate(want):
                            if w is not None and abs(cg[i] - w) > 1e-6 * w:
                                bad.append("step %d tensor %d coeff %r, the clamp path expects %r" % (k + 1, i, cg[i], w))
                    if len(coeff_lines) > 1 and coeff_lines[1][2] == 1.0:
                        bad.append("zero-init tensor's step-2 coeff is 1: ||p|| is no longer 0 there")
            if bad:
                failed += 1
                print("FAIL %s: %s" % (case["name"], "; ".join(bad[:5])))
            else:
                passed += 1
                print("PASS %s" % case["name"])
        # a tensor large enough for the OpenMP path: the same bits with 1 and 3 threads (fixed-order sums)
        big = make_case("threads", rng, cfg_with(weight_decay=0.01),
                        [(70001, 0, normal(0.02), grad(1e-3)), (40000, 1, normal(1.0), grad(1e-2))])
        path = os.path.join(d, "threads.txt")
        write_case(path, big)
        outs = []
        for nt in ("1", "3"):
            env = dict(os.environ, OMP_NUM_THREADS=nt)
            outs.append(subprocess.run([DRIVER, path], capture_output=True, text=True, env=env))
        ok = all(o.returncode == 0 for o in outs) and outs[0].stdout == outs[1].stdout and outs[0].stdout
        if ok:
            exp, _, _ = lamb_oracle(big["cfg"], big["tensors"], big["p0"], big["steps"])
            got = [[float(np.float32(float(x))) for x in l.split()[1:]]
                   for l in outs[0].stdout.splitlines() if l.startswith("coeffs")]
            ok = all(rel_ok(np.array(g), np.array(e[0]), 1e-5) for g, e in zip(got, exp))
        if ok:
            passed += 1
            print("PASS deterministic_threads")
        else:
            failed += 1
            print("FAIL deterministic_threads: outputs differ between 1 and 3 threads or from the oracle")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
