/* Knowledge distillation's term (see kd.h): the backend's kd_rows op computes every row's KL term and the gradient
 * where the logits live; only the N row losses come to the host. */
#include "models/transformer/kd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "runtime/base/error.h"

static void reserve(zt_kd_state *k, const zt_backend *be, zt_dtype dt, size_t n, int N) {
  if (n <= k->cap && (size_t)N <= k->rows_cap && k->be == be && k->dt == dt) return;
  zt_kd_free(k);
  k->be = be, k->dt = dt, k->cap = n, k->rows_cap = (size_t)N;
  k->grad = be->alloc(n * sizeof(float), "KD gradient");
  k->rows = be->alloc((size_t)N * sizeof(float), "KD row losses");
  k->h_rows = zt_malloc((size_t)N * sizeof(float), "KD row losses");
  if (dt != ZT_DTYPE_FP32) k->half = be->alloc(n * zt_dtype_size(dt), "KD gradient in the logits' type");
}

float zt_kd_forward(zt_kd_state *k, const zt_backend *be, zt_dtype dt, const void *student, const void *teacher,
                    int B, int N, int V) {
  const size_t n = (size_t)N * V;
  reserve(k, be, dt, n, N);
  k->n = n;
  k->active = 1;
  const double T = k->cfg.temp, beta = k->cfg.beta;
  /* d kd / d s_v = beta T^2 (q_v - p_v) / T / (B seq) with q = softmax(s/T), p = softmax(t/T) */
  const double denom = (double)B * k->cfg.seq_length, gcoef = beta * T / denom;
  be->kd_rows(dt, k->rows, k->grad, student, teacher, N, V, T, gcoef);
  be->to_host(k->h_rows, k->rows, (size_t)N * sizeof(float));
  double kl = 0.0;
  for (int r = 0; r < N; r++) kl += k->h_rows[r];
  return (float)(beta * T * T * kl / denom);
}

void zt_kd_backward(zt_kd_state *k, zt_dtype dt, void *dlogits, float grad_scale) {
  if (!k->active) return;
  const zt_backend *be = k->be;
  const size_t n = k->n;
  be->scale_f32(k->grad, grad_scale, n);
  if (dt == ZT_DTYPE_FP32) {
    be->accumulate(dt, dlogits, k->grad, n);
  } else {
    be->convert(k->half, dt, k->grad, ZT_DTYPE_FP32, n);
    be->accumulate(dt, dlogits, k->half, n);
  }
  k->active = 0;
}

void zt_kd_free(zt_kd_state *k) {
  if (k->grad) k->be->release(k->grad, k->cap * sizeof(float));
  if (k->rows) k->be->release(k->rows, k->rows_cap * sizeof(float));
  if (k->half) k->be->release(k->half, k->cap * zt_dtype_size(k->dt));
  free(k->h_rows);
  k->grad = k->rows = k->h_rows = NULL;
  k->half = NULL;
  k->cap = k->rows_cap = 0;
}
