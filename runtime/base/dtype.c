/* fp16/bf16 <-> fp32 by bit manipulation; no reliance on compiler _Float16 support. */
#include "runtime/base/dtype.h"

#include <math.h>
#include <string.h>

#include "runtime/base/error.h"

size_t zt_dtype_size(zt_dtype dt) { return dt == ZT_DTYPE_FP32 ? 4 : 2; }

const char *zt_dtype_name(zt_dtype dt) {
  switch (dt) {
    case ZT_DTYPE_FP32: return "fp32";
    case ZT_DTYPE_FP16: return "fp16";
    case ZT_DTYPE_BF16: return "bf16";
  }
  return "?";
}

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t zt_fp32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb; /* ties to even; carries into the exponent (and to inf) correctly */
  return (uint16_t)(u >> 16);
}

float zt_bf16_to_fp32(uint16_t b) { return u2f((uint32_t)b << 16); }

uint16_t zt_fp32_to_fp16(float f) {
  uint32_t u = f2u(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;           /* NaN */
  if (a >= 0x477ff000u) return sign | 0x7c00u;          /* >= 65520 rounds to inf (and inf) */
  if (a < 0x38800000u) {                                /* below 2^-14: subnormal half or zero */
    if (a < 0x33000000u) return sign;                   /* below 2^-25: rounds to zero */
    uint32_t e = a >> 23;                               /* 102..112 */
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                           /* value = m * 2^(e-150); half ulp is 2^-24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) q++;
    return sign | (uint16_t)q;
  }
  uint32_t lsb = (a >> 13) & 1u;
  a += 0xfffu + lsb;                                    /* ties to even on the 13 dropped bits */
  return sign | (uint16_t)(((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ffu));
}

float zt_fp16_to_fp32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    if (m == 0) return u2f(sign);
    float v = (float)m * (1.0f / 16777216.0f);          /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
  return u2f(sign | ((e + 112) << 23) | (m << 13));
}

void zt_convert(void *dst, zt_dtype dst_dt, const void *src, zt_dtype src_dt, size_t n) {
  if (dst_dt == src_dt) { memmove(dst, src, n * zt_dtype_size(dst_dt)); return; }
  float *tmp = NULL;
  const float *f32 = src;
  if (src_dt != ZT_DTYPE_FP32) {
    tmp = dst_dt == ZT_DTYPE_FP32 ? dst : zt_malloc(n * sizeof(float), "dtype conversion");
    const uint16_t *s = src;
    #pragma omp parallel for if (n > 1 << 16)
    for (size_t i = 0; i < n; i++)
      tmp[i] = src_dt == ZT_DTYPE_FP16 ? zt_fp16_to_fp32(s[i]) : zt_bf16_to_fp32(s[i]);
    f32 = tmp;
  }
  if (dst_dt != ZT_DTYPE_FP32) {
    uint16_t *d = dst;
    #pragma omp parallel for if (n > 1 << 16)
    for (size_t i = 0; i < n; i++)
      d[i] = dst_dt == ZT_DTYPE_FP16 ? zt_fp32_to_fp16(f32[i]) : zt_fp32_to_bf16(f32[i]);
  }
  if (tmp && tmp != dst) free(tmp);
}

size_t zt_round_f32(float *dst, const float *src, size_t n, zt_dtype dt) {
  size_t bad = 0;
  #pragma omp parallel for reduction(+ : bad) if (n > 1 << 16)
  for (size_t i = 0; i < n; i++) {
    float r = dt == ZT_DTYPE_FP16 ? zt_fp16_to_fp32(zt_fp32_to_fp16(src[i]))
              : dt == ZT_DTYPE_BF16 ? zt_bf16_to_fp32(zt_fp32_to_bf16(src[i])) : src[i];
    bad += !isfinite(r);
    dst[i] = r;
  }
  return bad;
}

size_t zt_count_nonrepresentable(const float *x, size_t n, zt_dtype dt) {
  /* the largest finite value of the type, and the threshold from which rounding gives infinity */
  const float lim = dt == ZT_DTYPE_FP16 ? 65520.0f : dt == ZT_DTYPE_BF16 ? 3.3961776e38f : INFINITY;
  size_t bad = 0;
  #pragma omp parallel for reduction(+ : bad) if (n > 1 << 16)
  for (size_t i = 0; i < n; i++) bad += !(fabsf(x[i]) < lim);
  return bad;
}
