/* Knowledge distillation's term (see kd.h): the backend's kd_rows op computes every row's KL term and the gradient
 * where the logits live; only the N row losses come to the host (with tensor parallelism also the 2N log-sum-exps of
 * each rank's vocabulary slice, all-gathered over the group). */
#include "models/transformer/kd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "runtime/base/error.h"
#include "runtime/comm/comm.h"

static void reserve(zt_kd_state *k, const zt_backend *be, zt_dtype dt, size_t n, int N, int tp) {
  if (n <= k->cap && (size_t)N <= k->rows_cap && k->be == be && k->dt == dt && (tp == 1 || k->lse)) return;
  zt_kd_free(k);
  k->be = be, k->dt = dt, k->cap = n, k->rows_cap = (size_t)N;
  k->grad = be->alloc(n * sizeof(float), "KD gradient");
  k->rows = be->alloc((size_t)N * sizeof(float), "KD row losses");
  k->h_rows = zt_malloc((size_t)N * sizeof(float), "KD row losses");
  if (tp > 1) {
    k->lse = be->alloc(2 * (size_t)N * sizeof(float), "KD log-sum-exps");
    k->h_lse = zt_malloc(2 * (size_t)N * sizeof(float), "KD log-sum-exps");
    k->h_all = zt_malloc((size_t)tp * 2 * N * sizeof(float), "KD log-sum-exps of the tensor-parallel ranks");
  }
  if (dt != ZT_DTYPE_FP32) k->half = be->alloc(n * zt_dtype_size(dt), "KD gradient in the logits' type");
}

float zt_kd_forward(zt_kd_state *k, const zt_backend *be, zt_dtype dt, const void *student, const void *teacher,
                    int B, int N, int V, const zt_tp *tp) {
  const size_t n = (size_t)N * V;
  const int P = zt_tp_on(tp) ? tp->size : 1;
  reserve(k, be, dt, n, N, P);
  k->n = n;
  k->active = 1;
  const double T = k->cfg.temp, beta = k->cfg.beta;
  /* d kd / d s_v = beta T^2 (q_v - p_v) / T / (B seq) with q = softmax(s/T), p = softmax(t/T) */
  const double denom = (double)B * k->cfg.seq_length, gcoef = beta * T / denom;
  const float *lse = NULL;
  if (P > 1) { /* the whole vocabulary's log-sum-exps: log sum over the ranks of exp(each slice's) */
    be->kd_lse(dt, k->lse, student, teacher, N, V, T);
    be->to_host(k->h_lse, k->lse, 2 * (size_t)N * sizeof(float));
    zt_allgather_f32(tp->group, k->h_lse, 2 * (size_t)N, k->h_all);
    for (size_t i = 0; i < 2 * (size_t)N; i++) {
      double m = -INFINITY, z = 0.0;
      for (int j = 0; j < P; j++) m = fmax(m, k->h_all[(size_t)j * 2 * N + i]);
      for (int j = 0; j < P; j++) z += exp(k->h_all[(size_t)j * 2 * N + i] - m);
      k->h_lse[i] = (float)(m + log(z));
    }
    be->from_host(k->lse, k->h_lse, 2 * (size_t)N * sizeof(float));
    lse = k->lse;
  }
  be->kd_rows(dt, k->rows, k->grad, student, teacher, N, V, T, gcoef, lse);
  be->to_host(k->h_rows, k->rows, (size_t)N * sizeof(float));
  double kl = 0.0;
  for (int r = 0; r < N; r++) kl += k->h_rows[r];
  if (P > 1) zt_allreduce_sum_f64(tp->group, &kl, 1);
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
  if (k->lse) k->be->release(k->lse, 2 * k->rows_cap * sizeof(float));
  free(k->h_rows), free(k->h_lse), free(k->h_all);
  k->grad = k->rows = k->h_rows = k->lse = k->h_lse = k->h_all = NULL;
  k->half = NULL;
  k->cap = k->rows_cap = 0;
}
