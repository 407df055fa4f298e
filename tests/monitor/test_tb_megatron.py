#!/usr/bin/env python3
"""Megatron-DeepSpeed's TensorBoard flags in pretrain_gpt (train/tb_log.c) and the progress lines (train/progress.c).

A tiny mock-data GPT trains for a few iterations; its event file is read back with tfevents.py (an independent
TFRecord + protobuf reader) and compared with what Megatron-DeepSpeed's training_log() and
evaluate_and_print_results() would write for the same run:
  gpt       - every flag on: the exact tag set, each tag's steps (iteration, consumed samples, consumed tokens), the
              values against the printed log lines (lm loss, learning rate, grad norm, params norm, num zeros,
              iteration time, validation loss and ppl, the printed timers), the optimizer-state norms against the
              Adam state of the --save checkpoint read with h5py, memory against the printed memory plan
  intervals - --tensorboard-log-interval 2 with --log-interval 2, fp16: writes at even iterations only, the interval's
              mean of the written losses equals the printed loss, loss-scale; the --no-log-* flags and the default
              flags leave their tags out
  errors    - refusals naming the flag (wandb, bad values, sgd with optimizer states, a file as --tensorboard-dir)
  eta       - --log-eta's suffix against Python's datetime.timedelta, and the start-up progress lines
  mpi       - two data-parallel ranks: one event file, written by the last rank, world-size 2
  bert      - pretrain_bert: lm loss and sop loss tags, training and validation
usage: test_tb_megatron.py <area> <pretrain_gpt> <progress_driver> [mpirun]
       test_tb_megatron.py bert <pretrain_bert> <progress_driver> <preprocess_data>
"""
import datetime
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

from tfevents import parse_event, read_records, scalars

AREA, BIN, PROGRESS = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
MPIRUN = sys.argv[4] if len(sys.argv) > 4 else ""
failures = 0


def check(cond, msg):
    global failures
    print(("PASS " if cond else "FAIL ") + msg)
    if not cond:
        failures += 1


TINY = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length", "16",
        "--max-position-embeddings", "32", "--micro-batch-size", "2", "--global-batch-size", "4", "--lr", "1e-3",
        "--mock-data", "--vocab-size", "100", "--eval-iters", "1"]
ALL_FLAGS = ["--log-timers-to-tensorboard", "--log-batch-size-to-tensorboard", "--log-validation-ppl-to-tensorboard",
             "--log-optimizer-states-to-tensorboard", "--log-memory-to-tensorboard",
             "--log-world-size-to-tensorboard", "--log-params-norm", "--log-num-zeros-in-grad",
             "--timing-log-level", "2"]


def run(args, cwd, expect_rc=0, launcher=()):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run([*launcher, BIN, *args], cwd=cwd, capture_output=True, text=True, timeout=240, env=env)
    out = p.stdout + p.stderr
    if p.returncode != expect_rc:
        print(out[-3000:])
    check(p.returncode == expect_rc, "pretrain_gpt exit status %d (expected %d)" % (p.returncode, expect_rc))
    return out


def log_lines(out):
    """{iteration: {field: text}} of the printed training log lines."""
    lines = {}
    for line in out.splitlines():
        if not line.startswith(" iteration "):
            continue
        it = int(re.match(r" iteration +(\d+)/", line).group(1))
        fields = {}
        for part in line.split("|")[1:]:
            if ":" in part:
                k, v = part.split(":", 1)
                fields[k.strip()] = v.strip()
        lines[it] = fields
    return lines


def validation_lines(out):
    """[(prefix, loss, ppl)] of the printed validation lines, in order."""
    return [(m.group(1), float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r" validation loss at (.*?) \| lm loss value: (\S+) \| lm loss PPL: (\S+) \|", out)]


def event_file(tb):
    files = glob.glob(os.path.join(tb, "events.out.tfevents.*"))
    check(len(files) == 1, "one event file in %s (found %d)" % (tb, len(files)))
    return files[0] if files else None


def by_tag(events):
    d = {}
    for tag, step, value in events:
        d.setdefault(tag, []).append((step, value))
    return d


def f32(x):
    import struct
    return struct.unpack("<f", struct.pack("<f", x))[0]


def close(a, b, rel, abs_=0.0):
    return abs(a - b) <= rel * abs(b) + abs_


TRAIN3 = ["learning-rate/learning-rate", "batch-size/batch-size", "lm-loss-training/lm loss", "world-size/world-size",
          "grad-norm/grad-norm", "num-zeros/num-zeros", "params-norm/params-norm", "iteration-time/iteration-time"]
TIMERS = ["forward-backward-time", "forward-compute-time", "backward-compute-time", "batch-generator-time",
          "grads-all-reduce-time", "optimizer-time"]
OPT = ["variance_l2", "variance_sqrt_l2", "momentum_l2", "weight_l2", "variance_l1", "variance_sqrt_l1", "momentum_l1",
       "weight_l1", "variance_abs_max", "variance_sqrt_abs_max", "momentum_abs_max", "weight_abs_max"]
STEPS4 = ["steps-vs-samples/y=steps,x=samples", "steps-vs-samples/y=samples,x=steps",
          "steps-vs-tokens/y=steps,x=tokens", "steps-vs-tokens/y=tokens,x=steps"]


def expand3(tags):
    return [t + s for t in tags for s in ("", " vs samples", " vs tokens")]


def area_gpt(tmp):
    iters = 6
    out = run(TINY + ["--train-iters", str(iters), "--log-interval", "1", "--eval-interval", "3",
                      "--tensorboard-dir", "tb/run1", "--save", "ckpt", *ALL_FLAGS], tmp)
    check(out.count("> setting tensorboard ...") == 1, "'> setting tensorboard ...' printed once")
    path = event_file(os.path.join(tmp, "tb/run1"))
    if not path:
        return
    name = os.path.basename(path)
    check(re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^.]+(\..+)?\.\d+\.0", name) is not None,
          "SummaryWriter's file name: " + name)
    first = parse_event(read_records(path)[0])
    check(first.get("file_version") == "brain.Event:2", "first record is file_version brain.Event:2")
    ev = by_tag(scalars(path))
    val = ["lm-loss-validation/lm loss validation", "lm-loss-validation/lm loss validation ppl",
           "lm-loss-validation/lm loss test", "lm-loss-validation/lm loss test ppl"]
    want = set(STEPS4 + expand3(TRAIN3) + TIMERS + expand3(val) + ["mem-reserved-bytes", "mem-allocated-bytes"] +
               ["optimizer/%s%s" % (o, s) for o in OPT for s in ("", " vs tokens")])
    check(set(ev) == want, "the tag set is Megatron's for these flags (missing %s, extra %s)"
          % (sorted(want - set(ev)), sorted(set(ev) - want)))
    logs = log_lines(out)
    check(sorted(logs) == list(range(1, iters + 1)), "a log line per iteration")
    samples = {it: int(f["consumed samples"]) for it, f in logs.items()}
    tokens = {it: int(f["consumed tokens"]) for it, f in logs.items()}
    its = list(range(1, iters + 1))
    steps_ok = True
    for tag in expand3(TRAIN3):
        base = tag.replace(" vs samples", "").replace(" vs tokens", "")
        want_steps = [samples[i] for i in its] if tag.endswith("samples") else \
            [tokens[i] for i in its] if tag.endswith("tokens") else its
        got = [s for s, _ in ev.get(tag, [])]
        if got != want_steps:
            steps_ok = False
            print("  %s: steps %s, expected %s" % (tag, got, want_steps))
        vals = [v for _, v in ev.get(tag, [])]
        if vals != [v for _, v in ev.get(base, [])]:
            steps_ok = False
            print("  %s: values differ from %s" % (tag, base))
    check(steps_ok, "training tags at every iteration, consumed samples and consumed tokens, same values")
    check([(s, v) for s, v in ev["steps-vs-samples/y=samples,x=steps"]] == [(i, samples[i]) for i in its] and
          [(s, v) for s, v in ev["steps-vs-tokens/y=steps,x=tokens"]] == [(tokens[i], i) for i in its],
          "steps-vs-samples / steps-vs-tokens")

    def series(tag):
        return [v for _, v in ev[tag]]
    field = lambda k: [float(logs[i][k]) for i in its]
    check(all(close(a, b, 6e-6) for a, b in zip(series("lm-loss-training/lm loss"), field("lm loss"))),
          "lm loss = the log line's (%.6E)")
    check(all(close(a, b, 6e-4, 1e-12) for a, b in zip(series("learning-rate/learning-rate"), field("learning rate"))),
          "learning-rate = the log line's (%.3E)")
    check(all(abs(a - b) <= 6e-4 for a, b in zip(series("grad-norm/grad-norm"), field("grad norm"))),
          "grad-norm = the log line's (%.3f)")
    check(all(abs(a - b) <= 6e-4 for a, b in zip(series("params-norm/params-norm"), field("params norm"))),
          "params-norm = the log line's 'params norm:' (%.3f)")
    check(all(abs(a - b) <= 0.05 for a, b in zip(series("num-zeros/num-zeros"), field("num zeros"))),
          "num-zeros = the log line's 'num zeros:' (%.1f)")
    # the 16 unused positions (seq 16 of 32) x hidden 32 of the position embeddings' gradient, plus any of the 2 x 32
    # key rows of the fused QKV biases whose gradient rounds to exactly 0: it is zero in exact arithmetic (softmax
    # ignores a bias added to every score of a row), so its float32 value is rounding noise, exactly 0 now and then
    # (one element at iteration 4 with OpenBLAS's SkylakeX kernels)
    check(all(16.0 * 32 <= v <= 16.0 * 32 + 2 * 32 for v in series("num-zeros/num-zeros")),
          "num-zeros = the 16 unused positions (seq 16 of 32) x hidden 32 of the position embeddings' gradient, plus "
          "at most the 64 key-bias rows (zero up to rounding): %s" % series("num-zeros/num-zeros"))
    check(series("batch-size/batch-size") == [4.0] * iters and series("world-size/world-size") == [1.0] * iters,
          "batch-size 4, world-size 1")
    check(all(abs(a * 1e3 - b) <= 0.051 + 1e-6 * b
              for a, b in zip(series("iteration-time/iteration-time"), field("elapsed time per iteration (ms)"))),
          "iteration-time (s) = the log line's elapsed time per iteration (ms)")
    # validation: in-loop at 3 and 6, then the end of training (validation and test) at 6
    vals = validation_lines(out)
    check([p for p, _, _ in vals] == ["iteration 3", "iteration 6", "the end of training for val data",
                                       "the end of training for test data"], "four printed validations")
    v = ev["lm-loss-validation/lm loss validation"]
    check([s for s, _ in v] == [3, 6, 6] and all(close(a, f32(b), 6e-6) for (_, a), (_, b, _) in zip(v, vals[:3])),
          "lm loss validation at iterations 3, 6, 6 = the printed values")
    t = ev["lm-loss-validation/lm loss test"]
    check([s for s, _ in t] == [6] and close(t[0][1], vals[3][1], 6e-6), "lm loss test at 6 = the printed value")
    ppl = ev["lm-loss-validation/lm loss validation ppl"] + ev["lm-loss-validation/lm loss test ppl"]
    check(all(close(p, f32(math.exp(min(20, x))), 2e-7) for (_, p), x in
              zip(ppl, [x for _, x in v] + [x for _, x in t])) and
          all(close(p, printed, 6e-6) for (_, p), printed in zip(ppl, [q for _, _, q in vals[:3]] + [vals[3][2]])),
          "ppl = exp(min(20, loss)) = the printed PPL")
    check(ev["lm-loss-validation/lm loss validation vs samples"][0][0] == samples[3] and
          ev["lm-loss-validation/lm loss test vs tokens"][0][0] == tokens[6], "validation vs samples / vs tokens steps")
    # timers: level 2, one per iteration; forward-backward = forward-compute + backward-compute; the printed block
    tm = {k: series(k) for k in TIMERS}
    check(all([s for s, _ in ev[k]] == its for k in TIMERS) and all(x > 0 for k in TIMERS for x in tm[k]),
          "the six timers at every iteration, positive")
    check(all(close(fb, f + b, 2e-6, 1e-9) for fb, f, b in
              zip(tm["forward-backward-time"], tm["forward-compute-time"], tm["backward-compute-time"])),
          "forward-backward-time = forward-compute-time + backward-compute-time")
    check(all(fb < it for fb, it in zip(tm["forward-backward-time"], series("iteration-time/iteration-time"))),
          "forward-backward-time < iteration-time")
    blocks = re.findall(r"\(min, max\) time across ranks \(ms\):\n((?:    .*\n)+)", out)
    printed = [dict((m.group(1), float(m.group(3))) for m in re.finditer(r"    (\S+) \.*: \((\S+), (\S+)\)", b))
               for b in blocks if "forward-backward" in b]  # not the setup or save-checkpoint blocks
    if len(printed) != iters:
        print("  %d printed timer blocks" % len(printed), blocks)
    check(len(printed) == iters and all(abs(printed[i][k[:-5]] - tm[k][i] * 1e3) <= 0.006 + 1e-6 * tm[k][i] * 1e3
                                        for i in range(iters) for k in TIMERS),
          "the printed timers block (ms per iteration, log interval 1) = the timer tags")
    check("model-and-optimizer-setup" in blocks[0] and "train/valid/test-data-iterators-setup" in blocks[0],
          "the setup timers after 'done with setup ...'")
    # optimizer states at iteration 6 against the Adam state of the checkpoint saved at the end (h5py, float64)
    try:
        import h5py
        import numpy as np
    except ImportError:
        print("SKIP part: no h5py/numpy for the optimizer-state oracle")
        return
    files = glob.glob(os.path.join(tmp, "ckpt", "global_step%d" % iters, "*optim_states.h5"))
    check(len(files) == 1, "the checkpoint's optimizer state file")
    with h5py.File(files[0], "r") as h:
        m = np.asarray(h["state/exp_avg"], dtype=np.float64)
        var = np.asarray(h["state/exp_avg_sq"], dtype=np.float64)
        w = np.asarray(h["state/fp32"], dtype=np.float64)
    sq = np.sqrt(np.asarray(var, dtype=np.float32)).astype(np.float64)
    want = {"variance_l2": np.sqrt((var ** 2).sum()), "variance_sqrt_l2": np.sqrt((sq ** 2).sum()),
            "momentum_l2": np.sqrt((m ** 2).sum()), "weight_l2": np.sqrt((w ** 2).sum()),
            "variance_l1": np.abs(var).sum(), "variance_sqrt_l1": sq.sum(), "momentum_l1": np.abs(m).sum(),
            "weight_l1": np.abs(w).sum(), "variance_abs_max": np.abs(var).max(), "variance_sqrt_abs_max": sq.max(),
            "momentum_abs_max": np.abs(m).max(), "weight_abs_max": np.abs(w).max()}
    bad = []
    for k in OPT:
        got = ev["optimizer/" + k]
        vt = ev["optimizer/%s vs tokens" % k]
        if [s for s, _ in got] != its or [s for s, _ in vt] != [tokens[i] for i in its] or \
                not close(got[-1][1], f32(want[k]), 2e-6, 1e-30):
            bad.append("%s %r vs %r" % (k, got[-1], want[k]))
    check(not bad, "optimizer/* at every iteration (and vs tokens) = the saved Adam state's norms %s" % bad)
    check(abs(series("params-norm/params-norm")[-1] - want["weight_l2"]) <= 2e-6 * want["weight_l2"],
          "params-norm = the saved weights' L2 norm")
    # memory: the plan the trainer printed, and a resident set between the plan and 8 GiB
    plan = float(re.search(r"memory plan \(MiB\):.*\| total ([0-9.]+)", out).group(1))
    alloc, rss = series("mem-allocated-bytes"), series("mem-reserved-bytes")
    check(all(abs(a / 2 ** 20 - plan) <= 0.051 for a in alloc), "mem-allocated-bytes = the printed plan total")
    check(all(alloc[0] < r < 8 * 2 ** 30 for r in rss), "mem-reserved-bytes (RSS) above the plan, below 8 GiB")


def area_intervals(tmp):
    out = run(TINY + ["--train-iters", "6", "--log-interval", "2", "--tensorboard-log-interval", "2",
                      "--eval-interval", "100", "--fp16", "--initial-loss-scale", "128", "--no-log-learnig-rate-to-tensorboard",
                      "--tensorboard-dir", "tb", "--tensorboard-queue-size", "3"], tmp)
    path = event_file(os.path.join(tmp, "tb"))
    if not path:
        return
    ev = by_tag(scalars(path))
    want = set(STEPS4 + expand3(["lm-loss-training/lm loss", "grad-norm/grad-norm", "loss-scale/loss-scale"]) +
               expand3(["lm-loss-validation/lm loss validation", "lm-loss-validation/lm loss test"]))
    check(set(ev) == want, "default flags with fp16 and --no-log-learnig-rate-to-tensorboard: the tag set "
          "(missing %s, extra %s)" % (sorted(want - set(ev)), sorted(set(ev) - want)))
    check([s for s, _ in ev["lm-loss-training/lm loss"]] == [2, 4, 6], "written at iterations 2, 4, 6 only")
    logs = log_lines(out)
    check(all(close(v, float(logs[s]["loss scale"]), 1e-9) for s, v in ev["loss-scale/loss-scale"]),
          "loss-scale = the log line's")
    # the written loss is the iteration's; the printed one the mean over the interval: iteration 2's mean needs 1
    out1 = run(TINY + ["--train-iters", "6", "--log-interval", "1", "--eval-interval", "100", "--fp16",
                       "--initial-loss-scale", "128"], tmp)
    each = log_lines(out1)
    ok = all(close(v, float(each[s]["lm loss"]), 6e-6) for s, v in ev["lm-loss-training/lm loss"])
    ok = ok and all(close((float(each[s - 1]["lm loss"]) + float(each[s]["lm loss"])) / 2, float(logs[s]["lm loss"]),
                          2e-6) for s in (2, 4, 6))
    check(ok, "the written lm loss is the iteration's (log interval 1 run), the printed one the interval's mean")
    out = run(TINY + ["--train-iters", "2", "--log-interval", "1", "--eval-interval", "100", "--fp16",
                      "--no-log-loss-scale-to-tensorboard", "--tensorboard-dir", "tb2"], tmp)
    ev = by_tag(scalars(event_file(os.path.join(tmp, "tb2"))))
    check("learning-rate/learning-rate" in ev and not any(t.startswith("loss-scale") for t in ev),
          "--no-log-loss-scale-to-tensorboard leaves loss-scale out, learning-rate in")
    check(not any(t.endswith("-time") for t in ev) and "(min, max) time across ranks" in out and
          "forward-backward" not in out, "timing level 0: no timer tags, no timers block after the log lines")


def area_errors(tmp):
    cases = [
        (["--wandb-project", "p"], "--wandb-project p: Weights & Biases logging is not supported"),
        (["--wandb-exp-name", "x"], "--wandb-exp-name x: Weights & Biases"),
        (["--timing-log-level", "3"], "--timing-log-level 3: invalid choice (choose from 0, 1, 2)"),
        (["--timing-log-option", "avg"], "--timing-log-option avg: invalid choice (choose from max, minmax, all)"),
        (["--tensorboard-queue-size", "0"], "--tensorboard-queue-size 0: must be > 0"),
        (["--tensorboard-log-interval", "0"], "--tensorboard-log-interval 0: must be > 0"),
        (["--tensorboard-dir", ""], "--tensorboard-dir: an empty path"),
        (["--log-optimizer-states-to-tensorboard", "--optimizer", "sgd"],
         "--log-optimizer-states-to-tensorboard writes norms of Adam's exp_avg and exp_avg_sq"),
        (["--profile", "pt"], "--profile pt writes its trace into --tensorboard-dir"),
    ]
    for extra, msg in cases:
        out = run(TINY + ["--train-iters", "2"] + extra, tmp, expect_rc=1)
        check(msg in out and " iteration " not in out, "refused before training: %s" % msg)
    open(os.path.join(tmp, "afile"), "w").write("x")
    out = run(TINY + ["--train-iters", "2", "--tensorboard-dir", "afile/tb"], tmp, expect_rc=1)
    check("afile" in out and " iteration " not in out and open(os.path.join(tmp, "afile")).read() == "x",
          "a file in the --tensorboard-dir path is refused naming it, before training, and left as it was")
    out = run(TINY + ["--train-iters", "1", "--log-interval", "1", "--eval-iters", "0", "--wandb-project", "", "--wandb-save-dir", "",
                      "--no-barrier-with-level-1-timing", "--timing-log-option", "all", "--timing-log-level", "1"], tmp)
    check(re.search(r"times across ranks \(ms\):\n  forward-backward:\n     rank  0: [0-9.]+\n", out) is not None,
          "empty wandb flags accepted (Megatron's off); --timing-log-option all prints each rank's times")
    check(re.search(r"  tensorboard_dir \.+ None\n", out) and re.search(r"  timing_log_option \.+ all\n", out)
          and re.search(r"  log_learning_rate_to_tensorboard \.+ True\n", out), "the argument dump lists the flags")


def area_eta(tmp):
    cases = [(0.4, 0.0, 0, 10), (12.0, 10.0, 10, 90), (3723.9, 3600.0, 100, 150), (90000, 80000, 8, 2),
             (5.0, 2.0, 4, 0), (200000.0, 100000.0, 1, 1)]
    args = [str(x) for c in cases for x in c]
    out = subprocess.run([PROGRESS, *args], capture_output=True, text=True, timeout=60).stdout.splitlines()
    want = []
    for elapsed, secs, done, left in cases:
        rem = secs / done * left if done > 0 else 0.0
        want.append(" elapsed: %s | ETA: %s |" % (datetime.timedelta(seconds=int(elapsed)),
                                                  datetime.timedelta(seconds=int(rem))))
    check(out == want, "zt_progress_eta = str(timedelta) of elapsed and of remaining x mean iteration time\n  %s\n  %s"
          % (out, want))
    out = run(TINY + ["--train-iters", "4", "--log-interval", "2", "--eval-interval", "100", "--log-eta"], tmp)
    lines = [l for l in out.splitlines() if l.startswith(" iteration ")]
    check(len(lines) == 2 and all(re.search(r"\| TFLOPs: [0-9.]+ \| elapsed: \d+:\d\d:\d\d \| ETA: \d+:\d\d:\d\d \|$", l)
                                  for l in lines), "--log-eta appends ' elapsed: H:MM:SS | ETA: H:MM:SS |'")
    check(lines and lines[-1].endswith("ETA: 0:00:00 |"), "ETA 0:00:00 at the last iteration")
    out = run(TINY + ["--train-iters", "2", "--log-interval", "1", "--eval-interval", "100"], tmp)
    lines = [l for l in out.splitlines() if l.startswith(" iteration ")]
    check(lines and all(l.endswith(" TFLOPs: %s |" % l.rsplit("TFLOPs: ", 1)[1][:-2]) and "ETA" not in l
                        for l in lines), "without --log-eta the line ends with Megatron's TFLOPs field")
    order = ["time to initialize megatron (seconds): ", "[after megatron is initialized] datetime: ",
             "[after dataloaders are built] datetime: ", "building GPT model ...",
             "[after model, optimizer, and learning rate scheduler are built] datetime: ", "done with setup ...",
             "training ...", "[before the start of training step] datetime: ", " iteration        1/",
             "[after training is done] datetime: "]
    pos = [out.find(s) for s in order]
    check(all(p >= 0 for p in pos) and pos == sorted(pos), "start-up progress lines in order: %s" % pos)
    check(re.search(r"\[before the start of training step\] datetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \n", out)
          is not None, "Megatron's datetime format")
    out = run(TINY + ["--train-iters", "2", "--skip-train"], tmp)
    check("skipping training (--skip-train is on) ..." in out and "training ...\n" not in out, "--skip-train line")


def area_bert(tmp):
    """pretrain_bert: every named loss of the model gets its tags (lm loss and sop loss), training and validation."""
    preprocess = MPIRUN  # the fourth argument of this area: preprocess_data
    here = os.path.dirname(os.path.abspath(__file__))
    fx = os.path.join(tmp, "fx")
    subprocess.run([sys.executable, os.path.join(here, "..", "bert", "make_fixture.py"), fx], check=True,
                   capture_output=True, timeout=120)
    subprocess.run([preprocess, "--input", fx + "/corpus.jsonl", "--output-prefix", fx + "/corpus", "--workers", "1",
                    "--vocab-file", fx + "/vocab.txt", "--tokenizer-type", "BertWordPieceLowerCase",
                    "--split-sentences"], check=True, capture_output=True, timeout=120)
    out = run(["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4", "--seq-length", "32",
               "--max-position-embeddings", "32", "--data-path", fx + "/corpus_text_sentence", "--vocab-file",
               fx + "/vocab.txt", "--split", "90,10,0", "--lr", "1e-3", "--train-iters", "4", "--log-interval", "1",
               "--eval-interval", "2", "--eval-iters", "1", "--global-batch-size", "8", "--micro-batch-size", "4",
               "--tensorboard-dir", "tb", "--log-validation-ppl-to-tensorboard"], tmp)
    path = event_file(os.path.join(tmp, "tb"))
    if not path:
        return
    ev = by_tag(scalars(path))
    logs = log_lines(out)
    for loss in ("lm loss", "sop loss"):
        tr = ev.get("lm-loss-training/" + loss, [])
        check([s for s, _ in tr] == [1, 2, 3, 4] and all(close(v, float(logs[s][loss]), 6e-6) for s, v in tr),
              "lm-loss-training/%s at every iteration = the log line's" % loss)
        printed = [float(x) for x in re.findall(r"%s value: (\S+) \|" % loss, out)]
        va = ev.get("lm-loss-validation/%s validation" % loss, [])
        check([s for s, _ in va] == [2, 4, 4] and len(printed) == 3 and
              all(close(v, p, 6e-6) for (_, v), p in zip(va, printed)),
              "lm-loss-validation/%s validation at 2, 4, 4 = the printed values" % loss)
        check(len(ev.get("lm-loss-validation/%s validation ppl vs tokens" % loss, [])) == 3, "%s ppl vs tokens" % loss)


def area_mpi(tmp):
    if not MPIRUN:
        print("SKIP: mpirun not found")
        sys.exit(77)
    launcher = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1",
                "--tag-output", "-np", "2"]
    tagged = run(TINY + ["--train-iters", "3", "--log-interval", "1", "--eval-interval", "100", "--tensorboard-dir",
                      "tb", "--log-world-size-to-tensorboard", "--log-num-zeros-in-grad", "--log-params-norm",
                      "--log-timers-to-tensorboard", "--timing-log-level", "1",
                      "--log-optimizer-states-to-tensorboard"], tmp, launcher=launcher)
    check(re.findall(r"\[\d+,(\d+)\]<stdout>:> setting tensorboard \.\.\.", tagged) == ["1"],
          "only the last rank (1 of 0, 1) sets up TensorBoard")
    out = re.sub(r"(?m)^\[\d+,\d+\]<std(?:out|err)>:", "", tagged)
    path = event_file(os.path.join(tmp, "tb"))
    if not path:
        return
    ev = by_tag(scalars(path))
    logs = log_lines(out)
    check([v for _, v in ev["world-size/world-size"]] == [2.0] * 3, "world-size 2")
    check(all(abs(v - float(logs[s]["params norm"])) <= 6e-4 for s, v in ev["params-norm/params-norm"]) and
          all(abs(v - float(logs[s]["num zeros"])) <= 0.05 for s, v in ev["num-zeros/num-zeros"]) and
          all(close(v, float(logs[s]["lm loss"]), 6e-6) for s, v in ev["lm-loss-training/lm loss"]),
          "params norm, num zeros, lm loss as printed")
    nz = [v for _, v in ev["num-zeros/num-zeros"]]
    check(len(nz) == 3 and all(16.0 * 32 <= v <= 16.0 * 32 + 2 * 32 for v in nz), "num-zeros counted once over the "
          "data-parallel replicas: the 512 unused position-embedding entries plus at most the 64 key-bias entries "
          "(zero up to rounding; an exact zero among them depends on the BLAS build), not twice that: %s" % nz)
    check("optimizer/weight_l2" in ev and abs(ev["optimizer/weight_l2"][-1][1] - ev["params-norm/params-norm"][-1][1])
          <= 2e-6 * ev["params-norm/params-norm"][-1][1], "optimizer/weight_l2 = params-norm (no ZeRO: each rank's "
          "full state, not summed over data parallel)")


def main():
    tmp = tempfile.mkdtemp(prefix="zt_tb_")
    try:
        {"gpt": area_gpt, "intervals": area_intervals, "errors": area_errors, "eta": area_eta,
         "mpi": area_mpi, "bert": area_bert}[AREA](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%s: %s" % (AREA, "all passed" if failures == 0 else "%d FAILED" % failures))
    sys.exit(1 if failures else 0)


main()
