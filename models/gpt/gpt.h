/* The GPT model with Megatron semantics: word + learned absolute position embeddings, L pre-LN
 * layers (fused QKV, 4h GELU MLP), final LayerNorm, output layer tied to the word embeddings (or
 * separate with untie), cross-entropy over the padded vocabulary with a loss mask, full activation
 * recompute. Written once over the backend op table: the same model trains on the CPU and on a GPU.
 * Parameters, gradients, optimizer state and activations come from one memory plan on the backend.
 * Tensor parallelism (Megatron's): vocab-parallel embedding, output layer and cross-entropy, heads and MLP
 * columns split over the ranks, optionally --sequence-parallel; every rank of a tensor-parallel group holds
 * the slices of the matrices a one-process run draws, so the results do not depend on the layout.
 * The engine drives it through its zt_model (models/model.h); the functions below are GPT's own API for
 * one-process use (tests, tools). */
#ifndef ZT_GPT_H
#define ZT_GPT_H

#include <stdint.h>

#include "models/model.h"
#include "models/transformer/embedding.h"
#include "models/transformer/stack.h"
#include "models/transformer/transformer.h"
#include "runtime/base/memplan.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"
#include "runtime/tensor/param_table.h"

typedef struct {
  int num_layers, hidden_size, num_heads, ffn_hidden_size;
  int max_positions;
  int padded_vocab_size;     /* the output layer's width; includes Megatron's padding rows */
  float ln_eps, attn_dropout, hidden_dropout, init_std;
  int untie_embeddings;      /* 1: separate output_layer.weight */
  int recompute_full;        /* 1: keep only each layer's input; recompute the layer in backward */
  int partition_activations; /* with recompute and tensor parallelism (no sequence parallelism): each rank keeps
                                its 1/tp of every saved layer input, all-gathered before the layer's recompute
                                (DeepSpeed's activation_checkpointing.partition_activations) */
  int micro_batch, seq_length;
  int master_weights;        /* 1: plan fp32 master weights (mixed precision) in the optimizer-state region */
  int zero_partitions;       /* ZeRO: the flat buffers are padded to a multiple of this and the optimizer state
                                (and masters) hold one partition; 0 or 1: no partitioning */
  int optim_offloaded;       /* the optimizer state and masters live elsewhere (NVMe offload): none planned */
  /* tensor parallelism (tp_size 0 or 1: none): the tensor-parallel group, its size and this rank's place in
   * it; sequence_parallel: Megatron's --sequence-parallel (needs tp_size > 1) */
  const zt_group *tp_group;
  int tp_size, tp_rank, sequence_parallel;
  /* pipeline parallelism (pp_size 0 or 1: none): this stage holds layers [pp_rank L/pp, (pp_rank+1) L/pp), the
   * first stage the embeddings, the last the final layernorm, the output layer (tied: its own copy of the word
   * embeddings, "word_embeddings.weight", kept equal through the embedding group) and the loss; pp_group (for
   * the gradient norm) holds the stages of this rank's pipeline. With vpp > 1 virtual chunks (the interleaved
   * schedule) the stage holds vpp chunks of L/(pp vpp) layers, chunk c the layers [(c pp + pp_rank) L/(pp vpp),
   * ...) (zt_layout_stage_layers); the embeddings go with chunk 0 of the first stage, the head with chunk vpp-1
   * of the last. pp_buffers: stage-sized buffers the pipeline schedule keeps (stashed inputs, gradients). */
  int pp_size, pp_rank, vpp, pp_buffers;
  const zt_group *pp_group;
  /* where it runs: backend NULL is the CPU; dtype is the storage of parameters and activations (fp32 on the
   * CPU; fp32, bf16 or fp16 on a GPU, with fp32 gradient accumulation) */
  const zt_backend *backend;
  zt_dtype dtype;
  int forward_only;          /* a teacher or an evaluator: no gradients, no optimizer state, no backward */
} zt_gpt_config;

typedef struct {
  zt_gpt_config cfg;
  zt_model model;            /* the engine's view (models/model.h) */
  zt_block_config bcfg;
  zt_param_table table;
  zt_memplan plan;
  float *params;             /* flat fp32 parameters in table order (NULL with a half dtype: model.params) */
  float *grads;              /* flat fp32 gradients (NULL when forward_only) */
  float *optim_state;        /* 2 x partition floats (Adam moments), owned by the optimizer */
  float *master;             /* partition fp32 master weights with cfg.master_weights, else NULL */

  zt_embedding emb;
  zt_stack stack;            /* this stage's layers */
  void *lnf_w, *lnf_b, *dlnf_w, *dlnf_b;
  void *out_w, *dout_w;      /* = word embeddings when tied */

  zt_tp tp;                  /* tensor-parallel state shared by every layer (bcfg.tp points here) */
  float *ce_buf;             /* [3 B T] vocab-parallel cross-entropy reductions (tensor parallelism) */
  int nlayers, chunk_layers, vpp, first, last, pp;

  /* activations for micro batch B x T (with --sequence-parallel the residual stream, layernorm and
   * dropout tensors hold this rank's B x T / tp tokens) */
  int B, T;
  void *lnf;
  float *lnf_mean, *lnf_rstd;
  void *logits;              /* [B, T, V]; holds dlogits during backward */
  float *losses, *lse, *dloss; /* [B, T] */
  void *dres;                /* [B, T, C] residual-stream gradient */
  /* the batch on the backend: default positions, and where a device backend keeps the staged ids and masks */
  int32_t *pos_buf, *tokens_dev, *targets_dev, *key_start_dev;
  uint8_t *padding_dev;
  float *h_losses, *h_dloss, *h_mask; /* host [B, T] */
  int32_t *h_pos;
  /* inputs of the last forward, for backward (backend memory) */
  const int32_t *tokens, *positions, *targets;
  zt_pass pass;
  /* Flops profiler (runtime/profile/flops_profiler.h): NULL, or ZT_GPT_FT_SLOTS forward latencies of the
   * model-level modules followed by ZT_FT_SLOTS per layer. */
  double *fwd_time;
  int owned;                 /* built by zt_gpt_create: zt_model_free frees the struct too */
} zt_gpt;

/* Model-level forward latency slots: the whole forward (GPTModel), language_model, embedding and its
 * word/position parts (consecutive), encoder, final_layernorm, output layer + cross-entropy. */
enum { ZT_GPT_FT_MODEL, ZT_GPT_FT_LM, ZT_GPT_FT_EMB, ZT_GPT_FT_WORD, ZT_GPT_FT_POS, ZT_GPT_FT_ENCODER,
       ZT_GPT_FT_FINAL_LN, ZT_GPT_FT_LOGITS, ZT_GPT_FT_SLOTS };

/* The engine's constructor (a zt_model_kind's build_model): a GPT from the architecture flags and the engine's
 * setup, returned as the generic model (zt_model_free frees it). */
zt_model *zt_gpt_create(const zt_model_args *a, const zt_model_setup *s);
/* zt_gpt_count_params for the architecture flags. */
void zt_gpt_count(const zt_model_args *a, int64_t *total, int64_t *largest);

/* Registers parameters, sizes the memory plan on the backend (optimizer state: 2 floats per parameter), prints
 * it, refuses it if it does not fit in `mem_limit` bytes (0: the backend's free memory), allocates, binds. */
void zt_gpt_build(zt_gpt *m, const zt_gpt_config *cfg, size_t mem_limit);
void zt_gpt_free(zt_gpt *m);
/* Bytes of the whole plan at micro batch B (no allocation); by_kind (NULL, or ZT_MEM_KINDS entries) receives each
 * kind's. */
size_t zt_gpt_plan_bytes(const zt_gpt_config *cfg, int B, size_t *by_kind);
/* Initializes parameters: N(0, std), output projections N(0, std/sqrt(2L)), norms 1/0, biases 0. */
void zt_gpt_init_params(zt_gpt *m, uint64_t seed);
/* The same for the parameters that start in [lo, hi) of the flat buffer only (ZeRO-3 initializes unit by unit,
 * so the whole model never has to be resident). */
void zt_gpt_init_params_range(zt_gpt *m, uint64_t seed, size_t lo, size_t hi);

/* Forward over host tokens[B,T] (positions NULL: 0..T-1) with next-token targets[B,T] and loss_mask[B,T]
 * (NULL: all ones); pass->key_start (host, or NULL) packs documents. Returns sum(loss * mask) / sum(mask) on the
 * stage with the loss, else 0. pass->B/T must equal the planned shape; pass->training enables dropout. */
float zt_gpt_forward(zt_gpt *m, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                     const float *loss_mask, const zt_pass *pass);
/* The same for virtual chunk `chunk` of the stage (zt_gpt_forward is chunk 0). */
float zt_gpt_forward_chunk(zt_gpt *m, int chunk, const int32_t *tokens, const int32_t *positions,
                           const int32_t *targets, const float *loss_mask, const zt_pass *pass);
/* Backward of the last forward (its chunk); gradients accumulate into grads scaled by grad_scale (1/number of micro
 * batches for gradient accumulation). */
void zt_gpt_backward(zt_gpt *m, float grad_scale);

/* The parameter table of the whole model in one process (no tensor or pipeline parallelism): the names, shapes,
 * order and offsets zt_gpt_build gives such a model. */
void zt_gpt_single_table(const zt_gpt_config *cfg, zt_param_table *t);
/* Parameters of the whole model (every rank's, tied weights once, padded vocabulary included) and of its largest
 * module's own (DeepSpeed's largest layer): the ZeRO memory estimators' inputs. */
void zt_gpt_count_params(const zt_gpt_config *cfg, int64_t *total, int64_t *largest);

/* The flops profiler's module tree of this model (models/gpt/gpt_flops.c; one pipeline stage). */
zt_flops_profiler *zt_gpt_flops_profiler(const zt_gpt *g, const zt_flops_profiler_config *cfg);

/* Number of parameters on this rank (padded vocabulary included, as Megatron counts them; with tensor
 * parallelism this rank's slices: Megatron's "number of parameters on (tensor, pipeline) model parallel rank"). */
size_t zt_gpt_num_params(const zt_gpt *m);

#endif
