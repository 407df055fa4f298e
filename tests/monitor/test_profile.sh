#!/usr/bin/env bash
# --profile pt|pt-full, --profile_steps, --profile-ranks (Megatron-DeepSpeed's PyTorch profiler; docs/monitors.md):
#  - one gzip Chrome trace per tracing rank in --tensorboard-dir, named as PyTorch's tensorboard_trace_handler names
#    it ({host}_{pid}.{ns}.pt.trace.json.gz); valid JSON; the steps of --profile_steps only (ProfilerStep#2, #3), each
#    holding its micro batches' batch, forward and backward, every layer's forward inside a forward and its
#    backward inside a backward, the gradient all-reduce and the optimizer step; pt-full adds each event's
#    enclosing events (args.stack), pt none;
#  - the losses are those of the run without it; a run that ends inside the range still writes its trace;
#  - under mpirun: DP=2 traces both ranks, --profile-ranks 1 only rank 1; PP=2's stage 0 traces its layer (and the
#    stage's forward recomputed before each backward);
#  - refusals: no --tensorboard-dir, a bad --profile_steps, a rank outside the world.
# Usage: test_profile.sh PRETRAIN_GPT PYTHON3
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1" py="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 128 --lr 1e-3 --log-interval 1 --eval-iters 0
      --train-iters 5)
# check DIR FULL RANKS LAYERS NMB: the traces in DIR (one per rank in RANKS) against the rules above
check() {
  "$py" - "$@" <<'PYEOF'
import glob, gzip, json, os, re, socket, sys
d, full, ranks, layers, nmb = sys.argv[1], sys.argv[2] == "1", [int(r) for r in sys.argv[3].split(",")], \
    sys.argv[4].split(","), int(sys.argv[5])
files = sorted(glob.glob(os.path.join(d, "*.pt.trace.json.gz")))
bad = []
if len(files) != len(ranks):
    bad.append("%d trace files for ranks %s: %s" % (len(files), ranks, files))
seen = set()
for f in files:
    if not re.fullmatch(re.escape(socket.gethostname()) + r"_\d+\.\d{18,}\.pt\.trace\.json\.gz", os.path.basename(f)):
        bad.append("file name " + os.path.basename(f))
    t = json.load(gzip.open(f))
    ev = [e for e in t["traceEvents"] if e["ph"] == "X"]
    pids = {e["pid"] for e in ev}
    if len(pids) != 1:
        bad.append("%s: pids %s" % (f, pids)); continue
    rank = pids.pop(); seen.add(rank)
    steps = [e for e in ev if e["name"].startswith("ProfilerStep#")]
    if [s["name"] for s in steps] != ["ProfilerStep#2", "ProfilerStep#3"]:
        bad.append("rank %d steps %s" % (rank, [s["name"] for s in steps]))
    inside = lambda a, b: b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"] + 1e-3
    for s in steps:
        mine = [e for e in ev if e is not s and inside(e, s)]
        names = [e["name"] for e in mine]
        for n, want in (("forward", nmb), ("backward", nmb), ("gradients all-reduce", 1), ("optimizer.step", 1)):
            if names.count(n) != want:
                bad.append("rank %d %s: %d x %s (want %d)" % (rank, s["name"], names.count(n), n, want))
        for l in layers:
            for what, parent in (("forward", "forward"), ("backward", "backward")):
                ls = [e for e in mine if e["name"] == "language_model.encoder.layers.%s %s" % (l, what)]
                # (a pipeline stage also recomputes its forward before a backward: "forward (recompute)")
                if len(ls) < nmb or not all(any(p["name"].startswith(parent) and inside(e, p) for p in mine)
                                            for e in ls):
                    bad.append("rank %d %s: layer %s %s x%d, not all inside a %s" % (rank, s["name"], l, what,
                                                                                      len(ls), parent))
    for e in ev:
        st = e.get("args", {}).get("stack")
        if full and (st is None or (not e["name"].startswith("ProfilerStep") and not st)):
            bad.append("pt-full: %s without its stack" % e["name"]); break
        if not full and st is not None:
            bad.append("pt: a stack on %s" % e["name"]); break
    if full:
        lay = [e for e in ev if e["name"].endswith(" forward") and "layers" in e["name"]]
        if lay and lay[0]["args"]["stack"] != ["ProfilerStep#2", "forward"]:
            bad.append("pt-full stack of %s: %s" % (lay[0]["name"], lay[0]["args"]["stack"]))
if seen != set(ranks):
    bad.append("ranks traced %s, want %s" % (sorted(seen), ranks))
print("; ".join(bad[:4]) if bad else "%d trace(s), %d events in the first" % (len(files), len(ev)))
sys.exit(1 if bad else 0)
PYEOF
}
lm() { grep -o "lm loss: [0-9.E+-]*" <<<"$1" | tr '\n' ' '; }

plain=$("$bin" "${tiny[@]}" 2>&1)
for mode in pt pt-full; do
  out=$("$bin" "${tiny[@]}" --profile $mode --tensorboard-dir tb_$mode 2>&1)
  full=0; [ $mode = pt-full ] && full=1
  if msg=$(check tb_$mode $full 0 0,1 2); then ok "--profile $mode: $msg"; else bad "--profile $mode" "$msg"; fi
  [ -n "$(lm "$out")" ] && [ "$(lm "$out")" == "$(lm "$plain")" ] && ok "--profile $mode: the losses of the run without it" ||
    bad "--profile $mode losses" "$(lm "$out") vs $(lm "$plain")"
  grep -qE "^ > rank 0: the profile of steps 2-3 \([0-9]+ events\) is in tb_$mode/" <<<"$out" &&
    ok "--profile $mode: the log names the file" || bad "log line" "$(grep -m1 profile <<<"$out")"
done
grep -qE "^  profile \.+ pt-full$" <<<"$out" && grep -qE "^  profile_steps \.+ 2,3$" <<<"$out" &&
  grep -qE "^  profile_ranks \.+ None$" <<<"$out" && ok "the argument dump" || bad "dump" "$(grep profile <<<"$out")"

out=$("$bin" "${tiny[@]}" --train-iters 2 --profile pt --tensorboard-dir tb_short 2>&1)
grep -qE "^ > rank 0: the profile of steps 2-2 \([0-9]+ events\) is in tb_short/.*\(the run ended before the last step asked\)$" \
  <<<"$out" && [ "$(ls tb_short/*.pt.trace.json.gz | wc -l)" -eq 1 ] &&
  ok "a run that ends inside --profile_steps still writes its trace, and says so" ||
  bad "short run" "$(grep -m1 "profile of" <<<"$out")"

if command -v mpirun >/dev/null; then
  timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --profile pt --tensorboard-dir tb_dp >/dev/null 2>&1
  if msg=$(check tb_dp 0 0,1 0,1 1); then ok "DP=2: $msg"; else bad "DP=2" "$msg"; fi
  timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --profile pt --tensorboard-dir tb_r1 --profile-ranks 1 >/dev/null 2>&1
  if msg=$(check tb_r1 0 1 0,1 1); then ok "--profile-ranks 1: $msg"; else bad "--profile-ranks 1" "$msg"; fi
  timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --profile pt --tensorboard-dir tb_pp0 --profile-ranks 0 \
    --pipeline-model-parallel-size 2 >/dev/null 2>&1
  if msg=$(check tb_pp0 0 0 0 2); then ok "PP=2, stage 0: $msg"; else bad "PP=2 stage 0" "$msg"; fi
else
  echo "SKIP DP=2, PP=2: no mpirun"
fi

refused() { # NAME MESSAGE FLAGS...
  local out
  out=$("$bin" "${tiny[@]}" "${@:3}" 2>&1)
  [ $? -ne 0 ] && grep -qF -- "$2" <<<"$out" && ! grep -q "^ iteration" <<<"$out" && ok "refused: $1" ||
    bad "refused: $1" "$(grep -m1 error <<<"$out")"
}
refused "no --tensorboard-dir" "error: missing argument: --profile pt writes its trace into --tensorboard-dir" --profile pt
refused "--profile_steps 3,2" "error: bad argument value: --profile_steps 3,2: expected START,END with 1 <= START <= END" \
  --profile pt --tensorboard-dir tb --profile_steps 3,2
refused "--profile-ranks 1 in a world of 1" "error: bad argument value: --profile-ranks 1: the world has 1 ranks" \
  --profile pt --tensorboard-dir tb --profile-ranks 1
refused "--profile torch" "--profile torch: invalid choice (choose from pt, pt-full)" --profile torch --tensorboard-dir tb
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
