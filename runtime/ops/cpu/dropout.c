/* Dropout with masks recomputed from Philox in the backward pass (no mask is stored). */
#include <math.h>
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
  const uint64_t stream = zt_dropout_stream(d, sample);
  const uint32_t s0 = (uint32_t)stream, s1 = (uint32_t)(stream >> 32);
  /* keep <=> uniform = (bits >> 8) * 2^-24 >= p <=> (bits >> 8) >= ceil(p * 2^24), exactly */
  const uint32_t threshold = (uint32_t)ceilf(d->p * 16777216.0f);
  const float scale = 1.0f / (1.0f - d->p);
  /* Philox blocks cover elements [4k, 4k+4); draw 64 blocks at a time in a vectorizable loop */
  enum { BLOCKS = 64 };
  uint32_t bits[4 * BLOCKS];
  uint64_t e = first_elem;
  const uint64_t end = first_elem + n;
  size_t i = 0;
  while (e < end) {
    const uint64_t block0 = e >> 2;
    #pragma omp simd
    for (int j = 0; j < BLOCKS; j++) {
      uint64_t b = block0 + (uint64_t)j;
      zt_philox_ctr c = {{(uint32_t)b, (uint32_t)(b >> 32), s0, s1}};
      zt_philox_ctr r = zt_philox4x32(c, k0, k1);
      bits[4 * j] = r.v[0];
      bits[4 * j + 1] = r.v[1];
      bits[4 * j + 2] = r.v[2];
      bits[4 * j + 3] = r.v[3];
    }
    const size_t lane0 = (size_t)(e & 3);
    size_t take = 4 * BLOCKS - lane0;
    if (take > end - e) take = (size_t)(end - e);
    const uint32_t *bb = bits + lane0;
    #pragma omp simd
    for (size_t t = 0; t < take; t++) out[i + t] = (bb[t] >> 8) >= threshold ? x[i + t] * scale : 0.0f;
    i += take;
    e += take;
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

void zt_dropout_rows(float *out, const float *residual, const float *x, int row0, int n, int T, int C,
                     const zt_dropout *d) {
  if (n <= 0) return;
  const int b0 = row0 / T, b1 = (row0 + n - 1) / T;
  /* per sample, the span of its tokens in [row0, row0 + n), in chunks of 4096 elements */
  #pragma omp parallel for schedule(static)
  for (int b = b0; b <= b1; b++) {
    const int t0 = (b == b0 ? row0 - b * T : 0), t1 = (b == b1 ? row0 + n - b * T : T);
    const size_t first = (size_t)t0 * C, len = (size_t)(t1 - t0) * C;
    const size_t off = ((size_t)b * T + t0 - row0) * C;
    for (size_t c0 = 0; c0 < len; c0 += 4096) {
      const size_t m = len - c0 < 4096 ? len - c0 : 4096;
      if (!residual) {
        zt_dropout_apply_range(out + off + c0, x + off + c0, m, d, d->first_sample + (uint64_t)b, first + c0);
        continue;
      }
      float tmp[4096];
      zt_dropout_apply_range(tmp, x + off + c0, m, d, d->first_sample + (uint64_t)b, first + c0);
      for (size_t i = 0; i < m; i++) out[off + c0 + i] = residual[off + c0 + i] + tmp[i];
    }
  }
}
