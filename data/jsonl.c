/* Loose JSON lines: chunked line reader over zlib (plain or gzip input) with a line-length bound, and
 * per-line extraction of key texts by a length-counted JSON reader (Python's json.loads grammar: a
 * "\u0000" escape is a character of the text, not its end). See data/jsonl.h for the line rules. */
#define _POSIX_C_SOURCE 200809L
#include "data/jsonl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"

#define WHAT "jsonl"

struct zt_jsonl_reader {
  char *path;
  gzFile gz;
  int gzip;
  int eof;
  int64_t next_line;  /* number of the next line to hand out */
  char *carry;        /* a partial line read past the end of the previous chunk */
  size_t max_line;    /* the longest line accepted (bytes) */
  size_t carry_len, carry_cap;
};

zt_jsonl_reader *zt_jsonl_open(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) zt_fatal(WHAT, "cannot open input %s: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) zt_fatal(WHAT, "input %s is a directory, expected a .jsonl or .jsonl.gz file", path);
  zt_jsonl_reader *r = zt_calloc(1, sizeof *r, "jsonl reader");
  r->gzip = -1; /* known after the first read (a probe read would eat the start of a pipe) */
  r->gz = gzopen(path, "rb");
  if (!r->gz) zt_fatal(WHAT, "cannot open input %s: %s", path, errno ? strerror(errno) : "zlib could not open it");
  gzbuffer(r->gz, 1 << 20);
  r->path = strdup(path);
  r->next_line = 1;
  r->max_line = ZT_JSONL_DEFAULT_MAX_LINE;
  return r;
}

void zt_jsonl_set_max_line(zt_jsonl_reader *r, size_t max_bytes) { r->max_line = max_bytes; }

int zt_jsonl_is_gzip(const zt_jsonl_reader *r) { return r->gzip > 0; }

void zt_jsonl_close(zt_jsonl_reader *r) {
  if (!r) return;
  gzclose(r->gz);
  free(r->path);
  free(r->carry);
  free(r);
}

void zt_jsonl_chunk_free(zt_jsonl_chunk *c) {
  free(c->buf);
  free(c->start);
  free(c->len);
  memset(c, 0, sizeof *c);
}

static void reserve_buf(zt_jsonl_chunk *c, size_t need) {
  if (need <= c->buf_cap) return;
  size_t cap = c->buf_cap ? c->buf_cap : 1 << 16;
  while (cap < need) cap *= 2;
  c->buf = realloc(c->buf, cap);
  zt_check(c->buf, "out of memory", "jsonl chunk of %zu bytes", cap);
  c->buf_cap = cap;
}

static void push_line(zt_jsonl_chunk *c, size_t start, size_t len) {
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 256;
    c->start = realloc(c->start, c->cap * sizeof(size_t));
    c->len = realloc(c->len, c->cap * sizeof(size_t));
    zt_check(c->start && c->len, "out of memory", "jsonl chunk of %zu lines", c->cap);
  }
  c->start[c->n] = start;
  c->len[c->n] = len;
  c->n++;
}

/* Reads up to want bytes at c->buf + c->buf_len; returns the count (0 at the end). */
static size_t read_more(zt_jsonl_reader *r, zt_jsonl_chunk *c, size_t want) {
  if (r->eof) return 0;
  if (want > (1u << 30)) want = 1u << 30; /* gzread counts in unsigned int */
  reserve_buf(c, c->buf_len + want + 1);
  int got = gzread(r->gz, c->buf + c->buf_len, (unsigned)want);
  if (got < 0) {
    int code;
    const char *msg = gzerror(r->gz, &code);
    zt_fatal(WHAT, "reading input %s near line %lld: %s", r->path, (long long)r->next_line,
             code == Z_ERRNO ? strerror(errno) : msg);
  }
  if (got == 0) {
    /* gzread returns 0 both at a clean end and at a truncated gzip stream; tell them apart. */
    int code;
    const char *msg = gzerror(r->gz, &code);
    if (code != Z_OK && code != Z_STREAM_END)
      zt_fatal(WHAT, "reading input %s near line %lld: %s (truncated gzip file?)", r->path,
               (long long)r->next_line, msg);
    r->eof = 1;
  }
  if (r->gzip < 0) r->gzip = !gzdirect(r->gz);
  c->buf_len += (size_t)got;
  return (size_t)got;
}

size_t zt_jsonl_read_chunk(zt_jsonl_reader *r, zt_jsonl_chunk *c, size_t target_bytes) {
  if (target_bytes < 4096) target_bytes = 4096;
  c->n = 0;
  c->buf_len = 0;
  c->input_bytes = 0;
  c->first_line = r->next_line;
  reserve_buf(c, r->carry_len + target_bytes + 1);
  if (r->carry_len) memcpy(c->buf, r->carry, r->carry_len); /* no carry yet: r->carry is NULL */
  c->buf_len = r->carry_len;
  r->carry_len = 0;
  /* Read until the buffer holds target_bytes and at least one newline (or the input ends). */
  size_t scanned = 0;
  int have_newline = 0;
  while (!r->eof) {
    if (!have_newline && scanned < c->buf_len) {
      have_newline = memchr(c->buf + scanned, '\n', c->buf_len - scanned) != NULL;
      scanned = c->buf_len;
    }
    if (c->buf_len >= target_bytes && have_newline) break;
    /* no newline yet: the whole buffer is line next_line, still growing */
    if (!have_newline && c->buf_len > r->max_line)
      zt_fatal("--input", "%s:%lld: the line is longer than %zu bytes (read %zu bytes without a newline; "
               "--max-line-bytes raises the bound)", r->path, (long long)r->next_line, r->max_line, c->buf_len);
    size_t want = c->buf_len < target_bytes ? target_bytes - c->buf_len : target_bytes;
    if (!have_newline && c->buf_len + want > r->max_line + 1) want = r->max_line + 1 - c->buf_len;
    read_more(r, c, want);
  }
  size_t pos = 0;
  while (pos < c->buf_len) {
    char *nl = memchr(c->buf + pos, '\n', c->buf_len - pos);
    size_t end;
    if (nl) {
      end = (size_t)(nl - c->buf);
    } else if (r->eof) {
      end = c->buf_len;
      reserve_buf(c, c->buf_len + 1);
    } else {
      break;
    }
    size_t len = end - pos;
    if (len > r->max_line)
      zt_fatal("--input", "%s:%lld: the line is %zu bytes, longer than %zu bytes (--max-line-bytes raises the "
               "bound)", r->path, (long long)(r->next_line + (int64_t)c->n), len, r->max_line);
    c->input_bytes += len + (nl ? 1 : 0);
    if (len > 0 && c->buf[pos + len - 1] == '\r') len--;
    c->buf[pos + len] = '\0';
    push_line(c, pos, len);
    pos = end + 1;
  }
  if (pos < c->buf_len) { /* a partial last line: carry it to the next chunk */
    size_t rest = c->buf_len - pos;
    if (rest > r->carry_cap) {
      r->carry = realloc(r->carry, rest);
      zt_check(r->carry, "out of memory", "jsonl line of %zu bytes", rest);
      r->carry_cap = rest;
    }
    memcpy(r->carry, c->buf + pos, rest);
    r->carry_len = rest;
  }
  r->next_line += (int64_t)c->n;
  return c->n;
}

/* ---- extraction ---------------------------------------------------------------------------------- */

/* A JSON reader of one line with Python's json.loads rules (strict: no raw control characters in
 * strings; NaN, Infinity and -Infinity accepted; the last of duplicate keys wins), keeping only what
 * preprocess_data asks for: the top-level object's members, and the decoded bytes (length-counted) of
 * every top-level string value and of every string element of a top-level list. Decoded strings never
 * grow past their escaped form, so one arena of the line's length holds them all and never moves. */

enum { JV_STRING, JV_NUMBER, JV_BOOL, JV_NULL, JV_LIST, JV_OBJECT };

typedef struct {
  size_t key, key_len;   /* decoded key in the arena */
  int type;
  size_t first, n;       /* strings[first .. first+n): the string, or a list's string elements */
  int bad_elem;          /* a list: index of the first element that is not a string, or -1 */
  int bad_type;
  size_t first_elem, n_elem; /* a list: its elements' records elems[first_elem .. first_elem+n_elem) */
} jmember;

/* One element of a member's list: a string, or an inner list whose strings are kept (a list of lists). */
typedef struct {
  int type;
  size_t first, n;       /* strings[first .. first+n) */
  int bad_sub;           /* an inner list: index of its first element that is not a string, or -1 */
  int bad_sub_type;
} jelem;

struct zt_jsonl_doc {
  const char *s;
  size_t len, pos;
  char *arena;
  size_t arena_len, arena_cap;
  size_t *str_off, *str_len;
  size_t n_str, cap_str;
  jmember *m;
  size_t n_m, cap_m;
  jelem *e;
  size_t n_e, cap_e;
  int collect;           /* decode strings into the arena (top level and top-level lists) */
  char *err;
  size_t err_cap;
};

#define JSON_MAX_DEPTH 1000 /* Python's default recursion limit stops json.loads near the same depth */

zt_jsonl_doc *zt_jsonl_doc_new(void) { return zt_calloc(1, sizeof(zt_jsonl_doc), "jsonl doc"); }

void zt_jsonl_doc_free(zt_jsonl_doc *d) {
  if (!d) return;
  free(d->arena);
  free(d->str_off);
  free(d->str_len);
  free(d->m);
  free(d->e);
  free(d);
}

void zt_jsonl_texts_free(zt_jsonl_texts *t) {
  free(t->text);
  free(t->len);
  memset(t, 0, sizeof *t);
}

static void push_text(zt_jsonl_texts *t, const char *s, size_t len) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 16;
    t->text = realloc(t->text, t->cap * sizeof(char *));
    t->len = realloc(t->len, t->cap * sizeof(size_t));
    zt_check(t->text && t->len, "out of memory", "jsonl texts (%zu)", t->cap);
  }
  t->text[t->n] = s;
  t->len[t->n] = len;
  t->n++;
}

static const char *type_name(int type) {
  switch (type) {
  case JV_STRING: return "a string";
  case JV_NUMBER: return "a number";
  case JV_BOOL: return "a boolean";
  case JV_NULL: return "null";
  case JV_LIST: return "a list";
  default: return "an object";
  }
}

static int jfail(zt_jsonl_doc *d, const char *what) {
  if (d->pos >= d->len)
    snprintf(d->err, d->err_cap, "invalid JSON: the line ends at byte offset %zu inside a value (%s)", d->len, what);
  else
    snprintf(d->err, d->err_cap, "invalid JSON at byte offset %zu of the line: %s (near \"%.20s\")", d->pos, what,
             d->s + d->pos);
  return -1;
}

static void jws(zt_jsonl_doc *d) {
  while (d->pos < d->len && (d->s[d->pos] == ' ' || d->s[d->pos] == '\t' || d->s[d->pos] == '\r' ||
                             d->s[d->pos] == '\n'))
    d->pos++;
}

static int jhex4(zt_jsonl_doc *d, size_t at, uint32_t *v) {
  if (at + 4 > d->len) return -1;
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) {
    char c = d->s[at + i];
    int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (h < 0) return -1;
    x = x * 16 + (uint32_t)h;
  }
  *v = x;
  return 0;
}

/* A string at d->pos (on its opening quote). With keep, its decoded bytes are appended to the arena, and
 * off and n say where. */
static int jstring(zt_jsonl_doc *d, int keep, size_t *off, size_t *n) {
  d->pos++; /* the opening quote */
  size_t start = d->arena_len;
  for (;;) {
    if (d->pos >= d->len) return jfail(d, "unterminated string");
    unsigned char c = (unsigned char)d->s[d->pos];
    if (c == '"') {
      d->pos++;
      break;
    }
    if (c < 0x20) return jfail(d, "a control character inside a string (Python's json.loads refuses it too)");
    if (c != '\\') {
      if (keep) d->arena[d->arena_len++] = (char)c;
      d->pos++;
      continue;
    }
    if (d->pos + 1 >= d->len) {
      d->pos++;
      return jfail(d, "unterminated escape");
    }
    char e = d->s[d->pos + 1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      static const char map[] = "\"\\/\b\f\n\r\t";
      if (keep) d->arena[d->arena_len++] = map[simple - "\"\\/bfnrt"];
      d->pos += 2;
      continue;
    }
    if (e != 'u') {
      d->pos++;
      return jfail(d, "invalid escape");
    }
    uint32_t cp;
    if (jhex4(d, d->pos + 2, &cp) != 0) {
      d->pos += 2;
      return jfail(d, "invalid \\u escape (four hex digits expected)");
    }
    size_t used = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate: a low one must follow */
      uint32_t lo;
      if (d->pos + 12 <= d->len && d->s[d->pos + 6] == '\\' && d->s[d->pos + 7] == 'u' &&
          jhex4(d, d->pos + 8, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        used = 12;
      }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
      return jfail(d, "a lone UTF-16 surrogate escape (not a character; UTF-8 cannot encode it, and Megatron's "
                      "tokenizers fail on it)");
    if (keep) { /* UTF-8; U+0000 is one 0x00 byte of the text */
      char *o = d->arena + d->arena_len;
      if (cp < 0x80) {
        o[0] = (char)cp;
        d->arena_len += 1;
      } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        d->arena_len += 2;
      } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        d->arena_len += 3;
      } else {
        o[0] = (char)(0xF0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        d->arena_len += 4;
      }
    }
    d->pos += used;
  }
  if (keep) {
    *off = start;
    *n = d->arena_len - start;
    d->arena[d->arena_len++] = '\0'; /* takes the closing quote's place: the arena never outgrows the line */
  }
  return 0;
}

static void push_str(zt_jsonl_doc *d, size_t off, size_t n) {
  if (d->n_str == d->cap_str) {
    d->cap_str = d->cap_str ? 2 * d->cap_str : 64;
    d->str_off = realloc(d->str_off, d->cap_str * sizeof(size_t));
    d->str_len = realloc(d->str_len, d->cap_str * sizeof(size_t));
    zt_check(d->str_off && d->str_len, "out of memory", "jsonl strings (%zu)", d->cap_str);
  }
  d->str_off[d->n_str] = off;
  d->str_len[d->n_str] = n;
  d->n_str++;
}

static int jmatch(zt_jsonl_doc *d, const char *word) {
  size_t n = strlen(word);
  if (d->pos + n <= d->len && memcmp(d->s + d->pos, word, n) == 0) {
    d->pos += n;
    return 1;
  }
  return 0;
}

static int jnumber(zt_jsonl_doc *d) {
  size_t p = d->pos;
  if (p < d->len && d->s[p] == '-') p++;
  if (p >= d->len || d->s[p] < '0' || d->s[p] > '9') {
    d->pos = p;
    return jfail(d, "invalid value");
  }
  if (d->s[p] == '0') p++;
  else
    while (p < d->len && d->s[p] >= '0' && d->s[p] <= '9') p++;
  if (p < d->len && d->s[p] == '.' && p + 1 < d->len && d->s[p + 1] >= '0' && d->s[p + 1] <= '9') {
    p++;
    while (p < d->len && d->s[p] >= '0' && d->s[p] <= '9') p++;
  }
  if (p < d->len && (d->s[p] == 'e' || d->s[p] == 'E')) {
    size_t q = p + 1;
    if (q < d->len && (d->s[q] == '+' || d->s[q] == '-')) q++;
    if (q < d->len && d->s[q] >= '0' && d->s[q] <= '9') {
      while (q < d->len && d->s[q] >= '0' && d->s[q] <= '9') q++;
      p = q;
    }
  }
  d->pos = p;
  return 0;
}

/* What a value is to the extraction: the line itself (an object's members are recorded), a member of the
 * line's object (a string is kept; a list's elements are ELEM), an element of such a list (a string is
 * kept; an inner list's elements are SUB), an element of an inner list (a string is kept), or anything
 * deeper (only checked). */
enum { ROLE_LINE, ROLE_MEMBER, ROLE_ELEM, ROLE_SUB, ROLE_SKIP };

/* One value at d->pos; *type gets its kind. Kept strings go to the string table. */
static int jvalue(zt_jsonl_doc *d, int depth, int role, int *type) {
  if (depth > JSON_MAX_DEPTH) return jfail(d, "nested deeper than 1000 levels");
  jws(d);
  if (d->pos >= d->len) return jfail(d, "a value expected");
  char c = d->s[d->pos];
  if (c == '"') {
    *type = JV_STRING;
    size_t off = 0, n = 0;
    int keep = role == ROLE_MEMBER || role == ROLE_ELEM || role == ROLE_SUB;
    if (jstring(d, keep, &off, &n) != 0) return -1;
    if (keep) push_str(d, off, n);
    return 0;
  }
  if (c == '{') {
    *type = JV_OBJECT;
    d->pos++;
    jws(d);
    if (d->pos < d->len && d->s[d->pos] == '}') {
      d->pos++;
      return 0;
    }
    for (;;) {
      jws(d);
      if (d->pos >= d->len || d->s[d->pos] != '"') return jfail(d, "a key (a string in double quotes) expected");
      size_t koff = 0, klen = 0;
      if (jstring(d, role == ROLE_LINE, &koff, &klen) != 0) return -1;
      jws(d);
      if (d->pos >= d->len || d->s[d->pos] != ':') return jfail(d, "':' expected after the key");
      d->pos++;
      size_t first = d->n_str;
      int vt;
      if (role == ROLE_LINE) {
        if (d->n_m == d->cap_m) {
          d->cap_m = d->cap_m ? 2 * d->cap_m : 16;
          d->m = realloc(d->m, d->cap_m * sizeof(jmember));
          zt_check(d->m, "out of memory", "jsonl members (%zu)", d->cap_m);
        }
        jmember *m = &d->m[d->n_m++];
        *m = (jmember){.key = koff, .key_len = klen, .first = first, .bad_elem = -1, .first_elem = d->n_e};
      }
      if (jvalue(d, depth + 1, role == ROLE_LINE ? ROLE_MEMBER : ROLE_SKIP, &vt) != 0) return -1;
      if (role == ROLE_LINE) {
        jmember *m = &d->m[d->n_m - 1];
        m->type = vt;
        m->n = d->n_str - first;
      }
      jws(d);
      if (d->pos < d->len && d->s[d->pos] == ',') {
        d->pos++;
        continue;
      }
      if (d->pos < d->len && d->s[d->pos] == '}') {
        d->pos++;
        return 0;
      }
      return jfail(d, "',' or '}' expected");
    }
  }
  if (c == '[') {
    *type = JV_LIST;
    d->pos++;
    jws(d);
    if (d->pos < d->len && d->s[d->pos] == ']') {
      d->pos++;
      return 0;
    }
    const size_t elem = role == ROLE_ELEM ? d->n_e - 1 : 0; /* an inner list: its record (pushed by the outer list) */
    for (int i = 0;; i++) {
      int et;
      if (role == ROLE_MEMBER) {
        if (d->n_e == d->cap_e) {
          d->cap_e = d->cap_e ? 2 * d->cap_e : 64;
          d->e = realloc(d->e, d->cap_e * sizeof(jelem));
          zt_check(d->e, "out of memory", "jsonl list elements (%zu)", d->cap_e);
        }
        d->e[d->n_e++] = (jelem){.first = d->n_str, .bad_sub = -1};
      }
      const int sub = role == ROLE_MEMBER ? ROLE_ELEM : role == ROLE_ELEM ? ROLE_SUB : ROLE_SKIP;
      if (jvalue(d, depth + 1, sub, &et) != 0) return -1;
      if (role == ROLE_MEMBER) {
        jmember *m = &d->m[d->n_m - 1];
        jelem *e = &d->e[m->first_elem + m->n_elem++];
        e->type = et;
        e->n = d->n_str - e->first;
      }
      if (role == ROLE_ELEM && et != JV_STRING && d->e[elem].bad_sub < 0) {
        d->e[elem].bad_sub = i;
        d->e[elem].bad_sub_type = et;
      }
      if (role == ROLE_MEMBER && et != JV_STRING && d->m[d->n_m - 1].bad_elem < 0) {
        d->m[d->n_m - 1].bad_elem = i;
        d->m[d->n_m - 1].bad_type = et;
      }
      jws(d);
      if (d->pos < d->len && d->s[d->pos] == ',') {
        d->pos++;
        continue;
      }
      if (d->pos < d->len && d->s[d->pos] == ']') {
        d->pos++;
        return 0;
      }
      return jfail(d, "',' or ']' expected");
    }
  }
  if (jmatch(d, "true") || jmatch(d, "false")) {
    *type = JV_BOOL;
    return 0;
  }
  if (jmatch(d, "null")) {
    *type = JV_NULL;
    return 0;
  }
  *type = JV_NUMBER;
  if (jmatch(d, "NaN") || jmatch(d, "Infinity") || jmatch(d, "-Infinity")) return 0; /* Python accepts them */
  return jnumber(d);
}

int zt_jsonl_parse(zt_jsonl_doc *d, const char *line, size_t len, char *err, size_t err_cap) {
  d->n_m = d->n_str = d->n_e = 0;
  d->arena_len = 0;
  size_t bad;
  if (!zt_utf8_valid((const uint8_t *)line, len, &bad)) {
    snprintf(err, err_cap, "invalid UTF-8 at byte offset %zu of the line (byte 0x%02x)", bad,
             (unsigned)(unsigned char)line[bad]);
    return -1;
  }
  const char *nul = memchr(line, '\0', len);
  if (nul) {
    snprintf(err, err_cap, "invalid JSON: NUL byte at byte offset %zu of the line", (size_t)(nul - line));
    return -1;
  }
  size_t lead = 0;
  while (lead < len && (line[lead] == ' ' || line[lead] == '\t' || line[lead] == '\r')) lead++;
  if (lead == len) {
    snprintf(err, err_cap, "invalid JSON: empty line (Megatron's json.loads refuses it too)");
    return -1;
  }
  if (len + 1 > d->arena_cap) {
    free(d->arena);
    d->arena_cap = len + 1;
    d->arena = malloc(d->arena_cap);
    zt_check(d->arena, "out of memory", "jsonl line of %zu bytes", len);
  }
  d->s = line;
  d->len = len;
  d->pos = 0;
  d->err = err;
  d->err_cap = err_cap;
  int type;
  if (jvalue(d, 0, ROLE_LINE, &type) != 0) {
    d->n_m = 0;
    return -1;
  }
  jws(d);
  if (d->pos < len) {
    d->n_m = 0;
    return jfail(d, "extra data after the JSON value");
  }
  if (type != JV_OBJECT) {
    snprintf(err, err_cap, "the line is %s, expected a JSON object", type_name(type));
    return -1;
  }
  return 0;
}

static const jmember *find_member(const zt_jsonl_doc *d, const char *key) {
  const size_t klen = strlen(key);
  const jmember *v = NULL;
  for (size_t i = 0; i < d->n_m; i++)
    if (d->m[i].key_len == klen && memcmp(d->arena + d->m[i].key, key, klen) == 0) v = &d->m[i]; /* last wins */
  return v;
}

int zt_jsonl_kind(const zt_jsonl_doc *d, const char *key) {
  const jmember *v = find_member(d, key);
  return !v ? ZT_JSONL_MISSING : v->type == JV_STRING ? ZT_JSONL_STRING : v->type == JV_LIST ? ZT_JSONL_LIST
                                                                                             : ZT_JSONL_OTHER;
}

void zt_jsonl_lists_free(zt_jsonl_lists *l) {
  zt_jsonl_texts_free(&l->texts);
  free(l->count);
  memset(l, 0, sizeof *l);
}

int zt_jsonl_get_lists(zt_jsonl_doc *d, const char *key, zt_jsonl_lists *out, char *err, size_t err_cap) {
  out->texts.n = 0;
  out->n = 0;
  const jmember *v = find_member(d, key);
  if (!v) {
    snprintf(err, err_cap, "missing key \"%s\"", key);
    return -1;
  }
  if (v->type != JV_LIST) {
    snprintf(err, err_cap, "key \"%s\" is %s, expected a list of lists of strings", key, type_name(v->type));
    return -1;
  }
  for (size_t i = 0; i < v->n_elem; i++) {
    const jelem *e = &d->e[v->first_elem + i];
    if (e->type != JV_LIST) {
      snprintf(err, err_cap, "key \"%s\": element %zu of the list is %s, expected a list of strings", key, i,
               type_name(e->type));
      return -1;
    }
    if (e->bad_sub >= 0) {
      snprintf(err, err_cap, "key \"%s\": element %d of list %zu is %s, expected a string", key, e->bad_sub, i,
               type_name(e->bad_sub_type));
      return -1;
    }
    if (out->n == out->cap) {
      out->cap = out->cap ? 2 * out->cap : 16;
      out->count = realloc(out->count, out->cap * sizeof(size_t));
      zt_check(out->count, "out of memory", "jsonl lists (%zu)", out->cap);
    }
    out->count[out->n++] = e->n;
    for (size_t k = e->first; k < e->first + e->n; k++)
      push_text(&out->texts, d->arena + d->str_off[k], d->str_len[k]);
  }
  return 0;
}

int zt_jsonl_get(zt_jsonl_doc *d, const char *key, zt_jsonl_texts *out, char *err, size_t err_cap) {
  out->n = 0;
  const jmember *v = find_member(d, key);
  if (!v) {
    char keys[200];
    size_t k = 0;
    keys[0] = 0;
    for (size_t i = 0; i < d->n_m && k + 4 < sizeof keys; i++) {
      int w = snprintf(keys + k, sizeof keys - k, "%s\"%.*s\"", k ? ", " : "", (int)d->m[i].key_len,
                       d->arena + d->m[i].key);
      if (w < 0) break;
      k += (size_t)w < sizeof keys - k ? (size_t)w : sizeof keys - k - 1;
    }
    snprintf(err, err_cap, "missing key \"%s\" (--json-keys); the line has %s%s", key, k ? "keys " : "no keys",
             keys);
    return -1;
  }
  if (v->type == JV_LIST && v->bad_elem >= 0) {
    snprintf(err, err_cap, "key \"%s\": element %d of the list is %s, expected a string", key, v->bad_elem,
             type_name(v->bad_type));
    return -1;
  }
  if (v->type == JV_STRING || v->type == JV_LIST) {
    for (size_t i = v->first; i < v->first + v->n; i++) push_text(out, d->arena + d->str_off[i], d->str_len[i]);
    return 0;
  }
  snprintf(err, err_cap, "key \"%s\" is %s, expected a string (or a list of strings)", key, type_name(v->type));
  return -1;
}
