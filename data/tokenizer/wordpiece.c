/* BERT WordPiece as Megatron runs it (megatron/tokenizer/bert_tokenization.py, Google's algorithm):
 *   BasicTokenizer: drop U+0000, U+FFFD and control characters (Cc, Cf; not \t \n \r), whitespace
 *   (\t \n \r ' ' and Zs) -> ' ', spaces around CJK ideographs, split on Python's str.isspace; per
 *   token: (LowerCase kind) str.lower() (Final_Sigma included), NFD, drop Mn; split off every
 *   punctuation character (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*).
 *   WordpieceTokenizer: words over 200 code points -> [UNK]; else greedy longest match from the
 *   left, continuations prefixed "##"; a word with an unmatched rest -> [UNK].
 * The vocabulary is vocab.txt plus Megatron's added [BOS], [EOS], <extra_id_N>. */
#include "data/tokenizer/wordpiece.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"

#define WP_MAX_INPUT_CHARS 200 /* WordpieceTokenizer(max_input_chars_per_word=200) in Megatron */

/* ---- the vocabulary: token string -> id (open addressing), id -> token --------------------------- */

typedef struct {
  char *str; /* NULL: empty slot */
  uint32_t len;
  int32_t id;
} wp_slot;

struct zt_wordpiece {
  char *path;
  int lower;
  wp_slot *slots;
  size_t cap; /* power of two */
  size_t count;  /* len(vocab): distinct tokens */
  char **inv;    /* id -> token (NULL where no token has the id) */
  size_t n_inv;
  int32_t unk_id; /* -1 when vocab.txt has no [UNK] */
};

static uint64_t fnv_bytes(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
#define FNV0 0xcbf29ce484222325ull

/* The slot of "##"[0..prefix) + s[0..n): found (str != NULL) or the empty slot where it would go. */
static wp_slot *wp_find(const zt_wordpiece *w, int hash_prefix, const char *s, size_t n) {
  uint64_t h = FNV0;
  if (hash_prefix) h = fnv_bytes(h, "##", 2);
  h = fnv_bytes(h, s, n);
  size_t len = n + (hash_prefix ? 2 : 0);
  for (size_t i = (size_t)h & (w->cap - 1);; i = (i + 1) & (w->cap - 1)) {
    wp_slot *sl = &w->slots[i];
    if (!sl->str) return sl;
    if (sl->len == len) {
      if (hash_prefix) {
        if (sl->str[0] == '#' && sl->str[1] == '#' && memcmp(sl->str + 2, s, n) == 0) return sl;
      } else if (memcmp(sl->str, s, n) == 0) {
        return sl;
      }
    }
  }
}

static void wp_grow(zt_wordpiece *w) {
  wp_slot *old = w->slots;
  size_t old_cap = w->cap;
  w->cap = old_cap ? old_cap * 2 : 1024;
  w->slots = zt_calloc(w->cap, sizeof(wp_slot), "WordPiece vocabulary table");
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].str) *wp_find(w, 0, old[i].str, old[i].len) = old[i];
  free(old);
}

static void wp_set_inv(zt_wordpiece *w, int32_t id, char *str) {
  if ((size_t)id >= w->n_inv) {
    size_t n = w->n_inv ? w->n_inv : 1024;
    while (n <= (size_t)id) n *= 2;
    w->inv = realloc(w->inv, n * sizeof(char *));
    zt_check(w->inv, "WordPiece", "out of memory");
    memset(w->inv + w->n_inv, 0, (n - w->n_inv) * sizeof(char *));
    w->n_inv = n;
  }
  w->inv[id] = str;
}

/* vocab[token] = id (a later line with the same token moves it, as a Python dict assignment does). */
static void wp_put(zt_wordpiece *w, const char *s, size_t n, int32_t id) {
  if ((w->count + 1) * 2 > w->cap) wp_grow(w);
  wp_slot *sl = wp_find(w, 0, s, n);
  if (!sl->str) {
    sl->str = zt_malloc(n + 1, "WordPiece token");
    memcpy(sl->str, s, n);
    sl->str[n] = 0;
    sl->len = (uint32_t)n;
    w->count++;
  }
  sl->id = id;
}

int32_t zt_wordpiece_token_id(const zt_wordpiece *w, const char *token) {
  wp_slot *sl = wp_find(w, 0, token, strlen(token));
  return sl->str ? sl->id : -1;
}

/* Python's str.isspace() (what str.split() and str.strip() use). */
static int py_isspace(uint32_t cp) { return zt_unicode_is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

/* Megatron's add_token: a token not in the vocabulary gets id len(vocab). */
static void wp_add_token(zt_wordpiece *w, const char *tok) {
  if (zt_wordpiece_token_id(w, tok) >= 0) return;
  int32_t id = (int32_t)w->count;
  wp_put(w, tok, strlen(tok), id);
  wp_set_inv(w, id, wp_find(w, 0, tok, strlen(tok))->str);
}

zt_wordpiece *zt_wordpiece_load(const char *path, int lower_case, int extra_ids) {
  size_t size;
  char *buf = zt_read_file(path, &size);
  if (!buf) zt_fatal("--vocab-file", "cannot open BERT vocabulary %s: %s", path, strerror(errno));
  size_t bad;
  if (!zt_utf8_valid((const uint8_t *)buf, (size_t)size, &bad)) {
    size_t line = 1;
    for (size_t i = 0; i < bad; i++) line += buf[i] == '\n' || (buf[i] == '\r' && buf[i + 1] != '\n');
    zt_fatal("--vocab-file", "%s line %zu (byte %zu): invalid UTF-8", path, line, bad);
  }

  zt_wordpiece *w = zt_calloc(1, sizeof *w, "WordPiece");
  w->lower = lower_case;
  w->path = zt_malloc(strlen(path) + 1, "path");
  strcpy(w->path, path);
  wp_grow(w);
  /* load_vocab: readline() with universal newlines (\n, \r\n, \r), token = line.strip(), id = line index */
  int32_t index = 0;
  size_t i = 0, n = (size_t)size;
  while (i < n) {
    size_t b = i, e = i;
    while (e < n && buf[e] != '\n' && buf[e] != '\r') e++;
    i = e;
    if (i < n) i += (buf[i] == '\r' && i + 1 < n && buf[i + 1] == '\n') ? 2 : 1;
    size_t used;
    while (b < e) { /* strip */
      uint32_t cp = zt_utf8_decode((const uint8_t *)buf + b, e - b, &used);
      if (!py_isspace(cp)) break;
      b += used;
    }
    while (e > b) {
      size_t st = e - 1;
      while (st > b && ((uint8_t)buf[st] & 0xC0) == 0x80) st--;
      if (!py_isspace(zt_utf8_decode((const uint8_t *)buf + st, e - st, &used))) break;
      e = st;
    }
    zt_check(index < INT32_MAX - 1 - extra_ids, "--vocab-file", "%s: too many lines", path);
    wp_put(w, buf + b, e - b, index++);
  }
  free(buf);
  /* inv_vocab = {v: k for k, v in vocab.items()} */
  for (size_t k = 0; k < w->cap; k++)
    if (w->slots[k].str) wp_set_inv(w, w->slots[k].id, w->slots[k].str);

  const char *required[] = {"[CLS]", "[SEP]", "[PAD]", "[MASK]"};
  for (int k = 0; k < 4; k++)
    if (zt_wordpiece_token_id(w, required[k]) < 0)
      zt_fatal("--vocab-file", "%s (%d lines) has no %s token, which Megatron's BERT tokenizer requires", path,
               index, required[k]);
  w->unk_id = zt_wordpiece_token_id(w, "[UNK]");
  wp_add_token(w, "[BOS]");
  wp_add_token(w, "[EOS]");
  for (int k = 0; k < extra_ids; k++) {
    char tok[32];
    snprintf(tok, sizeof tok, "<extra_id_%d>", k);
    wp_add_token(w, tok);
  }
  return w;
}

void zt_wordpiece_free(zt_wordpiece *w) {
  if (!w) return;
  for (size_t k = 0; k < w->cap; k++) free(w->slots[k].str);
  free(w->slots);
  free(w->inv);
  free(w->path);
  free(w);
}

int zt_wordpiece_vocab_size(const zt_wordpiece *w) { return (int)w->count; }

const char *zt_wordpiece_id_token(const zt_wordpiece *w, int32_t id) {
  return id >= 0 && (size_t)id < w->n_inv ? w->inv[id] : NULL;
}

/* ---- scratch ------------------------------------------------------------------------------------ */

typedef struct {
  uint32_t *p;
  size_t n, cap;
} cpbuf;

static void cp_push(cpbuf *b, uint32_t c) {
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 256;
    b->p = realloc(b->p, b->cap * sizeof(uint32_t));
    zt_check(b->p, "WordPiece", "out of memory growing a buffer to %zu code points", b->cap);
  }
  b->p[b->n++] = c;
}

struct zt_wordpiece_scratch {
  cpbuf text;  /* cleaned text */
  cpbuf tok;   /* one token after lower/NFD */
  cpbuf nfd;
  char *bytes; /* UTF-8 of one word */
  size_t *off; /* byte offset of each code point of the word (+ the end) */
  char *out;   /* basic-tokenize output */
  size_t out_n, out_cap;
};

zt_wordpiece_scratch *zt_wordpiece_scratch_new(void) {
  zt_wordpiece_scratch *s = zt_calloc(1, sizeof *s, "WordPiece scratch");
  s->bytes = zt_malloc(4 * WP_MAX_INPUT_CHARS + 8, "WordPiece scratch");
  s->off = zt_malloc((WP_MAX_INPUT_CHARS + 1) * sizeof(size_t), "WordPiece scratch");
  return s;
}

void zt_wordpiece_scratch_free(zt_wordpiece_scratch *s) {
  if (!s) return;
  free(s->text.p);
  free(s->tok.p);
  free(s->nfd.p);
  free(s->bytes);
  free(s->off);
  free(s->out);
  free(s);
}

/* ---- BasicTokenizer ---------------------------------------------------------------------------- */

static int is_control(uint32_t cp) { /* _is_control */
  if (cp == '\t' || cp == '\n' || cp == '\r') return 0;
  zt_ucat c = zt_unicode_category(cp);
  return c == ZT_UC_Cc || c == ZT_UC_Cf;
}

static int is_whitespace(uint32_t cp) { /* _is_whitespace */
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || zt_unicode_category(cp) == ZT_UC_Zs;
}

static int is_punctuation(uint32_t cp) { /* _is_punctuation */
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return 1;
  zt_ucat c = zt_unicode_category(cp);
  return c >= ZT_UC_Pc && c <= ZT_UC_Po;
}

static int is_chinese_char(uint32_t cp) { /* _is_chinese_char: the CJK Unified Ideographs blocks */
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* str.lower() of t[0..n) (Final_Sigma included) appended to out. */
static void py_lower(const uint32_t *t, size_t n, cpbuf *out) {
  for (size_t i = 0; i < n; i++) {
    uint32_t l[3];
    int m = zt_unicode_lower_at(t, n, i, l);
    for (int k = 0; k < m; k++) cp_push(out, l[k]);
  }
}

/* _run_strip_accents: unicodedata.normalize("NFD", t), then drop Mn. */
static void strip_accents(zt_wordpiece_scratch *s, cpbuf *t) {
  cpbuf *d = &s->nfd;
  if (d->cap < 4 * t->n) {
    d->cap = 4 * t->n;
    free(d->p);
    d->p = zt_malloc(d->cap * sizeof(uint32_t), "WordPiece NFD buffer");
  }
  d->n = zt_unicode_nfd(t->p, t->n, d->p);
  t->n = 0;
  for (size_t i = 0; i < d->n; i++)
    if (zt_unicode_category(d->p[i]) != ZT_UC_Mn) cp_push(t, d->p[i]);
}

typedef void (*word_fn)(const zt_wordpiece *w, zt_wordpiece_scratch *s, const uint32_t *cps, size_t n,
                        zt_ids *out);

/* Runs BasicTokenizer over text and calls emit for each output token. */
static void basic_tokenize(const zt_wordpiece *w, int lower, zt_wordpiece_scratch *s, const char *text, size_t len,
                           word_fn emit, zt_ids *out) {
  cpbuf *a = &s->text;
  a->n = 0;
  for (size_t i = 0; i < len;) { /* _clean_text + _tokenize_chinese_chars */
    size_t used;
    uint32_t cp = zt_utf8_decode((const uint8_t *)text + i, len - i, &used);
    i += used;
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      cp_push(a, ' ');
    } else if (is_chinese_char(cp)) {
      cp_push(a, ' ');
      cp_push(a, cp);
      cp_push(a, ' ');
    } else {
      cp_push(a, cp);
    }
  }
  for (size_t i = 0; i < a->n;) { /* whitespace_tokenize */
    while (i < a->n && py_isspace(a->p[i])) i++;
    size_t b = i;
    while (i < a->n && !py_isspace(a->p[i])) i++;
    if (i == b) break;
    cpbuf *t = &s->tok;
    t->n = 0;
    if (lower) {
      py_lower(a->p + b, i - b, t);
      strip_accents(s, t);
    } else {
      for (size_t k = b; k < i; k++) cp_push(t, a->p[k]);
    }
    /* _run_split_on_punc, then the final whitespace_tokenize(" ".join(...)) */
    size_t st = 0;
    for (size_t k = 0; k <= t->n; k++) {
      if (k < t->n && !is_punctuation(t->p[k]) && !py_isspace(t->p[k])) continue;
      if (k > st) emit(w, s, t->p + st, k - st, out);
      if (k < t->n && is_punctuation(t->p[k])) emit(w, s, t->p + k, 1, out);
      st = k + 1;
    }
  }
}

/* ---- WordpieceTokenizer ------------------------------------------------------------------------ */

static void emit_unk(const zt_wordpiece *w, zt_ids *out) {
  if (w->unk_id < 0) zt_fatal("--vocab-file", "%s has no [UNK] token, and the text has a word not in it", w->path);
  zt_ids_push(out, w->unk_id);
}

static void wordpiece_word(const zt_wordpiece *w, zt_wordpiece_scratch *s, const uint32_t *cps, size_t n,
                           zt_ids *out) {
  if (n > WP_MAX_INPUT_CHARS) {
    emit_unk(w, out);
    return;
  }
  size_t nb = 0;
  for (size_t i = 0; i < n; i++) {
    s->off[i] = nb;
    nb += (size_t)zt_utf8_encode(cps[i], (uint8_t *)s->bytes + nb);
  }
  s->off[n] = nb;
  size_t mark = out->n;
  for (size_t start = 0; start < n;) {
    size_t end = n;
    int32_t id = -1;
    for (; end > start; end--) {
      wp_slot *sl = wp_find(w, start > 0, s->bytes + s->off[start], s->off[end] - s->off[start]);
      if (sl->str) {
        id = sl->id;
        break;
      }
    }
    if (id < 0) { /* is_bad: the whole word becomes [UNK] */
      out->n = mark;
      emit_unk(w, out);
      return;
    }
    zt_ids_push(out, id);
    start = end;
  }
}

void zt_wordpiece_encode(const zt_wordpiece *w, zt_wordpiece_scratch *s, const char *text, size_t len, zt_ids *out) {
  basic_tokenize(w, w->lower, s, text, len, wordpiece_word, out);
}

static void out_put(zt_wordpiece_scratch *s, const char *b, size_t n) {
  if (s->out_n + n + 1 > s->out_cap) {
    s->out_cap = (s->out_n + n + 1) * 2;
    s->out = realloc(s->out, s->out_cap);
    zt_check(s->out, "WordPiece", "out of memory");
  }
  memcpy(s->out + s->out_n, b, n);
  s->out_n += n;
  s->out[s->out_n] = 0;
}

static void basic_word(const zt_wordpiece *w, zt_wordpiece_scratch *s, const uint32_t *cps, size_t n, zt_ids *out) {
  if (s->out_n) out_put(s, " ", 1);
  for (size_t i = 0; i < n; i++) {
    uint8_t b[4];
    out_put(s, (const char *)b, (size_t)zt_utf8_encode(cps[i], b));
  }
}

char *zt_wordpiece_basic_tokenize(int lower_case, zt_wordpiece_scratch *s, const char *text, size_t len,
                                  size_t *len_out) {
  s->out_n = 0;
  out_put(s, "", 0);
  basic_tokenize(NULL, lower_case, s, text, len, basic_word, NULL);
  char *r = zt_malloc(s->out_n + 1, "BasicTokenizer output");
  memcpy(r, s->out, s->out_n + 1);
  if (len_out) *len_out = s->out_n;
  return r;
}

/* ---- decode (convert_tokens_to_string) ---------------------------------------------------------- */

/* Python's s.replace(from, to) in place (to is never longer than from). */
static size_t replace_all(char *s, size_t n, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to), o = 0;
  for (size_t i = 0; i < n;) {
    if (i + fl <= n && memcmp(s + i, from, fl) == 0) {
      memmove(s + o, to, tl);
      o += tl;
      i += fl;
    } else {
      s[o++] = s[i++];
    }
  }
  s[o] = 0;
  return o;
}

char *zt_wordpiece_decode(const zt_wordpiece *w, const int32_t *ids, size_t n, size_t *len_out) {
  size_t total = 1;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= w->n_inv || !w->inv[ids[i]])
      zt_fatal("BertWordPiece", "id %d (position %zu) has no token in %s (vocab_size %zu)", ids[i], i, w->path,
               w->count);
    total += strlen(w->inv[ids[i]]) + 1;
  }
  char *s = zt_malloc(total, "BERT decode");
  size_t o = 0;
  for (size_t i = 0; i < n; i++) { /* ' '.join(tokens) */
    if (i) s[o++] = ' ';
    size_t l = strlen(w->inv[ids[i]]);
    memcpy(s + o, w->inv[ids[i]], l);
    o += l;
  }
  s[o] = 0;
  o = replace_all(s, o, " ##", "");
  size_t b = 0, e = o, used; /* .strip() */
  while (b < e) {
    uint32_t cp = zt_utf8_decode((const uint8_t *)s + b, e - b, &used);
    if (!py_isspace(cp)) break;
    b += used;
  }
  while (e > b) {
    size_t st = e - 1;
    while (st > b && ((uint8_t)s[st] & 0xC0) == 0x80) st--;
    if (!py_isspace(zt_utf8_decode((const uint8_t *)s + st, e - st, &used))) break;
    e = st;
  }
  memmove(s, s + b, e - b);
  o = e - b;
  s[o] = 0;
  /* clean_up_tokenization, in Megatron's order */
  static const char *const rep[][2] = {{" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
                                       {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" 's", "'s"},
                                       {" 've", "'ve"}, {" 're", "'re"}};
  for (size_t k = 0; k < sizeof rep / sizeof rep[0]; k++) o = replace_all(s, o, rep[k][0], rep[k][1]);
  if (len_out) *len_out = o;
  return s;
}
