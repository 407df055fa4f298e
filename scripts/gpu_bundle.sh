#!/usr/bin/env bash
# Builds the CUDA binaries here (sm_90, the device machines' H100/H200) and packs them, with the shared
# libraries the device machine lacks (OpenMPI, OpenBLAS, HDF5, libaio, SentencePiece: our Debian packages),
# into .gpu/ (ignored by git) for the device tool's `carry`. CUDA's own libraries (cudart, cuBLASLt, NCCL)
# are found on the device machine by scripts/gpu_run.sh. Usage (here):
#   scripts/gpu_bundle.sh [extra cmake targets...]     e.g. scripts/gpu_bundle.sh pretrain_gpt
# then: run(command="scripts/gpu_run.sh", carry=[".gpu"]).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/.gpu"
build="${ZT_GPU_BUILD:-/tmp/build-gpu-bundle}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
grep -q 'ZT_HAVE_NCCL:INTERNAL=ON\|ZT_NCCL_LIB:FILEPATH=/' "$build/CMakeCache.txt" || echo "note: no NCCL in this build"
targets=()
for f in "$root"/tests/cuda/test_cuda_*.c; do targets+=("$(basename "$f" .c)"); done
targets+=(test_comm_nccl bench_gpu_ops pretrain_gpt zt_report "$@")
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
# user tools are in $build/bin, test drivers in $build/tests/bin, benchmarks in $build/bench/bin
for t in "${targets[@]}"; do
  src=""
  for d in bin tests/bin bench/bin; do [ -x "$build/$d/$t" ] && src="$build/$d/$t" && break; done
  [ -n "$src" ] || { echo "error: gpu_bundle: $t not built in $build/{bin,tests/bin,bench/bin}" >&2; exit 1; }
  cp "$src" "$out/bin/" && strip "$out/bin/$t"
done
# every shared library the binaries load, except the C runtime and CUDA's (present on the device machine)
skip='/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt|libnccl|libcudnn[a-z_]*)\.so'
for b in "$out"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -Ev "$skip" | while read -r lib; do cp -Lu "$lib" "$out/lib/"; done
done
du -sh "$out" | sed 's/^/bundle: /'
ls "$out/bin"
