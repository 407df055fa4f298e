/* DeepSpeed-Ulysses' all-to-all between the sequence and the heads, and dropout keyed by the global positions. */
#include "models/transformer/ulysses.h"

#include "runtime/base/error.h"

/* One side of the exchange: block r (the part for or from rank r) is nk chunks, chunk k rows of cols elements, ld
 * apart, from element r * step + k * kstep. In the all-to-all's buffers a block is n = rows x nk cols elements, its
 * rows contiguous with chunk k at column k cols. */
typedef struct {
  size_t step, kstep, ld, rows, cols, nk;
} side;

/* The local side [B, Tl, W]: block r is rank r's columns of this rank's tokens (one chunk). The heads side
 * [B, Tl P, W/P]: block r is rank r's tokens of this rank's columns, its chunk k (c tokens) at positions
 * (k P + r) c of each row (c = Tl: rank r's tokens are the positions [r Tl, (r+1) Tl)). */
static side local_side(int B, int Tl, int Wc, int W) {
  return (side){(size_t)Wc, 0, (size_t)W, (size_t)B * Tl, (size_t)Wc, 1};
}
static side heads_side(int B, int Tl, int Wc, int P, int c) {
  return (side){(size_t)c * Wc, (size_t)P * c * Wc, (size_t)Tl * P * Wc, (size_t)B, (size_t)c * Wc,
                (size_t)(Tl / c)};
}

/* Packs src's blocks into the send buffer, exchanges block r with rank r, unpacks the received blocks into dst. */
static void exchange(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *dst, side d, const void *src, side s) {
  const size_t n = s.rows * s.nk * s.cols;
  for (int r = 0; r < u->size; r++)
    for (size_t k = 0; k < s.nk; k++)
      be->copy2d(dt, zt_at(u->send, dt, r * n + k * s.cols), s.nk * s.cols, zt_at(src, dt, r * s.step + k * s.kstep),
                 s.ld, s.rows, s.cols);
  zt_alltoall(u->group, dt, u->send, n, u->recv);
  for (int r = 0; r < u->size; r++)
    for (size_t k = 0; k < d.nk; k++)
      be->copy2d(dt, zt_at(dst, dt, r * d.step + k * d.kstep), d.ld, zt_at(u->recv, dt, r * n + k * d.cols),
                 d.nk * d.cols, d.rows, d.cols);
}

static void check_split(const zt_usp *u, int Tl, int W) {
  zt_check(W % u->size == 0 && u->chunk > 0 && Tl % u->chunk == 0, "internal error", "Ulysses: a row of %d values "
           "over %d ranks, %d tokens per rank in chunks of %d", W, u->size, Tl, u->chunk);
}

void zt_usp_seq_to_heads(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *heads, const void *local, int B,
                         int Tl, int W) {
  check_split(u, Tl, W);
  const int Wc = W / u->size;
  exchange(u, be, dt, heads, heads_side(B, Tl, Wc, u->size, u->chunk), local, local_side(B, Tl, Wc, W));
}

void zt_usp_heads_to_seq(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *local, const void *heads, int B,
                         int Tl, int W) {
  check_split(u, Tl, W);
  const int Wc = W / u->size;
  exchange(u, be, dt, local, local_side(B, Tl, Wc, W), heads, heads_side(B, Tl, Wc, u->size, u->chunk));
}

void zt_pass_dropout(const zt_backend *be, zt_dtype dt, void *out, const void *residual, const void *x,
                     const zt_pass *pass, int C, const zt_dropout *d) {
  if (pass->seq_total > 0) { /* each row's T tokens: chunks of c rows, chunk k at seq_off + k c P of seq_total */
    const int c = pass->seq_chunk > 0 ? pass->seq_chunk : pass->T, P = pass->seq_total / pass->T;
    for (int b = 0; b < pass->B; b++)
      for (int k = 0; k < pass->T / c; k++) {
        const size_t at = ((size_t)b * pass->T + (size_t)k * c) * C;
        be->dropout_rows(dt, zt_at(out, dt, at), residual ? zt_at(residual, dt, at) : NULL, zt_at(x, dt, at),
                         b * pass->seq_total + pass->seq_off + k * c * P, c, pass->seq_total, C, d);
      }
  } else if (residual) {
    be->dropout_add_forward(dt, out, residual, x, pass->B, (size_t)pass->T * C, d);
  } else {
    be->dropout_forward(dt, out, x, pass->B, (size_t)pass->T * C, d);
  }
}
