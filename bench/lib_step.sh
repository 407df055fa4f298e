# Sourced by the step benchmarks (bench/*_step.sh, cpu_step_ab.sh): medians of logged iteration times.
# med VALUE...: the median of the values.
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# per_iter LOG: the median "elapsed time per iteration (ms)" of the log's iterations after the first two.
per_iter() {
  # shellcheck disable=SC2046
  med $(grep -E "^ iteration " "$1" | sed -E 's/.*elapsed time per iteration \(ms\): *([0-9.]+).*/\1/' | tail -n +3)
}
