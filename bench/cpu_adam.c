/* CPU Adam bandwidth benchmark (ZeRO-Offload's optimizer step is memory bound): times zt_optimizer_step
 * (AdamW over one fp32 parameter of N elements) and reports the bandwidth of the optimizer state it touches,
 * beside this machine's memory bandwidth measured in the same run with STREAM-like OpenMP loops over buffers
 * far larger than the last-level cache.
 *
 * Bytes counted per parameter per step: zt_optimizer_step's loop (runtime/optim/optimizer.c adam_range)
 * reads p, g, m, v and writes p, g (zeroed), m, v, all fp32: 4 x 4 read + 4 x 4 written = 32 bytes. Every
 * written line was read first, so write-allocate adds no traffic: 32 bytes is the DRAM traffic.
 * Bounds: triad a = b + s c counted as STREAM counts it (24 bytes per element; the hardware also reads a's
 * lines before writing them, 32 bytes), and in-place a += s b (12 bytes, exact: a is read anyway). The bound
 * is the larger GB/s of the two (medians). A third loop with Adam's own access pattern (four arrays read and
 * written, trivial arithmetic) shows what that pattern reaches here. The four are interleaved round by round
 * so that all of them see the same machine. A what-if line times the same AdamW arithmetic with the Adam/AdamW
 * mode decided outside the loop (checked against zt_optimizer_step on 4096 parameters). GB = 1e9 bytes.
 * Usage: bench_cpu_adam [--params 64M] [--steps 11] [--stream-elems 128M] [--serial-first-touch]
 * (--serial-first-touch: every buffer is first written by the main thread, as after zt_aligned_alloc's memset) */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/param_table.h"

static int64_t parse_count(const char *flag, const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  long long mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1LL << 10, end++;
  else if (*end == 'M' || *end == 'm') mult = 1LL << 20, end++;
  else if (*end == 'G' || *end == 'g') mult = 1LL << 30, end++;
  if (end == s || *end || v <= 0) zt_fatal("bench_cpu_adam", "argument %s: invalid count '%s' (e.g. 64M)", flag, s);
  return v * mult;
}

/* n floats, page-aligned and NOT touched by the allocating thread: the first write happens in fill() under
 * the same static OpenMP schedule as the loops that use them, so every thread's share of the pages is
 * placed by that thread (on NUMA machines this decides where the pages live). */
static int g_serial_touch; /* --serial-first-touch: memset by the main thread first, as zt_aligned_alloc does */
static float *big(size_t n, const char *what) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, n * sizeof(float) + 4096) != 0)
    zt_fatal("out of memory", "allocating %zu floats for %s", n, what);
  if (g_serial_touch) memset(p, 0, n * sizeof(float));
  return p;
}
static void fill(float *p, int64_t n, float scale) {
  #pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) p[i] = scale * (float)(i & 1023) * 1e-3f;
}

/* What-if reference (not the optimizer the engine runs): runtime/optim's AdamW arithmetic with the
 * Adam/AdamW mode decided outside the loop instead of by `if (adam_w)` inside it. */
static void adamw_hoisted(float *p, float *g, float *m, float *v, int64_t n, float lr, float b1, float b2, float eps,
                          float wd, float inv_bc1, float inv_sqrt_bc2, float gs) {
  #pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    float grad = g[i] * gs;
    float mi = b1 * m[i] + (1.0f - b1) * grad;
    float vi = b2 * v[i] + (1.0f - b2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    float update = (mi * inv_bc1) / (sqrtf(vi) * inv_sqrt_bc2 + eps);
    update += wd * p[i];
    p[i] -= lr * update;
    g[i] = 0.0f;
  }
}

/* The what-if loop must compute what zt_optimizer_step computes: one step on 4096 parameters through both. */
static double hoisted_max_rel_diff(void) {
  enum { n = 4096 };
  zt_param_table t;
  zt_param_table_init(&t);
  int64_t shape[1] = {n};
  zt_param_table_add(&t, "check.weight", 1, shape, ZT_INIT_ZEROS, 0.0f, 0, -1);
  static float p1[n], g1[n], st[2 * n], p2[n], g2[n], m2[n], v2[n];
  for (int i = 0; i < n; i++) {
    p1[i] = p2[i] = (float)((i * 37) % 101 - 50) * 0.01f;
    g1[i] = g2[i] = (float)((i * 53) % 97 - 48) * 0.003f;
    st[i] = m2[i] = 0.0f;
    st[n + i] = v2[i] = 0.0f;
  }
  zt_opt_config cfg = {.kind = ZT_OPT_ADAM, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .adam_w_mode = 1,
                       .weight_decay = 0.01f};
  zt_optimizer o;
  zt_optimizer_init(&o, &cfg, &t, st);
  zt_optimizer_step(&o, p1, g1, 1e-3, 1.0f);
  float bc1 = 1.0f - powf(0.9f, 1.0f), bc2 = 1.0f - powf(0.999f, 1.0f);
  adamw_hoisted(p2, g2, m2, v2, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f / bc1, 1.0f / sqrtf(bc2), 1.0f);
  double worst = 0;
  for (int i = 0; i < n; i++) {
    double d = fabs((double)p1[i] - p2[i]) / (fabs((double)p1[i]) + 1e-30);
    if (d > worst) worst = d;
  }
  zt_param_table_free(&t);
  return worst;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int64_t N = 64LL << 20, S = 128LL << 20;
  int steps = 11;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--serial-first-touch")) {
      g_serial_touch = 1;
      continue;
    }
    if (i + 1 >= argc) zt_fatal("bench_cpu_adam", "argument %s: expected one argument", argv[i]);
    if (!strcmp(argv[i], "--params")) N = parse_count(argv[i], argv[i + 1]);
    else if (!strcmp(argv[i], "--stream-elems")) S = parse_count(argv[i], argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) steps = (int)parse_count(argv[i], argv[i + 1]);
    else zt_fatal("bench_cpu_adam", "unrecognized argument: %s (--params, --steps, --stream-elems, "
                  "--serial-first-touch)", argv[i]);
    i++;
  }
  int threads = omp_get_max_threads();
  float *a = big((size_t)S, "triad a"), *b = big((size_t)S, "triad b"), *c = big((size_t)S, "triad c");
  fill(a, S, 1.0f);
  fill(b, S, 1.0f);
  fill(c, S, 1.0f);
  /* AdamW over one N-element parameter through the real optimizer */
  zt_param_table table;
  zt_param_table_init(&table);
  int64_t shape[1] = {N};
  zt_param_table_add(&table, "bench.weight", 1, shape, ZT_INIT_ZEROS, 0.0f, 0, -1);
  float *params = big(table.numel, "params"), *grads = big(table.numel, "grads");
  float *state = big(2 * table.numel, "adam state");
  fill(params, (int64_t)table.numel, 1.0f);
  fill(grads, (int64_t)table.numel, 1.0f);
  fill(state, (int64_t)table.numel, 0.0f);                       /* m, per the optimizer loop's schedule */
  fill(state + table.numel, (int64_t)table.numel, 0.0f);         /* v */
  zt_opt_config cfg = {.kind = ZT_OPT_ADAM, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .adam_w_mode = 1,
                       .weight_decay = 0.01f};
  zt_optimizer opt;
  zt_optimizer_init(&opt, &cfg, &table, state);
  /* Adam's access pattern with trivial arithmetic: four N-element arrays each read and written */
  float *q0 = big((size_t)N, "rmw p"), *q1 = big((size_t)N, "rmw g"), *q2 = big((size_t)N, "rmw m"),
        *q3 = big((size_t)N, "rmw v");
  fill(q0, N, 1.0f);
  fill(q1, N, 1.0f);
  fill(q2, N, 0.0f);
  fill(q3, N, 0.0f);

  /* Rounds interleave the four measurements so that all see the same machine (other load included);
   * round 0 is a warm-up. */
  double *t_triad = zt_malloc((size_t)steps * sizeof(double), "times"), *t_inpl = zt_malloc((size_t)steps * sizeof(double), "times");
  double *t_adam = zt_malloc((size_t)steps * sizeof(double), "times"), *t_rmw = zt_malloc((size_t)steps * sizeof(double), "times");
  double *t_hoist = zt_malloc((size_t)steps * sizeof(double), "times");
  const float sc = 1.0001f;
  for (int r = -1; r < steps; r++) {
    double t0 = zt_now();
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < S; i++) a[i] = b[i] + sc * c[i];
    double t1 = zt_now();
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < S; i++) a[i] += sc * b[i];
    double t2 = zt_now();
    zt_optimizer_step(&opt, params, grads, 1e-3, 1.0f);
    double t3 = zt_now();
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N; i++) {
      float x = q1[i];
      q2[i] = 0.5f * q2[i] + x;
      q3[i] = 0.5f * q3[i] + x;
      q0[i] -= 0.25f * q0[i];
      q1[i] = 0.0f;
    }
    double t4 = zt_now();
    adamw_hoisted(q0, q1, q2, q3, N, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 1.0f, 1.0f);
    double t5 = zt_now();
    if (r < 0) continue;
    t_hoist[r] = t5 - t4;
    t_triad[r] = t1 - t0;
    t_inpl[r] = t2 - t1;
    t_adam[r] = t3 - t2;
    t_rmw[r] = t4 - t3;
  }
  volatile float sink = a[S / 2] + q0[N / 2];
  (void)sink;
  qsort(t_triad, (size_t)steps, sizeof(double), cmp_double);
  qsort(t_inpl, (size_t)steps, sizeof(double), cmp_double);
  qsort(t_adam, (size_t)steps, sizeof(double), cmp_double);
  qsort(t_rmw, (size_t)steps, sizeof(double), cmp_double);
  qsort(t_hoist, (size_t)steps, sizeof(double), cmp_double);
  int mid = steps / 2;
  double triad = 24.0 * (double)S / t_triad[mid] / 1e9, inplace = 12.0 * (double)S / t_inpl[mid] / 1e9;
  double bound = triad > inplace ? triad : inplace;
  double bytes = 32.0 * (double)N;
  double med = bytes / t_adam[mid] / 1e9, best = bytes / t_adam[0] / 1e9, rmw = bytes / t_rmw[mid] / 1e9;
  printf("machine: %d OpenMP threads%s; %d rounds (medians): triad %.1f GB/s (STREAM's 24 B/elem; %.1f GB/s counting "
         "the write-allocate reads), in-place a += s b %.1f GB/s (12 B/elem): bound %.1f GB/s (%lld-element arrays, "
         "%.0f MiB each)\n", threads, g_serial_touch ? " (pages first touched by the main thread)" : "", steps, triad, triad * 32.0 / 24.0, inplace, bound, (long long)S,
         (double)S * 4 / 1048576.0);
  printf("adam: %lld parameters (%.0f MiB of p, g, m, v): median %.2f ms, best %.2f ms per step; 32 bytes per "
         "parameter (p, g, m, v read + written)\n", (long long)N, (double)N * 16 / 1048576.0, t_adam[mid] * 1e3,
         t_adam[0] * 1e3);
  printf("same access pattern, trivial arithmetic (4 arrays of %lld read + written): %.1f GB/s\n", (long long)N, rmw);
  printf("result: adam %.1f GB/s median = %.1f%% of the bound (best step %.1f GB/s = %.1f%%); %.1f%% of the "
         "4-stream read-modify-write loop; %.0f M params/s\n", med, 100.0 * med / bound, best, 100.0 * best / bound,
         100.0 * med / rmw, (double)N / t_adam[mid] / 1e6);
  double hoist = bytes / t_hoist[mid] / 1e9;
  printf("what-if: the same AdamW arithmetic with the Adam/AdamW mode hoisted out of the loop (max relative "
         "difference to zt_optimizer_step %.1e): %.1f GB/s = %.1f%% of the bound\n", hoisted_max_rel_diff(), hoist,
         100.0 * hoist / bound);
  free(t_triad);
  free(t_inpl);
  free(t_adam);
  free(t_rmw);
  free(t_hoist);
  free(a);
  free(b);
  free(c);
  free(q0);
  free(q1);
  free(q2);
  free(q3);
  free(params);
  free(grads);
  free(state);
  zt_param_table_free(&table);
  return 0;
}
