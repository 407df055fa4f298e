// Rotary position embedding and grouped-query attention's repeat_kv on the GPU.
//
// rope: rotary position embedding, in place (runtime/ops/cpu/llama_ops.c's zt_rope; backend.h's rope): row
// r = b T + t of x starts at x + r ld elements, head h at + h hs; dimensions i and i + rot/2 of each head (i < rot/2)
// turn by the angle of position t, cos and sin from cs[t rot + 2 i], cs[t rot + 2 i + 1] (fp32):
// (a, b) -> (a cos - b sin, b cos + a sin); inverse turns by the opposite angle (the backward).
//
// Kernel (T is the storage type; arithmetic in fp32): rope_kernel, one thread per pair (row, head, i), i fastest
// (consecutive threads read consecutive elements of a head), grid-stride over B T NH rot/2 pairs, 256 threads. Each
// pair is read and written by one thread, and the pairs of the call are disjoint (rot <= the head's width, heads
// apart by hs): no two threads touch one element. Elements past rot in a head, and whatever lies between heads
// (the k and v of a fused QKV row when hs = 3 head size), are never read or written.
//
// gqa_pack (runtime/ops/cpu/llama_ops.c's zt_gqa_pack; backend.h's gqa_pack): a row of `grouped` holds G groups of
// [R queries | key | value] (HD each, rows of G (R + 2) HD), a row of `packed` the R G heads [q | k | v] (rows of
// 3 R G HD), head g R + j taking query j of group g and the group's key and value. Forward: gqa_pack_kernel, one
// thread per packed element, d fastest, grid-stride over N 3 R G HD: a copy of the storage element (bit for bit).
// Inverse: gqa_unpack_kernel, one thread per grouped element, grid-stride over N G (R + 2) HD: a query element
// copied; a key or value element the sum over the group's heads j = 0 .. R - 1 in that order, from 0.0f in fp32
// (the CPU's order and start: the same fp32 sum, so the same bits after the one rounding to the storage type),
// written once. Each output element has one thread, no atomics: the same bits run to run. packed and grouped must not
// overlap.
#include "runtime/ops/cuda/common.cuh"

template <typename T>
__global__ void rope_kernel(T *x, const float *cs, size_t pairs, int T_, int NH, size_t ld, size_t hs, int rot,
                            float sign) {
  const int half = rot / 2;
  for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < pairs; p += (size_t)gridDim.x * blockDim.x) {
    const size_t q = p / half, r = q / NH;
    const int i = (int)(p - q * half), h = (int)(q - r * NH), t = (int)(r % (size_t)T_);
    const size_t base = r * ld + (size_t)h * hs;
    const float co = cs[(size_t)t * rot + 2 * i], si = sign * cs[(size_t)t * rot + 2 * i + 1];
    const float a = zt_ld(x, base + i), b = zt_ld(x, base + i + half);
    zt_st(x, base + i, a * co - b * si);
    zt_st(x, base + i + half, b * co + a * si);
  }
}

extern "C" void zt_cuda_rope(zt_dtype dt, void *x, const float *cs, int B, int T, int NH, int ld, int hs, int rot,
                             int inverse) {
  zt_check(B >= 0 && T >= 0 && NH >= 0 && rot >= 0 && rot % 2 == 0 && ld >= 0 && hs >= 0, "zt_cuda_rope",
           "bad shape B=%d T=%d NH=%d ld=%d hs=%d rot=%d: need B, T, NH, ld, hs >= 0 and an even rot >= 0", B, T, NH,
           ld, hs, rot);
  const size_t pairs = (size_t)B * T * NH * (rot / 2);
  if (pairs == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using E = decltype(tag);
    rope_kernel<E><<<zt_blocks(pairs, 256), 256, 0, zt_stream()>>>((E *)x, cs, pairs, T, NH, (size_t)ld, (size_t)hs,
                                                                   rot, inverse ? -1.0f : 1.0f);
    ZT_CUDA_LAUNCHED();
  });
}

template <typename T>
__global__ void gqa_pack_kernel(T *__restrict__ packed, const T *__restrict__ grouped, size_t total, int G, int R,
                                int HD) {
  const size_t RG = (size_t)R * G;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const size_t q = e / HD, hp = q / 3, n = hp / RG;
    const int d = (int)(e - q * HD), part = (int)(q - hp * 3), head = (int)(hp - n * RG);
    const int g = head / R, j = head - g * R;
    const int slot = part == 0 ? j : R + part - 1; /* query j, or the group's key (R) or value (R + 1) */
    packed[e] = grouped[(n * G + g) * (size_t)(R + 2) * HD + (size_t)slot * HD + d];
  }
}

template <typename T>
__global__ void gqa_unpack_kernel(const T *__restrict__ packed, T *__restrict__ grouped, size_t total, int G, int R,
                                  int HD) {
  const size_t RG = (size_t)R * G;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const size_t q = e / HD, ng = q / (size_t)(R + 2), n = ng / G;
    const int d = (int)(e - q * HD), slot = (int)(q - ng * (R + 2)), g = (int)(ng - n * G);
    const T *h = packed + (n * RG + (size_t)g * R) * 3 * HD + d; /* head g R of row n, element d of its query */
    if (slot < R) {
      grouped[e] = h[(size_t)slot * 3 * HD];
    } else {
      const size_t off = (size_t)(slot - R + 1) * HD; /* the key (1 HD) or value (2 HD) of each head */
      float s = 0.0f;
      for (int j = 0; j < R; j++) s += zt_ld(h, (size_t)j * 3 * HD + off);
      zt_st(grouped, e, s);
    }
  }
}

extern "C" void zt_cuda_gqa_pack(zt_dtype dt, void *packed, void *grouped, int N, int G, int R, int HD,
                                 int inverse) {
  zt_check(N >= 0 && G > 0 && R > 0 && HD > 0, "zt_cuda_gqa_pack",
           "bad shape N=%d G=%d R=%d HD=%d: need N >= 0 and G, R, HD > 0", N, G, R, HD);
  const size_t total = (size_t)N * G * (inverse ? (size_t)R + 2 : (size_t)3 * R) * HD;
  if (total == 0) return;
  zt_dispatch(dt, [&](auto tag) {
    using E = decltype(tag);
    if (inverse)
      gqa_unpack_kernel<E><<<zt_blocks(total, 256), 256, 0, zt_stream()>>>((const E *)packed, (E *)grouped, total, G,
                                                                           R, HD);
    else
      gqa_pack_kernel<E><<<zt_blocks(total, 256), 256, 0, zt_stream()>>>((E *)packed, (const E *)grouped, total, G,
                                                                         R, HD);
    ZT_CUDA_LAUNCHED();
  });
}
