#!/usr/bin/env bash
# Tensor parallelism under mpirun: pretrain_gpt with TP=2, TP=4, TP=2 x DP=2 and TP=2 --sequence-parallel (also
# with full recompute), tied and untied output layer, gives the lm losses and gradient norms of one process for
# 10 iterations of 2 micro batches with dropout on (every TP rank holds its slice of the matrices one process
# draws, dropout masks are keyed by global positions). The per-rank parameter counts are checked against the
# shapes, and bad divisibility (heads, MLP columns, sequence under --sequence-parallel, world) is refused with
# the flags and numbers.
# Usage: test_tp.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
# the padded vocabulary (a multiple of --make-vocab-size-divisible-by x TP) is 128 for TP = 1, 2 and 4
L=2 H=64 NH=4 S=64 V=128
tiny=(--num-layers $L --hidden-size $H --num-attention-heads $NH --seq-length $S --max-position-embeddings $S
      --mock-data --vocab-size $V --make-vocab-size-divisible-by 32 --lr 3e-3 --train-iters 10 --log-interval 1
      --eval-interval 10 --eval-iters 1 --global-batch-size 16 --attention-dropout 0.1 --hidden-dropout 0.1)
field() { grep -E "^ iteration " <<<"$1" | sed -E "s/.*$2: ([0-9.E+-]+).*/\1/" | tr '\n' ' '; }
close() { # two space-separated lists, relative tolerance, plus an absolute slack (half a printed unit)
  awk -v a="$1" -v b="$2" -v tol="$3" -v abs="$4" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ");
    if (n != m || n == 0) exit 1;
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
      if (d > tol * s + abs) exit 1 } }'
}
# same losses (1e-5 relative) and grad norms (printed with 3 decimals: 1e-5 relative + one printed unit)
same() { # name ref out rc
  if [ "$4" -eq 0 ] && close "$(field "$2" "lm loss")" "$(field "$3" "lm loss")" 1e-5 1e-12 \
     && close "$(field "$2" "grad norm")" "$(field "$3" "grad norm")" 1e-5 1e-3; then
    ok "$1 = one process: losses $(field "$3" "lm loss" | cut -d' ' -f1,10)"
  else
    bad "$1" "rc=$4 ref '$(field "$2" "lm loss")' '$(field "$2" "grad norm")' got '$(field "$3" "lm loss")' '$(field "$3" "grad norm")'"
    echo "$3" | grep -E "error|^ iteration" | tail -4
  fi
}

ref=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 2>&1)
[ -n "$(field "$ref" "lm loss")" ] || { echo "reference run failed:"; echo "$ref" | tail -5; exit 1; }
[ "$(field "$ref" "lm loss" | wc -w)" -eq 10 ] || { echo "reference: expected 10 iterations"; exit 1; }

out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 2>&1)
same "TP=2" "$ref" "$out" $?
# validation loss (no dropout) equal too
v1=$(grep -F "validation loss at the end of training for val data" <<<"$ref" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
v2=$(grep -F "validation loss at the end of training for val data" <<<"$out" | sed -E 's/.*lm loss value: ([0-9.E+-]+).*/\1/')
if [ -n "$v1" ] && close "$v1" "$v2" 1e-5 1e-12; then ok "TP=2 validation loss equal ($v1 vs $v2)"; else bad "TP=2 validation loss" "'$v1' vs '$v2'"; fi
# Megatron's per-rank parameter count, from the shapes: split tensors divided by TP, replicated ones whole
split=$(( V * H + L * (3 * H * H + 3 * H + H * H + 4 * H * H + 4 * H + 4 * H * H) ))
repl=$(( S * H + L * (4 * H + H + H) + 2 * H ))
for r in 0 1; do
  want=" > number of parameters on (tensor, pipeline) model parallel rank ($r, 0): $(( split / 2 + repl ))"
  if ends_line "$want" "$out"; then ok "parameter count of TP rank $r: $(( split / 2 + repl ))"
  else bad "parameter count of TP rank $r" "want '$want', got '$(grep 'number of parameters' <<<"$out")'"; fi
done
grep -q "tensor_model_parallel_size \.* 2" <<<"$out" && grep -q "data_parallel_size \.* 1" <<<"$out" \
  && ok "argument summary: tensor_model_parallel_size 2, data_parallel_size 1" || bad "argument summary" "$(grep parallel_size <<<"$out")"

out=$(timeout 300 "${mpi[@]}" -np 4 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 4 2>&1)
same "TP=4" "$ref" "$out" $?
out=$(timeout 300 "${mpi[@]}" -np 4 "$bin" "${tiny[@]}" --micro-batch-size 4 --tensor-model-parallel-size 2 2>&1)
same "TP=2 x DP=2" "$ref" "$out" $?
grep -q "data_parallel_size \.* 2" <<<"$out" || bad "TP=2 x DP=2 layout" "$(grep parallel_size <<<"$out")"
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --sequence-parallel 2>&1)
same "TP=2 --sequence-parallel" "$ref" "$out" $?
grep -q "sequence_parallel \.* True" <<<"$out" || bad "sequence_parallel in the summary" "$(grep sequence_parallel <<<"$out")"
out=$(timeout 300 "${mpi[@]}" -np 4 "$bin" "${tiny[@]}" --micro-batch-size 4 --tensor-model-parallel-size 2 \
      --sequence-parallel --checkpoint-activations 2>&1)
same "TP=2 x DP=2 --sequence-parallel --checkpoint-activations" "$ref" "$out" $?

ref_u=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 --untie-embeddings-and-output-weights 2>&1)
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --untie-embeddings-and-output-weights 2>&1)
same "TP=2 untied output layer" "$ref_u" "$out" $?
out=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --micro-batch-size 8 --tensor-model-parallel-size 2 \
      --untie-embeddings-and-output-weights --sequence-parallel 2>&1)
same "TP=2 --sequence-parallel, untied output layer" "$ref_u" "$out" $?

# --sequence-parallel with one tensor-parallel rank is turned off, as Megatron does
out=$(OMP_NUM_THREADS=1 "$bin" "${tiny[@]}" --micro-batch-size 8 --sequence-parallel 2>&1)
same "--sequence-parallel with TP=1 (off)" "$ref" "$out" $?

# refusals, with the flags and numbers (the detail only: the ranks' stderr lines may interleave)
refused() { # name expected-message np args...
  local name="$1" msg="$2" np="$3"; shift 3
  local o rc
  o=$(timeout 120 "${mpi[@]}" -np "$np" "$bin" "${tiny[@]}" --micro-batch-size 8 "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$msg" <<<"$o"; then ok "refused: $name"
  else bad "refusal: $name" "rc=$rc $(grep -m2 error <<<"$o")"; fi
}
refused "heads" "--num-attention-heads 4 is not divisible by --tensor-model-parallel-size 3" \
  3 --tensor-model-parallel-size 3
refused "MLP columns" "--ffn-hidden-size 99 is not divisible by --tensor-model-parallel-size 2" \
  2 --tensor-model-parallel-size 2 --ffn-hidden-size 99
refused "sequence" "--seq-length 63 is not divisible by --tensor-model-parallel-size 2 (--sequence-parallel" \
  2 --tensor-model-parallel-size 2 --sequence-parallel --seq-length 63
refused "world" "world size 3 is not divisible by --tensor-model-parallel-size 2 x --pipeline-model-parallel-size 1 = 2" \
  3 --tensor-model-parallel-size 2
refused "DeepSpeed-Ulysses with TP (Megatron-DeepSpeed's assertion)" "DeepSpeed's sequence parallel does not work with tensor parallel or pipeline parallel (--ds-sequence-parallel-size 2 with --tensor-model-parallel-size 2 and --pipeline-model-parallel-size 1)" \
  4 --tensor-model-parallel-size 2 --ds-sequence-parallel-size 2
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
