/* Megatron's TransformerLanguageModel and its language-model output, the part GPT, BERT and T5 share:
 * the embedding (word, position and optional token-type), the layer stack of this pipeline stage (and, for an
 * encoder-decoder, the decoder's stack with cross-attention to the encoder's output), the final LayerNorm, the output
 * layer tied to the word embeddings (or separate), Megatron's vocab-parallel cross-entropy with a loss mask; the parallel layout (tensor, sequence, pipeline with virtual chunks), the ZeRO-3 units, the
 * common part of the memory plan, the batch staged onto the backend, initialization keyed by the one-process
 * model. A model (models/gpt/gpt.c, models/bert/bert.c) owns a zt_lm and adds its head between the final
 * LayerNorm and the output layer (register_head) and whatever else its loss needs; it calls the pieces below in
 * its forward and backward. */
#ifndef ZT_LANGUAGE_MODEL_H
#define ZT_LANGUAGE_MODEL_H

#include <stdint.h>

#include "models/model.h"
#include "models/moe/moe_config.h"
#include "models/transformer/embedding.h"
#include "models/transformer/stack.h"
#include "models/transformer/transformer.h"
#include "runtime/base/memplan.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"
#include "runtime/tensor/param_table.h"

#define ZT_LM_EMB_PREFIX "language_model.embedding"
#define ZT_LM_ENC_PREFIX "language_model.encoder"
#define ZT_LM_DEC_PREFIX "language_model.decoder"

typedef struct {
  int num_layers, hidden_size, num_heads, ffn_hidden_size;
  int max_positions;
  int padded_vocab_size;     /* the output layer's width; includes Megatron's padding rows */
  float ln_eps, attn_dropout, hidden_dropout, init_std;
  int untie_embeddings;      /* 1: separate output_layer.weight */
  int bidirectional;         /* 1: self-attention sees every key but the padding (BERT); 0: causal (GPT) */
  int residual_post_ln;      /* --apply-residual-connection-post-layernorm: the residual is the LayerNorm output */
  int num_tokentypes;        /* token-type (segment) embeddings: 2 for BERT with the binary head, else 0 */
  int add_pooler;            /* Megatron's add_pooler: BERT's pooler on the first token (the model registers and
                                runs it with its binary head) */
  int recompute_full;        /* > 0: the first recompute_full layers of each chunk keep only their input and are
                                recomputed in backward (zt_model_setup's recompute) */
  int recompute_core_attention; /* selective recompute (zt_block_config's) */
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
   * first stage the embeddings, the last the final layernorm, the head, the output layer (tied: its own copy of
   * the word embeddings, "word_embeddings.weight", kept equal through the embedding group) and the loss; pp_group
   * (for the gradient norm) holds the stages of this rank's pipeline. With vpp > 1 virtual chunks (the interleaved
   * schedule) the stage holds vpp chunks of L/(pp vpp) layers, chunk c the layers [(c pp + pp_rank) L/(pp vpp),
   * ...) (zt_layout_stage_layers); the embeddings go with chunk 0 of the first stage, the head with chunk vpp-1
   * of the last. pp_buffers: stage-sized buffers the pipeline schedule keeps (stashed inputs, gradients). */
  int pp_size, pp_rank, vpp, pp_buffers;
  const zt_group *pp_group;
  /* DeepSpeed-Ulysses sequence parallelism (usp_size 0 or 1: none; models/transformer/ulysses.h): each rank of
   * usp_group holds seq_length / usp_size positions of every row (rank usp_rank the usp_rank-th share) and the
   * self-attention sees the whole sequence through two all-to-alls; the batch a forward receives is the whole
   * [B, seq_length] and the model takes its share. GPT only: no tensor or pipeline parallelism, encoder-decoder,
   * sparse attention, random-LTD, MoE, KD or sequence-length curriculum (the arguments refuse them) */
  const zt_group *usp_group;
  int usp_size, usp_rank;
  /* DeepSpeed FPDT (--ds-sequence-parallel-fpdt-chunk-size; 0: off): the Ulysses share in FPDT's chunks (ulysses.h),
   * the self-attention in chunks of fpdt_chunk tokens, the layers without hidden dropout (as Megatron-DeepSpeed's) */
  int fpdt_chunk;
  /* where it runs: backend NULL is the CPU; dtype is the storage of parameters and activations (fp32 on the
   * CPU; fp32, bf16 or fp16 on a GPU, with fp32 gradient accumulation) */
  const zt_backend *backend;
  zt_dtype dtype;
  int forward_only;          /* a teacher or an evaluator: no gradients, no optimizer state, no backward */
  /* block-sparse self-attention (DeepSpeed's sparse_attention): the layout for seq_length in host memory, or
   * NULL (dense); sparse_as_mask: dense kernels with the layout as a mask (the reference) */
  const zt_attn_layout_buf *sparse_attention;
  int sparse_as_mask;
  const uint8_t *random_ltd_layers; /* [num_layers] random-LTD layers (host flags), or NULL */
  const zt_moe_config *moe;  /* Mixture of Experts (models/moe/moe_config.h), or NULL: dense (the model turns it into
                                make_ffn below and its "moe loss") */
  const zt_kd_config *kd;     /* knowledge distillation (models/model.h): GPT's student adds the KD term, or NULL */
  /* the layers' MLP slots (zt_block_config.make_ffn): NULL, the dense MLP; else make_ffn(ffn_ctx, layer) */
  zt_ffn (*make_ffn)(const void *ctx, int layer);
  const void *ffn_ctx;
  /* an encoder-decoder (Megatron's add_decoder, T5) when dec_layers > 0: after the encoder's num_layers layers and its
   * own final layernorm ("language_model.encoder.final_layernorm") come dec_layers decoder layers over the decoder's
   * dec_seq_length tokens (zt_batch.dec_tokens, embedded by the shared embedding): causal self-attention, then
   * cross-attention to the encoder's output with the encoder's padding as the key mask; the head and the loss read the
   * decoder's final layernorm ("language_model.decoder.final_layernorm") over B x dec_seq_length tokens. With
   * --sequence-parallel both stacks hold their share of the tokens and the encoder's output is all-gathered once for
   * the cross-attentions. With pipeline stages (pp_split, Megatron's --pipeline-model-parallel-split-rank) stages
   * [0, pp_split) hold num_layers / pp_split encoder layers each (the last of them the encoder's final layernorm),
   * stages [pp_split, pp) dec_layers / (pp - pp_split) decoder layers each; two tensors cross every stage boundary:
   * the encoder's stream (its hidden state, then its output, which the decoder stages read and pass on) and the
   * decoder's (the first stage embeds the decoder's tokens too and the encoder stages pass that on). No virtual
   * chunks, sparse attention, random-LTD or curriculum (refused) */
  int dec_layers, dec_seq_length, pp_split;
  const int *stage_first;    /* zt_model_setup's: the stages' layers when uneven (one chunk a stage), or NULL */
  /* the Llama-style variants (zt_block_config's): --normalization rmsnorm (also the final norm), --swiglu,
   * --disable-bias-linear, --use-rotary-position-embeddings on rotary_dims of each head with --rotary-position-
   * embeddings-theta, and no learned position embeddings (--no-position-embedding, implied by rotary) */
  int rmsnorm, swiglu, no_bias_linear, rotary_dims, no_position_embedding;
  float rope_theta;
  int kv_heads;              /* --num-key-value-heads (grouped-query attention): 0 or num_heads for none */
  int mlp_act, head_gelu_tanh; /* zt_model_args's: the MLP's activation unless swiglu, BERT's LM-head GELU form */
  int layernorm_1p;            /* zt_model_args's: --apply-layernorm-1p */
  int init_xavier;             /* zt_model_args's: --init-method-xavier-uniform */
  /* a model whose head is not a language model (BERT's classification heads): no output layer (tied or not), no
   * logits over the vocabulary; the head reads lm->lnf and writes lm->dlnf */
  int no_output_layer;
  int cls_classes, cls_choices, cls_regression; /* zt_model_args's (BERT's classification heads) */
} zt_lm_config;

/* Registers a model's head parameters on the last stage, after the final layernorm and before the output layer
 * (V: this rank's vocabulary rows). */
typedef void (*zt_lm_register_head)(zt_param_table *t, const zt_lm_config *c, int V);

typedef struct {
  zt_lm_config cfg;
  zt_model *model;           /* the owner's; the lm fills its layout, units, buffers and stage tensors */
  zt_param_table *table;
  zt_memplan *plan;
  zt_lm_register_head register_head;
  zt_block_config bcfg;
  zt_layer_spec spec;
  zt_embedding emb;
  zt_stack stack;            /* this stage's layers */
  void *lnf_w, *lnf_b, *dlnf_w, *dlnf_b;
  void *out_w, *dout_w;      /* = word embeddings when tied */
  void *gbind;               /* where the backward's parameter gradients go (fp32 grads or the half buffer) */
  zt_tp tp;                  /* tensor-parallel state shared by every layer (bcfg.tp points here) */
  zt_usp usp;                /* DeepSpeed-Ulysses (bcfg.usp points here when on); T is then this rank's share */
  zt_ln1p ln1p;              /* --apply-layernorm-1p's scratch (bcfg.ln1p points here when on) */
  int32_t *h_slice;          /* Ulysses: host [4 B T]: this rank's share of the ids, labels, positions and types */
  float *h_whole;            /* Ulysses: host [3 B T P]: the whole micro batch's losses (gathered from the ranks), its
                                loss mask, the gather's room */
  zt_attn_layout_buf sparse; /* the sparse-attention layout in the backend's memory (bcfg.sparse points here) */
  float *ce_buf;             /* [3 B T] vocab-parallel cross-entropy reductions (tensor parallelism) */
  int nlayers, chunk_layers, vpp, first, last, pp, V, v0; /* V: this rank's vocabulary rows, from v0 */
  /* activations for micro batch B x T (with --sequence-parallel the residual stream, layernorm and dropout
   * tensors hold this rank's B x T / tp tokens). T is the current passes' sequence length: T_plan (the planned
   * --seq-length) unless zt_lm_set_seq_length made it shorter (the legacy seqlen curriculum); the buffers are
   * T_plan's and a shorter pass uses their first B x T rows */
  int B, T, T_plan;
  void *lnf;                 /* [N, C] the final layernorm's output */
  float *lnf_mean, *lnf_rstd;
  void *logits;              /* [B, T, V]; holds dlogits during backward */
  float *losses, *lse, *dloss; /* [B, T] */
  void *dres;                /* [B, T, C] residual-stream gradient */
  void *dlnf;                /* [N, C] d(final layernorm output), filled by the head's backward */
  /* the batch on the backend: default positions, and where a device backend keeps the staged ids and masks */
  int32_t *pos_buf, *tokens_dev, *targets_dev, *key_start_dev, *types_dev;
  uint8_t *padding_dev;
  float *h_losses, *h_dloss, *h_mask; /* host [B, T] */
  int32_t *h_pos;
  /* inputs of the last forward, for backward (backend memory) */
  const int32_t *tokens, *positions, *targets, *types;
  zt_pass pass;
  double *fwd_time;          /* the owner's flops-profiler slots (ZT_LM_FT_*), or NULL */
  /* Mixture of Experts: the layers' summed auxiliary losses of the last forward (with pipeline stages: of this and the
   * earlier stages, received with the hidden state), and the gradient the next backward applies to each of this
   * stage's MoE layers (the model sets it: --moe-loss-coeff times the loss gradient's scale) */
  float aux, aux_grad;
  float *aux_in, *aux_out, *aux_dgrad; /* pipelined MoE: the aux sum's stage tensors (backend, 1 float each), or NULL */
  /* knowledge distillation (kd.h): its gradient joins d(logits) in the output layer's backward, or NULL */
  struct zt_kd_state *kd;
  /* an encoder-decoder (cfg.dec_layers > 0); stack is then the encoder. The decoder's layers are numbered after the
   * encoder's (dropout sites, ZeRO-3 units after the encoder's final layernorm's) and named from 0 */
  int enc_dec;
  int has_enc_lnf;           /* this stage ends the encoder: its final layernorm (the one stage, or pp_split - 1) */
  zt_stack dec;              /* the decoder's layers on this stage (none on an encoder stage) */
  zt_layer_spec dec_spec;
  int Td;                    /* the decoder's tokens per row: the head scores B x Td tokens (else B x T) */
  void *enc_lnf_w, *enc_lnf_b, *denc_lnf_w, *denc_lnf_b;
  void *enc_out;             /* [Ne, C] the encoder's final layernorm output (Ne: this rank's rows of B T) */
  float *enc_mean, *enc_rstd;
  void *enc_full;            /* [B T, C] what the cross-attention reads, all-gathered with --sequence-parallel */
  const void *enc_mem;       /* the encoder output the last forward's cross-attentions read: enc_out, the stage input
                                (a decoder stage) or enc_full */
  void *denc_full;           /* [B T, C] its gradient, summed over the decoder's layers (this rank's heads' part) */
  void *denc;                /* [Ne, C] the encoder output's gradient summed over the ranks (= denc_full without
                                tensor parallelism) */
  void *ddec;                /* [Nd, C] the decoder's residual-stream gradient (Nd: this rank's rows of B Td) */
  int32_t *dec_pos_buf, *dec_tokens_dev, *h_dec_pos;
  const int32_t *dec_tokens; /* the staged decoder input of the last forward */
  zt_pass dec_pass;          /* the decoder's pass (B x Td, causal, no key padding) */
} zt_lm;

/* The configuration of the architecture flags and the engine's setup, as every model starts from it (a model then
 * sets what is its own: BERT's bidirectional attention and heads; T5 keeps the decoder's flags, GPT and BERT clear
 * them). */
zt_lm_config zt_lm_config_from(const zt_model_args *a, const zt_model_setup *s);

/* Layout, layers, parameter table, ZeRO-3 units (the embedding, each layer, the head) of `lm` for the owner's
 * model, table and plan (no memory: build and the sizing of other micro batches use it). */
void zt_lm_setup(zt_lm *lm, const zt_lm_config *cfg, zt_model *model, zt_param_table *table, zt_memplan *plan,
                 zt_lm_register_head register_head);
void zt_lm_teardown(zt_lm *lm);
/* The one-stage model's table for `tp` tensor-parallel ranks (names, shapes, order). */
void zt_lm_one_stage_table(const zt_lm_config *c, int tp, zt_lm_register_head register_head, zt_param_table *t);
/* The parameters of the whole model (every rank's, tied weights once, padded vocabulary included) and of its
 * largest module's own (DeepSpeed's largest layer), from the one-process table. */
void zt_lm_count_params(const zt_lm_config *c, zt_lm_register_head register_head, int64_t *total, int64_t *largest);
/* The common part of the memory plan (parameters, gradients, optimizer state, the stack, the pipeline stash, the
 * final layernorm, logits and losses, the staged batch, tensor-parallel buffers); the sizing and carving passes
 * call it alike. */
void zt_lm_plan(zt_lm *lm);
/* The sequence length of the passes from now on, 1 <= T <= T_plan (Megatron-DeepSpeed's curriculum_seqlen): the
 * stage tensors shrink to B x T rows (so a pipeline's messages do) and every forward and backward computes over B x T
 * tokens; with --sequence-parallel T must split over the tensor-parallel ranks. zt_lm_stage_batch sets it from the
 * batch too; a pipeline sets it on every stage before the first exchange. */
void zt_lm_set_seq_length(zt_lm *lm, int T);
/* After the plan's allocation: binds the parameters and gradients, the stage tensors, the host buffers. */
void zt_lm_bind(zt_lm *lm);
void zt_lm_free_host(zt_lm *lm);
/* Initializes the parameters that start in [lo, hi) (draws keyed by the one-stage model). */
void zt_lm_init_range(zt_lm *lm, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt);

/* The ZeRO-3 units of the embedding and of the head (-1 where this stage has none); the head's events, which
 * include the embedding's unit when the tied output layer reads it on the same stage. An encoder-decoder's units are
 * the embedding, the encoder's layers, the encoder's final layernorm, the decoder's layers, the head. */
int zt_lm_unit_emb(const zt_lm *lm);
int zt_lm_unit_head(const zt_lm *lm);
void zt_lm_head_params(zt_lm *lm, int event);

/* Stages the batch on the backend (ids, targets, types, masks; default positions) and returns the pass the
 * layers read; keeps the loss mask on the host. */
zt_pass zt_lm_stage_batch(zt_lm *lm, const zt_batch *b, const zt_pass *in);
/* Embedding (first stage, chunk 0) and the chunk's layers; returns 1 when this chunk ends the model (the head
 * runs next: the final layernorm is then in lm->lnf), 0 when its output goes to the next stage. */
int zt_lm_encode(zt_lm *lm, int chunk, const zt_pass *pass);
/* logits = h @ out_w^T (+ bias, this rank's vocabulary slice) over all B*T tokens (h: [N, C], gathered with
 * --sequence-parallel), the vocab-parallel cross-entropy against the staged targets, and the loss-mask-weighted
 * mean of the losses (Megatron's sum(loss * mask) / sum(mask)). */
float zt_lm_output_loss(zt_lm *lm, const void *h, const void *bias);
/* Its backward with the loss gradient scaled by grad_scale: the output weight's (and bias's) gradients
 * accumulate, dh [N, C] receives d(h) (=). */
void zt_lm_output_loss_backward(zt_lm *lm, float grad_scale, const void *h, void *dbias, void *dh);
/* The final layernorm's backward: lm->dres = LN'(lm->dlnf) (the head's fetch window is the caller's). */
void zt_lm_final_ln_backward(zt_lm *lm);
/* The layers' backward of the last forward's chunk from lm->dres, then the embedding's (first stage, chunk 0). */
void zt_lm_backward(zt_lm *lm);

/* Forward latency slots of the model-level modules (the flops profiler); a model's own follow ZT_LM_FT_SLOTS. An
 * encoder-decoder's FINAL_LN is the encoder's; its decoder and the decoder's final layernorm have their own. */
enum { ZT_LM_FT_MODEL, ZT_LM_FT_LM, ZT_LM_FT_EMB, ZT_LM_FT_WORD, ZT_LM_FT_POS, ZT_LM_FT_ENCODER, ZT_LM_FT_FINAL_LN,
       ZT_LM_FT_LOGITS, ZT_LM_FT_DECODER, ZT_LM_FT_DEC_FINAL_LN, ZT_LM_FT_SLOTS };

/* Adds the language model's modules (language_model: embedding, encoder layers, final_layernorm; an encoder-decoder's
 * decoder with its cross-attention layers and final_layernorm) under `parent` of the flops profiler's tree, the
 * layers' latency slots from layer_slots on (the decoder's after the encoder's); returns the language_model module.
 * Refuses pipeline stages (models/transformer/lm_flops.c). */
int zt_lm_flops_tree(zt_flops_profiler *p, int parent, const zt_lm *lm, int layer_slots);

#endif
