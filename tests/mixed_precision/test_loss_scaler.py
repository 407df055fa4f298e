"""The loss scaler against an independent Python transcription of the three update rules
(DeepSpeed's deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler and fp16/fused_optimizer.py FP16_Optimizer;
Megatron's DynamicGradScaler, megatron/optimizer/grad_scaler.py), on random and edge-case
overflow sequences. Usage: test_loss_scaler.py <scaler_driver>"""
import random
import subprocess
import sys


def ds_dynamic(init, window, hyst, consecutive, min_scale, flags):
    cur, it, last, ch = init, 0, -1, hyst
    out = []
    for f in flags:
        ev = "kept"
        if f:
            if hyst == 1 or ch == 1:
                if cur == min_scale:
                    out.append("AT_MIN")
                    return out
                cur = max(cur / 2, min_scale)
                ev = "reduced"
            else:
                ch -= 1
                ev = "hysteresis"
            last = it
        else:
            if consecutive:
                ch = hyst
            if (it - last) % window == 0:
                if not consecutive:
                    ch = hyst
                cur *= 2
                ev = "grew"
        it += 1
        out.append((int(f), cur, ch, ev))
    return out


def ds_fused(init, window, hyst, consecutive, min_scale, flags):
    cur, it, last = init, 0, -1
    out = []
    for f in flags:
        ev = "kept"
        if f:
            cur = max(cur / 2, min_scale)
            last = it
            ev = "reduced"
        else:
            stable = it - last - 1
            if stable > 0 and stable % window == 0:
                cur *= 2
                ev = "grew"
        it += 1
        out.append((int(f), cur, hyst, ev))
    return out


def megatron(init, window, hyst, consecutive, min_scale, flags):
    cur, growth, tracker = init, 0, hyst
    out = []
    for f in flags:
        ev = "kept"
        if f:
            growth = 0
            tracker -= 1
            if tracker <= 0:
                cur = max(cur * 0.5, min_scale)
                ev = "reduced"
            else:
                ev = "hysteresis"
        else:
            growth += 1
            if growth == window:
                growth = 0
                tracker = hyst
                cur *= 2
                ev = "grew"
        out.append((int(f), cur, tracker, ev))
    return out


RULES = {"ds_dynamic": ds_dynamic, "ds_fused": ds_fused, "megatron": megatron}


def run(driver, kind, init, window, hyst, consecutive, min_scale, flags):
    s = "".join("1" if f else "0" for f in flags)
    res = subprocess.run([driver, kind, repr(init), str(window), str(hyst), str(int(consecutive)), repr(min_scale), s],
                         capture_output=True, text=True, check=True)
    got = []
    for line in res.stdout.split("\n"):
        if not line:
            continue
        if line == "AT_MIN":
            got.append("AT_MIN")
            continue
        a, b, c, d = line.split()
        got.append((int(a), float(b), int(c), d))
    return got


def main():
    driver = sys.argv[1]
    rng = random.Random(20261121)
    cases = 0
    for kind, rule in RULES.items():
        for trial in range(60):
            init = 2.0 ** rng.choice([4, 8, 16, 32])
            window = rng.choice([1, 2, 3, 5, 10])
            hyst = rng.choice([1, 2, 3])
            consecutive = rng.random() < 0.5
            min_scale = rng.choice([1.0, 0.25, 2.0 ** rng.randint(0, 4)])
            p = rng.choice([0.05, 0.3, 0.7, 0.95])
            flags = [rng.random() < p for _ in range(rng.randint(1, 80))]
            want = rule(init, window, hyst, consecutive, min_scale, flags)
            got = run(driver, kind, init, window, hyst, consecutive, min_scale, flags)
            if got != want:
                print(f"FAIL {kind} init={init} window={window} hysteresis={hyst} consecutive={consecutive} "
                      f"min={min_scale} flags={''.join('1' if f else '0' for f in flags)}")
                for i, (g, w) in enumerate(zip(got, want)):
                    if g != w:
                        print(f"  iteration {i}: got {g} want {w}")
                        break
                print(f"  lengths got {len(got)} want {len(want)}")
                sys.exit(1)
            cases += 1
    # DeepSpeed raises at the minimum: 2**2 with min 1 reaches 1 after two overflows, the third raises
    got = run(driver, "ds_dynamic", 4.0, 1000, 1, 0, 1.0, [1, 1, 1, 1])
    assert got[-1] == "AT_MIN" and len(got) == 3, got
    # what DynamicLossScaler.update_scale implies: without consecutive_hysteresis, once hysteresis is used up
    # every further overflow halves until a window growth refills it
    got = run(driver, "ds_dynamic", 2.0 ** 16, 1000, 2, 0, 1.0, [1, 0, 1, 1])
    assert [g[3] for g in got] == ["hysteresis", "kept", "reduced", "reduced"], got
    # a static scale never moves but still skips overflowing steps
    got = run(driver, "static", 128.0, 1, 1, 0, 1.0, [1, 0, 1])
    assert [(g[0], g[1]) for g in got] == [(1, 128.0), (0, 128.0), (1, 128.0)], got
    print(f"ok: {cases} random sequences and 3 edge cases match the reference rules")


main()
