/* GPT: the language model (models/transformer/language_model.h) with causal self-attention and its output layer
 * straight after the final layernorm; the engine's zt_model over it, and GPT's one-process API. */
#include "models/gpt/gpt.h"

#include <stdlib.h>
#include <string.h>

#include "models/moe/moe.h"
#include "runtime/base/error.h"

static const zt_model_ops k_gpt_ops;

/* The configuration with the MLP slots of its MoE flags (DeepSpeed's MoE layers where a layer has experts). */
static zt_gpt_config with_moe(const zt_gpt_config *cfg) {
  zt_gpt_config c = *cfg;
  if (zt_moe_on(cfg->moe)) c.make_ffn = zt_moe_make_ffn, c.ffn_ctx = cfg->moe;
  return c;
}

void zt_gpt_single_table(const zt_gpt_config *cfg, zt_param_table *t) {
  const zt_gpt_config c = with_moe(cfg);
  zt_lm_one_stage_table(&c, 1, NULL, t);
}

void zt_gpt_count_params(const zt_gpt_config *cfg, int64_t *total, int64_t *largest) {
  const zt_gpt_config c = with_moe(cfg);
  zt_lm_count_params(&c, NULL, total, largest);
}

static void setup(zt_gpt *m, const zt_gpt_config *cfg) {
  memset(m, 0, sizeof(*m));
  m->cfg = with_moe(cfg);
  m->cfg.bidirectional = 0;
  m->cfg.num_tokentypes = 0;
  m->model = (zt_model){.ops = &k_gpt_ops, .impl = m, .name = "GPT", .n_losses = 1, .loss_names = {"lm loss"}};
  if (zt_moe_on(cfg->moe)) { /* pretrain_gpt.py's loss_func: the lm loss plus the MoE layers' weighted aux losses */
    m->model.n_losses = 2;
    m->model.loss_names[1] = "moe loss";
  }
  zt_check(!cfg->kd || cfg->pp_size <= 1, "internal error", "gpt: the KD term needs one pipeline stage (the "
           "arguments refuse others)");
  if (cfg->kd) { /* with --mos/--kd loss_func returns the total first and a moe loss even without MoE layers */
    m->model.n_losses = 4;
    m->model.loss_names[0] = "total loss", m->model.loss_names[1] = "lm loss";
    m->model.loss_names[2] = "moe loss", m->model.loss_names[3] = cfg->kd->name;
    m->kd.cfg = *cfg->kd;
  }
  zt_lm_setup(&m->lm, &m->cfg, &m->model, &m->table, &m->plan, NULL);
  if (cfg->kd) m->lm.kd = &m->kd;
}

size_t zt_gpt_plan_bytes(const zt_gpt_config *cfg, int B, size_t *by_kind) {
  zt_gpt_config c = *cfg;
  c.micro_batch = B;
  zt_gpt *m = zt_calloc(1, sizeof *m, "gpt sizing");
  setup(m, &c);
  zt_lm_plan(&m->lm);
  const size_t total = zt_memplan_total(&m->plan);
  if (by_kind) memcpy(by_kind, m->plan.bytes, sizeof m->plan.bytes);
  zt_lm_teardown(&m->lm);
  free(m);
  return total;
}

static size_t plan_bytes_cb(const void *cfg, int B) { return zt_gpt_plan_bytes(cfg, B, NULL); }

void zt_gpt_build(zt_gpt *m, const zt_gpt_config *cfg, size_t mem_limit) {
  setup(m, cfg);
  zt_lm_plan(&m->lm); /* sizing */
  zt_model_check_plan(&m->plan, m->model.be, m->model.dt, cfg->micro_batch, cfg->recompute_full, mem_limit,
                      plan_bytes_cb, cfg);
  zt_memplan_allocate(&m->plan);
  zt_lm_plan(&m->lm); /* carving */
  zt_lm_bind(&m->lm);
  m->params = m->model.dt == ZT_DTYPE_FP32 ? m->model.params : NULL;
  m->grads = m->model.grads;
  m->optim_state = m->model.optim_state;
  m->master = m->model.master;
  m->logits = m->lm.logits;
  m->model.out_logits = m->lm.logits;
}

void zt_gpt_free(zt_gpt *m) {
  zt_kd_free(&m->kd);
  zt_lm_free_host(&m->lm);
  zt_lm_teardown(&m->lm);
  zt_memplan_free(&m->plan);
}

static void gpt_free(zt_model *mm) {
  zt_gpt *m = mm->impl;
  const int owned = m->owned;
  if (m->moe_choices > 0)
    zt_log("> MoE: %lld of %lld token choices dropped by the expert capacity in this rank's training passes (%.2f%%)\n",
           (long long)m->moe_dropped, (long long)m->moe_choices, 100.0 * (double)m->moe_dropped / (double)m->moe_choices);
  zt_gpt_free(m);
  if (owned) free(m);
}

static zt_gpt_config config_of(const zt_model_args *a, const zt_model_setup *s) {
  zt_gpt_config c = zt_lm_config_from(a, s);
  c.dec_layers = c.dec_seq_length = 0; /* a decoder-only model: no encoder-decoder stack */
  return c;
}

zt_model *zt_gpt_create(const zt_model_args *a, const zt_model_setup *s) {
  const zt_gpt_config c = config_of(a, s);
  zt_gpt *m = zt_malloc(sizeof *m, "GPT model");
  zt_gpt_build(m, &c, s->mem_limit);
  m->owned = 1;
  return &m->model;
}

void zt_gpt_count(const zt_model_args *a, int64_t *total, int64_t *largest) {
  const zt_model_setup one = {.micro_batch = 1, .seq_length = a->max_positions};
  const zt_gpt_config c = config_of(a, &one);
  zt_gpt_count_params(&c, total, largest);
}

/* ---- initialization ----------------------------------------------------------------------------------------- */

static void gpt_init_range(zt_model *mm, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt) {
  zt_gpt *m = mm->impl;
  zt_lm_init_range(&m->lm, seed, lo, hi, value_dt);
}

void zt_gpt_init_params(zt_gpt *m, uint64_t seed) {
  m->model.be->memset(m->model.params, 0, m->table.numel * zt_dtype_size(m->model.dt)); /* padding stays zero */
  gpt_init_range(&m->model, seed, 0, m->table.numel, ZT_DTYPE_FP32);
}

void zt_gpt_init_params_range(zt_gpt *m, uint64_t seed, size_t lo, size_t hi) {
  gpt_init_range(&m->model, seed, lo, hi, ZT_DTYPE_FP32);
}

size_t zt_gpt_num_params(const zt_gpt *m) { return zt_model_num_params(&m->model); }

/* ---- forward and backward ------------------------------------------------------------------------------------ */

static void gpt_forward(zt_model *mm, int vchunk, const zt_batch *b, const zt_pass *pass_in, zt_losses *out) {
  zt_gpt *m = mm->impl;
  zt_lm *lm = &m->lm;
  const zt_pass pass = zt_lm_stage_batch(lm, b, pass_in);
  out->n = 0;
  if (!zt_lm_encode(lm, vchunk, &pass)) return; /* the output goes to the next stage */
  const int moe = zt_moe_on(m->cfg.moe);
  for (int l = 0; pass.training && moe && l < lm->stack.nlayers; l++) {
    const zt_moe_gating *g = zt_moe_last_gating(&lm->stack.ffns[l]);
    if (g) m->moe_choices += (int64_t)g->S * g->k, m->moe_dropped += g->dropped;
  }
  const float loss = zt_lm_output_loss(lm, lm->lnf, NULL);
  zt_lm_head_params(lm, ZT_PARAM_RELEASE);
  *out = (zt_losses){.n = 1, .name = {"lm loss"}, .value = {loss}, .total = loss};
  const float moe_loss = moe ? m->cfg.moe->loss_coeff * lm->aux : 0.0f;
  if (m->cfg.kd) { /* the teacher's logits of this micro batch: training passes only (loss_func's mos_loss = 0) */
    m->kd.active = 0;
    const float kd = pass_in->kd_teacher_logits ? zt_kd_forward(&m->kd, mm->be, mm->dt, lm->logits,
                                                                pass_in->kd_teacher_logits, lm->B, lm->B * lm->T,
                                                                lm->V, &lm->tp) : 0.0f;
    const float total = loss + moe_loss + kd;
    *out = (zt_losses){.n = 4, .name = {"total loss", "lm loss", "moe loss", m->cfg.kd->name},
                       .value = {total, loss, moe_loss, kd}, .total = total};
  } else if (moe) {
    *out = (zt_losses){.n = 2, .name = {"lm loss", "moe loss"}, .value = {loss, moe_loss}, .total = loss + moe_loss};
  }
}

static void gpt_backward(zt_model *mm, float grad_scale) {
  zt_gpt *m = mm->impl;
  zt_lm *lm = &m->lm;
  zt_check(!m->cfg.forward_only, "internal error", "gpt: backward of a forward-only model");
  lm->aux_grad = zt_moe_on(m->cfg.moe) ? m->cfg.moe->loss_coeff * grad_scale : 0.0f;
  if (lm->last && lm->stack.fwd_chunk == lm->vpp - 1) { /* else dres holds d(output) from the next stage */
    zt_lm_head_params(lm, ZT_PARAM_FETCH);
    zt_lm_output_loss_backward(lm, grad_scale, lm->lnf, NULL, lm->dlnf);
    zt_lm_final_ln_backward(lm);
    zt_lm_head_params(lm, ZT_PARAM_RELEASE);
    zt_model_param_event(mm, ZT_PARAM_GRAD_READY, zt_lm_unit_head(lm));
  }
  zt_lm_backward(lm);
}

static zt_flops_profiler *gpt_flops_profiler(zt_model *mm, const zt_flops_profiler_config *cfg) {
  return zt_gpt_flops_profiler(mm->impl, cfg);
}

static void gpt_profile(zt_model *mm, double *slots) {
  zt_gpt *m = mm->impl;
  m->lm.fwd_time = slots;
  m->lm.emb.fwd_time = slots ? slots + ZT_GPT_FT_WORD : NULL;
  zt_stack_profile(&m->lm.stack, slots ? slots + ZT_GPT_FT_SLOTS : NULL);
}

static void gpt_set_seq_length(zt_model *mm, int T) {
  zt_gpt *m = mm->impl;
  zt_lm_set_seq_length(&m->lm, T);
}

static const zt_model_ops k_gpt_ops = {.kind = "gpt", .init_range = gpt_init_range, .forward = gpt_forward,
                                       .backward = gpt_backward, .free = gpt_free,
                                       .flops_profiler = gpt_flops_profiler, .profile = gpt_profile,
                                       .set_seq_length = gpt_set_seq_length};

/* ---- one-process API ---------------------------------------------------------------------------------------- */

float zt_gpt_forward(zt_gpt *m, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                     const float *loss_mask, const zt_pass *pass) {
  return zt_gpt_forward_chunk(m, 0, tokens, positions, targets, loss_mask, pass);
}

float zt_gpt_forward_chunk(zt_gpt *m, int chunk, const int32_t *tokens, const int32_t *positions,
                           const int32_t *targets, const float *loss_mask, const zt_pass *pass) {
  const zt_batch b = {.B = pass->B, .T = pass->T, .tokens = tokens, .positions = positions, .labels = targets,
                      .loss_mask = loss_mask, .padding = pass->key_padding, .key_start = pass->key_start};
  const zt_pass p = {.B = pass->B, .T = pass->T, .first_sample = pass->first_sample, .seed = pass->seed,
                     .training = pass->training, .ltd_keep = pass->ltd_keep, .ltd_step = pass->ltd_step};
  zt_losses out;
  gpt_forward(&m->model, chunk, &b, &p, &out);
  return out.n ? out.value[0] : 0.0f;
}

void zt_gpt_backward(zt_gpt *m, float grad_scale) { gpt_backward(&m->model, grad_scale); }
