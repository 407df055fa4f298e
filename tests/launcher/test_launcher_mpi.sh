#!/usr/bin/env bash
# A real launch: zt_deepspeed --num_gpus 2 with no hostfile (so localhost) starts pretrain_gpt (tiny mock-data
# model, 2 iterations) on 2 MPI ranks; pretrain_gpt must report data_parallel_size 2 and finish. Also the exit
# status of the program passes through mpirun and the launcher.
# Usage: test_launcher_mpi.sh ZT_DEEPSPEED PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
zt="$1"; gpt="$2"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
unset CUDA_VISIBLE_DEVICES ZT_LAUNCHER_DRY_RUN
export OMP_NUM_THREADS=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
tiny=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16
      --mock-data --vocab-size 64 --lr 1e-3 --train-iters 2 --log-interval 1 --micro-batch-size 1 --eval-iters 0)
out=$(timeout 240 "$zt" --hostfile "$tmp/no_such_hostfile" --num_gpus 2 \
      --launcher_args "--oversubscribe --bind-to none" "$gpt" "${tiny[@]}" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -qE "data_parallel_size \.+ 2$" <<<"$out" && grep -qE "^ iteration +2/ +2 " <<<"$out" \
   && grep -q "Unable to find hostfile, will proceed with training with local resources only." <<<"$out" \
   && grep -q "cmd = mpirun .*-n 2 --host localhost:2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500" <<<"$out"; then
  ok "pretrain_gpt on 2 ranks through zt_deepspeed"
else
  bad "pretrain_gpt on 2 ranks" "rc=$rc"; echo "$out" | tail -8
fi
# an explicit hostfile naming this machine, with an .deepspeed_env variable reaching every rank
printf 'localhost slots=2\n' > hostfile
printf 'ZT_LAUNCHER_TEST_VAR = hello world\n' > .deepspeed_env
out=$(timeout 60 "$zt" -H hostfile --master_addr 127.0.0.1 --launcher_args "--oversubscribe" \
      sh -c 'echo "rank=$OMPI_COMM_WORLD_RANK var=$ZT_LAUNCHER_TEST_VAR port=$MASTER_PORT"' 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "rank=0 var=hello world port=29500" <<<"$out" && grep -q "rank=1 var=hello world" <<<"$out"; then
  ok "hostfile run, .deepspeed_env exported to both ranks"
else
  bad "hostfile run" "rc=$rc"; echo "$out" | tail -5
fi
rm -f .deepspeed_env
# the program's exit status comes back
timeout 60 "$zt" --hostfile "$tmp/none" --num_gpus 1 sh -c 'exit 3' >/dev/null 2>&1
rc=$?
if [ $rc -eq 3 ]; then ok "exit status 3 passes through"; else bad "exit status" "got $rc, want 3"; fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
