/* NumPy's new-style generator as DeepSpeed's data sampler uses it: numpy.random.default_rng(seed), i.e.
 * Generator(PCG64(SeedSequence(seed))), with the draws the sampler makes (Generator.shuffle of a 1-D array or a
 * list, Generator.random, Generator.choice(n, size, replace=True, p=weights)). Bit for bit NumPy's, so the sample
 * order of our data sampler equals DeepSpeed's for the same data_efficiency.seed (data/numpy_random.h is the
 * legacy RandomState that Megatron's datasets use). */
#ifndef ZT_NUMPY_GENERATOR_H
#define ZT_NUMPY_GENERATOR_H

#include <stdint.h>

/* PCG64's state: the 128-bit LCG state and increment (hi, lo words) and the buffered upper half of the last 64-bit
 * draw that a 32-bit draw left (NumPy's has_uint32 / uinteger). */
typedef struct {
  uint64_t state_hi, state_lo, inc_hi, inc_lo;
  int has_uint32;
  uint32_t uinteger;
} zt_np_generator;

/* default_rng(seed) for a non-negative seed below 2^64 (SeedSequence's entropy words, pool of 4, PCG64 seeding). */
void zt_np_generator_seed(zt_np_generator *g, uint64_t seed);
uint64_t zt_np_generator_u64(zt_np_generator *g);
uint32_t zt_np_generator_u32(zt_np_generator *g);
/* Generator.random(): (u64 >> 11) * 2^-53. */
double zt_np_generator_double(zt_np_generator *g);
/* A uniform integer in [0, max] (NumPy's random_interval: mask and reject, 32-bit draws while max fits 32 bits). */
uint64_t zt_np_generator_interval(zt_np_generator *g, uint64_t max);
/* Generator.shuffle of a 1-D array (or a list) of n elements: Fisher-Yates from the end. */
void zt_np_generator_shuffle_i64(zt_np_generator *g, int64_t *x, int64_t n);
/* Generator.choice(n_weights, size, replace=True, p=weights) followed by np.bincount(..., minlength=n_weights):
 * counts[i] = how many of the `size` draws chose i. weights[i] are the probabilities (the cumulative sum is
 * normalized by its last entry, as NumPy does; the caller checked they sum to 1). */
void zt_np_generator_choice_counts(zt_np_generator *g, const double *weights, int n_weights, int64_t size,
                                   int64_t *counts);

#endif
