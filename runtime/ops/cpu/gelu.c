/* GELU with the tanh approximation used by GPT-2 and Megatron (openai-gelu / bias-gelu). */
#include <math.h>

#include "runtime/ops/cpu/vmath.h"
#include "runtime/ops/ops.h"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void zt_gelu_forward(float *out, const float *inp, size_t n) {
  #pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + zt_tanhf(GELU_K * (x + 0.044715f * x * x * x)));
  }
}

void zt_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
  #pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    float u = GELU_K * (x + 0.044715f * x * x * x);
    float t = zt_tanhf(u);
    float sech2 = 1.0f - t * t;
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * x * sech2 * du);
  }
}
