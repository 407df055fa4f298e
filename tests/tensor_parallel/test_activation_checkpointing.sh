#!/usr/bin/env bash
# DeepSpeed's activation_checkpointing block on recomputed layers (docs/ds_config.md): partition_activations
# over TP=2 (each rank keeps half of every saved layer input and all-gathers it before the layer's recompute)
# gives the unpartitioned run's losses bit for bit and a smaller activation plan; DeepSpeed's information
# lines and profile timer lines (one forward and one backward line per checkpointed layer and micro batch);
# Megatron's --distribute-checkpointed-activations / --distribute-saved-activations (the same split without
# DeepSpeed's checkpointing) likewise; the configuration errors, Megatron's asserts.
# Usage: test_activation_checkpointing.sh PRETRAIN_GPT   (SKIP, exit 77, without mpirun)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
net=(--num-layers 8 --hidden-size 128 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
     --mock-data --vocab-size 256 --lr 1e-3 --train-iters 4 --log-interval 1 --eval-interval 4 --eval-iters 1
     --micro-batch-size 2 --global-batch-size 4 --seed 5 --checkpoint-activations)
acts() { grep -m1 "memory plan (MiB)" <<<"$1" | sed -E 's/.*activations ([0-9.]+).*/\1/'; }
cfg() { printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2%s}\n' "$2" > "$tmp/$1.json"; }
run() { local np="$1" name="$2"; shift 2
  timeout 300 "${mpi[@]}" -np "$np" "$bin" "${net[@]}" --deepspeed --deepspeed_config "$tmp/$name.json" "$@" 2>&1; }

cfg plain ''
cfg part ', "activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true, "number_checkpoints": 8, "cpu_checkpointing": true, "synchronize_checkpoint_boundary": true}'
cfg prof ', "activation_checkpointing": {"profile": true}'
ref=$(run 2 plain --tensor-model-parallel-size 2)
out=$(run 2 part --tensor-model-parallel-size 2)
if [ -n "$(field "$ref" "lm loss")" ] && [ "$(field "$ref" "lm loss")" = "$(field "$out" "lm loss")" ] \
   && [ "$(field "$ref" "grad norm")" = "$(field "$out" "grad norm")" ]; then
  ok "partition_activations over TP=2 = unpartitioned, bit for bit ($(field "$out" "lm loss" | awk '{print $NF}'))"
else
  bad "partition_activations losses" "'$(field "$ref" "lm loss")' vs '$(field "$out" "lm loss")' $(grep -m1 error <<<"$out")"
fi
a=$(acts "$ref") b=$(acts "$out")
awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > 0 && b < a) }' && ok "activation plan $a MiB -> $b MiB with partitioning" \
  || bad "activation plan" "$a -> $b MiB"
if grep -q "\[checkpointing.py:forward\] ----Partition Activations True, CPU CHECKPOINTING True" <<<"$out" \
   && grep -q "\[checkpointing.py:forward\] ----contiguous Memory Checkpointing True with 8 total layers" <<<"$out" \
   && grep -q "\[checkpointing.py:forward\] ----Synchronization True" <<<"$out"; then
  ok "DeepSpeed's Activation Checkpointing Information lines"
else
  bad "information lines" "$(grep -m3 checkpointing.py <<<"$out")"
fi
one=$(OMP_NUM_THREADS=1 timeout 300 "$bin" "${net[@]}" --deepspeed --deepspeed_config "$tmp/part.json" 2>&1)
if awk -v a="$(field "$one" "lm loss")" -v b="$(field "$out" "lm loss")" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ");
     if (n != m || n == 0) exit 1; for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > 1e-5 * x[i]) exit 1 } }'; then
  ok "partition_activations at TP=1 (nothing to split) runs; TP=2 follows it within 1e-5"
else
  bad "TP=1" "'$(field "$one" "lm loss")' vs '$(field "$out" "lm loss")'"
fi
# profile: per checkpointed layer and training micro batch (8 layers x 2 micro batches x 4 iterations)
out=$(run 1 prof)
nf=$(grep -c "\[Rank 0\] time (ms) | forward: [0-9.]*$" <<<"$out") nb=$(grep -c "\[Rank 0\] time (ms) | backward: [0-9.]*$" <<<"$out")
[ "$nf" = 64 ] && [ "$nb" = 64 ] && ok "profile: 64 forward and 64 backward timer lines" || bad "profile lines" "forward $nf backward $nb"

# Megatron's own CheckpointFunction with distribute_saved_activations (without DeepSpeed's checkpointing): the old
# flag with --checkpoint-activations, the new one with --recompute-granularity full and a --recompute-method
noreco=(); for x in "${net[@]}"; do [ "$x" = --checkpoint-activations ] || noreco+=("$x"); done
meg() { local np="$1"; shift; timeout 300 "${mpi[@]}" -np "$np" "$bin" "${noreco[@]}" "$@" 2>&1; }
full=(--recompute-granularity full --recompute-method uniform)
plain=$(meg 2 --tensor-model-parallel-size 2 --checkpoint-activations)
for f in "--checkpoint-activations --distribute-checkpointed-activations" "${full[*]} --distribute-saved-activations"
do
  out=$(meg 2 --tensor-model-parallel-size 2 $f)
  flag=${f##* }
  if [ -n "$(field "$plain" "lm loss")" ] && [ "$(field "$plain" "lm loss")" = "$(field "$out" "lm loss")" ] \
     && [ "$(field "$plain" "grad norm")" = "$(field "$out" "grad norm")" ] \
     && grep -qF "> $flag: each tensor-parallel rank keeps 1/2 of every checkpointed layer input" <<<"$out" \
     && awk -v a="$(acts "$plain")" -v b="$(acts "$out")" 'BEGIN { exit !(b > 0 && b < a) }'; then
    ok "$flag over TP=2 = undistributed, bit for bit; activation plan $(acts "$plain") -> $(acts "$out") MiB"
  else
    bad "$flag" "'$(field "$plain" "lm loss")' vs '$(field "$out" "lm loss")'; $(acts "$plain") -> $(acts "$out"); \
$(grep -m1 error <<<"$out")"
  fi
done
out=$(meg 2 --pipeline-model-parallel-size 2 --checkpoint-activations --distribute-checkpointed-activations)
grep -qF "WARNING: --distribute-checkpointed-activations has no effect with --pipeline-model-parallel-size 2" <<<"$out" \
  && [ "$(field "$out" "lm loss" | wc -w)" -eq 4 ] && ok "--distribute-checkpointed-activations at PP=2: a WARNING, trains" \
  || bad "--distribute-checkpointed-activations at PP=2" "$(grep -m1 -iE 'warning|error' <<<"$out")"

expect() { # name, message, output
  if grep -qF -- "$2" <<<"$3" && ! grep -q "^ iteration " <<<"$3"; then ok "refused: $1"; else bad "refused: $1" "$(grep -m1 error <<<"$3")"; fi
}
expect "without recompute" "activation_checkpointing applies to checkpointed (recomputed) layers: add --checkpoint-activations" \
  "$(OMP_NUM_THREADS=1 "$bin" "${noreco[@]}" --deepspeed --deepspeed_config "$tmp/part.json" 2>&1)"
cfg contig ', "activation_checkpointing": {"contiguous_memory_optimization": true}'
expect "contiguous without partitioning" "Contiguous Checkpointing is only available with partitioned activations" "$(run 1 contig)"
cfg few ', "activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true, "number_checkpoints": 3}'
expect "too few number_checkpoints" "contiguous_memory_optimization needs number_checkpoints >= 8 (the checkpointed layers), got 3" "$(run 1 few)"
expect "--distribute-checkpointed-activations without --checkpoint-activations" "for distribute-checkpointed-activations \
to work you need to enable checkpoint-activations" "$(meg 1 "${full[@]}" --distribute-checkpointed-activations)"
expect "--distribute-saved-activations at TP=1" "can distribute recomputed activations only across tensor model parallel \
groups" "$(meg 1 "${full[@]}" --distribute-saved-activations)"
expect "--distribute-saved-activations with --checkpoint-activations" "distributed recompute activations is only \
application to full recompute granularity" "$(meg 2 --tensor-model-parallel-size 2 --checkpoint-activations \
  --distribute-saved-activations)"
expect "--distribute-saved-activations without --recompute-method" "you need to use a recompute method" \
  "$(meg 2 --tensor-model-parallel-size 2 --recompute-granularity full --distribute-saved-activations)"
echo "activation checkpointing: $pass passed, $fail failed"
[ $fail -eq 0 ]
