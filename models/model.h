/* The model contract (Megatron-core's MegatronModule): what the engine, the pipeline schedules, ZeRO, mixed
 * precision, checkpoints, the flops profiler and the monitors need from any model (GPT, BERT, T5, MoE), so that
 * none of them knows which model it drives. A model fills a zt_model when it is built: its parameter table (the
 * spine), its flat buffers on a backend (runtime/ops/backend.h), its parallel layout, its ZeRO-3 fetch units and
 * the tensors that cross a pipeline stage boundary; and it implements the operations below (forward of a micro
 * batch or pipeline chunk returning named losses, backward, initialization of a parameter range, the flops
 * profiler's module tree). The generic parts of gradient finalization (sequence-parallel sums, the gradient
 * norm, folding half-precision gradients) work from the table and live in models/model.c.
 *
 * Dependencies point down: runtime <- models <- data, train <- checkpoints (docs/architecture.md). */
#ifndef ZT_MODEL_H
#define ZT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "models/moe/moe_config.h"
#include "runtime/base/memplan.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/ops/backend.h"
#include "runtime/profile/flops_profiler.h"
#include "runtime/tensor/param_table.h"

/* ---- a micro batch ------------------------------------------------------------------------------------------
 * Host arrays of B x T tokens (row-major), NULL where the model kind has no such tensor; the data provider of
 * the model kind fills them (data/provider.h) and the model stages what it reads onto its backend. */
typedef struct {
  int B, T;
  const int32_t *tokens;          /* [B, T] input ids */
  const int32_t *positions;       /* [B, T] position ids, or NULL: 0..T-1 (--reset-position-ids) */
  const int32_t *token_types;     /* [B, T] segment ids (BERT), or NULL */
  const int32_t *labels;          /* [B, T] targets of the language-model loss */
  const float *loss_mask;         /* [B, T] weights of the language-model loss, or NULL: all ones */
  const uint8_t *padding;         /* [B, T] nonzero = padding key (bidirectional models), or NULL */
  const int32_t *key_start;       /* [B, T] first key a query may see (documents packed in a sequence), or NULL */
  const int32_t *sentence_labels; /* [B] sentence-level targets (BERT's sentence order), or NULL */
  /* an encoder-decoder (T5): tokens and padding are the encoder's, dec_tokens [B, Td] the decoder's input (positions
   * 0..Td-1, causal), and labels and loss_mask are over the decoder's positions, [B, Td]; NULL otherwise */
  int Td;
  const int32_t *dec_tokens;
} zt_batch;

/* Where a forward runs: the batch shape, the global sample index of row 0 (dropout key), the seed, whether dropout
 * is on; key_padding/key_start as the layers read them (the model sets them from the batch). */
typedef struct {
  int B, T;
  uint64_t first_sample;
  uint64_t seed;
  int training;
  const uint8_t *key_padding; /* [B, T] in the backend's memory, or NULL */
  const int32_t *key_start;   /* [B, T] in the backend's memory, or NULL ([B, seq_total] with seq_total) */
  /* DeepSpeed-Ulysses sequence parallelism (models/transformer/ulysses.h): the T tokens of each row are positions
   * seq_off .. seq_off + T - 1 of a sequence of seq_total tokens, which the self-attention sees whole; 0: the T
   * tokens are the whole sequence */
  int seq_off, seq_total;
  /* FPDT's chunked share (ulysses.h): the T tokens are chunks of seq_chunk, chunk k the positions seq_off + k seq_chunk
   * seq_total / T ..; 0: one chunk */
  int seq_chunk;
  /* incremental decoding (models/transformer/decode.h), 0 in training and evaluation: with kv_cache the T tokens of
   * each row are positions kv_past .. kv_past+T-1; every self-attention layer appends their keys and values to its
   * cache (zt_attn_acts.cache, kv_tmax positions per row) and attends over the kv_past+T cached positions (T must
   * be 1 when kv_past > 0) */
  int kv_cache, kv_past, kv_tmax;
  /* random-LTD (models/transformer/random_ltd.h), training only: the random-LTD layers run on ltd_keep tokens of
   * each row when 0 < ltd_keep < T, drawn for step ltd_step; 0: every layer on every token */
  int ltd_keep;
  uint64_t ltd_step;
  /* knowledge distillation (a model built with zt_model_args.kd), training only: the teacher's logits of this micro
   * batch, [B, T, V] in the model's dtype and backend memory (zt_model.out_logits of a forward-only teacher), whose
   * KD term the last stage adds to the loss; NULL: the term is 0 (evaluation) */
  const void *kd_teacher_logits;
} zt_pass;

/* Knowledge distillation, Megatron-DeepSpeed's calculate_mos_loss: with s and t the student's and the teacher's
 * logits of a micro batch of B rows, kd = beta x temp^2 x sum over the tokens of KL(softmax(t/temp) || softmax(s/temp))
 * / B / seq_length (KLDivLoss's batchmean over [B, T, V] logits, then / args.seq_length); the model's losses become
 * {"total loss", "lm loss", "moe loss", name} (pretrain_gpt.py's loss_func), total = lm + moe + kd. */
typedef struct {
  float temp, beta;
  int seq_length;   /* --seq-length (the divisor, also under the seqlen curriculum) */
  const char *name; /* "mos loss" (--mos) or "kd loss" (--kd) */
} zt_kd_config;

/* The named losses of one micro batch, in the order of the log line ("lm loss" first). value[0..n) are each
 * loss's mean over its tokens (or samples); total is what the backward differentiates (their weighted sum). */
enum { ZT_MAX_LOSSES = 4 };
typedef struct {
  int n;
  const char *name[ZT_MAX_LOSSES];
  float value[ZT_MAX_LOSSES];
  float total;
} zt_losses;

/* A tensor crossing a pipeline stage boundary: n elements of dt in the backend's memory. */
typedef struct {
  void *buf;
  size_t n;
  zt_dtype dt;
} zt_stage_tensor;
enum { ZT_MAX_STAGE_TENSORS = 2 };

/* ZeRO-3 events: before a unit's parameters are read, after, and once its gradients for the micro batch are
 * complete (and folded into the fp32 accumulation). */
enum { ZT_PARAM_FETCH, ZT_PARAM_RELEASE, ZT_PARAM_GRAD_READY };

/* ---- building a model ------------------------------------------------------------------------------------------
 * The architecture flags a model kind reads (Megatron's args namespace; validated by the argument parser), and
 * where and how the engine has it built. */
typedef struct {
  int num_layers, hidden_size, num_heads, ffn_hidden_size, max_positions, padded_vocab_size;
  float ln_eps, attn_dropout, hidden_dropout, init_std;
  int untie_embeddings;
  int residual_post_ln; /* --apply-residual-connection-post-layernorm */
  int binary_head;      /* BERT: the sentence-order head (and the pooler and token types); 0: --bert-no-binary-head */
  /* BERT fine-tuned on a task (finetune_bert; Megatron's Classification and MultipleChoice): cls_classes > 0 replaces
   * the pretraining heads with the pooler, dropout and a linear of cls_classes outputs, whose rows' logits are scored
   * in groups of cls_choices (RACE: 4 rows of one logit make a sample); 0: the pretraining heads. cls_regression (STS-B,
   * one output): the loss is the mean squared error against the sample labels (Megatron's mse_loss_func) */
  int cls_classes, cls_choices, cls_regression;
  int dec_layers, dec_seq_length; /* T5: --decoder-num-layers and --decoder-seq-length (num_layers is the encoder's) */
  /* the Llama-style variants: --normalization rmsnorm, --swiglu, --disable-bias-linear, --use-rotary-position-
   * embeddings on rotary_dims of each head (0: off; --rotary-percent of the head size) with rope_theta
   * (--rotary-position-embeddings-theta), no learned position embeddings (--no-position-embedding or rotary) */
  int rmsnorm, swiglu, no_bias_linear, rotary_dims, no_position_embedding;
  float rope_theta;
  int kv_heads;         /* --num-key-value-heads (grouped-query attention); 0: num_heads */
  /* the MLP's activation unless swiglu (zt_act_kind, runtime/ops/ops.h): GELU_TANH (0: Megatron's fused bias-GELU,
   * or --openai-gelu), GELU_ERF (F.gelu: --no-bias-gelu-fusion or --disable-bias-linear), SQUARED_RELU
   * (--squared-relu); head_gelu_tanh: BERT's LM-head GELU in the tanh form (--openai-gelu; else the erf form) */
  int mlp_act, head_gelu_tanh;
  int layernorm_1p;     /* --apply-layernorm-1p: the transformer's LayerNorms scale by weight + 1 (weights start at 0) */
  int init_xavier;      /* --init-method-xavier-uniform: zt_param_table_xavier on the model's table */
  /* DeepSpeed's sparse_attention: the self-attention's block layout for --seq-length (host memory), or NULL for
   * dense attention; sparse_as_mask computes densely with the layout as a mask (the reference, same results) */
  const zt_attn_layout_buf *sparse_attention;
  int sparse_as_mask;
  /* random-LTD (DeepSpeed's data_routing.random_ltd): [num_layers] host flags, 1 for a layer that runs on the kept
   * tokens of a training pass (zt_pass.ltd_keep), or NULL */
  const uint8_t *random_ltd_layers;
  /* Mixture of Experts (models/moe/moe_config.h): NULL or no layer with more than one expert: dense */
  const zt_moe_config *moe;
  /* knowledge distillation (the student of --mos/--kd), or NULL */
  const zt_kd_config *kd;
} zt_model_args;

#define ZT_RECOMPUTE_ALL_LAYERS (1 << 30)

typedef struct {
  const zt_backend *backend;   /* NULL: the CPU */
  zt_dtype dtype;              /* storage of parameters and activations (fp32 on the CPU) */
  int micro_batch, seq_length;
  int recompute;               /* full recompute: the first `recompute` layers of each model chunk keep only their
                                  input and run again in backward (ZT_RECOMPUTE_ALL_LAYERS: every layer, Megatron's
                                  uniform method; --recompute-method block N: N); 0: none */
  int partition_activations;
  int recompute_core_attention; /* selective recompute: the attention's probabilities are recomputed in backward */
  int master_weights;          /* plan fp32 masters (mixed precision) */
  int zero_partitions;         /* pad the flat buffers to this many partitions; the optimizer state holds one */
  int optim_offloaded;         /* the optimizer state lives elsewhere (NVMe offload): none planned */
  int forward_only;            /* a teacher or an evaluator: no gradients or optimizer state */
  const zt_group *tp_group;
  int tp_size, tp_rank, sequence_parallel;
  const zt_group *pp_group;
  int pp_size, pp_rank, vpp, pp_buffers;
  int pp_split;                /* an encoder-decoder: its first decoder stage (--pipeline-model-parallel-split-rank) */
  /* the stages' layers when they are not num_layers / pp each (one chunk a stage, no encoder-decoder): stage s
   * holds layers [stage_first[s], stage_first[s + 1]) (DeepSpeed's partition of GPTModelPipe,
   * zt_layout_ds_partition); NULL: the even split */
  const int *stage_first;
  const zt_group *usp_group;   /* DeepSpeed-Ulysses (--ds-sequence-parallel-size): models/transformer/ulysses.h */
  int usp_size, usp_rank;
  int fpdt_chunk;              /* DeepSpeed FPDT's chunk (--ds-sequence-parallel-fpdt-chunk-size), 0: off */
  size_t mem_limit;            /* 0: the backend's free memory */
} zt_model_setup;

typedef struct zt_model zt_model;

typedef struct {
  const char *kind;  /* "gpt" */
  /* Draws the initial values of the parameters that start in [lo, hi) of the flat buffer (N(0, std) keyed by the
   * one-process model's parameter index and element, so any layout draws what one process draws) and stores them
   * in the parameter buffer (rounded to value_dt, the half type of mixed precision, or fp32). */
  void (*init_range)(zt_model *m, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt);
  /* Forward of virtual chunk `chunk` (0 without virtual pipeline stages) of this stage: a stage that is not the
   * first reads its input from stage_in, one that is not the last leaves its output in stage_out; the stage with
   * the loss fills out (others: out->n = 0). */
  void (*forward)(zt_model *m, int chunk, const zt_batch *b, const zt_pass *pass, zt_losses *out);
  /* Backward of the last forward: the loss gradient times grad_scale (1/number of micro batches, times the loss
   * scale); a stage that is not the last reads d(output) from stage_grad and leaves d(input) there (not on the
   * first). Parameter gradients accumulate into grads (fp32). */
  void (*backward)(zt_model *m, float grad_scale);
  void (*free)(zt_model *m);
  /* The flops profiler's module tree of this model (its micro batch), with the latency slots profile() binds. */
  zt_flops_profiler *(*flops_profiler)(zt_model *m, const zt_flops_profiler_config *cfg);
  /* Makes the forward record its modules' latencies into slots (the tree's), or stops it (NULL). */
  void (*profile)(zt_model *m, double *slots);
  /* The sequence length of the following passes, 1..the planned seq_length (the legacy seqlen curriculum truncates
   * training micro batches to it): the stage tensors shrink with it. NULL: the model runs at its planned length
   * only. */
  void (*set_seq_length)(zt_model *m, int T);
} zt_model_ops;

struct zt_model {
  const zt_model_ops *ops;
  void *impl;                  /* the concrete model (zt_gpt, ...) */
  const char *name;            /* "GPT" for the log lines */
  int n_losses;                /* the named losses every forward of the last stage returns, in order */
  const char *loss_names[ZT_MAX_LOSSES];
  int micro_batch;             /* the rows of a pass (zt_model_setup.micro_batch) */
  /* where the state lives */
  const zt_backend *be;
  zt_dtype dt;                 /* storage of parameters and activations: fp32 on the CPU; fp32/bf16/fp16 on a GPU */
  const zt_param_table *table; /* this rank's parameters */
  zt_memplan *plan;
  void *params;                /* [flat] of dt */
  float *grads;                /* [flat] fp32: the accumulation the engine reduces, clips and steps with */
  void *grads_dt;              /* a half dt: one micro batch's gradients in dt, folded into grads unit by unit; else
                                  NULL (the backward accumulates into grads directly) */
  float *optim_state;          /* the optimizer's moments of this rank's partition (NULL when offloaded) */
  float *master;               /* fp32 master weights of the partition (mixed precision), else NULL */
  size_t flat;                 /* table->numel padded to a multiple of the ZeRO partitions */
  /* parallel layout */
  const zt_group *tp_group;    /* NULL with one tensor-parallel rank */
  int tp_size, tp_rank, sequence_parallel;
  const zt_group *pp_group;    /* this rank's pipeline, NULL without stages */
  int pp_size, pp_rank, vpp, first, last;
  const zt_group *expert_group; /* the expert-parallel group when this rank holds only its own experts (each held
                                   by one member of it, so their squared norms add over it), else NULL */
  int shared_grad;             /* parameter whose gradient is summed over the embedding group (first and last stage
                                  of a pipeline with tied embeddings), or -1 */
  float *sp_buf;               /* [sp_numel]: sequence-parallel gradients packed for their all-reduce */
  size_t sp_numel;
  /* ZeRO-3 fetch units: unit u is [unit_off[u], unit_off[u + 1]) of the flat buffers */
  int nunits;
  size_t *unit_off;
  void (*param_hook)(void *ctx, int event, int unit);
  void *param_hook_ctx;
  /* pipeline: the tensors crossing a stage boundary (input, output and their gradient share shape and dtype) */
  int n_stage;
  zt_stage_tensor stage_in[ZT_MAX_STAGE_TENSORS], stage_out[ZT_MAX_STAGE_TENSORS], stage_grad[ZT_MAX_STAGE_TENSORS];
  void *stash;                 /* pp_buffers slots of stage_bytes each, kept for the schedule */
  int pp_buffers;
  size_t stage_bytes;          /* the bytes of one set of stage tensors */
  /* profiling: activation_checkpointing.profile's per-layer callback, the flops profiler's latency slots */
  void (*ckpt_profile)(void *ctx, const char *name, double ms);
  void *ckpt_profile_ctx;
  /* the output layer's logits [B, T, V/tp] of dt after a forward of the last stage (a teacher's, read by the engine
   * for the student's KD term), or NULL */
  const void *out_logits;
  /* a classifier (BERT fine-tuned on a task) after a forward of the last stage: each sample's predicted class, host
   * [n_predictions], and its scores (the head's outputs, [n_predictions x the scores of a sample]), or NULL */
  const int32_t *predictions;
  const float *prediction_scores;
  int n_predictions;
};

/* ---- the operations, dispatched --------------------------------------------------------------------------- */
static inline void zt_model_forward(zt_model *m, int chunk, const zt_batch *b, const zt_pass *pass, zt_losses *out) {
  m->ops->forward(m, chunk, b, pass, out);
}
static inline void zt_model_backward(zt_model *m, float grad_scale) { m->ops->backward(m, grad_scale); }
static inline void zt_model_set_seq_length(zt_model *m, int T) { m->ops->set_seq_length(m, T); }
static inline void zt_model_init_range(zt_model *m, uint64_t seed, size_t lo, size_t hi, zt_dtype value_dt) {
  m->ops->init_range(m, seed, lo, hi, value_dt);
}
void zt_model_free(zt_model *m);
/* The flops profiler: zeroes its latencies (DeepSpeed's start_profile) and makes the next forwards record them;
 * detach right after the profiled forward, before backward (recompute is not timed). */
void zt_model_profile_attach(zt_model *m, zt_flops_profiler *p);
void zt_model_profile_detach(zt_model *m);

/* Raises a ZeRO-3 event for unit u (u < 0: none); GRAD_READY first folds the unit's half gradients. */
void zt_model_param_event(zt_model *m, int event, int unit);

/* ---- generic gradient finalization (from the parameter table) ---------------------------------------------- */
/* --sequence-parallel: all-reduces over the tensor-parallel group the gradients of the sequence_parallel
 * parameters that start in [lo, hi) (Megatron's allreduce of sequence-parallel grads); a no-op otherwise. */
void zt_model_sync_sequence_parallel(zt_model *m, size_t lo, size_t hi);
/* The tied embedding's gradient summed over the embedding group (Megatron's _allreduce_embedding_grads), as
 * the engine's communication type comm_dt (fp32, or rounded to a half type around the sum). */
void zt_model_sync_shared(zt_model *m, const zt_group *emb_group, zt_dtype comm_dt);
/* The global L2 norm of grads (the flat fp32 buffer): tensor-parallel slices' squares summed over the group,
 * replicated parameters counted once, shared copies left out, summed over the pipeline stages. */
double zt_model_grad_norm(const zt_model *m, const float *grads);
/* Adds a half dt's gradients of [lo, hi) into grads and clears them (no-op when the backward writes fp32). */
void zt_model_fold_grads(zt_model *m, size_t lo, size_t hi);

/* ---- parameters in and out of the backend ----------------------------------------------------------------- */
/* Writes host fp32 values of [lo, hi) into the parameter buffer: rounded to value_dt in fp32 slots on the CPU,
 * converted to the storage dtype on a GPU. */
void zt_model_set_params(zt_model *m, const float *host, size_t lo, size_t hi, zt_dtype value_dt);
/* Reads [lo, hi) of the parameter buffer into host fp32. */
void zt_model_get_params(const zt_model *m, float *host, size_t lo, size_t hi);
/* Draws the initial values of the parameters that start in [lo, hi) and stores them (rounded to value_dt): N(0,
 * init_std) keyed by (seed, the parameter's index in `full`, the element of the whole matrix), so every layout draws
 * what one process draws; `full` is the one-stage table at this tensor-parallel size (NULL: this table is it, i.e.
 * one pipeline stage). The last stage's copy of the tied word embeddings draws what the embedding draws. */
void zt_model_init_params(zt_model *m, const zt_param_table *full, uint64_t seed, size_t lo, size_t hi,
                          zt_dtype value_dt);
/* Megatron's names of the word embeddings and of their copy on the last pipeline stage (tied output layer). */
#define ZT_WORD_EMBEDDING "language_model.embedding.word_embeddings.weight"
#define ZT_SHARED_EMBEDDING "word_embeddings.weight"

/* Elements on this rank (Megatron's "number of parameters on (tensor, pipeline) model parallel rank"). */
size_t zt_model_num_params(const zt_model *m);

/* ---- pipeline helpers ----------------------------------------------------------------------------------------- */
/* Stash slot `slot` (< pp_buffers) of stage_bytes bytes, holding one set of stage tensors. */
void *zt_model_stash(zt_model *m, int slot);
/* Copies the stage tensors `which` (stage_in, stage_out or stage_grad) into / out of stash slot `slot`. */
void zt_model_stash_save(zt_model *m, const zt_stage_tensor *which, int slot);
void zt_model_stash_load(zt_model *m, const zt_stage_tensor *which, int slot);

/* ---- memory plans --------------------------------------------------------------------------------------------- */
/* Prints the plan (MiB per kind; on a device with its free memory and the largest micro batch that fits, from
 * plan_bytes(cfg, B), the total bytes at micro batch B) and refuses one that does not fit, naming the memory, the
 * parts and a remedy that applies. */
void zt_model_check_plan(const zt_memplan *plan, const zt_backend *be, zt_dtype dt, int micro_batch,
                         int recompute, size_t mem_limit, size_t (*plan_bytes)(const void *cfg, int B),
                         const void *cfg);

#endif
