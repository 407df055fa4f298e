/* Shared helpers of the parity dumps (gpt_parity_dump.c, bert_parity_dump.c): the output directory, a splitmix64
 * stream for data and perturbations, .npy writers for arrays, scalars and every parameter of a flat buffer. */
#ifndef ZT_PARITY_DUMP_H
#define ZT_PARITY_DUMP_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/tensor/param_table.h"

static const char *g_dir; /* the dump's output directory (set by main) */
static uint64_t g_rng;    /* the stream's state (each dump seeds its own) */

static inline uint64_t next_u64(void) {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static inline double next_uniform(void) { return (double)(next_u64() >> 11) * 0x1.0p-53; }

static inline void save(const char *name, const void *data, const char *descr, int ndim, const int64_t *shape) {
  char path[1024];
  int n = snprintf(path, sizeof path, "%s/%s.npy", g_dir, name);
  zt_check(n > 0 && (size_t)n < sizeof path, "parity dump", "path too long for %s", name);
  zt_npy_save(path, data, descr, ndim, shape);
}

static inline void save_scalar(const char *name, double v) {
  float f = (float)v;
  int64_t one[1] = {1};
  save(name, &f, "<f4", 1, one);
}

/* Every parameter (or gradient) of the flat buffer laid out by t as "<prefix><name>.npy". */
static inline void save_params(const zt_param_table *t, const float *flat, const char *prefix) {
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix, p->name);
    save(name, flat + p->offset, "<f4", p->ndim, p->shape);
  }
}

#endif
