// Fused softmax + cross-entropy on the GPU, and the vocab-parallel pieces around the model's all-reduces
// (runtime/ops/cpu/cross_entropy.c). The probabilities are never stored: the forward keeps lse[N] and the
// backward recomputes exp(logit - lse).
//
// Kernels (T is the storage type of the logits; lse, losses and the vocab-parallel statistics are fp32), all
// with one block per row of V logits, row_threads(V) threads (32..512, about 8 logits each) looping over the row,
// so any V works (V = 1, odd V, 256k):
//  - ce_forward_kernel: one pass over the row: each thread keeps a running max m and sum s of exp(l - m)
//    (rescaling s when the max grows), then the block combines them: M = max m, S = sum s * exp(m - M);
//    lse = M + log S, loss = lse - l[target]. Reads the row once.
//  - ce_max_kernel / ce_sums_kernel: the row max, and sum exp(l - rowmax) with the target's logit when it lies in
//    the slice [v0, v0 + V) (0 otherwise). One read of the row each.
//  - ce_finish_kernel (after the all-reduces of the statistics): lse = rowmax + log(sumexp), loss = lse - tlogit,
//    one thread per row, grid-stride.
//  - ce_backward_kernel: dlogits = exp(l - lse) * dloss, minus dloss at the target when it lies in [v0, v0 + V)
//    (v0 = 0 for the full vocabulary). Reads and writes the row once; each element is read, then written, by the
//    same thread, so dlogits may alias logits.
//  - kd_kernel (knowledge distillation, zt_backend.kd_rows): the running max and sum of exp for both rows (student
//    and teacher over temp) in one pass, combined over the block as in ce_forward_kernel; then a second pass writes
//    grad = gcoef (q - p) (fp32) and sums p (log p - log q) into the row's loss. Two reads of each row and one fp32
//    write: the bandwidth bound; the logits never leave the GPU. With a tensor-parallel student the rows are one
//    rank's vocabulary slice: kd_lse_kernel writes the slices' log-sum-exps (one read), and after their combination
//    over the ranks kd_kernel takes the whole vocabulary's and makes only the second pass.
// A target outside [0, V) makes the full forward's loss NaN (the CPU would read out of bounds) and is ignored
// by the full backward.
#include "runtime/ops/cuda/common.cuh"

// Threads of a block that owns one row of V logits: about 8 logits per thread, a whole number of warps.
static unsigned row_threads(int V) {
  unsigned t = ((unsigned)(V + 7) / 8 + 31) / 32 * 32;
  return t < 32 ? 32 : t > 512 ? 512 : t;
}

template <typename T>
__global__ void ce_forward_kernel(float *losses, float *lse, const T *logits, const int32_t *targets, int V) {
  const int n = blockIdx.x;
  const T *l = logits + (size_t)n * V;
  float m = -INFINITY, s = 0.0f;  // this thread's running max and sum of exp(l - m)
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float x = zt_ld(l, v);
    if (x > m) {
      s = s * expf(m - x) + 1.0f;
      m = x;
    } else {
      s += expf(x - m);
    }
  }
  const float M = zt_block_max(m);
  const float S = zt_block_sum(s > 0.0f ? s * expf(m - M) : 0.0f);  // s == 0: a thread with no logit (m = -inf)
  if (threadIdx.x == 0) {
    const float z = M + logf(S);
    const int t = targets[n];
    lse[n] = z;
    losses[n] = t >= 0 && t < V ? z - zt_ld(l, t) : NAN;
  }
}

template <typename T>
__global__ void ce_max_kernel(float *rowmax, const T *logits, int V) {
  const T *l = logits + (size_t)blockIdx.x * V;
  float m = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, zt_ld(l, v));
  m = zt_block_max(m);
  if (threadIdx.x == 0) rowmax[blockIdx.x] = m;
}

template <typename T>
__global__ void ce_sums_kernel(float *sumexp, float *tlogit, const T *logits, const float *rowmax,
                               const int32_t *targets, int V, int v0) {
  const int n = blockIdx.x;
  const T *l = logits + (size_t)n * V;
  const float m = rowmax[n];
  float s = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) s += expf(zt_ld(l, v) - m);
  s = zt_block_sum(s);
  if (threadIdx.x == 0) {
    const long long t = (long long)targets[n] - v0;
    sumexp[n] = s;
    tlogit[n] = t >= 0 && t < V ? zt_ld(l, t) : 0.0f;
  }
}

__global__ void ce_finish_kernel(float *losses, float *lse, const float *rowmax, const float *sumexp,
                                 const float *tlogit, int N) {
  for (size_t n = blockIdx.x * (size_t)blockDim.x + threadIdx.x; n < (size_t)N; n += (size_t)gridDim.x * blockDim.x) {
    const float z = rowmax[n] + logf(sumexp[n]);
    lse[n] = z;
    losses[n] = z - tlogit[n];
  }
}

template <typename T>
__global__ void ce_backward_kernel(T *dlogits, const T *logits, const float *lse, const int32_t *targets,
                                   const float *dloss, int V, int v0) {
  const int n = blockIdx.x;
  const size_t row = (size_t)n * V;
  const float w = dloss[n], z = lse[n];
  const long long t = (long long)targets[n] - v0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    float g = expf(zt_ld(logits, row + v) - z) * w;
    if (v == t) g -= w;
    zt_st(dlogits, row + v, g);
  }
}

static void check_shape(const char *op, int N, int V) {
  zt_check(N >= 0 && V > 0, op, "N=%d rows of V=%d logits: need N >= 0 and V > 0", N, V);
}

extern "C" void zt_cuda_cross_entropy_forward(zt_dtype dt, float *losses, float *lse, const void *logits,
                                              const int32_t *targets, int N, int V) {
  check_shape("zt_cuda_cross_entropy_forward", N, V);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_forward_kernel<T><<<N, row_threads(V), 0, zt_stream()>>>(losses, lse, (const T *)logits, targets, V);
    ZT_CUDA_LAUNCHED();
  });
}

static void ce_backward(const char *op, zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                        const int32_t *targets, const float *dloss, int N, int V, int v0) {
  check_shape(op, N, V);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_backward_kernel<T><<<N, row_threads(V), 0, zt_stream()>>>((T *)dlogits, (const T *)logits, lse, targets,
                                                                 dloss, V, v0);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_cross_entropy_backward(zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                                               const int32_t *targets, const float *dloss, int N, int V) {
  ce_backward("zt_cuda_cross_entropy_backward", dt, dlogits, logits, lse, targets, dloss, N, V, 0);
}

extern "C" void zt_cuda_cross_entropy_vp_max(zt_dtype dt, float *rowmax, const void *logits, int N, int V) {
  check_shape("zt_cuda_cross_entropy_vp_max", N, V);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_max_kernel<T><<<N, row_threads(V), 0, zt_stream()>>>(rowmax, (const T *)logits, V);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_cross_entropy_vp_sums(zt_dtype dt, float *sumexp, float *tlogit, const void *logits,
                                              const float *rowmax, const int32_t *targets, int N, int V, int v0) {
  check_shape("zt_cuda_cross_entropy_vp_sums", N, V);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_sums_kernel<T><<<N, row_threads(V), 0, zt_stream()>>>(sumexp, tlogit, (const T *)logits, rowmax, targets, V,
                                                             v0);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_cross_entropy_vp_finish(float *losses, float *lse, const float *rowmax, const float *sumexp,
                                                const float *tlogit, int N) {
  zt_check(N >= 0, "zt_cuda_cross_entropy_vp_finish", "N=%d rows: need N >= 0", N);
  if (N == 0) return;
  ce_finish_kernel<<<zt_blocks((size_t)N, 256), 256, 0, zt_stream()>>>(losses, lse, rowmax, sumexp, tlogit, N);
  ZT_CUDA_LAUNCHED();
}

extern "C" void zt_cuda_cross_entropy_vp_backward(zt_dtype dt, void *dlogits, const void *logits, const float *lse,
                                                  const int32_t *targets, const float *dloss, int N, int V, int v0) {
  ce_backward("zt_cuda_cross_entropy_vp_backward", dt, dlogits, logits, lse, targets, dloss, N, V, v0);
}

// ---- knowledge distillation ---------------------------------------------------------------------------------------
// One thread's running max m and sum s of exp(x - m) over the values it sees, combined over the block.
struct RunningLse {
  float m = -INFINITY, s = 0.0f;
  __device__ void add(float x) {
    if (x > m) {
      s = s * expf(m - x) + 1.0f;
      m = x;
    } else {
      s += expf(x - m);
    }
  }
  __device__ float block_lse() const {  // log sum exp over the whole block
    const float M = zt_block_max(m);
    const float S = zt_block_sum(s > 0.0f ? s * expf(m - M) : 0.0f);
    return M + logf(S);
  }
};

// The log-sum-exps of a student and a teacher row over temp: one read of each row.
template <typename T>
__device__ void kd_row_lse(const T *student, const T *teacher, size_t row, int V, float inv_temp, float *lzs,
                           float *lzt) {
  RunningLse ls, lt;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    ls.add(zt_ld(student, row + v) * inv_temp);
    lt.add(zt_ld(teacher, row + v) * inv_temp);
  }
  *lzs = ls.block_lse();
  *lzt = lt.block_lse();
}

template <typename T>
__global__ void kd_lse_kernel(float *lse, const T *student, const T *teacher, int N, int V, float inv_temp) {
  const int n = blockIdx.x;
  float lzs, lzt;
  kd_row_lse(student, teacher, (size_t)n * V, V, inv_temp, &lzs, &lzt);
  if (threadIdx.x == 0) lse[n] = lzs, lse[N + n] = lzt;
}

// lse: NULL (the rows' own log-sum-exps, one more read of each row) or [2N] given (the whole vocabulary's).
template <typename T>
__global__ void kd_kernel(float *row_loss, float *grad, const T *student, const T *teacher, int N, int V,
                          float inv_temp, float gcoef, const float *lse) {
  const int n = blockIdx.x;
  const size_t row = (size_t)n * V;
  float lzs, lzt;
  if (lse) lzs = lse[n], lzt = lse[N + n];
  else kd_row_lse(student, teacher, row, V, inv_temp, &lzs, &lzt);
  float kl = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float logq = zt_ld(student, row + v) * inv_temp - lzs, logp = zt_ld(teacher, row + v) * inv_temp - lzt;
    const float p = expf(logp);
    if (p > 0.0f) kl += p * (logp - logq);
    grad[row + v] = gcoef * (expf(logq) - p);
  }
  kl = zt_block_sum(kl);
  if (threadIdx.x == 0) row_loss[n] = kl;
}

extern "C" void zt_cuda_kd_rows(zt_dtype dt, float *row_loss, float *grad, const void *student, const void *teacher,
                                int N, int V, double temp, double gcoef, const float *lse) {
  check_shape("zt_cuda_kd_rows", N, V);
  zt_check(temp > 0, "zt_cuda_kd_rows", "temperature %g: must be > 0", temp);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    kd_kernel<T><<<N, row_threads(V), 0, zt_stream()>>>(row_loss, grad, (const T *)student, (const T *)teacher, N, V,
                                                         (float)(1.0 / temp), (float)gcoef, lse);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_kd_lse(zt_dtype dt, float *lse, const void *student, const void *teacher, int N, int V,
                               double temp) {
  check_shape("zt_cuda_kd_lse", N, V);
  zt_check(temp > 0, "zt_cuda_kd_lse", "temperature %g: must be > 0", temp);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    kd_lse_kernel<T><<<N, row_threads(V), 0, zt_stream()>>>(lse, (const T *)student, (const T *)teacher, N, V,
                                                             (float)(1.0 / temp));
    ZT_CUDA_LAUNCHED();
  });
}
