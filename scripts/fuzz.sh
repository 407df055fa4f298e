#!/usr/bin/env bash
# Fuzzes zerotron's parsers of user files with libFuzzer (clang, ASan + UBSan): builds the library and the
# harnesses tests/fuzz/fuzz_<name>.c into build-fuzz/ (or $ZT_FUZZ_BUILD), then for each harness
#   1. replays every input of tests/fuzz/regress/<name>/ (past findings, each now refused cleanly), then
#   2. fuzzes from the seed corpus tests/fuzz/corpus/<name>/ for --seconds (default 60) or --runs inputs,
#      growing a scratch corpus under the build directory (the repository's seeds are not modified).
# Exits 1 on any finding: a crash, a sanitizer report, an input taking over 10 s (a hang) or a run over
# 2 GiB (tests/fuzz/fuzz_<name>.options, one libFuzzer flag a line, can override these for one harness, with the
# reason in a # comment); the input is kept in <build>/findings/<name>/ and the command that reproduces it is printed.
# Usage: scripts/fuzz.sh [--seconds N | --runs N] [--jobs N] [name ...]   (names: ds_config, jsonl, ...; default all)
#   --jobs: harnesses fuzzed at a time, one core each (default: the cores).
#   CI (scripts/run_tests.sh, ctest fuzz_parsers) runs 25 s each; docs/testing.md gives the long run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=60
runs=""
jobs=$(nproc)
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "error: fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "error: fuzz.sh: --seconds wants a whole number, got '$seconds'" >&2; exit 2 ;; esac
case "$runs" in *[!0-9]*) echo "error: fuzz.sh: --runs wants a whole number, got '$runs'" >&2; exit 2 ;; esac
case "$jobs" in ''|0|*[!0-9]*) echo "error: fuzz.sh: --jobs wants a whole number above 0, got '$jobs'" >&2; exit 2 ;; esac
command -v clang >/dev/null || { echo "error: fuzz.sh: clang not found (apt-get install clang)" >&2; exit 1; }

build=${ZT_FUZZ_BUILD:-$root/build-fuzz}
mkdir -p "$build"
build=$(cd "$build" && pwd) # the harnesses run inside it
if ! CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DZT_FUZZ=ON -DCMAKE_BUILD_TYPE=Release \
    >"$build/cmake.log" 2>&1; then
  cat "$build/cmake.log"; exit 1
fi
cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; exit 1; }

if [ ${#names[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do n=$(basename "$f" .c); names+=("${n#fuzz_}"); done
fi
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
common=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -detect_leaks=0 -close_fd_mask=3)
# fuzz_one NAME: replay NAME's regression inputs, then fuzz it; prints its summary, returns 1 on a finding
fuzz_one() {
  local n="$1" exe findings scratch seeds regress log own run budget execs
  exe="$build/bin/fuzz_$n"
  findings="$build/findings/$n"; scratch="$build/corpus/$n"
  rm -rf "$findings"; mkdir -p "$findings" "$scratch"
  seeds="$root/tests/fuzz/corpus/$n"; mkdir -p "$seeds"
  regress=(); [ -d "tests/fuzz/regress/$n" ] && mapfile -t regress < <(find "$root/tests/fuzz/regress/$n" -type f | sort)
  log="$build/fuzz_$n.log"
  own=(); [ -f "tests/fuzz/fuzz_$n.options" ] && mapfile -t own < <(grep -vE "^[[:space:]]*(#|$)" "tests/fuzz/fuzz_$n.options")
  # the harnesses run in $run: what their child processes leave (the checkpoint reader tries HDF5 in a child, whose
  # sanitizer report on HDF5's own faults lands in a .<pid> file of the working directory) stays out of the sources
  run="$build/run/$n"; mkdir -p "$run"
  if [ ${#regress[@]} -gt 0 ] && ! (cd "$run" && "$exe" "${common[@]}" "${own[@]}" -artifact_prefix="$findings/" \
       "${regress[@]}") >"$log" 2>&1; then
    echo "fuzz $n: FAIL on a regression input (tests/fuzz/regress/$n): see $log"; tail -30 "$log"; return 1
  fi
  budget=(-max_total_time="$seconds"); [ -n "$runs" ] && budget=(-runs="$runs")
  if (cd "$run" && "$exe" "${common[@]}" "${own[@]}" "${budget[@]}" -print_final_stats=1 -artifact_prefix="$findings/" \
       "$scratch" "$seeds") >>"$log" 2>&1; then
    execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | tail -1 | grep -oE "[0-9]+$" || echo "?")
    echo "fuzz $n: ok, ${#regress[@]} regression inputs, $execs executions, corpus $(ls "$scratch" | wc -l) inputs"
  else
    echo "fuzz $n: FINDING: see $log"; grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*Test unit written)" "$log" | head -8
    # the artifacts the log names (the checkpoint reader's probe children also leave crash-* files there for the
    # HDF5 faults they contain, which are refusals, not findings)
    grep -oE "Test unit written to [^ ]+" "$log" | awk '{print $5}' | sort -u | while read -r a; do
      echo "  reproduce: $exe $a"
    done
    return 1
  fi
}
for n in "${names[@]}"; do
  [ -x "$build/bin/fuzz_$n" ] || { echo "error: fuzz.sh: no harness fuzz_$n (tests/fuzz/fuzz_$n.c)" >&2; exit 2; }
done
# --jobs harnesses at a time (each is one process on one core), their summaries printed in the names' order
out="$build/summaries"; rm -rf "$out"; mkdir -p "$out"
for n in "${names[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
  (if fuzz_one "$n" >"$out/$n.txt" 2>&1; then echo 0; else echo 1; fi >"$out/$n.rc") &
done
wait
status=0
for n in "${names[@]}"; do
  cat "$out/$n.txt"
  [ "$(cat "$out/$n.rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
