/* BERT with Megatron-DeepSpeed's semantics (megatron/model/bert_model.py): word, position and token-type
 * embeddings, a bidirectional encoder with the padding mask (pre-LN, or the LayerNorm output as the residual with
 * --apply-residual-connection-post-layernorm), the final LayerNorm; the masked-LM head (lm_head.dense -> exact erf
 * GELU -> lm_head.layernorm -> the output layer tied to the word embeddings + lm_head.bias, vocab-parallel) with
 * the loss over the masked positions; with the binary head (the default; off with --bert-no-binary-head) the
 * pooler (language_model.pooler.dense + tanh on the first token) and the sentence-order head binary_head [2, C]
 * with its cross-entropy over the samples. Loss = lm loss + sop loss. Built on the shared language model
 * (models/transformer/language_model.h), so every layout GPT trains in (TP with sequence parallelism, PP with
 * virtual chunks, DP, ZeRO 1-3, mixed precision, recompute) and both backends apply unchanged.
 *
 * Fine-tuned on a task (finetune_bert, cfg.cls_classes > 0): Megatron's Classification (GLUE) or MultipleChoice
 * (RACE) instead of the pretraining heads: the pooler, dropout (--hidden-dropout) and classification_head
 * [cls_classes, C] (multichoice_head [1, C] for RACE), no output layer; the logits of cls_choices consecutive rows
 * form one sample's scores, whose cross-entropy against the sample's label (zt_batch.sentence_labels) is "lm loss"
 * (Megatron's cross_entropy_loss_func), the mean over the samples; with cls_regression (STS-B) one output a sample
 * and the mean squared error against the label (mse_loss_func). Each forward of the last stage leaves the samples'
 * predicted classes (argmax, first of ties as torch.argmax) in pred. */
#ifndef ZT_BERT_H
#define ZT_BERT_H

#include <stdint.h>

#include "models/model.h"
#include "models/transformer/language_model.h"

/* The language model's configuration with bidirectional = 1, and for the binary head num_tokentypes = 2 and
 * add_pooler = 1 (zt_bert_config_of sets them from the flags). */
typedef zt_lm_config zt_bert_config;

typedef struct {
  zt_bert_config cfg;
  zt_model model;            /* the engine's view */
  zt_param_table table;
  zt_memplan plan;
  zt_lm lm;
  int binary_head;
  int cls;                   /* the classification heads (cfg.cls_classes > 0) */
  void *cls_w, *cls_b, *dcls_w, *dcls_b;     /* classification_head or multichoice_head */
  void *cls_in;                              /* [B, C] the pooled output after dropout */
  float *h_logits;                           /* host [B * cls_classes] */
  float *h_target;                           /* host [B]: the regression's targets (cls_regression) */
  int32_t *pred;                             /* host [B / cls_choices]: zt_model.predictions */
  /* the head's parameters and gradients (last stage) */
  void *pool_w, *pool_b, *dpool_w, *dpool_b; /* language_model.pooler.dense */
  void *hd_w, *hd_b, *dhd_w, *dhd_b;         /* lm_head.dense */
  void *hln_w, *hln_b, *dhln_w, *dhln_b;     /* lm_head.layernorm */
  void *hbias, *dhbias;                      /* lm_head.bias: this rank's vocabulary slice */
  void *bin_w, *bin_b, *dbin_w, *dbin_b;     /* binary_head */
  /* activations (N: this rank's tokens, B*T or B*T/tp with --sequence-parallel) */
  void *h_pre, *h_act, *h_ln;                /* [N, C] lm_head.dense output, its GELU, its layernorm */
  float *hln_mean, *hln_rstd;                /* [N] */
  void *hgrad;                               /* [N, C] backward scratch of the masked-LM head */
  void *pool_in, *pool_pre, *pooled;         /* [B, C] the first tokens, the pooler's dense output, tanh */
  void *bin_logits;                          /* [B, 2]; holds their gradient in backward */
  void *dpool, *dpool2;                      /* [B, C] backward scratch of the pooler */
  float *sop_losses, *sop_lse, *sop_dloss;   /* [B] */
  int32_t *first_rows, *sop_targets;         /* [B] row b*T of each sample, the sentence-order labels (backend) */
  const int32_t *sop_tgt;                    /* the staged labels of the last forward */
  int32_t *h_first;                          /* host [B] */
  float *h_sop;                              /* host [B] */
  int owned;
} zt_bert;

/* The engine's constructor (a zt_model_kind's build_model) and parameter count. */
zt_model *zt_bert_create(const zt_model_args *a, const zt_model_setup *s);
void zt_bert_count(const zt_model_args *a, int64_t *total, int64_t *largest);
/* The configuration of the architecture flags and the engine's setup. */
zt_bert_config zt_bert_config_of(const zt_model_args *a, const zt_model_setup *s);

/* One-process use (tests, tools): build with the plan on the backend, free; initialize every parameter. */
void zt_bert_build(zt_bert *m, const zt_bert_config *cfg, size_t mem_limit);
void zt_bert_free(zt_bert *m);
void zt_bert_init_params(zt_bert *m, uint64_t seed);
/* The one-process model's parameter table. */
void zt_bert_single_table(const zt_bert_config *cfg, zt_param_table *t);
/* The name of the classification head's parameters: "classification_head" or, for one logit per row (RACE),
 * Megatron's MultipleChoice "multichoice_head"; NULL for the pretraining heads. */
const char *zt_bert_cls_head_name(const zt_bert_config *cfg);

/* The flops profiler's module tree (models/bert/bert_flops.c; one pipeline stage). */
zt_flops_profiler *zt_bert_flops_profiler(const zt_bert *m, const zt_flops_profiler_config *cfg);

/* Forward latency slots after the language model's: the pooler, the masked-LM head (dense, GELU, layernorm), the
 * binary head. */
enum { ZT_BERT_FT_POOLER = ZT_LM_FT_SLOTS, ZT_BERT_FT_LM_HEAD, ZT_BERT_FT_BINARY_HEAD, ZT_BERT_FT_SLOTS };

#endif
