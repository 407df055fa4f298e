/* Residual adds and gradient accumulation. */
#include "runtime/ops/ops.h"

void zt_residual_forward(float *out, const float *a, const float *b, size_t n) {
  #pragma omp parallel for simd schedule(static) if (n > 32768)
  for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void zt_accumulate(float *dst, const float *src, size_t n) {
  #pragma omp parallel for simd schedule(static) if (n > 32768)
  for (size_t i = 0; i < n; i++) dst[i] += src[i];
}
