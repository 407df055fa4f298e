/* The zero-bubble pipeline's store of deferred weight gradients (see wgrad_store.h). */
#include "runtime/ops/wgrad_store.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

typedef struct {
  void *p;
  size_t bytes;
} wg_buf;

/* One deferred weight gradient: dw += dout^T inp, from the copies. */
typedef struct {
  zt_dtype dt;
  void *dw;
  const void *w;
  int N, IC, OC;
  wg_buf inp, dout;
} wg_product;

/* One W: the products of one micro batch's backward, in the order the backward ran them. */
typedef struct {
  wg_product *v;
  int n, cap;
} wg_pass;

struct zt_wgrad_store {
  zt_backend be; /* the inner backend's ops, wgrad = this store */
  int defer;
  wg_pass open;  /* the backward running now */
  wg_pass *queue; /* queue[0] the oldest */
  int nq, qcap, peak_nq;
  wg_buf *free; /* copies' buffers no W holds, for reuse */
  int nfree, free_cap;
  size_t held, peak;
};

static void *grow(void *v, int *cap, int need, size_t size, const char *what) {
  if (need <= *cap) return v;
  int c = *cap ? *cap : 8;
  while (c < need) c *= 2;
  void *n = realloc(v, (size_t)c * size);
  zt_check(n != NULL, "out of memory", "%s: %zu bytes", what, (size_t)c * size);
  *cap = c;
  return n;
}

zt_wgrad_store *zt_wgrad_store_create(const zt_backend *inner) {
  zt_wgrad_store *s = zt_calloc(1, sizeof *s, "weight-gradient store");
  s->be = *inner;
  s->be.wgrad = s;
  return s;
}

const zt_backend *zt_wgrad_store_backend(zt_wgrad_store *s) { return &s->be; }

static void release_pass(zt_wgrad_store *s, wg_pass *p) {
  for (int i = 0; i < p->n; i++) {
    s->be.release(p->v[i].inp.p, p->v[i].inp.bytes);
    s->be.release(p->v[i].dout.p, p->v[i].dout.bytes);
  }
  free(p->v);
}

void zt_wgrad_store_destroy(zt_wgrad_store *s) {
  if (!s) return;
  release_pass(s, &s->open);
  for (int i = 0; i < s->nq; i++) release_pass(s, &s->queue[i]);
  for (int i = 0; i < s->nfree; i++) s->be.release(s->free[i].p, s->free[i].bytes);
  free(s->queue);
  free(s->free);
  free(s);
}

void zt_wgrad_store_defer(zt_wgrad_store *s, int defer) { s->defer = defer; }
int zt_wgrad_store_pending(const zt_wgrad_store *s) { return s->nq; }
size_t zt_wgrad_store_peak_bytes(const zt_wgrad_store *s) { return s->peak; }
int zt_wgrad_store_peak_pending(const zt_wgrad_store *s) { return s->peak_nq; }

/* A buffer of exactly `bytes` from the free list (the shapes repeat every step), else a new one. */
static wg_buf take(zt_wgrad_store *s, size_t bytes) {
  wg_buf b = {NULL, bytes};
  for (int i = 0; i < s->nfree; i++)
    if (s->free[i].bytes == bytes) {
      b = s->free[i];
      s->free[i] = s->free[--s->nfree];
      break;
    }
  if (!b.p) b.p = s->be.alloc(bytes, "a deferred weight gradient's input copy (--enable-zbh1-pipeline)");
  s->held += bytes;
  if (s->held > s->peak) s->peak = s->held;
  return b;
}

static void give(zt_wgrad_store *s, wg_buf b) {
  s->free = grow(s->free, &s->free_cap, s->nfree + 1, sizeof *s->free, "weight-gradient store");
  s->free[s->nfree++] = b;
  s->held -= b.bytes;
}

void zt_wgrad_store_flush(zt_wgrad_store *s) {
  s->queue = grow(s->queue, &s->qcap, s->nq + 1, sizeof *s->queue, "weight-gradient store");
  s->queue[s->nq++] = s->open;
  if (s->nq > s->peak_nq) s->peak_nq = s->nq;
  s->open = (wg_pass){0};
}

void zt_wgrad_store_pop(zt_wgrad_store *s) {
  zt_check(s->nq > 0, "internal error", "zero-bubble schedule: a weight pass with no deferred backward");
  wg_pass p = s->queue[0];
  memmove(s->queue, s->queue + 1, sizeof *s->queue * (size_t)(s->nq - 1));
  s->nq--;
  for (int i = 0; i < p.n; i++) {
    const wg_product *x = &p.v[i];
    s->be.matmul_backward(x->dt, NULL, x->dw, NULL, x->dout.p, x->inp.p, x->w, NULL, x->N, x->IC, x->OC);
    give(s, x->inp);
    give(s, x->dout);
  }
  free(p.v);
}

void zt_linear_backward(const zt_backend *be, zt_dtype dt, void *dinp, void *dw, void *db, void *dout, const void *inp,
                        const void *w, const void *pre_gelu, int N, int IC, int OC) {
  zt_wgrad_store *s = be->wgrad;
  if (!s || !s->defer || N == 0) {
    be->matmul_backward(dt, dinp, dw, db, dout, inp, w, pre_gelu, N, IC, OC);
    return;
  }
  /* B: the input and bias gradients, dout multiplied by the GELU's derivative in place as the whole backward does */
  be->matmul_backward(dt, dinp, NULL, db, dout, inp, w, pre_gelu, N, IC, OC);
  const size_t es = zt_dtype_size(dt);
  wg_product x = {.dt = dt, .dw = dw, .w = w, .N = N, .IC = IC, .OC = OC,
                  .inp = take(s, (size_t)N * IC * es), .dout = take(s, (size_t)N * OC * es)};
  be->copy(x.inp.p, inp, x.inp.bytes);
  be->copy(x.dout.p, dout, x.dout.bytes);
  s->open.v = grow(s->open.v, &s->open.cap, s->open.n + 1, sizeof *s->open.v, "weight-gradient store");
  s->open.v[s->open.n++] = x;
}
