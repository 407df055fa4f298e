/* GPT: model assembly from the shared transformer blocks, forward, backward, recompute. */
#include "models/gpt/gpt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/philox.h"
#include "runtime/parallel/parallel_state.h"
#include "runtime/optim/optimizer.h"
#include "runtime/base/timer.h"

#define EMB_PREFIX "language_model.embedding"
#define ENC_PREFIX "language_model.encoder"

static void layer_prefix(char *buf, size_t n, int l) { snprintf(buf, n, ENC_PREFIX ".layers.%d", l); }

static void register_head(zt_gpt *m, int V);

/* ZeRO-3 fetch units: the embedding (first stage), the layers, the head (last stage). */
static int unit_emb(const zt_gpt *m) { return m->first ? 0 : -1; }
static int unit_layer(const zt_gpt *m, int l) { return m->first + m->fwd_chunk * m->chunk_layers + l; }
static int unit_head(const zt_gpt *m) { return m->last ? m->first + m->nlayers : -1; }
static int head_uses_embedding(const zt_gpt *m) { return m->last && m->first && !m->cfg.untie_embeddings; }
static void param_event(zt_gpt *m, int event, int unit) {
  if (m->param_hook && unit >= 0) m->param_hook(m->param_hook_ctx, event, unit);
}
static void head_params(zt_gpt *m, int event) {
  param_event(m, event, unit_head(m));
  if (head_uses_embedding(m)) param_event(m, event, unit_emb(m));
}

static void register_params(zt_gpt *m) {
  const zt_gpt_config *c = &m->cfg;
  zt_param_table_init(&m->table);
  const int V = c->padded_vocab_size / m->tp.size; /* vocab-parallel rows of this rank */
  int *first = zt_malloc((size_t)(m->nlayers + 3) * sizeof(int), "gpt units"), u = 0; /* first parameter */
  if (m->first) {
    first[u++] = m->table.count;
    zt_embedding_register(&m->table, EMB_PREFIX, V, c->max_positions, c->hidden_size, c->init_std);
  }
  for (int i = 0; i < m->nlayers; i++) { /* this stage's layers under their global numbers */
    char pre[96];
    layer_prefix(pre, sizeof pre, m->blocks[i].layer);
    first[u++] = m->table.count;
    zt_block_register(&m->table, pre, &m->bcfg, &m->ffns[i]);
  }
  if (m->last) first[u++] = m->table.count;
  register_head(m, V);
  m->nunits = u;
  m->unit_off = zt_malloc((size_t)(u + 1) * sizeof(size_t), "gpt units");
  for (int k = 0; k < u; k++) m->unit_off[k] = m->table.params[first[k]].offset;
  m->unit_off[u] = m->table.numel;
  free(first);
}

static void register_head(zt_gpt *m, int V) {
  const zt_gpt_config *c = &m->cfg;
  if (!m->last) return;
  int64_t C[1] = {c->hidden_size};
  zt_param_table_add(&m->table, ENC_PREFIX ".final_layernorm.weight", 1, C, ZT_INIT_ONES, 0, 1, -1);
  zt_param_table_add(&m->table, ENC_PREFIX ".final_layernorm.bias", 1, C, ZT_INIT_ZEROS, 0, 1, -1);
  if (c->untie_embeddings) {
    int64_t w[2] = {V, c->hidden_size};
    zt_param_table_add(&m->table, "language_model.output_layer.weight", 2, w, ZT_INIT_NORMAL, c->init_std, 0, 0);
  } else if (m->first) {
    int i = zt_param_table_find(&m->table, EMB_PREFIX ".word_embeddings.weight");
    m->table.params[i].tied_group = 0; /* used by the embedding and the output layer */
  } else { /* Megatron's copy of the word embeddings on the last stage, kept equal through the embedding group */
    int64_t w[2] = {V, c->hidden_size};
    int i = zt_param_table_add(&m->table, "word_embeddings.weight", 2, w, ZT_INIT_NORMAL, c->init_std, 0, 0);
    m->table.params[i].tied_group = 0;
  }
}

/* The index a parameter has in the one-stage model's table (the key of its initial draws), by name; the last
 * stage's word_embeddings.weight copy draws what the embedding draws. */
static int full_model_index(const zt_gpt *m, const zt_param_table *full, const char *name) {
  const int i = zt_param_table_find(full, strcmp(name, "word_embeddings.weight") ? name
                                                : EMB_PREFIX ".word_embeddings.weight");
  zt_check(i >= 0, "internal error", "parameter %s is not in the full model (stage %d)", name, m->cfg.pp_rank);
  return i;
}

/* The layers' configuration: heads and MLP columns of one of tp ranks. */
static zt_block_config block_config(const zt_gpt_config *cfg, const zt_tp *tp) {
  const int C = cfg->hidden_size, NH = cfg->num_heads;
  return (zt_block_config){.C = C, .NH = NH / tp->size, .HD = C / NH, .FFN = cfg->ffn_hidden_size / tp->size,
                           .ln_eps = cfg->ln_eps, .attn_dropout = cfg->attn_dropout,
                           .hidden_dropout = cfg->hidden_dropout, .init_std = cfg->init_std,
                           .out_init_std = cfg->init_std / sqrtf(2.0f * cfg->num_layers), .self_mask = ZT_ATTN_CAUSAL,
                           .tp = tp};
}

/* The one-stage model's parameter table for `tp` tensor-parallel ranks (names, shapes and order). */
static void one_stage_table(const zt_gpt_config *c, const zt_block_config *bcfg, int tp, zt_param_table *full) {
  zt_param_table_init(full);
  zt_embedding_register(full, EMB_PREFIX, c->padded_vocab_size / tp, c->max_positions, c->hidden_size, c->init_std);
  zt_ffn mlp = zt_ffn_dense_mlp();
  for (int l = 0; l < c->num_layers; l++) {
    char pre[96];
    layer_prefix(pre, sizeof pre, l);
    zt_block_register(full, pre, bcfg, &mlp);
  }
  zt_ffn_destroy(&mlp);
  int64_t C[1] = {c->hidden_size}, w[2] = {c->padded_vocab_size / tp, c->hidden_size};
  zt_param_table_add(full, ENC_PREFIX ".final_layernorm.weight", 1, C, ZT_INIT_ONES, 0, 1, -1);
  zt_param_table_add(full, ENC_PREFIX ".final_layernorm.bias", 1, C, ZT_INIT_ZEROS, 0, 1, -1);
  if (c->untie_embeddings)
    zt_param_table_add(full, "language_model.output_layer.weight", 2, w, ZT_INIT_NORMAL, c->init_std, 0, 0);
  else
    full->params[zt_param_table_find(full, EMB_PREFIX ".word_embeddings.weight")].tied_group = 0;
}

static void full_model_table(const zt_gpt *m, zt_param_table *full) {
  one_stage_table(&m->cfg, &m->bcfg, m->tp.size, full);
}

void zt_gpt_single_table(const zt_gpt_config *cfg, zt_param_table *t) {
  const zt_tp one = {.size = 1};
  const zt_block_config bcfg = block_config(cfg, &one);
  one_stage_table(cfg, &bcfg, 1, t);
}

/* Megatron's divisibility rules for tensor parallelism, named by their flags. */
static void check_tensor_parallel(const zt_gpt_config *c, int tp) {
  zt_check(c->tp_size <= 1 || c->tp_group != NULL, "internal error", "gpt: tensor-parallel size %d without a group",
           c->tp_size);
  zt_check(c->num_heads % tp == 0, "inconsistent arguments", "--num-attention-heads %d is not divisible by "
           "--tensor-model-parallel-size %d (the heads are split over the tensor-parallel ranks)", c->num_heads, tp);
  zt_check(c->ffn_hidden_size % tp == 0, "inconsistent arguments", "--ffn-hidden-size %d is not divisible by "
           "--tensor-model-parallel-size %d (the MLP columns are split over the tensor-parallel ranks)",
           c->ffn_hidden_size, tp);
  zt_check(c->padded_vocab_size % tp == 0, "inconsistent arguments", "padded vocabulary size %d is not divisible "
           "by --tensor-model-parallel-size %d", c->padded_vocab_size, tp);
  zt_check(!(tp > 1 && c->sequence_parallel) || c->seq_length % tp == 0, "inconsistent arguments",
           "--seq-length %d is not divisible by --tensor-model-parallel-size %d (--sequence-parallel splits the "
           "sequence over the tensor-parallel ranks)", c->seq_length, tp);
}

/* With --sequence-parallel, the replicated parameters used on this rank's share of the tokens (layernorms,
 * row-parallel biases) get partial gradients; the position embeddings see the gathered gradient. */
static int sequence_parallel_grad(const zt_gpt *m, const zt_param *p) {
  return zt_tp_sp(&m->tp) && p->tp_split_dim < 0 && !strstr(p->name, "position_embeddings");
}

/* Sizing pass (plan not yet allocated: pointers come back NULL) and carving pass share this. */
static void plan_memory(zt_gpt *m) {
  zt_memplan *p = &m->plan;
  /* L: the layers of one chunk (all of the stage's without virtual chunks): one chunk runs at a time */
  const int B = m->cfg.micro_batch, T = m->cfg.seq_length, C = m->cfg.hidden_size, L = m->chunk_layers;
  /* N: the residual stream's tokens on this rank (all B*T, or B*T/tp with --sequence-parallel); NF: all */
  const size_t NF = (size_t)B * T, N = (size_t)zt_tp_local_rows(&m->tp, B * T);
  const size_t V = (size_t)m->cfg.padded_vocab_size / m->tp.size;
  /* ZeRO: flat buffers padded to whole partitions; optimizer state and masters for one partition */
  const size_t zp = m->cfg.zero_partitions > 1 ? (size_t)m->cfg.zero_partitions : 1;
  const size_t flat = (m->table.numel + zp - 1) / zp * zp, part = flat / zp;
  m->params = zt_memplan_floats(p, ZT_MEM_PARAMS, flat);
  m->grads = zt_memplan_floats(p, ZT_MEM_GRADS, flat);
  const int here = !m->cfg.optim_offloaded;
  m->optim_state = here ? zt_memplan_floats(p, ZT_MEM_OPTIM, 2 * part) : NULL;
  m->master = here && m->cfg.master_weights ? zt_memplan_floats(p, ZT_MEM_OPTIM, part) : NULL;
  m->part_acts = m->cfg.partition_activations && m->cfg.recompute_full && zt_tp_on(&m->tp) && !zt_tp_sp(&m->tp) &&
                 m->pp <= 1 && L > 1;
  if (m->part_acts) { /* layer 0's input and the output full; the inputs in between as this rank's chunks */
    m->layer_in = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, N * C);
    m->layer_out = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, N * C);
    m->act_parts = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, (size_t)(L - 1) * (N * C / (size_t)m->tp.size));
    m->act_work = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 2 * N * C);
  } else {
    m->layer_in = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, (size_t)(L + 1) * N * C);
    m->layer_out = m->layer_in ? m->layer_in + (size_t)L * N * C : NULL;
  }
  const size_t nbuf = m->cfg.pp_buffers > 0 ? (size_t)m->cfg.pp_buffers : 0;
  m->stash = nbuf ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, nbuf * N * C) : NULL;
  /* with full recompute every block's activations overlap one region, recomputed layer by layer; the chunks
   * of a stage overlap too */
  size_t mark = zt_memplan_cursor(p, ZT_MEM_ACTIVATIONS), end = mark;
  for (int l = 0; l < m->nlayers; l++) {
    if (m->cfg.recompute_full || l % L == 0) zt_memplan_set_cursor(p, ZT_MEM_ACTIVATIONS, mark);
    zt_block_plan_acts(&m->blocks[l], p, &m->bcfg, B, T);
    size_t cur = zt_memplan_cursor(p, ZT_MEM_ACTIVATIONS);
    end = cur > end ? cur : end;
  }
  zt_memplan_set_cursor(p, ZT_MEM_ACTIVATIONS, end);
  m->recompute_out = m->cfg.recompute_full ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, N * C) : NULL;
  const size_t head = m->last ? 1 : 0; /* the final layernorm, logits and loss live on the last stage */
  m->lnf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * N * C);
  m->lnf_mean = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * N);
  m->lnf_rstd = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * N);
  m->logits = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF * V);
  m->losses = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF);
  m->lse = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF);
  m->dloss = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF);
  m->dres = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, N * C);
  m->pos_scratch = (int32_t *)zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, NF);
  if (zt_tp_on(&m->tp)) m->ce_buf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 6 * NF);
  if (zt_tp_sp(&m->tp)) {
    m->tp.gather = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, NF * C);
    m->tp.partial = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, NF * C);
    m->sp_buf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, m->sp_numel);
  }
  zt_block_plan_scratch(&m->scratch, p, &m->bcfg, &m->ffns[0], B, T);
}

void zt_gpt_build(zt_gpt *m, const zt_gpt_config *cfg, size_t mem_limit) {
  memset(m, 0, sizeof(*m));
  m->cfg = *cfg;
  const int C = cfg->hidden_size, NH = cfg->num_heads, L = cfg->num_layers;
  zt_check(C % NH == 0, "gpt", "hidden size %d is not divisible by %d heads", C, NH);
  const int tp = cfg->tp_size > 1 ? cfg->tp_size : 1;
  check_tensor_parallel(cfg, tp);
  zt_check(!(cfg->partition_activations && tp > 1) || ((size_t)cfg->micro_batch * cfg->seq_length *
           cfg->hidden_size) % (size_t)tp == 0, "inconsistent arguments", "partition_activations: a layer input of "
           "%d x %d x %d floats does not split over %d tensor-parallel ranks", cfg->micro_batch, cfg->seq_length,
           cfg->hidden_size, tp);
  m->tp = (zt_tp){.group = tp > 1 ? cfg->tp_group : NULL, .size = tp, .rank = tp > 1 ? cfg->tp_rank : 0,
                  .sp = tp > 1 && cfg->sequence_parallel};
  m->bcfg = block_config(cfg, &m->tp);
  m->pp = cfg->pp_size > 1 ? cfg->pp_size : 1;
  m->vpp = cfg->vpp > 1 ? cfg->vpp : 1;
  const int pr = m->pp > 1 ? cfg->pp_rank : 0;
  zt_check(L % m->pp == 0, "inconsistent arguments", "--num-layers %d is not divisible by "
           "--pipeline-model-parallel-size %d", L, m->pp);
  zt_check(m->pp == 1 || cfg->pp_group != NULL, "internal error", "gpt: pipeline size %d without a group", m->pp);
  const zt_layout stages = {.pp = m->pp, .vpp = m->vpp}; /* only the stage and chunk sizes are read */
  m->chunk_layers = L / (m->pp * m->vpp);
  m->nlayers = m->chunk_layers * m->vpp;
  m->first = pr == 0;
  m->last = pr == m->pp - 1;
  m->blocks = zt_calloc((size_t)m->nlayers, sizeof(zt_block), "gpt blocks");
  m->ffns = zt_calloc((size_t)m->nlayers, sizeof(zt_ffn), "gpt mlps");
  for (int c = 0; c < m->vpp; c++) {
    int l0, n;
    zt_layout_stage_layers(&stages, L, pr, c, &l0, &n);
    for (int i = 0; i < n; i++) m->blocks[c * n + i].layer = l0 + i; /* dropout sites by the global layer */
  }
  for (int l = 0; l < m->nlayers; l++) {
    m->ffns[l] = zt_ffn_dense_mlp();
    m->blocks[l].ffn = m->ffns[l];
  }
  register_params(m);
  for (int i = 0; i < m->table.count; i++)
    if (sequence_parallel_grad(m, &m->table.params[i])) m->sp_numel += m->table.params[i].numel;
  m->B = cfg->micro_batch;
  m->T = cfg->seq_length;
  plan_memory(m);                  /* sizing */
  zt_memplan_print(&m->plan);
  zt_memplan_check_fits(&m->plan, mem_limit);
  zt_memplan_allocate(&m->plan);
  plan_memory(m);                  /* carving */
  for (int l = 0; l < m->nlayers; l++) {
    char pre[96];
    layer_prefix(pre, sizeof pre, m->blocks[l].layer);
    zt_block_bind(&m->blocks[l], &m->table, pre, m->params, m->grads);
  }
  if (m->first) zt_embedding_bind(&m->emb, &m->table, EMB_PREFIX, m->params, m->grads);
  m->emb.tp = &m->tp;
  m->emb.v0 = m->tp.rank * (cfg->padded_vocab_size / tp);
  if (!m->last) return;
  m->lnf_w = zt_param_ptr(&m->table, m->params, ENC_PREFIX, "final_layernorm.weight");
  m->lnf_b = zt_param_ptr(&m->table, m->params, ENC_PREFIX, "final_layernorm.bias");
  m->dlnf_w = zt_param_ptr(&m->table, m->grads, ENC_PREFIX, "final_layernorm.weight");
  m->dlnf_b = zt_param_ptr(&m->table, m->grads, ENC_PREFIX, "final_layernorm.bias");
  if (cfg->untie_embeddings) {
    m->out_w = zt_param_ptr(&m->table, m->params, "language_model", "output_layer.weight");
    m->dout_w = zt_param_ptr(&m->table, m->grads, "language_model", "output_layer.weight");
  } else if (m->first) {
    m->out_w = m->emb.wte;
    m->dout_w = m->emb.dwte;
  } else {
    const zt_param *w = zt_param_get(&m->table, "word_embeddings", "weight");
    m->out_w = m->params + w->offset;
    m->dout_w = m->grads + w->offset;
  }
}

void zt_gpt_free(zt_gpt *m) {
  free(m->unit_off);
  for (int l = 0; l < m->nlayers; l++) zt_ffn_destroy(&m->ffns[l]);
  free(m->ffns);
  free(m->blocks);
  zt_param_table_free(&m->table);
  zt_memplan_free(&m->plan);
}

/* With tensor parallelism each rank draws its slice of the matrix one process draws: the normal draws are
 * keyed by (seed, parameter index, element of the full matrix), and the parameter indices do not depend on
 * the layout. Split dim 0 (column-parallel rows, vocab rows) is one contiguous range of the full matrix; split
 * dim 1 (row-parallel columns) a range per row. */
void zt_gpt_init_params(zt_gpt *m, uint64_t seed) {
  memset(m->params, 0, m->table.numel * sizeof(float)); /* alignment padding stays zero */
  zt_gpt_init_params_range(m, seed, 0, m->table.numel);
}

void zt_gpt_init_params_range(zt_gpt *m, uint64_t seed, size_t lo, size_t hi) {
  zt_param_table_initialize_range(&m->table, m->params, seed, lo, hi);
  if (!zt_tp_on(&m->tp) && m->pp == 1) return;
  const int tp = m->tp.size, r = m->tp.rank;
  zt_param_table full; /* with pipeline stages: draws keyed by the one-stage model's parameter indices */
  if (m->pp > 1) full_model_table(m, &full);
  for (int k = 0; k < m->table.count; k++) {
    const zt_param *p = &m->table.params[k];
    if (p->init != ZT_INIT_NORMAL || p->offset < lo || p->offset >= hi) continue;
    const uint64_t i = m->pp > 1 ? (uint64_t)full_model_index(m, &full, p->name) : (uint64_t)k;
    float *dst = m->params + p->offset;
    if (p->tp_split_dim < 0 || tp == 1) {
      zt_philox_normal_fill(dst, p->numel, 0, 0.0f, p->init_std, seed, ZT_RNG_INIT, i);
    } else if (p->tp_split_dim == 0) {
      zt_philox_normal_fill(dst, p->numel, (uint64_t)r * p->numel, 0.0f, p->init_std, seed, ZT_RNG_INIT, i);
    } else {
      zt_check(p->ndim == 2 && p->tp_split_dim == 1, "internal error", "parameter %s: split dimension %d of %d",
               p->name, p->tp_split_dim, p->ndim);
      const uint64_t cols = (uint64_t)p->shape[1], fullc = cols * (uint64_t)tp;
      for (int64_t row = 0; row < p->shape[0]; row++)
        zt_philox_normal_fill(dst + (size_t)row * cols, cols, (uint64_t)row * fullc + (uint64_t)r * cols, 0.0f,
                              p->init_std, seed, ZT_RNG_INIT, i);
    }
  }
  if (m->pp > 1) zt_param_table_free(&full);
}

void zt_gpt_sync_sequence_parallel_grads(zt_gpt *m) { zt_gpt_sync_sequence_parallel_range(m, 0, m->table.numel); }

void zt_gpt_sync_sequence_parallel_range(zt_gpt *m, size_t lo, size_t hi) {
  if (!zt_tp_sp(&m->tp) || m->sp_numel == 0) return;
  size_t k = 0;
  for (int i = 0; i < m->table.count; i++) {
    const zt_param *p = &m->table.params[i];
    if (!sequence_parallel_grad(m, p) || p->offset < lo || p->offset >= hi) continue;
    memcpy(m->sp_buf + k, m->grads + p->offset, p->numel * sizeof(float));
    k += p->numel;
  }
  if (k == 0) return;
  zt_allreduce_sum_f32(m->tp.group, m->sp_buf, k);
  k = 0;
  for (int i = 0; i < m->table.count; i++) {
    const zt_param *p = &m->table.params[i];
    if (!sequence_parallel_grad(m, p) || p->offset < lo || p->offset >= hi) continue;
    memcpy(m->grads + p->offset, m->sp_buf + k, p->numel * sizeof(float));
    k += p->numel;
  }
}

double zt_gpt_grad_norm(const zt_gpt *m, const float *grads) {
  if (!zt_tp_on(&m->tp) && m->pp == 1) return zt_grad_global_norm(grads, m->table.numel);
  double split = 0.0, replicated = 0.0;
  for (int i = 0; i < m->table.count; i++) {
    const zt_param *p = &m->table.params[i];
    if (!strcmp(p->name, "word_embeddings.weight")) continue; /* the last stage's copy: counted on the first */
    const double n = zt_grad_global_norm(grads + p->offset, p->numel);
    if (p->tp_split_dim >= 0) split += n * n;
    else replicated += n * n;
  }
  if (zt_tp_on(&m->tp)) zt_allreduce_sum_f64(m->tp.group, &split, 1);
  double total = split + replicated;
  if (m->pp > 1) zt_allreduce_sum_f64(m->cfg.pp_group, &total, 1); /* over the stages */
  return sqrt(total);
}

float *zt_gpt_stage_input(zt_gpt *m) { return m->layer_in; }
float *zt_gpt_stage_output(zt_gpt *m) {
  return m->layer_out;
}
float *zt_gpt_stage_grad(zt_gpt *m) { return m->dres; }
size_t zt_gpt_stage_numel(const zt_gpt *m) {
  return (size_t)zt_tp_local_rows(&m->tp, m->B * m->T) * m->cfg.hidden_size;
}
float *zt_gpt_stash(zt_gpt *m, int slot) {
  if (!m->stash) return NULL;
  zt_check(slot >= 0 && slot < m->cfg.pp_buffers, "internal error", "pipeline buffer %d of %d", slot,
           m->cfg.pp_buffers);
  return m->stash + (size_t)slot * zt_gpt_stage_numel(m);
}
float *zt_gpt_shared_embedding_grad(zt_gpt *m, size_t *n) {
  if (m->pp == 1 || m->cfg.untie_embeddings || !(m->first || m->last)) return NULL;
  const zt_param *w = m->first ? zt_param_get(&m->table, EMB_PREFIX, "word_embeddings.weight")
                               : zt_param_get(&m->table, "word_embeddings", "weight");
  *n = w->numel;
  return m->grads + w->offset;
}

size_t zt_gpt_num_params(const zt_gpt *m) {
  size_t n = 0;
  for (int i = 0; i < m->table.count; i++) n += m->table.params[i].numel;
  return n;
}

/* Megatron's _VocabParallelCrossEntropy over logits [NF, V] (this rank's vocabulary columns): the row maxima,
 * then the sums of exponentials and the target logits, all-reduced over the tensor-parallel group; the full
 * logits are never gathered. */
static void vocab_parallel_cross_entropy(zt_gpt *m, const int32_t *targets, int NF, int V) {
  float *rowmax = m->ce_buf, *sums = m->ce_buf + NF; /* sums: [sumexp NF | target logit NF] */
  double *dmax = (double *)(m->ce_buf + 4 * (size_t)NF);
  zt_cross_entropy_vp_max(rowmax, m->logits, NF, V);
  for (int n = 0; n < NF; n++) dmax[n] = rowmax[n];
  zt_allreduce_max_f64(m->tp.group, dmax, (size_t)NF);
  for (int n = 0; n < NF; n++) rowmax[n] = (float)dmax[n];
  zt_cross_entropy_vp_sums(sums, sums + NF, m->logits, rowmax, targets, NF, V, m->emb.v0);
  zt_allreduce_sum_f32(m->tp.group, sums, 2 * (size_t)NF);
  for (int n = 0; n < NF; n++) {
    m->lse[n] = rowmax[n] + logf(sums[n]);
    m->losses[n] = m->lse[n] - sums[NF + n];
  }
}

float zt_gpt_forward(zt_gpt *m, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                     const float *loss_mask, const zt_pass *pass) {
  return zt_gpt_forward_chunk(m, 0, tokens, positions, targets, loss_mask, pass);
}

float zt_gpt_forward_chunk(zt_gpt *m, int vchunk, const int32_t *tokens, const int32_t *positions,
                           const int32_t *targets, const float *loss_mask, const zt_pass *pass) {
  zt_check(pass->B == m->B && pass->T == m->T, "gpt", "batch %dx%d differs from the planned %dx%d",
           pass->B, pass->T, m->B, m->T);
  zt_check(vchunk >= 0 && vchunk < m->vpp, "internal error", "gpt: virtual chunk %d of %d", vchunk, m->vpp);
  const int L = m->chunk_layers, C = m->cfg.hidden_size, V = m->cfg.padded_vocab_size / m->tp.size;
  zt_block *blocks = m->blocks + (size_t)vchunk * L;
  const int NF = pass->B * pass->T, N = zt_tp_local_rows(&m->tp, NF); /* N: the residual stream's tokens */
  const size_t NC = (size_t)N * C;
  m->pass = *pass;
  m->tokens = tokens;
  m->positions = positions;
  m->targets = targets;
  m->loss_mask = loss_mask;
  m->fwd_chunk = vchunk;
  double *ft = m->fwd_time, t0 = ft ? zt_now() : 0.0, t1 = t0, t2 = 0.0;
  if (m->first && vchunk == 0) { /* later stages (and chunks) find their input in layer_in[0] */
    param_event(m, ZT_GPT_FETCH, unit_emb(m));
    zt_embedding_layer_forward(&m->emb, m->layer_in, tokens, positions, m->cfg.hidden_dropout, pass,
                               m->pos_scratch);
    param_event(m, ZT_GPT_RELEASE, unit_emb(m));
  }
  if (ft) ft[ZT_GPT_FT_EMB] += (t2 = zt_now()) - t1, t1 = t2;
  const int profile = m->ckpt_profile && m->cfg.recompute_full && pass->training;
  const size_t chunk = NC / (size_t)m->tp.size;
  const float *cur = m->layer_in;
  for (int l = 0; l < L; l++) {
    const double tl = profile ? zt_now() : 0.0;
    float *out = !m->part_acts ? m->layer_in + (size_t)(l + 1) * NC : l == L - 1 ? m->layer_out
                                                                      : m->act_work + (size_t)(l & 1) * NC;
    param_event(m, ZT_GPT_FETCH, unit_layer(m, l));
    zt_block_forward(&blocks[l], out, cur, &m->bcfg, pass, &m->scratch);
    param_event(m, ZT_GPT_RELEASE, unit_layer(m, l));
    if (m->part_acts && l + 1 < L) /* keep this rank's chunk of the next layer's input */
      memcpy(m->act_parts + (size_t)l * chunk, out + (size_t)m->tp.rank * chunk, chunk * sizeof(float));
    cur = out;
    if (profile) m->ckpt_profile(m->ckpt_profile_ctx, "forward", 1e3 * (zt_now() - tl));
  }
  if (!m->last || vchunk != m->vpp - 1) return 0.0f; /* the output goes to the next stage */
  if (ft) t2 = zt_now();
  head_params(m, ZT_GPT_FETCH);
  zt_layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, m->layer_out, m->lnf_w, m->lnf_b, N, C, m->cfg.ln_eps);
  if (ft) {
    double t3 = zt_now();
    ft[ZT_GPT_FT_FINAL_LN] += t3 - t2;
    ft[ZT_GPT_FT_ENCODER] += t3 - t1;
    ft[ZT_GPT_FT_LM] += t3 - t0;
    t1 = t3;
  }
  /* the output layer is column-parallel over the vocabulary: every rank scores all tokens on its slice */
  zt_matmul_forward(m->logits, zt_tp_gather(&m->tp, m->lnf, N, C), m->out_w, NULL, NF, C, V);
  if (zt_tp_on(&m->tp)) vocab_parallel_cross_entropy(m, targets, NF, V);
  else zt_cross_entropy_forward(m->losses, m->lse, m->logits, targets, N, V);
  head_params(m, ZT_GPT_RELEASE);
  if (ft) ft[ZT_GPT_FT_LOGITS] += (t2 = zt_now()) - t1;
  double num = 0.0, den = 0.0;
  for (int n = 0; n < NF; n++) {
    double w = loss_mask ? loss_mask[n] : 1.0;
    num += w * m->losses[n];
    den += w;
  }
  if (ft) ft[ZT_GPT_FT_MODEL] += zt_now() - t0;
  return den > 0 ? (float)(num / den) : 0.0f;
}

static void head_backward(zt_gpt *m, float grad_scale, int NF, int N, int C, int V);

void zt_gpt_backward(zt_gpt *m, float grad_scale) {
  const zt_pass *pass = &m->pass;
  const int L = m->chunk_layers, C = m->cfg.hidden_size, V = m->cfg.padded_vocab_size / m->tp.size;
  const int NF = pass->B * pass->T, N = zt_tp_local_rows(&m->tp, NF);
  const size_t NC = (size_t)N * C;
  zt_block *blocks = m->blocks + (size_t)m->fwd_chunk * L;
  if (m->last && m->fwd_chunk == m->vpp - 1) { /* else dres holds d(output) from the next stage */
    head_params(m, ZT_GPT_FETCH);
    head_backward(m, grad_scale, NF, N, C, V);
    head_params(m, ZT_GPT_RELEASE);
    param_event(m, ZT_GPT_GRAD_READY, unit_head(m));
  }
  const int profile = m->ckpt_profile && m->cfg.recompute_full;
  const size_t chunk = NC / (size_t)m->tp.size;
  for (int l = L - 1; l >= 0; l--) {
    const double tl = profile ? zt_now() : 0.0;
    const float *x = m->layer_in + (size_t)l * NC;
    if (m->part_acts && l > 0) { /* gather the saved chunks of this layer's input */
      zt_allgather_f32(m->tp.group, m->act_parts + (size_t)(l - 1) * chunk, chunk, m->act_work);
      x = m->act_work;
    }
    param_event(m, ZT_GPT_FETCH, unit_layer(m, l));
    if (m->cfg.recompute_full) zt_block_forward(&blocks[l], m->recompute_out, x, &m->bcfg, pass, &m->scratch);
    zt_block_backward(&blocks[l], m->dres, x, &m->bcfg, pass, &m->scratch);
    param_event(m, ZT_GPT_RELEASE, unit_layer(m, l));
    param_event(m, ZT_GPT_GRAD_READY, unit_layer(m, l));
    if (profile) m->ckpt_profile(m->ckpt_profile_ctx, "backward", 1e3 * (zt_now() - tl));
  }
  if (m->first && m->fwd_chunk == 0) { /* reads no parameters */
    zt_embedding_layer_backward(&m->emb, m->dres, m->tokens, m->positions, m->cfg.hidden_dropout, pass,
                                m->pos_scratch);
    param_event(m, ZT_GPT_GRAD_READY, unit_emb(m));
  }
}

/* The last stage's loss, output layer and final layernorm backward: dres = d(final hidden state). */
static void head_backward(zt_gpt *m, float grad_scale, int NF, int N, int C, int V) {
  double den = 0.0;
  for (int n = 0; n < NF; n++) den += m->loss_mask ? m->loss_mask[n] : 1.0;
  for (int n = 0; n < NF; n++)
    m->dloss[n] = den > 0 ? (float)((m->loss_mask ? m->loss_mask[n] : 1.0) * grad_scale / den) : 0.0f;
  if (!zt_tp_on(&m->tp)) {
    zt_cross_entropy_backward(m->logits, m->logits, m->lse, m->targets, m->dloss, N, V);
    zt_matmul_backward(m->scratch.dln, m->dout_w, NULL, m->logits, m->lnf, m->out_w, N, C, V);
  } else { /* the input gradient of the column-parallel output layer is partial over the vocabulary slices */
    zt_cross_entropy_vp_backward(m->logits, m->logits, m->lse, m->targets, m->dloss, NF, V, m->emb.v0);
    zt_matmul_backward(zt_tp_partial_buffer(&m->tp, m->scratch.dln), m->dout_w, NULL, m->logits,
                       zt_tp_gather(&m->tp, m->lnf, N, C), m->out_w, NF, C, V);
    zt_tp_reduce(&m->tp, m->scratch.dln, NULL, N, C);
  }
  zt_layernorm_backward(m->dres, m->dlnf_w, m->dlnf_b, m->scratch.dln, m->layer_out, m->lnf_w,
                        m->lnf_mean, m->lnf_rstd, N, C);
}
