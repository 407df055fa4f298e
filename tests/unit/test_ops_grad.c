/* Op tests for runtime/ops/ops.h: each op's fp32 forward against an independent double-precision
 * reference written from the math in ops.h, and its backward against central finite differences of
 * L = sum(out * G) on that reference. Also checks the = / += conventions (activation gradients are
 * pre-filled with NaN and must be fully overwritten; parameter gradients are pre-filled with known
 * values and must be added to) and dropout's Philox mask contract; scale_rows and row_dot bit for bit against a
 * naive double loop and as each other's gradient (finite differences). Odd shapes catch indexing bugs. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/philox.h"
#include "runtime/ops/backend.h"
#include "runtime/ops/ops.h"
#include "tests/unit/testutil.h"

/* Tolerances. The forward is fp32 arithmetic on sums of at most ~100 terms of size ~1, so its error
 * is a few 1e-7 of the output scale; FWD_RTOL = 1e-5 of max|ref| leaves a 10-100x margin.
 * Finite differences use step FD_H = 1e-6 on the double reference: truncation error O(h^2 f''') ~
 * 1e-12 and cancellation error O(1e-16 |L| / h) ~ 1e-9 for |L| ~ 10, both far below the fp32
 * backward's own error (~1e-6 relative to the gradient's scale, as for the forward). GRAD_RTOL = 1e-4
 * of max|grad| is therefore ~100x above the noise, while a wrong index, sign or missing term produces
 * an O(1) relative error. */
#define FWD_RTOL 1e-5
#define GRAD_RTOL 1e-4
#define FD_H 1e-6

typedef void (*ref_fn)(const void *ctx, double *out);

static double dotd(const double *a, const double *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* grad[i] = dL/dx[i] for L = sum(f(ctx) * G), where x is one of the arrays ctx's reference reads. */
static void fd_grad(ref_fn f, const void *ctx, double *x, size_t nx, const double *G, size_t nout,
                    double *grad) {
  double *out = tu_dalloc(nout);
  for (size_t i = 0; i < nx; i++) {
    double save = x[i];
    x[i] = save + FD_H;
    f(ctx, out);
    double lp = dotd(out, G, nout);
    x[i] = save - FD_H;
    f(ctx, out);
    double lm = dotd(out, G, nout);
    x[i] = save;
    grad[i] = (lp - lm) / (2 * FD_H);
  }
  free(out);
}

/* Compares a gradient written by the op with the reference. With prefill (a += gradient) the op's
 * contribution is got - prefill; the prefill values are O(1), so the subtraction costs ~1e-7. */
static int check_grad(const char *name, const float *got, const float *prefill, const double *ref,
                      size_t n) {
  float *delta = tu_falloc(n);
  for (size_t i = 0; i < n; i++) delta[i] = prefill ? (float)((double)got[i] - prefill[i]) : got[i];
  int ok = tu_cmp(name, delta, ref, n, GRAD_RTOL, 0);
  free(delta);
  return ok;
}

static double *rand_d(tu_rng *r, float *f, size_t n, float lo, float hi) {
  tu_fill(r, f, n, lo, hi);
  return tu_to_double(f, n);
}

/* ---- matmul ----------------------------------------------------------------------------------- */
typedef struct { const double *inp, *w, *b; int N, IC, OC; } mm_ctx;

static void mm_ref(const void *cp, double *out) {
  const mm_ctx *c = cp;
  for (int n = 0; n < c->N; n++)
    for (int o = 0; o < c->OC; o++) {
      double s = c->b ? c->b[o] : 0.0;
      for (int i = 0; i < c->IC; i++) s += c->inp[n * c->IC + i] * c->w[o * c->IC + i];
      out[n * c->OC + o] = s;
    }
}

/* fd: finite differences (small shapes); otherwise the analytic gradients in double (for shapes
 * where FD would cost ~1e10 flops): dinp = G W, dW = G^T inp, db = sum_n G. */
static void test_matmul(const char *tag, int N, int IC, int OC, int with_bias, int fd) {
  tu_rng r = {1000 + N};
  char name[96];
  size_t ni = (size_t)N * IC, nw = (size_t)OC * IC, no = (size_t)N * OC;
  float *inp = tu_falloc(ni), *w = tu_falloc(nw), *b = tu_falloc(OC), *G = tu_falloc(no);
  double *inpd = rand_d(&r, inp, ni, -1, 1), *wd = rand_d(&r, w, nw, -1, 1);
  double *bd = rand_d(&r, b, OC, -1, 1), *Gd = rand_d(&r, G, no, -1, 1);
  mm_ctx c = {inpd, wd, with_bias ? bd : NULL, N, IC, OC};
  double *ref = tu_dalloc(no);
  mm_ref(&c, ref);
  float *out = tu_falloc(no);
  tu_fill_nan(out, no);
  zt_matmul_forward(out, inp, w, with_bias ? b : NULL, N, IC, OC);
  snprintf(name, sizeof(name), "matmul_%s_forward", tag);
  tu_cmp(name, out, ref, no, FWD_RTOL, 0);

  double *gi = tu_dalloc(ni), *gw = tu_dalloc(nw), *gb = tu_dalloc(OC);
  if (fd) {
    fd_grad(mm_ref, &c, inpd, ni, Gd, no, gi);
    fd_grad(mm_ref, &c, wd, nw, Gd, no, gw);
    if (with_bias) fd_grad(mm_ref, &c, bd, OC, Gd, no, gb);
  } else {
    for (int n = 0; n < N; n++)
      for (int o = 0; o < OC; o++) {
        double g = Gd[n * OC + o];
        gb[o] += g;
        for (int i = 0; i < IC; i++) {
          gi[n * IC + i] += g * wd[o * IC + i];
          gw[o * IC + i] += g * inpd[n * IC + i];
        }
      }
  }
  float *dinp = tu_falloc(ni), *dw = tu_falloc(nw), *dbias = tu_falloc(OC);
  float *pw = tu_falloc(nw), *pb = tu_falloc(OC);
  tu_fill(&r, pw, nw, -1, 1);
  tu_fill(&r, pb, OC, -1, 1);
  tu_fill_nan(dinp, ni);
  memcpy(dw, pw, nw * sizeof(float));
  memcpy(dbias, pb, OC * sizeof(float));
  zt_matmul_backward(dinp, dw, with_bias ? dbias : NULL, G, inp, w, N, IC, OC);
  snprintf(name, sizeof(name), "matmul_%s_dinp", tag);
  check_grad(name, dinp, NULL, gi, ni);
  snprintf(name, sizeof(name), "matmul_%s_dweight_accumulates", tag);
  check_grad(name, dw, pw, gw, nw);
  if (with_bias) {
    snprintf(name, sizeof(name), "matmul_%s_dbias_accumulates", tag);
    check_grad(name, dbias, pb, gb, OC);
  }
  /* dinp == NULL skips the input gradient; dweight still accumulates (now on top of the first). */
  float *dw2 = tu_falloc(nw);
  memcpy(dw2, dw, nw * sizeof(float));
  zt_matmul_backward(NULL, dw2, NULL, G, inp, w, N, IC, OC);
  snprintf(name, sizeof(name), "matmul_%s_dinp_null_dweight", tag);
  check_grad(name, dw2, dw, gw, nw);
  free(inp); free(w); free(b); free(G); free(inpd); free(wd); free(bd); free(Gd); free(ref);
  free(out); free(gi); free(gw); free(gb); free(dinp); free(dw); free(dbias); free(pw); free(pb);
  free(dw2);
}

/* ---- layernorm -------------------------------------------------------------------------------- */
typedef struct { const double *x, *w, *b; int N, C; double eps; double *mean, *rstd; } ln_ctx;

static void ln_ref(const void *cp, double *out) {
  const ln_ctx *c = cp;
  for (int n = 0; n < c->N; n++) {
    const double *x = c->x + (size_t)n * c->C;
    double m = 0, v = 0;
    for (int i = 0; i < c->C; i++) m += x[i];
    m /= c->C;
    for (int i = 0; i < c->C; i++) v += (x[i] - m) * (x[i] - m);
    v /= c->C; /* biased (population) variance, as torch.nn.LayerNorm */
    double s = 1.0 / sqrt(v + c->eps);
    if (c->mean) { c->mean[n] = m; c->rstd[n] = s; }
    for (int i = 0; i < c->C; i++) out[n * c->C + i] = (x[i] - m) * s * c->w[i] + c->b[i];
  }
}

/* const_row >= 0 makes that row constant (variance 0: rstd = 1/sqrt(eps), the padding case). */
static void test_layernorm(const char *tag, int N, int C, int const_row) {
  tu_rng r = {2000 + N * 31 + C};
  char name[96];
  size_t nx = (size_t)N * C;
  const float eps = 1e-5f;
  float *x = tu_falloc(nx), *w = tu_falloc(C), *b = tu_falloc(C), *G = tu_falloc(nx);
  tu_fill(&r, x, nx, -1, 1);
  for (int n = 0; n < N; n++)
    for (int i = 0; i < C; i++)
      x[n * C + i] = n == const_row ? 0.75f : x[n * C + i] + 0.7f * (n - 3); /* nonzero row means */
  double *xd = tu_to_double(x, nx), *wd = rand_d(&r, w, C, 0.5f, 1.5f);
  double *bd = rand_d(&r, b, C, -0.5f, 0.5f), *Gd = rand_d(&r, G, nx, -1, 1);
  double *ref = tu_dalloc(nx), *rm = tu_dalloc(N), *rs = tu_dalloc(N);
  ln_ctx c = {xd, wd, bd, N, C, eps, rm, rs};
  ln_ref(&c, ref);
  c.mean = c.rstd = NULL;
  float *out = tu_falloc(nx), *mean = tu_falloc(N), *rstd = tu_falloc(N);
  tu_fill_nan(out, nx); tu_fill_nan(mean, N); tu_fill_nan(rstd, N);
  zt_layernorm_forward(out, mean, rstd, x, w, b, N, C, eps);
  snprintf(name, sizeof(name), "layernorm_%s_forward", tag);
  tu_cmp(name, out, ref, nx, FWD_RTOL, 0);
  snprintf(name, sizeof(name), "layernorm_%s_mean", tag);
  tu_cmp(name, mean, rm, N, FWD_RTOL, 0);
  snprintf(name, sizeof(name), "layernorm_%s_rstd", tag);
  tu_cmp(name, rstd, rs, N, FWD_RTOL, 0);

  double *gx = tu_dalloc(nx), *gw = tu_dalloc(C), *gb = tu_dalloc(C);
  fd_grad(ln_ref, &c, xd, nx, Gd, nx, gx);
  fd_grad(ln_ref, &c, wd, C, Gd, nx, gw);
  fd_grad(ln_ref, &c, bd, C, Gd, nx, gb);
  float *dx = tu_falloc(nx), *dw = tu_falloc(C), *db = tu_falloc(C);
  float *pw = tu_falloc(C), *pb = tu_falloc(C);
  tu_fill(&r, pw, C, -1, 1);
  tu_fill(&r, pb, C, -1, 1);
  tu_fill_nan(dx, nx);
  memcpy(dw, pw, C * sizeof(float));
  memcpy(db, pb, C * sizeof(float));
  zt_layernorm_backward(dx, dw, db, G, x, w, mean, rstd, N, C);
  snprintf(name, sizeof(name), "layernorm_%s_dinp", tag);
  check_grad(name, dx, NULL, gx, nx);
  snprintf(name, sizeof(name), "layernorm_%s_dweight_accumulates", tag);
  check_grad(name, dw, pw, gw, C);
  snprintf(name, sizeof(name), "layernorm_%s_dbias_accumulates", tag);
  check_grad(name, db, pb, gb, C);
  free(x); free(w); free(b); free(G); free(xd); free(wd); free(bd); free(Gd); free(ref); free(rm);
  free(rs); free(out); free(mean); free(rstd); free(gx); free(gw); free(gb); free(dx); free(dw);
  free(db); free(pw); free(pb);
}

/* ---- GELU ------------------------------------------------------------------------------------- */
typedef struct { const double *x; size_t n; } gelu_ctx;

static void gelu_ref(const void *cp, double *out) {
  const gelu_ctx *c = cp;
  const double k = sqrt(2.0 / 3.14159265358979323846);
  for (size_t i = 0; i < c->n; i++) {
    double x = c->x[i];
    out[i] = 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
  }
}

static void test_gelu(void) {
  /* Range [-5, 5] for the tolerance check; saturated inputs (|x| >= 10, where tanh is +-1 in fp32
   * and a naive formula can produce NaN) are checked separately so they do not set the scale. */
  enum { n = 41, ns = 6 };
  tu_rng r = {3000};
  float x[n], G[n], out[n], dx[n];
  tu_fill(&r, x, n, -5, 5);
  x[0] = 0.0f; x[1] = -0.0f; x[2] = 1e-6f;
  tu_fill(&r, G, n, -1, 1);
  double *xd = tu_to_double(x, n), *Gd = tu_to_double(G, n), ref[n], gx[n];
  gelu_ctx c = {xd, n};
  gelu_ref(&c, ref);
  tu_fill_nan(out, n);
  zt_gelu_forward(out, x, n);
  tu_cmp("gelu_forward", out, ref, n, FWD_RTOL, 0);
  fd_grad(gelu_ref, &c, xd, n, Gd, n, gx);
  tu_fill_nan(dx, n);
  zt_gelu_backward(dx, x, G, n);
  check_grad("gelu_dinp", dx, NULL, gx, n);

  float xs[ns] = {10, -10, 20, -20, 50, -50}, os[ns], gs[ns], ones[ns] = {1, 1, 1, 1, 1, 1};
  zt_gelu_forward(os, xs, ns);
  zt_gelu_backward(gs, xs, ones, ns);
  int ok = 1;
  for (int i = 0; i < ns; i++) {
    double want = xs[i] > 0 ? xs[i] : 0.0, gwant = xs[i] > 0 ? 1.0 : 0.0;
    ok &= isfinite(os[i]) && fabs(os[i] - want) <= 1e-6 * fabs(xs[i]) && isfinite(gs[i]) &&
          fabs(gs[i] - gwant) <= 1e-6;
  }
  tu_check(ok, "gelu_saturated", "x=10: %g %g, x=-10: %g %g, x=50: %g %g, x=-50: %g %g", os[0],
           gs[0], os[1], gs[1], os[4], gs[4], os[5], gs[5]);
  free(xd); free(Gd);
}

/* ---- activations (zt_act_kind) ------------------------------------------------------------------
 * Each kind against its double-precision formula (ops.h) and finite differences of it, on odd sizes with
 * the awkward inputs first (+-0, tiny, saturating). Beyond the shared FWD_RTOL/GRAD_RTOL scale checks, a
 * pointwise bound holds the accuracy ops.h states: glibc's erff is within 1 ulp and tanhf within 2.2 ulp
 * (measured on every 97th float up to |x| = 30), so out is within 4 eps of |ref| for tanh, and within
 * 4 eps of |ref| + |x| for the GELUs (whose 1 + erf, or 1 + tanh, cancels for x < 0, as in PyTorch);
 * the gradients within 8 eps of |dout| (1 + |x|) (measured worst for the erf form: 0.7 eps). GELU_TANH is
 * zt_gelu_forward/backward bit for bit. */
typedef struct { const double *x; size_t n; zt_act_kind k; } act_ctx;

static double act_ref1(zt_act_kind k, double x, double *grad) {
  const double kt = sqrt(2.0 / 3.14159265358979323846), c = 0.044715;
  double y = 0, g = 0;
  switch (k) {
    case ZT_ACT_GELU_TANH: {
      double t = tanh(kt * (x + c * x * x * x));
      y = 0.5 * x * (1.0 + t);
      g = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kt * (1.0 + 3.0 * c * x * x);
      break;
    }
    case ZT_ACT_GELU_ERF:
      y = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
      g = 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846);
      break;
    case ZT_ACT_TANH:
      y = tanh(x);
      g = 1.0 - y * y;
      break;
    case ZT_ACT_SQUARED_RELU:
      y = x > 0 ? x * x : 0.0;
      g = x > 0 ? 2.0 * x : 0.0;
      break;
  }
  if (grad) *grad = g;
  return y;
}

static void act_ref(const void *cp, double *out) {
  const act_ctx *c = cp;
  for (size_t i = 0; i < c->n; i++) out[i] = act_ref1(c->k, c->x[i], NULL);
}

/* Elements where |got - want| > tol_i; the first one is reported. */
static void check_pointwise(const char *name, const float *got, const double *want, const double *tol, size_t n) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - want[i]) <= tol[i]) && !bad++) first = i;
  tu_check(bad == 0, name, "%zu of %zu beyond the bound; first [%zu]: got %.9g want %.9g (|diff| %.3g > %.3g)", bad,
           n, first, n ? got[first] : 0.0, n ? want[first] : 0.0, n ? fabs(got[first] - want[first]) : 0.0,
           n ? tol[first] : 0.0);
}

/* fd: finite differences (n up to ~1000); otherwise the analytic derivative in double. */
static void test_activation(zt_act_kind k, size_t n, int fd) {
  static const float special[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 1e-30f, -3e-5f, 0.5f, -0.5f, 6.0f, -6.0f};
  const char *kn = zt_act_name(k);
  char name[96];
  tu_rng r = {3100 + 7 * n + (uint64_t)k};
  float *x = tu_falloc(n), *G = tu_falloc(n), *out = tu_falloc(n), *dx = tu_falloc(n), *buf = tu_falloc(n);
  tu_fill(&r, x, n, -6, 6);
  for (size_t i = 0; i < n && i < sizeof special / sizeof special[0]; i++) x[i] = special[i];
  tu_fill(&r, G, n, -1, 1);
  double *xd = tu_to_double(x, n), *Gd = tu_to_double(G, n), *ref = tu_dalloc(n), *gx = tu_dalloc(n);
  double *tol = tu_dalloc(n), *dref = tu_dalloc(n);
  act_ctx c = {xd, n, k};
  act_ref(&c, ref);
  tu_fill_nan(out, n);
  zt_act_forward(k, out, x, n);
  snprintf(name, sizeof(name), "act_%s_n%zu_forward", kn, n);
  tu_cmp(name, out, ref, n, FWD_RTOL, 0);
  for (size_t i = 0; i < n; i++) tol[i] = 4 * FLT_EPSILON * (fabs(ref[i]) + (k == ZT_ACT_TANH ? 0 : fabs(xd[i])));
  snprintf(name, sizeof(name), "act_%s_n%zu_forward_pointwise", kn, n);
  check_pointwise(name, out, ref, tol, n);

  for (size_t i = 0; i < n; i++) {
    double g;
    act_ref1(k, xd[i], &g);
    dref[i] = g * Gd[i];
    tol[i] = 8 * FLT_EPSILON * fabs(Gd[i]) * (1 + fabs(xd[i]));
  }
  if (fd) fd_grad(act_ref, &c, xd, n, Gd, n, gx);
  else memcpy(gx, dref, n * sizeof(double));
  tu_fill_nan(dx, n);
  zt_act_backward(k, dx, x, G, n);
  snprintf(name, sizeof(name), "act_%s_n%zu_dinp%s", kn, n, fd ? "_fd" : "_analytic");
  check_grad(name, dx, NULL, gx, n);
  snprintf(name, sizeof(name), "act_%s_n%zu_dinp_pointwise", kn, n);
  check_pointwise(name, dx, dref, tol, n);

  /* out may alias inp; dinp may alias dout (the backend's in-place use) or inp: the same values bit for bit */
  memcpy(buf, x, n * sizeof(float));
  zt_act_forward(k, buf, buf, n);
  snprintf(name, sizeof(name), "act_%s_n%zu_forward_inplace", kn, n);
  tu_cmp_exact(name, buf, out, n);
  memcpy(buf, G, n * sizeof(float));
  zt_act_backward(k, buf, x, buf, n);
  snprintf(name, sizeof(name), "act_%s_n%zu_dinp_aliases_dout", kn, n);
  tu_cmp_exact(name, buf, dx, n);
  memcpy(buf, x, n * sizeof(float));
  zt_act_backward(k, buf, buf, G, n);
  snprintf(name, sizeof(name), "act_%s_n%zu_dinp_aliases_inp", kn, n);
  tu_cmp_exact(name, buf, dx, n);

  if (k == ZT_ACT_GELU_TANH) {
    zt_gelu_forward(buf, x, n);
    snprintf(name, sizeof(name), "act_%s_n%zu_forward_is_zt_gelu_forward", kn, n);
    tu_cmp_exact(name, out, buf, n);
    zt_gelu_backward(buf, x, G, n);
    snprintf(name, sizeof(name), "act_%s_n%zu_dinp_is_zt_gelu_backward", kn, n);
    tu_cmp_exact(name, dx, buf, n);
  }
  free(x); free(G); free(out); free(dx); free(buf); free(xd); free(Gd); free(ref); free(gx); free(tol); free(dref);
}

/* Saturated inputs: finite values at the limits (GELU: x and 0, gradients 1 and 0; tanh: +-1, gradient 0). The
 * tanh form's x^3 overflows beyond |x| ~ 7e12 (its gradient is then NaN, as zt_gelu_backward's always was), so it
 * stops at 1e4; the erf form and tanh go to 1e30. */
static void test_activation_saturated(zt_act_kind k) {
  enum { ns = 8 };
  const float big = k == ZT_ACT_GELU_TANH ? 1e4f : 1e30f;
  const float xs[ns] = {10, -10, 20, -20, 50, -50, big, -big};
  float os[ns], gs[ns], ones[ns] = {1, 1, 1, 1, 1, 1, 1, 1};
  zt_act_forward(k, os, xs, ns);
  zt_act_backward(k, gs, xs, ones, ns);
  int ok = 1, bad = -1;
  for (int i = 0; i < ns; i++) {
    const int gelu = k != ZT_ACT_TANH;
    double want = gelu ? (xs[i] > 0 ? xs[i] : 0.0) : (xs[i] > 0 ? 1.0 : -1.0), gwant = gelu && xs[i] > 0 ? 1.0 : 0.0;
    int good = isfinite(os[i]) && fabs(os[i] - want) <= 1e-6 * fabs(want) && isfinite(gs[i]) &&
               fabs(gs[i] - gwant) <= 1e-6;
    if (!good && bad < 0) bad = i;
    ok &= good;
  }
  char name[64];
  snprintf(name, sizeof(name), "act_%s_saturated", zt_act_name(k));
  if (bad < 0) bad = 0;
  tu_check(ok, name, "x=%g: out %g, dinp %g", xs[bad], os[bad], gs[bad]);
}

/* The squared ReLU has no saturation; its values are exact where x x is: 0 (and +0, not -0) for x <= 0 with a zero
 * gradient, x x and dout 2 x above, and torch.pow's overflow to +inf beyond sqrt(FLT_MAX). */
static void test_squared_relu_exact(void) {
  enum { ns = 7 };
  const float xs[ns] = {0.0f, -0.0f, -3.0f, 3.0f, 0.5f, -1e30f, 2e19f}, dy[ns] = {1, 1, 1, -1.5f, 4, 1, 1};
  const float wo[ns] = {0, 0, 0, 9, 0.25f, 0, INFINITY}, wg[ns] = {0, 0, 0, -9, 4, 0, 4e19f};
  float os[ns], gs[ns];
  zt_act_forward(ZT_ACT_SQUARED_RELU, os, xs, ns);
  zt_act_backward(ZT_ACT_SQUARED_RELU, gs, xs, dy, ns);
  int bad = -1;
  for (int i = 0; i < ns && bad < 0; i++)
    if (os[i] != wo[i] || signbit(os[i]) || gs[i] != wg[i]) bad = i;
  if (bad < 0) bad = 0;
  tu_check(os[bad] == wo[bad] && !signbit(os[bad]) && gs[bad] == wg[bad], "act_squared_relu_exact",
           "x=%g dout=%g: out %g (want %g), dinp %g (want %g)", xs[bad], dy[bad], os[bad], wo[bad], gs[bad], wg[bad]);
}

static void act_unknown_kind(void *ctx) {
  float x = 1.0f, y;
  (void)ctx;
  zt_act_forward((zt_act_kind)7, &y, &x, 1);
}
static void act_unknown_kind_bwd(void *ctx) {
  float x = 1.0f, g = 1.0f, y;
  (void)ctx;
  zt_act_backward((zt_act_kind)-1, &y, &x, &g, 1);
}

/* The CPU backend's table entries are these functions on fp32 storage, and refuse another dtype. */
static void test_activation_backend(zt_act_kind k) {
  enum { n = 1001 };
  const zt_backend *be = zt_backend_cpu();
  tu_rng r = {3300 + (uint64_t)k};
  float x[n], G[n], a[n], b[n];
  tu_fill(&r, x, n, -6, 6);
  tu_fill(&r, G, n, -1, 1);
  char name[64];
  zt_act_forward(k, a, x, n);
  be->act_forward(ZT_DTYPE_FP32, k, b, x, n);
  snprintf(name, sizeof(name), "act_%s_backend_cpu_forward", zt_act_name(k));
  tu_cmp_exact(name, b, a, n);
  zt_act_backward(k, a, x, G, n);
  be->act_backward(ZT_DTYPE_FP32, k, b, x, G, n);
  snprintf(name, sizeof(name), "act_%s_backend_cpu_backward", zt_act_name(k));
  tu_cmp_exact(name, b, a, n);
}
static void act_backend_bf16(void *ctx) {
  float x = 1.0f, y;
  (void)ctx;
  zt_backend_cpu()->act_forward(ZT_DTYPE_BF16, ZT_ACT_GELU_ERF, &y, &x, 1);
}

static void test_activations(void) {
  static const zt_act_kind kinds[] = {ZT_ACT_GELU_TANH, ZT_ACT_GELU_ERF, ZT_ACT_TANH, ZT_ACT_SQUARED_RELU};
  static const size_t sizes[] = {1, 7, 41, 1001};
  for (size_t kk = 0; kk < 4; kk++) {
    /* finite differences straddle the squared ReLU's kink at the special input 0 (h / 2 instead of 0): analytic */
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      test_activation(kinds[kk], sizes[s], kinds[kk] != ZT_ACT_SQUARED_RELU);
    test_activation(kinds[kk], 100003, 0); /* several OpenMP chunks */
    if (kinds[kk] != ZT_ACT_SQUARED_RELU) test_activation_saturated(kinds[kk]);
    test_activation_backend(kinds[kk]);
  }
  test_squared_relu_exact();
  tu_expect_fatal("act_backend_cpu_refuses_bf16", act_backend_bf16, NULL, "the CPU backend's activation stores fp32");
  tu_expect_fatal("act_unknown_kind_forward", act_unknown_kind, NULL, "unknown activation kind 7");
  tu_expect_fatal("act_unknown_kind_backward", act_unknown_kind_bwd, NULL, "unknown activation kind -1");
}

/* ---- dropout ---------------------------------------------------------------------------------- */
/* The reference keep decision, straight from ops.h's contract. */
static int ref_keep(const zt_dropout *d, uint64_t sample, uint64_t elem) {
  return zt_philox_uniform(d->seed, ZT_RNG_DROPOUT, zt_dropout_stream(d, sample), elem) >= d->p;
}

/* keep[B*S] holds ref_keep for every element, precomputed because finite differences evaluate the
 * reference 2 * B * S times. */
typedef struct { const double *x; const uint8_t *keep; size_t n; double p; } drop_ctx;

static void drop_ref(const void *cp, double *out) {
  const drop_ctx *c = cp;
  for (size_t i = 0; i < c->n; i++) out[i] = c->keep[i] ? c->x[i] / (1.0 - c->p) : 0.0;
}

/* Nonzero inputs so that a dropped element (exactly 0) is distinguishable from a kept one. */
static void fill_nonzero(tu_rng *r, float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = tu_uniform(r, 0.1f, 1.0f) * (tu_next(r) & 1 ? 1.0f : -1.0f);
}

static void test_dropout_ref(const char *tag, int B, size_t S, float p, uint64_t first) {
  zt_dropout d = {p, 1234, 5 * 16 + 2, first};
  tu_rng r = {4000 + S};
  char name[96];
  size_t n = (size_t)B * S;
  float *x = tu_falloc(n), *G = tu_falloc(n), *out = tu_falloc(n), *res = tu_falloc(n);
  fill_nonzero(&r, x, n);
  tu_fill(&r, G, n, -1, 1);
  tu_fill(&r, res, n, -1, 1);
  double *xd = tu_to_double(x, n), *Gd = tu_to_double(G, n), *ref = tu_dalloc(n), *gx = tu_dalloc(n);
  uint8_t *keep = malloc(n);
  for (int b = 0; b < B; b++)
    for (size_t e = 0; e < S; e++) keep[(size_t)b * S + e] = p == 0.0f || ref_keep(&d, first + b, e);
  drop_ctx c = {xd, keep, n, p};
  drop_ref(&c, ref);
  tu_fill_nan(out, n);
  zt_dropout_forward(out, x, B, S, &d);
  snprintf(name, sizeof(name), "dropout_%s_forward", tag);
  tu_cmp(name, out, ref, n, FWD_RTOL, 0);
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += (out[i] == 0.0f) != (ref[i] == 0.0);
  snprintf(name, sizeof(name), "dropout_%s_mask_exact", tag);
  tu_check(wrong == 0, name, "%zu of %zu elements kept/dropped differently from the reference", wrong, n);

  float *inplace = tu_falloc(n);
  memcpy(inplace, x, n * sizeof(float));
  zt_dropout_forward(inplace, inplace, B, S, &d);
  snprintf(name, sizeof(name), "dropout_%s_forward_inplace", tag);
  tu_cmp_exact(name, inplace, out, n);

  fd_grad(drop_ref, &c, xd, n, Gd, n, gx);
  float *dx = tu_falloc(n);
  tu_fill_nan(dx, n);
  zt_dropout_backward(dx, G, B, S, &d);
  snprintf(name, sizeof(name), "dropout_%s_backward", tag);
  check_grad(name, dx, NULL, gx, n);
  memcpy(inplace, G, n * sizeof(float));
  zt_dropout_backward(inplace, inplace, B, S, &d);
  snprintf(name, sizeof(name), "dropout_%s_backward_inplace", tag);
  tu_cmp_exact(name, inplace, dx, n);

  /* apply_range: any slice [e0, e0+len) of sample b is the same map as in the whole forward. */
  size_t e0 = S / 3, len = S - S / 3 - 1;
  int b = B - 1;
  tu_fill_nan(inplace, n);
  zt_dropout_apply_range(inplace, x + (size_t)b * S + e0, len, &d, first + b, e0);
  snprintf(name, sizeof(name), "dropout_%s_apply_range_slice", tag);
  tu_cmp_exact(name, inplace, out + (size_t)b * S + e0, len);

  /* out = residual + dropout(x) */
  for (size_t i = 0; i < n; i++) ref[i] += res[i];
  tu_fill_nan(out, n);
  zt_dropout_add_forward(out, res, x, B, S, &d);
  snprintf(name, sizeof(name), "dropout_add_%s_forward", tag);
  tu_cmp(name, out, ref, n, FWD_RTOL, 0);
  if (p == 0.0f) {
    /* p == 0 copies: bit-exact identity, and dropout_add is exactly the fp32 sum. */
    zt_dropout_forward(inplace, x, B, S, &d);
    snprintf(name, sizeof(name), "dropout_%s_p0_copies", tag);
    tu_cmp_exact(name, inplace, x, n);
    for (size_t i = 0; i < n; i++) inplace[i] = res[i] + x[i];
    snprintf(name, sizeof(name), "dropout_add_%s_p0_exact", tag);
    tu_cmp_exact(name, out, inplace, n);
  }
  free(x); free(G); free(out); free(res); free(xd); free(Gd); free(ref); free(gx); free(inplace);
  free(dx); free(keep);
}

/* Masks depend on the global sample index, not the batch layout; on the site; and drop ~p. */
static void test_dropout_properties(void) {
  const size_t S = 1031;
  zt_dropout d2 = {0.4f, 99, 7, 0}, d1 = {0.4f, 99, 7, 1};
  tu_rng r = {5000};
  float *x = tu_falloc(2 * S), *o2 = tu_falloc(2 * S), *o1 = tu_falloc(S), *res = tu_falloc(2 * S);
  fill_nonzero(&r, x, 2 * S);
  tu_fill(&r, res, 2 * S, -1, 1);
  zt_dropout_forward(o2, x, 2, S, &d2);
  zt_dropout_forward(o1, x + S, 1, S, &d1);
  tu_cmp_exact("dropout_mask_batch_layout_independent", o1, o2 + S, S);
  zt_dropout_add_forward(o2, res, x, 2, S, &d2);
  zt_dropout_add_forward(o1, res + S, x + S, 1, S, &d1);
  tu_cmp_exact("dropout_add_mask_batch_layout_independent", o1, o2 + S, S);

  /* Two samples of the same data, and the same sample at two sites, get different masks: each
   * position differs with probability 2p(1-p) = 0.48. */
  memcpy(x + S, x, S * sizeof(float));
  zt_dropout_forward(o2, x, 2, S, &d2);
  zt_dropout site = d2;
  site.site = 8;
  zt_dropout_forward(o1, x, 1, S, &site);
  size_t diff_sample = 0, diff_site = 0;
  for (size_t i = 0; i < S; i++) {
    diff_sample += (o2[i] == 0) != (o2[S + i] == 0);
    diff_site += (o2[i] == 0) != (o1[i] == 0);
  }
  tu_check(diff_sample > 0.35 * S && diff_site > 0.35 * S, "dropout_mask_varies_by_sample_and_site",
           "mask differences of %zu positions: %zu between samples, %zu between sites", S,
           diff_sample, diff_site);

  /* Dropped fraction for 2 x 500000 elements: binomial standard error sqrt(p(1-p)/1e6) <= 5e-4. */
  const size_t big = 500000;
  float *bx = tu_falloc(2 * big);
  static const float ps[] = {0.1f, 0.5f, 0.9f};
  for (int k = 0; k < 3; k++) {
    zt_dropout d = {ps[k], 2024, 3, 17};
    for (size_t i = 0; i < 2 * big; i++) bx[i] = 1.0f;
    zt_dropout_forward(bx, bx, 2, big, &d);
    size_t dropped = 0, bad_scale = 0;
    float want = 1.0f / (1.0f - ps[k]);
    for (size_t i = 0; i < 2 * big; i++) {
      dropped += bx[i] == 0.0f;
      bad_scale += bx[i] != 0.0f && fabsf(bx[i] - want) > 1e-6f * want;
    }
    double frac = dropped / (2.0 * big);
    char name[64];
    snprintf(name, sizeof(name), "dropout_fraction_p%.1f", ps[k]);
    tu_check(fabs(frac - ps[k]) < 3e-3 && bad_scale == 0, name,
             "dropped %.5f want %.1f; %zu kept values not 1/(1-p)", frac, ps[k], bad_scale);
  }
  free(x); free(o2); free(o1); free(res); free(bx);
}

/* ---- residual, accumulate --------------------------------------------------------------------- */
static void test_residual(void) {
  /* One size below and one above any parallel threshold; fp32 a+b is correctly rounded, so the
   * result must equal the C sum bit for bit. */
  static const size_t sizes[] = {1001, 100003};
  for (int k = 0; k < 2; k++) {
    size_t n = sizes[k];
    tu_rng r = {6000 + n};
    float *a = tu_falloc(n), *b = tu_falloc(n), *out = tu_falloc(n), *want = tu_falloc(n);
    tu_fill(&r, a, n, -3, 3);
    tu_fill(&r, b, n, -3, 3);
    for (size_t i = 0; i < n; i++) want[i] = a[i] + b[i];
    tu_fill_nan(out, n);
    zt_residual_forward(out, a, b, n);
    char name[64];
    snprintf(name, sizeof(name), "residual_forward_n%zu", n);
    tu_cmp_exact(name, out, want, n);
    memcpy(out, a, n * sizeof(float));
    zt_accumulate(out, b, n);
    snprintf(name, sizeof(name), "accumulate_n%zu", n);
    tu_cmp_exact(name, out, want, n);
    free(a); free(b); free(out); free(want);
  }
}

/* ---- per-row weights: scale_rows, row_dot (the MoE combine) ----------------------------------- */
typedef struct { const double *x, *w; int N, C; } rows_ctx;

/* out[n, c] = w[n] x[n, c] */
static void rows_ref(const void *cp, double *out) {
  const rows_ctx *c = cp;
  for (int n = 0; n < c->N; n++)
    for (int k = 0; k < c->C; k++) out[(size_t)n * c->C + k] = c->w[n] * c->x[(size_t)n * c->C + k];
}

static void rows_backend_bf16(void *ctx) {
  float x = 1.0f, w = 2.0f, y;
  zt_backend_cpu()->scale_rows(ZT_DTYPE_BF16, &y, &x, &w, 1, 1);
  (void)ctx;
}
static void row_dot_backend_fp16(void *ctx) {
  float x = 1.0f, y;
  zt_backend_cpu()->row_dot(ZT_DTYPE_FP16, &y, &x, &x, 1, 1);
  (void)ctx;
}

/* A product of two floats is exact in double, so both ops equal a naive double loop bit for bit: scale_rows is the
 * product rounded once, row_dot the double sum in column order rounded once. They are each other's backward: for
 * L = sum(G * scale_rows(x, w)), dL/dw = row_dot(G, x) and dL/dx = scale_rows(G, w) (against finite differences). */
static void test_rows(const char *tag, int N, int C, int fd) {
  const size_t nc = (size_t)N * C;
  tu_rng r = {7100 + nc};
  float *x = tu_falloc(nc), *w = tu_falloc((size_t)N), *G = tu_falloc(nc), *out = tu_falloc(nc);
  float *want = tu_falloc(nc), *dot = tu_falloc((size_t)N), *dot_want = tu_falloc((size_t)N);
  double *xd = rand_d(&r, x, nc, -3, 3), *wd = rand_d(&r, w, (size_t)N, -2, 2), *Gd = rand_d(&r, G, nc, -1, 1);
  char name[96];
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++) want[(size_t)n * C + c] = (float)((double)w[n] * x[(size_t)n * C + c]);
  tu_fill_nan(out, nc);
  zt_scale_rows(out, x, w, N, C);
  snprintf(name, sizeof(name), "scale_rows_%s", tag);
  tu_cmp_exact(name, out, want, nc);
  memcpy(out, x, nc * sizeof(float));
  zt_scale_rows(out, out, w, N, C);
  snprintf(name, sizeof(name), "scale_rows_%s_in_place", tag);
  tu_cmp_exact(name, out, want, nc);

  for (int n = 0; n < N; n++) {
    double s = 0;
    for (int c = 0; c < C; c++) s += (double)x[(size_t)n * C + c] * G[(size_t)n * C + c];
    dot_want[n] = (float)s;
  }
  tu_fill_nan(dot, (size_t)N);
  zt_row_dot(dot, x, G, N, C);
  snprintf(name, sizeof(name), "row_dot_%s", tag);
  tu_cmp_exact(name, dot, dot_want, (size_t)N);

  const zt_backend *be = zt_backend_cpu();
  tu_fill_nan(out, nc);
  tu_fill_nan(dot, (size_t)N);
  be->scale_rows(ZT_DTYPE_FP32, out, x, w, N, C);
  be->row_dot(ZT_DTYPE_FP32, dot, x, G, N, C);
  snprintf(name, sizeof(name), "rows_%s_backend_cpu", tag);
  tu_check(memcmp(out, want, nc * sizeof(float)) == 0 && memcmp(dot, dot_want, (size_t)N * sizeof(float)) == 0, name,
           "the table's scale_rows / row_dot differ from zt_scale_rows / zt_row_dot");

  if (fd) {
    rows_ctx ctx = {xd, wd, N, C};
    double *gw = tu_dalloc((size_t)N), *gx = tu_dalloc(nc);
    fd_grad(rows_ref, &ctx, wd, (size_t)N, Gd, nc, gw);
    fd_grad(rows_ref, &ctx, xd, nc, Gd, nc, gx);
    zt_row_dot(dot, G, x, N, C);
    snprintf(name, sizeof(name), "row_dot_%s_is_dw", tag);
    check_grad(name, dot, NULL, gw, (size_t)N);
    zt_scale_rows(out, G, w, N, C);
    snprintf(name, sizeof(name), "scale_rows_%s_is_dx", tag);
    check_grad(name, out, NULL, gx, nc);
    free(gw); free(gx);
  }
  free(x); free(w); free(G); free(out); free(want); free(dot); free(dot_want);
  free(xd); free(wd); free(Gd);
}

static void test_rows_all(void) {
  test_rows("1x1", 1, 1, 1);
  test_rows("7x1", 7, 1, 1);
  test_rows("5x33", 5, 33, 1);
  test_rows("67x97", 67, 97, 0); /* several OpenMP chunks */
  /* N = 0 touches nothing */
  float sentinel = 42.0f, dot = 42.0f;
  zt_scale_rows(&sentinel, &sentinel, &sentinel, 0, 8);
  zt_row_dot(&dot, &sentinel, &sentinel, 0, 8);
  tu_check(sentinel == 42.0f && dot == 42.0f, "rows_N0_writes_nothing", "out %g, dot %g", sentinel, dot);
  tu_expect_fatal("scale_rows_backend_cpu_refuses_bf16", rows_backend_bf16, NULL,
                  "the CPU backend's scale_rows stores fp32");
  tu_expect_fatal("row_dot_backend_cpu_refuses_fp16", row_dot_backend_fp16, NULL,
                  "the CPU backend's row_dot stores fp32");
}

/* ---- embedding -------------------------------------------------------------------------------- */
typedef struct { const double *table; const int32_t *ids; const double *base; int N, C; } emb_ctx;

static void emb_ref(const void *cp, double *out) {
  const emb_ctx *c = cp;
  for (int n = 0; n < c->N; n++)
    for (int i = 0; i < c->C; i++)
      out[n * c->C + i] = (c->base ? c->base[n * c->C + i] : 0.0) + c->table[c->ids[n] * c->C + i];
}

static void test_embedding(void) {
  enum { V = 10, C = 13, N = 9 };
  static const int32_t ids[N] = {3, 7, 3, 0, 9, 3, 7, 1, 0}; /* 3 thrice, 7 and 0 twice */
  tu_rng r = {7000};
  float table[V * C], G[N * C], out[N * C], base[N * C], want[N * C], dt[V * C], pre[V * C];
  double *td = rand_d(&r, table, V * C, -1, 1), *Gd = rand_d(&r, G, N * C, -1, 1);
  double *based = rand_d(&r, base, N * C, -1, 1), ref[N * C], gt[V * C];
  emb_ctx c = {td, ids, NULL, N, C};
  emb_ref(&c, ref);
  tu_fill_nan(out, N * C);
  zt_embedding_forward(out, ids, table, N, C, 0);
  tu_cmp("embedding_forward", out, ref, N * C, 0, 0); /* a copy: exact */

  memcpy(out, base, sizeof(out));
  zt_embedding_forward(out, ids, table, N, C, 1);
  for (int n = 0; n < N; n++)
    for (int i = 0; i < C; i++) want[n * C + i] = base[n * C + i] + table[ids[n] * C + i];
  tu_cmp_exact("embedding_forward_accumulate", out, want, N * C);

  c.base = based;
  fd_grad(emb_ref, &c, td, V * C, Gd, N * C, gt);
  tu_fill(&r, pre, V * C, -1, 1);
  memcpy(dt, pre, sizeof(dt));
  zt_embedding_backward(dt, ids, G, N, C);
  check_grad("embedding_backward_accumulates", dt, pre, gt, V * C);
  /* Duplicates summed in order of n, so the result is the sequential fp32 sum bit for bit; rows no
   * id refers to are untouched. */
  float seq[V * C];
  memcpy(seq, pre, sizeof(seq));
  for (int n = 0; n < N; n++)
    for (int i = 0; i < C; i++) seq[ids[n] * C + i] += G[n * C + i];
  tu_cmp_exact("embedding_backward_in_order_deterministic", dt, seq, V * C);
  free(td); free(Gd); free(based);
}

/* ---- attention -------------------------------------------------------------------------------- */
typedef enum { LAYOUT_SEPARATE, LAYOUT_FUSED_QKV, LAYOUT_Q_FUSED_KV, LAYOUT_PADDED } attn_layout;

typedef struct {
  const char *name;
  int B, Tq, Tk, NH, HD;
  zt_attn_mask_kind mask;
  attn_layout layout;
  float p, scale; /* scale 0: 1/sqrt(HD) */
  uint64_t first_sample;
  const char *pad; /* B*Tk chars, '1' = key masked; or NULL */
  const char *starts; /* B*Tq digits: the first key each query sees (--reset-attention-mask); or NULL */
} attn_case;

typedef struct {
  const zt_attention_desc *a;
  const double *q, *k, *v;
  const uint8_t *keep; /* [B, NH, Tq, Tk] or NULL when p == 0 */
  double *probs;       /* receives the pre-dropout softmax when not NULL */
} attn_ctx;

static int attn_visible(const zt_attention_desc *a, int b, int i, int j) {
  if (a->mask == ZT_ATTN_CAUSAL && j > i) return 0;
  if (a->key_start && j < a->key_start[b * a->Tq + i]) return 0;
  return !(a->key_padding && a->key_padding[b * a->Tk + j]);
}

static void attn_ref(const void *cp, double *out) {
  const attn_ctx *c = cp;
  const zt_attention_desc *a = c->a;
  const int Tq = a->Tq, Tk = a->Tk, HD = a->HD, C = a->NH * a->HD;
  double *s = tu_dalloc(Tk);
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++)
      for (int i = 0; i < Tq; i++) {
        const double *qr = c->q + (size_t)(b * Tq + i) * a->ld_q + h * a->hs_q;
        double m = -INFINITY, z = 0;
        for (int j = 0; j < Tk; j++) {
          const double *kr = c->k + (size_t)(b * Tk + j) * a->ld_kv + h * a->hs_k;
          s[j] = 0;
          for (int d = 0; d < HD; d++) s[j] += qr[d] * kr[d];
          s[j] *= a->scale;
          if (attn_visible(a, b, i, j)) m = fmax(m, s[j]);
        }
        for (int j = 0; j < Tk; j++) {
          s[j] = attn_visible(a, b, i, j) ? exp(s[j] - m) : 0.0;
          z += s[j];
        }
        double *o = out + (size_t)(b * Tq + i) * C + h * HD;
        for (int d = 0; d < HD; d++) o[d] = 0;
        for (int j = 0; j < Tk; j++) {
          double pj = z > 0 ? s[j] / z : 0.0; /* no visible key: the row is all zeros */
          size_t pi = (((size_t)b * a->NH + h) * Tq + i) * Tk + j;
          if (c->probs) c->probs[pi] = pj;
          if (c->keep) pj = c->keep[pi] ? pj / (1.0 - a->dropout.p) : 0.0;
          const double *vr = c->v + (size_t)(b * Tk + j) * a->ld_kv + h * a->hs_v;
          for (int d = 0; d < HD; d++) o[d] += pj * vr[d];
        }
      }
  free(s);
}

/* Buffers of one layout: up to 3 (q, k, v separate; qkv fused; q and kv), and where q, k, v start. */
typedef struct {
  int nbuf;
  size_t size[3];
  int qb, kb, vb;
  size_t qo, ko, vo;
  const char *bufname[3];
} attn_bufs;

static void attn_setup(const attn_case *t, zt_attention_desc *a, attn_bufs *L) {
  const int C = t->NH * t->HD, HD = t->HD;
  memset(a, 0, sizeof(*a));
  memset(L, 0, sizeof(*L));
  a->B = t->B; a->Tq = t->Tq; a->Tk = t->Tk; a->NH = t->NH; a->HD = HD;
  a->mask = t->mask;
  a->scale = t->scale > 0 ? t->scale : 1.0f / sqrtf((float)HD);
  a->dropout = (zt_dropout){t->p, 31337, 2 * 16 + 1, t->first_sample};
  size_t rq = (size_t)t->B * t->Tq, rk = (size_t)t->B * t->Tk;
  switch (t->layout) {
    case LAYOUT_SEPARATE: /* [B, T, NH, HD] each */
      a->ld_q = a->ld_kv = C; a->hs_q = a->hs_k = a->hs_v = HD;
      *L = (attn_bufs){3, {rq * C, rk * C, rk * C}, 0, 1, 2, 0, 0, 0, {"dq", "dk", "dv"}};
      break;
    case LAYOUT_FUSED_QKV: /* Megatron [B, T, NH, 3, HD] */
      a->ld_q = a->ld_kv = 3 * C; a->hs_q = a->hs_k = a->hs_v = 3 * HD;
      *L = (attn_bufs){1, {rq * 3 * C}, 0, 0, 0, 0, HD, 2 * HD, {"dqkv"}};
      break;
    case LAYOUT_Q_FUSED_KV: /* q [B, Tq, NH, HD], kv [B, Tk, NH, 2, HD] */
      a->ld_q = C; a->hs_q = HD; a->ld_kv = 2 * C; a->hs_k = a->hs_v = 2 * HD;
      *L = (attn_bufs){2, {rq * C, rk * 2 * C}, 0, 1, 1, 0, 0, HD, {"dq", "dkv"}};
      break;
    case LAYOUT_PADDED: /* rows wider than the view and hs_k != hs_v: q [B, Tq, C+3];
                           kv [B, Tk, 3C+1] with K heads at h*HD and V heads at C+1 + h*2HD */
      a->ld_q = C + 3; a->hs_q = HD; a->ld_kv = 3 * C + 1; a->hs_k = HD; a->hs_v = 2 * HD;
      *L = (attn_bufs){2, {rq * (C + 3), rk * (3 * C + 1)}, 0, 1, 1, 0, 0, C + 1, {"dq", "dkv"}};
      break;
  }
}

/* Marks the elements of buffer `buf` that lie inside the q, k or v views; the rest (padding) must
 * be neither read (the reference never reads it) nor written by the backward. */
static uint8_t *attn_used(const zt_attention_desc *a, const attn_bufs *L, int buf) {
  uint8_t *u = calloc(L->size[buf], 1);
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++)
      for (int d = 0; d < a->HD; d++) {
        for (int t = 0; t < a->Tq; t++)
          if (L->qb == buf) u[L->qo + (size_t)(b * a->Tq + t) * a->ld_q + h * a->hs_q + d] = 1;
        for (int t = 0; t < a->Tk; t++) {
          size_t row = (size_t)(b * a->Tk + t) * a->ld_kv;
          if (L->kb == buf) u[L->ko + row + h * a->hs_k + d] = 1;
          if (L->vb == buf) u[L->vo + row + h * a->hs_v + d] = 1;
        }
      }
  return u;
}

static void test_attention(const attn_case *t) {
  zt_attention_desc a;
  attn_bufs L;
  attn_setup(t, &a, &L);
  char name[128];
  tu_rng r = {8000 + t->B * 7 + t->Tq * 13 + t->Tk + t->layout};
  uint8_t *pad = NULL;
  if (t->pad) {
    pad = malloc((size_t)t->B * t->Tk);
    for (int i = 0; i < t->B * t->Tk; i++) pad[i] = t->pad[i] == '1';
    a.key_padding = pad;
  }
  int32_t *starts = NULL;
  if (t->starts) {
    starts = malloc((size_t)t->B * t->Tq * sizeof(int32_t));
    for (int i = 0; i < t->B * t->Tq; i++) starts[i] = t->starts[i] - '0';
    a.key_start = starts;
  }
  float *fb[3] = {0}, *gb[3] = {0};
  double *db[3] = {0}, *fd[3] = {0};
  for (int i = 0; i < L.nbuf; i++) {
    fb[i] = tu_falloc(L.size[i]);
    db[i] = rand_d(&r, fb[i], L.size[i], -1.5f, 1.5f);
    gb[i] = tu_falloc(L.size[i]);
    fd[i] = tu_dalloc(L.size[i]);
  }
  const int C = t->NH * t->HD;
  size_t no = (size_t)t->B * t->Tq * C, np = (size_t)t->B * t->NH * t->Tq * t->Tk;
  float *G = tu_falloc(no), *out = tu_falloc(no), *probs = tu_falloc(np);
  double *Gd = rand_d(&r, G, no, -1, 1), *ref = tu_dalloc(no), *rprobs = tu_dalloc(np);
  uint8_t *keep = NULL;
  if (t->p > 0) { /* element id ((h*Tq)+i)*Tk + j within global sample first_sample + b */
    keep = malloc(np);
    for (int b = 0; b < t->B; b++)
      for (size_t e = 0; e < (size_t)t->NH * t->Tq * t->Tk; e++)
        keep[(size_t)b * t->NH * t->Tq * t->Tk + e] = ref_keep(&a.dropout, t->first_sample + b, e);
  }
  attn_ctx c = {&a, db[L.qb] + L.qo, db[L.kb] + L.ko, db[L.vb] + L.vo, keep, rprobs};
  attn_ref(&c, ref);
  c.probs = NULL;

  const float *q = fb[L.qb] + L.qo, *k = fb[L.kb] + L.ko, *v = fb[L.vb] + L.vo;
  tu_fill_nan(out, no);
  tu_fill_nan(probs, np);
  zt_attention_forward(out, probs, q, k, v, &a);
  snprintf(name, sizeof(name), "attention_%s_forward", t->name);
  tu_cmp(name, out, ref, no, FWD_RTOL, 0);
  snprintf(name, sizeof(name), "attention_%s_probs", t->name);
  tu_cmp(name, probs, rprobs, np, FWD_RTOL, 0);
  /* Masked probabilities and the outputs of rows with no visible key are exactly 0. */
  size_t masked = 0, bad_mask = 0, bad_rows = 0, empty_rows = 0;
  for (int b = 0; b < t->B; b++)
    for (int h = 0; h < t->NH; h++)
      for (int i = 0; i < t->Tq; i++) {
        int any = 0;
        for (int j = 0; j < t->Tk; j++) {
          size_t pi = (((size_t)b * t->NH + h) * t->Tq + i) * t->Tk + j;
          int vis = attn_visible(&a, b, i, j);
          any |= vis;
          masked += !vis;
          bad_mask += !vis && probs[pi] != 0.0f;
        }
        if (!any) {
          empty_rows++;
          for (int d = 0; d < t->HD; d++)
            bad_rows += out[((size_t)b * t->Tq + i) * C + h * t->HD + d] != 0.0f;
        }
      }
  if (masked) {
    snprintf(name, sizeof(name), "attention_%s_masked_exact_zero", t->name);
    tu_check(bad_mask == 0 && bad_rows == 0, name,
             "%zu of %zu masked probabilities nonzero, %zu outputs of %zu fully masked rows nonzero",
             bad_mask, masked, bad_rows, empty_rows);
  }

  for (int i = 0; i < L.nbuf; i++) fd_grad(attn_ref, &c, db[i], L.size[i], Gd, no, fd[i]);
  for (int i = 0; i < L.nbuf; i++) tu_fill_nan(gb[i], L.size[i]);
  size_t ns = zt_attention_scratch_floats(&a);
  float *scratch = tu_falloc(ns);
  tu_fill_nan(scratch, ns);
  zt_attention_backward(gb[L.qb] + L.qo, gb[L.kb] + L.ko, gb[L.vb] + L.vo, G, probs, q, k, v, &a,
                        scratch);
  for (int i = 0; i < L.nbuf; i++) {
    /* Gradients inside the views; the padding between them keeps its NaN pre-fill. */
    uint8_t *used = attn_used(&a, &L, i);
    size_t nu = 0, written = 0;
    for (size_t e = 0; e < L.size[i]; e++) {
      if (used[e]) { gb[i][nu] = gb[i][e]; fd[i][nu] = fd[i][e]; nu++; }
      else written += !isnan(gb[i][e]);
    }
    snprintf(name, sizeof(name), "attention_%s_%s", t->name, L.bufname[i]);
    check_grad(name, gb[i], NULL, fd[i], nu);
    if (nu < L.size[i]) {
      snprintf(name, sizeof(name), "attention_%s_%s_padding_untouched", t->name, L.bufname[i]);
      tu_check(written == 0, name, "%zu of %zu padding elements written", written, L.size[i] - nu);
    }
    free(used);
  }

  /* The same global sample gives the same output when run as row 0 of a batch of one. */
  if (t->B > 1) {
    zt_attention_desc a1 = a;
    a1.B = 1;
    a1.dropout.first_sample = t->first_sample + t->B - 1;
    if (pad) a1.key_padding = pad + (size_t)(t->B - 1) * t->Tk;
    if (starts) a1.key_start = starts + (size_t)(t->B - 1) * t->Tq;
    size_t qoff = (size_t)(t->B - 1) * t->Tq * a.ld_q, koff = (size_t)(t->B - 1) * t->Tk * a.ld_kv;
    size_t o1 = (size_t)t->Tq * C, p1 = (size_t)t->NH * t->Tq * t->Tk;
    float *out1 = tu_falloc(o1), *probs1 = tu_falloc(p1);
    zt_attention_forward(out1, probs1, q + qoff, k + koff, v + koff, &a1);
    double *want = tu_to_double(out + no - o1, o1);
    snprintf(name, sizeof(name), "attention_%s_last_sample_alone", t->name);
    tu_cmp(name, out1, want, o1, 1e-6, 0);
    free(out1); free(probs1); free(want);
  }
  for (int i = 0; i < L.nbuf; i++) { free(fb[i]); free(gb[i]); free(db[i]); free(fd[i]); }
  free(pad); free(starts); free(G); free(out); free(probs); free(Gd); free(ref); free(rprobs); free(keep);
  free(scratch);
}

/* ---- cross-entropy ---------------------------------------------------------------------------- */
typedef struct { const double *logits; const int32_t *targets; int N, V; double *lse; } ce_ctx;

static void ce_ref(const void *cp, double *losses) {
  const ce_ctx *c = cp;
  for (int n = 0; n < c->N; n++) {
    const double *l = c->logits + (size_t)n * c->V;
    double m = -INFINITY, s = 0;
    for (int v = 0; v < c->V; v++) m = fmax(m, l[v]);
    for (int v = 0; v < c->V; v++) s += exp(l[v] - m);
    double lse = m + log(s);
    if (c->lse) c->lse[n] = lse;
    losses[n] = lse - l[c->targets[n]];
  }
}

static void test_cross_entropy(void) {
  enum { N = 7, V = 13 };
  static const int32_t targets[N] = {0, 12, 5, 5, 7, 1, 12};
  tu_rng r = {9000};
  float logits[N * V], dloss[N], losses[N], lse[N], dl[N * V], inpl[N * V];
  tu_fill(&r, logits, N * V, -3, 3);
  for (int v = 0; v < V; v++) { logits[2 * V + v] += 100.0f; logits[4 * V + v] -= 100.0f; }
  logits[5 * V + 1] += 6.0f; /* a confident, correct row */
  tu_fill(&r, dloss, N, 0.1f, 1.0f);
  dloss[3] = 0.0f; /* a masked token */
  double *ld = tu_to_double(logits, N * V), *wd = tu_to_double(dloss, N), ref[N], rlse[N], g[N * V];
  ce_ctx c = {ld, targets, N, V, rlse};
  ce_ref(&c, ref);
  c.lse = NULL;
  tu_fill_nan(losses, N);
  tu_fill_nan(lse, N);
  zt_cross_entropy_forward(losses, lse, logits, targets, N, V);
  tu_cmp("cross_entropy_losses", losses, ref, N, FWD_RTOL, 0);
  tu_cmp("cross_entropy_lse", lse, rlse, N, FWD_RTOL, 0);

  fd_grad(ce_ref, &c, ld, N * V, wd, N, g);
  tu_fill_nan(dl, N * V);
  zt_cross_entropy_backward(dl, logits, lse, targets, dloss, N, V);
  check_grad("cross_entropy_dlogits", dl, NULL, g, N * V);
  int masked_zero = 1;
  for (int v = 0; v < V; v++) masked_zero &= dl[3 * V + v] == 0.0f;
  tu_check(masked_zero, "cross_entropy_masked_row_zero", "row with dloss 0 has nonzero gradient");
  memcpy(inpl, logits, sizeof(inpl));
  zt_cross_entropy_backward(inpl, inpl, lse, targets, dloss, N, V);
  tu_cmp_exact("cross_entropy_dlogits_inplace", inpl, dl, N * V);
  free(ld); free(wd);
}

int main(void) {
  test_matmul("bias", 7, 13, 11, 1, 1);
  test_matmul("nobias", 7, 13, 11, 0, 1);
  test_matmul("large_bias", 67, 97, 83, 1, 0);
  test_layernorm("7x13", 7, 13, -1);
  test_layernorm("const_row", 3, 13, 1);
  test_gelu();
  test_activations();
  test_dropout_ref("p0.3", 3, 37, 0.3f, 11);
  test_dropout_ref("p0.3_chunked", 2, 5003, 0.3f, 4);
  test_dropout_ref("p0", 2, 37, 0.0f, 0);
  test_dropout_properties();
  test_residual();
  test_rows_all();
  test_embedding();
  static const attn_case cases[] = {
    {"causal_separate", 2, 6, 6, 3, 5, ZT_ATTN_CAUSAL, LAYOUT_SEPARATE, 0, 0, 0, NULL, NULL},
    {"causal_fused_qkv", 2, 7, 7, 3, 5, ZT_ATTN_CAUSAL, LAYOUT_FUSED_QKV, 0, 0, 0, NULL, NULL},
    {"causal_fused_qkv_dropout", 2, 7, 7, 3, 5, ZT_ATTN_CAUSAL, LAYOUT_FUSED_QKV, 0.2f, 0, 5, NULL, NULL},
    /* sample 1 has every key padded: all its rows are fully masked */
    {"bidir_padding", 3, 6, 6, 3, 5, ZT_ATTN_NONE, LAYOUT_SEPARATE, 0, 0, 0,
     "000011" "111111" "100000", NULL},
    {"bidir_padding_dropout", 2, 6, 6, 3, 5, ZT_ATTN_NONE, LAYOUT_SEPARATE, 0.3f, 0, 9,
     "001000" "000011", NULL},
    {"cross_q_fused_kv_dropout", 2, 6, 9, 3, 5, ZT_ATTN_NONE, LAYOUT_Q_FUSED_KV, 0.25f, 0.37f, 2,
     "000000000" "010000111", NULL},
    {"cross_separate", 2, 6, 9, 3, 5, ZT_ATTN_NONE, LAYOUT_SEPARATE, 0, 0, 0, NULL, NULL},
    {"cross_padded_strides_dropout", 2, 6, 9, 3, 5, ZT_ATTN_NONE, LAYOUT_PADDED, 0.15f, 0, 1,
     "000000001" "000000000", NULL},
    /* causal + padded key 0 in sample 0: query row 0 sees no key */
    {"causal_padding_dropout", 2, 6, 6, 3, 5, ZT_ATTN_CAUSAL, LAYOUT_SEPARATE, 0.1f, 0, 0,
     "100000" "000100", NULL},
    /* documents packed in a row (Megatron's --reset-attention-mask): EOD at 2 and 4 in sample 0 */
    {"causal_reset_mask_fused_qkv", 2, 7, 7, 3, 5, ZT_ATTN_CAUSAL, LAYOUT_FUSED_QKV, 0, 0, 0, NULL,
     "0003355" "0000000"},
    {"causal_reset_mask_dropout", 2, 6, 6, 3, 5, ZT_ATTN_CAUSAL, LAYOUT_SEPARATE, 0.2f, 0, 3, NULL,
     "000111" "011144"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_attention(&cases[i]);
  test_cross_entropy();
  return tu_finish();
}
