/* The CUDA op backend: the ops of runtime/ops/ops.h on device memory, in a storage dtype of fp32, bf16 or
 * fp16 with fp32 arithmetic, checked against the CPU reference by tests/cuda (every op, odd shapes, all three
 * dtypes, outputs poisoned before each run).
 *
 * Conventions (departures from ops.h are listed per op):
 *  - every pointer is device memory; `dt` is the storage dtype of every tensor argument of the call except
 *    per-row statistics (layernorm mean/rstd, attention and cross-entropy log-sum-exp, losses) and the
 *    optimizer's master weights, gradients and moments, which are fp32; ids and targets are int32;
 *  - parameter gradients accumulate (+=) in dt, activation gradients are written (=), as in ops.h;
 *  - everything runs on the backend's stream (zt_cuda_stream) in order; no call synchronizes the host
 *    unless it returns a host value;
 *  - a CUDA or cuBLAS error ends the process with the call, file and line (zt_fatal), never silently.
 * Without a CUDA build this header's functions do not exist: check zt_cuda_device_count() first. */
#ifndef ZT_CUDA_OPS_H
#define ZT_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- context: device, stream, cuBLASLt handle and workspace ----------------------------------------- */
/* Selects the device, creates the stream, the cuBLASLt handle and a 32 MiB workspace. Idempotent for the same
 * device; another device in the same process is refused (one device per process: a process of a multi-GPU job
 * passes its local rank's device). Every call below, memory included, runs on that device whichever host thread
 * makes it (the backend makes it the thread's current device first), and zt_cuda_mem_info reports that device
 * (before zt_cuda_init: the thread's current one). */
void zt_cuda_init(int device);
void zt_cuda_shutdown(void);
void *zt_cuda_stream(void); /* the cudaStream_t all ops run on */
void zt_cuda_synchronize(void);

/* ---- memory -------------------------------------------------------------------------------------------- */
void *zt_cuda_malloc(size_t bytes, const char *what); /* refuses with the size and free memory when full */
void zt_cuda_free(void *p);
void zt_cuda_memcpy_h2d(void *dst, const void *src, size_t bytes);
void zt_cuda_memcpy_d2h(void *dst, const void *src, size_t bytes); /* synchronizes with the stream */
void zt_cuda_memset(void *p, int byte, size_t bytes);
/* Device to device on the stream. dst == src is a no-op; other overlapping ranges are refused (the copy engine's
 * order is undefined for them). */
void zt_cuda_memcpy_d2d(void *dst, const void *src, size_t bytes);
/* backend.h's copy2d: row r of dst (+ r ld_dst elements) = row r of src (+ r ld_src), cols elements of dt each. */
void zt_cuda_copy2d(zt_dtype dt, void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t rows, size_t cols);
/* Device memory in use and total, bytes (cudaMemGetInfo). */
void zt_cuda_mem_info(size_t *free_bytes, size_t *total_bytes);
/* dst[n] (dst_dt) = src[n] (src_dt), round to nearest even; as zt_convert on the CPU. */
void zt_cuda_convert(void *dst, zt_dtype dst_dt, const void *src, zt_dtype src_dt, size_t n);

/* acc[n] (fp32) += src[n] (dt), then src = 0: a micro batch's half-precision gradients folded into the fp32
 * accumulation. acc and src must not overlap. */
void zt_cuda_fold_f32(float *acc, void *src, zt_dtype dt, size_t n);

/* ---- matmul (cuBLASLt, fp32 accumulation; fp32 in strict fp32, no TF32) ------------------------------
 * out[N,OC] = inp[N,IC] @ weight[OC,IC]^T + bias[OC] (bias may be NULL). With pre_gelu != NULL the GELU
 * epilogue is fused: pre_gelu receives the pre-activation and out = gelu_tanh(pre_gelu). */
void zt_cuda_matmul_forward(zt_dtype dt, void *out, void *pre_gelu, const void *inp, const void *weight,
                            const void *bias, int N, int IC, int OC);
/* dinp[N,IC] = dout @ weight (skipped when NULL); dweight[OC,IC] += dout^T @ inp; dbias[OC] += column sums of
 * dout (skipped when NULL). With pre_gelu != NULL, dout is first multiplied by gelu'(pre_gelu) in place
 * (dout then holds the gradient of the pre-activation). */
void zt_cuda_matmul_backward(zt_dtype dt, void *dinp, void *dweight, void *dbias, void *dout, const void *inp,
                             const void *weight, const void *pre_gelu, int N, int IC, int OC);

/* ---- layernorm (mean, rstd fp32 [N]) ------------------------------------------------------------------ */
void zt_cuda_layernorm_forward(zt_dtype dt, void *out, float *mean, float *rstd, const void *inp, const void *weight,
                               const void *bias, int N, int C, float eps);
void zt_cuda_layernorm_backward(zt_dtype dt, void *dinp, void *dweight, void *dbias, const void *dout,
                                const void *inp, const void *weight, const float *mean, const float *rstd, int N,
                                int C);
/* Fused residual + layernorm: res = a + b (written), out = layernorm(res). */
void zt_cuda_residual_layernorm_forward(zt_dtype dt, void *res, void *out, float *mean, float *rstd, const void *a,
                                        const void *b, const void *weight, const void *bias, int N, int C,
                                        float eps);

/* ---- RMSNorm, SwiGLU, rotary embedding, grouped-query attention's repeat_kv (the Llama-style layer), as
 * runtime/ops/ops.h's zt_rmsnorm_*, zt_swiglu_*, zt_rope, zt_gqa_pack and runtime/ops/backend.h -------------------
 * rmsnorm: rstd fp32 [N] (written); out = inp * rstd * w rounded once; N >= 0, C > 0. The backward writes dinp (=;
 * may alias dout) and accumulates dw (+=, in dt) from per-chunk fp32 column sums added in chunk order, as
 * layernorm's dweight (no atomics: the same bits run to run).
 * swiglu: inp [N, 2F] (gate half first), out [N, F] = silu(gate) * up; the backward writes dinp [N, 2F] (=; may alias
 * inp). N >= 0, F > 0.
 * rope: in place on x (row b T + t at + (b T + t) ld elements, head h at + h hs), pairs (i, i + rot/2), i < rot/2,
 * turned by cs[t rot + 2 i] (cos), cs[t rot + 2 i + 1] (sin), fp32 device memory; inverse: the opposite angle. rot
 * even, at most the head's width; nothing else of x is read or written.
 * gqa_pack: grouped rows of G (R + 2) HD ([R queries | key | value] per group), packed rows of 3 R G HD (head g R + j
 * = [query j of group g | its key | its value]); forward: packed (=) a copy of grouped's elements (bit for bit);
 * inverse: grouped (=) the queries copied and each key / value the fp32 sum over the group's R heads in head order
 * (the CPU's order), rounded once. N >= 0, G, R, HD > 0; packed and grouped do not overlap. */
void zt_cuda_rmsnorm_forward(zt_dtype dt, void *out, float *rstd, const void *inp, const void *w, int N, int C,
                             float eps);
void zt_cuda_rmsnorm_backward(zt_dtype dt, void *dinp, void *dw, const void *dout, const void *inp, const void *w,
                              const float *rstd, int N, int C);
void zt_cuda_swiglu_forward(zt_dtype dt, void *out, const void *inp, int N, int F);
void zt_cuda_swiglu_backward(zt_dtype dt, void *dinp, const void *dout, const void *inp, int N, int F);
void zt_cuda_rope(zt_dtype dt, void *x, const float *cs, int B, int T, int NH, int ld, int hs, int rot, int inverse);
void zt_cuda_gqa_pack(zt_dtype dt, void *packed, void *grouped, int N, int G, int R, int HD, int inverse);

/* ---- elementwise ---------------------------------------------------------------------------------------- */
void zt_cuda_gelu_forward(zt_dtype dt, void *out, const void *inp, size_t n);
void zt_cuda_gelu_backward(zt_dtype dt, void *dinp, const void *inp, const void *dout, size_t n);
void zt_cuda_residual_forward(zt_dtype dt, void *out, const void *a, const void *b, size_t n);
void zt_cuda_accumulate(zt_dtype dt, void *dst, const void *src, size_t n);
/* As zt_act_forward / zt_act_backward: out = act(inp); dinp = dout * act'(inp), written (=); out may alias inp, dinp
 * may alias dout or inp. GELU_TANH is zt_cuda_gelu_forward/backward (the same values); GELU_ERF and TANH use CUDA's
 * erff, expf, tanhf in the CPU's expression order. An unknown kind ends the process. */
void zt_cuda_act_forward(zt_dtype dt, zt_act_kind k, void *out, const void *inp, size_t n);
void zt_cuda_act_backward(zt_dtype dt, zt_act_kind k, void *dinp, const void *inp, const void *dout, size_t n);
/* Dropout with the CPU's masks bit for bit (same Philox stream, element and threshold); out may alias x. */
void zt_cuda_dropout_forward(zt_dtype dt, void *out, const void *x, int B, size_t S, const zt_dropout *d);
void zt_cuda_dropout_backward(zt_dtype dt, void *dx, const void *dout, int B, size_t S, const zt_dropout *d);
void zt_cuda_dropout_add_forward(zt_dtype dt, void *out, const void *residual, const void *x, int B, size_t S,
                                 const zt_dropout *d);
/* As zt_dropout_rows: the token rows [row0, row0 + n) of a micro batch of T tokens x C channels per sample (a
 * --sequence-parallel shard; out, residual and x hold those n rows), row r = b * T + t keyed as sample
 * d->first_sample + b, elements t * C + c, the CPU's masks bit for bit. out = residual + dropout(x), or dropout(x)
 * with residual NULL; out may alias x or residual. Also the backward of that dropout. */
void zt_cuda_dropout_rows(zt_dtype dt, void *out, const void *residual, const void *x, int row0, int n, int T, int C,
                          const zt_dropout *d);
/* A linear's bias apart from its GEMM (a row-parallel linear adds it after the tensor-parallel sum), as
 * zt_add_bias / zt_bias_grad: out[n, c] += bias[c]; dbias[c] += sum over n of dout[n, c], accumulated in fp32 in an
 * order fixed by N and C (per-chunk column sums added in chunk order, as the matmul's dbias) and rounded into dt
 * once: deterministic, equal to the CPU's within fp32 summation-order differences. */
void zt_cuda_add_bias(zt_dtype dt, void *out, const void *bias, int N, int C);
void zt_cuda_bias_grad(zt_dtype dt, void *dbias, const void *dout, int N, int C);
/* Per-row weights (the MoE layer's combine), as zt_scale_rows / zt_row_dot; w and out of row_dot are fp32 [N], x, a,
 * b and out of scale_rows [N, C] in dt; N >= 0, C > 0 (else zt_fatal naming them), N = 0 launches nothing.
 * scale_rows: out[n, c] = w[n] * x[n, c], one fp32 product rounded once to dt: the CPU's result rounded to dt, bit
 * for bit; out may alias x. row_dot: out[n] = sum over c of a[n, c] * b[n, c], written (=), one warp per row: lane l
 * sums columns l, l + 32, ... in order with fmaf in fp32, then a fixed butterfly over the lanes; deterministic, and
 * equal to the CPU's double sum within fp32 summation error. */
void zt_cuda_scale_rows(zt_dtype dt, void *out, const void *x, const float *w, int N, int C);
void zt_cuda_row_dot(zt_dtype dt, float *out, const void *a, const void *b, int N, int C);

/* ---- embedding ------------------------------------------------------------------------------------------ */
void zt_cuda_embedding_forward(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C,
                               int accumulate);
/* Deterministic: duplicates summed in token order, as on the CPU. */
void zt_cuda_embedding_backward(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C);
void zt_cuda_embedding_forward_range(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C,
                                     int v0, int rows);
void zt_cuda_embedding_backward_range(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C,
                                      int v0, int rows);

/* ---- fused attention: never materializes the Tq x Tk matrix ----------------------------------------------
 * Departure from ops.h: instead of probs, the forward keeps lse[B, NH, Tq] (fp32: log-sum-exp of the scaled,
 * masked scores; -inf for a row with no visible key) and the backward recomputes the probabilities from q, k
 * and lse. Layouts, masks, key_padding/key_start (device pointers), dropout element ids and head0 as in
 * zt_attention_desc. dq, dk, dv are written (=); they may share one fused QKV buffer (disjoint regions). */
void zt_cuda_attention_forward(zt_dtype dt, void *out, float *lse, const void *q, const void *k, const void *v,
                               const zt_attention_desc *a);
void zt_cuda_attention_backward(zt_dtype dt, void *dq, void *dk, void *dv, const void *dout, const void *out,
                                const float *lse, const void *q, const void *k, const void *v,
                                const zt_attention_desc *a);

/* ---- fused softmax + cross-entropy (losses, lse fp32 [N]; never stores the probabilities) ---------------- */
void zt_cuda_cross_entropy_forward(zt_dtype dt, float *losses, float *lse, const void *logits, const int32_t *targets,
                                   int N, int V);
/* dloss fp32 [N]; dlogits may alias logits. */
void zt_cuda_cross_entropy_backward(zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                                    const int32_t *targets, const float *dloss, int N, int V);
void zt_cuda_cross_entropy_vp_max(zt_dtype dt, float *rowmax, const void *logits, int N, int V);
void zt_cuda_cross_entropy_vp_sums(zt_dtype dt, float *sumexp, float *tlogit, const void *logits, const float *rowmax,
                                   const int32_t *targets, int N, int V, int v0);
/* After the all-reduces: lse[n] = rowmax[n] + log(sumexp[n]), losses[n] = lse[n] - tlogit[n] (all fp32 [N]). */
void zt_cuda_cross_entropy_vp_finish(float *losses, float *lse, const float *rowmax, const float *sumexp,
                                     const float *tlogit, int N);
void zt_cuda_cross_entropy_vp_backward(zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                                       const int32_t *targets, const float *dloss, int N, int V, int v0);
/* zt_backend.kd_rows and kd_lse on the GPU (runtime/ops/cuda/cross_entropy.cu), arithmetic in fp32. */
void zt_cuda_kd_rows(zt_dtype dt, float *row_loss, float *grad, const void *student, const void *teacher, int N, int V,
                     double temp, double gcoef, const float *lse);
void zt_cuda_kd_lse(zt_dtype dt, float *lse, const void *student, const void *teacher, int N, int V, double temp);

/* ---- optimizer (multi-tensor: one launch over a list of ranges of the flat fp32 buffers) -----------------
 * AdamW/Adam as zt_optimizer_step's ADAM_ELEMENT (same expression order): for each range r, elements
 * [off[r], off[r] + len[r]) use weight decay wd[r]. grads (fp32) are multiplied by grad_scale and zeroed;
 * when params_half != NULL the updated master weights are also written to it in half_dt. */
typedef struct {
  float lr, beta1, beta2, eps, inv_bc1, inv_sqrt_bc2, grad_scale;
  int adam_w_mode;
} zt_cuda_adam_args;
void zt_cuda_adam_step(float *params, float *grads, float *m, float *v, void *params_half, zt_dtype half_dt,
                       const size_t *off, const size_t *len, const float *wd, int nranges,
                       const zt_cuda_adam_args *args);
/* Sum of squares of x[n] (dt) accumulated in fp32 per block and double across blocks; returns it to the host
 * (synchronizes). Deterministic for a given n and launch shape. */
double zt_cuda_sumsq(zt_dtype dt, const void *x, size_t n);
/* How many of x[n] (fp32) are inf or nan (the fp16 overflow check); synchronizes. */
size_t zt_cuda_count_nonfinite(const float *x, size_t n);

/* ---- fp32 flat buffers of the engine (n may exceed 2^31; counts are exact integers, so deterministic) ----- */
/* x[n] *= f. */
void zt_cuda_scale_f32(float *x, float f, size_t n);
/* As zt_round_f32: dst = src rounded to the nearest dt value (round to nearest even, overflow to infinity), kept in
 * fp32 slots; dst may equal src (not otherwise overlap). Returns how many results are inf or nan (synchronizes). */
size_t zt_cuda_round_f32(float *dst, const float *src, size_t n, zt_dtype dt);
/* As zt_count_nonrepresentable: how many of x[n] are nan or beyond dt's largest finite value once rounded (fp16:
 * |x| >= 65520); synchronizes. */
size_t zt_cuda_count_nonrepresentable(const float *x, size_t n, zt_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
