/* Residual adds, gradient accumulation, a linear's bias added or reduced apart from its GEMM, and per-row weights
 * (rows scaled by a weight each, row-wise dot products: the MoE layer's combine and its gradient). */
#include "runtime/ops/ops.h"

void zt_residual_forward(float *out, const float *a, const float *b, size_t n) {
  #pragma omp parallel for simd schedule(static) if (n > 32768)
  for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void zt_accumulate(float *dst, const float *src, size_t n) {
  #pragma omp parallel for simd schedule(static) if (n > 32768)
  for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

void zt_add_bias(float *out, const float *bias, int N, int C) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float *row = out + (size_t)n * C;
    for (int c = 0; c < C; c++) row[c] += bias[c];
  }
}

void zt_bias_grad(float *dbias, const float *dout, int N, int C) {
  #pragma omp parallel for schedule(static)
  for (int c0 = 0; c0 < C; c0 += 64) {
    int c1 = c0 + 64 < C ? c0 + 64 : C;
    float acc[64] = {0};
    for (int n = 0; n < N; n++) {
      const float *row = dout + (size_t)n * C;
      for (int c = c0; c < c1; c++) acc[c - c0] += row[c];
    }
    for (int c = c0; c < c1; c++) dbias[c] += acc[c - c0];
  }
}

void zt_scale_rows(float *out, const float *x, const float *w, int N, int C) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float wn = w[n];
    const float *xr = x + (size_t)n * C;
    float *row = out + (size_t)n * C;
    for (int c = 0; c < C; c++) row[c] = wn * xr[c];
  }
}

void zt_row_dot(float *out, const float *a, const float *b, int N, int C) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *ar = a + (size_t)n * C, *br = b + (size_t)n * C;
    double s = 0.0; /* each product of two floats is exact in double; only the sum rounds */
    for (int c = 0; c < C; c++) s += (double)ar[c] * br[c];
    out[n] = (float)s;
  }
}
