/* T5 (t5.h): the shared language model in its encoder-decoder mode with T5LMHead's bias on the tied output layer;
 * the engine's zt_model over it. */
#include "models/t5/t5.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

static const zt_model_ops k_t5_ops;

/* T5LMHead: lm_head.bias [V] (vocab-parallel, zeros), between the decoder's final layernorm and the output layer. */
static void register_head(zt_param_table *t, const zt_lm_config *c, int V) {
  (void)c;
  int64_t vb[1] = {V};
  zt_param_table_add(t, "lm_head.bias", 1, vb, ZT_INIT_ZEROS, 0, 1, 0);
}

void zt_t5_single_table(const zt_t5_config *cfg, zt_param_table *t) { zt_lm_one_stage_table(cfg, 1, register_head, t); }

static void setup(zt_t5 *m, const zt_t5_config *cfg) {
  memset(m, 0, sizeof(*m));
  m->cfg = *cfg;
  m->cfg.bidirectional = 1;
  m->cfg.num_tokentypes = 0;
  m->cfg.add_pooler = 0;
  zt_check(cfg->dec_layers > 0, "internal error", "t5: %d decoder layers", cfg->dec_layers);
  m->model = (zt_model){.ops = &k_t5_ops, .impl = m, .name = "T5", .n_losses = 1, .loss_names = {"lm loss"}};
  zt_lm_setup(&m->lm, &m->cfg, &m->model, &m->table, &m->plan, register_head);
}

static size_t plan_bytes(const void *cfg, int B) {
  zt_t5_config c = *(const zt_t5_config *)cfg;
  c.micro_batch = B;
  zt_t5 *m = zt_calloc(1, sizeof *m, "t5 sizing");
  setup(m, &c);
  zt_lm_plan(&m->lm);
  const size_t total = zt_memplan_total(&m->plan);
  zt_lm_teardown(&m->lm);
  free(m);
  return total;
}

void zt_t5_build(zt_t5 *m, const zt_t5_config *cfg, size_t mem_limit) {
  setup(m, cfg);
  zt_lm_plan(&m->lm); /* sizing */
  zt_model_check_plan(&m->plan, m->model.be, m->model.dt, cfg->micro_batch, cfg->recompute_full, mem_limit,
                      plan_bytes, &m->cfg);
  zt_memplan_allocate(&m->plan);
  zt_lm_plan(&m->lm); /* carving */
  zt_lm_bind(&m->lm);
  if (!m->lm.last) return;
  const size_t es = zt_dtype_size(m->model.dt);
  m->hbias = zt_param_addr(&m->table, m->model.params, es, "lm_head", "bias");
  m->dhbias = zt_param_addr(&m->table, m->lm.gbind, es, "lm_head", "bias");
}

void zt_t5_free(zt_t5 *m) {
  zt_lm_free_host(&m->lm);
  zt_lm_teardown(&m->lm);
  zt_memplan_free(&m->plan);
}

static void t5_free(zt_model *mm) {
  zt_t5 *m = mm->impl;
  const int owned = m->owned;
  zt_t5_free(m);
  if (owned) free(m);
}

zt_t5_config zt_t5_config_of(const zt_model_args *a, const zt_model_setup *s) {
  zt_t5_config c = zt_lm_config_from(a, s);
  c.bidirectional = 1; /* the encoder */
  return c;
}

zt_model *zt_t5_create(const zt_model_args *a, const zt_model_setup *s) {
  const zt_t5_config c = zt_t5_config_of(a, s);
  zt_t5 *m = zt_malloc(sizeof *m, "T5 model");
  zt_t5_build(m, &c, s->mem_limit);
  m->owned = 1;
  return &m->model;
}

void zt_t5_count(const zt_model_args *a, int64_t *total, int64_t *largest) {
  const zt_model_setup one = {.micro_batch = 1, .seq_length = a->max_positions};
  const zt_t5_config c = zt_t5_config_of(a, &one);
  zt_lm_count_params(&c, register_head, total, largest);
}

static void t5_init_range(zt_model *mm, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt) {
  zt_t5 *m = mm->impl;
  zt_lm_init_range(&m->lm, seed, lo, hi, value_dt);
}

void zt_t5_init_params(zt_t5 *m, uint64_t seed) {
  m->model.be->memset(m->model.params, 0, m->table.numel * zt_dtype_size(m->model.dt)); /* padding stays zero */
  t5_init_range(&m->model, seed, 0, m->table.numel, ZT_DTYPE_FP32);
}

/* ---- forward and backward ------------------------------------------------------------------------------------ */

static void t5_forward(zt_model *mm, int vchunk, const zt_batch *b, const zt_pass *pass_in, zt_losses *out) {
  zt_t5 *m = mm->impl;
  zt_lm *lm = &m->lm;
  const zt_pass pass = zt_lm_stage_batch(lm, b, pass_in);
  out->n = 0;
  if (!zt_lm_encode(lm, vchunk, &pass)) return;
  const float loss = zt_lm_output_loss(lm, lm->lnf, m->hbias);
  zt_lm_head_params(lm, ZT_PARAM_RELEASE);
  *out = (zt_losses){.n = 1, .name = {"lm loss"}, .value = {loss}, .total = loss};
}

static void t5_backward(zt_model *mm, float grad_scale) {
  zt_t5 *m = mm->impl;
  zt_lm *lm = &m->lm;
  zt_check(!m->cfg.forward_only, "internal error", "t5: backward of a forward-only model");
  if (lm->last) { /* else the stage tensors' gradients hold d(output) from the next stage */
    zt_lm_head_params(lm, ZT_PARAM_FETCH);
    zt_lm_output_loss_backward(lm, grad_scale, lm->lnf, m->dhbias, lm->dlnf);
    zt_lm_final_ln_backward(lm);
    zt_lm_head_params(lm, ZT_PARAM_RELEASE);
    zt_model_param_event(mm, ZT_PARAM_GRAD_READY, zt_lm_unit_head(lm));
  }
  zt_lm_backward(lm);
}

/* The flops profiler's module tree: Megatron-DeepSpeed's T5Model (language_model with the encoder and the decoder, then
 * T5LMHead, whose own F.linear with the tied word embeddings is the logits' matmul over the decoder's tokens; the
 * vocab-parallel cross-entropy is not patched by DeepSpeed: 0). Latency slots: the language model's, then each
 * encoder layer's and each decoder layer's ZT_FT_SLOTS; lm_head's latency is the logits and the cross-entropy. */
static int t5_slots(const zt_t5 *m) { return ZT_LM_FT_SLOTS + (m->cfg.num_layers + m->cfg.dec_layers) * ZT_FT_SLOTS; }

static zt_flops_profiler *t5_flops_profiler(zt_model *mm, const zt_flops_profiler_config *cfg) {
  const zt_t5 *m = mm->impl;
  const double N = (double)m->lm.B * m->lm.Td, C = m->cfg.hidden_size, V = m->lm.V; /* this rank's vocabulary */
  zt_flops_profiler *p = zt_flops_profiler_create(cfg, t5_slots(m));
  int root = zt_fp_add(p, -1, "", "T5Model", ZT_LM_FT_MODEL, 0, 0);
  zt_lm_flops_tree(p, root, &m->lm, ZT_LM_FT_SLOTS);
  zt_fp_add(p, root, "lm_head", "T5LMHead", ZT_LM_FT_LOGITS, N * C * V, 2 * N * C * V);
  zt_fp_finish(p, &m->table);
  return p;
}

static void t5_profile(zt_model *mm, double *slots) {
  zt_t5 *m = mm->impl;
  m->lm.fwd_time = slots;
  m->lm.emb.fwd_time = slots ? slots + ZT_LM_FT_WORD : NULL;
  zt_stack_profile(&m->lm.stack, slots ? slots + ZT_LM_FT_SLOTS : NULL);
  zt_stack_profile(&m->lm.dec, slots ? slots + ZT_LM_FT_SLOTS + m->cfg.num_layers * ZT_FT_SLOTS : NULL);
}

static const zt_model_ops k_t5_ops = {.kind = "t5", .init_range = t5_init_range, .forward = t5_forward,
                                      .backward = t5_backward, .free = t5_free, .flops_profiler = t5_flops_profiler,
                                      .profile = t5_profile};
