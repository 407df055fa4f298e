/* The CUDA ops the engine and the backend-neutral models use beside the layer ops: a linear's bias apart from its
 * GEMM (add_bias, bias_grad), per-row weights (scale_rows, row_dot: the MoE combine; bad shapes refused), dropout on
 * a range of token rows (dropout_rows, a --sequence-parallel shard), the vocab-parallel cross-entropy's finish,
 * knowledge distillation's per-row KL term and gradient (kd_rows, against the CPU's double computation), the
 * Llama-style layer's RMSNorm, SwiGLU, rotary embedding and grouped-query attention's repeat_kv pack
 * (runtime/ops/cpu/llama_ops.c; partial rotary, heads strided as in a fused QKV buffer, inverse(forward(x)) == x, the
 * RMSNorm weight gradient and the GQA key/value gradient sums the same bits run to run), and
 * the flat fp32 buffer ops (scale, round to a half type counting overflows, count non-representable values,
 * device-to-device copy, the strided 2-D copy of DeepSpeed-Ulysses' all-to-all packing), against the CPU reference of
 * runtime/ops/cpu and runtime/base/dtype.c in fp32, bf16 and fp16. Odd shapes (C = 1, N and C not multiples of
 * anything, N = 0), buffers shifted off 16-byte alignment with poisoned guard elements around them that must stay
 * untouched, poisoned outputs, dropout masks and elementwise results bit for bit, reductions run twice and compared bit
 * for bit.
 * Also the device: the test runs on the last visible device (a process of a multi-GPU job uses its local rank's;
 * ZT_TEST_CUDA_DEVICE picks another), from a second host thread too, and checks device_count/describe/mem_info.
 * Buffers of more than 2^31 elements are tested on a GPU with the memory for them (ZT_TEST_CUDA_LARGE=1 forces
 * them, =0 skips them; they are skipped on the emulator by default). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/ops/backend.h"
#include "runtime/ops/ops.h"
#include "tests/cuda/harness.h"

static const char *fmt(const char *f, ...) {
  static char buf[256];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

static float *copy_of(const float *x, size_t n) {
  float *y = h_alloc(n);
  memcpy(y, x, n * sizeof(float));
  return y;
}

static void expect(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (ok) h_pass++;
  else h_fail++;
}

static void round_to(float *x, size_t n, zt_dtype dt) { zt_round_f32(x, x, n, dt); }

static void check_exact_dev(const char *what, const void *dev, zt_dtype dt, const float *want, size_t n) {
  float *got = h_download(dev, n, dt);
  h_check_exact(what, got, want, n);
  free(got);
}

/* ---- guarded buffers: n elements of dt `shift` elements into a poisoned allocation with kGuard poisoned elements
 * after them; a kernel writing outside [0, n) changes a guard ---------------------------------------------------- */
enum { kGuard = 8 };
typedef struct {
  void *base, *p;
  size_t n, shift;
  zt_dtype dt;
} gbuf;

static gbuf g_make(const float *x, size_t n, zt_dtype dt, int shift) {
  h_dbuf b = h_make(NULL, n + (size_t)shift + kGuard, dt, 0);
  gbuf g = {b.base, (char *)b.base + (size_t)shift * zt_dtype_size(dt), n, (size_t)shift, dt};
  if (x && n) {
    const size_t bytes = n * zt_dtype_size(dt);
    void *tmp = malloc(bytes);
    zt_convert(tmp, dt, x, ZT_DTYPE_FP32, n);
    zt_cuda_memcpy_h2d(g.p, tmp, bytes);
    free(tmp);
  }
  return g;
}

static void g_check_guards(const char *what_in, const gbuf *g) {
  char what[200]; /* what_in may be fmt's buffer, which expect's message reuses */
  snprintf(what, sizeof what, "%s", what_in);
  const size_t es = zt_dtype_size(g->dt), bytes = (g->n + g->shift + kGuard) * es;
  unsigned char *h = (unsigned char *)malloc(bytes);
  zt_cuda_memcpy_d2h(h, g->base, bytes);
  size_t bad = (size_t)-1;
  for (size_t i = 0; i < g->shift * es && bad == (size_t)-1; i++)
    if (h[i] != 0xFF) bad = i;
  for (size_t i = (g->shift + g->n) * es; i < bytes && bad == (size_t)-1; i++)
    if (h[i] != 0xFF) bad = i;
  free(h);
  expect(bad == (size_t)-1, fmt("%s: guards untouched%s", what, bad == (size_t)-1 ? "" : " (a byte outside was written)"));
}

/* ---- device selection, memory info, a second host thread ---------------------------------------------------- */

typedef struct {
  float *x;
  size_t n;
  size_t free_b, total_b;
} thread_job;

static void *thread_body(void *arg) {
  thread_job *j = (thread_job *)arg;
  zt_cuda_scale_f32(j->x, 2.0f, j->n);
  zt_cuda_mem_info(&j->free_b, &j->total_b);
  zt_cuda_synchronize();
  return NULL;
}

static void test_device(int dev, int count) {
  char desc[256] = "";
  expect(count >= 1 && dev >= 0 && dev < count, fmt("device %d of %d visible", dev, count));
  const int described = zt_cuda_device_describe(dev, desc, sizeof desc) == 0;
  expect(described && strstr(desc, "sm_") && strstr(desc, "GiB"), fmt("device_describe(%d): \"%s\"", dev, desc));
  expect(zt_cuda_device_describe(count, desc, sizeof desc) != 0, fmt("device_describe(%d) (not a device) fails", count));
  zt_cuda_init(dev); /* again: idempotent */

  size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0;
  zt_cuda_mem_info(&free0, &total0);
  expect(total0 > 0 && free0 > 0 && free0 <= total0,
         fmt("mem_info: %.1f MiB free of %.1f MiB", free0 / 1048576.0, total0 / 1048576.0));
  const size_t big = (size_t)64 << 20;
  void *p = zt_cuda_malloc(big, "mem_info probe");
  zt_cuda_synchronize();
  zt_cuda_mem_info(&free1, &total1);
  expect(total1 == total0 && free1 + big <= free0,
         fmt("mem_info after allocating 64 MiB on device %d: %.1f MiB free (was %.1f)", dev, free1 / 1048576.0,
             free0 / 1048576.0));
  zt_cuda_free(p);

  /* a host thread that never selected the device: the ops still run on it */
  const size_t n = 1000;
  float *x = h_randn(n, 1.0f, ZT_DTYPE_FP32, 81), *want = copy_of(x, n);
  for (size_t i = 0; i < n; i++) want[i] *= 2.0f;
  thread_job j = {(float *)h_upload(x, n, ZT_DTYPE_FP32), n, 0, 0};
  pthread_t th;
  expect(pthread_create(&th, NULL, thread_body, &j) == 0 && pthread_join(th, NULL) == 0, "second host thread ran");
  check_exact_dev(fmt("scale_f32 from a second host thread on device %d", dev), j.x, ZT_DTYPE_FP32, want, n);
  expect(j.total_b == total0, "mem_info from a second host thread reports the same device");
  zt_cuda_free(j.x);
  free(x), free(want);
}

/* ---- add_bias, bias_grad ------------------------------------------------------------------------------------ */

/* out[n, c] += bias[c]: one fp32 addition rounded once to dt on both sides, so bit for bit in every dtype. */
static void test_add_bias(zt_dtype dt, int N, int C, int shift) {
  const size_t nc = (size_t)N * C;
  char t[120];
  snprintf(t, sizeof t, "add_bias %s N=%d C=%d%s", zt_dtype_name(dt), N, C, shift ? " shifted" : "");
  float *out = h_randn(nc, 1.0f, dt, 91), *bias = h_randn((size_t)C, 1.0f, dt, 92), *want = copy_of(out, nc);
  zt_add_bias(want, bias, N, C);
  round_to(want, nc, dt);
  gbuf d_out = g_make(out, nc, dt, shift), d_bias = g_make(bias, (size_t)C, dt, shift);
  zt_cuda_add_bias(dt, d_out.p, d_bias.p, N, C);
  check_exact_dev(fmt("%s (+=)", t), d_out.p, dt, want, nc);
  g_check_guards(t, &d_out);
  zt_cuda_free(d_out.base), zt_cuda_free(d_bias.base);
  free(out), free(bias), free(want);
}

/* dbias += column sums of dout: fp32 sums in another order than the CPU's (chunks of rows), rounded once to dt;
 * the GPU's sum is the same from run to run, bit for bit. */
static void test_bias_grad(zt_dtype dt, int N, int C, int shift) {
  const size_t nc = (size_t)N * C;
  char t[120];
  snprintf(t, sizeof t, "bias_grad %s N=%d C=%d%s", zt_dtype_name(dt), N, C, shift ? " shifted" : "");
  float *dout = h_randn(nc, 1.0f, dt, 93), *db0 = h_randn((size_t)C, 1.0f, dt, 94), *want = copy_of(db0, (size_t)C);
  zt_bias_grad(want, dout, N, C);
  round_to(want, (size_t)C, dt);
  gbuf d_dout = g_make(dout, nc, dt, shift), d_db = g_make(db0, (size_t)C, dt, shift);
  zt_cuda_bias_grad(dt, d_db.p, d_dout.p, N, C);
  h_check(fmt("%s (+=)", t), d_db.p, dt, want, (size_t)C, h_tol(dt));
  g_check_guards(t, &d_db);
  check_exact_dev(fmt("%s: dout unchanged", t), d_dout.p, dt, dout, nc);
  float *first = h_download(d_db.p, (size_t)C, dt);
  zt_cuda_free(d_db.base);
  d_db = g_make(db0, (size_t)C, dt, shift);
  zt_cuda_bias_grad(dt, d_db.p, d_dout.p, N, C);
  check_exact_dev(fmt("%s: run to run", t), d_db.p, dt, first, (size_t)C);
  zt_cuda_free(d_dout.base), zt_cuda_free(d_db.base);
  free(dout), free(db0), free(want), free(first);
}

/* ---- scale_rows, row_dot (the MoE layer's combine) --------------------------------------------------------------- */

/* the fatal hook of the children that check a refusal (expect_refused_shape, expect_refused_overlap) */
static void die_quietly(int code) { _exit(code); }

/* out[n, c] = w[n] * x[n, c]: one fp32 product rounded once to dt on both sides, so bit for bit in every dtype; into
 * another buffer (x unchanged), then in place (out == x). The weights are fp32 of any magnitude (N(0, 3)). */
static void test_scale_rows(zt_dtype dt, int N, int C, int shift) {
  const size_t nc = (size_t)N * C;
  char t[120];
  snprintf(t, sizeof t, "scale_rows %s N=%d C=%d%s", zt_dtype_name(dt), N, C, shift ? " shifted" : "");
  float *x = h_randn(nc, 1.0f, dt, 95), *w = h_randn((size_t)N, 3.0f, ZT_DTYPE_FP32, 96), *want = h_alloc(nc);
  zt_scale_rows(want, x, w, N, C);
  round_to(want, nc, dt);
  gbuf d_x = g_make(x, nc, dt, shift), d_w = g_make(w, (size_t)N, ZT_DTYPE_FP32, shift);
  gbuf d_out = g_make(NULL, nc, dt, shift);
  zt_cuda_scale_rows(dt, d_out.p, d_x.p, (const float *)d_w.p, N, C);
  check_exact_dev(t, d_out.p, dt, want, nc);
  g_check_guards(t, &d_out);
  check_exact_dev(fmt("%s: x unchanged", t), d_x.p, dt, x, nc);
  zt_cuda_scale_rows(dt, d_x.p, d_x.p, (const float *)d_w.p, N, C);
  check_exact_dev(fmt("%s in place", t), d_x.p, dt, want, nc);
  g_check_guards(fmt("%s in place", t), &d_x);
  check_exact_dev(fmt("%s: w unchanged", t), d_w.p, ZT_DTYPE_FP32, w, (size_t)N);
  zt_cuda_free(d_x.base), zt_cuda_free(d_w.base), zt_cuda_free(d_out.base);
  free(x), free(w), free(want);
}

/* out[n] = sum over c of a[n, c] * b[n, c] (fp32 out). The products of dt values are exact in fp32 (bf16 and fp16
 * have at most 11 significant bits) and the device adds them in fp32 with fmaf: per lane ceil(C / 32) roundings, then
 * 5 in the butterfly, each within 2^-24 of the partial sum, so |got - want| <= (ceil(C / 32) + 5) * 2^-24 * sum |a b|
 * plus the CPU's own error (its double sum rounded to fp32): the worst case, which a wrong index or a
 * missing term exceeds by orders. Small integers (|a|, |b| <= 8) have exact fp32 sums: there the device equals the
 * CPU bit for bit. And the same bits run to run. */
static void test_row_dot(zt_dtype dt, int N, int C, int shift) {
  const size_t nc = (size_t)N * C;
  char t[120];
  snprintf(t, sizeof t, "row_dot %s N=%d C=%d%s", zt_dtype_name(dt), N, C, shift ? " shifted" : "");
  float *a = h_randn(nc, 1.0f, dt, 97), *b = h_randn(nc, 2.0f, dt, 98), *want = h_alloc((size_t)N);
  zt_row_dot(want, a, b, N, C);
  gbuf d_a = g_make(a, nc, dt, shift), d_b = g_make(b, nc, dt, shift);
  gbuf d_out = g_make(NULL, (size_t)N, ZT_DTYPE_FP32, shift);
  zt_cuda_row_dot(dt, (float *)d_out.p, d_a.p, d_b.p, N, C);
  float *got = h_download(d_out.p, (size_t)N, ZT_DTYPE_FP32);
  const double k = (double)((C + 31) / 32 + 5) * ldexp(1.0, -24);
  double worst = 0.0;
  int ok = 1;
  for (int n = 0; n < N; n++) {
    double abs_sum = 0.0;
    for (int c = 0; c < C; c++) abs_sum += fabs((double)a[(size_t)n * C + c] * b[(size_t)n * C + c]);
    /* k / (1 - k): the exact form of the first-order bound; C 2^-53: the CPU's double sum; 2^-23 |want|: its
     * rounding to fp32 */
    const double err = fabs((double)got[n] - want[n]);
    const double bound = (k / (1.0 - k) + C * ldexp(1.0, -53)) * abs_sum + ldexp(fabs(want[n]), -23);
    if (!(err <= bound)) ok = 0; /* NaN (an unwritten row) fails too */
    if (abs_sum > 0 && err / abs_sum > worst) worst = err / abs_sum;
  }
  expect(ok, fmt("%s: within the fp32 summation bound (worst %.2g of sum |a b|, bound %.2g)", t, worst, k));
  g_check_guards(t, &d_out);
  check_exact_dev(fmt("%s: a unchanged", t), d_a.p, dt, a, nc);
  check_exact_dev(fmt("%s: b unchanged", t), d_b.p, dt, b, nc);
  zt_cuda_memset(d_out.p, 0xFF, (size_t)N * sizeof(float));
  zt_cuda_row_dot(dt, (float *)d_out.p, d_a.p, d_b.p, N, C);
  check_exact_dev(fmt("%s: run to run", t), d_out.p, ZT_DTYPE_FP32, got, (size_t)N);

  /* integers: every partial sum is exact (|sum| <= 64 C < 2^24) */
  for (size_t i = 0; i < nc; i++) a[i] = rintf(a[i] * 4.0f), b[i] = rintf(b[i] * 2.0f);
  for (size_t i = 0; i < nc; i++) a[i] = fminf(fmaxf(a[i], -8.0f), 8.0f), b[i] = fminf(fmaxf(b[i], -8.0f), 8.0f);
  zt_row_dot(want, a, b, N, C);
  zt_cuda_free(d_a.base), zt_cuda_free(d_b.base);
  d_a = g_make(a, nc, dt, shift), d_b = g_make(b, nc, dt, shift);
  zt_cuda_memset(d_out.p, 0xFF, (size_t)N * sizeof(float));
  zt_cuda_row_dot(dt, (float *)d_out.p, d_a.p, d_b.p, N, C);
  check_exact_dev(fmt("%s: small integers exactly", t), d_out.p, ZT_DTYPE_FP32, want, (size_t)N);
  zt_cuda_free(d_a.base), zt_cuda_free(d_b.base), zt_cuda_free(d_out.base);
  free(a), free(b), free(want), free(got);
}

/* In a child: a bad shape must end it as zt_fatal does (exit 1) naming the op and the shape, before any CUDA call. */
static void expect_refused_shape(int row_dot, int N, int C) {
  const char *op = row_dot ? "zt_cuda_row_dot" : "zt_cuda_scale_rows";
  int pfd[2];
  if (pipe(pfd) != 0) exit(2);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], 2);
    close(pfd[0]);
    zt_set_fatal_hook(die_quietly);
    if (row_dot) zt_cuda_row_dot(ZT_DTYPE_FP32, NULL, NULL, NULL, N, C);
    else zt_cuda_scale_rows(ZT_DTYPE_FP32, NULL, NULL, NULL, N, C);
    _exit(0);
  }
  close(pfd[1]);
  char err[2048] = {0}, shape[64];
  size_t got = 0;
  ssize_t r;
  while (got < sizeof err - 1 && (r = read(pfd[0], err + got, sizeof err - 1 - got)) > 0) got += (size_t)r;
  close(pfd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  snprintf(shape, sizeof shape, "N=%d C=%d", N, C);
  const int ok = WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(err, op) && strstr(err, shape);
  expect(ok, fmt("%s with %s refused: %s", op, shape, ok ? "as expected" : "not refused as expected"));
  if (!ok) printf("    exit status %d, stderr: %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, err);
}

/* ---- dropout_rows ------------------------------------------------------------------------------------------- */

/* Rows [row0, row0 + n) of a micro batch of B samples of T tokens x C channels, keyed from sample first_sample = 7.
 * The CPU's result rounded to dt equals the device's bit for bit in every dtype (x * scale and residual + that are
 * the same fp32 values rounded once); in fp32 the comparison is exact (tolerance 0). */
static void test_dropout_rows(zt_dtype dt, int B, int T, int C, int row0, int n, float p, int with_res, int shift) {
  const zt_dropout d = {p, 0xC0FFEE1234ull, 33, 7};
  const size_t nc = (size_t)n * C;
  char t[160];
  snprintf(t, sizeof t, "dropout_rows %s B=%d T=%d C=%d rows [%d, %d) p=%g%s%s", zt_dtype_name(dt), B, T, C, row0,
           row0 + n, p, with_res ? " + residual" : "", shift ? " shifted" : "");
  float *x = h_randn(nc, 1.0f, dt, 101), *res = h_randn(nc, 1.0f, dt, 102), *want = h_alloc(nc);
  zt_dropout_rows(want, with_res ? res : NULL, x, row0, n, T, C, &d);
  round_to(want, nc, dt);

  if (!with_res && dt == ZT_DTYPE_FP32 && n > 0) {
    /* the reference itself: these rows of the dropout of the whole micro batch */
    const size_t S = (size_t)T * C, all = (size_t)B * S;
    float *fx = h_alloc(all), *fout = h_alloc(all);
    memcpy(fx + (size_t)row0 * C, x, nc * sizeof(float));
    zt_dropout_forward(fout, fx, B, S, &d);
    h_check_exact(fmt("%s: the CPU reference is the whole batch's dropout on those rows", t), want,
                  fout + (size_t)row0 * C, nc);
    free(fx), free(fout);
  }
  /* the masks must mask: about p * nc dropped (nc = 38500, p = 0.1: 3850 with a standard deviation of 59) */
  float *plain = h_alloc(nc);
  zt_dropout_rows(plain, NULL, x, row0, n, T, C, &d);
  size_t dropped = 0;
  for (size_t i = 0; i < nc; i++) dropped += x[i] != 0.0f && plain[i] == 0.0f;
  free(plain);
  if (p == 0.0f || nc * p >= 100)
    expect(p == 0.0f ? dropped == 0 : fabs((double)dropped - p * nc) <= 0.2 * p * nc + 5,
           fmt("%s: %zu of %zu dropped", t, dropped, nc));

  gbuf d_x = g_make(x, nc, dt, shift), d_res = g_make(res, nc, dt, shift), d_out = g_make(NULL, nc, dt, shift);
  zt_cuda_dropout_rows(dt, d_out.p, with_res ? d_res.p : NULL, d_x.p, row0, n, T, C, &d);
  check_exact_dev(t, d_out.p, dt, want, nc);
  g_check_guards(t, &d_out);
  /* in place: of x without a residual, of the residual stream with one */
  void *inplace = with_res ? d_res.p : d_x.p;
  zt_cuda_dropout_rows(dt, inplace, with_res ? d_res.p : NULL, d_x.p, row0, n, T, C, &d);
  check_exact_dev(fmt("%s in place of %s", t, with_res ? "the residual" : "x"), inplace, dt, want, nc);
  g_check_guards(fmt("%s in place", t), with_res ? &d_res : &d_x);
  zt_cuda_free(d_x.base), zt_cuda_free(d_res.base), zt_cuda_free(d_out.base);
  free(x), free(res), free(want);
}

/* ---- cross-entropy vp finish ---------------------------------------------------------------------------------- */

/* fp32 from the same inputs: logf may differ by an ulp between the libraries, hence the fp32 tolerance. */
static void test_vp_finish(int N) {
  const size_t n = (size_t)N;
  float *rowmax = h_randn(n, 3.0f, ZT_DTYPE_FP32, 111), *sumexp = h_randn(n, 1000.0f, ZT_DTYPE_FP32, 112);
  float *tlogit = h_randn(n, 3.0f, ZT_DTYPE_FP32, 113), *losses = h_alloc(n), *lse = h_alloc(n);
  for (size_t i = 0; i < n; i++) sumexp[i] = 1.0f + fabsf(sumexp[i]);
  zt_cross_entropy_vp_finish(losses, lse, rowmax, sumexp, tlogit, N);
  float *d_max = (float *)h_upload(rowmax, n, ZT_DTYPE_FP32), *d_sum = (float *)h_upload(sumexp, n, ZT_DTYPE_FP32);
  float *d_t = (float *)h_upload(tlogit, n, ZT_DTYPE_FP32);
  gbuf d_losses = g_make(NULL, n, ZT_DTYPE_FP32, 1), d_lse = g_make(NULL, n, ZT_DTYPE_FP32, 1);
  zt_cuda_cross_entropy_vp_finish((float *)d_losses.p, (float *)d_lse.p, d_max, d_sum, d_t, N);
  h_check(fmt("cross_entropy_vp_finish N=%d: losses", N), d_losses.p, ZT_DTYPE_FP32, losses, n, h_tol(ZT_DTYPE_FP32));
  h_check(fmt("cross_entropy_vp_finish N=%d: lse", N), d_lse.p, ZT_DTYPE_FP32, lse, n, h_tol(ZT_DTYPE_FP32));
  g_check_guards(fmt("cross_entropy_vp_finish N=%d: losses", N), &d_losses);
  g_check_guards(fmt("cross_entropy_vp_finish N=%d: lse", N), &d_lse);
  zt_cuda_free(d_max), zt_cuda_free(d_sum), zt_cuda_free(d_t), zt_cuda_free(d_losses.base), zt_cuda_free(d_lse.base);
  free(rowmax), free(sumexp), free(tlogit), free(losses), free(lse);
}

/* ---- knowledge distillation's rows (kd_rows) ------------------------------------------------------------------- */

/* Student and teacher logits of dt (N(0, 3): sharp and flat rows), one teacher row far below the rest at one column
 * (its p underflows to 0 there: the term is skipped on both sides), temperatures 1 and 2, against the CPU's double
 * computation: the GPU's fp32 (expf of values near 0, a block-combined log-sum-exp) is within 1e-6 of gcoef on the
 * gradient (|q - p| <= 1) and 2e-5 (1 + |want|) on each row's KL term; the same bits run to run; the logits
 * unchanged; guards around the outputs. */
static void test_kd_rows(zt_dtype dt, int N, int V, double temp, int shift) {
  const size_t n = (size_t)N * V;
  char t[120];
  snprintf(t, sizeof t, "kd_rows %s N=%d V=%d temp %g%s", zt_dtype_name(dt), N, V, temp, shift ? " shifted" : "");
  float *s = h_randn(n, 3.0f, dt, 131), *te = h_randn(n, 3.0f, dt, 132);
  if (N > 1 && V > 1) te[(size_t)V + 1] = -30000.0f; /* exp((-30000 - max) / temp) == 0 */
  round_to(te, n, dt);
  float *want_rows = h_alloc((size_t)N), *want_grad = h_alloc(n);
  const double gcoef = 0.75 * temp / (double)(N > 0 ? N : 1);
  zt_kd_rows(want_rows, want_grad, s, te, N, V, temp, gcoef, NULL);
  gbuf d_s = g_make(s, n, dt, shift), d_t = g_make(te, n, dt, shift);
  gbuf d_rows = g_make(NULL, (size_t)N, ZT_DTYPE_FP32, shift), d_grad = g_make(NULL, n, ZT_DTYPE_FP32, shift);
  zt_cuda_kd_rows(dt, (float *)d_rows.p, (float *)d_grad.p, d_s.p, d_t.p, N, V, temp, gcoef, NULL);
  float *rows = h_download(d_rows.p, (size_t)N, ZT_DTYPE_FP32), *grad = h_download(d_grad.p, n, ZT_DTYPE_FP32);
  double worst_g = 0.0, worst_r = 0.0;
  int ok_g = 1, ok_r = 1;
  for (size_t i = 0; i < n; i++) {
    const double e = fabs((double)grad[i] - want_grad[i]);
    if (!(e <= 1e-6 * gcoef)) ok_g = 0;
    worst_g = e > worst_g ? e : worst_g;
  }
  for (int r = 0; r < N; r++) {
    const double e = fabs((double)rows[r] - want_rows[r]);
    if (!(e <= 2e-5 * (1.0 + fabs(want_rows[r])))) ok_r = 0;
    worst_r = e > worst_r ? e : worst_r;
  }
  expect(ok_g, fmt("%s: gradient within 1e-6 gcoef of the CPU's (worst %.2g, gcoef %.3g)", t, worst_g, gcoef));
  expect(ok_r, fmt("%s: row KL terms within 2e-5 (1 + |KL|) of the CPU's (worst %.2g)", t, worst_r));
  g_check_guards(fmt("%s: row losses", t), &d_rows);
  g_check_guards(fmt("%s: gradient", t), &d_grad);
  check_exact_dev(fmt("%s: student unchanged", t), d_s.p, dt, s, n);
  check_exact_dev(fmt("%s: teacher unchanged", t), d_t.p, dt, te, n);
  zt_cuda_memset(d_grad.p, 0xFF, n * sizeof(float));
  zt_cuda_kd_rows(dt, (float *)d_rows.p, (float *)d_grad.p, d_s.p, d_t.p, N, V, temp, gcoef, NULL);
  check_exact_dev(fmt("%s: run to run", t), d_grad.p, ZT_DTYPE_FP32, grad, n);
  check_exact_dev(fmt("%s: row losses run to run", t), d_rows.p, ZT_DTYPE_FP32, rows, (size_t)N);
  zt_cuda_free(d_s.base), zt_cuda_free(d_t.base), zt_cuda_free(d_rows.base), zt_cuda_free(d_grad.base);
  free(s), free(te), free(want_rows), free(want_grad), free(rows), free(grad);
}

/* A tensor-parallel student's rows (kd_lse, then kd_rows with the whole vocabulary's lse): V split in two slices
 * [0, V1) and [V1, V) as two ranks hold them; each slice's log-sum-exps within 1e-5 (1 + |lse|) of the CPU's, then the
 * host's combination of the two in double; each slice's gradient within 1e-6 gcoef of the whole rows' on the CPU,
 * and the two slices' row terms summing to the whole rows' term within 2e-5 (1 + |KL|). */
static void test_kd_slices(zt_dtype dt, int N, int V, double temp) {
  const int V1 = V / 3 + 1, Vs[2] = {V1, V - V1};
  char t[120];
  snprintf(t, sizeof t, "kd_rows in slices %s N=%d V=%d+%d temp %g", zt_dtype_name(dt), N, Vs[0], Vs[1], temp);
  const size_t n = (size_t)N * V;
  float *s = h_randn(n, 3.0f, dt, 141), *te = h_randn(n, 3.0f, dt, 142);
  float *want_rows = h_alloc((size_t)N), *want_grad = h_alloc(n), *lse = h_alloc(2 * (size_t)N);
  const double gcoef = 0.5 * temp / (double)N;
  zt_kd_rows(want_rows, want_grad, s, te, N, V, temp, gcoef, NULL);
  double *comb = calloc(2 * (size_t)N, sizeof(double)), worst_l = 0.0, worst_g = 0.0, worst_r = 0.0;
  float *part[2], *grad[2], *rows[2];
  gbuf d_s[2], d_t[2];
  for (int j = 0; j < 2; j++) { /* slice j's rows, contiguous as a rank holds them */
    const int v0 = j ? V1 : 0;
    float *ss = h_alloc((size_t)N * Vs[j]), *ts = h_alloc((size_t)N * Vs[j]);
    for (int r = 0; r < N; r++)
      for (int v = 0; v < Vs[j]; v++)
        ss[(size_t)r * Vs[j] + v] = s[(size_t)r * V + v0 + v], ts[(size_t)r * Vs[j] + v] = te[(size_t)r * V + v0 + v];
    d_s[j] = g_make(ss, (size_t)N * Vs[j], dt, 0), d_t[j] = g_make(ts, (size_t)N * Vs[j], dt, 0);
    gbuf d_l = g_make(NULL, 2 * (size_t)N, ZT_DTYPE_FP32, 1);
    zt_cuda_kd_lse(dt, (float *)d_l.p, d_s[j].p, d_t[j].p, N, Vs[j], temp);
    part[j] = h_download(d_l.p, 2 * (size_t)N, ZT_DTYPE_FP32);
    g_check_guards(fmt("%s: slice %d lse", t, j), &d_l);
    zt_kd_lse(lse, ss, ts, N, Vs[j], temp);
    for (int i = 0; i < 2 * N; i++) {
      const double e = fabs((double)part[j][i] - lse[i]) / (1.0 + fabs(lse[i]));
      worst_l = e > worst_l ? e : worst_l;
    }
    zt_cuda_free(d_l.base), free(ss), free(ts);
  }
  for (int i = 0; i < 2 * N; i++) { /* log(exp(a) + exp(b)), as the ranks' combination does */
    const double a = part[0][i], b = part[1][i], m = a > b ? a : b;
    comb[i] = m + log(exp(a - m) + exp(b - m));
    lse[i] = (float)comb[i];
  }
  gbuf d_lse = g_make(lse, 2 * (size_t)N, ZT_DTYPE_FP32, 0);
  for (int j = 0; j < 2; j++) {
    const int v0 = j ? V1 : 0;
    gbuf d_rows = g_make(NULL, (size_t)N, ZT_DTYPE_FP32, 1), d_grad = g_make(NULL, (size_t)N * Vs[j], ZT_DTYPE_FP32, 1);
    zt_cuda_kd_rows(dt, (float *)d_rows.p, (float *)d_grad.p, d_s[j].p, d_t[j].p, N, Vs[j], temp, gcoef,
                    (const float *)d_lse.p);
    rows[j] = h_download(d_rows.p, (size_t)N, ZT_DTYPE_FP32);
    grad[j] = h_download(d_grad.p, (size_t)N * Vs[j], ZT_DTYPE_FP32);
    g_check_guards(fmt("%s: slice %d gradient", t, j), &d_grad);
    for (int r = 0; r < N; r++)
      for (int v = 0; v < Vs[j]; v++) {
        const double e = fabs((double)grad[j][(size_t)r * Vs[j] + v] - want_grad[(size_t)r * V + v0 + v]);
        worst_g = e > worst_g ? e : worst_g;
      }
    zt_cuda_free(d_rows.base), zt_cuda_free(d_grad.base), zt_cuda_free(d_s[j].base), zt_cuda_free(d_t[j].base);
  }
  for (int r = 0; r < N; r++) {
    const double e = fabs((double)rows[0][r] + rows[1][r] - want_rows[r]) / (1.0 + fabs(want_rows[r]));
    worst_r = e > worst_r ? e : worst_r;
  }
  expect(worst_l <= 1e-5, fmt("%s: each slice's lse within 1e-5 (1 + |lse|) of the CPU's (worst %.2g)", t, worst_l));
  expect(worst_g <= 1e-6 * gcoef, fmt("%s: slice gradients within 1e-6 gcoef of the whole rows' (worst %.2g)", t,
                                      worst_g));
  expect(worst_r <= 2e-5, fmt("%s: the slices' terms sum to the whole rows' within 2e-5 (worst %.2g)", t, worst_r));
  zt_cuda_free(d_lse.base);
  for (int j = 0; j < 2; j++) free(part[j]), free(grad[j]), free(rows[j]);
  free(s), free(te), free(want_rows), free(want_grad), free(lse), free(comb);
}

/* ---- RMSNorm, SwiGLU, rotary embedding (the Llama-style layer) ------------------------------------------------- */

/* got [N, C] against want within tol * scale[n] in row n (NaN, an unwritten element, fails): for results whose
 * reference is a difference of larger terms, scale[n] is the largest of those terms' magnitudes in the row, not the
 * result's. */
static void check_row_scaled(const char *what_in, const void *dev, zt_dtype dt, const float *want, int N, int C,
                             double tol, const double *scale) {
  char what[200]; /* what_in may be fmt's buffer, which expect's message reuses */
  snprintf(what, sizeof what, "%s", what_in);
  float *got = h_download(dev, (size_t)N * C, dt);
  double worst = 0.0;
  int ok = 1;
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++) {
      const size_t i = (size_t)n * C + c;
      const double e = fabs((double)got[i] - want[i]) / scale[n];
      if (!(e <= tol)) ok = 0;
      if (!(e <= worst)) worst = e;
    }
  expect(ok, fmt("%s (max difference %.2g of the row's largest term, tolerance %.1g)", what, worst, tol));
  free(got);
}

/* Rows of different magnitudes (row n scaled by 1 + n % 5: rstd differs row to row), weights about 1. */
static void rms_inputs(zt_dtype dt, int N, int C, float **x, float **w) {
  const size_t nc = (size_t)N * C;
  *x = h_randn(nc, 1.0f, dt, 151);
  for (size_t i = 0; i < nc; i++) (*x)[i] *= (float)(1 + (i / (size_t)C) % 5);
  round_to(*x, nc, dt);
  *w = h_randn((size_t)C, 0.3f, dt, 152);
  for (int i = 0; i < C; i++) (*w)[i] += 1.0f;
  round_to(*w, (size_t)C, dt);
}

/* out within the dtype's tolerance of the CPU's (its fp32 from the same dt inputs, rounded once); rstd fp32 on both
 * sides from the same inputs (a double sum on the CPU, fp32 block sums here): the fp32 tolerance whatever dt is. */
static void test_rmsnorm_forward(zt_dtype dt, int N, int C, float eps, int shift) {
  const size_t nc = (size_t)N * C;
  char t[120];
  snprintf(t, sizeof t, "rmsnorm_forward %s N=%d C=%d eps %g%s", zt_dtype_name(dt), N, C, eps, shift ? " shifted" : "");
  float *x, *w, *out = h_alloc(nc), *rstd = h_alloc((size_t)N);
  rms_inputs(dt, N, C, &x, &w);
  zt_rmsnorm_forward(out, rstd, x, w, N, C, eps);
  gbuf d_x = g_make(x, nc, dt, shift), d_w = g_make(w, (size_t)C, dt, shift), d_out = g_make(NULL, nc, dt, shift);
  gbuf d_rstd = g_make(NULL, (size_t)N, ZT_DTYPE_FP32, shift);
  zt_cuda_rmsnorm_forward(dt, d_out.p, (float *)d_rstd.p, d_x.p, d_w.p, N, C, eps);
  h_check(fmt("%s: out", t), d_out.p, dt, out, nc, h_tol(dt));
  h_check(fmt("%s: rstd", t), d_rstd.p, ZT_DTYPE_FP32, rstd, (size_t)N, h_tol(ZT_DTYPE_FP32));
  g_check_guards(fmt("%s: out", t), &d_out);
  g_check_guards(fmt("%s: rstd", t), &d_rstd);
  check_exact_dev(fmt("%s: inp unchanged", t), d_x.p, dt, x, nc);
  zt_cuda_free(d_x.base), zt_cuda_free(d_w.base), zt_cuda_free(d_out.base), zt_cuda_free(d_rstd.base);
  free(x), free(w), free(out), free(rstd);
}

/* dinp = rstd w dy - x rstd^3 sum(w dy x) / C: a difference, which for C = 1 cancels to about eps / x^2 of its terms,
 * so each row is held to the tolerance of its largest term; dw += sum over rows of x rstd dy (fp32 chunk sums in
 * another order than the CPU's double, rounded once to dt) within the dtype's tolerance. Run again with dinp written
 * over dout: dw and dinp the same bits. */
static void test_rmsnorm_backward(zt_dtype dt, int N, int C, int shift) {
  const size_t nc = (size_t)N * C;
  char t[120];
  snprintf(t, sizeof t, "rmsnorm_backward %s N=%d C=%d%s", zt_dtype_name(dt), N, C, shift ? " shifted" : "");
  float *x, *w, *out = h_alloc(nc), *rstd = h_alloc((size_t)N);
  rms_inputs(dt, N, C, &x, &w);
  zt_rmsnorm_forward(out, rstd, x, w, N, C, 1e-5f);
  float *dout = h_randn(nc, 1.0f, dt, 153), *dw0 = h_randn((size_t)C, 0.5f, dt, 154);
  float *dinp = h_alloc(nc), *dw = copy_of(dw0, (size_t)C);
  zt_rmsnorm_backward(dinp, dw, dout, x, w, rstd, N, C);
  double *terms = calloc(N ? (size_t)N : 1, sizeof(double));
  for (int n = 0; n < N; n++) {
    const float *xr = x + (size_t)n * C, *dy = dout + (size_t)n * C;
    const double s = rstd[n];
    double dot = 0.0;
    terms[n] = 1e-30;
    for (int i = 0; i < C; i++) dot += (double)w[i] * dy[i] * xr[i];
    for (int i = 0; i < C; i++) {
      const double a = fabs(s * w[i] * dy[i]) + fabs(dot * s * s * s / C * xr[i]);
      terms[n] = a > terms[n] ? a : terms[n];
    }
  }
  gbuf d_x = g_make(x, nc, dt, shift), d_w = g_make(w, (size_t)C, dt, shift), d_dout = g_make(dout, nc, dt, shift);
  gbuf d_rstd = g_make(rstd, (size_t)N, ZT_DTYPE_FP32, shift), d_dinp = g_make(NULL, nc, dt, shift);
  gbuf d_dw = g_make(dw0, (size_t)C, dt, shift);
  zt_cuda_rmsnorm_backward(dt, d_dinp.p, d_dw.p, d_dout.p, d_x.p, d_w.p, (const float *)d_rstd.p, N, C);
  check_row_scaled(fmt("%s: dinp", t), d_dinp.p, dt, dinp, N, C, h_tol(dt), terms);
  h_check(fmt("%s: dw (+=)", t), d_dw.p, dt, dw, (size_t)C, h_tol(dt));
  g_check_guards(fmt("%s: dinp", t), &d_dinp);
  g_check_guards(fmt("%s: dw", t), &d_dw);
  check_exact_dev(fmt("%s: inp unchanged", t), d_x.p, dt, x, nc);

  float *first_dw = h_download(d_dw.p, (size_t)C, dt), *first_dinp = h_download(d_dinp.p, nc, dt);
  zt_cuda_free(d_dw.base);
  d_dw = g_make(dw0, (size_t)C, dt, shift);
  zt_cuda_rmsnorm_backward(dt, d_dout.p, d_dw.p, d_dout.p, d_x.p, d_w.p, (const float *)d_rstd.p, N, C);
  check_exact_dev(fmt("%s: dw run to run", t), d_dw.p, dt, first_dw, (size_t)C);
  check_exact_dev(fmt("%s: dinp run to run, in place of dout", t), d_dout.p, dt, first_dinp, nc);
  zt_cuda_free(d_x.base), zt_cuda_free(d_w.base), zt_cuda_free(d_dout.base), zt_cuda_free(d_rstd.base);
  zt_cuda_free(d_dinp.base), zt_cuda_free(d_dw.base);
  free(x), free(w), free(out), free(rstd), free(dout), free(dw0), free(dinp), free(dw), free(first_dw),
      free(first_dinp), free(terms);
}

/* Gates N(0, 2) with two saturated ones in row 0 (g = -100: expf overflows to inf, sigmoid 0; g = 100: sigmoid 1),
 * ups N(0, 1); fp32 on the device against the CPU's double, within the dtype's tolerance. The backward into another
 * buffer, then in place of inp: the same bits. */
static void test_swiglu(zt_dtype dt, int N, int F, int shift) {
  const size_t n2 = (size_t)N * 2 * F, n = (size_t)N * F;
  char t[120];
  snprintf(t, sizeof t, "swiglu %s N=%d F=%d%s", zt_dtype_name(dt), N, F, shift ? " shifted" : "");
  float *inp = h_randn(n2, 2.0f, dt, 161), *dout = h_randn(n, 1.0f, dt, 162);
  if (N > 0) inp[0] = -100.0f;
  if (N > 0 && F > 1) inp[1] = 100.0f;
  float *out = h_alloc(n), *dinp = h_alloc(n2);
  zt_swiglu_forward(out, inp, N, F);
  zt_swiglu_backward(dinp, dout, inp, N, F);
  gbuf d_in = g_make(inp, n2, dt, shift), d_out = g_make(NULL, n, dt, shift), d_dout = g_make(dout, n, dt, shift);
  gbuf d_dinp = g_make(NULL, n2, dt, shift);
  zt_cuda_swiglu_forward(dt, d_out.p, d_in.p, N, F);
  h_check(fmt("%s: forward", t), d_out.p, dt, out, n, h_tol(dt));
  g_check_guards(fmt("%s: forward", t), &d_out);
  check_exact_dev(fmt("%s: forward: inp unchanged", t), d_in.p, dt, inp, n2);
  zt_cuda_swiglu_backward(dt, d_dinp.p, d_dout.p, d_in.p, N, F);
  h_check(fmt("%s: backward dinp", t), d_dinp.p, dt, dinp, n2, h_tol(dt));
  g_check_guards(fmt("%s: backward dinp", t), &d_dinp);
  check_exact_dev(fmt("%s: backward: inp unchanged", t), d_in.p, dt, inp, n2);
  float *first = h_download(d_dinp.p, n2, dt);
  zt_cuda_swiglu_backward(dt, d_in.p, d_dout.p, d_in.p, N, F);
  check_exact_dev(fmt("%s: backward in place of inp", t), d_in.p, dt, first, n2);
  g_check_guards(fmt("%s: backward in place", t), &d_in);
  zt_cuda_free(d_in.base), zt_cuda_free(d_out.base), zt_cuda_free(d_dout.base), zt_cuda_free(d_dinp.base);
  free(inp), free(dout), free(out), free(dinp), free(first);
}

/* x of B T rows of ld elements. fused: a QKV buffer, rows of 3 NH hd, head h's q at 3 h hd, k at 3 h hd + hd (hs =
 * 3 hd); q and k turned by two calls as a model does, v untouched. Otherwise rows of NH hd, hs = hd. rot <= hd:
 * partial rotary when less. Against the CPU's zt_rope (the same fp32 expression, rounded to dt) within the dtype's
 * tolerance; every element the rotation does not own bit for bit unchanged; guards; then the inverse turn: against
 * the CPU's inverse of the device's result, and back to x within the dtype's tolerance. */
static void test_rope(zt_dtype dt, int B, int T, int NH, int hd, int rot, int fused, int pos0, int shift) {
  const int ld = (fused ? 3 : 1) * NH * hd, hs = (fused ? 3 : 1) * hd, calls = fused ? 2 : 1;
  const size_t n = (size_t)B * T * ld, es = zt_dtype_size(dt), ncs = (size_t)T * rot;
  char t[160];
  snprintf(t, sizeof t, "rope %s B=%d T=%d NH=%d hd=%d rot=%d%s pos0=%d%s", zt_dtype_name(dt), B, T, NH, hd, rot,
           fused ? " fused QKV (hs=3hd)" : "", pos0, shift ? " shifted" : "");
  float *x = h_randn(n, 1.0f, dt, 171), *cs = h_alloc(ncs), *want = copy_of(x, n);
  zt_rope_table(cs, pos0, T, rot, 10000.0f);
  for (int c = 0; c < calls; c++) zt_rope(want + (size_t)c * hd, cs, B, T, NH, ld, hs, rot, 0);
  round_to(want, n, dt);
  unsigned char *owned = calloc(n ? n : 1, 1);
  for (size_t r = 0; r < (size_t)B * T; r++)
    for (int c = 0; c < calls; c++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < rot; i++) owned[r * ld + (size_t)h * hs + (size_t)c * hd + i] = 1;
  gbuf d_x = g_make(x, n, dt, shift), d_cs = g_make(cs, ncs, ZT_DTYPE_FP32, shift);
  for (int c = 0; c < calls; c++)
    zt_cuda_rope(dt, (char *)d_x.p + (size_t)c * hd * es, (const float *)d_cs.p, B, T, NH, ld, hs, rot, 0);
  h_check(fmt("%s: forward", t), d_x.p, dt, want, n, h_tol(dt));
  float *got = h_download(d_x.p, n, dt);
  size_t bad = (size_t)-1;
  for (size_t i = 0; i < n && bad == (size_t)-1; i++)
    if (!owned[i] && memcmp(&got[i], &x[i], sizeof(float)) != 0) bad = i;
  expect(bad == (size_t)-1, fmt("%s: elements outside the rotated dimensions unchanged (bitwise)", t));
  g_check_guards(fmt("%s: forward", t), &d_x);
  check_exact_dev(fmt("%s: cs unchanged", t), d_cs.p, ZT_DTYPE_FP32, cs, ncs);

  float *want_inv = copy_of(got, n);
  for (int c = 0; c < calls; c++) zt_rope(want_inv + (size_t)c * hd, cs, B, T, NH, ld, hs, rot, 1);
  round_to(want_inv, n, dt);
  for (int c = 0; c < calls; c++)
    zt_cuda_rope(dt, (char *)d_x.p + (size_t)c * hd * es, (const float *)d_cs.p, B, T, NH, ld, hs, rot, 1);
  h_check(fmt("%s: inverse", t), d_x.p, dt, want_inv, n, h_tol(dt));
  h_check(fmt("%s: inverse(forward(x)) == x", t), d_x.p, dt, x, n, h_tol(dt));
  g_check_guards(fmt("%s: inverse", t), &d_x);
  zt_cuda_free(d_x.base), zt_cuda_free(d_cs.base);
  free(x), free(cs), free(want), free(owned), free(got), free(want_inv);
}

/* grouped rows of G (R + 2) HD, packed rows of 3 R G HD (backend.h's gqa_pack). Forward: packed bit for bit the CPU's
 * zt_gqa_pack (a copy), grouped untouched. Inverse from an independent packed gradient: bit for bit the CPU's too, in
 * every dtype (queries copied; each key / value the fp32 sum over the group's R heads in head order from 0.0f on both
 * sides, rounded once to dt: plain adds, nothing to contract or reorder), run twice (into a fresh poisoned buffer)
 * the same bits, the gradient untouched. R = 1 (no grouping, a pure re-layout): inverse(forward(x)) == x bit for bit.
 * Outputs poisoned, guards around every buffer. */
static void test_gqa_pack(zt_dtype dt, int N, int G, int R, int HD, int shift) {
  const size_t ng = (size_t)N * G * (R + 2) * HD, np = (size_t)N * 3 * R * G * HD;
  char t[120];
  snprintf(t, sizeof t, "gqa_pack %s N=%d G=%d R=%d HD=%d%s", zt_dtype_name(dt), N, G, R, HD,
           shift ? " shifted" : "");
  float *x = h_randn(ng, 1.0f, dt, 181), *dp = h_randn(np, 1.0f, dt, 182);
  float *want_p = h_alloc(np), *want_g = h_alloc(ng), *xc = copy_of(x, ng), *dpc = copy_of(dp, np);
  zt_gqa_pack(want_p, xc, N, G, R, HD, 0);
  zt_gqa_pack(dpc, want_g, N, G, R, HD, 1);
  round_to(want_g, ng, dt);

  gbuf d_g = g_make(x, ng, dt, shift), d_p = g_make(NULL, np, dt, shift);
  zt_cuda_gqa_pack(dt, d_p.p, d_g.p, N, G, R, HD, 0);
  check_exact_dev(fmt("%s: forward packed", t), d_p.p, dt, want_p, np);
  check_exact_dev(fmt("%s: forward: grouped unchanged", t), d_g.p, dt, x, ng);
  g_check_guards(fmt("%s: forward packed", t), &d_p);
  g_check_guards(fmt("%s: forward grouped", t), &d_g);
  if (R == 1) {
    gbuf d_back = g_make(NULL, ng, dt, shift);
    zt_cuda_gqa_pack(dt, d_p.p, d_back.p, N, G, R, HD, 1);
    check_exact_dev(fmt("%s: R = 1: inverse(forward(x)) == x", t), d_back.p, dt, x, ng);
    g_check_guards(fmt("%s: R = 1 round trip", t), &d_back);
    zt_cuda_free(d_back.base);
  }

  gbuf d_dp = g_make(dp, np, dt, shift ^ 1), d_dg = g_make(NULL, ng, dt, shift ^ 1);
  zt_cuda_gqa_pack(dt, d_dp.p, d_dg.p, N, G, R, HD, 1);
  check_exact_dev(fmt("%s: inverse grouped (key/value sums in head order)", t), d_dg.p, dt, want_g, ng);
  check_exact_dev(fmt("%s: inverse: packed unchanged", t), d_dp.p, dt, dp, np);
  g_check_guards(fmt("%s: inverse grouped", t), &d_dg);
  g_check_guards(fmt("%s: inverse packed", t), &d_dp);
  float *first = h_download(d_dg.p, ng, dt);
  zt_cuda_free(d_dg.base);
  d_dg = g_make(NULL, ng, dt, shift);
  zt_cuda_gqa_pack(dt, d_dp.p, d_dg.p, N, G, R, HD, 1);
  check_exact_dev(fmt("%s: inverse run to run", t), d_dg.p, dt, first, ng);
  g_check_guards(fmt("%s: inverse run to run", t), &d_dg);
  zt_cuda_free(d_g.base), zt_cuda_free(d_p.base), zt_cuda_free(d_dp.base), zt_cuda_free(d_dg.base);
  free(x), free(dp), free(want_p), free(want_g), free(xc), free(dpc), free(first);
}

/* backend.h's copy2d (DeepSpeed-Ulysses' all-to-all packing): rows of cols elements from src (stride ld_src) to dst
 * (stride ld_dst), a bit-for-bit copy in every dtype; what lies between the rows of dst is left as it was, src is
 * untouched, guards around both buffers. */
static void test_copy2d(zt_dtype dt, size_t rows, size_t cols, size_t ld_src, size_t ld_dst, int shift) {
  const size_t ns = rows ? (rows - 1) * ld_src + cols : 1, nd = rows ? (rows - 1) * ld_dst + cols : 1;
  char t[120];
  snprintf(t, sizeof t, "copy2d %s rows=%zu cols=%zu ld_src=%zu ld_dst=%zu%s", zt_dtype_name(dt), rows, cols, ld_src,
           ld_dst, shift ? " shifted" : "");
  float *src = h_randn(ns, 1.0f, dt, 191), *dst0 = h_randn(nd, 1.0f, dt, 192), *want = copy_of(dst0, nd);
  for (size_t r = 0; r < rows; r++) memcpy(want + r * ld_dst, src + r * ld_src, cols * sizeof(float));
  gbuf d_s = g_make(src, ns, dt, shift), d_d = g_make(dst0, nd, dt, shift ^ 1);
  zt_cuda_copy2d(dt, d_d.p, ld_dst, d_s.p, ld_src, rows, cols);
  check_exact_dev(fmt("%s: dst", t), d_d.p, dt, want, nd);
  check_exact_dev(fmt("%s: src unchanged", t), d_s.p, dt, src, ns);
  g_check_guards(fmt("%s: dst", t), &d_d);
  g_check_guards(fmt("%s: src", t), &d_s);
  zt_cuda_free(d_s.base), zt_cuda_free(d_d.base);
  free(src), free(dst0), free(want);
}

/* The backend op table points at these ops. */
static void test_llama_table(int dev) {
  const zt_backend *b = zt_backend_cuda(dev);
  expect(b && b->rmsnorm_forward == zt_cuda_rmsnorm_forward && b->rmsnorm_backward == zt_cuda_rmsnorm_backward &&
             b->swiglu_forward == zt_cuda_swiglu_forward && b->swiglu_backward == zt_cuda_swiglu_backward &&
             b->rope == zt_cuda_rope && b->gqa_pack == zt_cuda_gqa_pack && b->copy2d == zt_cuda_copy2d,
         "CUDA backend table: rmsnorm_forward/backward, swiglu_forward/backward, rope, gqa_pack, copy2d");
}

static void llama_tests(int dev) {
  test_llama_table(dev);
  /* C = 1 (dinp cancels), C below / across / beyond a block's threads, many chunks of rows for dw, N = 0 */
  static const int rms_shapes[][2] = {{1, 1}, {2000, 1}, {1, 13}, {13, 13}, {37, 770}, {1000, 770}, {3, 4099}, {0, 5}};
  /* F = 1, not multiples of 32, N = 0 */
  static const int swiglu_shapes[][2] = {{1, 1}, {7, 13}, {5, 33}, {37, 770}, {3, 1031}, {0, 5}};
  /* B, T, NH, hd, rot, fused QKV, pos0: full and partial rotary, plain and strided heads, one element pair, rot 0, no
   * rows (B = 0, T = 0) */
  static const int rope_cases[][7] = {{2, 5, 3, 8, 8, 0, 0},   {1, 7, 2, 10, 4, 0, 3},     {2, 3, 4, 16, 8, 1, 100},
                                      {3, 4, 2, 6, 6, 1, 0},   {1, 1, 1, 2, 2, 0, 0},      {2, 33, 5, 64, 64, 1, 1000},
                                      {2, 9, 3, 64, 16, 1, 7}, {1, 3, 2, 8, 0, 1, 0},      {0, 4, 2, 8, 8, 0, 0},
                                      {2, 0, 2, 8, 8, 1, 0}};
  /* N, G, R, HD: one element, grouped, multi-query (G = 1), many blocks, no grouping (R = 1: a re-layout), HD not a
   * multiple of anything, no rows */
  static const int gqa_cases[][4] = {{1, 1, 1, 1}, {5, 2, 2, 12}, {7, 1, 4, 16}, {33, 3, 3, 64},
                                     {3, 4, 1, 8}, {2, 2, 8, 5},  {0, 2, 2, 8}};
  for (int k = 0; k < 3; k++) {
    const zt_dtype dt = h_dtypes[k];
    for (size_t s = 0; s < sizeof rms_shapes / sizeof rms_shapes[0]; s++) {
      test_rmsnorm_forward(dt, rms_shapes[s][0], rms_shapes[s][1], s & 1 ? 1e-6f : 1e-5f, (int)(s & 1));
      test_rmsnorm_backward(dt, rms_shapes[s][0], rms_shapes[s][1], (int)((s + 1) & 1));
    }
    for (size_t s = 0; s < sizeof swiglu_shapes / sizeof swiglu_shapes[0]; s++)
      test_swiglu(dt, swiglu_shapes[s][0], swiglu_shapes[s][1], (int)(s & 1));
    for (size_t s = 0; s < sizeof rope_cases / sizeof rope_cases[0]; s++) {
      const int *c = rope_cases[s];
      test_rope(dt, c[0], c[1], c[2], c[3], c[4], c[5], c[6], (int)(s & 1));
    }
    for (size_t s = 0; s < sizeof gqa_cases / sizeof gqa_cases[0]; s++)
      test_gqa_pack(dt, gqa_cases[s][0], gqa_cases[s][1], gqa_cases[s][2], gqa_cases[s][3], (int)(s & 1));
    /* rows, cols, ld_src, ld_dst: packing columns out of wider rows, unpacking into them, contiguous, one element, no
     * rows */
    static const size_t copy_cases[][4] = {{64, 48, 192, 48}, {37, 13, 13, 52}, {5, 100, 100, 100}, {1, 1, 7, 3},
                                           {0, 4, 8, 8}, {300, 96, 400, 96}};
    for (size_t s = 0; s < sizeof copy_cases / sizeof copy_cases[0]; s++)
      test_copy2d(dt, copy_cases[s][0], copy_cases[s][1], copy_cases[s][2], copy_cases[s][3], (int)(s & 1));
  }
}

/* ---- fp32 buffers: scale, round_f32, count_nonrepresentable ----------------------------------------------------- */

static void test_scale(size_t n, int shift) {
  const float fs[2] = {0.37f, 1.0f / 65536.0f};
  float *x = h_randn(n, 3.0f, ZT_DTYPE_FP32, 121), *want = h_alloc(n);
  gbuf d_x = g_make(x, n, ZT_DTYPE_FP32, shift);
  memcpy(want, x, n * sizeof(float));
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < n; i++) want[i] *= fs[k];
    zt_cuda_scale_f32((float *)d_x.p, fs[k], n);
    check_exact_dev(fmt("scale_f32 n=%zu f=%g%s", n, fs[k], shift ? " shifted" : ""), d_x.p, ZT_DTYPE_FP32, want, n);
  }
  g_check_guards(fmt("scale_f32 n=%zu", n), &d_x);
  zt_cuda_free(d_x.base);
  free(x), free(want);
}

/* Values around every limit: fp16's largest finite value 65504, the rounding threshold 65520 and beyond, fp16
 * subnormals and underflow, bf16's threshold 3.3961776e38, FLT_MAX, infinities, NaN, and halfway cases of both half
 * types; the rest N(0, 1e4) (a few beyond 65504 in fp16). */
static float *special_values(size_t n) {
  static const float sp[] = {65504.0f, 65519.99f, 65520.0f, -65520.0f, 65536.0f, 70000.0f, -1e5f, 1e-8f, -3e-8f,
                             6e-8f, 2.98e-8f, 3.3961775e38f, 3.3961776e38f, -3.4e38f, 3.4028235e38f, INFINITY,
                             -INFINITY, NAN, -NAN, 1.00390625f /* bf16 tie */, 1.00048828125f /* fp16 tie */,
                             2049.0f, 0.0f, -0.0f};
  float *x = h_randn(n, 1e4f, ZT_DTYPE_FP32, 131);
  const size_t ns = sizeof sp / sizeof sp[0];
  for (size_t i = 0; i < n; i += 97) x[i] = sp[(i / 97) % ns];
  return x;
}

static size_t host_beyond(const float *x, size_t n, zt_dtype dt) {
  const float lim = dt == ZT_DTYPE_FP16 ? 65520.0f : dt == ZT_DTYPE_BF16 ? 3.3961776e38f : INFINITY;
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += isnan(x[i]) || fabsf(x[i]) >= lim;
  return c;
}

/* Values compared with tolerance 0 (NaN where the CPU has NaN, the same infinities), counts exactly. */
static void test_round(zt_dtype dt, size_t n, int shift) {
  char t[120];
  snprintf(t, sizeof t, "%s n=%zu%s", zt_dtype_name(dt), n, shift ? " shifted" : "");
  float *x = special_values(n), *want = h_alloc(n);
  const size_t cpu_bad = zt_round_f32(want, x, n, dt), cpu_nonrep = zt_count_nonrepresentable(x, n, dt);
  const size_t beyond = host_beyond(x, n, dt);
  expect(n < 2000 || (cpu_bad == beyond && cpu_nonrep == beyond && beyond > n / 97 / 24 * 3),
         fmt("round_f32 %s: the inputs overflow %zu times (%zu, %zu on the CPU)", t, beyond, cpu_bad, cpu_nonrep));

  gbuf d_x = g_make(x, n, ZT_DTYPE_FP32, shift), d_out = g_make(NULL, n, ZT_DTYPE_FP32, shift);
  const size_t bad = zt_cuda_round_f32((float *)d_out.p, (const float *)d_x.p, n, dt);
  expect(bad == cpu_bad, fmt("round_f32 %s: %zu results inf or nan (CPU %zu)", t, bad, cpu_bad));
  h_check(fmt("round_f32 %s", t), d_out.p, ZT_DTYPE_FP32, want, n, 0.0);
  g_check_guards(fmt("round_f32 %s", t), &d_out);
  check_exact_dev(fmt("round_f32 %s: src unchanged", t), d_x.p, ZT_DTYPE_FP32, x, n);

  const size_t nonrep = zt_cuda_count_nonrepresentable((const float *)d_x.p, n, dt);
  expect(nonrep == cpu_nonrep, fmt("count_nonrepresentable %s: %zu (CPU %zu)", t, nonrep, cpu_nonrep));
  expect(zt_cuda_count_nonrepresentable((const float *)d_x.p, n, dt) == nonrep,
         fmt("count_nonrepresentable %s run to run", t));

  const size_t bad2 = zt_cuda_round_f32((float *)d_x.p, (const float *)d_x.p, n, dt); /* in place */
  expect(bad2 == cpu_bad, fmt("round_f32 %s in place: %zu results inf or nan (CPU %zu)", t, bad2, cpu_bad));
  h_check(fmt("round_f32 %s in place", t), d_x.p, ZT_DTYPE_FP32, want, n, 0.0);
  /* once rounded, rounding again changes nothing and counts the same */
  expect(zt_cuda_round_f32((float *)d_x.p, (const float *)d_x.p, n, dt) == cpu_bad,
         fmt("round_f32 %s twice: the same count", t));
  h_check(fmt("round_f32 %s twice", t), d_x.p, ZT_DTYPE_FP32, want, n, 0.0);
  zt_cuda_free(d_x.base), zt_cuda_free(d_out.base);
  free(x), free(want);
}

/* ---- memcpy_d2d ----------------------------------------------------------------------------------------------- */

/* In a child: an overlapping copy must end it as zt_fatal does (exit 1) with the message; no CUDA call is made
 * before the check, so the child never touches the device. */
static void expect_refused_overlap(char *base, size_t dst_off, size_t src_off, size_t bytes) {
  int pfd[2];
  if (pipe(pfd) != 0) exit(2);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], 2);
    close(pfd[0]);
    zt_set_fatal_hook(die_quietly);
    zt_cuda_memcpy_d2d(base + dst_off, base + src_off, bytes);
    _exit(0);
  }
  close(pfd[1]);
  char err[2048] = {0};
  size_t got = 0;
  ssize_t r;
  while (got < sizeof err - 1 && (r = read(pfd[0], err + got, sizeof err - 1 - got)) > 0) got += (size_t)r;
  close(pfd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  const int ok = WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(err, "zt_cuda_memcpy_d2d") && strstr(err, "overlap");
  expect(ok, fmt("memcpy_d2d of %zu bytes from +%zu to +%zu refused: %s", bytes, src_off, dst_off,
                 ok ? "as expected" : "not refused as expected"));
  if (!ok) printf("    exit status %d, stderr: %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, err);
}

static void test_memcpy_d2d(void) {
  const size_t n = 12345;
  unsigned char *h = (unsigned char *)malloc(n), *got = (unsigned char *)malloc(n);
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 131 + 7);
  unsigned char *src = (unsigned char *)h_upload_raw(h, n);
  unsigned char *dst = (unsigned char *)zt_cuda_malloc(n + 16, "memcpy_d2d test");
  static const size_t offs[][3] = {{0, 0, 12345}, {1, 3, 12001}, {3, 0, 1}, {5, 7, 4096}};
  for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
    const size_t d = offs[k][0], s = offs[k][1], bytes = offs[k][2];
    zt_cuda_memset(dst, 0xFF, n + 16);
    zt_cuda_memcpy_d2d(dst + d, src + s, bytes);
    unsigned char *all = (unsigned char *)malloc(n + 16);
    zt_cuda_memcpy_d2h(all, dst, n + 16);
    int ok = memcmp(all + d, h + s, bytes) == 0;
    for (size_t i = 0; i < n + 16; i++)
      if ((i < d || i >= d + bytes) && all[i] != 0xFF) ok = 0;
    expect(ok, fmt("memcpy_d2d %zu bytes from +%zu to +%zu (nothing else written)", bytes, s, d));
    free(all);
  }
  zt_cuda_memcpy_d2d(src, src, n); /* dst == src: nothing to do */
  zt_cuda_memcpy_d2d(NULL, NULL, 0);
  zt_cuda_memcpy_d2h(got, src, n);
  expect(memcmp(got, h, n) == 0, "memcpy_d2d onto itself and of 0 bytes change nothing");
  expect_refused_overlap((char *)src, 4, 0, 16);
  expect_refused_overlap((char *)src, 0, 1, 2);
  expect_refused_overlap((char *)src, 100, 90, 4096);
  zt_cuda_free(src), zt_cuda_free(dst);
  free(h), free(got);
}

/* ---- empty calls and buffers beyond 2^31 elements -------------------------------------------------------------- */

static void test_empty(void) {
  const zt_dropout d = {0.1f, 1, 0, 0};
  for (int k = 0; k < 3; k++) {
    const zt_dtype dt = h_dtypes[k];
    zt_cuda_add_bias(dt, NULL, NULL, 0, 8);
    zt_cuda_bias_grad(dt, NULL, NULL, 0, 8);
    zt_cuda_scale_rows(dt, NULL, NULL, NULL, 0, 8);
    zt_cuda_row_dot(dt, NULL, NULL, NULL, 0, 8);
    zt_cuda_dropout_rows(dt, NULL, NULL, NULL, 5, 0, 4, 8, &d);
    zt_cuda_dropout_rows(dt, NULL, NULL, NULL, 0, 0, 4, 8, &d);
    zt_cuda_rmsnorm_forward(dt, NULL, NULL, NULL, NULL, 0, 8, 1e-5f);
    zt_cuda_rmsnorm_backward(dt, NULL, NULL, NULL, NULL, NULL, NULL, 0, 8);
    zt_cuda_swiglu_forward(dt, NULL, NULL, 0, 8);
    zt_cuda_swiglu_backward(dt, NULL, NULL, NULL, 0, 8);
    zt_cuda_rope(dt, NULL, NULL, 0, 4, 2, 16, 8, 8, 0);
    zt_cuda_rope(dt, NULL, NULL, 2, 4, 2, 16, 8, 0, 1);
    zt_cuda_gqa_pack(dt, NULL, NULL, 0, 2, 2, 8, 0);
    zt_cuda_gqa_pack(dt, NULL, NULL, 0, 2, 2, 8, 1);
    expect(zt_cuda_round_f32(NULL, NULL, 0, dt) == 0 && zt_cuda_count_nonrepresentable(NULL, 0, dt) == 0,
           fmt("round_f32 and count_nonrepresentable of 0 elements (%s) count 0", zt_dtype_name(dt)));
  }
  zt_cuda_cross_entropy_vp_finish(NULL, NULL, NULL, NULL, NULL, 0);
  zt_cuda_scale_f32(NULL, 2.0f, 0);
  zt_cuda_synchronize();
  expect(1, "empty calls (N = 0, n = 0) return without launching");
}

/* x[n] of 2^31 + 37 fp32 elements (8 GiB): a grid-stride kernel indexing with int would stop at 2^31 or wrap. Only the
 * elements around 2^31 and the ends are read back. */
static void test_large(void) {
  const size_t n = ((size_t)1 << 31) + 37;
  float *x = (float *)zt_cuda_malloc(n * sizeof(float), "large buffer test");
  zt_cuda_memset(x, 0x3F, n * sizeof(float)); /* 0x3F3F3F3F = 0.747059 */
  float v;
  const uint32_t bits = 0x3F3F3F3Fu;
  memcpy(&v, &bits, sizeof v);
  zt_cuda_scale_f32(x, 2.0f, n);
  const size_t probes[] = {0, ((size_t)1 << 31) - 1, (size_t)1 << 31, n - 1};
  int ok = 1;
  for (int k = 0; k < 4; k++) {
    float got;
    zt_cuda_memcpy_d2h(&got, x + probes[k], sizeof got);
    ok &= got == v * 2.0f;
  }
  expect(ok, fmt("scale_f32 of %zu elements reaches the last one", n));
  expect(zt_cuda_count_nonrepresentable(x, n, ZT_DTYPE_FP16) == 0, "count_nonrepresentable of 2^31 + 37: none");
  zt_cuda_scale_f32(x, 1e5f, n); /* 1.49e5: beyond fp16 */
  const size_t nonrep = zt_cuda_count_nonrepresentable(x, n, ZT_DTYPE_FP16);
  expect(nonrep == n, fmt("count_nonrepresentable of %zu fp16 overflows: %zu", n, nonrep));
  const size_t bad = zt_cuda_round_f32(x, x, n, ZT_DTYPE_FP16);
  float last;
  zt_cuda_memcpy_d2h(&last, x + n - 1, sizeof last);
  expect(bad == n && isinf(last), fmt("round_f32 of %zu fp16 overflows: %zu counted, the last is %g", n, bad, last));
  expect(zt_cuda_count_nonfinite(x, n) == n, "count_nonfinite agrees");
  zt_cuda_free(x);
}

static void large_tests(int dev) {
  const char *env = getenv("ZT_TEST_CUDA_LARGE");
  char desc[256] = "";
  zt_cuda_device_describe(dev, desc, sizeof desc);
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
  const int count = zt_cuda_device_count();
  if (count == 0) {
    printf("SKIP: test_cuda_engine_ops needs a CUDA device (none found)\n");
    return 77;
  }
  const char *env = getenv("ZT_TEST_CUDA_DEVICE");
  const int dev = env ? atoi(env) : count - 1; /* not 0 where there are several */
  char desc[256] = "";
  zt_cuda_device_describe(dev, desc, sizeof desc);
  printf("test_cuda_engine_ops on device %d of %d: %s\n", dev, count, desc);
  zt_cuda_init(dev);

  test_device(dev, count);
  test_empty();
  test_memcpy_d2d();
  for (int op = 0; op < 2; op++) {
    expect_refused_shape(op, -1, 8);
    expect_refused_shape(op, 4, 0);
  }
  static const int bias_shapes[][2] = {{1, 1}, {7, 1}, {1, 33}, {13, 7}, {37, 770}, {300, 1031}};
  static const int grad_shapes[][2] = {{1, 1}, {5000, 1}, {7, 33}, {513, 7}, {1000, 770}, {3, 1031}};
  /* scale_rows, row_dot: C = 1, one row, C below / across / far beyond a warp's 32 lanes, N = 0 (guards only) */
  static const int rows_shapes[][2] = {{1, 1}, {3000, 1}, {1, 33}, {13, 7}, {37, 770}, {300, 1031}, {2, 4099}, {0, 5}};
  /* B, T, C, row0, n: all rows; from mid-sample 0 to mid-sample 3; one row; exactly sample 2; C = 1 across three
   * samples; wide rows across three samples; no rows */
  static const int rows[][5] = {{3, 7, 13, 0, 21}, {4, 7, 13, 3, 20}, {4, 7, 13, 9, 1}, {4, 7, 13, 14, 7},
                                {4, 5, 1, 2, 13},  {3, 33, 770, 20, 50}, {2, 9, 3, 4, 0}};
  for (int k = 0; k < 3; k++) {
    const zt_dtype dt = h_dtypes[k];
    for (size_t s = 0; s < sizeof bias_shapes / sizeof bias_shapes[0]; s++)
      test_add_bias(dt, bias_shapes[s][0], bias_shapes[s][1], (int)(s & 1));
    for (size_t s = 0; s < sizeof grad_shapes / sizeof grad_shapes[0]; s++)
      test_bias_grad(dt, grad_shapes[s][0], grad_shapes[s][1], (int)(s & 1));
    for (size_t s = 0; s < sizeof rows_shapes / sizeof rows_shapes[0]; s++) {
      test_scale_rows(dt, rows_shapes[s][0], rows_shapes[s][1], (int)(s & 1));
      test_row_dot(dt, rows_shapes[s][0], rows_shapes[s][1], (int)((s + 1) & 1));
    }
    for (size_t s = 0; s < sizeof rows / sizeof rows[0]; s++)
      for (int pi = 0; pi < 2; pi++)
        for (int res = 0; res < 2; res++)
          test_dropout_rows(dt, rows[s][0], rows[s][1], rows[s][2], rows[s][3], rows[s][4], pi ? 0.1f : 0.0f, res,
                            (int)((s + res) & 1));
    test_round(dt, 7, 0);
    test_round(dt, 100003, 1);
    test_round(dt, 1 << 20, 0);
  }
  test_vp_finish(1);
  /* kd_rows: V = 1 (q = p = 1), rows below / across / beyond a block's threads, N = 0 (guards only) */
  static const int kd_shapes[][2] = {{1, 1}, {13, 7}, {37, 770}, {5, 4099}, {0, 5}};
  for (int k = 0; k < 3; k++)
    for (size_t sh = 0; sh < sizeof kd_shapes / sizeof kd_shapes[0]; sh++)
      test_kd_rows(h_dtypes[k], kd_shapes[sh][0], kd_shapes[sh][1], sh & 1 ? 2.0 : 1.0, (int)(sh & 1));
  for (size_t k = 0; k < sizeof h_dtypes / sizeof h_dtypes[0]; k++) test_kd_slices(h_dtypes[k], 9, 1030, 2.0);
  test_vp_finish(7);
  test_vp_finish(1031);
  llama_tests(dev);
  static const size_t sizes[] = {1, 7, 1023, 100003};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    test_scale(sizes[s], 0);
    test_scale(sizes[s], 1);
  }
  large_tests(dev);
  return h_done();
}
