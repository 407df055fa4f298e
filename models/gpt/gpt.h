/* The GPT model with Megatron semantics: word + learned absolute position embeddings, L pre-LN
 * blocks (fused QKV, 4h GELU MLP), final LayerNorm, output layer tied to the word embeddings (or
 * separate with untie), cross-entropy over the padded vocabulary with a loss mask, full activation
 * recompute. Parameters, gradients, optimizer state and activations come from one memory plan.
 * Tensor parallelism (Megatron's): vocab-parallel embedding, output layer and cross-entropy, heads and MLP
 * columns split over the ranks, optionally --sequence-parallel; every rank of a tensor-parallel group holds
 * the slices of the matrices a one-process run draws, so the results do not depend on the layout. */
#ifndef ZT_GPT_H
#define ZT_GPT_H

#include <stdint.h>

#include "models/transformer/embedding.h"
#include "models/transformer/transformer.h"
#include "runtime/base/memplan.h"
#include "runtime/comm/comm.h"
#include "runtime/tensor/param_table.h"

typedef struct {
  int num_layers, hidden_size, num_heads, ffn_hidden_size;
  int max_positions;
  int padded_vocab_size;     /* the output layer's width; includes Megatron's padding rows */
  float ln_eps, attn_dropout, hidden_dropout, init_std;
  int untie_embeddings;      /* 1: separate output_layer.weight */
  int recompute_full;        /* 1: keep only each layer's input; recompute the block in backward */
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
} zt_gpt_config;

typedef struct {
  zt_gpt_config cfg;
  zt_block_config bcfg;
  zt_param_table table;
  zt_memplan plan;
  float *params, *grads;     /* flat buffers in parameter-table order */
  float *optim_state;        /* 2 x table.numel floats (Adam moments), owned by the optimizer */
  float *master;             /* table.numel fp32 master weights with cfg.master_weights, else NULL */

  zt_embedding emb;
  zt_block *blocks;
  zt_ffn *ffns;
  float *lnf_w, *lnf_b, *dlnf_w, *dlnf_b;
  float *out_w, *dout_w;     /* = word embeddings when tied */

  zt_tp tp;                  /* tensor-parallel state shared by every layer (bcfg.tp points here) */
  float *ce_buf;             /* [6 B T] vocab-parallel cross-entropy reductions (tensor parallelism) */
  float *sp_buf;             /* [sp_numel] sequence-parallel gradients packed for their all-reduce */
  size_t sp_numel;
  /* pipeline stage: nlayers = vpp chunks of chunk_layers layers, blocks in chunk order (blocks[i].layer: the
   * global layer); first: the stage holds the embeddings (chunk 0), last: the head (chunk vpp-1); fwd_chunk:
   * the chunk of the last forward; stash: cfg.pp_buffers stage-sized buffers for the schedule */
  int nlayers, chunk_layers, vpp, fwd_chunk, first, last, pp;
  float *stash;

  /* activations for micro batch B x T (with --sequence-parallel the residual stream, layernorm and
   * dropout tensors hold this rank's B x T / tp tokens) */
  int B, T;
  float *layer_in;           /* [L+1, B, T, C]: input of layer l (of the chunk being run), and the final hidden
                                state; with partitioned activations only layer 0's input ([B, T, C]) */
  float *layer_out;          /* [B, T, C] the final hidden state (layer_in's last slot when not partitioned) */
  int part_acts;             /* partitioned activations in use */
  float *act_parts;          /* [L-1, B*T*C/tp]: this rank's chunk of the inputs of layers 1..L-1 */
  float *act_work;           /* [2, B, T, C]: full layer inputs/outputs while partitioned */
  /* activation_checkpointing.profile: called after each checkpointed layer's forward ("forward") and its
   * recompute + backward ("backward") with the milliseconds, or NULL */
  void (*ckpt_profile)(void *ctx, const char *name, double ms);
  void *ckpt_profile_ctx;
  float *recompute_out;      /* [B, T, C] throw-away block output during recompute */
  float *lnf, *lnf_mean, *lnf_rstd;
  float *logits;             /* [B, T, V]; holds dlogits during backward */
  float *losses, *lse, *dloss; /* [B, T] */
  float *dres;               /* [B, T, C] residual-stream gradient */
  int32_t *pos_scratch;      /* [B, T] */
  zt_block_scratch scratch;
  /* inputs of the last forward, for backward */
  const int32_t *tokens, *positions, *targets;
  const float *loss_mask;
  zt_pass pass;
  /* ZeRO-3 (runtime/zero/zero3.h): the fetch units -- the embedding (first stage), each layer, the head (last
   * stage: final layernorm and untied output layer) -- are [unit_off[u], unit_off[u + 1]) of the flat buffers.
   * With param_hook set, the model calls it with ZT_GPT_FETCH before it reads a unit's parameters (the head
   * also fetches the embedding when the output layer is tied), ZT_GPT_RELEASE after, and ZT_GPT_GRAD_READY once
   * a unit's gradients for the micro batch are complete (the embedding's after the embedding backward). */
  int nunits;
  size_t *unit_off;
  void (*param_hook)(void *ctx, int event, int unit);
  void *param_hook_ctx;
  /* Flops profiler (runtime/profile/flops_profiler.h): NULL, or ZT_GPT_FT_SLOTS forward latencies of
   * the model-level modules (the layers' own slots hang off blocks[l].fwd_time). */
  double *fwd_time;
} zt_gpt;

enum { ZT_GPT_FETCH, ZT_GPT_RELEASE, ZT_GPT_GRAD_READY };

/* Model-level forward latency slots: the whole forward (GPTModel), language_model, embedding and its
 * word/position parts (consecutive), encoder, final_layernorm, output layer + cross-entropy. */
enum { ZT_GPT_FT_MODEL, ZT_GPT_FT_LM, ZT_GPT_FT_EMB, ZT_GPT_FT_WORD, ZT_GPT_FT_POS, ZT_GPT_FT_ENCODER,
       ZT_GPT_FT_FINAL_LN, ZT_GPT_FT_LOGITS, ZT_GPT_FT_SLOTS };

/* Registers parameters, sizes the memory plan (optimizer state: 2 floats per parameter), prints it,
 * refuses it if it does not fit in `mem_limit` bytes (0: host MemAvailable), allocates, binds. */
void zt_gpt_build(zt_gpt *m, const zt_gpt_config *cfg, size_t mem_limit);
void zt_gpt_free(zt_gpt *m);
/* Initializes parameters: N(0, std), output projections N(0, std/sqrt(2L)), norms 1/0, biases 0. */
void zt_gpt_init_params(zt_gpt *m, uint64_t seed);
/* The same for the parameters that start in [lo, hi) of the flat buffer only (ZeRO-3 initializes unit by unit,
 * so the whole model never has to be resident). */
void zt_gpt_init_params_range(zt_gpt *m, uint64_t seed, size_t lo, size_t hi);

/* Forward over tokens[B,T] (positions NULL: 0..T-1) with next-token targets[B,T] and loss_mask[B,T]
 * (NULL: all ones). Returns sum(loss * mask) / sum(mask). pass->B/T must equal the planned shape;
 * pass->training enables dropout. */
float zt_gpt_forward(zt_gpt *m, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                     const float *loss_mask, const zt_pass *pass);
/* The same for virtual chunk `chunk` of the stage (zt_gpt_forward is chunk 0, the whole stage without virtual
 * chunks); the loss comes from the chunk that holds the head, else 0. */
float zt_gpt_forward_chunk(zt_gpt *m, int chunk, const int32_t *tokens, const int32_t *positions,
                           const int32_t *targets, const float *loss_mask, const zt_pass *pass);
/* Backward of the last forward (its chunk); gradients accumulate into m->grads scaled by grad_scale (1/number
 * of micro batches for gradient accumulation). */
void zt_gpt_backward(zt_gpt *m, float grad_scale);

/* The parameter table of the whole model in one process (no tensor or pipeline parallelism): the names, shapes,
 * order and offsets zt_gpt_build gives such a model, for other backends (models/gpt/gpt_cuda.h). */
void zt_gpt_single_table(const zt_gpt_config *cfg, zt_param_table *t);

/* Number of parameters on this rank (padded vocabulary included, as Megatron counts them; with tensor
 * parallelism this rank's slices: Megatron's "number of parameters on (tensor, pipeline) model parallel rank"). */
size_t zt_gpt_num_params(const zt_gpt *m);

/* --sequence-parallel: all-reduces over the tensor-parallel group the gradients that each rank computed from
 * its share of the tokens (layernorms and row-parallel biases; Megatron's allreduce of sequence_parallel
 * params). Call once per iteration after the last micro batch's backward; a no-op otherwise. */
void zt_gpt_sync_sequence_parallel_grads(zt_gpt *m);
/* The same for the parameters that start in [lo, hi) of the flat buffer (ZeRO-3: one fetch unit's gradients,
 * every micro batch, before their data-parallel reduce). */
void zt_gpt_sync_sequence_parallel_range(zt_gpt *m, size_t lo, size_t hi);
/* The global L2 norm of grads [table.numel]: with tensor parallelism the split parameters' squares summed over
 * the tensor-parallel group, the replicated ones counted once (as Megatron counts them). */
double zt_gpt_grad_norm(const zt_gpt *m, const float *grads);

/* ---- pipeline stages (the 1F1B and interleaved schedules, train/pipeline.c) ------------------------------
 * A stage (chunk) that is not the first reads its input from zt_gpt_stage_input (the previous stage's output,
 * written there before zt_gpt_forward); one that is not the last returns 0 from zt_gpt_forward and leaves its
 * output in zt_gpt_stage_output, and its zt_gpt_backward reads d(output) from zt_gpt_stage_grad (written before
 * the call) and leaves d(input) there (not on the first). Each holds zt_gpt_stage_numel floats. */
float *zt_gpt_stage_input(zt_gpt *m);
float *zt_gpt_stage_output(zt_gpt *m);
float *zt_gpt_stage_grad(zt_gpt *m);
size_t zt_gpt_stage_numel(const zt_gpt *m);
/* Buffer `slot` (< cfg.pp_buffers) of zt_gpt_stage_numel floats kept for the pipeline schedule, or NULL
 * without any. */
float *zt_gpt_stash(zt_gpt *m, int slot);
/* The gradient of the tied word embeddings on the first stage and of their copy on the last (pipeline
 * parallelism with tied embeddings), *n its floats; NULL elsewhere. */
float *zt_gpt_shared_embedding_grad(zt_gpt *m, size_t *n);

#endif
