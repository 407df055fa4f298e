/* The pre-LayerNorm transformer layer (Megatron's ParallelTransformerLayer, pre-LN residual, or the LayerNorm output
 * as the residual with --apply-residual-connection-post-layernorm), with the decoder layer's cross-attention when its
 * spec asks for it. With --sequence-parallel its layernorms, dropouts and residual
 * adds run on this rank's share of the tokens. */
#include <stdio.h>

#include "models/transformer/transformer.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

void zt_norm_register(zt_param_table *t, const char *prefix, const char *name, int C, int rms, int zero_centered) {
  char buf[200];
  int64_t shape[1] = {C};
  snprintf(buf, sizeof buf, "%s.%s.weight", prefix, name);
  zt_param_table_add(t, buf, 1, shape, zero_centered ? ZT_INIT_ZEROS : ZT_INIT_ONES, 0, 1, -1);
  if (rms) return;
  snprintf(buf, sizeof buf, "%s.%s.bias", prefix, name);
  zt_param_table_add(t, buf, 1, shape, ZT_INIT_ZEROS, 0, 1, -1);
}

static void add_norm(zt_param_table *t, const char *prefix, const char *name, const zt_block_config *cfg) {
  zt_norm_register(t, prefix, name, cfg->C, cfg->rmsnorm, cfg->ln_1p);
}

void zt_block_register(zt_param_table *t, const char *prefix, const zt_layer_spec *spec, const zt_block_config *cfg,
                       zt_ffn *ffn) {
  char mlp[200];
  add_norm(t, prefix, "input_layernorm", cfg);
  zt_attn_register(t, prefix, "self_attention", ZT_ATTN_SELF, cfg);
  add_norm(t, prefix, "post_attention_layernorm", cfg);
  if (spec->cross_attention) {
    zt_attn_register(t, prefix, "inter_attention", ZT_ATTN_CROSS, cfg);
    add_norm(t, prefix, "post_inter_attention_layernorm", cfg);
  }
  snprintf(mlp, sizeof mlp, "%s.mlp", prefix);
  ffn->register_params(ffn, t, mlp, cfg);
}

void zt_block_bind(zt_block *blk, const zt_param_table *t, const char *prefix, void *params, void *grads, size_t es) {
  char mlp[200];
  zt_block_params *dst[2] = {&blk->p, &blk->g};
  void *flat[2] = {params, grads};
  const int cross = blk->spec.cross_attention;
  for (int i = 0; i < 2; i++) {
    dst[i]->ln1_w = zt_param_addr(t, flat[i], es, prefix, "input_layernorm.weight");
    dst[i]->ln1_b = zt_param_addr_if(t, flat[i], es, prefix, "input_layernorm.bias");
    dst[i]->ln2_w = zt_param_addr(t, flat[i], es, prefix, "post_attention_layernorm.weight");
    dst[i]->ln2_b = zt_param_addr_if(t, flat[i], es, prefix, "post_attention_layernorm.bias");
    dst[i]->ln3_w = cross ? zt_param_addr(t, flat[i], es, prefix, "post_inter_attention_layernorm.weight") : NULL;
    dst[i]->ln3_b = cross ? zt_param_addr_if(t, flat[i], es, prefix, "post_inter_attention_layernorm.bias") : NULL;
  }
  zt_attn_bind(&blk->attn_p, &blk->attn_g, ZT_ATTN_SELF, t, prefix, "self_attention", params, grads, es);
  if (cross) zt_attn_bind(&blk->inter_p, &blk->inter_g, ZT_ATTN_CROSS, t, prefix, "inter_attention", params, grads, es);
  snprintf(mlp, sizeof mlp, "%s.mlp", prefix);
  blk->ffn.bind(&blk->ffn, t, mlp, params, grads, es);
}

void zt_block_plan_acts(zt_block *blk, zt_memplan *plan, const zt_block_config *cfg, int B, int T, int Tk) {
  const size_t N = (size_t)zt_tp_local_rows(cfg->tp, B * T), NC = N * cfg->C * zt_dtype_size(zt_block_dt(cfg));
  zt_block_acts *a = &blk->a;
  a->ln1 = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NC);
  a->ln1_mean = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  a->ln1_rstd = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  zt_attn_plan_acts(&a->attn, plan, ZT_ATTN_SELF, cfg, B, T, T);
  a->res2 = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NC);
  a->ln2 = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NC);
  a->ln2_mean = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  a->ln2_rstd = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  if (blk->spec.cross_attention) {
    zt_attn_plan_acts(&a->inter, plan, ZT_ATTN_CROSS, cfg, B, T, Tk);
    a->res3 = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NC);
    a->ln3 = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NC);
    a->ln3_mean = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
    a->ln3_rstd = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N);
  }
  blk->ffn.plan_acts(&blk->ffn, plan, cfg, (int)N);
}

void zt_block_plan_scratch(zt_block_scratch *s, zt_memplan *plan, const zt_layer_spec *spec,
                           const zt_block_config *cfg, const zt_ffn *ffns, int nffn, int B, int T, int Tk) {
  const zt_backend *be = zt_block_be(cfg);
  const size_t es = zt_dtype_size(zt_block_dt(cfg));
  const size_t NF = (size_t)B * T, N = (size_t)zt_tp_local_rows(cfg->tp, B * T), A = (size_t)cfg->NH * cfg->HD;
  s->tmp = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * cfg->C * es);
  s->dln = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * cfg->C * es);
  s->dqkv = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NF * 3 * A * es);
  s->dctx = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, NF * A * es);
  const int P = zt_usp_on(cfg->usp) ? cfg->usp->size : 1; /* Ulysses: this rank's heads over the whole sequence */
  const zt_attention_desc d = {.B = B, .Tq = T * P, .Tk = T * P, .NH = cfg->NH / P, .HD = cfg->HD,
                               .head0 = zt_tp_on(cfg->tp) ? cfg->tp->rank * cfg->NH : 0, .layout = cfg->sparse,
                               .layout_as_mask = cfg->sparse_as_mask, .chunk = cfg->fpdt_chunk};
  size_t attn = be->attention_scratch_floats(&d);
  if (spec->cross_attention) {
    s->dkv = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, (size_t)B * Tk * 2 * A * es);
    s->dmem = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, (size_t)B * Tk * cfg->C * es);
    const zt_attention_desc dc = {.B = B, .Tq = T, .Tk = Tk, .NH = cfg->NH, .HD = cfg->HD};
    const size_t ac = be->attention_scratch_floats(&dc);
    if (ac > attn) attn = ac;
  } else {
    s->dkv = s->dmem = NULL;
  }
  s->attn = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, attn);
  s->attn_saved = NULL;
  if (cfg->recompute_core_attention) { /* one layer's probabilities at a time: the self-attention's or the cross's */
    size_t saved = be->attention_saved_floats(&d);
    if (spec->cross_attention) {
      const zt_attention_desc dc = {.B = B, .Tq = T, .Tk = Tk, .NH = cfg->NH, .HD = cfg->HD};
      const size_t sc = be->attention_saved_floats(&dc);
      if (sc > saved) saved = sc;
    }
    s->attn_saved = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, saved);
  }
  size_t ffn = 0;
  for (int i = 0; i < nffn; i++) {
    const size_t b = ffns[i].scratch_bytes(&ffns[i], cfg, (int)N);
    ffn = b > ffn ? b : ffn;
  }
  s->ffn = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, ffn);
}

static zt_dropout hidden_dropout(const zt_block_config *cfg, const zt_pass *pass, int layer, int slot) {
  return (zt_dropout){.p = pass->training ? cfg->hidden_dropout : 0.0f, .seed = pass->seed,
                      .site = zt_dropout_site(layer, slot), .first_sample = pass->first_sample};
}

/* out = residual + dropout(x) over the layer's rows (residual NULL: the dropout's backward); with
 * --sequence-parallel or DeepSpeed-Ulysses this rank's tokens, keyed by their global positions. */
static void dropout_rows(void *out, const void *residual, const void *x, const zt_block_config *cfg,
                         const zt_pass *pass, const zt_dropout *d) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int NF = pass->B * pass->T;
  if (zt_tp_sp(cfg->tp))
    be->dropout_rows(dt, out, residual, x, zt_tp_row0(cfg->tp, NF), zt_tp_local_rows(cfg->tp, NF), pass->T, cfg->C, d);
  else
    zt_pass_dropout(be, dt, out, residual, x, pass, cfg->C, d); /* also Ulysses' local rows */
}

/* The pass of a cross-attention: the encoder's key padding; no packed-document starts (those are the decoder's). */
static zt_pass cross_pass(const zt_pass *pass, const zt_cross_input *mem) {
  return (zt_pass){.B = pass->B, .T = pass->T, .first_sample = pass->first_sample, .seed = pass->seed,
                   .training = pass->training, .key_padding = mem->padding};
}

/* A sublayer's LayerNorm backward where its branch meets the residual stream: s->dln holds d(LN output) from the
 * branch and dres d(the residual add). Pre-LN: dres += LN'(dln). residual_post_ln (the LN output was the residual):
 * dres = LN'(dln + dres). */
static void layernorm_residual_backward(void *dres, zt_block_scratch *s, void *dw, void *db, const void *inp,
                                        const void *w, const float *mean, const float *rstd,
                                        const zt_block_config *cfg, int N, int post) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const size_t NC = (size_t)N * cfg->C;
  if (post) {
    be->accumulate(dt, s->dln, dres, NC);
    zt_norm_backward(be, dt, cfg->rmsnorm, cfg->ln1p, dres, dw, db, s->dln, inp, w, mean, rstd, N, cfg->C);
    return;
  }
  zt_norm_backward(be, dt, cfg->rmsnorm, cfg->ln1p, s->tmp, dw, db, s->dln, inp, w, mean, rstd, N, cfg->C);
  be->accumulate(dt, dres, s->tmp, NC);
}

float zt_block_forward(zt_block *blk, void *out, const void *x, const zt_cross_input *mem, const zt_block_config *cfg,
                       const zt_pass *pass, zt_block_scratch *s) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int N = zt_tp_local_rows(cfg->tp, pass->B * pass->T), C = cfg->C;
  zt_block_acts *a = &blk->a;
  double *ft = blk->fwd_time, t0 = ft ? zt_now() : 0.0, t1 = t0;
  a->attn.fwd_time = ft;
  blk->ffn.fwd_time = ft;
  if (cfg->recompute_core_attention) a->attn.saved = a->inter.saved = s->attn_saved;
  zt_norm_forward(be, dt, cfg->rmsnorm, cfg->ln1p, a->ln1, a->ln1_mean, a->ln1_rstd, x, blk->p.ln1_w, blk->p.ln1_b, N, C,
                  cfg->ln_eps);
  if (ft) ft[ZT_FT_LN1] += (t1 = zt_now()) - t0;
  zt_attn_forward(&blk->attn_p, &a->attn, s->tmp, a->ln1, NULL, cfg, pass, pass->T, blk->spec.self_mask,
                  zt_dropout_site(blk->layer, ZT_SITE_ATTN_PROBS));
  if (ft) ft[ZT_FT_ATTN] += zt_now() - t1;
  const int post = blk->spec.residual_post_ln;
  zt_dropout d1 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_ATTN_OUT);
  dropout_rows(a->res2, post ? a->ln1 : x, s->tmp, cfg, pass, &d1);
  if (ft) t1 = zt_now();
  zt_norm_forward(be, dt, cfg->rmsnorm, cfg->ln1p, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, blk->p.ln2_w, blk->p.ln2_b, N,
                  C, cfg->ln_eps);
  if (ft) ft[ZT_FT_LN2] += zt_now() - t1;
  const void *mlp_in = a->ln2, *mlp_res = a->res2;
  if (blk->spec.cross_attention) {
    zt_check(mem && mem->x, "internal error", "layer %d: cross-attention without an encoder output", blk->layer);
    const zt_pass cross = cross_pass(pass, mem);
    a->inter.fwd_time = ft ? ft + ZT_FT_INTER_BASE : NULL;
    if (ft) t1 = zt_now();
    zt_attn_forward(&blk->inter_p, &a->inter, s->tmp, a->ln2, mem->x, cfg, &cross, mem->Tk, ZT_ATTN_NONE,
                    zt_dropout_site(blk->layer, ZT_SITE_INTER_PROBS));
    if (ft) ft[ZT_FT_INTER] += zt_now() - t1;
    zt_dropout d3 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_INTER_OUT);
    dropout_rows(a->res3, post ? a->ln2 : a->res2, s->tmp, cfg, pass, &d3);
    if (ft) t1 = zt_now();
    zt_norm_forward(be, dt, cfg->rmsnorm, cfg->ln1p, a->ln3, a->ln3_mean, a->ln3_rstd, a->res3, blk->p.ln3_w, blk->p.ln3_b, N,
                    C, cfg->ln_eps);
    if (ft) ft[ZT_FT_LN3] += zt_now() - t1;
    mlp_in = a->ln3;
    mlp_res = a->res3;
  }
  if (post) mlp_res = mlp_in;
  if (ft) t1 = zt_now();
  const float aux = blk->ffn.forward(&blk->ffn, s->tmp, mlp_in, cfg, pass, N, s->ffn);
  if (ft) ft[ZT_FT_MLP] += zt_now() - t1;
  zt_dropout d2 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_MLP_OUT);
  dropout_rows(out, mlp_res, s->tmp, cfg, pass, &d2);
  if (ft) ft[ZT_FT_LAYER] += zt_now() - t0;
  return aux;
}

void zt_block_backward(zt_block *blk, void *dres, const void *x, const zt_cross_input *mem, const zt_block_config *cfg,
                       const zt_pass *pass, zt_block_scratch *s, float aux_grad) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int N = zt_tp_local_rows(cfg->tp, pass->B * pass->T), C = cfg->C;
  zt_block_acts *a = &blk->a;
  const int cross = blk->spec.cross_attention;
  const int post = blk->spec.residual_post_ln;
  if (cfg->recompute_core_attention) a->attn.saved = a->inter.saved = s->attn_saved;
  /* MLP branch: d(fcproj) = dropout'(dres); dres += LN'(ffn'(...)) */
  zt_dropout d2 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_MLP_OUT);
  dropout_rows(s->tmp, NULL, dres, cfg, pass, &d2);
  blk->ffn.backward(&blk->ffn, s->dln, s->tmp, cross ? a->ln3 : a->ln2, cfg, pass, N, s->ffn, aux_grad);
  if (cross) {
    layernorm_residual_backward(dres, s, blk->g.ln3_w, blk->g.ln3_b, a->res3, blk->p.ln3_w, a->ln3_mean,
                                a->ln3_rstd, cfg, N, post);
    /* cross-attention branch: its input is LN2's output, its keys the encoder output */
    const zt_pass xpass = cross_pass(pass, mem);
    zt_dropout d3 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_INTER_OUT);
    dropout_rows(s->tmp, NULL, dres, cfg, pass, &d3);
    zt_attn_backward(&blk->inter_p, &blk->inter_g, &a->inter, s->dln, s->dmem, s->tmp, a->ln2, mem->x, cfg, &xpass,
                     mem->Tk, ZT_ATTN_NONE, zt_dropout_site(blk->layer, ZT_SITE_INTER_PROBS), s->dctx, s->dqkv,
                     s->dkv, s->attn);
    be->accumulate(dt, mem->grad, s->dmem, (size_t)pass->B * mem->Tk * C);
  }
  layernorm_residual_backward(dres, s, blk->g.ln2_w, blk->g.ln2_b, a->res2, blk->p.ln2_w, a->ln2_mean, a->ln2_rstd,
                              cfg, N, post);
  /* attention branch */
  zt_dropout d1 = hidden_dropout(cfg, pass, blk->layer, ZT_SITE_ATTN_OUT);
  dropout_rows(s->tmp, NULL, dres, cfg, pass, &d1);
  zt_attn_backward(&blk->attn_p, &blk->attn_g, &a->attn, s->dln, NULL, s->tmp, a->ln1, NULL, cfg, pass,
                   pass->T, blk->spec.self_mask, zt_dropout_site(blk->layer, ZT_SITE_ATTN_PROBS), s->dctx, s->dqkv,
                   NULL, s->attn);
  layernorm_residual_backward(dres, s, blk->g.ln1_w, blk->g.ln1_b, x, blk->p.ln1_w, a->ln1_mean, a->ln1_rstd, cfg,
                              N, post);
}
