/* MT19937 (Matsumoto & Nishimura) with NumPy's legacy seeding, bounded draws, doubles, geometric draws and shuffle. */
#include "data/numpy_random.h"

#include <math.h>

#include "runtime/base/error.h"

#define MT_N 624
#define MT_M 397

void zt_np_random_seed(zt_np_random *r, uint32_t seed) {
  for (int i = 0; i < MT_N; i++) {
    r->key[i] = seed;
    seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
  }
  r->pos = MT_N;
}

static void mt_generate(zt_np_random *r) {
  const uint32_t upper = 0x80000000u, lower = 0x7fffffffu, matrix = 0x9908b0dfu;
  uint32_t *k = r->key;
  for (int i = 0; i < MT_N; i++) {
    uint32_t y = (k[i] & upper) | (k[(i + 1) % MT_N] & lower);
    k[i] = k[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? matrix : 0u);
  }
  r->pos = 0;
}

uint32_t zt_np_random_u32(zt_np_random *r) {
  if (r->pos == MT_N) mt_generate(r);
  uint32_t y = r->key[r->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t zt_np_random_u64(zt_np_random *r) {
  uint64_t hi = zt_np_random_u32(r);
  return hi << 32 | zt_np_random_u32(r);
}

double zt_np_random_double(zt_np_random *r) {
  const int32_t a = (int32_t)(zt_np_random_u32(r) >> 5), b = (int32_t)(zt_np_random_u32(r) >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

int64_t zt_np_random_geometric(zt_np_random *r, double p) {
  zt_check(p > 0 && p < 1.0 / 3.0, "internal error",
           "geometric(%g): only 0 < p < 1/3 (NumPy's inversion) is implemented", p);
  return (int64_t)ceil(log1p(-zt_np_random_double(r)) / log(1.0 - p));
}

uint64_t zt_np_random_interval(zt_np_random *r, uint64_t max) {
  if (max == 0) return 0;
  const uint64_t mask = zt_np_interval_mask(max);
  uint64_t v;
  if (max <= 0xffffffffu) {
    do v = zt_np_random_u32(r) & mask; while (v > max);
  } else {
    do v = zt_np_random_u64(r) & mask; while (v > max);
  }
  return v;
}

#define SHUFFLE_BODY                                        \
  for (int64_t i = n - 1; i >= 1; i--) {                    \
    int64_t j = (int64_t)zt_np_random_interval(r, (uint64_t)i); \
    __typeof__(x[0]) t = x[i];                              \
    x[i] = x[j];                                            \
    x[j] = t;                                               \
  }

void zt_np_shuffle_i32(zt_np_random *r, int32_t *x, int64_t n) { SHUFFLE_BODY }
void zt_np_shuffle_u32(zt_np_random *r, uint32_t *x, int64_t n) { SHUFFLE_BODY }
void zt_np_shuffle_i64(zt_np_random *r, int64_t *x, int64_t n) { SHUFFLE_BODY }
