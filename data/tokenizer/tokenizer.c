/* The generic tokenizer layer: Megatron's --tokenizer-type names, the factory that loads each kind,
 * dispatch of encode/decode to the kind's implementation, the zt_ids buffer, the NullTokenizer,
 * and Megatron's SentencePiece wrappers (_SentencePieceTokenizer's special tokens and its
 * text splitting on them; _GPTSentencePieceTokenizer) on top of the C shim over libsentencepiece. */
#include "data/tokenizer/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/gpt2_bpe.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/sentencepiece_shim.h"
#include "data/tokenizer/unicode.h"
#include "data/tokenizer/wordpiece.h"
#include "runtime/base/error.h"

/* ---- zt_ids ------------------------------------------------------------------------------------ */

void zt_ids_push(zt_ids *v, int32_t id) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 256;
    int32_t *ids = realloc(v->ids, cap * sizeof(int32_t));
    if (!ids) zt_fatal("tokenizer", "out of memory growing an id buffer to %zu ids", cap);
    v->ids = ids;
    v->cap = cap;
  }
  v->ids[v->n++] = id;
}

void zt_ids_free(zt_ids *v) {
  free(v->ids);
  v->ids = NULL;
  v->n = v->cap = 0;
}

/* ---- names ------------------------------------------------------------------------------------- */

static const char *const kind_names[] = {
    [ZT_TOK_GPT2BPE] = "GPT2BPETokenizer",
    [ZT_TOK_BERT_LOWER] = "BertWordPieceLowerCase",
    [ZT_TOK_BERT_CASE] = "BertWordPieceCase",
    [ZT_TOK_SENTENCEPIECE] = "SentencePieceTokenizer",
    [ZT_TOK_GPT_SENTENCEPIECE] = "GPTSentencePieceTokenizer",
    [ZT_TOK_NULL] = "NullTokenizer",
    [ZT_TOK_HF] = "HFTokenizer",
};
#define N_KINDS ((int)(sizeof(kind_names) / sizeof(kind_names[0])))

int zt_tokenizer_parse_kind(const char *name, zt_tokenizer_kind *kind) {
  if (!name) return -1;
  for (int k = 0; k < N_KINDS; k++)
    if (strcmp(name, kind_names[k]) == 0) {
      *kind = (zt_tokenizer_kind)k;
      return 0;
    }
  return -1;
}

const char *zt_tokenizer_kind_name(zt_tokenizer_kind kind) {
  if ((int)kind < 0 || (int)kind >= N_KINDS) return "unknown";
  return kind_names[kind];
}

/* ---- the tokenizer object ---------------------------------------------------------------------- */

/* Megatron's _SentencePieceTokenizer state on top of the processor: the added ids' strings and the
 * special tokens (each string -> id) in insertion order, which `tokenize` splits the text on. */
typedef struct {
  zt_spm *proc;
  int n_pieces;
  int n_added;           /* ids n_pieces .. n_pieces+n_added-1 are the added tokens */
  char **added;          /* their strings */
  int n_special;
  char **special;        /* special token strings, insertion order (duplicates kept once) */
  size_t *special_len;
  int32_t *special_id;
  uint8_t first_byte[256]; /* 1 where some special token starts with that byte */
} spm_megatron;

struct zt_tokenizer {
  zt_tokenizer_kind kind;
  int vocab_size;
  int32_t eod;
  zt_gpt2_bpe *gpt2;
  zt_wordpiece *wp;
  spm_megatron spm;
  zt_hf_tok *hf;
};

struct zt_tok_state {
  zt_tokenizer_kind kind;
  zt_gpt2_bpe_cache *gpt2_cache;
  zt_wordpiece_scratch *wp_scratch;
  zt_hf_state *hf;
  char *buf; /* scratch for SentencePiece (valid-UTF-8 copy of the text) */
  size_t buf_cap;
};

static const char *need_flag(const char *value, const char *flag, zt_tokenizer_kind kind) {
  if (!value || !value[0])
    zt_fatal(flag, "%s is required by --tokenizer-type %s", flag, zt_tokenizer_kind_name(kind));
  return value;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s);
  char *d = zt_malloc(n + 1, "tokenizer string");
  memcpy(d, s, n + 1);
  return d;
}

/* ---- SentencePiece (Megatron's wrappers) ------------------------------------------------------- */

/* Megatron's _add_special_token: a string not in the vocabulary gets the next id; either way it
 * becomes a special token that `tokenize` matches literally in the text. Returns its id. */
static int32_t spm_add_special(spm_megatron *m, const char *tok) {
  int32_t id = zt_spm_piece_to_id_exact(m->proc, tok);
  if (id < 0)
    for (int i = 0; i < m->n_added; i++)
      if (strcmp(m->added[i], tok) == 0) id = m->n_pieces + i;
  if (id < 0) {
    m->added = realloc(m->added, (size_t)(m->n_added + 1) * sizeof(char *));
    zt_check(m->added, "tokenizer", "out of memory");
    m->added[m->n_added] = xstrdup(tok);
    id = m->n_pieces + m->n_added++;
  }
  for (int i = 0; i < m->n_special; i++)
    if (strcmp(m->special[i], tok) == 0) return id; /* a dict keeps the first insertion position */
  int n = m->n_special + 1;
  m->special = realloc(m->special, (size_t)n * sizeof(char *));
  m->special_len = realloc(m->special_len, (size_t)n * sizeof(size_t));
  m->special_id = realloc(m->special_id, (size_t)n * sizeof(int32_t));
  zt_check(m->special && m->special_len && m->special_id, "tokenizer", "out of memory");
  m->special[m->n_special] = xstrdup(tok);
  m->special_len[m->n_special] = strlen(tok);
  m->special_id[m->n_special] = id;
  m->n_special = n;
  zt_check(tok[0], "--tokenizer-model", "%s: a special token (the model's pad/bos/eos piece) is the empty string",
           zt_spm_path(m->proc));
  m->first_byte[(uint8_t)tok[0]] = 1;
  return id;
}

/* The piece of a model's pad/bos/eos id, or `fallback` where the id is outside the pieces (Python's
 * id_to_piece raises IndexError there, which Megatron catches). */
static const char *spm_piece_or(const spm_megatron *m, int id, const char *fallback) {
  if (id < 0 || id >= m->n_pieces) return fallback;
  return zt_spm_id_to_piece(m->proc, id);
}

static void spm_setup(zt_tokenizer *t, const zt_tokenizer_spec *spec) {
  const char *path = need_flag(spec->tokenizer_model, "--tokenizer-model", spec->kind);
  spm_megatron *m = &t->spm;
  m->proc = zt_spm_load(path);
  m->n_pieces = zt_spm_piece_size(m->proc);
  if (spec->kind == ZT_TOK_GPT_SENTENCEPIECE) {
    /* _GPTSentencePieceTokenizer: no added tokens, eod = the model's eos id (-1 when it has none) */
    t->vocab_size = m->n_pieces;
    t->eod = zt_spm_eos_id(m->proc);
    return;
  }
  zt_check(spec->vocab_extra_ids >= 0, "--vocab-extra-ids", "must be >= 0, got %d", spec->vocab_extra_ids);
  spm_add_special(m, "<CLS>");
  spm_add_special(m, "<SEP>");
  t->eod = spm_add_special(m, "<EOD>");
  spm_add_special(m, "<MASK>");
  /* copy: the shim's piece strings live in the processor, but spm_add_special copies anyway */
  spm_add_special(m, spm_piece_or(m, zt_spm_pad_id(m->proc), "<PAD>"));
  spm_add_special(m, spm_piece_or(m, zt_spm_bos_id(m->proc), "<BOS>"));
  spm_add_special(m, spm_piece_or(m, zt_spm_eos_id(m->proc), "<EOS>"));
  for (int i = 0; i < spec->vocab_extra_ids; i++) {
    char tok[32];
    snprintf(tok, sizeof tok, "<extra_id_%d>", i);
    spm_add_special(m, tok);
  }
  t->vocab_size = m->n_pieces + m->n_added;
}

static void spm_release(spm_megatron *m) {
  for (int i = 0; i < m->n_added; i++) free(m->added[i]);
  for (int i = 0; i < m->n_special; i++) free(m->special[i]);
  free(m->added);
  free(m->special);
  free(m->special_len);
  free(m->special_id);
  zt_spm_free(m->proc);
}

/* A valid-UTF-8 view of text: itself when valid, else a copy with each invalid sequence replaced
 * by U+FFFD (Python's errors='replace', which is what Megatron's str would hold). */
static const char *valid_utf8(zt_tok_state *s, const char *text, size_t len, size_t *out_len) {
  size_t bad;
  if (zt_utf8_valid((const uint8_t *)text, len, &bad)) {
    *out_len = len;
    return text;
  }
  if (s->buf_cap < 3 * len + 1) {
    free(s->buf);
    s->buf_cap = 3 * len + 1;
    s->buf = zt_malloc(s->buf_cap, "tokenizer UTF-8 buffer");
  }
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    size_t used;
    uint32_t cp = zt_utf8_decode((const uint8_t *)text + i, len - i, &used);
    o += (size_t)zt_utf8_encode(cp, (uint8_t *)s->buf + o);
    i += used;
  }
  *out_len = o;
  return s->buf;
}

/* Megatron's _SentencePieceTokenizer.tokenize: repeatedly find the earliest occurrence of any special
 * token (ties: the first inserted), encode the text before it with the model, emit its id. One scan:
 * the first position where some special token matches is the earliest occurrence, and trying the
 * tokens there in insertion order settles ties as Python's min() over the dict does. */
static void spm_encode_megatron(const spm_megatron *m, const char *text, size_t len, zt_ids *out) {
  size_t idx = 0;
  for (size_t p = 0; p < len; p++) {
    if (!m->first_byte[(uint8_t)text[p]]) continue;
    for (int k = 0; k < m->n_special; k++) {
      size_t L = m->special_len[k];
      if (p + L <= len && memcmp(text + p, m->special[k], L) == 0) {
        zt_spm_encode(m->proc, text + idx, p - idx, out);
        zt_ids_push(out, m->special_id[k]);
        idx = p + L;
        p = idx - 1;
        break;
      }
    }
  }
  zt_spm_encode(m->proc, text + idx, len - idx, out);
}

void zt_text_put(zt_text *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    b->p = realloc(b->p, cap);
    zt_check(b->p, "tokenizer", "out of memory growing a text buffer to %zu bytes", cap);
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void text_put_spm(zt_text *b, const zt_spm *proc, const int32_t *ids, size_t n) {
  size_t len;
  char *s = zt_spm_decode(proc, ids, n, &len);
  zt_text_put(b, s, len);
  free(s);
}

/* Megatron's _SentencePieceTokenizer.detokenize: model-decoded runs, each special token written as
 * "<run> <token> " (run decoded, then a space, the token, a space). */
static char *spm_decode_megatron(const zt_tokenizer *t, const int32_t *ids, size_t n, size_t *len_out) {
  const spm_megatron *m = &t->spm;
  zt_text b = {0};
  zt_text_put(&b, "", 0);
  size_t last = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    if (id < 0 || id >= t->vocab_size)
      zt_fatal("SentencePieceTokenizer", "id %d (position %zu) is outside the vocabulary [0, %d)", id, i,
               t->vocab_size);
    int k = -1;
    for (int j = 0; j < m->n_special && k < 0; j++)
      if (m->special_id[j] == id) k = j;
    if (k < 0) continue;
    text_put_spm(&b, m->proc, ids + last, i - last);
    zt_text_put(&b, " ", 1);
    zt_text_put(&b, m->special[k], m->special_len[k]);
    zt_text_put(&b, " ", 1);
    last = i + 1;
  }
  text_put_spm(&b, m->proc, ids + last, n - last);
  *len_out = b.n;
  return b.p;
}

/* ---- NullTokenizer ----------------------------------------------------------------------------- */

/* Python's str.isspace for what int() strips around a number. */
static int py_isspace(uint32_t cp) { return zt_unicode_is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

static uint32_t decode_cp(const char *s, size_t n, size_t *used) { return zt_utf8_decode((const uint8_t *)s, n, used); }

/* Python's int(token) for a base-10 token: surrounding whitespace, a sign, ASCII digits with single
 * underscores between them. Returns 0 and sets *value, or -1. */
static int py_int(const char *s, size_t len, long long *value) {
  size_t b = 0, e = len, used;
  while (b < e) {
    uint32_t cp = decode_cp(s + b, e - b, &used);
    if (!py_isspace(cp)) break;
    b += used;
  }
  while (e > b) { /* strip from the end: step back over one UTF-8 sequence */
    size_t st = e - 1;
    while (st > b && ((uint8_t)s[st] & 0xC0) == 0x80 && e - st < 4) st--;
    uint32_t cp = decode_cp(s + st, e - st, &used);
    if (used != e - st || !py_isspace(cp)) break;
    e = st;
  }
  int neg = 0;
  if (b < e && (s[b] == '+' || s[b] == '-')) neg = s[b++] == '-';
  if (b == e) return -1;
  long long v = 0;
  int prev_digit = 0, big = 0;
  for (size_t i = b; i < e; i++) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      /* past 10^17 no id can fit: stop accumulating (never multiply past LLONG_MAX) and saturate */
      if (v >= 100000000000000000LL) big = 1;
      else v = v * 10 + (c - '0');
      prev_digit = 1;
    } else if (c == '_' && prev_digit && i + 1 < e) {
      prev_digit = 0;
    } else {
      return -1;
    }
  }
  if (!prev_digit) return -1;
  if (big) v = LLONG_MAX; /* reported as out of range */
  *value = neg ? -v : v;
  return 0;
}

/* Megatron's _NullTokenizer.tokenize: [int(x) for x in text.split(' ')]. */
static void null_encode(const zt_tokenizer *t, const char *text, size_t len, zt_ids *out) {
  size_t start = 0, k = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && text[i] != ' ') continue;
    long long v;
    size_t n = i - start;
    if (py_int(text + start, n, &v) != 0)
      zt_fatal("NullTokenizer", "token %zu \"%.*s\" (byte offset %zu) is not an integer: the text must be "
               "integer ids separated by single spaces", k, (int)(n > 80 ? 80 : n), text + start, start);
    if (v < 0 || v >= t->vocab_size)
      zt_fatal("NullTokenizer", "token %zu \"%.*s\" (byte offset %zu) is outside the vocabulary [0, %d) "
               "(--vocab-size %d plus the eod id %d)", k, (int)(n > 80 ? 80 : n), text + start, start,
               t->vocab_size, t->vocab_size - 1, t->eod);
    zt_ids_push(out, (int32_t)v);
    start = i + 1;
    k++;
  }
}

static char *null_decode(const zt_tokenizer *t, const int32_t *ids, size_t n, size_t *len_out) {
  char *s = zt_malloc(n * 12 + 1, "NullTokenizer decode");
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= t->vocab_size)
      zt_fatal("NullTokenizer", "id %d (position %zu) is outside the vocabulary [0, %d)", ids[i], i, t->vocab_size);
    o += (size_t)sprintf(s + o, i ? " %d" : "%d", ids[i]);
  }
  s[o] = 0;
  *len_out = o;
  return s;
}

/* ---- factory and dispatch ---------------------------------------------------------------------- */

zt_tokenizer *zt_tokenizer_create(const zt_tokenizer_spec *spec) {
  zt_tokenizer *t = zt_calloc(1, sizeof *t, "tokenizer");
  t->kind = spec->kind;
  t->eod = -1;
  switch (spec->kind) {
  case ZT_TOK_NULL:
    /* _NullTokenizer(vocab_size): ids 0..V-1 from the text, eod = V, vocab_size = V + 1 */
    zt_check(spec->vocab_size > 0 && spec->vocab_size < INT32_MAX, "--vocab-size",
             "--tokenizer-type NullTokenizer needs --vocab-size > 0, got %d", spec->vocab_size);
    t->vocab_size = spec->vocab_size + 1;
    t->eod = spec->vocab_size;
    break;
  case ZT_TOK_BERT_LOWER:
  case ZT_TOK_BERT_CASE:
    zt_check(spec->vocab_extra_ids >= 0, "--vocab-extra-ids", "must be >= 0, got %d", spec->vocab_extra_ids);
    t->wp = zt_wordpiece_load(need_flag(spec->vocab_file, "--vocab-file", spec->kind),
                              spec->kind == ZT_TOK_BERT_LOWER, spec->vocab_extra_ids);
    t->vocab_size = zt_wordpiece_vocab_size(t->wp);
    t->eod = -1; /* Megatron's _BertWordPieceTokenizer has no eod (AbstractTokenizer raises) */
    break;
  case ZT_TOK_GPT2BPE:
    t->gpt2 = zt_gpt2_bpe_load(need_flag(spec->vocab_file, "--vocab-file", spec->kind),
                               need_flag(spec->merge_file, "--merge-file", spec->kind));
    t->vocab_size = zt_gpt2_bpe_vocab_size(t->gpt2);
    t->eod = zt_gpt2_bpe_eod(t->gpt2);
    break;
  case ZT_TOK_SENTENCEPIECE:
  case ZT_TOK_GPT_SENTENCEPIECE:
    spm_setup(t, spec);
    break;
  case ZT_TOK_HF:
    t->hf = zt_hf_tok_load(need_flag(spec->tokenizer_model, "--tokenizer-model", spec->kind));
    t->vocab_size = zt_hf_vocab_size(t->hf);
    t->eod = zt_hf_eos(t->hf);
    break;
  default:
    zt_fatal("--tokenizer-type", "unknown tokenizer kind %d", (int)spec->kind);
  }
  return t;
}

void zt_tokenizer_free(zt_tokenizer *t) {
  if (!t) return;
  if (t->gpt2) zt_gpt2_bpe_free(t->gpt2);
  if (t->wp) zt_wordpiece_free(t->wp);
  if (t->spm.proc) spm_release(&t->spm);
  zt_hf_tok_free(t->hf);
  free(t);
}

int zt_tokenizer_vocab_size(const zt_tokenizer *t) { return t->vocab_size; }
int32_t zt_tokenizer_eod(const zt_tokenizer *t) { return t->eod; }
const zt_hf_tok *zt_tokenizer_hf(const zt_tokenizer *t) { return t->hf; }

zt_tokenizer_kind zt_tokenizer_kind_of(const zt_tokenizer *t) { return t->kind; }

int32_t zt_tokenizer_token_to_id(const zt_tokenizer *t, const char *token) {
  return t->wp ? zt_wordpiece_token_id(t->wp, token) : -1;
}

const char *zt_tokenizer_id_to_token(const zt_tokenizer *t, int32_t id) {
  return t->wp ? zt_wordpiece_id_token(t->wp, id) : NULL;
}

zt_tok_state *zt_tok_state_new(const zt_tokenizer *t) {
  zt_tok_state *s = zt_calloc(1, sizeof *s, "tokenizer state");
  s->kind = t->kind;
  if (t->gpt2) s->gpt2_cache = zt_gpt2_bpe_cache_new();
  if (t->wp) s->wp_scratch = zt_wordpiece_scratch_new();
  if (t->hf) s->hf = zt_hf_state_new(t->hf);
  return s;
}

void zt_tok_state_free(zt_tok_state *s) {
  if (!s) return;
  if (s->gpt2_cache) zt_gpt2_bpe_cache_free(s->gpt2_cache);
  if (s->wp_scratch) zt_wordpiece_scratch_free(s->wp_scratch);
  zt_hf_state_free(s->hf);
  free(s->buf);
  free(s);
}

void zt_tokenizer_encode(const zt_tokenizer *t, zt_tok_state *s, const char *text, size_t len, zt_ids *out) {
  zt_check(s && s->kind == t->kind, "tokenizer", "encode with a state made for another tokenizer");
  switch (t->kind) {
  case ZT_TOK_NULL: null_encode(t, text, len, out); break;
  case ZT_TOK_BERT_LOWER:
  case ZT_TOK_BERT_CASE: zt_wordpiece_encode(t->wp, s->wp_scratch, text, len, out); break;
  case ZT_TOK_GPT2BPE: zt_gpt2_bpe_encode(t->gpt2, s->gpt2_cache, text, len, out); break;
  case ZT_TOK_SENTENCEPIECE:
  case ZT_TOK_GPT_SENTENCEPIECE: {
    size_t n;
    const char *v = valid_utf8(s, text, len, &n);
    if (t->kind == ZT_TOK_SENTENCEPIECE) spm_encode_megatron(&t->spm, v, n, out);
    else zt_spm_encode(t->spm.proc, v, n, out);
    break;
  }
  case ZT_TOK_HF: {
    size_t n;
    const char *v = valid_utf8(s, text, len, &n);
    zt_hf_encode(t->hf, s->hf, v, n, out);
    break;
  }
  }
}

char *zt_tokenizer_decode(const zt_tokenizer *t, const int32_t *ids, size_t n, size_t *len_out) {
  size_t len = 0;
  char *s = NULL;
  switch (t->kind) {
  case ZT_TOK_NULL: s = null_decode(t, ids, n, &len); break;
  case ZT_TOK_BERT_LOWER:
  case ZT_TOK_BERT_CASE: s = zt_wordpiece_decode(t->wp, ids, n, &len); break;
  case ZT_TOK_GPT2BPE: s = zt_gpt2_bpe_decode(t->gpt2, ids, n, &len); break;
  case ZT_TOK_SENTENCEPIECE: s = spm_decode_megatron(t, ids, n, &len); break;
  case ZT_TOK_GPT_SENTENCEPIECE:
    for (size_t i = 0; i < n; i++)
      if (ids[i] < 0 || ids[i] >= t->vocab_size)
        zt_fatal("GPTSentencePieceTokenizer", "id %d (position %zu) is outside the vocabulary [0, %d)", ids[i], i,
                 t->vocab_size);
    s = zt_spm_decode(t->spm.proc, ids, n, &len);
    break;
  case ZT_TOK_HF: s = zt_hf_decode(t->hf, ids, n, &len); break;
  }
  if (len_out) *len_out = len;
  return s;
}

char *zt_tokenizer_segment(const zt_tokenizer *t, int32_t id, size_t *len_out) {
  if ((t->kind == ZT_TOK_SENTENCEPIECE || t->kind == ZT_TOK_GPT_SENTENCEPIECE) && id >= 0 &&
      id < zt_spm_piece_size(t->spm.proc)) {
    const char *piece = zt_spm_id_to_piece(t->spm.proc, id);
    const size_t n = strlen(piece);
    char *s = zt_malloc(n + 1, "token text");
    memcpy(s, piece, n + 1);
    if (len_out) *len_out = n;
    return s;
  }
  return zt_tokenizer_decode(t, &id, 1, len_out);
}
