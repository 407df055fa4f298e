/* Loose JSON lines: chunked line reader over zlib (plain or gzip input) and per-line extraction of
 * key texts with cJSON. See data/jsonl.h for the line rules. */
#define _POSIX_C_SOURCE 200809L
#include "data/jsonl.h"

#include <cjson/cJSON.h>
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
  return r;
}

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
  memcpy(c->buf, r->carry, r->carry_len);
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
    size_t want = c->buf_len < target_bytes ? target_bytes - c->buf_len : target_bytes;
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

struct zt_jsonl_doc {
  cJSON *root;
};

zt_jsonl_doc *zt_jsonl_doc_new(void) { return zt_calloc(1, sizeof(zt_jsonl_doc), "jsonl doc"); }

void zt_jsonl_doc_free(zt_jsonl_doc *d) {
  if (!d) return;
  cJSON_Delete(d->root);
  free(d);
}

void zt_jsonl_texts_free(zt_jsonl_texts *t) {
  free(t->text);
  free(t->len);
  memset(t, 0, sizeof *t);
}

static void push_text(zt_jsonl_texts *t, const char *s) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 16;
    t->text = realloc(t->text, t->cap * sizeof(char *));
    t->len = realloc(t->len, t->cap * sizeof(size_t));
    zt_check(t->text && t->len, "out of memory", "jsonl texts (%zu)", t->cap);
  }
  t->text[t->n] = s;
  t->len[t->n] = strlen(s);
  t->n++;
}

static const char *type_name(const cJSON *v) {
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsArray(v)) return "a list";
  if (cJSON_IsObject(v)) return "an object";
  return "an unknown value";
}

int zt_jsonl_parse(zt_jsonl_doc *d, const char *line, size_t len, char *err, size_t err_cap) {
  cJSON_Delete(d->root);
  d->root = NULL;
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
  const char *end = NULL;
  d->root = cJSON_ParseWithLengthOpts(line, len + 1, &end, 1);
  if (!d->root) {
    size_t at = end && end >= line && end <= line + len ? (size_t)(end - line) : 0;
    if (at >= len) snprintf(err, err_cap, "invalid JSON: the line ends at byte offset %zu inside a value", at);
    else snprintf(err, err_cap, "invalid JSON at byte offset %zu of the line (near \"%.20s\")", at, line + at);
    return -1;
  }
  if (!cJSON_IsObject(d->root)) {
    snprintf(err, err_cap, "the line is %s, expected a JSON object", type_name(d->root));
    cJSON_Delete(d->root);
    d->root = NULL;
    return -1;
  }
  return 0;
}

int zt_jsonl_get(zt_jsonl_doc *d, const char *key, zt_jsonl_texts *out, char *err, size_t err_cap) {
  out->n = 0;
  const cJSON *v = NULL;
  for (const cJSON *c = d->root ? d->root->child : NULL; c; c = c->next)
    if (c->string && strcmp(c->string, key) == 0) v = c; /* the last one wins, as in Python */
  if (!v) {
    char keys[200];
    size_t k = 0;
    keys[0] = 0;
    for (const cJSON *c = d->root ? d->root->child : NULL; c && k + 4 < sizeof keys; c = c->next) {
      int w = snprintf(keys + k, sizeof keys - k, "%s\"%s\"", k ? ", " : "", c->string ? c->string : "");
      if (w < 0) break;
      k += (size_t)w < sizeof keys - k ? (size_t)w : sizeof keys - k - 1;
    }
    snprintf(err, err_cap, "missing key \"%s\" (--json-keys); the line has %s%s", key, k ? "keys " : "no keys",
             keys);
    return -1;
  }
  if (cJSON_IsString(v)) {
    push_text(out, v->valuestring);
    return 0;
  }
  if (cJSON_IsArray(v)) {
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
      if (!cJSON_IsString(e)) {
        snprintf(err, err_cap, "key \"%s\": element %d of the list is %s, expected a string", key, i, type_name(e));
        return -1;
      }
      push_text(out, e->valuestring);
    }
    return 0;
  }
  snprintf(err, err_cap, "key \"%s\" is %s, expected a string (or a list of strings)", key, type_name(v));
  return -1;
}
