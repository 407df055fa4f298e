"""id_losses: with --lr 0 and no dropout every iteration of one sample (--global-batch-size 1) trains on unchanged
weights, so its printed losses are a function of the dataset sample it loads. Given a training log, this checks
that the samples Megatron-DeepSpeed's sampler would load (megatron_samplers.py) explain the losses: the same sample
always gives the same losses, at least --min-distinct samples give distinct ones, and, with --map-in, each sample
gives the losses an earlier run gave it. Usage:
  id_losses.py LOG cyclic|repeat SHARDING TOTAL START [--map-in F] [--map-out F] [--min-distinct N]
Prints one line and exits 1 on a failure."""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import megatron_samplers  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("log")
ap.add_argument("kind")
ap.add_argument("sharding", type=int)
ap.add_argument("total", type=int)
ap.add_argument("start", type=int)
ap.add_argument("--map-in")
ap.add_argument("--map-out")
ap.add_argument("--min-distinct", type=int, default=0)
a = ap.parse_args()

losses = []
for line in open(a.log):
    if line.startswith(" iteration "):
        losses.append(" ".join(re.findall(r"(?:lm|sop) loss: ([0-9.E+-]+)", line)))
if not losses:
    print("no iteration in", a.log)
    sys.exit(1)
ids = megatron_samplers.positions(a.kind, a.sharding, a.total, 1, 1, a.start, len(losses))
seen = json.load(open(a.map_in)) if a.map_in else {}
known = dict(seen)
bad = []
for k, (i, l) in enumerate(zip(ids, losses)):
    if str(i) in known and known[str(i)] != l:
        bad.append("iteration %d loads sample %d: %s, but it gave %s before" % (a.start + k + 1, i, l, known[str(i)]))
    known.setdefault(str(i), l)
mine = {str(i): l for i, l in zip(ids, losses)}
distinct = len(set(mine.values()))
if a.map_out:
    json.dump(known, open(a.map_out, "w"))
if bad or distinct < a.min_distinct:
    print("FAIL: %d of %d iterations disagree (%s); %d distinct losses over %d samples" %
          (len(bad), len(losses), "; ".join(bad[:3]), distinct, len(mine)))
    sys.exit(1)
print("%d iterations over %d samples (%d distinct losses)%s agree" %
      (len(losses), len(mine), distinct, ", %d of them known before," % len(set(mine) & set(seen)) if seen else ""))
