/* NumPy's SeedSequence, PCG64 (XSL-RR 128/64) and the Generator draws of DeepSpeed's data sampler
 * (numpy/random/bit_generator.pyx, src/pcg64, distributions.c, _generator.pyx). */
#include "data/numpy_generator.h"

#include <stdlib.h>

#include "data/numpy_random.h"
#include "runtime/base/error.h"

/* ---- SeedSequence: entropy -> pool of 4 uint32 -> generate_state ---- */
enum { POOL = 4 };
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u

static uint32_t hashmix(uint32_t value, uint32_t *hash_const) {
  value ^= *hash_const;
  *hash_const *= MULT_A;
  value *= *hash_const;
  value ^= value >> 16;
  return value;
}

static uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
  r ^= r >> 16;
  return r;
}

/* ---- PCG64 ---- */
#define PCG_MULT_HI 2549297995355413924ULL
#define PCG_MULT_LO 4865540595714422341ULL

static void step(zt_np_generator *g) { /* state = state * mult + inc (mod 2^128) */
  const unsigned __int128 s = ((unsigned __int128)g->state_hi << 64) | g->state_lo;
  const unsigned __int128 m = ((unsigned __int128)PCG_MULT_HI << 64) | PCG_MULT_LO;
  const unsigned __int128 i = ((unsigned __int128)g->inc_hi << 64) | g->inc_lo;
  const unsigned __int128 n = s * m + i;
  g->state_hi = (uint64_t)(n >> 64);
  g->state_lo = (uint64_t)n;
}

void zt_np_generator_seed(zt_np_generator *g, uint64_t seed) {
  /* _coerce_to_uint32_array(seed): little-endian 32-bit words, at least one */
  uint32_t entropy[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  const int n_entropy = (seed >> 32) ? 2 : 1;
  uint32_t pool[POOL], hc = INIT_A;
  for (int i = 0; i < POOL; i++) pool[i] = hashmix(i < n_entropy ? entropy[i] : 0u, &hc);
  for (int src = 0; src < POOL; src++)
    for (int dst = 0; dst < POOL; dst++)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &hc));
  /* (no entropy words beyond the pool: a seed has at most 2) */
  uint32_t words[8];
  uint32_t hb = INIT_B;
  for (int i = 0; i < 8; i++) { /* generate_state(4, np.uint64): 8 uint32 words, viewed as 4 little-endian uint64 */
    uint32_t v = pool[i % POOL];
    v ^= hb;
    hb *= MULT_B;
    v *= hb;
    v ^= v >> 16;
    words[i] = v;
  }
  uint64_t val[4];
  for (int i = 0; i < 4; i++) val[i] = (uint64_t)words[2 * i] | ((uint64_t)words[2 * i + 1] << 32);
  /* pcg64_set_seed: initstate = (val[0] << 64) | val[1], initseq = (val[2] << 64) | val[3] */
  const unsigned __int128 initseq = ((unsigned __int128)val[2] << 64) | val[3];
  const unsigned __int128 inc = (initseq << 1) | 1u;
  g->state_hi = g->state_lo = 0;
  g->inc_hi = (uint64_t)(inc >> 64);
  g->inc_lo = (uint64_t)inc;
  step(g);
  const unsigned __int128 s = (((unsigned __int128)g->state_hi << 64) | g->state_lo) +
                              (((unsigned __int128)val[0] << 64) | val[1]);
  g->state_hi = (uint64_t)(s >> 64);
  g->state_lo = (uint64_t)s;
  step(g);
  g->has_uint32 = 0;
  g->uinteger = 0;
}

uint64_t zt_np_generator_u64(zt_np_generator *g) {
  step(g);
  const uint64_t x = g->state_hi ^ g->state_lo;
  const unsigned rot = (unsigned)(g->state_hi >> 58);
  return (x >> rot) | (x << ((64u - rot) & 63u));
}

uint32_t zt_np_generator_u32(zt_np_generator *g) {
  if (g->has_uint32) {
    g->has_uint32 = 0;
    return g->uinteger;
  }
  const uint64_t next = zt_np_generator_u64(g);
  g->has_uint32 = 1;
  g->uinteger = (uint32_t)(next >> 32);
  return (uint32_t)next;
}

double zt_np_generator_double(zt_np_generator *g) {
  return (double)(zt_np_generator_u64(g) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t zt_np_generator_interval(zt_np_generator *g, uint64_t max) {
  if (max == 0) return 0;
  const uint64_t mask = zt_np_interval_mask(max);
  uint64_t v;
  if (max <= 0xffffffffULL) {
    do v = zt_np_generator_u32(g) & mask; while (v > max);
  } else {
    do v = zt_np_generator_u64(g) & mask; while (v > max);
  }
  return v;
}

void zt_np_generator_shuffle_i64(zt_np_generator *g, int64_t *x, int64_t n) {
  for (int64_t i = n - 1; i >= 1; i--) {
    const int64_t j = (int64_t)zt_np_generator_interval(g, (uint64_t)i);
    const int64_t t = x[i];
    x[i] = x[j];
    x[j] = t;
  }
}

void zt_np_generator_choice_counts(zt_np_generator *g, const double *weights, int n_weights, int64_t size,
                                   int64_t *counts) {
  double *cdf = zt_malloc((size_t)n_weights * sizeof *cdf, "choice cdf");
  double acc = 0;
  for (int i = 0; i < n_weights; i++) cdf[i] = acc += weights[i]; /* p.cumsum(): sequential */
  const double last = cdf[n_weights - 1];
  for (int i = 0; i < n_weights; i++) cdf[i] /= last;
  for (int i = 0; i < n_weights; i++) counts[i] = 0;
  for (int64_t k = 0; k < size; k++) {
    const double u = zt_np_generator_double(g);
    int lo = 0, hi = n_weights; /* searchsorted(side='right'): the first i with cdf[i] > u */
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (cdf[mid] <= u) lo = mid + 1;
      else hi = mid;
    }
    counts[lo < n_weights ? lo : n_weights - 1]++;
  }
  free(cdf);
}
