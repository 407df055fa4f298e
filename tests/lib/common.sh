# Sourced by the shell tests: PASS/FAIL lines and counters, the mpirun command used on the test machines,
# fields of Megatron's log line, and relative comparison of value lists.
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
# As root, OpenMPI needs --allow-run-as-root; the test machines have fewer cores than ranks.
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
# The values of "<key>: <value>" on the log lines that have the key, space-separated.
field() { grep -E "^ iteration " <<<"$1" | grep -F "$2:" | sed -E "s/.*$2: *([0-9.E+-]+).*/\1/" | tr '\n' ' '; }
# Two space-separated lists of equal length within a relative tolerance (exit status).
close() {
  awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { n = split(a, x, " "); m = split(b, y, " "); if (n != m || n == 0) exit 1;
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
      if (d > tol * s + 1e-12) exit 1 } }'
}
# Whether some line of text $2 ends with $1: another rank's output that mpirun relays at the same moment may
# precede a rank's line on the same output line.
ends_line() { awk -v w="$1" 'length($0) >= length(w) && substr($0, length($0) - length(w) + 1) == w { f = 1 }
                            END { exit !f }' <<<"$2"; }
