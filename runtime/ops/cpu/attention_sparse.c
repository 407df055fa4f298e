/* Block-sparse scaled-dot-product attention on the CPU (DeepSpeed's sparse_attention; zt_attn_layout in
 * runtime/ops/ops.h): only the listed block x block tiles of each head are computed, so neither the scores nor the
 * probabilities are ever T x T. Forward: one task per (sample, head, block row) computes the scores of the row's
 * listed tiles (one sgemm per run of consecutive listed blocks, straight from the strided K view, no copy), the
 * softmax over them (causal, key_padding and key_start applied inside the tiles), dropout with the dense kernel's
 * element ids and O = dropout(P) V (again per run, accumulated in the row's order). The probabilities are kept
 * compactly (the saved layout of zt_attention_forward in ops.h). Backward: dS per block row and dQ from it, then dK
 * and dV per block column through the layout's transpose (the column's P and dS tiles copied together, Q and dO
 * read in place per run of consecutive block rows); every output element is written by one task with a fixed
 * summation order, so results do not depend on the thread count or schedule and no atomics are needed. */
#include "runtime/ops/cpu/attention_sparse.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/ops/cpu/vmath.h"

void zt_attention_layout_check(const zt_attention_desc *a) {
  const zt_attn_layout *l = a->layout;
  zt_check(l->block >= 1 && l->nb >= 1 && l->heads >= 1, "attention",
           "block-sparse layout with %d blocks of %d tokens and %d heads", l->nb, l->block, l->heads);
  zt_check(a->Tq == a->Tk && (int64_t)l->nb * l->block == a->Tq, "attention",
           "a block-sparse layout needs self-attention with Tq == Tk == blocks * block: Tq %d, Tk %d, layout %d "
           "blocks of %d tokens (%lld)",
           a->Tq, a->Tk, l->nb, l->block, (long long)l->nb * l->block);
  zt_check(l->heads == 1 || (a->head0 >= 0 && a->head0 + a->NH <= l->heads), "attention",
           "the block-sparse layout has %d heads, the op's heads are %d .. %d", l->heads, a->head0,
           a->head0 + a->NH - 1);
}

size_t zt_attention_sparse_floats(const zt_attention_desc *a) {
  zt_attention_layout_check(a);
  const size_t bs = (size_t)a->layout->block;
  return (size_t)a->B * (size_t)zt_attn_layout_heads_nnz(a->layout, a->head0, a->NH) * bs * bs;
}

/* hoff[h]: tiles of the local heads before h (per sample), hoff[NH] all of them. */
static int64_t *head_offsets(const zt_attention_desc *a) {
  int64_t *hoff = zt_malloc(((size_t)a->NH + 1) * sizeof(int64_t), "attention head offsets");
  hoff[0] = 0;
  for (int h = 0; h < a->NH; h++) hoff[h + 1] = hoff[h] + zt_attn_layout_heads_nnz(a->layout, a->head0 + h, 1);
  return hoff;
}

static inline uint64_t prob_elem(const zt_attention_desc *a, int h, int i) {
  return ((uint64_t)(h + a->head0) * a->Tq + i) * a->Tk;
}

/* Length of the run of consecutive block indices idx[t], idx[t] + 1, ... within idx[t..n). */
static inline int run_len(const int32_t *idx, int t, int n) {
  int u = t + 1;
  while (u < n && idx[u] == idx[u - 1] + 1) u++;
  return u - t;
}

static void zero_rows(float *dst, int rows, int HD, int ld) {
  for (int i = 0; i < rows; i++) memset(dst + (size_t)i * ld, 0, (size_t)HD * sizeof(float));
}

void zt_attention_sparse_forward(float *out, float *probs, const float *q, const float *k, const float *v,
                                 const zt_attention_desc *a) {
  zt_attention_layout_check(a);
  const zt_attn_layout *l = a->layout;
  const int bs = l->block, nb = l->nb, T = a->Tq, HD = a->HD, NH = a->NH, C = NH * HD;
  const int drop = a->dropout.p > 0.0f;
  int64_t *hoff = head_offsets(a);
  const size_t bs2 = (size_t)bs * bs, per_sample = (size_t)hoff[NH] * bs2;
  #pragma omp parallel
  {
    float *Pd = drop ? zt_malloc((size_t)T * bs * sizeof(float), "sparse attention") : NULL;
    #pragma omp for collapse(3) schedule(dynamic, 1)
    for (int b = 0; b < a->B; b++)
      for (int h = 0; h < NH; h++)
        for (int r = 0; r < nb; r++) {
          const size_t base = (size_t)zt_attn_layout_head(l, a->head0, h) * nb;
          const int32_t e0 = l->row_ptr[base + r], n = l->row_ptr[base + r + 1] - e0;
          const int32_t *cols = l->col_idx + e0;
          const int W = n * bs;
          float *P = probs + b * per_sample + ((size_t)hoff[h] + (size_t)(e0 - l->row_ptr[base])) * bs2;
          const float *Q = q + ((size_t)b * T + (size_t)r * bs) * a->ld_q + (size_t)h * a->hs_q;
          const float *K = k + (size_t)b * T * a->ld_kv + (size_t)h * a->hs_k;
          const float *V = v + (size_t)b * T * a->ld_kv + (size_t)h * a->hs_v;
          float *O = out + ((size_t)b * T + (size_t)r * bs) * C + (size_t)h * HD;
          const uint8_t *pad = a->key_padding ? a->key_padding + (size_t)b * T : NULL;
          if (n == 0) { zero_rows(O, bs, HD, C); continue; }
          /* P [bs, W]: row ii holds query r*bs + ii against the row's listed keys, tile after tile */
          for (int t = 0, len; t < n; t += len) {
            len = run_len(cols, t, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bs, len * bs, HD, a->scale, Q, a->ld_q,
                        K + (size_t)cols[t] * bs * a->ld_kv, a->ld_kv, 0.0f, P + (size_t)t * bs, W);
          }
          for (int ii = 0; ii < bs; ii++) {
            const int i = r * bs + ii;
            float *row = P + (size_t)ii * W;
            const int nk = a->mask == ZT_ATTN_CAUSAL ? i + 1 : T;
            const int lo = a->key_start ? a->key_start[(size_t)b * T + i] : 0;
            /* visible keys of tile t: [u0, u1) of its bs (causal end, key_start) minus the padded ones. The loops
             * vectorize (the sum in a fixed lane order: deterministic, within rounding of the dense kernel's). */
            float m = -INFINITY;
            for (int t = 0; t < n; t++) {
              const int j0 = cols[t] * bs, u0 = lo > j0 ? lo - j0 : 0, u1 = nk - j0 < bs ? nk - j0 : bs;
              const float *x = row + (size_t)t * bs;
              const uint8_t *pt = pad ? pad + j0 : NULL;
              if (pt) {
                for (int jj = u0; jj < u1; jj++)
                  if (!pt[jj] && x[jj] > m) m = x[jj];
              } else {
                #pragma omp simd reduction(max : m)
                for (int jj = u0; jj < u1; jj++) m = x[jj] > m ? x[jj] : m;
              }
            }
            if (m == -INFINITY) { memset(row, 0, (size_t)W * sizeof(float)); continue; }
            for (int t = 0; t < n; t++) {
              const int j0 = cols[t] * bs, u0 = lo > j0 ? lo - j0 : 0, u1 = nk - j0 < bs ? nk - j0 : bs;
              float *x = row + (size_t)t * bs;
              const uint8_t *pt = pad ? pad + j0 : NULL;
              if (pt) {
                for (int jj = 0; jj < bs; jj++)
                  x[jj] = (jj >= u0 && jj < u1 && !pt[jj]) ? zt_expf(x[jj] - m) : 0.0f;
              } else { /* [0, v0) and [v1, bs) masked, [v0, v1) visible */
                const int v0 = u0 < bs ? u0 : bs, v1 = u1 < v0 ? v0 : u1;
                memset(x, 0, (size_t)v0 * sizeof(float));
                #pragma omp simd
                for (int jj = v0; jj < v1; jj++) x[jj] = zt_expf(x[jj] - m);
                memset(x + v1, 0, (size_t)(bs - v1) * sizeof(float));
              }
            }
            float s = 0.0f;
            #pragma omp simd reduction(+ : s)
            for (int x = 0; x < W; x++) s += row[x];
            const float inv = 1.0f / s;
            for (int x = 0; x < W; x++) row[x] *= inv;
          }
          const float *Pu = P;
          if (drop) {
            for (int ii = 0; ii < bs; ii++)
              for (int t = 0; t < n; t++)
                zt_dropout_apply_range(Pd + (size_t)ii * W + (size_t)t * bs, P + (size_t)ii * W + (size_t)t * bs,
                                       (size_t)bs, &a->dropout, a->dropout.first_sample + b,
                                       prob_elem(a, h, r * bs + ii) + (uint64_t)cols[t] * bs);
            Pu = Pd;
          }
          for (int t = 0, len; t < n; t += len) {
            len = run_len(cols, t, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bs, HD, len * bs, 1.0f, Pu + (size_t)t * bs, W,
                        V + (size_t)cols[t] * bs * a->ld_kv, a->ld_kv, t ? 1.0f : 0.0f, O, C);
          }
        }
    free(Pd);
  }
  free(hoff);
}

void zt_attention_sparse_backward(float *dq, float *dk, float *dv, const float *dout, const float *probs,
                                  const float *q, const float *k, const float *v, const zt_attention_desc *a,
                                  float *scratch) {
  zt_attention_layout_check(a);
  const zt_attn_layout *l = a->layout;
  const int bs = l->block, nb = l->nb, T = a->Tq, HD = a->HD, NH = a->NH, C = NH * HD;
  const int drop = a->dropout.p > 0.0f;
  int64_t *hoff = head_offsets(a);
  const size_t bs2 = (size_t)bs * bs, per_sample = (size_t)hoff[NH] * bs2;
  float *dS = scratch; /* the same layout as probs */
  #pragma omp parallel
  {
    float *Pc = zt_malloc((size_t)T * bs * sizeof(float), "sparse attention"); /* a column's (dropped) P tiles */
    float *Sc = zt_malloc((size_t)T * bs * sizeof(float), "sparse attention"); /* a column's dS tiles */
    /* dS = softmax backward of dropout^T(dO V^T), and dQ = scale dS K, per block row */
    #pragma omp for collapse(3) schedule(dynamic, 1)
    for (int b = 0; b < a->B; b++)
      for (int h = 0; h < NH; h++)
        for (int r = 0; r < nb; r++) {
          const size_t base = (size_t)zt_attn_layout_head(l, a->head0, h) * nb;
          const int32_t e0 = l->row_ptr[base + r], n = l->row_ptr[base + r + 1] - e0;
          const int32_t *cols = l->col_idx + e0;
          const int W = n * bs;
          const size_t off = b * per_sample + ((size_t)hoff[h] + (size_t)(e0 - l->row_ptr[base])) * bs2;
          const float *P = probs + off;
          float *S = dS + off;
          float *dQ = dq + ((size_t)b * T + (size_t)r * bs) * a->ld_q + (size_t)h * a->hs_q;
          const float *dO = dout + ((size_t)b * T + (size_t)r * bs) * C + (size_t)h * HD;
          const float *K = k + (size_t)b * T * a->ld_kv + (size_t)h * a->hs_k;
          const float *V = v + (size_t)b * T * a->ld_kv + (size_t)h * a->hs_v;
          if (n == 0) { zero_rows(dQ, bs, HD, a->ld_q); continue; }
          for (int t = 0, len; t < n; t += len) {
            len = run_len(cols, t, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bs, len * bs, HD, 1.0f, dO, C,
                        V + (size_t)cols[t] * bs * a->ld_kv, a->ld_kv, 0.0f, S + (size_t)t * bs, W);
          }
          for (int ii = 0; ii < bs; ii++) {
            float *dp = S + (size_t)ii * W;
            const float *p = P + (size_t)ii * W;
            if (drop)
              for (int t = 0; t < n; t++)
                zt_dropout_apply_range(dp + (size_t)t * bs, dp + (size_t)t * bs, (size_t)bs, &a->dropout,
                                       a->dropout.first_sample + b,
                                       prob_elem(a, h, r * bs + ii) + (uint64_t)cols[t] * bs);
            float dot = 0.0f;
            #pragma omp simd reduction(+ : dot)
            for (int x = 0; x < W; x++) dot += p[x] * dp[x];
            for (int x = 0; x < W; x++) dp[x] = p[x] * (dp[x] - dot);
          }
          for (int t = 0, len; t < n; t += len) {
            len = run_len(cols, t, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bs, HD, len * bs, a->scale, S + (size_t)t * bs, W,
                        K + (size_t)cols[t] * bs * a->ld_kv, a->ld_kv, t ? 1.0f : 0.0f, dQ, a->ld_q);
          }
        }
    /* dV = dropout(P)^T dO and dK = scale dS^T Q per block column, its tiles in ascending block row order */
    #pragma omp for collapse(3) schedule(dynamic, 1)
    for (int b = 0; b < a->B; b++)
      for (int h = 0; h < NH; h++)
        for (int c = 0; c < nb; c++) {
          const size_t base = (size_t)zt_attn_layout_head(l, a->head0, h) * nb;
          const int32_t f0 = l->col_ptr[base + c], m = l->col_ptr[base + c + 1] - f0;
          float *dK = dk + ((size_t)b * T + (size_t)c * bs) * a->ld_kv + (size_t)h * a->hs_k;
          float *dV = dv + ((size_t)b * T + (size_t)c * bs) * a->ld_kv + (size_t)h * a->hs_v;
          if (m == 0) {
            zero_rows(dK, bs, HD, a->ld_kv);
            zero_rows(dV, bs, HD, a->ld_kv);
            continue;
          }
          const size_t head_base = b * per_sample + (size_t)hoff[h] * bs2;
          for (int t = 0; t < m; t++) {
            const int32_t e = l->t_pos[f0 + t], r = l->row_idx[f0 + t];
            const int32_t e0r = l->row_ptr[base + r], Wr = (l->row_ptr[base + r + 1] - e0r) * bs;
            const size_t tile = head_base + (size_t)(e0r - l->row_ptr[base]) * bs2 + (size_t)(e - e0r) * bs;
            for (int ii = 0; ii < bs; ii++) {
              float *pc = Pc + ((size_t)t * bs + ii) * bs;
              const float *pt = probs + tile + (size_t)ii * Wr;
              if (drop)
                zt_dropout_apply_range(pc, pt, (size_t)bs, &a->dropout, a->dropout.first_sample + b,
                                       prob_elem(a, h, r * bs + ii) + (uint64_t)c * bs);
              else
                memcpy(pc, pt, (size_t)bs * sizeof(float));
              memcpy(Sc + ((size_t)t * bs + ii) * bs, dS + tile + (size_t)ii * Wr, (size_t)bs * sizeof(float));
            }
          }
          const int32_t *rows = l->row_idx + f0;
          const float *Qh = q + (size_t)b * T * a->ld_q + (size_t)h * a->hs_q;
          const float *dOh = dout + (size_t)b * T * C + (size_t)h * HD;
          for (int t = 0, len; t < m; t += len) {
            len = run_len(rows, t, m);
            const float beta = t ? 1.0f : 0.0f;
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bs, HD, len * bs, 1.0f, Pc + (size_t)t * bs2, bs,
                        dOh + (size_t)rows[t] * bs * C, C, beta, dV, a->ld_kv);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bs, HD, len * bs, a->scale, Sc + (size_t)t * bs2, bs,
                        Qh + (size_t)rows[t] * bs * a->ld_q, a->ld_q, beta, dK, a->ld_kv);
          }
        }
    free(Pc);
    free(Sc);
  }
  free(hoff);
}
