/* The dense MLP of the MLP slot: h -> 4h (GELU) -> h; with tensor parallelism dense_h_to_4h is column-parallel
 * (FFN/tp columns per rank) and dense_4h_to_h row-parallel. The GELU is the first linear's epilogue (fused on a
 * GPU; the CPU backend runs it after the GEMM). With --swiglu (Megatron's gated linear unit) dense_h_to_4h has 2 FFN
 * rows, the gate's then the linear half's (per rank: its share of each half, as Megatron's chunk(2) of the rank's
 * output reads them), and the activation is silu(gate) * linear; --disable-bias-linear drops both linears' biases. */
#include <stdio.h>
#include <stdlib.h>

#include "models/transformer/transformer.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/ops/wgrad_store.h"

typedef struct {
  void *fc_w, *fc_b, *proj_w, *proj_b;          /* parameters */
  void *dfc_w, *dfc_b, *dproj_w, *dproj_b;      /* gradients */
  void *fc, *gelu;                              /* activations: pre-activation [NF, FFN] (SwiGLU: [NF, 2 FFN]) and
                                                   the activation's output [NF, FFN] */
} dense_mlp;

static void mlp_register(const zt_ffn *self, zt_param_table *t, const char *prefix, const zt_block_config *cfg) {
  (void)self;
  char name[160];
  const int parts = cfg->swiglu ? 2 : 1, bias = !cfg->no_bias;
  int64_t w1[2] = {parts * cfg->FFN, cfg->C}, b1[1] = {parts * cfg->FFN}, w2[2] = {cfg->C, cfg->FFN}, b2[1] = {cfg->C};
  snprintf(name, sizeof name, "%s.dense_h_to_4h.weight", prefix);
  /* the index first: zt_param_table_add may move t->params (realloc), so t->params[...] must be read after it */
  int k = zt_param_table_add(t, name, 2, w1, ZT_INIT_NORMAL, cfg->init_std, 0, 0);
  t->params[k].tp_parts = parts;
  if (bias) {
    snprintf(name, sizeof name, "%s.dense_h_to_4h.bias", prefix);
    k = zt_param_table_add(t, name, 1, b1, ZT_INIT_ZEROS, 0, 1, 0);
    t->params[k].tp_parts = parts;
  }
  snprintf(name, sizeof name, "%s.dense_4h_to_h.weight", prefix);
  zt_param_table_add(t, name, 2, w2, ZT_INIT_NORMAL, cfg->out_init_std, 0, 1);
  if (bias) {
    snprintf(name, sizeof name, "%s.dense_4h_to_h.bias", prefix);
    zt_param_table_add(t, name, 1, b2, ZT_INIT_ZEROS, 0, 1, -1);
  }
}

static void mlp_bind(zt_ffn *self, const zt_param_table *t, const char *prefix, void *params, void *grads,
                     size_t es) {
  dense_mlp *m = self->state;
  m->fc_w = zt_param_addr(t, params, es, prefix, "dense_h_to_4h.weight");
  m->fc_b = zt_param_addr_if(t, params, es, prefix, "dense_h_to_4h.bias");
  m->proj_w = zt_param_addr(t, params, es, prefix, "dense_4h_to_h.weight");
  m->proj_b = zt_param_addr_if(t, params, es, prefix, "dense_4h_to_h.bias");
  m->dfc_w = zt_param_addr(t, grads, es, prefix, "dense_h_to_4h.weight");
  m->dfc_b = zt_param_addr_if(t, grads, es, prefix, "dense_h_to_4h.bias");
  m->dproj_w = zt_param_addr(t, grads, es, prefix, "dense_4h_to_h.weight");
  m->dproj_b = zt_param_addr_if(t, grads, es, prefix, "dense_4h_to_h.bias");
}

/* N is the rows of the block's tensors (this rank's tokens with --sequence-parallel); the column-parallel
 * GEMMs run over all NF tokens of the micro batch. */
static int full_rows(const zt_block_config *cfg, int N) { return zt_tp_sp(cfg->tp) ? N * cfg->tp->size : N; }

static void mlp_plan_acts(zt_ffn *self, zt_memplan *plan, const zt_block_config *cfg, int N) {
  dense_mlp *m = self->state;
  const size_t bytes = (size_t)full_rows(cfg, N) * cfg->FFN * zt_dtype_size(zt_block_dt(cfg));
  m->fc = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, cfg->swiglu ? 2 * bytes : bytes);
  m->gelu = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, bytes);
}

static float mlp_forward(zt_ffn *self, void *out, const void *inp, const zt_block_config *cfg, const zt_pass *pass,
                         int N, void *scratch) {
  (void)pass, (void)scratch;
  dense_mlp *m = self->state;
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const zt_tp *tp = cfg->tp;
  const int NF = full_rows(cfg, N);
  double *ft = self->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  const void *in = zt_tp_gather(tp, inp, N, cfg->C);
  if (cfg->swiglu) {
    be->matmul_forward(dt, m->fc, NULL, in, m->fc_w, m->fc_b, NF, cfg->C, 2 * cfg->FFN);
    be->swiglu_forward(dt, m->gelu, m->fc, NF, cfg->FFN);
  } else {
    zt_ffn_fc(be, dt, cfg->act, m->gelu, m->fc, in, m->fc_w, m->fc_b, NF, cfg->C, cfg->FFN);
  }
  if (ft) ft[ZT_FT_FC1] += (t1 = zt_now()) - t0, t0 = t1;
  if (!zt_tp_on(tp)) {
    be->matmul_forward(dt, out, NULL, m->gelu, m->proj_w, m->proj_b, N, cfg->FFN, cfg->C);
  } else { /* row-parallel dense_4h_to_h: partial sums, summed over the ranks, then the replicated bias */
    be->matmul_forward(dt, zt_tp_partial_buffer(tp, out), NULL, m->gelu, m->proj_w, NULL, NF, cfg->FFN, cfg->C);
    zt_tp_reduce(tp, out, m->proj_b, N, cfg->C);
  }
  if (ft) ft[ZT_FT_FC2] += zt_now() - t0;
  return 0.0f;
}

/* d(activation output) [NF, FFN], and with SwiGLU d(pre-activation) [NF, 2 FFN] after it */
static size_t mlp_scratch_bytes(const zt_ffn *self, const zt_block_config *cfg, int N) {
  (void)self;
  return (size_t)full_rows(cfg, N) * cfg->FFN * zt_dtype_size(zt_block_dt(cfg)) * (cfg->swiglu ? 3 : 1);
}

static void mlp_backward(zt_ffn *self, void *dinp, const void *dout, const void *inp, const zt_block_config *cfg,
                         const zt_pass *pass, int N, void *scratch, float aux_grad) {
  (void)pass, (void)aux_grad;
  dense_mlp *m = self->state;
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const zt_tp *tp = cfg->tp;
  const int NF = full_rows(cfg, N);
  void *dg = scratch; /* d(gelu out), then d(fc) in place; SwiGLU: d(fc) after it */
  if (!zt_tp_on(tp)) {
    zt_linear_backward(be, dt, dg, m->dproj_w, m->dproj_b, (void *)dout, m->gelu, m->proj_w, NULL, N, cfg->FFN, cfg->C);
  } else {
    if (m->dproj_b) be->bias_grad(dt, m->dproj_b, dout, N, cfg->C);
    zt_linear_backward(be, dt, dg, m->dproj_w, NULL, (void *)zt_tp_gather(tp, dout, N, cfg->C), m->gelu, m->proj_w,
                           NULL, NF, cfg->FFN, cfg->C);
  }
  /* column-parallel dense_h_to_4h (through the GELU): the input gradient is partial over the ranks */
  const void *in = zt_tp_gather(tp, inp, N, cfg->C);
  if (cfg->swiglu) {
    void *dfc = zt_at(scratch, dt, (size_t)NF * cfg->FFN);
    be->swiglu_backward(dt, dfc, dg, m->fc, NF, cfg->FFN);
    zt_linear_backward(be, dt, zt_tp_partial_buffer(tp, dinp), m->dfc_w, m->dfc_b, dfc, in, m->fc_w, NULL, NF, cfg->C,
                           2 * cfg->FFN);
  } else {
    void *pre = zt_ffn_act_backward(be, dt, cfg->act, dg, m->fc, (size_t)NF * cfg->FFN);
    zt_linear_backward(be, dt, zt_tp_partial_buffer(tp, dinp), m->dfc_w, m->dfc_b, dg, in, m->fc_w, pre, NF, cfg->C,
                           cfg->FFN);
  }
  zt_tp_reduce(tp, dinp, NULL, N, cfg->C);
}

int zt_ffn_dense_flops(zt_flops_profiler *p, int parent, const char *name, int slot, int fc1_slot, int fc2_slot,
                       double rows, const zt_block_config *cfg) {
  const int C = cfg->C, F = cfg->FFN;
  /* ParallelMLP's own: DeepSpeed counts the functionals it patches when they are looked up at the call, 1 flop per
   * element: SwiGLU's F.silu (of the gate half) and the squared ReLU's F.relu. Every GELU counts 0: the default
   * bias-GELU and --openai-gelu are TorchScript functions of unpatched operators, and the unfused F.gelu is the
   * function ParallelMLP stored at construction, before the profiler patched it. */
  const double act = cfg->swiglu || cfg->act == ZT_ACT_SQUARED_RELU ? rows * F : 0;
  int mlp = zt_fp_add(p, parent, name, "ParallelMLP", slot, 0, act);
  zt_fp_add_linear(p, mlp, "dense_h_to_4h", "ColumnParallelLinear", fc1_slot, rows, C, cfg->swiglu ? 2 * F : F);
  zt_fp_add_linear(p, mlp, "dense_4h_to_h", "RowParallelLinear", fc2_slot, rows, F, C);
  return mlp;
}

/* This rank's FFN/tp columns over all N tokens, as DeepSpeed counts one GPU */
static void mlp_flops_tree(const zt_ffn *self, zt_flops_profiler *p, int parent, int slots, double N,
                           const zt_block_config *cfg) {
  (void)self;
  zt_ffn_dense_flops(p, parent, "mlp", slots + ZT_FT_MLP, slots + ZT_FT_FC1, slots + ZT_FT_FC2, N, cfg);
}

zt_ffn zt_ffn_dense_mlp(void) {
  zt_ffn f = {.kind = "dense", .register_params = mlp_register, .bind = mlp_bind,
              .plan_acts = mlp_plan_acts, .scratch_bytes = mlp_scratch_bytes,
              .forward = mlp_forward, .backward = mlp_backward, .flops_tree = mlp_flops_tree};
  f.state = zt_calloc(1, sizeof(dense_mlp), "dense MLP");
  return f;
}

zt_ffn zt_ffn_make(zt_mlp_kind kind) {
  zt_check(kind == ZT_MLP_DENSE, "internal error", "MLP kind %d", (int)kind);
  return zt_ffn_dense_mlp();
}

zt_ffn zt_ffn_for_layer(const zt_block_config *cfg, zt_mlp_kind kind, int l) {
  return cfg->make_ffn ? cfg->make_ffn(cfg->ffn_ctx, l) : zt_ffn_make(kind);
}

void zt_ffn_destroy(zt_ffn *ffn) {
  if (ffn->destroy) ffn->destroy(ffn);
  else free(ffn->state);
  ffn->state = NULL;
}
