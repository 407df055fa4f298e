/* Scaled-dot-product attention on the CPU: one (batch, head) pair per task, sgemm for QK^T and PV.
 * The probabilities [B, NH, Tq, Tk] are stored for backward (T x T per head is cheap at the CPU's
 * sequence lengths; the CUDA backend uses a fused kernel that never materializes them). A block-sparse layout
 * goes to runtime/ops/cpu/attention_sparse.c, or with layout_as_mask is applied here as an element mask (the
 * reference of the sparse kernels). A chunked descriptor (chunk > 0, DeepSpeed FPDT's long-sequence attention)
 * runs flash-style here: chunk x chunk blocks of scores with an online softmax, only the rows' log-sum-exps kept,
 * and a backward that recomputes each block's probabilities from them, so memory does not grow with Tq * Tk. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
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

/* Where (sample b, head h) starts in the strided q, k, v (and their gradients, in the same layouts) and in a
 * [B, Tq, NH HD] tensor (the output and its gradient). */
typedef struct {
  size_t q, k, v, o;
} head_at;
static inline head_at head_offsets(const zt_attention_desc *a, int b, int h) {
  const size_t kv = (size_t)b * a->Tk * a->ld_kv;
  return (head_at){(size_t)b * a->Tq * a->ld_q + (size_t)h * a->hs_q, kv + (size_t)h * a->hs_k,
                   kv + (size_t)h * a->hs_v, ((size_t)b * a->Tq * a->NH + h) * a->HD};
}

/* Whether the descriptor asks for the chunked path; a negative chunk or one with a layout ends the process. */
static int chunked(const zt_attention_desc *a) {
  zt_check(a->chunk >= 0, "attention", "chunk %d: 0 (dense) or the rows of a chunked block", a->chunk);
  zt_check(a->chunk == 0 || !a->layout, "attention",
           "chunked attention (chunk %d) does not combine with a block-sparse layout", a->chunk);
  return a->chunk > 0;
}

/* Rows of a query block and of a key block: chunk, or the whole sequence when it is shorter. */
static inline int qblock(const zt_attention_desc *a) { return a->chunk < a->Tq ? a->chunk : a->Tq; }
static inline int kblock(const zt_attention_desc *a) { return a->chunk < a->Tk ? a->chunk : a->Tk; }

size_t zt_attention_saved_floats(const zt_attention_desc *a) {
  if (chunked(a)) return (size_t)a->B * a->NH * a->Tq;
  if (sparse(a)) return zt_attention_sparse_floats(a);
  return (size_t)a->B * a->NH * a->Tq * a->Tk;
}

size_t zt_attention_scratch_floats(const zt_attention_desc *a) {
  if (chunked(a)) return (size_t)omp_get_max_threads() * (2 * (size_t)qblock(a) * kblock(a) + (size_t)qblock(a));
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

/* The key blocks [*jbeg, *jend) that queries [i0, i0 + ni) of sample b may see, in steps of kblock(a) from a
 * multiple of it: the causal end of the last row, and the blocks wholly before every row's key_start skipped. */
static void key_range(const zt_attention_desc *a, int b, int i0, int ni, int *jbeg, int *jend) {
  const int bk = kblock(a);
  int end = a->Tk;
  if (a->mask == ZT_ATTN_CAUSAL && i0 + ni < end) end = i0 + ni;
  int lo = end;
  for (int i = i0; i < i0 + ni && lo > 0; i++) {
    const int s = a->key_start ? a->key_start[(size_t)b * a->Tq + i] : 0;
    if (s < lo) lo = s;
  }
  *jbeg = lo / bk * bk;
  *jend = end;
}

/* S [ni, nj] (row stride ld) = scale Q K^T for queries [i0, i0 + ni) and keys [j0, j0 + nj) of sample b (Q, K at
 * row 0 of the head), with the keys a row may not see (causal end, key_start, padding) set to -inf. */
static void block_scores(float *S, int ld, const float *Q, const float *K, const zt_attention_desc *a, int b, int i0,
                         int ni, int j0, int nj) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ni, nj, a->HD, a->scale, Q + (size_t)i0 * a->ld_q, a->ld_q,
              K + (size_t)j0 * a->ld_kv, a->ld_kv, 0.0f, S, ld);
  const uint8_t *pad = a->key_padding ? a->key_padding + (size_t)b * a->Tk + j0 : NULL;
  for (int ii = 0; ii < ni; ii++) {
    const int i = i0 + ii, lo = a->key_start ? a->key_start[(size_t)b * a->Tq + i] : 0;
    int u0 = lo - j0, u1 = visible_keys(a, i) - j0; /* the visible keys [u0, u1) of the block, before padding */
    u0 = u0 < 0 ? 0 : (u0 > nj ? nj : u0);
    u1 = u1 < u0 ? u0 : (u1 > nj ? nj : u1);
    float *x = S + (size_t)ii * ld;
    for (int jj = 0; jj < nj; jj++)
      if (jj < u0 || jj >= u1 || (pad && pad[jj])) x[jj] = -INFINITY;
  }
}

/* The chunked forward: per (sample, head) and query block, an online softmax over the visible key blocks with the
 * output rows accumulated in place (rescaled when the running maximum grows), then divided by the row sums. Dropout
 * acts on each block's probabilities with the dense kernel's element ids; the sums use the undropped ones. */
static void chunked_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                            const zt_attention_desc *a) {
  const int Tq = a->Tq, HD = a->HD, C = a->NH * a->HD, bq = qblock(a), bk = kblock(a);
  const int drop = a->dropout.p > 0.0f;
  #pragma omp parallel
  {
    /* a block's scores, then its (dropped) probabilities [bq, bk]; the rows' running max m and sum l */
    float *S = zt_malloc(((size_t)bq * bk + 2 * (size_t)bq) * sizeof(float), "chunked attention");
    float *m = S + (size_t)bq * bk, *l = m + bq;
    #pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < a->B; b++)
      for (int h = 0; h < a->NH; h++) {
        const head_at at = head_offsets(a, b, h);
        const float *Q = q + at.q, *K = k + at.k, *V = v + at.v;
        float *O = out + at.o;
        float *L = lse + ((size_t)b * a->NH + h) * Tq;
        for (int i0 = 0; i0 < Tq; i0 += bq) {
          const int ni = Tq - i0 < bq ? Tq - i0 : bq;
          float *Ob = O + (size_t)i0 * C;
          for (int ii = 0; ii < ni; ii++) {
            memset(Ob + (size_t)ii * C, 0, (size_t)HD * sizeof(float));
            m[ii] = -INFINITY;
            l[ii] = 0.0f;
          }
          int jbeg, jend;
          key_range(a, b, i0, ni, &jbeg, &jend);
          for (int j0 = jbeg; j0 < jend; j0 += bk) {
            const int nj = jend - j0 < bk ? jend - j0 : bk;
            block_scores(S, bk, Q, K, a, b, i0, ni, j0, nj);
            for (int ii = 0; ii < ni; ii++) {
              float *x = S + (size_t)ii * bk;
              float mx = m[ii];
              for (int jj = 0; jj < nj; jj++) mx = x[jj] > mx ? x[jj] : mx;
              if (mx == -INFINITY) { memset(x, 0, (size_t)nj * sizeof(float)); continue; } /* nothing visible yet */
              const float alpha = m[ii] == -INFINITY ? 0.0f : zt_expf(m[ii] - mx);
              float sum = 0.0f;
              for (int jj = 0; jj < nj; jj++) {
                x[jj] = x[jj] == -INFINITY ? 0.0f : zt_expf(x[jj] - mx);
                sum += x[jj];
              }
              l[ii] = l[ii] * alpha + sum;
              m[ii] = mx;
              if (alpha != 1.0f)
                for (int d = 0; d < HD; d++) Ob[(size_t)ii * C + d] *= alpha;
              if (drop)
                zt_dropout_apply_range(x, x, (size_t)nj, &a->dropout, a->dropout.first_sample + b,
                                       prob_elem(a, h, i0 + ii) + (uint64_t)j0);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, HD, nj, 1.0f, S, bk,
                        V + (size_t)j0 * a->ld_kv, a->ld_kv, 1.0f, Ob, C);
          }
          for (int ii = 0; ii < ni; ii++) {
            if (m[ii] == -INFINITY) { L[i0 + ii] = -INFINITY; continue; } /* no visible key: output stays 0 */
            const float inv = 1.0f / l[ii];
            for (int d = 0; d < HD; d++) Ob[(size_t)ii * C + d] *= inv;
            L[i0 + ii] = m[ii] + logf(l[ii]);
          }
        }
      }
    free(S);
  }
}

void zt_attention_forward(float *out, float *probs, const float *q, const float *k, const float *v,
                          const zt_attention_desc *a) {
  if (chunked(a)) { chunked_forward(out, probs, q, k, v, a); return; }
  if (sparse(a)) { zt_attention_sparse_forward(out, probs, q, k, v, a); return; }
  if (a->layout) zt_attention_layout_check(a);
  const int Tq = a->Tq, Tk = a->Tk, HD = a->HD, C = a->NH * a->HD;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++) {
      float *P = probs + ((size_t)b * a->NH + h) * Tq * Tk;
      const head_at at = head_offsets(a, b, h);
      const float *Q = q + at.q, *K = k + at.k, *V = v + at.v;
      float *O = out + at.o;
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
        /* O = dropout(P) V, DROP_ROWS rows at a time: the dropped rows in a small buffer, one sgemm each (row by
         * row, sgemv ran the product at a tenth of sgemm's rate) */
        enum { DROP_ROWS = 32 };
        float *pd = zt_malloc((size_t)DROP_ROWS * Tk * sizeof(float), "attention dropout rows");
        for (int i0 = 0; i0 < Tq; i0 += DROP_ROWS) {
          const int ni = Tq - i0 < DROP_ROWS ? Tq - i0 : DROP_ROWS;
          for (int ii = 0; ii < ni; ii++)
            zt_dropout_apply_range(pd + (size_t)ii * Tk, P + (size_t)(i0 + ii) * Tk, (size_t)Tk, &a->dropout,
                                   a->dropout.first_sample + b, prob_elem(a, h, i0 + ii));
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, HD, Tk, 1.0f, pd, Tk, V, a->ld_kv, 0.0f,
                      O + (size_t)i0 * C, C);
        }
        free(pd);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, HD, Tk, 1.0f, P, Tk, V, a->ld_kv, 0.0f, O, C);
      }
    }
}

void zt_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *probs,
                           const float *q, const float *k, const float *v,
                           const zt_attention_desc *a, float *scratch) {
  zt_check(!chunked(a), "attention",
           "a chunked descriptor (chunk %d) keeps no probabilities: its backward is zt_attention_chunked_backward",
           a->chunk);
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
      const head_at at = head_offsets(a, b, h);
      const float *Q = q + at.q, *K = k + at.k, *V = v + at.v, *dO = dout + at.o;
      float *dQ = dq + at.q, *dK = dk + at.k, *dV = dv + at.v;
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

static void zero_head_rows(float *x, int rows, int ld, int HD) {
  for (int t = 0; t < rows; t++) memset(x + (size_t)t * ld, 0, (size_t)HD * sizeof(float));
}

void zt_attention_chunked_backward(float *dq, float *dk, float *dv, const float *dout, const float *out,
                                   const float *lse, const float *q, const float *k, const float *v,
                                   const zt_attention_desc *a, float *scratch) {
  zt_check(chunked(a), "attention", "zt_attention_chunked_backward with chunk 0 (the dense backward reads P)");
  const int Tq = a->Tq, Tk = a->Tk, HD = a->HD, C = a->NH * a->HD, bq = qblock(a), bk = kblock(a);
  const int drop = a->dropout.p > 0.0f;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < a->B; b++)
    for (int h = 0; h < a->NH; h++) {
      float *P = scratch + (size_t)omp_get_thread_num() * (2 * (size_t)bq * bk + bq); /* [bq, bk] */
      float *dP = P + (size_t)bq * bk;                                                  /* [bq, bk] */
      float *D = dP + (size_t)bq * bk;                                                  /* [bq] */
      const head_at at = head_offsets(a, b, h);
      const float *Q = q + at.q, *K = k + at.k, *V = v + at.v, *dO = dout + at.o;
      float *dQ = dq + at.q, *dK = dk + at.k, *dV = dv + at.v;
      const float *O = out + at.o;
      const float *L = lse + ((size_t)b * a->NH + h) * Tq;
      /* the blocks accumulate (beta 1) into this head's columns, which no other task touches */
      zero_head_rows(dQ, Tq, a->ld_q, HD);
      zero_head_rows(dK, Tk, a->ld_kv, HD);
      zero_head_rows(dV, Tk, a->ld_kv, HD);
      for (int i0 = 0; i0 < Tq; i0 += bq) {
        const int ni = Tq - i0 < bq ? Tq - i0 : bq;
        const float *dOb = dO + (size_t)i0 * C;
        /* D_i = sum_j P_ij dP_ij = dO_i . O_i, the softmax backward's row term (dropout included: O = dropout(P) V) */
        for (int ii = 0; ii < ni; ii++) {
          float dot = 0.0f;
          for (int d = 0; d < HD; d++) dot += dOb[(size_t)ii * C + d] * O[(size_t)(i0 + ii) * C + d];
          D[ii] = dot;
        }
        int jbeg, jend;
        key_range(a, b, i0, ni, &jbeg, &jend);
        for (int j0 = jbeg; j0 < jend; j0 += bk) {
          const int nj = jend - j0 < bk ? jend - j0 : bk;
          block_scores(P, bk, Q, K, a, b, i0, ni, j0, nj);
          for (int ii = 0; ii < ni; ii++) { /* P = exp(S - lse), masked 0 (a row with no visible key is all masked) */
            float *x = P + (size_t)ii * bk;
            const float li = L[i0 + ii];
            for (int jj = 0; jj < nj; jj++) x[jj] = x[jj] == -INFINITY ? 0.0f : zt_expf(x[jj] - li);
          }
          /* dV += dropout(P)^T dO */
          const float *Pu = P;
          if (drop) {
            for (int ii = 0; ii < ni; ii++)
              zt_dropout_apply_range(dP + (size_t)ii * bk, P + (size_t)ii * bk, (size_t)nj, &a->dropout,
                                     a->dropout.first_sample + b, prob_elem(a, h, i0 + ii) + (uint64_t)j0);
            Pu = dP;
          }
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nj, HD, ni, 1.0f, Pu, bk, dOb, C, 1.0f,
                      dV + (size_t)j0 * a->ld_kv, a->ld_kv);
          /* dP = dropout^T(dO V^T); dS = P (dP - D) in its place */
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ni, nj, HD, 1.0f, dOb, C, V + (size_t)j0 * a->ld_kv,
                      a->ld_kv, 0.0f, dP, bk);
          for (int ii = 0; ii < ni; ii++) {
            float *dp = dP + (size_t)ii * bk;
            const float *p = P + (size_t)ii * bk;
            if (drop)
              zt_dropout_apply_range(dp, dp, (size_t)nj, &a->dropout, a->dropout.first_sample + b,
                                     prob_elem(a, h, i0 + ii) + (uint64_t)j0);
            for (int jj = 0; jj < nj; jj++) dp[jj] = p[jj] * (dp[jj] - D[ii]);
          }
          /* dQ += scale dS K ; dK += scale dS^T Q */
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, HD, nj, a->scale, dP, bk,
                      K + (size_t)j0 * a->ld_kv, a->ld_kv, 1.0f, dQ + (size_t)i0 * a->ld_q, a->ld_q);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nj, HD, ni, a->scale, dP, bk,
                      Q + (size_t)i0 * a->ld_q, a->ld_q, 1.0f, dK + (size_t)j0 * a->ld_kv, a->ld_kv);
        }
      }
    }
}
