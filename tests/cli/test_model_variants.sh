#!/usr/bin/env bash
# The model-variant flags (docs/gpt.md "Other model variants") through the real programs: the MLP activation Megatron-
# DeepSpeed's ParallelMLP picks from --openai-gelu, --squared-relu, --no-bias-gelu-fusion and --disable-bias-linear
# (each pair of runs that must compute the same model gives the same losses bit for bit, each pair that must not
# differs), --apply-layernorm-1p (the same first loss as the default, and after training its saved LayerNorm weights
# are the default run's minus 1), the refused combinations, the checkpoint checks (another --apply-layernorm-1p refused,
# --use-checkpoint-args restoring it), export_hf's GELU name, --init-method-xavier-uniform (bounds, variance, the same
# weights at TP=2), MoE experts with --squared-relu, and BERT and T5 with the
# flags (BERT's LM-head GELU follows --openai-gelu), BERT and T5 with RMSNorm, SwiGLU and no linear biases in another
# layout. The twin-level checks (gradients against PyTorch) are tests/parity/test_{llama,bert,t5}_parity.py.
# Usage: test_model_variants.sh PRETRAIN_GPT PRETRAIN_BERT PRETRAIN_T5 [PYTHON with h5py]
set -u
GPT=$(readlink -f "${1:?usage: test_model_variants.sh PRETRAIN_GPT PRETRAIN_BERT PRETRAIN_T5 [python3]}")
BERT=$(readlink -f "${2:?pretrain_bert}")
T5=$(readlink -f "${3:?pretrain_t5}")
PY=${4:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/common.sh"
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "SKIP: h5py/numpy not available for $PY"; exit 77; }
bin="$BERT"
. "$HERE/../bert/bert_lib.sh" # $tmp with the sentence-split corpus; bert's tiny flags
bert_tiny=("${tiny[@]}")
cd "$tmp"
t0=$(date +%s)
# init std 0.3: pre-activations of a few units, where the GELU forms differ by 1e-4 .. 1e-3 (at 0.02 the losses
# would agree to the log's 7 digits whatever the form)
G=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
   --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --mock-data --vocab-size 128 --log-interval 1 --eval-iters 0
   --train-iters 3 --init-method-std 0.3 --seed 7)
gpt() { timeout 120 "$GPT" "${G[@]}" "$@" 2>&1; }
losses() { field "$1" "lm loss"; }
# same_model NAME OUT_A OUT_B: both ran 3 iterations with identical losses; differ NAME A B: both ran, losses differ
same_model() {
  if [ "$(losses "$2" | wc -w)" = 3 ] && [ "$(losses "$2")" = "$(losses "$3")" ]; then ok "$1: $(losses "$2")"
  else bad "$1" "'$(losses "$2")' vs '$(losses "$3")' $(grep -m1 error <<<"$2$3")"; fi
}
differ() {
  if [ "$(losses "$2" | wc -w)" = 3 ] && [ "$(losses "$3" | wc -w)" = 3 ] && [ "$(losses "$2")" != "$(losses "$3")" ]
  then ok "$1: $(losses "$2" | cut -d' ' -f1) vs $(losses "$3" | cut -d' ' -f1)"
  else bad "$1" "'$(losses "$2")' vs '$(losses "$3")' $(grep -m1 error <<<"$2$3")"; fi
}

# ---- the MLP's activation, as ParallelMLP picks it
def=$(gpt)
same_model "--openai-gelu = the default fused bias-GELU (both the tanh form)" "$def" "$(gpt --openai-gelu)"
differ "--no-bias-gelu-fusion: F.gelu's erf form, not the tanh form" "$def" "$(gpt --no-bias-gelu-fusion)"
nb=$(gpt --disable-bias-linear)
same_model "--disable-bias-linear clears the fusion: = with --no-bias-gelu-fusion (erf)" "$nb" \
  "$(gpt --disable-bias-linear --no-bias-gelu-fusion)"
differ "--disable-bias-linear --openai-gelu: the tanh form, not erf" "$nb" "$(gpt --disable-bias-linear --openai-gelu)"
sq=$(gpt --squared-relu)
differ "--squared-relu changes the MLP" "$def" "$sq"
grep -qE "^  squared_relu \.+ True$" <<<"$sq" && grep -qE "^  openai_gelu \.+ False$" <<<"$sq" \
  && grep -qE "^  apply_layernorm_1p \.+ False$" <<<"$sq" && ok "the argument dump records the variants" \
  || bad "argument dump" "$(grep -E '^  (squared_relu|openai_gelu|apply_layernorm_1p) ' <<<"$sq")"

# ---- --apply-layernorm-1p: zero-centred weights; the initial model is the default's, and training moves the weights
# by the same steps (their gradients and Adam's updates do not depend on the offset), so weight + 1 = the default's
a=$(gpt --save D --save-interval 3); b=$(gpt --apply-layernorm-1p --save P --save-interval 3)
if [ "$(losses "$a" | cut -d' ' -f1)" = "$(losses "$b" | cut -d' ' -f1)" ] && [ "$(losses "$b" | wc -w)" = 3 ]; then
  ok "--apply-layernorm-1p: iteration 1 = the default's ($(losses "$b" | cut -d' ' -f1))"
else bad "--apply-layernorm-1p iteration 1" "'$(losses "$a")' vs '$(losses "$b")' $(grep -m1 error <<<"$b")"; fi
r=$(cd "$HERE/../checkpoint" && "$PY" - "$tmp/D/global_step3" "$tmp/P/global_step3" <<'PYEOF' 2>&1
import sys, numpy as np, h5_oracle
d, p = h5_oracle.full_state(sys.argv[1]), h5_oracle.full_state(sys.argv[2])
ln = [k for k in d if "layernorm.weight" in k]
if len(ln) != 5 or d.keys() != p.keys():
    print("LayerNorm weights %s; names equal %s" % (ln, d.keys() == p.keys())); sys.exit(1)
worst = max(float(np.max(np.abs(p[k]["weights"] + 1.0 - d[k]["weights"]))) for k in ln)
moved = min(float(np.max(np.abs(d[k]["weights"] - 1.0))) for k in ln)
if not (worst <= 1e-6 and moved > 1e-4):
    print("max |w_1p + 1 - w| = %.3g, smallest move of the default's %.3g" % (worst, moved)); sys.exit(1)
print("%d LayerNorm weights: saved weight + 1 = the default's within %.1e (they moved by up to %.1e from 1)" %
      (len(ln), worst, max(float(np.max(np.abs(d[k]["weights"] - 1.0))) for k in ln)))
PYEOF
) && ok "--apply-layernorm-1p checkpoint: $r" || bad "--apply-layernorm-1p weights" "$r"
# a checkpoint of the other form is refused; --use-checkpoint-args restores the flag and continues
out=$(gpt --load P --train-iters 4); rc=$?
[ $rc -ne 0 ] && grep -q "saved with apply_layernorm_1p True, this run has False" <<<"$out" \
  && ! grep -q "^ iteration" <<<"$out" && ok "a --apply-layernorm-1p checkpoint loaded without it: refused" \
  || bad "1p checkpoint without 1p" "rc=$rc $(grep -m1 error <<<"$out")"
out=$(gpt --load D --train-iters 4 --apply-layernorm-1p); rc=$?
[ $rc -ne 0 ] && grep -q "saved with apply_layernorm_1p False, this run has True" <<<"$out" \
  && ok "a default checkpoint loaded with --apply-layernorm-1p: refused" || bad "default checkpoint with 1p" \
  "rc=$rc $(grep -m1 error <<<"$out")"
out=$(gpt --load P --train-iters 4 --use-checkpoint-args --use-checkpoint-opt_param-scheduler); rc=$?
[ $rc -eq 0 ] && grep -q "Setting apply_layernorm_1p to True from checkpoint" <<<"$out" \
  && [ "$(losses "$out" | wc -w)" = 1 ] && ok "--use-checkpoint-args restores apply_layernorm_1p and continues" \
  || bad "--use-checkpoint-args 1p" "rc=$rc $(grep -m1 -E 'error|Setting apply' <<<"$out")"
out=$(gpt --load D --train-iters 4 --squared-relu); rc=$?
[ $rc -ne 0 ] && grep -q "saved with squared_relu False, this run has True" <<<"$out" \
  && ok "a checkpoint loaded with another --squared-relu: refused" || bad "squared_relu checkpoint" \
  "rc=$rc $(grep -m1 error <<<"$out")"

# export_hf: the activation in config.json (the squared ReLU's logits: tests/checkpoint/test_tools.py); a 1p
# checkpoint's LayerNorm weights + 1 (then the whole exported model is the default run's to rounding: the two
# trained alike)
EXP="$(dirname "$GPT")/export_hf"
gpt --no-bias-gelu-fusion --save E --save-interval 3 >/dev/null
gpt --squared-relu --save S --save-interval 3 >/dev/null
o1=$("$EXP" D HD 2>&1); o2=$("$EXP" E HE 2>&1); o3=$("$EXP" S HS 2>&1); rc3=$?
grep -q '"activation_function": "gelu_new"' HD/config.json 2>/dev/null \
  && grep -q '"activation_function": "gelu"' HE/config.json 2>/dev/null && [ $rc3 -eq 0 ] \
  && grep -q '"activation_function": "relu2"' HS/config.json 2>/dev/null \
  && ok "export_hf: gelu_new for the fused bias-GELU, gelu for --no-bias-gelu-fusion, relu2 for --squared-relu" \
  || bad "export_hf" "$(tail -1 <<<"$o1") | $(tail -1 <<<"$o2") | rc=$rc3 $(tail -1 <<<"$o3")"
o4=$("$EXP" P HP 2>&1)
r=$(cd "$HERE/../parity" && "$PY" - "$tmp/HD/model.safetensors" "$tmp/HP/model.safetensors" <<'PYEOF' 2>&1
import sys, numpy as np, parity_lib
d, p = parity_lib.read_safetensors(sys.argv[1]), parity_lib.read_safetensors(sys.argv[2])
ln = [k for k in d if k.endswith("ln_1.weight") or k.endswith("ln_2.weight") or k.endswith("ln_f.weight")]
same = d.keys() == p.keys()
worst_ln = max(float(np.max(np.abs(d[k] - p[k]))) for k in ln) if same else float("inf")
# (the other tensors are exported as ever; Adam turns the runs' last-bit differences into visible ones in the
# near-zero key biases, so they are not compared here)
if len(ln) != 5 or worst_ln > 1e-6:
    print("LayerNorm weights %d, names equal %s, worst LayerNorm difference %.3g" % (len(ln), same, worst_ln))
    sys.exit(1)
print("its 5 LayerNorm weights within %.1e of the default run's export (weight + 1)" % worst_ln)
PYEOF
) && ok "export_hf of a --apply-layernorm-1p checkpoint: weight + 1; $r" || bad "export_hf 1p" "$r $(tail -1 <<<"$o4")"

# ---- --init-method-xavier-uniform: every N(0, std) matrix starts U(+-sqrt(6 / (fan_in + fan_out))) of the whole
# matrix, the same weights in every tensor-parallel layout (lr 0: the saved weights are the initial ones)
xv=(--init-method-xavier-uniform --lr 0 --train-iters 1 --make-vocab-size-divisible-by 64) # 128 rows at TP=1 and 2
gpt "${xv[@]}" --save X1 >/dev/null
timeout 120 "${mpi[@]}" -np 2 "$GPT" "${G[@]}" "${xv[@]}" --tensor-model-parallel-size 2 --save X2 >/dev/null 2>&1
gpt --lr 0 --train-iters 1 --save N1 >/dev/null
r=$(cd "$HERE/../checkpoint" && "$PY" - "$tmp/X1/global_step1" "$tmp/X2/global_step1" "$tmp/N1/global_step1" <<'PYEOF' 2>&1
import sys, numpy as np, h5_oracle
x1, x2, n1 = (h5_oracle.full_state(d) for d in sys.argv[1:4])
mats = sorted(k for k in x1 if np.asarray(x1[k]["weights"]).ndim == 2)
bad = []
for k in mats:
    w = np.asarray(x1[k]["weights"], dtype=np.float64)
    out, inp = w.shape
    b = (6.0 / (inp + out)) ** 0.5
    m = np.abs(w).max()
    if not (m <= b * (1 + 1e-6) and m > 0.95 * b and abs(w.var() / (b * b / 3) - 1) < 0.1):
        bad.append("%s: max %.4g, bound %.4g, var/(b^2/3) %.3f" % (k, m, b, w.var() / (b * b / 3)))
    if not np.array_equal(x1[k]["weights"], x2[k]["weights"]):
        bad.append("%s differs at TP=2" % k)
    if np.array_equal(x1[k]["weights"], n1[k]["weights"]):
        bad.append("%s equals the N(0, std) run's" % k)
if len(mats) != 10 or bad:
    print("%d matrices; %s" % (len(mats), "; ".join(bad[:4]))); sys.exit(1)
print("%d weight matrices U(+-sqrt(6/(in+out))) (max/bound and variance checked), equal at TP=2, unlike the default's"
      % len(mats))
PYEOF
) && ok "--init-method-xavier-uniform: $r" || bad "--init-method-xavier-uniform" "$r"

# ---- refusals, before any work
refuse() { # name, message, flags...
  local name="$1" msg="$2" o rc; shift 2
  o=$(gpt "$@"); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$msg" <<<"$o" && ! grep -q "^ iteration" <<<"$o"; then ok "refused: $name"
  else bad "refusal: $name" "rc=$rc want '$msg', got '$(grep -m1 error <<<"$o")'"; fi
}
refuse "--openai-gelu --swiglu" "--openai-gelu with --swiglu: both choose the MLP's activation" --openai-gelu --swiglu
refuse "--swiglu --squared-relu" "--swiglu with --squared-relu: both choose the MLP's activation" --swiglu --squared-relu
refuse "--openai-gelu --squared-relu" "--openai-gelu with --squared-relu" --openai-gelu --squared-relu
refuse "--apply-layernorm-1p --normalization rmsnorm" "--apply-layernorm-1p with --normalization rmsnorm" \
  --apply-layernorm-1p --normalization rmsnorm
printf '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "flops_profiler": {"enabled": true}}\n' > fp.json
# the flops profiler's tree takes the variants (their counts: tests/profiler/test_flops_profiler.c)
o=$(gpt --squared-relu --deepspeed --deepspeed_config fp.json)
grep -q "ParallelMLP" <<<"$o" && [ "$(losses "$o" | wc -w)" -eq 3 ] && ok "the flops profiler with --squared-relu" ||
  bad "flops profiler, squared ReLU" "$(grep -m1 error <<<"$o")"
o=$(gpt --normalization rmsnorm --swiglu --disable-bias-linear --use-rotary-position-embeddings \
    --num-key-value-heads 2 --deepspeed --deepspeed_config fp.json)
grep -q "(final_layernorm): RMSNorm" <<<"$o" && grep -q "(rotary_pos_emb): RotaryEmbedding" <<<"$o" &&
  ! grep -q "(position_embeddings)" <<<"$o" && [ "$(losses "$o" | wc -w)" -eq 3 ] &&
  ok "the flops profiler with the Llama-style variants: RMSNorm and RotaryEmbedding modules" ||
  bad "flops profiler, Llama-style" "$(grep -m1 error <<<"$o")$(grep -m3 -E "final_layernorm|rotary" <<<"$o")"

# ---- MoE experts take the activation (DeepSpeed's experts are ParallelMLPs)
moe=(--num-experts 2 --moe-expert-parallel-size 1)
differ "MoE experts with --squared-relu" "$(gpt "${moe[@]}")" "$(gpt "${moe[@]}" --squared-relu)"

# ---- BERT and T5: the same layer (and BERT's LM-head GELU)
bert() { timeout 120 "$BERT" "${bert_tiny[@]}" --micro-batch-size 4 --train-iters 3 --eval-iters 0 "$@" 2>&1; }
bd=$(bert --init-method-std 0.3)
differ "BERT --openai-gelu: the LM head's GELU in the tanh form (the layers' MLP is the tanh form already)" "$bd" \
  "$(bert --init-method-std 0.3 --openai-gelu)"
b1=$(bert --apply-layernorm-1p --squared-relu)
bb=$(bert --squared-relu)
[ "$(losses "$b1" | cut -d' ' -f1)" = "$(losses "$bb" | cut -d' ' -f1)" ] && [ "$(losses "$b1" | wc -w)" = 3 ] \
  && ok "BERT --apply-layernorm-1p --squared-relu: iteration 1 = --squared-relu's ($(losses "$b1" | cut -d' ' -f1))" \
  || bad "BERT 1p" "'$(losses "$b1")' vs '$(losses "$bb")' $(grep -m1 error <<<"$b1")"
differ "BERT --squared-relu changes the MLP" "$(bert)" "$bb"
t5=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --decoder-seq-length 16
    --max-position-embeddings 32 --data-path "$data" --vocab-file "$vocab" --vocab-extra-ids 10 --split 90,10,0
    --lr 1e-3 --train-iters 3 --log-interval 1 --eval-iters 0 --global-batch-size 8 --micro-batch-size 4 --seed 1234)
t5run() { timeout 120 "$T5" "${t5[@]}" "$@" 2>&1; }
td=$(t5run); t1=$(t5run --apply-layernorm-1p --save T1 --save-interval 3)
[ "$(losses "$t1" | cut -d' ' -f1)" = "$(losses "$td" | cut -d' ' -f1)" ] && [ "$(losses "$t1" | wc -w)" = 3 ] \
  && ok "T5 --apply-layernorm-1p: iteration 1 = the default's ($(losses "$t1" | cut -d' ' -f1))" \
  || bad "T5 1p" "'$(losses "$t1")' vs '$(losses "$td")' $(grep -m1 error <<<"$t1")"
r=$(cd "$HERE/../checkpoint" && "$PY" - "$tmp/T1/global_step3" <<'PYEOF' 2>&1
import sys, numpy as np, h5_oracle
s = h5_oracle.full_state(sys.argv[1])
ln = sorted(k for k in s if "layernorm.weight" in k)
big = [k for k in ln if float(np.max(np.abs(s[k]["weights"]))) > 0.1]
kinds = {k.split(".")[-2] for k in ln}
want = {"input_layernorm", "post_attention_layernorm", "post_inter_attention_layernorm", "final_layernorm"}
if big or kinds != want:
    print("weights far from 0: %s; kinds %s" % (big, sorted(kinds))); sys.exit(1)
print("all %d LayerNorm weights (incl. the decoder's post_inter_attention) near 0 after 3 steps" % len(ln))
PYEOF
) && ok "T5 --apply-layernorm-1p checkpoint: $r" || bad "T5 1p weights" "$r"
differ "T5 --squared-relu changes the MLP" "$td" "$(t5run --squared-relu)"

# ---- BERT and T5 with the Llama-style layer and rotary embeddings: another layout gives one process's losses (the
# layer's gradients against PyTorch: test_bert_parity.py, test_t5_parity.py); B1/T1 hold the one-process run
bert_tp2_same() { # NAME SAVE_DIR FLAGS...: one process (saved to SAVE_DIR) = TP=2 + SP
  local name=$1 save=$2
  shift 2
  B1=$(bert "$@" --save "$save" --save-interval 3)
  local b2
  b2=$(timeout 120 "${mpi[@]}" -np 2 "$BERT" "${bert_tiny[@]}" --micro-batch-size 4 --train-iters 3 --eval-iters 0 \
       "$@" --tensor-model-parallel-size 2 --sequence-parallel 2>&1)
  [ "$(losses "$B1" | wc -w)" = 3 ] && close "$(losses "$B1")" "$(losses "$b2")" 1e-5 \
    && ok "BERT $name: TP=2 + SP = one process ($(losses "$b2"))" \
    || bad "BERT $name TP=2" "'$(losses "$B1")' vs '$(losses "$b2")' $(grep -m1 error <<<"$B1$b2")"
}
t5_pp2_same() { # NAME FLAGS...: one process = PP=2 split between encoder and decoder
  local name=$1
  shift
  T1=$(t5run "$@")
  local t2
  t2=$(timeout 120 "${mpi[@]}" -np 2 "$T5" "${t5[@]}" "$@" --pipeline-model-parallel-size 2 \
       --pipeline-model-parallel-split-rank 1 2>&1)
  [ "$(losses "$T1" | wc -w)" = 3 ] && close "$(losses "$T1")" "$(losses "$t2")" 1e-5 \
    && ok "T5 $name: PP=2 (encoder | decoder) = one process ($(losses "$t2"))" \
    || bad "T5 $name PP=2" "'$(losses "$T1")' vs '$(losses "$t2")' $(grep -m1 error <<<"$T1$t2")"
}
lv=(--normalization rmsnorm --swiglu --disable-bias-linear)
bert_tp2_same "RMSNorm + SwiGLU + no linear biases" BL "${lv[@]}"
t5_pp2_same "RMSNorm + SwiGLU + no linear biases" "${lv[@]}"
# rotary embeddings on half of each head (theta 500); BERT also with 2 key/value heads of 4 (test_bert_parity.py's
# rope_gqa, test_t5_parity.py's rope)
rg=(--use-rotary-position-embeddings --rotary-percent 0.5 --rotary-position-embeddings-theta 500)
bert_tp2_same "rotary (half the head, theta 500) + 2 key/value heads" BR "${rg[@]}" --num-key-value-heads 2
differ "BERT rotary + GQA is another model than the default" "$(bert)" "$B1"
t5_pp2_same "rotary (half the head, theta 500)" "${rg[@]}"
differ "T5 rotary is another model than the default" "$td" "$T1"
# export_hf: MegatronBert can express neither
o=$("$EXP" BL HBL 2>&1); rc=$?
[ $rc -ne 0 ] && [ ! -e HBL ] && grep -q "which Hugging Face's MegatronBert (LayerNorm, one GELU" <<<"$o" \
  && ok "export_hf refuses a Llama-style BERT" || bad "export_hf Llama-style BERT" "rc=$rc $(tail -1 <<<"$o")"
o=$("$EXP" BR HBR 2>&1); rc=$?
[ $rc -ne 0 ] && [ ! -e HBR ] && grep -q "rotary or no position embeddings or --num-key-value-heads" <<<"$o" \
  && ok "export_hf refuses a rotary/GQA BERT" || bad "export_hf rotary BERT" "rc=$rc $(tail -1 <<<"$o")"
# T5 refuses GQA (Megatron-DeepSpeed's cross-attention asserts) and rotary with a decoder longer than the encoder
o=$(t5run --num-key-value-heads 2); rc=$?
[ $rc -ne 0 ] && grep -qF "GQA + cross-attn not tested yet" <<<"$o" && ok "pretrain_t5 refuses --num-key-value-heads" \
  || bad "pretrain_t5 GQA" "rc=$rc $(grep -m1 error <<<"$o")"
o=$(t5run --use-rotary-position-embeddings --decoder-seq-length 40 --max-position-embeddings 40); rc=$?
[ $rc -ne 0 ] && grep -qF "is above --encoder-seq-length" <<<"$o" \
  && ok "pretrain_t5 refuses rotary with a decoder longer than the encoder" \
  || bad "T5 rotary Td > Te" "rc=$rc $(grep -m1 error <<<"$o")"

echo "($(( $(date +%s) - t0 )) s)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
