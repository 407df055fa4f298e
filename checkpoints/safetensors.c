/* Streaming safetensors writer (see safetensors.h). */
#define _GNU_SOURCE
#include "checkpoints/safetensors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

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
  memset(w, 0, sizeof *w);
  snprintf(w->path, sizeof w->path, "%s", path);
  w->entries = entries;
  w->n = n;
  char *hdr = NULL;
  size_t hlen = 0;
  FILE *h = open_memstream(&hdr, &hlen);
  fprintf(h, "{\"__metadata__\":{\"format\":\"pt\"}");
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    const uint64_t bytes = (uint64_t)numel_of(&entries[i]) * 4;
    fputc(',', h);
    json_str(h, entries[i].name);
    fprintf(h, ":{\"dtype\":\"F32\",\"shape\":[");
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
  zt_check(fwrite(data, sizeof(float), numel, w->f) == numel, "safetensors", "%s: write failed (disk full?)",
           w->path);
}

void zt_st_end(zt_st_writer *w) {
  zt_check(w->next == w->n, "internal error", "%s: %d of %d tensors written", w->path, w->next, w->n);
  zt_check(fclose(w->f) == 0, "safetensors", "%s: write failed: %s", w->path, strerror(errno));
  w->f = NULL;
}
