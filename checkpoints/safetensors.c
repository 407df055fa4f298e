/* safetensors: the streaming writer and the strict reader (see safetensors.h). */
#define _GNU_SOURCE
#include "checkpoints/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/base/dtype.h"
#include "runtime/base/error.h"

/* safetensors data is little-endian and the reader copies it to memory as is: every host zerotron supports
 * (x86-64, aarch64) is little-endian too. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the safetensors reader assumes a little-endian host"
#endif

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static size_t numel_of(const zt_st_entry *e) {
  size_t n = 1;
  for (int d = 0; d < e->ndim; d++) n *= (size_t)e->shape[d];
  return n;
}

void zt_st_begin(zt_st_writer *w, const char *path, const zt_st_entry *entries, int n) {
  zt_st_begin_dtype(w, path, entries, n, 0);
}

void zt_st_begin_dtype(zt_st_writer *w, const char *path, const zt_st_entry *entries, int n, int bf16) {
  memset(w, 0, sizeof *w);
  w->bf16 = bf16;
  snprintf(w->path, sizeof w->path, "%s", path);
  w->entries = entries;
  w->n = n;
  char *hdr = NULL;
  size_t hlen = 0;
  FILE *h = open_memstream(&hdr, &hlen);
  fprintf(h, "{\"__metadata__\":{\"format\":\"pt\"}");
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    const uint64_t bytes = (uint64_t)numel_of(&entries[i]) * (bf16 ? 2 : 4);
    fputc(',', h);
    json_str(h, entries[i].name);
    fprintf(h, ":{\"dtype\":\"%s\",\"shape\":[", bf16 ? "BF16" : "F32");
    for (int d = 0; d < entries[i].ndim; d++) fprintf(h, "%s%lld", d ? "," : "", (long long)entries[i].shape[d]);
    fprintf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + bytes));
    off += bytes;
  }
  fputc('}', h);
  while ((ftell(h)) % 8) fputc(' ', h);
  fclose(h);
  w->f = fopen(path, "wb");
  zt_check(w->f, "safetensors", "%s: cannot write: %s", path, strerror(errno));
  unsigned char le[8];
  for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)hlen >> (8 * b));
  zt_check(fwrite(le, 1, 8, w->f) == 8 && fwrite(hdr, 1, hlen, w->f) == hlen, "safetensors", "%s: write failed",
           path);
  free(hdr);
}

void zt_st_write(zt_st_writer *w, const float *data, size_t numel) {
  zt_check(w->next < w->n, "internal error", "%s: more tensors written than the header lists (%d)", w->path, w->n);
  const zt_st_entry *e = &w->entries[w->next++];
  zt_check(numel == numel_of(e), "internal error", "%s: %s has %zu elements, the header says %zu", w->path, e->name,
           numel, numel_of(e));
  if (!w->bf16) {
    zt_check(fwrite(data, sizeof(float), numel, w->f) == numel, "safetensors", "%s: write failed (disk full?)",
             w->path);
    return;
  }
  uint16_t buf[8192];
  for (size_t done = 0; done < numel;) {
    const size_t k = numel - done < 8192 ? numel - done : 8192;
    for (size_t j = 0; j < k; j++) buf[j] = zt_fp32_to_bf16(data[done + j]);
    zt_check(fwrite(buf, sizeof(uint16_t), k, w->f) == k, "safetensors", "%s: write failed (disk full?)", w->path);
    done += k;
  }
}

void zt_st_end(zt_st_writer *w) {
  zt_check(w->next == w->n, "internal error", "%s: %d of %d tensors written", w->path, w->next, w->n);
  zt_check(fclose(w->f) == 0, "safetensors", "%s: write failed: %s", w->path, strerror(errno));
  w->f = NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Reader */

#define ST_MAX_HEADER 100000000ull   /* the reference implementation's MAX_HEADER_SIZE */
#define ST_TWO53 9007199254740992.0  /* JSON numbers reach us as doubles: integers are exact below 2^53 */

/* The whole-byte dtypes of the reference implementation (safetensors' Dtype); the sub-byte F4, F6_E2M3 and
 * F6_E3M2 are refused as unknown. */
static const struct {
  const char *name;
  int size;
  zt_st_dtype dt;
} st_dtypes[] = {
    {"F64", 8, ZT_ST_F64},         {"F32", 4, ZT_ST_F32},         {"F16", 2, ZT_ST_F16},
    {"BF16", 2, ZT_ST_BF16},       {"I64", 8, ZT_ST_OTHER},       {"I32", 4, ZT_ST_OTHER},
    {"I16", 2, ZT_ST_OTHER},       {"I8", 1, ZT_ST_OTHER},        {"U64", 8, ZT_ST_OTHER},
    {"U32", 4, ZT_ST_OTHER},       {"U16", 2, ZT_ST_OTHER},       {"U8", 1, ZT_ST_OTHER},
    {"BOOL", 1, ZT_ST_OTHER},      {"F8_E4M3", 1, ZT_ST_OTHER},   {"F8_E5M2", 1, ZT_ST_OTHER},
    {"F8_E8M0", 1, ZT_ST_OTHER},   {"C64", 8, ZT_ST_OTHER},
};
#define ST_NDTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

static int st_fail(char *err, size_t errn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int st_fail(char *err, size_t errn, const char *fmt, ...) {
  if (err && errn) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errn, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int st_dtype_size(const char *name) {
  for (int k = 0; k < ST_NDTYPES; k++)
    if (strcmp(st_dtypes[k].name, name) == 0) return st_dtypes[k].size;
  return 0;
}

/* Checks the header text before cJSON sees it, for what cJSON would let through: malformed UTF-8 (overlong forms,
 * surrogates, code points above U+10FFFF), control characters (inside strings JSON forbids them; outside, only
 * tab, newline and carriage return are whitespace, while cJSON skips any byte <= 32), and the escape \u0000 (cJSON's
 * strings end at it, so "a\u0000b" would read as "a"). Returns the offset of the first problem (*what says which),
 * or len when the text is clean. */
static size_t st_scan_text(const unsigned char *s, size_t len, const char **what) {
  int in_str = 0;
  size_t i = 0;
  while (i < len) {
    const unsigned c = s[i];
    if (c < 0x80) {
      if (c < 0x20 && (in_str || (c != '\t' && c != '\n' && c != '\r'))) {
        *what = in_str ? "a control character inside a string (JSON wants it escaped)" : "a control character";
        return i;
      }
      if (in_str && c == '\\' && i + 1 < len && s[i + 1] < 0x80) {
        if (s[i + 1] == 'u' && i + 6 <= len && memcmp(s + i + 2, "0000", 4) == 0) {
          *what = "the escape \\u0000 (a NUL character) in a string";
          return i;
        }
        i += 2;
        continue;
      }
      if (c == '"') in_str = !in_str;
      i++;
      continue;
    }
    size_t n;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07, min = 0x10000;
    else n = 0, cp = 0, min = 1;
    int ok = n > 0 && i + n <= len;
    for (size_t k = 1; ok && k < n; k++) {
      ok = (s[i + k] & 0xc0) == 0x80;
      cp = cp << 6 | (s[i + k] & 0x3fu);
    }
    if (!ok || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      *what = "invalid UTF-8";
      return i;
    }
    i += n;
  }
  return len;
}

static int st_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A JSON value in a message: a number as written, a string quoted (cut at 40 bytes), otherwise its kind. */
static const char *st_describe(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsNumber(v)) snprintf(buf, n, "%.17g", v->valuedouble);
  else if (cJSON_IsString(v)) snprintf(buf, n, "\"%.40s%s\"", v->valuestring, strlen(v->valuestring) > 40 ? "..." : "");
  else if (cJSON_IsObject(v)) snprintf(buf, n, "an object");
  else if (cJSON_IsArray(v)) snprintf(buf, n, "an array");
  else if (cJSON_IsBool(v)) snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
  else snprintf(buf, n, "null");
  return buf;
}

/* A non-negative integer below 2^53. */
static int st_uint(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return 0;
  const double d = v->valuedouble;
  if (!(d >= 0 && d < ST_TWO53) || d != floor(d)) return 0;
  *out = (uint64_t)d;
  return 1;
}

static const char *st_shape_str(const zt_st_tensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < t->ndim && k < n; d++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

/* Fills t (its name already set) from the header entry e. */
static int st_parse_entry(const zt_st_reader *r, const cJSON *e, zt_st_tensor *t, uint64_t data_bytes, char *err,
                          size_t errn) {
  char v[96], s[200];
  const char *p = r->path, *nm = t->name;
  if (!cJSON_IsObject(e))
    return st_fail(err, errn, "%s: tensor \"%s\": its entry is %s, not an object {\"dtype\", \"shape\", "
                   "\"data_offsets\"}", p, nm, st_describe(e, v, sizeof v));
  const cJSON *dt = NULL, *shape = NULL, *offs = NULL;
  for (const cJSON *m = e->child; m; m = m->next) {
    const cJSON **slot = strcmp(m->string, "dtype") == 0 ? &dt : strcmp(m->string, "shape") == 0 ? &shape
                         : strcmp(m->string, "data_offsets") == 0 ? &offs : NULL;
    if (!slot)
      return st_fail(err, errn, "%s: tensor \"%s\": unknown member \"%.64s\" (an entry holds exactly \"dtype\", "
                     "\"shape\" and \"data_offsets\")", p, nm, m->string);
    if (*slot) return st_fail(err, errn, "%s: tensor \"%s\": \"%s\" appears twice", p, nm, m->string);
    *slot = m;
  }
  if (!dt || !shape || !offs)
    return st_fail(err, errn, "%s: tensor \"%s\": no \"%s\"", p, nm, !dt ? "dtype" : !shape ? "shape" : "data_offsets");
  if (!cJSON_IsString(dt))
    return st_fail(err, errn, "%s: tensor \"%s\": \"dtype\" is %s, not a string", p, nm, st_describe(dt, v, sizeof v));
  const int esize = st_dtype_size(dt->valuestring);
  if (!esize)
    return st_fail(err, errn, "%s: tensor \"%s\": unknown dtype %s (known: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 "
                   "U16 U8 BOOL F8_E4M3 F8_E5M2 F8_E8M0 C64)", p, nm, st_describe(dt, v, sizeof v));
  snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dt->valuestring);
  t->dtype = ZT_ST_OTHER;
  for (int k = 0; k < ST_NDTYPES; k++)
    if (strcmp(st_dtypes[k].name, t->dtype_name) == 0) t->dtype = st_dtypes[k].dt;
  if (!cJSON_IsArray(shape))
    return st_fail(err, errn, "%s: tensor \"%s\": \"shape\" is %s, not an array", p, nm,
                   st_describe(shape, v, sizeof v));
  const int ndim = cJSON_GetArraySize(shape);
  if (ndim > 8) return st_fail(err, errn, "%s: tensor \"%s\": shape has %d dimensions, at most 8", p, nm, ndim);
  t->ndim = 0;
  uint64_t numel = 1;
  int overflow = 0;
  for (const cJSON *d = shape->child; d; d = d->next) {
    uint64_t x;
    if (!st_uint(d, &x))
      return st_fail(err, errn, "%s: tensor \"%s\": shape[%d] is %s; a dimension is an integer in 0 .. 2^53-1", p,
                     nm, t->ndim, st_describe(d, v, sizeof v));
    t->shape[t->ndim++] = (int64_t)x;
    if (x && numel > UINT64_MAX / x) overflow = 1;
    numel *= x;
  }
  if (overflow || numel > SIZE_MAX || numel > UINT64_MAX / (uint64_t)esize)
    return st_fail(err, errn, "%s: tensor \"%s\": shape %s of %s overflows 64 bits (elements or bytes)", p, nm,
                   st_shape_str(t, s, sizeof s), t->dtype_name);
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
    return st_fail(err, errn, "%s: tensor \"%s\": \"data_offsets\" is %s, not [begin, end]", p, nm,
                   cJSON_IsArray(offs) ? "an array of the wrong length" : st_describe(offs, v, sizeof v));
  const cJSON *b = offs->child, *en = b->next;
  const int bad_begin = !st_uint(b, &t->begin), bad_end = !bad_begin && !st_uint(en, &t->end);
  if (bad_begin || bad_end)
    return st_fail(err, errn, "%s: tensor \"%s\": data_offsets' %s is %s; an offset is an integer in 0 .. 2^53-1",
                   p, nm, bad_begin ? "begin" : "end", st_describe(bad_begin ? b : en, v, sizeof v));
  if (t->begin > t->end)
    return st_fail(err, errn, "%s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin", p, nm,
                   (unsigned long long)t->begin, (unsigned long long)t->end);
  if (t->end > data_bytes)
    return st_fail(err, errn, "%s: tensor \"%s\": data_offsets [%llu, %llu] end past the data section's %llu bytes",
                   p, nm, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_bytes);
  const uint64_t need = numel * (uint64_t)esize;
  if (t->end - t->begin != need)
    return st_fail(err, errn, "%s: tensor \"%s\": data_offsets [%llu, %llu] hold %llu bytes, but shape %s of %s "
                   "needs %llu (%llu elements x %d bytes)", p, nm, (unsigned long long)t->begin,
                   (unsigned long long)t->end, (unsigned long long)(t->end - t->begin), st_shape_str(t, s, sizeof s),
                   t->dtype_name, (unsigned long long)need, (unsigned long long)numel, esize);
  return 0;
}

static int st_by_name(const void *a, const void *b) {
  return strcmp((*(const zt_st_tensor *const *)a)->name, (*(const zt_st_tensor *const *)b)->name);
}

static int st_by_offsets(const void *a, const void *b) {
  const zt_st_tensor *x = *(const zt_st_tensor *const *)a, *y = *(const zt_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* Duplicate names, then the tiling of the data section (the reference implementation's validate()). */
static int st_check_layout(const zt_st_reader *r, uint64_t data_bytes, char *err, size_t errn) {
  const zt_st_tensor **o = malloc(((size_t)r->n + 1) * sizeof *o);
  if (!o) return st_fail(err, errn, "%s: out of memory for %d tensors", r->path, r->n);
  for (int i = 0; i < r->n; i++) o[i] = &r->tensors[i];
  int rc = 0;
  qsort(o, (size_t)r->n, sizeof *o, st_by_name);
  for (int i = 1; i < r->n && !rc; i++)
    if (strcmp(o[i - 1]->name, o[i]->name) == 0)
      rc = st_fail(err, errn, "%s: tensor \"%s\" appears twice in the header", r->path, o[i]->name);
  if (!rc) qsort(o, (size_t)r->n, sizeof *o, st_by_offsets);
  uint64_t pos = 0;
  for (int i = 0; i < r->n && !rc; i++) {
    const zt_st_tensor *t = o[i], *q = i ? o[i - 1] : NULL;
    if (t->begin != pos && !q)
      rc = st_fail(err, errn, "%s: the first tensor, \"%s\", begins at byte %llu of the data section, not 0 (bytes "
                   "0 .. %llu belong to no tensor)", r->path, t->name, (unsigned long long)t->begin,
                   (unsigned long long)t->begin);
    else if (t->begin != pos)
      rc = st_fail(err, errn, "%s: tensors \"%s\" (data_offsets [%llu, %llu]) and \"%s\" ([%llu, %llu]) %s by %llu "
                   "bytes; the tensors must tile the data section", r->path, q->name, (unsigned long long)q->begin,
                   (unsigned long long)q->end, t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                   t->begin > pos ? "leave a gap" : "overlap",
                   (unsigned long long)(t->begin > pos ? t->begin - pos : pos - t->begin));
    pos = t->end;
  }
  if (!rc && pos != data_bytes) {
    if (r->n)
      rc = st_fail(err, errn, "%s: the last tensor, \"%s\", ends at byte %llu, but the data section has %llu bytes "
                   "(%llu belong to no tensor)", r->path, o[r->n - 1]->name, (unsigned long long)pos,
                   (unsigned long long)data_bytes, (unsigned long long)(data_bytes - pos));
    else
      rc = st_fail(err, errn, "%s: the header lists no tensor, but the data section has %llu bytes", r->path,
                   (unsigned long long)data_bytes);
  }
  free(o);
  return rc;
}

int zt_st_parse_header(zt_st_reader *r, const char *json, size_t len, uint64_t data_bytes, char *err, size_t errn) {
  r->tensors = NULL;
  r->n = 0;
  const char *p = r->path, *what = "";
  const size_t bad = st_scan_text((const unsigned char *)json, len, &what);
  if (bad < len) return st_fail(err, errn, "%s: header byte %zu of %zu: %s", p, bad, len, what);
  size_t k = 0;
  while (k < len && st_json_space(json[k])) k++;
  if (k == len) return st_fail(err, errn, "%s: the header (%zu bytes) is empty, not a JSON object", p, len);
  if (json[k] != '{')
    return st_fail(err, errn, "%s: the header is not a JSON object (byte %zu is 0x%02x, not '{')", p, k,
                   (unsigned char)json[k]);
  /* a NUL-terminated copy: cJSON then never looks past the header, whatever the text */
  char *text = malloc(len + 1);
  if (!text) return st_fail(err, errn, "%s: out of memory for a header of %zu bytes", p, len);
  memcpy(text, json, len);
  text[len] = 0;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 0);
  int rc = 0;
  if (!root) {
    const size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    rc = st_fail(err, errn, "%s: the header is not valid JSON (error near byte %zu of %zu)", p, at, len);
  } else {
    const size_t at = (size_t)(end - text);
    for (size_t i = at; i < len && !rc; i++)
      if (!st_json_space(text[i]))
        rc = st_fail(err, errn, "%s: the header has %zu bytes after its JSON object (from byte %zu); only "
                     "whitespace may pad it", p, len - at, at);
    if (!rc && !cJSON_IsObject(root)) rc = st_fail(err, errn, "%s: the header is not a JSON object", p);
  }
  int count = 0;
  for (const cJSON *m = root && !rc ? root->child : NULL; m; m = m->next) count++;
  zt_st_tensor *ts = rc ? NULL : calloc((size_t)count + 1, sizeof *ts);
  if (!rc && !ts) rc = st_fail(err, errn, "%s: out of memory for %d tensors", p, count);
  int n = 0, meta = 0;
  for (const cJSON *m = rc ? NULL : root->child; m && !rc; m = m->next) {
    char v[96];
    if (strcmp(m->string, "__metadata__") == 0) {
      if (meta++) rc = st_fail(err, errn, "%s: \"__metadata__\" appears twice in the header", p);
      else if (!cJSON_IsObject(m))
        rc = st_fail(err, errn, "%s: \"__metadata__\" is %s, not an object of strings", p,
                     st_describe(m, v, sizeof v));
      for (const cJSON *kv = !rc ? m->child : NULL; kv && !rc; kv = kv->next)
        if (!cJSON_IsString(kv))
          rc = st_fail(err, errn, "%s: \"__metadata__\" member \"%.64s\" is %s, not a string", p, kv->string,
                       st_describe(kv, v, sizeof v));
      continue;
    }
    const size_t nl = strlen(m->string);
    if (nl >= sizeof ts[n].name) {
      rc = st_fail(err, errn, "%s: a tensor name of %zu bytes (\"%.48s...\") is longer than the %zu this reader "
                   "holds", p, nl, m->string, sizeof ts[n].name - 1);
      break;
    }
    memcpy(ts[n].name, m->string, nl + 1);
    rc = st_parse_entry(r, m, &ts[n], data_bytes, err, errn);
    n++;
  }
  cJSON_Delete(root);
  free(text);
  if (!rc) {
    r->tensors = ts;
    r->n = n;
    rc = st_check_layout(r, data_bytes, err, errn);
  }
  if (rc) {
    free(ts);
    r->tensors = NULL;
    r->n = 0;
  }
  return rc;
}

int zt_st_open(zt_st_reader *r, const char *path, char *err, size_t errn) {
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", path);
  r->f = fopen(path, "rb");
  if (!r->f) return st_fail(err, errn, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  unsigned char le[8];
  char *hdr = NULL;
  int rc = 0;
  if (fstat(fileno(r->f), &st) != 0) rc = st_fail(err, errn, "%s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode)) rc = st_fail(err, errn, "%s: not a regular file", path);
  else if (st.st_size < 8)
    rc = st_fail(err, errn, "%s: %lld bytes, too short for a safetensors file (an 8-byte header length first)", path,
                 (long long)st.st_size);
  else if (fread(le, 1, 8, r->f) != 8) rc = st_fail(err, errn, "%s: cannot read the header length", path);
  const uint64_t size = rc ? 0 : (uint64_t)st.st_size;
  uint64_t hlen = 0;
  for (int b = 0; b < 8 && !rc; b++) hlen |= (uint64_t)le[b] << (8 * b);
  if (!rc && hlen > ST_MAX_HEADER)
    rc = st_fail(err, errn, "%s: header length %llu is over the limit of %llu bytes (not a safetensors file?)", path,
                 (unsigned long long)hlen, ST_MAX_HEADER);
  else if (!rc && hlen > size - 8)
    rc = st_fail(err, errn, "%s: header length %llu, but only %llu bytes follow it (a truncated file?)", path,
                 (unsigned long long)hlen, (unsigned long long)(size - 8));
  if (!rc && !(hdr = malloc(hlen ? hlen : 1)))
    rc = st_fail(err, errn, "%s: out of memory for a header of %llu bytes", path, (unsigned long long)hlen);
  if (!rc && fread(hdr, 1, hlen, r->f) != hlen)
    rc = st_fail(err, errn, "%s: cannot read the %llu-byte header", path, (unsigned long long)hlen);
  if (!rc) {
    r->data_start = 8 + hlen;
    r->data_bytes = size - r->data_start;
    rc = zt_st_parse_header(r, hdr, (size_t)hlen, r->data_bytes, err, errn);
  }
  free(hdr);
  if (rc) zt_st_close(r);
  return rc;
}

int zt_st_find(const zt_st_reader *r, const char *name) {
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->tensors[i].name, name) == 0) return i;
  return -1;
}

size_t zt_st_numel(const zt_st_tensor *t) {
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  return n;
}

int zt_st_read_f32(const zt_st_reader *r, int i, float *out, char *err, size_t errn) {
  if (i < 0 || i >= r->n) return st_fail(err, errn, "%s: no tensor %d (the file has %d)", r->path, i, r->n);
  const zt_st_tensor *t = &r->tensors[i];
  const int es = t->dtype == ZT_ST_F64 ? 8 : t->dtype == ZT_ST_F32 ? 4 : t->dtype == ZT_ST_OTHER ? 0 : 2;
  if (!es)
    return st_fail(err, errn, "%s: tensor \"%s\" has dtype %s, which does not convert to float (F64, F32, F16 and "
                   "BF16 do)", r->path, t->name, t->dtype_name);
  if (!r->f) return st_fail(err, errn, "%s: tensor \"%s\": the file is not open", r->path, t->name);
  const size_t n = zt_st_numel(t);
  if (n == 0) return 0;
  const unsigned long long at = (unsigned long long)(r->data_start + t->begin);
  if (fseeko(r->f, (off_t)at, SEEK_SET) != 0)
    return st_fail(err, errn, "%s: tensor \"%s\": cannot seek to byte %llu: %s", r->path, t->name, at,
                   strerror(errno));
  unsigned char buf[1 << 16];
  const size_t chunk = t->dtype == ZT_ST_F32 ? n : sizeof buf / (size_t)es;
  for (size_t done = 0; done < n;) {
    const size_t k = n - done < chunk ? n - done : chunk;
    void *dst = t->dtype == ZT_ST_F32 ? (void *)(out + done) : (void *)buf;
    const size_t got = fread(dst, (size_t)es, k, r->f);
    if (got != k)
      return st_fail(err, errn, "%s: tensor \"%s\": read %zu of its %zu bytes at file offset %llu: %s", r->path,
                     t->name, (done + got) * (size_t)es, n * (size_t)es, at,
                     ferror(r->f) ? strerror(errno) : "the file ends early (changed since it was opened?)");
    float *o = out + done;
    if (t->dtype == ZT_ST_F16) {
      for (size_t j = 0; j < k; j++) o[j] = zt_fp16_to_fp32((uint16_t)(buf[2 * j] | buf[2 * j + 1] << 8));
    } else if (t->dtype == ZT_ST_BF16) {
      for (size_t j = 0; j < k; j++) o[j] = zt_bf16_to_fp32((uint16_t)(buf[2 * j] | buf[2 * j + 1] << 8));
    } else if (t->dtype == ZT_ST_F64) {
      for (size_t j = 0; j < k; j++) {
        double d;
        memcpy(&d, buf + 8 * j, 8);
        o[j] = (float)d; /* round to nearest even; beyond FLT_MAX to infinity (IEEE 754, C11 Annex F) */
      }
    }
    done += k;
  }
  return 0;
}

void zt_st_close(zt_st_reader *r) {
  if (r->f) fclose(r->f);
  r->f = NULL;
  free(r->tensors);
  r->tensors = NULL;
  r->n = 0;
}
