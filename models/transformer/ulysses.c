/* DeepSpeed-Ulysses' all-to-all between the sequence and the heads, and dropout keyed by the global positions. */
#include "models/transformer/ulysses.h"

#include "runtime/base/error.h"

void zt_usp_seq_to_heads(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *heads, const void *local, int B,
                         int Tl, int W) {
  const int P = u->size, Wc = W / P;
  zt_check(W % P == 0, "internal error", "Ulysses: a row of %d values does not split over %d ranks", W, P);
  const size_t n = (size_t)B * Tl * Wc, T = (size_t)Tl * P;
  for (int r = 0; r < P; r++) /* block r: this rank's tokens, rank r's columns */
    be->copy2d(dt, zt_at(u->send, dt, r * n), Wc, zt_at(local, dt, (size_t)r * Wc), W, (size_t)B * Tl, Wc);
  zt_alltoall(u->group, dt, u->send, n, u->recv);
  for (int r = 0; r < P; r++) /* block r: rank r's tokens, this rank's columns, to positions [r Tl, (r+1) Tl) */
    be->copy2d(dt, zt_at(heads, dt, (size_t)r * Tl * Wc), T * Wc, zt_at(u->recv, dt, r * n), (size_t)Tl * Wc, B,
               (size_t)Tl * Wc);
}

void zt_usp_heads_to_seq(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *local, const void *heads, int B,
                         int Tl, int W) {
  const int P = u->size, Wc = W / P;
  zt_check(W % P == 0, "internal error", "Ulysses: a row of %d values does not split over %d ranks", W, P);
  const size_t n = (size_t)B * Tl * Wc, T = (size_t)Tl * P;
  for (int r = 0; r < P; r++) /* block r: rank r's tokens of this rank's columns */
    be->copy2d(dt, zt_at(u->send, dt, r * n), (size_t)Tl * Wc, zt_at(heads, dt, (size_t)r * Tl * Wc), T * Wc, B,
               (size_t)Tl * Wc);
  zt_alltoall(u->group, dt, u->send, n, u->recv);
  for (int r = 0; r < P; r++) /* block r: this rank's tokens, rank r's columns */
    be->copy2d(dt, zt_at(local, dt, (size_t)r * Wc), W, zt_at(u->recv, dt, r * n), Wc, (size_t)B * Tl, Wc);
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
