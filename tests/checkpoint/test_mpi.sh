#!/usr/bin/env bash
# Checkpoints under data parallelism (mpirun, label mpi; docs/checkpoints.md): every data-parallel rank writes its
# optimizer partition (DeepSpeed's zero_pp_rank_<d> files with slice mappings), rank 0 the model states;
#  - DP=2: 8 iterations straight = 4, save, exit, resume 4: identical losses and bitwise equal files;
#  - a DP=2 checkpoint loads into 1 process, and a 1-process checkpoint into DP=2: the reassembled weights and
#    optimizer states (an independent h5py reassembly) are bitwise those saved, and training continues with the
#    same losses (to the all-reduce's rounding, 1e-5);
#  - rank 0 killed in the middle of a DP=2 save: the job ends, the previous checkpoint resumes to the same result;
#  - tensor parallelism (TP=2, one model-state file per tensor-parallel rank holding its slices, full shapes and
#    offsets) and ZeRO stages 1 and 2 (each rank writes the partition it owns): exact resume, and checkpoints
#    resharded between TP=1, TP=2, TP=2 x DP=2, ZeRO and no ZeRO, bitwise (vocabulary padding adapted);
#  - pipeline parallelism (PP=2: a file per stage): exact resume, PP=2 -> 1 process -> PP=2 x TP=2 bitwise; the
#    interleaved schedule (PP=4 x 2 chunks): exact resume, -> 1 process -> interleaved bitwise, and its final
#    weights after 8 iterations equal to one process's (1e-5).
# Usage: test_mpi.sh PRETRAIN_GPT PYTHON   (SKIP 77 without mpirun or h5py)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; py="${2:-/usr/bin/python3}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
"$py" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $py"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
mpi=(timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 8 --mock-data --vocab-size 100 --lr 1e-3 --log-interval 1
      --eval-interval 4 --eval-iters 1 --train-iters 8)
losses() { grep -E "^ iteration " <<<"$1" | sed -E 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*/\2/' | tr '\n' ' '; }
vals() { grep -F "validation loss at" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }
close() {
  awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { n = split(a, x, " "); m = split(b, y, " "); if (n != m || n == 0) exit 1;
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
      if (d > tol * s + 1e-12) exit 1 } }'
}

a=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --save A2 --save-interval 4 2>&1) || { bad "DP=2 straight" "$(tail -3 <<<"$a")"; }
b1=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --save B2 --exit-interval 4 2>&1) || bad "DP=2 first half" "$(tail -3 <<<"$b1")"
b2=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --save B2 --save-interval 4 --load B2 2>&1) || bad "DP=2 resume" "$(tail -3 <<<"$b2")"
[ -f A2/global_step8/zero_pp_rank_0_mp_rank_00_optim_states.h5 ] && [ -f A2/global_step8/zero_pp_rank_1_mp_rank_00_optim_states.h5 ] &&
  [ "$(ls A2/global_step8 | grep -c model_states)" == 1 ] && ok "DP=2: one model-state file, two optimizer partitions" || bad "DP=2 files" "$(ls A2/global_step8)"
[ -n "$(losses "$a")" ] && [ "$(losses "$a")" == "$(losses "$b1")$(losses "$b2")" ] &&
  ok "DP=2: losses of 8 straight = 4 + resume 4" || bad "DP=2 losses" "'$(losses "$a")' vs '$(losses "$b1")$(losses "$b2")'"
cmp=$("$py" "$here/h5_oracle.py" same A2/global_step8 B2/global_step8 2>&1) && ok "DP=2: final checkpoints bitwise equal ($cmp)" || bad "DP=2 files" "$cmp"
cmp=$("$py" "$here/h5_oracle.py" check A2/global_step8 2>&1) && ok "DP=2: slice mappings cover every tensor ($cmp)" || bad "DP=2 mappings" "$cmp"

# DP=2 -> 1 process -> DP=2: states reassembled bitwise
out=$(timeout 300 "$bin" "${tiny[@]}" --load A2 --save C1 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full A2/global_step8 C1/global_step8 2>&1)
[ $rc -eq 0 ] && [ "$(ls C1/global_step8 | grep -c optim)" == 1 ] && [ -n "$cmp" ] && grep -q "^equal" <<<"$cmp" &&
  ok "DP=2 checkpoint loaded into 1 process and saved again: $cmp" || bad "DP=2 -> 1" "rc=$rc $cmp $(tail -2 <<<"$out")"
out=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --load C1 --save D2 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full C1/global_step8 D2/global_step8 2>&1)
[ $rc -eq 0 ] && [ "$(ls D2/global_step8 | grep -c optim)" == 2 ] && grep -q "^equal" <<<"$cmp" &&
  ok "1-process checkpoint loaded into DP=2 and saved again: $cmp" || bad "1 -> DP=2" "rc=$rc $cmp $(tail -2 <<<"$out")"
# continue training in another layout: DP=2 saved at 4, resumed by 1 process
out=$(timeout 300 "$bin" "${tiny[@]}" --load B2 --load-tag global_step4 2>&1); rc=$?
ref=$(losses "$a" | cut -d' ' -f5-8); got=$(losses "$out")
[ $rc -eq 0 ] && close "$ref" "$got" 1e-5 && ok "DP=2 checkpoint resumed by 1 process: losses 5-8 equal to 1e-5 ($got)" ||
  bad "DP=2 -> 1 resume" "rc=$rc '$ref' vs '$got'"

# rank 0 killed during the second DP=2 save (its 17th write phase: the model file, half written)
rm -rf K2
"${mpi[@]}" -np 2 -x ZT_CKPT_TEST_KILL_AT=17 "$bin" "${tiny[@]}" --save K2 --save-interval 4 > kill.log 2>&1; rc=$?
latest=$(cat K2/latest 2>/dev/null)
out=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --save K2 --save-interval 4 --load K2 2>&1); rc2=$?
cmp=$("$py" "$here/h5_oracle.py" same A2/global_step8 K2/global_step8 2>&1)
[ $rc -ne 0 ] && grep -q "ZT_CKPT_TEST_KILL_AT=17: killing" kill.log && [ "$latest" == "global_step4" ] && [ $rc2 -eq 0 ] &&
  grep -q "^equal" <<<"$cmp" && ok "DP=2 save killed on rank 0: latest stays global_step4, resume ends bitwise equal" ||
  bad "DP=2 kill" "rc=$rc latest=$latest rc2=$rc2 $cmp $(tail -2 kill.log)"

# tensor parallelism
tp2=(--tensor-model-parallel-size 2)
a=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${tp2[@]}" --save T2 --save-interval 4 2>&1) || bad "TP=2 straight" "$(tail -3 <<<"$a")"
b1=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${tp2[@]}" --save T2b --exit-interval 4 2>&1) || bad "TP=2 first half" "$(tail -3 <<<"$b1")"
b2=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${tp2[@]}" --save T2b --save-interval 4 --load T2b 2>&1) || bad "TP=2 resume" "$(tail -3 <<<"$b2")"
cmp=$("$py" "$here/h5_oracle.py" same T2/global_step8 T2b/global_step8 2>&1)
[ -f T2/global_step8/mp_rank_01_model_states.h5 ] && [ -f T2/global_step8/zero_pp_rank_0_mp_rank_01_optim_states.h5 ] &&
  [ "$(losses "$a")" == "$(losses "$b1")$(losses "$b2")" ] && grep -q "^equal" <<<"$cmp" &&
  ok "TP=2: mp_rank_00/01 files; 8 straight = 4 + resume 4, losses and files bitwise ($cmp)" || bad "TP=2 resume" "$cmp"
out=$(timeout 300 "$bin" "${tiny[@]}" --load T2 --save T1 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full T2/global_step8 T1/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "TP=2 checkpoint (vocabulary padded to 256) loaded into 1 process (128): $cmp" ||
  bad "TP=2 -> 1" "rc=$rc $cmp $(tail -2 <<<"$out")"
out=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${tp2[@]}" --load T1 --save T22 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full T1/global_step8 T22/global_step8 2>&1)
[ $rc -eq 0 ] && [ "$(ls T22/global_step8 | grep -c optim)" == 4 ] && grep -q "^equal" <<<"$cmp" &&
  ok "1-process checkpoint loaded into TP=2 x DP=2: $cmp" || bad "1 -> TP2xDP2" "rc=$rc $cmp $(tail -2 <<<"$out")"

# pipeline parallelism: one model-state file per stage (mp_rank = pp x TP + tp), the last stage's copy of the tied
# embeddings ("word_embeddings.weight") stands in for the embedding across pipeline layouts
pp2=(--pipeline-model-parallel-size 2)
a=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${pp2[@]}" --save P2 --save-interval 4 2>&1) || bad "PP=2 straight" "$(tail -3 <<<"$a")"
b1=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${pp2[@]}" --save P2b --exit-interval 4 2>&1) || bad "PP=2 first half" "$(tail -3 <<<"$b1")"
b2=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${pp2[@]}" --save P2b --save-interval 4 --load P2b 2>&1) || bad "PP=2 resume" "$(tail -3 <<<"$b2")"
cmp=$("$py" "$here/h5_oracle.py" same P2/global_step8 P2b/global_step8 2>&1)
[ -f P2/global_step8/mp_rank_01_model_states.h5 ] && [ "$(vals "$a")" == "$(vals "$b1")$(vals "$b2")" ] && grep -q "^equal" <<<"$cmp" &&
  ok "PP=2: a file per stage; 8 straight = 4 + resume 4, validation losses and files bitwise ($cmp)" || bad "PP=2 resume" "$cmp"
out=$(timeout 300 "$bin" "${tiny[@]}" --load P2 --save P1 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full P2/global_step8 P1/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "PP=2 checkpoint loaded into 1 process: $cmp" || bad "PP=2 -> 1" "rc=$rc $cmp $(tail -2 <<<"$out")"
out=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${pp2[@]}" "${tp2[@]}" --load P1 --save P22 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full P1/global_step8 P22/global_step8 2>&1)
[ $rc -eq 0 ] && [ -f P22/global_step8/mp_rank_03_model_states.h5 ] && grep -q "^equal" <<<"$cmp" &&
  ok "1-process checkpoint loaded into PP=2 x TP=2 (4 model-parallel files): $cmp" || bad "1 -> PP2xTP2" "rc=$rc $cmp $(tail -2 <<<"$out")"

# the interleaved schedule: stage s holds layers s and s+4 of 8 under their global names, so its checkpoint loads
# into any layout; exact resume, PP=4 x 2 chunks -> 1 process -> PP=4 x 2 chunks bitwise
il=(--num-layers 8 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1)
a=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${il[@]}" --save I4 --save-interval 4 2>&1) || bad "interleaved straight" "$(tail -3 <<<"$a")"
b1=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${il[@]}" --save I4b --exit-interval 4 2>&1) || bad "interleaved first half" "$(tail -3 <<<"$b1")"
b2=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${il[@]}" --save I4b --save-interval 4 --load I4b 2>&1) || bad "interleaved resume" "$(tail -3 <<<"$b2")"
cmp=$("$py" "$here/h5_oracle.py" same I4/global_step8 I4b/global_step8 2>&1)
[ -f I4/global_step8/mp_rank_03_model_states.h5 ] && [ -n "$(losses "$a")" ] && [ "$(losses "$a")" == "$(losses "$b1")$(losses "$b2")" ] &&
  grep -q "^equal" <<<"$cmp" && ok "interleaved PP=4: 8 straight = 4 + resume 4, losses and files bitwise ($cmp)" || bad "interleaved resume" "$cmp"
out=$(timeout 300 "$bin" "${tiny[@]}" --num-layers 8 --load I4 --save I1 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full I4/global_step8 I1/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "interleaved PP=4 checkpoint loaded into 1 process: $cmp" || bad "interleaved -> 1" "rc=$rc $cmp $(tail -2 <<<"$out")"
out=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${il[@]}" --load I1 --save I4c 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full I1/global_step8 I4c/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "1-process checkpoint loaded into interleaved PP=4: $cmp" || bad "1 -> interleaved" "rc=$rc $cmp $(tail -2 <<<"$out")"
# and trained: 8 iterations with dropout interleaved and in one process end with the same weights and states
one=$(timeout 300 "$bin" "${tiny[@]}" --num-layers 8 --save IO1 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" close I4/global_step8 IO1/global_step8 1e-5 8 2>&1)
[ $rc -eq 0 ] && grep -q "^close" <<<"$cmp" && close "$(losses "$one")" "$(losses "$a")" 1e-5 &&
  ok "interleaved PP=4 and one process after 8 iterations: losses 1e-5, $cmp" || bad "interleaved = 1 process" "rc=$rc $cmp"

# ZeRO stages 1 and 2 (bf16: DeepSpeed's bf16_ prefix)
for st in 1 2; do
  printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "bf16": {"enabled": true},
           "zero_optimization": {"stage": %d, "reduce_bucket_size": 1000, "allgather_bucket_size": 1000}}\n' $st > z$st.json
  ds=(--deepspeed --deepspeed_config z$st.json)
  a=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${ds[@]}" --save Z$st --save-interval 4 2>&1) || bad "ZeRO-$st straight" "$(tail -3 <<<"$a")"
  b1=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${ds[@]}" --save Z${st}b --exit-interval 4 2>&1) || bad "ZeRO-$st first half" "$(tail -3 <<<"$b1")"
  b2=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "${ds[@]}" --save Z${st}b --save-interval 4 --load Z${st}b 2>&1) || bad "ZeRO-$st resume" "$(tail -3 <<<"$b2")"
  cmp=$("$py" "$here/h5_oracle.py" same Z$st/global_step8 Z${st}b/global_step8 2>&1)
  [ -f Z$st/global_step8/bf16_zero_pp_rank_1_mp_rank_00_optim_states.h5 ] && [ "$(losses "$a")" == "$(losses "$b1")$(losses "$b2")" ] &&
    grep -q "^equal" <<<"$cmp" && ok "ZeRO-$st DP=2 bf16: 8 straight = 4 + resume 4, losses and files bitwise" || bad "ZeRO-$st resume" "$cmp"
done
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "bf16": {"enabled": true}}\n' > z0.json
out=$(timeout 300 "$bin" "${tiny[@]}" --deepspeed --deepspeed_config z0.json --load Z2 --save Z0 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full Z2/global_step8 Z0/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "ZeRO-2 DP=2 checkpoint loaded without ZeRO in 1 process: $cmp" || bad "ZeRO-2 -> 0" "rc=$rc $cmp"
out=$("${mpi[@]}" -np 4 "$bin" "${tiny[@]}" "${tp2[@]}" --deepspeed --deepspeed_config z1.json --load Z0 --save Z1T 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full Z0/global_step8 Z1T/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "that checkpoint loaded into ZeRO-1 with TP=2 x DP=2: $cmp" || bad "0 -> ZeRO-1 TP2xDP2" "rc=$rc $cmp $(tail -2 <<<"$out")"

# ZeRO-1 with offload_optimizer nvme: the states are read back from the swap files for the checkpoint (equal to
# the in-memory run's), and written into them when loading
mkdir -p nv
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "bf16": {"enabled": true},
         "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "nvme", "nvme_path": "%s/nv"}}}\n' "$PWD" > off.json
out=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --deepspeed --deepspeed_config off.json --save O1 2>&1); rc=$?
cmp=$("$py" "$here/h5_oracle.py" full O1/global_step8 Z1/global_step8 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "ZeRO-1 offload_optimizer nvme: checkpoint equal to the in-memory run's ($cmp)" ||
  bad "offload save" "rc=$rc $cmp $(tail -2 <<<"$out")"
# exact resume with the optimizer state on NVMe: loading writes the partition's state into the swap files
ob1=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --deepspeed --deepspeed_config off.json --save O1b --exit-interval 4 2>&1) ||
  bad "offload first half" "$(tail -3 <<<"$ob1")"
ob2=$("${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --deepspeed --deepspeed_config off.json --save O1b --load O1b 2>&1) ||
  bad "offload resume" "$(tail -3 <<<"$ob2")"
cmp=$("$py" "$here/h5_oracle.py" same O1/global_step8 O1b/global_step8 2>&1)
[ "$(losses "$out")" == "$(losses "$ob1")$(losses "$ob2")" ] && grep -q "^equal" <<<"$cmp" && [ -z "$(find nv -type f)" ] &&
  ok "ZeRO-1 offload_optimizer nvme: 8 straight = 4 + resume 4 into the swap files, losses and files bitwise" ||
  bad "offload resume" "'$(losses "$out")' vs '$(losses "$ob1")$(losses "$ob2")' $cmp"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
