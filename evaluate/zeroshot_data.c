/* Zero-shot evaluation data, transcribed from Megatron-DeepSpeed's tasks/zeroshot_gpt/{datasets,detokenizer}.py:
 * the detokenizers (Python's str.replace and the regular expressions of detokenizer.py, with Python's Unicode
 * whitespace for \s and strip()), the original-token count, the language-model windows and the LAMBADA examples. */
#include "evaluate/zeroshot_data.h"
#include "evaluate/strbuf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/file.h"

/* ---- a growable string ------------------------------------------------------------------------------------------ */
static char *dup_n(const char *s, size_t n, size_t *out_len) {
  zt_strbuf b = {0};
  zt_strbuf_put(&b, s, n);
  return zt_strbuf_take(&b, out_len);
}

/* Python's str.replace(old, new): every non-overlapping occurrence, left to right. Frees s. */
static char *replace_all(char *s, size_t *n, const char *old, const char *new_) {
  const size_t lo = strlen(old), ln = strlen(new_);
  zt_strbuf b = {0};
  size_t i = 0;
  while (i < *n) {
    if (i + lo <= *n && memcmp(s + i, old, lo) == 0) {
      zt_strbuf_put(&b, new_, ln);
      i += lo;
    } else {
      zt_strbuf_put(&b, s + i, 1);
      i++;
    }
  }
  free(s);
  return zt_strbuf_take(&b, n);
}

int zt_utf8_space(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  if (n == 0) return 0;
  if (u[0] < 0x80) return (u[0] >= 9 && u[0] <= 13) || (u[0] >= 0x1c && u[0] <= 0x20) ? 1 : 0;
  unsigned cp;
  int len;
  if ((u[0] & 0xe0) == 0xc0 && n >= 2) {
    cp = ((u[0] & 0x1fu) << 6) | (u[1] & 0x3fu);
    len = 2;
  } else if ((u[0] & 0xf0) == 0xe0 && n >= 3) {
    cp = ((u[0] & 0x0fu) << 12) | ((u[1] & 0x3fu) << 6) | (u[2] & 0x3fu);
    len = 3;
  } else {
    return 0;
  }
  const int space = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
                    cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
  return space ? len : 0;
}

/* Python's strip(): [*lo, *hi) without leading and trailing Unicode whitespace. */
static void strip_range(const char *s, size_t *lo, size_t *hi) {
  int k;
  while (*lo < *hi && (k = zt_utf8_space(s + *lo, *hi - *lo)) > 0) *lo += (size_t)k;
  for (;;) { /* the last character: step back over UTF-8 continuation bytes */
    if (*hi <= *lo) break;
    size_t c = *hi - 1;
    while (c > *lo && ((unsigned char)s[c] & 0xc0) == 0x80) c--;
    if (zt_utf8_space(s + c, *hi - c) != (int)(*hi - c)) break;
    *hi = c;
  }
}

/* re.sub(r"O\s*([^C]*?)\s*C", r"O\1C", s) for the pair (O, C): from each O to the next C, whitespace stripped inside.
 * Frees s. */
static char *strip_pairs(char *s, size_t *n, char open, char close) {
  zt_strbuf b = {0};
  size_t i = 0;
  while (i < *n) {
    if (s[i] == open) {
      const char *c = memchr(s + i + 1, close, *n - i - 1);
      if (c) {
        size_t lo = i + 1, hi = (size_t)(c - s);
        strip_range(s, &lo, &hi);
        zt_strbuf_put(&b, &open, 1);
        zt_strbuf_put(&b, s + lo, hi - lo);
        zt_strbuf_put(&b, &close, 1);
        i = (size_t)(c - s) + 1;
        continue;
      }
    }
    zt_strbuf_put(&b, s + i, 1);
    i++;
  }
  free(s);
  return zt_strbuf_take(&b, n);
}

char *zt_ptb_detokenize(const char *s, size_t n, size_t *out_len) {
  char *t = dup_n(s, n, &n);
  static const char *const rules[][2] = {{" '", "'"}, {" \n", "\n"}, {"\n ", "\n"}, {" n't", "n't"},
                                         {" N ", "1 "}, {"$ 1", "$1"}, {"# 1", "#1"}};
  for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) t = replace_all(t, &n, rules[r][0], rules[r][1]);
  *out_len = n;
  return t;
}

char *zt_wikitext_detokenize(const char *s, size_t n, size_t *out_len) {
  char *t = dup_n(s, n, &n);
  t = replace_all(t, &n, "s '", "s'");
  { /* re.sub(r"/' [0-9]/", r"/'[0-9]/", string): the replacement is the literal text "/'[0-9]/" */
    zt_strbuf b = {0};
    size_t i = 0;
    while (i < n) {
      if (i + 5 <= n && t[i] == '/' && t[i + 1] == '\'' && t[i + 2] == ' ' && t[i + 3] >= '0' && t[i + 3] <= '9' &&
          t[i + 4] == '/') {
        zt_strbuf_put(&b, "/'[0-9]/", 8);
        i += 5;
      } else {
        zt_strbuf_put(&b, t + i, 1);
        i++;
      }
    }
    free(t);
    t = zt_strbuf_take(&b, &n);
  }
  static const char *const numbers[][2] = {{" @-@ ", "-"}, {" @,@ ", ","}, {" @.@ ", "."}, {" : ", ": "},
                                           {" ; ", "; "},  {" . ", ". "},  {" ! ", "! "},  {" ? ", "? "},
                                           {" , ", ", "}};
  for (size_t r = 0; r < sizeof numbers / sizeof numbers[0]; r++) t = replace_all(t, &n, numbers[r][0], numbers[r][1]);
  t = strip_pairs(t, &n, '(', ')');
  t = strip_pairs(t, &n, '[', ']');
  t = strip_pairs(t, &n, '{', '}');
  t = strip_pairs(t, &n, '"', '"');
  t = strip_pairs(t, &n, '\'', '\'');
  static const char *const misc[][2] = {{"= = = =", "===="}, {"= = =", "==="}, {"= =", "=="},
                                        {" \xc2\xb0 ", "\xc2\xb0"}, {" \n", "\n"}, {"\n ", "\n"},
                                        {" N ", " 1 "}, {" 's", "'s"}};
  for (size_t r = 0; r < sizeof misc / sizeof misc[0]; r++) t = replace_all(t, &n, misc[r][0], misc[r][1]);
  *out_len = n;
  return t;
}

const char *zt_detokenizer_for_path(const char *path) {
  static const char *const keys[] = {"ptb", "wiki", "lambada"};
  for (int k = 0; k < 3; k++)
    if (strstr(path, keys[k])) return keys[k];
  return NULL;
}

char *zt_detokenize(const char *name, const char *s, size_t n, size_t *out_len) {
  if (name && !strcmp(name, "ptb")) return zt_ptb_detokenize(s, n, out_len);
  if (name && !strcmp(name, "wiki")) return zt_wikitext_detokenize(s, n, out_len);
  return dup_n(s, n, out_len);
}

int64_t zt_count_original_tokens(const char *s, size_t n) {
  size_t lo = 0, hi = n;
  strip_range(s, &lo, &hi);
  int64_t count = 1;
  for (size_t i = lo; i < hi; i++) count += s[i] == ' ';
  return count;
}

/* ---- language-model windows ----------------------------------------------------------------------------------- */
void zt_lm_windows_init(zt_lm_windows *w, const int32_t *tokens, int64_t n_tokens, int seq_len, int overlap) {
  w->tokens = tokens;
  w->n_tokens = n_tokens;
  w->seq_len = seq_len;
  w->overlap = overlap < 1 ? 1 : overlap;
  const int64_t targets = n_tokens - 1 - w->overlap > 0 ? n_tokens - 1 - w->overlap : 0;
  const int64_t c = (targets + w->overlap - 1) / w->overlap + 1;
  w->count = c > 1 ? c : 1;
}

void zt_lm_window(const zt_lm_windows *w, int64_t idx, int32_t pad, int32_t *text, float *mask) {
  const int64_t start = idx * w->overlap;
  int64_t have = w->n_tokens - start;
  if (have < 0) have = 0;
  if (have > w->seq_len + 1) have = w->seq_len + 1;
  for (int64_t i = 0; i <= w->seq_len; i++) text[i] = i < have ? w->tokens[start + i] : pad;
  for (int64_t i = 0; i < w->seq_len; i++) mask[i] = i + 1 < have ? 1.0f : 0.0f;
  /* pad_mask[:-overlap] *= 0 after the first window (an empty slice when overlap >= seq_len) */
  if (w->overlap != w->seq_len && idx != 0)
    for (int64_t i = 0; i < w->seq_len - w->overlap; i++) mask[i] = 0.0f;
}

/* ---- LAMBADA ---------------------------------------------------------------------------------------------------- */
static void push_example(zt_lambada *set, const zt_ids *ctx, const zt_ids *label, size_t *cap) {
  if ((size_t)set->n == *cap) {
    *cap = *cap ? 2 * *cap : 256;
    set->tokens = realloc(set->tokens, *cap * sizeof *set->tokens);
    set->n_ctx = realloc(set->n_ctx, *cap * sizeof *set->n_ctx);
    set->n_label = realloc(set->n_label, *cap * sizeof *set->n_label);
    zt_check(set->tokens && set->n_ctx && set->n_label, "out of memory", "LAMBADA examples: %zu", *cap);
  }
  int32_t *t = zt_malloc((ctx->n + label->n) * sizeof(int32_t) + 1, "LAMBADA example");
  if (ctx->n) memcpy(t, ctx->ids, ctx->n * sizeof(int32_t));
  memcpy(t + ctx->n, label->ids, label->n * sizeof(int32_t));
  set->tokens[set->n] = t;
  set->n_ctx[set->n] = (int)ctx->n;
  set->n_label[set->n] = (int)label->n;
  set->n++;
}

/* The example of one line's text: non-strict, the last token is the label; strict, the last whitespace word. */
static void lambada_text(zt_lambada *set, const zt_tokenizer *tok, zt_tok_state *st, const char *text, int strict,
                         const char *path, long line, size_t *cap) {
  zt_ids ctx = {0}, label = {0}, all = {0};
  const size_t n = strlen(text);
  if (!strict) {
    zt_tokenizer_encode(tok, st, text, n, &all);
    zt_check(all.n > 0, "bad task file", "%s:%ld: \"text\" tokenizes to nothing: no last token to predict", path,
             line);
    for (size_t i = 0; i + 1 < all.n; i++) zt_ids_push(&ctx, all.ids[i]);
    zt_ids_push(&label, all.ids[all.n - 1]);
  } else {
    /* text.split()[-1]: the last run of non-whitespace */
    size_t lo = 0, hi = n;
    strip_range(text, &lo, &hi);
    zt_check(hi > lo, "bad task file", "%s:%ld: \"text\" has no words (--strict-lambada predicts the last word)",
             path, line);
    size_t w = hi;
    for (;;) { /* step back to the previous character while it is not whitespace */
      if (w == 0) break;
      size_t c = w - 1;
      while (c > 0 && ((unsigned char)text[c] & 0xc0) == 0x80) c--;
      if (zt_utf8_space(text + c, w - c) == (int)(w - c)) break;
      w = c;
    }
    const size_t wlen = hi - w;
    /* text.rfind(word): the last occurrence of the word's text */
    size_t start = 0;
    for (size_t i = n - wlen + 1; i-- > 0;)
      if (memcmp(text + i, text + w, wlen) == 0) {
        start = i;
        break;
      }
    size_t clo = 0, chi = start;
    strip_range(text, &clo, &chi);
    zt_tokenizer_encode(tok, st, text + clo, chi - clo, &ctx);
    char *word = zt_malloc(wlen + 2, "LAMBADA word");
    word[0] = ' ';
    memcpy(word + 1, text + w, wlen);
    word[wlen + 1] = 0;
    zt_tokenizer_encode(tok, st, word, wlen + 1, &label);
    free(word);
    zt_check(label.n > 0, "bad task file", "%s:%ld: the last word tokenizes to nothing", path, line);
  }
  push_example(set, &ctx, &label, cap);
  zt_ids_free(&ctx);
  zt_ids_free(&label);
  zt_ids_free(&all);
}

/* Python's text.split() finds no word: the text is all whitespace. */
static int no_words(const char *t) {
  size_t lo = 0, hi = strlen(t);
  strip_range(t, &lo, &hi);
  return hi == lo;
}

void zt_lambada_load(zt_lambada *set, const char *path, const zt_tokenizer *tok, int strict) {
  memset(set, 0, sizeof *set);
  /* 1. the whole file read and every line checked before any tokenizer state exists */
  size_t n;
  char *buf = zt_read_file(path, &n);
  zt_check(buf != NULL, "bad task file", "--valid-data %s: cannot open: %s", path, strerror(errno));
  char **texts = NULL;
  size_t ntext = 0, tcap = 0;
  long no = 0;
  for (size_t pos = 0; pos < n;) {
    const char *line = buf + pos, *nl = memchr(line, '\n', n - pos);
    const size_t len = nl ? (size_t)(nl - line) + 1 : n - pos;
    pos += len;
    no++;
    zt_check(memchr(line, 0, len) == NULL, "bad task file", "%s:%ld: a NUL byte in the line", path, no);
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!j) {
      size_t k = 0;
      while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r' || line[k] == '\n')) k++;
      zt_check(k < len, "bad task file", "%s:%ld: empty line (each line must be a JSON object with a \"text\" "
               "string)", path, no);
      const char *at = cJSON_GetErrorPtr();
      const long col = at && at >= line && at <= line + len ? (long)(at - line) + 1 : 0;
      zt_fatal("bad task file", "%s:%ld: not valid JSON (near column %ld); each line must be a JSON object with a "
               "\"text\" string", path, no, col);
    }
    zt_check(cJSON_IsObject(j), "bad task file", "%s:%ld: not a JSON object (each line must be {\"text\": ...})",
             path, no);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "text");
    zt_check(t != NULL, "bad task file", "%s:%ld: no \"text\" key", path, no);
    zt_check(cJSON_IsString(t) && t->valuestring, "bad task file", "%s:%ld: \"text\" is not a string", path, no);
    zt_check(strict || t->valuestring[0], "bad task file", "%s:%ld: \"text\" is empty: no last token to predict",
             path, no);
    zt_check(!strict || !no_words(t->valuestring), "bad task file", "%s:%ld: \"text\" has no words "
             "(--strict-lambada predicts the last word)", path, no);
    if (ntext == tcap) {
      tcap = tcap ? 2 * tcap : 256;
      char **nt = realloc(texts, tcap * sizeof *texts);
      zt_check(nt != NULL, "out of memory", "LAMBADA examples: %zu", tcap);
      texts = nt;
    }
    const size_t tl = strlen(t->valuestring);
    texts[ntext] = zt_malloc(tl + 1, "LAMBADA text");
    memcpy(texts[ntext++], t->valuestring, tl + 1);
    cJSON_Delete(j);
  }
  free(buf);
  zt_check(ntext > 0, "bad task file", "--valid-data %s: no examples (an empty file)", path);
  /* 2. the examples */
  zt_tok_state *st = zt_tok_state_new(tok);
  size_t scap = 0;
  for (size_t i = 0; i < ntext; i++) {
    lambada_text(set, tok, st, texts[i], strict, path, (long)i + 1, &scap);
    free(texts[i]);
  }
  free(texts);
  zt_tok_state_free(st);
}

void zt_lambada_free(zt_lambada *set) {
  for (int64_t i = 0; i < set->n; i++) free(set->tokens[i]);
  free(set->tokens);
  free(set->n_ctx);
  free(set->n_label);
  memset(set, 0, sizeof *set);
}

int zt_lambada_item(const zt_lambada *set, int64_t i, int seq_len, int32_t pad, int32_t *text, float *mask) {
  const int total = set->n_ctx[i] + set->n_label[i];
  const int drop = total > seq_len + 1 ? total - (seq_len + 1) : 0;
  const int32_t *t = set->tokens[i] + drop;
  const int have = total - drop;
  for (int k = 0; k <= seq_len; k++) text[k] = k < have ? t[k] : pad;
  /* pad_mask = [0] * context + [1] * label + [0] * padding, then pad_mask[1:] (the targets) */
  const int label_from = set->n_ctx[i] - drop;
  for (int k = 0; k < seq_len; k++) mask[k] = (k + 1 >= label_from && k + 1 < have) ? 1.0f : 0.0f;
  return drop;
}
