/* .npy writing and strict reading (format: numpy/lib/format.py, NEP 1). */
#include "runtime/base/npy.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

static const char NPY_MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static const struct {
  const char *descr, *name;
  size_t size;
} NPY_DTYPES[] = {{"<f4", "float32", 4}, {"<i4", "int32", 4}, {"<u4", "uint32", 4},
                  {"<i8", "int64", 8},   {"<u8", "uint64", 8}, {"<f8", "float64", 8}};

static int descr_index(const char *descr) {
  for (size_t i = 0; descr && i < sizeof NPY_DTYPES / sizeof NPY_DTYPES[0]; i++)
    if (strcmp(descr, NPY_DTYPES[i].descr) == 0) return (int)i;
  return -1;
}

/* Element size of a supported descr; dies on others. */
static size_t check_descr_arg(const char *descr, const char *fn) {
  int i = descr_index(descr);
  zt_check(i >= 0, "npy", "%s: unsupported dtype '%s' (supported: <f4 <i4 <u4 <i8 <u8 <f8)", fn,
           descr ? descr : "(null)");
  zt_check(host_is_little_endian(), "npy", "%s: big-endian hosts are not supported", fn);
  return NPY_DTYPES[i].size;
}

size_t zt_npy_itemsize(const char *descr) { return check_descr_arg(descr, "zt_npy_itemsize"); }

static const char *descr_name(const char *descr) {
  int i = descr_index(descr);
  return i >= 0 ? NPY_DTYPES[i].name : "?";
}

/* Element count of a shape, dying on negative dimensions or a byte size that overflows size_t. */
static size_t shape_numel(const char *path, int ndim, const int64_t *shape) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) {
    zt_check(shape[i] >= 0, "npy", "%s: dimension %d is %lld (negative)", path, i, (long long)shape[i]);
    zt_check(shape[i] == 0 || n <= SIZE_MAX / 8 / (size_t)shape[i], "npy", "%s: shape too large", path);
    n *= (size_t)shape[i];
  }
  return n;
}

void zt_npy_save(const char *path, const void *data, const char *descr, int ndim, const int64_t *shape) {
  const size_t itemsize = check_descr_arg(descr, "zt_npy_save");
  zt_check(ndim >= 0 && ndim <= ZT_NPY_MAX_DIMS, "npy", "%s: %d dimensions (at most %d)", path, ndim,
           ZT_NPY_MAX_DIMS);
  const size_t numel = shape_numel(path, ndim, shape);

  /* the dictionary as numpy writes it, padded with spaces so that the data starts on a 64-byte
   * boundary (preamble 10 bytes + header, the header ending in '\n') */
  char dict[256];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < ndim; i++)
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld%s", (long long)shape[i],
                    ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
  len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
  const size_t total = (10 + (size_t)len + 1 + 63) / 64 * 64;
  const size_t hlen = total - 10;
  char header[320];
  memset(header, ' ', sizeof header);
  memcpy(header, dict, (size_t)len);
  header[hlen - 1] = '\n';
  unsigned char pre[10];
  memcpy(pre, NPY_MAGIC, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(hlen & 0xff);
  pre[9] = (unsigned char)(hlen >> 8);

  FILE *f = fopen(path, "wb");
  if (!f) zt_fatal("npy", "cannot create %s: %s", path, strerror(errno));
  size_t bytes = numel * itemsize;
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, hlen, f) == hlen &&
           (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
  int err = errno;
  if (fclose(f) != 0 && ok) { ok = 0; err = errno; }
  if (!ok) zt_fatal("npy", "writing %zu bytes to %s failed: %s", 10 + hlen + bytes, path, strerror(err));
}

/* ---- reading ------------------------------------------------------------------------------------ */

/* Position just after "'key':" (or "\"key\":") in the header dictionary, or NULL. */
static const char *find_key(const char *h, const char *key) {
  char pat[2][40];
  snprintf(pat[0], sizeof pat[0], "'%s'", key);
  snprintf(pat[1], sizeof pat[1], "\"%s\"", key);
  for (int i = 0; i < 2; i++) {
    const char *p = strstr(h, pat[i]);
    if (!p) continue;
    p += strlen(pat[i]);
    while (isspace((unsigned char)*p)) p++;
    if (*p != ':') return NULL;
    p++;
    while (isspace((unsigned char)*p)) p++;
    return p;
  }
  return NULL;
}

static void parse_header(const char *path, const char *h, char *descr, size_t descr_len, int *fortran,
                         int *ndim, int64_t *shape) {
  const char *p = h;
  while (isspace((unsigned char)*p)) p++;
  zt_check(*p == '{', "npy", "%s: header is not a dictionary: %.80s", path, h);

  p = find_key(h, "descr");
  zt_check(p && (*p == '\'' || *p == '"'), "npy", "%s: header has no 'descr' string: %.80s", path, h);
  const char q = *p++;
  const char *end = strchr(p, q);
  zt_check(end && (size_t)(end - p) < descr_len, "npy", "%s: unreadable 'descr' in header: %.80s", path, h);
  memcpy(descr, p, (size_t)(end - p));
  descr[end - p] = 0;

  p = find_key(h, "fortran_order");
  zt_check(p != NULL, "npy", "%s: header has no 'fortran_order': %.80s", path, h);
  if (strncmp(p, "False", 5) == 0) *fortran = 0;
  else if (strncmp(p, "True", 4) == 0) *fortran = 1;
  else zt_fatal("npy", "%s: 'fortran_order' is neither True nor False: %.80s", path, h);

  p = find_key(h, "shape");
  zt_check(p && *p == '(', "npy", "%s: header has no 'shape' tuple: %.80s", path, h);
  p++;
  int n = 0;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (*p == ')') break;
    zt_check(isdigit((unsigned char)*p), "npy", "%s: malformed 'shape' in header: %.80s", path, h);
    char *after;
    errno = 0;
    long long v = strtoll(p, &after, 10);
    zt_check(errno == 0, "npy", "%s: dimension out of range in header: %.80s", path, h);
    zt_check(n < 32, "npy", "%s: more than 32 dimensions in header: %.80s", path, h);
    shape[n++] = v;
    p = after;
    while (isspace((unsigned char)*p)) p++;
    if (*p == ',') p++;
    else zt_check(*p == ')', "npy", "%s: malformed 'shape' in header: %.80s", path, h);
  }
  zt_check(n <= ZT_NPY_MAX_DIMS, "npy", "%s has %d dimensions; at most %d are supported", path, n, ZT_NPY_MAX_DIMS);
  *ndim = n;
}

/* want: the required descr, or NULL for any supported one (returned in got[8]). */
static void *load_impl(const char *path, const char *want_descr, char *got, int *ndim, int64_t *shape) {
  if (want_descr) check_descr_arg(want_descr, "zt_npy_load");
  FILE *f = fopen(path, "rb");
  if (!f) zt_fatal("npy", "cannot open %s: %s", path, strerror(errno));
  zt_check(fseek(f, 0, SEEK_END) == 0, "npy", "cannot seek in %s: %s", path, strerror(errno));
  long fsize = ftell(f);
  zt_check(fsize >= 0, "npy", "cannot size %s: %s", path, strerror(errno));
  rewind(f);

  unsigned char pre[12];
  zt_check(fsize >= 10 && fread(pre, 1, 10, f) == 10, "npy",
           "%s is %ld bytes, shorter than the 10-byte .npy preamble (truncated or not a .npy file)", path, fsize);
  zt_check(memcmp(pre, NPY_MAGIC, 6) == 0, "npy", "%s is not a .npy file (no \\x93NUMPY magic)", path);
  const int major = pre[6], minor = pre[7];
  size_t hlen, off;
  if (major == 1) {
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    off = 10;
  } else if (major == 2 || major == 3) {
    zt_check(fsize >= 12 && fread(pre + 10, 1, 2, f) == 2, "npy", "%s is truncated in its preamble (%ld bytes)",
             path, fsize);
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    off = 12;
  } else {
    zt_fatal("npy", "%s has .npy format version %d.%d; versions 1.0, 2.0 and 3.0 are supported", path, major,
             minor);
  }
  zt_check((size_t)fsize >= off + hlen, "npy", "%s is truncated: %ld bytes, but its header ends at byte %zu",
           path, fsize, off + hlen);
  zt_check(hlen < (1u << 20), "npy", "%s: header of %zu bytes is implausibly large", path, hlen);
  char *h = zt_malloc(hlen + 1, "npy header");
  zt_check(fread(h, 1, hlen, f) == hlen, "npy", "reading the %zu-byte header of %s failed", hlen, path);
  h[hlen] = 0;

  char file_descr[32];
  int fortran = 0, nd = 0;
  int64_t shp[32] = {0};
  parse_header(path, h, file_descr, sizeof file_descr, &fortran, &nd, shp);
  free(h);
  if (want_descr)
    zt_check(strcmp(file_descr, want_descr) == 0, "npy", "%s holds dtype '%s', expected '%s' (%s)", path,
             file_descr, want_descr, descr_name(want_descr));
  zt_check(descr_index(file_descr) >= 0, "npy", "%s holds dtype '%s' (supported: <f4 <i4 <u4 <i8 <u8 <f8)", path,
           file_descr);
  const size_t itemsize = NPY_DTYPES[descr_index(file_descr)].size;
  if (got) memcpy(got, NPY_DTYPES[descr_index(file_descr)].descr, 4);
  zt_check(!fortran, "npy", "%s is in Fortran (column-major) order; only C order is supported", path);

  const size_t numel = shape_numel(path, nd, shp);
  const size_t want = numel * itemsize, have = (size_t)fsize - off - hlen;
  if (have != want) {
    char dims[96] = "";
    int len = 0;
    for (int i = 0; i < nd; i++)
      len += snprintf(dims + len, sizeof dims - (size_t)len, "%s%lld", i ? ", " : "", (long long)shp[i]);
    zt_fatal("npy", "%s %s: shape (%s) needs %zu data bytes, the file has %zu", path,
             have < want ? "is truncated" : "has trailing bytes", dims, want, have);
  }
  void *data = zt_malloc(want, "npy data");
  zt_check(want == 0 || fread(data, 1, want, f) == want, "npy", "reading %zu data bytes of %s failed", want, path);
  fclose(f);
  *ndim = nd;
  for (int i = 0; i < nd; i++) shape[i] = shp[i];
  return data;
}

void *zt_npy_load(const char *path, const char *descr, int *ndim, int64_t *shape) {
  return load_impl(path, descr, NULL, ndim, shape);
}

void *zt_npy_load_any(const char *path, char descr[8], int *ndim, int64_t *shape) {
  return load_impl(path, NULL, descr, ndim, shape);
}
