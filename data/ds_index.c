/* DeepSpeed's data_sampling MMapIndexedDataset reader (data/ds_index.h). */
#include "data/ds_index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/file.h"

int zt_ds_dtype_size(int code) { return (int[]){0, 1, 1, 2, 4, 8, 2, 4, 8}[code]; }
const char *zt_ds_dtype_name(int code) {
  return (const char *[]){"?", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}[code];
}

static char *fmt2(const char *prefix, const char *ext) {
  const size_t n = strlen(prefix) + strlen(ext) + 1;
  char *s = zt_malloc(n, "path");
  snprintf(s, n, "%s%s", prefix, ext);
  return s;
}

static void *read_all(const char *path, size_t *len, const char *what) {
  char *buf = zt_read_file(path, len);
  if (!buf) zt_fatal(what, "cannot open %s: %s", path, strerror(errno));
  return buf;
}

/* Reads prefix.idx/.bin whole (the files of a map or reduce result); dies naming the file on any inconsistency. */
void zt_ds_index_read(zt_ds_index *d, const char *prefix, const char *what) {
  memset(d, 0, sizeof *d);
  char *ip = fmt2(prefix, ".idx"), *bp = fmt2(prefix, ".bin");
  size_t il, bl;
  unsigned char *ib = read_all(ip, &il, what);
  uint64_t ver, n, nd;
  if (il < 34 || memcmp(ib, "MMIDIDX\0\0", 9)) zt_fatal(what, "%s is not an MMapIndexedDataset index", ip);
  memcpy(&ver, ib + 9, 8);
  d->code = ib[17];
  memcpy(&n, ib + 18, 8);
  memcpy(&nd, ib + 26, 8);
  zt_check(ver == 1 && d->code >= 1 && d->code <= 8, what, "%s: version %llu, dtype code %d (DeepSpeed's "
           "data_sampling format has version 1 and codes 1..8)", ip, (unsigned long long)ver, d->code);
  zt_check(n < (1ull << 40) && nd < (1ull << 40) && il == 34 + 12 * n + 8 * nd, what, "%s: %zu bytes for "
           "%llu items and %llu doc_idx entries", ip, il, (unsigned long long)n, (unsigned long long)nd);
  d->n = (int64_t)n;
  d->ndoc = (int64_t)nd;
  d->sizes = zt_malloc(n * 4 + 4, "index");
  d->doc = zt_malloc(nd * 8 + 8, "index");
  d->offsets = zt_malloc(n * 8 + 8, "index");
  memcpy(d->sizes, ib + 34, n * 4);
  memcpy(d->doc, ib + 34 + 12 * n, nd * 8);
  d->offsets[0] = 0;
  for (uint64_t i = 0; i < n; i++) {
    int64_t ptr;
    memcpy(&ptr, ib + 34 + 4 * n + 8 * i, 8);
    zt_check(d->sizes[i] >= 0 && ptr == d->offsets[i] * zt_ds_dtype_size(d->code), what, "%s: item %llu has size %d "
             "at byte %lld (the items are written one after the other: byte %lld expected)", ip, (unsigned long long)i,
             d->sizes[i], (long long)ptr, (long long)(d->offsets[i] * zt_ds_dtype_size(d->code)));
    d->offsets[i + 1] = d->offsets[i] + d->sizes[i];
  }
  free(ib);
  unsigned char *bb = read_all(bp, &bl, what);
  const int es = zt_ds_dtype_size(d->code);
  zt_check((int64_t)bl == d->offsets[n] * es, what, "%s holds %zu bytes; its index says %lld %s values (%lld "
           "bytes)", bp, bl, (long long)d->offsets[n], zt_ds_dtype_name(d->code), (long long)(d->offsets[n] * es));
  d->nvalues = d->offsets[n];
  d->values = zt_malloc((size_t)d->nvalues * 8 + 8, "map result values");
  for (int64_t i = 0; i < d->nvalues; i++) {
    const unsigned char *p = bb + i * es;
    switch (d->code) {
    case 1: d->values[i] = p[0]; break;
    case 2: d->values[i] = (int8_t)p[0]; break;
    case 3: { int16_t x; memcpy(&x, p, 2); d->values[i] = x; } break;
    case 4: { int32_t x; memcpy(&x, p, 4); d->values[i] = x; } break;
    case 6: { uint16_t x; memcpy(&x, p, 2); d->values[i] = x; } break;
    case 7: { uint32_t x; memcpy(&x, p, 4); d->values[i] = x; } break;
    default: memcpy(&d->values[i], p, 8); break;
    }
  }
  free(bb);
  free(ip);
  free(bp);
}

void zt_ds_index_free(zt_ds_index *d) {
  free(d->sizes);
  free(d->doc);
  free(d->values);
  free(d->offsets);
}

