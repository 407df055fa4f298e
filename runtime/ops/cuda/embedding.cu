// Embedding lookup on the GPU and its deterministic scatter-add backward, for the full table and for one
// vocab-parallel rank's slice of rows [v0, v0 + rows) (runtime/ops/cpu/embedding.c). The full-table calls are the
// slice calls with v0 = 0 and rows = INT_MAX, so a negative id reads zeros (forward) or is skipped (backward)
// where the CPU would index out of bounds; ids at or past the table's end are not caught (V is not passed).
//
// Forward: block (row n, tile of 256 columns), one element per thread; reads the table row and writes out[n]
// once (coalesced along the row).
// Backward: dtable[ids[n], :] += dout[n, :] with repeated ids summed in token order, without atomics, so the
// result is the same every run, and for fp32 bit for bit the CPU's:
//  1. embedding_keys_kernel: key[n] = ids[n] - v0, or `rows` (sorts last, skipped) outside the slice; pos[n] = n;
//  2. cub::DeviceRadixSort::SortPairs on (key, pos) over the bits of `rows`: stable, so equal keys keep token
//     order; this groups the tokens of each row into a run;
//  3. embedding_backward_kernel: block (sorted position i, tile of 256 columns); the block whose i starts a run
//     (keys[i - 1] != keys[i]) walks the run and adds the dout rows of its tokens, in order, to an fp32
//     accumulator started from dtable's value, then stores it: each (row, column) of dtable has exactly one
//     writer. The walk loads eight tokens' values at a time (independent loads) before adding them in order,
//     so a frequent token (a run of thousands) costs one memory latency per eight tokens. The other blocks exit
//     at once. Traffic: dout read once, the touched dtable rows read and written once, plus the sort (16 bytes
//     per token a pass). The parallelism is (distinct ids) x C, against C alone for one thread per column.
// The sort's buffers live in a scratch buffer kept between calls, grown as needed.
#include <limits.h>

#include <cub/device/device_radix_sort.cuh>

#include "runtime/ops/cuda/common.cuh"

static const int kColumns = 256;  // columns per block

static unsigned column_threads(int C) { return (unsigned)(C >= kColumns ? kColumns : (C + 31) / 32 * 32); }

// out[n, :] = table[ids[n] - v0, :] (+= when accumulate) for ids inside the slice, else 0 (unchanged when accumulate).
template <typename T>
__global__ void embedding_forward_kernel(T *out, const int32_t *ids, const T *table, int C, int accumulate, int v0,
                                         int rows) {
  const int n = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const long long r = (long long)ids[n] - v0;
  const size_t o = (size_t)n * C + c;
  float v = r >= 0 && r < rows ? zt_ld(table, (size_t)r * C + c) : 0.0f;
  if (accumulate) v += zt_ld(out, o);
  zt_st(out, o, v);
}

__global__ void embedding_keys_kernel(uint32_t *keys, int32_t *pos, const int32_t *ids, int N, int v0, int rows) {
  for (int n = blockIdx.x * blockDim.x + threadIdx.x; n < N; n += gridDim.x * blockDim.x) {
    const long long r = (long long)ids[n] - v0;
    keys[n] = r >= 0 && r < rows ? (uint32_t)r : (uint32_t)rows;
    pos[n] = n;
  }
}

// dtable[key, c] += dout[pos[j], c] over the run of sorted positions j starting at blockIdx.x, in order.
template <typename T>
__global__ void embedding_backward_kernel(T *dtable, const uint32_t *keys, const int32_t *pos, const T *dout, int N,
                                          int C, int rows) {
  const int i = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;
  const uint32_t key = keys[i];
  if (c >= C || key == (uint32_t)rows || (i > 0 && keys[i - 1] == key)) return;
  const size_t o = (size_t)key * C + c;
  float acc = zt_ld(dtable, o);
  for (int j = i;; j += 8) {
    float g[8];
    int m = 0;  // positions j .. j+m-1 are in the run (a prefix: the keys are sorted)
#pragma unroll
    for (int u = 0; u < 8; u++) {
      const bool in_run = j + u < N && keys[j + u] == key;
      g[u] = in_run ? zt_ld(dout, (size_t)pos[j + u] * C + c) : 0.0f;
      m += in_run;
    }
#pragma unroll
    for (int u = 0; u < 8; u++)
      if (u < m) acc += g[u];
    if (m < 8) break;
  }
  zt_st(dtable, o, acc);
}

// A byte scratch kept between calls and grown when a call needs more (the free is stream-ordered).
static char *sort_scratch(size_t bytes) {
  static char *buf;
  static size_t cap;
  if (bytes > cap) {
    zt_cuda_free(buf);
    buf = (char *)zt_cuda_malloc(bytes, "embedding backward sort");
    cap = bytes;
  }
  return buf;
}

static void check_shape(const char *op, int N, int C, int rows) {
  zt_check(N >= 0 && C > 0 && C <= 65535 * kColumns && rows >= 0, op,
           "N=%d tokens, C=%d channels, rows=%d: need N >= 0, 0 < C <= %d, rows >= 0", N, C, rows, 65535 * kColumns);
}

static void embedding_forward(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C,
                              int accumulate, int v0, int rows) {
  if (N == 0) return;
  const unsigned threads = column_threads(C);
  const dim3 grid(N, (C + threads - 1) / threads);
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    embedding_forward_kernel<T><<<grid, threads, 0, zt_stream()>>>((T *)out, ids, (const T *)table, C, accumulate,
                                                                  v0, rows);
    ZT_CUDA_LAUNCHED();
  });
}

static size_t align256(size_t b) { return (b + 255) / 256 * 256; }

static void embedding_backward(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C, int v0,
                               int rows) {
  if (N == 0 || rows == 0) return;
  const int end_bit = 32 - __builtin_clz((unsigned)rows);  // the keys are 0 .. rows
  const size_t arr = align256((size_t)N * 4);
  size_t sort_bytes = 0;
  ZT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, (const uint32_t *)NULL, (uint32_t *)NULL,
                                                (const int32_t *)NULL, (int32_t *)NULL, N, 0, end_bit, zt_stream()));
  char *s = sort_scratch(4 * arr + sort_bytes);
  uint32_t *keys_in = (uint32_t *)s, *keys = (uint32_t *)(s + arr);
  int32_t *pos_in = (int32_t *)(s + 2 * arr), *pos = (int32_t *)(s + 3 * arr);
  embedding_keys_kernel<<<zt_blocks(N, 256), 256, 0, zt_stream()>>>(keys_in, pos_in, ids, N, v0, rows);
  ZT_CUDA_LAUNCHED();
  ZT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s + 4 * arr, sort_bytes, keys_in, keys, pos_in, pos, N, 0, end_bit,
                                                zt_stream()));
  const unsigned threads = column_threads(C);
  const dim3 grid(N, (C + threads - 1) / threads);
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    embedding_backward_kernel<T><<<grid, threads, 0, zt_stream()>>>((T *)dtable, keys, pos, (const T *)dout, N, C,
                                                                   rows);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_embedding_forward(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C,
                                          int accumulate) {
  check_shape("zt_cuda_embedding_forward", N, C, 0);
  embedding_forward(dt, out, ids, table, N, C, accumulate, 0, INT_MAX);
}
extern "C" void zt_cuda_embedding_backward(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N,
                                           int C) {
  check_shape("zt_cuda_embedding_backward", N, C, 0);
  embedding_backward(dt, dtable, ids, dout, N, C, 0, INT_MAX);
}
extern "C" void zt_cuda_embedding_forward_range(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N,
                                                int C, int v0, int rows) {
  check_shape("zt_cuda_embedding_forward_range", N, C, rows);
  embedding_forward(dt, out, ids, table, N, C, 0, v0, rows);
}
extern "C" void zt_cuda_embedding_backward_range(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout,
                                                 int N, int C, int v0, int rows) {
  check_shape("zt_cuda_embedding_backward_range", N, C, rows);
  embedding_backward(dt, dtable, ids, dout, N, C, v0, rows);
}
