/* Rule-based English sentence splitting (see data/sentence_split.h for the rules and how the output
 * is shaped like NLTK punkt's). Works on UTF-8 bytes; letters and case come from the Unicode tables. */
#define _POSIX_C_SOURCE 200809L
#include "data/sentence_split.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"

/* Never end a sentence (lowercase, without the final period). */
static const char *const k_abbrev[] = {
  "mr", "mrs", "ms", "messrs", "mme", "mlle", "dr", "drs", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col",
  "lt", "maj", "sgt", "capt", "cmdr", "adm", "gov", "sen", "rep", "rev", "hon", "pres", "supt", "insp", "vs",
  "e.g", "i.e", "cf", "al", "approx", "dept", "univ", "assn", "inc", "ltd", "co", "corp", "bros", "jan", "feb",
  "apr", "jun", "jul", "aug", "sept", "oct", "nov", "dec", "ca", "viz", NULL,
};
/* Do not end a sentence when a number follows ("No. 5", "Fig. 3", "pp. 12"). */
static const char *const k_numeric_abbrev[] = {
  "no", "nos", "vol", "vols", "fig", "figs", "p", "pp", "ch", "chap", "sec", "art", "eq", "ed", "op", "par",
  "mar", "sep", NULL,
};

static int in_list(const char *const *list, const char *w) {
  for (int i = 0; list[i]; i++)
    if (strcmp(list[i], w) == 0) return 1;
  return 0;
}

static uint32_t decode_at(const char *t, size_t len, size_t i, size_t *n) {
  return zt_utf8_decode((const uint8_t *)t + i, len - i, n);
}

static int is_space_at(const char *t, size_t len, size_t i, size_t *n) {
  unsigned char c = (unsigned char)t[i];
  if (c < 0x80) {
    *n = 1;
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  }
  uint32_t cp = decode_at(t, len, i, n);
  return zt_unicode_is_white_space(cp);
}

/* Length of a closing quote or bracket at t[i] (0 if none). */
static size_t closer_at(const char *t, size_t len, size_t i) {
  unsigned char c = (unsigned char)t[i];
  if (c == '"' || c == '\'' || c == ')' || c == ']' || c == '}') return 1;
  if (i + 2 < len + 0 && c == 0xE2 && (unsigned char)t[i + 1] == 0x80 &&
      ((unsigned char)t[i + 2] == 0x9D || (unsigned char)t[i + 2] == 0x99))
    return 3; /* ” ’ */
  if (i + 1 < len && c == 0xC2 && (unsigned char)t[i + 1] == 0xBB) return 2; /* » */
  return 0;
}

/* Length of a terminal mark at t[i]: . ? ! or … (U+2026). *period says it was a '.'. */
static size_t terminal_at(const char *t, size_t len, size_t i, int *period) {
  unsigned char c = (unsigned char)t[i];
  *period = c == '.';
  if (c == '.' || c == '?' || c == '!') return 1;
  if (i + 2 < len && c == 0xE2 && (unsigned char)t[i + 1] == 0x80 && (unsigned char)t[i + 2] == 0xA6) return 3;
  return 0;
}

/* The first letter or digit of the word at t[i] (opening quotes and brackets skipped): its category. */
static int next_word_is_lowercase(const char *t, size_t len, size_t i, int *is_digit) {
  *is_digit = 0;
  while (i < len) {
    size_t n;
    uint32_t cp = decode_at(t, len, i, &n);
    zt_ucat cat = zt_unicode_category(cp);
    if (cat == ZT_UC_Ps || cat == ZT_UC_Pi || cat == ZT_UC_Po || cat == ZT_UC_Pf || cat == ZT_UC_Pd) {
      i += n;
      continue;
    }
    if (cat == ZT_UC_Nd) *is_digit = 1;
    return cat == ZT_UC_Ll;
  }
  return 0;
}

/* Whether the single period at t[dot] closes an abbreviation, an initial or a dotted acronym. */
static int period_is_abbreviation(const char *t, size_t dot, int next_is_digit) {
  size_t b = dot;
  while (b > 0) {
    unsigned char c = (unsigned char)t[b - 1];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '(' || c == '[' ||
        c == '"' || c == '\'' || c == '{')
      break;
    b--;
  }
  size_t n = dot - b;
  if (n == 0 || n > 15) return 0;
  char w[16];
  for (size_t k = 0; k < n; k++) w[k] = (char)tolower((unsigned char)t[b + k]);
  w[n] = 0;
  if (in_list(k_abbrev, w)) return 1;
  if (next_is_digit && in_list(k_numeric_abbrev, w)) return 1;
  if (n == 1 && isalpha((unsigned char)w[0])) return 1; /* an initial: "J. R. R. Tolkien" */
  /* dotted acronyms: letters separated by single periods (u.s, a.m, ph.d) */
  int letters = 0, dots = 0, ok = 1;
  for (size_t k = 0; k < n && ok; k++) {
    if (isalpha((unsigned char)w[k])) letters++;
    else if (w[k] == '.' && k > 0 && w[k - 1] != '.') dots++;
    else ok = 0;
  }
  return ok && dots > 0 && letters <= 2 * (dots + 1);
}

static void push(zt_sentences *s, size_t start, size_t len) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->start = realloc(s->start, s->cap * sizeof(size_t));
    s->len = realloc(s->len, s->cap * sizeof(size_t));
    zt_check(s->start && s->len, "out of memory", "sentence list (%zu)", s->cap);
  }
  s->start[s->n] = start;
  s->len[s->n] = len;
  s->n++;
}

void zt_sentence_split(const char *t, size_t len, int keep_newlines, zt_sentences *out) {
  out->n = 0;
  size_t start = 0, i = 0;
  while (i < len) {
    int period;
    size_t tl = terminal_at(t, len, i, &period);
    if (tl == 0) {
      i++;
      continue;
    }
    /* the run of terminal marks, then closers */
    size_t run_start = i, e = i, marks = 0;
    int only_single_period = 1;
    while (e < len) {
      int p;
      size_t k = terminal_at(t, len, e, &p);
      if (k == 0) break;
      if (!p || marks > 0) only_single_period = 0;
      marks++;
      e += k;
    }
    while (e < len) {
      size_t k = closer_at(t, len, e);
      if (k == 0) break;
      e += k;
    }
    size_t ws_end = e, n;
    while (ws_end < len && is_space_at(t, len, ws_end, &n)) ws_end += n;
    if (ws_end == e || ws_end >= len) { /* no whitespace after, or the end of the text */
      i = e > i ? e : i + 1;
      continue;
    }
    int next_digit;
    int boundary = !next_word_is_lowercase(t, len, ws_end, &next_digit);
    if (boundary && only_single_period && period_is_abbreviation(t, run_start, next_digit)) boundary = 0;
    if (boundary) {
      size_t end = keep_newlines ? ws_end : e;
      push(out, start, end - start);
      start = ws_end;
    }
    i = ws_end;
  }
  /* the last sentence, without trailing whitespace (punkt: text.rstrip()) */
  size_t end = len;
  while (end > start) {
    size_t b = end - 1;
    while (b > start && ((unsigned char)t[b] & 0xC0) == 0x80) b--;
    size_t n;
    if (!is_space_at(t, len, b, &n)) break;
    end = b;
  }
  if (end > start) push(out, start, end - start);
}

void zt_sentences_free(zt_sentences *s) {
  free(s->start);
  free(s->len);
  memset(s, 0, sizeof *s);
}
