/* The CUDA backend of the op table (runtime/ops/backend.h): runtime/ops/cuda's ops on one device. Without a CUDA
 * build there is none (zt_backend_cuda returns NULL). */
#include "runtime/ops/backend.h"

#ifdef ZT_HAVE_CUDA
#include <math.h>
#include <stdio.h>

#include "runtime/base/error.h"
#include "runtime/ops/cuda/cuda_device.h"
#include "runtime/ops/cuda/cuda_ops.h"

static size_t available(void) {
  size_t free_b = 0, total_b = 0;
  zt_cuda_mem_info(&free_b, &total_b);
  return free_b;
}
static void *alloc(size_t bytes, const char *what) {
  if (!bytes) return NULL;
  void *p = zt_cuda_malloc(bytes, what);
  zt_cuda_memset(p, 0, bytes);
  return p;
}
static void release(void *p, size_t bytes) {
  (void)bytes;
  if (p) zt_cuda_free(p);
}
/* the GPU keeps the log-sum-exp [B, NH, Tq] and recomputes the probabilities; no work space */
static size_t attn_saved(const zt_attention_desc *a) { return (size_t)a->B * a->NH * a->Tq; }
static size_t attn_scratch(const zt_attention_desc *a) {
  (void)a;
  return 0;
}
static void attn_bwd(zt_dtype dt, void *dq, void *dk, void *dv, const void *dout, const void *out, const float *saved,
                     const void *q, const void *k, const void *v, const zt_attention_desc *a, float *scratch) {
  (void)scratch;
  zt_cuda_attention_backward(dt, dq, dk, dv, dout, out, saved, q, k, v, a);
}
static double norm2(const float *x, size_t n) { return sqrt(zt_cuda_sumsq(ZT_DTYPE_FP32, x, n)); }
static void adam(float *params, float *grads, float *m, float *v, void *params_half, zt_dtype half_dt,
                 const size_t *off, const size_t *len, const float *wd, int nranges, const zt_adam_args *a) {
  const zt_cuda_adam_args c = {.lr = a->lr, .beta1 = a->beta1, .beta2 = a->beta2, .eps = a->eps,
                               .inv_bc1 = a->inv_bc1, .inv_sqrt_bc2 = a->inv_sqrt_bc2, .grad_scale = a->grad_scale,
                               .adam_w_mode = a->adam_w_mode};
  zt_cuda_adam_step(params, grads, m, v, params_half, half_dt, off, len, wd, nranges, &c);
}

static zt_backend k_cuda = {
    .kind = ZT_BACKEND_CUDA, .host_visible = 0,
    .available = available, .alloc = alloc, .release = release, .memset = zt_cuda_memset,
    .copy = zt_cuda_memcpy_d2d, .copy2d = zt_cuda_copy2d, .to_host = zt_cuda_memcpy_d2h,
    .from_host = zt_cuda_memcpy_h2d,
    .synchronize = zt_cuda_synchronize,
    .matmul_forward = zt_cuda_matmul_forward, .matmul_backward = zt_cuda_matmul_backward,
    .layernorm_forward = zt_cuda_layernorm_forward, .layernorm_backward = zt_cuda_layernorm_backward,
    .rmsnorm_forward = zt_cuda_rmsnorm_forward, .rmsnorm_backward = zt_cuda_rmsnorm_backward,
    .swiglu_forward = zt_cuda_swiglu_forward, .swiglu_backward = zt_cuda_swiglu_backward, .rope = zt_cuda_rope,
    .gqa_pack = zt_cuda_gqa_pack,
    .dropout_forward = zt_cuda_dropout_forward, .dropout_backward = zt_cuda_dropout_backward,
    .dropout_add_forward = zt_cuda_dropout_add_forward, .dropout_rows = zt_cuda_dropout_rows,
    .accumulate = zt_cuda_accumulate, .act_forward = zt_cuda_act_forward, .act_backward = zt_cuda_act_backward,
    .add_bias = zt_cuda_add_bias, .bias_grad = zt_cuda_bias_grad, .scale_rows = zt_cuda_scale_rows,
    .row_dot = zt_cuda_row_dot,
    .embedding_forward = zt_cuda_embedding_forward, .embedding_backward = zt_cuda_embedding_backward,
    .embedding_forward_range = zt_cuda_embedding_forward_range,
    .embedding_backward_range = zt_cuda_embedding_backward_range,
    .attention_saved_floats = attn_saved, .attention_scratch_floats = attn_scratch,
    .attention_forward = zt_cuda_attention_forward, .attention_backward = attn_bwd,
    .cross_entropy_forward = zt_cuda_cross_entropy_forward, .cross_entropy_backward = zt_cuda_cross_entropy_backward,
    .cross_entropy_vp_max = zt_cuda_cross_entropy_vp_max, .cross_entropy_vp_sums = zt_cuda_cross_entropy_vp_sums,
    .cross_entropy_vp_finish = zt_cuda_cross_entropy_vp_finish,
    .cross_entropy_vp_backward = zt_cuda_cross_entropy_vp_backward, .kd_rows = zt_cuda_kd_rows, .kd_lse = zt_cuda_kd_lse,
    .convert = zt_cuda_convert, .round_f32 = zt_cuda_round_f32,
    .count_nonrepresentable = zt_cuda_count_nonrepresentable, .scale_f32 = zt_cuda_scale_f32,
    .fold_f32 = zt_cuda_fold_f32, .norm2 = norm2, .adam_step = adam};

static char k_name[300];

const zt_backend *zt_backend_cuda(int device) {
  zt_cuda_init(device);
  if (!k_name[0]) {
    char desc[256] = "";
    zt_cuda_device_describe(device, desc, sizeof desc);
    snprintf(k_name, sizeof k_name, "GPU %d (%s)", device, desc);
    k_cuda.name = k_name;
  }
  return &k_cuda;
}
#else
const zt_backend *zt_backend_cuda(int device) {
  (void)device;
  return 0;
}
#endif
