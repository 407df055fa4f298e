#!/usr/bin/env bash
# Per-rank memory of ZeRO stages 0-3 at DP = 1, 2, 4 (issue: ZeRO), against DeepSpeed's estimator
# printed by the same run. For each layout: the memory plan (params | grads | optimizer state |
# activations, MiB: the address space reserved; stage 3 touches only what it keeps), DeepSpeed's
# estimate_zero2/3_model_states_mem_needs for the model and DP size, and the peak resident set of rank 0 (GNU
# time's maximum RSS). Stage 3 runs twice: "3" with DeepSpeed's defaults (prefetch 5e7 and reuse distance 1e9
# elements keep this small model gathered between forward and backward) and "3/1u" fetching one unit at a
# time (prefetch 0, max live 0, reuse distance 0, reduce bucket 1: parameters and gradients outside the
# partition live for one layer). A GPT of ~35M parameters, 2 iterations.
# Usage: bench/zero_memory.sh   (build from $ZT_BUILD_DIR, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ZT_BUILD_DIR:-build}
[ -x "$BUILD/bin/pretrain_gpt" ] || bash scripts/build.sh >/dev/null
command -v mpirun >/dev/null || { echo "mpirun not found (apt-get install openmpi-bin)"; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (apt-get install time)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --max-position-embeddings 128
       --mock-data --vocab-size 32000 --lr 1e-4 --train-iters 2 --log-interval 1 --eval-iters 0 --micro-batch-size 1)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc)"
printf '%-4s %-5s | %-58s | %-30s | %s\n' DP stage "plan (MiB, per rank)" "DeepSpeed estimate (per GPU)" "rank-0 peak RSS"
for dp in 1 2 4; do
  for st in 0 1 2 3 3/1u; do
    [ $dp = 1 ] && [ "$st" != 0 ] && continue
    extra=""
    [ "$st" = 3/1u ] && extra=', "stage3_prefetch_bucket_size": 0, "stage3_max_live_parameters": 0, "stage3_max_reuse_distance": 0, "reduce_bucket_size": 1'
    printf '{"train_batch_size": %d, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": %d%s}}\n' \
      "$dp" "${st%%/*}" "$extra" > "$tmp/ds.json"
    cat > "$tmp/rank.sh" <<WRAP
#!/usr/bin/env bash
if [ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then exec /usr/bin/time -f "maxrss_kb %M" -o "$tmp/rss" "\$@"; else exec "\$@"; fi
WRAP
    chmod +x "$tmp/rank.sh"
    out=$(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np $dp "$tmp/rank.sh" \
          "$BUILD/bin/pretrain_gpt" "${model[@]}" --global-batch-size $dp --deepspeed --deepspeed_config "$tmp/ds.json" 2>&1)
    plan=$(grep -m1 "memory plan (MiB)" <<<"$out" | sed -E 's/.*memory plan \(MiB\): //')
    est=$(grep -m1 "ZeRO memory:" <<<"$out" | sed -E 's/.*GPUs\): ([0-9.]+) MiB per GPU.*/\1 MiB/' || true)
    [ -n "$est" ] || est="(stage 0: not printed)"
    rss=$(awk '{printf "%.1f MiB", $2 / 1024}' "$tmp/rss")
    printf '%-4s %-5s | %-58s | %-30s | %s\n' $dp "$st" "$plan" "$est" "$rss"
  done
done
