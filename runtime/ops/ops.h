/* The op API: every op as an explicit forward/backward pair on contiguous fp32 row-major buffers.
 * Parameter gradients accumulate (+=), activation gradients are written (=) unless a comment says
 * otherwise. This header declares the CPU reference implementations (runtime/ops/cpu/). The CUDA
 * backend (runtime/ops/cuda/cuda_ops.h) has the same ops on device memory with a storage dtype argument and
 * is tested against these; models call either through the backend op table (runtime/ops/backend.h). */
#ifndef ZT_OPS_H
#define ZT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/philox.h" /* ZT_HD: helpers shared with the CUDA kernels */

/* ---- matmul: out[N,OC] = inp[N,IC] @ weight[OC,IC]^T + bias[OC] (bias may be NULL) ---------- */
void zt_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                       int N, int IC, int OC);
/* dinp[N,IC] = dout @ weight (skipped when dinp is NULL); dweight[OC,IC] += dout^T @ inp (skipped when dweight is
 * NULL); dbias[OC] += sum_n dout (skipped when dbias is NULL). */
void zt_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, int N, int IC, int OC);

/* ---- layernorm over the last dim: out[N,C], mean[N], rstd[N] ------------------------------- */
void zt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int N, int C, float eps);
/* dinp[N,C] = ...; dweight[C] += ...; dbias[C] += ... */
void zt_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *weight, const float *mean,
                           const float *rstd, int N, int C);

/* ---- RMSNorm, SwiGLU and rotary embedding (the Llama-style layer: runtime/ops/cpu/llama_ops.c), semantics as
 * runtime/ops/backend.h's rmsnorm_forward/backward, swiglu_forward/backward and rope; statistics in double ---- */
void zt_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps);
void zt_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp, const float *weight,
                         const float *rstd, int N, int C);
void zt_swiglu_forward(float *out, const float *inp, int N, int F);
void zt_swiglu_backward(float *dinp, const float *dout, const float *inp, int N, int F);
void zt_rope(float *x, const float *cs, int B, int T, int NH, int ld, int hs, int rot, int inverse);
/* Grouped-query attention's repeat_kv and its backward, as backend.h's gqa_pack. */
void zt_gqa_pack(float *packed, float *grouped, int N, int G, int R, int HD, int inverse);
/* The cosines and sines rope reads for positions [pos0, pos0 + T): cs[t rot + 2 i], cs[t rot + 2 i + 1] of the angle
 * (pos0 + t) inv_freq(i), computed as Megatron-DeepSpeed's RotaryEmbedding does in fp32: inv_freq(i) = 1 /
 * theta^((2 i) / rot), the angle rounded to fp32, its cosine and sine rounded once. */
void zt_rope_table(float *cs, int pos0, int T, int rot, float theta);

/* ---- GELU, tanh approximation: out[n] = 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))) ------ */
void zt_gelu_forward(float *out, const float *inp, size_t n);
void zt_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

/* ---- elementwise activations (runtime/ops/cpu/activation.c) ------------------------------------------------
 * GELU_TANH: zt_gelu_forward/backward above, bit for bit (the MLP's activation: openai-gelu, bias-gelu).
 * GELU_ERF: torch.nn.functional.gelu's exact form (Megatron's BertLMHead): 0.5 x (1 + erf(x / sqrt 2)), derivative
 *   0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi), in PyTorch's expression order with glibc's erff
 *   (within 1 ulp) and expf: out within 4 eps of |out| + |x| (1 + erf cancels for x < 0, as in PyTorch), the
 *   gradient within 8 eps of |dout| (1 + |x|).
 * TANH: tanh (Megatron's BERT pooler), derivative 1 - tanh(x)^2 recomputed from the input, with glibc's tanhf
 *   (within 2.2 ulp).
 * SQUARED_RELU: Megatron's --squared-relu, torch.pow(F.relu(x), 2): x > 0 ? x x : 0, derivative x > 0 ? 2 x : 0
 *   (dinp = dout (2 x), one rounding each, as PyTorch's pow and threshold backward). */
typedef enum { ZT_ACT_GELU_TANH = 0, ZT_ACT_GELU_ERF = 1, ZT_ACT_TANH = 2, ZT_ACT_SQUARED_RELU = 3 } zt_act_kind;
/* out[n] = act(inp[n]); out may alias inp. An unknown kind ends the process (zt_fatal). */
void zt_act_forward(zt_act_kind k, float *out, const float *inp, size_t n);
/* dinp[n] = dout[n] * act'(inp[n]), written (=); dinp may alias dout or inp. */
void zt_act_backward(zt_act_kind k, float *dinp, const float *inp, const float *dout, size_t n);
/* "gelu_tanh", "gelu_erf", "tanh" (or "unknown"): for messages and test names. */
const char *zt_act_name(zt_act_kind k);

/* ---- dropout keyed by Philox ---------------------------------------------------------------
 * Element e of sample s at site `site` is kept when philox_uniform(seed, DROPOUT, stream(s, site), e)
 * >= p, so masks depend only on (seed, global sample index, site, position in the sample), never on
 * threads, batch layout or backend. Kept elements are scaled by 1/(1-p). */
typedef struct {
  float p;               /* drop probability in [0, 1) */
  uint64_t seed;
  uint64_t site;         /* which dropout in the model (layer * 16 + slot) */
  uint64_t first_sample; /* global index of row 0 of the batch */
} zt_dropout;

/* Stream id of (sample, site) in the dropout RNG. */
ZT_HD static inline uint64_t zt_dropout_stream(const zt_dropout *d, uint64_t sample) {
  return (sample << 20) ^ d->site;
}
/* x[B, S] (S elements per sample): out = dropout(x); out may alias x. p == 0 copies. */
void zt_dropout_forward(float *out, const float *x, int B, size_t S, const zt_dropout *d);
/* dx = dout * mask / (1-p); dx may alias dout. */
void zt_dropout_backward(float *dx, const float *dout, int B, size_t S, const zt_dropout *d);
/* out[i] = x[i] * keep(first_elem + i) / (1-p) for i < n, elements of one sample's stream; the
 * forward and the backward of dropout are both this map. out may alias x. */
void zt_dropout_apply_range(float *out, const float *x, size_t n, const zt_dropout *d, uint64_t sample,
                            uint64_t first_elem);
/* Fused bias-dropout-add of Megatron's residual path: out = residual + dropout(x). */
void zt_dropout_add_forward(float *out, const float *residual, const float *x, int B, size_t S,
                            const zt_dropout *d);
/* The same on the token rows [row0, row0 + n) of a micro batch of T tokens x C channels per sample (a
 * --sequence-parallel shard): out = residual + dropout(x), or out = dropout(x) with residual NULL (out may alias
 * x), where row r = b * T + t of the micro batch is keyed as zt_dropout_forward keys it: sample first_sample + b,
 * elements t * C + c. Also the backward of that dropout. */
void zt_dropout_rows(float *out, const float *residual, const float *x, int row0, int n, int T, int C,
                     const zt_dropout *d);

/* ---- residual add: out = a + b; backward: da = db = dout (callers pass dout through) -------- */
void zt_residual_forward(float *out, const float *a, const float *b, size_t n);
/* dst += src: the accumulation used where two gradient paths meet (the residual stream). */
void zt_accumulate(float *dst, const float *src, size_t n);

/* ---- bias of a linear applied apart from its GEMM (a row-parallel linear adds it after the sum over the
 * tensor-parallel ranks) --------------------------------------------------------------------------------- */
/* out[n, c] += bias[c] for every row n < N. */
void zt_add_bias(float *out, const float *bias, int N, int C);
/* dbias[c] += sum over n of dout[n, c] (each column summed in row order: deterministic). */
void zt_bias_grad(float *dbias, const float *dout, int N, int C);

/* ---- per-row weights (the MoE layer's combine: each token's expert output times its gate value) ------------ */
/* out[n, c] = w[n] * x[n, c] for n < N, c < C, one fp32 product per element; out may alias x. */
void zt_scale_rows(float *out, const float *x, const float *w, int N, int C);
/* out[n] = sum over c of a[n, c] * b[n, c], written (=): accumulated in double in column order and rounded once to
 * fp32 (deterministic). With a = dout, b = x it is the gradient of zt_scale_rows's w (x's: zt_scale_rows(dout, w)). */
void zt_row_dot(float *out, const float *a, const float *b, int N, int C);

/* ---- embedding lookup: out[N,C] (=, or += when accumulate) from table[*,C] at ids[N] -------- */
void zt_embedding_forward(float *out, const int32_t *ids, const float *table, int N, int C,
                          int accumulate);
/* dtable[ids[n], :] += dout[n, :] (duplicates summed in order; deterministic). */
void zt_embedding_backward(float *dtable, const int32_t *ids, const float *dout, int N, int C);
/* Vocab-parallel slice of a table holding rows [v0, v0 + rows) of the full one: out[n] = table[ids[n] - v0],
 * or zeros for ids outside the slice (summed over the slices it is the full lookup). */
void zt_embedding_forward_range(float *out, const int32_t *ids, const float *table, int N, int C, int v0, int rows);
/* dtable[ids[n] - v0, :] += dout[n, :] for the ids inside the slice; the others are skipped. */
void zt_embedding_backward_range(float *dtable, const int32_t *ids, const float *dout, int N, int C, int v0,
                                 int rows);

/* ---- scaled-dot-product attention ------------------------------------------------------------
 * Strided views allow Megatron's fused QKV layout ([T, NH, 3, HD] per row), separate Q and fused
 * KV (cross-attention), or separate tensors. Row (b, t) of head h of Q starts at
 * q + (b*Tq + t)*ld_q + h*hs_q; likewise K and V with Tk, ld_kv, hs_k, hs_v. */
typedef enum {
  ZT_ATTN_NONE = 0,    /* every query sees every key (bidirectional / cross-attention) */
  ZT_ATTN_CAUSAL = 1,  /* query i sees keys j <= i (requires Tq == Tk) */
} zt_attn_mask_kind;

/* A block-sparse layout (DeepSpeed's sparse_attention): the Tq x Tk scores of a head are cut into block x block
 * tiles and only the listed ones are computed; an unlisted tile is masked like a causal or padded position (its
 * probabilities are 0), and the other masks still apply inside listed tiles. Self-attention only: Tq == Tk ==
 * nb * block. heads is 1 (every head uses layout 0) or the model's total head count (head head0 + h, so tensor-
 * parallel ranks read their own heads' layouts). The struct lives in host memory, its arrays in the backend's. */
typedef struct zt_attn_layout {
  int block, nb, heads;
  int64_t nnz;             /* listed tiles over all heads */
  const int32_t *row_ptr;  /* [heads * nb + 1]: tiles of (head g, block row i) are col_idx[row_ptr[g*nb + i] ..
                            * row_ptr[g*nb + i + 1]), key block columns in ascending order */
  const int32_t *col_idx;  /* [nnz] */
  const int32_t *col_ptr;  /* [heads * nb + 1]: the transpose, tiles of (head g, block column j) */
  const int32_t *row_idx;  /* [nnz] query block rows in ascending order within a column */
  const int32_t *t_pos;    /* [nnz] for each transposed entry, its index in col_idx */
} zt_attn_layout;

typedef struct {
  int B, Tq, Tk, NH, HD;
  int ld_q, hs_q, ld_kv, hs_k, hs_v;
  const struct zt_attn_layout *layout; /* NULL: dense; else block-sparse (see zt_attn_layout) */
  int layout_as_mask;         /* with a layout: compute densely and apply it as an element mask (the reference the
                               * tests compare the block-sparse kernels with); same results, dense cost */
  zt_attn_mask_kind mask;
  const uint8_t *key_padding; /* [B, Tk], nonzero = key masked out (BERT/T5 padding); or NULL */
  const int32_t *key_start;   /* [B, Tq]: query i sees only keys j >= key_start[b*Tq + i] (documents
                               * packed in one sequence, Megatron's --reset-attention-mask); or NULL */
  float scale;                /* usually 1/sqrt(HD) */
  zt_dropout dropout;         /* on the probabilities; element id ((h*Tq)+i)*Tk + j within a sample */
  int head0;                  /* global index of head 0 (tensor parallelism: rank * NH), keys the dropout */
  int chunk;                  /* 0: the probabilities are kept (dense); > 0 (DeepSpeed FPDT's chunked attention):
                               * queries and keys in blocks of chunk rows, an online softmax over the key blocks,
                               * only each row's log-sum-exp kept (B * NH * Tq floats); the backward recomputes
                               * the probabilities block by block. Requires layout == NULL; Tq and Tk need not be
                               * multiples of chunk (the last block is shorter) */
} zt_attention_desc;

/* out[B, Tq, NH*HD] (row stride NH*HD); probs receives the softmax before dropout (kept for backward), of
 * zt_attention_saved_floats(a) floats. Masked positions get probability 0; a row with no visible key is all zeros.
 * Chunked (chunk > 0): probs receives only the log-sum-exps [B, NH, Tq] of the scaled scores over the visible keys
 * (-inf for a row with no visible key, whose output is zeros), the output within rounding of the dense kernel's;
 * one task per (sample, head), per-thread blocks of chunk x chunk floats allocated inside the call.
 * Dense (layout NULL, or layout_as_mask): probs[B, NH, Tq, Tk]. Block-sparse (a layout, not layout_as_mask): only
 * the listed tiles, never Tq x Tk: per sample, per local head h (layout head zt_attn_layout_head(l, head0, h)),
 * per block row in order, the row's n listed tiles as one [block, n * block] row-major matrix (its row ii: query
 * row * block + ii against the keys of the row's tiles in col_idx order), so the tiles of a head lie in CSR order
 * in block^2 floats each (interleaved by query row within their block row). Work is per (sample, head, block
 * row) / (sample, head, block column); results within 1e-6 relative of layout_as_mask (summation order of the
 * GEMMs), every output written by one task in a fixed order (deterministic). A layout requires Tq == Tk ==
 * nb * block and heads head0 .. head0 + NH - 1 in the layout (else zt_fatal naming the numbers). */
void zt_attention_forward(float *out, float *probs, const float *q, const float *k, const float *v,
                          const zt_attention_desc *a);
/* dq, dk, dv use the same strided layouts as q, k, v and are written (=). When K and V overlap
 * the same rows as Q (fused QKV), the regions are disjoint so "=" is exact. scratch: per-thread
 * work space of zt_attention_scratch_floats(a) floats. Dense and block-sparse only (chunk 0; a chunked descriptor
 * is zt_fatal: its backward needs the forward's output, zt_attention_chunked_backward). */
void zt_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *probs,
                           const float *q, const float *k, const float *v,
                           const zt_attention_desc *a, float *scratch);
/* The backward of a chunked forward (chunk > 0): lse is what zt_attention_forward saved, out its output [B, Tq,
 * NH*HD] (D_i = dO_i . O_i replaces the row sums of P dP, dropout included). The probabilities are recomputed per
 * (query block, key block) from lse; dq, dk, dv are written (=) as by zt_attention_backward, one task per (sample,
 * head) summing its blocks in a fixed order (deterministic). Within rounding (about 1e-6 relative) of the dense
 * kernel with the same descriptor and chunk 0. */
void zt_attention_chunked_backward(float *dq, float *dk, float *dv, const float *dout, const float *out,
                                   const float *lse, const float *q, const float *k, const float *v,
                                   const zt_attention_desc *a, float *scratch);
/* Floats the forward keeps for the backward: B * NH * Tq * Tk dense (also with layout_as_mask); block-sparse
 * B * zt_attn_layout_heads_nnz(layout, head0, NH) * block^2; chunked (chunk > 0) B * NH * Tq, the rows'
 * log-sum-exps ([B, NH, Tq]; -inf for a row with no visible key). */
size_t zt_attention_saved_floats(const zt_attention_desc *a);
/* The backward's scratch: dense (and layout_as_mask) omp_get_max_threads() * 2 * Tq * Tk floats; block-sparse the
 * dS of the listed tiles, as many floats as zt_attention_saved_floats (per-thread buffers of 2 * Tq * block floats
 * are allocated inside the call); chunked omp_get_max_threads() * (2 * bq * bk + bq) with bq = min(chunk, Tq),
 * bk = min(chunk, Tk) (a block's P and dP, and D of its rows), independent of Tq * Tk. */
size_t zt_attention_scratch_floats(const zt_attention_desc *a);

/* ---- fused softmax + cross-entropy with a loss mask over V classes --------------------------
 * losses[N] = logsumexp(logits[n]) - logits[n, targets[n]]; lse[N] is kept for backward. */
void zt_cross_entropy_forward(float *losses, float *lse, const float *logits, const int32_t *targets,
                              int N, int V);
/* dlogits[n, v] = (softmax(logits[n])_v - [v == targets[n]]) * dloss[n]; dlogits may alias logits.
 * dloss[n] is the weight of row n in the loss (0 for masked tokens). */
void zt_cross_entropy_backward(float *dlogits, const float *logits, const float *lse,
                               const int32_t *targets, const float *dloss, int N, int V);
/* Vocab-parallel pieces (Megatron's _VocabParallelCrossEntropy): the logits [N, V] are columns [v0, v0 + V)
 * of the full vocabulary. rowmax[n] = max of the row; after the max is all-reduced, sumexp[n] = sum exp(l -
 * rowmax) and tlogit[n] = the target's logit when it lies in the slice, else 0 (both then all-reduced). */
void zt_cross_entropy_vp_max(float *rowmax, const float *logits, int N, int V);
void zt_cross_entropy_vp_sums(float *sumexp, float *tlogit, const float *logits, const float *rowmax,
                              const int32_t *targets, int N, int V, int v0);
/* After the sums are all-reduced: lse[n] = rowmax[n] + log(sumexp[n]), losses[n] = lse[n] - tlogit[n]. */
void zt_cross_entropy_vp_finish(float *losses, float *lse, const float *rowmax, const float *sumexp,
                                const float *tlogit, int N);
/* The backward on the slice: dlogits = exp(l - lse) * dloss, minus dloss at the target when it is in the slice. */
void zt_cross_entropy_vp_backward(float *dlogits, const float *logits, const float *lse, const int32_t *targets,
                                  const float *dloss, int N, int V, int v0);
/* Knowledge distillation per row (zt_backend.kd_rows), in double: row_loss[n] = sum p (log p - log q), grad[n, v] =
 * gcoef (q - p), q = softmax(s[n] / temp), p = softmax(t[n] / temp); the log-sum-exps of s[n] / temp and t[n] / temp
 * are lse[n] and lse[N + n] when lse is given (the whole vocabulary's: a slice of it here), else the rows' own. */
void zt_kd_rows(float *row_loss, float *grad, const float *s, const float *t, int N, int V, double temp, double gcoef,
                const float *lse);
/* The rows' own log-sum-exps (zt_backend.kd_lse): lse[n] of s[n] / temp, lse[N + n] of t[n] / temp. */
void zt_kd_lse(float *lse, const float *s, const float *t, int N, int V, double temp);

#endif
