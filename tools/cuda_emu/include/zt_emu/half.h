// __half and __nv_bfloat16 for the CPU emulator: 16-bit storage types whose conversions round as the device's
// cvt instructions do: float -> half/bf16 to nearest even, overflow to infinity, fp16 subnormals exact, NaN to the
// canonical 0x7fff; half/bf16 -> float exact (a NaN keeps its payload, as a widening does). Implemented here, not
// borrowed from runtime/base/dtype.c, so that the CPU reference and the emulated device do not share the code under
// test; the emulator's self-test compares the two on every 16-bit value and on the rounding boundaries.
#pragma once
#include <stdint.h>
#include <string.h>

namespace zt_emu {
static inline uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t float_to_half_bits(float f) {
  const uint32_t u = f2u(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;                  // NaN: canonical
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to 65536 or more: infinity
  if (a < 0x38800000u) {                                // below 2^-14: a subnormal half (or zero)
    if (a <= 0x33000000u) return (uint16_t)sign;         // at most 2^-25 (half of the smallest subnormal): 0
    const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  const uint32_t r = a + 0xfffu + ((a >> 13) & 1u);     // to nearest even on the 13 dropped bits
  return (uint16_t)(sign | ((((r >> 23) - 112) << 10) | ((r >> 13) & 0x3ffu)));
}
static inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = (float)m * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
  return u2f(sign | ((e + 112) << 23) | (m << 13));
}
static inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // NaN: canonical
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float bf16_bits_to_float(uint16_t b) { return u2f((uint32_t)b << 16); }
}  // namespace zt_emu

struct __half_raw {
  unsigned short x;
};
struct __nv_bfloat16_raw {
  unsigned short x;
};

// As cuda_fp16.hpp without __CUDA_NO_HALF_CONVERSIONS__: constructible from and convertible to float (rounding
// to nearest even). No arithmetic operators: kernels here convert explicitly.
struct __half {
  unsigned short __x;
  __half() = default;
  __half(__half_raw r) : __x(r.x) {}
  __half(float f) : __x(zt_emu::float_to_half_bits(f)) {}
  __half(double d) : __x(zt_emu::float_to_half_bits((float)d)) {}
  operator float() const { return zt_emu::half_bits_to_float(__x); }
  operator __half_raw() const { return __half_raw{__x}; }
};
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(__nv_bfloat16_raw r) : __x(r.x) {}
  __nv_bfloat16(float f) : __x(zt_emu::float_to_bf16_bits(f)) {}
  __nv_bfloat16(double d) : __x(zt_emu::float_to_bf16_bits((float)d)) {}
  operator float() const { return zt_emu::bf16_bits_to_float(__x); }
  operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
};
static_assert(sizeof(__half) == 2 && sizeof(__nv_bfloat16) == 2, "16-bit storage types");
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

static inline float __half2float(__half h) { return zt_emu::half_bits_to_float(h.__x); }
static inline __half __float2half(float f) { return __half_raw{zt_emu::float_to_half_bits(f)}; }
static inline __half __float2half_rn(float f) { return __half_raw{zt_emu::float_to_half_bits(f)}; }
static inline float __bfloat162float(__nv_bfloat16 b) { return zt_emu::bf16_bits_to_float(b.__x); }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16_raw{zt_emu::float_to_bf16_bits(f)}; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16_raw{zt_emu::float_to_bf16_bits(f)}; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short x) { return __half_raw{x}; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short x) { return __nv_bfloat16_raw{x}; }
