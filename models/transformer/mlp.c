/* The dense MLP of the MLP slot: h -> 4h (GELU) -> h. */
#include <stdio.h>
#include <stdlib.h>

#include "models/transformer/transformer.h"
#include "runtime/base/timer.h"

typedef struct {
  float *fc_w, *fc_b, *proj_w, *proj_b;          /* parameters */
  float *dfc_w, *dfc_b, *dproj_w, *dproj_b;      /* gradients */
  float *fc, *gelu;                              /* activations [N, FFN] */
} dense_mlp;

static void mlp_register(zt_param_table *t, const char *prefix, const zt_block_config *cfg) {
  char name[160];
  int64_t w1[2] = {cfg->FFN, cfg->C}, b1[1] = {cfg->FFN}, w2[2] = {cfg->C, cfg->FFN}, b2[1] = {cfg->C};
  snprintf(name, sizeof name, "%s.dense_h_to_4h.weight", prefix);
  zt_param_table_add(t, name, 2, w1, ZT_INIT_NORMAL, cfg->init_std, 0, 0);
  snprintf(name, sizeof name, "%s.dense_h_to_4h.bias", prefix);
  zt_param_table_add(t, name, 1, b1, ZT_INIT_ZEROS, 0, 1, 0);
  snprintf(name, sizeof name, "%s.dense_4h_to_h.weight", prefix);
  zt_param_table_add(t, name, 2, w2, ZT_INIT_NORMAL, cfg->out_init_std, 0, 1);
  snprintf(name, sizeof name, "%s.dense_4h_to_h.bias", prefix);
  zt_param_table_add(t, name, 1, b2, ZT_INIT_ZEROS, 0, 1, -1);
}

static void mlp_bind(zt_ffn *self, const zt_param_table *t, const char *prefix, float *params, float *grads) {
  dense_mlp *m = self->state;
  m->fc_w = zt_param_ptr(t, params, prefix, "dense_h_to_4h.weight");
  m->fc_b = zt_param_ptr(t, params, prefix, "dense_h_to_4h.bias");
  m->proj_w = zt_param_ptr(t, params, prefix, "dense_4h_to_h.weight");
  m->proj_b = zt_param_ptr(t, params, prefix, "dense_4h_to_h.bias");
  m->dfc_w = zt_param_ptr(t, grads, prefix, "dense_h_to_4h.weight");
  m->dfc_b = zt_param_ptr(t, grads, prefix, "dense_h_to_4h.bias");
  m->dproj_w = zt_param_ptr(t, grads, prefix, "dense_4h_to_h.weight");
  m->dproj_b = zt_param_ptr(t, grads, prefix, "dense_4h_to_h.bias");
}

static void mlp_plan_acts(zt_ffn *self, zt_memplan *plan, const zt_block_config *cfg, int N) {
  dense_mlp *m = self->state;
  m->fc = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, (size_t)N * cfg->FFN);
  m->gelu = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, (size_t)N * cfg->FFN);
}

static void mlp_forward(zt_ffn *self, float *out, const float *inp, const zt_block_config *cfg, int N) {
  dense_mlp *m = self->state;
  double *ft = self->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  zt_matmul_forward(m->fc, inp, m->fc_w, m->fc_b, N, cfg->C, cfg->FFN);
  if (ft) ft[ZT_FT_FC1] += (t1 = zt_now()) - t0, t0 = t1;
  zt_gelu_forward(m->gelu, m->fc, (size_t)N * cfg->FFN);
  if (ft) ft[ZT_FT_GELU] += (t1 = zt_now()) - t0, t0 = t1;
  zt_matmul_forward(out, m->gelu, m->proj_w, m->proj_b, N, cfg->FFN, cfg->C);
  if (ft) ft[ZT_FT_FC2] += zt_now() - t0;
}

static size_t mlp_scratch_floats(const zt_block_config *cfg, int N) { return (size_t)N * cfg->FFN; }

static void mlp_backward(zt_ffn *self, float *dinp, const float *dout, const float *inp,
                         const zt_block_config *cfg, int N, float *scratch) {
  dense_mlp *m = self->state;
  float *dg = scratch; /* d(gelu out), then d(fc) in place */
  zt_matmul_backward(dg, m->dproj_w, m->dproj_b, dout, m->gelu, m->proj_w, N, cfg->FFN, cfg->C);
  zt_gelu_backward(dg, m->fc, dg, (size_t)N * cfg->FFN);
  zt_matmul_backward(dinp, m->dfc_w, m->dfc_b, dg, inp, m->fc_w, N, cfg->C, cfg->FFN);
}

zt_ffn zt_ffn_dense_mlp(void) {
  zt_ffn f = {.kind = "dense", .register_params = mlp_register, .bind = mlp_bind,
              .plan_acts = mlp_plan_acts, .scratch_floats = mlp_scratch_floats,
              .forward = mlp_forward, .backward = mlp_backward};
  f.state = calloc(1, sizeof(dense_mlp));
  return f;
}

void zt_ffn_destroy(zt_ffn *ffn) {
  free(ffn->state);
  ffn->state = NULL;
}
