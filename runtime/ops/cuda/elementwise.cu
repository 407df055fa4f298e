// Elementwise ops on the GPU: GELU (tanh form) and its backward, the activation family (GELU tanh and erf forms,
// tanh, and their backwards), residual add, gradient accumulation, dropout (plain, backward, fused with the
// residual add, on a range of token rows) with the CPU's Philox masks bit for bit, and per-row weights (rows scaled
// by a weight each, row-wise dot products: the MoE layer's combine), SwiGLU and the strided 2-D copy; the formulas
// are those of runtime/ops/cpu/gelu.c, activation.c, elementwise.c, dropout.c and llama_ops.c.
//
// Kernels (T is the storage type; arithmetic in fp32):
//  - map_kernel: out[i] = f(x[i], y[i]) for the activations forward/backward, residual and accumulate;
//    grid-stride, 256 threads. When every pointer is 16-byte aligned it moves 16-byte packs (4 fp32 or 8 bf16/fp16
//    elements) and finishes the n % 4 (or 8) tail element by element, otherwise it goes element by element; one
//    read of each input and one write, the bandwidth bound. out may alias x or y (each element is read, then
//    written, by the same thread).
//  - scale_rows_kernel: out[i] = w[i / C] * x[i] over the N * C elements, grid-stride, 256 threads, element by
//    element (small tensors: the MoE combine's [tokens, hidden]); out may alias x as in map_kernel.
//  - row_dot_kernel: one warp per row, 8 rows per block of 256 threads, rows grid-stride; lane l accumulates
//    columns l, l + 32, ... in order in fp32 (fmaf), then zt_warp_sum's butterfly: an order fixed by C alone, so
//    deterministic. No shared memory and no barrier (a warp whose row is past N leaves as a whole).
//  - swiglu_forward_kernel / swiglu_backward_kernel (runtime/ops/cpu/llama_ops.c): out[n, f] = silu(g) * u of the
//    rows [g | u] of 2F values; one thread per (n, f), grid-stride, 256 threads; the backward reads g and u, then
//    writes dg and du, so dinp may alias inp.
//  - dropout_kernel: a span of flat elements of x[B, S] (all of it, or the token rows [row0, row0 + n) of
//    zt_cuda_dropout_rows, which may start and end inside samples); one thread per group of four elements
//    [4q, 4q + 4) of a sample, which share one Philox4x32 draw (the CPU draws the same counter for the same four
//    elements), grid-stride; one read of x (and of the residual) and one write. out may alias x (or the residual).
//  - copy2d_kernel: dst[r ld_dst + c] = src[r ld_src + c], one thread per element (c fastest), grid-stride, 256
//    threads: a copy of the storage element (bit for bit); DeepSpeed-Ulysses' all-to-all packing.
#include "runtime/ops/cuda/common.cuh"

// 16 bytes of T: the unit of the vectorized path.
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int K = 16 / sizeof(T);
  T v[K];
};

// out[i] = f(x[i], y[i]) for i < n (f sees 0 for y when y is NULL); packed: every pointer is 16-byte aligned.
template <typename T, typename F>
__global__ void map_kernel(T *out, const T *x, const T *y, size_t n, bool packed, F f) {
  constexpr int K = Pack16<T>::K;
  const size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  size_t tail = 0;
  if (packed) {
    const size_t np = n / K;
    for (size_t p = tid; p < np; p += stride) {
      const Pack16<T> a = reinterpret_cast<const Pack16<T> *>(x)[p];
      const Pack16<T> b = y ? reinterpret_cast<const Pack16<T> *>(y)[p] : a;
      Pack16<T> o;
#pragma unroll
      for (int k = 0; k < K; k++) zt_st(o.v, k, f(zt_ld(a.v, k), y ? zt_ld(b.v, k) : 0.0f));
      reinterpret_cast<Pack16<T> *>(out)[p] = o;
    }
    tail = np * K;
  }
  for (size_t i = tail + tid; i < n; i += stride) zt_st(out, i, f(zt_ld(x, i), y ? zt_ld(y, i) : 0.0f));
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

template <typename F>
static void map_launch(zt_dtype dt, void *out, const void *x, const void *y, size_t n, F f) {
  if (n == 0) return;
  const bool packed = aligned16(out) && aligned16(x) && (!y || aligned16(y));
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    const size_t K = Pack16<T>::K, work = packed ? (n + K - 1) / K : n;
    map_kernel<T><<<zt_blocks(work, 256), 256, 0, zt_stream()>>>((T *)out, (const T *)x, (const T *)y, n, packed,
                                                                 f);
    ZT_CUDA_LAUNCHED();
  });
}

struct GeluForward {
  __device__ float operator()(float x, float) const { return zt_gelu(x); }
};
struct GeluBackward {  // x = the GELU input, dy = the gradient of its output
  __device__ float operator()(float x, float dy) const { return dy * zt_gelu_grad(x); }
};
// The exact GELU of torch.nn.functional.gelu and tanh, in the CPU's (and PyTorch's) expression order
// (runtime/ops/cpu/activation.c); x = the activation's input, dy = the gradient of its output.
#define ZT_SQRT1_2 0.70710678118654752440f    // 1 / sqrt(2)
#define ZT_INV_SQRT_2PI 0.39894228040143267794f  // 1 / sqrt(2 pi)
struct GeluErfForward {
  __device__ float operator()(float x, float) const { return x * 0.5f * (1.0f + erff(x * ZT_SQRT1_2)); }
};
struct GeluErfBackward {
  __device__ float operator()(float x, float dy) const {
    const float cdf = 0.5f * (1.0f + erff(x * ZT_SQRT1_2));
    const float pdf = ZT_INV_SQRT_2PI * expf(x * x * -0.5f);
    return dy * (cdf + x * pdf);
  }
};
struct TanhForward {
  __device__ float operator()(float x, float) const { return tanhf(x); }
};
struct TanhBackward {
  __device__ float operator()(float x, float dy) const {
    const float t = tanhf(x);
    return dy * (1.0f - t * t);
  }
};
struct SquaredReluForward {
  __device__ float operator()(float x, float) const { return x > 0.0f ? x * x : 0.0f; }
};
struct SquaredReluBackward {
  __device__ float operator()(float x, float dy) const { return x > 0.0f ? dy * (2.0f * x) : 0.0f; }
};
struct Add {
  __device__ float operator()(float x, float y) const { return x + y; }
};

extern "C" void zt_cuda_gelu_forward(zt_dtype dt, void *out, const void *inp, size_t n) {
  map_launch(dt, out, inp, NULL, n, GeluForward());
}
extern "C" void zt_cuda_gelu_backward(zt_dtype dt, void *dinp, const void *inp, const void *dout, size_t n) {
  map_launch(dt, dinp, inp, dout, n, GeluBackward());
}
static void unknown_act(const char *op, zt_act_kind k) {
  zt_fatal(op, "unknown activation kind %d (ZT_ACT_GELU_TANH = 0, ZT_ACT_GELU_ERF = 1, ZT_ACT_TANH = 2, "
           "ZT_ACT_SQUARED_RELU = 3)", (int)k);
}
extern "C" void zt_cuda_act_forward(zt_dtype dt, zt_act_kind k, void *out, const void *inp, size_t n) {
  switch (k) {
    case ZT_ACT_GELU_TANH: map_launch(dt, out, inp, NULL, n, GeluForward()); return;
    case ZT_ACT_GELU_ERF: map_launch(dt, out, inp, NULL, n, GeluErfForward()); return;
    case ZT_ACT_TANH: map_launch(dt, out, inp, NULL, n, TanhForward()); return;
    case ZT_ACT_SQUARED_RELU: map_launch(dt, out, inp, NULL, n, SquaredReluForward()); return;
  }
  unknown_act("zt_cuda_act_forward", k);
}
extern "C" void zt_cuda_act_backward(zt_dtype dt, zt_act_kind k, void *dinp, const void *inp, const void *dout,
                                     size_t n) {
  switch (k) {
    case ZT_ACT_GELU_TANH: map_launch(dt, dinp, inp, dout, n, GeluBackward()); return;
    case ZT_ACT_GELU_ERF: map_launch(dt, dinp, inp, dout, n, GeluErfBackward()); return;
    case ZT_ACT_TANH: map_launch(dt, dinp, inp, dout, n, TanhBackward()); return;
    case ZT_ACT_SQUARED_RELU: map_launch(dt, dinp, inp, dout, n, SquaredReluBackward()); return;
  }
  unknown_act("zt_cuda_act_backward", k);
}
extern "C" void zt_cuda_residual_forward(zt_dtype dt, void *out, const void *a, const void *b, size_t n) {
  map_launch(dt, out, a, b, n, Add());
}
extern "C" void zt_cuda_accumulate(zt_dtype dt, void *dst, const void *src, size_t n) {
  map_launch(dt, dst, dst, src, n, Add());
}

// The four Philox words behind elements [4q, 4q + 4) of a sample's dropout stream: zt_dropout_keep's draw
// (common.cuh) made once for the four elements; element 4q + j is kept when (words.v[j] >> 8) >= threshold.
__device__ __forceinline__ zt_philox_ctr dropout_words(const zt_dropout &d, uint32_t k0, uint32_t k1,
                                                       uint64_t sample, uint64_t q) {
  const uint64_t stream = zt_dropout_stream(&d, sample);
  const zt_philox_ctr c = {{(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)}};
  return zt_philox4x32(c, k0, k1);
}

// A span of dropout: the flat elements [lo, hi) of consecutive samples of S elements each, flat element f = b * S + e
// being element e of sample b (the mask of sample first_sample + b); out, x and residual (when not NULL) hold the
// span from index 0 (element f at f - lo). out[f - lo] = residual[f - lo] + (kept ? x[f - lo] * scale : 0).
// Threads take the groups [4q, 4q + 4) of one sample that share a Philox draw, numbered G = b * ceil(S / 4) + q
// through the span: groups g0 + g for g < ng; the first and last group of the span, and of each sample when
// S % 4 != 0, are partial.
template <typename T>
__global__ void dropout_kernel(T *out, const T *x, const T *residual, size_t S, size_t lo, size_t hi, size_t g0,
                               size_t ng, zt_dropout d, uint32_t k0, uint32_t k1, uint32_t threshold, float scale) {
  const size_t groups = (S + 3) / 4;  // per sample
  for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < ng; g += (size_t)gridDim.x * blockDim.x) {
    const size_t b = (g0 + g) / groups, q = (g0 + g) % groups;
    const zt_philox_ctr r = dropout_words(d, k0, k1, d.first_sample + b, q);
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const size_t e = 4 * q + j, f = b * S + e;
      if (e >= S || f >= hi) break;
      if (f < lo) continue;
      const size_t i = f - lo;
      // __fmul_rn is never contracted into an FMA with the add: the CPU rounds x * scale before adding
      float v = (r.v[j] >> 8) >= threshold ? __fmul_rn(zt_ld(x, i), scale) : 0.0f;
      if (residual) v = zt_ld(residual, i) + v;
      zt_st(out, i, v);
    }
  }
}

// Dropout of the span [lo, hi) of samples of S elements (dropout_kernel); the caller has checked p.
static void dropout_span(zt_dtype dt, void *out, const void *x, const void *residual, size_t S, size_t lo, size_t hi,
                         const zt_dropout *d) {
  if (hi <= lo) return;
  const size_t n = hi - lo;
  if (d->p == 0.0f) {  // as on the CPU: a copy (plus the residual)
    if (residual)
      map_launch(dt, out, residual, x, n, Add());
    else if (out != x)
      ZT_CUDA_CHECK(cudaMemcpyAsync(out, x, n * zt_dtype_size(dt), cudaMemcpyDeviceToDevice, zt_stream()));
    return;
  }
  uint32_t k0, k1, threshold;
  zt_dropout_params(d, &k0, &k1, &threshold);
  const float scale = 1.0f / (1.0f - d->p);  // the CPU's expression, so the kept values match bit for bit
  const size_t groups = (S + 3) / 4;
  const size_t g0 = lo / S * groups + lo % S / 4, g1 = (hi - 1) / S * groups + (hi - 1) % S / 4 + 1;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<zt_blocks(g1 - g0, 256), 256, 0, zt_stream()>>>(
        (T *)out, (const T *)x, (const T *)residual, S, lo, hi, g0, g1 - g0, *d, k0, k1, threshold, scale);
    ZT_CUDA_LAUNCHED();
  });
}

static void check_p(const char *op, const zt_dropout *d) {
  zt_check(d->p >= 0.0f && d->p < 1.0f, op, "drop probability p=%g: need 0 <= p < 1", d->p);
}

static void dropout_launch(const char *op, zt_dtype dt, void *out, const void *x, const void *residual, int B,
                           size_t S, const zt_dropout *d) {
  zt_check(B >= 0, op, "B=%d samples: need B >= 0", B);
  check_p(op, d);
  dropout_span(dt, out, x, residual, S, 0, (size_t)B * S, d);
}

extern "C" void zt_cuda_dropout_forward(zt_dtype dt, void *out, const void *x, int B, size_t S, const zt_dropout *d) {
  dropout_launch("zt_cuda_dropout_forward", dt, out, x, NULL, B, S, d);
}
extern "C" void zt_cuda_dropout_backward(zt_dtype dt, void *dx, const void *dout, int B, size_t S,
                                         const zt_dropout *d) {
  dropout_launch("zt_cuda_dropout_backward", dt, dx, dout, NULL, B, S, d);
}
extern "C" void zt_cuda_dropout_add_forward(zt_dtype dt, void *out, const void *residual, const void *x, int B,
                                            size_t S, const zt_dropout *d) {
  dropout_launch("zt_cuda_dropout_add_forward", dt, out, x, residual, B, S, d);
}
// Rows [row0, row0 + n) of samples of T rows of C: the flat elements [row0 * C, (row0 + n) * C) of samples of T * C.
extern "C" void zt_cuda_dropout_rows(zt_dtype dt, void *out, const void *residual, const void *x, int row0, int n,
                                     int T, int C, const zt_dropout *d) {
  const char *op = "zt_cuda_dropout_rows";
  zt_check(row0 >= 0 && n >= 0 && T > 0 && C > 0, op,
           "rows [%d, %d + %d) of samples of T=%d tokens x C=%d channels: need row0 >= 0, n >= 0, T > 0, C > 0", row0,
           row0, n, T, C);
  check_p(op, d);
  dropout_span(dt, out, x, residual, (size_t)T * C, (size_t)row0 * C, ((size_t)row0 + n) * C, d);
}

// ---- per-row weights ----------------------------------------------------------------------------------------------
// out[n, c] = w[n] * x[n, c] over n * C elements; w fp32 [N].
template <typename T>
__global__ void scale_rows_kernel(T *out, const T *x, const float *w, size_t n, size_t C) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    zt_st(out, i, w[i / C] * zt_ld(x, i));
}

// out[r] = sum over c of a[r, c] * b[r, c] for r < N (a, b [N, C] in T, out fp32 [N]): one warp per row.
template <typename T>
__global__ void row_dot_kernel(float *out, const T *a, const T *b, int N, int C) {
  const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  for (size_t r = (size_t)blockIdx.x * warps + (threadIdx.x >> 5); r < (size_t)N; r += (size_t)gridDim.x * warps) {
    const size_t base = r * (size_t)C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s = fmaf(zt_ld(a, base + c), zt_ld(b, base + c), s);
    s = zt_warp_sum(s);
    if (lane == 0) out[r] = s;
  }
}

static void check_rows(const char *op, int N, int C) {
  zt_check(N >= 0 && C > 0, op, "bad shape N=%d C=%d: need N >= 0 and C > 0", N, C);
}

extern "C" void zt_cuda_scale_rows(zt_dtype dt, void *out, const void *x, const float *w, int N, int C) {
  check_rows("zt_cuda_scale_rows", N, C);
  if (N == 0) return;
  const size_t n = (size_t)N * C;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    scale_rows_kernel<T><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>((T *)out, (const T *)x, w, n, (size_t)C);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_row_dot(zt_dtype dt, float *out, const void *a, const void *b, int N, int C) {
  check_rows("zt_cuda_row_dot", N, C);
  if (N == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    row_dot_kernel<T><<<zt_blocks((size_t)N, 8), 256, 0, zt_stream()>>>(out, (const T *)a, (const T *)b, N, C);
    ZT_CUDA_LAUNCHED();
  });
}

// ---- SwiGLU -------------------------------------------------------------------------------------------------------
// inp [N, 2F] rows of the gate half g then the up half u; out [N, F] = silu(g) * u, silu(g) = g * sigmoid(g). n = N F.
template <typename T>
__global__ void swiglu_forward_kernel(T *out, const T *inp, size_t n, size_t F) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / F, gi = i + r * F;  // r 2F + f
    const float g = zt_ld(inp, gi), u = zt_ld(inp, gi + F);
    const float sg = 1.0f / (1.0f + expf(-g));
    zt_st(out, i, g * sg * u);
  }
}

// dg = dy u sig(g) (1 + g (1 - sig(g))), du = dy silu(g): dinp [N, 2F] written.
template <typename T>
__global__ void swiglu_backward_kernel(T *dinp, const T *dout, const T *inp, size_t n, size_t F) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / F, gi = i + r * F;
    const float g = zt_ld(inp, gi), u = zt_ld(inp, gi + F), dy = zt_ld(dout, i);
    const float sg = 1.0f / (1.0f + expf(-g));
    zt_st(dinp, gi, dy * u * sg * (1.0f + g * (1.0f - sg)));
    zt_st(dinp, gi + F, dy * g * sg);
  }
}

static void check_swiglu(const char *op, int N, int F) {
  zt_check(N >= 0 && F > 0, op, "bad shape N=%d F=%d: need N >= 0 and F > 0", N, F);
}

extern "C" void zt_cuda_swiglu_forward(zt_dtype dt, void *out, const void *inp, int N, int F) {
  check_swiglu("zt_cuda_swiglu_forward", N, F);
  if (N == 0) return;
  const size_t n = (size_t)N * F;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    swiglu_forward_kernel<T><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>((T *)out, (const T *)inp, n, (size_t)F);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_swiglu_backward(zt_dtype dt, void *dinp, const void *dout, const void *inp, int N, int F) {
  check_swiglu("zt_cuda_swiglu_backward", N, F);
  if (N == 0) return;
  const size_t n = (size_t)N * F;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    swiglu_backward_kernel<T><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>((T *)dinp, (const T *)dout,
                                                                           (const T *)inp, n, (size_t)F);
    ZT_CUDA_LAUNCHED();
  });
}

template <typename T>
__global__ void copy2d_kernel(T *__restrict__ dst, size_t ld_dst, const T *__restrict__ src, size_t ld_src,
                              size_t total, size_t cols) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / cols, c = i - r * cols;
    dst[r * ld_dst + c] = src[r * ld_src + c];
  }
}

extern "C" void zt_cuda_copy2d(zt_dtype dt, void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t rows,
                               size_t cols) {
  zt_check(cols <= ld_dst && cols <= ld_src, "zt_cuda_copy2d", "rows of %zu elements with strides %zu (dst) and %zu "
           "(src)", cols, ld_dst, ld_src);
  const size_t total = rows * cols;
  if (total == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using E = decltype(tag);
    copy2d_kernel<E><<<zt_blocks(total, 256), 256, 0, zt_stream()>>>((E *)dst, ld_dst, (const E *)src, ld_src, total,
                                                                     cols);
    ZT_CUDA_LAUNCHED();
  });
}
