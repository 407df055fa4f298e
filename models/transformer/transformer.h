/* Shared transformer building blocks used by every model (GPT now; BERT, T5 and MoE later):
 * attention sublayer (causal, bidirectional with padding mask, or cross-attention), an MLP slot that a
 * Mixture-of-Experts layer can fill, LayerNorm, and the pre-LN block that composes them.
 * Each piece registers its parameters in the parameter table under Megatron's names, binds pointers
 * from the table, sizes its activations for the memory plan, and has explicit forward/backward. */
#ifndef ZT_TRANSFORMER_H
#define ZT_TRANSFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/memplan.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/param_table.h"
#include "models/transformer/tensor_parallel.h"

/* With tensor parallelism (tp with more than one rank) NH and FFN are this rank's share: NH/tp heads (global
 * heads tp->rank * NH ...), FFN/tp MLP columns; C stays the full hidden size. */
typedef struct {
  int C, NH, HD, FFN;       /* hidden, heads, head dim (C = NH*HD without TP), MLP hidden */
  float ln_eps;
  float attn_dropout, hidden_dropout;
  float init_std;           /* N(0, std) for weights */
  float out_init_std;       /* output projections: std / sqrt(2 L) */
  zt_attn_mask_kind self_mask; /* causal (GPT, T5 decoder) or none (BERT, T5 encoder) */
  const zt_tp *tp;          /* tensor parallelism, or NULL (one rank) */
} zt_block_config;

/* Where a forward/backward pass runs: batch shape, the global sample index of row 0 (dropout key),
 * the seed, whether dropout is active (training), the optional key padding mask [B, T] and the optional
 * per-query first visible key [B, T] for documents packed into one sequence. */
typedef struct {
  int B, T;
  uint64_t first_sample;
  uint64_t seed;
  int training;
  const uint8_t *key_padding;
  const int32_t *key_start;  /* [B, T]: first key each query may see (--reset-attention-mask), or NULL */
} zt_pass;

/* ---- attention sublayer ------------------------------------------------------------------------
 * Self-attention ("self_attention"): fused QKV linear query_key_value [3C, C] in Megatron's per-head
 * layout (row h*3*HD + {0,1,2}*HD + d is q, k, v of head h), attention, output projection dense [C, C].
 * Cross-attention ("inter_attention", T5 decoder): query [C, C] on the decoder stream, key_value
 * [2C, C] on the encoder output (per-head layout h*2*HD + {0,1}*HD + d), attention with no causal
 * mask over the Tk encoder positions, then dense [C, C]. */
typedef enum { ZT_ATTN_SELF = 0, ZT_ATTN_CROSS = 1 } zt_attn_kind;

/* Forward latency slots of one layer, filled only when a flops profiler is attached
 * (runtime/profile/flops_profiler.h): zt_block.fwd_time points at ZT_FT_SLOTS doubles or is NULL,
 * and then the timing code costs one branch per module. Seconds accumulate. */
enum { ZT_FT_LAYER, ZT_FT_LN1, ZT_FT_ATTN, ZT_FT_QKV, ZT_FT_CORE, ZT_FT_DENSE, ZT_FT_LN2, ZT_FT_MLP, ZT_FT_FC1,
       ZT_FT_GELU, ZT_FT_FC2, ZT_FT_SLOTS };

typedef struct {
  zt_attn_kind kind;
  float *qkv_w, *qkv_b;      /* self: query_key_value; cross: query */
  float *kv_w, *kv_b;        /* cross only: key_value */
  float *proj_w, *proj_b;
} zt_attn_params;

typedef struct {
  float *qkv;    /* self: [B, T, 3C]; cross: q [B, T, C] */
  float *kv;     /* cross only: [B, Tk, 2C] */
  float *probs;  /* [B, NH, T, Tk] softmax before dropout */
  float *ctx;    /* [B, T, C] attention output before the projection */
  double *fwd_time; /* the layer's ZT_FT_* latency slots (set by the block's forward), or NULL */
} zt_attn_acts;

/* name is "self_attention" or "inter_attention"; Tk = T for self-attention. */
void zt_attn_register(zt_param_table *t, const char *prefix, const char *name, zt_attn_kind kind,
                      const zt_block_config *cfg);
void zt_attn_bind(zt_attn_params *p, zt_attn_params *g, zt_attn_kind kind, const zt_param_table *t,
                  const char *prefix, const char *name, float *params, float *grads);
void zt_attn_plan_acts(zt_attn_acts *a, zt_memplan *plan, zt_attn_kind kind, const zt_block_config *cfg,
                       int B, int T, int Tk);
/* out[B,T,C] = dense(attention(x)); mem[B,Tk,C] is the encoder output for cross-attention (else NULL).
 * `mask` is the causal/none choice, `site` the layer's dropout site of the probabilities. */
void zt_attn_forward(const zt_attn_params *p, zt_attn_acts *a, float *out, const float *x, const float *mem,
                     const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                     uint64_t site);
/* dx[B,T,C] (=) from dout; dmem[B,Tk,C] (=) for cross-attention; parameter grads accumulate.
 * Scratch: dqkv [B,T,3C] (self) or dq [B,T,C] + dkv [B,Tk,2C] (cross), and the attention scratch. */
void zt_attn_backward(const zt_attn_params *p, const zt_attn_params *g, zt_attn_acts *a, float *dx,
                      float *dmem, const float *dout, const float *x, const float *mem,
                      const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                      uint64_t site, float *dctx, float *dqkv, float *dkv, float *attn_scratch);

/* ---- MLP slot ------------------------------------------------------------------------------------
 * A block's feed-forward network goes through this interface so that MoE layers can replace the
 * dense MLP: out[N, C] = ffn(inp[N, C]); backward writes dinp (=) and accumulates parameter grads. */
typedef struct zt_ffn zt_ffn;
struct zt_ffn {
  const char *kind;
  /* registers parameters under prefix (e.g. "language_model.encoder.layers.3.mlp") */
  void (*register_params)(zt_param_table *t, const char *prefix, const zt_block_config *cfg);
  /* binds parameter and gradient pointers from the flat buffers */
  void (*bind)(zt_ffn *self, const zt_param_table *t, const char *prefix, float *params, float *grads);
  /* activation floats kept per layer for N tokens, and carves them (sizing pass: returns NULL) */
  void (*plan_acts)(zt_ffn *self, zt_memplan *plan, const zt_block_config *cfg, int N);
  /* backward work space for N tokens (shared by all layers) */
  size_t (*scratch_floats)(const zt_block_config *cfg, int N);
  void (*forward)(zt_ffn *self, float *out, const float *inp, const zt_block_config *cfg, int N);
  void (*backward)(zt_ffn *self, float *dinp, const float *dout, const float *inp,
                   const zt_block_config *cfg, int N, float *scratch);
  void *state;   /* the implementation's parameters and activations */
  double *fwd_time; /* the layer's ZT_FT_* latency slots (set by the block's forward), or NULL */
};

/* The dense MLP: dense_h_to_4h [FFN, C] -> GELU -> dense_4h_to_h [C, FFN]. */
zt_ffn zt_ffn_dense_mlp(void);
void zt_ffn_destroy(zt_ffn *ffn);

/* ---- the pre-LN block --------------------------------------------------------------------------
 * x -> x + drop(attn(LN1(x))) -> + drop(ffn(LN2(.))). Its output is the next block's input. */
typedef struct {
  float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
} zt_block_params;

typedef struct {
  float *ln1, *ln1_mean, *ln1_rstd;  /* [B,T,C], [B,T], [B,T] */
  zt_attn_acts attn;
  float *res2;                        /* x + drop(attn proj) [B,T,C] */
  float *ln2, *ln2_mean, *ln2_rstd;
} zt_block_acts;

/* Scratch shared by all blocks of a model in backward (and for the projections in forward). */
typedef struct {
  float *tmp;      /* [B,T,C] */
  float *dln;      /* [B,T,C] */
  float *dqkv;     /* [B,T,3C] */
  float *dctx;     /* [B,T,C] */
  float *attn;     /* zt_attention_scratch_floats */
  float *ffn;      /* the MLP slot's scratch_floats */
} zt_block_scratch;

typedef struct {
  zt_block_params p, g;   /* layernorm parameters and their gradients */
  zt_attn_params attn_p, attn_g;
  zt_block_acts a;
  zt_ffn ffn;
  int layer;              /* 0-based layer number (dropout sites, names) */
  double *fwd_time;       /* ZT_FT_SLOTS forward latencies for the flops profiler, or NULL */
} zt_block;

/* Registers the block's parameters as "<prefix>.input_layernorm.weight", ".self_attention.
 * query_key_value.weight", ".self_attention.dense.weight", ".post_attention_layernorm.weight",
 * ".mlp.dense_h_to_4h.weight", ".mlp.dense_4h_to_h.weight" (and biases), Megatron's names. */
void zt_block_register(zt_param_table *t, const char *prefix, const zt_block_config *cfg, zt_ffn *ffn);
void zt_block_bind(zt_block *blk, const zt_param_table *t, const char *prefix, float *params, float *grads);
/* Sizing and carving of one block's activations for B*T tokens (same call sequence both passes). */
void zt_block_plan_acts(zt_block *blk, zt_memplan *plan, const zt_block_config *cfg, int B, int T);
void zt_block_plan_scratch(zt_block_scratch *s, zt_memplan *plan, const zt_block_config *cfg,
                           const zt_ffn *ffn, int B, int T);

/* out[B,T,C] = block(x[B,T,C]); out must not alias x. */
void zt_block_forward(zt_block *blk, float *out, const float *x, const zt_block_config *cfg,
                      const zt_pass *pass, zt_block_scratch *s);
/* dres[B,T,C] holds d(out) on entry and d(x) on return; parameter gradients accumulate. */
void zt_block_backward(zt_block *blk, float *dres, const float *x, const zt_block_config *cfg,
                       const zt_pass *pass, zt_block_scratch *s);

/* The dropout sites of layer l: attention probabilities, after attention, after the MLP. */
static inline uint64_t zt_dropout_site(int layer, int slot) { return (uint64_t)layer * 16 + (uint64_t)slot + 1; }
enum { ZT_SITE_ATTN_PROBS = 0, ZT_SITE_ATTN_OUT = 1, ZT_SITE_MLP_OUT = 2, ZT_SITE_EMBEDDING = 15 };

/* Parameter lookup by "<prefix>.<suffix>" that dies naming the missing parameter. */
float *zt_param_ptr(const zt_param_table *t, float *flat, const char *prefix, const char *suffix);

#endif
