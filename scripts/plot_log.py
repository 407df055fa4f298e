#!/usr/bin/env python3
"""plot_log.py: a training run as one PNG: each named loss (lm loss, sop loss, ...), the validation loss, the
learning rate and the throughput (tokens/s) against iterations.

Reads either a training log (what pretrain_gpt / pretrain_bert print: Megatron's ` iteration N/ M | ...` lines and
the ` validation loss at iteration N | ...` blocks; other lines are ignored, rank prefixes such as mpirun's
`[1,0]<stdout>:` too) or a csv_monitor directory (docs/monitors.md: one `<event>.csv` per metric, DeepSpeed's
`Train/Samples/*` events, whose steps are consumed samples).

  scripts/plot_log.py train.log                      -> train.png
  scripts/plot_log.py out/csv/DeepSpeedJobName -o run.png --global-batch-size 16 --seq-length 1024
  scripts/plot_log.py train.log --dump-csv series.csv --no-plot

Needs matplotlib for the PNG (Debian: `apt-get install python3-matplotlib`); --dump-csv alone does not.
"""
import argparse
import csv
import math
import os
import re
import sys

PROG = "plot_log.py"


def die(msg, code=2):
    print("error: %s: %s" % (PROG, msg), file=sys.stderr)
    sys.exit(code)


# ---- the training log ----------------------------------------------------------------------------------------------

ITER_RE = re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|")
VALID_RE = re.compile(r"\bvalidation loss at iteration (\d+)\s*\|")


def fields(line):
    """The `key: value |` pairs of a Megatron log line, in order."""
    out = []
    for part in line.split("|"):
        if ":" not in part:
            continue
        k, v = part.rsplit(":", 1)
        k, v = k.strip(), v.strip()
        if k and v:
            out.append((k, v))
    return out


def number(text, what, where):
    try:
        return float(text)
    except ValueError:
        die("%s: %s is not a number: %r" % (where, what, text))


def parse_log(path):
    """series: name -> {iteration: (value, text as printed)}; the log's own numbers, the last line of an iteration
    winning (a resumed run prints an iteration again)."""
    series = {}
    prev = None  # (iteration, consumed tokens) of the previous training line, for tokens/s
    n_lines = 0
    try:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        die("cannot read the log %s: %s" % (path, e.strerror))
    with f:
        for lineno, line in enumerate(f, 1):
            where = "%s:%d" % (path, lineno)
            m = ITER_RE.search(line)
            if m and "consumed samples" in line:
                it = int(m.group(1))
                kv = dict(fields(line[m.end():]))
                n_lines += 1
                for k, v in kv.items():
                    if k == "loss" or k.endswith(" loss"):  # lm loss, sop loss, nsp loss, ...
                        series.setdefault(k, {})[it] = (number(v, k, where), v)
                if "learning rate" in kv:
                    series.setdefault("learning rate", {})[it] = (number(kv["learning rate"], "learning rate", where),
                                                                  kv["learning rate"])
                if "elapsed time per iteration (ms)" in kv and "consumed tokens" in kv:
                    ms = number(kv["elapsed time per iteration (ms)"], "elapsed time per iteration (ms)", where)
                    tok = number(kv["consumed tokens"], "consumed tokens", where)
                    # tokens per iteration over this interval: the consumed tokens added since the previous line
                    # (since iteration 0 for the first line, or after a resume) per iteration
                    p_it, p_tok = prev if prev and prev[0] < it and prev[1] <= tok else (0, 0.0)
                    if it > p_it and ms > 0 and tok > p_tok:
                        tps = (tok - p_tok) / (it - p_it) / (ms / 1000.0)
                        series.setdefault("tokens per second", {})[it] = (tps, "%.6g" % tps)
                    prev = (it, tok)
                continue
            m = VALID_RE.search(line)
            if m:
                it = int(m.group(1))
                for k, v in fields(line[m.end():]):
                    if k.endswith(" value"):  # `lm loss value: 5.1E+00`; the PPL fields are left out
                        name = "validation " + k[:-len(" value")]
                        series.setdefault(name, {})[it] = (number(v, k, where), v)
    if n_lines == 0:
        die("%s has no training log line (` iteration N/ M | consumed samples: ...`): is it a pretrain_gpt log?" % path)
    return series


# ---- the csv_monitor directory -------------------------------------------------------------------------------------

def csv_dir(path):
    """The directory that holds the .csv files: PATH itself, or its only subdirectory that has some (output_path
    given instead of output_path/job_name)."""
    def csvs(d):
        return sorted(f for f in os.listdir(d) if f.endswith(".csv"))
    if csvs(path):
        return path
    subs = [os.path.join(path, d) for d in sorted(os.listdir(path)) if os.path.isdir(os.path.join(path, d))]
    subs = [d for d in subs if csvs(d)]
    if len(subs) == 1:
        return subs[0]
    if not subs:
        die("%s: no .csv file in it or in a subdirectory: is it a csv_monitor output_path/job_name?" % path)
    die("%s: several csv_monitor jobs in it (%s): name one" % (path, ", ".join(os.path.basename(d) for d in subs)))


def parse_csv_dir(path, gbs, seq):
    """series as parse_log's, from DeepSpeed's Train/Samples/* events. Their step is consumed samples: divided by
    --global-batch-size it is the iteration (a constant batch size; a batch-size ramp-up has no such mapping)."""
    d = csv_dir(path)
    raw = {}
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".csv"):
            continue
        rows = {}
        with open(os.path.join(d, fn), newline="", encoding="utf-8") as f:
            for lineno, row in enumerate(csv.reader(f), 1):
                if len(row) != 2:
                    die("%s:%d: expected `step,value`, got %d fields" % (os.path.join(d, fn), lineno, len(row)))
                if row[0] == "step":
                    continue  # a header; a second run appends another one
                where = "%s:%d" % (os.path.join(d, fn), lineno)
                step = number(row[0], "step", where)
                rows[int(step)] = (number(row[1], "value", where), row[1])
        raw[fn[:-4]] = rows
    x_of = (lambda s: s // gbs) if gbs else (lambda s: s)
    if gbs:
        for name, rows in raw.items():
            bad = [s for s in rows if s % gbs]
            if bad:
                die("%s.csv: step %d is not a multiple of --global-batch-size %d (a batch-size ramp-up?): plot it "
                    "without --global-batch-size (against samples)" % (os.path.join(d, name), bad[0], gbs))
    series = {}
    names = {"Train_Samples_train_loss": "train loss", "Train_Samples_lr": "learning rate",
             "Train_Samples_loss_scale": "loss scale"}
    for name, rows in raw.items():
        label = names.get(name)
        if label is None and name.startswith("Train_Samples_elapsed_time_ms_"):
            label = "elapsed ms " + name[len("Train_Samples_elapsed_time_ms_"):]
        if label is None:
            label = name
        # DeepSpeed writes train_loss at the samples consumed before the step, the others after it
        shift = 1 if gbs and name == "Train_Samples_train_loss" else 0
        series[label] = {x_of(s) + shift: v for s, v in rows.items()}
    # throughput from DeepSpeed's timers: forward + backward + step per sample step (wall_clock_breakdown)
    parts = [series.get("elapsed ms " + p) for p in ("forward", "backward", "step")]
    if gbs and seq and all(parts):
        for x in sorted(set(parts[0]) & set(parts[1]) & set(parts[2])):
            ms = sum(p[x][0] for p in parts)
            if ms > 0:
                tps = gbs * seq / (ms / 1000.0)
                series.setdefault("tokens per second", {})[x] = (tps, "%.6g" % tps)
    if not series:
        die("%s: the .csv files hold no event" % d)
    return series, x_of


# ---- output --------------------------------------------------------------------------------------------------------

def dump_csv(series, path, x_name):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["series", x_name, "value"])
        for name in sorted(series):
            for x in sorted(series[name]):
                w.writerow([name, x, series[name][x][1]])


def need_matplotlib():
    try:
        import matplotlib
    except ImportError:
        die("matplotlib is not installed for %s: `apt-get install python3-matplotlib` (Debian/Ubuntu) or "
            "`pip install matplotlib`; --dump-csv FILE --no-plot works without it" % sys.executable, 3)
    matplotlib.use("Agg")


def plot(series, out, title, size, x_label):
    import matplotlib.pyplot as plt

    losses = sorted(n for n in series if (n == "loss" or n.endswith(" loss")) and not n.startswith("validation "))
    valid = sorted(n for n in series if n.startswith("validation "))
    panels = [("loss", losses + valid, False), ("learning rate", ["learning rate"], False),
              ("throughput (tokens/s)", ["tokens per second"], False)]
    if "loss scale" in series:
        panels.append(("loss scale", ["loss scale"], True))
    w, h = size
    fig, axes = plt.subplots(len(panels), 1, figsize=(w / 100.0, h / 100.0), dpi=100, sharex=True)
    for ax, (ylabel, names, logy) in zip(axes, panels):
        drawn = 0
        for n in names:
            pts = sorted(series.get(n, {}).items())
            pts = [(x, v[0]) for x, v in pts if math.isfinite(v[0])]
            if not pts:
                continue
            style = dict(marker="o", linestyle="--") if n.startswith("validation ") else dict(marker=".")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=n, markersize=4, **style)
            drawn += 1
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if logy and drawn:
            ax.set_yscale("log", base=2)
        if drawn > 1 or (drawn == 1 and ylabel == "loss"):
            ax.legend(loc="best", fontsize="small")
        if not drawn:
            ax.text(0.5, 0.5, "not in this input", transform=ax.transAxes, ha="center", va="center", color="gray")
    axes[-1].set_xlabel(x_label)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100, format="png")
    plt.close(fig)


def parse_size(text):
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if not m or not (200 <= int(m.group(1)) <= 10000 and 200 <= int(m.group(2)) <= 10000):
        die("--size: %r: expected WIDTHxHEIGHT in pixels, each 200 to 10000 (e.g. 1200x900)" % text)
    return int(m.group(1)), int(m.group(2))


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("input", help="a training log (or - for standard input), or a csv_monitor directory")
    ap.add_argument("-o", "--output", help="the PNG (default: the log's name with .png, or DIR/plot.png)")
    ap.add_argument("--force", action="store_true", help="overwrite an existing output PNG or --dump-csv file")
    ap.add_argument("--dump-csv", metavar="FILE", help="also write the parsed series: series,iteration,value "
                    "(values as the input printed them; tokens per second computed, 6 digits)")
    ap.add_argument("--no-plot", action="store_true", help="only --dump-csv (needs no matplotlib)")
    ap.add_argument("--title", help="the figure's title (default: the input's name)")
    ap.add_argument("--size", default="1200x900", help="WIDTHxHEIGHT of the PNG in pixels (default 1200x900)")
    ap.add_argument("--global-batch-size", type=int, metavar="N",
                    help="csv_monitor input: samples per iteration, to plot against iterations instead of samples")
    ap.add_argument("--seq-length", type=int, metavar="N",
                    help="csv_monitor input: tokens per sample, for tokens/s from the wall_clock_breakdown timers")
    a = ap.parse_args()
    size = parse_size(a.size)
    for flag, v in (("--global-batch-size", a.global_batch_size), ("--seq-length", a.seq_length)):
        if v is not None and v <= 0:
            die("%s: %d: must be positive" % (flag, v))
    if a.no_plot and not a.dump_csv:
        die("--no-plot without --dump-csv has nothing to write")
    if not a.no_plot:
        need_matplotlib()
    is_dir = a.input != "-" and os.path.isdir(a.input)
    if a.input != "-" and not os.path.exists(a.input):
        die("%s: no such file or directory" % a.input)
    if is_dir:
        series, _ = parse_csv_dir(a.input, a.global_batch_size, a.seq_length)
        x_name = "iteration" if a.global_batch_size else "samples"
        default_out = os.path.join(a.input, "plot.png")
    else:
        if a.global_batch_size or a.seq_length:
            die("--global-batch-size/--seq-length are for a csv_monitor directory; a log line has its own")
        series = parse_log(a.input)
        x_name = "iteration"
        default_out = (os.path.splitext(a.input)[0] if a.input != "-" else "stdin") + ".png"
    out = a.output or default_out
    targets = ([] if a.no_plot else [("the PNG", out)]) + ([("--dump-csv", a.dump_csv)] if a.dump_csv else [])
    for what, p in targets:
        if os.path.exists(p) and not a.force:
            die("%s %s exists: not overwritten (give --force, or another name with -o/--dump-csv)" % (what, p))
    if a.dump_csv:
        dump_csv(series, a.dump_csv, x_name)
    if not a.no_plot:
        plot(series, out, a.title if a.title is not None else os.path.basename(os.path.normpath(a.input)), size,
             x_name if x_name == "iteration" else "consumed samples")
        print("%s: %s (%s)" % (PROG, out, ", ".join("%s: %d points" % (n, len(series[n])) for n in sorted(series))))


if __name__ == "__main__":
    main()
