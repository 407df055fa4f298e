/* Block-sparse attention in the CUDA fused kernels (zt_attention_desc.layout, issue 20): forward out and lse, and
 * dq, dk, dv, checked
 *   (a) against a double-precision reference computed here with the layout as an element mask (the tile (i / block,
 *       j / block) of an unlisted layout entry is masked like a causal or padded position),
 *   (b) bit for bit against the layout_as_mask path (every tile walked, the layout applied as a mask only): a tile
 *       the skipping path leaves out must add exactly nothing,
 *   (c) bit for bit, for a full layout, against layout == NULL (the dense kernels),
 * over random layouts (densities 0 %, in between with an empty block row and column per head, and 100 %), one
 * layout per head and one shared, head0 > 0, layout blocks 1, 8, 16, 32, 64 and 128 with HD 32, 64 and 128 (so the
 * kernels' tiles of 32 and 64 meet blocks smaller than, equal to and larger than themselves), causal and
 * bidirectional masks, key_padding, key_start (packed documents), dropout, fp32, bf16 and fp16, fused-QKV strided
 * views and separate tensors. The backward runs twice (skipping, as-mask); both are compared with (a) and with each
 * other. Also: the kernels refuse a layout whose nb * block is not the sequence, or with too few heads. */
#include <math.h>
#include <setjmp.h>

#include "runtime/base/error.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/ops/ops.h"
#include "tests/cuda/harness.h"

typedef struct {
  const char *name;
  int B, nb, blk, NH, HD;
  zt_attn_mask_kind mask;
  int fused;    /* Q, K, V in one buffer of rows [T, NH, 3, HD] (Megatron's fused QKV), else three buffers */
  int pad;      /* key_padding: one key in five */
  int starts;   /* key_start: documents of 23 + 4 b tokens packed in the sequence */
  float p;      /* attention dropout */
  int head0;    /* global index of the op's head 0 */
  int per_head; /* one layout per head of head0 + NH + 1 heads (all different), else one shared layout */
  int density;  /* percent of listed tiles: 0 (empty), 100 (full: also compared with layout == NULL), else random
                 * with one empty block row and one empty block column per head when nb >= 4 */
  int band;     /* also list the tiles with |i - j| < band (a local window: whole key tiles go unwalked) */
} scase;

static const scase kCases[] = {
    {"block 1 causal per-head fused", 2, 150, 1, 2, 32, ZT_ATTN_CAUSAL, 1, 0, 0, 0.0f, 0, 1, 30, 0},
    {"block 1 bidirectional padded HD=128", 1, 100, 1, 2, 128, ZT_ATTN_NONE, 0, 1, 0, 0.0f, 1, 0, 20, 0},
    {"block 8 bidirectional padded shared", 2, 20, 8, 2, 64, ZT_ATTN_NONE, 0, 1, 0, 0.0f, 0, 0, 40, 0},
    {"block 16 causal dropout head0=2 per-head", 2, 9, 16, 2, 128, ZT_ATTN_CAUSAL, 1, 0, 0, 0.1f, 2, 1, 50, 0},
    {"block 32 causal documents per-head", 2, 5, 32, 2, 64, ZT_ATTN_CAUSAL, 1, 0, 1, 0.0f, 0, 1, 50, 0},
    {"block 32 bidirectional HD=32", 1, 5, 32, 3, 32, ZT_ATTN_NONE, 0, 0, 0, 0.0f, 0, 1, 60, 0},
    {"block 64 bidirectional padded documents dropout", 2, 3, 64, 2, 128, ZT_ATTN_NONE, 0, 1, 1, 0.1f, 1, 0, 50, 0},
    {"block 64 causal HD=64 per-head", 1, 4, 64, 2, 64, ZT_ATTN_CAUSAL, 1, 0, 0, 0.0f, 3, 1, 60, 0},
    {"block 128 causal head0=1 per-head", 1, 2, 128, 2, 32, ZT_ATTN_CAUSAL, 1, 0, 0, 0.0f, 1, 1, 60, 0},
    {"block 128 bidirectional HD=128 padded", 1, 2, 128, 1, 128, ZT_ATTN_NONE, 0, 1, 0, 0.0f, 0, 1, 75, 0},
    {"block 1 banded causal per-head", 1, 200, 1, 2, 64, ZT_ATTN_CAUSAL, 1, 0, 0, 0.0f, 0, 1, 0, 24},
    {"block 8 banded bidirectional dropout HD=128", 1, 24, 8, 2, 128, ZT_ATTN_NONE, 0, 1, 0, 0.1f, 0, 0, 0, 3},
    {"block 32 banded causal documents HD=128", 1, 8, 32, 1, 128, ZT_ATTN_CAUSAL, 1, 0, 1, 0.0f, 0, 0, 0, 2},
    {"block 8 empty layout", 2, 12, 8, 2, 128, ZT_ATTN_CAUSAL, 1, 0, 0, 0.0f, 0, 0, 0, 0},
    {"block 16 full causal dropout", 2, 10, 16, 2, 64, ZT_ATTN_CAUSAL, 1, 0, 0, 0.1f, 1, 0, 100, 0},
    {"block 64 full bidirectional padded documents", 1, 3, 64, 2, 32, ZT_ATTN_NONE, 0, 1, 1, 0.0f, 0, 0, 100, 0},
    /* last: 33 tiles of 32 need a second word of tile bitmap, so the kernels' shared memory grows past what the
     * earlier launches set */
    {"block 32 long banded causal HD=128", 1, 33, 32, 1, 128, ZT_ATTN_CAUSAL, 0, 0, 0, 0.0f, 0, 0, 0, 2},
};

/* Small deterministic generator for the layouts. */
static uint64_t g_rng = 88172645463325252ull;
static unsigned rnd(void) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (unsigned)(g_rng >> 11);
}

/* mask[heads][nb][nb] of the case's density; per-head masks are not all equal (else zt_attn_layout_from_mask would
 * collapse them to one layout). */
static uint8_t *make_mask(const scase *c, int heads) {
  const int nb = c->nb;
  const size_t per = (size_t)nb * nb;
  uint8_t *m = (uint8_t *)calloc((size_t)heads * per, 1);
  for (int g = 0; g < heads; g++) {
    uint8_t *mg = m + (size_t)g * per;
    for (size_t e = 0; e < per; e++) mg[e] = c->density >= 100 ? 1 : (int)(rnd() % 100) < c->density;
    if (c->density > 0 && c->density < 100 && nb >= 4) { /* an empty block row and an empty block column */
      const int er = (int)(rnd() % nb), ec = (int)(rnd() % nb);
      for (int e = 0; e < nb; e++) mg[(size_t)er * nb + e] = 0, mg[(size_t)e * nb + ec] = 0;
    }
    for (int i = 0; i < nb; i++)
      for (int j = 0; j < nb; j++)
        if (abs(i - j) < c->band) mg[(size_t)i * nb + j] = 1;
  }
  if (heads > 1 && memcmp(m, m + (size_t)(heads - 1) * per, per) == 0) m[(size_t)(heads - 1) * per] ^= 1;
  return m;
}

/* Element (b, t, h, d) of a strided view at x with T rows per sample. */
static inline float at(const float *x, int T, int ld, int hs, int b, int t, int h, int d) {
  return x[((size_t)b * T + t) * ld + (size_t)h * hs + d];
}

/* The double reference with the layout as a mask: out [B, T, NH, HD], lse [B, NH, T] (-inf without a visible key),
 * and from dout [B, T, NH, HD] the gradients dq, dk, dv [B, T, NH, HD]. */
typedef struct {
  double *out, *lse, *dq, *dk, *dv;
} reference;

static reference reference_attention(const zt_attention_desc *a, const zt_attn_layout *l, const float *q,
                                     const float *k, const float *v, const float *dout) {
  const int B = a->B, T = a->Tq, NH = a->NH, HD = a->HD;
  const size_t n = (size_t)B * T * NH * HD;
  reference r;
  r.out = (double *)calloc(n, sizeof(double));
  r.dq = (double *)calloc(n, sizeof(double));
  r.dk = (double *)calloc(n, sizeof(double));
  r.dv = (double *)calloc(n, sizeof(double));
  r.lse = (double *)calloc((size_t)B * NH * T, sizeof(double));
  double *P = (double *)calloc((size_t)T * T, sizeof(double)), *dS = (double *)calloc((size_t)T * T, sizeof(double));
  float *keep = h_alloc((size_t)T * T), *ones = h_alloc((size_t)T);
  uint8_t *vis = (uint8_t *)calloc((size_t)T * T, 1);
  for (int j = 0; j < T; j++) ones[j] = 1.0f;
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const int g = zt_attn_layout_head(l, a->head0, h);
      for (int i = 0; i < T; i++) {
        if (a->dropout.p > 0.0f)
          zt_dropout_apply_range(keep + (size_t)i * T, ones, (size_t)T, &a->dropout, a->dropout.first_sample + b,
                                 ((uint64_t)(h + a->head0) * T + i) * T);
        else
          memcpy(keep + (size_t)i * T, ones, (size_t)T * sizeof(float));
        const int lo = a->key_start ? a->key_start[(size_t)b * T + i] : 0;
        double m = -INFINITY;
        for (int j = 0; j < T; j++) {
          double s = 0.0;
          uint8_t ok = j >= lo && (a->mask != ZT_ATTN_CAUSAL || j <= i) &&
                       !(a->key_padding && a->key_padding[(size_t)b * T + j]) &&
                       zt_attn_layout_has(l, g, i / l->block, j / l->block);
          vis[(size_t)i * T + j] = ok;
          if (ok) {
            for (int d = 0; d < HD; d++)
              s += (double)at(q, T, a->ld_q, a->hs_q, b, i, h, d) * at(k, T, a->ld_kv, a->hs_k, b, j, h, d);
            s *= a->scale;
            if (s > m) m = s;
          }
          P[(size_t)i * T + j] = s;
        }
        double sum = 0.0;
        for (int j = 0; j < T; j++) {
          double *p = &P[(size_t)i * T + j];
          *p = vis[(size_t)i * T + j] ? exp(*p - m) : 0.0;
          sum += *p;
        }
        r.lse[((size_t)b * NH + h) * T + i] = sum > 0.0 ? m + log(sum) : -INFINITY;
        for (int j = 0; j < T; j++) P[(size_t)i * T + j] = sum > 0.0 ? P[(size_t)i * T + j] / sum : 0.0;
        /* out = dropout(P) V; D = dout . out = sum_j P dropout(dP) */
        double *o = r.out + (((size_t)b * T + i) * NH + h) * HD;
        for (int j = 0; j < T; j++) {
          const double pd = P[(size_t)i * T + j] * keep[(size_t)i * T + j];
          if (pd != 0.0)
            for (int d = 0; d < HD; d++) o[d] += pd * at(v, T, a->ld_kv, a->hs_v, b, j, h, d);
        }
        const float *dO = dout + (((size_t)b * T + i) * NH + h) * HD;
        double D = 0.0;
        for (int d = 0; d < HD; d++) D += (double)dO[d] * o[d];
        for (int j = 0; j < T; j++) {
          const double p = P[(size_t)i * T + j];
          double dp = 0.0;
          if (p != 0.0)
            for (int d = 0; d < HD; d++) dp += (double)dO[d] * at(v, T, a->ld_kv, a->hs_v, b, j, h, d);
          dS[(size_t)i * T + j] = p * (dp * keep[(size_t)i * T + j] - D);
        }
      }
      for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
          const double ds = dS[(size_t)i * T + j] * a->scale, pd = P[(size_t)i * T + j] * keep[(size_t)i * T + j];
          if (ds == 0.0 && pd == 0.0) continue;
          double *dq = r.dq + (((size_t)b * T + i) * NH + h) * HD, *dk = r.dk + (((size_t)b * T + j) * NH + h) * HD;
          double *dv = r.dv + (((size_t)b * T + j) * NH + h) * HD;
          const float *dO = dout + (((size_t)b * T + i) * NH + h) * HD;
          for (int d = 0; d < HD; d++) {
            dq[d] += ds * at(k, T, a->ld_kv, a->hs_k, b, j, h, d);
            dk[d] += ds * at(q, T, a->ld_q, a->hs_q, b, i, h, d);
            dv[d] += pd * dO[d];
          }
        }
    }
  free(P), free(dS), free(keep), free(ones), free(vis);
  return r;
}

static float *to_float(const double *x, size_t n) {
  float *y = h_alloc(n);
  for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
  return y;
}

/* The [B, T, NH, HD] values of the strided view at x. */
static float *gather(const float *x, int B, int T, int NH, int HD, int ld, int hs) {
  float *y = h_alloc((size_t)B * T * NH * HD);
  for (size_t bt = 0; bt < (size_t)B * T; bt++)
    for (int h = 0; h < NH; h++) memcpy(y + (bt * NH + h) * HD, x + bt * ld + (size_t)h * hs, (size_t)HD * 4);
  return y;
}

/* lse: -inf exactly where the reference has no visible key, the rest within tol of the largest magnitude. */
static void check_lse(const char *what, const float *got, const double *want, size_t n, double tol) {
  float *g = h_alloc(n), *w = h_alloc(n);
  for (size_t i = 0; i < n; i++) {
    const int want_none = isinf(want[i]) != 0, got_none = isinf(got[i]) && got[i] < 0.0f;
    if (want_none != got_none) {
      printf("FAIL %s: row %zu is %g, want %g (-inf for a row without visible keys, and only there)\n", what, i,
             got[i], want[i]);
      h_fail++;
      free(g), free(w);
      return;
    }
    g[i] = want_none ? 0.0f : got[i];
    w[i] = want_none ? 0.0f : (float)want[i];
  }
  h_check_host(what, g, w, n, tol);
  free(g), free(w);
}

static float max_abs(const float *x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
  return m;
}

/* As h_check_host; a reference that is exactly zero everywhere (an empty layout) must be met by exact zeros. */
static void check_vs_reference(const char *what, const float *got, const float *want, size_t n, double tol) {
  if (max_abs(want, n) > 0.0f) {
    h_check_host(what, got, want, n, tol);
    return;
  }
  for (size_t i = 0; i < n; i++)
    if (got[i] != 0.0f) {
      printf("FAIL %s: element %zu is %g, the reference is 0 everywhere\n", what, i, got[i]);
      h_fail++;
      return;
    }
  printf("PASS %s (all zero)\n", what);
  h_pass++;
}

/* A device copy of a host layout (one allocation; the struct points into it). Written here rather than through
 * zt_attn_layout_to_backend, since the emulated tests also link CPU-only builds, where there is no CUDA backend. */
static zt_attn_layout upload_layout(const zt_attn_layout_buf *host, void **mem) {
  *mem = h_upload_raw(host->mem, host->bytes);
  const int32_t *base = (const int32_t *)host->mem, *dev = (const int32_t *)*mem;
  zt_attn_layout l = host->l;
  l.row_ptr = dev + (host->l.row_ptr - base);
  l.col_idx = dev + (host->l.col_idx - base);
  l.col_ptr = dev + (host->l.col_ptr - base);
  l.row_idx = dev + (host->l.row_idx - base);
  l.t_pos = dev + (host->l.t_pos - base);
  return l;
}

static void run_case(const scase *c, zt_dtype dt, uint64_t seed) {
  const int B = c->B, T = c->nb * c->blk, NH = c->NH, HD = c->HD;
  const size_t es = zt_dtype_size(dt), C = (size_t)NH * HD, nout = (size_t)B * T * C, nstat = (size_t)B * NH * T;
  char tag[200], what[300];
  snprintf(tag, sizeof tag, "%s %s B=%d T=%d NH=%d HD=%d", c->name, zt_dtype_name(dt), B, T, NH, HD);

  zt_attention_desc a;
  memset(&a, 0, sizeof a);
  a.B = B, a.Tq = a.Tk = T, a.NH = NH, a.HD = HD, a.mask = c->mask, a.head0 = c->head0;
  a.scale = 1.0f / sqrtf((float)HD);
  a.dropout.p = c->p, a.dropout.seed = 777 + seed, a.dropout.site = 5, a.dropout.first_sample = 3;
  /* storage: one buffer [B*T, NH, 3, HD] (fused) or three [B*T, NH*HD] */
  const int nbuf = c->fused ? 1 : 3;
  size_t len[3], off[3] = {0, 0, 0};
  int buf[3] = {0, 0, 0};
  if (c->fused) {
    len[0] = nout * 3, off[1] = (size_t)HD, off[2] = 2 * (size_t)HD;
    a.ld_q = a.ld_kv = 3 * (int)C, a.hs_q = a.hs_k = a.hs_v = 3 * HD;
  } else {
    len[0] = len[1] = len[2] = nout, buf[1] = 1, buf[2] = 2;
    a.ld_q = a.ld_kv = (int)C, a.hs_q = a.hs_k = a.hs_v = HD;
  }
  uint8_t *pad = NULL;
  int32_t *starts = NULL;
  if (c->pad) {
    pad = (uint8_t *)calloc((size_t)B * T, 1);
    for (int b = 0; b < B; b++)
      for (int j = 0; j < T; j++) pad[(size_t)b * T + j] = (j * 7 + b * 3) % 5 == 0;
    a.key_padding = pad;
  }
  if (c->starts) {
    starts = (int32_t *)calloc((size_t)B * T, sizeof(int32_t));
    for (int b = 0; b < B; b++)
      for (int i = 0; i < T; i++) starts[(size_t)b * T + i] = i - i % (23 + 4 * b);
    a.key_start = starts;
  }
  /* the layout */
  const int heads = c->per_head ? c->head0 + NH + 1 : 1;
  uint8_t *mask = make_mask(c, heads);
  zt_attn_layout_buf hl;
  zt_attn_layout_from_mask(&hl, mask, heads, c->nb, c->blk);
  if (c->per_head && hl.l.heads != heads) {
    printf("FAIL %s: the per-head masks collapsed to %d layout heads\n", tag, hl.l.heads);
    h_fail++;
  }
  void *dl_mem;
  const zt_attn_layout dl = upload_layout(&hl, &dl_mem);
  if (dt == ZT_DTYPE_FP32)
    printf("%s: layout of %d heads, %lld of %lld tiles listed\n", tag, hl.l.heads, (long long)hl.l.nnz,
           (long long)hl.l.heads * c->nb * c->nb);

  float *hin[3];
  void *din[3];
  for (int i = 0; i < nbuf; i++) {
    hin[i] = h_randn(len[i], 1.0f, dt, 100 * seed + i);
    din[i] = h_upload(hin[i], len[i], dt);
  }
  const float *q = hin[buf[0]] + off[0], *k = hin[buf[1]] + off[1], *v = hin[buf[2]] + off[2];
  const void *q_in = (char *)din[buf[0]] + off[0] * es, *k_in = (char *)din[buf[1]] + off[1] * es,
             *v_in = (char *)din[buf[2]] + off[2] * es;
  float *dout = h_randn(nout, 1.0f, dt, 100 * seed + 7);
  void *d_dout = h_upload(dout, nout, dt);
  reference ref = reference_attention(&a, &hl.l, q, k, v, dout);

  zt_attention_desc da = a; /* the device's descriptor */
  da.key_padding = pad ? (const uint8_t *)h_upload_raw(pad, (size_t)B * T) : NULL;
  da.key_start = starts ? (const int32_t *)h_upload_raw(starts, (size_t)B * T * sizeof(int32_t)) : NULL;

  /* three runs: 0 the block-sparse kernels (tiles skipped), 1 the layout as a mask, 2 no layout (full layouts) */
  const int runs = c->density >= 100 ? 3 : 2;
  static const char *kRun[3] = {"sparse", "as-mask", "no layout"};
  void *d_out[3], *d_lse[3], *d_grad[3][3];
  float *out[3], *lse[3], *grad[3][3];
  for (int run = 0; run < runs; run++) {
    da.layout = run == 2 ? NULL : &dl;
    da.layout_as_mask = run == 1;
    d_out[run] = h_poisoned(nout, dt), d_lse[run] = h_poisoned(nstat, ZT_DTYPE_FP32);
    zt_cuda_attention_forward(dt, d_out[run], (float *)d_lse[run], q_in, k_in, v_in, &da);
    for (int i = 0; i < nbuf; i++) d_grad[run][i] = h_poisoned(len[i], dt);
    /* each run's backward from the sparse run's forward, as the bitwise comparisons want the same inputs */
    zt_cuda_attention_backward(dt, (char *)d_grad[run][buf[0]] + off[0] * es,
                               (char *)d_grad[run][buf[1]] + off[1] * es, (char *)d_grad[run][buf[2]] + off[2] * es,
                               d_dout, d_out[0], (const float *)d_lse[0], q_in, k_in, v_in, &da);
    out[run] = h_download(d_out[run], nout, dt);
    lse[run] = h_download(d_lse[run], nstat, ZT_DTYPE_FP32);
    for (int i = 0; i < nbuf; i++) grad[run][i] = h_download(d_grad[run][i], len[i], dt);
  }

  /* (a) the sparse kernels against the double reference */
  float *want = to_float(ref.out, nout);
  snprintf(what, sizeof what, "%s: out vs reference", tag);
  check_vs_reference(what, out[0], want, nout, h_tol(dt));
  free(want);
  snprintf(what, sizeof what, "%s: lse vs reference", tag);
  check_lse(what, lse[0], ref.lse, nstat, h_tol(ZT_DTYPE_FP32));
  static const char *kGrad[3] = {"dq", "dk", "dv"};
  const double *ref_grad[3] = {ref.dq, ref.dk, ref.dv};
  for (int x = 0; x < 3; x++) {
    const int ld = x == 0 ? a.ld_q : a.ld_kv, hs = x == 0 ? a.hs_q : x == 1 ? a.hs_k : a.hs_v;
    float *g = gather(grad[0][buf[x]] + off[x], B, T, NH, HD, ld, hs), *w = to_float(ref_grad[x], nout);
    snprintf(what, sizeof what, "%s: %s vs reference", tag, kGrad[x]);
    check_vs_reference(what, g, w, nout, h_tol(dt));
    free(g), free(w);
  }
  /* (b), (c) bit for bit */
  for (int run = 1; run < runs; run++) {
    snprintf(what, sizeof what, "%s: out, sparse vs %s", tag, kRun[run]);
    h_check_exact(what, out[0], out[run], nout);
    snprintf(what, sizeof what, "%s: lse, sparse vs %s", tag, kRun[run]);
    h_check_exact(what, lse[0], lse[run], nstat);
    for (int i = 0; i < nbuf; i++) {
      snprintf(what, sizeof what, "%s: gradient buffer %d, sparse vs %s", tag, i, kRun[run]);
      h_check_exact(what, grad[0][i], grad[run][i], len[i]);
    }
  }

  for (int run = 0; run < runs; run++) {
    zt_cuda_free(d_out[run]), zt_cuda_free(d_lse[run]);
    free(out[run]), free(lse[run]);
    for (int i = 0; i < nbuf; i++) zt_cuda_free(d_grad[run][i]), free(grad[run][i]);
  }
  for (int i = 0; i < nbuf; i++) free(hin[i]), zt_cuda_free(din[i]);
  zt_cuda_free((void *)da.key_padding), zt_cuda_free((void *)da.key_start), zt_cuda_free(d_dout), zt_cuda_free(dl_mem);
  free(ref.out), free(ref.lse), free(ref.dq), free(ref.dk), free(ref.dv);
  free(dout), free(pad), free(starts), free(mask);
  zt_attn_layout_free(&hl);
}

/* Refusals: zt_fatal returns here through the fatal hook (the kernels must refuse before any launch). */
static jmp_buf g_jmp;
static void on_fatal(int code) {
  (void)code;
  longjmp(g_jmp, 1);
}

static void expect_refusal(const char *what, const zt_attention_desc *d) {
  volatile int refused = 0;
  printf("the next error is expected:\n");
  if (setjmp(g_jmp) == 0) {
    zt_set_fatal_hook(on_fatal);
    zt_cuda_attention_forward(ZT_DTYPE_FP32, (void *)1, (float *)1, (void *)1, (void *)1, (void *)1, d);
  } else {
    refused = 1;
  }
  zt_set_fatal_hook(NULL);
  if (refused) {
    printf("PASS refuses %s\n", what);
    h_pass++;
  } else {
    printf("FAIL %s was accepted\n", what);
    h_fail++;
  }
}

static void check_refusals(void) {
  uint8_t mask[4 * 4 * 2];
  memset(mask, 1, sizeof mask);
  mask[3] = 0; /* the two heads differ */
  zt_attn_layout_buf hl;
  zt_attn_layout_from_mask(&hl, mask, 2, 4, 16);
  void *mem;
  const zt_attn_layout dl = upload_layout(&hl, &mem);
  zt_attention_desc d;
  memset(&d, 0, sizeof d);
  d.B = 1, d.Tq = d.Tk = 64, d.NH = 1, d.HD = 16, d.ld_q = d.ld_kv = 16, d.hs_q = d.hs_k = d.hs_v = 0;
  d.scale = 0.25f, d.layout = &dl;
  d.Tq = d.Tk = 60;
  expect_refusal("a layout of 4 blocks of 16 for a sequence of 60", &d);
  d.Tq = 64, d.Tk = 48;
  expect_refusal("a layout with Tq != Tk", &d);
  d.Tq = d.Tk = 64, d.NH = 2, d.head0 = 1;
  expect_refusal("a layout of 2 heads for heads 1..2", &d);
  zt_cuda_free(mem);
  zt_attn_layout_free(&hl);
}

int main(void) {
  h_init("test_cuda_attention_sparse");
  const int ncases = (int)(sizeof kCases / sizeof kCases[0]);
  for (int c = 0; c < ncases; c++)
    for (int t = 0; t < 3; t++) run_case(&kCases[c], h_dtypes[t], 1 + (uint64_t)c);
  check_refusals(); /* last: their expected error lines would come first in a failing run's stderr */
  return h_done();
}
