/* DeepSpeed-Ulysses' all-to-all between the sequence and the heads, and dropout keyed by the global positions. */
#include "models/transformer/ulysses.h"

#include "runtime/base/error.h"

/* Block r of one side of the exchange: rows of cols elements, ld apart, from element r * step; each block is n = rows x
 * cols elements, contiguous in the all-to-all's buffers. */
typedef struct {
  size_t step, ld, rows, cols;
} side;

/* The local side [B, Tl, W]: block r is rank r's columns of this rank's tokens. The heads side [B, Tl P, W/P]: block r
 * is rank r's tokens (positions [r Tl, (r+1) Tl) of each row) of this rank's columns. */
static side local_side(int B, int Tl, int Wc, int W) { return (side){(size_t)Wc, (size_t)W, (size_t)B * Tl, (size_t)Wc}; }
static side heads_side(int B, int Tl, int Wc, int P) {
  return (side){(size_t)Tl * Wc, (size_t)Tl * P * Wc, (size_t)B, (size_t)Tl * Wc};
}

/* Packs src's blocks into the send buffer, exchanges block r with rank r, unpacks the received blocks into dst. */
static void exchange(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *dst, side d, const void *src, side s) {
  const size_t n = s.rows * s.cols;
  for (int r = 0; r < u->size; r++)
    be->copy2d(dt, zt_at(u->send, dt, r * n), s.cols, zt_at(src, dt, r * s.step), s.ld, s.rows, s.cols);
  zt_alltoall(u->group, dt, u->send, n, u->recv);
  for (int r = 0; r < u->size; r++)
    be->copy2d(dt, zt_at(dst, dt, r * d.step), d.ld, zt_at(u->recv, dt, r * n), d.cols, d.rows, d.cols);
}

void zt_usp_seq_to_heads(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *heads, const void *local, int B,
                         int Tl, int W) {
  zt_check(W % u->size == 0, "internal error", "Ulysses: a row of %d values does not split over %d ranks", W, u->size);
  const int Wc = W / u->size;
  exchange(u, be, dt, heads, heads_side(B, Tl, Wc, u->size), local, local_side(B, Tl, Wc, W));
}

void zt_usp_heads_to_seq(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *local, const void *heads, int B,
                         int Tl, int W) {
  zt_check(W % u->size == 0, "internal error", "Ulysses: a row of %d values does not split over %d ranks", W, u->size);
  const int Wc = W / u->size;
  exchange(u, be, dt, local, local_side(B, Tl, Wc, W), heads, heads_side(B, Tl, Wc, u->size));
}

void zt_pass_dropout(const zt_backend *be, zt_dtype dt, void *out, const void *residual, const void *x,
                     const zt_pass *pass, int C, const zt_dropout *d) {
  if (pass->seq_total > 0) { /* each row's T tokens are rows seq_off.. of a sample of seq_total */
    const size_t S = (size_t)pass->T * C;
    for (int b = 0; b < pass->B; b++)
      be->dropout_rows(dt, zt_at(out, dt, b * S), residual ? zt_at(residual, dt, b * S) : NULL, zt_at(x, dt, b * S),
                       b * pass->seq_total + pass->seq_off, pass->T, pass->seq_total, C, d);
  } else if (residual) {
    be->dropout_add_forward(dt, out, residual, x, pass->B, (size_t)pass->T * C, d);
  } else {
    be->dropout_forward(dt, out, x, pass->B, (size_t)pass->T * C, d);
  }
}
