/* NumPy's legacy RandomState (MT19937) as far as Megatron's datasets use it:
 * RandomState(seed) seeding (init_genrand), 32- and 64-bit draws, doubles, geometric draws (T5's span lengths),
 * and shuffle() of a 1-D array (Fisher-Yates from the end, bounded draws by mask-and-reject). Reproducing it bit for bit makes
 * our sample order identical to Megatron-DeepSpeed's for the same data and --seed. */
#ifndef ZT_NUMPY_RANDOM_H
#define ZT_NUMPY_RANDOM_H

#include <stdint.h>

typedef struct {
  uint32_t key[624];
  int pos;
} zt_np_random;

void zt_np_random_seed(zt_np_random *r, uint32_t seed);
uint32_t zt_np_random_u32(zt_np_random *r);
uint64_t zt_np_random_u64(zt_np_random *r);
/* random_interval's mask: max with every lower bit set (shared with data/numpy_generator.c). */
static inline uint64_t zt_np_interval_mask(uint64_t max) {
  for (int s = 1; s < 64; s *= 2) max |= max >> s;
  return max;
}
/* A uniform integer in [0, max] (NumPy's random_interval). */
uint64_t zt_np_random_interval(zt_np_random *r, uint64_t max);
/* RandomState.random_sample(): a double in [0, 1) from two draws (27 and 26 bits). */
double zt_np_random_double(zt_np_random *r);
/* RandomState.geometric(p) for 0 < p < 1/3 (the legacy inversion: ceil(log1p(-U) / log(1 - p)); the search NumPy
 * uses from p = 1/3 up is not implemented: p is refused there). */
int64_t zt_np_random_geometric(zt_np_random *r, double p);

/* numpy.random.RandomState.shuffle of a 1-D array of n elements. */
void zt_np_shuffle_i32(zt_np_random *r, int32_t *x, int64_t n);
void zt_np_shuffle_u32(zt_np_random *r, uint32_t *x, int64_t n);
void zt_np_shuffle_i64(zt_np_random *r, int64_t *x, int64_t n);

#endif
