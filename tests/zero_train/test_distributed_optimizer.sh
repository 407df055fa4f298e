#!/usr/bin/env bash
# Megatron's --use-distributed-optimizer without --deepspeed (docs/zero.md "Megatron's distributed optimizer"): the
# optimizer state partitioned over the data-parallel ranks as ZeRO stage 1 (label mpi; SKIP without mpirun):
#  - DP=2 with it = DP=2 without it (fp32, bf16, fp16 with Megatron's dynamic scaler; losses, grad norms and
#    validations to 1e-6), and DP=2 x TP=2 likewise;
#  - the memory plan's optimizer state halves at DP=2; the start-up line; the argument dump;
#  - a checkpoint (one optimizer shard per rank) resumes as the uninterrupted run, also without the flag and in one
#    process;
#  - refused with --deepspeed, and with --DDP-impl torch (Megatron's assert).
# Usage: test_distributed_optimizer.sh PRETRAIN_GPT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
      --micro-batch-size 2 --global-batch-size 4 --mock-data --vocab-size 128 --make-vocab-size-divisible-by 64
      --lr 1e-3 --log-interval 1 --eval-interval 3 --eval-iters 1 --train-iters 6)
np2() { timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" "$@" 2>&1; }
vals() { grep -F "validation loss at" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }
opt() { sed -nE 's/.*memory plan \(MiB\):.*optimizer state ([0-9.]+) .*/\1/p' <<<"$1" | head -1; }
same() { # NAME A B
  if [ "$(field "$2" "lm loss" | wc -w)" -ge 3 ] && close "$(field "$2" "lm loss")" "$(field "$3" "lm loss")" 1e-6 &&
     close "$(vals "$2")" "$(vals "$3")" 1e-6 && [ "$(field "$2" "grad norm")" == "$(field "$3" "grad norm")" ]; then
    ok "$1"
  else
    bad "$1" "'$(field "$2" "lm loss")' vs '$(field "$3" "lm loss")' $(grep -m1 error <<<"$3")"
  fi
}

for mp in "" "--bf16" "--fp16 --initial-loss-scale 1024"; do
  # shellcheck disable=SC2086
  a=$(np2 $mp)
  # shellcheck disable=SC2086
  b=$(np2 $mp --use-distributed-optimizer)
  same "DP=2 ${mp:-fp32}: with the distributed optimizer = without" "$a" "$b"
done
grep -q "^> --use-distributed-optimizer: [0-9]* parameters, the optimizer state and fp32 masters in 2 partitions" <<<"$b" &&
  grep -qE "^  use_distributed_optimizer \.+ True$" <<<"$b" && ok "the start-up line and the argument dump" ||
  bad "start-up line" "$(grep -E "distributed" <<<"$b" | head -2)"
a=$(np2) b=$(np2 --use-distributed-optimizer)
awk -v x="$(opt "$a")" -v y="$(opt "$b")" 'BEGIN { exit !(y > 0 && y < x * 0.6) }' &&
  ok "the optimizer state per rank: $(opt "$a") -> $(opt "$b") MiB" || bad "optimizer state" "$(opt "$a") -> $(opt "$b")"
a=$(timeout 300 "${mpi[@]}" -np 4 "$bin" "${tiny[@]}" --tensor-model-parallel-size 2 2>&1)
b=$(timeout 300 "${mpi[@]}" -np 4 "$bin" "${tiny[@]}" --tensor-model-parallel-size 2 --use-distributed-optimizer 2>&1)
same "DP=2 x TP=2: with the distributed optimizer = without" "$a" "$b"

full=$(np2 --use-distributed-optimizer)
np2 --use-distributed-optimizer --save ck --exit-interval 3 >/dev/null
[ -f ck/global_step3/zero_pp_rank_0_mp_rank_00_optim_states.h5 ] &&
  [ -f ck/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.h5 ] && ok "the checkpoint: one optimizer shard per rank" ||
  bad "checkpoint files" "$(ls ck/global_step3 2>&1)"
tail3() { grep -E "^ iteration +[456]/" <<<"$1"; }
for how in "--use-distributed-optimizer" ""; do
  # shellcheck disable=SC2086
  r=$(np2 $how --load ck)
  close "$(field "$r" "lm loss")" "$(field "$(tail3 "$full")" "lm loss")" 1e-6 && [ -n "$(field "$r" "lm loss")" ] &&
    ok "resumed at DP=2 ${how:-without the flag}: iterations 4-6 as uninterrupted" ||
    bad "resume $how" "'$(field "$r" "lm loss")' vs '$(field "$(tail3 "$full")" "lm loss")' $(grep -m1 error <<<"$r")"
done
r=$(timeout 300 "$bin" "${tiny[@]}" --load ck 2>&1)
close "$(field "$r" "lm loss")" "$(field "$(tail3 "$full")" "lm loss")" 1e-6 && [ -n "$(field "$r" "lm loss")" ] &&
  ok "resumed in one process: iterations 4-6 as uninterrupted" || bad "one-process resume" "$(grep -m1 error <<<"$r")"

printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}\n' > ds.json
out=$(timeout 60 "$bin" "${tiny[@]}" --use-distributed-optimizer --deepspeed --deepspeed_config ds.json 2>&1)
grep -qF "error: inconsistent arguments: --use-distributed-optimizer with --deepspeed" <<<"$out" &&
  ok "refused with --deepspeed (zero_optimization.stage 1 named)" || bad "with --deepspeed" "$(grep -m1 error <<<"$out")"
out=$(timeout 60 "$bin" "${tiny[@]}" --use-distributed-optimizer --DDP-impl torch 2>&1)
grep -qF "error: inconsistent arguments: --use-distributed-optimizer with --DDP-impl torch" <<<"$out" &&
  ok "refused with --DDP-impl torch (Megatron's assert)" || bad "with torch DDP" "$(grep -m1 error <<<"$out")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
