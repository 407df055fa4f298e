#!/usr/bin/env bash
# DeepSpeed FPDT (--ds-sequence-parallel-fpdt, docs/parallelism.md) under mpirun against one process: the sequence
# dealt to the sequence-parallel ranks in chunks (rank r holds chunks r, r + P, ...), the self-attention computed in
# chunks keeping only log-sum-exps, the layers without hidden dropout (Megatron-DeepSpeed's). With the hidden dropout
# at 0, FPDT at SP=1, 2 and 4 gives the plain model's lm losses, validation losses and grad norms to 1e-6 with
# attention dropout on (the masks keyed by the global positions); with it at 0.1, FPDT differs from the plain model
# (the layers skip it, saying so) and every SP size gives FPDT's one-process run; the Llama-style model (rotary
# embeddings at the tokens' global positions, grouped-query attention); packed documents; the memory plan's
# activations at a longer sequence; the argument dump; the refusals, each before any work.
# Usage: test_fpdt.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
bert="$(dirname "$bin")/pretrain_bert"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d /tmp/zt_fpdt.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --mock-data --vocab-size 128 --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 6 --log-interval 1
      --eval-interval 6 --eval-iters 1 --global-batch-size 16 --micro-batch-size 8 --attention-dropout 0.1
      --hidden-dropout 0)
fpdt=(--ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 16)
one() { OMP_NUM_THREADS=1 timeout 300 "$bin" "$@" 2>&1; }
np() { local n=$1; shift; timeout 300 "${mpi[@]}" -np "$n" "$bin" "$@" 2>&1; }
vals() { grep -E "validation loss" <<<"$1" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/' | tr '\n' ' '; }
# same NAME REF OUT: lm and validation losses to 1e-6, grad norms to their printed digits
same() {
  if [ "$(field "$2" "lm loss" | wc -w)" -eq 6 ] && close "$(field "$2" "lm loss")" "$(field "$3" "lm loss")" 1e-6 \
     && close "$(vals "$2")" "$(vals "$3")" 1e-6 && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 2e-3
  then
    ok "$1: lm losses $(field "$3" "lm loss" | cut -d' ' -f1,6)"
  else
    bad "$1" "ref '$(field "$2" "lm loss")' got '$(field "$3" "lm loss")' $(grep -m2 error <<<"$3")"
  fi
}

ref=$(one "${tiny[@]}")
[ "$(field "$ref" "lm loss" | wc -w)" -eq 6 ] || { echo "reference run failed:"; echo "$ref" | tail -5; exit 1; }
out=$(one "${tiny[@]}" "${fpdt[@]}")
same "FPDT in one process (the attention in 4 chunks of 16) = the plain model" "$ref" "$out"
grep -qF "> DeepSpeed FPDT: the attention in chunks of 16 tokens, keeping log-sum-exps (one sequence-parallel rank)" \
  <<<"$out" && ok "the FPDT line" || bad "the FPDT line" "$(grep -m1 FPDT <<<"$out")"
out=$(np 2 "${tiny[@]}" "${fpdt[@]}" --ds-sequence-parallel-size 2)
same "FPDT over SP=2 (each rank 4 chunks of 8 tokens) = the plain model" "$ref" "$out"
grep -qF "> DeepSpeed FPDT: each sequence-parallel rank r holds chunks r, r + 2, ... of 8 tokens (32 per rank)" \
  <<<"$out" && ok "the FPDT layout line" || bad "the FPDT layout line" "$(grep FPDT <<<"$out")"
grep -qE "^  ds_sequence_parallel_fpdt \.+ True$" <<<"$out" && grep -qE "^  ds_sequence_parallel_fpdt_chunk_size \.+ 16$" \
  <<<"$out" && grep -qE "^  ds_sequence_parallel_fpdt_offloading \.+ False$" <<<"$out" \
  && ok "argument dump: ds_sequence_parallel_fpdt True, chunk size 16, offloading False" \
  || bad "argument dump" "$(grep -E "^  ds_sequence_parallel_fpdt" <<<"$out")"
out=$(np 4 "${tiny[@]}" "${fpdt[@]}" --ds-sequence-parallel-size 4 --ds-sequence-parallel-fpdt-offloading)
same "FPDT over SP=4 (4 chunks of 4 tokens per rank, offloading: host memory on the CPU) = the plain model" "$ref" "$out"

# the hidden dropout: Megatron-DeepSpeed's FPDT layers skip it (the embedding dropout stays)
hd=("${tiny[@]}" --hidden-dropout 0.1)
fref=$(one "${hd[@]}" "${fpdt[@]}")
grep -qF "WARNING: --ds-sequence-parallel-fpdt: the layers add their residuals without the hidden dropout (--hidden-dropout 0.1)" \
  <<<"$fref" && ok "FPDT with --hidden-dropout 0.1 warns that the layers skip it" || bad "hidden dropout warning" "none"
pref=$(one "${hd[@]}")
[ -n "$(field "$fref" "lm loss")" ] && [ "$(field "$fref" "lm loss")" != "$(field "$pref" "lm loss")" ] \
  && ok "FPDT with --hidden-dropout 0.1 trains otherwise than the plain model (its layers skip the dropout)" \
  || bad "FPDT hidden dropout" "the same losses as the plain model: '$(field "$fref" "lm loss")'"
out=$(np 4 "${hd[@]}" "${fpdt[@]}" --ds-sequence-parallel-size 4)
same "FPDT over SP=4 with --hidden-dropout 0.1 = FPDT in one process (embedding dropout at the global positions)" \
  "$fref" "$out"

llama=(--normalization rmsnorm --swiglu --disable-bias-linear --use-rotary-position-embeddings
       --untie-embeddings-and-output-weights --num-key-value-heads 2)
lref=$(one "${tiny[@]}" "${llama[@]}")
out=$(np 2 "${tiny[@]}" "${llama[@]}" --ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 8 \
      --ds-sequence-parallel-size 2)
same "Llama-style over SP=2 in chunks of 4 (rotary at the global positions, GQA groups moved)" "$lref" "$out"
docs=(--reset-position-ids --reset-attention-mask --eod-mask-loss)
dref=$(one "${tiny[@]}" "${docs[@]}")
out=$(np 2 "${tiny[@]}" "${docs[@]}" "${fpdt[@]}" --ds-sequence-parallel-size 2)
same "packed documents over SP=2 (reset position ids and attention mask, EOD loss mask)" "$dref" "$out"

# the attention's probabilities are not kept: the activations of a 1024-token sequence shrink
plan() { grep -m1 "memory plan" <<<"$1" | sed -E 's/.*activations ([0-9.]+).*/\1/'; }
long=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 1024 --max-position-embeddings 1024
      --mock-data --vocab-size 128 --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 1 --eval-iters 0
      --global-batch-size 2 --micro-batch-size 2)
a=$(plan "$(one "${long[@]}")") b=$(plan "$(one "${long[@]}" --ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 128)")
[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { exit !(b * 3 < a) }' \
  && ok "memory plan at 1024 tokens: activations $a MiB plain, $b MiB with FPDT's chunked attention" \
  || bad "memory plan" "plain '$a' MiB, FPDT '$b' MiB"

# refusals: each names the flags and numbers, before any work
refuse() { # name np expected-text args...
  local name="$1" n="$2" want="$3" o rc
  shift 3
  o=$(np "$n" "${tiny[@]}" "$@"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$o" && ! grep -qE "^ iteration " <<<"$o"; then ok "refused: $name"
  else bad "refusal: $name" "rc=$rc: $(grep -m1 -E "error" <<<"$o")"; fi
}
refuse "the default chunk (65536) longer than the sequence" 1 \
  "--ds-sequence-parallel-fpdt-chunk-size 65536 does not divide --seq-length 64" --ds-sequence-parallel-fpdt
refuse "a chunk that does not divide the sequence" 2 \
  "--ds-sequence-parallel-fpdt-chunk-size 24 does not divide --seq-length 64" \
  --ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 24 --ds-sequence-parallel-size 2
refuse "a chunk that does not split over the ranks" 4 \
  "--ds-sequence-parallel-fpdt-chunk-size 2 is not a multiple of --ds-sequence-parallel-size 4" \
  --ds-sequence-parallel-fpdt --ds-sequence-parallel-fpdt-chunk-size 2 --ds-sequence-parallel-size 4
echo '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "sparse_attention": {"mode": "fixed", "block": 16}}' \
  >sa.json
refuse "sparse attention" 1 "--ds-sequence-parallel-fpdt with the sparse_attention block of sa.json" \
  "${fpdt[@]}" --deepspeed --deepspeed_config sa.json
o=$(OMP_NUM_THREADS=1 timeout 60 "$bert" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 \
    --max-position-embeddings 64 --micro-batch-size 2 --train-iters 1 --lr 1e-4 --data-path sentences_text_sentence \
    --vocab-file vocab.txt "${fpdt[@]}" 2>&1)
[ $? -ne 0 ] && grep -qF "DeepSpeed's FPDT runs GPT models" <<<"$o" && ok "refused: pretrain_bert --ds-sequence-parallel-fpdt" \
  || bad "refusal: pretrain_bert" "$(grep -m1 error <<<"$o")"
o=$(one "${tiny[@]}" --train-iters 1 --ds-sequence-parallel-fpdt-chunk-size 16)
grep -qF "WARNING: --ds-sequence-parallel-fpdt-chunk-size has no effect without --ds-sequence-parallel-fpdt" <<<"$o" \
  && [ "$(field "$o" "lm loss" | wc -w)" -eq 1 ] && ok "--ds-sequence-parallel-fpdt-chunk-size alone: a warning, as Megatron-DeepSpeed ignores it" \
  || bad "chunk size alone" "$(grep -m1 -E "WARNING|error" <<<"$o")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
