#!/usr/bin/env bash
# pretrain_gpt on the emulated GPU (tools/cuda_emu, README.md "Programs") against the CPU build's pretrain_gpt: a tiny
# GPT on --mock-data, the same command for both; the emulated run must say "> compute: GPU" and log every "lm loss"
# of the CPU run within 1e-5 relative. ctest entry cuda_emu_train (labels emu, slow).
#
#   train_check.sh [--zt-build DIR] [--out DIR] [--jobs N]
#
# Each case is one line, `train_case NAME NP [FLAGS...]`: NP processes (mpirun -np NP for both runs when NP > 1,
# the emulated one with ZT_EMU_DEVICES=NP: one emulated GPU per rank, as on a node with NP GPUs), FLAGS added to the
# tiny model's. A tensor-parallel case, once the GPU path runs it, reads: train_case "TP=2" 2
# --tensor-model-parallel-size 2.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ZT_BUILD=$ROOT/build
OUT=
JOBS=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --zt-build) ZT_BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "train_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
ZT_BUILD=$(cd "$ZT_BUILD" && pwd)
OUT=${OUT:-$ZT_BUILD/cuda_emu}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
. "$ROOT/tests/lib/common.sh"  # ok, bad, mpi=(mpirun ...), field, close
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none

cpu_bin=$ZT_BUILD/bin/pretrain_gpt
emu_bin=$OUT/bin/pretrain_gpt
[ -x "$cpu_bin" ] || { echo "FAIL: $cpu_bin not found: build it first (scripts/build.sh)"; exit 1; }
t0=$(date +%s.%N)
python3 "$ROOT/tools/cuda_emu/emu_build.py" --root "$ROOT" --zt-build "$ZT_BUILD" --out "$OUT" >/dev/null || exit 1
if ! make -C "$OUT" -j"$JOBS" --no-print-directory "$emu_bin" >"$OUT/logs/train_check_build.log" 2>&1; then
  grep -E "error|warning: .* does not compile" "$OUT/logs/train_check_build.log" | head -n 20
  echo "FAIL: the emulated pretrain_gpt does not build (see $OUT/logs/train_check_build.log)"
  exit 1
fi
echo "emulated pretrain_gpt: $emu_bin (built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"

tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --vocab-size 128 --micro-batch-size 2 --global-batch-size 4 --train-iters 4 --log-interval 1 --eval-iters 1
      --eval-interval 1000 --lr 1e-3 --seed 1 --mock-data)

# launch NP LOG BIN FLAGS...: one run, its output in LOG, its exit status returned
launch() {
  local np=$1 log=$2
  shift 2
  if [ "$np" -gt 1 ]; then
    timeout 900 "${mpi[@]}" -np "$np" "$@" </dev/null >"$log" 2>&1
  else
    timeout 900 "$@" </dev/null >"$log" 2>&1
  fi
}

train_case() {
  local name=$1 np=$2
  shift 2
  local k=${name//[^A-Za-z0-9_.=-]/_} rc c g ms
  local cpu_log=$OUT/logs/train_$k.cpu.log emu_log=$OUT/logs/train_$k.emu.log
  # the reference stays on the CPU even in a CUDA build on a GPU machine
  CUDA_VISIBLE_DEVICES= launch "$np" "$cpu_log" "$cpu_bin" "${tiny[@]}" "$@"
  rc=$?
  [ $rc -eq 0 ] || { bad "$name: CPU run" "exit status $rc: $(tail -n 3 "$cpu_log")"; return; }
  ZT_EMU_DEVICES=$np launch "$np" "$emu_log" "$emu_bin" "${tiny[@]}" "$@"
  rc=$?
  if [ $rc -ne 0 ]; then
    bad "$name: emulated run" "exit status $rc: $(grep -m3 -E 'error|cuda emulator' "$emu_log" || tail -n 3 "$emu_log")"
    return
  fi
  if grep -q "^> compute: GPU" "$emu_log"; then
    ok "$name: the emulated run trains on the GPU ($(grep -m1 '^> compute: GPU' "$emu_log" | cut -c1-60)...)"
  else
    bad "$name: the emulated run does not train on the GPU" "$(grep -m1 '^> compute' "$emu_log" || echo 'no > compute line')"
  fi
  ! grep -q "^> compute: GPU" "$cpu_log" || bad "$name: the reference run" "trained on a GPU"
  c=$(field "$(cat "$cpu_log")" "lm loss") g=$(field "$(cat "$emu_log")" "lm loss")
  if close "$c" "$g" 1e-5; then
    ok "$name: $(wc -w <<<"$g") logged lm losses within 1e-5 of the CPU's ($g)"
  else
    bad "$name: lm loss" "CPU '$c', emulated GPU '$g'"
  fi
  # the emulator's speed, for the README: the mean time of the iterations after the first
  ms=$(grep -E "^ iteration " "$emu_log" | sed -E 's/.*elapsed time per iteration \(ms\): *([0-9.]+).*/\1/' |
       awk 'NR > 1 { s += $1; n++ } END { if (n) printf "%.0f", s / n }')
  echo "     $name: ${ms:-?} ms per emulated iteration (logs: $cpu_log, $emu_log)"
}

train_case "one process, fp32, dropout 0.1" 1
train_case "one process, fp32, no dropout, 2 micro batches" 1 --attention-dropout 0 --hidden-dropout 0 \
  --micro-batch-size 1 --global-batch-size 2

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
