#!/usr/bin/env bash
# The flops profiler under tensor parallelism counts one GPU as DeepSpeed's does (docs/flops_profiler.md): a GPT of 2
# layers, h=64, 4 heads, ffn 256, T=64, B=2, V=128 (the same padded vocabulary at TP=1 and 2) profiled at TP=1, TP=2
# and TP=2 with --sequence-parallel. Per GPU at TP=2 the column-parallel linears hold 1/2 of the output columns, the
# row-parallel ones 1/2 of the input rows, the core attention 2 of the 4 heads, the MLP 128 of 256 columns and the
# logits 64 of 128 vocabulary rows: every MAC halves; with --sequence-parallel the LayerNorms run over 64 of the 128
# tokens. Checks module lines (MACs) and the summary's fwd MACs and flops per GPU against the counts derived below.
# Usage: test_flops_tp.sh PRETRAIN_GPT
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
      --micro-batch-size 2 --global-batch-size 2 --mock-data --vocab-size 128 --make-vocab-size-divisible-by 64
      --lr 1e-3 --train-iters 3 --log-interval 1 --eval-iters 0 --seed 1234 --deepspeed --deepspeed_config "$tmp/fp.json")
printf '{"train_batch_size": 2, "train_micro_batch_size_per_gpu": 2, "flops_profiler": {"enabled": true, "profile_step": 2}}\n' \
  >"$tmp/fp.json"
one=$(timeout 300 "$bin" "${tiny[@]}" 2>&1)
two=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --tensor-model-parallel-size 2 2>&1)
sp=$(timeout 300 "${mpi[@]}" -np 2 "$bin" "${tiny[@]}" --tensor-model-parallel-size 2 --sequence-parallel 2>&1)
N=128 C=64 F=256 V=128 L=2 B=2 T=64 NH=4 HD=16
# per layer at TP=1: qkv N C 3C, core 2 B NH T T HD, dense N C C, MLP 2 N C F; logits N C V
layer=$((N * C * 3 * C + 2 * B * NH * T * T * HD + N * C * C + 2 * N * C * F))
macs1=$((L * layer + N * C * V)) macs2=$(((L * layer + N * C * V) / 2))
# elementwise flops: LayerNorms 5 per element (2 per layer and the final one), the core attention's baddbmm output
# and softmax (2 B NH T T), each halved where that rank's share is (the fused bias-GELU counts 0)
ew1=$((L * (2 * 5 * N * C + 2 * B * NH * T * T) + 5 * N * C))
ew2=$((L * (2 * 5 * N * C + B * NH * T * T) + 5 * N * C))
ews=$((L * (5 * N * C + B * NH * T * T) + 5 * N * C / 2))
fmt() { awk -v n="$1" -v u="${2:-}" 'BEGIN { split("1e12 T 1e9 G 1e6 M 1e3 K", a, " ");
  for (i = 1; i < 8; i += 2) if (n >= a[i] + 0) { s = sprintf("%.2f", n / a[i]); sub(/0+$/, "", s); sub(/\.$/, "", s);
  print s " " a[i + 1] u; exit } print n " " u }'; }
summary() { # OUT NAME MACS FLOPS
  local m f
  m=$(grep -m1 "^fwd MACs per GPU:" <<<"$1" | awk '{print $5, $6}')
  f=$(grep -m1 "^fwd flops per GPU:" <<<"$1" | awk '{print $5, $6}')
  if [ "$m" = "$(fmt "$3" MACs)" ] && [ "$f" = "$(fmt "$4")" ]; then ok "$2: fwd MACs per GPU $m, fwd flops per GPU $f"
  else bad "$2 summary" "MACs '$m' (want $(fmt "$3" MACs)), flops '$f' (want $(fmt "$4")); $(grep -m2 -i error <<<"$1")"; fi
}
summary "$one" "TP=1" "$macs1" $((2 * macs1 + ew1))
summary "$two" "TP=2" "$macs2" $((2 * macs2 + ew2))
summary "$sp" "TP=2 with --sequence-parallel" "$macs2" $((2 * macs2 + ews))
module() { # OUT NAME MODULE MACS
  local got
  got=$(grep -m1 "($3): " <<<"$1" | grep -oE "[0-9.]+ [KMG]?MACs =" | sed 's/ =$//')
  [ "$got" = "$(fmt "$4" MACs)" ] && ok "$2: $3 $got" || bad "$2: $3" "'$got', want $(fmt "$4" MACs)"
}
module "$two" "TP=2" query_key_value $((N * C * 3 * C / 2))
module "$two" "TP=2" core_attention $((B * NH * T * T * HD))
module "$two" "TP=2" dense $((N * C * C / 2))
module "$two" "TP=2" dense_h_to_4h $((N * C * F / 2))
module "$one" "TP=1" dense_h_to_4h $((N * C * F))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
