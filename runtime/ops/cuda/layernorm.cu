// LayerNorm over the last dimension on the GPU, and the fused residual-add + LayerNorm of the transformer block;
// same formulas as runtime/ops/cpu/layernorm.c (two-pass mean and biased variance, rstd = 1/sqrt(var + eps)).
//
// Kernels (T is the storage type; all arithmetic in fp32):
//  - layernorm_forward_kernel: one block per row, row_threads(C) threads (32..512, about 4 elements each) looping
//    over the row, so any C works. Pass 1 sums the row (writing res = a + b first in the fused form), pass 2 the
//    squared deviations from the mean, pass 3 writes the output. Passes 2 and 3 re-read the row, which the block
//    has just read: from L1/L2, so DRAM sees one read of the row and one write (two and two in the fused form).
//  - layernorm_dinp_kernel: one block per row; pass 1 reduces sum(w*dy) and sum(w*dy*xhat), pass 2 writes dinp.
//  - layernorm_param_partial_kernel + layernorm_param_finish_kernel: dweight/dbias are sums over the N rows,
//    done without atomics so the result does not depend on scheduling. The rows are cut into `nchunks` chunks
//    (a function of N and C only); block (column tile of 32, chunk) sums its rows for 32 columns with 32x8
//    threads (coalesced along the row), reduces the 8 row lanes in a fixed order and writes one fp32 partial
//    per column; the finish kernel adds the chunk partials in chunk order to dweight/dbias (+=, in dt). The
//    partials live in a scratch buffer kept between calls (2 * nchunks * C floats, at most about 2 * 1024 * 32
//    * 2 floats = 512 KiB since nchunks shrinks as C grows).
//  - RMSNorm (runtime/ops/cpu/llama_ops.c; backend.h's rmsnorm_forward/backward) the same way: rmsnorm_forward_kernel
//    one block per row (pass 1 the sum of squares, pass 2 the output x * rstd * w rounded once), rmsnorm_dinp_kernel
//    one block per row (pass 1 sum(w*dy*x), pass 2 dinp = rstd*w*dy - x * rstd^3 * sum / C), and dweight (sum over the
//    rows of x * rstd * dy) through rmsnorm_param_partial_kernel + rmsnorm_param_finish_kernel: the same chunks, the
//    same fixed-order sums and the same scratch as layernorm's (one partial per column and chunk), += in dt.
// The parameter gradients are computed before dinp is written, so dinp may alias dout; res may alias a or b
// (each element is read before it is written, by the same thread).
#include "runtime/ops/cuda/common.cuh"

// Threads of a block that owns one row of C elements: about 4 elements per thread, a whole number of warps.
static unsigned row_threads(int C) {
  unsigned t = ((unsigned)(C + 3) / 4 + 31) / 32 * 32;
  return t < 32 ? 32 : t > 512 ? 512 : t;
}

// x rounded to the storage type (what a store followed by a load gives).
template <typename T>
__device__ __forceinline__ float round_to(float x) {
  T t;
  zt_st(&t, 0, x);
  return zt_ld(&t, 0);
}

// out[N,C] = (x - mean) * rstd * weight + bias with x = inp, or with x = res = a + b (stored in T) when a != NULL.
template <typename T>
__global__ void layernorm_forward_kernel(T *out, float *mean, float *rstd, const T *inp, T *res, const T *a,
                                         const T *b, const T *weight, const T *bias, int C, float eps) {
  const int n = blockIdx.x;
  const size_t row = (size_t)n * C;
  float sum = 0.0f;
  if (a) {
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
      const float v = round_to<T>(zt_ld(a, row + i) + zt_ld(b, row + i));
      zt_st(res, row + i, v);
      sum += v;
    }
    inp = res;  // the later passes read back the elements this same thread wrote
  } else {
    for (int i = threadIdx.x; i < C; i += blockDim.x) sum += zt_ld(inp, row + i);
  }
  const float m = zt_block_sum(sum) / C;
  float sq = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    const float d = zt_ld(inp, row + i) - m;
    sq += d * d;
  }
  const float s = 1.0f / sqrtf(zt_block_sum(sq) / C + eps);
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    zt_st(out, row + i, (zt_ld(inp, row + i) - m) * s * zt_ld(weight, i) + zt_ld(bias, i));
  if (threadIdx.x == 0) {
    mean[n] = m;
    rstd[n] = s;
  }
}

// dinp[n,:] = (w*dy - mean(w*dy) - xhat * mean(w*dy*xhat)) * rstd, one block per row.
template <typename T>
__global__ void layernorm_dinp_kernel(T *dinp, const T *dout, const T *inp, const T *weight, const float *mean,
                                      const float *rstd, int C) {
  const int n = blockIdx.x;
  const size_t row = (size_t)n * C;
  const float m = mean[n], s = rstd[n];
  float dn_sum = 0.0f, dn_xhat_sum = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    const float xhat = (zt_ld(inp, row + i) - m) * s;
    const float dn = zt_ld(weight, i) * zt_ld(dout, row + i);
    dn_sum += dn;
    dn_xhat_sum += dn * xhat;
  }
  const float dn_mean = zt_block_sum(dn_sum) / C;
  const float dn_xhat_mean = zt_block_sum(dn_xhat_sum) / C;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    const float xhat = (zt_ld(inp, row + i) - m) * s;
    const float dn = zt_ld(weight, i) * zt_ld(dout, row + i);
    zt_st(dinp, row + i, (dn - dn_mean - xhat * dn_xhat_mean) * s);
  }
}

// RMSNorm: rstd[n] = 1/sqrt(mean(x^2) + eps), out[n,:] = x * rstd * weight (rounded once), one block per row.
template <typename T>
__global__ void rmsnorm_forward_kernel(T *out, float *rstd, const T *inp, const T *weight, int C, float eps) {
  const int n = blockIdx.x;
  const size_t row = (size_t)n * C;
  float sq = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    const float x = zt_ld(inp, row + i);
    sq += x * x;
  }
  const float s = 1.0f / sqrtf(zt_block_sum(sq) / C + eps);
  for (int i = threadIdx.x; i < C; i += blockDim.x) zt_st(out, row + i, zt_ld(inp, row + i) * s * zt_ld(weight, i));
  if (threadIdx.x == 0) rstd[n] = s;
}

// dinp[n,:] = rstd * w * dy - x * rstd^3 * sum(w*dy*x) / C, one block per row.
template <typename T>
__global__ void rmsnorm_dinp_kernel(T *dinp, const T *dout, const T *inp, const T *weight, const float *rstd, int C) {
  const int n = blockIdx.x;
  const size_t row = (size_t)n * C;
  const float s = rstd[n];
  float dot = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    dot += zt_ld(weight, i) * zt_ld(dout, row + i) * zt_ld(inp, row + i);
  const float k = zt_block_sum(dot) * s * s * s / C;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    zt_st(dinp, row + i, s * zt_ld(weight, i) * zt_ld(dout, row + i) - k * zt_ld(inp, row + i));
}

enum { kTileC = 32, kTileR = 8 };  // parameter-gradient tile: 32 columns x 8 row lanes

// partial[0][chunk][c] = sum of xhat*dy, partial[1][chunk][c] = sum of dy over the rows of `chunk`.
template <typename T>
__global__ void layernorm_param_partial_kernel(float *partial, const T *dout, const T *inp, const float *mean,
                                               const float *rstd, int N, int C, int rows_per_chunk) {
  __shared__ float sw[kTileR][kTileC], sb[kTileR][kTileC];
  const int c = blockIdx.x * kTileC + threadIdx.x, chunk = blockIdx.y;
  const int r1 = (int)min((long long)N, (long long)(chunk + 1) * rows_per_chunk);
  float gw = 0.0f, gb = 0.0f;
  if (c < C) {
    for (int n = chunk * rows_per_chunk + threadIdx.y; n < r1; n += kTileR) {
      const size_t i = (size_t)n * C + c;
      const float dy = zt_ld(dout, i);
      gw += (zt_ld(inp, i) - mean[n]) * rstd[n] * dy;
      gb += dy;
    }
  }
  sw[threadIdx.y][threadIdx.x] = gw;
  sb[threadIdx.y][threadIdx.x] = gb;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int r = 1; r < kTileR; r++) {  // fixed order: deterministic
      gw += sw[r][threadIdx.x];
      gb += sb[r][threadIdx.x];
    }
    partial[(size_t)chunk * C + c] = gw;
    partial[((size_t)gridDim.y + chunk) * C + c] = gb;
  }
}

// dweight[c] += sum over chunks of partial[0][.][c], dbias[c] += ... partial[1][.][c], chunks in order.
template <typename T>
__global__ void layernorm_param_finish_kernel(T *dweight, T *dbias, const float *partial, int nchunks, int C) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
    float gw = 0.0f, gb = 0.0f;
    for (int k = 0; k < nchunks; k++) {
      gw += partial[(size_t)k * C + c];
      gb += partial[((size_t)nchunks + k) * C + c];
    }
    zt_st(dweight, c, zt_ld(dweight, c) + gw);
    zt_st(dbias, c, zt_ld(dbias, c) + gb);
  }
}

// partial[chunk][c] = sum of x * rstd * dy over the rows of `chunk` (RMSNorm's dweight; layout as above).
template <typename T>
__global__ void rmsnorm_param_partial_kernel(float *partial, const T *dout, const T *inp, const float *rstd, int N,
                                             int C, int rows_per_chunk) {
  __shared__ float sw[kTileR][kTileC];
  const int c = blockIdx.x * kTileC + threadIdx.x, chunk = blockIdx.y;
  const int r1 = (int)min((long long)N, (long long)(chunk + 1) * rows_per_chunk);
  float gw = 0.0f;
  if (c < C) {
    for (int n = chunk * rows_per_chunk + threadIdx.y; n < r1; n += kTileR) {
      const size_t i = (size_t)n * C + c;
      gw += zt_ld(inp, i) * rstd[n] * zt_ld(dout, i);
    }
  }
  sw[threadIdx.y][threadIdx.x] = gw;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int r = 1; r < kTileR; r++) gw += sw[r][threadIdx.x];  // fixed order: deterministic
    partial[(size_t)chunk * C + c] = gw;
  }
}

// dweight[c] += sum over chunks of partial[.][c], chunks in order.
template <typename T>
__global__ void rmsnorm_param_finish_kernel(T *dweight, const float *partial, int nchunks, int C) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
    float gw = 0.0f;
    for (int k = 0; k < nchunks; k++) gw += partial[(size_t)k * C + c];
    zt_st(dweight, c, zt_ld(dweight, c) + gw);
  }
}

// The partial-sum scratch, kept between calls and grown when a call needs more (the free is stream-ordered,
// after the kernels that used the old buffer).
static float *partial_scratch(size_t floats) {
  static float *buf;
  static size_t cap;
  if (floats > cap) {
    zt_cuda_free(buf);
    buf = (float *)zt_cuda_malloc(floats * sizeof(float), "layernorm backward partial sums");
    cap = floats;
  }
  return buf;
}

// The row chunks of the parameter gradients (N > 0), a function of N and C only: about 1024 blocks (a wave or so
// on A100/H100), at least 8 rows per chunk, no empty chunk.
static void param_chunks(int N, int C, int *col_tiles, int *nchunks, int *rows_per_chunk) {
  *col_tiles = (C + kTileC - 1) / kTileC;
  int nc = (1024 + *col_tiles - 1) / *col_tiles;
  const int max_chunks = (N + kTileR - 1) / kTileR;
  if (nc > max_chunks) nc = max_chunks;
  *rows_per_chunk = (N + nc - 1) / nc;
  *nchunks = (N + *rows_per_chunk - 1) / *rows_per_chunk;
}

static void check_shape(const char *op, int N, int C) {
  zt_check(N >= 0 && C > 0, op, "N=%d rows of C=%d channels: need N >= 0 and C > 0", N, C);
}

static void layernorm_forward_launch(zt_dtype dt, void *out, float *mean, float *rstd, const void *inp, void *res,
                                     const void *a, const void *b, const void *weight, const void *bias, int N,
                                     int C, float eps) {
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    layernorm_forward_kernel<T><<<N, row_threads(C), 0, zt_stream()>>>(
        (T *)out, mean, rstd, (const T *)inp, (T *)res, (const T *)a, (const T *)b, (const T *)weight,
        (const T *)bias, C, eps);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_layernorm_forward(zt_dtype dt, void *out, float *mean, float *rstd, const void *inp,
                                          const void *weight, const void *bias, int N, int C, float eps) {
  check_shape("zt_cuda_layernorm_forward", N, C);
  layernorm_forward_launch(dt, out, mean, rstd, inp, NULL, NULL, NULL, weight, bias, N, C, eps);
}

extern "C" void zt_cuda_residual_layernorm_forward(zt_dtype dt, void *res, void *out, float *mean, float *rstd,
                                                   const void *a, const void *b, const void *weight,
                                                   const void *bias, int N, int C, float eps) {
  check_shape("zt_cuda_residual_layernorm_forward", N, C);
  layernorm_forward_launch(dt, out, mean, rstd, NULL, res, a, b, weight, bias, N, C, eps);
}

extern "C" void zt_cuda_layernorm_backward(zt_dtype dt, void *dinp, void *dweight, void *dbias, const void *dout,
                                           const void *inp, const void *weight, const float *mean,
                                           const float *rstd, int N, int C) {
  check_shape("zt_cuda_layernorm_backward", N, C);
  if (N == 0) return;
  int col_tiles, nchunks, rows_per_chunk;
  param_chunks(N, C, &col_tiles, &nchunks, &rows_per_chunk);
  float *partial = partial_scratch(2 * (size_t)nchunks * C);
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    layernorm_param_partial_kernel<T><<<dim3(col_tiles, nchunks), dim3(kTileC, kTileR), 0, zt_stream()>>>(
        partial, (const T *)dout, (const T *)inp, mean, rstd, N, C, rows_per_chunk);
    ZT_CUDA_LAUNCHED();
    layernorm_param_finish_kernel<T><<<zt_blocks(C, 256), 256, 0, zt_stream()>>>((T *)dweight, (T *)dbias,
                                                                                 partial, nchunks, C);
    ZT_CUDA_LAUNCHED();
    layernorm_dinp_kernel<T><<<N, row_threads(C), 0, zt_stream()>>>((T *)dinp, (const T *)dout, (const T *)inp,
                                                                    (const T *)weight, mean, rstd, C);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_rmsnorm_forward(zt_dtype dt, void *out, float *rstd, const void *inp, const void *weight, int N,
                                        int C, float eps) {
  check_shape("zt_cuda_rmsnorm_forward", N, C);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    rmsnorm_forward_kernel<T><<<N, row_threads(C), 0, zt_stream()>>>((T *)out, rstd, (const T *)inp,
                                                                      (const T *)weight, C, eps);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_rmsnorm_backward(zt_dtype dt, void *dinp, void *dweight, const void *dout, const void *inp,
                                         const void *weight, const float *rstd, int N, int C) {
  check_shape("zt_cuda_rmsnorm_backward", N, C);
  if (N == 0) return;
  int col_tiles, nchunks, rows_per_chunk;
  param_chunks(N, C, &col_tiles, &nchunks, &rows_per_chunk);
  float *partial = partial_scratch((size_t)nchunks * C);
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    rmsnorm_param_partial_kernel<T><<<dim3(col_tiles, nchunks), dim3(kTileC, kTileR), 0, zt_stream()>>>(
        partial, (const T *)dout, (const T *)inp, rstd, N, C, rows_per_chunk);
    ZT_CUDA_LAUNCHED();
    rmsnorm_param_finish_kernel<T><<<zt_blocks(C, 256), 256, 0, zt_stream()>>>((T *)dweight, partial, nchunks, C);
    ZT_CUDA_LAUNCHED();
    rmsnorm_dinp_kernel<T><<<N, row_threads(C), 0, zt_stream()>>>((T *)dinp, (const T *)dout, (const T *)inp,
                                                                   (const T *)weight, rstd, C);
    ZT_CUDA_LAUNCHED();
  });
}
