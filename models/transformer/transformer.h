/* Shared transformer building blocks used by every model (GPT, BERT, T5 and the MoE layers): the attention
 * sublayer (causal or bidirectional self-attention with a padding mask, or cross-attention), the MLP slot that a
 * Mixture-of-Experts layer can fill, and the transformer layer (Megatron's ParallelTransformerLayer, pre-LN) that
 * composes them after a layer spec (Megatron-core's ModuleSpec): its self-attention mask, an optional
 * cross-attention (a T5 decoder layer) and its MLP. Each piece registers its parameters in the parameter table
 * under Megatron's names, binds pointers from the flat buffers, sizes its activations for the memory plan, and has
 * explicit forward/backward written once over the backend op table (runtime/ops/backend.h): the same code runs on
 * the CPU and on a GPU. The layer loop (recompute, ZeRO-3, pipeline chunks) is models/transformer/stack.h. */
#ifndef ZT_TRANSFORMER_H
#define ZT_TRANSFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "models/transformer/tensor_parallel.h"
#include "models/transformer/ulysses.h"
#include "runtime/base/memplan.h"
#include "runtime/ops/backend.h"
#include "runtime/tensor/param_table.h"

/* --apply-layernorm-1p's scratch (zt_norm_weight below) */
typedef struct {
  void *w;          /* [C]: weight + 1 of the norm at hand (backend memory) */
  const void *ones; /* [C] ones (backend memory) */
} zt_ln1p;

/* With tensor parallelism (tp with more than one rank) NH and FFN are this rank's share: NH/tp heads (global
 * heads tp->rank * NH ...), FFN/tp MLP columns; C stays the full hidden size. */
typedef struct {
  int C, NH, HD, FFN;       /* hidden, heads, head dim (C = NH*HD without TP), MLP hidden */
  int KV;                   /* key/value heads (--num-key-value-heads, this rank's share; NH: no grouping): with KV < NH
                               query_key_value holds KV groups of NH/KV queries, a key and a value (grouped-query
                               attention), repeated into the per-head layout before the attention op (gqa_pack) */
  float ln_eps;
  float attn_dropout, hidden_dropout;
  float init_std;           /* N(0, std) for weights */
  float out_init_std;       /* output projections: std / sqrt(2 L) */
  const zt_tp *tp;          /* tensor parallelism (size 1: none); its backend and dtype are the model's */
  const zt_usp *usp;        /* DeepSpeed-Ulysses sequence parallelism, or NULL (models/transformer/ulysses.h) */
  const zt_attn_layout *sparse; /* self-attention's block-sparse layout (backend memory), or NULL: dense */
  int sparse_as_mask;       /* compute densely with the layout as a mask (the reference) */
  int fpdt_chunk;           /* DeepSpeed FPDT (--ds-sequence-parallel-fpdt): the self-attention runs in chunks of this
                             * many tokens of the whole sequence (zt_attention_desc.chunk); 0: off */
  /* the Llama-style variants (Megatron-DeepSpeed's flags): rmsnorm (--normalization rmsnorm: every norm is RMSNorm,
   * weight only), swiglu (--swiglu: dense_h_to_4h has 2 FFN rows per rank, the gate's then the linear half's, and the
   * MLP's activation is SwiGLU), no_bias (--disable-bias-linear: the attention's and the MLP's linears have no
   * bias), rot (--use-rotary-position-embeddings: the queries and keys of the self-attention turn by their position
   * on the first rot dimensions of each head; 0: off) with rope_cs, the cosines and sines of positions 0 ..
   * rope_rows - 1 (backend memory, runtime/ops/ops.h's zt_rope_table) */
  int rmsnorm, swiglu, no_bias, rot, rope_rows;
  const float *rope_cs;
  int act; /* the MLP's activation unless swiglu (zt_act_kind): GELU_TANH (0) is the fused bias-GELU; see zt_ffn_fc */
  int ln_1p;              /* --apply-layernorm-1p: the LayerNorms scale by weight + 1 (zt_norm_weight) */
  const zt_ln1p *ln1p;    /* its scratch (the language model's), or NULL when off */
  const uint8_t *ltd_layers; /* random-LTD: [layers of the model] host flags by global layer, or NULL (random_ltd.h) */
  /* selective recompute (--recompute-granularity selective, Megatron's checkpoint_core_attention): the layers keep
   * no attention probabilities; each forward writes them into the stack's shared zt_block_scratch.attn_saved and
   * each backward recomputes them there (the same values: the op is deterministic and its dropout keyed). Set only
   * where the backend keeps probabilities (zt_attn_keeps_probs: the CPU); a GPU's attention keeps log-sum-exp, as
   * Megatron's flash path, which never recomputes either */
  int recompute_core_attention;
  /* the MLP slot of global layer l: make_ffn(ffn_ctx, l), or NULL: the layer spec's (the dense MLP). A model whose
   * layers differ (Mixture of Experts: models/moe/moe.h) passes its factory here */
  struct zt_ffn (*make_ffn)(const void *ctx, int layer);
  const void *ffn_ctx;
} zt_block_config;

static inline const zt_backend *zt_block_be(const zt_block_config *c) { return c->tp->be; }
static inline zt_dtype zt_block_dt(const zt_block_config *c) { return c->tp->dt; }

/* ---- norms: LayerNorm (weight and bias), or RMSNorm (weight only; rms) -------------------------------------------
 * "<prefix>.<name>.weight" (and ".bias"); the forward keeps mean (LayerNorm only) and rstd [N]; the backward writes
 * dinp (=) and accumulates the parameters' gradients. zero_centered (--apply-layernorm-1p, LayerNorm only): the
 * weight starts at 0 and the norm scales by weight + 1 (Megatron's LayerNorm(apply_layernorm_1p)); the forward and
 * the backward then take lp, a scratch of C elements where weight + 1 is formed in the element dtype (PyTorch's
 * `self.weight + 1`) and ones, C elements of 1. NULL lp: the weight as it is. d(weight + 1) = d(weight). */
void zt_norm_register(zt_param_table *t, const char *prefix, const char *name, int C, int rms, int zero_centered);
static inline const void *zt_norm_weight(const zt_backend *be, zt_dtype dt, const zt_ln1p *lp, const void *w, int C) {
  if (!lp) return w;
  be->copy(lp->w, w, (size_t)C * zt_dtype_size(dt));
  be->add_bias(dt, lp->w, lp->ones, 1, C);
  return lp->w;
}
static inline void zt_norm_forward(const zt_backend *be, zt_dtype dt, int rms, const zt_ln1p *lp, void *out,
                                   float *mean, float *rstd, const void *inp, const void *w, const void *b, int N,
                                   int C, float eps) {
  if (rms) be->rmsnorm_forward(dt, out, rstd, inp, w, N, C, eps);
  else be->layernorm_forward(dt, out, mean, rstd, inp, zt_norm_weight(be, dt, lp, w, C), b, N, C, eps);
}
static inline void zt_norm_backward(const zt_backend *be, zt_dtype dt, int rms, const zt_ln1p *lp, void *dinp,
                                    void *dw, void *db, const void *dout, const void *inp, const void *w,
                                    const float *mean, const float *rstd, int N, int C) {
  if (rms) be->rmsnorm_backward(dt, dinp, dw, dout, inp, w, rstd, N, C);
  else be->layernorm_backward(dt, dinp, dw, db, dout, inp, zt_norm_weight(be, dt, lp, w, C), mean, rstd, N, C);
}

/* The MLP's dense_h_to_4h and activation (Megatron's ParallelMLP.forward, not SwiGLU), shared by the dense MLP and the
 * MoE experts: act GELU_TANH is the fused bias-GELU (pre = x w^T + b, out = gelu(pre)); any other zt_act_kind
 * adds the bias, then applies the activation to pre. N rows of C in, F out. */
static inline void zt_ffn_fc(const zt_backend *be, zt_dtype dt, int act, void *out, void *pre, const void *x,
                             const void *w, const void *b, int N, int C, int F) {
  if (act == ZT_ACT_GELU_TANH) {
    be->matmul_forward(dt, out, pre, x, w, b, N, C, F);
  } else {
    be->matmul_forward(dt, pre, NULL, x, w, b, N, C, F);
    be->act_forward(dt, (zt_act_kind)act, out, pre, (size_t)N * F);
  }
}
/* Its backward through the activation: d (the gradient of out, [n]) becomes the gradient of pre in place, except for
 * the fused GELU, which matmul_backward applies itself. Returns what matmul_backward takes as pre_gelu. */
static inline void *zt_ffn_act_backward(const zt_backend *be, zt_dtype dt, int act, void *d, void *pre, size_t n) {
  if (act == ZT_ACT_GELU_TANH) return pre;
  be->act_backward(dt, (zt_act_kind)act, d, pre, d, n);
  return NULL;
}

/* ---- attention sublayer ------------------------------------------------------------------------
 * Self-attention ("self_attention"): fused QKV linear query_key_value [3C, C] in Megatron's per-head
 * layout (row h*3*HD + {0,1,2}*HD + d is q, k, v of head h), attention, output projection dense [C, C]. With
 * grouped-query attention (KV < NH) query_key_value is [(NH + 2 KV) HD, C] in Megatron-DeepSpeed's grouped layout (row
 * g (R+2) HD + j HD + d query g R + j for j < R = NH/KV, then the group's key and value), repacked to the per-head
 * layout with each group's key and value repeated (repeat_kv) before the attention.
 * Cross-attention ("inter_attention", T5 decoder): query [C, C] on the decoder stream, key_value
 * [2C, C] on the encoder output (per-head layout h*2*HD + {0,1}*HD + d), attention with no causal
 * mask over the Tk encoder positions, then dense [C, C]. */
typedef enum { ZT_ATTN_SELF = 0, ZT_ATTN_CROSS = 1 } zt_attn_kind;

/* Forward latency slots of one layer, filled only when a flops profiler is attached: zt_block.fwd_time points at
 * ZT_FT_SLOTS doubles or is NULL, and then the timing code costs one branch per module. Seconds accumulate. A decoder
 * layer's cross-attention (inter_attention) has its own: the whole, its query, key_value, core and dense, and the
 * post_inter_attention_layernorm. The attention code times into QKV, CORE, DENSE (and, cross-attention only, KV) of
 * its fwd_time: the layer's slots for the self-attention, the layer's slots + ZT_FT_INTER_BASE for the
 * cross-attention, which lands them on IQ, ICORE, IDENSE and IKV. */
enum { ZT_FT_LAYER, ZT_FT_LN1, ZT_FT_ATTN, ZT_FT_QKV, ZT_FT_CORE, ZT_FT_DENSE, ZT_FT_LN2, ZT_FT_MLP, ZT_FT_FC1,
       ZT_FT_FC2, ZT_FT_INTER, ZT_FT_IQ, ZT_FT_ICORE, ZT_FT_IDENSE, ZT_FT_LN3, ZT_FT_IKV,
       /* an MoE layer's MLP slot (models/moe): its MOELayer, TopKGate, Experts, the residual variant's dense branch and
        * coefficient (the dense branch's linears time into FC1 and FC2) */
       ZT_FT_MOE, ZT_FT_GATE, ZT_FT_EXPERTS, ZT_FT_RMLP, ZT_FT_COEF, ZT_FT_SLOTS };
enum { ZT_FT_INTER_BASE = ZT_FT_IQ - ZT_FT_QKV, ZT_FT_KV = ZT_FT_IKV - ZT_FT_INTER_BASE };
_Static_assert(ZT_FT_ICORE - ZT_FT_CORE == ZT_FT_INTER_BASE && ZT_FT_IDENSE - ZT_FT_DENSE == ZT_FT_INTER_BASE,
               "the cross-attention's slots sit at one offset from the self-attention's");

typedef struct {
  zt_attn_kind kind;
  void *qkv_w, *qkv_b;       /* self: query_key_value; cross: query */
  void *kv_w, *kv_b;         /* cross only: key_value */
  void *proj_w, *proj_b;
} zt_attn_params;

typedef struct {
  void *qkv;     /* self: [B, T, 3A]; cross: q [B, T, A] (A: this rank's heads x head dim) */
  void *grouped; /* grouped-query attention (KV < NH): the projection [B, T, (NH + 2 KV) HD] before gqa_pack, and in the
                    backward its gradient; else NULL */
  void *kv;      /* cross only: [B, Tk, 2A] */
  float *saved;  /* what the backend's attention keeps (the CPU: probabilities; a GPU: log-sum-exp); with selective
                    recompute the stack's shared buffer (zt_block_scratch.attn_saved), set by the block */
  void *ctx;     /* [B, T, A] attention output before the projection */
  void *qkv_heads, *ctx_heads; /* DeepSpeed-Ulysses (self-attention): q, k, v [B, T size, 3A/size] and the context
                                  [B, T size, A/size] of this rank's heads over the whole sequence (qkv is then the
                                  model's work space); else NULL */
  double *fwd_time; /* the layer's ZT_FT_* latency slots (set by the block's forward), or NULL */
  void *cache;   /* incremental decoding (pass->kv_cache): this layer's keys and values [B, kv_tmax, 3A] in the
                    query_key_value layout (the query slots unused), set by zt_lm_decoder_init; else NULL */
} zt_attn_acts;

/* name is "self_attention" or "inter_attention"; Tk = T for self-attention. */
void zt_attn_register(zt_param_table *t, const char *prefix, const char *name, zt_attn_kind kind,
                      const zt_block_config *cfg);
void zt_attn_bind(zt_attn_params *p, zt_attn_params *g, zt_attn_kind kind, const zt_param_table *t,
                  const char *prefix, const char *name, void *params, void *grads, size_t es);
void zt_attn_plan_acts(zt_attn_acts *a, zt_memplan *plan, zt_attn_kind kind, const zt_block_config *cfg,
                       int B, int T, int Tk);
/* Whether the backend's attention keeps the probabilities (Tq x Tk per head) for its backward, which selective
 * recompute then drops. */
int zt_attn_keeps_probs(const zt_backend *be);
/* out[B,T,C] = dense(attention(x)); mem[B,Tk,C] is the encoder output for cross-attention (else NULL).
 * `mask` is the causal/none choice, `site` the layer's dropout site of the probabilities. */
void zt_attn_forward(const zt_attn_params *p, zt_attn_acts *a, void *out, const void *x, const void *mem,
                     const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                     uint64_t site);
/* dx[B,T,C] (=) from dout; dmem[B,Tk,C] (=) for cross-attention (this rank's heads' part under tensor parallelism:
 * the caller sums it over the ranks); parameter grads accumulate.
 * Scratch: dqkv [B,T,3A] (self) or dq [B,T,A] + dkv [B,Tk,2A] (cross), and the backend's attention scratch. */
void zt_attn_backward(const zt_attn_params *p, const zt_attn_params *g, zt_attn_acts *a, void *dx,
                      void *dmem, const void *dout, const void *x, const void *mem,
                      const zt_block_config *cfg, const zt_pass *pass, int Tk, zt_attn_mask_kind mask,
                      uint64_t site, void *dctx, void *dqkv, void *dkv, float *attn_scratch);

/* ---- MLP slot ------------------------------------------------------------------------------------
 * A layer's feed-forward network goes through this interface so that MoE layers can replace the
 * dense MLP: out[N, C] = ffn(inp[N, C]); backward writes dinp (=) and accumulates parameter grads.
 * pass->training selects train or eval behaviour (an MoE's capacity factor and gate noise); the forward
 * returns the layer's auxiliary loss (an MoE's load balancing; 0 for the dense MLP), and the backward takes
 * that loss's gradient scale. */
typedef struct zt_ffn zt_ffn;
struct zt_ffn {
  const char *kind;
  /* registers parameters under prefix (e.g. "language_model.encoder.layers.3.mlp") */
  void (*register_params)(const zt_ffn *self, zt_param_table *t, const char *prefix, const zt_block_config *cfg);
  /* binds parameter and gradient pointers from flat buffers of es-byte elements */
  void (*bind)(zt_ffn *self, const zt_param_table *t, const char *prefix, void *params, void *grads, size_t es);
  /* activations kept per layer for N tokens, and carves them (sizing pass: returns NULL) */
  void (*plan_acts)(zt_ffn *self, zt_memplan *plan, const zt_block_config *cfg, int N);
  /* work space in bytes for N tokens (shared by all layers: the largest of theirs) */
  size_t (*scratch_bytes)(const zt_ffn *self, const zt_block_config *cfg, int N);
  float (*forward)(zt_ffn *self, void *out, const void *inp, const zt_block_config *cfg, const zt_pass *pass, int N,
                   void *scratch);
  void (*backward)(zt_ffn *self, void *dinp, const void *dout, const void *inp, const zt_block_config *cfg,
                   const zt_pass *pass, int N, void *scratch, float aux_grad);
  void (*destroy)(zt_ffn *self); /* frees state (NULL: free(state)) */
  /* adds the slot's flops-profiler module ("mlp") under the layer's module `parent`: DeepSpeed's counts for one micro
   * batch of N tokens (after a forward: the last one's, where they depend on it), latencies from the layer's slots */
  void (*flops_tree)(const zt_ffn *self, zt_flops_profiler *p, int parent, int slots, double N,
                     const zt_block_config *cfg);
  void *state;   /* the implementation's parameters and activations */
  double *fwd_time; /* the layer's ZT_FT_* latency slots (set by the block's forward), or NULL */
};

/* The MLP kinds a layer spec can ask for (an MoE model's layers differ: zt_block_config.make_ffn). */
typedef enum { ZT_MLP_DENSE = 0 } zt_mlp_kind;

/* The dense MLP: dense_h_to_4h [FFN, C] -> GELU -> dense_4h_to_h [C, FFN]. */
zt_ffn zt_ffn_dense_mlp(void);
/* Megatron's ParallelMLP in the flops profiler's tree (the dense MLP's, an MoE layer's experts and residual branch):
 * module `name` over `rows` tokens, cfg->C -> cfg->FFN (twice with SwiGLU) -> cfg->C, its activation's flops as
 * DeepSpeed counts them (docs/flops_profiler.md), latency slots (-1: none). */
int zt_ffn_dense_flops(zt_flops_profiler *p, int parent, const char *name, int slot, int fc1_slot, int fc2_slot,
                       double rows, const zt_block_config *cfg);
zt_ffn zt_ffn_make(zt_mlp_kind kind);
/* Global layer l's MLP slot: cfg->make_ffn's, or the spec's kind. */
zt_ffn zt_ffn_for_layer(const zt_block_config *cfg, zt_mlp_kind kind, int l);
void zt_ffn_destroy(zt_ffn *ffn);

/* ---- the layer spec ---------------------------------------------------------------------------- */
typedef struct {
  zt_attn_mask_kind self_mask; /* ZT_ATTN_CAUSAL (GPT, the T5 decoder) or ZT_ATTN_NONE (BERT, the T5 encoder: with
                                  the batch's padding mask) */
  int cross_attention;         /* 1: a T5 decoder layer, inter_attention over the encoder output after the
                                  self-attention (post_inter_attention_layernorm before the MLP) */
  zt_mlp_kind mlp;
  int residual_post_ln;        /* --apply-residual-connection-post-layernorm: each residual add takes the sublayer's
                                  LayerNorm output instead of its input (the original BERT's wiring) */
} zt_layer_spec;

/* ---- the pre-LN layer --------------------------------------------------------------------------
 * x -> x + drop(attn(LN1(x))) [-> + drop(inter_attn(LN2(.), mem))] -> + drop(ffn(LN(.))); with residual_post_ln
 * each "+" adds to the LayerNorm's output instead: LN1(x) + drop(attn(LN1(x))), and so on. */
typedef struct {
  void *ln1_w, *ln1_b, *ln2_w, *ln2_b, *ln3_w, *ln3_b; /* ln3: post_inter_attention_layernorm (cross only) */
} zt_block_params;

typedef struct {
  void *ln1;                          /* [N, C] */
  float *ln1_mean, *ln1_rstd;         /* [N] */
  zt_attn_acts attn;
  void *res2;                         /* x + drop(attn proj) [N, C] */
  void *ln2;
  float *ln2_mean, *ln2_rstd;
  zt_attn_acts inter;                 /* cross only */
  void *res3, *ln3;                   /* cross only: res2 + drop(inter proj), its layernorm */
  float *ln3_mean, *ln3_rstd;
} zt_block_acts;

/* Scratch shared by all layers of a model in backward (and for the projections in forward). */
typedef struct {
  void *tmp;       /* [N, C] */
  void *dln;       /* [N, C] */
  void *dqkv;      /* [B*T, 3A] (self); cross: dq [B*T, A] in the same space */
  void *dctx;      /* [B*T, A] */
  void *dkv;       /* cross only: [B*Tk, 2A] */
  void *dmem;      /* cross only: [B*Tk, C] one layer's gradient of the encoder output */
  float *attn;     /* the backend's attention scratch */
  float *attn_saved; /* selective recompute: the probabilities of the layer at hand (any layer's), or NULL */
  void *ffn;       /* the MLP slot's scratch */
} zt_block_scratch;

typedef struct {
  zt_layer_spec spec;
  zt_block_params p, g;   /* layernorm parameters and their gradients */
  zt_attn_params attn_p, attn_g;
  zt_attn_params inter_p, inter_g; /* cross only */
  zt_block_acts a;
  zt_ffn ffn;
  int layer;              /* 0-based layer number (dropout sites, names) */
  double *fwd_time;       /* ZT_FT_SLOTS forward latencies for the flops profiler, or NULL */
} zt_block;

/* Registers the layer's parameters as "<prefix>.input_layernorm.weight", ".self_attention.query_key_value.weight",
 * ".self_attention.dense.weight", ".post_attention_layernorm.weight", [".inter_attention.query.weight",
 * ".inter_attention.key_value.weight", ".inter_attention.dense.weight", ".post_inter_attention_layernorm.weight",]
 * ".mlp.dense_h_to_4h.weight", ".mlp.dense_4h_to_h.weight" (and biases), Megatron's names. */
void zt_block_register(zt_param_table *t, const char *prefix, const zt_layer_spec *spec, const zt_block_config *cfg,
                       zt_ffn *ffn);
void zt_block_bind(zt_block *blk, const zt_param_table *t, const char *prefix, void *params, void *grads, size_t es);
/* Sizing and carving of one layer's activations for B*T tokens (Tk encoder positions for cross-attention). */
void zt_block_plan_acts(zt_block *blk, zt_memplan *plan, const zt_block_config *cfg, int B, int T, int Tk);
/* ffns: the nffn MLP slots sharing the scratch (its MLP part is the largest they need). */
void zt_block_plan_scratch(zt_block_scratch *s, zt_memplan *plan, const zt_layer_spec *spec,
                           const zt_block_config *cfg, const zt_ffn *ffns, int nffn, int B, int T, int Tk);

/* What a cross-attention layer attends to: the encoder output x [B, Tk, C] (whole on every tensor-parallel rank, also
 * under --sequence-parallel), its key padding [B, Tk] (backend memory, or NULL), and where the backward adds the
 * layer's gradient of x (grad [B, Tk, C]): with tensor parallelism this rank's heads' part, which the owner of x sums
 * over the ranks (all-reduce, or reduce-scatter to its rows with --sequence-parallel) after the last layer. */
typedef struct {
  const void *x;
  int Tk;
  const uint8_t *padding;
  void *grad;
} zt_cross_input;

/* out[N,C] = layer(x[N,C]) (mem: the encoder output of a cross-attention layer, else NULL); out must not alias x.
 * Returns the MLP slot's auxiliary loss. */
float zt_block_forward(zt_block *blk, void *out, const void *x, const zt_cross_input *mem, const zt_block_config *cfg,
                       const zt_pass *pass, zt_block_scratch *s);
/* dres[N,C] holds d(out) on entry and d(x) on return; parameter gradients accumulate; a cross-attention layer adds
 * its gradient of the encoder output to mem->grad. */
void zt_block_backward(zt_block *blk, void *dres, const void *x, const zt_cross_input *mem, const zt_block_config *cfg,
                       const zt_pass *pass, zt_block_scratch *s, float aux_grad);

/* The dropout sites of layer l: attention probabilities, after attention, after the MLP, the cross-attention's
 * probabilities and output; the embedding's. */
static inline uint64_t zt_dropout_site(int layer, int slot) { return (uint64_t)layer * 16 + (uint64_t)slot + 1; }
enum { ZT_SITE_ATTN_PROBS = 0, ZT_SITE_ATTN_OUT = 1, ZT_SITE_MLP_OUT = 2, ZT_SITE_INTER_PROBS = 3,
       ZT_SITE_INTER_OUT = 4, ZT_SITE_HEAD = 5 /* a model head's dropout (BERT's classification dropout), at layer
       num_layers */, ZT_SITE_EMBEDDING = 15 };

#endif
