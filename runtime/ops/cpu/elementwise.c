/* Residual adds, gradient accumulation, and a linear's bias added or reduced apart from its GEMM. */
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
