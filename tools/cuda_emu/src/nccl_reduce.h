// The element-wise reductions of the emulated NCCL (src/nccl.cpp): P contributions folded in rank order (0, 1, ...,
// P-1), so every rank that folds the same contributions gets the same bits; the 16-bit float types are folded in fp32
// and rounded once with the emulator's own conversions (include/zt_emu/half.h).
#pragma once
#include <cmath>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "nccl.h"
#include "zt_emu/half.h"

namespace zt_emu {
namespace nccl {

// Element size of a data type; 0 for one the emulator does not handle (fp8, or out of range).
static inline size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

// Storage type -> the type values are folded in, and back.
template <class T> struct Acc {
  using type = T;
  static T load(const T &x) { return x; }
  static T store(T a) { return a; }
};
struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };
template <> struct Acc<F16> {
  using type = float;
  static float load(const F16 &x) { return half_bits_to_float(x.bits); }
  static F16 store(float a) { return F16{float_to_half_bits(a)}; }
};
template <> struct Acc<BF16> {
  using type = float;
  static float load(const BF16 &x) { return bf16_bits_to_float(x.bits); }
  static BF16 store(float a) { return BF16{float_to_bf16_bits(a)}; }
};

// out[i] = contribution 0 op contribution 1 op ... op contribution P-1, contribution r at base + r * stride bytes.
// Integers wrap (as on the GPU); float max/min drop a NaN against a number (fmax/fmin, as NCCL's kernels do);
// ncclAvg multiplies each float contribution by 1/P before summing (NCCL's PreMulSum) and divides an integer sum.
template <class T>
static void fold(void *out, const char *base, size_t stride, int P, size_t n, ncclRedOp_t op) {
  using A = typename Acc<T>::type;
  const T *c0 = (const T *)base;
  T *o = (T *)out;
  if constexpr (std::is_integral<A>::value) {
    using U = typename std::make_unsigned<A>::type;  // wrapping arithmetic without signed overflow
    for (size_t i = 0; i < n; i++) {
      A a = c0[i];
      for (int r = 1; r < P; r++) {
        const A x = ((const T *)(base + r * stride))[i];
        switch (op) {
          case ncclSum: case ncclAvg: a = (A)((U)a + (U)x); break;
          case ncclProd: a = (A)((U)a * (U)x); break;
          case ncclMax: a = x > a ? x : a; break;
          default: a = x < a ? x : a; break;
        }
      }
      o[i] = op == ncclAvg ? (A)(a / (A)P) : a;
    }
  } else {
    const A inv = (A)(1.0 / P);
    for (size_t i = 0; i < n; i++) {
      A a = Acc<T>::load(c0[i]);
      if (op == ncclAvg) a *= inv;
      for (int r = 1; r < P; r++) {
        const A x = Acc<T>::load(((const T *)(base + r * stride))[i]);
        switch (op) {
          case ncclSum: a += x; break;
          case ncclAvg: a += x * inv; break;
          case ncclProd: a *= x; break;
          case ncclMax: a = std::fmax(a, x); break;
          default: a = std::fmin(a, x); break;
        }
      }
      o[i] = Acc<T>::store(a);
    }
  }
}

static inline void reduce(void *out, const char *base, size_t stride, int P, size_t n, ncclDataType_t t,
                          ncclRedOp_t op) {
  switch (t) {
    case ncclInt8: fold<int8_t>(out, base, stride, P, n, op); break;
    case ncclUint8: fold<uint8_t>(out, base, stride, P, n, op); break;
    case ncclInt32: fold<int32_t>(out, base, stride, P, n, op); break;
    case ncclUint32: fold<uint32_t>(out, base, stride, P, n, op); break;
    case ncclInt64: fold<int64_t>(out, base, stride, P, n, op); break;
    case ncclUint64: fold<uint64_t>(out, base, stride, P, n, op); break;
    case ncclFloat16: fold<F16>(out, base, stride, P, n, op); break;
    case ncclBfloat16: fold<BF16>(out, base, stride, P, n, op); break;
    case ncclFloat32: fold<float>(out, base, stride, P, n, op); break;
    case ncclFloat64: fold<double>(out, base, stride, P, n, op); break;
    default: break;  // refused by the caller's checks
  }
}

}  // namespace nccl
}  // namespace zt_emu
