// Linear layers on cuBLASLt: out[N,OC] = inp[N,IC] @ weight[OC,IC]^T + bias (optionally GELU), and the backward;
// and a linear's bias added or reduced apart from its GEMM (zt_cuda_add_bias, zt_cuda_bias_grad: a row-parallel
// linear adds it after the tensor-parallel sum), with the same kernels as the epilogue and the dbias.
//
// A row-major [R,C] buffer is a column-major [C,R] matrix with ld C, so the three products are
//   forward   out^T[OC,N]        = op_T(weight as [IC,OC]) x (inp as [IC,N])           m=OC n=N  k=IC
//   dinp      dinp^T[IC,N]       = (weight as [IC,OC]) x (dout as [OC,N])              m=IC n=N  k=OC
//   dweight   dweight^T[IC,OC]  += (inp as [IC,N]) x op_T(dout as [OC,N])  (beta = 1)  m=IC n=OC k=N
// with CUBLAS_COMPUTE_32F (strict fp32 for fp32 data, no TF32), fp32 alpha/beta and A, B, C, D all in dt.
//
// Plans: the matmul descriptor, layouts and heuristic algorithm of a product are cached in a 64-entry table
// keyed by dtype, ops, m/n/k, leading dimensions, the requested epilogue and the alignment of every pointer
// (the heuristic picks algorithms for the alignment it is told, 256 bytes by default, so offset pointers get
// their own plan). The table is replaced round-robin when full; it is host state driven by one thread.
//
// Epilogues (forward): cuBLASLt adds the bias (CUBLASLT_EPILOGUE_BIAS; the bias vector has D's type, so dt)
// and, for bf16/fp16 with OC % 8 == 0 (the aux leading dimension must be a multiple of 8), also applies GELU
// and writes the pre-activation to pre_gelu (CUBLASLT_EPILOGUE_GELU_AUX[_BIAS], aux ld OC, aux type = D's).
// cuBLASLt documents neither the formula nor the accuracy of its GELU; PyTorch relies on it being the tanh
// approximation (pytorch/pytorch#104061), which is good enough at bf16/fp16 resolution. fp32 must match the
// CPU to 1e-5, so fp32 never uses the fused GELU: the matmul writes pre_gelu and epilogue_kernel applies
// zt_gelu (runtime/ops/cpu/gelu.c's formula). Where the heuristic returns no algorithm for a fused
// epilogue (e.g. for a misaligned bias or aux pointer) the plan falls back to the next simpler one (bias
// alone, then none) and epilogue_kernel does the rest in one pass.
// Backward: gelu' multiplies dout, the matmul's input, so the DGELU epilogues (which act on a product's
// output) do not apply; nor does BGRADB, which overwrites instead of accumulating: both are kernels here.
//
// Kernels:
//  - epilogue_kernel: grid-stride over the N*OC outputs, one element per thread per step; reads the matmul
//    result (and bias), writes out (and pre_gelu when the bias is added here): 2-3 accesses per element. Also
//    zt_cuda_add_bias (y = out, no GELU).
//  - column_pass_kernel (backward): blocks of 32 columns x 8 row lanes over chunks of rows (grid x = column
//    tiles, grid y = row chunks of 256 rows); a warp reads 32 consecutive elements of one row (coalesced).
//    Optionally multiplies dout by gelu'(pre_gelu) in place, and sums its columns into per-chunk partials
//    [chunks, OC] fp32 in the cuBLASLt workspace (free between stream-ordered calls): one read (and one
//    write) of dout.
//  - dbias_finish_kernel: dbias[o] += sum of the chunk partials of column o in chunk order (deterministic:
//    the launch shape depends only on N and OC). These two without GELU are zt_cuda_bias_grad.
#include <cublasLt.h>
#include <string.h>

#include "runtime/ops/cuda/common.cuh"
#include "runtime/ops/cuda/core.cuh"

#define LT_CHECK(call)                                                                                        \
  do {                                                                                                        \
    cublasStatus_t zt_st_ = (call);                                                                           \
    if (zt_st_ != CUBLAS_STATUS_SUCCESS)                                                                      \
      zt_fatal("cuda", "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, cublasLtGetStatusString(zt_st_)); \
  } while (0)

// x rounded to the storage type T (what a store followed by a load gives).
template <typename T>
__device__ __forceinline__ float round_to(float x) {
  T t;
  zt_st(&t, 0, x);
  return zt_ld(&t, 0);
}

// ---- cuBLASLt plans -----------------------------------------------------------------------------------
// One product D = op(A) op(B) (+ beta C, C = D) as the caller wants it; bias/aux non-NULL request the fused
// bias / GELU epilogue (aux receives the pre-activation, ld = ldc).
struct gemm {
  zt_dtype dt;
  cublasOperation_t ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  const void *bias;
  void *aux;
  uint32_t al_a, al_b, al_cd;  // alignment in bytes of A, B and C/D
};

struct plan_key {
  int64_t m, n, k, lda, ldb, ldc;
  int32_t dt, ta, tb, want_bias, want_gelu;
  uint32_t al_a, al_b, al_cd, al_bias, al_aux;
};

struct plan {
  plan_key key;
  bool used, fused_bias, fused_gelu;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, cd;
  cublasLtMatmulAlgo_t algo;
};

enum { kPlans = 64 };
static plan plans[kPlans];
static int next_victim;

// The largest power of two up to 256 that divides the address (NULL: 256).
static uint32_t align_of(const void *p) {
  const uintptr_t a = (uintptr_t)p;
  uint32_t al = 256;
  while (al > 1 && (a & (al - 1))) al >>= 1;
  return al;
}

static cudaDataType_t lt_type(zt_dtype dt) {
  switch (dt) {
    case ZT_DTYPE_FP32: return CUDA_R_32F;
    case ZT_DTYPE_BF16: return CUDA_R_16BF;
    case ZT_DTYPE_FP16: return CUDA_R_16F;
  }
  zt_fatal("matmul", "unknown dtype %d", (int)dt);
}

static void plan_release(plan &p) {
  cublasLtMatmulDescDestroy(p.desc);
  cublasLtMatrixLayoutDestroy(p.a);
  cublasLtMatrixLayoutDestroy(p.b);
  cublasLtMatrixLayoutDestroy(p.cd);
  p.used = false;
}

template <typename V>
static void desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, V value) {
  LT_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof value));
}
template <typename V>
static void pref_set(cublasLtMatmulPreference_t pr, cublasLtMatmulPreferenceAttributes_t attr, V value) {
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pr, attr, &value, sizeof value));
}

// Fills p for g: tries the fused epilogues first (GELU+bias, then bias alone), then the plain product, and
// keeps the first one the heuristic returns an algorithm for.
static void plan_build(plan &p, const gemm &g, const plan_key &key) {
  const cudaDataType_t t = lt_type(g.dt);
  const bool ta = g.ta != CUBLAS_OP_N, tb = g.tb != CUBLAS_OP_N;
  LT_CHECK(cublasLtMatrixLayoutCreate(&p.a, t, ta ? g.k : g.m, ta ? g.m : g.k, g.lda));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p.b, t, tb ? g.n : g.k, tb ? g.k : g.n, g.ldb));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p.cd, t, g.m, g.n, g.ldc));

  size_t ws_bytes = 0;
  zt_cuda_workspace(&ws_bytes);
  cublasLtMatmulPreference_t pref;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, (uint64_t)ws_bytes);
  pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.al_a);
  pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.al_b);
  pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g.al_cd);
  pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.al_cd);

  struct { bool bias, gelu; } cand[3];
  int nc = 0;
  if (g.aux && g.dt != ZT_DTYPE_FP32 && g.ldc % 8 == 0) cand[nc++] = {g.bias != nullptr, true};
  if (g.bias) cand[nc++] = {true, false};
  cand[nc++] = {false, false};

  cublasStatus_t last = CUBLAS_STATUS_NOT_SUPPORTED;
  for (int c = 0; c < nc; c++) {
    LT_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, (int32_t)g.ta);
    desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, (int32_t)g.tb);
    const cublasLtEpilogue_t epi = cand[c].gelu
                                       ? (cand[c].bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                                       : (cand[c].bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, (uint32_t)epi);
    // the heuristic reads these pointers' alignment
    if (cand[c].bias) desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
    if (cand[c].gelu) {
      desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
      desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, (int64_t)g.ldc);
    }
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    memset(&r, 0, sizeof r);
    last = cublasLtMatmulAlgoGetHeuristic(zt_cuda_lt(), p.desc, p.a, p.b, p.cd, p.cd, pref, 1, &r, &found);
    if (last == CUBLAS_STATUS_SUCCESS && found > 0 && r.state == CUBLAS_STATUS_SUCCESS) {
      p.algo = r.algo;
      p.fused_bias = cand[c].bias;
      p.fused_gelu = cand[c].gelu;
      p.key = key;
      p.used = true;
      cublasLtMatmulPreferenceDestroy(pref);
      return;
    }
    if (last == CUBLAS_STATUS_SUCCESS) last = found > 0 ? r.state : CUBLAS_STATUS_NOT_SUPPORTED;
    cublasLtMatmulDescDestroy(p.desc);
  }
  zt_fatal("matmul",
           "cuBLASLt returned no algorithm for a %s product m=%lld n=%lld k=%lld (op %c%c, ld %lld/%lld/%lld, "
           "alignment %u/%u/%u bytes, even without epilogue): %s",
           zt_dtype_name(g.dt), (long long)g.m, (long long)g.n, (long long)g.k, ta ? 'T' : 'N', tb ? 'T' : 'N',
           (long long)g.lda, (long long)g.ldb, (long long)g.ldc, g.al_a, g.al_b, g.al_cd,
           cublasLtGetStatusString(last));
}

static const plan &plan_get(const gemm &g) {
  plan_key key;
  memset(&key, 0, sizeof key);  // the key is compared bytewise
  key.m = g.m, key.n = g.n, key.k = g.k, key.lda = g.lda, key.ldb = g.ldb, key.ldc = g.ldc;
  key.dt = g.dt, key.ta = g.ta, key.tb = g.tb, key.want_bias = g.bias != nullptr, key.want_gelu = g.aux != nullptr;
  key.al_a = g.al_a, key.al_b = g.al_b, key.al_cd = g.al_cd;
  key.al_bias = align_of(g.bias), key.al_aux = align_of(g.aux);
  for (int i = 0; i < kPlans; i++)
    if (plans[i].used && memcmp(&plans[i].key, &key, sizeof key) == 0) return plans[i];
  // descriptors are host objects read when a matmul is enqueued, so a plan in flight may be replaced
  plan &p = plans[next_victim];
  next_victim = (next_victim + 1) % kPlans;
  if (p.used) plan_release(p);
  plan_build(p, g, key);
  return p;
}

// D = A B + beta D on the stream; bias/aux are used when the plan fused them.
static void plan_run(const plan &p, const void *A, const void *B, float beta, void *D, const void *bias, void *aux) {
  if (p.fused_bias) desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (p.fused_gelu) desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  const float alpha = 1.0f;
  size_t ws_bytes = 0;
  void *ws = zt_cuda_workspace(&ws_bytes);
  LT_CHECK(cublasLtMatmul(zt_cuda_lt(), p.desc, &alpha, A, p.a, B, p.b, &beta, D, p.cd, D, p.cd, &p.algo, ws, ws_bytes,
                          zt_stream()));
}

// ---- forward -------------------------------------------------------------------------------------------
// y[N,OC] is the matmul result (pre_gelu when gelu, else out; may alias out). x = y + bias (bias may be
// NULL); with gelu the sum goes back to y when a bias was added and out = gelu(x), else out = x.
template <typename T>
__global__ void epilogue_kernel(T *out, T *y, const T *bias, bool gelu, size_t n, unsigned OC) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  // column of element i, stepped without a 64-bit division per element (o + step < 2 OC <= 2^32 - 2)
  unsigned o = (unsigned)(i % OC);
  const unsigned step = (unsigned)(stride % OC);
  for (; i < n; i += stride) {
    float x = zt_ld(y, i);
    if (bias) {
      x += zt_ld(bias, o);
      if (gelu) zt_st(y, i, x);
    }
    zt_st(out, i, gelu ? zt_gelu(x) : x);
    o += step;
    if (o >= OC) o -= OC;
  }
}

extern "C" void zt_cuda_matmul_forward(zt_dtype dt, void *out, void *pre_gelu, const void *inp, const void *weight,
                                       const void *bias, int N, int IC, int OC) {
  zt_check(N >= 0 && IC > 0 && OC > 0, "matmul forward", "bad shape N=%d IC=%d OC=%d", N, IC, OC);
  zt_check(out && inp && weight, "matmul forward", "NULL out, inp or weight (N=%d IC=%d OC=%d)", N, IC, OC);
  if (N == 0) return;  // e.g. an expert that received no tokens
  gemm g = {dt, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, IC, IC, OC, bias, pre_gelu, align_of(weight), align_of(inp),
            align_of(out)};
  if (pre_gelu && align_of(pre_gelu) < g.al_cd) g.al_cd = align_of(pre_gelu);  // D is out or pre_gelu
  const plan &p = plan_get(g);
  void *y = pre_gelu && !p.fused_gelu ? pre_gelu : out;
  plan_run(p, weight, inp, 0.0f, y, bias, pre_gelu);
  const void *late_bias = bias && !p.fused_bias ? bias : nullptr;
  const bool late_gelu = pre_gelu && !p.fused_gelu;
  if (!late_bias && !late_gelu) return;
  const size_t n = (size_t)N * OC;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    epilogue_kernel<T><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>((T *)out, (T *)y, (const T *)late_bias, late_gelu,
                                                                    n, (unsigned)OC);
    ZT_CUDA_LAUNCHED();
  });
}

// ---- backward ------------------------------------------------------------------------------------------
enum { kColTile = 32, kRowLanes = 8, kChunkRows = 256 };

// dout[N,OC]: with pre, dout *= gelu'(pre) in place; with partial, partial[chunk, o] = the sum over the
// chunk's rows of column o of (the new) dout. Grid (column tiles, row chunks), block (kColTile, kRowLanes).
template <typename T>
__global__ void __launch_bounds__(kColTile * kRowLanes)
    column_pass_kernel(T *dout, const T *pre, float *partial, int N, int OC, int rows_per_chunk) {
  __shared__ float sums[kRowLanes][kColTile + 1];
  const int o = blockIdx.x * kColTile + threadIdx.x;
  const long long r0 = (long long)blockIdx.y * rows_per_chunk;
  const long long r1 = r0 + rows_per_chunk < N ? r0 + rows_per_chunk : N;
  float acc = 0.0f;
  if (o < OC)
    for (long long r = r0 + threadIdx.y; r < r1; r += kRowLanes) {
      const size_t i = (size_t)r * OC + o;
      float g = zt_ld(dout, i);
      if (pre) {
        g = round_to<T>(g * zt_gelu_grad(zt_ld(pre, i)));  // the sum is over what dout then holds
        zt_st(dout, i, g);
      }
      acc += g;
    }
  if (!partial) return;  // the same for the whole block
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && o < OC) {
    float s = 0.0f;
    for (int y = 0; y < kRowLanes; y++) s += sums[y][threadIdx.x];
    partial[(size_t)blockIdx.y * OC + o] = s;
  }
}

template <typename T>
__global__ void dbias_finish_kernel(T *dbias, const float *partial, int chunks, int OC) {
  for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < OC; o += gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int c = 0; c < chunks; c++) s += partial[(size_t)c * OC + o];
    zt_st(dbias, o, zt_ld(dbias, o) + s);
  }
}

// dout *= gelu'(pre) when pre != NULL; dbias += column sums of dout when dbias != NULL (dout is only read then).
static void column_pass(const char *op, zt_dtype dt, void *dout, const void *pre, void *dbias, int N, int OC) {
  size_t ws_bytes = 0;
  float *partial = dbias ? (float *)zt_cuda_workspace(&ws_bytes) : nullptr;
  long long max_chunks = 65535;  // grid y
  if (dbias) {
    const long long fit = (long long)(ws_bytes / (sizeof(float) * (size_t)OC));
    zt_check(fit >= 1, op, "dbias of %d columns needs %zu bytes of workspace, %zu available", OC,
             sizeof(float) * (size_t)OC, ws_bytes);
    if (fit < max_chunks) max_chunks = fit;
  }
  long long chunks = ((long long)N + kChunkRows - 1) / kChunkRows;
  if (chunks > max_chunks) chunks = max_chunks;
  const int rows_per_chunk = (int)(((long long)N + chunks - 1) / chunks);
  chunks = ((long long)N + rows_per_chunk - 1) / rows_per_chunk;
  const dim3 grid((unsigned)((OC + kColTile - 1) / kColTile), (unsigned)chunks), block(kColTile, kRowLanes);
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    column_pass_kernel<T><<<grid, block, 0, zt_stream()>>>((T *)dout, (const T *)pre, partial, N, OC, rows_per_chunk);
    ZT_CUDA_LAUNCHED();
    if (dbias) {
      dbias_finish_kernel<T><<<zt_blocks((size_t)OC, 256), 256, 0, zt_stream()>>>((T *)dbias, partial, (int)chunks,
                                                                                   OC);
      ZT_CUDA_LAUNCHED();
    }
  });
}

extern "C" void zt_cuda_matmul_backward(zt_dtype dt, void *dinp, void *dweight, void *dbias, void *dout,
                                        const void *inp, const void *weight, const void *pre_gelu, int N, int IC,
                                        int OC) {
  zt_check(N >= 0 && IC > 0 && OC > 0, "matmul backward", "bad shape N=%d IC=%d OC=%d", N, IC, OC);
  zt_check(dout && inp && weight, "matmul backward", "NULL dout, inp or weight (N=%d IC=%d OC=%d)", N, IC, OC);
  if (N == 0) return;  // nothing to add to dweight and dbias
  // first, since both products read the new dout; the partials in the workspace are consumed before the
  // products below reuse it (same stream)
  if (pre_gelu || dbias) column_pass("matmul backward", dt, dout, pre_gelu, dbias, N, OC);
  if (dinp) {
    const gemm g = {dt, CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, IC, OC, IC, nullptr, nullptr,
                    align_of(weight), align_of(dout), align_of(dinp)};
    plan_run(plan_get(g), weight, dout, 0.0f, dinp, nullptr, nullptr);
  }
  if (!dweight) return;  // the zero-bubble schedule's B pass: the weight gradient comes in its W pass
  const gemm g = {dt, CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, IC, OC, IC, nullptr, nullptr,
                  align_of(inp), align_of(dout), align_of(dweight)};
  plan_run(plan_get(g), inp, dout, 1.0f, dweight, nullptr, nullptr);
}

// ---- the bias apart from the GEMM -------------------------------------------------------------------------
extern "C" void zt_cuda_add_bias(zt_dtype dt, void *out, const void *bias, int N, int C) {
  zt_check(N >= 0 && C > 0, "zt_cuda_add_bias", "bad shape N=%d C=%d: need N >= 0 and C > 0", N, C);
  if (N == 0) return;
  const size_t n = (size_t)N * C;
  zt_dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    epilogue_kernel<T><<<zt_blocks(n, 256), 256, 0, zt_stream()>>>((T *)out, (T *)out, (const T *)bias, false, n,
                                                                    (unsigned)C);
    ZT_CUDA_LAUNCHED();
  });
}

extern "C" void zt_cuda_bias_grad(zt_dtype dt, void *dbias, const void *dout, int N, int C) {
  zt_check(N >= 0 && C > 0, "zt_cuda_bias_grad", "bad shape N=%d C=%d: need N >= 0 and C > 0", N, C);
  if (N == 0) return;
  column_pass("zt_cuda_bias_grad", dt, (void *)dout, nullptr, dbias, N, C);  // without pre, dout is not written
}
