/* The CPU backend of the op table (runtime/ops/backend.h): the reference ops of runtime/ops/cpu on fp32 storage,
 * memory from anonymous mappings (zeroed, resident once touched), and the shared staging helpers. */
#include <string.h>
#include <sys/mman.h>

#include "runtime/base/error.h"
#include "runtime/base/memplan.h"
#include "runtime/ops/backend.h"
#include "runtime/optim/optimizer.h"

static void fp32_only(zt_dtype dt, const char *op) {
  if (dt != ZT_DTYPE_FP32)
    zt_fatal("internal error", "the CPU backend's %s stores fp32 (mixed precision on the CPU keeps %s values in fp32 "
             "slots), asked for %s", op, zt_dtype_name(dt), zt_dtype_name(dt));
}
#define F32(op) fp32_only(dt, op)

static size_t cpu_available(void) { return zt_host_available_bytes(); }

static void *cpu_alloc(size_t bytes, const char *what) {
  if (!bytes) return NULL;
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) zt_fatal("out of memory", "mapping %zu bytes (%.1f MiB) for %s", bytes, bytes / 1048576.0, what);
  return m;
}
static void cpu_release(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}
static void cpu_memset(void *p, int byte, size_t bytes) { memset(p, byte, bytes); }
static void cpu_copy(void *dst, const void *src, size_t bytes) {
  if (dst != src) memmove(dst, src, bytes);
}
static void cpu_copy2d(zt_dtype dt, void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t rows,
                       size_t cols) {
  F32("copy2d");
  for (size_t r = 0; r < rows; r++) memcpy((float *)dst + r * ld_dst, (const float *)src + r * ld_src, cols * 4);
}
static void cpu_sync(void) {}

static void matmul_fwd(zt_dtype dt, void *out, void *pre_gelu, const void *inp, const void *w, const void *b, int N,
                       int IC, int OC) {
  F32("matmul");
  if (!pre_gelu) {
    zt_matmul_forward(out, inp, w, b, N, IC, OC);
    return;
  }
  zt_matmul_forward(pre_gelu, inp, w, b, N, IC, OC);
  zt_gelu_forward(out, pre_gelu, (size_t)N * OC);
}
static void matmul_bwd(zt_dtype dt, void *dinp, void *dw, void *db, void *dout, const void *inp, const void *w,
                       const void *pre_gelu, int N, int IC, int OC) {
  F32("matmul");
  if (pre_gelu) zt_gelu_backward(dout, pre_gelu, dout, (size_t)N * OC);
  zt_matmul_backward(dinp, dw, db, dout, inp, w, N, IC, OC);
}
static void ln_fwd(zt_dtype dt, void *out, float *mean, float *rstd, const void *inp, const void *w, const void *b,
                   int N, int C, float eps) {
  F32("layernorm");
  zt_layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps);
}
static void ln_bwd(zt_dtype dt, void *dinp, void *dw, void *db, const void *dout, const void *inp, const void *w,
                   const float *mean, const float *rstd, int N, int C) {
  F32("layernorm");
  zt_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void rms_fwd(zt_dtype dt, void *out, float *rstd, const void *inp, const void *w, int N, int C, float eps) {
  F32("rmsnorm");
  zt_rmsnorm_forward(out, rstd, inp, w, N, C, eps);
}
static void rms_bwd(zt_dtype dt, void *dinp, void *dw, const void *dout, const void *inp, const void *w,
                    const float *rstd, int N, int C) {
  F32("rmsnorm");
  zt_rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
}
static void swiglu_fwd(zt_dtype dt, void *out, const void *inp, int N, int F) {
  F32("swiglu");
  zt_swiglu_forward(out, inp, N, F);
}
static void swiglu_bwd(zt_dtype dt, void *dinp, const void *dout, const void *inp, int N, int F) {
  F32("swiglu");
  zt_swiglu_backward(dinp, dout, inp, N, F);
}
static void rope(zt_dtype dt, void *x, const float *cs, int B, int T, int NH, int ld, int hs, int rot, int inverse) {
  F32("rope");
  zt_rope(x, cs, B, T, NH, ld, hs, rot, inverse);
}
static void gqa_pack(zt_dtype dt, void *packed, void *grouped, int N, int G, int R, int HD, int inverse) {
  F32("gqa_pack");
  zt_gqa_pack(packed, grouped, N, G, R, HD, inverse);
}
static void drop_fwd(zt_dtype dt, void *out, const void *x, int B, size_t S, const zt_dropout *d) {
  F32("dropout");
  zt_dropout_forward(out, x, B, S, d);
}
static void drop_bwd(zt_dtype dt, void *dx, const void *dout, int B, size_t S, const zt_dropout *d) {
  F32("dropout");
  zt_dropout_backward(dx, dout, B, S, d);
}
static void drop_add(zt_dtype dt, void *out, const void *res, const void *x, int B, size_t S, const zt_dropout *d) {
  F32("dropout");
  zt_dropout_add_forward(out, res, x, B, S, d);
}
static void drop_rows(zt_dtype dt, void *out, const void *res, const void *x, int row0, int n, int T, int C,
                      const zt_dropout *d) {
  F32("dropout");
  zt_dropout_rows(out, res, x, row0, n, T, C, d);
}
static void accumulate(zt_dtype dt, void *dst, const void *src, size_t n) {
  F32("accumulate");
  zt_accumulate(dst, src, n);
}
static void act_fwd(zt_dtype dt, zt_act_kind k, void *out, const void *inp, size_t n) {
  F32("activation");
  zt_act_forward(k, out, inp, n);
}
static void act_bwd(zt_dtype dt, zt_act_kind k, void *dinp, const void *inp, const void *dout, size_t n) {
  F32("activation");
  zt_act_backward(k, dinp, inp, dout, n);
}
static void add_bias(zt_dtype dt, void *out, const void *bias, int N, int C) {
  F32("bias");
  zt_add_bias(out, bias, N, C);
}
static void bias_grad(zt_dtype dt, void *dbias, const void *dout, int N, int C) {
  F32("bias");
  zt_bias_grad(dbias, dout, N, C);
}
static void scale_rows(zt_dtype dt, void *out, const void *x, const float *w, int N, int C) {
  F32("scale_rows");
  zt_scale_rows(out, x, w, N, C);
}
static void row_dot(zt_dtype dt, float *out, const void *a, const void *b, int N, int C) {
  F32("row_dot");
  zt_row_dot(out, a, b, N, C);
}
static void emb_fwd(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C, int acc) {
  F32("embedding");
  zt_embedding_forward(out, ids, table, N, C, acc);
}
static void emb_bwd(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C) {
  F32("embedding");
  zt_embedding_backward(dtable, ids, dout, N, C);
}
static void emb_fwd_range(zt_dtype dt, void *out, const int32_t *ids, const void *table, int N, int C, int v0,
                          int rows) {
  F32("embedding");
  zt_embedding_forward_range(out, ids, table, N, C, v0, rows);
}
static void emb_bwd_range(zt_dtype dt, void *dtable, const int32_t *ids, const void *dout, int N, int C, int v0,
                          int rows) {
  F32("embedding");
  zt_embedding_backward_range(dtable, ids, dout, N, C, v0, rows);
}
/* the CPU keeps the probabilities: [B, NH, Tq, Tk], or a block-sparse layout's listed tiles; chunked (FPDT) only the
 * rows' log-sum-exps, its backward reading the forward's output */
static size_t attn_saved(const zt_attention_desc *a) { return zt_attention_saved_floats(a); }
static size_t attn_scratch(const zt_attention_desc *a) { return zt_attention_scratch_floats(a); }
static void attn_fwd(zt_dtype dt, void *out, float *saved, const void *q, const void *k, const void *v,
                     const zt_attention_desc *a) {
  F32("attention");
  zt_attention_forward(out, saved, q, k, v, a);
}
static void attn_bwd(zt_dtype dt, void *dq, void *dk, void *dv, const void *dout, const void *out, const float *saved,
                     const void *q, const void *k, const void *v, const zt_attention_desc *a, float *scratch) {
  F32("attention");
  if (a->chunk > 0)
    zt_attention_chunked_backward(dq, dk, dv, dout, out, saved, q, k, v, a, scratch);
  else
    zt_attention_backward(dq, dk, dv, dout, saved, q, k, v, a, scratch);
}
static void ce_fwd(zt_dtype dt, float *losses, float *lse, const void *logits, const int32_t *targets, int N, int V) {
  F32("cross-entropy");
  zt_cross_entropy_forward(losses, lse, logits, targets, N, V);
}
static void ce_bwd(zt_dtype dt, void *dlogits, const void *logits, const float *lse, const int32_t *targets,
                   const float *dloss, int N, int V) {
  F32("cross-entropy");
  zt_cross_entropy_backward(dlogits, logits, lse, targets, dloss, N, V);
}
static void ce_vp_max(zt_dtype dt, float *rowmax, const void *logits, int N, int V) {
  F32("cross-entropy");
  zt_cross_entropy_vp_max(rowmax, logits, N, V);
}
static void ce_vp_sums(zt_dtype dt, float *sumexp, float *tlogit, const void *logits, const float *rowmax,
                       const int32_t *targets, int N, int V, int v0) {
  F32("cross-entropy");
  zt_cross_entropy_vp_sums(sumexp, tlogit, logits, rowmax, targets, N, V, v0);
}
static void ce_vp_bwd(zt_dtype dt, void *dlogits, const void *logits, const float *lse, const int32_t *targets,
                      const float *dloss, int N, int V, int v0) {
  F32("cross-entropy");
  zt_cross_entropy_vp_backward(dlogits, logits, lse, targets, dloss, N, V, v0);
}
static void kd_rows(zt_dtype dt, float *row_loss, float *grad, const void *s, const void *t, int N, int V,
                    double temp, double gcoef, const float *lse) {
  F32("knowledge distillation");
  zt_kd_rows(row_loss, grad, s, t, N, V, temp, gcoef, lse);
}
static void kd_lse(zt_dtype dt, float *lse, const void *s, const void *t, int N, int V, double temp) {
  F32("knowledge distillation");
  zt_kd_lse(lse, s, t, N, V, temp);
}
static void scale_f32(float *x, float f, size_t n) {
  #pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) x[i] *= f;
}
static void fold(float *acc, void *src, zt_dtype dt, size_t n) {
  (void)acc, (void)src, (void)n;
  zt_fatal("internal error", "the CPU backend accumulates gradients in fp32 directly (fold of %s)", zt_dtype_name(dt));
}

static const zt_backend k_cpu = {
    .kind = ZT_BACKEND_CPU, .name = "CPU", .host_visible = 1,
    .available = cpu_available, .alloc = cpu_alloc, .release = cpu_release, .memset = cpu_memset, .copy = cpu_copy,
    .copy2d = cpu_copy2d,
    .to_host = cpu_copy, .from_host = cpu_copy, .synchronize = cpu_sync,
    .matmul_forward = matmul_fwd, .matmul_backward = matmul_bwd, .layernorm_forward = ln_fwd,
    .layernorm_backward = ln_bwd, .rmsnorm_forward = rms_fwd, .rmsnorm_backward = rms_bwd,
    .swiglu_forward = swiglu_fwd, .swiglu_backward = swiglu_bwd, .rope = rope, .gqa_pack = gqa_pack,
    .dropout_forward = drop_fwd, .dropout_backward = drop_bwd,
    .dropout_add_forward = drop_add, .dropout_rows = drop_rows, .accumulate = accumulate, .act_forward = act_fwd,
    .act_backward = act_bwd, .add_bias = add_bias, .bias_grad = bias_grad, .scale_rows = scale_rows,
    .row_dot = row_dot, .embedding_forward = emb_fwd, .embedding_backward = emb_bwd,
    .embedding_forward_range = emb_fwd_range, .embedding_backward_range = emb_bwd_range,
    .attention_saved_floats = attn_saved, .attention_scratch_floats = attn_scratch, .attention_forward = attn_fwd,
    .attention_backward = attn_bwd, .cross_entropy_forward = ce_fwd, .cross_entropy_backward = ce_bwd,
    .cross_entropy_vp_max = ce_vp_max, .cross_entropy_vp_sums = ce_vp_sums,
    .cross_entropy_vp_finish = zt_cross_entropy_vp_finish, .cross_entropy_vp_backward = ce_vp_bwd, .kd_rows = kd_rows, .kd_lse = kd_lse,
    .convert = zt_convert, .round_f32 = zt_round_f32, .count_nonrepresentable = zt_count_nonrepresentable,
    .scale_f32 = scale_f32, .fold_f32 = fold, .norm2 = zt_grad_global_norm, .adam_step = NULL};

const zt_backend *zt_backend_cpu(void) { return &k_cpu; }

const void *zt_backend_stage_in(const zt_backend *be, void *dev, const void *host, size_t bytes) {
  if (!host || be->host_visible) return host;
  be->from_host(dev, host, bytes);
  return dev;
}

void *zt_backend_host_view(const zt_backend *be, void *dev, void *host_scratch) {
  return be->host_visible ? dev : host_scratch;
}

void zt_backend_commit(const zt_backend *be, void *dev, const void *host, size_t bytes) {
  if (dev != host) be->from_host(dev, host, bytes);
}
