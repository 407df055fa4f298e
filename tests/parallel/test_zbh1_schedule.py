#!/usr/bin/env python3
"""Tests runtime/parallel/pipeline_schedule's 1F1B and zero-bubble H1 strings (zt_pipe_1f1b, zt_pipe_zbh1) through
schedule_tool zbh1.

0. zt_pipe_1f1b (the string train/schedule.c runs without the flag) is Megatron's 1F1B: min(p - s - 1, m) warm-up
   forwards, one forward and one backward in turn, the remaining backwards.
1. A transcription of DeepSpeed's ZeroBubbleH1Pipeline.steps() as Megatron-DeepSpeed ships it
   (megatron/core/pipeline_parallel/deepspeed_zbh1_schedule.py), its computations only (ForwardPass F,
   BackwardPass B, BackwardOnlyPass b, WeightPass W), for p = 2..8 stages, every stage, nmb = 1..3p+2 micro
   batches, with and without --enable-zbh1-exact-semantics: the C strings must be the same.
2. Invariants: nmb forwards and nmb backwards in 1F1B's order (Megatron's warm-up, steady and cool-down phases,
   b counted as a backward), as many Ws as bs and never a W without a waiting b, stage 0 without b or W.
3. The order in which each micro batch's weight gradients are added (a B adds its own at once, a W the oldest
   waiting): exact semantics gives 1F1B's order 0..nmb-1 on every stage; without, the README's example (device 4 of
   4, 8 micro batches: 4->5->6->7->1->2->3->8).
4. A simulation of the stages with train/schedule.c's exchanges (1F1B's blocking sends, receives and paired
   sendrecvs, rendezvous semantics; the W of a steady step, but the last, before the step's exchange) and unit
   costs F = B = W = 1 (a whole backward 2): no deadlock, 1F1B's time is 3 (m + p - 1) and ZB-H1's, with exact
   semantics or without, 3m + p - 1 for m >= p: the zero-bubble paper's (p - 1)(F + B - W) bubble, a third of
   1F1B's (2 (m + p) - 1 for m < p: one micro batch's chain through the stages). (With every W after its step's
   exchange, exact semantics would take 3m + 2 (p - 1) once m > p.)
Usage: test_zbh1_schedule.py <schedule_tool>
"""
import subprocess
import sys

TOOL = sys.argv[1]
from checks import check, finish  # noqa: E402  (tests/parallel/checks.py, beside this file)


def deepspeed_zbh1(stages, stage_id, micro_batches, exact):
    """ZeroBubbleH1Pipeline.steps(), the compute instructions of each step in order."""
    out = []
    num_warmup = stages - stage_id
    first = stage_id == 0
    forward = backward = weight = 0
    for _ in range(num_warmup - 1):
        if forward == micro_batches:
            continue
        forward += 1
        out.append("F")
    for _ in range(stage_id):
        if forward == micro_batches:
            continue
        forward += 1
        backward += 1
        out += ["F", "b"]
    while forward < micro_batches:
        forward += 1
        backward += 1
        weight += 1
        out.append("F")
        if first:
            out.append("B")
        elif forward == micro_batches:
            out += ["b", "W"]
        elif exact:
            out += ["b", "W"]
        else:
            out.append("B")
    while backward < micro_batches:
        backward += 1
        weight += 1
        out += ["B"] if first else ["b", "W"]
    while weight < micro_batches:
        weight += 1
        out.append("W")
    return "".join(out)


def tool(cases):
    text = "".join("%d %d %d\n" % c for c in cases)
    res = subprocess.run([TOOL, "zbh1"], input=text, capture_output=True, text=True, check=True)
    lines = res.stdout.split("\n")
    got, k = {}, 0
    for p, nmb, exact in cases:
        for s in range(p):
            tag, stage, *ops = lines[k].split(" ")
            k += 1
            assert tag == "Z" and int(stage) == s, lines[k - 1]
            got[(p, s, nmb, exact)] = ops[0] if ops else ""
    return got


def megatron_1f1b(p, s, nmb):
    warm = min(p - s - 1, nmb)
    return "F" * warm + "FB" * (nmb - warm) + "B" * warm


def weight_order(ops):
    """The micro batches in the order their weight gradients are added."""
    order, waiting, b = [], [], 0
    for op in ops:
        if op == "B":
            order.append(b)
            b += 1
        elif op == "b":
            waiting.append(b)
            b += 1
        elif op == "W":
            order.append(waiting.pop(0))
    return order


def pending_w(ops, k):
    return k + 1 < len(ops) and ops[k + 1] == "W"


def simulate(p, nmb, ops_of, recompute=False):
    """Runs the stages with train/schedule.c's exchanges; returns the time the last stage finishes, or None on a
    deadlock. Actions: ("C", cost) or ("X", [(kind, peer, channel)]) with kind "s"/"r" halves posted together
    (a blocking send or receive is one half; sendrecv two); a half matches the partner's complementary half once
    both are posted, and an action ends when all its halves have matched. recompute: a backward first reruns its
    micro batch's forward (cost 1) unless that was the stage's last forward, as train/schedule.c does."""
    acts = []
    for s in range(p):
        a, ops = [], ops_of(s)
        first, last = s == 0, s == p - 1
        warm = min(p - s - 1, nmb)
        steady = nmb - warm
        fwd = bwd = 0
        last_fwd = [-1]
        skip = set()

        def backward(op):
            extra = 1 if recompute and last_fwd[0] != bwd else 0
            last_fwd[0] = bwd
            return ("C", (2 if op == "B" else 1) + extra)

        for k, op in enumerate(ops):
            if k in skip:
                continue
            if op == "W":
                a.append(("C", 1))
            elif op == "F" and fwd < warm:
                if not first:
                    a.append(("X", [("r", s - 1, "act")]))
                a.append(("C", 1))
                last_fwd[0] = fwd
                fwd += 1
                if not last:
                    a.append(("X", [("s", s + 1, "act")]))
            elif op == "F":
                if fwd == warm and not first:
                    a.append(("X", [("r", s - 1, "act")]))
                a.append(("C", 1))
                last_fwd[0] = fwd
                fwd += 1
                if not last:
                    a.append(("X", [("s", s + 1, "act"), ("r", s + 1, "grad")]))
            elif bwd < steady:
                a.append(backward(op))
                bwd += 1
                if pending_w(ops, k) and bwd < steady:  # the steady step's W, before its exchange
                    a.append(("C", 1))
                    skip.add(k + 1)
                if first:
                    continue
                if bwd == steady:
                    a.append(("X", [("s", s - 1, "grad")]))
                else:
                    a.append(("X", [("s", s - 1, "grad"), ("r", s - 1, "act")]))
            else:
                if not last:
                    a.append(("X", [("r", s + 1, "grad")]))
                a.append(backward(op))
                bwd += 1
                if not first:
                    a.append(("X", [("s", s - 1, "grad")]))
        acts.append(a)
    idx, t = [0] * p, [0.0] * p
    matched = [dict() for _ in range(p)]  # stage -> {half index: time}
    while True:
        progress = False
        for s in range(p):
            while idx[s] < len(acts[s]):
                kind, arg = acts[s][idx[s]]
                if kind == "C":
                    t[s] += arg
                    idx[s] += 1
                    progress = True
                    continue
                for h, (k, q, ch) in enumerate(arg):
                    if h in matched[s] or idx[q] >= len(acts[q]) or acts[q][idx[q]][0] != "X":
                        continue
                    for h2, (k2, q2, ch2) in enumerate(acts[q][idx[q]][1]):
                        if q2 == s and ch2 == ch and k2 != k and h2 not in matched[q]:
                            when = max(t[s], t[q])
                            matched[s][h] = when
                            matched[q][h2] = when
                            progress = True
                            break
                if len(matched[s]) < len(arg):
                    break
                t[s] = max([t[s]] + list(matched[s].values()))
                matched[s] = {}
                idx[s] += 1
                progress = True
        if all(idx[s] == len(acts[s]) for s in range(p)):
            return max(t)
        if not progress:
            return None


cases = [(p, nmb, exact) for p in range(2, 9) for nmb in range(1, 3 * p + 3) for exact in (-1, 0, 1)]
got = tool(cases)
for p, nmb, exact in cases:  # zt_pipe_1f1b, which train/schedule.c runs without --enable-zbh1-pipeline
    for s in range(p):
        if exact < 0:
            check(got[(p, s, nmb, -1)] == megatron_1f1b(p, s, nmb), "p=%d s=%d nmb=%d: 1F1B %s, Megatron's %s"
                  % (p, s, nmb, got[(p, s, nmb, -1)], megatron_1f1b(p, s, nmb)))
cases = [c for c in cases if c[2] >= 0]
for p, nmb, exact in cases:
    for s in range(p):
        ops = got[(p, s, nmb, exact)]
        want = deepspeed_zbh1(p, s, nmb, exact)
        check(ops == want, "p=%d s=%d nmb=%d exact=%d: %s, DeepSpeed's %s" % (p, s, nmb, exact, ops, want))
        check(ops.replace("b", "B").replace("W", "") == megatron_1f1b(p, s, nmb),
              "p=%d s=%d nmb=%d: forwards and backwards %s are not 1F1B's" % (p, s, nmb, ops))
        waiting, bad = 0, False
        for op in ops:
            waiting += op == "b"
            waiting -= op == "W"
            bad |= waiting < 0
        check(not bad and waiting == 0, "p=%d s=%d nmb=%d exact=%d: a W without a waiting b or a b left: %s"
              % (p, s, nmb, exact, ops))
        if s == 0:
            check("b" not in ops and "W" not in ops, "stage 0 splits a backward: %s" % ops)
        order = weight_order(ops)
        check(sorted(order) == list(range(nmb)), "p=%d s=%d nmb=%d: weight order %s" % (p, s, nmb, order))
        if exact:
            check(order == list(range(nmb)), "p=%d s=%d nmb=%d exact: weight order %s" % (p, s, nmb, order))

readme = [x + 1 for x in weight_order(got[(4, 3, 8, 0)])]
check(readme == [4, 5, 6, 7, 1, 2, 3, 8], "device 4 of 4, 8 micro batches, default: order %s, the README's "
      "4->5->6->7->1->2->3->8" % readme)

print("simulated step time at F = B = W = 1 (bubble: idle share of the step):")
more = {(p, nmb, exact): deepspeed_zbh1 for p in (2, 4, 8) for nmb in (4 * p, 8 * p) for exact in (0, 1)}
got.update(tool(list(more)))
for p in range(2, 9):
    for nmb in sorted(set(range(1, 3 * p + 3)) | {4 * p, 8 * p}) if p in (2, 4, 8) else range(1, 3 * p + 3):
        base = simulate(p, nmb, lambda s: megatron_1f1b(p, s, nmb))
        zb = simulate(p, nmb, lambda s: got[(p, s, nmb, 1)])
        var = simulate(p, nmb, lambda s: got[(p, s, nmb, 0)])
        check(None not in (base, zb, var), "p=%d nmb=%d: deadlock" % (p, nmb))
        if None in (base, zb, var):
            continue
        check(base == 3 * (nmb + p - 1), "p=%d nmb=%d: 1F1B takes %g, not 3(m + p - 1)" % (p, nmb, base))
        # fewer micro batches than stages: the chain of one micro batch's F and B through the stages, then a W
        bound = 3 * nmb + p - 1 if nmb >= p else 2 * (nmb + p) - 1
        check(zb == bound, "p=%d nmb=%d: ZB-H1 exact takes %g, not %g" % (p, nmb, zb, bound))
        check(var == bound, "p=%d nmb=%d: ZB-H1 takes %g, not %g" % (p, nmb, var, bound))
        if p in (2, 4, 8) and nmb in (p, 2 * p, 4 * p, 8 * p):
            print("  p=%d m=%2d: 1F1B %3g (bubble %.3f), ZB-H1 %3g (bubble %.3f), exact semantics %3g"
                  % (p, nmb, base, 1 - 3 * nmb / base, var, 1 - 3 * nmb / var, zb))
print("the same with this engine's stage-level recompute (a backward reruns its forward unless it was the stage's last):")
for p in (2, 4, 8):
    for nmb in (p, 2 * p, 4 * p):
        base = simulate(p, nmb, lambda s: megatron_1f1b(p, s, nmb), True)
        zb = simulate(p, nmb, lambda s: got[(p, s, nmb, 1)], True)
        var = simulate(p, nmb, lambda s: got[(p, s, nmb, 0)], True)
        check(None not in (base, zb, var) and var <= base and zb <= base,
              "p=%d nmb=%d with recompute: 1F1B %s, ZB-H1 %s, exact %s" % (p, nmb, base, var, zb))
        if None not in (base, zb, var):
            print("  p=%d m=%2d: 1F1B %3g, ZB-H1 %3g (%.3f of 1F1B), exact semantics %3g (%.3f)"
                  % (p, nmb, base, var, var / base, zb, zb / base))
finish()
