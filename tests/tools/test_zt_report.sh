#!/usr/bin/env bash
# zt_report (tools/zt_report): the features it says are compiled in are the build's CMake results, and the
# versions and machine facts it prints agree with independent sources on this machine (getconf, mpirun, nproc,
# /proc/cpuinfo, OpenBLAS's OPENBLAS_CORETYPE, OMP_NUM_THREADS); --help, bad flags and colors.
# Usage: test_zt_report.sh ZT_REPORT ZT_HAVE_CUDA(ON|OFF) ZT_HAVE_NCCL(ON|OFF) CMAKE_BUILD_TYPE
set -u
bin=$1 have_cuda=$2 have_nccl=$3 build_type=$4
fails=0 checks=0
ok()   { checks=$((checks + 1)); echo "ok: $1"; }
fail() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $1"; }
expect() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }
# the value of a report row "name ..... value"
val() { sed -n '/^build (what CMake configured)/,$p' <<<"$out" | grep -m1 "^$1 \.\.*" | sed "s/^$1 \.* //"; }
# the compiled-in / usable columns of a feature row
compiled() { grep -m1 "^$1 \.\.* \[" <<<"$out" | awk '{print $3}'; }
usable() { grep -m1 "^$1 \.\.* \[" <<<"$out" | awk '{print $5}'; }
yes_no() { [ "$1" = ON ] && echo "[YES]" || echo "[NO]"; }

out=$("$bin" 2>&1); rc=$?
expect "exit status 0 (got $rc)" "[ $rc = 0 ]"
echo "$out" | head -12

# features compiled in = the CMake configuration of this build
expect "CUDA compiled in = ZT_HAVE_CUDA ($have_cuda): $(compiled CUDA)" "[ '$(compiled CUDA)' = '$(yes_no "$have_cuda")' ]"
expect "NCCL compiled in = ZT_HAVE_NCCL ($have_nccl): $(compiled NCCL)" "[ '$(compiled NCCL)' = '$(yes_no "$have_nccl")' ]"
for f in MPI HDF5 libaio OpenMP OpenBLAS; do
  expect "$f compiled in (a required dependency): $(compiled "$f")" "[ '$(compiled "$f")' = '[YES]' ]"
done
expect "cuDNN reported as not compiled in" "[ '$(compiled cuDNN)' = '[NO]' ]"
expect "CUDA backend row says $have_cuda" "[ '$(val 'CUDA backend compiled')' = '$have_cuda' ]"
expect "CMAKE_BUILD_TYPE row says $build_type" "[ '$(val CMAKE_BUILD_TYPE)' = '$build_type' ]"
if [ "$have_cuda" = OFF ]; then
  expect "no GPUs without CUDA" "val GPUs | grep -q '^none (CUDA is not compiled'"
  expect "CUDA not usable: $(usable CUDA)" "[ '$(usable CUDA)' = '[NO]' ]"
elif ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  expect "CUDA compiled in, no GPU here: CUDA [NO] with the CUDA error" "[ '$(usable CUDA)' = '[NO]' ] && val GPUs | grep -q '^none ('"
else
  n=$(nvidia-smi -L | grep -c '^GPU')
  expect "CUDA usable with the $n GPU(s) nvidia-smi lists" "[ '$(usable CUDA)' = '[OKAY]' ] && [ \$(grep -c '^GPU [0-9]* \.' <<<\"\$out\") = $n ]"
fi
rows=$(grep -cE '^[A-Za-z0-9]+ \.+ \[(YES|NO)\] \.+ \[(OKAY|NO|WARNING)\]' <<<"$out")
expect "8 feature rows with a verdict: $rows" "[ $rows = 8 ]"

# versions against independent sources
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
expect "glibc run-time version = getconf's $glibc: $(val glibc)" "val glibc | grep -q '| $glibc\$'"
if command -v mpirun >/dev/null; then
  mv=$(mpirun --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)
  expect "MPI run-time library = mpirun's $mv: $(val MPI)" "val MPI | grep -q '| Open MPI v$mv'"
fi
expect "HDF5 build and run-time versions agree on this machine: $(val HDF5)" \
  "val HDF5 | awk -F' [|] ' '{exit !(\$1 == \$2 && \$1 ~ /^[0-9]+\\.[0-9]+\\.[0-9]+\$/)}'"
expect "libaio file loaded: $(val 'libaio (no version call; file)')" "val 'libaio (no version call; file)' | grep -q '| /.*libaio\.so\.'"
core=$(val 'OpenBLAS core (kernel)')
expect "OpenBLAS core named: $core" "[ -n '$core' ]"
if val OpenBLAS | grep -q DYNAMIC_ARCH; then
  # a DYNAMIC_ARCH OpenBLAS takes its kernel from OPENBLAS_CORETYPE: the report must read the live value
  forced=$(OPENBLAS_CORETYPE=Prescott "$bin" | grep '^OpenBLAS core' | sed 's/^.*\.\. //')
  expect "OPENBLAS_CORETYPE=Prescott shows as the core: $forced" "[ '$forced' = Prescott ]"
fi
threads=$(OMP_NUM_THREADS=1 "$bin" | grep '^OpenMP \.' | head -1)
expect "OMP_NUM_THREADS=1 shows as 1 OpenMP thread: $threads" "grep -q '1 threads (omp_get_max_threads)' <<<'$threads'"

# the machine
model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: //')
[ -n "$model" ] && expect "CPU model = /proc/cpuinfo's '$model'" "[ \"\$(val 'CPU model')\" = \"$model\" ]"
expect "logical CPUs = nproc --all ($(nproc --all)): $(val 'CPU cores')" "val 'CPU cores' | grep -q '^$(nproc --all) logical online'"
expect "usable CPUs = nproc ($(nproc))" "val 'CPU cores' | grep -q '$(nproc) usable by this process'"
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then
  one=$(taskset -c 0 "$bin" | grep '^CPU cores')
  expect "under taskset -c 0 one CPU is usable: $one" "grep -q ' 1 usable by this process' <<<'$one'"
fi

# flags and colors
help=$("$bin" --help); rc=$?
expect "--help exits 0 and shows the usage" "[ $rc = 0 ] && grep -q '^usage: zt_report' <<<\"\$help\""
err=$("$bin" --bogus 2>&1); rc=$?
expect "an unknown flag is refused by name (rc $rc): $err" "[ $rc = 2 ] && grep -q 'unrecognized argument: --bogus' <<<\"\$err\""
expect "no color codes when stdout is not a terminal" "! grep -q $'\\033' <<<\"\$out\""
expect "--color colors the verdicts" "\"$bin\" --color | grep -q $'\\033\\[92m\\[OKAY\\]'"
expect "--hide-feature-status leaves out the feature table" "! \"$bin\" --hide-feature-status | grep -q '^feature \.'"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
