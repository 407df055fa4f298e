/* Shared helpers for the unit tests: PASS/FAIL bookkeeping, a deterministic test RNG, and array
 * comparisons that report the worst element. Header-only (every function is static) so each test
 * executable stays a single translation unit plus the library. */
#ifndef ZT_TESTUTIL_H
#define ZT_TESTUTIL_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int tu_passed, tu_failed;

/* Records one check: prints "PASS name" or "FAIL name: <details>". Returns ok. */
static inline int __attribute__((format(printf, 3, 4)))
tu_check(int ok, const char *name, const char *fmt, ...) {
  if (ok) {
    printf("PASS %s\n", name);
    tu_passed++;
  } else {
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    tu_failed++;
  }
  fflush(stdout);
  return ok;
}

/* Runs fn(ctx) in a forked child and checks that it dies as zt_fatal does: exit status 1 with
 * `needle` in its stderr. */
static inline int tu_expect_fatal(const char *name, void (*fn)(void *ctx), void *ctx, const char *needle) {
  int pfd[2];
  if (pipe(pfd) != 0) exit(2);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], 2);
    close(pfd[0]);
    fn(ctx);
    _exit(0);
  }
  close(pfd[1]);
  char err[4096] = {0};
  size_t n = 0;
  ssize_t r;
  while (n < sizeof err - 1 && (r = read(pfd[0], err + n, sizeof err - 1 - n)) > 0) n += (size_t)r;
  close(pfd[0]);
  int st;
  waitpid(pid, &st, 0);
  return tu_check(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(err, needle) != NULL, name, "exit %d, stderr: %s",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, err);
}

/* Prints the summary line and gives the process exit status. */
static inline int tu_finish(void) {
  printf("%d passed, %d failed\n", tu_passed, tu_failed);
  return tu_failed ? 1 : 0;
}

/* splitmix64: a test-side generator independent of the library's Philox. */
typedef struct { uint64_t s; } tu_rng;
static inline uint64_t tu_next(tu_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline uint32_t tu_u32(tu_rng *r) { return (uint32_t)(tu_next(r) >> 32); }
/* Uniform in [lo, hi), rounded to float so float and double copies hold the same value. */
static inline float tu_uniform(tu_rng *r, float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(tu_next(r) >> 11) * (1.0 / 9007199254740992.0));
}
static inline void tu_fill(tu_rng *r, float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = tu_uniform(r, lo, hi);
}

static inline float *tu_falloc(size_t n) {
  float *p = malloc((n ? n : 1) * sizeof(float));
  if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
  return p;
}
static inline double *tu_dalloc(size_t n) {
  double *p = calloc(n ? n : 1, sizeof(double));
  if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
  return p;
}
static inline double *tu_to_double(const float *x, size_t n) {
  double *d = tu_dalloc(n);
  for (size_t i = 0; i < n; i++) d[i] = x[i];
  return d;
}
static inline void tu_fill_nan(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = NAN;
}
static inline double tu_max_abs(const double *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
  return m;
}

/* Compares got (fp32) with ref (double): passes when every |got - ref| <= rtol * max|ref| + atol
 * and nothing in got is NaN/inf. The failure message names the worst element and the scale. */
static inline int tu_cmp(const char *name, const float *got, const double *ref, size_t n,
                         double rtol, double atol) {
  double scale = tu_max_abs(ref, n), tol = rtol * scale + atol, worst = -1;
  size_t wi = 0, nonfinite = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - ref[i]);
    if (!isfinite(got[i])) { nonfinite++; e = INFINITY; }
    if (e > worst) { worst = e; wi = i; }
  }
  if (n == 0) worst = 0;
  return tu_check(nonfinite == 0 && worst <= tol, name,
                  "worst |got-ref|=%.3g at [%zu] (got %.9g ref %.9g), tol %.3g (max|ref| %.3g), "
                  "%zu non-finite of %zu", worst, wi, n ? got[wi] : 0.0, n ? ref[wi] : 0.0, tol,
                  scale, nonfinite, n);
}

/* Bitwise equality of two float arrays (NaN payloads included). */
static inline int tu_cmp_exact(const char *name, const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return tu_check(0, name, "first difference at [%zu]: got %.9g want %.9g (of %zu)", i,
                      got[i], want[i], n);
  }
  return tu_check(1, name, "%s", "");
}

#endif
