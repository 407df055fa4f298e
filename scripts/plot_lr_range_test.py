#!/usr/bin/env python3
"""Draws the learning-rate range test figure of docs/lr_range_test.md from the csv_monitor files that
scripts/lr_range_test.sh writes: training loss against step (left) and learning rate against step
(right) for the fixed-lr run and the slow- and fast-growing LRRangeTest runs, like the figure of
DeepSpeed's tutorial; also prints the lowest smoothed loss of each run and the lr where it occurred.
usage: plot_lr_range_test.py OUTDIR PNG   (needs matplotlib: apt-get install python3-matplotlib)"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    steps, values = [], []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if row and row[0] != "step":
                steps.append(int(row[0]))
                values.append(float(row[1]))
    return steps, values


def smooth(values, k=20):
    out = []
    for i in range(len(values)):
        window = values[max(0, i - k + 1):i + 1]
        out.append(sum(window) / len(window))
    return out


def main():
    outdir, png = sys.argv[1], sys.argv[2]
    runs = [("fixed", "fixed lr = 2e-4", "tab:blue"),
            ("lrrt_slow", "LRRT step_rate 5 (slow)", "tab:orange"),
            ("lrrt_fast", "LRRT step_rate 50 (fast)", "tab:gray")]
    fig, (ax_loss, ax_lr) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, label, color in runs:
        s_loss, loss = read(os.path.join(outdir, name, "Train_Samples_train_loss.csv"))
        s_lr, lr = read(os.path.join(outdir, name, "Train_Samples_lr.csv"))
        batches = [s // 8 for s in s_loss]
        sm = smooth(loss)
        ax_loss.plot(batches, sm, label=label, color=color)
        ax_lr.plot([s // 8 for s in s_lr], lr, label=label, color=color)
        best = min(range(len(sm)), key=lambda i: sm[i])
        lr_at = lr[min(best, len(lr) - 1)]
        print("%-10s %4d steps, final smoothed loss %.3f, lowest %.3f at step %d (lr %.3g)" %
              (name, len(loss), sm[-1], sm[best], batches[best] + 1, lr_at))
    ax_loss.set_xlabel("batches")
    ax_loss.set_ylabel("training loss (mean of 20 steps)")
    ax_loss.set_title("Brown corpus, 2-layer GPT: loss")
    ax_loss.legend()
    ax_lr.set_xlabel("batches")
    ax_lr.set_ylabel("learning rate")
    ax_lr.set_yscale("log")
    ax_lr.set_title("learning rate")
    ax_lr.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    main()
