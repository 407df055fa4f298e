/* The MoE layer as an MLP slot (see moe.h): DeepSpeed's MoE(hidden, ParallelMLP expert, num_experts, k, use_residual)
 * under Megatron-DeepSpeed's names: "<mlp>.deepspeed_moe.gate.wg.weight" [E, C] (the router, no bias),
 * "<mlp>.deepspeed_moe.experts.deepspeed_experts.<e>.dense_h_to_4h.weight" ... (expert e's MLP, with its biases),
 * and for Residual MoE "<mlp>.mlp.dense_h_to_4h.weight" ... (the dense branch) and "<mlp>.coefficient.weight" [2, C]
 * with its bias.
 *
 * Forward of N = B x T token rows (row r = b T + t; the gate's token order s = t B + b):
 *   router in fp32 (DeepSpeed casts the input and wg to float): logits [N, E] = x wg^T (x times the jitter under the
 *   Jitter policy); the gate on the host (gating.c) chooses, per expert, its kept tokens and their combine weights;
 *   slots are laid out expert by expert (choice j, then token order); disp [M, C] = the slots' token rows; expert e's
 *   MLP on its rows; y [M, C]; out = 0, out[token of slot] += weight * y[slot].
 *   Residual: out = moe_out * softmax(c)_0 + mlp(x) * softmax(c)_1, c = x Wc^T + bc (per token, on the host).
 * Backward: the same steps reversed; the combine weights' gradients (row dots of d(out) with y) and l_aux's go
 * through the gate's backward (host) into the router. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/moe/moe.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/ops/wgrad_store.h"

typedef struct {
  const zt_moe_config *mc;
  int layer, E, k;
  /* parameters and gradients */
  void *wg, *dwg;
  void **fc_w, **fc_b, **proj_w, **proj_b;     /* [E] each */
  void **dfc_w, **dfc_b, **dproj_w, **dproj_b;
  void *coef_w, *coef_b, *dcoef_w, *dcoef_b;   /* residual */
  zt_ffn mlp;                                  /* residual: the dense branch */
  zt_tp etp;                                   /* the experts' tensor-parallel ranks (expert_cfg) */
  /* activations of up to M = k N slots (this layer's, kept for its backward) */
  void *fc, *gelu;                             /* [R, FFN] (fc: [R, 2 FFN] with SwiGLU) */
  void *y;                                     /* [M, C] the experts' outputs */
  int32_t *slot_tok;                           /* [M] backend: each slot's token row */
  float *slot_w;                               /* [M] backend: each slot's combine weight */
  void *moe_out, *mlp_out;                     /* residual: [N, C] the two branches */
  float *coef;                                 /* residual: [2N] backend: softmax(c)_0 of every row, then _1 */
  /* host state of the last forward */
  int N, planned;
  zt_moe_gating g;
  int32_t *h_off;                              /* [E + 1] the experts' first slots */
  int32_t *h_tok, *h_slot_of;                  /* [M] slot -> token row; [N k] choice -> slot (-1: dropped) */
  float *h_w, *h_dw;                           /* [M] */
  float *h_logits, *h_dlogits, *h_rows;        /* [N E] in token order s, [N E] and [N max(E, C)] staging */
  float *h_coef;                               /* residual: [2N] */
  float *h_dweight;                            /* [N k] */
  zt_moe_draws draws;                          /* [N E], [N E], [N C] host, NULL where unused */
  /* expert parallelism (P > 1): this rank runs the El = E / P experts [r El, (r + 1) El) over the rows every member
   * of the group sends it. The exchange buffers hold P blocks of blk rows: block j of a sender holds its slots for
   * member j's experts (contiguous, since slots go expert by expert), padded to the group's largest such count. */
  int P, El, r;
  int R;                                       /* rows the local experts process: M (P == 1) or the received rows */
  void *xr;                                    /* P > 1: [xmax, C] the received rows, grouped by local expert */
  int32_t *send_tok, *send_slot, *recv_row, *back_row, *slot_row; /* P > 1, backend: [xmax] x 4, [M] */
  int32_t *h_send_tok, *h_send_slot, *h_recv_row, *h_back_row, *h_slot_row; /* host copies */
  int32_t *h_roff;                             /* [El + 1] the local experts' first received rows */
  float *h_cnt;                                /* [P E] every member's kept count per expert */
  int blk;                                     /* the last forward's exchange block (rows) */
  int cap_group;                               /* the last forward's capacity as DeepSpeed's buffers have it (without
                                                  token dropping: the largest count over the expert-parallel group) */
} moe_layer;

/* The scratch (shared by the layers) for N rows, carved in this order (R: the rows the local experts process). */
typedef struct {
  void *disp, *dyb, *dh, *tmp, *tmp2, *mlp;    /* [M, C], [M, C], [R, FFN] (SwiGLU: [R, 3 FFN]), [N, C], [N, C],
                                                  the dense branch's */
  void *xa, *xb;                               /* expert parallelism: [xmax, C] each, the exchange buffers */
  void *wgd;                                   /* [E, C] the router's gradient in a half dtype */
  float *x32, *wg32, *log32, *dwg32, *dx32, *dw32, *c32; /* fp32: [N C], [E C], [N E], [E C], [N C], [M], [2N] */
} moe_scratch;

static size_t align64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Expert parallelism: the rows of the exchange buffers for N tokens, P blocks of the most rows one member can send
 * another: its N tokens' choices of the receiver's El experts (at most min(k, El) each), and with token dropping at
 * most El capacities. 0 without expert parallelism. */
static int exchange_rows(const moe_layer *m, int N) {
  if (m->P <= 1) return 0;
  long long blk = (long long)N * (m->k < m->El ? m->k : m->El);
  if (m->mc->drop_tokens) {
    const int c1 = zt_moe_capacity(N, m->E, m->k, m->mc->train_capacity_factor, m->mc->min_capacity);
    const int c2 = zt_moe_capacity(N, m->E, m->k, m->mc->eval_capacity_factor, m->mc->min_capacity);
    const long long cap = c1 > c2 ? c1 : c2;
    if ((long long)m->El * cap < blk) blk = (long long)m->El * cap;
  }
  const long long rows = (long long)m->P * (blk > 0 ? blk : 1);
  zt_check(rows < INT32_MAX, "unsupported argument", "MoE layer %d: %lld exchange rows per micro batch", m->layer,
           rows);
  return (int)rows;
}

/* The rows the local experts process for N tokens: the k N slots, or the exchange's. */
static int expert_rows(const moe_layer *m, int N) { return m->P > 1 ? exchange_rows(m, N) : m->k * N; }

static size_t carve(moe_scratch *s, void *base, const moe_layer *m, const zt_block_config *cfg, int N) {
  const size_t es = zt_dtype_size(zt_block_dt(cfg)), M = (size_t)m->k * N, C = (size_t)cfg->C, E = (size_t)m->E;
  const size_t R = (size_t)expert_rows(m, N), X = (size_t)exchange_rows(m, N);
  const size_t sizes[] = {M * C * es, M * C * es, R * (size_t)cfg->FFN * es * (cfg->swiglu ? 3 : 1),
                          (size_t)N * C * es, (size_t)N * C * es,
                          m->mc->residual ? m->mlp.scratch_bytes(&m->mlp, cfg, N) : 0, X * C * es, X * C * es,
                          E * C * es,
                          (size_t)N * C * 4, E * C * 4, (size_t)N * E * 4, E * C * 4, (size_t)N * C * 4, M * 4,
                          2 * (size_t)N * 4};
  void **dst[] = {&s->disp, &s->dyb, &s->dh, &s->tmp, &s->tmp2, &s->mlp, &s->xa, &s->xb, &s->wgd, (void **)&s->x32,
                  (void **)&s->wg32,
                  (void **)&s->log32, (void **)&s->dwg32, (void **)&s->dx32, (void **)&s->dw32, (void **)&s->c32};
  size_t off = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (s) *dst[i] = base ? (char *)base + off : NULL;
    off += align64(sizes[i]);
  }
  return off;
}

static char *join(char *buf, size_t n, const char *prefix, const char *what) {
  snprintf(buf, n, "%s.%s", prefix, what);
  return buf;
}

/* With tensor parallelism every rank runs the MoE layer over all the micro batch's tokens. Its experts (and Residual
 * MoE's dense branch) are whole on each rank, as DeepSpeed's without --enable-expert-tensor-parallelism: the experts'
 * configuration has the full FFN and one tensor-parallel rank. With it they are split as the dense MLP (this rank's
 * FFN share, the tensor-parallel group without sequence parallelism: the rows are already all the tokens). */
static zt_block_config expert_cfg(moe_layer *m, const zt_block_config *cfg) {
  zt_block_config e = *cfg;
  if (m->mc->expert_tp && zt_tp_on(cfg->tp)) {
    m->etp = *cfg->tp;
    m->etp.sp = 0, m->etp.gather = m->etp.partial = NULL;
  } else {
    m->etp = (zt_tp){.size = 1, .be = cfg->tp->be, .dt = cfg->tp->dt};
    e.FFN = cfg->FFN * (zt_tp_on(cfg->tp) ? cfg->tp->size : 1);
  }
  e.tp = &m->etp;
  return e;
}

/* The rows the layer computes: every token of the micro batch (with --sequence-parallel N is this rank's share). */
static int all_rows(const zt_block_config *cfg, int N) { return zt_tp_sp(cfg->tp) ? N * cfg->tp->size : N; }

/* An expert's ParallelMLP (or the residual MoE's dense branch) of the experts' configuration: whole, or split over
 * the tensor-parallel ranks as the dense MLP's (dense_h_to_4h by rows, dense_4h_to_h by columns, its bias
 * replicated); with --swiglu dense_h_to_4h has 2 ffn rows (the gate's, then the linear half's: per rank its share of
 * each), with --disable-bias-linear no biases. */
static void add_mlp(zt_param_table *t, const char *pre, const zt_block_config *cfg) {
  char name[200];
  const int64_t ffn = cfg->FFN, rows = cfg->swiglu ? 2 * ffn : ffn;
  const int64_t w1[2] = {rows, cfg->C}, b1[1] = {rows}, w2[2] = {cfg->C, ffn}, b2[1] = {cfg->C};
  const int split = zt_tp_on(cfg->tp), parts = split && cfg->swiglu ? 2 : 1;
  int k = zt_param_table_add(t, join(name, sizeof name, pre, "dense_h_to_4h.weight"), 2, w1, ZT_INIT_NORMAL,
                             cfg->init_std, 0, split ? 0 : -1);
  t->params[k].tp_parts = parts;
  if (!cfg->no_bias) {
    k = zt_param_table_add(t, join(name, sizeof name, pre, "dense_h_to_4h.bias"), 1, b1, ZT_INIT_ZEROS, 0, 1,
                           split ? 0 : -1);
    t->params[k].tp_parts = parts;
  }
  zt_param_table_add(t, join(name, sizeof name, pre, "dense_4h_to_h.weight"), 2, w2, ZT_INIT_NORMAL,
                     cfg->out_init_std, 0, split ? 1 : -1);
  if (!cfg->no_bias)
    zt_param_table_add(t, join(name, sizeof name, pre, "dense_4h_to_h.bias"), 1, b2, ZT_INIT_ZEROS, 0, 1, -1);
}

static void expert_prefix(char *buf, size_t n, const char *prefix, int e) {
  snprintf(buf, n, "%s.deepspeed_moe.experts.deepspeed_experts.%d", prefix, e);
}

/* The experts this process holds: [*e0, *e1) of the layer's global ids (its own E / P with local_experts). */
static void held_experts(const moe_layer *m, int *e0, int *e1) {
  const int local = m->P > 1 && m->mc->local_experts;
  *e0 = local ? m->r * m->El : 0;
  *e1 = local ? *e0 + m->El : m->E;
}

static void moe_register(const zt_ffn *self, zt_param_table *t, const char *prefix, const zt_block_config *tcfg) {
  moe_layer *m = self->state;
  int e0, e1;
  held_experts(m, &e0, &e1);
  const zt_block_config ecfg = expert_cfg(m, tcfg), *cfg = &ecfg;
  const int first_param = t->count;
  char name[200];
  const float bound = 1.0f / sqrtf((float)cfg->C); /* nn.Linear's default init: U(-1/sqrt(C), 1/sqrt(C)) */
  const int64_t wg[2] = {m->E, cfg->C};
  zt_param_table_add(t, join(name, sizeof name, prefix, "deepspeed_moe.gate.wg.weight"), 2, wg, ZT_INIT_UNIFORM, bound,
                     0, -1);
  for (int e = e0; e < e1; e++) {
    char pre[180];
    expert_prefix(pre, sizeof pre, prefix, e);
    const int first = t->count;
    add_mlp(t, pre, cfg);
    for (int i = first; i < t->count; i++) t->params[i].expert_id = e;
  }
  if (m->mc->residual) {
    char pre[180];
    add_mlp(t, join(pre, sizeof pre, prefix, "mlp"), cfg);
    const int64_t cw[2] = {2, cfg->C}, cb[1] = {2};
    zt_param_table_add(t, join(name, sizeof name, prefix, "coefficient.weight"), 2, cw, ZT_INIT_UNIFORM, bound, 0, -1);
    zt_param_table_add(t, join(name, sizeof name, prefix, "coefficient.bias"), 1, cb, ZT_INIT_UNIFORM, bound, 1, -1);
  }
  /* every rank computes the layer over all tokens (gathered under --sequence-parallel): the gradients are whole on
   * each tensor-parallel rank (or its exact slice, with --enable-expert-tensor-parallelism), not partial sums to add
   * over the group */
  for (int i = first_param; i < t->count; i++) t->params[i].seq_parallel = 0;
}

static void moe_bind(zt_ffn *self, const zt_param_table *t, const char *prefix, void *params, void *grads, size_t es) {
  moe_layer *m = self->state;
  char pre[180];
  m->wg = zt_param_addr(t, params, es, prefix, "deepspeed_moe.gate.wg.weight");
  m->dwg = zt_param_addr(t, grads, es, prefix, "deepspeed_moe.gate.wg.weight");
  int e0, e1;
  held_experts(m, &e0, &e1);
  for (int e = e0; e < e1; e++) {
    expert_prefix(pre, sizeof pre, prefix, e);
    m->fc_w[e] = zt_param_addr(t, params, es, pre, "dense_h_to_4h.weight");
    m->fc_b[e] = zt_param_addr_if(t, params, es, pre, "dense_h_to_4h.bias"); /* NULL: --disable-bias-linear */
    m->proj_w[e] = zt_param_addr(t, params, es, pre, "dense_4h_to_h.weight");
    m->proj_b[e] = zt_param_addr_if(t, params, es, pre, "dense_4h_to_h.bias");
    m->dfc_w[e] = zt_param_addr(t, grads, es, pre, "dense_h_to_4h.weight");
    m->dfc_b[e] = zt_param_addr_if(t, grads, es, pre, "dense_h_to_4h.bias");
    m->dproj_w[e] = zt_param_addr(t, grads, es, pre, "dense_4h_to_h.weight");
    m->dproj_b[e] = zt_param_addr_if(t, grads, es, pre, "dense_4h_to_h.bias");
  }
  if (m->mc->residual) {
    m->mlp.bind(&m->mlp, t, join(pre, sizeof pre, prefix, "mlp"), params, grads, es);
    m->coef_w = zt_param_addr(t, params, es, prefix, "coefficient.weight");
    m->coef_b = zt_param_addr(t, params, es, prefix, "coefficient.bias");
    m->dcoef_w = zt_param_addr(t, grads, es, prefix, "coefficient.weight");
    m->dcoef_b = zt_param_addr(t, grads, es, prefix, "coefficient.bias");
  }
}

static void host_free(moe_layer *m) {
  zt_moe_gating_free(&m->g);
  free(m->h_off), free(m->h_tok), free(m->h_slot_of), free(m->h_w), free(m->h_dw), free(m->h_logits);
  free(m->h_dlogits), free(m->h_rows), free(m->h_coef), free(m->h_dweight);
  free(m->draws.rts), free(m->draws.gumbel), free(m->draws.jitter);
  free(m->h_send_tok), free(m->h_send_slot), free(m->h_recv_row), free(m->h_back_row), free(m->h_slot_row);
  free(m->h_roff), free(m->h_cnt);
  m->h_send_tok = m->h_send_slot = m->h_recv_row = m->h_back_row = m->h_slot_row = m->h_roff = NULL;
  m->h_cnt = NULL;
  m->h_off = m->h_tok = m->h_slot_of = NULL;
  m->h_w = m->h_dw = m->h_logits = m->h_dlogits = m->h_rows = m->h_coef = m->h_dweight = NULL;
  m->draws = (zt_moe_draws){0};
  m->planned = 0;
}

static void moe_plan_acts(zt_ffn *self, zt_memplan *plan, const zt_block_config *tcfg, int Nl) {
  moe_layer *m = self->state;
  const zt_block_config ecfg = expert_cfg(m, tcfg), *cfg = &ecfg;
  const int N = all_rows(tcfg, Nl);
  const size_t es = zt_dtype_size(zt_block_dt(cfg)), M = (size_t)m->k * N, C = (size_t)cfg->C;
  const size_t R = (size_t)expert_rows(m, N), X = (size_t)exchange_rows(m, N);
  m->fc = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, R * cfg->FFN * es * (cfg->swiglu ? 2 : 1));
  m->gelu = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, R * cfg->FFN * es);
  if (m->P > 1) {
    m->xr = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, X * C * es);
    m->send_tok = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, X * sizeof(int32_t));
    m->send_slot = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, X * sizeof(int32_t));
    m->recv_row = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, X * sizeof(int32_t));
    m->back_row = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, X * sizeof(int32_t));
    m->slot_row = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, M * sizeof(int32_t));
  }
  m->y = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, M * C * es);
  m->slot_tok = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, M * sizeof(int32_t));
  m->slot_w = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, M);
  if (m->mc->residual) {
    m->moe_out = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, (size_t)N * C * es);
    m->mlp_out = zt_memplan_bytes(plan, ZT_MEM_ACTIVATIONS, (size_t)N * C * es);
    m->coef = zt_memplan_floats(plan, ZT_MEM_ACTIVATIONS, 2 * (size_t)N);
    m->mlp.plan_acts(&m->mlp, plan, cfg, N);
  }
  if (m->planned == N) return;
  host_free(m);
  const int E = m->E, k = m->k;
  const size_t wide = (size_t)(E > cfg->C ? E : cfg->C);
  zt_moe_gating_alloc(&m->g, N, E, k);
  m->h_off = zt_malloc((size_t)(E + 1) * sizeof(int32_t), "MoE slots");
  m->h_tok = zt_malloc(M * sizeof(int32_t), "MoE slots");
  m->h_slot_of = zt_malloc(M * sizeof(int32_t), "MoE slots");
  m->h_w = zt_malloc(M * sizeof(float), "MoE slots");
  m->h_dw = zt_malloc(M * sizeof(float), "MoE slots");
  m->h_dweight = zt_malloc(M * sizeof(float), "MoE slots");
  m->h_logits = zt_malloc((size_t)N * E * sizeof(float), "MoE logits");
  m->h_dlogits = zt_malloc((size_t)N * E * sizeof(float), "MoE logits");
  m->h_rows = zt_malloc((size_t)N * wide * sizeof(float), "MoE staging");
  if (m->mc->residual) m->h_coef = zt_malloc(2 * (size_t)N * sizeof(float), "MoE coefficients");
  if (k == 1) m->draws.rts = zt_malloc((size_t)N * E * sizeof(float), "MoE draws");
  if ((k == 2 && m->mc->top2_sampling) || (k == 1 && m->mc->noise == ZT_MOE_NOISE_RSAMPLE))
    m->draws.gumbel = zt_malloc((size_t)N * E * sizeof(float), "MoE draws");
  if (m->mc->noise == ZT_MOE_NOISE_JITTER) m->draws.jitter = zt_malloc((size_t)N * C * sizeof(float), "MoE draws");
  if (m->P > 1) {
    m->h_send_tok = zt_malloc(X * sizeof(int32_t), "MoE exchange");
    m->h_send_slot = zt_malloc(X * sizeof(int32_t), "MoE exchange");
    m->h_recv_row = zt_malloc(X * sizeof(int32_t), "MoE exchange");
    m->h_back_row = zt_malloc(X * sizeof(int32_t), "MoE exchange");
    m->h_slot_row = zt_malloc(M * sizeof(int32_t), "MoE exchange");
    m->h_roff = zt_malloc((size_t)(m->El + 1) * sizeof(int32_t), "MoE exchange");
    m->h_cnt = zt_malloc((size_t)m->P * E * sizeof(float), "MoE exchange");
  }
  m->planned = N;
}

/* The scratch: carve()'s for all NF rows, then with --sequence-parallel the gathered input, the whole output (then
 * its gradient) and the whole input gradient [NF, C] each. */
static size_t moe_scratch_bytes(const zt_ffn *self, const zt_block_config *tcfg, int Nl) {
  moe_layer *m = self->state;
  const zt_block_config ecfg = expert_cfg(m, tcfg);
  const int NF = all_rows(tcfg, Nl);
  const size_t sp = zt_tp_sp(tcfg->tp) ? 3 * align64((size_t)NF * tcfg->C * zt_dtype_size(zt_block_dt(tcfg))) : 0;
  return carve(NULL, NULL, m, &ecfg, NF) + sp;
}

/* Row r = b T + t of a [B, T] micro batch is token s = t B + b of the gate. */
static inline int row_of(int s, int B, int T) { return (s % B) * T + s / B; }

/* The router's input in fp32 (x32): the layer input converted (a no-op alias in fp32 without jitter), times the jitter
 * under the Jitter policy in training. Returns where it is. */
static const float *router_input(moe_layer *m, moe_scratch *sc, const void *inp, const zt_block_config *cfg,
                                 const zt_pass *pass, int N) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int C = cfg->C, jit = pass->training && m->mc->noise == ZT_MOE_NOISE_JITTER;
  if (dt == ZT_DTYPE_FP32 && !jit) return inp;
  if (dt == ZT_DTYPE_FP32) be->copy(sc->x32, inp, (size_t)N * C * sizeof(float));
  else be->convert(sc->x32, ZT_DTYPE_FP32, inp, dt, (size_t)N * C);
  if (jit) {
    float *h = m->h_rows;
    be->to_host(h, sc->x32, (size_t)N * C * sizeof(float));
    for (int s = 0; s < N; s++) {
      float *x = h + (size_t)row_of(s, pass->B, pass->T) * C;
      const float *j = m->draws.jitter + (size_t)s * C;
      for (int c = 0; c < C; c++) x[c] *= j[c];
    }
    be->from_host(sc->x32, h, (size_t)N * C * sizeof(float));
  }
  return sc->x32;
}

static const float *router_weight(moe_layer *m, moe_scratch *sc, const zt_block_config *cfg) {
  const zt_dtype dt = zt_block_dt(cfg);
  if (dt == ZT_DTYPE_FP32) return m->wg;
  zt_block_be(cfg)->convert(sc->wg32, ZT_DTYPE_FP32, m->wg, dt, (size_t)m->E * cfg->C);
  return sc->wg32;
}

/* Experts e0 .. e0 + n - 1 over their rows of x (expert i's rows [off[i], off[i + 1]), off[0] = 0), into y at the same
 * rows; the intermediate activations stay in m->fc and m->gelu for the backward. Split experts: each rank's partial
 * outputs, summed over the tensor-parallel group in one all-reduce of all the rows, then each expert's bias. */
static void experts_forward(moe_layer *m, const zt_block_config *cfg, void *y, const void *x, const int32_t *off,
                            int e0, int n) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int C = cfg->C, FFN = cfg->FFN, W = cfg->swiglu ? 2 * FFN : FFN; /* W: dense_h_to_4h's outputs */
  const int split = zt_tp_on(cfg->tp);
  for (int i = 0; i < n; i++) {
    const int e = e0 + i, o = off[i], rows = off[i + 1] - o;
    if (rows == 0) continue;
    void *fc = zt_at(m->fc, dt, (size_t)o * W), *act = zt_at(m->gelu, dt, (size_t)o * FFN);
    if (cfg->swiglu) {
      be->matmul_forward(dt, fc, NULL, zt_at(x, dt, (size_t)o * C), m->fc_w[e], m->fc_b[e], rows, C, W);
      be->swiglu_forward(dt, act, fc, rows, FFN);
    } else {
      zt_ffn_fc(be, dt, cfg->act, act, fc, zt_at(x, dt, (size_t)o * C), m->fc_w[e], m->fc_b[e], rows, C, FFN);
    }
    be->matmul_forward(dt, zt_at(y, dt, (size_t)o * C), NULL, zt_at(m->gelu, dt, (size_t)o * FFN), m->proj_w[e],
                       split ? NULL : m->proj_b[e], rows, FFN, C);
  }
  if (!split || off[n] == 0) return;
  zt_tp_reduce(cfg->tp, y, NULL, off[n], C);
  for (int i = 0; i < n; i++)
    if (m->proj_b[e0 + i] && off[i + 1] > off[i])
      be->add_bias(dt, zt_at(y, dt, (size_t)off[i] * C), m->proj_b[e0 + i], off[i + 1] - off[i], C);
}

/* Their backward: dy (the outputs' gradients at the rows) becomes the inputs' gradients (split experts: summed over
 * the tensor-parallel group); dh is [rows, FFN] scratch (SwiGLU: [rows, 3 FFN], the gradient of the pre-activation
 * after the activation's). */
static void experts_backward(moe_layer *m, const zt_block_config *cfg, void *dy, const void *x, void *dh,
                             const int32_t *off, int e0, int n) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int C = cfg->C, FFN = cfg->FFN, W = cfg->swiglu ? 2 * FFN : FFN;
  for (int i = 0; i < n; i++) {
    const int e = e0 + i, o = off[i], rows = off[i + 1] - o;
    if (rows == 0) continue;
    void *d = zt_at(dy, dt, (size_t)o * C), *fc = zt_at(m->fc, dt, (size_t)o * W);
    zt_linear_backward(be, dt, dh, m->dproj_w[e], m->dproj_b[e], d, zt_at(m->gelu, dt, (size_t)o * FFN), m->proj_w[e],
                           NULL, rows, FFN, C);
    void *dfc = dh, *pre = NULL;
    if (cfg->swiglu) {
      dfc = zt_at(dh, dt, (size_t)rows * FFN);
      be->swiglu_backward(dt, dfc, dh, fc, rows, FFN);
    } else {
      pre = zt_ffn_act_backward(be, dt, cfg->act, dh, fc, (size_t)rows * FFN);
    }
    zt_linear_backward(be, dt, d, m->dfc_w[e], m->dfc_b[e], dfc, zt_at(x, dt, (size_t)o * C), m->fc_w[e], pre, rows, C,
                           W);
  }
  if (zt_tp_on(cfg->tp) && off[n] > 0) zt_tp_reduce(cfg->tp, dy, NULL, off[n], C);
}

/* Expert parallelism, after the slots are laid out: every member's kept count per expert (one all-gather of E values
 * on the host), the exchange block (the largest count one member sends another, over the group) and the four row maps
 * (backend copies): send_tok and send_slot (exchange row -> the token row sent forward, the slot whose gradient
 * is sent backward), recv_row (received row, grouped by local expert -> exchange
 * row), back_row (exchange row -> received row whose output goes back) and slot_row (slot -> exchange row its output
 * comes back in). Pads point at row 0 (any row: they are not read back). */
static void exchange_plan(moe_layer *m, const zt_block_config *cfg) {
  const zt_backend *be = zt_block_be(cfg);
  const int P = m->P, E = m->E, El = m->El, r = m->r, M = m->h_off[E];
  float *mine = m->h_cnt + (size_t)r * E;
  for (int e = 0; e < E; e++) mine[e] = (float)(m->h_off[e + 1] - m->h_off[e]);
  zt_allgather(m->mc->ep_group, ZT_DTYPE_FP32, mine, (size_t)E, m->h_cnt);
  int blk = 0;
  for (int i = 0; i < P; i++)
    for (int j = 0; j < P; j++) {
      int rows = 0;
      for (int e = j * El; e < (j + 1) * El; e++) rows += (int)m->h_cnt[(size_t)i * E + e];
      blk = rows > blk ? rows : blk;
    }
  zt_check(P * blk <= exchange_rows(m, m->N), "internal error", "MoE layer %d: exchange of %d x %d rows, planned %d",
           m->layer, P, blk, exchange_rows(m, m->N));
  m->blk = blk;
  const int X = P * blk;
  for (int x = 0; x < X; x++) m->h_send_tok[x] = m->h_send_slot[x] = m->h_back_row[x] = 0;
  for (int j = 0; j < P; j++) /* block j: my slots of member j's experts, then pads */
    for (int s = m->h_off[j * El]; s < m->h_off[(j + 1) * El]; s++) {
      m->h_send_slot[j * blk + (s - m->h_off[j * El])] = s;
      m->h_send_tok[j * blk + (s - m->h_off[j * El])] = m->h_tok[s];
      m->h_slot_row[s] = j * blk + (s - m->h_off[j * El]);
    }
  int R = 0;
  for (int l = 0; l < El; l++) { /* local expert l: the rows of member 0, then member 1, ... */
    m->h_roff[l] = R;
    for (int i = 0; i < P; i++) {
      const float *c = m->h_cnt + (size_t)i * E + (size_t)r * El;
      int first = 0;
      for (int q = 0; q < l; q++) first += (int)c[q];
      for (int q = 0; q < (int)c[l]; q++, R++) {
        m->h_recv_row[R] = i * blk + first + q;
        m->h_back_row[i * blk + first + q] = R;
      }
    }
  }
  m->h_roff[El] = R;
  m->R = R;
  be->from_host(m->send_tok, m->h_send_tok, (size_t)X * sizeof(int32_t));
  be->from_host(m->send_slot, m->h_send_slot, (size_t)X * sizeof(int32_t));
  be->from_host(m->recv_row, m->h_recv_row, (size_t)R * sizeof(int32_t));
  be->from_host(m->back_row, m->h_back_row, (size_t)X * sizeof(int32_t));
  be->from_host(m->slot_row, m->h_slot_row, (size_t)M * sizeof(int32_t));
}

/* One exchange of rows [blk, C] per member: rows (P blk of them) gathered from src by `pick` into a, sent through the
 * all-to-all into b, then the rows of b named by `keep` (n of them) gathered into dst. a may be dst, and b may be src
 * (each is free by then); a and b [P blk, C] must differ. */
static void exchange(moe_layer *m, const zt_block_config *cfg, void *dst, const int32_t *keep, int n, const void *src,
                     const int32_t *pick, void *a, void *b) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int C = cfg->C, X = m->P * m->blk;
  if (X == 0) return;
  be->embedding_forward(dt, a, pick, src, X, C, 0);
  zt_alltoall(m->mc->ep_group, dt, a, (size_t)m->blk * C, b);
  if (n > 0) be->embedding_forward(dt, dst, keep, b, n, C, 0);
}

/* ft: the layer's flops-profiler latency slots (ZT_FT_MOE, GATE, EXPERTS, RMLP, COEF, and the residual branch's
 * FC1, FC2), or NULL. */
static float core_forward(moe_layer *m, void *out, const void *inp, const zt_block_config *cfg, const zt_pass *pass,
                          int N, void *scratch, double *ft) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const size_t es = zt_dtype_size(dt);
  const int C = cfg->C, E = m->E, k = m->k, B = pass->B, T = pass->T;
  zt_check(N == B * T && N <= m->planned, "internal error", "MoE layer %d: %d rows for a %dx%d pass (planned %d)",
           m->layer, N, B, T, m->planned);
  moe_scratch sc;
  carve(&sc, scratch, m, cfg, N);
  m->N = N;
  const double t_moe = ft ? zt_now() : 0.0;
  double t1 = t_moe;
  /* draws, then the router in fp32 */
  zt_moe_draws d = {m->draws.rts, NULL, pass->training ? m->draws.jitter : NULL};
  if ((k == 2 && m->mc->top2_sampling) || (k == 1 && pass->training && m->mc->noise == ZT_MOE_NOISE_RSAMPLE))
    d.gumbel = m->draws.gumbel;
  zt_moe_draw_at(&d, pass->seed, pass->first_sample, m->layer, B, T, pass->kv_cache ? pass->kv_past : 0, E, C);
  const float *x32 = router_input(m, &sc, inp, cfg, pass, N);
  be->matmul_forward(ZT_DTYPE_FP32, sc.log32, NULL, x32, router_weight(m, &sc, cfg), NULL, N, C, E);
  be->to_host(m->h_rows, sc.log32, (size_t)N * E * sizeof(float));
  for (int s = 0; s < N; s++)
    memcpy(m->h_logits + (size_t)s * E, m->h_rows + (size_t)row_of(s, B, T) * E, (size_t)E * sizeof(float));
  m->g.S = N;
  zt_moe_gate_forward(&m->g, m->h_logits, m->mc, pass->training, &d);
  m->cap_group = m->g.capacity;
  if (ft) ft[ZT_FT_GATE] += zt_now() - t1;
  /* slots: expert by expert, choice by choice, in token order */
  int M = 0;
  for (int e = 0; e < E; e++) {
    m->h_off[e] = M;
    for (int j = 0; j < k; j++)
      for (int s = 0; s < N; s++) {
        const size_t i = (size_t)s * k + j;
        if (m->g.expert[i] != e) continue;
        if (!m->g.kept[i]) {
          m->h_slot_of[i] = -1;
          continue;
        }
        m->h_slot_of[i] = M;
        m->h_tok[M] = row_of(s, B, T);
        m->h_w[M++] = m->g.weight[i];
      }
  }
  m->h_off[E] = M;
  be->from_host(m->slot_tok, m->h_tok, (size_t)M * sizeof(int32_t));
  be->from_host(m->slot_w, m->h_w, (size_t)M * sizeof(float));
  /* the experts: here, or on the members of the expert-parallel group (there and back through the all-to-all) */
  if (m->P > 1) { /* the token rows go straight from the input into the exchange */
    exchange_plan(m, cfg);
    for (int i = 0; !m->mc->drop_tokens && i < m->P * E; i++) /* DeepSpeed max-reduces it over the group */
      if ((int)m->h_cnt[i] > m->cap_group) m->cap_group = (int)m->h_cnt[i];
    exchange(m, cfg, m->xr, m->recv_row, m->R, inp, m->send_tok, sc.xa, sc.xb);
    if (ft) t1 = zt_now();
    experts_forward(m, cfg, sc.xa, m->xr, m->h_roff, m->r * m->El, m->El);
    if (ft) ft[ZT_FT_EXPERTS] += zt_now() - t1;
    exchange(m, cfg, m->y, m->slot_row, M, sc.xa, m->back_row, sc.xb, sc.xa);
  } else {
    m->R = M;
    be->embedding_forward(dt, sc.disp, m->slot_tok, inp, M, C, 0);
    if (ft) t1 = zt_now();
    experts_forward(m, cfg, m->y, sc.disp, m->h_off, 0, E);
    if (ft) ft[ZT_FT_EXPERTS] += zt_now() - t1;
  }
  /* combine */
  void *moe_out = m->mc->residual ? m->moe_out : out;
  be->scale_rows(dt, sc.dyb, m->y, m->slot_w, M, C);
  be->memset(moe_out, 0, (size_t)N * C * es);
  be->embedding_backward(dt, moe_out, m->slot_tok, sc.dyb, M, C);
  if (ft) ft[ZT_FT_MOE] += zt_now() - t_moe;
  if (m->mc->residual) { /* out = moe_out * coef_0 + mlp(x) * coef_1, coef = softmax(x Wc^T + bc) */
    m->mlp.fwd_time = ft; /* its linears time into FC1 and FC2 */
    if (ft) t1 = zt_now();
    m->mlp.forward(&m->mlp, m->mlp_out, inp, cfg, pass, N, sc.mlp);
    if (ft) ft[ZT_FT_RMLP] += zt_now() - t1, t1 = zt_now();
    be->matmul_forward(dt, sc.tmp, NULL, inp, m->coef_w, m->coef_b, N, C, 2);
    if (ft) ft[ZT_FT_COEF] += zt_now() - t1;
    float *c2 = m->h_rows;
    if (dt == ZT_DTYPE_FP32) {
      be->to_host(c2, sc.tmp, (size_t)N * 2 * sizeof(float));
    } else {
      be->convert(sc.c32, ZT_DTYPE_FP32, sc.tmp, dt, (size_t)N * 2);
      be->to_host(c2, sc.c32, (size_t)N * 2 * sizeof(float));
    }
    for (int r = 0; r < N; r++) {
      const double a = c2[2 * r], b = c2[2 * r + 1], mx = a > b ? a : b;
      const double ea = exp(a - mx), eb = exp(b - mx);
      m->h_coef[r] = (float)(ea / (ea + eb));
      m->h_coef[N + r] = (float)(eb / (ea + eb));
    }
    be->from_host(m->coef, m->h_coef, 2 * (size_t)N * sizeof(float));
    be->scale_rows(dt, out, m->moe_out, m->coef, N, C);
    be->scale_rows(dt, sc.tmp, m->mlp_out, m->coef + N, N, C);
    be->accumulate(dt, out, sc.tmp, (size_t)N * C);
  }
  return (float)m->g.aux;
}

static void core_backward(moe_layer *m, void *dinp, const void *dout, const void *inp, const zt_block_config *cfg,
                          const zt_pass *pass, int N, void *scratch, float aux_grad) {
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const size_t es = zt_dtype_size(dt);
  const int C = cfg->C, E = m->E, k = m->k, B = pass->B, T = pass->T, M = m->h_off[E];
  zt_check(N == m->N, "internal error", "MoE layer %d: backward of %d rows after a forward of %d", m->layer, N, m->N);
  moe_scratch sc;
  carve(&sc, scratch, m, cfg, N);
  const void *dmo = dout;
  if (m->mc->residual) {
    /* d coef_j[r] = d(out)[r] . branch_j[r]; softmax backward on the host; the coefficient's linear */
    be->row_dot(dt, sc.c32, dout, m->moe_out, N, C);
    be->row_dot(dt, sc.c32 + N, dout, m->mlp_out, N, C);
    float *dc = m->h_rows, *dl = m->h_rows + 2 * (size_t)N;
    be->to_host(dc, sc.c32, 2 * (size_t)N * sizeof(float));
    for (int r = 0; r < N; r++) {
      const double c0 = m->h_coef[r], c1 = m->h_coef[N + r], d0 = dc[r], d1 = dc[N + r], dot = c0 * d0 + c1 * d1;
      dl[2 * r] = (float)(c0 * (d0 - dot));
      dl[2 * r + 1] = (float)(c1 * (d1 - dot));
    }
    be->from_host(sc.c32, dl, 2 * (size_t)N * sizeof(float));
    if (dt == ZT_DTYPE_FP32) be->copy(sc.tmp, sc.c32, 2 * (size_t)N * sizeof(float));
    else be->convert(sc.tmp, dt, sc.c32, ZT_DTYPE_FP32, 2 * (size_t)N);
    /* the dense branch writes dinp (=); the coefficient's and the experts' input gradients add to it */
    be->scale_rows(dt, sc.tmp2, dout, m->coef + N, N, C);
    m->mlp.backward(&m->mlp, dinp, sc.tmp2, inp, cfg, pass, N, sc.mlp, 0.0f);
    be->matmul_backward(dt, sc.tmp2, m->dcoef_w, m->dcoef_b, sc.tmp, inp, m->coef_w, NULL, N, C, 2);
    be->accumulate(dt, dinp, sc.tmp2, (size_t)N * C);
    be->scale_rows(dt, sc.tmp, dout, m->coef, N, C);
    dmo = sc.tmp;
  } else {
    be->memset(dinp, 0, (size_t)N * C * es);
  }
  /* combine: d y[slot] = w d(out)[token], d w[slot] = d(out)[token] . y[slot] */
  be->embedding_forward(dt, sc.dyb, m->slot_tok, dmo, M, C, 0);
  be->row_dot(dt, sc.dw32, sc.dyb, m->y, M, C);
  be->to_host(m->h_dw, sc.dw32, (size_t)M * sizeof(float));
  be->scale_rows(dt, sc.dyb, sc.dyb, m->slot_w, M, C);
  /* the experts, each d(input) in place of its d y (here, or on the member that ran it and back) */
  if (m->P > 1) {
    exchange(m, cfg, sc.xa, m->recv_row, m->R, sc.dyb, m->send_slot, sc.xa, sc.xb);
    experts_backward(m, cfg, sc.xa, m->xr, sc.dh, m->h_roff, m->r * m->El, m->El);
    exchange(m, cfg, sc.dyb, m->slot_row, M, sc.xa, m->back_row, sc.xb, sc.xa);
  } else {
    be->embedding_forward(dt, sc.disp, m->slot_tok, inp, M, C, 0);
    experts_backward(m, cfg, sc.dyb, sc.disp, sc.dh, m->h_off, 0, E);
  }
  be->embedding_backward(dt, dinp, m->slot_tok, sc.dyb, M, C);
  /* the gate: d(combine weights) and d(l_aux) -> d(logits), then the router in fp32 */
  for (size_t i = 0; i < (size_t)N * k; i++) m->h_dweight[i] = m->h_slot_of[i] >= 0 ? m->h_dw[m->h_slot_of[i]] : 0.0f;
  zt_moe_gate_backward(&m->g, m->h_dlogits, m->h_dweight, (double)aux_grad);
  for (int s = 0; s < N; s++)
    memcpy(m->h_rows + (size_t)row_of(s, B, T) * E, m->h_dlogits + (size_t)s * E, (size_t)E * sizeof(float));
  be->from_host(sc.log32, m->h_rows, (size_t)N * E * sizeof(float));
  const float *x32 = router_input(m, &sc, inp, cfg, pass, N);
  const float *wg32 = router_weight(m, &sc, cfg);
  if (dt == ZT_DTYPE_FP32) {
    be->matmul_backward(ZT_DTYPE_FP32, sc.dx32, m->dwg, NULL, sc.log32, x32, wg32, NULL, N, C, E);
  } else { /* the fp32 weight gradient, rounded once into the half gradient */
    be->memset(sc.dwg32, 0, (size_t)E * C * sizeof(float));
    be->matmul_backward(ZT_DTYPE_FP32, sc.dx32, sc.dwg32, NULL, sc.log32, x32, wg32, NULL, N, C, E);
    be->convert(sc.wgd, dt, sc.dwg32, ZT_DTYPE_FP32, (size_t)E * C);
    be->accumulate(dt, m->dwg, sc.wgd, (size_t)E * C);
  }
  if (pass->training && m->mc->noise == ZT_MOE_NOISE_JITTER) { /* d x = d(x jitter) jitter */
    float *h = m->h_rows;
    be->to_host(h, sc.dx32, (size_t)N * C * sizeof(float));
    for (int s = 0; s < N; s++) {
      float *x = h + (size_t)row_of(s, B, T) * C;
      const float *j = m->draws.jitter + (size_t)s * C;
      for (int c = 0; c < C; c++) x[c] *= j[c];
    }
    be->from_host(sc.dx32, h, (size_t)N * C * sizeof(float));
  }
  if (dt == ZT_DTYPE_FP32) {
    be->accumulate(dt, dinp, sc.dx32, (size_t)N * C);
  } else {
    be->convert(sc.disp, dt, sc.dx32, ZT_DTYPE_FP32, (size_t)N * C);
    be->accumulate(dt, dinp, sc.disp, (size_t)N * C);
  }
}

/* The whole-layer rows of --sequence-parallel after carve()'s scratch: x [NF, C], y (then dy) [NF, C], dx [NF, C]. */
static void *sp_buf(moe_layer *m, const zt_block_config *tcfg, void *scratch, int NF, int which) {
  const zt_block_config ecfg = expert_cfg(m, tcfg);
  const size_t part = align64((size_t)NF * tcfg->C * zt_dtype_size(zt_block_dt(tcfg)));
  return (char *)scratch + carve(NULL, NULL, m, &ecfg, NF) + (size_t)which * part;
}

static float moe_forward(zt_ffn *self, void *out, const void *inp, const zt_block_config *cfg, const zt_pass *pass,
                         int N, void *scratch) {
  moe_layer *m = self->state;
  const zt_block_config ecfg = expert_cfg(m, cfg);
  if (!zt_tp_sp(cfg->tp)) return core_forward(m, out, inp, &ecfg, pass, N, scratch, self->fwd_time);
  /* --sequence-parallel: the layer over all tokens, then this rank's rows */
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int NF = all_rows(cfg, N);
  const size_t row = (size_t)cfg->C * zt_dtype_size(dt);
  void *x = sp_buf(m, cfg, scratch, NF, 0), *y = sp_buf(m, cfg, scratch, NF, 1);
  be->copy(x, zt_tp_gather(cfg->tp, inp, N, cfg->C), (size_t)NF * row);
  const float aux = core_forward(m, y, x, &ecfg, pass, NF, scratch, self->fwd_time);
  be->copy(out, (char *)y + (size_t)zt_tp_row0(cfg->tp, NF) * row, (size_t)N * row);
  return aux;
}

static void moe_backward(zt_ffn *self, void *dinp, const void *dout, const void *inp, const zt_block_config *cfg,
                         const zt_pass *pass, int N, void *scratch, float aux_grad) {
  moe_layer *m = self->state;
  const zt_block_config ecfg = expert_cfg(m, cfg);
  if (!zt_tp_sp(cfg->tp)) {
    core_backward(m, dinp, dout, inp, &ecfg, pass, N, scratch, aux_grad);
    return;
  }
  const zt_backend *be = zt_block_be(cfg);
  const zt_dtype dt = zt_block_dt(cfg);
  const int NF = all_rows(cfg, N);
  const size_t row = (size_t)cfg->C * zt_dtype_size(dt);
  void *x = sp_buf(m, cfg, scratch, NF, 0), *dy = sp_buf(m, cfg, scratch, NF, 1), *dx = sp_buf(m, cfg, scratch, NF, 2);
  be->copy(x, zt_tp_gather(cfg->tp, inp, N, cfg->C), (size_t)NF * row);
  be->copy(dy, zt_tp_gather(cfg->tp, dout, N, cfg->C), (size_t)NF * row);
  core_backward(m, dx, dy, x, &ecfg, pass, NF, scratch, aux_grad);
  be->copy(dinp, (char *)dx + (size_t)zt_tp_row0(cfg->tp, NF) * row, (size_t)N * row);
}

static void moe_destroy(zt_ffn *self) {
  moe_layer *m = self->state;
  if (!m) return;
  host_free(m);
  if (m->mc->residual) zt_ffn_destroy(&m->mlp);
  free(m->fc_w), free(m->fc_b), free(m->proj_w), free(m->proj_b);
  free(m->dfc_w), free(m->dfc_b), free(m->dproj_w), free(m->dproj_b);
  free(m);
}

/* ---- the flops profiler's module tree ------------------------------------------------------------------------- */

/* torch.einsum as DeepSpeed's flops profiler counts it (_einsum_flops_compute): numpy's einsum_path "Optimized FLOP
 * count" of a two-operand contraction, its cost + 1, where the cost is the product of the sizes of all its indices,
 * doubled when some are summed away (numpy's _flop_count), printed "%.3e" and read back by int(float(...)); 0 MACs. */
static double einsum_flops(double size, int summed) {
  char b[32];
  snprintf(b, sizeof b, "%.3e", size * (summed ? 2 : 1) + 1);
  return floor(strtod(b, NULL));
}

/* DeepSpeed's MoE module under Megatron-DeepSpeed's layer, as its profiler sees one GPU (docs/flops_profiler.md):
 *   mlp: MoE                      residual: softmax of the coefficients, 2 per token
 *     deepspeed_moe: MOELayer     the dispatch einsum sec,sm->ecm and the combine einsum sec,ecm->sm
 *       gate: TopKGate            F.linear in fp32 (S C E MACs), softmax (S E), the gating function's einsums, and
 *                                 without token dropping the capacity's Tensor.mul (1)
 *         wg: Linear              never called as a module: 0
 *       experts: Experts
 *         deepspeed_experts: ModuleList of this rank's E / ep experts, each a ParallelMLP over ep x capacity rows
 *     mlp: ParallelMLP            residual: the dense branch over the S tokens
 *     coefficient: Linear         residual: S C 2 MACs
 * with S tokens and the capacity of the last forward of S tokens (before one: the training pass's, or S without
 * dropping). */
static void moe_flops_tree(const zt_ffn *self, zt_flops_profiler *p, int parent, int slots, double N,
                           const zt_block_config *cfg) {
  const moe_layer *m = self->state;
  const int C = cfg->C, E = m->E, k = m->k;
  zt_block_config ecfg = *cfg; /* an expert's MLP: all F columns, or this rank's share with expert tensor parallelism */
  ecfg.FFN = cfg->FFN * (zt_tp_on(cfg->tp) && !m->mc->expert_tp ? cfg->tp->size : 1);
  const double S = N;
  double cap = m->N == (int)S ? m->cap_group
                              : m->mc->drop_tokens ? zt_moe_capacity((int)S, E, k, m->mc->train_capacity_factor,
                                                                     m->mc->min_capacity)
                                                   : S;
  const double sec = S * E * cap;
  double gate = 2 * S * C * E + S * E; /* the router's F.linear and F.softmax */
  if (k == 1) gate += einsum_flops(sec, 0); /* top1gating: se,sc->sec */
  else if (k == 2)                          /* top2gating: se,se->s, s,se->se and se,sc->sec, twice each */
    gate += 2 * (einsum_flops(S * E, 1) + einsum_flops(S * E, 0) + einsum_flops(sec, 0));
  else gate += einsum_flops(sec, 0);        /* topkgating: se,sec->sec */
  if (!m->mc->drop_tokens) gate += 1;       /* new_capacity ... .mul(tp) on a 0-d tensor */
  char extra[96], path[256];
  const int moe = zt_fp_add(p, parent, "mlp", "MoE", slots + ZT_FT_MLP, 0, m->mc->residual ? 2 * S : 0);
  const int layer = zt_fp_add(p, moe, "deepspeed_moe", "MOELayer", slots + ZT_FT_MOE, 0, 2 * einsum_flops(sec * C, 1));
  const int g = zt_fp_add(p, layer, "gate", "TopKGate", slots + ZT_FT_GATE, S * C * E, gate);
  snprintf(extra, sizeof extra, "in_features=%d, out_features=%d, bias=False", C, E);
  zt_fp_set_extra(p, zt_fp_add(p, g, "wg", "Linear", -1, 0, 0), extra);
  const int ex = zt_fp_add(p, layer, "experts", "Experts", slots + ZT_FT_EXPERTS, 0, 0);
  const int list = zt_fp_add(p, ex, "deepspeed_experts", "ModuleList", -1, 0, 0);
  p->mods[list].is_list = true;
  for (int i = 0; i < m->El; i++) { /* local expert i is global expert r El + i of the parameter names */
    char nm[16];
    snprintf(nm, sizeof nm, "%d", i);
    const int e = zt_ffn_dense_flops(p, list, nm, -1, -1, -1, (double)m->P * cap, &ecfg);
    snprintf(path, sizeof path, "%s.%d", p->mods[list].path, m->r * m->El + i);
    zt_fp_set_path(p, e, path);
  }
  for (int e = 0; e < E; e++)
    if (e / m->El != m->r) {
      snprintf(path, sizeof path, "%s.%d", p->mods[list].path, e);
      zt_fp_exclude(p, path);
    }
  if (m->mc->residual) {
    zt_ffn_dense_flops(p, moe, "mlp", slots + ZT_FT_RMLP, slots + ZT_FT_FC1, slots + ZT_FT_FC2, S, &ecfg);
    const int coef = zt_fp_add_linear(p, moe, "coefficient", "Linear", slots + ZT_FT_COEF, S, C, 2);
    snprintf(extra, sizeof extra, "in_features=%d, out_features=2, bias=True", C);
    zt_fp_set_extra(p, coef, extra);
  }
}

zt_ffn zt_moe_make_ffn(const void *ctx, int layer) {
  const zt_moe_config *mc = ctx;
  const int E = zt_moe_experts(mc, layer);
  if (E <= 1) return zt_ffn_dense_mlp();
  moe_layer *m = zt_calloc(1, sizeof *m, "MoE layer");
  m->mc = mc, m->layer = layer, m->E = E, m->k = mc->topk;
  zt_check(m->k >= 1 && m->k <= E, "internal error", "MoE layer %d: top-%d of %d experts", layer, m->k, E);
  m->P = mc->ep_size > 1 ? mc->ep_size : 1, m->r = m->P > 1 ? mc->ep_rank : 0, m->El = E / m->P;
  zt_check(E % m->P == 0 && m->r >= 0 && m->r < m->P && (m->P == 1 || mc->ep_group), "internal error",
           "MoE layer %d: %d experts over expert-parallel rank %d of %d", layer, E, m->r, m->P);
  m->fc_w = zt_calloc((size_t)E, sizeof(void *), "MoE layer"), m->fc_b = zt_calloc((size_t)E, sizeof(void *), "MoE");
  m->proj_w = zt_calloc((size_t)E, sizeof(void *), "MoE"), m->proj_b = zt_calloc((size_t)E, sizeof(void *), "MoE");
  m->dfc_w = zt_calloc((size_t)E, sizeof(void *), "MoE"), m->dfc_b = zt_calloc((size_t)E, sizeof(void *), "MoE");
  m->dproj_w = zt_calloc((size_t)E, sizeof(void *), "MoE"), m->dproj_b = zt_calloc((size_t)E, sizeof(void *), "MoE");
  if (mc->residual) m->mlp = zt_ffn_dense_mlp();
  return (zt_ffn){.kind = "moe", .register_params = moe_register, .bind = moe_bind, .plan_acts = moe_plan_acts,
                  .scratch_bytes = moe_scratch_bytes, .forward = moe_forward, .backward = moe_backward,
                  .destroy = moe_destroy, .flops_tree = moe_flops_tree, .state = m};
}

const zt_moe_gating *zt_moe_last_gating(const zt_ffn *ffn) {
  if (!ffn->kind || strcmp(ffn->kind, "moe") != 0) return NULL;
  const moe_layer *m = ffn->state;
  return m->N ? &m->g : NULL;
}
