/* ZeRO stage 3 (see zero3.h). */
#include "runtime/zero/zero3.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/error.h"

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
static size_t usize(const zt_zero3 *s, int u) { return s->ub[u] - s->ua[u]; }

/* Rank r's piece of [a, b): the intersection with its partition. */
static size_t seg(const zt_zero3 *s, size_t a, size_t b, int r, size_t *x) {
  const size_t lo = s->z->part * (size_t)r, hi = min_sz(lo + s->z->part, s->numel);
  *x = max_sz(a, lo);
  const size_t y = min_sz(b, hi);
  return y > *x ? y - *x : 0;
}

static void scale(const zt_zero3 *s, float *x, size_t n, float f) {
  if (f != 1.0f) s->z->be->scale_f32(x, f, n);
}

static size_t param_es(const zt_zero3 *s) { return zt_dtype_size(s->z->param_dt); }

/* Gives elements [x, y) of buf (es-byte elements) back: on the host whole pages through madvise (they read as
 * zeros afterwards), with zero the partial pages at the ends cleared too; with poison (parameters only) NaN
 * instead. Device memory stays allocated (cleared with zero, NaN with poison). */
static void give_back(zt_zero3 *s, void *buf, size_t es, size_t x, size_t y, int zero) {
  if (y <= x) return;
  const zt_backend *be = s->z->be;
  char *b0 = (char *)buf + x * es, *b1 = (char *)buf + y * es;
  if (s->cfg.poison && !zero) {
    if (be->host_visible)
      for (float *f = (float *)b0; f < (float *)b1; f++) *f = NAN;
    else
      be->memset(b0, 0xff, (size_t)(b1 - b0)); /* all ones: NaN in fp32, bf16 and fp16 */
    return;
  }
  if (!be->host_visible) {
    if (zero) be->memset(b0, 0, (size_t)(b1 - b0));
    return;
  }
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t p0 = ((uintptr_t)b0 + page - 1) / page * page, p1 = (uintptr_t)b1 / page * page;
  if (p0 < p1) {
    zt_check(madvise((void *)p0, p1 - p0, MADV_DONTNEED) == 0, "ZeRO-3", "madvise of %zu bytes failed",
             (size_t)(p1 - p0));
    if (zero) {
      memset(b0, 0, (size_t)(p0 - (uintptr_t)b0));
      memset((void *)p1, 0, (size_t)((uintptr_t)b1 - p1));
    }
  } else if (zero) {
    memset(b0, 0, (size_t)(b1 - b0));
  }
}

/* Releases the parameters of [a, b) that are not persistent, and not in this rank's partition unless
 * drop_owned. */
static void drop_params(zt_zero3 *s, size_t a, size_t b, int drop_owned) {
  const size_t lo = drop_owned ? b : s->z->lo, hi = drop_owned ? b : s->z->hi;
  size_t x = a;
  int k = 0;
  while (x < b) {
    if (x >= lo && x < hi) { x = hi; continue; }
    while (k < s->npersist && s->pb[k] <= x) k++;
    if (k < s->npersist && s->pa[k] <= x) { x = s->pb[k]; continue; }
    size_t y = b;
    if (lo > x) y = min_sz(y, lo);
    if (k < s->npersist) y = min_sz(y, s->pa[k]);
    give_back(s, s->params, param_es(s), x, y, 0);
    x = y;
  }
}

/* Fills the ranges [a[i], b[i]) of params from their owners: one broadcast per owner's piece of each range,
 * straight into the flat buffer (no staging), in the same order on every rank. */
static void gather_ranges(zt_zero3 *s, const size_t *a, const size_t *b, int n) {
  const int D = s->z->dp_size, me = s->z->dp_rank;
  if (D == 1 || n == 0) return;
  size_t x;
  for (int i = 0; i < n; i++)
    for (int r = 0; r < D; r++) {
      const size_t len = seg(s, a[i], b[i], r, &x);
      if (len == 0) continue;
      zt_broadcast(s->z->dp, zt_at(s->params, s->z->param_dt, x), len * param_es(s), r);
      if (r != me) s->gathered_elems += len;
      s->broadcasts++;
    }
  s->gathers++;
}

static int swapped(const zt_zero3 *s, int u) { return s->ps && s->ps->len[u] > 0; }

/* This rank's offloaded piece of unit u into the flat buffer. */
static void piece_in(zt_zero3 *s, int u) {
  if (!swapped(s, u) || s->in[u]) return;
  zt_param_swapper_read(s->ps, u, (float *)s->params + s->ox[u]);
  s->in[u] = 1;
}

/* ... and out of it (written to NVMe first when it changed). */
static void piece_out(zt_zero3 *s, int u, int write) {
  if (!swapped(s, u) || !s->in[u]) return;
  if (write) zt_param_swapper_write(s->ps, u, (float *)s->params + s->ox[u]);
  drop_params(s, s->ox[u], s->ox[u] + s->olen[u], 1);
  s->in[u] = 0;
}

/* Gathers the listed units (not live) and marks them live. */
static void gather_units(zt_zero3 *s, const int *units, int n) {
  size_t *a = zt_malloc(2 * (size_t)(n ? n : 1) * sizeof(size_t), "ZeRO-3 ranges"), *b = a + n;
  for (int i = 0; i < n; i++) {
    piece_in(s, units[i]);
    a[i] = s->ua[units[i]];
    b[i] = s->ub[units[i]];
    s->live[units[i]] = 1;
    s->live_elems += usize(s, units[i]);
  }
  gather_ranges(s, a, b, n);
  free(a);
  s->peak_live = max_sz(s->peak_live, s->live_elems);
}

static void drop_unit(zt_zero3 *s, int u) {
  if (!s->live[u]) return;
  drop_params(s, s->ua[u], s->ub[u], 0);
  piece_out(s, u, 0); /* unchanged since the last step */
  s->live[u] = 0;
  s->live_elems -= usize(s, u);
}

void zt_zero3_init(zt_zero3 *s, const zt_zero *z, const zt_zero3_config *cfg, const zt_param_table *t,
                   void *params, float *grads, int n, const size_t *a, const size_t *b) {
  memset(s, 0, sizeof(*s));
  s->z = z;
  s->cfg = *cfg;
  s->params = params;
  s->grads = grads;
  s->numel = z->numel;
  s->nunits = n;
  s->ua = zt_malloc(2 * (size_t)n * sizeof(size_t), "ZeRO-3 units");
  s->ub = s->ua + n;
  for (int u = 0; u < n; u++) {
    zt_check(a[u] <= b[u] && b[u] <= s->numel && (u == 0 || a[u] >= b[u - 1]), "internal error",
             "ZeRO-3 unit %d is [%zu, %zu) of %zu", u, a[u], b[u], s->numel);
    s->ua[u] = a[u];
    s->ub[u] = b[u];
  }
  s->live = zt_calloc(2 * (size_t)n, 1, "ZeRO-3 unit flags");
  s->in_use = s->live + n;
  s->pending = zt_malloc((size_t)n * sizeof(int), "ZeRO-3 pending units");
  s->pa = zt_malloc(2 * (size_t)(t->count + 1) * sizeof(size_t), "ZeRO-3 persistent ranges");
  s->pb = s->pa + t->count + 1;
  for (int i = 0; i < t->count; i++) { /* table order is offset order */
    const zt_param *p = &t->params[i];
    if (p->numel >= cfg->persistence || s->persist_elems + p->numel > cfg->model_persistence) continue;
    s->persist_elems += p->numel;
    if (s->npersist > 0 && s->pb[s->npersist - 1] == p->offset) {
      s->pb[s->npersist - 1] += p->numel;
    } else {
      s->pa[s->npersist] = p->offset;
      s->pb[s->npersist++] = p->offset + p->numel;
    }
  }
  s->acc = z->be->alloc((z->hi - z->lo + 1) * sizeof(float), "ZeRO-3 gradient partition");
  s->ox = zt_malloc(2 * (size_t)n * sizeof(size_t), "ZeRO-3 pieces");
  s->olen = s->ox + n;
  size_t kept = 0;
  size_t *swap_len = zt_calloc((size_t)n, sizeof(size_t), "ZeRO-3 pieces");
  for (int u = 0; u < n; u++) {
    s->olen[u] = seg(s, a[u], b[u], z->dp_rank, &s->ox[u]);
    if (kept + s->olen[u] <= cfg->max_in_cpu) kept += s->olen[u];
    else swap_len[u] = s->olen[u];
  }
  s->in = zt_calloc((size_t)n, 1, "ZeRO-3 piece flags");
  if (cfg->param_nvme_path) {
    zt_check(z->be->host_visible, "unsupported configuration", "offload_param nvme with the parameters on a GPU "
             "lands with the GPU offload work (ZeRO-Infinity on the GPU path)");
    s->ps = zt_malloc(sizeof(*s->ps), "offload_param swapper");
    zt_param_swapper_init(s->ps, cfg->aio, cfg->param_nvme_path, cfg->rank, n, swap_len, cfg->buffer_count,
                          cfg->buffer_size, cfg->pin_memory);
  }
  free(swap_len);
}

void zt_zero3_discard(zt_zero3 *s, int u) {
  s->in[u] = 1; /* just written whole */
  piece_out(s, u, 1);
  if (s->z->dp_size > 1) drop_params(s, s->ua[u], s->ub[u], 0);
}

void zt_zero3_reset(zt_zero3 *s) {
  for (int u = 0; u < s->nunits; u++) {
    zt_zero3_discard(s, u);
    s->live[u] = 0;
  }
  s->live_elems = 0;
}

void zt_zero3_partition_in(zt_zero3 *s) {
  for (int u = 0; u < s->nunits; u++) piece_in(s, u);
}

void zt_zero3_partition_out(zt_zero3 *s, int changed) {
  for (int u = 0; u < s->nunits; u++) piece_out(s, u, changed);
}

void zt_zero3_free(zt_zero3 *s) {
  if (s->ps) {
    zt_param_swapper_free(s->ps);
    free(s->ps);
  }
  free(s->ox);
  free(s->in);
  free(s->ua);
  free(s->live);
  free(s->pending);
  free(s->pa);
  if (s->acc) s->z->be->release(s->acc, (s->z->hi - s->z->lo + 1) * sizeof(float));
  free(s->trace);
  memset(s, 0, sizeof(*s));
}

void zt_zero3_set_training(zt_zero3 *s, int training) {
  s->tracing = training;
  if (!training) return;
  s->pos = 0;
  if (!s->trace_ok && !s->recording) {
    s->recording = 1;
    s->trace_n = 0;
  }
}

/* Elements fetched between the current trace position and the next use of u, or SIZE_MAX if none. */
static size_t reuse_distance(const zt_zero3 *s, int u) {
  size_t d = 0;
  for (int j = s->pos; j < s->trace_n; j++) {
    if (s->trace[j] == u) return d;
    d += usize(s, s->trace[j]);
  }
  return (size_t)-1;
}

/* Makes room for `need` more live elements by releasing units not in use (those used last first). */
static void make_room(zt_zero3 *s, size_t need) {
  while (s->live_elems + need > s->cfg.max_live) {
    int victim = -1;
    size_t far = 0;
    for (int u = 0; u < s->nunits; u++) {
      if (!s->live[u] || s->in_use[u]) continue;
      const size_t d = s->tracing && s->trace_ok ? reuse_distance(s, u) : (size_t)-1;
      if (victim < 0 || d > far) victim = u, far = d;
    }
    if (victim < 0) return; /* everything live is in use */
    drop_unit(s, victim);
  }
}

void zt_zero3_fetch(zt_zero3 *s, int u) {
  zt_check(u >= 0 && u < s->nunits, "internal error", "ZeRO-3 fetch of unit %d of %d", u, s->nunits);
  s->in_use[u] = 1;
  int follow = 0; /* the trace says what comes next */
  if (s->tracing && s->recording) {
    if (s->trace_n == s->trace_cap) {
      s->trace_cap = s->trace_cap ? 2 * s->trace_cap : 64;
      int *t = realloc(s->trace, (size_t)s->trace_cap * sizeof(int));
      zt_check(t != NULL, "out of memory", "ZeRO-3 trace of %d units", s->trace_cap);
      s->trace = t;
    }
    s->trace[s->trace_n++] = u;
  } else if (s->tracing && s->trace_ok) {
    if (s->pos < s->trace_n && s->trace[s->pos] == u) {
      s->pos++;
      follow = 1;
    } else { /* the order changed: no prefetching until a new trace is recorded next iteration */
      s->trace_ok = 0;
    }
  }
  if (s->z->dp_size == 1) { /* everything is this rank's: only an offloaded piece has to come in */
    piece_in(s, u);
    return;
  }
  int *group = zt_malloc((size_t)s->nunits * sizeof(int), "ZeRO-3 fetch group");
  int n = 0;
  size_t elems = 0;
  if (!s->live[u]) group[n++] = u, elems = usize(s, u);
  for (int j = s->pos; follow && j < s->trace_n; j++) {
    const int v = s->trace[j];
    int dup = s->live[v];
    for (int i = 0; i < n && !dup; i++) dup = group[i] == v;
    if (dup) continue;
    if (elems + usize(s, v) > s->cfg.prefetch_bucket || s->live_elems + elems + usize(s, v) > s->cfg.max_live) break;
    group[n++] = v;
    elems += usize(s, v);
  }
  if (n > 0) {
    make_room(s, elems);
    for (int i = 1; i < n; i++) /* ascending unit order: the packing is the same on every rank */
      for (int k = i; k > 0 && group[k] < group[k - 1]; k--) {
        const int t = group[k];
        group[k] = group[k - 1];
        group[k - 1] = t;
      }
    gather_units(s, group, n);
  }
  free(group);
}

void zt_zero3_release(zt_zero3 *s, int u) {
  s->in_use[u] = 0;
  if (s->z->dp_size == 1) {
    piece_out(s, u, 0);
    return;
  }
  if (s->tracing && s->trace_ok && s->live_elems <= s->cfg.max_live) {
    const size_t d = reuse_distance(s, u);
    if (d != (size_t)-1 && d <= s->cfg.max_reuse) return; /* used again soon: keep it */
  }
  drop_unit(s, u);
}

void zt_zero3_gather_all(zt_zero3 *s) {
  if (s->z->dp_size == 1) {
    zt_zero3_partition_in(s);
    return;
  }
  int *all = zt_malloc((size_t)s->nunits * sizeof(int), "ZeRO-3 units");
  int n = 0;
  for (int u = 0; u < s->nunits; u++)
    if (!s->live[u]) all[n++] = u;
  gather_units(s, all, n);
  free(all);
}

void zt_zero3_release_all(zt_zero3 *s) {
  if (s->z->dp_size == 1) {
    zt_zero3_partition_out(s, 0);
    return;
  }
  for (int u = 0; u < s->nunits; u++)
    if (!s->in_use[u]) drop_unit(s, u);
}

void zt_zero3_grad_ready(zt_zero3 *s, int u) {
  const size_t n = usize(s, u);
  const zt_backend *be = s->z->be;
  float *g = s->grads + s->ua[u];
  if (s->cfg.grad_round != ZT_DTYPE_FP32) s->overflow |= be->round_f32(g, g, n, s->cfg.grad_round) > 0;
  else if (s->cfg.fp16_check) s->overflow |= be->count_nonrepresentable(g, n, ZT_DTYPE_FP16) > 0;
  s->pending[s->npending++] = u;
  s->pending_elems += n;
  if (s->pending_elems >= s->cfg.reduce_bucket) zt_zero3_flush_grads(s);
}

/* Each owner's piece of each pending unit is summed into the owner (a deterministic tree reduce, in place on
 * the gradients, which are scratch afterwards), scaled and added to its partition accumulator; then the
 * units' gradients are cleared and given back. */
void zt_zero3_flush_grads(zt_zero3 *s) {
  if (s->npending == 0) return;
  const int D = s->z->dp_size, me = s->z->dp_rank;
  const zt_dtype cd = D > 1 ? s->cfg.comm_dtype : ZT_DTYPE_FP32;
  const zt_backend *be = s->z->be;
  size_t x;
  for (int i = 0; i < s->npending; i++) {
    const int u = s->pending[i];
    for (int r = 0; r < D; r++) {
      const size_t len = seg(s, s->ua[u], s->ub[u], r, &x);
      if (len == 0) continue;
      float *g = s->grads + x;
      scale(s, g, len, s->cfg.pre_scale);
      if (cd != ZT_DTYPE_FP32) be->round_f32(g, g, len, cd);
      zt_reduce_sum_f32(s->z->dp, g, len, r);
      s->reduces++;
      s->reduced_elems += len;
      if (r != me) continue;
      scale(s, g, len, s->cfg.post_scale);
      if (cd != ZT_DTYPE_FP32) be->round_f32(g, g, len, cd);
      float *acc = s->acc + (x - s->z->lo);
      be->accumulate(ZT_DTYPE_FP32, acc, g, len);
      if (s->cfg.grad_round != ZT_DTYPE_FP32) be->round_f32(acc, acc, len, s->cfg.grad_round);
    }
    give_back(s, s->grads, sizeof(float), s->ua[u], s->ub[u], 1);
  }
  s->npending = 0;
  s->pending_elems = 0;
}

int zt_zero3_take_grads(zt_zero3 *s) {
  zt_zero3_flush_grads(s);
  const int ov = s->overflow;
  s->overflow = 0;
  return ov;
}

void zt_zero3_after_step(zt_zero3 *s, int params_changed) {
  s->z->be->memset(s->acc, 0, (s->z->hi - s->z->lo) * sizeof(float));
  if (s->recording) {
    s->recording = 0;
    s->trace_ok = s->trace_n > 0;
  }
  s->tracing = 0;
  zt_zero3_partition_out(s, params_changed);
  zt_zero3_release_all(s); /* every gathered copy is stale (after a skipped step: its piece went out) */
  if (params_changed) gather_ranges(s, s->pa, s->pb, s->npersist);
}

/* Elements of [a, b) that are persistent. */
static size_t persistent_in(const zt_zero3 *s, size_t a, size_t b) {
  size_t n = 0;
  for (int k = 0; k < s->npersist; k++) {
    const size_t x = max_sz(s->pa[k], a), y = min_sz(s->pb[k], b);
    if (y > x) n += y - x;
  }
  return n;
}

size_t zt_zero3_resident(const zt_zero3 *s) {
  size_t n = s->z->hi - s->z->lo + s->persist_elems - persistent_in(s, s->z->lo, s->z->hi);
  for (int u = 0; u < s->nunits; u++)
    if (swapped(s, u)) n -= s->olen[u] - persistent_in(s, s->ox[u], s->ox[u] + s->olen[u]);
  return n;
}
