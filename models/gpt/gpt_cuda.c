/* GPT on one GPU (see gpt_cuda.h): the forward and backward of models/gpt/gpt.c and the transformer layers
 * without tensor or pipeline parallelism, op for op on the CUDA backend. Differences in the kernels, not the
 * model: the attention keeps log-sum-exp instead of the probabilities; the MLP's GELU is the matmul's epilogue;
 * a half dt's gradients are folded into fp32 after every micro batch (zt_cuda_fold_f32). */
#ifdef ZT_HAVE_CUDA
#include "models/gpt/gpt_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/ops/cuda/cuda_ops.h"

#define EMB "language_model.embedding"
#define ENC "language_model.encoder"

/* Offsets (elements of the flat buffers) of one layer's parameters. */
typedef struct {
  size_t ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fc2w, fc2b;
} layer_off;

/* One layer's saved activations (dt unless noted). */
typedef struct {
  void *ln1, *qkv, *ctx, *res2, *ln2, *pre, *h;
  float *mean1, *rstd1, *mean2, *rstd2, *lse; /* fp32 */
} layer_acts;

struct zt_gpt_cuda {
  zt_gpt_config cfg;
  zt_dtype dt;
  size_t es;
  zt_param_table table;
  int L, C, NH, HD, FFN, V, B, T;
  size_t N;
  zt_gpt_cuda_bytes bytes;
  void *pool; /* the one device allocation everything below is carved from */
  float *master;  /* fp32 [numel]: the parameters (fp32) or their masters (half) */
  void *params;   /* dt [numel] (= master in fp32) */
  void *grads;    /* dt [numel]: one micro batch's gradients (half), or the accumulation (fp32) */
  float *grads32; /* fp32 [numel]: the accumulation (= grads in fp32) */
  float *adam_m, *adam_v;
  layer_off *lo;
  size_t *range_off, *range_len; /* the parameters' ranges of the flat buffers (Adam's multi-tensor launch) */
  float *range_wd;               /* their weight decay of the last step's configuration */
  size_t wte, wpe, lnfw, lnfb, outw;
  void *x;              /* [L + 1, N, C]: the layers' inputs and the final hidden state */
  layer_acts *acts;     /* L sets, or one shared set with full recompute */
  void *recompute_out;  /* [N, C] */
  void *lnf, *logits;
  float *lnf_mean, *lnf_rstd, *losses, *lse, *dloss;
  void *tmp, *dln, *dqkv, *dctx, *dh, *dres;
  int32_t *tokens, *positions, *targets, *key_start;
  /* host side of the last forward */
  zt_pass pass;
  float *h_losses, *h_dloss, *h_mask;
  int32_t *h_pos;
  int has_mask, has_key_start;
};

/* ---- layout: one pass sizes the four regions, a second carves them from the allocation ------------------ */
enum { R_PARAMS, R_GRADS, R_OPTIM, R_ACTS, R_COUNT };
typedef struct {
  char *base;            /* NULL: sizing */
  size_t start[R_COUNT]; /* region offsets in the allocation (carving) */
  size_t used[R_COUNT];
} layout;

static void *take(layout *l, int region, size_t bytes) {
  const size_t at = l->used[region];
  l->used[region] += (bytes + 255) / 256 * 256;
  return l->base ? l->base + l->start[region] + at : NULL;
}

static void carve(zt_gpt_cuda *g, layout *l) {
  const size_t es = g->es, n = g->table.numel, N = g->N, C = g->C, NC = N * C, F = g->FFN, V = g->V;
  const int half = g->dt != ZT_DTYPE_FP32;
  g->master = take(l, R_PARAMS, n * 4);
  g->params = half ? take(l, R_PARAMS, n * es) : g->master;
  g->grads = take(l, R_GRADS, n * es);
  g->grads32 = half ? take(l, R_GRADS, n * 4) : g->grads;
  g->adam_m = take(l, R_OPTIM, n * 4);
  g->adam_v = take(l, R_OPTIM, n * 4);
  g->x = take(l, R_ACTS, (size_t)(g->L + 1) * NC * es);
  const int sets = g->cfg.recompute_full ? 1 : g->L;
  for (int s = 0; s < sets; s++) {
    layer_acts *a = &g->acts[s];
    a->ln1 = take(l, R_ACTS, NC * es);
    a->qkv = take(l, R_ACTS, 3 * NC * es);
    a->ctx = take(l, R_ACTS, NC * es);
    a->res2 = take(l, R_ACTS, NC * es);
    a->ln2 = take(l, R_ACTS, NC * es);
    a->pre = take(l, R_ACTS, N * F * es);
    a->h = take(l, R_ACTS, N * F * es);
    a->mean1 = take(l, R_ACTS, N * 4);
    a->rstd1 = take(l, R_ACTS, N * 4);
    a->mean2 = take(l, R_ACTS, N * 4);
    a->rstd2 = take(l, R_ACTS, N * 4);
    a->lse = take(l, R_ACTS, (size_t)g->NH * N * 4);
  }
  for (int s = sets; s < g->L; s++) g->acts[s] = g->acts[0];
  g->recompute_out = g->cfg.recompute_full ? take(l, R_ACTS, NC * es) : NULL;
  g->lnf = take(l, R_ACTS, NC * es);
  g->logits = take(l, R_ACTS, N * V * es);
  g->lnf_mean = take(l, R_ACTS, N * 4);
  g->lnf_rstd = take(l, R_ACTS, N * 4);
  g->losses = take(l, R_ACTS, N * 4);
  g->lse = take(l, R_ACTS, N * 4);
  g->dloss = take(l, R_ACTS, N * 4);
  g->tmp = take(l, R_ACTS, NC * es);
  g->dln = take(l, R_ACTS, NC * es);
  g->dqkv = take(l, R_ACTS, 3 * NC * es);
  g->dctx = take(l, R_ACTS, NC * es);
  g->dh = take(l, R_ACTS, N * F * es);
  g->dres = take(l, R_ACTS, NC * es);
  g->tokens = take(l, R_ACTS, N * 4);
  g->positions = take(l, R_ACTS, N * 4);
  g->targets = take(l, R_ACTS, N * 4);
  g->key_start = take(l, R_ACTS, N * 4);
}

static void refuse_parallel(const zt_gpt_config *c) {
  zt_check(c->tp_size <= 1, "unsupported configuration", "the GPU model runs without tensor parallelism for now "
           "(--tensor-model-parallel-size %d)", c->tp_size);
  zt_check(c->pp_size <= 1, "unsupported configuration", "the GPU model runs without pipeline parallelism for now "
           "(--pipeline-model-parallel-size %d)", c->pp_size);
  zt_check(c->zero_partitions <= 1 && !c->optim_offloaded, "unsupported configuration", "the GPU model runs without "
           "ZeRO partitions or optimizer offload for now (zero_optimization.stage > 0)");
  zt_check(c->hidden_size % c->num_heads == 0, "gpt", "hidden size %d is not divisible by %d heads", c->hidden_size,
           c->num_heads);
}

/* The shape fields of g (no memory): cfg, dt, table, sizes. */
static void shape(zt_gpt_cuda *g, const zt_gpt_config *cfg, zt_dtype dt, int B) {
  g->cfg = *cfg;
  g->dt = dt;
  g->es = zt_dtype_size(dt);
  zt_gpt_single_table(cfg, &g->table);
  g->L = cfg->num_layers, g->C = cfg->hidden_size, g->NH = cfg->num_heads, g->HD = g->C / g->NH;
  g->FFN = cfg->ffn_hidden_size, g->V = cfg->padded_vocab_size, g->B = B, g->T = cfg->seq_length;
  g->N = (size_t)B * g->T;
}

static zt_gpt_cuda_bytes sizes(zt_gpt_cuda *g) {
  layout l = {0};
  layer_acts *saved = g->acts;
  g->acts = zt_calloc((size_t)g->L, sizeof(layer_acts), "gpt_cuda sizing");
  carve(g, &l);
  free(g->acts);
  g->acts = saved;
  zt_gpt_cuda_bytes b = {l.used[R_PARAMS], l.used[R_GRADS], l.used[R_OPTIM], l.used[R_ACTS], 0};
  b.total = b.params + b.grads + b.optim + b.activations;
  return b;
}

zt_gpt_cuda_bytes zt_gpt_cuda_plan(const zt_gpt_config *cfg, zt_dtype dt, int B) {
  refuse_parallel(cfg);
  zt_gpt_cuda g = {0};
  shape(&g, cfg, dt, B);
  zt_gpt_cuda_bytes b = sizes(&g);
  zt_param_table_free(&g.table);
  return b;
}

static double mib(size_t b) { return b / 1048576.0; }

zt_gpt_cuda *zt_gpt_cuda_build(const zt_gpt_config *cfg, zt_dtype dt) {
  refuse_parallel(cfg);
  zt_check(cfg->micro_batch >= 1 && cfg->seq_length >= 1, "gpt", "micro batch %d x sequence %d", cfg->micro_batch,
           cfg->seq_length);
  zt_cuda_init(0); /* one process, device 0 (idempotent) */
  zt_gpt_cuda *g = zt_calloc(1, sizeof *g, "gpt_cuda");
  shape(g, cfg, dt, cfg->micro_batch);
  g->bytes = sizes(g);
  size_t free_b = 0, total_b = 0;
  zt_cuda_mem_info(&free_b, &total_b);
  /* the largest micro batch that fits: activations grow linearly in B */
  int best = 0;
  for (int lo = 1, hi = 1 << 16; lo <= hi;) {
    const int mid = lo + (hi - lo) / 2;
    zt_gpt_cuda_bytes b = zt_gpt_cuda_plan(cfg, dt, mid);
    if (b.total <= free_b) best = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  const zt_gpt_cuda_bytes *p = &g->bytes;
  zt_log("> device memory plan (MiB, %s): params %.1f | grads %.1f | optimizer state %.1f | activations %.1f | "
         "total %.1f of %.1f free; the largest micro batch that fits: %d\n", zt_dtype_name(dt), mib(p->params),
         mib(p->grads), mib(p->optim), mib(p->activations), mib(p->total), mib(free_b), best);
  zt_check(p->total <= free_b, "memory plan does not fit", "the GPU model needs %.1f MiB (params %.1f, grads %.1f, "
           "optimizer state %.1f, activations %.1f) but the device has %.1f MiB free; the largest micro batch that "
           "fits is %d (--micro-batch-size %d), or use --checkpoint-activations", mib(p->total), mib(p->params),
           mib(p->grads), mib(p->optim), mib(p->activations), mib(free_b), best, cfg->micro_batch);
  g->pool = zt_cuda_malloc(p->total, "the GPU model");
  layout l = {.base = g->pool, .start = {0, p->params, p->params + p->grads, p->params + p->grads + p->optim}};
  g->acts = zt_calloc((size_t)g->L, sizeof(layer_acts), "gpt_cuda activations");
  carve(g, &l);
  zt_cuda_memset(g->pool, 0, p->params + p->grads + p->optim); /* zero gradients and moments */
  /* parameter offsets */
  const zt_param_table *t = &g->table;
  g->lo = zt_calloc((size_t)g->L, sizeof(layer_off), "gpt_cuda layers");
  for (int i = 0; i < g->L; i++) {
    char pre[96];
    snprintf(pre, sizeof pre, ENC ".layers.%d", i);
    layer_off *o = &g->lo[i];
    o->ln1w = zt_param_get(t, pre, "input_layernorm.weight")->offset;
    o->ln1b = zt_param_get(t, pre, "input_layernorm.bias")->offset;
    o->qkvw = zt_param_get(t, pre, "self_attention.query_key_value.weight")->offset;
    o->qkvb = zt_param_get(t, pre, "self_attention.query_key_value.bias")->offset;
    o->projw = zt_param_get(t, pre, "self_attention.dense.weight")->offset;
    o->projb = zt_param_get(t, pre, "self_attention.dense.bias")->offset;
    o->ln2w = zt_param_get(t, pre, "post_attention_layernorm.weight")->offset;
    o->ln2b = zt_param_get(t, pre, "post_attention_layernorm.bias")->offset;
    o->fcw = zt_param_get(t, pre, "mlp.dense_h_to_4h.weight")->offset;
    o->fcb = zt_param_get(t, pre, "mlp.dense_h_to_4h.bias")->offset;
    o->fc2w = zt_param_get(t, pre, "mlp.dense_4h_to_h.weight")->offset;
    o->fc2b = zt_param_get(t, pre, "mlp.dense_4h_to_h.bias")->offset;
  }
  g->wte = zt_param_get(t, EMB, "word_embeddings.weight")->offset;
  g->wpe = zt_param_get(t, EMB, "position_embeddings.weight")->offset;
  g->lnfw = zt_param_get(t, ENC, "final_layernorm.weight")->offset;
  g->lnfb = zt_param_get(t, ENC, "final_layernorm.bias")->offset;
  g->outw = cfg->untie_embeddings ? zt_param_get(t, "language_model", "output_layer.weight")->offset : g->wte;
  g->range_off = zt_malloc(sizeof(size_t) * (size_t)t->count, "adam ranges");
  g->range_len = zt_malloc(sizeof(size_t) * (size_t)t->count, "adam ranges");
  g->range_wd = zt_malloc(sizeof(float) * (size_t)t->count, "adam ranges");
  for (int i = 0; i < t->count; i++) g->range_off[i] = t->params[i].offset, g->range_len[i] = t->params[i].numel;
  g->h_losses = zt_malloc(g->N * sizeof(float), "gpt_cuda losses");
  g->h_dloss = zt_malloc(g->N * sizeof(float), "gpt_cuda dloss");
  g->h_mask = zt_malloc(g->N * sizeof(float), "gpt_cuda mask");
  g->h_pos = zt_malloc(g->N * sizeof(int32_t), "gpt_cuda positions");
  return g;
}

void zt_gpt_cuda_free(zt_gpt_cuda *g) {
  if (!g) return;
  zt_cuda_synchronize();
  zt_cuda_free(g->pool);
  zt_param_table_free(&g->table);
  free(g->range_off), free(g->range_len), free(g->range_wd);
  free(g->acts), free(g->lo), free(g->h_losses), free(g->h_dloss), free(g->h_mask), free(g->h_pos);
  free(g);
}

const zt_param_table *zt_gpt_cuda_table(const zt_gpt_cuda *g) { return &g->table; }

void zt_gpt_cuda_set_params(zt_gpt_cuda *g, const float *host) {
  zt_cuda_memcpy_h2d(g->master, host, g->table.numel * sizeof(float));
  if (g->dt != ZT_DTYPE_FP32) zt_cuda_convert(g->params, g->dt, g->master, ZT_DTYPE_FP32, g->table.numel);
}
void zt_gpt_cuda_get_params(const zt_gpt_cuda *g, float *host) {
  zt_cuda_memcpy_d2h(host, g->master, g->table.numel * sizeof(float));
}
void zt_gpt_cuda_set_moments(zt_gpt_cuda *g, const float *m, const float *v) {
  zt_cuda_memcpy_h2d(g->adam_m, m, g->table.numel * sizeof(float));
  zt_cuda_memcpy_h2d(g->adam_v, v, g->table.numel * sizeof(float));
}
void zt_gpt_cuda_get_moments(const zt_gpt_cuda *g, float *m, float *v) {
  zt_cuda_memcpy_d2h(m, g->adam_m, g->table.numel * sizeof(float));
  zt_cuda_memcpy_d2h(v, g->adam_v, g->table.numel * sizeof(float));
}
void zt_gpt_cuda_get_grads(const zt_gpt_cuda *g, float *host) {
  zt_cuda_memcpy_d2h(host, g->grads32, g->table.numel * sizeof(float));
}

/* ---- forward and backward ---------------------------------------------------------------------------------- */
static void *P(const zt_gpt_cuda *g, size_t off) { return (char *)g->params + off * g->es; }
static void *G(const zt_gpt_cuda *g, size_t off) { return (char *)g->grads + off * g->es; }
static void *X(const zt_gpt_cuda *g, int l) { return (char *)g->x + (size_t)l * g->N * g->C * g->es; }
static void *at(const zt_gpt_cuda *g, void *base, size_t elems) { return (char *)base + elems * g->es; }

static zt_dropout dropout(const zt_gpt_cuda *g, float p, int layer, int slot) {
  return (zt_dropout){.p = g->pass.training ? p : 0.0f, .seed = g->pass.seed, .site = zt_dropout_site(layer, slot),
                      .first_sample = g->pass.first_sample};
}

/* Self-attention over the fused QKV rows [N, 3C] in Megatron's per-head layout. */
static zt_attention_desc attn_desc(const zt_gpt_cuda *g, int layer) {
  const int C = g->C, HD = g->HD;
  return (zt_attention_desc){.B = g->B, .Tq = g->T, .Tk = g->T, .NH = g->NH, .HD = HD, .ld_q = 3 * C,
                             .hs_q = 3 * HD, .ld_kv = 3 * C, .hs_k = 3 * HD, .hs_v = 3 * HD,
                             .mask = ZT_ATTN_CAUSAL, .key_start = g->has_key_start ? g->key_start : NULL,
                             .scale = 1.0f / sqrtf((float)HD),
                             .dropout = dropout(g, g->cfg.attn_dropout, layer, ZT_SITE_ATTN_PROBS), .head0 = 0};
}

static void block_forward(zt_gpt_cuda *g, int l, void *out, const void *x) {
  const zt_dtype dt = g->dt;
  const layer_off *o = &g->lo[l];
  layer_acts *a = &g->acts[l];
  const int N = (int)g->N, C = g->C, F = g->FFN;
  const size_t S = (size_t)g->T * C;
  const float eps = g->cfg.ln_eps;
  zt_cuda_layernorm_forward(dt, a->ln1, a->mean1, a->rstd1, x, P(g, o->ln1w), P(g, o->ln1b), N, C, eps);
  zt_cuda_matmul_forward(dt, a->qkv, NULL, a->ln1, P(g, o->qkvw), P(g, o->qkvb), N, C, 3 * C);
  const zt_attention_desc d = attn_desc(g, l);
  zt_cuda_attention_forward(dt, a->ctx, a->lse, a->qkv, at(g, a->qkv, g->HD), at(g, a->qkv, 2 * (size_t)g->HD), &d);
  zt_cuda_matmul_forward(dt, g->tmp, NULL, a->ctx, P(g, o->projw), P(g, o->projb), N, C, C);
  const zt_dropout d1 = dropout(g, g->cfg.hidden_dropout, l, ZT_SITE_ATTN_OUT);
  zt_cuda_dropout_add_forward(dt, a->res2, x, g->tmp, g->B, S, &d1);
  zt_cuda_layernorm_forward(dt, a->ln2, a->mean2, a->rstd2, a->res2, P(g, o->ln2w), P(g, o->ln2b), N, C, eps);
  zt_cuda_matmul_forward(dt, a->h, a->pre, a->ln2, P(g, o->fcw), P(g, o->fcb), N, C, F);
  zt_cuda_matmul_forward(dt, g->tmp, NULL, a->h, P(g, o->fc2w), P(g, o->fc2b), N, F, C);
  const zt_dropout d2 = dropout(g, g->cfg.hidden_dropout, l, ZT_SITE_MLP_OUT);
  zt_cuda_dropout_add_forward(dt, out, a->res2, g->tmp, g->B, S, &d2);
}

/* dres holds d(out) on entry and d(x) on return. */
static void block_backward(zt_gpt_cuda *g, int l, const void *x) {
  const zt_dtype dt = g->dt;
  const layer_off *o = &g->lo[l];
  layer_acts *a = &g->acts[l];
  const int N = (int)g->N, C = g->C, F = g->FFN;
  const size_t S = (size_t)g->T * C, NC = g->N * C;
  const zt_dropout d2 = dropout(g, g->cfg.hidden_dropout, l, ZT_SITE_MLP_OUT);
  zt_cuda_dropout_backward(dt, g->tmp, g->dres, g->B, S, &d2);
  zt_cuda_matmul_backward(dt, g->dh, G(g, o->fc2w), G(g, o->fc2b), g->tmp, a->h, P(g, o->fc2w), NULL, N, F, C);
  zt_cuda_matmul_backward(dt, g->dln, G(g, o->fcw), G(g, o->fcb), g->dh, a->ln2, P(g, o->fcw), a->pre, N, C, F);
  zt_cuda_layernorm_backward(dt, g->tmp, G(g, o->ln2w), G(g, o->ln2b), g->dln, a->res2, P(g, o->ln2w), a->mean2,
                             a->rstd2, N, C);
  zt_cuda_accumulate(dt, g->dres, g->tmp, NC);
  const zt_dropout d1 = dropout(g, g->cfg.hidden_dropout, l, ZT_SITE_ATTN_OUT);
  zt_cuda_dropout_backward(dt, g->tmp, g->dres, g->B, S, &d1);
  zt_cuda_matmul_backward(dt, g->dctx, G(g, o->projw), G(g, o->projb), g->tmp, a->ctx, P(g, o->projw), NULL, N, C, C);
  const zt_attention_desc d = attn_desc(g, l);
  const size_t HD = (size_t)g->HD;
  zt_cuda_attention_backward(dt, g->dqkv, at(g, g->dqkv, HD), at(g, g->dqkv, 2 * HD), g->dctx, a->ctx, a->lse,
                             a->qkv, at(g, a->qkv, HD), at(g, a->qkv, 2 * HD), &d);
  zt_cuda_matmul_backward(dt, g->dln, G(g, o->qkvw), G(g, o->qkvb), g->dqkv, a->ln1, P(g, o->qkvw), NULL, N, C,
                          3 * C);
  zt_cuda_layernorm_backward(dt, g->tmp, G(g, o->ln1w), G(g, o->ln1b), g->dln, x, P(g, o->ln1w), a->mean1, a->rstd1,
                             N, C);
  zt_cuda_accumulate(dt, g->dres, g->tmp, NC);
}

float zt_gpt_cuda_forward(zt_gpt_cuda *g, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                          const float *loss_mask, const zt_pass *pass) {
  zt_check(pass->B == g->B && pass->T == g->T, "gpt", "batch %dx%d differs from the planned %dx%d", pass->B, pass->T,
           g->B, g->T);
  zt_check(!pass->key_padding, "gpt", "the GPU model takes no key padding mask (GPT attention is causal)");
  const zt_dtype dt = g->dt;
  const int N = (int)g->N, C = g->C;
  g->pass = *pass;
  g->has_mask = loss_mask != NULL;
  g->has_key_start = pass->key_start != NULL;
  if (!positions) {
    for (int b = 0; b < g->B; b++)
      for (int t = 0; t < g->T; t++) g->h_pos[b * g->T + t] = t;
    positions = g->h_pos;
  }
  for (int n = 0; n < N; n++) g->h_mask[n] = loss_mask ? loss_mask[n] : 1.0f;
  zt_cuda_memcpy_h2d(g->tokens, tokens, g->N * sizeof(int32_t));
  zt_cuda_memcpy_h2d(g->positions, positions, g->N * sizeof(int32_t));
  zt_cuda_memcpy_h2d(g->targets, targets, g->N * sizeof(int32_t));
  if (g->has_key_start) zt_cuda_memcpy_h2d(g->key_start, pass->key_start, g->N * sizeof(int32_t));
  /* embedding: out = dropout(wte[tokens] + wpe[positions]) */
  zt_cuda_embedding_forward(dt, X(g, 0), g->tokens, P(g, g->wte), N, C, 0);
  zt_cuda_embedding_forward(dt, X(g, 0), g->positions, P(g, g->wpe), N, C, 1);
  const zt_dropout de = dropout(g, g->cfg.hidden_dropout, 0, ZT_SITE_EMBEDDING);
  zt_cuda_dropout_forward(dt, X(g, 0), X(g, 0), g->B, (size_t)g->T * C, &de);
  for (int l = 0; l < g->L; l++) block_forward(g, l, X(g, l + 1), X(g, l));
  /* head: final layernorm, output layer (the word embeddings when tied), cross-entropy */
  zt_cuda_layernorm_forward(dt, g->lnf, g->lnf_mean, g->lnf_rstd, X(g, g->L), P(g, g->lnfw), P(g, g->lnfb), N, C,
                            g->cfg.ln_eps);
  zt_cuda_matmul_forward(dt, g->logits, NULL, g->lnf, P(g, g->outw), NULL, N, C, g->V);
  zt_cuda_cross_entropy_forward(dt, g->losses, g->lse, g->logits, g->targets, N, g->V);
  zt_cuda_memcpy_d2h(g->h_losses, g->losses, g->N * sizeof(float));
  double num = 0.0, den = 0.0;
  for (int n = 0; n < N; n++) num += (double)g->h_mask[n] * g->h_losses[n], den += g->h_mask[n];
  return den > 0 ? (float)(num / den) : 0.0f;
}

void zt_gpt_cuda_backward(zt_gpt_cuda *g, float grad_scale) {
  const zt_dtype dt = g->dt;
  const int N = (int)g->N, C = g->C;
  double den = 0.0;
  for (int n = 0; n < N; n++) den += g->h_mask[n];
  for (int n = 0; n < N; n++) g->h_dloss[n] = den > 0 ? (float)(g->h_mask[n] * grad_scale / den) : 0.0f;
  zt_cuda_memcpy_h2d(g->dloss, g->h_dloss, g->N * sizeof(float));
  zt_cuda_cross_entropy_backward(dt, g->logits, g->logits, g->lse, g->targets, g->dloss, N, g->V);
  zt_cuda_matmul_backward(dt, g->dln, G(g, g->outw), NULL, g->logits, g->lnf, P(g, g->outw), NULL, N, C, g->V);
  zt_cuda_layernorm_backward(dt, g->dres, G(g, g->lnfw), G(g, g->lnfb), g->dln, X(g, g->L), P(g, g->lnfw),
                             g->lnf_mean, g->lnf_rstd, N, C);
  for (int l = g->L - 1; l >= 0; l--) {
    if (g->cfg.recompute_full) block_forward(g, l, g->recompute_out, X(g, l));
    block_backward(g, l, X(g, l));
  }
  const zt_dropout de = dropout(g, g->cfg.hidden_dropout, 0, ZT_SITE_EMBEDDING);
  zt_cuda_dropout_backward(dt, g->dres, g->dres, g->B, (size_t)g->T * C, &de);
  zt_cuda_embedding_backward(dt, G(g, g->wte), g->tokens, g->dres, N, C);
  zt_cuda_embedding_backward(dt, G(g, g->wpe), g->positions, g->dres, N, C);
  if (dt != ZT_DTYPE_FP32) zt_cuda_fold_f32(g->grads32, g->grads, dt, g->table.numel);
}

/* ---- optimizer ------------------------------------------------------------------------------------------------ */
double zt_gpt_cuda_grad_norm(zt_gpt_cuda *g) { return sqrt(zt_cuda_sumsq(ZT_DTYPE_FP32, g->grads32, g->table.numel)); }

void zt_gpt_cuda_zero_grads(zt_gpt_cuda *g) { zt_cuda_memset(g->grads32, 0, g->table.numel * sizeof(float)); }

void zt_gpt_cuda_adam_step(zt_gpt_cuda *g, const zt_opt_config *cfg, double lr, float grad_scale, int64_t step) {
  zt_check(cfg->kind == ZT_OPT_ADAM, "unsupported configuration", "the GPU model's optimizer is Adam/AdamW for now "
           "(--optimizer adam)");
  const int n = g->table.count;
  for (int i = 0; i < n; i++) g->range_wd[i] = g->table.params[i].no_weight_decay ? 0.0f : cfg->weight_decay;
  const float bc1 = 1.0f - powf(cfg->beta1, (float)step), bc2 = 1.0f - powf(cfg->beta2, (float)step);
  const zt_cuda_adam_args args = {.lr = (float)lr, .beta1 = cfg->beta1, .beta2 = cfg->beta2, .eps = cfg->eps,
                                  .inv_bc1 = 1.0f / bc1, .inv_sqrt_bc2 = 1.0f / sqrtf(bc2), .grad_scale = grad_scale,
                                  .adam_w_mode = cfg->adam_w_mode};
  zt_cuda_adam_step(g->master, g->grads32, g->adam_m, g->adam_v, g->dt != ZT_DTYPE_FP32 ? g->params : NULL, g->dt,
                    g->range_off, g->range_len, g->range_wd, n, &args);
}
#else /* no CUDA: nothing calls these without a device (zt_cuda_device_count() is 0) */
#include "models/gpt/gpt_cuda.h"
#include "runtime/base/error.h"

__attribute__((noreturn)) static void no_cuda(void) { zt_fatal("gpt", "this build has no CUDA backend"); }
zt_gpt_cuda_bytes zt_gpt_cuda_plan(const zt_gpt_config *cfg, zt_dtype dt, int B) { (void)cfg, (void)dt, (void)B; no_cuda(); }
zt_gpt_cuda *zt_gpt_cuda_build(const zt_gpt_config *cfg, zt_dtype dt) { (void)cfg, (void)dt; no_cuda(); }
void zt_gpt_cuda_free(zt_gpt_cuda *g) { (void)g; }
const zt_param_table *zt_gpt_cuda_table(const zt_gpt_cuda *g) { (void)g; no_cuda(); }
void zt_gpt_cuda_set_params(zt_gpt_cuda *g, const float *h) { (void)g, (void)h; no_cuda(); }
void zt_gpt_cuda_get_params(const zt_gpt_cuda *g, float *h) { (void)g, (void)h; no_cuda(); }
void zt_gpt_cuda_set_moments(zt_gpt_cuda *g, const float *m, const float *v) { (void)g, (void)m, (void)v; no_cuda(); }
void zt_gpt_cuda_get_moments(const zt_gpt_cuda *g, float *m, float *v) { (void)g, (void)m, (void)v; no_cuda(); }
void zt_gpt_cuda_get_grads(const zt_gpt_cuda *g, float *h) { (void)g, (void)h; no_cuda(); }
float zt_gpt_cuda_forward(zt_gpt_cuda *g, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                          const float *loss_mask, const zt_pass *pass) {
  (void)g, (void)tokens, (void)positions, (void)targets, (void)loss_mask, (void)pass;
  no_cuda();
}
void zt_gpt_cuda_backward(zt_gpt_cuda *g, float s) { (void)g, (void)s; no_cuda(); }
double zt_gpt_cuda_grad_norm(zt_gpt_cuda *g) { (void)g; no_cuda(); }
void zt_gpt_cuda_adam_step(zt_gpt_cuda *g, const zt_opt_config *cfg, double lr, float s, int64_t step) {
  (void)g, (void)cfg, (void)lr, (void)s, (void)step;
  no_cuda();
}
void zt_gpt_cuda_zero_grads(zt_gpt_cuda *g) { (void)g; no_cuda(); }
#endif
