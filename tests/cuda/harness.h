/* The CUDA backend test harness: inputs drawn on the host, rounded to the storage dtype so the CPU reference
 * sees exactly what the device sees, uploaded; outputs poisoned (all bits set: NaN in fp32, bf16 and fp16)
 * before each run so an element a kernel leaves unwritten shows as NaN; results compared with the CPU
 * reference against the largest magnitude of the reference tensor, with a tolerance per dtype.
 * Without a CUDA device the test prints a visible SKIP and exits 77 (ctest: SKIP_RETURN_CODE). */
#ifndef ZT_TEST_CUDA_HARNESS_H
#define ZT_TEST_CUDA_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "runtime/base/philox.h"
#include "runtime/ops/cuda/cuda_device.h"
#include "runtime/ops/cuda/cuda_ops.h"

static int h_fail, h_pass;
static const zt_dtype h_dtypes[3] = {ZT_DTYPE_FP32, ZT_DTYPE_BF16, ZT_DTYPE_FP16};

/* Relative tolerance (of the reference tensor's largest magnitude) for results stored in dt. */
static inline double h_tol(zt_dtype dt) {
  return dt == ZT_DTYPE_FP32 ? 1e-5 : dt == ZT_DTYPE_BF16 ? 2e-2 : 4e-3;
}

static inline void h_init(const char *name) {
  int n = zt_cuda_device_count();
  if (n == 0) {
    printf("SKIP: %s needs a CUDA device (none found)\n", name);
    exit(77);
  }
  char desc[256];
  zt_cuda_device_describe(0, desc, sizeof desc);
  printf("%s on %s\n", name, desc);
  zt_cuda_init(0);
}

static inline int h_done(void) {
  printf("%d passed, %d failed\n", h_pass, h_fail);
  zt_cuda_shutdown();
  return h_fail ? 1 : 0;
}

static inline float *h_alloc(size_t n) {
  float *p = (float *)calloc(n ? n : 1, sizeof(float));
  if (!p) { fprintf(stderr, "harness: out of host memory (%zu floats)\n", n); exit(2); }
  return p;
}

/* N(0, std) values, rounded to dt (what the device will hold). */
static inline float *h_randn(size_t n, float std, zt_dtype dt, uint64_t stream) {
  float *x = h_alloc(n);
  zt_philox_normal_fill(x, n, 0, 0.0f, std, 1234, ZT_RNG_DATA, stream);
  zt_round_f32(x, x, n, dt);
  return x;
}

/* A device copy of host fp32 values in dt. */
static inline void *h_upload(const float *x, size_t n, zt_dtype dt) {
  size_t bytes = n * zt_dtype_size(dt);
  void *tmp = malloc(bytes ? bytes : 1), *d = zt_cuda_malloc(bytes ? bytes : 1, "test input");
  zt_convert(tmp, dt, x, ZT_DTYPE_FP32, n);
  zt_cuda_memcpy_h2d(d, tmp, bytes);
  free(tmp);
  return d;
}
static inline void *h_upload_raw(const void *x, size_t bytes) {
  void *d = zt_cuda_malloc(bytes ? bytes : 1, "test input");
  zt_cuda_memcpy_h2d(d, x, bytes);
  return d;
}

/* A poisoned device buffer of n elements of dt. */
static inline void *h_poisoned(size_t n, zt_dtype dt) {
  size_t bytes = n * zt_dtype_size(dt);
  void *d = zt_cuda_malloc(bytes ? bytes : 1, "test output");
  zt_cuda_memset(d, 0xFF, bytes);
  return d;
}

/* A device buffer of n elements of dt starting `shift` elements into its allocation (shift 1: aligned to the
 * element size only, which takes kernels off their vectorized paths), holding x, or poisoned when x is NULL.
 * Free with zt_cuda_free(b.base). */
typedef struct {
  void *base, *p;
} h_dbuf;
static inline h_dbuf h_make(const float *x, size_t n, zt_dtype dt, int shift) {
  const size_t es = zt_dtype_size(dt);
  h_dbuf b;
  b.base = h_poisoned(n + (size_t)shift, dt);
  b.p = (char *)b.base + (size_t)shift * es;
  if (x) {
    void *tmp = malloc(n * es + 1);
    zt_convert(tmp, dt, x, ZT_DTYPE_FP32, n);
    zt_cuda_memcpy_h2d(b.p, tmp, n * es);
    free(tmp);
  }
  return b;
}

/* The device buffer's values as host fp32 (caller frees). */
static inline float *h_download(const void *d, size_t n, zt_dtype dt) {
  size_t bytes = n * zt_dtype_size(dt);
  void *tmp = malloc(bytes ? bytes : 1);
  float *x = h_alloc(n);
  zt_cuda_memcpy_d2h(tmp, d, bytes);
  zt_convert(x, ZT_DTYPE_FP32, tmp, dt, n);
  free(tmp);
  return x;
}

/* got against want (both host fp32): where want is not finite, got must be the same (the same infinity, or NaN);
 * elsewhere got must be finite and max |got - want| <= tol * (the largest finite |want|, at least 1e-30).
 * Returns 1 when it passes. */
static inline int h_check_host(const char *what, const float *got, const float *want, size_t n, double tol) {
  double scale = 0.0, worst = 0.0;
  size_t worst_i = 0, bad = (size_t)-1;
  for (size_t i = 0; i < n; i++)
    if (isfinite(want[i])) scale = fmax(scale, fabs((double)want[i]));
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(want[i])) {
      if (isnan(want[i]) ? !isnan(got[i]) : got[i] != want[i]) { bad = i; break; }
      continue;
    }
    if (!isfinite(got[i])) { bad = i; break; }
    double d = fabs((double)got[i] - (double)want[i]);
    if (d > worst) { worst = d; worst_i = i; }
  }
  double rel = worst / (scale > 1e-30 ? scale : 1e-30);
  if (bad != (size_t)-1) {
    printf("FAIL %s: element %zu is %g, want %g (unwritten, overflowed or a wrong infinity)\n", what, bad, got[bad],
           want[bad]);
    h_fail++;
    return 0;
  }
  if (rel > tol) {
    printf("FAIL %s: element %zu is %.7g, want %.7g (difference %.3g of the largest magnitude %.3g, tolerance %.1g)\n",
           what, worst_i, got[worst_i], want[worst_i], rel, scale, tol);
    h_fail++;
    return 0;
  }
  printf("PASS %s (max difference %.2g of %.3g)\n", what, rel, scale);
  h_pass++;
  return 1;
}
static inline int h_check(const char *what, const void *dev, zt_dtype dt, const float *want, size_t n, double tol) {
  float *got = h_download(dev, n, dt);
  int ok = h_check_host(what, got, want, n, tol);
  free(got);
  return ok;
}
/* Bitwise equality of two host fp32 arrays (dropout masks, conversions). */
static inline int h_check_exact(const char *what, const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      printf("FAIL %s: element %zu is %.9g, want %.9g (bitwise)\n", what, i, got[i], want[i]);
      h_fail++;
      return 0;
    }
  printf("PASS %s (bitwise)\n", what);
  h_pass++;
  return 1;
}

#endif
