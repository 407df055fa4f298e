/* Scaled-dot-product attention on the CPU: one (batch, head) pair per task, sgemm for QK^T and PV.
 * The probabilities [B, NH, Tq, Tk] are stored for backward (T x T per head is cheap at the CPU's
 * sequence lengths; the CUDA backend uses a fused kernel that never materializes them). A block-sparse layout
 * goes to runtime/ops/cpu/attention_sparse.c, or with layout_as_mask is applied here as an element mask (the
 * reference of the sparse kernels). */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "runtime/ops/attn_layout.h"
#include "runtime/ops/cpu/attention_sparse.h"
#include "runtime/ops/cpu/vmath.h"
#include "runtime/ops/ops.h"

/* Element id of probability (h, i, j) within one sample's dropout stream (h made global by head0, so a
 * tensor-parallel rank drops what one process drops for the same head). */
static inline uint64_t prob_elem(const zt_attention_desc *a, int h, int i) {
  return ((uint64_t)(h + a->head0) * a->Tq + i) * a->Tk;
}

/* Number of keys row i may see (causal: i+1, else Tk); keys beyond are masked. */
static inline int visible_keys(const zt_attention_desc *a, int i) {
  return a->mask == ZT_ATTN_CAUSAL ? i + 1 : a->Tk;
}

static int sparse(const zt_attention_desc *a) { return a->layout && !a->layout_as_mask; }

size_t zt_attention_saved_floats(const zt_attention_desc *a) {
  if (sparse(a)) return zt_attention_sparse_floats(a);
  return (size_t)a->B * a->NH * a->Tq * a->Tk;
}

size_t zt_attention_scratch_floats(const zt_attention_desc *a) {
  if (sparse(a)) return zt_attention_sparse_floats(a);
  return (size_t)omp_get_max_threads() * 2 * a->Tq * a->Tk;
}

/* Softmax of row i (layout head g) over the keys of its listed tiles that are visible ([lo, nk), not padded); the
 * rest of the row becomes 0. The sums run over ascending keys as in the unmasked loop below. */
static void softmax_row_listed(float *row, int Tk, int lo, int nk, const uint8_t *pad, const zt_attn_layout *l,
                               int g, int i) {
  const int bs = l->block;
  const size_t rr = (size_t)g * l->nb + (size_t)(i / bs);
  const int32_t e0 = l->row_ptr[rr], e1 = l->row_ptr[rr + 1];
  float m = -INFINITY;
  for (int32_t e = e0; e < e1; e++)
    for (int j = l->col_idx[e] * bs; j < (l->col_idx[e] + 1) * bs; j++)
      if (j >= lo && j < nk && !(pad && pad[j]) && row[j] > m) m = row[j];
  if (m == -INFINITY) { memset(row, 0, (size_t)Tk * sizeof(float)); return; }
  float s = 0.0f;
  int done = 0;
  for (int32_t e = e0; e < e1; e++) {
    const int j0 = l->col_idx[e] * bs;
    memset(row + done, 0, (size_t)(j0 - done) * sizeof(float));
    for (int j = j0; j < j0 + bs; j++) {
      float x = (j >= lo && j < nk && !(pad && pad[j])) ? zt_expf(row[j] - m) : 0.0f;
      row[j] = x;
      s += x;
    }
    done = j0 + bs;
  }
  memset(row + done, 0, (size_t)(Tk - done) * sizeof(float));
  float inv = 1.0f / s;
  for (int j = 0; j < Tk; j++) row[j] *= inv;
}

void zt_attention_forward(float *out, float *probs, const float *q, const float *k, const float *v,
                          const zt_attention_desc *a) {
  if (sparse(a)) { zt_attention_sparse_forward(out, probs, q, k, v, a); return; }
  if (a->layout) zt_attention_layout_check(a);
  const int Tq = a->Tq, Tk = a->Tk, HD = a->HD, C = a->NH * a->HD;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++) {
      float *P = probs + ((size_t)b * a->NH + h) * Tq * Tk;
      const float *Q = q + (size_t)b * Tq * a->ld_q + (size_t)h * a->hs_q;
      const float *K = k + (size_t)b * Tk * a->ld_kv + (size_t)h * a->hs_k;
      const float *V = v + (size_t)b * Tk * a->ld_kv + (size_t)h * a->hs_v;
      float *O = out + (size_t)b * Tq * C + (size_t)h * HD;
      const uint8_t *pad = a->key_padding ? a->key_padding + (size_t)b * Tk : NULL;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, HD, a->scale, Q, a->ld_q, K, a->ld_kv,
                  0.0f, P, Tk);
      for (int i = 0; i < Tq; i++) {
        float *row = P + (size_t)i * Tk;
        int nk = visible_keys(a, i);
        int lo = a->key_start ? a->key_start[(size_t)b * Tq + i] : 0;
        if (a->layout) {
          softmax_row_listed(row, Tk, lo, nk, pad, a->layout, zt_attn_layout_head(a->layout, a->head0, h), i);
          continue;
        }
        float m = -INFINITY;
        for (int j = lo; j < nk; j++)
          if (!(pad && pad[j]) && row[j] > m) m = row[j];
        if (m == -INFINITY) { memset(row, 0, (size_t)Tk * sizeof(float)); continue; }
        float s = 0.0f;
        for (int j = 0; j < Tk; j++) {
          float e = (j >= lo && j < nk && !(pad && pad[j])) ? zt_expf(row[j] - m) : 0.0f;
          row[j] = e;
          s += e;
        }
        float inv = 1.0f / s;
        for (int j = 0; j < Tk; j++) row[j] *= inv;
      }
      if (a->dropout.p > 0.0f) {
        /* O = dropout(P) V, row by row so the dropped row stays in a small buffer */
        float pd[Tk];
        for (int i = 0; i < Tq; i++) {
          zt_dropout_apply_range(pd, P + (size_t)i * Tk, (size_t)Tk, &a->dropout,
                                 a->dropout.first_sample + b, prob_elem(a, h, i));
          cblas_sgemv(CblasRowMajor, CblasTrans, Tk, HD, 1.0f, V, a->ld_kv, pd, 1, 0.0f, O + (size_t)i * C, 1);
        }
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, HD, Tk, 1.0f, P, Tk, V, a->ld_kv, 0.0f, O, C);
      }
    }
}

void zt_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *probs,
                           const float *q, const float *k, const float *v,
                           const zt_attention_desc *a, float *scratch) {
  if (sparse(a)) { zt_attention_sparse_backward(dq, dk, dv, dout, probs, q, k, v, a, scratch); return; }
  /* with layout_as_mask the unlisted probabilities are 0, so their dS is 0 as for any masked position */
  if (a->layout) zt_attention_layout_check(a);
  const int Tq = a->Tq, Tk = a->Tk, HD = a->HD, C = a->NH * a->HD;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++) {
      float *dP = scratch + (size_t)omp_get_thread_num() * 2 * Tq * Tk; /* [Tq, Tk] */
      float *Pd = dP + (size_t)Tq * Tk;                                  /* dropped probs [Tq, Tk] */
      const float *P = probs + ((size_t)b * a->NH + h) * Tq * Tk;
      const float *Q = q + (size_t)b * Tq * a->ld_q + (size_t)h * a->hs_q;
      const float *K = k + (size_t)b * Tk * a->ld_kv + (size_t)h * a->hs_k;
      const float *V = v + (size_t)b * Tk * a->ld_kv + (size_t)h * a->hs_v;
      float *dQ = dq + (size_t)b * Tq * a->ld_q + (size_t)h * a->hs_q;
      float *dK = dk + (size_t)b * Tk * a->ld_kv + (size_t)h * a->hs_k;
      float *dV = dv + (size_t)b * Tk * a->ld_kv + (size_t)h * a->hs_v;
      const float *dO = dout + (size_t)b * Tq * C + (size_t)h * HD;
      const int drop = a->dropout.p > 0.0f;
      const float *Pused = P;
      if (drop) {
        for (int i = 0; i < Tq; i++)
          zt_dropout_apply_range(Pd + (size_t)i * Tk, P + (size_t)i * Tk, (size_t)Tk, &a->dropout,
                                 a->dropout.first_sample + b, prob_elem(a, h, i));
        Pused = Pd;
      }
      /* dV = Pd^T dO ; dPd = dO V^T */
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, HD, Tq, 1.0f, Pused, Tk, dO, C, 0.0f, dV, a->ld_kv);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, HD, 1.0f, dO, C, V, a->ld_kv, 0.0f, dP, Tk);
      for (int i = 0; i < Tq; i++) {
        float *dp = dP + (size_t)i * Tk;
        const float *p = P + (size_t)i * Tk;
        if (drop)
          zt_dropout_apply_range(dp, dp, (size_t)Tk, &a->dropout, a->dropout.first_sample + b, prob_elem(a, h, i));
        /* softmax backward: dS = P * (dP - sum_j P dP); masked entries have P = 0 so dS = 0 */
        float dot = 0.0f;
        for (int j = 0; j < Tk; j++) dot += p[j] * dp[j];
        for (int j = 0; j < Tk; j++) dp[j] = p[j] * (dp[j] - dot);
      }
      /* dQ = scale dS K ; dK = scale dS^T Q */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, HD, Tk, a->scale, dP, Tk, K, a->ld_kv, 0.0f, dQ, a->ld_q);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, HD, Tq, a->scale, dP, Tk, Q, a->ld_q, 0.0f, dK, a->ld_kv);
    }
}
