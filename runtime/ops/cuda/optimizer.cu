// The optimizer's device kernels: multi-tensor Adam(W) over ranges of the flat fp32 buffers, the reductions of a
// step (sum of squares for the gradient norm, counts of non-finite or non-representable values for the fp16
// overflow check), and the engine's other maps of the flat fp32 buffers (scaling, rounding to a half type).
//
//  - adam_kernel: each block updates one chunk of kAdamChunk (4096) elements of one range; the ranges of a
//    launch (up to kAdamRanges = 64, more ranges take more launches) travel by value in the kernel parameters
//    (a __grid_constant__ struct, so indexing it reads parameter memory rather than a local copy) with the
//    first block of each range, and a block finds its range by a scan of that uniform table. Threads stride by
//    the block size through the chunk (coalesced). Per element it reads p, g, m, v and writes p, m, v, g = 0
//    (and the half copy): 32 (+2) bytes, memory-bound. The arithmetic is ADAM_ELEMENT of
//    runtime/optim/optimizer.c expression for expression, with the mode a template constant as there.
//  - sumsq_kernel: a grid fixed by n alone (up to kSumBlocks = 1024 blocks of 256 threads, grid-stride), each
//    thread sums squares in fp32 runs of kRun elements added into a double, then the block tree-reduces the
//    doubles and writes one partial; sumsq_final_kernel (one block) tree-reduces the partials in double. The
//    result depends only on n and the data.
//  - count_kernel: grid-stride (at most 2048 blocks of 256 threads), a count per thread of the elements that are
//    inf or nan (after rounding them to a half type and storing them, for zt_cuda_round_f32) or not below a limit
//    in magnitude (zt_cuda_count_nonrepresentable), a warp sum and one 64-bit integer atomicAdd per warp (integer
//    addition: the order does not matter, the count is exact). One read (and one write) per element.
//  - scale_kernel: x *= f, grid-stride.
// Partials, results and the counter live in the cuBLASLt workspace (core.cuh), which is free between
// stream-ordered calls.
#include <string.h>

#include "runtime/ops/cuda/common.cuh"
#include "runtime/ops/cuda/core.cuh"

// ---- Adam ----------------------------------------------------------------------------------------------
enum { kAdamRanges = 64, kAdamChunk = 4096, kAdamThreads = 256 };

struct adam_batch {
  int nr;
  size_t off[kAdamRanges], len[kAdamRanges];
  float wd[kAdamRanges];
  unsigned first_block[kAdamRanges + 1];  // range r owns blocks [first_block[r], first_block[r + 1])
};

template <bool ADAMW, typename H>
__global__ void __launch_bounds__(kAdamThreads)
    adam_kernel(float *p, float *g, float *m, float *v, H *half, const __grid_constant__ adam_batch b,
                const zt_cuda_adam_args a) {
  int r = 0;
  while (blockIdx.x >= b.first_block[r + 1]) r++;  // ends: blockIdx.x < first_block[nr]
  const size_t lo = (size_t)(blockIdx.x - b.first_block[r]) * kAdamChunk;
  const size_t hi = lo + kAdamChunk < b.len[r] ? lo + kAdamChunk : b.len[r];
  const size_t base = b.off[r];
  const float wd = b.wd[r], b1 = a.beta1, b2 = a.beta2;
  for (size_t j = lo + threadIdx.x; j < hi; j += kAdamThreads) {
    const size_t i = base + j;
    const float pi = p[i];
    float grad = g[i] * a.grad_scale;
    if (!ADAMW) grad += wd * pi;
    const float mi = b1 * m[i] + (1.0f - b1) * grad;
    const float vi = b2 * v[i] + (1.0f - b2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    float update = (mi * a.inv_bc1) / (sqrtf(vi) * a.inv_sqrt_bc2 + a.eps);
    if (ADAMW) update += wd * pi;
    const float pn = pi - a.lr * update;
    p[i] = pn;
    g[i] = 0.0f;
    if (half) zt_st(half, i, pn);
  }
}

template <typename H>
static void adam_launch(float *params, float *grads, float *m, float *v, H *half, const adam_batch &b,
                        const zt_cuda_adam_args &a) {
  const unsigned blocks = b.first_block[b.nr];
  if (blocks == 0) return;
  if (a.adam_w_mode)
    adam_kernel<true, H><<<blocks, kAdamThreads, 0, zt_stream()>>>(params, grads, m, v, half, b, a);
  else
    adam_kernel<false, H><<<blocks, kAdamThreads, 0, zt_stream()>>>(params, grads, m, v, half, b, a);
  ZT_CUDA_LAUNCHED();
}

extern "C" void zt_cuda_adam_step(float *params, float *grads, float *m, float *v, void *params_half, zt_dtype half_dt,
                                  const size_t *off, const size_t *len, const float *wd, int nranges,
                                  const zt_cuda_adam_args *args) {
  zt_check(nranges >= 0 && args != nullptr, "adam step", "%d ranges, args %p", nranges, (const void *)args);
  zt_check(nranges == 0 || (off && len && wd && params && grads && m && v), "adam step",
           "NULL range arrays or buffers with %d ranges", nranges);
  zt_check(!params_half || half_dt == ZT_DTYPE_BF16 || half_dt == ZT_DTYPE_FP16, "adam step",
           "the half copy of the parameters must be bf16 or fp16, not %s", zt_dtype_name(half_dt));
  zt_dispatch(params_half ? half_dt : ZT_DTYPE_BF16, [&](auto tag) {
    using H = decltype(tag);
    H *half = (H *)params_half;
    adam_batch b;
    memset(&b, 0, sizeof b);
    for (int r = 0; r < nranges; r++) {
      if (len[r] == 0) continue;
      const size_t chunks = (len[r] + kAdamChunk - 1) / kAdamChunk;
      zt_check(chunks < 0x7fffffffu, "adam step", "range %d of %zu elements is too long", r, len[r]);
      if (b.nr == kAdamRanges || b.first_block[b.nr] + chunks > 0x7fffffffu) {  // grid x limit 2^31 - 1
        adam_launch(params, grads, m, v, half, b, *args);
        b.nr = 0;
      }
      b.off[b.nr] = off[r];
      b.len[b.nr] = len[r];
      b.wd[b.nr] = wd[r];
      b.first_block[b.nr + 1] = b.first_block[b.nr] + (unsigned)chunks;
      b.nr++;
    }
    adam_launch(params, grads, m, v, half, b, *args);
  });
}

// ---- sum of squares ------------------------------------------------------------------------------------
enum { kSumBlocks = 1024, kSumThreads = 256, kRun = 32 };

__device__ __forceinline__ double warp_sum_double(double x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
// Sum over a block (blockDim.x a multiple of 32, at most 1024), in a fixed tree; thread 0 gets the result.
__device__ double block_sum_double(double x) {
  __shared__ double s[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  x = warp_sum_double(x);
  if (lane == 0) s[warp] = x;
  __syncthreads();
  x = 0.0;
  if (warp == 0) {
    x = lane < nw ? s[lane] : 0.0;
    x = warp_sum_double(x);
  }
  return x;
}

template <typename T>
__global__ void __launch_bounds__(kSumThreads) sumsq_kernel(const T *x, size_t n, double *partial) {
  const size_t stride = (size_t)gridDim.x * kSumThreads;
  double acc = 0.0;
  float run = 0.0f;
  int k = 0;
  for (size_t i = blockIdx.x * (size_t)kSumThreads + threadIdx.x; i < n; i += stride) {
    const float xi = zt_ld(x, i);
    run += xi * xi;
    if (++k == kRun) {
      acc += run;
      run = 0.0f;
      k = 0;
    }
  }
  acc = block_sum_double(acc + run);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(kSumBlocks) sumsq_final_kernel(const double *partial, int count, double *out) {
  const double s = block_sum_double(threadIdx.x < count ? partial[threadIdx.x] : 0.0);
  if (threadIdx.x == 0) *out = s;
}

extern "C" double zt_cuda_sumsq(zt_dtype dt, const void *x, size_t n) {
  if (n == 0) return 0.0;
  zt_check(x != nullptr, "sumsq", "NULL input of %zu elements", n);
  size_t ws_bytes = 0;
  double *partial = (double *)zt_cuda_workspace(&ws_bytes), *result = partial + kSumBlocks;
  const size_t want = (n + kSumThreads - 1) / kSumThreads;
  const int blocks = (int)(want < (size_t)kSumBlocks ? want : (size_t)kSumBlocks);
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    sumsq_kernel<T><<<blocks, kSumThreads, 0, zt_stream()>>>((const T *)x, n, partial);
    ZT_CUDA_LAUNCHED();
  });
  sumsq_final_kernel<<<1, kSumBlocks, 0, zt_stream()>>>(partial, blocks, result);
  ZT_CUDA_LAUNCHED();
  double host = 0.0;
  zt_cuda_memcpy_d2h(&host, result, sizeof host);
  return host;
}

// ---- counts: non-finite, non-representable, rounding to a half type ----------------------------------------
enum CountMode { kCountNonFinite, kCountBeyond, kCountRound };

__device__ __forceinline__ bool nonfinite(float x) {
  return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u;  // exponent all ones: inf or nan
}

// count += how many of x[n] are non-finite (kCountNonFinite), not below lim in magnitude, nan included
// (kCountBeyond), or non-finite once rounded to T, with dst = the rounded values (kCountRound; dst may be x).
template <int MODE, typename T>
__global__ void count_kernel(float *dst, const float *x, size_t n, float lim, unsigned long long *count) {
  unsigned c = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = x[i];
    if (MODE == kCountRound) {
      T t;
      zt_st(&t, 0, v);
      v = zt_ld(&t, 0);
      dst[i] = v;
    }
    c += MODE == kCountBeyond ? !(fabsf(v) < lim) : nonfinite(v);
  }
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, (unsigned long long)c);
}

template <int MODE, typename T>
static size_t count_launch(float *dst, const float *x, size_t n, float lim) {
  size_t ws_bytes = 0;
  unsigned long long *count = (unsigned long long *)zt_cuda_workspace(&ws_bytes), host = 0;
  ZT_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof *count, zt_stream()));
  const unsigned blocks = zt_blocks(n, 256);
  count_kernel<MODE, T><<<blocks < 2048u ? blocks : 2048u, 256, 0, zt_stream()>>>(dst, x, n, lim, count);
  ZT_CUDA_LAUNCHED();
  zt_cuda_memcpy_d2h(&host, count, sizeof host);
  return (size_t)host;
}

extern "C" size_t zt_cuda_count_nonfinite(const float *x, size_t n) {
  if (n == 0) return 0;
  zt_check(x != nullptr, "count_nonfinite", "NULL input of %zu elements", n);
  return count_launch<kCountNonFinite, float>(nullptr, x, n, 0.0f);
}

extern "C" size_t zt_cuda_count_nonrepresentable(const float *x, size_t n, zt_dtype dt) {
  if (n == 0) return 0;
  zt_check(x != nullptr, "zt_cuda_count_nonrepresentable", "NULL input of %zu elements", n);
  // runtime/base/dtype.c's limits: the magnitude from which rounding to dt gives infinity
  const float lim = dt == ZT_DTYPE_FP16 ? 65520.0f : dt == ZT_DTYPE_BF16 ? 3.3961776e38f : INFINITY;
  zt_check(dt == ZT_DTYPE_FP32 || dt == ZT_DTYPE_BF16 || dt == ZT_DTYPE_FP16, "zt_cuda_count_nonrepresentable",
           "unknown dtype %d", (int)dt);
  return count_launch<kCountBeyond, float>(nullptr, x, n, lim);
}

extern "C" size_t zt_cuda_round_f32(float *dst, const float *src, size_t n, zt_dtype dt) {
  if (n == 0) return 0;
  zt_check(dst && src, "zt_cuda_round_f32", "NULL dst or src with %zu elements", n);
  zt_check(dst == src || dst + n <= src || src + n <= dst, "zt_cuda_round_f32",
           "dst %p and src %p overlap (%zu elements): dst must be src or apart from it", (void *)dst,
           (const void *)src, n);
  if (dt == ZT_DTYPE_FP32 && dst == src) return count_launch<kCountNonFinite, float>(nullptr, src, n, 0.0f);
  size_t bad = 0;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    bad = count_launch<kCountRound, T>(dst, src, n, 0.0f);
  });
  return bad;
}

// ---- scaling ------------------------------------------------------------------------------------------------
__global__ void scale_kernel(float *x, float f, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] *= f;
}

extern "C" void zt_cuda_scale_f32(float *x, float f, size_t n) {
  if (n == 0) return;
  zt_check(x != nullptr, "zt_cuda_scale_f32", "NULL buffer of %zu elements", n);
  scale_kernel<<<zt_blocks(n, 256), 256, 0, zt_stream()>>>(x, f, n);
  ZT_CUDA_LAUNCHED();
}
