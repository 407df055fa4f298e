#!/usr/bin/env bash
# The test command: install (with the PyTorch/NumPy oracles), build (CUDA code too when nvcc is
# present), and run every ctest label: unit, parity, slow, mpi, examples, emu (the CUDA tests on the CPU
# emulator), fuzz and gpu; a test that cannot run here prints SKIP with its reason (gpu tests without a GPU,
# fuzz_parsers without clang) and is listed below. Tests run one at a time: each uses all cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh --test
bash scripts/build.sh
cd build
set +e
ctest --output-on-failure --timeout 1800 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
summary=$(grep -E "tests passed|tests failed" ctest.log | tail -1)
passed=$(grep -cE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed" ctest.log || true)
failed=$(grep -cE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*Failed|Not Run|Timeout|Exception)" ctest.log || true)
skipped=$(grep -cE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped" ctest.log || true)
echo "$summary"
echo "ctest: $passed passed, $failed failed, $skipped skipped"
# Why each test skipped: its SKIP line (tests print "SKIP: <reason>" before exiting 77) from ctest's full log
if [ "$skipped" -gt 0 ]; then
  grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped" ctest.log | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' |
  while read -r t; do
    why=$(awk -v t="$t" '$0 ~ "^[0-9]+/[0-9]+ Test: " && $3 == t { on = 1; next } on == 1 && /^Output:/ { on = 2; next }
                         on == 2 && /^<end of output>/ { exit } on == 2 && /SKIP/ { print; exit }' Testing/Temporary/LastTest.log)
    echo "  skipped $t: ${why:-(no SKIP line printed)}"
  done
fi
exit "$rc"
