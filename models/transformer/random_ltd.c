/* Random-LTD's token draw (see random_ltd.h); the gather and scatter around a layer are in stack.c. */
#include "models/transformer/random_ltd.h"

#include <stdlib.h>

#include "runtime/base/philox.h"

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void zt_ltd_draw(uint64_t seed, uint64_t step, uint64_t sample, int layer, int T, int r, int32_t *perm,
                 int32_t *kept) {
  uint32_t k0, k1;
  zt_philox_key(seed, ZT_RNG_RANDOM_LTD, &k0, &k1);
  k0 ^= (uint32_t)step * 0x9E3779B1u; /* one key per step */
  k1 ^= (uint32_t)(step >> 32) * 0x85EBCA77u;
  for (int i = 0; i < T; i++) perm[i] = i;
  /* a partial Fisher-Yates shuffle: position j takes a uniform pick of the T - j not yet taken (the 32-bit
   * multiply-shift has a bias below T / 2^32) */
  for (int j = 0; j < r; j += 4) {
    const zt_philox_ctr ctr = {{(uint32_t)j, (uint32_t)sample, (uint32_t)(sample >> 32), (uint32_t)layer}};
    const zt_philox_ctr w = zt_philox4x32(ctr, k0, k1);
    for (int q = 0; q < 4 && j + q < r; q++) {
      const int at = j + q;
      const int pick = at + (int)(((uint64_t)w.v[q] * (uint64_t)(T - at)) >> 32);
      const int32_t t = perm[at];
      perm[at] = perm[pick];
      perm[pick] = t;
    }
  }
  for (int j = 0; j < r; j++) kept[j] = perm[j];
  qsort(kept, (size_t)r, sizeof *kept, cmp_i32);
}
