#!/usr/bin/env bash
# Selective recompute (--recompute-activations, --recompute-granularity selective; Megatron's
# checkpoint_core_attention; docs/parallelism.md "Activation recompute"): on the CPU the layers keep no attention
# probabilities, one shared buffer holds the layer at hand's, and each backward recomputes them there:
#  - the same log lines bit for bit as without it (losses, grad norms, validations; dropout on) for GPT, BERT (the
#    padding mask), T5 (cross-attention), GPT with --reset-attention-mask and with block-sparse attention, and under
#    mpirun TP=2 + sequence parallel, PP=2 and DeepSpeed-Ulysses SP=2 (label mpi; skipped without mpirun);
#  - the memory plan's activations shrink by (L - 1) x B x heads x T x T x 4 bytes;
#  - the argument dump says selective; with --checkpoint-activations whole layers are recomputed (full);
#  - --recompute-method with selective is refused (Megatron's assert);
# and Megatron's block method (--recompute-granularity full --recompute-method block --recompute-num-layers N: the
# first N layers of each stage recomputed, the others keeping their activations): the log lines bit for bit as
# without recompute for GPT (N = 1, 2), BERT, T5 and PP=2; the memory plan's activations between none and full,
# falling with N, full's at N = L; the start-up line and the argument dump say block.
# Usage: test_selective_recompute.sh BIN_DIR PYTHON3
set -u
BIN=$1 PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMP_NUM_THREADS=1
L=4 B=4 NH=4 T=64
G=(--num-layers $L --hidden-size 64 --num-attention-heads $NH --seq-length $T --max-position-embeddings $T
   --micro-batch-size $B --global-batch-size 8 --mock-data --vocab-size 128 --make-vocab-size-divisible-by 64
   --lr 1e-3 --train-iters 6 --log-interval 1 --eval-interval 3 --eval-iters 1)
lines() { grep -E "^ iteration |validation loss at" <<<"$1" | sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second: .*//'; }
acts() { sed -nE 's/.*memory plan \(MiB\):.*activations ([0-9.]+) .*/\1/p' <<<"$1" | head -1; }
# same NAME A B: the same log lines, 6 iterations
same() {
  if [ "$(grep -c "^ iteration" <<<"$2")" -eq 6 ] && [ "$(lines "$2")" == "$(lines "$3")" ]; then
    ok "$1: the log lines bit for bit as without it"
  else
    bad "$1" "$(diff <(lines "$2") <(lines "$3") | head -4) $(grep -m1 error <<<"$3")"
  fi
}

a=$("$BIN/pretrain_gpt" "${G[@]}" 2>&1)
b=$("$BIN/pretrain_gpt" "${G[@]}" --recompute-activations 2>&1)
same "GPT --recompute-activations" "$a" "$b"
want=$(awk -v l=$L -v b=$B -v h=$NH -v t=$T 'BEGIN { printf "%.2f", (l - 1) * b * h * t * t * 4 / 1048576 }')
drop=$(awk -v x="$(acts "$a")" -v y="$(acts "$b")" 'BEGIN { printf "%.2f", x - y }')
awk -v d="$drop" -v w="$want" 'BEGIN { exit !(d > w - 0.1 && d < w + 0.1) }' &&
  ok "the memory plan's activations: $(acts "$a") -> $(acts "$b") MiB ($want MiB of probabilities fewer)" ||
  bad "memory plan" "$(acts "$a") -> $(acts "$b") MiB, want $want fewer"
grep -qE "^  recompute_granularity \.+ selective$" <<<"$b" && ok "argument dump: recompute_granularity selective" ||
  bad "argument dump" "$(grep recompute_granularity <<<"$b")"
full=$("$BIN/pretrain_gpt" "${G[@]}" --checkpoint-activations 2>&1)
prev=$(acts "$a") plans="$(acts "$a")" plan_ok=1
for n in 1 2 $L; do
  c=$("$BIN/pretrain_gpt" "${G[@]}" --recompute-granularity full --recompute-method block --recompute-num-layers $n 2>&1)
  [ $n -lt $L ] && same "GPT --recompute-method block --recompute-num-layers $n" "$a" "$c"
  plans="$plans -> $(acts "$c")"
  if [ $n -lt $L ]; then
    awk -v x="$(acts "$c")" -v p="$prev" -v f="$(acts "$full")" 'BEGIN { exit !(x < p && x > f) }' || plan_ok=0
  else
    [ -n "$(acts "$c")" ] && [ "$(acts "$c")" == "$(acts "$full")" ] || plan_ok=0
  fi
  prev=$(acts "$c")
done
[ $plan_ok -eq 1 ] && ok "block's memory plan falls with N, none -> 1 -> 2 -> $L layers recomputed: $plans MiB (full: $(acts "$full"))" ||
  bad "block's memory plan" "none -> 1 -> 2 -> $L: $plans MiB, full recompute $(acts "$full")"
grep -qF "> --recompute-method block: the first $L layers of each pipeline stage are recomputed in backward" <<<"$c" &&
  grep -qE "^  recompute_method \.+ block$" <<<"$c" && ok "block: the start-up line and the argument dump" ||
  bad "block messages" "$(grep -E "recompute" <<<"$c" | head -3)"
c=$("$BIN/pretrain_gpt" "${G[@]}" --recompute-granularity selective 2>&1)
[ "$(lines "$c")" == "$(lines "$b")" ] && [ "$(acts "$c")" == "$(acts "$b")" ] &&
  ok "--recompute-granularity selective = --recompute-activations" || bad "selective flag" "$(lines "$c" | head -2)"
c=$("$BIN/pretrain_gpt" "${G[@]}" --checkpoint-activations --recompute-activations 2>&1)
grep -qE "^  recompute_granularity \.+ full$" <<<"$c" && [ "$(lines "$c")" == "$(lines "$a")" ] &&
  ok "--checkpoint-activations with --recompute-activations: whole layers (full)" ||
  bad "full + selective" "$(grep recompute_granularity <<<"$c")"
a=$("$BIN/pretrain_gpt" "${G[@]}" --reset-attention-mask --reset-position-ids --eod-mask-loss 2>&1)
b=$("$BIN/pretrain_gpt" "${G[@]}" --reset-attention-mask --reset-position-ids --eod-mask-loss \
    --recompute-activations 2>&1)
same "GPT with packed documents (--reset-attention-mask)" "$a" "$b"
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "sparse_attention": {"mode": "fixed", "block": 8, "different_layout_per_head": true, "num_local_blocks": 4, "num_global_blocks": 1, "num_different_global_patterns": 4, "attention": "unidirectional"}}' > sparse.json
a=$("$BIN/pretrain_gpt" "${G[@]}" --deepspeed --deepspeed_config sparse.json 2>&1)
b=$("$BIN/pretrain_gpt" "${G[@]}" --deepspeed --deepspeed_config sparse.json --recompute-activations 2>&1)
same "GPT with block-sparse attention (the kept tiles)" "$a" "$b"
out=$("$BIN/pretrain_gpt" "${G[@]}" --recompute-granularity selective --recompute-method uniform 2>&1); rc=$?
[ $rc -ne 0 ] && grep -qF "error: inconsistent arguments: --recompute-method with --recompute-granularity selective" <<<"$out" &&
  ok "--recompute-method with selective refused" || bad "recompute method" "$(grep -m1 error <<<"$out")"

# BERT (padding) and T5 (cross-attention: its probabilities share the buffer)
"$PY" "$HERE/../bert/make_fixture.py" fx >/dev/null || bad "make_fixture.py" "failed"
"$BIN/preprocess_data" --input fx/corpus.jsonl --output-prefix fx/corpus --workers 1 --vocab-file fx/vocab.txt \
  --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null 2>&1 || bad "preprocess_data" "BERT corpus"
S=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
   --data-path fx/corpus_text_sentence --vocab-file fx/vocab.txt --split 90,10,0 --lr 1e-3 --train-iters 6
   --log-interval 1 --eval-interval 3 --eval-iters 1 --micro-batch-size 4 --global-batch-size 8 --seed 1234)
a=$("$BIN/pretrain_bert" "${S[@]}" 2>&1)
b=$("$BIN/pretrain_bert" "${S[@]}" --recompute-activations 2>&1)
same "BERT" "$a" "$b"
b=$("$BIN/pretrain_bert" "${S[@]}" --recompute-granularity full --recompute-method block --recompute-num-layers 1 2>&1)
same "BERT --recompute-method block" "$a" "$b"
t5=(--decoder-seq-length 16 --vocab-extra-ids 10)
a=$("$BIN/pretrain_t5" "${S[@]}" "${t5[@]}" 2>&1)
b=$("$BIN/pretrain_t5" "${S[@]}" "${t5[@]}" --recompute-activations 2>&1)
same "T5" "$a" "$b"
c=$("$BIN/pretrain_t5" "${S[@]}" "${t5[@]}" --recompute-granularity full --recompute-method block \
    --recompute-num-layers 1 2>&1)
same "T5 --recompute-method block (encoder and decoder)" "$a" "$c"
[ "$(acts "$a")" != "$(acts "$b")" ] && ok "T5's memory plan: $(acts "$a") -> $(acts "$b") MiB" ||
  bad "T5 memory plan" "$(acts "$a") -> $(acts "$b")"

if command -v mpirun >/dev/null; then
  for lay in "--tensor-model-parallel-size 2 --sequence-parallel" "--pipeline-model-parallel-size 2" \
             "--ds-sequence-parallel-size 2"; do
    # shellcheck disable=SC2086
    a=$(timeout 300 "${mpi[@]}" -np 2 "$BIN/pretrain_gpt" "${G[@]}" $lay 2>&1)
    # shellcheck disable=SC2086
    b=$(timeout 300 "${mpi[@]}" -np 2 "$BIN/pretrain_gpt" "${G[@]}" $lay --recompute-activations 2>&1)
    same "GPT $lay" "$a" "$b"
  done
  lay=(--pipeline-model-parallel-size 2)
  a=$(timeout 300 "${mpi[@]}" -np 2 "$BIN/pretrain_gpt" "${G[@]}" "${lay[@]}" 2>&1)
  b=$(timeout 300 "${mpi[@]}" -np 2 "$BIN/pretrain_gpt" "${G[@]}" "${lay[@]}" --recompute-granularity full \
      --recompute-method block --recompute-num-layers 1 2>&1)
  same "GPT PP=2 --recompute-method block --recompute-num-layers 1 (one of each stage's two layers)" "$a" "$b"
else
  echo "SKIP TP=2, PP=2, Ulysses: no mpirun"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
