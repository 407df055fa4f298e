#!/bin/bash
# pretrain_gpt --data-efficiency-curriculum-learning end to end (DeepSpeed's data sampler, docs/data_efficiency.md):
#  1. the samples trained on are DeepSpeed's: a run with the sampler equals, loss for loss, a run without it whose
#     --train-shuffle-idx-path file is reordered to the order sampler_oracle.py (DeepSpeedDataSampler over NumPy)
#     draws, with the legacy curriculum_learning block standing in for the sampler's seqlen_truncate schedule:
#     a. one single_cluster metric (seqlen_truncate 8 -> 16);
#     b. the example scripts' pair: vocabulary rarity by percentile (schedule_based clusters over analyze_data's
#        index files, fixed_root) with seqlen_truncate; its cluster messages are the oracle's;
#  2. the log: the start-up line, curriculum seqlen, consumed tokens, evaluation at the full length;
#  3. a run resumed mid-curriculum continues bit for bit (the sampler replays to the checkpoint's step); a resume with
#     another data_efficiency.seed is refused;
#  4. DP=2, TP=2 and PP=2 give the one-process losses (label mpi; skipped without mpirun); a training split of fewer
#     samples than the run draws (--train-data-exact-num-epochs 1) runs with the sampler, as in Megatron-DeepSpeed;
#  5. refusals before any work;
#  1c. seqlen_reshape: passes of --micro-batch-size rows = one pass over the re-cut rows, the log's consumed tokens are
#     Megatron-DeepSpeed's, resume bit for bit, DP=2 and TP=2 + sequence parallel equal one process.
# Usage: test_data_sampler_train.sh BIN_DIR PYTHON3 ONEPASS_GPT
BIN=$1 PY=$2 ONEPASS=$3
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

source "$HERE/null_corpus.sh" # corpus_text_document: 80 NullTokenizer documents
D=(--data-path corpus_text_document --split 90,10,0 --tokenizer-type NullTokenizer --vocab-size 100 --seq-length 16
   --train-data-exact-num-epochs 1 --seed 3)
# (--make-vocab-size-divisible-by 64: the padded vocabulary is 128 at TP=1 and TP=2 alike)
model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 16 --lr 1e-3 --log-interval 1
       --micro-batch-size 2 --global-batch-size 8 --eval-interval 3 --eval-iters 1 --make-vocab-size-divisible-by 64)
tiny=("${model[@]}" --train-iters 6)
gpt() { timeout 120 "$BIN/pretrain_gpt" "${tiny[@]}" "${D[@]}" "$@" 2>&1; }

# ds_configs: sampler(name, seed, metrics-json), legacy(name, min, max, total, step)
sampler() {
  printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "data_efficiency": {"enabled": true, "seed": %s, "data_sampling": {"enabled": true, "num_workers": 0, "curriculum_learning": {"enabled": true, "data_cluster_path": "clusters", "curriculum_metrics": {%s}}}}}\n' "$2" "$3" > "$1.json"
}
truncate_metric() { # min max total step
  printf '"seqlen_truncate": {"index_to_sample_path": "dummy", "index_to_metric_path": "dummy", "difficulty_type": "value", "clustering_type": "single_cluster", "min_difficulty": %s, "max_difficulty": %s, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": %s, "difficulty_step": %s}}' "$1" "$2" "$3" "$4"
}
legacy() {
  printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen", "min_difficulty": %s, "max_difficulty": %s, "schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": %s, "difficulty_step": %s}}}\n' "$2" "$3" "$4" "$5" > "$1.json"
}
printf '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2}\n' > plain.json
lines() { grep -E "^ iteration |validation loss at" <<<"$1" | sed -E 's/ elapsed time per iteration \(ms\): [0-9.]+ \|//;
  s/ samples per second: .*//'; }

# The plain run on the oracle's order: the cached train index with its shuffle file reordered (the drawn samples
# first, then the rest), the legacy block for the length. Args: sampler config, legacy config, name.
reorder_check() {
  local cfg=$1 leg=$2 name=$3 a b
  a=$(gpt --deepspeed --deepspeed_config "$cfg" --data-efficiency-curriculum-learning)
  local h
  h=$(grep -l "Dataset name train" index-cache/*.dsc 2>/dev/null | head -1)
  h=${h%.dsc}
  rm -rf mine && mkdir mine
  cp "${h}_doc_idx.npy" mine/doc.npy && cp "${h}_sample_idx.npy" mine/sample.npy
  "$PY" - "$cfg" "${h}_shuffle_idx.npy" mine/shuffle.npy "$HERE" <<'PYEOF' > oracle_log.txt
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[4])
import sampler_oracle
cfg = json.load(open(sys.argv[1]))
shuffle = np.load(sys.argv[2])
n = len(shuffle)
s = sampler_oracle.Sampler(cfg["data_efficiency"], n, 2, 1, 8)
order = []
for _ in range(6):
    order += s.next_global_batch()
assert len(set(order)) == len(order), "the drawn samples repeat: no permutation"
rest = [i for i in range(n) if i not in set(order)]
np.save(sys.argv[3], shuffle[np.array(order + rest)].astype(shuffle.dtype))
print("\n".join(s.log))
PYEOF
  b=$(gpt --deepspeed --deepspeed_config "$leg" --train-doc-idx-path "$tmp/mine/doc.npy" --train-sample-idx-path \
      "$tmp/mine/sample.npy" --train-shuffle-idx-path "$tmp/mine/shuffle.npy")
  if [ -s mine/shuffle.npy ] && [ -n "$(lines "$a")" ] && [ "$(lines "$a")" == "$(lines "$b")" ] &&
     [ "$(grep -c "^ iteration" <<<"$a")" -eq 6 ]; then
    ok "$name: the sampler run = the oracle's order without the sampler (6 iterations, 3 validations)"
  else
    bad "$name" "$(diff <(lines "$a") <(lines "$b") | head -4) $(grep -m1 error <<<"$a$b")"
  fi
  RUN_A=$a
}

# ---- 1a. a single_cluster metric -----------------------------------------------------------------------------------
sampler s1 1234 "$(truncate_metric 8 16 4 8)"
legacy l1 8 16 4 8
reorder_check s1.json l1.json "seqlen_truncate (single_cluster)"
a=$RUN_A
[ "$(field "$a" "curriculum seqlen")" == "8 8 8 16 16 16 " ] && ok "curriculum seqlen follows seqlen_truncate" ||
  bad "seqlen" "$(field "$a" "curriculum seqlen")"
[ "$(field "$a" "consumed tokens")" == "64 128 192 320 448 576 " ] && ok "consumed tokens grow by 8 x the length" ||
  bad "consumed tokens" "$(field "$a" "consumed tokens")"
grep -q "> data sampling: DeepSpeed's curriculum over 1 metric, seed 1234, [0-9]* samples per epoch: seqlen_truncate (value, single_cluster, fixed_linear from 8 to 16 over 4 steps in multiples of 8)" <<<"$a" &&
  ok "the start-up line names the metric and its schedule" || bad "start-up line" "$(grep "data sampling" <<<"$a")"
diff <(grep "^new data cluster" <<<"$a") oracle_log.txt >/dev/null && [ -s oracle_log.txt ] &&
  ok "the cluster messages are DeepSpeed's" || bad "cluster messages" "$(grep -m2 "^new data cluster" <<<"$a")"

# ---- 1b. vocabulary rarity by percentile over analyze_data's files, with seqlen_truncate --------------------------
A=("$BIN/analyze_data" --analyzing-data-type GPT "${D[@]}" --save analysis --num-layers 1 --hidden-size 1
   --num-attention-heads 1 --analyzing-num-workers 1 --analyzing-num-threads 2 --analyzing-worker-id 0)
("${A[@]}" --analyzing-task map --analyzing-metric total_vocab_freq && "${A[@]}" --analyzing-task reduce \
  --analyzing-metric total_vocab_freq && "${A[@]}" --analyzing-task map --analyzing-metric vocab_rarity &&
  "${A[@]}" --analyzing-task reduce --analyzing-metric vocab_rarity) >analyze.log 2>&1 ||
  bad "analyze_data" "$(tail -2 analyze.log)"
voc='"voc": {"index_to_sample_path": "analysis/vocab_rarity/vocab_rarity_index_to_sample_percentile_merged", "index_to_metric_path": "analysis/vocab_rarity/vocab_rarity_index_to_metric", "difficulty_type": "percentile", "clustering_type": "schedule_based", "min_difficulty": 50, "max_difficulty": 100, "schedule_type": "fixed_root", "schedule_config": {"total_curriculum_step": 5, "difficulty_step": 1, "root_degree": 2}}'
sampler s2 77 "$voc, $(truncate_metric 8 16 4 8)"
reorder_check s2.json l1.json "vocabulary rarity by percentile (schedule_based, fixed_root) + seqlen_truncate"
a=$RUN_A
[ "$(grep -c "^new data cluster.*generated" <<<"$a")" -ge 3 ] &&
  diff <(grep "^new data cluster" <<<"$a") oracle_log.txt >/dev/null &&
  ok "percentile clusters: $(grep -c "^new data cluster.*generated" <<<"$a") generated, messages as DeepSpeed's" ||
  bad "percentile cluster messages" "$(diff <(grep "^new data cluster" <<<"$a") oracle_log.txt | head -3)"

# ---- 1c. seqlen_reshape -------------------------------------------------------------------------------------------
# Each micro batch re-cut into R rows of the difficulty's length runs as passes of --micro-batch-size rows weighted by
# their loss-mask shares; data_sampler_onepass_gpt plans its model for R rows and runs it as one pass: the two train
# alike (no dropout; evaluation off: the one-pass model holds only re-cut batches). The re-cut itself is checked
# against data_post_process in test_data_sampler.
reshape_metric() { # min max total step
  truncate_metric "$@" | sed 's/seqlen_truncate/seqlen_reshape/'
}
reshape_rows() { # B S1 d1: zt_gpt_reshape_rows, from Megatron-DeepSpeed's formula
  "$PY" -c "import math, sys; B, S1, d1 = map(int, sys.argv[1:]); r = min(math.ceil(B * S1 / d1), B * (S1 // d1) + B); print(r - 1 if r > 1 and r % 2 else r)" "$@"
}
sampler rs 1234 "$(reshape_metric 4 12 4 4)"
sed 's/"train_micro_batch_size_per_gpu": 2/"train_micro_batch_size_per_gpu": 4/' rs.json > rs4.json
nodrop=(--attention-dropout 0 --hidden-dropout 0 --eval-iters 0 --data-efficiency-curriculum-learning --deepspeed)
for case in "2::rs.json" "4:--eod-mask-loss --reset-position-ids --reset-attention-mask:rs4.json"; do
  mbs=${case%%:*} rest=${case#*:}
  flags=${rest%:*} cfg=${rest##*:}
  rows=$(reshape_rows "$mbs" 17 5)
  # shellcheck disable=SC2086
  a=$(gpt --micro-batch-size "$mbs" $flags "${nodrop[@]}" --deepspeed_config "$cfg")
  # shellcheck disable=SC2086
  b=$(ZT_PASS_ROWS=$rows timeout 120 "$ONEPASS" "${tiny[@]}" "${D[@]}" --micro-batch-size "$mbs" $flags "${nodrop[@]}" \
      --deepspeed_config "$cfg" 2>&1)
  want=0 tokens=""
  for d in $(field "$a" "curriculum seqlen"); do # Megatron-DeepSpeed: dp x nmb x act_mbsz x d
    want=$((want + 8 / mbs * $(reshape_rows "$mbs" 17 $((d + 1))) * d))
    tokens+="$want "
  done
  close "$(field "$a" "lm loss")" "$(field "$b" "lm loss")" 1e-5 && [ "$(field "$a" "lm loss" | wc -w)" -eq 6 ] &&
    [ "$(field "$a" "grad norm")" == "$(field "$b" "grad norm")" ] &&
    ok "seqlen_reshape, micro batch $mbs${flags:+ $flags}: passes of $mbs rows = one pass of the $rows re-cut rows (6 iterations)" ||
    bad "seqlen_reshape mbs $mbs" "$(field "$a" "lm loss") vs $(field "$b" "lm loss") $(grep -m1 error <<<"$a$b")"
  [ "$(field "$a" "curriculum seqlen")" == "4 8 8 12 12 12 " ] && [ "$(field "$a" "consumed tokens")" == "$tokens" ] &&
    ok "seqlen_reshape, micro batch $mbs: curriculum seqlen and Megatron-DeepSpeed's consumed tokens ($tokens)" ||
    bad "seqlen_reshape log" "$(field "$a" "curriculum seqlen") / $(field "$a" "consumed tokens") vs $tokens"
done
sampler rs2 1234 "$(reshape_metric 8 16 4 8)"
# after OUT STOP: the log lines of iterations STOP+1..6 and the last validation
after() { lines "$1" | grep -E "iteration +[$(seq -s '' $(($2 + 1)) 6)]/|validation loss at iteration 6"; }
# resumes CONFIG STOP NAME: a run stopped after STOP iterations and resumed logs the rest bit for bit as the
# uninterrupted run; they are left in FULL and RES
resumes() {
  FULL=$(gpt --deepspeed --deepspeed_config "$1" --data-efficiency-curriculum-learning)
  rm -rf ck_resume
  gpt --deepspeed --deepspeed_config "$1" --data-efficiency-curriculum-learning --save ck_resume --save-interval "$2" \
    --exit-interval "$2" >/dev/null
  RES=$(gpt --deepspeed --deepspeed_config "$1" --data-efficiency-curriculum-learning --load ck_resume)
  [ -n "$(after "$RES" "$2")" ] && [ "$(after "$RES" "$2")" == "$(after "$FULL" "$2")" ] &&
    ok "$3 resumed at iteration $2: iterations $(($2 + 1))-6 and the validation bit for bit" ||
    bad "$3 resume" "$(diff <(after "$RES" "$2") <(after "$FULL" "$2") | head -4) $(grep -m1 error <<<"$RES")"
}
resumes rs2.json 2 "seqlen_reshape (re-cut to 8 tokens)"
full_rs=$FULL
[ "$(field "$full_rs" "curriculum seqlen")" == "8 8 8 16 16 16 " ] && ok "seqlen_reshape: curriculum seqlen 8 8 8 16 16 16" ||
  bad "seqlen_reshape lengths" "$(field "$full_rs" "curriculum seqlen")"

# ---- 3. resume -----------------------------------------------------------------------------------------------------
resumes s2.json 3 "vocabulary rarity + seqlen_truncate"
full=$FULL res=$RES
! grep -q "^new data cluster" <<<"$(grep -B100 -m1 "iteration        4/" <<<"$res" | head -n -1)" ||
  true # (the replay is quiet; the resumed run prints only the clusters of its own steps)
sampler s2b 78 "$voc, $(truncate_metric 8 16 4 8)"
out=$(gpt --deepspeed --deepspeed_config s2b.json --data-efficiency-curriculum-learning --load ck_resume)
grep -q "error: checkpoint: the data sampler replayed to the checkpoint's step 3 does not reach the checkpoint's state" <<<"$out" &&
  ok "a resume with another data_efficiency.seed is refused" || bad "seed mismatch" "$(grep -m1 -E "error|iteration" <<<"$out")"

# ---- 4. parallel layouts -------------------------------------------------------------------------------------------
if command -v mpirun >/dev/null; then
  for lay in "dp2:--global-batch-size 8:s2" "tp2:--tensor-model-parallel-size 2:s2" \
             "pp2:--pipeline-model-parallel-size 2:s2" "dp2:--global-batch-size 8:rs2" \
             "tp2:--tensor-model-parallel-size 2 --sequence-parallel:rs2"; do
    name=${lay%%:*} cfg=${lay##*:} flags=${lay#*:}
    flags=${flags%:*}
    one=$full
    [ "$cfg" == rs2 ] && one=$full_rs && name="$name seqlen_reshape"
    # shellcheck disable=SC2086
    out=$(timeout 300 "${mpi[@]}" -np 2 "$BIN/pretrain_gpt" "${tiny[@]}" "${D[@]}" $flags --deepspeed \
          --deepspeed_config $cfg.json --data-efficiency-curriculum-learning 2>&1)
    close "$(field "$out" "lm loss")" "$(field "$one" "lm loss")" 2e-6 &&
      [ "$(field "$out" "curriculum seqlen")" == "$(field "$one" "curriculum seqlen")" ] &&
      [ "$(field "$out" "consumed tokens")" == "$(field "$one" "consumed tokens")" ] &&
      [ "$(field "$one" "lm loss" | wc -w)" -eq 6 ] && ok "$name = one process (6 iterations)" ||
      bad "$name" "$(field "$out" "lm loss") vs $(field "$one" "lm loss") $(grep -m1 error <<<"$out")"
  done
else
  echo "SKIP DP=2 and TP=2: no mpirun"
fi

# ---- 4b. a training split smaller than the run's samples: the sampler draws within it ------------------------------
# (the example script's case: its exact one-epoch index files against --train-samples of 300B tokens)
more=("${model[@]}" "${D[@]}" --train-iters 60 --eval-interval 100 --eval-iters 0)
out=$(timeout 120 "$BIN/pretrain_gpt" "${more[@]}" --deepspeed --deepspeed_config s2.json \
      --data-efficiency-curriculum-learning 2>&1)
n=$(grep -oE "[0-9]+ samples per epoch" <<<"$out" | cut -d' ' -f1)
grep -q "^ iteration       60/" <<<"$out" && [ -n "$n" ] && [ "$n" -lt 480 ] &&
  ok "--train-data-exact-num-epochs 1 ($n samples) under 60 x 8 drawn samples: the sampler draws within the epoch" ||
  bad "exact epoch with the sampler" "$(grep -m1 -E "error" <<<"$out")"
out=$(timeout 120 "$BIN/pretrain_gpt" "${more[@]}" --deepspeed --deepspeed_config plain.json 2>&1)
grep -qF "error: bad argument value: --train-data-exact-num-epochs 1 gives $n training samples, but training needs 480" <<<"$out" &&
  ok "... and without the sampler it is refused as before" || bad "exact epoch without the sampler" "$(grep -m1 error <<<"$out")"

# ---- 5. refusals ---------------------------------------------------------------------------------------------------
refuse() { # name, needle, args...
  local name=$1 needle=$2 out
  shift 2
  out=$(gpt "$@")
  [ $? -ne 0 ] && grep -qF -- "$needle" <<<"$out" && ! grep -q "^ iteration" <<<"$out" && ok "refused: $name" ||
    bad "refused: $name" "$(grep -m1 -E "error|iteration" <<<"$out")"
}
refuse "the flag without the block" "--data-efficiency-curriculum-learning needs the ds_config's" \
  --deepspeed --deepspeed_config plain.json --data-efficiency-curriculum-learning
refuse "the block without the flag" "is enabled without --data-efficiency-curriculum-learning" \
  --deepspeed --deepspeed_config s1.json
out=$(timeout 60 "$BIN/pretrain_gpt" "${model[@]}" "${D[@]}" --train-samples 48 --deepspeed --deepspeed_config s1.json \
      --data-efficiency-curriculum-learning --rampup-batch-size 4 4 16 2>&1)
grep -qF -- "--rampup-batch-size with --data-efficiency-curriculum-learning" <<<"$out" && ok "refused: --rampup-batch-size" ||
  bad "--rampup-batch-size" "$(grep -m1 -E "error|iteration" <<<"$out")"
"$PY" -c "import json; c = json.load(open('s1.json')); c['curriculum_learning'] = json.load(open('l1.json'))['curriculum_learning']; json.dump(c, open('both.json', 'w'))"
refuse "with the legacy curriculum block" "are both enabled: use one" \
  --deepspeed --deepspeed_config both.json --data-efficiency-curriculum-learning
"$PY" -c "import json; c = json.load(open('s1.json')); c['data_efficiency']['data_sampling']['num_epochs'] = 0; json.dump(c, open('ep0.json', 'w'))"
refuse "num_epochs 0" "num_epochs" --deepspeed --deepspeed_config ep0.json --data-efficiency-curriculum-learning
refuse "seqlen_reshape with MoE" "the seqlen_reshape metric with --num-experts above 1" \
  --num-experts 2 --deepspeed --deepspeed_config rs.json --data-efficiency-curriculum-learning
refuse "seqlen_reshape with --kd" "the seqlen_reshape metric with --mos/--kd" \
  --kd --num-layers-teacher 2 --hidden-size-teacher 64 --num-attention-heads-teacher 4 --load-teacher none \
  --deepspeed --deepspeed_config rs.json --data-efficiency-curriculum-learning
"$PY" -c "import json; c = json.load(open('rs.json')); c['flops_profiler'] = {'enabled': True, 'profile_step': 1}; json.dump(c, open('rsfp.json', 'w'))"
refuse "seqlen_reshape with the flops profiler" "the seqlen_reshape metric with the flops_profiler" \
  --deepspeed --deepspeed_config rsfp.json --data-efficiency-curriculum-learning
refuse "--train-idx-path in pretrain_gpt" "Megatron-DeepSpeed reads it for BERT's and T5's samples mapping only" \
  --train-idx-path map.npy
sampler big 1 "$(truncate_metric 8 32 4 8)"
refuse "seqlen_truncate above --seq-length" "max_difficulty 32 is larger than --seq-length 16" \
  --deepspeed --deepspeed_config big.json --data-efficiency-curriculum-learning
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
