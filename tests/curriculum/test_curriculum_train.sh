#!/bin/bash
# pretrain_gpt under the legacy seqlen curriculum (ds_config curriculum_learning, docs/data_efficiency.md):
#  1. a curriculum at difficulty d trains exactly on the first d tokens of the same samples: its log lines equal
#     those of curriculum_prefix_gpt at --seq-length d (a model planned for d tokens fed the samples of a
#     --seq-length 32 run cut by the test driver), with dropout, and with --reset-position-ids/--reset-attention-mask
#     /--eod-mask-loss;
#  2. min_difficulty = max_difficulty = --seq-length is bit for bit the run without the block;
#  3. the log's curriculum seqlen and consumed tokens follow curriculum_oracle.py (DeepSpeed's scheduler), tokens per
#     gpu per second use the curriculum length, TensorBoard's seqlen/curriculum_seqlen (and vs samples/tokens), the
#     flops profiler's MACs at the profiled iteration's length;
#  4. evaluation runs at the full --seq-length (with --lr 0 the validations equal the run without the block);
#  5. a run resumed mid-curriculum continues it bit for bit;
#  6. refusals before any work.
# Usage: test_curriculum_train.sh PRETRAIN_GPT CURRICULUM_PREFIX_GPT PRETRAIN_BERT PYTHON3
BIN=$1 PREFIX=$2 BERT=$3 PY=$4
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tiny=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 32 --mock-data
      --vocab-size 200 --lr 1e-3 --log-interval 1 --eval-iters 1 --micro-batch-size 2 --global-batch-size 8 --seed 3)
batch='"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2'
cl() { # name, min, max, schedule_type, schedule_config
  printf '{%s, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": %s, "max_difficulty": %s, "schedule_type": "%s", "schedule_config": %s}}\n' \
    "$batch" "$2" "$3" "$4" "$5" > "$1.json"
}
printf '{%s}\n' "$batch" > plain.json
gpt() { timeout 120 "$BIN" "${tiny[@]}" "$@" 2>&1; }
# The iteration lines without the timings and the curriculum field; validation lines as they are.
lines() { grep -E "^ iteration |validation loss at" <<<"$1" | sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ curriculum seqlen: +[0-9]+ \|//; s/ samples per second: .*//'; }
same() { # name, output a, output b, [how many iteration lines at least]
  local a b
  a=$(lines "$2"); b=$(lines "$3")
  if [ -n "$a" ] && [ "$a" == "$b" ] && [ "$(grep -c "^ iteration" <<<"$a")" -ge "${4:-1}" ]; then ok "$1"
  else bad "$1" "$(diff <(echo "$a") <(echo "$b") | head -4)"; fi
}

# ---- 1. truncation = the first d tokens of the same samples -------------------------------------------------------
cl c16 16 16 fixed_linear '{"total_curriculum_step": 10, "difficulty_step": 8}'
a=$(gpt --seq-length 32 --train-iters 4 --eval-interval 10 --eval-iters 0 --deepspeed --deepspeed_config c16.json)
b=$(ZT_PREFIX_OF=32 timeout 120 "$PREFIX" "${tiny[@]}" --seq-length 16 --train-iters 4 --eval-interval 10 \
    --eval-iters 0 --deepspeed --deepspeed_config plain.json 2>&1)
same "difficulty 16 of 32 = a 16-token model on the first 16 tokens of the same samples (dropout on)" "$a" "$b" 4
grep -q "curriculum seqlen:    16 |" <<<"$a" && ! grep -q "curriculum seqlen" <<<"$b" && ok "only the curriculum run logs curriculum seqlen" ||
  bad "curriculum seqlen field" "$(grep -m1 "^ iteration" <<<"$a")"
plain32=$(gpt --seq-length 32 --train-iters 4 --eval-interval 10 --eval-iters 0 --deepspeed --deepspeed_config plain.json)
[ "$(lines "$a")" != "$(lines "$plain32")" ] && ok "difficulty 16 trains differently from the full 32 tokens" ||
  bad "truncation has an effect" "identical to the untruncated run"
R=(--reset-position-ids --reset-attention-mask --eod-mask-loss)
# (--mock-data's documents are 16 to 48 tokens long: ends of documents fall inside the first 24 tokens)
cl c24 24 24 fixed_discrete '{"difficulty": [24, 24], "max_step": [2]}'
a=$(gpt --seq-length 32 --train-iters 3 --eval-interval 10 --eval-iters 0 "${R[@]}" --deepspeed --deepspeed_config c24.json)
b=$(ZT_PREFIX_OF=32 timeout 120 "$PREFIX" "${tiny[@]}" --seq-length 24 --train-iters 3 --eval-interval 10 --eval-iters 0 \
    "${R[@]}" --deepspeed --deepspeed_config plain.json 2>&1)
same "difficulty 24 of 32 with reset position ids / attention mask / eod loss mask = the 24-token prefix run" "$a" "$b" 3
c=$(ZT_PREFIX_OF=32 timeout 120 "$PREFIX" "${tiny[@]}" --seq-length 24 --train-iters 3 --eval-interval 10 --eval-iters 0 \
    --deepspeed --deepspeed_config plain.json 2>&1)
[ "$(lines "$b")" != "$(lines "$c")" ] && ok "the resets change that run (documents end inside the 24 tokens)" ||
  bad "resets have an effect" "same losses with and without --reset-* / --eod-mask-loss"
cl c8 8 8 fixed_discrete '{"difficulty": [8, 8], "max_step": [2]}'

# ---- 2. min = max = --seq-length: no curriculum at all ------------------------------------------------------------
cl full 32 32 fixed_linear '{"total_curriculum_step": 4, "difficulty_step": 8}'
a=$(gpt --seq-length 32 --train-iters 6 --eval-interval 3 --deepspeed --deepspeed_config full.json)
b=$(gpt --seq-length 32 --train-iters 6 --eval-interval 3 --deepspeed --deepspeed_config plain.json)
same "min = max = --seq-length: bit for bit the run without the block (6 iterations, 4 validations)" "$a" "$b" 6

# ---- 3. the schedule in the log and TensorBoard ------------------------------------------------------------------
cl lin 8 32 fixed_linear '{"total_curriculum_step": 6, "difficulty_step": 8}'
cl root 4 32 fixed_root '{"total_curriculum_step": 5, "difficulty_step": 4, "root_degree": 2}'
cl disc 8 32 fixed_discrete '{"difficulty": [8, 24, 16, 32], "max_step": [2, 4, 5]}'
for name in lin root disc; do
  out=$(gpt --seq-length 32 --train-iters 8 --eval-interval 4 --tensorboard-dir "tb_$name" --deepspeed --deepspeed_config "$name.json")
  want=$("$PY" "$HERE/curriculum_oracle.py" "$name.json" 1 8 | tr '\n' ' ')
  got=$(field "$out" "curriculum seqlen")
  [ "$got" == "$want" ] && ok "$name: curriculum seqlen per iteration = DeepSpeed's scheduler ($want)" || bad "$name seqlen" "got $got want $want"
  tok=0 wt=""
  for d in $want; do tok=$((tok + 8 * d)); wt="$wt$tok "; done
  [ "$(field "$out" "consumed tokens")" == "$wt" ] && ok "$name: consumed tokens add 8 samples x the curriculum length" ||
    bad "$name tokens" "got $(field "$out" "consumed tokens") want $wt"
  # tokens per gpu per second = samples per second x the iteration's curriculum length (one process)
  r=$(grep -E "^ iteration " <<<"$out" | sed -E 's/.*samples per second: ([0-9.]+) \| tokens per gpu per second \(tgs\): ([0-9.]+) .*/\1 \2/' |
      paste -d' ' - <(tr ' ' '\n' <<<"$want" | grep .) | awk '{ if ($2 - $1 * $3 > 0.01 * $3 || $1 * $3 - $2 > 0.01 * $3) bad++ } END { print NR, bad + 0 }')
  [ "$r" == "8 0" ] && ok "$name: tokens per gpu per second = samples per second x curriculum seqlen" || bad "$name tgs" "$r"
  got=$(PYTHONPATH="$HERE/../monitor" "$PY" - "tb_$name" <<'PYEOF'
import glob, sys
from tfevents import scalars
ev = scalars(glob.glob(sys.argv[1] + "/events.out.tfevents.*")[0])
for tag in ("seqlen/curriculum_seqlen", "seqlen/curriculum_seqlen vs samples", "seqlen/curriculum_seqlen vs tokens"):
    print(tag, " ".join("%d:%d" % (s, v) for t, s, v in ev if t == tag))
PYEOF
)
  steps="" samples="" tokens="" i=0 tok=0
  for d in $want; do i=$((i + 1)); tok=$((tok + 8 * d)); steps="$steps $i:$d"; samples="$samples $((8 * i)):$d"; tokens="$tokens $tok:$d"; done
  exp=$(printf 'seqlen/curriculum_seqlen%s\nseqlen/curriculum_seqlen vs samples%s\nseqlen/curriculum_seqlen vs tokens%s' "$steps" "$samples" "$tokens")
  [ "$got" == "$exp" ] && ok "$name: TensorBoard seqlen/curriculum_seqlen vs steps, samples, tokens" || bad "$name tensorboard" "$(diff <(echo "$got") <(echo "$exp") | head -3)"
done

# DeepSpeed's flops profiler measures the profiled iteration's forward: at its curriculum length (16 at step 2)
fp='"flops_profiler": {"enabled": true, "profile_step": 1, "module_depth": -1, "top_modules": 1, "detailed": false}'
printf '{%s, %s, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 32, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 4, "difficulty_step": 8}}}\n' "$batch" "$fp" > fpc.json
printf '{%s, %s}\n' "$batch" "$fp" > fpp.json
macs() { grep -E "^(fwd MACs per GPU|fwd flops per GPU|params per GPU):" <<<"$1"; }
a=$(gpt --seq-length 32 --train-iters 3 --eval-interval 10 --eval-iters 0 --deepspeed --deepspeed_config fpc.json)
b=$(gpt --seq-length 16 --train-iters 3 --eval-interval 10 --eval-iters 0 --deepspeed --deepspeed_config fpp.json)
if [ "$(macs "$a" | wc -l)" -eq 3 ] && [ "$(macs "$a")" == "$(macs "$b")" ] && grep -q "curriculum seqlen:    16 |" <<<"$a"; then
  ok "flops profiler at step 2 (curriculum seqlen 16): the MACs and flops of a --seq-length 16 run ($(macs "$a" | grep MACs | sed 's/.*: *//'))"
else bad "flops profiler under curriculum" "$(diff <(macs "$a") <(macs "$b") | head -3)"; fi

# ---- 4. evaluation at the full length ------------------------------------------------------------------------------
a=$(gpt --seq-length 32 --train-iters 4 --eval-interval 2 --lr 0 --deepspeed --deepspeed_config c8.json)
b=$(gpt --seq-length 32 --train-iters 4 --eval-interval 2 --lr 0 --deepspeed --deepspeed_config plain.json)
va=$(grep "validation loss at" <<<"$a"); vb=$(grep "validation loss at" <<<"$b")
if [ "$(wc -l <<<"$va")" -eq 4 ] && [ "$va" == "$vb" ] && [ "$(field "$a" "lm loss")" != "$(field "$b" "lm loss")" ]; then
  ok "evaluation runs at --seq-length 32 while training runs at 8 (lr 0: 4 validations equal the run without the block)"
else bad "evaluation at full length" "$(diff <(echo "$va") <(echo "$vb") | head -3)"; fi

# ---- 5. resume mid-curriculum -------------------------------------------------------------------------------------
straight=$(gpt --seq-length 32 --train-iters 8 --eval-interval 4 --deepspeed --deepspeed_config lin.json)
first=$(gpt --seq-length 32 --train-iters 8 --eval-interval 4 --save ck --save-interval 3 --exit-interval 3 --deepspeed --deepspeed_config lin.json)
second=$(gpt --seq-length 32 --train-iters 8 --eval-interval 4 --load ck --deepspeed --deepspeed_config lin.json)
tail_of() { grep -E "^ iteration +[4-8]/|validation loss at (iteration [48]|the end)" <<<"$1"; }
a=$(tail_of "$straight"); b=$(tail_of "$second")
if [ "$(grep -c "^ iteration" <<<"$first")" -eq 3 ] && [ "$(lines "$a")" == "$(lines "$b")" ] &&
   [ "$(field "$a" "curriculum seqlen")" == "$(field "$b" "curriculum seqlen")" ] && [ "$(grep -c "^ iteration" <<<"$b")" -eq 5 ]; then
  ok "resumed at iteration 3 (curriculum seqlen $(field "$b" "curriculum seqlen")): iterations 4-8 and validations bit for bit"
else bad "resume mid-curriculum" "$(diff <(lines "$a") <(lines "$b") | head -4)"; fi

# ---- 6. refusals before any work ----------------------------------------------------------------------------------
refused() { # name, message, output
  if grep -qF -- "$2" <<<"$3" && ! grep -q "^ iteration " <<<"$3" && ! grep -q "building GPT model" <<<"$3"; then ok "refused: $1"
  else bad "refused: $1" "$(grep -m1 error <<<"$3")"; fi
}
refused "max_difficulty above --seq-length" \
  "error: ds_config: lin.json: curriculum_learning (fixed_linear, min_difficulty 8, max_difficulty 32, --seq-length 16): max_difficulty 32 is larger than --seq-length 16" \
  "$(gpt --seq-length 16 --max-position-embeddings 16 --train-iters 2 --deepspeed --deepspeed_config lin.json)"
cl zero 5 32 fixed_linear '{"total_curriculum_step": 100, "difficulty_step": 8}'
refused "a schedule that gives 0 tokens" "the fixed_linear schedule gives a sequence length of 0 at iteration 1 (min_difficulty 5 rounded down to a multiple of difficulty_step 8)" \
  "$(gpt --seq-length 32 --train-iters 2 --deepspeed --deepspeed_config zero.json)"
printf '{%s, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": 8, "max_difficulty": 32, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 6, "difficulty_step": 8}}, "sparse_attention": {"mode": "fixed", "block": 16}}\n' "$batch" > sparse.json
refused "with sparse_attention" "error: ds_config: sparse.json: curriculum_learning and sparse_attention cannot be combined" \
  "$(gpt --seq-length 32 --train-iters 2 --deepspeed --deepspeed_config sparse.json)"
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\n' > vocab.txt # refused before the (absent) data is opened
out=$(timeout 60 "$BERT" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 32 \
      --seq-length 32 --data-path "$tmp/absent" --vocab-file vocab.txt --lr 1e-3 --micro-batch-size 2 \
      --global-batch-size 8 --train-iters 2 --deepspeed --deepspeed_config lin.json 2>&1)
if grep -qF "curriculum_learning (seqlen) is supported for GPT only: Megatron-DeepSpeed's BERT model takes no curriculum_seqlen" <<<"$out" &&
   ! grep -q "building BERT model" <<<"$out"; then ok "refused: pretrain_bert"; else bad "refused: pretrain_bert" "$(grep -m1 error <<<"$out")"; fi
cl custom 8 32 custom '{}'
refused "custom schedule" 'curriculum_learning.schedule_type "custom" is not supported' \
  "$(gpt --seq-length 32 --train-iters 2 --deepspeed --deepspeed_config custom.json)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
