/* Inline exp and tanh for the CPU ops. glibc's expf/tanhf are scalar calls unless compiled with
 * -ffast-math, which would also change our reductions; these are written to vectorize inside `omp simd` loops,
 * which GCC 12 does only with -fno-trapping-math (with the project's flags it keeps the clamp as branches and
 * the calls scalar; measured on 2026-11-25, adding the flag left bench/sparse_attention.sh's dense softmax time
 * unchanged, so it is not set). expf: Cody-Waite range reduction and a degree-6 polynomial (about 1 ulp on the
 * clamped range [-87.3, 88.7], where results below 2^-126 are not needed by softmax or GELU). */
#ifndef ZT_VMATH_H
#define ZT_VMATH_H

#include <stdint.h>
#include <string.h>

static inline float zt_expf(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  float n = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

/* tanh(u) = 1 - 2 / (exp(2u) + 1): absolute error about 1e-7, saturating to +-1 without overflow. */
static inline float zt_tanhf(float u) { return 1.0f - 2.0f / (zt_expf(2.0f * u) + 1.0f); }

#endif
