/* Philox streams: uniform and normal draws addressed by element index. */
#include "runtime/base/philox.h"

#include <math.h>

static inline zt_philox_ctr block_at(uint64_t seed, zt_rng_purpose purpose, uint64_t stream, uint64_t block) {
  zt_philox_ctr c = {{(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)}};
  uint32_t k0, k1;
  zt_philox_key(seed, purpose, &k0, &k1);
  return zt_philox4x32(c, k0, k1);
}

float zt_philox_uniform(uint64_t seed, zt_rng_purpose purpose, uint64_t stream, uint64_t index) {
  zt_philox_ctr r = block_at(seed, purpose, stream, index >> 2);
  return zt_u32_to_uniform(r.v[index & 3]);
}

void zt_philox_normal_fill(float *out, uint64_t n, uint64_t first, float mean, float std,
                           uint64_t seed, zt_rng_purpose purpose, uint64_t stream) {
  /* Elements 2j and 2j+1 share Philox block j: Box-Muller on its first two words gives the pair. */
  #pragma omp parallel for schedule(static) if (n > 65536)
  for (uint64_t i = 0; i < n; i++) {
    uint64_t e = first + i;
    zt_philox_ctr r = block_at(seed, purpose, stream, e >> 1);
    double u1 = ((double)r.v[0] + 1.0) / 4294967297.0;   /* (0,1]: log is finite */
    double u2 = (double)r.v[1] / 4294967296.0;
    double rad = sqrt(-2.0 * log(u1));
    double z = (e & 1) ? rad * sin(2.0 * M_PI * u2) : rad * cos(2.0 * M_PI * u2);
    out[i] = mean + std * (float)z;
  }
}
