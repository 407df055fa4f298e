/* The attention sublayer: projections around the scaled-dot-product attention op; with tensor parallelism
 * the QKV projection is column-parallel (this rank's heads) and the output projection row-parallel; with
 * DeepSpeed-Ulysses (models/transformer/ulysses.h) the self-attention's op runs on this rank's heads over the whole
 * sequence, between two all-to-alls. */
#include <math.h>
#include <stdio.h>

#include "models/transformer/transformer.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/ops/wgrad_store.h"

static void add_linear(zt_param_table *t, const char *prefix, const char *name, const char *lin,
                       int64_t out, int64_t in, float std, int split_dim, int bias) {
  char buf[200];
  int64_t w[2] = {out, in}, b[1] = {out};
  snprintf(buf, sizeof buf, "%s.%s.%s.weight", prefix, name, lin);
  zt_param_table_add(t, buf, 2, w, ZT_INIT_NORMAL, std, 0, split_dim);
  if (!bias) return; /* --disable-bias-linear */
  snprintf(buf, sizeof buf, "%s.%s.%s.bias", prefix, name, lin);
  /* column-parallel biases split with their outputs; row-parallel (dense) bias is replicated */
  zt_param_table_add(t, buf, 1, b, ZT_INIT_ZEROS, 0, 1, split_dim == 0 ? 0 : -1);
}

/* This rank's attention width: its heads x head dim (C without tensor parallelism). */
static int attn_width(const zt_block_config *cfg) { return cfg->NH * cfg->HD; }
/* DeepSpeed-Ulysses on a self-attention: the ranks of the sequence-parallel group (1: off). */
static int usp_ranks(const zt_block_config *cfg, zt_attn_kind kind) {
  return kind == ZT_ATTN_SELF && zt_usp_on(cfg->usp) ? cfg->usp->size : 1;
}
/* Grouped-query attention: this rank's key/value heads are fewer than its query heads. */
static int grouped(const zt_block_config *cfg) { return cfg->KV > 0 && cfg->KV < cfg->NH; }
/* Ulysses with grouped-query attention whose groups split over the ranks: the all-to-all moves the groups' queries,
 * key and value ((NH + 2 KV) HD values per token) and each rank repeats its groups' keys and values itself, instead of
 * moving the repeated 3 NH HD. */
static int usp_grouped(const zt_block_config *cfg, zt_attn_kind kind) {
  const int P = usp_ranks(cfg, kind);
  return P > 1 && grouped(cfg) && cfg->KV % P == 0;
}
/* FPDT: the self-attention's chunk of the whole sequence (0: unchunked). */
static int self_chunk(const zt_block_config *cfg, zt_attn_kind kind) {
  return kind == ZT_ATTN_SELF ? cfg->fpdt_chunk : 0;
}
/* The width of query_key_value on this rank: 3A, or (NH + 2 KV) HD grouped. */
static int qkv_width(const zt_block_config *cfg) {
  return grouped(cfg) ? (cfg->NH + 2 * cfg->KV) * cfg->HD : 3 * attn_width(cfg);
}

/* Column-parallel query_key_value / query / key_value (rows of this rank's heads, Megatron's per-head layout, or
 * grouped layout with grouped-query attention, keeps them contiguous), row-parallel dense (columns of this rank's
 * heads). */
void zt_attn_register(zt_param_table *t, const char *prefix, const char *name, zt_attn_kind kind,
                      const zt_block_config *cfg) {
  const int A = attn_width(cfg);
  if (kind == ZT_ATTN_SELF) {
    add_linear(t, prefix, name, "query_key_value", qkv_width(cfg), cfg->C, cfg->init_std, 0, !cfg->no_bias);
  } else {
    add_linear(t, prefix, name, "query", A, cfg->C, cfg->init_std, 0, !cfg->no_bias);
    add_linear(t, prefix, name, "key_value", 2 * A, cfg->C, cfg->init_std, 0, !cfg->no_bias);
  }
  add_linear(t, prefix, name, "dense", cfg->C, A, cfg->out_init_std, 1, !cfg->no_bias);
}

void zt_attn_bind(zt_attn_params *p, zt_attn_params *g, zt_attn_kind kind, const zt_param_table *t,
                  const char *prefix, const char *name, void *params, void *grads, size_t es) {
  char pre[200];
  snprintf(pre, sizeof pre, "%s.%s", prefix, name);
  const char *q = kind == ZT_ATTN_SELF ? "query_key_value" : "query";
  char qw[64], qb[64];
  snprintf(qw, sizeof qw, "%s.weight", q);
  snprintf(qb, sizeof qb, "%s.bias", q);
  zt_attn_params *dst[2] = {p, g};
  void *flat[2] = {params, grads};
  for (int i = 0; i < 2; i++) {
    dst[i]->kind = kind;
    dst[i]->qkv_w = zt_param_addr(t, flat[i], es, pre, qw);
    dst[i]->qkv_b = zt_param_addr_if(t, flat[i], es, pre, qb); /* biases: NULL under --disable-bias-linear */
    dst[i]->kv_w = kind == ZT_ATTN_CROSS ? zt_param_addr(t, flat[i], es, pre, "key_value.weight") : NULL;
    dst[i]->kv_b = kind == ZT_ATTN_CROSS ? zt_param_addr_if(t, flat[i], es, pre, "key_value.bias") : NULL;
    dst[i]->proj_w = zt_param_addr(t, flat[i], es, pre, "dense.weight");
    dst[i]->proj_b = zt_param_addr_if(t, flat[i], es, pre, "dense.bias");
  }
}

void zt_attn_plan_acts(zt_attn_acts *a, zt_memplan *plan, zt_attn_kind kind, const zt_block_config *cfg,
                       int B, int T, int Tk) {
  const size_t N = (size_t)B * T, A = (size_t)attn_width(cfg), es = zt_dtype_size(zt_block_dt(cfg));
  const int P = usp_ranks(cfg, kind);
  /* Ulysses: the local projection is work space (the model's); the layer keeps q, k, v and the context of its heads
   * over the whole sequence (as many values as the local ones) */
  a->qkv = P > 1 ? cfg->usp->qkv_local
                 : zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * (kind == ZT_ATTN_SELF ? 3 : 1) * A * es);
  a->qkv_heads = P > 1 ? zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * 3 * A * es) : NULL;
  a->ctx_heads = P > 1 ? zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * A * es) : NULL;
  a->kv = kind == ZT_ATTN_CROSS ? zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, (size_t)B * Tk * 2 * A * es) : NULL;
  a->grouped = kind == ZT_ATTN_SELF && grouped(cfg)
                   ? zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * (size_t)qkv_width(cfg) * es) : NULL;
  const zt_attention_desc d = {.B = B, .Tq = T * P, .Tk = Tk * P, .NH = cfg->NH / P, .HD = cfg->HD,
                               .head0 = zt_tp_on(cfg->tp) ? cfg->tp->rank * cfg->NH : 0,
                               .layout = kind == ZT_ATTN_SELF ? cfg->sparse : NULL,
                               .layout_as_mask = cfg->sparse_as_mask, .chunk = self_chunk(cfg, kind)};
  /* selective recompute: none kept per layer (the block points saved at the stack's shared buffer) */
  a->saved = cfg->recompute_core_attention
                 ? NULL : zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, zt_block_be(cfg)->attention_saved_floats(&d));
  a->ctx = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, N * A * es);
}

int zt_attn_keeps_probs(const zt_backend *be) {
  const zt_attention_desc d = {.B = 1, .Tq = 4, .Tk = 4, .NH = 1, .HD = 1};
  return be->attention_saved_floats(&d) >= (size_t)d.Tq * d.Tk;
}

/* The strided views of Q, K, V for the attention op (q and kv point at the projections; under Ulysses at this rank's
 * heads of the whole sequence). */
static zt_attention_desc describe(zt_attn_kind kind, const zt_block_config *cfg, const zt_pass *pass, int Tk,
                                  zt_attn_mask_kind mask, uint64_t site, const void *qbuf, const void *kvbuf,
                                  const void **q, const void **k, const void **v) {
  const int P = usp_ranks(cfg, kind), C = attn_width(cfg) / P, HD = cfg->HD, NH = cfg->NH / P;
  const zt_dtype dt = zt_block_dt(cfg);
  zt_check(P == 1 || (pass->seq_total == pass->T * P && !pass->key_padding), "internal error",
           "Ulysses: a pass of %d tokens per row out of %d over %d ranks%s", pass->T, pass->seq_total, P,
           pass->key_padding ? ", with key padding" : "");
  zt_attention_desc d = {.B = pass->B, .Tq = pass->T * P, .Tk = Tk * P, .NH = NH, .HD = HD, .mask = mask,
                         .key_padding = pass->key_padding,
                         .key_start = pass->key_start, .scale = 1.0f / sqrtf((float)HD),
                         .head0 = zt_tp_on(cfg->tp) ? cfg->tp->rank * cfg->NH : P > 1 ? cfg->usp->rank * NH : 0,
                         .layout = kind == ZT_ATTN_SELF ? cfg->sparse : NULL, .layout_as_mask = cfg->sparse_as_mask,
                         .chunk = self_chunk(cfg, kind)};
  if (kind == ZT_ATTN_SELF) {
    d.ld_q = d.ld_kv = 3 * C;
    d.hs_q = d.hs_k = d.hs_v = 3 * HD;
    *q = qbuf; *k = zt_at(qbuf, dt, (size_t)HD); *v = zt_at(qbuf, dt, 2 * (size_t)HD);
  } else {
    d.ld_q = C; d.hs_q = HD;
    d.ld_kv = 2 * C; d.hs_k = d.hs_v = 2 * HD;
    *q = qbuf; *k = kvbuf; *v = kvbuf ? zt_at(kvbuf, dt, (size_t)HD) : NULL;
  }
  d.dropout = (zt_dropout){.p = pass->training ? cfg->attn_dropout : 0.0f, .seed = pass->seed, .site = site,
                           .first_sample = pass->first_sample};
  return d;
}

/* The rotary embedding of the self-attention's queries and keys of NH heads in the query_key_value layout (rows of
 * 3 NH HD, head h's q, k, v at h 3 HD): the B x T rows hold positions pos0 .. pos0 + T - 1 (Megatron-DeepSpeed's: the
 * index in the sequence). inverse: the backward's, on their gradients. */
static void rope_heads(void *qkv, const zt_block_config *cfg, int B, int T, int NH, int pos0, int inverse) {
  if (!cfg->rot) return;
  zt_check(pos0 + T <= cfg->rope_rows, "internal error", "rotary embedding: positions up to %d, table of %d",
           pos0 + T, cfg->rope_rows);
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int A = NH * cfg->HD, HD = cfg->HD;
  const float *cs = cfg->rope_cs + (size_t)pos0 * cfg->rot;
  be->rope(dt, qkv, cs, B, T, NH, 3 * A, 3 * HD, cfg->rot, inverse);
  be->rope(dt, zt_at(qkv, dt, (size_t)HD), cs, B, T, NH, 3 * A, 3 * HD, cfg->rot, inverse);
}

/* Incremental decoding: the new tokens' keys and values (rows past .. past+T-1 of each sequence) go into the layer's
 * cache, then each sequence's T queries attend over its past+T cached positions: causally when the cache held
 * nothing before (the prompt), else one query that sees every cached key. One attention call per sequence, since
 * the op's batch stride is Tk rows while the cache's is kv_tmax. */
static void attention_cached(zt_attn_acts *a, const zt_block_config *cfg, const zt_pass *pass) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int A = attn_width(cfg), HD = cfg->HD, T = pass->T, past = pass->kv_past, Tk = past + T;
  zt_check(!zt_usp_on(cfg->usp), "internal error", "incremental decoding with DeepSpeed-Ulysses");
  zt_check(!cfg->sparse, "sparse attention", "incremental decoding (text generation) with a sparse_attention layout "
           "is not supported: it lands with the sparse-attention decoding work");
  zt_check(a->cache && Tk <= pass->kv_tmax && (past == 0 || T == 1), "internal error",
           "attention: %d new tokens after %d cached of %d (cache %s)", T, past, pass->kv_tmax,
           a->cache ? "set" : "missing");
  const size_t row = (size_t)3 * A;
  for (int b = 0; b < pass->B; b++) {
    void *cb = zt_at(a->cache, dt, (size_t)b * pass->kv_tmax * row);
    be->copy(zt_at(cb, dt, (size_t)past * row), zt_at(a->qkv, dt, (size_t)b * T * row),
             (size_t)T * row * zt_dtype_size(dt));
    const zt_attention_desc d = {.B = 1, .Tq = T, .Tk = Tk, .NH = cfg->NH, .HD = HD,
                                 .mask = past == 0 ? ZT_ATTN_CAUSAL : ZT_ATTN_NONE, .ld_q = 3 * A, .ld_kv = 3 * A,
                                 .hs_q = 3 * HD, .hs_k = 3 * HD, .hs_v = 3 * HD, .scale = 1.0f / sqrtf((float)HD),
                                 .head0 = zt_tp_on(cfg->tp) ? cfg->tp->rank * cfg->NH : 0};
    be->attention_forward(dt, zt_at(a->ctx, dt, (size_t)b * T * A), a->saved, zt_at(a->qkv, dt, (size_t)b * T * row),
                          zt_at(cb, dt, (size_t)HD), zt_at(cb, dt, 2 * (size_t)HD), &d);
  }
}

void zt_attn_forward(const zt_attn_params *p, zt_attn_acts *a, void *out, const void *x, const void *mem,
                     const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                     uint64_t site) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int NF = pass->B * pass->T, C = cfg->C, A = attn_width(cfg);
  const zt_tp *tp = cfg->tp;
  const int N = zt_tp_local_rows(tp, NF);
  const void *q, *k, *v;
  double *ft = a->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  const void *xin = zt_tp_gather(tp, x, N, C); /* column-parallel input: the whole sequence */
  if (p->kind == ZT_ATTN_SELF) {
    if (usp_grouped(cfg, p->kind)) { /* Ulysses, GQA: this rank's groups of every token, then repeated per head */
      const zt_usp *u = cfg->usp;
      const int P = u->size, Tf = pass->T * P;
      be->matmul_forward(dt, a->grouped, NULL, xin, p->qkv_w, p->qkv_b, NF, C, qkv_width(cfg));
      zt_usp_seq_to_heads(u, be, dt, u->qkv_local, a->grouped, pass->B, pass->T, qkv_width(cfg));
      be->gqa_pack(dt, a->qkv_heads, u->qkv_local, pass->B * Tf, cfg->KV / P, cfg->NH / cfg->KV, cfg->HD, 0);
      rope_heads(a->qkv_heads, cfg, pass->B, Tf, cfg->NH / P, 0, 0);
    } else {
      if (a->grouped) { /* the groups' projection, repacked per head with each group's key and value repeated */
        be->matmul_forward(dt, a->grouped, NULL, xin, p->qkv_w, p->qkv_b, NF, C, qkv_width(cfg));
        be->gqa_pack(dt, a->qkv, a->grouped, NF, cfg->KV, cfg->NH / cfg->KV, cfg->HD, 0);
      } else {
        be->matmul_forward(dt, a->qkv, NULL, xin, p->qkv_w, p->qkv_b, NF, C, 3 * A);
      }
      if (a->qkv_heads) { /* Ulysses: this rank's heads of every token, which turn by their place in the row */
        const int P = cfg->usp->size;
        zt_usp_seq_to_heads(cfg->usp, be, dt, a->qkv_heads, a->qkv, pass->B, pass->T, 3 * A);
        rope_heads(a->qkv_heads, cfg, pass->B, pass->T * P, cfg->NH / P, 0, 0);
      } else {
        rope_heads(a->qkv, cfg, pass->B, pass->T, cfg->NH, pass->kv_cache ? pass->kv_past : 0, 0);
      }
    }
    if (ft) ft[ZT_FT_QKV] += (t1 = zt_now()) - t0, t0 = t1;
  } else { /* cross-attention: query, then key_value (timed apart, as Megatron's two modules) */
    be->matmul_forward(dt, a->qkv, NULL, xin, p->qkv_w, p->qkv_b, NF, C, A);
    if (ft) ft[ZT_FT_QKV] += (t1 = zt_now()) - t0, t0 = t1;
    be->matmul_forward(dt, a->kv, NULL, mem, p->kv_w, p->kv_b, pass->B * Tk, C, 2 * A);
    if (ft) ft[ZT_FT_KV] += (t1 = zt_now()) - t0, t0 = t1;
  }
  if (pass->kv_cache && p->kind == ZT_ATTN_SELF) {
    attention_cached(a, cfg, pass);
  } else if (a->qkv_heads) { /* Ulysses: the context of this rank's heads, then back to this rank's tokens */
    zt_attention_desc d = describe(p->kind, cfg, pass, Tk, mask, site, a->qkv_heads, NULL, &q, &k, &v);
    be->attention_forward(dt, a->ctx_heads, a->saved, q, k, v, &d);
    zt_usp_heads_to_seq(cfg->usp, be, dt, a->ctx, a->ctx_heads, pass->B, pass->T, A);
  } else {
    zt_attention_desc d = describe(p->kind, cfg, pass, Tk, mask, site, a->qkv, a->kv, &q, &k, &v);
    be->attention_forward(dt, a->ctx, a->saved, q, k, v, &d);
  }
  if (ft) ft[ZT_FT_CORE] += (t1 = zt_now()) - t0, t0 = t1;
  if (!zt_tp_on(tp)) {
    be->matmul_forward(dt, out, NULL, a->ctx, p->proj_w, p->proj_b, NF, C, C);
  } else { /* row-parallel: partial sums over this rank's heads, summed over the ranks, then the bias */
    be->matmul_forward(dt, zt_tp_partial_buffer(tp, out), NULL, a->ctx, p->proj_w, NULL, NF, A, C);
    zt_tp_reduce(tp, out, p->proj_b, N, C);
  }
  if (ft) ft[ZT_FT_DENSE] += zt_now() - t0;
}

void zt_attn_backward(const zt_attn_params *p, const zt_attn_params *g, zt_attn_acts *a, void *dx,
                      void *dmem, const void *dout, const void *x, const void *mem,
                      const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                      uint64_t site, void *dctx, void *dqkv, void *dkv, float *attn_scratch) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int NF = pass->B * pass->T, C = cfg->C, A = attn_width(cfg);
  const zt_tp *tp = cfg->tp;
  const int N = zt_tp_local_rows(tp, NF);
  if (!zt_tp_on(tp)) {
    zt_linear_backward(be, dt, dctx, g->proj_w, g->proj_b, (void *)dout, a->ctx, p->proj_w, NULL, NF, C, C);
  } else { /* row-parallel: the bias grad from this rank's rows; the GEMMs over the whole sequence */
    if (g->proj_b) be->bias_grad(dt, g->proj_b, dout, N, C);
    const void *dfull = zt_tp_gather(tp, dout, N, C);
    zt_linear_backward(be, dt, dctx, g->proj_w, NULL, (void *)dfull, a->ctx, p->proj_w, NULL, NF, A, C);
  }
  const void *q, *k, *v, *dq_, *dk_, *dv_;
  if (a->qkv_heads) { /* Ulysses: d(context) of this rank's heads over the sequence; d(q, k, v) back to its tokens */
    const zt_usp *u = cfg->usp;
    zt_usp_seq_to_heads(u, be, dt, u->dctx_heads, dctx, pass->B, pass->T, A);
    zt_attention_desc d = describe(p->kind, cfg, pass, Tk, mask, site, a->qkv_heads, NULL, &q, &k, &v);
    describe(p->kind, cfg, pass, Tk, mask, site, u->dqkv_heads, NULL, &dq_, &dk_, &dv_);
    if (cfg->recompute_core_attention) /* the same context again (the dense backward above has read it) */
      be->attention_forward(dt, a->ctx_heads, a->saved, q, k, v, &d);
    be->attention_backward(dt, (void *)dq_, (void *)dk_, (void *)dv_, u->dctx_heads, a->ctx_heads, a->saved, q, k, v,
                           &d, attn_scratch);
    if (usp_grouped(cfg, p->kind)) { /* back through the rotary turn and the repeat, then the groups to their tokens */
      const int P = u->size, Tf = pass->T * P;
      rope_heads(u->dqkv_heads, cfg, pass->B, Tf, cfg->NH / P, 0, 1);
      be->gqa_pack(dt, u->dqkv_heads, u->qkv_local, pass->B * Tf, cfg->KV / P, cfg->NH / cfg->KV, cfg->HD, 1);
      zt_usp_heads_to_seq(u, be, dt, a->grouped, u->qkv_local, pass->B, pass->T, qkv_width(cfg));
    } else {
      if (p->kind == ZT_ATTN_SELF) rope_heads(u->dqkv_heads, cfg, pass->B, pass->T * u->size, cfg->NH / u->size, 0, 1);
      zt_usp_heads_to_seq(u, be, dt, dqkv, u->dqkv_heads, pass->B, pass->T, 3 * A);
    }
  } else {
    zt_attention_desc d = describe(p->kind, cfg, pass, Tk, mask, site, a->qkv, a->kv, &q, &k, &v);
    describe(p->kind, cfg, pass, Tk, mask, site, dqkv, dkv, &dq_, &dk_, &dv_);
    if (cfg->recompute_core_attention) /* selective: the probabilities again; the context written is the same */
      be->attention_forward(dt, a->ctx, a->saved, q, k, v, &d);
    be->attention_backward(dt, (void *)dq_, (void *)dk_, (void *)dv_, dctx, a->ctx, a->saved, q, k, v, &d,
                           attn_scratch);
  }
  /* column-parallel: the input gradient is partial over the ranks (all-reduce or reduce-scatter) */
  const void *xin = zt_tp_gather(tp, x, N, C);
  void *dxp = zt_tp_partial_buffer(tp, dx);
  if (usp_grouped(cfg, p->kind)) { /* a->grouped holds the groups' gradients of this rank's tokens already */
    zt_linear_backward(be, dt, dxp, g->qkv_w, g->qkv_b, a->grouped, xin, p->qkv_w, NULL, NF, C, qkv_width(cfg));
  } else if (p->kind == ZT_ATTN_SELF) {
    if (!a->qkv_heads) rope_heads(dqkv, cfg, pass->B, pass->T, cfg->NH, 0, 1); /* Ulysses: turned back above */
    void *dproj = dqkv;
    if (a->grouped) { /* each group's key and value gradient: the sum over its heads */
      be->gqa_pack(dt, dqkv, a->grouped, NF, cfg->KV, cfg->NH / cfg->KV, cfg->HD, 1);
      dproj = a->grouped;
    }
    zt_linear_backward(be, dt, dxp, g->qkv_w, g->qkv_b, dproj, xin, p->qkv_w, NULL, NF, C, qkv_width(cfg));
  } else {
    zt_linear_backward(be, dt, dxp, g->qkv_w, g->qkv_b, dqkv, xin, p->qkv_w, NULL, NF, C, A);
    /* the encoder output is whole on every rank: with tensor parallelism its gradient is this rank's heads' part,
     * which the encoder output's owner sums over the ranks once for all layers (zt_cross_input.grad) */
    zt_linear_backward(be, dt, dmem, g->kv_w, g->kv_b, dkv, mem, p->kv_w, NULL, pass->B * Tk, C, 2 * A);
  }
  zt_tp_reduce(tp, dx, NULL, N, C);
}
