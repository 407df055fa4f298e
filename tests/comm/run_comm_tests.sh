#!/usr/bin/env bash
# Runs tests/comm/test_comm (or test_comm_nccl: case nccl2) under mpirun (oversubscribed: CI has 2 cores) or alone.
#   run_comm_tests.sh <test_comm binary> single|np1|np2|np4|fail|fail0|mismatch|agree|agree_stop1|agree_stop0
# Exits 77 (SKIP) when mpirun is missing. A hang fails the test through `timeout` (60 s alone, 180 s under mpirun).
set -u
bin="$1"; case_="$2"
single() { timeout 60 "$bin" "$@"; }
if [ "$case_" != single ]; then
  MPIRUN=$(command -v mpirun || command -v mpiexec || true)
  if [ -z "$MPIRUN" ]; then echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; fi
  mpi_args=(--oversubscribe)
  [ "$(id -u)" -eq 0 ] && mpi_args+=(--allow-run-as-root)
  # idle ranks yield the core instead of spinning (4 ranks share 2 cores); only the loopback and shared
  # memory transports, so no network probing in containers
  export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
fi
# a hang guard, not a speed test: under a busy machine's oversubscribed MPI the "all" cases have taken 40-60 s (0.8 s
# idle), so the guard is 180 s, and a run it stops says so
run_np() {
  local np=$1 rc
  shift
  timeout 180 "$MPIRUN" "${mpi_args[@]}" -np "$np" "$bin" "$@"; rc=$?
  [ $rc -eq 124 ] && echo "timed out: mpirun -np $np $* did not finish in 180 s" >&2
  return $rc
}

# fail_case <np> <rank> <expected message prefix>: the job ends fast, non-zero, with the rank's message
fail_case() {
  local np=$1 who=$2 expect=$3 err t0 t1 rc
  err=$(mktemp)
  t0=$(date +%s.%N)
  run_np "$np" fail "$who" 2>"$err" >/dev/null
  rc=$?
  t1=$(date +%s.%N)
  local secs; secs=$(echo "$t1 - $t0" | bc)
  echo "fail on rank $who of $np: exit status $rc after $secs s"
  sed -n '1,6p' "$err"
  local ok=1
  [ "$rc" -ne 0 ] || { echo "FAIL: the job exited 0"; ok=0; }
  [ "$rc" -ne 124 ] || { echo "FAIL: the job hung (killed by timeout 60)"; ok=0; }
  [ "$(echo "$secs < 10" | bc)" -eq 1 ] || { echo "FAIL: took $secs s, more than 10 s"; ok=0; }
  grep -qF "$expect deliberate failure on world rank $who of $np" "$err" || { echo "FAIL: message '$expect' missing"; ok=0; }
  if [ "$who" -eq 0 ] && grep -q "error: \[rank" "$err"; then echo "FAIL: rank 0's message carries a rank prefix"; ok=0; fi
  rm -f "$err"
  [ $ok -eq 1 ] && echo PASS
  [ $ok -eq 1 ]
}

case "$case_" in
  single) out=$(single all) || { echo "$out"; echo "FAIL: exit status $?"; exit 1; }
          echo "$out"; echo "$out" | grep -q "PASS: 1 ranks" ;;
  np1) run_np 1 all ;;
  np2) run_np 2 all ;;
  np3) run_np 3 all ;;
  np4) run_np 4 all ;;
  nccl2) run_np 2 ;;
  fail) fail_case 4 1 "error: [rank 1] test_comm:" ;;
  fail0) fail_case 2 0 "error: test_comm:" ;;
  agree|agree_stop1|agree_stop0)
    # zt_comm_agree: a differing rank, or a stopped one (SIGSTOP: 2 s timeout), ends the job fast, naming it
    case "$case_" in
      agree) np=3; args=(agree 2)
             expect='error: inconsistent ranks: world rank 2 disagrees with world rank 0 on the test text: "text" on world rank 0, "text of rank 2" on world rank 2 (1 of 3 ranks differ from world rank 0: 2)' ;;
      agree_stop1) np=3; args=(agree_stop 1)
             expect="error: comm: zt_comm_agree on group of 3 (world ranks 0,1,2): world rank 0 waited 2 s for every rank's report on the test text; world rank 1 sent none" ;;
      agree_stop0) np=2; args=(agree_stop 0)
             expect="error: [rank 1] comm: zt_comm_agree on group of 2 (world ranks 0,1): world rank 1 waited 4 s for world rank 0 to confirm that all ranks agree on the test text; it did not answer" ;;
    esac
    err=$(mktemp); out=$(mktemp)
    t0=$(date +%s.%N)
    run_np "$np" "${args[@]}" 2>"$err" >"$out"; rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    echo "$case_: exit status $rc after $secs s"; sed -n '1,3p' "$err"
    ok=0
    grep -qF -- "$expect" "$err" || { echo "FAIL: message missing: $expect"; ok=1; }
    { [ $rc -ne 0 ] && [ $rc -ne 124 ]; } || { echo "FAIL: exit status $rc"; ok=1; }
    [ "$(echo "$secs < 15" | bc)" -eq 1 ] || { echo "FAIL: took $secs s"; ok=1; }
    if [ "$case_" = agree ]; then grep -q "agreed on equal texts" "$out" || { echo "FAIL: equal texts refused"; ok=1; }; fi
    ! grep -q "^FAIL" "$err" || { echo "FAIL: a rank went on past the agreement"; ok=1; }
    rm -f "$err" "$out"; [ $ok -eq 0 ] && echo PASS; exit $ok ;;
  mismatch)
    err=$(mktemp)
    run_np 2 mismatch 2>"$err" >/dev/null; rc=$?
    sed -n '1,4p' "$err"
    grep -q "error: \[rank 1\] comm: zt_recv_f32 on group of 2 (world ranks 0,1) (2 floats from group rank 0) failed" \
      "$err" && [ $rc -ne 0 ] && [ $rc -ne 124 ]; ok=$?
    rm -f "$err"; [ $ok -eq 0 ] && echo PASS; exit $ok ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac
