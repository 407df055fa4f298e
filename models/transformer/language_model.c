/* The language model GPT, BERT and T5 share (language_model.h): layout, parameters, memory plan, the batch on the
 * backend, the encoder's (and an encoder-decoder's decoder's) forward and backward, the output layer and its
 * vocab-parallel cross-entropy. */
#include "models/transformer/language_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/transformer/kd.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/ops/wgrad_store.h"
#include "runtime/parallel/parallel_state.h"

/* ZeRO-3 fetch units: the embedding (first stage), the layers, the head (last stage); an encoder-decoder's encoder
 * final layernorm and decoder layers come between the encoder's layers and the head. */
int zt_lm_unit_emb(const zt_lm *lm) { return lm->first ? 0 : -1; }
static int unit_enc_lnf(const zt_lm *lm) { return lm->has_enc_lnf ? lm->first + lm->nlayers : -1; }
int zt_lm_unit_head(const zt_lm *lm) {
  return lm->last ? lm->first + lm->nlayers + lm->has_enc_lnf + (lm->enc_dec ? lm->dec.nlayers : 0) : -1;
}
/* The stack the head reads (the decoder's in an encoder-decoder) and its residual-stream gradient. */
static zt_stack *top_stack(zt_lm *lm) { return lm->enc_dec ? &lm->dec : &lm->stack; }
static void *top_dres(const zt_lm *lm) { return lm->enc_dec ? lm->ddec : lm->dres; }
/* The tokens of one row the head scores: the decoder's in an encoder-decoder. */
static int head_T(const zt_lm *lm) { return lm->enc_dec ? lm->Td : lm->T; }
static int head_uses_embedding(const zt_lm *lm) {
  return lm->last && lm->first && !lm->cfg.untie_embeddings && !lm->cfg.no_output_layer;
}
void zt_lm_head_params(zt_lm *lm, int event) {
  zt_model_param_event(lm->model, event, zt_lm_unit_head(lm));
  if (head_uses_embedding(lm)) zt_model_param_event(lm->model, event, zt_lm_unit_emb(lm));
}

/* "<stack_prefix>.final_layernorm.weight" and ".bias" (RMSNorm: the weight only). */
static void register_final_ln(zt_param_table *t, const char *stack_prefix, const zt_lm_config *c) {
  zt_norm_register(t, stack_prefix, "final_layernorm", c->hidden_size, c->rmsnorm, c->layernorm_1p);
}

/* The learned position embeddings' rows: none without them (Megatron's add_position_embedding False). */
static int position_rows(const zt_lm_config *c) { return c->no_position_embedding ? 0 : c->max_positions; }

/* The last stage's parameters: the final layernorm (the decoder's in an encoder-decoder), the model's head, the output
 * layer (untied), or the tied word embeddings' group (one stage) or Megatron's copy of them (several stages). */
static void register_last(zt_param_table *t, const zt_lm_config *c, zt_lm_register_head head, int V, int first) {
  register_final_ln(t, c->dec_layers > 0 ? ZT_LM_DEC_PREFIX : ZT_LM_ENC_PREFIX, c);
  if (head) head(t, c, V);
  if (c->no_output_layer) return;
  if (c->untie_embeddings) {
    int64_t w[2] = {V, c->hidden_size};
    zt_param_table_add(t, "language_model.output_layer.weight", 2, w, ZT_INIT_NORMAL, c->init_std, 0, 0);
  } else if (first) {
    t->params[zt_param_table_find(t, ZT_WORD_EMBEDDING)].tied_group = 0; /* embedding + output layer */
  } else {
    zt_embedding_register_copy(t, V, c->hidden_size, c->init_std);
  }
}

static void register_params(zt_lm *lm) {
  const zt_lm_config *c = &lm->cfg;
  zt_param_table *t = lm->table;
  zt_model *mm = lm->model;
  zt_param_table_init(t);
  int *first = zt_malloc((size_t)(lm->nlayers + lm->dec.nlayers + 4) * sizeof(int), "model units"), u = 0;
  if (lm->first) { /* first[u]: unit u's first parameter */
    first[u++] = t->count;
    zt_embedding_register(t, ZT_LM_EMB_PREFIX, lm->V, position_rows(c), c->hidden_size, c->init_std,
                          c->num_tokentypes);
  }
  zt_stack_register(&lm->stack, t, first + u);
  u += lm->nlayers;
  if (lm->has_enc_lnf) {
    first[u++] = t->count;
    register_final_ln(t, ZT_LM_ENC_PREFIX, c);
  }
  if (lm->enc_dec) {
    zt_stack_register(&lm->dec, t, first + u);
    u += lm->dec.nlayers;
  }
  if (lm->last) {
    first[u++] = t->count;
    register_last(t, c, lm->register_head, lm->V, lm->first);
  }
  if (c->init_xavier) zt_param_table_xavier(t, lm->tp.size); /* every N(0, std) matrix: init_method's */
  mm->nunits = u;
  mm->unit_off = zt_malloc((size_t)(u + 1) * sizeof(size_t), "model units");
  for (int k = 0; k < u; k++) mm->unit_off[k] = t->params[first[k]].offset;
  mm->unit_off[u] = t->numel;
  free(first);
}

static zt_layer_spec layer_spec(const zt_lm_config *c) {
  return (zt_layer_spec){.self_mask = c->bidirectional ? ZT_ATTN_NONE : ZT_ATTN_CAUSAL, .cross_attention = 0,
                         .mlp = ZT_MLP_DENSE, .residual_post_ln = c->residual_post_ln};
}

/* An encoder-decoder's decoder layer (Megatron's LayerType.decoder): causal self-attention, then cross-attention. */
static zt_layer_spec decoder_spec(const zt_lm_config *c) {
  return (zt_layer_spec){.self_mask = ZT_ATTN_CAUSAL, .cross_attention = 1, .mlp = ZT_MLP_DENSE,
                         .residual_post_ln = c->residual_post_ln};
}

/* The layers' configuration: heads and MLP columns of one of tp ranks. */
static zt_block_config block_config(const zt_lm_config *cfg, const zt_tp *tp) {
  const int C = cfg->hidden_size, NH = cfg->num_heads;
  const int KV = cfg->kv_heads > 0 ? cfg->kv_heads : NH;
  return (zt_block_config){.C = C, .NH = NH / tp->size, .HD = C / NH, .FFN = cfg->ffn_hidden_size / tp->size,
                           .KV = KV / tp->size,
                           .ln_eps = cfg->ln_eps, .attn_dropout = cfg->attn_dropout,
                           /* FPDT: Megatron-DeepSpeed's layers add their residuals without the hidden dropout */
                           .hidden_dropout = cfg->fpdt_chunk ? 0.0f : cfg->hidden_dropout, .init_std = cfg->init_std,
                           .out_init_std = cfg->init_std / sqrtf(2.0f * cfg->num_layers), .tp = tp,
                           .rmsnorm = cfg->rmsnorm, .swiglu = cfg->swiglu, .no_bias = cfg->no_bias_linear,
                           .rot = cfg->rotary_dims, .ltd_layers = cfg->random_ltd_layers, .make_ffn = cfg->make_ffn,
                           .ffn_ctx = cfg->ffn_ctx, .act = cfg->mlp_act, .ln_1p = cfg->layernorm_1p,
                           .fpdt_chunk = cfg->fpdt_chunk,
                           .recompute_core_attention = cfg->recompute_core_attention && !cfg->fpdt_chunk &&
                                                       zt_attn_keeps_probs(tp->be ? tp->be : zt_backend_cpu())};
}

void zt_lm_one_stage_table(const zt_lm_config *cfg, int tp, zt_lm_register_head head, zt_param_table *t) {
  zt_lm_config cc = *cfg; /* one process holds every expert (a rank of an expert-parallel run only its own) */
  zt_moe_config all;
  if (cfg->moe && cfg->moe->local_experts) {
    all = *cfg->moe;
    all.local_experts = 0;
    if (cc.ffn_ctx == (const void *)cfg->moe) cc.ffn_ctx = &all;
    cc.moe = &all;
  }
  const zt_lm_config *c = &cc;
  const zt_tp one = {.size = tp};
  const zt_block_config bcfg = block_config(c, &one);
  const zt_layer_spec spec = layer_spec(c);
  zt_param_table_init(t);
  zt_embedding_register(t, ZT_LM_EMB_PREFIX, c->padded_vocab_size / tp, position_rows(c), c->hidden_size,
                        c->init_std, c->num_tokentypes);
  const zt_layer_spec dspec = decoder_spec(c);
  for (int l = 0; l < c->num_layers + c->dec_layers; l++) { /* the encoder's layers, then the decoder's */
    const int dec = l >= c->num_layers;
    char pre[96];
    if (dec && l == c->num_layers) register_final_ln(t, ZT_LM_ENC_PREFIX, c);
    snprintf(pre, sizeof pre, "%s.layers.%d", dec ? ZT_LM_DEC_PREFIX : ZT_LM_ENC_PREFIX, dec ? l - c->num_layers : l);
    zt_ffn mlp = zt_ffn_for_layer(&bcfg, spec.mlp, l);
    zt_block_register(t, pre, dec ? &dspec : &spec, &bcfg, &mlp);
    zt_ffn_destroy(&mlp);
  }
  register_last(t, c, head, c->padded_vocab_size / tp, 1);
  if (c->init_xavier) zt_param_table_xavier(t, tp);
}

/* The module of a parameter: its name up to the last dot. */
static size_t module_len(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot ? (size_t)(dot - name) : strlen(name);
}

void zt_lm_count_params(const zt_lm_config *c, zt_lm_register_head head, int64_t *total, int64_t *largest) {
  zt_param_table t;
  zt_lm_one_stage_table(c, 1, head, &t);
  *total = *largest = 0;
  for (int i = 0; i < t.count; i++) {
    *total += (int64_t)t.params[i].numel;
    /* DeepSpeed's largest layer: the most parameters one module owns directly (its weight and bias) */
    const size_t len = module_len(t.params[i].name);
    int64_t own = 0;
    for (int j = 0; j < t.count; j++)
      if (module_len(t.params[j].name) == len && !strncmp(t.params[j].name, t.params[i].name, len))
        own += (int64_t)t.params[j].numel;
    if (own > *largest) *largest = own;
  }
  zt_param_table_free(&t);
}

/* Megatron's divisibility rules for tensor parallelism, named by their flags. */
static void check_config(const zt_lm_config *c, int tp) {
  zt_check(c->hidden_size % c->num_heads == 0, "model", "hidden size %d is not divisible by %d heads",
           c->hidden_size, c->num_heads);
  zt_check(c->tp_size <= 1 || c->tp_group != NULL, "internal error", "model: tensor-parallel size %d without a group",
           c->tp_size);
  zt_check(c->num_heads % tp == 0, "inconsistent arguments", "--num-attention-heads %d is not divisible by "
           "--tensor-model-parallel-size %d (the heads are split over the tensor-parallel ranks)", c->num_heads, tp);
  const int kv = c->kv_heads > 0 ? c->kv_heads : c->num_heads;
  zt_check(c->num_heads % kv == 0 && kv % tp == 0, "inconsistent arguments", "--num-key-value-heads %d must divide "
           "--num-attention-heads %d and be divisible by --tensor-model-parallel-size %d (each rank holds whole "
           "key/value groups)", kv, c->num_heads, tp);
  zt_check(c->ffn_hidden_size % tp == 0, "inconsistent arguments", "--ffn-hidden-size %d is not divisible by "
           "--tensor-model-parallel-size %d (the MLP columns are split over the tensor-parallel ranks)",
           c->ffn_hidden_size, tp);
  zt_check(c->padded_vocab_size % tp == 0, "inconsistent arguments", "padded vocabulary size %d is not divisible "
           "by --tensor-model-parallel-size %d", c->padded_vocab_size, tp);
  zt_check(!(tp > 1 && c->sequence_parallel) || c->seq_length % tp == 0, "inconsistent arguments",
           "--seq-length %d is not divisible by --tensor-model-parallel-size %d (--sequence-parallel splits the "
           "sequence over the tensor-parallel ranks)", c->seq_length, tp);
  zt_check(!(c->partition_activations && tp > 1) || ((size_t)c->micro_batch * c->seq_length *
           c->hidden_size) % (size_t)tp == 0, "inconsistent arguments", "partition_activations (or --distribute-"
           "checkpointed-activations): a layer input of %d x %d x %d elements does not split over %d tensor-parallel "
           "ranks", c->micro_batch, c->seq_length, c->hidden_size, tp);
  const int pp = c->pp_size > 1 ? c->pp_size : 1;
  zt_check(c->dec_layers > 0 || c->stage_first || c->num_layers % pp == 0, "inconsistent arguments", "--num-layers %d "
           "is not divisible by --pipeline-model-parallel-size %d", c->num_layers, pp);
  for (int s = 0; c->stage_first && s < pp; s++) /* zt_args_pipe_stages' (stage 0 may hold no layer) */
    zt_check(c->stage_first[0] == 0 && c->stage_first[pp] == c->num_layers && c->stage_first[s + 1] >= c->stage_first[s],
             "internal error", "model: stage %d of %d holds layers [%d, %d) of %d", s, pp, c->stage_first[s],
             c->stage_first[s + 1], c->num_layers);
  zt_check(pp == 1 || c->pp_group != NULL, "internal error", "model: pipeline size %d without a group", pp);
  if (c->usp_size > 1) { /* the arguments refuse what DeepSpeed-Ulysses does not run with; these are the model's own */
    zt_check(c->usp_group && tp == 1 && pp == 1 && c->dec_layers <= 0 && !c->sparse_attention &&
                 !c->random_ltd_layers && !zt_moe_on(c->moe) && !c->kd && !c->bidirectional && c->num_tokentypes == 0,
             "internal error", "model: DeepSpeed-Ulysses over %d ranks with tensor or pipeline parallelism, an "
             "encoder-decoder, sparse attention, random-LTD, MoE, KD or a bidirectional model", c->usp_size);
    zt_check(c->seq_length % c->usp_size == 0, "inconsistent arguments", "--seq-length %d is not divisible by "
             "--ds-sequence-parallel-size %d (each rank holds an equal share of every sequence)", c->seq_length,
             c->usp_size);
    zt_check(c->num_heads % c->usp_size == 0, "inconsistent arguments", "--num-attention-heads %d is not divisible "
             "by --ds-sequence-parallel-size %d (the attention splits the heads over the sequence-parallel ranks)",
             c->num_heads, c->usp_size);
  }
  const zt_backend *be = c->backend ? c->backend : zt_backend_cpu();
  zt_check(be->kind != ZT_BACKEND_CPU || c->dtype == ZT_DTYPE_FP32, "internal error", "model: the CPU backend "
           "stores fp32, asked for %s", zt_dtype_name(c->dtype));
  if (c->dec_layers <= 0) return;
  /* an encoder-decoder: what it does not run is refused by the arguments; these are the model's own checks */
  if (pp > 1) { /* Megatron's _get_num_layers for encoder_and_decoder models */
    const int S = c->pp_split;
    zt_check(S >= 1 && S < pp, "inconsistent arguments", "--pipeline-model-parallel-split-rank %d: the encoder's "
             "stages are [0, split) and the decoder's [split, %d), so it must be in [1, %d]", S, pp, pp - 1);
    zt_check(c->num_layers % S == 0, "inconsistent arguments", "encoder_num_layers (%d) must be divisible by number "
             "of ranks given to encoder (%d) (--pipeline-model-parallel-split-rank)", c->num_layers, S);
    zt_check(c->dec_layers % (pp - S) == 0, "inconsistent arguments", "decoder_num_layers (%d) must be divisible by "
             "number of ranks given to decoder (%d) (--pipeline-model-parallel-size %d - split rank %d)", c->dec_layers,
             pp - S, pp, S);
    zt_check(c->vpp <= 1, "unsupported argument", "--num-layers-per-virtual-pipeline-stage: Megatron's interleaved "
             "schedule does not split an encoder-decoder model");
  }
  zt_check(!(tp > 1 && c->sequence_parallel) || c->dec_seq_length % tp == 0, "inconsistent arguments",
           "--decoder-seq-length %d is not divisible by --tensor-model-parallel-size %d (--sequence-parallel splits "
           "the decoder's sequence over the tensor-parallel ranks too)", c->dec_seq_length, tp);
  zt_check(!c->sparse_attention && !c->random_ltd_layers && !c->moe && !c->kd && !c->untie_embeddings &&
           !(c->kv_heads > 0 && c->kv_heads != c->num_heads), "internal error", "model: an encoder-decoder with "
           "sparse attention, random-LTD, MoE, KD, untied embeddings or grouped-query attention");
  /* rotary: the encoder's and the decoder's self-attention turn by positions 0.. of one table of the encoder's length
   * (Megatron-DeepSpeed's RotaryEmbedding(seq_length), sliced to each sequence; the cross-attention does not turn) */
  zt_check(!c->rotary_dims || c->dec_seq_length <= c->seq_length, "internal error", "model: rotary embeddings with a "
           "decoder of %d tokens over an encoder of %d (the table has the encoder's length; train/args.c refuses it)",
           c->dec_seq_length, c->seq_length);
  zt_check(c->dec_seq_length >= 1 && c->dec_seq_length <= c->max_positions, "inconsistent arguments",
           "--decoder-seq-length %d must be in [1, --max-position-embeddings %d] (the decoder's positions share "
           "the position table)", c->dec_seq_length, c->max_positions);
}

zt_lm_config zt_lm_config_from(const zt_model_args *a, const zt_model_setup *s) {
  return (zt_lm_config){
      .num_layers = a->num_layers, .hidden_size = a->hidden_size, .num_heads = a->num_heads,
      .ffn_hidden_size = a->ffn_hidden_size, .max_positions = a->max_positions,
      .padded_vocab_size = a->padded_vocab_size, .ln_eps = a->ln_eps, .attn_dropout = a->attn_dropout,
      .hidden_dropout = a->hidden_dropout, .init_std = a->init_std, .untie_embeddings = a->untie_embeddings,
      .residual_post_ln = a->residual_post_ln, .recompute_full = s->recompute,
      .recompute_core_attention = s->recompute_core_attention,
      .partition_activations = s->partition_activations, .micro_batch = s->micro_batch, .seq_length = s->seq_length,
      .master_weights = s->master_weights, .zero_partitions = s->zero_partitions, .optim_offloaded = s->optim_offloaded,
      .tp_group = s->tp_group, .tp_size = s->tp_size, .tp_rank = s->tp_rank, .sequence_parallel = s->sequence_parallel,
      .pp_size = s->pp_size, .pp_rank = s->pp_rank, .vpp = s->vpp, .pp_buffers = s->pp_buffers,
      .pp_group = s->pp_group, .usp_group = s->usp_group, .usp_size = s->usp_size, .usp_rank = s->usp_rank,
      .fpdt_chunk = s->fpdt_chunk, .stage_first = s->stage_first,
      .backend = s->backend, .dtype = s->dtype, .forward_only = s->forward_only,
      .sparse_attention = a->sparse_attention, .sparse_as_mask = a->sparse_as_mask,
      .random_ltd_layers = a->random_ltd_layers, .moe = a->moe, .kd = a->kd, .dec_layers = a->dec_layers,
      .dec_seq_length = a->dec_seq_length, .pp_split = s->pp_split, .rmsnorm = a->rmsnorm, .swiglu = a->swiglu,
      .no_bias_linear = a->no_bias_linear, .rotary_dims = a->rotary_dims, .rope_theta = a->rope_theta,
      .no_position_embedding = a->no_position_embedding, .kv_heads = a->kv_heads, .mlp_act = a->mlp_act,
      .head_gelu_tanh = a->head_gelu_tanh, .layernorm_1p = a->layernorm_1p, .init_xavier = a->init_xavier};
}

void zt_lm_setup(zt_lm *lm, const zt_lm_config *cfg, zt_model *mm, zt_param_table *table, zt_memplan *plan,
                 zt_lm_register_head register_head) {
  memset(lm, 0, sizeof(*lm));
  lm->cfg = *cfg;
  lm->model = mm;
  lm->table = table;
  lm->plan = plan;
  lm->register_head = register_head;
  const int tp = cfg->tp_size > 1 ? cfg->tp_size : 1;
  check_config(cfg, tp);
  const zt_backend *be = cfg->backend ? cfg->backend : zt_backend_cpu();
  plan->alloc = be->host_visible ? NULL : be->alloc;
  plan->release = be->host_visible ? NULL : be->release;
  lm->tp = (zt_tp){.group = tp > 1 ? cfg->tp_group : NULL, .size = tp, .rank = tp > 1 ? cfg->tp_rank : 0,
                   .sp = tp > 1 && cfg->sequence_parallel, .be = be, .dt = cfg->dtype};
  lm->bcfg = block_config(cfg, &lm->tp);
  if (cfg->usp_size > 1) {
    const int share = cfg->seq_length / cfg->usp_size; /* FPDT: chunks of K/size tokens, else one chunk */
    lm->usp = (zt_usp){.group = cfg->usp_group, .size = cfg->usp_size, .rank = cfg->usp_rank,
                       .chunk = cfg->fpdt_chunk ? cfg->fpdt_chunk / cfg->usp_size : share};
    zt_check(share % lm->usp.chunk == 0 && lm->usp.chunk * cfg->usp_size * (share / lm->usp.chunk) ==
                 cfg->seq_length, "internal error", "model: FPDT chunks of %d tokens over %d ranks for a sequence of "
             "%d (train/args.c checks it)", cfg->fpdt_chunk, cfg->usp_size, cfg->seq_length);
    lm->bcfg.usp = &lm->usp;
  }
  if (cfg->sparse_attention) {
    const zt_attn_layout *l = &cfg->sparse_attention->l;
    zt_check(l->nb * l->block == cfg->seq_length, "sparse attention", "the layout covers %d blocks of %d tokens = "
             "%d, the sequence has %d tokens", l->nb, l->block, l->nb * l->block, cfg->seq_length);
    zt_check(l->heads == 1 || l->heads == cfg->num_heads, "internal error", "sparse attention: a layout of %d heads "
             "for %d attention heads", l->heads, cfg->num_heads);
    zt_attn_layout_to_backend(&lm->sparse, cfg->sparse_attention, be);
    lm->bcfg.sparse = &lm->sparse.l;
    lm->bcfg.sparse_as_mask = cfg->sparse_as_mask;
  }
  lm->spec = layer_spec(cfg);
  lm->pp = cfg->pp_size > 1 ? cfg->pp_size : 1;
  lm->vpp = cfg->vpp > 1 ? cfg->vpp : 1;
  const int pr = lm->pp > 1 ? cfg->pp_rank : 0, L = cfg->num_layers;
  lm->enc_dec = cfg->dec_layers > 0;
  /* an encoder-decoder's stages: [0, S) the encoder's layers, [S, pp) the decoder's (one stage: all of both) */
  const int S = lm->enc_dec && lm->pp > 1 ? cfg->pp_split : lm->pp, Ld = lm->enc_dec ? cfg->dec_layers : 0;
  /* zt_args_pipe_stages' split (DeepSpeed's partition, the standalone embedding stage; an encoder-decoder's encoder) */
  const int uneven = cfg->stage_first && lm->pp > 1 && lm->vpp == 1;
  lm->chunk_layers = uneven ? cfg->stage_first[pr + 1] - cfg->stage_first[pr]
                     : !lm->enc_dec ? L / (lm->pp * lm->vpp) : pr < S ? L / S : 0;
  lm->nlayers = lm->chunk_layers * lm->vpp;
  lm->has_enc_lnf = lm->enc_dec && pr == S - 1;
  lm->first = pr == 0;
  lm->last = pr == lm->pp - 1;
  lm->B = mm->micro_batch = cfg->micro_batch;
  lm->T = lm->T_plan = cfg->seq_length / (zt_usp_on(&lm->usp) ? lm->usp.size : 1); /* Ulysses: this rank's share */
  lm->V = cfg->padded_vocab_size / tp;
  lm->v0 = lm->tp.rank * lm->V;
  /* the owner set ops, impl, name and losses */
  mm->be = be;
  mm->dt = cfg->dtype;
  mm->table = table;
  mm->plan = plan;
  mm->tp_group = lm->tp.group;
  mm->tp_size = tp;
  mm->tp_rank = lm->tp.rank;
  mm->sequence_parallel = lm->tp.sp;
  mm->pp_group = lm->pp > 1 ? cfg->pp_group : NULL;
  mm->expert_group = cfg->moe && cfg->moe->local_experts ? cfg->moe->ep_group : NULL;
  mm->pp_size = lm->pp;
  mm->pp_rank = pr;
  mm->vpp = lm->vpp;
  mm->first = lm->first;
  mm->last = lm->last;
  mm->shared_grad = -1;
  mm->n_stage = 1;
  mm->pp_buffers = cfg->pp_buffers > 0 ? cfg->pp_buffers : 0;
  const zt_layout stages = {.pp = lm->pp, .vpp = lm->vpp}; /* only the stage and chunk sizes are read */
  int *chunk_first = zt_malloc((size_t)lm->vpp * sizeof(int), "model chunks");
  for (int c = 0; c < lm->vpp; c++) {
    int n;
    if (uneven) chunk_first[c] = cfg->stage_first[pr];
    else if (lm->enc_dec) chunk_first[c] = pr < S ? pr * lm->chunk_layers : L;
    else zt_layout_stage_layers(&stages, L, pr, c, &chunk_first[c], &n);
  }
  zt_stack_init(&lm->stack, mm, &lm->bcfg, &lm->spec, ZT_LM_ENC_PREFIX, L, lm->vpp, chunk_first, lm->chunk_layers,
                lm->first, cfg->recompute_full, cfg->partition_activations, lm->B, lm->T, 0);
  free(chunk_first);
  if (lm->enc_dec) { /* the decoder's layers are numbered L.. (dropout sites), named from 0, units after the
                      * encoder's final layernorm's */
    const int dn = lm->pp == 1 ? Ld : pr >= S ? Ld / (lm->pp - S) : 0, dfirst = L + (pr >= S ? (pr - S) * dn : 0);
    lm->Td = cfg->dec_seq_length;
    lm->dec_spec = decoder_spec(cfg);
    zt_stack_init(&lm->dec, mm, &lm->bcfg, &lm->dec_spec, ZT_LM_DEC_PREFIX, L + Ld, 1, &dfirst, dn,
                  lm->first + lm->nlayers + lm->has_enc_lnf, cfg->recompute_full, cfg->partition_activations, lm->B,
                  lm->Td, lm->T);
    lm->dec.name0 = L;
  }
  register_params(lm);
  if (cfg->moe && cfg->moe->local_experts) /* this rank's experts after the dense parameters (ZeRO: two partitions) */
    zt_param_table_experts_last(table, cfg->zero_partitions > 1 ? (size_t)cfg->zero_partitions : 1);
  if (zt_tp_sp(&lm->tp))
    for (int i = 0; i < table->count; i++)
      if (table->params[i].seq_parallel) mm->sp_numel += table->params[i].numel;
  if (lm->pp > 1 && !cfg->untie_embeddings && !cfg->no_output_layer && (lm->first || lm->last))
    mm->shared_grad = zt_param_table_find(table, lm->first ? ZT_WORD_EMBEDDING : ZT_SHARED_EMBEDDING);
}

void zt_lm_teardown(zt_lm *lm) {
  zt_attn_layout_free(&lm->sparse);
  free(lm->model->unit_off);
  lm->model->unit_off = NULL;
  zt_stack_free(&lm->stack);
  if (lm->enc_dec) zt_stack_free(&lm->dec);
  zt_param_table_free(lm->table);
}

void zt_lm_plan(zt_lm *lm) {
  zt_memplan *p = lm->plan;
  zt_model *mm = lm->model;
  const zt_backend *be = mm->be;
  const zt_dtype dt = mm->dt;
  const size_t es = zt_dtype_size(dt);
  const int B = lm->B, T = lm->T_plan, C = lm->cfg.hidden_size;
  /* N: the residual stream's tokens on this rank (all B*T, or B*T/tp with --sequence-parallel); NF: all */
  const size_t NF = (size_t)B * T, N = (size_t)zt_tp_local_rows(&lm->tp, B * T);
  const size_t V = (size_t)lm->V, NH = (size_t)B * (lm->enc_dec ? lm->Td : T); /* NH: the tokens the head scores */
  /* ZeRO: flat buffers padded to whole partitions; optimizer state and masters for one partition (with this rank's
   * experts laid out last, one of the dense parameters over the data-parallel ranks and one of the experts over the
   * ranks holding them) */
  const zt_param_table *tb = lm->table;
  const size_t zp = lm->cfg.zero_partitions > 1 ? (size_t)lm->cfg.zero_partitions : 1;
  size_t flat = (tb->numel + zp - 1) / zp * zp, part = flat / zp;
  if (tb->expert_lo > 0 && zp > 1) {
    const size_t zx = zp / (size_t)lm->cfg.moe->ep_size, xpad = (tb->numel - tb->expert_lo + zx - 1) / zx * zx;
    flat = tb->expert_lo + xpad;
    part = (tb->dense_numel + zp - 1) / zp + xpad / zx;
  }
  const int train = !lm->cfg.forward_only;
  mm->flat = flat;
  mm->params = zt_memplan_bytes(p, ZT_MEM_PARAMS, flat * es);
  mm->grads = train ? zt_memplan_floats(p, ZT_MEM_GRADS, flat) : NULL;
  mm->grads_dt = train && dt != ZT_DTYPE_FP32 ? zt_memplan_bytes(p, ZT_MEM_GRADS, flat * es) : NULL;
  const int here = train && !lm->cfg.optim_offloaded;
  mm->optim_state = here ? zt_memplan_floats(p, ZT_MEM_OPTIM, 2 * part) : NULL;
  mm->master = here && lm->cfg.master_weights ? zt_memplan_floats(p, ZT_MEM_OPTIM, part) : NULL;
  const int P = zt_usp_on(&lm->usp) ? lm->usp.size : 1; /* DeepSpeed-Ulysses: T is this rank's share of T P */
  if (P > 1) { /* the all-to-all's work space, shared by the layers (their plans point into it) */
    const size_t A = (size_t)lm->bcfg.NH * lm->bcfg.HD;
    lm->usp.send = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * 3 * A * es);
    lm->usp.recv = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * 3 * A * es);
    lm->usp.qkv_local = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * 3 * A * es);
    lm->usp.dqkv_heads = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * 3 * A * es);
    lm->usp.dctx_heads = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * A * es);
  }
  zt_stack_plan(&lm->stack, p);
  if (lm->enc_dec) {
    zt_stack_plan(&lm->dec, p);
    /* the encoder's final layernorm where this stage ends the encoder; the cross-attention's memory and its gradient
     * where this stage has decoder layers */
    const int sp = zt_tp_sp(&lm->tp), lnf = lm->has_enc_lnf, dec = lm->dec.nlayers > 0;
    lm->enc_out = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, lnf * N * C * es);
    lm->enc_mean = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, lnf * N);
    lm->enc_rstd = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, lnf * N);
    lm->enc_full = sp && dec ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * C * es) : NULL;
    lm->denc_full = dec ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * C * es) : NULL;
    lm->denc = sp || !dec ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es) : lm->denc_full;
    lm->ddec = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (size_t)zt_tp_local_rows(&lm->tp, (int)NH) * C * es);
    lm->dec_pos_buf = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NH * sizeof(int32_t));
    lm->dec_tokens_dev = be->host_visible ? NULL : zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NH * sizeof(int32_t));
  }
  /* with MoE layers on several stages the layers' summed aux losses travel with the hidden state (as Megatron-
   * DeepSpeed's pipelined MoE layers pass their aggregated moe loss on): one fp32 value after it in each set */
  const int aux = lm->pp > 1 && zt_moe_on(lm->cfg.moe);
  lm->aux_in = aux ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 1) : NULL;
  lm->aux_out = aux ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 1) : NULL;
  lm->aux_dgrad = aux ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 1) : NULL;
  /* an encoder-decoder's stages exchange both streams (language_model.h) */
  const size_t Nd = lm->enc_dec ? (size_t)zt_tp_local_rows(&lm->tp, (int)NH) : 0;
  mm->stage_bytes = (N + Nd) * C * es + (aux ? 64 : 0);
  mm->stash = mm->pp_buffers > 0 ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (size_t)mm->pp_buffers * mm->stage_bytes)
                                 : NULL;
  const size_t head = lm->last ? 1 : 0; /* the final layernorm, logits and loss live on the last stage */
  const size_t vocab_head = lm->cfg.no_output_layer ? 0 : head;
  const size_t NL = (size_t)zt_tp_local_rows(&lm->tp, (int)NH); /* the final layernorm's rows (this rank's) */
  lm->lnf = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, head * NL * C * es);
  lm->lnf_mean = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NL);
  lm->lnf_rstd = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, head * NL);
  lm->logits = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, vocab_head * NH * V * es);
  lm->losses = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, vocab_head * NH);
  lm->lse = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, vocab_head * NH);
  lm->dloss = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, vocab_head * NH);
  lm->dres = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, N * C * es);
  /* the rotary embedding's cosines and sines of positions 0 .. T - 1 of the whole sequence (filled by zt_lm_bind) */
  lm->bcfg.rope_cs = lm->bcfg.rot ? zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, (size_t)T * P * lm->bcfg.rot) : NULL;
  lm->bcfg.rope_rows = lm->bcfg.rot ? T * P : 0;
  /* --apply-layernorm-1p: weight + 1 of the norm at hand, and the ones it adds (filled by zt_lm_bind) */
  if (lm->bcfg.ln_1p) {
    lm->ln1p.w = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, C * es);
    lm->ln1p.ones = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, C * es);
    lm->bcfg.ln1p = &lm->ln1p;
  }
  lm->pos_buf = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
  if (!be->host_visible) { /* the ids and masks of the batch, staged onto the device */
    lm->tokens_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
    lm->targets_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NH * sizeof(int32_t));
    lm->key_start_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * P * sizeof(int32_t)); /* the whole rows */
    lm->padding_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF);
    if (lm->cfg.num_tokentypes > 0) lm->types_dev = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NF * sizeof(int32_t));
  }
  if (zt_tp_on(&lm->tp)) lm->ce_buf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, 3 * NH);
  if (zt_tp_sp(&lm->tp)) { /* the largest sequence's tokens (an encoder-decoder's decoder may be the longer) */
    const size_t NG = NH > NF ? NH : NF;
    lm->tp.gather = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NG * C * es);
    lm->tp.partial = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NG * C * es);
    mm->sp_buf = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, mm->sp_numel);
  }
}

void zt_lm_bind(zt_lm *lm) {
  zt_model *mm = lm->model;
  const zt_param_table *t = lm->table;
  const size_t es = zt_dtype_size(mm->dt);
  /* the backward accumulates into the fp32 gradients, or into a half dtype's per-micro-batch buffer */
  void *gbind = mm->grads_dt ? mm->grads_dt : (void *)mm->grads;
  lm->gbind = gbind;
  zt_stack_bind(&lm->stack, t, mm->params, gbind, es);
  if (lm->enc_dec) zt_stack_bind(&lm->dec, t, mm->params, gbind, es);
  if (lm->has_enc_lnf) {
    lm->enc_lnf_w = zt_param_addr(t, mm->params, es, ZT_LM_ENC_PREFIX, "final_layernorm.weight");
    lm->enc_lnf_b = zt_param_addr_if(t, mm->params, es, ZT_LM_ENC_PREFIX, "final_layernorm.bias");
    lm->denc_lnf_w = zt_param_addr(t, gbind, es, ZT_LM_ENC_PREFIX, "final_layernorm.weight");
    lm->denc_lnf_b = zt_param_addr_if(t, gbind, es, ZT_LM_ENC_PREFIX, "final_layernorm.bias");
  }
  if (lm->first) zt_embedding_bind(&lm->emb, t, ZT_LM_EMB_PREFIX, mm->params, gbind, es);
  lm->emb.tp = &lm->tp;
  lm->emb.v0 = lm->v0;
  lm->dlnf = top_stack(lm)->scratch.dln;
  const size_t n0 = (size_t)zt_tp_local_rows(&lm->tp, lm->B * lm->T_plan) * lm->cfg.hidden_size;
  mm->stage_in[0] = (zt_stage_tensor){zt_stack_input(&lm->stack), n0, mm->dt};
  mm->stage_out[0] = (zt_stage_tensor){zt_stack_output(&lm->stack), n0, mm->dt};
  mm->stage_grad[0] = (zt_stage_tensor){lm->dres, n0, mm->dt};
  if (lm->enc_dec) { /* the encoder's stream (out: the encoder's output from the stage that ends it) and the
                      * decoder's; a stage without layers of a stream passes it on (its stack's input is its output) */
    const size_t n1 = (size_t)zt_tp_local_rows(&lm->tp, lm->B * lm->Td) * lm->cfg.hidden_size;
    mm->n_stage = 2;
    if (lm->has_enc_lnf) mm->stage_out[0].buf = lm->enc_out;
    mm->stage_in[1] = (zt_stage_tensor){zt_stack_input(&lm->dec), n1, mm->dt};
    mm->stage_out[1] = (zt_stage_tensor){zt_stack_output(&lm->dec), n1, mm->dt};
    mm->stage_grad[1] = (zt_stage_tensor){lm->ddec, n1, mm->dt};
  }
  if (lm->aux_in) { /* the MoE aux losses' running sum; its gradient is applied on each stage (aux_grad), the value
                     * sent back with the input gradient is not read */
    mm->n_stage = 2;
    mm->stage_in[1] = (zt_stage_tensor){lm->aux_in, 1, ZT_DTYPE_FP32};
    mm->stage_out[1] = (zt_stage_tensor){lm->aux_out, 1, ZT_DTYPE_FP32};
    mm->stage_grad[1] = (zt_stage_tensor){lm->aux_dgrad, 1, ZT_DTYPE_FP32};
  }
  const size_t NF = (size_t)lm->B * lm->T_plan, NH = lm->enc_dec ? (size_t)lm->B * lm->Td : NF;
  lm->h_losses = zt_malloc(NH * sizeof(float), "model losses");
  lm->h_dloss = zt_malloc(NH * sizeof(float), "model loss gradients");
  lm->h_mask = zt_malloc(NH * sizeof(float), "model loss mask");
  lm->h_pos = zt_malloc(NF * sizeof(int32_t), "model positions");
  lm->h_slice = zt_usp_on(&lm->usp) ? zt_malloc(4 * NF * sizeof(int32_t), "model sequence share") : NULL;
  lm->h_whole = zt_usp_on(&lm->usp) ? zt_malloc(3 * NF * lm->usp.size * sizeof(float), "model whole losses") : NULL;
  lm->h_dec_pos = lm->enc_dec ? zt_malloc(NH * sizeof(int32_t), "model decoder positions") : NULL;
  if (lm->bcfg.ln1p) {
    const int C = lm->cfg.hidden_size;
    const size_t es = zt_dtype_size(mm->dt);
    float *ones = zt_malloc(C * sizeof(float), "LayerNorm-1p ones");
    void *half = zt_malloc(C * es, "LayerNorm-1p ones");
    for (int c = 0; c < C; c++) ones[c] = 1.0f;
    zt_convert(half, mm->dt, ones, ZT_DTYPE_FP32, (size_t)C);
    mm->be->from_host((void *)lm->ln1p.ones, half, C * es);
    free(ones), free(half);
  }
  if (lm->bcfg.rope_cs) {
    const size_t n = (size_t)lm->bcfg.rope_rows * lm->bcfg.rot;
    float *cs = zt_malloc(n * sizeof(float), "rotary embedding table");
    zt_rope_table(cs, 0, lm->bcfg.rope_rows, lm->bcfg.rot, lm->cfg.rope_theta);
    mm->be->from_host((float *)lm->bcfg.rope_cs, cs, n * sizeof(float));
    free(cs);
  }
  if (!lm->last) return;
  const char *last = lm->enc_dec ? ZT_LM_DEC_PREFIX : ZT_LM_ENC_PREFIX;
  lm->lnf_w = zt_param_addr(t, mm->params, es, last, "final_layernorm.weight");
  lm->lnf_b = zt_param_addr_if(t, mm->params, es, last, "final_layernorm.bias");
  lm->dlnf_w = zt_param_addr(t, gbind, es, last, "final_layernorm.weight");
  lm->dlnf_b = zt_param_addr_if(t, gbind, es, last, "final_layernorm.bias");
  if (lm->cfg.no_output_layer) return;
  const char *out = lm->cfg.untie_embeddings ? "language_model.output_layer.weight"
                    : lm->first              ? ZT_WORD_EMBEDDING
                                             : ZT_SHARED_EMBEDDING;
  const size_t off = t->params[zt_param_table_find(t, out)].offset;
  lm->out_w = (char *)mm->params + off * es;
  lm->dout_w = gbind ? (char *)gbind + off * es : NULL;
}

void zt_lm_free_host(zt_lm *lm) {
  free(lm->h_losses), free(lm->h_dloss), free(lm->h_mask), free(lm->h_pos), free(lm->h_dec_pos), free(lm->h_slice);
  free(lm->h_whole);
  lm->h_losses = lm->h_dloss = lm->h_mask = lm->h_whole = NULL;
  lm->h_pos = lm->h_dec_pos = lm->h_slice = NULL;
}

void zt_lm_init_range(zt_lm *lm, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt) {
  /* with pipeline stages, or only this rank's experts: draws keyed by the one-stage model's parameter indices */
  const int keyed = lm->pp > 1 || (lm->cfg.moe && lm->cfg.moe->local_experts);
  zt_param_table full;
  if (keyed) zt_lm_one_stage_table(&lm->cfg, lm->tp.size, lm->register_head, &full);
  zt_model_init_params(lm->model, keyed ? &full : NULL, seed, lo, hi, value_dt);
  if (keyed) zt_param_table_free(&full);
}

/* ---- forward ------------------------------------------------------------------------------------------------ */

void zt_lm_set_seq_length(zt_lm *lm, int T) {
  zt_check(!lm->enc_dec || T == lm->T_plan, "internal error", "model: an encoder-decoder at a sequence length of %d, "
           "planned for %d", T, lm->T_plan);
  zt_check(T >= 1 && T <= lm->T_plan, "model", "a sequence length of %d is outside 1..%d (the planned --seq-length)", T,
           lm->T_plan);
  zt_check(!zt_usp_on(&lm->usp) || T == lm->T_plan, "internal error", "model: DeepSpeed-Ulysses at a sequence length "
           "of %d, planned for %d per rank", T, lm->T_plan);
  zt_check(!zt_tp_sp(&lm->tp) || T % lm->tp.size == 0, "model", "a sequence length of %d does not split over %d "
           "tensor-parallel ranks (--sequence-parallel)", T, lm->tp.size);
  zt_check(!(lm->cfg.partition_activations && zt_tp_on(&lm->tp)) ||
               ((size_t)lm->B * T * lm->cfg.hidden_size) % (size_t)lm->tp.size == 0,
           "model", "partitioned activations of %d x %d x %d elements do not split over %d tensor-parallel ranks", lm->B,
           T, lm->cfg.hidden_size, lm->tp.size);
  lm->T = T;
  zt_model *mm = lm->model;
  const size_t n = (size_t)zt_tp_local_rows(&lm->tp, lm->B * T) * lm->cfg.hidden_size;
  mm->stage_in[0].n = mm->stage_out[0].n = mm->stage_grad[0].n = n;
}

/* DeepSpeed-Ulysses: this rank's share of every row of a whole [B, T P] batch (Megatron-DeepSpeed's get_batch slices
 * tokens, positions and labels the same way; FPDT_InputConstruct deals FPDT's chunks), staged onto the backend; the
 * loss mask's share goes to h_mask. */
static zt_pass stage_share(zt_lm *lm, const zt_batch *b, const zt_pass *in) {
  const zt_backend *be = lm->model->be;
  const zt_usp *u = &lm->usp;
  const int P = u->size, Tl = lm->T_plan, Tf = Tl * P, B = lm->B;
  zt_check(b->T == Tf && in->T == Tf && !b->padding && !b->dec_tokens, "internal error", "DeepSpeed-Ulysses over %d "
           "ranks: a batch of %d tokens per row (pass of %d)%s, planned for %d per row without padding", P, b->T, in->T,
           b->padding || b->dec_tokens ? " with padding or decoder tokens" : "", Tf);
  const size_t NF = (size_t)B * Tl;
  int32_t *h[4];
  const int32_t *src[4] = {b->tokens, b->labels, b->positions, b->token_types};
  for (int k = 0; k < 4; k++) {
    h[k] = lm->h_slice + k * NF;
    if (src[k])
      for (int r = 0; r < B; r++)
        for (int t = 0; t < Tl; t += u->chunk)
          memcpy(h[k] + (size_t)r * Tl + t, src[k] + (size_t)r * Tf + zt_usp_position(u, t),
                 u->chunk * sizeof(int32_t));
  }
  if (!b->positions) /* the default positions: the index in the whole sequence */
    for (int r = 0; r < B; r++)
      for (int t = 0; t < Tl; t++) h[2][r * Tl + t] = zt_usp_position(u, t);
  lm->tokens = zt_backend_stage_in(be, lm->tokens_dev, h[0], NF * sizeof(int32_t));
  lm->targets = zt_backend_stage_in(be, lm->targets_dev, h[1], NF * sizeof(int32_t));
  lm->positions = zt_backend_stage_in(be, lm->pos_buf, h[2], NF * sizeof(int32_t));
  lm->types = NULL;
  zt_pass pass = *in;
  pass.T = Tl;
  pass.seq_off = zt_usp_position(u, 0);
  pass.seq_total = Tf;
  pass.seq_chunk = u->chunk;
  /* the attention sees whole rows: the packed documents' starts of every position */
  pass.key_start = zt_backend_stage_in(be, lm->key_start_dev, b->key_start, (size_t)B * Tf * sizeof(int32_t));
  pass.key_padding = NULL;
  float *whole_mask = lm->h_whole + (size_t)B * Tf; /* the loss's divisor is its sum (zt_lm_output_loss) */
  for (int r = 0; r < B; r++) {
    for (int t = 0; t < Tf; t++) whole_mask[r * Tf + t] = b->loss_mask ? b->loss_mask[(size_t)r * Tf + t] : 1.0f;
    for (int t = 0; t < Tl; t++) lm->h_mask[r * Tl + t] = whole_mask[r * Tf + zt_usp_position(u, t)];
  }
  lm->pass = pass;
  return pass;
}

zt_pass zt_lm_stage_batch(zt_lm *lm, const zt_batch *b, const zt_pass *in) {
  if (zt_usp_on(&lm->usp)) return stage_share(lm, b, in);
  const zt_backend *be = lm->model->be;
  zt_check(b->B == lm->B && b->T <= lm->T_plan && b->T == in->T, "model", "batch %dx%d (pass of %d tokens) differs "
           "from the planned %dx%d", b->B, b->T, in->T, lm->B, lm->T_plan);
  if (b->T != lm->T) zt_lm_set_seq_length(lm, b->T);
  const size_t NF = (size_t)lm->B * lm->T;
  zt_pass pass = *in;
  int32_t *pos = NULL;
  if (!b->positions) {
    pos = zt_backend_host_view(be, lm->pos_buf, lm->h_pos);
    for (int r = 0; r < lm->B; r++)
      for (int t = 0; t < lm->T; t++) pos[r * lm->T + t] = t;
    zt_backend_commit(be, lm->pos_buf, pos, NF * sizeof(int32_t));
  }
  lm->positions = b->positions ? zt_backend_stage_in(be, lm->pos_buf, b->positions, NF * sizeof(int32_t))
                               : lm->pos_buf;
  lm->tokens = zt_backend_stage_in(be, lm->tokens_dev, b->tokens, NF * sizeof(int32_t));
  const size_t NH = (size_t)lm->B * head_T(lm); /* the head's targets and loss mask */
  zt_check(!lm->enc_dec || (b->dec_tokens && b->Td == lm->Td), "model", "an encoder-decoder batch needs %d decoder "
           "tokens per row, has %d", lm->Td, b->dec_tokens ? b->Td : 0);
  if (lm->enc_dec) {
    int32_t *dpos = zt_backend_host_view(be, lm->dec_pos_buf, lm->h_dec_pos);
    for (int r = 0; r < lm->B; r++)
      for (int t = 0; t < lm->Td; t++) dpos[r * lm->Td + t] = t; /* Megatron's t5_position_ids */
    zt_backend_commit(be, lm->dec_pos_buf, dpos, NH * sizeof(int32_t));
    lm->dec_tokens = zt_backend_stage_in(be, lm->dec_tokens_dev, b->dec_tokens, NH * sizeof(int32_t));
  }
  lm->targets = zt_backend_stage_in(be, lm->targets_dev, b->labels, NH * sizeof(int32_t));
  lm->types = lm->cfg.num_tokentypes > 0
                  ? zt_backend_stage_in(be, lm->types_dev, b->token_types, NF * sizeof(int32_t))
                  : NULL;
  zt_check(lm->cfg.num_tokentypes == 0 || b->token_types, "internal error", "model: %d token types, none in the "
           "batch", lm->cfg.num_tokentypes);
  pass.key_start = zt_backend_stage_in(be, lm->key_start_dev, b->key_start, NF * sizeof(int32_t));
  pass.key_padding = zt_backend_stage_in(be, lm->padding_dev, b->padding, NF);
  for (size_t n = 0; n < NH; n++) lm->h_mask[n] = b->loss_mask ? b->loss_mask[n] : 1.0f;
  lm->pass = pass;
  /* the decoder: causal over its own tokens (its padding trails the tokens the loss sees) */
  lm->dec_pass = (zt_pass){.B = lm->B, .T = lm->Td, .first_sample = pass.first_sample, .seed = pass.seed,
                           .training = pass.training};
  return pass;
}

/* What the decoder's cross-attention reads: the encoder's output, its key padding, where its gradient goes. */
static zt_cross_input cross_input(const zt_lm *lm) {
  return (zt_cross_input){.x = lm->enc_mem, .Tk = lm->T, .padding = lm->pass.key_padding, .grad = lm->denc_full};
}

/* An encoder-decoder after this stage's encoder layers (which started at t_enc, for the flops profiler): the
 * encoder's final layernorm where the stage ends the encoder, then the decoder's layers where it has any, reading the
 * encoder output computed here or received from the encoder's last stage (all-gathered with --sequence-parallel). */
static void decode(zt_lm *lm, double t_enc) {
  zt_model *mm = lm->model;
  const int C = lm->cfg.hidden_size, N = zt_tp_local_rows(&lm->tp, lm->B * lm->T);
  double *ft = lm->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  if (lm->has_enc_lnf) {
    zt_model_param_event(mm, ZT_PARAM_FETCH, unit_enc_lnf(lm));
    zt_norm_forward(mm->be, mm->dt, lm->cfg.rmsnorm, lm->bcfg.ln1p, lm->enc_out, lm->enc_mean, lm->enc_rstd,
                    zt_stack_output(&lm->stack), lm->enc_lnf_w, lm->enc_lnf_b, N, C, lm->cfg.ln_eps);
    zt_model_param_event(mm, ZT_PARAM_RELEASE, unit_enc_lnf(lm));
    if (ft) t1 = zt_now(), ft[ZT_LM_FT_FINAL_LN] += t1 - t0, ft[ZT_LM_FT_ENCODER] += t1 - t_enc, t0 = t1;
  }
  if (lm->dec.nlayers == 0) return; /* an encoder stage: the decoder's stream passes on */
  const void *enc = lm->has_enc_lnf ? lm->enc_out : zt_stack_output(&lm->stack);
  lm->enc_mem = enc;
  if (zt_tp_sp(&lm->tp)) {
    zt_allgather(lm->tp.group, mm->dt, enc, (size_t)N * C, lm->enc_full);
    lm->enc_mem = lm->enc_full;
  }
  const zt_cross_input mem = cross_input(lm);
  lm->aux += zt_stack_forward(&lm->dec, 0, &lm->dec_pass, &mem);
  if (ft) ft[ZT_LM_FT_DECODER] += zt_now() - t0;
}

int zt_lm_encode(zt_lm *lm, int vchunk, const zt_pass *pass) {
  zt_model *mm = lm->model;
  zt_check(vchunk >= 0 && vchunk < lm->vpp, "internal error", "model: virtual chunk %d of %d", vchunk, lm->vpp);
  double *ft = lm->fwd_time, t0 = ft ? zt_now() : 0.0, t1 = t0, t2 = 0.0;
  if (lm->first && vchunk == 0) { /* later stages (and chunks) find their input in the stack's input */
    zt_model_param_event(mm, ZT_PARAM_FETCH, zt_lm_unit_emb(lm));
    zt_embedding_layer_forward(&lm->emb, zt_stack_input(&lm->stack), lm->tokens, lm->positions, lm->types,
                               lm->cfg.hidden_dropout, 0, pass);
    if (lm->enc_dec) /* Megatron calls the one embedding for the decoder too (its own dropout site) */
      zt_embedding_layer_forward(&lm->emb, zt_stack_input(&lm->dec), lm->dec_tokens, lm->dec_pos_buf, NULL,
                                 lm->cfg.hidden_dropout, lm->cfg.num_layers, &lm->dec_pass);
    zt_model_param_event(mm, ZT_PARAM_RELEASE, zt_lm_unit_emb(lm));
  }
  if (ft) ft[ZT_LM_FT_EMB] += (t2 = zt_now()) - t1, t1 = t2;
  lm->aux = zt_stack_forward(&lm->stack, vchunk, pass, NULL);
  if (lm->enc_dec) decode(lm, t1);
  if (lm->aux_in) { /* pipelined MoE: the sum of the layers' aux losses so far, on to the next stage */
    float before = 0.0f;
    if (!(lm->first && vchunk == 0)) mm->be->to_host(&before, lm->aux_in, sizeof before);
    lm->aux += before;
    if (!(lm->last && vchunk == lm->vpp - 1)) mm->be->from_host(lm->aux_out, &lm->aux, sizeof lm->aux);
  }
  if (!lm->last || vchunk != lm->vpp - 1) return 0; /* the output goes to the next stage */
  if (ft) t2 = zt_now();
  const int N = zt_tp_local_rows(&lm->tp, lm->B * head_T(lm));
  zt_lm_head_params(lm, ZT_PARAM_FETCH);
  zt_norm_forward(mm->be, mm->dt, lm->cfg.rmsnorm, lm->bcfg.ln1p, lm->lnf, lm->lnf_mean, lm->lnf_rstd,
                  zt_stack_output(top_stack(lm)), lm->lnf_w, lm->lnf_b, N, lm->cfg.hidden_size, lm->cfg.ln_eps);
  if (ft) {
    double t3 = zt_now();
    if (lm->enc_dec) { /* the decoder's final layernorm (the encoder's was timed by decode) */
      ft[ZT_LM_FT_DEC_FINAL_LN] += t3 - t2;
      ft[ZT_LM_FT_DECODER] += t3 - t2;
    } else {
      ft[ZT_LM_FT_FINAL_LN] += t3 - t2;
      ft[ZT_LM_FT_ENCODER] += t3 - t1;
    }
    ft[ZT_LM_FT_LM] += t3 - t0;
    ft[ZT_LM_FT_MODEL] += t3 - t0;
  }
  return 1;
}

/* Megatron's _VocabParallelCrossEntropy over logits [NF, V] (this rank's vocabulary columns): the row maxima,
 * then the sums of exponentials and the target logits, all-reduced over the tensor-parallel group; the full
 * logits are never gathered. */
static void vocab_parallel_cross_entropy(zt_lm *lm, int NF) {
  const zt_backend *be = lm->model->be;
  float *rowmax = lm->ce_buf, *sums = lm->ce_buf + NF; /* sums: [sumexp NF | target logit NF] */
  be->cross_entropy_vp_max(lm->model->dt, rowmax, lm->logits, NF, lm->V);
  zt_allreduce_max(lm->tp.group, ZT_DTYPE_FP32, rowmax, (size_t)NF);
  be->cross_entropy_vp_sums(lm->model->dt, sums, sums + NF, lm->logits, rowmax, lm->targets, NF, lm->V, lm->v0);
  zt_allreduce_sum(lm->tp.group, ZT_DTYPE_FP32, sums, 2 * (size_t)NF);
  be->cross_entropy_vp_finish(lm->losses, lm->lse, rowmax, sums, sums + NF, NF);
}

float zt_lm_output_loss(zt_lm *lm, const void *h, const void *bias) {
  const zt_backend *be = lm->model->be;
  const zt_dtype dt = lm->model->dt;
  const int C = lm->cfg.hidden_size, NF = lm->B * head_T(lm), N = zt_tp_local_rows(&lm->tp, NF);
  double *ft = lm->fwd_time, t0 = ft ? zt_now() : 0.0;
  /* the output layer is column-parallel over the vocabulary: every rank scores all tokens on its slice */
  be->matmul_forward(dt, lm->logits, NULL, zt_tp_gather(&lm->tp, h, N, C), lm->out_w, bias, NF, C, lm->V);
  if (zt_tp_on(&lm->tp)) vocab_parallel_cross_entropy(lm, NF);
  else be->cross_entropy_forward(dt, lm->losses, lm->lse, lm->logits, lm->targets, NF, lm->V);
  const float *losses = lm->losses;
  if (!be->host_visible) { /* the one synchronization of the forward */
    be->to_host(lm->h_losses, lm->losses, (size_t)NF * sizeof(float));
    losses = lm->h_losses;
  }
  double num = 0.0, den = 0.0;
  const float *mask = lm->h_mask;
  int n_all = NF;
  if (zt_usp_on(&lm->usp)) { /* Ulysses: the whole micro batch's losses on every rank, in its order (Megatron-DeepSpeed
                              * gathers the losses over the sequence-parallel group before its masked mean) */
    const int P = lm->usp.size, B = lm->B, Tl = lm->T, c = lm->usp.chunk;
    float *whole = lm->h_whole, *gathered = lm->h_whole + 2 * (size_t)B * Tl * P;
    zt_allgather_f32(lm->usp.group, losses, (size_t)NF, gathered);
    for (int r = 0; r < P; r++) /* rank r's block [B, Tl]: chunk k holds positions (k P + r) c .. of each row */
      for (int b = 0; b < B; b++)
        for (int k = 0; k < Tl / c; k++)
          memcpy(whole + (size_t)b * Tl * P + ((size_t)k * P + r) * c, gathered + ((size_t)r * B + b) * Tl + k * c,
                 (size_t)c * sizeof(float));
    losses = whole;
    mask = lm->h_whole + (size_t)B * Tl * P;
    n_all = NF * P;
  }
  for (int n = 0; n < n_all; n++) {
    double w = mask[n];
    num += w * losses[n];
    den += w;
  }
  if (ft) {
    const double dt_s = zt_now() - t0;
    ft[ZT_LM_FT_LOGITS] += dt_s;
    ft[ZT_LM_FT_MODEL] += dt_s;
  }
  return den > 0 ? (float)(num / den) : 0.0f;
}

void zt_lm_output_loss_backward(zt_lm *lm, float grad_scale, const void *h, void *dbias, void *dh) {
  const zt_backend *be = lm->model->be;
  const zt_dtype dt = lm->model->dt;
  const int C = lm->cfg.hidden_size, NF = lm->B * head_T(lm), N = zt_tp_local_rows(&lm->tp, NF), V = lm->V;
  /* Ulysses: this rank's tokens' share of the whole micro batch's loss, divided by the whole batch's mask sum */
  const int usp = zt_usp_on(&lm->usp), n_mask = usp ? NF * lm->usp.size : NF;
  const float *mask = usp ? lm->h_whole + (size_t)n_mask : lm->h_mask;
  double den = 0.0;
  for (int n = 0; n < n_mask; n++) den += mask[n];
  float *dloss = zt_backend_host_view(be, lm->dloss, lm->h_dloss);
  for (int n = 0; n < NF; n++) dloss[n] = den > 0 ? (float)(lm->h_mask[n] * grad_scale / den) : 0.0f;
  zt_backend_commit(be, lm->dloss, dloss, (size_t)NF * sizeof(float));
  if (!zt_tp_on(&lm->tp)) {
    be->cross_entropy_backward(dt, lm->logits, lm->logits, lm->lse, lm->targets, lm->dloss, N, V);
    if (lm->kd) zt_kd_backward(lm->kd, dt, lm->logits, grad_scale);
    zt_linear_backward(be, dt, dh, lm->dout_w, dbias, lm->logits, h, lm->out_w, NULL, N, C, V);
  } else { /* the input gradient of the column-parallel output layer is partial over the vocabulary slices */
    be->cross_entropy_vp_backward(dt, lm->logits, lm->logits, lm->lse, lm->targets, lm->dloss, NF, V, lm->v0);
    if (lm->kd) zt_kd_backward(lm->kd, dt, lm->logits, grad_scale); /* the slice's KD gradient */
    zt_linear_backward(be, dt, zt_tp_partial_buffer(&lm->tp, dh), lm->dout_w, dbias, lm->logits,
                           zt_tp_gather(&lm->tp, h, N, C), lm->out_w, NULL, NF, C, V);
    zt_tp_reduce(&lm->tp, dh, NULL, N, C);
  }
}

void zt_lm_final_ln_backward(zt_lm *lm) {
  const zt_backend *be = lm->model->be;
  const int N = zt_tp_local_rows(&lm->tp, lm->B * head_T(lm));
  zt_norm_backward(be, lm->model->dt, lm->cfg.rmsnorm, lm->bcfg.ln1p, top_dres(lm), lm->dlnf_w, lm->dlnf_b, lm->dlnf,
                   zt_stack_output(top_stack(lm)), lm->lnf_w, lm->lnf_mean, lm->lnf_rstd, N, lm->cfg.hidden_size);
}

/* An encoder-decoder's backward down to the encoder's output (dres then holds d(this stage's encoder stream input)):
 * the decoder's layers here, their cross-attention gradients summed into denc (one reduction over the
 * tensor-parallel ranks for all of them), added to the d(encoder output) the next stage sent (a pipeline's decoder
 * stage); where the stage ends the encoder, the final layernorm's backward. */
static void decode_backward(zt_lm *lm) {
  zt_model *mm = lm->model;
  const zt_backend *be = mm->be;
  const zt_dtype dt = mm->dt;
  const int C = lm->cfg.hidden_size, NF = lm->B * lm->T, N = zt_tp_local_rows(&lm->tp, NF);
  const size_t bytes = (size_t)N * C * zt_dtype_size(dt);
  if (lm->dec.nlayers > 0) {
    be->memset(lm->denc_full, 0, (size_t)NF * C * zt_dtype_size(dt));
    const zt_cross_input mem = cross_input(lm);
    zt_stack_backward(&lm->dec, &lm->dec_pass, lm->ddec, &mem, lm->aux_grad);
    if (zt_tp_sp(&lm->tp)) zt_reduce_scatter_sum(lm->tp.group, dt, lm->denc_full, (size_t)N * C, lm->denc);
    else if (zt_tp_on(&lm->tp)) zt_allreduce_sum(lm->tp.group, dt, lm->denc_full, (size_t)NF * C);
    if (!lm->has_enc_lnf) { /* a pipeline's decoder stage: the encoder output's gradient goes on to the previous */
      if (lm->last) be->copy(lm->dres, lm->denc, bytes);
      else be->accumulate(dt, lm->dres, lm->denc, (size_t)N * C);
    }
  } else if (lm->has_enc_lnf) { /* the encoder's last stage: the decoder stages' d(encoder output), received */
    be->copy(lm->denc, lm->dres, bytes);
  }
  if (!lm->has_enc_lnf) return;
  zt_model_param_event(mm, ZT_PARAM_FETCH, unit_enc_lnf(lm));
  zt_norm_backward(be, dt, lm->cfg.rmsnorm, lm->bcfg.ln1p, lm->dres, lm->denc_lnf_w, lm->denc_lnf_b, lm->denc,
                   zt_stack_output(&lm->stack), lm->enc_lnf_w, lm->enc_mean, lm->enc_rstd, N, C);
  zt_model_param_event(mm, ZT_PARAM_RELEASE, unit_enc_lnf(lm));
  zt_model_param_event(mm, ZT_PARAM_GRAD_READY, unit_enc_lnf(lm));
}

void zt_lm_backward(zt_lm *lm) {
  zt_check(!lm->cfg.forward_only, "internal error", "model: backward of a forward-only model");
  const int chunk = lm->stack.fwd_chunk;
  if (lm->enc_dec) decode_backward(lm);
  zt_stack_backward(&lm->stack, &lm->pass, lm->dres, NULL, lm->aux_grad);
  if (lm->first && chunk == 0) { /* reads no parameters */
    zt_embedding_layer_backward(&lm->emb, lm->dres, lm->tokens, lm->positions, lm->types, lm->cfg.hidden_dropout, 0,
                                &lm->pass);
    if (lm->enc_dec) /* ddec: d(the decoder's input), from this stage's decoder layers or passed back to it */
      zt_embedding_layer_backward(&lm->emb, lm->ddec, lm->dec_tokens, lm->dec_pos_buf, NULL, lm->cfg.hidden_dropout,
                                  lm->cfg.num_layers, &lm->dec_pass);
    zt_model_param_event(lm->model, ZT_PARAM_GRAD_READY, zt_lm_unit_emb(lm));
  }
}
