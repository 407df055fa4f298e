/* The layer spec's paths GPT does not take (models/transformer/transformer.h), on the CPU backend in fp32: a T5
 * decoder layer (causal self-attention, then cross-attention over an encoder output of another length with a key
 * padding) and a bidirectional layer with a key padding mask (BERT, the T5 encoder), each built by hand from the
 * zt_block_* functions over a two-pass memory plan. Checks: Megatron's parameter names, shapes, order and
 * tensor-parallel split dimensions; central finite differences (the loss sum(out * w) accumulated in double) of
 * every parameter's gradient, the input's and the encoder output's; padded keys change no output and get exactly
 * zero gradient; the encoder gradient accumulates over backward calls while the input gradient is written; the
 * causal layer ignores later positions and the bidirectional one sees them; dropout keyed by site (the layer equals
 * a reference composed from the CPU ops with its documented sites, bit for bit, and the cross-attention's masks are
 * its own), reproducible, keyed by sample, and the backward uses the forward's masks; a forward-only GPT plans no
 * gradients or optimizer state and computes the trainable model's eval loss bit for bit. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "models/gpt/gpt.h"
#include "models/transformer/transformer.h"
#include "runtime/ops/ops.h"
#include "testutil.h"

enum { B = 2, T = 8, C = 16, NH = 2, HD = 8, FFN = 64, TK_MAX = 11 };
#define NX ((size_t)B * T * C) /* the layer's input and output [B, T, C] */
#define EPS 1e-5f

/* Key paddings: sample 0 pads its tail, sample 1 positions inside the sequence too (not only a suffix); the encoder's
 * likewise (layer_build: the last two positions of sample 0, positions 0 and 3 of sample 1). */
static const uint8_t k_pad[B * T] = {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1};

static const zt_layer_spec k_decoder = {.self_mask = ZT_ATTN_CAUSAL, .cross_attention = 1, .mlp = ZT_MLP_DENSE};
static const zt_layer_spec k_bidir = {.self_mask = ZT_ATTN_NONE, .cross_attention = 0, .mlp = ZT_MLP_DENSE};

/* One layer on the CPU backend with everything it reads and writes in one memory plan. */
typedef struct {
  zt_layer_spec spec;
  const char *prefix;
  zt_tp tp;
  zt_block_config cfg;
  zt_param_table table;
  zt_memplan plan;
  zt_block blk;
  zt_block_scratch s;
  float *params, *grads; /* [numel] */
  float *x, *out, *dres; /* [B, T, C] */
  int tk;                /* encoder positions (cross only) */
  size_t nm;             /* B * tk * C */
  float *mem, *dmem;     /* [B, tk, C]: the encoder output and where its gradient accumulates (cross only) */
  uint8_t mem_pad[B * TK_MAX]; /* [B, tk] the encoder's key padding */
  float w[NX];           /* the loss is sum(out * w) */
  zt_pass pass;
} layer;

/* The same calls in the sizing and the carving pass. */
static void plan_layer(layer *L) {
  zt_memplan *p = &L->plan;
  const int cross = L->spec.cross_attention;
  L->params = zt_memplan_floats(p, ZT_MEM_PARAMS, L->table.numel);
  L->grads = zt_memplan_floats(p, ZT_MEM_GRADS, L->table.numel);
  L->x = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, NX);
  L->out = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, NX);
  L->dres = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, NX);
  L->mem = cross ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, L->nm) : NULL;
  L->dmem = cross ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, L->nm) : NULL;
  zt_block_plan_acts(&L->blk, p, &L->cfg, B, T, L->tk);
  zt_block_plan_scratch(&L->s, p, &L->spec, &L->cfg, &L->blk.ffn, 1, B, T, L->tk);
}

/* Builds the layer (number layer_no: its dropout sites; tk encoder positions) with attention and hidden dropout p,
 * and draws its parameters, input, encoder output and loss weights from seed: linear weights U(-a, a) with
 * a = sqrt(3 / fan_in) (unit-variance outputs, so attention scores and GELU inputs are O(1) and every path carries
 * gradient), norm weights 1 + U(-0.3, 0.3), biases U(-0.2, 0.2). */
static void layer_build(layer *L, const zt_layer_spec *spec, const char *prefix, int layer_no, int tk, float p,
                        uint64_t seed) {
  memset(L, 0, sizeof *L);
  L->spec = *spec;
  L->prefix = prefix;
  L->tk = tk;
  L->nm = (size_t)B * tk * C;
  for (int j = 0; j < tk; j++) L->mem_pad[j] = j >= tk - 2, L->mem_pad[tk + j] = j == 0 || j == 3;
  L->tp = (zt_tp){.size = 1, .be = zt_backend_cpu(), .dt = ZT_DTYPE_FP32};
  L->cfg = (zt_block_config){.C = C, .NH = NH, .HD = HD, .FFN = FFN, .ln_eps = EPS, .attn_dropout = p,
                             .hidden_dropout = p, .init_std = 0.02f, .out_init_std = 0.01f, .tp = &L->tp};
  L->blk.spec = *spec;
  L->blk.layer = layer_no;
  L->blk.ffn = zt_ffn_make(spec->mlp);
  zt_param_table_init(&L->table);
  zt_block_register(&L->table, prefix, spec, &L->cfg, &L->blk.ffn);
  plan_layer(L); /* sizing */
  zt_memplan_allocate(&L->plan);
  plan_layer(L); /* carving */
  zt_block_bind(&L->blk, &L->table, prefix, L->params, L->grads, sizeof(float));
  tu_rng r = {seed};
  for (int i = 0; i < L->table.count; i++) {
    const zt_param *q = &L->table.params[i];
    float *v = L->params + q->offset;
    if (q->ndim == 2) {
      const float a = sqrtf(3.0f / (float)q->shape[1]);
      tu_fill(&r, v, q->numel, -a, a);
    } else if (q->init == ZT_INIT_ONES) {
      tu_fill(&r, v, q->numel, 0.7f, 1.3f);
    } else {
      tu_fill(&r, v, q->numel, -0.2f, 0.2f);
    }
  }
  tu_fill(&r, L->x, NX, -1.5f, 1.5f);
  if (L->mem) tu_fill(&r, L->mem, L->nm, -1.5f, 1.5f);
  tu_fill(&r, L->w, NX, -1.0f, 1.0f);
  L->pass = (zt_pass){.B = B, .T = T, .first_sample = 10, .seed = 7, .training = p > 0.0f};
}

static void layer_free(layer *L) {
  zt_ffn_destroy(&L->blk.ffn);
  zt_param_table_free(&L->table);
  zt_memplan_free(&L->plan);
}

static zt_cross_input cross_of(const layer *L) {
  return (zt_cross_input){.x = L->mem, .Tk = L->tk, .padding = L->mem_pad, .grad = L->dmem};
}

/* out = layer(x); returns sum(out * w) in double. */
static double forward(layer *L) {
  const zt_cross_input m = cross_of(L);
  zt_block_forward(&L->blk, L->out, L->x, L->spec.cross_attention ? &m : NULL, &L->cfg, &L->pass, &L->s);
  double s = 0.0;
  for (size_t i = 0; i < NX; i++) s += (double)L->out[i] * L->w[i];
  return s;
}

/* The backward of the last forward with d(out) = w: dres = d(x), parameter gradients and dmem accumulate. */
static void backward(layer *L) {
  const zt_cross_input m = cross_of(L);
  memcpy(L->dres, L->w, sizeof L->w);
  zt_block_backward(&L->blk, L->dres, L->x, L->spec.cross_attention ? &m : NULL, &L->cfg, &L->pass, &L->s, 0.0f);
}

/* The analytic gradients from zero: parameters into g[numel], input into dx[NX], encoder output into dm[nm]. */
static void gradients(layer *L, float *g, float *dx, float *dm) {
  memset(L->grads, 0, L->table.numel * sizeof(float));
  if (L->dmem) memset(L->dmem, 0, L->nm * sizeof(float));
  forward(L);
  backward(L);
  memcpy(g, L->grads, L->table.numel * sizeof(float));
  memcpy(dx, L->dres, NX * sizeof(float));
  if (dm) memcpy(dm, L->dmem, L->nm * sizeof(float));
}

/* Indices to difference in a tensor of n elements: all of them up to `most`, else its first and last element and
 * most - 2 drawn at random. */
static size_t sample_indices(size_t *idx, size_t n, size_t most, tu_rng *r) {
  if (n <= most) {
    for (size_t i = 0; i < n; i++) idx[i] = i;
    return n;
  }
  idx[0] = 0;
  idx[1] = n - 1;
  for (size_t k = 2; k < most; k++) idx[k] = tu_next(r) % n;
  return most;
}

/* Central differences of the loss in v[idx[k]] (step 1e-3 max(1, |v|), the difference of the two rounded points
 * as the denominator) against grad, a tensor of n elements: passes when every |fd - grad| <= rtol * max|grad|.
 * The differences run on one thread: thousands of tiny forwards whose OpenMP barriers would otherwise cost more
 * than their arithmetic, and stall whenever another process holds a core. */
static void fd_check(const char *what, layer *L, float *v, const float *grad, size_t n, const size_t *idx, size_t k,
                     double rtol) {
  double scale = 0.0, worst = 0.0, wfd = 0.0;
  size_t wi = idx[0];
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)grad[i]));
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  for (size_t j = 0; j < k; j++) {
    const size_t i = idx[j];
    const float v0 = v[i], h = 1e-3f * fmaxf(1.0f, fabsf(v0)), vp = v0 + h, vm = v0 - h;
    v[i] = vp;
    const double lp = forward(L);
    v[i] = vm;
    const double lm = forward(L);
    v[i] = v0;
    const double fd = (lp - lm) / ((double)vp - (double)vm), e = fabs(fd - (double)grad[i]);
    if (e > worst) worst = e, wi = i, wfd = fd;
  }
  omp_set_num_threads(threads);
  char name[256];
  snprintf(name, sizeof name, "%s (%zu of %zu elements, worst %.1e of max %.3g)", what, k, n,
           scale > 0 ? worst / scale : worst, scale);
  tu_check(scale > 0 && worst <= rtol * scale, name,
           "element %zu: finite difference %.7g, gradient %.7g, tolerance %.3g", wi, wfd, (double)grad[wi],
           rtol * scale);
}

/* Finite differences of every parameter tensor (up to `most` elements each), the input and the encoder output. */
static void fd_all(const char *tag, layer *L, const float *g, const float *dx, const float *dm, size_t most,
                   double rtol) {
  const size_t n = NX > L->nm ? NX : L->nm;
  size_t *idx = malloc((n > most ? n : most) * sizeof(size_t));
  tu_rng r = {99};
  char what[256];
  for (int i = 0; i < L->table.count; i++) {
    const zt_param *q = &L->table.params[i];
    const size_t k = sample_indices(idx, q->numel, most, &r);
    snprintf(what, sizeof what, "%s: d %s", tag, q->name + strlen(L->prefix) + 1);
    fd_check(what, L, L->params + q->offset, g + q->offset, q->numel, idx, k, rtol);
  }
  for (size_t i = 0; i < n; i++) idx[i] = i;
  snprintf(what, sizeof what, "%s: d input", tag);
  fd_check(what, L, L->x, dx, NX, idx, NX, rtol);
  if (dm) {
    snprintf(what, sizeof what, "%s: d encoder output", tag);
    fd_check(what, L, L->mem, dm, L->nm, idx, L->nm, rtol);
  }
  free(idx);
}

/* ---- (a) names ------------------------------------------------------------------------------------------------ */

typedef struct {
  const char *name;
  int ndim;
  int64_t d0, d1;
  int split; /* Megatron's tensor-parallel split: 0 column-parallel, 1 row-parallel, -1 replicated */
} expect_param;

static const expect_param k_decoder_params[] = {
    {"input_layernorm.weight", 1, C, 0, -1},
    {"input_layernorm.bias", 1, C, 0, -1},
    {"self_attention.query_key_value.weight", 2, 3 * C, C, 0},
    {"self_attention.query_key_value.bias", 1, 3 * C, 0, 0},
    {"self_attention.dense.weight", 2, C, C, 1},
    {"self_attention.dense.bias", 1, C, 0, -1},
    {"post_attention_layernorm.weight", 1, C, 0, -1},
    {"post_attention_layernorm.bias", 1, C, 0, -1},
    {"inter_attention.query.weight", 2, C, C, 0},
    {"inter_attention.query.bias", 1, C, 0, 0},
    {"inter_attention.key_value.weight", 2, 2 * C, C, 0},
    {"inter_attention.key_value.bias", 1, 2 * C, 0, 0},
    {"inter_attention.dense.weight", 2, C, C, 1},
    {"inter_attention.dense.bias", 1, C, 0, -1},
    {"post_inter_attention_layernorm.weight", 1, C, 0, -1},
    {"post_inter_attention_layernorm.bias", 1, C, 0, -1},
    {"mlp.dense_h_to_4h.weight", 2, FFN, C, 0},
    {"mlp.dense_h_to_4h.bias", 1, FFN, 0, 0},
    {"mlp.dense_4h_to_h.weight", 2, C, FFN, 1},
    {"mlp.dense_4h_to_h.bias", 1, C, 0, -1},
};

/* The table holds exactly k_decoder_params (less the inter_attention entries without cross-attention), in order,
 * with their shapes, split dimensions, weight decay and init. */
static void check_names(const char *tag, const layer *L) {
  const int cross = L->spec.cross_attention, n = (int)(sizeof k_decoder_params / sizeof k_decoder_params[0]);
  int k = 0;
  for (int i = 0; i < n; i++) {
    const expect_param *e = &k_decoder_params[i];
    const int inter = strstr(e->name, "inter_attention") != NULL;
    if (inter && !cross) continue;
    char want[160], name[256];
    snprintf(want, sizeof want, "%s.%s", L->prefix, e->name);
    snprintf(name, sizeof name, "%s: parameter %d is %s", tag, k, want);
    if (k >= L->table.count) {
      tu_check(0, name, "the table has only %d parameters", L->table.count);
      k++;
      continue;
    }
    const zt_param *p = &L->table.params[k++];
    const int is_weight = e->ndim == 2, is_norm = strstr(e->name, "layernorm") != NULL;
    tu_check(!strcmp(p->name, want) && p->ndim == e->ndim && p->shape[0] == e->d0 &&
                 (e->ndim == 1 || p->shape[1] == e->d1) && p->tp_split_dim == e->split &&
                 p->no_weight_decay == !is_weight && p->init == (is_norm && strstr(e->name, ".weight") ? ZT_INIT_ONES
                                                                : is_weight ? ZT_INIT_NORMAL : ZT_INIT_ZEROS),
             name, "got %s, ndim %d, shape [%lld, %lld], split %d, no_weight_decay %d, init %d", p->name, p->ndim,
             (long long)p->shape[0], (long long)(p->ndim > 1 ? p->shape[1] : 0), p->tp_split_dim, p->no_weight_decay,
             (int)p->init);
  }
  tu_check(L->table.count == k, tag, "%d parameters, expected %d", L->table.count, k);
}

/* ---- (a) the decoder layer ---------------------------------------------------------------------------------- */

static int rows_equal(const float *a, const float *b, size_t row0, size_t rows) {
  return memcmp(a + row0 * C, b + row0 * C, rows * C * sizeof(float)) == 0;
}

/* "<tag>: what" in name[] */
#define TAG(what) (snprintf(name, sizeof name, "%s: %s", tag, what), name)

/* The decoder layer with tk encoder positions (tag names the case; names: check the parameter names too). */
static void test_decoder(const char *tag, int tk, int names) {
  layer L;
  char name[256];
  layer_build(&L, &k_decoder, "language_model.decoder.layers.0", 0, tk, 0.0f, 1);
  if (names) check_names("decoder layer names", &L);
  const size_t NM = L.nm; /* the encoder output's elements */
  const size_t P = L.table.numel;
  float *g = tu_falloc(P), *dx = tu_falloc(NX), *dm = tu_falloc(NM), *out0 = tu_falloc(NX);
  gradients(&L, g, dx, dm);
  memcpy(out0, L.out, NX * sizeof(float));

  /* a second backward adds the same encoder (and parameter) gradients; the input gradient is written, not added */
  backward(&L);
  size_t bad_m = 0, bad_g = 0;
  for (size_t i = 0; i < NM; i++) bad_m += L.dmem[i] != 2.0f * dm[i];
  for (size_t i = 0; i < P; i++) bad_g += L.grads[i] != 2.0f * g[i];
  tu_check(bad_m == 0, TAG("a second backward adds its encoder-output gradient (zt_cross_input.grad += )"),
           "%zu of %zu elements are not twice the first backward's", bad_m, NM);
  tu_check(bad_g == 0, TAG("a second backward adds its parameter gradients"), "%zu of %zu differ", bad_g, P);
  tu_cmp_exact(TAG("a second backward writes the same input gradient (=)"), L.dres, dx, NX);

  /* padded encoder positions: exactly zero gradient, and their values change nothing */
  size_t nonzero = 0, padded = 0;
  for (int b = 0; b < B; b++)
    for (int j = 0; j < tk; j++)
      if (L.mem_pad[b * tk + j])
        for (int c = 0; c < C; c++) padded++, nonzero += dm[((size_t)b * tk + j) * C + c] != 0.0f;
  tu_check(padded > 0 && nonzero == 0, TAG("padded encoder positions get exactly zero gradient"),
           "%zu of %zu elements are not 0", nonzero, padded);
  float *save = tu_falloc(NM);
  memcpy(save, L.mem, NM * sizeof(float));
  for (int b = 0; b < B; b++)
    for (int j = 0; j < tk; j++)
      if (L.mem_pad[b * tk + j])
        for (int c = 0; c < C; c++) L.mem[((size_t)b * tk + j) * C + c] += 3.0f + 0.25f * c;
  forward(&L);
  tu_cmp_exact(TAG("the output does not depend on padded encoder positions (bitwise)"), L.out, out0, NX);
  memcpy(L.mem, save, NM * sizeof(float));
  /* ...while an unpadded one changes every query of its sample (cross-attention sees all encoder positions) */
  L.mem[(size_t)(1 * tk + 5) * C + 3] += 0.5f;
  forward(&L);
  int all_changed = 1;
  for (int t = 0; t < T; t++) all_changed &= !rows_equal(L.out, out0, (size_t)(B - 1) * T + t, 1);
  tu_check(all_changed && rows_equal(L.out, out0, 0, T),
           TAG("an unpadded encoder position reaches every query of its sample and no other sample"),
           "changed every row of sample 1: %d", all_changed);
  memcpy(L.mem, save, NM * sizeof(float));
  /* causal self-attention: a later position leaves the earlier ones alone */
  float *x0 = tu_falloc(NX);
  memcpy(x0, L.x, NX * sizeof(float));
  L.x[(size_t)5 * C + 2] += 0.5f;
  forward(&L);
  tu_check(rows_equal(L.out, out0, 0, 5) && !rows_equal(L.out, out0, 5, 1),
           TAG("causal self-attention (position 5 changes outputs 5.. only)"), "%s", "earlier rows changed");
  memcpy(L.x, x0, NX * sizeof(float));
  forward(&L);
  tu_cmp_exact(TAG("restored input gives the first output again"), L.out, out0, NX);

  fd_all(TAG("finite differences"), &L, g, dx, dm, 24, 1e-2);
  free(g), free(dx), free(dm), free(out0), free(save), free(x0);
  layer_free(&L);
}

/* ---- (b) the bidirectional layer with a key padding ---------------------------------------------------------- */

static void test_bidirectional(void) {
  layer L;
  layer_build(&L, &k_bidir, "language_model.encoder.layers.0", 0, 0, 0.0f, 2);
  L.pass.key_padding = k_pad;
  check_names("bidirectional layer names", &L);
  const size_t P = L.table.numel;
  float *g = tu_falloc(P), *dx = tu_falloc(NX), *out0 = tu_falloc(NX), *x0 = tu_falloc(NX);
  gradients(&L, g, dx, NULL);
  memcpy(out0, L.out, NX * sizeof(float));
  memcpy(x0, L.x, NX * sizeof(float));
  /* each padded position: no other query's output depends on its value (its own output does: the residual) */
  for (int n = 0; n < B * T; n++) {
    if (!k_pad[n]) continue;
    for (int c = 0; c < C; c++) L.x[(size_t)n * C + c] += 2.0f - 0.125f * c;
    forward(&L);
    char name[160];
    snprintf(name, sizeof name, "bidirectional: no other query depends on padded position %d of sample %d (bitwise)",
             n % T, n / T);
    tu_check(rows_equal(L.out, out0, 0, (size_t)n) && rows_equal(L.out, out0, (size_t)n + 1, NX / C - n - 1) &&
                 !rows_equal(L.out, out0, (size_t)n, 1),
             name, "%s", "another row changed, or its own did not");
    memcpy(L.x, x0, NX * sizeof(float));
  }
  /* a query sees the keys after it: position 5 of sample 0 (unpadded) changes output 0 */
  L.x[(size_t)5 * C + 1] += 0.5f;
  forward(&L);
  tu_check(!rows_equal(L.out, out0, 0, 1) && rows_equal(L.out, out0, T, T),
           "bidirectional: query 0 sees key 5 (a later unpadded position), the other sample does not",
           "%s", "row 0 unchanged or sample 1 changed");
  memcpy(L.x, x0, NX * sizeof(float));
  /* the loss ignores the padded outputs: then the padded inputs' gradient is exactly 0 */
  float w0[NX];
  memcpy(w0, L.w, sizeof w0);
  for (int n = 0; n < B * T; n++)
    if (k_pad[n]) memset(L.w + (size_t)n * C, 0, C * sizeof(float));
  forward(&L);
  backward(&L);
  size_t nonzero = 0, padded = 0;
  for (int n = 0; n < B * T; n++)
    if (k_pad[n])
      for (int c = 0; c < C; c++) padded++, nonzero += L.dres[(size_t)n * C + c] != 0.0f;
  tu_check(nonzero == 0, "bidirectional: padded inputs get exactly zero gradient when the loss ignores their outputs",
           "%zu of %zu elements are not 0", nonzero, padded);
  memcpy(L.w, w0, sizeof w0);
  forward(&L);
  tu_cmp_exact("bidirectional: restored input gives the first output again", L.out, out0, NX);
  fd_all("bidirectional FD", &L, g, dx, NULL, 24, 1e-2);
  free(g), free(dx), free(out0), free(x0);
  layer_free(&L);
}

/* ---- (c) dropout keyed by site ------------------------------------------------------------------------------- */

typedef struct {
  uint64_t attn_probs, attn_out, inter_probs, inter_out, mlp_out;
} sites;

static float *param(layer *L, const char *suffix) {
  return zt_param_addr(&L->table, L->params, sizeof(float), L->prefix, suffix);
}

/* The decoder layer composed from the CPU ops (runtime/ops/ops.h) with the given dropout sites: what
 * zt_block_forward computes, written out. */
static void reference_decoder(layer *L, const sites *st, float *out) {
  const int NF = B * T;
  const zt_pass *ps = &L->pass;
  const float pa = ps->training ? L->cfg.attn_dropout : 0.0f, ph = ps->training ? L->cfg.hidden_dropout : 0.0f;
  float *ln = tu_falloc(NX), *ctx = tu_falloc(NX), *tmp = tu_falloc(NX), *res2 = tu_falloc(NX);
  float *res3 = tu_falloc(NX), *qkv = tu_falloc(NX * 3), *kv = tu_falloc(L->nm * 2);
  float *probs = tu_falloc((size_t)B * NH * T * (T > L->tk ? T : L->tk));
  float *fc = tu_falloc((size_t)NF * FFN), *gl = tu_falloc((size_t)NF * FFN);
  float mean[B * T], rstd[B * T];
  zt_layernorm_forward(ln, mean, rstd, L->x, param(L, "input_layernorm.weight"), param(L, "input_layernorm.bias"),
                       NF, C, EPS);
  zt_matmul_forward(qkv, ln, param(L, "self_attention.query_key_value.weight"),
                    param(L, "self_attention.query_key_value.bias"), NF, C, 3 * C);
  zt_attention_desc d = {.B = B, .Tq = T, .Tk = T, .NH = NH, .HD = HD, .ld_q = 3 * C, .hs_q = 3 * HD,
                         .ld_kv = 3 * C, .hs_k = 3 * HD, .hs_v = 3 * HD, .mask = ZT_ATTN_CAUSAL,
                         .key_padding = ps->key_padding, .scale = 1.0f / sqrtf((float)HD),
                         .dropout = {.p = pa, .seed = ps->seed, .site = st->attn_probs,
                                     .first_sample = ps->first_sample}};
  zt_attention_forward(ctx, probs, qkv, qkv + HD, qkv + 2 * HD, &d);
  zt_matmul_forward(tmp, ctx, param(L, "self_attention.dense.weight"), param(L, "self_attention.dense.bias"), NF, C,
                    C);
  zt_dropout hd = {.p = ph, .seed = ps->seed, .site = st->attn_out, .first_sample = ps->first_sample};
  zt_dropout_add_forward(res2, L->x, tmp, B, (size_t)T * C, &hd);
  zt_layernorm_forward(ln, mean, rstd, res2, param(L, "post_attention_layernorm.weight"),
                       param(L, "post_attention_layernorm.bias"), NF, C, EPS);
  zt_matmul_forward(qkv, ln, param(L, "inter_attention.query.weight"), param(L, "inter_attention.query.bias"), NF, C,
                    C);
  zt_matmul_forward(kv, L->mem, param(L, "inter_attention.key_value.weight"),
                    param(L, "inter_attention.key_value.bias"), B * L->tk, C, 2 * C);
  d = (zt_attention_desc){.B = B, .Tq = T, .Tk = L->tk, .NH = NH, .HD = HD, .ld_q = C, .hs_q = HD, .ld_kv = 2 * C,
                          .hs_k = 2 * HD, .hs_v = 2 * HD, .mask = ZT_ATTN_NONE, .key_padding = L->mem_pad,
                          .scale = 1.0f / sqrtf((float)HD),
                          .dropout = {.p = pa, .seed = ps->seed, .site = st->inter_probs,
                                      .first_sample = ps->first_sample}};
  zt_attention_forward(ctx, probs, qkv, kv, kv + HD, &d);
  zt_matmul_forward(tmp, ctx, param(L, "inter_attention.dense.weight"), param(L, "inter_attention.dense.bias"), NF, C,
                    C);
  hd.site = st->inter_out;
  zt_dropout_add_forward(res3, res2, tmp, B, (size_t)T * C, &hd);
  zt_layernorm_forward(ln, mean, rstd, res3, param(L, "post_inter_attention_layernorm.weight"),
                       param(L, "post_inter_attention_layernorm.bias"), NF, C, EPS);
  zt_matmul_forward(fc, ln, param(L, "mlp.dense_h_to_4h.weight"), param(L, "mlp.dense_h_to_4h.bias"), NF, C, FFN);
  zt_gelu_forward(gl, fc, (size_t)NF * FFN);
  zt_matmul_forward(tmp, gl, param(L, "mlp.dense_4h_to_h.weight"), param(L, "mlp.dense_4h_to_h.bias"), NF, FFN, C);
  hd.site = st->mlp_out;
  zt_dropout_add_forward(out, res3, tmp, B, (size_t)T * C, &hd);
  free(ln), free(ctx), free(tmp), free(res2), free(res3), free(qkv), free(kv), free(probs), free(fc), free(gl);
}

static void test_dropout(void) {
  enum { LAYER = 3 };
  layer L;
  layer_build(&L, &k_decoder, "language_model.decoder.layers.3", LAYER, 6, 0.1f, 3);
  float *out0 = tu_falloc(NX), *ref = tu_falloc(NX);
  /* without dropout (eval) the layer is the composition of the ops */
  L.pass.training = 0;
  forward(&L);
  const sites own = {zt_dropout_site(LAYER, ZT_SITE_ATTN_PROBS), zt_dropout_site(LAYER, ZT_SITE_ATTN_OUT),
                     zt_dropout_site(LAYER, ZT_SITE_INTER_PROBS), zt_dropout_site(LAYER, ZT_SITE_INTER_OUT),
                     zt_dropout_site(LAYER, ZT_SITE_MLP_OUT)};
  reference_decoder(&L, &own, ref);
  tu_cmp_exact("decoder eval: the layer equals its composition from the CPU ops (bitwise)", L.out, ref, NX);
  memcpy(out0, L.out, NX * sizeof(float));
  L.pass.training = 1;
  forward(&L);
  tu_check(memcmp(L.out, out0, NX * sizeof(float)) != 0, "dropout: training changes the output", "%s", "it did not");
  memcpy(out0, L.out, NX * sizeof(float));
  forward(&L);
  tu_cmp_exact("dropout: a second forward with the same zt_pass is bit-identical", L.out, out0, NX);
  reference_decoder(&L, &own, ref);
  tu_cmp_exact("dropout: the layer's masks are those of sites (layer 3: ATTN_PROBS, ATTN_OUT, INTER_PROBS, "
               "INTER_OUT, MLP_OUT) (bitwise)", L.out, ref, NX);
  /* the cross-attention's sites are its own: with the self-attention's sites in their place the output differs */
  sites shared = own;
  shared.inter_probs = own.attn_probs;
  reference_decoder(&L, &shared, ref);
  tu_check(memcmp(L.out, ref, NX * sizeof(float)) != 0,
           "dropout: the cross-attention's probabilities are not dropped at the self-attention's site", "%s",
           "the output equals the one with ATTN_PROBS for the cross-attention");
  shared = own;
  shared.inter_out = own.attn_out;
  reference_decoder(&L, &shared, ref);
  tu_check(memcmp(L.out, ref, NX * sizeof(float)) != 0,
           "dropout: the cross-attention's output is not dropped at the self-attention's site", "%s",
           "the output equals the one with ATTN_OUT for the cross-attention");
  /* masks are keyed by the global sample index */
  L.pass.first_sample += 2;
  forward(&L);
  tu_check(memcmp(L.out, out0, NX * sizeof(float)) != 0, "dropout: another pass.first_sample changes the output",
           "%s", "it did not");
  L.pass.first_sample -= 2;
  L.pass.seed += 1;
  forward(&L);
  tu_check(memcmp(L.out, out0, NX * sizeof(float)) != 0, "dropout: another pass.seed changes the output", "%s",
           "it did not");
  L.pass.seed -= 1;
  /* the backward drops what the forward dropped: finite differences with dropout on */
  const size_t P = L.table.numel;
  float *g = tu_falloc(P), *dx = tu_falloc(NX), *dm = tu_falloc(L.nm);
  gradients(&L, g, dx, dm);
  tu_cmp_exact("dropout: the output is the same after the backward", L.out, out0, NX);
  fd_all("decoder FD with dropout", &L, g, dx, dm, 8, 1e-2);
  free(g), free(dx), free(dm), free(out0), free(ref);
  layer_free(&L);
}

/* ---- (d) a forward-only GPT ---------------------------------------------------------------------------------- */

static void test_forward_only(void) {
  enum { V = 64 };
  zt_gpt_config c = {.num_layers = 2, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                     .max_positions = 16, .padded_vocab_size = V, .ln_eps = EPS, .attn_dropout = 0.1f,
                     .hidden_dropout = 0.1f, .init_std = 0.02f, .micro_batch = B, .seq_length = T};
  zt_gpt full, fo;
  zt_gpt_build(&full, &c, 0);
  c.forward_only = 1;
  zt_gpt_build(&fo, &c, 0);
  tu_check(fo.plan.bytes[ZT_MEM_GRADS] == 0 && fo.plan.bytes[ZT_MEM_OPTIM] == 0 && fo.grads == NULL &&
               fo.model.optim_state == NULL,
           "forward-only GPT: no gradient or optimizer bytes planned", "grads %zu bytes, optimizer %zu bytes",
           fo.plan.bytes[ZT_MEM_GRADS], fo.plan.bytes[ZT_MEM_OPTIM]);
  tu_check(full.plan.bytes[ZT_MEM_GRADS] > 0 && full.plan.bytes[ZT_MEM_OPTIM] > 0 &&
               fo.plan.bytes[ZT_MEM_PARAMS] == full.plan.bytes[ZT_MEM_PARAMS],
           "forward-only GPT: the trainable model plans them, and both the same parameters",
           "trainable: grads %zu, optimizer %zu; params %zu vs %zu", full.plan.bytes[ZT_MEM_GRADS],
           full.plan.bytes[ZT_MEM_OPTIM], fo.plan.bytes[ZT_MEM_PARAMS], full.plan.bytes[ZT_MEM_PARAMS]);
  zt_gpt_init_params(&full, 1234);
  zt_gpt_init_params(&fo, 1234);
  int32_t tokens[B * T], targets[B * T];
  for (int i = 0; i < B * T; i++) tokens[i] = (i * 7 + 3) % V, targets[i] = (i * 5 + 1) % V;
  const zt_pass pass = {.B = B, .T = T, .first_sample = 3, .seed = 11, .training = 0};
  const float lf = zt_gpt_forward(&full, tokens, NULL, targets, NULL, &pass);
  const float lo = zt_gpt_forward(&fo, tokens, NULL, targets, NULL, &pass);
  tu_check(isfinite(lf) && lf > 0.0f && memcmp(&lf, &lo, sizeof lf) == 0,
           "forward-only GPT: eval loss equals the trainable model's bit for bit", "%.9g vs %.9g", lo, lf);
  const zt_pass train = {.B = B, .T = T, .first_sample = 3, .seed = 11, .training = 1};
  const float tf = zt_gpt_forward(&full, tokens, NULL, targets, NULL, &train);
  const float to = zt_gpt_forward(&fo, tokens, NULL, targets, NULL, &train);
  tu_check(tf != lf && memcmp(&tf, &to, sizeof tf) == 0,
           "forward-only GPT: with dropout on too (a teacher's forward in training mode)", "%.9g vs %.9g (eval %.9g)",
           to, tf, lf);
  zt_gpt_free(&full);
  zt_gpt_free(&fo);
}

int main(void) {
  test_decoder("decoder (Tk 6 < T 8)", 6, 1);
  test_decoder("decoder (Tk 11 > T 8)", 11, 0);
  test_bidirectional();
  test_dropout();
  test_forward_only();
  return tu_finish();
}
