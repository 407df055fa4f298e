/* The pre-LayerNorm transformer block (Megatron's ParallelTransformerLayer, pre-LN residual). With
 * --sequence-parallel its layernorms, dropouts and residual adds run on this rank's share of the tokens. */
#include <stdio.h>

#include "models/transformer/transformer.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

float *zt_param_ptr(const zt_param_table *t, float *flat, const char *prefix, const char *suffix) {
  return flat + zt_param_get(t, prefix, suffix)->offset;
}

static void add_norm(zt_param_table *t, const char *prefix, const char *name, int C) {
  char buf[200];
  int64_t shape[1] = {C};
  snprintf(buf, sizeof buf, "%s.%s.weight", prefix, name);
  zt_param_table_add(t, buf, 1, shape, ZT_INIT_ONES, 0, 1, -1);
  snprintf(buf, sizeof buf, "%s.%s.bias", prefix, name);
  zt_param_table_add(t, buf, 1, shape, ZT_INIT_ZEROS, 0, 1, -1);
}

void zt_block_register(zt_param_table *t, const char *prefix, const zt_block_config *cfg, zt_ffn *ffn) {
  char mlp[200];
  add_norm(t, prefix, "input_layernorm", cfg->C);
  zt_attn_register(t, prefix, "self_attention", ZT_ATTN_SELF, cfg);
  add_norm(t, prefix, "post_attention_layernorm", cfg->C);
  snprintf(mlp, sizeof mlp, "%s.mlp", prefix);
  ffn->register_params(t, mlp, cfg);
}

void zt_block_bind(zt_block *blk, const zt_param_table *t, const char *prefix, float *params, float *grads) {
  char mlp[200];
  zt_block_params *dst[2] = {&blk->p, &blk->g};
  float *flat[2] = {params, grads};
  for (int i = 0; i < 2; i++) {
    dst[i]->ln1_w = zt_param_ptr(t, flat[i], prefix, "input_layernorm.weight");
    dst[i]->ln1_b = zt_param_ptr(t, flat[i], prefix, "input_layernorm.bias");
    dst[i]->ln2_w = zt_param_ptr(t, flat[i], prefix, "post_attention_layernorm.weight");
    dst[i]->ln2_b = zt_param_ptr(t, flat[i], prefix, "post_attention_layernorm.bias");
  }
  zt_attn_bind(&blk->attn_p, &blk->attn_g, ZT_ATTN_SELF, t, prefix, "self_attention", params, grads);
  snprintf(mlp, sizeof mlp, "%s.mlp", prefix);
  blk->ffn.bind(&blk->ffn, t, mlp, params, grads);
}

void zt_block_plan_acts(zt_block *blk, zt_memplan *plan, const zt_block_config *cfg, int B, int T) {
  size_t N = (size_t)zt_tp_local_rows(cfg->tp, B * T);
  zt_block_acts *a = &blk->a;
  a->ln1 = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * cfg->C);
  a->ln1_mean = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  a->ln1_rstd = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  zt_attn_plan_acts(&a->attn, plan, ZT_ATTN_SELF, cfg, B, T, T);
  a->res2 = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * cfg->C);
  a->ln2 = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * cfg->C);
  a->ln2_mean = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  a->ln2_rstd = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  blk->ffn.plan_acts(&blk->ffn, plan, cfg, (int)N);
}

void zt_block_plan_scratch(zt_block_scratch *s, zt_memplan *plan, const zt_block_config *cfg,
                           const zt_ffn *ffn, int B, int T) {
  size_t NF = (size_t)B * T, N = (size_t)zt_tp_local_rows(cfg->tp, B * T), A = (size_t)cfg->NH * cfg->HD;
  s->tmp = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * cfg->C);
  s->dln = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * cfg->C);
  s->dqkv = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, NF * 3 * A);
  s->dctx = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, NF * A);
  zt_attention_desc d = {.B = B, .Tq = T, .Tk = T, .NH = cfg->NH, .HD = cfg->HD};
  s->attn = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, zt_attention_scratch_floats(&d));
  s->ffn = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, ffn->scratch_floats(cfg, (int)N));
}

static zt_dropout hidden_dropout(const zt_block_config *cfg, const zt_pass *pass, int layer, int slot) {
  return (zt_dropout){.p = pass->training ? cfg->hidden_dropout : 0.0f, .seed = pass->seed,
                      .site = zt_dropout_site(layer, slot), .first_sample = pass->first_sample};
}

/* out = residual + dropout(x) over the block's rows (residual NULL: the dropout's backward); with
 * --sequence-parallel this rank's tokens, keyed by their global positions. */
static void dropout_rows(float *out, const float *residual, const float *x, const zt_block_config *cfg,
                         const zt_pass *pass, const zt_dropout *d) {
  const int NF = pass->B * pass->T;
  const size_t S = (size_t)pass->T * cfg->C;
  if (zt_tp_sp(cfg->tp))
    zt_tp_dropout_rows(out, residual, x, zt_tp_row0(cfg->tp, NF), zt_tp_local_rows(cfg->tp, NF), pass->T, cfg->C, d);
  else if (residual)
    zt_dropout_add_forward(out, residual, x, pass->B, S, d);
  else
    zt_dropout_backward(out, x, pass->B, S, d);
}

void zt_block_forward(zt_block *blk, float *out, const float *x, const zt_block_config *cfg,
                      const zt_pass *pass, zt_block_scratch *s) {
  const int N = zt_tp_local_rows(cfg->tp, pass->B * pass->T), C = cfg->C;
  zt_block_acts *a = &blk->a;
  double *ft = blk->fwd_time, t0 = ft ? zt_now() : 0.0, t1 = t0;
  a->attn.fwd_time = ft;
  blk->ffn.fwd_time = ft;
  zt_layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, blk->p.ln1_w, blk->p.ln1_b, N, C, cfg->ln_eps);
  if (ft) ft[ZT_FT_LN1] += (t1 = zt_now()) - t0;
  zt_attn_forward(&blk->attn_p, &a->attn, s->tmp, a->ln1, NULL, cfg, pass, pass->T, cfg->self_mask,
                  zt_dropout_site(blk->layer, ZT_SITE_ATTN_PROBS));
  if (ft) ft[ZT_FT_ATTN] += zt_now() - t1;
  zt_dropout d1 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_ATTN_OUT);
  dropout_rows(a->res2, x, s->tmp, cfg, pass, &d1);
  if (ft) t1 = zt_now();
  zt_layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, blk->p.ln2_w, blk->p.ln2_b, N, C, cfg->ln_eps);
  if (ft) ft[ZT_FT_LN2] += zt_now() - t1;
  if (ft) t1 = zt_now();
  blk->ffn.forward(&blk->ffn, s->tmp, a->ln2, cfg, N);
  if (ft) ft[ZT_FT_MLP] += zt_now() - t1;
  zt_dropout d2 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_MLP_OUT);
  dropout_rows(out, a->res2, s->tmp, cfg, pass, &d2);
  if (ft) ft[ZT_FT_LAYER] += zt_now() - t0;
}

void zt_block_backward(zt_block *blk, float *dres, const float *x, const zt_block_config *cfg,
                       const zt_pass *pass, zt_block_scratch *s) {
  const int N = zt_tp_local_rows(cfg->tp, pass->B * pass->T), C = cfg->C;
  zt_block_acts *a = &blk->a;
  /* MLP branch: d(fcproj) = dropout'(dres); dres += LN2'(ffn'(...)) */
  zt_dropout d2 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_MLP_OUT);
  dropout_rows(s->tmp, NULL, dres, cfg, pass, &d2);
  blk->ffn.backward(&blk->ffn, s->dln, s->tmp, a->ln2, cfg, N, s->ffn);
  zt_layernorm_backward(s->tmp, blk->g.ln2_w, blk->g.ln2_b, s->dln, a->res2, blk->p.ln2_w, a->ln2_mean,
                        a->ln2_rstd, N, C);
  zt_accumulate(dres, s->tmp, (size_t)N * C);
  /* attention branch */
  zt_dropout d1 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_ATTN_OUT);
  dropout_rows(s->tmp, NULL, dres, cfg, pass, &d1);
  zt_attn_backward(&blk->attn_p, &blk->attn_g, &a->attn, s->dln, NULL, s->tmp, a->ln1, NULL, cfg, pass,
                   pass->T, cfg->self_mask, zt_dropout_site(blk->layer, ZT_SITE_ATTN_PROBS), s->dctx, s->dqkv,
                   NULL, s->attn);
  zt_layernorm_backward(s->tmp, blk->g.ln1_w, blk->g.ln1_b, s->dln, x, blk->p.ln1_w, a->ln1_mean,
                        a->ln1_rstd, N, C);
  zt_accumulate(dres, s->tmp, (size_t)N * C);
}
