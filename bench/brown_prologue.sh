# Sourced by the benchmarks that run on the Brown corpus with GPT-2's files (preprocess_bench.sh, analyze_data.sh,
# hf_tokenizer.sh) once they are in the repository root with BUILD set. Defines CACHE, INPUT, VOCAB and MERGES (under
# $ZT_DATA_CACHE or ~/.cache/zerotron) and median() (of numbers on stdin); `bench_brown NAME BINARY...` builds build/
# when a binary is missing there (another BUILD missing one stops, naming them), fetches the corpus and the GPT-2
# files when absent, makes OUT (a temporary directory, removed at exit) and prints the machine line.
CACHE="${ZT_DATA_CACHE:-$HOME/.cache/zerotron}"
INPUT="$CACHE/brown/brown.jsonl"
VOCAB="$CACHE/gpt2/gpt2-vocab.json"
MERGES="$CACHE/gpt2/gpt2-merges.txt"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

bench_brown() {
  local name=$1 b missing=()
  shift
  for b in "$@"; do [[ -x $BUILD/$b ]] || missing+=("$BUILD/$b"); done
  if ((${#missing[@]})); then
    if [[ $BUILD == build ]]; then bash scripts/build.sh >/dev/null; else
      echo "error: $name: ${missing[*]} missing (build first)" >&2
      exit 1
    fi
  fi
  [[ -f $INPUT && -f $VOCAB && -f $MERGES ]] || bash scripts/fetch_data.sh >/dev/null
  OUT="$(mktemp -d)"
  trap 'rm -rf "$OUT"' EXIT
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //');" \
    "cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
}
