/* Adam(W) and SGD on contiguous parameter ranges; one pass reads p, g, m, v and writes p, m, v and a
 * zeroed g (32 bytes per parameter: the step is memory-bound, so nothing else touches the data).
 * Lamb (DeepSpeed FusedLamb) needs two passes per parameter tensor: moments and the norms of p and of
 * the update, then the update scaled by the clamped trust ratio. */
#include "runtime/optim/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

void zt_optimizer_init(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state) {
  memset(o, 0, sizeof(*o));
  o->cfg = *cfg;
  o->table = table;
  o->m = state;
  o->v = state + table->numel;
  o->lo = 0;
  o->hi = o->n = table->numel;
}

void zt_optimizer_init_range(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state,
                             size_t lo, size_t hi) {
  zt_check(lo <= hi && hi <= table->numel, "internal error", "optimizer range [%zu, %zu) outside %zu parameters",
           lo, hi, table->numel);
  zt_check(cfg->kind != ZT_OPT_LAMB || (lo == 0 && hi == table->numel), "unsupported configuration",
           "Lamb's trust ratio needs whole parameter tensors: it cannot run on a ZeRO partition (use Adam/AdamW, "
           "or zero_optimization.stage 0)");
  memset(o, 0, sizeof(*o));
  o->cfg = *cfg;
  o->table = table;
  o->m = state; /* NULL when the state lives elsewhere (NVMe offload: runtime/zero/swap.c) */
  o->v = state ? state + (hi - lo) : NULL;
  o->lo = lo;
  o->hi = hi;
  o->n = hi - lo;
}

void zt_optimizer_init_ranges(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state,
                              size_t lo, size_t hi, size_t lo2, size_t hi2, size_t off2) {
  zt_check(hi <= lo2 && lo2 <= hi2 && hi2 <= table->numel && off2 >= hi - lo, "internal error", "optimizer ranges "
           "[%zu, %zu) and [%zu, %zu) (state from %zu) in %zu parameters", lo, hi, lo2, hi2, off2, table->numel);
  zt_optimizer_init_range(o, cfg, table, NULL, lo, hi);
  o->lo2 = lo2, o->hi2 = hi2, o->off2 = off2;
  o->n = off2 + (hi2 - lo2);
  o->m = state;
  o->v = state ? state + o->n : NULL;
}

size_t zt_optimizer_index(const zt_optimizer *o, size_t x) {
  if (x >= o->lo && x < o->hi) return x - o->lo;
  zt_check(x >= o->lo2 && x < o->hi2, "internal error", "optimizer: element %zu outside its ranges", x);
  return o->off2 + (x - o->lo2);
}

double zt_grad_global_norm(const float *grads, size_t n) {
  /* 256 fixed blocks, each summed in 4096-element float runs accumulated in double, then added in
   * block order: the same bits for any thread count */
  enum { BLOCKS = 256, RUN = 4096 };
  double partial[BLOCKS];
  const size_t per = (n + BLOCKS - 1) / BLOCKS;
  #pragma omp parallel for schedule(static)
  for (int b = 0; b < BLOCKS; b++) {
    size_t lo = (size_t)b * per, hi = lo + per < n ? lo + per : n;
    double acc = 0.0;
    for (size_t r = lo; r < hi; r += RUN) {
      size_t e = r + RUN < hi ? r + RUN : hi;
      float s = 0.0f;
      #pragma omp simd reduction(+ : s)
      for (size_t i = r; i < e; i++) s += grads[i] * grads[i];
      acc += s;
    }
    partial[b] = acc;
  }
  double total = 0.0;
  for (int b = 0; b < BLOCKS; b++) total += partial[b];
  return sqrt(total);
}

/* update = m_hat / (sqrt(v_hat) + eps) (+ wd p in AdamW mode) with the bias corrections folded into
 * two scalars, as torch.optim.AdamW does: one divide and one sqrt per element. Divides dominated the
 * step before (3 per element: 264 ms for 124M parameters on 2 cores against a 140 ms memory bound). */
/* One element of Adam: ADAMW is a compile-time constant in each of the two loops below, so the loops carry
 * no branch (a branch on the mode inside the loop cost 1.7-2.7x: bench/cpu_adam.sh). */
#define ADAM_ELEMENT(ADAMW)                                                     \
  do {                                                                          \
    float grad = g[i] * gs;                                                     \
    if (!(ADAMW)) grad += wd * p[i];                                            \
    float mi = b1 * m[i] + (1.0f - b1) * grad;                                  \
    float vi = b2 * v[i] + (1.0f - b2) * grad * grad;                           \
    m[i] = mi;                                                                  \
    v[i] = vi;                                                                  \
    float update = (mi * inv_bc1) / (sqrtf(vi) * inv_sqrt_bc2 + eps);           \
    if (ADAMW) update += wd * p[i];                                             \
    p[i] -= lr * update;                                                        \
    g[i] = 0.0f;                                                                \
  } while (0)

static void adam_range(float *p, float *g, float *m, float *v, size_t n, float lr, float b1, float b2, float eps,
                       float wd, int adam_w, float inv_bc1, float inv_sqrt_bc2, float gs) {
  if (adam_w) {
    #pragma omp parallel for simd schedule(static) if (n > 32768)
    for (size_t i = 0; i < n; i++) ADAM_ELEMENT(1);
  } else {
    #pragma omp parallel for simd schedule(static) if (n > 32768)
    for (size_t i = 0; i < n; i++) ADAM_ELEMENT(0);
  }
}
#undef ADAM_ELEMENT

static void sgd_range(float *p, float *g, float *buf, size_t n, float lr, float mom, float wd, int first, float gs) {
  /* torch.optim.SGD: d = g + wd p; buf = first ? d : mom buf + d; p -= lr buf */
  #pragma omp parallel for simd schedule(static) if (n > 32768)
  for (size_t i = 0; i < n; i++) {
    float d = g[i] * gs + wd * p[i];
    float b = mom != 0.0f ? (first ? d : mom * buf[i] + d) : d;
    buf[i] = b;
    p[i] -= lr * b;
    g[i] = 0.0f;
  }
}

void zt_opt_config_lamb_defaults(zt_opt_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->kind = ZT_OPT_LAMB;
  cfg->beta1 = 0.9f;
  cfg->beta2 = 0.999f;
  cfg->eps = 1e-8f;
  cfg->weight_decay = 0.0f;
  cfg->max_coeff = 10.0f;
  cfg->min_coeff = 0.01f;
  cfg->bias_correction = 1;
}

/* FusedLamb on one tensor (csrc/lamb/fused_lamb_cuda_kernel.cu): part 1 updates m, v and sums p^2 and
 * u^2 with u = m_hat / denom + wd p (p before the update); the trust ratio ||p|| / ||u|| is clamped to
 * [min_coeff, max_coeff] and is 1 when either norm is 0; part 3 recomputes u from the stored moments
 * and applies p -= step * ratio * u. Sums: 256 fixed blocks in double, added in block order, so the
 * result does not depend on the thread count. Returns the applied ratio. */
typedef struct {
  float b1, b2, eps, wd, bc1, bc2, step, max_coeff, min_coeff, gs;
  int eps_inside;
} lamb_args;

static inline float lamb_update(float m, float v, float p, const lamb_args *a) {
  float mh = m / a->bc1, vh = v / a->bc2;
  float denom = a->eps_inside ? sqrtf(vh + a->eps) : sqrtf(vh) + a->eps;
  return mh / denom + a->wd * p;
}

static float lamb_range(float *p, float *g, float *m, float *v, size_t n, const lamb_args *a) {
  enum { BLOCKS = 256 };
  double pw[BLOCKS], pu[BLOCKS];
  const size_t per = (n + BLOCKS - 1) / BLOCKS;
  #pragma omp parallel for schedule(static) if (n > 32768)
  for (int b = 0; b < BLOCKS; b++) {
    size_t lo = (size_t)b * per, hi = lo + per < n ? lo + per : n;
    double sw = 0.0, su = 0.0;
    for (size_t i = lo; i < hi; i++) {
      float grad = g[i] * a->gs;
      float mi = a->b1 * m[i] + (1.0f - a->b1) * grad;
      float vi = a->b2 * v[i] + (1.0f - a->b2) * grad * grad;
      m[i] = mi;
      v[i] = vi;
      float u = lamb_update(mi, vi, p[i], a);
      su += (double)u * u;
      sw += (double)p[i] * p[i];
    }
    pw[b] = sw;
    pu[b] = su;
  }
  double w2 = 0.0, u2 = 0.0;
  for (int b = 0; b < BLOCKS; b++) { w2 += pw[b]; u2 += pu[b]; }
  float wn = (float)sqrt(w2), un = (float)sqrt(u2);
  float ratio = 1.0f;
  if (wn != 0.0f && un != 0.0f) {
    ratio = wn / un;
    if (ratio > a->max_coeff) ratio = a->max_coeff;
    if (ratio < a->min_coeff) ratio = a->min_coeff;
  }
  const float scale = a->step * ratio;
  #pragma omp parallel for simd schedule(static) if (n > 32768)
  for (size_t i = 0; i < n; i++) {
    float u = lamb_update(m[i], v[i], p[i], a);
    p[i] -= scale * u;
    g[i] = 0.0f;
  }
  return ratio;
}

static void lamb_step(zt_optimizer *o, float *params, float *grads, double lr, float grad_scale) {
  const zt_opt_config *c = &o->cfg;
  /* the kernel: 1 - std::pow(beta, step) in double, stored as float */
  float bc1 = 1.0f, bc2 = 1.0f;
  if (c->bias_correction) {
    bc1 = (float)(1.0 - pow((double)c->beta1, (double)o->step));
    bc2 = (float)(1.0 - pow((double)c->beta2, (double)o->step));
  }
  lamb_args a = {.b1 = c->beta1, .b2 = c->beta2, .eps = c->eps, .max_coeff = c->max_coeff,
                 .min_coeff = c->min_coeff, .gs = grad_scale, .eps_inside = c->eps_inside_sqrt};
  if (c->lamb_legacy) { /* moments used raw; the corrections folded into the step size */
    a.bc1 = a.bc2 = 1.0f;
    a.step = c->bias_correction ? (float)(lr * sqrt((double)bc2) / bc1) : (float)lr;
  } else {
    a.bc1 = bc1;
    a.bc2 = bc2;
    a.step = (float)lr;
  }
  for (int i = 0; i < o->table->count; i++) {
    const zt_param *pp = &o->table->params[i];
    size_t off = pp->offset;
    a.wd = pp->no_weight_decay ? 0.0f : c->weight_decay;
    float r = lamb_range(params + off, grads + off, o->m + off, o->v + off, pp->numel, &a);
    if (o->lamb_coeffs) o->lamb_coeffs[i] = r;
  }
}

void zt_optimizer_set_backend(zt_optimizer *o, const zt_backend *be) {
  if (!be || be->kind == ZT_BACKEND_CPU) return;
  zt_check(o->cfg.kind == ZT_OPT_ADAM && be->adam_step, "unsupported configuration", "the %s optimizer on %s: only "
           "Adam/AdamW has a GPU kernel so far (SGD and Lamb on GPUs land with the GPU training-speed work)",
           o->cfg.kind == ZT_OPT_SGD ? "SGD" : "Lamb", be->name);
  const zt_param_table *t = o->table;
  o->be = be;
  const size_t cap = 2 * (size_t)t->count + 2;
  o->r_off = zt_malloc(sizeof(size_t) * cap, "optimizer ranges");
  o->r_len = zt_malloc(sizeof(size_t) * cap, "optimizer ranges");
  o->r_wd = zt_malloc(2 * sizeof(float) * cap, "optimizer ranges"); /* decay mask | values */
  int n = 0;
  for (int r = 0; r < 2; r++) {
    const size_t lo = r ? o->lo2 : o->lo, hi = r ? o->hi2 : o->hi;
    for (int i = 0; i < t->count; i++) { /* the part of each parameter inside the range, indexed from its start */
      const zt_param *pp = &t->params[i];
      size_t a = pp->offset > lo ? pp->offset : lo, b = pp->offset + pp->numel < hi ? pp->offset + pp->numel : hi;
      if (a >= b) continue;
      o->r_off[n] = a - lo;
      o->r_len[n] = b - a;
      o->r_wd[n++] = pp->no_weight_decay ? 0.0f : 1.0f;
    }
    if (r == 0) o->nranges = n;
  }
  o->nranges2 = n - o->nranges;
}

void zt_optimizer_free(zt_optimizer *o) {
  free(o->r_off), free(o->r_len), free(o->r_wd);
  o->r_off = o->r_len = NULL;
  o->r_wd = NULL;
}

void zt_optimizer_step(zt_optimizer *o, float *params, float *grads, double lr, float grad_scale) {
  zt_optimizer_step2(o, params, grads, NULL, NULL, lr, grad_scale);
}

void zt_optimizer_step2(zt_optimizer *o, float *params, float *grads, float *params2, float *grads2, double lr,
                        float grad_scale) {
  const zt_opt_config *c = &o->cfg;
  zt_check(o->lo2 == o->hi2 || (params2 && grads2), "internal error", "optimizer: the second range's buffers missing");
  o->step++;
  if (c->kind == ZT_OPT_LAMB) {
    lamb_step(o, params, grads, lr, grad_scale);
    return;
  }
  float bc1 = 1.0f - powf(c->beta1, (float)o->step), bc2 = 1.0f - powf(c->beta2, (float)o->step);
  if (o->be) { /* weight decay as configured now, on the ranges whose parameters decay */
    const int all = o->nranges + o->nranges2;
    float *wd = o->r_wd + all;
    for (int r = 0; r < all; r++) wd[r] = o->r_wd[r] * c->weight_decay;
    const zt_adam_args a = {.lr = (float)lr, .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps,
                            .inv_bc1 = 1.0f / bc1, .inv_sqrt_bc2 = 1.0f / sqrtf(bc2), .grad_scale = grad_scale,
                            .adam_w_mode = c->adam_w_mode};
    o->be->adam_step(params, grads, o->m, o->v, NULL, ZT_DTYPE_FP32, o->r_off, o->r_len, wd, o->nranges, &a);
    if (o->nranges2)
      o->be->adam_step(params2, grads2, o->m + o->off2, o->v + o->off2, NULL, ZT_DTYPE_FP32, o->r_off + o->nranges,
                       o->r_len + o->nranges, wd + o->nranges, o->nranges2, &a);
    return;
  }
  for (int r = 0; r < 2; r++) {
    const size_t lo = r ? o->lo2 : o->lo, hi = r ? o->hi2 : o->hi, base = r ? o->off2 : 0;
    float *p = r ? params2 : params, *g = r ? grads2 : grads, *m = o->m + base, *v = o->v ? o->v + base : NULL;
    for (int i = 0; i < o->table->count; i++) {
      const zt_param *pp = &o->table->params[i];
      /* the part of this parameter inside the range, indexed from its start */
      size_t a = pp->offset > lo ? pp->offset : lo, b = pp->offset + pp->numel < hi ? pp->offset + pp->numel : hi;
      if (a >= b) continue;
      size_t off = a - lo, n = b - a;
      float wd = pp->no_weight_decay ? 0.0f : c->weight_decay;
      if (c->kind == ZT_OPT_ADAM)
        adam_range(p + off, g + off, m + off, v + off, n, (float)lr, c->beta1, c->beta2, c->eps, wd, c->adam_w_mode,
                   1.0f / bc1, 1.0f / sqrtf(bc2), grad_scale);
      else
        sgd_range(p + off, g + off, m + off, n, (float)lr, c->momentum, wd, o->step == 1, grad_scale);
    }
  }
}

void zt_grads_zero(float *grads, size_t n) { memset(grads, 0, n * sizeof(float)); }
