/* Embedding lookup (word and position tables) and its scatter-add backward; the vocab-parallel variants
 * look up in one tensor-parallel rank's slice of the rows. */
#include <string.h>

#include "runtime/ops/ops.h"

void zt_embedding_forward(float *out, const int32_t *ids, const float *table, int N, int C,
                          int accumulate) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *src = table + (size_t)ids[n] * C;
    float *dst = out + (size_t)n * C;
    if (accumulate) {
      for (int i = 0; i < C; i++) dst[i] += src[i];
    } else {
      memcpy(dst, src, (size_t)C * sizeof(float));
    }
  }
}

void zt_embedding_backward(float *dtable, const int32_t *ids, const float *dout, int N, int C) {
  /* Split the channels over threads: each thread adds its column range for all rows in order, so
   * repeated ids are summed in a fixed order without atomics. */
  #pragma omp parallel
  {
    #pragma omp for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 64) {
      int c1 = c0 + 64 < C ? c0 + 64 : C;
      for (int n = 0; n < N; n++) {
        float *dst = dtable + (size_t)ids[n] * C;
        const float *src = dout + (size_t)n * C;
        for (int i = c0; i < c1; i++) dst[i] += src[i];
      }
    }
  }
}

void zt_embedding_forward_range(float *out, const int32_t *ids, const float *table, int N, int C, int v0, int rows) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const int r = ids[n] - v0;
    float *dst = out + (size_t)n * C;
    if (r >= 0 && r < rows) memcpy(dst, table + (size_t)r * C, (size_t)C * sizeof(float));
    else memset(dst, 0, (size_t)C * sizeof(float));
  }
}

void zt_embedding_backward_range(float *dtable, const int32_t *ids, const float *dout, int N, int C, int v0,
                                 int rows) {
  #pragma omp parallel
  {
    #pragma omp for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 64) {
      int c1 = c0 + 64 < C ? c0 + 64 : C;
      for (int n = 0; n < N; n++) {
        const int r = ids[n] - v0;
        if (r < 0 || r >= rows) continue;
        float *dst = dtable + (size_t)r * C;
        const float *src = dout + (size_t)n * C;
        for (int i = c0; i < c1; i++) dst[i] += src[i];
      }
    }
  }
}
