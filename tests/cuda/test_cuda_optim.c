/* zt_cuda_adam_step against zt_optimizer_step (Adam and AdamW, 3 steps, 300 parameters with and without weight
 * decay, a whole table and a ZeRO-style partition that cuts parameters, bf16/fp16/no half copy),
 * zt_cuda_sumsq against a double host sum (n = 1, 1000, 10^7 + 3, every dtype, bitwise repeatable) and
 * zt_cuda_count_nonfinite with planted inf and nan. */
#include <float.h>
#include <math.h>

#include "runtime/optim/optimizer.h"
#include "tests/cuda/harness.h"

static void h_expect(const char *what, int ok, const char *detail) {
  printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, ok ? "" : ": ", ok ? "" : detail);
  if (ok)
    h_pass++;
  else
    h_fail++;
}

/* 300 parameters of 1 to 3001 elements and one of 100003 (25 blocks' chunks); every third one without
 * weight decay. The table pads each to 16 elements: padding is in no range and must stay untouched. */
static void build_table(zt_param_table *t) {
  zt_param_table_init(t);
  for (int i = 0; i < 300; i++) {
    char name[32];
    snprintf(name, sizeof name, "p%d", i);
    const int64_t shape[1] = {i == 7 ? 100003 : 1 + (int64_t)((i * 7919) % 3001)};
    zt_param_table_add(t, name, 1, shape, ZT_INIT_ZEROS, 0.0f, i % 3 == 0, -1);
  }
}

/* The ranges zt_optimizer_step updates in [lo, hi), indexed from lo, with their weight decay. */
static int ranges_of(const zt_param_table *t, size_t lo, size_t hi, float weight_decay, size_t *off, size_t *len,
                     float *wd) {
  int n = 0;
  for (int i = 0; i < t->count; i++) {
    const zt_param *pp = &t->params[i];
    const size_t a = pp->offset > lo ? pp->offset : lo;
    const size_t b = pp->offset + pp->numel < hi ? pp->offset + pp->numel : hi;
    if (a >= b) continue;
    off[n] = a - lo;
    len[n] = b - a;
    wd[n] = pp->no_weight_decay ? 0.0f : weight_decay;
    n++;
  }
  return n;
}

/* half_dt FP32 here means: no half copy. */
static void test_adam(int adamw, zt_dtype half_dt, int partition) {
  zt_param_table t;
  build_table(&t);
  const size_t lo = partition ? 12345 : 0, hi = partition ? t.numel - 777 : t.numel, n = hi - lo;
  const int with_half = half_dt != ZT_DTYPE_FP32;
  char tag[120], what[200];
  snprintf(tag, sizeof tag, "adam%s %s%s", adamw ? "w" : " (L2)", with_half ? zt_dtype_name(half_dt) : "no",
           partition ? " copy, partition" : " copy, whole table");

  zt_opt_config c;
  memset(&c, 0, sizeof c);
  c.kind = ZT_OPT_ADAM;
  c.beta1 = 0.9f, c.beta2 = 0.95f, c.eps = 1e-8f, c.weight_decay = 0.1f, c.adam_w_mode = adamw;
  float *state = h_alloc(2 * n);
  zt_optimizer o;
  zt_optimizer_init_range(&o, &c, &t, state, lo, hi);

  size_t *off = malloc((size_t)t.count * sizeof(size_t)), *len = malloc((size_t)t.count * sizeof(size_t));
  float *wd = malloc((size_t)t.count * sizeof(float));
  const int nr = ranges_of(&t, lo, hi, c.weight_decay, off, len, wd);

  float *p = h_randn(n, 0.5f, ZT_DTYPE_FP32, 100), *zeros = h_alloc(n);
  float *d_p = h_upload(p, n, ZT_DTYPE_FP32), *d_g = h_poisoned(n, ZT_DTYPE_FP32);
  float *d_m = h_upload(zeros, n, ZT_DTYPE_FP32), *d_v = h_upload(zeros, n, ZT_DTYPE_FP32);
  void *d_half = with_half ? h_poisoned(n, half_dt) : NULL;
  int grads_ok = 1;
  for (int s = 1; s <= 3; s++) {
    float *g = h_randn(n, 1.0f, ZT_DTYPE_FP32, 200 + (uint64_t)s);  /* padding included: must stay as is */
    zt_cuda_memcpy_h2d(d_g, g, n * sizeof(float));
    const double lr = 1e-3 * s;
    const float gs = s == 2 ? 0.5f : 1.0f;
    zt_optimizer_step(&o, p, g, lr, gs);
    /* the scalars as zt_optimizer_step derives them */
    const float bc1 = 1.0f - powf(c.beta1, (float)s), bc2 = 1.0f - powf(c.beta2, (float)s);
    const zt_cuda_adam_args a = {(float)lr, c.beta1, c.beta2, c.eps, 1.0f / bc1, 1.0f / sqrtf(bc2), gs, adamw};
    zt_cuda_adam_step(d_p, d_g, d_m, d_v, d_half, with_half ? half_dt : ZT_DTYPE_BF16, off, len, wd, nr, &a);
    float *got_g = h_download(d_g, n, ZT_DTYPE_FP32);
    if (memcmp(got_g, g, n * sizeof(float)) != 0) grads_ok = 0;
    free(got_g);
    free(g);
  }
  snprintf(what, sizeof what, "%s: gradients zeroed in the ranges, untouched elsewhere", tag);
  h_expect(what, grads_ok, "they differ from the CPU's after a step");
  snprintf(what, sizeof what, "%s: params after 3 steps", tag);
  h_check(what, d_p, ZT_DTYPE_FP32, p, n, 1e-6);
  snprintf(what, sizeof what, "%s: m", tag);
  h_check(what, d_m, ZT_DTYPE_FP32, o.m, n, 1e-6);
  snprintf(what, sizeof what, "%s: v", tag);
  h_check(what, d_v, ZT_DTYPE_FP32, o.v, n, 1e-6);
  if (with_half) {
    /* inside the ranges: the device's own fp32 params rounded to half_dt, exactly (outside: not written) */
    float *dev_p = h_download(d_p, n, ZT_DTYPE_FP32), *got = h_download(d_half, n, half_dt);
    float *gw = h_alloc(n), *gg = h_alloc(n);
    size_t k = 0;
    for (int r = 0; r < nr; r++)
      for (size_t j = off[r]; j < off[r] + len[r]; j++, k++) gw[k] = dev_p[j], gg[k] = got[j];
    zt_round_f32(gw, gw, k, half_dt);
    snprintf(what, sizeof what, "%s: half copy = rounded params", tag);
    h_check_exact(what, gg, gw, k);
    free(dev_p), free(got), free(gw), free(gg);
  }
  zt_cuda_free(d_p), zt_cuda_free(d_g), zt_cuda_free(d_m), zt_cuda_free(d_v), zt_cuda_free(d_half);
  free(p), free(zeros), free(state), free(off), free(len), free(wd);
  zt_param_table_free(&t);
}

static void test_sumsq(zt_dtype dt, size_t n, uint64_t seed) {
  float *x = h_randn(n, 1.0f, dt, seed);
  double want = 0.0;
  for (size_t i = 0; i < n; i++) want += (double)x[i] * x[i];
  void *d = h_upload(x, n, dt);
  const double got = zt_cuda_sumsq(dt, d, n), again = zt_cuda_sumsq(dt, d, n);
  char what[120], detail[160];
  snprintf(what, sizeof what, "sumsq %s n=%zu", zt_dtype_name(dt), n);
  snprintf(detail, sizeof detail, "%.17g, want %.17g (relative difference %.2g, tolerance 1e-6)", got, want,
           fabs(got - want) / want);
  h_expect(what, fabs(got - want) <= 1e-6 * want, detail);
  snprintf(what, sizeof what, "sumsq %s n=%zu: same bits when run again", zt_dtype_name(dt), n);
  snprintf(detail, sizeof detail, "%.17g then %.17g", got, again);
  h_expect(what, memcmp(&got, &again, sizeof got) == 0, detail);
  zt_cuda_free(d);
  free(x);
}

static void expect_count(const char *what, const float *x, size_t n, size_t want) {
  float *d = h_upload(x, n, ZT_DTYPE_FP32);
  const size_t got = zt_cuda_count_nonfinite(d, n);
  char detail[80];
  snprintf(detail, sizeof detail, "counted %zu, want %zu", got, want);
  h_expect(what, got == want, detail);
  zt_cuda_free(d);
}

static void test_nonfinite(void) {
  const size_t n = 1000003;
  float *x = h_randn(n, 1.0f, ZT_DTYPE_FP32, 300);
  expect_count("count_nonfinite: none in 1000003 normal values", x, n, 0);
  x[1] = FLT_MAX, x[2] = -FLT_MAX, x[3] = 1e-40f, x[4] = -0.0f; /* finite extremes: not counted */
  x[0] = INFINITY, x[n - 1] = -INFINITY, x[999] = INFINITY, x[500000] = NAN, x[12345] = -NAN;
  expect_count("count_nonfinite: 3 infs and 2 nans planted among 1000003", x, n, 5);
  float one = NAN;
  expect_count("count_nonfinite: n=1, nan", &one, 1, 1);
  one = 3.0f;
  expect_count("count_nonfinite: n=1, finite", &one, 1, 0);
  h_expect("count_nonfinite: n=0", zt_cuda_count_nonfinite(NULL, 0) == 0, "nonzero for no elements");
  h_expect("sumsq: n=0", zt_cuda_sumsq(ZT_DTYPE_FP32, NULL, 0) == 0.0, "nonzero for no elements");
  free(x);
}

int main(void) {
  h_init("test_cuda_optim");
  test_adam(1, ZT_DTYPE_BF16, 0);
  test_adam(0, ZT_DTYPE_FP16, 0);
  test_adam(1, ZT_DTYPE_FP32, 1);
  test_adam(0, ZT_DTYPE_BF16, 1);
  static const size_t sizes[3] = {1, 1000, 10000003};
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 3; k++) test_sumsq(h_dtypes[d], sizes[k], 400 + (uint64_t)(10 * d + k));
  test_nonfinite();
  return h_done();
}
