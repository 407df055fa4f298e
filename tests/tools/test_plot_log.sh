#!/usr/bin/env bash
# scripts/plot_log.py on real runs: a tiny mock-data GPT trained 20 iterations (log and csv_monitor) and a tiny BERT
# (lm loss and sop loss). The PNG is a valid PNG of the asked size; the series it parsed (--dump-csv) equal the
# numbers the log and the .csv files hold, read here independently (sed/awk); tokens/s is recomputed from the log's
# consumed tokens and elapsed time; the csv_monitor's train loss lands on the iterations whose log line has the same
# loss. Refusals: an existing PNG is not overwritten, a file without log lines and a bad --size name themselves, a
# missing matplotlib says how to install it. SKIP (77) when the python has no matplotlib.
# Usage: test_plot_log.sh PRETRAIN_GPT PRETRAIN_BERT PYTHON PLOT_LOG_PY
set -u
gpt=$1 bert=$2 PY=$3 plot=$(cd "$(dirname "$4")" && pwd)/$(basename "$4")
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c "import matplotlib" 2>/dev/null || { echo "SKIP: $PY has no matplotlib (apt-get install python3-matplotlib)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OMP_NUM_THREADS=1
fails=0 checks=0
ok()   { checks=$((checks + 1)); echo "ok: $1"; }
fail() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $1"; }
expect() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }
# the width and height of a PNG from its IHDR chunk, or "bad" when the signature or IHDR are wrong
png_size() { "$PY" - "$1" <<'EOF'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
ok = b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR" and b[-12:-8] == b"\0\0\0\0" and b[-8:-4] == b"IEND"
ok = ok and struct.unpack(">I", b[29:33])[0] == zlib.crc32(b[12:29])
print("%dx%d" % struct.unpack(">II", b[16:24]) if ok else "bad")
EOF
}
# two "key value" lists equal: same keys in order, values within a relative tolerance
same_series() { awk -v tol="$3" 'NR == FNR { a[FNR] = $0; n = FNR; next } { m = FNR; split(a[FNR], x, " "); split($0, y, " ");
  if (x[1] != y[1]) bad = 1; d = x[2] - y[2]; if (d < 0) d = -d; s = y[2] < 0 ? -y[2] : y[2];
  if (d > tol * s + 1e-300) bad = 1 } END { exit (bad || n != m || n == 0) }' "$1" "$2"; }
# one series of the dump as "iteration value" lines
dumped() { awk -F, -v s="$2" '$1 == s { print $2, $3 }' "$1"; }

# ---- a tiny GPT, 20 iterations, every line logged, validation every 5, DeepSpeed's csv_monitor -------------------
cat >ds.json <<'EOF'
{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "wall_clock_breakdown": true,
 "csv_monitor": {"enabled": true, "output_path": "csv", "job_name": "job"}}
EOF
"$gpt" --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16 \
  --micro-batch-size 2 --global-batch-size 4 --train-iters 20 --lr 1e-3 --lr-warmup-iters 5 --lr-decay-style cosine \
  --log-interval 1 --mock-data --tokenizer-type NullTokenizer --vocab-size 64 --eval-interval 5 --eval-iters 2 \
  --deepspeed --deepspeed_config ds.json >gpt.log 2>&1
rc=$?
expect "the GPT trains 20 iterations (rc $rc)" "[ $rc = 0 ] && [ \$(grep -c '^ iteration ' gpt.log) = 20 ]"

out=$("$PY" "$plot" gpt.log --dump-csv gpt.csv 2>&1); rc=$?
echo "$out"
expect "plot_log.py writes gpt.png next to the log (rc $rc)" "[ $rc = 0 ] && [ -s gpt.png ]"
expect "gpt.png is a valid 1200x900 PNG (default size): $(png_size gpt.png)" "[ \"\$(png_size gpt.png)\" = 1200x900 ]"
"$PY" "$plot" gpt.log -o small.png --size 640x480 >/dev/null 2>&1
expect "--size 640x480 gives a valid 640x480 PNG: $(png_size small.png 2>/dev/null)" "[ \"\$(png_size small.png)\" = 640x480 ]"

# the log's own numbers, read with sed
sed -nE 's/^ iteration +([0-9]+)\/.*\| lm loss: ([^ ]+) \|.*/\1 \2/p' gpt.log >want_lm
sed -nE 's/^ iteration +([0-9]+)\/.*\| learning rate: ([^ ]+) \|.*/\1 \2/p' gpt.log >want_lr
sed -nE 's/^ validation loss at iteration ([0-9]+) \| lm loss value: ([^ ]+) \|.*/\1 \2/p' gpt.log >want_val
# tokens/s = the consumed tokens added since the previous line, per iteration, over the elapsed time per iteration
sed -nE 's/^ iteration +([0-9]+)\/.*consumed tokens: +([0-9]+) \| elapsed time per iteration \(ms\): ([^ ]+) \|.*/\1 \2 \3/p' \
  gpt.log | awk '{ if ($3 > 0) printf "%d %.9g\n", $1, ($2 - pt) / ($1 - pi) / ($3 / 1000); pi = $1; pt = $2 }' >want_tps
expect "20 lm losses, 20 learning rates, 4 validation losses in the log" \
  "[ \$(wc -l <want_lm) = 20 ] && [ \$(wc -l <want_lr) = 20 ] && [ \$(wc -l <want_val) = 4 ]"
expect "dumped lm loss = the log's, digit for digit" "[ \"\$(dumped gpt.csv 'lm loss')\" = \"\$(cat want_lm)\" ]"
expect "dumped learning rate = the log's" "[ \"\$(dumped gpt.csv 'learning rate')\" = \"\$(cat want_lr)\" ]"
expect "dumped validation lm loss = the log's (iterations 5 10 15 20)" \
  "[ \"\$(dumped gpt.csv 'validation lm loss')\" = \"\$(cat want_val)\" ] && [ \"\$(cut -d' ' -f1 want_val | tr '\n' ' ')\" = '5 10 15 20 ' ]"
dumped gpt.csv 'tokens per second' >got_tps
expect "dumped tokens/s = consumed tokens / iterations / elapsed time ($(wc -l <want_tps) points, within 1e-5)" \
  "same_series want_tps got_tps 1e-5"
expect "no series but lm loss, learning rate, tokens/s, validation lm loss" \
  "[ \"\$(cut -d, -f1 gpt.csv | sort -u | tr '\n' '|')\" = 'learning rate|lm loss|series|tokens per second|validation lm loss|' ]"

# log lines every 4 iterations: tokens/s is per iteration of the interval, not per line; --log-eta's fields at the
# end of the line (`elapsed: 0:00:01 | ETA: 0:00:03 |`) change nothing
"$gpt" --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16 \
  --micro-batch-size 2 --global-batch-size 4 --train-iters 20 --lr 1e-3 --log-interval 4 --mock-data \
  --tokenizer-type NullTokenizer --vocab-size 64 --log-eta >gpt4.log 2>&1
expect "--log-eta lines carry the ETA" "[ \$(grep -c '^ iteration .*| ETA: ' gpt4.log) = 5 ]"
"$PY" "$plot" gpt4.log --no-plot --dump-csv gpt4.csv >/dev/null 2>&1
sed -nE 's/^ iteration +([0-9]+)\/.*consumed tokens: +([0-9]+) \| elapsed time per iteration \(ms\): ([^ ]+) \|.*/\1 \2 \3/p' \
  gpt4.log | awk '{ if ($3 > 0) printf "%d %.9g\n", $1, ($2 - pt) / ($1 - pi) / ($3 / 1000); pi = $1; pt = $2 }' >want_tps4
dumped gpt4.csv 'tokens per second' >got_tps4
expect "--log-interval 4: tokens/s = the interval's tokens per iteration over the elapsed time ($(wc -l <want_tps4) points)" \
  "[ \$(wc -l <want_tps4) = 5 ] && same_series want_tps4 got_tps4 1e-5"

# ---- the csv_monitor directory of the same run ----------------------------------------------------------------------
out=$("$PY" "$plot" csv/job -o csvmon.png --global-batch-size 4 --seq-length 16 --dump-csv csvmon.csv 2>&1); rc=$?
echo "$out"
expect "csv_monitor directory plotted (rc $rc): $(png_size csvmon.png 2>/dev/null)" "[ $rc = 0 ] && [ \"\$(png_size csvmon.png)\" = 1200x900 ]"
# the .csv rows: step = consumed samples (before the step for train_loss), / 4 samples per iteration
awk -F, 'NR > 1 { printf "%d %s\n", $1 / 4 + 1, $2 }' csv/job/Train_Samples_train_loss.csv | tr -d '\r' >want_csv_loss
awk -F, 'NR > 1 { printf "%d %s\n", $1 / 4, $2 }' csv/job/Train_Samples_lr.csv | tr -d '\r' >want_csv_lr
expect "dumped train loss = Train_Samples_train_loss.csv's 20 rows" \
  "[ \$(wc -l <want_csv_loss) = 20 ] && [ \"\$(dumped csvmon.csv 'train loss')\" = \"\$(cat want_csv_loss)\" ]"
expect "dumped learning rate = Train_Samples_lr.csv's rows" "[ \"\$(dumped csvmon.csv 'learning rate')\" = \"\$(cat want_csv_lr)\" ]"
# the same iteration in both inputs: the csv train loss (a double) printed as the log prints it
expect "csv_monitor train loss at iteration i = the log's lm loss at i (every i, 7 digits)" \
  "same_series want_lm want_csv_loss 2e-6"
expect "csv_monitor learning rate at iteration i = the log's at i (4 digits)" "same_series want_lr want_csv_lr 1e-3"
fwd=csv/job/Train_Samples_elapsed_time_ms_forward.csv bwd=csv/job/Train_Samples_elapsed_time_ms_backward.csv
stp=csv/job/Train_Samples_elapsed_time_ms_step.csv
paste -d, "$fwd" "$bwd" "$stp" | tr -d '\r' | awk -F, 'NR > 1 { ms = $2 + $4 + $6; if (ms > 0) printf "%d %.9g\n", $1 / 4, 4 * 16 / (ms / 1000) }' >want_csv_tps
dumped csvmon.csv 'tokens per second' >got_csv_tps
expect "csv_monitor tokens/s = 4 x 16 tokens over forward + backward + step ms ($(wc -l <want_csv_tps) points)" \
  "same_series want_csv_tps got_csv_tps 1e-5"

# ---- a tiny BERT: both named losses ---------------------------------------------------------------------------------
fixture=$here/../bert/make_fixture.py
if "$PY" "$fixture" fx >/dev/null && "$(dirname "$gpt")/preprocess_data" --input fx/corpus.jsonl --output-prefix fx/corpus \
     --workers 1 --vocab-file fx/vocab.txt --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null 2>&1; then
  "$bert" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
    --data-path fx/corpus_text_sentence --vocab-file fx/vocab.txt --split 90,10,0 --lr 1e-3 --train-iters 6 \
    --log-interval 1 --eval-interval 3 --eval-iters 1 --global-batch-size 8 --micro-batch-size 4 --seed 1234 >bert.log 2>&1
  "$PY" "$plot" bert.log --dump-csv bert.csv >/dev/null 2>&1; rc=$?
  expect "BERT log plotted (rc $rc): $(png_size bert.png 2>/dev/null)" "[ $rc = 0 ] && [ \"\$(png_size bert.png)\" = 1200x900 ]"
  for k in "lm loss" "sop loss"; do
    sed -nE "s/^ iteration +([0-9]+)\/.*\| $k: ([^ ]+) \|.*/\1 \2/p" bert.log >want
    expect "BERT $k: 6 values, dumped = the log's" "[ \$(wc -l <want) = 6 ] && [ \"\$(dumped bert.csv '$k')\" = \"\$(cat want)\" ]"
    sed -nE "s/^ validation loss at iteration ([0-9]+) \|.*\| $k value: ([^ ]+) \|.*/\1 \2/p; s/^ validation loss at iteration ([0-9]+) \| $k value: ([^ ]+) \|.*/\1 \2/p" bert.log >want
    expect "BERT validation $k at 3 and 6 = the log's" \
      "[ \$(wc -l <want) = 2 ] && [ \"\$(dumped bert.csv 'validation $k')\" = \"\$(cat want)\" ]"
  done
else
  fail "the BERT fixture (make_fixture.py + preprocess_data --split-sentences)"
fi

# ---- refusals -------------------------------------------------------------------------------------------------------
sum=$(md5sum gpt.png)
err=$("$PY" "$plot" gpt.log 2>&1); rc=$?
expect "an existing PNG is not overwritten (rc $rc): $err" "[ $rc = 2 ] && grep -q 'gpt.png exists: not overwritten' <<<\"\$err\" && [ \"\$(md5sum gpt.png)\" = \"\$sum\" ]"
"$PY" "$plot" gpt.log --force >/dev/null 2>&1
expect "--force overwrites it" "[ \$? = 0 ] && [ \"\$(png_size gpt.png)\" = 1200x900 ]"
echo "hello" >notalog.txt
err=$("$PY" "$plot" notalog.txt 2>&1); rc=$?
expect "a file without log lines is refused by name (rc $rc): $err" "[ $rc = 2 ] && grep -q 'notalog.txt has no training log line' <<<\"\$err\" && [ ! -e notalog.png ]"
err=$("$PY" "$plot" gpt.log -o x.png --size 12x9 2>&1); rc=$?
expect "--size 12x9 is refused naming the flag (rc $rc): $err" "[ $rc = 2 ] && grep -q -- '--size' <<<\"\$err\" && [ ! -e x.png ]"
err=$("$PY" "$plot" missing.log 2>&1); rc=$?
expect "a missing input is named (rc $rc): $err" "[ $rc = 2 ] && grep -q 'missing.log: no such file' <<<\"\$err\""
# without matplotlib (a stand-in package that fails to import): the install command, and --no-plot still works
mkdir -p nompl/matplotlib && echo 'raise ImportError("no matplotlib here")' >nompl/matplotlib/__init__.py
err=$(PYTHONPATH=nompl "$PY" "$plot" gpt.log -o y.png 2>&1); rc=$?
expect "no matplotlib: exit 3 naming apt-get install python3-matplotlib: $err" \
  "[ $rc = 3 ] && grep -q 'apt-get install python3-matplotlib' <<<\"\$err\" && [ ! -e y.png ]"
PYTHONPATH=nompl "$PY" "$plot" gpt.log --no-plot --dump-csv nompl.csv >/dev/null 2>&1
expect "no matplotlib: --dump-csv --no-plot still writes the series" "cmp -s nompl.csv gpt.csv"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
