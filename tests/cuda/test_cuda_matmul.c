/* zt_cuda_matmul_forward / zt_cuda_matmul_backward (cuBLASLt) against zt_matmul_forward / zt_matmul_backward
 * and zt_gelu_* on the CPU: shapes from 1x1x1 to 256x1024x4096 including odd ones, with and without bias and
 * fused GELU, dinp and dbias NULL, accumulation into non-zero dweight/dbias, every buffer shifted by one
 * element (alignment of the element size only), run-to-run bitwise determinism, and N = 0. */
#include <math.h>

#include "runtime/ops/ops.h"
#include "tests/cuda/harness.h"

typedef struct {
  int N, IC, OC;
} shape;

static const shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {64, 768, 2304}, {129, 257, 33}, {256, 1024, 4096}};


static float *copy_of(const float *x, size_t n) {
  float *y = h_alloc(n);
  memcpy(y, x, n * sizeof(float));
  return y;
}

/* fp32 accumulates K products in one running sum on both sides; the rounding error of such a sum grows like
 * sqrt(K) relative to the result's scale, and 1e-5 leaves about 5x margin up to K = 1024 (estimated
 * 2e-6 worst element at K = 4096): beyond that the fp32 tolerance grows with sqrt(K / 1024). bf16/fp16 are
 * dominated by the one rounding of the output. */
static double tol_for(zt_dtype dt, int K) {
  double t = h_tol(dt);
  if (dt == ZT_DTYPE_FP32 && K > 1024) t *= sqrt(K / 1024.0);
  return t;
}

static void test_forward(zt_dtype dt, shape s, int bias, int gelu, int shift, int repeat, uint64_t seed) {
  const int N = s.N, IC = s.IC, OC = s.OC;
  const size_t nin = (size_t)N * IC, nw = (size_t)OC * IC, nout = (size_t)N * OC;
  char tag[160], what[200];
  snprintf(tag, sizeof tag, "forward %s N=%d IC=%d OC=%d%s%s%s", zt_dtype_name(dt), N, IC, OC, bias ? " bias" : "",
           gelu ? " gelu" : "", shift ? " shifted" : "");
  /* unit-variance outputs: GELU sees both signs and its curved part */
  float *inp = h_randn(nin, 1.0f, dt, seed), *w = h_randn(nw, 1.0f / sqrtf((float)IC), dt, seed + 1);
  float *b = bias ? h_randn((size_t)OC, 0.5f, dt, seed + 2) : NULL;
  float *pre_ref = h_alloc(nout), *out_ref = h_alloc(nout);
  zt_matmul_forward(pre_ref, inp, w, b, N, IC, OC);
  if (gelu)
    zt_gelu_forward(out_ref, pre_ref, nout);
  else
    memcpy(out_ref, pre_ref, nout * sizeof(float));

  h_dbuf d_inp = h_make(inp, nin, dt, shift), d_w = h_make(w, nw, dt, shift);
  h_dbuf d_b = h_make(b, bias ? (size_t)OC : 0, dt, shift);
  h_dbuf d_out = h_make(NULL, nout, dt, shift), d_pre = h_make(NULL, nout, dt, shift);
  zt_cuda_matmul_forward(dt, d_out.p, gelu ? d_pre.p : NULL, d_inp.p, d_w.p, bias ? d_b.p : NULL, N, IC, OC);
  const double tol = tol_for(dt, IC);
  snprintf(what, sizeof what, "%s: out", tag);
  h_check(what, d_out.p, dt, out_ref, nout, tol);
  if (gelu) {
    snprintf(what, sizeof what, "%s: pre_gelu", tag);
    h_check(what, d_pre.p, dt, pre_ref, nout, tol);
  }
  if (repeat) {
    float *first = h_download(d_out.p, nout, dt);
    h_dbuf d_out2 = h_make(NULL, nout, dt, shift);
    zt_cuda_matmul_forward(dt, d_out2.p, gelu ? d_pre.p : NULL, d_inp.p, d_w.p, bias ? d_b.p : NULL, N, IC, OC);
    float *second = h_download(d_out2.p, nout, dt);
    snprintf(what, sizeof what, "%s: same out when run again", tag);
    h_check_exact(what, second, first, nout);
    free(first);
    free(second);
    zt_cuda_free(d_out2.base);
  }
  zt_cuda_free(d_inp.base), zt_cuda_free(d_w.base), zt_cuda_free(d_b.base), zt_cuda_free(d_out.base);
  zt_cuda_free(d_pre.base);
  free(inp), free(w), free(b), free(pre_ref), free(out_ref);
}

/* Device results of one backward run (host fp32; NULL where not computed). */
typedef struct {
  float *dinp, *dw, *db, *dout;
} bwd_result;

static bwd_result run_backward(zt_dtype dt, shape s, const float *dout, const float *pre, const float *inp,
                               const float *w, const float *dw0, const float *db0, int want_dinp, int shift) {
  const int N = s.N, IC = s.IC, OC = s.OC;
  const size_t nin = (size_t)N * IC, nw = (size_t)OC * IC, nout = (size_t)N * OC;
  h_dbuf d_dout = h_make(dout, nout, dt, shift), d_pre = h_make(pre, pre ? nout : 0, dt, shift);
  h_dbuf d_inp = h_make(inp, nin, dt, shift), d_w = h_make(w, nw, dt, shift);
  h_dbuf d_dinp = h_make(NULL, nin, dt, shift), d_dw = h_make(dw0, nw, dt, shift);
  h_dbuf d_db = h_make(db0, db0 ? (size_t)OC : 0, dt, shift);
  zt_cuda_matmul_backward(dt, want_dinp ? d_dinp.p : NULL, d_dw.p, db0 ? d_db.p : NULL, d_dout.p, d_inp.p, d_w.p,
                          pre ? d_pre.p : NULL, N, IC, OC);
  bwd_result r;
  r.dinp = want_dinp ? h_download(d_dinp.p, nin, dt) : NULL;
  r.dw = h_download(d_dw.p, nw, dt);
  r.db = db0 ? h_download(d_db.p, (size_t)OC, dt) : NULL;
  r.dout = h_download(d_dout.p, nout, dt);
  zt_cuda_free(d_dout.base), zt_cuda_free(d_pre.base), zt_cuda_free(d_inp.base), zt_cuda_free(d_w.base);
  zt_cuda_free(d_dinp.base), zt_cuda_free(d_dw.base), zt_cuda_free(d_db.base);
  return r;
}

static void bwd_free(bwd_result r) { free(r.dinp), free(r.dw), free(r.db), free(r.dout); }

static void test_backward(zt_dtype dt, shape s, int bias, int gelu, int want_dinp, int shift, int repeat,
                          uint64_t seed) {
  const int N = s.N, IC = s.IC, OC = s.OC;
  const size_t nin = (size_t)N * IC, nw = (size_t)OC * IC, nout = (size_t)N * OC;
  char tag[160], what[200];
  snprintf(tag, sizeof tag, "backward %s N=%d IC=%d OC=%d%s%s%s%s", zt_dtype_name(dt), N, IC, OC,
           bias ? " dbias" : "", gelu ? " gelu" : "", want_dinp ? " dinp" : "", shift ? " shifted" : "");
  float *dout = h_randn(nout, 1.0f, dt, seed), *pre = gelu ? h_randn(nout, 1.5f, dt, seed + 1) : NULL;
  float *inp = h_randn(nin, 1.0f, dt, seed + 2), *w = h_randn(nw, 1.0f / sqrtf((float)OC), dt, seed + 3);
  /* dweight and dbias start at the size of what is added (sums of N unit products), so a kernel that wrote
   * instead of accumulating would fail even at the bf16 tolerance */
  float *dw0 = h_randn(nw, sqrtf((float)N), dt, seed + 4);
  float *db0 = bias ? h_randn((size_t)OC, sqrtf((float)N), dt, seed + 5) : NULL;

  float *dout_ref = copy_of(dout, nout), *dinp_ref = h_alloc(nin), *dw_ref = copy_of(dw0, nw);
  float *db_ref = bias ? copy_of(db0, (size_t)OC) : NULL;
  if (gelu) zt_gelu_backward(dout_ref, pre, dout, nout);
  zt_matmul_backward(want_dinp ? dinp_ref : NULL, dw_ref, db_ref, dout_ref, inp, w, N, IC, OC);

  bwd_result r = run_backward(dt, s, dout, pre, inp, w, dw0, db0, want_dinp, shift);
  if (want_dinp) {
    snprintf(what, sizeof what, "%s: dinp", tag);
    h_check_host(what, r.dinp, dinp_ref, nin, tol_for(dt, OC));
  }
  snprintf(what, sizeof what, "%s: dweight", tag);
  h_check_host(what, r.dw, dw_ref, nw, tol_for(dt, N));
  if (bias) {
    snprintf(what, sizeof what, "%s: dbias", tag);
    h_check_host(what, r.db, db_ref, (size_t)OC, tol_for(dt, N));
  }
  if (gelu) {
    snprintf(what, sizeof what, "%s: dout scaled by gelu'", tag);
    h_check_host(what, r.dout, dout_ref, nout, h_tol(dt));
  } else {
    snprintf(what, sizeof what, "%s: dout unchanged", tag);
    h_check_exact(what, r.dout, dout, nout);
  }
  if (repeat) {
    bwd_result r2 = run_backward(dt, s, dout, pre, inp, w, dw0, db0, want_dinp, shift);
    snprintf(what, sizeof what, "%s: same dweight when run again", tag);
    h_check_exact(what, r2.dw, r.dw, nw);
    if (bias) {
      snprintf(what, sizeof what, "%s: same dbias when run again", tag);
      h_check_exact(what, r2.db, r.db, (size_t)OC);
    }
    if (want_dinp) {
      snprintf(what, sizeof what, "%s: same dinp when run again", tag);
      h_check_exact(what, r2.dinp, r.dinp, nin);
    }
    bwd_free(r2);
  }
  bwd_free(r);
  free(dout), free(pre), free(inp), free(w), free(dw0), free(db0);
  free(dout_ref), free(dinp_ref), free(dw_ref), free(db_ref);
}

/* N = 0 (an expert without tokens): nothing written, nothing accumulated. */
static void test_empty(zt_dtype dt) {
  const int IC = 13, OC = 5;
  float *w = h_randn((size_t)OC * IC, 1.0f, dt, 900), *dw0 = h_randn((size_t)OC * IC, 1.0f, dt, 901);
  float *db0 = h_randn((size_t)OC, 1.0f, dt, 902);
  h_dbuf d_w = h_make(w, (size_t)OC * IC, dt, 0), d_dw = h_make(dw0, (size_t)OC * IC, dt, 0);
  h_dbuf d_db = h_make(db0, (size_t)OC, dt, 0), d_x = h_make(NULL, 1, dt, 0);
  zt_cuda_matmul_forward(dt, d_x.p, d_x.p, d_x.p, d_w.p, NULL, 0, IC, OC);
  zt_cuda_matmul_backward(dt, d_x.p, d_dw.p, d_db.p, d_x.p, d_x.p, d_w.p, d_x.p, 0, IC, OC);
  float *dw = h_download(d_dw.p, (size_t)OC * IC, dt), *db = h_download(d_db.p, (size_t)OC, dt);
  char what[120];
  snprintf(what, sizeof what, "backward %s N=0: dweight unchanged", zt_dtype_name(dt));
  h_check_exact(what, dw, dw0, (size_t)OC * IC);
  snprintf(what, sizeof what, "backward %s N=0: dbias unchanged", zt_dtype_name(dt));
  h_check_exact(what, db, db0, (size_t)OC);
  zt_cuda_free(d_w.base), zt_cuda_free(d_dw.base), zt_cuda_free(d_db.base), zt_cuda_free(d_x.base);
  free(w), free(dw0), free(db0), free(dw), free(db);
}

int main(void) {
  h_init("test_cuda_matmul");
  uint64_t seed = 1;
  for (int d = 0; d < 3; d++) {
    const zt_dtype dt = h_dtypes[d];
    for (size_t k = 0; k < sizeof kShapes / sizeof kShapes[0]; k++) {
      const shape s = kShapes[k];
      const int repeat = s.N == 129; /* the odd shape, once per combination */
      for (int combo = 0; combo < 4; combo++) {
        test_forward(dt, s, combo & 1, combo >> 1, 0, repeat, seed += 10);
        /* (dbias, gelu, dinp): every flag on and off at least once, the NULL dinp and NULL dbias included */
        static const int bwd[4][3] = {{1, 1, 1}, {0, 1, 1}, {1, 0, 0}, {0, 0, 1}};
        test_backward(dt, s, bwd[combo][0], bwd[combo][1], bwd[combo][2], 0, repeat, seed += 10);
      }
    }
    /* every pointer aligned to the element size only: cuBLASLt must be told, and fused epilogues may
     * be refused (the fallback kernel then adds the bias and applies GELU) */
    for (int k = 1; k <= 2; k++) {
      test_forward(dt, kShapes[k], 1, 1, 1, 0, seed += 10);
      test_forward(dt, kShapes[k], 1, 0, 1, 0, seed += 10);
      test_backward(dt, kShapes[k], 1, 1, 1, 1, 0, seed += 10);
    }
    test_empty(dt);
  }
  return h_done();
}
