// The CUDA backend's context (device, stream, cuBLASLt handle, workspace), memory and conversions.
#include <cublasLt.h>

#include "runtime/ops/cuda/common.cuh"
#include "runtime/ops/cuda/core.cuh"

static struct {
  int ready, device;
  cudaStream_t stream;
  cublasLtHandle_t lt;
  void *workspace;
} ctx;

static const size_t kWorkspaceBytes = 32u << 20;

// The current device is per host thread: a thread other than the one that called zt_cuda_init starts on device 0,
// where the stream (of ctx.device) cannot take work. Every entry point makes ctx.device current first
// (cudaGetDevice reads thread-local state: cheap beside a launch).
static void make_current() {
  int cur = -1;
  ZT_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != ctx.device) ZT_CUDA_CHECK(cudaSetDevice(ctx.device));
}

extern "C" void zt_cuda_init(int device) {
  if (ctx.ready) {
    zt_check(device == ctx.device, "cuda", "zt_cuda_init(%d) after zt_cuda_init(%d): one device per process", device,
             ctx.device);
    return;
  }
  int n = zt_cuda_device_count();
  zt_check(device >= 0 && device < n, "cuda", "device %d requested, %d visible", device, n);
  ZT_CUDA_CHECK(cudaSetDevice(device));
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
  cublasStatus_t st = cublasLtCreate(&ctx.lt);
  zt_check(st == CUBLAS_STATUS_SUCCESS, "cuda", "cublasLtCreate failed (status %d)", (int)st);
  ZT_CUDA_CHECK(cudaMalloc(&ctx.workspace, kWorkspaceBytes));
  // zt_cuda_malloc/free go through the stream-ordered pool: keep freed memory in it for the next allocation
  // instead of returning it to the driver at every synchronization
  cudaMemPool_t pool;
  uint64_t keep = UINT64_MAX;
  ZT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  ZT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  ctx.device = device;
  ctx.ready = 1;
}

extern "C" void zt_cuda_shutdown(void) {
  if (!ctx.ready) return;
  make_current();
  cudaStreamSynchronize(ctx.stream);
  cudaFree(ctx.workspace);
  cublasLtDestroy(ctx.lt);
  cudaStreamDestroy(ctx.stream);
  ctx.ready = 0;
}

static void need_ctx() {
  zt_check(ctx.ready, "cuda", "the CUDA backend is used before zt_cuda_init");
  make_current();
}

extern "C" void *zt_cuda_stream(void) {
  need_ctx();
  return ctx.stream;
}
extern "C" void zt_cuda_synchronize(void) { ZT_CUDA_CHECK(cudaStreamSynchronize(zt_stream())); }

cublasLtHandle_t zt_cuda_lt(void) {
  need_ctx();
  return ctx.lt;
}
void *zt_cuda_workspace(size_t *bytes) {
  need_ctx();
  *bytes = kWorkspaceBytes;
  return ctx.workspace;
}

extern "C" void *zt_cuda_malloc(size_t bytes, const char *what) {
  need_ctx();
  void *p = NULL;
  if (bytes == 0) return NULL;
  cudaError_t e = cudaMallocAsync(&p, bytes, ctx.stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    zt_fatal("cuda", "out of device memory allocating %s: %.1f MiB requested, %.1f MiB free of %.1f MiB (%s)", what,
             bytes / 1048576.0, fr / 1048576.0, tot / 1048576.0, cudaGetErrorString(e));
  }
  return p;
}
extern "C" void zt_cuda_free(void *p) {
  if (p) ZT_CUDA_CHECK(cudaFreeAsync(p, zt_stream()));
}
extern "C" void zt_cuda_memcpy_h2d(void *dst, const void *src, size_t bytes) {
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, zt_stream()));
  ZT_CUDA_CHECK(cudaStreamSynchronize(zt_stream()));  // src is pageable host memory the caller may reuse
}
extern "C" void zt_cuda_memcpy_d2h(void *dst, const void *src, size_t bytes) {
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, zt_stream()));
  ZT_CUDA_CHECK(cudaStreamSynchronize(zt_stream()));
}
extern "C" void zt_cuda_memset(void *p, int byte, size_t bytes) {
  ZT_CUDA_CHECK(cudaMemsetAsync(p, byte, bytes, zt_stream()));
}
extern "C" void zt_cuda_memcpy_d2d(void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  zt_check(d + bytes <= s || s + bytes <= d, "zt_cuda_memcpy_d2d",
           "overlapping ranges: %zu bytes from %p to %p (%s by %zu bytes); only dst == src may overlap", bytes, src,
           dst, d > s ? "dst after src" : "dst before src", (size_t)(d > s ? d - s : s - d));
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, zt_stream()));
}
extern "C" void zt_cuda_mem_info(size_t *free_bytes, size_t *total_bytes) {
  if (ctx.ready) make_current();  // cudaMemGetInfo reports the current device
  ZT_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

template <typename D, typename S>
__global__ void convert_kernel(D *dst, const S *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    zt_st(dst, i, zt_ld(src, i));
}
extern "C" void zt_cuda_convert(void *dst, zt_dtype dst_dt, const void *src, zt_dtype src_dt, size_t n) {
  if (n == 0) return;
  zt_dispatch(dst_dt, [&](auto dtag) {
    using D = decltype(dtag);
    zt_dispatch(src_dt, [&](auto stag) {
      using S = decltype(stag);
      convert_kernel<D, S><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>((D *)dst, (const S *)src, n);
      ZT_CUDA_LAUNCHED();
    });
  });
}

template <typename S>
__global__ void fold_kernel(float *acc, S *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    acc[i] += zt_ld(src, i);
    zt_st(src, i, 0.0f);
  }
}
extern "C" void zt_cuda_fold_f32(float *acc, void *src, zt_dtype dt, size_t n) {
  if (n == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using S = decltype(tag);
    fold_kernel<S><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>(acc, (S *)src, n);
    ZT_CUDA_LAUNCHED();
  });
}
