/* The dense MLP of the MLP slot: h -> 4h (GELU) -> h; with tensor parallelism dense_h_to_4h is column-parallel
 * (FFN/tp columns per rank) and dense_4h_to_h row-parallel. */
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

/* N is the rows of the block's tensors (this rank's tokens with --sequence-parallel); the column-parallel
 * GEMMs run over all NF tokens of the micro batch. */
static int full_rows(const zt_block_config *cfg, int N) { return zt_tp_sp(cfg->tp) ? N * cfg->tp->size : N; }

static void mlp_plan_acts(zt_ffn *self, zt_memplan *plan, const zt_block_config *cfg, int N) {
  dense_mlp *m = self->state;
  const size_t NF = (size_t)full_rows(cfg, N);
  m->fc = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, NF * cfg->FFN);
  m->gelu = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, NF * cfg->FFN);
}

static void mlp_forward(zt_ffn *self, float *out, const float *inp, const zt_block_config *cfg, int N) {
  dense_mlp *m = self->state;
  const zt_tp *tp = cfg->tp;
  const int NF = full_rows(cfg, N);
  double *ft = self->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  zt_matmul_forward(m->fc, zt_tp_gather(tp, inp, N, cfg->C), m->fc_w, m->fc_b, NF, cfg->C, cfg->FFN);
  if (ft) ft[ZT_FT_FC1] += (t1 = zt_now()) - t0, t0 = t1;
  zt_gelu_forward(m->gelu, m->fc, (size_t)NF * cfg->FFN);
  if (ft) ft[ZT_FT_GELU] += (t1 = zt_now()) - t0, t0 = t1;
  if (!zt_tp_on(tp)) {
    zt_matmul_forward(out, m->gelu, m->proj_w, m->proj_b, N, cfg->FFN, cfg->C);
  } else { /* row-parallel dense_4h_to_h: partial sums, summed over the ranks, then the replicated bias */
    zt_matmul_forward(zt_tp_partial_buffer(tp, out), m->gelu, m->proj_w, NULL, NF, cfg->FFN, cfg->C);
    zt_tp_reduce(tp, out, m->proj_b, N, cfg->C);
  }
  if (ft) ft[ZT_FT_FC2] += zt_now() - t0;
}

static size_t mlp_scratch_floats(const zt_block_config *cfg, int N) { return (size_t)full_rows(cfg, N) * cfg->FFN; }

static void mlp_backward(zt_ffn *self, float *dinp, const float *dout, const float *inp,
                         const zt_block_config *cfg, int N, float *scratch) {
  dense_mlp *m = self->state;
  const zt_tp *tp = cfg->tp;
  const int NF = full_rows(cfg, N);
  float *dg = scratch; /* d(gelu out), then d(fc) in place */
  if (!zt_tp_on(tp)) {
    zt_matmul_backward(dg, m->dproj_w, m->dproj_b, dout, m->gelu, m->proj_w, N, cfg->FFN, cfg->C);
  } else {
    zt_tp_bias_grad(m->dproj_b, dout, N, cfg->C);
    zt_matmul_backward(dg, m->dproj_w, NULL, zt_tp_gather(tp, dout, N, cfg->C), m->gelu, m->proj_w, NF, cfg->FFN,
                       cfg->C);
  }
  zt_gelu_backward(dg, m->fc, dg, (size_t)NF * cfg->FFN);
  /* column-parallel dense_h_to_4h: the input gradient is partial over the ranks */
  zt_matmul_backward(zt_tp_partial_buffer(tp, dinp), m->dfc_w, m->dfc_b, dg, zt_tp_gather(tp, inp, N, cfg->C),
                     m->fc_w, NF, cfg->C, cfg->FFN);
  zt_tp_reduce(tp, dinp, NULL, N, cfg->C);
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
