"""The legacy curriculum scheduler (train/curriculum.c) and the ds_config's curriculum_learning block against
curriculum_oracle.py, a transcription of DeepSpeed's curriculum_scheduler.py: the get_difficulty and
update_difficulty values of fixed_linear, fixed_root and fixed_discrete schedules over many parameter sets and the
edge steps (1, total_curriculum_step and around it, the max_step boundaries, far past the end), DeepSpeed's required
keys and their messages, the difficulty_step warning, and the start-up checks against --seq-length and
--sequence-parallel. Usage: test_curriculum_schedule.py CURRICULUM_SCHEDULE_TOOL"""
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from curriculum_oracle import CurriculumScheduler, WARNING  # noqa: E402

tool = sys.argv[1]
tmp = tempfile.mkdtemp()
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def write(cl, name="c.json", extra=None):
    path = os.path.join(tmp, name)
    d = {"train_batch_size": 8, "curriculum_learning": cl}
    if extra:
        d.update(extra)
    with open(path, "w") as f:
        json.dump(d, f)
    return path


def run(*args):
    r = subprocess.run([tool, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def schedule_case(name, cl, steps):
    """The tool's (t, get, update) for the sorted steps against the oracle stepped the same way."""
    path = write(dict(cl, enabled=True, curriculum_type="seqlen"))
    ref = CurriculumScheduler(cl)
    lo, hi = min(steps), max(steps)
    rc, out, err = run(path, str(lo), str(hi))
    if rc != 0:
        check(name, False, err.strip()[-300:])
        return
    got = {}
    for line in out.split("\n"):
        if line:
            t, g, u = map(int, line.split())
            got[t] = (g, u)
    bad = []
    for t in range(lo, hi + 1):
        exp = (ref.get_difficulty(t), ref.update_difficulty(t))
        if got.get(t) != exp:
            bad.append((t, got.get(t), exp))
    check(name, not bad and len(got) == hi - lo + 1, f"{len(bad)} steps differ, first {bad[:3]}")
    check(name + " warning", (WARNING in err) == ref.warned, f"warned={ref.warned}, stderr={err.strip()[-200:]}")


rng = random.Random(21)
# ---- 1. fixed_linear and fixed_root: edge parameter sets, then random ones ----------------------------------------
edges = [
    ("linear 8..1024 step 8", "fixed_linear", 8, 1024, 40, 8, None),
    ("linear min=max", "fixed_linear", 64, 64, 10, 8, None),
    ("linear step not dividing max", "fixed_linear", 80, 2000, 37, 64, None),  # max never a multiple: sticks late
    ("linear step 1", "fixed_linear", 1, 17, 5, 1, None),
    ("linear total 1", "fixed_linear", 3, 50, 1, 4, None),
    ("linear min below step", "fixed_linear", 5, 100, 30, 8, None),  # rounds to 0 early
    ("linear huge step", "fixed_linear", 16, 100, 10, 1000, None),
    ("root 2", "fixed_root", 8, 1024, 50, 8, 2),
    ("root 3 odd step", "fixed_root", 13, 517, 23, 7, 3),
    ("root 1 = linear", "fixed_root", 8, 1024, 40, 8, 1),
    ("root 7 total 3", "fixed_root", 2, 9, 3, 2, 7),
    # (t/T)^(1/r) at perfect powers lands a hair off the integer in double: the floor shows which rounding is used
    ("root 3 at cubes", "fixed_root", 1, 1001, 1000, 1, 3),
    ("root 2 at squares", "fixed_root", 1, 10001, 10000, 1, 2),
    ("root 5 at fifth powers", "fixed_root", 3, 3003, 3125, 1, 5),
]
for name, typ, mn, mx, total, step, root in edges:
    sc = {"total_curriculum_step": total, "difficulty_step": step}
    if root is not None:
        sc["root_degree"] = root
    cl = {"min_difficulty": mn, "max_difficulty": mx, "schedule_type": typ, "schedule_config": sc}
    schedule_case(name, cl, [1, 3 * total + 40])
for i in range(60):
    typ = rng.choice(["fixed_linear", "fixed_root"])
    mn = rng.randint(1, 300)
    mx = mn + rng.choice([0, rng.randint(1, 40), rng.randint(1, 4000)])
    total = rng.choice([1, 2, 3, rng.randint(1, 50), rng.randint(50, 700)])
    step = rng.choice([1, 2, 8, 16, 64, rng.randint(1, 100)])
    sc = {"total_curriculum_step": total, "difficulty_step": step}
    if typ == "fixed_root":
        sc["root_degree"] = rng.randint(1, 6)
    cl = {"min_difficulty": mn, "max_difficulty": mx, "schedule_type": typ, "schedule_config": sc}
    schedule_case(f"random {typ} #{i} {cl}", cl, [1, min(3 * total + 50, 2500)])
# lengths past int64 before the rounding (Python's integers have no limit)
for step in (8, 9_000_000_000_000_000_000):
    cl = {"min_difficulty": 1, "max_difficulty": 2_000_000_000, "schedule_type": "fixed_linear",
          "schedule_config": {"total_curriculum_step": 1, "difficulty_step": step}}
    schedule_case(f"linear beyond int64 (step {step})", cl, [1, 3])
    schedule_case(f"linear beyond int64 late (step {step})", cl, [9_000_000_000, 9_000_000_002])
# far past the end and steps where t/total is not exact in binary
cl = {"min_difficulty": 8, "max_difficulty": 4096, "schedule_type": "fixed_root",
      "schedule_config": {"total_curriculum_step": 300000, "difficulty_step": 8, "root_degree": 2}}
schedule_case("root 2 late steps", cl, [299000, 301000])
schedule_case("root 2 first steps", cl, [1, 3000])

# ---- 2. fixed_discrete: monotone, non-monotone (sticks at max only once reached), unsorted max_step -------------
discrete = [
    ("discrete doc example", [1, 2, 3], [5, 10], 1, 3),
    ("discrete seqlen", [64, 128, 256, 512], [10, 20, 30], 64, 512),
    ("discrete non-monotone", [16, 64, 8, 32], [3, 6, 9], 16, 64),  # reaches max 64 at t=4, then stays
    ("discrete never max", [16, 32, 8], [2, 5], 8, 64),
    ("discrete unsorted max_step", [10, 20, 30, 40], [9, 4, 12], 10, 40),
    ("discrete one step", [7, 9], [0], 7, 9),
]
for name, diff, ms, mn, mx in discrete:
    cl = {"min_difficulty": mn, "max_difficulty": mx, "schedule_type": "fixed_discrete",
          "schedule_config": {"difficulty": diff, "max_step": ms}}
    schedule_case(name, cl, [1, max(ms) + 20])
for i in range(25):
    n = rng.randint(1, 8)
    ms = sorted(rng.sample(range(1, 200), n)) if rng.random() < 0.8 else rng.sample(range(1, 200), n)
    diff = [rng.randint(1, 600) for _ in range(n + 1)]
    mn = rng.randint(1, 100)
    mx = rng.choice([max(diff), rng.randint(mn, 700)])
    cl = {"min_difficulty": mn, "max_difficulty": mx, "schedule_type": "fixed_discrete",
          "schedule_config": {"difficulty": diff, "max_step": ms}}
    schedule_case(f"random discrete #{i} {cl}", cl, [1, max(ms) + 30])

# ---- 3. the block's errors: DeepSpeed's asserts, in its order, with its texts --------------------------------------
base = {"enabled": True, "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 64,
        "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 10, "difficulty_step": 8}}


def without(d, *path):
    d = json.loads(json.dumps(d))
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    del cur[path[-1]]
    return d


def with_(d, path, v):
    d = json.loads(json.dumps(d))
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = v
    return d


disc = with_(with_(base, ["schedule_type"], "fixed_discrete"), ["schedule_config"],
             {"difficulty": [8, 64], "max_step": [5]})
root = with_(with_(base, ["schedule_type"], "fixed_root"), ["schedule_config", "root_degree"], 2)
errors = [
    ("missing min_difficulty", without(base, "min_difficulty"),
     "curriculum_learning.min_difficulty is missing: Curriculum learning requires the config 'min_difficulty'"),
    ("missing max_difficulty", without(base, "max_difficulty"),
     "curriculum_learning.max_difficulty is missing: Curriculum learning requires the config 'max_difficulty'"),
    ("missing schedule_type", without(base, "schedule_type"),
     "curriculum_learning.schedule_type is missing: Curriculum learning requires the config 'schedule_type'"),
    ("missing total_curriculum_step", without(base, "schedule_config", "total_curriculum_step"),
     "Curriculum learning with fixed_linear schedule requires the schedule_config 'total_curriculum_step'"),
    ("missing difficulty_step", without(base, "schedule_config", "difficulty_step"),
     "Curriculum learning with fixed_linear schedule requires the schedule_config 'difficulty_step'"),
    ("missing schedule_config", without(base, "schedule_config"),
     "Curriculum learning with fixed_linear schedule requires the schedule_config 'total_curriculum_step'"),
    ("fixed_root missing root_degree", without(root, "schedule_config", "root_degree"),
     "Curriculum learning with fixed_root schedule requires the schedule_config 'root_degree'"),
    ("discrete missing difficulty", without(disc, "schedule_config", "difficulty"),
     "Curriculum learning with fixed_discrete schedule requires the schedule_config 'difficulty'"),
    ("discrete missing max_step", without(disc, "schedule_config", "max_step"),
     "Curriculum learning with fixed_discrete schedule requires the schedule_config 'max_step'"),
    ("discrete empty max_step", with_(disc, ["schedule_config", "max_step"], []),
     "curriculum_learning.schedule_config.max_step is empty"),
    ("discrete length mismatch", with_(disc, ["schedule_config", "difficulty"], [8, 16, 64]),
     "curriculum_learning.schedule_config.difficulty has 3 entries and max_step 1: difficulty needs one more"),
    ("discrete non-integer", with_(disc, ["schedule_config", "difficulty"], [8, 16.5]),
     "curriculum_learning.schedule_config.difficulty[1] must be an integer, got 16.5"),
    ("custom schedule", with_(base, ["schedule_type"], "custom"),
     'curriculum_learning.schedule_type "custom" is not supported: DeepSpeed takes its schedule from a Python function'),
    ("curriculum_type voc", with_(base, ["curriculum_type"], "voc"),
     'curriculum_learning.curriculum_type must be one of seqlen, got "voc"'),
    ("missing curriculum_type", without(base, "curriculum_type"),
     "curriculum_learning.curriculum_type is missing: give \"seqlen\""),
    ("difficulty_step 0", with_(base, ["schedule_config", "difficulty_step"], 0),
     "curriculum_learning.schedule_config.difficulty_step must be >= 1, got 0"),
    ("unknown key", with_(base, ["schedule_config", "total_curriculum_steps"], 5),
     'unknown key "curriculum_learning.schedule_config.total_curriculum_steps" (did you mean '
     '"curriculum_learning.schedule_config.total_curriculum_step"?)'),
]
for name, cl, msg in errors:
    path = os.path.join(tmp, "e.json")
    with open(path, "w") as f:
        json.dump({"train_batch_size": 8, "curriculum_learning": cl}, f)
    rc, out, err = run(path, "1", "3")
    check(f"refused: {name}", rc != 0 and msg in err and path in err, f"rc={rc}, stderr={err.strip()[-300:]}")
# disabled: DeepSpeed builds no scheduler, so nothing but the types is checked
rc, out, err = run(write(dict(with_(base, ["schedule_type"], "custom"), enabled=False)), "1", "3")
check("disabled block with a custom schedule accepted", rc == 0 and out.strip() == "disabled", err[-200:])

# ---- 4. the start-up checks against the model flags ---------------------------------------------------------------
def start(cl, seq, tp, sp, last):
    rc, out, err = run("--check", write(dict(cl, enabled=True, curriculum_type="seqlen")), str(seq), str(tp), str(sp),
                       str(last))
    return out.strip() if rc == 0 else "tool failed: " + err.strip()[-200:]


lin = {"min_difficulty": 8, "max_difficulty": 64, "schedule_type": "fixed_linear",
       "schedule_config": {"total_curriculum_step": 10, "difficulty_step": 8}}
checks = [
    ("fits", lin, 64, 1, 0, 100, "ok"),
    ("max above --seq-length", lin, 32, 1, 0, 100, "refused: max_difficulty 64 is larger than --seq-length 32"),
    ("min 0", dict(lin, min_difficulty=0), 64, 1, 0, 100, "refused: min_difficulty 0 must be at least 1"),
    ("min above max", dict(lin, min_difficulty=65), 128, 1, 0, 100,
     "refused: min_difficulty 65 is larger than max_difficulty 64"),
    ("min 5 step 8 reaches 8 at once", dict(lin, min_difficulty=5), 64, 1, 0, 100, "ok"),  # 10.9 -> 8
    ("rounds to 0", dict(lin, min_difficulty=5, schedule_config={"total_curriculum_step": 100, "difficulty_step": 8}),
     64, 1, 0, 100, "refused: the fixed_linear schedule gives a sequence length of 0 at iteration 1"),
    ("sp: step 8 over tp 2", lin, 64, 2, 1, 100, "ok"),
    ("sp: step 3 over tp 2", dict(lin, schedule_config={"total_curriculum_step": 10, "difficulty_step": 3}), 64, 2, 1,
     100, "refused: the fixed_linear schedule gives a sequence length of 39 at iteration 6, which --sequence-parallel "
     "cannot split over 2 tensor-parallel ranks"),
    ("sp: max 60 over tp 8", dict(lin, max_difficulty=60), 64, 8, 1, 100,
     "refused: the fixed_linear schedule gives a sequence length of 60 at iteration 11"),  # 65 -> 64 -> max 60
    ("sp: max 60 over tp 8, run ends before", dict(lin, max_difficulty=60), 64, 8, 1, 10, "ok"),
    ("tp without sp", dict(lin, schedule_config={"total_curriculum_step": 10, "difficulty_step": 3}), 64, 2, 0, 100,
     "ok"),
    ("discrete above --seq-length", {"min_difficulty": 8, "max_difficulty": 64, "schedule_type": "fixed_discrete",
                                     "schedule_config": {"difficulty": [8, 128, 64], "max_step": [3, 6]}}, 64, 1, 0,
     100, "refused: the fixed_discrete schedule gives a sequence length of 128 at iteration 4, more than --seq-length"),
    ("discrete odd over sp", {"min_difficulty": 8, "max_difficulty": 64, "schedule_type": "fixed_discrete",
                              "schedule_config": {"difficulty": [8, 12, 30, 64], "max_step": [3, 6, 9]}}, 64, 4, 1,
     100, "refused: the fixed_discrete schedule gives a sequence length of 30 at iteration 7"),
    ("discrete: the value after the last max_step", {"min_difficulty": 8, "max_difficulty": 64,
                                                      "schedule_type": "fixed_discrete",
                                                      "schedule_config": {"difficulty": [8, 30, 66], "max_step": [3, 4]}},
     64, 1, 0, 100, "refused: the fixed_discrete schedule gives a sequence length of 66 at iteration 5"),
    ("discrete: an entry only a resumed run reaches", {"min_difficulty": 8, "max_difficulty": 64,
                                                        "schedule_type": "fixed_discrete",
                                                        "schedule_config": {"difficulty": [8, 64, 128], "max_step": [2, 4]}},
     64, 1, 0, 100, "refused: fixed_discrete difficulty[2] = 128 (a resumed run can start there) is more than "
     "--seq-length 64"),
    ("discrete: an entry of 0", {"min_difficulty": 8, "max_difficulty": 64, "schedule_type": "fixed_discrete",
                                 "schedule_config": {"difficulty": [8, 64, 0], "max_step": [2, 4]}},
     64, 1, 0, 100, "refused: fixed_discrete difficulty[2] = 0 (a resumed run can start there) is not a sequence length"),
    ("discrete fits", {"min_difficulty": 8, "max_difficulty": 64, "schedule_type": "fixed_discrete",
                       "schedule_config": {"difficulty": [8, 12, 32, 64], "max_step": [3, 6, 9]}}, 64, 4, 1, 100,
     "ok"),
]
for name, cl, seq, tp, sp, last, want in checks:
    got = start(cl, seq, tp, sp, last)
    check(f"start-up check: {name}", got.startswith(want), f"want {want!r}, got {got!r}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
