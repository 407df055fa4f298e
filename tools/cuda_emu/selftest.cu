// The CPU emulator's own test (tools/cuda_emu/README.md), built and run by scripts/cuda_emu_tests.sh before the
// CUDA tests: the semantics the emulated kernels rely on (barriers, shuffles, shared memory poisoning, random thread
// and block order, conversions, launch limits, cuBLASLt, CUB), and that the undefined behaviour it claims to catch
// is caught (each such case runs in a child process that must end with the emulator's message).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cub/device/device_radix_sort.cuh>
#include <string>
#include <vector>

extern "C" {
#include "runtime/base/dtype.h"
}

static int passed, failed;
static void check(bool ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", ok ? "PASS" : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  (ok ? passed : failed)++;
}
#define CK(call) \
  do { if ((call) != cudaSuccess) { printf("FAIL %s at line %d\n", #call, __LINE__); exit(1); } } while (0)

template <class T>
static T *dev(size_t n) {
  T *p;
  CK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}
template <class T>
static std::vector<T> down(const T *d, size_t n) {
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// ---- conversions against runtime/base/dtype.c -------------------------------------------------------------------
static bool same_value(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }
static void test_conversions() {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    bad += !same_value(__half2float(__ushort_as_half((unsigned short)h)), zt_fp16_to_fp32((uint16_t)h));
    bad += !same_value(__bfloat162float(__ushort_as_bfloat16((unsigned short)h)), zt_bf16_to_fp32((uint16_t)h));
  }
  check(bad == 0, "fp16/bf16 -> fp32 of all 65536 values as runtime/base/dtype.c (%d differ)", bad);
  bad = 0;
  uint64_t n = 0;
  auto one = [&](uint32_t v) {
    float f;
    memcpy(&f, &v, 4);
    n++;
    if (isnan(f)) return;  // NaN: the device's canonical 0x7fff, the CPU keeps a payload; both NaN
    bad += __half_as_ushort(__float2half_rn(f)) != zt_fp32_to_fp16(f);
    bad += __bfloat16_as_ushort(__float2bfloat16_rn(f)) != zt_fp32_to_bf16(f);
  };
  // the values next to every rounding boundary of bf16 (16 dropped bits) and fp16 (13), and 16M others
  for (uint32_t hi = 0; hi < (1u << 16); hi++)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) one(hi << 16 | lo);
  for (uint32_t hi = 0; hi < (1u << 19); hi++)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) one(hi << 13 | lo);
  for (uint32_t i = 0, x = 12345; i < (1u << 24); i++) one(x = x * 1664525u + 1013904223u);
  check(bad == 0, "fp32 -> fp16/bf16 (nearest even) of %llu values as runtime/base/dtype.c (%d differ)",
        (unsigned long long)n, bad);
  check(__half_as_ushort(__float2half_rn(NAN)) == 0x7fff && __bfloat16_as_ushort(__float2bfloat16_rn(-NAN)) == 0x7fff,
        "NaN converts to the canonical 0x7fff");
}

// ---- barriers, shared memory, order -----------------------------------------------------------------------------
// out[block] = sum of (x * 2 + y) over a (32, 8) block, through a static shared array and a second barrier-using pass
__global__ void block_sum_kernel(float *out, int *order, int *counter) {
  __shared__ float s[8][33];
  __shared__ int arrival;
  const int x = threadIdx.x, y = threadIdx.y;
  if (x == 0 && y == 0) arrival = 0;
  __syncthreads();
  const int me = atomicAdd(&arrival, 1);
  if (blockIdx.x == 0) order[me] = y * 32 + x;  // the order in which the threads of block 0 ran this line
  s[y][x] = (float)(x * 2 + y);
  __syncthreads();
  if (y == 0) {
    float t = 0.0f;
    for (int r = 0; r < 8; r++) t += s[r][x];
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (x == 0) out[blockIdx.x] = t;
  }
  if (x == 0 && y == 0) order[256 + atomicAdd(counter, 1)] = blockIdx.x;  // block order
}

__global__ void poison_kernel(float *out) {
  __shared__ float s[4];
  extern __shared__ float dyn[];
  out[threadIdx.x] = threadIdx.x < 4 ? s[threadIdx.x] : dyn[threadIdx.x - 4];
}

__global__ void align_kernel(int *out) {
  __shared__ float pad[3];
  __shared__ __align__(16) float v[4];
  pad[0] = v[0] = 0.0f;
  out[0] = (int)((uintptr_t)v % 16) + ((uintptr_t)pad == (uintptr_t)v);
}

__global__ void vote_kernel(int *out) {
  const int t = threadIdx.x;
  const int o = __syncthreads_or(t == 37), a = __syncthreads_and(t < 1000), c = __syncthreads_count(t % 3 == 0);
  const unsigned b = __ballot_sync(0xffffffffu, t & 1);
  const int any = __any_sync(0xffffffffu, t == 5), all = __all_sync(0xffffffffu, t < 64);
  if (t == 0) out[0] = o, out[1] = a, out[2] = c, out[3] = (int)b, out[4] = any, out[5] = all;
}

__global__ void shfl_kernel(int *out) {
  const int l = threadIdx.x;
  out[l] = __shfl_xor_sync(0xffffffffu, l, 5, 16);
  out[32 + l] = __shfl_up_sync(0xffffffffu, l, 3, 16);
  out[64 + l] = __shfl_down_sync(0xffffffffu, l, 3, 8);
  out[96 + l] = __shfl_sync(0xffffffffu, l, 7 + l, 16);
  const unsigned half = l < 16 ? 0x0000ffffu : 0xffff0000u;  // two half-warps, each its own collective
  out[128 + l] = __shfl_xor_sync(half, l * 10, 1);
  double d = l + 0.5;
  out[160 + l] = (int)(2 * __shfl_down_sync(0xffffffffu, d, 1));
}

static void test_execution() {
  float *out = dev<float>(64);
  int *order = dev<int>(256 + 64), *counter = dev<int>(1);
  std::vector<std::vector<int>> orders;
  for (int launch = 0; launch < 2; launch++) {
    CK(cudaMemset(counter, 0, 4));
    block_sum_kernel<<<64, dim3(32, 8)>>>(out, order, counter);
    CK(cudaGetLastError());
    orders.push_back(down(order, 256 + 64));
  }
  const std::vector<float> sums = down(out, 64);
  float want = 0;
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 32; x++) want += x * 2 + y;
  bool ok = true;
  for (float v : sums) ok &= v == want;
  check(ok, "2-D block: barrier + static shared + warp sum (%g, want %g)", sums[0], want);
  int in_order = 0, differ = 0, blocks_in_order = 0;
  for (int i = 0; i < 256; i++) in_order += orders[0][i] == i, differ += orders[0][i] != orders[1][i];
  for (int i = 0; i < 64; i++) blocks_in_order += orders[0][256 + i] == i;
  check(in_order < 32 && differ > 128, "threads run in a random order (%d of 256 in index order, %d differ between "
        "two launches)", in_order, differ);
  check(blocks_in_order < 16, "blocks run in a random order (%d of 64 in index order)", blocks_in_order);

  float *p = dev<float>(8);
  poison_kernel<<<1, 8, 4 * sizeof(float)>>>(p);
  ok = true;
  for (float v : down(p, 8)) ok &= isnan(v);
  check(ok, "static and dynamic shared memory read before written is NaN (all bits set)");

  int *al = dev<int>(1);
  align_kernel<<<1, 32>>>(al);
  check(down(al, 1)[0] == 0, "__align__(16) on a static __shared__ array is honoured");
  cudaFree(al);

  int *v = dev<int>(6);
  vote_kernel<<<1, 96>>>(v);
  const std::vector<int> r = down(v, 6);
  check(r[0] == 1 && r[1] == 1 && r[2] == 32 && (unsigned)r[3] == 0xaaaaaaaau && r[4] == 1 && r[5] == 1,
        "__syncthreads_or/and/count, __ballot_sync, __any_sync, __all_sync (%d %d %d %08x %d %d)", r[0], r[1], r[2],
        r[3], r[4], r[5]);

  int *s = dev<int>(192);
  shfl_kernel<<<1, 32>>>(s);
  const std::vector<int> h = down(s, 192);
  int bad = 0;
  for (int l = 0; l < 32; l++) {
    const int seg16 = l & 16, seg8 = l & 24;
    bad += h[l] != ((l ^ 5) <= (seg16 | 15) ? (l ^ 5) : l);
    bad += h[32 + l] != (l - 3 >= seg16 ? l - 3 : l);
    bad += h[64 + l] != (l + 3 <= (seg8 | 7) ? l + 3 : l);
    bad += h[96 + l] != (seg16 | ((7 + l) & 15));
    bad += h[128 + l] != (l ^ 1) * 10;
    bad += h[160 + l] != (l < 31 ? 2 * (l + 1) + 1 : 2 * l + 1);
  }
  check(bad == 0, "shuffles: xor/up/down/idx with widths 16 and 8, half-warp masks, 8-byte values (%d wrong)", bad);
  cudaFree(out), cudaFree(order), cudaFree(counter), cudaFree(p), cudaFree(v), cudaFree(s);
}

// ---- launch limits --------------------------------------------------------------------------------------------------
__global__ void big_smem_kernel(float *out) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = dyn[(threadIdx.x + 1) % blockDim.x];
}
__global__ void __launch_bounds__(128) bounded_kernel(float *out) { out[threadIdx.x] = 1.0f; }

static void test_launch_limits() {
  float *out = dev<float>(2048);
  big_smem_kernel<<<1, 1025, 0>>>(out);
  check(cudaGetLastError() == cudaErrorInvalidConfiguration, "1025 threads per block: cudaErrorInvalidConfiguration");
  big_smem_kernel<<<dim3(1, 65536), 32>>>(out);
  check(cudaGetLastError() == cudaErrorInvalidConfiguration, "grid y 65536: cudaErrorInvalidConfiguration");
  big_smem_kernel<<<1, 32, 60 * 1024>>>(out);
  check(cudaGetLastError() == cudaErrorInvalidValue, "60 KiB of dynamic shared memory without opting in: refused");
  check(cudaFuncSetAttribute(big_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024) ==
            cudaErrorInvalidValue && cudaGetLastError() == cudaErrorInvalidValue,
        "opting in to more than 227 KiB: refused");
  CK(cudaFuncSetAttribute(big_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 60 * 1024));
  big_smem_kernel<<<1, 32, 60 * 1024>>>(out);
  check(cudaGetLastError() == cudaSuccess && down(out, 32)[5] == 1.0f, "60 KiB after cudaFuncSetAttribute: runs");
  bounded_kernel<<<1, 256>>>(out);
  check(cudaGetLastError() == cudaErrorLaunchOutOfResources, "256 threads into __launch_bounds__(128): refused");
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, bounded_kernel));
  check(fa.maxThreadsPerBlock == 128, "cudaFuncGetAttributes reports the launch bound (%d)", fa.maxThreadsPerBlock);
  cudaFree(out);
}

// ---- runtime API checks -----------------------------------------------------------------------------------------------
static void test_runtime() {
  float host[4] = {1, 2, 3, 4};
  float *d = dev<float>(4);
  check(cudaMemcpy(d, host, 16, cudaMemcpyHostToDevice) == cudaSuccess, "H2D copy");
  check(cudaMemcpy(d, host, 20, cudaMemcpyHostToDevice) == cudaErrorInvalidValue, "H2D copy past the allocation: refused");
  check(cudaMemcpy(host, d, 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue, "H2D copy into host memory: refused");
  check(cudaMemcpy(d, d + 2, 8, cudaMemcpyHostToDevice) == cudaErrorInvalidMemcpyDirection,
        "H2D copy from device memory: refused");
  check(cudaMemset(d + 1, 0, 16) == cudaErrorInvalidValue, "memset past the allocation: refused");
  check(cudaFree(d + 1) == cudaErrorInvalidValue, "cudaFree of an interior pointer: refused");
  CK(cudaFree(d));
  check(cudaFree(d) == cudaErrorInvalidValue, "double cudaFree: refused");
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamDestroy(s));
  check(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle, "a destroyed stream: refused");
  (void)cudaGetLastError();
  int n = 0;
  check(cudaGetDeviceCount(&n) == cudaSuccess && n == 1, "one emulated device");
}

// ---- several devices (ZT_EMU_DEVICES): one address space, each allocation and stream on the device then current --
__global__ void touch_kernel(float *p) { p[threadIdx.x] = 1.0f; }
static void expect_death(const char *what, const char *needle, void (*body)());
static void test_devices() {
  setenv("ZT_EMU_DEVICES", "2", 1);
  // (each call before its check: the order in which a check's arguments are evaluated is unspecified)
  int n = 0, d = -1;
  const cudaError_t count = cudaGetDeviceCount(&n);
  check(count == cudaSuccess && n == 2, "ZT_EMU_DEVICES=2: two devices (%d)", n);
  const cudaError_t set1 = cudaSetDevice(1);
  CK(cudaGetDevice(&d));
  check(set1 == cudaSuccess && d == 1, "cudaSetDevice(1): current %d", d);
  const cudaError_t set2 = cudaSetDevice(2);
  CK(cudaGetDevice(&d));
  check(set2 == cudaErrorInvalidDevice && d == 1, "cudaSetDevice(2) refused, device %d stays current", d);
  (void)cudaGetLastError();
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 1) == cudaSuccess && prop.major == 9 && prop.multiProcessorCount == 132,
        "cudaGetDeviceProperties(1)");
  check(cudaGetDeviceProperties(&prop, 2) == cudaErrorInvalidDevice, "cudaGetDeviceProperties(2) refused");
  (void)cudaGetLastError();
  size_t free0a, free0b, free1a, free1b, total;
  CK(cudaSetDevice(0));
  CK(cudaMemGetInfo(&free0a, &total));
  CK(cudaSetDevice(1));
  CK(cudaMemGetInfo(&free1a, &total));
  float *d1 = dev<float>(1 << 20);
  CK(cudaMemGetInfo(&free1b, &total));
  CK(cudaSetDevice(0));
  CK(cudaMemGetInfo(&free0b, &total));
  check(free1a - free1b == 4u << 20 && free0a == free0b, "an allocation on device 1 uses device 1's memory only");
  cudaPointerAttributes attr;
  CK(cudaPointerGetAttributes(&attr, d1 + 5));
  check(attr.type == cudaMemoryTypeDevice && attr.device == 1,
        "cudaPointerGetAttributes: device memory of device %d, with device 0 current", attr.device);
  float *d0 = dev<float>(32);
  CK(cudaPointerGetAttributes(&attr, d0));
  check(attr.type == cudaMemoryTypeDevice && attr.device == 0, "and of device %d", attr.device);
  cudaMemPool_t p0, p1;
  CK(cudaDeviceGetDefaultMemPool(&p0, 0));
  CK(cudaDeviceGetDefaultMemPool(&p1, 1));
  check(p0 != p1, "one default memory pool per device");
  CK(cudaSetDevice(1));
  cudaStream_t s1;
  CK(cudaStreamCreate(&s1));
  CK(cudaSetDevice(0));
  touch_kernel<<<1, 32, 0, s1>>>(d0);
  check(cudaGetLastError() == cudaErrorInvalidResourceHandle,
        "a launch into device 1's stream with device 0 current: refused");
  CK(cudaMemcpy(d0, d1, 32 * sizeof(float), cudaMemcpyDeviceToDevice));  // copies between devices are allowed (UVA)
  CK(cudaStreamDestroy(s1));
  CK(cudaFree(d1));
  CK(cudaFree(d0));
  expect_death("a kernel on device 0 given device 1's memory", "memory of device 1", [] {
    CK(cudaSetDevice(1));
    float *p = dev<float>(32);
    CK(cudaSetDevice(0));
    touch_kernel<<<1, 32>>>(p);
  });
  unsetenv("ZT_EMU_DEVICES");
}

// ---- CUB ------------------------------------------------------------------------------------------------------------
static void test_cub() {
  const int n = 1000;
  std::vector<uint32_t> keys(n);
  std::vector<int> vals(n);
  for (int i = 0; i < n; i++) keys[i] = (uint32_t)((i * 7919) % 37) | (i % 3 == 0 ? 0x100u : 0u), vals[i] = i;
  uint32_t *ki = dev<uint32_t>(n), *ko = dev<uint32_t>(n);
  int *vi = dev<int>(n), *vo = dev<int>(n);
  CK(cudaMemcpy(ki, keys.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(vi, vals.data(), n * 4, cudaMemcpyHostToDevice));
  size_t bytes = 0;
  CK(cub::DeviceRadixSort::SortPairs(NULL, bytes, ki, ko, vi, vo, n, 0, 6));
  char *tmp = dev<char>(bytes);
  CK(cub::DeviceRadixSort::SortPairs(tmp, bytes, ki, ko, vi, vo, n, 0, 6));  // bits 0..5: bit 8 is ignored
  const std::vector<uint32_t> k = down(ko, n);
  const std::vector<int> v = down(vo, n);
  bool ok = true;
  for (int i = 1; i < n; i++) {
    ok &= (k[i - 1] & 63) <= (k[i] & 63);
    if ((k[i - 1] & 63) == (k[i] & 63)) ok &= v[i - 1] < v[i];  // stable
  }
  for (int i = 0; i < n; i++) ok &= keys[v[i]] == k[i];
  check(ok, "cub SortPairs: stable, ordered by bits [0, 6) only, keys and values moved together");
  size_t small = bytes - 1;
  check(cub::DeviceRadixSort::SortPairs(tmp, small, ki, ko, vi, vo, n, 0, 6) == cudaErrorInvalidValue,
        "cub SortPairs with less temporary storage than the query said: refused");
  check(cub::DeviceRadixSort::SortPairs(tmp, bytes, ki, ki, vi, vo, n, 0, 6) == cudaErrorInvalidValue,
        "cub SortPairs in place: refused");
  std::vector<int> sk = {5, -3, 0, -7, 2};
  int *si = dev<int>(5), *so = dev<int>(5);
  CK(cudaMemcpy(si, sk.data(), 20, cudaMemcpyHostToDevice));
  size_t b2 = 0;
  CK(cub::DeviceRadixSort::SortKeys(NULL, b2, si, so, 5));
  char *t2 = dev<char>(b2);
  CK(cub::DeviceRadixSort::SortKeys(t2, b2, si, so, 5));
  const std::vector<int> r = down(so, 5);
  check(r[0] == -7 && r[1] == -3 && r[2] == 0 && r[3] == 2 && r[4] == 5, "cub SortKeys of signed keys");
  (void)cudaGetLastError();
}

// ---- cuBLASLt ------------------------------------------------------------------------------------------------------
struct Lt {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulPreference_t p;
  cublasLtMatmulAlgo_t algo;
};
static cublasStatus_t lt_plan(Lt &L, cudaDataType_t t, bool ta, bool tb, int m, int n, int k, int lda, int ldb,
                              int ldc, uint32_t epi, const void *bias, void *aux, int64_t aux_ld, uint32_t align) {
  cublasLtCreate(&L.h);
  cublasLtMatmulDescCreate(&L.d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const int32_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_TRANSA, &oa, 4);
  cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_TRANSB, &ob, 4);
  cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, 4);
  cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
  cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, 8);
  cublasLtMatrixLayoutCreate(&L.a, t, ta ? k : m, ta ? m : k, lda);
  cublasLtMatrixLayoutCreate(&L.b, t, tb ? n : k, tb ? k : n, ldb);
  cublasLtMatrixLayoutCreate(&L.c, t, m, n, ldc);
  cublasLtMatmulPreferenceCreate(&L.p);
  for (int attr = CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES; attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES; attr++)
    cublasLtMatmulPreferenceSetAttribute(L.p, (cublasLtMatmulPreferenceAttributes_t)attr, &align, 4);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(L.h, L.d, L.a, L.b, L.c, L.c, L.p, 1, &r, &found);
  if (st == CUBLAS_STATUS_SUCCESS && found == 1) L.algo = r.algo;
  return st;
}

// A (m x k) and B (k x n) stored for ops ta/tb, column-major with the given ld; returns D = epi(A B + beta C + bias).
static void test_lt_case(cudaDataType_t t, bool ta, bool tb, int m, int n, int k, uint32_t epi, float beta) {
  const int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 1, ldc = m + (epi & 128 ? 8 - m % 8 : 2);
  const size_t es = t == CUDA_R_32F ? 4 : 2, na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n),
               nc = (size_t)ldc * n;
  std::vector<float> A(na), B(nb), C(nc), bias(m);
  auto rnd = [](size_t i, int s) { return (float)(((i * 2654435761u + s * 97) % 1000) / 250.0 - 2.0); };
  for (size_t i = 0; i < na; i++) A[i] = rnd(i, 1);
  for (size_t i = 0; i < nb; i++) B[i] = rnd(i, 2);
  for (size_t i = 0; i < nc; i++) C[i] = rnd(i, 3);
  for (int i = 0; i < m; i++) bias[i] = rnd(i, 4);
  const zt_dtype dt = t == CUDA_R_32F ? ZT_DTYPE_FP32 : t == CUDA_R_16F ? ZT_DTYPE_FP16 : ZT_DTYPE_BF16;
  for (auto *v : {&A, &B, &C, &bias}) zt_round_f32(v->data(), v->data(), v->size(), dt);
  auto up = [&](const std::vector<float> &x) {
    std::vector<char> raw(x.size() * es);
    zt_convert(raw.data(), dt, x.data(), ZT_DTYPE_FP32, x.size());
    char *p = dev<char>(raw.size());
    CK(cudaMemcpy(p, raw.data(), raw.size(), cudaMemcpyHostToDevice));
    return p;
  };
  char *dA = up(A), *dB = up(B), *dC = up(C), *dbias = up(bias), *daux = dev<char>(nc * es);
  if (beta == 0.0f) CK(cudaMemset(dC, 0xff, nc * es));  // NaN: must not be read
  Lt L;
  cublasStatus_t st = lt_plan(L, t, ta, tb, m, n, k, lda, ldb, ldc, epi, dbias, daux, ldc, 256);
  const float alpha = 1.5f;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmul(L.h, L.d, &alpha, dA, L.a, dB, L.b, &beta, dC, L.c, dC, L.c, &L.algo, NULL, 0, 0);
  std::vector<char> raw(nc * es), rawaux(nc * es);
  CK(cudaMemcpy(raw.data(), dC, raw.size(), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(rawaux.data(), daux, rawaux.size(), cudaMemcpyDeviceToHost));
  std::vector<float> D(nc), AUX(nc);
  zt_convert(D.data(), ZT_DTYPE_FP32, raw.data(), dt, nc);
  zt_convert(AUX.data(), ZT_DTYPE_FP32, rawaux.data(), dt, nc);
  double worst = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int q = 0; q < k; q++)
        s += (double)A[ta ? q + (size_t)i * lda : i + (size_t)q * lda] * B[tb ? j + (size_t)q * ldb : q + (size_t)j * ldb];
      double x = alpha * s + (beta != 0 ? beta * C[i + (size_t)j * ldc] : 0) + (epi & 4 ? bias[i] : 0);
      if (epi & 128) worst = fmax(worst, fabs(AUX[i + (size_t)j * ldc] - x) / (1 + fabs(x)));
      if (epi & 32) x = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      worst = fmax(worst, fabs(D[i + (size_t)j * ldc] - x) / (1 + fabs(x)));
    }
  const double tol = t == CUDA_R_32F ? 1e-5 : t == CUDA_R_16F ? 2e-3 : 1e-2;
  check(st == CUBLAS_STATUS_SUCCESS && worst <= tol, "cuBLASLt %s op %c%c m=%d n=%d k=%d epilogue %u beta %g: "
        "relative error %.2g (status %d)", t == CUDA_R_32F ? "fp32" : t == CUDA_R_16F ? "fp16" : "bf16",
        ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, epi, beta, worst, (int)st);
  cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(dbias), cudaFree(daux);
}

static void test_cublaslt() {
  for (cudaDataType_t t : {CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F})
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) test_lt_case(t, ta, tb, 13, 7, 29, CUBLASLT_EPILOGUE_DEFAULT, ta ? 0.0f : 1.0f);
  test_lt_case(CUDA_R_32F, true, false, 9, 5, 17, CUBLASLT_EPILOGUE_BIAS, 0.0f);
  test_lt_case(CUDA_R_16BF, true, false, 16, 5, 17, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, 0.0f);
  test_lt_case(CUDA_R_16F, false, true, 24, 6, 11, CUBLASLT_EPILOGUE_GELU_AUX, 0.0f);
  test_lt_case(CUDA_R_16F, false, false, 8, 6, 11, CUBLASLT_EPILOGUE_GELU_BIAS, 1.0f);

  float *a = dev<float>(64 * 64), *c = dev<float>(64 * 64), *small = dev<float>(32);
  Lt L;
  check(lt_plan(L, CUDA_R_32F, false, false, 8, 8, 8, 4, 8, 8, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0, 256) ==
            CUBLAS_STATUS_INVALID_VALUE, "cuBLASLt: ld 4 < 8 rows refused");
  cublasLtMatrixLayout_t wrong;
  cublasLtMatrixLayoutCreate(&wrong, CUDA_R_32F, 9, 8, 9);
  lt_plan(L, CUDA_R_32F, false, false, 8, 8, 8, 8, 8, 8, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0, 256);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(L.h, L.d, L.a, wrong, L.c, L.c, L.p, 1, &r, &found) ==
            CUBLAS_STATUS_INVALID_VALUE, "cuBLASLt: op(B) with 9 rows against k = 8 refused");
  const float one = 1.0f, zero = 0.0f;
  check(cublasLtMatmul(L.h, L.d, &one, a, L.a, a + 64, L.b, &zero, c + 1, L.c, c + 1, L.c, &L.algo, NULL, 0, 0) ==
            CUBLAS_STATUS_INVALID_VALUE, "cuBLASLt: D 4-byte aligned with an algorithm chosen for 256 refused");
  check(cublasLtMatmul(L.h, L.d, &one, a, L.a, small, L.b, &zero, c, L.c, c, L.c, &L.algo, NULL, 0, 0) ==
            CUBLAS_STATUS_INVALID_VALUE, "cuBLASLt: B running past its allocation refused");
  check(lt_plan(L, CUDA_R_16BF, false, false, 12, 8, 8, 12, 8, 12, CUBLASLT_EPILOGUE_GELU_AUX, NULL, c, 12, 256) ==
            CUBLAS_STATUS_INVALID_VALUE, "cuBLASLt: GELU aux ld 12 (not a multiple of 8) refused");
  int64_t v8 = 0;
  check(cublasLtMatmulDescSetAttribute(L.d, CUBLASLT_MATMUL_DESC_TRANSA, &v8, 8) == CUBLAS_STATUS_INVALID_VALUE,
        "cuBLASLt: TRANSA set with 8 bytes (it is int32_t) refused");
  cudaFree(a), cudaFree(c), cudaFree(small);
}

// ---- undefined behaviour the emulator must catch (each in a child process) -----------------------------------------
__global__ void divergent_barrier_kernel() {
  if (threadIdx.x < 32)
    __syncthreads();
  else
    __syncthreads();
}
__global__ void exited_barrier_kernel() {
  if (threadIdx.x == 3) return;
  __syncthreads();
}
__global__ void partial_mask_kernel(int *out) {
  out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, (int)threadIdx.x, 16);
}
__global__ void host_pointer_kernel(float *p) { p[threadIdx.x] = 0.0f; }
__global__ void deadlock_kernel(int *out) {
  if (threadIdx.x == 0) out[0] = __shfl_xor_sync(0xffffffffu, 1, 1);
  __syncthreads();
}
__global__ void big_static_kernel(float *out) {
  __shared__ float a[8192], b[8192];
  a[threadIdx.x] = b[threadIdx.x] = 0.0f;
  out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

static void expect_death(const char *what, const char *needle, void (*body)()) {
  int fds[2];
  if (pipe(fds)) exit(2);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    body();
    _exit(0);
  }
  close(fds[1]);
  std::string err;
  char buf[4096];
  ssize_t r;
  while ((r = read(fds[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const bool died = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
  check(died && err.find(needle) != std::string::npos, "%s is caught (\"%s\")", what, needle);
  if (!(died && err.find(needle) != std::string::npos)) printf("    child stderr: %s\n", err.c_str());
}

static void test_undefined_behaviour() {
  expect_death("divergent __syncthreads", "divergent barriers", [] { divergent_barrier_kernel<<<1, 64>>>(); });
  expect_death("__syncthreads after a thread returned", "be reached by every thread of the block",
               [] { exited_barrier_kernel<<<1, 64>>>(); });
  expect_death("a shuffle reading a lane outside its mask", "not in the mask", [] {
    int *o = dev<int>(16);
    partial_mask_kernel<<<1, 16>>>(o);
  });
  expect_death("a host pointer passed to a kernel", "not device memory", [] {
    static float h[32];
    host_pointer_kernel<<<1, 32>>>(h);
  });
  expect_death("a warp shuffle waiting on lanes held at a barrier", "deadlock", [] {
    int *o = dev<int>(1);
    deadlock_kernel<<<1, 64>>>(o);
  });
  expect_death("64 KiB of static shared memory", "past the 48 KiB limit", [] {
    float *o = dev<float>(32);
    big_static_kernel<<<1, 32>>>(o);
  });
  // ZT_EMU_HOST_GUARD: kernels, copies and memsets reach guarded device memory; host code does not
  expect_death("a host read of guarded device memory", "host code accessed device memory", [] {
    setenv("ZT_EMU_HOST_GUARD", "1", 1);
    float *p = dev<float>(64);
    touch_kernel<<<1, 32>>>(p);
    CK(cudaMemset(p + 32, 0, 32 * sizeof(float)));
    const std::vector<float> h = down(p, 64);
    if (h[0] != 1.0f || h[31] != 1.0f || h[32] != 0.0f || h[63] != 0.0f) _exit(3);  // no message: the check fails
    fprintf(stderr, "the guarded copies work\n");
    volatile float x = p[1];  // the host reading device memory without a copy
    (void)x;
  });
}

int main() {
  printf("emu_selftest: the CPU emulator's own checks\n");
  test_conversions();
  test_execution();
  test_launch_limits();
  test_runtime();
  test_devices();
  test_cub();
  test_cublaslt();
  test_undefined_behaviour();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
