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
//
// Block-sparse layouts (zt_attention_desc.layout, DeepSpeed's sparse attention): the kernels are compiled twice,
// without the layout code (layout == NULL: the dense kernels, unchanged: the layout is a parameter of its own, Lay,
// so their code is what it was before layouts, same registers and same PTX instruction mix under ptxas -v at sm_90)
// and with it (LAY). A LAY block first builds,
// in shared memory, the bitmap of the tiles it will walk: forward and dq blocks the key tiles meeting a listed tile of
// their block rows (row_ptr/col_idx: the rows' entries are one contiguous run), dk/dv blocks the query tiles meeting a
// listed tile of their block columns (the transpose col_ptr/row_idx); the walk visits the set bits inside the causal
// and key_start range (every thread reads the same bits: uniform control flow). For each walked tile, a uint64 per
// line (query row; key column for dk/dv) marks the elements lying in listed layout tiles (a binary search of the
// line's sorted CSR entries), and the others are masked exactly like causal ones. So any block size (1 and up) meets
// any tile size, and the results equal dense attention with the layout as an element mask. layout_as_mask walks
// every tile and applies the same element mask: the reference, whose bits the skipping path must reproduce (a tile
// with no visible element adds exactly nothing: the online softmax keeps m, rescales by exp(0) = 1 and adds 0 P V;
// dS and P are 0). Nothing is precomputed on the host: no per-call copies or synchronisation; shared memory grows by
// 8 B per line plus 4 B per 32 tiles of the sequence. The saved state stays lse.
//
// Expected GPU speed-up (no GPU in the session that wrote this; the CPU emulator checks logic only): DeepSpeed's
// `fixed` layout, 4 local blocks + 1 global, block 64, unidirectional, against dense causal at BQ = BK = 64 (HD <= 64:
// layout blocks are the tiles). Row i of nb blocks lists (i mod 4) + 1 local tiles and floor(i / 4) global ones:
//   seq 4K  (nb  64):   640 walked tiles per head vs   2080 dense causal: 3.25x fewer FLOPs, 3.0x fewer bytes
//   seq 16K (nb 256):  8704                       vs  32896             : 3.78x,             3.7x
//   seq 32K (nb 512): 33792                       vs 131328             : 3.89x,             3.8x (limit 4x)
// (FLOPs: 4 * 64^2 * HD per walked tile forward, 14 * 64^2 * HD backward over the two passes, in both cases; bytes:
// the K and V tiles each walked tile reads, 2 * 64 * HD elements, plus Q, out and lse once per row block.) These
// fp32-SIMT kernels are compute-bound (64 FLOP per byte of K/V at bf16), so the time should fall by about the FLOP
// ratio; the layout costs per walked tile one binary search per line over about nb / 4 entries, negligible next to
// the 64 x 64 x HD products. The dk/dv pass has its longest blocks on the global columns (nb - 3 query tiles, as long
// as dense causal's first column): launched first (ascending blockIdx), they stay off the critical path unless
// B * NH is too small to fill the GPU. To be measured on a GPU: these timings (bench/gpu_ops.c has no sparse case
// yet), and the tensor-core version of these kernels (mma.sync, the GPU-speed issue's work: the emulator has no
// mma.sync), where the same bitmap and line masks apply to the accumulator fragments.
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

// A block-sparse layout as the kernels see it (zt_attn_layout, arrays in device memory): a parameter of its own, so
// that the dense kernels' Attn (and code) stay as they were.
struct Lay {
  const int32_t *row_ptr, *col_idx, *col_ptr, *row_idx;
  int blk, nb, heads, head0;  // blk == 0: no layout
  bool skip;                  // walk only the tiles the layout lists (false: layout_as_mask, every tile walked)
};

// Tile sizes per padded head size, and the shared memory layout (in floats) of each kernel.
template <int HDP>
struct FwdShape {
  static constexpr int BQ = 64, BK = HDP >= 128 ? 32 : 64, LH = HDP + 1, LS = BK + 1;
  static constexpr int Q = 0, K = Q + BQ * LH, V = K + BK * LH, P = V + BK * LH, MASK = P + BQ * LS;
  static constexpr size_t BYTES = (MASK + BK) * sizeof(float);
  static constexpr int LINES = BQ, TILE = BK;  // layout: a key mask per query row; the key tiles' bitmap
};
template <int HDP>
struct DqShape {
  static constexpr int BQ = HDP >= 256 ? 32 : 64, BK = HDP >= 128 ? 32 : 64, LH = HDP + 1, LS = BK + 1;
  static constexpr int Q = 0, DO = Q + BQ * LH, K = DO + BQ * LH, V = K + BK * LH, DS = V + BK * LH,
                       MASK = DS + BQ * LS;
  static constexpr size_t BYTES = (MASK + BK) * sizeof(float);
  static constexpr int LINES = BQ, TILE = BK;
};
template <int HDP>
struct KvShape {
  static constexpr int BK = HDP >= 256 ? 32 : 64, BQ = HDP >= 128 ? 32 : 64, LH = HDP + 1, LS = BK + 1;
  static constexpr int K = 0, V = K + BK * LH, Q = V + BK * LH, DO = Q + BQ * LH, P = DO + BQ * LH,
                       DS = P + BQ * LS, LSE = DS + BQ * LS, D = LSE + BQ, MASK = D + BQ, LO = MASK + BK;
  static constexpr size_t BYTES = (LO + BQ) * sizeof(float);
  static constexpr int LINES = BK, TILE = BQ;  // layout: a query mask per key column; the query tiles' bitmap
};

// With a layout, each kernel's shared memory goes on with LINES masks (uint64: bit c of line r is element (r, c) of
// the current tile, listed or not) and the bitmap of the tiles of width TILE the block walks, over n positions.
template <typename S>
__host__ __device__ constexpr size_t lay_offset() { return (S::BYTES + 15) / 16 * 16; }
template <typename S>
size_t lay_bytes(int n) {
  const size_t tiles = ((size_t)n + S::TILE - 1) / S::TILE;
  return lay_offset<S>() + S::LINES * sizeof(uint64_t) + (tiles + 31) / 32 * sizeof(unsigned);
}

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

// ---- block-sparse layouts ----------------------------------------------------------------------------------
// A block owns the lines [l0, l0 + LINES) (query rows, or key columns for dk/dv) and walks tiles of TILE positions
// on the other axis. Its layout lines are the block lines of the CSR (ptr, idx): row_ptr/col_idx for query rows,
// the transpose col_ptr/row_idx for key columns; layout head g = zt_attn_layout_head.
__device__ __forceinline__ int lay_head(const Lay &L, int h) { return L.heads == 1 ? 0 : L.head0 + h; }

// Bits [lo, hi) of a uint64 (0 <= lo, hi <= 64); none when lo >= hi.
__device__ __forceinline__ uint64_t bit_range(int lo, int hi) {
  if (lo >= hi) return 0;
  const uint64_t below_hi = hi >= 64 ? ~0ull : (1ull << hi) - 1;
  return below_hi & ~((1ull << lo) - 1);
}

// bits[] (nwords words, shared) = the tiles of TILE positions that meet a listed layout tile of block lines
// [bl0, bl1] of head g: their entries are one contiguous run of idx. Ends with a barrier.
template <int TILE>
__device__ void lay_tile_bitmap(unsigned *bits, int nwords, const int32_t *ptr, const int32_t *idx, const Lay &L,
                                int g, int bl0, int bl1) {
  for (int w = threadIdx.x; w < nwords; w += NT) bits[w] = 0;
  __syncthreads();
  const int32_t e0 = ptr[(size_t)g * L.nb + bl0], e1 = ptr[(size_t)g * L.nb + bl1 + 1];
  for (int32_t e = e0 + (int32_t)threadIdx.x; e < e1; e += NT) {
    const int first = idx[e] * L.blk;  // the listed tile covers positions [first, first + blk)
    for (int t = first / TILE; t <= (first + L.blk - 1) / TILE; t++) atomicOr(&bits[t >> 5], 1u << (t & 31));
  }
  __syncthreads();
}

// The first tile >= t set in bits, or t_end (the same answer in every thread: uniform control flow).
__device__ __forceinline__ int lay_next_tile(const unsigned *bits, int t, int t_end) {
  while (t < t_end) {
    const unsigned w = bits[t >> 5] >> (t & 31);
    if (w) return min(t + __ffs((int)w) - 1, t_end);
    t = (t | 31) + 1;
  }
  return t_end;
}

// Bit c (c < W) set when position p0 + c of the other axis lies in a listed layout tile of line i's block line
// (line i < T; none past T): a binary search of the line's sorted idx for the first block >= p0 / blk, then its
// entries until they pass the tile.
__device__ uint64_t lay_line_mask(const int32_t *ptr, const int32_t *idx, const Lay &L, int g, int i, int T, int p0,
                                  int W) {
  if (i >= T) return 0;
  const size_t line = (size_t)g * L.nb + i / L.blk;
  const int32_t end = ptr[line + 1], c0 = p0 / L.blk;
  int32_t lo = ptr[line], hi = end;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (idx[mid] < c0) lo = mid + 1;
    else hi = mid;
  }
  uint64_t m = 0;
  for (int32_t e = lo; e < end; e++) {
    const int start = idx[e] * L.blk - p0;
    if (start >= W) break;
    m |= bit_range(max(start, 0), min(start + L.blk, W));
  }
  return m;
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

template <typename T, int HDP, bool LAY>
__global__ void __launch_bounds__(NT)
    attn_forward_kernel(T *out, float *lse, const T *q, const T *k, const T *v, const Attn a, const Lay L) {
  using S = FwdShape<HDP>;
  constexpr int BQ = S::BQ, BK = S::BK, LH = S::LH, LS = S::LS, TM = BQ / 16, TN = BK / 16, TD = HDP / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  float *Qs = (float *)smem + S::Q, *Ks = (float *)smem + S::K, *Vs = (float *)smem + S::V;
  float *Ps = (float *)smem + S::P;
  int *masked = (int *)((float *)smem + S::MASK);
  uint64_t *lay_mask = (uint64_t *)(smem + lay_offset<S>());  // LAY: keys of the tile each row may see
  unsigned *lay_tiles = (unsigned *)(lay_mask + S::LINES);      // LAY and L.skip: the key tiles to walk
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
  const bool skip = LAY && L.skip;
  const int t_end = (k_end + BK - 1) / BK;
  int g = 0, k_first = k_begin / BK * BK;
  if constexpr (LAY) {
    g = lay_head(L, h);
    if (skip) {
      lay_tile_bitmap<BK>(lay_tiles, (t_end + 31) / 32, L.row_ptr, L.col_idx, L, g, q0 / L.blk,
                          (min(q0 + BQ, a.Tq) - 1) / L.blk);
      k_first = lay_next_tile(lay_tiles, k_begin / BK, t_end) * BK;
    }
  }
  for (int k0 = k_first; k0 < k_end; k0 = skip ? lay_next_tile(lay_tiles, k0 / BK + 1, t_end) * BK : k0 + BK) {
    __syncthreads();  // the previous tile's Ks, Vs and Ps are read
    load_rows<BK, HDP>(Ks, view(k, a.Tk, a.ld_kv, a.hs_k, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_rows<BK, HDP>(Vs, view(v, a.Tk, a.ld_kv, a.hs_v, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_key_mask<BK>(masked, a, b, k0);
    if constexpr (LAY)
      for (int r = threadIdx.x; r < BQ; r += NT)
        lay_mask[r] = lay_line_mask(L.row_ptr, L.col_idx, L, g, q0 + r, a.Tq, k0, BK);
    __syncthreads();
    float s[TM][TN] = {};
    tile_mma<TM, TN, HDP, LH, LH, false, true>(s, Qs, Ks, ty, tx);
#pragma unroll
    for (int i = 0; i < TM; i++) {
      const int r = q0 + ty + 16 * i;
      const uint64_t listed = LAY ? lay_mask[ty + 16 * i] : 0;
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int c = tx + 16 * j;
        const bool vis = visible(a, lo[i], r, k0 + c, masked[c]) && (!LAY || (listed >> c & 1));
        s[i][j] = vis ? s[i][j] * a.scale : -INFINITY;
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

template <typename T, int HDP, bool LAY>
__global__ void __launch_bounds__(NT)
    attn_dq_kernel(T *dq, const T *dout, const float *lse, const float *D, const T *q, const T *k, const T *v,
                   const Attn a, const Lay L) {
  using S = DqShape<HDP>;
  constexpr int BQ = S::BQ, BK = S::BK, LH = S::LH, LS = S::LS, TM = BQ / 16, TN = BK / 16, TD = HDP / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  float *Qs = (float *)smem + S::Q, *dOs = (float *)smem + S::DO, *Ks = (float *)smem + S::K;
  float *Vs = (float *)smem + S::V, *dSs = (float *)smem + S::DS;
  int *masked = (int *)((float *)smem + S::MASK);
  uint64_t *lay_mask = (uint64_t *)(smem + lay_offset<S>());  // as in the forward
  unsigned *lay_tiles = (unsigned *)(lay_mask + S::LINES);
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
  const bool skip = LAY && L.skip;
  const int t_end = (k_end + BK - 1) / BK;
  int g = 0, k_first = k_begin / BK * BK;
  if constexpr (LAY) {
    g = lay_head(L, h);
    if (skip) {
      lay_tile_bitmap<BK>(lay_tiles, (t_end + 31) / 32, L.row_ptr, L.col_idx, L, g, q0 / L.blk,
                          (min(q0 + BQ, a.Tq) - 1) / L.blk);
      k_first = lay_next_tile(lay_tiles, k_begin / BK, t_end) * BK;
    }
  }
  for (int k0 = k_first; k0 < k_end; k0 = skip ? lay_next_tile(lay_tiles, k0 / BK + 1, t_end) * BK : k0 + BK) {
    __syncthreads();  // Qs and dOs are in; the previous tile's Ks, Vs and dSs are read
    load_rows<BK, HDP>(Ks, view(k, a.Tk, a.ld_kv, a.hs_k, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_rows<BK, HDP>(Vs, view(v, a.Tk, a.ld_kv, a.hs_v, b, h, k0), a.ld_kv, min(BK, a.Tk - k0), a.HD);
    load_key_mask<BK>(masked, a, b, k0);
    if constexpr (LAY)
      for (int r = threadIdx.x; r < BQ; r += NT)
        lay_mask[r] = lay_line_mask(L.row_ptr, L.col_idx, L, g, q0 + r, a.Tq, k0, BK);
    __syncthreads();
    float s[TM][TN] = {}, dp[TM][TN] = {};
    tile_mma<TM, TN, HDP, LH, LH, false, true>(s, Qs, Ks, ty, tx);
    tile_mma<TM, TN, HDP, LH, LH, false, true>(dp, dOs, Vs, ty, tx);
#pragma unroll
    for (int i = 0; i < TM; i++) {
      const int r = q0 + ty + 16 * i;
      const uint64_t listed = LAY ? lay_mask[ty + 16 * i] : 0;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int c = tx + 16 * j;
        const bool vis = visible(a, lo[i], r, k0 + c, masked[c]) && (!LAY || (listed >> c & 1));
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

template <typename T, int HDP, bool LAY>
__global__ void __launch_bounds__(NT)
    attn_dkdv_kernel(T *dk, T *dv, const T *dout, const float *lse, const float *D, const T *q, const T *k,
                     const T *v, const Attn a, const Lay L) {
  using S = KvShape<HDP>;
  constexpr int BK = S::BK, BQ = S::BQ, LH = S::LH, LS = S::LS, TQ = BQ / 16, TK = BK / 16, TD = HDP / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  float *Ks = (float *)smem + S::K, *Vs = (float *)smem + S::V, *Qs = (float *)smem + S::Q;
  float *dOs = (float *)smem + S::DO, *Ps = (float *)smem + S::P, *dSs = (float *)smem + S::DS;
  float *row_lse = (float *)smem + S::LSE, *row_D = (float *)smem + S::D;
  int *masked = (int *)((float *)smem + S::MASK), *row_lo = (int *)((float *)smem + S::LO);
  uint64_t *lay_mask = (uint64_t *)(smem + lay_offset<S>());  // LAY: queries of the tile each key column may see
  unsigned *lay_tiles = (unsigned *)(lay_mask + S::LINES);      // LAY and L.skip: the query tiles to walk
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

  const bool skip = LAY && L.skip;
  const int t_end = (a.Tq + BQ - 1) / BQ;
  int g = 0, q_first = a.causal ? k0 / BQ * BQ : 0;
  if constexpr (LAY) {
    g = lay_head(L, h);
    if (skip) {  // the transpose: the listed tiles of the block's key columns
      lay_tile_bitmap<BQ>(lay_tiles, (t_end + 31) / 32, L.col_ptr, L.row_idx, L, g, k0 / L.blk, k_last / L.blk);
      q_first = lay_next_tile(lay_tiles, q_first / BQ, t_end) * BQ;
    }
  }
  for (int q0 = q_first; q0 < a.Tq; q0 = skip ? lay_next_tile(lay_tiles, q0 / BQ + 1, t_end) * BQ : q0 + BQ) {
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
    if constexpr (LAY)
      for (int c = threadIdx.x; c < BK; c += NT)
        lay_mask[c] = lay_line_mask(L.col_ptr, L.row_idx, L, g, k0 + c, a.Tk, q0, BQ);
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
        const bool vis = visible(a, row_lo[rr], r, k0 + c, masked[c]) && (!LAY || (lay_mask[c] >> rr & 1));
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

Attn attn_args(const zt_attention_desc *d, const char *op, Lay *L) {
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
  *L = Lay{nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, false};
  if (const zt_attn_layout *l = d->layout) {
    zt_check(l->block >= 1 && l->nb >= 1 && l->heads >= 1 && l->nnz >= 0, op,
             "bad block-sparse layout: %d blocks of %d, %d heads, %lld listed", l->nb, l->block, l->heads,
             (long long)l->nnz);
    zt_check(d->Tq == d->Tk && (int64_t)l->nb * l->block == d->Tq, op,
             "a block-sparse layout needs Tq == Tk == nb * block (Tq=%d, Tk=%d, layout of %d blocks of %d)", d->Tq,
             d->Tk, l->nb, l->block);
    zt_check(l->heads == 1 || (d->head0 >= 0 && (int64_t)d->head0 + d->NH <= l->heads), op,
             "the layout has %d heads, the op needs heads %d..%d (head0 %d, NH %d)", l->heads, d->head0,
             d->head0 + d->NH - 1, d->head0, d->NH);
    zt_check(l->row_ptr && l->col_ptr && (l->nnz == 0 || (l->col_idx && l->row_idx)), op,
             "block-sparse layout without its arrays (row_ptr %p, col_ptr %p, col_idx %p, row_idx %p)",
             (const void *)l->row_ptr, (const void *)l->col_ptr, (const void *)l->col_idx, (const void *)l->row_idx);
    *L = Lay{l->row_ptr, l->col_idx, l->col_ptr, l->row_idx, l->block, l->nb, l->heads, d->head0,
             !d->layout_as_mask};
  }
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

// Calls f(std::integral_constant<bool, LAY>): the kernels without a layout are compiled without its code.
template <typename F>
void with_layout(const Lay &L, F &&f) {
  if (L.blk) f(std::true_type());
  else f(std::false_type());
}

// Launches Kernel on the backend's stream with `smem` bytes of dynamic shared memory. The first launch of
// each kernel (and one needing more than any before it: a layout's tile bitmap grows with the sequence) raises its
// limit past the 48 KiB default, refusing with the numbers a device with less.
template <auto Kernel, typename... Args>
void launch(const char *op, dim3 grid, size_t smem, Args... args) {
  static size_t ready = 0;  // the limit set so far
  if (smem > ready) {
    int dev = 0, optin = 0;
    cudaFuncAttributes fa;
    ZT_CUDA_CHECK(cudaGetDevice(&dev));
    ZT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    ZT_CUDA_CHECK(cudaFuncGetAttributes(&fa, Kernel));
    zt_check(fa.sharedSizeBytes + smem <= (size_t)optin, op,
             "a block needs %zu bytes of shared memory, device %d allows %d", fa.sharedSizeBytes + smem, dev, optin);
    ZT_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    ready = smem;
  }
  Kernel<<<grid, NT, smem, zt_stream()>>>(args...);
  ZT_CUDA_LAUNCHED();
}

}  // namespace

extern "C" void zt_cuda_attention_forward(zt_dtype dt, void *out, float *lse, const void *q, const void *k,
                                          const void *v, const zt_attention_desc *desc) {
  const char *op = "cuda attention_forward";
  Lay L;
  const Attn a = attn_args(desc, op, &L);
  if (a.B == 0 || a.Tq == 0) return;
  zt_check(out && lse && q && (a.Tk == 0 || (k && v)), op, "NULL tensor (out %p, lse %p, q %p, k %p, v %p)", out,
           (void *)lse, q, k, v);
  with_head_size(a.HD, [&](auto hdp) {
    constexpr int HDP = decltype(hdp)::value;
    using S = FwdShape<HDP>;
    with_layout(L, [&](auto lay) {
      constexpr bool LAY = decltype(lay)::value;
      const size_t smem = LAY ? lay_bytes<S>(a.Tk) : S::BYTES;
      zt_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        launch<attn_forward_kernel<T, HDP, LAY>>(op, dim3(cdiv(a.Tq, S::BQ), a.NH, a.B), smem, (T *)out, lse,
                                                 (const T *)q, (const T *)k, (const T *)v, a, L);
      });
    });
  });
}

extern "C" void zt_cuda_attention_backward(zt_dtype dt, void *dq, void *dk, void *dv, const void *dout,
                                           const void *out, const float *lse, const void *q, const void *k,
                                           const void *v, const zt_attention_desc *desc) {
  const char *op = "cuda attention_backward";
  Lay L;
  const Attn a = attn_args(desc, op, &L);
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
    using SQ = DqShape<HDP>;
    using SK = KvShape<HDP>;
    with_layout(L, [&](auto lay) {
      constexpr bool LAY = decltype(lay)::value;
      const size_t smem_q = LAY ? lay_bytes<SQ>(a.Tk) : SQ::BYTES, smem_k = LAY ? lay_bytes<SK>(a.Tq) : SK::BYTES;
      zt_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        if (a.Tq > 0) {
          attn_rowdot_kernel<T><<<zt_blocks(rows, NT / 32), NT, 0, zt_stream()>>>(D, (const T *)dout,
                                                                                 (const T *)out, a.B, a.Tq, a.NH,
                                                                                 a.HD);
          ZT_CUDA_LAUNCHED();
          launch<attn_dq_kernel<T, HDP, LAY>>(op, dim3(cdiv(a.Tq, SQ::BQ), a.NH, a.B), smem_q, (T *)dq,
                                              (const T *)dout, (const float *)lse, (const float *)D, (const T *)q,
                                              (const T *)k, (const T *)v, a, L);
        }
        if (a.Tk > 0)
          launch<attn_dkdv_kernel<T, HDP, LAY>>(op, dim3(cdiv(a.Tk, SK::BK), a.NH, a.B), smem_k, (T *)dk, (T *)dv,
                                                (const T *)dout, (const float *)lse, (const float *)D, (const T *)q,
                                                (const T *)k, (const T *)v, a, L);
      });
    });
  });
  if ((void *)D != ws) zt_cuda_free(D);
}
