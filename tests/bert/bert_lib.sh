# Sourced by the BERT tests (after tests/lib/common.sh): a temporary folder with the fixture (a generated
# sentence-split corpus, preprocess_data --split-sentences, and its WordPiece vocab.txt; tests/bert/make_fixture.py),
# the tiny BERT's flags, the log-line helpers for BERT's two losses, and `refused` for the error tests.
# Needs: bin (pretrain_bert), PY (a python3). Sets: tmp, fx, data, vocab, tiny.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
here_bert="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$PY" "$here_bert/make_fixture.py" "$tmp/fx" || { echo "FAIL: make_fixture.py"; exit 1; }
"$(dirname "$bin")/preprocess_data" --input "$tmp/fx/corpus.jsonl" --output-prefix "$tmp/fx/corpus" --workers 1 \
  --vocab-file "$tmp/fx/vocab.txt" --tokenizer-type BertWordPieceLowerCase --split-sentences >/dev/null \
  || { echo "FAIL: preprocess_data --split-sentences"; exit 1; }
fx="$tmp/fx" data="$tmp/fx/corpus_text_sentence" vocab="$tmp/fx/vocab.txt"
# 4 layers, hidden 32, 4 heads, 32 positions; dropout on (Megatron's defaults, 0.1); 6 iterations of 8 samples,
# validation at 3 and 6 and after training
tiny=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32
      --data-path "$data" --vocab-file "$vocab" --split 90,10,0 --lr 1e-3 --train-iters 6 --log-interval 1
      --eval-interval 3 --eval-iters 1 --global-batch-size 8 --seed 1234)
# the values of one key on the iteration lines; of one key on the validation lines
vals() { grep -F "validation loss at" <<<"$1" | grep -F "$2 value:" | sed -E "s/.*$2 value: ([0-9.E+-]+).*/\1/" | tr '\n' ' '; }
# the worst relative difference of two equal-length lists (or "n/a")
worst() { awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); m = split(b, y, " "); if (n != m || n == 0) { print "n/a"; exit }
  w = 0; for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = y[i] < 0 ? -y[i] : y[i]; if (s > 0 && d / s > w) w = d / s }
  printf "%.2e", w }'; }
# close with an absolute slack (the grad norm is printed with 3 decimals)
close_abs() { awk -v a="$1" -v b="$2" -v tol="$3" -v abs="$4" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ");
  if (n != m || n == 0) exit 1; for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i];
  if (d > tol * s + abs) exit 1 } }'; }
# same NAME REF OUT RC [TOL]: lm loss and sop loss of every iteration, the validation lm/sop values (TOL relative,
# default 1e-5) and the grad norms (TOL + one printed unit) equal; the worst relative loss difference is printed
same() {
  local name="$1" r="$2" o="$3" rc="$4" tol="${5:-1e-5}" k good=1 w=0 wk
  [ "$rc" -eq 0 ] || good=0
  [ "$(field "$r" "lm loss" | wc -w)" -eq 6 ] || good=0
  for k in "lm loss" "sop loss"; do
    close_abs "$(field "$r" "$k")" "$(field "$o" "$k")" "$tol" 1e-12 || good=0
    close_abs "$(vals "$r" "$k")" "$(vals "$o" "$k")" "$tol" 1e-12 || good=0
    wk=$(worst "$(field "$o" "$k") $(vals "$o" "$k")" "$(field "$r" "$k") $(vals "$r" "$k")")
    w=$(awk -v a="$w" -v b="$wk" 'BEGIN { if (b == "n/a" || a == "n/a") print "n/a"; else print (b > a ? b : a) }')
  done
  close_abs "$(field "$r" "grad norm")" "$(field "$o" "grad norm")" "$tol" 1e-3 || good=0
  if [ $good = 1 ]; then
    ok "$name = one process: worst relative difference $w (lm $(field "$o" "lm loss" | awk '{print $NF}'), sop $(field "$o" "sop loss" | awk '{print $NF}'))"
  else
    bad "$name" "rc=$rc worst $w; ref lm '$(field "$r" "lm loss")' sop '$(field "$r" "sop loss")' got lm '$(field "$o" "lm loss")' sop '$(field "$o" "sop loss")'"
    grep -E "error" <<<"$o" | head -3
  fi
}
one() { timeout 300 "$bin" "${tiny[@]}" "$@" 2>&1; }
run() { timeout 300 "${mpi[@]}" -np "$1" "$bin" "${tiny[@]}" "${@:2}" 2>&1; }
# zbh1 NAME NP FLAGS...: the zero-bubble H1 schedule (FLAGS: --deepspeed and pipeline stages) against 1F1B: with
# --enable-zbh1-exact-semantics the same log lines bit for bit, without it the lm losses within 1e-5
zbh1() {
  local name="$1" np="$2" a b c ra rb rc la lb
  shift 2
  a=$(run "$np" "$@"); ra=$?
  b=$(run "$np" "$@" --enable-zbh1-pipeline --enable-zbh1-exact-semantics); rb=$?
  c=$(run "$np" "$@" --enable-zbh1-pipeline); rc=$?
  la=$(grep -E "^ iteration |^ validation loss at" <<<"$a" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second.*//')
  lb=$(grep -E "^ iteration |^ validation loss at" <<<"$b" | sed -E 's/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ samples per second.*//')
  if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ "$(field "$a" "lm loss" | wc -w)" -eq 6 ] && [ "$la" = "$lb" ] \
     && grep -qF "> zero-bubble H1 pipeline schedule with exact semantics" <<<"$b"; then
    ok "$name: ZB-H1 with exact semantics = 1F1B bit for bit ($(grep -c . <<<"$la") log lines)"
  else
    bad "$name: ZB-H1 exact" "rc=$ra/$rb: $(diff <(echo "$la") <(echo "$lb") | head -3) $(grep -m2 -i error <<<"$a$b")"
  fi
  if [ $rc -eq 0 ] && close_abs "$(field "$a" "lm loss")" "$(field "$c" "lm loss")" 1e-5 1e-12; then
    ok "$name: ZB-H1 = 1F1B's lm losses within 1e-5 (worst $(worst "$(field "$c" "lm loss")" "$(field "$a" "lm loss")"))"
  else
    bad "$name: ZB-H1" "rc=$rc: 1F1B '$(field "$a" "lm loss")' ZB-H1 '$(field "$c" "lm loss")' $(grep -m2 -i error <<<"$c")"
  fi
}
# refused NAME PROGRAM MESSAGE FLAGS...: PROGRAM with the tiny flags and FLAGS stops before any iteration with a
# non-zero exit and MESSAGE, leaving no checkpoint ($tmp/ckpt) and no samples-mapping cache behind
refused() { # name, program, message, flags...
  local name="$1" prog="$2" msg="$3" o rc left; shift 3
  o=$(timeout 60 "$prog" "${tiny[@]}" "$@" 2>&1); rc=$?
  left=$(ls "$tmp/ckpt" "$fx"/*indexmap* 2>/dev/null)
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$msg" <<<"$o" && ! grep -q "^ iteration " <<<"$o" && [ -z "$left" ]; then
    ok "refused: $name ($msg)"
  else
    bad "refusal: $name" "rc=$rc want '$msg', got '$(grep -m2 -i error <<<"$o")'; left behind: $left"
  fi
  rm -rf "$tmp/ckpt" "$fx"/*indexmap*
}
