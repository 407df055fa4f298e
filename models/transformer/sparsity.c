/* DeepSpeed's sparse-attention layouts (sparsity_config.py's Dense, Fixed, Variable, BigBird and BSLongformer
 * configs): the ds_config defaults, the checks with DeepSpeed's messages, and make_layout.
 * DeepSpeed slices with Python semantics in one place (fixed's short last window when nb < num_global_blocks
 * gives a negative start, which Python counts from the end); py_clamp reproduces that. Everything else is
 * kept in range by zt_sparsity_check. */
#include "models/transformer/sparsity.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/philox.h"

void zt_sparsity_config_defaults(zt_sparsity_config *c, zt_sparse_mode mode) {
  memset(c, 0, sizeof *c);
  c->mode = mode;
  c->block = 16;
  c->different_layout_per_head = false;
  c->num_local_blocks = 4;
  c->num_global_blocks = 1;
  c->unidirectional = false;
  c->horizontal_global_attention = false;
  c->num_different_global_patterns = 1;
  c->num_random_blocks = 0; /* ds_config's default for variable and bigbird (BigBirdSparsityConfig's own is 1) */
  c->local_window_blocks[0] = 4;
  c->n_local_window_blocks = 1;
  c->global_block_indices[0] = 0;
  c->n_global_block_indices = 1;
  c->n_global_block_end_indices = -1;
  c->num_sliding_window_blocks = 3;
}

const char *zt_sparse_mode_name(zt_sparse_mode m) {
  switch (m) {
  case ZT_SPARSE_DENSE: return "dense";
  case ZT_SPARSE_FIXED: return "fixed";
  case ZT_SPARSE_VARIABLE: return "variable";
  case ZT_SPARSE_BIGBIRD: return "bigbird";
  case ZT_SPARSE_BSLONGFORMER: return "bslongformer";
  }
  return "?";
}

bool zt_sparse_mode_from_name(const char *name, zt_sparse_mode *m) {
  for (int i = ZT_SPARSE_DENSE; i <= ZT_SPARSE_BSLONGFORMER; i++)
    if (!strcmp(name, zt_sparse_mode_name((zt_sparse_mode)i))) return *m = (zt_sparse_mode)i, true;
  return false;
}

static int fail(char *err, size_t n, const char *fmt, ...) {
  if (err && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return 0;
}

/* The constructors' check of global_block_indices against global_block_end_indices (variable, bslongformer). */
static int check_end_indices(const zt_sparsity_config *c, char *err, size_t n) {
  if (c->n_global_block_end_indices < 0) return 1;
  if (c->n_global_block_indices != c->n_global_block_end_indices)
    return fail(err, n, "Global block start indices length, %d, must be same as global block end indices length, %d!",
                c->n_global_block_indices, c->n_global_block_end_indices);
  for (int i = 0; i < c->n_global_block_indices; i++)
    if (c->global_block_indices[i] >= c->global_block_end_indices[i])
      return fail(err, n, "Global block start index, %d, must be smaller than global block end index, %d!",
                  c->global_block_indices[i], c->global_block_end_indices[i]);
  return 1;
}

static int check_start_indices(const zt_sparsity_config *c, char *err, size_t n) {
  for (int i = 0; i < c->n_global_block_indices; i++)
    if (c->global_block_indices[i] < 0)
      return fail(err, n, "global_block_indices[%d], %d, must not be negative (DeepSpeed would count it from the "
                  "last block)", i, c->global_block_indices[i]);
  return 1;
}

static int check_sliding(const zt_sparsity_config *c, int nb, char *err, size_t n) {
  if (nb < c->num_sliding_window_blocks)
    return fail(err, n, "Number of sliding window blocks, %d, must be smaller than overall number of blocks in a "
                "row, %d!", c->num_sliding_window_blocks, nb);
  if (c->num_sliding_window_blocks < 0)
    return fail(err, n, "num_sliding_window_blocks, %d, must not be negative (DeepSpeed would silently drop the "
                "window)", c->num_sliding_window_blocks);
  return 1;
}

static int check_random_count(const zt_sparsity_config *c, int nb, char *err, size_t n) {
  if (nb < c->num_random_blocks)
    return fail(err, n, "Number of random blocks, %d, must be smaller than overall number of blocks in a row, %d!",
                c->num_random_blocks, nb);
  if (c->num_random_blocks < 0)
    return fail(err, n, "num_random_blocks, %d, must not be negative (DeepSpeed's random.sample: \"Sample larger "
                "than population or is negative\")", c->num_random_blocks);
  return 1;
}

int zt_sparsity_check(const zt_sparsity_config *c, int num_heads, int seq_len, char *err, size_t n) {
  if (err && n) err[0] = 0;
  if ((unsigned)c->mode > ZT_SPARSE_BSLONGFORMER)
    return fail(err, n, "Given sparsity mode, %d, has not been implemented yet!", (int)c->mode);
  if (c->n_local_window_blocks < 0 || c->n_local_window_blocks > ZT_SPARSE_MAX_LIST ||
      c->n_global_block_indices < 0 || c->n_global_block_indices > ZT_SPARSE_MAX_LIST ||
      c->n_global_block_end_indices < -1 || c->n_global_block_end_indices > ZT_SPARSE_MAX_LIST)
    return fail(err, n, "sparse_attention lists hold at most %d entries (local_window_blocks %d, "
                "global_block_indices %d, global_block_end_indices %d)", ZT_SPARSE_MAX_LIST,
                c->n_local_window_blocks, c->n_global_block_indices, c->n_global_block_end_indices);

  /* the constructors, in DeepSpeed's order */
  if (c->mode == ZT_SPARSE_FIXED) {
    int L = c->num_local_blocks, G = c->num_global_blocks, P = c->num_different_global_patterns;
    if (G < 1)
      return fail(err, n, "num_global_blocks, %d, must be at least 1 (fixed mode divides num_local_blocks by it)", G);
    if (L % G != 0)
      return fail(err, n, "Number of blocks in a local window, %d, must be dividable by number of global blocks, %d!",
                  L, G);
    if (c->unidirectional && c->horizontal_global_attention)
      return fail(err, n, "only \"bi-directional\" attentions can support horizontal global attention!");
    if (P > 1 && !c->different_layout_per_head)
      return fail(err, n, "Number of different layouts cannot be more than one when you have set a single layout for "
                  "all heads! Set different_layout_per_head to True.");
    if (P > L / G)
      return fail(err, n, "Number of layout versions (num_different_global_patterns), %d, cannot be larger than "
                  "number of local window blocks divided by number of global blocks, %d / %d = %d!", P, L, G, L / G);
    if (P < 1)
      return fail(err, n, "num_different_global_patterns, %d, must be at least 1", P);
    if (L < 1) return fail(err, n, "num_local_blocks, %d, must be at least 1", L);
  } else if (c->mode == ZT_SPARSE_VARIABLE) {
    if (!check_end_indices(c, err, n)) return 0;
    if (c->unidirectional && c->horizontal_global_attention)
      return fail(err, n, "only \"bi-directional\" attentions can support horizontal global attention!");
  } else if (c->mode == ZT_SPARSE_BSLONGFORMER) {
    if (!check_end_indices(c, err, n)) return 0;
  }

  /* setup_layout */
  if (num_heads < 1) return fail(err, n, "number of attention heads, %d, must be at least 1", num_heads);
  if (c->block < 1) return fail(err, n, "sparse_attention block, %d, must be at least 1", c->block);
  if (seq_len < 1) return fail(err, n, "Sequence Length, %d, must be at least 1", seq_len);
  if (seq_len % c->block != 0)
    return fail(err, n, "Sequence Length, %d, needs to be dividable by Block size %d!", seq_len, c->block);
  int nb = seq_len / c->block;
  uint64_t per_head = (uint64_t)nb * (uint64_t)nb; /* < 2^62 */
  if (per_head > ((uint64_t)SIZE_MAX / 2) / (uint64_t)num_heads)
    return fail(err, n, "sparse layout of %d heads x %d x %d blocks is too large", num_heads, nb, nb);

  /* make_layout, in DeepSpeed's order (random, local or sliding, global) */
  if (c->mode == ZT_SPARSE_VARIABLE) {
    if (!check_random_count(c, nb, err, n)) return 0;
    if (c->n_local_window_blocks < 1)
      return fail(err, n, "local_window_blocks must list at least one window size (DeepSpeed fails on an empty list)");
    for (int i = 0; i < c->n_local_window_blocks; i++)
      if (c->local_window_blocks[i] < 1)
        return fail(err, n, "local_window_blocks[%d], %d, must be at least 1", i, c->local_window_blocks[i]);
    if (!check_start_indices(c, err, n)) return 0;
  } else if (c->mode == ZT_SPARSE_BIGBIRD) {
    if (!check_random_count(c, nb, err, n)) return 0;
    if (c->unidirectional && c->num_random_blocks > 1)
      return fail(err, n, "Number of random blocks, %d, cannot be drawn without replacement from the 1 block row 0 "
                  "sees in unidirectional bigbird (DeepSpeed's random.sample(range(row + 1), %d): \"Sample larger "
                  "than population or is negative\")", c->num_random_blocks, c->num_random_blocks);
    if (!check_sliding(c, nb, err, n)) return 0;
    if (nb < c->num_global_blocks)
      return fail(err, n, "Number of global blocks, %d, must be smaller than overall number of blocks in a row, %d!",
                  c->num_global_blocks, nb);
    if (c->num_global_blocks < 0)
      return fail(err, n, "num_global_blocks, %d, must not be negative", c->num_global_blocks);
  } else if (c->mode == ZT_SPARSE_BSLONGFORMER) {
    if (!check_sliding(c, nb, err, n)) return 0;
    if (!check_start_indices(c, err, n)) return 0;
  }
  return 1;
}

/* ---- layout building; every helper works on one head's nb x nb matrix ---- */

/* Python's slice bound: negative counts from the end, then clamped to [0, nb]. */
static long long py_clamp(long long i, int nb) {
  if (i < 0) i += nb;
  if (i < 0) i = 0;
  if (i > nb) i = nb;
  return i;
}

/* m[r0:r1, c0:c1] = 1 with Python slice bounds */
static void fill(uint8_t *m, int nb, long long r0, long long r1, long long c0, long long c1) {
  r0 = py_clamp(r0, nb), r1 = py_clamp(r1, nb), c0 = py_clamp(c0, nb), c1 = py_clamp(c1, nb);
  for (long long r = r0; r < r1; r++)
    if (c1 > c0) memset(m + (size_t)r * nb + c0, 1, (size_t)(c1 - c0));
}

/* Rows [i, end) of a local window: each row sees columns [i, row] (unidirectional) or [i, end). */
static void local_window(uint8_t *m, int nb, bool uni, long long i, long long end) {
  for (long long row = i; row < end; row++) fill(m, nb, row, row + 1, i, uni ? row + 1 : end);
}

static void tril(uint8_t *m, int nb) {
  for (int r = 0; r < nb; r++) memset(m + (size_t)r * nb + r + 1, 0, (size_t)(nb - r - 1));
}

static void sliding_window(uint8_t *m, int nb, int blocks) {
  int w = blocks / 2;
  for (int row = 0; row < nb; row++) fill(m, nb, row, row + 1, row - w < 0 ? 0 : row - w, (long long)row + w + 1);
}

/* A uniform integer in [0, bound) from the Philox block (row, draw, head, "SPAR") keyed by the seed.
 * Lemire's multiply-shift without rejection: the bias is below bound / 2^32 (< 1e-6 for nb <= 4096). */
static uint32_t draw(uint64_t seed, int head, int row, uint32_t j, uint32_t bound) {
  zt_philox_ctr ctr = {{(uint32_t)row, j, (uint32_t)head, 0x53504152u}};
  zt_philox_ctr r = zt_philox4x32(ctr, (uint32_t)seed, (uint32_t)(seed >> 32) ^ 0x9E3779B9u);
  return (uint32_t)(((uint64_t)r.v[0] * bound) >> 32);
}

void zt_sparsity_random_row(const zt_sparsity_config *c, int nb, uint64_t seed, int head, int row, uint8_t *mark) {
  /* DeepSpeed: random.sample(range(pop), k) per row; pop = nb except bigbird unidirectional (row + 1).
   * Floyd's algorithm: a uniform k-subset of [0, pop) in k draws, marking straight into the row. */
  int pop = (c->mode == ZT_SPARSE_BIGBIRD && c->unidirectional) ? row + 1 : nb;
  int k = c->num_random_blocks;
  for (int j = pop - k; j < pop; j++) {
    uint32_t t = draw(seed, head, row, (uint32_t)j, (uint32_t)j + 1);
    if (mark[t]) mark[j] = 1;
    else mark[t] = 1;
  }
}

static void global_indices(const zt_sparsity_config *c, uint8_t *m, int nb, bool rows_full, bool horizontal,
                           bool uni_first_row) {
  for (int g = 0; g < c->n_global_block_indices; g++) {
    long long s = c->global_block_indices[g];
    if (s >= nb) continue;
    long long e = c->n_global_block_end_indices < 0 ? s + 1 : c->global_block_end_indices[g];
    if (e > nb) e = nb;
    if (rows_full || horizontal) fill(m, nb, s, e, 0, nb); /* global rows */
    fill(m, nb, uni_first_row ? s : 0, nb, s, e);           /* global columns */
  }
}

static void make_head(const zt_sparsity_config *c, int h, int nb, uint64_t seed, uint8_t *m) {
  bool uni = c->unidirectional;
  switch (c->mode) {
  case ZT_SPARSE_DENSE:
    memset(m, 1, (size_t)nb * nb);
    break;
  case ZT_SPARSE_FIXED: {
    int L = c->num_local_blocks, G = c->num_global_blocks;
    for (long long i = 0; i < nb; i += L) local_window(m, nb, uni, i, i + L < nb ? i + L : nb);
    int first = L - (1 + h % c->num_different_global_patterns) * G;
    int end = nb - nb % L;
    for (long long i = first; i < end; i += L) {
      fill(m, nb, uni ? i : 0, nb, i, i + G);                              /* vertical */
      if (c->horizontal_global_attention) fill(m, nb, i, i + G, 0, nb);    /* horizontal */
    }
    if (end < nb) { /* the short last window; start may be negative when nb < G (Python slicing) */
      long long start = (long long)end + first < (long long)nb - G ? (long long)end + first : (long long)nb - G;
      fill(m, nb, uni ? start : 0, nb, start, start + G);
      if (c->horizontal_global_attention) fill(m, nb, start, start + G, 0, nb);
    }
    break;
  }
  case ZT_SPARSE_VARIABLE: {
    for (int row = 0; row < nb; row++) zt_sparsity_random_row(c, nb, seed, h, row, m + (size_t)row * nb);
    long long start = 0, end = 0;
    int bs = 0;
    for (int w = 0; w < c->n_local_window_blocks; w++) {
      bs = c->local_window_blocks[w];
      end += bs;
      if (end > nb) end = nb;
      local_window(m, nb, uni, start, end);
      start += bs;
    }
    for (long long i = start; i < nb; i += bs) local_window(m, nb, uni, i, i + bs < nb ? i + bs : nb);
    global_indices(c, m, nb, false, c->horizontal_global_attention, uni);
    break;
  }
  case ZT_SPARSE_BIGBIRD:
    for (int row = 0; row < nb; row++) zt_sparsity_random_row(c, nb, seed, h, row, m + (size_t)row * nb);
    sliding_window(m, nb, c->num_sliding_window_blocks);
    fill(m, nb, 0, c->num_global_blocks, 0, nb); /* global rows */
    fill(m, nb, 0, nb, 0, c->num_global_blocks); /* global columns */
    if (uni) tril(m, nb);
    break;
  case ZT_SPARSE_BSLONGFORMER:
    sliding_window(m, nb, c->num_sliding_window_blocks);
    global_indices(c, m, nb, true, false, false);
    if (uni) tril(m, nb);
    break;
  }
}

void zt_sparsity_make_layout(const zt_sparsity_config *c, int num_heads, int seq_len, uint64_t seed,
                             uint8_t *layout) {
  int nb = seq_len / c->block;
  size_t per = (size_t)nb * nb;
  memset(layout, 0, per * (size_t)num_heads);
  int layout_heads = c->different_layout_per_head ? num_heads : 1;
  for (int h = 0; h < layout_heads; h++) make_head(c, h, nb, seed, layout + per * h);
  for (int h = layout_heads; h < num_heads; h++) memcpy(layout + per * h, layout, per);
}

void zt_sparsity_describe(const zt_sparsity_config *c, const uint8_t *layout, int num_heads, int nb, char *out,
                          size_t n) {
  size_t per = (size_t)nb * nb, total = per * (size_t)num_heads, on = 0;
  for (size_t i = 0; i < total; i++) on += layout[i] != 0;
  snprintf(out, n, "sparse attention: mode %s, block %d, %d x %d blocks per head, %d heads (%s), %zu / %zu blocks "
           "computed (density %.1f%%)", zt_sparse_mode_name(c->mode), c->block, nb, nb, num_heads,
           c->different_layout_per_head ? "layout per head" : "one layout", on, total,
           total ? 100.0 * (double)on / (double)total : 0.0);
}

void zt_sparsity_model_layout(const zt_sparsity_config *c, int num_heads, int layout_seq_len, int seq_len,
                              uint64_t seed, int causal, uint8_t *layout) {
  const int full = layout_seq_len / c->block, nb = seq_len / c->block;
  const size_t full_per_head = (size_t)full * (size_t)full;
  uint8_t *master = layout;
  if (nb != full) master = zt_malloc((size_t)num_heads * full_per_head, "sparse attention layout");
  zt_sparsity_make_layout(c, num_heads, layout_seq_len, seed, master);
  for (int h = 0; h < num_heads; h++)
    for (int i = 0; i < nb; i++) {
      uint8_t *row = layout + ((size_t)h * nb + i) * nb;
      memmove(row, master + (size_t)h * full_per_head + (size_t)i * full, (size_t)nb); /* rows move forward only */
      if (causal) memset(row + i + 1, 0, (size_t)(nb - i - 1));
    }
  if (master != layout) free(master);
}
