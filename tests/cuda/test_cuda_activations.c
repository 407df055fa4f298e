/* The CUDA activation family (zt_cuda_act_forward/backward: GELU tanh and erf forms, tanh, squared ReLU) against the CPU reference
 * zt_act_forward/backward, in fp32, bf16 and fp16, over 1 to 100003 elements, buffers shifted off 16-byte alignment
 * (the element-by-element path) and aligned (the 16-byte packs), outputs poisoned before each run and guarded past
 * their end. Also: GELU_TANH is zt_cuda_gelu_forward/backward bit for bit; the packed and unpacked paths, in-place
 * calls (out = inp, dinp = dout) and repeated runs agree bit for bit; the backend op table reaches the same kernels;
 * empty calls launch nothing; and, on a GPU with 12 GiB free (ZT_TEST_CUDA_LARGE=1 forces it), a buffer of more
 * than 2^31 elements is processed to its last element. */
#include <float.h>
#include <math.h>
#include <stdarg.h>

#include "runtime/ops/backend.h"
#include "runtime/ops/ops.h"
#include "tests/cuda/harness.h"

static const zt_act_kind kKinds[4] = {ZT_ACT_GELU_TANH, ZT_ACT_GELU_ERF, ZT_ACT_TANH, ZT_ACT_SQUARED_RELU};
enum { kGuard = 8 }; /* poisoned elements after each output, which no call may write */

static const char *fmt(const char *f, ...) {
  static char buf[256];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

static void expect(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (ok) h_pass++;
  else h_fail++;
}

/* The pointwise bound on |got - want| (want: the CPU's fp32 result, not rounded), besides the harness's check
 * against the largest magnitude. Two sources of difference: rounding the device's fp32 result to dt (half an ulp:
 * at most 2^-8 of the value in bf16, 2^-11 in fp16, 2^-25 absolute for fp16 subnormals) and the fp32 math: CUDA's
 * erff, expf and tanhf are within 2 ulp and glibc's within 2.2, and the GELU_TANH CPU reference uses zt_tanhf (about
 * 1e-7 absolute), so the fp32 results differ by a few eps of |want| + |x| (forward) or of |dy| (1 + |x|) (backward:
 * the tanh form's derivative scales an error of an ulp of 1 in tanh by 0.4 |x| + 0.054 |x|^3, about 14 at |x| = 6,
 * beyond which tanh is 1 on both sides). 16 eps covers them with a margin (the worst fp32 ratio on the emulator is
 * 0.18); the rounding part is exact, so bf16 and fp16 ratios near 1 are the half ulp itself. */
static double dt_rel(zt_dtype dt) { return dt == ZT_DTYPE_BF16 ? 0x1p-8 : dt == ZT_DTYPE_FP16 ? 0x1p-11 : 0.0; }
static double dt_abs(zt_dtype dt) { return dt == ZT_DTYPE_FP16 ? 0x1p-25 : 0x1p-140; }

static void check_pointwise(const char *what, const float *got, const float *want, const float *x, const float *dy,
                            size_t n, zt_dtype dt) {
  size_t bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double ax = fabs((double)x[i]);
    const double math = 16 * FLT_EPSILON * (dy ? fabs((double)dy[i]) * (1 + ax) : fabs((double)want[i]) + ax);
    const double tol = dt_rel(dt) * fabs((double)want[i]) + dt_abs(dt) + math;
    const double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= tol) && !bad++) first = i;
    if (d / tol > worst) worst = d / tol;
  }
  if (bad) {
    printf("FAIL %s: %zu of %zu elements beyond the pointwise bound; first [%zu] x=%.9g: got %.9g want %.9g\n", what,
           bad, n, first, x[first], got[first], want[first]);
    h_fail++;
  } else {
    printf("PASS %s (worst %.2f of the bound)\n", what, worst);
    h_pass++;
  }
}

/* The device buffer's guard elements (after n elements of dt) still hold the poison. */
static void check_guard(const char *what, const void *dev, size_t n, zt_dtype dt) {
  const size_t es = zt_dtype_size(dt);
  unsigned char g[kGuard * 4];
  zt_cuda_memcpy_d2h(g, (const char *)dev + n * es, kGuard * es);
  size_t bad = 0;
  for (size_t i = 0; i < kGuard * es; i++) bad += g[i] != 0xFF;
  char name[256];
  snprintf(name, sizeof name, "%s: the %d elements past the end untouched", what, kGuard); /* what may be fmt's */
  expect(bad == 0, name);
}

static void check_same_dev(const char *what, const void *a, const void *b, size_t n, zt_dtype dt) {
  float *ga = h_download(a, n, dt), *gb = h_download(b, n, dt);
  h_check_exact(what, ga, gb, n);
  free(ga), free(gb);
}

/* x ~ N(0, 2) with the awkward values first (+-0, tiny, saturating), rounded to dt. */
static float *act_inputs(size_t n, zt_dtype dt, uint64_t stream) {
  static const float special[] = {0.0f, -0.0f, 1e-6f, -3e-5f, 10.0f, -10.0f, 50.0f, -50.0f, 0.5f, -6.0f};
  float *x = h_randn(n, 2.0f, dt, stream);
  for (size_t i = 0; i < n && i < sizeof special / sizeof special[0]; i++) x[i] = special[i];
  zt_round_f32(x, x, n, dt);
  return x;
}

/* One kind, dtype, size and alignment (shift 1: every pointer one element off 16-byte alignment). */
static void test_act(zt_act_kind k, zt_dtype dt, size_t n, int shift) {
  char tag[128];
  snprintf(tag, sizeof tag, "%s %s n=%zu%s", zt_act_name(k), zt_dtype_name(dt), n, shift ? " shifted" : "");
  const size_t es = zt_dtype_size(dt), bytes = n * es;
  float *x = act_inputs(n, dt, 31 + (uint64_t)k), *dy = h_randn(n, 1.0f, dt, 32), *want = h_alloc(n);
  h_dbuf d_x = h_make(x, n, dt, shift), d_dy = h_make(dy, n, dt, shift);
  h_dbuf d_out = h_make(NULL, n + kGuard, dt, shift), d_out2 = h_make(NULL, n + kGuard, dt, shift);

  /* forward */
  zt_act_forward(k, want, x, n);
  zt_cuda_act_forward(dt, k, d_out.p, d_x.p, n);
  float *got = h_download(d_out.p, n, dt);
  h_check_host(fmt("act_forward %s", tag), got, want, n, h_tol(dt));
  check_pointwise(fmt("act_forward %s pointwise", tag), got, want, x, NULL, n, dt);
  free(got);
  check_guard(fmt("act_forward %s", tag), d_out.p, n, dt);
  zt_cuda_act_forward(dt, k, d_out2.p, d_x.p, n);
  check_same_dev(fmt("act_forward %s run twice", tag), d_out2.p, d_out.p, n, dt);
  if (k == ZT_ACT_GELU_TANH) {
    zt_cuda_memset(d_out2.p, 0xFF, bytes);
    zt_cuda_gelu_forward(dt, d_out2.p, d_x.p, n);
    check_same_dev(fmt("act_forward %s is zt_cuda_gelu_forward", tag), d_out2.p, d_out.p, n, dt);
  }
  /* out = inp: d_out2 holds x, then act(x) in place */
  zt_cuda_memcpy_d2d(d_out2.p, d_x.p, bytes);
  zt_cuda_act_forward(dt, k, d_out2.p, d_out2.p, n);
  check_same_dev(fmt("act_forward %s in place", tag), d_out2.p, d_out.p, n, dt);

  /* backward */
  zt_act_backward(k, want, x, dy, n);
  zt_cuda_memset(d_out.p, 0xFF, bytes);
  zt_cuda_act_backward(dt, k, d_out.p, d_x.p, d_dy.p, n);
  got = h_download(d_out.p, n, dt);
  h_check_host(fmt("act_backward %s", tag), got, want, n, h_tol(dt));
  check_pointwise(fmt("act_backward %s pointwise", tag), got, want, x, dy, n, dt);
  free(got);
  check_guard(fmt("act_backward %s", tag), d_out.p, n, dt);
  zt_cuda_memset(d_out2.p, 0xFF, bytes);
  zt_cuda_act_backward(dt, k, d_out2.p, d_x.p, d_dy.p, n);
  check_same_dev(fmt("act_backward %s run twice", tag), d_out2.p, d_out.p, n, dt);
  if (k == ZT_ACT_GELU_TANH) {
    zt_cuda_memset(d_out2.p, 0xFF, bytes);
    zt_cuda_gelu_backward(dt, d_out2.p, d_x.p, d_dy.p, n);
    check_same_dev(fmt("act_backward %s is zt_cuda_gelu_backward", tag), d_out2.p, d_out.p, n, dt);
  }
  /* dinp = dout (the backend's in-place use): d_out2 holds dy, then dy * act'(x) in place */
  zt_cuda_memcpy_d2d(d_out2.p, d_dy.p, bytes);
  zt_cuda_act_backward(dt, k, d_out2.p, d_x.p, d_out2.p, n);
  check_same_dev(fmt("act_backward %s dinp = dout", tag), d_out2.p, d_out.p, n, dt);

  /* the other path (packs when shifted, elements when aligned) gives the same bits */
  h_dbuf a_x = h_make(x, n, dt, !shift), a_dy = h_make(dy, n, dt, !shift), a_out = h_make(NULL, n, dt, !shift);
  zt_cuda_act_backward(dt, k, a_out.p, a_x.p, a_dy.p, n);
  check_same_dev(fmt("act_backward %s = %s", tag, shift ? "aligned" : "shifted"), a_out.p, d_out.p, n, dt);
  zt_cuda_act_forward(dt, k, d_out.p, d_x.p, n);
  zt_cuda_act_forward(dt, k, a_out.p, a_x.p, n);
  check_same_dev(fmt("act_forward %s = %s", tag, shift ? "aligned" : "shifted"), a_out.p, d_out.p, n, dt);

  zt_cuda_free(a_x.base), zt_cuda_free(a_dy.base), zt_cuda_free(a_out.base);
  zt_cuda_free(d_x.base), zt_cuda_free(d_dy.base), zt_cuda_free(d_out.base), zt_cuda_free(d_out2.base);
  free(x), free(dy), free(want);
}

/* The CUDA backend's table entries run these kernels: the same bits as the direct calls. */
static void test_backend_table(void) {
  const zt_backend *be = zt_backend_cuda(0);
  const size_t n = 1001;
  for (int d = 0; d < 3; d++)
    for (int kk = 0; kk < 4; kk++) {
      const zt_dtype dt = h_dtypes[d];
      const zt_act_kind k = kKinds[kk];
      float *x = act_inputs(n, dt, 41), *dy = h_randn(n, 1.0f, dt, 42);
      void *d_x = h_upload(x, n, dt), *d_dy = h_upload(dy, n, dt), *a = h_poisoned(n, dt), *b = h_poisoned(n, dt);
      be->act_forward(dt, k, a, d_x, n);
      zt_cuda_act_forward(dt, k, b, d_x, n);
      check_same_dev(fmt("backend act_forward %s %s", zt_act_name(k), zt_dtype_name(dt)), a, b, n, dt);
      be->act_backward(dt, k, a, d_x, d_dy, n);
      zt_cuda_act_backward(dt, k, b, d_x, d_dy, n);
      check_same_dev(fmt("backend act_backward %s %s", zt_act_name(k), zt_dtype_name(dt)), a, b, n, dt);
      zt_cuda_free(d_x), zt_cuda_free(d_dy), zt_cuda_free(a), zt_cuda_free(b);
      free(x), free(dy);
    }
}

/* Empty calls return without launching (a launch of 0 blocks would end the process with a CUDA error). */
static void test_empty(void) {
  for (int d = 0; d < 3; d++)
    for (int kk = 0; kk < 4; kk++) {
      zt_cuda_act_forward(h_dtypes[d], kKinds[kk], NULL, NULL, 0);
      zt_cuda_act_backward(h_dtypes[d], kKinds[kk], NULL, NULL, NULL, 0);
    }
  zt_cuda_synchronize();
  expect(1, "empty calls (n = 0) return without launching");
}

/* bf16 buffers of 2^31 + 37 elements (4 GiB each): a kernel indexing with int would stop at 2^31 or wrap. Every
 * element holds the same input, so the probes around 2^31 and at the ends must equal the CPU's value at element 0. */
static void test_large(void) {
  const zt_dtype dt = ZT_DTYPE_BF16;
  const size_t n = ((size_t)1 << 31) + 37, bytes = n * 2;
  void *x = zt_cuda_malloc(bytes, "large activation input"), *y = zt_cuda_malloc(bytes, "large activation output");
  zt_cuda_memset(x, 0x3F, bytes); /* bf16 0x3F3F = 0.74609375 */
  zt_cuda_memset(y, 0xBF, bytes); /* bf16 0xBFBF = -1.4921875: dout, then overwritten by dinp = dout */
  const float xv = 0.74609375f, dyv = -1.4921875f;
  const size_t probes[] = {0, ((size_t)1 << 31) - 1, (size_t)1 << 31, n - 1};
  for (int kk = 0; kk < 4; kk++) {
    const zt_act_kind k = kKinds[kk];
    float want_f, want_b, got[4];
    zt_act_forward(k, &want_f, &xv, 1);
    zt_act_backward(k, &want_b, &xv, &dyv, 1);
    zt_round_f32(&want_f, &want_f, 1, dt);
    zt_round_f32(&want_b, &want_b, 1, dt);
    zt_cuda_memset(y, 0xBF, bytes);
    zt_cuda_act_backward(dt, k, y, x, y, n);
    int ok = 1;
    for (int p = 0; p < 4; p++) {
      uint16_t h;
      zt_cuda_memcpy_d2h(&h, (const char *)y + probes[p] * 2, 2);
      zt_convert(&got[p], ZT_DTYPE_FP32, &h, dt, 1);
      ok &= fabsf(got[p] - want_b) <= 0x1p-7f * fabsf(want_b);
    }
    expect(ok, fmt("act_backward %s bf16 of %zu elements reaches the last: %g %g %g %g, CPU %g", zt_act_name(k), n,
                   got[0], got[1], got[2], got[3], want_b));
    zt_cuda_act_forward(dt, k, y, x, n);
    ok = 1;
    for (int p = 0; p < 4; p++) {
      uint16_t h;
      zt_cuda_memcpy_d2h(&h, (const char *)y + probes[p] * 2, 2);
      zt_convert(&got[p], ZT_DTYPE_FP32, &h, dt, 1);
      ok &= fabsf(got[p] - want_f) <= 0x1p-7f * fabsf(want_f);
    }
    expect(ok, fmt("act_forward %s bf16 of %zu elements reaches the last: %g %g %g %g, CPU %g", zt_act_name(k), n,
                   got[0], got[1], got[2], got[3], want_f));
  }
  zt_cuda_free(x), zt_cuda_free(y);
}

static void large_tests(void) {
  const char *env = getenv("ZT_TEST_CUDA_LARGE");
  char desc[256] = "";
  zt_cuda_device_describe(0, desc, sizeof desc);
  size_t fr = 0, tot = 0;
  zt_cuda_mem_info(&fr, &tot);
  const int emulator = strstr(desc, "emulator") != NULL;
  const int run = env ? atoi(env) != 0 : !emulator && fr > ((size_t)12 << 30);
  if (run) test_large();
  else
    printf("note: buffers beyond 2^31 elements not tested (%s; ZT_TEST_CUDA_LARGE=1 forces them)\n",
           env ? "ZT_TEST_CUDA_LARGE=0" : emulator ? "the emulator" : "less than 12 GiB free");
}

int main(void) {
  h_init("test_cuda_activations");
  test_empty();
  static const size_t sizes[] = {1, 7, 8, 33, 1023, 100003};
  for (int d = 0; d < 3; d++)
    for (int kk = 0; kk < 4; kk++)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        test_act(kKinds[kk], h_dtypes[d], sizes[s], 0);
        test_act(kKinds[kk], h_dtypes[d], sizes[s], 1);
      }
  test_backend_table();
  large_tests();
  return h_done();
}
