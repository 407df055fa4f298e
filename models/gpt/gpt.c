/* GPT: model assembly from the shared transformer layers, the embedding and the language-model head, its memory
 * plan on the backend, initialization, forward and backward. */
#include "models/gpt/gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/philox.h"
#include "runtime/base/timer.h"
#include "runtime/parallel/parallel_state.h"

#define EMB_PREFIX "language_model.embedding"
#define ENC_PREFIX "language_model.encoder"

static const zt_model_ops k_gpt_ops;

/* ZeRO-3 fetch units: the embedding (first stage), the layers, the head (last stage). */
static int unit_emb(const zt_gpt *m) { return m->first ? 0 : -1; }
static int unit_head(const zt_gpt *m) { return m->last ? m->first + m->nlayers : -1; }
static int head_uses_embedding(const zt_gpt *m) { return m->last && m->first && !m->cfg.untie_embeddings; }
static void head_params(zt_gpt *m, int event) {
  zt_model_param_event(&m->model, event, unit_head(m));
  if (head_uses_embedding(m)) zt_model_param_event(&m->model, event, unit_emb(m));
}

static void register_head(zt_param_table *t, const zt_gpt_config *c, int V, int first, int last) {
  if (!last) return;
  int64_t C[1] = {c->hidden_size};
  zt_param_table_add(t, ENC_PREFIX ".final_layernorm.weight", 1, C, ZT_INIT_ONES, 0, 1, -1);
  zt_param_table_add(t, ENC_PREFIX ".final_layernorm.bias", 1, C, ZT_INIT_ZEROS, 0, 1, -1);
  if (c->untie_embeddings) {
    int64_t w[2] = {V, c->hidden_size};
    zt_param_table_add(t, "language_model.output_layer.weight", 2, w, ZT_INIT_NORMAL, c->init_std, 0, 0);
  } else if (first) {
    t->params[zt_param_table_find(t, EMB_PREFIX ".word_embeddings.weight")].tied_group = 0; /* embedding + head */
  } else { /* Megatron's copy of the word embeddings on the last stage, kept equal through the embedding group */
    zt_embedding_register_copy(t, V, c->hidden_size, c->init_std);
  }
}

static void register_params(zt_gpt *m) {
  const zt_gpt_config *c = &m->cfg;
  zt_param_table_init(&m->table);
  const int V = c->padded_vocab_size / m->tp.size; /* vocab-parallel rows of this rank */
  int *first = zt_malloc((size_t)(m->nlayers + 3) * sizeof(int), "gpt units"), u = 0; /* first parameter */
  if (m->first) {
    first[u++] = m->table.count;
    zt_embedding_register(&m->table, EMB_PREFIX, V, c->max_positions, c->hidden_size, c->init_std, 0);
  }
  zt_stack_register(&m->stack, &m->table, first + u);
  u += m->nlayers;
  if (m->last) first[u++] = m->table.count;
  register_head(&m->table, c, V, m->first, m->last);
  m->model.nunits = u;
  m->model.unit_off = zt_malloc((size_t)(u + 1) * sizeof(size_t), "gpt units");
  for (int k = 0; k < u; k++) m->model.unit_off[k] = m->table.params[first[k]].offset;
  m->model.unit_off[u] = m->table.numel;
  free(first);
}

/* The layers' configuration: heads and MLP columns of one of tp ranks. */
static zt_block_config block_config(const zt_gpt_config *cfg, const zt_tp *tp) {
  const int C = cfg->hidden_size, NH = cfg->num_heads;
  return (zt_block_config){.C = C, .NH = NH / tp->size, .HD = C / NH, .FFN = cfg->ffn_hidden_size / tp->size,
                           .ln_eps = cfg->ln_eps, .attn_dropout = cfg->attn_dropout,
                           .hidden_dropout = cfg->hidden_dropout, .init_std = cfg->init_std,
                           .out_init_std = cfg->init_std / sqrtf(2.0f * cfg->num_layers), .tp = tp};
}

static const zt_layer_spec k_gpt_layer = {.self_mask = ZT_ATTN_CAUSAL, .cross_attention = 0, .mlp = ZT_MLP_DENSE};

/* The one-stage model's parameter table for `tp` tensor-parallel ranks (names, shapes and order). */
static void one_stage_table(const zt_gpt_config *c, int tp, zt_param_table *full) {
  const zt_tp one = {.size = tp};
  const zt_block_config bcfg = block_config(c, &one);
  zt_param_table_init(full);
  zt_embedding_register(full, EMB_PREFIX, c->padded_vocab_size / tp, c->max_positions, c->hidden_size, c->init_std,
                        0);
  zt_ffn mlp = zt_ffn_make(k_gpt_layer.mlp);
  for (int l = 0; l < c->num_layers; l++) {
    char pre[96];
    snprintf(pre, sizeof pre, ENC_PREFIX ".layers.%d", l);
    zt_block_register(full, pre, &k_gpt_layer, &bcfg, &mlp);
  }
  zt_ffn_destroy(&mlp);
  register_head(full, c, c->padded_vocab_size / tp, 1, 1);
}

void zt_gpt_single_table(const zt_gpt_config *cfg, zt_param_table *t) { one_stage_table(cfg, 1, t); }

void zt_gpt_count_params(const zt_gpt_config *cfg, int64_t *total, int64_t *largest) {
  zt_param_table t;
  zt_gpt_single_table(cfg, &t);
  *total = *largest = 0;
  for (int i = 0; i < t.count; i++) {
    *total += (int64_t)t.params[i].numel;
    /* DeepSpeed's largest layer: the most parameters one module owns directly (its weight and bias) */
    const char *dot = strrchr(t.params[i].name, '.');
    const size_t len = dot ? (size_t)(dot - t.params[i].name) : strlen(t.params[i].name);
    int64_t own = 0;
    for (int j = 0; j < t.count; j++) {
      const char *dj = strrchr(t.params[j].name, '.');
      const size_t lj = dj ? (size_t)(dj - t.params[j].name) : strlen(t.params[j].name);
      if (lj == len && !strncmp(t.params[j].name, t.params[i].name, len)) own += (int64_t)t.params[j].numel;
    }
    if (own > *largest) *largest = own;
  }
  zt_param_table_free(&t);
}

/* Megatron's divisibility rules for tensor parallelism, named by their flags. */
static void check_config(const zt_gpt_config *c, int tp) {
  zt_check(c->hidden_size % c->num_heads == 0, "gpt", "hidden size %d is not divisible by %d heads", c->hidden_size,
           c->num_heads);
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
  zt_check(!(c->partition_activations && tp > 1) || ((size_t)c->micro_batch * c->seq_length *
           c->hidden_size) % (size_t)tp == 0, "inconsistent arguments", "partition_activations: a layer input of "
           "%d x %d x %d elements does not split over %d tensor-parallel ranks", c->micro_batch, c->seq_length,
           c->hidden_size, tp);
  const int pp = c->pp_size > 1 ? c->pp_size : 1;
  zt_check(c->num_layers % pp == 0, "inconsistent arguments", "--num-layers %d is not divisible by "
           "--pipeline-model-parallel-size %d", c->num_layers, pp);
  zt_check(pp == 1 || c->pp_group != NULL, "internal error", "gpt: pipeline size %d without a group", pp);
  const zt_backend *be = c->backend ? c->backend : zt_backend_cpu();
  zt_check(be->kind != ZT_BACKEND_CPU || c->dtype == ZT_DTYPE_FP32, "internal error", "gpt: the CPU backend stores "
           "fp32, asked for %s", zt_dtype_name(c->dtype));
}

/* Sizing pass (plan not yet allocated: pointers come back NULL) and carving pass share this. */
static void plan_memory(zt_gpt *m) {
  zt_memplan *p = &m->plan;
  zt_model *mm = &m->model;
  const zt_backend *be = mm->be;
  const zt_dtype dt = mm->dt;
  const size_t es = zt_dtype_size(dt);
  const int B = m->cfg.micro_batch, T = m->cfg.seq_length, C = m->cfg.hidden_size;
  /* N: the residual stream's tokens on this rank (all B*T, or B*T/tp with --sequence-parallel); NF: all */
  const size_t NF = (size_t)B * T, N = (size_t)zt_tp_local_rows(&m->tp, B * T);
  const size_t V = (size_t)m->cfg.padded_vocab_size / m->tp.size;
  /* ZeRO: flat buffers padded to whole partitions; optimizer state and masters for one partition */
  const size_t zp = m->cfg.zero_partitions > 1 ? (size_t)m->cfg.zero_partitions : 1;
  const size_t flat = (m->table.numel + zp - 1) / zp * zp, part = flat / zp;
  const int train = !m->cfg.forward_only;
  mm->flat = flat;
  mm->params = zt_memplan_bytes(p, ZT_MEM_PARAMS, flat * es);
  mm->grads = train ? zt_memplan_floats(p, ZT_MEM_GRADS, flat) : NULL;
  mm->grads_dt = train && dt != ZT_DTYPE_FP32 ? zt_memplan_bytes(p, ZT_MEM_GRADS, flat * es) : NULL;
  const int here = train && !m->cfg.optim_offloaded;
  mm->optim_state = here ? zt_memplan_floats(p, ZT_MEM_OPTIM, 2 * part) : NULL;
  mm->master = here && m->cfg.master_weights ? zt_memplan_floats(p, ZT_MEM_OPTIM, part) : NULL;
  zt_stack_plan(&m->stack, p);
  mm->stage_bytes = N * C * es;
  mm->stash = mm->pp_buffers > 0 ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (size_t)mm->pp_buffers * mm->stage_bytes)
                                 : NULL;
  const size_t head = m->last ? 1 : 0; /* the final layernorm, logits and loss live on the last stage */
  m->lnf = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, head * N * C * es);
  m->lnf_mean = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * N);
  m->lnf_rstd = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * N);
  m->logits = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, head * NF * V * es);
  m->losses = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF);
  m->lse = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF);
  m->dloss = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NF);
  m->dres = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es);
  m->pos_buf = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
  if (!be->host_visible) { /* the ids and masks of the batch, staged onto the device */
    m->tokens_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
    m->targets_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
    m->key_start_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
    m->padding_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF);
  }
  if (zt_tp_on(&m->tp)) m->ce_buf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 3 * NF);
  if (zt_tp_sp(&m->tp)) {
    m->tp.gather = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * C * es);
    m->tp.partial = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * C * es);
    mm->sp_buf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, mm->sp_numel);
  }
}

/* Everything but the memory: layout, layers, parameter table (build and the sizing of other micro batches). */
static void setup(zt_gpt *m, const zt_gpt_config *cfg) {
  memset(m, 0, sizeof(*m));
  m->cfg = *cfg;
  const int tp = cfg->tp_size > 1 ? cfg->tp_size : 1;
  check_config(cfg, tp);
  const zt_backend *be = cfg->backend ? cfg->backend : zt_backend_cpu();
  m->plan.alloc = be->host_visible ? NULL : be->alloc;
  m->plan.release = be->host_visible ? NULL : be->release;
  m->tp = (zt_tp){.group = tp > 1 ? cfg->tp_group : NULL, .size = tp, .rank = tp > 1 ? cfg->tp_rank : 0,
                  .sp = tp > 1 && cfg->sequence_parallel, .be = be, .dt = cfg->dtype};
  m->bcfg = block_config(cfg, &m->tp);
  m->pp = cfg->pp_size > 1 ? cfg->pp_size : 1;
  m->vpp = cfg->vpp > 1 ? cfg->vpp : 1;
  const int pr = m->pp > 1 ? cfg->pp_rank : 0, L = cfg->num_layers;
  m->chunk_layers = L / (m->pp * m->vpp);
  m->nlayers = m->chunk_layers * m->vpp;
  m->first = pr == 0;
  m->last = pr == m->pp - 1;
  m->B = cfg->micro_batch;
  m->T = cfg->seq_length;
  zt_model *mm = &m->model;
  *mm = (zt_model){.ops = &k_gpt_ops, .impl = m, .name = "GPT", .n_losses = 1, .loss_names = {"lm loss"}, .be = be,
                   .dt = cfg->dtype, .table = &m->table, .plan = &m->plan, .tp_group = m->tp.group, .tp_size = tp,
                   .tp_rank = m->tp.rank,                   .sequence_parallel = m->tp.sp, .pp_group = m->pp > 1 ? cfg->pp_group : NULL, .pp_size = m->pp,
                   .pp_rank = pr, .vpp = m->vpp, .first = m->first, .last = m->last, .shared_grad = -1,
                   .n_stage = 1, .pp_buffers = cfg->pp_buffers > 0 ? cfg->pp_buffers : 0};
  const zt_layout stages = {.pp = m->pp, .vpp = m->vpp}; /* only the stage and chunk sizes are read */
  int *chunk_first = zt_malloc((size_t)m->vpp * sizeof(int), "gpt chunks");
  for (int c = 0; c < m->vpp; c++) {
    int n;
    zt_layout_stage_layers(&stages, L, pr, c, &chunk_first[c], &n);
  }
  zt_stack_init(&m->stack, mm, &m->bcfg, &k_gpt_layer, ENC_PREFIX, L, m->vpp, chunk_first, m->chunk_layers,
                m->first, cfg->recompute_full, cfg->partition_activations, m->B, m->T, 0);
  free(chunk_first);
  register_params(m);
  if (zt_tp_sp(&m->tp))
    for (int i = 0; i < m->table.count; i++)
      if (m->table.params[i].seq_parallel) mm->sp_numel += m->table.params[i].numel;
  if (m->pp > 1 && !cfg->untie_embeddings && (m->first || m->last))
    mm->shared_grad = zt_param_table_find(&m->table, m->first ? EMB_PREFIX ".word_embeddings.weight"
                                                              : "word_embeddings.weight");
}

static void teardown(zt_gpt *m) {
  free(m->model.unit_off);
  zt_stack_free(&m->stack);
  zt_param_table_free(&m->table);
}

size_t zt_gpt_plan_bytes(const zt_gpt_config *cfg, int B, size_t *by_kind) {
  zt_gpt_config c = *cfg;
  c.micro_batch = B;
  zt_gpt *m = zt_calloc(1, sizeof *m, "gpt sizing");
  setup(m, &c);
  plan_memory(m);
  const size_t total = zt_memplan_total(&m->plan);
  if (by_kind) memcpy(by_kind, m->plan.bytes, sizeof m->plan.bytes);
  teardown(m);
  free(m);
  return total;
}

static size_t plan_bytes_cb(const void *cfg, int B) { return zt_gpt_plan_bytes(cfg, B, NULL); }

void zt_gpt_build(zt_gpt *m, const zt_gpt_config *cfg, size_t mem_limit) {
  setup(m, cfg);
  zt_model *mm = &m->model;
  const zt_backend *be = mm->be;
  plan_memory(m); /* sizing */
  zt_model_check_plan(&m->plan, be, mm->dt, cfg->micro_batch, cfg->recompute_full, mem_limit, plan_bytes_cb, cfg);
  zt_memplan_allocate(&m->plan);
  plan_memory(m); /* carving */
  const size_t es = zt_dtype_size(mm->dt);
  /* the backward accumulates into the fp32 gradients, or into a half dtype's per-micro-batch buffer */
  void *gbind = mm->grads_dt ? mm->grads_dt : (void *)mm->grads;
  zt_stack_bind(&m->stack, &m->table, mm->params, gbind, es);
  if (m->first) zt_embedding_bind(&m->emb, &m->table, EMB_PREFIX, mm->params, gbind, es);
  m->emb.tp = &m->tp;
  m->emb.v0 = m->tp.rank * (cfg->padded_vocab_size / m->tp.size); /* the vocab-parallel head's slice too */
  m->params = mm->dt == ZT_DTYPE_FP32 ? mm->params : NULL;
  m->grads = mm->grads;
  m->optim_state = mm->optim_state;
  m->master = mm->master;
  mm->stage_in[0] = (zt_stage_tensor){zt_stack_input(&m->stack), mm->stage_bytes / es, mm->dt};
  mm->stage_out[0] = (zt_stage_tensor){zt_stack_output(&m->stack), mm->stage_bytes / es, mm->dt};
  mm->stage_grad[0] = (zt_stage_tensor){m->dres, mm->stage_bytes / es, mm->dt};
  const size_t NF = (size_t)m->B * m->T;
  m->h_losses = zt_malloc(NF * sizeof(float), "gpt losses");
  m->h_dloss = zt_malloc(NF * sizeof(float), "gpt loss gradients");
  m->h_mask = zt_malloc(NF * sizeof(float), "gpt loss mask");
  m->h_pos = zt_malloc(NF * sizeof(int32_t), "gpt positions");
  if (!m->last) return;
  m->lnf_w = zt_param_addr(&m->table, mm->params, es, ENC_PREFIX, "final_layernorm.weight");
  m->lnf_b = zt_param_addr(&m->table, mm->params, es, ENC_PREFIX, "final_layernorm.bias");
  m->dlnf_w = zt_param_addr(&m->table, gbind, es, ENC_PREFIX, "final_layernorm.weight");
  m->dlnf_b = zt_param_addr(&m->table, gbind, es, ENC_PREFIX, "final_layernorm.bias");
  const char *out = cfg->untie_embeddings ? "language_model.output_layer.weight"
                    : m->first             ? EMB_PREFIX ".word_embeddings.weight"
                                           : "word_embeddings.weight";
  const size_t off = m->table.params[zt_param_table_find(&m->table, out)].offset;
  m->out_w = (char *)mm->params + off * es;
  m->dout_w = gbind ? (char *)gbind + off * es : NULL;
}

void zt_gpt_free(zt_gpt *m) {
  free(m->h_losses), free(m->h_dloss), free(m->h_mask), free(m->h_pos);
  teardown(m);
  zt_memplan_free(&m->plan);
}

static void gpt_free(zt_model *mm) {
  zt_gpt *m = mm->impl;
  const int owned = m->owned;
  zt_gpt_free(m);
  if (owned) free(m);
}

static zt_gpt_config config_of(const zt_model_args *a, const zt_model_setup *s) {
  return (zt_gpt_config){
      .num_layers = a->num_layers, .hidden_size = a->hidden_size, .num_heads = a->num_heads,
      .ffn_hidden_size = a->ffn_hidden_size, .max_positions = a->max_positions,
      .padded_vocab_size = a->padded_vocab_size, .ln_eps = a->ln_eps, .attn_dropout = a->attn_dropout,
      .hidden_dropout = a->hidden_dropout, .init_std = a->init_std, .untie_embeddings = a->untie_embeddings,
      .recompute_full = s->recompute, .partition_activations = s->partition_activations,
      .micro_batch = s->micro_batch, .seq_length = s->seq_length, .master_weights = s->master_weights,
      .zero_partitions = s->zero_partitions, .optim_offloaded = s->optim_offloaded, .tp_group = s->tp_group,
      .tp_size = s->tp_size, .tp_rank = s->tp_rank, .sequence_parallel = s->sequence_parallel,
      .pp_size = s->pp_size, .pp_rank = s->pp_rank, .vpp = s->vpp, .pp_buffers = s->pp_buffers,
      .pp_group = s->pp_group, .backend = s->backend, .dtype = s->dtype, .forward_only = s->forward_only};
}

zt_model *zt_gpt_create(const zt_model_args *a, const zt_model_setup *s) {
  const zt_gpt_config c = config_of(a, s);
  zt_gpt *m = zt_malloc(sizeof *m, "GPT model");
  zt_gpt_build(m, &c, s->mem_limit);
  m->owned = 1;
  return &m->model;
}

void zt_gpt_count(const zt_model_args *a, int64_t *total, int64_t *largest) {
  const zt_model_setup one = {.micro_batch = 1, .seq_length = a->max_positions};
  const zt_gpt_config c = config_of(a, &one);
  zt_gpt_count_params(&c, total, largest);
}

/* ---- initialization ----------------------------------------------------------------------------------------- */

static void gpt_init_range(zt_model *mm, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt) {
  zt_gpt *m = mm->impl;
  zt_param_table full; /* with pipeline stages: draws keyed by the one-stage model's parameter indices */
  if (m->pp > 1) one_stage_table(&m->cfg, m->tp.size, &full);
  zt_model_init_params(mm, m->pp > 1 ? &full : NULL, seed, lo, hi, value_dt);
  if (m->pp > 1) zt_param_table_free(&full);
}

void zt_gpt_init_params(zt_gpt *m, uint64_t seed) {
  m->model.be->memset(m->model.params, 0, m->table.numel * zt_dtype_size(m->model.dt)); /* padding stays zero */
  gpt_init_range(&m->model, seed, 0, m->table.numel, ZT_DTYPE_FP32);
}

void zt_gpt_init_params_range(zt_gpt *m, uint64_t seed, size_t lo, size_t hi) {
  gpt_init_range(&m->model, seed, lo, hi, ZT_DTYPE_FP32);
}

size_t zt_gpt_num_params(const zt_gpt *m) { return zt_model_num_params(&m->model); }

/* ---- forward ------------------------------------------------------------------------------------------------ */

/* Megatron's _VocabParallelCrossEntropy over logits [NF, V] (this rank's vocabulary columns): the row maxima,
 * then the sums of exponentials and the target logits, all-reduced over the tensor-parallel group; the full
 * logits are never gathered. */
static void vocab_parallel_cross_entropy(zt_gpt *m, const int32_t *targets, int NF, int V) {
  const zt_backend *be = m->model.be;
  float *rowmax = m->ce_buf, *sums = m->ce_buf + NF; /* sums: [sumexp NF | target logit NF] */
  be->cross_entropy_vp_max(m->model.dt, rowmax, m->logits, NF, V);
  zt_allreduce_max(m->tp.group, ZT_DTYPE_FP32, rowmax, (size_t)NF);
  be->cross_entropy_vp_sums(m->model.dt, sums, sums + NF, m->logits, rowmax, targets, NF, V, m->emb.v0);
  zt_allreduce_sum(m->tp.group, ZT_DTYPE_FP32, sums, 2 * (size_t)NF);
  be->cross_entropy_vp_finish(m->losses, m->lse, rowmax, sums, sums + NF, NF);
}

/* The batch on the backend: the host arrays themselves on the CPU, copies on a device; default positions. */
static zt_pass stage_batch(zt_gpt *m, const zt_batch *b, const zt_pass *in) {
  const zt_backend *be = m->model.be;
  const size_t NF = (size_t)m->B * m->T;
  zt_pass pass = *in;
  int32_t *pos = NULL;
  if (!b->positions) {
    pos = zt_backend_host_view(be, m->pos_buf, m->h_pos);
    for (int r = 0; r < m->B; r++)
      for (int t = 0; t < m->T; t++) pos[r * m->T + t] = t;
    zt_backend_commit(be, m->pos_buf, pos, NF * sizeof(int32_t));
  }
  m->positions = b->positions ? zt_backend_stage_in(be, m->pos_buf, b->positions, NF * sizeof(int32_t)) : m->pos_buf;
  m->tokens = zt_backend_stage_in(be, m->tokens_dev, b->tokens, NF * sizeof(int32_t));
  m->targets = zt_backend_stage_in(be, m->targets_dev, b->labels, NF * sizeof(int32_t));
  pass.key_start = zt_backend_stage_in(be, m->key_start_dev, b->key_start, NF * sizeof(int32_t));
  pass.key_padding = zt_backend_stage_in(be, m->padding_dev, b->padding, NF);
  for (size_t n = 0; n < NF; n++) m->h_mask[n] = b->loss_mask ? b->loss_mask[n] : 1.0f;
  return pass;
}

static void gpt_forward(zt_model *mm, int vchunk, const zt_batch *b, const zt_pass *pass_in, zt_losses *out) {
  zt_gpt *m = mm->impl;
  const zt_backend *be = mm->be;
  const zt_dtype dt = mm->dt;
  zt_check(b->B == m->B && b->T == m->T, "gpt", "batch %dx%d differs from the planned %dx%d", b->B, b->T, m->B,
           m->T);
  zt_check(vchunk >= 0 && vchunk < m->vpp, "internal error", "gpt: virtual chunk %d of %d", vchunk, m->vpp);
  const int C = m->cfg.hidden_size, V = m->cfg.padded_vocab_size / m->tp.size;
  const int NF = m->B * m->T, N = zt_tp_local_rows(&m->tp, NF); /* N: the residual stream's tokens */
  const zt_pass pass = stage_batch(m, b, pass_in);
  m->pass = pass;
  out->n = 0;
  double *ft = m->fwd_time, t0 = ft ? zt_now() : 0.0, t1 = t0, t2 = 0.0;
  if (m->first && vchunk == 0) { /* later stages (and chunks) find their input in the stack's input */
    zt_model_param_event(mm, ZT_PARAM_FETCH, unit_emb(m));
    zt_embedding_layer_forward(&m->emb, zt_stack_input(&m->stack), m->tokens, m->positions, NULL, m->cfg.hidden_dropout,
                               &pass);
    zt_model_param_event(mm, ZT_PARAM_RELEASE, unit_emb(m));
  }
  if (ft) ft[ZT_GPT_FT_EMB] += (t2 = zt_now()) - t1, t1 = t2;
  zt_stack_forward(&m->stack, vchunk, &pass, NULL);
  if (!m->last || vchunk != m->vpp - 1) return; /* the output goes to the next stage */
  if (ft) t2 = zt_now();
  head_params(m, ZT_PARAM_FETCH);
  be->layernorm_forward(dt, m->lnf, m->lnf_mean, m->lnf_rstd, zt_stack_output(&m->stack), m->lnf_w, m->lnf_b, N, C,
                        m->cfg.ln_eps);
  if (ft) {
    double t3 = zt_now();
    ft[ZT_GPT_FT_FINAL_LN] += t3 - t2;
    ft[ZT_GPT_FT_ENCODER] += t3 - t1;
    ft[ZT_GPT_FT_LM] += t3 - t0;
    t1 = t3;
  }
  /* the output layer is column-parallel over the vocabulary: every rank scores all tokens on its slice */
  be->matmul_forward(dt, m->logits, NULL, zt_tp_gather(&m->tp, m->lnf, N, C), m->out_w, NULL, NF, C, V);
  if (zt_tp_on(&m->tp)) vocab_parallel_cross_entropy(m, m->targets, NF, V);
  else be->cross_entropy_forward(dt, m->losses, m->lse, m->logits, m->targets, N, V);
  head_params(m, ZT_PARAM_RELEASE);
  if (ft) ft[ZT_GPT_FT_LOGITS] += (t2 = zt_now()) - t1;
  const float *losses = m->losses;
  if (!be->host_visible) { /* the one synchronization of the forward */
    be->to_host(m->h_losses, m->losses, (size_t)NF * sizeof(float));
    losses = m->h_losses;
  }
  double num = 0.0, den = 0.0;
  for (int n = 0; n < NF; n++) {
    double w = m->h_mask[n];
    num += w * losses[n];
    den += w;
  }
  if (ft) ft[ZT_GPT_FT_MODEL] += zt_now() - t0;
  const float loss = den > 0 ? (float)(num / den) : 0.0f;
  *out = (zt_losses){.n = 1, .name = {"lm loss"}, .value = {loss}, .total = loss};
}

/* ---- backward ----------------------------------------------------------------------------------------------- */

/* The last stage's loss, output layer and final layernorm backward: dres = d(final hidden state). */
static void head_backward(zt_gpt *m, float grad_scale, int NF, int N, int C, int V) {
  const zt_backend *be = m->model.be;
  const zt_dtype dt = m->model.dt;
  void *dln = m->stack.scratch.dln;
  double den = 0.0;
  for (int n = 0; n < NF; n++) den += m->h_mask[n];
  float *dloss = zt_backend_host_view(be, m->dloss, m->h_dloss);
  for (int n = 0; n < NF; n++) dloss[n] = den > 0 ? (float)(m->h_mask[n] * grad_scale / den) : 0.0f;
  zt_backend_commit(be, m->dloss, dloss, (size_t)NF * sizeof(float));
  if (!zt_tp_on(&m->tp)) {
    be->cross_entropy_backward(dt, m->logits, m->logits, m->lse, m->targets, m->dloss, N, V);
    be->matmul_backward(dt, dln, m->dout_w, NULL, m->logits, m->lnf, m->out_w, NULL, N, C, V);
  } else { /* the input gradient of the column-parallel output layer is partial over the vocabulary slices */
    be->cross_entropy_vp_backward(dt, m->logits, m->logits, m->lse, m->targets, m->dloss, NF, V, m->emb.v0);
    be->matmul_backward(dt, zt_tp_partial_buffer(&m->tp, dln), m->dout_w, NULL, m->logits,
                        zt_tp_gather(&m->tp, m->lnf, N, C), m->out_w, NULL, NF, C, V);
    zt_tp_reduce(&m->tp, dln, NULL, N, C);
  }
  be->layernorm_backward(dt, m->dres, m->dlnf_w, m->dlnf_b, dln, zt_stack_output(&m->stack), m->lnf_w, m->lnf_mean,
                         m->lnf_rstd, N, C);
}

static void gpt_backward(zt_model *mm, float grad_scale) {
  zt_gpt *m = mm->impl;
  zt_check(!m->cfg.forward_only, "internal error", "gpt: backward of a forward-only model");
  const zt_pass *pass = &m->pass;
  const int C = m->cfg.hidden_size, V = m->cfg.padded_vocab_size / m->tp.size;
  const int NF = pass->B * pass->T, N = zt_tp_local_rows(&m->tp, NF);
  const int chunk = m->stack.fwd_chunk;
  if (m->last && chunk == m->vpp - 1) { /* else dres holds d(output) from the next stage */
    head_params(m, ZT_PARAM_FETCH);
    head_backward(m, grad_scale, NF, N, C, V);
    head_params(m, ZT_PARAM_RELEASE);
    zt_model_param_event(mm, ZT_PARAM_GRAD_READY, unit_head(m));
  }
  zt_stack_backward(&m->stack, pass, m->dres, NULL, 0.0f);
  if (m->first && chunk == 0) { /* reads no parameters */
    zt_embedding_layer_backward(&m->emb, m->dres, m->tokens, m->positions, NULL, m->cfg.hidden_dropout, pass);
    zt_model_param_event(mm, ZT_PARAM_GRAD_READY, unit_emb(m));
  }
}

static zt_flops_profiler *gpt_flops_profiler(zt_model *mm, const zt_flops_profiler_config *cfg) {
  return zt_gpt_flops_profiler(mm->impl, cfg);
}

static void gpt_profile(zt_model *mm, double *slots) {
  zt_gpt *m = mm->impl;
  m->fwd_time = slots;
  m->emb.fwd_time = slots ? slots + ZT_GPT_FT_WORD : NULL;
  zt_stack_profile(&m->stack, slots ? slots + ZT_GPT_FT_SLOTS : NULL);
}

static const zt_model_ops k_gpt_ops = {.kind = "gpt", .init_range = gpt_init_range, .forward = gpt_forward,
                                       .backward = gpt_backward, .free = gpt_free,
                                       .flops_profiler = gpt_flops_profiler, .profile = gpt_profile};

/* ---- one-process API ---------------------------------------------------------------------------------------- */

float zt_gpt_forward(zt_gpt *m, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                     const float *loss_mask, const zt_pass *pass) {
  return zt_gpt_forward_chunk(m, 0, tokens, positions, targets, loss_mask, pass);
}

float zt_gpt_forward_chunk(zt_gpt *m, int chunk, const int32_t *tokens, const int32_t *positions,
                           const int32_t *targets, const float *loss_mask, const zt_pass *pass) {
  const zt_batch b = {.B = pass->B, .T = pass->T, .tokens = tokens, .positions = positions, .labels = targets,
                      .loss_mask = loss_mask, .padding = pass->key_padding, .key_start = pass->key_start};
  const zt_pass p = {.B = pass->B, .T = pass->T, .first_sample = pass->first_sample, .seed = pass->seed,
                     .training = pass->training};
  zt_losses out;
  gpt_forward(&m->model, chunk, &b, &p, &out);
  return out.n ? out.value[0] : 0.0f;
}

void zt_gpt_backward(zt_gpt *m, float grad_scale) { gpt_backward(&m->model, grad_scale); }
