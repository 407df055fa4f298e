/* Chunked (flash-style, DeepSpeed FPDT) attention on the CPU (zt_attention_desc.chunk > 0): the chunked forward and
 * zt_attention_chunked_backward against the dense kernel (chunk 0, itself checked against finite differences in
 * test_ops_grad) on the same descriptor. Chunk sizes 1, 3 (13 rows: a shorter last block), 4, Tq and more than Tq
 * run with causal/none, key_padding, key_start (with rows that see no key), dropout p = 0.1 and separate (rows with
 * padding columns, which must stay untouched) or fused-QKV views (ld = 3C, hs = 3HD as Megatron's layer), head0 = 2.
 * Checks per case: output, dq/dk/dv (max |chunked - dense| <= 2e-5 * max(1, max|dense|)), the saved log-sum-exps
 * against a double-precision one from the scores (-inf for rows with no visible key, whose outputs are exactly 0),
 * the saved/scratch sizes, and bitwise equality with one thread. Then a cross-attention case (Tq != Tk), a longer
 * one through the CPU backend's entry points, and the errors for descriptors the chunked path refuses. */
#include <omp.h>

#include "runtime/ops/attn_layout.h"
#include "runtime/ops/backend.h"
#include "runtime/ops/ops.h"
#include "tests/unit/testutil.h"

#define TOL 2e-5

typedef struct {
  int Tq, Tk, causal, pad, kstart, drop, fused, chunk;
} ch_case;

/* Inputs and views of one case: fused, one buffer [B*T, 3C] with q, k, v at columns 0, HD, 2HD; separate, three
 * buffers whose rows carry padding columns beyond the heads. */
typedef struct {
  ch_case t;
  int B, NH, HD, C;
  zt_attention_desc a;
  int nbuf;
  size_t size[3], off[3];
  float *x[3];
  float *G;
  uint8_t *padv;
  int32_t *starts;
} ch_setup;

static int bufof(const ch_setup *s, int x) { return s->t.fused ? 0 : x; }

static void setup(ch_setup *s, const ch_case *t, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->t = *t;
  s->B = 2, s->NH = 3, s->HD = 8, s->C = s->NH * s->HD;
  const int B = s->B, C = s->C, HD = s->HD, Tq = t->Tq, Tk = t->Tk;
  zt_attention_desc *a = &s->a;
  *a = (zt_attention_desc){.B = B, .Tq = Tq, .Tk = Tk, .NH = s->NH, .HD = HD, .scale = 1.0f / sqrtf((float)HD),
                           .mask = t->causal ? ZT_ATTN_CAUSAL : ZT_ATTN_NONE, .head0 = 2, .chunk = t->chunk};
  if (t->fused) { /* self-attention only (Tq == Tk) */
    a->ld_q = a->ld_kv = 3 * C, a->hs_q = a->hs_k = a->hs_v = 3 * HD;
    s->nbuf = 1, s->size[0] = (size_t)B * Tq * 3 * C, s->off[0] = 0, s->off[1] = HD, s->off[2] = 2 * HD;
  } else {
    a->ld_q = C + 5, a->ld_kv = C + 3, a->hs_q = a->hs_k = a->hs_v = HD;
    s->nbuf = 3, s->size[0] = (size_t)B * Tq * a->ld_q, s->size[1] = s->size[2] = (size_t)B * Tk * a->ld_kv;
  }
  if (t->drop) a->dropout = (zt_dropout){.p = 0.1f, .seed = 1234, .site = 7, .first_sample = 5};
  tu_rng r = {seed};
  for (int i = 0; i < s->nbuf; i++) {
    s->x[i] = tu_falloc(s->size[i]);
    tu_fill(&r, s->x[i], s->size[i], -1.5f, 1.5f);
  }
  s->G = tu_falloc((size_t)B * Tq * C);
  tu_fill(&r, s->G, (size_t)B * Tq * C, -1.0f, 1.0f);
  if (t->pad) { /* sample 0: the last 3 keys; sample 1: keys 0, 1 and 6 (causal rows 0 and 1 then see nothing) */
    s->padv = calloc((size_t)B * Tk, 1);
    for (int j = Tk - 3; j < Tk; j++) s->padv[j] = 1;
    s->padv[Tk + 0] = s->padv[Tk + 1] = s->padv[Tk + 6] = 1;
    a->key_padding = s->padv;
  }
  if (t->kstart) { /* sample 0: documents from 0, 5, 9; sample 1: documents from 0, 7, and row 3 sees no key */
    s->starts = malloc((size_t)B * Tq * sizeof(int32_t));
    for (int i = 0; i < Tq; i++) {
      s->starts[i] = i >= 9 ? 9 : (i >= 5 ? 5 : 0);
      s->starts[Tq + i] = i >= 7 ? 7 : 0;
    }
    if (Tq > 3) s->starts[Tq + 3] = Tk;
    a->key_start = s->starts;
  }
}

static void teardown(ch_setup *s) {
  for (int i = 0; i < s->nbuf; i++) free(s->x[i]);
  free(s->G);
  free(s->padv);
  free(s->starts);
}

static const float *view(const ch_setup *s, int x) { return s->x[bufof(s, x)] + s->off[x]; }

/* max |got - want| <= TOL * max(1, max|want|), NaN matching NaN (untouched padding) and nothing else. */
static int cmp(const char *name, const float *got, const float *want, size_t n) {
  double scale = 1.0, worst = 0.0;
  size_t wi = 0, bad = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(want[i])) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; i++) {
    if (isnan(want[i]) || isnan(got[i])) { bad += isnan(want[i]) != isnan(got[i]); continue; }
    double e = fabs((double)got[i] - want[i]);
    if (e > worst) worst = e, wi = i;
  }
  return tu_check(bad == 0 && worst <= TOL * scale, name, "worst %.3g at [%zu] (got %.9g want %.9g), tol %.3g, %zu NaN "
                  "mismatches of %zu", worst, wi, got[wi], want[wi], TOL * scale, bad, n);
}

/* Whether row i of sample b sees key j (the dense kernel's masks). */
static int visible(const zt_attention_desc *a, int b, int i, int j) {
  if (a->mask == ZT_ATTN_CAUSAL && j > i) return 0;
  if (a->key_start && j < a->key_start[(size_t)b * a->Tq + i]) return 0;
  return !(a->key_padding && a->key_padding[(size_t)b * a->Tk + j]);
}

/* The saved log-sum-exps against double precision, and zeros in the outputs of rows with no visible key. */
static void check_lse(const ch_setup *s, const char *cname, const float *lse, const float *out) {
  const zt_attention_desc *a = &s->a;
  const float *q = view(s, 0), *k = view(s, 1);
  double worst = 0.0;
  size_t bad_empty = 0, empty = 0;
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++)
      for (int i = 0; i < a->Tq; i++) {
        const float got = lse[((size_t)b * a->NH + h) * a->Tq + i];
        double m = -INFINITY, sum = 0.0, sc[64];
        for (int j = 0; j < a->Tk; j++) {
          sc[j] = -INFINITY;
          if (!visible(a, b, i, j)) continue;
          double d = 0.0;
          for (int e = 0; e < a->HD; e++)
            d += (double)q[((size_t)b * a->Tq + i) * a->ld_q + (size_t)h * a->hs_q + e] *
                 k[((size_t)b * a->Tk + j) * a->ld_kv + (size_t)h * a->hs_k + e];
          sc[j] = d * a->scale;
          m = fmax(m, sc[j]);
        }
        if (m == -INFINITY) {
          empty++;
          bad_empty += got != -INFINITY;
          for (int e = 0; e < a->HD; e++) bad_empty += out[((size_t)b * a->Tq + i) * s->C + (size_t)h * a->HD + e] != 0;
          continue;
        }
        for (int j = 0; j < a->Tk; j++)
          if (sc[j] != -INFINITY) sum += exp(sc[j] - m);
        const double e = isfinite(got) ? fabs(got - (m + log(sum))) : INFINITY;
        worst = fmax(worst, e);
      }
  char name[160];
  snprintf(name, sizeof name, "chunked_%s_lse", cname);
  tu_check(worst <= 1e-5, name, "worst |lse - double| %.3g", worst);
  if (empty) {
    snprintf(name, sizeof name, "chunked_%s_empty_rows_zero", cname);
    tu_check(bad_empty == 0, name, "%zu of %zu rows with no visible key: lse not -inf or output nonzero", bad_empty,
             empty);
  }
}

/* One case: dense and chunked forward + backward on the same inputs, compared. */
static void run_case(const ch_case *t, uint64_t seed) {
  ch_setup s;
  setup(&s, t, seed);
  const zt_attention_desc *ac = &s.a;
  zt_attention_desc ad = *ac;
  ad.chunk = 0;
  char cname[128], name[160];
  snprintf(cname, sizeof cname, "T%dx%d_%s%s%s%s_%s_chunk%d", t->Tq, t->Tk, t->causal ? "causal" : "none",
           t->pad ? "_pad" : "", t->kstart ? "_kstart" : "", t->drop ? "_drop" : "", t->fused ? "fused" : "separate",
           t->chunk);
  const size_t no = (size_t)s.B * t->Tq * s.C, nl = (size_t)s.B * s.NH * t->Tq;
  const size_t ns = zt_attention_saved_floats(ac), nsc = zt_attention_scratch_floats(ac);
  const int bq = t->chunk < t->Tq ? t->chunk : t->Tq, bk = t->chunk < t->Tk ? t->chunk : t->Tk;
  snprintf(name, sizeof name, "chunked_%s_sizes", cname);
  tu_check(ns == nl && nsc == (size_t)omp_get_max_threads() * (2 * (size_t)bq * bk + bq), name,
           "saved %zu (want %zu), scratch %zu", ns, nl, nsc);

  const float *q = view(&s, 0), *k = view(&s, 1), *v = view(&s, 2);
  float *outd = tu_falloc(no), *outc = tu_falloc(no), *outc1 = tu_falloc(no);
  float *probs = tu_falloc(zt_attention_saved_floats(&ad)), *lse = tu_falloc(ns), *lse1 = tu_falloc(ns);
  float *sd = tu_falloc(zt_attention_scratch_floats(&ad)), *sc = tu_falloc(nsc);
  tu_fill_nan(outc, no);
  tu_fill_nan(lse, ns);
  zt_attention_forward(outd, probs, q, k, v, &ad);
  zt_attention_forward(outc, lse, q, k, v, ac);
  snprintf(name, sizeof name, "chunked_%s_forward", cname);
  cmp(name, outc, outd, no);
  check_lse(&s, cname, lse, outc);

  float *gd[3], *gc[3], *gc1[3];
  for (int i = 0; i < s.nbuf; i++) {
    gd[i] = tu_falloc(s.size[i]), gc[i] = tu_falloc(s.size[i]), gc1[i] = tu_falloc(s.size[i]);
    tu_fill_nan(gd[i], s.size[i]), tu_fill_nan(gc[i], s.size[i]), tu_fill_nan(gc1[i], s.size[i]);
  }
  tu_fill_nan(sc, nsc);
  zt_attention_backward(gd[bufof(&s, 0)] + s.off[0], gd[bufof(&s, 1)] + s.off[1], gd[bufof(&s, 2)] + s.off[2], s.G,
                        probs, q, k, v, &ad, sd);
  zt_attention_chunked_backward(gc[bufof(&s, 0)] + s.off[0], gc[bufof(&s, 1)] + s.off[1], gc[bufof(&s, 2)] + s.off[2],
                                s.G, outc, lse, q, k, v, ac, sc);
  static const char *bn[3] = {"dq", "dk", "dv"};
  for (int i = 0; i < s.nbuf; i++) { /* the separate buffers' padding columns stay NaN in both */
    snprintf(name, sizeof name, "chunked_%s_%s", cname, t->fused ? "dqkv" : bn[i]);
    cmp(name, gc[i], gd[i], s.size[i]);
  }

  /* one thread: the same bits (one task per (sample, head), blocks in a fixed order) */
  const int nt = omp_get_max_threads();
  omp_set_num_threads(1);
  zt_attention_forward(outc1, lse1, q, k, v, ac);
  float *sc1 = tu_falloc(zt_attention_scratch_floats(ac));
  zt_attention_chunked_backward(gc1[bufof(&s, 0)] + s.off[0], gc1[bufof(&s, 1)] + s.off[1],
                                gc1[bufof(&s, 2)] + s.off[2], s.G, outc1, lse1, q, k, v, ac, sc1);
  omp_set_num_threads(nt);
  int same = memcmp(outc1, outc, no * sizeof(float)) == 0 && memcmp(lse1, lse, ns * sizeof(float)) == 0;
  for (int i = 0; i < s.nbuf; i++)
    for (size_t e = 0; e < s.size[i]; e++) same &= isnan(gc[i][e]) ? isnan(gc1[i][e]) : gc1[i][e] == gc[i][e];
  snprintf(name, sizeof name, "chunked_%s_one_thread_bitwise", cname);
  tu_check(same, name, "results differ with %d thread(s) and with 1", nt);

  for (int i = 0; i < s.nbuf; i++) { free(gd[i]); free(gc[i]); free(gc1[i]); }
  free(outd); free(outc); free(outc1); free(probs); free(lse); free(lse1); free(sd); free(sc); free(sc1);
  teardown(&s);
}

/* A longer causal self-attention through the CPU backend (attention_backward hands it the forward output), against
 * the dense kernel through the same entry points. */
static void run_backend(void) {
  const zt_backend *be = zt_backend_cpu();
  ch_case t = {.Tq = 64, .Tk = 64, .causal = 1, .drop = 1, .fused = 1, .chunk = 16};
  ch_setup s;
  setup(&s, &t, 4242);
  zt_attention_desc ad = s.a;
  ad.chunk = 0;
  const size_t no = (size_t)s.B * t.Tq * s.C, n = s.size[0];
  const float *q = view(&s, 0), *k = view(&s, 1), *v = view(&s, 2);
  float *outd = tu_falloc(no), *outc = tu_falloc(no), *gd = tu_falloc(n), *gc = tu_falloc(n);
  float *sd = tu_falloc(be->attention_saved_floats(&ad)), *sc = tu_falloc(be->attention_saved_floats(&s.a));
  float *wd = tu_falloc(be->attention_scratch_floats(&ad)), *wc = tu_falloc(be->attention_scratch_floats(&s.a));
  be->attention_forward(ZT_DTYPE_FP32, outd, sd, q, k, v, &ad);
  be->attention_forward(ZT_DTYPE_FP32, outc, sc, q, k, v, &s.a);
  be->attention_backward(ZT_DTYPE_FP32, gd, gd + s.HD, gd + 2 * s.HD, s.G, outd, sd, q, k, v, &ad, wd);
  be->attention_backward(ZT_DTYPE_FP32, gc, gc + s.HD, gc + 2 * s.HD, s.G, outc, sc, q, k, v, &s.a, wc);
  cmp("chunked_backend_T64_causal_drop_chunk16_forward", outc, outd, no);
  cmp("chunked_backend_T64_causal_drop_chunk16_dqkv", gc, gd, n);
  tu_check(be->attention_saved_floats(&s.a) == (size_t)s.B * s.NH * t.Tq, "chunked_backend_saved_floats", "%zu",
           be->attention_saved_floats(&s.a));
  free(outd); free(outc); free(gd); free(gc); free(sd); free(sc); free(wd); free(wc);
  teardown(&s);
}

/* Scratch does not grow with the sequence: T = 65536 with chunk 64. */
static void check_scratch_bound(void) {
  zt_attention_desc a = {.B = 1, .Tq = 65536, .Tk = 65536, .NH = 1, .HD = 64, .chunk = 64};
  size_t want = (size_t)omp_get_max_threads() * (2 * 64 * 64 + 64);
  tu_check(zt_attention_scratch_floats(&a) == want && zt_attention_saved_floats(&a) == 65536,
           "chunked_long_sequence_sizes", "scratch %zu (want %zu), saved %zu", zt_attention_scratch_floats(&a), want,
           zt_attention_saved_floats(&a));
}

static void fatal_layout(void *ctx) {
  (void)ctx;
  zt_attn_layout l = {.block = 4, .nb = 4, .heads = 1};
  zt_attention_desc a = {.B = 1, .Tq = 16, .Tk = 16, .NH = 1, .HD = 4, .chunk = 4, .layout = &l};
  zt_attention_saved_floats(&a);
}
static void fatal_negative(void *ctx) {
  (void)ctx;
  zt_attention_desc a = {.B = 1, .Tq = 16, .Tk = 16, .NH = 1, .HD = 4, .chunk = -2};
  zt_attention_scratch_floats(&a);
}
static void fatal_dense_backward(void *ctx) {
  (void)ctx;
  float x[64] = {0};
  zt_attention_desc a = {.B = 1, .Tq = 2, .Tk = 2, .NH = 1, .HD = 4, .ld_q = 4, .ld_kv = 4, .chunk = 1};
  zt_attention_backward(x, x + 8, x + 16, x + 24, x + 32, x + 40, x + 48, x + 56, &a, x);
}
static void fatal_chunked_backward_dense(void *ctx) {
  (void)ctx;
  float x[64] = {0};
  zt_attention_desc a = {.B = 1, .Tq = 2, .Tk = 2, .NH = 1, .HD = 4, .ld_q = 4, .ld_kv = 4};
  zt_attention_chunked_backward(x, x + 8, x + 16, x + 24, x + 28, x + 32, x + 40, x + 48, x + 56, &a, x);
}

int main(void) {
  static const int chunks[] = {1, 3, 4, 13, 20};
  uint64_t seed = 1;
  for (int c = 0; c < 5; c++)
    for (int causal = 0; causal < 2; causal++)
      for (int fused = 0; fused < 2; fused++)
        for (int m = 0; m < 4; m++) { /* plain, key_padding, key_start, all of them with dropout */
          ch_case t = {.Tq = 13, .Tk = 13, .causal = causal, .fused = fused, .chunk = chunks[c],
                       .pad = m == 1 || m == 3, .kstart = m == 2 || m == 3, .drop = m == 3};
          run_case(&t, seed++);
          if (m == 0) { /* and dropout alone */
            t.drop = 1;
            run_case(&t, seed++);
          }
        }
  /* cross-attention shapes: fewer and more queries than keys (blocks of each side cut differently) */
  for (int c = 0; c < 5; c++) {
    ch_case t = {.Tq = 9, .Tk = 13, .pad = 1, .drop = 1, .chunk = chunks[c]};
    run_case(&t, seed++);
    t.Tq = 13, t.Tk = 5, t.pad = 0, t.kstart = 1;
    run_case(&t, seed++);
  }
  run_backend();
  check_scratch_bound();
  tu_expect_fatal("chunked_with_layout_refused", fatal_layout, NULL, "does not combine with a block-sparse layout");
  tu_expect_fatal("chunked_negative_refused", fatal_negative, NULL, "chunk -2");
  tu_expect_fatal("chunked_dense_backward_refused", fatal_dense_backward, NULL, "zt_attention_chunked_backward");
  tu_expect_fatal("chunked_backward_of_dense_refused", fatal_chunked_backward_dense, NULL, "with chunk 0");
  return tu_finish();
}
