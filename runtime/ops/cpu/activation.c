/* The elementwise activations of runtime/ops/ops.h (zt_act_kind): the tanh-approximated GELU of gelu.c, the exact
 * erf GELU of torch.nn.functional.gelu (BERT's LM head, the MLP without bias-gelu fusion), tanh (BERT's pooler) and
 * the squared ReLU (--squared-relu). The erf form and tanh use glibc's
 * erff, expf and tanhf (scalar calls, within 1-2 ulp), written in PyTorch's expression order
 * (aten/src/ATen/native/cpu/GeluKernel.cpp, the scalar path; tanh_backward is dy * (1 - y * y)). */
#include <math.h>

#include "runtime/base/error.h"
#include "runtime/ops/ops.h"

#define SQRT1_2 0.70710678118654752440f    /* 1 / sqrt(2): erf's argument scale */
#define INV_SQRT_2PI 0.39894228040143267794f /* 1 / sqrt(2 pi): the normal density's constant */

const char *zt_act_name(zt_act_kind k) {
  switch (k) {
    case ZT_ACT_GELU_TANH: return "gelu_tanh";
    case ZT_ACT_GELU_ERF: return "gelu_erf";
    case ZT_ACT_TANH: return "tanh";
    case ZT_ACT_SQUARED_RELU: return "squared_relu";
  }
  return "unknown";
}

static void unknown(const char *op, zt_act_kind k) {
  zt_fatal(op, "unknown activation kind %d (ZT_ACT_GELU_TANH = 0, ZT_ACT_GELU_ERF = 1, ZT_ACT_TANH = 2, "
           "ZT_ACT_SQUARED_RELU = 3)", (int)k);
}

void zt_act_forward(zt_act_kind k, float *out, const float *inp, size_t n) {
  switch (k) {
    case ZT_ACT_GELU_TANH:
      zt_gelu_forward(out, inp, n);
      return;
    case ZT_ACT_GELU_ERF:
      #pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        out[i] = x * 0.5f * (1.0f + erff(x * SQRT1_2));
      }
      return;
    case ZT_ACT_TANH:
      #pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) out[i] = tanhf(inp[i]);
      return;
    case ZT_ACT_SQUARED_RELU:
      #pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        out[i] = x > 0.0f ? x * x : 0.0f;
      }
      return;
  }
  unknown("zt_act_forward", k);
}

void zt_act_backward(zt_act_kind k, float *dinp, const float *inp, const float *dout, size_t n) {
  switch (k) {
    case ZT_ACT_GELU_TANH:
      zt_gelu_backward(dinp, inp, dout, n);
      return;
    case ZT_ACT_GELU_ERF:
      #pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float cdf = 0.5f * (1.0f + erff(x * SQRT1_2));
        const float pdf = INV_SQRT_2PI * expf(x * x * -0.5f);
        dinp[i] = dout[i] * (cdf + x * pdf);
      }
      return;
    case ZT_ACT_TANH:
      #pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) {
        const float t = tanhf(inp[i]);
        dinp[i] = dout[i] * (1.0f - t * t);
      }
      return;
    case ZT_ACT_SQUARED_RELU:
      #pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        dinp[i] = x > 0.0f ? dout[i] * (2.0f * x) : 0.0f;
      }
      return;
  }
  unknown("zt_act_backward", k);
}
