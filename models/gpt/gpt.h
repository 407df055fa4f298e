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
#include "models/transformer/kd.h"
#include "models/transformer/language_model.h"
#include "runtime/base/memplan.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"
#include "runtime/tensor/param_table.h"

/* GPT's configuration is the language model's (bidirectional 0, num_tokentypes 0). */
typedef zt_lm_config zt_gpt_config;

typedef struct {
  zt_gpt_config cfg;
  zt_model model;            /* the engine's view (models/model.h) */
  zt_param_table table;
  zt_memplan plan;
  zt_lm lm;                  /* embedding, layers, final layernorm, output layer and loss */
  float *params;             /* flat fp32 parameters in table order (NULL with a half dtype: model.params) */
  float *grads;              /* flat fp32 gradients (NULL when forward_only) */
  float *optim_state;        /* 2 x partition floats (Adam moments), owned by the optimizer */
  float *master;             /* partition fp32 master weights with cfg.master_weights, else NULL */
  void *logits;              /* [B, T, V] of the last forward (lm.logits) */
  int owned;                 /* built by zt_gpt_create: zt_model_free frees the struct too */
  int64_t moe_choices, moe_dropped; /* MoE: token choices of the training passes, and those the capacity dropped */
  zt_kd_state kd;            /* knowledge distillation (cfg.kd): the KD term's state */
} zt_gpt;

/* Model-level forward latency slots: the whole forward (GPTModel), language_model, embedding and its
 * word/position parts (consecutive), encoder, final_layernorm, output layer + cross-entropy. */
enum { ZT_GPT_FT_MODEL = ZT_LM_FT_MODEL, ZT_GPT_FT_LM = ZT_LM_FT_LM, ZT_GPT_FT_EMB = ZT_LM_FT_EMB,
       ZT_GPT_FT_WORD = ZT_LM_FT_WORD, ZT_GPT_FT_POS = ZT_LM_FT_POS, ZT_GPT_FT_ENCODER = ZT_LM_FT_ENCODER,
       ZT_GPT_FT_FINAL_LN = ZT_LM_FT_FINAL_LN, ZT_GPT_FT_LOGITS = ZT_LM_FT_LOGITS, ZT_GPT_FT_SLOTS = ZT_LM_FT_SLOTS };

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
 * stage with the loss, else 0. pass->B must equal the planned micro batch and pass->T be at most the planned
 * length (a shorter T runs on the first rows of the buffers: zt_lm_set_seq_length); pass->training enables dropout. */
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
