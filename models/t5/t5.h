/* T5 with Megatron-DeepSpeed's semantics (megatron/model/t5_model.py, pretrain_t5.py): the shared word and learned
 * absolute position embeddings; the encoder (bidirectional self-attention with the encoder's padding as the key mask,
 * its final layernorm); the decoder (causal self-attention, cross-attention "inter_attention" to the encoder's output
 * with the encoder's padding as the key mask, its final layernorm); T5LMHead: the output layer tied to the word
 * embeddings plus lm_head.bias (vocab-parallel); the loss is the loss-mask-weighted mean of the decoder's token losses
 * (pretrain_t5.py's loss_func), shown as "lm loss". --encoder-num-layers (= --num-layers) and --decoder-num-layers,
 * --seq-length (= --encoder-seq-length) and --decoder-seq-length. Built on the shared language model's
 * encoder-decoder mode (models/transformer/language_model.h), so tensor (with --sequence-parallel), pipeline (split
 * at --pipeline-model-parallel-split-rank) and data parallelism, ZeRO 1-3, mixed precision, recompute and both
 * backends apply unchanged. */
#ifndef ZT_T5_H
#define ZT_T5_H

#include <stdint.h>

#include "models/model.h"
#include "models/transformer/language_model.h"

/* The language model's configuration with bidirectional = 1 (the encoder), dec_layers and dec_seq_length set. */
typedef zt_lm_config zt_t5_config;

typedef struct {
  zt_t5_config cfg;
  zt_model model;            /* the engine's view */
  zt_param_table table;
  zt_memplan plan;
  zt_lm lm;
  void *hbias, *dhbias;      /* lm_head.bias: this rank's vocabulary slice */
  int owned;                 /* built by zt_t5_create: zt_model_free frees the struct too */
} zt_t5;

/* The engine's constructor (a zt_model_kind's build_model) and parameter count. */
zt_model *zt_t5_create(const zt_model_args *a, const zt_model_setup *s);
void zt_t5_count(const zt_model_args *a, int64_t *total, int64_t *largest);
zt_t5_config zt_t5_config_of(const zt_model_args *a, const zt_model_setup *s);

/* One-process use (tests, tools): build with the plan on the backend, free; initialize every parameter. */
void zt_t5_build(zt_t5 *m, const zt_t5_config *cfg, size_t mem_limit);
void zt_t5_free(zt_t5 *m);
void zt_t5_init_params(zt_t5 *m, uint64_t seed);
/* The one-process model's parameter table. */
void zt_t5_single_table(const zt_t5_config *cfg, zt_param_table *t);

#endif
