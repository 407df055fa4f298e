# Sourced by the T5 tests (after tests/lib/common.sh): a temporary folder with the fixture (BERT's generated
# sentence-split corpus, preprocess_data --split-sentences, its WordPiece vocab.txt: tests/bert/make_fixture.py), the
# tiny T5's flags, and the log-line helpers.
# Needs: bin (pretrain_t5), PY (a python3). Sets: tmp, data, vocab, tiny.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
here_t5="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$PY" "$here_t5/../bert/make_fixture.py" "$tmp/fx" || { echo "FAIL: make_fixture.py"; exit 1; }
"$(dirname "$bin")/preprocess_data" --input "$tmp/fx/corpus.jsonl" --output-prefix "$tmp/fx/corpus" --workers 1 \
  --vocab-file "$tmp/fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
  || { echo "FAIL: preprocess_data --split-sentences"; exit 1; }
data="$tmp/fx/corpus_text_sentence" vocab="$tmp/fx/vocab.txt"
# encoder 2 layers, decoder 2 layers (--num-layers), hidden 32, 4 heads; 32 encoder and 16 decoder tokens, 32
# positions, 10 sentinels; dropout on (Megatron's defaults, 0.1); 6 iterations of 8 samples, validation at 3 and 6
# and after training
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --decoder-seq-length 16
      --max-position-embeddings 32 --data-path "$data" --vocab-file "$vocab" --vocab-extra-ids 10 --split 90,10,0
      --lr 1e-3 --train-iters 6 --log-interval 1 --eval-interval 3 --eval-iters 1 --global-batch-size 8 --seed 1234)
# the values of one key on the validation lines
vals() { grep -F "validation loss at" <<<"$1" | grep -F "$2 value:" | sed -E "s/.*$2 value: ([0-9.E+-]+).*/\1/" | tr '\n' ' '; }
# the worst relative difference of two equal-length lists (or "n/a")
worst() { awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); m = split(b, y, " "); if (n != m || n == 0) { print "n/a"; exit }
  w = 0; for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = y[i] < 0 ? -y[i] : y[i]; if (s > 0 && d / s > w) w = d / s }
  printf "%.2e", w }'; }
# close with an absolute slack (the grad norm is printed with 3 decimals)
close_abs() { awk -v a="$1" -v b="$2" -v tol="$3" -v abs="$4" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ");
  if (n != m || n == 0) exit 1; for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
  if (d > tol * s + abs) exit 1 } }'; }
# same NAME REF OUT RC [TOL]: the lm loss of every iteration, the validation values (TOL relative, default 1e-5) and
# the grad norms (TOL + one printed unit) equal; the worst relative loss difference is printed
same() {
  local name="$1" r="$2" o="$3" rc="$4" tol="${5:-1e-5}" good=1 w
  [ "$rc" -eq 0 ] || good=0
  [ "$(field "$r" "lm loss" | wc -w)" -eq 6 ] || good=0
  close_abs "$(field "$r" "lm loss")" "$(field "$o" "lm loss")" "$tol" 1e-12 || good=0
  close_abs "$(vals "$r" "lm loss")" "$(vals "$o" "lm loss")" "$tol" 1e-12 || good=0
  close_abs "$(field "$r" "grad norm")" "$(field "$o" "grad norm")" "$tol" 1e-3 || good=0
  w=$(worst "$(field "$o" "lm loss") $(vals "$o" "lm loss")" "$(field "$r" "lm loss") $(vals "$r" "lm loss")")
  if [ $good = 1 ]; then
    ok "$name = one process: worst relative difference $w (lm loss $(field "$o" "lm loss" | awk '{print $NF}'))"
  else
    bad "$name" "rc=$rc worst $w; ref '$(field "$r" "lm loss")' got '$(field "$o" "lm loss")'"
    grep -E "error" <<<"$o" | head -3
  fi
}
one() { timeout 300 "$bin" "${tiny[@]}" "$@" 2>&1; }
run() { timeout 300 "${mpi[@]}" -np "$1" "$bin" "${tiny[@]}" "${@:2}" 2>&1; }
