/* The layer stack (see stack.h): the layer loop with recompute, partitioned activations, virtual chunks, ZeRO-3
 * events and profiling. */
#include "models/transformer/stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/transformer/random_ltd.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/profile/trace.h"

/* Whether layer l (of the stack, or of a chunk) is recomputed: the first s->recompute of its chunk. */
static int recomputed(const zt_stack *s, int l) { return l % s->chunk_layers < s->recompute; }

static void layer_prefix(const zt_stack *s, char *buf, size_t n, int l) {
  snprintf(buf, n, "%s.layers.%d", s->prefix, l - s->name0);
}

void zt_stack_init(zt_stack *s, zt_model *m, const zt_block_config *cfg, const zt_layer_spec *spec,
                   const char *prefix, int total_layers, int vpp, const int *chunk_first, int chunk_layers, int unit0,
                   int recompute, int partition_activations, int B, int T, int Tk) {
  memset(s, 0, sizeof *s);
  s->model = m;
  s->cfg = cfg;
  s->spec = *spec;
  zt_check(strlen(prefix) < sizeof s->prefix, "internal error", "layer prefix %s is too long", prefix);
  snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
  s->total_layers = total_layers;
  s->vpp = vpp;
  s->chunk_layers = chunk_layers;
  s->nlayers = vpp * chunk_layers;
  s->unit0 = unit0;
  s->recompute = recompute;
  s->B = B, s->T = T, s->Tk = Tk;
  s->part_acts = partition_activations && recompute && zt_tp_on(cfg->tp) && !zt_tp_sp(cfg->tp) &&
                 m->pp_size <= 1 && chunk_layers > 1;
  s->blocks = zt_calloc((size_t)(s->nlayers ? s->nlayers : 1), sizeof(zt_block), "layer stack");
  s->ffns = zt_calloc((size_t)(s->nlayers ? s->nlayers : 1), sizeof(zt_ffn), "layer stack MLPs");
  for (int c = 0; c < vpp; c++)
    for (int i = 0; i < chunk_layers; i++) {
      zt_block *b = &s->blocks[c * chunk_layers + i];
      b->layer = chunk_first[c] + i; /* dropout sites and names by the global layer */
      b->spec = *spec;
    }
  for (int l = 0; l < s->nlayers; l++) {
    s->ffns[l] = zt_ffn_for_layer(cfg, spec->mlp, s->blocks[l].layer);
    s->blocks[l].ffn = s->ffns[l];
  }
  if (cfg->ltd_layers) {
    zt_check(!zt_tp_sp(cfg->tp), "internal error", "random-LTD with sequence parallelism");
    const size_t N = (size_t)B * T;
    s->h_gid = zt_malloc(N * sizeof(int32_t), "random-LTD ids");
    s->h_sid = zt_malloc(N * sizeof(int32_t), "random-LTD ids");
    s->h_perm = zt_malloc((size_t)T * sizeof(int32_t), "random-LTD ids");
    s->h_kept = zt_malloc((size_t)T * sizeof(int32_t), "random-LTD ids");
    s->h_pad = zt_malloc(2 * N, "random-LTD padding flags");
  }
}

void zt_stack_free(zt_stack *s) {
  for (int l = 0; l < s->nlayers; l++) zt_ffn_destroy(&s->ffns[l]);
  free(s->ffns);
  free(s->blocks);
  free(s->h_gid);
  free(s->h_sid);
  free(s->h_perm);
  free(s->h_kept);
  free(s->h_pad);
  memset(s, 0, sizeof *s);
}

void zt_stack_register(zt_stack *s, zt_param_table *t, int *first) {
  for (int i = 0; i < s->nlayers; i++) {
    char pre[128];
    layer_prefix(s, pre, sizeof pre, s->blocks[i].layer);
    if (first) first[i] = t->count;
    zt_block_register(t, pre, &s->spec, s->cfg, &s->ffns[i]);
  }
}

void zt_stack_bind(zt_stack *s, const zt_param_table *t, void *params, void *grads, size_t es) {
  for (int l = 0; l < s->nlayers; l++) {
    char pre[128];
    layer_prefix(s, pre, sizeof pre, s->blocks[l].layer);
    s->blocks[l].ffn = s->ffns[l]; /* the MLP's state was bound through ffns[l]: same pointer */
    zt_block_bind(&s->blocks[l], t, pre, params, grads, es);
  }
}

void zt_stack_plan(zt_stack *s, zt_memplan *p) {
  const zt_block_config *cfg = s->cfg;
  const int L = s->chunk_layers; /* one chunk's activations at a time */
  const size_t es = zt_dtype_size(s->model->dt), C = (size_t)cfg->C;
  const size_t N = (size_t)zt_tp_local_rows(cfg->tp, s->B * s->T), NC = N * C * es;
  if (s->part_acts) { /* layer 0's input and the output whole; the inputs in between as this rank's pieces */
    s->layer_in = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NC);
    s->layer_out = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NC);
    s->act_parts = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (size_t)(L - 1) * (NC / (size_t)cfg->tp->size));
    s->act_work = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, 2 * NC);
  } else {
    s->layer_in = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (size_t)(L + 1) * NC);
    s->layer_out = s->layer_in ? (char *)s->layer_in + (size_t)L * NC : NULL;
  }
  /* the recomputed layers' activations overlap one region, recomputed layer by layer; the kept layers' follow one
   * another from the same start (the recomputed layers come first in their chunk, run again after the kept ones'
   * backward); the chunks of a stage overlap too */
  size_t mark = zt_memplan_cursor(p, ZT_MEM_ACTIVATIONS), end = mark;
  for (int l = 0; l < s->nlayers; l++) {
    if (recomputed(s, l) || l % L == s->recompute || l % L == 0) zt_memplan_set_cursor(p, ZT_MEM_ACTIVATIONS, mark);
    zt_block_plan_acts(&s->blocks[l], p, cfg, s->B, s->T, s->Tk);
    size_t cur = zt_memplan_cursor(p, ZT_MEM_ACTIVATIONS);
    end = cur > end ? cur : end;
  }
  zt_memplan_set_cursor(p, ZT_MEM_ACTIVATIONS, end);
  s->recompute_out = s->recompute ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NC) : NULL;
  zt_block_plan_scratch(&s->scratch, p, &s->spec, cfg, s->ffns, s->nlayers, s->B, s->T, s->Tk);
  if (cfg->ltd_layers) {
    s->ltd_in = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NC);
    s->ltd_cat = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, 2 * NC);
    s->ltd_d = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NC);
    s->ltd_gid = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * sizeof(int32_t));
    s->ltd_sid = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * sizeof(int32_t));
    s->ltd_pad = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N);
  }
}

/* ---- random-LTD: the layer on the kept tokens (random_ltd.h) ----------------------------------------------------- */

static int ltd_layer(const zt_stack *s, const zt_block *b, const zt_pass *pass) {
  return s->cfg->ltd_layers && s->cfg->ltd_layers[b->layer] && zt_ltd_active(pass);
}

/* The layer's pass over the kept tokens: r of each row, attended causally among themselves (a decoder) or over the
 * kept tokens that are not padding (an encoder: the padding flags of the kept tokens, staged by ltd_ids). */
static zt_pass ltd_pass(const zt_stack *s, const zt_pass *pass) {
  zt_pass p = *pass;
  p.T = pass->ltd_keep;
  if (pass->key_padding) p.key_padding = s->ltd_pad;
  return p;
}

/* Draws the kept tokens of `layer` for the pass's rows and stages the ids: gid[b r + j] = b T + kept_b[j] (the rows
 * to gather), sid[i] = i for a dropped row and N + b r + j for the j-th kept row of row b (its source in ltd_cat,
 * whose first N rows hold the whole tensor and the next B r the layer's rows). */
static void ltd_ids(zt_stack *s, const zt_pass *pass, int layer) {
  const int B = pass->B, T = pass->T, r = pass->ltd_keep, N = B * T;
  for (int i = 0; i < N; i++) s->h_sid[i] = i;
  for (int b = 0; b < B; b++) {
    zt_ltd_draw(pass->seed, pass->ltd_step, pass->first_sample + (uint64_t)b, layer, T, r, s->h_perm, s->h_kept);
    for (int j = 0; j < r; j++) {
      s->h_gid[b * r + j] = b * T + s->h_kept[j];
      s->h_sid[b * T + s->h_kept[j]] = N + b * r + j;
    }
  }
  const zt_backend *be = s->model->be;
  be->from_host(s->ltd_gid, s->h_gid, (size_t)B * r * sizeof(int32_t));
  be->from_host(s->ltd_sid, s->h_sid, (size_t)N * sizeof(int32_t));
  if (pass->key_padding) { /* DeepSpeed's bert_sample_tokens: the mask follows the kept tokens */
    be->to_host(s->h_pad, pass->key_padding, (size_t)N);
    for (int b = 0; b < B; b++)
      for (int j = 0; j < r; j++) s->h_pad[N + b * r + j] = s->h_pad[s->h_gid[b * r + j]];
    be->from_host(s->ltd_pad, s->h_pad + N, (size_t)B * r);
  }
}

/* dst[N, C] = src with rows[n] of the n kept rows replaced: the whole of src into ltd_cat, the rows after it, one
 * gather back (exact copies). */
static void ltd_scatter(zt_stack *s, void *dst, const void *src, const void *rows, int N, int n) {
  const zt_backend *be = s->model->be;
  const zt_dtype dt = s->model->dt;
  const size_t row = (size_t)s->cfg->C * zt_dtype_size(dt);
  be->copy(s->ltd_cat, src, (size_t)N * row);
  be->copy((char *)s->ltd_cat + (size_t)N * row, rows, (size_t)n * row);
  be->embedding_forward(dt, dst, s->ltd_sid, s->ltd_cat, N, s->cfg->C, 0);
}

static float ltd_forward(zt_stack *s, zt_block *b, void *out, const void *x, const zt_cross_input *mem,
                         const zt_pass *pass) {
  const zt_backend *be = s->model->be;
  const zt_dtype dt = s->model->dt;
  const int N = pass->B * pass->T, n = pass->B * pass->ltd_keep;
  ltd_ids(s, pass, b->layer);
  be->embedding_forward(dt, s->ltd_in, s->ltd_gid, x, n, s->cfg->C, 0);
  const zt_pass p = ltd_pass(s, pass);
  const float aux = zt_block_forward(b, s->ltd_d, s->ltd_in, mem, s->cfg, &p, &s->scratch);
  ltd_scatter(s, out, x, s->ltd_d, N, n);
  return aux;
}

/* dres [N, C]: d(output) in, d(input) out; the dropped rows pass unchanged. */
static void ltd_backward(zt_stack *s, zt_block *b, void *dres, const void *x, const zt_cross_input *mem,
                         const zt_pass *pass, float aux_grad, int recompute) {
  const zt_backend *be = s->model->be;
  const zt_dtype dt = s->model->dt;
  const int N = pass->B * pass->T, n = pass->B * pass->ltd_keep;
  ltd_ids(s, pass, b->layer); /* the same draw as the forward's */
  be->embedding_forward(dt, s->ltd_in, s->ltd_gid, x, n, s->cfg->C, 0);
  const zt_pass p = ltd_pass(s, pass);
  if (recompute) zt_block_forward(b, s->recompute_out, s->ltd_in, mem, s->cfg, &p, &s->scratch);
  be->embedding_forward(dt, s->ltd_d, s->ltd_gid, dres, n, s->cfg->C, 0);
  zt_block_backward(b, s->ltd_d, s->ltd_in, mem, s->cfg, &p, &s->scratch, aux_grad);
  ltd_scatter(s, dres, dres, s->ltd_d, N, n);
}

/* Bytes of one layer's input at the planned B x T (the pass may be shorter: the legacy seqlen curriculum). */
static size_t planned_bytes(const zt_stack *s) {
  return (size_t)zt_tp_local_rows(s->cfg->tp, s->B * s->T) * (size_t)s->cfg->C * zt_dtype_size(s->model->dt);
}

/* --profile's span of one layer (runtime/profile/trace.h): "<prefix>.<layer> <what>" after the device drained. */
static void trace_layer(const zt_stack *s, const zt_block *b, const char *what, double t0) {
  if (s->model->be->synchronize) s->model->be->synchronize();
  char name[96];
  snprintf(name, sizeof name, "%s.layers.%d %s", s->prefix, b->layer - s->name0, what);
  zt_trace_span(name, t0, zt_now());
}

static int unit_of(const zt_stack *s, int l) { return s->unit0 + s->fwd_chunk * s->chunk_layers + l; }

float zt_stack_forward(zt_stack *s, int chunk, const zt_pass *pass, const zt_cross_input *mem) {
  zt_model *m = s->model;
  const zt_backend *be = m->be;
  zt_check(chunk >= 0 && chunk < s->vpp, "internal error", "layer stack: virtual chunk %d of %d", chunk, s->vpp);
  const int L = s->chunk_layers, NF = pass->B * pass->T, N = zt_tp_local_rows(s->cfg->tp, NF);
  const size_t NC = (size_t)N * s->cfg->C * zt_dtype_size(m->dt), piece = NC / (size_t)s->cfg->tp->size;
  /* the layers' slots are the planned B x T's, so that the last one is layer_out at any pass length */
  const size_t slot = planned_bytes(s), pslot = slot / (size_t)s->cfg->tp->size;
  zt_block *blocks = s->blocks + (size_t)chunk * L;
  s->fwd_chunk = chunk;
  const void *cur = s->layer_in;
  float aux = 0.0f;
  const int trace = zt_trace_active();
  for (int l = 0; l < L; l++) {
    const int profile = m->ckpt_profile && recomputed(s, l) && pass->training;
    const double tl = profile || trace ? zt_now() : 0.0;
    void *out = !s->part_acts ? (char *)s->layer_in + (size_t)(l + 1) * slot
                : l == L - 1  ? s->layer_out
                              : (char *)s->act_work + (size_t)(l & 1) * slot;
    zt_model_param_event(m, ZT_PARAM_FETCH, unit_of(s, l));
    aux += ltd_layer(s, &blocks[l], pass) ? ltd_forward(s, &blocks[l], out, cur, mem, pass)
                                          : zt_block_forward(&blocks[l], out, cur, mem, s->cfg, pass, &s->scratch);
    zt_model_param_event(m, ZT_PARAM_RELEASE, unit_of(s, l));
    if (s->part_acts && l + 1 < L) /* keep this rank's piece of the next layer's input */
      be->copy((char *)s->act_parts + (size_t)l * pslot, (char *)out + (size_t)s->cfg->tp->rank * piece, piece);
    cur = out;
    if (profile) m->ckpt_profile(m->ckpt_profile_ctx, "forward", 1e3 * (zt_now() - tl));
    if (trace) trace_layer(s, &blocks[l], "forward", tl);
  }
  return aux;
}

void zt_stack_backward(zt_stack *s, const zt_pass *pass, void *dres, const zt_cross_input *mem, float aux_grad) {
  zt_model *m = s->model;
  const int L = s->chunk_layers, NF = pass->B * pass->T, N = zt_tp_local_rows(s->cfg->tp, NF);
  const size_t es = zt_dtype_size(m->dt), NC = (size_t)N * s->cfg->C * es, piece = NC / (size_t)s->cfg->tp->size;
  const size_t slot = planned_bytes(s), pslot = slot / (size_t)s->cfg->tp->size;
  zt_block *blocks = s->blocks + (size_t)s->fwd_chunk * L;
  const int trace = zt_trace_active();
  for (int l = L - 1; l >= 0; l--) {
    const int rc = recomputed(s, l), profile = m->ckpt_profile && rc;
    const double tl = profile || trace ? zt_now() : 0.0;
    const void *x = (char *)s->layer_in + (size_t)l * slot;
    if (s->part_acts && l > 0) { /* gather the saved pieces of this layer's input */
      zt_allgather(s->cfg->tp->group, m->dt, (char *)s->act_parts + (size_t)(l - 1) * pslot, piece / es, s->act_work);
      x = s->act_work;
    }
    zt_model_param_event(m, ZT_PARAM_FETCH, unit_of(s, l));
    if (ltd_layer(s, &blocks[l], pass)) {
      ltd_backward(s, &blocks[l], dres, x, mem, pass, aux_grad, rc);
    } else {
      if (rc) zt_block_forward(&blocks[l], s->recompute_out, x, mem, s->cfg, pass, &s->scratch);
      zt_block_backward(&blocks[l], dres, x, mem, s->cfg, pass, &s->scratch, aux_grad);
    }
    zt_model_param_event(m, ZT_PARAM_RELEASE, unit_of(s, l));
    zt_model_param_event(m, ZT_PARAM_GRAD_READY, unit_of(s, l));
    if (profile) m->ckpt_profile(m->ckpt_profile_ctx, "backward", 1e3 * (zt_now() - tl));
    if (trace) trace_layer(s, &blocks[l], rc ? "recompute + backward" : "backward", tl);
  }
}

void zt_stack_profile(zt_stack *s, double *slots) {
  for (int l = 0; l < s->nlayers; l++) s->blocks[l].fwd_time = slots ? slots + (size_t)l * ZT_FT_SLOTS : NULL;
}
