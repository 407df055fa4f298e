#!/usr/bin/env bash
# Configures and builds zerotron into build/ (Release). The CUDA backend is compiled when nvcc is found.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
if ! cmake -B build -S . -DCMAKE_BUILD_TYPE=Release >build/cmake.log 2>&1; then
  cat build/cmake.log
  exit 1
fi
grep -E "OpenBLAS:|CUDA backend" build/cmake.log || true
cmake --build build -j"$(nproc)"
