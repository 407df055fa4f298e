/* fp16/bf16 conversion tests: exhaustive decoding and round trips of all 65536 patterns, and
 * fp32 -> fp16/bf16 round-to-nearest-even against an exact reference built in double (rint on the
 * value divided by its quantum), over edge cases, every tie point of the half grid and random floats.
 * `test_dtype --dump FILE N` instead writes N float inputs and their fp16 encodings for
 * test_dtype_oracle.py (uint32 bits[N] then uint16 halves[N], native byte order). */
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "tests/unit/testutil.h"

static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static int half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu); }
static int bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu); }

/* Exact value of a half pattern, decoded from the IEEE binary16 definition. */
static double ref_half_value(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

/* Rounds |x| (finite, nonzero) to a binary format with `mbits` stored mantissa bits, minimum normal
 * exponent emin and maximum exponent emax, ties to even, and returns the bit pattern without sign
 * (all-ones exponent on overflow). x / quantum is exact in double for every float input, and rint
 * rounds to nearest-even in the default rounding mode, so this is a single correct rounding. */
static uint32_t ref_round(double x, int mbits, int emin, int emax) {
  int e;
  frexp(x, &e);
  int E = e - 1 < emin ? emin : e - 1;               /* floor(log2 x), clamped to the subnormal range */
  double r = rint(ldexp(x, mbits - E));              /* integer significand in [0, 2^(mbits+1)] */
  uint32_t one = 1u << mbits;
  if (r == 0) return 0;
  if (E == emin && r < one) return (uint32_t)r;      /* subnormal (r == one rolls into the normal) */
  if (r == 2.0 * one) { r = one; E++; }              /* rounded up into the next binade */
  uint32_t inf = ((uint32_t)(2 * emax + 1)) << mbits;
  if (E > emax) return inf;
  return ((uint32_t)(E + emax) << mbits) | ((uint32_t)r - one);
}

static uint16_t ref_fp16(float f) {
  uint16_t s = signbit(f) ? 0x8000u : 0;
  if (isnan(f)) return s | 0x7e00u;
  if (isinf(f)) return s | 0x7c00u;
  if (f == 0) return s;
  return s | (uint16_t)ref_round(fabs((double)f), 10, -14, 15);
}
static uint16_t ref_bf16(float f) {
  uint16_t s = signbit(f) ? 0x8000u : 0;
  if (isnan(f)) return s | 0x7fc0u;
  if (isinf(f)) return s | 0x7f80u;
  if (f == 0) return s;
  return s | (uint16_t)ref_round(fabs((double)f), 7, -126, 127);
}

/* Accumulates mismatches of one conversion over many inputs; NaN inputs need only a NaN output. */
typedef struct { const char *name; long n, bad; float first_in; uint16_t got, want; } conv_stats;

static void conv_one(conv_stats *st, float f, int bf16) {
  uint16_t got = bf16 ? zt_fp32_to_bf16(f) : zt_fp32_to_fp16(f);
  uint16_t want = bf16 ? ref_bf16(f) : ref_fp16(f);
  int ok = isnan(f) ? (bf16 ? bf16_is_nan(got) : half_is_nan(got)) : got == want;
  st->n++;
  if (!ok && st->bad++ == 0) { st->first_in = f; st->got = got; st->want = want; }
}
static void conv_report(const conv_stats *st) {
  tu_check(st->bad == 0 && st->n > 0, st->name,
           "%ld of %ld wrong; first: in %.9g (0x%08x) got 0x%04x want 0x%04x", st->bad, st->n,
           st->first_in, f_bits(st->first_in), st->got, st->want);
}

/* The reference itself is checked on hand-computed answers, so a shared misunderstanding of the
 * format cannot make both agree. */
static void test_edge_cases(void) {
  static const struct { float in; uint16_t h; } cases[] = {
    {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000},
    {65504.0f, 0x7bff}, {65519.99f, 0x7bff}, {65520.0f, 0x7c00}, {-65520.0f, 0xfc00},
    {65536.0f, 0x7c00}, {3.4028235e38f, 0x7c00},
    {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {-0x1p-25f, 0x8000},  /* tie to even: 0 */
    {0x1.000002p-25f, 0x0001},                                      /* just above the tie */
    {0x1.8p-24f, 0x0002},                                           /* 1.5 quanta: tie to 2 */
    {0x1.4p-23f, 0x0002},                                           /* 2.5 quanta: tie to 2 */
    {0x1p-14f, 0x0400}, {0x1.ffcp-15f, 0x0400},                     /* 1023.5 quanta: tie up to 1024 */
    {0x1.ff8p-15f, 0x03ff}, {0x1.ff4p-15f, 0x03fe},                 /* 1023 quanta; 1022.5: tie down */
    {0x1p-149f, 0x0000}, {-0x1p-149f, 0x8000},
    {0x1.002p+0f, 0x3c00}, {0x1.006p+0f, 0x3c02}, {0x1.002002p+0f, 0x3c01}, /* ties, above */
    {0x1.ffcp+15f, 0x7bff}, {0x1.ffap+15f, 0x7bfe}, {0x1.ffa002p+15f, 0x7bff}, /* 65488 tie */
  };
  int bad = 0;
  char detail[200] = "";
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint16_t got = zt_fp32_to_fp16(cases[i].in), ref = ref_fp16(cases[i].in);
    if (got != cases[i].h || ref != cases[i].h) {
      if (!bad++)
        snprintf(detail, sizeof(detail), "in %a: zt 0x%04x, reference 0x%04x, expected 0x%04x",
                 cases[i].in, got, ref, cases[i].h);
    }
  }
  tu_check(!bad, "fp16_edge_cases", "%d wrong; first %s", bad, detail);

  static const struct { uint32_t in; uint16_t h; } special[] = {
    {0x7f800000u, 0x7c00}, {0xff800000u, 0xfc00}, {0x7fc00000u, 0x7e00}, {0x7f800001u, 0x7e00},
    {0xffc00000u, 0xfe00}, {0x7fffffffu, 0x7e00},
  };
  bad = 0;
  for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
    uint16_t got = zt_fp32_to_fp16(bits_f(special[i].in));
    int want_nan = half_is_nan(special[i].h);
    int ok = want_nan ? half_is_nan(got) && (got & 0x8000u) == (special[i].h & 0x8000u)
                      : got == special[i].h;
    if (!ok && !bad++) snprintf(detail, sizeof(detail), "in 0x%08x got 0x%04x", special[i].in, got);
  }
  tu_check(!bad, "fp16_inf_nan", "%d wrong; first %s", bad, detail);

  static const struct { uint32_t in; uint16_t b; } bcases[] = {
    {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80},   /* tie, even below */
    {0x3f818000u, 0x3f82},                          /* tie, odd below: up */
    {0x3f808001u, 0x3f81}, {0x3f807fffu, 0x3f80},
    {0x7f7fffffu, 0x7f80},                          /* FLT_MAX rounds to inf */
    {0x7f7f7fffu, 0x7f7f}, {0x7f7f8000u, 0x7f80},   /* largest finite bf16 vs its tie to inf */
    {0x00000001u, 0x0000}, {0x00008000u, 0x0000},   /* float subnormals: tie to even 0 */
    {0x00018000u, 0x0002}, {0x00008001u, 0x0001},
    {0x80000000u, 0x8000}, {0x7f800000u, 0x7f80}, {0xff800000u, 0xff80},
  };
  bad = 0;
  for (size_t i = 0; i < sizeof(bcases) / sizeof(bcases[0]); i++) {
    uint16_t got = zt_fp32_to_bf16(bits_f(bcases[i].in)), ref = ref_bf16(bits_f(bcases[i].in));
    if ((got != bcases[i].b || ref != bcases[i].b) && !bad++)
      snprintf(detail, sizeof(detail), "in 0x%08x: zt 0x%04x, reference 0x%04x, expected 0x%04x",
               bcases[i].in, got, ref, bcases[i].b);
  }
  tu_check(!bad, "bf16_edge_cases", "%d wrong; first %s", bad, detail);

  /* NaNs whose payload lives only in the low 16 bits must not truncate to infinity. */
  static const uint32_t nans[] = {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7f80ffffu, 0x7fffffffu};
  bad = 0;
  for (size_t i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
    uint16_t got = zt_fp32_to_bf16(bits_f(nans[i]));
    if ((!bf16_is_nan(got) || (got >> 15) != (nans[i] >> 31)) && !bad++)
      snprintf(detail, sizeof(detail), "in 0x%08x got 0x%04x", nans[i], got);
  }
  tu_check(!bad, "bf16_nan", "%d wrong; first %s", bad, detail);
}

/* All 65536 half patterns: decoding is exact, and encoding the decoded value gives the pattern back
 * (NaNs stay NaN). Same for bf16. */
static void test_exhaustive_16bit(void) {
  long bad_dec = 0, bad_rt = 0, bbad_dec = 0, bbad_rt = 0;
  char d1[120] = "", d2[120] = "", d3[120] = "", d4[120] = "";
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = zt_fp16_to_fp32(h);
    double want = ref_half_value(h);
    int dec_ok = half_is_nan(h) ? isnan(f) : ((double)f == want && !!signbit(f) == !!signbit(want));
    if (!dec_ok && !bad_dec++) snprintf(d1, sizeof(d1), "0x%04x -> %.9g want %.9g", h, f, want);
    uint16_t back = zt_fp32_to_fp16(f);
    int rt_ok = half_is_nan(h) ? half_is_nan(back) : back == h;
    if (!rt_ok && !bad_rt++) snprintf(d2, sizeof(d2), "0x%04x -> %.9g -> 0x%04x", h, f, back);

    float g = zt_bf16_to_fp32(h);
    uint32_t gb = f_bits(g);
    if (gb != (uint32_t)h << 16 && !bbad_dec++)
      snprintf(d3, sizeof(d3), "0x%04x -> 0x%08x", h, gb);
    uint16_t bback = zt_fp32_to_bf16(g);
    int brt_ok = bf16_is_nan(h) ? bf16_is_nan(bback) : bback == h;
    if (!brt_ok && !bbad_rt++) snprintf(d4, sizeof(d4), "0x%04x -> 0x%08x -> 0x%04x", h, gb, bback);
  }
  tu_check(!bad_dec, "fp16_decode_exhaustive", "%ld wrong; first %s", bad_dec, d1);
  tu_check(!bad_rt, "fp16_roundtrip_exhaustive", "%ld wrong; first %s", bad_rt, d2);
  tu_check(!bbad_dec, "bf16_decode_exhaustive", "%ld wrong; first %s", bbad_dec, d3);
  tu_check(!bbad_rt, "bf16_roundtrip_exhaustive", "%ld wrong; first %s", bbad_rt, d4);
}

/* Every gap between adjacent representable halves (and bf16s): the exact midpoint (a tie), one
 * float ulp either side, the endpoints, and random floats inside the gap. */
static void test_ties(void) {
  conv_stats h16 = {"fp16_rne_all_gaps", 0, 0, 0, 0, 0}, b16 = {"bf16_rne_all_gaps", 0, 0, 0, 0, 0};
  tu_rng rng = {7};
  for (int bf = 0; bf < 2; bf++) {
    conv_stats *st = bf ? &b16 : &h16;
    for (uint32_t h = 0; h < 0x7fffu; h++) {
      uint16_t a = (uint16_t)h, b = (uint16_t)(h + 1);
      float lo = bf ? zt_bf16_to_fp32(a) : zt_fp16_to_fp32(a);
      float hi = bf ? zt_bf16_to_fp32(b) : zt_fp16_to_fp32(b);
      if (isnan(lo) || isinf(lo)) break;
      /* The midpoint of the last finite gap (65520 for fp16) is representable as a float. */
      double mid = isinf(hi) ? (bf ? ldexp(2.0 - ldexp(1, -8), 127) : 65520.0)
                             : 0.5 * ((double)lo + (double)hi);
      float m = (float)mid;  /* exact: a half/bf16 midpoint needs at most 12/9 bits */
      float v[6] = {lo, m, nextafterf(m, 0.0f), nextafterf(m, INFINITY), isinf(hi) ? m : hi, 0};
      uint32_t span = f_bits(isinf(hi) ? m : hi) - f_bits(lo);
      v[5] = bits_f(f_bits(lo) + (span > 1 ? tu_u32(&rng) % span : 0));
      for (int k = 0; k < 6; k++) {
        conv_one(st, v[k], bf);
        conv_one(st, -v[k], bf);
      }
    }
    conv_report(st);
  }
}

/* Random floats: arbitrary bit patterns (all exponents, NaNs, infinities, subnormals) and patterns
 * with exponents inside and around the fp16 range. */
static void test_random(void) {
  conv_stats h_any = {"fp16_rne_random_bits", 0, 0, 0, 0, 0};
  conv_stats h_rng = {"fp16_rne_random_half_range", 0, 0, 0, 0, 0};
  conv_stats b_any = {"bf16_rne_random_bits", 0, 0, 0, 0, 0};
  tu_rng rng = {12345};
  for (int i = 0; i < 2000000; i++) {
    float f = bits_f(tu_u32(&rng));
    conv_one(&h_any, f, 0);
    conv_one(&b_any, f, 1);
    uint32_t u = tu_u32(&rng);
    uint32_t exp = 100 + (u >> 24) % 46;  /* 2^-27 .. 2^18 */
    conv_one(&h_rng, bits_f((u & 0x807fffffu) | (exp << 23)), 0);
  }
  conv_report(&h_any);
  conv_report(&h_rng);
  conv_report(&b_any);
}

/* zt_convert for all 9 (dst, src) pairs against the scalar conversions (themselves checked above),
 * on a buffer large enough to take the OpenMP path, including NaN, inf, signed zero and overflow. */
static void test_convert(void) {
  const size_t n = 100003;
  static const zt_dtype dts[3] = {ZT_DTYPE_FP32, ZT_DTYPE_FP16, ZT_DTYPE_BF16};
  tu_check(zt_dtype_size(ZT_DTYPE_FP32) == 4 && zt_dtype_size(ZT_DTYPE_FP16) == 2 &&
               zt_dtype_size(ZT_DTYPE_BF16) == 2 && !strcmp(zt_dtype_name(ZT_DTYPE_FP32), "fp32") &&
               !strcmp(zt_dtype_name(ZT_DTYPE_FP16), "fp16") &&
               !strcmp(zt_dtype_name(ZT_DTYPE_BF16), "bf16"),
           "dtype_size_name", "sizes %zu %zu %zu", zt_dtype_size(ZT_DTYPE_FP32),
           zt_dtype_size(ZT_DTYPE_FP16), zt_dtype_size(ZT_DTYPE_BF16));

  float *f32 = tu_falloc(n);
  tu_rng rng = {99};
  for (size_t i = 0; i < n; i++) {
    switch (i % 8) {
      case 0: f32[i] = bits_f(tu_u32(&rng)); break;
      case 1: f32[i] = tu_uniform(&rng, -70000.0f, 70000.0f); break;
      case 2: f32[i] = tu_uniform(&rng, -1e-5f, 1e-5f); break;
      case 3: f32[i] = (float)(i % 24) - 12.0f; break;
      case 4: f32[i] = i % 3 ? INFINITY : NAN; break;
      case 5: f32[i] = -0.0f; break;
      default: f32[i] = tu_uniform(&rng, -4.0f, 4.0f);
    }
  }
  /* Sources in each dtype, built from the scalar conversions. */
  uint16_t *h = malloc(n * 2), *b = malloc(n * 2);
  for (size_t i = 0; i < n; i++) { h[i] = zt_fp32_to_fp16(f32[i]); b[i] = zt_fp32_to_bf16(f32[i]); }
  const void *src_of[3] = {f32, h, b};
  void *dst = malloc(n * 4), *want = malloc(n * 4);
  for (int si = 0; si < 3; si++)
    for (int di = 0; di < 3; di++) {
      zt_dtype s = dts[si], d = dts[di];
      for (size_t i = 0; i < n; i++) {
        float v = s == ZT_DTYPE_FP32 ? f32[i] : s == ZT_DTYPE_FP16 ? zt_fp16_to_fp32(h[i])
                                                                   : zt_bf16_to_fp32(b[i]);
        if (d == ZT_DTYPE_FP32) ((float *)want)[i] = s == ZT_DTYPE_FP32 ? f32[i] : v;
        else if (d == s) ((uint16_t *)want)[i] = ((const uint16_t *)src_of[si])[i];
        else ((uint16_t *)want)[i] = d == ZT_DTYPE_FP16 ? zt_fp32_to_fp16(v) : zt_fp32_to_bf16(v);
      }
      memset(dst, 0xA5, n * 4);
      zt_convert(dst, d, src_of[si], s, n);
      size_t es = zt_dtype_size(d), bad = 0, first = 0;
      for (size_t i = 0; i < n; i++)
        if (memcmp((char *)dst + i * es, (char *)want + i * es, es) && !bad++) first = i;
      /* Bytes past the destination's n elements stay untouched. */
      const unsigned char *tail = (const unsigned char *)dst + n * es;
      size_t clobbered = 0;
      for (size_t i = 0; i < n * (4 - es); i++) clobbered += tail[i] != 0xA5;
      char name[64];
      snprintf(name, sizeof(name), "convert_%s_to_%s", zt_dtype_name(s), zt_dtype_name(d));
      tu_check(!bad && !clobbered, name, "%zu of %zu wrong (first at %zu, input %.9g), %zu bytes "
               "written past the end", bad, n, first, f32[first], clobbered);
    }
  /* Equal dtypes may overlap (memmove semantics). */
  float *ov = tu_falloc(n + 5);
  memcpy(ov, f32, n * 4);
  zt_convert(ov + 5, ZT_DTYPE_FP32, ov, ZT_DTYPE_FP32, n);
  tu_cmp_exact("convert_fp32_overlapping", ov + 5, f32, n);
  free(ov);
  free(h); free(b); free(dst); free(want); free(f32);
}

static int dump(const char *path, long n) {
  FILE *fp = fopen(path, "wb");
  if (!fp) { perror(path); return 2; }
  uint32_t *in = malloc(n * 4);
  uint16_t *out = malloc(n * 2);
  tu_rng rng = {2024};
  for (long i = 0; i < n; i++) {
    uint32_t u = tu_u32(&rng);
    if (i % 2) u = (u & 0x807fffffu) | ((100 + (u >> 24) % 46) << 23);  /* near the half range */
    in[i] = u;
    out[i] = zt_fp32_to_fp16(bits_f(u));
  }
  int ok = fwrite(in, 4, n, fp) == (size_t)n && fwrite(out, 2, n, fp) == (size_t)n;
  ok &= fclose(fp) == 0;
  free(in);
  free(out);
  return ok ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--dump")) return dump(argv[2], atol(argv[3]));
  if (fegetround() != FE_TONEAREST) { printf("FAIL rounding mode is not to-nearest\n"); return 1; }
  test_edge_cases();
  test_exhaustive_16bit();
  test_ties();
  test_random();
  test_convert();
  return tu_finish();
}
