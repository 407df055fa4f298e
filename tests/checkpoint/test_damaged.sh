#!/usr/bin/env bash
# Damaged HDF5 files under a recomputed manifest (issue 25 item 4; docs/checkpoints.md): the checkpoint fuzzer's
# findings (tests/fuzz/regress/checkpoint/: files on which HDF5 itself segfaults or spins) are unpacked into
# checkpoint directories and given to --load, inspect_checkpoint, zero_to_fp32 and export_hf: each must end with
# exit status 1 and a checkpoint error naming the file, within the probe's time limit (ZT_CKPT_PROBE_TIMEOUT=10
# here), never a signal or a hang; a global heap HDF5 would decode forever is refused at once, naming it; and a
# dataset whose header claims more elements than it stores is refused before anything is allocated for it.
# Usage: test_damaged.sh PRETRAIN_GPT INSPECT_CHECKPOINT ZERO_TO_FP32 EXPORT_HF PYTHON
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; inspect="$2"; z2f="$3"; export_hf="$4"; py="${5:-/usr/bin/python3}"
here="$(cd "$(dirname "$0")" && pwd)"
regress="$here/../fuzz/regress/checkpoint"
"$py" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $py"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1 ZT_CKPT_PROBE_TIMEOUT=10
# the fuzzer's seeds are checkpoints of this model
seedmodel=(--num-layers 1 --hidden-size 8 --num-attention-heads 2 --seq-length 4 --max-position-embeddings 4
           --micro-batch-size 1 --global-batch-size 1 --mock-data --vocab-size 16 --make-vocab-size-divisible-by 1
           --lr 1e-3 --train-iters 2 --eval-iters 0 --eval-interval 1000 --log-interval 100)
n=0; bad_list=""
for input in "$regress"/*; do
  name=$(basename "$input"); rm -rf D; "$py" "$here/fuzz_input_to_dir.py" "$input" D
  for tool in load inspect zero_to_fp32 export_hf; do
    case $tool in
      load) cmd=("$bin" "${seedmodel[@]}" --load D) ;;
      inspect) cmd=("$inspect" D) ;;
      zero_to_fp32) cmd=("$z2f" D out_z) ;;
      export_hf) cmd=("$export_hf" D out_h) ;;
    esac
    out=$(timeout 60 "${cmd[@]}" 2>&1); rc=$?
    n=$((n + 1))
    if [ $rc -ne 1 ] || ! grep -qE "^error: checkpoint: D/t/[a-z0-9_]+\.h5: " <<<"$out"; then
      bad_list="$bad_list $name/$tool(rc=$rc: $(grep -iE 'error|fault' <<<"$out" | head -1 | cut -c1-160))"
    fi
  done
done
[ $n -ge 16 ] && [ -z "$bad_list" ] && ok "$n runs on $(ls "$regress" | wc -l) damaged checkpoints (--load, inspect_checkpoint, zero_to_fp32, export_hf): exit 1 naming the file" ||
  bad "damaged files" "$n runs:$bad_list"

# hang_1 (a global heap collection with a free-space object of 0 bytes, on which HDF5 1.10 loops forever) is refused
# by the check of the heaps in the manifest's crc32c pass, before HDF5 or the probe's time limit is involved
rm -rf D; "$py" "$here/fuzz_input_to_dir.py" "$regress/hang_1" D
t0=$(date +%s%N)
out=$(ZT_CKPT_PROBE_TIMEOUT=300 timeout 60 "$inspect" D 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 1 ] && [ $ms -lt 5000 ] && grep -qE "^error: checkpoint: D/t/mp_rank_00_model_states.h5: the global heap collection at byte [0-9]+ \([0-9]+ bytes\) holds a free-space object of 0 bytes \(HDF5 1.10 would decode it forever\) at byte [0-9]+: the file is corrupted" <<<"$out" &&
  ok "a global heap HDF5 would decode forever is refused in $ms ms, naming the collection" ||
  bad "global heap check" "rc=$rc ${ms} ms: $(head -2 <<<"$out")"

# slow_vlen_attr_1 (a damaged string length in the SGD momentum state's dtype attribute: zero_to_fp32 took 16.7 GB
# and 17.8 s before the probe child had a memory budget) is refused at once; a bad ZT_CKPT_PROBE_MEMORY_MB is refused
rm -rf D out_z; "$py" "$here/fuzz_input_to_dir.py" "$regress/slow_vlen_attr_1" D
t0=$(date +%s%N)
out=$(timeout 60 "$z2f" D out_z 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 1 ] && [ $ms -lt 5000 ] && [ ! -e out_z/model.h5 ] &&
  grep -qE "^error: checkpoint: D/t/zero_pp_rank_0_mp_rank_00_optim_states.h5: cannot read attribute dtype of momentum_buffer" <<<"$out" &&
  ok "a string claiming gigabytes is refused by the probe's memory budget in $ms ms" ||
  bad "probe memory budget" "rc=$rc ${ms} ms: $(head -2 <<<"$out")"
out=$(ZT_CKPT_PROBE_MEMORY_MB=12x timeout 60 "$inspect" D 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qF "error: checkpoint: ZT_CKPT_PROBE_MEMORY_MB='12x': wants a whole number of MiB, 1 to 1073741824" <<<"$out" &&
  ok "ZT_CKPT_PROBE_MEMORY_MB=12x refused naming the variable" || bad "ZT_CKPT_PROBE_MEMORY_MB check" "rc=$rc $(head -2 <<<"$out")"

# a dataset header edited to claim 2^30 elements (its storage unchanged), manifest recomputed
"$bin" "${seedmodel[@]}" --save S > s.log 2>&1 || { bad "seed model save" "$(tail -2 s.log)"; }
"$py" - <<'PY'
import h5py, numpy as np
p = "S/global_step2/mp_rank_00_model_states.h5"
with h5py.File(p, "r+") as f:
    g = f["module"]
    name = "language_model.encoder.final_layernorm.bias"
    attrs = dict(g[name].attrs)
    del g[name]
    d = g.create_dataset(name, shape=(1 << 30,), dtype="f4")   # contiguous, never written: no storage
    for k, v in attrs.items():
        d.attrs[k] = v
    d.attrs["full_shape"] = np.array([1 << 30], dtype=np.int64)
PY
"$py" "$here/manifest.py" S/global_step2
out=$( (ulimit -v 4000000; timeout 60 "$z2f" S out_s) 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qE "^error: checkpoint: S/global_step2/mp_rank_00_model_states.h5: dataset language_model.encoder.final_layernorm.bias claims 1073741824 elements \(4294967296 bytes\) but stores 0 bytes: a damaged file" <<<"$out" &&
  ok "a dataset claiming 2^30 elements it does not store is refused before the allocation" || bad "claimed size" "rc=$rc $(grep -iE 'error' <<<"$out" | head -1)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
