/* Philox4x32-10 tests: the Random123 known-answer vectors, stream separation, uniform and normal
 * moments, and the slicing independence that makes dropout masks and initial weights independent
 * of how work is split (element i of a fill depends only on i). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/philox.h"
#include "tests/unit/testutil.h"

/* Known-answer vectors from Random123's kat_vectors (philox4x32 10 rounds). */
static void test_kat(void) {
  static const struct { uint32_t ctr[4], key[2], out[4]; const char *name; } kat[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}, "philox_kat_zero"},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}, "philox_kat_ones"},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}, "philox_kat_pi"},
  };
  for (size_t t = 0; t < sizeof(kat) / sizeof(kat[0]); t++) {
    zt_philox_ctr c;
    memcpy(c.v, kat[t].ctr, sizeof(c.v));
    zt_philox_ctr r = zt_philox4x32(c, kat[t].key[0], kat[t].key[1]);
    tu_check(memcmp(r.v, kat[t].out, sizeof(r.v)) == 0, kat[t].name,
             "got %08x %08x %08x %08x want %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3],
             kat[t].out[0], kat[t].out[1], kat[t].out[2], kat[t].out[3]);
  }
}

static void test_u32_to_uniform(void) {
  float lo = zt_u32_to_uniform(0), hi = zt_u32_to_uniform(0xffffffffu);
  float mid = zt_u32_to_uniform(0x80000000u);
  tu_check(lo == 0.0f && hi < 1.0f && hi == 1.0f - 1.0f / 16777216.0f && mid == 0.5f,
           "u32_to_uniform_range", "u(0)=%.9g u(max)=%.9g u(2^31)=%.9g", lo, hi, mid);
}

/* Uniform draws: in [0,1), deterministic, mean 1/2 and variance 1/12 over 1e6 draws. The standard
 * error of the mean is sqrt(1/12/1e6) = 2.9e-4, so 2e-3 is ~7 sigma; the variance's standard error
 * is sqrt(1/180/1e6) = 7.5e-5, so 5e-4 is ~7 sigma. */
static void test_uniform_moments(void) {
  const uint64_t n = 1000000;
  double s = 0, s2 = 0;
  int out_of_range = 0;
  for (uint64_t i = 0; i < n; i++) {
    float u = zt_philox_uniform(1234, ZT_RNG_DROPOUT, 7, i);
    if (!(u >= 0.0f && u < 1.0f)) out_of_range++;
    s += u;
    s2 += (double)u * u;
  }
  double mean = s / n, var = s2 / n - mean * mean;
  tu_check(out_of_range == 0, "uniform_in_range", "%d draws outside [0,1)", out_of_range);
  tu_check(fabs(mean - 0.5) < 2e-3, "uniform_mean", "mean %.6f want 0.5", mean);
  tu_check(fabs(var - 1.0 / 12) < 5e-4, "uniform_variance", "var %.6f want %.6f", var, 1.0 / 12);

  /* Consecutive draws must not be correlated (lag-1 and lag-4, the block size); correlation's
   * standard error is 1/sqrt(n) = 1e-3. */
  for (int lag = 1; lag <= 4; lag += 3) {
    double c = 0;
    for (uint64_t i = 0; i + lag < n; i++)
      c += (zt_philox_uniform(1234, ZT_RNG_DROPOUT, 7, i) - 0.5) *
           (zt_philox_uniform(1234, ZT_RNG_DROPOUT, 7, i + lag) - 0.5);
    c = c / (n - lag) * 12.0;
    char name[64];
    snprintf(name, sizeof(name), "uniform_lag%d_correlation", lag);
    tu_check(fabs(c) < 6e-3, name, "correlation %.5f", c);
  }
}

/* Every draw is a pure function of (seed, purpose, stream, index), and changing any of them gives
 * a different stream: compare 64 draws for equality with the reference stream. */
static void test_uniform_streams(void) {
  const uint64_t seed = 42, stream = 3;
  int same_repeat = 1, diff_seed = 0, diff_purpose = 0, diff_stream = 0, diff_hi = 0, diff_seedhi = 0;
  for (uint64_t i = 0; i < 64; i++) {
    float u = zt_philox_uniform(seed, ZT_RNG_DROPOUT, stream, i);
    same_repeat &= u == zt_philox_uniform(seed, ZT_RNG_DROPOUT, stream, i);
    diff_seed += u != zt_philox_uniform(seed + 1, ZT_RNG_DROPOUT, stream, i);
    diff_seedhi += u != zt_philox_uniform(seed | (1ull << 40), ZT_RNG_DROPOUT, stream, i);
    diff_purpose += u != zt_philox_uniform(seed, ZT_RNG_INIT, stream, i);
    diff_stream += u != zt_philox_uniform(seed, ZT_RNG_DROPOUT, stream | (1ull << 36), i);
    /* index >> 34 is the counter's second word: index + 2^34 must not alias index. */
    diff_hi += u != zt_philox_uniform(seed, ZT_RNG_DROPOUT, stream, i + (1ull << 34));
  }
  tu_check(same_repeat, "uniform_deterministic", "a repeated draw differed");
  /* Two independent 24-bit uniforms coincide with probability 6e-8; allow one. */
  tu_check(diff_seed >= 63 && diff_seedhi >= 63 && diff_purpose >= 63 && diff_stream >= 63 &&
               diff_hi >= 63,
           "uniform_streams_distinct",
           "of 64 draws, differ: seed %d, seed_hi %d, purpose %d, stream_hi %d, index+2^34 %d",
           diff_seed, diff_seedhi, diff_purpose, diff_stream, diff_hi);
  int distinct_in_block = 1;
  for (uint64_t i = 0; i < 4; i++)
    for (uint64_t j = i + 1; j < 4; j++)
      distinct_in_block &= zt_philox_uniform(seed, ZT_RNG_DATA, stream, i) !=
                           zt_philox_uniform(seed, ZT_RNG_DATA, stream, j);
  tu_check(distinct_in_block, "uniform_block_words_distinct", "two of the 4 words of a block agree");
}

/* The documented stream layout: element `index` is word index%4 of the block at counter
 * (index/4 low 32 bits, index>>34, stream low, stream high) under the (seed, purpose) key, so a
 * backend that generates whole blocks (4 draws per Philox call) reproduces the same draws. */
static void test_uniform_layout(void) {
  static const uint64_t idx[] = {0, 1, 2, 3, 4, 7, 1000003, (1ull << 34) - 1, 1ull << 34,
                                 (5ull << 34) + 6, 0xfffffffffffffffull};
  static const uint64_t streams[] = {0, 1, (3ull << 20) ^ 37, 0x123456789abull};
  static const uint64_t seeds[] = {0, 1234, 0xdeadbeefcafef00dull};
  int bad = 0;
  char detail[160] = "";
  for (int s = 0; s < 3; s++)
    for (int t = 0; t < 4; t++)
      for (int i = 0; i < 11; i++) {
        uint64_t e = idx[i], st = streams[t];
        uint32_t k0, k1;
        zt_philox_key(seeds[s], ZT_RNG_DROPOUT, &k0, &k1);
        zt_philox_ctr c = {{(uint32_t)(e >> 2), (uint32_t)(e >> 34), (uint32_t)st, (uint32_t)(st >> 32)}};
        float want = zt_u32_to_uniform(zt_philox4x32(c, k0, k1).v[e & 3]);
        float got = zt_philox_uniform(seeds[s], ZT_RNG_DROPOUT, st, e);
        if (got != want && !bad++)
          snprintf(detail, sizeof(detail), "seed %llu stream %llu index %llu: got %.9g want %.9g",
                   (unsigned long long)seeds[s], (unsigned long long)st, (unsigned long long)e, got,
                   want);
      }
  tu_check(!bad, "uniform_counter_layout", "%d of 132 draws differ; first %s", bad, detail);
  uint32_t a0, a1, b0, b1;
  zt_philox_key(7, ZT_RNG_INIT, &a0, &a1);
  zt_philox_key(7, ZT_RNG_DROPOUT, &b0, &b1);
  tu_check(a0 != b0 || a1 != b1, "philox_key_purpose_distinct", "keys %08x%08x and %08x%08x", a0,
           a1, b0, b1);
}

/* Normal fill: moments of 1e6 draws (mean se 1e-3, std se 7e-4, 4th moment se ~5e-3), tail mass,
 * mean/std scaling, and slicing independence (same element index -> bit-identical value no matter
 * which first/n the fill was called with, serial or OpenMP-parallel). */
static void test_normal(void) {
  const uint64_t n = 1000000;
  float *z = tu_falloc(n);
  zt_philox_normal_fill(z, n, 0, 0.0f, 1.0f, 99, ZT_RNG_INIT, 5);
  double s = 0, s2 = 0, s4 = 0;
  size_t tail = 0, nonfinite = 0;
  for (uint64_t i = 0; i < n; i++) {
    double v = z[i];
    if (!isfinite(v)) nonfinite++;
    s += v;
    s2 += v * v;
    s4 += v * v * v * v;
    tail += fabs(v) > 3.0;
  }
  double mean = s / n, var = s2 / n - mean * mean, kurt = s4 / n / (var * var);
  tu_check(nonfinite == 0, "normal_finite", "%zu non-finite draws", nonfinite);
  tu_check(fabs(mean) < 5e-3, "normal_mean", "mean %.6f want 0", mean);
  tu_check(fabs(sqrt(var) - 1.0) < 4e-3, "normal_std", "std %.6f want 1", sqrt(var));
  tu_check(fabs(kurt - 3.0) < 0.05, "normal_kurtosis", "E[z^4]/var^2 %.4f want 3", kurt);
  /* P(|z| > 3) = 0.0027; binomial se on 1e6 is 5.2e-5. */
  tu_check(fabs(tail / (double)n - 0.0026998) < 4e-4, "normal_tail", "P(|z|>3) %.6f want 0.0027",
           tail / (double)n);
  /* Lag-1 correlation, which pairs the two Box-Muller outputs of a block (cos and sin). */
  double c = 0;
  for (uint64_t i = 0; i + 1 < n; i++) c += (double)z[i] * z[i + 1];
  c /= (n - 1);
  tu_check(fabs(c) < 6e-3, "normal_lag1_correlation", "E[z_i z_i+1] %.5f", c);

  /* Slicing: odd and even starting points, small and (OpenMP-sized) large fills. */
  static const uint64_t firsts[] = {0, 1, 37, 65536, 499999};
  static const uint64_t lens[] = {1, 2, 100, 200001, 500001};
  int ok = 1;
  char detail[160] = "";
  float *part = tu_falloc(n);
  for (int a = 0; a < 5 && ok; a++)
    for (int b = 0; b < 5 && ok; b++) {
      uint64_t f = firsts[a], len = lens[b];
      if (f + len > n) continue;
      zt_philox_normal_fill(part, len, f, 0.0f, 1.0f, 99, ZT_RNG_INIT, 5);
      for (uint64_t i = 0; i < len; i++)
        if (memcmp(&part[i], &z[f + i], sizeof(float)) != 0) {
          snprintf(detail, sizeof(detail), "first %llu n %llu: element %llu is %.9g, full fill has %.9g",
                   (unsigned long long)f, (unsigned long long)len, (unsigned long long)(f + i),
                   part[i], z[f + i]);
          ok = 0;
          break;
        }
    }
  tu_check(ok, "normal_slicing_independent", "%s", detail);

  /* mean + std * z, elementwise, to fp32 rounding of the affine map. */
  const uint64_t m = 1001;
  zt_philox_normal_fill(part, m, 10, 3.0f, 0.5f, 99, ZT_RNG_INIT, 5);
  double worst = 0;
  for (uint64_t i = 0; i < m; i++) worst = fmax(worst, fabs(part[i] - (3.0 + 0.5 * z[10 + i])));
  tu_check(worst < 1e-5, "normal_mean_std_scaling", "max |fill(3,0.5) - (3+0.5 z)| = %.3g", worst);

  int diff_stream = 0, diff_seed = 0, diff_purpose = 0;
  zt_philox_normal_fill(part, 64, 0, 0.0f, 1.0f, 99, ZT_RNG_INIT, 6);
  for (int i = 0; i < 64; i++) diff_stream += part[i] != z[i];
  zt_philox_normal_fill(part, 64, 0, 0.0f, 1.0f, 100, ZT_RNG_INIT, 5);
  for (int i = 0; i < 64; i++) diff_seed += part[i] != z[i];
  zt_philox_normal_fill(part, 64, 0, 0.0f, 1.0f, 99, ZT_RNG_DATA, 5);
  for (int i = 0; i < 64; i++) diff_purpose += part[i] != z[i];
  tu_check(diff_stream == 64 && diff_seed == 64 && diff_purpose == 64, "normal_streams_distinct",
           "of 64 draws, differ: stream %d, seed %d, purpose %d", diff_stream, diff_seed,
           diff_purpose);
  free(part);
  free(z);
}

int main(void) {
  test_kat();
  test_u32_to_uniform();
  test_uniform_moments();
  test_uniform_streams();
  test_uniform_layout();
  test_normal();
  return tu_finish();
}
