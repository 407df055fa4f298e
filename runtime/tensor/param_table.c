/* Parameter table bookkeeping and deterministic initialization. */
#include "runtime/tensor/param_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/philox.h"

void zt_param_table_init(zt_param_table *t) { memset(t, 0, sizeof(*t)); }

void zt_param_table_free(zt_param_table *t) {
  free(t->params);
  memset(t, 0, sizeof(*t));
}

int zt_param_table_add(zt_param_table *t, const char *name, int ndim, const int64_t *shape,
                       zt_init_kind init, float init_std, int no_weight_decay, int tp_split_dim) {
  zt_check(strlen(name) < sizeof(t->params[0].name), "parameter table", "name too long: %s", name);
  zt_check(zt_param_table_find(t, name) < 0, "parameter table", "parameter %s registered twice", name);
  if (t->count == t->capacity) {
    t->capacity = t->capacity ? 2 * t->capacity : 64;
    t->params = realloc(t->params, (size_t)t->capacity * sizeof(zt_param));
    zt_check(t->params != NULL, "out of memory", "parameter table of %d entries", t->capacity);
  }
  zt_param *p = &t->params[t->count];
  memset(p, 0, sizeof(*p));
  strcpy(p->name, name);
  p->ndim = ndim;
  p->numel = 1;
  for (int i = 0; i < ndim; i++) { p->shape[i] = shape[i]; p->numel *= (size_t)shape[i]; }
  p->dtype = ZT_DTYPE_FP32;
  p->offset = t->numel;
  p->tp_split_dim = tp_split_dim;
  p->tp_parts = 1;
  p->expert_id = -1;
  p->tied_group = -1;
  p->no_weight_decay = no_weight_decay;
  p->seq_parallel = tp_split_dim < 0;
  p->init = init;
  p->init_std = init_std;
  t->numel += (p->numel + 15) / 16 * 16;
  return t->count++;
}

void zt_param_table_experts_last(zt_param_table *t, size_t dense_multiple) {
  const size_t m = dense_multiple > 0 ? dense_multiple : 1;
  size_t off = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      t->dense_numel = off;
      off = (off + m - 1) / m * m;
      off = (off + 15) / 16 * 16;
      t->expert_lo = off;
    }
    for (int i = 0; i < t->count; i++) {
      zt_param *p = &t->params[i];
      if ((p->expert_id >= 0) != pass) continue;
      p->offset = off;
      off += (p->numel + 15) / 16 * 16;
    }
  }
  t->numel = off;
}

int zt_param_table_find(const zt_param_table *t, const char *name) {
  for (int i = 0; i < t->count; i++)
    if (strcmp(t->params[i].name, name) == 0) return i;
  return -1;
}

const zt_param *zt_param_get(const zt_param_table *t, const char *prefix, const char *suffix) {
  char name[200];
  snprintf(name, sizeof name, "%s.%s", prefix, suffix);
  int i = zt_param_table_find(t, name);
  zt_check(i >= 0, "parameter table", "no parameter named %s", name);
  return &t->params[i];
}

void *zt_param_addr_if(const zt_param_table *t, void *flat, size_t es, const char *prefix, const char *suffix) {
  char name[200];
  snprintf(name, sizeof name, "%s.%s", prefix, suffix);
  const int i = zt_param_table_find(t, name);
  return i >= 0 && flat ? (char *)flat + t->params[i].offset * es : NULL;
}

void *zt_param_addr(const zt_param_table *t, void *flat, size_t es, const char *prefix, const char *suffix) {
  const zt_param *p = zt_param_get(t, prefix, suffix);
  return flat ? (char *)flat + p->offset * es : NULL; /* no buffer (a forward-only model's gradients): none */
}

void zt_param_uniform_fill(float *dst, size_t n, uint64_t first, float bound, uint64_t seed, uint64_t index) {
  for (size_t j = 0; j < n; j++)
    dst[j] = bound * (2.0f * zt_philox_uniform(seed, ZT_RNG_INIT, index, first + (uint64_t)j) - 1.0f);
}

void zt_param_table_xavier(zt_param_table *t, int tp) {
  for (int i = 0; i < t->count; i++) {
    zt_param *p = &t->params[i];
    if (p->init != ZT_INIT_NORMAL || p->ndim != 2) continue;
    const double out = (double)p->shape[0] * (p->tp_split_dim == 0 ? tp : 1);
    const double in = (double)p->shape[1] * (p->tp_split_dim == 1 ? tp : 1);
    p->init = ZT_INIT_UNIFORM;
    p->init_std = (float)sqrt(6.0 / (in + out));
  }
}

void zt_param_table_initialize(const zt_param_table *t, float *flat, uint64_t seed) {
  memset(flat, 0, t->numel * sizeof(float)); /* alignment padding stays zero */
  zt_param_table_initialize_range(t, flat, seed, 0, t->numel);
}

void zt_param_table_initialize_range(const zt_param_table *t, float *flat, uint64_t seed, size_t lo, size_t hi) {
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if (p->offset < lo || p->offset >= hi) continue;
    float *dst = flat + p->offset;
    switch (p->init) {
      case ZT_INIT_NORMAL:
        zt_philox_normal_fill(dst, p->numel, 0, 0.0f, p->init_std, seed, ZT_RNG_INIT, (uint64_t)i);
        break;
      case ZT_INIT_UNIFORM: zt_param_uniform_fill(dst, p->numel, 0, p->init_std, seed, (uint64_t)i); break;
      case ZT_INIT_ZEROS: break;
      case ZT_INIT_ONES:
        for (size_t j = 0; j < p->numel; j++) dst[j] = 1.0f;
        break;
    }
  }
}

size_t zt_param_table_decay_numel(const zt_param_table *t) {
  size_t n = 0;
  for (int i = 0; i < t->count; i++)
    if (!t->params[i].no_weight_decay) n += t->params[i].numel;
  return n;
}
