/* Knowledge distillation's term (see kd.h). */
#include "models/transformer/kd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "runtime/base/error.h"

static int host_fp32(const zt_backend *be, zt_dtype dt) { return be->host_visible && dt == ZT_DTYPE_FP32; }

size_t zt_kd_bytes(const zt_backend *be, zt_dtype dt, size_t nv) {
  if (host_fp32(be, dt)) return nv * sizeof(float);
  return nv * (3 * sizeof(float) + 2 * zt_dtype_size(dt));
}

static void reserve(zt_kd_state *k, const zt_backend *be, zt_dtype dt, size_t n) {
  if (n <= k->cap && k->be == be) return;
  zt_kd_free(k);
  k->be = be;
  k->cap = n;
  k->grad = zt_malloc(n * sizeof(float), "KD gradient");
  if (!host_fp32(be, dt)) {
    k->hs = zt_malloc(n * sizeof(float), "KD student logits");
    k->ht = zt_malloc(n * sizeof(float), "KD teacher logits");
    k->raw = zt_malloc(n * zt_dtype_size(dt), "KD staging");
    k->dev_bytes = n * zt_dtype_size(dt);
    k->dev = be->alloc(k->dev_bytes, "KD gradient on the device");
  }
}

static const float *to_f32(zt_kd_state *k, zt_dtype dt, const void *src, float *dst, size_t n) {
  if (host_fp32(k->be, dt)) return src;
  k->be->to_host(k->raw, src, n * zt_dtype_size(dt));
  zt_convert(dst, ZT_DTYPE_FP32, k->raw, dt, n);
  return dst;
}

float zt_kd_forward(zt_kd_state *k, const zt_backend *be, zt_dtype dt, const void *student, const void *teacher,
                    int B, int N, int V) {
  const size_t n = (size_t)N * V;
  reserve(k, be, dt, n);
  k->n = n;
  k->active = 1;
  const float *s = to_f32(k, dt, student, k->hs, n), *t = to_f32(k, dt, teacher, k->ht, n);
  const double T = k->cfg.temp, beta = k->cfg.beta;
  /* d kd / d s_v = beta T^2 (q_v - p_v) / T / (B seq) with q = softmax(s/T), p = softmax(t/T) */
  const double denom = (double)B * k->cfg.seq_length, gcoef = beta * T / denom;
  double kl = 0.0;
#pragma omp parallel for reduction(+ : kl) schedule(static)
  for (int r = 0; r < N; r++) {
    const float *sr = s + (size_t)r * V, *tr = t + (size_t)r * V;
    double ms = -INFINITY, mt = -INFINITY;
    for (int v = 0; v < V; v++) {
      if (sr[v] / T > ms) ms = sr[v] / T;
      if (tr[v] / T > mt) mt = tr[v] / T;
    }
    double zs = 0.0, zt = 0.0;
    for (int v = 0; v < V; v++) {
      zs += exp(sr[v] / T - ms);
      zt += exp(tr[v] / T - mt);
    }
    const double lzs = ms + log(zs), lzt = mt + log(zt);
    double row = 0.0;
    float *g = k->grad + (size_t)r * V;
    for (int v = 0; v < V; v++) {
      const double logq = sr[v] / T - lzs, logp = tr[v] / T - lzt, p = exp(logp);
      if (p > 0) row += p * (logp - logq); /* KLDivLoss: target x (log target - input), 0 where target is 0 */
      g[v] = (float)(gcoef * (exp(logq) - p));
    }
    kl += row;
  }
  return (float)(beta * T * T * kl / denom);
}

void zt_kd_backward(zt_kd_state *k, zt_dtype dt, void *dlogits, float grad_scale) {
  if (!k->active) return;
  const size_t n = k->n;
  if (host_fp32(k->be, dt)) {
    float *d = dlogits;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) d[i] += grad_scale * k->grad[i];
  } else {
    for (size_t i = 0; i < n; i++) k->hs[i] = grad_scale * k->grad[i];
    zt_convert(k->raw, dt, k->hs, ZT_DTYPE_FP32, n);
    k->be->from_host(k->dev, k->raw, n * zt_dtype_size(dt));
    k->be->accumulate(dt, dlogits, k->dev, n);
  }
  k->active = 0;
}

void zt_kd_free(zt_kd_state *k) {
  free(k->grad);
  free(k->hs);
  free(k->ht);
  free(k->raw);
  if (k->dev) k->be->release(k->dev, k->dev_bytes);
  k->grad = k->hs = k->ht = NULL;
  k->raw = k->dev = NULL;
  k->cap = 0;
}
