// Fused scaled-dot-product attention (flash-attention style): the Tq x Tk scores never leave shared memory.
// Semantics are those of runtime/ops/cpu/attention.c (masks, key_padding, key_start, dropout element ids,
// head0, strided Q/K/V views); the forward keeps lse[B, NH, Tq] instead of the probabilities.
//
// Every kernel runs 256 threads seen as a 16 x 16 grid (ty, tx). A tile product C[M][N] += A[M][K] B[K][N]
// gives thread (ty, tx) the elements (ty + 16 i, tx + 16 j): a row of C lives in the 16 lanes of one
// half-warp, so row max/sum are 4 shuffles, and the padded shared rows (stride + 1) make every operand read
// conflict-free or a broadcast. Operands are fp32 in shared memory (converted from dt on load, zero-padded
// past HD, Tq and Tk); accumulators are fp32 registers. The head size is padded to HDP = 32/64/128/256.
//
//  attn_forward_kernel  grid (ceil(Tq/BQ), NH, B): a block owns BQ = 64 queries; it walks key tiles of BK
//                       (64, or 32 for HDP >= 128) with the online softmax (running max m and sum l per row):
//                       S = scale Q K^T, masked to -inf; P = exp(S - m) (dropped with the CPU's Philox
//                       element ids); O = O * exp(m_old - m) + P V. out = O / l, lse = m + log l (-inf and
//                       zeros for a row without visible keys). Reads Q once, K and V ceil(Tq/BQ) times.
//  attn_rowdot_kernel   one warp per (b, t, h): D = dout . out, which equals sum_j P_ij dropout(dP)_ij.
//  attn_dq_kernel       grid (ceil(Tq/BQ), NH, B): a block owns BQ queries and walks key tiles; recomputes
//                       P = exp(S - lse) and dP = dO V^T, dS = P (dropout(dP) - D), dq = scale dS K.
//  attn_dkdv_kernel     grid (ceil(Tk/BK), NH, B): a block owns BK keys and walks query tiles; recomputes P,
//                       dS as above, dv = dropout(P)^T dO, dk = scale dS^T Q.
// dq and dk/dv are separate passes so each output element is summed by one thread in a fixed order: results
// are deterministic without float atomics, at the price of recomputing S and dP twice (7 tile products per
// backward instead of 5). D (B*NH*Tq floats) lives in the cuBLASLt workspace of the context when it fits (the
// ops run in order on one stream), else in a stream-ordered allocation. Blocks skip the tiles that add exactly
// nothing: causal ones the key (query) tiles past the diagonal, key_start ones the key tiles before their
// smallest start, and dk/dv blocks every query tile none of whose rows sees one of their keys.
// Shared memory is 41 to 138 KiB per block (above the 48 KiB default: opted in on first launch).
#include <limits.h>

#include <type_traits>

#include "runtime/ops/cuda/common.cuh"
#include "runtime/ops/cuda/core.cuh"

namespace {

constexpr int NT = 256;  // threads per block: the 16 x 16 grid over every tile product

// The descriptor as the kernels see it (mask pointers are device memory).
struct Attn {
  int B, Tq, Tk, NH, HD, ld_q, hs_q, ld_kv, hs_k, hs_v, head0;
  bool causal, drop;
  const uint8_t *pad;         // [B, Tk] nonzero = masked, or NULL
  const int32_t *key_start;   // [B, Tq] or NULL
  float scale, drop_scale;    // drop_scale = 1 / (1 - p), as the CPU's dropout
  zt_dropout dropout;
  uint32_t key0, key1, threshold;
};

// Tile sizes per padded head size, and the shared memory layout (in floats) of each kernel.
template <int HDP>
struct FwdShape {
  static constexpr int BQ = 64, BK = HDP >= 128 ? 32 : 64, LH = HDP + 1, LS = BK + 1;
  static constexpr int Q = 0, K = Q + BQ * LH, V = K + BK * LH, P = V + BK * LH, MASK = P + BQ * LS;
  static constexpr size_t BYTES = (MASK + BK) * sizeof(float);
};
template <int HDP>
struct DqShape {
  static constexpr int BQ = HDP >= 256 ? 32 : 64, BK = HDP >= 128 ? 32 : 64, LH = HDP + 1, LS = BK + 1;
  static constexpr int Q = 0, DO = Q + BQ * LH, K = DO + BQ * LH, V = K + BK * LH, DS = V + BK * LH,
                       MASK = DS + BQ * LS;
  static constexpr size_t BYTES = (MASK + BK) * sizeof(float);
};
template <int HDP>
struct KvShape {
  static constexpr int BK = HDP >= 256 ? 32 : 64, BQ = HDP >= 128 ? 32 : 64, LH = HDP + 1, LS = BK + 1;
  static constexpr int K = 0, V = K + BK * LH, Q = V + BK * LH, DO = Q + BQ * LH, P = DO + BQ * LH,
                       DS = P + BQ * LS, LSE = DS + BQ * LS, D = LSE + BQ, MASK = D + BQ, LO = MASK + BK;
  static constexpr size_t BYTES = (LO + BQ) * sizeof(float);
};

// Row t0 of head h of sample b in a strided view with T rows per sample.
template <typename P>
__device__ __forceinline__ P *view(P *base, int T, int ld, int hs, int b, int h, int t0) {
  return base + ((size_t)b * T + t0) * ld + (size_t)h * hs;
}

// dst[r][d] (row stride HDP + 1) = src[r * ld + d] for r < rows, d < HD; zero elsewhere, so padding adds
// nothing to the products. Consecutive threads read consecutive d of a row.
template <int ROWS, int HDP, typename T>
__device__ __forceinline__ void load_rows(float *dst, const T *src, size_t ld, int rows, int HD) {
  for (int e = threadIdx.x; e < ROWS * HDP; e += NT) {
    const int r = e / HDP, d = e % HDP;
    dst[r * (HDP + 1) + d] = r < rows && d < HD ? zt_ld(src, (size_t)r * ld + d) : 0.0f;
  }
}

// masked[c] for key k0 + c of sample b: past Tk or padded.
template <int BK>
__device__ __forceinline__ void load_key_mask(int *masked, const Attn &a, int b, int k0) {
  for (int c = threadIdx.x; c < BK; c += NT) {
    const int j = k0 + c;
    masked[c] = j >= a.Tk || (a.pad && a.pad[(size_t)b * a.Tk + j]);
  }
}

// First key query i may see (key_start, else 0); INT_MAX for rows past Tq, which see nothing.
__device__ __forceinline__ int first_key(const Attn &a, int b, int i) {
  if (i >= a.Tq) return INT_MAX;
  return a.key_start ? a.key_start[(size_t)b * a.Tq + i] : 0;
}

// Does query i (first visible key lo) see key j (padded or past Tk: key_masked)?
__device__ __forceinline__ bool visible(const Attn &a, int lo, int i, int j, int key_masked) {
  return !key_masked && j >= lo && (!a.causal || j <= i);
}

// The CPU's dropout of probability (h, i, j) of sample b: 1/(1-p) when kept, 0 when dropped.
__device__ __forceinline__ float drop_factor(const Attn &a, int b, int h, int i, int j) {
  const uint64_t elem = ((uint64_t)(h + a.head0) * a.Tq + i) * a.Tk + j;
  const bool keep = zt_dropout_keep(a.dropout, a.key0, a.key1, a.threshold, a.dropout.first_sample + b, elem);
  return keep ? a.drop_scale : 0.0f;
}

// Keys [k_begin, k_end) that queries [q0, q0 + BQ) may see: causal stops after the block's last row,
// key_start begins at the block's smallest start. Tiles outside would add exactly nothing.
template <int BQ>
__device__ __forceinline__ void key_range(const Attn &a, int b, int q0, int *k_begin, int *k_end) {
  __shared__ int lo;
  *k_end = a.causal ? min(a.Tk, q0 + BQ) : a.Tk;
  *k_begin = 0;
  if (!a.key_start) return;  // uniform over the block
  if (threadIdx.x == 0) lo = INT_MAX;
  __syncthreads();
  const int i = q0 + (int)threadIdx.x;
  if (threadIdx.x < BQ && i < a.Tq) atomicMin(&lo, a.key_start[(size_t)b * a.Tq + i]);
  __syncthreads();
  *k_begin = max(lo, 0);
}

// acc[i][j] += sum_k A(ty + 16 i, k) B(k, tx + 16 j), k ascending. A(r, k) is A[r * LDA + k], or A[k * LDA + r]
// when AT; B(k, c) is B[k * LDB + c], or B[c * LDB + k] when BT.
template <int TM, int TN, int K, int LDA, int LDB, bool AT, bool BT>
__device__ __forceinline__ void tile_mma(float (&acc)[TM][TN], const float *A, const float *B, int ty, int tx) {
#pragma unroll 4
  for (int k = 0; k < K; k++) {
    float x[TM], y[TN];
#pragma unroll
    for (int i = 0; i < TM; i++) x[i] = AT ? A[k * LDA + ty + 16 * i] : A[(ty + 16 * i) * LDA + k];
#pragma unroll
    for (int j = 0; j < TN; j++) y[j] = BT ? B[(tx + 16 * j) * LDB + k] : B[k * LDB + tx + 16 * j];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
      for (int j = 0; j < TN; j++) acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
  }
}

// Max and sum over the 16 lanes of a half-warp (the threads holding one row of a tile).
__device__ __forceinline__ float row_max(float x) {
  for (int o = 8; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float row_sum(float x) {
  for (int o = 8; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <typename T, int HDP>
__global__ void __launch_bounds__(NT)
    attn_forward_kernel(T *out, float *lse, const T *q, const T *k, const T *v, const Attn a) {
  using S = FwdShape<HDP>;
  constexpr int BQ = S::BQ, BK = S::BK, LH = S::LH, LS = S::LS, TM = BQ / 16, TN = BK / 16, TD = HDP / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  float *Qs = (float *)smem + S::Q, *Ks = (float *)smem + S::K, *Vs = (float *)smem + S::V;
  float *Ps = (float *)smem + S::P;
  int *masked = (int *)((float *)smem + S::MASK);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ, h = blockIdx.y, b = blockIdx.z;  // longest rows first

  load_rows<BQ, HDP>(Qs, view(q, a.Tq, a.ld_q, a.hs_q, b, h, q0), a.ld_q, min(BQ, a.Tq - q0), a.HD);
  int lo[TM];
  float m[TM], l[TM], o[TM][TD];
#pragma unroll
  for (int i = 0; i < TM; i++) {
    lo[i] = first_key(a, b, q0 + ty + 16 * i);
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int d = 0; d < TD; d++) o[i][d] = 0.0f;
  }
  int k_begin, k_end;
  key_range<BQ>(a, b, q0, &k_begin, &k_end);
  for (int k0 = k_begin / BK * BK; k0 < k_end; k0 += BK) {
    __syncthreads();  // the previous tile's Ks, Vs and Ps are read
    load_rows<BK, HDP>(Ks, view(k, a.Tk, a.ld_kv, a.hs_k, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_rows<BK, HDP>(Vs, view(v, a.Tk, a.ld_kv, a.hs_v, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_key_mask<BK>(masked, a, b, k0);
    __syncthreads();
    float s[TM][TN] = {};
    tile_mma<TM, TN, HDP, LH, LH, false, true>(s, Qs, Ks, ty, tx);
#pragma unroll
    for (int i = 0; i < TM; i++) {
      const int r = q0 + ty + 16 * i;
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int c = tx + 16 * j;
        s[i][j] = visible(a, lo[i], r, k0 + c, masked[c]) ? s[i][j] * a.scale : -INFINITY;
        tile_max = fmaxf(tile_max, s[i][j]);
      }
      const float m_new = fmaxf(m[i], row_max(tile_max));
      const float base = m_new == -INFINITY ? 0.0f : m_new;  // no visible key yet: every exp is 0
      const float alpha = expf(m[i] - base);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int c = tx + 16 * j;
        const float p = expf(s[i][j] - base);
        sum += p;
        Ps[(ty + 16 * i) * LS + c] = a.drop && p != 0.0f ? p * drop_factor(a, b, h, r, k0 + c) : p;
      }
      l[i] = l[i] * alpha + row_sum(sum);  // the softmax is normalized before dropout
      m[i] = m_new;
#pragma unroll
      for (int d = 0; d < TD; d++) o[i][d] *= alpha;
    }
    __syncthreads();
    tile_mma<TM, TD, BK, LS, LH, false, false>(o, Ps, Vs, ty, tx);
  }
#pragma unroll
  for (int i = 0; i < TM; i++) {
    const int r = q0 + ty + 16 * i;
    if (r >= a.Tq) continue;
    const bool seen = l[i] > 0.0f;  // the row's largest visible score contributed exp(0) = 1
    const float inv = seen ? 1.0f / l[i] : 0.0f;
    T *orow = view(out, a.Tq, a.NH * a.HD, a.HD, b, h, r);
#pragma unroll
    for (int d = 0; d < TD; d++)
      if (tx + 16 * d < a.HD) zt_st(orow, tx + 16 * d, o[i][d] * inv);
    if (tx == 0) lse[((size_t)b * a.NH + h) * a.Tq + r] = seen ? m[i] + logf(l[i]) : -INFINITY;
  }
}

template <typename T>
__global__ void __launch_bounds__(NT)
    attn_rowdot_kernel(float *D, const T *dout, const T *out, int B, int Tq, int NH, int HD) {
  const size_t rows = (size_t)B * Tq * NH, warps = NT / 32;
  const int lane = threadIdx.x % 32;
  for (size_t n = blockIdx.x * warps + threadIdx.x / 32; n < rows; n += gridDim.x * warps) {  // n = (b Tq + t) NH + h
    float acc = 0.0f;
    for (int d = lane; d < HD; d += 32) acc = fmaf(zt_ld(dout, n * HD + d), zt_ld(out, n * HD + d), acc);
    acc = zt_warp_sum(acc);
    const size_t h = n % NH, t = n / NH % Tq, b = n / NH / Tq;
    if (lane == 0) D[(b * NH + h) * Tq + t] = acc;
  }
}

// Probability after dropout and score gradient of element (i, j) from its raw dot products s = q.k and
// dp = dout.v: p = exp(scale s - lse_i), dS = p (dropout(dp) - D_i); both 0 where the key is not visible.
struct ProbGrad {
  float p, ds;
};
__device__ __forceinline__ ProbGrad prob_grad(const Attn &a, int b, int h, int i, int j, bool vis, float s, float dp,
                                              float lse_i, float D_i) {
  if (!vis) return {0.0f, 0.0f};
  const float p = expf(s * a.scale - lse_i);
  const float keep = a.drop ? drop_factor(a, b, h, i, j) : 1.0f;
  return {p * keep, p * (dp * keep - D_i)};
}

template <typename T, int HDP>
__global__ void __launch_bounds__(NT)
    attn_dq_kernel(T *dq, const T *dout, const float *lse, const float *D, const T *q, const T *k, const T *v,
                   const Attn a) {
  using S = DqShape<HDP>;
  constexpr int BQ = S::BQ, BK = S::BK, LH = S::LH, LS = S::LS, TM = BQ / 16, TN = BK / 16, TD = HDP / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  float *Qs = (float *)smem + S::Q, *dOs = (float *)smem + S::DO, *Ks = (float *)smem + S::K;
  float *Vs = (float *)smem + S::V, *dSs = (float *)smem + S::DS;
  int *masked = (int *)((float *)smem + S::MASK);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ, h = blockIdx.y, b = blockIdx.z;
  const int C = a.NH * a.HD, rows = min(BQ, a.Tq - q0);

  load_rows<BQ, HDP>(Qs, view(q, a.Tq, a.ld_q, a.hs_q, b, h, q0), a.ld_q, rows, a.HD);
  load_rows<BQ, HDP>(dOs, view(dout, a.Tq, C, a.HD, b, h, q0), C, rows, a.HD);
  int lo[TM];
  float lse_r[TM], D_r[TM], acc[TM][TD];
#pragma unroll
  for (int i = 0; i < TM; i++) {
    const int r = q0 + ty + 16 * i;
    const size_t stat = ((size_t)b * a.NH + h) * a.Tq + r;
    lo[i] = first_key(a, b, r);
    lse_r[i] = r < a.Tq ? lse[stat] : 0.0f;
    D_r[i] = r < a.Tq ? D[stat] : 0.0f;
#pragma unroll
    for (int d = 0; d < TD; d++) acc[i][d] = 0.0f;
  }
  int k_begin, k_end;
  key_range<BQ>(a, b, q0, &k_begin, &k_end);
  for (int k0 = k_begin / BK * BK; k0 < k_end; k0 += BK) {
    __syncthreads();  // Qs and dOs are in; the previous tile's Ks, Vs and dSs are read
    load_rows<BK, HDP>(Ks, view(k, a.Tk, a.ld_kv, a.hs_k, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_rows<BK, HDP>(Vs, view(v, a.Tk, a.ld_kv, a.hs_v, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_key_mask<BK>(masked, a, b, k0);
    __syncthreads();
    float s[TM][TN] = {}, dp[TM][TN] = {};
    tile_mma<TM, TN, HDP, LH, LH, false, true>(s, Qs, Ks, ty, tx);
    tile_mma<TM, TN, HDP, LH, LH, false, true>(dp, dOs, Vs, ty, tx);
#pragma unroll
    for (int i = 0; i < TM; i++) {
      const int r = q0 + ty + 16 * i;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int c = tx + 16 * j;
        const bool vis = visible(a, lo[i], r, k0 + c, masked[c]);
        dSs[(ty + 16 * i) * LS + c] = prob_grad(a, b, h, r, k0 + c, vis, s[i][j], dp[i][j], lse_r[i], D_r[i]).ds;
      }
    }
    __syncthreads();
    tile_mma<TM, TD, BK, LS, LH, false, false>(acc, dSs, Ks, ty, tx);
  }
#pragma unroll
  for (int i = 0; i < TM; i++) {
    const int r = q0 + ty + 16 * i;
    if (r >= a.Tq) continue;
    T *row = view(dq, a.Tq, a.ld_q, a.hs_q, b, h, r);
#pragma unroll
    for (int d = 0; d < TD; d++)
      if (tx + 16 * d < a.HD) zt_st(row, tx + 16 * d, acc[i][d] * a.scale);
  }
}

template <typename T, int HDP>
__global__ void __launch_bounds__(NT)
    attn_dkdv_kernel(T *dk, T *dv, const T *dout, const float *lse, const float *D, const T *q, const T *k,
                     const T *v, const Attn a) {
  using S = KvShape<HDP>;
  constexpr int BK = S::BK, BQ = S::BQ, LH = S::LH, LS = S::LS, TQ = BQ / 16, TK = BK / 16, TD = HDP / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  float *Ks = (float *)smem + S::K, *Vs = (float *)smem + S::V, *Qs = (float *)smem + S::Q;
  float *dOs = (float *)smem + S::DO, *Ps = (float *)smem + S::P, *dSs = (float *)smem + S::DS;
  float *row_lse = (float *)smem + S::LSE, *row_D = (float *)smem + S::D;
  int *masked = (int *)((float *)smem + S::MASK), *row_lo = (int *)((float *)smem + S::LO);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int k0 = blockIdx.x * BK, h = blockIdx.y, b = blockIdx.z;
  const int C = a.NH * a.HD, k_last = min(k0 + BK, a.Tk) - 1;

  load_rows<BK, HDP>(Ks, view(k, a.Tk, a.ld_kv, a.hs_k, b, h, k0), a.ld_kv, k_last - k0 + 1, a.HD);
  load_rows<BK, HDP>(Vs, view(v, a.Tk, a.ld_kv, a.hs_v, b, h, k0), a.ld_kv, k_last - k0 + 1, a.HD);
  load_key_mask<BK>(masked, a, b, k0);
  float dk_acc[TK][TD], dv_acc[TK][TD];
#pragma unroll
  for (int i = 0; i < TK; i++)
#pragma unroll
    for (int d = 0; d < TD; d++) dk_acc[i][d] = dv_acc[i][d] = 0.0f;

  for (int q0 = a.causal ? k0 / BQ * BQ : 0; q0 < a.Tq; q0 += BQ) {
    __syncthreads();  // Ks, Vs and the key mask are in; the previous query tile is read
    int sees = 0;     // does row q0 + threadIdx.x see a key of this block?
    if (threadIdx.x < BQ) {
      const int i = q0 + threadIdx.x, lo = first_key(a, b, i);
      const size_t stat = ((size_t)b * a.NH + h) * a.Tq + i;
      row_lo[threadIdx.x] = lo;
      row_lse[threadIdx.x] = i < a.Tq ? lse[stat] : 0.0f;
      row_D[threadIdx.x] = i < a.Tq ? D[stat] : 0.0f;
      sees = max(lo, k0) <= (a.causal ? min(k_last, i) : k_last);
    }
    if (!__syncthreads_or(sees)) continue;  // uniform: the whole tile is masked for these keys
    const int rows = min(BQ, a.Tq - q0);
    load_rows<BQ, HDP>(Qs, view(q, a.Tq, a.ld_q, a.hs_q, b, h, q0), a.ld_q, rows, a.HD);
    load_rows<BQ, HDP>(dOs, view(dout, a.Tq, C, a.HD, b, h, q0), C, rows, a.HD);
    __syncthreads();
    float s[TQ][TK] = {}, dp[TQ][TK] = {};
    tile_mma<TQ, TK, HDP, LH, LH, false, true>(s, Qs, Ks, ty, tx);
    tile_mma<TQ, TK, HDP, LH, LH, false, true>(dp, dOs, Vs, ty, tx);
#pragma unroll
    for (int i = 0; i < TQ; i++) {
      const int rr = ty + 16 * i, r = q0 + rr;
#pragma unroll
      for (int j = 0; j < TK; j++) {
        const int c = tx + 16 * j;
        const bool vis = visible(a, row_lo[rr], r, k0 + c, masked[c]);
        const ProbGrad g = prob_grad(a, b, h, r, k0 + c, vis, s[i][j], dp[i][j], row_lse[rr], row_D[rr]);
        Ps[rr * LS + c] = g.p;
        dSs[rr * LS + c] = g.ds;
      }
    }
    __syncthreads();
    tile_mma<TK, TD, BQ, LS, LH, true, false>(dv_acc, Ps, dOs, ty, tx);
    tile_mma<TK, TD, BQ, LS, LH, true, false>(dk_acc, dSs, Qs, ty, tx);
  }
#pragma unroll
  for (int i = 0; i < TK; i++) {
    const int j = k0 + ty + 16 * i;
    if (j >= a.Tk) continue;
    T *krow = view(dk, a.Tk, a.ld_kv, a.hs_k, b, h, j), *vrow = view(dv, a.Tk, a.ld_kv, a.hs_v, b, h, j);
#pragma unroll
    for (int d = 0; d < TD; d++)
      if (tx + 16 * d < a.HD) {
        zt_st(krow, tx + 16 * d, dk_acc[i][d] * a.scale);
        zt_st(vrow, tx + 16 * d, dv_acc[i][d]);
      }
  }
}

// ---- host side ---------------------------------------------------------------------------------------------

Attn attn_args(const zt_attention_desc *d, const char *op) {
  zt_check(d != NULL, op, "no descriptor");
  zt_check(d->HD >= 1 && d->HD <= 256, op, "head size %d: the fused kernel supports 1..256", d->HD);
  zt_check(d->B >= 0 && d->Tq >= 0 && d->Tk >= 0 && d->NH >= 1, op, "bad shape B=%d Tq=%d Tk=%d NH=%d", d->B,
           d->Tq, d->Tk, d->NH);
  zt_check(d->B <= 65535 && d->NH <= 65535, op, "B=%d and NH=%d must be at most 65535 (grid dimensions)", d->B,
           d->NH);
  zt_check(d->mask == ZT_ATTN_NONE || d->mask == ZT_ATTN_CAUSAL, op, "unknown mask kind %d", (int)d->mask);
  zt_check(d->mask != ZT_ATTN_CAUSAL || d->Tq == d->Tk, op, "the causal mask needs Tq == Tk (Tq=%d, Tk=%d)", d->Tq,
           d->Tk);
  zt_check(d->dropout.p >= 0.0f && d->dropout.p < 1.0f, op, "dropout probability %g outside [0, 1)",
           (double)d->dropout.p);
  Attn a;
  a.B = d->B, a.Tq = d->Tq, a.Tk = d->Tk, a.NH = d->NH, a.HD = d->HD;
  a.ld_q = d->ld_q, a.hs_q = d->hs_q, a.ld_kv = d->ld_kv, a.hs_k = d->hs_k, a.hs_v = d->hs_v, a.head0 = d->head0;
  a.causal = d->mask == ZT_ATTN_CAUSAL;
  a.pad = d->key_padding;
  a.key_start = d->key_start;
  a.scale = d->scale;
  a.dropout = d->dropout;
  a.drop = d->dropout.p > 0.0f;
  a.drop_scale = 1.0f / (1.0f - d->dropout.p);
  zt_dropout_params(&d->dropout, &a.key0, &a.key1, &a.threshold);
  return a;
}

unsigned cdiv(int n, int d) { return (unsigned)((n + d - 1) / d); }

// Calls f(std::integral_constant<int, HDP>) with the padded head size of HD.
template <typename F>
void with_head_size(int HD, F &&f) {
  if (HD <= 32) f(std::integral_constant<int, 32>());
  else if (HD <= 64) f(std::integral_constant<int, 64>());
  else if (HD <= 128) f(std::integral_constant<int, 128>());
  else f(std::integral_constant<int, 256>());
}

// Launches Kernel on the backend's stream with `smem` bytes of dynamic shared memory. The first launch of
// each kernel raises its limit past the 48 KiB default, refusing with the numbers a device with less.
template <auto Kernel, typename... Args>
void launch(const char *op, dim3 grid, size_t smem, Args... args) {
  static bool ready = false;
  if (!ready) {
    int dev = 0, optin = 0;
    cudaFuncAttributes fa;
    ZT_CUDA_CHECK(cudaGetDevice(&dev));
    ZT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    ZT_CUDA_CHECK(cudaFuncGetAttributes(&fa, Kernel));
    zt_check(fa.sharedSizeBytes + smem <= (size_t)optin, op,
             "a block needs %zu bytes of shared memory, device %d allows %d", fa.sharedSizeBytes + smem, dev, optin);
    ZT_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    ready = true;
  }
  Kernel<<<grid, NT, smem, zt_stream()>>>(args...);
  ZT_CUDA_LAUNCHED();
}

}  // namespace

extern "C" void zt_cuda_attention_forward(zt_dtype dt, void *out, float *lse, const void *q, const void *k,
                                          const void *v, const zt_attention_desc *desc) {
  const char *op = "cuda attention_forward";
  const Attn a = attn_args(desc, op);
  if (a.B == 0 || a.Tq == 0) return;
  zt_check(out && lse && q && (a.Tk == 0 || (k && v)), op, "NULL tensor (out %p, lse %p, q %p, k %p, v %p)", out,
           (void *)lse, q, k, v);
  with_head_size(a.HD, [&](auto hdp) {
    constexpr int HDP = decltype(hdp)::value;
    using S = FwdShape<HDP>;
    zt_dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      launch<attn_forward_kernel<T, HDP>>(op, dim3(cdiv(a.Tq, S::BQ), a.NH, a.B), S::BYTES, (T *)out, lse,
                                          (const T *)q, (const T *)k, (const T *)v, a);
    });
  });
}

extern "C" void zt_cuda_attention_backward(zt_dtype dt, void *dq, void *dk, void *dv, const void *dout,
                                           const void *out, const float *lse, const void *q, const void *k,
                                           const void *v, const zt_attention_desc *desc) {
  const char *op = "cuda attention_backward";
  const Attn a = attn_args(desc, op);
  if (a.B == 0) return;
  zt_check((a.Tq == 0 || (dq && dout && out && lse && q)) && (a.Tk == 0 || (dk && dv && k && v)), op,
           "NULL tensor (dq %p, dk %p, dv %p, dout %p, out %p, lse %p, q %p, k %p, v %p)", dq, dk, dv, dout, out,
           (void *)lse, q, k, v);
  // D[B, NH, Tq] in the cuBLASLt workspace (free between ops: everything runs in order on one stream)
  const size_t rows = (size_t)a.B * a.NH * a.Tq;
  size_t ws_bytes = 0;
  void *ws = zt_cuda_workspace(&ws_bytes);
  float *D = rows * sizeof(float) <= ws_bytes ? (float *)ws
                                               : (float *)zt_cuda_malloc(rows * sizeof(float), "attention row dots");
  with_head_size(a.HD, [&](auto hdp) {
    constexpr int HDP = decltype(hdp)::value;
    zt_dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      if (a.Tq > 0) {
        attn_rowdot_kernel<T><<<zt_blocks(rows, NT / 32), NT, 0, zt_stream()>>>(D, (const T *)dout, (const T *)out,
                                                                               a.B, a.Tq, a.NH, a.HD);
        ZT_CUDA_LAUNCHED();
        launch<attn_dq_kernel<T, HDP>>(op, dim3(cdiv(a.Tq, DqShape<HDP>::BQ), a.NH, a.B), DqShape<HDP>::BYTES,
                                       (T *)dq, (const T *)dout, (const float *)lse, (const float *)D,
                                       (const T *)q, (const T *)k, (const T *)v, a);
      }
      if (a.Tk > 0)
        launch<attn_dkdv_kernel<T, HDP>>(op, dim3(cdiv(a.Tk, KvShape<HDP>::BK), a.NH, a.B), KvShape<HDP>::BYTES,
                                         (T *)dk, (T *)dv, (const T *)dout, (const float *)lse, (const float *)D,
                                         (const T *)q, (const T *)k, (const T *)v, a);
    });
  });
  if ((void *)D != ws) zt_cuda_free(D);
}
