# Sourced by the ZeRO training tests (after tests/lib/common.sh): a temporary folder, the tiny GPT both use, its
# ds_config files, the mpirun runner and the refusal check. ZT_RUN_ENV: extra "-x VAR" for mpirun.
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --mock-data --vocab-size 200 --lr 1e-3 --train-iters 10 --log-interval 1 --eval-interval 10 --eval-iters 1
      --micro-batch-size 2 --global-batch-size 16 --seed 3)
cfg() { # name, json members after the batch keys
  printf '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, %s}\n' "$2" > "$tmp/$1.json"
}
run() { # np, config name, extra flags...
  local np="$1" name="$2"; shift 2
  timeout 300 "${mpi[@]}" "${run_env[@]}" -np "$np" "$bin" "${tiny[@]}" --deepspeed --deepspeed_config "$tmp/$name.json" "$@" 2>&1
}
run_env=()
expect() { # name, message, output
  if grep -qF -- "$2" <<<"$3" && ! grep -q "^ iteration " <<<"$3"; then ok "refused: $1"; else bad "refused: $1" "$(grep -m1 error <<<"$3")"; fi
}
