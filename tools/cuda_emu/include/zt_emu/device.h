// The device side of the CPU emulator (tools/cuda_emu/README.md): what a .cu file sees besides the runtime API.
// Every transformed .cu file (gen.py) includes this first. Threads of a block run as fibers scheduled by
// src/sched.cpp; this header holds the built-in variables, qualifiers, barriers, warp collectives, atomics, math
// intrinsics and the kernel launch that gen.py substitutes for kernel<<<grid, block, smem, stream>>>(args).
#pragma once
#ifndef __cplusplus
#error "zt_emu/device.h is C++ (the emulated .cu files are compiled as C++17)"
#endif
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

#include "zt_emu/api.h"
#include "zt_emu/half.h"

#ifndef __CUDACC__
#define __CUDACC__ 1  // the emulated files are "compiled by nvcc": headers enable their device qualifiers
#endif

// ---- qualifiers -----------------------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)  // gen.py moves the bound into the kernel body (checked at launch)
#define __grid_constant__
#define __constant__
// gen.py rewrites every __shared__ declaration; one left over means the file was not transformed.
#define __shared__ ZT_EMU_error_shared_declaration_not_transformed_by_gen_py

// ---- vector types (CUDA's alignment) ----------------------------------------------------------------------------
#define ZT_EMU_VEC(T, name, a2, a4)                                                          \
  struct name##1 { T x; };                                                                   \
  struct __attribute__((aligned(a2))) name##2 { T x, y; };                                   \
  struct name##3 { T x, y, z; };                                                             \
  struct __attribute__((aligned(a4))) name##4 { T x, y, z, w; };                             \
  static inline name##2 make_##name##2(T x, T y) { return name##2{x, y}; }                   \
  static inline name##4 make_##name##4(T x, T y, T z, T w) { return name##4{x, y, z, w}; }
ZT_EMU_VEC(float, float, 8, 16)
ZT_EMU_VEC(int, int, 8, 16)
ZT_EMU_VEC(unsigned int, uint, 8, 16)
ZT_EMU_VEC(short, short, 4, 8)
ZT_EMU_VEC(unsigned short, ushort, 4, 8)
ZT_EMU_VEC(double, double, 16, 16)
ZT_EMU_VEC(long long, longlong, 16, 16)
ZT_EMU_VEC(unsigned long long, ulonglong, 16, 16)
#undef ZT_EMU_VEC
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

namespace zt_emu {

// ---- the running thread and block -------------------------------------------------------------------------------
struct ThreadState {
  uint3 idx;       // threadIdx
  int linear;      // x + y Dx + z Dx Dy
  int lane, warp;  // linear % 32, linear / 32
};
extern ThreadState *cur;
extern uint3 cur_block;
extern dim3 cur_grid, cur_block_dim;

// ---- kernels --------------------------------------------------------------------------------------------------
// One per kernel (per template specialization): gen.py puts ZT_EMU_KERNEL_BEGIN at the top of every __global__
// body, which declares it. cudaFuncSetAttribute and every launch find a kernel's record by running the kernel in
// probe mode, where ZT_EMU_KERNEL_BEGIN records it and returns before the body.
struct KernelInfo {
  const char *signature;     // __PRETTY_FUNCTION__
  int launch_bound;          // __launch_bounds__ maxThreadsPerBlock, 0 without
  int max_dynamic_smem = -1;  // cudaFuncAttributeMaxDynamicSharedMemorySize; -1: not set (48 KiB minus static)
  int carveout = -1;
  long launches = 0;
  size_t static_smem = 0;     // the most static __shared__ bytes a block of it has used so far
};
extern bool probing;
extern KernelInfo *probed;
inline bool kernel_enter(KernelInfo *k) {
  if (!probing) return false;
  probed = k;
  return true;
}
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
template <class Call>
KernelInfo *probe_kernel(const char *what, Call &&call) {
  probing = true;
  probed = nullptr;
  call();
  probing = false;
  if (!probed) fatal("%s: the kernel has no ZT_EMU_KERNEL_BEGIN (was its file transformed by gen.py?)", what);
  return probed;
}

struct LaunchSite {
  const char *kernel, *file;
  int line;
};
// Checks the configuration as the runtime does; false (and the sticky error of cudaGetLastError set) refuses it.
bool launch_check(KernelInfo *k, const LaunchSite &site, dim3 grid, dim3 block, size_t smem, cudaStream_t stream);
// A pointer passed to a kernel must be NULL or point into device (or pinned host) memory, aligned for its type.
void check_kernel_pointer(KernelInfo *k, const LaunchSite &site, int index, const void *p, size_t align);
void run_grid(KernelInfo *k, const LaunchSite &site, dim3 grid, dim3 block, size_t smem, void (*thread_main)(void *),
              void *ctx);

template <class Params, size_t... I>
void check_pointer_params(KernelInfo *k, const LaunchSite &site, const Params &p, std::index_sequence<I...>) {
  [[maybe_unused]] auto one = [&](int index, const auto &v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_pointer_v<V> && std::is_object_v<std::remove_pointer_t<V>>) {
      using P = std::remove_cv_t<std::remove_pointer_t<V>>;
      size_t align = 1;
      if constexpr (!std::is_void_v<P>) align = alignof(P);
      check_kernel_pointer(k, site, index, (const void *)v, align);
    }
  };
  (one((int)I, std::get<I>(p)), ...);
}

// kernel<<<grid, block, smem, stream>>>(args...) becomes launch_kernel("kernel", __FILE__, __LINE__, grid, block,
// smem, stream, [&](auto &&...p) { kernel(p...); }, args...): the arguments are evaluated once, on the host, and
// every thread calls the kernel with its own copies of them (kernel parameters are per thread, by value).
template <class Body, class... Args>
void launch_kernel(const char *text, const char *file, int line, dim3 grid, dim3 block, size_t smem,
                   cudaStream_t stream, Body body, Args &&...args) {
  const DeviceAccess access;
  using Params = std::tuple<std::decay_t<Args>...>;
  Params params(std::forward<Args>(args)...);
  const LaunchSite site{text, file, line};
  KernelInfo *k = probe_kernel(text, [&] { std::apply(body, params); });
  if (!launch_check(k, site, grid, block, smem, stream)) return;
  check_pointer_params(k, site, params, std::index_sequence_for<Args...>());
  struct Ctx {
    Body *body;
    Params *params;
  } ctx{&body, &params};
  run_grid(k, site, grid, block, smem, [](void *c) { std::apply(*((Ctx *)c)->body, *((Ctx *)c)->params); }, &ctx);
}

// ---- shared memory --------------------------------------------------------------------------------------------
// A static __shared__ variable: one per block, poisoned (all bytes 0xFF: NaN in fp32/bf16/fp16) when the block
// starts. gen.py turns `__shared__ [__align__(n)] T name[d]...;` into ZT_EMU_SHARED(T, name, [d]..., n or 0).
struct SharedSlot {
  uint64_t block_generation = 0;
  void *p = nullptr;
};
void *shared_static(SharedSlot *slot, size_t bytes, size_t align, const char *name);
void *shared_dynamic();  // the block's dynamic shared memory (poisoned likewise)

// ---- barriers and warp collectives ----------------------------------------------------------------------------
enum { SYNC_PLAIN, SYNC_OR, SYNC_AND, SYNC_COUNT };
int sync_block(int kind, int pred, const char *file, int line);
enum { WARP_SHFL_IDX, WARP_SHFL_UP, WARP_SHFL_DOWN, WARP_SHFL_XOR, WARP_BALLOT, WARP_ANY, WARP_ALL, WARP_SYNC };
uint64_t warp_collective(int kind, unsigned mask, uint64_t value, int arg, int width, const char *file, int line);

template <class T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <class T>
inline T from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}
template <class T>
inline T shfl(int kind, const char *file, int line, unsigned mask, T var, int arg, int width = 32) {
  return from_bits<T>(warp_collective(kind, mask, to_bits(var), arg, width, file, line));
}

// ---- intrinsics ------------------------------------------------------------------------------------------------
// Round-to-nearest operations that must not be contracted into an FMA (nvcc guarantees that for __f*_rn): the
// asm barrier keeps the compiler from fusing the rounded product with a later add.
inline float rn(float x) {
#if defined(__x86_64__)
  __asm__("" : "+x"(x));
#elif defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile float v = x;
  x = v;
#endif
  return x;
}
}  // namespace zt_emu

#define threadIdx (static_cast<const uint3 &>(::zt_emu::cur->idx))
#define blockIdx (static_cast<const uint3 &>(::zt_emu::cur_block))
#define blockDim (static_cast<const dim3 &>(::zt_emu::cur_block_dim))
#define gridDim (static_cast<const dim3 &>(::zt_emu::cur_grid))
static const int warpSize = 32;

#define ZT_EMU_KERNEL_BEGIN(bound)                                                                       \
  static ::zt_emu::KernelInfo zt_emu_kernel_info_{__PRETTY_FUNCTION__, (int)(bound)};                    \
  if (::zt_emu::kernel_enter(&zt_emu_kernel_info_)) return

#define ZT_EMU_SHARED(T, name, dims, align)                                                               \
  static ::zt_emu::SharedSlot zt_emu_slot_##name;                                                        \
  typedef T zt_emu_type_##name dims;                                                                     \
  zt_emu_type_##name &name = *(zt_emu_type_##name *)::zt_emu::shared_static(                               \
      &zt_emu_slot_##name, sizeof(zt_emu_type_##name),                                                   \
      (size_t)(align) > alignof(zt_emu_type_##name) ? (size_t)(align) : alignof(zt_emu_type_##name), #name)

#define __syncthreads() ((void)::zt_emu::sync_block(::zt_emu::SYNC_PLAIN, 0, __FILE__, __LINE__))
#define __syncthreads_or(p) ::zt_emu::sync_block(::zt_emu::SYNC_OR, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_and(p) ::zt_emu::sync_block(::zt_emu::SYNC_AND, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_count(p) ::zt_emu::sync_block(::zt_emu::SYNC_COUNT, (p) != 0, __FILE__, __LINE__)
#define __syncwarp(...) ((void)::zt_emu::warp_collective(::zt_emu::WARP_SYNC, (__VA_ARGS__ + 0) ? (__VA_ARGS__ + 0) : 0xffffffffu, 0, 0, 32, __FILE__, __LINE__))
#define __shfl_sync(...) ::zt_emu::shfl(::zt_emu::WARP_SHFL_IDX, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) ::zt_emu::shfl(::zt_emu::WARP_SHFL_UP, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) ::zt_emu::shfl(::zt_emu::WARP_SHFL_DOWN, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::zt_emu::shfl(::zt_emu::WARP_SHFL_XOR, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(m, p) ((unsigned)::zt_emu::warp_collective(::zt_emu::WARP_BALLOT, (m), (p) != 0, 0, 32, __FILE__, __LINE__))
#define __any_sync(m, p) ((int)::zt_emu::warp_collective(::zt_emu::WARP_ANY, (m), (p) != 0, 0, 32, __FILE__, __LINE__))
#define __all_sync(m, p) ((int)::zt_emu::warp_collective(::zt_emu::WARP_ALL, (m), (p) != 0, 0, 32, __FILE__, __LINE__))
static inline void __threadfence() {}
static inline void __threadfence_block() {}

// Atomics: the fibers of the emulator never run at the same time, so a read-modify-write is atomic as written.
#define ZT_EMU_ATOMIC_RMW(name, expr)                     \
  template <class T>                                      \
  inline T name(T *p, T v) {                              \
    const T old = *p;                                     \
    *p = (expr);                                          \
    return old;                                           \
  }
ZT_EMU_ATOMIC_RMW(atomicAdd, old + v)
ZT_EMU_ATOMIC_RMW(atomicSub, old - v)
ZT_EMU_ATOMIC_RMW(atomicExch, v)
ZT_EMU_ATOMIC_RMW(atomicMin, v < old ? v : old)
ZT_EMU_ATOMIC_RMW(atomicMax, v > old ? v : old)
ZT_EMU_ATOMIC_RMW(atomicAnd, old & v)
ZT_EMU_ATOMIC_RMW(atomicOr, old | v)
ZT_EMU_ATOMIC_RMW(atomicXor, old ^ v)
#undef ZT_EMU_ATOMIC_RMW
template <class T>
inline T atomicCAS(T *p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}

// Bit casts and rounding intrinsics.
static inline unsigned __float_as_uint(float x) { return zt_emu::f2u(x); }
static inline int __float_as_int(float x) { return (int)zt_emu::f2u(x); }
static inline float __uint_as_float(unsigned x) { return zt_emu::u2f(x); }
static inline float __int_as_float(int x) { return zt_emu::u2f((unsigned)x); }
static inline long long __double_as_longlong(double x) {
  long long r;
  memcpy(&r, &x, 8);
  return r;
}
static inline double __longlong_as_double(long long x) {
  double r;
  memcpy(&r, &x, 8);
  return r;
}
static inline float __fmul_rn(float a, float b) { return zt_emu::rn(a * b); }
static inline float __fadd_rn(float a, float b) { return zt_emu::rn(a + b); }
static inline float __fsub_rn(float a, float b) { return zt_emu::rn(a - b); }
static inline float __fdiv_rn(float a, float b) { return zt_emu::rn(a / b); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __frcp_rn(float a) { return zt_emu::rn(1.0f / a); }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __saturatef(float x) { return x > 1.0f ? 1.0f : x > 0.0f ? x : 0.0f; }  // NaN -> 0
static inline float __fdividef(float a, float b) { return a / b; }
// The fast-math intrinsics as the hardware computes them from its base-2 units (ex2.approx(x log2 e)): the
// product's rounding is emulated, the unit's own approximation error (up to 2 ulp) is not.
// (glibc declares __expf and friends itself: the emulator's versions are reached through macros)
static inline float zt_emu_fast_expf(float x) { return exp2f(zt_emu::rn(x * 1.4426950408889634f)); }
static inline float zt_emu_fast_logf(float x) { return zt_emu::rn(log2f(x) * 0.6931471805599453f); }
static inline float zt_emu_fast_powf(float x, float y) { return exp2f(zt_emu::rn(y * log2f(x))); }
#define __expf(x) zt_emu_fast_expf(x)
#define __logf(x) zt_emu_fast_logf(x)
#define __powf(x, y) zt_emu_fast_powf(x, y)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
template <class T>
static inline T __ldg(const T *p) {
  return *p;
}

// min/max of CUDA's math headers (host and device): the usual arithmetic conversions, as their overload set gives.
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
static inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (C)b < (C)a ? (C)b : (C)a;
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
static inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (C)a < (C)b ? (C)b : (C)a;
}

// Kernel attributes (the templated forms of cuda_runtime.h): the kernel is identified by running it in probe mode.
namespace zt_emu {
cudaError_t func_set_attribute(KernelInfo *k, cudaFuncAttribute attr, int value);
cudaError_t func_get_attributes(KernelInfo *k, cudaFuncAttributes *attr);
template <class... P>
KernelInfo *probe_pointer(void (*kernel)(P...)) {
  return probe_kernel("cudaFuncSetAttribute/cudaFuncGetAttributes", [&] { kernel(std::decay_t<P>()...); });
}
}  // namespace zt_emu
template <class... P>
static inline cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  return zt_emu::func_set_attribute(zt_emu::probe_pointer(kernel), attr, value);
}
template <class... P>
static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, void (*kernel)(P...)) {
  return zt_emu::func_get_attributes(zt_emu::probe_pointer(kernel), attr);
}
