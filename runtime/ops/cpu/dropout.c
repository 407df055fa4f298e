/* Dropout with masks recomputed from Philox in the backward pass (no mask is stored). */
#include <string.h>

#include "runtime/base/philox.h"
#include "runtime/ops/ops.h"

void zt_dropout_apply_range(float *out, const float *x, size_t n, const zt_dropout *d, uint64_t sample,
                            uint64_t first_elem) {
  if (d->p <= 0.0f) {
    if (out != x) memmove(out, x, n * sizeof(float));
    return;
  }
  uint32_t k0, k1;
  zt_philox_key(d->seed, ZT_RNG_DROPOUT, &k0, &k1);
  uint64_t stream = zt_dropout_stream(d, sample);
  float scale = 1.0f / (1.0f - d->p), p = d->p;
  uint64_t e = first_elem, end = first_elem + n;
  size_t i = 0;
  while (e < end) {
    uint64_t block = e >> 2;
    zt_philox_ctr c = {{(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)}};
    zt_philox_ctr r = zt_philox4x32(c, k0, k1);
    for (unsigned lane = (unsigned)(e & 3); lane < 4 && e < end; lane++, e++, i++)
      out[i] = zt_u32_to_uniform(r.v[lane]) >= p ? x[i] * scale : 0.0f;
  }
}

void zt_dropout_forward(float *out, const float *x, int B, size_t S, const zt_dropout *d) {
  #pragma omp parallel for schedule(static)
  for (int b = 0; b < B; b++)
    zt_dropout_apply_range(out + (size_t)b * S, x + (size_t)b * S, S, d, d->first_sample + b, 0);
}

void zt_dropout_backward(float *dx, const float *dout, int B, size_t S, const zt_dropout *d) {
  zt_dropout_forward(dx, dout, B, S, d);
}

void zt_dropout_add_forward(float *out, const float *residual, const float *x, int B, size_t S,
                            const zt_dropout *d) {
  /* Chunks of 4096 elements keep the dropped tensor in L1 before it is added. */
  #pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (size_t c0 = 0; c0 < S; c0 += 4096) {
      size_t n = S - c0 < 4096 ? S - c0 : 4096;
      size_t off = (size_t)b * S + c0;
      float tmp[4096];
      zt_dropout_apply_range(tmp, x + off, n, d, d->first_sample + b, c0);
      for (size_t i = 0; i < n; i++) out[off + i] = residual[off + i] + tmp[i];
    }
}
