# Sourced by the T5 tests (after tests/lib/common.sh): BERT's test library (tests/bert/bert_lib.sh: a temporary folder
# with the generated sentence-split corpus, its vocab.txt, the helpers vals/worst/close_abs/one/run), then the tiny
# T5's flags and the comparison of T5's log lines (lm loss only).
# Needs: bin (pretrain_t5), PY (a python3). Sets: tmp, data, vocab, tiny.
. "$(dirname "${BASH_SOURCE[0]}")/../bert/bert_lib.sh"
# encoder 2 layers, decoder 2 layers (--num-layers), hidden 32, 4 heads; 32 encoder and 16 decoder tokens, 32
# positions, 10 sentinels; dropout on (Megatron's defaults, 0.1); 6 iterations of 8 samples, validation at 3 and 6
# and after training
tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --decoder-seq-length 16
      --max-position-embeddings 32 --data-path "$data" --vocab-file "$vocab" --vocab-extra-ids 10 --split 90,10,0
      --lr 1e-3 --train-iters 6 --log-interval 1 --eval-interval 3 --eval-iters 1 --global-batch-size 8 --seed 1234)
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
