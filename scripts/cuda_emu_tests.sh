#!/usr/bin/env bash
# Runs every CUDA test (tests/cuda/test_cuda_*.c) against the unmodified kernels (runtime/ops/cuda/*.cu) on the
# CPU emulator of tools/cuda_emu (see its README.md: what is emulated and how faithfully), and the multi-process
# programs of emu_build.py's PROGRAMS under mpirun with the emulated NCCL (tests/comm/test_comm_nccl.c, the NCCL
# self-check). Builds the emulated binaries from the current sources, runs them (in parallel), prints each test's
# summary and FAIL lines, and exits non-zero if any test fails, crashes or does not build. The emulated pretrain_gpt
# is built too (not run here: tools/cuda_emu/train_check.sh runs it).
#
#   scripts/cuda_emu_tests.sh [--zt-build DIR] [--out DIR] [--jobs N] [--san] [--only NAME[,NAME...]] [--verbose]
#
#   --zt-build DIR  a built zerotron CMake build directory whose libzt.a holds the CPU reference (default: build/;
#                   a CUDA build works too: its CUDA objects and libraries are not used)
#   --out DIR       where the generated sources, objects, binaries and logs go (default: DIR/cuda_emu, or
#                   DIR/cuda_emu_san with --san)
#   --jobs N        parallel compiles and tests (default: the number of cores)
#   --san           AddressSanitizer + UndefinedBehaviorSanitizer build (slower; also ZT_EMU_SAN=1)
#   --only NAMES    run only these tests (e.g. test_cuda_matmul)
#   --verbose       print every test's full output
# The first test is the emulator's own (emu_selftest); test_cuda_matmul also runs with ZT_EMU_LT_EPILOGUES=none;
# test_comm_nccl runs alone and under mpirun -np 2 with ZT_EMU_DEVICES=2, nccl_check under mpirun -np 3.
# Environment read by the emulated binaries: ZT_EMU_SEED (thread and block order, default 1), ZT_EMU_SCHEDULE
# (mixed|rounds|warps), ZT_EMU_LT_EPILOGUES (all|bias|none: the fused cuBLASLt epilogues the heuristic offers),
# ZT_EMU_DEVICES (0 shows the SKIP path), ZT_EMU_STACK_KB; at build time ZT_EMU_CONTRACT=0 (no FMA contraction),
# ZT_EMU_ARCH, ZT_EMU_CXXFLAGS, CC, CXX.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ZT_BUILD=$ROOT/build
OUT=
JOBS=$(nproc)
SAN=${ZT_EMU_SAN:-0}
ONLY=
VERBOSE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --zt-build) ZT_BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --san) SAN=1; shift ;;
    --only) ONLY=$2; shift 2 ;;
    --verbose) VERBOSE=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "cuda_emu_tests.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
ZT_BUILD=$(cd "$ZT_BUILD" && pwd)
if [ -z "$OUT" ]; then
  OUT=$ZT_BUILD/cuda_emu
  [ "$SAN" = 1 ] && OUT=${OUT}_san
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
start=$(date +%s.%N)
dt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

san_flag=
[ "$SAN" = 1 ] && san_flag=--san
list=$(python3 "$ROOT/tools/cuda_emu/emu_build.py" --root "$ROOT" --zt-build "$ZT_BUILD" --out "$OUT" $san_flag)
# one run per line: NAME, or NAME@NP+VAR=VALUE,... (mpirun -np NP, that environment); -NAME: built, not run
TESTS=()
BUILT=()
while read -r line; do
  case "$line" in
    -*) BUILT+=("${line#-}") ;;
    ?*) TESTS+=("$line") ;;
  esac
done <<<"$list"
# variants: the same binary in another emulator setting. cuBLASLt without fused epilogues drives matmul.cu's
# fallback kernels (the late bias and GELU), which the real library takes when its heuristic refuses an epilogue.
for t in "${TESTS[@]}"; do
  [ "$t" = test_cuda_matmul ] && TESTS+=("test_cuda_matmul+ZT_EMU_LT_EPILOGUES=none")
done
base() { local b=${1%%+*}; echo "${b%%@*}"; }  # the binary of a run
echo "cuda emulator: building ${#TESTS[@]} tests in $OUT (libzt: $ZT_BUILD/libzt.a, $JOBS jobs$([ "$SAN" = 1 ] && echo ', sanitizers'))"
make -C "$OUT" -k -j"$JOBS" --no-print-directory all >"$OUT/build.log" 2>&1 || true
grep -E "warning: .* does not compile|error|Error" "$OUT/build.log" | head -n 40 || true
built=$(date +%s.%N)
echo "cuda emulator: build $(dt "$start" "$built") s"

if [ -n "$ONLY" ]; then
  IFS=, read -r -a want <<<"$ONLY"
  sel=()
  for t in "${TESTS[@]}"; do
    for w in "${want[@]}"; do [ "$t" = "$w" ] || [ "$(base "$t")" = "$w" ] && sel+=("$t"); done
  done
  if [ "${#sel[@]}" = 0 ]; then
    echo "cuda_emu_tests.sh: --only $ONLY names none of: ${TESTS[*]}" >&2
    exit 2
  fi
  TESTS=("${sel[@]}")
fi

mkdir -p "$OUT/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# each emulated test runs on one core; the CPU reference's OpenMP/OpenBLAS threads would only contend
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# mpirun as tests/comm/run_comm_tests.sh and tests/lib/common.sh use it: oversubscribed (CI has 2 cores), unbound,
# idle ranks yielding, only the loopback and shared-memory transports (no network probing in containers)
MPIRUN=$(command -v mpirun || command -v mpiexec || true)
mpi_args=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpi_args+=(--allow-run-as-root)
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
key() { echo "${1//[^A-Za-z0-9_.=@-]/_}"; }  # a test (or variant) as a file name
run_one() {
  local t=$1 bin k np=
  bin=$(base "$t")
  local envs=()
  [[ "$t" == *+* ]] && IFS=, read -r -a envs <<<"${t#*+}"
  [[ "${t%%+*}" == *@* ]] && np=${t%%+*} && np=${np#*@}
  k=$(key "$t")
  local log=$OUT/logs/$k.log s
  s=$(date +%s.%N)
  if [ ! -x "$OUT/bin/$bin" ]; then
    echo "BUILD FAILED (see $OUT/build.log)" >"$log"
    echo 99 >"$OUT/logs/$k.rc"
  elif [ -n "$np" ] && [ -z "$MPIRUN" ]; then
    echo "SKIP: mpirun not found (apt-get install openmpi-bin)" >"$log"
    echo 77 >"$OUT/logs/$k.rc"
  else
    set +e
    if [ -n "$np" ]; then  # a hang (which the emulated NCCL turns into a message, after its own timeout) ends here
      env ${envs[@]+"${envs[@]}"} timeout 600 "$MPIRUN" "${mpi_args[@]}" -np "$np" "$OUT/bin/$bin" </dev/null >"$log" 2>&1
    else
      env ${envs[@]+"${envs[@]}"} "$OUT/bin/$bin" </dev/null >"$log" 2>&1
    fi
    echo $? >"$OUT/logs/$k.rc"
    set -e
  fi
  echo "$s $(date +%s.%N)" >"$OUT/logs/$k.time"
}
running=0
# the longest first (cuBLASLt's reference GEMMs make the matmul runs the longest), so the others fill the gaps
order=()
for t in "${TESTS[@]}"; do [[ "$t" == test_cuda_matmul* ]] && order+=("$t"); done
for t in "${TESTS[@]}"; do [[ "$t" == test_cuda_matmul* ]] || order+=("$t"); done
for t in "${order[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
skipped=0
echo
for t in "${TESTS[@]}"; do
  k=$(key "$t")
  log=$OUT/logs/$k.log
  rc=$(cat "$OUT/logs/$k.rc")
  read -r s e <"$OUT/logs/$k.time"
  summary=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$log" | tail -n 1 || true)
  # tests/comm's programs end with "all checks passed" and print one PASS line per check
  if [ -z "$summary" ] && grep -qx "all checks passed" "$log"; then
    summary="$(grep -c "^PASS " "$log") passed, 0 failed"
  fi
  if [ "$rc" = 0 ] && [ -n "$summary" ]; then
    status=PASS
  elif [ "$rc" = 77 ]; then
    status=SKIP  # only with ZT_EMU_DEVICES=0: the emulated device is always there otherwise
    skipped=$((skipped + 1))
    summary=$(grep -m1 SKIP "$log" | cut -c1-60 || echo "exit status 77")
  else
    status=FAIL
    failed=$((failed + 1))
  fi
  [ -z "$summary" ] && summary="no summary line (exit status $rc)"
  name=$(base "$t")
  [[ "${t%%+*}" == *@* ]] && name="$name (mpirun -np ${t%%+*}" && name="${name/-np *@/-np }" && \
    { [[ "$t" == *+* ]] && name="$name, ${t#*+})" || name="$name)"; }
  [[ "${t%%+*}" != *@* && "$t" == *+* ]] && name="$name (${t#*+})"
  printf '%-4s %-50s %-28s %6s s\n' "$status" "$name" "$summary" "$(dt "$s" "$e")"
  if [ "$VERBOSE" = 1 ]; then
    sed 's/^/    /' "$log"
  elif [ "$status" = FAIL ]; then
    grep -E "^FAIL|cuda emulator|error|SKIP|ERROR|runtime error|Sanitizer" "$log" | head -n 40 | sed 's/^/    /' || true
    [ -n "$(grep -E '^[0-9]+ passed' "$log")" ] || tail -n 15 "$log" | sed 's/^/    | /'
    echo "    (full log: $log)"
  fi
done
end=$(date +%s.%N)
for b in ${BUILT[@]+"${BUILT[@]}"}; do
  if [ -x "$OUT/bin/$b" ]; then
    echo "built, not run here: $OUT/bin/$b"
  else
    echo "BUILD FAILED: $b (see $OUT/build.log)"
    failed=$((failed + 1))
  fi
done
printf '\ncuda emulator: %d of %d tests passed%s; build %s s, tests %s s, total %s s\n' \
  "$((${#TESTS[@]} - failed - skipped))" "${#TESTS[@]}" "$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")" \
  "$(dt "$start" "$built")" "$(dt "$built" "$end")" "$(dt "$start" "$end")"
[ "$failed" = 0 ] && [ "${#TESTS[@]}" -gt 0 ]
