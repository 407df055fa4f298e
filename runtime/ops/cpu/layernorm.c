/* LayerNorm over the last dimension, rows in parallel; statistics in double-free fp32 two-pass form. */
#include <math.h>

#include "runtime/ops/ops.h"

void zt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C, float eps) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *x = inp + (size_t)n * C;
    float *y = out + (size_t)n * C;
    float m = 0.0f;
    #pragma omp simd reduction(+ : m)
    for (int i = 0; i < C; i++) m += x[i];
    m /= C;
    float v = 0.0f;
    #pragma omp simd reduction(+ : v)
    for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
    v /= C;
    float s = 1.0f / sqrtf(v + eps);
    #pragma omp simd
    for (int i = 0; i < C; i++) y[i] = (x[i] - m) * s * weight[i] + bias[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

void zt_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *weight, const float *mean,
                           const float *rstd, int N, int C) {
  /* dinp rows are independent; dweight/dbias are column sums done in column blocks so that every
   * column is summed over rows in order (deterministic, no atomics). */
  #pragma omp parallel
  {
    #pragma omp for schedule(static)
    for (int n = 0; n < N; n++) {
      const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
      float *dx = dinp + (size_t)n * C;
      float m = mean[n], s = rstd[n];
      float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
      #pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
      for (int i = 0; i < C; i++) {
        float xhat = (x[i] - m) * s;
        float dn = weight[i] * dy[i];
        dnorm_mean += dn;
        dnorm_norm_mean += dn * xhat;
      }
      dnorm_mean /= C;
      dnorm_norm_mean /= C;
      #pragma omp simd
      for (int i = 0; i < C; i++) {
        float xhat = (x[i] - m) * s;
        dx[i] = (weight[i] * dy[i] - dnorm_mean - xhat * dnorm_norm_mean) * s;
      }
    }
    #pragma omp for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 64) {
      int c1 = c0 + 64 < C ? c0 + 64 : C;
      float gw[64] = {0}, gb[64] = {0};
      for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        for (int i = c0; i < c1; i++) {
          gw[i - c0] += (x[i] - m) * s * dy[i];
          gb[i - c0] += dy[i];
        }
      }
      for (int i = c0; i < c1; i++) { dweight[i] += gw[i - c0]; dbias[i] += gb[i - c0]; }
    }
  }
}
