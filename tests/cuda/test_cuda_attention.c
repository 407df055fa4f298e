/* zt_cuda_attention_forward / _backward (fused, flash-attention style) against zt_attention_forward / _backward
 * on the CPU: out, lse (against log-sum-exp of the scores recomputed on the host in double), dq, dk, dv, over
 * the layouts (fused QKV rows [T, NH, 3, HD], separate tensors, Q plus fused KV), causal and bidirectional
 * masks, cross-attention with Tq != Tk, key padding (a sample with every key padded), packed documents
 * (key_start, with one row that sees no key), dropout with head0 != 0 and first_sample != 0, odd sizes
 * (T = 1, 7, 37, 129, 257; HD = 1, 8, 20, 32, 64, 80, 128, 256; NH = 1, 2, 3), in fp32, bf16 and fp16.
 * The backward runs twice and the two results must agree bit for bit (no float atomics). */
#include <math.h>

#include "runtime/ops/ops.h"
#include "tests/cuda/harness.h"

/* How Q, K and V lie in memory. */
typedef enum {
  LAYOUT_QKV,      /* one buffer of rows [T, NH, 3, HD] (Megatron's fused QKV; needs Tq == Tk) */
  LAYOUT_SEPARATE, /* three buffers [B*T, NH*HD] */
  LAYOUT_Q_KV,     /* Q [B*Tq, NH*HD] and one buffer of rows [Tk, NH, 2, HD] (cross-attention) */
} layout;

typedef struct {
  const char *name;
  int B, Tq, Tk, NH, HD;
  zt_attn_mask_kind mask;
  layout lay;
  int pad;    /* key_padding: 0 none, 1 one key in five, 2 as 1 with every key of the last sample padded */
  int starts; /* key_start: packed documents, and row min(3, Tq - 1) of sample 0 sees no key */
  float p;    /* attention dropout */
  int head0;
} tcase;

static const tcase kCases[] = {
    {"causal fused-QKV", 2, 129, 129, 3, 64, ZT_ATTN_CAUSAL, LAYOUT_QKV, 0, 0, 0.0f, 0},
    {"bidirectional separate", 3, 7, 7, 1, 8, ZT_ATTN_NONE, LAYOUT_SEPARATE, 0, 0, 0.0f, 0},
    {"cross-attention Q+KV padded", 2, 33, 257, 3, 80, ZT_ATTN_NONE, LAYOUT_Q_KV, 1, 0, 0.0f, 0},
    {"cross-attention Tq>Tk padded", 2, 150, 45, 2, 64, ZT_ATTN_NONE, LAYOUT_Q_KV, 1, 0, 0.0f, 0},
    {"causal packed documents", 2, 257, 257, 2, 128, ZT_ATTN_CAUSAL, LAYOUT_QKV, 0, 1, 0.0f, 0},
    {"causal dropout head0=2", 2, 129, 129, 3, 64, ZT_ATTN_CAUSAL, LAYOUT_QKV, 0, 0, 0.1f, 2},
    {"bidirectional last sample all padded", 2, 40, 40, 2, 32, ZT_ATTN_NONE, LAYOUT_SEPARATE, 2, 0, 0.0f, 0},
    {"causal T=1", 2, 1, 1, 3, 128, ZT_ATTN_CAUSAL, LAYOUT_SEPARATE, 0, 0, 0.0f, 0},
    {"cross-attention Tq=1", 3, 1, 9, 2, 64, ZT_ATTN_NONE, LAYOUT_Q_KV, 1, 0, 0.0f, 0},
    {"cross-attention HD=256 dropout documents", 1, 65, 97, 1, 256, ZT_ATTN_NONE, LAYOUT_SEPARATE, 1, 1, 0.1f, 1},
    {"causal HD=1", 1, 37, 37, 3, 1, ZT_ATTN_CAUSAL, LAYOUT_QKV, 0, 0, 0.0f, 0},
    {"causal padded documents dropout HD=20", 2, 100, 100, 3, 20, ZT_ATTN_CAUSAL, LAYOUT_QKV, 1, 1, 0.1f, 3},
};

/* Where Q, K and V (and their gradients, in the same layout) live: up to three buffers; element (b, t, h, d)
 * of X is buf[X.buf][X.off + (b*T + t)*ld + h*hs + d]. */
typedef struct {
  int nbuf;
  size_t len[3];
  int buf[3];    /* for q, k, v */
  size_t off[3]; /* for q, k, v */
} storage;

static storage make_storage(const tcase *c, zt_attention_desc *a) {
  const size_t C = (size_t)c->NH * c->HD, Nq = (size_t)c->B * c->Tq, Nk = (size_t)c->B * c->Tk;
  storage s;
  memset(&s, 0, sizeof s);
  if (c->lay == LAYOUT_QKV) {
    s.nbuf = 1;
    s.len[0] = Nq * 3 * C;
    s.off[1] = (size_t)c->HD, s.off[2] = 2 * (size_t)c->HD;
    a->ld_q = a->ld_kv = 3 * c->NH * c->HD;
    a->hs_q = a->hs_k = a->hs_v = 3 * c->HD;
  } else if (c->lay == LAYOUT_SEPARATE) {
    s.nbuf = 3;
    s.len[0] = Nq * C, s.len[1] = s.len[2] = Nk * C;
    s.buf[1] = 1, s.buf[2] = 2;
    a->ld_q = a->ld_kv = c->NH * c->HD;
    a->hs_q = a->hs_k = a->hs_v = c->HD;
  } else {
    s.nbuf = 2;
    s.len[0] = Nq * C, s.len[1] = Nk * 2 * C;
    s.buf[1] = s.buf[2] = 1;
    s.off[2] = (size_t)c->HD;
    a->ld_q = c->NH * c->HD, a->ld_kv = 2 * c->NH * c->HD;
    a->hs_q = c->HD, a->hs_k = a->hs_v = 2 * c->HD;
  }
  return s;
}

/* The [B*T, NH*HD] values of the view at x with T rows per sample. */
static float *gather(const float *x, int B, int T, int NH, int HD, int ld, int hs) {
  float *y = h_alloc((size_t)B * T * NH * HD);
  for (size_t bt = 0; bt < (size_t)B * T; bt++)
    for (int h = 0; h < NH; h++)
      memcpy(y + (bt * NH + h) * HD, x + bt * ld + (size_t)h * hs, (size_t)HD * sizeof(float));
  return y;
}

/* lse[B, NH, Tq] of the scaled, masked scores, in double from the (rounded) inputs; -inf without a visible key. */
static double *reference_lse(const zt_attention_desc *a, const float *q, const float *k) {
  double *lse = (double *)calloc((size_t)a->B * a->NH * a->Tq, sizeof(double));
  double *s = (double *)calloc((size_t)a->Tk + 1, sizeof(double));
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++)
      for (int i = 0; i < a->Tq; i++) {
        const float *qi = q + ((size_t)b * a->Tq + i) * a->ld_q + (size_t)h * a->hs_q;
        const int lo = a->key_start ? a->key_start[(size_t)b * a->Tq + i] : 0;
        const int hi = a->mask == ZT_ATTN_CAUSAL ? i + 1 : a->Tk;
        double m = -INFINITY, sum = 0.0;
        int n = 0;
        for (int j = lo; j < hi; j++) {
          if (a->key_padding && a->key_padding[(size_t)b * a->Tk + j]) continue;
          const float *kj = k + ((size_t)b * a->Tk + j) * a->ld_kv + (size_t)h * a->hs_k;
          double dot = 0.0;
          for (int d = 0; d < a->HD; d++) dot += (double)qi[d] * kj[d];
          s[n] = (double)a->scale * dot;
          if (s[n] > m) m = s[n];
          n++;
        }
        for (int j = 0; j < n; j++) sum += exp(s[j] - m);
        lse[((size_t)b * a->NH + h) * a->Tq + i] = n ? m + log(sum) : -INFINITY;
      }
  free(s);
  return lse;
}

/* -inf exactly where the reference is (rows without a visible key), then the finite values within tol of the
 * largest magnitude (h_check_host alone would let a non-finite reference pass anything). */
static void check_lse(const char *what, const void *dev, const double *want, size_t n, double tol) {
  float *got = h_download(dev, n, ZT_DTYPE_FP32), *w = h_alloc(n);
  for (size_t i = 0; i < n; i++) {
    const int want_none = isinf(want[i]) != 0, got_none = isinf(got[i]) && got[i] < 0.0f;
    if (want_none != got_none) {
      printf("FAIL %s: row %zu is %g, want %g (a row without visible keys has lse -inf, and only such a row)\n",
             what, i, got[i], want[i]);
      h_fail++;
      free(got), free(w);
      return;
    }
    if (want_none) got[i] = 0.0f;
    w[i] = want_none ? 0.0f : (float)want[i];
  }
  h_check_host(what, got, w, n, tol);
  free(got), free(w);
}

static float max_abs(const float *x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
  return m;
}

/* As h_check_host, except that a reference that is exactly zero (every row sees one key: P = 1 and
 * dS = P (dP - D) = 0, so dq = dk = 0) is compared with the size of one term scale * dout * v * k of the sum,
 * since the device's result is then the rounding of dP - D (two fp32 dot products). */
static void check_grad(const char *what, const float *got, const float *want, size_t n, double tol,
                       double zero_scale) {
  if (max_abs(want, n) > 0.0f) {
    h_check_host(what, got, want, n, tol);
    return;
  }
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double m = isfinite(got[i]) ? fabs(got[i]) : INFINITY; /* poison left unwritten fails */
    if (m > worst) worst = m;
  }
  if (worst > tol * zero_scale) {
    printf("FAIL %s: the reference is 0, the largest magnitude is %g (tolerance %.1g of %.3g)\n", what, worst, tol,
           zero_scale);
    h_fail++;
  } else {
    printf("PASS %s (reference 0, largest magnitude %.2g of %.3g)\n", what, worst, zero_scale);
    h_pass++;
  }
}

static void run_case(const tcase *c, zt_dtype dt, uint64_t seed) {
  const int B = c->B, Tq = c->Tq, Tk = c->Tk, NH = c->NH, HD = c->HD;
  const size_t es = zt_dtype_size(dt), nout = (size_t)B * Tq * NH * HD, nstat = (size_t)B * NH * Tq;
  char tag[160], what[240];
  snprintf(tag, sizeof tag, "%s %s B=%d Tq=%d Tk=%d NH=%d HD=%d", c->name, zt_dtype_name(dt), B, Tq, Tk, NH, HD);

  zt_attention_desc a;
  memset(&a, 0, sizeof a);
  a.B = B, a.Tq = Tq, a.Tk = Tk, a.NH = NH, a.HD = HD, a.mask = c->mask, a.head0 = c->head0;
  a.scale = 1.0f / sqrtf((float)HD);
  a.dropout.p = c->p, a.dropout.seed = 4242 + seed, a.dropout.site = 3, a.dropout.first_sample = 5;
  const storage st = make_storage(c, &a);

  uint8_t *pad = NULL;
  int32_t *starts = NULL;
  if (c->pad) {
    pad = (uint8_t *)calloc((size_t)B * Tk, 1);
    for (int b = 0; b < B; b++)
      for (int j = 0; j < Tk; j++) pad[(size_t)b * Tk + j] = (j * 7 + b * 3) % 5 == 0 || (c->pad == 2 && b == B - 1);
    a.key_padding = pad;
  }
  if (c->starts) {
    starts = (int32_t *)calloc((size_t)B * Tq, sizeof(int32_t));
    for (int b = 0; b < B; b++)
      for (int i = 0; i < Tq; i++) {
        const int len = 17 + 5 * b;  /* documents of len tokens packed in the sequence */
        int s = i - i % len;
        if (s >= Tk) s = Tk - 1;
        starts[(size_t)b * Tq + i] = s;
      }
    starts[Tq < 4 ? Tq - 1 : 3] = Tk; /* sample 0, that row: no key at all */
    a.key_start = starts;
  }

  /* inputs: unit normal Q, K, V (scores of scale ~1), rounded to dt */
  float *hin[3];
  void *din[3], *dgrad[3], *dgrad2[3];
  for (int i = 0; i < st.nbuf; i++) {
    hin[i] = h_randn(st.len[i], 1.0f, dt, 100 * seed + i);
    din[i] = h_upload(hin[i], st.len[i], dt);
  }
  const float *q = hin[st.buf[0]] + st.off[0], *k = hin[st.buf[1]] + st.off[1], *v = hin[st.buf[2]] + st.off[2];
  const void *dq_in = (char *)din[st.buf[0]] + st.off[0] * es, *dk_in = (char *)din[st.buf[1]] + st.off[1] * es,
             *dv_in = (char *)din[st.buf[2]] + st.off[2] * es;
  zt_attention_desc da = a; /* the device's descriptor: mask pointers in device memory */
  da.key_padding = pad ? (const uint8_t *)h_upload_raw(pad, (size_t)B * Tk) : NULL;
  da.key_start = starts ? (const int32_t *)h_upload_raw(starts, (size_t)B * Tq * sizeof(int32_t)) : NULL;

  /* forward */
  float *out = h_alloc(nout), *probs = h_alloc((size_t)B * NH * Tq * Tk);
  zt_attention_forward(out, probs, q, k, v, &a);
  double *lse = reference_lse(&a, q, k);
  void *d_out = h_poisoned(nout, dt), *d_lse = h_poisoned(nstat, ZT_DTYPE_FP32);
  zt_cuda_attention_forward(dt, d_out, (float *)d_lse, dq_in, dk_in, dv_in, &da);
  snprintf(what, sizeof what, "%s: out", tag);
  h_check(what, d_out, dt, out, nout, h_tol(dt));
  /* lse is fp32 computed in fp32 from the very inputs the reference sees, whatever dt */
  snprintf(what, sizeof what, "%s: lse", tag);
  check_lse(what, d_lse, lse, nstat, h_tol(ZT_DTYPE_FP32));

  /* backward from the device's own out and lse, as in training */
  float *dout = h_randn(nout, 1.0f, dt, 100 * seed + 7), *hgrad[3];
  for (int i = 0; i < st.nbuf; i++) hgrad[i] = h_alloc(st.len[i]);
  float *scratch = h_alloc(zt_attention_scratch_floats(&a));
  zt_attention_backward(hgrad[st.buf[0]] + st.off[0], hgrad[st.buf[1]] + st.off[1], hgrad[st.buf[2]] + st.off[2],
                        dout, probs, q, k, v, &a, scratch);
  void *d_dout = h_upload(dout, nout, dt);
  for (int run = 0; run < 2; run++) {
    void **g = run ? dgrad2 : dgrad;
    for (int i = 0; i < st.nbuf; i++) g[i] = h_poisoned(st.len[i], dt);
    zt_cuda_attention_backward(dt, (char *)g[st.buf[0]] + st.off[0] * es, (char *)g[st.buf[1]] + st.off[1] * es,
                               (char *)g[st.buf[2]] + st.off[2] * es, d_dout, d_out, (const float *)d_lse, dq_in,
                               dk_in, dv_in, &da);
  }
  static const char *kGradName[3] = {"dq", "dk", "dv"};
  float *got[3], *got2[3];
  for (int i = 0; i < st.nbuf; i++) {
    got[i] = h_download(dgrad[i], st.len[i], dt);
    got2[i] = h_download(dgrad2[i], st.len[i], dt);
  }
  /* one term of dq (dk) is scale * dout.v * k (q): its size where the reference is exactly 0 */
  const double term = a.scale * max_abs(dout, nout) * max_abs(hin[st.buf[2]], st.len[st.buf[2]]);
  for (int x = 0; x < 3; x++) {
    const int T = x == 0 ? Tq : Tk, ld = x == 0 ? a.ld_q : a.ld_kv, hs = x == 0 ? a.hs_q : x == 1 ? a.hs_k : a.hs_v;
    float *g = gather(got[st.buf[x]] + st.off[x], B, T, NH, HD, ld, hs);
    float *w = gather(hgrad[st.buf[x]] + st.off[x], B, T, NH, HD, ld, hs);
    const int other = x == 0 ? 1 : 0; /* dq pairs with k, dk with q */
    snprintf(what, sizeof what, "%s: %s", tag, kGradName[x]);
    const double zero_scale = term * max_abs(hin[st.buf[other]], st.len[st.buf[other]]);
    check_grad(what, g, w, (size_t)B * T * NH * HD, h_tol(dt), zero_scale);
    free(g), free(w);
  }
  for (int i = 0; i < st.nbuf; i++) {
    snprintf(what, sizeof what, "%s: backward buffer %d run to run", tag, i);
    h_check_exact(what, got2[i], got[i], st.len[i]);
  }

  for (int i = 0; i < st.nbuf; i++) {
    free(hin[i]), free(hgrad[i]), free(got[i]), free(got2[i]);
    zt_cuda_free(din[i]), zt_cuda_free(dgrad[i]), zt_cuda_free(dgrad2[i]);
  }
  zt_cuda_free((void *)da.key_padding), zt_cuda_free((void *)da.key_start);
  zt_cuda_free(d_out), zt_cuda_free(d_lse), zt_cuda_free(d_dout);
  free(out), free(probs), free(lse), free(dout), free(scratch), free(pad), free(starts);
}

int main(void) {
  h_init("test_cuda_attention");
  const int ncases = (int)(sizeof kCases / sizeof kCases[0]);
  for (int c = 0; c < ncases; c++)
    for (int t = 0; t < 3; t++) run_case(&kCases[c], h_dtypes[t], 1 + (uint64_t)c);
  return h_done();
}
