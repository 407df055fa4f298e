/* BERT (bert.h): the language model with the padding mask and token types, Megatron's masked-LM head and, with the
 * binary head, the pooler and the sentence-order head; the engine's zt_model over it. */
#include "models/bert/bert.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"

static const zt_model_ops k_bert_ops;

#define POOLER "language_model.pooler.dense"

/* A linear layer outside tensor parallelism (Megatron's get_linear_layer: a torch.nn.Linear, weight N(0, std),
 * bias 0). seq_parallel: it runs on this rank's share of the tokens under --sequence-parallel (lm_head.dense);
 * the pooler and the binary head see the gathered first tokens, the same on every rank. */
static void add_linear(zt_param_table *t, const char *name, int out, int in, float std, int seq_parallel) {
  char buf[160];
  int64_t w[2] = {out, in}, b[1] = {out};
  snprintf(buf, sizeof buf, "%s.weight", name);
  int i = zt_param_table_add(t, buf, 2, w, ZT_INIT_NORMAL, std, 0, -1);
  t->params[i].seq_parallel = seq_parallel;
  snprintf(buf, sizeof buf, "%s.bias", name);
  i = zt_param_table_add(t, buf, 1, b, ZT_INIT_ZEROS, 0, 1, -1);
  t->params[i].seq_parallel = seq_parallel;
}

const char *zt_bert_cls_head_name(const zt_bert_config *cfg) {
  if (cfg->cls_classes <= 0) return NULL;
  return cfg->cls_choices > 1 ? "multichoice_head" : "classification_head";
}

/* The head between the final layernorm and the output layer: the pooler, BertLMHead's dense, layernorm and bias
 * (vocab-parallel like the output layer), the binary head; fine-tuned, the pooler and the classification head. */
static void register_head(zt_param_table *t, const zt_lm_config *c, int V) {
  const int C = c->hidden_size;
  if (c->add_pooler) add_linear(t, POOLER, C, C, c->init_std, 0);
  if (c->cls_classes > 0) { /* get_linear_layer(hidden_size, num_classes, init_method) */
    add_linear(t, zt_bert_cls_head_name(c), c->cls_classes, C, c->init_std, 0);
    return;
  }
  add_linear(t, "lm_head.dense", C, C, c->init_std, 1);
  int64_t shape[1] = {C}, vb[1] = {V};
  zt_param_table_add(t, "lm_head.layernorm.weight", 1, shape, ZT_INIT_ONES, 0, 1, -1);
  zt_param_table_add(t, "lm_head.layernorm.bias", 1, shape, ZT_INIT_ZEROS, 0, 1, -1);
  zt_param_table_add(t, "lm_head.bias", 1, vb, ZT_INIT_ZEROS, 0, 1, 0);
  if (c->add_pooler) add_linear(t, "binary_head", 2, C, c->init_std, 0);
}

void zt_bert_single_table(const zt_bert_config *cfg, zt_param_table *t) {
  zt_lm_one_stage_table(cfg, 1, register_head, t);
}

static void setup(zt_bert *m, const zt_bert_config *cfg) {
  memset(m, 0, sizeof(*m));
  m->cfg = *cfg;
  m->cfg.bidirectional = 1;
  zt_check(!cfg->untie_embeddings, "inconsistent arguments", "BERT ties its output layer to the word embeddings "
           "(Megatron's BertModel asserts it): drop --untie-embeddings-and-output-weights");
  zt_check(cfg->add_pooler == (cfg->num_tokentypes > 0), "internal error", "bert: pooler %d with %d token types",
           cfg->add_pooler, cfg->num_tokentypes);
  m->cls = cfg->cls_classes > 0;
  zt_check(!m->cls || (cfg->add_pooler && cfg->no_output_layer && cfg->cls_choices >= 1 &&
                       cfg->micro_batch % cfg->cls_choices == 0), "internal error", "bert: a classification head "
           "with pooler %d, output layer %d, %d rows of %d choices", cfg->add_pooler, !cfg->no_output_layer,
           cfg->micro_batch, cfg->cls_choices);
  m->binary_head = cfg->add_pooler && !m->cls;
  m->model = (zt_model){.ops = &k_bert_ops, .impl = m, .name = "BERT", .n_losses = m->binary_head ? 2 : 1,
                        .loss_names = {"lm loss", "sop loss"}};
  zt_lm_setup(&m->lm, &m->cfg, &m->model, &m->table, &m->plan, register_head);
}

static void plan_memory(zt_bert *m) {
  zt_lm_plan(&m->lm);
  zt_memplan *p = &m->plan;
  const zt_lm *lm = &m->lm;
  const size_t es = zt_dtype_size(m->model.dt), C = (size_t)lm->cfg.hidden_size;
  const size_t head = lm->last && !m->cls ? 1 : 0, N = head * (size_t)zt_tp_local_rows(&lm->tp, lm->B * lm->T);
  const size_t B = (lm->last ? 1 : 0) * (size_t)lm->B, pool = m->binary_head || m->cls ? B : 0;
  const size_t K = m->cls ? (size_t)lm->cfg.cls_classes : 2; /* the head's logits per row */
  m->cls_in = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (m->cls ? B : 0) * C * es);
  m->h_pre = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es);
  m->h_act = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es);
  m->h_ln = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es);
  m->hln_mean = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, N);
  m->hln_rstd = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, N);
  m->hgrad = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es);
  m->pool_in = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * C * es);
  m->pool_pre = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * C * es);
  m->pooled = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * C * es);
  m->bin_logits = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * K * es);
  m->dpool = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * C * es);
  m->dpool2 = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * C * es);
  m->sop_losses = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, pool);
  m->sop_lse = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, pool);
  m->sop_dloss = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, pool);
  m->first_rows = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * sizeof(int32_t));
  m->sop_targets = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, pool * sizeof(int32_t));
}

static size_t plan_bytes(const void *cfg, int B) {
  zt_bert_config c = *(const zt_bert_config *)cfg;
  const int ch = c.cls_choices > 1 ? c.cls_choices : 1; /* RACE: whole questions of 4 rows */
  c.micro_batch = (B + ch - 1) / ch * ch;
  zt_bert *m = zt_calloc(1, sizeof *m, "bert sizing");
  setup(m, &c);
  plan_memory(m);
  const size_t total = zt_memplan_total(&m->plan);
  zt_lm_teardown(&m->lm);
  free(m);
  return total;
}

/* A linear layer's weight and bias and their gradients. */
static void bind_linear(const zt_bert *m, const char *name, void **w, void **b, void **dw, void **db) {
  const zt_param_table *t = &m->table;
  void *p = m->model.params, *g = m->lm.gbind;
  const size_t es = zt_dtype_size(m->model.dt);
  *w = zt_param_addr(t, p, es, name, "weight");
  *b = zt_param_addr(t, p, es, name, "bias");
  *dw = zt_param_addr(t, g, es, name, "weight");
  *db = zt_param_addr(t, g, es, name, "bias");
}

static void bind_head(zt_bert *m) {
  if (m->binary_head || m->cls) bind_linear(m, POOLER, &m->pool_w, &m->pool_b, &m->dpool_w, &m->dpool_b);
  if (m->cls) {
    bind_linear(m, zt_bert_cls_head_name(&m->cfg), &m->cls_w, &m->cls_b, &m->dcls_w, &m->dcls_b);
    return;
  }
  if (m->binary_head) bind_linear(m, "binary_head", &m->bin_w, &m->bin_b, &m->dbin_w, &m->dbin_b);
  bind_linear(m, "lm_head.dense", &m->hd_w, &m->hd_b, &m->dhd_w, &m->dhd_b);
  bind_linear(m, "lm_head.layernorm", &m->hln_w, &m->hln_b, &m->dhln_w, &m->dhln_b);
  const size_t es = zt_dtype_size(m->model.dt);
  m->hbias = zt_param_addr(&m->table, m->model.params, es, "lm_head", "bias");
  m->dhbias = zt_param_addr(&m->table, m->lm.gbind, es, "lm_head", "bias");
}

void zt_bert_build(zt_bert *m, const zt_bert_config *cfg, size_t mem_limit) {
  setup(m, cfg);
  plan_memory(m); /* sizing */
  zt_model_check_plan(&m->plan, m->model.be, m->model.dt, cfg->micro_batch, cfg->recompute_full, mem_limit,
                      plan_bytes, &m->cfg);
  zt_memplan_allocate(&m->plan);
  plan_memory(m); /* carving */
  zt_lm_bind(&m->lm);
  m->h_first = zt_malloc((size_t)m->lm.B * sizeof(int32_t), "bert first rows");
  m->h_sop = zt_malloc((size_t)m->lm.B * sizeof(float), "bert sop losses");
  if (m->cls) {
    m->h_logits = zt_malloc((size_t)m->lm.B * (size_t)cfg->cls_classes * sizeof(float), "bert classification logits");
    m->h_target = zt_malloc((size_t)m->lm.B * sizeof(float), "bert regression targets");
    m->pred = zt_malloc((size_t)m->lm.B * sizeof(int32_t), "bert predictions");
    m->model.predictions = m->pred;
    m->model.prediction_scores = m->h_logits;
  }
  if (m->lm.last) bind_head(m);
}

void zt_bert_free(zt_bert *m) {
  free(m->h_first), free(m->h_sop), free(m->h_logits), free(m->pred), free(m->h_target);
  zt_lm_free_host(&m->lm);
  zt_lm_teardown(&m->lm);
  zt_memplan_free(&m->plan);
}

static void bert_free(zt_model *mm) {
  zt_bert *m = mm->impl;
  const int owned = m->owned;
  zt_bert_free(m);
  if (owned) free(m);
}

zt_bert_config zt_bert_config_of(const zt_model_args *a, const zt_model_setup *s) {
  zt_bert_config c = zt_lm_config_from(a, s);
  c.bidirectional = 1;
  c.num_tokentypes = a->binary_head || a->cls_classes > 0 ? 2 : 0; /* Classification's num_tokentypes=2 */
  c.add_pooler = a->binary_head || a->cls_classes > 0;
  c.cls_classes = a->cls_classes;
  c.cls_choices = a->cls_classes > 0 ? (a->cls_choices > 0 ? a->cls_choices : 1) : 0;
  c.cls_regression = a->cls_classes == 1 && a->cls_regression;
  c.no_output_layer = a->cls_classes > 0;
  c.moe = NULL, c.kd = NULL; /* the arguments refuse both for BERT */
  c.dec_layers = c.dec_seq_length = 0;
  return c;
}

zt_model *zt_bert_create(const zt_model_args *a, const zt_model_setup *s) {
  const zt_bert_config c = zt_bert_config_of(a, s);
  zt_bert *m = zt_malloc(sizeof *m, "BERT model");
  zt_bert_build(m, &c, s->mem_limit);
  m->owned = 1;
  return &m->model;
}

void zt_bert_count(const zt_model_args *a, int64_t *total, int64_t *largest) {
  const zt_model_setup one = {.micro_batch = 1, .seq_length = a->max_positions};
  const zt_bert_config c = zt_bert_config_of(a, &one);
  zt_lm_count_params(&c, register_head, total, largest);
}

static void bert_init_range(zt_model *mm, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt) {
  zt_bert *m = mm->impl;
  zt_lm_init_range(&m->lm, seed, lo, hi, value_dt);
}

void zt_bert_init_params(zt_bert *m, uint64_t seed) {
  m->model.be->memset(m->model.params, 0, m->table.numel * zt_dtype_size(m->model.dt)); /* padding stays zero */
  bert_init_range(&m->model, seed, 0, m->table.numel, ZT_DTYPE_FP32);
}

/* ---- forward ------------------------------------------------------------------------------------------------ */

/* BertLMHead's GELU: torch.nn.functional.gelu (the erf form), or openai_gelu (the tanh form) with --openai-gelu */
static zt_act_kind head_gelu(const zt_lm *lm) { return lm->cfg.head_gelu_tanh ? ZT_ACT_GELU_TANH : ZT_ACT_GELU_ERF; }

/* The pooler on each row's first token of the final layernorm's output (gathered over the sequence-parallel ranks,
 * as Megatron's Pooler does) into m->pooled; staged the rows' `targets` labels into m->sop_tgt. */
static void pooler_forward(zt_bert *m, const int32_t *targets, int n_targets) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int B = lm->B, T = lm->T, C = lm->cfg.hidden_size, N = zt_tp_local_rows(&lm->tp, B * T);
  int32_t *first = zt_backend_host_view(be, m->first_rows, m->h_first);
  for (int r = 0; r < B; r++) first[r] = r * T;
  zt_backend_commit(be, m->first_rows, first, (size_t)B * sizeof(int32_t));
  m->sop_tgt = zt_backend_stage_in(be, m->sop_targets, targets, (size_t)n_targets * sizeof(int32_t));
  be->embedding_forward(dt, m->pool_in, m->first_rows, zt_tp_gather(&lm->tp, lm->lnf, N, C), B, C, 0);
  be->matmul_forward(dt, m->pool_pre, NULL, m->pool_in, m->pool_w, m->pool_b, B, C, C);
  be->act_forward(dt, ZT_ACT_TANH, m->pooled, m->pool_pre, (size_t)B * C);
}

/* The pooler, the binary head and its cross-entropy: returns the mean over the samples. */
static float sop_forward(zt_bert *m, const zt_batch *b, double *ft) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int B = lm->B, C = lm->cfg.hidden_size;
  zt_check(b->sentence_labels != NULL, "internal error", "bert: the binary head without sentence labels");
  double t0 = ft ? zt_now() : 0.0, t1 = 0.0;
  pooler_forward(m, b->sentence_labels, B);
  if (ft) ft[ZT_BERT_FT_POOLER] += (t1 = zt_now()) - t0;
  be->matmul_forward(dt, m->bin_logits, NULL, m->pooled, m->bin_w, m->bin_b, B, C, 2);
  be->cross_entropy_forward(dt, m->sop_losses, m->sop_lse, m->bin_logits, m->sop_tgt, B, 2);
  const float *losses = m->sop_losses;
  if (!be->host_visible) {
    be->to_host(m->h_sop, m->sop_losses, (size_t)B * sizeof(float));
    losses = m->h_sop;
  }
  double sum = 0.0;
  for (int r = 0; r < B; r++) sum += losses[r];
  if (ft) {
    const double t2 = zt_now();
    ft[ZT_BERT_FT_BINARY_HEAD] += t2 - t1;
    ft[ZT_LM_FT_MODEL] += t2 - t0;
  }
  return (float)(sum / B);
}

/* The classification dropout: --hidden-dropout on the pooled output, keyed by sample and a site after the layers'. */
static zt_dropout cls_dropout(const zt_bert *m, const zt_pass *pass) {
  return (zt_dropout){.p = pass->training ? m->lm.cfg.hidden_dropout : 0.0f, .seed = pass->seed,
                      .site = zt_dropout_site(m->lm.cfg.num_layers, ZT_SITE_HEAD), .first_sample = pass->first_sample};
}

/* Megatron's Classification / MultipleChoice forward after the final layernorm: the pooler on each row's first token,
 * dropout, the head's logits [B, K], viewed as [B / choices, choices * K]; their cross-entropy against the samples'
 * labels (the mean over the samples), and each sample's argmax into m->pred. */
static float cls_forward(zt_bert *m, const zt_batch *b, const zt_pass *pass, double *ft) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int B = lm->B, C = lm->cfg.hidden_size;
  const int K = lm->cfg.cls_classes, G = B / lm->cfg.cls_choices, W = B * K / G;
  const int reg = lm->cfg.cls_regression;
  zt_check(b->sentence_labels != NULL, "internal error", "bert: a classification head without labels");
  for (int g = 0; g < G && !reg; g++)
    zt_check(b->sentence_labels[g] >= 0 && b->sentence_labels[g] < W, "internal error", "bert: label %d of sample "
             "%d outside the %d classes", b->sentence_labels[g], g, W);
  double t0 = ft ? zt_now() : 0.0, t1 = 0.0;
  pooler_forward(m, b->sentence_labels, G);
  if (ft) ft[ZT_BERT_FT_POOLER] += (t1 = zt_now()) - t0;
  const zt_dropout d = cls_dropout(m, pass);
  be->dropout_forward(dt, m->cls_in, m->pooled, B, (size_t)C, &d);
  be->matmul_forward(dt, m->bin_logits, NULL, m->cls_in, m->cls_w, m->cls_b, B, C, K);
  const size_t es = zt_dtype_size(dt), nl = (size_t)B * K;
  void *raw = zt_malloc(nl * es, "bert logits");
  be->to_host(raw, m->bin_logits, nl * es);
  zt_convert(m->h_logits, ZT_DTYPE_FP32, raw, dt, nl);
  free(raw);
  double sum = 0.0;
  if (reg) { /* MSELoss(logits.view(-1), labels.float()): the mean over the samples, on the host (B values) */
    for (int g = 0; g < G; g++) {
      const double e = (double)m->h_logits[g] - (double)(float)b->sentence_labels[g];
      m->h_target[g] = (float)b->sentence_labels[g];
      sum += e * e;
    }
  } else {
    be->cross_entropy_forward(dt, m->sop_losses, m->sop_lse, m->bin_logits, m->sop_tgt, G, W);
    const float *losses = m->sop_losses;
    if (!be->host_visible) {
      be->to_host(m->h_sop, m->sop_losses, (size_t)G * sizeof(float));
      losses = m->h_sop;
    }
    for (int g = 0; g < G; g++) sum += losses[g];
  }
  /* the predictions: torch.argmax over each sample's scores (the first of equal maxima) */
  for (int g = 0; g < G; g++) {
    const float *s = m->h_logits + (size_t)g * W;
    int best = 0;
    for (int k = 1; k < W; k++)
      if (s[k] > s[best]) best = k;
    m->pred[g] = best;
  }
  m->model.n_predictions = G;
  if (ft) {
    const double t2 = zt_now();
    ft[ZT_BERT_FT_BINARY_HEAD] += t2 - t1;
    ft[ZT_LM_FT_MODEL] += t2 - t0;
  }
  return (float)(sum / G);
}

static void bert_forward(zt_model *mm, int vchunk, const zt_batch *b, const zt_pass *pass_in, zt_losses *out) {
  zt_bert *m = mm->impl;
  zt_lm *lm = &m->lm;
  const zt_backend *be = mm->be;
  const zt_dtype dt = mm->dt;
  zt_check(!m->binary_head || b->token_types, "internal error", "bert: the binary head without token types");
  const zt_pass pass = zt_lm_stage_batch(lm, b, pass_in);
  out->n = 0;
  if (!zt_lm_encode(lm, vchunk, &pass)) return;
  if (m->cls) {
    const float loss = cls_forward(m, b, &pass, lm->fwd_time);
    zt_lm_head_params(lm, ZT_PARAM_RELEASE);
    *out = (zt_losses){.n = 1, .name = {"lm loss"}, .value = {loss}, .total = loss};
    return;
  }
  const int C = lm->cfg.hidden_size, N = zt_tp_local_rows(&lm->tp, lm->B * lm->T);
  double *ft = lm->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  const float sop = m->binary_head ? sop_forward(m, b, ft) : 0.0f;
  if (ft) t0 = zt_now();
  /* BertLMHead: dense, GELU (the exact erf form; --openai-gelu: the tanh form), layernorm, then the tied output layer
   * with its bias */
  be->matmul_forward(dt, m->h_pre, NULL, lm->lnf, m->hd_w, m->hd_b, N, C, C);
  be->act_forward(dt, head_gelu(lm), m->h_act, m->h_pre, (size_t)N * C);
  be->layernorm_forward(dt, m->h_ln, m->hln_mean, m->hln_rstd, m->h_act, m->hln_w, m->hln_b, N, C, lm->cfg.ln_eps);
  if (ft) ft[ZT_LM_FT_MODEL] += (t1 = zt_now()) - t0;
  const float lm_loss = zt_lm_output_loss(lm, m->h_ln, m->hbias); /* times itself into the model's latency */
  if (ft) ft[ZT_BERT_FT_LM_HEAD] += zt_now() - t0;
  zt_lm_head_params(lm, ZT_PARAM_RELEASE);
  *out = (zt_losses){.n = m->binary_head ? 2 : 1, .name = {"lm loss", "sop loss"}, .value = {lm_loss, sop},
                     .total = lm_loss + sop};
}

/* ---- backward ----------------------------------------------------------------------------------------------- */

/* The masked-LM head's backward into lm->dlnf (=). */
static void lm_head_backward(zt_bert *m, float grad_scale) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int C = lm->cfg.hidden_size, N = zt_tp_local_rows(&lm->tp, lm->B * lm->T);
  void *dh = lm->stack.scratch.tmp;
  zt_lm_output_loss_backward(lm, grad_scale, m->h_ln, m->dhbias, dh);
  be->layernorm_backward(dt, m->hgrad, m->dhln_w, m->dhln_b, dh, m->h_act, m->hln_w, m->hln_mean, m->hln_rstd, N, C);
  be->act_backward(dt, head_gelu(lm), m->hgrad, m->h_pre, m->hgrad, (size_t)N * C);
  be->matmul_backward(dt, lm->dlnf, m->dhd_w, m->dhd_b, m->hgrad, lm->lnf, m->hd_w, NULL, N, C, C);
}

/* The pooler's backward from d(pooled) in m->dpool: its first tokens' gradient added into lm->dlnf (this rank's
 * rows of them with --sequence-parallel). */
static void pooler_backward(zt_bert *m) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int B = lm->B, T = lm->T, C = lm->cfg.hidden_size, NF = B * T, N = zt_tp_local_rows(&lm->tp, NF);
  be->act_backward(dt, ZT_ACT_TANH, m->dpool, m->pool_pre, m->dpool, (size_t)B * C);
  be->matmul_backward(dt, m->dpool2, m->dpool_w, m->dpool_b, m->dpool, m->pool_in, m->pool_w, NULL, B, C, C);
  if (zt_tp_sp(&lm->tp)) /* Megatron's gather with tensor_parallel_output_grad=False: each rank keeps its rows */
    be->embedding_backward_range(dt, lm->dlnf, m->first_rows, m->dpool2, B, C, zt_tp_row0(&lm->tp, NF), N);
  else
    be->embedding_backward(dt, lm->dlnf, m->first_rows, m->dpool2, B, C);
}

/* The sentence-order loss's backward (mean over the samples) through the binary head and the pooler; adds the
 * first tokens' gradient into lm->dlnf (this rank's rows of them with --sequence-parallel). */
static void sop_backward(zt_bert *m, float grad_scale) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int B = lm->B, C = lm->cfg.hidden_size;
  float *dloss = zt_backend_host_view(be, m->sop_dloss, m->h_sop);
  for (int r = 0; r < B; r++) dloss[r] = grad_scale / (float)B;
  zt_backend_commit(be, m->sop_dloss, dloss, (size_t)B * sizeof(float));
  be->cross_entropy_backward(dt, m->bin_logits, m->bin_logits, m->sop_lse, m->sop_tgt, m->sop_dloss, B, 2);
  be->matmul_backward(dt, m->dpool, m->dbin_w, m->dbin_b, m->bin_logits, m->pooled, m->bin_w, NULL, B, C, 2);
  pooler_backward(m);
}

/* The classification loss's backward (mean over the samples) through the head, the dropout and the pooler into
 * lm->dlnf (=: only the first tokens get a gradient). */
static void cls_backward(zt_bert *m, float grad_scale) {
  zt_lm *lm = &m->lm;
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  const int B = lm->B, T = lm->T, C = lm->cfg.hidden_size, NF = B * T, N = zt_tp_local_rows(&lm->tp, NF);
  const int K = lm->cfg.cls_classes, G = B / lm->cfg.cls_choices, W = B * K / G;
  if (lm->cfg.cls_regression) { /* d(mean of (x - y)^2) / dx = 2 (x - y) / G, scaled */
    float *d = zt_malloc((size_t)G * sizeof(float), "bert regression gradient");
    void *raw = zt_malloc((size_t)G * zt_dtype_size(dt), "bert regression gradient");
    for (int g = 0; g < G; g++) d[g] = grad_scale * 2.0f * (m->h_logits[g] - m->h_target[g]) / (float)G;
    zt_convert(raw, dt, d, ZT_DTYPE_FP32, (size_t)G);
    be->from_host(m->bin_logits, raw, (size_t)G * zt_dtype_size(dt));
    free(d), free(raw);
  } else {
    float *dloss = zt_backend_host_view(be, m->sop_dloss, m->h_sop);
    for (int g = 0; g < G; g++) dloss[g] = grad_scale / (float)G;
    zt_backend_commit(be, m->sop_dloss, dloss, (size_t)G * sizeof(float));
    be->cross_entropy_backward(dt, m->bin_logits, m->bin_logits, m->sop_lse, m->sop_tgt, m->sop_dloss, G, W);
  }
  be->matmul_backward(dt, m->dpool, m->dcls_w, m->dcls_b, m->bin_logits, m->cls_in, m->cls_w, NULL, B, C, K);
  const zt_dropout d = cls_dropout(m, &lm->pass);
  be->dropout_backward(dt, m->dpool, m->dpool, B, (size_t)C, &d);
  be->memset(lm->dlnf, 0, (size_t)N * C * zt_dtype_size(dt));
  pooler_backward(m);
}

static void bert_backward(zt_model *mm, float grad_scale) {
  zt_bert *m = mm->impl;
  zt_lm *lm = &m->lm;
  zt_check(!m->cfg.forward_only, "internal error", "bert: backward of a forward-only model");
  if (lm->last && lm->stack.fwd_chunk == lm->vpp - 1) { /* else dres holds d(output) from the next stage */
    zt_lm_head_params(lm, ZT_PARAM_FETCH);
    if (m->cls) {
      cls_backward(m, grad_scale);
    } else {
      lm_head_backward(m, grad_scale);
      if (m->binary_head) sop_backward(m, grad_scale);
    }
    zt_lm_final_ln_backward(lm);
    zt_lm_head_params(lm, ZT_PARAM_RELEASE);
    zt_model_param_event(mm, ZT_PARAM_GRAD_READY, zt_lm_unit_head(lm));
  }
  zt_lm_backward(lm);
}

static zt_flops_profiler *bert_flops_profiler(zt_model *mm, const zt_flops_profiler_config *cfg) {
  return zt_bert_flops_profiler(mm->impl, cfg);
}

static void bert_profile(zt_model *mm, double *slots) {
  zt_bert *m = mm->impl;
  m->lm.fwd_time = slots;
  m->lm.emb.fwd_time = slots ? slots + ZT_LM_FT_WORD : NULL;
  zt_stack_profile(&m->lm.stack, slots ? slots + ZT_BERT_FT_SLOTS : NULL);
}

/* A shorter pass (the data sampler's cut of a micro batch, train/engine.c): the first rows of the buffers. */
static void bert_set_seq_length(zt_model *mm, int T) {
  zt_bert *m = mm->impl;
  zt_lm_set_seq_length(&m->lm, T);
}

static const zt_model_ops k_bert_ops = {.kind = "bert", .init_range = bert_init_range, .forward = bert_forward,
                                        .backward = bert_backward, .free = bert_free,
                                        .flops_profiler = bert_flops_profiler, .profile = bert_profile,
                                        .set_seq_length = bert_set_seq_length};
