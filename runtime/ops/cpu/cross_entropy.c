/* Fused softmax + cross-entropy: the probabilities are never stored; backward recomputes them from
 * the logits and the saved log-sum-exp and writes the gradient in place of the logits. The vocab-parallel
 * pieces compute the same on one tensor-parallel rank's columns, around the all-reduces the model does. */
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
