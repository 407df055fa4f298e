#!/usr/bin/env bash
# Runs on the device machine (see scripts/gpu_bundle.sh): the GPU tests of the carried bundle (or the named
# tests and benchmarks, e.g. bench_gpu_ops), each one's output in $OUT/<name>.log, a summary at the end. CUDA's libraries are looked up where the machine has them.
#   run(command="scripts/gpu_run.sh [test names...]", carry=[".gpu"])
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle="$root/.gpu"
[ -d "$bundle/bin" ] || { echo "no .gpu bundle: run scripts/gpu_bundle.sh here and carry .gpu"; exit 2; }
libs="$bundle/lib"
for n in libcudart.so.13 libcublasLt.so.13 libnccl.so.2; do
  d=$(dirname "$(find /usr/local/cuda* /usr/lib /opt -name "$n" 2>/dev/null | head -1)" 2>/dev/null)
  [ -n "$d" ] && [ "$d" != . ] && libs="$libs:$d" || echo "warning: $n not found on this machine"
done
export LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
out="${OUT:-/tmp/gpu_out}"
mkdir -p "$out"
tests=("$@")
# by default: the environment report first (what the machine offers), then every test
[ ${#tests[@]} -gt 0 ] || { tests+=(zt_report); for b in "$bundle"/bin/test_*; do tests+=("$(basename "$b")"); done; tests+=(test_gpu_train); }
fail=0
for t in "${tests[@]}"; do
  if [ "$t" = test_gpu_train ]; then  # the shell test: pretrain_gpt on the GPU against the CPU
    timeout 1500 "$root/tests/cuda/test_gpu_train.sh" "$bundle/bin/pretrain_gpt" >"$out/$t.log" 2>&1; rc=$?
  else
    timeout 300 "$bundle/bin/$t" >"$out/$t.log" 2>&1; rc=$?
  fi
  case $rc in 0) s=PASS ;; 77) s=SKIP ;; *) s="FAIL (exit $rc)"; fail=1 ;; esac
  echo "== $t: $s"
  case $t in
    bench_*|zt_report) cat "$out/$t.log" ;;  # the figures, the report
    *) grep -E '^(FAIL|SKIP)' "$out/$t.log" | head -20; tail -1 "$out/$t.log" ;;
  esac
done
exit $fail
