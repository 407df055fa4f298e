#!/usr/bin/env bash
# A rank that dies in the middle of training ends the whole job: no surviving rank hangs in a collective.
# Rank 1 of 2 is killed (SIGKILL, as the OOM killer would) after the first log lines; the job must end
# non-zero well before its natural end, with no pretrain_gpt process left behind. Also a rank that stops on
# its own error (zt_fatal -> MPI_Abort) while the other waits in an all-reduce.
# Usage: test_mpi_failure.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
long=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --mock-data --vocab-size 256 --lr 1e-3 --train-iters 100000 --log-interval 10 --eval-interval 100000
      --eval-iters 1 --micro-batch-size 2 --global-batch-size 4)

# 1. SIGKILL of rank 1 while both ranks train
start=$(date +%s)
timeout 120 "${mpi[@]}" -np 2 "$bin" "${long[@]}" >"$tmp/out" 2>&1 &
job=$!
for _ in $(seq 100); do grep -q "^ iteration " "$tmp/out" && break; sleep 0.2; done
pids=($(pgrep -f "pretrain_gpt.*--train-iters 100000"))
victim=""
for p in "${pids[@]}"; do # the rank-1 process: OMPI_COMM_WORLD_RANK=1 in its environment
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$p
done
if [ -z "$victim" ]; then
  bad "SIGKILL of rank 1" "rank 1 not found among ${pids[*]:-none}; output: $(tail -3 "$tmp/out")"
  kill "$job" 2>/dev/null
else
  kill -9 "$victim"
  wait "$job"
  rc=$?
  took=$(( $(date +%s) - start ))
  left=$(pgrep -f "pretrain_gpt.*--train-iters 100000" | wc -l)
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$left" -eq 0 ]; then
    ok "SIGKILL of rank 1 ends the job (rc=$rc after ${took}s, no rank left)"
  else
    bad "SIGKILL of rank 1" "rc=$rc after ${took}s, $left processes left; $(tail -3 "$tmp/out")"
    pkill -9 -f "pretrain_gpt.*--train-iters 100000"
  fi
fi

# 2. an error on one rank only (its ds_config is missing) while rank 0 goes on to training and waits in
#    the first collective: rank 1's zt_fatal aborts the job (MPI_Abort) with rank 1's message
printf '%s\n' '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}' > "$tmp/ds.json"
cat > "$tmp/wrap.sh" <<WRAP
#!/usr/bin/env bash
if [ "\${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then cfg=$tmp/missing.json; else cfg=$tmp/ds.json; fi
exec "$bin" "\$@" --deepspeed --deepspeed_config "\$cfg"
WRAP
chmod +x "$tmp/wrap.sh"
start=$(date +%s)
out=$(timeout 120 "${mpi[@]}" -np 2 "$tmp/wrap.sh" "${long[@]}" 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
# (rank 1's stderr may interleave with rank 0's stdout in mpirun's merged output: match the two parts)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF "error: [rank 1] ds_config:" <<<"$out" \
   && grep -qF "$tmp/missing.json: cannot open the DeepSpeed config file" <<<"$out"; then
  ok "an error on rank 1 alone ends the job with rank 1's message (rc=$rc after ${took}s)"
else
  bad "error on rank 1" "rc=$rc after ${took}s: $(grep -m2 error <<<"$out")"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
