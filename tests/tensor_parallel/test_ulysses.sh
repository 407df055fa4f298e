#!/usr/bin/env bash
# DeepSpeed-Ulysses sequence parallelism (--ds-sequence-parallel-size, docs/parallelism.md) under mpirun against one
# process, with dropout on: SP=2 and SP=4 give one process's lm losses, validation losses and grad norms to 1e-6 (fp32:
# the same attention per head, the loss summed over the whole micro batch in its order, the partial gradients summed
# over the group, which rounds as a data-parallel sum does); the
# Llama-style model with rotary embeddings and grouped-query attention (2 key/value heads over 2 ranks: the all-to-all
# moves the groups; over 4 ranks: the repeated heads); SP=2 x DP=2;
# packed documents (--reset-position-ids --reset-attention-mask --eod-mask-loss: each rank's attention sees the whole
# row's document starts); ZeRO-2 saved at SP=2 (one optimizer partition per rank, DeepSpeed's sequence-data-parallel
# files) resumed at SP=2 and in one process; ZeRO-3 with bf16 (close: the partial gradients round to bf16 before their
# sum); the argument dump; the refusals, each before any work.
# Usage: test_ulysses.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
tools=$(dirname "$bin")
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d /tmp/zt_ulysses.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --mock-data --vocab-size 128 --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 6 --log-interval 1
      --eval-interval 6 --eval-iters 1 --global-batch-size 16 --attention-dropout 0.1 --hidden-dropout 0.1)
one() { OMP_NUM_THREADS=1 timeout 300 "$bin" "$@" 2>&1; }
np() { local n=$1; shift; timeout 300 "${mpi[@]}" -np "$n" "$bin" "$@" 2>&1; }
# the validation values of a log, space-separated
vals() { grep -E "validation loss" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }
# same NAME REF OUT: the lm losses of every iteration and the validation losses to 1e-6, the grad norms to their
# printed digits: the same computation per token and head, but the weight gradients are sums over the tokens, which
# the sequence-parallel ranks add up in parts (as data parallelism does), so the last bits can differ
same() {
  if [ -n "$(field "$2" "lm loss")" ] && close "$(field "$2" "lm loss")" "$(field "$3" "lm loss")" 1e-6 \
     && { [ -z "$(vals "$2$3")" ] || close "$(vals "$2")" "$(vals "$3")" 1e-6; } && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 2e-3; then
    ok "$1 = one process: lm losses $(field "$3" "lm loss" | cut -d' ' -f1,6)"
  else
    bad "$1" "ref '$(field "$2" "lm loss")' got '$(field "$3" "lm loss")' $(grep -m2 error <<<"$3")"
  fi
}

ref=$(one "${tiny[@]}" --micro-batch-size 8)
[ "$(field "$ref" "lm loss" | wc -w)" -eq 6 ] || { echo "reference run failed:"; echo "$ref" | tail -5; exit 1; }
out=$(np 2 "${tiny[@]}" --micro-batch-size 8 --ds-sequence-parallel-size 2)
same "SP=2" "$ref" "$out"
grep -qE "^  ds_sequence_parallel_size \.+ 2$" <<<"$out" && grep -qE "^  data_parallel_size \.+ 1$" <<<"$out" \
  && ok "argument dump: ds_sequence_parallel_size 2, data_parallel_size 1 (the sequence-parallel ranks read the same samples)" \
  || bad "argument dump" "$(grep -E "^  (ds_sequence|data_parallel)" <<<"$out")"
grep -qF "> DeepSpeed-Ulysses sequence parallelism: 1 groups of 2 consecutive ranks, each rank 32 of every 64 tokens" \
  <<<"$out" && ok "the layout line" || bad "the layout line" "$(grep -m1 Ulysses <<<"$out")"
out=$(np 4 "${tiny[@]}" --micro-batch-size 8 --ds-sequence-parallel-size 4)
same "SP=4 (one head per rank)" "$ref" "$out"
ref4=$(one "${tiny[@]}" --micro-batch-size 4)
out=$(np 4 "${tiny[@]}" --micro-batch-size 4 --ds-sequence-parallel-size 2)
same "SP=2 x DP=2" "$ref4" "$out"

llama=(--normalization rmsnorm --swiglu --disable-bias-linear --use-rotary-position-embeddings
       --untie-embeddings-and-output-weights --num-key-value-heads 2)
lref=$(one "${tiny[@]}" "${llama[@]}" --micro-batch-size 8)
out=$(np 2 "${tiny[@]}" "${llama[@]}" --micro-batch-size 8 --ds-sequence-parallel-size 2)
same "Llama-style, rotary at the global positions, GQA (2 key/value heads) over SP=2: the groups move, each rank repeats its own" \
  "$lref" "$out"
out=$(np 4 "${tiny[@]}" "${llama[@]}" --micro-batch-size 8 --ds-sequence-parallel-size 4)
same "Llama-style, GQA (2 key/value heads) over SP=4: the repeated heads move" "$lref" "$out"

docs=(--reset-position-ids --reset-attention-mask --eod-mask-loss)
dref=$(one "${tiny[@]}" "${docs[@]}" --micro-batch-size 8)
[ "$(field "$dref" "lm loss")" != "$(field "$ref" "lm loss")" ] || bad "packed documents" "the flags changed nothing"
out=$(np 2 "${tiny[@]}" "${docs[@]}" --micro-batch-size 8 --ds-sequence-parallel-size 2)
same "SP=2 with packed documents (reset position ids and attention mask, EOD loss mask)" "$dref" "$out"

echo '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}' >z2.json
z2=(--micro-batch-size 8 --deepspeed --deepspeed_config z2.json)
zref=$(one "${tiny[@]}" "${z2[@]}")
out=$(np 2 "${tiny[@]}" "${z2[@]}" --ds-sequence-parallel-size 2 --save ck --save-interval 3 --exit-interval 3)
same "ZeRO-2 at SP=2 (iterations 1-3)" "$(grep -E "^ iteration +[123]/" <<<"$zref")" "$out"
[ -f ck/global_step3/zero_pp_rank_0_mp_rank_00_optim_states.h5 ] && [ -f ck/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.h5 ] \
  && ok "ZeRO-2 at SP=2: one optimizer partition per rank (zero_pp_rank_0, zero_pp_rank_1)" \
  || bad "ZeRO-2 checkpoint files" "$(ls ck/global_step3 2>&1)"
# resumed at SP=2: bit for bit the uninterrupted SP=2 run's iterations 4-6; in one process: the one-process run's to
# 1e-6 (the SP=2 checkpoint's weights differ from one process's in the last bits, as the losses above do: whether
# they round to the same printed digits depends on the CPU's BLAS kernels)
want=$(field "$(np 2 "${tiny[@]}" "${z2[@]}" --ds-sequence-parallel-size 2)" "lm loss" | cut -d' ' -f4-)
res=$(np 2 "${tiny[@]}" "${z2[@]}" --ds-sequence-parallel-size 2 --load ck)
[ -n "$want" ] && [ "$(field "$res" "lm loss")" = "$want" ] \
  && ok "ZeRO-2 saved at SP=2, resumed at SP=2: iterations 4-6 as uninterrupted, bit for bit" \
  || bad "SP=2 resume" "'$(field "$res" "lm loss")' vs '$want' $(grep -m1 error <<<"$res")"
want=$(field "$zref" "lm loss" | cut -d' ' -f4-)
res=$(one "${tiny[@]}" "${z2[@]}" --load ck)
[ -n "$want" ] && close "$want" "$(field "$res" "lm loss")" 1e-6 \
  && ok "ZeRO-2 saved at SP=2, resumed in one process (2 optimizer partitions into 1): iterations 4-6 = one process's" \
  || bad "SP=2 -> one process resume" "'$(field "$res" "lm loss")' vs '$want' $(grep -m1 error <<<"$res")"

echo '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3},
       "bf16": {"enabled": true}}' >z3.json
zref=$(one "${tiny[@]}" --micro-batch-size 8 --deepspeed --deepspeed_config z3.json)
out=$(np 2 "${tiny[@]}" --micro-batch-size 8 --deepspeed --deepspeed_config z3.json --ds-sequence-parallel-size 2)
close "$(field "$zref" "lm loss")" "$(field "$out" "lm loss")" 1e-4 \
  && ok "ZeRO-3 + bf16 at SP=2 = one process to 1e-4 ($(field "$out" "lm loss" | cut -d' ' -f6))" \
  || bad "ZeRO-3 + bf16 at SP=2" "ref '$(field "$zref" "lm loss")' got '$(field "$out" "lm loss")'"
# DeepSpeed's engine all-reduces in seq_parallel_comm_data_type (fp32 unless set) when SP > 1
grep -qF "all-reduce in fp32" <<<"$out" && ok "bf16 at SP=2: gradients all-reduced in fp32 (seq_parallel_comm_data_type)" \
  || bad "SP=2 all-reduce type" "$(grep -m1 "mixed precision" <<<"$out")"
echo '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3},
       "bf16": {"enabled": true}, "seq_parallel_comm_data_type": "bf16"}' >z3b.json
out=$(np 2 "${tiny[@]}" --micro-batch-size 8 --deepspeed --deepspeed_config z3b.json --ds-sequence-parallel-size 2 \
      --train-iters 2)
grep -qF "all-reduce in bf16" <<<"$out" && [ "$(field "$out" "lm loss" | wc -w)" -eq 2 ] \
  && ok "seq_parallel_comm_data_type bf16: the all-reduce in bf16" \
  || bad "seq_parallel_comm_data_type bf16" "$(grep -m1 -E "mixed precision|error" <<<"$out")"

# refusals: each names the flags and numbers, before any work
refuse() { # name np expected-text args...
  local name="$1" n="$2" want="$3" o rc
  shift 3
  o=$(np "$n" "${tiny[@]}" --micro-batch-size 8 "$@"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$o" && ! grep -qE "^ iteration " <<<"$o"; then ok "refused: $name"
  else bad "refusal: $name" "rc=$rc: $(grep -m1 -E "error" <<<"$o")"; fi
}
refuse "with TP" 4 "DeepSpeed's sequence parallel does not work with tensor parallel or pipeline parallel" \
  --ds-sequence-parallel-size 2 --tensor-model-parallel-size 2
refuse "with PP" 4 "DeepSpeed's sequence parallel does not work with tensor parallel or pipeline parallel" \
  --ds-sequence-parallel-size 2 --pipeline-model-parallel-size 2
refuse "world not divisible" 3 "world size (3) is not divisible by tensor parallel size (1) times pipeline parallel size (1) times seqence parallel size (2)" \
  --ds-sequence-parallel-size 2
refuse "heads not divisible" 4 "--num-attention-heads 2 is not divisible by --ds-sequence-parallel-size 4" \
  --ds-sequence-parallel-size 4 --num-attention-heads 2
refuse "sequence not divisible" 2 "--seq-length 63 is not divisible by --ds-sequence-parallel-size 2" \
  --ds-sequence-parallel-size 2 --seq-length 63
refuse "MoE" 2 "MoE layers with DeepSpeed's sequence parallelism land with the MoE expert-parallel work (issue 18)" \
  --ds-sequence-parallel-size 2 --num-experts 2
printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "curriculum_learning": {"enabled": true,
  "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 64, "schedule_type": "fixed_linear",
  "schedule_config": {"total_curriculum_step": 4, "difficulty_step": 8}}}' >cl.json
refuse "the seqlen curriculum" 2 "--ds-sequence-parallel-size 2 with the curriculum_learning block of cl.json" \
  --ds-sequence-parallel-size 2 --deepspeed --deepspeed_config cl.json
echo '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "sparse_attention": {"mode": "fixed", "block": 16}}' \
  >sa.json
refuse "sparse attention" 2 "--ds-sequence-parallel-size 2 with the sparse_attention block of sa.json" \
  --ds-sequence-parallel-size 2 --deepspeed --deepspeed_config sa.json
echo '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "flops_profiler": {"enabled": true}}' >fp.json
refuse "the flops profiler" 2 "--ds-sequence-parallel-size 2 with the flops_profiler block of fp.json" \
  --ds-sequence-parallel-size 2 --deepspeed --deepspeed_config fp.json
refuse "--random-ltd" 2 "--random-ltd with --ds-sequence-parallel-size 2" --ds-sequence-parallel-size 2 --random-ltd
o=$(timeout 300 "${mpi[@]}" -np 2 "$tools/pretrain_bert" --ds-sequence-parallel-size 2 --num-layers 2 --hidden-size 64 \
    --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64 --data-path nonexistent --tokenizer-type \
    NullTokenizer --vocab-size 100 --train-iters 1 --global-batch-size 2 --micro-batch-size 2 --lr 1e-3 2>&1)
grep -qF "DeepSpeed's sequence parallelism runs GPT models (pretrain_gpt); this program trains bert" <<<"$o" \
  && ok "refused: pretrain_bert" || bad "refusal: pretrain_bert" "$(grep -m1 error <<<"$o")"
OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 --train-iters 1 --save ck_eval >/dev/null 2>&1
echo "1 2 3 4 5 6 7 8 9 10 11 12" >ids.txt
o=$(timeout 300 "${mpi[@]}" -np 2 "$tools/evaluate_zeroshot" --task WIKITEXT103 --valid-data ids.txt --load ck_eval \
    --ds-sequence-parallel-size 2 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 \
    --max-position-embeddings 64 --micro-batch-size 1 --tokenizer-type NullTokenizer --vocab-size 127 2>&1)
grep -qF "the evaluation and generation tools run whole sequences on each rank" <<<"$o" \
  && ok "refused: evaluate_zeroshot" || bad "refusal: evaluate_zeroshot" "$(grep -m1 error <<<"$o")"
o=$(one "${tiny[@]}" --micro-batch-size 8 --train-iters 1 --force-ds-sequence-parallel)
grep -qE "^  force_ds_sequence_parallel \.+ True$" <<<"$o" && [ -n "$(field "$o" "lm loss")" ] \
  && ok "--force-ds-sequence-parallel at size 1: accepted and recorded" \
  || bad "--force-ds-sequence-parallel" "$(grep -m1 -E "error|force_ds" <<<"$o")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
