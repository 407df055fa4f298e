/* Python's str semantics for Megatron's finetuning readers: strip, split, clean_text, int(), repr(), and files read
 * as UTF-8 with universal newlines (see finetune_text.h). */
#include "data/finetune_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"

#define WHAT "finetune data"

void zt_ftbuf_reserve(zt_ftbuf *b, size_t n) {
  if (n + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < n + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  zt_check(p != NULL, "out of memory", "finetune text of %zu bytes", cap);
  b->p = p;
  b->cap = cap;
}

void zt_ftbuf_put(zt_ftbuf *b, const char *s, size_t n) {
  zt_ftbuf_reserve(b, b->n + n);
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void zt_ftbuf_free(zt_ftbuf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* ---- characters ------------------------------------------------------------------------------------------------ */

int zt_py_isspace(uint32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

static uint32_t cp_at(zt_span s, size_t i, size_t *len) {
  return zt_utf8_decode((const uint8_t *)s.p + i, s.n - i, len);
}

/* The start of the code point that ends at byte end (> 0). */
static size_t cp_before(zt_span s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && ((unsigned char)s.p[i] & 0xC0) == 0x80) i--;
  return i;
}

zt_span zt_py_strip(zt_span s) {
  size_t a = 0, b = s.n, k;
  while (a < b && zt_py_isspace(cp_at(s, a, &k))) a += k;
  while (b > a) {
    size_t i = cp_before(s, b);
    if (!zt_py_isspace(cp_at(s, i, &k))) break;
    b = i;
  }
  return (zt_span){s.p + a, b - a};
}

zt_span zt_py_strip_chars(zt_span s, const char *chars) {
  size_t a = 0, b = s.n;
  while (a < b && s.p[a] && strchr(chars, s.p[a])) a++;
  while (b > a && s.p[b - 1] && strchr(chars, s.p[b - 1])) b--;
  return (zt_span){s.p + a, b - a};
}

void zt_ft_split_tab(zt_span s, zt_ftrow *row) {
  row->n = 0;
  size_t start = 0;
  for (size_t i = 0;; i++) {
    if (i < s.n && s.p[i] != '\t') continue;
    if (row->n == row->cap) {
      row->cap = row->cap ? 2 * row->cap : 16;
      row->f = realloc(row->f, row->cap * sizeof *row->f);
      zt_check(row->f != NULL, "out of memory", "finetune row of %zu columns", row->cap);
    }
    row->f[row->n++] = (zt_span){s.p + start, i - start};
    if (i >= s.n) break;
    start = i + 1;
  }
}

void zt_ftrow_free(zt_ftrow *row) {
  free(row->f);
  memset(row, 0, sizeof *row);
}

/* ---- clean_text ------------------------------------------------------------------------------------------------ */

/* str.replace(' . ', '. '): left to right, non-overlapping, in place (the text only shrinks). */
static void replace_spaced_dot(zt_ftbuf *o) {
  size_t r = 0, w = 0;
  while (r < o->n) {
    if (r + 3 <= o->n && o->p[r] == ' ' && o->p[r + 1] == '.' && o->p[r + 2] == ' ') {
      o->p[w++] = '.';
      o->p[w++] = ' ';
      r += 3;
    } else {
      o->p[w++] = o->p[r++];
    }
  }
  o->n = w;
}

void zt_ft_clean_text(zt_span in, zt_ftbuf *out) {
  out->n = 0;
  zt_ftbuf_reserve(out, in.n);
  /* "\n" is whitespace itself, so replace("\n", " ") then re.sub(r'\s+', ' ') is one pass over the runs */
  for (size_t i = 0, k; i < in.n;) {
    uint32_t c = cp_at(in, i, &k);
    if (!zt_py_isspace(c)) {
      memcpy(out->p + out->n, in.p + i, k);
      out->n += k;
      i += k;
      continue;
    }
    for (i += k; i < in.n && zt_py_isspace(cp_at(in, i, &k));) i += k;
    out->p[out->n++] = ' ';
  }
  for (int t = 0; t < 3; t++) replace_spaced_dot(out);
  out->p[out->n] = 0;
}

/* ---- int() ----------------------------------------------------------------------------------------------------- */

/* The value of a decimal digit (general category Nd), or -1. Unicode lays every Nd character out in runs of ten,
 * zero to nine, so the value is the offset from the run's start modulo ten. */
static int decimal_value(uint32_t c) {
  if (c >= '0' && c <= '9') return (int)(c - '0');
  if (c < 0x80 || zt_unicode_category(c) != ZT_UC_Nd) return -1;
  uint32_t k = 0;
  while (c - k > 0 && zt_unicode_category(c - k - 1) == ZT_UC_Nd) k++;
  return (int)(k % 10);
}

zt_pyint zt_py_int(zt_span s) {
  zt_pyint r = {0, 0, 0};
  s = zt_py_strip(s);
  size_t i = 0;
  int neg = 0;
  if (i < s.n && (s.p[i] == '+' || s.p[i] == '-')) neg = s.p[i++] == '-';
  const uint64_t limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
  uint64_t mag = 0;
  int digits = 0, underscore = 0;
  while (i < s.n) {
    size_t k;
    uint32_t c = cp_at(s, i, &k);
    i += k;
    if (c == '_') {
      if (!digits || underscore) return r;
      underscore = 1;
      continue;
    }
    int d = decimal_value(c);
    if (d < 0) return r;
    digits++;
    underscore = 0;
    if (mag > (limit - (uint64_t)d) / 10) r.overflow = 1;
    else mag = mag * 10 + (uint64_t)d;
  }
  if (!digits || underscore) return r;
  r.ok = 1;
  if (!r.overflow) r.v = neg ? (mag == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
  return r;
}

/* ---- repr() ---------------------------------------------------------------------------------------------------- */

/* Py_UNICODE_ISPRINTABLE: everything but Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than the space. */
static int py_isprintable(uint32_t c) {
  if (c == ' ') return 1;
  switch (zt_unicode_category(c)) {
  case ZT_UC_Cc: case ZT_UC_Cf: case ZT_UC_Cs: case ZT_UC_Co: case ZT_UC_Cn: case ZT_UC_Zl: case ZT_UC_Zp:
  case ZT_UC_Zs: return 0;
  default: return 1;
  }
}

void zt_py_repr_str(zt_span s, zt_ftbuf *out) {
  const int has_single = memchr(s.p, '\'', s.n) != NULL, has_double = memchr(s.p, '"', s.n) != NULL;
  const char q = has_single && !has_double ? '"' : '\'';
  char tmp[16];
  zt_ftbuf_put(out, &q, 1);
  for (size_t i = 0, k; i < s.n; i += k) {
    uint32_t c = cp_at(s, i, &k);
    if (c == (uint32_t)q || c == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)c;
      zt_ftbuf_put(out, tmp, 2);
    } else if (c == '\t' || c == '\n' || c == '\r') {
      zt_ftbuf_put(out, c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r", 2);
    } else if (c < 0x20 || c == 0x7F) {
      snprintf(tmp, sizeof tmp, "\\x%02x", (unsigned)c);
      zt_ftbuf_put(out, tmp, 4);
    } else if (c < 0x80 || py_isprintable(c)) {
      zt_ftbuf_put(out, s.p + i, k);
    } else {
      int w = c <= 0xFF ? snprintf(tmp, sizeof tmp, "\\x%02x", (unsigned)c)
                        : c <= 0xFFFF ? snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)c)
                                      : snprintf(tmp, sizeof tmp, "\\U%08x", (unsigned)c);
      zt_ftbuf_put(out, tmp, (size_t)w);
    }
  }
  zt_ftbuf_put(out, &q, 1);
}

void zt_py_repr_row(const zt_ftrow *row, zt_ftbuf *out) {
  zt_ftbuf_put(out, "[", 1);
  for (size_t i = 0; i < row->n; i++) {
    if (i) zt_ftbuf_put(out, ", ", 2);
    zt_py_repr_str(row->f[i], out);
  }
  zt_ftbuf_put(out, "]", 1);
}

/* ---- files ----------------------------------------------------------------------------------------------------- */

void zt_ftlines_open(zt_ftlines *l, const char *path) {
  memset(l, 0, sizeof *l);
  l->path = path;
  struct stat st;
  zt_check(stat(path, &st) == 0, WHAT, "%s: cannot open: %s", path, strerror(errno));
  zt_check(!S_ISDIR(st.st_mode), WHAT, "%s: is a directory, expected a file", path);
  FILE *f = fopen(path, "rb");
  zt_check(f != NULL, WHAT, "%s: cannot open: %s", path, strerror(errno));
  zt_ftbuf b = {0};
  char chunk[1 << 16];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) zt_ftbuf_put(&b, chunk, got);
  const int err = ferror(f);
  fclose(f);
  if (err) {
    zt_ftbuf_free(&b);
    zt_fatal(WHAT, "%s: read error", path);
  }
  l->buf = b.p;
  l->n = b.n;
}

int zt_ftlines_next(zt_ftlines *l, zt_span *line) {
  if (l->pos >= l->n) return 0;
  size_t i = l->pos;
  while (i < l->n && l->buf[i] != '\n' && l->buf[i] != '\r') i++;
  *line = (zt_span){l->buf + l->pos, i - l->pos};
  if (i < l->n) i += l->buf[i] == '\r' && i + 1 < l->n && l->buf[i + 1] == '\n' ? 2 : 1;
  l->pos = i;
  l->no++;
  size_t bad;
  if (!zt_utf8_valid((const uint8_t *)line->p, line->n, &bad))
    zt_fatal(WHAT, "%s:%ld: invalid UTF-8 at byte %zu of the line (0x%02x); Megatron reads the file as UTF-8 text and "
             "fails with UnicodeDecodeError", l->path, l->no, bad, (unsigned)(unsigned char)line->p[bad]);
  return 1;
}

void zt_ftlines_close(zt_ftlines *l) {
  free(l->buf);
  memset(l, 0, sizeof *l);
}
