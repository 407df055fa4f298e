/* Block-sparse attention on the CPU (runtime/ops/cpu/attention_sparse.c, issue 20): the sparse kernel (a layout,
 * not layout_as_mask) against the dense kernel with the layout applied as an element mask (layout_as_mask), and
 * that path against a naive double-precision reference whose visibility comes from the 0/1 block mask itself
 * (not from the CSR), so the reference is checked too. Every block size (1, 4, 16, 32) runs with every
 * combination of causal/none, key_padding, key_start, dropout on/off and separate/fused-QKV views (ld = 3C,
 * hs = 3HD as Megatron's layer), over layouts cycling through random per-head, random shared (heads 1), per-head
 * with head0 > 0 (a tensor-parallel rank's heads of a larger layout), random with empty block rows, and full.
 * Checks per case: output, the compact probabilities expanded to [B, NH, T, T] (zeros outside the listed tiles),
 * dq/dk/dv (all 1e-5 of max), the reference's output/probabilities/gradients, saved/scratch sizes; full layouts
 * also against layout == NULL (1e-6); some cases run twice and with 1 thread (bitwise equal). Then finite
 * differences of the reference against the sparse gradients on a small case, and the errors for a layout that
 * does not fit the op. */
#include <omp.h>

#include "runtime/base/philox.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/ops/ops.h"
#include "tests/unit/testutil.h"

#define FD_H 1e-6

enum { LK_PERHEAD, LK_SHARED, LK_HEAD0, LK_EMPTYROWS, LK_FULL, LK_COUNT };
static const char *k_lk_name[LK_COUNT] = {"perhead", "shared", "head0", "emptyrows", "full"};

typedef struct {
  char name[96];
  int B, NH, HD, block, nb, lk, causal, pad, kstart, drop, fused;
} sp_case;

/* Everything one case needs: the block mask, the layout, the inputs as float and double, the masks. */
typedef struct {
  sp_case t;
  int T, C, Hl, head0; /* Hl: layout heads as built (before collapsing) */
  uint8_t *mask;       /* [Hl][nb][nb] */
  zt_attn_layout_buf lb;
  zt_attention_desc a; /* layout, not layout_as_mask */
  size_t nbuf;         /* floats per q/k/v buffer (fused: the one buffer) */
  float *qkv[3];       /* fused: qkv[0] only, q/k/v at offsets 0, HD, 2HD */
  double *dqkv[3];
  size_t off[3];
  float *G;
  double *Gd;
  uint8_t *padv;
  int32_t *starts;
  uint8_t *keep; /* [B][NH][T][T] or NULL */
} sp_setup;

static int nbufs(const sp_setup *s) { return s->t.fused ? 1 : 3; }
static int bufof(const sp_setup *s, int x) { return s->t.fused ? 0 : x; }

static int ref_visible(const sp_setup *s, int b, int h, int i, int j) {
  const int nb = s->t.nb, bs = s->t.block;
  const int g = s->Hl == 1 ? 0 : s->head0 + h;
  if (!s->mask[((size_t)g * nb + i / bs) * nb + j / bs]) return 0;
  if (s->t.causal && j > i) return 0;
  if (s->starts && j < s->starts[b * s->T + i]) return 0;
  return !(s->padv && s->padv[b * s->T + j]);
}

static void setup(sp_setup *s, const sp_case *t, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->t = *t;
  tu_rng r = {seed};
  const int nb = t->nb, NH = t->NH, HD = t->HD, B = t->B;
  s->T = nb * t->block;
  s->C = NH * HD;
  const int T = s->T, C = s->C;
  s->head0 = t->lk == LK_HEAD0 ? 2 : 0;
  s->Hl = t->lk == LK_SHARED ? 1 : (t->lk == LK_HEAD0 ? s->head0 + NH + 1 : NH);
  s->mask = calloc((size_t)s->Hl * nb * nb, 1);
  const double dens[4] = {0.25, 0.5, 0.7, 0.4};
  for (int g = 0; g < s->Hl; g++)
    for (int i = 0; i < nb; i++)
      for (int j = 0; j < nb; j++) {
        uint8_t *m = &s->mask[((size_t)g * nb + i) * nb + j];
        if (t->lk == LK_FULL) *m = 1;
        else *m = (tu_next(&r) >> 11) * (1.0 / 9007199254740992.0) < dens[(g + i) % 4];
        if (t->lk == LK_EMPTYROWS && (i % 3 == 1)) *m = 0; /* whole block rows with no tile */
      }
  if (t->lk != LK_FULL && t->lk != LK_EMPTYROWS) s->mask[0] = 0; /* head 0's first row: never a full one */
  zt_attn_layout_from_mask(&s->lb, s->mask, s->Hl, nb, t->block);
  zt_attention_desc *a = &s->a;
  a->B = B; a->Tq = a->Tk = T; a->NH = NH; a->HD = HD;
  if (t->fused) { a->ld_q = a->ld_kv = 3 * C; a->hs_q = a->hs_k = a->hs_v = 3 * HD; }
  else { a->ld_q = a->ld_kv = C; a->hs_q = a->hs_k = a->hs_v = HD; }
  a->layout = &s->lb.l;
  a->mask = t->causal ? ZT_ATTN_CAUSAL : ZT_ATTN_NONE;
  a->scale = 1.0f / sqrtf((float)HD) * 1.7f; /* larger than 1/sqrt(HD): sharper rows */
  a->dropout = (zt_dropout){t->drop ? 0.2f : 0.0f, 4242, 5 * 16 + 3, 17};
  a->head0 = s->head0;
  s->nbuf = (size_t)B * T * (t->fused ? 3 * C : C);
  for (int x = 0; x < nbufs(s); x++) {
    s->qkv[x] = tu_falloc(s->nbuf);
    tu_fill(&r, s->qkv[x], s->nbuf, -1.5f, 1.5f);
    s->dqkv[x] = tu_to_double(s->qkv[x], s->nbuf);
  }
  for (int x = 0; x < 3; x++) s->off[x] = t->fused ? (size_t)x * HD : 0;
  if (t->pad) {
    s->padv = calloc((size_t)B * T, 1);
    for (int i = 0; i < B * T; i++) s->padv[i] = tu_u32(&r) % 5 == 0;
    s->padv[T - 1] = 1;
    a->key_padding = s->padv;
  }
  if (t->kstart) {
    s->starts = malloc((size_t)B * T * sizeof(int32_t));
    for (int b = 0; b < B; b++) { /* documents packed: starts at 0, T/3, 2T/3 */
      for (int i = 0; i < T; i++) s->starts[b * T + i] = i >= 2 * T / 3 ? 2 * T / 3 : (i >= T / 3 ? T / 3 : 0);
      if (b == 1) for (int i = 0; i < T; i++) s->starts[b * T + i] = i / 2; /* also rows past their causal end */
    }
    a->key_start = s->starts;
  }
  const size_t no = (size_t)B * T * C;
  s->G = tu_falloc(no);
  tu_fill(&r, s->G, no, -1, 1);
  s->Gd = tu_to_double(s->G, no);
  if (t->drop) {
    s->keep = malloc((size_t)B * NH * T * T);
    for (int b = 0; b < B; b++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < T; i++)
          for (int j = 0; j < T; j++)
            s->keep[(((size_t)b * NH + h) * T + i) * T + j] =
                zt_philox_uniform(a->dropout.seed, ZT_RNG_DROPOUT, zt_dropout_stream(&a->dropout, 17 + b),
                                  (((uint64_t)(h + s->head0)) * T + i) * T + j) >= a->dropout.p;
  }
}

static void teardown(sp_setup *s) {
  zt_attn_layout_free(&s->lb);
  for (int x = 0; x < 3; x++) { free(s->qkv[x]); free(s->dqkv[x]); }
  free(s->mask); free(s->G); free(s->Gd); free(s->padv); free(s->starts); free(s->keep);
}

/* Double reference: out [B, T, C], probs [B, NH, T, T] (or NULL); with grads (dq, dk, dv in the views' buffers,
 * zeroed first) when g != NULL. x: the double inputs (may be perturbed by finite differences). */
static void ref_attention(const sp_setup *s, double *const *x, double *out, double *probs, double *const *g) {
  const int T = s->T, C = s->C, HD = s->t.HD, NH = s->t.NH;
  const zt_attention_desc *a = &s->a;
  const double pdrop = a->dropout.p;
  double *p = tu_dalloc(T), *dp = tu_dalloc(T);
  if (g)
    for (int y = 0; y < nbufs(s); y++) memset(g[y], 0, s->nbuf * sizeof(double));
  for (int b = 0; b < s->t.B; b++)
    for (int h = 0; h < NH; h++)
      for (int i = 0; i < T; i++) {
        const double *qr = x[bufof(s, 0)] + s->off[0] + (size_t)(b * T + i) * a->ld_q + h * a->hs_q;
        double m = -INFINITY, z = 0;
        for (int j = 0; j < T; j++) {
          const double *kr = x[bufof(s, 1)] + s->off[1] + (size_t)(b * T + j) * a->ld_kv + h * a->hs_k;
          double d = 0;
          for (int e = 0; e < HD; e++) d += qr[e] * kr[e];
          p[j] = d * a->scale;
          if (ref_visible(s, b, h, i, j)) m = fmax(m, p[j]);
        }
        for (int j = 0; j < T; j++) { p[j] = ref_visible(s, b, h, i, j) ? exp(p[j] - m) : 0.0; z += p[j]; }
        for (int j = 0; j < T; j++) p[j] = z > 0 ? p[j] / z : 0.0;
        const size_t prow = (((size_t)b * NH + h) * T + i) * T;
        double *o = out + (size_t)(b * T + i) * C + h * HD;
        const double *go = s->Gd + (size_t)(b * T + i) * C + h * HD;
        for (int e = 0; e < HD; e++) o[e] = 0;
        for (int j = 0; j < T; j++) {
          if (probs) probs[prow + j] = p[j];
          double pj = s->keep ? (s->keep[prow + j] ? p[j] / (1.0 - pdrop) : 0.0) : p[j];
          const double *vr = x[bufof(s, 2)] + s->off[2] + (size_t)(b * T + j) * a->ld_kv + h * a->hs_v;
          double d = 0;
          for (int e = 0; e < HD; e++) { o[e] += pj * vr[e]; d += go[e] * vr[e]; }
          if (g) {
            double *gv = g[bufof(s, 2)] + s->off[2] + (size_t)(b * T + j) * a->ld_kv + h * a->hs_v;
            for (int e = 0; e < HD; e++) gv[e] += pj * go[e];
          }
          dp[j] = s->keep ? (s->keep[prow + j] ? d / (1.0 - pdrop) : 0.0) : d;
        }
        if (!g) continue;
        double dot = 0;
        for (int j = 0; j < T; j++) dot += p[j] * dp[j];
        double *gq = g[bufof(s, 0)] + s->off[0] + (size_t)(b * T + i) * a->ld_q + h * a->hs_q;
        for (int j = 0; j < T; j++) {
          const double ds = p[j] * (dp[j] - dot) * a->scale;
          if (ds == 0) continue;
          const double *kr = x[bufof(s, 1)] + s->off[1] + (size_t)(b * T + j) * a->ld_kv + h * a->hs_k;
          double *gk = g[bufof(s, 1)] + s->off[1] + (size_t)(b * T + j) * a->ld_kv + h * a->hs_k;
          for (int e = 0; e < HD; e++) { gq[e] += ds * kr[e]; gk[e] += ds * qr[e]; }
        }
      }
  free(p); free(dp);
}

/* Forward + backward of the op with descriptor a: out, probs (saved floats), grads (NaN-prefilled). */
typedef struct { float *out, *probs, *g[3]; size_t np; } sp_run;

static void run_op(const sp_setup *s, const zt_attention_desc *a, sp_run *R) {
  const size_t no = (size_t)s->t.B * s->T * s->C;
  R->np = zt_attention_saved_floats(a);
  R->out = tu_falloc(no);
  R->probs = tu_falloc(R->np);
  tu_fill_nan(R->out, no);
  tu_fill_nan(R->probs, R->np);
  const float *q = s->qkv[bufof(s, 0)] + s->off[0], *k = s->qkv[bufof(s, 1)] + s->off[1],
              *v = s->qkv[bufof(s, 2)] + s->off[2];
  zt_attention_forward(R->out, R->probs, q, k, v, a);
  for (int x = 0; x < 3; x++) R->g[x] = NULL;
  for (int x = 0; x < nbufs(s); x++) { R->g[x] = tu_falloc(s->nbuf); tu_fill_nan(R->g[x], s->nbuf); }
  const size_t ns = zt_attention_scratch_floats(a);
  float *scratch = tu_falloc(ns);
  tu_fill_nan(scratch, ns);
  zt_attention_backward(R->g[bufof(s, 0)] + s->off[0], R->g[bufof(s, 1)] + s->off[1], R->g[bufof(s, 2)] + s->off[2],
                        s->G, R->probs, q, k, v, a, scratch);
  free(scratch);
}

static void free_run(sp_run *R) {
  free(R->out); free(R->probs);
  for (int x = 0; x < 3; x++) free(R->g[x]);
}

/* The sparse kernel's compact probabilities as [B, NH, T, T], written from the 0/1 mask (ops.h's saved layout). */
static double *expand_probs(const sp_setup *s, const float *cp) {
  const int T = s->T, nb = s->t.nb, bs = s->t.block, NH = s->t.NH;
  double *d = tu_dalloc((size_t)s->t.B * NH * T * T);
  size_t pos = 0;
  for (int b = 0; b < s->t.B; b++)
    for (int h = 0; h < NH; h++) {
      const int g = s->Hl == 1 ? 0 : s->head0 + h;
      for (int r = 0; r < nb; r++) {
        for (int ii = 0; ii < bs; ii++)
          for (int c = 0; c < nb; c++)
            if (s->mask[((size_t)g * nb + r) * nb + c])
              for (int jj = 0; jj < bs; jj++)
                d[(((size_t)b * NH + h) * T + r * bs + ii) * T + c * bs + jj] = cp[pos++];
      }
    }
  return d;
}

static void cmp_grads(const sp_setup *s, const char *what, float *const *got, double *const *ref, double rtol) {
  static const char *names[3] = {"dq", "dk", "dv"};
  char name[160];
  for (int x = 0; x < nbufs(s); x++) {
    snprintf(name, sizeof name, "%s_%s_%s", s->t.name, what, s->t.fused ? "dqkv" : names[x]);
    tu_cmp(name, got[x], ref[x], s->nbuf, rtol, 0);
  }
}

static void cmp_runs_exact(const sp_setup *s, const char *what, const sp_run *A, const sp_run *B) {
  char name[160];
  snprintf(name, sizeof name, "%s_%s_out", s->t.name, what);
  tu_cmp_exact(name, A->out, B->out, (size_t)s->t.B * s->T * s->C);
  snprintf(name, sizeof name, "%s_%s_probs", s->t.name, what);
  tu_cmp_exact(name, A->probs, B->probs, A->np);
  for (int x = 0; x < nbufs(s); x++) {
    snprintf(name, sizeof name, "%s_%s_grad%d", s->t.name, what, x);
    tu_cmp_exact(name, A->g[x], B->g[x], s->nbuf);
  }
}

static void run_case(const sp_case *t, uint64_t seed, int det) {
  sp_setup s;
  setup(&s, t, seed);
  char name[160];
  const int T = s.T, NH = t->NH;
  const size_t no = (size_t)t->B * T * s.C, ndp = (size_t)t->B * NH * T * T;
  zt_attention_desc am = s.a;
  am.layout_as_mask = 1;
  sp_run S, M;
  run_op(&s, &s.a, &S);
  run_op(&s, &am, &M);

  /* sizes: listed tiles counted from the mask */
  int64_t tiles = 0;
  for (int h = 0; h < NH; h++) {
    const int g = s.Hl == 1 ? 0 : s.head0 + h;
    for (int e = 0; e < t->nb * t->nb; e++) tiles += s.mask[(size_t)g * t->nb * t->nb + e];
  }
  const size_t want = (size_t)t->B * (size_t)tiles * t->block * t->block;
  snprintf(name, sizeof name, "%s_sizes", t->name);
  tu_check(S.np == want && zt_attention_scratch_floats(&s.a) == want && M.np == ndp &&
               zt_attention_scratch_floats(&am) >= 2 * (size_t)T * T,
           name, "saved %zu scratch %zu (want %zu), mask path saved %zu (want %zu)", S.np,
           zt_attention_scratch_floats(&s.a), want, M.np, ndp);

  /* sparse against layout_as_mask */
  double *md = tu_to_double(M.out, no);
  snprintf(name, sizeof name, "%s_sparse_out", t->name);
  tu_cmp(name, S.out, md, no, 1e-5, 0);
  free(md);
  double *sp = expand_probs(&s, S.probs);
  float *spf = tu_falloc(ndp);
  for (size_t e = 0; e < ndp; e++) spf[e] = (float)sp[e];
  md = tu_to_double(M.probs, ndp);
  snprintf(name, sizeof name, "%s_sparse_probs", t->name);
  tu_cmp(name, spf, md, ndp, 1e-5, 0);
  free(md);
  double *mg[3] = {0};
  for (int x = 0; x < nbufs(&s); x++) mg[x] = tu_to_double(M.g[x], s.nbuf);
  cmp_grads(&s, "sparse", S.g, mg, 1e-5);
  for (int x = 0; x < nbufs(&s); x++) free(mg[x]);

  /* layout_as_mask against the double reference */
  double *ro = tu_dalloc(no), *rp = tu_dalloc(ndp), *rg[3] = {0};
  for (int x = 0; x < nbufs(&s); x++) rg[x] = tu_dalloc(s.nbuf);
  ref_attention(&s, s.dqkv, ro, rp, rg);
  snprintf(name, sizeof name, "%s_mask_out_vs_ref", t->name);
  tu_cmp(name, M.out, ro, no, 1e-5, 0);
  snprintf(name, sizeof name, "%s_mask_probs_vs_ref", t->name);
  tu_cmp(name, M.probs, rp, ndp, 1e-5, 0);
  cmp_grads(&s, "mask_vs_ref", M.g, rg, 2e-5);
  /* the probabilities outside the visible set are exactly 0 in both kernels */
  size_t bad = 0;
  for (size_t e = 0; e < ndp; e++) bad += rp[e] == 0.0 && (spf[e] != 0.0f || M.probs[e] != 0.0f);
  snprintf(name, sizeof name, "%s_masked_exact_zero", t->name);
  tu_check(bad == 0, name, "%zu masked probabilities nonzero", bad);
  free(sp); free(spf); free(ro); free(rp);
  for (int x = 0; x < nbufs(&s); x++) free(rg[x]);

  if (t->lk == LK_FULL) { /* every tile listed: the dense kernel */
    zt_attention_desc an = s.a;
    an.layout = NULL;
    sp_run N;
    run_op(&s, &an, &N);
    md = tu_to_double(N.out, no);
    snprintf(name, sizeof name, "%s_full_vs_dense_out", t->name);
    tu_cmp(name, S.out, md, no, 1e-6, 0);
    free(md);
    double *ng[3] = {0};
    for (int x = 0; x < nbufs(&s); x++) ng[x] = tu_to_double(N.g[x], s.nbuf);
    cmp_grads(&s, "full_vs_dense", S.g, ng, 1e-6);
    for (int x = 0; x < nbufs(&s); x++) free(ng[x]);
    free_run(&N);
  }
  if (det) { /* again, and with one thread: bitwise the same */
    sp_run S2, S1;
    run_op(&s, &s.a, &S2);
    cmp_runs_exact(&s, "rerun_bitwise", &S, &S2);
    const int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    run_op(&s, &s.a, &S1);
    omp_set_num_threads(nt);
    cmp_runs_exact(&s, "one_thread_bitwise", &S, &S1);
    free_run(&S2);
    free_run(&S1);
  }
  free_run(&S);
  free_run(&M);
  teardown(&s);
}

/* Finite differences of the double reference against the sparse kernel's gradients (small case). */
static void fd_case(void) {
  sp_case t = {.B = 1, .NH = 2, .HD = 4, .block = 2, .nb = 4, .lk = LK_PERHEAD, .causal = 1, .pad = 1, .kstart = 1,
               .drop = 1, .fused = 1};
  snprintf(t.name, sizeof t.name, "fd_b2_perhead_causal_pad_kstart_drop_fused");
  sp_setup s;
  setup(&s, &t, 99);
  sp_run S;
  run_op(&s, &s.a, &S);
  const size_t no = (size_t)s.T * s.C;
  double *o = tu_dalloc(no), *fd = tu_dalloc(s.nbuf);
  double *x = s.dqkv[0];
  for (size_t e = 0; e < s.nbuf; e++) {
    const double save = x[e];
    double *xs[1] = {x};
    x[e] = save + FD_H;
    ref_attention(&s, xs, o, NULL, NULL);
    double a1 = 0;
    for (size_t i = 0; i < no; i++) a1 += o[i] * s.Gd[i];
    x[e] = save - FD_H;
    ref_attention(&s, xs, o, NULL, NULL);
    double a2 = 0;
    for (size_t i = 0; i < no; i++) a2 += o[i] * s.Gd[i];
    x[e] = save;
    fd[e] = (a1 - a2) / (2 * FD_H);
  }
  tu_cmp("fd_sparse_dqkv", S.g[0], fd, s.nbuf, 1e-4, 0);
  free(o); free(fd);
  free_run(&S);
  teardown(&s);
}

/* Layouts that do not fit the op: refused before any work, naming the numbers. */
typedef struct { int Tq, Tk, head0, NH, heads; } bad_ctx;
static void bad_call(void *p) {
  const bad_ctx *c = p;
  const int nb = 4, block = 4;
  uint8_t *mask = calloc((size_t)c->heads * nb * nb, 1);
  for (int g = 0; g < c->heads; g++) mask[(size_t)g * nb * nb + g % (nb * nb)] = 1; /* distinct per head */
  for (int e = 0; e < c->heads * nb * nb; e += 5) mask[e] = 1;
  zt_attn_layout_buf lb;
  zt_attn_layout_from_mask(&lb, mask, c->heads, nb, block);
  zt_attention_desc a = {.B = 1, .Tq = c->Tq, .Tk = c->Tk, .NH = c->NH, .HD = 4, .ld_q = 4 * c->NH,
                         .hs_q = 4, .ld_kv = 4 * c->NH, .hs_k = 4, .hs_v = 4, .layout = &lb.l, .scale = 0.5f,
                         .head0 = c->head0};
  const size_t n = (size_t)(c->Tq > c->Tk ? c->Tq : c->Tk) * 4 * c->NH;
  float *buf = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float)), *pr = calloc(1 << 16, sizeof(float));
  zt_attention_forward(out, pr, buf, buf, buf, &a);
}

static void test_errors(void) {
  bad_ctx c1 = {16, 12, 0, 2, 1};
  tu_expect_fatal("error_cross_attention", bad_call, &c1, "Tq 16, Tk 12, layout 4 blocks of 4 tokens");
  bad_ctx c2 = {20, 20, 0, 2, 1};
  tu_expect_fatal("error_length_not_blocks", bad_call, &c2, "Tq 20, Tk 20, layout 4 blocks of 4 tokens (16)");
  bad_ctx c3 = {16, 16, 2, 2, 3};
  tu_expect_fatal("error_heads_beyond_layout", bad_call, &c3, "layout has 3 heads, the op's heads are 2 .. 3");
}

int main(void) {
  const int blocks[4] = {1, 4, 16, 32}, nbs[4] = {20, 8, 5, 3};
  int n = 0;
  for (int bi = 0; bi < 4; bi++)
    for (int f = 0; f < 32; f++) {
      sp_case t = {.B = 2, .NH = 2, .HD = 8, .block = blocks[bi], .nb = nbs[bi], .causal = f & 1,
                   .pad = (f >> 1) & 1, .kstart = (f >> 2) & 1, .drop = (f >> 3) & 1, .fused = (f >> 4) & 1};
      t.lk = (f + bi) % LK_COUNT;
      if (t.lk == LK_HEAD0) t.NH = 3;
      snprintf(t.name, sizeof t.name, "b%d_%s%s%s%s%s%s", t.block, k_lk_name[t.lk], t.causal ? "_causal" : "",
               t.pad ? "_pad" : "", t.kstart ? "_kstart" : "", t.drop ? "_drop" : "", t.fused ? "_fused" : "");
      run_case(&t, 1000 + (uint64_t)n, f % 7 == 3);
      n++;
    }
  fd_case();
  test_errors();
  return tu_finish();
}
