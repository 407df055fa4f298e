// Shared by the CUDA op files: error checks, storage-type traits (fp32 / bf16 / fp16 loaded into and stored
// from fp32), dtype dispatch, launch helpers and block reductions.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "runtime/base/dtype.h"
#include "runtime/base/error.h"
#include "runtime/base/philox.h"
#include "runtime/ops/ops.h"
}
#include "runtime/ops/cuda/cuda_device.h"
#include "runtime/ops/cuda/cuda_ops.h"

// A failing CUDA call ends the process naming the call and where it was made.
#define ZT_CUDA_CHECK(call)                                                                                   \
  do {                                                                                                        \
    cudaError_t zt_e_ = (call);                                                                               \
    if (zt_e_ != cudaSuccess) zt_fatal("cuda", "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,          \
                                       cudaGetErrorString(zt_e_));                                            \
  } while (0)
// After a kernel launch: launch-configuration errors are reported at the launch site.
#define ZT_CUDA_LAUNCHED() ZT_CUDA_CHECK(cudaGetLastError())

static inline cudaStream_t zt_stream() { return (cudaStream_t)zt_cuda_stream(); }

// Storage types: every kernel computes in fp32 and converts at load and store (round to nearest even).
__device__ __forceinline__ float zt_ld(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float zt_ld(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float zt_ld(const __half *p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void zt_st(float *p, size_t i, float x) { p[i] = x; }
__device__ __forceinline__ void zt_st(__nv_bfloat16 *p, size_t i, float x) { p[i] = __float2bfloat16_rn(x); }
__device__ __forceinline__ void zt_st(__half *p, size_t i, float x) { p[i] = __float2half_rn(x); }

// Calls F.template operator()<T>() with T the storage type of dt: one dispatch per launcher.
//   zt_dispatch(dt, [&](auto tag) { using T = decltype(tag); kernel<T><<<...>>>((T *)out, ...); });
template <typename F>
static inline void zt_dispatch(zt_dtype dt, F &&f) {
  switch (dt) {
    case ZT_DTYPE_FP32: f(float()); break;
    case ZT_DTYPE_BF16: f(__nv_bfloat16()); break;
    case ZT_DTYPE_FP16: f(__half()); break;
    default: zt_fatal("cuda", "unknown dtype %d", (int)dt);
  }
}

static inline unsigned zt_blocks(size_t n, unsigned threads) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b > 65535u * 64u ? 65535u * 64u : b);  // grid-stride loops cover the rest
}

// Sum (max) over a 1-D block (threadIdx.x only; blockDim.x a multiple of 32, at most 1024); every thread gets
// the result.
__device__ __forceinline__ float zt_warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ float zt_warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float zt_block_sum(float x) {
  __shared__ float s[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  x = zt_warp_sum(x);
  __syncthreads();  // s may still be read by a previous call
  if (lane == 0) s[warp] = x;
  __syncthreads();
  x = lane < nw ? s[lane] : 0.0f;
  return zt_warp_sum(x);
}
__device__ __forceinline__ float zt_block_max(float x) {
  __shared__ float s[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  x = zt_warp_max(x);
  __syncthreads();
  if (lane == 0) s[warp] = x;
  __syncthreads();
  x = lane < nw ? s[lane] : -INFINITY;
  return zt_warp_max(x);
}

// GELU, tanh approximation (runtime/ops/cpu/gelu.c): the function and its derivative.
#define ZT_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
__device__ __forceinline__ float zt_gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(ZT_GELU_K * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float zt_gelu_grad(float x) {
  const float t = tanhf(ZT_GELU_K * (x + 0.044715f * x * x * x));
  const float du = ZT_GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// Dropout: keep element `elem` of sample `sample` (the CPU's zt_dropout_apply_range, bit for bit).
__device__ __forceinline__ bool zt_dropout_keep(const zt_dropout &d, uint32_t k0, uint32_t k1, uint32_t threshold,
                                                uint64_t sample, uint64_t elem) {
  const uint64_t stream = zt_dropout_stream(&d, sample);
  const uint64_t b = elem >> 2;
  zt_philox_ctr c = {{(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)}};
  zt_philox_ctr r = zt_philox4x32(c, k0, k1);
  return (r.v[elem & 3] >> 8) >= threshold;
}
// The key and threshold of a dropout (host side): keep <=> (bits >> 8) >= ceil(p * 2^24).
static inline void zt_dropout_params(const zt_dropout *d, uint32_t *k0, uint32_t *k1, uint32_t *threshold) {
  zt_philox_key(d->seed, ZT_RNG_DROPOUT, k0, k1);
  *threshold = (uint32_t)ceilf(d->p * 16777216.0f);
}
