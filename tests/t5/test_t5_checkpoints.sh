#!/usr/bin/env bash
# pretrain_t5's checkpoints (mpirun, label mpi; docs/checkpoints.md), a tiny T5 with dropout on:
#  - exact resume: 6 iterations straight (saves at 3 and 6) = 3, exit, resume 3: the iteration lines (lm loss, grad
#    norm, ...; timings left out) and validation lines identical, every dataset of the final checkpoint bitwise equal
#    (h5py), in one process, at TP=2, at PP=2 (split rank 1) and under ZeRO-3 (DP=2);
#  - resharding: TP=2 and PP=2 checkpoints of iteration 3 continued by one process, a one-process one by TP=2 x DP=2
#    and by PP=2 x TP=2: iterations 4-6 equal to the straight run's within 1e-5; the final TP=2 and PP=2 checkpoints
#    loaded by one process and saved again reassemble to the same full weights and optimizer states
#    (tests/checkpoint/h5_oracle.py full);
#  - zero_to_fp32 on T5 ZeRO-2 and ZeRO-3 (DP=2) checkpoints: T5's names (lm_head.bias, the decoder's
#    inter_attention, both final layernorms, ...), every tensor equal to the reassembled fp32 masters and to the saved
#    weights (fp32 training);
#  - --use-checkpoint-args takes the encoder's and the decoder's shape from the checkpoint;
#  - a checkpoint of another shape (a decoder of 3 layers) is refused naming the parameter.
# Usage: test_t5_checkpoints.sh PRETRAIN_T5 [PYTHON with h5py]   (SKIP, exit 77, without mpirun or h5py)
set -u
. "$(dirname "$0")/../lib/common.sh"
bin="$1"; PY="${2:-/usr/bin/python3}"
oracle="$(cd "$(dirname "$0")/../checkpoint" && pwd)/h5_oracle.py"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; }
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $PY"; exit 77; }
. "$(dirname "$0")/t5_lib.sh"
cd "$tmp"
t0=$(date +%s)
tiny+=(--micro-batch-size 4)
lines() { # the iteration lines without their timings, and the validation lines
  grep -E "^ iteration | validation loss at" <<<"$1" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//;
    s/samples per second: [0-9.]+ \|//; s/tokens per gpu per second \(tgs\): [0-9.]+ \|//; s/TFLOPs: [0-9.]+ \|//; s/ +/ /g' | tr '\n' '#'; }
runs() { if [ "$1" = 1 ]; then one "${@:2}"; else run "$@"; fi; }

# resume_case NAME NP FLAGS...: A = 6 straight, B = 3 + exit + resume 3
resume_case() {
  local name="$1" np="$2"; shift 2
  local a b1 b2 cmp
  a=$(runs $np "$@" --save "A_$name" --save-interval 3); b1=$(runs $np "$@" --save "B_$name" --exit-interval 3)
  b2=$(runs $np "$@" --save "B_$name" --save-interval 3 --load "B_$name")
  cmp=$("$PY" "$oracle" same "A_$name/global_step6" "B_$name/global_step6" 2>&1)
  if [ "$(field "$a" "lm loss" | wc -w)" = 6 ] && [ "$(lines "$a")" == "$(lines "$b1")$(lines "$b2")" ] \
     && grep -q "^equal" <<<"$cmp" && grep -q "lm loss" <<<"$b2"; then
    ok "$name: 6 straight = 3 + resume 3, log lines identical (last lm $(field "$a" "lm loss" | awk '{print $NF}')), final checkpoint bitwise ($cmp)"
  else
    bad "$name resume" "'$(lines "$a")' vs '$(lines "$b1")$(lines "$b2")' $cmp $(grep -m2 error <<<"$b2")"
  fi
  STRAIGHT="$a"
}
resume_case "one process" 1; s1="$STRAIGHT"
resume_case "TP=2" 2 --tensor-model-parallel-size 2; s_tp="$STRAIGHT"
resume_case "PP=2" 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1; s_pp="$STRAIGHT"
cfg() { printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, %s}\n' "$2" > "$tmp/$1.json"; }
cfg z2 '"zero_optimization": {"stage": 2}'
cfg z3 '"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}'
resume_case "ZeRO-3 DP=2" 2 --deepspeed --deepspeed_config z3.json

# resharding: continue a checkpoint of iteration 3 in another layout (iterations 4-6 within 1e-5)
cont() { # name, straight output, continued output, rc
  local want got
  want=$(field "$2" "lm loss" | cut -d' ' -f4-6) got=$(field "$3" "lm loss")
  if [ "$4" -eq 0 ] && close "$want" "$got" 1e-5; then
    ok "$1: iterations 4-6 = the straight run's (worst $(worst "$got" "$want"))"
  else bad "$1" "rc=$4 want '$want' got '$got' $(grep -m2 error <<<"$3")"; fi
}
out=$(one --load "B_TP=2" --load-tag global_step3); cont "TP=2 checkpoint continued by one process" "$s_tp" "$out" $?
out=$(run 4 --tensor-model-parallel-size 2 --load "B_one process" --load-tag global_step3)
cont "one-process checkpoint continued by TP=2 x DP=2" "$s1" "$out" $?
out=$(one --load "B_PP=2" --load-tag global_step3); cont "PP=2 checkpoint continued by one process" "$s_pp" "$out" $?
out=$(run 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-split-rank 1 \
      --load "B_one process" --load-tag global_step3)
cont "one-process checkpoint continued by PP=2 x TP=2" "$s1" "$out" $?
# the final checkpoints loaded into another layout and saved again: the same full states
out=$(one --load "A_TP=2" --save R1); rc=$?
cmp=$("$PY" "$oracle" full "A_TP=2/global_step6" R1/global_step6 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "TP=2 checkpoint loaded by one process and saved: $cmp" || bad "TP=2 -> 1" "rc=$rc $cmp"
out=$(one --load "A_PP=2" --save RP1); rc=$?
cmp=$("$PY" "$oracle" full "A_PP=2/global_step6" RP1/global_step6 2>&1)
[ $rc -eq 0 ] && grep -q "^equal" <<<"$cmp" && ok "PP=2 checkpoint loaded by one process and saved: $cmp" || bad "PP=2 -> 1" "rc=$rc $cmp"

# --use-checkpoint-args: the encoder's and the decoder's shape from the checkpoint's saved arguments
r3=$(timeout 300 "$bin" --hidden-size 32 --num-attention-heads 4 --max-position-embeddings 32 --micro-batch-size 4 \
     --data-path "$data" --vocab-file "$vocab" --vocab-extra-ids 10 --split 90,10,0 --lr 1e-3 --train-iters 7 \
     --log-interval 1 --eval-iters 0 --global-batch-size 8 --seed 1234 --load "A_one process" --use-checkpoint-args --use-checkpoint-opt_param-scheduler 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "Setting decoder_num_layers to 2 from checkpoint" <<<"$r3" \
  && grep -q "Setting decoder_seq_length to 16 from checkpoint" <<<"$r3" && grep -q "Setting num_layers to 2" <<<"$r3" \
  && [ "$(field "$r3" "lm loss" | wc -w)" = 1 ] \
  && ok "--use-checkpoint-args restores --num-layers, --decoder-num-layers and --decoder-seq-length and continues (iteration 7: lm $(field "$r3" "lm loss"))" \
  || bad "--use-checkpoint-args" "rc=$rc $(grep -E 'Setting|error' <<<"$r3" | head -5)"

# another shape: a decoder of 3 layers refused, naming what differs, before any iteration
out=$(one --load "A_one process" --decoder-num-layers 3 --save R3); rc=$?
[ $rc -ne 0 ] && grep -q "decoder" <<<"$out" && ! grep -q "^ iteration" <<<"$out" \
  && ok "a checkpoint of 2 decoder layers loaded with --decoder-num-layers 3: refused ($(grep -m1 error <<<"$out" | cut -c1-160))" \
  || bad "decoder layers mismatch" "rc=$rc $(grep -m2 error <<<"$out")"

# zero_to_fp32 on ZeRO checkpoints (DP=2): BERT's names, the fp32 masters, the saved weights
for st in 2 3; do
  tr=$(run 2 --deepspeed --deepspeed_config z$st.json --save Z$st); trc=$?
  o=$("$(dirname "$bin")/zero_to_fp32" Z$st F$st 2>&1); rc=$?
  r=$(cd "$(dirname "$oracle")" && "$PY" - "$tmp/Z$st/global_step6" "$tmp/F$st/model.h5" <<'PYEOF' 2>&1
import sys, h5py, numpy as np, h5_oracle
full = h5_oracle.full_state(sys.argv[1])
with h5py.File(sys.argv[2], "r") as f:
    got = {k: f[k][()] for k in f}
need = ["lm_head.bias", "language_model.embedding.word_embeddings.weight",
        "language_model.embedding.position_embeddings.weight", "language_model.encoder.final_layernorm.weight",
        "language_model.decoder.final_layernorm.bias", "language_model.encoder.layers.1.mlp.dense_h_to_4h.weight",
        "language_model.decoder.layers.1.inter_attention.key_value.weight",
        "language_model.decoder.layers.0.inter_attention.query.bias",
        "language_model.decoder.layers.1.post_inter_attention_layernorm.weight"]
missing = [k for k in need if k not in got]
if missing or got.keys() != full.keys():
    print("names: missing %s, extra %s" % (missing or sorted(set(full) - set(got)), sorted(set(got) - set(full))))
    sys.exit(1)
bad = [k for k in full if not np.array_equal(got[k], full[k]["fp32"].reshape(full[k]["shape"]))]
badw = [k for k in full if not np.array_equal(got[k], full[k]["weights"])]
if bad or badw:
    print("differ from the masters: %s; from the weights: %s" % (bad[:3], badw[:3]))
    sys.exit(1)
print("%d tensors (%d elements) incl. lm_head.bias %s, decoder.layers.1.inter_attention.key_value.weight %s" % (len(got),
      sum(v.size for v in got.values()), got["lm_head.bias"].shape,
      got["language_model.decoder.layers.1.inter_attention.key_value.weight"].shape))
PYEOF
); prc=$?
  if [ $rc -eq 0 ] && [ $prc -eq 0 ] && grep -q "zero stage $st" <<<"$o" && grep -q "tensors" <<<"$r" && ! grep -q "differ\|names" <<<"$r"; then
    ok "zero_to_fp32 of a T5 ZeRO-$st DP=2 checkpoint: $r, equal to the fp32 masters and the saved weights"
  else bad "zero_to_fp32 ZeRO-$st" "training rc=$trc $(grep -m3 -iE 'error|abort|signal' <<<"$tr"); rc=$rc $r $(tail -2 <<<"$o")"; fi
done
echo "($(( $(date +%s) - t0 )) s)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
