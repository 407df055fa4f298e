/* The backend op table: every op a model or the engine runs on tensors and flat buffers, behind the same calls
 * on the CPU and on a CUDA device, so each model is written once (DESIGN.md §4.1; ggml's backends are the model).
 * Tensors are (storage dtype, pointer) pairs in the backend's memory: the CPU backend stores everything in fp32
 * (mixed precision on the CPU keeps half values in fp32 slots, docs/mixed_precision.md) and refuses another dtype;
 * the CUDA backend stores fp32, bf16 or fp16 and computes in fp32 (runtime/ops/cuda/cuda_ops.h). Statistics
 * (layernorm mean/rstd, log-sum-exp, losses) and the optimizer's buffers are fp32 on both.
 *
 * Where the backends keep different things, the table says how much: the attention keeps the probabilities on
 * the CPU and only their log-sum-exp on a GPU (attention_saved_floats), and needs work space on the CPU only
 * (attention_scratch_floats). Parameter gradients accumulate (+=), activation gradients are written (=), as in
 * runtime/ops/ops.h; every call is ordered after the previous ones (the GPU's stream), and only the calls that
 * return a host value (norm2, round_f32, count_nonrepresentable, to_host) wait for the device. */
#ifndef ZT_BACKEND_H
#define ZT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/ops/ops.h"

typedef enum { ZT_BACKEND_CPU = 0, ZT_BACKEND_CUDA = 1 } zt_backend_kind;

/* One Adam step's scalars (bias corrections precomputed by the caller). */
typedef struct {
  float lr, beta1, beta2, eps, inv_bc1, inv_sqrt_bc2, grad_scale;
  int adam_w_mode;
} zt_adam_args;

typedef struct zt_backend {
  zt_backend_kind kind;
  const char *name;        /* "CPU", "GPU 0 (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB)" */
  int host_visible;        /* the backend's memory is host memory (the CPU): no staging needed */
  /* the zero-bubble schedule's store of deferred weight gradients (runtime/ops/wgrad_store.h), set only in the copy
   * of a backend that store hands the model; NULL otherwise */
  struct zt_wgrad_store *wgrad;

  /* ---- memory --------------------------------------------------------------------------------------------- */
  size_t (*available)(void);                              /* bytes free for a plan (host MemAvailable, device free) */
  void *(*alloc)(size_t bytes, const char *what);         /* zeroed; refuses with the size when it cannot */
  void (*release)(void *p, size_t bytes);
  void (*memset)(void *p, int byte, size_t bytes);
  void (*copy)(void *dst, const void *src, size_t bytes); /* within the backend; dst == src allowed */
  /* strided 2-D copy of dt elements within the backend: row r of dst (at dst + r ld_dst) = row r of src (at src + r
   * ld_src), cols elements each, r < rows; the regions must not overlap (DeepSpeed-Ulysses' all-to-all packing) */
  void (*copy2d)(zt_dtype dt, void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t rows, size_t cols);
  void (*to_host)(void *host, const void *src, size_t bytes);
  void (*from_host)(void *dst, const void *host, size_t bytes);
  void (*synchronize)(void);

  /* ---- model ops (shapes and semantics as runtime/ops/ops.h, dt the storage type) ------------------------ */
  /* out = inp @ w^T + b; with pre_gelu, pre_gelu = that and out = gelu(pre_gelu) (the MLP's first linear) */
  void (*matmul_forward)(zt_dtype dt, void *out, void *pre_gelu, const void *inp, const void *w, const void *b, int N,
                         int IC, int OC);
  /* with pre_gelu, dout is first multiplied by gelu'(pre_gelu) in place; dinp, db or dw may be NULL (not computed):
   * dw NULL is the zero-bubble schedule's B pass, dinp and db NULL its W pass (zt_linear_backward) */
  void (*matmul_backward)(zt_dtype dt, void *dinp, void *dw, void *db, void *dout, const void *inp, const void *w,
                          const void *pre_gelu, int N, int IC, int OC);
  void (*layernorm_forward)(zt_dtype dt, void *out, float *mean, float *rstd, const void *inp, const void *w,
                            const void *b, int N, int C, float eps);
  void (*layernorm_backward)(zt_dtype dt, void *dinp, void *dw, void *db, const void *dout, const void *inp,
                             const void *w, const float *mean, const float *rstd, int N, int C);
  /* RMSNorm (Megatron-DeepSpeed's --normalization rmsnorm): rstd[n] = 1 / sqrt(mean over c of inp[n, c]^2 + eps)
   * (fp32 [N], written), out = inp * rstd * w, computed in fp32 and rounded once; the backward writes dinp (=) and
   * accumulates dw (+=) */
  void (*rmsnorm_forward)(zt_dtype dt, void *out, float *rstd, const void *inp, const void *w, int N, int C,
                          float eps);
  void (*rmsnorm_backward)(zt_dtype dt, void *dinp, void *dw, const void *dout, const void *inp, const void *w,
                           const float *rstd, int N, int C);
  /* SwiGLU (--swiglu, Megatron's chunk(2) then silu(gate) * up): rows of inp hold 2F values, the gate half first:
   * out[n, f] = silu(inp[n, f]) * inp[n, F + f] into out [N, F]; the backward writes dinp [N, 2F] (=) */
  void (*swiglu_forward)(zt_dtype dt, void *out, const void *inp, int N, int F);
  void (*swiglu_backward)(zt_dtype dt, void *dinp, const void *dout, const void *inp, int N, int F);
  /* Rotary position embedding (--use-rotary-position-embeddings), in place: row b T + t of x starts at x + (b T + t) ld
   * elements, head h of it at + h hs; the first rot (even) dimensions of each head turn pairwise, i with i + rot/2 for
   * i < rot/2, by the angle whose cosine and sine are cs[t rot + 2 i] and cs[t rot + 2 i + 1] (fp32, backend memory):
   * (a, b) -> (a cos - b sin, b cos + a sin), Megatron's t cos + rotate_half(t) sin. inverse turns by the opposite
   * angle (the backward: the transposed rotation). */
  void (*rope)(zt_dtype dt, void *x, const float *cs, int B, int T, int NH, int ld, int hs, int rot, int inverse);
  /* Grouped-query attention (--num-key-value-heads): rows of `grouped` hold G groups of R query heads, then the
   * group's key, then its value, HD values each (Megatron-DeepSpeed's [nkv, nq/nkv + 2, hd] view of query_key_value:
   * rows of G (R + 2) HD); rows of `packed` hold the R G heads in the per-head layout [h][q|k|v][HD] (rows of 3 R G HD),
   * head g R + j taking query j of group g and the group's key and value (repeat_kv). Forward (inverse 0): packed (=)
   * from grouped. Backward (inverse 1): grouped (=) from packed: the queries' gradients, and each group's key and
   * value gradient summed over its R heads in head order (fp32). N rows. */
  void (*gqa_pack)(zt_dtype dt, void *packed, void *grouped, int N, int G, int R, int HD, int inverse);
  void (*dropout_forward)(zt_dtype dt, void *out, const void *x, int B, size_t S, const zt_dropout *d);
  void (*dropout_backward)(zt_dtype dt, void *dx, const void *dout, int B, size_t S, const zt_dropout *d);
  void (*dropout_add_forward)(zt_dtype dt, void *out, const void *residual, const void *x, int B, size_t S,
                              const zt_dropout *d);
  void (*dropout_rows)(zt_dtype dt, void *out, const void *residual, const void *x, int row0, int n, int T, int C,
                       const zt_dropout *d);
  void (*accumulate)(zt_dtype dt, void *dst, const void *src, size_t n);
  /* out = act(inp); dinp = dout * act'(inp), written (=), dinp may alias dout (zt_act_kind: GELU tanh or erf, tanh) */
  void (*act_forward)(zt_dtype dt, zt_act_kind k, void *out, const void *inp, size_t n);
  void (*act_backward)(zt_dtype dt, zt_act_kind k, void *dinp, const void *inp, const void *dout, size_t n);
  void (*add_bias)(zt_dtype dt, void *out, const void *bias, int N, int C);
  void (*bias_grad)(zt_dtype dt, void *dbias, const void *dout, int N, int C);
  /* out[n, c] = w[n] * x[n, c] for n < N, c < C (w: N fp32 values in backend memory); out may alias x. The product is
   * computed in fp32 and rounded once to dt. */
  void (*scale_rows)(zt_dtype dt, void *out, const void *x, const float *w, int N, int C);
  /* out[n] = sum over c of a[n, c] * b[n, c] (fp32 out[N] in backend memory, written (=)), accumulated in fp32 (the
   * CPU: in double, rounded once; either way a fixed order: deterministic run to run). */
  void (*row_dot)(zt_dtype dt, float *out, const void *a, const void *b, int N, int C);
  void (*embedding_forward)(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C,
                            int accumulate);
  void (*embedding_backward)(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C);
  void (*embedding_forward_range)(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C,
                                  int v0, int rows);
  void (*embedding_backward_range)(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C,
                                   int v0, int rows);
  /* saved: attention_saved_floats(a) floats kept from the forward for the backward; scratch:
   * attention_scratch_floats(a) floats of work space for the backward (0: none needed) */
  size_t (*attention_saved_floats)(const zt_attention_desc *a);
  size_t (*attention_scratch_floats)(const zt_attention_desc *a);
  void (*attention_forward)(zt_dtype dt, void *out, float *saved, const void *q, const void *k, const void *v,
                            const zt_attention_desc *a);
  void (*attention_backward)(zt_dtype dt, void *dq, void *dk, void *dv, const void *dout, const void *out,
                             const float *saved, const void *q, const void *k, const void *v,
                             const zt_attention_desc *a, float *scratch);
  void (*cross_entropy_forward)(zt_dtype dt, float *losses, float *lse, const void *logits, const int32_t *targets,
                                int N, int V);
  void (*cross_entropy_backward)(zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                                 const int32_t *targets, const float *dloss, int N, int V);
  void (*cross_entropy_vp_max)(zt_dtype dt, float *rowmax, const void *logits, int N, int V);
  void (*cross_entropy_vp_sums)(zt_dtype dt, float *sumexp, float *tlogit, const void *logits, const float *rowmax,
                                const int32_t *targets, int N, int V, int v0);
  void (*cross_entropy_vp_finish)(float *losses, float *lse, const float *rowmax, const float *sumexp,
                                  const float *tlogit, int N);
  void (*cross_entropy_vp_backward)(zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                                    const int32_t *targets, const float *dloss, int N, int V, int v0);
  /* Knowledge distillation per row (Megatron-DeepSpeed's calculate_mos_loss): with q = softmax(student / temp) and
   * p = softmax(teacher / temp) over each of N rows of V logits, row_loss[n] = sum over v of p (log p - log q)
   * (KLDivLoss's terms, 0 where p is 0) and grad[n, v] = gcoef (q - p); fp32 outputs in backend memory, written (=).
   * lse: NULL, or [2N] fp32 backend memory holding the log-sum-exps of student / temp (n) and teacher / temp (N + n)
   * over the whole vocabulary, when the rows are one tensor-parallel rank's slice of it (then row_loss is the slice's
   * share of the term). */
  void (*kd_rows)(zt_dtype dt, float *row_loss, float *grad, const void *student, const void *teacher, int N, int V,
                  double temp, double gcoef, const float *lse);
  /* The rows' own log-sum-exps for kd_rows: lse[n] of student[n] / temp, lse[N + n] of teacher[n] / temp (=). */
  void (*kd_lse)(zt_dtype dt, float *lse, const void *student, const void *teacher, int N, int V, double temp);

  /* ---- flat-buffer ops of the engine (fp32 buffers unless a dtype is given) ------------------------------- */
  /* dst[n] (dst_dt) = src[n] (src_dt), rounding to nearest even */
  void (*convert)(void *dst, zt_dtype dst_dt, const void *src, zt_dtype src_dt, size_t n);
  /* dst = src rounded to dt's values, kept in fp32; returns how many results are inf or nan */
  size_t (*round_f32)(float *dst, const float *src, size_t n, zt_dtype dt);
  size_t (*count_nonrepresentable)(const float *x, size_t n, zt_dtype dt);
  void (*scale_f32)(float *x, float f, size_t n);
  /* acc[n] += src[n] (dt), then src = 0: a micro batch's half gradients folded into the fp32 accumulation */
  void (*fold_f32)(float *acc, void *src, zt_dtype dt, size_t n);
  /* the L2 norm of x[n] (double accumulation, a fixed order: deterministic) */
  double (*norm2)(const float *x, size_t n);
  /* Adam/AdamW over the ranges [off[r], off[r] + len[r]) of the fp32 buffers with weight decay wd[r] (host
   * arrays), gradients times grad_scale and zeroed, and the updated weights also written to params_half in
   * half_dt when it is not NULL; the expression order of runtime/optim/optimizer.c's step. NULL on the CPU, whose
   * optimizer runs runtime/optim/optimizer.c itself. */
  void (*adam_step)(float *params, float *grads, float *m, float *v, void *params_half, zt_dtype half_dt,
                    const size_t *off, const size_t *len, const float *wd, int nranges, const zt_adam_args *args);
} zt_backend;

/* The CPU backend (always there). */
const zt_backend *zt_backend_cpu(void);
/* The CUDA backend on `device` (zt_cuda_init(device) first); NULL in a build without CUDA. */
const zt_backend *zt_backend_cuda(int device);

/* x + n elements of dt, in bytes. */
static inline void *zt_at(const void *x, zt_dtype dt, size_t n) { return (char *)x + n * zt_dtype_size(dt); }

/* Host data for a backend buffer: the host pointer itself where the backend's memory is host memory, else copied
 * into dev (n bytes) and dev returned. */
const void *zt_backend_stage_in(const zt_backend *be, void *dev, const void *host, size_t bytes);
/* Where to write host data meant for dev: dev itself on a host-visible backend, else host_scratch, followed by
 * zt_backend_commit(be, dev, host_scratch, bytes), which copies it there. */
void *zt_backend_host_view(const zt_backend *be, void *dev, void *host_scratch);
void zt_backend_commit(const zt_backend *be, void *dev, const void *host, size_t bytes);

#endif
