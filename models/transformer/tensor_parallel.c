/* Tensor-parallel regions: the gathers and reductions around column- and row-parallel linears, and dropout on
 * a sequence-parallel shard keyed by global positions. */
#include "models/transformer/tensor_parallel.h"

#include <string.h>

const float *zt_tp_gather(const zt_tp *tp, const float *x, int N, int C) {
  if (!zt_tp_sp(tp)) return x;
  zt_allgather_f32(tp->group, x, (size_t)N * C, tp->gather);
  return tp->gather;
}

float *zt_tp_partial_buffer(const zt_tp *tp, float *out) { return zt_tp_sp(tp) ? tp->partial : out; }

void zt_tp_reduce(const zt_tp *tp, float *out, const float *bias, int N, int C) {
  if (zt_tp_sp(tp)) zt_reduce_scatter_sum_f32(tp->group, tp->partial, (size_t)N * C, out);
  else if (zt_tp_on(tp)) zt_allreduce_sum_f32(tp->group, out, (size_t)N * C);
  if (!bias) return;
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float *row = out + (size_t)n * C;
    for (int c = 0; c < C; c++) row[c] += bias[c];
  }
}

void zt_tp_bias_grad(float *dbias, const float *dout, int N, int C) {
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

void zt_tp_dropout_rows(float *out, const float *residual, const float *x, int row0, int n, int T, int C,
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
