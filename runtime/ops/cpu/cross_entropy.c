/* Fused softmax + cross-entropy: the probabilities are never stored; backward recomputes them from
 * the logits and the saved log-sum-exp and writes the gradient in place of the logits. The vocab-parallel
 * pieces compute the same on one tensor-parallel rank's columns, around the all-reduces the model does.
 * Also knowledge distillation's KL term between two rows of logits and its gradient (zt_kd_rows). */
#include <math.h>

#include "runtime/ops/cpu/vmath.h"
#include "runtime/ops/ops.h"

void zt_cross_entropy_forward(float *losses, float *lse, const float *logits, const int32_t *targets,
                              int N, int V) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *l = logits + (size_t)n * V;
    float m = -INFINITY;
    #pragma omp simd reduction(max : m)
    for (int v = 0; v < V; v++) m = l[v] > m ? l[v] : m;
    float s = 0.0f;
    #pragma omp simd reduction(+ : s)
    for (int v = 0; v < V; v++) s += zt_expf(l[v] - m);
    lse[n] = m + logf(s);
    losses[n] = lse[n] - l[targets[n]];
  }
}

void zt_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, const float *dloss, int N, int V) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *l = logits + (size_t)n * V;
    float *d = dlogits + (size_t)n * V;
    float w = dloss[n], z = lse[n];
    #pragma omp simd
    for (int v = 0; v < V; v++) d[v] = zt_expf(l[v] - z) * w;
    d[targets[n]] -= w;
  }
}

/* ---- vocab-parallel pieces: the caller all-reduces rowmax (max), then sumexp and tlogit (sum) ---- */

void zt_cross_entropy_vp_max(float *rowmax, const float *logits, int N, int V) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *l = logits + (size_t)n * V;
    float m = -INFINITY;
    #pragma omp simd reduction(max : m)
    for (int v = 0; v < V; v++) m = l[v] > m ? l[v] : m;
    rowmax[n] = m;
  }
}

void zt_cross_entropy_vp_sums(float *sumexp, float *tlogit, const float *logits, const float *rowmax,
                              const int32_t *targets, int N, int V, int v0) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *l = logits + (size_t)n * V;
    const float m = rowmax[n];
    float s = 0.0f;
    #pragma omp simd reduction(+ : s)
    for (int v = 0; v < V; v++) s += zt_expf(l[v] - m);
    sumexp[n] = s;
    const int t = targets[n] - v0;
    tlogit[n] = t >= 0 && t < V ? l[t] : 0.0f;
  }
}

void zt_cross_entropy_vp_finish(float *losses, float *lse, const float *rowmax, const float *sumexp,
                                const float *tlogit, int N) {
  for (int n = 0; n < N; n++) {
    lse[n] = rowmax[n] + logf(sumexp[n]);
    losses[n] = lse[n] - tlogit[n];
  }
}

void zt_cross_entropy_vp_backward(float *dlogits, const float *logits, const float *lse, const int32_t *targets,
                                  const float *dloss, int N, int V, int v0) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *l = logits + (size_t)n * V;
    float *d = dlogits + (size_t)n * V;
    float w = dloss[n], z = lse[n];
    #pragma omp simd
    for (int v = 0; v < V; v++) d[v] = zt_expf(l[v] - z) * w;
    const int t = targets[n] - v0;
    if (t >= 0 && t < V) d[t] -= w;
  }
}

/* log sum exp(x[v] / T) over a row, in double */
static double row_lse(const float *x, int V, double T) {
  double m = -INFINITY, z = 0.0;
  for (int v = 0; v < V; v++)
    if (x[v] / T > m) m = x[v] / T;
  for (int v = 0; v < V; v++) z += exp(x[v] / T - m);
  return m + log(z);
}

void zt_kd_lse(float *lse, const float *s, const float *t, int N, int V, double temp) {
  #pragma omp parallel for schedule(static)
  for (int r = 0; r < N; r++) {
    lse[r] = (float)row_lse(s + (size_t)r * V, V, temp);
    lse[N + r] = (float)row_lse(t + (size_t)r * V, V, temp);
  }
}

void zt_kd_rows(float *row_loss, float *grad, const float *s, const float *t, int N, int V, double temp, double gcoef,
                const float *lse) {
  const double T = temp;
  #pragma omp parallel for schedule(static)
  for (int r = 0; r < N; r++) {
    const float *sr = s + (size_t)r * V, *tr = t + (size_t)r * V;
    const double lzs = lse ? lse[r] : row_lse(sr, V, T), lzt = lse ? lse[N + r] : row_lse(tr, V, T);
    double row = 0.0;
    float *g = grad + (size_t)r * V;
    for (int v = 0; v < V; v++) {
      const double logq = sr[v] / T - lzs, logp = tr[v] / T - lzt, p = exp(logp);
      if (p > 0) row += p * (logp - logq); /* KLDivLoss: target x (log target - input), 0 where target is 0 */
      g[v] = (float)(gcoef * (exp(logq) - p));
    }
    row_loss[r] = (float)row;
  }
}
