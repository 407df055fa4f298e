/* The attention sublayer: projections around the scaled-dot-product attention op; with tensor parallelism
 * the QKV projection is column-parallel (this rank's heads) and the output projection row-parallel. */
#include <math.h>
#include <stdio.h>

#include "models/transformer/transformer.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

static void add_linear(zt_param_table *t, const char *prefix, const char *name, const char *lin,
                       int64_t out, int64_t in, float std, int split_dim) {
  char buf[200];
  int64_t w[2] = {out, in}, b[1] = {out};
  snprintf(buf, sizeof buf, "%s.%s.%s.weight", prefix, name, lin);
  zt_param_table_add(t, buf, 2, w, ZT_INIT_NORMAL, std, 0, split_dim);
  snprintf(buf, sizeof buf, "%s.%s.%s.bias", prefix, name, lin);
  /* column-parallel biases split with their outputs; row-parallel (dense) bias is replicated */
  zt_param_table_add(t, buf, 1, b, ZT_INIT_ZEROS, 0, 1, split_dim == 0 ? 0 : -1);
}

/* This rank's attention width: its heads x head dim (C without tensor parallelism). */
static int attn_width(const zt_block_config *cfg) { return cfg->NH * cfg->HD; }

/* Column-parallel query_key_value / query / key_value (rows of this rank's heads, Megatron's per-head layout
 * keeps them contiguous), row-parallel dense (columns of this rank's heads). */
void zt_attn_register(zt_param_table *t, const char *prefix, const char *name, zt_attn_kind kind,
                      const zt_block_config *cfg) {
  const int A = attn_width(cfg);
  if (kind == ZT_ATTN_SELF) {
    add_linear(t, prefix, name, "query_key_value", 3 * A, cfg->C, cfg->init_std, 0);
  } else {
    add_linear(t, prefix, name, "query", A, cfg->C, cfg->init_std, 0);
    add_linear(t, prefix, name, "key_value", 2 * A, cfg->C, cfg->init_std, 0);
  }
  add_linear(t, prefix, name, "dense", cfg->C, A, cfg->out_init_std, 1);
}

void zt_attn_bind(zt_attn_params *p, zt_attn_params *g, zt_attn_kind kind, const zt_param_table *t,
                  const char *prefix, const char *name, float *params, float *grads) {
  char pre[200];
  snprintf(pre, sizeof pre, "%s.%s", prefix, name);
  const char *q = kind == ZT_ATTN_SELF ? "query_key_value" : "query";
  char qw[64], qb[64];
  snprintf(qw, sizeof qw, "%s.weight", q);
  snprintf(qb, sizeof qb, "%s.bias", q);
  zt_attn_params *dst[2] = {p, g};
  float *flat[2] = {params, grads};
  for (int i = 0; i < 2; i++) {
    dst[i]->kind = kind;
    dst[i]->qkv_w = zt_param_ptr(t, flat[i], pre, qw);
    dst[i]->qkv_b = zt_param_ptr(t, flat[i], pre, qb);
    dst[i]->kv_w = kind == ZT_ATTN_CROSS ? zt_param_ptr(t, flat[i], pre, "key_value.weight") : NULL;
    dst[i]->kv_b = kind == ZT_ATTN_CROSS ? zt_param_ptr(t, flat[i], pre, "key_value.bias") : NULL;
    dst[i]->proj_w = zt_param_ptr(t, flat[i], pre, "dense.weight");
    dst[i]->proj_b = zt_param_ptr(t, flat[i], pre, "dense.bias");
  }
}

void zt_attn_plan_acts(zt_attn_acts *a, zt_memplan *plan, zt_attn_kind kind, const zt_block_config *cfg,
                       int B, int T, int Tk) {
  size_t N = (size_t)B * T, A = (size_t)attn_width(cfg);
  a->qkv = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * (kind == ZT_ATTN_SELF ? 3 : 1) * A);
  a->kv = kind == ZT_ATTN_CROSS ? zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, (size_t)B * Tk * 2 * A) : NULL;
  a->probs = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, (size_t)B * cfg->NH * T * Tk);
  a->ctx = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, N * A);
}

/* The strided views of Q, K, V for the attention op (q and kv point at the projections). */
static zt_attention_desc describe(zt_attn_kind kind, const zt_block_config *cfg, const zt_pass *pass, int Tk,
                                  zt_attn_mask_kind mask, uint64_t site, const float *qbuf, const float *kvbuf,
                                  const float **q, const float **k, const float **v) {
  const int C = attn_width(cfg), HD = cfg->HD;
  zt_attention_desc d = {.B = pass->B, .Tq = pass->T, .Tk = Tk, .NH = cfg->NH, .HD = HD, .mask = mask,
                         .key_padding = pass->key_padding,
                         .key_start = pass->key_start, .scale = 1.0f / sqrtf((float)HD),
                         .head0 = zt_tp_on(cfg->tp) ? cfg->tp->rank * cfg->NH : 0};
  if (kind == ZT_ATTN_SELF) {
    d.ld_q = d.ld_kv = 3 * C;
    d.hs_q = d.hs_k = d.hs_v = 3 * HD;
    *q = qbuf; *k = qbuf + HD; *v = qbuf + 2 * HD;
  } else {
    d.ld_q = C; d.hs_q = HD;
    d.ld_kv = 2 * C; d.hs_k = d.hs_v = 2 * HD;
    *q = qbuf; *k = kvbuf; *v = kvbuf + HD;
  }
  d.dropout = (zt_dropout){.p = pass->training ? cfg->attn_dropout : 0.0f, .seed = pass->seed, .site = site,
                           .first_sample = pass->first_sample};
  return d;
}

void zt_attn_forward(const zt_attn_params *p, zt_attn_acts *a, float *out, const float *x, const float *mem,
                     const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                     uint64_t site) {
  const int NF = pass->B * pass->T, C = cfg->C, A = attn_width(cfg);
  const zt_tp *tp = cfg->tp;
  const int N = zt_tp_local_rows(tp, NF);
  const float *q, *k, *v;
  double *ft = a->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  const float *xin = zt_tp_gather(tp, x, N, C); /* column-parallel input: the whole sequence */
  if (p->kind == ZT_ATTN_SELF) {
    zt_matmul_forward(a->qkv, xin, p->qkv_w, p->qkv_b, NF, C, 3 * A);
  } else {
    zt_matmul_forward(a->qkv, xin, p->qkv_w, p->qkv_b, NF, C, A);
    zt_matmul_forward(a->kv, mem, p->kv_w, p->kv_b, pass->B * Tk, C, 2 * A);
  }
  if (ft) ft[ZT_FT_QKV] += (t1 = zt_now()) - t0, t0 = t1;
  zt_attention_desc d = describe(p->kind, cfg, pass, Tk, mask, site, a->qkv, a->kv, &q, &k, &v);
  zt_attention_forward(a->ctx, a->probs, q, k, v, &d);
  if (ft) ft[ZT_FT_CORE] += (t1 = zt_now()) - t0, t0 = t1;
  if (!zt_tp_on(tp)) {
    zt_matmul_forward(out, a->ctx, p->proj_w, p->proj_b, NF, C, C);
  } else { /* row-parallel: partial sums over this rank's heads, summed over the ranks, then the bias */
    zt_matmul_forward(zt_tp_partial_buffer(tp, out), a->ctx, p->proj_w, NULL, NF, A, C);
    zt_tp_reduce(tp, out, p->proj_b, N, C);
  }
  if (ft) ft[ZT_FT_DENSE] += zt_now() - t0;
}

void zt_attn_backward(const zt_attn_params *p, const zt_attn_params *g, zt_attn_acts *a, float *dx,
                      float *dmem, const float *dout, const float *x, const float *mem,
                      const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                      uint64_t site, float *dctx, float *dqkv, float *dkv, float *attn_scratch) {
  const int NF = pass->B * pass->T, C = cfg->C, A = attn_width(cfg);
  const zt_tp *tp = cfg->tp;
  const int N = zt_tp_local_rows(tp, NF);
  if (!zt_tp_on(tp)) {
    zt_matmul_backward(dctx, g->proj_w, g->proj_b, dout, a->ctx, p->proj_w, NF, C, C);
  } else { /* row-parallel: the bias grad from this rank's rows; the GEMMs over the whole sequence */
    zt_tp_bias_grad(g->proj_b, dout, N, C);
    const float *dfull = zt_tp_gather(tp, dout, N, C);
    zt_matmul_backward(dctx, g->proj_w, NULL, dfull, a->ctx, p->proj_w, NF, A, C);
  }
  const float *q, *k, *v, *dq_, *dk_, *dv_;
  zt_attention_desc d = describe(p->kind, cfg, pass, Tk, mask, site, a->qkv, a->kv, &q, &k, &v);
  describe(p->kind, cfg, pass, Tk, mask, site, dqkv, dkv, &dq_, &dk_, &dv_);
  zt_attention_backward((float *)dq_, (float *)dk_, (float *)dv_, dctx, a->probs, q, k, v, &d, attn_scratch);
  /* column-parallel: the input gradient is partial over the ranks (all-reduce or reduce-scatter) */
  const float *xin = zt_tp_gather(tp, x, N, C);
  float *dxp = zt_tp_partial_buffer(tp, dx);
  if (p->kind == ZT_ATTN_SELF) {
    zt_matmul_backward(dxp, g->qkv_w, g->qkv_b, dqkv, xin, p->qkv_w, NF, C, 3 * A);
  } else {
    zt_matmul_backward(dxp, g->qkv_w, g->qkv_b, dqkv, xin, p->qkv_w, NF, C, A);
    zt_matmul_backward(dmem, g->kv_w, g->kv_b, dkv, mem, p->kv_w, pass->B * Tk, C, 2 * A);
    if (zt_tp_on(tp)) { /* the encoder output is replicated: its gradient is partial over the heads */
      zt_check(!tp->sp, "attention", "cross-attention does not support --sequence-parallel");
      zt_allreduce_sum_f32(tp->group, dmem, (size_t)pass->B * Tk * C);
    }
  }
  zt_tp_reduce(tp, dx, NULL, N, C);
}
