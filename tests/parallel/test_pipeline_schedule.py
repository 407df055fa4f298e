#!/usr/bin/env python3
"""Tests runtime/parallel/pipeline_schedule through tests/parallel/schedule_tool.

1. A transcription of Megatron's forward_backward_pipelining_with_interleaving (megatron/core/pipeline_parallel/
   schedules.py: forward_only False, batch_p2p_comm True, no p2p overlap) with its p2p calls recorded, for
   p = 3..6 and 8 stages, v = 1..4 chunks and nmb = p, 2p, 3p micro batches: the C steps must be the same
   forwards, backwards and exchanges in the same order.
2. The messages, matched per channel (the k-th send from stage a to stage b is the k-th receive on b from a):
   every forward gets the output of its predecessor (chunk c of stage s-1, or chunk c-1 of stage p-1 when
   s = 0) and every backward the gradient of its successor, and the C labels of the received tensors agree.
3. The stages run against each other with blocking batched exchanges (a batch completes once every partner
   has posted the matching batch): no deadlock, and the pipeline bubble (idle / compute time, forward 1 and
   backward 2 per micro batch split over the chunks, no communication time) printed next to Megatron's
   (p - 1) / (v m); the simulated bubble must equal it.
4. The slots: a received tensor goes to a free slot, the forward and backward find their input and output
   gradient in the slots they name, a slot is free again after the backward, and the slot count is the most
   received tensors held at once.
Usage: test_pipeline_schedule.py <schedule_tool>
"""
import subprocess
import sys
from fractions import Fraction

TOOL = sys.argv[1]
from checks import check, finish  # noqa: E402  (tests/parallel/checks.py, beside this file)


def megatron_interleaved(p, s, v, nmb):
    """Events of pipeline rank s: ("F", chunk, mb, input), ("B", chunk, mb, grad), ("X", sends, recvs) with sends
    [(direction, payload)] and recvs [(direction, token)]; tokens are resolved by channel matching later."""
    events = []
    vrank = [0]
    nrecv = {"prev": 0, "next": 0}

    def first_stage(ignore_virtual=False):
        return s == 0 and (ignore_virtual or vrank[0] == 0)

    def last_stage(ignore_virtual=False):
        return s == p - 1 and (ignore_virtual or vrank[0] == v - 1)

    def communicate(send_next=None, send_prev=None, recv_prev=False, recv_next=False):
        sends, recvs, got = [], [], {}
        if send_next is not None:
            sends.append(("next", send_next))
        if send_prev is not None:
            sends.append(("prev", send_prev))
        for d, flag in (("prev", recv_prev), ("next", recv_next)):
            if flag:
                tok = (s, d, nrecv[d])
                nrecv[d] += 1
                recvs.append((d, tok))
                got[d] = tok
        events.append(("X", sends, recvs))
        return got.get("prev"), got.get("next")

    input_tensors = [[] for _ in range(v)]
    output_tensors = [[] for _ in range(v)]
    output_tensor_grads = [[] for _ in range(v)]
    fwd_count, bwd_count = [0] * v, [0] * v
    total = nmb * v
    all_warmup = False
    if nmb == p:
        warmup = total
        all_warmup = True
    else:
        warmup = min((p - s - 1) * 2 + (v - 1) * p, total)
    remaining = total - warmup

    def chunk_id(k, forward):
        c = (k % (p * v)) // p
        return c if forward else v - c - 1

    def forward_step_helper(k):
        c = chunk_id(k, True)
        vrank[0] = c
        if first_stage():
            if len(input_tensors[c]) == len(output_tensors[c]):
                input_tensors[c].append(None)
        inp = input_tensors[c][-1]
        mb = fwd_count[c]
        fwd_count[c] += 1
        events.append(("F", c, mb, inp))
        out = ("act", s, c, mb)
        output_tensors[c].append(out)
        return out

    def backward_step_helper(k):
        c = chunk_id(k, False)
        vrank[0] = c
        if last_stage():
            if len(output_tensor_grads[c]) == 0:
                output_tensor_grads[c].append(None)
        inp = input_tensors[c].pop(0)
        out = output_tensors[c].pop(0)
        grad = output_tensor_grads[c].pop(0)
        mb = bwd_count[c]
        bwd_count[c] += 1
        check(out == ("act", s, c, mb), "p%d s%d v%d m%d: backward of chunk %d pops output %s, not micro batch %d"
              % (p, s, v, nmb, c, out, mb))
        events.append(("B", c, mb, grad))
        return None if inp is None else ("grad", s, c, mb)

    vrank[0] = 0
    input_tensors[0].append(None if first_stage() else communicate(recv_prev=True)[0])
    for k in range(warmup):
        output_tensor = forward_step_helper(k)
        next_c = chunk_id(k + 1, True)
        recv_prev = True
        if first_stage(ignore_virtual=True) and next_c == 0:
            recv_prev = False
        if k == total - 1:
            recv_prev = False
        if last_stage():
            output_tensor = None
        if k == warmup - 1 and not all_warmup:
            recv_next = not last_stage(ignore_virtual=True)
            input_tensor, output_tensor_grad = communicate(output_tensor, None, recv_prev, recv_next)
            output_tensor_grads[v - 1].append(output_tensor_grad)
        else:
            input_tensor, _ = communicate(output_tensor, None, recv_prev, False)
        input_tensors[next_c].append(input_tensor)
    for k in range(remaining):
        forward_k = k + warmup
        output_tensor = forward_step_helper(forward_k)
        backward_k = k
        input_tensor_grad = backward_step_helper(backward_k)
        vrank[0] = chunk_id(forward_k, True)
        if last_stage():
            output_tensor = None
        vrank[0] = chunk_id(backward_k, False)
        if first_stage():
            input_tensor_grad = None
        recv_prev = True
        if first_stage(ignore_virtual=True):
            next_f = chunk_id(forward_k - (p - 1), True)
            if next_f == v - 1:
                recv_prev = False
            next_f += 1
        else:
            next_f = chunk_id(forward_k + 1, True)
        recv_next = True
        if last_stage(ignore_virtual=True):
            next_b = chunk_id(backward_k - (p - 1), False)
            if next_b == 0:
                recv_next = False
            next_b -= 1
        else:
            next_b = chunk_id(backward_k + 1, False)
        if k == remaining - 1:
            recv_prev = False
        input_tensor, output_tensor_grad = communicate(output_tensor, input_tensor_grad, recv_prev, recv_next)
        if recv_prev:
            input_tensors[next_f].append(input_tensor)
        if recv_next:
            output_tensor_grads[next_b].append(output_tensor_grad)
    if all_warmup:
        output_tensor_grads[v - 1].append(None if last_stage() else communicate(recv_next=True)[1])
    for k in range(remaining, total):
        input_tensor_grad = backward_step_helper(k)
        next_b = chunk_id(k + 1, False)
        recv_next = True
        if last_stage(ignore_virtual=True) and next_b == v - 1:
            recv_next = False
        if k == total - 1:
            recv_next = False
        output_tensor_grads[next_b].append(communicate(None, input_tensor_grad, False, recv_next)[1])
    return events


def parse(text):
    out, cur = [], None
    for line in text.splitlines():
        f = line.split()
        if f[0] == "P":
            cur = {"pvm": tuple(map(int, f[1:])), "stages": []}
        elif f[0] == "T":
            cur["stages"].append({"info": tuple(map(int, f[2:])), "steps": []})
        elif f[0] == "X":
            cur["stages"][-1]["steps"].append(tuple(map(int, f[1:])))
        elif f[0] == "E":
            out.append(cur)
    return out


def c_events(p, s, steps):
    """The C steps as events comparable with megatron_interleaved's (empty exchanges dropped)."""
    ev = []
    for fc, fm, _, bc, bm, _, _, sn, sp, rpc, rpm, _, rnc, rnm, _ in steps:
        if fc >= 0:
            ev.append(("F", fc, fm))
        if bc >= 0:
            ev.append(("B", bc, bm))
        ops = [("send", "next")] * sn + [("send", "prev")] * sp
        ops += [("recv", "prev")] * (rpc >= 0) + [("recv", "next")] * (rnc >= 0)
        if ops:
            ev.append(("X", tuple(sorted(ops))))
    return ev


def py_events(events):
    ev = []
    for e in events:
        if e[0] in "FB":
            ev.append(e[:3])
        elif e[1] or e[2]:
            ev.append(("X", tuple(sorted([("send", d) for d, _ in e[1]] + [("recv", d) for d, _ in e[2]]))))
    return ev


def resolve(p, all_events):
    """Matches sends and receives per channel; returns token -> payload, or None when the counts differ."""
    sent = {}
    for s, events in enumerate(all_events):
        for e in events:
            if e[0] == "X":
                for d, payload in e[1]:
                    dst = (s + 1) % p if d == "next" else (s - 1) % p
                    sent.setdefault((s, dst), []).append(payload)
    got = {}
    for s, events in enumerate(all_events):
        for e in events:
            if e[0] == "X":
                for d, tok in e[2]:
                    src = (s - 1) % p if d == "prev" else (s + 1) % p
                    got.setdefault((src, s), []).append(tok)
    table = {}
    for ch in set(sent) | set(got):
        a, b = sent.get(ch, []), got.get(ch, [])
        check(len(a) == len(b), "channel %s: %d sends, %d receives" % (ch, len(a), len(b)))
        for payload, tok in zip(a, b):
            table[tok] = payload
    return table


def predecessor(p, s, c, mb):
    return ("act", s - 1, c, mb) if s > 0 else ("act", p - 1, c - 1, mb)


def successor(p, s, c, mb):
    return ("grad", s + 1, c, mb) if s < p - 1 else ("grad", 0, c + 1, mb)


def simulate(p, programs, cost):
    """Runs the stages' event lists with blocking batched exchanges; returns (end time, busy time per stage) or
    None on deadlock. cost(event) is the compute time of an F or B event."""
    # the k-th send on channel (a, b) pairs with the k-th receive on it: find each op's partner exchange
    where = {}
    for s, prog in enumerate(programs):
        count = {}
        for i, e in enumerate(prog):
            if e[0] != "X":
                continue
            for kind, d in e[1]:
                peer = (s + 1) % p if d == "next" else (s - 1) % p
                ch = (s, peer) if kind == "send" else (peer, s)
                key = (kind, ch, count.get((kind, ch), 0))
                count[(kind, ch)] = key[2] + 1
                where[key] = (s, i)
    pos = [0] * p
    clock = [Fraction(0)] * p
    busy = [Fraction(0)] * p
    posted = [dict() for _ in range(p)]  # exchange index -> time posted
    ops_of = {}
    for (kind, ch, k), (s, i) in where.items():
        other = "recv" if kind == "send" else "send"
        ops_of.setdefault((s, i), []).append(where.get((other, ch, k)))
    progress = True
    while progress:
        progress = False
        for s, prog in enumerate(programs):
            while pos[s] < len(prog):
                e = prog[pos[s]]
                if e[0] in "FB":
                    t = cost(e)
                    clock[s] += t
                    busy[s] += t
                    pos[s] += 1
                    progress = True
                    continue
                posted[s].setdefault(pos[s], clock[s])
                partners = ops_of.get((s, pos[s]), [])
                if any(q is None for q in partners):
                    return None
                if not all(i in posted[q] for q, i in partners):
                    break
                clock[s] = max([clock[s]] + [posted[q][i] for q, i in partners])
                pos[s] += 1
                progress = True
    if any(pos[s] < len(programs[s]) for s in range(p)):
        return None
    return max(clock), busy


def megatron_1f1b(p, s, nmb):
    """Megatron's forward_backward_pipelining_without_interleaving as events (for the bubble comparison)."""
    ev, first, last = [], s == 0, s == p - 1
    warmup = min(p - s - 1, nmb)
    for i in range(warmup):
        if not first:
            ev.append(("X", (("recv", "prev"),)))
        ev.append(("F", 0, i))
        if not last:
            ev.append(("X", (("send", "next"),)))
    rem = nmb - warmup
    if rem > 0 and not first:
        ev.append(("X", (("recv", "prev"),)))
    for i in range(rem):
        ev.append(("F", 0, warmup + i))
        if not last:
            ev.append(("X", (("recv", "next"), ("send", "next"))))
        ev.append(("B", 0, i))
        if not first:
            ev.append(("X", (("send", "prev"),) if i == rem - 1 else (("recv", "prev"), ("send", "prev"))))
    for i in range(warmup):
        if not last:
            ev.append(("X", (("recv", "next"),)))
        ev.append(("B", 0, rem + i))
        if not first:
            ev.append(("X", (("send", "prev"),)))
    return ev


def bubble(p, programs, v, nmb):
    """Idle / compute time of a stage: forward 1 and backward 2 per micro batch, split over the v chunks."""
    r = simulate(p, programs, lambda e: Fraction(1 if e[0] == "F" else 2, v))
    if r is None:
        return None
    end, busy = r
    return (end - busy[0]) / busy[0]


def main():
    cases = [(p, v, k * p) for p in (3, 4, 5, 6, 8) for v in (1, 2, 3, 4) for k in (1, 2, 3)]
    r = subprocess.run([TOOL], input="".join("%d %d %d\n" % c for c in cases), capture_output=True, text=True)
    if r.returncode != 0:
        print("schedule_tool failed:", r.stderr)
        sys.exit(1)
    schedules = parse(r.stdout)
    check(len(schedules) == len(cases), "schedule_tool printed %d schedules for %d cases" % (len(schedules), len(cases)))
    print("bubble (idle / compute time; forward 1, backward 2; zero-latency messages):")
    print("   p  v    m | 1F1B sim  (p-1)/m | interleaved sim  (p-1)/(v m)")
    for sch in schedules:
        p, v, nmb = sch["pvm"]
        tag = "p%d v%d m%d" % (p, v, nmb)
        meg = [megatron_interleaved(p, s, v, nmb) for s in range(p)]
        table = resolve(p, meg)
        for s in range(p):
            st = sch["stages"][s]
            check(c_events(p, s, st["steps"]) == py_events(meg[s]), "%s stage %d: C steps differ from Megatron's" % (tag, s))
            # every forward and backward of every (chunk, micro batch), once
            fw = sorted(e[1:3] for e in meg[s] if e[0] == "F")
            bw = sorted(e[1:3] for e in meg[s] if e[0] == "B")
            want = sorted((c, m) for c in range(v) for m in range(nmb))
            check(fw == want and bw == want, "%s stage %d: forwards/backwards are not each (chunk, mb) once" % (tag, s))
            for e in meg[s]:
                if e[0] == "F" and not (s == 0 and e[1] == 0):
                    check(table.get(e[3]) == predecessor(p, s, e[1], e[2]), "%s stage %d: forward %s gets %s"
                          % (tag, s, e[1:3], table.get(e[3])))
                if e[0] == "B" and not (s == p - 1 and e[1] == v - 1):
                    check(table.get(e[3]) == successor(p, s, e[1], e[2]), "%s stage %d: backward %s gets %s"
                          % (tag, s, e[1:3], table.get(e[3])))
            # the C labels of received tensors: the sender's payload for that (chunk, mb)
            recvs = [tok for e in meg[s] if e[0] == "X" for _, tok in e[2]]
            labels = []
            for x in st["steps"]:
                if x[9] >= 0:
                    labels.append(("prev", predecessor(p, s, x[9], x[10])))
                if x[12] >= 0:
                    labels.append(("next", successor(p, s, x[12], x[13])))
            check(sorted(map(str, labels)) == sorted(str((t[1], table.get(t))) for t in recvs),
                  "%s stage %d: C labels of received tensors differ from the matched sends" % (tag, s))
            # the slots hold what the steps say, and no more of them than the peak of live received tensors
            nsteps, warmup, nslots = st["info"]
            slot, peak, ok_slots = {}, 0, True
            for fc, fm, fs, bc, bm, bis, bgs, _, _, rpc, rpm, rps, rnc, rnm, rns in st["steps"]:
                if fc >= 0:
                    ok_slots &= (fs < 0) == (s == 0 and fc == 0) and (fs < 0 or slot.get(fs) == ("in", fc, fm))
                if bc >= 0:
                    ok_slots &= (bis < 0) == (s == 0 and bc == 0) and (bis < 0 or slot.get(bis) == ("in", bc, bm))
                    ok_slots &= (bgs < 0) == (s == p - 1 and bc == v - 1) and (bgs < 0 or slot.get(bgs) == ("grad", bc, bm))
                    slot.pop(bis, None)
                    slot.pop(bgs, None)
                for kind, c, m, sl in (("in", rpc, rpm, rps), ("grad", rnc, rnm, rns)):
                    if c >= 0:
                        ok_slots &= 0 <= sl < nslots and sl not in slot
                        slot[sl] = (kind, c, m)
                peak = max(peak, len(slot))
            check(ok_slots and not slot, "%s stage %d: slots misused or left in use" % (tag, s))
            check(nslots == peak, "%s stage %d: %d slots, peak %d" % (tag, s, nslots, peak))
            check(warmup == (v * nmb if nmb == p else min((p - s - 1) * 2 + (v - 1) * p, v * nmb)),
                  "%s stage %d: warmup %d" % (tag, s, warmup))
        progs = [py_events(ev) for ev in meg]
        b = bubble(p, progs, v, nmb)
        check(b is not None, "%s: the stages deadlock" % tag)
        b1 = bubble(p, [megatron_1f1b(p, s, nmb) for s in range(p)], 1, nmb)
        check(b1 is not None, "%s: 1F1B deadlocks" % tag)
        if b is None or b1 is None:
            continue
        formula = Fraction(p - 1, v * nmb)
        check(b1 == Fraction(p - 1, nmb), "%s: 1F1B bubble %s, formula %s" % (tag, b1, Fraction(p - 1, nmb)))
        check(b == formula, "%s: interleaved bubble %s, formula %s" % (tag, b, formula))
        print("  %2d %2d %4d |  %6.4f   %6.4f |     %6.4f       %6.4f" % (p, v, nmb, b1, Fraction(p - 1, nmb), b, formula))
    finish()


main()
