/* Philox4x32-10 counter-based random numbers (Salmon et al., SC'11).
 * A stream is keyed by (seed, purpose); every draw is a pure function of its counter, so dropout masks,
 * initial weights and data order do not depend on thread count, parallel layout or backend. */
#ifndef ZT_PHILOX_H
#define ZT_PHILOX_H

#include <stdint.h>

/* Host and device: the CUDA kernels draw the very same numbers (dropout masks bit for bit). */
#ifdef __CUDACC__
#define ZT_HD __host__ __device__
#else
#define ZT_HD
#endif

typedef struct { uint32_t v[4]; } zt_philox_ctr;

/* One Philox4x32-10 block: four independent 32-bit words from (counter, 64-bit key).
 * Inline so loops over independent counters vectorize. */
ZT_HD static inline zt_philox_ctr zt_philox4x32(zt_philox_ctr c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c.v[0];
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c.v[2];
    zt_philox_ctr n;
    n.v[0] = (uint32_t)(p1 >> 32) ^ c.v[1] ^ k0;
    n.v[1] = (uint32_t)p1;
    n.v[2] = (uint32_t)(p0 >> 32) ^ c.v[3] ^ k1;
    n.v[3] = (uint32_t)p0;
    c = n;
    k0 += 0x9E3779B9u; /* Weyl key schedule */
    k1 += 0xBB67AE85u;
  }
  return c;
}

/* Purposes keep the streams of different uses apart (part of the key). */
typedef enum {
  ZT_RNG_INIT = 1,        /* parameter initialization */
  ZT_RNG_DROPOUT = 2,     /* dropout masks */
  ZT_RNG_DATA = 3,        /* synthetic data */
  ZT_RNG_SAMPLE = 4,      /* text generation's sampling (evaluate/sampling.c) */
  ZT_RNG_RANDOM_LTD = 5,  /* random-LTD's kept tokens (models/transformer/random_ltd.c) */
  ZT_RNG_MOE = 6,         /* the MoE gate's token priorities and noise (models/moe/gating.c) */
} zt_rng_purpose;

/* The 64-bit key of a (seed, purpose) stream family. */
ZT_HD static inline void zt_philox_key(uint64_t seed, zt_rng_purpose purpose, uint32_t *k0, uint32_t *k1) {
  *k0 = (uint32_t)seed;
  *k1 = (uint32_t)(seed >> 32) ^ ((uint32_t)purpose * 0x85EBCA6Bu);
}

/* Uniform float in [0,1) from 32 random bits (24-bit mantissa, never 1.0). */
ZT_HD static inline float zt_u32_to_uniform(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* Element `index` of the uniform stream (seed, purpose, stream): counter = (index/4, index>>34, stream). */
float zt_philox_uniform(uint64_t seed, zt_rng_purpose purpose, uint64_t stream, uint64_t index);

/* Fills out[0..n) with N(mean, std) draws for elements [first, first+n) of the normal stream
 * (seed, purpose, stream); element i's value is independent of first and n (Box-Muller on pairs). */
void zt_philox_normal_fill(float *out, uint64_t n, uint64_t first, float mean, float std,
                           uint64_t seed, zt_rng_purpose purpose, uint64_t stream);

#endif
